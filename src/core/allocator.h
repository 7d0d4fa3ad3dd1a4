// Allocators for a builder's persistent buffers: libattn's default (host heap, cudaMalloc) or
// a runtime's callbacks (wrapped in src/capi).
#pragma once

#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace attn {

class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns memory on `device`, or nullptr when the allocation failed.
  virtual void* allocate(size_t bytes, size_t alignment, Device device) = 0;
  virtual void deallocate(void* ptr, size_t bytes, Device device) noexcept = 0;
};

/// Host: aligned operator new. CUDA: cudaMalloc through src/ops (throws Error when CUDA is
/// missing, so callers see why rather than a bare out-of-memory).
std::shared_ptr<Allocator> default_allocator();

/// Alignment of every persistent buffer (and required of caller workspaces).
inline constexpr size_t kBufferAlignment = 256;

}  // namespace attn
