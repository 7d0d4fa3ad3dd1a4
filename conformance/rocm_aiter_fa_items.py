"""ROCM_AITER_FA: vLLM 0.33's AiterFlashAttentionMetadataBuilder (v1/attention/backends/
rocm_aiter_fa.py) against libattn's ROCM_AITER_FA host path, on the builder items' batches (a
real VllmConfig for the lane's Llama-shaped model, a FullAttentionSpec of 8 KV heads of 128).

- Builders of block size 32 are for a sliding-window layer (window WINDOW): vLLM's builder reads
  it from the Attention layers in static_forward_context, here one Attention whose impl is an
  AiterFlashAttentionImpl with `sliding_window = (WINDOW - 1, 0)` (both made without their
  constructors, which need a ROCm GPU); libattn gets `layers = [PerLayerParams(WINDOW - 1)]`.
  So the sliding-window decode tables and the extends' swa_metadata are compared there.
- vLLM's build stages two CPU tensors in pinned memory (`torch.zeros(..., pin_memory=True)`),
  which torch refuses without a GPU driver: while it builds, the module's `torch.zeros` drops
  `pin_memory` (where the memory lives, not its values).
- A third of the batches go through build_for_drafting (vLLM's override: all decodes, no split)
  instead of build.
- Nested metadata is flattened (compare.flatten_vllm; libattn's names join the path with `_`);
  a part vLLM leaves None must be None in every libattn field under it. The workspaces (the
  runtime's scratch memory in libattn) are compared as None against vLLM's tensor's existence:
  libattn None where vLLM has a workspace tensor (extend_workspace, swa_workspace).
Each also compares the builder's class answers (compare.builder_answer_pairs)."""
from __future__ import annotations

import contextlib
from typing import Any, List, Tuple

import numpy as np

from .attn_variant_items import _causal
from .batches import BLOCK_SIZES, VARIANT_KINDS, Batch
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, _cache, _construct,
                            _constructed, _leaf, _missing_safe)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

NAME = "ROCM_AITER_FA"
MODULE = "vllm.v1.attention.backends.rocm_aiter_fa"
LAYER = "model.layers.0.self_attn"
WINDOW = 128
#: scratch tensors vLLM allocates for its kernels; libattn leaves them to the runtime (None)
WORKSPACES = ("extend_metadata.chunk_context_metadata.workspace",
              "extend_metadata.chunk_context_metadata.swa_metadata.swa_workspace")


def _sliding(b: Batch) -> bool:
    return b.block_size == 32


def _drafting(b: Batch) -> bool:
    return choice_rng(b, 71).random() < 1 / 3


@contextlib.contextmanager
def _no_pinned_memory(mod: Any):
    import torch

    class _Torch:
        def __getattr__(self, n: str) -> Any:
            return getattr(torch, n)

        @staticmethod
        def zeros(*a: Any, **k: Any) -> Any:
            k.pop("pin_memory", None)
            return torch.zeros(*a, **k)

    old = mod.torch
    mod.torch = _Torch()
    try:
        yield
    finally:
        mod.torch = old


def _key(b: Batch) -> Tuple[Any, ...]:
    return (NAME, b.block_size, b.spec)


def vllm_builder(ctx: Any, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(b)
    if not _cache(ctx, NAME, key):
        import importlib
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.model_executor.layers.attention import Attention
        from vllm.v1.kv_cache_interface import FullAttentionSpec
        mod = importlib.import_module(MODULE)
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size,
                             ("aiter_fa", _sliding(b)), MAX_MODEL_LEN)
        if _sliding(b):
            impl = mod.AiterFlashAttentionImpl.__new__(mod.AiterFlashAttentionImpl)
            impl.sliding_window = (WINDOW - 1, 0)
            layer = Attention.__new__(Attention)
            for k, v in (("impl", impl), ("kv_sharing_target_layer_name", None),
                         ("kv_cache_update_bypass", False)):
                object.__setattr__(layer, k, v)
            vc.compilation_config.static_forward_context = {LAYER: layer}
        else:
            vc.compilation_config.static_forward_context = {}
        spec = FullAttentionSpec(block_size=b.block_size, num_kv_heads=8, head_size=128,
                                 dtype=torch.bfloat16)
        def make() -> Any:
            with set_current_vllm_config(vc):
                return mod.AiterFlashAttentionMetadataBuilder(spec, [LAYER], vc,
                                                              torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(b)
    if not _cache(ctx, NAME, key):
        libattn = ctx.libattn
        layers = [libattn.PerLayerParams(window_left=WINDOW - 1)] if _sliding(b) else []
        cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                    num_speculative_tokens=b.spec, layers=layers,
                                    cudagraph_mode=int(libattn.CudagraphMode[
                                        vc.compilation_config.cudagraph_mode.name]))
        ctx.builders[key] = ctx.lib.builder(NAME, libattn.KvCacheSpec(b.block_size, 8, 128), cfg)
    return ctx.builders[key]


def _vllm(ctx: Any, b: Batch) -> Any:
    import importlib
    from vllm.config import set_current_vllm_config
    vb, vc = vllm_builder(ctx, b)
    common = vllm_common(ctx, b, **_causal("B12X", b))
    from .layer_variant_items import captures
    capture = not _drafting(b) and captures(vb, vc, b)
    with set_current_vllm_config(vc), _no_pinned_memory(importlib.import_module(MODULE)):
        if _drafting(b):
            return vb.build_for_drafting(common, 0)
        return vb.build_for_cudagraph_capture(common) if capture else vb.build(0, common)


def _lib(ctx: Any, b: Batch) -> Any:
    from .layer_variant_items import captures
    vb, vc = vllm_builder(ctx, b)
    lb = lib_builder(ctx, b, vc)
    common = lib_common(ctx, b, **_causal("B12X", b))
    if _drafting(b):
        return lb.build_for_drafting(common, 0)
    return lb.build_for_cudagraph_capture(common) if captures(vb, vc, b) else lb.build(common)


def _pairs(ctx: Any, b: Batch, v: Any, md: Any) -> List[Pair]:
    lib = {n: md[n] for n in md.fields()}
    out: List[Pair] = []
    seen = set()
    for f, value in flatten_vllm(v):
        flat = f.replace(".", "_")
        if value is None and flat not in lib:
            # a nested part vLLM leaves None: every libattn field under it is None
            under = [n for n in lib if n.startswith(flat + "_")]
            for n in under:
                seen.add(n)
                out.append((f"{n} (under {f}, None in vLLM)", None, lib[n]))
            if not under:
                out.append((f"{f} (vLLM field libattn lacks)", None, MISSING))
            continue
        seen.add(flat)
        if f in WORKSPACES:
            out.append((f"{f} (scratch; libattn: None)", None, lib.get(flat, MISSING)))
        elif flat in lib:
            lv = lib[flat]
            if isinstance(value, list) and lv is not None:
                lv = np.asarray(lv).tolist()
            out.append((f, _leaf(value), lv))
        else:
            out.append((f"{f} (vLLM field libattn lacks)", _leaf(value), MISSING))
    for n in lib:
        if n not in seen:
            out.append((f"{n} (libattn field vLLM 0.33 lacks)", MISSING, lib[n]))
    vb, vc = vllm_builder(ctx, b)
    out += builder_answer_pairs(vb, vc, lib_builder(ctx, b, vc))
    return _missing_safe(out)


def _path(ctx: Any, b: Batch, v: Any) -> str:
    parts = [p for p, x in (("decodes", v.decode_metadata), ("extends", v.extend_metadata),
                            ("prefills", v.prefill_metadata)) if x is not None]
    swa = v.decode_metadata is not None and v.decode_metadata.swa_block_table is not None
    chunks = v.extend_metadata.chunk_context_metadata.num_chunks if v.extend_metadata else 0
    nchunks = chunks if chunks < 3 else "3+"
    return (f"{'drafting' if _drafting(b) else 'build'}: {'+'.join(parts) or 'empty'}"
            f"{', swa decode' if swa else ''}{f', {nchunks} chunks' if chunks else ''}"
            f"{', sliding' if _sliding(b) else ''}")


def rocm_aiter_fa_items() -> List[Item]:
    return [Item(NAME, "builder", _vllm, _lib, _pairs, max_spec=3, block_sizes=BLOCK_SIZES,
                 path=_path, kinds=VARIANT_KINDS)]
