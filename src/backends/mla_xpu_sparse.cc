// XPU_MLA_SPARSE: vLLM 0.33's XPUMLASparseMetadataBuilder (v1/attention/backends/mla/
// xpu_mla_sparse.py), the XPU platform's sparse MLA builder (DeepSeek V3.2 / GLM DSA on Intel
// GPUs). A plain AttentionMetadataBuilder, not the sparse MLA common one: level NEVER, no reorder
// threshold (the base class's None), no update_block_table, no draft-decode update. Its backend:
// MLA (head size 576), float16 and bfloat16 models, cache dtypes auto / float16 / bfloat16, any
// block size (the base class's MultipleOf(1)); customize_spec's align_blocks_to_rows sets the
// spec's block_stride_alignment, a layout matter of the KV cache, not of the metadata.
//
// build(): the batch's scalars and tensors as they are, req_id_per_token from query_start_loc
// (np.repeat over its differences into a persistent buffer of max_num_batched_tokens that is
// zero-filled whole first; the field views its first num_actual_tokens), block_size, topk_tokens
// (hf_text_config.index_topk: kv_cache_spec->index_topk) and every token routed to the sparse MQA
// path: num_decodes = num_reqs, num_prefills = 0, num_decode_tokens = num_actual_tokens.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/mla_builder.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr MlaClass kXpuMlaSparse =
    MlaClass("XPU_MLA_SPARSE", kCgNever, QueryLenSupport::kVarlen)
        .release(kVllmRelease).caches({kKvDtypeAuto, kKvDtypeFloat16, kKvDtypeBfloat16});

/// XPUMLASparseMetadata's fields, in its order.
#define XPU_MLA_SPARSE_FIELDS(X)                \
  X(kNumReqs, "num_reqs")                       \
  X(kMaxQueryLen, "max_query_len")              \
  X(kMaxSeqLen, "max_seq_len")                  \
  X(kNumActualTokens, "num_actual_tokens")      \
  X(kQueryStartLoc, "query_start_loc")          \
  X(kSlotMapping, "slot_mapping")               \
  X(kBlockTable, "block_table")                 \
  X(kReqIdPerToken, "req_id_per_token")         \
  X(kBlockSize, "block_size")                   \
  X(kTopkTokens, "topk_tokens")                 \
  X(kNumDecodes, "num_decodes")                 \
  X(kNumPrefills, "num_prefills")               \
  X(kNumDecodeTokens, "num_decode_tokens")
ATTN_NAMED_LIST(Field, XPU_MLA_SPARSE_FIELDS);

#define XPU_MLA_SPARSE_BUFFERS(X) X(kBufReqIdPerToken, "req_id_per_token")
ATTN_NAMED_LIST(Buffer, XPU_MLA_SPARSE_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec&, const BuilderConfig& c) {
  BufferPlan p(kBufferNames);
  p.set(kBufReqIdPerToken,
        buffer_bytes("req_id_per_token", {c.max_num_batched_tokens, sizeof(int32_t)}));
  return p.requests();
}

class XpuMlaSparseBuilder final : public Builder {
 public:
  XpuMlaSparseBuilder(std::shared_ptr<const Backend> owner, const KvCacheSpec& spec,
                      const BuilderConfig& config)
      : Builder(std::move(owner), spec, config),
        buffers_(backend().name().c_str(), config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    // reorder_batch_threshold stays None: the builder never calls _init_reorder_batch_threshold
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    // The whole buffer: request ids up to query_start_loc[num_reqs], zeros after it (vLLM's
    // fill_(0) then the copy of np.repeat's ids).
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    int32_t* ids = buffers_.as<int32_t>(kBufReqIdPerToken);
    ops::compute_token_to_req_indices(exec, qsl, n, c.qsl_host[n], config().max_num_batched_tokens,
                                      ids);
    Metadata& m = metadata();
    m.set_int(kNumReqs, n);
    m.set_int(kMaxQueryLen, c.max_query_len);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    m.set_int(kNumActualTokens, T);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_tensor(kBlockTable, *c.block_table_tensor);
    m.set_tensor(kReqIdPerToken, make_vector(ids, config().device, kInt32, T), true);
    m.set_int(kBlockSize, spec().block_size);
    m.set_int(kTopkTokens, sparse_index_topk(spec()));
    m.set_int(kNumDecodes, n);
    m.set_int(kNumPrefills, 0);
    m.set_int(kNumDecodeTokens, T);
  }

 private:
  PersistentBuffers buffers_;
};

void check_xpu_mla_sparse(const BackendDescriptor&, const KvCacheSpec& spec,
                          const BuilderConfig& c) {
  check_mla_spec(kXpuMlaSparse, spec, c);
}

}  // namespace

extern const BackendDescriptor kXpuMlaSparseBackend;
const BackendDescriptor kXpuMlaSparseBackend{
    kXpuMlaSparse.name,
    kXpuMlaSparse.vllm_release,
    kv_kind_bit(kKvMla),
    0,
    fixed_cudagraph_support<kCgNever>,
    check_xpu_mla_sparse,
    buffer_plan_of<plan>,
    create_builder_of<XpuMlaSparseBuilder>,
};

}  // namespace attn::backends
