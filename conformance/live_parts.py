"""Full-capacity buffers vLLM 0.33 hands out whole although a build writes only their leading
part (``copy_to_persistent``: the tail past the batch keeps ``torch.empty`` garbage or an
earlier build's values). Per backend and field: the live part (a tuple of slices, from vLLM's
result) and the reason. The lane compares the buffers' shapes whole and their values only in
the live part; libattn's tail is not compared (it holds zeros or an earlier build's values)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

Live = Callable[[Any], Tuple[slice, ...]]


def _reqs(v: Any) -> int:
    return int(v.num_reqs)


def _tokens(v: Any) -> int:
    return int(v.query_start_loc_cpu[_reqs(v)])


def _mask_shape(v: Any) -> Tuple[int, int]:
    """The direct block mask's (groups, indices per group): what vLLM copied into its
    persistent kv buffers; (0, 0) when vLLM built the mask by create_block_mask instead."""
    bm = getattr(v, "block_mask", None)
    if not getattr(v, "direct_build", False) or bm is None:
        return 0, 0
    return tuple(int(x) for x in bm.kv_indices.shape[-2:])  # type: ignore[return-value]


_WHY = "vLLM's full-capacity persistent buffer; a build writes only the "

#: backend -> {field: (live part of vLLM's value, reason)}
LIVE_PARTS: Dict[str, Dict[str, Tuple[Live, str]]] = {
    "FLEX_ATTENTION": {
        "query_start_loc": (lambda v: (slice(0, _reqs(v) + 1),), _WHY + "num_reqs + 1 entries"),
        "seq_lens": (lambda v: (slice(0, _reqs(v)),), _WHY + "num_reqs entries"),
        "decode_offset": (lambda v: (slice(0, _reqs(v)),), _WHY + "num_reqs entries"),
        "physical_to_logical": (lambda v: (slice(0, _reqs(v)),), _WHY + "num_reqs rows"),
        "persistent_doc_ids": (lambda v: (slice(0, _tokens(v)),),
                               _WHY + "scheduled tokens' entries (doc_ids)"),
        "persistent_kv_num_blocks": (lambda v: (slice(0, _mask_shape(v)[0]),),
                                     _WHY + "block mask's query groups"),
        "persistent_kv_indices": (lambda v: tuple(slice(0, n) for n in _mask_shape(v)),
                                  _WHY + "block mask's groups x indices per group"),
    },
}


def live_pair(backend: str, name: str, v: Any, vllm_value: Any, lib_value: Any
              ) -> Tuple[str, Any, Any]:
    """(name, vLLM value, libattn value) with both values cut to the live part where the
    field has a rule and the shapes agree (a shape difference stays a mismatch)."""
    rule = LIVE_PARTS.get(backend, {}).get(name)
    if rule is None:
        return name, vllm_value, lib_value
    from .compare import as_np
    a, b = as_np(vllm_value), as_np(lib_value)
    if getattr(a, "shape", None) != getattr(b, "shape", None):
        return name, vllm_value, lib_value
    part = rule[0](v)
    return f"{name} (live part)", a[part], b[part]
