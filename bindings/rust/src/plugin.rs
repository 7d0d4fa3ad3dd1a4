//! [`Plugin`]: a plugin library whose backends joined the registry (`attn_plugin_t`).
use std::path::Path;
use std::ptr::NonNull;

use crate::c_strings::{from_c, to_c};
use crate::error::{Error, Result};
use crate::library::Library;
use crate::sys;

/// A loaded plugin. Dropping it unloads it; while builders of its backends exist the library
/// refuses (busy) and the plugin then stays loaded until the process ends. Call
/// [`Plugin::unload`] to see that error and retry.
pub struct Plugin {
    lib: Library,
    raw: NonNull<sys::attn_plugin_t>,
}

// SAFETY: plugin loading and unloading are thread-safe; name() reads immutable data.
unsafe impl Send for Plugin {}
// SAFETY: as above.
unsafe impl Sync for Plugin {}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin").field("name", &self.name()).finish()
    }
}

impl Library {
    /// `attn_plugin_load`: dlopens `path` and registers its backends.
    /// Errors: [`crate::ErrorCode::NotFound`] (no file, no entry point),
    /// [`crate::ErrorCode::AbiMismatch`], [`crate::ErrorCode::InvalidArgument`].
    pub fn load_plugin(&self, path: impl AsRef<Path>) -> Result<Plugin> {
        let path = path.as_ref().to_string_lossy();
        let c = to_c("plugin path", &path)?;
        let mut out = std::ptr::null_mut();
        // SAFETY: a C string, a valid out-pointer.
        self.check(unsafe { (self.api().attn_plugin_load)(c.as_ptr(), &mut out) })?;
        let raw = NonNull::new(out).expect("attn_plugin_load gave NULL and no error");
        Ok(Plugin { lib: self.clone(), raw })
    }
}

impl Plugin {
    /// `attn_plugin_name`: the name from its table.
    pub fn name(&self) -> &str {
        // SAFETY: valid until the plugin is unloaded, which needs `self`.
        unsafe { from_c((self.lib.api().attn_plugin_name)(self.raw.as_ptr())) }
    }

    /// The raw handle, for the function table.
    pub fn as_raw(&self) -> *mut sys::attn_plugin_t {
        self.raw.as_ptr()
    }

    /// `attn_plugin_unload`: removes its backends and closes it. While builders of its
    /// backends exist, gives the plugin back with [`crate::ErrorCode::Busy`].
    pub fn unload(self) -> std::result::Result<(), (Plugin, Error)> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: a live plugin; on success the handle is freed and never used again.
        match this.lib.check(unsafe { (this.lib.api().attn_plugin_unload)(this.raw.as_ptr()) }) {
            Ok(()) => {
                // SAFETY: `this` is not used after its library handle is taken out.
                drop(unsafe { std::ptr::read(&this.lib) });
                Ok(())
            }
            Err(e) => Err((std::mem::ManuallyDrop::into_inner(this), e)),
        }
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        // SAFETY: a live plugin. On busy the handle stays valid and is forgotten: the plugin
        // stays loaded, which keeps its backends' code alive for their builders.
        let err = unsafe { (self.lib.api().attn_plugin_unload)(self.raw.as_ptr()) };
        let _ = self.lib.check(err);
    }
}
