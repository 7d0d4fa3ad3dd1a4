"""Value-by-value comparison of vLLM's results with libattn's (shared by the lane and the bench).

``first_difference`` compares one value (torch tensors are read as numpy arrays), ``check``
a list of (name, vLLM value, libattn value) pairs and raises :class:`Mismatch` naming every
difference. ``flatten_vllm`` turns vLLM's metadata object into (name, value) pairs: every
dataclass field, recursively into nested dataclasses, lists, tuples and dicts, so that no field
or scalar of it escapes the comparison.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

Pair = Tuple[str, Any, Any]


class _Missing:
    """The side of a pair that has no such field (a vLLM field libattn lacks, or the reverse)."""

    def __repr__(self) -> str:
        return "absent"


#: a field one side lacks (always a mismatch, unless listed as an extension)
MISSING = _Missing()


class Mismatch(Exception):
    """libattn's value differs from vLLM's (the message names every differing field)."""


def as_np(x: Any) -> Any:
    """A torch tensor as a numpy array (a copy on the host); anything else unchanged."""
    try:
        import torch
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu()
            if x.dtype == torch.bfloat16:
                x = x.float()
            return x.numpy()
    except ImportError:
        pass
    return x


def first_difference(name: str, vllm_value: Any, lib_value: Any,
                     shape_only: bool = False) -> Optional[str]:
    """None when equal, else a message naming the first difference."""
    a, b = as_np(vllm_value), as_np(lib_value)
    if a is None or b is None:
        return None if a is None and b is None else f"{name}: vLLM {_short(a)} vs libattn {_short(b)}"
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return (f"{name}: vLLM {type(a).__name__} {_short(a)} vs libattn "
                    f"{type(b).__name__} {_short(b)}")
        if a.dtype != b.dtype:
            return f"{name}: dtype vLLM {a.dtype} vs libattn {b.dtype}"
        if a.shape != b.shape:
            return f"{name}: shape vLLM {a.shape} vs libattn {b.shape}"
        if shape_only:
            return None
        d = a != b
        if d.any():
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(d)), d.shape))
            return (f"{name}: first difference at index {idx}: vLLM {a[idx]!r} vs libattn "
                    f"{b[idx]!r} ({int(d.sum())} of {a.size} elements differ)")
        return None
    if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
        ok = isinstance(a, (bool, np.bool_, int, np.integer)) and \
            isinstance(b, (bool, np.bool_, int, np.integer)) and int(a) == int(b)
        return None if ok else f"{name}: vLLM {a!r} vs libattn {b!r}"
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return None if int(a) == int(b) else f"{name}: vLLM {a!r} vs libattn {b!r}"
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        try:
            return None if float(a) == float(b) else f"{name}: vLLM {a!r} vs libattn {b!r}"
        except (TypeError, ValueError):
            return f"{name}: vLLM {a!r} vs libattn {b!r}"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if list(a) == list(b):
            return None
        k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return (f"{name}: first difference at [{k}]: vLLM {a[k] if k < len(a) else 'end'!r} vs "
                f"libattn {b[k] if k < len(b) else 'end'!r} (lengths {len(a)} and {len(b)})")
    return None if a == b else f"{name}: vLLM {_short(a)} vs libattn {_short(b)}"


def _short(x: Any) -> str:
    if x is None or isinstance(x, (bool, int, float, str, list, tuple, np.generic)):
        s = repr(x)
        return s if len(s) <= 120 else s[:117] + "..."
    return f"<{type(x).__name__}>"


def check(pairs: List[Pair], shape_only: Iterable[str] = ()) -> int:
    """Raises Mismatch listing every differing field; returns the number of values compared."""
    shape_only = set(shape_only)
    errors = [e for e in (first_difference(n, a, b, n in shape_only) for n, a, b in pairs) if e]
    if errors:
        raise Mismatch("; ".join(errors))
    return len(pairs)


def flatten_vllm(obj: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """Every field of a vLLM result as (dotted name, value): dataclasses by
    ``dataclasses.fields`` (private ``_`` caches left out), recursing into nested dataclasses
    (``outer.inner``), lists/tuples of them (``name[i]``) and dicts (``name[key]``). Tensors,
    scalars, None and enums are leaves."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: List[Tuple[str, Any]] = []
        for f in dataclasses.fields(obj):
            if not f.name.startswith("_"):
                out += flatten_vllm(getattr(obj, f.name),
                                    f"{prefix}.{f.name}" if prefix else f.name)
        return out
    if isinstance(obj, (list, tuple)) and any(dataclasses.is_dataclass(x) for x in obj):
        return [p for i, x in enumerate(obj) for p in flatten_vllm(x, f"{prefix}[{i}]")]
    if isinstance(obj, dict) and any(dataclasses.is_dataclass(x) for x in obj.values()):
        return [p for k, v in obj.items() for p in flatten_vllm(v, f"{prefix}[{k}]")]
    return [(prefix, obj)]


#: torch dtype name -> libattn's KvDtype name
_KV_DTYPE_NAMES = {"float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT32",
                   "float8_e4m3fn": "FP8_E4M3", "float8_e5m2": "FP8_E5M2", "uint8": "UINT8"}


def kv_dtype_name(x: Any) -> Any:
    """A torch dtype (vLLM's side) by the name of libattn's KvDtype for it (None stays None; an
    unknown dtype keeps its torch name, so it differs)."""
    if x is None:
        return None
    name = str(x).replace("torch.", "")
    return _KV_DTYPE_NAMES.get(name, name)


def lib_field_name(vllm_name: str, lib_fields: Any) -> str:
    """libattn's name of a vLLM field (the one place of this mapping): the same name, or for a
    field of a nested vLLM dataclass (``outer.inner``, e.g. FLASHINFER's TRT-LLM decode
    metadata) libattn's flattened name, the attribute name + '_' as prefix (``outer_inner``;
    docs/backends/flashinfer.md)."""
    if vllm_name in lib_fields or "." not in vllm_name:
        return vllm_name
    flat = vllm_name.replace(".", "_")
    return flat if flat in lib_fields else vllm_name


COMMON_FIELDS = ["query_start_loc", "query_start_loc_cpu", "seq_lens", "num_reqs",
                 "num_actual_tokens", "max_query_len", "max_seq_len", "block_table_tensor",
                 "slot_mapping", "causal"]


def common_pairs(vllm_cm: Any, lib_md: Dict[str, Any]) -> List[Pair]:
    """vLLM's CommonAttentionMetadata against libattn's metadata of kind "common" (the fields
    both have; vLLM's host copy of seq_lens is its ``seq_lens_cpu_upper_bound``)."""
    pairs = [(f, getattr(vllm_cm, f), lib_md[f]) for f in COMMON_FIELDS]
    if lib_md.get("seq_lens_cpu_upper_bound") is not None:
        pairs.append(("seq_lens_cpu_upper_bound", vllm_cm.seq_lens_cpu_upper_bound,
                      lib_md["seq_lens_cpu_upper_bound"]))
    elif lib_md.get("seq_lens_cpu") is not None:
        pairs.append(("seq_lens_cpu", vllm_cm.seq_lens_cpu_upper_bound, lib_md["seq_lens_cpu"]))
    return pairs


def dataclass_pairs(vmd: Any, lmd: Any, missing: Any = MISSING) -> List[Pair]:
    """Every field of vLLM's metadata dataclass ``vmd`` against the same field of libattn's
    metadata ``lmd`` (``missing`` where libattn has none), then each libattn field vLLM 0.33
    lacks (``missing`` on vLLM's side)."""
    lib = {n: lmd[n] for n in lmd.fields()}
    out: List[Pair] = [(f.name, getattr(vmd, f.name), lib.pop(f.name, missing))
                       for f in dataclasses.fields(vmd)]
    out += [(f"{n} (libattn field vLLM 0.33 lacks)", missing, x) for n, x in lib.items()]
    return out


def builder_answer_pairs(vb: Any, vc: Any, lb: Any, patches: Any = None) -> List[Pair]:
    """What a builder (not its metadata) answers, vLLM's builder ``vb`` (made with VllmConfig
    ``vc``) against libattn's ``lb``: the CUDA graph support level (the class's
    get_cudagraph_support), the varlen CUDA graph query bound
    (get_varlen_cudagraph_max_query_len), reorder_batch_threshold, supports_update_block_table
    and supports_draft_decode_metadata_update. vLLM's classmethods run with ``vc`` current and
    inside ``patches`` (a context manager: the item's device and module patches), if given."""
    import contextlib
    from vllm.config import set_current_vllm_config
    cls, spec = type(vb), vb.kv_cache_spec
    with set_current_vllm_config(vc), (patches or contextlib.nullcontext()):
        level = cls.get_cudagraph_support(vc, spec).name
        varlen = cls.get_varlen_cudagraph_max_query_len(vc, spec)
    return [("builder: get_cudagraph_support", level, lb.cudagraph_support.name),
            ("builder: get_varlen_cudagraph_max_query_len", varlen,
             lb.varlen_cudagraph_max_query_len),
            ("builder: reorder_batch_threshold", vb.reorder_batch_threshold,
             lb.reorder_batch_threshold),
            ("builder: supports_update_block_table", bool(vb.supports_update_block_table),
             bool(lb.supports_update_block_table)),
            ("builder: supports_draft_decode_metadata_update",
             bool(vb.supports_draft_decode_metadata_update),
             bool(lb.supports_draft_decode_metadata_update))]
