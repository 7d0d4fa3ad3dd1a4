"""MLA's chunked context as vLLM 0.33's list of ``ContextChunk`` objects.

libattn returns the chunks of ``MLACommonPrefillMetadata.chunked_context.chunks`` as flat
fields (docs/backends/mla.md, "The chunked context"): per-chunk scalars indexed by chunk
(``prefill_chunked_context_chunk_request_start``, ...) and per-chunk tensors concatenated, with
the offsets of each chunk's slice (``..._chunk_request_offsets``, ``..._chunk_boundary_offsets``,
``..._chunk_token_offsets``, ``..._chunk_local_token_offsets``). :func:`context_chunks` turns
them back into one dict per chunk, with vLLM's field names and kinds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

import numpy as np

if TYPE_CHECKING:
    from .metadata import Metadata

__all__ = ["context_chunks", "CHUNK_FIELD_PREFIX"]

CHUNK_FIELD_PREFIX = "prefill_chunked_context_chunk_"

#: ContextChunk's int and bool fields, each a host array indexed by chunk
_SCALARS = ("continuation_token_end", "num_context_tokens", "max_query_len", "max_seq_len",
            "num_local_context_tokens")
_BOOLS = ("is_continuation", "all_rows_active")


def _host(md: "Metadata", name: str) -> Optional[np.ndarray]:
    v = md[CHUNK_FIELD_PREFIX + name]
    return None if v is None else np.asarray(v)


def context_chunks(md: "Metadata") -> Optional[List[Dict[str, Any]]]:
    """vLLM's ``chunked_context.chunks`` of an MLA build: a list with one dict per chunk, keyed
    by ``ContextChunk``'s field names (``index``, ``request_slice`` and ``token_slice`` as
    Python slices, ints and bools for its scalars, lists for its Python lists
    (``padded_local_seq_lens``, ``local_context_lens_allranks``, ``local_starts``), and views
    for its tensors: numpy arrays of host memory (``seq_lens``, and every tensor of a CPU
    builder) or :class:`~libattn.TensorView` slices of device memory (``query_start_loc``,
    ``cu_seq_lens``, ``starts``, ``token_to_seq``, ``padded_local_cu_seq_lens``,
    ``padded_local_token_to_seq``), exportable with DLPack). The DCP fields are None without
    DCP. None when vLLM's ``chunked_context`` is None (no prefill has context).

    The views are the metadata's: valid until the builder's next build."""
    n = md["prefill_chunked_context_num_chunks"]
    if n is None:
        return None
    rs, re = _host(md, "request_start"), _host(md, "request_end")
    ts, te = _host(md, "token_start"), _host(md, "token_end")
    ro, bo = _host(md, "request_offsets"), _host(md, "boundary_offsets")
    to, lo = _host(md, "token_offsets"), _host(md, "local_token_offsets")
    scalars = {k: _host(md, k) for k in _SCALARS + _BOOLS}
    seq_lens = _host(md, "seq_lens")
    local_lens, local_starts = _host(md, "padded_local_seq_lens"), _host(md, "local_starts")
    allranks = _host(md, "local_context_lens_allranks")

    def tensor(name: str) -> Any:
        v = md[CHUNK_FIELD_PREFIX + name]
        return v if v is None or isinstance(v, np.ndarray) else md.tensor_view(
            CHUNK_FIELD_PREFIX + name)

    qsl, cu, starts, tts = (tensor(k) for k in ("query_start_loc", "cu_seq_lens", "starts",
                                                "token_to_seq"))
    pcu, ptts = tensor("padded_local_cu_seq_lens"), tensor("padded_local_token_to_seq")
    out: List[Dict[str, Any]] = []
    for i in range(int(n)):
        e0, e1 = int(ro[i]), int(ro[i + 1])
        b0, b1 = int(bo[i]), int(bo[i]) + (e1 - e0) + 1
        t0, t1 = int(to[i]), int(to[i + 1])
        chunk: Dict[str, Any] = {
            "index": i,
            "request_slice": slice(int(rs[i]), int(re[i])),
            "token_slice": slice(int(ts[i]), int(te[i])),
            "query_start_loc": qsl[b0:b1],
            "cu_seq_lens": cu[b0:b1],
            "starts": starts[e0:e1],
            "seq_lens": seq_lens[e0:e1],
            "token_to_seq": tts[t0:t1],
        }
        for k in _SCALARS:
            chunk[k] = int(scalars[k][i])
        for k in _BOOLS:
            chunk[k] = bool(scalars[k][i])
        if local_lens is not None:
            l0, l1 = int(lo[i]), int(lo[i + 1])
            chunk["padded_local_seq_lens"] = local_lens[e0:e1].tolist()
            chunk["local_context_lens_allranks"] = allranks[e0:e1].tolist()
            chunk["padded_local_cu_seq_lens"] = pcu[b0:b1]
            chunk["padded_local_token_to_seq"] = ptts[l0:l1]
            chunk["local_starts"] = local_starts[e0:e1].tolist()
        else:
            for k in ("padded_local_seq_lens", "local_context_lens_allranks",
                      "padded_local_cu_seq_lens", "padded_local_token_to_seq", "local_starts"):
                chunk[k] = None
        out.append(chunk)
    return out
