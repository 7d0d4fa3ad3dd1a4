//! [`Stream`]: a CUDA stream handle (`attn_stream_t`, binary-identical to `cudaStream_t`).
use crate::sys;

/// A CUDA stream; [`Stream::DEFAULT`] (NULL) is the default stream. Host builds ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(sys::attn_stream_t);

// SAFETY: a cudaStream_t may be used from any thread.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// The default stream.
    pub const DEFAULT: Stream = Stream(std::ptr::null_mut());

    /// A stream from a `cudaStream_t` / `CUstream`.
    ///
    /// # Safety
    /// `raw` is NULL or a live CUDA stream of the device the builder runs on, for as long as
    /// calls use it.
    pub unsafe fn from_raw(raw: *mut std::ffi::c_void) -> Stream {
        Stream(raw.cast())
    }

    /// The raw handle.
    pub fn as_raw(self) -> sys::attn_stream_t {
        self.0
    }
}

impl Default for Stream {
    fn default() -> Stream {
        Stream::DEFAULT
    }
}
