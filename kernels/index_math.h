// The small integer helpers every op uses, written once for the host and the device (ATTN_HD):
// Python's floor division and modulo, ceil division, clamps, the token-to-request search and
// vLLM's DCP local length. No other file defines them.
#pragma once

#include <cstdint>

#include "hd.h"

namespace attn::kernels {

template <class T>
ATTN_HD_INLINE constexpr T imin(T a, T b) { return b < a ? b : a; }
template <class T>
ATTN_HD_INLINE constexpr T imax(T a, T b) { return a < b ? b : a; }
template <class T>
ATTN_HD_INLINE constexpr T iclamp(T v, T lo, T hi) { return v < lo ? lo : (hi < v ? hi : v); }

/// Python's a // b: rounds toward negative infinity, for divisors of either sign (b != 0).
ATTN_HD_INLINE constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
/// Python's a % b: the sign of b (b != 0).
ATTN_HD_INLINE constexpr int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }
/// vLLM's cdiv(a, b) = -(-a // b).
ATTN_HD_INLINE constexpr int64_t cdiv(int64_t a, int64_t b) { return -floor_div(-a, b); }

/// The first index k in [0, n) with v[k] > x (n when none): searchsorted(v, x, right=True) on a
/// non-decreasing array. Reads only v[0 .. n).
template <class T, class X>
ATTN_HD_INLINE int64_t upper_bound(const T* v, int64_t n, X x) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (x < v[mid]) hi = mid; else lo = mid + 1;
  }
  return lo;
}

/// Merge path: of the first d items of the merge of the non-decreasing arrays a[0, m) and
/// b[0, n) (an a item before the b items equal to it), how many come from a. A run of the merge
/// starts at a[i], b[d - i] with i = merge_path_split(a, m, b, n, d), so runs of the merge are
/// merged independently. Reads only a[0, m) and b[0, n); 0 <= d <= m + n.
template <class A, class B>
ATTN_HD_INLINE int64_t merge_path_split(const A* a, int64_t m, const B* b, int64_t n, int64_t d) {
  int64_t lo = d > n ? d - n : 0, hi = d < m ? d : m;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;  // a[mid] and b[d - mid - 1] both exist
    if (int64_t{a[mid]} <= int64_t{b[d - mid - 1]}) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/// The request whose query holds token t: the first r < num_reqs with qsl[r + 1] > t, at most
/// num_reqs - 1 (the last request for a token at or past qsl[num_reqs]); -1 when num_reqs is 0.
ATTN_HD_INLINE int64_t request_of_token(const int32_t* qsl, int64_t num_reqs, int64_t t) {
  if (num_reqs <= 0) return -1;
  const int64_t r = upper_bound(qsl + 1, num_reqs, t);
  return r < num_reqs ? r : num_reqs - 1;
}

/// vLLM's get_dcp_local_seq_lens for one length and one rank: base = len // interleave //
/// dcp_size * interleave; local = base + clip(len - base * dcp_size - rank * interleave, 0,
/// interleave).
ATTN_HD_INLINE int32_t dcp_local_len(int64_t len, int32_t dcp_size, int32_t dcp_rank,
                                     int32_t interleave) {
  const int64_t base = floor_div(floor_div(len, interleave), dcp_size) * interleave;
  const int64_t rem = iclamp<int64_t>(len - base * dcp_size - int64_t{dcp_rank} * interleave, 0,
                                      interleave);
  return static_cast<int32_t>(base + rem);
}

}  // namespace attn::kernels
