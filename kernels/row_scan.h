// An exclusive scan inside one row of for_each_row (kernels/par.h), built on Lanes::exclusive_sum
// alone, so it runs alike on every executor: the ops whose items need running sums *and* work
// after the totals (padding, a closing entry) or several sums at once, in one launch
// (causal_conv1d_metadata, mamba_chunk_metadata, the GDN/KDA/PLE splits, gdn_chunk_metadata).
// A plain prefix sum with nothing after it is p.scan.
#pragma once

#include <cstdint>

#include "hd.h"
#include "par.h"

namespace attn::kernels {

/// K int64 sums of one item (row_scan's values, prefixes and totals).
template <int K>
struct Sums {
  int64_t v[K];
  ATTN_HD_INLINE int64_t operator[](int k) const { return v[k]; }
};

/// The sums of an item: a Sums<K> itself, or the member `sums` of an item that carries more
/// (what its body needs again, computed once by value).
template <int K>
ATTN_HD_INLINE const Sums<K>& sums_of(const Sums<K>& s) {
  return s;
}
template <int K, class T>
ATTN_HD_INLINE const Sums<K>& sums_of(const T& item) {
  return item.sums;
}

/// Scans the items i in [0, n) of one row, in order: value(i) gives the item (a Sums<K>, or a
/// default-constructible struct with a member `Sums<K> sums` and whatever else the body needs,
/// so that the body does not compute it again), then body(i, before, own) runs with own =
/// value(i) and before = the sums of value(k) over k < i. Returns the totals, the same in every
/// lane. The lanes take the items in tiles of lanes.count() (lane l item base + l; the items of
/// a tile run at once on CUDA), so a body must not read what another item's body writes. Every
/// lane must call it. On the host (one lane) it is a loop over the items with K running sums.
template <int K, class V, class B>
ATTN_HD_INLINE Sums<K> row_scan(const Lanes& lanes, int64_t n, V value, B body) {
  using Item = decltype(value(int64_t{0}));
  Sums<K> carry{};
  for (int64_t base = 0; base < n; base += lanes.count()) {
    const int64_t i = base + lanes.lane();
    Item own{};
    if (i < n) own = value(i);
    const Sums<K>& sums = sums_of<K>(own);
    Sums<K> before;
    for (int k = 0; k < K; ++k) {
      int64_t total = 0;
      before.v[k] = carry.v[k] + lanes.exclusive_sum(sums.v[k], &total);
      carry.v[k] += total;
    }
    if (i < n) body(i, before, own);
  }
  return carry;
}

}  // namespace attn::kernels
