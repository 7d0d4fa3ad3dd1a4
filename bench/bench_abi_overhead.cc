// The cost of the C ABI itself, and of update_block_table against a rebuild.
//
// This program links libattn's sources statically (target attn_bench_internal) so that it can
// call the C++ builder directly, and also dlopens the shared libattn.so.1 (the path in argv[1]
// or $ATTN_LIBRARY) as a runtime would. For the same builder and batch it times:
//   cxx/...     Builder::build on a CommonMetadata converted once (what a C++ engine linking the
//               internals would pay; no ABI);
//   abi/...     attn_build linked into this program (the ABI's struct conversion, validation of
//               the struct sizes, busy guard, error object plumbing);
//   dlsym/...   attn_build through a function pointer from dlsym on libattn.so.1 (what a Rust,
//               Go or C engine that dlopens the library pays).
// and a trivial query (the reorder threshold) the same three ways. scripts/bench.sh prints the
// differences as nanoseconds per call. Also: attn_update_block_table vs attn_build with the new
// table (FLASH_ATTN, which supports it). Timings are never asserted.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attn_c.h"
#include "capi/convert.h"
#include "capi/handles.h"

namespace {

using build_fn = attn_error_t* (*)(attn_builder_t*, int64_t, const attn_common_metadata_t*, int32_t,
                                   attn_metadata_t**, attn_stream_t);
using create_fn = attn_error_t* (*)(const char*, const attn_kv_cache_spec_t*,
                                    const attn_builder_config_t*, attn_builder_t**);
using destroy_fn = void (*)(attn_builder_t*);
using threshold_fn = attn_error_t* (*)(const attn_builder_t*, int32_t*);

struct Shared {
  build_fn build = nullptr;
  create_fn create = nullptr;
  destroy_fn destroy = nullptr;
  threshold_fn threshold = nullptr;
} g_so;

// n decodes with `context` tokens of context each, block size 16.
struct Batch {
  int64_t n, width;
  std::vector<int32_t> qsl, seq, bt, bt2;
  std::vector<int64_t> slots;
  int64_t shapes[5];
  attn_tensor_t qsl_t{}, seq_t{}, bt_t{}, bt2_t{}, sm_t{};
  attn_common_metadata_t common = ATTN_COMMON_METADATA_INIT;

  static attn_tensor_t view(void* data, int32_t ndim, int64_t* shape, uint8_t bits) {
    attn_tensor_t t{};
    t.data = data;
    t.device = {ATTN_DEVICE_CPU, 0};
    t.ndim = ndim;
    t.dtype = {ATTN_DTYPE_INT, bits, 1};
    t.shape = shape;
    return t;
  }

  Batch(int64_t n_, int32_t context) : n(n_), width((context + 1 + 15) / 16) {
    qsl.resize(n + 1);
    seq.assign(n, context + 1);
    bt.resize(n * width);
    bt2.resize(n * width);
    for (int64_t i = 0; i <= n; ++i) qsl[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < n * width; ++i) {
      bt[i] = static_cast<int32_t>(i + 1);
      bt2[i] = static_cast<int32_t>(n * width - i);  // another allocation of the same blocks
    }
    for (int64_t i = 0; i < n; ++i)
      slots.push_back(int64_t{bt[i * width + context / 16]} * 16 + context % 16);
    shapes[0] = n + 1;
    shapes[1] = n;
    shapes[2] = n;
    shapes[3] = width;
    shapes[4] = n;
    qsl_t = view(qsl.data(), 1, &shapes[0], 32);
    seq_t = view(seq.data(), 1, &shapes[1], 32);
    bt_t = view(bt.data(), 2, &shapes[2], 32);
    bt2_t = view(bt2.data(), 2, &shapes[2], 32);
    sm_t = view(slots.data(), 1, &shapes[4], 64);
    common.query_start_loc = &qsl_t;
    common.query_start_loc_cpu = &qsl_t;
    common.seq_lens = &seq_t;
    common.seq_lens_cpu = &seq_t;
    common.num_reqs = n;
    common.num_actual_tokens = n;
    common.max_query_len = 1;
    common.max_seq_len = context + 1;
    common.block_table_tensor = &bt_t;
    common.slot_mapping = &sm_t;
  }
};

attn_kv_cache_spec_t spec() {
  attn_kv_cache_spec_t s = ATTN_KV_CACHE_SPEC_INIT;
  s.block_size = 16;
  s.num_kv_heads = 8;
  s.head_size = 128;
  return s;
}

attn_builder_config_t config() {
  attn_builder_config_t c = ATTN_BUILDER_CONFIG_INIT;
  c.max_num_seqs = 1024;
  c.max_num_batched_tokens = 8192;
  c.max_model_len = 32768;
  c.num_attention_heads = 32;
  c.device_capability = 90;
  return c;
}

bool ok(attn_error_t* err, benchmark::State& state) {
  if (err == nullptr) return true;
  state.SkipWithError(attn_error_message(err));
  attn_error_destroy(err);
  return false;
}

// ---- attn_build three ways --------------------------------------------------------------------

void BM_cxx_build(benchmark::State& state) {
  Batch b(state.range(0), static_cast<int32_t>(state.range(1)));
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(attn_builder_create("FLASH_ATTN", &s, &c, &builder), state)) return;
  attn::CommonMetadata common = attn::capi::to_common(&b.common);
  attn::Builder& impl = *builder->impl;
  for (auto _ : state) {
    impl.build(0, common, false, nullptr);
    benchmark::DoNotOptimize(impl.metadata());
  }
  attn_builder_destroy(builder);
}

void BM_abi_build(benchmark::State& state) {
  Batch b(state.range(0), static_cast<int32_t>(state.range(1)));
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(attn_builder_create("FLASH_ATTN", &s, &c, &builder), state)) return;
  attn_metadata_t* m = nullptr;
  for (auto _ : state) {
    attn_build(builder, 0, &b.common, 0, &m, nullptr);
    benchmark::DoNotOptimize(m);
  }
  attn_builder_destroy(builder);
}

void BM_dlsym_build(benchmark::State& state) {
  Batch b(state.range(0), static_cast<int32_t>(state.range(1)));
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(g_so.create("FLASH_ATTN", &s, &c, &builder), state)) return;
  attn_metadata_t* m = nullptr;
  build_fn build = g_so.build;
  benchmark::DoNotOptimize(build);
  for (auto _ : state) {
    build(builder, 0, &b.common, 0, &m, nullptr);
    benchmark::DoNotOptimize(m);
  }
  g_so.destroy(builder);
}

// ---- a trivial query three ways ---------------------------------------------------------------

void BM_cxx_query(benchmark::State& state) {
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(attn_builder_create("FLASH_ATTN", &s, &c, &builder), state)) return;
  const attn::Builder* impl = builder->impl.get();
  for (auto _ : state) {
    benchmark::DoNotOptimize(impl);
    auto t = impl->reorder_batch_threshold();
    benchmark::DoNotOptimize(t);
  }
  attn_builder_destroy(builder);
}

void BM_abi_query(benchmark::State& state) {
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(attn_builder_create("FLASH_ATTN", &s, &c, &builder), state)) return;
  int32_t t = 0;
  for (auto _ : state) {
    attn_builder_reorder_batch_threshold(builder, &t);
    benchmark::DoNotOptimize(t);
  }
  attn_builder_destroy(builder);
}

void BM_dlsym_query(benchmark::State& state) {
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(g_so.create("FLASH_ATTN", &s, &c, &builder), state)) return;
  threshold_fn query = g_so.threshold;
  benchmark::DoNotOptimize(query);
  int32_t t = 0;
  for (auto _ : state) {
    query(builder, &t);
    benchmark::DoNotOptimize(t);
  }
  g_so.destroy(builder);
}

// ---- update_block_table vs a rebuild with the new table ---------------------------------------

void BM_update_block_table(benchmark::State& state) {
  Batch b(state.range(0), static_cast<int32_t>(state.range(1)));
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(attn_builder_create("FLASH_ATTN", &s, &c, &builder), state)) return;
  attn_metadata_t* m = nullptr;
  if (!ok(attn_build(builder, 0, &b.common, 0, &m, nullptr), state)) return;
  attn_metadata_t* kept = nullptr;
  if (!ok(attn_metadata_clone(m, &kept), state)) return;
  attn_metadata_t* out = nullptr;
  for (auto _ : state) {
    attn_update_block_table(builder, kept, &b.bt2_t, &b.sm_t, &out, nullptr);
    benchmark::DoNotOptimize(out);
  }
  attn_metadata_destroy(kept);
  attn_builder_destroy(builder);
}

void BM_rebuild_new_table(benchmark::State& state) {
  Batch b(state.range(0), static_cast<int32_t>(state.range(1)));
  b.common.block_table_tensor = &b.bt2_t;
  const attn_kv_cache_spec_t s = spec();
  const attn_builder_config_t c = config();
  attn_builder_t* builder = nullptr;
  if (!ok(attn_builder_create("FLASH_ATTN", &s, &c, &builder), state)) return;
  attn_metadata_t* m = nullptr;
  for (auto _ : state) {
    attn_build(builder, 0, &b.common, 0, &m, nullptr);
    benchmark::DoNotOptimize(m);
  }
  attn_builder_destroy(builder);
}

}  // namespace

BENCHMARK(BM_cxx_build)->Args({1, 100})->Args({256, 4096});
BENCHMARK(BM_abi_build)->Args({1, 100})->Args({256, 4096});
BENCHMARK(BM_dlsym_build)->Args({1, 100})->Args({256, 4096});
BENCHMARK(BM_cxx_query);
BENCHMARK(BM_abi_query);
BENCHMARK(BM_dlsym_query);
BENCHMARK(BM_update_block_table)->Args({256, 4096})->Args({1024, 32767});
BENCHMARK(BM_rebuild_new_table)->Args({256, 4096})->Args({1024, 32767});

int main(int argc, char** argv) {
  const char* path = argc > 1 && argv[1][0] != '-' ? argv[1] : std::getenv("ATTN_LIBRARY");
  if (path == nullptr) {
    std::fprintf(stderr, "usage: bench_abi_overhead path/to/libattn.so.1 [benchmark flags]\n");
    return 2;
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "bench_abi_overhead: cannot load %s: %s\n", path, dlerror());
    return 2;
  }
  g_so.build = reinterpret_cast<build_fn>(dlsym(lib, "attn_build"));
  g_so.create = reinterpret_cast<create_fn>(dlsym(lib, "attn_builder_create"));
  g_so.destroy = reinterpret_cast<destroy_fn>(dlsym(lib, "attn_builder_destroy"));
  g_so.threshold = reinterpret_cast<threshold_fn>(dlsym(lib, "attn_builder_reorder_batch_threshold"));
  if (!g_so.build || !g_so.create || !g_so.destroy || !g_so.threshold) {
    std::fprintf(stderr, "bench_abi_overhead: %s lacks a symbol: %s\n", path, dlerror());
    return 2;
  }
  if (argc > 1 && argv[1][0] != '-') {  // drop the path before Google Benchmark sees argv
    for (int i = 1; i + 1 < argc; ++i) argv[i] = argv[i + 1];
    --argc;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
