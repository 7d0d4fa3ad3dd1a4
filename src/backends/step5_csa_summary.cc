// STEP5_CSA_SUMMARY: vLLM 0.33's Step5SparseSummaryMetadataBuilder (models/step5/nvidia/
// sparse_summary_cache.py), the builder of Step5's CSA region-summary cache layers (one FP8
// summary per eight tokens, a FullAttentionSpec with tokens_per_state 8 in the DSA layer's KV
// cache group). "Summaries are addressed through the DSA layer's own metadata": its build
// returns None. libattn's metadata for it has no fields; the build validates the batch (libattn's
// addition; under ATTN_VALIDATE_TRUSTED it reads nothing) and launches nothing. Level ALWAYS (the
// class attribute), reorder threshold None, no update_block_table, no draft-decode update (the
// base class's).
#include <memory>
#include <utility>

#include "backends/backend_descriptor.h"
#include "core/builder.h"
#include "core/vllm_release.h"

namespace attn::backends {
namespace {

class Step5CsaSummaryBuilder final : public Builder {
 public:
  Step5CsaSummaryBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                         const BuilderConfig& config)
      : Builder(std::move(backend), spec, config) {
    init_metadata({});  // build() returns None
  }

 protected:
  void do_build(int64_t, const CommonMetadata&, bool, const ops::Exec&) override {}
  bool reads_batch_values(int64_t, const CommonMetadata&) const override { return false; }
};

}  // namespace

extern const BackendDescriptor kStep5CsaSummaryBackend;
const BackendDescriptor kStep5CsaSummaryBackend{
    "STEP5_CSA_SUMMARY",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention),  // Step5SparseSummaryCacheLayer's FullAttentionSpec
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_spec_kind_only,
    no_buffers,
    create_builder_of<Step5CsaSummaryBuilder>,
};

}  // namespace attn::backends
