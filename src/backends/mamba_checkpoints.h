// vLLM 0.33's prefill checkpoint plan (model_executor/layers/mamba/checkpoint.py:
// MambaPrefillCheckpointBuilder.build, compute_mamba_prefill_checkpoints), shared by MAMBA2
// (its prefill rows) and PLE_SHORT_CONV_ATTN (its non-spec rows).
#pragma once

#include <cstdint>

#include "core/builder_config.h"
#include "core/common_metadata.h"
#include "core/kv_cache_spec.h"

namespace attn::backends {

/// Whether MambaPrefillCheckpointBuilder.build can answer anything but None: "align" mode,
/// checkpoint blocks in the spec, the config's hash_block_size and cache_hit_alignment_tokens set.
bool mamba_checkpoints_enabled(const KvCacheSpec& spec, const BuilderConfig& c);
/// Its drop_eagle_block: spec decode with use_eagle_block_drop and no lookahead hash tokens.
bool mamba_checkpoint_drop_eagle_block(const BuilderConfig& c);

/// Where a plan is staged: n host entries each.
struct CheckpointPlanHost {
  int32_t* offsets = nullptr;     ///< position - query start, 0: none
  int32_t* query_lens = nullptr;  ///< the rows' query lengths
  int64_t* rows = nullptr;        ///< the request rows
  int64_t* cols = nullptr;        ///< cdiv(seq_len, block_size) - 2, -1: none
};

/// compute_mamba_prefill_checkpoints over n request rows (rows[k], or row0 + k when `rows` is
/// null) with the host lengths `seq_host` (the bound vLLM reads): per row the checkpoint
/// position get_mamba_prefill_checkpoint_position(seq_len, cache_hit_alignment_tokens,
/// drop_eagle_block, lookahead) and whether is_mamba_prefill_checkpoint_valid places it in this
/// query. Refuses (ATTN_ERR_INVALID_ARGUMENT) a checkpoint column outside the block table (vLLM's
/// gather would raise). Returns whether any row has one (else vLLM's metadata is None).
bool plan_mamba_checkpoints(const KvCacheSpec& spec, const BuilderConfig& c,
                            const CommonMetadata& common, const int32_t* seq_host,
                            const int32_t* rows, int64_t row0, int64_t n,
                            const CheckpointPlanHost& out);

}  // namespace attn::backends
