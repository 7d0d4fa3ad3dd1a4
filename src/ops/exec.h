// Where an op runs: on the host, or on one CUDA device in the order of one stream.
#pragma once

#include <cstdint>

namespace attn::ops {

struct Exec {
  bool on_cuda = false;     ///< false: run on the calling thread, on host memory.
  int32_t device_id = 0;    ///< CUDA ordinal when on_cuda.
  void* stream = nullptr;   ///< cudaStream_t when on_cuda (nullptr = default stream).
};

}  // namespace attn::ops
