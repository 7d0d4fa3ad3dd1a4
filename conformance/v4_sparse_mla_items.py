"""DeepSeek V4 / V4.1 sparse MLA: vLLM 0.33's DeepseekV4SparseMLAMetadataBuilder family against
libattn's builders of the same names, on the lane's random batches: every field of vLLM's
DeepseekV4FlashMLAMetadata (V4: 13 fields, the C128A ones included; V4.1: 10) and the builder's
answers (level, threshold, ...).

The names and vLLM's builder classes: FLASHMLA_SPARSE_DSV4 (models/deepseek_v4/sparse_mla.py's
DeepseekV4FlashMLAMetadataBuilder), FLASHINFER_MLA_SPARSE_DSV4 (deepseek_v4/nvidia/
flashinfer_sparse.py), CPU_V4_MLA_SPARSE (deepseek_v4/cpu/cpu_mla.py), XPU_V4_MLA_SPARSE
(deepseek_v4/xpu/xpu_sparse.py: the base DeepseekV4SparseMLAMetadataBuilder), FLASHMLA_SPARSE_DSV41 and
FLASHMLA_MEGA_ATTN_DSV41 (deepseek_v41/sparse_mla.py: one builder class),
FLASHINFER_MLA_SPARSE_DSV41 (deepseek_v41/nvidia/flashinfer_sparse.py); each builder is the one
its backend's get_builder_cls() returns, the name its get_name().

vLLM's side is the indexer item's VllmConfig (the DeepSeek-V3.2-shaped model of
sparse_mla_items: index_topk 2048, max_model_len 131072, no DCP/PCP) and a real
MLAAttentionSpec (block 256: the kernels' block size, head 512, bf16) with tokens_per_state the
batch's compress ratio: 1, 4 or 128 for V4 (C128A metadata at 128), 1 or 2 for V4.1; libattn
takes an ATTN_KV_MLA spec with tokens_per_state the same. Speculative tokens k <= 3 (the split at
1 + k for the C128A rows); on one batch in four some slots are -1 (``invalid_slots``: the
compressed slot mapping's and the C128A decode lengths' PAD rule). Capture builds (issue 34):
vLLM's runner's dummy batches are among the kinds and build_for_cudagraph_capture runs on both
sides where layer_variant_items.captures says (ROCm V4's sets ``for_cudagraph_capture`` on
gfx950; the others are the base class's build).

What a CPU cannot run: the build's two Triton kernels (CompressedSlotMappingKernel of
get_compressed_slot_mapping, BuildC128ATopkMetadataKernel of build_c128a_topk_metadata) and
compute_token_to_req_indices run in Triton's CPU interpreter on about one small batch in
sparse_swa_items' ``TRITON_EVERY``; on the others a numpy restatement of each
(``_compressed_slots_numpy``, ``_c128a_numpy``, sparse_mla_items' ``token_to_req_numpy``) stands in, called by vLLM's own
wrappers (the fill of -1, the buffer views, the widths are vLLM's). current_platform is the real
CPU one: get_device_capability() is None, the SM90/SM100 width of the C128A decode rows.

ROCm: ROCM_FLASHMLA_SPARSE_DSV4 (models/deepseek_v4/amd/rocm.py's
DeepseekV4ROCMAiterMLASparseMetadataBuilder) and ROCM_FLASHMLA_SPARSE_DSV41
(models/deepseek_v41/amd/rocm.py), libattn's with config.platform_rocm=1: their modules imported
under the gfx942 answer, the ragged C128A decode rows compared as rocm_ragged says (the
build_ragged_indices_from_dense kernels in the interpreter on the Triton batches, restated
otherwise), and get_cudagraph_support under adaptive verification as well; half of
ROCM_FLASHMLA_SPARSE_DSV4's batches without speculative tokens as on gfx950 (``gfx950_of``).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
from typing import Any, List

import numpy as np

from .batches import Batch
from .compare import MISSING, Pair
from .item import Item, choice_rng
from .layer_variant_items import VARIANT_KINDS, captures
from .mla_items import LAYER, zlib_crc
from .sides import lib_common
from .sparse_indexer_items import Settings, _vllm_config
from .rocm_ragged import (RAGGED_NAMES, adaptive_level_pair, import_rocm, ragged_kernels,
                          ragged_pairs)
from .sparse_swa_items import finish_pairs, invalid_slots, triton_batch, vllm_build

TOKEN_BUDGET = 8192
#: builder pairs kept (at ratio 128 both sides' C128A buffers are sized for 131,072 tokens x 1,024:
#: 1.5-2.5 GB a pair)
CACHED_BUILDERS = 6
#: choice_rng salts of invalid_slots and triton_batch (sparse_swa_items') for this module's batches
SALTS = (62, 61)
BLOCK_SIZE = 256
V4_RATIOS = (1, 4, 128, 128)
V41_RATIOS = (1, 2)
COMPRESSOR = "vllm.v1.attention.backends.mla.compressor_utils"
V4_MLA = "vllm.models.deepseek_v4.sparse_mla"

#: name -> (module of the backend class, backend class, ratios)
BACKENDS = {
    "FLASHMLA_SPARSE_DSV4": (V4_MLA, "DeepseekV4FlashMLABackend", V4_RATIOS),
    "FLASHINFER_MLA_SPARSE_DSV4": ("vllm.models.deepseek_v4.nvidia.flashinfer_sparse",
                                   "DeepseekV4FlashInferMLASparseBackend", V4_RATIOS),
    "CPU_V4_MLA_SPARSE": ("vllm.models.deepseek_v4.cpu.cpu_mla", "DeepseekV4CPUSparseBackend",
                          V4_RATIOS),
    # the XPU platform's (its backend keeps DeepseekV4SparseMLABackend's builder, the base)
    "XPU_V4_MLA_SPARSE": ("vllm.models.deepseek_v4.xpu.xpu_sparse", "DeepseekV4XPUSparseBackend",
                          V4_RATIOS),
    "FLASHMLA_SPARSE_DSV41": ("vllm.models.deepseek_v41.sparse_mla", "DeepseekV4FlashMLABackend",
                              V41_RATIOS),
    "FLASHMLA_MEGA_ATTN_DSV41": ("vllm.models.deepseek_v41.sparse_mla", "FlashMLAMegaAttnBackend",
                                 V41_RATIOS),
    "FLASHINFER_MLA_SPARSE_DSV41": ("vllm.models.deepseek_v41.nvidia.flashinfer_sparse",
                                    "DeepseekV4FlashInferMLASparseBackend", V41_RATIOS),
    "ROCM_FLASHMLA_SPARSE_DSV4": ("vllm.models.deepseek_v4.amd.rocm",
                                  "DeepseekV4ROCMAiterMLASparseBackend", V4_RATIOS),
    "ROCM_FLASHMLA_SPARSE_DSV41": ("vllm.models.deepseek_v41.amd.rocm",
                                   "DeepseekV41ROCMAiterMLASparseBackend", V41_RATIOS),
}


ROCM_V4 = "ROCM_FLASHMLA_SPARSE_DSV4"


def is_rocm(name: str) -> bool:
    return name.startswith("ROCM_")


def gfx950_of(name: str, b: Batch) -> bool:
    """ROCM_FLASHMLA_SPARSE_DSV4 as on gfx950 (libattn: device_capability 95; vLLM: the rocm
    module's _ON_GFX950 True while it builds) on half its batches without speculative tokens."""
    return name == "ROCM_FLASHMLA_SPARSE_DSV4" and b.spec == 0 and \
        choice_rng(b, 63).random() < 0.5


def ratio_of(name: str, b: Batch) -> int:
    r = np.random.default_rng([zlib_crc(name), int(choice_rng(b, 60).integers(0, 1 << 30))])
    return int(r.choice(BACKENDS[name][2]))


# ---- stand-ins ---------------------------------------------------------------------------

def _compressed_slots_numpy(compressed_slot_mapping: Any, slot_mapping: Any,
                            query_start_loc: Any, seq_lens: Any, block_table: Any,
                            block_size: int, compress_ratio: int, dcp_world_size: int,
                            cp_interleave: int) -> None:
    """CompressedSlotMappingKernel restated (one program per block table row r): token qsl[r] +
    i at position seq - q + i writes the slot of state local // R (block local // R //
    block_size, offset local // R % block_size) when (pos + 1) % R == 0 and its own slot is not
    -1, local = pos // (cp_interleave * dcp_world_size) * cp_interleave + pos % cp_interleave
    (the rank-local position; pos itself without DCP; positions >= 0 here, so // is Triton's)."""
    qsl = query_start_loc.numpy().astype(np.int64)
    seq = seq_lens.numpy().astype(np.int64)
    slots = slot_mapping.numpy()
    bt = block_table.numpy().astype(np.int64)
    out = compressed_slot_mapping.numpy()
    for r in range(bt.shape[0]):
        q = qsl[r + 1] - qsl[r]
        pos = seq[r] - q + np.arange(q)
        t = qsl[r] + np.arange(q)
        ok = ((pos + 1) % compress_ratio == 0) & (slots[t] != -1)
        local = pos // (cp_interleave * dcp_world_size) * cp_interleave + pos % cp_interleave
        st = local[ok] // compress_ratio
        out[t[ok]] = bt[r, st // block_size] * block_size + st % block_size


def _c128a_numpy(global_decode_buffer: Any, decode_lens_buffer: Any, prefill_buffer: Any,
                 positions: Any, compress_ratio: int, max_compressed_tokens: int,
                 num_decode_tokens: int, token_to_req_indices: Any, block_table: Any,
                 block_size: int, slot_mapping: Any) -> None:
    """BuildC128ATopkMetadataKernel restated: n = min((pos + 1) // R, width); decode row t: the
    global slots of entries j < n (block table row token_to_req[t]), -1 after, lens n (0 for a
    -1 slot); prefill row: j for j < n, -1 after; width entries written a row."""
    pos = positions.numpy().astype(np.int64)
    t2r = token_to_req_indices.numpy().astype(np.int64)
    bt = block_table.numpy().astype(np.int64)
    slots = slot_mapping.numpy()
    dec, lens, pre = (global_decode_buffer.numpy(), decode_lens_buffer.numpy(),
                      prefill_buffer.numpy())
    w = max_compressed_tokens
    nd = num_decode_tokens
    j = np.arange(w)
    n = np.minimum((pos + 1) // compress_ratio, w)  # positions >= 0 here: // is Triton's
    if nd:
        cols = np.minimum(j // block_size, bt.shape[1] - 1)
        rows = bt[t2r[:nd, None], cols[None, :]] * block_size + j % block_size
        dec[:nd, :w] = np.where(j[None, :] < n[:nd, None], rows, -1)
        lens[:nd] = np.where(slots[:nd] >= 0, np.maximum(n[:nd], 0), 0)
    if pos.shape[0] > nd:
        pre[:pos.shape[0] - nd, :w] = np.where(j[None, :] < n[nd:, None], j, -1)


def compressed_slots_stand_in() -> Any:
    """get_compressed_slot_mapping's Triton kernel replaced by ``_compressed_slots_numpy``
    (a context manager; the compressed indexer items use it too)."""
    from unittest import mock
    return mock.patch.object(importlib.import_module(COMPRESSOR),
                             "_COMPRESSED_SLOT_MAPPING_KERNEL", _compressed_slots_numpy)


def patched(real_triton: bool, rocm: bool = False, gfx950: bool = False) -> Any:
    """The build's replacements (module doc), undone on exit."""
    from unittest import mock
    stack = contextlib.ExitStack()
    if rocm:
        stack.enter_context(ragged_kernels(real_triton))
    if gfx950:
        stack.enter_context(mock.patch.object(import_rocm(BACKENDS[ROCM_V4][0]), "_ON_GFX950",
                                              True))
    if not real_triton:
        stack.enter_context(compressed_slots_stand_in())
        stack.enter_context(mock.patch.object(importlib.import_module(V4_MLA),
                                              "_BUILD_C128A_TOPK_METADATA_KERNEL", _c128a_numpy))
    return stack


# ---- the two sides -------------------------------------------------------------------------

def builders(ctx: Any, name: str, ratio: int, k: int, gfx950: bool = False) -> Any:
    cache = ctx.__dict__.setdefault("v4_sparse_mla_builders", {})
    key = (name, ratio, k, gfx950)
    if key in cache:
        cache[key] = cache.pop(key)  # most recently used last
        return cache[key]
    while len(cache) >= CACHED_BUILDERS:  # the least recently used first
        del cache[next(iter(cache))]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import MLAAttentionSpec
    vc = _vllm_config(ctx, Settings(k, 1, 0, 1, 0, 90))  # the indexer's: no DCP
    spec = MLAAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=1, head_size=512,
                            dtype=torch.bfloat16, tokens_per_state=ratio)
    module, backend, _ = BACKENDS[name]
    bcls = getattr(import_rocm(module) if is_rocm(name) else importlib.import_module(module),
                   backend)
    assert bcls.get_name() == name, (bcls.get_name(), name)
    with set_current_vllm_config(vc), patched(False):
        vb = bcls.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"))
    libattn = ctx.libattn
    sc = vc.scheduler_config
    cfg = libattn.BuilderConfig(sc.max_num_seqs, sc.max_num_batched_tokens,
                                vc.model_config.max_model_len, 16,
                                num_speculative_tokens=k, device_capability=95 if gfx950 else 90,
                                platform_rocm=int(is_rocm(name)))
    lspec = libattn.KvCacheSpec(BLOCK_SIZE, 1, 512, kind=libattn.KvCacheKind.MLA,
                                index_topk=int(vc.model_config.hf_config.index_topk),
                                tokens_per_state=ratio)
    cache[key] = (vb, vc, ctx.lib.builder(name, lspec, cfg))
    return cache[key]


def v4_pairs(vmd: Any, lmd: Any, vb: Any, vc: Any, lb: Any, patch: Any = patched) -> List[Pair]:
    import dataclasses
    lib = {n: lmd[n] for n in lmd.fields()}
    out: List[Pair] = [(f.name, getattr(vmd, f.name), lib.pop(f.name, MISSING))
                       for f in dataclasses.fields(vmd) if f.name not in RAGGED_NAMES]
    out += ragged_pairs(vmd, lib)
    out += [(f"{n} (libattn field vLLM 0.33 lacks)", MISSING, x) for n, x in lib.items()]
    return finish_pairs(out, vb, vc, lb, patch)


def v4_sparse_mla_item(name: str) -> Item:
    rocm = is_rocm(name)

    def patch_of(b: Batch) -> Any:
        return functools.partial(patched, rocm=rocm, gfx950=gfx950_of(name, b))

    def mine(ctx: Any, b: Batch) -> Any:
        return builders(ctx, name, ratio_of(name, b), b.spec, gfx950_of(name, b))

    def capture(ctx: Any, b: Batch) -> bool:
        """build_for_cudagraph_capture where layer_variant_items.captures says (by vLLM's
        class's level: its dummy batches, a third of the others)."""
        vb, vc, _ = mine(ctx, b)
        return captures(vb, vc, b, patch_of(b)(False))

    def v(ctx: Any, b: Batch) -> Any:
        vb, vc, _ = mine(ctx, b)
        return vllm_build(ctx, b, vb, vc, patch_of(b), SALTS, capture=capture(ctx, b))

    def l(ctx: Any, b: Batch) -> Any:
        invalid_slots(b, SALTS[0])
        lb, common = mine(ctx, b)[2], lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if capture(ctx, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = mine(ctx, b)
        patch = patch_of(b)
        out = v4_pairs(vmd, lmd, vb, vc, lb, patch)
        if rocm:
            out.append(adaptive_level_pair(ctx, vb, vc, lb, name, patch))
        return out

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        parts = ["capture" if capture(ctx, b) else "build",
                 "triton" if triton_batch(b, SALTS[1]) else "numpy stand-ins",
                 f"compress ratio {ratio_of(name, b)}"]
        if gfx950_of(name, b):
            parts.append("gfx950")
        if getattr(vmd, "c128a_global_decode_topk_indices", None) is not None:
            parts.append("C128A decode rows")
        if getattr(vmd, "c128a_prefill_topk_indices", None) is not None:
            parts.append("C128A prefill rows")
        if getattr(vmd, "c128a_decode_topk_ragged_indices", None) is not None:
            parts.append("ragged C128A decode rows")
        if b.tokens and bool((b.slots[:b.tokens] < 0).any()):
            parts.append("invalid slots")
        return ", ".join(parts)

    return Item(name, "builder", v, l, pairs, block_sizes=(BLOCK_SIZE,), max_spec=3,
                max_requests=256, token_budget=TOKEN_BUDGET, path=path, kinds=VARIANT_KINDS)


def v4_sparse_mla_items() -> List[Item]:
    return [v4_sparse_mla_item(n) for n in BACKENDS]
