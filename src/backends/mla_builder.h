// What every MLA metadata builder has, dense (vLLM 0.33's MLACommonMetadataBuilder,
// mla_common.h) or sparse (SparseMLACommonMetadataBuilder, sparse_mla_common.h): the class
// attributes of its backend (MlaClass), the refusals they share, the metadata's common fields,
// the prefill part with its chunked context (build_mla_chunked_context_metadata), the persistent
// buffers of those, and the descriptor of a backend.
//
// A builder's metadata is composed of blocks of fields, each an X-macro list (field_list.h):
//   the common fields (MLACommonMetadata's own),
//   up to two decode blocks (dense: MLACommonDecodeMetadata's, then the backend's _build_decode
//     additions; sparse: SparseMLACommonMetadata's own),
//   the prefill part (MLACommonPrefillMetadata), its plan inputs (dense only), its chunked context,
//   and the backend's tail (AMX_MLA's attributes, FlashMLASparseMetadata's, ...).
// Nested dataclasses are flattened: "decode_", "prefill_" and "prefill_chunked_context_"
// prefixes; a part vLLM leaves None leaves its fields None. The order is ABI: a block's fields
// are appended, never moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/mla_config.h"
#include "backends/mla_prefill_backend.h"
#include "core/builder.h"
#include "core/per_layer_params.h"
#include "core/persistent_buffers.h"

namespace attn::backends {

/// vLLM 0.33's QueryLenSupport: what the decode kernel takes (sets require_uniform and whether
/// spec-decode requests count as decodes). The sparse builders' require_uniform_decodes is
/// kUniform, else kVarlen.
enum class QueryLenSupport { kSingleOnly, kUniform, kVarlen };

/// The supports_dcp_with_varlen argument of a builder's _init_reorder_batch_threshold.
enum class DcpVarlen { kNo, kYes, kInterleaveOne };

/// Where a sparse builder's reorder threshold comes from: its table by this rank's query heads
/// (sparse_mla_common.h); kNone for a dense builder (its class value).
enum class SparseThresholds { kNone, kByCapability, kSm90, kSm100 };

/// The bit of a KvDtype value in a mask (0 for a value outside the enumeration's range).
constexpr uint32_t dtype_bit(int32_t dtype) { return dtype >= 0 && dtype < 32 ? 1u << dtype : 0; }

/// The mask of a list of KvDtype values.
constexpr uint32_t dtype_mask(std::initializer_list<int32_t> dtypes) {
  uint32_t m = 0;
  for (const int32_t d : dtypes) m |= dtype_bit(d);
  return m;
}

/// The class attributes of an MLA backend and its builder in vLLM 0.33, by name. Each backend
/// file defines one as a constexpr: its name, CUDA graph support and query length support,
/// then the named setters of what differs from the defaults:
///   constexpr MlaClass kFoo = MlaClass("FOO", kCgUniformBatch, QueryLenSupport::kUniform)
///                                 .threshold(128).blocks(64);
struct MlaClass {
  const char* name = "";
  int32_t cudagraph_support = kCgNever;  ///< _cudagraph_support (none overrides the classmethod).
  QueryLenSupport query_len_support = QueryLenSupport::kSingleOnly;
  const char* vllm_release = "0.13-0.33 (partial)";  ///< Backend::vllm_release().
  int32_t reorder_batch_threshold = 1;  ///< The class value (dense builders).
  SparseThresholds sparse_thresholds = SparseThresholds::kNone;
  DcpVarlen dcp_with_varlen = DcpVarlen::kNo;
  /// get_supported_kernel_block_sizes: block_size must be a multiple of one of these (0: unused;
  /// 1: any).
  int32_t kernel_block_sizes[2] = {1, 0};
  /// supported_kv_cache_dtypes: the config->cache_dtype values accepted.
  uint32_t cache_dtypes =
      dtype_mask({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16, kKvDtypeFp8E4m3});
  /// supported_dtypes: the model dtypes accepted.
  uint32_t model_dtypes = dtype_mask({kKvDtypeFloat16, kKvDtypeBfloat16});
  bool supports_non_causal_multi_token_decode = false;  ///< The builder's class attribute.
  MlaPlatform platform = MlaPlatform::kCuda;  ///< Whose get_mla_prefill_backend_cls applies.
  /// Sparse builders whose supports_draft_decode_metadata_update is dcp_world_size == 1 (and
  /// whose update refills req_id_per_token).
  bool draft_decode_update_without_dcp = false;
  /// Sparse builders whose get_varlen_cudagraph_max_query_len is max_decode_query_len.
  bool varlen_cudagraph_max_query_len = false;
  /// get_supported_head_sizes: the spec's head size (kv_lora_rank + qk_rope_head_dim).
  int32_t head_size = kMlaHeadSize;
  /// A backend whose layer is given its prefill backend class (vLLM 0.33's MLAAttention
  /// prefill_backend_cls): that MlaPrefillBackend value; -1: the platform's choice
  /// (mla_prefill_backend). The prefill query dtype still follows the configured one.
  int32_t layer_prefill_backend = -1;
  /// The spec's sliding window (kv_cache_spec->sliding_window > 0) is the backend's: required,
  /// and the layers' window_left accepted.
  bool sliding_window = false;
  /// build_mla_chunked_context_metadata's align_chunk_to_block: true but for the sparse builders
  /// off CUDA (SparseMLACommonMetadataBuilder passes current_platform.is_cuda()), whose context
  /// chunks split at any token.
  bool align_chunks_to_blocks = true;

  constexpr MlaClass() = default;
  constexpr MlaClass(const char* n, int32_t level, QueryLenSupport queries)
      : name(n), cudagraph_support(level), query_len_support(queries) {}

  /// A copy with one attribute set (public and defined before the setters that use it: clang 14
  /// cannot evaluate a member template in a constant expression before its definition).
  template <class T>
  constexpr MlaClass with(T MlaClass::*member, T value) const {
    MlaClass c = *this;
    c.*member = value;
    return c;
  }

  // The named setters (each returns a copy with the attribute set).
  constexpr MlaClass named(const char* n) const { return with(&MlaClass::name, n); }
  constexpr MlaClass release(const char* r) const { return with(&MlaClass::vllm_release, r); }
  constexpr MlaClass threshold(int32_t t) const {
    return with(&MlaClass::reorder_batch_threshold, t);
  }
  constexpr MlaClass threshold_table(SparseThresholds t) const {
    return with(&MlaClass::sparse_thresholds, t);
  }
  constexpr MlaClass dcp_varlen(DcpVarlen d) const { return with(&MlaClass::dcp_with_varlen, d); }
  constexpr MlaClass blocks(int32_t a, int32_t b = 0) const {
    MlaClass c = *this;
    c.kernel_block_sizes[0] = a;
    c.kernel_block_sizes[1] = b;
    return c;
  }
  constexpr MlaClass caches(std::initializer_list<int32_t> d) const {
    return with(&MlaClass::cache_dtypes, dtype_mask(d));
  }
  constexpr MlaClass models(std::initializer_list<int32_t> d) const {
    return with(&MlaClass::model_dtypes, dtype_mask(d));
  }
  constexpr MlaClass non_causal_decode() const {
    return with(&MlaClass::supports_non_causal_multi_token_decode, true);
  }
  constexpr MlaClass on(MlaPlatform p) const { return with(&MlaClass::platform, p); }
  constexpr MlaClass draft_update_without_dcp() const {
    return with(&MlaClass::draft_decode_update_without_dcp, true);
  }
  constexpr MlaClass varlen_cudagraph() const {
    return with(&MlaClass::varlen_cudagraph_max_query_len, true);
  }
  constexpr MlaClass head(int32_t h) const { return with(&MlaClass::head_size, h); }
  constexpr MlaClass layer_prefill(int32_t b) const {
    return with(&MlaClass::layer_prefill_backend, b);
  }
  constexpr MlaClass windowed() const { return with(&MlaClass::sliding_window, true); }
  constexpr MlaClass unaligned_chunks() const {
    return with(&MlaClass::align_chunks_to_blocks, false);
  }

};

/// The refusals every MLA backend shares, before its own (vLLM refuses these at backend
/// selection or in the layer): the spec's kind and shape, the dimensions, the kernel block
/// size, the cache and model dtypes, decoder attention, KV sharing, sliding windows.
void check_mla_spec(const MlaClass& cls, const KvCacheSpec& spec, const BuilderConfig& c);
/// The refusals after a backend's own: a workspace of `workspace` rows below the chunk
/// alignment, or not a multiple of the DCP size (vLLM asserts both).
void check_mla_workspace(int64_t workspace, const KvCacheSpec& spec, const BuilderConfig& c);
/// The supports_dcp_with_varlen argument of the builder's _init_reorder_batch_threshold.
bool supports_dcp_with_varlen(const MlaClass& cls, const BuilderConfig& c);
/// Error(kUnsupported) unless the model is bfloat16 (a backend whose supported_dtypes is
/// bfloat16 only, checked after its own refusals).
void require_bf16_model(const MlaClass& cls, const KvCacheSpec& spec, const BuilderConfig& c);

/// A block of a builder's metadata fields: the names of an X-macro list.
struct FieldBlock {
  const char* const* names = nullptr;
  size_t count = 0;
};
template <size_t N>
FieldBlock field_block(const char* const (&names)[N]) {
  return {names, N};
}

/// The blocks a family adds to the common ones (see the top of this file).
struct MlaFieldBlocks {
  FieldBlock decode[2];
  bool prefill_plan = false;  ///< The dense prefill part's plan inputs (MLA_PREFILL_PLAN_FIELDS).
  FieldBlock tail;
  /// The plan inputs after the tail instead (the sparse builders: appended to their lists in
  /// ABI 1.7's field order, as their prefills run the same prefill backends).
  bool prefill_plan_last = false;
};

namespace mla {

/// MLACommonMetadata's own fields, first in every MLA builder's metadata.
#define MLA_COMMON_FIELDS(X)                                            \
  X(kNumReqs, "num_reqs")                                               \
  X(kMaxQueryLen, "max_query_len")                                      \
  X(kMaxSeqLen, "max_seq_len")                                          \
  X(kNumActualTokens, "num_actual_tokens")                              \
  X(kQueryStartLoc, "query_start_loc")                                  \
  X(kSlotMapping, "slot_mapping")                                       \
  X(kNumDecodes, "num_decodes")                                         \
  X(kNumDecodeTokens, "num_decode_tokens")                              \
  X(kNumPrefills, "num_prefills")                                       \
  X(kCausal, "causal")                                                  \
  X(kHeadDim, "head_dim")                                               \
  X(kChunkedPrefillWorkspaceSize, "chunked_prefill_workspace_size")
ATTN_NAMED_LIST(CommonField, MLA_COMMON_FIELDS);

/// MLACommonPrefillMetadata's (and SparseMLAPrefillMetadata's) fields.
#define MLA_PREFILL_FIELDS(X)                                           \
  X(kPrefillBlockTable, "prefill_block_table")                          \
  X(kPrefillQueryStartLoc, "prefill_query_start_loc")                   \
  X(kPrefillMaxQueryLen, "prefill_max_query_len")                       \
  X(kPrefillQDataType, "prefill_q_data_type")                           \
  X(kPrefillOutputDtype, "prefill_output_dtype")                        \
  X(kPrefillPrefillBackend, "prefill_prefill_backend")                  \
  X(kPrefillQueryLensCpu, "prefill_query_lens_cpu")                     \
  X(kPrefillUseDenseMha, "prefill_use_dense_mha")
ATTN_NAMED_LIST(PrefillField, MLA_PREFILL_FIELDS);

/// The dense prefill part's plan inputs (libattn's additions): TRTLLM_RAGGED's and
/// TOKENSPEED_MLA's query lengths, FlashInfer's ragged prefill plan().
#define MLA_PREFILL_PLAN_FIELDS(X)                                      \
  X(kPrefillQuerySeqLens, "prefill_query_seq_lens")                     \
  X(kPrefillNumQoHeads, "prefill_num_qo_heads")                         \
  X(kPrefillNumKvHeads, "prefill_num_kv_heads")                         \
  X(kPrefillHeadDimQk, "prefill_head_dim_qk")                           \
  X(kPrefillHeadDimVo, "prefill_head_dim_vo")                           \
  X(kPrefillSmScale, "prefill_sm_scale")                                \
  X(kPrefillWindowLeft, "prefill_window_left")                          \
  X(kPrefillLogitsSoftCap, "prefill_logits_soft_cap")
ATTN_NAMED_LIST(PlanField, MLA_PREFILL_PLAN_FIELDS);

/// The prefill part's ChunkedContextMetadata, its list of ContextChunks flattened
/// (docs/backends/mla.md, "The chunked context").
#define MLA_CHUNKED_CONTEXT_FIELDS(X)                                                        \
  X(kContextLens, "prefill_chunked_context_context_lens")                                    \
  X(kContextLensList, "prefill_chunked_context_context_lens_list")                           \
  X(kEmptyTokenSlices, "prefill_chunked_context_empty_token_slices")                         \
  X(kNumChunks, "prefill_chunked_context_num_chunks")                                        \
  X(kChunkRequestStart, "prefill_chunked_context_chunk_request_start")                       \
  X(kChunkRequestEnd, "prefill_chunked_context_chunk_request_end")                           \
  X(kChunkTokenStart, "prefill_chunked_context_chunk_token_start")                           \
  X(kChunkTokenEnd, "prefill_chunked_context_chunk_token_end")                               \
  X(kChunkContinuationTokenEnd, "prefill_chunked_context_chunk_continuation_token_end")      \
  X(kChunkIsContinuation, "prefill_chunked_context_chunk_is_continuation")                   \
  X(kChunkNumContextTokens, "prefill_chunked_context_chunk_num_context_tokens")              \
  X(kChunkMaxQueryLen, "prefill_chunked_context_chunk_max_query_len")                        \
  X(kChunkMaxSeqLen, "prefill_chunked_context_chunk_max_seq_len")                            \
  X(kChunkAllRowsActive, "prefill_chunked_context_chunk_all_rows_active")                    \
  X(kChunkNumLocalContextTokens, "prefill_chunked_context_chunk_num_local_context_tokens")   \
  X(kChunkRequestOffsets, "prefill_chunked_context_chunk_request_offsets")                   \
  X(kChunkBoundaryOffsets, "prefill_chunked_context_chunk_boundary_offsets")                 \
  X(kChunkTokenOffsets, "prefill_chunked_context_chunk_token_offsets")                       \
  X(kChunkLocalTokenOffsets, "prefill_chunked_context_chunk_local_token_offsets")            \
  X(kChunkQueryStartLoc, "prefill_chunked_context_chunk_query_start_loc")                    \
  X(kChunkCuSeqLens, "prefill_chunked_context_chunk_cu_seq_lens")                            \
  X(kChunkStarts, "prefill_chunked_context_chunk_starts")                                    \
  X(kChunkSeqLens, "prefill_chunked_context_chunk_seq_lens")                                 \
  X(kChunkTokenToSeq, "prefill_chunked_context_chunk_token_to_seq")                          \
  X(kChunkPaddedLocalSeqLens, "prefill_chunked_context_chunk_padded_local_seq_lens")         \
  X(kChunkLocalContextLensAllranks,                                                          \
    "prefill_chunked_context_chunk_local_context_lens_allranks")                             \
  X(kChunkPaddedLocalCuSeqLens, "prefill_chunked_context_chunk_padded_local_cu_seq_lens")    \
  X(kChunkPaddedLocalTokenToSeq,                                                             \
    "prefill_chunked_context_chunk_padded_local_token_to_seq")                               \
  X(kChunkLocalStarts, "prefill_chunked_context_chunk_local_starts")
ATTN_NAMED_LIST(ChunkField, MLA_CHUNKED_CONTEXT_FIELDS);

/// The persistent buffers of the prefill part and its chunked context, first in every MLA
/// builder's buffer list (a family's own follow: MlaBuilder::kOwnBuffers).
#define MLA_BUFFERS(X)                                                                  \
  /* on the builder's device */                                                         \
  X(kBufPrefillQsl, "prefill_query_start_loc")                                          \
  X(kBufQuerySeqLens, "prefill_query_seq_lens")                                         \
  X(kBufContextLens, "prefill_chunked_context_context_lens")                            \
  X(kBufStarts, "prefill_chunked_context_chunk_starts")                                 \
  X(kBufChunkQsl, "prefill_chunked_context_chunk_query_start_loc")                      \
  X(kBufCuSeqLens, "prefill_chunked_context_chunk_cu_seq_lens")                         \
  X(kBufTokenToSeq, "prefill_chunked_context_chunk_token_to_seq")                       \
  X(kBufPaddedLocalCu, "prefill_chunked_context_chunk_padded_local_cu_seq_lens")        \
  X(kBufPaddedLocalTts, "prefill_chunked_context_chunk_padded_local_token_to_seq")      \
  X(kBufPlanScratch, "the device's chunk plan")                                         \
  /* host */                                                                            \
  X(kBufHostContextLens, "host context lengths")                                        \
  X(kBufContextLensList, "prefill_chunked_context_context_lens_list")                   \
  X(kBufEmptySlices, "prefill_chunked_context_empty_token_slices")                      \
  X(kBufQueryLensCpu, "prefill_query_lens_cpu")                                         \
  X(kBufChunkLists, "the per-chunk lists")                                              \
  X(kBufEntryLists, "the per-entry lists")
ATTN_NAMED_LIST(Buffer, MLA_BUFFERS);

}  // namespace mla

/// The MLA_BUFFERS of a builder whose chunked-prefill workspace has `workspace` rows.
std::vector<BufferRequest> mla_buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c,
                                           int64_t workspace);

/// `r` followed by the buffers of `plan` (a family's own list after its base's).
template <size_t N>
std::vector<BufferRequest> appended(std::vector<BufferRequest> r, const BufferPlan<N>& plan) {
  for (const BufferRequest& b : plan.requests()) r.push_back(b);
  return r;
}

/// What an MLA builder is constructed from: its class and the descriptor's create() arguments.
struct MlaArgs {
  const MlaClass& cls;
  std::shared_ptr<const Backend> backend;
  const KvCacheSpec& spec;
  const BuilderConfig& config;
};

/// How a build fills the prefill part (MLACommonPrefillMetadata or SparseMLAPrefillMetadata).
struct MlaPrefill {
  int64_t max_query_len = 0;
  int32_t q_data_type = 0;
  bool use_dense_mha = false;
};

class MlaBuilder : public Builder {
 public:
  const MlaClass& mla_class() const { return cls_; }

 protected:
  /// `buffers`: MLA_BUFFERS, then the family's own; `workspace`: the chunked-prefill rows.
  MlaBuilder(const MlaArgs& a, std::vector<BufferRequest> buffers, int64_t workspace,
             const MlaFieldBlocks& blocks);

  static constexpr size_t kOwnBuffers = mla::kBufferCount;  ///< A family's first buffer.

  /// Where each field is: the common blocks by their enumerators, a family's by its indices.
  size_t at(mla::CommonField f) const { return f; }
  size_t at(mla::PrefillField f) const { return prefill_ + f; }
  size_t at(mla::PlanField f) const;  ///< Error(kInternal) for a builder without them.
  size_t at(mla::ChunkField f) const { return chunked_ + f; }
  size_t decode_block(size_t block, size_t i) const { return decode_[block] + i; }
  size_t tail_field(size_t i) const { return tail_ + i; }

  /// Refuses a batch with prefills whose host lengths are unknown (neither
  /// seq_lens_cpu_upper_bound nor exact host lengths; vLLM 0.33 asserts the bound is given).
  void check_prefill_lengths(const CommonMetadata& c, int64_t num_prefills) const;
  /// The prefills' context lengths (from seq_lens_cpu_upper_bound, else the exact host lengths:
  /// vLLM 0.33 reads the bound, "exact for prefill rows") and their chunk plan, on the host.
  ops::MlaChunkCounts plan_chunks(const CommonMetadata& c, int64_t nd, int64_t np);
  /// Resets the metadata and writes the common fields but head_dim.
  void build_common(const CommonMetadata& c, const ops::BatchSplit& s, int64_t max_seq_len,
                    bool causal);
  /// The prefill part and (when `chunks` has any) its chunked context.
  void build_prefill(const CommonMetadata& c, int64_t nd, int64_t np,
                     const ops::MlaChunkCounts& chunks, const MlaPrefill& p,
                     const ops::Exec& exec);

  Tensor device_vector(size_t buffer, int64_t n) const;
  Tensor host_list(int32_t* p, int64_t n) const;
  bool full_cuda_graphs() const { return has_full_cudagraphs(config().cudagraph_mode); }
  int32_t prefill_backend() const { return prefill_backend_; }
  /// The configured prefill backend (get_mla_prefill_backend), which
  /// determine_prefill_query_data_type asks even where the layer runs another.
  int32_t configured_prefill_backend() const { return configured_prefill_backend_; }
  int32_t dcp() const { return dcp_; }
  int32_t interleave() const { return interleave_; }
  int64_t workspace() const { return workspace_; }

  PersistentBuffers buffers_;

 private:
  int32_t* entry_list(size_t list) const;
  int32_t* allranks_host() const;
  ops::MlaChunkHostOut host_chunk_out();
  ops::MlaChunkTensors device_chunk_out() const;
  void build_chunked_context(const ops::MlaChunkCounts& chunks, int64_t np);

  const MlaClass& cls_;
  size_t decode_[2] = {0, 0};
  size_t prefill_ = 0, plan_ = 0, chunked_ = 0, tail_ = 0;
  bool has_plan_ = false;
  int64_t workspace_ = 0;
  ops::MlaChunkParams chunk_params_;
  int32_t prefill_backend_ = 0;
  int32_t configured_prefill_backend_ = 0;
  int32_t dcp_ = 1;
  int32_t interleave_ = 1;
  int64_t num_empty_ = 0;
  PerLayerParams hyper_;
};

/// No refusals of a backend's own.
inline void no_own_check(const KvCacheSpec&, const BuilderConfig&) {}

/// The descriptor of an MLA backend: class `Cls` (a constexpr MlaClass), builder `BuilderT`
/// (constructed from MlaArgs; its static buffer_plan(spec, config) and
/// workspace_size(spec, config) size it) and the backend's own refusals `Check`, which run
/// between check_mla_spec and check_mla_workspace.
template <const MlaClass& Cls, class BuilderT,
          void (*Check)(const KvCacheSpec&, const BuilderConfig&) = no_own_check>
BackendDescriptor mla_descriptor() {
  return {Cls.name,
          Cls.vllm_release,
          kv_kind_bit(kKvMla),
          0,
          fixed_cudagraph_support<Cls.cudagraph_support>,
          [](const BackendDescriptor&, const KvCacheSpec& spec, const BuilderConfig& c) {
            check_mla_spec(Cls, spec, c);
            Check(spec, c);
            check_mla_workspace(BuilderT::workspace_size(spec, c), spec, c);
          },
          [](const BackendDescriptor&, const KvCacheSpec& spec, const BuilderConfig& c) {
            return BuilderT::buffer_plan(spec, c);
          },
          [](const BackendDescriptor&, std::shared_ptr<const Backend> backend,
             const KvCacheSpec& spec, const BuilderConfig& c) -> std::unique_ptr<Builder> {
            return std::make_unique<BuilderT>(MlaArgs{Cls, std::move(backend), spec, c});
          }};
}

}  // namespace attn::backends
