// kernels/ordered_unique.h: the executor primitive with one implementation per kind of executor
// (stamps on the host, a hash table per row on a device). Both must give the same row on any
// input: random rows of candidates (zeros, repeats, a small and a large value range), compared
// with each other and with a naive reference. The hash version runs here with one lane, as the
// simulated device runs it; tests/gpu runs it with a block's lanes where a GPU exists.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "ordered_unique.h"

int main() {
  std::mt19937_64 rng(7);
  int failures = 0, rows_checked = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 16), cols = 1 + static_cast<int64_t>(rng() % 40);
    const int32_t num_values = iter % 2 ? 8 : 5000;
    std::vector<int32_t> cand(static_cast<size_t>(rows * cols));
    for (auto& v : cand) v = rng() % 4 == 0 ? 0 : 1 + static_cast<int32_t>(rng() % (num_values - 1));
    // Some rows end early: zeros past a random column, which the stamps version is told (and
    // does not read), the hash version is not.
    std::vector<int64_t> row_end(static_cast<size_t>(rows), cols);
    for (int64_t i = 0; i < rows; ++i) {
      if (rng() % 2) continue;
      row_end[i] = static_cast<int64_t>(rng() % (cols + 1));
      for (int64_t j = row_end[i]; j < cols; ++j) cand[static_cast<size_t>(i * cols + j)] = 0;
    }
    auto of = [&](int64_t i, int64_t j) { return cand[static_cast<size_t>(i * cols + j)]; };
    auto ends = [&](int64_t i) { return row_end[static_cast<size_t>(i)]; };

    std::vector<int32_t> naive;
    for (int32_t v : cand) {
      if (v == 0) continue;
      bool seen = false;
      for (int32_t w : naive) seen = seen || w == v;
      if (!seen) naive.push_back(v);
    }
    std::vector<int32_t> a(cand.size(), -7), b(cand.size(), -7), stamps(num_values, 0);
    const int64_t na = attn::kernels::ordered_unique_stamps(rows, cols, ends, of, a.data(), stamps.data());
    int64_t cap = 1;
    while (cap < 2 * rows * cols) cap <<= 1;
    std::vector<uint64_t> table(static_cast<size_t>(cap), 123);
    const int64_t nb = attn::kernels::ordered_unique_hash(attn::kernels::Lanes(), rows, cols, of,
                                                          b.data(), table.data(), cap);
    bool ok = na == static_cast<int64_t>(naive.size()) && nb == na;
    for (int64_t k = 0; ok && k < na; ++k) ok = a[k] == naive[k] && b[k] == naive[k];
    for (int32_t s : stamps) ok = ok && s == 0;  // the stamps are left as they were found
    if (!ok) {
      ++failures;
      std::fprintf(stderr, "FAILED iter %d: rows=%lld cols=%lld naive %zu, stamps %lld, hash %lld\n",
                   iter, static_cast<long long>(rows), static_cast<long long>(cols), naive.size(),
                   static_cast<long long>(na), static_cast<long long>(nb));
    }
    ++rows_checked;
  }
  std::printf("ordered_unique: %d rows, stamps and hash equal to the naive reference: %s\n",
              rows_checked, failures ? "NO" : "yes");
  return failures ? 1 : 0;
}
