"""``attn-inspect``: a batch description in, every backend's metadata out, and an SVG drawing.

    attn-inspect batch.json [--backend FLASH_ATTN ...] [--svg batch.svg] [--draw BACKEND]
                            [--library PATH] [--all]

The batch is JSON (``-`` reads standard input), in one of two forms:

- the scheduler's: ``query_lens`` (tokens scheduled per request) and ``context_lens`` (tokens
  already cached), e.g. ``{"query_lens": [1, 1, 32, 20], "context_lens": [40, 99, 64, 0]}``;
- the runtime's own (vLLM's ``CommonAttentionMetadata``): ``query_start_loc`` and ``seq_lens``,
  optionally with ``block_table`` and ``slot_mapping``, e.g.
  ``{"query_start_loc": [0, 1, 2, 34, 54], "seq_lens": [41, 100, 96, 20]}``.

Not both. :data:`KEYS` lists every key (``attn-inspect -h`` prints it). Blocks are numbered from
1 in request order (0 is vLLM's null block) unless ``block_table`` gives the rows; slots follow
the block table unless ``slot_mapping`` gives them.

For each backend it prints the CUDA graph support, the reorder threshold, the decode/prefill
split the builder used (the metadata's ``num_decodes`` where it has one, else
``split_decodes_and_prefills``), and every field of the metadata (tensors shortened; ``--all``
prints them whole; dtype fields by name). For a backend that reorders (reorder threshold not
None) and a batch out of the order vLLM's ``reorder_batch_to_split_decodes_and_prefills`` leaves
it, it prints a warning, the reorder's swaps and the order they make, and builds the batch as
given. ``--svg`` draws the batch and what one backend (``--draw``; default: the first that
built) made of it: the split, local-attention virtual batches, FlashInfer's pages, MLA context
chunks, Mamba chunk boundaries and the cascade prefix, whichever its metadata has.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from . import batch_svg
from .common_metadata import CommonMetadata
from .config import BuilderConfig, KvCacheSpec
from .dlpack import TensorView
from .enums import (AttentionType, CpuIsa, CudagraphMode, CudagraphSupport, DTypeCode,
                    FlashinferDecodeKernel, KvCacheKind, KvCacheLayout, KvDtype, MambaCacheMode,
                    MambaType, ValidateMode)
from .errors import AttnError
from .library import Library, load
from .utilities import BatchSplit

__all__ = ["KEYS", "Batch", "BackendResult", "main", "inspect_backend", "describe", "drawing",
           "dtype_name", "format_value"]

#: Every key of the batch JSON: (key, one-line meaning, example). ``-h`` prints this table and
#: :class:`Batch` accepts exactly these keys.
KEYS: List[Tuple[str, str, str]] = [
    ("query_lens", "tokens scheduled this step, per request (vLLM's num_scheduled_tokens)",
     "[1, 1, 32, 20]"),
    ("context_lens", "tokens already in the KV cache, per request (num_computed_tokens); "
     "default all 0; with query_lens only", "[40, 99, 64, 0]"),
    ("query_start_loc", "runtime form, instead of query_lens: cumulative query offsets, "
     "num_reqs + 1 entries from 0", "[0, 1, 2, 34, 54]"),
    ("seq_lens", "runtime form, with query_start_loc: context + query tokens per request",
     "[41, 100, 96, 20]"),
    ("block_table", "KV block ids, one row per request, at least cdiv(seq_len, block_size) each "
     "(default: numbered from 1 in request order)", "[[1, 2, 3], [4, 5, 6, 7, 8, 9, 10], ...]"),
    ("slot_mapping", "KV slot of every query token, num_tokens entries (default: from "
     "block_table)", "[56, 163, 240, 241, ...]"),
    ("is_prefilling", "vLLM 0.33's CommonAttentionMetadata.is_prefilling: per request, still in "
     "its prompt (MAMBA2, MAMBA1 and SHORT_CONV require it; default: not given)",
     "[false, false, true, true]"),
    ("block_size", "tokens per KV cache block (default 16)", "16"),
    ("attention_chunk_size", "chunked local attention: build with a CHUNKED_LOCAL_ATTENTION "
     "spec of this chunk (default 0: off)", "32"),
    ("common_prefix_len", "cascade attention: tokens every request shares (default 0)", "16"),
    ("backends", "backends to show (default: every registered one; --backend overrides)",
     '["FLASH_ATTN", "FLASHINFER"]'),
    ("spec", "KvCacheSpec fields (enum fields take names); without kind, MLA-only and "
     "Mamba-only backends get their kind", '{"num_kv_heads": 8, "head_size": 128, '
     '"dtype": "FP8_E4M3"}'),
    ("config", "BuilderConfig fields (enum fields take names)",
     '{"device_capability": 90, "cache_dtype": "FP8_E4M3"}'),
]

_KEY_NAMES = [k for k, _, _ in KEYS]

#: Enum fields of the spec and the config that the JSON may give by name.
_SPEC_ENUMS = {"kind": KvCacheKind, "dtype": KvDtype, "mamba_type": MambaType,
               "mamba_cache_mode": MambaCacheMode}
_CONFIG_ENUMS = {"cudagraph_mode": CudagraphMode, "cache_dtype": KvDtype, "model_dtype": KvDtype,
                 "attn_type": AttentionType, "validate": ValidateMode, "cpu_attn_isa": CpuIsa}


def _ints(desc: Dict[str, Any], key: str) -> List[int]:
    """``desc[key]`` as a list of non-negative ints, or ValueError naming the key and value."""
    v = desc[key]
    if not isinstance(v, list):
        raise ValueError(f"{key}={v!r} must be a list of integers")
    out = []
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int):
            raise ValueError(f"{key}[{i}]={x!r} is not an integer")
        if x < 0:
            raise ValueError(f"{key}[{i}]={x} must be >= 0")
        out.append(x)
    return out


def _int(desc: Dict[str, Any], key: str, default: int) -> int:
    v = desc.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{key}={v!r} is not an integer")
    return v


def _fields(desc: Dict[str, Any], key: str, cls: Any, enums: Dict[str, Any]) -> Dict[str, Any]:
    """The ``spec`` / ``config`` object: known field names, enum values by name or number."""
    v = desc.get(key, {})
    if not isinstance(v, dict):
        raise ValueError(f"{key}={v!r} must be an object of {cls.__name__} fields")
    known = {f.name for f in dataclasses.fields(cls)}
    out = {}
    for name, value in v.items():
        if name not in known:
            raise ValueError(f"{key}: {cls.__name__} has no field {name!r}")
        enum = enums.get(name)
        if enum is not None and isinstance(value, str):
            try:
                value = enum[value.upper()]
            except KeyError:
                raise ValueError(f"{key}.{name}={value!r} is not one of "
                                 f"{[m.name for m in enum]}") from None
        out[name] = value
    return out


class Batch:
    """A batch description: the JSON's fields with their defaults, and the arrays it makes.

    ``form`` says which input form it came in: ``"query_lens"`` or ``"query_start_loc"``."""

    def __init__(self, desc: Dict[str, Any]) -> None:
        if not isinstance(desc, dict):
            raise ValueError(f"the batch must be a JSON object, got {type(desc).__name__}")
        unknown = [k for k in desc if k not in _KEY_NAMES]
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} (the keys: {', '.join(_KEY_NAMES)})")
        scheduler = [k for k in ("query_lens", "context_lens") if k in desc]
        runtime = [k for k in ("query_start_loc", "seq_lens") if k in desc]
        if scheduler and runtime:
            raise ValueError(f"give query_lens/context_lens or query_start_loc/seq_lens, not "
                             f"both (got {', '.join(scheduler + runtime)})")
        self.block_size = _int(desc, "block_size", 16)
        if self.block_size <= 0:
            raise ValueError(f"block_size={self.block_size} must be positive")
        if runtime:
            self.form = "query_start_loc"
            for k in ("query_start_loc", "seq_lens"):
                if k not in desc:
                    raise ValueError(f"the batch needs {k!r} with "
                                     f"{runtime[0]!r} (the runtime's form)")
            qsl, self.seq = _ints(desc, "query_start_loc"), _ints(desc, "seq_lens")
            if len(qsl) != len(self.seq) + 1:
                raise ValueError(f"query_start_loc has {len(qsl)} entries, seq_lens "
                                 f"{len(self.seq)}: query_start_loc needs num_reqs + 1 = "
                                 f"{len(self.seq) + 1}")
            if qsl[0] != 0:
                raise ValueError(f"query_start_loc[0]={qsl[0]} must be 0")
            for i in range(1, len(qsl)):
                if qsl[i] < qsl[i - 1]:
                    raise ValueError(f"query_start_loc[{i}]={qsl[i]} is below "
                                     f"query_start_loc[{i - 1}]={qsl[i - 1]}")
            self.query = [qsl[i + 1] - qsl[i] for i in range(len(self.seq))]
            for i, (s, q) in enumerate(zip(self.seq, self.query)):
                if s < q:
                    raise ValueError(f"seq_lens[{i}]={s} is below request {i}'s query length "
                                     f"{q} (query_start_loc[{i + 1}] - query_start_loc[{i}])")
            self.context = [s - q for s, q in zip(self.seq, self.query)]
        else:
            self.form = "query_lens"
            if "query_lens" not in desc:
                raise ValueError("the batch needs 'query_lens' (or query_start_loc and seq_lens)")
            self.query = _ints(desc, "query_lens")
            self.context = (_ints(desc, "context_lens") if "context_lens" in desc
                            else [0] * len(self.query))
            if len(self.context) != len(self.query):
                raise ValueError(f"context_lens has {len(self.context)} entries, query_lens "
                                 f"{len(self.query)}")
            self.seq = [c + q for c, q in zip(self.context, self.query)]
        self.is_prefilling: Optional[List[bool]] = None
        if "is_prefilling" in desc:
            flags = desc["is_prefilling"]
            if (not isinstance(flags, list) or len(flags) != len(self.query) or
                    not all(isinstance(x, bool) for x in flags)):
                raise ValueError(f"is_prefilling={flags!r} must be a list of {len(self.query)} "
                                 f"booleans (one per request)")
            self.is_prefilling = flags
        self.chunk = _int(desc, "attention_chunk_size", 0)
        if self.chunk < 0:
            raise ValueError(f"attention_chunk_size={self.chunk} must be >= 0")
        self.common_prefix_len = _int(desc, "common_prefix_len", 0)
        if self.common_prefix_len < 0:
            raise ValueError(f"common_prefix_len={self.common_prefix_len} must be >= 0")
        self.backends: Optional[List[str]] = desc.get("backends")
        if self.backends is not None and (not isinstance(self.backends, list) or
                                          not all(isinstance(b, str) for b in self.backends)):
            raise ValueError(f"backends={self.backends!r} must be a list of backend names")
        self.spec_fields = _fields(desc, "spec", KvCacheSpec, _SPEC_ENUMS)
        self.config_fields = _fields(desc, "config", BuilderConfig, _CONFIG_ENUMS)
        n = len(self.query)
        need = [-(-s // self.block_size) for s in self.seq]
        width = max([1] + need)
        if "block_table" in desc:
            rows = desc["block_table"]
            if not isinstance(rows, list) or len(rows) != n:
                raise ValueError(f"block_table={rows!r} must be a list of {n} rows (one per "
                                 f"request)")
            for r, row in enumerate(rows):
                vals = _ints({f"block_table[{r}]": row}, f"block_table[{r}]")
                if len(vals) < need[r]:
                    raise ValueError(f"block_table[{r}] has {len(vals)} blocks; request {r}'s "
                                     f"seq_len {self.seq[r]} needs {need[r]} of "
                                     f"block_size {self.block_size}")
            width = max([width] + [len(r) for r in rows])
            self.table = np.zeros((n, width), np.int32)
            for r, row in enumerate(rows):
                self.table[r, : len(row)] = row
        else:
            self.table = np.zeros((n, width), np.int32)
            nxt = 1
            for r, k in enumerate(need):
                self.table[r, :k] = np.arange(nxt, nxt + k)
                nxt += k
        self.qsl = np.cumsum([0] + self.query, dtype=np.int32)
        tokens = int(self.qsl[-1])
        if "slot_mapping" in desc:
            slots = desc["slot_mapping"]
            if not isinstance(slots, list) or len(slots) != tokens:
                raise ValueError(f"slot_mapping has "
                                 f"{len(slots) if isinstance(slots, list) else repr(slots)} "
                                 f"entries; the batch has {tokens} query tokens")
            for i, x in enumerate(slots):
                if isinstance(x, bool) or not isinstance(x, int) or x < -1:
                    raise ValueError(f"slot_mapping[{i}]={x!r} is not a slot (an integer >= 0, "
                                     f"or -1 for padding)")
            self.slots = np.array(slots, np.int64)
        else:
            self.slots = np.array([int(self.table[r, p // self.block_size]) * self.block_size
                                   + p % self.block_size
                                   for r in range(n) for p in range(self.context[r], self.seq[r])],
                                  np.int64)

    def common(self) -> CommonMetadata:
        return CommonMetadata(query_start_loc=self.qsl, seq_lens=np.array(self.seq, np.int32),
                              block_table=self.table, slot_mapping=self.slots,
                              is_prefilling=self.is_prefilling)

    def spec(self, local: bool = False, kind: Optional[KvCacheKind] = None) -> KvCacheSpec:
        """The spec; ``kind`` (when the JSON's spec gives none) picks MLA or MAMBA defaults."""
        fields: Dict[str, Any] = {"num_kv_heads": 8, "head_size": 128}
        if kind == KvCacheKind.MLA:
            fields.update(kind=KvCacheKind.MLA, num_kv_heads=1, head_size=576)
        elif kind == KvCacheKind.MAMBA:
            fields.update(kind=KvCacheKind.MAMBA, num_kv_heads=1, head_size=1)
        elif local and self.chunk:
            fields.update(kind=KvCacheKind.CHUNKED_LOCAL_ATTENTION, attention_chunk_size=self.chunk)
        fields.update(self.spec_fields)
        return KvCacheSpec(block_size=self.block_size, **fields)

    def config(self) -> BuilderConfig:
        n, tokens = len(self.query), int(self.qsl[-1])
        fields = {"device_capability": 90, "num_gpu_blocks": int(self.table.max(initial=0)) + 1,
                  **self.config_fields}
        return BuilderConfig(max_num_seqs=max(n, 1), max_num_batched_tokens=max(tokens, 1),
                             max_model_len=max(max(self.seq, default=1), 1),
                             num_attention_heads=int(fields.pop("num_attention_heads", 32)),
                             **fields)


# ---- value formatting ------------------------------------------------------------------------

_DTYPE_CODE_NAMES = {DTypeCode.INT: "int", DTypeCode.UINT: "uint", DTypeCode.FLOAT: "float",
                     DTypeCode.BFLOAT: "bfloat", DTypeCode.BOOL: "bool"}

#: int fields whose value is a code of one of the header's enums (else any field whose name ends
#: in ``dtype`` or ``data_type``: an ``attn_kv_dtype_t``).
_ENUM_FIELDS = {"kv_cache_layout": KvCacheLayout, "scheduler_isa": CpuIsa,
                "decode_kernel": FlashinferDecodeKernel}


def dtype_name(code: int, bits: int, lanes: int = 1) -> str:
    """The library's tensor dtype (``attn_dtype_t``: code, bits, lanes) by name: int32, int64,
    uint8, float32, bfloat16, bool, ... (``x<lanes>`` for vector types)."""
    try:
        base = _DTYPE_CODE_NAMES[DTypeCode(code)]
    except (ValueError, KeyError):
        base = f"dtype-code{code}-"
    name = "bool" if base == "bool" else f"{base}{bits}"
    return name + (f"x{lanes}" if lanes > 1 else "")


def _enum_of(name: str) -> Any:
    if name in _ENUM_FIELDS:
        return _ENUM_FIELDS[name]
    if "dtype" in name or "data_type" in name:
        return KvDtype
    return None


def format_value(name: str, value: Any, whole: bool = False) -> str:
    """One field as the tables print it: tensors as ``dtype[shape] values``, enum codes (dtype
    fields: KvDtype) by name."""
    if isinstance(value, np.ndarray):
        shape = "x".join(map(str, value.shape)) or "scalar"
        flat = value.reshape(-1)
        if whole or flat.size <= 16:
            body = str(value.tolist())
        else:
            body = "[" + ", ".join(map(str, flat[:12].tolist())) + f", ... ({flat.size} values)]"
        return f"{value.dtype}[{shape}] {body}"
    if isinstance(value, TensorView):
        shape = "x".join(map(str, value.shape)) or "scalar"
        dev = {1: "cpu", 2: "cuda", 3: "cuda_host", 13: "cuda_managed"}.get(value.device[0],
                                                                              "device")
        return f"{dtype_name(*value.dtype)}[{shape}] on {dev}:{value.device[1]}"
    enum = _enum_of(name)
    if enum is not None and isinstance(value, int) and not isinstance(value, bool):
        try:
            return f"{enum.__name__}.{enum(value).name}"
        except ValueError:
            return f"{enum.__name__}?({value})"
    return repr(value)


_format = format_value  # the old name


# ---- one backend -----------------------------------------------------------------------------

class BackendResult(NamedTuple):
    """What :func:`inspect_backend` learned of one backend (``error`` set when it failed)."""
    name: str
    error: Optional[str] = None
    kind: str = ""  #: the metadata's kind (the wrapper's name for chunked local attention)
    level: Optional[CudagraphSupport] = None
    threshold: Optional[int] = None  #: reorder_batch_threshold (None: does not reorder)
    split: Optional[BatchSplit] = None
    split_source: str = ""  #: "metadata" or "split_decodes_and_prefills(<threshold>)"
    swaps: Tuple[Tuple[int, int], ...] = ()  #: the reorder's swap_states calls (reorderers)
    order: Tuple[int, ...] = ()  #: the request order after the swaps
    spec_kind: Optional[KvCacheKind] = None  #: the kind chosen for an MLA/Mamba-only backend
    fields: Dict[str, Any] = {}  #: every metadata field (arrays copied)
    local: bool = False  #: built with the chunked local attention spec


def _auto_kind(lib: Library, batch: Batch, backend: str) -> Optional[KvCacheKind]:
    """MLA or MAMBA for a backend that builds only for those kinds, when the JSON's spec gives
    no kind; None otherwise (or when the library cannot say)."""
    if "kind" in batch.spec_fields:
        return None
    try:
        info = next((i for i in lib.backend_infos() if i.name == backend), None)
    except AttnError:
        return None
    if info is None:
        return None
    wanted = KvCacheKind.CHUNKED_LOCAL_ATTENTION if batch.chunk else KvCacheKind.FULL_ATTENTION
    if info.accepts(wanted):
        return None
    for kind in (KvCacheKind.MLA, KvCacheKind.MAMBA):
        if info.accepts(kind):
            return kind
    return None


def _metadata_split(md: Dict[str, Any], batch: Batch) -> Optional[BatchSplit]:
    """The split from the metadata's num_decodes / num_decode_tokens (the prefill counts are
    the rest where the metadata lacks them); None when it has no such fields."""
    def count(name: str) -> Optional[int]:
        v = md.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    d, dt = count("num_decodes"), count("num_decode_tokens")
    if d is None or dt is None:
        return None
    p, pt = count("num_prefills"), count("num_prefill_tokens")
    return BatchSplit(d, len(batch.query) - d if p is None else p, dt,
                      int(batch.qsl[-1]) - dt if pt is None else pt)


def inspect_backend(lib: Library, batch: Batch, backend: str) -> BackendResult:
    """Builds ``batch`` with ``backend`` and collects what the tables and the drawing show."""
    kind = _auto_kind(lib, batch, backend)
    local = bool(batch.chunk) and kind is None
    spec, config = batch.spec(local=local, kind=kind), batch.config()
    try:
        level = lib.backend_cudagraph_support(backend, spec, config)
        with lib.builder(backend, spec, config) as b:
            threshold = b.reorder_batch_threshold
            swaps: List[Tuple[int, int]] = []
            order = list(range(len(batch.query)))
            if threshold is not None:
                swaps = lib.reorder_batch_to_split_decodes_and_prefills(batch.query,
                                                                        batch.context, threshold)
                for a, c in swaps:
                    order[a], order[c] = order[c], order[a]
            md = b.build(batch.common(), common_prefix_len=batch.common_prefix_len)
            fields = md.to_dict()
            split = _metadata_split(fields, batch)
            source = "metadata"
            if split is None:
                split = lib.split_decodes_and_prefills(batch.common(), threshold or 1)
                source = f"split_decodes_and_prefills({threshold or 1})"
            return BackendResult(backend, None, md.kind, level, threshold, split, source,
                                 tuple(swaps), tuple(order), kind, fields, local)
    except AttnError as e:
        return BackendResult(backend, str(e), spec_kind=kind)


def _decode_like_after_split(batch: Batch, r: BackendResult) -> List[int]:
    """For a batch out of the reorder's order: the requests of decode size (query_len <=
    threshold) after the split, counted as prefills only because of where they stand."""
    if r.split is None or r.threshold is None or not r.swaps:
        return []
    thr = r.threshold or 1
    return [i for i in range(r.split.num_decodes, len(batch.query)) if batch.query[i] <= thr]


def reorder_lines(batch: Batch, r: BackendResult) -> List[str]:
    """The warning of a reordering backend given a batch out of vLLM's order ([] if ordered)."""
    if r.threshold is None or not r.swaps:
        return []
    o = list(r.order)
    late = _decode_like_after_split(batch, r)
    lines = [f"warning: the batch is not in the order vLLM's reorder_batch_to_split_decodes_and_"
             f"prefills (threshold {r.threshold}) leaves it",
             "reorder swaps (swap_states src, dst): "
             + ", ".join(f"({a}, {c})" for a, c in r.swaps),
             f"reordered: requests {o}, query_lens {[batch.query[i] for i in o]}, context_lens "
             f"{[batch.context[i] for i in o]}",
             f"built and drawn with the batch as given: {r.split.num_decodes if r.split else 0} "
             f"leading decodes" + (f"; requests {late} (query_len <= {r.threshold}) count as "
                                   f"prefills" if late else "")]
    return lines


def describe(lib: Library, batch: Batch, backend: str, whole: bool = False,
             result: Optional[BackendResult] = None) -> str:
    """The text block of one backend: its level, threshold, split, any reorder warning and every
    field."""
    r = result if result is not None else inspect_backend(lib, batch, backend)
    if r.error is not None:
        return f"== {backend}: {r.error}"
    s = r.split
    assert s is not None and r.level is not None
    lines = [f"== {r.kind}: cudagraph {r.level.name}, reorder threshold {r.threshold}, "
             f"{s.num_decodes} decodes / {s.num_prefills} prefills "
             f"({s.num_decode_tokens} / {s.num_prefill_tokens} tokens)"]
    lines.append(f"  split from {r.split_source}" +
                 (f"; spec kind {r.spec_kind.name} (the backend builds for {r.spec_kind.name} "
                  f"specs only)" if r.spec_kind is not None else ""))
    lines += ["  " + x for x in reorder_lines(batch, r)]
    for name, value in r.fields.items():
        lines.append(f"  {name:<34} {format_value(name, value, whole)}")
    return "\n".join(lines)


# ---- the drawing -----------------------------------------------------------------------------

def _host(value: Any) -> Optional[np.ndarray]:
    """A field as a host numpy array, None when absent or on a device."""
    if isinstance(value, np.ndarray):
        return value
    return None


def _first(fields: Dict[str, Any], *names: str) -> Optional[np.ndarray]:
    for n in names:
        a = _host(fields.get(n))
        if a is not None:
            return a
    return None


def drawing(lib: Library, batch: Batch, threshold: int = 1,
            result: Optional[BackendResult] = None) -> batch_svg.BatchDrawing:
    """What the SVG shows: the input rows, and what ``result``'s backend built (without one: the
    split at ``threshold`` and the local virtual batches)."""
    rows = [batch_svg.RequestRow(i, c, q, batch.table[i, : -(-s // batch.block_size)].tolist())
            for i, (c, q, s) in enumerate(zip(batch.context, batch.query, batch.seq))]
    ok = result is not None and result.error is None
    fields: Dict[str, Any] = result.fields if ok else {}  # type: ignore[union-attr]
    if ok:
        split, source = result.split, result.split_source  # type: ignore[union-attr]
    else:
        split, source = lib.split_decodes_and_prefills(batch.common(), threshold), \
            f"split_decodes_and_prefills({threshold})"
    assert split is not None
    drawn = ["split"]
    virtual = []
    if batch.chunk and (result is None or result.local):
        local = lib.make_local_attention_virtual_batches(batch.chunk, batch.common(),
                                                         batch.block_size)
        for v in range(len(local.seq_lens)):
            q = int(local.query_start_loc[v + 1] - local.query_start_loc[v])
            kv = int(local.seq_lens[v])
            start = int(local.virtual_block_start[v]) * batch.block_size
            virtual.append(batch_svg.VirtualBatch(int(local.virtual_req[v]), start + kv - q, q,
                                                  start, kv))
        drawn.append("local virtual batches")
    # FlashInfer's paged KV layout: pages per request from paged_kv_indptr
    pages: List[batch_svg.PagedKv] = []
    indptr = _first(fields, "paged_kv_indptr_cpu", "paged_kv_indptr")
    last = _first(fields, "paged_kv_last_page_len_cpu", "paged_kv_last_page_len")
    # (row, last key token + 1) of every request the pages describe: the batch's requests, or
    # with chunked local attention its virtual batches
    if virtual:
        ends = [(v.row, v.kv_start + v.kv_len) for v in virtual]
    else:
        ends = [(i, r.seq_len) for i, r in enumerate(rows)]
    if indptr is not None and last is not None and len(indptr) == len(ends) + 1 and \
            len(last) >= len(ends):
        indices = _host(fields.get("paged_kv_indices"))
        page = fields.get("page_size") if isinstance(fields.get("page_size"), int) \
            else batch.block_size
        for k, (row, end) in enumerate(ends):
            a, b = int(indptr[k]), int(indptr[k + 1])
            n = b - a
            covered = (n - 1) * page + int(last[k]) if n else 0
            ids = indices[a:b].tolist() if indices is not None and len(indices) >= b else []
            pages.append(batch_svg.PagedKv(row, end - covered, page, n, int(last[k]), ids))
        drawn.append("paged KV (paged_kv_indptr)")
    # MLA's chunked-prefill context chunks: each chunk's pieces of its prefills' contexts (a
    # piece starts where the request's previous piece ended: starts are local under DCP)
    mla: List[batch_svg.Span] = []
    lens = _host(fields.get("prefill_chunked_context_chunk_seq_lens"))
    first = _host(fields.get("prefill_chunked_context_chunk_request_start"))
    offsets = _host(fields.get("prefill_chunked_context_chunk_request_offsets"))
    if lens is not None and first is not None and offsets is not None:
        done: Dict[int, int] = {}
        for c in range(len(first)):
            for j, e in enumerate(range(int(offsets[c]), int(offsets[c + 1]))):
                row = split.num_decodes + int(first[c]) + j
                start = done.get(row, 0)
                done[row] = start + int(lens[e])
                if row < len(rows) and int(lens[e]) > 0:
                    mla.append(batch_svg.Span(row, start, int(lens[e]), c))
        drawn.append("MLA context chunks")
    # Mamba's chunk boundaries: cu_chunk_seqlen_p over the prefill tokens (query_start_loc_p)
    mamba: List[Tuple[int, int]] = []
    cu, qslp = _host(fields.get("cu_chunk_seqlen_p")), _host(fields.get("query_start_loc_p"))
    if cu is not None and qslp is not None:
        for p in range(len(qslp) - 1):
            row = split.num_decodes + p
            if row >= len(rows):
                break
            lo, hi = int(qslp[p]), int(qslp[p + 1])
            for t in cu.tolist():
                if lo < t < hi:
                    mamba.append((row, rows[row].context_len + t - lo))
        drawn.append("Mamba chunk boundaries")
    prefix, shared = 0, []
    if fields.get("use_cascade") is True and batch.common_prefix_len > 0:
        prefix = batch.common_prefix_len
        sp = _host(fields.get("shared_kv_page_indices"))
        shared = sp.tolist() if sp is not None else []
        drawn.append("cascade prefix")
    notes = []
    if ok:
        r = result
        assert r is not None
        notes.append(f"{r.kind}: reorder threshold {r.threshold}; split from {source}; drawn: "
                     + ", ".join(drawn))
        notes += reorder_lines(batch, r)
    else:
        notes.append(f"input batch; split from {source}")
    late = _decode_like_after_split(batch, result) if ok else []  # type: ignore[arg-type]
    title = (f"{len(rows)} requests, {int(batch.qsl[-1])} tokens, block size {batch.block_size}"
             + (f", local attention chunk {batch.chunk}" if batch.chunk else ""))
    return batch_svg.BatchDrawing(rows, batch.block_size, split.num_decodes, virtual, batch.chunk,
                                  title, backend=result.kind if ok else "",  # type: ignore
                                  notes=notes, out_of_order=late,
                                  warning=bool(ok and result.swaps),  # type: ignore
                                  paged_kv=pages, mla_chunks=mla, mamba_boundaries=mamba,
                                  cascade_prefix_len=prefix, cascade_shared_pages=shared)


# ---- the command -----------------------------------------------------------------------------

def _keys_help() -> str:
    width = max(len(k) for k in _KEY_NAMES)
    lines = ["the batch JSON's keys (query_lens[/context_lens] or query_start_loc/seq_lens, "
             "not both):"]
    for k, meaning, example in KEYS:
        lines.append(f"  {k:<{width}}  {meaning}")
        lines.append(f"  {'':<{width}}  e.g. \"{k}\": {example}")
    lines.append("")
    lines.append('example: {"query_lens": [1, 1, 32, 20], "context_lens": [40, 99, 64, 0], '
                 '"block_size": 16}')
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="attn-inspect",
                                description=__doc__.splitlines()[0].replace("``", ""),
                                epilog=_keys_help(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("batch", help="the batch description (JSON file, or - for stdin)")
    p.add_argument("--backend", action="append", help="a backend to show (repeatable)")
    p.add_argument("--svg", help="write a drawing of the batch and of what a backend built")
    p.add_argument("--draw", metavar="BACKEND",
                   help="the backend the SVG shows (default: the first shown that built)")
    p.add_argument("--library", help="libattn.so.1 (default: $ATTN_LIBRARY or the installed one)")
    p.add_argument("--all", action="store_true", help="print tensors whole")
    args = p.parse_args(argv)
    try:
        text = sys.stdin.read() if args.batch == "-" else open(args.batch).read()
        batch = Batch(json.loads(text))
    except (OSError, ValueError) as e:
        print(f"attn-inspect: {args.batch}: {e}", file=sys.stderr)
        return 2
    try:
        lib = load(args.library) if args.library else load()
    except AttnError as e:
        print(f"attn-inspect: {e}", file=sys.stderr)
        return 2
    backends = args.backend or batch.backends or lib.backends()
    print(f"batch: query_lens {batch.query}, context_lens {batch.context}, block_size "
          f"{batch.block_size}" + (f", attention_chunk_size {batch.chunk}" if batch.chunk else "")
          + (f" (from query_start_loc {batch.qsl.tolist()}, seq_lens {batch.seq})"
             if batch.form == "query_start_loc" else ""))
    results = {}
    for backend in backends:
        results[backend] = inspect_backend(lib, batch, backend)
        print()
        print(describe(lib, batch, backend, args.all, results[backend]))
    if args.svg:
        if args.draw:
            chosen = results.get(args.draw) or inspect_backend(lib, batch, args.draw)
            if chosen.error is not None:
                print(f"attn-inspect: cannot draw {args.draw}: {chosen.error}", file=sys.stderr)
                return 1
        else:
            chosen = next((r for r in results.values() if r.error is None), None)
        try:
            d = drawing(lib, batch, result=chosen)
        except AttnError as e:
            print(f"attn-inspect: cannot draw the batch: {e}", file=sys.stderr)
            return 1
        with open(args.svg, "w") as f:
            f.write(batch_svg.render_svg(d))
        print(f"\nwrote {args.svg}" + (f" ({chosen.kind})" if chosen is not None else
                                       " (the input batch only: no backend built it)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
