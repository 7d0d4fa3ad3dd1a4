/* attn_builder_create / destroy / queries, attn_builder_workspace_size, attn_min_cudagraph_support,
 * allocator callbacks and caller workspaces. */
#include "test_support.h"

static void test_create_destroy(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = NULL;
  int32_t level = -1, threshold = -1, update = -1;
  (void)state;
  ASSERT_OK(attn_builder_create("FLASH_ATTN", &spec, &config, &b));
  assert_non_null(b);
  assert_string_equal(attn_builder_backend_name(b), "FLASH_ATTN");
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, ATTN_NO_REORDER); /* FlashAttention does not reorder */
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 1);
  attn_builder_destroy(b);
  attn_builder_destroy(NULL);
  assert_string_equal(attn_builder_backend_name(NULL), "");
}

static void test_queries_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = ts_builder("FLASH_ATTN", &spec, &config);
  int32_t v = -7;
  (void)state;
  ASSERT_ERROR(attn_builder_cudagraph_support(NULL, &v), ATTN_ERR_INVALID_ARGUMENT, "builder is NULL");
  ASSERT_ERROR(attn_builder_cudagraph_support(b, NULL), ATTN_ERR_INVALID_ARGUMENT, "out_level is NULL");
  ASSERT_ERROR(attn_builder_reorder_batch_threshold(NULL, &v), ATTN_ERR_INVALID_ARGUMENT, "builder is NULL");
  ASSERT_ERROR(attn_builder_reorder_batch_threshold(b, NULL), ATTN_ERR_INVALID_ARGUMENT, "out_threshold is NULL");
  ASSERT_ERROR(attn_builder_supports_update_block_table(NULL, &v), ATTN_ERR_INVALID_ARGUMENT, "builder is NULL");
  ASSERT_ERROR(attn_builder_supports_update_block_table(b, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  assert_int_equal(v, -7);
  attn_builder_destroy(b);
}

/* One bad field of the config or spec, the code and a piece of the message. */
typedef struct {
  const char* what;
  void (*mutate)(attn_kv_cache_spec_t*, attn_builder_config_t*);
  int32_t code;
  const char* message;
} bad_case;

#define MUT(name, ...) \
  static void name(attn_kv_cache_spec_t* s, attn_builder_config_t* c) { (void)s; (void)c; __VA_ARGS__; }

MUT(m_seqs, c->max_num_seqs = 0)
MUT(m_tokens, c->max_num_batched_tokens = -1)
MUT(m_len, c->max_model_len = 0)
MUT(m_heads, c->num_attention_heads = 0)
MUT(m_spec_tokens, c->num_speculative_tokens = -2)
MUT(m_spec_tokens_huge, c->num_speculative_tokens = INT32_MAX)
MUT(m_dcp_size, c->decode_context_parallel_size = 0)
MUT(m_dcp_rank, { c->decode_context_parallel_size = 2; c->dcp_rank = 2; })
MUT(m_interleave, c->cp_kv_cache_interleave_size = 0)
MUT(m_interleave_div, c->cp_kv_cache_interleave_size = 3)
MUT(m_cg_mode, c->cudagraph_mode = 9)
MUT(m_capture, c->max_cudagraph_capture_size = -1)
MUT(m_cache_dtype, c->cache_dtype = 9)
MUT(m_attn_type, c->attn_type = 7)
MUT(m_capability, c->device_capability = -90)
MUT(m_fa_version, c->flash_attn_version = 1)
MUT(m_splits, c->flash_attn_max_num_splits_for_cuda_graph = -1)
MUT(m_device_type, c->device.device_type = 7)
MUT(m_cpu_id, c->device.device_id = 1)
MUT(m_neg_id, { c->device.device_type = ATTN_DEVICE_CUDA; c->device.device_id = -1; })
MUT(m_validate, c->validate = 5)
MUT(m_layers_null, c->num_layers = 3)
MUT(m_workspace_null, c->workspace_size = 64)
MUT(m_workspace_align, { static char buf[1024]; c->workspace = buf + 1; c->workspace_size = 512; })
MUT(m_extension, c->extension = (void*)c)
MUT(m_config_size, c->struct_size = sizeof(size_t))
MUT(m_spec_kind, s->kind = 9)
MUT(m_spec_block, s->block_size = 0)
MUT(m_spec_heads, s->num_kv_heads = -1)
MUT(m_spec_head_size, s->head_size = 0)
MUT(m_spec_dtype, s->dtype = ATTN_KV_DTYPE_AUTO)
MUT(m_spec_window, s->kind = ATTN_KV_SLIDING_WINDOW)
MUT(m_spec_neg_window, s->sliding_window = -4)
MUT(m_spec_chunk, { s->kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION; s->attention_chunk_size = 24; })
MUT(m_spec_chunk0, s->kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION)
MUT(m_spec_size, s->struct_size = 4)
MUT(m_spec_ext, s->extension = (void*)s)
MUT(m_fa_mla, s->kind = ATTN_KV_MLA)
MUT(m_fa_mamba, s->kind = ATTN_KV_MAMBA)
MUT(m_fa_block, s->block_size = 8)
MUT(m_fa_head, s->head_size = 264)
MUT(m_fa_head8, s->head_size = 100)
MUT(m_fa_e5m2, c->cache_dtype = ATTN_KV_DTYPE_FP8_E5M2)
MUT(m_cross_no_encoder_len, s->kind = ATTN_KV_CROSS_ATTENTION)

static const bad_case kBadCases[] = {
    {"max_num_seqs", m_seqs, ATTN_ERR_INVALID_ARGUMENT, "config->max_num_seqs=0 must be positive"},
    {"max_num_batched_tokens", m_tokens, ATTN_ERR_INVALID_ARGUMENT, "config->max_num_batched_tokens=-1"},
    {"max_model_len", m_len, ATTN_ERR_INVALID_ARGUMENT, "config->max_model_len=0"},
    {"num_attention_heads", m_heads, ATTN_ERR_INVALID_ARGUMENT, "config->num_attention_heads=0"},
    {"num_speculative_tokens", m_spec_tokens, ATTN_ERR_INVALID_ARGUMENT, "config->num_speculative_tokens=-2 is not in [0, 65536]"},
    {"num_speculative_tokens near INT32_MAX", m_spec_tokens_huge, ATTN_ERR_INVALID_ARGUMENT, "config->num_speculative_tokens=2147483647 is not in [0, 65536]"},
    {"dcp size", m_dcp_size, ATTN_ERR_INVALID_ARGUMENT, "config->decode_context_parallel_size=0"},
    {"dcp rank", m_dcp_rank, ATTN_ERR_INVALID_ARGUMENT, "config->dcp_rank=2 is not in [0, decode_context_parallel_size=2)"},
    {"interleave", m_interleave, ATTN_ERR_INVALID_ARGUMENT, "config->cp_kv_cache_interleave_size=0"},
    {"interleave divides block", m_interleave_div, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->block_size=16 is not a multiple of config->cp_kv_cache_interleave_size=3"},
    {"cudagraph_mode", m_cg_mode, ATTN_ERR_INVALID_ARGUMENT, "config->cudagraph_mode=9"},
    {"capture size", m_capture, ATTN_ERR_INVALID_ARGUMENT, "config->max_cudagraph_capture_size=-1 is negative"},
    {"cache_dtype", m_cache_dtype, ATTN_ERR_INVALID_ARGUMENT, "config->cache_dtype=9"},
    {"attn_type", m_attn_type, ATTN_ERR_INVALID_ARGUMENT, "config->attn_type=7"},
    {"device_capability", m_capability, ATTN_ERR_INVALID_ARGUMENT, "config->device_capability=-90"},
    {"flash_attn_version", m_fa_version, ATTN_ERR_INVALID_ARGUMENT, "config->flash_attn_version=1 is not 0 (auto), 2, 3 or 4"},
    {"num_splits", m_splits, ATTN_ERR_INVALID_ARGUMENT, "config->flash_attn_max_num_splits_for_cuda_graph=-1"},
    {"device type", m_device_type, ATTN_ERR_INVALID_ARGUMENT, "config->device.device_type=7"},
    {"cpu device id", m_cpu_id, ATTN_ERR_INVALID_ARGUMENT, "config->device.device_id=1 must be 0"},
    {"negative device id", m_neg_id, ATTN_ERR_INVALID_ARGUMENT, "config->device.device_id=-1 is negative"},
    {"validate", m_validate, ATTN_ERR_INVALID_ARGUMENT, "config->validate=5"},
    {"layers NULL", m_layers_null, ATTN_ERR_INVALID_ARGUMENT, "config->layers is NULL but its count is 3"},
    {"workspace NULL", m_workspace_null, ATTN_ERR_INVALID_ARGUMENT, "config->workspace is NULL but config->workspace_size=64"},
    {"workspace aligned", m_workspace_align, ATTN_ERR_INVALID_ARGUMENT, "is not 256-byte aligned"},
    {"extension", m_extension, ATTN_ERR_INVALID_ARGUMENT, "config->extension="},
    {"config struct_size", m_config_size, ATTN_ERR_INVALID_ARGUMENT, "config->struct_size=8 is smaller than"},
    {"spec kind", m_spec_kind, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->kind=9"},
    {"spec block_size", m_spec_block, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->block_size=0 must be positive"},
    {"spec heads", m_spec_heads, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->num_kv_heads=-1"},
    {"spec head_size", m_spec_head_size, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->head_size=0"},
    {"spec dtype", m_spec_dtype, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->dtype=0"},
    {"sliding window without window", m_spec_window, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->sliding_window=0 must be positive"},
    {"negative window", m_spec_neg_window, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->sliding_window=-4 is negative"},
    {"chunk not multiple", m_spec_chunk, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->attention_chunk_size=24 is not a multiple of kv_cache_spec->block_size=16"},
    {"chunk missing", m_spec_chunk0, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->attention_chunk_size=0 must be positive"},
    {"spec struct_size", m_spec_size, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->struct_size=4 is smaller than"},
    {"spec extension", m_spec_ext, ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec->extension="},
    {"FA on MLA", m_fa_mla, ATTN_ERR_UNSUPPORTED, "FLASH_ATTN does not build metadata for MLA KV cache specs"},
    {"FA on Mamba", m_fa_mamba, ATTN_ERR_UNSUPPORTED, "for MAMBA KV cache specs"},
    {"FA block size", m_fa_block, ATTN_ERR_UNSUPPORTED, "multiple of 16, got 8"},
    {"FA head size", m_fa_head, ATTN_ERR_UNSUPPORTED, "kv_cache_spec->head_size=264"},
    {"FA head size 8", m_fa_head8, ATTN_ERR_UNSUPPORTED, "kv_cache_spec->head_size=100"},
    {"FA e5m2", m_fa_e5m2, ATTN_ERR_UNSUPPORTED, "config->cache_dtype=FP8_E5M2 is not supported"},
    {"cross without max_encoder_len", m_cross_no_encoder_len, ATTN_ERR_INVALID_ARGUMENT,
     "config->max_encoder_len=0 must be positive for a CROSS_ATTENTION KV cache spec"},
};

static void test_create_bad_input(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof kBadCases / sizeof kBadCases[0]; ++i) {
    attn_kv_cache_spec_t spec = ts_spec();
    attn_builder_config_t config = ts_config();
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    attn_error_t* err;
    kBadCases[i].mutate(&spec, &config);
    err = attn_builder_create("FLASH_ATTN", &spec, &config, &b);
    if (err == NULL) fail_msg("case '%s' was accepted", kBadCases[i].what);
    if (attn_error_code(err) != kBadCases[i].code ||
        strstr(attn_error_message(err), kBadCases[i].message) == NULL)
      fail_msg("case '%s': got [%d] \"%s\", expected [%d] \"...%s...\"", kBadCases[i].what,
               attn_error_code(err), attn_error_message(err), kBadCases[i].code,
               kBadCases[i].message);
    attn_error_destroy(err);
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

static void test_create_null_arguments(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  (void)state;
  ASSERT_ERROR(attn_builder_create(NULL, &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT, "backend is NULL");
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", NULL, &config, &b), ATTN_ERR_INVALID_ARGUMENT, "kv_cache_spec is NULL");
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, NULL, &b), ATTN_ERR_INVALID_ARGUMENT, "config is NULL");
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, NULL), ATTN_ERR_INVALID_ARGUMENT, "out is NULL");
  ASSERT_ERROR(attn_builder_create("flash_attn", &spec, &config, &b), ATTN_ERR_NOT_FOUND, "unknown backend 'flash_attn'");
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

static void test_cuda_device_without_gpu(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  int32_t n = 0;
  attn_error_t* count_err = attn_device_count(ATTN_DEVICE_CUDA, &n);
  attn_error_t* err;
  (void)state;
  if (count_err == NULL && n > 0) {
    printf("a CUDA device is visible: the no-GPU refusal is not reachable here\n");
    skip();
  }
  attn_error_destroy(count_err);
  config.device.device_type = ATTN_DEVICE_CUDA;
  err = attn_builder_create("FLASH_ATTN", &spec, &config, &b);
  assert_non_null(err);
  /* Built without CUDA: unsupported. Built with CUDA and no GPU: the runtime's reason. */
  assert_true(attn_error_code(err) == ATTN_ERR_UNSUPPORTED || attn_error_code(err) == ATTN_ERR_CUDA);
  assert_non_null(strstr(attn_error_message(err), "config->device is cuda:0"));
  printf("CUDA builder here: [%s] %s\n", attn_status_string(attn_error_code(err)),
         attn_error_message(err));
  attn_error_destroy(err);
  assert_ptr_equal(b, UNTOUCHED_PTR);
}

static void test_min_cudagraph_support(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t hopper = ts_config(), ampere = ts_config();
  attn_builder_t* bs[3];
  int32_t level = -7;
  (void)state;
  ampere.device_capability = 80;
  bs[0] = ts_builder("FLASH_ATTN", &spec, &hopper);
  bs[1] = ts_builder("FLASH_ATTN", &spec, &ampere);
  bs[2] = NULL;
  ASSERT_OK(attn_min_cudagraph_support(NULL, 0, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS); /* as vLLM: no groups, no restriction */
  ASSERT_OK(attn_min_cudagraph_support((const attn_builder_t* const*)bs, 1, &level));
  assert_int_equal(level, ATTN_CG_ALWAYS);
  ASSERT_OK(attn_min_cudagraph_support((const attn_builder_t* const*)bs, 2, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  level = -7;
  ASSERT_ERROR(attn_min_cudagraph_support((const attn_builder_t* const*)bs, 3, &level),
               ATTN_ERR_INVALID_ARGUMENT, "builders[2] is NULL");
  ASSERT_ERROR(attn_min_cudagraph_support(NULL, 2, &level), ATTN_ERR_INVALID_ARGUMENT, "builders is NULL");
  ASSERT_ERROR(attn_min_cudagraph_support((const attn_builder_t* const*)bs, 2, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_level is NULL");
  assert_int_equal(level, -7);
  attn_builder_destroy(bs[0]);
  attn_builder_destroy(bs[1]);
}

/* ---- allocators and workspaces --------------------------------------------------------- */
typedef struct {
  int allocs, frees, fail_at;  /* fail_at: 1-based call number that returns NULL; 0 never */
  size_t live_bytes;
  int32_t last_device_type;
} counting;

static void* counting_alloc(void* user, size_t bytes, size_t alignment, attn_device_t device) {
  counting* c = (counting*)user;
  void* p = NULL;
  c->allocs++;
  c->last_device_type = device.device_type;
  if (c->fail_at == c->allocs) return NULL;
  assert_true(alignment <= 256 && (alignment & (alignment - 1)) == 0);
  if (posix_memalign(&p, 256, bytes) != 0) return NULL;
  c->live_bytes += bytes;
  return p;
}

static void counting_free(void* user, void* ptr, size_t bytes, attn_device_t device) {
  counting* c = (counting*)user;
  (void)device;
  c->frees++;
  c->live_bytes -= bytes;
  free(ptr);
}

static void test_allocator_callbacks(void** state) {
  counting c = {0, 0, 0, 0, 0};
  attn_allocator_t a = ATTN_ALLOCATOR_INIT;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = NULL;
  (void)state;
  a.alloc = counting_alloc;
  a.free = counting_free;
  a.user_data = &c;
  config.allocator = &a;
  ASSERT_OK(attn_builder_create("FLASH_ATTN", &spec, &config, &b));
  assert_int_equal(c.allocs, 1); /* one block for every persistent buffer */
  assert_int_equal(c.last_device_type, ATTN_DEVICE_CPU);
  assert_true(c.live_bytes > 0);
  {
    /* builds never call the allocator */
    static const int32_t q[2] = {1, 7}, s[2] = {9, 40};
    ts_batch* batch = ts_batch_make(q, s, 2, 16, 0, -1);
    attn_metadata_t* md = NULL;
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &md, NULL));
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &md, NULL));
    assert_int_equal(c.allocs, 1);
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
  assert_int_equal(c.frees, 1);
  assert_int_equal(c.live_bytes, 0);
}

static void test_allocator_failure(void** state) {
  counting c = {0, 0, 1, 0, 0};
  attn_allocator_t a = ATTN_ALLOCATOR_INIT;
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  (void)state;
  a.alloc = counting_alloc;
  a.free = counting_free;
  a.user_data = &c;
  config.allocator = &a;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_OUT_OF_MEMORY,
               "bytes of persistent buffers for FLASH_ATTN on cpu failed");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  assert_int_equal(c.frees, 0);
  assert_int_equal(c.live_bytes, 0);
  a.free = NULL;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->allocator->free is NULL");
  a.free = counting_free;
  a.alloc = NULL;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->allocator->alloc is NULL");
  a.alloc = counting_alloc;
  a.struct_size = 8;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->allocator->struct_size=8");
}

static void test_workspace(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t config = ts_config();
  attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
  size_t bytes = 0, bytes2 = 0;
  void* ws = NULL;
  static const int32_t q[3] = {1, 1, 5}, s[3] = {40, 50, 60};
  ts_batch* batch = ts_batch_make(q, s, 3, 16, 0, -1);
  attn_metadata_t* md = NULL;
  const attn_tensor_t* suffix;
  (void)state;
  ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &spec, &config, &bytes));
  /* cu_prefix (2) + prefix (1) + suffix (256) int32 + FA3 scheduler metadata (1+256*4) int32,
   * each 256-byte aligned */
  assert_int_equal(bytes, 256 + 256 + 1024 + 4352);
  config.cudagraph_mode = ATTN_CUDAGRAPH_MODE_NONE;
  ASSERT_OK(attn_builder_workspace_size("FLASH_ATTN", &spec, &config, &bytes2));
  assert_int_equal(bytes2, 256 + 256 + 1024); /* no scheduler buffer without full graphs */
  config.cudagraph_mode = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE;
  ASSERT_ERROR(attn_builder_workspace_size("FLASH_ATTN", &spec, &config, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_bytes is NULL");
  assert_int_equal(posix_memalign(&ws, 256, bytes), 0);
  config.workspace = ws;
  config.workspace_size = bytes - 1;
  ASSERT_ERROR(attn_builder_create("FLASH_ATTN", &spec, &config, &b), ATTN_ERR_INVALID_ARGUMENT,
               "config->workspace_size=");
  assert_ptr_equal(b, UNTOUCHED_PTR);
  config.workspace_size = bytes;
  ASSERT_OK(attn_builder_create("FLASH_ATTN", &spec, &config, &b));
  ASSERT_OK(attn_build(b, 16, &batch->common, 0, &md, NULL));
  suffix = ts_tensor(md, "suffix_kv_lens");
  assert_non_null(suffix);
  assert_true((const char*)suffix->data >= (const char*)ws &&
              (const char*)suffix->data < (const char*)ws + bytes);
  attn_builder_destroy(b);
  free(ws); /* the caller's memory: the builder never frees it */
  ts_batch_free(batch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_destroy),        cmocka_unit_test(test_queries_bad_input),
      cmocka_unit_test(test_create_bad_input),      cmocka_unit_test(test_create_null_arguments),
      cmocka_unit_test(test_cuda_device_without_gpu), cmocka_unit_test(test_min_cudagraph_support),
      cmocka_unit_test(test_allocator_callbacks),   cmocka_unit_test(test_allocator_failure),
      cmocka_unit_test(test_workspace),
  };
  return cmocka_run_group_tests_name("builder", tests, NULL, NULL);
}
