// libFuzzer target: plugin tables and plugin callbacks from arbitrary bytes (through a plugin
// that reads them, fuzz_plugin_lib.c): malformed tables must be refused with a message,
// misbehaving callbacks contained, the registry left consistent, and nothing may crash.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "attn_c.h"
#include "fuzz_fields.h"

#ifndef FUZZ_PLUGIN_PATH
#error "FUZZ_PLUGIN_PATH must name the fuzz plugin library"
#endif

namespace {
void drop(attn_error_t* e) { attn_error_destroy(e); }
using SetFn = void (*)(const uint8_t*, size_t);
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static void* lib = dlopen(FUZZ_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  static SetFn set = lib ? reinterpret_cast<SetFn>(dlsym(lib, "fuzz_plugin_set")) : nullptr;
  if (set == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", FUZZ_PLUGIN_PATH, dlerror());
    std::abort();
  }
  static const size_t builtin = attn_backend_count();
  set(data, size);
  attn_plugin_t* plugin = nullptr;
  if (attn_error_t* e = attn_plugin_load(FUZZ_PLUGIN_PATH, &plugin)) {
    drop(e);
    if (attn_backend_count() != builtin) std::abort();  // a refused plugin leaves nothing behind
    return 0;
  }
  attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
  spec.block_size = 16;
  spec.num_kv_heads = 8;
  spec.head_size = 128;
  attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 64;
  config.max_model_len = 256;
  config.num_attention_heads = 8;
  int32_t qsl[3] = {0, 1, 3}, seq[2] = {5, 9}, bt[2 * 2] = {1, 2, 3, 4};
  int64_t slots[3] = {0, 1, 2};
  int64_t qs[1] = {3}, ss[1] = {2}, bs[2] = {2, 2}, ms[1] = {3};
  auto host = [](void* p, int32_t ndim, int64_t* shape, uint8_t bits) {
    attn_tensor_t t{};
    t.data = p;
    t.device = {ATTN_DEVICE_CPU, 0};
    t.ndim = ndim;
    t.dtype = {ATTN_DTYPE_INT, bits, 1};
    t.shape = shape;
    return t;
  };
  attn_tensor_t qt = host(qsl, 1, qs, 32), st = host(seq, 1, ss, 32), btt = host(bt, 2, bs, 32),
                smt = host(slots, 1, ms, 64);
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  c.query_start_loc = &qt;
  c.seq_lens = &st;
  c.num_reqs = 2;
  c.num_actual_tokens = 3;
  c.max_query_len = 2;
  c.max_seq_len = 9;
  c.block_table_tensor = &btt;
  c.slot_mapping = &smt;
  // The other fields of the batch (core/abi_fields.h), now and then, as the plugin sees them.
  fuzz::Reader in(data, size);
  fuzz::Arena arena;
  const std::vector<int64_t> seq_lens = {5, 9};
  const fuzz::BatchShape shape{2, 3, &seq_lens};
  fuzz::populate(in, arena, shape, c, 4);
  fuzz::mutate(in, arena, shape, c);
  for (const char* name : {"FUZZ_A", "FUZZ_B"}) {
    int32_t level = -1;
    drop(attn_backend_cudagraph_support(name, &spec, &config, &level));
    attn_builder_t* b = nullptr;
    if (attn_error_t* e = attn_builder_create(name, &spec, &config, &b)) {
      drop(e);
      continue;
    }
    for (int round = 0; round < 3; ++round) {
      attn_metadata_t* m = nullptr;
      if (attn_error_t* e = attn_build(b, 0, &c, 0, &m, nullptr)) {
        drop(e);
        continue;
      }
      for (size_t i = 0; i < attn_metadata_field_count(m); ++i) {
        attn_field_t f = ATTN_FIELD_INIT;
        drop(attn_metadata_field(m, i, &f));
      }
      attn_metadata_t* m2 = nullptr;
      drop(attn_update_block_table(b, m, &btt, &smt, &m2, nullptr));
      drop(attn_build_for_cudagraph_capture(b, &c, &m2, nullptr));
    }
    drop(attn_plugin_unload(plugin));  // refused: a builder is alive
    attn_builder_destroy(b);
  }
  if (attn_error_t* e = attn_plugin_unload(plugin)) {
    std::fprintf(stderr, "unload failed: %s\n", attn_error_message(e));
    std::abort();
  }
  if (attn_backend_count() != builtin) std::abort();
  return 0;
}
