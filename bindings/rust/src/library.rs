//! [`Library`]: libattn loaded with dlopen, every ABI symbol resolved, the version checked.
//! Cheap to clone (an `Arc`); builders, metadata clones and plugins hold a clone, so the
//! library stays loaded while any of them exists.
use std::ffi::c_char;
use std::path::Path;
use std::sync::Arc;

use crate::c_strings::from_c;
use crate::dl::DynLib;
use crate::error::{Error, ErrorCode, Result};
use crate::sys;

/// The environment variable naming the library when no path is given.
pub const LIBRARY_ENV: &str = "ATTN_LIBRARY";
/// The name the loader searches for when neither a path nor [`LIBRARY_ENV`] is given.
pub const DEFAULT_LIBRARY: &str = "libattn.so.1";

/// The version of a loaded library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major: the ABI (SONAME) version.
    pub major: u32,
    /// Minor: grows with appended functions and fields.
    pub minor: u32,
    /// Patch: fixes only.
    pub patch: u32,
}

struct Loaded {
    api: sys::Api,
    path: String,
    _lib: DynLib, // last: closed after everything else is dropped
}

/// A loaded libattn. See the module documentation.
#[derive(Clone)]
pub struct Library {
    inner: Arc<Loaded>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("path", &self.inner.path).finish()
    }
}

impl Library {
    /// Loads the library at `path` (a path, or a bare name the dynamic loader searches for),
    /// resolves every ABI function and checks that it serves the header's ABI
    /// (`sys::ATTN_VERSION_MAJOR`.`MINOR`, with `attn_check_version`).
    ///
    /// Errors: [`ErrorCode::NotFound`] when dlopen fails or a symbol is missing (the message
    /// names the path, the symbol and dlerror's text); the library's
    /// [`ErrorCode::AbiMismatch`] for another major or an older minor.
    pub fn load(path: impl AsRef<Path>) -> Result<Library> {
        let path = path.as_ref().to_string_lossy().into_owned();
        let lib = DynLib::open(&path)
            .map_err(|e| Error::new(ErrorCode::NotFound, format!("cannot load libattn from {path:?}: {e}")))?;
        // SAFETY: the symbols are those of libattn, whose signatures are attn_c.h's.
        let api = unsafe { sys::Api::load(|name| lib.symbol(name)) }.map_err(|(symbol, e)| {
            Error::new(
                ErrorCode::NotFound,
                format!(
                    "{path:?} is not libattn {}.{}: symbol {symbol} is missing ({e})",
                    sys::ATTN_VERSION_MAJOR,
                    sys::ATTN_VERSION_MINOR
                ),
            )
        })?;
        let library = Library { inner: Arc::new(Loaded { api, path, _lib: lib }) };
        // SAFETY: a plain call of the resolved function.
        let err = unsafe { (library.api().attn_check_version)(sys::ATTN_VERSION_MAJOR, sys::ATTN_VERSION_MINOR) };
        library.check(err)?;
        Ok(library)
    }

    /// Loads from `path` when given, else from `$ATTN_LIBRARY`, else `libattn.so.1` through the
    /// loader's search path.
    pub fn open(path: Option<&Path>) -> Result<Library> {
        match path {
            Some(p) => Library::load(p),
            None => match std::env::var_os(LIBRARY_ENV) {
                Some(p) if !p.is_empty() => Library::load(p),
                _ => Library::load(DEFAULT_LIBRARY),
            },
        }
    }

    /// The raw function table: every ABI function, for what the safe layer does not wrap.
    pub fn api(&self) -> &sys::Api {
        &self.inner.api
    }

    /// The path (or name) it was loaded from.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// `attn_get_version`.
    pub fn version(&self) -> Version {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: three valid out-pointers.
        unsafe { (self.api().attn_get_version)(&mut major, &mut minor, &mut patch) };
        Version { major, minor, patch }
    }

    /// `attn_get_vllm_release` (ABI 1.4): the vLLM release this library matches ("0.33.0")
    /// and its numbers.
    pub fn vllm_release(&self) -> Result<(String, Version)> {
        let mut release: *const core::ffi::c_char = core::ptr::null();
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: four valid out-pointers.
        self.check(unsafe { (self.api().attn_get_vllm_release)(&mut release, &mut major, &mut minor, &mut patch) })?;
        // SAFETY: a static string of the library, copied at once.
        let release = unsafe { from_c(release) }.to_owned();
        Ok((release, Version { major, minor, patch }))
    }

    /// Whether `backend` is one of libattn's own rather than a plugin's: its origin from
    /// `attn_backend_info`.
    pub(crate) fn backend_is_built_in(&self, backend: &str) -> bool {
        self.backend_infos()
            .ok()
            .and_then(|infos| infos.into_iter().find(|i| i.name == backend))
            .is_some_and(|i| i.origin == crate::BackendOrigin::Builtin)
    }

    /// `attn_check_version(major, minor)`: whether this library serves callers compiled against
    /// `major.minor`.
    pub fn check_version(&self, major: u32, minor: u32) -> Result<()> {
        // SAFETY: a plain call.
        self.check(unsafe { (self.api().attn_check_version)(major, minor) })
    }

    /// `attn_status_string(code)`.
    pub fn status_string(&self, code: i32) -> &str {
        // SAFETY: a static string of the library, which self keeps loaded.
        unsafe { from_c((self.api().attn_status_string)(code)) }
    }

    /// `attn_device_count`: devices of a type this library can use (CPU: 1).
    pub fn device_count(&self, device_type: crate::DeviceType) -> Result<i32> {
        let mut out = 0;
        // SAFETY: a valid out-pointer.
        self.check(unsafe { (self.api().attn_device_count)(device_type.as_raw(), &mut out) })?;
        Ok(out)
    }

    /// Whether `other` is the same loaded library (handles of one may not go to another).
    pub fn same_as(&self, other: &Library) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
            || self.api().attn_get_version as usize == other.api().attn_get_version as usize
    }

    pub(crate) fn require_same(&self, other: &Library, what: &str) -> Result<()> {
        if self.same_as(other) {
            Ok(())
        } else {
            Err(Error::invalid(format!("{what} comes from libattn {:?}, not from {:?}", other.path(), self.path())))
        }
    }

    /// Turns a returned `attn_error_t*` into a `Result`, releasing the error.
    pub(crate) fn check(&self, err: *mut sys::attn_error_t) -> Result<()> {
        if err.is_null() {
            return Ok(());
        }
        let api = self.api();
        // SAFETY: err is a live error object; its message lives until attn_error_destroy.
        let (code, message) = unsafe {
            let code = (api.attn_error_code)(err);
            let message: *const c_char = (api.attn_error_message)(err);
            let message = from_c(message).to_owned();
            (api.attn_error_destroy)(err);
            (code, message)
        };
        Err(Error { code: ErrorCode::from_raw(code), message })
    }
}
