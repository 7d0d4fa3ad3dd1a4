// libsimcuda: the simulated device (ATTN_DEVICE_SIM=ON). A CUDA runtime in host memory that keeps
// the rules a GPU enforces and a host build cannot see:
//  - device memory is out of host reach: each allocation is its own mapping, PROT_NONE (and
//    fenced by PROT_NONE guard pages) except while the device runs a kernel, a copy or a memset,
//    so a host read or write of a device pointer faults at once (SIGSEGV), and a kernel that runs
//    past its allocation faults too;
//  - work is queued in stream order and runs only when something waits for it (a stream, event
//    or device synchronization, a synchronous copy, a graph replay's sync): a host array changed
//    before its queued copy ran is seen as changed, as on a GPU (ATTN_SIM_EAGER=1 runs each item
//    when queued instead);
//  - a stream in capture records kernels, copies and memsets into a graph instead of running
//    them; replay runs the recorded items with the parameters they were captured with (a host
//    value baked into a capture stays baked); inside a global or thread-local capture the calls
//    CUDA calls "potentially unsafe" fail and invalidate the capture;
//  - copies are checked: a device side must lie inside one live allocation, a host side outside
//    every allocation.
// One device (ordinal 0, compute capability 9.0, "libattn simulated device"). One global lock:
// the simulation is thread-safe and serial. Nothing is timed truthfully: events read the host
// clock when their mark runs.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "simcuda_launch.h"

struct CUstream_st {
  unsigned flags = 0;
  bool capturing = false;
  bool invalidated = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
  cudaGraph_t graph = nullptr;
};

namespace {

struct Item {  // one queued or recorded piece of device work
  cudaGraphNodeType type = cudaGraphNodeTypeKernel;
  std::string name;
  std::function<void()> run;
  const void* touches[2] = {nullptr, nullptr};  // a copy's or memset's memory (not a kernel's)
  size_t bytes = 0;
};

}  // namespace

struct CUgraph_st {
  std::vector<std::shared_ptr<Item>> items;
};
struct CUgraphExec_st {
  std::vector<std::shared_ptr<Item>> items;
};
struct CUgraphNode_st {};  // a node handle is the address of its Item (cast)
struct CUevent_st {
  bool recorded = false;
  bool reached = false;
  std::chrono::steady_clock::time_point when;
};

namespace {

struct Allocation {
  char* map = nullptr;  // the whole mapping: guard page, data pages, guard page
  size_t map_bytes = 0;
  char* data_pages = nullptr;
  size_t data_page_bytes = 0;
  size_t bytes = 0;  // what the caller asked for
};

struct State {
  std::recursive_mutex mu;
  std::map<uintptr_t, Allocation> allocations;  // by user address
  std::map<uintptr_t, size_t> pinned;            // page-locked host ranges, by address
  std::deque<std::pair<cudaStream_t, std::shared_ptr<Item>>> queue;
  CUstream_st legacy_stream;
  int device_access = 0;  // > 0 while the device runs something
  bool eager = false;
  bool no_device = false;
  int capability = 90;  // major * 10 + minor (ATTN_SIM_CAPABILITY; 0: the device reports 0.0)
  SimcudaCounters counters;
};

State& state() {
  // Never destroyed: builders freed by static destructors of a test still find it.
  static State* s = [] {
    auto* st = new State;
    const char* e = std::getenv("ATTN_SIM_EAGER");
    st->eager = e != nullptr && std::strcmp(e, "1") == 0;
    const char* n = std::getenv("ATTN_SIM_NO_DEVICE");
    st->no_device = n != nullptr && std::strcmp(n, "1") == 0;
    // The compute capability the device reports, as major * 10 + minor (default 90). 0 makes
    // libattn's "the device's own capability" (config device_capability 0) resolve to 0, as on
    // the host: the conformance lane's --device-sim sets it so that both sides see one platform.
    if (const char* c = std::getenv("ATTN_SIM_CAPABILITY")) {
      char* end = nullptr;
      const long v = std::strtol(c, &end, 10);
      if (end != c && *end == '\0' && v >= 0 && v < 1000) st->capability = static_cast<int>(v);
    }
    return st;
  }();
  return *s;
}

thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t note(cudaError_t st) {
  if (st != cudaSuccess) t_last_error = st;
  return st;
}

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

void protect_all(State& s, int prot) {
  for (auto& [addr, a] : s.allocations) {
    (void)addr;
    if (mprotect(a.data_pages, a.data_page_bytes, prot) != 0) {
      std::perror("simcuda: mprotect");
      std::abort();
    }
  }
}

// Device memory is readable and writable while the device runs something: every allocation
// for a kernel (which may touch any), only the pages a copy or memset touches for those (cheap:
// an allocation may be a builder's whole persistent block).
class DeviceAccess {
 public:
  explicit DeviceAccess(State& s) : s_(s), all_(true) {
    if (s_.device_access++ == 0) protect_all(s_, PROT_READ | PROT_WRITE);
  }
  DeviceAccess(State& s, const void* a, const void* b, size_t bytes) : s_(s) {
    if (s_.device_access > 0 || bytes == 0) return;  // open already, or nothing to open
    ranges_[0] = page_range(a, bytes);
    ranges_[1] = page_range(b, bytes);
    for (auto& r : ranges_)
      if (r.second > 0) mprotect(r.first, r.second, PROT_READ | PROT_WRITE);
  }
  ~DeviceAccess() {
    if (all_) {
      if (--s_.device_access == 0) protect_all(s_, PROT_NONE);
      return;
    }
    for (auto& r : ranges_)
      if (r.second > 0) mprotect(r.first, r.second, PROT_NONE);
  }
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;

 private:
  // The whole pages of [p, p + bytes) when it lies in a device allocation (else none: host
  // memory stays as it is).
  std::pair<char*, size_t> page_range(const void* p, size_t bytes);
  State& s_;
  bool all_ = false;
  std::pair<char*, size_t> ranges_[2] = {{nullptr, 0}, {nullptr, 0}};
};

CUstream_st* stream_of(State& s, cudaStream_t stream) {
  return stream == nullptr ? &s.legacy_stream : stream;
}

// The allocation holding [p, p + bytes), or null.
const Allocation* find_allocation(State& s, const void* p, size_t bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = s.allocations.upper_bound(addr);
  if (it == s.allocations.begin()) return nullptr;
  --it;
  const uintptr_t base = it->first;
  const size_t size = it->second.bytes;
  if (addr < base || addr - base > size || bytes > size - (addr - base)) return nullptr;
  return &it->second;
}

std::pair<char*, size_t> DeviceAccess::page_range(const void* p, size_t bytes) {
  if (p == nullptr || find_allocation(s_, p, bytes) == nullptr) return {nullptr, 0};
  const auto page = static_cast<uintptr_t>(page_size());
  const auto lo = reinterpret_cast<uintptr_t>(p) / page * page;
  const auto hi = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page;
  return {reinterpret_cast<char*>(lo), hi - lo};
}

bool touches_device(State& s, const void* p, size_t bytes) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t hi = lo + (bytes == 0 ? 1 : bytes);
  for (auto& [addr, a] : s.allocations) {
    const auto mlo = reinterpret_cast<uintptr_t>(a.map);
    if (lo < mlo + a.map_bytes && mlo < hi) return true;
    (void)addr;
  }
  return false;
}

// Which captures an unsafe call breaks: global-mode captures on any thread, thread-local ones
// of this thread (CUDA's cudaStreamCaptureModeGlobal / ThreadLocal rules).
std::vector<CUstream_st*> captures_hit(State& s, std::vector<CUstream_st*> streams) {
  std::vector<CUstream_st*> hit;
  (void)s;
  for (CUstream_st* st : streams)
    if (st->capturing &&
        (st->mode == cudaStreamCaptureModeGlobal ||
         (st->mode == cudaStreamCaptureModeThreadLocal &&
          st->capture_thread == std::this_thread::get_id())))
      hit.push_back(st);
  return hit;
}

std::vector<CUstream_st*>& live_streams() {
  static auto* v = new std::vector<CUstream_st*>;
  return *v;
}

// An unsafe call while a capture is open: the capture is invalidated and the call fails.
bool unsafe_during_capture(State& s) {
  std::vector<CUstream_st*> all = live_streams();
  all.push_back(&s.legacy_stream);
  const auto hit = captures_hit(s, all);
  for (CUstream_st* st : hit) st->invalidated = true;
  return !hit.empty();
}

void run_item(State& s, Item& item) {
  if (item.type == cudaGraphNodeTypeKernel) {
    ++s.counters.launches;
    DeviceAccess access(s);  // a kernel may touch any allocation
    item.run();
  } else {
    DeviceAccess access(s, item.touches[0], item.touches[1], item.bytes);
    item.run();
  }
}

// Runs everything queued, in order (device memory opened once for all when a kernel is queued).
void drain(State& s) {
  if (s.queue.empty()) return;
  bool kernels = false;
  for (const auto& q : s.queue) kernels = kernels || q.second->type == cudaGraphNodeTypeKernel;
  std::unique_ptr<DeviceAccess> all;
  if (kernels) all = std::make_unique<DeviceAccess>(s);
  while (!s.queue.empty()) {
    auto item = std::move(s.queue.front().second);
    s.queue.pop_front();
    run_item(s, *item);
  }
}

cudaError_t enqueue(State& s, cudaStream_t stream, std::shared_ptr<Item> item) {
  CUstream_st* st = stream_of(s, stream);
  if (st->capturing) {
    if (st->invalidated) return note(cudaErrorStreamCaptureInvalidated);
    st->graph->items.push_back(std::move(item));
    return cudaSuccess;
  }
  s.queue.emplace_back(stream, std::move(item));
  if (s.eager) drain(s);
  return cudaSuccess;
}

// Checks a copy's pointers against its kind; returns the kind with Default resolved.
cudaError_t check_copy(State& s, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                       cudaMemcpyKind* resolved) {
  if (bytes == 0) {
    *resolved = kind;
    return cudaSuccess;
  }
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  const bool dst_dev = find_allocation(s, dst, bytes) != nullptr;
  const bool src_dev = find_allocation(s, src, bytes) != nullptr;
  if (kind == cudaMemcpyDefault)
    kind = dst_dev ? (src_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                   : (src_dev ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  const bool want_dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool want_src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (want_dst_dev ? !dst_dev : touches_device(s, dst, bytes)) return cudaErrorInvalidValue;
  if (want_src_dev ? !src_dev : touches_device(s, src, bytes)) return cudaErrorInvalidValue;
  *resolved = kind;
  return cudaSuccess;
}

bool is_pinned(State& s, const void* p, size_t bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = s.pinned.upper_bound(addr);
  if (it == s.pinned.begin()) return false;
  --it;
  return addr >= it->first && addr - it->first <= it->second && bytes <= it->second - (addr - it->first);
}

std::shared_ptr<Item> copy_item(void* dst, const void* src, size_t bytes) {
  auto item = std::make_shared<Item>();
  item->type = cudaGraphNodeTypeMemcpy;
  item->name = "memcpy";
  item->touches[0] = dst;
  item->touches[1] = src;
  item->bytes = bytes;
  item->run = [dst, src, bytes] {
    if (bytes > 0) std::memmove(dst, src, bytes);
  };
  return item;
}

std::shared_ptr<Item> memset_item(void* ptr, int value, size_t bytes) {
  auto item = std::make_shared<Item>();
  item->type = cudaGraphNodeTypeMemset;
  item->name = "memset";
  item->touches[0] = ptr;
  item->bytes = bytes;
  item->run = [ptr, value, bytes] {
    if (bytes > 0) std::memset(ptr, value, bytes);
  };
  return item;
}

}  // namespace

extern "C" {

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (simulated device: a copy's pointer is not where its kind says, or a null pointer)";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (simulated device disabled by ATTN_SIM_NO_DEVICE=1)";
    case cudaErrorInvalidDevice: return "invalid device ordinal (the simulated device is ordinal 0)";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    default: return cudaGetErrorName(e);
  }
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return note(cudaErrorInvalidValue);
  if (state().no_device) {
    *count = 0;
    return note(cudaErrorNoDevice);
  }
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return note(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 && !state().no_device ? cudaSuccess : note(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr) return note(cudaErrorInvalidValue);
  if (device != 0 || state().no_device) return note(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = state().capability / 10; break;
    case cudaDevAttrComputeCapabilityMinor: *value = state().capability % 10; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrMemoryClockRate: *value = 0; break;  // nothing is timed: no bandwidth
    case cudaDevAttrGlobalMemoryBusWidth: *value = 0; break;
    default: return note(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return note(cudaErrorInvalidValue);
  if (device != 0 || state().no_device) return note(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "libattn simulated device (SM %d.%d)",
                state().capability / 10, state().capability % 10);
  prop->totalGlobalMem = size_t{1} << 36;
  prop->major = state().capability / 10;
  prop->minor = state().capability % 10;
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (ptr == nullptr) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (s.no_device) return note(cudaErrorNoDevice);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  const size_t page = page_size();
  if (bytes > (size_t{1} << 40)) return note(cudaErrorMemoryAllocation);
  const size_t data = (bytes + page - 1) / page * page + (bytes == 0 ? page : 0);
  Allocation a;
  a.map_bytes = data + 2 * page;
  void* m = mmap(nullptr, a.map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return note(cudaErrorMemoryAllocation);
  a.map = static_cast<char*>(m);
  a.data_pages = a.map + page;
  a.data_page_bytes = data;
  a.bytes = bytes;
  // The data ends where the data pages end (256-byte aligned), so a kernel that runs past it
  // reaches the guard page at once.
  const size_t rounded = (bytes + 255) / 256 * 256;
  char* user = a.data_pages + data - rounded;
  if (s.device_access > 0 && mprotect(a.data_pages, data, PROT_READ | PROT_WRITE) != 0)
    return note(cudaErrorMemoryAllocation);
  s.allocations.emplace(reinterpret_cast<uintptr_t>(user), a);
  ++s.counters.live_allocations;
  *ptr = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);  // cudaFree synchronizes the device
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.allocations.end()) return note(cudaErrorInvalidDevicePointer);
  munmap(it->second.map, it->second.map_bytes);
  s.allocations.erase(it);
  --s.counters.live_allocations;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  cudaMemcpyKind k;
  if (const cudaError_t st = check_copy(s, dst, src, bytes, kind, &k); st != cudaSuccess)
    return note(st);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);  // a synchronous copy waits for the work queued before it
  if (bytes == 0) return cudaSuccess;
  DeviceAccess access(s, dst, src, bytes);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  cudaMemcpyKind k;
  if (const cudaError_t st = check_copy(s, dst, src, bytes, kind, &k); st != cudaSuccess)
    return note(st);
  CUstream_st* st = stream_of(s, stream);
  const void* host = k == cudaMemcpyHostToDevice ? src : (k == cudaMemcpyDeviceToHost ? dst : nullptr);
  if (st->capturing && host != nullptr && bytes > 0 && !is_pinned(s, host, bytes)) {
    st->invalidated = true;  // CUDA cannot capture a copy from or to pageable host memory
    return note(cudaErrorStreamCaptureUnsupported);
  }
  return enqueue(s, stream, copy_item(dst, src, bytes));
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (bytes > 0 && find_allocation(s, ptr, bytes) == nullptr) return note(cudaErrorInvalidValue);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);
  if (bytes == 0) return cudaSuccess;
  DeviceAccess access(s, ptr, nullptr, bytes);
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (bytes > 0 && find_allocation(s, ptr, bytes) == nullptr) return note(cudaErrorInvalidValue);
  return enqueue(s, stream, memset_item(ptr, value, bytes));
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int flags) {
  if (ptr == nullptr || flags != 0) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (p == nullptr) return note(cudaErrorMemoryAllocation);
  s.pinned[reinterpret_cast<uintptr_t>(p)] = bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) { return cudaHostAlloc(ptr, bytes, 0); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);
  auto it = s.pinned.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.pinned.end()) return note(cudaErrorInvalidValue);
  s.pinned.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int flags) {
  if (ptr == nullptr || bytes == 0 || flags != 0) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (touches_device(s, ptr, bytes)) return note(cudaErrorInvalidValue);
  s.pinned[reinterpret_cast<uintptr_t>(ptr)] = bytes;
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void* ptr) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  drain(s);
  return s.pinned.erase(reinterpret_cast<uintptr_t>(ptr)) ? cudaSuccess : note(cudaErrorInvalidValue);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  auto* st = new CUstream_st;
  st->flags = flags;
  live_streams().push_back(st);
  *stream = st;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr) return note(cudaErrorInvalidResourceHandle);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  auto& v = live_streams();
  for (auto it = v.begin(); it != v.end(); ++it)
    if (*it == stream) {
      if (stream->capturing) return note(cudaErrorStreamCaptureUnsupported);
      drain(s);
      v.erase(it);
      delete stream;
      return cudaSuccess;
    }
  return note(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  CUstream_st* st = stream_of(s, stream);
  if (st->capturing) {
    st->invalidated = true;
    return note(cudaErrorStreamCaptureUnsupported);
  }
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (stream_of(s, stream)->capturing) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (event == nullptr) return note(cudaErrorInvalidValue);
  *event = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return note(cudaErrorInvalidResourceHandle);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  drain(s);  // a queued mark must not outlive its event
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return note(cudaErrorInvalidResourceHandle);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (stream_of(s, stream)->capturing) return note(cudaErrorNotSupported);
  event->recorded = true;
  event->reached = false;
  auto item = std::make_shared<Item>();
  item->type = cudaGraphNodeTypeEmpty;
  item->name = "event";
  item->run = [event] {
    event->reached = true;
    event->when = std::chrono::steady_clock::now();
  };
  return enqueue(s, stream, std::move(item));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event == nullptr) return note(cudaErrorInvalidResourceHandle);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (unsafe_during_capture(s)) return note(cudaErrorStreamCaptureUnsupported);
  drain(s);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return note(cudaErrorInvalidValue);
  if (!start->reached || !end->reached) return note(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (stream == nullptr) return note(cudaErrorStreamCaptureUnsupported);  // legacy stream
  if (stream->capturing) return note(cudaErrorStreamCaptureUnsupported);
  stream->capturing = true;
  stream->invalidated = false;
  stream->mode = mode;
  stream->capture_thread = std::this_thread::get_id();
  stream->graph = new CUgraph_st;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (graph == nullptr) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (stream == nullptr || !stream->capturing) return note(cudaErrorStreamCaptureUnmatched);
  if (stream->mode != cudaStreamCaptureModeRelaxed &&
      stream->capture_thread != std::this_thread::get_id())
    return note(cudaErrorStreamCaptureWrongThread);
  stream->capturing = false;
  cudaGraph_t g = stream->graph;
  stream->graph = nullptr;
  if (stream->invalidated) {
    delete g;
    *graph = nullptr;
    return note(cudaErrorStreamCaptureInvalidated);
  }
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  if (status == nullptr) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  CUstream_st* st = stream_of(s, stream);
  *status = !st->capturing ? cudaStreamCaptureStatusNone
                           : (st->invalidated ? cudaStreamCaptureStatusInvalidated
                                              : cudaStreamCaptureStatusActive);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (graph == nullptr || count == nullptr) return note(cudaErrorInvalidValue);
  if (nodes != nullptr)
    for (size_t i = 0; i < *count && i < graph->items.size(); ++i)
      nodes[i] = reinterpret_cast<cudaGraphNode_t>(graph->items[i].get());
  *count = graph->items.size();
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
  if (node == nullptr || type == nullptr) return note(cudaErrorInvalidValue);
  *type = reinterpret_cast<Item*>(node)->type;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  if (exec == nullptr || graph == nullptr || flags != 0) return note(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->items};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return note(cudaErrorInvalidValue);
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (stream_of(s, stream)->capturing) return note(cudaErrorNotSupported);
  ++s.counters.graph_launches;
  for (const auto& item : exec->items)
    if (const cudaError_t st = enqueue(s, stream, item); st != cudaSuccess) return st;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  drain(s);  // queued replays hold the items, not the exec; nothing else to wait for
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

}  // extern "C"

cudaError_t simcudaLaunch(cudaStream_t stream, const char* name, std::function<void()> body) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (s.no_device) return note(cudaErrorNoDevice);
  auto item = std::make_shared<Item>();
  item->type = cudaGraphNodeTypeKernel;
  item->name = name != nullptr ? name : "kernel";
  item->run = std::move(body);
  return note(enqueue(s, stream, std::move(item)));
}

SimcudaCounters simcudaCounters() {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  return s.counters;
}
