/* The "builds allocate nothing" half of CUDA graph safety, checked where no GPU is needed.
 *
 * A builder's persistent buffers come from its allocator (attn_builder_config_t.allocator) at
 * create time; attn_build, attn_build_for_cudagraph_capture, attn_build_for_drafting and
 * attn_update_block_table must never call it again, on any backend or wrapper, or the addresses a
 * captured graph holds would move (on a CUDA builder the allocation itself would also break the
 * capture). The allocator is per builder and the code path that calls it is the same for host
 * and CUDA builders, so a counting allocator on host builders checks the claim here; the GPU
 * test (tests/gpu/test_gpu_capture.c) repeats it on CUDA builders inside real captures.
 * With a caller workspace the allocator is not called at all, not even at create time.
 * attn_metadata_clone() is the documented exception: it allocates, and its destroy frees. */
#include "test_support.h"

typedef struct {
  int allocs, frees;
  long long live_bytes;
} counting;

static void* counting_alloc(void* user, size_t bytes, size_t alignment, attn_device_t device) {
  counting* c = (counting*)user;
  void* p = NULL;
  (void)device;
  c->allocs++;
  assert_true(alignment <= 256 && (alignment & (alignment - 1)) == 0);
  if (posix_memalign(&p, 256, bytes) != 0) return NULL;
  c->live_bytes += (long long)bytes;
  return p;
}

static void counting_free(void* user, void* ptr, size_t bytes, attn_device_t device) {
  counting* c = (counting*)user;
  (void)device;
  c->frees++;
  c->live_bytes -= (long long)bytes;
  free(ptr);
}

enum { kWidth = 48, kMaxReqs = 24 };

/* Decodes first (query length 1), then prefills and chunked prefills (2..20). */
static ts_batch* random_batch(uint64_t* seed, int encoder_only) {
  int32_t q[kMaxReqs], s[kMaxReqs];
  const int64_t n = ts_rand_range(seed, 1, kMaxReqs);
  int64_t r;
  for (r = 0; r < n; ++r) {
    q[r] = r < n / 2 ? 1 : (int32_t)ts_rand_range(seed, 2, 20);
    s[r] = encoder_only ? q[r] : q[r] + (int32_t)ts_rand_range(seed, 0, 600);
  }
  return ts_batch_make(q, s, n, 16, encoder_only ? 1 : kWidth, -1);
}

typedef struct {
  const char* backend;
  int32_t kind;      /* spec kind */
  int fast_prefill;  /* config->kv_sharing_fast_prefill */
  int known;         /* a built-in builder: every call of the scenario must succeed */
} scenario;

/* Extra inputs some wrappers read, pointing into `batch`. */
typedef struct {
  int32_t enc[kMaxReqs], logits[kMaxReqs];
  int64_t pos[kMaxReqs * 20];
  int64_t enc_shape[1], logits_shape[1], pos_shape[1];
  attn_tensor_t enc_t, logits_t, pos_t;
} extras;

static void add_extras(const scenario* sc, ts_batch* b, extras* x) {
  int64_t r, t = 0;
  /* the tokens' positions (DEEPSEEK_V41_COMPRESSOR requires them) */
  for (r = 0; r < b->num_reqs; ++r) {
    int64_t p;
    for (p = b->seq[r] - (b->qsl[r + 1] - b->qsl[r]); p < b->seq[r]; ++p) x->pos[t++] = p;
  }
  x->pos_shape[0] = t;
  x->pos_t = ts_host_tensor(x->pos, 1, x->pos_shape, ATTN_DTYPE_INT, 64);
  b->common.positions = &x->pos_t;
  if (sc->kind == ATTN_KV_CROSS_ATTENTION) {
    for (r = 0; r < b->num_reqs; ++r) x->enc[r] = (int32_t)(16 + r % 40);
    x->enc_shape[0] = b->num_reqs;
    x->enc_t = ts_host_tensor(x->enc, 1, x->enc_shape, ATTN_DTYPE_INT, 32);
    b->common.encoder_seq_lens = &x->enc_t;
  }
  if (sc->fast_prefill) {
    for (r = 0; r < b->num_reqs; ++r) x->logits[r] = b->qsl[r + 1] - 1; /* each request's last */
    x->logits_shape[0] = b->num_reqs;
    x->logits_t = ts_host_tensor(x->logits, 1, x->logits_shape, ATTN_DTYPE_INT, 32);
    b->common.logits_indices_padded = &x->logits_t;
    b->common.num_logits_indices = b->num_reqs;
  }
}

/* The specs tried, in order, for a backend that is not built in (MLA, Mamba, plugins): the
 * scenario's, then MLA latent caches of three block sizes, then Mamba states. */
enum { kAltSpecs = 6 };

static void configure_alt(const scenario* sc, int alt, attn_kv_cache_spec_t* spec,
                          attn_builder_config_t* c) {
  *spec = ts_spec();
  *c = ts_config();
  spec->kind = sc->kind;
  if (alt >= 1 && alt <= 3) {
    static const int32_t kMlaBlocks[3] = {64, 16, 128};
    spec->kind = ATTN_KV_MLA;
    spec->block_size = kMlaBlocks[alt - 1];
    spec->num_kv_heads = 1;
    spec->head_size = 576;
  } else if (alt >= 4) {
    spec->kind = ATTN_KV_MAMBA;
    spec->block_size = alt == 4 ? 16 : c->max_model_len;
    spec->num_kv_heads = 1;
    spec->head_size = 1;
    spec->mamba_chunk_size = 256;
  }
  if (sc->kind == ATTN_KV_CHUNKED_LOCAL_ATTENTION) spec->attention_chunk_size = 64;
  if (sc->kind == ATTN_KV_CROSS_ATTENTION) c->max_encoder_len = 64;
  if (sc->kind == ATTN_KV_ENCODER_ONLY) c->attn_type = ATTN_TYPE_ENCODER_ONLY;
  c->kv_sharing_fast_prefill = sc->fast_prefill;
  c->num_gpu_blocks = 2048;
}

static void configure(const scenario* sc, attn_kv_cache_spec_t* spec, attn_builder_config_t* c) {
  configure_alt(sc, 0, spec, c);
}

/* An error from a call the scenario expects to work: fatal for built-in builders, noted for
 * others (a backend that needs a spec of its own). Refusals of a level or of cascade attention
 * are expected and pass silently. */
static int check(const scenario* sc, attn_error_t* err, const char* what) {
  if (err == NULL) return 1;
  if (attn_error_code(err) != ATTN_ERR_UNSUPPORTED && sc->known)
    fail_msg("%s: %s failed: [%d] %s", sc->backend, what, attn_error_code(err), attn_error_message(err));
  attn_error_destroy(err);
  return 0;
}

/* Every build entry point on random batches; the allocator is not called after create. Returns
 * the number of calls that succeeded. */
static int exercise(const scenario* sc, attn_builder_t* b, counting* c, uint64_t seed) {
  const int after_create = c->allocs, frees = c->frees;
  int32_t update = 0, iter, ok = 0;
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  for (iter = 0; iter < 12; ++iter) {
    ts_batch* batch = random_batch(&seed, sc->kind == ATTN_KV_ENCODER_ONLY);
    extras x;
    attn_metadata_t* m = NULL;
    int64_t r, min_seq = 1 << 30, prefix;
    add_extras(sc, batch, &x);
    for (r = 0; r < batch->num_reqs; ++r) min_seq = batch->seq[r] < min_seq ? batch->seq[r] : min_seq;
    prefix = (min_seq - 1) / 16 * 16; /* whole blocks that every request keeps after */
    ok += check(sc, attn_build(b, 0, &batch->common, 0, &m, NULL), "attn_build");
    if (prefix > 0 && sc->kind == ATTN_KV_FULL_ATTENTION && !sc->fast_prefill)
      ok += check(sc, attn_build(b, prefix, &batch->common, 0, &m, NULL), "attn_build with a prefix");
    ok += check(sc, attn_build_for_drafting(b, &batch->common, 1, &m, NULL), "attn_build_for_drafting");
    if (check(sc, attn_build_for_cudagraph_capture(b, &batch->common, &m, NULL),
              "attn_build_for_cudagraph_capture")) {
      ++ok;
      /* TRITON_ATTN's capture wrote 1 into seq_lens: rebuild from the real lengths */
      ts_batch_free(batch);
      batch = random_batch(&seed, sc->kind == ATTN_KV_ENCODER_ONLY);
      add_extras(sc, batch, &x);
    }
    if (check(sc, attn_build(b, 0, &batch->common, 0, &m, NULL), "attn_build") && update) {
      attn_metadata_t* u = NULL;
      ok += check(sc, attn_update_block_table(b, m, batch->common.block_table_tensor,
                                              batch->common.slot_mapping, &u, NULL),
                  "attn_update_block_table");
    }
    ts_batch_free(batch);
    if (c->allocs != after_create)
      fail_msg("%s (kind %d): the allocator was called %d times by builds (iteration %d)",
               sc->backend, sc->kind, c->allocs - after_create, iter);
    assert_int_equal(c->frees, frees);
  }
  return ok;
}

static void run(const scenario* sc, uint64_t seed) {
  attn_kv_cache_spec_t spec;
  attn_builder_config_t config;
  attn_allocator_t a = ATTN_ALLOCATOR_INIT;
  counting c = {0, 0, 0};
  attn_builder_t* b = NULL;
  attn_error_t* err;
  int ok;
  int alt;
  a.alloc = counting_alloc;
  a.free = counting_free;
  a.user_data = &c;
  for (alt = 0; alt < (sc->known ? 1 : kAltSpecs); ++alt) {
    configure_alt(sc, alt, &spec, &config);
    config.allocator = &a;
    err = attn_builder_create(sc->backend, &spec, &config, &b);
    if (err == NULL) break;
    if (sc->known) fail_msg("%s: create failed: %s", sc->backend, attn_error_message(err));
    if (alt + 1 == kAltSpecs)
      printf("note: %s not covered: no spec tried here was accepted (last: %s)\n", sc->backend,
             attn_error_message(err));
    attn_error_destroy(err);
  }
  if (b == NULL) return;
  ok = exercise(sc, b, &c, seed);
  printf("%-16s kind %d%s: %d calls, %d allocator calls (all at create)\n", sc->backend, spec.kind,
         sc->fast_prefill ? " fast prefill" : "", ok, c.allocs);
  {
    /* The exception: a clone allocates its copies, and its destroy frees them. */
    ts_batch* batch = random_batch(&seed, sc->kind == ATTN_KV_ENCODER_ONLY);
    extras x;
    attn_metadata_t *m = NULL, *kept = NULL;
    add_extras(sc, batch, &x);
    if (check(sc, attn_build(b, 0, &batch->common, 0, &m, NULL), "attn_build")) {
      const int before = c.allocs, frees = c.frees;
      err = attn_metadata_clone(m, &kept);
      if (err == NULL) {
        attn_metadata_destroy(kept);
        assert_int_equal(c.frees - frees, c.allocs - before);
      } else {
        attn_error_destroy(err); /* views with strides are not clonable: allocation-free */
        assert_int_equal(c.allocs, before);
      }
    }
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
  assert_int_equal(c.frees, c.allocs);
  assert_int_equal(c.live_bytes, 0);
}

/* Every registered backend with the default spec. A built-in backend that builds for it
 * (attn_backend_info: its kind accepted, its builder created) must pass every call; the others
 * (plugins, the MLA and Mamba families) try the alternative specs. */
static void test_backends_allocate_nothing(void** state) {
  size_t i, n = attn_backend_count();
  (void)state;
  for (i = 0; i < n; ++i) {
    scenario sc = {NULL, ATTN_KV_FULL_ATTENTION, 0, 0};
    attn_kv_cache_spec_t spec;
    attn_builder_config_t config;
    configure(&sc, &spec, &config);
    sc.known = ts_backend_builds(i, ATTN_BACKEND_BUILTIN, &spec, &config, &sc.backend);
    run(&sc, 100 + i);
  }
}

/* vLLM's wrappers, which keep buffers of their own. */
static void test_wrappers_allocate_nothing(void** state) {
  static const scenario kWrappers[] = {
      {"FLASH_ATTN", ATTN_KV_CHUNKED_LOCAL_ATTENTION, 0, 1},
      {"TRITON_ATTN", ATTN_KV_CHUNKED_LOCAL_ATTENTION, 0, 1},
      {"FLASH_ATTN", ATTN_KV_CROSS_ATTENTION, 0, 1},
      {"TRITON_ATTN", ATTN_KV_ENCODER_ONLY, 0, 1},
      {"FLASH_ATTN", ATTN_KV_FULL_ATTENTION, 1, 1},
      {"FLASHINFER", ATTN_KV_FULL_ATTENTION, 1, 1},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof kWrappers / sizeof kWrappers[0]; ++i) run(&kWrappers[i], 200 + i);
}

/* With a caller workspace (CUB's two-phase pattern) a host builder never calls the allocator. */
static void test_workspace_allocates_nothing(void** state) {
  const char* backends[32];
  size_t i, n;
  (void)state;
  {
    /* the built-in backends that build for the full-attention spec, enumerated */
    const scenario probe = {NULL, ATTN_KV_FULL_ATTENTION, 0, 1};
    attn_kv_cache_spec_t spec;
    attn_builder_config_t config;
    configure(&probe, &spec, &config);
    n = ts_backends_building(ATTN_BACKEND_BUILTIN, &spec, &config, backends, 32);
    assert_true(n >= 1 && n <= 32);
  }
  for (i = 0; i < n; ++i) {
    const scenario sc = {backends[i], ATTN_KV_FULL_ATTENTION, 0, 1};
    attn_kv_cache_spec_t spec;
    attn_builder_config_t config;
    attn_allocator_t a = ATTN_ALLOCATOR_INIT;
    counting c = {0, 0, 0};
    attn_builder_t* b = NULL;
    size_t bytes = 0;
    void* workspace = NULL;
    configure(&sc, &spec, &config);
    ASSERT_OK(attn_builder_workspace_size(sc.backend, &spec, &config, &bytes));
    assert_int_equal(posix_memalign(&workspace, 256, bytes ? bytes : 256), 0);
    a.alloc = counting_alloc;
    a.free = counting_free;
    a.user_data = &c;
    config.allocator = &a;
    config.workspace = workspace;
    config.workspace_size = bytes;
    ASSERT_OK(attn_builder_create(sc.backend, &spec, &config, &b));
    assert_int_equal(c.allocs, 0);
    exercise(&sc, b, &c, 300 + i);
    assert_int_equal(c.allocs, 0);
    attn_builder_destroy(b);
    assert_int_equal(c.frees, 0);
    free(workspace);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backends_allocate_nothing),
      cmocka_unit_test(test_wrappers_allocate_nothing),
      cmocka_unit_test(test_workspace_allocates_nothing),
  };
  return cmocka_run_group_tests_name("graph_safety", tests, NULL, NULL);
}
