// The memory-bound reference of the benchmarks: the time of one memcpy of N bytes, measured in
// the same run as the op it is compared with.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "callgrind_rows.h"

namespace attn_bench {

// Nanoseconds of one memcpy of `bytes` (fresh buffers), the best of several timed batches.
// 0 under valgrind (scripts/bench_instructions.sh counts instructions, not time).
inline double memcpy_ns(int64_t bytes) {
  if (bytes <= 0 || under_valgrind()) return 0;
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const int iters = static_cast<int>(std::max<int64_t>(1, (int64_t{1} << 26) / bytes));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      std::memcpy(dst.data(), src.data(), static_cast<size_t>(bytes));
      benchmark::DoNotOptimize(dst.data());
      benchmark::ClobberMemory();
    }
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
  }
  return best;
}

}  // namespace attn_bench
