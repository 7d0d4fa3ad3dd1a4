//! [`Builder`]: a metadata builder for one backend, KV cache spec and config
//! (`attn_builder_t`), destroyed on drop. Builds borrow it mutably, so the [`Metadata`] they
//! return cannot outlive its next build.
use std::ptr::NonNull;

use crate::builder_config::BuilderConfig;
use crate::c_strings::{from_c, to_c};
use crate::cascade_query::CascadeQuery;
use crate::common_metadata::CommonMetadata;
use crate::enums::CudagraphSupport;
use crate::error::{Error, Result};
use crate::kv_cache_spec::KvCacheSpec;
use crate::library::Library;
use crate::metadata::Metadata;
use crate::registry::level;
use crate::stream::Stream;
use crate::sys;
use crate::tensor_arg::TensorArg;

/// A builder. It keeps its [`Library`] loaded.
pub struct Builder {
    lib: Library,
    raw: NonNull<sys::attn_builder_t>,
    stream: Stream,
    built_in: bool,
}

// SAFETY: a builder may move between threads; its `&self` queries may run concurrently
// (attn_c.h: "safe to call concurrently with anything but attn_builder_destroy").
unsafe impl Send for Builder {}
// SAFETY: as above; builds take `&mut self`.
unsafe impl Sync for Builder {}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder").field("backend", &self.backend_name()).finish()
    }
}

impl Builder {
    /// `attn_builder_create`: a builder of `backend` (e.g. "FLASH_ATTN") and its persistent
    /// buffers. Errors: [`crate::ErrorCode::NotFound`] for an unknown backend,
    /// [`crate::ErrorCode::InvalidArgument`] naming a bad spec or config field,
    /// [`crate::ErrorCode::Unsupported`].
    pub fn new(lib: &Library, backend: &str, spec: &KvCacheSpec, config: &BuilderConfig) -> Result<Builder> {
        let name = to_c("backend", backend)?;
        let (spec, config) = (spec.to_raw(), config.to_raw()?);
        let mut out = std::ptr::null_mut();
        // SAFETY: a C string and structs valid for the call (the library copies them).
        lib.check(unsafe { (lib.api().attn_builder_create)(name.as_ptr(), &spec, &config.raw, &mut out) })?;
        let raw = NonNull::new(out).expect("attn_builder_create gave NULL and no error");
        let mut b = Builder { lib: lib.clone(), raw, stream: Stream::DEFAULT, built_in: false };
        // libattn 1.1's clone does not copy a plugin builder's buffers (Metadata::clone_safe)
        b.built_in = lib.backend_is_built_in(b.backend_name());
        Ok(b)
    }

    /// The library it belongs to.
    pub fn library(&self) -> &Library {
        &self.lib
    }

    /// The raw handle, for the function table.
    pub fn as_raw(&self) -> *mut sys::attn_builder_t {
        self.raw.as_ptr()
    }

    /// The stream that its builds enqueue device work on (default: [`Stream::DEFAULT`]).
    pub fn set_stream(&mut self, stream: Stream) {
        self.stream = stream;
    }

    /// `attn_builder_backend_name`.
    pub fn backend_name(&self) -> &str {
        // SAFETY: valid for the builder's lifetime.
        unsafe { from_c((self.lib.api().attn_builder_backend_name)(self.as_raw())) }
    }

    /// `attn_builder_cudagraph_support`.
    pub fn cudagraph_support(&self) -> Result<CudagraphSupport> {
        let mut out = -1;
        // SAFETY: a live builder, a valid out-pointer.
        self.lib.check(unsafe { (self.lib.api().attn_builder_cudagraph_support)(self.as_raw(), &mut out) })?;
        level(out)
    }

    /// `attn_builder_reorder_batch_threshold`: `None` for builders that do not reorder
    /// (`ATTN_NO_REORDER`, None in vLLM).
    pub fn reorder_batch_threshold(&self) -> Result<Option<i32>> {
        let mut out = 0;
        // SAFETY: as above.
        self.lib.check(unsafe { (self.lib.api().attn_builder_reorder_batch_threshold)(self.as_raw(), &mut out) })?;
        Ok((out != sys::ATTN_NO_REORDER as i32).then_some(out))
    }

    /// `attn_builder_supports_update_block_table`.
    pub fn supports_update_block_table(&self) -> Result<bool> {
        let mut out = 0;
        // SAFETY: as above.
        self.lib
            .check(unsafe { (self.lib.api().attn_builder_supports_update_block_table)(self.as_raw(), &mut out) })?;
        Ok(out != 0)
    }

    /// `attn_builder_supports_draft_decode_metadata_update` (ABI 1.5): vLLM 0.33's
    /// `supports_draft_decode_metadata_update`.
    pub fn supports_draft_decode_metadata_update(&self) -> Result<bool> {
        let mut out = 0;
        // SAFETY: as above.
        self.lib.check(unsafe {
            (self.lib.api().attn_builder_supports_draft_decode_metadata_update)(self.as_raw(), &mut out)
        })?;
        Ok(out != 0)
    }

    /// `attn_use_cascade_attention` (vLLM's heuristic; false for most backends).
    pub fn use_cascade_attention(&self, query: &CascadeQuery<'_>) -> Result<bool> {
        let raw = query.to_raw();
        let mut out = 0;
        // SAFETY: a struct pointing into query for the call.
        self.lib.check(unsafe { (self.lib.api().attn_use_cascade_attention)(self.as_raw(), &raw, &mut out) })?;
        Ok(out != 0)
    }

    fn finish<'b, 'd>(
        &'b self,
        err: *mut sys::attn_error_t,
        out: *mut sys::attn_metadata_t,
    ) -> Result<Metadata<'b, 'd>> {
        self.lib.check(err)?;
        // SAFETY: builder-owned metadata, valid until the next build: the caller's `&'b mut
        // self` borrow; its tensors view the builder's buffers and the 'd inputs.
        Ok(unsafe { Metadata::from_raw(self.lib.clone(), out, self.built_in) })
    }

    /// `attn_build`: the backend's metadata for one batch (vLLM's `build(common_prefix_len,
    /// common_attn_metadata, fast_build)`).
    pub fn build<'b, 'd>(
        &'b mut self,
        common_prefix_len: i64,
        common: &'d CommonMetadata<'_>,
        fast_build: bool,
    ) -> Result<Metadata<'b, 'd>> {
        let mut out = std::ptr::null_mut();
        let err = common.with_raw(|c| {
            // SAFETY: a live builder, a batch valid for the call, a valid out-pointer.
            unsafe {
                (self.lib.api().attn_build)(
                    self.as_raw(),
                    common_prefix_len,
                    c,
                    i32::from(fast_build),
                    &mut out,
                    self.stream.as_raw(),
                )
            }
        });
        self.finish(err, out)
    }

    /// `attn_build_groups` (ABI 1.7): every builder's [`Builder::build`] of one batch in one
    /// call (a hybrid model's KV cache groups), the batch converted and validated once; one
    /// result per builder, in order, each equal to that builder's own build. The builders come
    /// from one [`Library`] and share one stream ([`Builder::set_stream`]): device work is
    /// enqueued there in builder order. `common_prefix_lens`: `None` (0 for each) or one per
    /// builder. An error names `builders[i]`; on failure no result is returned. When
    /// `builders[i]` fails during its build, `builders[0..i)` were rebuilt (libattn reports
    /// their earlier metadata stale; here the `&mut` borrow already ended it).
    pub fn build_groups<'b, 'd>(
        builders: &'b mut [&mut Builder],
        common_prefix_lens: Option<&[i64]>,
        common: &'d CommonMetadata<'_>,
        fast_build: bool,
    ) -> Result<Vec<Metadata<'b, 'd>>> {
        let first =
            builders.first().ok_or_else(|| crate::error::Error::invalid("build_groups needs at least one builder"))?;
        let lib = first.lib.clone();
        let stream = first.stream;
        for (i, b) in builders.iter().enumerate() {
            lib.require_same(&b.lib, &format!("builders[{i}]"))?;
            if b.stream != stream {
                return Err(crate::error::Error::invalid(format!(
                    "builders[{i}] builds on stream {:?} but builders[0] on {:?}; one call enqueues on one stream",
                    b.stream.as_raw(),
                    stream.as_raw()
                )));
            }
        }
        if let Some(p) = common_prefix_lens {
            if p.len() != builders.len() {
                return Err(crate::error::Error::invalid(format!(
                    "common_prefix_lens has {} entries for {} builders",
                    p.len(),
                    builders.len()
                )));
            }
        }
        let raw: Vec<*mut sys::attn_builder_t> = builders.iter().map(|b| b.as_raw()).collect();
        let mut out = vec![std::ptr::null_mut(); builders.len()];
        let err = common.with_raw(|c| {
            // SAFETY: live builders, arrays of builders.len() entries, a batch valid for the call.
            unsafe {
                (lib.api().attn_build_groups)(
                    raw.as_ptr(),
                    raw.len(),
                    common_prefix_lens.map_or(std::ptr::null(), |p| p.as_ptr()),
                    c,
                    i32::from(fast_build),
                    out.as_mut_ptr(),
                    stream.as_raw(),
                )
            }
        });
        lib.check(err)?;
        Ok(builders
            .iter()
            .zip(out)
            // SAFETY: builder-owned metadata, valid until each builder's next build: the
            // caller's `&'b mut` borrow of the builders.
            .map(|(b, m)| unsafe { Metadata::from_raw(b.lib.clone(), m, b.built_in) })
            .collect())
    }

    /// `attn_build_for_cudagraph_capture`: a build after checking that the batch is one the
    /// builder's level allows in a captured graph. TRITON_ATTN writes 1 into every entry of
    /// `common.seq_lens`, so it must be writable ([`TensorArg::new_mut`] or owned).
    pub fn build_for_cudagraph_capture<'b, 'd>(
        &'b mut self,
        common: &'d mut CommonMetadata<'_>,
    ) -> Result<Metadata<'b, 'd>> {
        if !common.seq_lens.is_writable() {
            return Err(Error::invalid(
                "common.seq_lens is borrowed read-only, but a capture build may write it (TRITON_ATTN \
                 writes 1 into every entry): make it with TensorArg::new_mut or TensorArg::owned",
            ));
        }
        let mut out = std::ptr::null_mut();
        let err = common.with_raw(|c| {
            // SAFETY: as in build; seq_lens is writable memory the caller lent mutably.
            unsafe {
                (self.lib.api().attn_build_for_cudagraph_capture)(self.as_raw(), c, &mut out, self.stream.as_raw())
            }
        });
        self.finish(err, out)
    }

    /// `attn_build_for_drafting`: vLLM's `build_for_drafting(common, draft_index)`.
    pub fn build_for_drafting<'b, 'd>(
        &'b mut self,
        common: &'d CommonMetadata<'_>,
        draft_index: i32,
    ) -> Result<Metadata<'b, 'd>> {
        let mut out = std::ptr::null_mut();
        let err = common.with_raw(|c| {
            // SAFETY: as in build.
            unsafe {
                (self.lib.api().attn_build_for_drafting)(self.as_raw(), c, draft_index, &mut out, self.stream.as_raw())
            }
        });
        self.finish(err, out)
    }

    /// `attn_update_block_table`: `metadata` (built by another builder of the same backend,
    /// for another KV cache group) with this group's block table and slot mapping. The result
    /// shares every other field with `metadata`, so it borrows it, and views both tensors.
    pub fn update_block_table<'b>(
        &'b mut self,
        metadata: &'b Metadata<'_, '_>,
        block_table: &'b TensorArg<'_>,
        slot_mapping: &'b TensorArg<'_>,
    ) -> Result<Metadata<'b, 'b>> {
        self.lib.require_same(&metadata.lib, "metadata")?;
        let (bt, sm) = (block_table.to_raw(), slot_mapping.to_raw());
        let mut out = std::ptr::null_mut();
        // SAFETY: a live builder and metadata, descriptors valid for the call.
        let err = unsafe {
            (self.lib.api().attn_update_block_table)(
                self.as_raw(),
                metadata.as_raw(),
                &bt,
                &sm,
                &mut out,
                self.stream.as_raw(),
            )
        };
        self.finish(err, out)
    }

    /// `attn_update_draft_decode_metadata` (ABI 1.5): vLLM 0.33's
    /// `update_draft_decode_metadata(metadata)`, in place, after the speculator advanced the
    /// draft decode build's persistent inputs. A build's result borrows its builder: pass a
    /// clone ([`Metadata::clone_owned`]), whose input fields view the same memory.
    pub fn update_draft_decode_metadata(&mut self, metadata: &Metadata<'_, '_>) -> Result<()> {
        self.lib.require_same(&metadata.lib, "metadata")?;
        // SAFETY: a live builder and metadata; the call changes no field it reads.
        self.lib.check(unsafe {
            (self.lib.api().attn_update_draft_decode_metadata)(
                self.as_raw(),
                metadata.as_raw().cast_mut(),
                self.stream.as_raw(),
            )
        })
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        // SAFETY: created by attn_builder_create, destroyed once; no metadata borrows it.
        unsafe { (self.lib.api().attn_builder_destroy)(self.as_raw()) };
    }
}
