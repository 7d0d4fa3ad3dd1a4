"""Whisper causal block pooling (vLLM 0.33's create_whisper_attention_backend_with_block_pooling
over FLASH_ATTN and TRITON_ATTN, a FullAttentionSpec, block_pool_size 4, 2 or 8 by block size)
against libattn's same backend with config.block_pool_size (ABI 1.7), on the builder items'
batches: every field of the wrapped metadata (built over block_size * P blocks from the pooled
query_start_loc, seq_lens, scalars and expanded slot mapping) and the builder's class answers."""
from __future__ import annotations

from typing import List

from .builder_items import builder_item
from .item import Item


def block_pooling_items() -> List[Item]:
    return [builder_item(b, "BlockPool") for b in ("FLASH_ATTN", "TRITON_ATTN")]
