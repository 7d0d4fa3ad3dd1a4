"""One batch as each side's input: vLLM's CommonAttentionMetadata (torch.from_numpy over the
batch's arrays) and libattn's CommonMetadata (the binding over the same numpy arrays)."""
from __future__ import annotations

from typing import Any

from .batches import Batch
from .vllm_env import common_metadata


def vllm_common(ctx: Any, b: Batch, **extra: Any) -> Any:
    return common_metadata(ctx.env, query_start_loc=b.qsl, query_start_loc_cpu=b.qsl_cpu,
                           seq_lens=b.seq, seq_lens_cpu=b.seq_cpu, block_table=b.bt,
                           slot_mapping=b.slots, num_reqs=b.n, num_actual_tokens=b.tokens,
                           max_query_len=b.max_q, max_seq_len=b.max_s, **extra)


def lib_common(ctx: Any, b: Batch, **extra: Any) -> Any:
    import libattn
    return libattn.CommonMetadata(query_start_loc=b.qsl, seq_lens=b.seq, block_table=b.bt,
                                  slot_mapping=b.slots, query_start_loc_cpu=b.qsl_cpu,
                                  seq_lens_cpu=b.seq_cpu, num_reqs=b.n, num_actual_tokens=b.tokens,
                                  max_query_len=b.max_q, max_seq_len=b.max_s, **extra)
