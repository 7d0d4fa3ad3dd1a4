#include "test_support.h"

attn_kv_cache_spec_t ts_spec(void) {
  attn_kv_cache_spec_t s = ATTN_KV_CACHE_SPEC_INIT;
  s.block_size = 16;
  s.num_kv_heads = 8;
  s.head_size = 128;
  return s;
}

attn_kv_cache_spec_t ts_mla_spec(int32_t block_size) {
  attn_kv_cache_spec_t s = ATTN_KV_CACHE_SPEC_INIT;
  s.kind = ATTN_KV_MLA;
  s.block_size = block_size;
  s.num_kv_heads = 1;
  s.head_size = 576;
  return s;
}

attn_kv_cache_spec_t ts_swa_spec(int32_t block_size, int32_t window) {
  attn_kv_cache_spec_t s = ts_mla_spec(block_size);
  s.kind = ATTN_KV_SLIDING_WINDOW;
  s.head_size = 512;
  s.sliding_window = window;
  return s;
}

attn_builder_config_t ts_config(void) {
  attn_builder_config_t c = ATTN_BUILDER_CONFIG_INIT;
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 8192;
  c.max_model_len = 4096;
  c.num_attention_heads = 32;
  c.device_capability = 90;
  return c;
}

attn_builder_t* ts_builder(const char* backend, const attn_kv_cache_spec_t* spec,
                           const attn_builder_config_t* config) {
  attn_builder_t* b = NULL;
  ASSERT_OK(attn_builder_create(backend, spec, config, &b));
  assert_non_null(b);
  return b;
}

size_t ts_candidate_specs(attn_kv_cache_spec_t* out) {
  size_t n = 0;
  attn_kv_cache_spec_t s = ts_spec();
  out[n++] = s; /* FULL_ATTENTION, block 16 */
  s.kind = ATTN_KV_SLIDING_WINDOW;
  s.sliding_window = 64;
  out[n++] = s;
  s = ts_spec();
  s.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
  s.attention_chunk_size = 64;
  out[n++] = s;
  s = ts_spec();
  s.kind = ATTN_KV_CROSS_ATTENTION;
  out[n++] = s;
  s.kind = ATTN_KV_ENCODER_ONLY;
  out[n++] = s;
  out[n++] = ts_mla_spec(64);
  out[n++] = ts_mla_spec(128);
  out[n++] = ts_mla_spec(256);
  s = ts_mla_spec(256); /* DeepSeek V4: a 512-wide latent, 4 tokens a state */
  s.head_size = 512;
  s.tokens_per_state = 4;
  out[n++] = s;
  s = ts_mla_spec(128); /* DeepSeek V4.1's indexer cache: fp8, 132 bytes a token */
  s.head_size = 132;
  s.dtype = ATTN_KV_DTYPE_FP8_E4M3;
  s.index_topk = 512;
  out[n++] = s;
  out[n++] = ts_swa_spec(64, 128);
  s = ts_mla_spec(16); /* dots3 NOTE's sliding-window latent cache (1024 + 64) */
  s.head_size = 1088;
  s.sliding_window = 128;
  out[n++] = s;
  s = ts_spec();
  s.kind = ATTN_KV_MAMBA;
  s.num_kv_heads = s.head_size = 1;
  s.mamba_chunk_size = 16;
  out[n++] = s;
  s = ts_spec(); /* MiniMax-M3's sparse GQA cache: FULL_ATTENTION at the kernel block 128 */
  s.block_size = 128;
  out[n++] = s;
  return n;
}

size_t ts_candidate_configs(const attn_builder_config_t* base, attn_builder_config_t* out) {
  size_t n = 0;
  attn_builder_config_t c = *base;
  out[n++] = c;
  c.platform_rocm = 1;
  out[n++] = c;
  c = *base;
  c.device_capability = 100;
  c.num_sms = 4;
  c.candidate_block_size = 64;
  c.candidate_topk_blocks = 8;
  c.indexer_kv_mxfp4 = 1;
  out[n++] = c;
  c = *base; /* dots3 NOTE's MLA dimensions */
  c.mla_kv_lora_rank = 1024;
  c.mla_qk_nope_head_dim = 192;
  out[n++] = c;
  c = *base; /* MiniMax-M3's lightning indexer: its index heads (MINIMAX_M3_SPARSE_INDEXER) */
  c.sparse_num_index_heads = 4;
  out[n++] = c;
  return n;
}

int ts_backend_setup(size_t index, int32_t kind, const attn_builder_config_t* base,
                     attn_kv_cache_spec_t* spec, attn_builder_config_t* config) {
  attn_kv_cache_spec_t specs[kTsMaxCandidates];
  attn_builder_config_t configs[kTsMaxCandidates];
  const size_t ns = ts_candidate_specs(specs), nc = ts_candidate_configs(base, configs);
  const int32_t dtypes[2] = {ATTN_KV_DTYPE_AUTO, ATTN_KV_DTYPE_FP8_E4M3};
  attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
  size_t s, k, d;
  ASSERT_OK(attn_backend_info(index, &info));
  for (s = 0; s < ns; ++s) {
    if ((info.kv_cache_kinds & (1u << specs[s].kind)) == 0) continue;
    if (kind >= 0 && specs[s].kind != kind) continue;
    for (k = 0; k < nc; ++k)
      for (d = 0; d < 2; ++d) {
        attn_builder_config_t c = configs[k];
        attn_builder_t* b = NULL;
        attn_error_t* e;
        c.cache_dtype = dtypes[d];
        e = attn_builder_create(info.name, &specs[s], &c, &b);
        if (e != NULL) {
          attn_error_destroy(e);
          continue;
        }
        attn_builder_destroy(b);
        *spec = specs[s];
        *config = c;
        return 1;
      }
  }
  return 0;
}

int ts_backend_builds(size_t index, int32_t origin, const attn_kv_cache_spec_t* spec,
                      const attn_builder_config_t* config, const char** name) {
  attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
  attn_builder_t* b = NULL;
  attn_error_t* err;
  ASSERT_OK(attn_backend_info(index, &info));
  if (name != NULL) *name = info.name;
  if ((origin >= 0 && info.origin != origin) || (info.kv_cache_kinds & (1u << spec->kind)) == 0)
    return 0;
  err = attn_builder_create(info.name, spec, config, &b);
  if (err != NULL && attn_error_code(err) == ATTN_ERR_UNSUPPORTED) {
    attn_error_destroy(err); /* a family of its own, or a plugin's backend for other specs */
    return 0;
  }
  if (err != NULL)
    fail_msg("%s builder: [%d] %s", info.name, attn_error_code(err), attn_error_message(err));
  attn_builder_destroy(b);
  return 1;
}

size_t ts_backends_building(int32_t origin, const attn_kv_cache_spec_t* spec,
                            const attn_builder_config_t* config, const char** out, size_t cap) {
  size_t i, n = attn_backend_count(), found = 0;
  for (i = 0; i < n; ++i) {
    const char* name = NULL;
    if (!ts_backend_builds(i, origin, spec, config, &name)) continue;
    if (found < cap) out[found] = name;
    ++found;
  }
  return found;
}

attn_tensor_t ts_host_tensor(void* data, int32_t ndim, int64_t* shape, uint8_t code, uint8_t bits) {
  attn_tensor_t t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = ATTN_DEVICE_CPU;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

ts_batch* ts_batch_make(const int32_t* query_lens, const int32_t* seq_lens, int64_t num_reqs,
                        int32_t block_size, int64_t width, int64_t padded_tokens) {
  ts_batch* b = (ts_batch*)calloc(1, sizeof *b);
  const attn_common_metadata_t init = ATTN_COMMON_METADATA_INIT;
  int64_t r, tokens = 0, max_q = 0, max_s = 0, t = 0;
  int32_t next_block = 1;
  assert_non_null(b);
  for (r = 0; r < num_reqs; ++r) {
    tokens += query_lens[r];
    if (query_lens[r] > max_q) max_q = query_lens[r];
    if (seq_lens[r] > max_s) max_s = seq_lens[r];
  }
  if (width == 0) width = (max_s + block_size - 1) / block_size;
  b->num_reqs = num_reqs;
  b->num_tokens = padded_tokens >= 0 ? padded_tokens : tokens;
  b->width = width;
  b->block_size = block_size;
  b->qsl = (int32_t*)calloc((size_t)num_reqs + 1, sizeof(int32_t));
  b->seq = (int32_t*)calloc((size_t)num_reqs + 1, sizeof(int32_t));
  b->bt = (int32_t*)calloc((size_t)(num_reqs * width + 1), sizeof(int32_t));
  b->slots = (int64_t*)calloc((size_t)b->num_tokens + 1, sizeof(int64_t));
  assert_true(b->qsl && b->seq && b->bt && b->slots);
  for (r = 0; r < num_reqs; ++r) {
    const int64_t blocks = (seq_lens[r] + block_size - 1) / block_size;
    int64_t j, p;
    b->qsl[r + 1] = b->qsl[r] + query_lens[r];
    b->seq[r] = seq_lens[r];
    for (j = 0; j < blocks && j < width; ++j) b->bt[r * width + j] = next_block++;
    for (p = seq_lens[r] - query_lens[r]; p < seq_lens[r]; ++p, ++t)
      if (t < b->num_tokens)
        b->slots[t] = (int64_t)b->bt[r * width + p / block_size] * block_size + p % block_size;
  }
  for (; t < b->num_tokens; ++t) b->slots[t] = ATTN_PAD_SLOT_ID;
  b->qsl_shape[0] = num_reqs + 1;
  b->seq_shape[0] = num_reqs;
  b->bt_shape[0] = num_reqs;
  b->bt_shape[1] = width;
  b->sm_shape[0] = b->num_tokens;
  b->qsl_t = ts_host_tensor(b->qsl, 1, b->qsl_shape, ATTN_DTYPE_INT, 32);
  b->seq_t = ts_host_tensor(b->seq, 1, b->seq_shape, ATTN_DTYPE_INT, 32);
  b->bt_t = ts_host_tensor(b->bt, 2, b->bt_shape, ATTN_DTYPE_INT, 32);
  b->sm_t = ts_host_tensor(b->slots, 1, b->sm_shape, ATTN_DTYPE_INT, 64);
  b->common = init;
  b->common.query_start_loc = &b->qsl_t;
  b->common.seq_lens = &b->seq_t;
  b->common.num_reqs = num_reqs;
  b->common.num_actual_tokens = b->num_tokens;
  b->common.max_query_len = max_q;
  b->common.max_seq_len = max_s;
  b->common.block_table_tensor = &b->bt_t;
  b->common.slot_mapping = &b->sm_t;
  return b;
}

void ts_narrow_table(ts_batch* b, int64_t cols) {
  b->bt_strides[0] = b->width;
  b->bt_strides[1] = 1;
  b->bt_t.strides = b->bt_strides;
  b->bt_shape[1] = cols;
}

void ts_expect_circular_as_full(const char* backend, const attn_kv_cache_spec_t* full,
                                const attn_builder_config_t* config, ts_batch* batch,
                                const char* full_refusal) {
  attn_kv_cache_spec_t ring = *full;
  attn_builder_t *bf, *bc;
  attn_metadata_t *mf = NULL, *mc = NULL;
  ring.kind = ATTN_KV_CIRCULAR_BUFFER;
  bf = ts_builder(backend, full, config);
  bc = ts_builder(backend, &ring, config);
  ASSERT_OK(attn_build(bf, 0, &batch->common, 0, &mf, NULL));
  ts_narrow_table(batch, 1);
  ASSERT_OK(attn_build(bc, 0, &batch->common, 0, &mc, NULL));
  ts_expect_same_fields(mf, mc, NULL);
  ASSERT_ERROR(attn_build(bf, 0, &batch->common, 0, &mf, NULL), ATTN_ERR_INVALID_ARGUMENT,
               full_refusal);
  ts_narrow_table(batch, 0);
  ASSERT_ERROR(attn_build(bc, 0, &batch->common, 0, &mc, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "reads each token's request's ring block from column 0");
  attn_builder_destroy(bf);
  attn_builder_destroy(bc);
}

void ts_batch_positions(const ts_batch* b, int64_t* out) {
  int64_t r, t;
  for (r = 0; r < b->num_reqs; ++r)
    for (t = b->qsl[r]; t < b->qsl[r + 1]; ++t)
      out[t] = b->seq[r] - (b->qsl[r + 1] - b->qsl[r]) + (t - b->qsl[r]);
}

void ts_batch_free(ts_batch* b) {
  if (b == NULL) return;
  free(b->qsl);
  free(b->seq);
  free(b->bt);
  free(b->slots);
  free(b);
}

int64_t ts_int(const attn_metadata_t* m, const char* name) {
  int64_t v = 0;
  ASSERT_OK(attn_metadata_get_int(m, name, &v));
  return v;
}

const attn_tensor_t* ts_tensor(const attn_metadata_t* m, const char* name) {
  const attn_tensor_t* t = (const attn_tensor_t*)UNTOUCHED_PTR;
  ASSERT_OK(attn_metadata_get_tensor(m, name, &t));
  return t;
}

int32_t ts_kind(const attn_metadata_t* m, const char* name) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  return f.kind;
}

void ts_expect_none(const attn_metadata_t* m, const char* name) {
  if (ts_kind(m, name) != ATTN_FIELD_NONE) fail_msg("%s is not None", name);
}

/* A 1-D int field of `bits` bits (32 or 64) against `expected` (n values of that width). */
static void expect_ints(const attn_metadata_t* m, const char* name, int bits, const void* expected,
                        int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  if (t == NULL) fail_msg("field %s is None", name);
  assert_int_equal(t->ndim, 1);
  assert_int_equal(t->shape[0], n);
  assert_int_equal(t->dtype.code, ATTN_DTYPE_INT);
  assert_int_equal(t->dtype.bits, bits);
  for (i = 0; i < n; ++i) {
    const char* base = (const char*)t->data + t->byte_offset;
    const int64_t at = i * t->strides[0];
    const int64_t got = bits == 32 ? ((const int32_t*)base)[at] : ((const int64_t*)base)[at];
    const int64_t want = bits == 32 ? ((const int32_t*)expected)[i] : ((const int64_t*)expected)[i];
    if (got != want)
      fail_msg("%s[%lld] = %lld, expected %lld", name, (long long)i, (long long)got,
               (long long)want);
  }
}

void ts_expect_i32(const attn_metadata_t* m, const char* name, const int32_t* expected, int64_t n) {
  expect_ints(m, name, 32, expected, n);
}

void ts_expect_i64(const attn_metadata_t* m, const char* name, const int64_t* expected, int64_t n) {
  expect_ints(m, name, 64, expected, n);
}

uint64_t ts_rand(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int32_t ts_decodes_first(int32_t* q, int32_t* s, int64_t n, int32_t threshold) {
  int32_t nd = 0;
  int64_t r;
  for (r = 0; r < n; ++r)
    if (q[r] <= threshold) {
      const int32_t tq = q[r], ts = s[r];
      q[r] = q[nd];
      s[r] = s[nd];
      q[nd] = tq;
      s[nd] = ts;
      ++nd;
    }
  return nd;
}

int64_t ts_rand_range(uint64_t* s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(ts_rand(s) % (uint64_t)(hi - lo + 1));
}

/* Element k (row-major over the shape) of a host tensor of at most two dimensions, as bytes. */
static const unsigned char* ts_element(const attn_tensor_t* t, int64_t k, size_t itemsize) {
  int64_t offset = 0;
  if (t->ndim == 1) {
    offset = k * t->strides[0];
  } else if (t->ndim == 2) {
    offset = (k / t->shape[1]) * t->strides[0] + (k % t->shape[1]) * t->strides[1];
  }
  return (const unsigned char*)t->data + t->byte_offset + (size_t)offset * itemsize;
}

int ts_same_metadata(const attn_metadata_t* a, const attn_metadata_t* b, char* why, size_t n) {
  if (strcmp(attn_metadata_kind(a), attn_metadata_kind(b)) != 0) {
    snprintf(why, n, "kind %s vs %s", attn_metadata_kind(a), attn_metadata_kind(b));
    return 0;
  }
  return ts_same_fields(a, b, why, n);
}

int ts_same_fields(const attn_metadata_t* a, const attn_metadata_t* b, char* why, size_t n) {
  const size_t count = attn_metadata_field_count(a);
  size_t k;
  if (count != attn_metadata_field_count(b)) {
    snprintf(why, n, "%zu fields vs %zu", count, attn_metadata_field_count(b));
    return 0;
  }
  for (k = 0; k < count; ++k) {
    attn_field_t fa = ATTN_FIELD_INIT, fb = ATTN_FIELD_INIT;
    const attn_tensor_t *ta, *tb;
    int64_t numel = 1, e;
    int32_t d;
    size_t itemsize;
    ASSERT_OK(attn_metadata_field(a, k, &fa));
    ASSERT_OK(attn_metadata_field(b, k, &fb));
    if (strcmp(fa.name, fb.name) != 0 || fa.kind != fb.kind) {
      snprintf(why, n, "field %zu: %s (kind %d) vs %s (kind %d)", k, fa.name, fa.kind, fb.name,
               fb.kind);
      return 0;
    }
    if ((fa.kind == ATTN_FIELD_INT || fa.kind == ATTN_FIELD_BOOL) && fa.int_value != fb.int_value) {
      snprintf(why, n, "%s: %lld vs %lld", fa.name, (long long)fa.int_value,
               (long long)fb.int_value);
      return 0;
    }
    if (fa.kind == ATTN_FIELD_FLOAT && memcmp(&fa.float_value, &fb.float_value, sizeof(double))) {
      snprintf(why, n, "%s: %g vs %g", fa.name, fa.float_value, fb.float_value);
      return 0;
    }
    if (fa.kind != ATTN_FIELD_TENSOR) continue;
    ta = fa.tensor;
    tb = fb.tensor;
    if (ta->ndim != tb->ndim || ta->dtype.code != tb->dtype.code || ta->dtype.bits != tb->dtype.bits ||
        ta->dtype.lanes != tb->dtype.lanes || ta->device.device_type != tb->device.device_type ||
        ta->device.device_id != tb->device.device_id) {
      snprintf(why, n, "%s: ndim/dtype/device differ", fa.name);
      return 0;
    }
    for (d = 0; d < ta->ndim; ++d) {
      if (ta->shape[d] != tb->shape[d]) {
        snprintf(why, n, "%s: shape[%d] %lld vs %lld", fa.name, d, (long long)ta->shape[d],
                 (long long)tb->shape[d]);
        return 0;
      }
      numel *= ta->shape[d];
    }
    if (ta->ndim > 2 || ta->device.device_type != ATTN_DEVICE_CPU) continue;
    itemsize = (size_t)(ta->dtype.bits * ta->dtype.lanes + 7) / 8;
    for (e = 0; e < numel; ++e)
      if (memcmp(ts_element(ta, e, itemsize), ts_element(tb, e, itemsize), itemsize) != 0) {
        snprintf(why, n, "%s: element %lld differs", fa.name, (long long)e);
        return 0;
      }
  }
  return 1;
}

void ts_expect_same_metadata(const attn_metadata_t* a, const attn_metadata_t* b, const char* what) {
  char why[256];
  if (!ts_same_metadata(a, b, why, sizeof why)) fail_msg("%s: %s", what, why);
}

/* The first n fields of a and b: equal, as ts_expect_same_fields says. */
static void expect_fields(const attn_metadata_t* a, const attn_metadata_t* b, const char* skip,
                          size_t n) {
  size_t k;
  for (k = 0; k < n; ++k) {
    attn_field_t fa = ATTN_FIELD_INIT, fb = ATTN_FIELD_INIT;
    int64_t i, numel = 1;
    ASSERT_OK(attn_metadata_field(a, k, &fa));
    ASSERT_OK(attn_metadata_field(b, k, &fb));
    assert_string_equal(fa.name, fb.name);
    assert_int_equal(fa.kind, fb.kind);
    if (skip != NULL && strcmp(fa.name, skip) == 0) continue;
    if (fa.kind == ATTN_FIELD_INT || fa.kind == ATTN_FIELD_BOOL) {
      if (fa.int_value != fb.int_value)
        fail_msg("%s: %lld vs %lld", fa.name, (long long)fa.int_value, (long long)fb.int_value);
    } else if (fa.kind == ATTN_FIELD_TENSOR) {
      assert_int_equal(fa.tensor->ndim, fb.tensor->ndim);
      for (i = 0; i < fa.tensor->ndim; ++i) {
        assert_int_equal(fa.tensor->shape[i], fb.tensor->shape[i]);
        numel *= fa.tensor->shape[i];
      }
      if (strncmp(fa.name, "softmax_segm_", 13) == 0 || strcmp(fa.name, "scheduler_metadata") == 0)
        continue; /* each builder's own scratch */
      if (fa.tensor->dtype.code == ATTN_DTYPE_INT && fa.tensor->strides[fa.tensor->ndim - 1] == 1 &&
          (fa.tensor->ndim == 1 || fa.tensor->strides[0] == fa.tensor->shape[1]))
        assert_memory_equal(fa.tensor->data, fb.tensor->data,
                            (size_t)numel * (fa.tensor->dtype.bits / 8));
    }
  }
}

void ts_expect_same_fields(const attn_metadata_t* a, const attn_metadata_t* b, const char* skip) {
  const size_t n = attn_metadata_field_count(a);
  assert_int_equal(n, attn_metadata_field_count(b));
  expect_fields(a, b, skip, n);
}

void ts_expect_leading_fields(const attn_metadata_t* a, const attn_metadata_t* b) {
  const size_t n = attn_metadata_field_count(a);
  assert_true(n <= attn_metadata_field_count(b));
  expect_fields(a, b, NULL, n);
}
