/* ROCM_AITER_FA (vLLM 0.33's AiterFlashAttentionMetadataBuilder): the decode / extend / prefill
 * split, the sliding-window decode tables, the rebased query_start_locs, the extends' chunked
 * context plan and its sliding-window part (hand-checked); the split and the plan against a
 * naive computation on random batches; build_for_drafting's override; bad input. */
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#define CC "extend_metadata_chunk_context_metadata_"
#define SWA CC "swa_metadata_"

static attn_builder_t* make(const attn_kv_cache_spec_t* spec, attn_builder_config_t* c,
                            attn_per_layer_params_t* layer, int32_t window_left) {
  *layer = (attn_per_layer_params_t)ATTN_PER_LAYER_PARAMS_INIT;
  layer->window_left = window_left;
  c->layers = layer;
  c->num_layers = 1;
  return ts_builder("ROCM_AITER_FA", spec, c);
}

static void expect_i64(const attn_metadata_t* m, const char* name, const int64_t* v, int64_t n) {
  const attn_tensor_t* t = ts_tensor(m, name);
  int64_t i;
  assert_non_null(t);
  assert_int_equal(t->dtype.bits, 64);
  for (i = 0; i < n; ++i) assert_int_equal(((const int64_t*)t->data)[i], v[i]);
}

static void expect_none(const attn_metadata_t* m, const char* name) {
  attn_field_t f = ATTN_FIELD_INIT;
  ASSERT_OK(attn_metadata_get(m, name, &f));
  assert_int_equal(f.kind, ATTN_FIELD_NONE);
}

/* two decodes (60 and 10 long), two extends (5 new of 50, 3 new of 11), a prefill of 7; block
 * 16, window 32 (window_left 31): 3 window blocks */
static void test_hand_checked(void** state) {
  static const int32_t q[5] = {1, 1, 5, 3, 7}, s[5] = {60, 10, 50, 11, 7};
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_per_layer_params_t layer;
  attn_builder_t* b;
  ts_batch* batch = ts_batch_make(q, s, 5, 16, 0, -1);
  attn_metadata_t* m = NULL;
  int32_t level = -1, threshold = 0, update = 1, k;
  (void)state;
  b = make(&spec, &c, &layer, 31);
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &threshold));
  assert_int_equal(threshold, 1);
  ASSERT_OK(attn_builder_supports_update_block_table(b, &update));
  assert_int_equal(update, 0);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_string_equal(attn_metadata_kind(m), "ROCM_AITER_FA");
  assert_int_equal(attn_metadata_field_count(m), 38);
  assert_int_equal(ts_int(m, "num_actual_tokens"), 17);
  assert_int_equal(ts_int(m, "max_seq_len"), 60);
  assert_ptr_equal(ts_tensor(m, "seq_lens")->data, batch->seq);
  assert_ptr_equal(ts_tensor(m, "block_table")->data, batch->bt);
  assert_int_equal(ts_int(m, "num_decodes"), 2);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 2);
  assert_int_equal(ts_int(m, "num_extends"), 2);
  assert_int_equal(ts_int(m, "num_extend_tokens"), 8);
  assert_int_equal(ts_int(m, "num_prefills"), 1);
  /* decodes: first window block max(len - 32, 0) / 16 = 1 and 0; columns clamped to 3 */
  assert_int_equal(ts_int(m, "decode_metadata_max_query_len"), 1);
  {
    const int32_t* bt = batch->bt; /* width 4 */
    const int32_t table[6] = {bt[1], bt[2], bt[3], bt[4], bt[5], bt[6]};
    const attn_tensor_t* t = ts_tensor(m, "decode_metadata_swa_block_table");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    for (k = 0; k < 6; ++k) assert_int_equal(((const int32_t*)t->data)[k], table[k]);
  }
  ts_expect_i32(m, "decode_metadata_swa_seq_lens", (int32_t[]){44, 10}, 2);
  assert_int_equal(ts_int(m, "decode_metadata_swa_max_seq_len"), 47); /* min(60, 32 + 16 - 1) */
  assert_int_equal(ts_int(m, "prefill_metadata_max_query_len"), 7);
  assert_int_equal(ts_int(m, "prefill_metadata_max_seq_len"), 7);
  ts_expect_i32(m, "prefill_metadata_query_start_loc", (int32_t[]){0, 7}, 2);
  assert_int_equal(ts_int(m, "extend_metadata_max_query_len"), 5);
  assert_int_equal(ts_int(m, "extend_metadata_max_seq_len"), 50);
  ts_expect_i32(m, "extend_metadata_query_start_loc", (int32_t[]){0, 5, 8}, 3);
  /* contexts 45 and 8, max_context_chunk 32768 / 2: one chunk */
  assert_int_equal(ts_int(m, CC "num_chunks"), 1);
  {
    const attn_tensor_t* t = ts_tensor(m, CC "chunk_starts");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0] * t->shape[1], 2);
    assert_int_equal(((const int32_t*)t->data)[0] + ((const int32_t*)t->data)[1], 0);
  }
  {
    const attn_tensor_t* t = ts_tensor(m, CC "cu_seq_lens_chunk");
    static const int32_t cu[3] = {0, 45, 53};
    assert_int_equal(t->shape[0], 1);
    assert_int_equal(t->shape[1], 3);
    for (k = 0; k < 3; ++k) assert_int_equal(((const int32_t*)t->data)[k], cu[k]);
    t = ts_tensor(m, CC "token_to_batch");
    assert_int_equal(t->shape[1], 53);
    for (k = 0; k < 53; ++k) assert_int_equal(((const int64_t*)t->data)[k], k < 45 ? 0 : 1);
  }
  expect_i64(m, CC "max_seq_lens", (int64_t[]){45}, 1);
  expect_i64(m, CC "total_token_per_batch", (int64_t[]){53}, 1);
  expect_none(m, CC "workspace");
  /* the window: min(seq, query + 32) = 37 and 11 keys, starting at 13 and 0 */
  ts_expect_i32(m, SWA "swa_cu_seqlens", (int32_t[]){0, 37, 48}, 3);
  ts_expect_i32(m, SWA "swa_seq_starts", (int32_t[]){13, 0}, 2);
  {
    int32_t t2b[48];
    for (k = 0; k < 48; ++k) t2b[k] = k < 37 ? 0 : 1;
    ts_expect_i32(m, SWA "swa_token_to_batch", t2b, 48);
  }
  assert_int_equal(ts_int(m, SWA "swa_max_seqlens"), 37);
  assert_int_equal(ts_int(m, SWA "swa_total_tokens"), 48);
  expect_none(m, SWA "swa_workspace");
  expect_none(m, "k_scale");
  expect_none(m, "kv_sharing_metadata");
  /* build_for_drafting: every request a decode, no tables, no other part */
  ASSERT_OK(attn_build_for_drafting(b, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_decodes"), 5);
  assert_int_equal(ts_int(m, "num_decode_tokens"), 17);
  assert_int_equal(ts_int(m, "num_extends"), 0);
  assert_int_equal(ts_int(m, "num_prefills"), 0);
  assert_int_equal(ts_int(m, "decode_metadata_max_query_len"), 7);
  expect_none(m, "decode_metadata_swa_block_table");
  assert_int_equal(ts_int(m, "decode_metadata_swa_max_seq_len"), 0);
  expect_none(m, "prefill_metadata_query_start_loc");
  expect_none(m, CC "num_chunks");
  attn_builder_destroy(b);
  /* no sliding window: the decode tables are None, swa_max_seq_len 0, no swa_metadata */
  b = make(&spec, &c, &layer, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  expect_none(m, "decode_metadata_swa_block_table");
  expect_none(m, "decode_metadata_swa_seq_lens");
  assert_int_equal(ts_int(m, "decode_metadata_swa_max_seq_len"), 0);
  expect_none(m, SWA "swa_cu_seqlens");
  assert_int_equal(ts_int(m, CC "num_chunks"), 1);
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* naive: requests classified one by one (query <= 1: decode; query == seq: prefill; else
 * extend), the chunk plan by its definition */
static void test_random_against_naive(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_per_layer_params_t layer;
  attn_builder_t* b;
  attn_metadata_t* m = NULL;
  uint64_t rng = 21;
  int it;
  (void)state;
  c.max_model_len = 1 << 20;
  b = make(&spec, &c, &layer, 63);
  for (it = 0; it < 300; ++it) {
    int32_t q[40], s[40];
    int64_t nd = ts_rand_range(&rng, 0, 8), ne = ts_rand_range(&rng, 0, 12),
            np = ts_rand_range(&rng, 0, 4), n, r, k, i, ctx_max = 0, t = 0;
    ts_batch* batch;
    if (nd + ne + np == 0) ne = 1;
    n = nd + ne + np;
    for (r = 0; r < n; ++r) {
      if (r < nd) {
        q[r] = 1;
        s[r] = 1 + (int32_t)ts_rand_range(&rng, 0, 300);
      } else if (r < nd + ne) {
        q[r] = (int32_t)ts_rand_range(&rng, 2, 9);
        s[r] = q[r] + (int32_t)ts_rand_range(&rng, 1, ts_rand_range(&rng, 0, 1) ? 40 : 9000);
      } else {
        q[r] = s[r] = (int32_t)ts_rand_range(&rng, 2, 9);
      }
      t += q[r];
    }
    batch = ts_batch_make(q, s, n, 16, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_decodes"), nd);
    assert_int_equal(ts_int(m, "num_extends"), ne);
    assert_int_equal(ts_int(m, "num_prefills"), np);
    assert_int_equal(ts_int(m, "num_decode_tokens"), nd);
    if (ne == 0) {
      expect_none(m, CC "num_chunks");
    } else {
      const int64_t mcc = 32768 / ne;
      int64_t chunks, total, max_cum = 0;
      const attn_tensor_t *cu, *t2b, *starts;
      for (i = 0; i < ne; ++i)
        if (s[nd + i] - q[nd + i] > ctx_max) ctx_max = s[nd + i] - q[nd + i];
      chunks = (ctx_max + mcc - 1) / mcc;
      assert_int_equal(ts_int(m, CC "num_chunks"), chunks);
      cu = ts_tensor(m, CC "cu_seq_lens_chunk");
      starts = ts_tensor(m, CC "chunk_starts");
      t2b = ts_tensor(m, CC "token_to_batch");
      for (k = 0; k < chunks; ++k) {
        total = 0;
        for (i = 0; i < ne; ++i) {
          int64_t len = (s[nd + i] - q[nd + i]) - k * mcc;
          len = len < 0 ? 0 : len > mcc ? mcc : len;
          total += len;
          assert_int_equal(((const int32_t*)starts->data)[k * ne + i], k * mcc);
          assert_int_equal(((const int32_t*)cu->data)[k * (ne + 1) + i + 1], total);
        }
        if (total > max_cum) max_cum = total;
        assert_int_equal(((const int64_t*)ts_tensor(m, CC "total_token_per_batch")->data)[k],
                         total);
      }
      if (chunks > 0) assert_int_equal(t2b->shape[1], max_cum);
      for (k = 0; k < chunks; ++k) /* token j of chunk k: requests ended at or before it */
        for (i = 0; i < max_cum; ++i) {
          int64_t ended = 0, e;
          for (e = 1; e <= ne; ++e)
            if (((const int32_t*)cu->data)[k * (ne + 1) + e] <= i) ++ended;
          assert_int_equal(((const int64_t*)t2b->data)[k * max_cum + i], ended);
        }
      { /* swa: min(seq, query + 64) keys per extend, each tagged with its extend */
        const attn_tensor_t* swa = ts_tensor(m, SWA "swa_token_to_batch");
        int64_t pos = 0, j;
        for (i = 0; i < ne; ++i) {
          const int64_t l = s[nd + i] < q[nd + i] + 64 ? s[nd + i] : q[nd + i] + 64;
          assert_int_equal(((const int32_t*)ts_tensor(m, SWA "swa_seq_starts")->data)[i],
                           s[nd + i] - l);
          for (j = 0; j < l; ++j, ++pos) assert_int_equal(((const int32_t*)swa->data)[pos], i);
        }
        assert_int_equal(ts_int(m, SWA "swa_total_tokens"), pos);
      }
    }
    if (nd > 0) { /* window 64, block 16: first block max(len - 64, 0) / 16, 5 columns */
      const attn_tensor_t* tab = ts_tensor(m, "decode_metadata_swa_block_table");
      for (r = 0; r < nd; ++r) {
        const int64_t first = (s[r] > 64 ? s[r] - 64 : 0) / 16;
        for (k = 0; k < 5; ++k) {
          const int64_t col = first + k < batch->width - 1 ? first + k : batch->width - 1;
          assert_int_equal(((const int32_t*)tab->data)[r * 5 + k],
                           batch->bt[r * batch->width + col]);
        }
        assert_int_equal(((const int32_t*)ts_tensor(m, "decode_metadata_swa_seq_lens")->data)[r],
                         s[r] - first * 16);
      }
    }
    ts_batch_free(batch);
  }
  attn_builder_destroy(b);
}

static void test_bad_input(void** state) {
  attn_kv_cache_spec_t spec = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_per_layer_params_t layers[2] = {ATTN_PER_LAYER_PARAMS_INIT, ATTN_PER_LAYER_PARAMS_INIT};
  attn_builder_t* b = NULL;
  (void)state;
  layers[0].window_left = 127;
  layers[1].window_left = 255;
  c.layers = layers;
  c.num_layers = 2;
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_FA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "can only support one valid sliding window");
  assert_null(b);
  layers[1].window_left = -1; /* a full-attention layer beside the windowed one is fine */
  b = ts_builder("ROCM_AITER_FA", &spec, &c);
  attn_builder_destroy(b);
  c.num_layers = 0;
  c.layers = NULL;
  spec.block_size = 8; /* the backend's customize_spec: multiples of 16 */
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_FA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "kv_cache_spec->block_size=8 is not a multiple of 16");
  spec.block_size = 16;
  spec.kind = ATTN_KV_CROSS_ATTENTION; /* decoder attention only */
  c.max_encoder_len = 64;
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_FA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_AITER_FA does not build metadata for CROSS_ATTENTION");
  spec = ts_mla_spec(64);
  ASSERT_ERROR(attn_builder_create("ROCM_AITER_FA", &spec, &c, &b), ATTN_ERR_UNSUPPORTED,
               "ROCM_AITER_FA does not build metadata for");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_random_against_naive),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests_name("rocm_aiter_fa", tests, NULL, NULL);
}
