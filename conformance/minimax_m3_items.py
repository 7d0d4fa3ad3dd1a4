"""MiniMax-M3's block-sparse attention: vLLM 0.33's MiniMaxM3SparseMetadataBuilder of
vllm/models/minimax_m3/common/sparse_attention.py against libattn's MINIMAX_M3_SPARSE on the
lane's random batches: every field of MiniMaxM3SparseMetadata (its prefill and decode parts
field by field, libattn's ``prefill_*`` / ``decode_*``; a part vLLM leaves None against every
field of libattn's part being None) and the builder's answers.

vLLM's builder needs only the scheduler's max_num_batched_tokens and the speculative config from
its VllmConfig (the lane's Llama-shaped config) and a FullAttentionSpec at the kernel block 128
(8 KV heads of 128, bfloat16, as MiniMaxM3SparseAttention.get_kv_cache_spec makes it). The
AITER sparse PA path is an environment switch in vLLM (``_minimax_m3_aiter_sparse_pa_requested()``:
VLLM_ROCM_USE_AITER and VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT, read once when the builder is made):
on one batch in two the lane patches that function to return True around the construction of
vLLM's builder (no ROCm platform is simulated: the build's only ROCm branch zeroes
cu_seqlens_k[0] another way) and gives libattn ``rocm_aiter_shuffle_kv_cache=1``. On one batch in
three the slot mapping carries 1..16 padding rows (slot -1) past num_actual_tokens, which
page16_slot_mapping covers. Spec batches come four times as often, most of them ragged and with
an optimistic seq_lens_cpu_upper_bound (item.OPTIMISTIC_SPEC_DUMMY: total_kv_blocks reads the
bound).

MINIMAX_M3_SPARSE_AITER_PA: vLLM's MiniMaxM3SparseAiterPAMetadataBuilder of
vllm/models/minimax_m3/amd/sparse_attention_msa.py (the builder vLLM's ROCm platform picks when
the AITER sparse PA path is requested) against libattn's MINIMAX_M3_SPARSE_AITER_PA, on the same
batches and switch draws: the base's fields and the parts' page16_block_table (the block table
rebased onto page-16 numbering). The class is vLLM's source imported on this CPU machine; no
ROCm platform query is reached by its build (the rebase is a torch multiply).

MINIMAX_M3_SPARSE_INDEXER: vLLM's MiniMaxM3IndexerTritonMetadataBuilder of
vllm/models/minimax_m3/common/indexer.py against libattn's MINIMAX_M3_SPARSE_INDEXER (index heads
and TP world size drawn per batch, some breaking vLLM's assertion). MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM:
the same item over vLLM's AMD MiniMaxM3IndexerMSAMetadataBuilder (models/minimax_m3/amd/
indexer_msa.py; the model config's sparse_block_size 128, the one value vLLM's selection of it
accepts) against libattn's MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM: the Triton fields and the prefill
rows' prefill_num_valid_pages, prefill_row_req_id and prefill_kv_lens from the batch's positions.
The class is vLLM's source imported on this CPU machine; its build asks no platform question.
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, List

import numpy as np

from .batches import Batch
from .builder_items import MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .item import OPTIMISTIC_SPEC_DUMMY, Item, choice_rng, pad_past_actual_tokens
from .sides import lib_common, vllm_common

NAME = "MINIMAX_M3_SPARSE"
AITER_PA = "MINIMAX_M3_SPARSE_AITER_PA"
MODULE = "vllm.models.minimax_m3.common.sparse_attention"
#: the vLLM builder class of each item's libattn backend: (module, class)
CLASSES = {NAME: (MODULE, "MiniMaxM3SparseMetadataBuilder"),
           AITER_PA: ("vllm.models.minimax_m3.amd.sparse_attention_msa",
                      "MiniMaxM3SparseAiterPAMetadataBuilder")}
LAYER = "model.layers.0.self_attn.attn"
BLOCK = 128  # SPARSE_BLOCK_SIZE, the backend's one kernel block size
KV_HEADS, HEAD = 8, 128


def aiter(b: Batch) -> bool:
    """The AITER sparse PA switch of this batch (one in two)."""
    return int(choice_rng(b, 81).integers(0, 2)) == 1


def _pad(b: Batch) -> None:
    """Padding rows on one batch in three (pad_past_actual_tokens)."""
    pad_past_actual_tokens(b, "_minimax_padded", 3, (82, 83))


@contextlib.contextmanager
def aiter_switch(on: bool) -> Any:
    """vLLM's environment switch, as the builder's __init__ reads it."""
    from unittest import mock
    with mock.patch.object(importlib.import_module(MODULE),
                           "_minimax_m3_aiter_sparse_pa_requested", lambda: on):
        yield


def builders(ctx: Any, b: Batch, name: str = NAME) -> Any:
    cache = ctx.__dict__.setdefault("minimax_m3_builders", {})
    key = (b.spec, aiter(b), name)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    libattn = ctx.libattn
    vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, BLOCK, ("minimax_m3",), MAX_MODEL_LEN)
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=KV_HEADS, head_size=HEAD,
                             dtype=torch.bfloat16)
    module, cls_name = CLASSES[name]
    cls = getattr(importlib.import_module(module), cls_name)
    with set_current_vllm_config(vc), aiter_switch(key[1]):
        vb = cls(spec, [LAYER], vc, torch.device("cpu"))
    lspec = libattn.KvCacheSpec(BLOCK, KV_HEADS, HEAD)
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                num_speculative_tokens=b.spec,
                                rocm_aiter_shuffle_kv_cache=key[1])
    cache[key] = (vb, vc, ctx.lib.builder(name, lspec, cfg))
    return cache[key]


def minimax_pairs(vmd: Any, lmd: Any, vb: Any, vc: Any, lb: Any) -> List[Pair]:
    """Every field of vLLM's metadata (flatten_vllm: ``prefill.cu_seqlens_q`` is libattn's
    ``prefill_cu_seqlens_q``), a None part against each of libattn's fields of that part, the
    fields only libattn has, and the builders' answers."""
    import dataclasses
    lib = {n: lmd[n] for n in lmd.fields()}
    # the metadata's own fields named like a part's (the AMD MSA indexer's prefill_kv_lens, ...)
    own = {f.name for f in dataclasses.fields(vmd)}
    out: List[Pair] = []
    for name, value in flatten_vllm(vmd):
        if name in ("prefill", "decode") and value is None:
            for n in [k for k in lib if k.startswith(name + "_") and k not in own]:
                out.append((f"{n} ({name} is None)", None, lib.pop(n)))
            continue
        out.append((name, value, lib.pop(name.replace(".", "_"), MISSING)))
    out += [(f"{n} (libattn field vLLM 0.33 lacks)", MISSING, x) for n, x in lib.items()]
    out += builder_answer_pairs(vb, vc, lb)
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in out]


def minimax_item(name: str = NAME) -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        from .layer_variant_items import captures
        vb, vc, _ = builders(ctx, b, name)
        _pad(b)
        cm = vllm_common(ctx, b)
        capture = captures(vb, vc, b)
        with set_current_vllm_config(vc):
            return vb.build_for_cudagraph_capture(cm) if capture else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        from .layer_variant_items import captures
        _pad(b)
        vb, vc, lb = builders(ctx, b, name)
        common = lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if captures(vb, vc, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = builders(ctx, b, name)
        return minimax_pairs(vmd, lmd, vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        parts = ["aiter sparse PA" if aiter(b) else "no aiter"]
        parts.append("+".join(p for p, x in (("decodes", vmd.decode), ("prefills", vmd.prefill))
                              if x is not None) or "empty")
        if vmd.slot_mapping.shape[0] > b.tokens:
            parts.append("padding rows")
        if b.n and (np.diff(b.qsl) == 0).any():
            parts.append("empty queries")
        return ", ".join(parts)

    return Item(name, "builder", v, l, pairs, block_sizes=(BLOCK,), max_spec=3,
                max_requests=256, path=path, **OPTIMISTIC_SPEC_DUMMY)


INDEXER_NAME = "MINIMAX_M3_SPARSE_INDEXER"
INDEXER_MSA_ROCM = "MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM"
INDEXER_MODULE = "vllm.models.minimax_m3.common.indexer"
#: the vLLM builder class of each indexer item's libattn backend: (module, class)
INDEXER_CLASSES = {INDEXER_NAME: (INDEXER_MODULE, "MiniMaxM3IndexerTritonMetadataBuilder"),
                   INDEXER_MSA_ROCM: ("vllm.models.minimax_m3.amd.indexer_msa",
                                      "MiniMaxM3IndexerMSAMetadataBuilder")}
#: MSA_SPARSE_BLOCK_SIZE: the sparse_block_size vLLM's selection of the AMD MSA indexer accepts
MSA_SPARSE_BLOCK = 128
INDEXER_LAYER = "model.layers.0.self_attn.indexer.index_cache"
INDEX_HEAD = 128  # index_head_dim: the side cache's one key a token


def index_heads_tp(b: Batch) -> tuple:
    """The batch's (sparse_num_index_heads, TP world size): powers of two (vLLM's assertions
    hold) on seven batches in eight, any of a few values (some break them) on the eighth."""
    rng = choice_rng(b, 84)
    if int(rng.integers(0, 8)) == 0:
        return int(rng.choice([1, 3, 4, 6, 12])), int(rng.choice([1, 2, 3, 4, 6, 8]))
    return int(rng.choice([1, 2, 4, 8, 16, 64])), int(rng.choice([1, 2, 4, 8]))


@contextlib.contextmanager
def indexer_model(vc: Any, heads: int, tp: int) -> Any:
    """What MiniMaxM3IndexerMetadataBuilder.__init__ reads beyond the lane's Llama-shaped config:
    the model's sparse_attention_config (set on the text config while the builder is made; the
    AMD MSA builder also reads its sparse_block_size) and the TP world size
    (get_tensor_model_parallel_world_size patched in the module: the lane runs no distributed
    group)."""
    from unittest import mock
    hf = vc.model_config.hf_config
    text = getattr(hf, "text_config", hf)
    text.sparse_attention_config = {"sparse_num_index_heads": heads,
                                    "sparse_block_size": MSA_SPARSE_BLOCK}
    try:
        with mock.patch.object(importlib.import_module(INDEXER_MODULE),
                               "get_tensor_model_parallel_world_size", lambda: tp):
            yield
    finally:
        del text.sparse_attention_config


def indexer_vllm_builder(ctx: Any, b: Batch, name: str = INDEXER_NAME) -> Any:
    cache = ctx.__dict__.setdefault("minimax_m3_indexer_vllm", {})
    heads, tp = index_heads_tp(b)
    key = (b.spec, heads, tp, name)
    if key not in cache:
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import MLAAttentionSpec, SparseCacheRole
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, BLOCK, ("minimax_m3_indexer",),
                             MAX_MODEL_LEN)
        spec = MLAAttentionSpec(block_size=BLOCK, num_kv_heads=1, head_size=INDEX_HEAD,
                                dtype=torch.bfloat16, cache_role=SparseCacheRole.INDEXER)
        module, cls_name = INDEXER_CLASSES[name]
        cls = getattr(importlib.import_module(module), cls_name)
        with set_current_vllm_config(vc), indexer_model(vc, heads, tp):
            cache[key] = (cls(spec, [INDEXER_LAYER], vc, torch.device("cpu")), vc)
    return cache[key]


def indexer_lib_builder(ctx: Any, b: Batch, name: str = INDEXER_NAME) -> Any:
    cache = ctx.__dict__.setdefault("minimax_m3_indexer_lib", {})
    heads, tp = index_heads_tp(b)
    key = (b.spec, heads, tp, name)
    if key not in cache:
        libattn = ctx.libattn
        lspec = libattn.KvCacheSpec(BLOCK, 1, INDEX_HEAD, kind=libattn.KvCacheKind.MLA)
        cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                    num_speculative_tokens=b.spec,
                                    sparse_num_index_heads=heads, tensor_parallel_size=tp)
        cache[key] = ctx.lib.builder(name, lspec, cfg)
    return cache[key]


def indexer_item(name: str = INDEXER_NAME) -> Item:
    """The indexer's item over the Triton builder or, with INDEXER_MSA_ROCM, the AMD MSA one
    (its prefill rows' causal shape read from the batch's positions, which both sides get)."""
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        from .layer_variant_items import captures
        vb, vc = indexer_vllm_builder(ctx, b, name)
        pad_past_actual_tokens(b, "_minimax_indexer_padded", 3, (85, 86))
        cm = vllm_common(ctx, b)
        capture = captures(vb, vc, b)
        with set_current_vllm_config(vc):
            return vb.build_for_cudagraph_capture(cm) if capture else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        from .layer_variant_items import captures
        lb = indexer_lib_builder(ctx, b, name)
        pad_past_actual_tokens(b, "_minimax_indexer_padded", 3, (85, 86))
        vb, vc = indexer_vllm_builder(ctx, b, name)
        common = lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if captures(vb, vc, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc = indexer_vllm_builder(ctx, b, name)
        return minimax_pairs(vmd, lmd, vb, vc, indexer_lib_builder(ctx, b, name))

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        heads, tp = index_heads_tp(b)
        parts = ["TP 1" if tp == 1 else ("TP > index heads" if tp > heads else "TP > 1")]
        parts.append("+".join(p for p, x in (("decodes", vmd.decode), ("prefills", vmd.prefill))
                              if x is not None) or "empty")
        if vmd.slot_mapping.shape[0] > b.tokens:
            parts.append("padding rows")
        if b.n and (np.diff(b.qsl) == 0).any():
            parts.append("empty queries")
        return ", ".join(parts)

    return Item(name, "builder", v, l, pairs, block_sizes=(BLOCK,), max_spec=3,
                max_requests=256, path=path, kinds=OPTIMISTIC_SPEC_DUMMY["kinds"],
                ragged_spec=OPTIMISTIC_SPEC_DUMMY["ragged_spec"])


def minimax_m3_items() -> List[Item]:
    return [minimax_item(), minimax_item(AITER_PA), indexer_item(),
            indexer_item(INDEXER_MSA_ROCM)]
