"""StaticSink (vLLM 0.33's create_static_sink_attention_backend over FLASH_ATTN and TRITON_ATTN,
a SinkFullAttentionSpec with sink_len = max(64, block_size)) against libattn's same backend with
kv_cache_spec.sink_len (ABI 1.7), on the builder items' batches: every field of the wrapped
metadata (the sink-prefixed persistent block_table whole, seq_lens + sink_len, max_seq_len +
sink_len) and the builder's class answers. Both builders are kept across batches, so the
persistent table's columns a batch does not rewrite are compared too. vLLM's build edits
seq_lens in place: its side gets a copy of the batch's (builder_items.builder_item)."""
from __future__ import annotations

from typing import List

from .builder_items import builder_item
from .item import Item


def static_sink_items() -> List[Item]:
    return [builder_item(b, "StaticSink") for b in ("FLASH_ATTN", "TRITON_ATTN")]
