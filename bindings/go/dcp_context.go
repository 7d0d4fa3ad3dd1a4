package attn

// #include "capi.h"
import "C"

// DCPContextSplit is what vLLM 0.33's split_dcp_context_queries returns: the decode rows and the
// context-bearing extend rows of a batch ordered decode -> extend -> prefill (pure prefills are
// in neither).
type DCPContextSplit struct {
	NumDecodeReqs, NumPrefillReqs, NumDecodeTokens, NumPrefillTokens int64
}

// ShouldSkipDCPContextAttention is vLLM 0.33's should_skip_dcp_context_attention: true when the
// largest global context length (seq_len - query_len per request) is 0, so every DCP rank skips
// the context attention. contextKVLens is a host int32 vector with at least one entry.
func (l *Library) ShouldSkipDCPContextAttention(contextKVLens Tensor) (bool, error) {
	var skip C.int32_t
	err := withArena(func(a *arena) error {
		t, err := a.tensor(&contextKVLens, "context_kv_lens", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_should_skip_dcp_context_attention(l.api, t, &skip))
	})
	return skip != 0, err
}

// SplitDCPContextQueries is vLLM 0.33's split_dcp_context_queries on a batch (block table and
// slot mapping optional); the seq_lens upper bound is the batch's host seq_lens, none without.
func (l *Library) SplitDCPContextQueries(c *CommonMetadata) (DCPContextSplit, error) {
	var dr, pr, dt, pt C.int64_t
	err := withArena(func(a *arena) error {
		cm, err := c.toC(a, "common", false)
		if err != nil {
			return err
		}
		return l.takeError(C.gattn_split_dcp_context_queries(l.api, cm, &dr, &pr, &dt, &pt))
	})
	if err != nil {
		return DCPContextSplit{}, err
	}
	return DCPContextSplit{int64(dr), int64(pr), int64(dt), int64(pt)}, nil
}
