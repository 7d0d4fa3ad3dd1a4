//! The backend registry, queried without a builder (`attn_backend_*`, workspace size, the
//! minimum CUDA graph support over builders).
use crate::builder::Builder;
use crate::builder_config::BuilderConfig;
use crate::c_strings::{from_c, to_c};
use crate::enums::{BackendOrigin, CudagraphSupport, KvCacheKind};
use crate::error::{Error, ErrorCode, Result};
use crate::kv_cache_spec::KvCacheSpec;
use crate::library::Library;
use crate::sys;

pub(crate) fn level(raw: i32) -> Result<CudagraphSupport> {
    CudagraphSupport::from_raw(raw)
        .ok_or_else(|| Error::new(ErrorCode::Internal, format!("libattn returned CUDA graph support level {raw}")))
}

/// What `attn_backend_info` says of a registered backend (ABI 1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendInfo {
    /// Its registry index.
    pub index: usize,
    /// As [`Library::backend_name`] gives it.
    pub name: String,
    /// `kv_cache_kinds`: bit k set when it builds for the [`KvCacheKind`] whose value is k.
    pub kv_cache_kinds: u32,
    /// Built in, or from a plugin.
    pub origin: BackendOrigin,
    /// The vLLM release whose builder it matches ("" when unknown, "plugin" for plugins).
    pub vllm_release: String,
    /// The names vLLM 0.33.0 uses for it (ABI 1.7 `vllm_names`): its backend enum member and
    /// its class's `get_name()`, e.g. `["MAMBA2", "MAMBA2_ATTN"]`; each is accepted wherever a
    /// backend name is. Empty when vLLM has no name of its own for it, for a plugin's backends,
    /// and from a library older than 1.7.
    pub vllm_names: Vec<String>,
}

impl BackendInfo {
    /// Whether it builds for specs of `kind`.
    pub fn accepts(&self, kind: KvCacheKind) -> bool {
        self.kv_cache_kinds & (1u32 << kind.as_raw()) != 0
    }

    /// The kinds it builds for, in the header's order.
    pub fn kinds(&self) -> Vec<KvCacheKind> {
        KvCacheKind::ALL.iter().copied().filter(|&k| self.accepts(k)).collect()
    }
}

impl Library {
    /// `attn_backend_count`: built-in backends, then plugins' in load order.
    pub fn backend_count(&self) -> usize {
        // SAFETY: a plain call.
        unsafe { (self.api().attn_backend_count)() }
    }

    /// `attn_backend_name`: the name at `index` ([`ErrorCode::NotFound`] out of range).
    pub fn backend_name(&self, index: usize) -> Result<String> {
        let mut out = std::ptr::null();
        // SAFETY: a valid out-pointer.
        self.check(unsafe { (self.api().attn_backend_name)(index, &mut out) })?;
        // SAFETY: copied at once: a plugin's name lives until the plugin is unloaded.
        Ok(unsafe { from_c(out) }.to_owned())
    }

    /// `attn_backend_info`: the backend at `index` ([`ErrorCode::NotFound`] out of range).
    pub fn backend_info(&self, index: usize) -> Result<BackendInfo> {
        let f = self.api().attn_backend_info;
        let mut out = sys::attn_backend_info_t::INIT;
        // SAFETY: a valid struct whose struct_size is set.
        self.check(unsafe { f(index, &mut out) })?;
        let origin = BackendOrigin::from_raw(out.origin).ok_or_else(|| {
            Error::new(ErrorCode::Internal, format!("libattn returned backend origin {}", out.origin))
        })?;
        // SAFETY: the strings are copied at once (a plugin's live until it is unloaded); a
        // library older than 1.7 leaves vllm_names NULL, which from_c reads as "".
        let (name, vllm_release, names) = unsafe {
            (from_c(out.name).to_owned(), from_c(out.vllm_release).to_owned(), from_c(out.vllm_names))
        };
        let vllm_names = names.split(',').filter(|n| !n.is_empty()).map(str::to_owned).collect();
        Ok(BackendInfo { index, name, kv_cache_kinds: out.kv_cache_kinds, origin, vllm_release, vllm_names })
    }

    /// [`Library::backend_info`] of every registered backend, in registry order.
    pub fn backend_infos(&self) -> Result<Vec<BackendInfo>> {
        (0..self.backend_count()).map(|i| self.backend_info(i)).collect()
    }

    /// Every registered backend's name, in registry order.
    pub fn backends(&self) -> Result<Vec<String>> {
        (0..self.backend_count()).map(|i| self.backend_name(i)).collect()
    }

    /// `attn_backend_cudagraph_support`: a backend's level for a spec and config, without a
    /// builder (vLLM's classmethod).
    pub fn backend_cudagraph_support(
        &self,
        backend: &str,
        spec: &KvCacheSpec,
        config: &BuilderConfig,
    ) -> Result<CudagraphSupport> {
        let name = to_c("backend", backend)?;
        let (spec, config) = (spec.to_raw(), config.to_raw()?);
        let mut out = -1;
        // SAFETY: a C string, valid structs, a valid out-pointer.
        self.check(unsafe {
            (self.api().attn_backend_cudagraph_support)(name.as_ptr(), &spec, &config.raw, &mut out)
        })?;
        level(out)
    }

    /// `attn_builder_workspace_size`: bytes of caller workspace a builder would need.
    pub fn builder_workspace_size(&self, backend: &str, spec: &KvCacheSpec, config: &BuilderConfig) -> Result<usize> {
        let name = to_c("backend", backend)?;
        let (spec, config) = (spec.to_raw(), config.to_raw()?);
        let mut out = 0;
        // SAFETY: as above.
        self.check(unsafe { (self.api().attn_builder_workspace_size)(name.as_ptr(), &spec, &config.raw, &mut out) })?;
        Ok(out)
    }

    /// `attn_min_cudagraph_support`: the lowest level over builders (`Always` for none).
    pub fn min_cudagraph_support(&self, builders: &[&Builder]) -> Result<CudagraphSupport> {
        for (i, b) in builders.iter().enumerate() {
            self.require_same(b.library(), &format!("builders[{i}]"))?;
        }
        let raw: Vec<*const sys::attn_builder_t> = builders.iter().map(|b| b.as_raw().cast_const()).collect();
        let mut out = -1;
        // SAFETY: live builders, borrowed for the call.
        self.check(unsafe { (self.api().attn_min_cudagraph_support)(raw.as_ptr(), raw.len(), &mut out) })?;
        level(out)
    }
}
