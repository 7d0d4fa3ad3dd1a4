// CUDA implementations of the state-space variants' small ops (KIMI_K3_KDA's computed-token
// counts and int64 query_start_loc, BAILING_LINEAR_ATTN's padded-decode staging,
// PLE_SHORT_CONV_ATTN's has_initial_states_d): one grid-stride launch each; PLE_SHORT_CONV_ATTN's
// spec/non-spec gather: one single-block launch.
#include <cuda_runtime.h>

#include "device_guard.cuh"
#include "launch.cuh"
#include "state_space_kernels.h"

namespace attn::kernels {
namespace {

#define ATTN_GRID_STRIDE(i, n)                                                      \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void computed_tokens_kernel(const int32_t* __restrict__ qsl,
                                       const int32_t* __restrict__ seq_lens, int64_t n,
                                       int32_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, n) out[i] = seq_lens[i] - (qsl[i + 1] - qsl[i]);
}

__global__ void widen_kernel(const int32_t* __restrict__ in, int64_t n, int64_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, n) out[i] = in[i];
}

__global__ void mask_padded_kernel(const int32_t* __restrict__ src, int64_t src_stride,
                                   int64_t rows, int64_t cols,
                                   const int32_t* __restrict__ seq_lens, int32_t pad,
                                   int32_t* __restrict__ dst, int64_t dst_stride,
                                   int64_t total_rows) {
  ATTN_GRID_STRIDE(i, total_rows * cols) {
    const int64_t r = i / cols, j = i % cols;
    dst[r * dst_stride + j] = r < rows && seq_lens[r] != 0 ? src[r * src_stride + j] : pad;
  }
}

__global__ void has_initial_kernel(const int32_t* __restrict__ qsl,
                                   const int32_t* __restrict__ seq_lens, int64_t rows,
                                   int64_t total, uint8_t* __restrict__ out) {
  ATTN_GRID_STRIDE(i, total) out[i] = i < rows && seq_lens[i] - (qsl[i + 1] - qsl[i]) > 0 ? 1 : 0;
}

/// One block: the per-request gathers in parallel, the two running sums on thread 0, then each
/// ordered request's tokens written by the whole block.
__global__ void ple_spec_gather_kernel(const int32_t* __restrict__ qsl,
                                       const int32_t* __restrict__ seq_lens,
                                       const int32_t* __restrict__ bt, int64_t bt_stride,
                                       const int32_t* __restrict__ accepted,
                                       const int32_t* __restrict__ order, int64_t ns, int64_t nn,
                                       int64_t nd, int32_t* __restrict__ qsl_p, GdnSplitOut out) {
  const int64_t n = ns + nn;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const int64_t r = order[j];
    const int32_t q = qsl[r + 1] - qsl[r];
    if (j < ns) {
      if (out.spec_state) out.spec_state[j] = bt[r * bt_stride];
      if (out.spec_accepted) out.spec_accepted[j] = accepted[r];
    } else {
      if (out.non_spec_state) out.non_spec_state[j - ns] = bt[r * bt_stride];
      if (out.non_spec_has_initial) out.non_spec_has_initial[j - ns] = seq_lens[r] - q > 0 ? 1 : 0;
    }
  }
  if (threadIdx.x == 0) {
    int32_t s = 0;
    if (out.spec_qsl) out.spec_qsl[0] = 0;
    for (int64_t j = 0; j < ns; ++j) {
      const int64_t r = order[j];
      s += qsl[r + 1] - qsl[r];
      if (out.spec_qsl) out.spec_qsl[j + 1] = s;
    }
    s = 0;
    if (out.non_spec_qsl) out.non_spec_qsl[0] = 0;
    if (qsl_p && nd == 0) qsl_p[0] = 0;
    for (int64_t k = 0; k < nn; ++k) {
      const int64_t r = order[ns + k];
      s += qsl[r + 1] - qsl[r];
      if (out.non_spec_qsl) out.non_spec_qsl[k + 1] = s;
      if (qsl_p && k + 1 >= nd) qsl_p[k + 1 - nd] = s - static_cast<int32_t>(nd);
    }
  }
  // token permutation: request after request, the block striding over each one's tokens
  int64_t spec_pos = 0, non_spec_pos = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t r = order[j];
    const int32_t start = qsl[r], q = qsl[r + 1] - start;
    int64_t* dst = j < ns ? (out.spec_token_indx ? out.spec_token_indx + spec_pos : nullptr)
                          : (out.non_spec_token_indx ? out.non_spec_token_indx + non_spec_pos
                                                     : nullptr);
    if (dst)
      for (int32_t t = threadIdx.x; t < q; t += blockDim.x) dst[t] = start + t;
    if (j < ns) spec_pos += q; else non_spec_pos += q;
  }
}

#undef ATTN_GRID_STRIDE

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

int num_computed_tokens_i32(int device_id, void* stream, const int32_t* qsl,
                            const int32_t* seq_lens, int64_t num_reqs, int32_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  computed_tokens_kernel<<<grid_for(num_reqs), kThreads, 0, as_stream(stream)>>>(qsl, seq_lens,
                                                                                 num_reqs, out);
  return cudaGetLastError();
}

int widen_i32_i64(int device_id, void* stream, const int32_t* in, int64_t n,
                  int64_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  widen_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(in, n, out);
  return cudaGetLastError();
}

int mask_padded_rows_i32(int device_id, void* stream, const int32_t* src, int64_t src_stride,
                         int64_t rows, int64_t cols, const int32_t* seq_lens, int32_t pad,
                         int32_t* dst, int64_t dst_stride, int64_t total_rows) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  mask_padded_kernel<<<grid_for(total_rows * cols), kThreads, 0, as_stream(stream)>>>(
      src, src_stride, rows, cols, seq_lens, pad, dst, dst_stride, total_rows);
  return cudaGetLastError();
}

int has_initial_states_u8(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                          int64_t rows, int64_t total, uint8_t* out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  has_initial_kernel<<<grid_for(total), kThreads, 0, as_stream(stream)>>>(qsl, seq_lens, rows,
                                                                           total, out);
  return cudaGetLastError();
}

int ple_spec_gather(int device_id, void* stream, const int32_t* qsl, const int32_t* seq_lens,
                    const int32_t* bt, int64_t bt_stride, const int32_t* accepted,
                    const int32_t* order, int64_t num_spec, int64_t num_non_spec,
                    int64_t num_non_spec_decodes, int32_t* non_spec_qsl_p,
                    const GdnSplitOut& out) noexcept {
  DeviceGuard guard(device_id);
  if (guard.status() != cudaSuccess) return guard.status();
  ple_spec_gather_kernel<<<1, kThreads, 0, as_stream(stream)>>>(
      qsl, seq_lens, bt, bt_stride, accepted, order, num_spec, num_non_spec, num_non_spec_decodes,
      non_spec_qsl_p, out);
  return cudaGetLastError();
}

}  // namespace attn::kernels
