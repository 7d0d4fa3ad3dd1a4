package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// vLLM 0.33's cp_utils helpers on the demo batch (3 decodes, an extend with context, a pure
// prefill) and on q=[3], ctx=[0]; the values were printed by vLLM 0.33.0.
func TestDCPContextHelpers(t *testing.T) {
	l := library(t)
	s := get(l.SplitDCPContextQueries(demoSample().common(t)))(t)
	is(t, "split", s, attn.DCPContextSplit{NumDecodeReqs: 3, NumPrefillReqs: 1, NumDecodeTokens: 3, NumPrefillTokens: 32})
	s = get(l.SplitDCPContextQueries(newSample([]int32{0}, []int32{3}, width).common(t)))(t)
	is(t, "pure prefill", s, attn.DCPContextSplit{})
	is(t, "skip", get(l.ShouldSkipDCPContextAttention(attn.Slice([]int32{0, 0})))(t), true)
	is(t, "no skip", get(l.ShouldSkipDCPContextAttention(attn.Slice([]int32{0, 5})))(t), false)
	_, err := l.ShouldSkipDCPContextAttention(attn.Slice([]int32{}))
	wantError(t, err, attn.ErrInvalidArgument, "context_kv_lens")
	_, err = l.ShouldSkipDCPContextAttention(attn.Slice([]int64{0}))
	wantError(t, err, attn.ErrInvalidArgument, "context_kv_lens")
}
