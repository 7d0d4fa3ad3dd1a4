"""The configuration structs: :class:`KvCacheSpec`, :class:`BuilderConfig`, :class:`PerLayerParams`.

Each is a plain Python object whose attributes are the C fields (same names, same defaults as
the header's ``*_INIT`` macros); ``to_struct()`` fills the ctypes mirror and keeps alive what it
points into.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, fields
from typing import List, Optional, Sequence, Tuple, Union

from .enums import (AttentionType, CpuIsa, CudagraphMode, DeviceType, KvCacheKind, KvDtype,
                    MambaCacheMode, MambaType, ValidateMode)
from .structs import attn_builder_config_t, attn_kv_cache_spec_t, attn_per_layer_params_t, new

__all__ = ["KvCacheSpec", "BuilderConfig", "PerLayerParams", "Device", "parse_device"]

Device = Union[str, Tuple[int, int]]


def parse_device(device: Device) -> Tuple[int, int]:
    """``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``(device_type, id)`` pair -> the pair."""
    if isinstance(device, tuple):
        return int(device[0]), int(device[1])
    if device == "cpu":
        return DeviceType.CPU, 0
    if device == "cuda":
        return DeviceType.CUDA, 0
    if isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
        return DeviceType.CUDA, int(device[5:])
    raise ValueError(f"device={device!r}: expected 'cpu', 'cuda', 'cuda:N' or (type, id)")


@dataclass
class KvCacheSpec:
    """``attn_kv_cache_spec_t`` (vLLM's ``AttentionSpec``): block size, KV heads, head size.

    The ``mamba_*`` fields and ``num_speculative_blocks`` (ABI 1.2) are ``MambaSpec``'s, read
    for ``KvCacheKind.MAMBA`` specs by the Mamba-family backends."""

    block_size: int
    num_kv_heads: int
    head_size: int
    kind: int = KvCacheKind.FULL_ATTENTION
    dtype: int = KvDtype.BFLOAT16
    sliding_window: int = 0
    attention_chunk_size: int = 0
    mamba_type: int = MambaType.AUTO
    mamba_chunk_size: int = 0
    mamba_cache_mode: int = MambaCacheMode.NONE
    num_speculative_blocks: int = 0
    # ABI 1.6: MambaSpec's num_prefill_checkpoint_blocks, prefill_checkpoint_alignment (0 =
    # None), shapes[4][0] (the ReplaySSM B cache's groups) and shapes[2][0] (its heads)
    num_prefill_checkpoint_blocks: int = 0
    prefill_checkpoint_alignment: int = 0
    mamba_replayssm_ngroups: int = 0
    mamba_num_heads: int = 0
    # ABI 1.7: sparse MLA (MLAAttentionSpec of DeepSeek V3.2's indexer layers): the model's
    # index_topk (0 = 2048) and MLAAttentionSpec.topk_buffer_width (0 = None)
    index_topk: int = 0
    topk_buffer_width: int = 0
    # ABI 1.7: SinkFullAttentionSpec.sink_len (> 0: the StaticSink wrapper; 0 = None) and
    # AttentionSpec.head_size_v (0 = head_size; FLASH_ATTN_DIFFKV / TRITON_ATTN_DIFFKV)
    sink_len: int = 0
    head_size_v: int = 0
    # ABI 1.7: MLAAttentionSpec.tokens_per_state (DeepSeek V4 sparse MLA's compress ratio; 0 = 1)
    tokens_per_state: int = 0

    def to_struct(self) -> attn_kv_cache_spec_t:
        return new(attn_kv_cache_spec_t, kind=int(self.kind), block_size=self.block_size,
                   num_kv_heads=self.num_kv_heads, head_size=self.head_size,
                   dtype=int(self.dtype), sliding_window=self.sliding_window,
                   attention_chunk_size=self.attention_chunk_size,
                   mamba_type=int(self.mamba_type), mamba_chunk_size=self.mamba_chunk_size,
                   mamba_cache_mode=int(self.mamba_cache_mode),
                   num_speculative_blocks=self.num_speculative_blocks,
                   num_prefill_checkpoint_blocks=self.num_prefill_checkpoint_blocks,
                   prefill_checkpoint_alignment=self.prefill_checkpoint_alignment,
                   mamba_replayssm_ngroups=self.mamba_replayssm_ngroups,
                   mamba_num_heads=self.mamba_num_heads, index_topk=self.index_topk,
                   topk_buffer_width=self.topk_buffer_width,
                   sink_len=self.sink_len, head_size_v=self.head_size_v,
                   tokens_per_state=self.tokens_per_state)


@dataclass
class PerLayerParams:
    """``attn_per_layer_params_t`` (vLLM's ``PerLayerParameters``)."""

    window_left: int = -1
    logits_soft_cap: Optional[float] = None
    sm_scale: float = 1.0
    has_sinks: bool = False

    def fill(self, s: attn_per_layer_params_t) -> None:
        s.struct_size = ctypes.sizeof(attn_per_layer_params_t)
        s.window_left = self.window_left
        s.has_logits_soft_cap = int(self.logits_soft_cap is not None)
        s.logits_soft_cap = float(self.logits_soft_cap or 0.0)
        s.sm_scale = float(self.sm_scale)
        s.has_sinks = int(self.has_sinks)

    @classmethod
    def from_struct(cls, s: attn_per_layer_params_t) -> "PerLayerParams":
        return cls(window_left=s.window_left,
                   logits_soft_cap=s.logits_soft_cap if s.has_logits_soft_cap else None,
                   sm_scale=s.sm_scale, has_sinks=bool(s.has_sinks))


def layer_array(layers: Sequence[PerLayerParams]) -> "ctypes.Array":
    """A C array of ``attn_per_layer_params_t`` for ``layers``."""
    arr = (attn_per_layer_params_t * max(len(layers), 1))()
    for s, layer in zip(arr, layers):
        layer.fill(s)
    return arr


@dataclass
class BuilderConfig:
    """``attn_builder_config_t``: the parts of vLLM's ``VllmConfig`` builders read. The four
    sizes are required; every other field has the header's default (vLLM's)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    num_attention_heads: int
    device: Device = "cpu"
    num_speculative_tokens: int = 0
    parallel_drafting: int = 0
    decode_context_parallel_size: int = 1
    dcp_rank: int = 0
    cp_kv_cache_interleave_size: int = 1
    cudagraph_mode: int = CudagraphMode.FULL_AND_PIECEWISE
    max_cudagraph_capture_size: int = 0
    cache_dtype: int = KvDtype.AUTO
    attn_type: int = AttentionType.DECODER
    device_capability: int = 0
    flash_attn_version: int = 0
    flash_attn_max_num_splits_for_cuda_graph: int = 32
    batch_invariant: int = 0
    validate: int = ValidateMode.HOST
    layers: List[PerLayerParams] = field(default_factory=list)
    workspace: Optional[int] = None  #: address of caller memory for the persistent buffers
    workspace_size: int = 0
    model_dtype: int = KvDtype.AUTO
    use_trtllm_attention: int = -1
    kv_transfer_enabled: int = 0
    disable_flashinfer_q_quantization: int = 0
    cudagraph_capture_sizes: Optional[List[int]] = None
    num_gpu_blocks: int = 0
    flex_attn_q_block_size: int = 0
    flex_attn_kv_block_size: int = 0
    speculative_token_tree: Optional[str] = None
    kv_sharing_fast_prefill: int = 0
    max_encoder_len: int = 0
    cpu_attn_isa: int = CpuIsa.DETECT
    # ABI 1.2: the MLA backends (0 = the header's default: DeepSeek-V3's 512 / 64 / 128 / 128,
    # vLLM's chunked-prefill workspace size)
    mla_kv_lora_rank: int = 0
    mla_qk_rope_head_dim: int = 0
    mla_qk_nope_head_dim: int = 0
    mla_v_head_dim: int = 0
    mla_chunked_prefill_workspace_size: int = 0
    disable_flashinfer_prefill: int = 0
    use_cudnn_prefill: int = 0
    use_trtllm_ragged_deepseek_prefill: int = 0
    # ABI 1.4: vLLM's model runner V2 (the reorder threshold with parallel drafting) and the
    # GPU's SM count (TRITON_ATTN's 64-segment scratch on compute capability 12.0); 0 = V1 /
    # unknown
    use_v2_model_runner: int = 0
    num_sms: int = 0
    # ABI 1.4: vLLM 0.33's model_config.rswa_window (0 = None) and is_mm_prefix_lm (the
    # multimodal PrefixLM and R-SWA fields of FLASH_ATTN and TRITON_ATTN)
    rswa_window: int = 0
    is_mm_prefix_lm: int = 0
    # ABI 1.4: vLLM's attention_config.use_non_causal and
    # speculative_config.enable_adaptive_verification (FLASHINFER's level and varlen decode)
    use_non_causal: int = 0
    enable_adaptive_verification: int = 0
    # ABI 1.6: vLLM 0.33's ReplaySSM (cache_config.use_replayssm, replayssm_buffer_len,
    # mamba_config.backend == FLASHINFER, scheduler_config.async_scheduling) and prefill
    # checkpoint settings (cache_config.hash_block_size, cache_hit_alignment_tokens,
    # VllmConfig.num_hash_lookahead_tokens, speculative_config.use_eagle_block_drop()) of the
    # Mamba builders; 0 = None / off
    use_replayssm: int = 0
    replayssm_buffer_len: int = 16
    mamba_backend_flashinfer: int = 0
    async_scheduling: int = 0
    hash_block_size: int = 0
    cache_hit_alignment_tokens: int = 0
    num_hash_lookahead_tokens: int = 0
    use_eagle_block_drop: int = 0
    # ABI 1.6: GDN_ATTN's prefill kernel (GdnPrefillBackend: AUTO, TRITON, FLASHINFER)
    gdn_prefill_backend: int = 0
    # ABI 1.7: the MLA prefill backend (MlaPrefillBackend: AUTO, FLASH_ATTN, FLASHINFER,
    # TRTLLM_RAGGED, TOKENSPEED_MLA) and FP8 prefill queries (vLLM 0.33's attention_config)
    mla_prefill_backend: int = 0
    use_prefill_query_quantization: int = 0
    # ABI 1.7: the requires_block_table_width construction argument (DEEPSEEK_V32_INDEXER);
    # 0 = the worker's width
    block_table_width: int = 0
    # ABI 1.7: DeepSeek V4 / V4.1 (DEEPSEEK_V4_COMPRESSOR, DEEPSEEK_V41_COMPRESSOR,
    # DEEPSEEK_V41_SPARSE_INDEXER): current_platform.is_rocm(), the PCP world size (0 = 1), the
    # model's candidate_block_size / candidate_topk_blocks (0 = absent), the MXFP4 indexer cache
    # and kernel_config.sparse_indexer_topk_backend (SparseIndexerTopkBackend)
    platform_rocm: int = 0
    prefill_context_parallel_size: int = 0
    candidate_block_size: int = 0
    candidate_topk_blocks: int = 0
    indexer_kv_mxfp4: int = 0
    sparse_indexer_topk_backend: int = 0
    # ABI 1.7: speculative_config.method == "dspark" (the sparse SWA builders' non-causal
    # DSpark rows)
    speculative_dspark: int = 0

    _SPECIAL = ("device", "layers", "workspace", "cudagraph_capture_sizes",
                "speculative_token_tree")

    def to_struct(self) -> "ConfigStruct":
        """The filled ``attn_builder_config_t`` (with what it points into)."""
        s = new(attn_builder_config_t)
        keep: list = []
        for f in fields(self):
            if f.name not in self._SPECIAL:
                setattr(s, f.name, int(getattr(self, f.name)))
        s.device.device_type, s.device.device_id = parse_device(self.device)
        if self.layers:
            arr = layer_array(self.layers)
            keep.append(arr)
            s.layers = ctypes.cast(arr, ctypes.POINTER(attn_per_layer_params_t))
            s.num_layers = len(self.layers)
        if self.workspace is not None:
            s.workspace = self.workspace
        if self.cudagraph_capture_sizes is not None:
            sizes = (ctypes.c_int32 * max(len(self.cudagraph_capture_sizes), 1))(
                *self.cudagraph_capture_sizes)
            keep.append(sizes)
            s.cudagraph_capture_sizes = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int32))
            s.num_cudagraph_capture_sizes = len(self.cudagraph_capture_sizes)
        if self.speculative_token_tree is not None:
            tree = self.speculative_token_tree.encode()
            if b"\0" in tree:
                raise ValueError("speculative_token_tree contains a NUL byte")
            keep.append(tree)
            s.speculative_token_tree = tree
        return ConfigStruct(s, keep)


class ConfigStruct:
    """An ``attn_builder_config_t`` and the arrays it points into."""

    def __init__(self, struct: attn_builder_config_t, keep: list) -> None:
        self.struct = struct
        self.keep = keep
        self.ref = ctypes.pointer(struct)
