//! A minimal run-time loader over the C library's `dlopen`/`dlsym`/`dlclose`/`dlerror` (in
//! glibc's libc since 2.34; `-ldl` links them on older glibc, and is an empty stub on newer).
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::NonNull;

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlclose(handle: *mut c_void) -> c_int;
    fn dlerror() -> *mut c_char;
}

/// `RTLD_NOW` and `RTLD_LOCAL` on Linux (glibc and musl).
const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;

/// The text of the last dl* error, or `fallback`.
fn last_error(fallback: &str) -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated thread-local string.
    let e = unsafe { dlerror() };
    if e.is_null() {
        fallback.to_owned()
    } else {
        // SAFETY: non-NULL: a C string valid until the next dl* call on this thread.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// A library opened with `dlopen(RTLD_NOW | RTLD_LOCAL)`, closed on drop.
pub(crate) struct DynLib {
    handle: NonNull<c_void>,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for DynLib {}
// SAFETY: dlsym on one handle from several threads is thread-safe.
unsafe impl Sync for DynLib {}

impl DynLib {
    /// Opens `path` (a file path, or a bare name the loader searches for).
    pub(crate) fn open(path: &str) -> Result<DynLib, String> {
        let c = CString::new(path).map_err(|_| format!("the path {path:?} contains a NUL byte"))?;
        // SAFETY: c is a valid C string; the flags are Linux's.
        let handle = unsafe { dlopen(c.as_ptr(), RTLD_NOW | RTLD_LOCAL) };
        NonNull::new(handle).map(|handle| DynLib { handle }).ok_or_else(|| last_error("dlopen failed"))
    }

    /// The address of `name`, or dlerror's message.
    pub(crate) fn symbol(&self, name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: clears a pending error so that the one after dlsym is dlsym's.
        unsafe { dlerror() };
        // SAFETY: the handle is open; name is a C string.
        let address = unsafe { dlsym(self.handle.as_ptr(), name.as_ptr()) };
        if address.is_null() {
            Err(last_error("the symbol's address is NULL"))
        } else {
            Ok(address)
        }
    }
}

impl Drop for DynLib {
    fn drop(&mut self) {
        // SAFETY: opened by dlopen, closed once.
        unsafe { dlclose(self.handle.as_ptr()) };
    }
}
