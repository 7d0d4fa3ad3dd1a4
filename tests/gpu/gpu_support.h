/* Helpers shared by the GPU tests (tests/gpu/): the "is there a GPU" check that prints the SKIP
 * line ctest looks for, device copies of host batches (device tensors + host mirrors, as a
 * runtime passes them), reading tensors back, and the field-by-field comparison of host and CUDA
 * metadata. Include after test_support.h. */
#ifndef ATTN_GPU_SUPPORT_H_
#define ATTN_GPU_SUPPORT_H_

#include <cuda_runtime_api.h>

#include "test_support.h"

/* Fails the test with the runtime's error text when a CUDA call does not return cudaSuccess. */
#define CUDA_OK(expr)                                                                       \
  do {                                                                                      \
    cudaError_t cuda_ok_st_ = (expr);                                                       \
    if (cuda_ok_st_ != cudaSuccess)                                                         \
      fail_msg("%s failed: %s (%s)", #expr, cudaGetErrorName(cuda_ok_st_),                 \
               cudaGetErrorString(cuda_ok_st_));                                            \
  } while (0)

/* 1 when a CUDA device is visible to libattn; else prints "SKIP: no CUDA device ...: <what> did
 * not run" (ctest reports the test as skipped) and returns 0. */
int tg_have_gpu(const char* what);

/* cudaMalloc + a synchronous copy of `bytes` (at least 4 bytes are allocated). */
void* tg_to_device(const void* host, size_t bytes);

/* The elements of a 1-D or 2-D tensor (host or CUDA), row by row, packed, in host memory; the
 * caller frees. */
unsigned char* tg_contents(const attn_tensor_t* t, size_t* out_bytes);

/* Every field of `h` (a host build) equals the same field of `d` (a CUDA build): kinds, scalars,
 * tensor shapes and contents (device tensors read back after a device synchronization). Tensors
 * of more than two dimensions are scratch buffers (TRITON_ATTN's softmax segments): shapes
 * only. */
void tg_expect_same_metadata(const attn_metadata_t* h, const attn_metadata_t* d, const char* what);

/* 1 when the host side of `a` and `b` agree: the same fields, kinds, scalars, tensor shapes and
 * the contents of host tensors (what a CUDA graph replay keeps from its capture); else 0 with
 * the first difference in why[0 .. n). */
int tg_host_fields_equal(const attn_metadata_t* a, const attn_metadata_t* b, char* why, size_t n);

/* Host mirrors of a batch's query_start_loc and seq_lens: copies in memory of their own, as a
 * runtime keeps them (a host build that writes into seq_lens, as TRITON_ATTN's capture does,
 * leaves them alone). */
typedef struct {
  int32_t* qsl;
  int32_t* seq;
  int64_t qsl_shape[1], seq_shape[1];
  attn_tensor_t qsl_t, seq_t;
} tg_mirrors;
void tg_mirrors_make(const ts_batch* b, tg_mirrors* m);
void tg_mirrors_copy(const ts_batch* b, tg_mirrors* m); /* same sizes: contents only */
void tg_mirrors_free(tg_mirrors* m);
/* Points b->common's query_start_loc_cpu / seq_lens_cpu at `m` (made from `b`). */
void tg_add_mirrors(ts_batch* b, tg_mirrors* m);

/* The tokens' positions of a host batch (vLLM 0.33's CommonAttentionMetadata.positions, int64:
 * seq_len - query_len + i for the i-th query token of a request, 0 for padded tokens), host
 * memory of its own; tg_positions_make points b->common.positions at it. */
typedef struct {
  int64_t* data;
  int64_t shape[1];
  attn_tensor_t t;
} tg_positions;
void tg_positions_make(ts_batch* b, tg_positions* p);
void tg_positions_free(tg_positions* p);

/* A batch on the device: query_start_loc, seq_lens, block table, slot mapping and, when the host
 * batch has them, positions in CUDA memory (shapes owned here), host mirrors of its own;
 * `common` points at them. */
typedef struct {
  int64_t qsl_shape[1], seq_shape[1], bt_shape[2], sm_shape[1], pos_shape[1];
  attn_tensor_t qsl, seq, bt, sm, pos;
  tg_mirrors mirrors;
  attn_common_metadata_t common;
} tg_device_batch;
void tg_device_batch_make(const ts_batch* b, tg_device_batch* d);
/* Writes `b`'s contents (same num_reqs, width and token count) into the same device buffers and
 * mirrors, with cudaMemcpyAsync on `stream` (the runtime's persistent inputs, rewritten before a
 * graph replay); `b`'s scalars are copied into d->common. */
void tg_device_batch_upload(const ts_batch* b, tg_device_batch* d, cudaStream_t stream);
void tg_device_batch_free(tg_device_batch* d);

#endif
