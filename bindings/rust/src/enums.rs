//! Rust enums for the ABI's enumerations: same numbers as attn_c.h, and the header's names.

macro_rules! c_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $value:literal $cname:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $(#[doc = $cname] $variant = $value),* }

        impl $name {
            /// Every variant, in the header's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            /// The variant of a raw number, if attn_c.h defines it.
            pub fn from_raw(value: i32) -> Option<$name> {
                match value { $($value => Some($name::$variant),)* _ => None }
            }
            /// The raw number.
            pub fn as_raw(self) -> i32 { self as i32 }
            /// The header's name without its prefix ("UNIFORM_BATCH"), as the C demo prints it.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $cname,)* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.name()) }
        }
    };
}

c_enum!(
    /// CUDA graph support of a builder (`attn_cudagraph_support_t`, vLLM's `AttentionCGSupport`).
    CudagraphSupport {
        Never = 0 "NEVER", UniformSingleTokenDecode = 1 "UNIFORM_SINGLE_TOKEN_DECODE",
        UniformBatch = 2 "UNIFORM_BATCH", Always = 3 "ALWAYS",
    }
);
c_enum!(
    /// The runtime's CUDA graph mode (`attn_cudagraph_mode_t`, vLLM's `CUDAGraphMode`).
    CudagraphMode {
        None = 0 "NONE", Piecewise = 1 "PIECEWISE", Full = 2 "FULL",
        FullDecodeOnly = 3 "FULL_DECODE_ONLY", FullAndPiecewise = 4 "FULL_AND_PIECEWISE",
    }
);
c_enum!(
    /// The kind of a KV cache spec (`attn_kv_cache_kind_t`).
    KvCacheKind {
        FullAttention = 0 "FULL_ATTENTION", SlidingWindow = 1 "SLIDING_WINDOW",
        ChunkedLocalAttention = 2 "CHUNKED_LOCAL_ATTENTION", Mla = 3 "MLA",
        CrossAttention = 4 "CROSS_ATTENTION", EncoderOnly = 5 "ENCODER_ONLY", Mamba = 6 "MAMBA",
    }
);
c_enum!(
    /// KV cache element types (`attn_kv_dtype_t`).
    KvDtype {
        Auto = 0 "AUTO", Float16 = 1 "FLOAT16", Bfloat16 = 2 "BFLOAT16", Float32 = 3 "FLOAT32",
        Fp8E4m3 = 4 "FP8_E4M3", Fp8E5m2 = 5 "FP8_E5M2", Uint8 = 6 "UINT8",
    }
);
c_enum!(
    /// Attention types (`attn_attention_type_t`, vLLM's `AttentionType`).
    AttentionType {
        Decoder = 0 "DECODER", Encoder = 1 "ENCODER", EncoderOnly = 2 "ENCODER_ONLY",
        EncoderDecoder = 3 "ENCODER_DECODER",
    }
);
c_enum!(
    /// How much a build validates (`attn_validate_mode_t`).
    ValidateMode { Host = 0 "HOST", Full = 1 "FULL" }
);
c_enum!(
    /// CPU_ATTN's kernel ISA (`attn_cpu_isa_t`).
    CpuIsa {
        Detect = 0 "DETECT", Amx = 1 "AMX", Vec = 2 "VEC", Vec16 = 3 "VEC16", Neon = 4 "NEON",
        Vxe = 5 "VXE", Vsx = 6 "VSX", Rvv = 7 "RVV",
    }
);
c_enum!(
    /// The state-space layer of a Mamba spec (`attn_mamba_type_t`, vLLM's `MambaSpec.mamba_type`;
    /// ABI 1.2).
    MambaType {
        Auto = 0 "AUTO", Mamba1 = 1 "MAMBA1", Mamba2 = 2 "MAMBA2", ShortConv = 3 "SHORT_CONV",
        LinearAttention = 4 "LINEAR_ATTENTION", GdnAttention = 5 "GDN_ATTENTION",
    }
);
c_enum!(
    /// Prefix caching of Mamba states (`attn_mamba_cache_mode_t`, vLLM's `mamba_cache_mode`;
    /// ABI 1.2).
    MambaCacheMode { None = 0 "NONE", All = 1 "ALL", Align = 2 "ALIGN" }
);
c_enum!(
    /// Device types (`attn_device_type_t`, DLPack's numbers).
    DeviceType { Cpu = 1 "CPU", Cuda = 2 "CUDA", CudaHost = 3 "CUDA_HOST", CudaManaged = 13 "CUDA_MANAGED" }
);
c_enum!(
    /// Where a registered backend comes from (`attn_backend_origin_t`, ABI 1.3).
    BackendOrigin {
        Builtin = 0 "BUILTIN", Plugin = 1 "PLUGIN",
    }
);
