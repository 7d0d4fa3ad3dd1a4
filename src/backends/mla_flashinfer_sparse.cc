// vLLM 0.33's FlashInferMLASparseMetadataBuilder family (mla/flashinfer_mla_sparse*.py): the
// sparse base with varlen decodes, the 10.x threshold table and varlen DCP decodes, and
//   FLASHINFER_MLA_SPARSE_SM120: the base FlashInfer builder (bfloat16 models, "auto" or fp8
//     caches, index_topk 2048);
//   FLASHINFER_MLA_SPARSE: FlashInferMLASparseTRTLLMMetadataBuilder (varlen CUDA graphs,
//     req_id_per_token refilled in a draft decode update without DCP; "fp8" is fp8_ds_mla);
//   FLASH_ATTN_MLA_SPARSE_FA4: FlashAttnMLASparseFA4MetadataBuilder (mla/flashattn_mla_sparse.py),
//     a TRT-LLM builder (bfloat16, index_topk a multiple of 128);
//   FLASHINFER_MLA_SPARSE_SM90: FlashInferMLASparseSM90Builder, the base builder plus its
//     FlashInfer plan (mla_flashinfer_sparse_sm90.cc).
#include "backends/mla_flashinfer_sparse.h"

#include "core/error.h"

namespace attn::backends {
namespace {

constexpr MlaClass kFlashInferMlaSparseSm120 =
    kFlashInferMlaSparseBase.named("FLASHINFER_MLA_SPARSE_SM120")
        .caches({kKvDtypeAuto, kKvDtypeFp8E4m3});

constexpr MlaClass kFlashInferMlaSparse = kFlashInferMlaSparseBase.named("FLASHINFER_MLA_SPARSE")
                                              .blocks(32)
                                              .draft_update_without_dcp()
                                              .varlen_cudagraph();

constexpr MlaClass kFlashAttnMlaSparseFa4 =  // a TRT-LLM builder
    kFlashInferMlaSparse.named("FLASH_ATTN_MLA_SPARSE_FA4")
        .caches({kKvDtypeAuto, kKvDtypeBfloat16})
        .blocks(64);

void check_sm120(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (sparse_index_topk(spec) != 2048)
    fail(Status::kUnsupported, "FLASHINFER_MLA_SPARSE_SM120 requires index_topk=2048; got ",
         sparse_index_topk(spec), " (kv_cache_spec->index_topk)");
  require_bf16_model(kFlashInferMlaSparseSm120, spec, c);
}

void check_fa4(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (sparse_index_topk(spec) % 128 != 0)
    fail(Status::kUnsupported, "FA4 sparse MLA requires index_topk % 128 == 0, got ",
         sparse_index_topk(spec), " (kv_cache_spec->index_topk)");
  require_bf16_model(kFlashAttnMlaSparseFa4, spec, c);
}

}  // namespace

extern const BackendDescriptor kFlashInferMlaSparseBackend, kFlashInferMlaSparseSm120Backend,
    kFlashAttnMlaSparseFa4Backend;
const BackendDescriptor kFlashInferMlaSparseBackend =
    mla_descriptor<kFlashInferMlaSparse, SparseMlaCommonBuilder>();
const BackendDescriptor kFlashInferMlaSparseSm120Backend =
    mla_descriptor<kFlashInferMlaSparseSm120, SparseMlaCommonBuilder, check_sm120>();
const BackendDescriptor kFlashAttnMlaSparseFa4Backend =
    mla_descriptor<kFlashAttnMlaSparseFa4, SparseMlaCommonBuilder, check_fa4>();

}  // namespace attn::backends
