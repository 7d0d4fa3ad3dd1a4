// vLLM 0.33's split_decodes_and_prefills (every option: require_uniform,
// treat_short_extends_as_decodes with is_prefilling) and split_decodes_prefills_and_extends
// (host-only: they read query_start_loc_cpu / seq_lens_cpu, as vLLM does).
#include "ops/batch_ops.h"

namespace attn::ops {
namespace {
int64_t query_len(const int32_t* qsl, int64_t i) {
  return static_cast<int64_t>(qsl[i + 1]) - qsl[i];
}

BatchSplit all_decodes(int64_t num_reqs, int64_t num_tokens) {
  BatchSplit s;
  s.num_decodes = num_reqs;
  s.num_decode_tokens = num_tokens;
  return s;
}

BatchSplit all_prefills(int64_t num_reqs, int64_t num_tokens) {
  BatchSplit s;
  s.num_prefills = num_reqs;
  s.num_prefill_tokens = num_tokens;
  return s;
}

/// The first i in [0, n) with pred(i), -1 when none: blocks of 16 tested without an early exit
/// (a loop the compiler vectorizes), then the exact index.
template <class Pred>
int64_t first_index(int64_t n, Pred pred) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    bool any = false;
    for (int64_t k = 0; k < 16; ++k) any |= pred(i + k);
    if (any) break;
  }
  for (; i < n; ++i)
    if (pred(i)) return i;
  return -1;
}

/// Decodes before request first_prefill, prefills from it on (all decodes when it is < 0).
BatchSplit split_at(const int32_t* qsl, int64_t num_reqs, int64_t num_tokens,
                    int64_t first_prefill) {
  if (first_prefill < 0) return all_decodes(num_reqs, num_tokens);
  BatchSplit s;
  s.num_decodes = first_prefill;
  s.num_prefills = num_reqs - first_prefill;
  s.num_decode_tokens = qsl[first_prefill];
  s.num_prefill_tokens = num_tokens - s.num_decode_tokens;
  return s;
}
}  // namespace

BatchSplit split_decodes_and_prefills(const int32_t* qsl, int64_t num_reqs, int64_t num_tokens,
                                      int64_t max_query_len, const SplitOptions& o) {
  const int64_t threshold = o.decode_threshold;
  // Without a mask no request is prefilling, and treat_short_extends_as_decodes=False splits as
  // True does unless require_uniform (there a first query of 0 splits differently): the O(1)
  // all-decodes answer applies (the Mamba family and GDN pass no mask when no flag is set).
  const bool short_as_decode = o.treat_short_extends_as_decodes ||
                               (o.is_prefilling == nullptr && !o.require_uniform);
  if (max_query_len <= threshold && (!o.require_uniform || threshold <= 1) && short_as_decode)
    return all_decodes(num_reqs, num_tokens);
  if (num_reqs == 0) return all_decodes(0, num_tokens);  // vLLM would index an empty batch
  const int64_t first_len = query_len(qsl, 0);
  if (first_len > threshold)  // the first request is not a decode: no decodes at all
    return all_prefills(num_reqs, num_tokens);
  const uint8_t* prefilling = short_as_decode ? nullptr : o.is_prefilling;
  // The first prefill, one loop per case (a loop testing the options per request cost 14
  // instructions a request: bench hybrid4_group/decode_256x4k splits twice). None found: all
  // decodes (split_at).
  int64_t first_prefill = -1;
  if (o.require_uniform)
    // A padded uniform batch (full CUDA graphs): zero-length requests are padding and count as
    // decodes, so that num_decodes matches the captured size.
    first_prefill = first_index(num_reqs, [&](int64_t i) {
      const int64_t q = query_len(qsl, i);
      return (q != first_len && q != 0) || (prefilling != nullptr && prefilling[i] != 0);
    });
  else if (prefilling != nullptr)
    first_prefill = first_index(num_reqs, [&](int64_t i) {
      return (query_len(qsl, i) > threshold) | (prefilling[i] != 0);  // | : no branch per request
    });
  else
    first_prefill = first_index(num_reqs, [&](int64_t i) { return query_len(qsl, i) > threshold; });
  return split_at(qsl, num_reqs, num_tokens, first_prefill);
}

BatchSplit split_decodes_prefills_and_extends(const int32_t* qsl, const int32_t* seq_lens,
                                              int64_t num_reqs, int64_t num_tokens,
                                              int64_t max_query_len, int32_t decode_threshold) {
  if (max_query_len <= decode_threshold) return all_decodes(num_reqs, num_tokens);
  // argmax over booleans: the first true index, 0 when none is true (numpy/torch semantics).
  int64_t first_extend = -1, first_prefill = -1;
  for (int64_t i = 0; i < num_reqs; ++i) {
    const int64_t q = query_len(qsl, i);
    const bool prefill_or_extend = q > decode_threshold;
    if (prefill_or_extend && first_extend < 0) first_extend = i;
    if (prefill_or_extend && seq_lens[i] == q && first_prefill < 0) first_prefill = i;
  }
  BatchSplit s;
  s.num_decodes = first_extend < 0 ? 0 : first_extend;
  s.num_decode_tokens = qsl[s.num_decodes];
  if (first_extend < 0) return s;
  const int64_t num_prefills_or_extends = num_reqs - s.num_decodes;
  const int64_t prefill_or_extend_tokens = num_tokens - s.num_decode_tokens;
  if (first_prefill < 0) {
    s.num_extends = num_prefills_or_extends;
    s.num_extend_tokens = prefill_or_extend_tokens;
    return s;
  }
  s.num_extends = first_prefill - s.num_decodes;
  s.num_prefills = num_reqs - first_prefill;
  s.num_prefill_tokens = num_tokens - qsl[first_prefill];
  s.num_extend_tokens = prefill_or_extend_tokens - s.num_prefill_tokens;
  return s;
}

}  // namespace attn::ops
