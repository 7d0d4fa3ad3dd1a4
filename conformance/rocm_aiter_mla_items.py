"""ROCM_AITER_MLA: vLLM 0.33's own ``AiterMLAMetadataBuilder``
(vllm/v1/attention/backends/mla/rocm_aiter_mla.py) against libattn's builder of that name, on
the lane's random batches: every field of vLLM's metadata (the MLA base's and
AiterMLADecodeMetadata's, as ``decode_*``), the arguments of its aiter calls, and the builder's
answers.

What a CPU cannot run, replaced for the construction and the builds only:
- AMD's ``aiter`` package (no CPU or CUDA build) is a stand-in module whose
  ``get_mla_metadata_info_v1`` / ``get_mla_metadata_v1`` record their arguments (the schedule
  they write is aiter's GPU kernel's: libattn leaves it to the runtime) and whose ``dtypes`` are
  torch's; get_mla_metadata_v1's tensor arguments are compared with libattn's
  ``decode_qo_indptr`` / ``decode_paged_kv_indptr`` / ``decode_paged_kv_last_page_len``, its
  scalars with ``decode_scheduler_<argument>``;
- ``_expand_page_indices_kernel`` (a Triton kernel) runs unmodified in Triton's interpreter
  (the lane's TRITON_INTERPRET=1);
- vllm.platforms.rocm is imported while torch answers gfx942 (attn_variant_items), the
  architecture libattn follows (docs/backends/rocm.md);
- the MLA items' model, layer and DCP stand-ins (mla_items), DCP 1 (libattn refuses DCP).

Settings per builder profile: k from the batch, adaptive varlen verify (on a third of the
profiles with k > 0), an fp8 cache, full CUDA graphs, a non-causal batch on one in ten;
``build_for_cudagraph_capture`` in place of ``build`` on a third of the uniform full-graph
batches (mla_items.capture).
``decode.paged_kv_indices`` is vLLM's whole persistent buffer: its first paged_kv_indptr[-1]
entries are compared, and under full graphs also that the rest is -1 on both sides (without
full graphs the rest is what earlier builds left, on both sides).
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import types
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np

from .attn_variant_items import _rocm_arch_query
from .batches import VARIANT_KINDS, Batch
from .compare import MISSING, Pair, kv_dtype_name
from .item import Item, choice_rng
from .mla_items import (LAYER, MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, MLA_DIMS, NUM_HEADS,
                        NUM_SMS, _cache, _configs, zlib_crc)
from . import mla_items
from .sides import lib_common, vllm_common

NAME = "ROCM_AITER_MLA"
MODULE = "vllm.v1.attention.backends.mla.rocm_aiter_mla"
PROFILES = 16
#: get_mla_metadata_v1's positional parameters as vLLM passes them
V1_ARGS = ("qo_indptr", "kv_indptr", "kv_last_page_len", "num_heads_per_head_k", "num_heads_k",
           "is_causal", "work_meta_data", "work_info_set", "work_indptr", "reduce_indptr",
           "reduce_final_map", "reduce_partial_map")
#: its tensor arguments that are libattn metadata fields
V1_FIELDS = {"qo_indptr": "decode_qo_indptr", "kv_indptr": "decode_paged_kv_indptr",
             "kv_last_page_len": "decode_paged_kv_last_page_len"}
SCHEDULE = ("work_meta_data", "work_info_set", "work_indptr", "reduce_indptr",
            "reduce_final_map", "reduce_partial_map")
ROUTES = ("plain", "segmented", "cprr", "triton")
RECORDED: Dict[str, Dict[str, Any]] = {}
#: the builders cached a side (each holds max_num_seqs * max_model_len int32 page indices)
STORE, CAP = "aiter_mla_builders", 4


class AiterSettings(mla_items.Settings):
    fields = mla_items.Settings.fields + ("adaptive",)


def settings(b: Batch) -> AiterSettings:
    p = int(choice_rng(b, 40).integers(0, PROFILES))
    r = np.random.default_rng([zlib_crc(NAME), p])
    fp8 = bool(r.random() < 0.4)
    full = bool(r.random() < 0.5)
    non_causal = bool(r.random() < 0.1)
    adaptive = bool(b.spec and r.random() < 0.35)
    return AiterSettings(NAME, b.block_size, b.spec, False, 1, 0, 1, fp8, full, 0, non_causal,
                         90, None, False, 0, 0, adaptive)


def aiter_module(recorded: Dict[str, Dict[str, Any]] = RECORDED) -> Any:
    """The stand-in aiter module (this item's and ROCM_AITER_MLA_SPARSE's): its dtypes, and
    get_mla_metadata_info_v1 / get_mla_metadata_v1 recording their arguments in ``recorded``
    (the tensor arguments as they are at the call, cloned: views of the builder's buffers; the
    schedule buffers, which aiter writes, as they are)."""
    import torch
    import importlib.machinery
    m = types.ModuleType("aiter")
    m.__spec__ = importlib.machinery.ModuleSpec("aiter", None)
    m.dtypes = types.SimpleNamespace(fp8=torch.float8_e4m3fn, fp16=torch.float16,
                                     bf16=torch.bfloat16,
                                     d_dtypes={"fp8": torch.float8_e4m3fn,
                                               "fp16": torch.float16, "bf16": torch.bfloat16})

    def info_v1(*args: Any, **kwargs: Any) -> Any:
        recorded["get_mla_metadata_info_v1"] = dict(args=args, **kwargs)
        return tuple(((1,), torch.int32) for _ in range(6))

    def v1(*args: Any, **kwargs: Any) -> None:
        got = dict(zip(V1_ARGS, args))
        got.update(kwargs)
        recorded["get_mla_metadata_v1"] = {
            k: (v.clone() if isinstance(v, torch.Tensor) and k not in SCHEDULE else v)
            for k, v in got.items()}
    m.get_mla_metadata_info_v1 = info_v1
    m.get_mla_metadata_v1 = v1
    return m


_MOD: List[Any] = []


def module() -> Any:
    """vLLM's module, imported once (under the gfx942 answer); the lane runs Triton kernels in
    Triton's interpreter (vllm_env.enable_triton_interpreter)."""
    if not _MOD:
        with _rocm_arch_query():
            importlib.import_module("vllm.platforms.rocm")  # its functions import it lazily
            _MOD.append(importlib.import_module(MODULE))
    return _MOD[0]


def single_dcp_group() -> Any:
    """The stand-in of vLLM's get_dcp_group() without decode context parallelism."""
    return types.SimpleNamespace(world_size=1, rank_in_group=0)


@contextlib.contextmanager
def aiter_installed(aiter: Any) -> Iterator[None]:
    """``aiter`` as sys.modules["aiter"] for the duration, the previous entry restored after
    (patch.dict would drop the modules imported meanwhile)."""
    old = sys.modules.get("aiter")
    sys.modules["aiter"] = aiter
    try:
        yield
    finally:
        if old:
            sys.modules["aiter"] = old
        else:
            sys.modules.pop("aiter", None)


@contextlib.contextmanager
def patched(s: AiterSettings) -> Iterator[None]:
    """The stand-ins (see the module doc), for the duration only (unittest.mock restores)."""
    from unittest import mock
    mla = importlib.import_module("vllm.model_executor.layers.attention.mla_attention")
    prefill_pkg = importlib.import_module("vllm.v1.attention.backends.mla.prefill")
    dcp = single_dcp_group
    with contextlib.ExitStack() as stack:
        stack.enter_context(aiter_installed(aiter_module()))
        stack.enter_context(mock.patch.object(mla, "get_dcp_group", dcp))
        stack.enter_context(mock.patch.object(module(), "get_dcp_group", dcp))
        stack.enter_context(mock.patch.object(
            prefill_pkg, "get_mla_prefill_backend",
            lambda vllm_config=None: types.SimpleNamespace(get_name=lambda: "ROCM_AITER_FA")))
        mla.backend_supports_prefill_query_quantization.cache_clear()
        yield


def vllm_builder(ctx: Any, s: AiterSettings) -> Tuple[Any, Any]:
    def make() -> Tuple[Any, Any]:
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import MLAAttentionSpec
        vc = _configs(ctx).make(s)
        vc.compilation_config.static_forward_context[LAYER].prefill_backend.name = "ROCM_AITER_FA"
        if s.spec:
            vc.speculative_config.enable_adaptive_verification = s.adaptive
        spec = MLAAttentionSpec(block_size=s.block_size, num_kv_heads=1, head_size=576,
                                dtype=torch.float8_e4m3fn if s.fp8 else torch.bfloat16,
                                cache_dtype_str="fp8" if s.fp8 else None)
        with set_current_vllm_config(vc), patched(s):
            return module().AiterMLAMetadataBuilder(spec, [LAYER], vc, torch.device("cpu")), vc
    return _cache(ctx, ("vllm",) + tuple(s), make, STORE, CAP)


def lib_builder(ctx: Any, s: AiterSettings, vc: Any) -> Any:
    def make() -> Any:
        libattn = ctx.libattn
        cg = int(libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name])
        kv = libattn.KvDtype
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS, num_speculative_tokens=s.spec,
            enable_adaptive_verification=int(s.adaptive),
            use_v2_model_runner=int(bool(vc.use_v2_model_runner)), cudagraph_mode=cg,
            max_cudagraph_capture_size=mla_items.MAX_CAPTURE if s.full else 0,
            cache_dtype=kv.FP8_E4M3 if s.fp8 else kv.AUTO, model_dtype=kv.BFLOAT16,
            num_sms=NUM_SMS, mla_kv_lora_rank=MLA_DIMS["kv_lora_rank"],
            mla_qk_rope_head_dim=MLA_DIMS["qk_rope_head_dim"],
            mla_qk_nope_head_dim=MLA_DIMS["qk_nope_head_dim"],
            mla_v_head_dim=MLA_DIMS["v_head_dim"])
        spec = libattn.KvCacheSpec(s.block_size, 1, 576, kind=libattn.KvCacheKind.MLA,
                                   dtype=kv.FP8_E4M3 if s.fp8 else kv.BFLOAT16)
        return ctx.lib.builder(NAME, spec, cfg)
    return _cache(ctx, ("lib",) + tuple(s), make, STORE, CAP)


def _inputs(s: AiterSettings) -> Dict[str, Any]:
    return {"causal": False} if s.non_causal else {}


def _field_pairs(ctx: Any, v: Any, vc: Any):
    """rocm_aiter_mla's own comparisons of vLLM fields (mla_pairs' field_pairs hook)."""

    def own(name: str, value: Any, lib: Dict[str, Any]) -> Any:
        if name in SCHEDULE:  # aiter's schedule buffers: the runtime's in libattn
            return []
        lname = name.replace(".", "_")
        got = lib.get(lname, MISSING)
        if name == "decode.dcp_route":
            return [(name, ROUTES.index(value.value), got)]
        if name != "decode.paged_kv_indices" or value is None:
            return None
        total = int(v.decode.paged_kv_indptr[-1])
        g = None if got is MISSING or got is None else np.asarray(got)
        out = [(name + " [:paged_kv_indptr[-1]]", value[:total].numpy(),
                None if g is None else g[:total]),
               (name + " (length)", int(value.shape[0]), None if g is None else int(g.shape[0]))]
        if vc.compilation_config.cudagraph_mode.has_full_cudagraphs():
            out.append((name + " [paged_kv_indptr[-1]:] all -1", bool((value[total:] == -1).all()),
                        None if g is None else bool((g[total:] == -1).all())))
        return out
    return own


def _v1_pairs(ctx: Any):
    """get_mla_metadata_v1's arguments against libattn's fields (mla_pairs' recorded_pairs)."""
    import torch

    def pairs(lib: Dict[str, Any], seen: set) -> List[Pair]:
        out: List[Pair] = []
        for arg, value in RECORDED.get("get_mla_metadata_v1", {}).items():
            if arg in SCHEDULE:
                continue
            lname = V1_FIELDS.get(arg, f"decode_scheduler_{arg}")
            seen.add(lname)
            got = lib.get(lname, MISSING)
            if isinstance(value, torch.dtype):
                value = kv_dtype_name(value)
                got = ctx.libattn.KvDtype(int(got)).name if isinstance(got, int) else got
            out.append((f"get_mla_metadata_v1({arg}=) ~ {lname}", value, got))
        return out
    return pairs


def pairs(ctx: Any, s: AiterSettings, b: Batch, v: Any, md: Any) -> List[Pair]:
    vb, vc = vllm_builder(ctx, s)
    lb = lib_builder(ctx, s, vc)
    return mla_items.mla_pairs(ctx, s, b, v, md, builders=(vb, vc, lb),
                               field_pairs=_field_pairs(ctx, v, vc),
                               recorded_pairs=_v1_pairs(ctx), patches=patched(s))


def rocm_aiter_mla_item() -> Item:
    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        s = settings(b)
        vb, vc = vllm_builder(ctx, s)
        cm = vllm_common(ctx, b, **_inputs(s))
        with set_current_vllm_config(vc), patched(s):
            RECORDED.clear()
            out = vb.build_for_cudagraph_capture(cm) if mla_items.capture(s, b) else \
                vb.build(0, cm)
            b._aiter_recorded = dict(RECORDED)
        return out

    def l(ctx: Any, b: Batch) -> Any:
        s = settings(b)
        vb, vc = vllm_builder(ctx, s)
        lb, cm = lib_builder(ctx, s, vc), lib_common(ctx, b, **_inputs(s))
        return lb.build_for_cudagraph_capture(cm) if mla_items.capture(s, b) else lb.build(cm)

    def p(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        RECORDED.clear()
        RECORDED.update(getattr(b, "_aiter_recorded", {}))
        return pairs(ctx, settings(b), b, vmd, lmd)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(b)
        d = vmd.decode
        parts = ["capture" if mla_items.capture(s, b) else "build",
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills"]
        if d is not None:
            parts.append(f"qo {d.max_qo_len}")
            parts.append("persistent" if d.has_persistent_metadata else "no schedule")
            if d.varlen_q_rows is not None:
                parts.append("varlen rows")
        for flag, text in ((s.fp8, "fp8"), (s.full, "full graphs"), (s.non_causal, "non-causal"),
                           (s.adaptive, "adaptive")):
            if flag:
                parts.append(text)
        return ", ".join(parts)

    return Item(NAME, "builder", v, l, p, block_sizes=(16, 32, 64), max_spec=3,
                max_requests=256, path=path, kinds=VARIANT_KINDS,
                notes=["not comparable: work_meta_data, work_indptr, work_info_set, "
                       "reduce_indptr, reduce_final_map, reduce_partial_map: aiter's "
                       "get_mla_metadata_v1 schedule (the runtime's; its arguments are "
                       "compared)"])


def rocm_aiter_mla_items() -> List[Item]:
    return [rocm_aiter_mla_item()]
