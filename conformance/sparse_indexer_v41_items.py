"""DeepSeek V4.1's sparse-logits indexer: vLLM 0.33's DeepseekV41SparseIndexerMetadataBuilder
(DEEPSEEK_V41_SPARSE_INDEXER, vllm/v1/attention/backends/mla/sparse_indexer.py), a subclass of
DeepseekV32IndexerMetadataBuilder, against libattn's builder of the same name: every field of
the base DeepseekV32IndexerMetadata as sparse_indexer_items compares it, plus sparse_block_kv
and each SparseMQARowsMetadata (sparse_decode, and sparse_prefill parallel to the chunks)
against libattn's sparse_* fields and the base fields they alias (docs/backends/sparse_mla.md).

vLLM's side: sparse_indexer_items' DeepSeek-V3.2-shaped model with the profile's index_topk,
its hf_text_config given candidate_block_size / candidate_topk_blocks while the builder is made,
attention_config.indexer_kv_dtype "mxfp4", a real MLAAttentionSpec of block size 128 (the V4.1
indexer's SM100 kernel block) and compress ratio 1 (item DEEPSEEK_V41_SPARSE_INDEXER) or 4
(item DEEPSEEK_V41_SPARSE_INDEXER_C4: tokens_per_state 4, V4.1's C4 indexer cache; libattn's
spec the same). Profiles: four (candidate_block_size, candidate_topk_blocks,
index_topk) triples with sparse_block_kv 16 and 8 and min_split_seq_len 256 to 4096 (the
prefill chunker's clamp), speculative tokens k <= 3, no DCP, SM100 (the varlen decode path).

Stand-ins, around the construction and the build only: sparse_indexer_items' ``patched`` (the
platform proxy at capability 10.0, has_deep_gemm, the DCP group, the SM count, DeepGEMM's
schedule, the Triton kernels' numpy restatements on most batches), and in sparse_indexer.py the
library probes has_deep_gemm_sparse_mqa and has_deep_select (True), current_platform (the 10.0
proxy), and DeepSelect's get_deep_select_stride_requirement ((1024, 32): SM100's documented
alignment, which libattn takes as given); at ratio 4 also v4_sparse_mla_items' numpy restatement
of CompressedSlotMappingKernel on the batches the Triton interpreter does not run.
Capture builds (issue 34): vLLM's runner's dummy batches (batches.dummy_batch) are among the
kinds, and build_for_cudagraph_capture (vLLM's base class's: build) runs on both sides where
layer_variant_items.captures says: the level vLLM's class answers under the stand-ins (ALWAYS
where the varlen decode kernel or the flattening is in use, else UNIFORM_BATCH), every dummy
batch it allows and a third of the others.
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, List

import numpy as np

from .batches import Batch
from .compare import MISSING, Pair
from .draft_update import Sides, with_draft_update
from .item import OPTIMISTIC_SPEC_DUMMY, Item, choice_rng
from .layer_variant_items import captures
from .mla_items import LAYER, NUM_SMS, optimistic_prefill_rows, zlib_crc
from .sides import lib_common, vllm_common
from .sparse_indexer_items import (MAX_MODEL_LEN, MAX_TOKENS, TOKEN_BUDGET, Settings,
                                   _Platform100, indexer_pairs, new_vllm_config, patched,
                                   triton_batch)

NAME = "DEEPSEEK_V41_SPARSE_INDEXER"
MODULE = "vllm.v1.attention.backends.mla.sparse_indexer"
SMQ = "vllm.model_executor.kernels.attention.dsa.sparse_mqa_logits"
#: (candidate_block_size, candidate_topk_blocks, index_topk)
PROFILES = ((64, 8, 512), (8, 64, 256), (128, 16, 512), (256, 32, 256))


def settings(b: Batch) -> Any:
    p = int(choice_rng(b, 70).integers(0, len(PROFILES)))
    return Settings(b.spec, 1, 0, 1, int(b.bt.shape[1]), 100), PROFILES[p]


@contextlib.contextmanager
def sparse_patched(s: Settings, real_triton: bool) -> Any:
    from unittest import mock
    from .v4_sparse_mla_items import compressed_slots_stand_in
    mod = importlib.import_module(MODULE)
    smq = importlib.import_module(SMQ)
    real = mod.current_platform
    real = real._real if isinstance(real, _Platform100) else real
    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(s, real_triton))
        if not real_triton:
            stack.enter_context(compressed_slots_stand_in())
        for obj, name, value in ((mod, "current_platform", _Platform100(real)),
                                 (mod, "has_deep_gemm_sparse_mqa", lambda: True),
                                 (mod, "has_deep_select", lambda: True),
                                 (smq, "get_deep_select_stride_requirement", lambda: (1024, 32))):
            stack.enter_context(mock.patch.object(obj, name, value))
        yield


def _config(ctx: Any, spec: int, topk: int) -> Any:
    cache = ctx.__dict__.setdefault("v41_indexer_configs", {})
    if (spec, topk) not in cache:
        vc = new_vllm_config(ctx, spec, topk, block_size=128)
        vc.attention_config.indexer_kv_dtype = "mxfp4"
        # VllmConfig raises max_num_batched_tokens to max_model_len; the builders size their
        # per-row scratch by it (rows x topk, made per batch), so both sides take MAX_TOKENS
        # (the batches stay under TOKEN_BUDGET)
        vc.scheduler_config.max_num_batched_tokens = MAX_TOKENS
        cache[(spec, topk)] = vc
    return cache[(spec, topk)]


def builders(ctx: Any, b: Batch, ratio: int = 1) -> Any:
    """Both builders, made per batch (the block_table_width argument is the batch's width), on
    an indexer cache of compress ratio ``ratio`` (tokens_per_state)."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import MLAAttentionSpec, SparseCacheRole
    s, (cbs, ctb, topk) = settings(b)
    vc = _config(ctx, s.spec, topk)
    hf = vc.model_config.hf_text_config
    spec = MLAAttentionSpec(block_size=128, num_kv_heads=1, max_tp_shards=1, head_size=132,
                            dtype=torch.uint8, cache_role=SparseCacheRole.INDEXER,
                            tokens_per_state=ratio)
    hf.candidate_block_size, hf.candidate_topk_blocks = cbs, ctb
    try:
        cls = importlib.import_module(MODULE).DeepseekV41SparseIndexerMetadataBuilder
        with set_current_vllm_config(vc), sparse_patched(s, False):
            vb = cls(spec, [LAYER], vc, torch.device("cpu"), block_table_width=s.width)
    finally:
        del hf.candidate_block_size, hf.candidate_topk_blocks
    libattn = ctx.libattn
    sc = vc.scheduler_config
    cfg = libattn.BuilderConfig(
        sc.max_num_seqs, sc.max_num_batched_tokens, MAX_MODEL_LEN, 16,
        num_speculative_tokens=s.spec, device_capability=100, num_sms=NUM_SMS,
        block_table_width=s.width, candidate_block_size=cbs, candidate_topk_blocks=ctb,
        indexer_kv_mxfp4=1)
    lspec = libattn.KvCacheSpec(128, 1, 132, kind=libattn.KvCacheKind.MLA,
                                dtype=libattn.KvDtype.FP8_E4M3, index_topk=topk,
                                tokens_per_state=ratio)
    return s, vb, vc, ctx.lib.builder(NAME, lspec, cfg)


def _rows_pairs(name: str, rows: Any, lib: Any, want: dict) -> List[Pair]:
    """One SparseMQARowsMetadata against the libattn arrays `want` names for each field."""
    out: List[Pair] = []
    for f in ("row_ks", "row_ke", "sparse_indices", "end", "col_indices", "block_table",
              "row_indices", "kernel_metadata"):
        got = want.get(f, MISSING)
        out.append((f"{name}.{f}", getattr(rows, f), got))
    return out


def sparse_pairs(v: Any, lmd: Any, b: Batch) -> List[Pair]:
    lib = {n: lmd[n] for n in lmd.fields()}
    arr = lambda n: None if lib.get(n) is None else np.asarray(lib[n])  # noqa: E731
    out: List[Pair] = [("sparse_block_kv", v.sparse_block_kv, lib.get("sparse_block_kv"))]
    d = v.sparse_decode
    if d is None:
        out += [(f"{n} (sparse_decode is None)", None, lib.get(n)) for n in (
            "sparse_decode_row_ks", "sparse_decode_sparse_indices", "sparse_decode_end",
            "sparse_decode_col_indices")]
    else:
        out += _rows_pairs("sparse_decode", d, lib, {
            "row_ks": arr("sparse_decode_row_ks"),
            "row_ke": None if lib.get("decode_seq_lens") is None
            else arr("decode_seq_lens").reshape(-1),
            "sparse_indices": arr("sparse_decode_sparse_indices"),
            "end": arr("sparse_decode_end"), "col_indices": arr("sparse_decode_col_indices"),
            "block_table": arr("decode_block_table"), "row_indices": arr("decode_indices"),
            "kernel_metadata": None})
    p = v.sparse_prefill
    names = ("sparse_prefill_sparse_indices", "sparse_prefill_end", "sparse_prefill_col_indices")
    if p is None:
        out += [(f"{n} (sparse_prefill is None)", None, lib.get(n)) for n in names]
    else:  # every batch: both plan the chunks from seq_lens_cpu_upper_bound
        nd = int(v.num_decodes)
        first = int(b.qsl[nd])
        starts = np.asarray(lib["prefill_chunk_token_start"]).reshape(-1)
        ends = np.asarray(lib["prefill_chunk_token_end"]).reshape(-1)
        out.append(("len(sparse_prefill) ~ prefill_num_chunks", len(p), len(starts)))
        for i, rows in enumerate(p):
            if i >= len(starts):
                break
            lo, hi = int(starts[i]) - first, int(ends[i]) - first
            out += _rows_pairs(f"sparse_prefill[{i}]", rows, lib, {
                "row_ks": arr("prefill_cu_seqlen_ks")[lo:hi],
                "row_ke": arr("prefill_cu_seqlen_ke")[lo:hi],
                "sparse_indices": arr("sparse_prefill_sparse_indices")[lo:hi],
                "end": arr("sparse_prefill_end")[lo:hi],
                "col_indices": arr("sparse_prefill_col_indices")[lo:hi],
                "block_table": None, "row_indices": None, "kernel_metadata": None})
    return out


def v41_sparse_item(ratio: int = 1) -> Item:
    name = NAME if ratio == 1 else f"{NAME}_C{ratio}"
    key = "v41_last" if ratio == 1 else f"v41_last_c{ratio}"

    def mine(ctx: Any, b: Batch) -> Any:
        """(settings, vLLM's builder, its config, libattn's builder) that built ``b`` (made
        again if another batch came between)."""
        last = ctx.__dict__.get(key)
        if last is None or last[0] is not b:
            ctx.__dict__[key] = (b, *builders(ctx, b, ratio))
        return ctx.__dict__[key][1:]

    def capture(ctx: Any, b: Batch) -> bool:
        """build_for_cudagraph_capture where layer_variant_items.captures says (by vLLM's
        class's level: its dummy batches, a third of the others)."""
        s, vb, vc, _ = mine(ctx, b)
        return captures(vb, vc, b, sparse_patched(s, False))

    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        ctx.__dict__.pop(key, None)  # a batch's builders are made afresh
        s, vb, vc, _ = mine(ctx, b)
        cm = vllm_common(ctx, b)
        with set_current_vllm_config(vc), sparse_patched(s, triton_batch(b)):
            return vb.build_for_cudagraph_capture(cm) if capture(ctx, b) else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        lb, common = mine(ctx, b)[3], lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if capture(ctx, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        s, vb, vc, lb = mine(ctx, b)
        base = [p for p in indexer_pairs(ctx, s, b, vmd, lmd, vb, vc, lb,
                                         patches=sparse_patched(s, False))
                if "sparse_" not in p[0]]
        return base + sparse_pairs(vmd, lmd, b)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        _, (cbs, ctb, topk) = settings(b)
        parts = ["capture" if capture(ctx, b) else "build",
                 "triton" if triton_batch(b) else "numpy stand-ins",
                 f"candidates {ctb}x{cbs}, topk {topk}",
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills"]
        if vmd.prefill is not None and len(vmd.prefill.chunks) > 1:
            parts.append("several chunks")
        if vmd.num_prefills and optimistic_prefill_rows(b, vmd):
            parts.append("optimistic prefill bounds")
        return ", ".join(parts)

    def sides(ctx: Any, b: Batch) -> Sides:
        s, vb, vc, lb = mine(ctx, b)
        return Sides(b, vb, vc, lb, lambda: sparse_patched(s, False))

    return with_draft_update(Item(
        name, "builder", v, l, pairs, block_sizes=(128,), max_spec=3, max_requests=256,
        token_budget=TOKEN_BUDGET, path=path, **OPTIMISTIC_SPEC_DUMMY,
        notes=["not comparable: decode.schedule_metadata: DeepGEMM's (shape compared)",
               "sparse_*.kernel_metadata: None at build (the first consumer layer "
               "fills it); libattn does not return it"]), sides)


def sparse_indexer_v41_items() -> List[Item]:
    return [v41_sparse_item(), v41_sparse_item(4)]
