package attn

/*
#include "capi.h"
*/
import "C"

import (
	"sort"
	"unsafe"
)

// CommonMetadata is a batch as the scheduler describes it (attn_common_metadata_t, vLLM's
// CommonAttentionMetadata). NewCommonMetadata fills it from Go slices; every field may then be
// changed (padding, host mirrors, the optional tensors). A zero Tensor is None.
type CommonMetadata struct {
	QueryStartLoc    Tensor // (num_reqs + 1,) int32
	QueryStartLocCPU Tensor // host mirror, required on CUDA builders
	SeqLens          Tensor // (num_reqs,) int32
	SeqLensCPU       Tensor
	NumReqs          int64
	NumActualTokens  int64
	MaxQueryLen      int64
	MaxSeqLen        int64
	BlockTable       Tensor // (num_reqs, max_blocks) int32
	SlotMapping      Tensor // (>= num_actual_tokens,) int64
	Causal           bool
	// LogitsIndicesPadded and NumLogitsIndices are the fast-prefill inputs.
	LogitsIndicesPadded    Tensor
	NumLogitsIndices       int64
	EncoderSeqLens         Tensor
	EncoderSeqLensCPU      Tensor
	DCPLocalSeqLens        Tensor
	DCPLocalSeqLensCPU     Tensor
	LogitsIndicesPaddedCPU Tensor // ABI 1.1

	// ABI 1.2: the build() keyword arguments vLLM passes the Mamba family, and
	// CommonAttentionMetadata.is_prefilling (a zero Tensor is None). IsPrefilling is (num_reqs,)
	// bool/int8/uint8/int32 in host memory; vLLM 0.33's MAMBA2, MAMBA1 and SHORT_CONV require it.
	NumAcceptedTokens       Tensor // (num_reqs,) int32 where the batch lives
	NumDecodeDraftTokensCPU Tensor // (num_reqs,) int32, host; -1 for rows that are not spec decodes
	NumDecodeDraftTokens    Tensor // its mirror where the batch lives
	IsPrefilling            Tensor // (num_reqs,), host

	// ABI 1.4: vLLM 0.33.0's CommonAttentionMetadata fields (a zero Tensor / nil is None).
	// SeqLensCPUUpperBound is 0.33's host seq_lens bound: (num_reqs,) int32, may exceed the
	// device value on async spec-decode rows; builders read it when no exact lengths are given.
	SeqLensCPUUpperBound         Tensor
	DCPLocalSeqLensCPUUpperBound Tensor // (num_reqs,) int32, host
	Positions                    Tensor // (>= num_actual_tokens,) int64 where the batch lives
	CausalPerRequest             Tensor // (num_reqs,) int32: 0.33's tensor `causal`
	MaxLogitsPerReq              *int64 // nil = None
	ReqIdx                       Tensor // (num_reqs,) int32/int64, host
	MMReqDocRanges               Tensor // (num_ranges, 3) int32 rows (request, start, end), host; see DocRanges
	RSWAPrefixLens               Tensor // (num_reqs,) int32, host or where the batch lives
	ReplaySSMDecodeBaseCPU       Tensor // (num_reqs,) int32, host
	ReplayStart                  Tensor // ABI 1.7: (num_reqs,) int32 where the batch lives (sparse SWA's build(replay_start=...))

	keep any // the metadata whose memory the tensors view (Metadata.ToCommon)
}

// NewCommonMetadata is a host batch over Go slices: blockTable holds len(seqLens) rows of
// blockTableWidth block ids. NumReqs = len(seqLens), NumActualTokens = the last entry of
// queryStartLoc, MaxQueryLen and MaxSeqLen from the slices, causal.
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
	tensors := []struct {
		dst  **C.attn_tensor_t
		t    *Tensor
		name string
		out  bool
	}{
		{&c.query_start_loc, &m.QueryStartLoc, "query_start_loc", false},
		{&c.query_start_loc_cpu, &m.QueryStartLocCPU, "query_start_loc_cpu", false},
		{&c.seq_lens, &m.SeqLens, "seq_lens", seqLensOut},
		{&c.seq_lens_cpu, &m.SeqLensCPU, "seq_lens_cpu", false},
		{&c.block_table_tensor, &m.BlockTable, "block_table_tensor", false},
		{&c.slot_mapping, &m.SlotMapping, "slot_mapping", false},
		{&c.logits_indices_padded, &m.LogitsIndicesPadded, "logits_indices_padded", false},
		{&c.encoder_seq_lens, &m.EncoderSeqLens, "encoder_seq_lens", false},
		{&c.encoder_seq_lens_cpu, &m.EncoderSeqLensCPU, "encoder_seq_lens_cpu", false},
		{&c.dcp_local_seq_lens, &m.DCPLocalSeqLens, "dcp_local_seq_lens", false},
		{&c.dcp_local_seq_lens_cpu, &m.DCPLocalSeqLensCPU, "dcp_local_seq_lens_cpu", false},
		{&c.logits_indices_padded_cpu, &m.LogitsIndicesPaddedCPU, "logits_indices_padded_cpu", false},
		{&c.num_accepted_tokens, &m.NumAcceptedTokens, "num_accepted_tokens", false},
		{&c.num_decode_draft_tokens_cpu, &m.NumDecodeDraftTokensCPU, "num_decode_draft_tokens_cpu", false},
		{&c.num_decode_draft_tokens, &m.NumDecodeDraftTokens, "num_decode_draft_tokens", false},
		{&c.is_prefilling, &m.IsPrefilling, "is_prefilling", false},
		{&c.seq_lens_cpu_upper_bound, &m.SeqLensCPUUpperBound, "seq_lens_cpu_upper_bound", false},
		{&c.dcp_local_seq_lens_cpu_upper_bound, &m.DCPLocalSeqLensCPUUpperBound, "dcp_local_seq_lens_cpu_upper_bound", false},
		{&c.positions, &m.Positions, "positions", false},
		{&c.causal_per_request, &m.CausalPerRequest, "causal_per_request", false},
		{&c.req_idx, &m.ReqIdx, "req_idx", false},
		{&c.mm_req_doc_ranges, &m.MMReqDocRanges, "mm_req_doc_ranges", false},
		{&c.rswa_prefix_lens, &m.RSWAPrefixLens, "rswa_prefix_lens", false},
		{&c.replayssm_decode_base_cpu, &m.ReplaySSMDecodeBaseCPU, "replayssm_decode_base_cpu", false},
		{&c.replay_start, &m.ReplayStart, "replay_start", false},
	}
	for _, f := range tensors {
		t, err := a.tensor(f.t, what+"."+f.name, f.out)
		if err != nil {
			return nil, err
		}
		*f.dst = t
	}
	c.num_reqs = C.int64_t(m.NumReqs)
	c.num_actual_tokens = C.int64_t(m.NumActualTokens)
	c.max_query_len = C.int64_t(m.MaxQueryLen)
	c.max_seq_len = C.int64_t(m.MaxSeqLen)
	c.causal = cBool(m.Causal)
	c.num_logits_indices = C.int64_t(m.NumLogitsIndices)
	if m.MaxLogitsPerReq != nil {
		c.max_logits_per_req = C.int64_t(*m.MaxLogitsPerReq)
	}
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
	var maxLogits *int64
	if c.max_logits_per_req >= 0 {
		v := int64(c.max_logits_per_req)
		maxLogits = &v
	}
	return &CommonMetadata{
		SeqLensCPUUpperBound:         view(c.seq_lens_cpu_upper_bound),
		DCPLocalSeqLensCPUUpperBound: view(c.dcp_local_seq_lens_cpu_upper_bound),
		Positions:                    view(c.positions),
		CausalPerRequest:             view(c.causal_per_request),
		MaxLogitsPerReq:              maxLogits,
		ReqIdx:                       view(c.req_idx),
		MMReqDocRanges:               view(c.mm_req_doc_ranges),
		RSWAPrefixLens:               view(c.rswa_prefix_lens),
		ReplaySSMDecodeBaseCPU:       view(c.replayssm_decode_base_cpu),
		ReplayStart:                  view(c.replay_start),
		QueryStartLoc:                view(c.query_start_loc),
		QueryStartLocCPU:             view(c.query_start_loc_cpu),
		SeqLens:                      view(c.seq_lens),
		SeqLensCPU:                   view(c.seq_lens_cpu),
		NumReqs:                      int64(c.num_reqs),
		NumActualTokens:              int64(c.num_actual_tokens),
		MaxQueryLen:                  int64(c.max_query_len),
		MaxSeqLen:                    int64(c.max_seq_len),
		BlockTable:                   view(c.block_table_tensor),
		SlotMapping:                  view(c.slot_mapping),
		Causal:                       c.causal != 0,
		LogitsIndicesPadded:          view(c.logits_indices_padded),
		NumLogitsIndices:             int64(c.num_logits_indices),
		EncoderSeqLens:               view(c.encoder_seq_lens),
		EncoderSeqLensCPU:            view(c.encoder_seq_lens_cpu),
		DCPLocalSeqLens:              view(c.dcp_local_seq_lens),
		DCPLocalSeqLensCPU:           view(c.dcp_local_seq_lens_cpu),
		LogitsIndicesPaddedCPU:       view(c.logits_indices_padded_cpu),
		NumAcceptedTokens:            view(c.num_accepted_tokens),
		NumDecodeDraftTokensCPU:      view(c.num_decode_draft_tokens_cpu),
		NumDecodeDraftTokens:         view(c.num_decode_draft_tokens),
		IsPrefilling:                 view(c.is_prefilling),
		keep:                         owner,
	}
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
