/* Helpers shared by the cmocka tests: error assertions, default specs and configs, and host
 * batches made from query and sequence lengths. Include after cmocka.h's prerequisites. */
#ifndef ATTN_TEST_SUPPORT_H_
#define ATTN_TEST_SUPPORT_H_

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn_c.h"

/* Fails the test with the library's message when expr returns an error. */
#define ASSERT_OK(expr)                                                              \
  do {                                                                               \
    attn_error_t* ok_err_ = (expr);                                                  \
    if (ok_err_ != NULL) {                                                           \
      fail_msg("%s failed: [%d] %s", #expr, attn_error_code(ok_err_),                \
               attn_error_message(ok_err_));                                         \
    }                                                                                \
  } while (0)

/* Asserts expr returns an error with `code` whose message contains `substring`. */
#define ASSERT_ERROR(expr, code, substring)                                          \
  do {                                                                               \
    attn_error_t* e_ = (expr);                                                       \
    if (e_ == NULL) fail_msg("%s succeeded, expected error %d", #expr, (int)(code)); \
    if (attn_error_code(e_) != (code))                                               \
      fail_msg("%s gave code %d (%s), expected %d", #expr, attn_error_code(e_),      \
               attn_error_message(e_), (int)(code));                                 \
    if (strstr(attn_error_message(e_), (substring)) == NULL)                         \
      fail_msg("%s: message \"%s\" does not contain \"%s\"", #expr,                  \
               attn_error_message(e_), (substring));                                 \
    attn_error_destroy(e_);                                                          \
  } while (0)

/* A sentinel for "out-params are left untouched on failure". */
#define UNTOUCHED_PTR ((void*)(uintptr_t)0x5a5a5a5a)

attn_kv_cache_spec_t ts_spec(void);     /* full attention, block 16, 8 heads, 128, bf16 */
attn_kv_cache_spec_t ts_mla_spec(int32_t block_size); /* MLA: 1 kv head, 576 (kv_lora_rank 512 + rope 64) */
/* vLLM's SlidingWindowMLASpec of DeepSeek V4's SWA cache: one latent head of 512, a window. */
attn_kv_cache_spec_t ts_swa_spec(int32_t block_size, int32_t window);
attn_builder_config_t ts_config(void);  /* host, 256 seqs, 8192 tokens, len 4096, 32 heads, sm90 */
attn_builder_t* ts_builder(const char* backend, const attn_kv_cache_spec_t* spec,
                           const attn_builder_config_t* config);

/* Backends by what they are (attn_backend_info), not by name: whether backend `index` has
 * `origin` (an ATTN_BACKEND_* value, or -1 for any), accepts `spec`'s kind and builds for it with
 * `config` (ATTN_ERR_UNSUPPORTED, from a family of its own or a plugin's backend, gives 0; any
 * other error fails the test). `name` (may be NULL) receives its name either way. */
int ts_backend_builds(size_t index, int32_t origin, const attn_kv_cache_spec_t* spec,
                      const attn_builder_config_t* config, const char** name);
/* The names of the backends for which ts_backend_builds says 1, in registry order: the first
 * `cap` of them into `out`; returns how many there are. */
size_t ts_backends_building(int32_t origin, const attn_kv_cache_spec_t* spec,
                            const attn_builder_config_t* config, const char** out, size_t cap);

/* The KV cache specs and configs that set up every built-in backend (tests that go through all
 * of them: test_hostile_inputs, test_gpu_capture). ts_candidate_specs: one or more spec of every
 * kind a built-in backend accepts (the attention kinds, vLLM's MLA spec at the MLA kernels'
 * block sizes, DeepSeek V4's compressed cache, V4.1's indexer cache, the sliding-window MLA
 * cache, dots3 NOTE's sliding-window latent cache, a Mamba state, a full-attention cache at
 * MiniMax-M3's kernel block 128); ts_candidate_configs:
 * `base`, then the same on ROCm, then DeepSeek V4.1's sparse indexer settings, then dots3
 * NOTE's MLA dimensions, then MiniMax-M3's index heads. Each returns how many it wrote (at most kTsMaxCandidates). */
enum { kTsMaxCandidates = 16 };
size_t ts_candidate_specs(attn_kv_cache_spec_t* out);
size_t ts_candidate_configs(const attn_builder_config_t* base, attn_builder_config_t* out);
/* The first candidate spec of kind `kind` (-1: any kind the backend accepts, in candidate
 * order) and candidate config (cache dtype AUTO, then FP8_E4M3) backend `index` builds for, with
 * `base` as the config's base: 1 and *spec / *config set, or 0. */
int ts_backend_setup(size_t index, int32_t kind, const attn_builder_config_t* base,
                     attn_kv_cache_spec_t* spec, attn_builder_config_t* config);

/* A host batch: query_start_loc, seq_lens, block table (ids from 1, padding 0) and an int64
 * slot mapping (PAD_SLOT_ID for padded tokens). */
typedef struct ts_batch {
  int64_t num_reqs;
  int64_t num_tokens;
  int64_t width;
  int32_t block_size;
  int32_t* qsl;
  int32_t* seq;
  int32_t* bt;
  int64_t* slots;
  int64_t qsl_shape[1], seq_shape[1], bt_shape[2], sm_shape[1];
  int64_t bt_strides[2]; /* set by ts_narrow_table */
  attn_tensor_t qsl_t, seq_t, bt_t, sm_t;
  attn_common_metadata_t common;
} ts_batch;

/* padded_tokens < 0: num_actual_tokens = sum(query_lens). width 0: cdiv(max seq, block). */
ts_batch* ts_batch_make(const int32_t* query_lens, const int32_t* seq_lens, int64_t num_reqs,
                        int32_t block_size, int64_t width, int64_t padded_tokens);
void ts_batch_free(ts_batch* b);
/* The runner's positions of the batch's scheduled tokens: out[t] = seq_len - query_len + the
 * token's index in its request's query, for t < qsl[num_reqs] (the rest of out untouched). */
void ts_batch_positions(const ts_batch* b, int64_t* out);
/* The batch's block table seen as its first `cols` columns: a strided view of the same rows (as
 * vLLM's runner hands a CircularBufferSpec group one column per request). */
void ts_narrow_table(ts_batch* b, int64_t cols);
/* A ring backend (vLLM's CircularBufferSpec) on ATTN_KV_CIRCULAR_BUFFER with the batch's table
 * narrowed to one column builds what it builds on the FULL_ATTENTION spec `full` with the whole
 * table (every field); the FULL_ATTENTION builder refuses the one-column table (its message
 * contains `full_refusal`) and the circular one a table of no columns. The batch's table is
 * left at no columns. */
void ts_expect_circular_as_full(const char* backend, const attn_kv_cache_spec_t* full,
                                const attn_builder_config_t* config, ts_batch* batch,
                                const char* full_refusal);

attn_tensor_t ts_host_tensor(void* data, int32_t ndim, int64_t* shape, uint8_t code, uint8_t bits);

/* Field readers that fail the test on error. */
int64_t ts_int(const attn_metadata_t* m, const char* name);
const attn_tensor_t* ts_tensor(const attn_metadata_t* m, const char* name); /* NULL for None */
int32_t ts_kind(const attn_metadata_t* m, const char* name);
/* Asserts a 1-D int32 tensor field equals `expected` (n entries). */
/* Fails unless field `name` of `m` is None. */
void ts_expect_none(const attn_metadata_t* m, const char* name);
/* Every field of `a` equals the same field of `b` (names, kinds, ints; tensors by shape and,
 * except the scratch buffers each builder owns (softmax_segm_*, scheduler_metadata), by
 * content); `skip` (or NULL) names a field the caller compares. Builders of one class under
 * two names (FLASH_ATTN_DIFFKV, QWEN4_EXP_QSA_TRITON) against their base. */
void ts_expect_same_fields(const attn_metadata_t* a, const attn_metadata_t* b, const char* skip);
/* The same for every field of `a` against `b`'s field at its index, `b` having more after
 * them (a subclass's metadata that appends fields: MINIMAX_M3_SPARSE_INDEXER_MSA_ROCM). */
void ts_expect_leading_fields(const attn_metadata_t* a, const attn_metadata_t* b);
void ts_expect_i32(const attn_metadata_t* m, const char* name, const int32_t* expected, int64_t n);
/* The same for a 1-D int64 tensor field (a slot mapping). */
void ts_expect_i64(const attn_metadata_t* m, const char* name, const int64_t* expected, int64_t n);

/* Every field of `a` equals the same field of `b`: names, kinds, scalars (ints, bools, floats),
 * None, tensors' dtype, ndim, shape and, for tensors of at most two dimensions in host memory,
 * every element (through their strides). Tensors of more than two dimensions are scratch
 * buffers (TRITON_ATTN's softmax segments): shapes only. `what` prefixes the failure message. */
void ts_expect_same_metadata(const attn_metadata_t* a, const attn_metadata_t* b, const char* what);
/* The same as a predicate: 1 when equal, else 0 with the first difference in why[0 .. n). */
int ts_same_metadata(const attn_metadata_t* a, const attn_metadata_t* b, char* why, size_t n);
/* The same without the kinds (a wrapper's metadata against its wrapped backend's). */
int ts_same_fields(const attn_metadata_t* a, const attn_metadata_t* b, char* why, size_t n);

/* Moves the requests whose query length is <= `threshold` to the front, each swapped into the
 * next decode place (decodes first, as a reorder leaves them); returns how many there are. */
int32_t ts_decodes_first(int32_t* query_lens, int32_t* seq_lens, int64_t num_reqs,
                         int32_t threshold);

/* Deterministic pseudo-random numbers (splitmix64). */
uint64_t ts_rand(uint64_t* state);
int64_t ts_rand_range(uint64_t* state, int64_t lo, int64_t hi); /* inclusive */

#endif
