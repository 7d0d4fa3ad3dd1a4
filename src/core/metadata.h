// Metadata: the named fields a build (or a batch utility) produces, with vLLM's field names.
// A builder creates its Metadata once with a fixed list of names and rewrites the values on
// every build, so a build allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"

namespace attn {

/// Numbered as the ABI's ATTN_FIELD_* kinds.
enum class FieldKind : int32_t { kNone = 0, kTensor = 1, kInt = 2, kFloat = 3, kBool = 4 };

struct Field {
  std::string name;
  FieldKind kind = FieldKind::kNone;
  Tensor tensor;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool in_builder_buffer = false;  ///< The tensor's memory is a builder's persistent buffer.
};

/// What update_block_table needs to know about the batch a metadata was built from.
struct BuildInfo {
  int64_t num_reqs = 0;
  int64_t host_max_seq_len = -1;  ///< Longest seq_len read from host memory; -1 if unknown.
  /// The batch's slot_mapping (dtype, entries; -1 without one): what update_block_table's
  /// replacement must match where the metadata has no slot_mapping field of its own.
  DType slot_mapping_dtype{};
  int64_t slot_mapping_len = -1;
};

class Metadata {
 public:
  Metadata() = default;
  Metadata(std::string kind, const std::vector<std::string>& names,
           std::shared_ptr<Allocator> allocator = nullptr);

  const std::string& kind() const { return kind_; }
  size_t size() const { return fields_.size(); }
  const Field& field(size_t i) const { return fields_[i]; }
  std::optional<size_t> find(std::string_view name) const;
  /// The index of `name`; Error(kInternal) when the backend forgot to declare it.
  size_t index_of(std::string_view name) const;

  void set_none(size_t i);
  void set_int(size_t i, int64_t v);
  void set_bool(size_t i, bool v);
  void set_float(size_t i, double v);
  void set_tensor(size_t i, const Tensor& t, bool in_builder_buffer = false);
  /// Tensor when `t` has a value, None otherwise.
  void set_tensor(size_t i, const std::optional<Tensor>& t);
  /// Sets every field to None.
  void reset();

  /// Copies the values of every field of `src` (same kind and names required).
  void assign_values(const Metadata& src);
  /// Copies every field of `src` into fields [0, src.size()) of this metadata, whose first
  /// names must be src's (a wrapper's metadata: its backend's fields, then its own).
  void assign_prefix(const Metadata& src);
  /// Marks field i as (not) aliasing a builder's persistent buffer.
  void set_in_builder_buffer(size_t i, bool in_buffer) { fields_[i].in_builder_buffer = in_buffer; }

  /// A copy that owns copies of every builder-buffer tensor (the "keep" of attn_metadata_clone).
  Metadata clone() const;

  BuildInfo info;

 private:
  std::string kind_;
  std::vector<Field> fields_;
  std::shared_ptr<Allocator> allocator_;
  std::vector<std::shared_ptr<void>> storage_;  ///< Buffers a clone owns.
};

}  // namespace attn
