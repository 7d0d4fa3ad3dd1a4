#include "core/tensor.h"

#include "core/error.h"

namespace attn {

std::string Device::to_string() const {
  switch (type) {
    case kDeviceCPU:
      return "cpu";
    case kDeviceCUDA:
      return cat("cuda:", id);
    case kDeviceCUDAHost:
      return "cuda_host";
    case kDeviceCUDAManaged:
      return cat("cuda_managed:", id);
    default:
      return cat("device_type=", type, ":", id);
  }
}

std::string DType::to_string() const {
  const char* base = nullptr;
  switch (code) {
    case 0:
      base = "int";
      break;
    case 1:
      base = "uint";
      break;
    case 2:
      base = "float";
      break;
    case 4:
      base = "bfloat";
      break;
    case 6:
      base = "bool";
      break;
    default:
      return cat("dtype(code=", int(code), ",bits=", int(bits), ",lanes=", lanes, ")");
  }
  std::string s = code == 6 ? std::string(base) : cat(base, int(bits));
  if (lanes != 1) s += cat("x", lanes);
  return s;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

bool Tensor::is_compact() const {
  int64_t expected = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

bool Tensor::host_accessible() const {
  return device.type == kDeviceCPU || device.type == kDeviceCUDAHost ||
         device.type == kDeviceCUDAManaged;
}

bool usable_on(const Tensor& t, const Device& where) {
  if (!where.is_cuda()) return t.host_accessible();
  return (t.device.type == kDeviceCUDA && t.device.id == where.id) ||
         t.device.type == kDeviceCUDAManaged || t.device.type == kDeviceCUDAHost;
}

Tensor make_vector(void* data, Device device, DType dtype, int64_t n) {
  Tensor t;
  t.data = data;
  t.device = device;
  t.dtype = dtype;
  t.ndim = 1;
  t.shape[0] = n;
  t.strides[0] = 1;
  return t;
}

Tensor make_matrix(void* data, Device device, DType dtype, int64_t rows, int64_t cols,
                   int64_t row_stride) {
  Tensor t;
  t.data = data;
  t.device = device;
  t.dtype = dtype;
  t.ndim = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.strides[0] = row_stride;
  t.strides[1] = 1;
  return t;
}

Tensor make_row_blocks(void* data, Device device, DType dtype, int64_t rows, int64_t cols,
                       int64_t row_stride) {
  Tensor t = make_matrix(data, device, dtype, rows, cols, row_stride);
  t.ndim = 3;
  t.shape[1] = 1;
  t.strides[1] = cols;
  t.shape[2] = cols;
  t.strides[2] = 1;
  return t;
}

Tensor slice_rows(const Tensor& t, int64_t rows) {
  Tensor s = t;
  if (s.ndim > 0) s.shape[0] = rows;
  return s;
}

Tensor rows_between(const Tensor& t, int64_t start, int64_t stop) {
  Tensor s = t;
  s.shape[0] = stop - start;
  if (s.data != nullptr)
    s.data = static_cast<char*>(s.data) +
             start * s.strides[0] * static_cast<int64_t>(s.dtype.itemsize());
  return s;
}

void expect_dtype(const Tensor& t, const char* name, DType dtype) {
  if (t.dtype != dtype)
    invalid(name, " has dtype ", t.dtype.to_string(), ", expected ", dtype.to_string());
}

void expect_index_dtype(const Tensor& t, const char* name) {
  if (t.dtype != kInt32 && t.dtype != kInt64)
    invalid(name, " has dtype ", t.dtype.to_string(), ", expected int32 or int64");
}

void expect_vector(const Tensor& t, const char* name, int64_t n) {
  if (t.ndim != 1) invalid(name, " has ndim=", t.ndim, ", expected 1");
  if (t.shape[0] != n) invalid(name, " has shape (", t.shape[0], ",), expected (", n, ",)");
  if (n > 1 && t.strides[0] != 1)
    invalid(name, " has stride ", t.strides[0], ", expected a compact tensor (stride 1)");
}

void expect_rows(const Tensor& t, const char* name, int64_t rows) {
  if (t.ndim != 2) invalid(name, " has ndim=", t.ndim, ", expected 2");
  if (t.shape[0] != rows)
    invalid(name, " has ", t.shape[0], " rows (shape (", t.shape[0], ", ", t.shape[1],
            ")), expected ", rows);
  if (t.shape[1] > 1 && t.strides[1] != 1)
    invalid(name, " has column stride ", t.strides[1], ", expected 1");
  if (t.shape[0] > 1 && t.strides[0] < t.shape[1])
    invalid(name, " has row stride ", t.strides[0], ", smaller than its ", t.shape[1],
            " columns");
}

}  // namespace attn
