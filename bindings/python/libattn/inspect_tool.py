"""``attn-inspect``: a batch description in, every backend's metadata out, and an SVG drawing.

    attn-inspect batch.json [--backend FLASH_ATTN ...] [--svg batch.svg] [--library PATH] [--all]

The batch is JSON (``-`` reads standard input)::

    {"query_lens": [1, 1, 32, 20], "context_lens": [40, 99, 64, 0], "block_size": 16,
     "backends": ["FLASH_ATTN", "FLASHINFER"],          # optional; default: every backend
     "attention_chunk_size": 32,                         # optional: chunked local attention
     "common_prefix_len": 0,                             # optional: cascade attention
     "spec": {"num_kv_heads": 8, "head_size": 128},      # optional KvCacheSpec fields
     "config": {"device_capability": 90}}                # optional BuilderConfig fields

Blocks are numbered from 1 in request order (0 is vLLM's null block) unless "block_table" gives
the rows. For each backend it prints the CUDA graph support, the reorder threshold, the
decode/prefill split the builder would see, and every field of the metadata (tensors shortened;
``--all`` prints them whole). ``--svg`` draws the requests, their query and context spans, the
KV blocks, the decode/prefill split and the local-attention virtual batches.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import batch_svg
from .common_metadata import CommonMetadata
from .config import BuilderConfig, KvCacheSpec
from .enums import KvCacheKind
from .errors import AttnError
from .library import Library, load

__all__ = ["Batch", "main", "describe", "drawing"]


class Batch:
    """A batch description: the JSON's fields with their defaults, and the arrays it makes."""

    def __init__(self, desc: Dict[str, Any]) -> None:
        try:
            self.query = [int(x) for x in desc["query_lens"]]
            self.context = [int(x) for x in desc.get("context_lens", [0] * len(self.query))]
        except KeyError as e:
            raise ValueError(f"the batch needs {e.args[0]!r}") from None
        if len(self.context) != len(self.query):
            raise ValueError(f"context_lens has {len(self.context)} entries, query_lens "
                             f"{len(self.query)}")
        if any(q < 0 for q in self.query) or any(c < 0 for c in self.context):
            raise ValueError("query_lens and context_lens must be >= 0")
        self.block_size = int(desc.get("block_size", 16))
        if self.block_size <= 0:
            raise ValueError(f"block_size={self.block_size} must be positive")
        self.chunk = int(desc.get("attention_chunk_size", 0))
        self.common_prefix_len = int(desc.get("common_prefix_len", 0))
        self.backends: Optional[List[str]] = desc.get("backends")
        self.spec_fields = dict(desc.get("spec", {}))
        self.config_fields = dict(desc.get("config", {}))
        self.seq = [c + q for c, q in zip(self.context, self.query)]
        n = len(self.query)
        longest = max(self.seq, default=0)
        width = max(1, -(-max(longest, 1) // self.block_size))
        if "block_table" in desc:
            rows = desc["block_table"]
            width = max([width] + [len(r) for r in rows])
            self.table = np.zeros((n, width), np.int32)
            for r, row in enumerate(rows):
                self.table[r, : len(row)] = row
        else:
            self.table = np.zeros((n, width), np.int32)
            nxt = 1
            for r, s in enumerate(self.seq):
                k = -(-s // self.block_size)
                self.table[r, :k] = np.arange(nxt, nxt + k)
                nxt += k
        self.qsl = np.cumsum([0] + self.query, dtype=np.int32)
        self.slots = np.array([int(self.table[r, p // self.block_size]) * self.block_size
                               + p % self.block_size
                               for r in range(n) for p in range(self.context[r], self.seq[r])],
                              np.int64)

    def common(self) -> CommonMetadata:
        return CommonMetadata(query_start_loc=self.qsl, seq_lens=np.array(self.seq, np.int32),
                              block_table=self.table, slot_mapping=self.slots)

    def spec(self, local: bool = False) -> KvCacheSpec:
        fields = {"num_kv_heads": 8, "head_size": 128, **self.spec_fields}
        if local and self.chunk:
            fields.update(kind=KvCacheKind.CHUNKED_LOCAL_ATTENTION, attention_chunk_size=self.chunk)
        return KvCacheSpec(block_size=self.block_size, **fields)

    def config(self) -> BuilderConfig:
        n, tokens = len(self.query), int(self.qsl[-1])
        fields = {"device_capability": 90, "num_gpu_blocks": int(self.table.max(initial=0)) + 1,
                  **self.config_fields}
        return BuilderConfig(max_num_seqs=max(n, 1), max_num_batched_tokens=max(tokens, 1),
                             max_model_len=max(max(self.seq, default=1), 1),
                             num_attention_heads=int(fields.pop("num_attention_heads", 32)),
                             **fields)


def _format(value: Any, whole: bool) -> str:
    if isinstance(value, np.ndarray):
        shape = "x".join(map(str, value.shape)) or "scalar"
        flat = value.reshape(-1)
        if whole or flat.size <= 16:
            body = str(value.tolist())
        else:
            body = "[" + ", ".join(map(str, flat[:12].tolist())) + f", ... ({flat.size} values)]"
        return f"{value.dtype}[{shape}] {body}"
    return repr(value)


def describe(lib: Library, batch: Batch, backend: str, whole: bool = False) -> str:
    """The text block of one backend: its level, threshold, split and every field."""
    spec, config = batch.spec(local=bool(batch.chunk)), batch.config()
    lines = []
    try:
        level = lib.backend_cudagraph_support(backend, spec, config)
        with lib.builder(backend, spec, config) as b:
            threshold = b.reorder_batch_threshold
            split = lib.split_decodes_and_prefills(batch.common(), threshold or 1)
            md = b.build(batch.common(), common_prefix_len=batch.common_prefix_len)
            lines.append(f"== {md.kind}: cudagraph {level.name}, reorder threshold {threshold}, "
                         f"{split.num_decodes} decodes / {split.num_prefills} prefills "
                         f"({split.num_decode_tokens} / {split.num_prefill_tokens} tokens)")
            for name, value in md.items():
                lines.append(f"  {name:<34} {_format(value, whole)}")
    except AttnError as e:
        lines.append(f"== {backend}: {e}")
    return "\n".join(lines)


def drawing(lib: Library, batch: Batch, threshold: int = 1) -> batch_svg.BatchDrawing:
    """What the SVG shows: rows, the split at ``threshold``, the local virtual batches."""
    rows = [batch_svg.RequestRow(i, c, q, batch.table[i, : -(-s // batch.block_size)].tolist())
            for i, (c, q, s) in enumerate(zip(batch.context, batch.query, batch.seq))]
    split = lib.split_decodes_and_prefills(batch.common(), threshold)
    virtual = []
    if batch.chunk:
        local = lib.make_local_attention_virtual_batches(batch.chunk, batch.common(),
                                                         batch.block_size)
        for v in range(len(local.seq_lens)):
            q = int(local.query_start_loc[v + 1] - local.query_start_loc[v])
            kv = int(local.seq_lens[v])
            start = int(local.virtual_block_start[v]) * batch.block_size
            virtual.append(batch_svg.VirtualBatch(int(local.virtual_req[v]), start + kv - q, q,
                                                  start, kv))
    title = (f"{len(rows)} requests, {int(batch.qsl[-1])} tokens, block size {batch.block_size}"
             + (f", local attention chunk {batch.chunk}" if batch.chunk else ""))
    return batch_svg.BatchDrawing(rows, batch.block_size, split.num_decodes, virtual, batch.chunk,
                                  title)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="attn-inspect", description=__doc__.splitlines()[0])
    p.add_argument("batch", help="the batch description (JSON file, or - for stdin)")
    p.add_argument("--backend", action="append", help="a backend to show (repeatable)")
    p.add_argument("--svg", help="write a drawing of the batch to this file")
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
          f"{batch.block_size}" + (f", attention_chunk_size {batch.chunk}" if batch.chunk else ""))
    for backend in backends:
        print()
        print(describe(lib, batch, backend, args.all))
    if args.svg:
        try:
            d = drawing(lib, batch)
        except AttnError as e:
            print(f"attn-inspect: cannot draw the batch: {e}", file=sys.stderr)
            return 1
        with open(args.svg, "w") as f:
            f.write(batch_svg.render_svg(d))
        print(f"\nwrote {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
