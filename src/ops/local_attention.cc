// vLLM's make_local_attention_virtual_batches, written once (src/ops/launch.h): the host plan
// (host-only: the host mirrors and the scalars), the device-side arrays (a scan over the
// requests' virtual-batch counts, each request writing its own virtual batches) and the
// block-table remap (one row per virtual batch), sharing request_blocks / virtual_batch.
#include <cstdint>

#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::cdiv;
using kernels::floor_div;
using kernels::iclamp;
using kernels::imax;
using kernels::imin;
using kernels::Lanes;

// One request's local blocks: the query tokens of the first block, the KV tokens of the last.
struct RequestBlocks {
  int64_t q_len, seq_len, first, last, count;
};

ATTN_HD_INLINE RequestBlocks request_blocks(const int32_t* qsl, const int32_t* seq_lens, int64_t r,
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
    b.first = imin<int64_t>(chunk - ctx % c, b.q_len);
    b.last = seq_mod == 0 ? chunk : seq_mod;
    b.count = 1 + (static_cast<uint32_t>(b.q_len - b.first) + c - 1) / c;
    return b;
  }
  // Python modulo: (seq - q) % chunk in [0, chunk); seq % -chunk in (-chunk, 0].
  b.first = imin(chunk - kernels::floor_mod(b.seq_len - b.q_len, chunk), b.q_len);
  b.last = chunk + kernels::floor_mod(b.seq_len, -chunk);
  b.count = 1 + cdiv(b.q_len - b.first, chunk);
  return b;
}

// Virtual batch k of a request: its query tokens, KV tokens and first KV token.
ATTN_HD_INLINE void virtual_batch(const RequestBlocks& b, int64_t k, int64_t chunk, int64_t* q,
                                  int64_t* kv, int64_t* k_start) {
  *q = k == 0 ? b.first : imin(b.q_len - b.first - chunk * (k - 1), chunk);
  *kv = k == b.count - 1 ? b.last : chunk;
  const int64_t reverse = b.count - k - 1;
  *k_start = b.seq_len - (reverse * chunk + b.last);
}

// The scan runs over num_reqs + 1 items: item 0 writes qsl_local[0]; item r + 1 writes request
// r's virtual batches from first_v = (virtual batches before it). Nothing is written at or past
// num_virtual (device lengths that disagree with the host mirrors the count came from).
template <class P>
void virtual_batches_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_reqs,
                        int32_t chunk, int32_t block_size, int32_t* qsl_local, int32_t* seq_local,
                        int32_t* vreq, int32_t* vstart, int64_t num_virtual) {
  p.scan(
      num_reqs + 1,
      [=] ATTN_HD(int64_t i) -> int64_t {
        return i == 0 ? 0 : request_blocks(qsl, seq_lens, i - 1, chunk).count;
      },
      [=] ATTN_HD(int64_t i, int64_t sum) {
        if (i == 0) {
          qsl_local[0] = 0;
          return;
        }
        const int64_t r = i - 1;
        const RequestBlocks b = request_blocks(qsl, seq_lens, r, chunk);
        int64_t cu = qsl[r];  // the local batches of request r start where its queries start
        for (int64_t k = 0, v = sum - b.count; k < b.count && v < num_virtual; ++k, ++v) {
          int64_t q, kv, k_start;
          virtual_batch(b, k, chunk, &q, &kv, &k_start);
          cu += q;
          qsl_local[v + 1] = static_cast<int32_t>(cu);
          seq_local[v] = static_cast<int32_t>(kv);
          vreq[v] = static_cast<int32_t>(r);
          vstart[v] = static_cast<int32_t>(floor_div(k_start, block_size));
        }
      });
}

// Row v of the remap: columns start + j in [0, width) are one contiguous run of the row; past the
// row numpy's clip(max=width - 1) repeats the last column; a negative column counts from the end
// (a zero-length padding request starts its only chunk at -chunk), and below -width, where vLLM
// would raise, libattn reads column 0. A request outside the table gives vLLM's null block (0).
template <class P>
void remap_on(P& p, const int32_t* block_table, int64_t bt_rows, int64_t bt_stride,
              int64_t bt_width, const int32_t* vreq, const int32_t* vstart, int64_t num_virtual,
              int64_t pages, int32_t* out, int64_t out_stride) {
  p.for_each_row(num_virtual, [=] ATTN_HD(int64_t v, Lanes lanes) {
    int32_t* dst = out + v * out_stride;
    const int64_t req = vreq[v];
    if (req < 0 || req >= bt_rows || bt_width <= 0) {
      lanes.for_each(pages, [&](int64_t j) { dst[j] = 0; });
      return;
    }
    const int32_t* row = block_table + req * bt_stride;
    const int64_t start = vstart[v];
    const int64_t first = iclamp<int64_t>(-start, 0, pages);               // first j in the row
    const int64_t last = iclamp<int64_t>(bt_width - start, first, pages);  // one past it
    lanes.for_each(first, [&](int64_t j) { dst[j] = row[imax<int64_t>(start + j + bt_width, 0)]; });
    lanes.copy(dst + first, row + start + first, last - first);
    const int32_t tail = row[bt_width - 1];
    lanes.for_each(pages - last, [&](int64_t j) { dst[last + j] = tail; });
  });
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
      plan.max_query_len = imax(plan.max_query_len, q);
      plan.max_seq_len = imax(plan.max_seq_len, kv);
    }
  }
  plan.num_virtual_batches = v;
  return plan;
}

void local_attention_virtual_batches(const Exec& exec, const int32_t* qsl,
                                     const int32_t* seq_lens, int64_t num_reqs, int32_t chunk,
                                     int32_t block_size, const int32_t* block_table,
                                     int64_t bt_rows, int64_t bt_stride, int64_t bt_width,
                                     int32_t* qsl_local, int32_t* seq_lens_local,
                                     int32_t* bt_local, int64_t out_stride, int32_t* virtual_req,
                                     int32_t* virtual_block_start, int64_t num_virtual) {
  ATTN_LAUNCH(exec, virtual_batches_on, qsl, seq_lens, num_reqs, chunk, block_size, qsl_local,
              seq_lens_local, virtual_req, virtual_block_start, num_virtual);
  remap_block_table(exec, block_table, bt_rows, bt_stride, bt_width, virtual_req,
                    virtual_block_start, num_virtual, chunk / block_size, bt_local, out_stride);
}

void remap_block_table(const Exec& exec, const int32_t* block_table, int64_t bt_rows,
                       int64_t bt_stride, int64_t bt_width, const int32_t* virtual_req,
                       const int32_t* virtual_block_start, int64_t num_virtual, int64_t pages,
                       int32_t* out, int64_t out_stride) {
  if (num_virtual <= 0) return;
  ATTN_LAUNCH(exec, remap_on, block_table, bt_rows, bt_stride, bt_width, virtual_req,
              virtual_block_start, num_virtual, pages, out, out_stride);
}

}  // namespace attn::ops
