// vLLM 0.33's MLACommonMetadataBuilder (vllm/model_executor/layers/attention/mla_attention.py):
// the dense MLA builder every dense backend is or derives from. Its build(): the decode/prefill
// split (or, for a non-causal batch, one uniform decode block), the common fields, the prefill
// part with its chunked context, the decode part (MLACommonDecodeMetadata) and the backend's
// _build_decode additions. A backend file sets its MlaClass and overrides the hooks below
// where its vLLM builder overrides the base.
#pragma once

#include <memory>
#include <vector>

#include "backends/mla_builder.h"

namespace attn::backends {

namespace mla {

/// MLACommonDecodeMetadata's own fields (a backend's decode additions follow them).
#define MLA_DECODE_FIELDS(X)                      \
  X(kDecodeBlockTable, "decode_block_table")      \
  X(kDecodeSeqLens, "decode_seq_lens")            \
  X(kDecodeDcpTotSeqLens, "decode_dcp_tot_seq_lens")
ATTN_NAMED_LIST(DecodeField, MLA_DECODE_FIELDS);

}  // namespace mla

/// What vLLM 0.33's _build_decode is given, and what the base computed of it.
struct MlaDecode {
  const CommonMetadata& common;
  int64_t num_decodes;
  int64_t num_decode_tokens;
  int64_t max_seq_len;      ///< The metadata's (DCP-adjusted).
  int64_t query_len_bound;  ///< min(common.max_query_len, threshold): what 0.33 hands it.
  int64_t max_query_len;    ///< The decodes' longest query, measured (FLASHMLA, FLASH_ATTN_MLA).
  Tensor seq_lens;          ///< The decode part's seq_lens (DCP-local under DCP).
};

class MlaCommonBuilder : public MlaBuilder {
 public:
  explicit MlaCommonBuilder(const MlaArgs& a)
      : MlaCommonBuilder(a, {}, {}, buffer_plan(a.spec, a.config)) {}

  /// MLA_BUFFERS for determine_chunked_prefill_workspace_size's workspace.
  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c);
  static int64_t workspace_size(const KvCacheSpec& spec, const BuilderConfig& c) {
    return mla_chunked_prefill_workspace_size(spec, c);
  }

 protected:
  /// A backend's builder: its decode additions and tail, and its buffer list (MLA_BUFFERS, then
  /// its own from kOwnBuffers).
  MlaCommonBuilder(const MlaArgs& a, FieldBlock decode, FieldBlock tail,
                   std::vector<BufferRequest> buffers);

  void do_build(int64_t common_prefix_len, const CommonMetadata& c, bool fast_build,
                const ops::Exec& exec) final;
  /// vLLM's build_for_cudagraph_capture: decode-only batches.
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override;

  // ---- hooks ----
  /// Whether the split requires uniform decodes (vLLM: query_len_support != VARLEN).
  virtual bool require_uniform_decodes() const;
  /// Refusals of a batch the backend cannot build, before the metadata (or any buffer a field
  /// views) changes.
  virtual void check_batch(const CommonMetadata&, const ops::BatchSplit&, bool /*causal*/) {}
  /// The backend's _build_decode additions (after the decode part's own fields).
  virtual void build_decode(const MlaDecode&, const ops::Exec&) {}
  /// What the backend's build() adds after the base build (AMX_MLA's attributes).
  virtual void finish_build(const CommonMetadata&, const ops::BatchSplit&,
                            int64_t /*max_seq_len*/, const ops::Exec&) {}

  using MlaBuilder::at;
  size_t at(mla::DecodeField f) const { return decode_block(0, f); }
  /// The index of the backend's decode addition `i`.
  size_t decode_field(size_t i) const { return decode_block(1, i); }

 private:
  /// vLLM 0.33's non-causal multi-token decode: every request a decode, provided the builder
  /// supports it and the queries are one uniform block followed by zero-length padding.
  ops::BatchSplit non_causal_split(const CommonMetadata& c) const;
};

}  // namespace attn::backends
