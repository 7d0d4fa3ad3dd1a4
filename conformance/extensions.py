"""libattn metadata fields that vLLM 0.33's metadata object does not have, accepted as
documented libattn extensions (per backend, each with its reason). Any other libattn-only field
is a mismatch, as is any vLLM field libattn lacks."""
from __future__ import annotations

from typing import Dict

#: backend (or wrapper) -> {field: reason}
EXTENSIONS: Dict[str, Dict[str, str]] = {
    # FA3's AOT scheduler is FlashAttention's own code (get_scheduler_metadata): vLLM 0.33
    # keeps only its output, libattn returns the call's inputs (docs/backends/flash_attn.md)
    "FLASH_ATTN": {
        "aot_schedule": "whether the runtime should call FA3's get_scheduler_metadata (vLLM "
                        "decides it inside build(); 0.33 keeps only the call's output)",
        "scheduler_metadata_buffer": "the persistent buffer the runtime passes FA3's scheduler "
                                     "as its output (vLLM's self.scheduler_metadata)",
        **{f"scheduler_{a}": "an input of FA3's get_scheduler_metadata (FlashAttention's code, "
                             "not vLLM's): libattn returns the call's arguments, not its output"
           for a in ("batch_size", "max_seqlen_q", "max_seqlen_k", "num_heads_q",
                     "num_heads_kv", "headdim", "cache_seqlens", "cu_seqlens_q", "qkv_dtype",
                     "page_size", "causal", "window_left", "window_right", "num_splits")},
    },
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
