// FLASH_ATTN_MLA_SPARSE: vLLM 0.33's FlashAttnMLASparseMetadataBuilder
// (mla/flashattn_mla_sparse.py): the sparse base with varlen decodes, the 9.x threshold table and
// no DCP; req_id_per_token refilled in a draft decode update. (The module's FA4 builder derives
// from FlashInfer's TRT-LLM sparse builder: mla_flashinfer_sparse.cc.)
#include "backends/sparse_mla_common.h"
#include "core/error.h"

namespace attn::backends {
namespace {

constexpr MlaClass kFlashAttnMlaSparse =
    MlaClass("FLASH_ATTN_MLA_SPARSE", kCgUniformBatch, QueryLenSupport::kVarlen)
        .release("0.33 (partial)").threshold_table(SparseThresholds::kSm90).blocks(64)
        .caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16}).draft_update_without_dcp();

void check_flash_attn_mla_sparse(const KvCacheSpec&, const BuilderConfig& c) {
  if (c.decode_context_parallel_size > 1)
    fail(Status::kUnsupported, "FlashAttention MLA Sparse does not support DCP for now "
         "(config->decode_context_parallel_size=", c.decode_context_parallel_size, ")");
}

}  // namespace

extern const BackendDescriptor kFlashAttnMlaSparseBackend;
const BackendDescriptor kFlashAttnMlaSparseBackend =
    mla_descriptor<kFlashAttnMlaSparse, SparseMlaCommonBuilder, check_flash_attn_mla_sparse>();

}  // namespace attn::backends
