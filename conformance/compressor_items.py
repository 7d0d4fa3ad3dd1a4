"""DeepSeek V4 / V4.1's compressor state caches: vLLM 0.33's CompressorMetadataBuilder of
vllm/models/deepseek_v4/compressor.py (libattn's DEEPSEEK_V4_COMPRESSOR) and of
vllm/models/deepseek_v41/compressor.py (DEEPSEEK_V41_COMPRESSOR; vLLM names both
"CompressorBackend") against libattn's, on the lane's random batches: every field of vLLM's
CompressorMetadata and the builder's answers.

V4: a real SlidingWindowMLASpec (or, one profile in three, an MLAAttentionSpec) of block size 4
(the C4 state) or 8 (C128), speculative tokens k <= 3, async scheduling on one profile in two
(c128_boundary is None with async spec decoding), ROCm on one profile in three (the platform's
is_rocm(): num_decode_tokens). vLLM clamps the batch's block table in place, so each side gets
its own copy of a table whose padding columns hold -1 on one batch in two (``_tables``).
V4.1: a real CircularBufferSpec of capacity 8 or 16 (libattn: a CIRCULAR_BUFFER spec, ABI 1.7,
with a one-column block table on both sides, as vLLM's runner gives such a group, on one profile
in two; a FULL_ATTENTION spec and the whole table on the others); on one
batch in three some requests' ring block is 0 (the null block), and on one batch in four the
slot mapping (and positions) carry 1..16 padding rows past num_actual_tokens (``_pad``).

Both items call build_for_cudagraph_capture (the base class's build; level ALWAYS) on a third
of the batches, on both sides.

What a CPU cannot run is replaced around the build only: ``current_platform`` of the V4 module
(its is_rocm(), the platform probe of _prefer_two_stage_compressor). The Triton kernels
(compute_token_to_req_indices; V4.1's _ring_slot_mapping_kernel) run in Triton's CPU interpreter
on about one small batch in ``TRITON_EVERY``; on the others sparse_mla_items'
``token_to_req_numpy`` (as the documented ``_token_to_req_indices_cache``) and
``_ring_slots_numpy`` stand in.
"""
from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any, List

import numpy as np

from .batches import VARIANT_KINDS, Batch
from .compare import MISSING, Pair, builder_answer_pairs
from .item import Item, choice_rng, pad_past_actual_tokens
from .mla_items import LAYER, zlib_crc
from .sides import lib_common, vllm_common
from .sparse_indexer_items import new_vllm_config
from .sparse_mla_items import token_to_req_numpy

V4, V41 = "DEEPSEEK_V4_COMPRESSOR", "DEEPSEEK_V41_COMPRESSOR"
MODULES = {V4: "vllm.models.deepseek_v4.compressor", V41: "vllm.models.deepseek_v41.compressor"}
TOKEN_BUDGET = 8192
TRITON_EVERY = 40


def settings(name: str, b: Batch) -> Any:
    r = np.random.default_rng([zlib_crc(name), int(choice_rng(b, 60).integers(0, 1 << 30))])
    return types.SimpleNamespace(spec=b.spec, block_size=b.block_size,
                                 async_sched=bool(r.random() < 0.5),
                                 rocm=bool(r.random() < 1 / 3), mla_kind=bool(r.random() < 1 / 3),
                                 circular=bool(r.random() < 0.5))


def capture_of(b: Batch) -> bool:
    """build_for_cudagraph_capture (the base class's: build; level ALWAYS) on a third of the
    batches, both sides."""
    return b.kind == "dummy" or int(choice_rng(b, 67).integers(0, 3)) == 0


def triton_batch(b: Batch) -> bool:
    return (b.n <= 8 and b.tokens <= 2048 and
            int(choice_rng(b, 61).integers(0, TRITON_EVERY)) == 0)


def _tables(name: str, b: Batch) -> None:
    """The item's tables, made once per batch (both sides then take a copy): V4's padding
    columns -1 on one batch in two; V4.1's column 0 set to the null block 0 for about one
    request in four on one batch in three, and only that column (vLLM's runner's table for a
    CircularBufferSpec) where libattn's spec is CIRCULAR_BUFFER."""
    if getattr(b, "_compressor_bt", None) is None:
        bt = b.bt.copy()
        if name == V4 and b.n and int(choice_rng(b, 62).integers(0, 2)) == 0:
            bt[bt == 0] = -1
        if name == V41 and b.n and int(choice_rng(b, 63).integers(0, 3)) == 0:
            bt[choice_rng(b, 64).random(b.n) < 0.25, 0] = 0
        if name == V41 and settings(name, b).circular:  # the runner's one-column table
            bt = np.ascontiguousarray(bt[:, :1])
        b._compressor_bt = bt
    b.bt = b._compressor_bt.copy()


def _pad(b: Batch) -> None:
    """V4.1: padding rows on one batch in four (pad_past_actual_tokens)."""
    pad_past_actual_tokens(b, "_compressor_padded", 4, (65, 66))


class _RingSlotsNumpy:
    """_ring_slot_mapping_kernel restated: t < num_actual_tokens of request r = token_to_req[t]:
    block = block_table[r][0], slot block * capacity + position % capacity, -1 for block 0; -1
    from num_actual_tokens to num_tokens."""

    def __getitem__(self, grid: Any) -> Any:
        return self.launch

    @staticmethod
    def launch(slot_mapping: Any, block_table: Any, stride: int, token_to_req: Any,
               positions: Any, num_actual_tokens: int, num_tokens: int, CAPACITY: int,
               **k: Any) -> None:
        out = slot_mapping.numpy()
        t2r = token_to_req.numpy()[:num_actual_tokens].astype(np.int64)
        block = block_table.numpy()[t2r, 0].astype(np.int64) if num_actual_tokens else \
            np.zeros(0, np.int64)
        pos = positions.numpy()[:num_actual_tokens]
        out[:num_actual_tokens] = np.where(block != 0, block * CAPACITY + np.fmod(pos, CAPACITY),
                                           -1)
        out[num_actual_tokens:num_tokens] = -1


class _RocmPlatform:
    def __init__(self, real: Any, rocm: bool) -> None:
        self._real, self._rocm = real, rocm

    def is_rocm(self) -> bool:
        return self._rocm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def patched(name: str, s: Any, real_triton: bool) -> Any:
    from unittest import mock
    mod = importlib.import_module(MODULES[name])
    stack = contextlib.ExitStack()
    if name == V4:
        real = mod.current_platform
        real = real._real if isinstance(real, _RocmPlatform) else real
        stack.enter_context(mock.patch.object(mod, "current_platform",
                                              _RocmPlatform(real, s.rocm)))
    elif not real_triton:
        stack.enter_context(mock.patch.object(mod, "_ring_slot_mapping_kernel",
                                              _RingSlotsNumpy()))
    return stack


def _vllm_config(ctx: Any, s: Any) -> Any:
    cache = ctx.__dict__.setdefault("compressor_configs", {})
    key = (s.spec, s.async_sched)
    if key not in cache:
        vc = new_vllm_config(ctx, s.spec)
        vc.scheduler_config.async_scheduling = s.async_sched
        cache[key] = vc
    return cache[key]


def builders(ctx: Any, name: str, s: Any) -> Any:
    cache = ctx.__dict__.setdefault("compressor_builders", {})
    key = (name, s.spec, s.block_size, s.async_sched, s.rocm, s.mla_kind, s.circular)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1 import kv_cache_interface as kvi
    vc = _vllm_config(ctx, s)
    libattn = ctx.libattn
    kind = libattn.KvCacheKind
    if name == V4:
        if s.mla_kind:
            spec = kvi.MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1, head_size=512,
                                        dtype=torch.float32)
            lspec = libattn.KvCacheSpec(s.block_size, 1, 512, kind=kind.MLA)
        else:
            window = 8 if s.block_size == 4 else 128
            spec = kvi.SlidingWindowMLASpec(block_size=s.block_size, num_kv_heads=1,
                                            head_size=512, dtype=torch.float32,
                                            sliding_window=window)
            lspec = libattn.KvCacheSpec(s.block_size, 1, 512, kind=kind.SLIDING_WINDOW,
                                        sliding_window=window)
    else:
        spec = kvi.CircularBufferSpec(block_size=s.block_size, num_kv_heads=1, head_size=1024,
                                      head_size_v=0, dtype=torch.float32)
        lspec = libattn.KvCacheSpec(
            s.block_size, 1, 1024, kind=kind.CIRCULAR_BUFFER if s.circular else kind.FULL_ATTENTION)
    cls = importlib.import_module(MODULES[name]).CompressorMetadataBuilder
    with set_current_vllm_config(vc), patched(name, s, False):
        vb = cls(spec, [LAYER], vc, torch.device("cpu"))
    sc = vc.scheduler_config
    cfg = libattn.BuilderConfig(sc.max_num_seqs, sc.max_num_batched_tokens,
                                vc.model_config.max_model_len, 16, num_speculative_tokens=s.spec,
                                device_capability=90, async_scheduling=int(s.async_sched),
                                platform_rocm=int(s.rocm))
    cache[key] = (vb, vc, ctx.lib.builder(name, lspec, cfg))
    return cache[key]


def compressor_pairs(vmd: Any, lmd: Any, vb: Any, vc: Any, lb: Any, patches: Any) -> List[Pair]:
    import dataclasses
    lib = {n: lmd[n] for n in lmd.fields()}
    out: List[Pair] = []
    for f in dataclasses.fields(vmd):
        out.append((f.name, getattr(vmd, f.name), lib.pop(f.name, MISSING)))
    out += [(f"{n} (libattn field vLLM 0.33 lacks)", MISSING, x) for n, x in lib.items()]
    out += builder_answer_pairs(vb, vc, lb, patches)
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in out]


def compressor_item(name: str) -> Item:
    def prepare(b: Batch) -> None:
        _tables(name, b)
        if name == V41:
            _pad(b)

    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        s = settings(name, b)
        vb, vc, _ = builders(ctx, name, s)
        prepare(b)
        cm = vllm_common(ctx, b)
        real = triton_batch(b)
        if not real:
            cm._token_to_req_indices_cache = token_to_req_numpy(b)
        with set_current_vllm_config(vc), patched(name, s, real):
            return vb.build_for_cudagraph_capture(cm) if capture_of(b) else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        prepare(b)
        lb = builders(ctx, name, settings(name, b))[2]
        common = lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if capture_of(b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        s = settings(name, b)
        vb, vc, lb = builders(ctx, name, s)
        return compressor_pairs(vmd, lmd, vb, vc, lb, patched(name, s, False))

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(name, b)
        parts = ["triton" if triton_batch(b) else "numpy stand-ins", f"block {s.block_size}"]
        if capture_of(b):
            parts.append("build_for_cudagraph_capture")
        if name == V4:
            parts.append("rocm" if s.rocm else "cuda")
            parts.append(f"c128_boundary {vmd.c128_boundary}")
            if (b._compressor_bt < 0).any():
                parts.append("negative table entries")
        else:
            parts.append("CIRCULAR_BUFFER, one-column table" if s.circular else "FULL_ATTENTION")
            sm = vmd.slot_mapping.numpy()
            if (sm[:b.tokens] == -1).any():
                parts.append("null-block rows")
            if sm.shape[0] > b.tokens:
                parts.append("padding rows")
        return ", ".join(parts)

    sizes = (4, 8) if name == V4 else (8, 16)
    return Item(name, "builder", v, l, pairs, block_sizes=sizes, max_spec=3, max_requests=256,
                token_budget=TOKEN_BUDGET, path=path, kinds=VARIANT_KINDS)


def compressor_items() -> List[Item]:
    return [compressor_item(V4), compressor_item(V41)]
