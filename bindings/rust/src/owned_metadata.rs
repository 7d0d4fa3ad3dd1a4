//! [`OwnedMetadata`]: metadata the caller owns (a clone, or a batch utility's result), released
//! on drop. It may outlive builders and rebuilds; `'d` is the input data its tensors view.
use std::ops::Deref;

use crate::library::Library;
use crate::metadata::Metadata;
use crate::sys;

/// Caller-owned metadata; dereferences to [`Metadata`] for every accessor.
#[derive(Debug)]
pub struct OwnedMetadata<'d> {
    inner: Metadata<'static, 'd>,
}

impl<'d> OwnedMetadata<'d> {
    /// # Safety
    /// `raw` is caller-owned metadata of `lib` whose tensors view only its own memory and data
    /// valid for `'d` (a clone of it then does too).
    pub(crate) unsafe fn from_raw(lib: Library, raw: *mut sys::attn_metadata_t) -> OwnedMetadata<'d> {
        // SAFETY: per the contract; 'static stands for "owned": every accessor borrows self.
        OwnedMetadata { inner: unsafe { Metadata::from_raw(lib, raw, true) } }
    }
}

impl<'d> Deref for OwnedMetadata<'d> {
    type Target = Metadata<'static, 'd>;
    fn deref(&self) -> &Metadata<'static, 'd> {
        &self.inner
    }
}

impl Drop for OwnedMetadata<'_> {
    fn drop(&mut self) {
        // SAFETY: caller-owned, released once.
        unsafe { (self.inner.lib.api().attn_metadata_destroy)(self.inner.as_raw().cast_mut()) };
    }
}
