"""DLPack in both directions, without copies.

- :func:`import_dlpack` consumes the capsule of any object with ``__dlpack__`` (torch, cupy,
  jax, numpy >= 1.22) as the protocol says: it renames it ``"used_dltensor"`` (so the producer's
  capsule destructor leaves the tensor alone) and calls the ``DLManagedTensor``'s deleter once
  the returned owner is garbage collected, i.e. when libattn no longer views the memory.
- :class:`TensorView` wraps a tensor field of a metadata (device memory included) and exports it
  with ``__dlpack__`` / ``__dlpack_device__``, so ``torch.from_dlpack(view)`` sees libattn's
  buffer. The view and each export keep the memory allocated (the builder's buffers, an owned
  metadata's copies, the inputs) until the consumer calls the deleter; a view of stale metadata
  refuses to export (:class:`~libattn.StaleMetadata`).

``attn_tensor_t`` has ``DLTensor``'s layout (``tests/test_layout.py`` checks it against the
header), so a ``DLManagedTensor`` is an ``attn_tensor_t`` followed by two pointers.
"""
from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_void_p, py_object
from typing import Any, Dict, Optional, Tuple

from .enums import DeviceType, DTypeCode
from .structs import attn_tensor_t

__all__ = ["DLManagedTensor", "ConsumedTensor", "import_dlpack", "TensorView", "live_exports"]

_DLTENSOR = b"dltensor"
_USED = b"used_dltensor"
_deleter_t = CFUNCTYPE(None, c_void_p)
_destructor_t = CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", attn_tensor_t), ("manager_ctx", c_void_p), ("deleter", _deleter_t)]


# Private prototypes (ctypes.pythonapi's shared attributes are left as they are).
_api, _P = ctypes.pythonapi, ctypes.PYFUNCTYPE
_IsValid = _P(c_int, py_object, c_char_p)(("PyCapsule_IsValid", _api))
_GetPointer = _P(c_void_p, py_object, c_char_p)(("PyCapsule_GetPointer", _api))
_SetName = _P(c_int, py_object, c_char_p)(("PyCapsule_SetName", _api))
_New = _P(py_object, c_void_p, c_char_p, _destructor_t)(("PyCapsule_New", _api))
_GetName = _P(c_char_p, c_void_p)(("PyCapsule_GetName", _api))
_GetPointerRaw = _P(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))


class ConsumedTensor:
    """A ``DLManagedTensor`` taken from a capsule: owns it and calls its deleter when collected
    (or at :meth:`release`). ``tensor`` is its ``DLTensor`` as an ``attn_tensor_t``."""

    def __init__(self, address: int, source: Any) -> None:
        self._managed: Optional[DLManagedTensor] = DLManagedTensor.from_address(address)
        self._address = address
        self.source = source  #: the object that produced the capsule
        self.tensor: attn_tensor_t = self._managed.dl_tensor

    def release(self) -> None:
        """Calls the producer's deleter now (idempotent); the view must no longer be used."""
        managed, self._managed = self._managed, None
        if managed is not None and managed.deleter:
            managed.deleter(self._address)

    def __del__(self) -> None:
        self.release()


def import_dlpack(obj: Any) -> ConsumedTensor:
    """Consumes ``obj.__dlpack__()``: the ``DLTensor`` (sharing the producer's memory, shape and
    strides) in a :class:`ConsumedTensor` that frees it when collected. Keep it alive while the
    library may read the memory."""
    capsule = obj.__dlpack__()
    if not _IsValid(capsule, _DLTENSOR):
        raise TypeError(f"{type(obj).__name__}.__dlpack__() did not return a 'dltensor' capsule")
    address = _GetPointer(capsule, _DLTENSOR)
    if _SetName(capsule, _USED) != 0:  # pragma: no cover - cannot fail on a valid capsule
        raise RuntimeError("PyCapsule_SetName failed")
    return ConsumedTensor(address, obj)


# Exported tensors alive in a consumer: address of the DLManagedTensor -> what it keeps alive.
_live: Dict[int, Any] = {}


@_deleter_t
def _delete(address: int) -> None:
    _live.pop(address, None)


@_destructor_t
def _capsule_destructor(capsule: int) -> None:
    # An unconsumed capsule still owns its tensor: release it (the protocol's rule).
    if _GetName(capsule) == _DLTENSOR:
        address = _GetPointerRaw(capsule, _DLTENSOR)
        if address:
            _delete(address)


class TensorView:
    """A tensor field of a metadata, on any device, exportable with DLPack.

    ``shape``, ``strides`` (elements), ``dtype`` (code, bits, lanes), ``device`` (type, id)
    and ``data_ptr`` describe it; ``__dlpack__`` hands the memory to torch, cupy, jax or numpy
    without a copy. Its memory stays allocated while it (or an export) lives; its values are the
    metadata's as long as that metadata is valid (a builder's result: until that builder's next
    build), and exporting it afterwards raises :class:`~libattn.StaleMetadata`."""

    def __init__(self, tensor: attn_tensor_t, owner: Any, metadata: Any = None) -> None:
        self._owner = owner  # what the memory belongs to, held by every export
        self._metadata = metadata  # checked at each export (None: nothing to check)
        self.ndim = int(tensor.ndim)
        self.shape = tuple(int(tensor.shape[d]) for d in range(self.ndim))
        if tensor.strides:
            self.strides = tuple(int(tensor.strides[d]) for d in range(self.ndim))
        else:
            acc, st = 1, []
            for n in reversed(self.shape):
                st.append(acc)
                acc *= n
            self.strides = tuple(reversed(st))
        self.dtype = (int(tensor.dtype.code), int(tensor.dtype.bits), int(tensor.dtype.lanes))
        self.device = (int(tensor.device.device_type), int(tensor.device.device_id))
        self.data_ptr = (tensor.data or 0) + int(tensor.byte_offset)

    def __repr__(self) -> str:
        code, bits, _ = self.dtype
        try:
            name = DTypeCode(code).name.lower()
        except ValueError:
            name = f"code{code}"
        try:
            dev = DeviceType(self.device[0]).name.lower()
        except ValueError:
            dev = f"device{self.device[0]}"
        return f"TensorView(shape={self.shape}, dtype={name}{bits}, device={dev}:{self.device[1]})"

    def __getitem__(self, key: slice) -> "TensorView":
        """A view of rows ``key`` (a slice with step 1) of this tensor's first dimension, on the
        same device and with the same owner: ``md.tensor_view(name)[a:b]``."""
        if not isinstance(key, slice) or key.step not in (None, 1) or self.ndim < 1:
            raise TypeError("a TensorView takes a slice of its first dimension, step 1")
        start, stop, _ = key.indices(self.shape[0])
        stop = max(start, stop)
        out = object.__new__(TensorView)
        out.__dict__.update(self.__dict__)
        out.shape = (stop - start,) + self.shape[1:]
        out.data_ptr = self.data_ptr + start * self.strides[0] * ((self.dtype[1] * self.dtype[2] + 7) // 8)
        return out

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """A ``dltensor`` capsule viewing this tensor. libattn's buffers are written on the
        builder's stream; synchronise with it before another stream reads them."""
        if copy:
            raise BufferError("libattn's TensorView exports without copying only")
        md = self._metadata
        if md is not None and not md._valid():
            from .metadata import StaleMetadata
            raise StaleMetadata("TensorView of stale metadata: " + md._stale_reason())
        managed = DLManagedTensor()
        shape = (ctypes.c_int64 * max(self.ndim, 1))(*self.shape)
        strides = (ctypes.c_int64 * max(self.ndim, 1))(*self.strides)
        t = managed.dl_tensor
        t.data = self.data_ptr or None
        t.device.device_type, t.device.device_id = self.device
        t.ndim = self.ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = self.dtype
        t.shape = ctypes.cast(shape, POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(strides, POINTER(ctypes.c_int64))
        t.byte_offset = 0
        managed.deleter = _delete
        address = ctypes.addressof(managed)
        _live[address] = (managed, shape, strides, self._owner)
        return _New(address, _DLTENSOR, _capsule_destructor)


def live_exports() -> int:
    """How many exported tensors are still held by consumers (for tests)."""
    return len(_live)


