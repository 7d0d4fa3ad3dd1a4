// Per-step builds.
#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "core/build_group.h"

#include <vector>

namespace {

// Checks the handles, marks the builder in use, runs `build` and publishes the builder's
// metadata through `out`.
template <class Build>
attn_error_t* run(attn_builder_t* builder, attn_metadata_t** out, Build&& build,
                  const attn_metadata_t* source = nullptr) {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(out, "out");
  attn::Builder::Use use(*builder->impl);
  build(*builder->impl);
  *out = builder->publish(source);
  return nullptr;
  ATTN_API_CATCH
}

// A builder's earlier handles go stale without a new one being handed out: its metadata changed
// in a call that failed after building it.
void retire(attn_builder_t* builder) noexcept {
  builder->generation.store(builder->generation.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
}

}  // namespace

extern "C" {

ATTN_API attn_error_t* attn_build_groups(attn_builder_t* const* builders, size_t num_builders,
                                         const int64_t* common_prefix_lens,
                                         const attn_common_metadata_t* common, int32_t fast_build,
                                         attn_metadata_t** out, attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(builders, "builders");
  attn::capi::require(out, "out");
  if (num_builders == 0) attn::invalid("num_builders=0; pass at least one builder");
  for (size_t i = 0; i < num_builders; ++i) {
    if (builders[i] == nullptr) attn::invalid("builders[", i, "] is NULL");
    for (size_t j = 0; j < i; ++j)
      if (builders[j] == builders[i])
        attn::invalid("builders[", i, "] is builders[", j,
                      "]; a builder may appear once (it holds one result)");
  }
  // Few builders (one per KV cache group): small arrays on the stack, else one allocation each.
  constexpr size_t kLocal = 16;
  attn::Builder* local_impls[kLocal];
  attn_metadata_t* local_tickets[kLocal];
  std::vector<attn::Builder*> heap_impls;
  std::vector<attn_metadata_t*> heap_tickets;
  attn::Builder** impls = local_impls;
  attn_metadata_t** tickets = local_tickets;
  if (num_builders > kLocal) {
    heap_impls.resize(num_builders);
    heap_tickets.resize(num_builders);
    impls = heap_impls.data();
    tickets = heap_tickets.data();
  }
  for (size_t i = 0; i < num_builders; ++i) impls[i] = builders[i]->impl.get();
  attn::UseGroup use(impls, num_builders);
  // The batch is converted once, into the first builder's storage (held by `use`).
  attn::CommonMetadata& c = builders[0]->batch;
  attn::capi::fill_common(common, c);
  size_t built = 0;
  try {
    attn::build_group(impls, num_builders, common_prefix_lens, c, fast_build != 0, stream, &built);
    for (size_t i = 0; i < num_builders; ++i) tickets[i] = builders[i]->publish(nullptr);
  } catch (...) {
    for (size_t i = 0; i < built; ++i) retire(builders[i]);
    throw;
  }
  for (size_t i = 0; i < num_builders; ++i) out[i] = tickets[i];
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_build(attn_builder_t* builder, int64_t common_prefix_len,
                                  const attn_common_metadata_t* common, int32_t fast_build,
                                  attn_metadata_t** out, attn_stream_t stream) noexcept {
  return run(builder, out, [&](attn::Builder& b) {
    attn::CommonMetadata& c = builder->batch;  // under the builder's Use guard
    attn::capi::fill_common(common, c);
    b.build(common_prefix_len, c, fast_build != 0, stream);
  });
}

ATTN_API attn_error_t* attn_build_for_cudagraph_capture(attn_builder_t* builder,
                                                        const attn_common_metadata_t* common,
                                                        attn_metadata_t** out,
                                                        attn_stream_t stream) noexcept {
  return run(builder, out, [&](attn::Builder& b) {
    attn::CommonMetadata c = attn::capi::to_common(common);
    b.build_for_cudagraph_capture(c, stream);
  });
}

ATTN_API attn_error_t* attn_build_for_drafting(attn_builder_t* builder,
                                               const attn_common_metadata_t* common,
                                               int32_t draft_index, attn_metadata_t** out,
                                               attn_stream_t stream) noexcept {
  return run(builder, out, [&](attn::Builder& b) {
    attn::CommonMetadata c = attn::capi::to_common(common);
    b.build_for_drafting(c, draft_index, stream);
  });
}

ATTN_API attn_error_t* attn_update_block_table(attn_builder_t* builder,
                                               const attn_metadata_t* metadata,
                                               const attn_tensor_t* block_table,
                                               const attn_tensor_t* slot_mapping,
                                               attn_metadata_t** out,
                                               attn_stream_t stream) noexcept {
  return run(
      builder, out,
      [&](attn::Builder& b) {
        attn::capi::require(metadata, "metadata");
        const attn_metadata_t* src = attn::capi::live(metadata, "metadata");
        const attn::Tensor bt = attn::capi::to_required_tensor(block_table, "block_table");
        const attn::Tensor sm = attn::capi::to_required_tensor(slot_mapping, "slot_mapping");
        b.update_block_table(*src->core, bt, sm, stream);
      },
      metadata);
}

ATTN_API attn_error_t* attn_update_draft_decode_metadata(attn_builder_t* builder,
                                                         attn_metadata_t* metadata,
                                                         attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(builder, "builder");
  attn::capi::require(metadata, "metadata");
  const attn_metadata_t* md = attn::capi::live(metadata, "metadata");
  attn::Builder::Use use(*builder->impl);
  builder->impl->update_draft_decode_metadata(*md->core, stream);
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
