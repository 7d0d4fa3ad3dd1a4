"""ctypes mirrors of every struct of ``include/attn_c.h``, fields in the header's order.

They are generated from the header into :mod:`libattn._generated` (``scripts/gen_bindings.sh``)
and re-exported here with the callback types and the ``*_STRUCT_SIZE`` values.
``tests/test_layout.py`` checks each size against the header's. Callers rarely need these
directly: :class:`~libattn.CommonMetadata`, :class:`~libattn.BuilderConfig` and the other
wrappers fill them. Every struct with a ``struct_size`` gets it set to ``ctypes.sizeof`` of the
mirror by :func:`new`.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure
from typing import Type, TypeVar

from . import _generated

__all__ = [*_generated.STRUCTS, *_generated.CALLBACKS, *_generated.STRUCT_SIZES, "Tensor_p", "new"]

globals().update({name: getattr(_generated, name) for name in
                  (*_generated.STRUCTS, *_generated.CALLBACKS, *_generated.STRUCT_SIZES)})

T = TypeVar("T", bound=Structure)

Tensor_p = POINTER(_generated.attn_tensor_t)  #: ``const attn_tensor_t*``


def new(cls: Type[T], **values) -> T:
    """An instance of a mirror with ``struct_size`` set (when it has one) and ``values``."""
    s = cls(**values)
    if any(name == "struct_size" for name, _ in cls._fields_):
        s.struct_size = ctypes.sizeof(cls)
    return s
