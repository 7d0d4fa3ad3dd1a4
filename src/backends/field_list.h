// A list of names declared once: a backend's metadata fields, or its persistent buffers, written
// as an X-macro whose lines give both the enum of indices and the names, so the two cannot
// drift apart.
//
//   #define TRITON_FIELDS(X) ATTN_PASSTHROUGH_FIELDS(X, k, "") X(kCausal, "causal") ...
//   ATTN_NAMED_LIST(Field, TRITON_FIELDS);
//
// declares `enum Field : size_t {kNumActualTokens, ..., kSlotMapping, kCausal, ..., kFieldCount}`
// and `kFieldNames`, the names in the same order. A block repeated under a prefix (FlashAttention's
// scheduler_* and prefix_scheduler_* inputs) is a list macro with two more parameters, the
// enumerator prefix and the name prefix, as ATTN_PASSTHROUGH_FIELDS is.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/persistent_buffers.h"

#define ATTN_LIST_ENUMERATOR_(id, name) id,
#define ATTN_LIST_NAME_(id, name) name,

#define ATTN_NAMED_LIST(Enum, LIST)                                                    \
  enum Enum : size_t { LIST(ATTN_LIST_ENUMERATOR_) k##Enum##Count };                   \
  constexpr const char* const k##Enum##Names[] = {LIST(ATTN_LIST_NAME_)};              \
  static_assert(sizeof(k##Enum##Names) / sizeof(k##Enum##Names[0]) == k##Enum##Count, \
                #Enum ": one name per enumerator")

namespace attn::backends {

/// The names of a list as init_metadata takes them.
template <size_t N>
std::vector<std::string> name_vector(const char* const (&names)[N]) {
  return std::vector<std::string>(names, names + N);
}

/// The first `count` names of a list (a builder's plain metadata, before its cascade fields).
template <size_t N>
std::vector<std::string> name_vector(const char* const (&names)[N], size_t count) {
  return std::vector<std::string>(names, names + (count < N ? count : N));
}

/// The persistent buffers of a named buffer list, sized one by one (in any order) and returned
/// in the list's order, which is the order PersistentBuffers::get indexes. A buffer left unsized
/// is an internal error, named.
template <size_t N>
class BufferPlan {
 public:
  explicit BufferPlan(const char* const (&names)[N]) : names_(names) {}

  void set(size_t index, size_t bytes, bool host = false) {
    requests_[index] = BufferRequest{names_[index], bytes, host};
    sized_[index] = true;
  }

  std::vector<BufferRequest> requests() const {
    for (size_t i = 0; i < N; ++i)
      if (!sized_[i]) fail(Status::kInternal, "buffer '", names_[i], "' was not sized");
    return std::vector<BufferRequest>(requests_, requests_ + N);
  }

 private:
  const char* const* names_;
  BufferRequest requests_[N] = {};
  bool sized_[N] = {};
};

}  // namespace attn::backends
