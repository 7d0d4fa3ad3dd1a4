//! vLLM 0.33's CUDA graph mode resolution (`attn_resolve_cudagraph_mode_and_sizes`) and the
//! builders' varlen bound (`attn_builder_varlen_cudagraph_max_query_len`), ABI 1.4.

use std::ffi::CString;

use crate::builder::Builder;
use crate::c_strings::to_c;
use crate::enums::{CudagraphMode, CudagraphSupport};
use crate::error::{Error, ErrorCode, Result};
use crate::library::Library;
use crate::sys;

/// One attention group as the resolution reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudagraphGroup {
    /// Its builder's level (`attn_builder_cudagraph_support`).
    pub support: CudagraphSupport,
    /// Its backend's name for the messages (`None`: vLLM's None).
    pub backend_name: Option<String>,
    /// Its builder's `varlen_cudagraph_max_query_len` (`None`: vLLM's None).
    pub varlen_max_query_len: Option<i32>,
}

impl CudagraphGroup {
    /// The group of a builder: its level, backend name and varlen bound.
    pub fn of(builder: &Builder) -> Result<CudagraphGroup> {
        Ok(CudagraphGroup {
            support: builder.cudagraph_support()?,
            backend_name: Some(builder.backend_name().to_owned()),
            varlen_max_query_len: builder.varlen_cudagraph_max_query_len()?,
        })
    }
}

/// The inputs of [`Library::resolve_cudagraph_mode_and_sizes`]: `attn_cudagraph_resolve_args_t`
/// (see attn_c.h); `Default` is `ATTN_CUDAGRAPH_RESOLVE_ARGS_INIT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudagraphResolveArgs {
    pub cudagraph_mode: CudagraphMode,
    pub groups: Vec<CudagraphGroup>,
    pub uniform_decode_query_len: i32,
    pub cudagraph_capture_sizes: Vec<i32>,
    /// 0 for None.
    pub max_cudagraph_capture_size: i32,
    pub use_v2_model_runner: bool,
    pub piecewise_capture_available: bool,
    pub splitting_ops_contain_attention: bool,
    pub vllm_compile: bool,
    pub use_inductor_graph_partition: bool,
    pub has_mamba_layers: bool,
    pub is_profiling: bool,
    pub adaptive_verification: bool,
    pub num_blocks: i64,
    /// 0 for None.
    pub max_num_reqs: i64,
}

impl Default for CudagraphResolveArgs {
    fn default() -> Self {
        CudagraphResolveArgs {
            cudagraph_mode: CudagraphMode::FullAndPiecewise,
            groups: Vec::new(),
            uniform_decode_query_len: 1,
            cudagraph_capture_sizes: Vec::new(),
            max_cudagraph_capture_size: 0,
            use_v2_model_runner: false,
            piecewise_capture_available: true,
            splitting_ops_contain_attention: true,
            vllm_compile: true,
            use_inductor_graph_partition: false,
            has_mamba_layers: false,
            is_profiling: false,
            adaptive_verification: false,
            num_blocks: 0,
            max_num_reqs: 0,
        }
    }
}

/// The resolved mode, capture sizes and maximum capture size (0: None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudagraphResolution {
    pub mode: CudagraphMode,
    pub capture_sizes: Vec<i32>,
    pub max_capture_size: i32,
}

impl Builder {
    /// `attn_builder_varlen_cudagraph_max_query_len` (ABI 1.4): vLLM 0.33's
    /// `get_varlen_cudagraph_max_query_len`, `None` where vLLM returns None.
    pub fn varlen_cudagraph_max_query_len(&self) -> Result<Option<i32>> {
        let (mut value, mut has) = (-1, 0);
        let lib = self.library();
        // SAFETY: a live builder, two valid out-pointers.
        lib.check(unsafe {
            (lib.api().attn_builder_varlen_cudagraph_max_query_len)(self.as_raw(), &mut value, &mut has)
        })?;
        Ok(if has != 0 { Some(value) } else { None })
    }
}

impl Library {
    /// `attn_resolve_cudagraph_mode_and_sizes` (ABI 1.4): vLLM 0.33's CUDA graph mode resolution.
    pub fn resolve_cudagraph_mode_and_sizes(&self, args: &CudagraphResolveArgs) -> Result<CudagraphResolution> {
        let levels: Vec<i32> = args.groups.iter().map(|g| g.support.as_raw()).collect();
        let names: Vec<Option<CString>> = args
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| g.backend_name.as_deref().map(|n| to_c(&format!("groups[{i}].backend_name"), n)).transpose())
            .collect::<Result<_>>()?;
        let name_ptrs: Vec<*const core::ffi::c_char> =
            names.iter().map(|n| n.as_ref().map_or(core::ptr::null(), |c| c.as_ptr())).collect();
        let bounds: Vec<i32> = args.groups.iter().map(|g| g.varlen_max_query_len.unwrap_or(-1)).collect();
        let mut raw = sys::attn_cudagraph_resolve_args_t::INIT;
        raw.cudagraph_mode = args.cudagraph_mode.as_raw();
        raw.uniform_decode_query_len = args.uniform_decode_query_len;
        raw.num_groups = levels.len();
        raw.group_cudagraph_support = levels.as_ptr();
        raw.group_backend_names = name_ptrs.as_ptr();
        raw.group_varlen_max_query_len = bounds.as_ptr();
        raw.cudagraph_capture_sizes = args.cudagraph_capture_sizes.as_ptr();
        raw.num_cudagraph_capture_sizes = args.cudagraph_capture_sizes.len();
        raw.max_cudagraph_capture_size = args.max_cudagraph_capture_size;
        raw.use_v2_model_runner = args.use_v2_model_runner as i32;
        raw.piecewise_capture_available = args.piecewise_capture_available as i32;
        raw.splitting_ops_contain_attention = args.splitting_ops_contain_attention as i32;
        raw.vllm_compile = args.vllm_compile as i32;
        raw.use_inductor_graph_partition = args.use_inductor_graph_partition as i32;
        raw.has_mamba_layers = args.has_mamba_layers as i32;
        raw.is_profiling = args.is_profiling as i32;
        raw.adaptive_verification = args.adaptive_verification as i32;
        raw.num_blocks = args.num_blocks;
        raw.max_num_reqs = args.max_num_reqs;
        let (mut mode, mut max, mut count) = (-1, 0, 0usize);
        let f = self.api().attn_resolve_cudagraph_mode_and_sizes;
        // SAFETY: `raw` points into vectors that outlive both calls; valid out-pointers; NULL
        // out_sizes queries the count.
        self.check(unsafe { f(&raw, &mut mode, &mut max, core::ptr::null_mut(), &mut count) })?;
        let mut sizes = vec![0i32; count];
        // SAFETY: as above, `sizes` holds `count` entries.
        self.check(unsafe { f(&raw, &mut mode, &mut max, sizes.as_mut_ptr(), &mut count) })?;
        sizes.truncate(count);
        let mode = CudagraphMode::from_raw(mode)
            .ok_or_else(|| Error::new(ErrorCode::Internal, format!("libattn returned CUDA graph mode {mode}")))?;
        Ok(CudagraphResolution { mode, capture_sizes: sizes, max_capture_size: max })
    }
}
