// Instruction counts per row, for comparisons that wall time on a shared machine cannot settle
// (issue 31: the same row moved by 60% between rounds on the 2-vCPU VM). Under callgrind started
// with --instr-atstart=no (scripts/bench_instructions.sh), a row's timed loop is the only code
// instrumented, and its counts are written to a dump named after the row; everywhere else these
// are a few no-op instructions outside the timed loops. Without valgrind's headers they compile
// to nothing.
#pragma once

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define ATTN_BENCH_HAVE_CALLGRIND 1
#endif
#endif

#include <benchmark/benchmark.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace attn_bench {

// True under valgrind: the memcpy references (tens of MiB per row) are skipped there.
inline bool under_valgrind() {
#ifdef ATTN_BENCH_HAVE_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

// Google Benchmark's name of a row registered with arguments: "name/a/b".
inline std::string row_name(const std::string& name, std::initializer_list<int64_t> args) {
  std::string out = name;
  for (int64_t a : args) out += "/" + std::to_string(a);
  return out;
}

// Brackets one row's timed loop: counting starts at construction; end() stops it and dumps the
// counts with the description "<row> iterations=<n>".
struct CountedLoop {
  CountedLoop() {
#ifdef ATTN_BENCH_HAVE_CALLGRIND
    CALLGRIND_ZERO_STATS;
    CALLGRIND_START_INSTRUMENTATION;
#endif
  }
  // A row whose loop hit an error (SkipWithError) dumps with iterations=0, which
  // bench/instructions.py ignores: its count would be the refusal's.
  void end(const std::string& row, const benchmark::State& state) {
#ifdef ATTN_BENCH_HAVE_CALLGRIND
    CALLGRIND_STOP_INSTRUMENTATION;
    const long long n = state.error_occurred() ? 0 : static_cast<long long>(state.iterations());
    const std::string what = row + " iterations=" + std::to_string(n);
    CALLGRIND_DUMP_STATS_AT(what.c_str());
#else
    (void)row;
    (void)state;
#endif
  }
};

}  // namespace attn_bench
