// A builder's persistent buffers: planned once from the config, placed in one block of memory
// on the builder's device (the caller's workspace, or one allocation), zeroed, and never
// reallocated, so every address a build returns is stable and graph-capturable.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"

namespace attn {

struct BufferRequest {
  const char* name;  ///< For messages ("suffix_kv_lens").
  size_t bytes;
};

/// Bytes of one block holding `requests` at kBufferAlignment offsets (0 when all are empty).
size_t workspace_bytes(const std::vector<BufferRequest>& requests);

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

 private:
  void release() noexcept;

  Device device_;
  std::shared_ptr<Allocator> allocator_;  ///< Null when the memory is the caller's workspace.
  void* block_ = nullptr;
  size_t bytes_ = 0;
  std::vector<void*> pointers_;
};

}  // namespace attn
