package attn

/*
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Metadata is named fields (tensors and scalars) with vLLM's names: a build's result (owned by
// its builder, valid until the builder's next build or update, or its Close), or a batch
// utility's result or a clone (owned by the caller: Close it; a finalizer is a safety net).
// Using metadata that is no longer valid returns an *Error instead of reading freed or
// rewritten memory. Any number of goroutines may read one Metadata.
type Metadata struct {
	lib     *Library
	ptr     *C.attn_metadata_t
	owned   bool
	kind    string
	count   int
	deps    []dep       // builders whose build this is (valid while their generation holds)
	parents []*Metadata // owned metadata whose memory this one shares
	inputs  []*arena    // staged inputs the fields may view (referenced when owned)
	// fromPlugin marks a plugin backend's build, which Clone refuses on libattn 1.1: its
	// attn_metadata_clone does not copy a plugin builder's buffers (1.2's does), so such a
	// clone would change at the next build.
	fromPlugin bool

	mu     sync.RWMutex
	closed bool
}

type dep struct {
	b   *Builder
	gen uint64
}

func (l *Library) newMetadata(ptr *C.attn_metadata_t, owned bool, inputs []*arena) *Metadata {
	m := &Metadata{
		lib: l, ptr: ptr, owned: owned, inputs: inputs,
		kind:  C.GoString(C.gattn_metadata_kind(l.api, ptr)),
		count: int(C.gattn_metadata_field_count(l.api, ptr)),
	}
	if owned {
		runtime.SetFinalizer(m, (*Metadata).Close)
	}
	return m
}

// Kind is the backend that built the metadata ("FLASH_ATTN", or a wrapper's name such as
// "ChunkedLocalAttention_32_FLASH_ATTN"), or "common" for a batch utility's result.
func (m *Metadata) Kind() string { return m.kind }

// Len is the number of fields.
func (m *Metadata) Len() int { return m.count }

// Owned tells whether the caller owns the metadata (a clone or a utility's result) rather than
// a builder.
func (m *Metadata) Owned() bool { return m.owned }

// acquire checks that the metadata may be read and keeps it so (against Close, rebuilds and
// the builders' Close) until the returned release is called. self is a builder whose state
// lock the caller already holds for writing (its generation is checked without locking); the
// state locks of the other builders are then only tried, since waiting for them while holding
// self's could deadlock against an update going the other way.
func (m *Metadata) acquire(self *Builder) (func(), error) {
	var undo []func()
	release := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	m.mu.RLock()
	undo = append(undo, m.mu.RUnlock)
	if m.closed {
		release()
		return nil, invalid("%s metadata is closed", m.kind)
	}
	for _, p := range m.parents {
		p.mu.RLock()
		undo = append(undo, p.mu.RUnlock)
		if p.closed {
			release()
			return nil, invalid("%s metadata shares fields with %s metadata that is closed", m.kind, p.kind)
		}
	}
	for _, d := range m.deps {
		if d.b != self {
			d.b.life.RLock()
			undo = append(undo, d.b.life.RUnlock)
			if d.b.closed {
				release()
				return nil, invalid("%s metadata is no longer valid: builder '%s' is closed", m.kind, d.b.name)
			}
			if self == nil {
				d.b.state.RLock()
			} else if !d.b.state.TryRLock() {
				release()
				return nil, d.b.busyError()
			}
			undo = append(undo, d.b.state.RUnlock)
		}
		if d.b.gen != d.gen {
			release()
			return nil, invalid("%s metadata is stale: builder '%s' has built again since (Clone keeps metadata)",
				m.kind, d.b.name)
		}
	}
	return release, nil
}

// Valid tells whether the metadata may still be read (nil), or why not.
func (m *Metadata) Valid() error {
	release, err := m.acquire(nil)
	if err != nil {
		return err
	}
	release()
	return nil
}

// Field is one metadata field.
type Field struct {
	Name   string
	Kind   FieldKind
	Int    int64       // FieldInt, and FieldBool (0 or 1)
	Float  float64     // FieldFloat
	Tensor *TensorView // FieldTensor
}

// Bool is the value of a FieldBool.
func (f Field) Bool() bool { return f.Int != 0 }

// IsNone tells whether the field is unset (None in vLLM).
func (f Field) IsNone() bool { return f.Kind == FieldNone }

// String formats the value: "None", "55", "True", "0.5", or the tensor's description.
func (f Field) String() string {
	switch f.Kind {
	case FieldNone:
		return "None"
	case FieldInt:
		return fmt.Sprint(f.Int)
	case FieldBool:
		if f.Int != 0 {
			return "True"
		}
		return "False"
	case FieldFloat:
		return fmt.Sprint(f.Float)
	case FieldTensor:
		return f.Tensor.String()
	}
	return "?"
}

func (m *Metadata) fieldFromC(f *C.attn_field_t) Field {
	out := Field{
		Name: C.GoString(f.name), Kind: FieldKind(f.kind),
		Int: int64(f.int_value), Float: float64(f.float_value),
	}
	if out.Kind == FieldTensor && f.tensor != nil {
		out.Tensor = &TensorView{md: m, name: out.Name, d: descriptorFromC(f.tensor)}
	}
	return out
}

// Field is field i, 0 <= i < Len() (attn_metadata_field); ErrNotFound out of range.
func (m *Metadata) Field(i int) (Field, error) {
	release, err := m.acquire(nil)
	if err != nil {
		return Field{}, err
	}
	defer release()
	if i < 0 {
		return Field{}, newError(ErrNotFound, "field index %d is negative", i)
	}
	f := C.gattn_field_init()
	if err := m.lib.takeError(C.gattn_metadata_field(m.lib.api, m.ptr, C.size_t(i), &f)); err != nil {
		return Field{}, err
	}
	return m.fieldFromC(&f), nil
}

// Fields is every field, in the backend's order.
func (m *Metadata) Fields() ([]Field, error) {
	release, err := m.acquire(nil)
	if err != nil {
		return nil, err
	}
	defer release()
	out := make([]Field, m.count)
	for i := range out {
		f := C.gattn_field_init()
		if err := m.lib.takeError(C.gattn_metadata_field(m.lib.api, m.ptr, C.size_t(i), &f)); err != nil {
			return nil, err
		}
		out[i] = m.fieldFromC(&f)
	}
	return out, nil
}

// Get is the field of that name (attn_metadata_get); ErrNotFound names the field and the kind.
func (m *Metadata) Get(name string) (Field, error) {
	cname, err := cString("field name", name)
	if err != nil {
		return Field{}, err
	}
	defer freeString(cname)
	release, err := m.acquire(nil)
	if err != nil {
		return Field{}, err
	}
	defer release()
	f := C.gattn_field_init()
	if err := m.lib.takeError(C.gattn_metadata_get(m.lib.api, m.ptr, cname, &f)); err != nil {
		return Field{}, err
	}
	return m.fieldFromC(&f), nil
}

// Tensor is a tensor field (attn_metadata_get_tensor): nil, nil when it is None;
// ErrInvalidArgument when the field is a scalar.
func (m *Metadata) Tensor(name string) (*TensorView, error) {
	cname, err := cString("field name", name)
	if err != nil {
		return nil, err
	}
	defer freeString(cname)
	release, err := m.acquire(nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var t *C.attn_tensor_t
	if err := m.lib.takeError(C.gattn_metadata_get_tensor(m.lib.api, m.ptr, cname, &t)); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil
	}
	return &TensorView{md: m, name: name, d: descriptorFromC(t)}, nil
}

// Int is an integer or boolean field (attn_metadata_get_int).
func (m *Metadata) Int(name string) (int64, error) {
	cname, err := cString("field name", name)
	if err != nil {
		return 0, err
	}
	defer freeString(cname)
	release, err := m.acquire(nil)
	if err != nil {
		return 0, err
	}
	defer release()
	var v C.int64_t
	if err := m.lib.takeError(C.gattn_metadata_get_int(m.lib.api, m.ptr, cname, &v)); err != nil {
		return 0, err
	}
	return int64(v), nil
}

// Bool is a boolean field.
func (m *Metadata) Bool(name string) (bool, error) {
	f, err := m.Get(name)
	if err != nil {
		return false, err
	}
	if f.Kind != FieldBool {
		return false, invalid("field '%s' of %s metadata is a %s, not a bool", name, m.kind, f.Kind)
	}
	return f.Int != 0, nil
}

// Float is a float field.
func (m *Metadata) Float(name string) (float64, error) {
	f, err := m.Get(name)
	if err != nil {
		return 0, err
	}
	if f.Kind != FieldFloat {
		return 0, invalid("field '%s' of %s metadata is a %s, not a float", name, m.kind, f.Kind)
	}
	return f.Float, nil
}

func fieldValues[T Element](m *Metadata, name string) ([]T, error) {
	t, err := m.Tensor(name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, invalid("field '%s' of %s metadata is None", name, m.kind)
	}
	return Values[T](t)
}

// Int32s is a copy of an int32 tensor field's elements (row-major); an error when the field is
// None, not int32, or not readable on the host.
func (m *Metadata) Int32s(name string) ([]int32, error) { return fieldValues[int32](m, name) }

// Int64s is a copy of an int64 tensor field's elements.
func (m *Metadata) Int64s(name string) ([]int64, error) { return fieldValues[int64](m, name) }

// Float32s is a copy of a float32 tensor field's elements.
func (m *Metadata) Float32s(name string) ([]float32, error) { return fieldValues[float32](m, name) }

// Clone copies the metadata so that it outlives the next build and the builder
// (attn_metadata_clone). Tensors in the builder's buffers are copied; tensors that view the
// batch's inputs keep viewing them (the binding's staged copies, which the clone keeps). The
// clone is the caller's: Close it. On libattn 1.1 a plugin backend's metadata is refused
// (ErrUnsupported): that version does not copy a plugin builder's buffers.
func (m *Metadata) Clone() (*Metadata, error) {
	if m.fromPlugin && m.lib.Version().Minor < 2 {
		return nil, newError(ErrUnsupported, "Clone of '%s' metadata: libattn 1.1's attn_metadata_clone does not copy "+
			"the buffers of a plugin backend's builder, so the clone would change with the builder's next build", m.kind)
	}
	release, err := m.acquire(nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var out *C.attn_metadata_t
	if err := m.lib.takeError(C.gattn_metadata_clone(m.lib.api, m.ptr, &out)); err != nil {
		return nil, err
	}
	inputs := make([]*arena, len(m.inputs))
	for i, a := range m.inputs {
		inputs[i] = a.retain()
	}
	c := m.lib.newMetadata(out, true, inputs)
	c.parents = m.parents // a clone of shared fields still views their owner
	return c, nil
}

// ToCommon views metadata of kind "common" (a batch utility's result) as a batch for a build
// (attn_metadata_to_common). Its tensors view this metadata's memory: keep the metadata open
// while the batch, and metadata built from it, are used.
func (m *Metadata) ToCommon() (*CommonMetadata, error) {
	release, err := m.acquire(nil)
	if err != nil {
		return nil, err
	}
	defer release()
	c := C.gattn_common_metadata_init()
	if err := m.lib.takeError(C.gattn_metadata_to_common(m.lib.api, m.ptr, &c)); err != nil {
		return nil, err
	}
	return commonFromC(&c, m), nil
}

// Close releases owned metadata (attn_metadata_destroy) and marks any metadata closed; later
// uses return an error. Closing twice does nothing. A build's metadata stays with its builder.
func (m *Metadata) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.owned {
		runtime.SetFinalizer(m, nil)
		C.gattn_metadata_destroy(m.lib.api, m.ptr)
		for _, a := range m.inputs {
			a.release()
		}
		m.inputs = nil
	}
	return nil
}

// TensorView is a tensor field of metadata: its descriptor (copied when it was read) and
// access to the elements, which live in libattn's memory (the builder's buffers, or the staged
// inputs). The copying accessors check that the metadata is still valid.
type TensorView struct {
	md   *Metadata
	name string
	d    descriptor
}

// Name is the field's name.
func (v *TensorView) Name() string { return v.name }

// Shape is the shape.
func (v *TensorView) Shape() []int64 { return append([]int64(nil), v.d.shape...) }

// Strides are the strides in elements (libattn always sets them for fields).
func (v *TensorView) Strides() []int64 {
	if v.d.strides == nil {
		return rowMajor(v.d.shape)
	}
	return append([]int64(nil), v.d.strides...)
}

// DType is the element type.
func (v *TensorView) DType() DType { return v.d.dtype }

// Device is where the elements live.
func (v *TensorView) Device() Device { return v.d.device }

// Data is the base address (add ByteOffset for the first element); for handing device memory
// to kernels.
func (v *TensorView) Data() uintptr { return uintptr(v.d.data) }

// ByteOffset is the offset of the first element from Data.
func (v *TensorView) ByteOffset() uint64 { return v.d.byteOffset }

// NumElements is the product of the shape.
func (v *TensorView) NumElements() int64 {
	n := int64(1)
	for _, s := range v.d.shape {
		n *= s
	}
	return n
}

// IsContiguous tells whether the elements are row-major without gaps.
func (v *TensorView) IsContiguous() bool {
	if v.d.strides == nil {
		return true
	}
	want := rowMajor(v.d.shape)
	for i, s := range v.d.strides {
		if v.d.shape[i] > 1 && s != want[i] {
			return false
		}
	}
	return true
}

// String gives "tensor (5, 64) int32 on cpu".
func (v *TensorView) String() string {
	return fmt.Sprintf("tensor %s %s on %s", shapeString(v.d.shape), v.d.dtype, v.d.device)
}

func rowMajor(shape []int64) []int64 {
	strides := make([]int64, len(shape))
	s := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	return strides
}

func (v *TensorView) check(dtype DType) error {
	if v.d.dtype != dtype {
		return invalid("field '%s' has dtype %s, not %s", v.name, v.d.dtype, dtype)
	}
	if !v.d.device.HostReadable() {
		return newError(ErrUnsupported, "field '%s' lives on %s, which the host cannot read", v.name, v.d.device)
	}
	return nil
}

// Values copies the elements of a tensor field in row-major order (following its strides);
// the dtype must be T's, and the memory host-readable.
func Values[T Element](v *TensorView) ([]T, error) {
	if err := v.check(DTypeOf[T]()); err != nil {
		return nil, err
	}
	release, err := v.md.acquire(nil)
	if err != nil {
		return nil, err
	}
	defer release()
	n := v.NumElements()
	out := make([]T, n)
	if n == 0 {
		return out, nil
	}
	base := unsafe.Add(v.d.data, v.d.byteOffset)
	if v.IsContiguous() {
		copy(out, unsafe.Slice((*T)(base), n))
		return out, nil
	}
	strides := v.d.strides
	idx := make([]int64, len(v.d.shape))
	size := int64(unsafe.Sizeof(out[0]))
	for k := range out {
		off := int64(0)
		for i, j := range idx {
			off += j * strides[i]
		}
		out[k] = *(*T)(unsafe.Add(base, off*size))
		for i := len(idx) - 1; i >= 0; i-- {
			if idx[i]++; idx[i] < v.d.shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, nil
}

// Int32s copies an int32 tensor's elements.
func (v *TensorView) Int32s() ([]int32, error) { return Values[int32](v) }

// Int64s copies an int64 tensor's elements.
func (v *TensorView) Int64s() ([]int64, error) { return Values[int64](v) }

// Float32s copies a float32 tensor's elements.
func (v *TensorView) Float32s() ([]float32, error) { return Values[float32](v) }

// UnsafeView is the elements of a contiguous host tensor field as a slice over libattn's
// memory, without a copy. It is valid only while the metadata is (until the builder's next
// build, update or Close; for owned metadata until its Close) and the binding cannot check
// uses after that: prefer Values unless the copy matters.
func UnsafeView[T Element](v *TensorView) ([]T, error) {
	if err := v.check(DTypeOf[T]()); err != nil {
		return nil, err
	}
	if !v.IsContiguous() {
		return nil, invalid("field '%s' is not contiguous; copy it with Values", v.name)
	}
	if err := v.md.Valid(); err != nil {
		return nil, err
	}
	n := v.NumElements()
	if n == 0 {
		return []T{}, nil
	}
	return unsafe.Slice((*T)(unsafe.Add(v.d.data, v.d.byteOffset)), n), nil
}
