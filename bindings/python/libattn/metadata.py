""":class:`Metadata`: a build's result as a read-only mapping from vLLM's field names to values."""
from __future__ import annotations

import ctypes
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Union

import numpy as np

from .common_metadata import CommonMetadata
from .dlpack import TensorView
from .enums import FieldKind
from .structs import attn_common_metadata_t, attn_field_t, attn_tensor_t, new
from .tensors import _view, host_view

if TYPE_CHECKING:
    from .library import Library

__all__ = ["Metadata", "StaleMetadata", "Value", "NativeHandle"]

Value = Union[np.ndarray, TensorView, int, bool, float, None]

_FIELD_SIZE = ctypes.sizeof(attn_field_t)


def _field_reader() -> "struct.Struct":
    """Reads (kind, tensor address, int_value, float_value) of an ``attn_field_t`` at once."""
    fmt, pos = "=", 0
    for name, code in (("kind", "i"), ("tensor", "Q"), ("int_value", "q"), ("float_value", "d")):
        off = getattr(attn_field_t, name).offset
        assert off >= pos, "attn_field_t's fields moved"
        fmt += f"{off - pos}x{code}"
        pos = off + struct.calcsize("=" + code)
    return struct.Struct(fmt)


_FIELD = _field_reader()
_NONE, _TENSOR, _INT, _FLOAT, _BOOL = (int(FieldKind.NONE), int(FieldKind.TENSOR),
                                       int(FieldKind.INT), int(FieldKind.FLOAT),
                                       int(FieldKind.BOOL))


class StaleMetadata(RuntimeError):
    """A builder's metadata used after that builder built again (which reuses its buffers) or
    was closed; an ``update_block_table`` result used after its source metadata went so."""


class NativeHandle:
    """An ``attn_builder_t*`` or owned ``attn_metadata_t*``, destroyed when the last reference
    to this object goes (in CPython: at once). :meth:`Builder.close` and :meth:`Metadata.close`
    drop theirs; every view of the memory (numpy arrays, DLPack exports, batches of
    :meth:`Metadata.to_common`) holds one, so closing while views are alive defers the free to
    the last of them instead of leaving them to read freed memory."""

    __slots__ = ("handle", "_destroy", "__weakref__")

    def __init__(self, destroy: Callable[[int], None], handle: int) -> None:
        self.handle: Optional[int] = handle
        self._destroy = destroy

    def __del__(self) -> None:
        h, self.handle = self.handle, None
        if h:
            try:
                self._destroy(h)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


class Metadata(Mapping):
    """Metadata: ``md["query_start_loc"]`` is a numpy array (a zero-copy, read-only view of
    host memory), a :class:`~libattn.TensorView` (device memory, or dtypes numpy lacks such as
    bfloat16; export it with DLPack), an ``int``, ``bool`` or ``float`` for scalars, or ``None``.

    A builder's result belongs to the builder and is valid until its next build (or
    ``update_block_table``) or its ``close()``: using it afterwards raises
    :class:`StaleMetadata`; :meth:`clone` keeps a copy (tensors of the builder's buffers copied,
    views of the inputs still views). An ``update_block_table`` result is valid while its
    builder has not built again and its source metadata is valid. Metadata returned by the batch
    utilities (kind ``"common"``) and clones are owned: freed with :meth:`close` or when garbage
    collected.

    Arrays and :class:`~libattn.TensorView` objects taken out of it view the memory: they keep
    it allocated (inputs, the builder's buffers, an owned metadata's copies) for as long as they
    live, even past ``close()`` of the builder or of the metadata; they do not follow later
    builds into other values, but see them: the builder reuses its buffers (take
    ``np.array(md[name])`` or :meth:`clone` to keep values across builds). A TensorView refuses
    to export (``__dlpack__``) once its metadata is stale.
    """

    _native: Optional[NativeHandle] = None  #: an owned handle's (None: a builder's result)
    _builder: Any = None  #: the Builder of a build's result
    _generation = 0  #: the builder's generation the result belongs to
    _source: Optional["Metadata"] = None  #: update_block_table's source, from another builder
    _is_current: Optional[Callable[[], bool]] = None  #: an extra validity check (raw users)

    def __init__(self, lib: "Library", handle: int, owned: bool, keep: Any,
                 is_current: Optional[Callable[[], bool]] = None, *, builder: Any = None,
                 generation: int = 0, source: Optional["Metadata"] = None) -> None:
        self._lib = lib
        self._handle: Optional[int] = handle
        self._keep = keep  # what the tensors view besides the builder / the owned handle
        if owned:
            self._native = NativeHandle(lib.raw.attn_metadata_destroy, handle)
        if builder is not None:
            self._builder = builder
            self._generation = generation
        if source is not None:
            self._source = source
        if is_current is not None:
            self._is_current = is_current

    # ---- lifetime -------------------------------------------------------------------------
    def _h(self) -> int:
        h = self._handle
        if h is None:
            raise ValueError("metadata is closed")
        b = self._builder
        if b is not None and (b._generation != self._generation or self._source is not None
                              and not self._source._valid()):
            raise StaleMetadata(self._stale_reason())
        if self._is_current is not None and not self._is_current():
            raise StaleMetadata(self._stale_reason())
        return h

    def _valid(self) -> bool:
        """Whether it may be read (no exception)."""
        if self._handle is None:
            return False
        b = self._builder
        if b is not None and (b._generation != self._generation or self._source is not None
                              and not self._source._valid()):
            return False
        return self._is_current is None or self._is_current()

    def _stale_reason(self) -> str:
        b = self._builder
        if self._handle is None:
            return "metadata is closed"
        if b is not None and b._generation != self._generation:
            if b._handle is None:
                return ("the builder of this metadata is closed; keep results with .clone() "
                        "before closing it")
            return ("this metadata belongs to a builder that has built again since (its "
                    "buffers were reused); keep results with .clone()")
        src = self._source
        if src is not None and not src._valid():
            return ("this update_block_table result views its source metadata, which " +
                    ("is closed" if src._handle is None else "is stale: " + src._stale_reason()))
        return "this metadata is no longer valid"

    def _anchor(self) -> Any:
        """What a view of its tensors keeps alive: the builder's (or its own) native handle and
        the inputs. Call after :meth:`_h` (the handle is then open)."""
        b = self._builder
        return (b._native if b is not None else self._native, self._keep)

    def close(self) -> None:
        """Makes it unusable (idempotent). Owned metadata is freed now, or when the last array
        or TensorView viewing it goes; a builder's result has nothing of its own to free."""
        self._handle = None
        self._native = None

    def __enter__(self) -> "Metadata":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def handle(self) -> int:
        """The ``attn_metadata_t*`` (for ``library.raw`` calls)."""
        return self._h()

    # ---- fields ---------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """``attn_metadata_kind``: the backend (and wrappers) that built it, or ``"common"``."""
        return self._lib.raw.attn_metadata_kind(self._h()).decode()

    def __len__(self) -> int:
        return int(self._lib.raw.attn_metadata_field_count(self._h()))

    def _field(self, index: int) -> attn_field_t:
        f = attn_field_t(_FIELD_SIZE)  # struct_size
        self._lib.check(self._lib.raw.attn_metadata_field(self._h(), index, ctypes.byref(f)))
        return f

    def fields(self) -> List[str]:
        """Every field name, in the backend's order (vLLM's dataclass order)."""
        return [self._field(i).name.decode() for i in range(len(self))]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.fields()

    def raw_field(self, name: str) -> attn_field_t:
        """``attn_metadata_get``: the ``attn_field_t`` of ``name`` (NotFound when absent)."""
        f = attn_field_t(_FIELD_SIZE)  # struct_size
        self._lib.check(self._lib.raw.attn_metadata_get(self._h(), name.encode(), f))
        return f

    def __getitem__(self, name: str) -> Value:
        # the hot path of a runtime (every field, every step): one ctypes call, one unpack
        f = attn_field_t(_FIELD_SIZE)  # struct_size
        err = self._lib.raw.attn_metadata_get(self._h(), name.encode(), f)
        if err:
            from .errors import NotFound
            try:
                self._lib.check(err)
            except NotFound as e:
                raise KeyError(name) from e
        kind, tensor, int_value, float_value = _FIELD.unpack_from(f)
        if kind == _TENSOR and tensor:  # the common case, inline
            b = self._builder  # the view holds what it views (_anchor, inline)
            view = _view(tensor, (b._native if b is not None else self._native, self._keep),
                         False)
            if view is not None:
                return view
        return self._value(f)

    def _value(self, f: attn_field_t) -> Value:
        kind, tensor, int_value, float_value = _FIELD.unpack_from(f)
        if kind == _NONE:
            return None
        if kind == _INT:
            return int_value
        if kind == _BOOL:
            return bool(int_value)
        if kind == _FLOAT:
            return float_value
        if not tensor:
            raise ValueError("NULL pointer access")  # as ctypes says for f.tensor.contents
        anchor = self._anchor()
        view = host_view(tensor, anchor)
        return view if view is not None else TensorView(attn_tensor_t.from_address(tensor),
                                                        anchor, self)

    def tensor_view(self, name: str) -> TensorView:
        """``attn_metadata_get_tensor``: a tensor field as a :class:`~libattn.TensorView`, for
        DLPack export (``torch.from_dlpack(md.tensor_view("seq_lens"))``)."""
        p = ctypes.POINTER(attn_tensor_t)()
        self._lib.check(self._lib.raw.attn_metadata_get_tensor(self._h(), name.encode(),
                                                                ctypes.byref(p)))
        return TensorView(p.contents, self._anchor(), self)

    def get_int(self, name: str) -> int:
        """``attn_metadata_get_int``: an int or bool field (InvalidArgument for other kinds)."""
        v = ctypes.c_int64()
        self._lib.check(self._lib.raw.attn_metadata_get_int(self._h(), name.encode(),
                                                             ctypes.byref(v)))
        return int(v.value)

    def to_dict(self) -> dict:
        """Every field as a plain dict (arrays copied), for printing or pickling."""
        out = {}
        for name in self.fields():
            v = self[name]
            out[name] = np.array(v) if isinstance(v, np.ndarray) else v
        return out

    def mla_context_chunks(self) -> Optional[list]:
        """An MLA build's chunked context as vLLM 0.33's ``chunked_context.chunks``: a list of
        one dict per ``ContextChunk`` (see :func:`libattn.mla.context_chunks`), or None when
        vLLM's ``chunked_context`` is None."""
        from .mla import context_chunks
        return context_chunks(self)

    # ---- copies and conversions -------------------------------------------------------------
    def clone(self) -> "Metadata":
        """``attn_metadata_clone``: an owned copy that survives the builder's next build (and its
        close). Tensors that viewed inputs, or the memory of an ``update_block_table`` source
        that was a clone, still view them: the clone keeps them alive."""
        out = ctypes.c_void_p()
        self._lib.check(self._lib.raw.attn_metadata_clone(self._h(), ctypes.byref(out)))
        return Metadata(self._lib, out.value, True, self._keep)

    copy = clone

    def to_common(self) -> CommonMetadata:
        """``attn_metadata_to_common``: metadata of kind "common" as the input of a build."""
        s = new(attn_common_metadata_t)
        self._lib.check(self._lib.raw.attn_metadata_to_common(self._h(), ctypes.byref(s)))
        return CommonMetadata._from_struct(s, self._anchor())  # it views this handle's tensors

    def __repr__(self) -> str:
        if self._handle is None:
            return "Metadata(closed)"
        try:
            return f"Metadata(kind={self.kind!r}, fields={len(self)})"
        except StaleMetadata:
            return "Metadata(stale)"
