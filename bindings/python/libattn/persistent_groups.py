"""The persistent grouped step (issue 35): a hybrid model's KV cache groups (full attention,
sliding window, Mamba, GDN, ...) built from one :class:`~libattn.PersistentBatch` with one
``attn_build_groups`` call per step.

>>> batch = PersistentBatch(config, block_table_width=256)              # once
>>> step = PersistentGroupStep([full, sliding, mamba, gdn], batch)      # once
>>> batch.query_start_loc[:n + 1] = ...; ...                            # every step
>>> full_md, sliding_md, mamba_md, gdn_md = step.build(n, t, max_query_len, max_seq_len)
>>> full_md["seq_lens"], mamba_md["state_indices_tensor"]

Each builder is bound to the batch as by :meth:`Builder.bind` (its :class:`BoundBatch` is
``step.bounds[i]``); a build writes the scalars once, calls ``attn_build_groups`` with
arguments made once (the batch converted and validated once for every group), and returns the
same list of :class:`~libattn.PersistentMetadata` every time, ``[i]`` that builder's, whose
fields are then this build's (views made once and re-sliced, as a BoundBatch's). With the
compiled extension the build is one native call that makes no Python object while nothing else
builds on the builders; without it, the ctypes layer does the same with arguments made once.
"""
from __future__ import annotations

import ctypes
import functools
import struct
from typing import Any, List, Optional, Sequence

from .builder import Builder, stream_handle
from .persistent import (BoundBatch, PersistentBatch, PersistentMetadata, _CELLS, _COUNTS,
                         _COUNTS_AT, _VOIDP)

__all__ = ["PersistentGroupStep"]


class PersistentGroupStep:
    """``builders`` (distinct, open, on one device) bound once to ``batch``; :meth:`build` is
    the per-step call. Closing a builder ends the step's use ("builders[i] is closed").

    An error of the grouped build names ``builders[i]`` (the library's message); every group's
    metadata is then stale until the next build succeeds. ``trust_inputs`` is not offered here:
    every field read asks the library (the readers of an untrusted :class:`BoundBatch`)."""

    def __init__(self, builders: Sequence[Builder], batch: PersistentBatch) -> None:
        if not isinstance(batch, PersistentBatch):
            raise TypeError(f"PersistentGroupStep takes a PersistentBatch, not "
                            f"{type(batch).__name__}")
        builders = list(builders)
        if not builders:
            raise ValueError("PersistentGroupStep needs at least one builder")
        for i, b in enumerate(builders):
            if not isinstance(b, Builder):
                raise TypeError(f"builders[{i}] is a {type(b).__name__}, not a libattn.Builder")
            if b._handle is None:
                raise ValueError(f"builders[{i}] is closed")
            if b._lib is not builders[0]._lib:
                raise ValueError(f"builders[{i}] belongs to another Library than builders[0]")
        self.batch = batch
        #: each builder's BoundBatch on ``batch`` (its ``metadata`` is ``build()``'s ``[i]``)
        self.bounds: List[BoundBatch] = [BoundBatch(b, batch) for b in builders]
        self.builders = builders
        self._lib = lib = builders[0]._lib
        groups = lib.optional_function("attn_build_groups")  # Unsupported before ABI 1.7
        self._groups_fn = ctypes.CFUNCTYPE(_VOIDP)(ctypes.cast(groups, _VOIDP).value)
        n = len(builders)
        self._handles = (_VOIDP * n)(*[b.handle for b in builders])
        self._results = (_VOIDP * n)()
        self._natives = [b._native for b in builders]  # the handles live as long as this step
        self._values: List[PersistentMetadata] = [bb.metadata for bb in self.bounds]
        self._counts_py = (0, 0, 0, 0)
        fallback = _group_step_function(self)
        self._native_step: Any = None
        if lib.native is not None and lib.native.has_build_groups:
            from .native import native_module
            self._native_step = native_module().GroupStep(  # type: ignore[union-attr]
                lib.native, builders, self._natives, self._values,
                [b.handle for b in builders], ctypes.addressof(batch._struct),
                ctypes.addressof(batch._cells), [ctypes.addressof(bb._out) for bb in self.bounds],
                batch.max_num_reqs, batch.max_num_tokens, batch._refuse, self._failed,
                stream_handle, fallback)
            self.build = self._native_step.build  # type: ignore[method-assign]
        else:
            self.build = fallback  # type: ignore[method-assign]

    def build(self, num_reqs: int, num_actual_tokens: int, max_query_len: int,
              max_seq_len: int, common_prefix_lens: Optional[Sequence[int]] = None,
              fast_build: bool = False, stream: Any = None) -> List[PersistentMetadata]:
        """Sets the batch's scalars and builds every group with one ``attn_build_groups``
        (``common_prefix_lens``: one per builder, None for 0); returns the list of each
        builder's :class:`PersistentMetadata` (the same list object every time), ``[i]`` equal
        field for field to ``builders[i].build(batch.common, common_prefix_lens[i],
        fast_build)``."""
        raise NotImplementedError  # pragma: no cover - replaced per instance in __init__

    @property
    def counts(self) -> tuple:
        """The last build's scalars (num_reqs, num_actual_tokens, max_query_len,
        max_seq_len)."""
        step = self._native_step
        return step.counts if step is not None else self._counts_py

    def _failed(self) -> None:
        """A refused grouped build: every group's metadata goes stale (see BoundBatch._failed)."""
        for bb in self.bounds:
            bb._failed()

    def __repr__(self) -> str:
        names = ", ".join(repr(b) for b in self.builders)
        return f"PersistentGroupStep([{names}], {self.batch!r})"


def _group_step_function(step: PersistentGroupStep) -> Any:
    """The ctypes layer's PersistentGroupStep.build, its state in a closure (as
    persistent._step_function): the scalars packed, attn_build_groups with arguments made once,
    each result published to its BoundBatch's c_void_p, the generations moved on."""
    batch, lib, builders = step.batch, step._lib, step.builders
    mds = step._values
    outs = [bb._out for bb in step.bounds]
    results = step._results
    n = len(builders)
    call = functools.partial(step._groups_fn, step._handles, ctypes.c_size_t(n), None,
                             ctypes.byref(batch._struct), ctypes.c_int32(0), results, None)
    cells, cs = batch._cells, batch._struct
    max_reqs, max_tokens = batch.max_num_reqs, batch.max_num_tokens
    pack_cells, pack_counts, at = _CELLS.pack_into, _COUNTS.pack_into, _COUNTS_AT
    indexed = list(zip(range(n), builders, mds, outs))

    def build(num_reqs: int, num_actual_tokens: int, max_query_len: int, max_seq_len: int,
              common_prefix_lens: Optional[Sequence[int]] = None, fast_build: bool = False,
              stream: Any = None) -> List[PersistentMetadata]:
        for i, b, _, _ in indexed:
            if b._handle is None:
                raise ValueError(f"builders[{i}] is closed")
        if not (0 <= num_reqs <= max_reqs and 0 <= num_actual_tokens <= max_tokens):
            batch._refuse(num_reqs, num_actual_tokens)
        try:
            pack_cells(cells, 0, num_actual_tokens, num_reqs + 1, num_reqs)
            pack_counts(cs, at, num_reqs, num_actual_tokens, max_query_len, max_seq_len)
        except struct.error:
            step._failed()
            batch.set_counts(num_reqs, num_actual_tokens, max_query_len, max_seq_len)
            raise  # pragma: no cover - set_counts raised the TypeError
        step._counts_py = (num_reqs, num_actual_tokens, max_query_len, max_seq_len)
        if common_prefix_lens is None and not fast_build and stream is None:
            err = call()
        else:
            prefixes = None
            if common_prefix_lens is not None:
                if len(common_prefix_lens) != n:
                    raise ValueError(f"common_prefix_lens has {len(common_prefix_lens)} entries "
                                     f"for {n} builders")
                prefixes = (ctypes.c_int64 * n)(*common_prefix_lens)
            s = stream_handle(stream)
            err = step._groups_fn(step._handles, ctypes.c_size_t(n), prefixes,
                                  ctypes.byref(cs), ctypes.c_int32(int(bool(fast_build))),
                                  results, None if s is None else _VOIDP(s))
        if err:
            step._failed()
            lib.check(err)
        for i, b, md, out in indexed:
            out.value = results[i]
            b._generation = md._generation = b._generation + 1
        return mds

    build.__doc__ = PersistentGroupStep.build.__doc__
    return build
