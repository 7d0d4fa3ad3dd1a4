// Makes a device current for a scope and restores the caller's device afterwards, so that
// libattn never changes the calling thread's current device behind its back.
#pragma once

#include <cuda_runtime.h>

namespace attn::kernels {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device_id) {
    status_ = cudaGetDevice(&previous_);
    if (status_ == cudaSuccess && previous_ != device_id) {
      status_ = cudaSetDevice(device_id);
      switched_ = status_ == cudaSuccess;
    }
  }
  ~DeviceGuard() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  cudaError_t status() const { return status_; }

 private:
  int previous_ = 0;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace attn::kernels
