"""QWEN4_EXP_EXP_QSA_STATE: vLLM 0.33's QSAMetadataBuilder (models/qwen4_exp/common/qsa_cache.py,
backend QSAStateBackend) against libattn's backend of that name, on the lane's random batches:
every field of vLLM's QSAForwardMetadata (18) and the builder's answers.

Each batch picks one of the Qwen4-exp QSA layers' caches (``qsa_settings``): the ring of
QSAKeyStateCache (its own get_kv_cache_spec: CircularBufferSpec of capacity round_up(ratio + k,
ratio), which must divide the batch's block size), the compressed key cache of
QSACompressedKeyCache (MLAAttentionSpec(block_size, tokens_per_state = ratio)), or the plain
cache (an MLAAttentionSpec of tokens_per_state 1). Ratios 2, 4 and 8 where they divide the block
size. For the ring the batch's block table is replaced by one column of ring blocks (vLLM's
CircularBufferSpec: one block per request), some of them 0 (the null block) or -1; libattn gets
an ATTN_KV_CIRCULAR_BUFFER spec. On one batch in four 1..16 padding rows are counted as actual
tokens (``Batch.pad_tokens``: past query_start_loc[-1]).

vLLM's builder runs its Triton path (build_qsa_metadata_triton, what vLLM runs on a CUDA
machine: HAS_TRITON is True) with _build_qsa_metadata_kernel executed by Triton's CPU
interpreter (TRITON_INTERPRET=1, vllm_env.enable_triton_interpreter) on one batch in
``TRITON_EVERY`` of at most TRITON_TOKENS tokens and on every batch without requests (where it
asserts num_reqs > 0); the kernel's PDL launch query (_metadata_launch_pdl:
current_platform.is_arch_support_pdl) answers False on this CPU platform, as on a GPU without
PDL. On the other batches (the interpreter takes ~0.8 s for 4,000 tokens) the builder runs
vLLM's torch fallback, _build_qsa_metadata_torch (what vLLM runs without Triton), put in place
of the module's ``build_qsa_metadata``, with its one Triton kernel,
compute_token_to_req_indices, replaced by ``token_to_req_numpy_padded`` (as the Step5 items do).
Both paths give the same fields; the torch path differs only where no field shows it (it fills
the whole slot-mapping buffer with -1 before copying, and does not assert num_reqs > 0). The
path is printed per batch ("triton" or "torch fallback").
"""
from __future__ import annotations

import importlib
import types
from typing import Any, List

import numpy as np

from .batches import VARIANT_KINDS, Batch
from .builder_items import MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS
from .compare import Pair, builder_answer_pairs, dataclass_pairs
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

NAME = "QWEN4_EXP_EXP_QSA_STATE"
MODULE = "vllm.models.qwen4_exp.common.qsa_cache"
LAYER = "model.layers.0.self_attn.qsa_cache"
BLOCK_SIZES = (16, 64)
CACHES = ("ring", "compressed", "plain")
HEAD_SIZE = 128
TRITON_EVERY = 4
TRITON_TOKENS = 4096


def qsa_settings(b: Batch) -> Any:
    """The batch's cache (ring, compressed, plain) and compress ratio; the ring's capacity is
    QSAKeyStateCache's: round_up(ratio + k, ratio), which must divide the block size."""
    cache = CACHES[int(choice_rng(b, 110).integers(0, 3))]
    ratios = [r for r in (2, 4, 8) if b.block_size % r == 0]
    ratio = ratios[int(choice_rng(b, 111).integers(0, len(ratios)))]
    if cache == "ring":
        ratios = [r for r in ratios
                  if b.block_size % (-(-(r + b.spec) // r) * r) == 0]
        ratio = ratios[int(choice_rng(b, 111).integers(0, len(ratios)))]
    capacity = -(-(ratio + b.spec) // ratio) * ratio
    return types.SimpleNamespace(cache=cache, ratio=ratio if cache != "plain" else 1,
                                 capacity=capacity)


def triton_batch(b: Batch) -> bool:
    return b.n == 0 or (b.tokens <= TRITON_TOKENS and
                        int(choice_rng(b, 116).integers(0, TRITON_EVERY)) == 0)


def _prepare(b: Batch) -> None:
    """Once per batch, before either side reads it: the ring's one-column table (each request's
    first block, a quarter of them 0 or -1); padding counted as actual tokens on one in four."""
    if getattr(b, "_qsa_prepared", False):
        return
    b._qsa_prepared = True
    st = qsa_settings(b)
    if st.cache == "ring":
        col = b.bt[:, :1].copy() if b.bt.shape[1] else np.zeros((b.n, 1), np.int32)
        pick = choice_rng(b, 112).random(b.n) < 0.25
        col[pick, 0] = np.where(choice_rng(b, 113).random(b.n) < 0.5, 0, -1)[pick]
        b.bt = np.ascontiguousarray(col, dtype=np.int32)
    if int(choice_rng(b, 114).integers(0, 4)) == 0:
        b.pad_tokens = int(choice_rng(b, 115).integers(1, 17))


def builders(ctx: Any, b: Batch) -> Any:
    cache = ctx.__dict__.setdefault("qsa_state_builders", {})
    st = qsa_settings(b)
    key = (b.block_size, b.spec, st.cache, st.ratio, st.capacity)
    if key in cache:
        return cache[key]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import CircularBufferSpec, MLAAttentionSpec
    mod = importlib.import_module(MODULE)
    libattn = ctx.libattn
    vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("qsa_state",) + key,
                         MAX_MODEL_LEN)
    if st.cache == "ring":  # QSAKeyStateCache.get_kv_cache_spec
        spec = CircularBufferSpec(block_size=st.capacity, num_kv_heads=1, head_size=HEAD_SIZE,
                                  head_size_v=0, dtype=torch.bfloat16)
        lspec = libattn.KvCacheSpec(st.capacity, 1, HEAD_SIZE,
                                    kind=libattn.KvCacheKind.CIRCULAR_BUFFER,
                                    dtype=libattn.KvDtype.BFLOAT16)
    else:  # QSACompressedKeyCache.get_kv_cache_spec
        spec = MLAAttentionSpec(block_size=b.block_size, num_kv_heads=1, head_size=HEAD_SIZE,
                                dtype=torch.bfloat16, tokens_per_state=st.ratio)
        lspec = libattn.KvCacheSpec(b.block_size, 1, HEAD_SIZE, kind=libattn.KvCacheKind.MLA,
                                    dtype=libattn.KvDtype.BFLOAT16, tokens_per_state=st.ratio)
    backend = mod.QSAStateBackend
    assert backend.get_name() == NAME, backend.get_name()
    with set_current_vllm_config(vc):
        vb = backend.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"))
    cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                num_speculative_tokens=b.spec)
    cache[key] = (vb, vc, ctx.lib.builder(NAME, lspec, cfg))
    return cache[key]


def qsa_state_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        mod = importlib.import_module(MODULE)
        assert mod.build_qsa_metadata is mod.build_qsa_metadata_triton, \
            "vLLM took the torch fallback: Triton is not importable"
        from unittest import mock
        from .step5_items import token_to_req_numpy_padded
        from .layer_variant_items import captures
        vb, vc, _ = builders(ctx, b)
        _prepare(b)
        cm = vllm_common(ctx, b)
        build = (lambda: vb.build_for_cudagraph_capture(cm)) if captures(vb, vc, b) else \
            (lambda: vb.build(0, cm))
        if triton_batch(b):
            with set_current_vllm_config(vc):
                return build()
        cm._token_to_req_indices_cache = token_to_req_numpy_padded(b)
        with set_current_vllm_config(vc), \
                mock.patch.object(mod, "build_qsa_metadata", mod._build_qsa_metadata_torch):
            return build()

    def l(ctx: Any, b: Batch) -> Any:
        from .layer_variant_items import captures
        vb, vc, lb = builders(ctx, b)
        _prepare(b)
        common = lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if captures(vb, vc, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        vb, vc, lb = builders(ctx, b)
        return dataclass_pairs(vmd, lmd, "absent") + builder_answer_pairs(vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        st = qsa_settings(b)
        parts = ["triton" if triton_batch(b) else "torch fallback",
                 st.cache if st.cache == "plain" else f"{st.cache} ratio {st.ratio}"]
        if st.cache == "ring":
            parts[1] += f" capacity {st.capacity}"
        if b.pad_tokens:
            parts.append("padding counted as actual")
        if vmd.num_decodes and vmd.num_prefills:
            parts.append("decodes and prefills")
        return ", ".join(parts)

    return Item(NAME, "builder", v, l, pairs, block_sizes=BLOCK_SIZES, max_spec=3,
                max_requests=256, token_budget=8192, path=path, kinds=VARIANT_KINDS)


def qsa_state_items() -> List[Item]:
    return [qsa_state_item()]
