// vLLM 0.33's multimodal PrefixLM range helpers (v1/attention/backends/utils.py):
// compute_mm_prefix_range_tensor and fill_mm_prefix_query_ranges, host-only (vLLM builds both
// on the CPU from the mm_req_doc_ranges dict and the *_cpu mirrors). The dict arrives as rows
// (request, start, end), requests non-decreasing, each request's ranges in the dict's order.
#include <algorithm>
#include <vector>

#include "ops/batch_ops.h"

namespace attn::ops {

int64_t mm_prefix_max_ranges(const int32_t* rows, int64_t num_ranges, int64_t num_seqs) {
  // range_lists[i] = dict.get(i, [(0, 0)]) or [(0, 0)]; None when every list is [(0, 0)].
  // Rows are grouped by request, so a request's list is one run of rows (nothing sized by
  // num_seqs is allocated).
  bool all_empty = true;
  int64_t max_ranges = 1;
  for (int64_t k = 0; k < num_ranges;) {
    const int32_t r = rows[3 * k];
    int64_t end = k + 1;
    while (end < num_ranges && rows[3 * end] == r) ++end;
    if (r >= 0 && r < num_seqs) {
      const int64_t count = end - k;
      if (count > 1 || rows[3 * k + 1] != 0 || rows[3 * k + 2] != 0) all_empty = false;
      max_ranges = std::max(max_ranges, count);
    }
    k = end;
  }
  return all_empty ? 0 : max_ranges;
}

void mm_prefix_range_tensor(const int32_t* rows, int64_t num_ranges, int64_t num_seqs,
                            int64_t max_ranges, int32_t* out) {
  std::fill(out, out + num_seqs * max_ranges * 2, 0);
  for (int64_t k = 0, used = 0; k < num_ranges; ++k) {
    const int32_t r = rows[3 * k];
    used = k > 0 && rows[3 * (k - 1)] == r ? used + 1 : 0;  // index within the request's run
    if (r < 0 || r >= num_seqs || used >= max_ranges) continue;
    int32_t* dst = out + (r * max_ranges + used) * 2;
    dst[0] = rows[3 * k + 1];
    dst[1] = rows[3 * k + 2];
  }
}

int64_t fill_mm_prefix_query_ranges(const int32_t* rows, int64_t num_ranges, const int32_t* qsl,
                                    const int32_t* seq_lens, int64_t num_reqs, int32_t* out) {
  const int64_t num_actual_tokens = qsl[num_reqs];
  if (num_actual_tokens <= 0) return 0;
  struct Span {
    int64_t row_start, row_end;
    int32_t start, end;
  };
  std::vector<Span> spans;  // resolved before `out` is touched, as vLLM does
  for (int64_t k = 0; k < num_ranges; ++k) {
    const int64_t r = rows[3 * k];
    const int32_t start = rows[3 * k + 1], end = rows[3 * k + 2];
    const int64_t token_start = qsl[r];
    const int64_t query_len = static_cast<int64_t>(qsl[r + 1]) - token_start;
    if (query_len <= 0) continue;
    const int64_t context_len = static_cast<int64_t>(seq_lens[r]) - query_len;
    if (start >= end) continue;
    const int64_t first = std::max<int64_t>(start - context_len, 0);
    const int64_t last = std::min<int64_t>(end - context_len, query_len - 1);
    if (first > last) continue;
    spans.push_back({token_start + first, token_start + last + 1, start, end});
  }
  if (spans.empty()) return 0;
  std::fill(out, out + 2 * num_actual_tokens, -1);
  for (const Span& s : spans)
    for (int64_t t = s.row_start; t < s.row_end; ++t) {
      out[2 * t] = s.start;
      out[2 * t + 1] = s.end;
    }
  return num_actual_tokens;
}

}  // namespace attn::ops
