// Tensor views inside libattn: a DLPack-shaped description of borrowed memory with strides
// always filled in. src/capi converts the ABI's attn_tensor_t into this type (adding
// byte_offset to data); core checks dtypes, shapes and devices with the argument's name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn {

/// Device types, numbered as DLPack's DLDeviceType.
enum DeviceType : int32_t {
  kDeviceCPU = 1,
  kDeviceCUDA = 2,
  kDeviceCUDAHost = 3,
  kDeviceCUDAManaged = 13,
};

struct Device {
  int32_t type = kDeviceCPU;
  int32_t id = 0;

  bool is_cuda() const { return type == kDeviceCUDA; }
  bool operator==(const Device& o) const { return type == o.type && id == o.id; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  /// "cpu", "cuda:0", "cuda_host", "cuda_managed:1", "device_type=9:0".
  std::string to_string() const;
};

/// DLPack's DLDataType.
struct DType {
  uint8_t code = 0;
  uint8_t bits = 0;
  uint16_t lanes = 1;

  bool operator==(const DType& o) const {
    return code == o.code && bits == o.bits && lanes == o.lanes;
  }
  bool operator!=(const DType& o) const { return !(*this == o); }
  size_t itemsize() const { return static_cast<size_t>(bits) * lanes / 8; }
  /// "int32", "float16", "bfloat16", "bool", "uint8x4", "dtype(code=9,bits=8,lanes=1)".
  std::string to_string() const;
};

inline constexpr DType kInt32{0, 32, 1};
inline constexpr DType kInt64{0, 64, 1};
inline constexpr DType kFloat32{2, 32, 1};

inline constexpr int kMaxDims = 8;

struct Tensor {
  void* data = nullptr;  ///< First element (the ABI's data + byte_offset).
  Device device;
  DType dtype;
  int32_t ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  ///< In elements; compact row-major when the caller gave none.

  int64_t numel() const;
  /// Compact row-major (dimensions of size 1 may have any stride).
  bool is_compact() const;
  /// Host code may dereference data: CPU, pinned host or managed memory.
  bool host_accessible() const;

  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

/// Code running on `where` may read `t`: host memory for the host; for cuda:n, memory of that
/// device, managed memory or pinned host memory.
bool usable_on(const Tensor& t, const Device& where);

/// A 1-D compact view.
Tensor make_vector(void* data, Device device, DType dtype, int64_t n);
/// A 2-D view whose rows are `row_stride` elements apart.
Tensor make_matrix(void* data, Device device, DType dtype, int64_t rows, int64_t cols,
                   int64_t row_stride);
/// A (rows, 1, cols) view whose rows are `row_stride` elements apart (vLLM's
/// buffer[:rows, :cols].view(rows, 1, -1); dim 1 has stride cols).
Tensor make_row_blocks(void* data, Device device, DType dtype, int64_t rows, int64_t cols,
                       int64_t row_stride);
/// Rows [0, rows) of a tensor (dim 0 cut to `rows`).
Tensor slice_rows(const Tensor& t, int64_t rows);
/// Rows [start, stop) of a tensor with ndim >= 1 (a view; 0 <= start <= stop <= shape[0]).
Tensor rows_between(const Tensor& t, int64_t start, int64_t stop);

/// Checks, each throwing Error(kInvalidArgument) with a message that starts with `name`.
void expect_dtype(const Tensor& t, const char* name, DType dtype);
/// int32 or int64.
void expect_index_dtype(const Tensor& t, const char* name);
void expect_vector(const Tensor& t, const char* name, int64_t n);  ///< 1-D, compact, n entries
/// 2-D with `rows` rows, unit column stride and row stride >= columns.
void expect_rows(const Tensor& t, const char* name, int64_t rows);

}  // namespace attn
