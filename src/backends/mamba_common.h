// What the Mamba-family builders share (MAMBA2, MAMBA1, SHORT_CONV, LINEAR_ATTN, GDN_ATTN):
// the MambaSpec checks, vLLM's decode_cudagraph_max_bs, mamba_get_block_table_tensor for the
// three mamba_cache_modes, and tensor views of a state-index table.
#pragma once

#include <cstdint>

#include "backends/backend_descriptor.h"
#include "core/builder_config.h"
#include "core/common_metadata.h"
#include "core/kv_cache_spec.h"
#include "core/tensor.h"
#include "ops/exec.h"

namespace attn::backends {

/// vLLM's NULL_BLOCK_ID (utils.py): the state index of padded decode rows.
inline constexpr int32_t kNullBlockId = 0;
/// torch.bool as DLPack describes it (kDLBool, 8 bits).
inline constexpr DType kBool{6, 8, 1};

/// Error(kUnsupported) unless `spec` is an ATTN_KV_MAMBA spec whose mamba_type is AUTO or
/// `expected` (vLLM's MAMBA_TYPE_TO_BACKEND_MAP sends other types to other backends).
void check_mamba_spec(const char* backend, int32_t expected, const KvCacheSpec& spec);
/// Error(kUnsupported) for mamba_cache_mode "all": vLLM 0.33 removed it (its
/// cache_config.mamba_cache_mode accepts "none" and "align" only).
void check_mamba_cache_mode(const char* backend, const KvCacheSpec& spec);

/// Whether vLLM 0.33's MambaPrefillCheckpointBuilder.build can return checkpoints for this
/// builder: "align" mode, checkpoint blocks in the spec, the config's hash_block_size and
/// cache_hit_alignment_tokens resolved (else it returns None).
bool prefill_checkpoints_enabled(const KvCacheSpec& spec, const BuilderConfig& c);
/// Its drop_eagle_block: spec decode with use_eagle_block_drop and no lookahead hashes.
bool checkpoint_drops_eagle_block(const BuilderConfig& c);

/// The host lengths the checkpoint plan reads: common->seq_lens_cpu_upper_bound, else the exact
/// host seq_lens. Error(kInvalidArgument) naming `backend` when neither is given (vLLM 0.33
/// asserts the bound is not None).
const int32_t* checkpoint_seq_lens(const char* backend, const CommonMetadata& batch);

/// Where plan_prefill_checkpoints writes (host memory, `count` entries each; any may be null
/// but `offsets` and `cols`).
struct CheckpointPlan {
  int32_t* offsets = nullptr;     ///< checkpoint offset into the row's query, 0 for none
  int32_t* query_lens = nullptr;  ///< the row's query length
  int64_t* rows = nullptr;        ///< the request row
  int64_t* cols = nullptr;        ///< the checkpoint's block-table column, -1 for none
};

/// vLLM 0.33's compute_mamba_prefill_checkpoints over `count` request rows (`request_rows`, or
/// rows first_row.. when null), with `seq_lens` the host lengths it reads
/// (seq_lens_cpu_upper_bound): per row the checkpoint position
/// (get_mamba_prefill_checkpoint_position) and whether is_mamba_prefill_checkpoint_valid places
/// it in this query. Returns whether any row has one (else vLLM's checkpoint is None).
/// Error(kInvalidArgument) naming `backend` when a valid checkpoint's column lies outside the
/// block table (vLLM's block_table[rows, cols] would raise).
bool plan_prefill_checkpoints(const char* backend, const KvCacheSpec& spec,
                              const BuilderConfig& c, const CommonMetadata& batch,
                              const int32_t* seq_lens, const int64_t* request_rows,
                              int64_t first_row, int64_t count, const CheckpointPlan& out);

/// vLLM's decode_cudagraph_max_bs: max_num_seqs * per_seq, capped by the largest CUDA graph
/// capture size (config->max_cudagraph_capture_size, else vLLM's default list's largest).
int64_t decode_cudagraph_max_bs(const BuilderConfig& config, int64_t per_seq);

/// The state-index table of a batch: vLLM's mamba_get_block_table_tensor(block_table,
/// seq_lens, spec, mamba_cache_mode). "none" views the block table;
/// "align" gathers 1 + num_speculative_blocks columns per request into a builder buffer.
struct StateTable {
  Tensor table;            ///< (num_reqs, cols) int32 on the builder's device.
  bool in_buffer = false;  ///< `table` is a builder buffer ("align").
};

/// Checks the block table against the mode before a build (vLLM indexes or gathers it):
/// "none": at least one column when there are requests; "align": the gathered columns
/// start + num_speculative_blocks (start = max((seq_len - 1) // block_size, 0)) inside the
/// table, from host seq_lens (required; Error naming `backend`); "all": as every backend does
/// (cdiv(seq_len, block_size) columns, checked by the base validation).
void check_state_table(const char* backend, const KvCacheSpec& spec, const CommonMetadata& c);
/// The same for a replacement table of `rows` rows whose longest sequence was `host_max_seq_len`
/// tokens (-1: unknown, only the shape is checked) (update_block_table).
void check_replacement_state_table(const char* backend, const KvCacheSpec& spec,
                                   const Tensor& block_table, int64_t rows,
                                   int64_t host_max_seq_len, const Device& device);

/// mamba_get_block_table_tensor. `seq_lens` is the exec-side pointer; `align_buffer` holds
/// num_reqs * (1 + num_speculative_blocks) int32 on the builder's device.
StateTable mamba_state_table(const ops::Exec& exec, const KvCacheSpec& spec,
                             const Tensor& block_table, const int32_t* seq_lens, int64_t num_reqs,
                             int32_t* align_buffer, const Device& device);

/// Rows [row0, row0 + rows) and columns [0, cols) of a 2-D tensor (a view).
Tensor matrix_view(const Tensor& m, int64_t row0, int64_t rows, int64_t cols);
/// Column `col` of rows [row0, row0 + rows) of a 2-D tensor, as a strided 1-D view.
Tensor column_view(const Tensor& m, int64_t row0, int64_t rows, int64_t col);
/// Entries [start, start + n) of a 1-D tensor (a view).
Tensor vector_view(const Tensor& v, int64_t start, int64_t n);

/// The exec-side pointers of a validated batch: device tensors on a CUDA builder, the validated
/// host copies on a host one.
inline const int32_t* exec_qsl(const ops::Exec& e, const CommonMetadata& c) {
  return e.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
}
inline const int32_t* exec_seq_lens(const ops::Exec& e, const CommonMetadata& c) {
  return e.on_cuda ? c.seq_lens->as<const int32_t>() : c.seq_lens_host;
}

/// vLLM's causal conv1d metadata of `num_prefills` requests whose relative query_start_loc is
/// `qsl_p_host` (host) and `qsl_p_exec` (where the outputs live): the host `nums` (cdiv(len, 8)
/// each) and the two program buffers of max(1024, tot) * 2 entries. Returns tot.
int64_t conv1d_metadata(const ops::Exec& exec, const int32_t* qsl_p_host,
                        const int32_t* qsl_p_exec, int64_t num_prefills, int32_t* nums,
                        int32_t* batch_ptr, int32_t* token_chunk_offset_ptr,
                        int64_t program_capacity);
/// max(1024, tot) * 2: vLLM's MAX_NUM_PROGRAMS.
inline int64_t conv1d_num_programs(int64_t tot) { return (tot > 1024 ? tot : 1024) * 2; }
/// The most programs any batch of the config can need: cdiv(tokens, 8) + requests, as vLLM's
/// mamba2_static_sizes bounds them.
int64_t conv1d_program_capacity(const BuilderConfig& config);

}  // namespace attn::backends
