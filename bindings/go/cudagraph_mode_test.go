package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// vLLM 0.33's CUDA graph mode resolution; the values were recorded from vLLM 0.33.0
// (scripts/vllm_cudagraph_mode_compare.py compares a whole grid).
func TestResolveCudagraphModeAndSizes(t *testing.T) {
	l := library(t)
	args := attn.NewCudagraphResolveArgs()
	is(t, "default mode", args.CudagraphMode, attn.CudagraphModeFullAndPiecewise)
	args.CudagraphMode = attn.CudagraphModeFull
	args.Groups = []attn.CudagraphGroup{{Support: attn.CGUniformBatch, BackendName: "U"}}
	args.UniformDecodeQueryLen = 7
	args.CudagraphCaptureSizes = []int32{1, 2, 4, 8, 16}
	args.MaxCudagraphCaptureSize = 16
	r := get(l.ResolveCudagraphModeAndSizes(args))(t)
	is(t, "mode", r.Mode, attn.CudagraphModeFullAndPiecewise)
	is(t, "sizes", len(r.CaptureSizes), 2)
	is(t, "sizes[1]", r.CaptureSizes[1], int32(14))
	is(t, "max", r.MaxCaptureSize, int32(14))

	never := args
	never.Groups = []attn.CudagraphGroup{{Support: attn.CGNever, BackendName: "N"}}
	_, err := l.ResolveCudagraphModeAndSizes(never)
	wantError(t, err, attn.ErrUnsupported, "please try cudagraph_mode=PIECEWISE")

	two := int32(2)
	adaptive := args
	adaptive.Groups = []attn.CudagraphGroup{{Support: attn.CGUniformBatch, BackendName: "M", VarlenMaxQueryLen: &two}}
	adaptive.UniformDecodeQueryLen = 4
	adaptive.UseV2ModelRunner = true
	adaptive.AdaptiveVerification = true
	_, err = l.ResolveCudagraphModeAndSizes(adaptive)
	wantError(t, err, attn.ErrUnsupported, "M allows at most 2")

	b := get(l.NewBuilder("FLASH_ATTN", spec(), config(90)))(t)
	g := get(attn.CudagraphGroupOf(b))(t)
	is(t, "FLASH_ATTN name", g.BackendName, "FLASH_ATTN")
	is(t, "FLASH_ATTN bound is None", g.VarlenMaxQueryLen == nil, true)
	ok(t, b.Close())
}
