// DeepSeek V4 / V4.1 sparse MLA's computed arrays (vLLM 0.33's DeepseekV4SparseMLAMetadataBuilder:
// the block table's clamp_(min=0), get_compressed_slot_mapping's CompressedSlotMappingKernel and
// build_c128a_topk_metadata's Triton kernel); host reference and CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {
namespace {

int64_t slot_at(const void* slots, bool is64, int64_t t) {
  return is64 ? static_cast<const int64_t*>(slots)[t] : static_cast<const int32_t*>(slots)[t];
}

}  // namespace

void clamp_block_table(const Exec& exec, int32_t* block_table, int64_t rows, int64_t cols,
                       int64_t stride) {
  if (rows <= 0 || cols <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, clamp_block_table, block_table, rows, cols, stride);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      block_table[r * stride + j] = std::max(block_table[r * stride + j], 0);
}

void v4_compressed_slot_mapping(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                const void* slot_mapping, const int32_t* block_table,
                                const V4CompressedSlotsParams& p, int64_t num_tokens,
                                int64_t* out) {
  if (num_tokens <= 0 && p.num_reqs <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, v4_compressed_slot_mapping, qsl, seq_lens, slot_mapping,
                            block_table, p, num_tokens, out);
  std::fill(out, out + std::max<int64_t>(num_tokens, 0), int64_t{-1});
  for (int64_t r = 0; r < p.num_reqs; ++r) {
    const int64_t start = qsl[r], q = qsl[r + 1] - qsl[r];
    const int64_t first = static_cast<int64_t>(seq_lens[r]) - q;
    for (int64_t i = 0; i < q; ++i) {
      const int64_t pos = first + i;
      if ((pos + 1) % p.compress_ratio != 0 ||
          slot_at(slot_mapping, p.slots_int64, start + i) == -1)
        continue;
      // the rank-local position (C division, as Triton's): pos itself without DCP
      const int64_t span = static_cast<int64_t>(p.cp_interleave) * p.dcp_world_size;
      const int64_t local = pos / span * p.cp_interleave + pos % p.cp_interleave;
      const int64_t state = local / p.compress_ratio;
      const int64_t cell = r * p.block_table_stride + state / p.num_states;
      out[start + i] =
          cell < p.block_table_extent
              ? static_cast<int64_t>(block_table[cell]) * p.num_states + state % p.num_states
              : -1;
    }
  }
}

void v4_c128a_topk_metadata(const Exec& exec, const int64_t* positions, const int32_t* token_to_req,
                            const int32_t* block_table, const void* slot_mapping,
                            const C128aTopkParams& p, int32_t* decode_indices, int32_t* decode_lens,
                            int32_t* prefill_indices) {
  if (p.num_decode_tokens + p.num_prefill_tokens <= 0) return;
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, v4_c128a_topk_metadata, positions, token_to_req, block_table,
                            slot_mapping, p, decode_indices, decode_lens, prefill_indices);
  for (int64_t t = 0; t < p.num_decode_tokens + p.num_prefill_tokens; ++t) {
    const int64_t n = std::min<int64_t>((positions[t] + 1) / p.compress_ratio, p.width);
    if (t < p.num_decode_tokens) {
      int32_t* row = decode_indices + t * p.row_stride;
      const int64_t base = static_cast<int64_t>(token_to_req[t]) * p.block_table_stride;
      for (int64_t j = 0; j < p.width; ++j) {
        const int64_t cell = base + j / p.block_size;
        // int32 arithmetic, as the Triton kernel's
        row[j] = j < n && cell >= 0 && cell < p.block_table_extent
                     ? static_cast<int32_t>(static_cast<uint32_t>(block_table[cell]) *
                                                static_cast<uint32_t>(p.block_size) +
                                            static_cast<uint32_t>(j % p.block_size))
                     : -1;
      }
      decode_lens[t] = slot_at(slot_mapping, p.slots_int64, t) >= 0
                           ? static_cast<int32_t>(std::max<int64_t>(n, 0))
                           : 0;
    } else {
      int32_t* row = prefill_indices + (t - p.num_decode_tokens) * p.row_stride;
      for (int64_t j = 0; j < p.width; ++j) row[j] = j < n ? static_cast<int32_t>(j) : -1;
    }
  }
}

}  // namespace attn::ops
