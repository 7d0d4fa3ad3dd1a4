// MINIMAX_M3_SPARSE's tensors (vLLM 0.33's models/minimax_m3/common/sparse_attention.py:
// MiniMaxM3SparseMetadataBuilder.build, minimax_m3_query_token_positions and
// minimax_m3_rebase_slots_to_page16; models/minimax_m3/amd: minimax_m3_rebase_block_table_to_page16
// and indexer_msa.py's MiniMaxM3IndexerMSAMetadataBuilder.build, the prefill rows' causal shape),
// written once (src/ops/launch.h): the host path and,
// compiled by nvcc, the CUDA kernels. One item per entry; the prefills' cu_seqlens_k is the
// executor's scan (its running sum).
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void prefill_arrays_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t num_prefills,
                       int64_t num_decode_tokens, int32_t* cu_q, int32_t* cu_k) {
  // query_start_loc[num_decodes:] - num_decode_tokens (int32); cu_seqlens_k[0] = 0
  p.for_each(num_prefills + 1, [=] ATTN_HD(int64_t i) {
    cu_q[i] = static_cast<int32_t>(qsl[i] - num_decode_tokens);
    if (i == 0 && cu_k != nullptr) cu_k[0] = 0;
  });
  if (cu_k == nullptr) return;  // the indexer's prefill part has no cu_seqlens_k
  // torch.cumsum(seq_lens[num_decodes:], out=cu_seqlens_k[1:]): int32 out
  p.scan(num_prefills, [=] ATTN_HD(int64_t i) -> int64_t { return seq_lens[i]; },
         [=] ATTN_HD(int64_t i, int64_t sum) { cu_k[i + 1] = static_cast<int32_t>(sum); });
}

template <class P>
void query_positions_on(P& p, const int32_t* cu_q, const int32_t* prefix_lens,
                        int64_t num_prefills, int64_t num_tokens, int32_t* req_id,
                        int32_t* abs_pos) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    // searchsorted(cu_seqlens_q[1:], t, right=True), kept inside the prefills
    const int64_t r = kernels::imin<int64_t>(kernels::upper_bound(cu_q + 1, num_prefills, t),
                                             num_prefills - 1);
    req_id[t] = static_cast<int32_t>(r);
    abs_pos[t] = static_cast<int32_t>(prefix_lens[r] + (t - cu_q[r]));
  });
}

template <class P>
void msa_prefill_rows_on(P& p, const int32_t* cu_q, int64_t num_prefills, const int64_t* positions,
                         int64_t num_tokens, int32_t sparse_block_size, int32_t* num_valid_pages,
                         int32_t* row_req_id, int32_t* kv_lens) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) {
    const int64_t pos = positions[t];
    // int64 arithmetic copied into int32 buffers: torch's copy_ keeps the low 32 bits
    num_valid_pages[t] = static_cast<int32_t>(kernels::floor_div(pos, sparse_block_size) + 1);
    kv_lens[t] = static_cast<int32_t>(static_cast<uint64_t>(pos) + 1);
    // searchsorted(cu_seqlens_q[1:], t, right=True), not clamped (vLLM indexes nothing with it)
    row_req_id[t] = static_cast<int32_t>(kernels::upper_bound(cu_q + 1, num_prefills, t));
  });
}

template <class P>
void page16_slots_on(P& p, const void* slots, bool slots_int64, int64_t n, int32_t block_size,
                     int64_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t t) {
    const int64_t s = slots_int64 ? static_cast<const int64_t*>(slots)[t]
                                  : int64_t{static_cast<const int32_t*>(slots)[t]};
    out[t] = kernels::floor_div(kernels::imax<int64_t>(s, 0), block_size) * block_size + s;
  });
}

template <class P>
void page16_table_on(P& p, const int32_t* table, int64_t stride, int64_t rows, int64_t cols,
                     int32_t* out, int64_t out_stride) {
  p.for_each(rows * cols, [=] ATTN_HD(int64_t k) {
    const int64_t r = k / cols, j = k % cols;
    // torch.mul on int32: wraps (unsigned arithmetic, no signed overflow)
    out[r * out_stride + j] = static_cast<int32_t>(static_cast<uint32_t>(table[r * stride + j]) *
                                                   kMiniMaxM3Page16SidesPerBlock);
  });
}

}  // namespace

void minimax_m3_page16_block_table(const Exec& exec, const int32_t* block_table,
                                   int64_t block_table_stride, int64_t rows, int64_t cols,
                                   int32_t* out, int64_t out_stride) {
  if (rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, page16_table_on, block_table, block_table_stride, rows, cols, out,
              out_stride);
}

void minimax_m3_prefill_arrays(const Exec& exec, const int32_t* query_start_loc,
                               const int32_t* seq_lens, int64_t num_prefills,
                               int64_t num_decode_tokens, int32_t* cu_seqlens_q,
                               int32_t* cu_seqlens_k) {
  if (num_prefills <= 0) return;
  ATTN_LAUNCH(exec, prefill_arrays_on, query_start_loc, seq_lens, num_prefills,
              num_decode_tokens, cu_seqlens_q, cu_seqlens_k);
}

void minimax_m3_query_token_positions(const Exec& exec, const int32_t* cu_seqlens_q,
                                      const int32_t* prefix_lens, int64_t num_prefills,
                                      int64_t num_tokens, int32_t* query_req_id,
                                      int32_t* query_abs_pos) {
  if (num_prefills <= 0 || num_tokens <= 0) return;
  ATTN_LAUNCH(exec, query_positions_on, cu_seqlens_q, prefix_lens, num_prefills, num_tokens,
              query_req_id, query_abs_pos);
}

void minimax_m3_msa_prefill_rows(const Exec& exec, const int32_t* cu_seqlens_q,
                                 int64_t num_prefills, const int64_t* positions,
                                 int64_t num_tokens, int32_t sparse_block_size,
                                 int32_t* num_valid_pages, int32_t* row_req_id,
                                 int32_t* kv_lens) {
  if (num_tokens <= 0) return;
  ATTN_LAUNCH(exec, msa_prefill_rows_on, cu_seqlens_q, num_prefills, positions, num_tokens,
              sparse_block_size, num_valid_pages, row_req_id, kv_lens);
}

void minimax_m3_page16_slot_mapping(const Exec& exec, const void* slot_mapping, bool slots_int64,
                                    int64_t n, int32_t block_size, int64_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, page16_slots_on, slot_mapping, slots_int64, n, block_size, out);
}

}  // namespace attn::ops
