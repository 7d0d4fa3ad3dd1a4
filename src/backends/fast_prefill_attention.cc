// KV-sharing fast prefill (vLLM's create_fast_prefill_custom_backend): the wrapped builder builds
// the batch of make_kv_sharing_fast_prefill_common_attn_metadata (only the tokens whose logits
// are needed stay queries); the result also carries the original batch's logits_indices_padded
// and num_logits_indices, which the KV-sharing layers gather with.
#include <utility>

#include "backends/field_list.h"
#include "backends/wrapped_builder.h"
#include "backends/wrapper_kinds.h"
#include "core/batch_transforms.h"

namespace attn::backends {
namespace {

#define FAST_PREFILL_BUFFERS(X) \
  X(kQsl, "fast-prefill query_start_loc") X(kQslCpu, "fast-prefill query_start_loc_cpu")
ATTN_NAMED_LIST(Buffer, FAST_PREFILL_BUFFERS);
/// The fields after the wrapped backend's.
#define FAST_PREFILL_EXTRA_FIELDS(X)                    \
  X(kExtraLogitsIndicesPadded, "logits_indices_padded") \
  X(kExtraNumLogitsIndices, "num_logits_indices")
ATTN_NAMED_LIST(Extra, FAST_PREFILL_EXTRA_FIELDS);

class FastPrefillBuilder final : public WrappedBuilder {
 public:
  FastPrefillBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                     const BuilderConfig& config, std::unique_ptr<Builder> inner)
      : WrappedBuilder(std::move(backend), spec, config, std::move(inner), "FastPrefill",
                       name_vector(kExtraNames),
                       fast_prefill_buffers(config)) {}

 protected:
  CommonMetadata transform(const CommonMetadata& common, const ops::Exec& exec) override {
    CommonMetadata c = common;
    const int64_t n = static_cast<int64_t>(config().max_num_seqs) + 1;
    FastPrefillOutputs out;
    out.query_start_loc = make_vector(buffers().get(kQsl), config().device, kInt32, n);
    out.query_start_loc_cpu = make_vector(buffers().get(kQslCpu), Device{}, kInt32, n);
    bool passthrough = false;
    return make_kv_sharing_fast_prefill(c, std::nullopt, out, exec.stream, &passthrough);
  }

  void finish(const CommonMetadata& common, const CommonMetadata&, const ops::Exec&) override {
    Metadata& m = metadata();
    m.set_tensor(extra_base() + kExtraLogitsIndicesPadded, common.logits_indices_padded);
    // Not armed (no logits indices): vLLM 0.33's num_logits_indices is None.
    if (common.logits_indices_padded)
      m.set_int(extra_base() + kExtraNumLogitsIndices, common.num_logits_indices);
    else
      m.set_none(extra_base() + kExtraNumLogitsIndices);
  }
};

}  // namespace

std::vector<BufferRequest> fast_prefill_buffers(const BuilderConfig& c) {
  const size_t n = (static_cast<size_t>(c.max_num_seqs) + 1) * sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kQsl, n);
  p.set(kQslCpu, n, true);
  return p.requests();
}

std::unique_ptr<Builder> make_fast_prefill(std::shared_ptr<const Backend> backend,
                                           const KvCacheSpec& spec, const BuilderConfig& config,
                                           std::unique_ptr<Builder> inner) {
  return std::make_unique<FastPrefillBuilder>(std::move(backend), spec, config, std::move(inner));
}

}  // namespace attn::backends
