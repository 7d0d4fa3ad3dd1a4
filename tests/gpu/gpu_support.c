#include "gpu_support.h"

int tg_have_gpu(const char* what) {
  int32_t n = 0;
  attn_error_t* err = attn_device_count(ATTN_DEVICE_CUDA, &n);
  if (err != NULL) {
    printf("SKIP: no CUDA device: %s; %s did not run\n", attn_error_message(err), what);
    attn_error_destroy(err);
    return 0;
  }
  if (n == 0) printf("SKIP: no CUDA device visible; %s did not run\n", what);
  return n > 0;
}

void* tg_to_device(const void* host, size_t bytes) {
  void* d = NULL;
  CUDA_OK(cudaMalloc(&d, bytes ? bytes : 4));
  if (bytes) CUDA_OK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

unsigned char* tg_contents(const attn_tensor_t* t, size_t* out_bytes) {
  const size_t item = t->dtype.bits / 8;
  const int64_t rows = t->ndim == 2 ? t->shape[0] : 1;
  const int64_t cols = t->ndim == 2 ? t->shape[1] : (t->ndim == 0 ? 1 : t->shape[0]);
  const int64_t stride = t->ndim == 2 && t->strides != NULL ? t->strides[0] : cols;
  const size_t span = rows == 0 || cols == 0 ? 0 : (size_t)((rows - 1) * stride + cols) * item;
  unsigned char* all = (unsigned char*)malloc(span + 1);
  unsigned char* packed = (unsigned char*)malloc((size_t)(rows * cols) * item + 1);
  const char* base = (const char*)t->data + t->byte_offset;
  int64_t r;
  assert_non_null(all);
  assert_non_null(packed);
  if (span > 0) {
    if (t->device.device_type == ATTN_DEVICE_CUDA)
      CUDA_OK(cudaMemcpy(all, base, span, cudaMemcpyDeviceToHost));
    else
      memcpy(all, base, span);
  }
  for (r = 0; r < rows; ++r)
    memcpy(packed + (size_t)(r * cols) * item, all + (size_t)(r * stride) * item, (size_t)cols * item);
  free(all);
  *out_bytes = (size_t)(rows * cols) * item;
  return packed;
}

void tg_expect_same_metadata(const attn_metadata_t* h, const attn_metadata_t* d, const char* what) {
  size_t i, n = attn_metadata_field_count(h);
  assert_string_equal(attn_metadata_kind(h), attn_metadata_kind(d));
  assert_int_equal(n, attn_metadata_field_count(d));
  CUDA_OK(cudaDeviceSynchronize());
  for (i = 0; i < n; ++i) {
    attn_field_t hf = ATTN_FIELD_INIT, df = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(h, i, &hf));
    ASSERT_OK(attn_metadata_field(d, i, &df));
    if (hf.kind != df.kind)
      fail_msg("%s: field %s has kind %d on the host, %d on CUDA", what, hf.name, hf.kind, df.kind);
    if (hf.kind == ATTN_FIELD_INT || hf.kind == ATTN_FIELD_BOOL) {
      if (hf.int_value != df.int_value)
        fail_msg("%s: %s = %lld on the host, %lld on CUDA", what, hf.name, (long long)hf.int_value,
                 (long long)df.int_value);
    } else if (hf.kind == ATTN_FIELD_FLOAT) {
      if (!(hf.float_value == df.float_value))
        fail_msg("%s: %s = %g on the host, %g on CUDA", what, hf.name, hf.float_value, df.float_value);
    } else if (hf.kind == ATTN_FIELD_TENSOR) {
      int k;
      size_t hb = 0, db = 0;
      unsigned char *hc, *dc;
      if (hf.tensor->ndim != df.tensor->ndim)
        fail_msg("%s: tensor %s has %d dimensions on the host, %d on CUDA", what, hf.name,
                 hf.tensor->ndim, df.tensor->ndim);
      for (k = 0; k < hf.tensor->ndim; ++k)
        if (hf.tensor->shape[k] != df.tensor->shape[k])
          fail_msg("%s: tensor %s has shape[%d] = %lld on the host, %lld on CUDA", what, hf.name, k,
                   (long long)hf.tensor->shape[k], (long long)df.tensor->shape[k]);
      if (hf.tensor->ndim > 2) continue; /* scratch buffers (TRITON_ATTN's softmax segments) */
      hc = tg_contents(hf.tensor, &hb);
      dc = tg_contents(df.tensor, &db);
      if (hb != db || memcmp(hc, dc, hb) != 0) {
        size_t at = 0, item = hf.tensor->dtype.bits / 8, e, k2;
        char values[512] = "";
        while (at < hb && at < db && hc[at] == dc[at]) ++at;
        if (item == 4 || item == 8) { /* the elements around the first difference, both sides */
          const size_t first = at / item >= 4 ? at / item - 4 : 0, n = hb / item;
          int len = 0;
          for (k2 = 0; k2 < 2; ++k2) {
            const unsigned char* side = k2 == 0 ? hc : dc;
            len += snprintf(values + len, sizeof values - (size_t)len, k2 == 0 ? "; host [%zu..]:" : "; CUDA:", first);
            for (e = first; e < n && e < first + 10 && len < (int)sizeof values - 24; ++e) {
              long long v = 0;
              if (item == 4) { int32_t x; memcpy(&x, side + e * 4, 4); v = x; }
              else { int64_t x; memcpy(&x, side + e * 8, 8); v = (long long)x; }
              len += snprintf(values + len, sizeof values - (size_t)len, " %lld", v);
            }
          }
        }
        fail_msg("%s: tensor %s differs between host and CUDA (first at byte %zu of %zu%s)", what,
                 hf.name, at, hb, values);
      }
      free(hc);
      free(dc);
    }
  }
}

int tg_host_fields_equal(const attn_metadata_t* a, const attn_metadata_t* b, char* why, size_t n) {
  size_t i, count = attn_metadata_field_count(a);
  if (count != attn_metadata_field_count(b)) {
    snprintf(why, n, "field counts %zu and %zu", count, attn_metadata_field_count(b));
    return 0;
  }
  for (i = 0; i < count; ++i) {
    attn_field_t fa = ATTN_FIELD_INIT, fb = ATTN_FIELD_INIT;
    int k;
    ASSERT_OK(attn_metadata_field(a, i, &fa));
    ASSERT_OK(attn_metadata_field(b, i, &fb));
    if (fa.kind != fb.kind || strcmp(fa.name, fb.name) != 0) {
      snprintf(why, n, "field %zu: %s (kind %d) and %s (kind %d)", i, fa.name, fa.kind, fb.name, fb.kind);
      return 0;
    }
    if (fa.kind == ATTN_FIELD_INT || fa.kind == ATTN_FIELD_BOOL) {
      if (fa.int_value != fb.int_value) {
        snprintf(why, n, "%s = %lld and %lld", fa.name, (long long)fa.int_value, (long long)fb.int_value);
        return 0;
      }
    } else if (fa.kind == ATTN_FIELD_FLOAT) {
      if (!(fa.float_value == fb.float_value)) {
        snprintf(why, n, "%s = %g and %g", fa.name, fa.float_value, fb.float_value);
        return 0;
      }
    } else if (fa.kind == ATTN_FIELD_TENSOR) {
      if (fa.tensor->ndim != fb.tensor->ndim) {
        snprintf(why, n, "%s has %d and %d dimensions", fa.name, fa.tensor->ndim, fb.tensor->ndim);
        return 0;
      }
      for (k = 0; k < fa.tensor->ndim; ++k)
        if (fa.tensor->shape[k] != fb.tensor->shape[k]) {
          snprintf(why, n, "%s has shape[%d] %lld and %lld", fa.name, k,
                   (long long)fa.tensor->shape[k], (long long)fb.tensor->shape[k]);
          return 0;
        }
      if (fa.tensor->device.device_type != ATTN_DEVICE_CUDA &&
          fb.tensor->device.device_type != ATTN_DEVICE_CUDA && fa.tensor->ndim <= 2) {
        size_t ba = 0, bb = 0;
        unsigned char* ca = tg_contents(fa.tensor, &ba);
        unsigned char* cb = tg_contents(fb.tensor, &bb);
        const int same = ba == bb && memcmp(ca, cb, ba) == 0;
        free(ca);
        free(cb);
        if (!same) {
          snprintf(why, n, "host tensor %s differs", fa.name);
          return 0;
        }
      }
    }
  }
  return 1;
}

void tg_mirrors_make(const ts_batch* b, tg_mirrors* m) {
  memset(m, 0, sizeof *m);
  m->qsl = (int32_t*)calloc((size_t)b->num_reqs + 1, sizeof(int32_t));
  m->seq = (int32_t*)calloc((size_t)b->num_reqs + 1, sizeof(int32_t));
  assert_true(m->qsl != NULL && m->seq != NULL);
  m->qsl_shape[0] = b->num_reqs + 1;
  m->seq_shape[0] = b->num_reqs;
  m->qsl_t = ts_host_tensor(m->qsl, 1, m->qsl_shape, ATTN_DTYPE_INT, 32);
  m->seq_t = ts_host_tensor(m->seq, 1, m->seq_shape, ATTN_DTYPE_INT, 32);
  tg_mirrors_copy(b, m);
}

void tg_mirrors_copy(const ts_batch* b, tg_mirrors* m) {
  assert_int_equal(m->seq_shape[0], b->num_reqs);
  memcpy(m->qsl, b->qsl, (size_t)(b->num_reqs + 1) * sizeof(int32_t));
  memcpy(m->seq, b->seq, (size_t)b->num_reqs * sizeof(int32_t));
}

void tg_mirrors_free(tg_mirrors* m) {
  free(m->qsl);
  free(m->seq);
  m->qsl = m->seq = NULL;
}

void tg_add_mirrors(ts_batch* b, tg_mirrors* m) {
  b->common.query_start_loc_cpu = &m->qsl_t;
  b->common.seq_lens_cpu = &m->seq_t;
}

void tg_positions_make(ts_batch* b, tg_positions* p) {
  int64_t r, t;
  memset(p, 0, sizeof *p);
  p->data = (int64_t*)calloc((size_t)b->num_tokens + 1, sizeof(int64_t));
  assert_non_null(p->data);
  for (r = 0; r < b->num_reqs; ++r) {
    const int64_t q = b->qsl[r + 1] - b->qsl[r];
    for (t = b->qsl[r]; t < b->qsl[r + 1] && t < b->num_tokens; ++t)
      p->data[t] = b->seq[r] - q + (t - b->qsl[r]);
  }
  p->shape[0] = b->num_tokens;
  p->t = ts_host_tensor(p->data, 1, p->shape, ATTN_DTYPE_INT, 64);
  b->common.positions = &p->t;
}

void tg_positions_free(tg_positions* p) {
  free(p->data);
  p->data = NULL;
}

static attn_tensor_t device_tensor(const attn_tensor_t* host, int64_t* shape, void* data) {
  attn_tensor_t t = *host;
  int k;
  for (k = 0; k < host->ndim; ++k) shape[k] = host->shape[k];
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  t.data = data;
  t.device.device_type = ATTN_DEVICE_CUDA;
  t.device.device_id = 0;
  return t;
}

void tg_device_batch_make(const ts_batch* b, tg_device_batch* d) {
  memset(d, 0, sizeof *d);
  d->qsl = device_tensor(&b->qsl_t, d->qsl_shape, tg_to_device(b->qsl, (size_t)(b->num_reqs + 1) * 4));
  d->seq = device_tensor(&b->seq_t, d->seq_shape, tg_to_device(b->seq, (size_t)b->num_reqs * 4));
  d->bt = device_tensor(&b->bt_t, d->bt_shape, tg_to_device(b->bt, (size_t)(b->num_reqs * b->width) * 4));
  d->sm = device_tensor(&b->sm_t, d->sm_shape, tg_to_device(b->slots, (size_t)b->num_tokens * 8));
  if (b->common.positions != NULL)
    d->pos = device_tensor(b->common.positions, d->pos_shape,
                           tg_to_device(b->common.positions->data, (size_t)b->num_tokens * 8));
  tg_mirrors_make(b, &d->mirrors);
  d->common = b->common;
  d->common.query_start_loc = &d->qsl;
  d->common.query_start_loc_cpu = &d->mirrors.qsl_t;
  d->common.seq_lens = &d->seq;
  d->common.seq_lens_cpu = &d->mirrors.seq_t;
  d->common.block_table_tensor = &d->bt;
  d->common.slot_mapping = &d->sm;
  d->common.positions = d->pos.data != NULL ? &d->pos : NULL;
}

void tg_device_batch_upload(const ts_batch* b, tg_device_batch* d, cudaStream_t stream) {
  assert_int_equal(d->seq_shape[0], b->num_reqs);
  assert_int_equal(d->bt_shape[1], b->width);
  assert_int_equal(d->sm_shape[0], b->num_tokens);
  CUDA_OK(cudaMemcpyAsync(d->qsl.data, b->qsl, (size_t)(b->num_reqs + 1) * 4, cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaMemcpyAsync(d->seq.data, b->seq, (size_t)b->num_reqs * 4, cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaMemcpyAsync(d->bt.data, b->bt, (size_t)(b->num_reqs * b->width) * 4, cudaMemcpyHostToDevice,
                          stream));
  CUDA_OK(cudaMemcpyAsync(d->sm.data, b->slots, (size_t)b->num_tokens * 8, cudaMemcpyHostToDevice, stream));
  if (d->pos.data != NULL) {
    assert_non_null(b->common.positions);
    CUDA_OK(cudaMemcpyAsync(d->pos.data, b->common.positions->data, (size_t)b->num_tokens * 8,
                            cudaMemcpyHostToDevice, stream));
  }
  CUDA_OK(cudaStreamSynchronize(stream)); /* the host arrays may change right after */
  tg_mirrors_copy(b, &d->mirrors);
  d->common.num_reqs = b->common.num_reqs;
  d->common.num_actual_tokens = b->common.num_actual_tokens;
  d->common.max_query_len = b->common.max_query_len;
  d->common.max_seq_len = b->common.max_seq_len;
  d->common.causal = b->common.causal;
}

void tg_device_batch_free(tg_device_batch* d) {
  cudaFree(d->qsl.data);
  cudaFree(d->seq.data);
  cudaFree(d->bt.data);
  cudaFree(d->sm.data);
  cudaFree(d->pos.data);
  tg_mirrors_free(&d->mirrors);
}
