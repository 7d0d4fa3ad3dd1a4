// FLASHINFER_MLA: vLLM 0.33's FlashInferMLAMetadataBuilder (mla/flashinfer_mla.py). ALWAYS
// capturable, varlen decodes, non-causal multi-token decode; its _build_decode's
// FlashInferMLADecodeMetadata adds the decodes' query_start_loc and the promised query bound,
// and flattened rows it leaves unbuilt (None, query_len 0; the impl fills them lazily for
// non-causal blocks).
#include "backends/mla_common.h"
#include "core/error.h"

namespace attn::backends {
namespace {

constexpr MlaClass kFlashInferMla =
    MlaClass("FLASHINFER_MLA", kCgAlways, QueryLenSupport::kVarlen)
        .dcp_varlen(DcpVarlen::kYes).blocks(32, 64).non_causal_decode();

/// FlashInferMLADecodeMetadata's additions, in its order.
#define FLASHINFER_MLA_DECODE_FIELDS(X)                         \
  X(kFlattenedBlockTable, "decode_flattened_block_table")       \
  X(kFlattenedSeqLens, "decode_flattened_seq_lens")             \
  X(kFlattenedRowReq, "decode_flattened_row_req")               \
  X(kQueryLen, "decode_query_len")                              \
  X(kQueryStartLoc, "decode_query_start_loc")                   \
  X(kMaxQueryLen, "decode_max_query_len")
ATTN_NAMED_LIST(Field, FLASHINFER_MLA_DECODE_FIELDS);

void check_flashinfer_mla(const KvCacheSpec&, const BuilderConfig& c) {
  if (c.decode_context_parallel_size > 1 && c.cp_kv_cache_interleave_size != 1)
    fail(Status::kUnsupported,
         "FLASHINFER_MLA with decode context parallelism needs "
         "config->cp_kv_cache_interleave_size=1, got ",
         c.cp_kv_cache_interleave_size);
  const int32_t nope = qk_nope_head_dim(c);
  if (nope != 64 && nope != 128 && nope != 192)
    fail(Status::kUnsupported,
         "FLASHINFER_MLA needs qk_nope_head_dim in [64, 128, 192], got "
         "config->mla_qk_nope_head_dim=",
         nope);
}

class FlashInferMlaBuilder final : public MlaCommonBuilder {
 public:
  explicit FlashInferMlaBuilder(const MlaArgs& a)
      : MlaCommonBuilder(a, field_block(kFieldNames), {}, buffer_plan(a.spec, a.config)) {}

 protected:
  /// The promised bound, not the measured longest query.
  void build_decode(const MlaDecode& d, const ops::Exec&) override {
    Metadata& m = metadata();
    m.set_int(decode_field(kQueryLen), 0);
    m.set_tensor(decode_field(kQueryStartLoc),
                 rows_between(*d.common.query_start_loc, 0, d.num_decodes + 1));
    m.set_int(decode_field(kMaxQueryLen), d.query_len_bound);
  }
};

}  // namespace

extern const BackendDescriptor kFlashInferMlaBackend;
const BackendDescriptor kFlashInferMlaBackend =
    mla_descriptor<kFlashInferMla, FlashInferMlaBuilder, check_flashinfer_mla>();

}  // namespace attn::backends
