// vLLM's split_prefill_chunks (host-only).
#include "ops/batch_ops.h"
#include "ops/error.h"

namespace attn::ops {

int64_t split_prefill_chunks(const int32_t* seq_lens, int64_t num_seqs, int64_t workspace_size,
                             int64_t request_offset, int64_t* bounds) {
  for (int64_t i = 0; i < num_seqs; ++i)
    if (seq_lens[i] > workspace_size)
      invalid("seq_lens[", i, "]=", seq_lens[i], " exceeds workspace_size=", workspace_size);
  int64_t chunks = 0, i = 0;
  while (i < num_seqs) {
    const int64_t start = i;
    int64_t total = 0;
    while (i < num_seqs && total + seq_lens[i] <= workspace_size) total += seq_lens[i++];
    bounds[2 * chunks] = start + request_offset;
    bounds[2 * chunks + 1] = i + request_offset;
    ++chunks;
  }
  return chunks;
}

}  // namespace attn::ops
