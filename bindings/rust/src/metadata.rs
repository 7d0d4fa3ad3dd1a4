//! [`Metadata`]: named fields built by a builder or a batch utility, borrowed: from the builder
//! (`'b`, until its next build) and from the input data its tensors may view (`'d`).
use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::c_strings::{from_c, to_c};
use crate::common_metadata::CommonMetadata;
use crate::error::{Error, ErrorCode, Result};
use crate::field::{Field, FieldValue};
use crate::library::Library;
use crate::owned_metadata::OwnedMetadata;
use crate::sys;
use crate::tensor_view::TensorView;

/// Metadata valid while the builder that made it is not used again (`'b`) and the data it was
/// built from is alive (`'d`). Everything read from it is borrowed from it.
pub struct Metadata<'b, 'd> {
    pub(crate) lib: Library,
    raw: NonNull<sys::attn_metadata_t>,
    clone_safe: bool,
    _builder: PhantomData<&'b mut ()>,
    _data: PhantomData<&'d ()>,
}

// SAFETY: metadata is immutable to readers; any number of threads may read it while nothing
// rebuilds it, which the borrows guarantee.
unsafe impl Send for Metadata<'_, '_> {}
// SAFETY: as above.
unsafe impl Sync for Metadata<'_, '_> {}

impl std::fmt::Debug for Metadata<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metadata").field("kind", &self.kind()).field("fields", &self.len()).finish()
    }
}

impl<'b, 'd> Metadata<'b, 'd> {
    /// # Safety
    /// `raw` is live metadata of `lib` that stays valid and unmodified for `'b` and whose
    /// tensors view data valid for `'d`; `clone_safe` when a clone of it views nothing but its
    /// own memory and 'd data (see [`Metadata::clone_owned`]).
    pub(crate) unsafe fn from_raw(lib: Library, raw: *mut sys::attn_metadata_t, clone_safe: bool) -> Metadata<'b, 'd> {
        Metadata {
            lib,
            raw: NonNull::new(raw).expect("libattn returned NULL metadata with no error"),
            clone_safe,
            _builder: PhantomData,
            _data: PhantomData,
        }
    }

    /// The raw handle, for the function table.
    pub fn as_raw(&self) -> *const sys::attn_metadata_t {
        self.raw.as_ptr()
    }

    /// `attn_metadata_kind`: the backend that built it ("FLASH_ATTN",
    /// "ChunkedLocalAttention_32_FLASH_ATTN"), or "common" for batch utilities' results.
    pub fn kind(&self) -> &str {
        // SAFETY: valid as long as the metadata.
        unsafe { from_c((self.lib.api().attn_metadata_kind)(self.as_raw())) }
    }

    /// `attn_metadata_field_count`.
    pub fn len(&self) -> usize {
        // SAFETY: live metadata.
        unsafe { (self.lib.api().attn_metadata_field_count)(self.as_raw()) }
    }

    /// Whether it has no fields.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn wrap(&self, f: &sys::attn_field_t) -> Result<Field<'_>> {
        // SAFETY: the name and view are valid as long as the metadata, which self borrows.
        let name = unsafe { from_c(f.name) };
        let value = unsafe { FieldValue::from_raw(f, name) }?;
        Ok(Field { name, value })
    }

    /// `attn_metadata_field`: the field at `index` ([`crate::ErrorCode::NotFound`] past the end).
    pub fn field(&self, index: usize) -> Result<Field<'_>> {
        let mut f = sys::attn_field_t::INIT;
        // SAFETY: live metadata, an initialized out-struct.
        self.lib.check(unsafe { (self.lib.api().attn_metadata_field)(self.as_raw(), index, &mut f) })?;
        self.wrap(&f)
    }

    /// Every field, in the backend's order.
    pub fn fields(&self) -> Result<Vec<Field<'_>>> {
        (0..self.len()).map(|i| self.field(i)).collect()
    }

    /// `attn_metadata_get`: a field's value by name ([`crate::ErrorCode::NotFound`] naming
    /// the field and the kind).
    pub fn get(&self, name: &str) -> Result<FieldValue<'_>> {
        let c = to_c("field name", name)?;
        let mut f = sys::attn_field_t::INIT;
        // SAFETY: live metadata, a C string, an initialized out-struct.
        self.lib.check(unsafe { (self.lib.api().attn_metadata_get)(self.as_raw(), c.as_ptr(), &mut f) })?;
        Ok(self.wrap(&f)?.value)
    }

    /// `attn_metadata_get_tensor`: a tensor field, `None` when the field is None;
    /// [`crate::ErrorCode::InvalidArgument`] for a scalar field.
    pub fn tensor(&self, name: &str) -> Result<Option<TensorView<'_>>> {
        let c = to_c("field name", name)?;
        let mut t: *const sys::attn_tensor_t = std::ptr::null();
        // SAFETY: live metadata, a C string, a valid out-pointer.
        self.lib.check(unsafe { (self.lib.api().attn_metadata_get_tensor)(self.as_raw(), c.as_ptr(), &mut t) })?;
        // SAFETY: the view is valid as long as the metadata.
        Ok(unsafe { t.as_ref() }.map(|t| unsafe { TensorView::new(t) }))
    }

    /// `attn_metadata_get_int`: an integer or boolean field.
    pub fn int(&self, name: &str) -> Result<i64> {
        let c: std::ffi::CString = to_c("field name", name)?;
        let name_ptr: *const c_char = c.as_ptr();
        let mut v = 0;
        // SAFETY: live metadata, a C string, a valid out-pointer.
        self.lib.check(unsafe { (self.lib.api().attn_metadata_get_int)(self.as_raw(), name_ptr, &mut v) })?;
        Ok(v)
    }

    /// `attn_metadata_clone`: a copy that outlives the builder's next build (and the builder):
    /// tensors in the builder's buffers are copied, tensors viewing the inputs keep viewing
    /// them, hence `'d`.
    ///
    /// Refused ([`crate::ErrorCode::Unsupported`]) for metadata of a plugin's backend when the
    /// loaded library is 1.1: it does not copy the buffers a plugin's builder owns, so the clone
    /// would change on the next build and dangle once the builder is destroyed (1.2 copies them).
    pub fn clone_owned(&self) -> Result<OwnedMetadata<'d>> {
        if !self.clone_safe && self.lib.version().minor < 2 {
            return Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "clone_owned of '{}' metadata: libattn 1.1's attn_metadata_clone does not copy the buffers of \
                     a plugin backend's builder, so the clone would not outlive the builder",
                    self.kind()
                ),
            ));
        }
        let mut out = std::ptr::null_mut();
        // SAFETY: live metadata, a valid out-pointer.
        self.lib.check(unsafe { (self.lib.api().attn_metadata_clone)(self.as_raw(), &mut out) })?;
        // SAFETY: a caller-owned clone whose tensors view only its own memory and 'd data.
        Ok(unsafe { OwnedMetadata::from_raw(self.lib.clone(), out) })
    }

    /// `attn_metadata_to_common`: metadata of kind "common" as a build's input, viewing it.
    pub fn to_common(&self) -> Result<CommonMetadata<'_>> {
        let mut c = sys::attn_common_metadata_t::INIT;
        // SAFETY: live metadata, an initialized out-struct.
        self.lib.check(unsafe { (self.lib.api().attn_metadata_to_common)(self.as_raw(), &mut c) })?;
        // SAFETY: its tensors point into self, valid while self is borrowed.
        unsafe { CommonMetadata::from_raw(&c) }
    }
}
