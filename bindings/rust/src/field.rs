//! [`Field`] and [`FieldValue`]: one named field of metadata.
use crate::error::{Error, ErrorCode, Result};
use crate::sys;
use crate::tensor_view::TensorView;

/// What a field holds (`attn_field_kind_t`).
#[derive(Clone, Copy, Debug)]
pub enum FieldValue<'m> {
    /// Unset (None in vLLM).
    None,
    /// A tensor view.
    Tensor(TensorView<'m>),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A float.
    Float(f64),
}

impl<'m> FieldValue<'m> {
    /// The tensor, if it is one.
    pub fn as_tensor(&self) -> Option<TensorView<'m>> {
        match self {
            FieldValue::Tensor(t) => Some(*t),
            _ => None,
        }
    }

    /// The integer, if it is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            FieldValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            FieldValue::Bool(v) => Some(*v),
            _ => None,
        }
    }

    /// The float, if it is one.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            FieldValue::Float(v) => Some(*v),
            _ => None,
        }
    }

    /// Whether it is None.
    pub fn is_none(&self) -> bool {
        matches!(self, FieldValue::None)
    }

    /// # Safety
    /// `f` was filled by the library for metadata that stays valid for `'m`.
    pub(crate) unsafe fn from_raw(f: &sys::attn_field_t, name: &str) -> Result<FieldValue<'m>> {
        use sys::attn_field_kind::*;
        Ok(match f.kind {
            k if k == ATTN_FIELD_NONE as i32 => FieldValue::None,
            k if k == ATTN_FIELD_INT as i32 => FieldValue::Int(f.int_value),
            k if k == ATTN_FIELD_BOOL as i32 => FieldValue::Bool(f.int_value != 0),
            k if k == ATTN_FIELD_FLOAT as i32 => FieldValue::Float(f.float_value),
            k if k == ATTN_FIELD_TENSOR as i32 && !f.tensor.is_null() => {
                // SAFETY: the view is valid as long as the metadata.
                FieldValue::Tensor(unsafe { TensorView::new(&*f.tensor) })
            }
            k => {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "field '{name}' has kind {k}, unknown to this binding (ABI {}.{})",
                        sys::ATTN_VERSION_MAJOR,
                        sys::ATTN_VERSION_MINOR
                    ),
                ))
            }
        })
    }
}

/// A named field.
#[derive(Clone, Copy, Debug)]
pub struct Field<'m> {
    /// vLLM's field name.
    pub name: &'m str,
    /// Its value.
    pub value: FieldValue<'m>,
}
