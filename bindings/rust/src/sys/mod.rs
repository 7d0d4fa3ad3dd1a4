//! The raw FFI, generated from `include/attn_c.h` by scripts/gen_bindings.sh: the header's
//! structs, enumerations and macros ([`generated`], by bindgen; the `*_STRUCT_SIZE` and `*_INIT`
//! macros in `generated_extra.rs`), `PFN_<name>`, the type of every ABI function, and [`Api`],
//! the table of those functions that [`crate::Library`] resolves with `dlsym`. Nothing here is
//! safe to misuse: it is the C ABI as it is, for what the safe layer does not wrap. Do not edit
//! the generated files; after a change to the header run `scripts/gen_bindings.sh`.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code)]

mod api;
#[rustfmt::skip]
pub mod generated;
#[rustfmt::skip]
mod generated_extra;

pub use api::{Api, SYMBOLS};
pub use generated::*;
pub use generated_extra::*;

/// `ATTN_PLUGIN_ENTRY_NAME` as a C string: the symbol a plugin exports.
pub const ATTN_PLUGIN_ENTRY_NAME: &core::ffi::CStr =
    match core::ffi::CStr::from_bytes_with_nul(generated::ATTN_PLUGIN_ENTRY_NAME) {
        Ok(name) => name,
        Err(_) => panic!("ATTN_PLUGIN_ENTRY_NAME is a C string"),
    };
