// Batch operations: the one header of src/ops. They are vLLM's utilities
// (vllm/v1/attention/backends/utils.py, vllm/v1/worker/block_table.py, ubatch_utils.py) on raw
// arrays.
//
// Two kinds:
//  - host-only: ops whose results are host scalars or small host lists that steer the
//    runtime's control flow (splits, the reorder swap list, prefill chunks, local-attention
//    planning). vLLM computes them on the CPU from the *_cpu mirrors; so does libattn.
//  - tensor ops: they take an Exec and run on the host or on a device, writing caller-provided
//    buffers. Each is written once, in src/ops/<op>.cc, against an executor (src/ops/launch.h,
//    kernels/par.h): the same source is the host path and the CUDA kernels; tests compare the
//    two on the simulated device and wherever a GPU exists. Pointers are host pointers for a
//    host Exec and device pointers for a CUDA one.
//
// Ops trust their callers (src/core validates first); a precondition vLLM asserts is checked
// here too and reported as Error(kInvalidArgument) (src/ops/error.h).
//
// The argument structs of the ops with many parameters are in kernels/op_args.h (the lowest
// layer, so that kernels/ headers may name them too).
#pragma once

#include <cstdint>

#include "index_math.h"  // kernels/: the integer helpers of every op
#include "op_args.h"    // kernels/: the structs an op and its kernel share
#include "ops/exec.h"

namespace attn::ops {

// ---- host-only ------------------------------------------------------------------------------

/// Counts of a batch split. split_decodes_and_prefills leaves the extend counts at 0.
struct BatchSplit {
  int64_t num_decodes = 0;
  int64_t num_extends = 0;
  int64_t num_prefills = 0;
  int64_t num_decode_tokens = 0;
  int64_t num_extend_tokens = 0;
  int64_t num_prefill_tokens = 0;
};

/// The options of vLLM 0.33's split_decodes_and_prefills.
struct SplitOptions {
  int32_t decode_threshold = 1;              ///< The longest query counted as a decode.
  bool require_uniform = false;              ///< Decodes must share the first query length.
  bool treat_short_extends_as_decodes = true;  ///< False: is_prefilling rows are prefills.
  const uint8_t* is_prefilling = nullptr;    ///< (num_reqs,) non-zero while prefilling; read
                                             ///< only when treat_short_extends_as_decodes is
                                             ///< false (null: no request is).
};

/// vLLM 0.33's split_decodes_and_prefills on a reordered batch (decode -> short extend -> long
/// extend -> prefill), the one implementation every caller uses:
///  - all decodes when max_query_len <= threshold, (not require_uniform or threshold <= 1) and
///    treat_short_extends_as_decodes;
///  - all prefills when the first query is longer than the threshold (or the batch is empty);
///  - with require_uniform and treat_short_extends_as_decodes, all decodes when every query
///    equals the first or is 0 (a padded uniform batch; its token count is not checked);
///  - otherwise a request is a prefill when its query differs from the first and is not 0
///    (require_uniform) or is longer than the threshold (not), or, without
///    treat_short_extends_as_decodes, when is_prefilling marks it; the first prefill splits
///    the batch (decode tokens = query_start_loc[first prefill]); none: all decodes.
BatchSplit split_decodes_and_prefills(const int32_t* query_start_loc, int64_t num_reqs,
                                      int64_t num_tokens, int64_t max_query_len,
                                      const SplitOptions& options);

/// split_decodes_and_prefills(threshold, require_uniform) with the other options at vLLM's
/// defaults. `who` is unused since 0.33 dropped the "tokens not padded correctly" assertion
/// (kept so that the backends' call sites stay as they are).
inline BatchSplit split_decodes_and_prefills(const int32_t* query_start_loc, int64_t num_reqs,
                                             int64_t num_tokens, int64_t max_query_len,
                                             int32_t decode_threshold, bool require_uniform,
                                             const char* who = nullptr) {
  (void)who;
  SplitOptions o;
  o.decode_threshold = decode_threshold;
  o.require_uniform = require_uniform;
  return split_decodes_and_prefills(query_start_loc, num_reqs, num_tokens, max_query_len, o);
}

/// vLLM's split_decodes_prefills_and_extends on a batch ordered decode -> extend -> prefill.
BatchSplit split_decodes_prefills_and_extends(const int32_t* query_start_loc,
                                              const int32_t* seq_lens, int64_t num_reqs,
                                              int64_t num_tokens, int64_t max_query_len,
                                              int32_t decode_threshold);

/// vLLM 0.33's should_skip_dcp_context_attention (v1/worker/cp_utils.py) on the global context
/// lengths of num_reqs >= 1 requests: true when their maximum is 0 (no rank holds context, so
/// every DCP rank skips the context attention and its collectives). The lengths are `lens`
/// when query_start_loc is null, else lens[r] - (query_start_loc[r + 1] - query_start_loc[r])
/// (lens = seq_lens).
bool should_skip_dcp_context_attention(const int32_t* lens, const int32_t* query_start_loc,
                                       int64_t num_reqs);

/// The counts of vLLM 0.33's split_dcp_context_queries: decode rows, and context-bearing extend
/// rows (num_prefill_*; pure prefills are in neither).
struct DcpContextSplit {
  int64_t num_decode_reqs = 0;
  int64_t num_prefill_reqs = 0;
  int64_t num_decode_tokens = 0;
  int64_t num_prefill_tokens = 0;
};

/// vLLM 0.33's split_dcp_context_queries on a batch ordered decode -> extend -> prefill:
/// max_query_len <= 1: all decodes; without seq_lens (the upper bound; may be null): all
/// "prefill"; else split_decodes_prefills_and_extends(threshold 1)'s decode and extend counts.
DcpContextSplit split_dcp_context_queries(const int32_t* query_start_loc, int64_t num_reqs,
                                          const int32_t* seq_lens, int64_t max_query_len,
                                          int64_t num_actual_tokens);

/// vLLM 0.33's should_split_fa2_dcp_context_attention (v1/worker/cp_utils.py): fa_version == 2,
/// max_query_len > 1, num_prefills = num_reqs - num_decode_reqs > 0, and (num_decode_reqs > 0
/// or num_context_prefill_reqs < num_prefills). fa_version 0 stands for None.
bool should_split_fa2_dcp_context_attention(int32_t fa_version, int64_t max_query_len,
                                            int64_t num_reqs, int64_t num_decode_reqs,
                                            int64_t num_context_prefill_reqs);

/// vLLM 0.33's get_dcp_dummy_context_len (v1/worker/cp_utils.py): 0 unless dcp_world_size > 1,
/// a KV cache config exists and (create_mixed_batch or (is_graph_capturing and uniform_decode));
/// then dcp_world_size * interleave.
int64_t get_dcp_dummy_context_len(int32_t dcp_world_size, int32_t interleave,
                                  bool has_kv_cache_config, bool create_mixed_batch,
                                  bool is_graph_capturing, bool uniform_decode);

/// vLLM 0.33's is_last_ubatch_empty (v1/worker/ubatch_utils.py), num_ubatches >= 1, token
/// counts >= 0: (padded // num_ubatches) * (num_ubatches - 1) >= orig.
bool is_last_ubatch_empty(int64_t orig_num_tokens, int64_t padded_num_tokens,
                          int32_t num_ubatches);

/// vLLM 0.33's get_num_ubatches on ParallelConfig's fields: use_ubatching = enable_dbo or
/// ubatch_size > 1; num_ubatches = 2 if enable_dbo else ubatch_size; 1 without ubatching.
int32_t get_num_ubatches(bool enable_dbo, int32_t ubatch_size);

/// vLLM 0.33's check_ubatch_thresholds on ParallelConfig's fields: false without ubatching,
/// else num_tokens >= the decode threshold (uniform_decode) or the prefill threshold.
bool check_ubatch_thresholds(bool enable_dbo, int32_t ubatch_size,
                             int64_t dbo_decode_token_threshold,
                             int64_t dbo_prefill_token_threshold, int64_t num_tokens,
                             bool uniform_decode);

/// vLLM 0.33's reorder_batch_to_split_decodes_and_prefills, as the list of swap_states(src,
/// dst) calls it makes, in order: swaps[2k] = src, swaps[2k+1] = dst. Regions, in the target
/// order: decode (computed > 0, scheduled <= threshold, computed >= prompt), short extend
/// (computed > 0, scheduled <= threshold, computed < prompt), long extend (computed > 0,
/// scheduled > threshold), prefill (computed == 0). A null `num_prompt_tokens` makes every
/// request done with its prompt: no short extends (libattn's three-region order of ABI 1.0).
/// `swaps` holds 2 * num_reqs entries (a batch never needs more than num_reqs swaps). Returns
/// the number of swaps (0: the batch is already ordered).
int64_t reorder_batch_swaps(const int32_t* num_scheduled_tokens,
                            const int32_t* num_computed_tokens, const int32_t* num_prompt_tokens,
                            int64_t num_reqs, int32_t decode_threshold, int32_t* swaps);

/// vLLM's split_prefill_chunks: greedy request ranges whose seq_lens sum to at most
/// workspace_size; bounds[2k], bounds[2k+1] = start, end (+ request_offset). `bounds` holds
/// 2 * num_seqs entries. Returns the number of chunks. Error(kInvalidArgument) when a seq_len
/// exceeds the workspace.
int64_t split_prefill_chunks(const int32_t* seq_lens, int64_t num_seqs, int64_t workspace_size,
                             int64_t request_offset, int64_t* bounds);

/// vLLM 0.33's multimodal PrefixLM ranges (mm_req_doc_ranges) arrive as `rows`: num_ranges
/// rows (request, start, end) of int32, requests non-decreasing (each request's ranges one run;
/// nothing is sized by num_seqs).
/// compute_mm_prefix_range_tensor's width: the most ranges of a request in [0, num_seqs) (at
/// least 1), or 0 for vLLM's None (every request has no range or the one range (0, 0)).
int64_t mm_prefix_max_ranges(const int32_t* rows, int64_t num_ranges, int64_t num_seqs);
/// compute_mm_prefix_range_tensor into `out` (num_seqs x max_ranges x 2, compact): request i's
/// ranges in order, then (0, 0) padding; rows of requests outside [0, num_seqs) are not read.
void mm_prefix_range_tensor(const int32_t* rows, int64_t num_ranges, int64_t num_seqs,
                            int64_t max_ranges, int32_t* out);
/// fill_mm_prefix_query_ranges into `out` ((>= qsl[num_reqs]) x 2): returns 0 (out untouched)
/// when no range (start < end) covers a scheduled query token, else qsl[num_reqs] after
/// setting those rows to -1 and each covered token t's row to its range (start, end); a token
/// of request r at query offset j has position seq_lens[r] - query_len + j. Requests of `rows`
/// must lie in [0, num_reqs) and qsl must not decrease (the caller checks both).
int64_t fill_mm_prefix_query_ranges(const int32_t* rows, int64_t num_ranges, const int32_t* qsl,
                                    const int32_t* seq_lens, int64_t num_reqs, int32_t* out);

/// The host side of make_local_attention_virtual_batches: everything but the device copies.
/// Arrays hold num_virtual_batches(...) entries (query_start_loc_local one more).
struct LocalAttentionPlan {
  int64_t num_virtual_batches = 0;
  int64_t max_query_len = 0;
  int64_t max_seq_len = 0;
};
/// Number of virtual batches: sum over requests of 1 + cdiv(q_len - q_tokens_in_first_block,
/// chunk).
int64_t local_attention_num_virtual_batches(const int32_t* query_start_loc,
                                            const int32_t* seq_lens, int64_t num_reqs,
                                            int32_t attn_chunk_size);
/// Fills the local query_start_loc (V + 1), seq_lens (V), num_computed_tokens (V), and the
/// per-virtual-batch source request and first block (V each); any output may be null.
LocalAttentionPlan local_attention_plan(const int32_t* query_start_loc, const int32_t* seq_lens,
                                        int64_t num_reqs, int32_t attn_chunk_size,
                                        int32_t block_size, int32_t* query_start_loc_local,
                                        int32_t* seq_lens_local,
                                        int32_t* num_computed_tokens_local,
                                        int32_t* virtual_req, int32_t* virtual_block_start);

/// FlashInfer's paged KV counts on the host (the *_cpu mirrors its plan() reads): indptr
/// (num_reqs + 1) = prefix sum of cdiv(seq_len, page_size); last_page_len = seq_len % page_size,
/// or page_size when that is 0 and seq_len > 0. Returns indptr[num_reqs].
int64_t paged_kv_counts(const int32_t* seq_lens, int64_t num_reqs, int32_t page_size,
                        int32_t* indptr, int32_t* last_page_len);

/// CPU_ATTN's encoder-only KV layout (a private contiguous cache for this batch's tokens):
/// blocks[r] = cdiv(seq_lens[r], block_size), start = exclusive prefix sum of blocks;
/// block_table[r][j] = start[r] + j for j < width (width = max blocks, row stride `stride`);
/// slot_mapping[t] = start[r] * block_size + position for the tokens of request r (position =
/// seq_lens[r] - query length + t - query_start_loc[r]), PAD_SLOT_ID for tokens past
/// query_start_loc[num_reqs] up to num_tokens. Returns the total block count.
int64_t encoder_only_kv_layout(const int32_t* query_start_loc, const int32_t* seq_lens,
                               int64_t num_reqs, int32_t block_size, int64_t width,
                               int64_t stride, int64_t num_tokens, int32_t* block_table,
                               int64_t* slot_mapping);

// ---- tensor ops (host and CUDA) -------------------------------------------------------------

/// out[i] = value for i < n (TRITON_ATTN's capture writes 1 into seq_lens).
void fill_i32(const Exec& exec, int32_t* out, int64_t n, int32_t value);

/// out (rows x cols, compact) = src[row0 + i][col0 + j] (src rows `src_stride` apart): the
/// contiguous sub-bias TREE_ATTN drafts with.
void copy_submatrix_f32(const Exec& exec, const float* src, int64_t src_stride, int64_t row0,
                        int64_t col0, int64_t rows, int64_t cols, float* out);

/// FLEX_ATTENTION's per-request arrays, in one pass (one kernel on CUDA, a block per request):
///  - num_blocks_per_seq[r] = cdiv(seq_lens[r], block_size) and decode_offset[r] = seq_lens[r] -
///    (qsl[r + 1] - qsl[r]) (the computed tokens);
///  - qsl_out[0..num_reqs] = qsl and seq_lens_out[r] = seq_lens[r] (vLLM's copies into its
///    full-capacity persistent_query_start_loc / persistent_seq_lens);
///  - doc_ids[t] = r for t in [qsl[r], qsl[r + 1]) (torch.repeat_interleave of arange(num_reqs)
///    by the query lengths), `num_tokens` = qsl[num_reqs] entries (no write at or past it);
///  - physical_to_logical (num_reqs x num_gpu_blocks int64, row stride `p2l_stride`): -1, then
///    for j < cdiv(seq_lens[r], block_size) (at most the table's width)
///    out[r][block_table[r][j]] = max(itself, j) (the latest logical block wins), then column 0
///    (the null block) = -1. Block ids outside [0, num_gpu_blocks) are skipped.
void flex_request_arrays(const Exec& exec, const int32_t* query_start_loc,
                         const int32_t* seq_lens, int64_t num_reqs, int64_t num_tokens,
                         int32_t block_size, const int32_t* block_table,
                         int64_t block_table_stride, int64_t block_table_width,
                         int64_t num_gpu_blocks, int32_t* num_blocks_per_seq,
                         int32_t* decode_offset, int32_t* doc_ids, int64_t* physical_to_logical,
                         int64_t p2l_stride, int32_t* qsl_out, int32_t* seq_lens_out);

using kernels::FlexBlockMaskIn;

/// FLEX_ATTENTION's direct block mask (vLLM 0.33's _build_block_mask_direct without a
/// sparsity hint or R-SWA). Query group g holds tokens [g * q_block, (g + 1) * q_block); token
/// t < num_tokens of request d = doc_ids[t] at position p = t - qsl[d] + decode_offset[d]
/// contributes block_table[d][j] for j < pages unless j >= num_blocks_per_seq[d] (past its own
/// length), or, with `causal`, j * block_size > p (a future block), or, with a sliding window
/// w > 0, j < max(p - (w - 1), 0) / block_size (before the window); later tokens contribute
/// nothing. Row g of `kv_indices` (row stride `out_stride`, q_block * pages entries) gets the
/// group's ids in [1, num_gpu_blocks) in order of first appearance, then -1; kv_num_blocks[g]
/// their count. `scratch` is workspace: on the host num_gpu_blocks int32 (zero on entry and on
/// return); on CUDA num_groups * scratch_per_group int64 (a power of two >= 2 * q_block *
/// pages per group).
void flex_kv_indices(const Exec& exec, const FlexBlockMaskIn& in, int64_t num_groups,
                     int32_t* kv_indices, int64_t out_stride, int32_t* kv_num_blocks,
                     void* scratch, int64_t scratch_per_group);

/// vLLM 0.33's RocmOctaveMetadataBuilder._fill_query_maps, for t < num_tokens:
/// q_to_req[t] = searchsorted(query_start_loc[1:num_reqs + 1], t, right=True) (num_reqs for a
/// padding token past the last query) and q_to_klen[t] = seq_lens[r] - query_len(r) +
/// (t - query_start_loc[r]) + 1 (the causal key length of the token), 0 for padding. Nothing is
/// written when num_tokens or num_reqs is 0.
void query_key_maps(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                    int64_t num_reqs, int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen);

/// vLLM 0.33's AiterFlashAttentionMetadataBuilder._build_swa_decode_tables (ROCM_AITER_FA's
/// sliding-window decode tables), for the first num_decodes rows: first = max(seq_lens[r] -
/// window, 0) / block_size; swa_block_table[r][j] = block_table[r][min(first + j, bt_width -
/// 1)] for j < num_window_blocks (compact rows of num_window_blocks); swa_seq_lens[r] =
/// seq_lens[r] - first * block_size. block_table rows are bt_row_stride apart.
void swa_decode_tables(const Exec& exec, const int32_t* block_table, int64_t bt_row_stride,
                       int64_t bt_width, const int32_t* seq_lens, int64_t num_decodes,
                       int32_t window, int32_t block_size, int64_t num_window_blocks,
                       int32_t* swa_block_table, int32_t* swa_seq_lens);

/// vLLM 0.33's StaticSinkAttentionBuilder: out[i] = seq_lens[i] + sink_len, except that a
/// length of 0 (a padded request) stays 0 (`seq_lens += sink_len; seq_lens[seq_lens == sink_len]
/// = 0`). `out` may be `seq_lens`.
void static_sink_seq_lens(const Exec& exec, const int32_t* seq_lens, int64_t n, int32_t sink_len,
                          int32_t* out);
/// table[r][j] = j + 1 for r < rows, j < num_sink_blocks (rows `stride` apart): the sink block
/// ids StaticSink's persistent table starts with.
void static_sink_prefix(const Exec& exec, int32_t* table, int64_t rows, int64_t stride,
                        int64_t num_sink_blocks);
/// out[r][num_sink_blocks + j] = block_table[r * block_table_stride + j * block_table_col_stride]
/// for r < rows, j < cols (StaticSink's copy of the batch's table behind the sink blocks; a
/// column stride of 0 is torch's broadcast of a one-column table; out's other entries are left
/// as they are).
void static_sink_block_table(const Exec& exec, const int32_t* block_table,
                             int64_t block_table_stride, int64_t block_table_col_stride,
                             int64_t rows, int64_t cols, int64_t num_sink_blocks, int32_t* out,
                             int64_t out_stride);

/// out[i] = in[i] * pool for i < n (vLLM 0.33's Whisper block pooling scales query_start_loc
/// and seq_lens by block_pool_size). `out` may be `in`.
void block_pool_scale(const Exec& exec, const int32_t* in, int64_t n, int32_t pool, int32_t* out);
/// out[i * pool + j] = max(slot_mapping[i] * pool + j, -1) for i < n, j < pool: every slot
/// expanded into `pool` consecutive slots, a padding slot (-1) into `pool` of them (vLLM 0.33's
/// Whisper block pooling).
void block_pool_slot_mapping(const Exec& exec, const int64_t* slot_mapping, int64_t n,
                             int32_t pool, int64_t* out);

/// The cross-attention slot mapping (vLLM's CrossAttentionBuilder): a request writes its
/// encoder KV only on its first step (seq_len == query_len); those requests, in order, emit
/// slot(i) = block_table[r][i / block_size] * block_size + i % block_size for i in
/// [0, encoder_seq_lens[r]), concatenated into `out` (`total` entries, known on the host).
/// Block indices past `block_table_width` give PAD_SLOT_ID (no read outside the table).
void cross_attention_slot_mapping(const Exec& exec, const int32_t* query_start_loc,
                                  const int32_t* seq_lens, const int32_t* encoder_seq_lens,
                                  int64_t num_reqs, const int32_t* block_table,
                                  int64_t block_table_stride, int64_t block_table_width,
                                  int32_t block_size, int64_t* out, int64_t total);


/// FlashAttention's cascade split (vLLM flash_attn.py, build(), use_cascade branch):
/// cu_prefix_query_lens = [0, num_actual_tokens], prefix_kv_lens = [common_prefix_len],
/// suffix_kv_lens[i] = seq_lens[i] - common_prefix_len for i < num_reqs. One fused pass.
void cascade_split(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                   int64_t num_actual_tokens, int64_t common_prefix_len,
                   int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                   int32_t* suffix_kv_lens);

/// vLLM's get_dcp_local_seq_lens for one rank, of the context lengths
/// (seq_lens[i] - query_len[i]) as FlashAttention's DCP path computes them.
void dcp_context_kv_lens(const Exec& exec, const int32_t* query_start_loc,
                         const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                         int32_t dcp_rank, int32_t interleave, int32_t* out);

/// vLLM's get_dcp_local_seq_lens: out[i] for one rank (dcp_rank >= 0, out has num_reqs
/// entries), or out[i * dcp_size + r] for every rank (dcp_rank < 0, num_reqs x dcp_size).
void dcp_local_seq_lens(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                        int32_t dcp_size, int32_t dcp_rank, int32_t interleave, int32_t* out);

/// get_dcp_local_seq_lens for one length and one rank (kernels/index_math.h; shared by ops,
/// backends and tests of ops).
using kernels::dcp_local_len;

/// ubatch_utils' slice_query_start_locs plus _make_metadata_with_slice's split adjustments:
/// out[k] = qsl[start + k] - qsl[start] for k in [0, stop - start]; then out[1:] -= skip_first
/// and out[last] -= skip_last.
void slice_query_start_locs(const Exec& exec, const int32_t* query_start_loc, int64_t start,
                            int64_t stop, int32_t skip_first, int32_t skip_last, int32_t* out);

/// vLLM 0.33's CommonAttentionMetadata.naive_query_lens(): out[r] = query_start_loc[r + 1] -
/// query_start_loc[r] for r < num_reqs (int32, wrapping as torch does).
void naive_query_lens(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                      int32_t* out);

/// vLLM 0.33's compute_token_to_req_indices (v1/attention/ops/metadata.py): for t < num_tokens,
/// out[t] = the request whose query holds token t for t < num_mapped_tokens (what vLLM's binary
/// search over query_start_loc[1..num_reqs] gives: the first r with query_start_loc[r + 1] > t,
/// at most num_reqs - 1, so -1 when num_reqs is 0), and 0 from num_mapped_tokens on. Computed as
/// a row per request writing its tokens (request 0 from token 0, the last to num_mapped_tokens),
/// which equals the search for a non-decreasing query_start_loc; for one that is not (device
/// offsets that disagree with the validated host mirror, or the ABI utility's unchecked input),
/// every out[t], t < num_tokens, is still written, by a request whose range holds t. Reads only
/// query_start_loc (num_reqs + 1 entries), every read inside it.
void compute_token_to_req_indices(const Exec& exec, const int32_t* query_start_loc,
                                  int64_t num_reqs, int64_t num_mapped_tokens, int64_t num_tokens,
                                  int32_t* out);

/// out[k] = in[k] for k < n, then out[n - 1] -= skip_last (n > 0): a request's seq_len cut by
/// a micro-batch split.
void copy_trim_last(const Exec& exec, const int32_t* in, int64_t n, int32_t skip_last,
                    int32_t* out);

/// block_table.py's compute_slot_mapping: for each request r and token t in
/// [qsl[r], qsl[r+1]): block = block_table[r][pos / (block_size * dcp_size)]; with DCP only the
/// rank's tokens get a slot (others PAD_SLOT_ID); slots [num_tokens, max_num_tokens) are set to
/// PAD_SLOT_ID. A block index beyond the table's width gives PAD_SLOT_ID (no out-of-bounds
/// read; the host path of src/core reports it as an error first).
void compute_slot_mapping(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                          const int64_t* positions, int64_t num_tokens,
                          const int32_t* block_table, int64_t block_table_stride,
                          int64_t block_table_width, int32_t block_size, int32_t dcp_size,
                          int32_t dcp_rank, int32_t interleave, int64_t* slot_mapping,
                          int64_t max_num_tokens);

/// FlashInfer XQA's packed draft mask (vLLM 0.33's _make_xqa_draft_block_mask /
/// _make_xqa_ragged_draft_block_mask): one row per query token of the num_reqs requests
/// (query_start_loc[0..num_reqs], rows from query_start_loc[0]), num_packed uint32 words a row
/// (XQA reads them as 2 * num_packed uint16). Token q of a request of length L sets bit j of
/// word w when kv = 32 w + j satisfies kv < L and, when causal, kv <= q. One launch on CUDA.
void xqa_draft_mask(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                    int32_t num_packed, bool causal, uint32_t* out);

/// FlashInfer's paged KV layout of a batch: indptr (num_reqs + 1) = prefix sum of
/// cdiv(seq_len, page_size); indices = each block-table row's first cdiv(seq_len, page_size)
/// entries, concatenated; last_page_len = seq_len % page_size, or page_size when that is 0 and
/// seq_len > 0. One fused pass (one kernel on CUDA). A request's pages are clamped to
/// [0, block_table_width] and no index past `indices_capacity` is written, so device lengths
/// that disagree with the validated host copy cannot write out of bounds.
void paged_kv_metadata(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                       const int32_t* block_table, int64_t block_table_stride,
                       int64_t block_table_width, int32_t page_size, int32_t* indptr,
                       int32_t* indices, int64_t indices_capacity, int32_t* last_page_len);

/// vLLM 0.33's AiterMLAMetadataBuilder._build_decode arrays (ROCM_AITER_MLA; aiter's kernel
/// sees one-token pages). Per decode r with q = qsl[r + 1] - qsl[r]: kernel_seq_lens[r] =
/// seq_lens[r] + pad_qlen - q (varlen), pad_qlen where q == 0 (pad_qlen > 0), else seq_lens[r];
/// indptr = [0, prefix sums of kernel_seq_lens]; indices[indptr[r] + t] = b * K + s % K with
/// s = t (varlen: t < seq_lens[r] ? t : 0), b = block_table[r][s / K], K = kernel_block_size
/// (after a fill with -1 when reset_indices); qo_indptr = r * uniform_qo or a copy of qsl; the
/// tails past num_reqs + 1 of indptr and qo_indptr (indptr_capacity) hold their last value.
/// Varlen: row i = r * pad_qlen + p is real when p < q: q_rows[i] = real ? qsl[r] + p : 0;
/// o_rows zeroed, o_rows[qsl[r] + p] = i for real rows, o_rows[o_rows_size - 1] = the last
/// non-real row (torch's sequential scatter). Block indices are clamped to the table width.
using AiterMlaDecodeArgs = kernels::AiterMlaDecodeArgs;
void aiter_mla_decode_tables(const Exec& exec, const AiterMlaDecodeArgs& a);

/// vLLM 0.33's ROCMAiterMLASparseMetadataBuilder.build paged_kv_indptr: each query token t <
/// num_tokens of request r (the first r with query_start_loc[r + 1] > t) attends
/// generate_sparse_seqlen_kernel's sparse length min(seq_lens[r] - query_len(r) + (t -
/// query_start_loc[r]) + 1, topk) (0 when seq_lens[r] is 0); indptr[t + 1] is their inclusive sum
/// (torch.cumsum; int32) and indptr[num_tokens + 1 .. capacity) repeats indptr[num_tokens] (the
/// buffer's tail). indptr[0] is not written (0 in the persistent buffer). Reads query_start_loc
/// (num_reqs + 1) and seq_lens (num_reqs); capacity >= num_tokens + 1.
void aiter_sparse_kv_indptr(const Exec& exec, const int32_t* query_start_loc,
                            const int32_t* seq_lens, int64_t num_reqs, int64_t num_tokens,
                            int32_t topk, int64_t capacity, int32_t* indptr);

/// compute_causal_conv1d_metadata's device buffers for BLOCK_M = 8: programs of each prefill
/// request (cdiv(seqlen, 8) each) numbered in order; batch_ptr[p] = its request,
/// token_chunk_offset_ptr[p] = its index within the request, for p < total; PAD_SLOT_ID for
/// p in [total, num_programs).
void causal_conv1d_metadata(const Exec& exec, const int32_t* query_start_loc_p,
                            int64_t num_prefills, int64_t num_programs, int32_t* batch_ptr,
                            int32_t* token_chunk_offset_ptr);

/// make_kv_sharing_fast_prefill_common_attn_metadata's new query_start_loc: out[0] = 0,
/// out[r + 1] = number of logits indices i with bucketize(i, qsl[1:], right=True) <= r.
/// `logits_indices` are int32 (index_bits 32) or int64 (64), sorted.
void fast_prefill_query_start_loc(const Exec& exec, const int32_t* query_start_loc,
                                  int64_t num_reqs, const void* logits_indices,
                                  int32_t index_bits, int64_t num_logits_indices, int32_t* out);

/// make_local_attention_virtual_batches' device-side arrays, from query_start_loc and seq_lens
/// on the Exec's device: the local query_start_loc (V + 1), seq_lens (V), the remap
/// (virtual_req, virtual_block_start: the request and first block of each virtual batch, V
/// each) and the local block table (V x chunk/block_size, row stride out_stride):
/// row v, column j = block_table[virtual_req[v]][min(virtual_block_start[v] + j, width - 1)].
/// The remap is vLLM's (batch_indices, block_indices) in compact form. `num_virtual` is V, known
/// on the host from the mirrors (local_attention_num_virtual_batches). Two launches on CUDA.
void local_attention_virtual_batches(const Exec& exec, const int32_t* query_start_loc,
                                     const int32_t* seq_lens, int64_t num_reqs,
                                     int32_t attn_chunk_size, int32_t block_size,
                                     const int32_t* block_table, int64_t block_table_rows,
                                     int64_t block_table_stride, int64_t block_table_width,
                                     int32_t* query_start_loc_local,
                                     int32_t* seq_lens_local, int32_t* block_table_local,
                                     int64_t out_stride, int32_t* virtual_req,
                                     int32_t* virtual_block_start, int64_t num_virtual);

/// The remap applied to another block table (what update_block_table reuses): rows as above,
/// num_virtual rows of `pages` columns. A negative column counts from the end, as numpy's
/// indexing does (a zero-length request of seq_len 0 starts its chunk at -chunk). A request
/// index outside [0, block_table_rows) gives a row of zeros (vLLM's null block), never a read
/// outside the table.
void remap_block_table(const Exec& exec, const int32_t* block_table, int64_t block_table_rows,
                       int64_t block_table_stride, int64_t block_table_width,
                       const int32_t* virtual_req,
                       const int32_t* virtual_block_start, int64_t num_virtual, int64_t pages,
                       int32_t* out, int64_t out_stride);

// ---- MLA (vllm/model_executor/layers/attention/mla_attention.py, MLACommonMetadataBuilder) ---

/// vLLM 0.33's chunked context of the P prefills of an MLA batch
/// (plan_mla_context_chunks and build_mla_chunked_context_metadata). With c_p = a prefill's
/// context (seq_len - query_len), alignment A = block_size (lcm with dcp_size * interleave
/// under DCP), padded_rows(r) = r (DCP: cdiv(r, dcp_size * interleave) * interleave), row
/// budget B = workspace_size (DCP: workspace_size // dcp_size) and max_context_chunk M =
/// round_down(workspace_size, A): every run of consecutive prefills with context is packed
/// greedily into chunks of at most B padded rows; a request that does not fit is split at the
/// largest A-aligned length L <= min(M, round_down(remaining - 1, A)) whose padded rows fit
/// (none when L = 0) and continues at the start of the next chunk (a continuation chunk).
/// A chunk is a list of entries (request, start, length), in request order.
using MlaChunkParams = kernels::MlaChunkParams;
using MlaChunkCounts = kernels::MlaChunkCounts;

/// The host lists of the plan (vLLM's Python ints, lists and CPU tensors). Any may be null.
/// Per chunk i (C entries unless said):
///   request_start/end: the chunk's prefills [request_start, request_end) (request_slice);
///   token_start/end: query_start_loc[request_start/end] (token_slice, prefill-relative);
///   continuation_token_end: query_start_loc[request_start + 1]; is_continuation: the first
///   entry's start > 0; num_context_tokens / num_local_context_tokens: the chunk's rows
///   (padded local rows with DCP; = num_context_tokens without); max_query_len / max_seq_len:
///   of its prefills' query lengths / its entries' lengths; all_rows_active: every query
///   length and every entry length > 0;
///   request_offsets (C + 1), boundary_offsets (C), token_offsets (C + 1), local_token_offsets
///   (C + 1): where chunk i's slice of the concatenated per-entry (E), per-boundary (E + C:
///   n_i + 1 each), token (T) and padded local token arrays begins.
/// Per entry (E): seq_lens (the lengths), padded_local_seq_lens, local_starts (padded_rows of
/// the start) and local_context_lens_allranks (E x dcp_size: get_dcp_local_seq_lens of the
/// entry's whole context, every rank) - the last three under DCP only.
/// Per prefill: context_lens_list (P), empty_token_slices (K x 2: [qsl[p], qsl[p + 1]) of the
/// K prefills without context; *num_empty = K).
struct MlaChunkHostOut {
  int32_t *request_start = nullptr, *request_end = nullptr, *token_start = nullptr,
          *token_end = nullptr, *continuation_token_end = nullptr, *is_continuation = nullptr,
          *num_context_tokens = nullptr, *max_query_len = nullptr, *max_seq_len = nullptr,
          *all_rows_active = nullptr, *num_local_context_tokens = nullptr;
  int32_t *request_offsets = nullptr, *boundary_offsets = nullptr, *token_offsets = nullptr,
          *local_token_offsets = nullptr;
  int32_t *seq_lens = nullptr, *padded_local_seq_lens = nullptr, *local_starts = nullptr,
          *local_context_lens_allranks = nullptr;
  int32_t *context_lens_list = nullptr, *empty_token_slices = nullptr;
  int64_t* num_empty = nullptr;
  /// Scratch the planner needs (E entries each; C + 1 for chunk_entry_offsets), host memory.
  int32_t *chunk_entry_offsets = nullptr, *entry_request = nullptr, *entry_start = nullptr,
          *entry_len = nullptr;
};

/// Plans the chunks on the host and writes the host lists, from the prefills' context lengths
/// (P) and query_start_loc (P + 1, any base: only differences are read). Returns the counts
/// (all zero when no prefill has context: vLLM's chunked_context is None).
/// Error(kInvalidArgument) when M = 0 (vLLM asserts "chunked prefill workspace (W rows) is
/// smaller than the context chunk alignment (A rows)") or a capacity of `params` is too small
/// for the batch (naming it); messages start with "<who>: " when `who` is not null.
MlaChunkCounts mla_context_chunk_plan(const int32_t* context_lens, const int32_t* query_start_loc,
                                      int64_t num_prefills, const MlaChunkParams& params,
                                      const MlaChunkHostOut& out, const char* who = nullptr);

/// The chunked context's device tensors (the plan made again where the op runs, on the host or in
/// one device thread, then a row per chunk: two launches on CUDA), from the prefills' query_start_loc (P + 1, any base) and their
/// context lengths (P; vLLM 0.33's context_lens_cpu, which it derives from
/// seq_lens_cpu_upper_bound: the caller computes them on the host and, on CUDA, uploads them
/// where the op runs), for a batch whose host plan had `counts` (the grid sizes; the device
/// never writes past the capacities of `params`):
///   starts (E): the entries' starts (local_starts with DCP);
///   query_start_loc (E + C): per chunk qsl[r] - qsl[request_start] for r in [start, end];
///   cu_seq_lens (E + C): per chunk 0 then the running sums of its entries' lengths;
///   token_to_seq (T): per chunk the entry index (0-based in the chunk) of each row;
///   padded_local_cu_seq_lens / padded_local_token_to_seq: the same with the padded local
///   lengths (DCP only); the plan scratch (chunk_entry_offsets, chunk_token_offsets,
///   chunk_local_token_offsets, entry_request, entry_start, entry_len).
using MlaChunkTensors = kernels::MlaChunkTensors;
void mla_context_chunk_tensors(const Exec& exec, const int32_t* query_start_loc,
                               const int32_t* context_lens, int64_t num_prefills,
                               const MlaChunkParams& params, const MlaChunkCounts& counts,
                               const MlaChunkTensors& out);

/// MLA's prefill tensors (one launch on CUDA), from the prefills' query_start_loc (P + 1
/// entries, not rebased): query_start_loc_out (P + 1) = qsl[p] - qsl[0]; query_seq_lens (P) =
/// the query lengths. Either may be null.
using MlaPrefillOut = kernels::MlaPrefillOut;
void mla_prefill_metadata(const Exec& exec, const int32_t* query_start_loc, int64_t num_prefills,
                          const MlaPrefillOut& out);

/// The sparse MLA family's fp8 separate prefill/decode arrays (vLLM 0.33's
/// FlashMLASparseMetadataBuilder._build_fp8_separate_prefill_decode), over the prefills
/// p in [0, num_prefills) that follow num_decodes decodes (qsl and seq_lens not offset):
/// request_ids (num_tokens) = p for the tokens of prefill p's query
/// [qsl[num_decodes + p], qsl[num_decodes + p + 1]), -1 for every other token (the decodes');
/// workspace_starts (num_prefills) = the exclusive prefix sum of the prefills' seq_lens,
/// restarted at each chunk of split_prefill_chunks(seq_lens[num_decodes:], workspace_size)
/// (each seq_len at most workspace_size, as vLLM asserts). `seq_lens` are the lengths vLLM
/// plans from: its seq_lens_cpu_upper_bound (the builder passes the bound where given).
void sparse_mla_fp8_prefill_metadata(const Exec& exec, const int32_t* query_start_loc,
                                     const int32_t* seq_lens, int64_t num_decodes,
                                     int64_t num_prefills, int64_t num_tokens,
                                     int64_t workspace_size, int32_t* request_ids,
                                     int32_t* workspace_starts);

/// FlashMLA's tile-scheduler metadata for vLLM's batch-invariant decode (one partition):
/// tile (8 entries) = [0, 0, num_decodes - 1, end_block_idx, 0, 0, 0, 0] and num_splits
/// (num_decodes + 1 entries) = 0.
void flashmla_fixed_tile_schedule(const Exec& exec, int64_t num_decodes, int32_t end_block_idx,
                                  int32_t* tile, int32_t* num_splits);

// ---- the Mamba family (vLLM's mamba_attn.py, mamba2_attn.py, gdn_attn.py, utils.py) --------

/// split_decodes_and_prefills with every option, as the Mamba family's
/// _compute_common_metadata calls it (treat_short_extends_as_decodes=False).
inline BatchSplit split_decodes_and_prefills(const int32_t* query_start_loc, int64_t num_reqs,
                                             int64_t num_tokens, int64_t max_query_len,
                                             int32_t decode_threshold, bool require_uniform,
                                             bool treat_short_extends_as_decodes,
                                             const uint8_t* is_prefilling) {
  SplitOptions o;
  o.decode_threshold = decode_threshold;
  o.require_uniform = require_uniform;
  o.treat_short_extends_as_decodes = treat_short_extends_as_decodes;
  o.is_prefilling = is_prefilling;
  return split_decodes_and_prefills(query_start_loc, num_reqs, num_tokens, max_query_len, o);
}

/// vLLM's mamba_get_block_table_tensor in "align" mode: out[r][j] = block_table[r][start + j]
/// for j < num_cols, start = max((seq_lens[r] - 1) // block_size, 0) (row stride `out_stride`).
/// A column past the table's width reads the last column (the host path of src/backends checks
/// the width first; device lengths that disagree with the mirrors stay in bounds).
void mamba_gather_state_indices(const Exec& exec, const int32_t* block_table,
                                int64_t block_table_stride, int64_t block_table_width,
                                const int32_t* seq_lens, int64_t num_reqs, int32_t block_size,
                                int64_t num_cols, int32_t* out, int64_t out_stride);

/// The prefill part of a batch whose prefills are requests [first, first + count):
/// query_start_loc_p[k] = query_start_loc[first + k] - query_start_loc[first] for k <= count
/// (vLLM's query_start_loc[-num_prefills - 1:] - num_decode_tokens), and
/// has_initial_states_p[k] = 1 when request first + k has computed tokens (seq_len >
/// query_len), else 0 (bool bytes). Either output may be null.
void mamba_prefill_metadata(const Exec& exec, const int32_t* query_start_loc,
                            const int32_t* seq_lens, int64_t first, int64_t count,
                            int32_t* query_start_loc_p, uint8_t* has_initial_states_p);

/// Chunks of vLLM's _compute_chunk_metadata for `num_prefills` requests (host-only): per
/// segment, one chunk finishing a partial chunk when computed % chunk_size != 0, then
/// cdiv(rest, chunk_size). computed = seq_lens_p[r] - (query_start_loc_p[r + 1] -
/// query_start_loc_p[r]). A request whose `checkpoint_offsets[r]` = k is in (0, query_len) is
/// two segments, [0, k) and [k, query_len) (vLLM 0.33's prefill checkpoints: a chunk ends on
/// the checkpoint); `checkpoint_offsets` may be null (no checkpoints).
int64_t mamba_num_chunks(const int32_t* query_start_loc_p, const int32_t* seq_lens_p,
                         int64_t num_prefills, int32_t chunk_size,
                         const int32_t* checkpoint_offsets = nullptr);

/// vLLM's _compute_chunk_metadata: cu_chunk_seqlen (num_chunks + 1) = each chunk's first token
/// relative to the first prefill token, then the prefill token total; seq_idx (num_chunks) =
/// the chunk's request; last_chunk_indices (num_prefills) = index of each request's last chunk
/// (the previous request's when it has none, -1 before any chunk). Chunks never cross a request
/// or a multiple of chunk_size of the request's own positions, nor a checkpoint
/// (`checkpoint_offsets` as in mamba_num_chunks, may be null); `checkpoint_chunk_idx` (int64,
/// may be null) receives the index of the chunk that ends on each request's checkpoint, 0 for
/// requests without one (vLLM's max(idx, 0)). `capacity` bounds the chunk arrays (no write past
/// it); `query_start_loc_p` is relative (starts at 0).
void mamba_chunk_metadata(const Exec& exec, const int32_t* query_start_loc_p,
                          const int32_t* seq_lens_p, int64_t num_prefills, int32_t chunk_size,
                          int64_t capacity, int32_t* cu_chunk_seqlen, int32_t* seq_idx,
                          int32_t* last_chunk_indices, const int32_t* checkpoint_offsets = nullptr,
                          int64_t* checkpoint_chunk_idx = nullptr);

/// vLLM 0.33's _gather_checkpoint_state_indices: out[i] = block_table[rows[i]][cols[i]] where
/// cols[i] >= 0, else NULL_BLOCK_ID (0), for i < n (row stride `block_table_stride`; the caller
/// checked rows and columns against the table).
void mamba_checkpoint_state_indices(const Exec& exec, const int32_t* block_table,
                                    int64_t block_table_stride, const int64_t* rows,
                                    const int64_t* cols, int64_t n, int32_t* out);

/// dst[r][c] = src[r][c] for r < rows, c < cols; then rows [rows, total_rows) of dst get
/// `pad` (or, with pad_with_last, the last element copied, src[rows - 1][cols - 1]; `pad` when
/// rows == 0). The persistent CUDA-graph copies of vLLM's Mamba builders. 1-D: cols 1, strides 1.
/// src and dst do not overlap (the host copies a one-column range with unit strides by memcpy;
/// on a device the one-column copy and its padding run in one block with no barrier between
/// them).
void copy_pad_i32(const Exec& exec, const int32_t* src, int64_t src_stride, int64_t rows,
                  int64_t cols, int32_t* dst, int64_t dst_stride, int64_t total_rows,
                  int32_t pad, bool pad_with_last);
/// The same for a vector of bytes (bool masks).
void copy_pad_u8(const Exec& exec, const uint8_t* src, int64_t n, uint8_t* dst, int64_t total,
                 uint8_t pad);

/// out[i] = i for i < n (torch.arange).
void iota_i32(const Exec& exec, int32_t* out, int64_t n);

/// out[i] = query_start_loc[i + 1] - query_start_loc[i] + offset for i < num_reqs (torch.diff;
/// offset -1 gives the draft tokens of a spec-decode capture batch).
void query_lens_i32(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                    int32_t offset, int32_t* out);

/// GDN_ATTN's spec/non-spec split (vLLM gdn_attn.py build(), spec branch), with spec requests
/// those whose draft_tokens[r] >= 0. Every output may be null:
///   masks[r] = spec (bool bytes, num_reqs);
///   spec_state (num_spec x num_cols, compact) = block_table[spec r][:num_cols];
///   non_spec_state (num_reqs - num_spec) = block_table[non-spec r][0];
///   spec_qsl / non_spec_qsl = 0 then the running sum of the query lengths of each group;
///   spec_token_indx / non_spec_token_indx = the batch's token positions of each group in order
///   (vLLM's stable argsort of the token mask over query_start_loc[num_reqs] tokens);
///   spec_accepted = num_accepted_tokens[spec r];
///   non_spec_has_initial[k] = 1 when the k-th non-spec request has computed tokens.
/// The group sizes come from the host mirrors; `token_capacity` bounds the token arrays.
using GdnSplitOut = kernels::GdnSplitOut;
void gdn_spec_split(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                    int64_t num_reqs, const int32_t* draft_tokens, const int32_t* block_table,
                    int64_t block_table_stride, int64_t block_table_width, int64_t num_cols,
                    const int32_t* num_accepted_tokens, int64_t token_capacity,
                    const GdnSplitOut& out);

/// FLA's prepare_chunk_offsets and prepare_chunk_indices (vLLM 0.33 GDN_ATTN's chunk metadata
/// for the Triton/FLA prefill) over `num_seqs` sequences of `cu_seqlens` (starts at 0):
///   chunk_offsets[r] = sum over s < r of cdiv(len_s, chunk_size), r <= num_seqs (int64, as
///   torch's cumsum returns);
///   chunk_indices rows [chunk_offsets[r], chunk_offsets[r + 1]) = (k, j) for j < cdiv(len_r,
///   chunk_size), k the number of non-empty sequences before r (FLA's indices.eq(0).cumsum(0) - 1:
///   a zero-length sequence has no chunk and is not counted) (int32 pairs); with `index_by_row`,
///   k = r (vLLM 0.33's prepare_chunk_metadata_device of KIMI_K3_KDA_ROCM: the kernel writes its
///   program's sequence index, zero-length sequences counted).
/// Either output may be null.
void gdn_chunk_metadata(const Exec& exec, const int32_t* cu_seqlens, int64_t num_seqs,
                        int32_t chunk_size, bool index_by_row, int32_t* chunk_indices,
                        int64_t* chunk_offsets);

/// GDN_ATTN's update_block_table gathers with the batch's spec mask (masks[r] != 0: spec):
/// spec_state (num_spec x num_cols, compact) = block_table[spec r][:num_cols] and
/// non_spec_state (num_reqs - num_spec) = block_table[non-spec r][0], in request order. A
/// column past the table's width reads the last one. Either output may be null.
void gdn_masked_state_gather(const Exec& exec, const uint8_t* masks, int64_t num_reqs,
                             const int32_t* block_table, int64_t block_table_stride,
                             int64_t block_table_width, int64_t num_cols, int32_t* spec_state,
                             int32_t* non_spec_state);

// ---- DEEPSEEK_V32_INDEXER (vLLM 0.33's mla/indexer.py, DeepseekV32IndexerMetadataBuilder) -----

using kernels::IndexerDecodeOut;
using kernels::IndexerDecodeParams;
using kernels::IndexerPrefillArrays;
using kernels::IndexerPrefillParams;

/// One request group of _split_indexer_prefill_chunks over the prefills (indices relative to
/// the first prefill): [start, end), its query tokens m and K rows n.
struct IndexerGroup {
  int64_t start = 0, end = 0, m = 0, n = 0;
};

/// _split_indexer_prefill_chunks' greedy request groups (host; the chunks then split each
/// group's m queries into sub-chunks of max(1, max_logits_elems / n)): a request joins the
/// group while n + s <= workspace_size and (m + q) * (n + s) <= max_logits_elems; a request
/// that fits nowhere is a group of its own. Each s is clamped below at min_split_seq_len
/// (DEEPSEEK_V41_SPARSE_INDEXER's _prefill_split_seq_lens; 0 = none), and n is the clamped
/// sum. Returns the number of groups written (at most num_prefills).
int64_t indexer_prefill_groups(const int32_t* query_lens, const int32_t* seq_lens,
                               int64_t num_prefills, int64_t workspace_size,
                               int64_t max_logits_elems, int64_t min_split_seq_len,
                               IndexerGroup* groups);

/// DEEPSEEK_V32_INDEXER's prefill chunk arrays (build_prefill_chunk_metadata over each group;
/// the groups indexer_prefill_groups' over params.plan_seq_lens, else seq_lens, each //
/// compress_ratio): with K rows k[r] = seq_lens[r] // compress_ratio (the compressed lengths),
/// per group g of prefills [s, e), cu_seq_lens[s + g .. e + g] = 0 and the running sum of k (and
/// local_cu_seq_lens the same of the DCP-local k, interleave in compressed states); per prefill
/// token t of request r, cu_seqlen_ks[t - qsl[nd]] = the row start of r (local under DCP) and
/// cu_seqlen_ke = that + (the token's causal context seq_len[r] - query_len[r] + 1 + (t -
/// qsl[r])) // compress_ratio (its DCP-local length under DCP). The groups read k too. The query
/// sub-chunks of a group are consecutive token ranges of these arrays.
void indexer_prefill_arrays(const Exec& exec, const int32_t* query_start_loc,
                            const int32_t* seq_lens, const IndexerPrefillParams& params,
                            const IndexerPrefillArrays& out);

/// DEEPSEEK_V32_INDEXER's decode tensors (build()'s decode part): for decode token i of
/// request b (the first b with qsl[b + 1] > i), its causal length seq_len[b] - query_len[b] +
/// (i - qsl[b]) + 1 (varlen: 0 past qsl[nd]) as the global length, then (clamped at 0 on the
/// flatten path's uniform kernel) DCP-local; the block table row of b (zeros past bt_width, or for
/// an invalid varlen token); decode_lens 1; varlen indices b (nd + i - qsl[nd] past the real
/// tokens). Native 2D: seq_lens[b][j] = max(seq_len[b] - max_decode_len + 1 + j, 0), DCP-local;
/// native 1: DCP-local seq_len[b]; decode_lens the query lengths. per_req_decode_lens always.
/// Every seq_lens entry (not global_seq_lens) is then floor-divided by compress_ratio.
void indexer_decode_tensors(const Exec& exec, const int32_t* query_start_loc,
                            const int32_t* seq_lens, const IndexerDecodeParams& params,
                            const IndexerDecodeOut& out);

/// KPOOL_TAIL's compute_kpool_tail_slot_mapping (vLLM 0.33, mla/indexer.py): for t <
/// num_actual_tokens of request r (the last r with qsl[r] <= t, at most num_reqs - 1: tokens
/// past the last boundary map to the last request), out[t] = block_table[r][0] * kpool +
/// positions[t] mod kpool, or -1 when that block is 0 (the null block of dummy and padding
/// requests); out[t] = slot_mapping[t] for t in [num_actual_tokens, num_tokens).
void kpool_tail_slot_mapping(const Exec& exec, const int32_t* query_start_loc, int64_t num_reqs,
                             const int32_t* block_table, int64_t block_table_stride,
                             const int64_t* positions, const int64_t* slot_mapping,
                             int64_t num_actual_tokens, int64_t num_tokens, int32_t kpool,
                             int64_t* out);

/// KPOOL_TAIL's update_draft_decode_metadata: slot[t] = floor(slot[t] / kpool) * kpool +
/// positions[t] mod kpool (Python's floor division and remainder) for t < n, in place.
void kpool_tail_draft_update(const Exec& exec, int64_t* slot_mapping, const int64_t* positions,
                             int64_t n, int32_t kpool);

/// DEEPSEEK_V4_COMPRESSOR's block_table.clamp_(min=0) (vLLM 0.33, deepseek_v4/compressor.py):
/// every negative entry of the rows x cols int32 table (rows `stride` apart) set to 0, in place.
void compressor_clamp_block_table(const Exec& exec, int32_t* block_table, int64_t rows,
                                  int64_t cols, int64_t stride);

/// DEEPSEEK_V41_COMPRESSOR's _ring_slot_mapping_kernel (vLLM 0.33, deepseek_v41/compressor.py):
/// for t < num_actual_tokens, block = block_table[token_to_req[t]][0] (the request's ring
/// block) and out[t] = block * capacity + positions[t] % capacity (C's remainder, as Triton's),
/// or -1 when block is 0 (the null block); out[t] = -1 for t in [num_actual_tokens, num_tokens).
void compressor_ring_slot_mapping(const Exec& exec, const int32_t* token_to_req,
                                  const int32_t* block_table, int64_t block_table_stride,
                                  const int64_t* positions, int64_t num_actual_tokens,
                                  int64_t num_tokens, int32_t capacity, int64_t* out);

/// STEP5_CSA_TAIL_RING's _ring_metadata_kernel (vLLM 0.33, models/step5/nvidia/csa_tail_ring.py),
/// one item per token t < num_tokens. Token t is valid when t < num_actual_tokens, t <
/// query_start_loc[num_reqs] (a padding row past the scheduled tokens owns no slot) and its
/// request's ring block, block = block_table[token_to_req[t] * block_table_stride] (column 0), is
/// positive (0 is the shared null block, never written). A valid token gets base[t] = block *
/// rows_per_block, and slot_mapping[t] = base[t] + positions[t] % capacity (C's remainder, as
/// Triton's) when positions[t] >= seq_lens[r] - capacity (one of its request's last `capacity`
/// positions), else -1; an invalid one gets -1 in both. token_to_req, positions and seq_lens are
/// read for valid tokens only.
void step5_tail_ring_metadata(const Exec& exec, const int32_t* token_to_req,
                              const int32_t* block_table, int64_t block_table_stride,
                              const int64_t* positions, const int32_t* seq_lens,
                              const int32_t* query_start_loc, int64_t num_reqs,
                              int64_t num_actual_tokens, int64_t num_tokens, int32_t capacity,
                              int64_t rows_per_block, int64_t* base, int64_t* slot_mapping);

using kernels::QsaTokenArgs;
using kernels::QsaWorkArgs;

/// QWEN4_EXP_EXP_QSA_STATE's per-token metadata (vLLM 0.33's _build_qsa_metadata_kernel, the
/// Triton path of build_qsa_metadata in models/qwen4_exp/common/qsa_cache.py), one item per
/// token t < num_tokens. A token is mapped when t < num_mapped_tokens; its request r =
/// token_to_req[t]. logical_positions[t] = seq_lens[r] - query_len(r) + (t - query_start_loc[r])
/// for a mapped token, -1 otherwise; visible_blocks[t] = max(0, min((pos + 1) / ratio,
/// seq_len / ratio)) (seq_len 0 for an unmapped token). With a slot_mapping output: for a
/// circular cache (circular_buffer_size > 0) block = block_table[r][0] and the slot is block *
/// size + pos % size when the token is mapped, pos >= 0, t + size >= query_start_loc[r + 1] (one
/// of its query's last `size` rows), the table has a column and block > 0; for the compressed
/// cache the slot is block * storage_block_size + (pos / ratio) % storage_block_size with block =
/// block_table[r][(pos / ratio) / storage_block_size] when the token is mapped, pos >= 0, (pos +
/// 1) % ratio == 0 (it closes a group), the column exists, block >= 0 and the batch's
/// slot_mapping[t] >= 0; -1 otherwise. Division and remainder are C's (Triton's). Reads every
/// table inside its extent whatever the values (the request of a mapped token is < num_reqs).
void qsa_token_metadata(const Exec& exec, const QsaTokenArgs& args);

/// QWEN4_EXP_EXP_QSA_STATE's k_work_metadata (the work tiles of _build_qsa_metadata_kernel): each
/// request r owns count(r) = query_len > 0 ? max(seq_len / ratio - (seq_len - query_len) / ratio,
/// 1) : 0 consecutive work items; work_ends gets their inclusive sums (a scan), and row w <
/// max_num_work of k_work_metadata gets (owner, w - owner's first item) for w < the total, (-1,
/// -1) past it.
void qsa_work_metadata(const Exec& exec, const QsaWorkArgs& args);

using kernels::SwaIndicesParams;

/// DEEPSEEK_SPARSE_SWA's is_valid_token (vLLM 0.33, mla/sparse_swa.py): out[t] = slot_mapping[t]
/// >= 0 for t < n (1 or 0); slot_mapping is int64 when slots_int64, else int32.
void sparse_swa_valid_tokens(const Exec& exec, const void* slot_mapping, bool slots_int64,
                             int64_t n, uint8_t* out);

/// DEEPSEEK_SPARSE_SWA's _compute_swa_indices_and_lens_kernel (causal, no image spans): row i
/// < num_tokens is token t = token_offset + i of request r = token_to_req[t]. An invalid token
/// (is_valid[t] == 0, or r = -1: a batch of no request) gets lens[i] = 0 and a row of -1.
/// Otherwise, with q its request's query length, pos = seq_lens[r] - q + t - query_start_loc[r],
/// start = max(pos - (window - 1), 0, replay_start[r]), end = pos + 1: lens[i] = end - start and
/// entry j of the row (index_width entries) the slot block_table[r][p / block_size] * block_size
/// + p % block_size of position p = start + j while j < lens[i], else -1 (and -1 for an entry
/// past the block table's extent: vLLM reads outside the tensor there).
/// With params.noncausal (DSpark's draft block, ComputeDSparkNoncausalSWAIndicesKernel) every
/// token of request r gets the same window: start = max(seq_lens[r] - q - window, 0), end =
/// seq_lens[r] (replay_start is not read and may be null).
void sparse_swa_indices(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                        const int32_t* token_to_req, const uint8_t* is_valid,
                        const int32_t* block_table, const int32_t* replay_start,
                        const SwaIndicesParams& params, int32_t* indices, int32_t* lens);

/// DEEPSEEK_SPARSE_SWA's ComputePrefillMetadataKernel: for prefill p < num_prefills (request r
/// = num_decodes + p, query q, prefix seq_lens[r] - q), out[p] = q + min(max(prefix -
/// replay_start[r], 0), window_size - 1).
void sparse_swa_prefill_gather_lens(const Exec& exec, const int32_t* query_start_loc,
                                    const int32_t* seq_lens, const int32_t* replay_start,
                                    int64_t num_decodes, int64_t num_prefills,
                                    int32_t window_size, int32_t* out);

/// DEEPSEEK_V41_SPARSE_SWA_FLASHINFER's _fill_noncausal_decode_lens (DSpark's decode tokens):
/// for t < n, topk_lens[t] = max(decode_swa_lens[t], window_size) and decode_seq_lens[t] =
/// seq_lens[token_to_req[t]].
void sparse_swa_flashinfer_decode_lens(const Exec& exec, const int32_t* decode_swa_lens,
                                       const int32_t* seq_lens, const int32_t* token_to_req,
                                       int64_t n, int32_t window_size, int32_t* topk_lens,
                                       int32_t* decode_seq_lens);

using kernels::C128aTopkParams;
using kernels::V4CompressedSlotsParams;

/// vLLM's block_table.clamp_(min=0) on a (rows, cols) int32 table `stride` elements a row, in
/// place (DeepSeek V4's sparse MLA builders clamp the batch's block table so).
void clamp_block_table(const Exec& exec, int32_t* block_table, int64_t rows, int64_t cols,
                       int64_t stride);

/// The compressed slot mapping of DeepSeek V4's sparse MLA builders and of the compressed
/// indexer builders (vLLM 0.33's get_compressed_slot_mapping, CompressedSlotMappingKernel):
/// out[t] = -1 for t < num_tokens, then per request r < num_reqs with query q = qsl[r+1] -
/// qsl[r] and token t = qsl[r] + i (i < q) at position pos = seq_lens[r] - q + i: when (pos + 1)
/// % compress_ratio == 0 and slot_mapping[t] != -1, out[t] = block_table[r][s / num_states] *
/// num_states + s % num_states with s = local / compress_ratio, local = pos / (cp_interleave *
/// dcp_world_size) * cp_interleave + pos % cp_interleave (C division as Triton's; pos without
/// DCP) (int64; -1 for a cell past the table's extent).
void v4_compressed_slot_mapping(const Exec& exec, const int32_t* query_start_loc,
                                const int32_t* seq_lens, const void* slot_mapping,
                                const int32_t* block_table, const V4CompressedSlotsParams& params,
                                int64_t num_tokens, int64_t* out);

/// DeepSeek V4's C128A top-k metadata (vLLM 0.33's build_c128a_topk_metadata, its Triton kernel
/// _build_c128a_topk_metadata_kernel): row t of num_decode_tokens + num_prefill_tokens, n =
/// min((positions[t] + 1) / compress_ratio, width) (C division). A decode row t: entry j < width
/// of decode_indices row t is block_table[token_to_req[t]][j / block_size] * block_size + j %
/// block_size (int32) when j < n, else -1; decode_lens[t] = max(n, 0) when slot_mapping[t] >= 0,
/// else 0. A prefill row i (token num_decode_tokens + i): entry j of prefill_indices row i is j
/// when j < n, else -1. Rows are row_stride apart.
void v4_c128a_topk_metadata(const Exec& exec, const int64_t* positions,
                            const int32_t* token_to_req, const int32_t* block_table,
                            const void* slot_mapping, const C128aTopkParams& params,
                            int32_t* decode_indices, int32_t* decode_lens,
                            int32_t* prefill_indices);

/// DeepSeek V4 / V4.1 on ROCm: vLLM 0.33's build_ragged_indices_from_dense
/// (v1/attention/ops/rocm_aiter_mla_sparse.py, its two Triton kernels, no num_rows limit): row
/// r < rows of `indices` (rows `row_stride` entries apart, `width` read a row) keeps its entries
/// j < min(lengths[r], width) whose value is >= 0, in order. indptr[0] = 0, indptr[r + 1] =
/// indptr[r] + the entries row r keeps (rows + 1 entries written); out[indptr[r] + k] = the k-th
/// kept entry of row r (indptr[rows] entries written, at most rows * width). A negative length
/// keeps nothing.
void ragged_from_dense(const Exec& exec, const int32_t* indices, int64_t rows, int64_t width,
                       int64_t row_stride, const int32_t* lengths, int32_t* indptr, int32_t* out);

/// MINIMAX_M3_SPARSE's prefill arrays (vLLM 0.33's MiniMaxM3SparseMetadataBuilder.build), over
/// the P = num_prefills prefills that follow the decodes, `query_start_loc` and `seq_lens`
/// pointing at the first prefill's entries: cu_seqlens_q (P + 1) = query_start_loc[i] -
/// num_decode_tokens; cu_seqlens_k (P + 1; null: not written, and `seq_lens` is not read: the
/// MINIMAX_M3_SPARSE_INDEXER prefill part) = 0, then the running sums of seq_lens (int32, as
/// torch's cumsum into an int32 out).
void minimax_m3_prefill_arrays(const Exec& exec, const int32_t* query_start_loc,
                               const int32_t* seq_lens, int64_t num_prefills,
                               int64_t num_decode_tokens, int32_t* cu_seqlens_q,
                               int32_t* cu_seqlens_k);

/// vLLM 0.33's minimax_m3_query_token_positions: for each prefill token t < num_tokens, r =
/// searchsorted(cu_seqlens_q[1:], t, right=True) (the first prefill whose query ends past t,
/// num_prefills - 1 at most: vLLM indexes prefix_lens with it), query_req_id[t] = r and
/// query_abs_pos[t] = prefix_lens[r] + t - cu_seqlens_q[r] (int32 each).
void minimax_m3_query_token_positions(const Exec& exec, const int32_t* cu_seqlens_q,
                                      const int32_t* prefix_lens, int64_t num_prefills,
                                      int64_t num_tokens, int32_t* query_req_id,
                                      int32_t* query_abs_pos);

/// The prefill rows' causal shape of vLLM 0.33's MiniMaxM3IndexerMSAMetadataBuilder.build
/// (models/minimax_m3/amd/indexer_msa.py), for each prefill token t < num_tokens, `positions`
/// pointing at the first prefill token's (int64): num_valid_pages[t] = positions[t] //
/// sparse_block_size + 1, kv_lens[t] = positions[t] + 1 (int64, kept to int32 as torch's copy_
/// does), row_req_id[t] = searchsorted(cu_seqlens_q[1:], t, right=True) over the num_prefills
/// entries (not clamped: num_prefills past the last prefill's query).
void minimax_m3_msa_prefill_rows(const Exec& exec, const int32_t* cu_seqlens_q,
                                 int64_t num_prefills, const int64_t* positions,
                                 int64_t num_tokens, int32_t sparse_block_size,
                                 int32_t* num_valid_pages, int32_t* row_req_id,
                                 int32_t* kv_lens);

/// vLLM 0.33's minimax_m3_rebase_slots_to_page16: out[t] = (max(slot, 0) // block_size) *
/// block_size + slot for t < n (int64; a negative padding slot stays as it is). The slot mapping
/// is int64 (`slots_int64`) or int32.
void minimax_m3_page16_slot_mapping(const Exec& exec, const void* slot_mapping, bool slots_int64,
                                    int64_t n, int32_t block_size, int64_t* out);

/// PAGE16_SIDES_PER_BLOCK of vLLM 0.33's models/minimax_m3/amd/ops/sparse_pa.py: an
/// interleaved block spans both K/V sides' page-16 pages.
inline constexpr uint32_t kMiniMaxM3Page16SidesPerBlock = 2;

/// vLLM 0.33's minimax_m3_rebase_block_table_to_page16 (MINIMAX_M3_SPARSE_AITER_PA):
/// out[r][j] = block_table[r][j] * PAGE16_SIDES_PER_BLOCK for r < rows, j < cols, wrapping as
/// torch's int32 multiply does; the table's rows are `block_table_stride` apart, out's
/// `out_stride` apart.
void minimax_m3_page16_block_table(const Exec& exec, const int32_t* block_table,
                                   int64_t block_table_stride, int64_t rows, int64_t cols,
                                   int32_t* out, int64_t out_stride);

}  // namespace attn::ops
