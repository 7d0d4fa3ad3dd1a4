// SimPar: the executor of kernels/par.h on the simulated device (ATTN_DEVICE_SIM builds;
// kernels/sim). Each primitive is one simulated kernel (or, for upload, one async copy) queued on
// the stream: the host executor's loop over the same body, run when the stream runs it, with
// device memory accessible, or recorded into the graph while the stream captures. Bodies are
// captured by value, as a CUDA launch copies its parameters.
#pragma once

#include <simcuda_launch.h>

#include <cstddef>
#include <cstdint>

#include "par.h"

namespace attn::kernels {

class SimPar {
 public:
  static constexpr bool kOnDevice = true;

  SimPar(void* stream, const char* op) : stream_(static_cast<cudaStream_t>(stream)), op_(op) {}

  template <class F>
  void for_each(int64_t n, F f) {
    if (n > 0) launch([n, f] { HostPar().for_each(n, f); });
  }
  template <class F>
  void for_each_row(int64_t rows, F f) {
    if (rows > 0) launch([rows, f] { HostPar().for_each_row(rows, f); });
  }
  template <class V, class W>
  void scan(int64_t n, V value, W write) {
    if (n > 0) launch([n, value, write] { HostPar().scan(n, value, write); });
  }
  template <class F>
  void single(F f) {
    launch([f] { f(); });
  }
  void upload(void* dst, const void* src, size_t bytes) {
    if (bytes > 0 && status_ == cudaSuccess)
      status_ = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_);
  }

  int status() const { return status_; }

 private:
  template <class K>
  void launch(K k) {
    if (status_ == cudaSuccess) status_ = simcudaLaunch(stream_, op_, std::move(k));
  }
  cudaStream_t stream_;
  const char* op_;
  cudaError_t status_ = cudaSuccess;
};

using DevicePar = SimPar;

}  // namespace attn::kernels
