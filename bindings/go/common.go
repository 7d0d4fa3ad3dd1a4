package attn

/*
#include "capi.h"
*/
import "C"

import (
	"sort"
	"unsafe"
)

// NewCommonMetadata is a host batch over Go slices: blockTable holds len(seqLens) rows of
// blockTableWidth block ids. NumReqs = len(seqLens), NumActualTokens = the last entry of
// queryStartLoc, MaxQueryLen and MaxSeqLen from the slices, causal. (CommonMetadata is generated
// from the header, in fields_gen.go: a zero Tensor is None, a nil MaxLogitsPerReq is None.)
func NewCommonMetadata(queryStartLoc, seqLens, blockTable []int32, blockTableWidth int, slotMapping []int64) (*CommonMetadata, error) {
	if len(blockTable) != len(seqLens)*blockTableWidth {
		return nil, invalid("block_table has %d entries, expected len(seq_lens) * block_table_width = %d * %d",
			len(blockTable), len(seqLens), blockTableWidth)
	}
	table, err := Matrix(blockTable, blockTableWidth)
	if err != nil {
		if len(blockTable) != 0 || blockTableWidth != 0 {
			return nil, err
		}
		table, _ = Shaped(blockTable, 0, 0)
	}
	c := &CommonMetadata{
		QueryStartLoc: Slice(queryStartLoc),
		SeqLens:       Slice(seqLens),
		NumReqs:       int64(len(seqLens)),
		BlockTable:    table,
		SlotMapping:   Slice(slotMapping),
		Causal:        true,
	}
	if n := len(queryStartLoc); n > 0 {
		c.NumActualTokens = int64(queryStartLoc[n-1])
	}
	for i := 1; i < len(queryStartLoc); i++ {
		if q := int64(queryStartLoc[i]) - int64(queryStartLoc[i-1]); q > c.MaxQueryLen {
			c.MaxQueryLen = q
		}
	}
	for _, s := range seqLens {
		if int64(s) > c.MaxSeqLen {
			c.MaxSeqLen = int64(s)
		}
	}
	return c, nil
}

// toC stages the batch in the arena. With seqLensOut, libattn may write seq_lens (a CUDA graph
// capture) and the Go slice is refreshed by arena.copyBack.
func (m *CommonMetadata) toC(a *arena, what string, seqLensOut bool) (*C.attn_common_metadata_t, error) {
	if m == nil {
		return nil, invalid("%s is nil", what)
	}
	p, err := a.mustAlloc(int(C.sizeof_attn_common_metadata_t), what)
	if err != nil {
		return nil, err
	}
	c := (*C.attn_common_metadata_t)(p)
	*c = C.gattn_common_metadata_init()
	for _, f := range m.tensorFields(c) {
		t, err := a.tensor(f.t, what+"."+f.name, seqLensOut && f.name == "seq_lens")
		if err != nil {
			return nil, err
		}
		*f.dst = t
	}
	m.plainToC(c)
	if m.keep != nil {
		a.keep = append(a.keep, m.keep)
	}
	return c, nil
}

// commonFromC describes a batch libattn returned (attn_metadata_to_common) with External
// tensors over its memory, keeping owner reachable.
func commonFromC(c *C.attn_common_metadata_t, owner any) *CommonMetadata {
	view := func(t *C.attn_tensor_t) Tensor {
		if t == nil {
			return Tensor{}
		}
		d := descriptorFromC(t)
		ext := External(uintptr(d.data), d.device, d.dtype, d.shape, d.strides)
		ext.byteOffset = d.byteOffset
		ext.keep = owner
		return ext
	}
	m := &CommonMetadata{keep: owner}
	m.plainFromC(c)
	for _, f := range m.tensorFields(c) {
		*f.t = view(*f.dst)
	}
	return m
}

// DocRanges turns vLLM 0.33's mm_req_doc_ranges (request index -> (start, end) ranges) into
// the ABI's (num_ranges, 3) int32 rows, requests in increasing order, each request's ranges in
// the given order: the value of CommonMetadata.MMReqDocRanges.
func DocRanges(ranges map[int32][][2]int32) Tensor {
	requests := make([]int32, 0, len(ranges))
	for r := range ranges {
		requests = append(requests, r)
	}
	sort.Slice(requests, func(i, j int) bool { return requests[i] < requests[j] })
	rows := make([]int32, 0, 3*len(ranges))
	for _, r := range requests {
		for _, span := range ranges[r] {
			rows = append(rows, r, span[0], span[1])
		}
	}
	t, _ := Shaped(rows, int64(len(rows)/3), 3)
	return t
}

// descriptor is a copy of a libattn tensor descriptor.
type descriptor struct {
	data       unsafe.Pointer
	device     Device
	dtype      DType
	shape      []int64
	strides    []int64
	byteOffset uint64
}

func descriptorFromC(t *C.attn_tensor_t) descriptor {
	d := descriptor{
		data:       t.data,
		device:     Device{DeviceType(t.device.device_type), int32(t.device.device_id)},
		dtype:      DType{DTypeCode(t.dtype.code), uint8(t.dtype.bits), uint16(t.dtype.lanes)},
		byteOffset: uint64(t.byte_offset),
	}
	n := int(t.ndim)
	if n > 0 && t.shape != nil {
		d.shape = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(t.shape)), n)...)
	} else {
		d.shape = []int64{}
	}
	if n > 0 && t.strides != nil {
		d.strides = append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(t.strides)), n)...)
	}
	return d
}
