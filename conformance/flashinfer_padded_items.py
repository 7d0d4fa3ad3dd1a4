"""FLASHINFER on all-decode batches padded past their requests (issues 37 and 34): vLLM 0.33's
model runner pads num_actual_tokens to a CUDA graph size (slot_mapping PAD_SLOT_ID, positions
0 past the scheduled tokens); split_decodes_and_prefills then counts every token as a decode
token, and a FlashInfer-native decode plans num_decode_tokens rows of the builder's persistent
paged_kv_indptr / paged_kv_last_page_len buffers: the slices stop at the buffers' ends
(max_num_seqs + 1 and max_num_seqs entries), and the rows past num_reqs hold what earlier
builds of that builder left there.

The item builds vLLM's own FlashInferMetadataBuilder and libattn's FLASHINFER (the FLASHINFER
item's builders, recorders and comparison: builder_items.builder_item) with a small
max_num_seqs (4, 8, 16 or 64), on SM 9.0, 10.0 and 12.0 (vLLM's platform answers the
capability, patches.device_capability), TRT-LLM off in three builders of four (FlashInfer-native
decode through fast_plan_decode; the fourth takes XQA / trtllm-gen decode), and batches of at
most max_num_seqs requests, mostly all decodes, with num_actual_tokens padded by 0 to 5,000
tokens (up to 80 times max_num_seqs). Both sides keep their builders across the batches of a
setting (builder_items' cache, the same order on both sides), so the rows a padded batch plans
past its requests are the ones earlier batches wrote: compared too.
"""
from __future__ import annotations

import dataclasses
from typing import Any, List

from .batches import Batch
from .item import Item, choice_rng

#: vLLM's platform capability of the builder, and its TRT-LLM switch (False: native decode)
CAPABILITIES = ((9, 0), (10, 0), (12, 0))
MAX_SEQS = (4, 8, 16, 64)
PAD_LIMIT = 5000


def _adjust(b: Batch) -> Batch:
    """The builder's settings, drawn per group of the batches the runner builds in a row (it
    sorts a builder item's batches by block size, speculative tokens and chunk), so that a
    builder serves many batches; the batch's padding and its request count (<= max_num_seqs)
    per batch. DCP (whose rank is drawn per batch, a builder of its own each time) is kept in
    one group of four."""
    import numpy as np
    from .flashinfer_plans import CACHE_DTYPES
    g = np.random.default_rng([*b.seed[:2], b.block_size, b.spec, b.chunk, 70])
    max_seqs = int(g.choice(MAX_SEQS))
    keep_dcp = g.random() < 0.25
    cap_i, dtype_i, trt = int(g.integers(0, 3)), int(g.integers(0, len(CACHE_DTYPES))), g.random()
    if b.n > max_seqs:
        c = b.subset(range(max_seqs))
        c.seed, c.optimistic = b.seed, b.optimistic
        b = c
    if not keep_dcp:
        b.dcp, b.interleave = 1, 1
    caps = [x for x in CAPABILITIES if not (b.dcp > 1 and x == (10, 0))]
    b.fi_settings = (caps[cap_i % len(caps)], CACHE_DTYPES[dtype_i], None if trt < 0.25 else False)
    b.max_seqs = max_seqs
    r = choice_rng(b, 71)
    u = r.random()
    if u < 0.1:
        pad = 0
    elif u < 0.45:
        pad = int(r.integers(1, max_seqs + 1))
    elif u < 0.8:
        pad = int(r.integers(max_seqs + 1, 8 * max_seqs + 1))
    else:
        pad = int(r.integers(1, PAD_LIMIT + 1))
    b.pad_tokens = pad
    return b


def _path(base: Any) -> Any:
    """The FLASHINFER item's path plus what the padding made of a FlashInfer-native decode:
    rows planned past num_reqs (the buffers' leftovers) and past max_num_seqs (cut there)."""
    def path(ctx: Any, b: Batch, v: Any) -> str:
        import vllm.v1.attention.backends.flashinfer as fi
        p = base(ctx, b, v)
        if isinstance(v.decode, fi.FIDecode) and int(v.num_decode_tokens) > int(v.num_decodes) \
                and not getattr(v.decode.wrapper, "init_kwargs", {}).get("backend") == "fa2":
            rows = int(v.num_decode_tokens)
            p += ", native rows past num_reqs" + (" and max_num_seqs" if rows > b.max_seqs else "")
        return p
    return path


def flashinfer_padded_items() -> List[Item]:
    from .builder_items import builder_item
    base = builder_item("FLASHINFER")
    return [dataclasses.replace(base, name="FLASHINFER (padded decode)", adjust=_adjust,
                                path=_path(base.path),
                                kinds=("decode", "decode", "decode", "padded", "padded",
                                       "mixed", "spec"))]
