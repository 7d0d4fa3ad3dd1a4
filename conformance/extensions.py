"""libattn metadata fields that vLLM 0.33's metadata object does not have, accepted as
documented libattn extensions (per backend, each with its reason). Any other libattn-only field
is a mismatch, as is any vLLM field libattn lacks."""
from __future__ import annotations

from typing import Dict

#: backend (or wrapper) -> {field: reason}
EXTENSIONS: Dict[str, Dict[str, str]] = {
    # the chunked-local wrapper: vLLM keeps the same remap as a closure attribute
    # (metadata.make_virtual_batches_block_table), compared through remap_local_block_table
    "ChunkedLocal": {
        "virtual_req": "the block-table remap vLLM keeps as the make_virtual_batches_block_table "
                       "closure (compared by applying both to the batch's table)",
        "virtual_block_start": "same remap, second half",
    },
    # the cross wrapper: vLLM keeps the decoder's seq_lens only in the CommonAttentionMetadata
    "Cross": {
        "decoder_seq_lens": "the decoder's own seq_lens, which vLLM's cross builder replaces "
                            "by encoder_seq_lens and does not keep",
    },
}
