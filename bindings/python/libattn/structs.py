"""ctypes mirrors of every struct of ``include/attn_c.h`` (ABI 1.3), fields in the header's order.

``tests/test_layout.py`` checks each size against the header's ``*_STRUCT_SIZE`` values. Callers
rarely need these directly: :class:`~libattn.CommonMetadata`, :class:`~libattn.BuilderConfig`
and the other wrappers fill them. Every struct with a ``struct_size`` gets it set to
``ctypes.sizeof`` of the mirror by :func:`new`.
"""
from __future__ import annotations

import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int32, c_int64, c_size_t,
                    c_uint8, c_uint16, c_uint32, c_void_p)
from typing import Type, TypeVar

__all__ = [
    "attn_device_t", "attn_dtype_t", "attn_tensor_t", "attn_kv_cache_spec_t",
    "attn_per_layer_params_t", "attn_allocator_t", "attn_builder_config_t",
    "attn_common_metadata_t", "attn_batch_split_t", "attn_slot_mapping_args_t",
    "attn_conv1d_info_t", "attn_local_attention_out_t", "attn_ubatch_slice_t",
    "attn_ubatch_out_t", "attn_cascade_query_t", "attn_field_t", "attn_backend_info_t",
    "attn_alloc_fn", "attn_free_fn", "new",
]

T = TypeVar("T", bound=Structure)


class attn_device_t(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class attn_dtype_t(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class attn_tensor_t(Structure):
    _fields_ = [("data", c_void_p), ("device", attn_device_t), ("ndim", c_int32),
                ("dtype", attn_dtype_t), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", ctypes.c_uint64)]


Tensor_p = POINTER(attn_tensor_t)


class attn_kv_cache_spec_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int32), ("block_size", c_int32),
                ("num_kv_heads", c_int32), ("head_size", c_int32), ("dtype", c_int32),
                ("sliding_window", c_int32), ("attention_chunk_size", c_int32),
                ("extension", c_void_p),
                # ABI 1.2 (MambaSpec)
                ("mamba_type", c_int32), ("mamba_chunk_size", c_int32),
                ("mamba_cache_mode", c_int32), ("num_speculative_blocks", c_int32)]


class attn_per_layer_params_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("window_left", c_int32),
                ("has_logits_soft_cap", c_int32), ("logits_soft_cap", c_double),
                ("sm_scale", c_double), ("has_sinks", c_int32), ("extension", c_void_p)]


attn_alloc_fn = CFUNCTYPE(c_void_p, c_void_p, c_size_t, c_size_t, attn_device_t)
attn_free_fn = CFUNCTYPE(None, c_void_p, c_void_p, c_size_t, attn_device_t)


class attn_allocator_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("alloc", attn_alloc_fn), ("free", attn_free_fn),
                ("user_data", c_void_p), ("extension", c_void_p)]


class attn_builder_config_t(Structure):
    _fields_ = [
        ("struct_size", c_size_t), ("device", attn_device_t), ("max_num_seqs", c_int32),
        ("max_num_batched_tokens", c_int32), ("max_model_len", c_int32),
        ("num_attention_heads", c_int32), ("num_speculative_tokens", c_int32),
        ("parallel_drafting", c_int32), ("decode_context_parallel_size", c_int32),
        ("dcp_rank", c_int32), ("cp_kv_cache_interleave_size", c_int32),
        ("cudagraph_mode", c_int32), ("max_cudagraph_capture_size", c_int32),
        ("cache_dtype", c_int32), ("attn_type", c_int32), ("device_capability", c_int32),
        ("flash_attn_version", c_int32), ("flash_attn_max_num_splits_for_cuda_graph", c_int32),
        ("batch_invariant", c_int32), ("validate", c_int32),
        ("layers", POINTER(attn_per_layer_params_t)), ("num_layers", c_size_t),
        ("allocator", POINTER(attn_allocator_t)), ("workspace", c_void_p),
        ("workspace_size", c_size_t), ("extension", c_void_p),
        # ABI 1.1
        ("model_dtype", c_int32), ("use_trtllm_attention", c_int32),
        ("kv_transfer_enabled", c_int32), ("disable_flashinfer_q_quantization", c_int32),
        ("cudagraph_capture_sizes", POINTER(c_int32)), ("num_cudagraph_capture_sizes", c_size_t),
        ("num_gpu_blocks", c_int64), ("flex_attn_q_block_size", c_int32),
        ("flex_attn_kv_block_size", c_int32), ("speculative_token_tree", c_char_p),
        ("kv_sharing_fast_prefill", c_int32), ("max_encoder_len", c_int32),
        ("cpu_attn_isa", c_int32), ("reserved_1_1", c_int32),
        # ABI 1.2 (the MLA backends)
        ("mla_kv_lora_rank", c_int32), ("mla_qk_rope_head_dim", c_int32),
        ("mla_qk_nope_head_dim", c_int32), ("mla_v_head_dim", c_int32),
        ("mla_chunked_prefill_workspace_size", c_int32), ("disable_flashinfer_prefill", c_int32),
        ("use_cudnn_prefill", c_int32), ("use_trtllm_ragged_deepseek_prefill", c_int32),
    ]


class attn_common_metadata_t(Structure):
    _fields_ = [
        ("struct_size", c_size_t), ("query_start_loc", Tensor_p),
        ("query_start_loc_cpu", Tensor_p), ("seq_lens", Tensor_p), ("seq_lens_cpu", Tensor_p),
        ("num_reqs", c_int64), ("num_actual_tokens", c_int64), ("max_query_len", c_int64),
        ("max_seq_len", c_int64), ("block_table_tensor", Tensor_p), ("slot_mapping", Tensor_p),
        ("causal", c_int32), ("logits_indices_padded", Tensor_p), ("num_logits_indices", c_int64),
        ("encoder_seq_lens", Tensor_p), ("encoder_seq_lens_cpu", Tensor_p),
        ("dcp_local_seq_lens", Tensor_p), ("dcp_local_seq_lens_cpu", Tensor_p),
        ("extension", c_void_p),
        # ABI 1.1
        ("logits_indices_padded_cpu", Tensor_p),
        # ABI 1.2
        ("num_accepted_tokens", Tensor_p), ("num_decode_draft_tokens_cpu", Tensor_p),
        ("num_decode_draft_tokens", Tensor_p), ("is_prefilling", Tensor_p),
    ]


class attn_batch_split_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("num_decodes", c_int64), ("num_extends", c_int64),
                ("num_prefills", c_int64), ("num_decode_tokens", c_int64),
                ("num_extend_tokens", c_int64), ("num_prefill_tokens", c_int64)]


class attn_slot_mapping_args_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("query_start_loc", Tensor_p),
                ("query_start_loc_cpu", Tensor_p), ("num_reqs", c_int64), ("positions", Tensor_p),
                ("positions_cpu", Tensor_p), ("block_table", Tensor_p), ("block_size", c_int32),
                ("dcp_world_size", c_int32), ("dcp_rank", c_int32),
                ("cp_kv_cache_interleave_size", c_int32), ("slot_mapping", Tensor_p),
                ("extension", c_void_p)]


class attn_conv1d_info_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("tot", c_int64), ("num_programs", c_int64)]


class attn_local_attention_out_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("query_start_loc", Tensor_p),
                ("query_start_loc_cpu", Tensor_p), ("seq_lens", Tensor_p),
                ("seq_lens_cpu", Tensor_p), ("num_computed_tokens_cpu", Tensor_p),
                ("block_table", Tensor_p), ("virtual_req", Tensor_p),
                ("virtual_block_start", Tensor_p), ("extension", c_void_p)]


class attn_ubatch_slice_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("request_start", c_int64), ("request_stop", c_int64),
                ("token_start", c_int64), ("token_stop", c_int64)]


class attn_ubatch_out_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("query_start_loc", Tensor_p),
                ("query_start_loc_cpu", Tensor_p), ("seq_lens", Tensor_p),
                ("seq_lens_cpu", Tensor_p), ("extension", c_void_p)]


class attn_cascade_query_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("common_prefix_len", c_int64),
                ("query_lens", POINTER(c_int32)), ("num_reqs", c_int64),
                ("num_query_heads", c_int32), ("num_kv_heads", c_int32), ("use_alibi", c_int32),
                ("use_sliding_window", c_int32), ("use_local_attention", c_int32),
                ("num_sms", c_int32), ("dcp_world_size", c_int32), ("extension", c_void_p)]


class attn_field_t(Structure):
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("kind", c_int32),
                ("tensor", Tensor_p), ("int_value", c_int64), ("float_value", c_double)]


class attn_backend_info_t(Structure):
    """ABI 1.3: what ``attn_backend_info`` writes (the caller sets ``struct_size``)."""
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("kv_cache_kinds", c_uint32),
                ("origin", c_int32), ("vllm_release", c_char_p), ("extension", c_void_p)]


class attn_api_header_t(Structure):
    """ABI 1.3: the first member of ``attn_api_t``, the table ``attn_get_api`` returns; its
    function pointers follow, one per name of the header's ``ATTN_API_FUNCTIONS``, in that order.
    ctypes binds every function by name (:data:`~libattn.functions.SIGNATURES`), so the binding
    reads only the size. Not a mirror of a C struct, so not in ``__all__``."""
    _fields_ = [("struct_size", c_size_t)]


def new(cls: Type[T], **values) -> T:
    """An instance of a mirror with ``struct_size`` set (when it has one) and ``values``."""
    s = cls(**values)
    if any(name == "struct_size" for name, _ in cls._fields_):
        s.struct_size = ctypes.sizeof(cls)
    return s

