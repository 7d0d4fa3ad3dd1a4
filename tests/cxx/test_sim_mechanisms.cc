// The simulated device's three mechanisms, each shown catching a planted bug of its kind and
// passing the correct code beside it (docs/reliability.md names this test for each):
//  1. host_read: a host read of a device buffer (a backend that dereferences a device pointer
//     instead of its host mirror) faults at once: SIGSEGV, caught here with a handler;
//  2. sync_in_capture: a synchronous copy inside a capture (an op that reads a device value back
//     while building) fails the build with cudaErrorStreamCaptureUnsupported and invalidates the
//     capture, as CUDA does;
//  3. baked_scalar: a host scalar baked into a captured launch (an op that passes a host-mirror
//     value as a kernel parameter instead of reading the device tensor) gives stale results on
//     replay; the replay-versus-fresh-host-build comparison that tests/gpu/test_gpu_capture.c
//     runs for every backend finds the difference, and finds none for the correct op.
// Built in ATTN_DEVICE_SIM builds only; links the library's objects (src/ops) and libsimcuda.
#include <cuda_runtime_api.h>

#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "ops/batch_ops.h"
#include "ops/device_runtime.h"
#include "ops/launch.h"

namespace {

int failures = 0;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      ++failures;                                                 \
      std::fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                          \
      std::fprintf(stderr, "\n");                                 \
    }                                                             \
  } while (0)

using namespace attn;

sigjmp_buf g_jump;
void on_segv(int) { siglongjmp(g_jump, 1); }

// Runs f; true when it faulted (SIGSEGV or SIGBUS).
template <class F>
bool faults(F f) {
  struct sigaction sa {}, old_segv{}, old_bus{};
  sa.sa_handler = on_segv;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  bool faulted = false;
  if (sigsetjmp(g_jump, 1) == 0)
    f();
  else
    faulted = true;
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGBUS, &old_bus, nullptr);
  return faulted;
}

int32_t* device_copy(const std::vector<int32_t>& host) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, host.size() * 4) == cudaSuccess, "cudaMalloc");
  CHECK(cudaMemcpy(p, host.data(), host.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess, "copy");
  return static_cast<int32_t*>(p);
}

std::vector<int32_t> read_back(const int32_t* d, size_t n) {
  std::vector<int32_t> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
  return h;
}

// ---- 1. host_read ---------------------------------------------------------------------------

// A "backend" that needs the largest sequence length: the bug reads the device tensor on the host.
int32_t max_len_buggy(const int32_t* seq_lens_device, int64_t n) {
  int32_t m = 0;
  for (int64_t i = 0; i < n; ++i) m = seq_lens_device[i] > m ? seq_lens_device[i] : m;
  return m;
}
int32_t max_len_correct(const int32_t* seq_lens_mirror, int64_t n) {
  return max_len_buggy(seq_lens_mirror, n);  // the same loop over the host mirror
}

void host_read() {
  const std::vector<int32_t> lens{5, 9, 3};
  int32_t* d = device_copy(lens);
  int32_t got = -1;
  const bool correct_faulted = faults([&] { got = max_len_correct(lens.data(), 3); });
  CHECK(!correct_faulted && got == 9, "the correct backend reads its mirror: %d", got);
  const bool buggy_faulted = faults([&] { got = max_len_buggy(d, 3); });
  CHECK(buggy_faulted, "a host read of a device buffer did not fault");
  std::printf("host_read: planted host read of a device buffer faulted: %s; the correct code "
              "passed: %s\n", buggy_faulted ? "yes" : "no", correct_faulted ? "no" : "yes");
  cudaFree(d);
}

// ---- the ops of 2 and 3: the number of tokens of a batch, written into out[0] -----------------

template <class P>
void count_tokens_on(P& p, const int32_t* qsl, int64_t num_reqs, int32_t* out) {
  p.single([=] ATTN_HD { out[0] = qsl[num_reqs]; });  // reads the device tensor when it runs
}
void count_tokens(const ops::Exec& exec, const int32_t* qsl, int64_t num_reqs, int32_t* out) {
  ATTN_LAUNCH(exec, count_tokens_on, qsl, num_reqs, out);
}

template <class P>
void write_value_on(P& p, int32_t value, int32_t* out) {
  p.single([=] ATTN_HD { out[0] = value; });  // the value is a kernel parameter
}
// The bug: the host mirror's value passed as a parameter (baked into a capture).
void count_tokens_baked(const ops::Exec& exec, const int32_t* qsl_mirror, int64_t num_reqs,
                        int32_t* out) {
  ATTN_LAUNCH(exec, write_value_on, qsl_mirror[num_reqs], out);
}
// The other bug: the device value read back synchronously while building.
void count_tokens_sync(const ops::Exec& exec, const int32_t* qsl, int64_t num_reqs, int32_t* out) {
  int32_t v = 0;
  ops::cuda_copy_to_host(exec.device_id, &v, qsl + num_reqs, sizeof v);
  ATTN_LAUNCH(exec, write_value_on, v, out);
}

// ---- 2. sync_in_capture --------------------------------------------------------------------------

void sync_in_capture() {
  std::vector<int32_t> qsl{0, 4, 9};
  int32_t* d_qsl = device_copy(qsl);
  int32_t* d_out = device_copy({0});
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
  const ops::Exec exec{true, 0, stream};
  const char* outcome[2] = {"", ""};
  for (int buggy = 0; buggy < 2; ++buggy) {
    cudaGraph_t graph = nullptr;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin");
    bool threw = false;
    try {
      (buggy ? count_tokens_sync : count_tokens)(exec, d_qsl, 2, d_out);
    } catch (const Error& e) {
      threw = std::strstr(e.what(), "cudaErrorStreamCaptureUnsupported") != nullptr;
    }
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (buggy) {
      CHECK(threw, "a synchronous copy inside a capture did not fail the build");
      CHECK(end == cudaErrorStreamCaptureInvalidated, "the capture was not invalidated: %s",
            cudaGetErrorName(end));
      outcome[1] = threw && end == cudaErrorStreamCaptureInvalidated ? "refused" : "NOT refused";
    } else {
      CHECK(!threw && end == cudaSuccess, "the correct op failed inside the capture");
      outcome[0] = !threw && end == cudaSuccess ? "captured" : "NOT captured";
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  std::printf("sync_in_capture: the correct op %s, the planted synchronous copy %s\n", outcome[0],
              outcome[1]);
  cudaStreamDestroy(stream);
  cudaFree(d_qsl);
  cudaFree(d_out);
}

// ---- 3. baked_scalar -------------------------------------------------------------------------------

// Captures op on a batch, replays it on 100 batches of the same size with new contents (the
// device tensor and its mirror rewritten as a runtime does), compares each with the host
// computation of the same batch; returns the number of replays that differ.
template <class Op>
int replay_differences(Op op) {
  std::vector<int32_t> qsl{0, 3, 8}, mirror = qsl;
  int32_t* d_qsl = device_copy(qsl);
  int32_t* d_out = device_copy({0});
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
  const ops::Exec exec{true, 0, stream};
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t instance = nullptr;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin");
  op(exec, d_qsl, mirror.data(), d_out);
  CHECK(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "end");
  CHECK(cudaGraphInstantiate(&instance, graph, 0) == cudaSuccess, "instantiate");
  int differ = 0;
  for (int k = 1; k <= 100; ++k) {
    qsl = {0, k % 7 + 1, k % 7 + 1 + k % 13};  // same size, new contents
    mirror = qsl;
    CHECK(cudaMemcpyAsync(d_qsl, qsl.data(), 12, cudaMemcpyHostToDevice, stream) == cudaSuccess, "up");
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
    CHECK(cudaGraphLaunch(instance, stream) == cudaSuccess, "replay");
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
    int32_t host = 0;
    count_tokens(ops::Exec{}, mirror.data(), 2, &host);  // the fresh host build
    differ += read_back(d_out, 1)[0] != host;
  }
  cudaGraphExecDestroy(instance);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(d_qsl);
  cudaFree(d_out);
  return differ;
}

void baked_scalar() {
  const int correct = replay_differences([](const ops::Exec& e, const int32_t* d, const int32_t*, int32_t* out) {
    count_tokens(e, d, 2, out);
  });
  const int buggy = replay_differences([](const ops::Exec& e, const int32_t*, const int32_t* m, int32_t* out) {
    count_tokens_baked(e, m, 2, out);
  });
  CHECK(correct == 0, "the correct op differs on %d replays", correct);
  CHECK(buggy > 0, "the baked host scalar was not seen on any of 100 replays");
  std::printf("baked_scalar: replays differing from a fresh host build: correct op %d of 100, "
              "planted baked scalar %d of 100\n", correct, buggy);
}

}  // namespace

int main() {
  host_read();
  sync_in_capture();
  baked_scalar();
  if (failures) std::printf("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
