//! [`Api`]: one function pointer per ABI function of attn_c.h, in the header's order, typed by
//! the generated `PFN_<name>` types and resolved by name when the library is loaded. Calling an
//! entry is `unsafe`: it is the C function itself, with the header's contract.
use core::ffi::{c_void, CStr};

use super::generated::*;
use super::generated_extra::with_attn_functions;

/// The function type inside a nullable C function-pointer type (`Option<unsafe extern "C" fn>`).
pub trait FnPointer {
    /// The non-nullable function pointer.
    type Fn: Copy;
}
impl<F: Copy> FnPointer for Option<F> {
    type Fn = F;
}

macro_rules! api_table {
    ($( $name:ident: $pfn:ident, )*) => {
        /// The function table: field names are the C symbol names, types the header's.
        #[derive(Clone, Copy)]
        pub struct Api {
            $( #[doc = concat!("`", stringify!($name), "` (see include/attn_c.h).")]
               pub $name: <$pfn as FnPointer>::Fn, )*
        }

        /// The symbol names of every entry of [`Api`], in order.
        pub const SYMBOLS: &[&str] = &[$(stringify!($name)),*];

        impl Api {
            /// Resolves every symbol with `resolve`, which returns the address of a symbol or a
            /// message; the first failure is returned with the symbol's name.
            ///
            /// # Safety
            /// Every address `resolve` returns must be that of the C function of that name with
            /// the signature of attn_c.h.
            pub unsafe fn load(
                mut resolve: impl FnMut(&CStr) -> Result<*mut c_void, String>,
            ) -> Result<Api, (&'static str, String)> {
                Ok(Api { $( $name: {
                    let name = concat!(stringify!($name), "\0");
                    let cname = CStr::from_bytes_with_nul(name.as_bytes()).expect("symbol name");
                    let address = resolve(cname).map_err(|e| (stringify!($name), e))?;
                    // SAFETY: the caller guarantees the address is this function; a function
                    // pointer and a data pointer have the same size here, and NULL is None.
                    let function: $pfn = core::mem::transmute::<*mut c_void, $pfn>(address);
                    function.ok_or_else(|| (stringify!($name), "a NULL address".to_string()))?
                }, )* })
            }
        }
    };
}

with_attn_functions!(api_table);
