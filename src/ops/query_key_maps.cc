// ops::query_key_maps (vLLM 0.33's RocmOctaveMetadataBuilder._fill_query_maps), written once
// (src/ops/launch.h): a row per request, its lanes over the request's tokens.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::Lanes;

template <class P>
void query_key_maps_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                       int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen) {
  // A row per request, its lanes over its tokens (linear on the host, where a binary search
  // per token cost 11x: bench ROCM_OCTAVE decode_1024x32k).
  p.for_each_row(num_reqs, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int32_t q0 = qsl[r], q1 = qsl[r + 1];
    const int64_t begin = kernels::imin(int64_t{q0}, num_tokens);
    const int64_t n = kernels::imin(int64_t{q1}, num_tokens) - begin;
    // key length of token q0 + j: seq_len - query_len + j + 1, in 64 bits and cast once (the
    // draft-decode update reads lengths no validation saw)
    const int64_t base = int64_t{seq_lens[r]} - (int64_t{q1} - q0) + 1;
    int32_t* req = q_to_req + begin;
    int32_t* klen = q_to_klen + begin;
    if (n == 1) {  // a decode row: without the vectorized loop's set-up (2x the row's cost)
      if (lanes.leader()) {
        req[0] = static_cast<int32_t>(r);
        klen[0] = static_cast<int32_t>(base);
      }
      return;
    }
    lanes.for_each(n, [&](int64_t j) {
      req[j] = static_cast<int32_t>(r);
      klen[j] = static_cast<int32_t>(base + j);
    });
  });
  // The padding tokens past the last query: searchsorted(qsl[1:], t, right=True) = num_reqs,
  // key length 0 (one row: qsl[num_reqs] is read where the batch lives).
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    const int64_t begin = kernels::imin(int64_t{qsl[num_reqs]}, num_tokens);
    lanes.for_each(num_tokens - begin, [&](int64_t j) {
      q_to_req[begin + j] = static_cast<int32_t>(num_reqs);
      q_to_klen[begin + j] = 0;
    });
  });
}

}  // namespace

void query_key_maps(const Exec& exec, const int32_t* query_start_loc, const int32_t* seq_lens,
                    int64_t num_reqs, int64_t num_tokens, int32_t* q_to_req, int32_t* q_to_klen) {
  if (num_tokens <= 0 || num_reqs <= 0) return;
  ATTN_LAUNCH(exec, query_key_maps_on, query_start_loc, seq_lens, num_reqs, num_tokens, q_to_req,
              q_to_klen);
}

}  // namespace attn::ops
