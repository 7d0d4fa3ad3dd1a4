// Per-step builds.
#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/handles.h"

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

}  // namespace

extern "C" {

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
