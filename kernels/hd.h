// Code that runs on the host and on a device, written once (docs/architecture.md, "An op,
// written once"). ATTN_HD marks a function or a lambda both paths compile: under nvcc it is
// __host__ __device__ (lambdas need nvcc's --extended-lambda), under the host compiler (host
// builds and the simulated device) it is nothing. ATTN_ON_DEVICE is 1 only in nvcc's device pass.
#pragma once

#if defined(__CUDACC__)
#define ATTN_HD __host__ __device__
#define ATTN_HD_INLINE __host__ __device__ __forceinline__
#else
#define ATTN_HD
#define ATTN_HD_INLINE inline
#endif

#if defined(__CUDA_ARCH__)
#define ATTN_ON_DEVICE 1
#else
#define ATTN_ON_DEVICE 0
#endif
