// The simulated device's kernel launch (C++ only): the one call that does not exist in CUDA's
// runtime. kernels/par_sim.h launches every primitive of an op through it.
#pragma once

#include <functional>

#include "cuda_runtime_api.h"

/// Queues `body` as a kernel named `name` on `stream` (recorded as a kernel node while the stream
/// captures). The body runs later, in stream order, with device memory accessible; it must
/// capture by value what a CUDA kernel takes as parameters.
cudaError_t simcudaLaunch(cudaStream_t stream, const char* name, std::function<void()> body);

/// Statistics for tests: kernels run, bytes copied, faults caught.
struct SimcudaCounters {
  long long launches = 0;          ///< kernels run (eager, stream or graph replay)
  long long graph_launches = 0;    ///< cudaGraphLaunch calls
  long long live_allocations = 0;  ///< cudaMalloc minus cudaFree
};
SimcudaCounters simcudaCounters();
