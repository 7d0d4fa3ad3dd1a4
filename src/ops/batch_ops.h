// Batch operations: the one header of src/ops. Every op has a host implementation (the
// reference, used on CPU-only machines) and a CUDA implementation in kernels/, selected by
// Exec::on_cuda; tests compare the two wherever a GPU exists. Pointers are host pointers for a
// host Exec and device pointers for a CUDA one. Ops trust their callers (src/core and
// src/backends validate first) except where a check costs nothing.
#pragma once

#include <cstdint>

#include "ops/exec.h"

namespace attn::ops {

/// FlashAttention's cascade split (vLLM flash_attn.py, build(), use_cascade branch):
/// cu_prefix_query_lens = [0, num_actual_tokens], prefix_kv_lens = [common_prefix_len],
/// suffix_kv_lens[i] = seq_lens[i] - common_prefix_len for i < num_reqs. One fused pass.
void cascade_split(const Exec& exec, const int32_t* seq_lens, int64_t num_reqs,
                   int64_t num_actual_tokens, int64_t common_prefix_len,
                   int32_t* cu_prefix_query_lens, int32_t* prefix_kv_lens,
                   int32_t* suffix_kv_lens);

/// vLLM's get_dcp_local_seq_lens for one rank, of the context lengths
/// (seq_lens[i] - query_len[i]) as FlashAttention's DCP path computes them:
/// base = ctx // interleave // dcp_size * interleave; remainder = ctx - base * dcp_size;
/// out[i] = base + clip(remainder - dcp_rank * interleave, 0, interleave).
void dcp_context_kv_lens(const Exec& exec, const int32_t* query_start_loc,
                         const int32_t* seq_lens, int64_t num_reqs, int32_t dcp_size,
                         int32_t dcp_rank, int32_t interleave, int32_t* out);

/// Host reference of get_dcp_local_seq_lens for one length (shared by ops and tests of ops).
inline int32_t dcp_local_len(int64_t len, int32_t dcp_size, int32_t dcp_rank,
                             int32_t interleave) {
  // Python floor division; lengths are non-negative after validation, but keep floor semantics.
  auto floor_div = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  const int64_t base = floor_div(floor_div(len, interleave), dcp_size) * interleave;
  int64_t rem = len - base * dcp_size - static_cast<int64_t>(dcp_rank) * interleave;
  if (rem < 0) rem = 0;
  if (rem > interleave) rem = interleave;
  return static_cast<int32_t>(base + rem);
}

}  // namespace attn::ops
