//! The binding's tests: one binary, a module per area. Every test but `layout` loads the
//! library named by $ATTN_LIBRARY (and the plugin tests $ATTN_EXAMPLE_PLUGIN).
mod support;

mod abi_1_3;
mod abi_1_4;
mod abi_1_5;
mod abi_1_7;
mod builds;
mod drop_order;
mod errors;
mod layout;
mod loader;
mod plugin;
mod registry;
mod utilities;
