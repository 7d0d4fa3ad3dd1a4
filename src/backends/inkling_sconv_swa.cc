// INKLING_SCONV_SWA: vLLM 0.33's InklingSconvMetadataBuilder, the short-convolution state of
// Inkling's decoder layers kept as a sliding-window KV cache (block size = window = the conv's
// kernel size) and read by the conv out of band. vLLM has two copies of the builder,
// models/inkling/nvidia/sconv_swa_attn.py and models/inkling/amd/sconv_swa_attn.py, whose
// backends both call themselves INKLING_SCONV_SWA; the two builders (and their
// sconv_seq_metadata kernels) are the same, so one libattn backend stands for both
// (docs/backends/inkling.md; the lane compares it with each).
//
// The metadata: the batch's block table and slot mapping (all of its rows: the padded token
// count is slot_mapping's length), and two per-token persistent buffers over those rows:
// seq_idx, the request of each token, and query_start, the first query row of that request,
// both 0 from query_start_loc_cpu[-1] on (the padding rows). Level UNIFORM_BATCH (a class
// attribute), reorder_batch_threshold None, no update_block_table, no draft decode update (the
// base class's). The spec must be a SLIDING_WINDOW one (vLLM asserts SlidingWindowSpec).
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"
#include "ops/token_query_starts.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "INKLING_SCONV_SWA";

/// InklingSconvMetadata's fields, in its order.
#define INKLING_FIELDS(X)              \
  X(kBlockTable, "block_table")        \
  X(kSlotMapping, "slot_mapping")      \
  X(kSeqIdx, "seq_idx")                \
  X(kQueryStart, "query_start")
ATTN_NAMED_LIST(Field, INKLING_FIELDS);

/// The builder's seq_idx_buffer and query_start_buffer (max_num_batched_tokens int32 each).
#define INKLING_BUFFERS(X)              \
  X(kBufSeqIdx, "seq_idx_buffer")       \
  X(kBufQueryStart, "query_start_buffer")
ATTN_NAMED_LIST(Buffer, INKLING_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec&, const BuilderConfig& c) {
  const int64_t tokens = c.max_num_batched_tokens, i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufSeqIdx, buffer_bytes("seq_idx_buffer", {tokens, i32}));
  p.set(kBufQueryStart, buffer_bytes("query_start_buffer", {tokens, i32}));
  return p.requests();
}

class InklingSconvBuilder final : public Builder {
 public:
  InklingSconvBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                      const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const Tensor& slots = *c.slot_mapping;
    const int64_t padded = slots.shape[0];  // num_padded_tokens = slot_mapping.shape[0]
    // sconv_seq_metadata raises "seq_idx_out is too small for the padded token count"
    if (padded > config().max_num_batched_tokens)
      invalid("common->slot_mapping has ", padded, " entries, more than "
              "config->max_num_batched_tokens=", config().max_num_batched_tokens, " (", kName,
              "'s seq_idx_buffer and query_start_buffer)");
    // num_actual_tokens = int(query_start_loc_cpu[-1]); validate() checked it <= the slots
    const int64_t mapped = c.qsl_host[c.num_reqs];
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    int32_t* seq_idx = buffers_.as<int32_t>(kBufSeqIdx);
    int32_t* query_start = buffers_.as<int32_t>(kBufQueryStart);
    ops::compute_token_to_req_indices(exec, qsl, c.num_reqs, mapped, padded, seq_idx);
    ops::token_query_starts(exec, qsl, seq_idx, mapped, padded, query_start);
    Metadata& m = metadata();
    m.set_tensor(kBlockTable, *c.block_table_tensor);
    m.set_tensor(kSlotMapping, slots);
    m.set_tensor(kSeqIdx, make_vector(seq_idx, config().device, kInt32, padded), true);
    m.set_tensor(kQueryStart, make_vector(query_start, config().device, kInt32, padded), true);
  }

 private:
  PersistentBuffers buffers_;
};

}  // namespace

extern const BackendDescriptor kInklingSconvSwaBackend;
const BackendDescriptor kInklingSconvSwaBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvSlidingWindow),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_spec_kind_only,
    buffer_plan_of<plan>,
    create_builder_of<InklingSconvBuilder>,
};

}  // namespace attn::backends
