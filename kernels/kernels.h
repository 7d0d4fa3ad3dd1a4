// CUDA implementations of the ops in src/ops/batch_ops.h, and the runtime wrappers of
// src/ops/device_runtime.h. Defined only when a CUDA toolkit is found. This header includes no
// CUDA header so that the host-compiled ops can call it: status values are cudaError_t as int
// (0 = cudaSuccess), streams are cudaStream_t as void*.
//
// Each op's kernel takes the op's parameters, same types in the same order, with
// (int device_id, void* stream) in place of the Exec, and returns a status; src/ops calls it
// through ATTN_CUDA_LAUNCH (src/ops/cuda_dispatch.h), which static_asserts exactly that in every
// build: a signature changed on one side only does not compile.
#pragma once

#include <cstddef>
#include <cstdint>

#include "op_args.h"

namespace attn::kernels {

/// cudaGetErrorName + cudaGetErrorString of a status, e.g. "cudaErrorNoDevice: no CUDA-capable
/// device is detected".
const char* error_text(int status) noexcept;

int device_count(int* out) noexcept;
int device_capability(int device_id, int* out) noexcept;
int malloc_on(int device_id, size_t bytes, void** out) noexcept;
int free_on(int device_id, void* ptr) noexcept;
int memset_zero(int device_id, void* ptr, size_t bytes) noexcept;
int copy_to_host(int device_id, void* dst, const void* src, size_t bytes) noexcept;
int copy_device_to_device(int device_id, void* dst, const void* src, size_t bytes) noexcept;
int copy_to_device(int device_id, void* dst, const void* src, size_t bytes) noexcept;
int copy_to_device_async(int device_id, void* dst, const void* src, size_t bytes,
                         void* stream) noexcept;

/// See ops::copy_submatrix_f32. One launch.
int copy_submatrix_f32(int device_id, void* stream, const float* src, int64_t src_stride,
                       int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                       float* out) noexcept;

/// See ops::query_key_maps. One launch.
int query_key_maps(int device_id, void* stream, const int32_t* query_start_loc,
                   const int32_t* seq_lens, int64_t num_reqs, int64_t num_tokens,
                   int32_t* q_to_req, int32_t* q_to_klen) noexcept;

/// See ops::aiter_mla_decode_tables. Up to four launches (reset, tables, varlen rows).
int aiter_mla_decode_tables(int device_id, void* stream, const AiterMlaDecodeArgs& a) noexcept;

/// See ops::swa_decode_tables. One launch.
int swa_decode_tables(int device_id, void* stream, const int32_t* block_table,
                      int64_t bt_row_stride, int64_t bt_width, const int32_t* seq_lens,
                      int64_t num_decodes, int32_t window, int32_t block_size,
                      int64_t num_window_blocks, int32_t* swa_block_table,
                      int32_t* swa_seq_lens) noexcept;

/// See ops::static_sink_seq_lens, static_sink_prefix, static_sink_block_table. One launch each.
int static_sink_seq_lens(int device_id, void* stream, const int32_t* seq_lens, int64_t n,
                         int32_t sink_len, int32_t* out) noexcept;
int static_sink_prefix(int device_id, void* stream, int32_t* table, int64_t rows, int64_t stride,
                       int64_t num_sink_blocks) noexcept;
int static_sink_block_table(int device_id, void* stream, const int32_t* block_table,
                            int64_t block_table_stride, int64_t block_table_col_stride,
                            int64_t rows, int64_t cols, int64_t num_sink_blocks, int32_t* out,
                            int64_t out_stride) noexcept;

/// See ops::cross_attention_slot_mapping. One launch (a single block).
int cross_attention_slot_mapping(int device_id, void* stream, const int32_t* query_start_loc,
                                 const int32_t* seq_lens, const int32_t* encoder_seq_lens,
                                 int64_t num_reqs, const int32_t* block_table,
                                 int64_t block_table_stride, int64_t block_table_width,
                                 int32_t block_size, int64_t* out, int64_t total) noexcept;

/// See ops::flex_request_arrays (one launch, a block per request) and ops::flex_kv_indices
/// (one launch, a block per query group) (FLEX_ATTENTION).
int flex_request_arrays(int device_id, void* stream, const int32_t* query_start_loc,
                        const int32_t* seq_lens, int64_t num_reqs, int64_t num_tokens,
                        int32_t block_size, const int32_t* block_table,
                        int64_t block_table_stride, int64_t block_table_width,
                        int64_t num_gpu_blocks, int32_t* num_blocks_per_seq,
                        int32_t* decode_offset, int32_t* doc_ids, int64_t* physical_to_logical,
                        int64_t p2l_stride, int32_t* qsl_out, int32_t* seq_lens_out) noexcept;
int flex_kv_indices(int device_id, void* stream, const FlexBlockMaskIn& in, int64_t num_groups,
                    int32_t* kv_indices, int64_t out_stride, int32_t* kv_num_blocks,
                    void* scratch, int64_t scratch_per_group) noexcept;

/// See ops::cascade_split. One launch; asynchronous on `stream`.
int cascade_split(int device_id, void* stream, const int32_t* seq_lens, int64_t num_reqs,
                  int64_t num_actual_tokens, int64_t common_prefix_len,
                  int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                  int32_t* suffix_kv_lens) noexcept;



/// See ops::xqa_draft_mask. One launch (a block per request).
int xqa_draft_mask(int device_id, void* stream, const int32_t* query_start_loc, int64_t num_reqs,
                   int32_t num_packed, bool causal, uint32_t* out) noexcept;




/// See ops::compute_slot_mapping. One launch (one block per request, one for the padding).
int compute_slot_mapping(int device_id, void* stream, const int32_t* qsl, int64_t num_reqs,
                         const int64_t* positions, int64_t num_tokens, const int32_t* block_table,
                         int64_t bt_stride, int64_t bt_width, int32_t block_size,
                         int32_t dcp_size, int32_t dcp_rank, int32_t interleave,
                         int64_t* slot_mapping, int64_t max_num_tokens) noexcept;

/// See ops::fast_prefill_query_start_loc. One launch (a binary search per request).
int fast_prefill_query_start_loc(int device_id, void* stream, const int32_t* qsl,
                                 int64_t num_reqs, const void* logits_indices, int32_t index_bits,
                                 int64_t num_logits_indices, int32_t* out) noexcept;

/// See ops::local_attention_virtual_batches. Two launches: a single-block plan (block scan of
/// each request's local block count) and the block-table gather.
int local_attention_virtual_batches(int device_id, void* stream, const int32_t* qsl,
                                    const int32_t* seq_lens, int64_t num_reqs, int32_t chunk,
                                    int32_t block_size, const int32_t* block_table,
                                    int64_t bt_rows, int64_t bt_stride, int64_t bt_width,
                                    int32_t* qsl_local,
                                    int32_t* seq_lens_local, int32_t* bt_local,
                                    int64_t out_stride, int32_t* virtual_req,
                                    int32_t* virtual_block_start, int64_t num_virtual) noexcept;

/// See ops::remap_block_table. One launch. Reads num_virtual from the host.
int remap_block_table(int device_id, void* stream, const int32_t* block_table, int64_t bt_rows,
                      int64_t bt_stride, int64_t bt_width, const int32_t* virtual_req,
                      const int32_t* virtual_block_start, int64_t num_virtual, int64_t pages,
                      int32_t* out, int64_t out_stride) noexcept;

/// See ops::sparse_mla_fp8_prefill_metadata. One launch: a grid over the tokens (binary search
/// over the prefills' query_start_loc) whose block 0 thread 0 also redoes the greedy chunk pass.
int sparse_mla_fp8_prefill_metadata(int device_id, void* stream, const int32_t* qsl,
                                    const int32_t* seq_lens, int64_t num_decodes,
                                    int64_t num_prefills, int64_t num_tokens,
                                    int64_t workspace_size, int32_t* request_ids,
                                    int32_t* workspace_starts) noexcept;

/// See ops::indexer_prefill_arrays. One launch of one block: thread 0 redoes the greedy groups
/// (the cu arrays and each prefill's row start), then the block maps the prefill tokens.
int indexer_prefill_arrays(int device_id, void* stream, const int32_t* query_start_loc,
                           const int32_t* seq_lens, const IndexerPrefillParams& params,
                           const IndexerPrefillArrays& out) noexcept;

/// See ops::indexer_decode_tensors. One launch, one thread per output row.
int indexer_decode_tensors(int device_id, void* stream, const int32_t* query_start_loc,
                           const int32_t* seq_lens, const IndexerDecodeParams& params,
                           const IndexerDecodeOut& out) noexcept;

/// See ops::kpool_tail_slot_mapping. One launch, one thread per token.
int kpool_tail_slot_mapping(int device_id, void* stream, const int32_t* query_start_loc,
                            int64_t num_reqs, const int32_t* block_table,
                            int64_t block_table_stride, const int64_t* positions,
                            const int64_t* slot_mapping, int64_t num_actual_tokens,
                            int64_t num_tokens, int32_t kpool, int64_t* out) noexcept;

/// See ops::compressor_clamp_block_table. One launch, one thread per entry.
int compressor_clamp_block_table(int device_id, void* stream, int32_t* block_table, int64_t rows,
                                 int64_t cols, int64_t stride) noexcept;

/// See ops::compressor_ring_slot_mapping. One launch, one thread per token.
int compressor_ring_slot_mapping(int device_id, void* stream, const int32_t* token_to_req,
                                 const int32_t* block_table, int64_t block_table_stride,
                                 const int64_t* positions, int64_t num_actual_tokens,
                                 int64_t num_tokens, int32_t capacity, int64_t* out) noexcept;

/// See ops::kpool_tail_draft_update. One launch, one thread per token.
int kpool_tail_draft_update(int device_id, void* stream, int64_t* slot_mapping,
                            const int64_t* positions, int64_t n, int32_t kpool) noexcept;

/// See ops::sparse_swa_valid_tokens. One launch, one thread per token.
int sparse_swa_valid_tokens(int device_id, void* stream, const void* slot_mapping,
                            bool slots_int64, int64_t n, uint8_t* out) noexcept;

/// See ops::sparse_swa_indices. One launch, one block per row (its threads over the row).
int sparse_swa_indices(int device_id, void* stream, const int32_t* query_start_loc,
                       const int32_t* seq_lens, const int32_t* token_to_req,
                       const uint8_t* is_valid, const int32_t* block_table,
                       const int32_t* replay_start, const SwaIndicesParams& params,
                       int32_t* indices, int32_t* lens) noexcept;

/// See ops::sparse_swa_prefill_gather_lens. One launch, one thread per prefill.
int sparse_swa_prefill_gather_lens(int device_id, void* stream, const int32_t* query_start_loc,
                                   const int32_t* seq_lens, const int32_t* replay_start,
                                   int64_t num_decodes, int64_t num_prefills,
                                   int32_t window_size, int32_t* out) noexcept;

/// See ops::sparse_swa_flashinfer_decode_lens. One launch, one thread per decode token.
int sparse_swa_flashinfer_decode_lens(int device_id, void* stream, const int32_t* decode_swa_lens,
                                      const int32_t* seq_lens, const int32_t* token_to_req,
                                      int64_t n, int32_t window_size, int32_t* topk_lens,
                                      int32_t* decode_seq_lens) noexcept;

/// See ops::clamp_block_table. One launch, one thread per entry.
int clamp_block_table(int device_id, void* stream, int32_t* block_table, int64_t rows,
                      int64_t cols, int64_t stride) noexcept;

/// See ops::v4_compressed_slot_mapping. One launch, one block per request.
int v4_compressed_slot_mapping(int device_id, void* stream, const int32_t* query_start_loc,
                               const int32_t* seq_lens, const void* slot_mapping,
                               const int32_t* block_table, const V4CompressedSlotsParams& params,
                               int64_t num_tokens, int64_t* out) noexcept;

/// See ops::v4_c128a_topk_metadata. One launch, one block per row (its threads over the row).
int v4_c128a_topk_metadata(int device_id, void* stream, const int64_t* positions,
                           const int32_t* token_to_req, const int32_t* block_table,
                           const void* slot_mapping, const C128aTopkParams& params,
                           int32_t* decode_indices, int32_t* decode_lens,
                           int32_t* prefill_indices) noexcept;

/// See ops::ragged_from_dense. Three launches: one block per row counts its entries, one block
/// scans the counts into indptr, one block per row compacts it (a block scan per tile).
int ragged_from_dense(int device_id, void* stream, const int32_t* indices, int64_t rows,
                      int64_t width, int64_t row_stride, const int32_t* lengths, int32_t* indptr,
                      int32_t* out) noexcept;

}  // namespace attn::kernels
