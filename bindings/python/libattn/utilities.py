"""vLLM's batch utilities (``attn_<vLLM name>``), mixed into :class:`~libattn.Library`.

Outputs are numpy arrays the binding allocates on the host, unless ``out=`` (or an ``outputs``
mapping) passes the caller's tensors, of any device, which are written in place. Utilities that
make a new batch return :class:`~libattn.Metadata` of kind ``"common"``; its ``to_common()`` is
the input of a build.

Speed (issue 7): the per-step utilities pass structs by reference and numpy arrays by address
(private ctypes prototypes taking integers, ``lib.raw``'s typed ones left as they are), fill out
structs with :class:`~libattn.tensors.TensorFields`, and let callers pass preallocated outputs
(``outputs=`` of make_local_attention_virtual_batches, ``out_query_start_loc_cpu=`` of
make_kv_sharing_fast_prefill_common_attn_metadata), so a step need not allocate them.
"""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from .builder import stream_handle
from .common_metadata import CommonMetadata, _doc_ranges
from .metadata import Metadata
from .structs import (attn_batch_split_t, attn_common_metadata_t, attn_conv1d_info_t,
                      attn_local_attention_out_t,
                      attn_slot_mapping_args_t, attn_split_options_t, attn_tensor_t,
                      attn_ubatch_out_t, attn_ubatch_slice_t, new)
from .enums import Status
from .errors import InvalidArgument
from .tensors import (ArrayLike, TensorFields, array_address, optional_arg, output_arg,
                      tensor_arg, to_numpy)

__all__ = ["UtilitiesMixin", "BatchSplit", "UbatchSlice", "LocalAttentionBatches",
           "LocalAttentionOutputs", "Conv1dMetadata", "PagedKvMetadata"]

DCP_ALL_RANKS = -1


class BatchSplit(NamedTuple):
    """Request and token counts of a split (``attn_batch_split_t``)."""
    num_decodes: int
    num_prefills: int
    num_decode_tokens: int
    num_prefill_tokens: int
    num_extends: int = 0
    num_extend_tokens: int = 0


class UbatchSlice(NamedTuple):
    """A micro-batch (``attn_ubatch_slice_t``): end-exclusive request and token ranges."""
    request_start: int
    request_stop: int
    token_start: int
    token_stop: int


class PagedKvMetadata(NamedTuple):
    """FlashInfer's paged KV layout."""
    indptr: np.ndarray
    indices: np.ndarray
    last_page_len: np.ndarray


class Conv1dMetadata(NamedTuple):
    """compute_causal_conv1d_metadata's outputs."""
    batch_ptr: np.ndarray
    token_chunk_offset_ptr: np.ndarray
    nums: np.ndarray
    tot: int
    num_programs: int


class LocalAttentionBatches(NamedTuple):
    """make_local_attention_virtual_batches' result: the new batch and its arrays."""
    metadata: Metadata  #: kind "common", num_reqs = V
    query_start_loc: np.ndarray
    seq_lens: np.ndarray
    num_computed_tokens: Optional[np.ndarray]  #: None: LocalAttentionOutputs without it
    block_table: np.ndarray
    virtual_req: np.ndarray
    virtual_block_start: np.ndarray


_LOCAL_OUTPUTS = ("query_start_loc", "query_start_loc_cpu", "seq_lens", "seq_lens_cpu",
                  "num_computed_tokens_cpu", "block_table", "virtual_req", "virtual_block_start")


def _check_local_names(names: Any) -> None:
    for name in names:
        if name not in _LOCAL_OUTPUTS:
            raise TypeError(f"outputs: unknown name {name!r}; expected some of "
                            f"{list(_LOCAL_OUTPUTS)}")


class LocalAttentionOutputs:
    """Caller tensors for make_local_attention_virtual_batches' outputs, converted once: a
    runtime that writes the same buffers every step passes this as ``outputs=`` and pays no
    conversion per call.

    Keyword arguments are ``attn_local_attention_out_t``'s names (``query_start_loc``,
    ``query_start_loc_cpu``, ``seq_lens``, ``seq_lens_cpu``, ``block_table``, ``virtual_req``,
    ``virtual_block_start``: required; ``num_computed_tokens_cpu``: optional, None in the
    result without it), int32 tensors of any device (host for the ``*_cpu`` ones) with at least
    V (+1) rows for every batch they will serve. The object keeps them alive (numpy refuses to
    resize an array so referenced); each call overwrites them, so a previous step's result
    then shows the new values."""

    def __init__(self, **tensors: Any) -> None:
        _check_local_names(tensors)
        missing = [n for n in _LOCAL_OUTPUTS if n not in tensors and
                   n != "num_computed_tokens_cpu"]
        if missing:
            raise TypeError(f"LocalAttentionOutputs: missing {missing}")
        self._fields = TensorFields(attn_local_attention_out_t, tensors)
        #: name -> the tensor written (lists: the array made of them)
        self.tensors: Dict[str, Any] = dict(self._fields.sources)


_INT32 = np.dtype(np.int32)
_CONTIGUOUS_I32 = (4,)
_SPLIT_SIZE = ctypes.sizeof(attn_batch_split_t)
# attn_batch_split_t's six counts (int64, consecutive after struct_size)
_SPLIT = struct.Struct(f"={attn_batch_split_t.num_decodes.offset}x6q")
# the C functions the wrappers call with numpy arrays' addresses (ints) for pointer arguments
_BY_ADDRESS = {
    "attn_reorder_batch_to_split_decodes_and_prefills":
        (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32,
                           ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]),
}


def _i32(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` as a contiguous, aligned, native int32 array: the array itself when it is one,
    else a converted copy (other integer dtypes, byte orders, layouts, a misaligned array)."""
    if isinstance(values, np.ndarray) and values.strides == _CONTIGUOUS_I32 and \
            values.dtype == _INT32 and not array_address(values) & 3:
        return values  # what the conversions below would return: the array itself
    src = np.asarray(values)
    if src.dtype.kind in "iu" and src.dtype.itemsize >= 4 and src.size and \
            (src.dtype != _INT32) and (src.min() < -2**31 or src.max() > 2**31 - 1):
        bad = int(np.flatnonzero((src.ravel() < -2**31) | (src.ravel() > 2**31 - 1))[0])
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f"{name}[{bad}]={int(src.ravel()[bad])} does not fit int32")
    a = np.require(np.asarray(values, dtype=np.int32), np.int32, "CA")
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    return a


def _p(a: np.ndarray, ctype: Any = ctypes.c_int32) -> Any:
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def _slice(s: attn_ubatch_slice_t) -> UbatchSlice:
    return UbatchSlice(s.request_start, s.request_stop, s.token_start, s.token_stop)


class UtilitiesMixin:
    """Batch utilities of :class:`~libattn.Library`."""

    def _by_address(self, name: str) -> Any:
        """A private prototype of ``name`` (:data:`_BY_ADDRESS`) taking addresses as ints."""
        fns: Dict[str, Any] = self.__dict__.setdefault("_address_fns", {})
        fn = fns.get(name)
        if fn is None:
            fn = self._dll[name]  # type: ignore[attr-defined]  # a new function object
            fn.restype, fn.argtypes = _BY_ADDRESS[name]
            fns[name] = fn
        return fn

    def _common_result(self, handle: int, keep: Any) -> Metadata:
        return Metadata(self, handle, True, keep)

    def common_metadata_unpadded(self, common: CommonMetadata, num_actual_tokens: int,
                                 num_actual_reqs: int) -> Metadata:
        """``attn_common_metadata_unpadded``: the batch cut to its real requests and tokens."""
        out = ctypes.c_void_p()
        self.check(self.raw.attn_common_metadata_unpadded(common.struct, num_actual_tokens,
                                                          num_actual_reqs, ctypes.byref(out)))
        return self._common_result(out.value, common)

    def split_decodes_and_prefills(self, common: CommonMetadata, decode_threshold: int = 1,
                                   require_uniform: bool = False) -> BatchSplit:
        """``attn_split_decodes_and_prefills`` on a batch ordered decodes first."""
        s = attn_batch_split_t(_SPLIT_SIZE)  # struct_size
        err = self.raw.attn_split_decodes_and_prefills(common.struct, decode_threshold,
                                                       int(require_uniform), s)
        if err:
            self.check(err)
        decodes, _, prefills, decode_tokens, _, prefill_tokens = _SPLIT.unpack_from(s)
        return BatchSplit(decodes, prefills, decode_tokens, prefill_tokens)

    def split_decodes_and_prefills_ex(self, common: CommonMetadata, decode_threshold: int = 1,
                                      require_uniform: bool = False,
                                      treat_short_extends_as_decodes: bool = True) -> BatchSplit:
        """``attn_split_decodes_and_prefills_ex`` (ABI 1.4): vLLM 0.33's split with every
        keyword argument; ``treat_short_extends_as_decodes=False`` needs ``is_prefilling``."""
        opts = new(attn_split_options_t, decode_threshold=decode_threshold,
                   require_uniform=int(require_uniform),
                   treat_short_extends_as_decodes=int(treat_short_extends_as_decodes))
        s = new(attn_batch_split_t)
        self.check(self.optional_function("attn_split_decodes_and_prefills_ex")(  # type: ignore[attr-defined]
            common.struct, ctypes.byref(opts), ctypes.byref(s)))
        return BatchSplit(s.num_decodes, s.num_prefills, s.num_decode_tokens, s.num_prefill_tokens)

    def split_decodes_prefills_and_extends(self, common: CommonMetadata,
                                           decode_threshold: int = 1) -> BatchSplit:
        """``attn_split_decodes_prefills_and_extends`` on a batch ordered decode, extend,
        prefill."""
        s = attn_batch_split_t(_SPLIT_SIZE)  # struct_size
        self.check(self.raw.attn_split_decodes_prefills_and_extends(common.struct,
                                                                    decode_threshold, s))
        return BatchSplit(s.num_decodes, s.num_prefills, s.num_decode_tokens, s.num_prefill_tokens,
                          s.num_extends, s.num_extend_tokens)

    def reorder_batch_to_split_decodes_and_prefills(
            self, num_scheduled_tokens: ArrayLike, num_computed_tokens: ArrayLike,
            decode_threshold: int = 1) -> List[Tuple[int, int]]:
        """``attn_reorder_batch_to_split_decodes_and_prefills``: the ``swap_states(src, dst)``
        calls, in order, that order the batch decode -> extend -> prefill (empty: ordered)."""
        sched = _i32(num_scheduled_tokens, "num_scheduled_tokens")
        comp = _i32(num_computed_tokens, "num_computed_tokens")
        n = len(sched)
        if len(comp) != n:  # the C function reads num_reqs entries of each
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"num_scheduled_tokens and num_computed_tokens have {n} and "
                                  f"{len(comp)} entries; they must be equal")
        swaps = np.empty(2 * max(n, 1), dtype=np.int32)  # only the first 2 * count are read
        count = ctypes.c_int64()
        err = self._by_address("attn_reorder_batch_to_split_decodes_and_prefills")(
            array_address(sched), array_address(comp), n, decode_threshold,
            array_address(swaps), max(n, 1), ctypes.byref(count))
        if err:
            self.check(err)
        if not count.value:
            return []
        pairs = swaps[: 2 * count.value].tolist()
        return list(zip(pairs[0::2], pairs[1::2]))

    def reorder_batch_to_split_decodes_and_prefills_v2(
            self, num_scheduled_tokens: ArrayLike, num_computed_tokens: ArrayLike,
            num_prompt_tokens: ArrayLike, decode_threshold: int = 1) -> List[Tuple[int, int]]:
        """``attn_reorder_batch_to_split_decodes_and_prefills_v2`` (ABI 1.4): the
        ``swap_states(src, dst)`` calls, in order, of vLLM 0.33's four-region reorder (decode ->
        short extend -> long extend -> prefill); empty when the batch is ordered."""
        sched = _i32(num_scheduled_tokens, "num_scheduled_tokens")
        comp = _i32(num_computed_tokens, "num_computed_tokens")
        prompt = _i32(num_prompt_tokens, "num_prompt_tokens")
        n = len(sched)
        if len(comp) != n or len(prompt) != n:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"num_scheduled_tokens, num_computed_tokens and "
                                  f"num_prompt_tokens have {n}, {len(comp)} and {len(prompt)} "
                                  f"entries; they must be equal")
        swaps = np.empty(2 * max(n, 1), dtype=np.int32)
        count = ctypes.c_int64()
        self.check(self.optional_function(  # type: ignore[attr-defined]
            "attn_reorder_batch_to_split_decodes_and_prefills_v2")(
            _p(sched), _p(comp), _p(prompt), n, decode_threshold, _p(swaps), max(n, 1),
            ctypes.byref(count)))
        pairs = swaps[: 2 * count.value].tolist()
        return list(zip(pairs[0::2], pairs[1::2]))

    def split_prefill_chunks(self, seq_lens: ArrayLike, workspace_size: int,
                             request_offset: int = 0) -> List[Tuple[int, int]]:
        """``attn_split_prefill_chunks``: greedy (start, end) request ranges."""
        seq = _i32(seq_lens, "seq_lens")
        bounds = np.zeros(2 * max(len(seq), 1), dtype=np.int64)
        count = ctypes.c_int64()
        self.check(self.raw.attn_split_prefill_chunks(
            _p(seq), len(seq), workspace_size, request_offset, _p(bounds, ctypes.c_int64),
            max(len(seq), 1), ctypes.byref(count)))
        return [(int(bounds[2 * k]), int(bounds[2 * k + 1])) for k in range(count.value)]

    def get_dcp_local_seq_lens(self, seq_lens: ArrayLike, dcp_size: int, dcp_rank: Optional[int] = None,
                               cp_kv_cache_interleave_size: int = 1, out: Any = None,
                               stream: Any = None) -> Any:
        """``attn_get_dcp_local_seq_lens``: (n,) for one rank, (n, dcp_size) for all
        (``dcp_rank=None``; (n, 1) when dcp_size is 1, as vLLM 0.33)."""
        seq = tensor_arg(seq_lens, name="seq_lens")
        n = seq.shape[0]
        rank = DCP_ALL_RANKS if dcp_rank is None else dcp_rank
        if out is None:
            out = np.zeros((n,) if rank != DCP_ALL_RANKS else (n, dcp_size), dtype=np.int32)
        o = output_arg(out, name="out")
        self.check(self.raw.attn_get_dcp_local_seq_lens(seq.struct, dcp_size, rank,
                                                        cp_kv_cache_interleave_size, o.struct,
                                                        stream_handle(stream)))
        return out

    def reshape_query_for_spec_decode(self, query: ArrayLike, batch_size: int) -> Any:
        """``attn_reshape_query_for_spec_decode``: a (batch, tokens/batch, heads, dim) view of a
        (tokens, heads, dim) query, sharing its memory (numpy for host memory)."""
        from .dlpack import TensorView
        q = tensor_arg(query, np.float32, "query")
        out = attn_tensor_t()
        shape, strides = (ctypes.c_int64 * 4)(), (ctypes.c_int64 * 4)()
        self.check(self.raw.attn_reshape_query_for_spec_decode(q.struct, batch_size,
                                                               ctypes.byref(out), shape, strides))
        keep = (q, shape, strides)
        try:
            return to_numpy(out, keep)
        except TypeError:
            return TensorView(out, keep)

    def compute_slot_mapping(self, query_start_loc: ArrayLike, positions: ArrayLike,
                             block_table: ArrayLike, block_size: int, *,
                             num_reqs: Optional[int] = None, out: Any = None,
                             query_start_loc_cpu: Optional[ArrayLike] = None,
                             positions_cpu: Optional[ArrayLike] = None, dcp_world_size: int = 1,
                             dcp_rank: int = 0, cp_kv_cache_interleave_size: int = 1,
                             stream: Any = None) -> Any:
        """``attn_compute_slot_mapping`` (block_table.py): int64 slots of every scheduled token;
        ``out`` (default: as many as positions) is padded with PAD_SLOT_ID."""
        qsl = tensor_arg(query_start_loc, name="query_start_loc")
        pos = tensor_arg(positions, np.int64, "positions")
        bt = tensor_arg(block_table, name="block_table")
        if out is None:
            out = np.zeros(pos.shape[0], dtype=np.int64)
        o = output_arg(out, np.int64, "out")
        qc = optional_arg(query_start_loc_cpu, name="query_start_loc_cpu")
        pc = optional_arg(positions_cpu, np.int64, "positions_cpu")
        a = new(attn_slot_mapping_args_t, query_start_loc=qsl.ref,
                num_reqs=qsl.shape[0] - 1 if num_reqs is None else num_reqs, positions=pos.ref,
                block_table=bt.ref, block_size=block_size, dcp_world_size=dcp_world_size,
                dcp_rank=dcp_rank, cp_kv_cache_interleave_size=cp_kv_cache_interleave_size,
                slot_mapping=o.ref)
        if qc is not None:
            a.query_start_loc_cpu = qc.ref
        if pc is not None:
            a.positions_cpu = pc.ref
        self.check(self.raw.attn_compute_slot_mapping(ctypes.byref(a), stream_handle(stream)))
        return out

    def compute_flashinfer_kv_metadata(self, seq_lens: ArrayLike, block_table: ArrayLike,
                                       page_size: int) -> PagedKvMetadata:
        """``attn_compute_flashinfer_kv_metadata`` on host arrays: indptr, indices,
        last_page_len."""
        seq = _i32(seq_lens, "seq_lens")
        bt = tensor_arg(block_table, name="block_table")
        n = len(seq)
        pages = int(sum(-(-int(s) // page_size) for s in seq)) if page_size > 0 else 0
        indptr = np.zeros(n + 1, dtype=np.int32)
        indices = np.zeros(max(pages, 1), dtype=np.int32)
        last = np.zeros(max(n, 1), dtype=np.int32)
        total = ctypes.c_int64()
        targs = [tensor_arg(a) for a in (seq, indptr, indices, last)]
        self.check(self.raw.attn_compute_flashinfer_kv_metadata(
            targs[0].struct, None, bt.struct, page_size, targs[1].struct, targs[2].struct,
            targs[3].struct,
            ctypes.byref(total), None))
        return PagedKvMetadata(indptr, indices[: total.value], last[:n])

    def compute_causal_conv1d_metadata(self, query_start_loc_p: ArrayLike) -> Conv1dMetadata:
        """``attn_compute_causal_conv1d_metadata`` (BLOCK_M = 8) for the prefill requests'
        query_start_loc, on the host."""
        qsl = _i32(query_start_loc_p, "query_start_loc_p")
        n = max(len(qsl) - 1, 0)
        tot = int(sum(-(-int(qsl[i + 1] - qsl[i]) // 8) for i in range(n)))
        programs = max(1024, tot) * 2
        batch = np.zeros(programs, dtype=np.int32)
        offset = np.zeros(programs, dtype=np.int32)
        nums = np.zeros(max(n, 1), dtype=np.int32)
        info = new(attn_conv1d_info_t)
        q, b, o, m = (tensor_arg(a) for a in (qsl, batch, offset, nums))
        self.check(self.raw.attn_compute_causal_conv1d_metadata(q.struct, q.struct, b.struct,
                                                                o.struct, m.struct,
                                                                ctypes.byref(info), None))
        return Conv1dMetadata(batch[: info.num_programs], offset[: info.num_programs], nums[:n],
                              int(info.tot), int(info.num_programs))

    def make_kv_sharing_fast_prefill_common_attn_metadata(
            self, common: CommonMetadata, logits_indices_cpu: Optional[ArrayLike] = None,
            out_query_start_loc: Any = None, stream: Any = None, *,
            out_query_start_loc_cpu: Any = None) -> Metadata:
        """``attn_make_kv_sharing_fast_prefill_common_attn_metadata``: the batch of the tokens
        whose logits are needed (``common`` carries logits_indices_padded).

        ``out_query_start_loc`` (any device) and ``out_query_start_loc_cpu`` (host), each of at
        least ``num_reqs + 1`` int32, receive the new query_start_loc; the binding allocates
        what is not given (one host array serving both)."""
        if out_query_start_loc_cpu is None:
            out_query_start_loc_cpu = np.zeros(common.num_reqs + 1, dtype=np.int32)
        li = optional_arg(logits_indices_cpu, name="logits_indices_cpu")
        oc = output_arg(out_query_start_loc_cpu, name="out_query_start_loc_cpu")
        o = oc if out_query_start_loc is None else output_arg(out_query_start_loc,
                                                              name="out_query_start_loc")
        if out_query_start_loc is None:
            out_query_start_loc = out_query_start_loc_cpu
        out = ctypes.c_void_p()
        err = self.raw.attn_make_kv_sharing_fast_prefill_common_attn_metadata(
            common.struct, None if li is None else li.struct, o.struct, oc.struct,
            ctypes.byref(out), None if stream is None else stream_handle(stream))
        if err:
            self.check(err)
        return Metadata(self, out.value, True, (common, li, o, oc))

    def make_kv_sharing_fast_prefill_common_attn_metadata_ex(
            self, common: CommonMetadata, logits_indices_cpu: Optional[ArrayLike] = None,
            out_query_start_loc: Any = None, stream: Any = None, *,
            out_query_start_loc_cpu: Any = None) -> CommonMetadata:
        """``attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex`` (ABI 1.7): the batch as
        vLLM returns it. Where vLLM returns its argument (max_query_len == 1, or no logits
        indices) this returns ``common`` itself, the same object, and the library allocates
        nothing; otherwise a new :class:`CommonMetadata` (the batch of the tokens whose logits
        are needed) that keeps the library's result and the outputs alive as long as it lives.
        Either way the answer is a build's input. Outputs as for
        :meth:`make_kv_sharing_fast_prefill_common_attn_metadata` (required by the library even
        for a pass-through; the binding allocates what is not given)."""
        if out_query_start_loc_cpu is None:
            out_query_start_loc_cpu = np.zeros(common.num_reqs + 1, dtype=np.int32)
        li = optional_arg(logits_indices_cpu, name="logits_indices_cpu")
        oc = output_arg(out_query_start_loc_cpu, name="out_query_start_loc_cpu")
        o = oc if out_query_start_loc is None else output_arg(out_query_start_loc,
                                                              name="out_query_start_loc")
        batch = new(attn_common_metadata_t)
        owned = ctypes.c_void_p()
        err = self.optional_function("attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex")(
            common.struct, None if li is None else li.struct, o.struct, oc.struct,
            ctypes.byref(batch), ctypes.byref(owned),
            None if stream is None else stream_handle(stream))
        if err:
            self.check(err)
        if not owned.value:
            return common  # passed through: vLLM's `return common_attn_metadata`
        md = Metadata(self, owned.value, True, (common, li, o, oc))
        return CommonMetadata._from_struct(batch, md._anchor())

    def local_attention_num_virtual_batches(self, attn_chunk_size: int,
                                            common: CommonMetadata) -> int:
        """``attn_local_attention_num_virtual_batches``: V, to size the outputs."""
        v = ctypes.c_int64()
        err = self.raw.attn_local_attention_num_virtual_batches(attn_chunk_size, common.struct,
                                                                ctypes.byref(v))
        if err:
            self.check(err)
        return v.value

    def make_local_attention_virtual_batches(
            self, attn_chunk_size: int, common: CommonMetadata, block_size: int,
            outputs: Union[Mapping[str, Any], LocalAttentionOutputs, None] = None
    ) -> LocalAttentionBatches:
        """``attn_make_local_attention_virtual_batches`` on the host: every request split into
        its local-attention chunks, with the block-table remap.

        ``outputs``: the caller's tensors to write, as a :class:`LocalAttentionOutputs`
        (converted once, the cheapest for a runtime reusing its buffers every step) or a
        mapping of the same names to int32 tensors (converted each call); the result holds
        them as given. Without ``outputs`` (or for the names a mapping lacks) the binding
        allocates exact-size host arrays (``attn_chunk_size // block_size`` table columns)."""
        if isinstance(outputs, LocalAttentionOutputs):
            outs = outputs._fields
        else:
            tensors = dict(outputs) if outputs else {}
            _check_local_names(tensors)
            if len(tensors) < len(_LOCAL_OUTPUTS):
                v = self.local_attention_num_virtual_batches(attn_chunk_size, common)
                pages = max(attn_chunk_size // block_size, 1) if block_size > 0 else 1
                for name in _LOCAL_OUTPUTS:
                    if name not in tensors:
                        tensors[name] = np.zeros((v, pages) if name == "block_table" else
                                                 v + 1 if name.startswith("query") else v,
                                                 np.int32)
            outs = TensorFields(attn_local_attention_out_t, tensors)
        out = ctypes.c_void_p()
        err = self.raw.attn_make_local_attention_virtual_batches(
            attn_chunk_size, common.struct, block_size, outs.struct, ctypes.byref(out), None)
        if err:
            self.check(err)
        got = outs.sources  # the tensors written, as given
        return LocalAttentionBatches(Metadata(self, out.value, True, (common, outs)),
                                     got["query_start_loc"], got["seq_lens"],
                                     got.get("num_computed_tokens_cpu"), got["block_table"],
                                     got["virtual_req"], got["virtual_block_start"])

    def remap_local_block_table(self, block_table: ArrayLike, virtual_req: ArrayLike,
                                virtual_block_start: ArrayLike, pages: int, out: Any = None,
                                stream: Any = None) -> Any:
        """``attn_remap_local_block_table``: another group's table through the virtual batches'
        remap, ``pages`` columns."""
        vr = tensor_arg(virtual_req, name="virtual_req")
        vs = tensor_arg(virtual_block_start, name="virtual_block_start")
        v = vr.shape[0]
        if out is None:
            out = np.zeros((v, pages), dtype=np.int32)
        bt, o = tensor_arg(block_table, name="block_table"), output_arg(out, name="out")
        self.check(self.raw.attn_remap_local_block_table(bt.struct, vr.struct, vs.struct, v, o.struct,
                                                         stream_handle(stream)))
        return out

    def reshape_attn_output_for_spec_decode(self, attn_output: ArrayLike) -> Any:
        """``attn_reshape_attn_output_for_spec_decode`` (ABI 1.7): a (batch * seq_len, heads,
        dim) view of a (batch, seq_len, heads, dim) attention output (a 3-D one as it is),
        sharing its memory; refused where torch's ``view`` refuses."""
        from .dlpack import TensorView
        a = tensor_arg(attn_output, np.float32, "attn_output")
        out = attn_tensor_t()
        shape, strides = (ctypes.c_int64 * 3)(), (ctypes.c_int64 * 3)()
        self.check(self.optional_function("attn_reshape_attn_output_for_spec_decode")(  # type: ignore[attr-defined]
            a.struct, ctypes.byref(out), shape, strides))
        keep = (a, shape, strides)
        try:
            return to_numpy(out, keep)
        except TypeError:
            return TensorView(out, keep)

    def common_metadata_naive_query_lens(self, common: CommonMetadata, out: Any = None,
                                         stream: Any = None) -> Any:
        """``attn_common_metadata_naive_query_lens`` (ABI 1.7): vLLM 0.33's
        ``CommonAttentionMetadata.naive_query_lens()``, query_start_loc[1:] -
        query_start_loc[:-1], into ``out`` (a new int32 array by default); returns
        ``out[:num_reqs]``."""
        n = common.num_reqs
        if out is None:
            out = np.zeros(max(n, 1), dtype=np.int32)
        o = output_arg(out, name="out")
        self.check(self.optional_function("attn_common_metadata_naive_query_lens")(  # type: ignore[attr-defined]
            common.struct, o.struct, stream_handle(stream)))
        return out[:n]

    def get_dcp_dummy_context_len(self, dcp_world_size: int, cp_kv_cache_interleave_size: int,
                                  has_kv_cache_config: bool, create_mixed_batch: bool,
                                  is_graph_capturing: bool, uniform_decode: bool) -> int:
        """``attn_get_dcp_dummy_context_len`` (ABI 1.7): vLLM 0.33's get_dcp_dummy_context_len,
        the context length of DCP warm-up and capture dummy requests."""
        out = ctypes.c_int64(-1)
        self.check(self.optional_function("attn_get_dcp_dummy_context_len")(  # type: ignore[attr-defined]
            dcp_world_size, cp_kv_cache_interleave_size, int(has_kv_cache_config),
            int(create_mixed_batch), int(is_graph_capturing), int(uniform_decode),
            ctypes.byref(out)))
        return out.value

    def should_split_fa2_dcp_context_attention(self, fa_version: Optional[int], max_query_len: int,
                                               num_reqs: int, num_decode_reqs: int,
                                               num_context_prefill_reqs: int) -> bool:
        """``attn_should_split_fa2_dcp_context_attention`` (ABI 1.7); ``fa_version`` None is
        vLLM's None."""
        out = ctypes.c_int32(-1)
        self.check(self.optional_function("attn_should_split_fa2_dcp_context_attention")(  # type: ignore[attr-defined]
            0 if fa_version is None else fa_version, max_query_len, num_reqs, num_decode_reqs,
            num_context_prefill_reqs, ctypes.byref(out)))
        return bool(out.value)

    def is_last_ubatch_empty(self, orig_num_tokens: int, padded_num_tokens: int,
                             num_ubatches: int) -> bool:
        """``attn_is_last_ubatch_empty`` (ABI 1.7): vLLM 0.33's is_last_ubatch_empty."""
        out = ctypes.c_int32(-1)
        self.check(self.optional_function("attn_is_last_ubatch_empty")(  # type: ignore[attr-defined]
            orig_num_tokens, padded_num_tokens, num_ubatches, ctypes.byref(out)))
        return bool(out.value)

    def get_num_ubatches(self, enable_dbo: bool, ubatch_size: int) -> int:
        """``attn_get_num_ubatches`` (ABI 1.7): vLLM 0.33's get_num_ubatches on
        ``parallel_config.enable_dbo`` and ``.ubatch_size``."""
        out = ctypes.c_int32(-1)
        self.check(self.optional_function("attn_get_num_ubatches")(  # type: ignore[attr-defined]
            int(enable_dbo), ubatch_size, ctypes.byref(out)))
        return out.value

    def check_ubatch_thresholds(self, enable_dbo: bool, ubatch_size: int,
                                dbo_decode_token_threshold: int, dbo_prefill_token_threshold: int,
                                num_tokens: int, uniform_decode: bool) -> bool:
        """``attn_check_ubatch_thresholds`` (ABI 1.7): vLLM 0.33's check_ubatch_thresholds on
        the ParallelConfig fields it reads."""
        out = ctypes.c_int32(-1)
        self.check(self.optional_function("attn_check_ubatch_thresholds")(  # type: ignore[attr-defined]
            int(enable_dbo), ubatch_size, dbo_decode_token_threshold, dbo_prefill_token_threshold,
            num_tokens, int(uniform_decode), ctypes.byref(out)))
        return bool(out.value)

    def slice_query_start_locs(self, query_start_loc: ArrayLike, request_start: int,
                               request_stop: int, out: Any = None, stream: Any = None) -> Any:
        """``attn_slice_query_start_locs``: query_start_loc of requests [start, stop), rebased."""
        q = tensor_arg(query_start_loc, name="query_start_loc")
        if out is None:
            out = np.zeros(max(request_stop - request_start + 1, 1), dtype=np.int32)
        o = output_arg(out, name="out")
        self.check(self.raw.attn_slice_query_start_locs(q.struct, request_start, request_stop,
                                                        o.struct, stream_handle(stream)))
        return out

    def maybe_create_ubatch_slices(self, num_scheduled_tokens: ArrayLike, num_tokens_padded: int,
                                   num_reqs_padded: int, num_ubatches: int = 2,
                                   split_point: int = 0
                                   ) -> Tuple[List[UbatchSlice], List[UbatchSlice]]:
        """``attn_maybe_create_ubatch_slices`` (should_ubatch=True): (slices, padded slices)."""
        sched = _i32(num_scheduled_tokens, "num_scheduled_tokens")
        k = max(num_ubatches, 1)
        slices = (attn_ubatch_slice_t * k)(*[new(attn_ubatch_slice_t) for _ in range(k)])
        padded = (attn_ubatch_slice_t * k)(*[new(attn_ubatch_slice_t) for _ in range(k)])
        self.check(self.raw.attn_maybe_create_ubatch_slices(
            _p(sched), len(sched), num_tokens_padded, num_reqs_padded, num_ubatches, split_point,
            slices, padded))
        return [_slice(s) for s in slices[:num_ubatches]], [_slice(s) for s in padded[:num_ubatches]]

    def maybe_create_ubatch_slices_ex(self, num_scheduled_tokens: ArrayLike,
                                      num_tokens_padded: int, num_reqs_padded: int,
                                      num_ubatches: int = 2,
                                      split_point: Union[int, Sequence[int], None] = None
                                      ) -> Tuple[List[UbatchSlice], List[UbatchSlice]]:
        """vLLM 0.33's ``maybe_create_ubatch_slices(True, ..., split_point)``: ``split_point``
        an int (tokens per split), a list of ``num_ubatches - 1`` split points
        (``attn_maybe_create_ubatch_slices_ex``, ABI 1.4) or None (the default split)."""
        if split_point is None or isinstance(split_point, (int, np.integer)):
            return self.maybe_create_ubatch_slices(num_scheduled_tokens, num_tokens_padded,
                                                   num_reqs_padded, num_ubatches,
                                                   int(split_point or 0))
        sched = _i32(num_scheduled_tokens, "num_scheduled_tokens")
        points = np.ascontiguousarray(np.asarray(split_point, dtype=np.int64).reshape(-1))
        k = max(num_ubatches, 1)
        slices = (attn_ubatch_slice_t * k)(*[new(attn_ubatch_slice_t) for _ in range(k)])
        padded = (attn_ubatch_slice_t * k)(*[new(attn_ubatch_slice_t) for _ in range(k)])
        self.check(self.optional_function("attn_maybe_create_ubatch_slices_ex")(  # type: ignore[attr-defined]
            _p(sched), len(sched), num_tokens_padded, num_reqs_padded, num_ubatches,
            _p(points, ctypes.c_int64) if len(points) else None, len(points), slices, padded))
        return [_slice(s) for s in slices[:num_ubatches]], [_slice(s) for s in padded[:num_ubatches]]

    def compute_token_to_req_indices(self, query_start_loc: ArrayLike, num_mapped_tokens: int,
                                     num_tokens: Optional[int] = None, out: Any = None,
                                     stream: Any = None) -> Any:
        """``attn_compute_token_to_req_indices`` (ABI 1.4): the request of each of the first
        ``num_tokens`` tokens (default ``num_mapped_tokens``), 0 from ``num_mapped_tokens`` on;
        returns ``out[:num_tokens]``."""
        q = tensor_arg(query_start_loc, name="query_start_loc")
        n = num_mapped_tokens if num_tokens is None else num_tokens
        if out is None:
            out = np.zeros(max(n, 1), dtype=np.int32)
        o = output_arg(out, name="out")
        self.check(self.optional_function("attn_compute_token_to_req_indices")(  # type: ignore[attr-defined]
            q.struct, o.struct, num_mapped_tokens, n, stream_handle(stream)))
        return out[:n]

    def compute_mm_prefix_range_tensor(self, mm_prefix_range: Optional[Mapping[int, Sequence[Tuple[int, int]]]],
                                       num_seqs: int) -> Optional[np.ndarray]:
        """``attn_compute_mm_prefix_range_tensor`` (ABI 1.4): vLLM 0.33's padded
        (num_seqs, max_ranges, 2) int32 range tensor (host memory), or None."""
        rows = None if mm_prefix_range is None else _doc_ranges(mm_prefix_range)
        fn = self.optional_function("attn_compute_mm_prefix_range_tensor")  # type: ignore[attr-defined]
        r = None if rows is None else tensor_arg(rows, name="mm_req_doc_ranges")
        width = ctypes.c_int64()
        self.check(fn(r.struct if r else None, num_seqs, None, ctypes.byref(width)))
        if width.value == 0:
            return None
        out = np.zeros((num_seqs, width.value, 2), np.int32)
        o = output_arg(out, name="out")
        self.check(fn(r.struct if r else None, num_seqs, o.struct, ctypes.byref(width)))
        return out

    def fill_mm_prefix_query_ranges(self, out: Any,
                                    mm_prefix_range: Optional[Mapping[int, Sequence[Tuple[int, int]]]],
                                    query_start_loc_cpu: ArrayLike, seq_lens_cpu: ArrayLike) -> int:
        """``attn_fill_mm_prefix_query_ranges`` (ABI 1.4): vLLM 0.33's per-query-token range
        rows written into ``out`` ((max_tokens, 2) int32); returns the rows written."""
        rows = None if mm_prefix_range is None else _doc_ranges(mm_prefix_range)
        r = None if rows is None else tensor_arg(rows, name="mm_req_doc_ranges")
        o = output_arg(out, name="out")
        q = tensor_arg(query_start_loc_cpu, name="query_start_loc_cpu")
        s = tensor_arg(seq_lens_cpu, name="seq_lens_cpu")
        n = ctypes.c_int64()
        self.check(self.optional_function("attn_fill_mm_prefix_query_ranges")(  # type: ignore[attr-defined]
            o.struct, r.struct if r else None, q.struct, s.struct, ctypes.byref(n)))
        return n.value

    def _ubatch_outputs(self, n: int) -> Tuple[attn_ubatch_out_t, Any]:
        arrays = [np.zeros(n + 1, np.int32), np.zeros(n + 1, np.int32), np.zeros(max(n, 1), np.int32),
                  np.zeros(max(n, 1), np.int32)]
        args = [tensor_arg(a) for a in arrays]
        o = new(attn_ubatch_out_t, query_start_loc=args[0].ref, query_start_loc_cpu=args[1].ref,
                seq_lens=args[2].ref, seq_lens_cpu=args[3].ref)
        return o, args

    def make_metadata_with_slice(self, common: CommonMetadata, ubatch_slice: Sequence[int]) -> Metadata:
        """``attn_make_metadata_with_slice``: the batch of one micro-batch (kind "common")."""
        s = new(attn_ubatch_slice_t, **dict(zip(UbatchSlice._fields, map(int, ubatch_slice))))
        o, keep = self._ubatch_outputs(max(s.request_stop - s.request_start, 0))
        out = ctypes.c_void_p()
        self.check(self.raw.attn_make_metadata_with_slice(common.struct, ctypes.byref(s),
                                                          ctypes.byref(o), ctypes.byref(out), None))
        return self._common_result(out.value, (common, keep))

    def split_attn_metadata(self, common: CommonMetadata,
                            slices: Sequence[Sequence[int]]) -> List[Metadata]:
        """``attn_split_attn_metadata``: :meth:`make_metadata_with_slice` for every slice."""
        k = len(slices)
        cs = (attn_ubatch_slice_t * max(k, 1))()
        outs = (attn_ubatch_out_t * max(k, 1))()
        keep = []
        for i, sl in enumerate(slices):
            cs[i] = new(attn_ubatch_slice_t, **dict(zip(UbatchSlice._fields, map(int, sl))))
            o, args = self._ubatch_outputs(max(cs[i].request_stop - cs[i].request_start, 0))
            outs[i] = o
            keep.append(args)
        handles = (ctypes.c_void_p * max(k, 1))()
        self.check(self.raw.attn_split_attn_metadata(common.struct, cs, k, outs, handles, None))
        return [self._common_result(handles[i], (common, keep[i])) for i in range(k)]
