#include "core/host_lists.h"

#include <cstdint>

#include "core/error.h"
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

}  // namespace attn
