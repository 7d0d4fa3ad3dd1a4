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
  ROW(kCpuV4IndexerBackend)

namespace attn::backends {

#define ATTN_DECLARE_BACKEND_(descriptor) extern const BackendDescriptor descriptor;
ATTN_BUILTIN_BACKENDS(ATTN_DECLARE_BACKEND_)
#undef ATTN_DECLARE_BACKEND_

namespace {

#define ATTN_BACKEND_ADDRESS_(descriptor) &descriptor,
const BackendDescriptor* const kBuiltinBackends[] = {ATTN_BUILTIN_BACKENDS(ATTN_BACKEND_ADDRESS_)};
#undef ATTN_BACKEND_ADDRESS_

}  // namespace

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::shared_ptr<const Backend>> backends;
    for (const BackendDescriptor* d : kBuiltinBackends) backends.push_back(make_backend(*d));
    Registry::instance().add(backends, nullptr);
  });
}

}  // namespace attn::backends
