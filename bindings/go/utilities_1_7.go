package attn

// #include "capi.h"
import "C"

// The ABI 1.7 utilities: vLLM 0.33's CommonAttentionMetadata.naive_query_lens(),
// reshape_attn_output_for_spec_decode, and the runner decisions of v1/worker/cp_utils.py and
// ubatch_utils.py (docs/batch_utilities.md).

// FAVersionNone is the faVersion of ShouldSplitFA2DCPContextAttention for vLLM's None.
const FAVersionNone = 0

// CommonMetadataNaiveQueryLens is vLLM 0.33's CommonAttentionMetadata.naive_query_lens():
// query_start_loc[1:] - query_start_loc[:-1] into out (int32, at least NumReqs entries, where
// query_start_loc lives); the batch is validated as a split validates it.
func (l *Library) CommonMetadataNaiveQueryLens(c *CommonMetadata, out Tensor, stream Stream) error {
	if err := l.hasSince("attn_common_metadata_naive_query_lens", "1.7"); err != nil {
		return err
	}
	return withArena(func(a *arena) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		var o *C.attn_tensor_t
		if err := stageAll(a, []staged{{&out, "out", true, &o}}); err != nil {
			return err
		}
		err = l.takeError(C.gattn_common_metadata_naive_query_lens(l.api, cm, o, C.uintptr_t(stream)))
		if err == nil {
			a.copyBack()
		}
		return err
	})
}

// ReshapeAttnOutputForSpecDecode is vLLM's reshape_attn_output_for_spec_decode: a (batch *
// seqLen, heads, dim) view of a (batch, seqLen, heads, dim) attention output over the same
// memory (a 3-D output is returned as it is); refused where torch's view refuses.
func (l *Library) ReshapeAttnOutputForSpecDecode(attnOutput Tensor) (Tensor, error) {
	if err := l.hasSince("attn_reshape_attn_output_for_spec_decode", "1.7"); err != nil {
		return Tensor{}, err
	}
	var result Tensor
	err := withArena(func(a *arena) error {
		t, err := a.tensor(&attnOutput, "attn_output", false)
		if err != nil {
			return err
		}
		var out C.attn_tensor_t
		var shape, strides [3]C.int64_t
		if err := l.takeError(C.gattn_reshape_attn_output_for_spec_decode(l.api, t, &out, &shape[0], &strides[0])); err != nil {
			return err
		}
		result = attnOutput
		result.shape = make([]int64, 3)
		result.strides = make([]int64, 3)
		for i := range shape {
			result.shape[i], result.strides[i] = int64(shape[i]), int64(strides[i])
		}
		result.byteOffset = uint64(out.byte_offset)
		return nil
	})
	return result, err
}

// GetDCPDummyContextLen is vLLM 0.33's get_dcp_dummy_context_len: the context length of the
// dummy requests of a DCP warm-up or capture run (0 when none is needed).
func (l *Library) GetDCPDummyContextLen(dcpWorldSize, interleave int32, hasKVCacheConfig,
	createMixedBatch, isGraphCapturing, uniformDecode bool) (int64, error) {
	if err := l.hasSince("attn_get_dcp_dummy_context_len", "1.7"); err != nil {
		return 0, err
	}
	var out C.int64_t
	err := l.takeError(C.gattn_get_dcp_dummy_context_len(l.api, C.int32_t(dcpWorldSize), C.int32_t(interleave),
		cBool(hasKVCacheConfig), cBool(createMixedBatch), cBool(isGraphCapturing), cBool(uniformDecode), &out))
	return int64(out), err
}

// ShouldSplitFA2DCPContextAttention is vLLM 0.33's should_split_fa2_dcp_context_attention
// (faVersion FAVersionNone for None); the counts are SplitDCPContextQueries'.
func (l *Library) ShouldSplitFA2DCPContextAttention(faVersion int32, maxQueryLen, numReqs, numDecodeReqs,
	numContextPrefillReqs int64) (bool, error) {
	if err := l.hasSince("attn_should_split_fa2_dcp_context_attention", "1.7"); err != nil {
		return false, err
	}
	var out C.int32_t
	err := l.takeError(C.gattn_should_split_fa2_dcp_context_attention(l.api, C.int32_t(faVersion),
		C.int64_t(maxQueryLen), C.int64_t(numReqs), C.int64_t(numDecodeReqs), C.int64_t(numContextPrefillReqs), &out))
	return out != 0, err
}

// IsLastUbatchEmpty is vLLM 0.33's is_last_ubatch_empty: (padded // n) * (n - 1) >= orig.
func (l *Library) IsLastUbatchEmpty(origNumTokens, paddedNumTokens int64, numUbatches int32) (bool, error) {
	if err := l.hasSince("attn_is_last_ubatch_empty", "1.7"); err != nil {
		return false, err
	}
	var out C.int32_t
	err := l.takeError(C.gattn_is_last_ubatch_empty(l.api, C.int64_t(origNumTokens), C.int64_t(paddedNumTokens),
		C.int32_t(numUbatches), &out))
	return out != 0, err
}

// GetNumUbatches is vLLM 0.33's get_num_ubatches on ParallelConfig's enable_dbo and
// ubatch_size: 2 with DBO, ubatch_size when it is above 1, else 1.
func (l *Library) GetNumUbatches(enableDBO bool, ubatchSize int32) (int32, error) {
	if err := l.hasSince("attn_get_num_ubatches", "1.7"); err != nil {
		return 0, err
	}
	var out C.int32_t
	err := l.takeError(C.gattn_get_num_ubatches(l.api, cBool(enableDBO), C.int32_t(ubatchSize), &out))
	return int32(out), err
}

// CheckUbatchThresholds is vLLM 0.33's check_ubatch_thresholds on the ParallelConfig fields it
// reads: false without ubatching, else numTokens against the decode or prefill threshold.
func (l *Library) CheckUbatchThresholds(enableDBO bool, ubatchSize int32, decodeTokenThreshold,
	prefillTokenThreshold, numTokens int64, uniformDecode bool) (bool, error) {
	if err := l.hasSince("attn_check_ubatch_thresholds", "1.7"); err != nil {
		return false, err
	}
	var out C.int32_t
	err := l.takeError(C.gattn_check_ubatch_thresholds(l.api, cBool(enableDBO), C.int32_t(ubatchSize),
		C.int64_t(decodeTokenThreshold), C.int64_t(prefillTokenThreshold), C.int64_t(numTokens),
		cBool(uniformDecode), &out))
	return out != 0, err
}
