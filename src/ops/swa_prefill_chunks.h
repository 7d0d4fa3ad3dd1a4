// swa_prefill_chunk_plan / swa_prefill_chunk_tensors: the per-request latent-cache gathers of a
// sliding-window MLA prefill (DOTS3_NOTE_TRITON_MLA, vLLM 0.33's _build_sliding_window_metadata
// in models/dots3_note/nvidia/attention.py).
#pragma once

#include <cstdint>

#include "ops/exec.h"

namespace attn::ops {

/// The plan's per-chunk host lists (each at least as long as the prefills; null: not written).
struct SwaChunkLists {
  int32_t* req_start = nullptr;    ///< First prefill request of the chunk.
  int32_t* req_end = nullptr;      ///< One past its last.
  int32_t* query_start = nullptr;  ///< query_start_loc[req_start] (the prefills' own offsets).
  int32_t* query_end = nullptr;    ///< query_start_loc[req_end].
  int32_t* num_kv_tokens = nullptr;
  int32_t* max_seq_len_q = nullptr;
  int32_t* max_seq_len_k = nullptr;
  int32_t* token_end = nullptr;  ///< The chunks' num_kv_tokens summed up to this one's.
};

/// The chunks of `num_reqs` prefills (host memory: query_start_loc, num_reqs + 1 offsets from
/// any base; seq_lens, the upper bounds vLLM plans from): request r reads kv_len = min(seq_lens[r],
/// query_len + window - 1) latent rows, and a chunk takes requests while their rows fit in
/// `workspace` (the first always). Returns the number of chunks; writes `out`'s lists where
/// set. Error(kInvalidArgument) when a request's rows exceed the workspace (vLLM's ValueError),
/// before anything is written. Host only (vLLM plans on the CPU).
int64_t swa_prefill_chunk_plan(const int32_t* query_start_loc, const int32_t* seq_lens,
                               int64_t num_reqs, int32_t window, int64_t workspace,
                               const SwaChunkLists& out);

/// What swa_prefill_chunk_tensors reads and writes (all where `exec` runs).
struct SwaChunkTensorArgs {
  const int32_t* query_start_loc = nullptr;  ///< The prefills' offsets, num_reqs + 1.
  const int32_t* seq_lens = nullptr;         ///< The lengths the KV rows are cut from.
  const int32_t* req_start = nullptr;        ///< The plan's lists, num_chunks each.
  const int32_t* req_end = nullptr;
  const int32_t* token_end = nullptr;
  int64_t num_chunks = 0;
  int64_t num_tokens = 0;  ///< token_end[num_chunks - 1].
  int32_t window = 0;
  int32_t* cu_seq_lens_q = nullptr;  ///< num_reqs + num_chunks: chunk c's at req_start[c] + c.
  int32_t* cu_seq_lens_k = nullptr;  ///< The same layout.
  int32_t* starts = nullptr;         ///< num_reqs: seq_lens - kv_len.
  int32_t* token_to_seq = nullptr;   ///< num_tokens: chunk c's from token_end[c - 1].
};

/// The chunks' tensors: per chunk its cu_seq_lens_q / _k (0, then the running sums of the query
/// lengths / of kv_len = min(seq_lens, query_len + window - 1)), per request starts = seq_lens
/// - kv_len, and per chunk token t < its num_kv_tokens the request of the chunk whose rows hold
/// it, searchsorted(cu_seq_lens_k[1:], t, right=True) clamped to the chunk's last request (rows
/// past the chunk's KV, when seq_lens are below the plan's bounds, are its last request's).
void swa_prefill_chunk_tensors(const Exec& exec, const SwaChunkTensorArgs& a);

}  // namespace attn::ops
