""":class:`CommonMetadata`: a batch as vLLM's ``CommonAttentionMetadata`` describes it."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional

import numpy as np

from .structs import attn_common_metadata_t, new
from .tensors import ArrayLike, TensorArg, optional_arg, tensor_arg, to_numpy

__all__ = ["CommonMetadata"]


def _host(arg: Optional[TensorArg], mirror: Optional[TensorArg]) -> Optional[np.ndarray]:
    """The values of a tensor readable on the host (the mirror first), as a numpy view."""
    for a in (mirror, arg):
        if a is not None and a.on_host and a.struct.ndim == 1:
            try:
                return to_numpy(a.struct, a)
            except TypeError:  # a dtype numpy lacks: the library will name it
                pass
    return None


class CommonMetadata:
    """The input of a build: ``attn_common_metadata_t`` filled from arrays.

    Tensors are numpy arrays, objects with ``__dlpack__`` (torch/cupy/jax, on any device), or
    lists (int32; ``slot_mapping`` int64). The scalars default to what the host arrays say, as
    vLLM's ``CommonAttentionMetadata`` would hold them: ``num_reqs = len(seq_lens)``,
    ``num_actual_tokens = query_start_loc[-1]``, ``max_query_len`` and ``max_seq_len`` from the
    lengths; pass them explicitly for device tensors without ``*_cpu`` mirrors.

    >>> batch = CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
    ...                        block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33])

    The object keeps every array alive; metadata built from it keeps it alive in turn.
    """

    def __init__(self, query_start_loc: ArrayLike, seq_lens: ArrayLike,
                 block_table: Optional[ArrayLike] = None, slot_mapping: Optional[ArrayLike] = None,
                 *, num_reqs: Optional[int] = None, num_actual_tokens: Optional[int] = None,
                 max_query_len: Optional[int] = None, max_seq_len: Optional[int] = None,
                 query_start_loc_cpu: Optional[ArrayLike] = None,
                 seq_lens_cpu: Optional[ArrayLike] = None, causal: bool = True,
                 logits_indices_padded: Optional[ArrayLike] = None, num_logits_indices: int = 0,
                 logits_indices_padded_cpu: Optional[ArrayLike] = None,
                 encoder_seq_lens: Optional[ArrayLike] = None,
                 encoder_seq_lens_cpu: Optional[ArrayLike] = None,
                 dcp_local_seq_lens: Optional[ArrayLike] = None,
                 dcp_local_seq_lens_cpu: Optional[ArrayLike] = None) -> None:
        args: Dict[str, Optional[TensorArg]] = {
            "query_start_loc": tensor_arg(query_start_loc),
            "query_start_loc_cpu": optional_arg(query_start_loc_cpu),
            "seq_lens": tensor_arg(seq_lens),
            "seq_lens_cpu": optional_arg(seq_lens_cpu),
            "block_table_tensor": optional_arg(block_table),
            "slot_mapping": optional_arg(slot_mapping, np.int64),
            "logits_indices_padded": optional_arg(logits_indices_padded),
            "logits_indices_padded_cpu": optional_arg(logits_indices_padded_cpu),
            "encoder_seq_lens": optional_arg(encoder_seq_lens),
            "encoder_seq_lens_cpu": optional_arg(encoder_seq_lens_cpu),
            "dcp_local_seq_lens": optional_arg(dcp_local_seq_lens),
            "dcp_local_seq_lens_cpu": optional_arg(dcp_local_seq_lens_cpu),
        }
        qsl = _host(args["query_start_loc"], args["query_start_loc_cpu"])
        seq = _host(args["seq_lens"], args["seq_lens_cpu"])
        if num_reqs is None:
            num_reqs = args["seq_lens"].shape[0] if args["seq_lens"].shape else 0
        if num_actual_tokens is None:
            num_actual_tokens = int(qsl[num_reqs]) if qsl is not None and len(qsl) > num_reqs else 0
        if max_query_len is None:
            max_query_len = int(np.diff(qsl[: num_reqs + 1]).max()) if qsl is not None and num_reqs else 0
        if max_seq_len is None:
            max_seq_len = int(seq[:num_reqs].max()) if seq is not None and num_reqs else 0
        self._build(args, num_reqs, num_actual_tokens, max_query_len, max_seq_len, causal,
                    num_logits_indices, None)

    def _build(self, args: Dict[str, Optional[TensorArg]], num_reqs: int, num_actual_tokens: int,
               max_query_len: int, max_seq_len: int, causal: bool, num_logits_indices: int,
               owner: Any) -> None:
        self.args = args
        self.owner = owner  # metadata whose buffers this batch views (from_metadata)
        s = new(attn_common_metadata_t, num_reqs=int(num_reqs),
                num_actual_tokens=int(num_actual_tokens), max_query_len=int(max_query_len),
                max_seq_len=int(max_seq_len), causal=int(bool(causal)),
                num_logits_indices=int(num_logits_indices))
        for name, arg in args.items():
            if arg is not None:
                setattr(s, name, arg.ref)
        self.struct = s
        self.ref = ctypes.pointer(s)

    @classmethod
    def _from_struct(cls, s: attn_common_metadata_t, owner: Any) -> "CommonMetadata":
        """A batch viewing a struct the library filled (attn_metadata_to_common); ``owner`` is
        kept alive."""
        self = cls.__new__(cls)
        self.args = {}
        self.owner = owner
        self.struct = s
        self.ref = ctypes.pointer(s)
        return self

    # the scalars, for reading
    num_reqs = property(lambda self: int(self.struct.num_reqs))
    num_actual_tokens = property(lambda self: int(self.struct.num_actual_tokens))
    max_query_len = property(lambda self: int(self.struct.max_query_len))
    max_seq_len = property(lambda self: int(self.struct.max_seq_len))

    def __repr__(self) -> str:
        return (f"CommonMetadata(num_reqs={self.num_reqs}, num_actual_tokens="
                f"{self.num_actual_tokens}, max_query_len={self.max_query_len}, "
                f"max_seq_len={self.max_seq_len})")
