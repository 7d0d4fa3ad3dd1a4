#include "core/metadata.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "ops/device_runtime.h"

namespace attn {

Metadata::Metadata(std::string kind, const std::vector<std::string>& names,
                   std::shared_ptr<Allocator> allocator)
    : kind_(std::move(kind)), allocator_(std::move(allocator)) {
  fields_.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) fields_[i].name = names[i];
}

std::optional<size_t> Metadata::find(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == name) return i;
  return std::nullopt;
}

size_t Metadata::index_of(std::string_view name) const {
  if (auto i = find(name)) return *i;
  fail(Status::kInternal, "metadata of kind '", kind_, "' has no field '", name, "'");
}

void Metadata::set_none(size_t i) {
  Field& f = fields_[i];
  f.kind = FieldKind::kNone;
  f.in_builder_buffer = false;
}

void Metadata::set_int(size_t i, int64_t v) {
  Field& f = fields_[i];
  f.kind = FieldKind::kInt;
  f.int_value = v;
  f.in_builder_buffer = false;
}

void Metadata::set_bool(size_t i, bool v) {
  Field& f = fields_[i];
  f.kind = FieldKind::kBool;
  f.int_value = v ? 1 : 0;
  f.in_builder_buffer = false;
}

void Metadata::set_float(size_t i, double v) {
  Field& f = fields_[i];
  f.kind = FieldKind::kFloat;
  f.float_value = v;
  f.in_builder_buffer = false;
}

void Metadata::set_tensor(size_t i, const Tensor& t, bool in_builder_buffer) {
  Field& f = fields_[i];
  f.kind = FieldKind::kTensor;
  f.tensor = t;
  f.in_builder_buffer = in_builder_buffer;
}

void Metadata::set_tensor(size_t i, const std::optional<Tensor>& t) {
  if (t)
    set_tensor(i, *t);
  else
    set_none(i);
}

void Metadata::reset() {
  for (Field& f : fields_) {  // set_none of every field, inline (a build's fixed cost)
    f.kind = FieldKind::kNone;
    f.in_builder_buffer = false;
  }
  info = BuildInfo{};
}

void Metadata::assign_values(const Metadata& src) {
  if (src.kind_ != kind_ || src.fields_.size() != fields_.size())
    invalid("metadata of kind '", src.kind_, "' cannot stand for metadata of kind '", kind_, "'");
  for (size_t i = 0; i < fields_.size(); ++i) {  // the values, not the names (no string copies)
    Field& to = fields_[i];
    const Field& from = src.fields_[i];
    to.kind = from.kind;
    to.tensor = from.tensor;
    to.int_value = from.int_value;
    to.float_value = from.float_value;
    to.in_builder_buffer = from.in_builder_buffer;
  }
  info = src.info;
}

void Metadata::assign_prefix(const Metadata& src) {
  if (src.fields_.size() > fields_.size())
    fail(Status::kInternal, "metadata '", kind_, "' has fewer fields than '", src.kind_, "'");
  for (size_t i = 0; i < src.fields_.size(); ++i) {
    if (src.fields_[i].name != fields_[i].name)
      fail(Status::kInternal, "field ", i, " of '", kind_, "' is '", fields_[i].name, "', not '",
           src.fields_[i].name, "'");
    fields_[i] = src.fields_[i];
  }
}

Metadata Metadata::clone() const {
  Metadata copy;
  copy.kind_ = kind_;
  copy.fields_ = fields_;
  copy.allocator_ = allocator_;
  copy.storage_ = storage_;
  copy.info = info;
  // Each builder buffer is copied once; fields that alias it (FLASH_ATTN's
  // scheduler_cache_seqlens is its suffix_kv_lens) keep aliasing the copy.
  std::vector<std::pair<const void*, void*>> copied;
  for (Field& f : copy.fields_) {
    if (f.kind != FieldKind::kTensor || !f.in_builder_buffer) continue;
    const Tensor& t = f.tensor;
    if (!t.is_compact())
      fail(Status::kUnsupported, "cannot clone field '", f.name, "': it views the builder's memory "
           "with strides (a clone copies only compact buffers)");
    const size_t bytes = static_cast<size_t>(t.numel()) * t.dtype.itemsize();
    if (bytes == 0) continue;
    void* p = nullptr;
    for (const auto& c : copied)
      if (c.first == t.data) p = c.second;
    if (p == nullptr) {
      std::shared_ptr<Allocator> alloc = allocator_ ? allocator_ : default_allocator();
      // Aliases may be longer views of the same buffer: copy the longest one.
      size_t longest = bytes;
      for (const Field& g : fields_)
        if (g.kind == FieldKind::kTensor && g.in_builder_buffer && g.tensor.data == t.data)
          longest = std::max(longest, static_cast<size_t>(g.tensor.numel()) * g.tensor.dtype.itemsize());
      p = alloc->allocate(longest, kBufferAlignment, t.device);
      if (p == nullptr)
        fail(Status::kOutOfMemory, "allocating ", longest, " bytes to clone field '", f.name,
             "' on ", t.device.to_string(), " failed");
      const Device dev = t.device;
      std::shared_ptr<void> owned(p, [alloc, longest, dev](void* q) { alloc->deallocate(q, longest, dev); });
      copy.storage_.push_back(std::move(owned));
      if (dev.is_cuda())
        ops::cuda_copy_device_to_device(dev.id, p, t.data, longest);
      else
        std::memcpy(p, t.data, longest);
      copied.emplace_back(t.data, p);
    }
    f.tensor.data = p;
    f.in_builder_buffer = false;
  }
  return copy;
}

}  // namespace attn
