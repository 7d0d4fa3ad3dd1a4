#include "core/allocator.h"

#include <new>

#include "ops/device_runtime.h"

namespace attn {
namespace {

class DefaultAllocator final : public Allocator {
 public:
  // Every libattn request asks for at most kBufferAlignment, so host memory always uses that
  // alignment; deallocate() then passes the same value to the aligned operator delete.
  void* allocate(size_t bytes, size_t /*alignment*/, Device device) override {
    if (device.is_cuda()) return ops::cuda_malloc(device.id, bytes);
    return ::operator new(bytes, std::align_val_t(kBufferAlignment), std::nothrow);
  }
  void deallocate(void* ptr, size_t /*bytes*/, Device device) noexcept override {
    if (ptr == nullptr) return;
    if (device.is_cuda()) {
      ops::cuda_free(device.id, ptr);
      return;
    }
    ::operator delete(ptr, std::align_val_t(kBufferAlignment));
  }
};

}  // namespace

std::shared_ptr<Allocator> default_allocator() {
  static const std::shared_ptr<Allocator> instance = std::make_shared<DefaultAllocator>();
  return instance;
}

}  // namespace attn
