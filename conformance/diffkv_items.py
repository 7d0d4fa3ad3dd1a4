"""FLASH_ATTN_DIFFKV and TRITON_ATTN_DIFFKV: vLLM 0.33's builders for K/V of different head sizes
(FlashAttentionBackend's builder under FLASH_ATTN_DIFFKV; TritonAttentionDiffKVMetadataBuilder,
its softmax_segm_output sized by next_power_of_2(head_size_v)) with a FullAttentionSpec whose
head_size_v is 64, 96, 192 or 256 (by block size; the K head size is the model's 128), against
libattn's backends of those names with kv_cache_spec.head_size_v (ABI 1.7), on the builder
items' batches: every field and the builder's class answers (builder_items, pseudo-wrapper
"DiffKV": the batches carry no 0.33 model inputs and no DCP, as the wrapper items)."""
from __future__ import annotations

from typing import List

from .builder_items import builder_item
from .item import Item


def diffkv_items() -> List[Item]:
    items = []
    for backend in ("FLASH_ATTN", "TRITON_ATTN"):
        item = builder_item(backend, "DiffKV")
        item.name = f"{backend}_DIFFKV"
        items.append(item)
    # FLASH_ATTN_DIFFKV builds with FLASH_ATTN's builder, which supports update_block_table
    item = builder_item("FLASH_ATTN", "DiffKV", update=True)
    item.name = "FLASH_ATTN_DIFFKV (update_block_table)"
    items.append(item)
    return items
