// ops::aiter_mla_decode_tables: host reference and CUDA dispatch (vLLM 0.33's
// AiterMLAMetadataBuilder._build_decode, _expand_page_indices_kernel and _fill_varlen_rows).
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void aiter_mla_decode_tables(const Exec& exec, const AiterMlaDecodeArgs& a) {
  if (exec.on_cuda) return ATTN_CUDA_LAUNCH(exec, aiter_mla_decode_tables, a);
  const int64_t n = a.num_reqs, K = a.kernel_block_size;
  if (a.reset_indices) std::fill(a.indices, a.indices + a.indices_capacity, -1);
  int64_t total = 0;
  a.indptr[0] = 0;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t q = a.query_start_loc[r + 1] - a.query_start_loc[r];
    const int64_t seq = a.seq_lens[r];
    int64_t len = seq;
    if (a.varlen)
      len = seq + a.pad_qlen - q;
    else if (a.pad_qlen > 0 && q <= 0)
      len = a.pad_qlen;
    if (a.kernel_seq_lens) a.kernel_seq_lens[r] = static_cast<int32_t>(len);
    const int32_t* row = a.block_table + r * a.bt_stride;
    for (int64_t t = 0; t < len && total + t < a.indices_capacity; ++t) {
      const int64_t s = a.varlen && t >= seq ? 0 : t;
      const int64_t col = std::clamp<int64_t>(s / K, 0, a.bt_width - 1);
      a.indices[total + t] = static_cast<int32_t>(row[col] * K + s % K);
    }
    total += len;
    a.indptr[r + 1] = static_cast<int32_t>(total);
  }
  for (int64_t r = 0; r <= n; ++r)
    a.qo_indptr[r] = a.uniform_qo > 0 ? static_cast<int32_t>(r * a.uniform_qo)
                                      : a.query_start_loc[r];
  for (int64_t r = n + 1; r < a.indptr_capacity; ++r) {
    a.indptr[r] = a.indptr[n];
    a.qo_indptr[r] = a.qo_indptr[n];
  }
  if (!a.varlen || a.q_rows == nullptr) return;
  std::fill(a.o_rows, a.o_rows + a.o_rows_size, int64_t{0});
  const int64_t w = a.pad_qlen;
  for (int64_t i = 0; i < n * w; ++i) {
    const int64_t r = i / w, p = i % w;
    const bool real = p < a.query_start_loc[r + 1] - a.query_start_loc[r];
    const int64_t packed = a.query_start_loc[r] + p;
    a.q_rows[i] = real ? packed : 0;
    const int64_t slot = real ? packed : a.o_rows_size - 1;
    if (slot >= 0 && slot < a.o_rows_size) a.o_rows[slot] = i;
  }
}

}  // namespace attn::ops
