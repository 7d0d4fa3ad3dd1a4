"""The compressed DeepSeek V4 / V4.1 indexers: vLLM 0.33's DeepseekV32IndexerMetadataBuilder on a
compressed indexer cache (``MLAAttentionSpec.tokens_per_state`` 4, DeepSeek V4 / V4.1's C4
indexer layers) under DEEPSEEK_V4_INDEXER (DeepseekV4IndexerBackend, kernel block 256),
DEEPSEEK_V41_INDEXER (DeepseekV41IndexerBackend: 64 on SM90, 128 otherwise) and CPU_V4_INDEXER
(models/deepseek_v4/cpu/cpu_mla.py's DeepseekV4CPUIndexerBackend, whose builder plans one prefill
chunk a step), against libattn's builders of the same names: every field as
sparse_indexer_items compares it (the compressed slot_mapping, the decode part, each prefill
chunk in compressed rows) and the builder's answers. Each builder is the class its backend's
get_builder_cls() returns, made per batch with ``block_table_width`` the batch's width.

vLLM's side: the indexer item's DeepSeek-V3.2-shaped VllmConfig (speculative tokens k <= 3; DCP
1/2/4 with interleave 4, 8, 16 or, in one DCP profile in five, 2: both refuse it, vLLM's
NotImplementedError) and a real MLAAttentionSpec as DeepseekV4IndexerCache makes it (132 uint8
a token, cache_role INDEXER, tokens_per_state 4, the backend's kernel block). libattn takes an
ATTN_KV_MLA spec with tokens_per_state 4 and the same block.

Stand-ins, around the construction and the build only: sparse_indexer_items' ``patched`` (the
CUDA platform proxy at 9.0 or, for V4 in three profiles of ten and for V4.1 on its 128-token
block, 10.0; DeepGEMM; the DCP group; the SM count; DeepGEMM's schedule as a shape; the Triton
kernels' numpy restatements on most batches) and v4_sparse_mla_items' numpy restatement of
CompressedSlotMappingKernel (with the DCP positions) on the batches the Triton interpreter does
not run. CPU_V4_INDEXER keeps the real CPU platform (no CUDA, no DeepGEMM: native next_n 1 and 2,
no varlen kernel, the schedule the whole (num_sms + 1, 2) buffer, compared by shape).
Capture builds (issue 34): vLLM's runner's dummy batches (batches.dummy_batch) are among the
kinds, and build_for_cudagraph_capture (vLLM's base class's: build) runs on both sides where
layer_variant_items.captures says: the level vLLM's class answers under the stand-ins (ALWAYS
where the varlen decode kernel or the flattening is in use, else UNIFORM_BATCH), every dummy
batch it allows and a third of the others.
"""
from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any, List

import numpy as np

from .batches import Batch
from .compare import Pair
from .draft_update import Sides, with_draft_update
from .item import Item, choice_rng
from .layer_variant_items import VARIANT_KINDS, captures
from .mla_items import LAYER, NUM_SMS, optimistic_prefill_rows, zlib_crc
from .sides import lib_common, vllm_common
from .sparse_indexer_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, MODULE, TOKEN_BUDGET,
                                   Settings, _vllm_config, indexer_pairs, path_parts, patched,
                                   triton_batch)
from .v4_sparse_mla_items import compressed_slots_stand_in

RATIO = 4
PROFILES = 24

#: name -> (module of the backend class, backend class, block sizes)
BACKENDS = {
    "DEEPSEEK_V4_INDEXER": (MODULE, "DeepseekV4IndexerBackend", (256,)),
    "DEEPSEEK_V41_INDEXER": (MODULE, "DeepseekV41IndexerBackend", (64, 128)),
    "CPU_V4_INDEXER": ("vllm.models.deepseek_v4.cpu.cpu_mla", "DeepseekV4CPUIndexerBackend",
                       (256,)),
}


def settings(name: str, b: Batch) -> Settings:
    p = int(choice_rng(b, 43).integers(0, PROFILES))
    r = np.random.default_rng([zlib_crc(name), p])
    dcp = int(r.choice([1, 1, 1, 2, 4]))
    inter = int(r.choice([4, 8, 16, 16, 2])) if dcp > 1 else 1
    rank = int(r.integers(0, dcp))
    if name == "DEEPSEEK_V41_INDEXER":  # the block decides: 64 on SM90, 128 otherwise
        cap = 90 if b.block_size == 64 else 100
    else:
        cap = 100 if r.random() < 0.3 else 90
    return Settings(b.spec, dcp, rank, inter, int(b.bt.shape[1]), cap)


@contextlib.contextmanager
def build_patched(name: str, s: Settings, real_triton: bool) -> Any:
    """sparse_indexer_items' ``patched`` plus the compressed slot mapping's numpy restatement;
    for CPU_V4_INDEXER the real CPU platform and no DeepGEMM in the indexer module."""
    from unittest import mock
    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(s, real_triton))
        if not real_triton:
            stack.enter_context(compressed_slots_stand_in())
        if name == "CPU_V4_INDEXER":
            mod = importlib.import_module(MODULE)
            stack.enter_context(mock.patch.object(mod, "current_platform",
                                                  mod.current_platform._real))
            stack.enter_context(mock.patch.object(mod, "has_deep_gemm", lambda: False))
        yield


def builders(ctx: Any, name: str, b: Batch) -> Any:
    """Both builders for batch ``b`` (made per batch: block_table_width is the batch's)."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import MLAAttentionSpec, SparseCacheRole
    s = settings(name, b)
    vc = _vllm_config(ctx, s)
    module, backend, _ = BACKENDS[name]
    bcls = getattr(importlib.import_module(module), backend)
    assert bcls.get_name() == name, (bcls.get_name(), name)
    spec = MLAAttentionSpec(block_size=b.block_size, num_kv_heads=1, max_tp_shards=1,
                            head_size=132, dtype=torch.uint8, tokens_per_state=RATIO,
                            cache_role=SparseCacheRole.INDEXER)
    vb = vb_error = None
    try:
        with set_current_vllm_config(vc), build_patched(name, s, False):
            vb = bcls.get_builder_cls()(spec, [LAYER], vc, torch.device("cpu"),
                                        block_table_width=s.width)
    except NotImplementedError as e:  # the DCP interleave refusal
        vb_error = e
    libattn = ctx.libattn
    cfg = libattn.BuilderConfig(
        MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, 16, decode_context_parallel_size=s.dcp,
        dcp_rank=s.rank, cp_kv_cache_interleave_size=s.interleave, num_speculative_tokens=s.spec,
        device_capability=s.cap, num_sms=NUM_SMS, block_table_width=s.width)
    lspec = libattn.KvCacheSpec(b.block_size, 1, 132, kind=libattn.KvCacheKind.MLA,
                                dtype=libattn.KvDtype.FP8_E4M3, tokens_per_state=RATIO)
    return types.SimpleNamespace(s=s, vb=vb, vb_error=vb_error, vc=vc,
                                 make_lib=lambda: ctx.lib.builder(name, lspec, cfg))


def common_extra(ctx: Any, b: Batch, s: Settings) -> dict:
    """The runner's dcp_local_seq_lens (token lengths, the uncompressed interleave)."""
    if s.dcp <= 1:
        return {}
    t = ctx.vu.get_dcp_local_seq_lens(ctx.torch.from_numpy(b.seq), s.dcp, s.rank, s.interleave)
    return {"dcp_local_seq_lens": np.ascontiguousarray(t.numpy().astype(np.int32).reshape(-1))}


def compressed_item(name: str) -> Item:
    key = "v4_indexer_last_" + name

    def last(ctx: Any, b: Batch) -> Any:
        got = ctx.__dict__.get(key)
        return got[1] if got is not None and got[0] is b else builders(ctx, name, b)

    def capture(ctx: Any, b: Batch) -> bool:
        """build_for_cudagraph_capture where layer_variant_items.captures says (by vLLM's
        class's level: its dummy batches, a third of the others); none where vLLM refused to
        make the builder."""
        bs = last(ctx, b)
        return bs.vb is not None and captures(bs.vb, bs.vc, b,
                                              build_patched(name, bs.s, False))

    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        bs = builders(ctx, name, b)
        ctx.__dict__[key] = (b, bs, None)
        if bs.vb is None:
            raise bs.vb_error
        cm = vllm_common(ctx, b, **common_extra(ctx, b, bs.s))
        with set_current_vllm_config(bs.vc), build_patched(name, bs.s, triton_batch(b)):
            return bs.vb.build_for_cudagraph_capture(cm) if capture(ctx, b) else \
                bs.vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        bs = last(ctx, b)
        lb = bs.make_lib()
        ctx.__dict__[key] = (b, bs, lb)
        common = lib_common(ctx, b, **common_extra(ctx, b, bs.s))
        return lb.build_for_cudagraph_capture(common) if capture(ctx, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        got = ctx.__dict__.get(key)
        bs, lb = (got[1], got[2]) if got is not None and got[0] is b else (None, None)
        if bs is None:
            bs = builders(ctx, name, b)
        if lb is None:
            lb = bs.make_lib()
        return indexer_pairs(ctx, bs.s, b, vmd, lmd, bs.vb, bs.vc, lb,
                             patches=build_patched(name, bs.s, False))

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(name, b)
        parts = ["capture" if capture(ctx, b) else "build",
                 "triton" if triton_batch(b) else "numpy stand-ins", f"block {b.block_size}",
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills"]
        parts += path_parts(vmd)
        if s.dcp > 1:
            parts.append(f"dcp {s.dcp}/{s.interleave}")
        if vmd.num_prefills and optimistic_prefill_rows(b, vmd):
            parts.append("optimistic prefill bounds: chunk plan not compared")
        return ", ".join(parts)

    def sides(ctx: Any, b: Batch) -> Sides:
        got = ctx.__dict__.get(key)
        bs = got[1] if got is not None and got[0] is b else builders(ctx, name, b)
        lb = got[2] if got is not None and got[0] is b and got[2] is not None else \
            bs.make_lib()
        return Sides(b, bs.vb, bs.vc, lb, lambda: build_patched(name, bs.s, False))

    return with_draft_update(Item(
        name, "builder", v, l, pairs, block_sizes=BACKENDS[name][2], max_spec=3,
        max_requests=256, token_budget=TOKEN_BUDGET, path=path, kinds=VARIANT_KINDS,
        notes=["not comparable: decode.schedule_metadata: DeepGEMM's (CPU: the "
               "uninitialised buffer); shape compared"]), sides)


def sparse_indexer_v4_items() -> List[Item]:
    return [compressed_item(n) for n in BACKENDS]
