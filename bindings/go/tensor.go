package attn

/*
#include <stdlib.h>
#include <string.h>
#include "capi.h"

static void* gattn_aligned_alloc(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, 256, bytes == 0 ? 1 : bytes) != 0) return NULL;
  memset(p, 0, bytes == 0 ? 1 : bytes);
  return p;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// DeviceType is where a tensor's memory lives (DLPack's DLDeviceType numbers).
type DeviceType int32

// The device types.
const (
	DeviceCPU         DeviceType = C.ATTN_DEVICE_CPU
	DeviceCUDA        DeviceType = C.ATTN_DEVICE_CUDA
	DeviceCUDAHost    DeviceType = C.ATTN_DEVICE_CUDA_HOST
	DeviceCUDAManaged DeviceType = C.ATTN_DEVICE_CUDA_MANAGED
)

// Device is a device type and ordinal (DLPack's DLDevice).
type Device struct {
	Type DeviceType
	ID   int32
}

// CPU is the host.
var CPU = Device{Type: DeviceCPU}

// CUDA is GPU number id.
func CUDA(id int32) Device { return Device{Type: DeviceCUDA, ID: id} }

// HostReadable tells whether the host may read the memory (CPU, pinned and managed memory).
func (d Device) HostReadable() bool {
	return d.Type == DeviceCPU || d.Type == DeviceCUDAHost || d.Type == DeviceCUDAManaged
}

// String gives "cpu", "cuda:0", ...
func (d Device) String() string {
	switch d.Type {
	case DeviceCPU:
		return "cpu"
	case DeviceCUDA:
		return fmt.Sprintf("cuda:%d", d.ID)
	case DeviceCUDAHost:
		return fmt.Sprintf("cuda_host:%d", d.ID)
	case DeviceCUDAManaged:
		return fmt.Sprintf("cuda_managed:%d", d.ID)
	}
	return fmt.Sprintf("device type %d:%d", int32(d.Type), d.ID)
}

// DTypeCode is a DLPack data type code.
type DTypeCode uint8

// The codes.
const (
	DTypeInt    DTypeCode = C.ATTN_DTYPE_INT
	DTypeUint   DTypeCode = C.ATTN_DTYPE_UINT
	DTypeFloat  DTypeCode = C.ATTN_DTYPE_FLOAT
	DTypeBfloat DTypeCode = C.ATTN_DTYPE_BFLOAT
	DTypeBool   DTypeCode = C.ATTN_DTYPE_BOOL
)

// DType is an element type (DLPack's DLDataType).
type DType struct {
	Code  DTypeCode
	Bits  uint8
	Lanes uint16
}

// The element types used by libattn's fields.
var (
	Int8    = DType{DTypeInt, 8, 1}
	Int16   = DType{DTypeInt, 16, 1}
	Int32   = DType{DTypeInt, 32, 1}
	Int64   = DType{DTypeInt, 64, 1}
	Uint8   = DType{DTypeUint, 8, 1}
	Uint16  = DType{DTypeUint, 16, 1}
	Uint32  = DType{DTypeUint, 32, 1}
	Uint64  = DType{DTypeUint, 64, 1}
	Float16 = DType{DTypeFloat, 16, 1}
	Float32 = DType{DTypeFloat, 32, 1}
	Float64 = DType{DTypeFloat, 64, 1}
	Bfloat  = DType{DTypeBfloat, 16, 1}
	Bool    = DType{DTypeBool, 8, 1}
)

// String gives the C demo's spelling: "int32", "float32", "bfloat16", "bool8".
func (d DType) String() string {
	var name string
	switch d.Code {
	case DTypeInt:
		name = "int"
	case DTypeUint:
		name = "uint"
	case DTypeFloat:
		name = "float"
	case DTypeBfloat:
		name = "bfloat"
	case DTypeBool:
		name = "bool"
	default:
		name = "dtype"
	}
	s := fmt.Sprintf("%s%d", name, d.Bits)
	if d.Lanes > 1 {
		s += fmt.Sprintf("x%d", d.Lanes)
	}
	return s
}

// Size is the bytes of one element.
func (d DType) Size() int { return (int(d.Bits)*int(d.Lanes) + 7) / 8 }

// Element is a Go element type the binding maps to a DType.
type Element interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64
}

// DTypeOf is the DType of a Go element type.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case float32:
		return Float32
	}
	return Float64
}

// Tensor describes a tensor the caller passes to libattn: a Go slice (Slice, Matrix, Shaped),
// copied into C memory at each call because cgo forbids C memory from holding Go pointers (and
// copied back into the slice when libattn writes it), or memory outside Go's heap (External,
// HostBuffer.Tensor), passed as it is. The zero Tensor means "none" (a NULL tensor).
type Tensor struct {
	data       any            // the Go slice, kept reachable
	goPtr      unsafe.Pointer // its first element (nil for an empty slice)
	goBytes    int
	ptr        uintptr // external memory
	external   bool
	dtype      DType
	device     Device
	shape      []int64
	strides    []int64
	byteOffset uint64
	keep       any // owner of external memory, kept reachable while libattn may read it
}

// Slice is a 1-D host tensor over a Go slice.
func Slice[T Element](v []T) Tensor {
	t := Tensor{data: v, dtype: DTypeOf[T](), device: CPU, shape: []int64{int64(len(v))}}
	if len(v) > 0 {
		t.goPtr = unsafe.Pointer(&v[0])
		t.goBytes = len(v) * int(unsafe.Sizeof(v[0]))
	}
	return t
}

// Matrix is a 2-D (len(v)/cols, cols) row-major host tensor over a Go slice, such as a block
// table.
func Matrix[T Element](v []T, cols int) (Tensor, error) {
	if cols <= 0 {
		return Tensor{}, invalid("matrix width %d must be positive", cols)
	}
	if len(v)%cols != 0 {
		return Tensor{}, invalid("a slice of %d elements is not a matrix of width %d", len(v), cols)
	}
	t := Slice(v)
	t.shape = []int64{int64(len(v) / cols), int64(cols)}
	return t, nil
}

// Shaped is a row-major host tensor of the given shape over a Go slice whose length is the
// shape's product.
func Shaped[T Element](v []T, shape ...int64) (Tensor, error) {
	n := int64(1)
	for i, s := range shape {
		if s < 0 {
			return Tensor{}, invalid("shape[%d]=%d is negative", i, s)
		}
		n *= s
	}
	if n != int64(len(v)) {
		return Tensor{}, invalid("shape %s has %d elements but the slice has %d", shapeString(shape), n, len(v))
	}
	t := Slice(v)
	t.shape = append([]int64(nil), shape...)
	return t, nil
}

// External describes memory outside Go's heap (CUDA memory, C memory, pinned memory) that the
// caller keeps valid while libattn uses it (and while metadata built from it is used). strides
// in elements, or nil for row-major. Nothing is copied.
func External(ptr uintptr, device Device, dtype DType, shape, strides []int64) Tensor {
	return Tensor{
		ptr: ptr, external: true, dtype: dtype, device: device,
		shape: append([]int64(nil), shape...), strides: append([]int64(nil), strides...),
	}
}

// WithShape returns t with another shape (for a view of part of a slice, with WithStrides);
// a Go slice is checked to hold every element the view reaches when it is passed.
func (t Tensor) WithShape(shape ...int64) Tensor {
	t.shape = append([]int64(nil), shape...)
	return t
}

// WithStrides returns t with strides (in elements); nil means row-major.
func (t Tensor) WithStrides(strides ...int64) Tensor {
	t.strides = append([]int64(nil), strides...)
	return t
}

// WithByteOffset returns t with a byte offset from its data to its first element.
func (t Tensor) WithByteOffset(offset uint64) Tensor {
	t.byteOffset = offset
	return t
}

// IsZero tells whether t is the zero Tensor (none).
func (t Tensor) IsZero() bool { return t.data == nil && !t.external }

// Shape is the tensor's shape.
func (t Tensor) Shape() []int64 { return append([]int64(nil), t.shape...) }

// Strides are the strides in elements, nil for row-major.
func (t Tensor) Strides() []int64 { return append([]int64(nil), t.strides...) }

// DType is the element type.
func (t Tensor) DType() DType { return t.dtype }

// Device is where the data lives (CPU for Go slices).
func (t Tensor) Device() Device { return t.device }

// IsGoMemory tells whether the tensor is a Go slice (copied at each call).
func (t Tensor) IsGoMemory() bool { return t.data != nil }

func shapeString(shape []int64) string {
	parts := make([]string, len(shape))
	for i, s := range shape {
		parts[i] = fmt.Sprint(s)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// extent is the number of elements from the first to one past the last element a view can
// reach, for non-negative strides; 0 for an empty view.
func extent(shape, strides []int64) (int64, error) {
	if strides == nil {
		n := int64(1)
		for _, s := range shape {
			n *= s
		}
		return n, nil
	}
	if len(strides) != len(shape) {
		return 0, invalid("%d strides for %d dimensions", len(strides), len(shape))
	}
	last := int64(0)
	for i, s := range shape {
		if s == 0 {
			return 0, nil
		}
		if strides[i] < 0 {
			return 0, invalid("stride %d is negative", strides[i])
		}
		last += (s - 1) * strides[i]
	}
	return last + 1, nil
}

// HostBuffer is host memory allocated with C's allocator (256-byte aligned, zeroed): tensors
// over it reach libattn without a copy, and a builder may place its buffers in it
// (BuilderConfig.Workspace). The slices its views return (Bytes, Int32s, ...) are valid until
// Close, or until the buffer becomes unreachable (a finalizer frees it): keep the *HostBuffer
// reachable while you use them (runtime.KeepAlive).
type HostBuffer struct {
	mu   sync.Mutex
	ptr  unsafe.Pointer
	size int
}

// NewHostBuffer allocates bytes of zeroed host memory.
func NewHostBuffer(bytes int) (*HostBuffer, error) {
	if bytes < 0 {
		return nil, invalid("host buffer size %d is negative", bytes)
	}
	p := C.gattn_aligned_alloc(C.size_t(bytes))
	if p == nil {
		return nil, newError(ErrOutOfMemory, "cannot allocate a host buffer of %d bytes", bytes)
	}
	b := &HostBuffer{ptr: p, size: bytes}
	runtime.SetFinalizer(b, (*HostBuffer).Close)
	return b, nil
}

// Len is the size in bytes.
func (b *HostBuffer) Len() int { return b.size }

// Ptr is the address (0 after Close).
func (b *HostBuffer) Ptr() uintptr {
	b.mu.Lock()
	defer b.mu.Unlock()
	return uintptr(b.ptr)
}

func hostView[T Element](b *HostBuffer) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	var zero T
	n := b.size / int(unsafe.Sizeof(zero))
	if b.ptr == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(b.ptr), n)
}

// Bytes is the buffer as bytes.
func (b *HostBuffer) Bytes() []byte { return hostView[uint8](b) }

// Int32s is the buffer as int32 values.
func (b *HostBuffer) Int32s() []int32 { return hostView[int32](b) }

// Int64s is the buffer as int64 values.
func (b *HostBuffer) Int64s() []int64 { return hostView[int64](b) }

// Float32s is the buffer as float32 values.
func (b *HostBuffer) Float32s() []float32 { return hostView[float32](b) }

// Tensor is a row-major host tensor over the start of the buffer, passed to libattn without a
// copy; it keeps the buffer reachable.
func (b *HostBuffer) Tensor(dtype DType, shape ...int64) (Tensor, error) {
	n, err := extent(shape, nil)
	if err != nil {
		return Tensor{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ptr == nil {
		return Tensor{}, invalid("the host buffer is closed")
	}
	if n*int64(dtype.Size()) > int64(b.size) {
		return Tensor{}, invalid("shape %s of %s needs %d bytes but the host buffer has %d",
			shapeString(shape), dtype, n*int64(dtype.Size()), b.size)
	}
	t := External(uintptr(b.ptr), CPU, dtype, shape, nil)
	t.keep = b
	return t, nil
}

// Close frees the memory; later calls do nothing. Tensors and views over it must no longer be
// used, nor builders whose workspace it is.
func (b *HostBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ptr != nil {
		C.free(b.ptr)
		b.ptr = nil
	}
	runtime.SetFinalizer(b, nil)
	return nil
}
