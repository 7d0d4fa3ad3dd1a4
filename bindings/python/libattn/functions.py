"""The signature of every function of ``include/attn_c.h`` (ABI 1.3), for ctypes.

:data:`SIGNATURES` maps each exported name of ABI 1.0 to ``(restype, argtypes)``; :class:`~libattn.Library`
resolves every one at load time (a missing symbol is an error naming it) and exposes them as
``library.raw.<name>``. ``tests/test_layout.py`` checks the names against ``abi/symbols.txt``.
Handles (``attn_error_t*``, ``attn_builder_t*``, ...) are ``c_void_p``.
"""
from __future__ import annotations

from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_void_p

from .structs import (attn_api_header_t, attn_backend_info_t, attn_batch_split_t,
                      attn_builder_config_t, attn_cascade_query_t,
                      attn_common_metadata_t, attn_conv1d_info_t, attn_field_t,
                      attn_kv_cache_spec_t, attn_local_attention_out_t, attn_per_layer_params_t,
                      attn_slot_mapping_args_t, attn_tensor_t, attn_ubatch_out_t,
                      attn_ubatch_slice_t)

__all__ = ["SIGNATURES", "OPTIONAL_SIGNATURES"]

E = c_void_p  # attn_error_t*
H = c_void_p  # any opaque handle
HP = POINTER(c_void_p)  # handle out-parameter
T = POINTER(attn_tensor_t)
C = POINTER(attn_common_metadata_t)
SPEC = POINTER(attn_kv_cache_spec_t)
CFG = POINTER(attn_builder_config_t)
I32P = POINTER(c_int32)
I64P = POINTER(c_int64)
S = c_void_p  # attn_stream_t

SIGNATURES = {
    "attn_error_code": (c_int32, [E]),
    "attn_error_message": (c_char_p, [E]),
    "attn_error_destroy": (None, [E]),
    "attn_status_string": (c_char_p, [c_int32]),
    "attn_get_version": (None, [POINTER(c_uint32)] * 3),
    "attn_check_version": (E, [c_uint32, c_uint32]),
    "attn_device_count": (E, [c_int32, I32P]),
    "attn_common_metadata_unpadded": (E, [C, c_int64, c_int64, HP]),
    "attn_split_decodes_and_prefills": (E, [C, c_int32, c_int32, POINTER(attn_batch_split_t)]),
    "attn_split_decodes_prefills_and_extends": (E, [C, c_int32, POINTER(attn_batch_split_t)]),
    "attn_reorder_batch_to_split_decodes_and_prefills":
        (E, [I32P, I32P, c_int64, c_int32, I32P, c_int64, I64P]),
    "attn_split_prefill_chunks": (E, [I32P, c_int64, c_int64, c_int64, I64P, c_int64, I64P]),
    "attn_get_dcp_local_seq_lens": (E, [T, c_int32, c_int32, c_int32, T, S]),
    "attn_reshape_query_for_spec_decode": (E, [T, c_int64, T, I64P, I64P]),
    "attn_compute_slot_mapping": (E, [POINTER(attn_slot_mapping_args_t), S]),
    "attn_compute_flashinfer_kv_metadata": (E, [T, T, T, c_int32, T, T, T, I64P, S]),
    "attn_compute_causal_conv1d_metadata":
        (E, [T, T, T, T, T, POINTER(attn_conv1d_info_t), S]),
    "attn_make_kv_sharing_fast_prefill_common_attn_metadata": (E, [C, T, T, T, HP, S]),
    "attn_local_attention_num_virtual_batches": (E, [c_int32, C, I64P]),
    "attn_make_local_attention_virtual_batches":
        (E, [c_int32, C, c_int32, POINTER(attn_local_attention_out_t), HP, S]),
    "attn_remap_local_block_table": (E, [T, T, T, c_int64, T, S]),
    "attn_slice_query_start_locs": (E, [T, c_int64, c_int64, T, S]),
    "attn_maybe_create_ubatch_slices":
        (E, [I32P, c_int64, c_int64, c_int64, c_int32, c_int64, POINTER(attn_ubatch_slice_t),
             POINTER(attn_ubatch_slice_t)]),
    "attn_make_metadata_with_slice":
        (E, [C, POINTER(attn_ubatch_slice_t), POINTER(attn_ubatch_out_t), HP, S]),
    "attn_split_attn_metadata":
        (E, [C, POINTER(attn_ubatch_slice_t), c_size_t, POINTER(attn_ubatch_out_t), HP, S]),
    "attn_backend_count": (c_size_t, []),
    "attn_backend_name": (E, [c_size_t, POINTER(c_char_p)]),
    "attn_backend_cudagraph_support": (E, [c_char_p, SPEC, CFG, I32P]),
    "attn_builder_workspace_size": (E, [c_char_p, SPEC, CFG, POINTER(c_size_t)]),
    "attn_builder_create": (E, [c_char_p, SPEC, CFG, HP]),
    "attn_builder_destroy": (None, [H]),
    "attn_builder_backend_name": (c_char_p, [H]),
    "attn_builder_cudagraph_support": (E, [H, I32P]),
    "attn_builder_reorder_batch_threshold": (E, [H, I32P]),
    "attn_builder_supports_update_block_table": (E, [H, I32P]),
    "attn_min_cudagraph_support": (E, [POINTER(c_void_p), c_size_t, I32P]),
    "attn_build": (E, [H, c_int64, C, c_int32, HP, S]),
    "attn_update_block_table": (E, [H, H, T, T, HP, S]),
    "attn_build_for_cudagraph_capture": (E, [H, C, HP, S]),
    "attn_build_for_drafting": (E, [H, C, c_int32, HP, S]),
    "attn_use_cascade_attention": (E, [H, POINTER(attn_cascade_query_t), I32P]),
    "attn_metadata_kind": (c_char_p, [H]),
    "attn_metadata_field_count": (c_size_t, [H]),
    "attn_metadata_field": (E, [H, c_size_t, POINTER(attn_field_t)]),
    "attn_metadata_get": (E, [H, c_char_p, POINTER(attn_field_t)]),
    "attn_metadata_get_tensor": (E, [H, c_char_p, POINTER(T)]),
    "attn_metadata_get_int": (E, [H, c_char_p, I64P]),
    "attn_metadata_clone": (E, [H, HP]),
    "attn_metadata_destroy": (None, [H]),
    "attn_metadata_to_common": (E, [H, C]),
    "attn_infer_global_hyperparameters":
        (E, [POINTER(attn_per_layer_params_t), c_size_t, POINTER(attn_per_layer_params_t), I32P,
             I32P]),
    "attn_plugin_load": (E, [c_char_p, HP]),
    "attn_plugin_unload": (E, [H]),
    "attn_plugin_name": (c_char_p, [H]),
}

#: The functions of ABI 1.3, resolved on first use (:meth:`RegistryMixin.optional_function
#: <libattn.registry.RegistryMixin.optional_function>`), so that the binding still loads a 1.1 or
#: 1.2 library; calling one there raises :class:`~libattn.Unsupported`.
OPTIONAL_SIGNATURES = {
    "attn_backend_info": (E, [c_size_t, POINTER(attn_backend_info_t)]),
    "attn_get_api": (E, [c_uint32, c_uint32, POINTER(POINTER(attn_api_header_t))]),
}
