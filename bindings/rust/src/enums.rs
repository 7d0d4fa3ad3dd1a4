//! Rust enums for the ABI's enumerations: each variant is the header's constant (its number
//! comes from the generated `sys` enum), and its name is the header's without the prefix.
//! tests/binding/layout.rs checks that every enum has every constant of its C enum.
use crate::sys;

macro_rules! c_enum {
    ($(#[$doc:meta])* $name:ident: $ctype:ident, $prefix:literal { $($variant:ident = $cname:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $(#[doc = concat!("`", stringify!($cname), "`")] $variant = sys::$ctype::$cname as isize),* }

        impl $name {
            /// Every variant, in the header's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The C enum this mirrors (`attn_..._t`).
            pub const C_TYPE: &'static str = concat!(stringify!($ctype), "_t");
            /// The variant of a raw number, if attn_c.h defines it.
            pub fn from_raw(value: i32) -> Option<$name> {
                $name::ALL.iter().copied().find(|v| v.as_raw() == value)
            }
            /// The raw number.
            pub fn as_raw(self) -> i32 { self as i32 }
            /// The header's name without its prefix ("UNIFORM_BATCH"), as the C demo prints it.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => &stringify!($cname)[$prefix.len()..],)* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.name()) }
        }
    };
}

c_enum!(
    /// CUDA graph support of a builder (`attn_cudagraph_support_t`, vLLM's `AttentionCGSupport`).
    CudagraphSupport: attn_cudagraph_support, "ATTN_CG_" {
        Never = ATTN_CG_NEVER, UniformSingleTokenDecode = ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE,
        UniformBatch = ATTN_CG_UNIFORM_BATCH, Always = ATTN_CG_ALWAYS,
    }
);
c_enum!(
    /// The runtime's CUDA graph mode (`attn_cudagraph_mode_t`, vLLM's `CUDAGraphMode`).
    CudagraphMode: attn_cudagraph_mode, "ATTN_CUDAGRAPH_MODE_" {
        None = ATTN_CUDAGRAPH_MODE_NONE, Piecewise = ATTN_CUDAGRAPH_MODE_PIECEWISE,
        Full = ATTN_CUDAGRAPH_MODE_FULL, FullDecodeOnly = ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY,
        FullAndPiecewise = ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE,
    }
);
c_enum!(
    /// The kind of a KV cache spec (`attn_kv_cache_kind_t`).
    KvCacheKind: attn_kv_cache_kind, "ATTN_KV_" {
        FullAttention = ATTN_KV_FULL_ATTENTION, SlidingWindow = ATTN_KV_SLIDING_WINDOW,
        ChunkedLocalAttention = ATTN_KV_CHUNKED_LOCAL_ATTENTION, Mla = ATTN_KV_MLA,
        CrossAttention = ATTN_KV_CROSS_ATTENTION, EncoderOnly = ATTN_KV_ENCODER_ONLY, Mamba = ATTN_KV_MAMBA,
        CircularBuffer = ATTN_KV_CIRCULAR_BUFFER,
    }
);
c_enum!(
    /// KV cache element types (`attn_kv_dtype_t`).
    KvDtype: attn_kv_dtype, "ATTN_KV_DTYPE_" {
        Auto = ATTN_KV_DTYPE_AUTO, Float16 = ATTN_KV_DTYPE_FLOAT16, Bfloat16 = ATTN_KV_DTYPE_BFLOAT16,
        Float32 = ATTN_KV_DTYPE_FLOAT32, Fp8E4m3 = ATTN_KV_DTYPE_FP8_E4M3, Fp8E5m2 = ATTN_KV_DTYPE_FP8_E5M2,
        Uint8 = ATTN_KV_DTYPE_UINT8,
    }
);
c_enum!(
    /// Attention types (`attn_attention_type_t`, vLLM's `AttentionType`).
    AttentionType: attn_attention_type, "ATTN_TYPE_" {
        Decoder = ATTN_TYPE_DECODER, Encoder = ATTN_TYPE_ENCODER, EncoderOnly = ATTN_TYPE_ENCODER_ONLY,
        EncoderDecoder = ATTN_TYPE_ENCODER_DECODER,
    }
);
c_enum!(
    /// How much a build validates (`attn_validate_mode_t`).
    ValidateMode: attn_validate_mode, "ATTN_VALIDATE_" { Host = ATTN_VALIDATE_HOST, Full = ATTN_VALIDATE_FULL, Trusted = ATTN_VALIDATE_TRUSTED }
);
c_enum!(
    /// CPU_ATTN's kernel ISA (`attn_cpu_isa_t`).
    CpuIsa: attn_cpu_isa, "ATTN_CPU_ISA_" {
        Detect = ATTN_CPU_ISA_DETECT, Amx = ATTN_CPU_ISA_AMX, Vec = ATTN_CPU_ISA_VEC, Vec16 = ATTN_CPU_ISA_VEC16,
        Neon = ATTN_CPU_ISA_NEON, Vxe = ATTN_CPU_ISA_VXE, Vsx = ATTN_CPU_ISA_VSX, Rvv = ATTN_CPU_ISA_RVV,
    }
);
c_enum!(
    /// The state-space layer of a Mamba spec (`attn_mamba_type_t`, vLLM's `MambaSpec.mamba_type`;
    /// ABI 1.2).
    MambaType: attn_mamba_type, "ATTN_MAMBA_TYPE_" {
        Auto = ATTN_MAMBA_TYPE_AUTO, Mamba1 = ATTN_MAMBA_TYPE_MAMBA1, Mamba2 = ATTN_MAMBA_TYPE_MAMBA2,
        ShortConv = ATTN_MAMBA_TYPE_SHORT_CONV, LinearAttention = ATTN_MAMBA_TYPE_LINEAR_ATTENTION,
        GdnAttention = ATTN_MAMBA_TYPE_GDN_ATTENTION,
    }
);
c_enum!(
    /// Prefix caching of Mamba states (`attn_mamba_cache_mode_t`, vLLM's `mamba_cache_mode`;
    /// ABI 1.2).
    MambaCacheMode: attn_mamba_cache_mode, "ATTN_MAMBA_CACHE_MODE_" {
        None = ATTN_MAMBA_CACHE_MODE_NONE, All = ATTN_MAMBA_CACHE_MODE_ALL, Align = ATTN_MAMBA_CACHE_MODE_ALIGN,
    }
);
c_enum!(
    /// Device types (`attn_device_type_t`, DLPack's numbers).
    DeviceType: attn_device_type, "ATTN_DEVICE_" {
        Cpu = ATTN_DEVICE_CPU, Cuda = ATTN_DEVICE_CUDA, CudaHost = ATTN_DEVICE_CUDA_HOST,
        CudaManaged = ATTN_DEVICE_CUDA_MANAGED,
    }
);
c_enum!(
    /// Where a registered backend comes from (`attn_backend_origin_t`, ABI 1.3).
    BackendOrigin: attn_backend_origin, "ATTN_BACKEND_" {
        Builtin = ATTN_BACKEND_BUILTIN, Plugin = ATTN_BACKEND_PLUGIN,
    }
);
