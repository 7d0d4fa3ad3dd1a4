""":class:`CommonMetadata`: a batch as vLLM's ``CommonAttentionMetadata`` describes it."""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Dict, Optional

import numpy as np

from ._generated import FIELDS
from .structs import attn_common_metadata_t
from .tensors import ArrayLike, TensorArg, TensorFields, tensor_arg, to_numpy

__all__ = ["CommonMetadata"]

_Ref = ctypes.POINTER(attn_common_metadata_t)
# num_reqs, num_actual_tokens, max_query_len, max_seq_len: consecutive int64 fields, one pack
_COUNTS = struct.Struct("=4q")
_COUNTS_AT = attn_common_metadata_t.num_reqs.offset
assert [getattr(attn_common_metadata_t, n).offset for n in
        ("num_actual_tokens", "max_query_len", "max_seq_len")] == [_COUNTS_AT + 8 * i
                                                                    for i in (1, 2, 3)]
#: the tensor fields of the struct (from its field list: src/core/abi_fields.h)
_ABSENT: Dict[str, Any] = {name: None for name, kind, _, _ in FIELDS["attn_common_metadata_t"]
                           if kind == "TENSOR"}
#: the dtype a list becomes for a field: the list's element type (int32 for every other field)
_LIST_DTYPES: Dict[str, Any] = {
    name: {"I64": np.int64, "BOOL": np.bool_}[args[0]]
    for name, kind, args, _ in FIELDS["attn_common_metadata_t"]
    if kind == "TENSOR" and args[0] != "I32"}
#: the keyword argument of a struct field, where they differ (named by the input checks' errors)
_LABELS: Dict[str, str] = {"block_table_tensor": "block_table"}


def _host(fields: TensorFields, name: str) -> Optional[np.ndarray]:
    """The values of a tensor readable on the host (its ``*_cpu`` mirror first), as a numpy
    array viewing them."""
    for n in (name + "_cpu", name):
        source = fields.sources.get(n)
        if source is None:
            continue
        if n not in fields._slow:  # a numpy array of a native dtype: itself
            if source.ndim == 1:
                return source
            continue
        a = fields._slow[n]
        if a.on_host and a.struct.ndim == 1:
            try:
                return to_numpy(a.struct, a)
            except TypeError:  # a dtype numpy lacks: the library will name it
                pass
    return None


def _max(a: np.ndarray) -> int:
    """``int(a.max())``; argmax and item cost a third of max's ufunc reduction for the integer
    arrays of a batch (other dtypes and empty arrays: max itself, its result or its error)."""
    if a.dtype.kind in "iu" and a.size:
        return int(a.item(a.argmax()))
    return int(a.max())


def _doc_ranges(ranges: Any) -> Any:
    """vLLM 0.33's ``mm_req_doc_ranges`` (``{request: [(start, end), ...]}``) as the ABI's
    (num_ranges, 3) int32 rows (request, start, end), requests in increasing order, each
    request's ranges in the dict's order; an array or a tensor is passed as it is."""
    if ranges is None or not isinstance(ranges, dict):
        return ranges
    rows = [(int(req), int(start), int(end))
            for req in sorted(ranges) for start, end in (ranges[req] or ())]
    return np.array(rows, dtype=np.int32).reshape(len(rows), 3)


def _length(fields: TensorFields, name: str) -> Optional[int]:
    """The first dimension of an input as given (None: absent or 0-d)."""
    src = fields._slow.get(name) if name in fields._slow else fields.sources.get(name)
    shape = getattr(src, "shape", None)
    return int(shape[0]) if shape else None


def _check_request_counts(fields: TensorFields) -> None:
    """Without an explicit num_reqs the request count is seq_lens's length, and the library
    then wants num_reqs + 1 query offsets: when the two disagree, name both inputs (the library
    alone would blame query_start_loc even when seq_lens is the short one)."""
    from .enums import Status
    from .errors import InvalidArgument
    n_seq, n_qsl = _length(fields, "seq_lens"), _length(fields, "query_start_loc")
    if n_seq is not None and n_qsl is not None and n_qsl != n_seq + 1:
        raise InvalidArgument(
            Status.INVALID_ARGUMENT,
            f"query_start_loc has {n_qsl} entries ({n_qsl - 1} requests) but seq_lens has "
            f"{n_seq} (one per request): one of them has the wrong length")


class CommonMetadata:
    """The input of a build: ``attn_common_metadata_t`` filled from arrays.

    Tensors are numpy arrays, objects with ``__dlpack__`` (torch/cupy/jax, on any device), or
    lists (int32; ``slot_mapping`` int64). The scalars default to what the host arrays say, as
    vLLM's ``CommonAttentionMetadata`` would hold them: ``num_reqs = len(seq_lens)``,
    ``num_actual_tokens = query_start_loc[-1]``, ``max_query_len`` and ``max_seq_len`` from the
    lengths; pass them explicitly for device tensors without ``*_cpu`` mirrors.

    Every other tensor field of ``attn_common_metadata_t`` is a keyword argument of the same
    name (the fields of its list, src/core/abi_fields.h: a field added to the header is one
    here), e.g. the host mirrors ``query_start_loc_cpu`` and ``seq_lens_cpu``, vLLM 0.33.0's
    ``seq_lens_cpu_upper_bound`` (0.33's host lengths, an upper bound; ``max_seq_len`` defaults
    to its maximum), ``positions`` (int64), ``replay_start`` (ABI 1.7, the sparse SWA builders'
    build() keyword). ``causal`` may be a per-request int32 tensor (vLLM 0.33's, or
    ``causal_per_request``), ``max_logits_per_req`` is None by default, and
    ``mm_req_doc_ranges`` is vLLM's dict ``{request: [(start, end), ...]}`` or the ABI's (n, 3)
    int32 rows.

    vLLM's own name ``block_table_tensor`` is accepted for ``block_table``. Without
    ``num_reqs`` the request count is ``len(seq_lens)``; a ``query_start_loc`` that is not one
    longer is refused naming both (InvalidArgument).

    >>> batch = CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
    ...                        block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33])

    The object keeps every array alive; metadata built from it keeps it alive in turn.

    A runtime makes one per step: numpy arrays of a native int/uint/float/bool dtype are
    converted without ``__array_interface__`` and without a ctypes object each
    (:class:`~libattn.tensors.TensorFields`); giving the four scalars saves their inference
    (numpy reductions: about 40% of the cost).
    """

    struct: attn_common_metadata_t  #: the C struct (with the records of numpy inputs after it)
    _fields: Optional[TensorFields]  #: the inputs (None: a struct the library filled)
    owner: Any = None  #: metadata whose buffers this batch views (Metadata.to_common)
    _ref: Any = None  #: POINTER to struct, made on first use of ``ref``

    def __init__(self, query_start_loc: ArrayLike, seq_lens: ArrayLike,
                 block_table: Optional[ArrayLike] = None, slot_mapping: Optional[ArrayLike] = None,
                 *, num_reqs: Optional[int] = None, num_actual_tokens: Optional[int] = None,
                 max_query_len: Optional[int] = None, max_seq_len: Optional[int] = None,
                 causal: Any = True, num_logits_indices: int = 0,
                 causal_per_request: Optional[ArrayLike] = None,
                 max_logits_per_req: Optional[int] = None, mm_req_doc_ranges: Any = None,
                 block_table_tensor: Optional[ArrayLike] = None,
                 **tensors: Optional[ArrayLike]) -> None:
        # vLLM's name of the block table (CommonAttentionMetadata.block_table_tensor)
        if block_table_tensor is not None:
            if block_table is not None:
                raise TypeError("block_table and block_table_tensor (vLLM's name of the same "
                                "input) are both given")
            block_table = block_table_tensor
        # vLLM 0.33 passes a per-request int32 tensor as `causal` itself
        if causal is not None and not isinstance(causal, (bool, int, np.bool_, np.integer)):
            if causal_per_request is not None:
                raise TypeError("causal is a tensor and causal_per_request is given too")
            causal_per_request, causal = causal, True
        values: Dict[str, Any] = {**_ABSENT, **tensors}  # every tensor field, in struct order
        if len(values) != len(_ABSENT):
            unknown = next(name for name in tensors if name not in _ABSENT)
            raise TypeError(f"CommonMetadata() got an unexpected keyword argument {unknown!r}")
        values["query_start_loc"] = query_start_loc
        values["seq_lens"] = seq_lens
        values["block_table_tensor"] = block_table
        values["slot_mapping"] = slot_mapping
        values["causal_per_request"] = causal_per_request
        values["mm_req_doc_ranges"] = _doc_ranges(mm_req_doc_ranges)
        if query_start_loc is None or seq_lens is None:
            tensor_arg(None)  # raises what a list of None does, as these two always did
        fields = TensorFields(attn_common_metadata_t, values, _LIST_DTYPES, labels=_LABELS)
        if num_reqs is None:
            _check_request_counts(fields)
            seq_lens = fields.sources["seq_lens"]
            if "seq_lens" in fields._slow:
                shape = fields._slow["seq_lens"].shape
                num_reqs = shape[0] if shape else 0
            else:
                num_reqs = seq_lens.shape[0] if seq_lens.ndim else 0
        if num_actual_tokens is None or max_query_len is None:
            qsl = _host(fields, "query_start_loc")
            if num_actual_tokens is None:
                num_actual_tokens = (int(qsl.item(num_reqs))
                                     if qsl is not None and len(qsl) > num_reqs else 0)
            if max_query_len is None:
                if qsl is not None and num_reqs:
                    q = qsl if len(qsl) == num_reqs + 1 else qsl[: num_reqs + 1]
                    max_query_len = (_max(np.subtract(q[1:], q[:-1]))
                                     if q.dtype.kind in "iu" and len(q) > 1
                                     else int(np.diff(q).max()))
                else:
                    max_query_len = 0
        if max_seq_len is None:
            # vLLM 0.33's runner takes the bound's maximum (>= the exact lengths')
            seq = _host(fields, "seq_lens_cpu_upper_bound")
            if seq is None:
                seq = _host(fields, "seq_lens")
            if seq is not None and num_reqs:
                max_seq_len = _max(seq if len(seq) == num_reqs else seq[:num_reqs])
            else:
                max_seq_len = 0
        self._set(fields, num_reqs, num_actual_tokens, max_query_len, max_seq_len, causal,
                  num_logits_indices)
        fields.struct.max_logits_per_req = -1 if max_logits_per_req is None else int(
            max_logits_per_req)

    def _set(self, fields: TensorFields, num_reqs: int, num_actual_tokens: int,
             max_query_len: int, max_seq_len: int, causal: bool, num_logits_indices: int) -> None:
        s = fields.struct  # struct_size and the pointers are set, every other field is 0
        _COUNTS.pack_into(s, _COUNTS_AT, int(num_reqs), int(num_actual_tokens),
                          int(max_query_len), int(max_seq_len))
        s.causal = 1 if causal else 0
        if num_logits_indices:
            s.num_logits_indices = int(num_logits_indices)
        self._fields = fields
        self.struct = s

    @classmethod
    def _from_struct(cls, s: attn_common_metadata_t, owner: Any) -> "CommonMetadata":
        """A batch viewing a struct the library filled (attn_metadata_to_common); ``owner`` is
        kept alive."""
        self = cls.__new__(cls)
        self._fields = None
        self.owner = owner
        self.struct = s
        return self

    @property
    def ref(self) -> Any:
        """``POINTER(attn_common_metadata_t)`` to ``struct`` (for ``library.raw`` calls; the
        wrappers pass ``struct`` itself, which ctypes takes by reference)."""
        if self._ref is None:
            self._ref = _Ref(self.struct)
        return self._ref

    @property
    def args(self) -> Dict[str, Optional[TensorArg]]:
        """The :class:`~libattn.tensors.TensorArg` of every tensor given (name -> view)."""
        return self._fields.args() if self._fields is not None else {}

    # the scalars, for reading
    num_reqs = property(lambda self: int(self.struct.num_reqs))
    num_actual_tokens = property(lambda self: int(self.struct.num_actual_tokens))
    max_query_len = property(lambda self: int(self.struct.max_query_len))
    max_seq_len = property(lambda self: int(self.struct.max_seq_len))

    def __repr__(self) -> str:
        return (f"CommonMetadata(num_reqs={self.num_reqs}, num_actual_tokens="
                f"{self.num_actual_tokens}, max_query_len={self.max_query_len}, "
                f"max_seq_len={self.max_seq_len})")
