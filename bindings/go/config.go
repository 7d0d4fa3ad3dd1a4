package attn

/*
#include "capi.h"
*/
import "C"

import "unsafe"

// NewKVCacheSpec is a full-attention bfloat16 spec (ATTN_KV_CACHE_SPEC_INIT) with the three
// sizes set. (KVCacheSpec is generated from the header: fields_gen.go.)
func NewKVCacheSpec(blockSize, numKVHeads, headSize int32) KVCacheSpec {
	c := C.gattn_kv_cache_spec_init()
	var s KVCacheSpec
	s.plainFromC(&c)
	s.BlockSize, s.NumKVHeads, s.HeadSize = blockSize, numKVHeads, headSize
	return s
}

func (s *KVCacheSpec) toC() C.attn_kv_cache_spec_t {
	c := C.gattn_kv_cache_spec_init()
	s.plainToC(&c)
	return c
}

// PerLayerParams are one attention layer's hyperparameters (vLLM's PerLayerParameters).
type PerLayerParams struct {
	WindowLeft       int32 // -1 for no sliding window
	HasLogitsSoftCap bool  // false: None
	LogitsSoftCap    float64
	SMScale          float64
	HasSinks         bool
}

// DefaultPerLayerParams is ATTN_PER_LAYER_PARAMS_INIT: no window, no soft cap, sm_scale 1.
func DefaultPerLayerParams() PerLayerParams {
	return perLayerFromC(C.gattn_per_layer_params_init())
}

func perLayerFromC(c C.attn_per_layer_params_t) PerLayerParams {
	return PerLayerParams{
		WindowLeft: int32(c.window_left), HasLogitsSoftCap: c.has_logits_soft_cap != 0,
		LogitsSoftCap: float64(c.logits_soft_cap), SMScale: float64(c.sm_scale),
		HasSinks: c.has_sinks != 0,
	}
}

func (p *PerLayerParams) toC() C.attn_per_layer_params_t {
	c := C.gattn_per_layer_params_init()
	c.window_left = C.int32_t(p.WindowLeft)
	c.has_logits_soft_cap = cBool(p.HasLogitsSoftCap)
	c.logits_soft_cap = C.double(p.LogitsSoftCap)
	c.sm_scale = C.double(p.SMScale)
	c.has_sinks = cBool(p.HasSinks)
	return c
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// DefaultBuilderConfig is ATTN_BUILDER_CONFIG_INIT: vLLM's defaults, the four required sizes 0.
// (BuilderConfig is generated from the header: fields_gen.go.)
func DefaultBuilderConfig() BuilderConfig {
	c := C.gattn_builder_config_init()
	cfg := BuilderConfig{Device: Device{DeviceType(c.device.device_type), int32(c.device.device_id)}}
	cfg.plainFromC(&c)
	return cfg
}

// NewBuilderConfig is DefaultBuilderConfig with the four required sizes set.
func NewBuilderConfig(maxNumSeqs, maxNumBatchedTokens, maxModelLen, numAttentionHeads int32) BuilderConfig {
	c := DefaultBuilderConfig()
	c.MaxNumSeqs = maxNumSeqs
	c.MaxNumBatchedTokens = maxNumBatchedTokens
	c.MaxModelLen = maxModelLen
	c.NumAttentionHeads = numAttentionHeads
	return c
}

// toC writes the config into the arena.
func (cfg *BuilderConfig) toC(a *arena) (*C.attn_builder_config_t, error) {
	p, err := a.mustAlloc(int(C.sizeof_attn_builder_config_t), "the builder config")
	if err != nil {
		return nil, err
	}
	c := (*C.attn_builder_config_t)(p)
	*c = C.gattn_builder_config_init()
	cfg.plainToC(c)
	c.device.device_type = C.int32_t(cfg.Device.Type)
	c.device.device_id = C.int32_t(cfg.Device.ID)
	if len(cfg.Layers) > 0 {
		init := C.gattn_per_layer_params_init()
		stride := int(init.struct_size)
		base, err := a.mustAlloc(stride*len(cfg.Layers), "config.layers")
		if err != nil {
			return nil, err
		}
		for i := range cfg.Layers {
			*(*C.attn_per_layer_params_t)(unsafe.Add(base, i*stride)) = cfg.Layers[i].toC()
		}
		c.layers = (*C.attn_per_layer_params_t)(base)
		c.num_layers = C.size_t(len(cfg.Layers))
	}
	switch {
	case cfg.Workspace != nil && cfg.ExternalWorkspace != 0:
		return nil, invalid("config: set Workspace or ExternalWorkspace, not both")
	case cfg.Workspace != nil:
		ptr := cfg.Workspace.Ptr()
		if ptr == 0 {
			return nil, invalid("config.Workspace is a closed host buffer")
		}
		*(*uintptr)(unsafe.Pointer(&c.workspace)) = ptr
		c.workspace_size = C.size_t(cfg.Workspace.Len())
	case cfg.ExternalWorkspace != 0:
		*(*uintptr)(unsafe.Pointer(&c.workspace)) = cfg.ExternalWorkspace
		c.workspace_size = C.size_t(cfg.ExternalWorkspaceSize)
	}
	if cfg.CudagraphCaptureSizes != nil {
		if c.cudagraph_capture_sizes, err = a.int32s(cfg.CudagraphCaptureSizes, "config.cudagraph_capture_sizes"); err != nil {
			return nil, err
		}
		c.num_cudagraph_capture_sizes = C.size_t(len(cfg.CudagraphCaptureSizes))
	}
	if cfg.SpeculativeTokenTree != "" {
		if c.speculative_token_tree, err = a.cstring(cfg.SpeculativeTokenTree, "config.speculative_token_tree"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// CascadeQuery is the input of Builder.UseCascadeAttention (vLLM's use_cascade_attention).
type CascadeQuery struct {
	CommonPrefixLen   int64
	QueryLens         []int32
	NumQueryHeads     int32
	NumKVHeads        int32
	UseALiBi          bool
	UseSlidingWindow  bool
	UseLocalAttention bool
	NumSMs            int32
	DCPWorldSize      int32 // default 1
}

// NewCascadeQuery is ATTN_CASCADE_QUERY_INIT with the prefix, the query lengths, the heads and
// the SM count set.
func NewCascadeQuery(commonPrefixLen int64, queryLens []int32, numQueryHeads, numKVHeads, numSMs int32) CascadeQuery {
	init := C.gattn_cascade_query_init()
	return CascadeQuery{
		CommonPrefixLen: commonPrefixLen, QueryLens: queryLens, NumQueryHeads: numQueryHeads,
		NumKVHeads: numKVHeads, NumSMs: numSMs, DCPWorldSize: int32(init.dcp_world_size),
	}
}

func (q *CascadeQuery) toC(a *arena) (*C.attn_cascade_query_t, error) {
	p, err := a.mustAlloc(int(C.sizeof_attn_cascade_query_t), "the cascade query")
	if err != nil {
		return nil, err
	}
	c := (*C.attn_cascade_query_t)(p)
	*c = C.gattn_cascade_query_init()
	c.common_prefix_len = C.int64_t(q.CommonPrefixLen)
	if q.QueryLens != nil {
		if c.query_lens, err = a.int32s(q.QueryLens, "query.query_lens"); err != nil {
			return nil, err
		}
	}
	c.num_reqs = C.int64_t(len(q.QueryLens))
	c.num_query_heads = C.int32_t(q.NumQueryHeads)
	c.num_kv_heads = C.int32_t(q.NumKVHeads)
	c.use_alibi = cBool(q.UseALiBi)
	c.use_sliding_window = cBool(q.UseSlidingWindow)
	c.use_local_attention = cBool(q.UseLocalAttention)
	c.num_sms = C.int32_t(q.NumSMs)
	c.dcp_world_size = C.int32_t(q.DCPWorldSize)
	return c, nil
}
