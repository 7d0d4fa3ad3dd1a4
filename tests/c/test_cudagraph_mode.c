/* vLLM 0.33's CUDA graph mode resolution (attn_resolve_cudagraph_mode_and_sizes) and the builders'
 * varlen cudagraph bound (attn_builder_varlen_cudagraph_max_query_len): hand-checked cases whose
 * expected values were recorded from vLLM 0.33.0's CompilationConfig.resolve_cudagraph_mode_and_sizes
 * (scripts/vllm_cudagraph_mode_compare.py drives the real function over a grid and compares),
 * the size query / capacity protocol, and bad input with outputs untouched. */
#include "test_support.h"

#define MAX_GROUPS 4
#define MAX_SIZES 8

enum { OK = 0 };

typedef struct {
  const char* what;
  int32_t mode;
  int32_t num_groups;
  int32_t levels[MAX_GROUPS];
  int32_t bounds[MAX_GROUPS]; /* -1: None */
  int32_t q;
  int32_t num_sizes;
  int32_t sizes[MAX_SIZES];
  int32_t max_size;
  int32_t v2, piecewise, split, compile, inductor, mamba, profiling, adaptive;
  int64_t num_blocks, max_num_reqs;
  /* expected */
  int32_t code; /* OK or an ATTN_ERR_* */
  const char* message;
  int32_t want_mode;
  int32_t want_num_sizes;
  int32_t want_sizes[MAX_SIZES];
  int32_t want_max;
} cg_case;

static const char* const kNames[MAX_GROUPS] = {"G0", "G1", "G2", "G3"};

static attn_cudagraph_resolve_args_t args_of(const cg_case* c) {
  attn_cudagraph_resolve_args_t a = ATTN_CUDAGRAPH_RESOLVE_ARGS_INIT;
  a.cudagraph_mode = c->mode;
  a.uniform_decode_query_len = c->q;
  a.num_groups = (size_t)c->num_groups;
  a.group_cudagraph_support = c->levels;
  a.group_backend_names = kNames;
  a.group_varlen_max_query_len = c->bounds;
  a.cudagraph_capture_sizes = c->sizes;
  a.num_cudagraph_capture_sizes = (size_t)c->num_sizes;
  a.max_cudagraph_capture_size = c->max_size;
  a.use_v2_model_runner = c->v2;
  a.piecewise_capture_available = c->piecewise;
  a.splitting_ops_contain_attention = c->split;
  a.vllm_compile = c->compile;
  a.use_inductor_graph_partition = c->inductor;
  a.has_mamba_layers = c->mamba;
  a.is_profiling = c->profiling;
  a.adaptive_verification = c->adaptive;
  a.num_blocks = c->num_blocks;
  a.max_num_reqs = c->max_num_reqs;
  return a;
}

#define S5 5, {1, 2, 4, 8, 16}, 16
/* Defaults of vLLM's config: piecewise capture available, attention split, VLLM_COMPILE. */
#define DEF 1, 1, 1
#define NB {-1, -1, -1, -1}

static const cg_case kCases[] = {
    /* what, mode, groups, levels, bounds, q, sizes, max, v2, pw, split, compile, inductor, mamba,
       prof, adaptive, num_blocks, max_reqs -> code, message, mode, sizes, max */
    {"default, UNIFORM_BATCH", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1, {ATTN_CG_UNIFORM_BATCH},
     NB, 1, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 5,
     {1, 2, 4, 8, 16}, 16},
    {"FULL below ALWAYS, attention split", ATTN_CUDAGRAPH_MODE_FULL, 1, {ATTN_CG_UNIFORM_BATCH},
     NB, 1, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 5,
     {1, 2, 4, 8, 16}, 16},
    {"FULL below ALWAYS, attention not split", ATTN_CUDAGRAPH_MODE_FULL, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 1, S5, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 5, {1, 2, 4, 8, 16}, 16},
    {"FULL with ALWAYS stays", ATTN_CUDAGRAPH_MODE_FULL, 1, {ATTN_CG_ALWAYS}, NB, 1, S5, 0, DEF,
     0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL, 5, {1, 2, 4, 8, 16}, 16},
    {"no groups: ALWAYS", ATTN_CUDAGRAPH_MODE_FULL, 0, {0}, NB, 1, S5, 0, DEF, 0, 0, 0, 0, 0, 0,
     OK, NULL, ATTN_CUDAGRAPH_MODE_FULL, 5, {1, 2, 4, 8, 16}, 16},
    {"FULL with NEVER raises", ATTN_CUDAGRAPH_MODE_FULL, 2, {ATTN_CG_ALWAYS, ATTN_CG_NEVER}, NB,
     1, S5, 0, DEF, 0, 0, 0, 0, 0, 0, ATTN_ERR_UNSUPPORTED,
     "CUDAGraphMode.FULL is not supported with G1 backend (support: AttentionCGSupport.NEVER); "
     "please try cudagraph_mode=PIECEWISE",
     0, 0, {0}, 0},
    {"decode FULL with NEVER: PIECEWISE", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 2,
     {ATTN_CG_ALWAYS, ATTN_CG_NEVER}, NB, 1, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"decode FULL with NEVER, not VLLM_COMPILE: NONE", ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 1,
     {ATTN_CG_NEVER}, NB, 1, S5, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_NONE, 5, {1, 2, 4, 8, 16}, 16},
    {"decode FULL with NEVER, inductor partition: PIECEWISE",
     ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 1, {ATTN_CG_NEVER}, NB, 1, S5, 0, 1, 0, 1, 1, 0, 0, 0,
     0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"NONE stays NONE with NEVER", ATTN_CUDAGRAPH_MODE_NONE, 1, {ATTN_CG_NEVER}, NB, 4, S5, 0,
     DEF, 0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_NONE, 5, {1, 2, 4, 8, 16}, 16},
    {"PIECEWISE with NEVER", ATTN_CUDAGRAPH_MODE_PIECEWISE, 1, {ATTN_CG_NEVER}, NB, 1, S5, 0,
     DEF, 0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"spec decode below UNIFORM_BATCH: PIECEWISE", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 2,
     {ATTN_CG_UNIFORM_BATCH, ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE}, NB, 2, S5, 0, DEF, 0, 0, 0, 0,
     0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"spec decode below UNIFORM_BATCH, not split: NONE", ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 1,
     {ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE}, NB, 2, S5, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_NONE, 5, {1, 2, 4, 8, 16}, 16},
    {"single-token decode without spec keeps FULL decode", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE,
     1, {ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE}, NB, 1, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"no piecewise capture: FULL_DECODE_ONLY", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 1, S5, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 5, {1, 2, 4, 8, 16}, 16},
    {"no piecewise capture: PIECEWISE -> NONE", ATTN_CUDAGRAPH_MODE_PIECEWISE, 1,
     {ATTN_CG_ALWAYS}, NB, 1, S5, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_NONE, 5, {1, 2, 4, 8, 16}, 16},
    {"MRV1 rounds to multiples of 1+k", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 4, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 3, {4, 8, 16}, 16},
    {"MRV1 rounding drops sizes above the maximum", ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 7, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 2, {7, 14}, 14},
    {"MRV2 does not round", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1, {ATTN_CG_UNIFORM_BATCH},
     NB, 4, S5, 1, DEF, 0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 5,
     {1, 2, 4, 8, 16}, 16},
    {"rounding keeps [1+k] when it fits", ATTN_CUDAGRAPH_MODE_FULL, 0, {0}, NB, 4, 1, {5}, 5, 0,
     DEF, 0, 0, 0, 0, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL, 1, {4}, 4},
    {"rounding leaves no size", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 4, 2, {1, 2}, 2, 0, DEF, 0, 0, 0, 0, 0, 0,
     ATTN_ERR_UNSUPPORTED, "No valid cudagraph sizes after rounding to multiple of 4", 0, 0, {0},
     0},
    {"PIECEWISE with spec decode: no rounding", ATTN_CUDAGRAPH_MODE_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 4, S5, 0, DEF, 0, 0, 0, 0, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"Mamba: max_num_seqs above the blocks", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 1, S5, 0, DEF, 0, 1, 0, 0, 4, 8, ATTN_ERR_UNSUPPORTED,
     "max_num_seqs (8) exceeds available Mamba cache blocks (4)", 0, 0, {0}, 0},
    {"Mamba: profiling run skips the check", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 1, S5, 0, DEF, 0, 1, 1, 0, 4, 8, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"Mamba: enough blocks", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1, {ATTN_CG_UNIFORM_BATCH},
     NB, 1, S5, 0, DEF, 0, 1, 0, 0, 8, 8, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 5,
     {1, 2, 4, 8, 16}, 16},
    {"Mamba: PIECEWISE only is not checked", ATTN_CUDAGRAPH_MODE_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, NB, 1, S5, 0, DEF, 0, 1, 0, 0, 4, 8, OK, NULL,
     ATTN_CUDAGRAPH_MODE_PIECEWISE, 5, {1, 2, 4, 8, 16}, 16},
    {"adaptive: bound 1+k", ATTN_CUDAGRAPH_MODE_FULL, 1, {ATTN_CG_UNIFORM_BATCH}, {4, -1, -1, -1},
     4, 4, {1, 2, 4, 8}, 8, 1, DEF, 0, 0, 0, 1, 0, 0, OK, NULL,
     ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 4, {1, 2, 4, 8}, 8},
    {"adaptive: no piecewise capture", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 2,
     {ATTN_CG_ALWAYS, ATTN_CG_UNIFORM_BATCH}, {-1, 4, -1, -1}, 4, 4, {1, 2, 4, 8}, 8, 1, 0, 1, 1,
     0, 0, 0, 1, 0, 0, OK, NULL, ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY, 4, {1, 2, 4, 8}, 8},
    {"adaptive: bound too small", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1,
     {ATTN_CG_UNIFORM_BATCH}, {2, -1, -1, -1}, 4, 4, {1, 2, 4, 8}, 8, 1, DEF, 0, 0, 0, 1, 0, 0,
     ATTN_ERR_UNSUPPORTED, "query lengths vary up to 4, but G0 allows at most 2", 0, 0, {0}, 0},
    {"adaptive: NEVER allows none", ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1, {ATTN_CG_NEVER},
     {8, -1, -1, -1}, 4, 4, {1, 2, 4, 8}, 8, 1, DEF, 0, 0, 0, 1, 0, 0, ATTN_ERR_UNSUPPORTED,
     "but G0 allows none", 0, 0, {0}, 0},
};

static void test_cases(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    const cg_case* c = &kCases[i];
    const attn_cudagraph_resolve_args_t a = args_of(c);
    int32_t mode = -7, max = -7, sizes[MAX_SIZES];
    size_t n = MAX_SIZES, k;
    attn_error_t* e;
    for (k = 0; k < MAX_SIZES; ++k) sizes[k] = -7;
    e = attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n);
    if (c->code != OK) {
      if (e == NULL) fail_msg("case \"%s\" succeeded, expected error %d", c->what, (int)c->code);
      if (attn_error_code(e) != c->code || strstr(attn_error_message(e), c->message) == NULL)
        fail_msg("case \"%s\": error %d \"%s\", expected %d containing \"%s\"", c->what,
                 (int)attn_error_code(e), attn_error_message(e), (int)c->code, c->message);
      attn_error_destroy(e);
      assert_int_equal(mode, -7); /* outputs untouched */
      assert_int_equal(max, -7);
      assert_int_equal(n, MAX_SIZES);
      assert_int_equal(sizes[0], -7);
      continue;
    }
    if (e != NULL) fail_msg("case \"%s\": %s", c->what, attn_error_message(e));
    if (mode != c->want_mode || max != c->want_max || n != (size_t)c->want_num_sizes)
      fail_msg("case \"%s\": mode %d max %d n %zu, expected %d %d %d", c->what, mode, max, n,
               c->want_mode, c->want_max, c->want_num_sizes);
    for (k = 0; k < n; ++k)
      if (sizes[k] != c->want_sizes[k])
        fail_msg("case \"%s\": sizes[%zu]=%d, expected %d", c->what, k, sizes[k],
                 c->want_sizes[k]);
  }
}

/* CUB-style: NULL out_sizes queries the count; a short capacity is refused untouched. */
static void test_size_query(void** state) {
  const attn_cudagraph_resolve_args_t a = args_of(&kCases[16]); /* -> [4, 8, 16] */
  int32_t mode = -7, max = -7, sizes[3] = {-7, -7, -7};
  size_t n = 0;
  (void)state;
  ASSERT_OK(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, NULL, &n));
  assert_int_equal(n, 3);
  assert_int_equal(mode, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE);
  assert_int_equal(max, 16);
  n = 2;
  mode = max = -7;
  ASSERT_ERROR(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
               ATTN_ERR_INVALID_ARGUMENT, "*inout_num_sizes=2 is smaller than the 3 resolved");
  assert_int_equal(n, 2);
  assert_int_equal(mode, -7);
  assert_int_equal(sizes[0], -7);
  n = 3;
  ASSERT_OK(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n));
  assert_int_equal(sizes[0], 4);
  assert_int_equal(sizes[2], 16);
}

static void test_bad_input(void** state) {
  attn_cudagraph_resolve_args_t a = args_of(&kCases[0]);
  const attn_cudagraph_resolve_args_t good = a;
  int32_t mode = -7, max = -7, sizes[MAX_SIZES], levels[1] = {ATTN_CG_ALWAYS};
  size_t n = MAX_SIZES;
  (void)state;
#define BAD(expr, code, text)                                                          \
  do {                                                                                 \
    ASSERT_ERROR(expr, code, text);                                                    \
    assert_int_equal(mode, -7);                                                        \
    assert_int_equal(max, -7);                                                         \
    assert_int_equal(n, MAX_SIZES);                                                    \
    a = good;                                                                          \
  } while (0)
  BAD(attn_resolve_cudagraph_mode_and_sizes(NULL, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args is NULL");
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, NULL, &max, sizes, &n), ATTN_ERR_INVALID_ARGUMENT,
      "out_mode is NULL");
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, NULL, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "out_max_capture_size is NULL");
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, NULL),
      ATTN_ERR_INVALID_ARGUMENT, "inout_num_sizes is NULL");
  a.struct_size = 8;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->struct_size=8 is smaller than");
  a.cudagraph_mode = 5;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->cudagraph_mode=5 is not an ATTN_CUDAGRAPH_MODE_* value");
  a.uniform_decode_query_len = 0;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->uniform_decode_query_len=0 is below 1");
  levels[0] = 4;
  a.group_cudagraph_support = levels;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->group_cudagraph_support[0]=4 is not an ATTN_CG_* value");
  a.group_cudagraph_support = NULL;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->group_cudagraph_support is NULL with args->num_groups=1");
  a.cudagraph_capture_sizes = NULL;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->cudagraph_capture_sizes is NULL");
  a.is_profiling = 2;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->is_profiling=2 is not 0 or 1");
  a.max_num_reqs = -1;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->max_num_reqs=-1 is negative");
  a.adaptive_verification = 1; /* model runner V1 */
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "needs args->use_v2_model_runner=1");
  a.adaptive_verification = 1;
  a.use_v2_model_runner = 1;
  a.group_varlen_max_query_len = NULL;
  a.cudagraph_mode = ATTN_CUDAGRAPH_MODE_PIECEWISE;
  levels[0] = ATTN_CG_ALWAYS;
  a.group_cudagraph_support = levels;
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "which has no FULL cudagraphs");
  a.uniform_decode_query_len = 4;
  a.max_cudagraph_capture_size = 0; /* None, with sizes to round: vLLM's assertion */
  BAD(attn_resolve_cudagraph_mode_and_sizes(&a, &mode, &max, sizes, &n),
      ATTN_ERR_INVALID_ARGUMENT, "args->max_cudagraph_capture_size=0 (None)");
#undef BAD
}

/* ---- attn_builder_varlen_cudagraph_max_query_len ------------------------------------------- */

static void expect_bound(const char* backend, const attn_kv_cache_spec_t* spec,
                         const attn_builder_config_t* c, int32_t want) {
  attn_builder_t* b = ts_builder(backend, spec, c);
  int32_t v = -7, has = -7;
  ASSERT_OK(attn_builder_varlen_cudagraph_max_query_len(b, &v, &has));
  if (v != want || has != (want >= 0))
    fail_msg("%s (k=%d, parallel_drafting=%d, v2=%d): bound %d has %d, expected %d", backend,
             c->num_speculative_tokens, c->parallel_drafting, c->use_v2_model_runner, v, has,
             want);
  attn_builder_destroy(b);
}

static void test_builder_bound(void** state) {
  attn_kv_cache_spec_t mamba = ts_spec();
  attn_kv_cache_spec_t full = ts_spec();
  attn_builder_config_t c = ts_config();
  attn_builder_t* b;
  int32_t v = -7, has = -7;
  (void)state;
  mamba.kind = ATTN_KV_MAMBA;
  mamba.mamba_chunk_size = 8;
  mamba.mamba_type = ATTN_MAMBA_TYPE_MAMBA2;
  expect_bound("MAMBA2", &mamba, &c, 1); /* max_decode_query_len without spec decode */
  c.num_speculative_tokens = 3;
  expect_bound("MAMBA2", &mamba, &c, 4);
  c.parallel_drafting = 1; /* model runner V1: + k mask slots */
  expect_bound("MAMBA2", &mamba, &c, 7);
  c.use_v2_model_runner = 1;
  expect_bound("MAMBA2", &mamba, &c, 4);
  mamba.mamba_type = ATTN_MAMBA_TYPE_MAMBA1;
  expect_bound("MAMBA1", &mamba, &c, -1); /* the base class: None */
  expect_bound("FLASH_ATTN", &full, &c, -1);
  expect_bound("TRITON_ATTN", &full, &c, -1);
  full.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION; /* a wrapper reports its inner builder's */
  full.attention_chunk_size = 64;
  expect_bound("FLASH_ATTN", &full, &c, -1);

  b = ts_builder("FLASH_ATTN", &full, &c);
  ASSERT_ERROR(attn_builder_varlen_cudagraph_max_query_len(NULL, &v, &has),
               ATTN_ERR_INVALID_ARGUMENT, "builder is NULL");
  ASSERT_ERROR(attn_builder_varlen_cudagraph_max_query_len(b, NULL, &has),
               ATTN_ERR_INVALID_ARGUMENT, "out_value is NULL");
  ASSERT_ERROR(attn_builder_varlen_cudagraph_max_query_len(b, &v, NULL),
               ATTN_ERR_INVALID_ARGUMENT, "out_has_value is NULL");
  assert_int_equal(v, -7);
  assert_int_equal(has, -7);
  attn_builder_destroy(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cases),
      cmocka_unit_test(test_size_query),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_builder_bound),
  };
  return cmocka_run_group_tests_name("cudagraph_mode", tests, NULL, NULL);
}
