#include "core/persistent_buffers.h"

#include <cstring>
#include <utility>

#include "core/error.h"
#include "ops/device_runtime.h"

namespace attn {
namespace {
size_t align_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }
}  // namespace

size_t buffer_bytes(const char* what, std::initializer_list<int64_t> factors) {
  constexpr int64_t kMax = int64_t{1} << 56;
  int64_t total = 1;
  for (const int64_t f : factors) {
    if (f < 0) invalid("the size of ", what, " is negative");
    if (f != 0 && total > kMax / f)
      invalid("the config asks for a ", what, " buffer of more than 2^56 bytes");
    total *= f;
  }
  return static_cast<size_t>(total);
}

size_t workspace_bytes(const std::vector<BufferRequest>& requests, Device device) {
  size_t total = 0, all = 0;
  const BufferRequest* largest = nullptr;
  for (const BufferRequest& r : requests) {
    if (!r.host || !device.is_cuda()) total += align_up(r.bytes);
    all += align_up(r.bytes);  // each <= 2^56 (buffer_bytes), a few dozen: no wrap
    if (largest == nullptr || r.bytes > largest->bytes) largest = &r;
  }
  if (all > kMaxPersistentBytes)
    invalid("the config asks for ", all, " bytes of persistent buffers (the largest, ",
            largest->name, ", ", largest->bytes, " bytes), more than libattn's create-time limit "
            "of 2^40 bytes (docs/architecture.md, Limits)");
  return total;
}

PersistentBuffers::PersistentBuffers(const char* owner, Device device,
                                     const std::vector<BufferRequest>& requests,
                                     std::shared_ptr<Allocator> allocator, void* workspace,
                                     size_t workspace_size)
    : device_(device) {
  const bool split = device.is_cuda();  // host requests go to a block of their own
  bytes_ = workspace_bytes(requests, device);
  for (const BufferRequest& r : requests)
    if (split && r.host) host_bytes_ += align_up(r.bytes);
  pointers_.assign(requests.size(), nullptr);
  if (bytes_ > 0) {
    if (workspace != nullptr) {
      if (workspace_size < bytes_)
        invalid("config->workspace_size=", workspace_size, " is smaller than the ", bytes_,
                " bytes ", owner, " needs (attn_builder_workspace_size)");
      block_ = workspace;
    } else {
      block_ = allocator->allocate(bytes_, kBufferAlignment, device);
      if (block_ == nullptr)
        fail(Status::kOutOfMemory, "allocating ", bytes_, " bytes of persistent buffers for ",
             owner, " on ", device.to_string(), " failed");
      allocator_ = allocator;
    }
  }
  if (host_bytes_ > 0) {
    host_block_ = allocator->allocate(host_bytes_, kBufferAlignment, Device{});
    if (host_block_ == nullptr) {
      release();
      fail(Status::kOutOfMemory, "allocating ", host_bytes_, " bytes of host buffers for ", owner,
           " failed");
    }
    host_allocator_ = allocator;
  }
  // Zero everything once: vLLM creates these buffers with torch.zeros, and FA3's scheduler
  // metadata must start zeroed.
  try {
    if (bytes_ > 0) {
      if (device.is_cuda())
        ops::cuda_memset_zero(device.id, block_, bytes_);
      else
        std::memset(block_, 0, bytes_);
    }
    if (host_bytes_ > 0) std::memset(host_block_, 0, host_bytes_);
  } catch (...) {
    release();
    throw;
  }
  size_t offset = 0, host_offset = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& r = requests[i];
    if (split && r.host) {
      pointers_[i] = r.bytes == 0 ? nullptr : static_cast<char*>(host_block_) + host_offset;
      host_offset += align_up(r.bytes);
    } else {
      pointers_[i] = r.bytes == 0 ? nullptr : static_cast<char*>(block_) + offset;
      offset += align_up(r.bytes);
    }
  }
}

bool PersistentBuffers::contains(const void* p) const {
  const auto* c = static_cast<const char*>(p);
  const auto in = [c](const void* base, size_t n) {
    return base != nullptr && c >= static_cast<const char*>(base) &&
           c < static_cast<const char*>(base) + n;
  };
  return p != nullptr && (in(block_, bytes_) || in(host_block_, host_bytes_));
}

void PersistentBuffers::release() noexcept {
  if (allocator_ && block_ != nullptr) allocator_->deallocate(block_, bytes_, device_);
  if (host_allocator_ && host_block_ != nullptr)
    host_allocator_->deallocate(host_block_, host_bytes_, Device{});
  allocator_.reset();
  host_allocator_.reset();
  block_ = nullptr;
  host_block_ = nullptr;
}

PersistentBuffers::~PersistentBuffers() { release(); }

PersistentBuffers::PersistentBuffers(PersistentBuffers&& o) noexcept
    : device_(o.device_),
      allocator_(std::move(o.allocator_)),
      block_(std::exchange(o.block_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      host_allocator_(std::move(o.host_allocator_)),
      host_block_(std::exchange(o.host_block_, nullptr)),
      host_bytes_(std::exchange(o.host_bytes_, 0)),
      pointers_(std::move(o.pointers_)) {}

PersistentBuffers& PersistentBuffers::operator=(PersistentBuffers&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    allocator_ = std::move(o.allocator_);
    block_ = std::exchange(o.block_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    host_allocator_ = std::move(o.host_allocator_);
    host_block_ = std::exchange(o.host_block_, nullptr);
    host_bytes_ = std::exchange(o.host_bytes_, 0);
    pointers_ = std::move(o.pointers_);
  }
  return *this;
}

}  // namespace attn
