"""The enumerations of ``include/attn_c.h``, with the header's (and vLLM's) numbers.

One :class:`~enum.IntEnum` per C enum, generated from the header into :mod:`libattn._generated`
(``scripts/gen_bindings.sh``): the class is the C name in CamelCase (``attn_kv_cache_kind_t`` is
:class:`KvCacheKind`), the members are the constants without their common prefix.
"""
from __future__ import annotations

from . import _generated

__all__ = [*_generated.ENUMS, "NO_REORDER", "PAD_SLOT_ID"]

globals().update({name: getattr(_generated, name) for name in _generated.ENUMS})

NO_REORDER = _generated.ATTN_NO_REORDER  #: the reorder threshold of builders that do not reorder.
PAD_SLOT_ID = _generated.ATTN_PAD_SLOT_ID  #: ``ATTN_PAD_SLOT_ID``: vLLM's ``PAD_SLOT_ID``.
