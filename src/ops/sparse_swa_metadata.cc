// DEEPSEEK_SPARSE_SWA's computed arrays (vLLM 0.33's DeepseekSparseSWAMetadataBuilder: the
// validity mask, the Triton kernels _compute_swa_indices_and_lens_kernel and
// ComputePrefillMetadataKernel), written once (src/ops/launch.h): one item per token, one row per
// index row (its lanes over the row's entries), one item per prefill, one item per decode token.
// No planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::iclamp;
using kernels::imax;
using kernels::imin;
using kernels::Lanes;

template <class P>
void valid_tokens_on(P& p, const void* slot_mapping, bool slots_int64, int64_t n, uint8_t* out) {
  if (slots_int64) {
    const auto* s = static_cast<const int64_t*>(slot_mapping);
    p.for_each(n, [=] ATTN_HD(int64_t t) { out[t] = s[t] >= 0 ? 1 : 0; });
  } else {
    const auto* s = static_cast<const int32_t*>(slot_mapping);
    p.for_each(n, [=] ATTN_HD(int64_t t) { out[t] = s[t] >= 0 ? 1 : 0; });
  }
}

template <class P>
void swa_indices_on(P& p, const int32_t* qsl, const int32_t* seq_lens, const int32_t* token_to_req,
                    const uint8_t* is_valid, const int32_t* block_table,
                    const int32_t* replay_start, const SwaIndicesParams& prm, int32_t* indices,
                    int32_t* lens) {
  const SwaIndicesParams a = prm;
  p.for_each_row(a.num_tokens, [=] ATTN_HD(int64_t i, Lanes lanes) {
    const int64_t t = a.token_offset + i;
    int32_t* row = indices + i * a.index_width;
    const int64_t r = token_to_req[t];  // -1 only in a batch of no request (vLLM: index -1)
    int64_t filled = 0;
    if (is_valid[t] && r >= 0) {
      const int64_t prefix = static_cast<int64_t>(seq_lens[r]) - (qsl[r + 1] - qsl[r]);
      const int64_t pos = prefix + t - qsl[r];
      // causal: [max(pos - (w - 1), 0, replay), pos + 1); DSpark: [max(prefix - w, 0), seq_len)
      const int64_t start =
          a.noncausal ? imax<int64_t>(prefix - a.window_size, 0)
                      : imax<int64_t>(imax<int64_t>(pos - (a.window_size - 1), 0), replay_start[r]);
      const int64_t len = (a.noncausal ? int64_t{seq_lens[r]} : pos + 1) - start;
      if (lanes.leader()) lens[i] = static_cast<int32_t>(len);
      filled = iclamp<int64_t>(len, 0, a.index_width);
      // Each lane walks its entries j = lane, lane + lanes, ... of the window through the block
      // table: one division for its first, then a block and an offset carried along (the same
      // values as at / block_size and at % block_size).
      const int64_t at = start + lanes.lane();
      int64_t cell = r * a.block_table_stride + at / a.block_size;
      int64_t offset = at % a.block_size;
      const int64_t step_cells = lanes.count() / a.block_size;
      const int64_t step_offset = lanes.count() % a.block_size;
      lanes.for_each(filled, [&](int64_t j) {
        // int32 arithmetic, as the Triton kernel's
        row[j] = cell < a.block_table_extent
                     ? static_cast<int32_t>(static_cast<uint32_t>(block_table[cell]) *
                                                static_cast<uint32_t>(a.block_size) +
                                            static_cast<uint32_t>(offset))
                     : -1;
        cell += step_cells;
        offset += step_offset;
        if (offset >= a.block_size) {
          offset -= a.block_size;
          ++cell;
        }
      });
    } else if (lanes.leader()) {
      lens[i] = 0;
    }
    lanes.for_each(a.index_width - filled, [&](int64_t j) { row[filled + j] = -1; });
  });
}

template <class P>
void prefill_gather_lens_on(P& p, const int32_t* qsl, const int32_t* seq_lens,
                            const int32_t* replay_start, int64_t num_decodes, int64_t num_prefills,
                            int32_t window_size, int32_t* out) {
  p.for_each(num_prefills, [=] ATTN_HD(int64_t k) {
    const int64_t r = num_decodes + k;
    const int64_t q = qsl[r + 1] - qsl[r];
    const int64_t visible = imax<int64_t>(seq_lens[r] - q - replay_start[r], 0);
    out[k] = static_cast<int32_t>(q + imin<int64_t>(visible, window_size - 1));
  });
}

template <class P>
void flashinfer_decode_lens_on(P& p, const int32_t* decode_swa_lens, const int32_t* seq_lens,
                               const int32_t* token_to_req, int64_t n, int32_t window_size,
                               int32_t* topk_lens, int32_t* decode_seq_lens) {
  p.for_each(n, [=] ATTN_HD(int64_t t) {
    topk_lens[t] = imax(decode_swa_lens[t], window_size);
    decode_seq_lens[t] = seq_lens[token_to_req[t]];
  });
}

}  // namespace

void sparse_swa_valid_tokens(const Exec& exec, const void* slot_mapping, bool slots_int64,
                             int64_t n, uint8_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, valid_tokens_on, slot_mapping, slots_int64, n, out);
}

void sparse_swa_indices(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                        const int32_t* token_to_req, const uint8_t* is_valid,
                        const int32_t* block_table, const int32_t* replay_start,
                        const SwaIndicesParams& p, int32_t* indices, int32_t* lens) {
  if (p.num_tokens <= 0) return;
  ATTN_LAUNCH(exec, swa_indices_on, qsl, seq_lens, token_to_req, is_valid, block_table,
              replay_start, p, indices, lens);
}

void sparse_swa_prefill_gather_lens(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                    const int32_t* replay_start, int64_t num_decodes,
                                    int64_t num_prefills, int32_t window_size, int32_t* out) {
  if (num_prefills <= 0) return;
  ATTN_LAUNCH(exec, prefill_gather_lens_on, qsl, seq_lens, replay_start, num_decodes,
              num_prefills, window_size, out);
}

void sparse_swa_flashinfer_decode_lens(const Exec& exec, const int32_t* decode_swa_lens,
                                       const int32_t* seq_lens, const int32_t* token_to_req,
                                       int64_t n, int32_t window_size, int32_t* topk_lens,
                                       int32_t* decode_seq_lens) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, flashinfer_decode_lens_on, decode_swa_lens, seq_lens, token_to_req, n,
              window_size, topk_lens, decode_seq_lens);
}

}  // namespace attn::ops
