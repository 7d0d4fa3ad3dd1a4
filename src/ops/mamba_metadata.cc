// The Mamba family's tensor ops (vLLM's mamba_attn.py, mamba2_attn.py, utils.py
// mamba_get_block_table_tensor), written once (src/ops/launch.h): one item per request (or
// element) for the gathers, copies and ranges; the chunked-scan metadata is one row whose lanes
// scan the requests' chunk and token counts (kernels::row_scan), each request writing its chunks,
// then the closing cu_chunk_seqlen entry. mamba_num_chunks (host only: the buffers' sizes) counts
// with the same segment_chunks.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"
#include "row_scan.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;
using kernels::Lanes;
using Sums2 = kernels::Sums<2>;

template <class P>
void gather_state_indices_on(P& p, const int32_t* block_table, int64_t bt_stride,
                             int64_t bt_width, const int32_t* seq_lens, int64_t num_reqs,
                             int32_t block_size, int64_t num_cols, int32_t* out,
                             int64_t out_stride) {
  p.for_each(num_reqs, [=] ATTN_HD(int64_t r) {
    // (seq_len - 1) // block_size with Python's floor: -1 for seq_len 0, clamped to 0.
    const int64_t start = imax<int64_t>((int64_t{seq_lens[r]} - 1) / block_size, 0);
    const int32_t* row = block_table + r * bt_stride;
    int32_t* dst = out + r * out_stride;
    for (int64_t j = 0; j < num_cols; ++j) {
      const int64_t col = imin(start + j, bt_width - 1);  // never past the table
      dst[j] = col < 0 ? 0 : row[col];
    }
  });
}

template <class P>
void prefill_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t first, int64_t count,
                int32_t* qsl_p, uint8_t* has_initial) {
  // two passes, each a plain loop on the host (one pass with both outputs and their null
  // checks cost 1.6x the two: bench specdec_256x(1+3)/MAMBA1)
  if (qsl_p != nullptr)
    p.for_each(count + 1, [=] ATTN_HD(int64_t k) { qsl_p[k] = qsl[first + k] - qsl[first]; });
  if (has_initial != nullptr)
    p.for_each(count, [=] ATTN_HD(int64_t k) {
      const int64_t r = first + k;
      has_initial[k] = seq_lens[r] - (int64_t{qsl[r + 1]} - qsl[r]) > 0 ? 1 : 0;
    });
}

/// One segment's chunks (a request, or one side of its checkpoint): an optional partial first
/// chunk (`first_len` tokens, -1: none) finishing the chunk `computed` left open, then whole ones.
struct Segment {
  int64_t count = 0, first_len = -1;
};

ATTN_HD_INLINE Segment segment_chunks(int64_t computed, int64_t tokens, int64_t chunk) {
  // computed, tokens >= 0 (chunks_of clamps them) and chunk > 0: truncating division is floor
  // division, and the remainder gives the partial chunk without a second division.
  Segment s;
  int64_t rest = tokens;
  const int64_t open = computed % chunk;
  if (open != 0) {
    s.first_len = imin(chunk - open, tokens);
    s.count = 1;
    rest -= s.first_len;
  }
  s.count += (rest + chunk - 1) / chunk;
  return s;
}

/// A request's two segments: [0, ckpt) and [ckpt, q) with a checkpoint k in (0, q) (vLLM 0.33
/// ends a chunk there), else one segment [0, q) (`a.count` 0, `ckpt` 0).
struct RequestChunks {
  Segment a, b;
  int64_t q = 0, ckpt = 0, computed = 0;
};

/// A request as chunk_metadata's scan item: its chunk and token counts, and its chunks.
struct ChunkItem {
  Sums2 sums{};
  RequestChunks c;
};

ATTN_HD_INLINE RequestChunks chunks_of(const int32_t* qsl_p, const int32_t* seq_lens_p,
                                       const int32_t* ckpt, int64_t r, int64_t chunk) {
  RequestChunks c;
  // device offsets that disagree with the validated host copy count no tokens
  c.q = imax<int64_t>(int64_t{qsl_p[r + 1]} - qsl_p[r], 0);
  c.computed = imax<int64_t>(seq_lens_p[r] - c.q, 0);
  const int64_t k = ckpt != nullptr ? ckpt[r] : 0;
  c.ckpt = k > 0 && k < c.q ? k : 0;
  if (c.ckpt > 0) c.a = segment_chunks(c.computed, c.ckpt, chunk);
  c.b = segment_chunks(c.computed + c.ckpt, c.q - c.ckpt, chunk);
  return c;
}

/// Writes a segment's chunks from chunk index `first` (none at or past `capacity`), the segment
/// starting `pos` tokens into the prefills.
ATTN_HD_INLINE void emit_segment(const Segment& s, int64_t tokens, int64_t first, int64_t pos,
                                 int64_t chunk, int64_t r, int64_t capacity, int32_t* cu,
                                 int32_t* seq_idx) {
  int64_t rest = tokens;
  for (int64_t j = 0; j < s.count && first + j < capacity; ++j) {
    const int64_t len = j == 0 && s.first_len >= 0 ? s.first_len : imin(chunk, rest);
    seq_idx[first + j] = static_cast<int32_t>(r);
    cu[first + j] = static_cast<int32_t>(pos);
    pos += len;
    rest -= len;
  }
}

template <class P>
void chunk_metadata_on(P& p, const int32_t* qsl_p, const int32_t* seq_lens_p, int64_t n,
                       int32_t chunk_size, int64_t capacity, int32_t* cu, int32_t* seq_idx,
                       int32_t* last, const int32_t* ckpt, int64_t* ckpt_idx) {
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    // the sums: chunks and tokens of the requests before; each request's chunks computed once
    const Sums2 total = kernels::row_scan<2>(
        lanes, n,
        [&](int64_t r) {
          ChunkItem item;
          item.c = chunks_of(qsl_p, seq_lens_p, ckpt, r, chunk_size);
          item.sums = Sums2{{item.c.a.count + item.c.b.count, item.c.q}};
          return item;
        },
        [&](int64_t r, const Sums2& before, const ChunkItem& own) {
          const RequestChunks& c = own.c;
          const int64_t first = before[0], pos = before[1];
          emit_segment(c.a, c.ckpt, first, pos, chunk_size, r, capacity, cu, seq_idx);
          emit_segment(c.b, c.q - c.ckpt, first + c.a.count, pos + c.ckpt, chunk_size, r,
                       capacity, cu, seq_idx);
          if (ckpt_idx != nullptr) ckpt_idx[r] = c.ckpt > 0 ? first + c.a.count - 1 : 0;
          last[r] = static_cast<int32_t>(first + own.sums[0] - 1);
        });
    if (lanes.leader() && total[0] <= capacity) cu[total[0]] = static_cast<int32_t>(total[1]);
  });
}

template <class P>
void checkpoint_state_on(P& p, const int32_t* bt, int64_t bt_stride, const int64_t* rows,
                         const int64_t* cols, int64_t n, int32_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t i) {
    out[i] = cols[i] >= 0 ? bt[rows[i] * bt_stride + cols[i]] : 0;
  });
}

template <class P>
void copy_pad_i32_on(P& p, const int32_t* src, int64_t src_stride, int64_t rows, int64_t cols,
                     int32_t* dst, int64_t dst_stride, int64_t total_rows, int32_t pad,
                     bool pad_with_last) {
  if (cols == 1) {
    // A one-column copy (the Mamba family's and GDN's state indices, a block-table column) and
    // its padding in one launch of one row whose lanes share the entries: on the host one call
    // of the body and Lanes::copy_strided's loop inside it. A launch of one item per entry
    // called the body once an entry, which in a CUDA build (nvcc wraps a host-device lambda's
    // host body behind an indirect call) cost about 24 instructions an entry (callgrind, bench
    // hybrid4_group/decode_256x4k: docs/performance.md, "Grouped builds"). On a GPU one block
    // of kRowLanes threads shares the entries (at most max_num_batched_tokens of them).
    p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
      lanes.copy_strided(dst, dst_stride, src, src_stride, rows);
      if (total_rows > rows) {
        const int32_t fill = pad_with_last && rows > 0 ? src[(rows - 1) * src_stride] : pad;
        lanes.for_each(total_rows - rows, [&](int64_t k) { dst[(rows + k) * dst_stride] = fill; });
      }
    });
    return;
  }
  p.for_each(rows, [=] ATTN_HD(int64_t r) {
    const int32_t* s = src + r * src_stride;
    int32_t* d = dst + r * dst_stride;
    for (int64_t c = 0; c < cols; ++c) d[c] = s[c];
  });
  if (total_rows > rows)
    p.for_each(total_rows - rows, [=] ATTN_HD(int64_t k) {
      int32_t* d = dst + (rows + k) * dst_stride;
      const int32_t fill =
          pad_with_last && rows > 0 ? src[(rows - 1) * src_stride + cols - 1] : pad;
      for (int64_t c = 0; c < cols; ++c) d[c] = fill;
    });
}

template <class P>
void copy_pad_u8_on(P& p, const uint8_t* src, int64_t n, uint8_t* dst, int64_t total,
                    uint8_t pad) {
  p.for_each(total, [=] ATTN_HD(int64_t i) { dst[i] = i < n ? src[i] : pad; });
}

template <class P>
void iota_i32_on(P& p, int32_t* out, int64_t n) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = static_cast<int32_t>(i); });
}

template <class P>
void query_lens_on(P& p, const int32_t* qsl, int64_t num_reqs, int32_t offset, int32_t* out) {
  p.for_each(num_reqs, [=] ATTN_HD(int64_t i) { out[i] = qsl[i + 1] - qsl[i] + offset; });
}

}  // namespace

void mamba_gather_state_indices(const Exec& exec, const int32_t* block_table, int64_t bt_stride,
                                int64_t bt_width, const int32_t* seq_lens, int64_t num_reqs,
                                int32_t block_size, int64_t num_cols, int32_t* out,
                                int64_t out_stride) {
  if (num_reqs <= 0 || num_cols <= 0) return;
  ATTN_LAUNCH(exec, gather_state_indices_on, block_table, bt_stride, bt_width, seq_lens, num_reqs,
              block_size, num_cols, out, out_stride);
}

void mamba_prefill_metadata(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                            int64_t first, int64_t count, int32_t* qsl_p, uint8_t* has_initial) {
  if (count < 0 || (qsl_p == nullptr && has_initial == nullptr)) return;
  ATTN_LAUNCH(exec, prefill_on, qsl, seq_lens, first, count, qsl_p, has_initial);
}

int64_t mamba_num_chunks(const int32_t* qsl_p, const int32_t* seq_lens_p, int64_t num_prefills,
                         int32_t chunk_size, const int32_t* ckpt) {
  int64_t total = 0;
  for (int64_t r = 0; r < num_prefills; ++r) {
    const RequestChunks c = chunks_of(qsl_p, seq_lens_p, ckpt, r, chunk_size);
    total += c.a.count + c.b.count;
  }
  return total;
}

void mamba_chunk_metadata(const Exec& exec, const int32_t* qsl_p, const int32_t* seq_lens_p,
                          int64_t num_prefills, int32_t chunk_size, int64_t capacity,
                          int32_t* cu_chunk_seqlen, int32_t* seq_idx, int32_t* last_chunk_indices,
                          const int32_t* ckpt, int64_t* ckpt_idx) {
  if (num_prefills <= 0) return;
  ATTN_LAUNCH(exec, chunk_metadata_on, qsl_p, seq_lens_p, num_prefills, chunk_size, capacity,
              cu_chunk_seqlen, seq_idx, last_chunk_indices, ckpt, ckpt_idx);
}

void mamba_checkpoint_state_indices(const Exec& exec, const int32_t* bt, int64_t bt_stride,
                                    const int64_t* rows, const int64_t* cols, int64_t n,
                                    int32_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, checkpoint_state_on, bt, bt_stride, rows, cols, n, out);
}

void copy_pad_i32(const Exec& exec, const int32_t* src, int64_t src_stride, int64_t rows,
                  int64_t cols, int32_t* dst, int64_t dst_stride, int64_t total_rows,
                  int32_t pad, bool pad_with_last) {
  if (total_rows <= 0 || cols <= 0) return;
  if (rows > total_rows) rows = total_rows;
  ATTN_LAUNCH(exec, copy_pad_i32_on, src, src_stride, rows, cols, dst, dst_stride, total_rows,
              pad, pad_with_last);
}

void copy_pad_u8(const Exec& exec, const uint8_t* src, int64_t n, uint8_t* dst, int64_t total,
                 uint8_t pad) {
  if (total <= 0) return;
  if (n > total) n = total;
  ATTN_LAUNCH(exec, copy_pad_u8_on, src, n, dst, total, pad);
}

void iota_i32(const Exec& exec, int32_t* out, int64_t n) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, iota_i32_on, out, n);
}

void query_lens_i32(const Exec& exec, const int32_t* qsl, int64_t num_reqs, int32_t offset,
                    int32_t* out) {
  if (num_reqs <= 0) return;
  ATTN_LAUNCH(exec, query_lens_on, qsl, num_reqs, offset, out);
}

}  // namespace attn::ops
