//! Rust binding of libattn, the C ABI of `include/attn_c.h`, loaded at run time with `dlopen`: no
//! link-time dependency, no crates. The [`sys`] layer is generated from the header
//! (scripts/gen_bindings.sh), and the ABI it checks for is the header's.
//!
//! ```no_run
//! use libattn::{Builder, BuilderConfig, CommonMetadata, KvCacheSpec, Library};
//!
//! let lib = Library::open(None)?; // $ATTN_LIBRARY, else libattn.so.1
//! let spec = KvCacheSpec::new(16, 8, 128);
//! let mut config = BuilderConfig::new(256, 8192, 1024, 32);
//! config.device_capability = 90;
//! let mut builder = Builder::new(&lib, "FLASH_ATTN", &spec, &config)?;
//! let (qsl, seq, table, slots) = ([0, 1, 3], [5, 2], [1, 0, 2, 0], [68i64, 32, 33]);
//! let batch = CommonMetadata::new(&qsl, &seq, &table, 2, &slots)?;
//! let md = builder.build(0, &batch, false)?;
//! let seq_lens = md.tensor("seq_lens")?.expect("a tensor");
//! assert_eq!(seq_lens.as_slice::<i32>()?, &[5, 2]);
//! # Ok::<(), libattn::Error>(())
//! ```
//!
//! Metadata borrows its builder, so it cannot be used after the next build:
//! ```compile_fail,E0499
//! # use libattn::*;
//! # fn f(builder: &mut Builder, batch: &CommonMetadata) -> Result<()> {
//! let first = builder.build(0, batch, false)?;
//! let second = builder.build(0, batch, false)?; // error: builder is still borrowed by `first`
//! first.kind();
//! # Ok(()) }
//! ```
//! nor outlive the data it views (keep it with [`Metadata::clone_owned`], which still views
//! the inputs):
//! ```compile_fail,E0597
//! # use libattn::*;
//! # fn f(builder: &mut Builder) -> Result<()> {
//! let md = {
//!     let seq = vec![5, 2];
//!     let batch = CommonMetadata::new(&[0, 1, 3], &seq, &[1, 0, 2, 0], 2, &[68, 32, 33])?;
//!     builder.build(0, &batch, false)?.clone_owned()?
//! }; // error: `batch` (and `seq`) dropped while borrowed
//! md.kind();
//! # Ok(()) }
//! ```
//! A builder cannot be dropped while its metadata is in use:
//! ```compile_fail,E0505
//! # use libattn::*;
//! # fn f(mut builder: Builder, batch: &CommonMetadata) -> Result<()> {
//! let md = builder.build(0, batch, false)?;
//! drop(builder); // error: cannot move out of `builder` because it is borrowed
//! md.kind();
//! # Ok(()) }
//! ```

pub mod sys;

mod batch_split;
mod builder;
mod builder_config;
mod c_strings;
mod cascade_query;
mod common_metadata;
mod cudagraph_mode;
mod device;
mod dl;
mod dtype;
mod enums;
mod error;
mod field;
mod kv_cache_spec;
mod library;
mod local_attention;
mod metadata;
mod owned_metadata;
mod per_layer_params;
mod plugin;
mod registry;
mod runner_utilities;
mod slot_mapping;
mod stream;
mod tensor_arg;
mod tensor_view;

pub use batch_split::BatchSplit;
pub use builder::Builder;
pub use builder_config::BuilderConfig;
pub use cascade_query::CascadeQuery;
pub use common_metadata::CommonMetadata;
pub use cudagraph_mode::{CudagraphGroup, CudagraphResolution, CudagraphResolveArgs};
pub use device::Device;
pub use dtype::{DType, Element};
pub use enums::{
    AttentionType, BackendOrigin, CpuIsa, CudagraphMode, CudagraphSupport, DeviceType, KvCacheKind, KvDtype,
    MambaCacheMode, MambaType, ValidateMode,
};
pub use error::{Error, ErrorCode, Result};
pub use field::{Field, FieldValue};
pub use kv_cache_spec::KvCacheSpec;
pub use library::{Library, Version, DEFAULT_LIBRARY, LIBRARY_ENV};
pub use local_attention::LocalAttentionBatches;
pub use metadata::Metadata;
pub use owned_metadata::OwnedMetadata;
pub use per_layer_params::{GlobalHyperparameters, PerLayerParams};
pub use plugin::Plugin;
pub use registry::BackendInfo;
pub use runner_utilities::FA_VERSION_NONE;
pub use slot_mapping::SlotMappingArgs;
pub use stream::Stream;
pub use tensor_arg::{TensorArg, MAX_NDIM};
pub use tensor_view::TensorView;
