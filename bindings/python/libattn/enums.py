"""The enumerations of ``include/attn_c.h``, with the header's (and vLLM's) numbers."""
from __future__ import annotations

from enum import IntEnum

__all__ = ["Status", "CudagraphSupport", "CudagraphMode", "KvCacheKind", "KvDtype",
           "AttentionType", "ValidateMode", "CpuIsa", "MambaType", "MambaCacheMode", "DeviceType",
           "DTypeCode", "FieldKind", "NO_REORDER", "PAD_SLOT_ID"]


class Status(IntEnum):
    """``attn_status_code_t``: the code of an error."""
    OK = 0
    INVALID_ARGUMENT = 1
    UNSUPPORTED = 2
    OUT_OF_MEMORY = 3
    CUDA = 4
    NOT_FOUND = 5
    ABI_MISMATCH = 6
    BUSY = 7
    INTERNAL = 8


class CudagraphSupport(IntEnum):
    """``attn_cudagraph_support_t``: vLLM's ``AttentionCGSupport``."""
    NEVER = 0
    UNIFORM_SINGLE_TOKEN_DECODE = 1
    UNIFORM_BATCH = 2
    ALWAYS = 3


class CudagraphMode(IntEnum):
    """``attn_cudagraph_mode_t``: vLLM's ``CUDAGraphMode``."""
    NONE = 0
    PIECEWISE = 1
    FULL = 2
    FULL_DECODE_ONLY = 3
    FULL_AND_PIECEWISE = 4


class KvCacheKind(IntEnum):
    """``attn_kv_cache_kind_t``: vLLM's ``KVCacheSpec`` subclasses."""
    FULL_ATTENTION = 0
    SLIDING_WINDOW = 1
    CHUNKED_LOCAL_ATTENTION = 2
    MLA = 3
    CROSS_ATTENTION = 4
    ENCODER_ONLY = 5
    MAMBA = 6


class KvDtype(IntEnum):
    """``attn_kv_dtype_t``: KV cache element types."""
    AUTO = 0
    FLOAT16 = 1
    BFLOAT16 = 2
    FLOAT32 = 3
    FP8_E4M3 = 4
    FP8_E5M2 = 5
    UINT8 = 6


class AttentionType(IntEnum):
    """``attn_attention_type_t``: vLLM's ``AttentionType``."""
    DECODER = 0
    ENCODER = 1
    ENCODER_ONLY = 2
    ENCODER_DECODER = 3


class ValidateMode(IntEnum):
    """``attn_validate_mode_t``."""
    HOST = 0
    FULL = 1


class CpuIsa(IntEnum):
    """``attn_cpu_isa_t``: CPU_ATTN's kernel ISA."""
    DETECT = 0
    AMX = 1
    VEC = 2
    VEC16 = 3
    NEON = 4
    VXE = 5
    VSX = 6
    RVV = 7


class MambaType(IntEnum):
    """``attn_mamba_type_t`` (ABI 1.2): vLLM's ``MambaSpec.mamba_type``."""
    AUTO = 0
    MAMBA1 = 1
    MAMBA2 = 2
    SHORT_CONV = 3
    LINEAR_ATTENTION = 4
    GDN_ATTENTION = 5


class MambaCacheMode(IntEnum):
    """``attn_mamba_cache_mode_t`` (ABI 1.2): vLLM's ``cache_config.mamba_cache_mode``."""
    NONE = 0
    ALL = 1
    ALIGN = 2


class DeviceType(IntEnum):
    """``attn_device_type_t``: DLPack's device types."""
    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    CUDA_MANAGED = 13


class DTypeCode(IntEnum):
    """``attn_dtype_code_t``: DLPack's type codes."""
    INT = 0
    UINT = 1
    FLOAT = 2
    BFLOAT = 4
    BOOL = 6


class FieldKind(IntEnum):
    """``attn_field_kind_t``: what a metadata field holds."""
    NONE = 0
    TENSOR = 1
    INT = 2
    FLOAT = 3
    BOOL = 4


NO_REORDER = 0  #: ``ATTN_NO_REORDER``: the reorder threshold of builders that do not reorder.
PAD_SLOT_ID = -1  #: ``ATTN_PAD_SLOT_ID``: vLLM's ``PAD_SLOT_ID``.
