"""Inputs and outputs as ``attn_tensor_t`` views, without copies.

:func:`tensor_arg` turns a numpy array, any object with ``__dlpack__`` (torch, cupy, jax), or a
list (converted to an int32 array, the one case that copies) into a :class:`TensorArg` that owns
what the view points into. :func:`to_numpy` views a host ``attn_tensor_t`` as a read-only numpy
array that keeps its owner alive.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence, Union

import numpy as np

from .dlpack import import_dlpack
from .enums import DeviceType, DTypeCode
from .structs import attn_tensor_t

__all__ = ["TensorArg", "tensor_arg", "to_numpy", "numpy_dtype", "HOST_DEVICES", "ArrayLike"]

ArrayLike = Union[np.ndarray, Sequence[int], Any]
HOST_DEVICES = (DeviceType.CPU, DeviceType.CUDA_HOST, DeviceType.CUDA_MANAGED)

_CODES = {"i": DTypeCode.INT, "u": DTypeCode.UINT, "f": DTypeCode.FLOAT, "b": DTypeCode.BOOL}


def numpy_dtype(code: int, bits: int, lanes: int = 1) -> Optional[np.dtype]:
    """The numpy dtype of a DLPack type, or None (bfloat16, vector lanes)."""
    if lanes != 1:
        return None
    kind = {DTypeCode.INT: "i", DTypeCode.UINT: "u", DTypeCode.FLOAT: "f"}.get(code)
    if code == DTypeCode.BOOL and bits == 8:
        return np.dtype(np.bool_)
    if kind is None or bits not in (8, 16, 32, 64) or (kind == "f" and bits == 8):
        return None
    return np.dtype(f"{kind}{bits // 8}")


class TensorArg:
    """An ``attn_tensor_t`` view of a caller's tensor and everything it points into.

    ``ref`` is the pointer to pass to the C function; keep the TensorArg alive while the library
    may read the memory (a metadata that views its inputs keeps them, see
    :class:`~libattn.CommonMetadata`)."""

    def __init__(self, struct: attn_tensor_t, keep: Any, source: Any) -> None:
        self.struct = struct
        self.keep = keep
        self.source = source  #: the object it was made from (a numpy array for lists)
        self.ref = ctypes.pointer(struct)

    @property
    def shape(self) -> tuple:
        return tuple(int(self.struct.shape[d]) for d in range(self.struct.ndim))

    @property
    def on_host(self) -> bool:
        return self.struct.device.device_type in HOST_DEVICES


def _from_numpy(a: np.ndarray) -> TensorArg:
    code = _CODES.get(a.dtype.kind)
    if code is None:
        raise TypeError(f"numpy dtype {a.dtype} has no DLPack equivalent libattn accepts")
    if any(s % a.itemsize for s in a.strides):
        raise ValueError(f"array strides {a.strides} are not multiples of its itemsize")
    t = attn_tensor_t()
    nd = a.ndim
    shape = (ctypes.c_int64 * max(nd, 1))(*a.shape)
    strides = (ctypes.c_int64 * max(nd, 1))(*[s // a.itemsize for s in a.strides])
    t.data = a.__array_interface__["data"][0] or None
    t.device.device_type = DeviceType.CPU
    t.ndim = nd
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, a.itemsize * 8, 1
    t.shape = shape  # ctypes converts an array to a pointer to its first element
    t.strides = strides
    return TensorArg(t, (a, shape, strides), a)


def tensor_arg(value: ArrayLike, dtype: Any = np.int32) -> TensorArg:
    """A view of ``value``: a numpy array (any strides, no copy), an object with ``__dlpack__``
    (no copy; its device is kept), or a sequence of numbers (copied into a ``dtype`` array)."""
    if isinstance(value, TensorArg):
        return value
    if isinstance(value, np.ndarray):
        return _from_numpy(value)
    if hasattr(value, "__dlpack__"):
        consumed = import_dlpack(value)
        return TensorArg(consumed.tensor, consumed, value)
    return _from_numpy(np.ascontiguousarray(np.asarray(value, dtype=dtype)))


def optional_arg(value: Optional[ArrayLike], dtype: Any = np.int32) -> Optional[TensorArg]:
    """:func:`tensor_arg`, passing None through."""
    return None if value is None else tensor_arg(value, dtype)


def to_numpy(t: attn_tensor_t, owner: Any) -> np.ndarray:
    """A read-only numpy view of a host tensor (no copy); it keeps ``owner`` alive."""
    dt = numpy_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    if dt is None:
        raise TypeError(f"dtype code={t.dtype.code} bits={t.dtype.bits} has no numpy dtype")
    if t.device.device_type not in HOST_DEVICES:
        raise TypeError(f"device type {t.device.device_type} is not host memory")
    shape = tuple(int(t.shape[d]) for d in range(t.ndim))
    if t.strides:
        strides = tuple(int(t.strides[d]) for d in range(t.ndim))
    else:
        acc, rev = 1, []
        for n in reversed(shape):
            rev.append(acc)
            acc *= n
        strides = tuple(reversed(rev))
    if 0 in shape or not t.data:
        return np.zeros(shape, dtype=dt)
    low = sum((n - 1) * st for n, st in zip(shape, strides) if st < 0)
    high = sum((n - 1) * st for n, st in zip(shape, strides) if st > 0)
    base = t.data + int(t.byte_offset) + low * dt.itemsize
    buf = (ctypes.c_char * ((high - low + 1) * dt.itemsize)).from_address(base)
    view = np.ndarray(shape, dt, buf, -low * dt.itemsize, tuple(st * dt.itemsize for st in strides))
    view.flags.writeable = False
    buf._libattn_owner = owner  # the numpy view holds buf, buf holds the owner
    return view


