"""A persistent batch for a per-step loop (issue 18): arrays allocated once at the config's
capacity and bound once to ``attn_common_metadata_t``, so that a step writes values and calls
:meth:`BoundBatch.build` with the scalars, the way vLLM's model runner keeps persistent CPU/GPU
buffers; the metadata's fields come back as views made once and re-sliced per build.

>>> batch = PersistentBatch(config, block_table_width=256)     # once
>>> step = lib.persistent_builder("FLASH_ATTN", spec, config, batch)
>>> # every step: write the first rows, then build with the scalars
>>> batch.query_start_loc[:n + 1] = ...; batch.seq_lens[:n] = ...; batch.slot_mapping[:t] = ...
>>> md = step.build(n, t, max_query_len, max_seq_len)
>>> md["seq_lens"], md["slot_mapping"], md["max_seq_len"]

What is bound once and what is read per build (exactly; docs in the binding's README):

- The inputs' ``attn_tensor_t`` records, their data addresses and strides never change; their
  shapes point at four int64 cells of the batch (``num_actual_tokens``, ``num_reqs + 1``,
  ``num_reqs``, the block table width), rewritten with the struct's four scalars by two
  ``struct.pack_into`` per build. A build can only describe the first rows of the arrays.
- ``attn_build`` is called with arguments made once (``functools.partial`` of the C function
  without ctypes argument conversion); the result handle lands in one ``c_void_p``.
- A field read calls ``attn_metadata_get`` (arguments made once, the GIL kept: it is a lookup)
  and reads the ``attn_tensor_t`` it returns: kind, data address, dtype, device, shape and
  strides come from the library on every read, so a field that changes kind, memory or shape
  between builds is read as it is. What is made once is the numpy array: per field, a read-only
  base view over the memory (the batch's own array, at its capacity, when the field views an
  input; else the builder's persistent buffer as first seen, grown when a longer shape is
  reported), sliced to the reported shape; the same array object is returned while the
  reported shape and strides stay the same.
- ``trust_inputs=True``: a field named as a bound input (or as one of the four scalars) that
  the library answered, on its first read, with that input exactly as bound (that scalar's
  value) is served from then on from the batch (the build's scalars) without a call; see the
  README for what that assumes.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import struct
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Tuple

import numpy as np

from .builder import Builder
from .common_metadata import CommonMetadata
from .config import BuilderConfig, KvCacheSpec
from .enums import Status, ValidateMode
from .errors import InvalidArgument
from .metadata import (Metadata, StaleMetadata, _BOOL, _FIELD, _FIELD_SIZE, _FLOAT, _INT, _NONE,
                       _TENSOR)
from ._generated import FIELDS
from .structs import attn_common_metadata_t, attn_tensor_t
from .tensors import _TENSOR as _TENSOR_HEAD, _view, array_address, tensor_arg

if TYPE_CHECKING:
    from .library import Library

__all__ = ["PersistentBatch", "BoundBatch", "PersistentMetadata", "PERSISTENT_INPUTS"]

# How long each input is along its first dimension: "tok" num_actual_tokens, "req1" num_reqs
# + 1, "req" num_reqs, "table" (num_reqs, width). Index = its shape cell (the block table's
# shape is the two cells from "req" on: num_reqs, width).
_TOK, _REQ1, _REQ, _WIDTH = 0, 1, 2, 3
#: input name -> (shape cell, dtype of the array the batch allocates): every tensor field of
#: attn_common_metadata_t measured in tokens or requests (its field list, src/core/abi_fields.h;
#: the block table under its binding name), in the header's order
PERSISTENT_INPUTS: Dict[str, Tuple[int, Any]] = {
    ("block_table" if name == "block_table_tensor" else name):
        ({"TOKENS": _TOK, "QSL": _REQ1, "REQS": _REQ}[args[1]],
         {"I32": np.int32, "I64": np.int64, "BOOL": np.bool_}[args[0]])
    for name, kind, args, _ in FIELDS["attn_common_metadata_t"]
    if kind == "TENSOR" and args[1] in ("TOKENS", "QSL", "REQS")}
_REQUIRED = ("query_start_loc", "seq_lens", "block_table", "slot_mapping")
_CELLS = struct.Struct("=3q")  # num_actual_tokens, num_reqs + 1, num_reqs (width stays)
_COUNTS = struct.Struct("=4q")
_COUNTS_AT = attn_common_metadata_t.num_reqs.offset  # the four scalars, consecutive int64
_SHAPE_AT = attn_tensor_t.shape.offset
_VOIDP = ctypes.c_void_p


def _invalid(message: str) -> InvalidArgument:
    return InvalidArgument(Status.INVALID_ARGUMENT, message)


class PersistentBatch:
    """The inputs of every build, allocated once at the capacity of ``config`` and bound once
    to one ``attn_common_metadata_t``.

    ``PersistentBatch(config, block_table_width)`` allocates numpy arrays (zeros) of
    ``config.max_num_seqs`` requests (``query_start_loc``: one more), ``block_table_width``
    block table columns and ``config.max_num_batched_tokens`` tokens (``slot_mapping``, int64),
    plus the optional inputs named in ``inputs`` (any of :data:`PERSISTENT_INPUTS`, e.g.
    ``("query_start_loc_cpu", "seq_lens_cpu")``). An input given as a keyword argument is bound
    instead of allocated: a numpy array or any ``__dlpack__`` tensor (a torch CUDA tensor for a
    CUDA builder, with ``*_cpu`` host mirrors), at least as long as the capacity along its first
    dimension (the block table: ``block_table_width`` columns at least). Its memory must stay
    where it is: the batch keeps the object alive.

    Each array is an attribute (``batch.seq_lens``; ``batch.arrays`` maps every name). A step
    writes the first ``num_reqs`` (``num_reqs + 1``, ``num_actual_tokens``) entries, then sets
    the scalars (:meth:`set_counts`, which :meth:`BoundBatch.build` calls): the bound tensors
    then describe exactly those first rows. :attr:`common` is the bound
    :class:`~libattn.CommonMetadata`, for the ordinary API (``builder.build(batch.common)``
    after :meth:`set_counts`) and the batch utilities.
    """

    def __init__(self, config: BuilderConfig, block_table_width: int, *,
                 inputs: Iterable[str] = (), **arrays: Any) -> None:
        self.max_num_reqs = int(config.max_num_seqs)
        self.max_num_tokens = int(config.max_num_batched_tokens)
        width = int(block_table_width)
        if self.max_num_reqs <= 0 or self.max_num_tokens <= 0 or width <= 0:
            raise _invalid(f"PersistentBatch: capacity max_num_seqs={self.max_num_reqs}, "
                           f"max_num_batched_tokens={self.max_num_tokens}, block_table_width="
                           f"{width}: each must be > 0")
        names = list(_REQUIRED)
        for n in list(inputs) + list(arrays):
            if n not in PERSISTENT_INPUTS:
                raise TypeError(f"PersistentBatch: unknown input {n!r}; the persistent inputs "
                                f"are {', '.join(PERSISTENT_INPUTS)}")
            if n not in names:
                names.append(n)
        caps = {_TOK: self.max_num_tokens, _REQ1: self.max_num_reqs + 1, _REQ: self.max_num_reqs}
        self.arrays: Dict[str, Any] = {}
        for n in names:
            cell, dtype = PERSISTENT_INPUTS[n]
            given = arrays.get(n)
            if given is None:
                shape = (caps[cell], width) if n == "block_table" else (caps[cell],)
                given = np.zeros(shape, dtype)
            else:
                self._check_given(n, given, caps[cell], width)
            self.arrays[n] = given
            setattr(self, n, given)
        self.block_table_width = width
        kw = {("block_table" if n == "block_table" else n): a for n, a in self.arrays.items()}
        #: the bound CommonMetadata (its scalars and shapes are the last set_counts')
        self.common = CommonMetadata(**kw, num_reqs=self.max_num_reqs,
                                     num_actual_tokens=self.max_num_tokens, max_query_len=0,
                                     max_seq_len=0)
        s = self.common.struct
        # the shape cells every record points at: num_actual_tokens, num_reqs + 1, num_reqs,
        # width (the block table's shape is (num_reqs, width): the last two)
        self._cells = cells = (ctypes.c_int64 * 4)(0, 1, 0, width)
        base = ctypes.addressof(cells)
        for n in names:
            field = "block_table_tensor" if n == "block_table" else n
            p = getattr(attn_common_metadata_t, field)
            address = ctypes.c_void_p.from_buffer(s, p.offset).value
            if not address:  # pragma: no cover - every bound input has a record
                raise AssertionError(f"{n} has no record")
            cell = PERSISTENT_INPUTS[n][0]
            shape_p = ctypes.c_void_p.from_address(address + _SHAPE_AT)
            shape_p.value = base + 8 * cell
        self._struct = s
        #: data address -> (read-only view of the whole array, its dtype, its shape cell, the
        #: input's name; the first input of an array given twice)
        self._readonly: Dict[int, Tuple[np.ndarray, Any, int, str]] = {}
        for n, a in self.arrays.items():
            if isinstance(a, np.ndarray):
                ro = a.view()
                ro.flags.writeable = False
                self._readonly.setdefault(array_address(a),
                                          (ro, a.dtype, PERSISTENT_INPUTS[n][0], n))
        self.set_counts(0, 0, 0, 0)

    # the scalars of the last set_counts (the bound struct's)
    num_reqs = property(lambda self: self.common.num_reqs)
    num_actual_tokens = property(lambda self: self.common.num_actual_tokens)
    max_query_len = property(lambda self: self.common.max_query_len)
    max_seq_len = property(lambda self: self.common.max_seq_len)

    @staticmethod
    def _check_given(name: str, value: Any, capacity: int, width: int) -> None:
        arg = tensor_arg(value, name=name)  # the dtype/alignment checks of every input
        shape = arg.shape
        want = 2 if name == "block_table" else 1
        if len(shape) != want:
            raise _invalid(f"PersistentBatch: {name} has shape {shape}; expected {want} "
                           f"dimension(s)")
        if shape[0] < capacity or (want == 2 and shape[1] < width):
            need = f"({capacity}, {width})" if want == 2 else f"({capacity},)"
            raise _invalid(f"PersistentBatch: {name} has shape {shape}, smaller than the "
                           f"capacity {need} (config.max_num_seqs / max_num_batched_tokens, "
                           f"block_table_width)")

    def set_counts(self, num_reqs: int, num_actual_tokens: int, max_query_len: int,
                   max_seq_len: int) -> None:
        """The scalars of the next build: the bound tensors then describe the first
        ``num_reqs`` requests (``num_reqs + 1`` offsets) and ``num_actual_tokens`` tokens.
        InvalidArgument (a ValueError) past the capacity, naming it."""
        if not (0 <= num_reqs <= self.max_num_reqs and
                0 <= num_actual_tokens <= self.max_num_tokens):
            self._refuse(num_reqs, num_actual_tokens)
        try:
            _CELLS.pack_into(self._cells, 0, num_actual_tokens, num_reqs + 1, num_reqs)
            _COUNTS.pack_into(self._struct, _COUNTS_AT, num_reqs, num_actual_tokens,
                              max_query_len, max_seq_len)
        except struct.error:
            raise TypeError(f"num_reqs={num_reqs!r}, num_actual_tokens={num_actual_tokens!r}, "
                            f"max_query_len={max_query_len!r}, max_seq_len={max_seq_len!r}: "
                            f"the scalars must be ints") from None

    def _refuse(self, num_reqs: Any, num_actual_tokens: Any) -> None:
        if not isinstance(num_reqs, int) or not isinstance(num_actual_tokens, int):
            raise TypeError(f"num_reqs={num_reqs!r} and num_actual_tokens={num_actual_tokens!r} "
                            f"must be ints")
        if not 0 <= num_reqs <= self.max_num_reqs:
            raise _invalid(f"num_reqs={num_reqs} is outside the persistent batch's capacity "
                           f"[0, {self.max_num_reqs}] (config.max_num_seqs); make the batch "
                           f"with a larger config")
        raise _invalid(f"num_actual_tokens={num_actual_tokens} is outside the persistent "
                       f"batch's capacity [0, {self.max_num_tokens}] "
                       f"(config.max_num_batched_tokens)")

    def _base_for(self, data: int, dtype: np.dtype) -> Optional[np.ndarray]:
        """The read-only full view of the batch's numpy array that starts at ``data``."""
        hit = self._readonly.get(data)
        return hit[0] if hit is not None and hit[1] == dtype else None

    def _input_rule(self, name: str, data: int,
                    value: np.ndarray) -> Optional[Tuple[np.ndarray, int]]:
        """(the read-only view of input ``name``, its shape cell) when ``value`` (a field's
        value, viewing memory from ``data``) is that input exactly as bound now: its first rows,
        all columns, the bound length; else None."""
        hit = self._readonly.get(data)
        if hit is None or hit[1] != value.dtype or hit[3] != name:
            return None
        base, cell = hit[0], hit[2]
        if (value.strides != base.strides or value.shape[1:] != base.shape[1:] or
                value.shape[0] != self._cells[cell]):
            return None
        return base, cell

    def __repr__(self) -> str:
        return (f"PersistentBatch(max_num_reqs={self.max_num_reqs}, max_num_tokens="
                f"{self.max_num_tokens}, block_table_width={self.block_table_width}, "
                f"inputs={list(self.arrays)})")


class _FieldReader:
    """One field of a :class:`BoundBatch`'s metadata, read through ``attn_metadata_get`` with
    arguments made once; its numpy base view made once and sliced per build."""

    __slots__ = ("name", "_get", "_f", "_bound", "_t_addr", "_t_mem", "_head", "_dims",
                 "_dims_fmt", "_key", "_value", "_base", "_base_key", "_fkey", "_tkey", "_dkey",
                 "_data")

    def __init__(self, bound: "BoundBatch", name: str) -> None:
        self.name = name
        self._bound = bound
        # the attn_field_t the library fills, as bytes (``.raw`` compares it in one step)
        self._f = f = (ctypes.c_char * _FIELD_SIZE)()
        struct.pack_into("=Q", f, 0, _FIELD_SIZE)  # struct_size
        self._get = functools.partial(bound._get_fn, bound._out, name.encode(), ctypes.byref(f))
        self._t_addr = 0
        self._t_mem: Any = None
        self._head: Any = None
        self._dims: Any = None
        self._dims_fmt: Any = None
        self._key: Any = None
        self._value: Any = None
        self._base: Any = None
        self._base_key: Any = None
        self._fkey: Any = None  # the field's bytes at the last read (None: read it in full)
        self._tkey: Any = None  # its tensor's bytes then (None: not a tensor)
        self._dkey: Any = None  # the bytes of that tensor's shape and strides then
        self._data = 0  # the tensor's data address at the last read

    def input_rule(self) -> Optional[Tuple[np.ndarray, int]]:
        """After a read: (input view, shape cell) when the library's answer was a bound input
        of the batch exactly as bound (see PersistentBatch._input_rule), else None."""
        v = self._value
        if self._fkey is None or self._tkey is None or not isinstance(v, np.ndarray):
            return None
        return self._bound.batch._input_rule(self.name, self._data, v)

    def read(self) -> Any:
        """The field's current value: one ``attn_metadata_get`` call, then, when the library's
        answer is byte for byte the last one's (the attn_field_t, the attn_tensor_t it points
        to, the shape and strides that points to), the value made for it then."""
        err = self._get()
        if err:
            self._bound._raise(err, self.name)
        if self._f.raw == self._fkey:
            tkey = self._tkey
            if tkey is None or (self._t_mem.raw == tkey and self._dims.raw == self._dkey):
                return self._value
        return self._read_changed()

    def _read_changed(self) -> Any:
        f = self._f
        kind, tensor, int_value, float_value = _FIELD.unpack_from(f)
        fkey = f.raw
        if kind == _TENSOR and tensor:
            if tensor != self._t_addr:
                self._t_addr = tensor
                self._t_mem = (ctypes.c_char * _TENSOR_HEAD.size).from_address(tensor)
                self._head = None
            head = _TENSOR_HEAD.unpack_from(self._t_mem)
            if head != self._head and not self._rebind(head):
                self._fkey = None
                return self._bound._slow_value(self.name)
            key = self._dims_fmt.unpack_from(self._dims)
            value = self._value if key == self._key else self._slice(key)
            self._fkey, self._tkey, self._dkey = fkey, self._t_mem.raw, self._dims.raw
            return value
        if kind == _INT:
            value = int_value
        elif kind == _BOOL:
            value = bool(int_value)
        elif kind == _FLOAT:
            value = float_value
        elif kind == _NONE:
            value = None
        else:  # pragma: no cover - a NULL tensor
            self._fkey = None
            return self._bound._slow_value(self.name)
        self._key, self._value = None, value
        self._fkey, self._tkey = fkey, None
        return value

    def _rebind(self, head: Tuple[Any, ...]) -> bool:
        """A new header (first read, or the library reports other memory, dtype, device or
        shape/strides pointers): where to read the dimensions; False where numpy cannot view
        the tensor (device memory, bfloat16): such fields are read the ordinary way."""
        from .tensors import _DTYPES, _HOST_TYPES, numpy_dtype
        data, device, _, ndim, code, bits, lanes, shape_p, strides_p, offset = head
        dt = _DTYPES.get((code, bits, lanes)) or numpy_dtype(code, bits, lanes)
        self._head = None
        self._key = self._value = None
        if dt is None or device not in _HOST_TYPES or not shape_p or ndim < 1 or ndim > 4:
            return False
        # one unpack reads the shape and the strides (strides_p may be NULL: compact)
        if strides_p and 0 < strides_p - shape_p <= 256:
            gap = strides_p - shape_p - 8 * ndim
            if gap < 0:
                return False  # pragma: no cover - overlapping arrays
            self._dims_fmt = struct.Struct(f"={ndim}q{gap}x{ndim}q")
            self._dims = (ctypes.c_char * self._dims_fmt.size).from_address(shape_p)
        elif strides_p:  # far apart: read them through one buffer of each (rare)
            return False
        else:
            self._dims_fmt = struct.Struct(f"={ndim}q")
            self._dims = (ctypes.c_char * self._dims_fmt.size).from_address(shape_p)
        self._head = head
        # a base over the batch's own array when the field views an input from its start
        base = self._bound.batch._base_for(data + offset, dt) if data else None
        self._data = data + offset
        self._base = base
        self._base_key = None if base is None else (base.shape, tuple(
            s // base.itemsize for s in base.strides))
        return True

    def _slice(self, key: Tuple[int, ...]) -> Any:
        """The value for dims ``key`` (shape, then strides: what the library reported)."""
        head = self._head
        nd = head[3]
        shape, strides = key[:nd], (key[nd:] if len(key) > nd else None)
        value = None
        base = self._base
        if base is not None and strides is not None:
            bshape, bstrides = self._base_key
            if (strides == bstrides and shape[1:] == bshape[1:] and 0 <= shape[0] <= bshape[0]):
                value = base[:shape[0]]
            elif (nd == 2 and strides == bstrides and shape[0] <= bshape[0]
                  and 0 <= shape[1] <= bshape[1]):
                value = base[:shape[0], :shape[1]]
        if value is None:
            grown = self._grow(shape, strides)
            value = grown if grown is not None else _view(self._t_addr, self._bound._anchor(),
                                                          False)
        self._key, self._value = key, value
        return value

    def _grow(self, shape: Tuple[int, ...], strides: Optional[Tuple[int, ...]]) -> Any:
        """A builder-buffer field: a base view as long as the longest shape reported so far
        (sliced while later shapes fit in it)."""
        bk = self._base_key if self._base is not None else None
        if bk is not None and strides == bk[1] and shape[1:] == bk[0][1:] and shape[0] <= bk[0][0]:
            return self._base[:shape[0]]  # pragma: no cover - handled by _slice
        if strides is None or any(s <= 0 for s in strides) or not shape[0]:
            return None
        view = _view(self._t_addr, self._bound._anchor(), False)
        if view is not None and view.ndim == len(shape) and view.flags.c_contiguous:
            self._base = view
            self._base_key = (view.shape, strides)
        return view


#: the build's scalars, by name, in BoundBatch._counts
_SCALARS = {"num_reqs": 0, "num_actual_tokens": 1, "max_query_len": 2, "max_seq_len": 3}


def _scalar(bound: "BoundBatch", i: int) -> int:
    return bound._counts[i]


#: shape cell -> (index in BoundBatch._counts, what to add): the length of an input
_CELL_COUNT = {_TOK: (1, 0), _REQ1: (0, 1), _REQ: (0, 0)}


def _input_view(base: np.ndarray, bound: "BoundBatch", cell: int) -> Any:
    """trust_inputs: the input's first rows as bound (``base[:num_reqs]``, ...), the slice made
    again only when the length moves."""
    i, add = _CELL_COUNT[cell]
    last = [-1, None]

    def view() -> np.ndarray:
        k = bound._counts[i] + add
        if k != last[0]:
            last[0], last[1] = k, base[:k]
        return last[1]  # type: ignore[return-value]
    return view


class PersistentMetadata:
    """The metadata of a :class:`BoundBatch`'s builds: one object, valid until the builder's
    next build or close (as a :class:`~libattn.Metadata`; then :class:`StaleMetadata`).

    ``md[name]`` reads the field of the current build: a read-only numpy view (sliced from a
    view made once), a :class:`~libattn.TensorView` for device tensors, an int/bool/float, or
    None; KeyError for a name the backend lacks. A view shows the buffer, not a snapshot (as
    :class:`~libattn.Metadata`'s): copy what must survive the next build.
    :meth:`metadata` is the ordinary :class:`~libattn.Metadata` of the same build (``clone()``,
    ``to_dict()``, ``fields()``).
    """

    __slots__ = ("_bound", "_builder", "_generation", "_readers", "_trusted")

    def __init__(self, bound: "BoundBatch") -> None:
        self._bound = bound
        self._builder = bound.builder
        self._generation = -1
        self._readers: Dict[str, Any] = {}  # name -> its _FieldReader's read
        self._trusted: Dict[str, Any] = {}  # trust_inputs: name -> the view of its input

    def __getitem__(self, name: str) -> Any:
        if self._builder._generation != self._generation:
            raise StaleMetadata(self._bound._stale_reason())
        t = self._trusted.get(name)
        if t is not None:
            return t()
        try:
            return self._readers[name]()
        except KeyError:
            if name in self._readers:
                raise  # the library's NotFound, as KeyError
        if not isinstance(name, str):
            raise KeyError(name)
        r = _FieldReader(self._bound, name)
        value = r.read()  # KeyError for a name the backend lacks: no reader kept
        self._readers[name] = r.read
        bound = self._bound
        if bound.trust_inputs and name in bound.batch.arrays:
            # only a field named as the input (vLLM's pass-through, e.g. FlashAttentionMetadata's
            # seq_lens = common.seq_lens): others of equal bytes may be a prefix (FLASHINFER's
            # decode_block_tables is block_table[:num_decodes], all of it when all decode)
            rule = r.input_rule()
            if rule is not None:
                self._trusted[name] = _input_view(rule[0], bound, rule[1])
        elif (bound.trust_inputs and name in _SCALARS and type(value) is int
              and value == bound._counts[_SCALARS[name]]):
            # a scalar named as one of the build's (FlashAttentionMetadata.max_seq_len =
            # common.max_seq_len) that the library answered with that value
            self._trusted[name] = functools.partial(_scalar, bound, _SCALARS[name])
        return value

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def metadata(self) -> Metadata:
        """The ordinary :class:`~libattn.Metadata` of this build (stale with it)."""
        b = self._bound
        if b.builder._generation != self._generation:
            raise StaleMetadata(b._stale_reason())
        if b._native_step is not None:
            # the compiled step counts its builds as one generation while nothing else builds:
            # a generation of this result's own, so the next step makes it stale
            b.builder._generation = self._generation = b.builder._generation + 1
        return Metadata(b._lib, b._out.value, False, b.batch, builder=b.builder,
                        generation=self._generation)

    def __repr__(self) -> str:
        return f"PersistentMetadata({self._bound.builder!r}, build #{self._generation})"


class BoundBatch:
    """A :class:`~libattn.Builder` bound once to a :class:`PersistentBatch`
    (:meth:`Builder.bind`, :meth:`Library.persistent_builder`): :meth:`build` sets the batch's
    scalars and calls ``attn_build`` on the bound struct, with arguments made once."""

    def __init__(self, builder: Builder, batch: PersistentBatch,
                 trust_inputs: bool = False) -> None:
        #: serve a field that the library answered, on its first read, is a bound input exactly
        #: as bound, from the batch's array without asking again (see the README)
        self.trust_inputs = bool(trust_inputs)
        self.builder = builder
        self.batch = batch
        self._lib = lib = builder._lib
        self._out = out = _VOIDP()
        build = ctypes.CFUNCTYPE(_VOIDP)(ctypes.cast(lib.raw.attn_build, _VOIDP).value)
        self._build_fn = build
        # attn_metadata_get: a lookup, called without releasing the GIL
        self._get_fn = ctypes.PYFUNCTYPE(_VOIDP)(ctypes.cast(lib.raw.attn_metadata_get,
                                                            _VOIDP).value)
        self._struct_ref = ctypes.byref(batch._struct)
        self._handle = _VOIDP(builder.handle)
        self._call = functools.partial(build, self._handle, ctypes.c_int64(0), self._struct_ref,
                                       ctypes.c_int32(0), ctypes.byref(out), None)
        self.metadata = PersistentMetadata(self)
        self._counts_py = (0, 0, 0, 0)  # the last build's scalars (trust_inputs serves them)
        #: the compiled step (libattn._native.Step) when the library has the extension
        self._native_step: Any = None
        if lib.native is not None:
            from .builder import stream_handle
            from .native import native_module
            self._native_step = native_module().Step(  # type: ignore[union-attr]
                lib.native, builder, builder._native, self.metadata, builder.handle,
                ctypes.addressof(batch._struct), ctypes.addressof(batch._cells),
                ctypes.addressof(out), batch.max_num_reqs, batch.max_num_tokens, batch._refuse,
                self._failed, stream_handle, _step_function(self))
            self._step = self.build = self._native_step.build
        else:
            self._step = self.build = _step_function(self)  # build, its state in a closure

    @property
    def _counts(self) -> Tuple[int, int, int, int]:
        """The last build's scalars (num_reqs, num_actual_tokens, max_query_len, max_seq_len)."""
        step = self._native_step
        return step.counts if step is not None else self._counts_py

    def stepper(self, names: Iterable[str], writes: Iterable[str] = ()) -> Any:
        """The whole per-step call in one: ``run = bound.stepper(("seq_lens", "max_seq_len"))``
        then, every step, ``values = run(num_reqs, num_actual_tokens, max_query_len,
        max_seq_len)``: :meth:`build` with those scalars, then the named fields of its
        metadata (as ``metadata[name]``) in ``values``, a list made once and returned by every
        call, its items replaced where a field's value changed (a view stays the same object
        while the library reports the same memory, shape and strides).

        ``writes`` names inputs of the batch (e.g. ``("query_start_loc", "seq_lens",
        "slot_mapping")``) that each call writes first from arrays given after the scalars,
        ``run(n, t, max_q, max_s, qsl, seq, slots)``: as ``batch.query_start_loc[:n + 1] =
        qsl`` (``num_actual_tokens`` rows for token arrays, ``num_reqs`` for request arrays);
        each array must have exactly that many entries (numpy's assignment rules otherwise).

        With the compiled extension (``lib.native``) the step is one native call: the writes
        (a copy where the array is a contiguous buffer of the input's dtype), the scalars,
        ``attn_build``, every field asked of the library and compared byte for byte with its
        last answer, no Python object made while nothing changed. One stepper per bound batch:
        calling this again re-targets it (the earlier one reads the new names)."""
        names = [str(n) for n in names]
        writes = [str(w) for w in writes]
        batch = self.batch
        targets = []
        for w in writes:
            if w not in batch.arrays:
                raise KeyError(f"stepper: {w!r} is not an input of this batch (its inputs: "
                               f"{', '.join(batch.arrays)})")
            targets.append((batch.arrays[w], PERSISTENT_INPUTS[w][0]))

        def write_one(i: int, source: Any, count: int) -> None:
            targets[i][0][:count] = source

        md = self.metadata
        if self._native_step is not None:
            step = self._native_step
            spec = []
            for a, cell in targets:
                host = isinstance(a, np.ndarray) and a.flags.c_contiguous and a.dtype.kind in "ib"
                spec.append((a.ctypes.data if host else 0, a.itemsize if host else 0,
                             a.dtype.kind if host else "", cell))
            step.set_writes(spec, write_one)
            step.set_fields(names, md.__getitem__)
            return step
        build = self.build
        values: list = [None] * len(names)
        indexed = list(enumerate(names))
        nwrites = len(targets)
        cells = [cell for _, cell in targets]

        def run(num_reqs: int, num_actual_tokens: int, max_query_len: int, max_seq_len: int,
                *sources: Any) -> list:
            if len(sources) != nwrites:
                raise TypeError("the stepper takes one array per input named in `writes`")
            if sources:
                if not (isinstance(num_reqs, int) and isinstance(num_actual_tokens, int)):
                    batch._refuse(num_reqs, num_actual_tokens)  # TypeError: must be ints
                if not (0 <= num_reqs <= batch.max_num_reqs and
                        0 <= num_actual_tokens <= batch.max_num_tokens):
                    batch._refuse(num_reqs, num_actual_tokens)
                counts = (num_actual_tokens, num_reqs + 1, num_reqs)
                for i, src in enumerate(sources):
                    write_one(i, src, counts[cells[i]])
            m = build(num_reqs, num_actual_tokens, max_query_len, max_seq_len)
            for i, name in indexed:
                values[i] = m[name]
            return values
        return run

    def build(self, num_reqs: int, num_actual_tokens: int, max_query_len: int,
              max_seq_len: int, common_prefix_len: int = 0, fast_build: bool = False,
              stream: Any = None) -> PersistentMetadata:
        """Sets the batch's scalars and builds (vLLM's ``build(common_prefix_len,
        common_attn_metadata, fast_build)`` on the batch's first rows); returns
        :attr:`metadata`, whose fields are then this build's."""
        return self._step(num_reqs, num_actual_tokens, max_query_len, max_seq_len,
                          common_prefix_len, fast_build, stream)

    def _general(self, common_prefix_len: int, fast_build: bool, stream: Any) -> Any:
        """attn_build with arguments made now (a cascade prefix, fast_build, a stream)."""
        from .builder import stream_handle
        return self._build_fn(self._handle, ctypes.c_int64(common_prefix_len), self._struct_ref,
                              ctypes.c_int32(int(bool(fast_build))), ctypes.byref(self._out),
                              None if stream is None else _VOIDP(stream_handle(stream)))

    def _failed(self) -> None:
        """A failed build: the batch's shapes and scalars are the failed build's, no longer
        those of the metadata; it goes stale (the library keeps its previous metadata, which
        the ordinary API would still read)."""
        self.metadata._generation = -2
        step = getattr(self, "_native_step", None)
        if step is not None:
            step.forget_generation()

    # ---- helpers of the readers -----------------------------------------------------------
    def _anchor(self) -> Any:
        return (self.builder._native, self.batch)

    def _raise(self, err: int, name: str) -> None:
        from .errors import NotFound
        try:
            self._lib.check(err)
        except NotFound as e:
            raise KeyError(name) from e

    def _slow_value(self, name: str) -> Any:
        md = self.metadata.metadata()
        return md[name]

    def _stale_reason(self) -> str:
        b = self.builder
        if b._handle is None:
            return ("the builder of this metadata is closed; keep results with "
                    ".metadata().clone() before closing it")
        if self.metadata._generation == -2:
            return ("the last build of this bound batch failed (its scalars and shapes are "
                    "set); build again")
        if self.metadata._generation < 0:
            return "nothing has been built with this bound batch yet"
        return ("this metadata belongs to a builder that has built again since (its buffers "
                "were reused); keep results with .metadata().clone()")


def _step_function(bound: BoundBatch) -> Any:
    """BoundBatch.build as a closure over what it uses (a per-step cost: a closure variable is
    cheaper than an attribute): PersistentBatch.set_counts inline, attn_build with arguments
    made once, the generation of the builder and of the metadata moved on."""
    builder, md, batch, lib = bound.builder, bound.metadata, bound.batch, bound._lib
    call, cells, cs = bound._call, batch._cells, batch._struct
    max_reqs, max_tokens = batch.max_num_reqs, batch.max_num_tokens
    pack_cells, pack_counts, at = _CELLS.pack_into, _COUNTS.pack_into, _COUNTS_AT

    def build(num_reqs: int, num_actual_tokens: int, max_query_len: int, max_seq_len: int,
              common_prefix_len: int = 0, fast_build: bool = False,
              stream: Any = None) -> PersistentMetadata:
        if builder._handle is None:
            raise ValueError("builder is closed")
        if not (0 <= num_reqs <= max_reqs and 0 <= num_actual_tokens <= max_tokens):
            batch._refuse(num_reqs, num_actual_tokens)
        try:
            pack_cells(cells, 0, num_actual_tokens, num_reqs + 1, num_reqs)
            pack_counts(cs, at, num_reqs, num_actual_tokens, max_query_len, max_seq_len)
        except struct.error:
            bound._failed()
            batch.set_counts(num_reqs, num_actual_tokens, max_query_len, max_seq_len)
            raise  # pragma: no cover - set_counts raised the TypeError
        bound._counts_py = (num_reqs, num_actual_tokens, max_query_len, max_seq_len)
        if common_prefix_len or fast_build or stream is not None:
            err = bound._general(common_prefix_len, fast_build, stream)
        else:
            err = call()
        if err:
            bound._failed()
            lib.check(err)
        builder._generation = md._generation = builder._generation + 1
        return md

    build.__doc__ = BoundBatch.build.__doc__
    return build


def bind(builder: Builder, batch: PersistentBatch, trust_inputs: bool = False) -> BoundBatch:
    """:meth:`Builder.bind`."""
    if not isinstance(batch, PersistentBatch):
        raise TypeError(f"bind() takes a PersistentBatch, not {type(batch).__name__}")
    return BoundBatch(builder, batch, trust_inputs)


def persistent_builder(lib: "Library", backend: str, spec: KvCacheSpec, config: BuilderConfig,
                       batch: PersistentBatch, validate: int = ValidateMode.HOST,
                       trust_inputs: bool = False) -> BoundBatch:
    """:meth:`Library.persistent_builder`: a builder made with ``config`` at the validation
    level ``validate`` (passed through as ``attn_builder_config_t.validate``: HOST by default;
    a level the library does not know is refused by ``attn_builder_create``), bound to
    ``batch``. Close it with ``.builder.close()`` (or ``with``)."""
    cfg = dataclasses.replace(config, validate=int(validate))
    return BoundBatch(Builder(lib, backend, spec, cfg), batch, trust_inputs)
