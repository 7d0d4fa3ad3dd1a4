package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// ABI 1.4: attn_get_vllm_release through VLLMRelease, and vLLM 0.33.0's CommonAttentionMetadata
// fields of CommonMetadata through attn_common_metadata_unpadded.

func TestVLLMRelease(t *testing.T) {
	l := library(t)
	release, v, err := l.VLLMRelease()
	if err != nil {
		t.Fatal(err)
	}
	is(t, "release", release, "0.33.0")
	is(t, "numbers", v, attn.Version{Major: 0, Minor: 33, Patch: 0})
}

func TestCommonMetadata033Fields(t *testing.T) {
	l := library(t)
	qsl := []int32{0, 2, 4, 6, 6}
	seq := []int32{10, 20, 30, 40}
	table := make([]int32, 4*4)
	slots := make([]int64, 8)
	c := get(attn.NewCommonMetadata(qsl, seq, table, 4, slots))(t)
	c.NumActualTokens = 8
	c.MaxSeqLen = 41
	bound := []int32{12, 20, 33, 41}
	positions := []int64{0, 1, 2, 3, 4, 5, 6, 7}
	causal := []int32{1, 0, 1, 1}
	reqIdx := []int64{3, 2, 1, 0}
	rswa := []int32{4, 8, 0, 2}
	maxLogits := int64(2)
	c.SeqLensCPUUpperBound = attn.Slice(bound)
	c.Positions = attn.Slice(positions)
	c.CausalPerRequest = attn.Slice(causal)
	c.ReqIdx = attn.Slice(reqIdx)
	c.RSWAPrefixLens = attn.Slice(rswa)
	c.ReplayStart = attn.Slice([]int32{0, 3, 0, 7}) // ABI 1.7
	c.MaxLogitsPerReq = &maxLogits
	c.MMReqDocRanges = attn.DocRanges(map[int32][][2]int32{2: {{3, 9}}, 0: {{1, 4}, {6, 8}}})
	u := get(l.CommonMetadataUnpadded(c, 6, 3))(t)
	defer u.Close()
	equal(t, "bound", get(u.Int32s("seq_lens_cpu_upper_bound"))(t), []int32{12, 20, 33})
	equal(t, "causal", get(u.Int32s("causal_per_request"))(t), []int32{1, 0, 1})
	equal(t, "req_idx", get(u.Int64s("req_idx"))(t), []int64{3, 2, 1})
	equal(t, "rswa", get(u.Int32s("rswa_prefix_lens"))(t), []int32{4, 8, 0})
	equal(t, "replay_start", get(u.Int32s("replay_start"))(t), []int32{0, 3, 0})
	is(t, "max_logits_per_req", get(u.Int("max_logits_per_req"))(t), int64(2))
	if v := get(u.Tensor("positions"))(t); v != nil {
		t.Errorf("positions survived unpadded: %v", v)
	}
	back := get(u.ToCommon())(t)
	if s := back.ReplayStart.Shape(); len(s) != 1 || s[0] != 3 {
		t.Errorf("ReplayStart has shape %v after ToCommon, want [3]", s)
	}
	if back.MaxLogitsPerReq == nil || *back.MaxLogitsPerReq != 2 {
		t.Errorf("MaxLogitsPerReq = %v, want 2", back.MaxLogitsPerReq)
	}
	// a bound below the exact lengths is refused, naming the field
	c.SeqLensCPUUpperBound = attn.Slice([]int32{9, 20, 30, 40})
	_, err := l.CommonMetadataUnpadded(c, 6, 3)
	wantError(t, err, attn.ErrInvalidArgument, "common->seq_lens_cpu_upper_bound[0]=9")
	// ranges with a request out of order
	c.SeqLensCPUUpperBound = attn.Tensor{}
	rows, _ := attn.Shaped([]int32{2, 0, 1, 0, 1, 2}, 2, 3)
	c.MMReqDocRanges = rows
	_, err = l.CommonMetadataUnpadded(c, 6, 3)
	wantError(t, err, attn.ErrInvalidArgument, "non-decreasing request order")
}
