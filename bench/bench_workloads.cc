// Named workloads x every registered backend: the host-path time of one attn_build, the bytes it
// produces (every tensor field that does not view the caller's inputs), and, measured in the same
// benchmark run, the time of a memcpy of that many bytes (counter "memcpy_ratio" = build time /
// memcpy time). Timings are never asserted; scripts/bench.sh prints the table. The hybrid4_*
// rows time a hybrid model's four KV cache groups built one by one and with attn_build_groups.
//
//   bench_workloads [--benchmark_filter=...]     (scripts/bench.sh runs it)
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "attn_c.h"
#include "callgrind_rows.h"
#include "memcpy_timer.h"

namespace {

struct Request {
  int32_t query, context;
};

// A workload: the batch, the block size, the spec kind and the options it needs.
struct Workload {
  std::string name;
  std::vector<Request> requests;
  int32_t block_size = 16;
  int32_t chunk = 0;       // chunked local attention (the spec's attention_chunk_size)
  int32_t spec_tokens = 0; // num_speculative_tokens
};

std::vector<Request> repeat(int n, Request r) { return std::vector<Request>(n, r); }

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  for (int n : {256, 1024})
    for (int ctx : {4096, 32768})
      w.push_back({"decode_" + std::to_string(n) + "x" + std::to_string(ctx / 1024) + "k",
                   repeat(n, {1, ctx - 1})});
  {  // chunked prefill + decodes, 8192 batched tokens: 4 chunks of 2000 and 192 decodes
    Workload m{"mixed_8192", repeat(192, {1, 4095})};
    for (int i = 0; i < 4; ++i) m.requests.push_back({2000, 2000 * i});
    w.push_back(m);
  }
  w.push_back({"long_64x128k", repeat(64, {1, 131071})});
  w.push_back({"specdec_256x(1+3)", repeat(256, {4, 4092}), 16, 0, 3});
  w.push_back({"local8192_256x32k", repeat(256, {1, 32767}), 16, 8192});
  w.push_back({"decode_256x4k_bs64", repeat(256, {1, 4095}), 64});
  w.push_back({"long_64x128k_bs64", repeat(64, {1, 131071}), 64});
  // DeepSeek V4 / V4.1's sparse MLA kernels take block sizes that are multiples of 256
  w.push_back({"decode_256x4k_bs256", repeat(256, {1, 4095}), 256});
  return w;
}

// The batch as a runtime hands it over: host tensors, blocks numbered from 1 (0 is the null block).
struct Batch {
  int64_t n = 0, tokens = 0, width = 0;
  std::vector<int32_t> qsl, seq, bt;
  std::vector<int64_t> slots, positions;  // each token's position (vLLM 0.33's `positions`)
  std::vector<uint8_t> prefilling;  // vLLM 0.33's is_prefilling (the Mamba family requires it)
  std::vector<int64_t> shapes = std::vector<int64_t>(5);
  attn_tensor_t qsl_t{}, seq_t{}, bt_t{}, sm_t{}, pos_t{}, prefilling_t{};
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

  explicit Batch(const Workload& w) : n(static_cast<int64_t>(w.requests.size())) {
    int32_t max_q = 0, max_s = 0;
    for (const Request& r : w.requests) max_s = std::max(max_s, r.query + r.context);
    width = (max_s + w.block_size - 1) / w.block_size;
    qsl.assign(n + 1, 0);
    seq.assign(n, 0);
    bt.assign(n * width, 0);
    int32_t next = 1;
    for (int64_t i = 0; i < n; ++i) {
      const Request& r = w.requests[i];
      qsl[i + 1] = qsl[i] + r.query;
      seq[i] = r.query + r.context;
      max_q = std::max(max_q, r.query);
      for (int64_t j = 0; j < (seq[i] + w.block_size - 1) / w.block_size; ++j) bt[i * width + j] = next++;
      for (int32_t p = r.context; p < seq[i]; ++p) {
        slots.push_back(int64_t{bt[i * width + p / w.block_size]} * w.block_size + p % w.block_size);
        positions.push_back(p);
      }
    }
    tokens = qsl[n];
    shapes = {n + 1, n, n, width, tokens};
    qsl_t = view(qsl.data(), 1, &shapes[0], 32);
    seq_t = view(seq.data(), 1, &shapes[1], 32);
    bt_t = view(bt.data(), 2, &shapes[2], 32);
    sm_t = view(slots.data(), 1, &shapes[4], 64);
    pos_t = view(positions.data(), 1, &shapes[4], 64);
    common.query_start_loc = &qsl_t;
    common.query_start_loc_cpu = &qsl_t;
    common.seq_lens = &seq_t;
    common.seq_lens_cpu = &seq_t;
    common.num_reqs = n;
    common.num_actual_tokens = tokens;
    common.max_query_len = max_q;
    common.max_seq_len = max_s;
    common.block_table_tensor = &bt_t;
    common.slot_mapping = &sm_t;
    common.positions = &pos_t;
    // Prefills and chunked prefills (more tokens than a decode of the workload takes) are in
    // their prompts; decodes, spec decodes included, are past them.
    prefilling.assign(n, 0);
    for (int64_t i = 0; i < n; ++i)
      prefilling[i] = w.requests[i].query > 1 + w.spec_tokens || w.requests[i].context == 0;
    prefilling_t = view(prefilling.data(), 1, &shapes[1], 8);
    prefilling_t.dtype.code = ATTN_DTYPE_BOOL;
    common.is_prefilling = &prefilling_t;
  }

  bool is_input(const void* p) const {
    auto inside = [p](const void* base, size_t bytes) {
      const char* b = static_cast<const char*>(base);
      return p >= b && p < b + bytes;
    };
    return inside(qsl.data(), qsl.size() * 4) || inside(seq.data(), seq.size() * 4) ||
           inside(bt.data(), bt.size() * 4) || inside(slots.data(), slots.size() * 8) ||
           inside(positions.data(), positions.size() * 8);
  }
};

int64_t tensor_bytes(const attn_tensor_t& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n * ((t.dtype.bits * t.dtype.lanes + 7) / 8);
}

// Bytes of the tensor fields the build wrote (fields that view the caller's inputs excluded).
int64_t produced_bytes(const attn_metadata_t* m, const Batch& b) {
  int64_t bytes = 0;
  const size_t count = attn_metadata_field_count(m);
  for (size_t i = 0; i < count; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    if (attn_metadata_field(m, i, &f) != nullptr) continue;
    if (f.kind != ATTN_FIELD_TENSOR || f.tensor == nullptr) continue;
    const attn_tensor_t& t = *f.tensor;
    // Float fields are scratch (softmax partials and the like) sized at create time, not output.
    if (t.dtype.code == ATTN_DTYPE_FLOAT || t.dtype.code == ATTN_DTYPE_BFLOAT) continue;
    if (!b.is_input(static_cast<const char*>(t.data) + t.byte_offset)) bytes += tensor_bytes(t);
  }
  return bytes;
}

// A spec of each family a backend may build for: full attention (8 KV heads of 128), MLA (one
// 576-wide latent head) and Mamba (a MambaSpec with 256-token scan chunks), at block size
// `block_size`.
attn_kv_cache_spec_t family_spec(int32_t kind, int32_t block_size) {
  attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
  spec.kind = kind;
  spec.block_size = block_size;
  spec.num_kv_heads = 8;
  spec.head_size = 128;
  if (kind == ATTN_KV_MLA) {
    spec.num_kv_heads = 1;
    spec.head_size = 576;
  } else if (kind == ATTN_KV_MAMBA) {
    spec.num_kv_heads = spec.head_size = 1;
    spec.mamba_chunk_size = 256;
  }
  return spec;
}

// A backend's family: of the kinds it accepts (attn_backend_info) among full attention, MLA and
// Mamba, the only one, or else the first it builds for at a block size every kernel of the
// family takes (16; 128 for MLA; ATTN_ERR_UNSUPPORTED means another family). -1 for an unknown backend. No list of
// backend names.
int32_t family_of(const std::string& backend) {
  static const int32_t kFamilies[] = {ATTN_KV_FULL_ATTENTION, ATTN_KV_MLA, ATTN_KV_MAMBA};
  attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
  bool found = false;
  for (size_t i = 0; i < attn_backend_count() && !found; ++i) {
    if (attn_error_t* err = attn_backend_info(i, &info)) {
      attn_error_destroy(err);
      continue;
    }
    found = backend == info.name;
  }
  if (!found) return -1;
  std::vector<int32_t> accepted;
  for (int32_t kind : kFamilies)
    if (info.kv_cache_kinds & (1u << kind)) accepted.push_back(kind);
  if (accepted.size() == 1) return accepted[0];
  attn_builder_config_t probe = ATTN_BUILDER_CONFIG_INIT;
  probe.max_num_seqs = 16;
  probe.max_num_batched_tokens = 1024;
  probe.max_model_len = 131072;
  probe.num_attention_heads = 32;
  probe.device_capability = 90;
  probe.num_gpu_blocks = 64;
  for (int32_t kind : accepted) {
    const attn_kv_cache_spec_t spec = family_spec(kind, kind == ATTN_KV_MLA ? 128 : 16);
    attn_builder_t* builder = nullptr;
    attn_error_t* err = attn_builder_create(backend.c_str(), &spec, &probe, &builder);
    attn_builder_destroy(builder);
    const bool builds = err == nullptr || attn_error_code(err) != ATTN_ERR_UNSUPPORTED;
    attn_error_destroy(err);
    if (builds) return kind;
  }
  return -1;
}

// The spec a backend builds the workload for: its family's, chunked local attention for the local
// workload (for attention layers of the full kind only); kind -1 when the family has no such
// workload.
attn_kv_cache_spec_t spec_for(const std::string& backend, const Workload& w) {
  const int32_t family = family_of(backend);
  attn_kv_cache_spec_t spec = family_spec(family < 0 ? ATTN_KV_FULL_ATTENTION : family, w.block_size);
  if (family < 0 || (family != ATTN_KV_FULL_ATTENTION && w.chunk > 0)) {
    spec.kind = -1;
  } else if (w.chunk > 0) {
    spec.kind = ATTN_KV_CHUNKED_LOCAL_ATTENTION;
    spec.attention_chunk_size = w.chunk;
  }
  return spec;
}

// The builder config every row uses for batch `b` (sized for it, SM 9.0).
attn_builder_config_t config_for(const Batch& b) {
  attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  config.max_num_seqs = static_cast<int32_t>(std::max<int64_t>(b.n, 256));
  config.max_num_batched_tokens = static_cast<int32_t>(std::max<int64_t>(b.tokens, 8192));
  config.max_model_len = 131072;
  config.num_attention_heads = 32;
  config.device_capability = 90;
  return config;
}

void run(benchmark::State& state, const std::string& backend, const Workload& w) {
  Batch b(w);
  const attn_kv_cache_spec_t spec = spec_for(backend, w);
  attn_builder_config_t config = config_for(b);
  config.num_speculative_tokens = w.spec_tokens;
  config.num_gpu_blocks = b.n * b.width + 1;  // FLEX_ATTENTION's inverse block table
  // FLEX_ATTENTION keeps vLLM's inverse block table, max_num_seqs x num_gpu_blocks int32: past
  // 1 GiB the machine's memory, not the library, is what would be measured.
  const double inverse_bytes = 4.0 * config.max_num_seqs * static_cast<double>(config.num_gpu_blocks);
  if (backend == "FLEX_ATTENTION" && inverse_bytes > double(1 << 30)) {
    state.SkipWithError(("skipped: FLEX_ATTENTION's inverse block table would take " +
                         std::to_string(static_cast<int64_t>(inverse_bytes / (1 << 20))) + " MiB")
                            .c_str());
    return;
  }
  attn_builder_t* builder = nullptr;
  attn_error_t* create_err = attn_builder_create(backend.c_str(), &spec, &config, &builder);
  if (create_err != nullptr && attn_error_code(create_err) == ATTN_ERR_UNSUPPORTED &&
      std::strstr(attn_error_message(create_err), "cache_dtype") != nullptr) {
    // A backend whose caches are FP8 only (TOKENSPEED_MLA): the workload with an FP8 cache.
    attn_error_destroy(create_err);
    config.cache_dtype = ATTN_KV_DTYPE_FP8_E4M3;
    create_err = attn_builder_create(backend.c_str(), &spec, &config, &builder);
  }
  if (create_err != nullptr && attn_error_code(create_err) == ATTN_ERR_UNSUPPORTED &&
      std::strstr(attn_error_message(create_err), "config->platform_rocm=0") != nullptr) {
    // A ROCm-only builder (DeepSeek V4's ROCm ones): the workload as on ROCm.
    attn_error_destroy(create_err);
    config.platform_rocm = 1;
    create_err = attn_builder_create(backend.c_str(), &spec, &config, &builder);
  }
  if (create_err != nullptr) {
    state.SkipWithError(attn_error_message(create_err));
    attn_error_destroy(create_err);
    return;
  }
  attn_metadata_t* m = nullptr;
  attn_error_t* err = attn_build(builder, 0, &b.common, 0, &m, nullptr);
  if (err != nullptr) {
    state.SkipWithError(attn_error_message(err));
    attn_error_destroy(err);
    attn_builder_destroy(builder);
    return;
  }
  const int64_t bytes = produced_bytes(m, b);
  attn_bench::CountedLoop counted;
  for (auto _ : state) {
    attn_build(builder, 0, &b.common, 0, &m, nullptr);
    benchmark::DoNotOptimize(m);
  }
  counted.end(w.name + "/" + backend, state);
  attn_builder_destroy(builder);
  const double mc = attn_bench::memcpy_ns(bytes);
  state.counters["requests"] = static_cast<double>(b.n);
  state.counters["out_bytes"] = static_cast<double>(bytes);
  state.counters["memcpy_ns"] = mc;
  state.SetBytesProcessed(state.iterations() * bytes);
}

// A hybrid model's step (issue 35): four KV cache groups over one batch, FLASH_ATTN on a full
// attention spec, FLASH_ATTN on a sliding-window spec (window 4096), MAMBA2 and GDN_ATTN on
// Mamba specs. "singles": the four attn_build calls a runtime makes today; "group": one
// attn_build_groups (the batch converted and validated once). Same builders, same batch; the
// ratio singles/group is the saving (scripts/bench.sh prints both rows). attn_build_groups (ABI
// 1.7) is looked up with dlsym so that this binary also runs against an older library
// (scripts/bench_compare.sh): the group row then reports an error, the singles row runs.
void run_hybrid(benchmark::State& state, const Workload& w, bool grouped) {
  const auto build_groups =
      reinterpret_cast<PFN_attn_build_groups>(dlsym(RTLD_DEFAULT, "attn_build_groups"));
  if (grouped && build_groups == nullptr) {
    state.SkipWithError("this libattn has no attn_build_groups");
    return;
  }
  Batch b(w);
  attn_builder_config_t config = config_for(b);
  config.num_gpu_blocks = b.n * b.width + 1;
  attn_kv_cache_spec_t specs[4] = {family_spec(ATTN_KV_FULL_ATTENTION, w.block_size),
                                   family_spec(ATTN_KV_FULL_ATTENTION, w.block_size),
                                   family_spec(ATTN_KV_MAMBA, w.block_size),
                                   family_spec(ATTN_KV_MAMBA, w.block_size)};
  specs[1].kind = ATTN_KV_SLIDING_WINDOW;
  specs[1].sliding_window = 4096;
  const char* names[4] = {"FLASH_ATTN", "FLASH_ATTN", "MAMBA2", "GDN_ATTN"};
  attn_builder_t* builders[4] = {};
  attn_metadata_t* out[4] = {};
  std::string error;
  for (int i = 0; i < 4 && error.empty(); ++i) {
    attn_error_t* err = attn_builder_create(names[i], &specs[i], &config, &builders[i]);
    if (err == nullptr) err = attn_build(builders[i], 0, &b.common, 0, &out[i], nullptr);
    if (err != nullptr) {
      error = std::string(names[i]) + ": " + attn_error_message(err);
      attn_error_destroy(err);
    }
  }
  if (error.empty() && build_groups != nullptr) {
    if (attn_error_t* err = build_groups(builders, 4, nullptr, &b.common, 0, out, nullptr)) {
      error = attn_error_message(err);
      attn_error_destroy(err);
    }
  }
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
  } else if (grouped) {
    attn_bench::CountedLoop counted;
    for (auto _ : state) {
      build_groups(builders, 4, nullptr, &b.common, 0, out, nullptr);
      benchmark::DoNotOptimize(out[3]);
    }
    counted.end("hybrid4_group/" + w.name, state);
  } else {
    attn_bench::CountedLoop counted;
    for (auto _ : state) {
      for (int i = 0; i < 4; ++i) attn_build(builders[i], 0, &b.common, 0, &out[i], nullptr);
      benchmark::DoNotOptimize(out[3]);
    }
    counted.end("hybrid4_singles/" + w.name, state);
  }
  for (attn_builder_t* builder : builders) attn_builder_destroy(builder);
  state.counters["requests"] = static_cast<double>(b.n);
}

}  // namespace

int main(int argc, char** argv) {
  static const std::vector<Workload> all = workloads();
  std::vector<std::string> backends;
  for (size_t i = 0; i < attn_backend_count(); ++i) {
    const char* name = nullptr;
    if (attn_backend_name(i, &name) == nullptr) backends.emplace_back(name);
  }
  for (const Workload& w : all)
    for (const std::string& backend : backends)
      if (spec_for(backend, w).kind >= 0)
        benchmark::RegisterBenchmark((w.name + "/" + backend).c_str(),
                                     [&w, backend](benchmark::State& s) { run(s, backend, w); })
            ->Unit(benchmark::kMicrosecond);
  for (const Workload& w : all)
    if (w.chunk == 0 && w.spec_tokens == 0 && w.block_size == 16)
      for (bool grouped : {false, true})
        benchmark::RegisterBenchmark(
            (std::string("hybrid4_") + (grouped ? "group/" : "singles/") + w.name).c_str(),
            [&w, grouped](benchmark::State& s) { run_hybrid(s, w, grouped); })
            ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
