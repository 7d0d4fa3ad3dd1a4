/* attn_tensor_t, attn_device_t and attn_dtype_t are layout-identical to Debian's dlpack.h
 * (DLTensor, DLDevice, DLDataType), and the device and dtype codes have DLPack's numbers. */
#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "attn_c.h"

#define CHECK(name, cond) typedef char name[(cond) ? 1 : -1]

CHECK(tensor_size, sizeof(attn_tensor_t) == sizeof(DLTensor));
CHECK(tensor_data, offsetof(attn_tensor_t, data) == offsetof(DLTensor, data));
CHECK(tensor_device, offsetof(attn_tensor_t, device) == offsetof(DLTensor, device));
CHECK(tensor_ndim, offsetof(attn_tensor_t, ndim) == offsetof(DLTensor, ndim));
CHECK(tensor_dtype, offsetof(attn_tensor_t, dtype) == offsetof(DLTensor, dtype));
CHECK(tensor_shape, offsetof(attn_tensor_t, shape) == offsetof(DLTensor, shape));
CHECK(tensor_strides, offsetof(attn_tensor_t, strides) == offsetof(DLTensor, strides));
CHECK(tensor_offset, offsetof(attn_tensor_t, byte_offset) == offsetof(DLTensor, byte_offset));
CHECK(device_size, sizeof(attn_device_t) == sizeof(DLDevice));
CHECK(device_type, offsetof(attn_device_t, device_type) == offsetof(DLDevice, device_type));
CHECK(device_id, offsetof(attn_device_t, device_id) == offsetof(DLDevice, device_id));
CHECK(device_type_size, sizeof(((attn_device_t*)0)->device_type) == sizeof(((DLDevice*)0)->device_type));
CHECK(dtype_size, sizeof(attn_dtype_t) == sizeof(DLDataType));
CHECK(dtype_code, offsetof(attn_dtype_t, code) == offsetof(DLDataType, code));
CHECK(dtype_bits, offsetof(attn_dtype_t, bits) == offsetof(DLDataType, bits));
CHECK(dtype_lanes, offsetof(attn_dtype_t, lanes) == offsetof(DLDataType, lanes));
CHECK(cpu, (int)ATTN_DEVICE_CPU == (int)kDLCPU);
CHECK(cuda, (int)ATTN_DEVICE_CUDA == (int)kDLCUDA);
CHECK(cuda_host, (int)ATTN_DEVICE_CUDA_HOST == (int)kDLCUDAHost);
CHECK(cuda_managed, (int)ATTN_DEVICE_CUDA_MANAGED == (int)kDLCUDAManaged);
CHECK(int_code, (int)ATTN_DTYPE_INT == (int)kDLInt);
CHECK(uint_code, (int)ATTN_DTYPE_UINT == (int)kDLUInt);
CHECK(float_code, (int)ATTN_DTYPE_FLOAT == (int)kDLFloat);
CHECK(bfloat_code, (int)ATTN_DTYPE_BFLOAT == (int)kDLBfloat);

int main(void) {
  /* a DLTensor's bytes read as an attn_tensor_t (the library reads a cast pointer so) */
  int64_t shape[1] = {3};
  int32_t data[3] = {1, 2, 3};
  DLTensor t;
  attn_tensor_t copy;
  const attn_tensor_t* v = &copy;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 1;
  t.dtype.code = kDLInt;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 4;
  memcpy(&copy, &t, sizeof copy);
  if (v->data != data || v->ndim != 1 || v->shape[0] != 3 || v->byte_offset != 4 ||
      v->dtype.bits != 32 || v->device.device_type != ATTN_DEVICE_CPU)
    return 1;
  printf("attn_tensor_t matches DLPack %d's DLTensor\n", DLPACK_VERSION);
  return 0;
}
