// How an op's algorithm is run: the executor ("par") it is written against, once
// (docs/architecture.md, "An op, written once").
//
// An op is a function template over its executor P:
//
//   template <class P>
//   void fill_on(P& p, int32_t* out, int64_t n, int32_t value) {
//     p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = value; });
//   }
//
// and src/ops/launch.h runs it with HostPar (the calling thread, host memory), CudaPar (kernels
// on a CUDA stream; par_cuda.cuh, nvcc only) or SimPar (the simulated device; par_sim.h). Every
// executor has the same five primitives:
//   for_each(n, f)        f(i) for i in [0, n), independently (a grid-stride kernel on CUDA);
//   for_each_row(n, f)    f(r, lanes) for r in [0, n): one row per CUDA block, whose threads
//                         share the row's columns through `lanes` (Lanes below: for_each,
//                         copy, copy_strided, sync, exclusive_sum); one lane on the host;
//   scan(n, value, write) write(i, value(0) + ... + value(i)) for i in [0, n) (int64 sums;
//                         one block on CUDA), in order of i on the host;
//   single(f)             f() once (one CUDA thread): a sequential planner;
//   upload(dst, src, bytes)  the one host-to-device copy a build may issue (stream-ordered; a
//                         memcpy on the host).
// Bodies are ATTN_HD lambdas or functors that capture by value (pointers and scalars, as kernel
// parameters): no reference to the host stack, no allocation, no exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hd.h"

#if defined(__CUDACC__)
#include <cub/block/block_scan.cuh>
#endif

namespace attn::kernels {

/// Threads of a row on CUDA (for_each_row's block size and the lanes of Lanes).
constexpr int kRowLanes = 128;

#if defined(__CUDACC__)
using RowScan = cub::BlockScan<int64_t, kRowLanes>;
#endif

/// The lanes that share one row of for_each_row: the threads of a CUDA block, or the calling
/// thread alone on the host (and on the simulated device). Every lane runs the row's body; work
/// split by for_each, collectives (sync, exclusive_sum) called by every lane alike.
class Lanes {
 public:
  ATTN_HD Lanes() = default;
  ATTN_HD explicit Lanes(void* shared) : shared_(shared) {}

  /// This lane's index and the number of lanes.
  ATTN_HD_INLINE int64_t lane() const {
#if ATTN_ON_DEVICE
    return threadIdx.x;
#else
    return 0;
#endif
  }
  ATTN_HD_INLINE int64_t count() const {
#if ATTN_ON_DEVICE
    return blockDim.x;
#else
    return 1;
#endif
  }
  /// True for exactly one lane: the one that writes a row's single values.
  ATTN_HD_INLINE bool leader() const { return lane() == 0; }

  /// f(j) for j in [0, n), split over the lanes.
  template <class F>
  ATTN_HD_INLINE void for_each(int64_t n, F&& f) const {
    for (int64_t j = lane(); j < n; j += count()) f(j);
  }

  /// dst[j] = src[j] for j in [0, n) of non-overlapping ranges, split over the lanes (one
  /// memcpy on the host, where an element loop cost 2.5x the copy of a local-attention block
  /// table: docs/performance.md, "Issue 31: the host-path outliers").
  template <class T>
  ATTN_HD_INLINE void copy(T* dst, const T* src, int64_t n) const {
#if ATTN_ON_DEVICE
    for_each(n, [&](int64_t j) { dst[j] = src[j]; });
#else
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
#endif
  }

  /// dst[j * dst_stride] = src[j * src_stride] for j in [0, n) of non-overlapping ranges, split
  /// over the lanes (a block-table column into a vector): on the host a loop four entries a
  /// turn, where the plain strided loop cost 7 instructions an entry (docs/performance.md,
  /// "Grouped builds"); memcpy when both strides are 1.
  template <class T>
  ATTN_HD_INLINE void copy_strided(T* dst, int64_t dst_stride, const T* src, int64_t src_stride,
                                   int64_t n) const {
#if ATTN_ON_DEVICE
    for_each(n, [&](int64_t j) { dst[j * dst_stride] = src[j * src_stride]; });
#else
    if (dst_stride == 1 && src_stride == 1) return copy(dst, src, n);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4, src += 4 * src_stride, dst += 4 * dst_stride) {
      const T a = src[0], b = src[src_stride], c = src[2 * src_stride], d = src[3 * src_stride];
      dst[0] = a;
      dst[dst_stride] = b;
      dst[2 * dst_stride] = c;
      dst[3 * dst_stride] = d;
    }
    for (; j < n; ++j, src += src_stride, dst += dst_stride) *dst = *src;
#endif
  }

  /// Every lane waits here until all have arrived (__syncthreads; nothing on the host).
  ATTN_HD_INLINE void sync() const {
#if ATTN_ON_DEVICE
    __syncthreads();
#endif
  }

  /// The sum of `v` over the lanes before this one; *total = the sum over all lanes (the same
  /// in every lane). Every lane must call it.
  ATTN_HD_INLINE int64_t exclusive_sum(int64_t v, int64_t* total) const {
#if ATTN_ON_DEVICE
    int64_t before = 0, all = 0;
    RowScan(*static_cast<typename RowScan::TempStorage*>(shared_)).ExclusiveSum(v, before, all);
    __syncthreads();  // the storage is reused by the next call
    *total = all;
    return before;
#else
    *total = v;
    return 0;
#endif
  }

 private:
  void* shared_ = nullptr;  ///< CUDA: the block's scan storage.
};

/// Atomic read-modify-write of 64-bit words for bodies that lanes run concurrently (plain
/// operations on the host, where one lane runs at a time).
ATTN_HD_INLINE uint64_t atomic_cas_u64(uint64_t* p, uint64_t expected, uint64_t desired) {
#if ATTN_ON_DEVICE
  return atomicCAS(reinterpret_cast<unsigned long long*>(p), expected, desired);
#else
  const uint64_t old = *p;
  if (old == expected) *p = desired;
  return old;
#endif
}
ATTN_HD_INLINE uint64_t atomic_min_u64(uint64_t* p, uint64_t v) {
#if ATTN_ON_DEVICE
  return atomicMin(reinterpret_cast<unsigned long long*>(p), v);
#else
  const uint64_t old = *p;
  if (v < old) *p = v;
  return old;
#endif
}
ATTN_HD_INLINE uint64_t atomic_max_u64(uint64_t* p, uint64_t v) {
#if ATTN_ON_DEVICE
  return atomicMax(reinterpret_cast<unsigned long long*>(p), v);
#else
  const uint64_t old = *p;
  if (old < v) *p = v;
  return old;
#endif
}

ATTN_HD_INLINE int64_t atomic_max_i64(int64_t* p, int64_t v) {
#if ATTN_ON_DEVICE
  return atomicMax(reinterpret_cast<long long*>(p), static_cast<long long>(v));
#else
  const int64_t old = *p;
  if (old < v) *p = v;
  return old;
#endif
}

/// The host executor: every primitive runs at once on the calling thread.
struct HostPar {
  static constexpr bool kOnDevice = false;

  template <class F>
  void for_each(int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
  template <class F>
  void for_each_row(int64_t rows, F f) {
    const Lanes lanes;
    for (int64_t r = 0; r < rows; ++r) f(r, lanes);
  }
  template <class V, class W>
  void scan(int64_t n, V value, W write) {
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      sum += value(i);
      write(i, sum);
    }
  }
  template <class F>
  void single(F f) {
    f();
  }
  void upload(void* dst, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
};

}  // namespace attn::kernels

#if defined(__CUDACC__)
#include "par_cuda.cuh"
#elif ATTN_DEVICE_SIM
#include "par_sim.h"
#endif
