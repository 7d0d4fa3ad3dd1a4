//! [`TensorArg`]: a tensor passed *to* libattn, made from a Rust slice (borrowed or owned) or,
//! unsafely, from raw parts (device memory). The `attn_tensor_t` descriptor is made at each
//! call from it, so it may be moved freely.
use std::any::Any;
use std::ffi::c_void;
use std::marker::PhantomData;

use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::sys;

/// The most dimensions a tensor argument has (attn_c.h allows 8).
pub const MAX_NDIM: usize = 8;

/// A tensor argument borrowing data for `'a` (or owning it, as `TensorArg<'static>`).
pub struct TensorArg<'a> {
    data: *mut c_void,
    device: Device,
    dtype: DType,
    ndim: usize,
    shape: [i64; MAX_NDIM],
    strides: Option<[i64; MAX_NDIM]>,
    byte_offset: u64,
    writable: bool,
    _owner: Option<Box<dyn Any + Send + Sync>>,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: the data is a `&[T]`/`&mut [T]` of Send + Sync elements, an owned Vec, or raw memory
// whose thread safety the unsafe constructor's caller vouches for.
unsafe impl Send for TensorArg<'_> {}
// SAFETY: as above; `&TensorArg` gives no mutable access to the data.
unsafe impl Sync for TensorArg<'_> {}

impl std::fmt::Debug for TensorArg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorArg")
            .field("shape", &self.shape())
            .field("dtype", &self.dtype)
            .field("device", &self.device)
            .field("writable", &self.writable)
            .finish()
    }
}

fn shape_of(dims: &[i64]) -> [i64; MAX_NDIM] {
    let mut shape = [0; MAX_NDIM];
    shape[..dims.len()].copy_from_slice(dims);
    shape
}

fn matrix_rows(len: usize, width: usize) -> Result<usize> {
    if width == 0 {
        return Err(Error::invalid("a matrix needs width > 0, got width=0"));
    }
    if len % width != 0 {
        return Err(Error::invalid(format!(
            "a slice of {len} elements is not a matrix of width {width} ({len} % {width} = {})",
            len % width
        )));
    }
    Ok(len / width)
}

impl<'a> TensorArg<'a> {
    fn host<T: Element>(data: *mut T, dims: &[i64], writable: bool) -> TensorArg<'a> {
        TensorArg {
            data: data.cast(),
            device: Device::CPU,
            dtype: T::DTYPE,
            ndim: dims.len(),
            shape: shape_of(dims),
            strides: None,
            byte_offset: 0,
            writable,
            _owner: None,
            _borrow: PhantomData,
        }
    }

    /// A 1-D host tensor viewing `data` (read only).
    pub fn new<T: Element>(data: &'a [T]) -> TensorArg<'a> {
        TensorArg::host(data.as_ptr().cast_mut(), &[data.len() as i64], false)
    }

    /// A 1-D host tensor viewing `data` that libattn may write (outputs; the seq_lens that
    /// TRITON_ATTN's capture build writes).
    pub fn new_mut<T: Element>(data: &'a mut [T]) -> TensorArg<'a> {
        TensorArg::host(data.as_mut_ptr(), &[data.len() as i64], true)
    }

    /// A 2-D row-major host tensor of `data.len() / width` rows (a block table).
    pub fn matrix<T: Element>(data: &'a [T], width: usize) -> Result<TensorArg<'a>> {
        let rows = matrix_rows(data.len(), width)?;
        Ok(TensorArg::host(data.as_ptr().cast_mut(), &[rows as i64, width as i64], false))
    }

    /// [`TensorArg::matrix`] that libattn may write.
    pub fn matrix_mut<T: Element>(data: &'a mut [T], width: usize) -> Result<TensorArg<'a>> {
        let rows = matrix_rows(data.len(), width)?;
        Ok(TensorArg::host(data.as_mut_ptr(), &[rows as i64, width as i64], true))
    }

    /// A view of raw memory, such as a CUDA allocation or a DLPack tensor's data.
    ///
    /// # Safety
    /// `data + byte_offset` must address a tensor of this shape, strides (in elements; `None`
    /// for compact row-major) and dtype on `device`, valid for `'a`, writable when libattn
    /// writes it, and not used elsewhere in a way that races with libattn's accesses.
    pub unsafe fn from_raw_parts(
        data: *mut c_void,
        device: Device,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
        byte_offset: u64,
    ) -> Result<TensorArg<'a>> {
        if shape.len() > MAX_NDIM {
            return Err(Error::invalid(format!("a tensor has at most {MAX_NDIM} dimensions, got {}", shape.len())));
        }
        if let Some(s) = strides {
            if s.len() != shape.len() {
                return Err(Error::invalid(format!("strides has {} entries but shape has {}", s.len(), shape.len())));
            }
        }
        Ok(TensorArg {
            data,
            device,
            dtype,
            ndim: shape.len(),
            shape: shape_of(shape),
            strides: strides.map(shape_of),
            byte_offset,
            writable: true,
            _owner: None,
            _borrow: PhantomData,
        })
    }

    /// A copy of a descriptor the library returned (its data keeps being the library's).
    ///
    /// # Safety
    /// `t` is a valid descriptor whose data stays valid for `'a`.
    pub(crate) unsafe fn from_descriptor(t: &sys::attn_tensor_t) -> Result<TensorArg<'a>> {
        let n = usize::try_from(t.ndim).unwrap_or(usize::MAX);
        if n > MAX_NDIM {
            return Err(Error::invalid(format!("a tensor has at most {MAX_NDIM} dimensions, got {}", t.ndim)));
        }
        // SAFETY: a valid descriptor has ndim shape (and strides) entries.
        let shape = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(t.shape, n) } };
        let strides = if t.strides.is_null() || n == 0 {
            None
        } else {
            // SAFETY: as above.
            Some(unsafe { std::slice::from_raw_parts(t.strides, n) })
        };
        let mut arg = unsafe {
            TensorArg::from_raw_parts(
                t.data,
                Device::from_raw(t.device),
                DType::from_raw(t.dtype),
                shape,
                strides,
                t.byte_offset,
            )
        }?;
        arg.writable = false;
        Ok(arg)
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        &self.shape[..self.ndim]
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Where the data lives.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether libattn may write it (made with `new_mut`, `matrix_mut`, owned, or raw parts).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The `attn_tensor_t` for a call through the raw table ([`crate::Library::api`]). Its
    /// shape and strides point into `self`: it is valid while `self` is neither moved nor
    /// dropped.
    pub fn to_raw(&self) -> sys::attn_tensor_t {
        sys::attn_tensor_t {
            data: self.data,
            device: self.device.to_raw(),
            ndim: self.ndim as i32,
            dtype: self.dtype.to_raw(),
            shape: self.shape.as_ptr().cast_mut(),
            strides: match &self.strides {
                Some(s) => s.as_ptr().cast_mut(),
                None => std::ptr::null_mut(),
            },
            byte_offset: self.byte_offset,
        }
    }
}

impl TensorArg<'static> {
    /// A 1-D host tensor owning `data` (writable).
    pub fn owned<T: Element + Send + Sync>(mut data: Vec<T>) -> TensorArg<'static> {
        let mut arg = TensorArg::host(data.as_mut_ptr(), &[data.len() as i64], true);
        arg._owner = Some(Box::new(data)); // the heap buffer does not move with the Vec
        arg
    }

    /// A 2-D row-major host tensor owning `data` (writable).
    pub fn owned_matrix<T: Element + Send + Sync>(mut data: Vec<T>, width: usize) -> Result<TensorArg<'static>> {
        let rows = matrix_rows(data.len(), width)?;
        let mut arg = TensorArg::host(data.as_mut_ptr(), &[rows as i64, width as i64], true);
        arg._owner = Some(Box::new(data));
        Ok(arg)
    }
}

/// The descriptor of an optional argument, kept on the caller's stack for the call.
pub(crate) fn raw_opt(t: &Option<TensorArg<'_>>) -> Option<sys::attn_tensor_t> {
    t.as_ref().map(TensorArg::to_raw)
}

/// A pointer to an optional descriptor, NULL for None.
pub(crate) fn ptr_opt(t: &Option<sys::attn_tensor_t>) -> *const sys::attn_tensor_t {
    match t {
        Some(t) => t,
        None => std::ptr::null(),
    }
}
