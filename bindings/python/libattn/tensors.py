"""Inputs and outputs as ``attn_tensor_t`` views, without copies.

:func:`tensor_arg` turns a numpy array, any object with ``__dlpack__`` (torch, cupy, jax), or a
list (converted to an int32 array, the one case that copies) into a :class:`TensorArg` that owns
what the view points into. :func:`to_numpy` views a host ``attn_tensor_t`` as a read-only numpy
array that keeps its owner alive.

Speed (issue 7: a runtime converts its arrays every engine step). A numpy array of a native
dtype takes a fast path with the same result as the general one: its data address is read
without ``__array_interface__`` (see :func:`array_address`), and the ``attn_tensor_t``, its shape
and its strides are one ctypes allocation filled by one ``struct.pack_into``. Arrays of other
dtypes (non-native byte order, float128, ...) take the general path, as do DLPack producers.

Checks (issue 15): no address reaches the library unless its array is of a dtype libattn reads
(TypeError otherwise), in the machine's byte order and aligned to its element size
(:class:`~libattn.InvalidArgument`, a ValueError, otherwise); each error names the argument and
the bad value. The fast path pays one AND of the address for the alignment; byte order and dtype
cost nothing there (only native dtypes are in its table).
"""
from __future__ import annotations

import ctypes
import platform
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type, Union

import numpy as np

from .dlpack import import_dlpack
from .enums import DeviceType, DTypeCode, Status
from .errors import InvalidArgument
from .structs import Tensor_p, attn_tensor_t

__all__ = ["TensorArg", "TensorFields", "tensor_arg", "optional_arg", "to_numpy", "host_view",
           "numpy_dtype", "numpy_struct", "array_address", "HOST_DEVICES", "ArrayLike"]

ArrayLike = Union[np.ndarray, Sequence[int], Any]
HOST_DEVICES = (DeviceType.CPU, DeviceType.CUDA_HOST, DeviceType.CUDA_MANAGED)
_HOST_TYPES = frozenset(int(d) for d in HOST_DEVICES)
_CPU = int(DeviceType.CPU)

_CODES = {"i": DTypeCode.INT, "u": DTypeCode.UINT, "f": DTypeCode.FLOAT, "b": DTypeCode.BOOL}

# attn_tensor_t's bytes (DLTensor): data, device (type, id), ndim, dtype (code, bits, lanes),
# shape, strides, byte_offset; tests/test_layout.py checks the mirror against the header.
_TENSOR = struct.Struct("=Q2iiBBH3Q")
assert _TENSOR.size == ctypes.sizeof(attn_tensor_t)


def _numpy_dtype(code: int, bits: int, lanes: int) -> Optional[np.dtype]:
    if lanes != 1:
        return None
    kind = {DTypeCode.INT: "i", DTypeCode.UINT: "u", DTypeCode.FLOAT: "f"}.get(code)
    if code == DTypeCode.BOOL and bits == 8:
        return np.dtype(np.bool_)
    if kind is None or bits not in (8, 16, 32, 64) or (kind == "f" and bits == 8):
        return None
    return np.dtype(f"{kind}{bits // 8}")


_DTYPES: Dict[Tuple[int, int, int], Optional[np.dtype]] = {}


def numpy_dtype(code: int, bits: int, lanes: int = 1) -> Optional[np.dtype]:
    """The numpy dtype of a DLPack type, or None (bfloat16, vector lanes)."""
    key = (int(code), int(bits), int(lanes))
    try:
        return _DTYPES[key]
    except KeyError:
        dt = _DTYPES[key] = _numpy_dtype(*key)
        return dt


# The dtypes of the fast path: native byte order, one of libattn's DLPack types.
_FAST_DTYPES: Dict[np.dtype, Tuple[int, int]] = {}
for _t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
           np.float16, np.float32, np.float64, np.bool_):
    _d = np.dtype(_t)
    _FAST_DTYPES[_d] = (int(_CODES[_d.kind]), _d.itemsize * 8)
del _t, _d


def _address_slow(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0] or 0


def _header_size() -> Optional[int]:
    """Where an ndarray object holds its data address, when it can be read there (else None).

    ``a.__array_interface__`` and ``a.ctypes.data`` build Python objects (3-4 us each on a
    2-vCPU VM), for every array of every step. On CPython the address is numpy's
    ``PyArrayObject.data``, the first field after the object header (numpy's public
    ``PyArrayObject_fields`` layout), read in ~0.5 us. It is used only when it agrees with
    ``__array_interface__`` on probe arrays (offsets, negative strides, empty, 0-d, read-only,
    a subclass); otherwise :func:`array_address` takes ``__array_interface__``."""
    if platform.python_implementation() != "CPython":
        return None
    at = object.__basicsize__  # the object header: PyObject_HEAD

    def fast(a: np.ndarray) -> int:
        return _word(id(a) + at).value or 0

    class Sub(np.ndarray):
        pass

    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    frozen = np.arange(5, dtype=np.int32)
    frozen.flags.writeable = False
    probes = [base, base[1:, 2:], base[::-1, ::-2], base.T, np.zeros(0), np.zeros(()),
              frozen[2:], base.view(Sub)[1:], np.ones(3, np.bool_)]
    try:
        if all(fast(p) == _address_slow(p) for p in probes):
            return at
    except Exception:  # pragma: no cover - an unexpected interpreter
        pass
    return None  # pragma: no cover


_word = ctypes.c_void_p.from_address
#: where numpy's data pointer sits in an ndarray object, None where it cannot be read so
_DATA_AT: Optional[int] = _header_size()


def array_address(a: np.ndarray) -> int:
    """The address of an ndarray's first element (``__array_interface__``'s), fast."""
    if _DATA_AT is not None:
        return _word(id(a) + _DATA_AT).value or 0
    return _address_slow(a)  # pragma: no cover


_MAX_RECORD_DIMS = 4  #: arrays with more dimensions take the general path (no input has)
_RECORD_SIZE = _TENSOR.size + 16 * _MAX_RECORD_DIMS


class _TensorRecord(attn_tensor_t):
    """An ``attn_tensor_t`` with room for its shape and strides after it (one allocation)."""
    _fields_ = [("dims", ctypes.c_int64 * (2 * _MAX_RECORD_DIMS))]


assert ctypes.sizeof(_TensorRecord) == _RECORD_SIZE
# a record's attn_tensor_t, shape and strides (right after the shape), by ndim
_RECORD_PACKS = [struct.Struct(f"=Q2iiBBH3Q{nd}q{nd}q").pack_into
                 for nd in range(_MAX_RECORD_DIMS + 1)]
# the common cases in fewer arguments: data, the middle bytes (device, ndim, dtype), the shape
# and strides pointers, byte_offset, then the shape and the strides
_PACK_1D = struct.Struct("=Q16s3Q2q").pack_into
_PACK_2D = struct.Struct("=Q16s3Q4q").pack_into
# per dtype: code, bits, itemsize, the strides of a contiguous 1-d array, the middle bytes of a
# 1-d and of a 2-d record, the alignment mask (itemsize - 1: an aligned address ANDs to 0)
_FastInfo = Tuple[int, int, int, Tuple[int], bytes, bytes, int]
_FAST_INFO: Dict[np.dtype, _FastInfo] = {
    d: (code, bits, d.itemsize, (d.itemsize,), struct.pack("=2iiBBH", _CPU, 0, 1, code, bits, 1),
        struct.pack("=2iiBBH", _CPU, 0, 2, code, bits, 1), d.itemsize - 1)
    for d, (code, bits) in _FAST_DTYPES.items()}


def _misaligned(name: str, dtype: Any, address: int, itemsize: int) -> InvalidArgument:
    return InvalidArgument(Status.INVALID_ARGUMENT,
                           f"{name}: data address 0x{address:x} is not aligned to its "
                           f"{itemsize}-byte {dtype} elements (an np.frombuffer offset or a "
                           f"byte-level view?); pass an aligned copy (np.require(a, "
                           f"requirements='A'))")


def _check_numpy(a: np.ndarray, name: str) -> int:
    """The element code of ``a`` after the general path's checks: a dtype libattn reads
    (TypeError), native byte order, element strides, an aligned address (InvalidArgument)."""
    dt = a.dtype
    code = _CODES.get(dt.kind)
    if code is None or dt.fields is not None or dt.subdtype is not None:
        raise TypeError(f"{name}: numpy dtype {dt} has no DLPack equivalent libattn accepts "
                        f"(int, uint, float or bool)")
    if not dt.isnative:
        native = "<" if np.little_endian else ">"
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f"{name}: byte order '{dt.byteorder}' (dtype {dt.str}) is not the "
                              f"machine's ('{native}'); libattn would misread every element: "
                              f"pass a.astype(a.dtype.newbyteorder('='))")
    isz = a.itemsize
    if any(st % isz for st in a.strides):
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f"{name}: array strides {a.strides} are not multiples of its "
                              f"itemsize {isz}")
    address = _address_slow(a)
    if address % isz:
        raise _misaligned(name, dt, address, isz)
    return int(code)


def _element_strides(st: Tuple[int, ...], isz: int, name: str = "tensor") -> Tuple[int, ...]:
    """numpy's byte strides as element strides (InvalidArgument, a ValueError, when one is not
    a multiple)."""
    if len(st) == 2:
        s0, s1 = st
        if not (s0 % isz or s1 % isz):
            return (s0 // isz, s1 // isz)
    elif not any(s % isz for s in st):
        return tuple(s // isz for s in st)
    raise InvalidArgument(Status.INVALID_ARGUMENT,
                          f"{name}: array strides {st} are not multiples of its itemsize {isz}")


def _pack_record(s: Any, at: int, address: int, a: np.ndarray, info: _FastInfo,
                 name: str = "tensor") -> bool:
    """Writes the record of ``a`` (a dtype of _FAST_INFO) at offset ``at`` of ``s``, whose
    address is ``address``; False (nothing written) past 4 dimensions. InvalidArgument naming
    ``name`` for a misaligned array."""
    st = a.strides
    r = address + at
    data = array_address(a)
    if data & info[6]:
        raise _misaligned(name, a.dtype, data, info[2])
    if st == info[3]:  # one dimension, contiguous: most inputs
        _PACK_1D(s, at, data, info[4], r + 48, r + 56, 0, a.shape[0], 1)
        return True
    nd = len(st)
    if nd > _MAX_RECORD_DIMS:
        return False
    code, bits, isz = info[0], info[1], info[2]
    shape = a.shape
    if nd == 2 and st[1] == isz and st[0] == shape[1] * isz:  # a C-contiguous table
        _PACK_2D(s, at, data, info[5], r + 48, r + 64, 0, shape[0], shape[1], shape[1], 1)
        return True
    _RECORD_PACKS[nd](s, at, data, _CPU, 0, nd, code, bits, 1, r + 48,
                      r + 48 + 8 * (nd or 1), 0, *shape, *_element_strides(st, isz, name))
    return True


def numpy_struct(a: np.ndarray, name: str = "tensor") -> Optional[attn_tensor_t]:
    """The ``attn_tensor_t`` of a numpy array of a native libattn dtype (None for others, and
    past 4 dimensions): the values the general path writes, in one ctypes allocation that owns
    the shape and strides, not the array's memory (keep ``a`` alive while it is used).
    InvalidArgument naming ``name`` when ``a`` is misaligned."""
    info = _FAST_INFO.get(a.dtype)
    if info is None:
        return None
    t = _TensorRecord()
    return t if _pack_record(t, 0, ctypes.addressof(t), a, info, name) else None



class TensorArg:
    """An ``attn_tensor_t`` view of a caller's tensor and everything it points into.

    ``ref`` is the pointer to pass to the C function (``struct`` itself may be passed where
    ctypes expects the pointer); keep the TensorArg alive while the library may read the memory
    (a metadata that views its inputs keeps them, see :class:`~libattn.CommonMetadata`)."""

    __slots__ = ("struct", "keep", "source", "_ref")

    def __init__(self, struct: attn_tensor_t, keep: Any, source: Any) -> None:
        self.struct = struct
        self.keep = keep
        self.source = source  #: the object it was made from (a numpy array for lists)
        self._ref: Optional[Any] = None

    @property
    def ref(self) -> Any:
        """``POINTER(attn_tensor_t)`` to ``struct`` (made on first use)."""
        r = self._ref
        if r is None:
            r = self._ref = Tensor_p(self.struct)  # typed as before for the fast path's records
        return r

    @property
    def shape(self) -> tuple:
        return tuple(int(self.struct.shape[d]) for d in range(self.struct.ndim))

    @property
    def on_host(self) -> bool:
        return self.struct.device.device_type in HOST_DEVICES


def _from_numpy(a: np.ndarray, name: str = "tensor") -> TensorArg:
    t = numpy_struct(a, name)  # the fast path; the general one: other dtypes, past 4 dimensions
    if t is not None:
        return TensorArg(t, a, a)
    return _from_numpy_general(a, name)


def _from_numpy_general(a: np.ndarray, name: str = "tensor") -> TensorArg:
    code = _check_numpy(a, name)
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


def _check_dlpack(t: attn_tensor_t, name: str) -> None:
    """A DLPack tensor's address must be aligned to its elements (whole-byte power-of-two
    sizes; DLPack has no byte order: producers export native values)."""
    bits, lanes = int(t.dtype.bits), int(t.dtype.lanes)
    isz = bits * lanes // 8
    if bits % 8 or isz < 2 or isz & (isz - 1):
        return
    address = (t.data or 0) + int(t.byte_offset)
    if address % isz:
        raise _misaligned(name, f"DLPack code={int(t.dtype.code)} bits={bits}", address, isz)


def tensor_arg(value: ArrayLike, dtype: Any = np.int32, name: str = "tensor") -> TensorArg:
    """A view of ``value``: a numpy array (any strides, no copy), an object with ``__dlpack__``
    (no copy; its device is kept), or a sequence of numbers (copied into a ``dtype`` array).
    ``name`` is the argument named by the errors of the checks (see the module's doc)."""
    if isinstance(value, np.ndarray):
        return _from_numpy(value, name)
    if isinstance(value, TensorArg):
        return value
    if hasattr(value, "__dlpack__"):
        consumed = import_dlpack(value)
        _check_dlpack(consumed.tensor, name)
        return TensorArg(consumed.tensor, consumed, value)
    return _from_numpy(np.ascontiguousarray(np.asarray(value, dtype=dtype)), name)


def output_arg(value: ArrayLike, dtype: Any = np.int32, name: str = "out") -> TensorArg:
    """:func:`tensor_arg` for a tensor the library writes: a numpy array must be writeable
    (InvalidArgument naming ``name`` otherwise: the library would write into memory numpy
    promised to keep unchanged)."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f"{name}: the array is read-only (flags.writeable is False); "
                              f"libattn writes this output")
    return tensor_arg(value, dtype, name)


def optional_arg(value: Optional[ArrayLike], dtype: Any = np.int32,
                 name: str = "tensor") -> Optional[TensorArg]:
    """:func:`tensor_arg`, passing None through."""
    return None if value is None else tensor_arg(value, dtype, name)


_I64 = ctypes.c_int64.from_address
_INT64S: Dict[int, struct.Struct] = {}


def _int64s(address: int, n: int) -> Tuple[int, ...]:
    """n int64 values at address."""
    if n == 1:
        return (_I64(address).value,)
    s = _INT64S.get(n)
    if s is None:
        s = _INT64S[n] = struct.Struct(f"={n}q")
    return s.unpack(ctypes.string_at(address, 8 * n))


def _compact(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    acc, rev = 1, []
    for n in reversed(shape):
        rev.append(acc)
        acc *= n
    return tuple(reversed(rev))


def to_numpy(t: attn_tensor_t, owner: Any) -> np.ndarray:
    """A read-only numpy view of a host tensor (no copy); it keeps ``owner`` alive."""
    return _view(ctypes.addressof(t), owner, True)  # type: ignore[return-value]


def host_view(address: int, owner: Any) -> Optional[np.ndarray]:
    """:func:`to_numpy` of the ``attn_tensor_t`` at ``address``, or None when numpy cannot view
    it (device memory, bfloat16, vector lanes)."""
    return _view(address, owner, False)


_TensorBytes = ctypes.c_char * _TENSOR.size
_frombuffer = np.frombuffer


def _view(address: int, owner: Any, strict: bool) -> Optional[np.ndarray]:
    """The view of the tensor at ``address``. Its memory is a ctypes array that holds
    ``owner``, exported read-only (a memoryview): the array is read-only without a flags write,
    and cannot be made writeable."""
    (data, device, _, ndim, code, bits, lanes, shape_p, strides_p,
     offset) = _TENSOR.unpack_from(_TensorBytes.from_address(address))
    dt = _DTYPES.get((code, bits, lanes))
    if dt is None:
        dt = numpy_dtype(code, bits, lanes)
        if dt is None:
            if strict:
                raise TypeError(f"dtype code={code} bits={bits} has no numpy dtype")
            return None
    if device not in _HOST_TYPES:
        if strict:
            raise TypeError(f"device type {device} is not host memory")
        return None
    isz = dt.itemsize
    if ndim == 1:  # the common case
        n = _I64(shape_p).value
        st = _I64(strides_p).value if strides_p else 1
        if not n or not data:
            return np.zeros((n,), dtype=dt)
        if st == 1:  # contiguous: the cheapest view numpy makes
            buf = (ctypes.c_char * (n * isz)).from_address(data + offset)
            buf._libattn_owner = owner  # the numpy view holds buf, buf holds the owner
            return _frombuffer(memoryview(buf).toreadonly(), dt)
        low, high = (0, (n - 1) * st) if st >= 0 else ((n - 1) * st, 0)
        shape: Tuple[int, ...] = (n,)
        bytes_strides: Tuple[int, ...] = (st * isz,)
    else:
        shape = _int64s(shape_p, ndim) if ndim else ()
        strides = (_int64s(strides_p, ndim) if ndim else ()) if strides_p else _compact(shape)
        if 0 in shape or not data:  # no elements: the tensor's strides kept (torch's view rule)
            empty = np.zeros(shape, dtype=dt)
            if not strides_p:
                return empty
            return np.lib.stride_tricks.as_strided(empty, shape, tuple(st * isz for st in strides))
        low = sum((n - 1) * st for n, st in zip(shape, strides) if st < 0)
        high = sum((n - 1) * st for n, st in zip(shape, strides) if st > 0)
        bytes_strides = tuple(st * isz for st in strides)
    buf = (ctypes.c_char * ((high - low + 1) * isz)).from_address(data + offset + low * isz)
    buf._libattn_owner = owner
    return np.ndarray(shape, dt, memoryview(buf).toreadonly(), -low * isz, bytes_strides)


# ---- a C struct's tensor pointer fields, filled in one allocation -----------------------------

class _Plan:
    """Where :class:`TensorFields` puts things for one C struct: a subclass with a record slot
    after it for every tensor pointer field, and the ``struct.Struct`` that writes
    ``struct_size`` (when the struct has one) and every pointer field at once; the bytes
    between them, zeroed by that pack, are the caller's to set afterwards."""

    def __init__(self, cls: Type[ctypes.Structure]) -> None:
        names = [name for name, ctype, *_ in cls._fields_ if ctype is Tensor_p]
        offsets = [getattr(cls, name).offset for name in names]
        self.cls: Type[ctypes.Structure] = type(
            f"_{cls.__name__}_with_tensors", (cls,),
            {"_fields_": [("_libattn_records",
                           ctypes.c_int64 * (len(names) * _RECORD_SIZE // 8))]})
        at = self.cls._libattn_records.offset  # type: ignore[attr-defined]
        #: field name -> (index among the written values, offset of its record slot)
        sized = cls._fields_[0][0] == "struct_size"
        self.slots: Dict[str, Tuple[int, int]] = {
            name: (i + sized, at + i * _RECORD_SIZE) for i, name in enumerate(names)}
        self.first = 0 if sized else offsets[0]
        fmt, pos = ("=Q", 8) if sized else ("=", self.first)
        for off in offsets:
            fmt += f"{off - pos}xQ"
            pos = off + 8
        self.pack = struct.Struct(fmt).pack_into
        #: the values the pack writes when every field is None
        self.none: List[int] = [ctypes.sizeof(cls)] * sized + [0] * len(names)


_PLANS: Dict[Type[ctypes.Structure], _Plan] = {}


class TensorFields:
    """``cls`` (a C struct mirror such as ``attn_common_metadata_t``) with ``struct_size`` set
    and its tensor pointer fields pointing at views of ``values`` (field name -> numpy array,
    ``__dlpack__`` object, list, :class:`TensorArg`, or None for NULL).

    numpy arrays of a native libattn dtype (up to 4 dimensions) are viewed by records stored in
    ``struct`` itself, after the C fields: one ctypes allocation for the struct and all of them,
    one ``pack_into`` per record and one for ``struct_size`` and every pointer, the bytes
    :func:`tensor_arg` would write, after the same checks (errors name ``labels.get(field,
    field)``). Lists become arrays of ``dtypes.get(name, default)``, as
    :func:`tensor_arg` makes them; everything else takes :func:`tensor_arg`. The object keeps
    every input alive; ``struct``'s other fields are zero, for the caller to set after this."""

    __slots__ = ("struct", "sources", "_values", "_slow", "_plan")

    def __init__(self, cls: Type[ctypes.Structure], values: Dict[str, Any],
                 dtypes: Optional[Dict[str, Any]] = None, default: Any = np.int32,
                 labels: Optional[Dict[str, str]] = None) -> None:
        plan = _PLANS.get(cls) or _PLANS.setdefault(cls, _Plan(cls))
        s = plan.cls()
        base = ctypes.addressof(s)
        written = plan.none[:]
        slots = plan.slots
        at = _DATA_AT
        sources: Dict[str, Any] = {}
        slow: Dict[str, TensorArg] = {}
        # the loop is a runtime's per-step cost: every line counts (~70 ns each on a 2-vCPU VM)
        for name, v in values.items():
            if v is None:
                continue
            i, rec = slots[name]
            if not isinstance(v, np.ndarray):
                if isinstance(v, TensorArg) or hasattr(v, "__dlpack__"):
                    slow[name] = arg = tensor_arg(v, name=(labels or {}).get(name, name))
                    sources[name] = arg.source
                    written[i] = ctypes.addressof(arg.struct)
                    continue
                v = np.ascontiguousarray(np.asarray(v, dtype=(dtypes or {}).get(name, default)))
            sources[name] = v
            info = _FAST_INFO.get(v.dtype)
            if info is not None:
                st = v.strides
                r = base + rec
                # _pack_record's two common cases, inline
                data = _word(id(v) + at).value or 0 if at else array_address(v)
                if data & info[6]:
                    raise _misaligned((labels or {}).get(name, name), v.dtype, data, info[2])
                if st == info[3]:  # one dimension, contiguous
                    _PACK_1D(s, rec, data, info[4], r + 48, r + 56, 0, v.shape[0], 1)
                    written[i] = r
                    continue
                if len(st) == 2:
                    n0, n1 = v.shape
                    if st[1] == info[2] and st[0] == n1 * info[2]:  # a C-contiguous table
                        _PACK_2D(s, rec, data, info[5], r + 48, r + 64, 0, n0, n1, n1, 1)
                        written[i] = r
                        continue
                if _pack_record(s, rec, base, v, info, (labels or {}).get(name, name)):
                    written[i] = r
                    continue
            # its errors, its result
            slow[name] = arg = _from_numpy_general(v, (labels or {}).get(name, name))
            written[i] = ctypes.addressof(arg.struct)
        plan.pack(s, plan.first, *written)
        self.struct = s
        self.sources = sources  #: field name -> the object viewed (lists: their array)
        self._values = values
        self._slow = slow
        self._plan = plan

    def arg(self, name: str) -> Optional[TensorArg]:
        """The :class:`TensorArg` of a field (None when absent)."""
        a = self._slow.get(name)
        if a is not None or name not in self.sources:
            return a
        source = self.sources[name]
        t = attn_tensor_t.from_buffer(self.struct, self._plan.slots[name][1])
        return TensorArg(t, source, source)

    def args(self) -> Dict[str, Optional[TensorArg]]:
        """Every field's :class:`TensorArg` (None for those given as None)."""
        return {name: self.arg(name) for name in self._values}
