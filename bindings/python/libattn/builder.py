""":class:`Builder`: one backend's metadata builder (``attn_builder_t``)."""
from __future__ import annotations

import ctypes
import functools
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .common_metadata import CommonMetadata
from .config import BuilderConfig, KvCacheSpec
from .enums import NO_REORDER, CudagraphSupport
from .metadata import Metadata, NativeHandle
from .structs import attn_cascade_query_t, new
from .tensors import ArrayLike, tensor_arg

if TYPE_CHECKING:
    from .library import Library

__all__ = ["Builder", "build_groups", "stream_handle"]


def stream_handle(stream: Any) -> Optional[int]:
    """A ``cudaStream_t`` from None (the default stream), an int, or an object with
    ``cuda_stream`` (torch.cuda.Stream) or ``ptr`` (cupy)."""
    if stream is None:
        return None
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr)) or None
    return int(stream) or None


class Builder:
    """A builder for one backend (``attn_builder_create``), freed by :meth:`close`, by ``with``,
    or when garbage collected.

    >>> with Builder(lib, "FLASH_ATTN", KvCacheSpec(16, 8, 128),
    ...              BuilderConfig(256, 8192, 4096, 32)) as b:
    ...     md = b.build(batch)

    A build's :class:`~libattn.Metadata` is valid until the next build on this builder (then
    :class:`~libattn.StaleMetadata`). One builder must not build on two threads at once (the
    library answers :class:`~libattn.Busy`); queries are safe from any thread.

    :meth:`close` ends the builder's use at once; its buffers are freed then, or when the last
    array or TensorView export viewing them goes.
    """

    _native: Optional[NativeHandle] = None  #: the attn_builder_t*, shared with views

    def __init__(self, lib: "Library", backend: str, spec: KvCacheSpec,
                 config: BuilderConfig) -> None:
        self._lib = lib
        self._handle: Optional[int] = None
        self._generation = 0  # moves on with every result and at close: older results are stale
        self.spec = spec
        self.config = config
        cfg = config.to_struct()
        out = ctypes.c_void_p()
        lib.check(lib.raw.attn_builder_create(_name(backend), ctypes.byref(spec.to_struct()),
                                              cfg.ref, ctypes.byref(out)))
        self._native = NativeHandle(lib.raw.attn_builder_destroy, out.value)
        self._handle = out.value
        if lib.native is not None:
            # libattn._native's build (issue 35): attn_build and this Metadata in one native
            # call for the common case (no prefix, no fast_build, no stream); the rest is the
            # method below
            from .native import native_module
            self.build = native_module().Build(  # type: ignore[method-assign,union-attr]
                lib.native, self, Metadata, lib,
                functools.partial(Builder.build, self)).call()

    # ---- lifetime -------------------------------------------------------------------------
    @property
    def handle(self) -> int:
        """The ``attn_builder_t*`` (for ``library.raw`` calls)."""
        if self._handle is None:
            raise ValueError("builder is closed")
        return self._handle

    def close(self) -> None:
        """Ends the builder (idempotent): its metadata becomes stale, ``attn_builder_destroy``
        runs now, or when the last array or TensorView export viewing its buffers goes."""
        if self._handle is not None:
            self._generation += 1
            self._handle = None
            self._native = None  # the views hold the handle until they go

    def __enter__(self) -> "Builder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- queries --------------------------------------------------------------------------
    @property
    def backend_name(self) -> str:
        """``attn_builder_backend_name``."""
        return self._lib.raw.attn_builder_backend_name(self.handle).decode()

    @property
    def cudagraph_support(self) -> CudagraphSupport:
        """``attn_builder_cudagraph_support``: this builder's level."""
        v = ctypes.c_int32()
        self._lib.check(self._lib.raw.attn_builder_cudagraph_support(self.handle, ctypes.byref(v)))
        return CudagraphSupport(v.value)

    @property
    def varlen_cudagraph_max_query_len(self) -> Optional[int]:
        """``attn_builder_varlen_cudagraph_max_query_len`` (ABI 1.4): vLLM 0.33's
        ``get_varlen_cudagraph_max_query_len``, None where vLLM returns None."""
        v, has = ctypes.c_int32(), ctypes.c_int32()
        self._lib.check(self._lib.optional_function("attn_builder_varlen_cudagraph_max_query_len")(
            self.handle, ctypes.byref(v), ctypes.byref(has)))
        return int(v.value) if has.value else None

    @property
    def reorder_batch_threshold(self) -> Optional[int]:
        """``attn_builder_reorder_batch_threshold``: vLLM's ``reorder_batch_threshold``, None
        for builders that do not reorder."""
        v = ctypes.c_int32()
        self._lib.check(self._lib.raw.attn_builder_reorder_batch_threshold(self.handle,
                                                                            ctypes.byref(v)))
        return None if v.value == NO_REORDER else int(v.value)

    @property
    def supports_update_block_table(self) -> bool:
        """``attn_builder_supports_update_block_table``."""
        v = ctypes.c_int32()
        self._lib.check(self._lib.raw.attn_builder_supports_update_block_table(self.handle,
                                                                                ctypes.byref(v)))
        return bool(v.value)

    @property
    def supports_draft_decode_metadata_update(self) -> bool:
        """``attn_builder_supports_draft_decode_metadata_update`` (ABI 1.5): vLLM 0.33's
        ``supports_draft_decode_metadata_update``."""
        v = ctypes.c_int32()
        self._lib.check(self._lib.optional_function(
            "attn_builder_supports_draft_decode_metadata_update")(self.handle, ctypes.byref(v)))
        return bool(v.value)

    def use_cascade_attention(self, common_prefix_len: int, query_lens: Sequence[int],
                              num_query_heads: int, num_kv_heads: int, *, use_alibi: bool = False,
                              use_sliding_window: bool = False, use_local_attention: bool = False,
                              num_sms: int = 132, dcp_world_size: int = 1) -> bool:
        """``attn_use_cascade_attention``: vLLM's heuristic for this builder."""
        lens = (ctypes.c_int32 * max(len(query_lens), 1))(*query_lens)
        q = new(attn_cascade_query_t, common_prefix_len=common_prefix_len,
                query_lens=ctypes.cast(lens, ctypes.POINTER(ctypes.c_int32)),
                num_reqs=len(query_lens), num_query_heads=num_query_heads,
                num_kv_heads=num_kv_heads, use_alibi=int(use_alibi),
                use_sliding_window=int(use_sliding_window),
                use_local_attention=int(use_local_attention), num_sms=num_sms,
                dcp_world_size=dcp_world_size)
        v = ctypes.c_int32()
        self._lib.check(self._lib.raw.attn_use_cascade_attention(self.handle, ctypes.byref(q),
                                                                 ctypes.byref(v)))
        return bool(v.value)

    # ---- builds ---------------------------------------------------------------------------
    def _result(self, out: ctypes.c_void_p, keep: Any, source: Optional[Metadata] = None
                ) -> Metadata:
        # close() moves the generation on too, so a closed builder's results are stale
        self._generation = g = self._generation + 1
        return Metadata(self._lib, out.value, False, keep, builder=self, generation=g,
                        source=source)

    def build(self, common: CommonMetadata, common_prefix_len: int = 0, fast_build: bool = False,
              stream: Any = None) -> Metadata:
        """``attn_build``: the metadata of a batch (vLLM's ``build``)."""
        h = self._handle
        if h is None:
            raise ValueError("builder is closed")
        out = ctypes.c_void_p()
        # common.struct goes by reference (ctypes' byref), cheaper than a pointer object
        err = self._lib.raw.attn_build(h, common_prefix_len, common.struct, int(fast_build),
                                       ctypes.byref(out),
                                       None if stream is None else stream_handle(stream))
        if err:
            self._lib.check(err)
        return self._result(out, common)

    def build_for_cudagraph_capture(self, common: CommonMetadata, stream: Any = None) -> Metadata:
        """``attn_build_for_cudagraph_capture``: a build on a batch of the captured size."""
        out = ctypes.c_void_p()
        self._lib.check(self._lib.raw.attn_build_for_cudagraph_capture(
            self.handle, common.struct, ctypes.byref(out), stream_handle(stream)))
        return self._result(out, common)

    def build_for_drafting(self, common: CommonMetadata, draft_index: int,
                           stream: Any = None) -> Metadata:
        """``attn_build_for_drafting``: a build for draft step ``draft_index``."""
        out = ctypes.c_void_p()
        self._lib.check(self._lib.raw.attn_build_for_drafting(
            self.handle, common.struct, draft_index, ctypes.byref(out), stream_handle(stream)))
        return self._result(out, common)

    def update_block_table(self, metadata: Metadata, block_table: ArrayLike,
                           slot_mapping: ArrayLike, stream: Any = None) -> Metadata:
        """``attn_update_block_table``: ``metadata`` (from this builder, another builder of the
        backend, or a clone) with another KV cache group's block table and slot mapping, without
        a rebuild.

        The result shares every other field with ``metadata``: it is stale once this builder
        builds again, and also once ``metadata`` is (its builder built again or was closed, or
        the clone was closed); its views keep ``metadata``'s memory alive."""
        bt = tensor_arg(block_table, name="block_table")
        sm = tensor_arg(slot_mapping, "int64", "slot_mapping")
        src = metadata.handle  # StaleMetadata / ValueError for a stale or closed source
        out = ctypes.c_void_p()
        self._lib.check(self._lib.raw.attn_update_block_table(
            self.handle, src, bt.ref, sm.ref, ctypes.byref(out), stream_handle(stream)))
        # this builder's own result: replaced in place (its inputs stay viewed); any other
        # source's fields are viewed where they are
        own = metadata._builder is self
        return self._result(out, (metadata._anchor(), bt, sm), None if own else metadata)

    def update_draft_decode_metadata(self, metadata: Metadata, stream: Any = None) -> None:
        """``attn_update_draft_decode_metadata`` (ABI 1.5): vLLM 0.33's
        ``update_draft_decode_metadata(metadata)``, in place, after the speculator advanced the
        persistent inputs of a draft decode build (``seq_lens``, ``query_start_loc``, ...).
        Raises Unsupported where ``supports_draft_decode_metadata_update`` is False."""
        self._lib.check(self._lib.optional_function("attn_update_draft_decode_metadata")(
            self.handle, metadata.handle, stream_handle(stream)))

    def bind(self, batch: Any, trust_inputs: bool = False) -> Any:
        """A :class:`~libattn.persistent.BoundBatch`: this builder bound once to a
        :class:`~libattn.PersistentBatch`, whose ``build(num_reqs, num_actual_tokens,
        max_query_len, max_seq_len)`` is the per-step call (issue 18); ``trust_inputs``: see
        the binding's README (Persistent batch)."""
        from .persistent import bind
        return bind(self, batch, trust_inputs)

    def __repr__(self) -> str:
        if self._handle is None:
            return "Builder(closed)"
        return f"Builder({self.backend_name!r})"


def _name(backend: str) -> bytes:
    b = backend.encode()
    if b"\0" in b:
        from .errors import InvalidArgument
        raise InvalidArgument(1, f"backend name contains a NUL byte at {b.index(0)}")
    return b


def build_groups(builders: Sequence[Builder], common: CommonMetadata,
                 common_prefix_lens: Optional[Sequence[int]] = None, fast_build: bool = False,
                 stream: Any = None) -> list:
    """``attn_build_groups`` (ABI 1.7): every builder's :meth:`Builder.build` of one batch in
    one call (a hybrid model's KV cache groups), the batch converted and validated once. Returns
    one :class:`~libattn.Metadata` per builder, in order, each equal to that builder's own
    ``build(common, common_prefix_lens[i], fast_build, stream)``. An error names
    ``builders[i]`` (a closed one: ValueError "builders[i] is closed"); on failure nothing is
    returned (see docs/architecture.md, "Grouped builds"). With ``libattn._native`` and no
    prefix, fast_build or stream, it is one native call. The per-step form over a persistent
    batch: :class:`~libattn.PersistentGroupStep`."""
    builders = list(builders)
    if not builders:
        raise ValueError("build_groups needs at least one builder")
    lib = builders[0]._lib
    native = lib.native
    if (native is not None and common_prefix_lens is None and not fast_build and stream is None
            and native.has_build_groups):
        # libattn._native: attn_build_groups and the Metadata objects in one native call
        return native.build_groups(builders, common, Metadata)
    n = len(builders)
    handles = (ctypes.c_void_p * n)(*[_group_member(b, i) for i, b in enumerate(builders)])
    prefixes = None
    if common_prefix_lens is not None:
        if len(common_prefix_lens) != n:
            raise ValueError(f"common_prefix_lens has {len(common_prefix_lens)} entries for "
                             f"{n} builders")
        prefixes = (ctypes.c_int64 * n)(*common_prefix_lens)
    out = (ctypes.c_void_p * n)()
    lib.check(lib.optional_function("attn_build_groups")(
        handles, n, prefixes, common.struct, int(fast_build), out, stream_handle(stream)))
    return [b._result(ctypes.c_void_p(out[i]), common) for i, b in enumerate(builders)]


def _group_member(builder: Builder, i: int) -> int:
    """builders[i]'s handle; ValueError naming it when it is closed."""
    if builder._handle is None:
        raise ValueError(f"builders[{i}] is closed")
    return builder._handle
