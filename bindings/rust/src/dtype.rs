//! [`DType`]: a tensor's element type (DLPack's `DLDataType`), and [`Element`], the Rust types
//! that slices in and out may have.
use std::fmt;

use crate::sys;

/// An element type: DLPack's type code, bits and lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DType {
    /// `attn_dtype_code_t`: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

impl DType {
    /// int32.
    pub const INT32: DType = DType::scalar(sys::attn_dtype_code::ATTN_DTYPE_INT, 32);
    /// int64.
    pub const INT64: DType = DType::scalar(sys::attn_dtype_code::ATTN_DTYPE_INT, 64);
    /// float32.
    pub const FLOAT32: DType = DType::scalar(sys::attn_dtype_code::ATTN_DTYPE_FLOAT, 32);

    /// A one-lane type.
    pub const fn scalar(code: sys::attn_dtype_code, bits: u8) -> DType {
        DType { code: code as u8, bits, lanes: 1 }
    }

    pub(crate) fn to_raw(self) -> sys::attn_dtype_t {
        sys::attn_dtype_t { code: self.code, bits: self.bits, lanes: self.lanes }
    }

    pub(crate) fn from_raw(d: sys::attn_dtype_t) -> DType {
        DType { code: d.code, bits: d.bits, lanes: d.lanes }
    }

    /// Bytes per element (lanes included), rounded up.
    pub fn size_in_bytes(self) -> usize {
        (self.bits as usize * self.lanes as usize).div_ceil(8)
    }
}

impl fmt::Display for DType {
    /// "int32", "float32", "bfloat16", "bool8"; "x4" is appended for 4 lanes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.code {
            0 => "int",
            1 => "uint",
            2 => "float",
            4 => "bfloat",
            6 => "bool",
            _ => "dtype",
        };
        write!(f, "{name}{}", self.bits)?;
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type with a DLPack element type: slices of it go in and out of tensors.
pub trait Element: Copy + sealed::Sealed + 'static {
    /// Its element type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $code:ident $bits:literal),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::scalar(sys::attn_dtype_code::$code, $bits);
        }
    )*};
}

element!(i8 => ATTN_DTYPE_INT 8, i16 => ATTN_DTYPE_INT 16, i32 => ATTN_DTYPE_INT 32,
         i64 => ATTN_DTYPE_INT 64, u8 => ATTN_DTYPE_UINT 8, u16 => ATTN_DTYPE_UINT 16,
         u32 => ATTN_DTYPE_UINT 32, u64 => ATTN_DTYPE_UINT 64, f32 => ATTN_DTYPE_FLOAT 32,
         f64 => ATTN_DTYPE_FLOAT 64);
