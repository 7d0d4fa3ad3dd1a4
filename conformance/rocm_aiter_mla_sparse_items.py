"""ROCM_AITER_MLA_SPARSE: vLLM 0.33's own ``ROCMAiterMLASparseMetadataBuilder``
(vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py, a SparseMLACommonMetadataBuilder)
against libattn's builder of that name, on the lane's random batches: every field of vLLM's
metadata (the sparse base's, the prefill part with its chunked context as the sparse items
compare them, and ROCMAiterMLASparseMetadata's own), the arguments of its aiter calls, whether
it relaunched aiter's schedule (its metadata_key cache: the builders of a setting see the same
sequence of batches on both sides), and the builder's answers.

What a CPU cannot run, replaced for the construction and the builds only:
- AMD's ``aiter`` package (no CPU or CUDA build) is a stand-in module whose
  ``get_mla_metadata_info_v1`` / ``get_mla_metadata_v1`` record their arguments (the schedule
  they write is aiter's GPU kernel's: libattn leaves it to the runtime) and whose ``dtypes`` are
  torch's; the work_* / reduce_* buffers are compared by whether vLLM gives them
  (``has_persistent_metadata``), get_mla_metadata_v1's tensor arguments with ``qo_indptr`` /
  ``paged_kv_indptr`` / ``paged_kv_last_page_len``, its scalars with ``scheduler_<argument>``,
  and whether it ran with ``scheduler_launched``;
- ``generate_sparse_seqlen_kernel`` (a Triton kernel) runs unmodified in Triton's interpreter
  (the lane's TRITON_INTERPRET=1) on every ``SEQLEN_EVERY``-th batch (about 1 s a batch there:
  ~60 programs, each a few ms of interpreted tensor ops); on the others vLLM's
  ``generate_sparse_seqlen_triton`` is a numpy restatement of the kernel (``_sparse_seqlen_numpy``),
  which the interpreted batches check against libattn as well; the sparse base's
  req_id_per_token kernel every ``TRITON_EVERY``-th batch (sparse_mla_items; the builder's own
  np.repeat then overwrites it);
- the ROCm platform: vllm.platforms.rocm imported while torch answers gfx942
  (attn_variant_items), ``current_platform`` in the builder's module answering
  ``num_compute_units()`` with the profile's CU count (config->num_sms on libattn's side), in the
  sparse base's module ``is_cuda()`` False (context chunks not aligned to blocks) and no SM 10.0
  family; ``torch.cuda.current_stream().synchronize()`` (after aiter's launch) does nothing;
- the model's layers (sparse_mla_items' DeepSeek-V3.2-shaped model and stand-in layer): each
  with an impl whose ``sinks`` is a tensor on a sink layer and ``use_aiter_sparse_mla`` False
  (gfx950 only), the prefill backend ROCM_AITER_FA, None on a sink layer; DCP 1 (refused).

Eight builder profiles (``PROFILES``), kept for the whole run so that both sides' builders see
the same sequence of batches: query heads and index_topk (16/2048, 64/256, 20/256: aiter pads
20 to 32, 16/256), an fp8 cache, full CUDA graphs (``build_for_cudagraph_capture`` on a third
of the uniform ones), sinks on no layer, the first layer (no prefill part) or the second, the
CU count (8, capping max_split_per_batch, or 304). A fifth of the batches are built twice on
both sides (``twice``: the second build finds vLLM's metadata_key unchanged). Batches: block
sizes 16, 32, 64, up to 256 requests and about 8,192 scheduled tokens (the builders' persistent
paged_kv_indices is max_num_batched_tokens x top-k).
"""
from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np

from .attn_variant_items import _rocm_arch_query
from .batches import Batch
from .compare import MISSING, Pair, kv_dtype_name
from .item import OPTIMISTIC_SPEC_DUMMY, Item, choice_rng
from .lru import cached
from .mla_items import LAYER, MLA_DIMS, MAX_CAPTURE, _PrefillBackendStandIn
# get_mla_metadata_v1's positional parameters and its schedule buffers, as ROCM_AITER_MLA's
from .rocm_aiter_mla_items import (SCHEDULE, V1_ARGS, aiter_installed, aiter_module,
                                    single_dcp_group)
from . import sparse_mla_items as sparse
from .sides import lib_common, vllm_common

NAME = "ROCM_AITER_MLA_SPARSE"
MODULE = "vllm.v1.attention.backends.mla.rocm_aiter_mla_sparse"
LAYER2 = "model.layers.1.self_attn.attn"
MAX_TOKENS = 16384
TOKEN_BUDGET = 8192
#: the builder profiles: (query heads, index_topk), an fp8 cache, full CUDA graphs, sinks (0: none,
#: 1: on the first layer, 2: on the second), the compute units
PROFILES = (((16, 2048), False, True, 0, 304), ((64, 256), True, False, 0, 8),
            ((20, 256), False, True, 1, 304), ((16, 256), True, True, 2, 8),
            ((16, 2048), True, False, 1, 8), ((64, 256), False, False, 2, 304),
            ((20, 256), True, True, 0, 304), ((16, 256), False, False, 0, 8))
#: the builder pairs kept: every profile's (both sides keep state across builds; each side's
#: paged_kv_indices is MAX_TOKENS x top-k int32, 128 MiB at 2048)
CAP = len(PROFILES)
#: generate_sparse_seqlen_kernel in Triton's interpreter on every SEQLEN_EVERY-th batch (~1 s a
#: batch there), its numpy restatement on the others
SEQLEN_EVERY = 10
#: get_mla_metadata_v1's tensor arguments that are libattn metadata fields
V1_FIELDS = {"qo_indptr": "qo_indptr", "kv_indptr": "paged_kv_indptr",
             "kv_last_page_len": "paged_kv_last_page_len"}
SCHEDULER_FIELDS = ("scheduler_launched", "scheduler_num_heads_per_head_k",
                    "scheduler_num_heads_k", "scheduler_is_causal", "scheduler_page_size",
                    "scheduler_kv_granularity", "scheduler_max_seqlen_qo",
                    "scheduler_uni_seqlen_qo", "scheduler_fast_mode",
                    "scheduler_max_split_per_batch", "scheduler_dtype_q", "scheduler_dtype_kv")
RECORDED: Dict[str, Dict[str, Any]] = {}


class RocmSettings(sparse.Settings):
    fields = sparse.Settings.fields + ("sinks", "cus")


def settings(b: Batch) -> RocmSettings:
    (heads, topk), fp8, full, sinks, cus = PROFILES[int(choice_rng(b, 40).integers(
        0, len(PROFILES)))]
    return RocmSettings(NAME, b.block_size, b.spec, False, 1, 0, 1, fp8, full, heads, topk,
                        sinks, cus)


def twice(b: Batch) -> bool:
    """On a fifth of the batches both sides build the batch once before the compared build (a
    step whose lengths did not change): vLLM's metadata_key is then unchanged and
    get_mla_metadata_v1 is not relaunched."""
    return choice_rng(b, 45).random() < 0.2


def seqlen_kernel(b: Batch) -> bool:
    """Whether vLLM's generate_sparse_seqlen_kernel runs (interpreted) on this batch."""
    return int(choice_rng(b, 44).integers(0, SEQLEN_EVERY)) == 0


def _sparse_seqlen_numpy(seq_lens: Any, cu_query_lens: Any, topk_token: int, num_tokens: int,
                         max_query_len: int) -> Any:
    """generate_sparse_seqlen_triton restated: for token t of request r (the grid's
    cdiv(max_query_len, 64) blocks of 64 reach its first tokens) min(seq_lens[r] - query_len +
    (t - start) + 1, topk_token); 0 where seq_lens[r] is 0 and where no block reaches."""
    import torch
    qsl = cu_query_lens.numpy().astype(np.int64)
    seq = seq_lens.numpy().astype(np.int64)
    out = np.zeros(num_tokens, np.int32)
    reach = -(-int(max_query_len) // 64) * 64
    for r in range(qsl.shape[0] - 1):
        start, qlen = int(qsl[r]), int(qsl[r + 1] - qsl[r])
        n = min(qlen, reach)
        if seq[r] == 0 or n <= 0:
            continue
        out[start:start + n] = np.minimum(seq[r] - qlen + np.arange(n) + 1, topk_token)
    return torch.from_numpy(out)


def _aiter_module() -> Any:
    return aiter_module(RECORDED)


_MOD: List[Any] = []


def module() -> Any:
    """vLLM's module, imported once (under the gfx942 answer)."""
    if not _MOD:
        with _rocm_arch_query():
            importlib.import_module("vllm.platforms.rocm")  # its functions import it lazily
            _MOD.append(importlib.import_module(MODULE))
    return _MOD[0]


class _RocmPlatform:
    """current_platform as the ROCm builders ask it: not CUDA, no SM 10.0 family, its CUs."""

    def __init__(self, real: Any, cus: int) -> None:
        self._real, self._cus = real, cus

    def is_cuda(self) -> bool:
        return False

    def is_device_capability_family(self, *a: Any, **k: Any) -> bool:
        return False

    def num_compute_units(self, *a: Any, **k: Any) -> int:
        return self._cus

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _Stream:
    def synchronize(self) -> None:
        pass


@contextlib.contextmanager
def patched(s: RocmSettings) -> Iterator[None]:
    """The stand-ins (see the module doc), for the duration only (unittest.mock restores)."""
    from unittest import mock
    import torch
    sma = importlib.import_module("vllm.model_executor.layers.attention.sparse_mla_attention")
    mod = module()
    dcp = single_dcp_group
    with contextlib.ExitStack() as stack:
        stack.enter_context(aiter_installed(_aiter_module()))
        stack.enter_context(mock.patch.object(sma, "get_dcp_group", dcp))
        stack.enter_context(mock.patch.object(sma, "PIN_MEMORY", False))
        for m in (sma, mod):
            real = m.current_platform
            real = real._real if isinstance(real, _RocmPlatform) else real
            stack.enter_context(mock.patch.object(m, "current_platform",
                                                  _RocmPlatform(real, s.cus)))
        stack.enter_context(mock.patch.object(mod, "np_to_pinned_tensor", torch.from_numpy))
        stack.enter_context(mock.patch.object(torch.cuda, "current_stream",
                                              lambda *a, **k: _Stream()))
        yield


def _layer(s: RocmSettings, sinks: bool) -> Any:
    """The model's MLAAttention layer as the builder reads it: the MLA dimensions, the impl's
    sinks and use_aiter_sparse_mla, the prefill backend (None on a sink layer: the impl's
    supports_dense_mha_prefill is False)."""
    import torch
    impl = types.SimpleNamespace(sinks=torch.zeros(s.heads) if sinks else None,
                                 use_aiter_sparse_mla=False)
    backend = None if sinks else _PrefillBackendStandIn("ROCM_AITER_FA")
    return types.SimpleNamespace(non_causal_multi_token_decode=False, prefill_backend=backend,
                                 impl=impl, **MLA_DIMS)


def builders(ctx: Any, s: RocmSettings) -> Tuple[Any, Any, Any]:
    """vLLM's builder, its VllmConfig and libattn's builder of a setting, cached together (both
    keep state across builds: the shrink tails, the relaunch key)."""
    return cached(ctx, "rocm_aiter_mla_sparse_builders", tuple(s), lambda: _make(ctx, s), CAP)


def _make(ctx: Any, s: RocmSettings) -> Tuple[Any, Any, Any]:
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import MLAAttentionSpec
    vc = sparse._vllm_config(ctx, s)
    vc.cache_config.cache_dtype = "fp8" if s.fp8 else "auto"
    vc.scheduler_config.max_num_batched_tokens = MAX_TOKENS
    names = [LAYER] if s.sinks == 0 else [LAYER, LAYER2]
    sfc = vc.compilation_config.static_forward_context
    sfc.clear()
    for i, n in enumerate(names):
        sfc[n] = _layer(s, s.sinks == i + 1)
    spec = MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1, head_size=576,
                            dtype=torch.float8_e4m3fn if s.fp8 else torch.bfloat16,
                            cache_dtype_str="fp8" if s.fp8 else None)
    with set_current_vllm_config(vc), patched(s):
        vb = module().ROCMAiterMLASparseMetadataBuilder(spec, names, vc, torch.device("cpu"))
    libattn = ctx.libattn
    kv = libattn.KvDtype
    cg = int(libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name])
    layers = [] if s.sinks == 0 else [libattn.PerLayerParams(has_sinks=s.sinks == i + 1)
                                      for i in range(2)]
    cfg = libattn.BuilderConfig(
        sparse.MAX_SEQS, MAX_TOKENS, sparse.MAX_MODEL_LEN, s.heads,
        num_speculative_tokens=s.spec, use_v2_model_runner=int(bool(vc.use_v2_model_runner)),
        cudagraph_mode=cg, max_cudagraph_capture_size=MAX_CAPTURE if s.full else 0,
        cache_dtype=kv.FP8_E4M3 if s.fp8 else kv.AUTO, model_dtype=kv.BFLOAT16, num_sms=s.cus,
        mla_kv_lora_rank=MLA_DIMS["kv_lora_rank"],
        mla_qk_rope_head_dim=MLA_DIMS["qk_rope_head_dim"],
        mla_qk_nope_head_dim=MLA_DIMS["qk_nope_head_dim"],
        mla_v_head_dim=MLA_DIMS["v_head_dim"], layers=layers)
    lspec = libattn.KvCacheSpec(s.block_size, 1, 576, kind=libattn.KvCacheKind.MLA,
                                dtype=kv.FP8_E4M3 if s.fp8 else kv.BFLOAT16, index_topk=s.topk)
    return vb, vc, ctx.lib.builder(NAME, lspec, cfg)


def _own(name: str, value: Any, lib: Dict[str, Any], seen: set) -> Any:
    """aiter's schedule buffers (the runtime's in libattn): given or None, against
    has_persistent_metadata; the other fields compare as the sparse items' do."""
    if name not in SCHEDULE:
        return None
    seen.add("has_persistent_metadata")
    return [(f"{name} is not None ~ has_persistent_metadata", value is not None,
             bool(lib.get("has_persistent_metadata", MISSING)))]


def _v1_pairs(ctx: Any) -> Any:
    """Whether get_mla_metadata_v1 ran, and its arguments against libattn's fields."""
    import torch

    def pairs(lib: Dict[str, Any], seen: set) -> List[Pair]:
        seen.update(SCHEDULER_FIELDS)
        rec = RECORDED.get("get_mla_metadata_v1")
        got = lib.get("scheduler_launched", MISSING)
        out: List[Pair] = [("get_mla_metadata_v1 ran ~ scheduler_launched", rec is not None,
                            bool(got) if got is not MISSING else got)]
        for arg, value in (rec or {}).items():
            if arg in SCHEDULE:
                continue
            lname = V1_FIELDS.get(arg, f"scheduler_{arg}")
            got = lib.get(lname, MISSING)
            if isinstance(value, torch.dtype):
                value = kv_dtype_name(value)
                got = ctx.libattn.KvDtype(int(got)).name if isinstance(got, int) else got
            elif isinstance(value, torch.Tensor):
                value = value.numpy()
            elif isinstance(value, bool) and isinstance(got, int):
                got = bool(got)
            out.append((f"get_mla_metadata_v1({arg}=) ~ {lname}", value, got))
        return out
    return pairs


def rocm_aiter_mla_sparse_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        s = settings(b)
        vb, vc, _ = builders(ctx, s)
        cm = vllm_common(ctx, b)
        if int(choice_rng(b, 42).integers(0, sparse.TRITON_EVERY)) != 0:
            cm._token_to_req_indices_cache = sparse.token_to_req_numpy(b)
        with contextlib.ExitStack() as stack:
            stack.enter_context(set_current_vllm_config(vc))
            stack.enter_context(patched(s))
            if not seqlen_kernel(b):
                from unittest import mock
                stack.enter_context(mock.patch.object(module(), "generate_sparse_seqlen_triton",
                                                      _sparse_seqlen_numpy))
            if twice(b):
                vb.build(0, cm)
            RECORDED.clear()
            out = vb.build_for_cudagraph_capture(cm) if sparse.capture(s, b) else vb.build(0, cm)
            b._aiter_recorded = dict(RECORDED)
        return out

    def l(ctx: Any, b: Batch) -> Any:
        s = settings(b)
        _, _, lb = builders(ctx, s)
        cm = lib_common(ctx, b)
        if twice(b):
            lb.build(cm)
        return lb.build_for_cudagraph_capture(cm) if sparse.capture(s, b) else lb.build(cm)

    def p(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        s = settings(b)
        RECORDED.clear()
        RECORDED.update(getattr(b, "_aiter_recorded", {}))
        return sparse.sparse_pairs(ctx, s, b, vmd, lmd, builders=builders(ctx, s),
                                   field_pairs=_own, extra=_v1_pairs(ctx), patches=patched(s))

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(b)
        parts = ["capture" if sparse.capture(s, b) else "build",
                 "Triton seqlen kernel" if seqlen_kernel(b) else "seqlen restated",
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills"]
        if vmd.prefill is not None and vmd.prefill.use_dense_mha:
            parts.append("dense MHA (decodes only)")
        if vmd.prefill is not None and vmd.prefill.chunked_context is not None:
            parts.append("context")
        if vmd.work_meta_data is None:
            parts.append("no schedule")
        else:
            parts.append("schedule launched" if "get_mla_metadata_v1" in
                         getattr(b, "_aiter_recorded", {}) else "schedule reused")
        for flag, text in ((s.fp8, "fp8"), (s.sinks == 1, "sinks (first layer)"),
                           (s.sinks == 2, "sinks (second layer)")):
            if flag:
                parts.append(text)
        return ", ".join(parts)

    return Item(NAME, "builder", v, l, p, block_sizes=(16, 32, 64), max_spec=3,
                max_requests=256, token_budget=TOKEN_BUDGET, path=path, **OPTIMISTIC_SPEC_DUMMY,
                notes=["not comparable: work_meta_data, work_indptr, work_info_set, "
                       "reduce_indptr, reduce_final_map, reduce_partial_map: aiter's "
                       "get_mla_metadata_v1 schedule (the runtime's; whether vLLM gives them, "
                       "whether it relaunched the call and its arguments are compared)"]
                + [f"not comparable: {k}: {why}" for k, why in sparse.NOT_COMPARABLE.items()
                   if k.startswith("prefill.")])


def rocm_aiter_mla_sparse_items() -> List[Item]:
    return [rocm_aiter_mla_sparse_item()]
