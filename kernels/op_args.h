// The argument structs of the ops with many parameters (src/ops/batch_ops.h documents them and
// names them ops::MlaChunkTensors, ...): plain pointers and sizes, no CUDA header. They live in
// the lowest layer so that the shared helpers of kernels/ may take them too.
#pragma once

#include <cstdint>

namespace attn::kernels {

/// See ops::mla_context_chunk_plan: vLLM 0.33's build_mla_chunked_context_metadata settings.
struct MlaChunkParams {
  int64_t workspace_size = 0;  ///< chunked_prefill_workspace_size (rows).
  int32_t block_size = 1;      ///< The KV cache page size (split alignment).
  int32_t dcp_size = 1;        ///< decode_context_parallel_size (1: no DCP).
  int32_t interleave = 1;      ///< cp_kv_cache_interleave_size (dcp_local_block_size).
  int64_t max_chunks = 0;      ///< Capacities of the outputs (the planner never writes past).
  int64_t max_entries = 0;
  int64_t max_tokens = 0;
  int64_t max_local_tokens = 0;
};

/// See ops::mla_context_chunk_plan: the sizes of one plan.
struct MlaChunkCounts {
  int64_t num_chunks = 0;        ///< C: len(chunks).
  int64_t num_entries = 0;       ///< E: the (request, piece) entries of all chunks.
  int64_t num_tokens = 0;        ///< T: context rows of all chunks (token_to_seq).
  int64_t num_local_tokens = 0;  ///< DCP: padded local rows of all chunks.
};

/// See ops::mla_context_chunk_tensors. Any output may be null; the plan arrays are the op's
/// scratch (it plans again into them, where it runs) and are all needed.
struct MlaChunkTensors {
  int32_t* starts = nullptr;                   ///< (E,) gather offsets (local with DCP).
  int32_t* query_start_loc = nullptr;          ///< (E + C,) per chunk n + 1 entries.
  int32_t* cu_seq_lens = nullptr;              ///< (E + C,)
  int32_t* token_to_seq = nullptr;             ///< (T,)
  int32_t* padded_local_cu_seq_lens = nullptr;   ///< (E + C,) DCP
  int32_t* padded_local_token_to_seq = nullptr;  ///< (T_local,) DCP
  int32_t* chunk_entry_offsets = nullptr;        ///< scratch (C + 1,)
  int32_t* chunk_token_offsets = nullptr;        ///< scratch (C + 1,)
  int32_t* chunk_local_token_offsets = nullptr;  ///< scratch (C + 1,)
  int32_t* entry_request = nullptr;              ///< scratch (E,)
  int32_t* entry_start = nullptr;                ///< scratch (E,)
  int32_t* entry_len = nullptr;                  ///< scratch (E,)
};

/// See ops::mla_prefill_metadata. Any may be null.
struct MlaPrefillOut {
  int32_t* query_start_loc = nullptr;
  int32_t* query_seq_lens = nullptr;
};

/// See ops::gdn_spec_split. Any may be null.
struct GdnSplitOut {
  uint8_t* masks = nullptr;
  int32_t* spec_state = nullptr;
  int32_t* non_spec_state = nullptr;
  int32_t* spec_qsl = nullptr;
  int32_t* non_spec_qsl = nullptr;
  int64_t* spec_token_indx = nullptr;      ///< int64: vLLM's argsort indices.
  int64_t* non_spec_token_indx = nullptr;  ///< int64: vLLM's argsort indices.
  int32_t* spec_accepted = nullptr;
  uint8_t* non_spec_has_initial = nullptr;
};

/// See ops::flex_kv_indices: what FLEX_ATTENTION's direct block mask is built from.
struct FlexBlockMaskIn {
  const int32_t* doc_ids = nullptr;            ///< (num_tokens,) request of each token.
  int64_t num_tokens = 0;
  const int32_t* query_start_loc = nullptr;    ///< (num_reqs + 1,)
  const int32_t* decode_offset = nullptr;      ///< (num_reqs,) computed tokens.
  const int32_t* num_blocks_per_seq = nullptr; ///< (num_reqs,) cdiv(seq_lens, block_size).
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  int64_t pages = 0;           ///< Columns read per token (<= the table's width).
  int32_t block_size = 0;      ///< The KV cache block size.
  int32_t q_block = 0;         ///< Tokens per query group.
  int32_t causal = 0;          ///< Non-zero: prune blocks after each token's position.
  int32_t sliding_window = 0;  ///< > 0: prune blocks before each token's window.
  int64_t num_gpu_blocks = 0;  ///< Ids outside [1, num_gpu_blocks) are skipped.
};

/// See ops::indexer_prefill_arrays: DEEPSEEK_V32_INDEXER's prefill request groups
/// (_split_indexer_prefill_chunks) and DCP setting.
struct IndexerPrefillParams {
  int64_t num_decodes = 0;      ///< The prefills are requests [num_decodes, + num_prefills).
  int64_t num_prefills = 0;
  int64_t workspace_size = 0;   ///< max_prefill_buffer_size (K rows of one group).
  int64_t max_logits_elems = 0; ///< VLLM_SPARSE_INDEXER_MAX_LOGITS_MB * 2^20 / 4.
  int32_t dcp_size = 1;
  int32_t dcp_rank = 0;
  int32_t interleave = 1;       ///< The DCP interleave in compressed states:
                                ///< cp_kv_cache_interleave_size / compress_ratio under DCP.
  int64_t min_split_seq_len = 0; ///< The groups' lower clamp of each request's K length
                                 ///< (DEEPSEEK_V41_SPARSE_INDEXER's _prefill_split_seq_lens);
                                 ///< 0 = none.
  int32_t compress_ratio = 1;   ///< tokens_per_state: K rows are seq_len / compress_ratio.
  int32_t reserved = 0;
  /// The lengths the groups are planned from, indexed as seq_lens and in the same memory
  /// (vLLM 0.33's seq_lens_cpu_upper_bound, which exceeds seq_lens on an async spec-decode row
  /// a uniform split made a prefill); null = seq_lens. The arrays' values always read seq_lens.
  const int32_t* plan_seq_lens = nullptr;
};

/// See ops::indexer_prefill_arrays. local_cu_seq_lens is written under DCP only.
struct IndexerPrefillArrays {
  int32_t* cu_seq_lens = nullptr;        ///< (num_prefills + groups,) per group n + 1 entries.
  int32_t* local_cu_seq_lens = nullptr;  ///< (num_prefills + groups,) DCP: this rank's.
  int32_t* row_start = nullptr;          ///< (num_prefills,) scratch: each prefill's row start.
  int32_t* cu_seqlen_ks = nullptr;       ///< (num_prefill_tokens,)
  int32_t* cu_seqlen_ke = nullptr;       ///< (num_prefill_tokens,)
};

/// See ops::indexer_decode_tensors: which of vLLM 0.33's decode paths.
enum IndexerDecodeMode : int32_t {
  kIndexerNative1 = 0,   ///< native, next_n == 1: only the DCP-local lengths are computed.
  kIndexerNative2D = 1,  ///< native MTP: (num_decodes, max_decode_len) lengths.
  kIndexerFlatten = 2,   ///< one row per decode token (_prepare_decode_tensors' flattening).
  kIndexerVarlen = 3,    ///< _indexer_decode_metadata_kernel (SM100 varlen paged MQA logits).
};

/// See ops::indexer_decode_tensors.
struct IndexerDecodeParams {
  int64_t num_decodes = 0;
  int64_t num_decode_tokens = 0;
  int32_t mode = kIndexerNative1;
  int32_t max_decode_len = 0;     ///< The decodes' longest query.
  int32_t uniform_kernel = 0;     ///< Flatten: the uniform kernel's clamp at 0.
  int32_t dcp_size = 1;           ///< > 1: localize the lengths to dcp_rank.
  int32_t dcp_rank = 0;
  int32_t interleave = 1;
  const int32_t* block_table = nullptr;  ///< (num_decodes, bt_width) rows bt_stride apart.
  int64_t bt_stride = 0;
  int64_t bt_width = 0;
  int64_t out_width = 0;          ///< Columns of the expanded table (block_table_width).
  int32_t compress_ratio = 1;     ///< > 1: every seq_lens entry written is floor-divided by it
                                  ///< (after the DCP localization); global_seq_lens is not.
  int32_t reserved = 0;
};

/// See ops::indexer_decode_tensors. Null outputs are not written.
struct IndexerDecodeOut {
  int32_t* seq_lens = nullptr;        ///< native 2D: nd x max_decode_len; native 1: nd (DCP);
                                      ///< flatten, varlen: num_decode_tokens.
  int32_t* global_seq_lens = nullptr; ///< num_decode_tokens: the expanded global lengths.
  int32_t* block_table = nullptr;     ///< flatten, varlen: num_decode_tokens x out_width.
  int32_t* decode_lens = nullptr;     ///< native: nd query lengths; else num_decode_tokens ones.
  int32_t* per_req_decode_lens = nullptr;  ///< nd query lengths.
  int32_t* indices = nullptr;         ///< varlen: num_decode_tokens request indices.
};

/// See ops::sparse_swa_indices: one call of vLLM 0.33's _compute_swa_indices_and_lens_kernel
/// (DEEPSEEK_SPARSE_SWA, causal, no image spans).
struct SwaIndicesParams {
  int64_t num_tokens = 0;          ///< Rows written (the kernel's grid).
  int64_t token_offset = 0;        ///< Row i is token token_offset + i.
  int32_t window_size = 0;
  int32_t index_width = 0;         ///< Entries a row holds (the output's row stride).
  int32_t block_size = 0;
  /// Non-zero: DSpark's non-causal rows (vLLM's ComputeDSparkNoncausalSWAIndicesKernel: the
  /// window before the request's block and the whole block, replay_start not read).
  int32_t noncausal = 0;
  int64_t block_table_stride = 0;  ///< Elements between block table rows.
  /// Elements of the block table from its start, (rows - 1) * stride + columns: a position
  /// past them (a padded token's, whose slot is not -1) reads as slot -1 (vLLM reads outside
  /// the tensor).
  int64_t block_table_extent = 0;
};

/// See ops::v4_compressed_slot_mapping: one call of vLLM 0.33's CompressedSlotMappingKernel
/// (get_compressed_slot_mapping) for DeepSeek V4's sparse MLA builders (no DCP) and the
/// compressed indexer builders (with their DCP setting).
struct V4CompressedSlotsParams {
  int64_t num_reqs = 0;            ///< Requests (the kernel's grid: the block table's rows).
  int32_t compress_ratio = 0;      ///< tokens_per_state (> 1).
  int32_t num_states = 0;          ///< States a block: block_size / compress_ratio.
  int64_t block_table_stride = 0;  ///< Elements between block table rows.
  /// Elements of the block table from its start, (rows - 1) * stride + columns: a state past
  /// them maps to -1 (vLLM reads outside the tensor).
  int64_t block_table_extent = 0;
  bool slots_int64 = true;         ///< The slot mapping's dtype (int64, else int32).
  int32_t dcp_world_size = 1;      ///< > 1: positions become rank-local (cp_interleave).
  int32_t cp_interleave = 1;       ///< cp_kv_cache_interleave_size (uncompressed tokens).
};

/// See ops::qsa_token_metadata: the per-token part of vLLM 0.33's _build_qsa_metadata_kernel
/// (models/qwen4_exp/common/qsa_cache.py), inputs then outputs.
struct QsaTokenArgs {
  const int32_t* query_start_loc = nullptr;  ///< (num_reqs + 1,)
  const int32_t* seq_lens = nullptr;         ///< (num_reqs,)
  const int32_t* token_to_req = nullptr;     ///< (num_tokens,): compute_token_to_req_indices'
  const void* common_slot_mapping = nullptr; ///< The batch's slot_mapping (>= num_mapped_tokens)
  bool common_slots_int64 = true;            ///< Its dtype (int64, else int32).
  const int32_t* block_table = nullptr;      ///< (num_reqs, block_table_cols), rows strided
  int64_t block_table_stride = 0;            ///< Elements between block table rows.
  int64_t block_table_cols = 0;              ///< Its columns.
  int64_t num_mapped_tokens = 0;             ///< query_start_loc[num_reqs] (<= num_tokens).
  int64_t num_tokens = 0;                    ///< num_actual_tokens: the rows written.
  int64_t storage_block_size = 1;            ///< The spec's num_states (> 0).
  int64_t compress_ratio = 1;                ///< tokens_per_state of an MLA spec, else 1 (> 0).
  int64_t circular_buffer_size = 0;          ///< A circular spec's block_size, else 0.
  int64_t* logical_positions = nullptr;      ///< (num_tokens,) out
  int32_t* visible_blocks = nullptr;         ///< (num_tokens,) out
  int64_t* slot_mapping = nullptr;           ///< (num_tokens,) out; null for the plain cache
};

/// See ops::qsa_work_metadata: the work-item part of vLLM 0.33's _build_qsa_metadata_kernel.
struct QsaWorkArgs {
  const int32_t* query_start_loc = nullptr;  ///< (num_reqs + 1,)
  const int32_t* seq_lens = nullptr;         ///< (num_reqs,)
  int64_t num_reqs = 0;
  int64_t compress_ratio = 1;                ///< > 1
  int64_t max_num_work = 0;                  ///< Rows of k_work_metadata written.
  int64_t* work_ends = nullptr;              ///< (num_reqs,) scratch: the inclusive work sums
  int32_t* k_work_metadata = nullptr;        ///< (max_num_work, 2) out
};

/// See ops::v4_c128a_topk_metadata: one call of vLLM 0.33's build_c128a_topk_metadata.
struct C128aTopkParams {
  int64_t num_decode_tokens = 0;   ///< Rows 0 .. num_decode_tokens - 1 are decode rows.
  int64_t num_prefill_tokens = 0;  ///< The next rows are prefill rows.
  int32_t compress_ratio = 0;      ///< 128.
  int32_t width = 0;               ///< max_compressed_tokens: entries written per row.
  int32_t row_stride = 0;          ///< Elements between output rows (the buffers' width).
  int32_t block_size = 0;          ///< Compressed states a block: block_size / compress_ratio.
  int64_t block_table_stride = 0;  ///< Elements between block table rows.
  int64_t block_table_extent = 0;  ///< As in V4CompressedSlotsParams.
  bool slots_int64 = true;         ///< The slot mapping's dtype (int64, else int32).
};

/// See ops::aiter_mla_decode_tables: vLLM 0.33's AiterMLAMetadataBuilder._build_decode index
/// math for `num_reqs` decodes (inputs, then outputs; an output may be null).
struct AiterMlaDecodeArgs {
  const int32_t* query_start_loc = nullptr;  ///< (num_reqs + 1,) the decodes' (on the device).
  const int32_t* seq_lens = nullptr;         ///< (num_reqs,) the decodes' sequence lengths.
  const int32_t* block_table = nullptr;      ///< (num_reqs, bt_width), row stride bt_stride.
  int64_t bt_stride = 0;
  int64_t bt_width = 0;
  int64_t num_reqs = 0;
  int32_t kernel_block_size = 1;   ///< The KV cache block size (tokens per block-table entry).
  int32_t pad_qlen = 0;            ///< > 0: uniform-MTP padding / varlen width (max_qo_len).
  bool varlen = false;             ///< Adaptive varlen verify: every row padded to pad_qlen.
  int32_t uniform_qo = 0;          ///< > 0: qo_indptr = r * uniform_qo; 0: query_start_loc.
  bool reset_indices = false;      ///< Fill indices with -1 first (full CUDA graphs).
  int64_t indices_capacity = 0;    ///< Entries of `indices` (nothing is written past it).
  int64_t indptr_capacity = 0;     ///< > num_reqs + 1: fill the tails of indptr and qo_indptr.
  int64_t o_rows_size = 0;         ///< Entries of o_rows (max rows + 1; the last: the dump).
  int32_t* kernel_seq_lens = nullptr;  ///< (num_reqs,) seq_lens_for_kernel.
  int32_t* indptr = nullptr;           ///< (num_reqs + 1,) paged_kv_indptr.
  int32_t* indices = nullptr;          ///< paged_kv_indices (flat per-token page indices).
  int32_t* qo_indptr = nullptr;        ///< (num_reqs + 1,)
  int64_t* q_rows = nullptr;           ///< varlen: (num_reqs * pad_qlen,) varlen_q_rows.
  int64_t* o_rows = nullptr;           ///< varlen: (o_rows_size,) varlen_o_rows.
};

}  // namespace attn::kernels
