// ops::split_decodes_and_prefills against a naive restatement of vLLM 0.33's
// split_decodes_and_prefills (vllm/v1/attention/backends/utils.py), on random reordered batches
// and every option: decode threshold, require_uniform, treat_short_extends_as_decodes with an
// is_prefilling mask or none (null: no request is prefilling, which the Mamba family and GDN
// pass for a step without prefilling rows so that a decode-only step takes the O(1) answer).
// Guards the op's fast paths: each must give what the naive per-request rule gives.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "ops/batch_ops.h"

namespace {

struct Split {
  int64_t nd, np, ndt, npt;
  bool operator==(const Split& o) const {
    return nd == o.nd && np == o.np && ndt == o.ndt && npt == o.npt;
  }
};

// vLLM's function step by step; a null mask is all zeros (vLLM asserts a mask there; the ABI
// refuses NULL, only libattn's own callers pass none).
Split naive(const std::vector<int32_t>& qsl, int64_t n, int64_t tokens, int64_t max_q,
            int32_t thr, bool uniform, bool short_as_decode, const uint8_t* mask) {
  const Split all_decodes{n, 0, tokens, 0};
  if (max_q <= thr && (!uniform || thr <= 1) && short_as_decode) return all_decodes;
  if (n == 0) return all_decodes;  // libattn's answer for the empty batch vLLM cannot index
  auto q = [&](int64_t i) { return int64_t{qsl[i + 1]} - qsl[i]; };
  if (q(0) > thr) return {0, n, 0, tokens};
  std::vector<bool> is_prefill(static_cast<size_t>(n));
  if (uniform) {
    bool padded_uniform = true;
    for (int64_t i = 0; i < n; ++i) padded_uniform = padded_uniform && (q(i) == q(0) || q(i) == 0);
    if (short_as_decode && padded_uniform) return all_decodes;
    for (int64_t i = 0; i < n; ++i) is_prefill[i] = q(i) != q(0) && q(i) != 0;
  } else {
    for (int64_t i = 0; i < n; ++i) is_prefill[i] = q(i) > thr;
  }
  if (!short_as_decode)
    for (int64_t i = 0; i < n; ++i) is_prefill[i] = is_prefill[i] || (mask && mask[i] != 0);
  for (int64_t i = 0; i < n; ++i)
    if (is_prefill[i]) return {i, n - i, qsl[i], tokens - qsl[i]};
  return all_decodes;
}

}  // namespace

int main() {
  std::mt19937_64 rng(11);
  int failures = 0, checked = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const int64_t n = static_cast<int64_t>(rng() % 40);
    const int32_t thr = 1 + static_cast<int32_t>(rng() % 4);
    // reordered: decodes (0..thr tokens, zero-length padding among them), then longer ones
    const int64_t first_long = n == 0 ? 0 : static_cast<int64_t>(rng() % (n + 1));
    std::vector<int32_t> qsl(static_cast<size_t>(n + 1), 0);
    int64_t max_q = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int32_t len = i < first_long ? static_cast<int32_t>(rng() % (thr + 1))
                                         : thr + 1 + static_cast<int32_t>(rng() % 50);
      qsl[i + 1] = qsl[i] + len;
      max_q = len > max_q ? len : max_q;
    }
    const int64_t tokens = qsl[n];
    // the mask: none, all zero, or a few rows set (short extends among the decodes)
    std::vector<uint8_t> mask(static_cast<size_t>(n), 0);
    const int mask_kind = static_cast<int>(rng() % 3);
    if (mask_kind == 2)
      for (auto& m : mask) m = rng() % 5 == 0;
    const uint8_t* mask_ptr = mask_kind == 0 ? nullptr : mask.data();
    for (int opts = 0; opts < 4; ++opts) {
      attn::ops::SplitOptions o;
      o.decode_threshold = thr;
      o.require_uniform = (opts & 1) != 0;
      o.treat_short_extends_as_decodes = (opts & 2) != 0;
      o.is_prefilling = mask_ptr;
      const attn::ops::BatchSplit s =
          attn::ops::split_decodes_and_prefills(qsl.data(), n, tokens, max_q, o);
      const Split got{s.num_decodes, s.num_prefills, s.num_decode_tokens, s.num_prefill_tokens};
      const Split want = naive(qsl, n, tokens, max_q, thr, o.require_uniform,
                               o.treat_short_extends_as_decodes, mask_ptr);
      ++checked;
      if (!(got == want) && failures++ < 10)
        std::fprintf(stderr,
                     "iter %d n=%lld thr=%d uniform=%d short_as_decode=%d mask=%d: got "
                     "(%lld, %lld, %lld, %lld), vLLM's rule (%lld, %lld, %lld, %lld)\n",
                     iter, static_cast<long long>(n), thr, o.require_uniform,
                     o.treat_short_extends_as_decodes, mask_kind,
                     static_cast<long long>(got.nd), static_cast<long long>(got.np),
                     static_cast<long long>(got.ndt), static_cast<long long>(got.npt),
                     static_cast<long long>(want.nd), static_cast<long long>(want.np),
                     static_cast<long long>(want.ndt), static_cast<long long>(want.npt));
    }
  }
  std::printf("split_decodes_and_prefills: %d splits checked against vLLM's rule, %d differ\n",
              checked, failures);
  return failures == 0 ? 0 : 1;
}
