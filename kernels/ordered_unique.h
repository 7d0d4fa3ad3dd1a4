// An executor primitive beside kernels/par.h's: the distinct values of a row of candidates in
// order of first appearance (what FLEX_ATTENTION's block mask keeps of its block ids). Generic,
// like a scan, and so written once per kind of executor rather than once per op:
//  - ordered_unique_stamps: the host's, one pass with a stamp per value (scratch of num_values
//    int32, zero on entry and on return), for rows that run one at a time;
//  - ordered_unique_hash: the device's, for rows whose lanes run concurrently: an open-addressing
//    table per row keeps each value's first position (atomic CAS / min), then a block-wide scan
//    compacts the kept positions in order. It is correct with any number of lanes, one included,
//    so the simulated device runs it as the GPU does.
// tests/cxx/test_ordered_unique.cc checks that the two agree on random rows.
#pragma once

#include <cstdint>

#include "hd.h"
#include "index_math.h"
#include "par.h"

namespace attn::kernels {

/// out[0 .. k) = the distinct non-zero values of candidate(i, j) (i < rows, j < cols, read row by
/// row), each at its first appearance; returns k. Values lie in (0, num_values); `seen` holds
/// num_values int32, all zero on entry and again on return. `row_cols(i)`: a bound past which
/// row i's candidates are all 0 (the row is read up to min(cols, row_cols(i)) only; the hash
/// version reads every column and gets the same result).
template <class L, class C>
ATTN_HD int64_t ordered_unique_stamps(int64_t rows, int64_t cols, L row_cols, C candidate,
                                      int32_t* out, int32_t* seen) {
  int64_t count = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0, end = imin<int64_t>(cols, row_cols(i)); j < end; ++j) {
      const int32_t v = candidate(i, j);
      if (v == 0 || seen[v] != 0) continue;
      seen[v] = 1;
      out[count++] = v;
    }
  for (int64_t k = 0; k < count; ++k) seen[out[k]] = 0;
  return count;
}

namespace unique_detail {
constexpr uint64_t kEmpty = 0xffffffffull;  // high 32 bits 0: no value; low bits: no position
ATTN_HD_INLINE uint32_t slot_of(int32_t v, int64_t cap) {
  return (static_cast<uint32_t>(v) * 2654435761u) & static_cast<uint32_t>(cap - 1);
}
}  // namespace unique_detail

/// The same result by the device's algorithm, every lane of `lanes` calling it: `table` holds
/// `cap` (a power of two >= 2 * rows * cols) uint64 entries of this row's own; each entry is the
/// value (high 32 bits) and the smallest position p = i * cols + j it was seen at (low 32 bits).
template <class C>
ATTN_HD int64_t ordered_unique_hash(Lanes lanes, int64_t rows, int64_t cols, C candidate,
                                    int32_t* out, uint64_t* table, int64_t cap) {
  using unique_detail::kEmpty;
  using unique_detail::slot_of;
  const int64_t n = rows * cols;
  const auto mask = static_cast<uint32_t>(cap - 1);
  lanes.for_each(cap, [&](int64_t k) { table[k] = kEmpty; });
  lanes.sync();
  lanes.for_each(n, [&](int64_t p) {
    const int32_t v = candidate(p / cols, p % cols);
    if (v == 0) return;
    const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(v)) << 32;
    for (uint32_t h = slot_of(v, cap);; h = (h + 1) & mask) {
      uint64_t cur = table[h];
      if ((cur >> 32) == 0) {
        const uint64_t prev = atomic_cas_u64(&table[h], cur, key | static_cast<uint32_t>(p));
        if (prev == cur) break;
        cur = prev;
      }
      if ((cur >> 32) == (key >> 32)) {
        atomic_min_u64(&table[h], key | static_cast<uint32_t>(p));
        break;
      }
    }
  });
  lanes.sync();
  int64_t count = 0;
  for (int64_t base = 0; base < n; base += lanes.count()) {
    const int64_t p = base + lanes.lane();
    const int32_t v = p < n ? candidate(p / cols, p % cols) : 0;
    int64_t keep = 0;
    if (v != 0)
      for (uint32_t h = slot_of(v, cap);; h = (h + 1) & mask) {
        const uint64_t cur = table[h];
        if ((cur >> 32) == static_cast<uint32_t>(v)) {
          keep = static_cast<int64_t>(cur & 0xffffffffull) == p;
          break;
        }
      }
    int64_t total = 0;
    const int64_t dest = lanes.exclusive_sum(keep, &total);
    if (keep) out[count + dest] = v;
    count += total;
  }
  return count;
}

}  // namespace attn::kernels
