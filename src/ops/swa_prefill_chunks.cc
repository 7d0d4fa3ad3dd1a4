// Sliding-window MLA prefill gathers (src/ops/swa_prefill_chunks.h), written once
// (src/ops/launch.h): the plan on the host as vLLM makes it; the tensors on the host or the
// device, a row per chunk for the running sums and a lane per KV row for token_to_seq.
#include "ops/swa_prefill_chunks.h"

#include <algorithm>

#include "index_math.h"
#include "ops/error.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;
using kernels::upper_bound;

ATTN_HD_INLINE int64_t swa_kv_len(int64_t seq_len, int64_t query_len, int32_t window) {
  return imin<int64_t>(seq_len, query_len + window - 1);
}

template <class P>
void swa_chunk_tensors_on(P& p, SwaChunkTensorArgs a) {
  p.for_each(a.num_chunks, [=] ATTN_HD(int64_t c) {
    const int64_t r0 = a.req_start[c], r1 = a.req_end[c], base = r0 + c;
    a.cu_seq_lens_q[base] = 0;
    a.cu_seq_lens_k[base] = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t q = a.query_start_loc[r + 1] - a.query_start_loc[r];
      const int64_t kv = swa_kv_len(a.seq_lens[r], q, a.window);
      a.cu_seq_lens_q[base + r - r0 + 1] = a.cu_seq_lens_q[base + r - r0] + static_cast<int32_t>(q);
      a.cu_seq_lens_k[base + r - r0 + 1] =
          a.cu_seq_lens_k[base + r - r0] + static_cast<int32_t>(kv);
      a.starts[r] = static_cast<int32_t>(a.seq_lens[r] - kv);
    }
  });
  p.for_each(a.num_tokens, [=] ATTN_HD(int64_t t) {
    const int64_t c = upper_bound(a.token_end, a.num_chunks, t);
    const int64_t first = c == 0 ? 0 : a.token_end[c - 1];
    const int64_t n = a.req_end[c] - a.req_start[c];
    const int32_t* cu = a.cu_seq_lens_k + a.req_start[c] + c;
    const int64_t j = upper_bound(cu + 1, n, t - first);
    a.token_to_seq[t] = static_cast<int32_t>(imax<int64_t>(imin(j, n - 1), 0));
  });
}

}  // namespace

int64_t swa_prefill_chunk_plan(const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                               int32_t window, int64_t workspace, const SwaChunkLists& out) {
  for (int64_t r = 0; r < num_reqs; ++r) {
    const int64_t kv = swa_kv_len(seq_lens[r], qsl[r + 1] - qsl[r], window);
    if (kv > workspace)
      invalid("the sliding-window prefill of request ", r, " reads ", kv,
              " latent rows (min(seq_lens_cpu_upper_bound, query length + window - 1)), more "
              "than the MLA workspace's ", workspace, " (vLLM 0.33 raises ValueError)");
  }
  int64_t chunks = 0, tokens = 0;
  auto put = [&out, &chunks](int32_t* SwaChunkLists::*list, int64_t v) {
    if (out.*list != nullptr) (out.*list)[chunks] = static_cast<int32_t>(v);
  };
  for (int64_t start = 0, end = 0; start < num_reqs; start = end, ++chunks) {
    int64_t kv_tokens = 0, max_q = 0, max_k = 0;
    while (end < num_reqs) {
      const int64_t q = qsl[end + 1] - qsl[end];
      const int64_t kv = swa_kv_len(seq_lens[end], q, window);
      if (kv_tokens > 0 && kv_tokens + kv > workspace) break;
      kv_tokens += kv;
      max_q = std::max(max_q, q);
      max_k = std::max(max_k, kv);
      ++end;
    }
    tokens += kv_tokens;
    put(&SwaChunkLists::req_start, start);
    put(&SwaChunkLists::req_end, end);
    put(&SwaChunkLists::query_start, qsl[start] - qsl[0]);
    put(&SwaChunkLists::query_end, qsl[end] - qsl[0]);
    put(&SwaChunkLists::num_kv_tokens, kv_tokens);
    put(&SwaChunkLists::max_seq_len_q, max_q);
    put(&SwaChunkLists::max_seq_len_k, max_k);
    put(&SwaChunkLists::token_end, tokens);
  }
  return chunks;
}

void swa_prefill_chunk_tensors(const Exec& exec, const SwaChunkTensorArgs& a) {
  if (a.num_chunks <= 0) return;
  ATTN_LAUNCH(exec, swa_chunk_tensors_on, a);
}

}  // namespace attn::ops
