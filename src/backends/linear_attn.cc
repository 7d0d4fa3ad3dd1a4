// LINEAR_ATTN: the metadata of vLLM's LinearAttentionMetadataBuilder.build(): the decode/prefill
// split (threshold 1), the batch's query_start_loc and seq_lens, and one state index per request
// (column 0 of mamba_get_block_table_tensor; cache modes "none" and "align", "all" having been
// removed in vLLM 0.33). CUDA graphs: UNIFORM_SINGLE_TOKEN_DECODE; no update_block_table.
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/mamba_common.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "LINEAR_ATTN";

#define LINEAR_ATTN_FIELDS(X)                    \
  X(kNumPrefills, "num_prefills")                \
  X(kNumPrefillTokens, "num_prefill_tokens")     \
  X(kNumDecodes, "num_decodes")                  \
  X(kNumDecodeTokens, "num_decode_tokens")       \
  X(kQueryStartLoc, "query_start_loc")           \
  X(kSeqLens, "seq_lens")                        \
  X(kStateIndicesTensor, "state_indices_tensor")
ATTN_NAMED_LIST(Field, LINEAR_ATTN_FIELDS);

#define LINEAR_ATTN_BUFFERS(X) X(kBufAlign, "align state indices")
ATTN_NAMED_LIST(Buffer, LINEAR_ATTN_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t rows = spec.mamba_cache_mode == kMambaCacheAlign ? c.max_num_seqs : 0;
  BufferPlan p(kBufferNames);
  p.set(kBufAlign, buffer_bytes("align state indices",
                                {rows, 1 + spec.num_speculative_blocks, int64_t{sizeof(int32_t)}}));
  return p.requests();
}

class LinearAttnBuilder final : public Builder {
 public:
  LinearAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    // A class attribute in vLLM (reorder_batch_threshold: int = 1), not
    // _init_reorder_batch_threshold: spec decode and DCP do not change it.
    set_reorder_batch_threshold(1);
  }

 protected:
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    lim.block_size = 0;  // "none" and "align" tables hold state slots (check_state_table)
    return lim;
  }

  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, 1, /*require_uniform=*/false,
        "LINEAR_ATTN");
    check_state_table(kName, spec(), c);

    Metadata& m = metadata();
    m.reset();
    m.set_int(kNumPrefills, s.num_prefills);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kSeqLens, *c.seq_lens);
    const StateTable st = mamba_state_table(exec, spec(), *c.block_table_tensor,
                                            exec_seq_lens(exec, c), c.num_reqs,
                                            buffers_.as<int32_t>(kBufAlign), config().device);
    m.set_tensor(kStateIndicesTensor, column_view(st.table, 0, c.num_reqs, 0), st.in_buffer);
  }

 private:
  PersistentBuffers buffers_;
};

}  // namespace

extern const BackendDescriptor kLinearAttnBackend;
const BackendDescriptor kLinearAttnBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvMamba),
    0,
    fixed_cudagraph_support<kCgUniformSingleTokenDecode>,
    [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig&) {
      check_mamba_spec(d.name, kMambaTypeLinearAttention, spec);
      check_mamba_cache_mode(d.name, spec);
    },
    buffer_plan_of<plan>,
    create_builder_of<LinearAttnBuilder>,
};

}  // namespace attn::backends
