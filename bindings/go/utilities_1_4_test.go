package attn_test

import (
	"reflect"
	"testing"

	"libattn.dev/attn"
)

// The ABI 1.4 utilities (vLLM 0.33.0): values of vLLM's own functions, bad input.

func TestSplitDecodesAndPrefillsEx(t *testing.T) {
	l := library(t)
	o := attn.NewSplitOptions()
	if o.DecodeThreshold != 1 || o.RequireUniform || !o.TreatShortExtendsAsDecodes {
		t.Fatalf("NewSplitOptions() = %+v, want vLLM's defaults", o)
	}
	o.DecodeThreshold, o.RequireUniform = 3, true
	// q = [2, 0, 3, 2]: the zero-length row is no prefill (vLLM 0.33: (2, 2, 2, 5))
	s := get(l.SplitDecodesAndPrefillsEx(splitBatch([]int32{2, 0, 3, 2}, nil, 0), o))(t)
	if got := [4]int64{s.NumDecodes, s.NumPrefills, s.NumDecodeTokens, s.NumPrefillTokens}; got != [4]int64{2, 2, 2, 5} {
		t.Fatalf("split %+v", s)
	}
	o.TreatShortExtendsAsDecodes = false // needs is_prefilling, which this batch lacks
	_, err := l.SplitDecodesAndPrefillsEx(splitBatch([]int32{1, 4}, nil, 0), o)
	wantError(t, err, attn.ErrInvalidArgument, "is_prefilling is NULL")
	o = attn.NewSplitOptions()
	o.DecodeThreshold = -1
	_, err = l.SplitDecodesAndPrefillsEx(splitBatch([]int32{1, 4}, nil, 0), o)
	wantError(t, err, attn.ErrInvalidArgument, "decode_threshold=-1 is negative")
}

func TestReorderV2FourRegions(t *testing.T) {
	l := library(t)
	// the example: a short extend before a decode (vLLM 0.33 swaps them)
	swaps := get(l.ReorderBatchToSplitDecodesAndPrefillsV2([]int32{1, 1}, []int32{10, 10}, []int32{20, 5}, 1))(t)
	if !reflect.DeepEqual(swaps, []attn.Swap{{1, 0}}) {
		t.Fatalf("swaps %v", swaps)
	}
	swaps = get(l.ReorderBatchToSplitDecodesAndPrefillsV2([]int32{5, 1, 8, 1, 1, 2}, []int32{0, 10, 3, 4, 7, 9},
		[]int32{10, 10, 20, 9, 7, 5}, 1))(t)
	if !reflect.DeepEqual(swaps, []attn.Swap{{4, 0}, {4, 5}, {3, 2}}) {
		t.Fatalf("swaps %v", swaps)
	}
	_, err := l.ReorderBatchToSplitDecodesAndPrefillsV2([]int32{1}, []int32{1}, nil, 1)
	wantError(t, err, attn.ErrInvalidArgument, "num_prompt_tokens")
	_, err = l.ReorderBatchToSplitDecodesAndPrefillsV2([]int32{1}, []int32{1}, []int32{-2}, 1)
	wantError(t, err, attn.ErrInvalidArgument, "num_prompt_tokens[0]=-2 is negative")
}

func TestUbatchSlicesAt(t *testing.T) {
	l := library(t)
	sl, pad, err := l.MaybeCreateUbatchSlicesAt([]int32{4, 4}, 10, 3, 3, []int64{3, 6})
	ok(t, err)
	wantSl := []attn.UbatchSlice{{0, 1, 0, 3}, {0, 2, 3, 6}, {1, 2, 6, 8}}
	wantPad := []attn.UbatchSlice{{0, 1, 0, 3}, {0, 2, 3, 6}, {1, 3, 6, 10}}
	if !reflect.DeepEqual(sl, wantSl) || !reflect.DeepEqual(pad, wantPad) {
		t.Fatalf("slices %v %v", sl, pad)
	}
	// more micro-batches than tokens: empty slices (vLLM 0.33)
	sl, _, err = l.MaybeCreateUbatchSlices([]int32{1, 1}, 2, 2, 3, 0)
	ok(t, err)
	if !reflect.DeepEqual(sl, []attn.UbatchSlice{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 2, 0, 2}}) {
		t.Fatalf("slices %v", sl)
	}
	_, _, err = l.MaybeCreateUbatchSlicesAt([]int32{4, 4}, 8, 2, 3, []int64{5, 3})
	wantError(t, err, attn.ErrInvalidArgument, "must not decrease")
}

func TestComputeTokenToReqIndices(t *testing.T) {
	l := library(t)
	out := make([]int32, 8)
	for i := range out {
		out[i] = -9
	}
	ok(t, l.ComputeTokenToReqIndices(attn.Slice([]int32{0, 3, 3, 5}), attn.Slice(out), 5, 7, 0))
	if !reflect.DeepEqual(out, []int32{0, 0, 0, 2, 2, 0, 0, -9}) {
		t.Fatalf("out %v", out)
	}
	err := l.ComputeTokenToReqIndices(attn.Slice([]int32{0, 3}), attn.Slice(out), 5, 9, 0)
	wantError(t, err, attn.ErrInvalidArgument, "out")
}

func TestMMPrefixRanges(t *testing.T) {
	l := library(t)
	// {0: [(2, 5), (9, 12)], 2: [(1, 3)], 5: [(7, 8)]}, 3 requests: vLLM 0.33's tensor
	rows := get(attn.Matrix([]int32{0, 2, 5, 0, 9, 12, 2, 1, 3, 5, 7, 8}, 3))(t)
	out, width, err := l.ComputeMMPrefixRangeTensor(rows, 3)
	ok(t, err)
	if width != 2 || !reflect.DeepEqual(out, []int32{2, 5, 9, 12, 0, 0, 0, 0, 1, 3, 0, 0}) {
		t.Fatalf("range tensor %v (width %d)", out, width)
	}
	out, width, err = l.ComputeMMPrefixRangeTensor(attn.Tensor{}, 3) // None
	ok(t, err)
	if out != nil || width != 0 {
		t.Fatalf("None gave %v", out)
	}
	// fill: query_start_loc [0, 4, 4, 9], seq_lens [10, 3, 9]
	fill := get(attn.Matrix([]int32{0, 5, 7, 0, 9, 9, 2, 2, 4, 2, 6, 20}, 3))(t)
	buf := make([]int32, 20)
	for i := range buf {
		buf[i] = -7
	}
	n, err := l.FillMMPrefixQueryRanges(get(attn.Matrix(buf, 2))(t), fill, attn.Slice([]int32{0, 4, 4, 9}),
		attn.Slice([]int32{10, 3, 9}))
	ok(t, err)
	want := []int32{5, 7, 5, 7, -1, -1, -1, -1, 2, 4, -1, -1, 6, 20, 6, 20, 6, 20, -7, -7}
	if n != 9 || !reflect.DeepEqual(buf, want) {
		t.Fatalf("fill %d %v", n, buf)
	}
	_, err = l.FillMMPrefixQueryRanges(get(attn.Matrix(make([]int32, 8), 2))(t), fill,
		attn.Slice([]int32{0, 4, 4, 9}), attn.Slice([]int32{10, 3, 9}))
	wantError(t, err, attn.ErrInvalidArgument, "mm_prefix staging buffer holds 4 tokens, got 9")
}
