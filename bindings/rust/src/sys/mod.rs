//! The raw FFI: `#[repr(C)]` mirrors of every struct and enum of `include/attn_c.h` (ABI 1.1),
//! in the header's order, its macros as constants, and [`Api`], the table of the 54 ABI
//! functions that [`crate::Library`] resolves with `dlsym`. Nothing here is safe to misuse:
//! it is the C ABI as it is, for what the safe layer does not wrap.
#![allow(non_camel_case_types)]

mod api;
mod enums;
mod structs;

pub use api::{Api, SYMBOLS};
pub use enums::*;
pub use structs::*;

/// Major version of the header this crate mirrors (`ATTN_VERSION_MAJOR`).
pub const ATTN_VERSION_MAJOR: u32 = 1;
/// Minor version of the header this crate mirrors (`ATTN_VERSION_MINOR`).
pub const ATTN_VERSION_MINOR: u32 = 1;
/// Patch version of the header this crate mirrors (`ATTN_VERSION_PATCH`).
pub const ATTN_VERSION_PATCH: u32 = 0;
/// `ATTN_ABI_VERSION`: the SONAME suffix.
pub const ATTN_ABI_VERSION: u32 = ATTN_VERSION_MAJOR;
/// `ATTN_NO_REORDER`: reorder threshold of builders that do not reorder.
pub const ATTN_NO_REORDER: i32 = 0;
/// `ATTN_PAD_SLOT_ID`: slot id of padded entries (vLLM's `PAD_SLOT_ID`).
pub const ATTN_PAD_SLOT_ID: i64 = -1;
/// `ATTN_DCP_ALL_RANKS`: `dcp_rank` asking for the lengths of every rank.
pub const ATTN_DCP_ALL_RANKS: i32 = -1;
/// `ATTN_PLUGIN_ENTRY_NAME`: the symbol a plugin exports.
pub const ATTN_PLUGIN_ENTRY_NAME: &core::ffi::CStr = c"attn_plugin_entry";
