// ops::aiter_sparse_kv_indptr (vLLM 0.33's ROCMAiterMLASparseMetadataBuilder.build: the
// per-token sparse lengths of generate_sparse_seqlen_kernel, their torch.cumsum into
// paged_kv_indptr[1:], and the tail fill), written once (src/ops/launch.h): a scan over the
// tokens, each token's request found by a binary search of query_start_loc, then the tail. No
// planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/error.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imin;
using kernels::request_of_token;

template <class P>
void aiter_sparse_kv_indptr_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                               int64_t num_tokens, int32_t topk, int64_t capacity,
                               int32_t* indptr) {
  // generate_sparse_seqlen_kernel: seq_len - query_len + offset + 1, capped at topk; a request
  // of length 0 leaves its tokens 0 (the zero-initialized output)
  auto sparse_len = [=] ATTN_HD(int64_t t) -> int64_t {
    const int64_t r = request_of_token(qsl, num_reqs, t);
    if (r < 0) return 0;
    const int64_t seq = seq_lens[r];
    if (seq == 0) return 0;
    const int64_t start = qsl[r], len = qsl[r + 1] - start;
    return imin<int64_t>(seq - len + (t - start) + 1, topk);
  };
  p.scan(num_tokens, sparse_len,
         [=] ATTN_HD(int64_t t, int64_t sum) { indptr[t + 1] = static_cast<int32_t>(sum); });
  // the tail repeats the last entry (0 for an empty batch: indptr[0])
  p.for_each(capacity - (num_tokens + 1),
             [=] ATTN_HD(int64_t i) { indptr[num_tokens + 1 + i] = indptr[num_tokens]; });
}

}  // namespace

void aiter_sparse_kv_indptr(const Exec& exec, const int32_t* query_start_loc,
                            const int32_t* seq_lens, int64_t num_reqs, int64_t num_tokens,
                            int32_t topk, int64_t capacity, int32_t* indptr) {
  if (capacity < num_tokens + 1)
    invalid("aiter_sparse_kv_indptr: capacity ", capacity,
            " is less than num_tokens + 1 = ", num_tokens + 1);
  ATTN_LAUNCH(exec, aiter_sparse_kv_indptr_on, query_start_loc, seq_lens, num_reqs, num_tokens,
              topk, capacity, indptr);
}

}  // namespace attn::ops
