// Batch utilities that produce a new batch: fast prefill, local attention virtual batches,
// micro-batch slices.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "capi/owned_metadata.h"
#include "core/batch_transforms.h"

namespace {

attn::UbatchSlice to_slice(const attn_ubatch_slice_t* s, const char* name) {
  const attn_ubatch_slice_t defaults = ATTN_UBATCH_SLICE_INIT;
  const attn_ubatch_slice_t v = attn::capi::read_struct(s, defaults, attn::capi::kUbatchSliceSizeV1, name);
  attn::UbatchSlice r;
  r.request_start = v.request_start;
  r.request_stop = v.request_stop;
  r.token_start = v.token_start;
  r.token_stop = v.token_stop;
  return r;
}

attn::SliceOutputs to_slice_outputs(const attn_ubatch_out_t* o, const char* name) {
  const attn_ubatch_out_t defaults = ATTN_UBATCH_OUT_INIT;
  const attn_ubatch_out_t v = attn::capi::read_struct(o, defaults, attn::capi::kUbatchOutSizeV1, name);
  if (v.extension != nullptr) attn::invalid(name, "->extension must be NULL");
  attn::SliceOutputs r;
  r.query_start_loc = attn::capi::to_required_tensor(v.query_start_loc, "out->query_start_loc");
  r.query_start_loc_cpu = attn::capi::to_required_tensor(v.query_start_loc_cpu, "out->query_start_loc_cpu");
  r.seq_lens = attn::capi::to_required_tensor(v.seq_lens, "out->seq_lens");
  r.seq_lens_cpu = attn::capi::to_tensor(v.seq_lens_cpu, "out->seq_lens_cpu");
  return r;
}

// Owns metadata until it is handed to the caller (split_attn_metadata is all or nothing).
struct MetadataList {
  std::vector<attn_metadata_t*> items;
  ~MetadataList() {
    for (attn_metadata_t* m : items) attn_metadata_destroy(m);
  }
};

// Writes the slices to the caller's arrays, after checking every destination.
void write_ubatch_slices(const std::vector<attn::UbatchSlice>& slices,
                         const std::vector<attn::UbatchSlice>& padded,
                         attn_ubatch_slice_t* out_slices, attn_ubatch_slice_t* out_padded_slices) {
  for (size_t i = 0; i < slices.size(); ++i) {  // check every destination before writing any
    attn::capi::array_element(out_slices, i, attn::capi::kUbatchSliceSizeV1, "out_slices");
    attn::capi::array_element(out_padded_slices, i, attn::capi::kUbatchSliceSizeV1, "out_padded_slices");
  }
  auto write = [](attn_ubatch_slice_t* dst, const attn::UbatchSlice& s) {
    attn_ubatch_slice_t v = ATTN_UBATCH_SLICE_INIT;
    v.request_start = s.request_start;
    v.request_stop = s.request_stop;
    v.token_start = s.token_start;
    v.token_stop = s.token_stop;
    attn::capi::write_struct(dst, v, attn::capi::kUbatchSliceSizeV1, "out_slices[i]");
  };
  for (size_t i = 0; i < slices.size(); ++i) {
    write(attn::capi::array_element(out_slices, i, attn::capi::kUbatchSliceSizeV1, "out_slices"), slices[i]);
    write(attn::capi::array_element(out_padded_slices, i, attn::capi::kUbatchSliceSizeV1, "out_padded_slices"),
          padded[i]);
  }
}

}  // namespace

extern "C" {

ATTN_API attn_error_t* attn_make_kv_sharing_fast_prefill_common_attn_metadata(
    const attn_common_metadata_t* common, const attn_tensor_t* logits_indices_cpu,
    const attn_tensor_t* out_query_start_loc, const attn_tensor_t* out_query_start_loc_cpu,
    attn_metadata_t** out, attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::CommonMetadata c = attn::capi::to_common(common);
  attn::FastPrefillOutputs o;
  o.query_start_loc = attn::capi::to_required_tensor(out_query_start_loc, "out_query_start_loc");
  o.query_start_loc_cpu =
      attn::capi::to_required_tensor(out_query_start_loc_cpu, "out_query_start_loc_cpu");
  bool passthrough = false;
  const attn::CommonMetadata r = attn::make_kv_sharing_fast_prefill(
      c, attn::capi::to_tensor(logits_indices_cpu, "logits_indices_cpu"), o, stream, &passthrough);
  *out = attn::capi::own_common(r);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
    const attn_common_metadata_t* common, const attn_tensor_t* logits_indices_cpu,
    const attn_tensor_t* out_query_start_loc, const attn_tensor_t* out_query_start_loc_cpu,
    attn_common_metadata_t* out_batch, attn_metadata_t** out_owned, attn_stream_t stream) noexcept {
  ATTN_API_TRY
  using T = attn_common_metadata_t;
  using attn::capi::kCommonMetadataSizes;
  attn::capi::require(common, "common");
  attn::capi::require(out_batch, "out_batch");
  attn::capi::require(out_owned, "out_owned");
  attn::capi::require(out_query_start_loc, "out_query_start_loc");
  attn::capi::require(out_query_start_loc_cpu, "out_query_start_loc_cpu");
  const size_t in_size = common->struct_size, out_size = out_batch->struct_size;
  if (in_size != sizeof(T))
    attn::capi::check_struct_size<T>(in_size, kCommonMetadataSizes, "common");
  if (out_size != sizeof(T))
    attn::capi::check_struct_size<T>(out_size, kCommonMetadataSizes, "out_batch");
  const size_t copied = std::min(in_size, sizeof(T));
  if (out_size < copied)
    attn::invalid("out_batch->struct_size=", out_size,
                  " is smaller than common->struct_size=", in_size,
                  ": the batch would lose the fields past it");
  if (attn::fast_prefill_passes_through(common->max_query_len,
                                        common->logits_indices_padded != nullptr)) {
    // vLLM returns its argument: the batch as it is, nothing allocated, no descriptor read
    // (the build that takes out_batch checks the batch, as every build does). The fields read
    // here are ABI 1.0's but the mirror of the logits indices (1.1).
    if (common->extension != nullptr) attn::invalid("common->extension must be NULL");
    attn::CommonScalars sc;
    sc.num_reqs = common->num_reqs;
    sc.num_actual_tokens = common->num_actual_tokens;
    sc.max_query_len = common->max_query_len;
    sc.max_seq_len = common->max_seq_len;
    sc.num_logits_indices = common->num_logits_indices;
    sc.has_query_start_loc = common->query_start_loc != nullptr;
    sc.has_seq_lens = common->seq_lens != nullptr;
    sc.has_block_table = common->block_table_tensor != nullptr;
    sc.has_slot_mapping = common->slot_mapping != nullptr;
    sc.has_logits_indices = common->logits_indices_padded != nullptr;  // decodes may have them
    sc.has_logits_indices_cpu = in_size >= ATTN_COMMON_METADATA_STRUCT_SIZE_1_1 &&
                                common->logits_indices_padded_cpu != nullptr;
    attn::validate_scalars(sc, attn::CommonLimits{});
    // out_batch = *common: its bytes up to its struct_size, the *_INIT defaults after them (an
    // older caller's batch), out_batch->struct_size kept.
    if (out_batch != common && copied == sizeof(T))
      *out_batch = *common;  // this header's size: a fixed-size copy
    else if (out_batch != common)
      std::memcpy(static_cast<void*>(out_batch), common, copied);
    if (out_size > copied) {
      static const T defaults = ATTN_COMMON_METADATA_INIT;
      std::memcpy(reinterpret_cast<char*>(out_batch) + copied,
                  reinterpret_cast<const char*>(&defaults) + copied,
                  std::min(out_size, sizeof(T)) - copied);
    }
    out_batch->struct_size = out_size;
    *out_owned = nullptr;
    return nullptr;
  }
  // A new batch: as the ABI 1.0 function, then its view into out_batch.
  attn_metadata_t* made = nullptr;
  if (attn_error_t* err = attn_make_kv_sharing_fast_prefill_common_attn_metadata(
          common, logits_indices_cpu, out_query_start_loc, out_query_start_loc_cpu, &made, stream))
    return err;
  std::unique_ptr<attn_metadata_t, void (*)(attn_metadata_t*)> guard(made, attn_metadata_destroy);
  attn::capi::write_common(made, out_batch, "out_batch");
  *out_owned = guard.release();
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_local_attention_num_virtual_batches(int32_t attn_chunk_size,
                                                                const attn_common_metadata_t* common,
                                                                int64_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::CommonMetadata c = attn::capi::to_common(common);
  *out = attn::local_attention_num_virtual_batches(attn_chunk_size, c);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_make_local_attention_virtual_batches(
    int32_t attn_chunk_size, const attn_common_metadata_t* common, int32_t block_size,
    const attn_local_attention_out_t* outputs, attn_metadata_t** out,
    attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::CommonMetadata c = attn::capi::to_common(common);
  const attn_local_attention_out_t defaults = ATTN_LOCAL_ATTENTION_OUT_INIT;
  const attn_local_attention_out_t v =
      attn::capi::read_struct(outputs, defaults, attn::capi::kLocalAttentionOutSizeV1, "out");
  if (v.extension != nullptr) attn::invalid("out->extension must be NULL");
  using attn::capi::to_required_tensor;
  attn::LocalAttentionOutputs o;
  o.query_start_loc = to_required_tensor(v.query_start_loc, "out->query_start_loc");
  o.query_start_loc_cpu = to_required_tensor(v.query_start_loc_cpu, "out->query_start_loc_cpu");
  o.seq_lens = to_required_tensor(v.seq_lens, "out->seq_lens");
  o.seq_lens_cpu = to_required_tensor(v.seq_lens_cpu, "out->seq_lens_cpu");
  o.num_computed_tokens_cpu = attn::capi::to_tensor(v.num_computed_tokens_cpu, "out->num_computed_tokens_cpu");
  o.block_table = to_required_tensor(v.block_table, "out->block_table");
  o.virtual_req = to_required_tensor(v.virtual_req, "out->virtual_req");
  o.virtual_block_start = to_required_tensor(v.virtual_block_start, "out->virtual_block_start");
  const attn::CommonMetadata r =
      attn::make_local_attention_virtual_batches(attn_chunk_size, c, block_size, o, stream);
  *out = attn::capi::own_common(r);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_remap_local_block_table(const attn_tensor_t* block_table,
                                                    const attn_tensor_t* virtual_req,
                                                    const attn_tensor_t* virtual_block_start,
                                                    int64_t num_virtual_batches,
                                                    const attn_tensor_t* out,
                                                    attn_stream_t stream) noexcept {
  ATTN_API_TRY
  using attn::capi::to_required_tensor;
  attn::remap_local_block_table(to_required_tensor(block_table, "block_table"),
                                to_required_tensor(virtual_req, "virtual_req"),
                                to_required_tensor(virtual_block_start, "virtual_block_start"),
                                num_virtual_batches, to_required_tensor(out, "out"), stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_slice_query_start_locs(const attn_tensor_t* query_start_loc,
                                                   int64_t request_start, int64_t request_stop,
                                                   const attn_tensor_t* out,
                                                   attn_stream_t stream) noexcept {
  ATTN_API_TRY
  const attn::Tensor q = attn::capi::to_required_tensor(query_start_loc, "query_start_loc");
  const attn::Tensor o = attn::capi::to_required_tensor(out, "out");
  attn::slice_query_start_locs(q, request_start, request_stop, o, stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_maybe_create_ubatch_slices(const int32_t* num_scheduled_tokens,
                                                       int64_t num_reqs, int64_t num_tokens_padded,
                                                       int64_t num_reqs_padded, int32_t num_ubatches,
                                                       int64_t split_point,
                                                       attn_ubatch_slice_t* out_slices,
                                                       attn_ubatch_slice_t* out_padded_slices) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_slices, "out_slices");
  attn::capi::require(out_padded_slices, "out_padded_slices");
  std::vector<attn::UbatchSlice> slices, padded;
  attn::create_ubatch_slices(num_scheduled_tokens, num_reqs, num_tokens_padded, num_reqs_padded,
                             num_ubatches, split_point, nullptr, 0, &slices, &padded);
  write_ubatch_slices(slices, padded, out_slices, out_padded_slices);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_maybe_create_ubatch_slices_ex(
    const int32_t* num_scheduled_tokens, int64_t num_reqs, int64_t num_tokens_padded,
    int64_t num_reqs_padded, int32_t num_ubatches, const int64_t* split_points,
    int64_t num_split_points, attn_ubatch_slice_t* out_slices,
    attn_ubatch_slice_t* out_padded_slices) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_slices, "out_slices");
  attn::capi::require(out_padded_slices, "out_padded_slices");
  if (split_points == nullptr && num_split_points != 0)
    attn::invalid("split_points is NULL but num_split_points=", num_split_points);
  std::vector<attn::UbatchSlice> slices, padded;
  attn::create_ubatch_slices(num_scheduled_tokens, num_reqs, num_tokens_padded, num_reqs_padded,
                             num_ubatches, 0, split_points, num_split_points, &slices, &padded);
  write_ubatch_slices(slices, padded, out_slices, out_padded_slices);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_make_metadata_with_slice(const attn_common_metadata_t* common,
                                                     const attn_ubatch_slice_t* slice,
                                                     const attn_ubatch_out_t* outputs,
                                                     attn_metadata_t** out,
                                                     attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::CommonMetadata c = attn::capi::to_common(common);
  const attn::CommonMetadata r = attn::make_metadata_with_slice(
      to_slice(slice, "slice"), c, to_slice_outputs(outputs, "out"), stream);
  *out = attn::capi::own_common(r);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_split_attn_metadata(const attn_common_metadata_t* common,
                                                const attn_ubatch_slice_t* slices,
                                                size_t num_slices,
                                                const attn_ubatch_out_t* outputs,
                                                attn_metadata_t** out,
                                                attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  if (num_slices > 0) {
    attn::capi::require(slices, "slices");
    attn::capi::require(outputs, "outputs");
  }
  MetadataList made;
  for (size_t i = 0; i < num_slices; ++i) {
    try {
      attn::CommonMetadata c = attn::capi::to_common(common);
      const auto* s = attn::capi::array_element(slices, i, attn::capi::kUbatchSliceSizeV1, "slices");
      const auto* o = attn::capi::array_element(outputs, i, attn::capi::kUbatchOutSizeV1, "outputs");
      const attn::CommonMetadata r =
          attn::make_metadata_with_slice(to_slice(s, "slices[i]"), c, to_slice_outputs(o, "outputs[i]"), stream);
      made.items.push_back(attn::capi::own_common(r));
    } catch (const attn::Error& e) {
      throw attn::Error(e.status(), attn::cat("slices[", i, "]: ", e.message()));
    }
  }
  for (size_t i = 0; i < num_slices; ++i) out[i] = made.items[i];
  made.items.clear();
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
