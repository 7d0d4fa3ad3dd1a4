/* Hostile batches and configs through every registered backend (issues 37 and 32 part 4). The
 * backends are enumerated (attn_backend_count / attn_backend_info), never listed by name: each
 * built-in backend is set up on every KV cache spec of the candidates (tests/support,
 * ts_candidate_specs / ts_candidate_configs) whose kind it
 * accepts, with the first candidate config it builds for, and the test fails when a backend
 * finds none (a new backend that needs settings of its own gets a candidate there).
 *
 *  - an all-decode batch whose num_actual_tokens is padded far past num_reqs and max_num_seqs
 *    (4): 5,000 and 60,000 tokens, zero-length padding rows, a uniform spec-decode row, on
 *    compute capabilities 8.0, 9.0, 10.0 and 12.0 with TRT-LLM on and off (issue 37: FLASHINFER
 *    read and wrote past its buffers);
 *  - "mirror right, tensor garbage": seq_lens holding INT32_MAX beside a right seq_lens_cpu is
 *    refused under default validation, naming the tensor (issue 32: ROCM_AITER_FA ran out of
 *    memory);
 *  - block ids INT32_MAX and INT32_MIN in the block table (issue 32: AMX_MLA's signed overflow);
 *  - a config or spec with one size at INT32_MAX: refused by name, never an attempted huge
 *    allocation (issue 32: CPU_V4_INDEXER asked for 64 GiB).
 *
 * Every build either succeeds or returns an error (never a crash, never ATTN_ERR_INTERNAL), and
 * every element of every host tensor it returns is read. The ASan+UBSan lane runs this binary
 * (scripts/test.sh runs every ctest test there): an access outside the caller's arrays or the
 * builder's allocations, or a signed overflow, fails it. */
#include <limits.h>

#include "test_support.h"

/* ---- an allocator that refuses (and counts) requests above a cap ---------------------------- */

typedef struct capped {
  size_t cap;
  size_t refused;       /* requests above the cap */
  size_t largest_asked; /* the largest request seen */
} capped_t;

static void* capped_alloc(void* user, size_t bytes, size_t alignment, attn_device_t device) {
  capped_t* c = (capped_t*)user;
  void* p = NULL;
  (void)device;
  if (bytes > c->largest_asked) c->largest_asked = bytes;
  if (bytes > c->cap) {
    ++c->refused;
    return NULL;
  }
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (posix_memalign(&p, alignment, bytes == 0 ? 1 : bytes) != 0) return NULL;
  return p;
}

static void capped_free(void* user, void* p, size_t bytes, attn_device_t device) {
  (void)user;
  (void)bytes;
  (void)device;
  free(p);
}

/* ---- the setups: every backend on each kind it accepts (ts_candidate_specs/configs) ------- */

enum { kMaxSetups = 512 };

/* The hostile tests' base config: 4 sequences, 65,536 batched tokens (room for 60,000 padded
 * ones), model length 4096; the inputs some backends need (KV cache blocks, encoder length). */
static attn_builder_config_t base_config(void) {
  attn_builder_config_t c = ts_config();
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 65536;
  c.max_model_len = 4096;
  c.num_gpu_blocks = 4096;
  c.max_encoder_len = 256;
  return c;
}

typedef struct setup {
  const char* name;
  attn_kv_cache_spec_t spec;
  attn_builder_config_t config;
} setup_t;

static setup_t g_setups[kMaxSetups];
static size_t g_num_setups;

/* Every built-in backend on each kind of KV cache spec it accepts: the first candidate spec of
 * that kind, with the first candidate config (cache dtype AUTO, then FP8), it builds for
 * (ts_backend_setup). */
static int find_setups(void** state) {
  const attn_builder_config_t base = base_config();
  const size_t count = attn_backend_count();
  size_t i;
  int32_t kind;
  (void)state;
  g_num_setups = 0;
  for (i = 0; i < count; ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    int found = 0;
    ASSERT_OK(attn_backend_info(i, &info));
    if (info.origin != ATTN_BACKEND_BUILTIN) continue;
    for (kind = 0; kind < 32; ++kind) {
      if ((info.kv_cache_kinds & (1u << kind)) == 0) continue;
      assert_true(g_num_setups < kMaxSetups);
      if (!ts_backend_setup(i, kind, &base, &g_setups[g_num_setups].spec,
                            &g_setups[g_num_setups].config))
        continue;
      g_setups[g_num_setups++].name = info.name;
      found = 1;
    }
    if (!found)
      fail_msg("backend %s builds for none of the candidate specs and configs: give it one in "
               "ts_candidate_specs / ts_candidate_configs (tests/support)", info.name);
  }
  return 0;
}

/* ---- batches ------------------------------------------------------------------------------- */

/* A host batch with the inputs any backend may read: seq_lens and its host mirror (separate
 * memory), query_start_loc's mirror, positions, the encoder lengths of a cross-attention spec,
 * is_prefilling. Block ids from 1, slot mapping PAD_SLOT_ID past the scheduled tokens. */
typedef struct hbatch {
  ts_batch* b;
  int32_t* seq_cpu;
  int32_t* enc;
  int64_t* positions;
  uint8_t* prefilling;
  int64_t pos_shape[1], req_shape[1];
  attn_tensor_t seq_cpu_t, qsl_cpu_t, enc_t, enc_cpu_t, pos_t, pre_t;
} hbatch_t;

static hbatch_t* hbatch_make(const int32_t* q, const int32_t* s, int64_t n, int64_t padded,
                             const attn_kv_cache_spec_t* spec) {
  hbatch_t* h = (hbatch_t*)calloc(1, sizeof *h);
  int64_t i, t = 0;
  assert_non_null(h);
  h->b = ts_batch_make(q, s, n, spec->block_size, 0, padded);
  h->seq_cpu = (int32_t*)calloc((size_t)n + 1, sizeof(int32_t));
  h->enc = (int32_t*)calloc((size_t)n + 1, sizeof(int32_t));
  h->prefilling = (uint8_t*)calloc((size_t)n + 1, 1);
  h->positions = (int64_t*)calloc((size_t)h->b->num_tokens + 1, sizeof(int64_t));
  assert_true(h->seq_cpu && h->enc && h->prefilling && h->positions);
  for (i = 0; i < n; ++i) {
    int64_t p;
    h->seq_cpu[i] = s[i];
    h->enc[i] = 16;
    h->prefilling[i] = (uint8_t)(q[i] > 1 && q[i] == s[i]);
    for (p = s[i] - q[i]; p < s[i]; ++p) h->positions[t++] = p;
  }
  h->req_shape[0] = n;
  h->pos_shape[0] = h->b->num_tokens;
  h->seq_cpu_t = ts_host_tensor(h->seq_cpu, 1, h->req_shape, ATTN_DTYPE_INT, 32);
  h->qsl_cpu_t = h->b->qsl_t;
  h->enc_t = ts_host_tensor(h->enc, 1, h->req_shape, ATTN_DTYPE_INT, 32);
  h->enc_cpu_t = h->enc_t;
  h->pos_t = ts_host_tensor(h->positions, 1, h->pos_shape, ATTN_DTYPE_INT, 64);
  h->pre_t = ts_host_tensor(h->prefilling, 1, h->req_shape, ATTN_DTYPE_BOOL, 8);
  h->b->common.seq_lens_cpu = &h->seq_cpu_t;
  h->b->common.query_start_loc_cpu = &h->qsl_cpu_t;
  h->b->common.positions = &h->pos_t;
  h->b->common.is_prefilling = &h->pre_t;
  if (spec->kind == ATTN_KV_CROSS_ATTENTION) {
    h->b->common.encoder_seq_lens = &h->enc_t;
    h->b->common.encoder_seq_lens_cpu = &h->enc_cpu_t;
  }
  return h;
}

static void hbatch_free(hbatch_t* h) {
  if (h == NULL) return;
  ts_batch_free(h->b);
  free(h->seq_cpu);
  free(h->enc);
  free(h->prefilling);
  free(h->positions);
  free(h);
}

/* Reads every host tensor field: every element of the small ones, the first and the last
 * element (its lowest and highest addresses) of the large ones, so that ASan sees any view that
 * runs past an allocation. */
static volatile uint64_t g_sink;

static void read_every_field(const attn_metadata_t* md) {
  const size_t fields = attn_metadata_field_count(md);
  size_t i;
  for (i = 0; i < fields; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    const attn_tensor_t* t;
    int64_t count = 1, lo = 0, hi = 0, k, d, st[16];
    size_t item, b;
    const unsigned char* base;
    ASSERT_OK(attn_metadata_field(md, i, &f));
    if (f.kind != ATTN_FIELD_TENSOR) continue;
    t = f.tensor;
    if (t == NULL || t->device.device_type != ATTN_DEVICE_CPU) continue;
    item = (size_t)(t->dtype.bits * t->dtype.lanes + 7) / 8;
    for (d = 0; d < t->ndim; ++d) count *= t->shape[d];
    if (count == 0) continue;
    base = (const unsigned char*)t->data + t->byte_offset;
    assert_true(t->ndim <= 16);
    for (d = t->ndim - 1; d >= 0; --d) /* NULL strides: compact row-major */
      st[d] = t->strides != NULL ? t->strides[d] : (d == t->ndim - 1 ? 1 : st[d + 1] * t->shape[d + 1]);
    for (d = 0; d < t->ndim; ++d) { /* the extreme element offsets (strides may be negative) */
      const int64_t stride = st[d], far = (t->shape[d] - 1) * stride;
      if (far < 0) lo += far; else hi += far;
    }
    if (count <= 4096) {
      for (k = 0; k < count; ++k) {
        int64_t rest = k, offset = 0;
        for (d = t->ndim - 1; d >= 0; --d) {
          offset += (rest % t->shape[d]) * st[d];
          rest /= t->shape[d];
        }
        for (b = 0; b < item; ++b) g_sink += base[offset * (int64_t)item + (int64_t)b];
      }
    } else {
      for (b = 0; b < item; ++b)
        g_sink += base[lo * (int64_t)item + (int64_t)b] + base[hi * (int64_t)item + (int64_t)b];
    }
  }
}

/* A build either succeeds (every host field read) or is refused with an error that names what
 * is wrong; never ATTN_ERR_INTERNAL or an out-of-memory (nothing here asks for much memory). */
static int build_checked(attn_builder_t* b, const attn_common_metadata_t* common, int capture,
                         const char* what, const char* name) {
  attn_metadata_t* md = NULL;
  attn_error_t* e = capture ? attn_build_for_cudagraph_capture(b, common, &md, NULL)
                            : attn_build(b, 0, common, 0, &md, NULL);
  if (e == NULL) {
    read_every_field(md);
    return 1;
  }
  if (attn_error_code(e) != ATTN_ERR_INVALID_ARGUMENT &&
      attn_error_code(e) != ATTN_ERR_UNSUPPORTED)
    fail_msg("%s, %s: [%d] %s", name, what, attn_error_code(e), attn_error_message(e));
  attn_error_destroy(e);
  return 0;
}

/* ---- (A) all-decode batches padded past max_num_seqs --------------------------------------- */

static void test_padded_decodes(void** state) {
  static const int32_t caps[4] = {80, 90, 100, 120};
  static const int32_t trtllm[2] = {-1, 0};
  static const int32_t q1[1] = {1}, s1[1] = {37};
  static const int32_t q4[4] = {1, 0, 0, 0}, s4[4] = {37, 0, 0, 0};
  static const int32_t qk[1] = {3}, sk[1] = {40};
  static const int64_t pads[2] = {5000, 60000};
  size_t i, built = 0, tried = 0;
  (void)state;
  for (i = 0; i < g_num_setups; ++i) {
    const setup_t* su = &g_setups[i];
    int cap, t, k, p, spec_tokens, fp8;
    /* every capability with TRT-LLM auto and off; with the setup's own capability also two
     * speculative tokens (spec-as-decode thresholds) and an fp8 cache (the fp8 paths) */
    for (cap = -1; cap < 4; ++cap)
      for (t = 0; t < 2; ++t)
        for (spec_tokens = 0; spec_tokens <= 2; spec_tokens += 2)
          for (fp8 = 0; fp8 < 2; ++fp8) {
          attn_builder_config_t c = su->config;
          attn_builder_t* b = NULL;
          attn_error_t* e;
          if ((spec_tokens > 0 || fp8) && (cap >= 0 || t > 0)) continue;
          if (fp8 && su->config.cache_dtype == ATTN_KV_DTYPE_FP8_E4M3) continue;
          if (cap >= 0) c.device_capability = caps[cap]; /* -1: the setup's own */
          if (su->config.platform_rocm && cap >= 0) continue;
          c.use_trtllm_attention = trtllm[t];
          c.num_speculative_tokens = spec_tokens;
          if (fp8) c.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
          e = attn_builder_create(su->name, &su->spec, &c, &b);
          if (e != NULL) { /* not every backend takes every capability / switch */
            attn_error_destroy(e);
            continue;
          }
          for (p = 0; p < 2; ++p)
            for (k = 0; k < 3; ++k) {
              hbatch_t* h = k == 0   ? hbatch_make(q1, s1, 1, pads[p], &su->spec)
                            : k == 1 ? hbatch_make(q4, s4, 4, pads[p], &su->spec)
                                     : hbatch_make(qk, sk, 1, pads[p], &su->spec);
              ++tried;
              built += (size_t)build_checked(b, &h->b->common, 0, "padded all-decode batch",
                                             su->name);
              build_checked(b, &h->b->common, 1, "padded all-decode capture", su->name);
              hbatch_free(h);
            }
          attn_builder_destroy(b);
        }
  }
  print_message("padded all-decode batches: %zu of %zu built across %zu backend setups\n", built,
                tried, g_num_setups);
  assert_true(built > 0);
}

/* ---- (B) mirror right, tensor garbage ------------------------------------------------------ */

/* seq_lens (the "device" tensor of a host build) holds INT32_MAX where its host mirror holds
 * the right length: every backend refuses it under default validation, naming the tensor. The
 * same batch with a right seq_lens builds (or is refused for another reason, which the garbage
 * check then does not count). */
static void test_garbage_seq_lens(void** state) {
  static const int32_t q[3] = {1, 1, 5}, s[3] = {40, 50, 60};
  size_t i, refused = 0;
  (void)state;
  for (i = 0; i < g_num_setups; ++i) {
    const setup_t* su = &g_setups[i];
    attn_builder_t* b = ts_builder(su->name, &su->spec, &su->config);
    hbatch_t* h = hbatch_make(q, s, 3, -1, &su->spec);
    attn_metadata_t* md = NULL;
    int row;
    for (row = 0; row < 3; ++row) {
      char want[96];
      h->b->seq[row] = INT32_MAX;
      snprintf(want, sizeof want, "common->seq_lens[%d]=2147483647", row);
      ASSERT_ERROR(attn_build(b, 0, &h->b->common, 0, &md, NULL), ATTN_ERR_INVALID_ARGUMENT,
                   want);
      h->b->seq[row] = -7;
      snprintf(want, sizeof want, "common->seq_lens[%d]=-7", row);
      ASSERT_ERROR(attn_build(b, 0, &h->b->common, 0, &md, NULL), ATTN_ERR_INVALID_ARGUMENT,
                   want);
      h->b->seq[row] = s[row];
      refused += 2;
    }
    build_checked(b, &h->b->common, 0, "the same batch, seq_lens right", su->name);
    hbatch_free(h);
    attn_builder_destroy(b);
  }
  print_message("garbage seq_lens: %zu refusals across %zu backend setups\n", refused,
                g_num_setups);
}

/* ---- (B) block ids at the ends of int32 ---------------------------------------------------- */

static void test_extreme_block_ids(void** state) {
  static const int32_t q[3] = {1, 1, 5}, s[3] = {40, 50, 60};
  static const int32_t ids[4] = {INT32_MAX, INT32_MIN, INT32_MAX - 1, -1};
  size_t i;
  (void)state;
  for (i = 0; i < g_num_setups; ++i) {
    const setup_t* su = &g_setups[i];
    attn_builder_t* b = ts_builder(su->name, &su->spec, &su->config);
    int k;
    for (k = 0; k < 4; ++k) {
      hbatch_t* h = hbatch_make(q, s, 3, -1, &su->spec);
      const int64_t cells = h->b->num_reqs * h->b->width;
      int64_t j;
      for (j = 0; j < cells; ++j) h->b->bt[j] = j % 2 == 0 ? ids[k] : ids[(k + 1) % 4];
      build_checked(b, &h->b->common, 0, "extreme block ids", su->name);
      build_checked(b, &h->b->common, 1, "extreme block ids (capture)", su->name);
      hbatch_free(h);
    }
    attn_builder_destroy(b);
  }
}

/* ---- (B) one size at INT32_MAX ------------------------------------------------------------- */

typedef struct field {
  const char* name;
  size_t offset;
  int spec; /* a spec field (else the config's) */
  int wide; /* int64_t */
} field_t;

#define CFG(f) {#f, offsetof(attn_builder_config_t, f), 0, sizeof(((attn_builder_config_t*)0)->f) == 8}
#define SPEC(f) {#f, offsetof(attn_kv_cache_spec_t, f), 1, 0}

static const field_t kSizes[] = {
    CFG(max_num_seqs), CFG(max_num_batched_tokens), CFG(max_model_len),
    CFG(num_attention_heads), CFG(num_speculative_tokens), CFG(decode_context_parallel_size),
    CFG(cp_kv_cache_interleave_size), CFG(max_cudagraph_capture_size), CFG(num_gpu_blocks),
    CFG(flex_attn_q_block_size), CFG(flex_attn_kv_block_size), CFG(max_encoder_len),
    CFG(mla_chunked_prefill_workspace_size), CFG(num_sms), CFG(rswa_window),
    CFG(replayssm_buffer_len), CFG(hash_block_size), CFG(cache_hit_alignment_tokens),
    CFG(num_hash_lookahead_tokens), CFG(block_table_width), CFG(prefill_context_parallel_size),
    CFG(candidate_block_size), CFG(candidate_topk_blocks), CFG(device_capability),
    CFG(block_pool_size),
    SPEC(block_size), SPEC(num_kv_heads), SPEC(head_size), SPEC(sliding_window),
    SPEC(attention_chunk_size), SPEC(mamba_chunk_size), SPEC(num_speculative_blocks),
    SPEC(num_prefill_checkpoint_blocks), SPEC(prefill_checkpoint_alignment),
    SPEC(mamba_replayssm_ngroups), SPEC(mamba_num_heads), SPEC(index_topk),
    SPEC(topk_buffer_width), SPEC(sink_len), SPEC(head_size_v), SPEC(tokens_per_state),
};

/* Each size alone at INT32_MAX, for every setup (with 8,192 batched tokens), with an allocator
 * that refuses requests above 256 MiB: the create either fails with a message (not out of
 * memory) or succeeds without ever asking for more (the config is within libattn's limits and
 * the plan stays small). */
static void test_hostile_sizes(void** state) {
  size_t i, f, refused = 0, created = 0;
  (void)state;
  for (i = 0; i < g_num_setups; ++i) {
    const setup_t* su = &g_setups[i];
    for (f = 0; f < sizeof kSizes / sizeof kSizes[0]; ++f) {
      capped_t cap = {(size_t)256 << 20, 0, 0};
      attn_allocator_t alloc = ATTN_ALLOCATOR_INIT;
      attn_kv_cache_spec_t spec = su->spec;
      attn_builder_config_t c = su->config;
      attn_builder_t* b = NULL;
      attn_error_t* e;
      char* base = kSizes[f].spec ? (char*)&spec : (char*)&c;
      c.max_num_batched_tokens = 8192;
      alloc.alloc = capped_alloc;
      alloc.free = capped_free;
      alloc.user_data = &cap;
      c.allocator = &alloc;
      if (kSizes[f].wide)
        *(int64_t*)(base + kSizes[f].offset) = INT32_MAX;
      else
        *(int32_t*)(base + kSizes[f].offset) = INT32_MAX;
      e = attn_builder_create(su->name, &spec, &c, &b);
      if (cap.refused != 0)
        fail_msg("%s with %s=INT32_MAX asked for %zu bytes at once (create: %s)", su->name,
                 kSizes[f].name, cap.largest_asked, e ? attn_error_message(e) : "succeeded");
      if (e != NULL) {
        if (attn_error_code(e) != ATTN_ERR_INVALID_ARGUMENT &&
            attn_error_code(e) != ATTN_ERR_UNSUPPORTED)
          fail_msg("%s with %s=INT32_MAX: [%d] %s", su->name, kSizes[f].name,
                   attn_error_code(e), attn_error_message(e));
        attn_error_destroy(e);
        ++refused;
        continue;
      }
      ++created;
      attn_builder_destroy(b);
    }
  }
  print_message("one size at INT32_MAX: %zu refused, %zu created within the limits\n", refused,
                created);
}

/* The limits themselves: a config past them is refused by name before anything is allocated;
 * max_num_seqs = INT32_MAX with every backend (CPU_V4_INDEXER sized a vector of it). */
static void test_create_limits(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < g_num_setups; ++i) {
    const setup_t* su = &g_setups[i];
    attn_builder_config_t c = su->config;
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    c.max_num_seqs = INT32_MAX;
    ASSERT_ERROR(attn_builder_create(su->name, &su->spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->max_num_seqs=2147483647 exceeds libattn's create-time limit of 1048576");
    assert_ptr_equal(b, UNTOUCHED_PTR);
    c = su->config;
    c.max_num_batched_tokens = (1 << 24) + 1;
    ASSERT_ERROR(attn_builder_create(su->name, &su->spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->max_num_batched_tokens=16777217 exceeds libattn's create-time limit");
    c = su->config;
    c.max_model_len = (1 << 24) + 1;
    ASSERT_ERROR(attn_builder_create(su->name, &su->spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
                 "config->max_model_len=16777217 exceeds libattn's create-time limit");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_padded_decodes),   cmocka_unit_test(test_garbage_seq_lens),
      cmocka_unit_test(test_extreme_block_ids), cmocka_unit_test(test_hostile_sizes),
      cmocka_unit_test(test_create_limits),
  };
  return cmocka_run_group_tests(tests, find_setups, NULL);
}
