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

// The ABI 1.4 config fields: the reorder threshold with parallel drafting on model runner V2,
// and TRITON_ATTN's 64 softmax segments on SM 12.0 from the SM count.
func TestABI14ConfigFields(t *testing.T) {
	l := library(t)
	for _, v := range []struct {
		v2   bool
		want int32
	}{{false, 7}, {true, 4}} {
		cfg := config(100)
		cfg.NumSpeculativeTokens = 3
		cfg.ParallelDrafting = true
		cfg.UseV2ModelRunner = v.v2
		b := get(l.NewBuilder("FLASHINFER", spec(), cfg))(t)
		is(t, "threshold", get(b.ReorderBatchThreshold())(t), v.want)
		ok(t, b.Close())
	}
	cfg := config(120)
	cfg.NumSMs = 170
	s := spec()
	s.NumKVHeads = 1
	b := get(l.NewBuilder("TRITON_ATTN", s, cfg))(t)
	defer b.Close()
	md := get(b.Build(0, newSample([]int32{8, 8, 8}, []int32{1, 1, 1}, width).common(t), false))(t)
	is(t, "num_par_softmax_segments", integer(t, md, "num_par_softmax_segments"), 64)
}

// The ABI 1.4 FLASHINFER config fields: use_non_causal keeps UNIFORM_BATCH only on XQA.
func TestABI14FlashInferConfigFields(t *testing.T) {
	l := library(t)
	cfg := config(100)
	cfg.UseNonCausal = true
	cfg.EnableAdaptiveVerification = true
	is(t, "sm100 non-causal", get(l.BackendCudagraphSupport("FLASHINFER", spec(), cfg))(t), attn.CGUniformSingleTokenDecode)
	cfg = config(90)
	cfg.UseNonCausal = true
	is(t, "sm90 non-causal", get(l.BackendCudagraphSupport("FLASHINFER", spec(), cfg))(t), attn.CGUniformBatch)
}
