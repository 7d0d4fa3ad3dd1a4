// Host-path benchmarks of libattn's batch utilities and of a FLASH_ATTN build, through the C
// ABI (the path a runtime takes). Each op runs at several batch sizes (to see it is linear) and
// the page-indices op runs beside a memcpy of the same number of bytes (to see how close it is
// to the memory bound). Timings are never asserted; scripts/bench.sh prints the ratios.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <string>
#include <vector>

#include "attn_c.h"
#include "callgrind_rows.h"
#include "memcpy_timer.h"

namespace {

// A host tensor view that owns its shape array (not copyable: the view points into it).
struct HostTensor {
  std::vector<int64_t> shape;
  attn_tensor_t t{};
  HostTensor() = default;
  HostTensor(void* data, std::vector<int64_t> s, uint8_t bits) { set(data, std::move(s), bits); }
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;
  void set(void* data, std::vector<int64_t> s, uint8_t bits) {
    shape = std::move(s);
    t.data = data;
    t.device = {ATTN_DEVICE_CPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = {ATTN_DTYPE_INT, bits, 1};
    t.shape = shape.data();
  }
};

// A batch of `n` requests: `decodes` of them single-token decodes, the rest `prefill_len`-token
// chunks; every request has `context` tokens of context; block size `block`.
struct Batch {
  int64_t n, tokens = 0, width;
  std::vector<int32_t> qsl, seq, bt;
  std::vector<int64_t> slots;
  HostTensor qsl_t, seq_t, bt_t, sm_t;
  attn_common_metadata_t common = ATTN_COMMON_METADATA_INIT;

  Batch(int64_t n_, int64_t decodes, int32_t prefill_len, int32_t context, int32_t block)
      : n(n_), width((context + prefill_len + block - 1) / block) {
    qsl.assign(n + 1, 0);
    seq.assign(n, 0);
    bt.assign(n * width, 0);
    int32_t max_q = 0, max_s = 0;
    for (int64_t r = 0; r < n; ++r) {
      const int32_t q = r < decodes ? 1 : prefill_len;
      qsl[r + 1] = qsl[r] + q;
      seq[r] = context + q;
      max_q = std::max(max_q, q);
      max_s = std::max(max_s, seq[r]);
      for (int64_t j = 0; j < width; ++j) bt[r * width + j] = static_cast<int32_t>(r * width + j + 1);
    }
    tokens = qsl[n];
    slots.assign(tokens, 0);
    qsl_t.set(qsl.data(), {n + 1}, 32);
    seq_t.set(seq.data(), {n}, 32);
    bt_t.set(bt.data(), {n, width}, 32);
    sm_t.set(slots.data(), {tokens}, 64);
    common.query_start_loc = &qsl_t.t;
    common.seq_lens = &seq_t.t;
    common.num_reqs = n;
    common.num_actual_tokens = tokens;
    common.max_query_len = max_q;
    common.max_seq_len = max_s;
    common.block_table_tensor = &bt_t.t;
    common.slot_mapping = &sm_t.t;
  }
};

void check(attn_error_t* err, benchmark::State& state) {
  if (err != nullptr) {
    state.SkipWithError(attn_error_message(err));
    attn_error_destroy(err);
  }
}

// ---- FlashInfer paged KV layout vs memcpy ------------------------------------------------------

void BM_paged_kv_metadata(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int32_t context = static_cast<int32_t>(state.range(1));
  Batch b(n, n, 1, context - 1, 16);
  std::vector<int32_t> indptr(n + 1), indices(n * b.width), last(n);
  HostTensor ip(indptr.data(), {n + 1}, 32), ix(indices.data(), {n * b.width}, 32), lp(last.data(), {n}, 32);
  int64_t pages = 0;
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    check(attn_compute_flashinfer_kv_metadata(&b.seq_t.t, nullptr, &b.bt_t.t, 16, &ip.t, &ix.t,
                                              &lp.t, &pages, nullptr),
          state);
    benchmark::DoNotOptimize(indices.data());
  }
  counted.end(attn_bench::row_name("BM_paged_kv_metadata", {n, context}), state);
  const int64_t bytes = (pages + 2 * n + 1) * 4;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["out_bytes"] = static_cast<double>(bytes);
}

// memcpy of the same output bytes (indices + indptr + last_page_len), from the block table.
void BM_memcpy_same_bytes(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int32_t context = static_cast<int32_t>(state.range(1));
  const int64_t pages = n * ((context + 15) / 16);
  const int64_t bytes = (pages + 2 * n + 1) * 4;
  std::vector<char> src(bytes, 1), dst(bytes);
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  counted.end(attn_bench::row_name("BM_memcpy_same_bytes", {n, context}), state);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["out_bytes"] = static_cast<double>(bytes);
}

// ---- per-request ops at growing batch sizes (linearity) ----------------------------------------

void BM_split_decodes_and_prefills(benchmark::State& state) {
  const int64_t n = state.range(0);
  Batch b(n, n / 2, 64, 1000, 16);
  attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    check(attn_split_decodes_and_prefills(&b.common, 1, 0, &s), state);
    benchmark::DoNotOptimize(s);
  }
  counted.end(attn_bench::row_name("BM_split_decodes_and_prefills", {n}), state);
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_reorder_batch(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::mt19937 rng(1);
  std::vector<int32_t> sched(n), comp(n), swaps(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    sched[i] = rng() % 3 ? 1 : 64;
    comp[i] = rng() % 5 ? 100 : 0;
  }
  int64_t count = 0;
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    check(attn_reorder_batch_to_split_decodes_and_prefills(sched.data(), comp.data(), n, 1,
                                                           swaps.data(), n, &count),
          state);
    benchmark::DoNotOptimize(count);
  }
  counted.end(attn_bench::row_name("BM_reorder_batch", {n}), state);
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_slot_mapping(benchmark::State& state) {
  const int64_t n = state.range(0);
  Batch b(n, n / 2, 64, 1000, 16);
  std::vector<int64_t> pos(b.tokens), slots(b.tokens);
  for (int64_t r = 0; r < n; ++r)
    for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) pos[t] = b.seq[r] - (b.qsl[r + 1] - t);
  HostTensor pt(pos.data(), {b.tokens}, 64), st(slots.data(), {b.tokens}, 64);
  attn_slot_mapping_args_t a = ATTN_SLOT_MAPPING_ARGS_INIT;
  a.query_start_loc = &b.qsl_t.t;
  a.num_reqs = n;
  a.positions = &pt.t;
  a.block_table = &b.bt_t.t;
  a.block_size = 16;
  a.slot_mapping = &st.t;
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    check(attn_compute_slot_mapping(&a, nullptr), state);
    benchmark::DoNotOptimize(slots.data());
  }
  counted.end(attn_bench::row_name("BM_slot_mapping", {n}), state);
  state.SetItemsProcessed(state.iterations() * b.tokens);
}

// Chunked local attention (chunk 8192): range(0) requests, half decodes and half 512-token
// chunks over 8000 tokens of context, or all decodes over range(1) tokens when it is given.
void BM_local_attention_virtual_batches(benchmark::State& state) {
  const int64_t n = state.range(0);
  Batch b = state.range(1) > 0 ? Batch(n, n, 1, static_cast<int32_t>(state.range(1)), 16)
                               : Batch(n, n / 2, 512, 8000, 16);
  attn_common_metadata_t c = b.common;
  const int32_t chunk = 8192;
  int64_t v = 0;
  check(attn_local_attention_num_virtual_batches(chunk, &c, &v), state);
  const int64_t pages = chunk / 16;
  std::vector<int32_t> q(v + 1), qc(v + 1), s(v), sc(v), bt(v * pages), vr(v), vs(v);
  HostTensor tq(q.data(), {v + 1}, 32), tqc(qc.data(), {v + 1}, 32), ts(s.data(), {v}, 32),
      tsc(sc.data(), {v}, 32), tbt(bt.data(), {v, pages}, 32), tvr(vr.data(), {v}, 32),
      tvs(vs.data(), {v}, 32);
  attn_local_attention_out_t out = ATTN_LOCAL_ATTENTION_OUT_INIT;
  out.query_start_loc = &tq.t;
  out.query_start_loc_cpu = &tqc.t;
  out.seq_lens = &ts.t;
  out.seq_lens_cpu = &tsc.t;
  out.block_table = &tbt.t;
  out.virtual_req = &tvr.t;
  out.virtual_block_start = &tvs.t;
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    attn_metadata_t* m = nullptr;
    check(attn_make_local_attention_virtual_batches(chunk, &c, 16, &out, &m, nullptr), state);
    attn_metadata_destroy(m);
  }
  counted.end(attn_bench::row_name("BM_local_attention_virtual_batches", {n, state.range(1)}), state);
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["virtual_batches"] = static_cast<double>(v);
  // every output: query_start_loc (+ cpu), seq_lens (+ cpu), block table, virtual_req/start
  const int64_t bytes = 4 * (2 * (v + 1) + 2 * v + v * pages + 2 * v);
  state.counters["out_bytes"] = static_cast<double>(bytes);
  state.counters["memcpy_ns"] = attn_bench::memcpy_ns(bytes);
}

// ---- KV-sharing fast prefill ---------------------------------------------------------------------
// range(0) requests; range(1) = 0: all single-token decodes (vLLM returns its argument: the
// pass-through), 1: half decodes, half 64-token chunks with the last token of each request as
// its logits index (the armed path, which makes a new batch).
struct FastPrefillCase {
  Batch b;
  std::vector<int32_t> logits, out, out_cpu;
  HostTensor logits_t, out_t, out_cpu_t;
  FastPrefillCase(int64_t n, bool armed)
      : b(n, armed ? n / 2 : n, armed ? 64 : 1, 1000, 16), out(n + 1), out_cpu(n + 1) {
    out_t.set(out.data(), {n + 1}, 32);
    out_cpu_t.set(out_cpu.data(), {n + 1}, 32);
    if (!armed) return;
    for (int64_t r = 0; r < n; ++r) logits.push_back(b.qsl[r + 1] - 1);
    logits_t.set(logits.data(), {n}, 32);
    b.common.logits_indices_padded = &logits_t.t;
    b.common.num_logits_indices = n;
    b.common.max_logits_per_req = 1;
  }
};

// attn_make_kv_sharing_fast_prefill_common_attn_metadata (ABI 1.0): a caller-owned handle per
// call, destroyed in the loop (a runtime pays that too).
void BM_fast_prefill(benchmark::State& state) {
  FastPrefillCase f(state.range(0), state.range(1) != 0);
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    attn_metadata_t* m = nullptr;
    check(attn_make_kv_sharing_fast_prefill_common_attn_metadata(&f.b.common, nullptr, &f.out_t.t,
                                                                 &f.out_cpu_t.t, &m, nullptr),
          state);
    attn_metadata_destroy(m);
  }
  counted.end(attn_bench::row_name("BM_fast_prefill", {state.range(0), state.range(1)}), state);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex (ABI 1.7): the batch into a struct
// of the caller's; a handle only for a new batch (released in the loop). Looked up with dlsym so
// that this binary also runs against a library older than 1.7 (the row then reports an error).
void BM_fast_prefill_ex(benchmark::State& state) {
  using Fn = attn_error_t* (*)(const attn_common_metadata_t*, const attn_tensor_t*,
                               const attn_tensor_t*, const attn_tensor_t*,
                               attn_common_metadata_t*, attn_metadata_t**, attn_stream_t);
  const auto fn = reinterpret_cast<Fn>(
      dlsym(RTLD_DEFAULT, "attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex"));
  if (fn == nullptr) {
    state.SkipWithError("this libattn has no attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex");
    return;
  }
  FastPrefillCase f(state.range(0), state.range(1) != 0);
  attn_common_metadata_t batch = ATTN_COMMON_METADATA_INIT;
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    attn_metadata_t* owned = nullptr;
    check(fn(&f.b.common, nullptr, &f.out_t.t, &f.out_cpu_t.t, &batch, &owned, nullptr), state);
    benchmark::DoNotOptimize(batch);
    attn_metadata_destroy(owned);
  }
  counted.end(attn_bench::row_name("BM_fast_prefill_ex", {state.range(0), state.range(1)}), state);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// ---- a whole FLASH_ATTN build ------------------------------------------------------------------

void BM_flash_attn_build(benchmark::State& state) {
  const int64_t n = state.range(0);
  Batch b(n, n, 1, static_cast<int32_t>(state.range(1)) - 1, 16);
  attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
  spec.block_size = 16;
  spec.num_kv_heads = 8;
  spec.head_size = 128;
  attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  config.max_num_seqs = 4096;
  config.max_num_batched_tokens = 65536;
  config.max_model_len = 131072;
  config.num_attention_heads = 32;
  config.device_capability = 90;
  attn_builder_t* builder = nullptr;
  check(attn_builder_create("FLASH_ATTN", &spec, &config, &builder), state);
  attn_metadata_t* m = nullptr;
  attn_build(builder, 0, &b.common, 0, &m, nullptr);  // first build outside the loop (buffers)
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    check(attn_build(builder, 0, &b.common, 0, &m, nullptr), state);
    benchmark::DoNotOptimize(m);
  }
  counted.end(attn_bench::row_name("BM_flash_attn_build", {n, state.range(1)}), state);
  attn_builder_destroy(builder);
  state.SetItemsProcessed(state.iterations() * n);
}

}  // namespace

BENCHMARK(BM_paged_kv_metadata)->Args({1024, 4096})->Args({1024, 32768})->Args({256, 4096});
BENCHMARK(BM_memcpy_same_bytes)->Args({1024, 4096})->Args({1024, 32768})->Args({256, 4096});
BENCHMARK(BM_split_decodes_and_prefills)->Arg(256)->Arg(1024)->Arg(4096);
BENCHMARK(BM_reorder_batch)->Arg(256)->Arg(1024)->Arg(4096);
BENCHMARK(BM_slot_mapping)->Arg(256)->Arg(1024)->Arg(4096);
BENCHMARK(BM_local_attention_virtual_batches)->Args({256, 0})->Args({1024, 0})->Args({256, 32767});
BENCHMARK(BM_fast_prefill)->Args({256, 0})->Args({1024, 0})->Args({256, 1});
BENCHMARK(BM_fast_prefill_ex)->Args({256, 0})->Args({1024, 0})->Args({256, 1});
BENCHMARK(BM_flash_attn_build)->Args({256, 4096})->Args({1024, 32768});

// ---- a build of every other built-in backend (decodes of the same sizes) ------------------------

void backend_build_at(benchmark::State& state, const char* backend, int32_t validate,
                      const std::string& prefix) {
  const int64_t n = state.range(0);
  Batch b(n, n, 1, static_cast<int32_t>(state.range(1)) - 1, 16);
  attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
  spec.block_size = 16;
  spec.num_kv_heads = 8;
  spec.head_size = 128;
  attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  config.max_num_seqs = static_cast<int32_t>(n);
  config.max_num_batched_tokens = 8192;
  config.max_model_len = 32768;
  config.num_attention_heads = 32;
  config.device_capability = 90;
  config.num_gpu_blocks = n * (state.range(1) / 16 + 1) + 1;  // FLEX_ATTENTION's inverse table
  config.validate = validate;
  attn_builder_t* builder = nullptr;
  check(attn_builder_create(backend, &spec, &config, &builder), state);
  attn_metadata_t* m = nullptr;
  attn_build(builder, 0, &b.common, 0, &m, nullptr);  // first build outside the loop (buffers)
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    check(attn_build(builder, 0, &b.common, 0, &m, nullptr), state);
    benchmark::DoNotOptimize(m);
  }
  counted.end(attn_bench::row_name(prefix, {n, state.range(1)}), state);
  attn_builder_destroy(builder);
  state.SetItemsProcessed(state.iterations() * n);
}

void backend_build(benchmark::State& state, const char* backend) {
  backend_build_at(state, backend, ATTN_VALIDATE_HOST, std::string("backend_build/") + backend);
}
// The O(1) builds of a runtime that trusts its scheduler (ATTN_VALIDATE_TRUSTED, ABI 1.7).
void trusted_build(benchmark::State& state, const char* backend) {
  backend_build_at(state, backend, ATTN_VALIDATE_TRUSTED,
                   std::string("trusted_build/") + backend);
}

BENCHMARK_CAPTURE(backend_build, FLASHINFER, "FLASHINFER")->Args({256, 4096})->Args({1024, 32768});
BENCHMARK_CAPTURE(backend_build, TRITON_ATTN, "TRITON_ATTN")->Args({256, 4096})->Args({1024, 32768});
BENCHMARK_CAPTURE(backend_build, FLEX_ATTENTION, "FLEX_ATTENTION")->Args({256, 4096});
BENCHMARK_CAPTURE(backend_build, TREE_ATTN, "TREE_ATTN")->Args({256, 4096})->Args({1024, 32768});
BENCHMARK_CAPTURE(backend_build, CPU_ATTN, "CPU_ATTN")->Args({256, 4096})->Args({1024, 32768});
BENCHMARK_CAPTURE(trusted_build, FLASH_ATTN, "FLASH_ATTN")->Args({256, 4096});
BENCHMARK_CAPTURE(trusted_build, TRITON_ATTN, "TRITON_ATTN")->Args({256, 4096});

BENCHMARK_MAIN();
