package attn

/*
#include "capi.h"
*/
import "C"

import (
	"strconv"
	"unsafe"
)

// The batch utilities: vLLM's utils.py, block_table.py and ubatch_utils.py functions. Those
// that produce tensors write into output Tensors the caller provides (a Go-slice output
// receives the values after the call); those that produce a new batch return owned Metadata of
// kind "common" (Close it; Metadata.ToCommon makes it a build's input) whose tensors view the
// binding's staged copies of the inputs and outputs, which the metadata keeps.

// BatchSplit is the request and token counts of a batch split (attn_batch_split_t).
type BatchSplit struct {
	NumDecodes       int64
	NumExtends       int64
	NumPrefills      int64
	NumDecodeTokens  int64
	NumExtendTokens  int64
	NumPrefillTokens int64
}

func splitFromC(s *C.attn_batch_split_t) BatchSplit {
	return BatchSplit{
		int64(s.num_decodes), int64(s.num_extends), int64(s.num_prefills),
		int64(s.num_decode_tokens), int64(s.num_extend_tokens), int64(s.num_prefill_tokens),
	}
}

// withArena runs f with a fresh arena that is freed afterwards.
func withArena(f func(a *arena) error) error {
	a := newArena()
	defer a.release()
	return f(a)
}

// SplitDecodesAndPrefills is vLLM's split_decodes_and_prefills on a reordered batch (decodes
// first); the extend counts are 0.
func (l *Library) SplitDecodesAndPrefills(c *CommonMetadata, decodeThreshold int32, requireUniform bool) (BatchSplit, error) {
	out := C.gattn_batch_split_init()
	err := withArena(func(a *arena) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_split_decodes_and_prefills(l.api, cm, C.int32_t(decodeThreshold), cBool(requireUniform), &out))
	})
	return splitFromC(&out), err
}

// SplitDecodesPrefillsAndExtends is vLLM's split_decodes_prefills_and_extends on a batch
// ordered decode -> extend -> prefill.
func (l *Library) SplitDecodesPrefillsAndExtends(c *CommonMetadata, decodeThreshold int32) (BatchSplit, error) {
	out := C.gattn_batch_split_init()
	err := withArena(func(a *arena) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_split_decodes_prefills_and_extends(l.api, cm, C.int32_t(decodeThreshold), &out))
	})
	return splitFromC(&out), err
}

// Swap is one swap_states(Src, Dst) of a batch reorder.
type Swap struct{ Src, Dst int32 }

// cInt32s points C at a Go slice of plain integers for the duration of a call (cgo allows
// that: the memory holds no Go pointers); an empty slice gets a valid one-element array.
func cInt32s(v []int32) *C.int32_t {
	if len(v) == 0 {
		v = make([]int32, 1)
	}
	return (*C.int32_t)(unsafe.Pointer(&v[0]))
}

// ReorderBatchToSplitDecodesAndPrefills is vLLM's reorder_batch_to_split_decodes_and_prefills:
// the swaps, in vLLM's order, that order a batch decode -> extend -> prefill. None means the
// batch is already ordered (vLLM returns False).
func (l *Library) ReorderBatchToSplitDecodesAndPrefills(numScheduledTokens, numComputedTokens []int32, decodeThreshold int32) ([]Swap, error) {
	if len(numScheduledTokens) != len(numComputedTokens) {
		return nil, invalid("num_scheduled_tokens has %d entries but num_computed_tokens has %d",
			len(numScheduledTokens), len(numComputedTokens))
	}
	n := len(numScheduledTokens)
	pairs := make([]int32, 2*n+2)
	var count C.int64_t
	err := l.takeError(C.gattn_reorder_batch_to_split_decodes_and_prefills(l.api,
		cInt32s(numScheduledTokens), cInt32s(numComputedTokens), C.int64_t(n), C.int32_t(decodeThreshold),
		cInt32s(pairs), C.int64_t(n+1), &count))
	if err != nil {
		return nil, err
	}
	return swapsOf(pairs, int(count)), nil
}

// Range is a half-open range [Start, End).
type Range struct{ Start, End int64 }

// SplitPrefillChunks is vLLM's split_prefill_chunks: greedy request ranges whose seq_lens sum
// to at most workspaceSize, each bound plus requestOffset.
func (l *Library) SplitPrefillChunks(seqLens []int32, workspaceSize, requestOffset int64) ([]Range, error) {
	n := len(seqLens)
	bounds := make([]int64, 2*n+2)
	var count C.int64_t
	err := l.takeError(C.gattn_split_prefill_chunks(l.api, cInt32s(seqLens), C.int64_t(n),
		C.int64_t(workspaceSize), C.int64_t(requestOffset),
		(*C.int64_t)(unsafe.Pointer(&bounds[0])), C.int64_t(n+1), &count))
	if err != nil {
		return nil, err
	}
	chunks := make([]Range, int(count))
	for k := range chunks {
		chunks[k] = Range{bounds[2*k], bounds[2*k+1]}
	}
	return chunks, nil
}

// stage stages tensors in order (nil entries of outs mark inputs).
type staged struct {
	t    *Tensor
	name string
	out  bool
	dst  **C.attn_tensor_t
}

func stageAll(a *arena, list []staged) error {
	for _, s := range list {
		d, err := a.tensor(s.t, s.name, s.out)
		if err != nil {
			return err
		}
		*s.dst = d
	}
	return nil
}

// GetDCPLocalSeqLens is vLLM's get_dcp_local_seq_lens: the KV tokens each decode-context-
// parallel rank stores, written into out ((n,) for one rank, (n, dcpSize) for DCPAllRanks).
func (l *Library) GetDCPLocalSeqLens(seqLens Tensor, dcpSize, dcpRank, interleave int32, out Tensor, stream Stream) error {
	return withArena(func(a *arena) error {
		var s, o *C.attn_tensor_t
		if err := stageAll(a, []staged{{&seqLens, "seq_lens", false, &s}, {&out, "out", true, &o}}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_get_dcp_local_seq_lens(l.api, s, C.int32_t(dcpSize), C.int32_t(dcpRank),
			C.int32_t(interleave), o, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
}

// ReshapeQueryForSpecDecode is vLLM's reshape_query_for_spec_decode: a (batchSize, tokens /
// batchSize, heads, dim) view of a (tokens, heads, dim) query, over the same memory.
func (l *Library) ReshapeQueryForSpecDecode(query Tensor, batchSize int64) (Tensor, error) {
	var result Tensor
	err := withArena(func(a *arena) error {
		q, err := a.tensor(&query, "query", false)
		if err != nil {
			return err
		}
		var out C.attn_tensor_t
		var shape, strides [4]C.int64_t
		if err := l.takeError(C.gattn_reshape_query_for_spec_decode(l.api, q, C.int64_t(batchSize), &out, &shape[0], &strides[0])); err != nil {
			return err
		}
		result = query
		result.shape = make([]int64, 4)
		result.strides = make([]int64, 4)
		for i := range shape {
			result.shape[i], result.strides[i] = int64(shape[i]), int64(strides[i])
		}
		result.byteOffset = uint64(out.byte_offset)
		return nil
	})
	return result, err
}

// SlotMappingArgs are the inputs and the output of ComputeSlotMapping
// (attn_slot_mapping_args_t).
type SlotMappingArgs struct {
	QueryStartLoc           Tensor // (num_reqs + 1,) int32
	QueryStartLocCPU        Tensor // host mirror, required for a CUDA QueryStartLoc
	NumReqs                 int64
	Positions               Tensor // (num_tokens,) int64
	PositionsCPU            Tensor
	BlockTable              Tensor // (>= num_reqs, width) int32
	BlockSize               int32
	DCPWorldSize            int32 // default 1
	DCPRank                 int32
	CPKVCacheInterleaveSize int32  // default 1
	SlotMapping             Tensor // output: (>= num_tokens,) int64
}

// NewSlotMappingArgs is ATTN_SLOT_MAPPING_ARGS_INIT (DCP size 1, interleave 1).
func NewSlotMappingArgs() SlotMappingArgs {
	c := C.gattn_slot_mapping_args_init()
	return SlotMappingArgs{
		DCPWorldSize: int32(c.dcp_world_size), DCPRank: int32(c.dcp_rank),
		CPKVCacheInterleaveSize: int32(c.cp_kv_cache_interleave_size),
	}
}

// ComputeSlotMapping is block_table.py's compute_slot_mapping, written into args.SlotMapping
// (entries past the tokens become PadSlotID).
func (l *Library) ComputeSlotMapping(args SlotMappingArgs, stream Stream) error {
	return withArena(func(a *arena) error {
		p, err := a.mustAlloc(int(C.sizeof_attn_slot_mapping_args_t), "args")
		if err != nil {
			return err
		}
		c := (*C.attn_slot_mapping_args_t)(p)
		*c = C.gattn_slot_mapping_args_init()
		if err := stageAll(a, []staged{
			{&args.QueryStartLoc, "args.query_start_loc", false, &c.query_start_loc},
			{&args.QueryStartLocCPU, "args.query_start_loc_cpu", false, &c.query_start_loc_cpu},
			{&args.Positions, "args.positions", false, &c.positions},
			{&args.PositionsCPU, "args.positions_cpu", false, &c.positions_cpu},
			{&args.BlockTable, "args.block_table", false, &c.block_table},
			{&args.SlotMapping, "args.slot_mapping", true, &c.slot_mapping},
		}); err != nil {
			return err
		}
		c.num_reqs = C.int64_t(args.NumReqs)
		c.block_size = C.int32_t(args.BlockSize)
		c.dcp_world_size = C.int32_t(args.DCPWorldSize)
		c.dcp_rank = C.int32_t(args.DCPRank)
		c.cp_kv_cache_interleave_size = C.int32_t(args.CPKVCacheInterleaveSize)
		err = l.takeError(C.gattn_compute_slot_mapping(l.api, c, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
}

// ComputeFlashinferKVMetadata is FlashInfer's paged KV layout (vLLM's
// _compute_flashinfer_kv_metadata) written into the three outputs; it returns the total pages.
// seqLensCPU may be the zero Tensor when seqLens is host memory.
func (l *Library) ComputeFlashinferKVMetadata(seqLens, seqLensCPU, blockTable Tensor, pageSize int32,
	outIndptr, outIndices, outLastPageLen Tensor, stream Stream) (int64, error) {
	var pages C.int64_t
	err := withArena(func(a *arena) error {
		var s, sc, bt, ip, ix, lp *C.attn_tensor_t
		if err := stageAll(a, []staged{
			{&seqLens, "seq_lens", false, &s}, {&seqLensCPU, "seq_lens_cpu", false, &sc},
			{&blockTable, "block_table", false, &bt}, {&outIndptr, "out_indptr", true, &ip},
			{&outIndices, "out_indices", true, &ix}, {&outLastPageLen, "out_last_page_len", true, &lp},
		}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_compute_flashinfer_kv_metadata(l.api, s, sc, bt, C.int32_t(pageSize), ip, ix, lp, &pages, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
	return int64(pages), err
}

// Conv1dInfo is what ComputeCausalConv1dMetadata reports (attn_conv1d_info_t).
type Conv1dInfo struct {
	Tot         int64 // programs of all prefill requests
	NumPrograms int64 // entries written to each buffer
}

// ComputeCausalConv1dMetadata is vLLM's compute_causal_conv1d_metadata (BLOCK_M = 8) for the
// prefill requests, written into the outputs; outNums may be the zero Tensor.
func (l *Library) ComputeCausalConv1dMetadata(queryStartLocPCPU, queryStartLocP, outBatchPtr,
	outTokenChunkOffsetPtr, outNums Tensor, stream Stream) (Conv1dInfo, error) {
	info := C.gattn_conv1d_info_init()
	err := withArena(func(a *arena) error {
		var qc, q, bp, tc, nums *C.attn_tensor_t
		if err := stageAll(a, []staged{
			{&queryStartLocPCPU, "query_start_loc_p_cpu", false, &qc}, {&queryStartLocP, "query_start_loc_p", false, &q},
			{&outBatchPtr, "out_batch_ptr", true, &bp}, {&outTokenChunkOffsetPtr, "out_token_chunk_offset_ptr", true, &tc},
			{&outNums, "out_nums", true, &nums},
		}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_compute_causal_conv1d_metadata(l.api, qc, q, bp, tc, nums, &info, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
	return Conv1dInfo{int64(info.tot), int64(info.num_programs)}, err
}

// ownedResult runs a call producing caller-owned metadata that views the arena's memory.
func (l *Library) ownedResult(f func(a *arena, out **C.attn_metadata_t) error) (*Metadata, error) {
	a := newArena()
	var out *C.attn_metadata_t
	if err := f(a, &out); err != nil {
		a.release()
		return nil, err
	}
	a.copyBack()
	return l.newMetadata(out, true, []*arena{a}), nil
}

// CommonMetadataUnpadded is vLLM's CommonAttentionMetadata.unpadded: the batch cut to its real
// requests and tokens, as owned metadata of kind "common".
func (l *Library) CommonMetadataUnpadded(c *CommonMetadata, numActualTokens, numActualReqs int64) (*Metadata, error) {
	return l.ownedResult(func(a *arena, out **C.attn_metadata_t) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_common_metadata_unpadded(l.api, cm, C.int64_t(numActualTokens), C.int64_t(numActualReqs), out))
	})
}

// MakeKVSharingFastPrefillCommonAttnMetadata is vLLM's
// make_kv_sharing_fast_prefill_common_attn_metadata: the batch of the tokens whose logits are
// needed (c.LogitsIndicesPadded, c.NumLogitsIndices), as owned metadata of kind "common".
// logitsIndicesCPU may be the zero Tensor when the indices are host memory.
func (l *Library) MakeKVSharingFastPrefillCommonAttnMetadata(c *CommonMetadata, logitsIndicesCPU,
	outQueryStartLoc, outQueryStartLocCPU Tensor, stream Stream) (*Metadata, error) {
	return l.ownedResult(func(a *arena, out **C.attn_metadata_t) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		var li, q, qc *C.attn_tensor_t
		if err := stageAll(a, []staged{
			{&logitsIndicesCPU, "logits_indices_cpu", false, &li},
			{&outQueryStartLoc, "out_query_start_loc", true, &q},
			{&outQueryStartLocCPU, "out_query_start_loc_cpu", true, &qc},
		}); err != nil {
			return err
		}
		return l.takeError(C.gattn_make_kv_sharing_fast_prefill_common_attn_metadata(l.api, cm, li, q, qc, out, C.uintptr_t(stream)))
	})
}

// MakeKVSharingFastPrefillCommonAttnMetadataEx is
// attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex (ABI 1.7): the batch as vLLM returns
// it. Where vLLM returns its argument (MaxQueryLen == 1, or no LogitsIndicesPadded) it returns c
// itself and a nil *Metadata, and the library allocates nothing; otherwise the new batch (the
// tokens whose logits are needed), viewing the returned owned metadata, which it keeps alive
// (Close it when done with the batch, or leave it to the garbage collector). The outputs are
// required even for a pass-through, as the C function requires them.
func (l *Library) MakeKVSharingFastPrefillCommonAttnMetadataEx(c *CommonMetadata, logitsIndicesCPU,
	outQueryStartLoc, outQueryStartLocCPU Tensor, stream Stream) (*CommonMetadata, *Metadata, error) {
	a := newArena()
	batch := C.gattn_common_metadata_init()
	var out *C.attn_metadata_t
	err := func() error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		var li, q, qc *C.attn_tensor_t
		if err := stageAll(a, []staged{
			{&logitsIndicesCPU, "logits_indices_cpu", false, &li},
			{&outQueryStartLoc, "out_query_start_loc", true, &q},
			{&outQueryStartLocCPU, "out_query_start_loc_cpu", true, &qc},
		}); err != nil {
			return err
		}
		return l.takeError(C.gattn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(l.api, cm, li, q, qc, &batch, &out, C.uintptr_t(stream)))
	}()
	if err != nil || out == nil {
		a.release() // an error, or the batch passed through: nothing views the arena
		if err != nil {
			return nil, nil, err
		}
		return c, nil, nil
	}
	a.copyBack()
	md := l.newMetadata(out, true, []*arena{a})
	return commonFromC(&batch, md), md, nil
}

// LocalAttentionNumVirtualBatches is the number V of local-attention virtual batches of a batch,
// to size the outputs of MakeLocalAttentionVirtualBatches.
func (l *Library) LocalAttentionNumVirtualBatches(attnChunkSize int32, c *CommonMetadata) (int64, error) {
	var v C.int64_t
	err := withArena(func(a *arena) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_local_attention_num_virtual_batches(l.api, C.int32_t(attnChunkSize), cm, &v))
	})
	return int64(v), err
}

// LocalAttentionOut is the output tensors of MakeLocalAttentionVirtualBatches for V virtual
// batches (attn_local_attention_out_t); NumComputedTokensCPU may be the zero Tensor.
type LocalAttentionOut struct {
	QueryStartLoc        Tensor // (>= V + 1,) int32
	QueryStartLocCPU     Tensor // (>= V + 1,) int32, host
	SeqLens              Tensor // (>= V,) int32
	SeqLensCPU           Tensor // (>= V,) int32, host
	NumComputedTokensCPU Tensor // (>= V,) int32, host
	BlockTable           Tensor // (>= V, >= chunk / block_size) int32
	VirtualReq           Tensor // (>= V,) int32
	VirtualBlockStart    Tensor // (>= V,) int32
}

// LocalAttentionSlices is host memory for the outputs of MakeLocalAttentionVirtualBatches:
// after the call the slices hold the values.
type LocalAttentionSlices struct {
	QueryStartLoc, QueryStartLocCPU, SeqLens, SeqLensCPU, NumComputedTokensCPU []int32
	BlockTable                                                                 []int32 // V rows of BlockTableCols
	BlockTableCols                                                             int
	VirtualReq, VirtualBlockStart                                              []int32
}

// NewLocalAttentionSlices allocates outputs for v virtual batches and a local block table of
// cols columns (attn_chunk_size / block_size).
func NewLocalAttentionSlices(v, cols int) *LocalAttentionSlices {
	return &LocalAttentionSlices{
		QueryStartLoc: make([]int32, v+1), QueryStartLocCPU: make([]int32, v+1),
		SeqLens: make([]int32, v), SeqLensCPU: make([]int32, v), NumComputedTokensCPU: make([]int32, v),
		BlockTable: make([]int32, v*cols), BlockTableCols: cols,
		VirtualReq: make([]int32, v), VirtualBlockStart: make([]int32, v),
	}
}

// Out describes the slices as output tensors.
func (s *LocalAttentionSlices) Out() (LocalAttentionOut, error) {
	table, err := Matrix(s.BlockTable, s.BlockTableCols)
	if err != nil {
		return LocalAttentionOut{}, err
	}
	return LocalAttentionOut{
		QueryStartLoc: Slice(s.QueryStartLoc), QueryStartLocCPU: Slice(s.QueryStartLocCPU),
		SeqLens: Slice(s.SeqLens), SeqLensCPU: Slice(s.SeqLensCPU),
		NumComputedTokensCPU: Slice(s.NumComputedTokensCPU), BlockTable: table,
		VirtualReq: Slice(s.VirtualReq), VirtualBlockStart: Slice(s.VirtualBlockStart),
	}, nil
}

// MakeLocalAttentionVirtualBatches is vLLM's make_local_attention_virtual_batches: every request
// split into its local attention chunks, as owned metadata of kind "common" (num_reqs = V)
// whose tensors view the outputs.
func (l *Library) MakeLocalAttentionVirtualBatches(attnChunkSize int32, c *CommonMetadata, blockSize int32,
	outputs LocalAttentionOut, stream Stream) (*Metadata, error) {
	return l.ownedResult(func(a *arena, out **C.attn_metadata_t) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		p, err := a.mustAlloc(int(C.sizeof_attn_local_attention_out_t), "outputs")
		if err != nil {
			return err
		}
		o := (*C.attn_local_attention_out_t)(p)
		*o = C.gattn_local_attention_out_init()
		if err := stageAll(a, []staged{
			{&outputs.QueryStartLoc, "outputs.query_start_loc", true, &o.query_start_loc},
			{&outputs.QueryStartLocCPU, "outputs.query_start_loc_cpu", true, &o.query_start_loc_cpu},
			{&outputs.SeqLens, "outputs.seq_lens", true, &o.seq_lens},
			{&outputs.SeqLensCPU, "outputs.seq_lens_cpu", true, &o.seq_lens_cpu},
			{&outputs.NumComputedTokensCPU, "outputs.num_computed_tokens_cpu", true, &o.num_computed_tokens_cpu},
			{&outputs.BlockTable, "outputs.block_table", true, &o.block_table},
			{&outputs.VirtualReq, "outputs.virtual_req", true, &o.virtual_req},
			{&outputs.VirtualBlockStart, "outputs.virtual_block_start", true, &o.virtual_block_start},
		}); err != nil {
			return err
		}
		return l.takeError(C.gattn_make_local_attention_virtual_batches(l.api, C.int32_t(attnChunkSize), cm,
			C.int32_t(blockSize), o, out, C.uintptr_t(stream)))
	})
}

// RemapLocalBlockTable applies the local-attention remap to another block table:
// out[v][j] = blockTable[virtualReq[v]][min(virtualBlockStart[v] + j, width - 1)].
func (l *Library) RemapLocalBlockTable(blockTable, virtualReq, virtualBlockStart Tensor, numVirtualBatches int64,
	out Tensor, stream Stream) error {
	return withArena(func(a *arena) error {
		var bt, vr, vb, o *C.attn_tensor_t
		if err := stageAll(a, []staged{
			{&blockTable, "block_table", false, &bt}, {&virtualReq, "virtual_req", false, &vr},
			{&virtualBlockStart, "virtual_block_start", false, &vb}, {&out, "out", true, &o},
		}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_remap_local_block_table(l.api, bt, vr, vb, C.int64_t(numVirtualBatches), o, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
}

// SliceQueryStartLocs is ubatch_utils' slice_query_start_locs: out[k] =
// queryStartLoc[start + k] - queryStartLoc[start] for requests [start, stop).
func (l *Library) SliceQueryStartLocs(queryStartLoc Tensor, requestStart, requestStop int64, out Tensor, stream Stream) error {
	return withArena(func(a *arena) error {
		var q, o *C.attn_tensor_t
		if err := stageAll(a, []staged{{&queryStartLoc, "query_start_loc", false, &q}, {&out, "out", true, &o}}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_slice_query_start_locs(l.api, q, C.int64_t(requestStart), C.int64_t(requestStop), o, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
}

// UbatchSlice is a micro-batch: a request range and a token range, both end-exclusive.
type UbatchSlice struct {
	RequestStart, RequestStop int64
	TokenStart, TokenStop     int64
}

func (s UbatchSlice) toC() C.attn_ubatch_slice_t {
	c := C.gattn_ubatch_slice_init()
	c.request_start, c.request_stop = C.int64_t(s.RequestStart), C.int64_t(s.RequestStop)
	c.token_start, c.token_stop = C.int64_t(s.TokenStart), C.int64_t(s.TokenStop)
	return c
}

func sliceFromC(c *C.attn_ubatch_slice_t) UbatchSlice {
	return UbatchSlice{int64(c.request_start), int64(c.request_stop), int64(c.token_start), int64(c.token_stop)}
}

// MaybeCreateUbatchSlices is vLLM's maybe_create_ubatch_slices(should_ubatch=True, ...): the
// micro-batch slices and the padded slices. splitPoint 0 means numTokensPadded / numUbatches.
func (l *Library) MaybeCreateUbatchSlices(numScheduledTokens []int32, numTokensPadded, numReqsPadded int64,
	numUbatches int32, splitPoint int64) (slices, padded []UbatchSlice, err error) {
	return ubatchSlices(numUbatches, func(cs, cp *C.attn_ubatch_slice_t) error {
		return l.takeError(C.gattn_maybe_create_ubatch_slices(l.api, cInt32s(numScheduledTokens),
			C.int64_t(len(numScheduledTokens)), C.int64_t(numTokensPadded), C.int64_t(numReqsPadded),
			C.int32_t(numUbatches), C.int64_t(splitPoint), cs, cp))
	})
}

// ubatchSlices runs one of the maybe_create_ubatch_slices calls on numUbatches initialized
// slices and padded slices and converts what it wrote.
func ubatchSlices(numUbatches int32, call func(cs, cp *C.attn_ubatch_slice_t) error) (slices,
	padded []UbatchSlice, err error) {
	n := int(numUbatches)
	if n < 1 {
		n = 1 // libattn names the bad count
	}
	cs := make([]C.attn_ubatch_slice_t, n)
	cp := make([]C.attn_ubatch_slice_t, n)
	for i := range cs {
		cs[i], cp[i] = C.gattn_ubatch_slice_init(), C.gattn_ubatch_slice_init()
	}
	if err := call(&cs[0], &cp[0]); err != nil {
		return nil, nil, err
	}
	slices, padded = make([]UbatchSlice, n), make([]UbatchSlice, n)
	for i := range cs {
		slices[i], padded[i] = sliceFromC(&cs[i]), sliceFromC(&cp[i])
	}
	return slices, padded, nil
}

// UbatchOut is the output tensors of one micro-batch's metadata (n = its requests).
type UbatchOut struct {
	QueryStartLoc    Tensor // (>= n + 1,) int32 where the batch lives
	QueryStartLocCPU Tensor // (>= n + 1,) int32, host
	SeqLens          Tensor // (>= n,) int32 where the batch lives
	SeqLensCPU       Tensor // optional (>= n,) int32, host
}

// NewUbatchOut is host outputs for a micro-batch of up to n requests.
func NewUbatchOut(n int) UbatchOut {
	return UbatchOut{
		QueryStartLoc: Slice(make([]int32, n+1)), QueryStartLocCPU: Slice(make([]int32, n+1)),
		SeqLens: Slice(make([]int32, n)), SeqLensCPU: Slice(make([]int32, n)),
	}
}

func (o *UbatchOut) stage(a *arena, dst *C.attn_ubatch_out_t, what string) error {
	*dst = C.gattn_ubatch_out_init()
	return stageAll(a, []staged{
		{&o.QueryStartLoc, what + ".query_start_loc", true, &dst.query_start_loc},
		{&o.QueryStartLocCPU, what + ".query_start_loc_cpu", true, &dst.query_start_loc_cpu},
		{&o.SeqLens, what + ".seq_lens", true, &dst.seq_lens},
		{&o.SeqLensCPU, what + ".seq_lens_cpu", true, &dst.seq_lens_cpu},
	})
}

// MakeMetadataWithSlice is ubatch_utils' _make_metadata_with_slice: the batch of one
// micro-batch, as owned metadata of kind "common".
func (l *Library) MakeMetadataWithSlice(c *CommonMetadata, slice UbatchSlice, outputs UbatchOut, stream Stream) (*Metadata, error) {
	return l.ownedResult(func(a *arena, out **C.attn_metadata_t) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		p, err := a.mustAlloc(int(C.sizeof_attn_ubatch_out_t), "outputs")
		if err != nil {
			return err
		}
		o := (*C.attn_ubatch_out_t)(p)
		if err := outputs.stage(a, o, "outputs"); err != nil {
			return err
		}
		cs := slice.toC()
		return l.takeError(C.gattn_make_metadata_with_slice(l.api, cm, &cs, o, out, C.uintptr_t(stream)))
	})
}

// SplitAttnMetadata is ubatch_utils' split_attn_metadata: MakeMetadataWithSlice for each slice,
// with one output set per slice. On failure nothing is returned (the message names the slice).
func (l *Library) SplitAttnMetadata(c *CommonMetadata, slices []UbatchSlice, outputs []UbatchOut, stream Stream) ([]*Metadata, error) {
	if len(slices) != len(outputs) {
		return nil, invalid("%d slices but %d output sets", len(slices), len(outputs))
	}
	if len(slices) == 0 {
		return []*Metadata{}, nil
	}
	a := newArena()
	defer a.release()
	cm, err := c.toC(a, "common", false)
	if err != nil {
		return nil, err
	}
	n := len(slices)
	ps, err := a.mustAlloc(n*int(C.sizeof_attn_ubatch_slice_t), "slices")
	if err != nil {
		return nil, err
	}
	po, err := a.mustAlloc(n*int(C.sizeof_attn_ubatch_out_t), "outputs")
	if err != nil {
		return nil, err
	}
	cs := unsafe.Slice((*C.attn_ubatch_slice_t)(ps), n)
	co := unsafe.Slice((*C.attn_ubatch_out_t)(po), n)
	for i := range slices {
		cs[i] = slices[i].toC()
		if err := outputs[i].stage(a, &co[i], "outputs["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	outs := make([]*C.attn_metadata_t, n)
	if err := l.takeError(C.gattn_split_attn_metadata(l.api, cm, &cs[0], C.size_t(n), &co[0], &outs[0], C.uintptr_t(stream))); err != nil {
		return nil, err
	}
	a.copyBack()
	result := make([]*Metadata, n)
	for i, p := range outs {
		result[i] = l.newMetadata(p, true, []*arena{a.retain()})
	}
	return result, nil
}

// swapsOf reads the first count (src, dst) pairs the reorder functions wrote.
func swapsOf(pairs []int32, count int) []Swap {
	swaps := make([]Swap, count)
	for k := range swaps {
		swaps[k] = Swap{pairs[2*k], pairs[2*k+1]}
	}
	return swaps
}
