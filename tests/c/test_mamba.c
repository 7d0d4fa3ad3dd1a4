/* The Mamba family (MAMBA2, MAMBA1, SHORT_CONV, LINEAR_ATTN, GDN_ATTN): registry entries and
 * levels, hand-checked batches (chunked-scan metadata worked out by hand below), the
 * mamba_cache_modes vLLM 0.33 keeps ("none", "align"; "all" refused), is_prefilling and vLLM
 * 0.33's one-token/padded-tail decodes, spec decode (num_accepted_tokens, GDN's spec/non-spec split), the
 * persistent CUDA-graph buffers, build_for_cudagraph_capture, update_block_table, seeded random
 * batches against naive re-computations of vLLM's builders, and bad input. */
#include "test_support.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

static attn_kv_cache_spec_t mspec(int32_t mode, int32_t chunk, int32_t nsb) {
  attn_kv_cache_spec_t s = ts_spec(); /* block 16; heads and head size are not read */
  s.kind = ATTN_KV_MAMBA;
  s.mamba_cache_mode = mode;
  s.mamba_chunk_size = chunk;
  s.num_speculative_blocks = nsb;
  return s;
}

static attn_builder_config_t mconfig(int32_t num_spec, int32_t cudagraph_mode) {
  attn_builder_config_t c = ts_config();
  c.num_speculative_tokens = num_spec;
  c.cudagraph_mode = cudagraph_mode;
  return c;
}

static const char* base(const attn_tensor_t* t) { return (const char*)t->data + t->byte_offset; }

/* Element i of a 1-D int32 tensor, honouring its stride. */
static int32_t at1(const attn_tensor_t* t, int64_t i) {
  return ((const int32_t*)base(t))[i * t->strides[0]];
}
/* Element (r, c) of a 2-D int32 tensor. */
static int32_t at2(const attn_tensor_t* t, int64_t r, int64_t c) {
  return ((const int32_t*)base(t))[r * t->strides[0] + c * t->strides[1]];
}

static void expect_bool_field(const attn_metadata_t* m, const char* name, int value) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  assert_int_equal(f.kind, ATTN_FIELD_BOOL);
  assert_int_equal(f.int_value, value);
}

/* A 1-D bool tensor field equals `expected` (n entries). */
static void expect_bools(const attn_metadata_t* m, const char* name, const int* expected, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->dtype.code, ATTN_DTYPE_BOOL);
  assert_int_equal(t->dtype.bits, 8);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->shape[0], n);
  for (i = 0; i < n; ++i) {
    const int got = ((const unsigned char*)base(t))[i * t->strides[0]] != 0;
    if (got != (expected[i] != 0)) fail_msg("%s[%lld] = %d, expected %d", name, (long long)i, got, expected[i]);
  }
}

/* A 1-D int32 field (any stride) equals `expected`. */
static void expect_i32(const attn_metadata_t* m, const char* name, const int32_t* expected, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->dtype.bits, 32);
  if (t->shape[0] != n) fail_msg("%s has %lld entries, expected %lld", name, (long long)t->shape[0], (long long)n);
  for (i = 0; i < n; ++i)
    if (at1(t, i) != expected[i]) fail_msg("%s[%lld] = %d, expected %d", name, (long long)i, at1(t, i), expected[i]);
}

/* A 2-D int32 field equals `expected` (rows x cols, compact). */
static void expect_i32_2d(const attn_metadata_t* m, const char* name, const int32_t* expected,
                          int64_t rows, int64_t cols) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t r, c;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, 2);
  if (t->shape[0] != rows || t->shape[1] != cols)
    fail_msg("%s has shape (%lld, %lld), expected (%lld, %lld)", name, (long long)t->shape[0],
             (long long)t->shape[1], (long long)rows, (long long)cols);
  for (r = 0; r < rows; ++r)
    for (c = 0; c < cols; ++c)
      if (at2(t, r, c) != expected[r * cols + c])
        fail_msg("%s[%lld][%lld] = %d, expected %d", name, (long long)r, (long long)c, at2(t, r, c),
                 expected[r * cols + c]);
}

static int32_t bt_at(const ts_batch* b, int64_t r, int64_t c) { return b->bt[r * b->width + c]; }

static attn_metadata_t* build(attn_builder_t* b, const attn_common_metadata_t* c) {
  attn_metadata_t* m = NULL;
  ASSERT_OK(attn_build(b, 0, c, 0, &m, NULL));
  return m;
}

/* A host int32 vector for the ABI 1.2 inputs. */
typedef struct {
  int32_t v[64];
  int64_t shape[1];
  attn_tensor_t t;
} vec32;
static void vec_make(vec32* x, const int32_t* values, int64_t n) {
  memcpy(x->v, values, (size_t)n * sizeof(int32_t));
  x->shape[0] = n;
  x->t = ts_host_tensor(x->v, 1, x->shape, ATTN_DTYPE_INT, 32);
}

/* A batch for MAMBA2/MAMBA1/SHORT_CONV, which vLLM 0.33 builds only with is_prefilling (it
 * asserts it): ts_batch_make plus an is_prefilling of `prefilling` (NULL: no request is still
 * in its prompt). The tensors live in a small pool reused round-robin. */
typedef struct {
  uint8_t v[64];
  int64_t shape[1];
  attn_tensor_t t;
} flags8;
static flags8 g_flags[8];
static int g_next_flags;
static attn_tensor_t* prefilling_of(const uint8_t* prefilling, int64_t n) {
  flags8* f = &g_flags[g_next_flags++ % 8];
  assert_true(n <= 64);
  memset(f->v, 0, sizeof f->v);
  if (prefilling != NULL) memcpy(f->v, prefilling, (size_t)n);
  f->shape[0] = n;
  f->t = ts_host_tensor(f->v, 1, f->shape, ATTN_DTYPE_BOOL, 8);
  return &f->t;
}
static ts_batch* mbatch(const int32_t* q, const int32_t* s, int64_t n, int32_t block_size,
                        int64_t width, const uint8_t* prefilling) {
  ts_batch* b = ts_batch_make(q, s, n, block_size, width, -1);
  b->common.is_prefilling = prefilling_of(prefilling, n);
  return b;
}

/* What vLLM's class attributes say of each Mamba-family backend, checked by name: CUDA graph
 * support, update_block_table (off with spec decode), and whether its reorder threshold is a
 * class attribute (1) rather than _init_reorder_batch_threshold(1, use_spec_decode). */
static const struct {
  const char* name;
  int32_t level;
  int update;
  int fixed_reorder;
} kExpected[] = {{"MAMBA2", ATTN_CG_UNIFORM_BATCH, 1, 0},
                 {"MAMBA1", ATTN_CG_UNIFORM_BATCH, 1, 0},
                 {"SHORT_CONV", ATTN_CG_UNIFORM_BATCH, 1, 0},
                 {"LINEAR_ATTN", ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE, 0, 1},
                 {"GDN_ATTN", ATTN_CG_UNIFORM_BATCH, 0, 0},
                 {"KIMI_K3_KDA", ATTN_CG_ALWAYS, 0, 0},
                 {"BAILING_LINEAR_ATTN", ATTN_CG_UNIFORM_BATCH, 0, 0},
                 {"PLE_SHORT_CONV_ATTN", ATTN_CG_UNIFORM_BATCH, 0, 0},
                 {"KIMI_K3_KDA_ROCM", ATTN_CG_UNIFORM_BATCH, 0, 0}};
enum { kNumExpected = sizeof kExpected / sizeof kExpected[0] };

/* The Mamba family, found through the registry: the built-in backends that build for a
 * MambaSpec (attn_backend_info's kinds, then the builder). */
static size_t mamba_family(const char** out, size_t cap) {
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  const attn_builder_config_t c = mconfig(0, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  return ts_backends_building(ATTN_BACKEND_BUILTIN, &spec, &c, out, cap);
}

/* ---- registry, levels, refusals --------------------------------------------------------------- */

static void test_registry_and_levels(void** state) {
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  const char* family[32];
  size_t i, k, n, found = 0;
  (void)state;
  n = mamba_family(family, 32);
  assert_true(n <= 32);
  for (i = 0; i < n; ++i) {
    for (k = 0; k < kNumExpected && strcmp(family[i], kExpected[k].name) != 0; ++k) continue;
    if (k == kNumExpected) fail_msg("%s builds for a MambaSpec but has no expectation here", family[i]);
    ++found;
  }
  assert_int_equal(found, kNumExpected);
  for (k = 0; k < kNumExpected; ++k) {
    int32_t spec_tokens;
    for (spec_tokens = 0; spec_tokens <= 2; spec_tokens += 2) {
      const attn_builder_config_t c = mconfig(spec_tokens, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
      int32_t level = -1, threshold = -1, update = -1;
      attn_builder_t* b;
      ASSERT_OK(attn_backend_cudagraph_support(kExpected[k].name, &spec, &c, &level));
      assert_int_equal(level, kExpected[k].level);
      b = ts_builder(kExpected[k].name, &spec, &c);
      ASSERT_OK(attn_builder_cudagraph_support(b, &level));
      assert_int_equal(level, kExpected[k].level);
      ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
      assert_int_equal(threshold, kExpected[k].fixed_reorder ? 1 : 1 + spec_tokens);
      ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
      assert_int_equal(update, kExpected[k].update && spec_tokens == 0);
      attn_builder_destroy(b);
    }
  }
}

static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  const attn_builder_config_t c = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  attn_kv_cache_spec_t full = ts_spec();
  const char* family[32];
  size_t k, n = mamba_family(family, 32);
  int32_t level = 0;
  (void)state;
  assert_true(n >= 1 && n <= 32);
  for (k = 0; k < n; ++k)
    ASSERT_ERROR(attn_builder_create(family[k], &full, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "builds metadata only for MAMBA KV cache specs (vLLM's MambaSpec), got "
                 "kv_cache_spec->kind=0 (FULL_ATTENTION)");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  /* attention backends (the built-in ones that build for a full-attention spec, enumerated)
   * refuse Mamba specs */
  {
    const char* attention[32];
    attn_builder_config_t flex = c;
    const attn_kv_cache_spec_t full_spec = ts_spec();
    size_t n, a;
    flex.num_gpu_blocks = 64;
    n = ts_backends_building(ATTN_BACKEND_BUILTIN, &full_spec, &flex, attention, 32);
    assert_true(n >= 1 && n <= 32);
    for (a = 0; a < n; ++a)
      ASSERT_ERROR(attn_builder_create(attention[a], &spec, &flex, &b), ATTN_ERR_UNSUPPORTED,
                   "MAMBA KV cache specs (kv_cache_spec->kind=6)");
  }
  /* mamba_type picks the backend */
  spec.mamba_type = ATTN_MAMBA_TYPE_GDN_ATTENTION;
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->mamba_type=5 (\"gdn_attention\") is served by vLLM's GDN_ATTN "
               "backend, not MAMBA2 (\"mamba2\")");
  b = ts_builder("GDN_ATTN", &spec, &c);
  attn_builder_destroy(b);
  spec.mamba_type = ATTN_MAMBA_TYPE_MAMBA2;
  spec.mamba_chunk_size = 0;
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_chunk_size=0 must be positive for MAMBA2");
  {
    size_t bytes = 0;
    ASSERT_ERROR(attn_builder_workspace_size("MAMBA2", &spec, &c, &bytes), ATTN_ERR_INVALID_ARGUMENT,
                 "mamba_chunk_size=0 must be positive for MAMBA2");
  }
  ASSERT_OK(attn_backend_cudagraph_support("MAMBA2", &spec, &c, &level)); /* the classmethod */
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  /* spec validation of the ABI 1.2 fields */
  spec = mspec(7, 8, 0);
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_cache_mode=7 is not an ATTN_MAMBA_CACHE_MODE_* value (0..2)");
  spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, -1);
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->num_speculative_blocks=-1 is not in [0, 65536]");
  spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, -8, 0);
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_chunk_size=-8 is negative");
  spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  spec.mamba_type = 9;
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_type=9 is not an ATTN_MAMBA_TYPE_* value (0..5)");
  /* An ABI 1.0 caller's spec (no Mamba fields): the defaults, "none" mode, no chunk size. */
  spec = mspec(ATTN_MAMBA_CACHE_MODE_ALL, 8, 0);
  spec.struct_size = ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0;
  b = ts_builder("MAMBA1", &spec, &c);
  attn_builder_destroy(b);
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_chunk_size=0");
  spec.struct_size = ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0 + 4; /* cuts mamba_chunk_size in half */
  ASSERT_ERROR(attn_builder_create("MAMBA1", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->struct_size=52 is not the size of an ABI version of this struct");
}

/* ---- hand-checked batches --------------------------------------------------------------------- */

/* MAMBA2, chunk 8, "none" mode. Two decodes, then three prefills:
 *   request  query  computed  seq   block-table column 0 (ids from 1, two blocks per row but r1)
 *   0        1      29        30    1
 *   1        1      6         7     3
 *   2        12     5         17    4
 *   3        8      16        24    6
 *   4        20     0         20    8
 * query_start_loc = [0, 1, 2, 14, 22, 42]; the prefills' query_start_loc_p = [0, 12, 20, 40].
 * Chunks (a chunk never crosses a request or a multiple of 8 of its own positions):
 *   request 2: computed 5 is not chunk-aligned: a first chunk finishes it with min(8 - 5, 12) = 3
 *              tokens (at 0), then cdiv(9, 8) = 2 chunks: 8 tokens at 3, 1 token at 11;
 *   request 3: computed 16 is aligned: one chunk of 8 at 12;
 *   request 4: nothing computed: 8 at 20, 8 at 28, 4 at 36.
 * cu_chunk_seqlen_p = [0, 3, 11, 12, 20, 28, 36, 40], seq_idx_p = [0, 0, 0, 1, 2, 2, 2],
 * last_chunk_indices_p = [2, 3, 6]. has_initial_states_p = [1, 1, 0], prep_initial_states.
 * causal conv1d (BLOCK_M 8): nums = [cdiv(12,8), cdiv(8,8), cdiv(20,8)] = [2, 1, 3], tot 6,
 * batch_ptr = [0, 0, 1, 2, 2, 2, -1...], token_chunk_offset_ptr = [0, 1, 0, 0, 1, 2, -1...],
 * 2048 entries (max(1024, 6) * 2). */
static void test_mamba2_worked_example(void** state) {
  static const int32_t q[] = {1, 1, 12, 8, 20}, s[] = {30, 7, 17, 24, 20};
  static const int32_t qsl_p[] = {0, 12, 20, 40}, cu[] = {0, 3, 11, 12, 20, 28, 36, 40};
  static const int32_t seq_idx[] = {0, 0, 0, 1, 2, 2, 2}, last[] = {2, 3, 6}, nums[] = {2, 1, 3};
  static const int32_t d[] = {1, 3}, p[] = {4, 6, 8};
  static const int has_initial[] = {1, 1, 0};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  const attn_builder_config_t c = ts_config();
  static const uint8_t prefilling[] = {0, 0, 1, 1, 1};
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* batch = mbatch(q, s, 5, 16, 0, prefilling);
  attn_metadata_t* m = build(b, &batch->common);
  const attn_tensor_t* t;
  int64_t i;
  (void)state;
  assert_string_equal(attn_metadata_kind(m), "MAMBA2");
  assert_int_equal(attn_metadata_field_count(m), 37);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 40);
  assert_int_equal(ts_int(m, "num_reqs"), 5);
  expect_i32_2d(m, "state_indices_tensor_d", d, 2, 1);
  expect_i32(m, "state_indices_tensor_p", p, 3);
  expect_i32(m, "query_start_loc_p", qsl_p, 4);
  expect_bools(m, "has_initial_states_p", has_initial, 3);
  expect_i32(m, "cu_chunk_seqlen_p", cu, 8);
  expect_i32(m, "seq_idx_p", seq_idx, 7);
  expect_i32(m, "last_chunk_indices_p", last, 3);
  expect_bool_field(m, "prep_initial_states", 1);
  assert_int_equal(ts_int(m, "chunk_size"), 8);
  assert_int_equal(ts_int(m, "nums_dict_block_m"), 8);
  assert_int_equal(ts_int(m, "nums_dict_tot"), 6);
  assert_int_equal(ts_int(m, "nums_dict_mlist_len"), 6);
  expect_i32(m, "nums_dict_nums", nums, 3);
  t = ts_tensor(m, "batch_ptr");
  assert_int_equal(t->shape[0], 2048);
  for (i = 0; i < 2048; ++i) {
    static const int32_t bp[] = {0, 0, 1, 2, 2, 2}, off[] = {0, 1, 0, 0, 1, 2};
    assert_int_equal(at1(t, i), i < 6 ? bp[i] : -1);
    assert_int_equal(at1(ts_tensor(m, "token_chunk_offset_ptr"), i), i < 6 ? off[i] : -1);
  }
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  /* No spec decode, no ReplaySSM, no prefill checkpoints: None. */
  {
    static const char* const none[] = {
        "query_start_loc_d", "num_accepted_tokens", "write_pos_d", "is_flush_d",
        "bc_pre_scratch", "replayssm_scratch_cb_scaled", "replayssm_scratch_cumAdt_vec",
        "replayssm_scratch_cb_old", "replayssm_state_indices_d", "checkpoint_chunk_idx",
        "checkpoint_meta_checkpoint_offsets", "checkpoint_meta_state_indices",
        "checkpoint_meta_offsets", "checkpoint_meta_query_lens", "checkpoint_meta_request_rows",
        "checkpoint_meta_block_cols"};
    size_t k;
    for (k = 0; k < sizeof none / sizeof none[0]; ++k) ts_expect_none(m, none[k]);
  }
  /* vLLM 0.33 dropped "all" mode's fields */
  {
    attn_field_t f = ATTN_FIELD_INIT;
    ASSERT_ERROR(attn_metadata_get(m, "num_computed_tokens_p", &f), ATTN_ERR_NOT_FOUND,
                 "num_computed_tokens_p");
    ASSERT_ERROR(attn_metadata_get(m, "block_idx_last_scheduled_token", &f), ATTN_ERR_NOT_FOUND,
                 "block_idx_last_scheduled_token");
  }

  /* SHORT_CONV: the same base metadata without chunks. */
  {
    attn_builder_t* sc = ts_builder("SHORT_CONV", &spec, &c);
    attn_metadata_t* sm = build(sc, &batch->common);
    assert_int_equal(attn_metadata_field_count(sm), 27);
    expect_i32(sm, "query_start_loc_p", qsl_p, 4);
    expect_i32(sm, "state_indices_tensor_p", p, 3);
    ts_expect_none(sm, "cu_chunk_seqlen_p");
    ts_expect_none(sm, "last_chunk_indices_p");
    assert_int_equal(ts_int(sm, "nums_dict_tot"), 6);
    attn_builder_destroy(sc);
  }
  /* A decode-only batch: no prefill fields, prep_initial_states False. */
  {
    static const int32_t dq[] = {1, 1}, ds[] = {9, 40};
    ts_batch* db = mbatch(dq, ds, 2, 16, 0, NULL);
    m = build(b, &db->common);
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    ts_expect_none(m, "query_start_loc_p");
    ts_expect_none(m, "has_initial_states_p");
    ts_expect_none(m, "cu_chunk_seqlen_p");
    ts_expect_none(m, "batch_ptr");
    ts_expect_none(m, "nums_dict_tot");
    expect_bool_field(m, "prep_initial_states", 0);
    ts_batch_free(db);
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* is_prefilling (vLLM's CommonAttentionMetadata field, treat_short_extends_as_decodes=False)
 * as vLLM 0.33's _compute_common_metadata reads it: a request still in its prompt is a prefill,
 * except a one-token chunk with prior state (seq_len > query_len), which 0.33 turns into a
 * decode (the q=[1] ctx=[10]). Block 16, chunk 8:
 *   request  query  seq  is_prefilling  0.33
 *   0        1      10   0              decode
 *   1        1      20   0              decode
 *   2        1      5    1              decode (one token, 4 computed)
 *   3        1      1    1              prefill (one token, no state: the first prefill)
 *   4        4      4    1              prefill
 * query_start_loc_p = [0, 1, 5]; no initial states; chunks: 1 token at 0, 4 at 1. */
static void test_is_prefilling(void** state) {
  static const int32_t q[] = {1, 1, 1, 1, 4}, s[] = {10, 20, 5, 1, 4};
  static const uint8_t prefilling[] = {0, 0, 1, 1, 1};
  static int64_t shape[1] = {5};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  const attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* batch = mbatch(q, s, 5, 16, 0, prefilling);
  attn_metadata_t* m = build(b, &batch->common);
  static const int32_t qsl_p[] = {0, 1, 5}, cu[] = {0, 1, 5}, seq_idx[] = {0, 1};
  static const int has_initial[] = {0, 0};
  (void)state;
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 3);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 5);
  expect_i32(m, "query_start_loc_p", qsl_p, 3);
  expect_bools(m, "has_initial_states_p", has_initial, 2);
  expect_i32(m, "cu_chunk_seqlen_p", cu, 3);
  expect_i32(m, "seq_idx_p", seq_idx, 2);
  expect_bool_field(m, "prep_initial_states", 0);
  {
    /* the batch alone: q=[1] ctx=[10] marked is_prefilling is a decode in 0.33 */
    static const int32_t q1[] = {1}, s1[] = {11};
    static const uint8_t p1[] = {1};
    const char* const names[] = {"MAMBA2", "MAMBA1", "SHORT_CONV"};
    int k;
    ts_batch* one = mbatch(q1, s1, 1, 16, 0, p1);
    for (k = 0; k < 3; ++k) {
      attn_builder_t* x = ts_builder(names[k], &spec, &c);
      m = build(x, &one->common);
      assert_int_equal(ts_int(m, "num_decodes"), 1);
      assert_int_equal(ts_int(m, "num_prefills"), 0);
      ts_expect_none(m, "query_start_loc_p");
      attn_builder_destroy(x);
    }
    ts_batch_free(one);
  }
  /* vLLM 0.33 asserts is_prefilling and seq_lens_cpu_upper_bound are present */
  {
    const attn_tensor_t* keep = batch->common.is_prefilling;
    batch->common.is_prefilling = NULL;
    m = (attn_metadata_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->is_prefilling is NULL; MAMBA2 needs it (vLLM 0.33's "
                 "_compute_common_metadata asserts common_attn_metadata.is_prefilling is not None)");
    assert_ptr_equal(m, UNTOUCHED_PTR);
    /* an ABI 1.1 caller cannot pass it: refused the same way */
    batch->common.is_prefilling = keep;
    batch->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE_1_1;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->is_prefilling is NULL");
    batch->common.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
  }
  {
    float bad[5] = {0};
    attn_tensor_t f = ts_host_tensor(bad, 1, shape, ATTN_DTYPE_FLOAT, 32);
    const attn_tensor_t* keep = batch->common.is_prefilling;
    batch->common.is_prefilling = &f;
    ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "common->is_prefilling has dtype float32, expected bool, int8, uint8 or int32");
    batch->common.is_prefilling = keep;
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* A prompt tail padded with placeholder drafts (vLLM 0.33: a stateful prefill whose query is
 * num_decode_draft_tokens_cpu + 1 tokens) is a spec decode. num_speculative_tokens 2
 * (threshold 3), num_accepted_tokens given:
 *   request  query  seq  is_prefilling  drafts  0.33
 *   0        3      20   0              2       decode
 *   1        3      13   1              2       decode (padded prompt tail)
 *   2        5      30   1              -1      prefill
 * Without the draft counts request 1 is a prefill; MAMBA1's build() drops them (and
 * num_accepted_tokens: threshold 1, all prefills). */
static void test_padded_prompt_tail(void** state) {
  static const int32_t q[] = {3, 3, 5}, s[] = {20, 13, 30}, draft[] = {2, 2, -1}, acc[] = {1, 2, 1};
  static const uint8_t prefilling[] = {0, 1, 1};
  static const int32_t qsl_d[] = {0, 3, 6}, acc_d[] = {1, 2};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 2);
  const attn_builder_config_t c = mconfig(2, ATTN_CUDAGRAPH_MODE_NONE);
  const char* const names[] = {"MAMBA2", "SHORT_CONV", "MAMBA1"};
  ts_batch* batch = mbatch(q, s, 3, 16, 3, prefilling);
  vec32 drafts, accepted;
  int k;
  (void)state;
  vec_make(&drafts, draft, 3);
  vec_make(&accepted, acc, 3);
  batch->common.num_accepted_tokens = &accepted.t;
  for (k = 0; k < 3; ++k) {
    attn_builder_t* b = ts_builder(names[k], &spec, &c);
    attn_metadata_t* m;
    batch->common.num_decode_draft_tokens_cpu = NULL;
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_decodes"), k == 2 ? 0 : 1);
    batch->common.num_decode_draft_tokens_cpu = &drafts.t;
    m = build(b, &batch->common);
    if (k == 2) {
      assert_int_equal(ts_int(m, "num_decodes"), 0);
      ts_expect_none(m, "num_accepted_tokens");
    } else {
      assert_int_equal(ts_int(m, "num_decodes"), 2);
      assert_int_equal(ts_int(m, "num_decode_tokens"), 6);
      assert_int_equal(ts_int(m, "num_prefills"), 1);
      expect_i32(m, "query_start_loc_d", qsl_d, 3);
      expect_i32(m, "num_accepted_tokens", acc_d, 2);
    }
    attn_builder_destroy(b);
  }
  ts_batch_free(batch);
}

/* "all" mode is gone from vLLM 0.33 (cache_config.mamba_cache_mode accepts "none" and "align"):
 * refused at builder creation, with the reason. */
static void test_all_mode_refused(void** state) {
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_ALL, 8, 0);
  const attn_builder_config_t c = ts_config();
  const char* const names[] = {"MAMBA2", "MAMBA1", "SHORT_CONV", "LINEAR_ATTN", "GDN_ATTN"};
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  int k;
  (void)state;
  for (k = 0; k < 5; ++k) {
    char want[256];
    snprintf(want, sizeof want,
             "kv_cache_spec->mamba_cache_mode=1 (\"all\") was removed in vLLM 0.33 "
             "(cache_config.mamba_cache_mode accepts \"none\" and \"align\"); %s builds \"none\" "
             "and \"align\" only", names[k]);
    ASSERT_ERROR(attn_builder_create(names[k], &spec, &c, &b), ATTN_ERR_UNSUPPORTED, want);
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

/* "align" mode: 1 + num_speculative_blocks columns gathered from the block of the last token,
 * start = max((seq_len - 1) // block_size, 0). With num_speculative_blocks 1, block 16:
 *   seq 33 -> start 2 (columns 2, 3); seq 16 -> start 0 (0, 1); seq 0 (padding) -> start 0. */
static void test_align_mode(void** state) {
  static const int32_t q[] = {1, 1, 0}, s[] = {33, 16, 0};
  attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_ALIGN, 8, 1);
  const attn_builder_config_t c = mconfig(1, ATTN_CUDAGRAPH_MODE_NONE);
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* batch = mbatch(q, s, 3, 16, 4, NULL);
  attn_metadata_t* m;
  int32_t d[3 * 2];
  (void)state;
  m = build(b, &batch->common);
  d[0] = bt_at(batch, 0, 2), d[1] = bt_at(batch, 0, 3);
  d[2] = bt_at(batch, 1, 0), d[3] = bt_at(batch, 1, 1);
  d[4] = bt_at(batch, 2, 0), d[5] = bt_at(batch, 2, 1);
  expect_i32_2d(m, "state_indices_tensor_d", d, 3, 2); /* [:, :1 + num_spec_tokens] */
  /* LINEAR_ATTN and GDN_ATTN use the same gather (column 0) */
  {
    attn_builder_t* lb = ts_builder("LINEAR_ATTN", &spec, &c);
    const int32_t col0[] = {d[0], d[2], d[4]};
    attn_metadata_t* lm = build(lb, &batch->common);
    expect_i32(lm, "state_indices_tensor", col0, 3);
    attn_builder_destroy(lb);
  }
  /* the gathered columns must lie inside the table (vLLM's torch.gather would fail) */
  batch->bt_shape[1] = 3;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->block_table_tensor has 3 columns but request 0 (seq_lens[0]=33, "
               "block_size=16) gathers columns 2..3 in \"align\" mode");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* Spec decode (num_speculative_tokens 2, threshold 3) with num_accepted_tokens: multi-token
 * decodes; query_start_loc_d = query_start_loc[:num_decodes + 1], num_accepted_tokens sliced to
 * the decodes, state_indices_tensor_d = table[:num_decodes, :3]. MAMBA1 drops the keyword
 * arguments (its build() calls _compute_common_metadata alone): threshold 1. */
static void test_spec_decode(void** state) {
  static const int32_t q[] = {3, 2, 3, 9}, s[] = {40, 12, 7, 9}, acc[] = {2, 1, 3, 1};
  static const int32_t qsl_d[] = {0, 3, 5, 8}, acc_d[] = {2, 1, 3};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 2);
  const attn_builder_config_t c = mconfig(2, ATTN_CUDAGRAPH_MODE_NONE);
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* batch = mbatch(q, s, 4, 16, 3, NULL);
  vec32 accepted;
  attn_metadata_t* m;
  int32_t d[9];
  int r, k;
  (void)state;
  vec_make(&accepted, acc, 4);
  m = build(b, &batch->common); /* no num_accepted_tokens: threshold 1, all prefills */
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  ts_expect_none(m, "query_start_loc_d");
  batch->common.num_accepted_tokens = &accepted.t;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 8);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  expect_i32(m, "query_start_loc_d", qsl_d, 4);
  expect_i32(m, "num_accepted_tokens", acc_d, 3);
  for (r = 0; r < 3; ++r)
    for (k = 0; k < 3; ++k) d[r * 3 + k] = bt_at(batch, r, k);
  expect_i32_2d(m, "state_indices_tensor_d", d, 3, 3);
  attn_builder_destroy(b);
  b = ts_builder("MAMBA1", &spec, &c);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  ts_expect_none(m, "query_start_loc_d");
  ts_expect_none(m, "num_accepted_tokens");
  attn_builder_destroy(b);
  /* vLLM 0.33: decodes under spec decode without num_accepted_tokens (one-token rows; MAMBA1,
   * whose build drops the argument) get diff(query_start_loc_d): every token accepted */
  {
    static const int32_t q1[] = {1, 1, 5}, s1[] = {9, 4, 5}, ones[] = {1, 1}, qsl1[] = {0, 1, 2};
    const char* const names[] = {"MAMBA2", "MAMBA1", "SHORT_CONV"};
    ts_batch* ob = mbatch(q1, s1, 3, 16, 3, NULL);
    for (k = 0; k < 3; ++k) {
      attn_builder_t* x = ts_builder(names[k], &spec, &c);
      m = build(x, &ob->common);
      assert_int_equal(ts_int(m, "num_decodes"), 2);
      expect_i32(m, "query_start_loc_d", qsl1, 3);
      expect_i32(m, "num_accepted_tokens", ones, 2);
      attn_builder_destroy(x);
    }
    ts_batch_free(ob);
  }
  /* num_accepted_tokens with the wrong length */
  b = ts_builder("SHORT_CONV", &spec, &c);
  accepted.shape[0] = 3;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_accepted_tokens");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* Full CUDA graphs (the default mode): decode-only batches go through persistent buffers whose
 * addresses do not change between builds; prefill batches view the inputs. */
static void test_cudagraph_buffers(void** state) {
  static const int32_t q[] = {2, 2, 2}, s[] = {20, 30, 40}, acc[] = {1, 2, 1};
  static const int32_t mq[] = {2, 7}, ms[] = {9, 7};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 1);
  const attn_builder_config_t c = mconfig(1, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* batch = mbatch(q, s, 3, 16, 3, NULL);
  ts_batch* mixed = mbatch(mq, ms, 2, 16, 3, NULL);
  vec32 accepted, accepted2;
  attn_metadata_t* m;
  const void *d_addr, *acc_addr;
  int32_t d[6];
  int r;
  (void)state;
  vec_make(&accepted, acc, 3);
  vec_make(&accepted2, acc, 2);
  batch->common.num_accepted_tokens = &accepted.t;
  mixed->common.num_accepted_tokens = &accepted2.t;
  m = build(b, &batch->common);
  for (r = 0; r < 3; ++r) d[2 * r] = bt_at(batch, r, 0), d[2 * r + 1] = bt_at(batch, r, 1);
  expect_i32_2d(m, "state_indices_tensor_d", d, 3, 2);
  expect_i32(m, "num_accepted_tokens", acc, 3);
  d_addr = ts_tensor(m, "state_indices_tensor_d")->data;
  acc_addr = ts_tensor(m, "num_accepted_tokens")->data;
  assert_ptr_not_equal(d_addr, batch->bt);
  assert_ptr_not_equal(acc_addr, accepted.v);
  /* a mixed batch views its inputs */
  m = build(b, &mixed->common);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  assert_ptr_equal(ts_tensor(m, "state_indices_tensor_d")->data, mixed->bt);
  /* the next decode batch lands at the same addresses */
  batch->bt[0] = 77;
  m = build(b, &batch->common);
  assert_ptr_equal(ts_tensor(m, "state_indices_tensor_d")->data, d_addr);
  assert_ptr_equal(ts_tensor(m, "num_accepted_tokens")->data, acc_addr);
  assert_int_equal(at2(ts_tensor(m, "state_indices_tensor_d"), 0, 0), 77);
  ts_batch_free(batch);
  ts_batch_free(mixed);
  attn_builder_destroy(b);
}

/* build_for_cudagraph_capture: decode-only batches of 1 + num_speculative_tokens tokens. */
static void test_capture(void** state) {
  static const int32_t q1[] = {1, 1, 1}, s1[] = {5, 6, 7};
  static const int32_t q2[] = {2, 2, 2}, s2[] = {5, 6, 7}, acc[] = {2, 2, 2};
  static const int32_t qm[] = {1, 4}, sm[] = {5, 6};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 1);
  attn_builder_config_t c = mconfig(0, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* one = mbatch(q1, s1, 3, 16, 2, NULL);
  ts_batch* two = mbatch(q2, s2, 3, 16, 2, NULL);
  ts_batch* mixed = mbatch(qm, sm, 2, 16, 2, NULL);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &one->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &mixed->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "MAMBA2 has CUDA graph support UNIFORM_BATCH: request 0 has query length 1 but the "
               "batch is uniform in 4");
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &two->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "MAMBA2 only supports decode-only full CUDAGraph capture: common->max_query_len=2 "
               "must be <= 1 + num_speculative_tokens=1 and common->num_reqs=3 <= "
               "decode_cudagraph_max_bs=256");
  attn_builder_destroy(b);
  /* a capture size below the batch */
  c.max_cudagraph_capture_size = 2;
  b = ts_builder("MAMBA2", &spec, &c);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &one->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "common->num_reqs=3 <= decode_cudagraph_max_bs=2");
  attn_builder_destroy(b);
  /* spec decode: num_accepted_tokens = diff(query_start_loc), the caller's is not read */
  c = mconfig(1, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  b = ts_builder("MAMBA2", &spec, &c);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &two->common, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 3);
  expect_i32(m, "num_accepted_tokens", acc, 3);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &one->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "MAMBA2 captures decode-only batches: common->max_query_len=1 must equal 1 + "
               "num_speculative_tokens=2");
  attn_builder_destroy(b);
  /* the capture size as vLLM's engine (model runner V1) leaves it: the default sizes up to 3,
   * [1, 2], rounded to multiples of 1 + k = 2 leave [2], so three requests are past it; model
   * runner V2 does not round (3) */
  c.max_cudagraph_capture_size = 3;
  b = ts_builder("MAMBA2", &spec, &c);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &two->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "common->num_reqs=3 <= decode_cudagraph_max_bs=2");
  attn_builder_destroy(b);
  c.use_v2_model_runner = 1;
  b = ts_builder("MAMBA2", &spec, &c);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &two->common, &m, NULL));
  attn_builder_destroy(b);
  /* LINEAR_ATTN: single-token decodes only */
  b = ts_builder("LINEAR_ATTN", &spec, &c);
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &one->common, &m, NULL));
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &two->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "LINEAR_ATTN has CUDA graph support UNIFORM_SINGLE_TOKEN_DECODE: request 0 has query "
               "length 2 (only single-token decodes)");
  attn_builder_destroy(b);
  ts_batch_free(one);
  ts_batch_free(two);
  ts_batch_free(mixed);
}

/* update_block_table: the state indices from another KV cache group's table, everything else
 * shared; refused with spec decode and by LINEAR_ATTN and GDN_ATTN. */
static void test_update_block_table(void** state) {
  static const int32_t q[] = {1, 6, 9}, s[] = {20, 6, 30};
  const attn_builder_config_t c = mconfig(0, ATTN_CUDAGRAPH_MODE_NONE);
  attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  attn_builder_t* b = ts_builder("MAMBA2", &spec, &c);
  ts_batch* batch = mbatch(q, s, 3, 16, 2, NULL);
  int32_t table[3 * 2] = {101, 102, 201, 202, 301, 302};
  int64_t shape[2] = {3, 2};
  attn_tensor_t t = ts_host_tensor(table, 2, shape, ATTN_DTYPE_INT, 32);
  attn_metadata_t *m = build(b, &batch->common), *u = NULL;
  const void* qsl_p;
  static const int32_t d[] = {101}, p[] = {201, 301};
  (void)state;
  qsl_p = ts_tensor(m, "query_start_loc_p")->data;
  ASSERT_OK(attn_update_block_table(b, m, &t, &batch->sm_t, &u, NULL));
  expect_i32_2d(u, "state_indices_tensor_d", d, 1, 1);
  expect_i32(u, "state_indices_tensor_p", p, 2);
  assert_ptr_equal(ts_tensor(u, "query_start_loc_p")->data, qsl_p);
  assert_int_equal(ts_int(u, "num_prefills"), 2);
  shape[0] = 2;
  ASSERT_ERROR(attn_update_block_table(b, u, &t, &batch->sm_t, &u, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "Mismatch in number of requests when updating block table: block_table has 2 rows "
               "(ndim=2), expected 3");
  shape[0] = 3;
  {
    /* the slot mapping is checked although the metadata has no slot_mapping field: the batch's
     * dtype and length, host memory for a host builder */
    int32_t sm32[16] = {0};
    int64_t n = batch->common.slot_mapping->shape[0], short_n = n - 1;
    attn_tensor_t bad = ts_host_tensor(sm32, 1, &n, ATTN_DTYPE_INT, 32);
    ASSERT_ERROR(attn_update_block_table(b, u, &t, &bad, &u, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "slot_mapping has dtype int32, expected int64");
    bad = batch->sm_t;
    bad.shape = &short_n;
    ASSERT_ERROR(attn_update_block_table(b, u, &t, &bad, &u, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "slot_mapping has shape (");
    bad = batch->sm_t;
    bad.device.device_type = ATTN_DEVICE_CUDA;
    ASSERT_ERROR(attn_update_block_table(b, u, &t, &bad, &u, NULL), ATTN_ERR_INVALID_ARGUMENT,
                 "slot_mapping is on cuda:0 but the builder runs on cpu");
  }
  attn_builder_destroy(b);
  /* "align": gathered again from the new table with the metadata's seq_lens */
  spec = mspec(ATTN_MAMBA_CACHE_MODE_ALIGN, 8, 0);
  b = ts_builder("MAMBA1", &spec, &c);
  m = build(b, &batch->common);
  ASSERT_OK(attn_update_block_table(b, m, &t, &batch->sm_t, &u, NULL));
  {
    /* seq 20 -> column 1; seq 6 -> 0; seq 30 -> 1 */
    static const int32_t ad[] = {102}, ap[] = {201, 302};
    expect_i32_2d(u, "state_indices_tensor_d", ad, 1, 1);
    expect_i32(u, "state_indices_tensor_p", ap, 2);
  }
  /* the in-place update overwrote what m showed: m is stale, u is the live result */
  ASSERT_ERROR(attn_update_block_table(b, m, &t, &batch->sm_t, &u, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "metadata is stale: it is result #1 of a MAMBA1 builder that has since published "
               "result #2");
  shape[1] = 1;
  ASSERT_ERROR(attn_update_block_table(b, u, &t, &batch->sm_t, &u, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "block_table has 1 columns but the longest sequence (30 tokens) needs 2 in \"align\" "
               "mode (block_size=16)");
  shape[1] = 2;
  attn_builder_destroy(b);
  {
    const attn_builder_config_t sc = mconfig(1, ATTN_CUDAGRAPH_MODE_NONE);
    const char* const refused[] = {"MAMBA2", "LINEAR_ATTN", "GDN_ATTN"};
    int k;
    spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
    for (k = 0; k < 3; ++k) {
      b = ts_builder(refused[k], &spec, k == 0 ? &sc : &c);
      m = build(b, &batch->common);
      ASSERT_ERROR(attn_update_block_table(b, m, &t, &batch->sm_t, &u, NULL), ATTN_ERR_UNSUPPORTED,
                   "does not support update_block_table");
      attn_builder_destroy(b);
    }
  }
  ts_batch_free(batch);
}

/* ---- vLLM 0.33's ReplaySSM and MAMBA2's prefill checkpoints (ABI 1.6 inputs) ----------------- */

/* A tensor field's shape and dtype. */
static void expect_shape(const attn_metadata_t* m, const char* name, uint8_t code, uint8_t bits,
                         int32_t ndim, const int64_t* shape) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int32_t d;
  if (t == NULL) fail_msg("%s is None", name);
  if (t->dtype.code != code || t->dtype.bits != bits)
    fail_msg("%s has dtype code %d bits %d, expected %d/%d", name, t->dtype.code, t->dtype.bits, code, bits);
  assert_int_equal(t->ndim, ndim);
  for (d = 0; d < ndim; ++d)
    if (t->shape[d] != shape[d]) fail_msg("%s shape[%d] = %lld, expected %lld", name, d, (long long)t->shape[d], (long long)shape[d]);
}

static int64_t at1_i64(const attn_tensor_t* t, int64_t i) {
  return ((const int64_t*)base(t))[i * t->strides[0]];
}
static int at1_i8(const attn_tensor_t* t, int64_t i) {
  return ((const signed char*)base(t))[i * t->strides[0]];
}

/* Triton ReplaySSM (replayssm_buffer_len 4), four decodes (row 3 a one-token prefill with prior
 * state, a decode in 0.33): computed = seq_len - 1, steps = computed - replayssm_decode_base_cpu,
 * write_pos = steps mod 4, flush at slot 3 or for a row with steps < 0 (forced to 0):
 *   row  seq  base  computed  steps       write_pos  is_flush
 *   0    10   5     9         4           0          0
 *   1    20   20    19        -1 -> 0     0          1
 *   2    7    3     6         3           3          1
 *   3    3    8     2         -6 -> 0     0          1
 * In "align" mode (block 16) the anchor is at least the current block's start:
 *   seq 30 base 5: anchor 16, steps 13, write_pos 1, no flush; seq 48 base 5: anchor 32, steps
 *   15, write_pos 3 (flush; the step also completes block 3); seq 33 base 40: anchor 40, steps
 *   -8 -> 0, flush. */
static void test_replayssm_triton(void** state) {
  static const int32_t q[] = {1, 1, 1, 1}, s[] = {10, 20, 7, 3}, base_v[] = {5, 20, 3, 8};
  static const uint8_t prefilling[] = {0, 0, 0, 1};
  static const int32_t pos[] = {0, 0, 3, 0};
  static const int flush[] = {0, 1, 1, 1};
  static const int64_t bc_shape[] = {4, 2, 4};
  attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  attn_builder_config_t c = mconfig(0, ATTN_CUDAGRAPH_MODE_NONE);
  ts_batch* batch = mbatch(q, s, 4, 16, 0, prefilling);
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  attn_metadata_t* m;
  vec32 decode_base;
  int k;
  (void)state;
  c.use_replayssm = 1;
  c.replayssm_buffer_len = 4;
  /* vLLM sizes bc_pre_scratch from MambaSpec.shapes[4][0]: required */
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_replayssm_ngroups=0 must be positive with "
               "config->use_replayssm on Triton");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  spec.mamba_replayssm_ngroups = 2;
  b = ts_builder("MAMBA2", &spec, &c);
  /* decodes need the ring origins (vLLM's ValueError) */
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "--use-replayssm requires exact CPU sequence lengths and decode-base counts to "
               "derive decode write positions (vLLM 0.33's ValueError): "
               "common->replayssm_decode_base_cpu is NULL");
  vec_make(&decode_base, base_v, 4);
  batch->common.replayssm_decode_base_cpu = &decode_base.t;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 4);
  expect_i32(m, "write_pos_d", pos, 4);
  for (k = 0; k < 4; ++k) assert_int_equal(at1_i8(ts_tensor(m, "is_flush_d"), k), flush[k]);
  expect_shape(m, "is_flush_d", ATTN_DTYPE_INT, 8, 1, bc_shape);
  expect_shape(m, "bc_pre_scratch", ATTN_DTYPE_FLOAT, 32, 3, bc_shape);
  ts_expect_none(m, "replayssm_scratch_cb_scaled");
  ts_expect_none(m, "replayssm_state_indices_d");
  attn_builder_destroy(b);
  /* async scheduling with spec decode: refused as vLLM refuses it */
  c.async_scheduling = 1;
  c.num_speculative_tokens = 1;
  b = ts_builder("SHORT_CONV", &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "config->async_scheduling with speculative decoding");
  attn_builder_destroy(b);
  c.async_scheduling = 0;
  c.num_speculative_tokens = 0;
  ts_batch_free(batch);
  /* "align": the anchor moves to the current block's start */
  {
    static const int32_t aq[] = {1, 1, 1}, as[] = {30, 48, 33}, ab[] = {5, 5, 40};
    static const int32_t apos[] = {1, 3, 0};
    static const int aflush[] = {0, 1, 1};
    ts_batch* abatch = mbatch(aq, as, 3, 16, 0, NULL);
    spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_ALIGN;
    b = ts_builder("MAMBA1", &spec, &c);
    vec_make(&decode_base, ab, 3);
    abatch->common.replayssm_decode_base_cpu = &decode_base.t;
    m = build(b, &abatch->common);
    expect_i32(m, "write_pos_d", apos, 3);
    for (k = 0; k < 3; ++k) assert_int_equal(at1_i8(ts_tensor(m, "is_flush_d"), k), aflush[k]);
    attn_builder_destroy(b);
    ts_batch_free(abatch);
  }
}

/* FlashInfer ReplaySSM: allocate_checkpointing_ssu_scratch's three buffers sliced to the
 * decodes (k = 1: token_pad 16; replayssm_buffer_len 4: old_token_pad 8; 8 heads, bfloat16),
 * and replayssm_state_indices_d = state_indices_tensor_d[:, 0], contiguous. */
static void test_replayssm_flashinfer(void** state) {
  static const int32_t q[] = {2, 1, 5}, s[] = {10, 20, 5}, acc[] = {1, 1, 1};
  static const int64_t cb[] = {2, 8, 32, 8}, cum[] = {2, 8, 16}, old[] = {2, 8, 32, 4};
  attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 1);
  attn_builder_config_t c = mconfig(1, ATTN_CUDAGRAPH_MODE_NONE);
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  ts_batch* batch = mbatch(q, s, 3, 16, 2, NULL);
  attn_metadata_t* m;
  vec32 accepted;
  int32_t col0[2];
  (void)state;
  c.use_replayssm = 1;
  c.mamba_backend_flashinfer = 1;
  c.replayssm_buffer_len = 4;
  c.model_dtype = ATTN_KV_DTYPE_BFLOAT16;
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->mamba_num_heads=0 must be positive with config->use_replayssm on "
               "FlashInfer");
  spec.mamba_num_heads = 8;
  c.replayssm_buffer_len = 17;
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "\"max_window must be in [1, 16]\"");
  c.replayssm_buffer_len = 4;
  b = ts_builder("MAMBA2", &spec, &c);
  vec_make(&accepted, acc, 3);
  batch->common.num_accepted_tokens = &accepted.t;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  expect_shape(m, "replayssm_scratch_cb_scaled", ATTN_DTYPE_BFLOAT, 16, 4, cb);
  expect_shape(m, "replayssm_scratch_cumAdt_vec", ATTN_DTYPE_FLOAT, 32, 3, cum);
  expect_shape(m, "replayssm_scratch_cb_old", ATTN_DTYPE_BFLOAT, 16, 4, old);
  col0[0] = bt_at(batch, 0, 0), col0[1] = bt_at(batch, 1, 0);
  expect_i32(m, "replayssm_state_indices_d", col0, 2);
  assert_int_equal(ts_tensor(m, "replayssm_state_indices_d")->strides[0], 1);
  ts_expect_none(m, "write_pos_d");
  ts_expect_none(m, "bc_pre_scratch");
  attn_builder_destroy(b);
  /* update_block_table (no spec decode) takes column 0 of the new table */
  {
    int32_t table[3 * 2];
    int64_t shape[2] = {3, 2};
    attn_tensor_t t = ts_host_tensor(table, 2, shape, ATTN_DTYPE_INT, 32);
    attn_metadata_t* u = NULL;
    static const int32_t q1[] = {1, 1, 5}, s1[] = {10, 20, 5};
    ts_batch* ub = mbatch(q1, s1, 3, 16, 2, NULL);
    int k;
    c = mconfig(0, ATTN_CUDAGRAPH_MODE_NONE);
    c.use_replayssm = 1;
    c.mamba_backend_flashinfer = 1;
    c.replayssm_buffer_len = 4;
    b = ts_builder("SHORT_CONV", &spec, &c);
    m = build(b, &ub->common);
    for (k = 0; k < 6; ++k) table[k] = 100 + k;
    ASSERT_OK(attn_update_block_table(b, m, &t, &ub->sm_t, &u, NULL));
    col0[0] = 100, col0[1] = 102;
    expect_i32(u, "replayssm_state_indices_d", col0, 2);
    ts_batch_free(ub);
    attn_builder_destroy(b);
  }
  ts_batch_free(batch);
}

/* MAMBA2's prefill checkpoints ("align", block 16, chunk 8; hash_block_size and
 * cache_hit_alignment_tokens 16, prefill_checkpoint_alignment 8, one checkpoint block). A decode,
 * then three prefills:
 *   row  query  computed  seq  position (cdiv-aligned below seq - 1)  valid  offset  column
 *   1    40     0         40   32                                     yes    32      1
 *   2    20     16        36   32                                     yes    16      1
 *   3    10     5         15   0 (start 5 is not on a hash block)     no     0       -1
 * Chunks: row 1: 8 at 0, 8, 16, 24 (the checkpoint ends chunk 3), 8 at 32; row 2: 8 at 40, 48
 * (checkpoint: chunk 6), 4 at 56; row 3: 3 at 60 (finishing computed 5), 7 at 63.
 * cu_chunk_seqlen_p = [0, 8, 16, 24, 32, 40, 48, 56, 60, 63, 70], last_chunk_indices_p =
 * [4, 7, 9], checkpoint_chunk_idx = [3, 6, 0] (int64). */
static void test_prefill_checkpoints(void** state) {
  static const int32_t q[] = {1, 40, 20, 10}, s[] = {20, 40, 36, 15};
  static const uint8_t prefilling[] = {0, 1, 1, 1};
  static const int32_t cu[] = {0, 8, 16, 24, 32, 40, 48, 56, 60, 63, 70}, last[] = {4, 7, 9};
  static const int32_t seq_idx[] = {0, 0, 0, 0, 0, 1, 1, 1, 2, 2}, offs[] = {32, 16, 0};
  static const int32_t qls[] = {40, 20, 10};
  static const int64_t idx[] = {3, 6, 0}, rows[] = {1, 2, 3}, cols[] = {1, 1, -1};
  attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_ALIGN, 8, 0);
  attn_builder_config_t c = mconfig(0, ATTN_CUDAGRAPH_MODE_NONE);
  ts_batch* batch = mbatch(q, s, 4, 16, 0, prefilling);
  attn_builder_t* b;
  attn_metadata_t *m, *u = NULL;
  int32_t states[3];
  int k;
  (void)state;
  spec.num_prefill_checkpoint_blocks = 1;
  spec.prefill_checkpoint_alignment = 8;
  /* without the config's hash sizes (vLLM's profiling KV cache): none */
  b = ts_builder("MAMBA2", &spec, &c);
  m = build(b, &batch->common);
  ts_expect_none(m, "checkpoint_chunk_idx");
  ts_expect_none(m, "checkpoint_meta_state_indices");
  attn_builder_destroy(b);
  c.hash_block_size = 16;
  c.cache_hit_alignment_tokens = 16;
  b = ts_builder("MAMBA2", &spec, &c);
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_prefills"), 3);
  expect_i32(m, "cu_chunk_seqlen_p", cu, 11);
  expect_i32(m, "seq_idx_p", seq_idx, 10);
  expect_i32(m, "last_chunk_indices_p", last, 3);
  expect_i32(m, "checkpoint_meta_checkpoint_offsets", offs, 3);
  expect_i32(m, "checkpoint_meta_offsets", offs, 3);
  expect_i32(m, "checkpoint_meta_query_lens", qls, 3);
  for (k = 0; k < 3; ++k) {
    assert_int_equal(at1_i64(ts_tensor(m, "checkpoint_chunk_idx"), k), idx[k]);
    assert_int_equal(at1_i64(ts_tensor(m, "checkpoint_meta_request_rows"), k), rows[k]);
    assert_int_equal(at1_i64(ts_tensor(m, "checkpoint_meta_block_cols"), k), cols[k]);
  }
  states[0] = bt_at(batch, 1, 1), states[1] = bt_at(batch, 2, 1), states[2] = 0;
  expect_i32(m, "checkpoint_meta_state_indices", states, 3);
  /* update_block_table re-gathers the destinations from the new table */
  {
    int32_t table[4 * 3];
    int64_t shape[2] = {4, 3};
    attn_tensor_t t = ts_host_tensor(table, 2, shape, ATTN_DTYPE_INT, 32);
    for (k = 0; k < 12; ++k) table[k] = batch->bt[k] * 3 + 1;
    ASSERT_OK(attn_update_block_table(b, m, &t, &batch->sm_t, &u, NULL));
    states[0] = table[1 * 3 + 1], states[1] = table[2 * 3 + 1];
    expect_i32(u, "checkpoint_meta_state_indices", states, 3);
    expect_i32(u, "checkpoint_meta_checkpoint_offsets", offs, 3);
  }
  /* MAMBA1 and SHORT_CONV have no checkpoint fields; MAMBA2 in "none" mode none */
  {
    attn_builder_t* x = ts_builder("MAMBA1", &spec, &c);
    attn_field_t f = ATTN_FIELD_INIT;
    m = build(x, &batch->common);
    ASSERT_ERROR(attn_metadata_get(m, "checkpoint_chunk_idx", &f), ATTN_ERR_NOT_FOUND,
                 "checkpoint_chunk_idx");
    attn_builder_destroy(x);
    spec.mamba_cache_mode = ATTN_MAMBA_CACHE_MODE_NONE;
    x = ts_builder("MAMBA2", &spec, &c);
    m = build(x, &batch->common);
    ts_expect_none(m, "checkpoint_chunk_idx");
    attn_builder_destroy(x);
  }
  /* spec validation */
  spec.num_prefill_checkpoint_blocks = -1;
  ASSERT_ERROR(attn_builder_create("MAMBA2", &spec, &c, &b), ATTN_ERR_INVALID_ARGUMENT,
               "kv_cache_spec->num_prefill_checkpoint_blocks=-1 is not in [0, 65536]");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* LINEAR_ATTN: the split at threshold 1, the batch's query_start_loc and seq_lens, column 0. */
static void test_linear_attn(void** state) {
  static const int32_t q[] = {1, 2, 5}, s[] = {7, 2, 30};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 0, 0);
  const attn_builder_config_t c = mconfig(3, ATTN_CUDAGRAPH_MODE_NONE);
  attn_builder_t* b = ts_builder("LINEAR_ATTN", &spec, &c);
  ts_batch* batch = mbatch(q, s, 3, 16, 0, NULL);
  attn_metadata_t* m = build(b, &batch->common);
  int32_t col0[3];
  int r;
  (void)state;
  assert_int_equal(attn_metadata_field_count(m), 7);
  assert_int_equal(ts_int(m, "num_decodes"), 1);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 1);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 7);
  assert_ptr_equal(ts_tensor(m, "query_start_loc")->data, batch->qsl);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  for (r = 0; r < 3; ++r) col0[r] = bt_at(batch, r, 0);
  expect_i32(m, "state_indices_tensor", col0, 3);
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* ---- GDN_ATTN --------------------------------------------------------------------------------- */

/* A 1-D int64 field equals `expected` (GDN's token indices in batches with prefills: vLLM's
 * argsort indices). */
static void expect_i64(const attn_metadata_t* m, const char* name, const int32_t* expected, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("%s is None", name);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->dtype.bits, 64);
  if (t->shape[0] != n) fail_msg("%s has %lld entries, expected %lld", name, (long long)t->shape[0], (long long)n);
  for (i = 0; i < n; ++i) {
    const int64_t got = ((const int64_t*)base(t))[i * t->strides[0]];
    if (got != expected[i]) fail_msg("%s[%lld] = %lld, expected %d", name, (long long)i, (long long)got, expected[i]);
  }
}

/* Without spec decode: decodes (query 1) then prefills; one state index per request; the
 * causal conv1d metadata covers every non-spec request (decodes included), as vLLM computes it
 * from non_spec_query_start_loc. */
static void test_gdn_no_spec(void** state) {
  static const int32_t q[] = {1, 1, 9, 4}, s[] = {30, 2, 9, 10}, nums[] = {1, 1, 2, 1};
  static const int has_initial[] = {1, 1, 0, 1};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 0, 0);
  const attn_builder_config_t c = mconfig(0, ATTN_CUDAGRAPH_MODE_NONE);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 0, -1);
  attn_metadata_t* m = build(b, &batch->common);
  int32_t col0[4];
  int r;
  (void)state;
  assert_int_equal(attn_metadata_field_count(m), 39);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 13);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 0);
  assert_int_equal(ts_int(m, "num_spec_decode_tokens"), 0);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 15);
  for (r = 0; r < 4; ++r) col0[r] = bt_at(batch, r, 0);
  expect_i32(m, "non_spec_state_indices_tensor", col0, 4);
  assert_ptr_equal(ts_tensor(m, "non_spec_query_start_loc")->data, batch->qsl);
  expect_bools(m, "has_initial_state", has_initial, 4);
  expect_i32(m, "nums_dict_nums", nums, 4);
  assert_int_equal(ts_int(m, "nums_dict_tot"), 5);
  ts_expect_none(m, "spec_query_start_loc");
  ts_expect_none(m, "spec_state_indices_tensor");
  ts_expect_none(m, "spec_sequence_masks");
  ts_expect_none(m, "spec_token_indx");
  ts_expect_none(m, "num_accepted_tokens");
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* Spec decode (num_speculative_tokens 2) in a mixed batch:
 *   request  query  draft  group
 *   0        3      2      spec
 *   1        1      -1     non-spec decode
 *   2        2      1      spec
 *   3        5      -1     non-spec prefill
 * query_start_loc = [0, 3, 4, 6, 11]. Non-spec: one decode, one prefill; with spec decodes in
 * the batch the decode goes through the prefill path: num_decodes 0, num_prefills 2,
 * num_prefill_tokens 1 + 5 = 6; num_spec_decodes 2, num_spec_decode_tokens 11 - 6 = 5.
 * spec_query_start_loc = [0, 3, 5], non_spec_query_start_loc = [0, 1, 6];
 * spec_token_indx = [0, 1, 2, 4, 5], non_spec_token_indx = [3, 6, 7, 8, 9, 10] (the stable
 * argsort of the token mask); spec_state_indices_tensor = rows 0 and 2, columns 0..2;
 * non_spec_state_indices_tensor = column 0 of rows 1 and 3; num_accepted_tokens = [a0, a2];
 * has_initial_state over the non-spec requests: seq 8 - 1 > 0, seq 5 - 5 = 0 -> [1, 0];
 * conv1d over [0, 1, 6]: nums [1, 1], tot 2. */
static void test_gdn_spec_mixed(void** state) {
  static const int32_t q[] = {3, 1, 2, 5}, s[] = {40, 8, 20, 5}, draft[] = {2, -1, 1, -1};
  static const int32_t acc[] = {3, 1, 2, 1}, acc_spec[] = {3, 2};
  static const int32_t spec_qsl[] = {0, 3, 5}, non_spec_qsl[] = {0, 1, 6};
  static const int32_t spec_tok[] = {0, 1, 2, 4, 5}, non_spec_tok[] = {3, 6, 7, 8, 9, 10};
  static const int masks[] = {1, 0, 1, 0}, has_initial[] = {1, 0};
  static const int32_t nums[] = {1, 1};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 0, 2);
  const attn_builder_config_t c = mconfig(2, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
  vec32 accepted, drafts;
  attn_metadata_t* m;
  int32_t st[6], ns[2];
  int k;
  (void)state;
  vec_make(&accepted, acc, 4);
  vec_make(&drafts, draft, 4);
  batch->common.num_decode_draft_tokens_cpu = &drafts.t;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_accepted_tokens is NULL; GDN_ATTN gathers it for the 2 spec-decode "
               "requests that common->num_decode_draft_tokens_cpu marks");
  batch->common.num_accepted_tokens = &accepted.t;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 2);
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 6);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
  assert_int_equal(ts_int(m, "num_spec_decode_tokens"), 5);
  expect_bools(m, "spec_sequence_masks", masks, 4);
  expect_i32(m, "spec_query_start_loc", spec_qsl, 3);
  expect_i32(m, "non_spec_query_start_loc", non_spec_qsl, 3);
  expect_i64(m, "spec_token_indx", spec_tok, 5);
  expect_i64(m, "non_spec_token_indx", non_spec_tok, 6);
  for (k = 0; k < 3; ++k) st[k] = bt_at(batch, 0, k), st[3 + k] = bt_at(batch, 2, k);
  expect_i32_2d(m, "spec_state_indices_tensor", st, 2, 3);
  ns[0] = bt_at(batch, 1, 0), ns[1] = bt_at(batch, 3, 0);
  expect_i32(m, "non_spec_state_indices_tensor", ns, 2);
  expect_i32(m, "num_accepted_tokens", acc_spec, 2);
  expect_bools(m, "has_initial_state", has_initial, 2);
  expect_i32(m, "nums_dict_nums", nums, 2);
  assert_int_equal(ts_int(m, "nums_dict_tot"), 2);
  /* every draft count 0: still the spec path (vLLM 0.33 takes it when any request is marked;
   * only that path applies the accepted-token offsets) */
  {
    static const int32_t zero[] = {0, -1, 0, -1};
    vec_make(&drafts, zero, 4);
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_spec_decodes"), 2);
    expect_bools(m, "spec_sequence_masks", masks, 4);
    expect_i32(m, "num_accepted_tokens", acc_spec, 2);
    assert_int_equal(ts_int(m, "num_prefills"), 2);
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* A decode-only spec batch (3 spec decodes of 3 tokens, one zero-length padding request): the
 * all-spec branch (spec_token_indx = arange, spec_query_start_loc = query_start_loc[:4]) and
 * the persistent CUDA-graph copies: rows padded with NULL_BLOCK_ID, masks with False,
 * spec_query_start_loc with its last value, num_accepted_tokens with 1. Then GDN's capture. */
static void test_gdn_all_spec_and_capture(void** state) {
  static const int32_t q[] = {3, 3, 3, 0}, s[] = {10, 20, 30, 0}, draft[] = {2, 2, 2, -1};
  static const int32_t acc[] = {1, 3, 2, 1}, acc_cg[] = {1, 3, 2, 1};
  static const int32_t spec_qsl[] = {0, 3, 6, 9, 9}, tok[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  static const int masks[] = {1, 1, 1, 0};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 0, 2);
  attn_builder_config_t c = mconfig(2, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 4, 16, 3, -1);
  vec32 accepted, drafts;
  attn_metadata_t* m = NULL;
  int32_t st[12];
  int r, k;
  (void)state;
  vec_make(&accepted, acc, 4);
  vec_make(&drafts, draft, 4);
  batch->common.num_accepted_tokens = &accepted.t;
  batch->common.num_decode_draft_tokens_cpu = &drafts.t;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 3);
  assert_int_equal(ts_int(m, "num_spec_decode_tokens"), 9);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  assert_int_equal(ts_int(m, "num_decodes"), 0);
  expect_bools(m, "spec_sequence_masks", masks, 4);
  expect_i32(m, "spec_query_start_loc", spec_qsl, 5);
  expect_i32(m, "spec_token_indx", tok, 9);
  expect_i32(m, "non_spec_token_indx", tok, 0);
  for (r = 0; r < 4; ++r)
    for (k = 0; k < 3; ++k) st[r * 3 + k] = r < 3 ? bt_at(batch, r, k) : 0; /* NULL_BLOCK_ID */
  expect_i32_2d(m, "spec_state_indices_tensor", st, 4, 3);
  expect_i32(m, "num_accepted_tokens", acc_cg, 4);
  ts_expect_none(m, "non_spec_state_indices_tensor");
  ts_expect_none(m, "non_spec_query_start_loc");
  ts_expect_none(m, "has_initial_state");
  /* capture: num_accepted_tokens = diff(query_start_loc) = [3, 3, 3, 0], drafts = that - 1 */
  batch->common.num_accepted_tokens = NULL;
  batch->common.num_decode_draft_tokens_cpu = NULL;
  ASSERT_OK(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL));
  {
    static const int32_t cap_acc[] = {3, 3, 3, 1};
    expect_i32(m, "num_accepted_tokens", cap_acc, 4);
    expect_bools(m, "spec_sequence_masks", masks, 4);
  }
  attn_builder_destroy(b);
  c.max_cudagraph_capture_size = 6;
  b = ts_builder("GDN_ATTN", &spec, &c);
  ASSERT_ERROR(attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL), ATTN_ERR_UNSUPPORTED,
               "GDN only supports decode-only full CUDAGraph capture. Make sure batch size (4) <= "
               "cudagraph capture sizes (6), and number of tokens (9) <= cudagraph capture sizes (6)");
  attn_builder_destroy(b);
  /* decode-only without spec decodes: the non-spec persistent copies */
  {
    static const int32_t dq[] = {1, 1}, ds[] = {4, 9}, dqsl[] = {0, 1, 2};
    ts_batch* db = ts_batch_make(dq, ds, 2, 16, 3, -1);
    int32_t col0[2];
    b = ts_builder("GDN_ATTN", &spec, &c);
    m = build(b, &db->common);
    col0[0] = bt_at(db, 0, 0), col0[1] = bt_at(db, 1, 0);
    expect_i32(m, "non_spec_state_indices_tensor", col0, 2);
    expect_i32(m, "non_spec_query_start_loc", dqsl, 3);
    assert_ptr_not_equal(ts_tensor(m, "non_spec_query_start_loc")->data, db->qsl);
    attn_builder_destroy(b);
    ts_batch_free(db);
  }
  ts_batch_free(batch);
}

/* Bad input: every message names the field and the value. */
static void test_bad_input(void** state) {
  static const int32_t q[] = {1, 3}, s[] = {5, 9}, draft[] = {-1, 2}, acc[] = {1, 3};
  const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
  const attn_builder_config_t c = mconfig(2, ATTN_CUDAGRAPH_MODE_NONE);
  attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
  ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
  vec32 drafts, accepted;
  attn_metadata_t* m = (attn_metadata_t*)UNTOUCHED_PTR;
  (void)state;
  vec_make(&drafts, draft, 2);
  vec_make(&accepted, acc, 2);
  batch->common.num_accepted_tokens = &accepted.t;
  batch->common.num_decode_draft_tokens_cpu = &drafts.t;
  drafts.t.device.device_type = ATTN_DEVICE_CUDA;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_decode_draft_tokens_cpu is on cuda:0; a *_cpu mirror must be in host memory");
  drafts.t.device.device_type = ATTN_DEVICE_CPU;
  drafts.shape[0] = 3;
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &m, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->num_decode_draft_tokens_cpu has shape (3,), expected (2,)");
  assert_ptr_equal(m, UNTOUCHED_PTR);
  drafts.shape[0] = 2;
  m = build(b, &batch->common);
  assert_int_equal(ts_int(m, "num_spec_decodes"), 1);
  /* a batch without requests may declare a table of any width (no overflow) */
  {
    int32_t qsl0[1] = {0};
    int64_t qshape[1] = {1}, sshape[1] = {0}, bshape[2] = {0, (int64_t)1 << 60}, mshape[1] = {0};
    int32_t none[1] = {0};
    int64_t slots[1] = {0};
    attn_tensor_t qt = ts_host_tensor(qsl0, 1, qshape, ATTN_DTYPE_INT, 32);
    attn_tensor_t st = ts_host_tensor(none, 1, sshape, ATTN_DTYPE_INT, 32);
    attn_tensor_t bt = ts_host_tensor(none, 2, bshape, ATTN_DTYPE_INT, 32);
    attn_tensor_t sm = ts_host_tensor(slots, 1, mshape, ATTN_DTYPE_INT, 64);
    attn_common_metadata_t empty = ATTN_COMMON_METADATA_INIT;
    const attn_kv_cache_spec_t mode_none = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 8, 0);
    attn_builder_t* ab = ts_builder("MAMBA2", &mode_none, &c);
    empty.is_prefilling = prefilling_of(NULL, 0);
    empty.query_start_loc = &qt;
    empty.seq_lens = &st;
    empty.block_table_tensor = &bt;
    empty.slot_mapping = &sm;
    m = build(ab, &empty);
    assert_int_equal(ts_int(m, "num_reqs"), 0);
    attn_builder_destroy(ab);
  }
  ts_batch_free(batch);
  attn_builder_destroy(b);
}

/* ---- seeded random batches against naive computations ----------------------------------------- */

/* vLLM's _compute_chunk_metadata, line by line. */
static int64_t naive_chunks(const int32_t* q, const int32_t* computed, int64_t np, int32_t chunk,
                            int32_t* cu, int32_t* seq_idx, int32_t* last) {
  int64_t k = 0, pos = 0, r;
  for (r = 0; r < np; ++r) {
    int64_t nc = computed[r], rest = q[r], n, j;
    if (nc % chunk != 0) {
      int64_t len = ((nc + chunk - 1) / chunk) * chunk - nc;
      if (len > rest) len = rest;
      seq_idx[k] = (int32_t)r, cu[k++] = (int32_t)pos;
      pos += len, rest -= len;
    }
    n = (rest + chunk - 1) / chunk;
    for (j = 0; j < n; ++j) {
      const int64_t len = rest < chunk ? rest : chunk;
      seq_idx[k] = (int32_t)r, cu[k++] = (int32_t)pos;
      pos += len, rest -= len;
    }
    last[r] = (int32_t)(k - 1);
  }
  cu[k] = (int32_t)pos;
  return k;
}

static int64_t cdiv64(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

static void test_random_mamba(void** state) {
  static const int32_t chunks[] = {4, 8, 16, 32};
  static const char* const names[] = {"MAMBA2", "MAMBA1", "SHORT_CONV"};
  uint64_t seed = 2024;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int v = (int)ts_rand_range(&seed, 0, 2);
    const int32_t mode =
        ts_rand_range(&seed, 0, 1) ? ATTN_MAMBA_CACHE_MODE_ALIGN : ATTN_MAMBA_CACHE_MODE_NONE;
    const int32_t chunk = chunks[ts_rand_range(&seed, 0, 3)];
    const int32_t nsb = (int32_t)ts_rand_range(&seed, 0, 2);
    const int64_t n = ts_rand_range(&seed, 1, 12), nd = ts_rand_range(&seed, 0, n);
    const attn_kv_cache_spec_t spec = mspec(mode, chunk, nsb);
    const attn_builder_config_t c = mconfig(0, iter % 2 ? ATTN_CUDAGRAPH_MODE_NONE
                                                        : ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
    attn_builder_t* b = ts_builder(names[v], &spec, &c);
    int32_t q[12], s[12], computed[12], cu[128], seq_idx[128], last[12], qsl_p[13], nums[12];
    uint8_t prefilling[12];
    int64_t r, j, max_seq = 0, np = n - nd, tokens_p = 0, tot = 0, num_chunks;
    ts_batch* batch;
    attn_metadata_t* m;
    /* decodes: one token with prior state, still in the prompt or not (0.33: a decode either
     * way); prefills: 2..40 tokens, or one token without state, still in the prompt */
    for (r = 0; r < n; ++r) {
      q[r] = r < nd ? 1 : (int32_t)ts_rand_range(&seed, 1, 40);
      computed[r] = (int32_t)ts_rand_range(&seed, r < nd ? 1 : 0, 70);
      prefilling[r] = (uint8_t)ts_rand_range(&seed, 0, 1);
      if (r >= nd && q[r] == 1) computed[r] = 0, prefilling[r] = 1;
      s[r] = computed[r] + q[r];
      if (s[r] > max_seq) max_seq = s[r];
    }
    batch = mbatch(q, s, n, 16, cdiv64(max_seq, 16) + nsb, prefilling);
    m = build(b, &batch->common);
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_prefills"), np);
    assert_int_equal(ts_int(m, "num_decode_tokens"), nd);
    /* state indices: the mode's table, split into decodes and prefills */
    {
      const attn_tensor_t* d = ts_tensor(m, "state_indices_tensor_d");
      const attn_tensor_t* p = ts_tensor(m, "state_indices_tensor_p");
      for (r = 0; r < n; ++r) {
        const int64_t start = mode == ATTN_MAMBA_CACHE_MODE_ALIGN ? (s[r] - 1) / 16 : 0;
        const int32_t want = bt_at(batch, r, start);
        const int32_t got = r < nd ? at2(d, r, 0) : at1(p, r - nd);
        if (got != want) fail_msg("iteration %d: state index of request %lld = %d, expected %d", iter, (long long)r, got, want);
      }
    }
    if (np == 0) {
      ts_expect_none(m, "query_start_loc_p");
    } else {
      int has[12];
      qsl_p[0] = 0;
      for (r = 0; r < np; ++r) {
        qsl_p[r + 1] = qsl_p[r] + q[nd + r];
        has[r] = computed[nd + r] > 0;
        nums[r] = (q[nd + r] + 7) / 8;
        tot += nums[r];
      }
      tokens_p = qsl_p[np];
      assert_int_equal(ts_int(m, "num_prefill_tokens"), tokens_p);
      expect_i32(m, "query_start_loc_p", qsl_p, np + 1);
      expect_bools(m, "has_initial_states_p", has, np);
      expect_i32(m, "nums_dict_nums", nums, np);
      assert_int_equal(ts_int(m, "nums_dict_tot"), tot);
      {
        const attn_tensor_t* bp = ts_tensor(m, "batch_ptr");
        const attn_tensor_t* off = ts_tensor(m, "token_chunk_offset_ptr");
        int64_t pidx = 0;
        assert_int_equal(bp->shape[0], (tot > 1024 ? tot : 1024) * 2);
        for (r = 0; r < np; ++r)
          for (j = 0; j < nums[r]; ++j, ++pidx) {
            assert_int_equal(at1(bp, pidx), r);
            assert_int_equal(at1(off, pidx), j);
          }
        for (; pidx < bp->shape[0]; ++pidx) assert_int_equal(at1(bp, pidx), -1);
      }
      /* chunks: MAMBA2 only (its chunk size) */
      if (v == 0) {
        num_chunks = naive_chunks(q + nd, computed + nd, np, chunk, cu, seq_idx, last);
        expect_i32(m, "cu_chunk_seqlen_p", cu, num_chunks + 1);
        expect_i32(m, "last_chunk_indices_p", last, np);
        expect_i32(m, "seq_idx_p", seq_idx, num_chunks);
      } else {
        ts_expect_none(m, "cu_chunk_seqlen_p");
      }
      if (v == 0) {
        int any = 0;
        for (r = 0; r < np; ++r) any |= has[r];
        expect_bool_field(m, "prep_initial_states", any);
      }
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

/* GDN_ATTN's spec branch against a naive version of vLLM's build(): random spec / non-spec
 * requests (zero-length padding at the end). */
static void test_random_gdn(void** state) {
  uint64_t seed = 77;
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    const int32_t k = (int32_t)ts_rand_range(&seed, 1, 3);
    const int64_t n = ts_rand_range(&seed, 1, 12), pad = ts_rand_range(&seed, 0, 2);
    const attn_kv_cache_spec_t spec = mspec(ATTN_MAMBA_CACHE_MODE_NONE, 0, k);
    const attn_builder_config_t c = mconfig(k, ATTN_CUDAGRAPH_MODE_NONE);
    attn_builder_t* b = ts_builder("GDN_ATTN", &spec, &c);
    int32_t q[16], s[16], draft[16], acc[16], drafts_sum = 0;
    int32_t spec_qsl[17], non_qsl[17], spec_tok[256], non_tok[256], acc_spec[16], non_state[16];
    int has[16], masks[16];
    int64_t r, j, ns = 0, non = 0, nd = 0, zero = 0, np, non_tokens = 0, total = 0, max_seq = 1;
    int64_t npt, ndt, nsdt;
    vec32 accepted, drafts;
    ts_batch* batch;
    attn_metadata_t* m;
    for (r = 0; r < n + pad; ++r) {
      const int is_spec = r < n && ts_rand_range(&seed, 0, 1);
      draft[r] = is_spec ? (int32_t)ts_rand_range(&seed, 0, k) : -1;
      q[r] = r >= n ? 0 : is_spec ? draft[r] + 1 : (int32_t)ts_rand_range(&seed, 1, 3) == 1 ? 1 : (int32_t)ts_rand_range(&seed, 2, 20);
      s[r] = q[r] + (int32_t)ts_rand_range(&seed, r >= n ? 0 : 0, 40);
      acc[r] = (int32_t)ts_rand_range(&seed, 1, k + 1);
      if (s[r] > max_seq) max_seq = s[r];
      if (draft[r] >= 0) drafts_sum += 1; /* vLLM 0.33: any marked request takes the spec path */
    }
    batch = ts_batch_make(q, s, n + pad, 16, cdiv64(max_seq, 16) + k, -1);
    vec_make(&accepted, acc, n + pad);
    vec_make(&drafts, draft, n + pad);
    batch->common.num_accepted_tokens = &accepted.t;
    batch->common.num_decode_draft_tokens_cpu = &drafts.t;
    m = build(b, &batch->common);
    if (drafts_sum == 0) { /* no request marked: the plain split */
      assert_int_equal(ts_int(m, "num_spec_decodes"), 0);
      ts_expect_none(m, "spec_sequence_masks");
      ts_batch_free(batch);
      attn_builder_destroy(b);
      continue;
    }
    spec_qsl[0] = non_qsl[0] = 0;
    for (r = 0; r < n + pad; ++r) {
      masks[r] = draft[r] >= 0;
      if (masks[r]) {
        for (j = 0; j < q[r]; ++j) spec_tok[spec_qsl[ns] + j] = batch->qsl[r] + (int32_t)j;
        acc_spec[ns] = acc[r];
        spec_qsl[ns + 1] = spec_qsl[ns] + q[r];
        ++ns;
      } else {
        for (j = 0; j < q[r]; ++j) non_tok[non_qsl[non] + j] = batch->qsl[r] + (int32_t)j;
        non_state[non] = bt_at(batch, r, 0);
        has[non] = s[r] - q[r] > 0;
        non_qsl[non + 1] = non_qsl[non] + q[r];
        non_tokens += q[r];
        nd += q[r] == 1;
        zero += q[r] == 0;
        ++non;
      }
      total += q[r];
    }
    np = non - nd - zero;
    ndt = nd;
    npt = non_tokens - ndt;
    nsdt = total - npt - ndt;
    if (nd > 0 && ns > 0) np += nd, npt += ndt, nd = 0, ndt = 0;
    assert_int_equal(ts_int(m, "num_spec_decodes"), ns);
    assert_int_equal(ts_int(m, "num_spec_decode_tokens"), nsdt);
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_prefills"), np);
    assert_int_equal(ts_int(m, "num_prefill_tokens"), npt);
    expect_bools(m, "spec_sequence_masks", masks, n + pad);
    expect_i32(m, "num_accepted_tokens", acc_spec, ns);
    {
      const attn_tensor_t* st = ts_tensor(m, "spec_state_indices_tensor");
      int64_t si = 0;
      assert_int_equal(st->shape[0], ns);
      assert_int_equal(st->shape[1], k + 1);
      for (r = 0; r < n + pad; ++r)
        if (masks[r]) {
          for (j = 0; j <= k; ++j) assert_int_equal(at2(st, si, j), bt_at(batch, r, j));
          ++si;
        }
    }
    if (np == 0 && nd == 0) { /* the all-spec branch */
      int32_t arange[256];
      const int64_t size = ns * (k + 1) < total ? ns * (k + 1) : total;
      for (j = 0; j < size; ++j) arange[j] = (int32_t)j;
      expect_i32(m, "spec_token_indx", arange, size);
      expect_i32(m, "spec_query_start_loc", batch->qsl, ns + 1);
      ts_expect_none(m, "non_spec_query_start_loc");
    } else {
      expect_i64(m, "spec_token_indx", spec_tok, nsdt);
      expect_i64(m, "non_spec_token_indx", non_tok, npt + ndt);
      expect_i32(m, "spec_query_start_loc", spec_qsl, ns + 1);
      expect_i32(m, "non_spec_query_start_loc", non_qsl, non + 1);
      expect_i32(m, "non_spec_state_indices_tensor", non_state, non);
    }
    if (np > 0) {
      int32_t nums[16];
      expect_bools(m, "has_initial_state", has, non);
      for (r = 0; r < non; ++r) nums[r] = (non_qsl[r + 1] - non_qsl[r] + 7) / 8;
      expect_i32(m, "nums_dict_nums", nums, non);
    } else {
      ts_expect_none(m, "has_initial_state");
    }
    ts_batch_free(batch);
    attn_builder_destroy(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_and_levels),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_mamba2_worked_example),
      cmocka_unit_test(test_is_prefilling),
      cmocka_unit_test(test_padded_prompt_tail),
      cmocka_unit_test(test_all_mode_refused),
      cmocka_unit_test(test_align_mode),
      cmocka_unit_test(test_spec_decode),
      cmocka_unit_test(test_cudagraph_buffers),
      cmocka_unit_test(test_capture),
      cmocka_unit_test(test_update_block_table),
      cmocka_unit_test(test_replayssm_triton),
      cmocka_unit_test(test_replayssm_flashinfer),
      cmocka_unit_test(test_prefill_checkpoints),
      cmocka_unit_test(test_linear_attn),
      cmocka_unit_test(test_gdn_no_spec),
      cmocka_unit_test(test_gdn_spec_mixed),
      cmocka_unit_test(test_gdn_all_spec_and_capture),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_random_mamba),
      cmocka_unit_test(test_random_gdn),
  };
  return cmocka_run_group_tests_name("mamba", tests, NULL, NULL);
}
