// A builder's persistent buffers: planned once from the config, placed in one block of memory
// on the builder's device (the caller's workspace, or one allocation), zeroed, and never
// reallocated, so every address a build returns is stable and graph-capturable. Buffers marked
// `host` (the *_cpu mirrors some backends return) live in host memory: in the same block on a
// host builder, in a second block allocated with the same allocator on a CUDA builder (never in
// the caller's workspace, which is device memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"

namespace attn {

struct BufferRequest {
  const char* name;  ///< For messages ("suffix_kv_lens").
  size_t bytes;
  bool host = false;  ///< Must be host memory whatever the builder's device.
};

/// The product of `factors` (a buffer's element count times its element size), checked:
/// Error(kInvalidArgument) naming `what` when it exceeds 2^56 bytes (the config asks for more
/// memory than any machine has, or the product would overflow).
size_t buffer_bytes(const char* what, std::initializer_list<int64_t> factors);

/// The most persistent memory (device and host blocks together) one builder's plan may ask
/// for: 2^40 bytes (1 TiB; docs/architecture.md, Limits). A plan past it is refused by name.
inline constexpr size_t kMaxPersistentBytes = size_t{1} << 40;

/// Bytes of the block a builder on `device` places in a caller's workspace: every request on a
/// host builder, the device requests on a CUDA one, at kBufferAlignment offsets.
/// Error(kInvalidArgument) when the plan's device and host blocks together exceed
/// kMaxPersistentBytes.
size_t workspace_bytes(const std::vector<BufferRequest>& requests, Device device);

class PersistentBuffers {
 public:
  PersistentBuffers() = default;
  /// Places the buffers in `workspace` when it is non-null (Error(kInvalidArgument) when
  /// `workspace_size` is too small), else allocates (Error(kOutOfMemory) naming `owner`).
  PersistentBuffers(const char* owner, Device device, const std::vector<BufferRequest>& requests,
                    std::shared_ptr<Allocator> allocator, void* workspace, size_t workspace_size);
  ~PersistentBuffers();
  PersistentBuffers(PersistentBuffers&& other) noexcept;
  PersistentBuffers& operator=(PersistentBuffers&& other) noexcept;
  PersistentBuffers(const PersistentBuffers&) = delete;
  PersistentBuffers& operator=(const PersistentBuffers&) = delete;

  /// Buffer `index` in the order of the requests.
  void* get(size_t index) const { return pointers_[index]; }
  template <class T>
  T* as(size_t index) const {
    return static_cast<T*>(pointers_[index]);
  }
  /// Whether `p` points into one of the buffers (a metadata field that aliases them).
  bool contains(const void* p) const;

 private:
  void release() noexcept;

  Device device_;
  std::shared_ptr<Allocator> allocator_;  ///< Null when the memory is the caller's workspace.
  void* block_ = nullptr;
  size_t bytes_ = 0;
  std::shared_ptr<Allocator> host_allocator_;  ///< The host block's (CUDA builders only).
  void* host_block_ = nullptr;
  size_t host_bytes_ = 0;
  std::vector<void*> pointers_;
};

}  // namespace attn
