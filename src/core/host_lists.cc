#include "core/host_lists.h"

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/tensor_args.h"
#include "ops/batch_ops.h"

namespace attn {
namespace {
void check_array(const int32_t* a, int64_t n, const char* name, const char* count_name) {
  if (n < 0) invalid(count_name, "=", n, " is negative");
  if (n > (int64_t{1} << 31) - 1) invalid(count_name, "=", n, " exceeds 2^31-1");
  if (n > 0 && a == nullptr) invalid(name, " is NULL but ", count_name, "=", n);
  for (int64_t i = 0; i < n; ++i)
    if (a[i] < 0) invalid(name, "[", i, "]=", a[i], " is negative");
}
// The (num_ranges, 3) int32 host rows of mm_req_doc_ranges; requests in [0, num_reqs) (when
// num_reqs >= 0) and non-decreasing.
void check_doc_ranges(const Tensor& t, int64_t num_reqs) {
  const char* name = "mm_req_doc_ranges";
  expect_dtype(t, name, kInt32);
  if (t.ndim != 2 || t.shape[1] != 3)
    invalid(name, " must be a (num_ranges, 3) tensor of (request, start, end) rows, got ndim=",
            t.ndim, t.ndim == 2 ? " with " + std::to_string(t.shape[1]) + " columns" : "");
  if (!t.is_compact()) invalid(name, " must be compact (row stride 3, column stride 1)");
  if (t.data == nullptr && t.numel() > 0) invalid(name, " has data=NULL and ", t.numel(), " elements");
  if (!t.host_accessible()) invalid(name, " is on ", t.device.to_string(), "; it must be in host memory");
  const int32_t* rows = t.as<const int32_t>();
  for (int64_t k = 0; k < t.shape[0]; ++k) {
    const int32_t r = rows[3 * k];
    if (r < 0 || (num_reqs >= 0 && r >= num_reqs))
      invalid(name, "[", k, "] names request ", r, ", outside the batch's ", num_reqs, " requests");
    if (k > 0 && r < rows[3 * (k - 1)])
      invalid(name, "[", k, "] names request ", r, " after request ", rows[3 * (k - 1)],
              " (rows must be grouped by request, in order)");
  }
}
}  // namespace

std::vector<int32_t> reorder_batch_swaps(const int32_t* num_scheduled_tokens,
                                         const int32_t* num_computed_tokens,
                                         const int32_t* num_prompt_tokens, int64_t num_reqs,
                                         int32_t decode_threshold) {
  check_array(num_scheduled_tokens, num_reqs, "num_scheduled_tokens", "num_reqs");
  check_array(num_computed_tokens, num_reqs, "num_computed_tokens", "num_reqs");
  if (num_prompt_tokens != nullptr)
    check_array(num_prompt_tokens, num_reqs, "num_prompt_tokens", "num_reqs");
  if (decode_threshold < 0) invalid("decode_threshold=", decode_threshold, " is negative");
  std::vector<int32_t> swaps(static_cast<size_t>(2 * num_reqs));
  const int64_t n = ops::reorder_batch_swaps(num_scheduled_tokens, num_computed_tokens,
                                             num_prompt_tokens, num_reqs, decode_threshold,
                                             swaps.data());
  swaps.resize(static_cast<size_t>(2 * n));
  return swaps;
}

std::vector<int64_t> split_prefill_chunks(const int32_t* seq_lens, int64_t num_seqs,
                                          int64_t workspace_size, int64_t request_offset) {
  check_array(seq_lens, num_seqs, "seq_lens", "num_seqs");
  if (workspace_size < 0) invalid("workspace_size=", workspace_size, " is negative");
  if (request_offset < 0) invalid("request_offset=", request_offset, " is negative");
  if (request_offset > INT64_MAX - num_seqs)  // chunk bounds are request_offset + [0, num_seqs]
    invalid("request_offset=", request_offset, " + num_seqs=", num_seqs, " overflows int64");
  std::vector<int64_t> bounds(static_cast<size_t>(2 * num_seqs));
  const int64_t n = ops::split_prefill_chunks(seq_lens, num_seqs, workspace_size, request_offset,
                                              bounds.data());
  bounds.resize(static_cast<size_t>(2 * n));
  return bounds;
}

int64_t compute_mm_prefix_range_tensor(const std::optional<Tensor>& doc_ranges, int64_t num_seqs,
                                       const std::optional<Tensor>& out) {
  if (num_seqs < 0) invalid("num_seqs=", num_seqs, " is negative");
  if (num_seqs > (int64_t{1} << 31) - 1) invalid("num_seqs=", num_seqs, " exceeds 2^31-1");
  if (!doc_ranges) return 0;  // None
  check_doc_ranges(*doc_ranges, -1);  // requests past num_seqs are not read (dict.get)
  const int32_t* rows = doc_ranges->as<const int32_t>();
  const int64_t n = doc_ranges->shape[0];
  const int64_t max_ranges = ops::mm_prefix_max_ranges(rows, n, num_seqs);
  if (!out || max_ranges == 0) return max_ranges;
  const Tensor& o = *out;
  expect_dtype(o, "out", kInt32);
  if (o.ndim != 3 || o.shape[0] != num_seqs || o.shape[1] != max_ranges || o.shape[2] != 2 ||
      !o.is_compact())
    invalid("out must be a compact (", num_seqs, ", ", max_ranges, ", 2) int32 tensor, got ndim=",
            o.ndim);
  if (o.data == nullptr) invalid("out has data=NULL");
  if (!o.host_accessible()) invalid("out is on ", o.device.to_string(), "; it must be in host memory");
  ops::mm_prefix_range_tensor(rows, n, num_seqs, max_ranges, o.as<int32_t>());
  return max_ranges;
}

int64_t fill_mm_prefix_query_ranges(const Tensor& out, const std::optional<Tensor>& doc_ranges,
                                    const Tensor& qsl, const Tensor& seq_lens) {
  if (qsl.ndim != 1 || qsl.shape[0] < 1)
    invalid("query_start_loc_cpu must be a (num_reqs + 1,) tensor, got ndim=", qsl.ndim);
  const int64_t num_reqs = qsl.shape[0] - 1;
  expect_host_vector(qsl, "query_start_loc_cpu", kInt32, num_reqs + 1);
  expect_host_vector(seq_lens, "seq_lens_cpu", kInt32, num_reqs, true);
  expect_dtype(out, "out", kInt32);
  if (out.ndim != 2 || out.shape[1] != 2 || !out.is_compact())
    invalid("out must be a compact (max_tokens, 2) int32 tensor, got ndim=", out.ndim);
  if (!out.host_accessible()) invalid("out is on ", out.device.to_string(), "; it must be in host memory");
  if (!doc_ranges) return 0;  // None
  check_doc_ranges(*doc_ranges, num_reqs);
  const int32_t* q = qsl.as<const int32_t>();
  for (int64_t r = 0; r <= num_reqs; ++r) {
    if (q[r] < 0) invalid("query_start_loc_cpu[", r, "]=", q[r], " is negative");
    if (r > 0 && q[r] < q[r - 1])
      invalid("query_start_loc_cpu[", r, "]=", q[r], " is less than query_start_loc_cpu[", r - 1,
              "]=", q[r - 1]);
  }
  const int64_t tokens = q[num_reqs];
  if (tokens <= 0) return 0;
  if (tokens > out.shape[0])  // vLLM's assertion
    invalid("mm_prefix staging buffer holds ", out.shape[0], " tokens, got ", tokens);
  if (out.data == nullptr) invalid("out has data=NULL");
  return ops::fill_mm_prefix_query_ranges(doc_ranges->as<const int32_t>(), doc_ranges->shape[0], q,
                                          seq_lens.as<const int32_t>(), num_reqs,
                                          out.as<int32_t>());
}

}  // namespace attn
