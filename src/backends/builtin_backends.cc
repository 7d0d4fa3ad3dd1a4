#include "backends/builtin_backends.h"

#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend_descriptor.h"
#include "core/registry.h"

// The registry table, one row per backend, in the order attn_backend_name() lists them (vLLM's
// backend enum names, FLASH_ATTN first). Append only: an index never changes. Each row names
// the descriptor its backend file defines.
#define ATTN_BUILTIN_BACKENDS(ROW)                            \
  ROW(kFlashAttnBackend)     /* flash_attn.cc */              \
  ROW(kFlashInferBackend)    /* flashinfer.cc */              \
  ROW(kTritonAttnBackend)    /* triton_attn.cc */             \
  ROW(kFlexAttentionBackend) /* flex_attention.cc */          \
  ROW(kTreeAttnBackend)      /* tree_attn.cc */               \
  ROW(kCpuAttnBackend)       /* cpu_attn.cc */                \
  ROW(kFlashMlaBackend)      /* mla_flashmla.cc: the MLA family (mla_common.h) */ \
  ROW(kFlashAttnMlaBackend)  /* mla_flash_attn.cc */          \
  ROW(kCutlassMlaBackend)    /* mla_cutlass.cc */             \
  ROW(kFlashInferMlaBackend) /* mla_flashinfer.cc */          \
  ROW(kTritonMlaBackend)     /* mla_triton.cc */              \
  ROW(kMamba2Backend)        /* mamba.cc: the Mamba family */ \
  ROW(kMamba1Backend)                                         \
  ROW(kShortConvBackend)                                      \
  ROW(kLinearAttnBackend)    /* linear_attn.cc */             \
  ROW(kGdnAttnBackend)       /* gdn_attn.cc */                \
  ROW(kFlashMlaSparseBackend) /* mla_flashmla_sparse.cc: sparse_mla_common.h */ \
  ROW(kFlashAttnMlaSparseBackend) /* mla_flash_attn_sparse.cc */ \
  ROW(kFlashInferMlaSparseBackend) /* mla_flashinfer_sparse.cc */ \
  ROW(kFlashInferMlaSparseSm120Backend)                       \
  ROW(kFlashAttnMlaSparseFa4Backend)                          \
  ROW(kKimiK3KdaBackend)     /* kimi_k3_kda.cc */             \
  ROW(kBailingLinearAttnBackend) /* bailing_linear_attn.cc */ \
  ROW(kTokenspeedMlaBackend) /* mla_tokenspeed.cc */          \
  ROW(kFlashAttnDiffKvBackend)  /* flash_attn.cc */           \
  ROW(kTritonAttnDiffKvBackend) /* triton_attn.cc */          \
  ROW(kB12xBackend)             /* b12x.cc */                 \
  ROW(kCacheOnlyAttnBackend)    /* cache_only_attn.cc */      \
  ROW(kHpcAttnBackend)          /* hpc_attn.cc */             \
  ROW(kTritonFlashAttnBackend)  /* composite_attn.cc */       \
  ROW(kTritonFlashInferBackend)                               \
  ROW(kRocmAttnBackend)         /* rocm_attn.cc */            \
  ROW(kRocmOctaveBackend)                                     \
  ROW(kRocmAiterUnifiedAttnBackend)                           \
  ROW(kRocmSegmentedAttnBackend)                              \
  ROW(kRocmAiterFaBackend)      /* rocm_aiter_fa.cc */      \
  ROW(kDeepseekV32IndexerBackend) /* sparse_indexer.cc */     \
  ROW(kFlashInferMlaSparseSm90Backend) /* mla_flashinfer_sparse_sm90.cc */ \
  ROW(kKpoolTailBackend)     /* kpool_tail.cc */            \
  ROW(kPleShortConvAttnBackend) /* ple_short_conv_attn.cc */ \
  ROW(kCpuMlaBackend)        /* mla_cpu.cc */                 \
  ROW(kAmxMlaBackend)        /* mla_amx.cc */                 \
  ROW(kTurboQuantBackend)    /* turboquant_attn.cc */         \
  ROW(kUltraQuantBackend)                                     \
  ROW(kDeepseekSparseSwaBackend) /* sparse_swa.cc */           \
  ROW(kRocmAiterMlaBackend)  /* mla_rocm_aiter.cc */          \
  ROW(kDeepseekV4CompressorBackend) /* compressor.cc */       \
  ROW(kDeepseekV41CompressorBackend)                          \
  ROW(kDeepseekV41SparseIndexerBackend) /* sparse_indexer.cc */ \
  ROW(kFlashmlaSparseDsv4Backend) /* v4_sparse_mla.cc */     \
  ROW(kFlashinferMlaSparseDsv4Backend)                        \
  ROW(kCpuV4MlaSparseBackend)                                 \
  ROW(kFlashmlaSparseDsv41Backend)                            \
  ROW(kFlashmlaMegaAttnDsv41Backend)                          \
  ROW(kFlashinferMlaSparseDsv41Backend)                       \
  ROW(kDeepseekSparseSwaFlashMlaBackend) /* sparse_swa.cc */  \
  ROW(kDeepseekSparseSwaFlashInferBackend)                    \
  ROW(kDeepseekV41SparseSwaBackend)                           \
  ROW(kDeepseekV41SparseSwaFlashMlaBackend)                   \
  ROW(kDeepseekV41SparseSwaFlashInferBackend)                 \
  ROW(kRocmFlashmlaSparseDsv4Backend) /* v4_sparse_mla.cc */  \
  ROW(kRocmFlashmlaSparseDsv41Backend)                        \
  ROW(kDeepseekSparseSwaRocmAiterBackend) /* sparse_swa.cc */ \
  ROW(kDeepseekV41SparseSwaRocmAiterBackend)                  \
  ROW(kDeepseekV4IndexerBackend) /* sparse_indexer.cc */      \
  ROW(kDeepseekV41IndexerBackend)                             \
  ROW(kCpuV4IndexerBackend)                                   \
  ROW(kInklingSconvSwaBackend) /* inkling_sconv_swa.cc */    \
  ROW(kKimiK3KdaRocmBackend)   /* gdn_attn.cc */              \
  ROW(kFlashAttnMlaXpuBackend) /* mla_flash_attn.cc */       \
  ROW(kXpuV4MlaSparseBackend)  /* v4_sparse_mla.cc */        \
  ROW(kDots3NoteTritonMlaBackend) /* mla_dots3_note.cc */ \
  ROW(kXpuMlaSparseBackend)    /* mla_xpu_sparse.cc */       \
  ROW(kStep5CsaSummaryBackend) /* step5_csa_summary.cc */ \
  ROW(kRocmAiterMlaSparseBackend) /* mla_rocm_aiter_sparse.cc */ \
  ROW(kMiniMaxM3SparseBackend) /* minimax_m3_sparse.cc */ \
  ROW(kMiniMaxM3SparseAiterPaBackend) /* minimax_m3_sparse.cc */ \
  ROW(kQwen4ExpQsaTritonBackend) /* flash_attn.cc */          \
  ROW(kQwen4ExpQsaTritonRocmBackend) /* flash_attn.cc */      \
  ROW(kStep5CsaTailRingBackend) /* step5_csa_tail_ring.cc */ \
  ROW(kMiniMaxM3IndexerBackend) /* minimax_m3_indexer.cc */ \
  ROW(kQwen4ExpQsaStateBackend) /* qsa_state.cc */          \
  ROW(kMiniMaxM3IndexerMsaRocmBackend) /* minimax_m3_indexer.cc */

// vLLM 0.33.0's names of the built-in backends: every name vLLM uses for a backend libattn
// implements (its enum member in AttentionBackendEnum / MambaAttentionBackendEnum, the get_name()
// of its class, and of the classes that build with its builder), comma-separated. The registry
// resolves each to its backend wherever a backend name is taken, and attn_backend_info() lists
// them as `vllm_names`. A backend's names are its own name alone unless this table, the one place
// they are written, says otherwise. tests/data/vllm_backend_names.txt, which
// scripts/vllm_names.py derives from vLLM's source, is checked against it (test_vllm_names).
#define ATTN_VLLM_NAMES(NAMES)                                                                \
  /* enum member, then the class's get_name() */                                            \
  NAMES(kMamba2Backend, "MAMBA2,MAMBA2_ATTN")                                               \
  NAMES(kMamba1Backend, "MAMBA1,MAMBA1_ATTN")                                               \
  NAMES(kShortConvBackend, "SHORT_CONV,SHORT_CONV_ATTN")                                    \
  /* the enum member LINEAR; LinearAttentionBackend.get_name() is LINEAR_ATTN */            \
  NAMES(kLinearAttnBackend, "LINEAR_ATTN,LINEAR")                                           \
  /* AiterTritonMLABackend (enum ROCM_AITER_TRITON_MLA, get_name AITER_TRITON_MLA) builds    \
     with AiterMLAMetadataBuilder */                                                        \
  NAMES(kRocmAiterMlaBackend, "ROCM_AITER_MLA,ROCM_AITER_TRITON_MLA,AITER_TRITON_MLA")      \
  /* dots3's Dots3NotePaddedSparseBackend builds with FlashAttnMLASparseMetadataBuilder */   \
  NAMES(kFlashAttnMlaSparseBackend, "FLASH_ATTN_MLA_SPARSE,DOTS3_NOTE_PADDED_MLA_SPARSE")   \
  /* no vLLM 0.33.0 name of their own: TREE_ATTN left vLLM after 0.20.2; vLLM calls both    \
     compressors "CompressorBackend" and every sparse SWA builder DEEPSEEK_SPARSE_SWA */     \
  NAMES(kTreeAttnBackend, "")                                                               \
  NAMES(kDeepseekV4CompressorBackend, "")                                                   \
  NAMES(kDeepseekV41CompressorBackend, "")                                                  \
  NAMES(kDeepseekSparseSwaFlashMlaBackend, "")                                              \
  NAMES(kDeepseekSparseSwaFlashInferBackend, "")                                            \
  NAMES(kDeepseekV41SparseSwaBackend, "")                                                   \
  NAMES(kDeepseekV41SparseSwaFlashMlaBackend, "")                                           \
  NAMES(kDeepseekV41SparseSwaFlashInferBackend, "")                                         \
  NAMES(kDeepseekSparseSwaRocmAiterBackend, "")                                             \
  NAMES(kDeepseekV41SparseSwaRocmAiterBackend, "")                                          \
  /* vLLM's XPU platform builds FLASH_ATTN_MLA with XPUFlashAttnMLAMetadataBuilder */        \
  NAMES(kFlashAttnMlaXpuBackend, "")                                                      \
  NAMES(kDots3NoteTritonMlaBackend, "") /* vLLM calls its class TRITON_MLA */              \
  /* vLLM's MiniMaxM3SparseAiterPABackend inherits MINIMAX_M3_SPARSE's get_name() */        \
  NAMES(kMiniMaxM3SparseAiterPaBackend, "")                                                 \
  /* vLLM's AMD MiniMaxM3IndexerMSABackend inherits MINIMAX_M3_SPARSE_INDEXER's get_name() */ \
  NAMES(kMiniMaxM3IndexerMsaRocmBackend, "")                                                \
  /* vLLM's ROCm platform builds QWEN4_EXP_QSA_TRITON with the AMD Qwen4ExpQSAMetadataBuilder */ \
  NAMES(kQwen4ExpQsaTritonRocmBackend, "")

namespace attn::backends {

#define ATTN_DECLARE_BACKEND_(descriptor) extern const BackendDescriptor descriptor;
ATTN_BUILTIN_BACKENDS(ATTN_DECLARE_BACKEND_)
#undef ATTN_DECLARE_BACKEND_

namespace {

#define ATTN_BACKEND_ADDRESS_(descriptor) &descriptor,
const BackendDescriptor* const kBuiltinBackends[] = {ATTN_BUILTIN_BACKENDS(ATTN_BACKEND_ADDRESS_)};
#undef ATTN_BACKEND_ADDRESS_

struct VllmNames {
  const BackendDescriptor* descriptor;
  const char* names;
};
#define ATTN_VLLM_NAMES_ROW_(descriptor, names) {&descriptor, names},
const VllmNames kVllmNames[] = {ATTN_VLLM_NAMES(ATTN_VLLM_NAMES_ROW_)};
#undef ATTN_VLLM_NAMES_ROW_

/// A built-in backend's vLLM names: its row of ATTN_VLLM_NAMES, else its own name.
const char* vllm_names_of(const BackendDescriptor& d) {
  for (const VllmNames& row : kVllmNames)
    if (row.descriptor == &d) return row.names;
  return d.name;
}

}  // namespace

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::shared_ptr<const Backend>> backends;
    for (const BackendDescriptor* d : kBuiltinBackends)
      backends.push_back(make_backend(*d, vllm_names_of(*d)));
    Registry::instance().add(backends, nullptr);
  });
}

}  // namespace attn::backends
