"""BAILING_LINEAR_ATTN: vLLM 0.33's BailingLinearAttentionMetadataBuilder
(vllm/v1/attention/backends/linear_attn.py, a real VllmConfig and MambaSpec of mamba_type
LINEAR) against libattn's BAILING_LINEAR_ATTN builder on the same batches, every field of
vLLM's BailingLinearAttentionMetadata and the builder's class answers.

Per batch (seeded by the batch): num_accepted_tokens (1..query length) in seven spec batches of
eight (vLLM splits at 1 + k only with it); mamba_cache_mode "none", or "align" in one builder of
three (k extra table columns); FULL_AND_PIECEWISE CUDA graphs in half the builders (the
persistent decode buffers, PAD_SLOT_ID on zero-length rows); build_for_cudagraph_capture in one
uniform decode batch of four. Nothing of vLLM's is replaced.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from .batches import BLOCK_SIZES, LARGE_BLOCK_SIZES, VARIANT_KINDS, Batch
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, _cache, _construct,
                            _constructed, _missing_safe)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .gdn_items import CAPTURE_SIZE, STATE_SHAPES, uniform_decode_capture
from .item import Item, choice_rng
from .sides import lib_common, vllm_common
from .vllm_env import configured_max_capture_size

NAME = "BAILING_LINEAR_ATTN"


def _settings(b: Batch) -> Tuple[str, bool]:
    r = choice_rng(b, 60)
    return ("align" if r.random() < 1 / 3 else "none"), bool(r.random() < 0.5)


def _batch(b: Batch) -> Batch:
    if _settings(b)[0] != "align" or b.extra_cols >= b.spec:
        return b
    c = getattr(b, "_bailing_align", None)
    if c is None:
        c = Batch(b.q, b.ctx, b.prompt, b.block_size, b.spec, b.kind, b.dcp, b.interleave,
                  b.chunk, b.spec)
        c.seed = getattr(b, "seed", (0, 0))
        b._bailing_align = c
    return c


def _kwargs(b: Batch) -> Dict[str, Any]:
    if not b.spec:
        return {}
    r = choice_rng(b, 61)
    q = b.q.astype(np.int64)
    accepted = np.maximum(1, (r.random(b.n) * (q + 1)).astype(np.int64)).astype(np.int32)
    return {"num_accepted_tokens": accepted} if r.random() >= 1 / 8 else {}


def _capture(b: Batch) -> bool:
    return uniform_decode_capture(b, 62)


def _key(b: Batch) -> Tuple[Any, ...]:
    return (NAME, b.block_size, b.spec, _settings(b))


def vllm_builder(ctx: Any, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(b)
    if not _cache(ctx, NAME, key):
        import torch
        from vllm.config import CUDAGraphMode, set_current_vllm_config
        from vllm.v1.attention.backends.linear_attn import BailingLinearAttentionMetadataBuilder
        from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
        from vllm.v1.kv_cache_interface import MambaSpec
        mode, full = _settings(b)
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("bailing", mode, full),
                             MAX_MODEL_LEN)
        vc.cache_config.mamba_cache_mode = mode
        vc.compilation_config.cudagraph_mode = (CUDAGraphMode.FULL_AND_PIECEWISE if full
                                                else CUDAGraphMode.NONE)
        if vc.compilation_config.max_cudagraph_capture_size is None:
            vc.compilation_config.max_cudagraph_capture_size = CAPTURE_SIZE
        from .vllm_env import engine_capture_sizes
        engine_capture_sizes(vc, b.spec, v2=False)
        spec = MambaSpec(block_size=b.block_size, shapes=STATE_SHAPES,
                         dtypes=(torch.bfloat16, torch.float32),
                         mamba_type=MambaAttentionBackendEnum.LINEAR, mamba_cache_mode=mode,
                         num_speculative_blocks=b.spec if mode == "align" else 0)
        def make() -> Any:
            with set_current_vllm_config(vc):
                return BailingLinearAttentionMetadataBuilder(
                    spec, ["model.layers.0.attention"], vc, torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(b)
    if not _cache(ctx, NAME, key):
        libattn = ctx.libattn
        mode, full = _settings(b)
        cc = vc.compilation_config
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS, num_speculative_tokens=b.spec,
            cudagraph_mode=int(libattn.CudagraphMode[cc.cudagraph_mode.name]),
            max_cudagraph_capture_size=configured_max_capture_size(vc) or 0)
        spec = libattn.KvCacheSpec(
            b.block_size, 1, 1, kind=libattn.KvCacheKind.MAMBA,
            mamba_type=libattn.MambaType.LINEAR_ATTENTION,
            mamba_cache_mode=libattn.MambaCacheMode[mode.upper()],
            num_speculative_blocks=b.spec if mode == "align" else 0)
        ctx.builders[key] = ctx.lib.builder(NAME, spec, cfg)
    return ctx.builders[key]


def _vllm(ctx: Any, b: Batch) -> Any:
    from vllm.config import set_current_vllm_config
    b = _batch(b)
    vb, vc = vllm_builder(ctx, b)
    with set_current_vllm_config(vc):
        if _capture(b):
            return vb.build_for_cudagraph_capture(vllm_common(ctx, b))
        kw = {k: ctx.torch.from_numpy(v) for k, v in _kwargs(b).items()}
        return vb.build(0, vllm_common(ctx, b), **kw)


def _lib(ctx: Any, b: Batch) -> Any:
    b = _batch(b)
    _, vc = vllm_builder(ctx, b)
    lb = lib_builder(ctx, b, vc)
    if _capture(b):
        return lb.build_for_cudagraph_capture(lib_common(ctx, b))
    return lb.build(lib_common(ctx, b, **_kwargs(b)))


def _pairs(ctx: Any, b: Batch, v: Any, md: Any) -> List[Pair]:
    b = _batch(b)
    lib = {n: md[n] for n in md.fields()}
    pairs: List[Pair] = []
    seen = set()
    for name, value in flatten_vllm(v):
        if name in lib:
            seen.add(name)
            pairs.append((name, value, lib[name]))
        else:
            pairs.append((f"{name} (vLLM field libattn lacks)", value, MISSING))
    for name in lib:
        if name not in seen:
            pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    vb, vc = vllm_builder(ctx, b)
    pairs += builder_answer_pairs(vb, vc, lib_builder(ctx, b, vc))
    return _missing_safe(pairs)


def _path(ctx: Any, b: Batch, v: Any) -> str:
    mode, full = _settings(b)
    kind = "capture" if _capture(_batch(b)) else (
        "decode" if v.num_prefills == 0 else "prefill" if v.num_decodes == 0 else "mixed")
    spec = ", spec" if v.query_start_loc_d is not None else ""
    return f"{kind}{spec}, {mode}{', full graphs' if full else ''}"


def bailing_items() -> List[Item]:
    return [Item(NAME, "builder", _vllm, _lib, _pairs, max_spec=3,
                 block_sizes=BLOCK_SIZES + LARGE_BLOCK_SIZES, path=_path, kinds=VARIANT_KINDS)]
