package attn

/*
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// arena is C memory that holds what libattn reads at a call and what metadata keeps viewing
// after it: tensor descriptors, shapes, staged copies of Go slices, argument structs. cgo
// forbids C memory from holding Go pointers, so everything libattn sees lives here (or in
// memory the caller owns outside Go's heap). An arena is reference counted: a builder holds its
// staging arenas, and owned metadata (clones, utility results) holds the arenas it views.
type arena struct {
	block      unsafe.Pointer
	size, used int
	extra      []unsafe.Pointer // blocks added when the first one was full
	extraBytes int
	keep       []any       // owners of external memory the staged tensors point to
	writeBacks []writeBack // Go slices to refresh from their staged copies after the call
	refs       int32
}

// writeBack copies a staged tensor back into its Go slice.
type writeBack struct {
	dst, src unsafe.Pointer
	n        int
}

const arenaMinBlock = 4096

func newArena() *arena { return &arena{refs: 1} }

func (a *arena) retain() *arena {
	atomic.AddInt32(&a.refs, 1)
	return a
}

func (a *arena) shared() bool { return atomic.LoadInt32(&a.refs) > 1 }

func (a *arena) release() {
	if atomic.AddInt32(&a.refs, -1) == 0 {
		a.free()
	}
}

func (a *arena) free() {
	for _, p := range a.extra {
		C.free(p)
	}
	if a.block != nil {
		C.free(a.block)
	}
	a.block, a.size, a.used, a.extra, a.extraBytes = nil, 0, 0, nil, 0
	a.keep, a.writeBacks = nil, nil
}

// reset forgets everything allocated; the memory is reused (one block big enough for all of the
// last use, so that steady use allocates nothing).
func (a *arena) reset() {
	if len(a.extra) > 0 {
		want := 2 * (a.size + a.extraBytes)
		a.free()
		a.block = C.malloc(C.size_t(want))
		if a.block != nil {
			a.size = want
		}
	}
	a.used = 0
	for i := range a.keep {
		a.keep[i] = nil
	}
	a.keep = a.keep[:0]
	a.writeBacks = a.writeBacks[:0]
}

// alloc gives n zeroed bytes aligned to 16, or nil when C's allocator fails.
func (a *arena) alloc(n int) unsafe.Pointer {
	if n <= 0 {
		n = 1
	}
	off := (a.used + 15) &^ 15
	var p unsafe.Pointer
	switch {
	case a.block != nil && off+n <= a.size:
		p = unsafe.Add(a.block, off)
		a.used = off + n
	case a.block == nil && len(a.extra) == 0:
		size := arenaMinBlock
		for size < n {
			size *= 2
		}
		if a.block = C.malloc(C.size_t(size)); a.block == nil {
			return nil
		}
		a.size, a.used = size, n
		p = a.block
	default:
		if p = C.malloc(C.size_t(n)); p == nil {
			return nil
		}
		a.extra = append(a.extra, p)
		a.extraBytes += n
	}
	clear := unsafe.Slice((*byte)(p), n)
	for i := range clear {
		clear[i] = 0
	}
	return p
}

func (a *arena) mustAlloc(n int, what string) (unsafe.Pointer, error) {
	p := a.alloc(n)
	if p == nil {
		return nil, newError(ErrOutOfMemory, "cannot allocate %d bytes of C memory for %s", n, what)
	}
	return p, nil
}

// int64s copies v into the arena.
func (a *arena) int64s(v []int64, what string) (*C.int64_t, error) {
	p, err := a.mustAlloc(8*len(v), what)
	if err != nil {
		return nil, err
	}
	copy(unsafe.Slice((*int64)(p), len(v)), v)
	return (*C.int64_t)(p), nil
}

// int32s copies v into the arena.
func (a *arena) int32s(v []int32, what string) (*C.int32_t, error) {
	p, err := a.mustAlloc(4*len(v), what)
	if err != nil {
		return nil, err
	}
	copy(unsafe.Slice((*int32)(p), len(v)), v)
	return (*C.int32_t)(p), nil
}

// cstring copies s (checked for NUL bytes) into the arena.
func (a *arena) cstring(s, what string) (*C.char, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return nil, invalid("%s %q contains a NUL byte at %d", what, s, i)
		}
	}
	p, err := a.mustAlloc(len(s)+1, what)
	if err != nil {
		return nil, err
	}
	copy(unsafe.Slice((*byte)(p), len(s)), s)
	return (*C.char)(p), nil
}

// tensor stages t as an attn_tensor_t: external memory as it is, a Go slice copied into the
// arena (and registered for a copy back after the call when out is set). nil for the zero
// Tensor.
func (a *arena) tensor(t *Tensor, what string, out bool) (*C.attn_tensor_t, error) {
	if t.IsZero() {
		return nil, nil
	}
	if len(t.shape) > 8 {
		return nil, invalid("%s has %d dimensions; at most 8", what, len(t.shape))
	}
	desc := (*C.attn_tensor_t)(a.alloc(int(C.sizeof_attn_tensor_t)))
	if desc == nil {
		return nil, newError(ErrOutOfMemory, "cannot allocate C memory for %s", what)
	}
	desc.device.device_type = C.int32_t(t.device.Type)
	desc.device.device_id = C.int32_t(t.device.ID)
	desc.ndim = C.int32_t(len(t.shape))
	desc.dtype.code = C.uint8_t(t.dtype.Code)
	desc.dtype.bits = C.uint8_t(t.dtype.Bits)
	desc.dtype.lanes = C.uint16_t(t.dtype.Lanes)
	desc.byte_offset = C.uint64_t(t.byteOffset)
	var err error
	if desc.shape, err = a.int64s(t.shape, what); err != nil {
		return nil, err
	}
	if t.strides != nil {
		if desc.strides, err = a.int64s(t.strides, what); err != nil {
			return nil, err
		}
	}
	if t.external {
		*(*uintptr)(unsafe.Pointer(&desc.data)) = t.ptr
		if t.keep != nil {
			a.keep = append(a.keep, t.keep)
		}
		return desc, nil
	}
	n, err := extent(t.shape, t.strides)
	if err != nil {
		return nil, invalid("%s: %s", what, err.(*Error).Message)
	}
	if need := int64(t.byteOffset) + n*int64(t.dtype.Size()); n > 0 && need > int64(t.goBytes) {
		return nil, invalid("%s: shape %s (byte offset %d) needs %d bytes but its Go slice has %d",
			what, shapeString(t.shape), t.byteOffset, need, t.goBytes)
	}
	data, err := a.mustAlloc(t.goBytes, what)
	if err != nil {
		return nil, err
	}
	if t.goBytes > 0 {
		copy(unsafe.Slice((*byte)(data), t.goBytes), unsafe.Slice((*byte)(t.goPtr), t.goBytes))
		if out {
			a.writeBacks = append(a.writeBacks, writeBack{dst: t.goPtr, src: data, n: t.goBytes})
		}
	}
	desc.data = data
	return desc, nil
}

// copyBack refreshes the Go slices of the output tensors staged since the last reset.
func (a *arena) copyBack() {
	for _, w := range a.writeBacks {
		copy(unsafe.Slice((*byte)(w.dst), w.n), unsafe.Slice((*byte)(w.src), w.n))
	}
	a.writeBacks = a.writeBacks[:0]
}
