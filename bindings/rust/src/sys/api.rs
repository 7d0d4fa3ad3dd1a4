//! [`Api`]: one function pointer per ABI function of attn_c.h (all 56, in the order of the
//! header's `ATTN_API_FUNCTIONS`: ABI 1.0's in header order, then 1.3's), resolved by name when
//! the library is loaded. Calling an entry is `unsafe`: it is the C
//! function itself, with the header's contract.
use core::ffi::{c_char, c_void, CStr};

use super::structs::*;

type E = *mut attn_error_t;
type Md = attn_metadata_t;
type T = attn_tensor_t;

macro_rules! api_table {
    ($( fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?; )*
     optional:
     $( fn $oname:ident($($oarg:ident: $oty:ty),* $(,)?) $(-> $oret:ty)?; )*) => {
        /// The function table: field names are the C symbol names, in the order of the
        /// header's `ATTN_API_FUNCTIONS` (so its layout is that of `attn_api_t` after
        /// `struct_size`).
        #[repr(C)]
        #[derive(Clone, Copy)]
        pub struct Api {
            $( #[doc = concat!("`", stringify!($name), "` (see include/attn_c.h).")]
               pub $name: unsafe extern "C" fn($($arg: $ty),*) $(-> $ret)?, )*
            $( #[doc = concat!("`", stringify!($oname), "` (see include/attn_c.h); `None` when the \
                                library predates it.")]
               pub $oname: Option<unsafe extern "C" fn($($oarg: $oty),*) $(-> $oret)?>, )*
        }

        /// The symbol names of every entry of [`Api`], in order.
        pub const SYMBOLS: &[&str] = &[$(stringify!($name),)* $(stringify!($oname)),*];

        impl Api {
            /// Resolves every symbol with `resolve`, which returns the address of a symbol or a
            /// message; the first failure is returned with the symbol's name.
            ///
            /// # Safety
            /// Every address `resolve` returns must be that of the C function of that name with
            /// the signature of attn_c.h.
            pub unsafe fn load(
                mut resolve: impl FnMut(&CStr) -> Result<*mut c_void, String>,
            ) -> Result<Api, (&'static str, String)> {
                Ok(Api { $( $name: {
                    let name = concat!(stringify!($name), "\0");
                    let cname = CStr::from_bytes_with_nul(name.as_bytes()).expect("symbol name");
                    let address = resolve(cname).map_err(|e| (stringify!($name), e))?;
                    // SAFETY: the caller guarantees the address is this function.
                    core::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) $(-> $ret)?>(address)
                }, )*
                $( $oname: {
                    let name = concat!(stringify!($oname), "\0");
                    let cname = CStr::from_bytes_with_nul(name.as_bytes()).expect("symbol name");
                    match resolve(cname) {
                        // SAFETY: the caller guarantees the address is this function.
                        Ok(address) if !address.is_null() => Some(core::mem::transmute::<
                            *mut c_void,
                            unsafe extern "C" fn($($oty),*) $(-> $oret)?,
                        >(address)),
                        _ => None,
                    }
                }, )* })
            }
        }
    };
}

api_table! {
    // errors
    fn attn_error_code(err: *const attn_error_t) -> i32;
    fn attn_error_message(err: *const attn_error_t) -> *const c_char;
    fn attn_error_destroy(err: *mut attn_error_t);
    fn attn_status_string(code: i32) -> *const c_char;
    // versions
    fn attn_get_version(major: *mut u32, minor: *mut u32, patch: *mut u32);
    fn attn_check_version(major: u32, minor: u32) -> E;
    // devices
    fn attn_device_count(device_type: i32, out: *mut i32) -> E;
    // common metadata
    fn attn_common_metadata_unpadded(common: *const attn_common_metadata_t, num_actual_tokens: i64,
                                     num_actual_reqs: i64, out: *mut *mut Md) -> E;
    // batch utilities
    fn attn_split_decodes_and_prefills(common: *const attn_common_metadata_t, decode_threshold: i32,
                                       require_uniform: i32, out: *mut attn_batch_split_t) -> E;
    fn attn_split_decodes_prefills_and_extends(common: *const attn_common_metadata_t,
                                               decode_threshold: i32, out: *mut attn_batch_split_t) -> E;
    fn attn_reorder_batch_to_split_decodes_and_prefills(num_scheduled_tokens: *const i32,
        num_computed_tokens: *const i32, num_reqs: i64, decode_threshold: i32, out_swaps: *mut i32,
        swaps_capacity: i64, out_num_swaps: *mut i64) -> E;
    fn attn_split_prefill_chunks(seq_lens: *const i32, num_seqs: i64, workspace_size: i64,
        request_offset: i64, out_bounds: *mut i64, bounds_capacity: i64, out_num_chunks: *mut i64) -> E;
    fn attn_get_dcp_local_seq_lens(seq_lens: *const T, dcp_size: i32, dcp_rank: i32,
        cp_kv_cache_interleave_size: i32, out: *const T, stream: attn_stream_t) -> E;
    fn attn_reshape_query_for_spec_decode(query: *const T, batch_size: i64, out: *mut T,
        out_shape: *mut i64, out_strides: *mut i64) -> E;
    fn attn_compute_slot_mapping(args: *const attn_slot_mapping_args_t, stream: attn_stream_t) -> E;
    fn attn_compute_flashinfer_kv_metadata(seq_lens: *const T, seq_lens_cpu: *const T,
        block_table: *const T, page_size: i32, out_indptr: *const T, out_indices: *const T,
        out_last_page_len: *const T, out_num_pages: *mut i64, stream: attn_stream_t) -> E;
    fn attn_compute_causal_conv1d_metadata(query_start_loc_p_cpu: *const T, query_start_loc_p: *const T,
        out_batch_ptr: *const T, out_token_chunk_offset_ptr: *const T, out_nums: *const T,
        info: *mut attn_conv1d_info_t, stream: attn_stream_t) -> E;
    fn attn_make_kv_sharing_fast_prefill_common_attn_metadata(common: *const attn_common_metadata_t,
        logits_indices_cpu: *const T, out_query_start_loc: *const T, out_query_start_loc_cpu: *const T,
        out: *mut *mut Md, stream: attn_stream_t) -> E;
    fn attn_local_attention_num_virtual_batches(attn_chunk_size: i32,
        common: *const attn_common_metadata_t, out: *mut i64) -> E;
    fn attn_make_local_attention_virtual_batches(attn_chunk_size: i32,
        common: *const attn_common_metadata_t, block_size: i32,
        outputs: *const attn_local_attention_out_t, out: *mut *mut Md, stream: attn_stream_t) -> E;
    fn attn_remap_local_block_table(block_table: *const T, virtual_req: *const T,
        virtual_block_start: *const T, num_virtual_batches: i64, out: *const T, stream: attn_stream_t) -> E;
    fn attn_slice_query_start_locs(query_start_loc: *const T, request_start: i64, request_stop: i64,
        out: *const T, stream: attn_stream_t) -> E;
    fn attn_maybe_create_ubatch_slices(num_scheduled_tokens: *const i32, num_reqs: i64,
        num_tokens_padded: i64, num_reqs_padded: i64, num_ubatches: i32, split_point: i64,
        out_slices: *mut attn_ubatch_slice_t, out_padded_slices: *mut attn_ubatch_slice_t) -> E;
    fn attn_make_metadata_with_slice(common: *const attn_common_metadata_t,
        slice: *const attn_ubatch_slice_t, outputs: *const attn_ubatch_out_t, out: *mut *mut Md,
        stream: attn_stream_t) -> E;
    fn attn_split_attn_metadata(common: *const attn_common_metadata_t, slices: *const attn_ubatch_slice_t,
        num_slices: usize, outputs: *const attn_ubatch_out_t, out: *mut *mut Md, stream: attn_stream_t) -> E;
    // backend registry
    fn attn_backend_count() -> usize;
    fn attn_backend_name(index: usize, out: *mut *const c_char) -> E;
    fn attn_backend_cudagraph_support(backend: *const c_char, kv_cache_spec: *const attn_kv_cache_spec_t,
        config: *const attn_builder_config_t, out_level: *mut i32) -> E;
    // builders
    fn attn_builder_workspace_size(backend: *const c_char, kv_cache_spec: *const attn_kv_cache_spec_t,
        config: *const attn_builder_config_t, out_bytes: *mut usize) -> E;
    fn attn_builder_create(backend: *const c_char, kv_cache_spec: *const attn_kv_cache_spec_t,
        config: *const attn_builder_config_t, out: *mut *mut attn_builder_t) -> E;
    fn attn_builder_destroy(builder: *mut attn_builder_t);
    fn attn_builder_backend_name(builder: *const attn_builder_t) -> *const c_char;
    fn attn_builder_cudagraph_support(builder: *const attn_builder_t, out_level: *mut i32) -> E;
    fn attn_builder_reorder_batch_threshold(builder: *const attn_builder_t, out_threshold: *mut i32) -> E;
    fn attn_builder_supports_update_block_table(builder: *const attn_builder_t, out: *mut i32) -> E;
    fn attn_min_cudagraph_support(builders: *const *const attn_builder_t, num_builders: usize,
        out_level: *mut i32) -> E;
    // builds
    fn attn_build(builder: *mut attn_builder_t, common_prefix_len: i64,
        common: *const attn_common_metadata_t, fast_build: i32, out: *mut *mut Md, stream: attn_stream_t) -> E;
    fn attn_update_block_table(builder: *mut attn_builder_t, metadata: *const Md, block_table: *const T,
        slot_mapping: *const T, out: *mut *mut Md, stream: attn_stream_t) -> E;
    fn attn_build_for_cudagraph_capture(builder: *mut attn_builder_t,
        common: *const attn_common_metadata_t, out: *mut *mut Md, stream: attn_stream_t) -> E;
    fn attn_build_for_drafting(builder: *mut attn_builder_t, common: *const attn_common_metadata_t,
        draft_index: i32, out: *mut *mut Md, stream: attn_stream_t) -> E;
    fn attn_use_cascade_attention(builder: *const attn_builder_t, query: *const attn_cascade_query_t,
        out: *mut i32) -> E;
    // metadata accessors
    fn attn_metadata_kind(metadata: *const Md) -> *const c_char;
    fn attn_metadata_field_count(metadata: *const Md) -> usize;
    fn attn_metadata_field(metadata: *const Md, index: usize, out: *mut attn_field_t) -> E;
    fn attn_metadata_get(metadata: *const Md, name: *const c_char, out: *mut attn_field_t) -> E;
    fn attn_metadata_get_tensor(metadata: *const Md, name: *const c_char, out: *mut *const T) -> E;
    fn attn_metadata_get_int(metadata: *const Md, name: *const c_char, out: *mut i64) -> E;
    fn attn_metadata_clone(metadata: *const Md, out: *mut *mut Md) -> E;
    fn attn_metadata_destroy(metadata: *mut Md);
    fn attn_metadata_to_common(metadata: *const Md, out: *mut attn_common_metadata_t) -> E;
    // per-layer hyperparameters
    fn attn_infer_global_hyperparameters(layers: *const attn_per_layer_params_t, num_layers: usize,
        out_global: *mut attn_per_layer_params_t, out_has_same_window_lefts: *mut i32,
        out_has_same_all_params: *mut i32) -> E;
    // plugins
    fn attn_plugin_load(path: *const c_char, out: *mut *mut attn_plugin_t) -> E;
    fn attn_plugin_unload(plugin: *mut attn_plugin_t) -> E;
    fn attn_plugin_name(plugin: *const attn_plugin_t) -> *const c_char;
    // ABI 1.3: optional, so that the crate still loads a 1.1 or 1.2 library
    optional:
    fn attn_backend_info(index: usize, out: *mut attn_backend_info_t) -> E;
    fn attn_get_api(major: u32, minor: u32, out: *mut *const attn_api_t) -> E;
}
