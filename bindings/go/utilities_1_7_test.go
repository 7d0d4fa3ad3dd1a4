package attn_test

import (
	"reflect"
	"testing"

	"libattn.dev/attn"
)

// The ABI 1.7 utilities: naive_query_lens on the demo batch, the attention output view, and the
// runner decisions of vLLM 0.33's cp_utils and ubatch_utils (values from vLLM's code).
func TestABI17Utilities(t *testing.T) {
	l := library(t)
	s := demoSample()
	out := make([]int32, len(s.seqLens)+2)
	out[len(out)-1] = -7
	ok(t, l.CommonMetadataNaiveQueryLens(s.common(t), attn.Slice(out), 0))
	for r := range s.seqLens {
		is(t, "naive query len", out[r], s.queryStartLoc[r+1]-s.queryStartLoc[r])
	}
	is(t, "untouched", out[len(out)-1], int32(-7))
	err := l.CommonMetadataNaiveQueryLens(s.common(t), attn.Slice(make([]int64, 8)), 0)
	wantError(t, err, attn.ErrInvalidArgument, "out")

	x, err := attn.Shaped(make([]float32, 2*3*4*5), 2, 3, 4, 5)
	ok(t, err)
	v := get(l.ReshapeAttnOutputForSpecDecode(x))(t)
	is(t, "shape", reflect.DeepEqual(v.Shape(), []int64{6, 4, 5}), true)
	is(t, "strides", reflect.DeepEqual(v.Strides(), []int64{20, 5, 1}), true)
	flat, err := attn.Shaped(make([]float32, 6), 2, 3)
	ok(t, err)
	_, err = l.ReshapeAttnOutputForSpecDecode(flat)
	wantError(t, err, attn.ErrInvalidArgument, "attn_output must be 4D, got 2D")

	is(t, "dummy len", get(l.GetDCPDummyContextLen(4, 16, true, true, false, false))(t), int64(64))
	is(t, "no dummy", get(l.GetDCPDummyContextLen(4, 16, false, true, false, false))(t), int64(0))
	_, err = l.GetDCPDummyContextLen(0, 16, true, true, false, false)
	wantError(t, err, attn.ErrInvalidArgument, "dcp_world_size=0 must be positive")
	is(t, "fa2 split", get(l.ShouldSplitFA2DCPContextAttention(2, 5, 4, 1, 3))(t), true)
	is(t, "fa3", get(l.ShouldSplitFA2DCPContextAttention(3, 5, 4, 1, 3))(t), false)
	is(t, "None", get(l.ShouldSplitFA2DCPContextAttention(attn.FAVersionNone, 5, 4, 1, 3))(t), false)
	_, err = l.ShouldSplitFA2DCPContextAttention(2, 5, 4, 1, 4)
	wantError(t, err, attn.ErrInvalidArgument, "num_context_prefill_reqs=4")
	is(t, "last empty", get(l.IsLastUbatchEmpty(5, 16, 2))(t), true)
	is(t, "last holds tokens", get(l.IsLastUbatchEmpty(9, 16, 2))(t), false)
	_, err = l.IsLastUbatchEmpty(5, 16, 0)
	wantError(t, err, attn.ErrInvalidArgument, "num_ubatches=0")
	is(t, "dbo", get(l.GetNumUbatches(true, 4))(t), int32(2))
	is(t, "ubatch_size", get(l.GetNumUbatches(false, 3))(t), int32(3))
	is(t, "off", get(l.GetNumUbatches(false, 1))(t), int32(1))
	is(t, "decode threshold", get(l.CheckUbatchThresholds(true, 0, 32, 512, 32, true))(t), true)
	is(t, "prefill threshold", get(l.CheckUbatchThresholds(true, 0, 32, 512, 100, false))(t), false)
	_, err = l.CheckUbatchThresholds(true, 0, 32, 512, -1, false)
	wantError(t, err, attn.ErrInvalidArgument, "num_tokens=-1 is negative")
}
