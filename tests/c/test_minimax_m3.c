/* MINIMAX_M3_SPARSE at vLLM 0.33 (MiniMaxM3SparseMetadataBuilder of
 * models/minimax_m3/common/sparse_attention.py): UNIFORM_BATCH, threshold 1 + k with speculative
 * tokens, no update_block_table; the uniform split, the context lengths, the prefill and decode
 * parts, total_kv_blocks from the upper bound; the AITER sparse PA path
 * (config->rocm_aiter_shuffle_kv_cache): page16_slot_mapping, query_req_id / query_abs_pos; the
 * refusals (vLLM's assertions); seeded random batches against a naive restatement. Hand-checked
 * values are worked out in the comments. */
#include "minimax_m3_checks.h"

#define MINIMAX "MINIMAX_M3_SPARSE"
#define BLOCK MM3_BLOCK

static attn_kv_cache_spec_t sparse_spec(void) {
  attn_kv_cache_spec_t s = ts_spec();
  s.block_size = BLOCK;
  return s;
}

static void test_levels(void** state) {
  attn_kv_cache_spec_t spec = sparse_spec();
  attn_builder_config_t c = ts_config();
  (void)state;
  mm3_expect_class_answers(MINIMAX, &spec, c);
  { /* get_supported_kernel_block_sizes() == [128]; a full-attention spec only */
    attn_kv_cache_spec_t other = ts_spec();
    attn_builder_t* b = (attn_builder_t*)UNTOUCHED_PTR;
    ASSERT_ERROR(attn_builder_create(MINIMAX, &other, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "kernel block size 128");
    other = sparse_spec();
    other.kind = ATTN_KV_SLIDING_WINDOW;
    other.sliding_window = 64;
    ASSERT_ERROR(attn_builder_create(MINIMAX, &other, &c, &b), ATTN_ERR_UNSUPPORTED,
                 "kv_cache_spec->kind=");
    assert_ptr_equal(b, UNTOUCHED_PTR);
  }
}

/* The mixed batch kMm3Q / kMm3S (mm3_expect_mixed_batch) and this builder's own fields:
 * cu_seqlens_k = [0, 133, 142, 272]; total_kv_blocks = cdiv(133, 128) + cdiv(9, 128) +
 * cdiv(130, 128) = 2 + 1 + 2 = 5.
 * AITER: prefill tokens 0..4 belong to prefill 0 (abs pos 128 + t), 5..134 to prefill 2 (the
 * empty prefill 1 is skipped: searchsorted right), abs pos t - 5. The blocks are numbered from 1
 * in order (ts_batch_make): request 0's token at 39 is slot 1 * 128 + 39 = 167, page-16 slot
 * 128 + 167 = 295; request 1's at 299 is in its third block (id 4): 4 * 128 + 43 = 555 -> 512 +
 * 555 = 1067; the padding rows (-1) stay -1. */
static void test_hand_checked(void** state) {
  static const int32_t cu_q[4] = {0, 5, 5, 135}, cu_k[4] = {0, 133, 142, 272};
  attn_kv_cache_spec_t spec = sparse_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(MINIMAX, &spec, &c);
  ts_batch* batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, -1);
  attn_metadata_t* m = NULL;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  mm3_expect_mixed_batch(m, batch);
  ts_expect_i32(m, "prefill_cu_seqlens_k", cu_k, 4);
  assert_int_equal(ts_int(m, "prefill_total_kv_blocks"), 5);
  ts_expect_none(m, "prefill_query_req_id");
  ts_expect_none(m, "prefill_query_abs_pos");
  ts_expect_none(m, "page16_slot_mapping");
  attn_builder_destroy(b);
  ts_batch_free(batch);

  /* the AITER sparse PA path, with 3 padding rows of slot mapping */
  c.rocm_aiter_shuffle_kv_cache = 1;
  b = ts_builder(MINIMAX, &spec, &c);
  batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, 140);
  batch->common.num_actual_tokens = 137;
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  {
    int32_t req[135], pos[135];
    int64_t page16[140];
    int64_t i;
    for (i = 0; i < 135; ++i) {
      req[i] = i < 5 ? 0 : 2;
      pos[i] = (int32_t)(i < 5 ? 128 + i : i - 5);
    }
    for (i = 0; i < 140; ++i) {
      const int64_t s = batch->slots[i];
      page16[i] = (s < 0 ? 0 : s / BLOCK * BLOCK) + s;
    }
    assert_int_equal(batch->slots[0], 167);
    assert_int_equal(page16[0], 295);
    assert_int_equal(batch->slots[1], 555);
    assert_int_equal(page16[1], 1067);
    assert_int_equal(page16[139], -1);
    ts_expect_i32(m, "prefill_query_req_id", req, 135);
    ts_expect_i32(m, "prefill_query_abs_pos", pos, 135);
    ts_expect_i64(m, "page16_slot_mapping", page16, 140);
    ts_expect_i32(m, "prefill_cu_seqlens_q", cu_q, 4); /* the rest as without AITER */
  }
  /* a decode-only batch: no prefill part, the page-16 slots still */
  ts_batch_free(batch);
  {
    static const int32_t q1[2] = {1, 1}, s1[2] = {129, 7};
    /* request 0's token at 128 is in its second block (id 2): slot 256 -> 256 + 256; request
     * 1's at 6 in block 3: slot 390 -> 384 + 390 */
    static const int64_t want[2] = {512, 774};
    batch = ts_batch_make(q1, s1, 2, BLOCK, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    assert_int_equal(ts_int(m, "num_prefills"), 0);
    ts_expect_none(m, "prefill_cu_seqlens_q");
    ts_expect_none(m, "prefill_total_kv_blocks");
    ts_expect_none(m, "prefill_query_req_id");
    assert_int_equal(batch->slots[0], 256);
    ts_expect_i64(m, "page16_slot_mapping", want, 2);
    assert_int_equal(ts_int(m, "decode_decode_query_len"), 1);
  }
  attn_builder_destroy(b);
  ts_batch_free(batch);
}

/* MINIMAX_M3_SPARSE_AITER_PA (MiniMaxM3SparseAiterPAMetadataBuilder, models/minimax_m3/amd):
 * the base build and block_table * 2 (minimax_m3_rebase_block_table_to_page16) in a buffer of
 * max_num_seqs x cdiv(max_model_len 4096, 128) = 32 columns: the decode part's
 * page16_block_table is rows [0, 2), the prefill part's rows [2, 5), each (rows, 3) with row
 * stride 32 (the table has cdiv(300, 128) = 3 columns; blocks numbered from 1 in order:
 * request 0 holds 1 and two padding entries, request 1 holds 2, 3, 4). A table wider than the
 * buffer is refused (vLLM asserts it fits). */
static void test_aiter_pa(void** state) {
  attn_kv_cache_spec_t spec = sparse_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* base = ts_builder(MINIMAX, &spec, &c);
  attn_builder_t* b = ts_builder("MINIMAX_M3_SPARSE_AITER_PA", &spec, &c);
  ts_batch* batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, -1);
  attn_metadata_t *m = NULL, *mb = NULL, *bad = (attn_metadata_t*)UNTOUCHED_PTR;
  const attn_tensor_t *d, *p;
  int32_t level = -1, th = -1;
  size_t i;
  int64_t r, j;
  (void)state;
  ASSERT_OK(attn_builder_cudagraph_support(b, &level));
  assert_int_equal(level, ATTN_CG_UNIFORM_BATCH);
  ASSERT_OK(attn_builder_reorder_batch_threshold(b, &th));
  assert_int_equal(th, 1);
  ASSERT_OK(attn_build(base, 0, &batch->common, 0, &mb, NULL));
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(attn_metadata_field_count(mb), 22);
  assert_int_equal(attn_metadata_field_count(m), 24);
  for (i = 0; i < 22; ++i) { /* the base's fields, the same names in the same order */
    attn_field_t fb = ATTN_FIELD_INIT, fa = ATTN_FIELD_INIT;
    ASSERT_OK(attn_metadata_field(mb, i, &fb));
    ASSERT_OK(attn_metadata_field(m, i, &fa));
    assert_string_equal(fb.name, fa.name);
  }
  assert_int_equal(ts_int(m, "prefill_total_kv_blocks"), 5);
  ts_expect_none(m, "page16_slot_mapping"); /* the AITER switch off: the base's None */
  d = ts_tensor(m, "decode_page16_block_table");
  p = ts_tensor(m, "prefill_page16_block_table");
  assert_int_equal(d->ndim, 2);
  assert_int_equal(d->shape[0], 2);
  assert_int_equal(d->shape[1], 3);
  assert_int_equal(d->strides[0], 32);
  assert_int_equal(p->shape[0], 3);
  assert_int_equal(p->shape[1], 3);
  assert_int_equal(p->strides[0], 32);
  assert_ptr_equal((const int32_t*)p->data, (const int32_t*)d->data + 2 * 32);
  for (r = 0; r < 5; ++r)
    for (j = 0; j < 3; ++j) {
      const attn_tensor_t* t = r < 2 ? d : p;
      const int32_t got = ((const int32_t*)t->data)[(r < 2 ? r : r - 2) * 32 + j];
      assert_int_equal(got, batch->bt[r * batch->width + j] * 2);
    }
  assert_int_equal(((const int32_t*)d->data)[32 + 2], 8); /* request 1's third block, 4 */
  /* a decode-only batch: no prefill part */
  ts_batch_free(batch);
  {
    static const int32_t q1[2] = {1, 1}, s1[2] = {129, 7};
    batch = ts_batch_make(q1, s1, 2, BLOCK, 0, -1);
    ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
    ts_expect_none(m, "prefill_page16_block_table");
    d = ts_tensor(m, "decode_page16_block_table");
    assert_int_equal(d->shape[0], 2);
    assert_int_equal(((const int32_t*)d->data)[1], 4); /* request 0's second block, 2 */
    ts_batch_free(batch);
  }
  /* with the AITER switch: the base's AITER fields too */
  attn_builder_destroy(b);
  c.rocm_aiter_shuffle_kv_cache = 1;
  b = ts_builder("MINIMAX_M3_SPARSE_AITER_PA", &spec, &c);
  batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, -1);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_non_null(ts_tensor(m, "page16_slot_mapping"));
  assert_non_null(ts_tensor(m, "prefill_query_req_id"));
  assert_non_null(ts_tensor(m, "prefill_page16_block_table"));
  ts_batch_free(batch);
  /* a 33-column table: wider than the buffer's 32 */
  batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 33, -1);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "common->block_table_tensor has shape (5, 33): it exceeds the page-16 rebase "
               "buffer (256, 32)");
  assert_ptr_equal(bad, UNTOUCHED_PTR);
  ASSERT_OK(attn_build(base, 0, &batch->common, 0, &mb, NULL)); /* the base has no such buffer */
  ts_batch_free(batch);
  attn_builder_destroy(b);
  attn_builder_destroy(base);
}

/* Speculative decoding and its capture (mm3_expect_spec_decode): this builder's cu_seqlens_k
 * [0, 70, 77] and total_kv_blocks cdiv(70, 128) + cdiv(7, 128) = 2; the capture's all-decode
 * batch has no cu_seqlens_k. */
static void expect_spec_decode_own(const attn_metadata_t* m) {
  static const int32_t cu_k[3] = {0, 70, 77};
  ts_expect_i32(m, "prefill_cu_seqlens_k", cu_k, 3);
  assert_int_equal(ts_int(m, "prefill_total_kv_blocks"), 2);
}

static void expect_capture_own(const attn_metadata_t* m) {
  ts_expect_none(m, "prefill_cu_seqlens_k");
}

static void test_spec_decode(void** state) {
  attn_kv_cache_spec_t spec = sparse_spec();
  (void)state;
  mm3_expect_spec_decode(MINIMAX, &spec, ts_config(), 0, expect_spec_decode_own);
  mm3_expect_spec_decode(MINIMAX, &spec, ts_config(), 1, expect_capture_own);
}

/* What build() refuses (vLLM's assertions), leaving the previous metadata live: the uniform
 * split's (mm3_expect_uniform_refusals); with AITER, prefill tokens past query_start_loc[-1]
 * (vLLM indexes past the prefills); more requests than the context_len_buffer holds. */
static void test_refusals(void** state) {
  attn_kv_cache_spec_t spec = sparse_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b = ts_builder(MINIMAX, &spec, &c);
  attn_metadata_t* m = NULL;
  attn_metadata_t* bad = (attn_metadata_t*)UNTOUCHED_PTR;
  ts_batch* ok = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, -1);
  ts_batch* batch;
  (void)state;
  ASSERT_OK(attn_build(b, 0, &ok->common, 0, &m, NULL));
  mm3_expect_uniform_refusals(b);
  assert_int_equal(ts_int(m, "prefill_total_kv_blocks"), 5); /* the previous result, live */
  attn_builder_destroy(b);
  /* 140 actual tokens over a query_start_loc ending at 137: builds without AITER (the
   * prefills count 138 tokens), refused with it */
  batch = ts_batch_make(kMm3Q, kMm3S, 5, BLOCK, 0, 140);
  b = ts_builder(MINIMAX, &spec, &c);
  ASSERT_OK(attn_build(b, 0, &batch->common, 0, &m, NULL));
  assert_int_equal(ts_int(m, "num_prefill_tokens"), 138);
  attn_builder_destroy(b);
  c.rocm_aiter_shuffle_kv_cache = 1;
  b = ts_builder(MINIMAX, &spec, &c);
  ASSERT_ERROR(attn_build(b, 0, &batch->common, 0, &bad, NULL), ATTN_ERR_INVALID_ARGUMENT,
               "query_start_loc_cpu[5]=137 is less than common->num_actual_tokens=140");
  attn_builder_destroy(b);
  ts_batch_free(batch);
  mm3_expect_context_len_refusal(MINIMAX, &spec, ts_config());
  ts_batch_free(ok);
}

/* Seeded random batches (mm3_random_batch_make; AITER on half) against a naive restatement of
 * every array (mm3_expect_random_batch and: cumulative sums, a linear search for each prefill
 * token's request). */
static void test_random_vs_naive(void** state) {
  uint64_t rng = 0x3a11a3;
  attn_kv_cache_spec_t spec = sparse_spec();
  int iter;
  (void)state;
  for (iter = 0; iter < 300; ++iter) {
    attn_builder_config_t c = ts_config();
    mm3_random_batch rb;
    int32_t cu_k[MM3_MAX_REQS + 1], req[2048], pos[2048];
    int64_t r, t, nd, np, blocks = 0;
    attn_builder_t* b;
    attn_metadata_t* m = NULL;
    if (!mm3_random_batch_make(&rng, &c.rocm_aiter_shuffle_kv_cache, &rb))
      continue; /* vLLM's assertion: test_refusals */
    nd = rb.nd, np = rb.np;
    c.num_speculative_tokens = rb.k;
    b = ts_builder(MINIMAX, &spec, &c);
    ASSERT_OK(attn_build(b, 0, &rb.batch->common, 0, &m, NULL));
    mm3_expect_random_batch(m, &rb);
    if (np > 0) {
      cu_k[0] = 0;
      for (r = 0; r < np; ++r) {
        cu_k[r + 1] = cu_k[r] + rb.s[nd + r];
        blocks += (rb.s[nd + r] + BLOCK - 1) / BLOCK;
      }
      ts_expect_i32(m, "prefill_cu_seqlens_k", cu_k, np + 1);
      assert_int_equal(ts_int(m, "prefill_total_kv_blocks"), blocks);
      if (c.rocm_aiter_shuffle_kv_cache) {
        for (t = 0; t < rb.tokens - rb.ndt; ++t) {
          int64_t owner = np - 1;
          for (r = 0; r < np; ++r)
            if (rb.cu_q[r + 1] > t) {
              owner = r;
              break;
            }
          req[t] = (int32_t)owner;
          pos[t] = rb.ctx[owner] + (int32_t)(t - rb.cu_q[owner]);
        }
        ts_expect_i32(m, "prefill_query_req_id", req, rb.tokens - rb.ndt);
        ts_expect_i32(m, "prefill_query_abs_pos", pos, rb.tokens - rb.ndt);
      } else {
        ts_expect_none(m, "prefill_query_req_id");
      }
    }
    attn_builder_destroy(b);
    ts_batch_free(rb.batch);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_hand_checked),
      cmocka_unit_test(test_spec_decode),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_aiter_pa),
      cmocka_unit_test(test_random_vs_naive),
  };
  return cmocka_run_group_tests_name("minimax_m3", tests, NULL, NULL);
}
