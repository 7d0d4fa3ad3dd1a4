#include "core/tensor_args.h"

#include "core/error.h"

namespace attn {

ops::Exec exec_for(const Tensor& t, void* stream) {
  ops::Exec e;
  e.on_cuda = t.device.type == kDeviceCUDA;
  e.device_id = e.on_cuda ? t.device.id : 0;
  e.stream = stream;
  return e;
}

Device exec_device(const ops::Exec& exec) {
  return exec.on_cuda ? Device{kDeviceCUDA, exec.device_id} : Device{kDeviceCPU, 0};
}

namespace {
void expect_placed(const Tensor& t, const char* name, const ops::Exec& ex) {
  if (t.data == nullptr && t.numel() > 0) invalid(name, " has data=NULL and ", t.numel(), " elements");
  const Device where = exec_device(ex);
  if (!usable_on(t, where))
    invalid(name, " is on ", t.device.to_string(), " but the op runs on ", where.to_string());
}
}  // namespace

void expect_input(const Tensor& t, const char* name, DType dtype, int64_t n, const ops::Exec& ex) {
  expect_dtype(t, name, dtype);
  expect_vector(t, name, n);
  expect_placed(t, name, ex);
}

void expect_output(const Tensor& t, const char* name, DType dtype, int64_t min_len,
                   const ops::Exec& ex) {
  expect_dtype(t, name, dtype);
  if (t.ndim != 1) invalid(name, " has ndim=", t.ndim, ", expected 1");
  if (t.shape[0] < min_len)
    invalid(name, " has ", t.shape[0], " entries but ", min_len, " are needed");
  if (t.shape[0] > 1 && t.strides[0] != 1)
    invalid(name, " has stride ", t.strides[0], ", expected a compact tensor (stride 1)");
  expect_placed(t, name, ex);
}

void expect_host_vector(const Tensor& t, const char* name, DType dtype, int64_t n, bool at_least) {
  expect_dtype(t, name, dtype);
  if (at_least) {
    if (t.ndim != 1) invalid(name, " has ndim=", t.ndim, ", expected 1");
    if (t.shape[0] < n) invalid(name, " has ", t.shape[0], " entries but ", n, " are needed");
    if (t.shape[0] > 1 && t.strides[0] != 1)
      invalid(name, " has stride ", t.strides[0], ", expected a compact tensor (stride 1)");
  } else {
    expect_vector(t, name, n);
  }
  if (t.data == nullptr && t.numel() > 0) invalid(name, " has data=NULL and ", t.numel(), " elements");
  if (!t.host_accessible())
    invalid(name, " is on ", t.device.to_string(), "; it must be in host memory");
}

void expect_block_table(const Tensor& t, const char* name, int64_t rows, const ops::Exec& ex) {
  expect_dtype(t, name, kInt32);
  if (t.ndim != 2) invalid(name, " has ndim=", t.ndim, ", expected 2");
  if (t.shape[0] < rows) invalid(name, " has ", t.shape[0], " rows but ", rows, " are needed");
  if (t.shape[1] > 1 && t.strides[1] != 1)
    invalid(name, " has column stride ", t.strides[1], ", expected 1");
  if (t.shape[0] > 1 && t.strides[0] < t.shape[1])
    invalid(name, " has row stride ", t.strides[0], ", smaller than its ", t.shape[1], " columns");
  expect_placed(t, name, ex);
}

}  // namespace attn
