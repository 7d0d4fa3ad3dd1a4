package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// vLLM 0.33's draft decode metadata refresh: which builders support it, the update (in place:
// the metadata keeps viewing its inputs; Go slices are staged in C memory, so the speculator's
// advance is not modelled here; the C and Python tests check it), the refusals.
func TestDraftDecodeMetadataUpdate(t *testing.T) {
	s := newSample([]int32{9, 19, 29}, []int32{1, 1, 1}, 4)
	fa := newBuilder(t, "FLASH_ATTN", 90)
	if !get(fa.SupportsDraftDecodeMetadataUpdate())(t) {
		t.Fatal("FLASH_ATTN without DCP supports it")
	}
	md := get(fa.Build(0, s.common(t), false))(t)
	ok(t, fa.UpdateDraftDecodeMetadata(md))
	equal(t, "seq_lens after the update", i32s(t, md, "seq_lens"), []int32{10, 20, 30})

	triton := newBuilder(t, "TRITON_ATTN", 90)
	if !get(triton.SupportsDraftDecodeMetadataUpdate())(t) {
		t.Fatal("TRITON_ATTN without R-SWA supports it")
	}
	wantError(t, triton.UpdateDraftDecodeMetadata(md), attn.ErrInvalidArgument,
		"metadata was built by 'FLASH_ATTN', this builder is 'TRITON_ATTN'")
	wantError(t, fa.UpdateDraftDecodeMetadata(nil), attn.ErrInvalidArgument, "nil")

	flex := newBuilder(t, "FLEX_ATTENTION", 90)
	if get(flex.SupportsDraftDecodeMetadataUpdate())(t) {
		t.Fatal("FLEX_ATTENTION keeps vLLM's base class's no")
	}
	fmd := get(flex.Build(0, s.common(t), false))(t)
	wantError(t, flex.UpdateDraftDecodeMetadata(fmd), attn.ErrUnsupported,
		"FLEX_ATTENTION does not support update_draft_decode_metadata")
	if get(newBuilder(t, "FLASHINFER", 90).SupportsDraftDecodeMetadataUpdate())(t) {
		t.Fatal("FLASHINFER on 9.0 decodes with XQA: no")
	}
	if !get(newBuilder(t, "FLASHINFER", 100).SupportsDraftDecodeMetadataUpdate())(t) {
		t.Fatal("FLASHINFER on 10.x decodes with trtllm-gen: yes")
	}
}
