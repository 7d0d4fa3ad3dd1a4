package attn

/*
#include "capi.h"
*/
import "C"

import "unsafe"

// The batch utilities ABI 1.4 added (vLLM 0.33.0's semantics).

// SplitOptions are the keyword arguments of vLLM 0.33's split_decodes_and_prefills
// (attn_split_options_t).
type SplitOptions struct {
	DecodeThreshold int32 // the longest query counted as a decode (default 1)
	RequireUniform  bool  // decodes share the first query length (full CUDA graphs)
	// TreatShortExtendsAsDecodes (default true) counts rows still in their prompt with a short
	// query as decodes; false makes every row the batch's is_prefilling marks a prefill.
	TreatShortExtendsAsDecodes bool
}

// NewSplitOptions is ATTN_SPLIT_OPTIONS_INIT: vLLM's defaults.
func NewSplitOptions() SplitOptions {
	c := C.gattn_split_options_init()
	return SplitOptions{DecodeThreshold: int32(c.decode_threshold), RequireUniform: c.require_uniform != 0,
		TreatShortExtendsAsDecodes: c.treat_short_extends_as_decodes != 0}
}

// SplitDecodesAndPrefillsEx is vLLM 0.33's split_decodes_and_prefills with every keyword
// argument (attn_split_decodes_and_prefills_ex); the extend counts are 0.
func (l *Library) SplitDecodesAndPrefillsEx(c *CommonMetadata, opts SplitOptions) (BatchSplit, error) {
	if err := l.hasSince("attn_split_decodes_and_prefills_ex", "1.4"); err != nil {
		return BatchSplit{}, err
	}
	out := C.gattn_batch_split_init()
	o := C.gattn_split_options_init()
	o.decode_threshold = C.int32_t(opts.DecodeThreshold)
	o.require_uniform = cBool(opts.RequireUniform)
	o.treat_short_extends_as_decodes = cBool(opts.TreatShortExtendsAsDecodes)
	err := withArena(func(a *arena) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_split_decodes_and_prefills_ex(l.api, cm, &o, &out))
	})
	return splitFromC(&out), err
}

// ReorderBatchToSplitDecodesAndPrefillsV2 is vLLM 0.33's
// reorder_batch_to_split_decodes_and_prefills: the swaps, in vLLM's order, that order a batch
// decode -> short extend -> long extend -> prefill. None means the batch is already ordered.
func (l *Library) ReorderBatchToSplitDecodesAndPrefillsV2(numScheduledTokens, numComputedTokens,
	numPromptTokens []int32, decodeThreshold int32) ([]Swap, error) {
	if err := l.hasSince("attn_reorder_batch_to_split_decodes_and_prefills_v2", "1.4"); err != nil {
		return nil, err
	}
	n := len(numScheduledTokens)
	if len(numComputedTokens) != n || len(numPromptTokens) != n {
		return nil, invalid("num_scheduled_tokens, num_computed_tokens and num_prompt_tokens have %d, %d and %d entries",
			n, len(numComputedTokens), len(numPromptTokens))
	}
	pairs := make([]int32, 2*n+2)
	var count C.int64_t
	err := l.takeError(C.gattn_reorder_batch_to_split_decodes_and_prefills_v2(l.api,
		cInt32s(numScheduledTokens), cInt32s(numComputedTokens), cInt32s(numPromptTokens), C.int64_t(n),
		C.int32_t(decodeThreshold), cInt32s(pairs), C.int64_t(n+1), &count))
	if err != nil {
		return nil, err
	}
	return swapsOf(pairs, int(count)), nil
}

// MaybeCreateUbatchSlicesAt is vLLM 0.33's maybe_create_ubatch_slices(should_ubatch=True, ...)
// with a list of numUbatches - 1 token split points (attn_maybe_create_ubatch_slices_ex); nil
// is vLLM's None (numTokensPadded / numUbatches tokens per split).
func (l *Library) MaybeCreateUbatchSlicesAt(numScheduledTokens []int32, numTokensPadded, numReqsPadded int64,
	numUbatches int32, splitPoints []int64) (slices, padded []UbatchSlice, err error) {
	if err := l.hasSince("attn_maybe_create_ubatch_slices_ex", "1.4"); err != nil {
		return nil, nil, err
	}
	var points *C.int64_t
	if len(splitPoints) > 0 {
		points = (*C.int64_t)(unsafe.Pointer(&splitPoints[0]))
	}
	return ubatchSlices(numUbatches, func(cs, cp *C.attn_ubatch_slice_t) error {
		return l.takeError(C.gattn_maybe_create_ubatch_slices_ex(l.api, cInt32s(numScheduledTokens),
			C.int64_t(len(numScheduledTokens)), C.int64_t(numTokensPadded), C.int64_t(numReqsPadded),
			C.int32_t(numUbatches), points, C.int64_t(len(splitPoints)), cs, cp))
	})
}

// ComputeTokenToReqIndices is vLLM 0.33's compute_token_to_req_indices: out[t] is the request
// of token t for t < numMappedTokens, 0 up to numTokens (entries after are not written). It
// reads only queryStartLoc, host or CUDA (one kernel on stream).
func (l *Library) ComputeTokenToReqIndices(queryStartLoc, out Tensor, numMappedTokens, numTokens int64,
	stream Stream) error {
	if err := l.hasSince("attn_compute_token_to_req_indices", "1.4"); err != nil {
		return err
	}
	return withArena(func(a *arena) error {
		var q, o *C.attn_tensor_t
		if err := stageAll(a, []staged{{&queryStartLoc, "query_start_loc", false, &q}, {&out, "out", true, &o}}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_compute_token_to_req_indices(l.api, q, o, C.int64_t(numMappedTokens),
			C.int64_t(numTokens), C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
}

// ComputeMMPrefixRangeTensor is vLLM 0.33's compute_mm_prefix_range_tensor
// (attn_compute_mm_prefix_range_tensor): docRanges is the (num_ranges, 3) int32 host tensor of
// (request, start, end) rows (the zero Tensor is vLLM's None). It returns the zero-padded
// (numSeqs, maxRanges, 2) ranges, or nil for vLLM's None.
func (l *Library) ComputeMMPrefixRangeTensor(docRanges Tensor, numSeqs int64) ([]int32, int64, error) {
	if err := l.hasSince("attn_compute_mm_prefix_range_tensor", "1.4"); err != nil {
		return nil, 0, err
	}
	var width C.int64_t
	err := withArena(func(a *arena) error {
		r, err := a.tensor(&docRanges, "mm_req_doc_ranges", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_compute_mm_prefix_range_tensor(l.api, r, C.int64_t(numSeqs), nil, &width))
	})
	if err != nil || width == 0 {
		return nil, 0, err
	}
	out := make([]int32, numSeqs*int64(width)*2)
	shaped, err := Shaped(out, numSeqs, int64(width), 2)
	if err != nil {
		return nil, 0, err
	}
	err = withArena(func(a *arena) error {
		var r, o *C.attn_tensor_t
		if err := stageAll(a, []staged{{&docRanges, "mm_req_doc_ranges", false, &r}, {&shaped, "out", true, &o}}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_compute_mm_prefix_range_tensor(l.api, r, C.int64_t(numSeqs), o, &width))
		if err == nil {
			a.copyBack()
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return out, int64(width), nil
}

// FillMMPrefixQueryRanges is vLLM 0.33's fill_mm_prefix_query_ranges
// (attn_fill_mm_prefix_query_ranges): into out, a (max_tokens, 2) int32 host tensor, the
// [start, end] range of each scheduled query token ((-1, -1) outside every range). It returns
// the rows written: 0 (out untouched) when no range covers a scheduled token.
func (l *Library) FillMMPrefixQueryRanges(out, docRanges, queryStartLocCPU, seqLensCPU Tensor) (int64, error) {
	if err := l.hasSince("attn_fill_mm_prefix_query_ranges", "1.4"); err != nil {
		return 0, err
	}
	var rows C.int64_t
	err := withArena(func(a *arena) error {
		var o, r, q, s *C.attn_tensor_t
		if err := stageAll(a, []staged{{&out, "out", true, &o}, {&docRanges, "mm_req_doc_ranges", false, &r},
			{&queryStartLocCPU, "query_start_loc_cpu", false, &q}, {&seqLensCPU, "seq_lens_cpu", false, &s}}); err != nil {
			return err
		}
		err := l.takeError(C.gattn_fill_mm_prefix_query_ranges(l.api, o, r, q, s, &rows))
		if err == nil {
			a.copyBack()
		}
		return err
	})
	return int64(rows), err
}
