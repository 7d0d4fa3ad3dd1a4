package attn

/*
#include "capi.h"
*/
import "C"

import "unsafe"

// vLLM 0.33's CUDA graph mode resolution and the builders' varlen bound (ABI 1.4).

// CudagraphGroup is one attention group as the resolution reads it: its builder's level, its
// backend's name for the messages ("" for vLLM's None) and its builder's varlen bound (nil for
// None).
type CudagraphGroup struct {
	Support           CudagraphSupport
	BackendName       string
	VarlenMaxQueryLen *int32
}

// CudagraphResolveArgs are the inputs of ResolveCudagraphModeAndSizes
// (attn_cudagraph_resolve_args_t); NewCudagraphResolveArgs gives vLLM's defaults.
type CudagraphResolveArgs struct {
	CudagraphMode                CudagraphMode
	Groups                       []CudagraphGroup
	UniformDecodeQueryLen        int32 // 1 + num_speculative_tokens
	CudagraphCaptureSizes        []int32
	MaxCudagraphCaptureSize      int32 // 0 for None
	UseV2ModelRunner             bool
	PiecewiseCaptureAvailable    bool
	SplittingOpsContainAttention bool
	VLLMCompile                  bool
	UseInductorGraphPartition    bool
	HasMambaLayers               bool
	IsProfiling                  bool
	AdaptiveVerification         bool
	NumBlocks                    int64
	MaxNumReqs                   int64 // 0 for None
}

// NewCudagraphResolveArgs is ATTN_CUDAGRAPH_RESOLVE_ARGS_INIT: vLLM's default config, no groups.
func NewCudagraphResolveArgs() CudagraphResolveArgs {
	c := C.gattn_cudagraph_resolve_args_init()
	return CudagraphResolveArgs{
		CudagraphMode:                CudagraphMode(c.cudagraph_mode),
		UniformDecodeQueryLen:        int32(c.uniform_decode_query_len),
		PiecewiseCaptureAvailable:    c.piecewise_capture_available != 0,
		SplittingOpsContainAttention: c.splitting_ops_contain_attention != 0,
		VLLMCompile:                  c.vllm_compile != 0,
	}
}

// CudagraphResolution is the resolved mode, capture sizes and maximum capture size (0: None).
type CudagraphResolution struct {
	Mode           CudagraphMode
	CaptureSizes   []int32
	MaxCaptureSize int32
}

// ResolveCudagraphModeAndSizes is vLLM 0.33's CUDA graph mode resolution
// (attn_resolve_cudagraph_mode_and_sizes; see docs/cuda_graphs.md).
func (l *Library) ResolveCudagraphModeAndSizes(args CudagraphResolveArgs) (CudagraphResolution, error) {
	if err := l.hasSince("attn_resolve_cudagraph_mode_and_sizes", "1.4"); err != nil {
		return CudagraphResolution{}, err
	}
	var res CudagraphResolution
	err := withArena(func(a *arena) error {
		c := C.gattn_cudagraph_resolve_args_init()
		c.cudagraph_mode = C.int32_t(args.CudagraphMode)
		c.uniform_decode_query_len = C.int32_t(args.UniformDecodeQueryLen)
		n := len(args.Groups)
		levels := make([]int32, n)
		bounds := make([]int32, n)
		for i, g := range args.Groups {
			levels[i] = int32(g.Support)
			bounds[i] = -1
			if g.VarlenMaxQueryLen != nil {
				bounds[i] = *g.VarlenMaxQueryLen
			}
		}
		if n > 0 {
			var err error
			if c.group_cudagraph_support, err = a.int32s(levels, "groups"); err != nil {
				return err
			}
			if c.group_varlen_max_query_len, err = a.int32s(bounds, "groups"); err != nil {
				return err
			}
			names, err := a.mustAlloc(n*int(unsafe.Sizeof(uintptr(0))), "groups")
			if err != nil {
				return err
			}
			ptrs := unsafe.Slice((**C.char)(names), n)
			for i, g := range args.Groups {
				if g.BackendName == "" {
					continue
				}
				if ptrs[i], err = a.cstring(g.BackendName, "groups[].BackendName"); err != nil {
					return err
				}
			}
			c.group_backend_names = (**C.char)(names)
		}
		c.num_groups = C.size_t(n)
		if len(args.CudagraphCaptureSizes) > 0 {
			var err error
			if c.cudagraph_capture_sizes, err = a.int32s(args.CudagraphCaptureSizes, "cudagraph_capture_sizes"); err != nil {
				return err
			}
		}
		c.num_cudagraph_capture_sizes = C.size_t(len(args.CudagraphCaptureSizes))
		c.max_cudagraph_capture_size = C.int32_t(args.MaxCudagraphCaptureSize)
		c.use_v2_model_runner = cBool(args.UseV2ModelRunner)
		c.piecewise_capture_available = cBool(args.PiecewiseCaptureAvailable)
		c.splitting_ops_contain_attention = cBool(args.SplittingOpsContainAttention)
		c.vllm_compile = cBool(args.VLLMCompile)
		c.use_inductor_graph_partition = cBool(args.UseInductorGraphPartition)
		c.has_mamba_layers = cBool(args.HasMambaLayers)
		c.is_profiling = cBool(args.IsProfiling)
		c.adaptive_verification = cBool(args.AdaptiveVerification)
		c.num_blocks = C.int64_t(args.NumBlocks)
		c.max_num_reqs = C.int64_t(args.MaxNumReqs)
		var mode, maxSize C.int32_t
		var count C.size_t
		if err := l.takeError(C.gattn_resolve_cudagraph_mode_and_sizes(l.api, &c, &mode, &maxSize, nil, &count)); err != nil {
			return err
		}
		buf, err := a.mustAlloc(4*int(count), "out_sizes")
		if err != nil {
			return err
		}
		if err := l.takeError(C.gattn_resolve_cudagraph_mode_and_sizes(l.api, &c, &mode, &maxSize,
			(*C.int32_t)(buf), &count)); err != nil {
			return err
		}
		res = CudagraphResolution{
			Mode:           CudagraphMode(mode),
			CaptureSizes:   append([]int32{}, unsafe.Slice((*int32)(buf), int(count))...),
			MaxCaptureSize: int32(maxSize),
		}
		return nil
	})
	return res, err
}

// VarlenCudagraphMaxQueryLen is vLLM 0.33's get_varlen_cudagraph_max_query_len
// (attn_builder_varlen_cudagraph_max_query_len): the largest per-request query length of the
// varlen decode batches a FULL graph of this builder replays; ok is false for vLLM's None.
func (b *Builder) VarlenCudagraphMaxQueryLen() (value int32, ok bool, err error) {
	if err := b.lib.hasSince("attn_builder_varlen_cudagraph_max_query_len", "1.4"); err != nil {
		return 0, false, err
	}
	var v, has C.int32_t
	err = b.use(func() error {
		return b.lib.takeError(C.gattn_builder_varlen_cudagraph_max_query_len(b.lib.api, b.ptr, &v, &has))
	})
	if err != nil || has == 0 {
		return 0, false, err
	}
	return int32(v), true, nil
}

// CudagraphGroupOf is the CudagraphGroup of a builder: its level, backend name and varlen bound.
func CudagraphGroupOf(b *Builder) (CudagraphGroup, error) {
	level, err := b.CudagraphSupport()
	if err != nil {
		return CudagraphGroup{}, err
	}
	v, ok, err := b.VarlenCudagraphMaxQueryLen()
	if err != nil {
		return CudagraphGroup{}, err
	}
	g := CudagraphGroup{Support: level, BackendName: b.BackendName()}
	if ok {
		g.VarlenMaxQueryLen = &v
	}
	return g, nil
}
