"""TURBOQUANT and ULTRAQUANT: vLLM 0.33's TurboQuantMetadataBuilder
(vllm/v1/attention/backends/turboquant_attn.py; UltraQuantAttentionBackend keeps it) with a real
VllmConfig and FullAttentionSpec against libattn's TURBOQUANT and ULTRAQUANT builders on the same
batches: every field of vLLM's TurboQuantMetadata and the builder's class answers.

Per batch (seeded by the batch): FULL_AND_PIECEWISE CUDA graphs in half the builders (vLLM's
builder does not read the mode); build_for_cudagraph_capture in a quarter of the uniform decode
batches, each side on its own copy of seq_lens (vLLM's capture fills the caller's seq_lens with 1,
in place, and torch.from_numpy shares the batch's memory). The quantized cache dtypes
("turboquant_k8v4", ..., "ultraquant_4bit") select the backend in vLLM; the builder does not read
them, and the lane's spec is a plain bfloat16 FullAttentionSpec. Nothing of vLLM's is replaced.
"""
from __future__ import annotations

import copy
from typing import Any, List, Tuple

from .batches import BLOCK_SIZES, VARIANT_KINDS, Batch, dummy_uniform_decode
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, _cache, _construct,
                            _constructed, _missing_safe)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .gdn_items import CAPTURE_SIZE
from .item import Item, choice_rng
from .sides import lib_common, vllm_common
from .vllm_env import configured_max_capture_size

NAMES = ("TURBOQUANT", "ULTRAQUANT")


def _full(b: Batch) -> bool:
    return bool(choice_rng(b, 80).random() < 0.5)


def _capture(b: Batch) -> bool:
    if b.kind == "dummy":  # vLLM's runner's FULL-graph capture batch; its others are warmup
        return dummy_uniform_decode(b)
    if b.n == 0 or b.kind not in ("decode", "spec", "padded"):
        return False
    q = b.q[b.q > 0]
    return q.size > 0 and bool((q == q[0]).all()) and b.q[0] > 0 and \
        choice_rng(b, 81).random() < 0.25


def _own_seq(b: Batch) -> Batch:
    """The batch with its own seq_lens array (capture writes it)."""
    c = copy.copy(b)
    c.seq = b.seq.copy()
    return c


def vllm_builder(ctx: Any, name: str, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm", name, b.block_size, b.spec, _full(b))
    if not _cache(ctx, name, key):
        import torch
        from vllm.config import CUDAGraphMode, set_current_vllm_config
        from vllm.v1.attention.backends.turboquant_attn import TurboQuantMetadataBuilder
        from vllm.v1.kv_cache_interface import FullAttentionSpec
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("quant", _full(b)),
                             MAX_MODEL_LEN)
        vc.compilation_config.cudagraph_mode = (CUDAGraphMode.FULL_AND_PIECEWISE if _full(b)
                                                else CUDAGraphMode.NONE)
        if vc.compilation_config.max_cudagraph_capture_size is None:
            vc.compilation_config.max_cudagraph_capture_size = CAPTURE_SIZE
        from .vllm_env import engine_capture_sizes
        engine_capture_sizes(vc, b.spec, v2=False)
        spec = FullAttentionSpec(block_size=b.block_size, num_kv_heads=8, head_size=128,
                                 dtype=torch.bfloat16)
        def make() -> Any:
            with set_current_vllm_config(vc):
                return TurboQuantMetadataBuilder(
                    spec, ["model.layers.0.self_attn"], vc, torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, name: str, b: Batch, vc: Any) -> Any:
    key = ("lib", name, b.block_size, b.spec, _full(b))
    if not _cache(ctx, name, key):
        libattn = ctx.libattn
        cc = vc.compilation_config
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS, num_speculative_tokens=b.spec,
            cudagraph_mode=int(libattn.CudagraphMode[cc.cudagraph_mode.name]),
            max_cudagraph_capture_size=configured_max_capture_size(vc) or 0,
            model_dtype=libattn.KvDtype.BFLOAT16)
        ctx.builders[key] = ctx.lib.builder(name, libattn.KvCacheSpec(b.block_size, 8, 128), cfg)
    return ctx.builders[key]


def quant_item(name: str) -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        vb, vc = vllm_builder(ctx, name, b)
        with set_current_vllm_config(vc):
            if _capture(b):
                return vb.build_for_cudagraph_capture(vllm_common(ctx, _own_seq(b)))
            return vb.build(0, vllm_common(ctx, b))

    def l(ctx: Any, b: Batch) -> Any:
        _, vc = vllm_builder(ctx, name, b)
        lb = lib_builder(ctx, name, b, vc)
        if _capture(b):
            return lb.build_for_cudagraph_capture(lib_common(ctx, _own_seq(b)))
        return lb.build(lib_common(ctx, b))

    def pairs(ctx: Any, b: Batch, vmd: Any, md: Any) -> List[Pair]:
        lib = {n: md[n] for n in md.fields()}
        out: List[Pair] = []
        seen = set()
        for n, value in flatten_vllm(vmd):
            if n in lib:
                seen.add(n)
                out.append((n, value, lib[n]))
            else:
                out.append((f"{n} (vLLM field libattn lacks)", value, MISSING))
        for n in lib:
            if n not in seen:
                out.append((f"{n} (libattn field vLLM 0.33 lacks)", MISSING, lib[n]))
        vb, vc = vllm_builder(ctx, name, b)
        out += builder_answer_pairs(vb, vc, lib_builder(ctx, name, b, vc))
        return _missing_safe(out)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        kind = "capture" if _capture(b) else (
            "decodes only" if vmd.num_decodes == b.n else
            "no decodes" if vmd.num_decodes == 0 else "mixed")
        return f"{kind}{', full graphs' if _full(b) else ''}"

    return Item(name, "builder", v, l, pairs, max_spec=3, block_sizes=BLOCK_SIZES, path=path,
                kinds=VARIANT_KINDS)


def quant_items() -> List[Item]:
    return [quant_item(n) for n in NAMES]
