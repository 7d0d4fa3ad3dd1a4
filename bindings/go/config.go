package attn

/*
#include "capi.h"
*/
import "C"

import "unsafe"

// KVCacheSpec is a KV cache spec (attn_kv_cache_spec_t, vLLM's AttentionSpec and subclasses).
type KVCacheSpec struct {
	Kind               KVCacheKind
	BlockSize          int32 // tokens per KV cache block (> 0)
	NumKVHeads         int32 // KV heads per rank (> 0)
	HeadSize           int32 // head dimension (> 0)
	DType              KVDtype
	SlidingWindow      int32 // for KVSlidingWindow
	AttentionChunkSize int32 // for KVChunkedLocalAttention
	// ABI 1.2: MambaSpec's parameters, read for KVMamba specs (docs/backends/mamba.md).
	MambaType            MambaType
	MambaChunkSize       int32 // model_config.get_mamba_chunk_size(); MAMBA2 needs it
	MambaCacheMode       MambaCacheMode
	NumSpeculativeBlocks int32
	// ABI 1.6: vLLM 0.33's MambaSpec additions: prefill checkpoints (MAMBA2) and the ReplaySSM
	// state shapes (shapes[4][0] B-cache groups, shapes[2][0] heads); 0 = None / not given.
	NumPrefillCheckpointBlocks int32
	PrefillCheckpointAlignment int32
	MambaReplaySSMNGroups      int32
	MambaNumHeads              int32
	// ABI 1.7: sparse MLA: the model's index_topk (0 = 2048) and
	// MLAAttentionSpec.topk_buffer_width (0 = None).
	IndexTopk       int32
	TopkBufferWidth int32
	// ABI 1.7: SinkFullAttentionSpec.sink_len (> 0: the StaticSink wrapper) and
	// AttentionSpec.head_size_v (0 = HeadSize; the diff-KV backends).
	SinkLen   int32
	HeadSizeV int32
	// ABI 1.7: MLAAttentionSpec.tokens_per_state (DeepSeek V4 sparse MLA's compress ratio;
	// 0 = 1).
	TokensPerState int32
}

// NewKVCacheSpec is a full-attention bfloat16 spec (ATTN_KV_CACHE_SPEC_INIT) with the three
// sizes set.
func NewKVCacheSpec(blockSize, numKVHeads, headSize int32) KVCacheSpec {
	c := C.gattn_kv_cache_spec_init()
	return KVCacheSpec{
		Kind: KVCacheKind(c.kind), BlockSize: blockSize, NumKVHeads: numKVHeads, HeadSize: headSize,
		DType: KVDtype(c.dtype), SlidingWindow: int32(c.sliding_window),
		AttentionChunkSize: int32(c.attention_chunk_size), MambaType: MambaType(c.mamba_type),
		MambaChunkSize: int32(c.mamba_chunk_size), MambaCacheMode: MambaCacheMode(c.mamba_cache_mode),
		NumSpeculativeBlocks:       int32(c.num_speculative_blocks),
		NumPrefillCheckpointBlocks: int32(c.num_prefill_checkpoint_blocks),
		PrefillCheckpointAlignment: int32(c.prefill_checkpoint_alignment),
		MambaReplaySSMNGroups:      int32(c.mamba_replayssm_ngroups),
		MambaNumHeads:              int32(c.mamba_num_heads),
		IndexTopk:                  int32(c.index_topk),
		TopkBufferWidth:            int32(c.topk_buffer_width),
		SinkLen:                    int32(c.sink_len),
		HeadSizeV:                  int32(c.head_size_v),
		TokensPerState:             int32(c.tokens_per_state),
	}
}

func (s *KVCacheSpec) toC() C.attn_kv_cache_spec_t {
	c := C.gattn_kv_cache_spec_init()
	c.kind = C.int32_t(s.Kind)
	c.block_size = C.int32_t(s.BlockSize)
	c.num_kv_heads = C.int32_t(s.NumKVHeads)
	c.head_size = C.int32_t(s.HeadSize)
	c.dtype = C.int32_t(s.DType)
	c.sliding_window = C.int32_t(s.SlidingWindow)
	c.attention_chunk_size = C.int32_t(s.AttentionChunkSize)
	c.mamba_type = C.int32_t(s.MambaType)
	c.mamba_chunk_size = C.int32_t(s.MambaChunkSize)
	c.mamba_cache_mode = C.int32_t(s.MambaCacheMode)
	c.num_speculative_blocks = C.int32_t(s.NumSpeculativeBlocks)
	c.num_prefill_checkpoint_blocks = C.int32_t(s.NumPrefillCheckpointBlocks)
	c.prefill_checkpoint_alignment = C.int32_t(s.PrefillCheckpointAlignment)
	c.mamba_replayssm_ngroups = C.int32_t(s.MambaReplaySSMNGroups)
	c.mamba_num_heads = C.int32_t(s.MambaNumHeads)
	c.index_topk = C.int32_t(s.IndexTopk)
	c.topk_buffer_width = C.int32_t(s.TopkBufferWidth)
	c.sink_len = C.int32_t(s.SinkLen)
	c.head_size_v = C.int32_t(s.HeadSizeV)
	c.tokens_per_state = C.int32_t(s.TokensPerState)
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

// BuilderConfig is the engine-side configuration of a builder (attn_builder_config_t): the
// parts of vLLM's VllmConfig that builders read, the device, and memory options. Start from
// NewBuilderConfig or DefaultBuilderConfig, which carry the header's defaults.
type BuilderConfig struct {
	Device                            Device // CPU (default) or CUDA(n)
	MaxNumSeqs                        int32
	MaxNumBatchedTokens               int32
	MaxModelLen                       int32
	NumAttentionHeads                 int32
	NumSpeculativeTokens              int32
	ParallelDrafting                  bool
	DecodeContextParallelSize         int32
	DCPRank                           int32
	CPKVCacheInterleaveSize           int32
	CudagraphMode                     CudagraphMode
	MaxCudagraphCaptureSize           int32
	CacheDtype                        KVDtype
	AttnType                          AttentionType
	DeviceCapability                  int32 // major*10+minor; 0 = ask the device / unknown
	FlashAttnVersion                  int32
	FlashAttnMaxNumSplitsForCudaGraph int32
	BatchInvariant                    bool
	Validate                          ValidateMode
	Layers                            []PerLayerParams
	// Workspace is host memory for the builder's persistent buffers (size it with
	// Library.BuilderWorkspaceSize); the builder keeps it reachable. Nil: libattn allocates.
	Workspace *HostBuffer
	// ExternalWorkspace is device memory for the persistent buffers (ExternalWorkspaceSize
	// bytes, 256-byte aligned) that the caller keeps valid for the builder's lifetime.
	ExternalWorkspace     uintptr
	ExternalWorkspaceSize uint64
	// ABI 1.1
	ModelDtype                     KVDtype
	UseTRTLLMAttention             int32 // -1 auto (None), 0 False, 1 True
	KVTransferEnabled              bool
	DisableFlashinferQQuantization bool
	CudagraphCaptureSizes          []int32 // nil: vLLM's default list
	NumGPUBlocks                   int64   // FLEX_ATTENTION requires it
	FlexAttnQBlockSize             int32
	FlexAttnKVBlockSize            int32
	SpeculativeTokenTree           string // "" = None; e.g. "[(0,), (1,), (0, 0)]"
	KVSharingFastPrefill           bool
	MaxEncoderLen                  int32
	CPUAttnISA                     CPUISA
	// ABI 1.2: the MLA backends' options (0 = vLLM's default; see attn_c.h)
	MLAKVLoraRank                  int32 // kv_lora_rank; 0 = 512
	MLAQKRopeHeadDim               int32 // qk_rope_head_dim; 0 = 64
	MLAQKNopeHeadDim               int32 // qk_nope_head_dim; 0 = 128
	MLAVHeadDim                    int32 // v_head_dim; 0 = 128
	MLAChunkedPrefillWorkspaceSize int32 // tokens; 0 = vLLM's determine_chunked_prefill_workspace_size
	DisableFlashinferPrefill       bool
	UseCudnnPrefill                bool
	UseTRTLLMRaggedDeepseekPrefill bool
	// ABI 1.4: vLLM's model runner V2 (with parallel drafting the reorder threshold is 1 + k,
	// not 1 + 2k) and the GPU's SM count (TRITON_ATTN's 64-segment scratch on SM 12.0; 0 =
	// unknown).
	UseV2ModelRunner bool
	NumSMs           int32
	// ABI 1.4: vLLM 0.33's model_config.rswa_window (0 = None) and is_mm_prefix_lm (the
	// multimodal PrefixLM and R-SWA fields of FLASH_ATTN and TRITON_ATTN).
	RSWAWindow   int32
	IsMMPrefixLM bool
	// ABI 1.4: vLLM's attention_config.use_non_causal and
	// speculative_config.enable_adaptive_verification (FLASHINFER's level and varlen decode).
	UseNonCausal               bool
	EnableAdaptiveVerification bool
	// ABI 1.6: vLLM 0.33's ReplaySSM (cache_config.use_replayssm, replayssm_buffer_len,
	// mamba_config.backend == FLASHINFER, scheduler_config.async_scheduling) and prefill
	// checkpoint settings (cache_config.hash_block_size, cache_hit_alignment_tokens,
	// num_hash_lookahead_tokens, speculative_config.use_eagle_block_drop()) of the Mamba builders.
	UseReplaySSM            bool
	ReplaySSMBufferLen      int32
	MambaBackendFlashInfer  bool
	AsyncScheduling         bool
	HashBlockSize           int32
	CacheHitAlignmentTokens int32
	NumHashLookaheadTokens  int32
	UseEagleBlockDrop       bool
	// ABI 1.6: GDN_ATTN's prefill kernel, one of the ATTN_GDN_PREFILL_* values (0 = AUTO: from
	// the compute capability; 1 = TRITON: FLA chunk metadata; 2 = FLASHINFER: none).
	GDNPrefillBackend int32
	// ABI 1.7: the MLA prefill backend, one of the ATTN_MLA_PREFILL_* values (0 = AUTO: vLLM's
	// automatic choice; 1 FLASH_ATTN, 2 FLASHINFER, 3 TRTLLM_RAGGED, 4 TOKENSPEED_MLA), and
	// attention_config.use_prefill_query_quantization (FP8 MLA prefill queries).
	MLAPrefillBackend           int32
	UsePrefillQueryQuantization bool
	// ABI 1.7: the block_table_width construction argument (DEEPSEEK_V32_INDEXER); 0 = the
	// worker's width.
	BlockTableWidth int32
	// ABI 1.7: DeepSeek V4 / V4.1 (the compressors and the V4.1 sparse indexer):
	// current_platform.is_rocm(), the PCP world size (0 = 1), the model's candidate_block_size
	// and candidate_topk_blocks (0 = absent), the MXFP4 indexer cache, and
	// kernel_config.sparse_indexer_topk_backend (one of the ATTN_SPARSE_INDEXER_TOPK_* values).
	PlatformROCm               bool
	PrefillContextParallelSize int32
	CandidateBlockSize         int32
	CandidateTopkBlocks        int32
	IndexerKVMXFP4             bool
	SparseIndexerTopkBackend   int32
	// ABI 1.7: speculative_config.method == "dspark" (the sparse SWA builders' non-causal
	// DSpark decode rows).
	SpeculativeDSpark bool
}

// DefaultBuilderConfig is ATTN_BUILDER_CONFIG_INIT: vLLM's defaults, the four required sizes 0.
func DefaultBuilderConfig() BuilderConfig {
	c := C.gattn_builder_config_init()
	return BuilderConfig{
		Device:                            Device{DeviceType(c.device.device_type), int32(c.device.device_id)},
		MaxNumSeqs:                        int32(c.max_num_seqs),
		MaxNumBatchedTokens:               int32(c.max_num_batched_tokens),
		MaxModelLen:                       int32(c.max_model_len),
		NumAttentionHeads:                 int32(c.num_attention_heads),
		NumSpeculativeTokens:              int32(c.num_speculative_tokens),
		ParallelDrafting:                  c.parallel_drafting != 0,
		DecodeContextParallelSize:         int32(c.decode_context_parallel_size),
		DCPRank:                           int32(c.dcp_rank),
		CPKVCacheInterleaveSize:           int32(c.cp_kv_cache_interleave_size),
		CudagraphMode:                     CudagraphMode(c.cudagraph_mode),
		MaxCudagraphCaptureSize:           int32(c.max_cudagraph_capture_size),
		CacheDtype:                        KVDtype(c.cache_dtype),
		AttnType:                          AttentionType(c.attn_type),
		DeviceCapability:                  int32(c.device_capability),
		FlashAttnVersion:                  int32(c.flash_attn_version),
		FlashAttnMaxNumSplitsForCudaGraph: int32(c.flash_attn_max_num_splits_for_cuda_graph),
		BatchInvariant:                    c.batch_invariant != 0,
		Validate:                          ValidateMode(c.validate),
		ModelDtype:                        KVDtype(c.model_dtype),
		UseTRTLLMAttention:                int32(c.use_trtllm_attention),
		KVTransferEnabled:                 c.kv_transfer_enabled != 0,
		DisableFlashinferQQuantization:    c.disable_flashinfer_q_quantization != 0,
		NumGPUBlocks:                      int64(c.num_gpu_blocks),
		FlexAttnQBlockSize:                int32(c.flex_attn_q_block_size),
		FlexAttnKVBlockSize:               int32(c.flex_attn_kv_block_size),
		KVSharingFastPrefill:              c.kv_sharing_fast_prefill != 0,
		MaxEncoderLen:                     int32(c.max_encoder_len),
		CPUAttnISA:                        CPUISA(c.cpu_attn_isa),
		MLAKVLoraRank:                     int32(c.mla_kv_lora_rank),
		MLAQKRopeHeadDim:                  int32(c.mla_qk_rope_head_dim),
		MLAQKNopeHeadDim:                  int32(c.mla_qk_nope_head_dim),
		MLAVHeadDim:                       int32(c.mla_v_head_dim),
		MLAChunkedPrefillWorkspaceSize:    int32(c.mla_chunked_prefill_workspace_size),
		DisableFlashinferPrefill:          c.disable_flashinfer_prefill != 0,
		UseCudnnPrefill:                   c.use_cudnn_prefill != 0,
		UseTRTLLMRaggedDeepseekPrefill:    c.use_trtllm_ragged_deepseek_prefill != 0,
		UseV2ModelRunner:                  c.use_v2_model_runner != 0,
		NumSMs:                            int32(c.num_sms),
		RSWAWindow:                        int32(c.rswa_window),
		IsMMPrefixLM:                      c.is_mm_prefix_lm != 0,
		UseNonCausal:                      c.use_non_causal != 0,
		EnableAdaptiveVerification:        c.enable_adaptive_verification != 0,
		UseReplaySSM:                      c.use_replayssm != 0,
		ReplaySSMBufferLen:                int32(c.replayssm_buffer_len),
		MambaBackendFlashInfer:            c.mamba_backend_flashinfer != 0,
		AsyncScheduling:                   c.async_scheduling != 0,
		HashBlockSize:                     int32(c.hash_block_size),
		CacheHitAlignmentTokens:           int32(c.cache_hit_alignment_tokens),
		NumHashLookaheadTokens:            int32(c.num_hash_lookahead_tokens),
		UseEagleBlockDrop:                 c.use_eagle_block_drop != 0,
		GDNPrefillBackend:                 int32(c.gdn_prefill_backend),
		MLAPrefillBackend:                 int32(c.mla_prefill_backend),
		UsePrefillQueryQuantization:       c.use_prefill_query_quantization != 0,
		BlockTableWidth:                   int32(c.block_table_width),
		PlatformROCm:                      c.platform_rocm != 0,
		PrefillContextParallelSize:        int32(c.prefill_context_parallel_size),
		CandidateBlockSize:                int32(c.candidate_block_size),
		CandidateTopkBlocks:               int32(c.candidate_topk_blocks),
		IndexerKVMXFP4:                    c.indexer_kv_mxfp4 != 0,
		SparseIndexerTopkBackend:          int32(c.sparse_indexer_topk_backend),
		SpeculativeDSpark:                 c.speculative_dspark != 0,
	}
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
	c.device.device_type = C.int32_t(cfg.Device.Type)
	c.device.device_id = C.int32_t(cfg.Device.ID)
	c.max_num_seqs = C.int32_t(cfg.MaxNumSeqs)
	c.max_num_batched_tokens = C.int32_t(cfg.MaxNumBatchedTokens)
	c.max_model_len = C.int32_t(cfg.MaxModelLen)
	c.num_attention_heads = C.int32_t(cfg.NumAttentionHeads)
	c.num_speculative_tokens = C.int32_t(cfg.NumSpeculativeTokens)
	c.parallel_drafting = cBool(cfg.ParallelDrafting)
	c.decode_context_parallel_size = C.int32_t(cfg.DecodeContextParallelSize)
	c.dcp_rank = C.int32_t(cfg.DCPRank)
	c.cp_kv_cache_interleave_size = C.int32_t(cfg.CPKVCacheInterleaveSize)
	c.cudagraph_mode = C.int32_t(cfg.CudagraphMode)
	c.max_cudagraph_capture_size = C.int32_t(cfg.MaxCudagraphCaptureSize)
	c.cache_dtype = C.int32_t(cfg.CacheDtype)
	c.attn_type = C.int32_t(cfg.AttnType)
	c.device_capability = C.int32_t(cfg.DeviceCapability)
	c.flash_attn_version = C.int32_t(cfg.FlashAttnVersion)
	c.flash_attn_max_num_splits_for_cuda_graph = C.int32_t(cfg.FlashAttnMaxNumSplitsForCudaGraph)
	c.batch_invariant = cBool(cfg.BatchInvariant)
	c.validate = C.int32_t(cfg.Validate)
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
	c.model_dtype = C.int32_t(cfg.ModelDtype)
	c.use_trtllm_attention = C.int32_t(cfg.UseTRTLLMAttention)
	c.kv_transfer_enabled = cBool(cfg.KVTransferEnabled)
	c.disable_flashinfer_q_quantization = cBool(cfg.DisableFlashinferQQuantization)
	if cfg.CudagraphCaptureSizes != nil {
		if c.cudagraph_capture_sizes, err = a.int32s(cfg.CudagraphCaptureSizes, "config.cudagraph_capture_sizes"); err != nil {
			return nil, err
		}
		c.num_cudagraph_capture_sizes = C.size_t(len(cfg.CudagraphCaptureSizes))
	}
	c.num_gpu_blocks = C.int64_t(cfg.NumGPUBlocks)
	c.flex_attn_q_block_size = C.int32_t(cfg.FlexAttnQBlockSize)
	c.flex_attn_kv_block_size = C.int32_t(cfg.FlexAttnKVBlockSize)
	if cfg.SpeculativeTokenTree != "" {
		if c.speculative_token_tree, err = a.cstring(cfg.SpeculativeTokenTree, "config.speculative_token_tree"); err != nil {
			return nil, err
		}
	}
	c.kv_sharing_fast_prefill = cBool(cfg.KVSharingFastPrefill)
	c.max_encoder_len = C.int32_t(cfg.MaxEncoderLen)
	c.cpu_attn_isa = C.int32_t(cfg.CPUAttnISA)
	c.mla_kv_lora_rank = C.int32_t(cfg.MLAKVLoraRank)
	c.mla_qk_rope_head_dim = C.int32_t(cfg.MLAQKRopeHeadDim)
	c.mla_qk_nope_head_dim = C.int32_t(cfg.MLAQKNopeHeadDim)
	c.mla_v_head_dim = C.int32_t(cfg.MLAVHeadDim)
	c.mla_chunked_prefill_workspace_size = C.int32_t(cfg.MLAChunkedPrefillWorkspaceSize)
	c.disable_flashinfer_prefill = cBool(cfg.DisableFlashinferPrefill)
	c.use_cudnn_prefill = cBool(cfg.UseCudnnPrefill)
	c.use_trtllm_ragged_deepseek_prefill = cBool(cfg.UseTRTLLMRaggedDeepseekPrefill)
	c.use_v2_model_runner = cBool(cfg.UseV2ModelRunner)
	c.num_sms = C.int32_t(cfg.NumSMs)
	c.rswa_window = C.int32_t(cfg.RSWAWindow)
	c.is_mm_prefix_lm = cBool(cfg.IsMMPrefixLM)
	c.use_non_causal = cBool(cfg.UseNonCausal)
	c.enable_adaptive_verification = cBool(cfg.EnableAdaptiveVerification)
	c.use_replayssm = cBool(cfg.UseReplaySSM)
	c.replayssm_buffer_len = C.int32_t(cfg.ReplaySSMBufferLen)
	c.mamba_backend_flashinfer = cBool(cfg.MambaBackendFlashInfer)
	c.async_scheduling = cBool(cfg.AsyncScheduling)
	c.hash_block_size = C.int32_t(cfg.HashBlockSize)
	c.cache_hit_alignment_tokens = C.int32_t(cfg.CacheHitAlignmentTokens)
	c.num_hash_lookahead_tokens = C.int32_t(cfg.NumHashLookaheadTokens)
	c.use_eagle_block_drop = cBool(cfg.UseEagleBlockDrop)
	c.gdn_prefill_backend = C.int32_t(cfg.GDNPrefillBackend)
	c.mla_prefill_backend = C.int32_t(cfg.MLAPrefillBackend)
	c.use_prefill_query_quantization = cBool(cfg.UsePrefillQueryQuantization)
	c.block_table_width = C.int32_t(cfg.BlockTableWidth)
	c.platform_rocm = cBool(cfg.PlatformROCm)
	c.prefill_context_parallel_size = C.int32_t(cfg.PrefillContextParallelSize)
	c.candidate_block_size = C.int32_t(cfg.CandidateBlockSize)
	c.candidate_topk_blocks = C.int32_t(cfg.CandidateTopkBlocks)
	c.indexer_kv_mxfp4 = cBool(cfg.IndexerKVMXFP4)
	c.sparse_indexer_topk_backend = C.int32_t(cfg.SparseIndexerTopkBackend)
	c.speculative_dspark = cBool(cfg.SpeculativeDSpark)
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
