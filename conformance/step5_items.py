"""Step5's builders (vllm/models/step5/nvidia/) against libattn's of the same names, on the lane's
random batches.

STEP5_CSA_SUMMARY: vLLM 0.33's Step5SparseSummaryMetadataBuilder (sparse_summary_cache.py), whose
build returns None ("summaries are addressed through the DSA layer's own metadata"): vLLM's
result (None) against libattn's metadata, which must have no fields (compared as None), and the
builder's answers (level ALWAYS, threshold None, ...). vLLM's builder is made with the lane's
Llama-shaped VllmConfig (the base class reads nothing of it) and the layer's own spec
(Step5SparseSummaryCacheLayer.get_kv_cache_spec: FullAttentionSpec(block_size, 1 head, 256,
head_size_v 0, uint8, tokens_per_state 8)) at the batch's block size (a multiple of 8, as the
layer requires); on a third of the batches with ``build_for_cudagraph_capture`` on both sides
(the base class's: build). It asks no platform question: nothing is patched.

STEP5_CSA_TAIL_RING: vLLM 0.33's Step5CSATailRingMetadataBuilder (csa_tail_ring.py): every field
of vLLM's Step5CSATailRingMetadata (base, slot_mapping) and the builder's answers. vLLM's builder
is made with the layer's own CircularBufferSpec (block_size, 1 head, head_size = page / (block
size * 2), head_size_v 0, bfloat16, block_stride_alignment 1024) for a page of ``capacity`` 1 KB
rows (8, 16 or 32, at least the layer's 7 + k), and a real Step5CSATailRing layer in the config's
static_forward_context, bound (bind_kv_cache) to a CPU tensor whose block stride is the page or
wider (``rows_per_block`` = capacity plus 0, 1..5 or capacity rows); libattn gets a spec of the
same sizes and ``block_stride_bytes`` = the tensor's stride(0) * 2, of kind CIRCULAR_BUFFER (ABI
1.7) in half the builders, whose batches both sides get with a one-column block table (as
vLLM's runner builds it for a CircularBufferSpec), and FULL_ATTENTION (the whole table) in the
others.
On one batch in three some requests' ring block (column 0) is 0 (the null block) or -1; on one
in four 1..16 padding rows are counted as actual tokens (``Batch.pad_tokens``: past
query_start_loc[-1]), else on one in three 1..16 rows past num_actual_tokens
(``pad_past_actual_tokens``). The Triton kernels (compute_token_to_req_indices,
_ring_metadata_kernel) run in Triton's CPU interpreter on about one small batch in
``TRITON_EVERY``; on the others ``token_to_req_numpy`` (as the documented
``_token_to_req_indices_cache``) and ``_TailRingNumpy`` stand in. Nothing else is patched: the
builder asks no platform question.
"""
from __future__ import annotations

import importlib
from typing import Any, List

import numpy as np

from .batches import VARIANT_KINDS, Batch
from .builder_items import MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS
from .compare import Pair, builder_answer_pairs, dataclass_pairs
from .item import Item, choice_rng, pad_past_actual_tokens
from .sides import lib_common, vllm_common

SUMMARY = "STEP5_CSA_SUMMARY"
SUMMARY_MODULE = "vllm.models.step5.nvidia.sparse_summary_cache"
LAYER = "model.layers.0.self_attn.summary_cache"
BLOCK_SIZES = (16, 64)  # the layer refuses block sizes that are not multiples of 8


def capture_of(b: Batch) -> bool:
    return b.kind == "dummy" or int(choice_rng(b, 90).integers(0, 3)) == 0


def summary_builders(ctx: Any, b: Batch) -> Any:
    cache = ctx.__dict__.setdefault("step5_summary_builders", {})
    key = (b.block_size, b.spec)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    libattn = ctx.libattn
    vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("step5", SUMMARY),
                         MAX_MODEL_LEN)
    spec = FullAttentionSpec(block_size=b.block_size, num_kv_heads=1, head_size=256,
                             head_size_v=0, dtype=torch.uint8, tokens_per_state=8)
    backend = importlib.import_module(SUMMARY_MODULE).Step5SparseSummaryBackend
    assert backend.get_name() == SUMMARY, backend.get_name()
    with set_current_vllm_config(vc):
        vb = backend.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"))
    lspec = libattn.KvCacheSpec(b.block_size, 1, 256, kind=libattn.KvCacheKind.FULL_ATTENTION,
                                dtype=libattn.KvDtype.UINT8, tokens_per_state=8)
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                num_speculative_tokens=b.spec)
    cache[key] = (vb, vc, ctx.lib.builder(SUMMARY, lspec, cfg))
    return cache[key]


def summary_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        vb, vc, _ = summary_builders(ctx, b)
        cm = vllm_common(ctx, b)
        with set_current_vllm_config(vc):
            if capture_of(b):
                return vb.build_for_cudagraph_capture(cm)
            return vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        lb = summary_builders(ctx, b)[2]
        if capture_of(b):
            return lb.build_for_cudagraph_capture(lib_common(ctx, b))
        return lb.build(lib_common(ctx, b))

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = summary_builders(ctx, b)
        fields = list(lmd.fields())
        return [("build() result (libattn: a metadata with no fields is None)", vmd,
                 None if not fields else fields)] + builder_answer_pairs(vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        return "build_for_cudagraph_capture" if capture_of(b) else "build"

    return Item(SUMMARY, "builder", v, l, pairs, block_sizes=BLOCK_SIZES, max_spec=3,
                max_requests=256, path=path, kinds=VARIANT_KINDS)


TAIL_RING = "STEP5_CSA_TAIL_RING"
TAIL_RING_MODULE = "vllm.models.step5.nvidia.csa_tail_ring"
TAIL_LAYER = "model.layers.0.self_attn.csa_tail_ring"
TAIL_BLOCK_SIZES = (16, 64)
TRITON_EVERY = 40


def tail_settings(b: Batch) -> Any:
    """The ring's capacity (rows a page holds, at least 7 + k) and rows per block (the bound
    tensor's block stride in rows: the page, a few rows more, or two pages)."""
    import types
    caps = [c for c in (8, 16, 32) if c >= 7 + b.spec]
    cap = caps[int(choice_rng(b, 91).integers(0, len(caps)))]
    wide = int(choice_rng(b, 92).integers(0, 3))
    extra = (0, int(choice_rng(b, 93).integers(1, 6)), cap)[wide]
    circular = bool(choice_rng(b, 102).random() < 0.5)
    return types.SimpleNamespace(capacity=cap, rows_per_block=cap + extra, circular=circular)


def tail_triton_batch(b: Batch) -> bool:
    return (b.n <= 8 and b.tokens <= 2048 and
            int(choice_rng(b, 94).integers(0, TRITON_EVERY)) == 0)


def _tail_prepare(b: Batch) -> None:
    """Once per batch, before either side reads it: null (0) or negative ring blocks in column
    0 on one batch in three, padding counted as actual tokens on one in four, rows past
    num_actual_tokens on one in four."""
    if getattr(b, "_tail_ring_prepared", False):
        return
    b._tail_ring_prepared = True
    if b.n and int(choice_rng(b, 95).integers(0, 3)) == 0:
        bt = b.bt.copy()
        pick = choice_rng(b, 96).random(b.n) < 0.25
        bt[pick, 0] = np.where(choice_rng(b, 97).random(b.n) < 0.5, 0, -1)[pick]
        b.bt = bt
    if tail_settings(b).circular:  # the runner's table for a CircularBufferSpec: one column
        b.bt = np.ascontiguousarray(b.bt[:, :1])
    if int(choice_rng(b, 98).integers(0, 4)) == 0:
        b.pad_tokens = int(choice_rng(b, 99).integers(1, 17))
    else:
        pad_past_actual_tokens(b, "_tail_ring_padded", 3, (100, 101))


class _TailRingNumpy:
    """_ring_metadata_kernel restated: token t < num_tokens is valid when t < num_actual_tokens,
    t < query_start_loc[num_reqs] and its request's block (column 0) is positive; a valid token
    gets base = block * ROWS_PER_BLOCK and, when its position is one of the request's last
    CAPACITY, slot base + position % CAPACITY; -1 elsewhere."""

    def __getitem__(self, grid: Any) -> Any:
        return self.launch

    @staticmethod
    def launch(base_ptr: Any, slot_ptr: Any, block_table: Any, stride: int, token_to_req: Any,
               positions: Any, seq_lens: Any, query_start_loc: Any, num_reqs: int,
               num_actual_tokens: int, num_tokens: int, CAPACITY: int, ROWS_PER_BLOCK: int,
               **k: Any) -> None:
        base, slot = base_ptr.numpy(), slot_ptr.numpy()
        t = np.arange(num_tokens)
        scheduled = int(query_start_loc.numpy()[num_reqs])
        valid = (t < num_actual_tokens) & (t < scheduled)
        m = int(valid.sum())  # the valid rows are a prefix
        t2r = token_to_req.numpy()[:m].astype(np.int64)
        block = np.zeros(num_tokens, np.int64)
        block[:m] = block_table.numpy()[t2r, 0] if m else 0
        valid &= block > 0
        pos = np.zeros(num_tokens, np.int64)
        pos[:m] = positions.numpy()[:m]
        seq = np.zeros(num_tokens, np.int64)
        seq[:m] = seq_lens.numpy()[t2r] if m else 0
        b = block * ROWS_PER_BLOCK
        keep = valid & (pos >= seq - CAPACITY)
        base[:num_tokens] = np.where(valid, b, -1)
        slot[:num_tokens] = np.where(keep, b + np.fmod(pos, CAPACITY), -1)


def tail_builders(ctx: Any, b: Batch) -> Any:
    cache = ctx.__dict__.setdefault("step5_tail_builders", {})
    st = tail_settings(b)
    key = (b.block_size, b.spec, st.capacity, st.rows_per_block, st.circular)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import CircularBufferSpec
    mod = importlib.import_module(TAIL_RING_MODULE)
    libattn = ctx.libattn
    vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("step5", TAIL_RING) + key,
                         MAX_MODEL_LEN)
    page = st.capacity * 1024
    head = page // (b.block_size * 2)
    # the layer's get_kv_cache_spec, for a main page of `page` bytes
    spec = CircularBufferSpec(block_size=b.block_size, num_kv_heads=1, head_size=head,
                              head_size_v=0, dtype=torch.bfloat16, block_stride_alignment=1024)
    assert spec.page_size_bytes == page, spec.page_size_bytes
    context = vc.compilation_config.static_forward_context
    layer = mod.Step5CSATailRing(prefix=TAIL_LAYER, main_layer_name="model.layers.0.self_attn",
                                 num_speculative_tokens=b.spec, static_forward_context=context)
    stride = st.rows_per_block * 512  # bf16 elements
    storage = torch.zeros(2 * stride, dtype=torch.bfloat16)
    layer.bind_kv_cache(storage.as_strided((2, page // 2), (stride, 1)))
    assert layer.rows_per_block == st.rows_per_block and layer.capacity == st.capacity
    backend = mod.Step5CSATailRingBackend
    assert backend.get_name() == TAIL_RING, backend.get_name()
    with set_current_vllm_config(vc):
        vb = backend.get_builder_cls()(spec, [TAIL_LAYER], vc, torch.device("cpu"))
    kind = libattn.KvCacheKind.CIRCULAR_BUFFER if st.circular else \
        libattn.KvCacheKind.FULL_ATTENTION
    lspec = libattn.KvCacheSpec(b.block_size, 1, head, kind=kind, dtype=libattn.KvDtype.BFLOAT16,
                                block_stride_bytes=stride * 2)
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                num_speculative_tokens=b.spec)
    cache[key] = (vb, vc, ctx.lib.builder(TAIL_RING, lspec, cfg))
    return cache[key]


def tail_patched(real_triton: bool) -> Any:
    import contextlib
    from unittest import mock
    stack = contextlib.ExitStack()
    if not real_triton:
        mod = importlib.import_module(TAIL_RING_MODULE)
        stack.enter_context(mock.patch.object(mod, "_ring_metadata_kernel", _TailRingNumpy()))
    return stack


def tail_ring_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        vb, vc, _ = tail_builders(ctx, b)
        _tail_prepare(b)
        cm = vllm_common(ctx, b)
        real = tail_triton_batch(b)
        if not real:
            cm._token_to_req_indices_cache = token_to_req_numpy_padded(b)
        with set_current_vllm_config(vc), tail_patched(real):
            if capture_of(b):
                return vb.build_for_cudagraph_capture(cm)
            return vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        lb = tail_builders(ctx, b)[2]
        _tail_prepare(b)
        if capture_of(b):
            return lb.build_for_cudagraph_capture(lib_common(ctx, b))
        return lb.build(lib_common(ctx, b))

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = tail_builders(ctx, b)
        return dataclass_pairs(vmd, lmd, "absent") + builder_answer_pairs(vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        st = tail_settings(b)
        parts = ["triton" if tail_triton_batch(b) else "numpy stand-ins",
                 f"capacity {st.capacity}", f"rows_per_block {st.rows_per_block}",
                 "CIRCULAR_BUFFER, one-column table" if st.circular else "FULL_ATTENTION"]
        if capture_of(b):
            parts.append("build_for_cudagraph_capture")
        base = vmd.base.numpy()
        if b.pad_tokens:
            parts.append("padding counted as actual")
        if base.shape[0] > b.tokens + b.pad_tokens:
            parts.append("rows past num_actual_tokens")
        if (base[:b.tokens] == -1).any():
            parts.append("unowned rows")
        if ((vmd.slot_mapping.numpy() == -1) & (base != -1)).any():
            parts.append("rows before the ring's window")
        return ", ".join(parts)

    return Item(TAIL_RING, "builder", v, l, pairs, block_sizes=TAIL_BLOCK_SIZES, max_spec=3,
                max_requests=256, token_budget=8192, path=path, kinds=VARIANT_KINDS)


def token_to_req_numpy_padded(b: Batch) -> Any:
    """token_to_req_numpy for the batch as the builder sees it (num_actual_tokens counting
    Batch.pad_tokens): rows past query_start_loc_cpu[-1] are 0, as compute_token_to_req_indices
    leaves them."""
    import torch
    from .sparse_mla_items import token_to_req_numpy
    t = token_to_req_numpy(b).numpy()
    n = max(t.shape[0], b.tokens + b.pad_tokens)
    out = np.zeros(n, np.int32)
    out[:t.shape[0]] = t
    return torch.from_numpy(out)


def step5_items() -> List[Item]:
    return [summary_item(), tail_ring_item()]
