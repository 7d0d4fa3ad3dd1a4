// vLLM 0.33's SparseMLACommonMetadataBuilder
// (vllm/model_executor/layers/attention/sparse_mla_attention.py): the sparse MLA builder every
// sparse backend is or derives from (DeepSeek V3.2's indexer picks the tokens; there is no decode
// part). Its build(): req_id_per_token, the split, SparseMLACommonMetadata's own fields, the
// prefill part (SparseMLAPrefillMetadata) with the dense family's chunked context. A backend file
// sets its MlaClass and overrides the hooks below where its vLLM builder overrides the base.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/mla_builder.h"

namespace attn::backends {

namespace mla {

/// SparseMLACommonMetadata's own fields (after the common ones).
#define SPARSE_MLA_FIELDS(X)                                    \
  X(kSparseBlockTable, "block_table")                           \
  X(kReqIdPerToken, "req_id_per_token")                         \
  X(kSparseSeqLens, "seq_lens")                                 \
  X(kBlockSize, "block_size")                                   \
  X(kTopkTokens, "topk_tokens")                                 \
  X(kDecodeMaxQueryLen, "decode_max_query_len")                 \
  X(kPrefillMaxSeqLen, "prefill_max_seq_len")                   \
  X(kCpKvCacheInterleaveSize, "cp_kv_cache_interleave_size")
ATTN_NAMED_LIST(SparseField, SPARSE_MLA_FIELDS);

#define SPARSE_MLA_BUFFERS(X) X(kBufReqIdPerToken, "req_id_per_token")
ATTN_NAMED_LIST(SparseBuffer, SPARSE_MLA_BUFFERS);

}  // namespace mla

class SparseMlaCommonBuilder : public MlaBuilder {
 public:
  explicit SparseMlaCommonBuilder(const MlaArgs& a)
      : SparseMlaCommonBuilder(a, {}, buffer_plan(a.spec, a.config)) {}

  /// MLA_BUFFERS for the sparse workspace, then SPARSE_MLA_BUFFERS.
  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c);
  static int64_t workspace_size(const KvCacheSpec& spec, const BuilderConfig& c) {
    return sparse_mla_chunked_prefill_workspace_size(spec, c);
  }

  /// max_decode_query_len where the class says so (FlashInferMLASparseTRTLLMMetadataBuilder
  /// and its FA4 subclass); the others keep the base class's None.
  std::optional<int32_t> varlen_cudagraph_max_query_len() const override;
  /// The builders whose update_draft_decode_metadata refills req_id_per_token update only
  /// without DCP (vLLM 0.33: dcp_world_size == 1); the others keep the base class's "no".
  std::string draft_decode_update_refusal() const override;

 protected:
  /// A backend's builder: its tail and its buffer list (buffer_plan's, then its own from
  /// kSparseOwnBuffers).
  SparseMlaCommonBuilder(const MlaArgs& a, FieldBlock tail, std::vector<BufferRequest> buffers);

  static constexpr size_t kSparseOwnBuffers = kOwnBuffers + mla::kSparseBufferCount;

  void do_build(int64_t common_prefix_len, const CommonMetadata& c, bool fast_build,
                const ops::Exec& exec) final;
  /// update_draft_decode_metadata: req_id_per_token again over the decode tokens from the
  /// (advanced) query_start_loc the metadata views.
  void do_update_draft_decode(const Metadata& md, const ops::Exec& exec) override;

  // ---- hooks ----
  /// The backend's host plan of a batch, and its refusals (after the chunk plan, before the
  /// metadata changes).
  virtual void plan_batch(const CommonMetadata&, const ops::BatchSplit&) {}
  /// What the backend's build() adds (after the prefill part).
  virtual void finish_build(const CommonMetadata&, const ops::BatchSplit&, const ops::Exec&) {}
  /// Whether the layer has a prefill backend (MLAAttention.prefill_backend is not None): without
  /// one vLLM 0.33 builds no prefill part and leaves prefill_max_seq_len 0 (a sparse impl
  /// without dense-MHA prefill, e.g. ROCM_AITER_MLA_SPARSE's sink layers).
  virtual bool has_prefill_backend() const { return true; }

  using MlaBuilder::at;
  size_t at(mla::SparseField f) const { return decode_block(0, f); }

  int32_t topk_tokens() const { return topk_tokens_; }
  /// The prefills' longest sequence, from seq_lens_cpu_upper_bound as vLLM 0.33 reads it ("exact
  /// for prefill rows"; optimistic for an async spec-decode row a uniform split made a prefill);
  /// the host lengths without the bound.
  int64_t prefill_max_seq_len(const CommonMetadata& c, int64_t nd, int64_t np) const;

 private:
  int32_t topk_tokens_ = 0;
};

}  // namespace attn::backends
