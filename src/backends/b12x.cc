// B12X (vLLM 0.33's B12xPagedMetadataBuilder, v1/attention/backends/b12x.py): the batch's
// tables as they are. UNIFORM_BATCH (decode and uniform verifier batches replay preplanned
// graph buckets; prefill stays eager), no reorder threshold, update_block_table supported (a
// copy with the new block table and slot mapping). vLLM selects it on compute capability
// 12.0/12.1 with 64- or 128-token pages (backend-selection checks the builder does not repeat).
#include <memory>
#include <utility>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/vllm_release.h"

namespace attn::backends {
namespace {

#define B12X_FIELDS(X) ATTN_PASSTHROUGH_FIELDS(X, k, "") X(kCausal, "causal")
ATTN_NAMED_LIST(Field, B12X_FIELDS);

class B12xBuilder final : public Builder {
 public:
  B12xBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
              const BuilderConfig& config)
      : Builder(std::move(backend), spec, config) {
    init_metadata(name_vector(kFieldNames));
    set_cudagraph_support(kCgUniformBatch);
  }

  bool supports_update_block_table() const override { return true; }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec&) override {
    Metadata& m = metadata();
    set_passthrough(m, kNumActualTokens, c);
    // `causal=cm.causal`: vLLM 0.33's bool, or the batch's per-request tensor.
    if (c.causal_per_request)
      m.set_tensor(kCausal, *c.causal_per_request);
    else
      m.set_bool(kCausal, c.causal);
  }
};

}  // namespace

extern const BackendDescriptor kB12xBackend;
const BackendDescriptor kB12xBackend{
    "B12X",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_spec_kind_only,
    no_buffers,
    create_builder_of<B12xBuilder>,
};

}  // namespace attn::backends
