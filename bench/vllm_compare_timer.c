/* The C-side clock of bench/vllm_compare.py (never a test): times libattn calls in a C loop, on
 * exactly the structs the Python binding passes, so that one process gives, for the same batch,
 * vLLM's Python time, libattn's time through the binding, and libattn's time as a C/Rust/Go
 * engine pays it (no ctypes).
 *
 * Every function takes the libattn entry point as a pointer (the address ctypes resolved in the
 * loaded libattn.so.1, so there is no second copy of the library and no link-time dependency),
 * runs `repeats` rounds of `iters` calls and returns the best round's nanoseconds per call, or
 * -1.0 when a call fails. Metadata that a call returns is destroyed inside the loop (a runtime
 * pays that too); builds return builder-owned metadata, which is not destroyed.
 *
 * scripts/bench_vllm.sh compiles it:
 *   cc -O2 -shared -fPIC -Iinclude bench/vllm_compare_timer.c -o build-bench/libvllm_compare_timer.so
 */
#include <stdint.h>
#include <time.h>

#include "attn_c.h"

typedef attn_error_t* (*split_fn)(const attn_common_metadata_t*, int32_t, int32_t,
                                  attn_batch_split_t*);
typedef attn_error_t* (*reorder_fn)(const int32_t*, const int32_t*, int64_t, int32_t, int32_t*,
                                    int64_t, int64_t*);
typedef attn_error_t* (*num_virtual_fn)(int32_t, const attn_common_metadata_t*, int64_t*);
typedef attn_error_t* (*local_fn)(int32_t, const attn_common_metadata_t*, int32_t,
                                  const attn_local_attention_out_t*, attn_metadata_t**,
                                  attn_stream_t);
typedef attn_error_t* (*fast_prefill_fn)(const attn_common_metadata_t*, const attn_tensor_t*,
                                         const attn_tensor_t*, const attn_tensor_t*,
                                         attn_metadata_t**, attn_stream_t);
typedef attn_error_t* (*fast_prefill_ex_fn)(const attn_common_metadata_t*, const attn_tensor_t*,
                                            const attn_tensor_t*, const attn_tensor_t*,
                                            attn_common_metadata_t*, attn_metadata_t**,
                                            attn_stream_t);
typedef attn_error_t* (*build_fn)(attn_builder_t*, int64_t, const attn_common_metadata_t*, int32_t,
                                  attn_metadata_t**, attn_stream_t);
typedef attn_error_t* (*build_groups_fn)(attn_builder_t* const*, size_t, const int64_t*,
                                         const attn_common_metadata_t*, int32_t,
                                         attn_metadata_t**, attn_stream_t);
typedef void (*destroy_fn)(attn_metadata_t*);
typedef void (*error_destroy_fn)(attn_error_t*);

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One round's body is a statement using `ok` (set to 0 on failure). */
#define BEST_OF(body)                                        \
  double best = -1.0;                                        \
  for (int r = 0; r < repeats; ++r) {                        \
    int ok = 1;                                              \
    const double t0 = now_ns();                              \
    for (int64_t i = 0; i < iters && ok; ++i) { body; }      \
    const double per = (now_ns() - t0) / (double)iters;      \
    if (!ok) return -1.0;                                    \
    if (best < 0 || per < best) best = per;                  \
  }                                                          \
  return best;

double vct_split(void* fn, const attn_common_metadata_t* common, int32_t threshold,
                 int32_t require_uniform, int64_t iters, int repeats) {
  split_fn f = (split_fn)fn;
  BEST_OF({
    attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
    if (f(common, threshold, require_uniform, &s) != NULL) ok = 0;
  })
}

double vct_reorder(void* fn, const int32_t* scheduled, const int32_t* computed, int64_t n,
                   int32_t threshold, int32_t* swaps, int64_t capacity, int64_t iters,
                   int repeats) {
  reorder_fn f = (reorder_fn)fn;
  BEST_OF({
    int64_t count = 0;
    if (f(scheduled, computed, n, threshold, swaps, capacity, &count) != NULL) ok = 0;
  })
}

/* attn_local_attention_num_virtual_batches (to size the outputs, as a runtime must) and
 * attn_make_local_attention_virtual_batches into preallocated outputs, then destroy. */
double vct_local(void* num_fn, void* fn, void* destroy, int32_t chunk,
                 const attn_common_metadata_t* common, int32_t block_size,
                 const attn_local_attention_out_t* outputs, int64_t iters, int repeats) {
  num_virtual_fn nv = (num_virtual_fn)num_fn;
  local_fn f = (local_fn)fn;
  destroy_fn d = (destroy_fn)destroy;
  BEST_OF({
    int64_t v = 0;
    attn_metadata_t* md = NULL;
    if (nv(chunk, common, &v) != NULL || f(chunk, common, block_size, outputs, &md, NULL) != NULL)
      ok = 0;
    d(md);
  })
}

double vct_fast_prefill(void* fn, void* destroy, const attn_common_metadata_t* common,
                        const attn_tensor_t* logits_indices_cpu, const attn_tensor_t* out_qsl,
                        const attn_tensor_t* out_qsl_cpu, int64_t iters, int repeats) {
  fast_prefill_fn f = (fast_prefill_fn)fn;
  destroy_fn d = (destroy_fn)destroy;
  BEST_OF({
    attn_metadata_t* md = NULL;
    if (f(common, logits_indices_cpu, out_qsl, out_qsl_cpu, &md, NULL) != NULL) ok = 0;
    d(md);
  })
}

/* attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex (ABI 1.7): the batch into a struct
 * of the caller's; the handle of a new batch (NULL on a pass-through) destroyed in the loop. */
double vct_fast_prefill_ex(void* fn, void* destroy, const attn_common_metadata_t* common,
                           const attn_tensor_t* logits_indices_cpu, const attn_tensor_t* out_qsl,
                           const attn_tensor_t* out_qsl_cpu, int64_t iters, int repeats) {
  fast_prefill_ex_fn f = (fast_prefill_ex_fn)fn;
  destroy_fn d = (destroy_fn)destroy;
  attn_common_metadata_t batch = ATTN_COMMON_METADATA_INIT;
  BEST_OF({
    attn_metadata_t* md = NULL;
    if (f(common, logits_indices_cpu, out_qsl, out_qsl_cpu, &batch, &md, NULL) != NULL) ok = 0;
    d(md);
  })
}

double vct_build(void* fn, attn_builder_t* builder, const attn_common_metadata_t* common,
                 int64_t iters, int repeats) {
  build_fn f = (build_fn)fn;
  BEST_OF({
    attn_metadata_t* md = NULL;
    if (f(builder, 0, common, 0, &md, NULL) != NULL) ok = 0;
  })
}

/* A hybrid model's step: the n builders' attn_build_groups() (one call) ... */
double vct_build_groups(void* fn, attn_builder_t* const* builders, int64_t n,
                        const attn_common_metadata_t* common, int64_t iters, int repeats) {
  build_groups_fn f = (build_groups_fn)fn;
  attn_metadata_t* out[16];
  if (n < 1 || n > 16) return -1.0;
  BEST_OF({
    if (f(builders, (size_t)n, NULL, common, 0, out, NULL) != NULL) ok = 0;
  })
}

/* ... and the same builders' n attn_build() calls, one after the other. */
double vct_build_each(void* fn, attn_builder_t* const* builders, int64_t n,
                      const attn_common_metadata_t* common, int64_t iters, int repeats) {
  build_fn f = (build_fn)fn;
  BEST_OF({
    for (int64_t k = 0; k < n && ok; ++k) {
      attn_metadata_t* md = NULL;
      if (f(builders[k], 0, common, 0, &md, NULL) != NULL) ok = 0;
    }
  })
}
