#include "core/persistent_buffers.h"

#include <cstring>
#include <utility>

#include "core/error.h"
#include "ops/device_runtime.h"

namespace attn {
namespace {
size_t align_up(size_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }
}  // namespace

size_t workspace_bytes(const std::vector<BufferRequest>& requests) {
  size_t total = 0;
  for (const BufferRequest& r : requests) total += align_up(r.bytes);
  return total;
}

PersistentBuffers::PersistentBuffers(const char* owner, Device device,
                                     const std::vector<BufferRequest>& requests,
                                     std::shared_ptr<Allocator> allocator, void* workspace,
                                     size_t workspace_size)
    : device_(device) {
  bytes_ = workspace_bytes(requests);
  pointers_.assign(requests.size(), nullptr);
  if (bytes_ == 0) return;
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
    allocator_ = std::move(allocator);
  }
  // Zero everything once: vLLM creates these buffers with torch.zeros, and FA3's scheduler
  // metadata must start zeroed.
  try {
    if (device.is_cuda())
      ops::cuda_memset_zero(device.id, block_, bytes_);
    else
      std::memset(block_, 0, bytes_);
  } catch (...) {
    release();
    throw;
  }
  size_t offset = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    pointers_[i] = requests[i].bytes == 0 ? nullptr : static_cast<char*>(block_) + offset;
    offset += align_up(requests[i].bytes);
  }
}

void PersistentBuffers::release() noexcept {
  if (allocator_ && block_ != nullptr) allocator_->deallocate(block_, bytes_, device_);
  allocator_.reset();
  block_ = nullptr;
}

PersistentBuffers::~PersistentBuffers() { release(); }

PersistentBuffers::PersistentBuffers(PersistentBuffers&& o) noexcept
    : device_(o.device_),
      allocator_(std::move(o.allocator_)),
      block_(std::exchange(o.block_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      pointers_(std::move(o.pointers_)) {}

PersistentBuffers& PersistentBuffers::operator=(PersistentBuffers&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    allocator_ = std::move(o.allocator_);
    block_ = std::exchange(o.block_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    pointers_ = std::move(o.pointers_);
  }
  return *this;
}

}  // namespace attn
