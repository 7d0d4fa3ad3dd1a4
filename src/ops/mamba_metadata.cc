// The Mamba family's tensor ops (vLLM's mamba_attn.py, mamba2_attn.py, utils.py
// mamba_get_block_table_tensor): host references and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

}  // namespace

void mamba_gather_state_indices(const Exec& exec, const int32_t* block_table, int64_t bt_stride,
                                int64_t bt_width, const int32_t* seq_lens, int64_t num_reqs,
                                int32_t block_size, int64_t num_cols, int32_t* out,
                                int64_t out_stride) {
  if (num_reqs <= 0 || num_cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mamba_gather_state_indices, block_table, bt_stride, bt_width,
                            seq_lens, num_reqs, block_size, num_cols, out, out_stride);
  for (int64_t r = 0; r < num_reqs; ++r) {
    // (seq_len - 1) // block_size with Python's floor: -1 for seq_len 0, clamped to 0.
    const int64_t start = std::max<int64_t>((static_cast<int64_t>(seq_lens[r]) - 1) / block_size, 0);
    for (int64_t j = 0; j < num_cols; ++j) {
      const int64_t col = std::min(start + j, bt_width - 1);
      out[r * out_stride + j] = col < 0 ? 0 : block_table[r * bt_stride + col];
    }
  }
}

void mamba_prefill_metadata(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                            int64_t first, int64_t count, int32_t* qsl_p, uint8_t* has_initial) {
  if (count < 0 || (qsl_p == nullptr && has_initial == nullptr)) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mamba_prefill_metadata, qsl, seq_lens, first, count, qsl_p,
                            has_initial);
  if (qsl_p != nullptr)
    for (int64_t k = 0; k <= count; ++k) qsl_p[k] = qsl[first + k] - qsl[first];
  if (has_initial != nullptr)
    for (int64_t k = 0; k < count; ++k) {
      const int64_t r = first + k;
      has_initial[k] = seq_lens[r] - (static_cast<int64_t>(qsl[r + 1]) - qsl[r]) > 0 ? 1 : 0;
    }
}

namespace {
/// One segment's chunks (see batch_ops.h): the partial first chunk's length (-1: none) and the
/// count.
struct Segment {
  int64_t count = 0, first_len = -1;
};

Segment segment_chunks(int64_t computed, int64_t tokens, int64_t chunk) {
  Segment s;
  int64_t rest = tokens;
  if (computed % chunk != 0) {
    s.first_len = std::min<int64_t>(cdiv(computed, chunk) * chunk - computed, tokens);
    s.count = 1;
    rest -= s.first_len;
  }
  s.count += cdiv(rest, chunk);
  return s;
}

/// The checkpoint of request r, or 0 when it has none (or none that splits its query).
int64_t checkpoint_of(const int32_t* ckpt, int64_t r, int64_t q) {
  const int64_t k = ckpt != nullptr ? ckpt[r] : 0;
  return k > 0 && k < q ? k : 0;
}
}  // namespace

int64_t mamba_num_chunks(const int32_t* qsl_p, const int32_t* seq_lens_p, int64_t num_prefills,
                         int32_t chunk_size, const int32_t* ckpt) {
  int64_t total = 0;
  for (int64_t r = 0; r < num_prefills; ++r) {
    const int64_t q = static_cast<int64_t>(qsl_p[r + 1]) - qsl_p[r];
    const int64_t computed = std::max<int64_t>(seq_lens_p[r] - q, 0);
    const int64_t k = checkpoint_of(ckpt, r, q);
    if (k > 0) total += segment_chunks(computed, k, chunk_size).count;
    total += segment_chunks(computed + k, q - k, chunk_size).count;
  }
  return total;
}

void mamba_chunk_metadata(const Exec& exec, const int32_t* qsl_p, const int32_t* seq_lens_p,
                          int64_t num_prefills, int32_t chunk_size, int64_t capacity,
                          int32_t* cu_chunk_seqlen, int32_t* seq_idx, int32_t* last_chunk_indices,
                          const int32_t* ckpt, int64_t* ckpt_idx) {
  if (num_prefills <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mamba_chunk_metadata, qsl_p, seq_lens_p, num_prefills,
                            chunk_size, capacity, cu_chunk_seqlen, seq_idx, last_chunk_indices,
                            ckpt, ckpt_idx);
  // vLLM's loop over segments: one chunk finishing the chunk the computed tokens left open,
  // then whole chunks; a request never shares a chunk with another, a checkpoint ends one.
  int64_t pos = 0, k = 0;
  auto emit_segment = [&](int64_t r, int64_t computed, int64_t tokens) {
    const Segment s = segment_chunks(computed, tokens, chunk_size);
    int64_t rest = tokens;
    for (int64_t j = 0; j < s.count; ++j) {
      const int64_t len = j == 0 && s.first_len >= 0 ? s.first_len : std::min<int64_t>(chunk_size, rest);
      if (k < capacity) {
        seq_idx[k] = static_cast<int32_t>(r);
        cu_chunk_seqlen[k] = static_cast<int32_t>(pos);
      }
      ++k;
      pos += len;
      rest -= len;
    }
  };
  for (int64_t r = 0; r < num_prefills; ++r) {
    const int64_t q = static_cast<int64_t>(qsl_p[r + 1]) - qsl_p[r];
    const int64_t computed = std::max<int64_t>(seq_lens_p[r] - q, 0);
    const int64_t c = checkpoint_of(ckpt, r, q);
    if (c > 0) emit_segment(r, computed, c);
    if (ckpt_idx != nullptr) ckpt_idx[r] = c > 0 ? k - 1 : 0;
    emit_segment(r, computed + c, q - c);
    last_chunk_indices[r] = static_cast<int32_t>(k - 1);
  }
  if (k <= capacity) cu_chunk_seqlen[k] = static_cast<int32_t>(pos);
}

void mamba_checkpoint_state_indices(const Exec& exec, const int32_t* bt, int64_t bt_stride,
                                    const int64_t* rows, const int64_t* cols, int64_t n,
                                    int32_t* out) {
  if (n <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mamba_checkpoint_state_indices, bt, bt_stride, rows, cols, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = cols[i] >= 0 ? bt[rows[i] * bt_stride + cols[i]] : 0;
}

void copy_pad_i32(const Exec& exec, const int32_t* src, int64_t src_stride, int64_t rows,
                  int64_t cols, int32_t* dst, int64_t dst_stride, int64_t total_rows,
                  int32_t pad, bool pad_with_last) {
  if (total_rows <= 0 || cols <= 0) return;
  if (rows > total_rows) rows = total_rows;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, copy_pad_i32, src, src_stride, rows, cols, dst, dst_stride,
                            total_rows, pad, pad_with_last);
  const int32_t fill = pad_with_last && rows > 0 ? src[(rows - 1) * src_stride + cols - 1] : pad;
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * src_stride, src + r * src_stride + cols, dst + r * dst_stride);
  for (int64_t r = rows; r < total_rows; ++r)
    std::fill(dst + r * dst_stride, dst + r * dst_stride + cols, fill);
}

void copy_pad_u8(const Exec& exec, const uint8_t* src, int64_t n, uint8_t* dst, int64_t total,
                 uint8_t pad) {
  if (total <= 0) return;
  if (n > total) n = total;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, copy_pad_u8, src, n, dst, total, pad);
  std::copy(src, src + n, dst);
  std::fill(dst + n, dst + total, pad);
}

void iota_i32(const Exec& exec, int32_t* out, int64_t n) {
  if (n <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, iota_i32, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(i);
}

void query_lens_i32(const Exec& exec, const int32_t* qsl, int64_t num_reqs, int32_t offset,
                    int32_t* out) {
  if (num_reqs <= 0) return;
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, query_lens_i32, qsl, num_reqs, offset, out);
  for (int64_t i = 0; i < num_reqs; ++i) out[i] = qsl[i + 1] - qsl[i] + offset;
}

}  // namespace attn::ops
