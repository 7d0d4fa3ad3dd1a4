// Package attn is the Go binding of libattn, a shared library with a stable C ABI
// (include/attn_c.h) that builds per-step attention metadata the way vLLM v1's attention
// metadata builders do.
//
// The binding uses cgo for the types of attn_c.h only: it never links against libattn. Open
// loads the library at run time with dlopen and resolves every function with dlsym (the
// package links -ldl only), so a program built with it runs against any libattn whose ABI
// major is 1 and whose minor is at least 1, found at run time:
//
//	lib, err := attn.Open("")                    // $ATTN_LIBRARY, else libattn.so.1
//	spec := attn.NewKVCacheSpec(16, 8, 128)      // block size, KV heads, head size
//	cfg := attn.NewBuilderConfig(256, 8192, 1024, 32)
//	b, err := lib.NewBuilder("FLASH_ATTN", spec, cfg)
//	defer b.Close()
//	batch, err := attn.NewCommonMetadata(qsl, seqLens, blockTable, width, slotMapping)
//	md, err := b.Build(0, batch, false)
//	seq, err := md.Int32s("seq_lens")
//
// # Memory
//
// Go slices are passed by value: this Go (1.19) has no runtime.Pinner, and cgo forbids C
// memory (the tensor descriptors libattn reads) from holding Go pointers, so every Go-slice
// tensor is copied into C memory owned by the binding at each call (a builder reuses its two
// staging areas, so a build allocates nothing once warm). To pass data without a copy, put it
// in a HostBuffer (C memory) or describe device memory with External.
//
// # Lifetimes
//
// Metadata returned by a build belongs to its builder and is valid until the next build or
// update on that builder or its Close; the binding checks this and answers a stale use with an
// *Error. Clone keeps a copy. Metadata returned by a batch utility or Clone is the caller's:
// Close it (a finalizer is a safety net). Values read from metadata (Int32s, Fields, ...) are
// copies that stay valid; the Unsafe* views are not.
//
// # Threads
//
// A Library, distinct Builders, and owned Metadata may be used from any goroutine. One Builder
// builds for one goroutine at a time: a second concurrent build (or a build while another
// goroutine reads the builder's metadata) returns an *Error with code ErrBusy, as libattn does.
package attn

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -std=gnu99
#cgo LDFLAGS: -ldl
#include "capi.h"
*/
import "C"

import "fmt"

// The ABI this binding is generated from (capi_gen.h, from attn_c.h by scripts/gen_bindings.sh):
// the header's. Open refuses a library whose major differs or whose minor is older
// (attn_check_version), and every struct the binding passes carries the header's size
// (the ATTN_*_INIT macros). HeaderMajor.HeaderMinor is the same version: capi_gen.h refuses to
// compile against another header until it is regenerated.
const (
	RequiredMajor = uint32(C.GATTN_REQUIRED_MAJOR)
	RequiredMinor = uint32(C.GATTN_REQUIRED_MINOR)
	HeaderMajor   = uint32(C.ATTN_VERSION_MAJOR)
	HeaderMinor   = uint32(C.ATTN_VERSION_MINOR)
)

// DefaultLibraryName is the SONAME Open asks the system loader for when it is given no path and
// $ATTN_LIBRARY is unset.
const DefaultLibraryName = "libattn.so.1"

// LibraryEnv is the environment variable Open reads when it is given no path.
const LibraryEnv = "ATTN_LIBRARY"

// CudagraphSupport is a builder's CUDA graph support level (vLLM's AttentionCGSupport).
type CudagraphSupport int32

// The levels, lowest first.
const (
	CGNever                    CudagraphSupport = C.ATTN_CG_NEVER
	CGUniformSingleTokenDecode CudagraphSupport = C.ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE
	CGUniformBatch             CudagraphSupport = C.ATTN_CG_UNIFORM_BATCH
	CGAlways                   CudagraphSupport = C.ATTN_CG_ALWAYS
)

// String gives vLLM's name of the level ("UNIFORM_BATCH").
func (s CudagraphSupport) String() string {
	switch s {
	case CGNever:
		return "NEVER"
	case CGUniformSingleTokenDecode:
		return "UNIFORM_SINGLE_TOKEN_DECODE"
	case CGUniformBatch:
		return "UNIFORM_BATCH"
	case CGAlways:
		return "ALWAYS"
	}
	return fmt.Sprintf("CudagraphSupport(%d)", int32(s))
}

// CudagraphMode is the runtime's CUDA graph mode (vLLM's CUDAGraphMode).
type CudagraphMode int32

// The modes.
const (
	CudagraphModeNone             CudagraphMode = C.ATTN_CUDAGRAPH_MODE_NONE
	CudagraphModePiecewise        CudagraphMode = C.ATTN_CUDAGRAPH_MODE_PIECEWISE
	CudagraphModeFull             CudagraphMode = C.ATTN_CUDAGRAPH_MODE_FULL
	CudagraphModeFullDecodeOnly   CudagraphMode = C.ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY
	CudagraphModeFullAndPiecewise CudagraphMode = C.ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE
)

// KVCacheKind is the kind of a KV cache spec (vLLM's KVCacheSpec subclasses).
type KVCacheKind int32

// The kinds.
const (
	KVFullAttention         KVCacheKind = C.ATTN_KV_FULL_ATTENTION
	KVSlidingWindow         KVCacheKind = C.ATTN_KV_SLIDING_WINDOW
	KVChunkedLocalAttention KVCacheKind = C.ATTN_KV_CHUNKED_LOCAL_ATTENTION
	KVMLA                   KVCacheKind = C.ATTN_KV_MLA
	KVCrossAttention        KVCacheKind = C.ATTN_KV_CROSS_ATTENTION
	KVEncoderOnly           KVCacheKind = C.ATTN_KV_ENCODER_ONLY
	KVMamba                 KVCacheKind = C.ATTN_KV_MAMBA
	KVCircularBuffer        KVCacheKind = C.ATTN_KV_CIRCULAR_BUFFER // ABI 1.7
)

// KVDtype is a KV cache element type (a spec's DType, a config's CacheDtype and ModelDtype).
type KVDtype int32

// The element types.
const (
	KVDtypeAuto     KVDtype = C.ATTN_KV_DTYPE_AUTO
	KVDtypeFloat16  KVDtype = C.ATTN_KV_DTYPE_FLOAT16
	KVDtypeBfloat16 KVDtype = C.ATTN_KV_DTYPE_BFLOAT16
	KVDtypeFloat32  KVDtype = C.ATTN_KV_DTYPE_FLOAT32
	KVDtypeFP8E4M3  KVDtype = C.ATTN_KV_DTYPE_FP8_E4M3
	KVDtypeFP8E5M2  KVDtype = C.ATTN_KV_DTYPE_FP8_E5M2
	KVDtypeUint8    KVDtype = C.ATTN_KV_DTYPE_UINT8
)

// AttentionType is vLLM's AttentionType.
type AttentionType int32

// The attention types.
const (
	AttentionDecoder        AttentionType = C.ATTN_TYPE_DECODER
	AttentionEncoder        AttentionType = C.ATTN_TYPE_ENCODER
	AttentionEncoderOnly    AttentionType = C.ATTN_TYPE_ENCODER_ONLY
	AttentionEncoderDecoder AttentionType = C.ATTN_TYPE_ENCODER_DECODER
)

// ValidateMode says how much a build validates.
type ValidateMode int32

// The modes.
const (
	ValidateHost ValidateMode = C.ATTN_VALIDATE_HOST
	ValidateFull ValidateMode = C.ATTN_VALIDATE_FULL
	// ValidateTrusted (ABI 1.7): shapes, dtypes, devices, extents and scalars only; O(1) builds.
	ValidateTrusted ValidateMode = C.ATTN_VALIDATE_TRUSTED
)

// CPUISA is the kernel ISA of CPU_ATTN (ABI 1.1).
type CPUISA int32

// The ISAs.
const (
	CPUISADetect CPUISA = C.ATTN_CPU_ISA_DETECT
	CPUISAAMX    CPUISA = C.ATTN_CPU_ISA_AMX
	CPUISAVec    CPUISA = C.ATTN_CPU_ISA_VEC
	CPUISAVec16  CPUISA = C.ATTN_CPU_ISA_VEC16
	CPUISANeon   CPUISA = C.ATTN_CPU_ISA_NEON
	CPUISAVXE    CPUISA = C.ATTN_CPU_ISA_VXE
	CPUISAVSX    CPUISA = C.ATTN_CPU_ISA_VSX
	CPUISARVV    CPUISA = C.ATTN_CPU_ISA_RVV
)

// MambaType is a Mamba spec's state-space layer (vLLM's MambaSpec.mamba_type; ABI 1.2).
type MambaType int32

// The types.
const (
	MambaTypeAuto            MambaType = C.ATTN_MAMBA_TYPE_AUTO
	MambaTypeMamba1          MambaType = C.ATTN_MAMBA_TYPE_MAMBA1
	MambaTypeMamba2          MambaType = C.ATTN_MAMBA_TYPE_MAMBA2
	MambaTypeShortConv       MambaType = C.ATTN_MAMBA_TYPE_SHORT_CONV
	MambaTypeLinearAttention MambaType = C.ATTN_MAMBA_TYPE_LINEAR_ATTENTION
	MambaTypeGDNAttention    MambaType = C.ATTN_MAMBA_TYPE_GDN_ATTENTION
)

// MambaCacheMode is vLLM's cache_config.mamba_cache_mode (ABI 1.2).
type MambaCacheMode int32

// The modes.
const (
	MambaCacheNone  MambaCacheMode = C.ATTN_MAMBA_CACHE_MODE_NONE
	MambaCacheAll   MambaCacheMode = C.ATTN_MAMBA_CACHE_MODE_ALL
	MambaCacheAlign MambaCacheMode = C.ATTN_MAMBA_CACHE_MODE_ALIGN
)

// FieldKind is what a metadata field holds.
type FieldKind int32

// The kinds.
const (
	FieldNone   FieldKind = C.ATTN_FIELD_NONE
	FieldTensor FieldKind = C.ATTN_FIELD_TENSOR
	FieldInt    FieldKind = C.ATTN_FIELD_INT
	FieldFloat  FieldKind = C.ATTN_FIELD_FLOAT
	FieldBool   FieldKind = C.ATTN_FIELD_BOOL
)

// String names the kind ("tensor").
func (k FieldKind) String() string {
	switch k {
	case FieldNone:
		return "none"
	case FieldTensor:
		return "tensor"
	case FieldInt:
		return "int"
	case FieldFloat:
		return "float"
	case FieldBool:
		return "bool"
	}
	return fmt.Sprintf("FieldKind(%d)", int32(k))
}

// NoReorder is what Builder.ReorderBatchThreshold returns for builders that do not reorder
// (None in vLLM).
const NoReorder = int32(C.ATTN_NO_REORDER)

// PadSlotID is the slot id of padded entries in slot mappings (vLLM's PAD_SLOT_ID).
const PadSlotID = int64(C.ATTN_PAD_SLOT_ID)

// DCPAllRanks asks GetDCPLocalSeqLens for the lengths of every rank.
const DCPAllRanks = int32(C.ATTN_DCP_ALL_RANKS)

// Stream is a CUDA stream (cudaStream_t) as an integer; 0 is the default stream. Host work
// ignores it.
type Stream uintptr
