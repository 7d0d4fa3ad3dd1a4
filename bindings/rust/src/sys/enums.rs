//! The enumerations of attn_c.h with the header's names and numbers. Struct fields that hold
//! them are `int32_t` in C and `i32` here; compare with `ATTN_X as i32`.

/// `attn_status_code_t`: frozen status codes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_status_code {
    ATTN_OK = 0,
    ATTN_ERR_INVALID_ARGUMENT = 1,
    ATTN_ERR_UNSUPPORTED = 2,
    ATTN_ERR_OUT_OF_MEMORY = 3,
    ATTN_ERR_CUDA = 4,
    ATTN_ERR_NOT_FOUND = 5,
    ATTN_ERR_ABI_MISMATCH = 6,
    ATTN_ERR_BUSY = 7,
    ATTN_ERR_INTERNAL = 8,
}
pub type attn_status_code_t = attn_status_code;

/// `attn_device_type_t`: DLPack's device types.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_device_type {
    ATTN_DEVICE_CPU = 1,
    ATTN_DEVICE_CUDA = 2,
    ATTN_DEVICE_CUDA_HOST = 3,
    ATTN_DEVICE_CUDA_MANAGED = 13,
}
pub type attn_device_type_t = attn_device_type;

/// `attn_dtype_code_t`: DLPack's data type codes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_dtype_code {
    ATTN_DTYPE_INT = 0,
    ATTN_DTYPE_UINT = 1,
    ATTN_DTYPE_FLOAT = 2,
    ATTN_DTYPE_BFLOAT = 4,
    ATTN_DTYPE_BOOL = 6,
}
pub type attn_dtype_code_t = attn_dtype_code;

/// `attn_cudagraph_support_t`: vLLM's `AttentionCGSupport` numbers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_cudagraph_support {
    ATTN_CG_NEVER = 0,
    ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE = 1,
    ATTN_CG_UNIFORM_BATCH = 2,
    ATTN_CG_ALWAYS = 3,
}
pub type attn_cudagraph_support_t = attn_cudagraph_support;

/// `attn_cudagraph_mode_t`: vLLM's `CUDAGraphMode`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_cudagraph_mode {
    ATTN_CUDAGRAPH_MODE_NONE = 0,
    ATTN_CUDAGRAPH_MODE_PIECEWISE = 1,
    ATTN_CUDAGRAPH_MODE_FULL = 2,
    ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY = 3,
    ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE = 4,
}
pub type attn_cudagraph_mode_t = attn_cudagraph_mode;

/// `attn_kv_cache_kind_t`: vLLM's `KVCacheSpec` subclasses.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_kv_cache_kind {
    ATTN_KV_FULL_ATTENTION = 0,
    ATTN_KV_SLIDING_WINDOW = 1,
    ATTN_KV_CHUNKED_LOCAL_ATTENTION = 2,
    ATTN_KV_MLA = 3,
    ATTN_KV_CROSS_ATTENTION = 4,
    ATTN_KV_ENCODER_ONLY = 5,
    ATTN_KV_MAMBA = 6,
}
pub type attn_kv_cache_kind_t = attn_kv_cache_kind;

/// `attn_kv_dtype_t`: KV cache element types.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_kv_dtype {
    ATTN_KV_DTYPE_AUTO = 0,
    ATTN_KV_DTYPE_FLOAT16 = 1,
    ATTN_KV_DTYPE_BFLOAT16 = 2,
    ATTN_KV_DTYPE_FLOAT32 = 3,
    ATTN_KV_DTYPE_FP8_E4M3 = 4,
    ATTN_KV_DTYPE_FP8_E5M2 = 5,
    ATTN_KV_DTYPE_UINT8 = 6,
}
pub type attn_kv_dtype_t = attn_kv_dtype;

/// `attn_attention_type_t`: vLLM's `AttentionType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_attention_type {
    ATTN_TYPE_DECODER = 0,
    ATTN_TYPE_ENCODER = 1,
    ATTN_TYPE_ENCODER_ONLY = 2,
    ATTN_TYPE_ENCODER_DECODER = 3,
}
pub type attn_attention_type_t = attn_attention_type;

/// `attn_validate_mode_t`: how much a build validates.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_validate_mode {
    ATTN_VALIDATE_HOST = 0,
    ATTN_VALIDATE_FULL = 1,
}
pub type attn_validate_mode_t = attn_validate_mode;

/// `attn_cpu_isa_t`: the kernel ISA of CPU_ATTN (ABI 1.1).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_cpu_isa {
    ATTN_CPU_ISA_DETECT = 0,
    ATTN_CPU_ISA_AMX = 1,
    ATTN_CPU_ISA_VEC = 2,
    ATTN_CPU_ISA_VEC16 = 3,
    ATTN_CPU_ISA_NEON = 4,
    ATTN_CPU_ISA_VXE = 5,
    ATTN_CPU_ISA_VSX = 6,
    ATTN_CPU_ISA_RVV = 7,
}
pub type attn_cpu_isa_t = attn_cpu_isa;

/// `attn_mamba_type_t` (ABI 1.2): vLLM's `MambaSpec.mamba_type`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_mamba_type {
    ATTN_MAMBA_TYPE_AUTO = 0,
    ATTN_MAMBA_TYPE_MAMBA1 = 1,
    ATTN_MAMBA_TYPE_MAMBA2 = 2,
    ATTN_MAMBA_TYPE_SHORT_CONV = 3,
    ATTN_MAMBA_TYPE_LINEAR_ATTENTION = 4,
    ATTN_MAMBA_TYPE_GDN_ATTENTION = 5,
}
pub type attn_mamba_type_t = attn_mamba_type;

/// `attn_mamba_cache_mode_t` (ABI 1.2): vLLM's `cache_config.mamba_cache_mode`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_mamba_cache_mode {
    ATTN_MAMBA_CACHE_MODE_NONE = 0,
    ATTN_MAMBA_CACHE_MODE_ALL = 1,
    ATTN_MAMBA_CACHE_MODE_ALIGN = 2,
}
pub type attn_mamba_cache_mode_t = attn_mamba_cache_mode;

/// `attn_field_kind_t`: what a metadata field holds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum attn_field_kind {
    ATTN_FIELD_NONE = 0,
    ATTN_FIELD_TENSOR = 1,
    ATTN_FIELD_INT = 2,
    ATTN_FIELD_FLOAT = 3,
    ATTN_FIELD_BOOL = 4,
}
pub type attn_field_kind_t = attn_field_kind;
