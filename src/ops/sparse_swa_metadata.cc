// DEEPSEEK_SPARSE_SWA's computed arrays (vLLM 0.33's DeepseekSparseSWAMetadataBuilder: the
// validity mask, the Triton kernels _compute_swa_indices_and_lens_kernel and
// ComputePrefillMetadataKernel); host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void sparse_swa_valid_tokens(const Exec& exec, const void* slot_mapping, bool slots_int64,
                             int64_t n, uint8_t* out) {
  if (n <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, sparse_swa_valid_tokens, slot_mapping, slots_int64, n, out);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t s = slots_int64 ? static_cast<const int64_t*>(slot_mapping)[t]
                                  : static_cast<const int32_t*>(slot_mapping)[t];
    out[t] = s >= 0 ? 1 : 0;
  }
}

void sparse_swa_indices(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                        const int32_t* token_to_req, const uint8_t* is_valid,
                        const int32_t* block_table, const int32_t* replay_start,
                        const SwaIndicesParams& p, int32_t* indices, int32_t* lens) {
  if (p.num_tokens <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, sparse_swa_indices, qsl, seq_lens, token_to_req, is_valid,
                            block_table, replay_start, p, indices, lens);
  for (int64_t i = 0; i < p.num_tokens; ++i) {
    const int64_t t = p.token_offset + i;
    int32_t* row = indices + i * p.index_width;
    const int64_t r = token_to_req[t];  // -1 only in a batch of no request (vLLM: index -1)
    if (!is_valid[t] || r < 0) {
      lens[i] = 0;
      std::fill(row, row + p.index_width, -1);
      continue;
    }
    const int64_t prefix = static_cast<int64_t>(seq_lens[r]) - (qsl[r + 1] - qsl[r]);
    const int64_t pos = prefix + t - qsl[r];
    // causal: [max(pos - (w - 1), 0, replay), pos + 1); DSpark: [max(prefix - w, 0), seq_len)
    const int64_t start =
        p.noncausal ? std::max<int64_t>(prefix - p.window_size, 0)
                    : std::max<int64_t>(std::max<int64_t>(pos - (p.window_size - 1), 0),
                                        replay_start[r]);
    const int64_t len = (p.noncausal ? int64_t{seq_lens[r]} : pos + 1) - start;
    lens[i] = static_cast<int32_t>(len);
    // The window's entries walk the block table: one division for the first, then a block and
    // an offset carried along (the same values as at / block_size and at % block_size).
    int64_t cell = r * p.block_table_stride + start / p.block_size;
    int64_t offset = start % p.block_size;
    const int64_t filled = std::min<int64_t>(std::max<int64_t>(len, 0), p.index_width);
    for (int64_t j = 0; j < filled; ++j) {
      // int32 arithmetic, as the Triton kernel's
      row[j] = cell < p.block_table_extent
                   ? static_cast<int32_t>(static_cast<uint32_t>(block_table[cell]) *
                                              static_cast<uint32_t>(p.block_size) +
                                          static_cast<uint32_t>(offset))
                   : -1;
      if (++offset == p.block_size) {
        offset = 0;
        ++cell;
      }
    }
    std::fill(row + filled, row + p.index_width, -1);
  }
}

void sparse_swa_prefill_gather_lens(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                    const int32_t* replay_start, int64_t num_decodes,
                                    int64_t num_prefills, int32_t window_size, int32_t* out) {
  if (num_prefills <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, sparse_swa_prefill_gather_lens, qsl, seq_lens, replay_start,
                            num_decodes, num_prefills, window_size, out);
  for (int64_t k = 0; k < num_prefills; ++k) {
    const int64_t r = num_decodes + k;
    const int64_t q = qsl[r + 1] - qsl[r];
    const int64_t visible = std::max<int64_t>(seq_lens[r] - q - replay_start[r], 0);
    out[k] = static_cast<int32_t>(q + std::min<int64_t>(visible, window_size - 1));
  }
}

void sparse_swa_flashinfer_decode_lens(const Exec& exec, const int32_t* decode_swa_lens,
                                       const int32_t* seq_lens, const int32_t* token_to_req,
                                       int64_t n, int32_t window_size, int32_t* topk_lens,
                                       int32_t* decode_seq_lens) {
  if (n <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, sparse_swa_flashinfer_decode_lens, decode_swa_lens, seq_lens,
                            token_to_req, n, window_size, topk_lens, decode_seq_lens);
  for (int64_t t = 0; t < n; ++t) {
    topk_lens[t] = std::max(decode_swa_lens[t], window_size);
    decode_seq_lens[t] = seq_lens[token_to_req[t]];
  }
}

}  // namespace attn::ops
