// Batch utilities that return host scalars and lists, or write tensors that are not a batch.
#include <algorithm>
#include <cstring>
#include <vector>

#include "attn_c.h"
#include "capi/api_guard.h"
#include "capi/convert.h"
#include "core/batch_split.h"
#include "core/host_lists.h"
#include "core/tensor_utilities.h"

namespace {

void write_split(attn_batch_split_t* out, const attn::ops::BatchSplit& s) {
  attn_batch_split_t v = ATTN_BATCH_SPLIT_INIT;
  v.num_decodes = s.num_decodes;
  v.num_extends = s.num_extends;
  v.num_prefills = s.num_prefills;
  v.num_decode_tokens = s.num_decode_tokens;
  v.num_extend_tokens = s.num_extend_tokens;
  v.num_prefill_tokens = s.num_prefill_tokens;
  attn::capi::write_struct(out, v, attn::capi::kBatchSplitSizeV1, "out");
}

void check_out_struct_size(size_t size, size_t min, const char* name) {
  if (size < min)
    attn::invalid(name, "->struct_size=", size, " is smaller than ", min,
                  ", the size of the first ABI version");
}

// Copies the swap pairs out (nothing is written when the capacity is too small).
void write_swaps(const std::vector<int32_t>& swaps, int32_t* out_swaps, int64_t swaps_capacity,
                 int64_t* out_num_swaps) {
  const auto n = static_cast<int64_t>(swaps.size() / 2);
  if (n > 0) attn::capi::require(out_swaps, "out_swaps");
  if (swaps_capacity < n)
    attn::invalid("swaps_capacity=", swaps_capacity, " is smaller than the ", n,
                  " swaps this batch needs (num_reqs pairs always suffice)");
  if (n > 0) std::memcpy(out_swaps, swaps.data(), swaps.size() * sizeof(int32_t));
  *out_num_swaps = n;
}

// vLLM's first branch of split_decodes_and_prefills: max_query_len <= threshold (and not
// require_uniform, or threshold <= 1, and short extends counted as decodes) returns
// (num_reqs, 0, num_tokens, 0) without reading a tensor. libattn answers it the same way, O(1)
// in every validation mode: the struct and the scalars it reads are checked, the tensors are
// neither converted nor read (a build of the same batch checks them). Returns false, writing
// nothing, when the shortcut does not apply (or a scalar is bad: the full path names it).
bool split_shortcut(const attn_common_metadata_t* common, int32_t threshold,
                    bool require_uniform, bool short_as_decode, attn_batch_split_t* out) {
  if (common == nullptr || threshold < 0 || !short_as_decode) return false;
  const size_t size = common->struct_size;
  bool released = size >= sizeof(attn_common_metadata_t);
  for (size_t v : attn::capi::kCommonMetadataSizes) released = released || size == v;
  if (!released) return false;
  if (common->query_start_loc == nullptr || common->seq_lens == nullptr ||
      common->extension != nullptr)
    return false;
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;
  const int64_t n = common->num_reqs, tokens = common->num_actual_tokens;
  const int64_t max_q = common->max_query_len;
  if (n < 0 || n > kMax || tokens < 0 || tokens > kMax || max_q < 0 || common->max_seq_len < 0 ||
      common->max_seq_len > kMax)
    return false;
  if (!(max_q <= threshold && (!require_uniform || threshold <= 1))) return false;
  attn::ops::BatchSplit s;
  s.num_decodes = n;
  s.num_decode_tokens = tokens;
  if (out->struct_size == ATTN_BATCH_SPLIT_STRUCT_SIZE) {  // the common case: no copy through
    out->num_decodes = n;                                  // a temporary
    out->num_extends = 0;
    out->num_prefills = 0;
    out->num_decode_tokens = tokens;
    out->num_extend_tokens = 0;
    out->num_prefill_tokens = 0;
  } else {
    write_split(out, s);
  }
  return true;
}


/// `*out` = `src` viewed as `v` (the same data and byte offset; v's shape and strides written
/// into the caller's arrays, which the view points to).
void write_view(const attn_tensor_t& src, const attn::Tensor& v, attn_tensor_t* out,
                int64_t* out_shape, int64_t* out_strides) {
  for (int d = 0; d < v.ndim; ++d) {
    out_shape[d] = v.shape[d];
    out_strides[d] = v.strides[d];
  }
  attn_tensor_t r = src;
  r.ndim = v.ndim;
  r.shape = out_shape;
  r.strides = out_strides;
  *out = r;
}
}  // namespace

extern "C" {

ATTN_API attn_error_t* attn_split_decodes_and_prefills(const attn_common_metadata_t* common,
                                                       int32_t decode_threshold,
                                                       int32_t require_uniform,
                                                       attn_batch_split_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  check_out_struct_size(out->struct_size, attn::capi::kBatchSplitSizeV1, "out");
  if (split_shortcut(common, decode_threshold, require_uniform != 0, true, out)) return nullptr;
  attn::CommonMetadata c = attn::capi::to_common(common);
  attn::SplitRequest r;
  r.decode_threshold = decode_threshold;
  r.require_uniform = require_uniform != 0;
  write_split(out, attn::split_decodes_and_prefills(c, r));
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_split_decodes_and_prefills_ex(const attn_common_metadata_t* common,
                                                          const attn_split_options_t* options,
                                                          attn_batch_split_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  check_out_struct_size(out->struct_size, attn::capi::kBatchSplitSizeV1, "out");
  const attn_split_options_t defaults = ATTN_SPLIT_OPTIONS_INIT;
  const attn_split_options_t o =
      options == nullptr
          ? defaults
          : attn::capi::read_struct(options, defaults, attn::capi::kSplitOptionsSizeV1, "options");
  if (o.reserved != 0) attn::invalid("options->reserved=", o.reserved, " must be 0");
  if (split_shortcut(common, o.decode_threshold, o.require_uniform != 0,
                     o.treat_short_extends_as_decodes != 0, out))
    return nullptr;
  attn::CommonMetadata c = attn::capi::to_common(common);
  attn::SplitRequest r;
  r.decode_threshold = o.decode_threshold;
  r.require_uniform = o.require_uniform != 0;
  r.treat_short_extends_as_decodes = o.treat_short_extends_as_decodes != 0;
  write_split(out, attn::split_decodes_and_prefills(c, r));
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_split_decodes_prefills_and_extends(const attn_common_metadata_t* common,
                                                               int32_t decode_threshold,
                                                               attn_batch_split_t* out) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  check_out_struct_size(out->struct_size, attn::capi::kBatchSplitSizeV1, "out");
  attn::CommonMetadata c = attn::capi::to_common(common);
  write_split(out, attn::split_decodes_prefills_and_extends(c, decode_threshold));
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_reorder_batch_to_split_decodes_and_prefills(
    const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens, int64_t num_reqs,
    int32_t decode_threshold, int32_t* out_swaps, int64_t swaps_capacity,
    int64_t* out_num_swaps) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_swaps, "out_num_swaps");
  write_swaps(attn::reorder_batch_swaps(num_scheduled_tokens, num_computed_tokens, nullptr,
                                        num_reqs, decode_threshold),
              out_swaps, swaps_capacity, out_num_swaps);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_reorder_batch_to_split_decodes_and_prefills_v2(
    const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens,
    const int32_t* num_prompt_tokens, int64_t num_reqs, int32_t decode_threshold,
    int32_t* out_swaps, int64_t swaps_capacity, int64_t* out_num_swaps) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_swaps, "out_num_swaps");
  if (num_reqs > 0 && num_prompt_tokens == nullptr)
    attn::invalid("num_prompt_tokens is NULL but num_reqs=", num_reqs);
  write_swaps(attn::reorder_batch_swaps(num_scheduled_tokens, num_computed_tokens,
                                        num_prompt_tokens, num_reqs, decode_threshold),
              out_swaps, swaps_capacity, out_num_swaps);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_split_prefill_chunks(const int32_t* seq_lens, int64_t num_seqs,
                                                 int64_t workspace_size, int64_t request_offset,
                                                 int64_t* out_bounds, int64_t bounds_capacity,
                                                 int64_t* out_num_chunks) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_chunks, "out_num_chunks");
  const std::vector<int64_t> bounds =
      attn::split_prefill_chunks(seq_lens, num_seqs, workspace_size, request_offset);
  const auto n = static_cast<int64_t>(bounds.size() / 2);
  if (n > 0) attn::capi::require(out_bounds, "out_bounds");
  if (bounds_capacity < n)
    attn::invalid("bounds_capacity=", bounds_capacity, " is smaller than the ", n,
                  " chunks (num_seqs pairs always suffice)");
  if (n > 0) std::memcpy(out_bounds, bounds.data(), bounds.size() * sizeof(int64_t));
  *out_num_chunks = n;
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_compute_mm_prefix_range_tensor(const attn_tensor_t* mm_req_doc_ranges,
                                                           int64_t num_seqs,
                                                           const attn_tensor_t* out,
                                                           int64_t* out_max_ranges) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_max_ranges, "out_max_ranges");
  *out_max_ranges = attn::compute_mm_prefix_range_tensor(
      attn::capi::to_tensor(mm_req_doc_ranges, "mm_req_doc_ranges"), num_seqs,
      attn::capi::to_tensor(out, "out"));
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_fill_mm_prefix_query_ranges(const attn_tensor_t* out,
                                                        const attn_tensor_t* mm_req_doc_ranges,
                                                        const attn_tensor_t* query_start_loc_cpu,
                                                        const attn_tensor_t* seq_lens_cpu,
                                                        int64_t* out_num_rows) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_rows, "out_num_rows");
  *out_num_rows = attn::fill_mm_prefix_query_ranges(
      attn::capi::to_required_tensor(out, "out"),
      attn::capi::to_tensor(mm_req_doc_ranges, "mm_req_doc_ranges"),
      attn::capi::to_required_tensor(query_start_loc_cpu, "query_start_loc_cpu"),
      attn::capi::to_required_tensor(seq_lens_cpu, "seq_lens_cpu"));
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_get_dcp_local_seq_lens(const attn_tensor_t* seq_lens, int32_t dcp_size,
                                                   int32_t dcp_rank,
                                                   int32_t cp_kv_cache_interleave_size,
                                                   const attn_tensor_t* out,
                                                   attn_stream_t stream) noexcept {
  ATTN_API_TRY
  const attn::Tensor s = attn::capi::to_required_tensor(seq_lens, "seq_lens");
  const attn::Tensor o = attn::capi::to_required_tensor(out, "out");
  attn::get_dcp_local_seq_lens(s, dcp_size, dcp_rank, cp_kv_cache_interleave_size, o, stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_compute_token_to_req_indices(const attn_tensor_t* query_start_loc,
                                                         const attn_tensor_t* out,
                                                         int64_t num_mapped_tokens,
                                                         int64_t num_tokens,
                                                         attn_stream_t stream) noexcept {
  ATTN_API_TRY
  const attn::Tensor q = attn::capi::to_required_tensor(query_start_loc, "query_start_loc");
  const attn::Tensor o = attn::capi::to_required_tensor(out, "out");
  attn::compute_token_to_req_indices(q, o, num_mapped_tokens, num_tokens, stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_reshape_query_for_spec_decode(const attn_tensor_t* query,
                                                          int64_t batch_size, attn_tensor_t* out,
                                                          int64_t* out_shape,
                                                          int64_t* out_strides) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::capi::require(out_shape, "out_shape");
  attn::capi::require(out_strides, "out_strides");
  const attn::Tensor q = attn::capi::to_required_tensor(query, "query");
  write_view(*query, attn::reshape_query_for_spec_decode(q, batch_size), out, out_shape,
             out_strides);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_reshape_attn_output_for_spec_decode(const attn_tensor_t* attn_output,
                                                                attn_tensor_t* out,
                                                                int64_t* out_shape,
                                                                int64_t* out_strides) noexcept {
  ATTN_API_TRY
  attn::capi::require(out, "out");
  attn::capi::require(out_shape, "out_shape");
  attn::capi::require(out_strides, "out_strides");
  attn::Tensor t = attn::capi::to_required_tensor(attn_output, "attn_output");
  // A view without elements: the conversion stores compact strides (any are accepted), but
  // torch's view of it keeps the caller's strides or derives new ones from the sizes, so the
  // caller's strides are used (NULL: torch's contiguous ones, each size counted as at least 1).
  bool empty = false;  // (a zero size, found without multiplying the sizes: they may overflow)
  for (int d = 0; d < t.ndim; ++d) empty = empty || t.shape[d] == 0;
  if (empty) {
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (attn_output->strides == nullptr) {
        t.strides[d] = 1;
        if (d + 1 < t.ndim && __builtin_mul_overflow(t.strides[d + 1],
                                                     std::max<int64_t>(t.shape[d + 1], 1),
                                                     &t.strides[d]))
          attn::invalid("attn_output has shape[", d + 1, "]=", t.shape[d + 1],
                        ": its contiguous strides overflow int64");
      } else if (attn_output->strides[d] < 0) {
        attn::invalid("attn_output has strides[", d, "]=", attn_output->strides[d],
                      "; negative strides are not supported");
      } else {
        t.strides[d] = attn_output->strides[d];
      }
    }
  }
  write_view(*attn_output, attn::reshape_attn_output_for_spec_decode(t), out, out_shape,
             out_strides);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_common_metadata_naive_query_lens(const attn_common_metadata_t* common,
                                                             const attn_tensor_t* out,
                                                             attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::CommonMetadata c = attn::capi::to_common(common);
  const attn::Tensor o = attn::capi::to_required_tensor(out, "out");
  attn::naive_query_lens(c, o, stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_compute_slot_mapping(const attn_slot_mapping_args_t* args,
                                                 attn_stream_t stream) noexcept {
  ATTN_API_TRY
  const attn_slot_mapping_args_t defaults = ATTN_SLOT_MAPPING_ARGS_INIT;
  const attn_slot_mapping_args_t a =
      attn::capi::read_struct(args, defaults, attn::capi::kSlotMappingArgsSizeV1, "args");
  if (a.extension != nullptr) attn::invalid("args->extension must be NULL");
  attn::SlotMappingArgs s;
  s.query_start_loc = attn::capi::to_required_tensor(a.query_start_loc, "args->query_start_loc");
  s.query_start_loc_cpu = attn::capi::to_tensor(a.query_start_loc_cpu, "args->query_start_loc_cpu");
  s.num_reqs = a.num_reqs;
  s.positions = attn::capi::to_required_tensor(a.positions, "args->positions");
  s.positions_cpu = attn::capi::to_tensor(a.positions_cpu, "args->positions_cpu");
  s.block_table = attn::capi::to_required_tensor(a.block_table, "args->block_table");
  s.block_size = a.block_size;
  s.dcp_world_size = a.dcp_world_size;
  s.dcp_rank = a.dcp_rank;
  s.interleave = a.cp_kv_cache_interleave_size;
  s.slot_mapping = attn::capi::to_required_tensor(a.slot_mapping, "args->slot_mapping");
  attn::compute_slot_mapping(s, stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_compute_flashinfer_kv_metadata(
    const attn_tensor_t* seq_lens, const attn_tensor_t* seq_lens_cpu,
    const attn_tensor_t* block_table, int32_t page_size, const attn_tensor_t* out_indptr,
    const attn_tensor_t* out_indices, const attn_tensor_t* out_last_page_len,
    int64_t* out_num_pages, attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(out_num_pages, "out_num_pages");
  attn::PagedKv p;
  p.seq_lens = attn::capi::to_required_tensor(seq_lens, "seq_lens");
  p.seq_lens_cpu = attn::capi::to_tensor(seq_lens_cpu, "seq_lens_cpu");
  p.block_table = attn::capi::to_required_tensor(block_table, "block_table");
  p.page_size = page_size;
  p.indptr = attn::capi::to_required_tensor(out_indptr, "out_indptr");
  p.indices = attn::capi::to_required_tensor(out_indices, "out_indices");
  p.last_page_len = attn::capi::to_required_tensor(out_last_page_len, "out_last_page_len");
  *out_num_pages = attn::compute_flashinfer_kv_metadata(p, stream);
  return nullptr;
  ATTN_API_CATCH
}

ATTN_API attn_error_t* attn_compute_causal_conv1d_metadata(
    const attn_tensor_t* query_start_loc_p_cpu, const attn_tensor_t* query_start_loc_p,
    const attn_tensor_t* out_batch_ptr, const attn_tensor_t* out_token_chunk_offset_ptr,
    const attn_tensor_t* out_nums, attn_conv1d_info_t* info, attn_stream_t stream) noexcept {
  ATTN_API_TRY
  attn::capi::require(info, "info");
  check_out_struct_size(info->struct_size, attn::capi::kConv1dInfoSizeV1, "info");
  const attn::Conv1dInfo r = attn::compute_causal_conv1d_metadata(
      attn::capi::to_required_tensor(query_start_loc_p_cpu, "query_start_loc_p_cpu"),
      attn::capi::to_required_tensor(query_start_loc_p, "query_start_loc_p"),
      attn::capi::to_required_tensor(out_batch_ptr, "out_batch_ptr"),
      attn::capi::to_required_tensor(out_token_chunk_offset_ptr, "out_token_chunk_offset_ptr"),
      attn::capi::to_tensor(out_nums, "out_nums"), stream);
  attn_conv1d_info_t v = ATTN_CONV1D_INFO_INIT;
  v.tot = r.tot;
  v.num_programs = r.num_programs;
  attn::capi::write_struct(info, v, attn::capi::kConv1dInfoSizeV1, "info");
  return nullptr;
  ATTN_API_CATCH
}

}  // extern "C"
