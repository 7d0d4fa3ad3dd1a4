"""FLASHINFER in the lane: FlashInfer's planner objects replaced by recorders, and vLLM's
FlashInferMetadata (its wrappers given by what vLLM planned them with) against libattn's fields.

vLLM 0.33's FlashInferMetadata keeps, for a FlashInfer-native prefill or decode, only the
FlashInfer wrapper object it planned (``FIPrefill.wrapper``, ``FIDecode.wrapper``). Those
wrappers are FlashInfer's code, not vLLM's: their constructor allocates CUDA buffers and their
``plan()`` JIT-compiles and runs CUDA code, so on a CPU they cannot even be constructed ("Found
no NVIDIA driver", flashinfer/decode.py). The lane replaces the FlashInfer classes vLLM's
module imported (``RECORDED``) by :class:`PlanRecorder`, which keeps the constructor's and
``plan()``'s arguments and computes nothing; every line of vLLM's own builder runs unchanged,
``fast_plan_decode`` and vLLM's ``BatchDCPPrefillWrapper`` (which plans two FlashInfer wrappers)
included. A wrapper is then compared by the arguments vLLM passed it: the metadata libattn
returns for the runtime's own ``plan()`` call (docs/backends/flashinfer.md, "Fields").
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .compare import MISSING, kv_dtype_name

Pair = Tuple[str, Any, Any]

#: FlashInfer's classes as vllm.v1.attention.backends.flashinfer imported them
RECORDED = ("BatchPrefillWithPagedKVCacheWrapper", "BatchDecodeWithPagedKVCacheWrapper",
            "BatchPrefillWithRaggedKVCacheWrapper", "BatchAttentionWithAttentionSinkWrapper")


class PlanRecorder:
    """Stands in for a FlashInfer wrapper: keeps the constructor's arguments and the last
    ``plan()``'s keyword arguments (tensors cloned: vLLM's persistent host buffers are
    rewritten by its next build). ``is_cuda_graph_enabled`` as FlashInfer's decode wrapper
    answers it (vLLM's fast_plan_decode reads it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.init_args, self.init_kwargs = args, kwargs
        self.plan_kwargs: Optional[Dict[str, Any]] = None
        self.is_cuda_graph_enabled = bool(kwargs.get("use_cuda_graph", False))

    def plan(self, *args: Any, **kwargs: Any) -> None:
        if args:
            raise TypeError(f"{type(self).__name__}.plan: the lane records keyword arguments "
                            f"only; vLLM passed {len(args)} positional")
        import torch
        self.plan_kwargs = {k: v.clone() if isinstance(v, torch.Tensor) else v
                            for k, v in kwargs.items()}
        self.fast_planned = False  # set by fast_decode_plan_recorder

    @property
    def kv_layout(self) -> Any:
        """The layout string (FlashInfer's second positional argument, or kv_layout=)."""
        return self.init_args[1] if len(self.init_args) > 1 else self.init_kwargs.get("kv_layout")


def fast_decode_plan_recorder(self: PlanRecorder, **kwargs: Any) -> None:
    """Replaces FlashInfer's fast_decode_plan as vLLM's module imported it: vLLM's
    fast_plan_decode calls it instead of plan() on a CUDA-graph decode wrapper's later plans
    (full graphs), and FlashInfer's function reads the device state its real plan() left, so on
    a CPU it cannot run. Recorded as plan() is, completed with what FlashInfer's fast path takes
    from elsewhere: ``seq_lens`` derived from ``indptr`` and ``last_page_len`` by FlashInfer's
    get_seq_lens (what vLLM computes and passes a plan() of the same rows) and ``o_data_type``
    cached from the wrapper's first plan()."""
    import vllm.v1.attention.backends.flashinfer as fi
    first = self.plan_kwargs or {}
    self.plan(**kwargs, seq_lens=fi.get_seq_lens(kwargs["indptr"], kwargs["last_page_len"],
                                                  kwargs["page_size"]),
              o_data_type=first.get("o_data_type"))
    self.fast_planned = True


#: one recorder class per replaced name (vLLM's isinstance checks then still tell them apart),
#: and FlashInfer's fast_decode_plan function. The sink wrapper's recorder derives from the
#: paged prefill wrapper's, as FlashInfer's BatchAttentionWithAttentionSinkWrapper derives from
#: BatchPrefillWithPagedKVCacheWrapper (vLLM's build asserts the prefill wrapper is one).
RECORDERS: Dict[str, Any] = {name: type(name, (PlanRecorder,), {}) for name in RECORDED[:3]}
RECORDERS[RECORDED[3]] = type(RECORDED[3], (RECORDERS["BatchPrefillWithPagedKVCacheWrapper"],),
                              {})
RECORDERS["fast_decode_plan"] = fast_decode_plan_recorder

#: vLLM's plan() keyword -> libattn field, per planned wrapper
PREFILL_PLAN = {
    "qo_indptr": "prefill_qo_indptr_cpu", "paged_kv_indptr": "prefill_paged_kv_indptr_cpu",
    "paged_kv_indices": "paged_kv_indices",
    "paged_kv_last_page_len": "prefill_paged_kv_last_page_len_cpu",
    "num_qo_heads": "num_qo_heads", "num_kv_heads": "num_kv_heads", "head_dim_qk": "head_dim",
    "page_size": "page_size", "causal": "causal", "sm_scale": "sm_scale",
    "window_left": "window_left", "logits_soft_cap": "logits_soft_cap",
    "q_data_type": "q_data_type_prefill", "kv_data_type": "kv_data_type",
    "o_data_type": "o_data_type", "fixed_split_size": "prefill_fixed_split_size",
    "disable_split_kv": "disable_split_kv",
}
DECODE_PLAN = {
    "indptr": "decode_paged_kv_indptr_cpu", "indices": "paged_kv_indices",
    "last_page_len": "decode_paged_kv_last_page_len_cpu", "seq_lens": "decode_seq_lens_cpu",
    "num_qo_heads": "decode_num_qo_heads", "num_kv_heads": "num_kv_heads",
    "head_dim": "head_dim", "page_size": "page_size", "sm_scale": "sm_scale",
    "window_left": "window_left", "logits_soft_cap": "logits_soft_cap",
    "q_data_type": "q_data_type_decode", "kv_data_type": "kv_data_type",
    "o_data_type": "o_data_type", "fixed_split_size": "decode_fixed_split_size",
    "disable_split_kv": "disable_split_kv", "q_len_per_req": "decode_q_len_per_req",
}
#: arguments vLLM always passes with the same value (its fast_plan_decode's own constants):
#: compared with that value, so a change in vLLM's call shows as a mismatch
DECODE_CONSTANTS = {"pos_encoding_mode": "NONE", "data_type": None, "rope_scale": None,
                    "rope_theta": None, "non_blocking": True, "block_tables": None}
#: the DCP prefill's context pass (vLLM's BatchDCPPrefillWrapper.plan into FlashInfer's paged
#: wrapper): the paged layout of the prefills' DCP-local context, all heads of the DCP group,
#: not causal; ``seq_lens`` and ``block_tables`` are checked separately
DCP_CONTEXT_PLAN = {k: v for k, v in PREFILL_PLAN.items()
                    if k not in ("num_qo_heads", "causal", "o_data_type")}
#: the DCP prefill's new-token pass (FlashInfer's ragged wrapper): causal over the prefills'
#: own tokens, this rank's heads
DCP_NEW_TOKENS_PLAN = {"qo_indptr": "prefill_qo_indptr_cpu", "kv_indptr": "prefill_qo_indptr_cpu",
                       "num_qo_heads": "num_qo_heads", "num_kv_heads": "num_kv_heads",
                       "head_dim_qk": "head_dim", "head_dim_vo": "head_dim",
                       "sm_scale": "sm_scale", "window_left": "window_left",
                       "logits_soft_cap": "logits_soft_cap", "q_data_type": "q_data_type_prefill"}

_DTYPE_FIELDS = ("q_data_type_prefill", "q_data_type_decode", "kv_data_type", "o_data_type")
_LAYOUTS = {0: "NHD", 1: "HND"}

#: vLLM's FlashInferMetadata fields this module compares (the generic loop skips them)
OWN_FIELDS = ("kv_cache_layout", "q_data_type_prefill", "q_data_type_decode", "prefill",
              "decode")


def _lib(lib: Dict[str, Any], field: str, seen: set, libattn: Any) -> Any:
    """libattn's field, read as vLLM's side is (dtypes by name); MISSING-safe via the
    caller's default."""
    seen.add(field)
    value = lib.get(field, MISSING)
    if value is MISSING or value is None:
        return value
    if field in _DTYPE_FIELDS:
        return libattn.KvDtype(int(value)).name
    if field == "kv_cache_layout":
        return _LAYOUTS.get(int(value), int(value))
    if field == "decode_kernel":
        return libattn.FlashinferDecodeKernel(int(value)).name
    return value


def _vllm_value(name: str, value: Any) -> Any:
    return kv_dtype_name(value) if name in _DTYPE_FIELDS or "data_type" in name else value


def _plan_pairs(label: str, rec: Any, mapping: Dict[str, str], lib: Dict[str, Any], seen: set,
                libattn: Any, constants: Optional[Dict[str, Any]] = None,
                expect: Optional[Dict[str, Any]] = None) -> List[Pair]:
    """A recorded plan() against libattn: each mapped argument with its libattn field, each
    constant with its value, each ``expect``ed argument with the value given; an argument
    in none of them is a mismatch (vLLM passes something libattn has no field for)."""
    if not isinstance(rec, PlanRecorder) or rec.plan_kwargs is None:
        return [(f"{label}.plan()", "not recorded", "expected a planned FlashInfer wrapper")]
    pairs: List[Pair] = []
    constants, expect = constants or {}, expect or {}
    for arg, value in rec.plan_kwargs.items():
        name = f"{label}.plan({arg}=)"
        if arg in mapping:
            field = mapping[arg]
            pairs.append((f"{name} ~ {field}", _vllm_value(mapping[arg], value),
                          _lib(lib, field, seen, libattn)))
        elif arg in expect:
            pairs.append((name, _vllm_value(arg, value), expect[arg]))
        elif arg in constants:
            pairs.append((f"{name} (vLLM's constant)", value, constants[arg]))
        else:
            pairs.append((f"{name} (plan argument libattn lacks)", value, MISSING))
    return pairs


def _get_seq_lens(indptr: Any, last: Any, page: int) -> Any:
    """FlashInfer's get_seq_lens of a paged layout (what vLLM passes plan() as seq_lens)."""
    if indptr is None or last is None:
        return None
    indptr, last = np.asarray(indptr), np.asarray(last)
    n = np.diff(indptr)
    return np.where(n > 0, (n - 1) * page + last, 0).astype(np.int32)


def _part_none(part: str, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """vLLM's ``prefill``/``decode`` is None: so is every libattn field of that part (the
    ``part_`` fields not compared already, e.g. as plan scalars)."""
    fields = [f for f in lib if f.startswith(part + "_") and f not in seen]
    seen.update(fields)
    return [(f"{f} ({part} is None in vLLM)", None, lib[f]) for f in fields]


def _other_class_none(cls: Any, part: str, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """vLLM chose the FlashInfer-native class for ``part``: libattn's fields of the TRT-LLM
    class (``part_<field>``) are None, except those the native plan() also fills
    (``decode_q_len_per_req``: fast_plan_decode's q_len_per_req)."""
    if cls is None:
        return []
    import dataclasses
    planned = set(PREFILL_PLAN.values()) | set(DECODE_PLAN.values())
    fields = [f"{part}_{f.name}" for f in dataclasses.fields(cls)
              if f"{part}_{f.name}" in lib and f"{part}_{f.name}" not in planned]
    seen.update(fields)
    return [(f"{f} (vLLM's {part} is not a {cls.__name__})", None, lib[f]) for f in fields]


def _native_fields_none(part: str, plan: Dict[str, str], lib: Dict[str, Any], seen: set
                        ) -> List[Pair]:
    """vLLM chose the TRT-LLM class for ``part``: libattn's fields of the native plan that
    belong to that part alone (``part_<field>``, not shared with the TRT-LLM class) are None."""
    import dataclasses
    import vllm.v1.attention.backends.flashinfer as fi
    trt = fi.TRTLLMPrefill if part == "prefill" else fi.FlashInferTrtllmAPIDecode
    shared = {f"{part}_{f.name}" for f in dataclasses.fields(trt)}
    fields = [f for f in plan.values() if f.startswith(part + "_") and f in lib
              and f not in shared and f not in seen and not f.endswith("fixed_split_size")]
    fields += [f for f in (f"{part}_use_cudagraph",) if f in lib and f not in seen]
    seen.update(fields)
    return [(f"{f} (vLLM's {part} is a {trt.__name__})", None, lib[f]) for f in fields]


def flashinfer_pairs(v: Any, vb: Any, lib: Dict[str, Any], seen: set, libattn: Any,
                     dcp_world: int, block_table: Any) -> List[Pair]:
    """FlashInferMetadata's layout, query dtypes, ``prefill`` and ``decode`` against libattn;
    the builder's plan scalars (vLLM's builder attributes) and, when vLLM computed the paged
    layout, its persistent buffers (``paged_kv_indptr``, ``paged_kv_last_page_len``, host and
    device) against libattn's fields of the same names. ``block_table`` is the batch's (both
    sides were given the same one)."""
    import vllm.v1.attention.backends.flashinfer as fi
    pairs: List[Pair] = [
        ("kv_cache_layout (FlashInfer's layout string)",
         fi.get_flashinfer_layout_string(v.kv_cache_layout),
         _lib(lib, "kv_cache_layout", seen, libattn)),
        ("q_data_type_prefill", kv_dtype_name(v.q_data_type_prefill),
         _lib(lib, "q_data_type_prefill", seen, libattn)),
        ("q_data_type_decode", kv_dtype_name(v.q_data_type_decode),
         _lib(lib, "q_data_type_decode", seen, libattn)),
    ]
    page = int(vb.page_size)
    native = isinstance(v.prefill, fi.FIPrefill) or isinstance(v.decode, fi.FIDecode)
    n = int(v.num_decodes) + int(v.num_prefills)
    # the paged layout of the whole batch, in vLLM's builder buffers (written only when some
    # part runs FlashInfer-native; libattn's fields are None otherwise)
    for field, buf, rows in (("paged_kv_indptr", vb.paged_kv_indptr, n + 1),
                             ("paged_kv_last_page_len", vb.paged_kv_last_page_len, n)):
        for side, attr in (("_cpu", "cpu"), ("", "gpu")):
            want = getattr(buf, attr)[:rows] if native else None
            # TRT-LLM prefill rewrites the device indptr's prefill rows (rebased) in place
            if (side == "" and field == "paged_kv_indptr" and native
                    and isinstance(v.prefill, fi.TRTLLMPrefill)):
                want = buf.cpu[:rows]
            pairs.append((f"{field}{side} (vLLM builder's {field}.{attr}[:{rows}])", want,
                          _lib(lib, field + side, seen, libattn)))
    if not native:
        pairs.append(("paged_kv_indices (no FlashInfer-native part)", None,
                      _lib(lib, "paged_kv_indices", seen, libattn)))
    # plan scalars: vLLM's builder attributes (what it passes every plan())
    for attr, field in (("num_qo_heads", "num_qo_heads"), ("num_kv_heads", "num_kv_heads"),
                        ("head_dim", "head_dim"), ("page_size", "page_size"),
                        ("sm_scale", "sm_scale"), ("window_left", "window_left"),
                        ("logits_soft_cap", "logits_soft_cap"),
                        ("kv_cache_dtype", "kv_data_type"),
                        ("prefill_fixed_split_size", "prefill_fixed_split_size"),
                        ("decode_fixed_split_size", "decode_fixed_split_size"),
                        ("disable_split_kv", "disable_split_kv")):
        pairs.append((f"{field} (vLLM builder's {attr})", _vllm_value(field, getattr(vb, attr)),
                      _lib(lib, field, seen, libattn)))
    pairs.append(("o_data_type (vLLM's model dtype)", kv_dtype_name(vb.model_config.dtype),
                  _lib(lib, "o_data_type", seen, libattn)))
    pairs += _prefill_pairs(fi, v, lib, seen, libattn, page, dcp_world, block_table)
    pairs += _decode_pairs(fi, v, lib, seen, libattn, dcp_world)
    return pairs


def _part_class(part: str, obj: Any, trt_cls: Any, plan: Dict[str, str],
                lib: Dict[str, Any], seen: set, libattn: Any) -> Tuple[List[Pair], bool]:
    """Which class vLLM's ``prefill``/``decode`` is, against libattn's ``<part>_use_trtllm``;
    for the TRT-LLM class its fields (``<part>_<field>``, enums by name) and the native
    plan's fields None; for the native class the TRT-LLM fields None. Returns the pairs and
    whether the part is the TRT-LLM class (else the caller compares the planned wrapper)."""
    from .compare import flatten_vllm
    trt = isinstance(obj, trt_cls)
    pairs: List[Pair] = [(f"{part}: {trt_cls.__name__} (else the FlashInfer-native class)", trt,
                          _lib(lib, f"{part}_use_trtllm", seen, libattn))]
    if not trt:
        return pairs + _other_class_none(trt_cls, part, lib, seen), False
    pairs += _native_fields_none(part, plan, lib, seen)
    import enum
    for name, value in flatten_vllm(obj, part):
        pairs.append((name, value.name if isinstance(value, enum.Enum) else value,
                      _lib(lib, name.replace(".", "_"), seen, libattn)))
    return pairs, True


def _prefill_pairs(fi: Any, v: Any, lib: Dict[str, Any], seen: set, libattn: Any, page: int,
                   dcp_world: int, block_table: Any) -> List[Pair]:
    p = v.prefill
    if p is None:
        return _part_none("prefill", lib, seen)
    pairs, trt = _part_class("prefill", p, fi.TRTLLMPrefill, PREFILL_PLAN, lib, seen, libattn)
    sink = _lib(lib, "prefill_sink_wrapper", seen, libattn)
    if trt:
        return pairs + [("prefill_sink_wrapper (TRTLLMPrefill: None)", None, sink)]
    w = p.wrapper
    if isinstance(w, fi.BatchDCPPrefillWrapper):
        pairs.append(("prefill_sink_wrapper (the DCP prefill wrapper)", False, sink))
        ctx = w._context
        pairs.append(("prefill.wrapper: context pass on FlashInfer's paged wrapper",
                      isinstance(ctx, PlanRecorder), True))
        pairs += _plan_pairs("prefill.wrapper._context", ctx, DCP_CONTEXT_PLAN, lib, seen,
                             libattn, expect={
                                 "num_qo_heads": int(lib.get("num_qo_heads", 0)) * dcp_world,
                                 "causal": False,
                                 "seq_lens": _get_seq_lens(lib.get("prefill_paged_kv_indptr_cpu"),
                                                           lib.get("prefill_paged_kv_last_page_len_cpu"),
                                                           page),
                                 "block_tables": block_table[int(v.num_decodes):],
                             })
        pairs += _plan_pairs("prefill.wrapper._new_tokens", w._new_tokens, DCP_NEW_TOKENS_PLAN,
                             lib, seen, libattn, expect={"causal": True})
        return pairs
    pairs.append((f"prefill.wrapper: FlashInfer's {type(w).__name__} ~ prefill_sink_wrapper",
                  type(w).__name__, "BatchAttentionWithAttentionSinkWrapper" if sink else
                  "BatchPrefillWithPagedKVCacheWrapper"))
    if type(w).__name__ == "BatchAttentionWithAttentionSinkWrapper":
        pairs += _sink_wrapper_pairs(w, lib, seen, libattn)
    pairs.append(("prefill.wrapper kv_layout ~ kv_cache_layout", w.kv_layout,
                  _lib(lib, "kv_cache_layout", seen, libattn)))
    return pairs + _plan_pairs("prefill.wrapper", w, PREFILL_PLAN, lib, seen, libattn, expect={
        "seq_lens": _get_seq_lens(lib.get("prefill_paged_kv_indptr_cpu"),
                                  lib.get("prefill_paged_kv_last_page_len_cpu"), page)})


#: the sink prefill wrapper's constructor keywords (beyond the workspace and layout) -> libattn
SINK_WRAPPER_INIT = {"q_data_type": "q_data_type_prefill", "kv_data_type": "kv_data_type",
                     "head_dim_qk": "head_dim", "head_dim_vo": "head_dim",
                     "window_left": "window_left"}


def _sink_wrapper_pairs(w: Any, lib: Dict[str, Any], seen: set, libattn: Any) -> List[Pair]:
    """What vLLM made BatchAttentionWithAttentionSinkWrapper with: each keyword against its
    libattn field (backend "auto", vLLM's constant); a keyword the lane does not know is a
    mismatch."""
    pairs: List[Pair] = []
    for arg, value in w.init_kwargs.items():
        name = f"prefill.wrapper BatchAttentionWithAttentionSinkWrapper({arg}=)"
        if arg in SINK_WRAPPER_INIT:
            field = SINK_WRAPPER_INIT[arg]
            pairs.append((f"{name} ~ {field}", _vllm_value(field, value),
                          _lib(lib, field, seen, libattn)))
        elif arg == "backend":
            pairs.append((f"{name} (vLLM's constant)", value, "auto"))
        else:
            pairs.append((f"{name} (argument libattn lacks)", value, MISSING))
    return pairs


def _decode_pairs(fi: Any, v: Any, lib: Dict[str, Any], seen: set, libattn: Any,
                  dcp_world: int) -> List[Pair]:
    d = v.decode
    if d is None:
        return _part_none("decode", lib, seen)
    pairs, api = _part_class("decode", d, fi.FlashInferTrtllmAPIDecode, DECODE_PLAN, lib,
                             seen, libattn)
    if api:
        return pairs
    w = d.wrapper
    pairs.append((f"decode.wrapper: FlashInfer's {type(w).__name__}", type(w).__name__,
                  "BatchDecodeWithPagedKVCacheWrapper"))
    pairs.append(("decode.wrapper kv_layout ~ kv_cache_layout", w.kv_layout,
                  _lib(lib, "kv_cache_layout", seen, libattn)))
    pairs.append(("decode.wrapper use_cuda_graph ~ decode_use_cudagraph",
                  bool(w.init_kwargs.get("use_cuda_graph", False)),
                  _lib(lib, "decode_use_cudagraph", seen, libattn)))
    return pairs + _plan_pairs("decode.wrapper", w, DECODE_PLAN, lib, seen, libattn,
                               constants=DECODE_CONSTANTS)


# ---- the FLASHINFER builders' settings: device capability, KV cache dtype, TRT-LLM switch ----

#: compute capabilities a FLASHINFER builder is constructed for (vLLM's platform answers the
#: batch's one: patches.device_capability; None is the CPU platform's own answer), each with
#: what it selects in 0.33: none / 8.x fa2-native decode, 9.0 XQA decode, 10.0 trtllm-gen
#: prefill and decode (HND layout), 12.0 XQA decode
CAPABILITIES = (None, (8, 0), (8, 9), (9, 0), (10, 0), (12, 0))
#: KV cache dtypes (cache_config.cache_dtype; fp8 ones with a per-tensor quantized spec)
CACHE_DTYPES = ("auto", "auto", "fp8", "fp8_e5m2")
#: attention_config.use_trtllm_attention (None: auto)
TRTLLM_SWITCH = (None, None, True, False)
_LIB_CACHE_DTYPE = {"auto": 0, "fp8": 4, "fp8_e5m2": 5}


def flashinfer_settings(b: Any, dcp_world: int) -> Tuple[Any, str, Any]:
    """(capability, cache dtype, use_trtllm_attention) of the batch's FLASHINFER builder,
    seeded by the batch. DCP batches are not given 10.0: there vLLM's DCP prefill runs its
    context pass on trtllm-gen (``use_trtllm_dcp_prefill``), whose workspace is a CUDA
    allocation, and libattn does not model that choice yet (docs/backends/flashinfer.md)."""
    from .item import choice_rng
    r = choice_rng(b, 15)
    caps = [c for c in CAPABILITIES if not (dcp_world > 1 and c == (10, 0))]
    cap = caps[int(r.integers(0, len(caps)))]
    return (cap, CACHE_DTYPES[int(r.integers(0, len(CACHE_DTYPES)))],
            TRTLLM_SWITCH[int(r.integers(0, len(TRTLLM_SWITCH)))])


def configure_vllm(vc: Any, settings: Tuple[Any, str, Any]) -> None:
    """The settings on vLLM's config, as a user (cache dtype, TRT-LLM switch) and the engine
    core (the KV cache layout: the first, most preferred, of the layouts FlashInferBackend
    supports at that capability, else vLLM's default NHD) set them. Call with the capability
    patched (patches.device_capability)."""
    from vllm.v1.attention.backends.flashinfer import FlashInferBackend
    _, cache_dtype, trtllm = settings
    vc.cache_config.cache_dtype = cache_dtype
    vc.attention_config.use_trtllm_attention = trtllm
    layouts = FlashInferBackend.supported_kv_cache_layouts()
    vc.cache_config.kv_cache_layout = layouts[0].name if layouts else "NHD"


def vllm_spec_kwargs(settings: Tuple[Any, str, Any]) -> Dict[str, Any]:
    """FullAttentionSpec's extra arguments: a per-tensor fp8 quantized cache for fp8."""
    if settings[1] == "auto":
        return {}
    from vllm.v1.kv_cache_interface import KVQuantMode
    return {"kv_quant_mode": KVQuantMode.FP8_PER_TENSOR}


def libattn_config_kwargs(settings: Tuple[Any, str, Any]) -> Dict[str, Any]:
    """libattn's BuilderConfig fields for the same settings (device_capability 0 = unknown,
    answered as vLLM's CPU platform answers)."""
    cap, cache_dtype, trtllm = settings
    return dict(device_capability=0 if cap is None else cap[0] * 10 + cap[1],
                cache_dtype=_LIB_CACHE_DTYPE[cache_dtype],
                use_trtllm_attention=-1 if trtllm is None else int(trtllm))


def build_path(v: Any, settings: Tuple[Any, str, Any]) -> str:
    """Which classes vLLM's build chose (the lane counts them: Item.path): the prefill's
    (FIPrefill, its DCP wrapper, TRTLLMPrefill or none) and the decode's (FIDecode, XQA,
    trtllm-gen or none), and the capability's family."""
    import vllm.v1.attention.backends.flashinfer as fi
    p, d = v.prefill, v.decode
    prefill = ("-" if p is None else "TRTLLMPrefill" if isinstance(p, fi.TRTLLMPrefill) else
               "FIPrefill(DCP)" if isinstance(p.wrapper, fi.BatchDCPPrefillWrapper) else
               "FIPrefill")
    decode = ("-" if d is None else "FIDecode" if isinstance(d, fi.FIDecode) else
              f"TrtllmAPIDecode({d.kernel.name})")
    cap = "cpu" if settings[0] is None else f"sm{settings[0][0]}x"
    return f"{cap} prefill={prefill} decode={decode}"
