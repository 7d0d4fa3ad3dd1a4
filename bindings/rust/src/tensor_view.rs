//! [`TensorView`]: a tensor field of metadata, borrowed from it.
use std::ffi::c_void;

use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::sys;

/// A tensor that libattn returned, valid while the metadata it came from is borrowed.
#[derive(Clone, Copy)]
pub struct TensorView<'m> {
    raw: &'m sys::attn_tensor_t,
}

impl std::fmt::Debug for TensorView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorView")
            .field("shape", &self.shape())
            .field("dtype", &self.dtype())
            .field("device", &self.device())
            .finish()
    }
}

impl<'m> TensorView<'m> {
    /// # Safety
    /// `raw` is a descriptor the library keeps valid for `'m` (shape and strides included).
    pub(crate) unsafe fn new(raw: &'m sys::attn_tensor_t) -> TensorView<'m> {
        TensorView { raw }
    }

    /// The raw descriptor.
    pub fn as_raw(&self) -> &'m sys::attn_tensor_t {
        self.raw
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        usize::try_from(self.raw.ndim).unwrap_or(0)
    }

    /// The shape.
    pub fn shape(&self) -> &'m [i64] {
        if self.ndim() == 0 || self.raw.shape.is_null() {
            return &[];
        }
        // SAFETY: the library's descriptors have ndim shape entries.
        unsafe { std::slice::from_raw_parts(self.raw.shape, self.ndim()) }
    }

    /// The strides in elements (libattn always sets them on returned tensors).
    pub fn strides(&self) -> Option<&'m [i64]> {
        if self.ndim() == 0 || self.raw.strides.is_null() {
            return None;
        }
        // SAFETY: as for the shape.
        Some(unsafe { std::slice::from_raw_parts(self.raw.strides, self.ndim()) })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        DType::from_raw(self.raw.dtype)
    }

    /// Where the data lives.
    pub fn device(&self) -> Device {
        Device::from_raw(self.raw.device)
    }

    /// The address of the first element (`data + byte_offset`).
    pub fn data_ptr(&self) -> *const c_void {
        self.raw.data.cast::<u8>().wrapping_add(self.raw.byte_offset as usize).cast()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.shape().iter().map(|&d| usize::try_from(d).unwrap_or(0)).product()
    }

    /// Whether the elements are row-major without gaps (size-1 dimensions may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let Some(strides) = self.strides() else { return true };
        let mut expected = 1i64;
        for (&d, &s) in self.shape().iter().zip(strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected = expected.saturating_mul(d);
        }
        true
    }

    fn check_readable<T: Element>(&self, what: &str) -> Result<()> {
        if !self.device().is_host() {
            return Err(Error::invalid(format!("{what}: the tensor is on {}, not in host memory", self.device())));
        }
        if self.dtype() != T::DTYPE {
            return Err(Error::invalid(format!(
                "{what}::<{}>: the tensor has dtype {}, not {}",
                std::any::type_name::<T>(),
                self.dtype(),
                T::DTYPE
            )));
        }
        if self.numel() > 0 && (self.data_ptr().is_null() || self.data_ptr() as usize % std::mem::align_of::<T>() != 0)
        {
            return Err(Error::invalid(format!("{what}: the data address {:p} is not aligned", self.data_ptr())));
        }
        Ok(())
    }

    /// The elements of a contiguous host tensor, in row-major order.
    ///
    /// Errors ([`crate::ErrorCode::InvalidArgument`]) for device memory, another dtype than
    /// `T`'s, or a strided tensor (use [`TensorView::to_vec`]).
    pub fn as_slice<T: Element>(&self) -> Result<&'m [T]> {
        self.check_readable::<T>("as_slice")?;
        if !self.is_contiguous() {
            return Err(Error::invalid(format!(
                "as_slice: the tensor of shape {:?} has strides {:?}; use to_vec",
                self.shape(),
                self.strides().unwrap_or(&[])
            )));
        }
        let n = self.numel();
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: host memory of n contiguous, aligned elements of T, which the library keeps
        // valid and unwritten while the metadata is borrowed.
        Ok(unsafe { std::slice::from_raw_parts(self.data_ptr().cast::<T>(), n) })
    }

    /// The elements of a host tensor in row-major order, following its strides.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.is_contiguous() {
            return self.as_slice::<T>().map(<[T]>::to_vec);
        }
        self.check_readable::<T>("to_vec")?;
        let shape = self.shape();
        let strides = self.strides().unwrap_or(&[]);
        let base = self.data_ptr().cast::<T>();
        let mut out = Vec::with_capacity(self.numel());
        let mut index = vec![0i64; shape.len()];
        for _ in 0..self.numel() {
            let offset: i64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
            // SAFETY: a valid descriptor addresses every index inside its shape.
            out.push(unsafe { *base.offset(offset as isize) });
            for d in (0..shape.len()).rev() {
                index[d] += 1;
                if index[d] < shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(out)
    }
}
