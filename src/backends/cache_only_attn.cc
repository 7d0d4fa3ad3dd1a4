// CACHE_ONLY_ATTN (vLLM 0.33's CacheOnlyAttentionMetadataBuilder,
// model_executor/models/extract_hidden_states.py): the layers that only write hidden states into
// a KV cache (ExtractHiddenStatesModel) need the slot mapping and nothing else. The base
// builder's class answers: NEVER, no reorder threshold, no update_block_table. Non-causal
// batches are refused, as vLLM's build raises. Its spec is HiddenStateCacheSpec, an
// MLAAttentionSpec subclass: ATTN_KV_MLA, or FULL_ATTENTION.
#include <memory>
#include <utility>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/vllm_release.h"

namespace attn::backends {
namespace {

#define CACHE_ONLY_FIELDS(X) X(kSlotMapping, "slot_mapping")
ATTN_NAMED_LIST(Field, CACHE_ONLY_FIELDS);

class CacheOnlyBuilder final : public Builder {
 public:
  CacheOnlyBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                   const BuilderConfig& config)
      : Builder(std::move(backend), spec, config) {
    init_metadata(name_vector(kFieldNames));
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec&) override {
    // vLLM: `if not causal: raise NotImplementedError(...)`; torch answers `not tensor` only
    // for a one-element tensor, so a per-request causal tensor is refused unless it has one
    // request and that request is causal.
    if (c.causal_per_request) {
      if (c.num_reqs != 1 || !c.causal_per_request->host_accessible())
        fail(Status::kUnsupported, "CACHE_ONLY_ATTN: vLLM 0.33 evaluates `not causal`, which "
             "torch refuses for a per-request causal tensor of ", c.num_reqs,
             " requests (common->causal_per_request); pass common->causal instead");
      if (!c.causal_for(0))
        fail(Status::kUnsupported, "Non-causal attention not supported by CacheOnlyAttention "
             "(common->causal_per_request[0]=0)");
    } else if (!c.causal) {
      fail(Status::kUnsupported, "Non-causal attention not supported by CacheOnlyAttention "
           "(common->causal=0)");
    }
    metadata().set_tensor(kSlotMapping, *c.slot_mapping);
  }
};

}  // namespace

extern const BackendDescriptor kCacheOnlyAttnBackend;
const BackendDescriptor kCacheOnlyAttnBackend{
    "CACHE_ONLY_ATTN",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvMla),
    0,
    fixed_cudagraph_support<kCgNever>,
    check_spec_kind_only,
    no_buffers,
    create_builder_of<CacheOnlyBuilder>,
};

}  // namespace attn::backends
