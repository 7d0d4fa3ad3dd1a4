// vLLM's make_local_attention_virtual_batches: the host plan (host-only) and the device-side
// arrays (host reference and CUDA dispatch), and the block-table remap it returns.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {

// Python's floor division, for divisors of either sign.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t cdiv(int64_t a, int64_t b) { return -floor_div(-a, b); }

// One request's local blocks: the query tokens of the first block, the KV tokens of the last.
struct RequestBlocks {
  int64_t q_len, seq_len, first, last, count;
};

RequestBlocks request_blocks(const int32_t* qsl, const int32_t* seq_lens, int64_t r,
                             int64_t chunk) {
  RequestBlocks b;
  b.q_len = static_cast<int64_t>(qsl[r + 1]) - qsl[r];
  b.seq_len = seq_lens[r];
  if (b.q_len >= 0 && b.seq_len >= b.q_len && chunk > 0 && b.seq_len <= UINT32_MAX &&
      chunk <= UINT32_MAX) {
    // The validated case (0 <= q_len <= seq_len): every Python modulo below has a non-negative
    // dividend, so one 32-bit unsigned division each (the 64-bit signed ones were a quarter of
    // the op's time at 256 requests).
    const auto c = static_cast<uint32_t>(chunk);
    const auto ctx = static_cast<uint32_t>(b.seq_len - b.q_len);
    const auto seq_mod = static_cast<uint32_t>(b.seq_len) % c;
    b.first = std::min<int64_t>(chunk - ctx % c, b.q_len);
    b.last = seq_mod == 0 ? chunk : seq_mod;
    b.count = 1 + (static_cast<uint32_t>(b.q_len - b.first) + c - 1) / c;
    return b;
  }
  // Python modulo: (seq - q) % chunk in [0, chunk); seq % -chunk in (-chunk, 0].
  const int64_t ctx_mod = (b.seq_len - b.q_len) - floor_div(b.seq_len - b.q_len, chunk) * chunk;
  b.first = std::min(chunk - ctx_mod, b.q_len);
  const int64_t seq_mod_neg = b.seq_len - floor_div(b.seq_len, -chunk) * -chunk;
  b.last = chunk + seq_mod_neg;
  b.count = 1 + cdiv(b.q_len - b.first, chunk);
  return b;
}

// Virtual batch k of a request: its query tokens, KV tokens and first KV token.
void virtual_batch(const RequestBlocks& b, int64_t k, int64_t chunk, int64_t* q, int64_t* kv,
                   int64_t* k_start) {
  *q = k == 0 ? b.first : std::min(b.q_len - b.first - chunk * (k - 1), chunk);
  *kv = k == b.count - 1 ? b.last : chunk;
  const int64_t reverse = b.count - k - 1;
  *k_start = b.seq_len - (reverse * chunk + b.last);
}

}  // namespace

int64_t local_attention_num_virtual_batches(const int32_t* qsl, const int32_t* seq_lens,
                                            int64_t num_reqs, int32_t chunk) {
  int64_t total = 0;
  for (int64_t r = 0; r < num_reqs; ++r) total += request_blocks(qsl, seq_lens, r, chunk).count;
  return total;
}

LocalAttentionPlan local_attention_plan(const int32_t* qsl, const int32_t* seq_lens,
                                        int64_t num_reqs, int32_t chunk, int32_t block_size,
                                        int32_t* qsl_local, int32_t* seq_lens_local,
                                        int32_t* num_computed_local, int32_t* virtual_req,
                                        int32_t* virtual_block_start) {
  LocalAttentionPlan plan;
  int64_t v = 0, cu = 0;
  if (qsl_local) qsl_local[0] = 0;
  for (int64_t r = 0; r < num_reqs; ++r) {
    const RequestBlocks b = request_blocks(qsl, seq_lens, r, chunk);
    for (int64_t k = 0; k < b.count; ++k, ++v) {
      int64_t q, kv, k_start;
      virtual_batch(b, k, chunk, &q, &kv, &k_start);
      cu += q;
      if (qsl_local) qsl_local[v + 1] = static_cast<int32_t>(cu);
      if (seq_lens_local) seq_lens_local[v] = static_cast<int32_t>(kv);
      if (num_computed_local) num_computed_local[v] = static_cast<int32_t>(kv - q);
      if (virtual_req) virtual_req[v] = static_cast<int32_t>(r);
      if (virtual_block_start)
        virtual_block_start[v] = static_cast<int32_t>(floor_div(k_start, block_size));
      plan.max_query_len = std::max(plan.max_query_len, q);
      plan.max_seq_len = std::max(plan.max_seq_len, kv);
    }
  }
  plan.num_virtual_batches = v;
  return plan;
}

void local_attention_virtual_batches(const Exec& exec, const int32_t* qsl,
                                     const int32_t* seq_lens, int64_t num_reqs, int32_t chunk,
                                     int32_t block_size, const int32_t* block_table,
                                     int64_t bt_rows, int64_t bt_stride, int64_t bt_width,
                                     int32_t* qsl_local,
                                     int32_t* seq_lens_local, int32_t* bt_local,
                                     int64_t out_stride, int32_t* virtual_req,
                                     int32_t* virtual_block_start, int64_t num_virtual) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, local_attention_virtual_batches, qsl, seq_lens, num_reqs, chunk,
                            block_size, block_table, bt_rows, bt_stride, bt_width, qsl_local,
                            seq_lens_local, bt_local, out_stride, virtual_req, virtual_block_start,
                            num_virtual);
  const LocalAttentionPlan plan = local_attention_plan(
      qsl, seq_lens, num_reqs, chunk, block_size, qsl_local, seq_lens_local, nullptr,
      virtual_req, virtual_block_start);
  (void)num_virtual;  // equal to plan.num_virtual_batches by the caller's contract
  remap_block_table(exec, block_table, bt_rows, bt_stride, bt_width, virtual_req, virtual_block_start,
                    plan.num_virtual_batches, chunk / block_size, bt_local, out_stride);
}

void remap_block_table(const Exec& exec, const int32_t* block_table, int64_t bt_rows,
                       int64_t bt_stride, int64_t bt_width, const int32_t* virtual_req,
                       const int32_t* virtual_block_start, int64_t num_virtual, int64_t pages,
                       int32_t* out, int64_t out_stride) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, remap_block_table, block_table, bt_rows, bt_stride, bt_width,
                            virtual_req, virtual_block_start, num_virtual, pages, out, out_stride);
  for (int64_t v = 0; v < num_virtual; ++v) {
    const int64_t req = virtual_req[v];
    if (req < 0 || req >= bt_rows || bt_width <= 0) {  // no row to read: vLLM's null block
      for (int64_t j = 0; j < pages; ++j) out[v * out_stride + j] = 0;
      continue;
    }
    const int32_t* row = block_table + req * bt_stride;
    int32_t* dst = out + v * out_stride;
    const int64_t start = virtual_block_start[v];
    // Columns start + j in [0, width) are one contiguous run of the row; past the row numpy's
    // clip(max=width - 1) repeats the last column; a negative column counts from the end (a
    // zero-length padding request starts its only chunk at -chunk), and below -width, where
    // vLLM would raise, libattn reads column 0.
    const int64_t first = std::clamp<int64_t>(-start, 0, pages);          // first j in the row
    const int64_t last = std::clamp<int64_t>(bt_width - start, first, pages);  // one past it
    for (int64_t j = 0; j < first; ++j) {
      const int64_t col = start + j + bt_width;
      dst[j] = row[col < 0 ? 0 : col];
    }
    if (last > first)
      std::memcpy(dst + first, row + start + first, sizeof(int32_t) * static_cast<size_t>(last - first));
    std::fill(dst + last, dst + pages, row[bt_width - 1]);
  }
}

}  // namespace attn::ops
