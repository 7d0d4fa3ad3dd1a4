/* The simulated device's <cuda_runtime.h>: the runtime API (cuda_runtime_api.h). */
#ifndef ATTN_SIM_CUDA_RUNTIME_H_
#define ATTN_SIM_CUDA_RUNTIME_H_
#include "cuda_runtime_api.h"
#endif
