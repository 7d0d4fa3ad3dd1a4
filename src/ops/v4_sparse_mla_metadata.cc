// DeepSeek V4 / V4.1 sparse MLA's computed arrays (vLLM 0.33's DeepseekV4SparseMLAMetadataBuilder:
// the block table's clamp_(min=0), get_compressed_slot_mapping's CompressedSlotMappingKernel and
// build_c128a_topk_metadata's Triton kernel), written once (src/ops/launch.h): a row per block
// table row; a fill of -1, then a row per request; a row per C128A row (its leader writes the
// decode length). No planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::imax;
using kernels::imin;
using kernels::Lanes;

ATTN_HD_INLINE int64_t slot_at(const void* slots, bool is64, int64_t t) {
  return is64 ? static_cast<const int64_t*>(slots)[t] : static_cast<const int32_t*>(slots)[t];
}

template <class P>
void clamp_block_table_on(P& p, int32_t* block_table, int64_t rows, int64_t cols,
                          int64_t stride) {
  p.for_each_row(rows, [=] ATTN_HD(int64_t r, Lanes lanes) {
    int32_t* row = block_table + r * stride;
    lanes.for_each(cols, [&](int64_t j) {
      if (row[j] < 0) row[j] = 0;
    });
  });
}

template <class P>
void v4_compressed_slots_on(P& p, const int32_t* qsl, const int32_t* seq_lens,
                            const void* slot_mapping, const int32_t* block_table,
                            const V4CompressedSlotsParams& prm, int64_t num_tokens, int64_t* out) {
  p.for_each(num_tokens, [=] ATTN_HD(int64_t t) { out[t] = -1; });
  const V4CompressedSlotsParams a = prm;
  p.for_each_row(a.num_reqs, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t start = qsl[r], q = qsl[r + 1] - qsl[r];
    const int64_t first = static_cast<int64_t>(seq_lens[r]) - q;
    // the rank-local position (C division, as Triton's): pos itself without DCP
    const int64_t span = static_cast<int64_t>(a.cp_interleave) * a.dcp_world_size;
    lanes.for_each(q, [&](int64_t i) {
      const int64_t pos = first + i;
      if ((pos + 1) % a.compress_ratio != 0 ||
          slot_at(slot_mapping, a.slots_int64, start + i) == -1)
        return;
      const int64_t local = pos / span * a.cp_interleave + pos % a.cp_interleave;
      const int64_t state = local / a.compress_ratio;
      const int64_t cell = r * a.block_table_stride + state / a.num_states;
      out[start + i] =
          cell < a.block_table_extent
              ? static_cast<int64_t>(block_table[cell]) * a.num_states + state % a.num_states
              : -1;
    });
  });
}

template <class P>
void v4_c128a_topk_on(P& p, const int64_t* positions, const int32_t* token_to_req,
                      const int32_t* block_table, const void* slot_mapping,
                      const C128aTopkParams& prm, int32_t* decode_indices, int32_t* decode_lens,
                      int32_t* prefill_indices) {
  const C128aTopkParams a = prm;
  p.for_each_row(a.num_decode_tokens + a.num_prefill_tokens, [=] ATTN_HD(int64_t t, Lanes lanes) {
    const int64_t n = imin<int64_t>((positions[t] + 1) / a.compress_ratio, a.width);
    if (t < a.num_decode_tokens) {
      int32_t* row = decode_indices + t * a.row_stride;
      const int64_t base = static_cast<int64_t>(token_to_req[t]) * a.block_table_stride;
      lanes.for_each(a.width, [&](int64_t j) {
        const int64_t cell = base + j / a.block_size;
        // int32 arithmetic, as the Triton kernel's
        row[j] = j < n && cell >= 0 && cell < a.block_table_extent
                     ? static_cast<int32_t>(static_cast<uint32_t>(block_table[cell]) *
                                                static_cast<uint32_t>(a.block_size) +
                                            static_cast<uint32_t>(j % a.block_size))
                     : -1;
      });
      if (lanes.leader())
        decode_lens[t] = slot_at(slot_mapping, a.slots_int64, t) >= 0
                             ? static_cast<int32_t>(imax<int64_t>(n, 0))
                             : 0;
    } else {
      int32_t* row = prefill_indices + (t - a.num_decode_tokens) * a.row_stride;
      lanes.for_each(a.width, [&](int64_t j) { row[j] = j < n ? static_cast<int32_t>(j) : -1; });
    }
  });
}

}  // namespace

void clamp_block_table(const Exec& exec, int32_t* block_table, int64_t rows, int64_t cols,
                       int64_t stride) {
  if (rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, clamp_block_table_on, block_table, rows, cols, stride);
}

void v4_compressed_slot_mapping(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                                const void* slot_mapping, const int32_t* block_table,
                                const V4CompressedSlotsParams& p, int64_t num_tokens,
                                int64_t* out) {
  if (num_tokens <= 0 && p.num_reqs <= 0) return;
  ATTN_LAUNCH(exec, v4_compressed_slots_on, qsl, seq_lens, slot_mapping, block_table, p,
              num_tokens, out);
}

void v4_c128a_topk_metadata(const Exec& exec, const int64_t* positions, const int32_t* token_to_req,
                            const int32_t* block_table, const void* slot_mapping,
                            const C128aTopkParams& p, int32_t* decode_indices, int32_t* decode_lens,
                            int32_t* prefill_indices) {
  if (p.num_decode_tokens + p.num_prefill_tokens <= 0) return;
  ATTN_LAUNCH(exec, v4_c128a_topk_on, positions, token_to_req, block_table, slot_mapping, p,
              decode_indices, decode_lens, prefill_indices);
}

}  // namespace attn::ops
