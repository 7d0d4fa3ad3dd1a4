// bench_device: libattn's CUDA path on a GPU, through the C ABI, with CUDA events and wall
// clocks in one run (no Google Benchmark: it runs on a bare GPU machine; scripts/gpu-check.sh).
//
//   1. device: name, compute capability, the memory bandwidth from the memory clock and bus
//      width (2 x clock x width / 8, the deviceQuery formula), and a measured device-to-device
//      cudaMemcpy in this run (counting bytes read and written).
//   2. host_build_us: the host-side cost of one attn_build per backend on a CUDA builder (device
//      tensors + host mirrors, the stream of the caller), 256 decodes x 4k context; beside it the
//      same batch on a host builder. Targets: < 5 us for FLASH_ATTN and TRITON_ATTN.
//   3. device_kernels: device time of the fused kernels, timed by replaying a CUDA graph of many
//      calls (pure device time, no host gaps): FlashInfer's paged KV layout (indptr + indices +
//      last page length, one kernel) for 1024 x 128k, 1024 x 32k and 256 x 4k, and the
//      FLEX_ATTENTION build (per-request arrays + block mask, two kernels) at 256 x 4k; bytes
//      moved / time as GB/s and as a fraction of both bandwidths of section 1. Each output is
//      checked against what it must be.
//   4. graph_vs_eager: per step, eager attn_build on a stream vs cudaGraphLaunch of a captured
//      build (the same device work, none of the host work), and their ratio.
//
//   bench_device [--json FILE] [--quick]
// Exit status 0 on success (also when no GPU is visible: it prints "SKIP: no CUDA device"),
// 1 when an output check fails, 2 on a CUDA or libattn error.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attn_c.h"

namespace {

bool g_quick = false;
int g_failed_checks = 0;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_device: %s\n", what.c_str());
  std::fflush(stdout);
  std::exit(2);
}

void ck(cudaError_t st, const char* what, int line) {
  if (st != cudaSuccess)
    die(std::string(what) + " (line " + std::to_string(line) + "): " + cudaGetErrorName(st) + ": " +
        cudaGetErrorString(st));
}
#define CK(x) ck((x), #x, __LINE__)

void ok(attn_error_t* err, const std::string& what) {
  if (err == nullptr) return;
  const std::string msg = what + ": [" + std::to_string(attn_error_code(err)) + "] " + attn_error_message(err);
  attn_error_destroy(err);
  die(msg);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

// ---- device memory and tensors ------------------------------------------------------------------

template <class T>
T* dev_alloc(size_t n) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

attn_tensor_t tensor(void* data, bool cuda, int32_t ndim, int64_t* shape, uint8_t bits) {
  attn_tensor_t t{};
  t.data = data;
  t.device = {cuda ? ATTN_DEVICE_CUDA : ATTN_DEVICE_CPU, 0};
  t.ndim = ndim;
  t.dtype = {ATTN_DTYPE_INT, bits, 1};
  t.shape = shape;
  return t;
}

// A batch of `n` requests, each `q` query tokens on a context of `seq` tokens, blocks numbered
// from 1 (modulo `id_limit` - 1 when given, for backends that index the KV cache by them), on the
// device with host mirrors, and the same batch in host memory for host builders.
struct Batch {
  int64_t n, width, tokens;
  int32_t block;
  std::vector<int32_t> qsl, seq, bt;
  std::vector<int64_t> slots;
  int64_t qsl_shape[1], seq_shape[1], bt_shape[2], sm_shape[1];
  int32_t *d_qsl = nullptr, *d_seq = nullptr, *d_bt = nullptr;
  int64_t* d_sm = nullptr;
  attn_tensor_t h_qsl_t, h_seq_t, h_bt_t, h_sm_t;  // host tensors (also the mirrors)
  attn_tensor_t d_qsl_t, d_seq_t, d_bt_t, d_sm_t;
  attn_common_metadata_t host = ATTN_COMMON_METADATA_INIT;
  attn_common_metadata_t device = ATTN_COMMON_METADATA_INIT;

  Batch(int64_t n_, int32_t q, int32_t s, int32_t block_, int64_t id_limit = 0)
      : n(n_), width((s + block_ - 1) / block_), tokens(n_ * q), block(block_) {
    qsl.assign(n + 1, 0);
    seq.assign(n, s);
    bt.assign(n * width, 0);
    slots.assign(tokens, 0);
    for (int64_t r = 0; r < n; ++r) {
      qsl[r + 1] = static_cast<int32_t>((r + 1) * q);
      for (int64_t j = 0; j < width; ++j) {
        int64_t id = 1 + r * width + j;
        if (id_limit > 1) id = 1 + (id - 1) % (id_limit - 1);
        bt[r * width + j] = static_cast<int32_t>(id);
      }
      for (int32_t k = 0; k < q; ++k) {
        const int64_t p = s - q + k;
        slots[r * q + k] = static_cast<int64_t>(bt[r * width + p / block]) * block + p % block;
      }
    }
    qsl_shape[0] = n + 1;
    seq_shape[0] = n;
    bt_shape[0] = n;
    bt_shape[1] = width;
    sm_shape[0] = tokens;
    d_qsl = dev_alloc<int32_t>(qsl.size());
    d_seq = dev_alloc<int32_t>(seq.size());
    d_bt = dev_alloc<int32_t>(bt.size());
    d_sm = dev_alloc<int64_t>(slots.size());
    CK(cudaMemcpy(d_qsl, qsl.data(), qsl.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_seq, seq.data(), seq.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_bt, bt.data(), bt.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_sm, slots.data(), slots.size() * 8, cudaMemcpyHostToDevice));
    h_qsl_t = tensor(qsl.data(), false, 1, qsl_shape, 32);
    h_seq_t = tensor(seq.data(), false, 1, seq_shape, 32);
    h_bt_t = tensor(bt.data(), false, 2, bt_shape, 32);
    h_sm_t = tensor(slots.data(), false, 1, sm_shape, 64);
    d_qsl_t = tensor(d_qsl, true, 1, qsl_shape, 32);
    d_seq_t = tensor(d_seq, true, 1, seq_shape, 32);
    d_bt_t = tensor(d_bt, true, 2, bt_shape, 32);
    d_sm_t = tensor(d_sm, true, 1, sm_shape, 64);
    for (attn_common_metadata_t* c : {&host, &device}) {
      c->num_reqs = n;
      c->num_actual_tokens = tokens;
      c->max_query_len = q;
      c->max_seq_len = s;
    }
    host.query_start_loc = &h_qsl_t;
    host.seq_lens = &h_seq_t;
    host.block_table_tensor = &h_bt_t;
    host.slot_mapping = &h_sm_t;
    device.query_start_loc = &d_qsl_t;
    device.query_start_loc_cpu = &h_qsl_t;
    device.seq_lens = &d_seq_t;
    device.seq_lens_cpu = &h_seq_t;
    device.block_table_tensor = &d_bt_t;
    device.slot_mapping = &d_sm_t;
  }
  ~Batch() {
    cudaFree(d_qsl);
    cudaFree(d_seq);
    cudaFree(d_bt);
    cudaFree(d_sm);
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
};

attn_builder_config_t config_for(int64_t n, int32_t max_len, bool cuda, int64_t gpu_blocks) {
  attn_builder_config_t c = ATTN_BUILDER_CONFIG_INIT;
  c.device = {cuda ? ATTN_DEVICE_CUDA : ATTN_DEVICE_CPU, 0};
  c.max_num_seqs = static_cast<int32_t>(n);
  c.max_num_batched_tokens = static_cast<int32_t>(std::max<int64_t>(8192, n));
  c.max_model_len = max_len;
  c.num_attention_heads = 32;
  c.num_gpu_blocks = gpu_blocks;
  return c;
}

attn_kv_cache_spec_t spec_for(int32_t block) {
  attn_kv_cache_spec_t s = ATTN_KV_CACHE_SPEC_INIT;
  s.block_size = block;
  s.num_kv_heads = 8;
  s.head_size = 128;
  return s;
}

attn_builder_t* make_builder(const char* backend, const attn_kv_cache_spec_t& spec,
                             const attn_builder_config_t& cfg) {
  attn_builder_t* b = nullptr;
  ok(attn_builder_create(backend, &spec, &cfg, &b), std::string("attn_builder_create ") + backend);
  return b;
}

const char* level_name(int32_t l) {
  switch (l) {
    case ATTN_CG_NEVER: return "NEVER";
    case ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE: return "UNIFORM_SINGLE_TOKEN_DECODE";
    case ATTN_CG_UNIFORM_BATCH: return "UNIFORM_BATCH";
    case ATTN_CG_ALWAYS: return "ALWAYS";
    default: return "?";
  }
}

// ---- 1. the device --------------------------------------------------------------------------------

struct DeviceInfo {
  std::string name;
  int cc = 0, sms = 0;
  double peak_gbs = 0, d2d_gbs = 0;
};

DeviceInfo device_info(cudaStream_t s) {
  DeviceInfo d;
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  d.name = p.name;
  d.cc = p.major * 10 + p.minor;
  d.sms = p.multiProcessorCount;
  int clock_khz = 0, bus_bits = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0));
  CK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
  d.peak_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  // Device-to-device copy of 1 GiB (256 MiB with --quick), best of several, read + write bytes.
  const size_t bytes = g_quick ? (size_t{256} << 20) : (size_t{1} << 30);
  char* a = dev_alloc<char>(bytes);
  char* b = dev_alloc<char>(bytes);
  CK(cudaMemsetAsync(a, 1, bytes, s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));  // warm-up
  float best = 1e30f;
  for (int rep = 0; rep < 10; ++rep) {
    CK(cudaEventRecord(e0, s));
    CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, ms);
  }
  d.d2d_gbs = 2.0 * static_cast<double>(bytes) / (best * 1e-3) / 1e9;
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(a));
  CK(cudaFree(b));
  return d;
}

// ---- 2. host-side cost of one build -----------------------------------------------------------------

// Mean microseconds of one call of `build` (batches of 16 timed calls; the stream is drained
// between batches, untimed, so that queued kernels never block the host).
template <class F>
double host_us_per_call(F build, cudaStream_t s) {
  for (int i = 0; i < 8; ++i) build();  // warm-up
  CK(cudaStreamSynchronize(s));
  const double budget = g_quick ? 0.1 : 0.4;
  double timed = 0;
  long calls = 0;
  const double start = now_s();
  while (now_s() - start < budget || calls < 64) {
    const double t0 = now_s();
    for (int i = 0; i < 16; ++i) build();
    timed += now_s() - t0;
    calls += 16;
    CK(cudaStreamSynchronize(s));
  }
  return timed / calls * 1e6;
}

struct HostCost {
  std::string backend, level;
  double cuda_us = 0, host_us = 0;
};

std::vector<HostCost> host_costs(cudaStream_t s) {
  const int64_t n = 256;
  const int32_t ctx = 4096;
  Batch batch(n, 1, ctx, 16, n * (ctx / 16) + 1);
  std::vector<HostCost> out;
  // Every built-in backend that accepts full-attention specs (attn_backend_info) and builds for
  // one on the device (ATTN_ERR_UNSUPPORTED: another family, or a host-only backend).
  for (size_t i = 0; i < attn_backend_count(); ++i) {
    attn_backend_info_t info = ATTN_BACKEND_INFO_INIT;
    ok(attn_backend_info(i, &info), "attn_backend_info");
    const char* name = info.name;
    const attn_kv_cache_spec_t spec = spec_for(16);
    if (info.origin != ATTN_BACKEND_BUILTIN || (info.kv_cache_kinds & (1u << spec.kind)) == 0) continue;
    attn_builder_t* db = nullptr;
    const attn_builder_config_t device_config = config_for(n, ctx, true, n * (ctx / 16) + 1);
    if (attn_error_t* err = attn_builder_create(name, &spec, &device_config, &db)) {
      const bool other = attn_error_code(err) == ATTN_ERR_UNSUPPORTED;
      if (other) {
        attn_error_destroy(err);
        continue;
      }
      ok(err, std::string("attn_builder_create ") + name);
    }
    attn_builder_t* hb = make_builder(name, spec, config_for(n, ctx, false, n * (ctx / 16) + 1));
    int32_t level = 0;
    ok(attn_builder_cudagraph_support(db, &level), "attn_builder_cudagraph_support");
    HostCost h;
    h.backend = name;
    h.level = level_name(level);
    attn_metadata_t* md = nullptr;
    h.cuda_us = host_us_per_call(
        [&] { ok(attn_build(db, 0, &batch.device, 0, &md, reinterpret_cast<attn_stream_t>(s)), name); }, s);
    h.host_us = host_us_per_call([&] { ok(attn_build(hb, 0, &batch.host, 0, &md, nullptr), name); }, s);
    out.push_back(h);
    attn_builder_destroy(db);
    attn_builder_destroy(hb);
  }
  return out;
}

// ---- 3. device time of the kernels -------------------------------------------------------------------

// Device microseconds per call: `calls` calls captured into one graph, replayed `reps` times
// between two events (after a warm-up replay).
template <class F>
double device_us_per_call(F call, cudaStream_t s, int calls, int reps) {
  call();  // eager warm-up (module loading) and a first result
  CK(cudaStreamSynchronize(s));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) call();
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, s));
  for (int r = 0; r < reps; ++r) CK(cudaGraphLaunch(exec, s));
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return ms * 1e3 / (static_cast<double>(calls) * reps);
}

struct KernelTime {
  std::string name;
  double us = 0, bytes = 0, gbs = 0, of_peak = 0, of_d2d = 0;
  std::string check;
};

KernelTime paged_kv(int64_t n, int32_t ctx, cudaStream_t s, const DeviceInfo& dev) {
  const int32_t page = 16;
  Batch batch(n, 1, ctx, page);
  const int64_t pages = n * batch.width;
  int32_t* indptr = dev_alloc<int32_t>(n + 1);
  int32_t* indices = dev_alloc<int32_t>(pages);
  int32_t* last = dev_alloc<int32_t>(n);
  int64_t indptr_shape[1] = {n + 1}, indices_shape[1] = {pages}, last_shape[1] = {n};
  attn_tensor_t indptr_t = tensor(indptr, true, 1, indptr_shape, 32);
  attn_tensor_t indices_t = tensor(indices, true, 1, indices_shape, 32);
  attn_tensor_t last_t = tensor(last, true, 1, last_shape, 32);
  int64_t num_pages = 0;
  KernelTime k;
  k.name = "paged_kv_metadata " + std::to_string(n) + " x " + std::to_string(ctx / 1024) + "k";
  const int calls = 20, reps = g_quick ? 2 : 5;
  k.us = device_us_per_call(
      [&] {
        ok(attn_compute_flashinfer_kv_metadata(&batch.d_seq_t, &batch.h_seq_t, &batch.d_bt_t, page,
                                               &indptr_t, &indices_t, &last_t, &num_pages,
                                               reinterpret_cast<attn_stream_t>(s)),
           "attn_compute_flashinfer_kv_metadata");
      },
      s, calls, reps);
  // Compulsory bytes: the table rows read, the indices written, seq_lens read, indptr and
  // last_page_len written.
  k.bytes = static_cast<double>(pages) * 4 * 2 + static_cast<double>(n) * 4 * 3 + 4;
  k.gbs = k.bytes / (k.us * 1e-6) / 1e9;
  k.of_peak = k.gbs / dev.peak_gbs;
  k.of_d2d = k.gbs / dev.d2d_gbs;
  // The output must be the table rows, in order.
  std::vector<int32_t> got(pages), got_ptr(n + 1), got_last(n);
  CK(cudaMemcpy(got.data(), indices, pages * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(got_ptr.data(), indptr, (n + 1) * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(got_last.data(), last, n * 4, cudaMemcpyDeviceToHost));
  bool good = num_pages == pages && got == batch.bt;
  for (int64_t r = 0; r <= n && good; ++r) good = got_ptr[r] == r * batch.width;
  for (int64_t r = 0; r < n && good; ++r) good = got_last[r] == (ctx % page == 0 ? page : ctx % page);
  k.check = good ? "ok" : "FAILED";
  if (!good) ++g_failed_checks;
  CK(cudaFree(indptr));
  CK(cudaFree(indices));
  CK(cudaFree(last));
  return k;
}

// Copies a metadata tensor field to the host (compact 1-D or 2-D).
std::vector<char> field_bytes(const attn_metadata_t* m, const char* name) {
  const attn_tensor_t* t = nullptr;
  ok(attn_metadata_get_tensor(m, name, &t), name);
  if (t == nullptr) return {};
  const size_t item = t->dtype.bits / 8;
  const int64_t rows = t->ndim == 2 ? t->shape[0] : 1;
  const int64_t cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
  const int64_t stride = t->ndim == 2 && t->strides != nullptr ? t->strides[0] : cols;
  std::vector<char> out(static_cast<size_t>(rows * cols) * item);
  const char* base = static_cast<const char*>(t->data) + t->byte_offset;
  for (int64_t r = 0; r < rows; ++r) {
    const void* src = base + static_cast<size_t>(r * stride) * item;
    char* dst = out.data() + static_cast<size_t>(r * cols) * item;
    if (t->device.device_type == ATTN_DEVICE_CUDA)
      CK(cudaMemcpy(dst, src, static_cast<size_t>(cols) * item, cudaMemcpyDeviceToHost));
    else
      std::memcpy(dst, src, static_cast<size_t>(cols) * item);
  }
  return out;
}

KernelTime flex_build(cudaStream_t s, const DeviceInfo& dev) {
  const int64_t n = 256;
  const int32_t ctx = 4096, block = 16;
  const int64_t gpu_blocks = n * (ctx / block) + 1;
  Batch batch(n, 1, ctx, block, gpu_blocks);
  const attn_kv_cache_spec_t spec = spec_for(block);
  attn_builder_t* db = make_builder("FLEX_ATTENTION", spec, config_for(n, ctx, true, gpu_blocks));
  attn_builder_t* hb = make_builder("FLEX_ATTENTION", spec, config_for(n, ctx, false, gpu_blocks));
  attn_metadata_t* dm = nullptr;
  attn_metadata_t* hm = nullptr;
  KernelTime k;
  k.name = "FLEX_ATTENTION attn_build 256 x 4k (2 kernels)";
  k.us = device_us_per_call(
      [&] {
        ok(attn_build(db, 0, &batch.device, 0, &dm, reinterpret_cast<attn_stream_t>(s)), "FLEX_ATTENTION");
      },
      s, 10, g_quick ? 2 : 5);
  // Compulsory bytes: the inverse block table written once (n x num_gpu_blocks int64), the
  // table read, doc ids / offsets / block counts, the block mask (groups x 16 tokens x pages).
  const double groups = static_cast<double>((n + 15) / 16);
  k.bytes = static_cast<double>(n) * gpu_blocks * 8 + static_cast<double>(n) * batch.width * 4 +
            static_cast<double>(n) * 4 * 4 + groups * 16 * batch.width * 4 * 2;
  k.gbs = k.bytes / (k.us * 1e-6) / 1e9;
  k.of_peak = k.gbs / dev.peak_gbs;
  k.of_d2d = k.gbs / dev.d2d_gbs;
  ok(attn_build(hb, 0, &batch.host, 0, &hm, nullptr), "FLEX_ATTENTION (host)");
  CK(cudaStreamSynchronize(s));
  bool good = true;
  for (const char* f : {"physical_to_logical", "doc_ids", "decode_offset", "num_blocks_per_seq",
                        "kv_num_blocks", "kv_indices"})
    good = good && field_bytes(hm, f) == field_bytes(dm, f);
  k.check = good ? "ok (equal to the host build)" : "FAILED (differs from the host build)";
  if (!good) ++g_failed_checks;
  attn_builder_destroy(db);
  attn_builder_destroy(hb);
  return k;
}

// ---- 4. graph replay vs eager builds ----------------------------------------------------------------

struct GraphVsEager {
  std::string name;
  size_t kernels = 0;
  double eager_us = 0, graph_us = 0, ratio = 0;
  std::string check;
};

GraphVsEager graph_vs_eager(const char* name, const char* backend, int variant, int32_t capability,
                            int32_t dcp, cudaStream_t s) {
  const int64_t n = 256;
  const int32_t ctx = 4096, block = 16;
  const int64_t gpu_blocks = n * (ctx / block) + 1;
  Batch batch(n, 1, ctx, block, gpu_blocks);
  const attn_kv_cache_spec_t spec = spec_for(block);
  attn_builder_config_t cfg = config_for(n, ctx, true, gpu_blocks);
  cfg.device_capability = capability;
  cfg.decode_context_parallel_size = dcp;
  attn_builder_t* db = make_builder(backend, spec, cfg);
  attn_metadata_t* dm = nullptr;
  const auto build = [&] {
    const attn_stream_t st = reinterpret_cast<attn_stream_t>(s);
    ok(variant == 0 ? attn_build_for_cudagraph_capture(db, &batch.device, &dm, st)
                    : attn_build(db, 0, &batch.device, 0, &dm, st),
       backend);
  };
  GraphVsEager g;
  g.name = name;
  const int steps = g_quick ? 500 : 3000;
  build();
  CK(cudaStreamSynchronize(s));
  double t0 = now_s();
  for (int i = 0; i < steps; ++i) build();
  CK(cudaStreamSynchronize(s));
  g.eager_us = (now_s() - t0) / steps * 1e6;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  build();
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphGetNodes(graph, nullptr, &g.kernels));
  if (g.kernels > 0) {
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    t0 = now_s();
    for (int i = 0; i < steps; ++i) CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    g.graph_us = (now_s() - t0) / steps * 1e6;
    g.ratio = g.eager_us / g.graph_us;
    // The replay recomputes from the inputs' new contents: a reversed block table, replayed,
    // must give what an eager build of it gives.
    std::reverse(batch.bt.begin(), batch.bt.end());
    CK(cudaMemcpy(batch.d_bt, batch.bt.data(), batch.bt.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    std::vector<std::string> names;
    std::vector<std::vector<char>> replayed;
    for (size_t i = 0, nf = attn_metadata_field_count(dm); i < nf; ++i) {
      attn_field_t f = ATTN_FIELD_INIT;
      ok(attn_metadata_field(dm, i, &f), "attn_metadata_field");
      if (f.kind == ATTN_FIELD_TENSOR && f.tensor->ndim <= 2) {
        names.push_back(f.name);
        replayed.push_back(field_bytes(dm, f.name));
      }
    }
    build();
    CK(cudaStreamSynchronize(s));
    bool good = true;
    for (size_t i = 0; i < names.size(); ++i) good = good && field_bytes(dm, names[i].c_str()) == replayed[i];
    g.check = good ? "ok (replay = eager build, new block table)" : "FAILED (replay differs from an eager build)";
    if (!good) ++g_failed_checks;
    CK(cudaGraphExecDestroy(exec));
  } else {
    g.check = "no device work (the build only sets fields)";
  }
  CK(cudaGraphDestroy(graph));
  attn_builder_destroy(db);
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--quick") {
      g_quick = true;
    } else {
      std::fprintf(stderr, "usage: bench_device [--json FILE] [--quick]\n");
      return 2;
    }
  }
  int32_t count = 0;
  attn_error_t* err = attn_device_count(ATTN_DEVICE_CUDA, &count);
  if (err != nullptr || count == 0) {
    std::printf("SKIP: no CUDA device: %s\n", err != nullptr ? attn_error_message(err) : "none visible");
    attn_error_destroy(err);
    return 0;
  }
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  const DeviceInfo dev = device_info(s);
  std::printf("device: %s, sm_%d, %d SMs; memory bandwidth %.0f GB/s (clock x bus width), "
              "%.0f GB/s measured (device-to-device cudaMemcpy, read + write)\n\n",
              dev.name.c_str(), dev.cc, dev.sms, dev.peak_gbs, dev.d2d_gbs);

  const std::vector<HostCost> costs = host_costs(s);
  std::printf("host-side cost of one attn_build, 256 decodes x 4k context:\n");
  std::printf("  %-16s %-28s %14s %14s\n", "backend", "level (CUDA builder)", "CUDA builder", "host builder");
  for (const HostCost& h : costs)
    std::printf("  %-16s %-28s %11.2f us %11.2f us\n", h.backend.c_str(), h.level.c_str(), h.cuda_us, h.host_us);

  std::vector<KernelTime> kernels;
  kernels.push_back(paged_kv(1024, 131072, s, dev));
  kernels.push_back(paged_kv(1024, 32768, s, dev));
  kernels.push_back(paged_kv(256, 4096, s, dev));
  kernels.push_back(flex_build(s, dev));
  std::printf("\ndevice time (CUDA graph of repeated calls, CUDA events):\n");
  std::printf("  %-48s %10s %12s %9s %7s %7s  %s\n", "kernel", "us/call", "bytes", "GB/s", "peak", "d2d", "check");
  for (const KernelTime& k : kernels)
    std::printf("  %-48s %10.2f %12.0f %9.0f %6.0f%% %6.0f%%  %s\n", k.name.c_str(), k.us, k.bytes, k.gbs,
                100 * k.of_peak, 100 * k.of_d2d, k.check.c_str());

  std::vector<GraphVsEager> graphs;
  graphs.push_back(graph_vs_eager("FLASHINFER attn_build 256 x 4k", "FLASHINFER", 1, 90, 1, s));
  graphs.push_back(graph_vs_eager("FLEX_ATTENTION attn_build 256 x 4k", "FLEX_ATTENTION", 1, 90, 1, s));
  graphs.push_back(graph_vs_eager("TRITON_ATTN build_for_cudagraph_capture 256", "TRITON_ATTN", 0, 90, 1, s));
  graphs.push_back(graph_vs_eager("FLASH_ATTN (FA3, DCP 2) attn_build 256 x 4k", "FLASH_ATTN", 1, 90, 2, s));
  graphs.push_back(graph_vs_eager("FLASH_ATTN (FA3) attn_build 256 x 4k", "FLASH_ATTN", 1, 90, 1, s));
  std::printf("\ngraph replay vs eager build, per step (wall clock over a stream, drained at the end):\n");
  std::printf("  %-46s %7s %11s %11s %8s  %s\n", "build", "nodes", "eager", "replay", "ratio", "check");
  for (const GraphVsEager& g : graphs) {
    if (g.kernels > 0)
      std::printf("  %-46s %7zu %8.2f us %8.2f us %7.2fx  %s\n", g.name.c_str(), g.kernels, g.eager_us,
                  g.graph_us, g.ratio, g.check.c_str());
    else
      std::printf("  %-46s %7zu %8.2f us %11s %8s  %s\n", g.name.c_str(), g.kernels, g.eager_us, "-", "-",
                  g.check.c_str());
  }

  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (f == nullptr) die("cannot write " + json_path);
    std::fprintf(f, "{\n  \"device\": {\"name\": \"%s\", \"compute_capability\": %d, \"sms\": %d, "
                    "\"bandwidth_gbs_clock_x_bus\": %.1f, \"bandwidth_gbs_d2d_measured\": %.1f},\n",
                 json_escape(dev.name).c_str(), dev.cc, dev.sms, dev.peak_gbs, dev.d2d_gbs);
    std::fprintf(f, "  \"host_build_us\": [\n");
    for (size_t i = 0; i < costs.size(); ++i)
      std::fprintf(f, "    {\"backend\": \"%s\", \"level\": \"%s\", \"batch\": \"256 decodes x 4k\", "
                      "\"cuda_builder_us\": %.3f, \"host_builder_us\": %.3f}%s\n",
                   costs[i].backend.c_str(), costs[i].level.c_str(), costs[i].cuda_us, costs[i].host_us,
                   i + 1 < costs.size() ? "," : "");
    std::fprintf(f, "  ],\n  \"device_kernels\": [\n");
    for (size_t i = 0; i < kernels.size(); ++i)
      std::fprintf(f, "    {\"name\": \"%s\", \"us_per_call\": %.3f, \"bytes\": %.0f, \"gbs\": %.1f, "
                      "\"fraction_of_clock_x_bus\": %.3f, \"fraction_of_d2d\": %.3f, \"check\": \"%s\"}%s\n",
                   json_escape(kernels[i].name).c_str(), kernels[i].us, kernels[i].bytes, kernels[i].gbs,
                   kernels[i].of_peak, kernels[i].of_d2d, json_escape(kernels[i].check).c_str(),
                   i + 1 < kernels.size() ? "," : "");
    std::fprintf(f, "  ],\n  \"graph_vs_eager\": [\n");
    for (size_t i = 0; i < graphs.size(); ++i)
      std::fprintf(f, "    {\"build\": \"%s\", \"kernels\": %zu, \"eager_us\": %.3f, \"replay_us\": %.3f, "
                      "\"ratio\": %.3f, \"check\": \"%s\"}%s\n",
                   json_escape(graphs[i].name).c_str(), graphs[i].kernels, graphs[i].eager_us,
                   graphs[i].graph_us, graphs[i].ratio, json_escape(graphs[i].check).c_str(),
                   i + 1 < graphs.size() ? "," : "");
    std::fprintf(f, "  ],\n  \"failed_checks\": %d\n}\n", g_failed_checks);
    std::fclose(f);
  }
  CK(cudaStreamDestroy(s));
  if (g_failed_checks > 0) {
    std::printf("\n%d output check(s) FAILED\n", g_failed_checks);
    return 1;
  }
  return 0;
}
