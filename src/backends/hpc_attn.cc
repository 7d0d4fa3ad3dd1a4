// HPC_ATTN (vLLM 0.33's HpcAttnMetadataBuilder, v1/attention/backends/hpc_attn.py; Hopper, head
// size 128, 64-token pages): a decode/prefill split at the reorder threshold (1, or 1 + k with
// speculative decoding, whose decodes must be uniform), the prefills' query_start_loc rebased
// (qo_indptr), the decodes' (qo_indptr_decode, a view) and their query length. UNIFORM_BATCH
// with speculative tokens, else UNIFORM_SINGLE_TOKEN_DECODE; no update_block_table; more than 3
// speculative tokens are refused, as vLLM's builder raises.
//
// task_map is the hpc library's decode-schedule workspace, which vLLM allocates with
// hpc.get_attention_decode_task_workspace(max_num_seqs, max_model_len or 4096, num_kv_heads,
// min_process_len=1024) and fills each build with hpc.assign_attention_decode_task(
// seq_lens[:num_decodes], task_map, num_kv_heads, decode_query_len, new_kv_included=True,
// min_process_len=1024). libattn cannot run hpc: task_map is None and the task_map_* fields
// (libattn's) are those calls' other arguments, for the runtime that runs them.
#include <memory>
#include <utility>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr int32_t kMinProcessLen = 1024;  // hpc_dynamic_sched_attn_min_split_len
constexpr int32_t kMaxMtp = 3;            // the HPC decode kernel's mtp in {0, 1, 2, 3}

#define HPC_FIELDS(X)                                    \
  X(kNumActualTokens, "num_actual_tokens")               \
  X(kNumDecodes, "num_decodes")                          \
  X(kNumDecodeTokens, "num_decode_tokens")               \
  X(kNumPrefills, "num_prefills")                        \
  X(kNumPrefillTokens, "num_prefill_tokens")             \
  X(kMaxQueryLen, "max_query_len")                       \
  X(kSlotMapping, "slot_mapping")                        \
  X(kSeqLens, "seq_lens")                                \
  X(kBlockTableTensor, "block_table_tensor")             \
  X(kQoIndptr, "qo_indptr")                              \
  X(kHpcKvWritten, "hpc_kv_written")                     \
  X(kHpcPrefillQScale, "hpc_prefill_q_scale")            \
  X(kHpcDecodeQScale, "hpc_decode_q_scale")              \
  X(kHpcSplitKFlag, "hpc_split_k_flag")                  \
  X(kDecodeQueryLen, "decode_query_len")                 \
  X(kQoIndptrDecode, "qo_indptr_decode")                 \
  X(kTaskMap, "task_map")                                \
  X(kTaskMapMaxNumSeqs, "task_map_max_num_seqs")         \
  X(kTaskMapMaxModelLen, "task_map_max_model_len")       \
  X(kTaskMapNumKvHeads, "task_map_num_kv_heads")         \
  X(kTaskMapMinProcessLen, "task_map_min_process_len")
ATTN_NAMED_LIST(Field, HPC_FIELDS);

#define HPC_BUFFERS(X) X(kBufQoIndptr, "qo_indptr")
ATTN_NAMED_LIST(Buffer, HPC_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec&, const BuilderConfig& c) {
  BufferPlan p(kBufferNames);
  p.set(kBufQoIndptr, buffer_bytes("qo_indptr", {static_cast<int64_t>(c.max_num_seqs) + 1, 4}));
  return p.requests();
}

class HpcAttnBuilder final : public Builder {
 public:
  HpcAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                 const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_("HPC_ATTN", config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int32_t threshold = *reorder_batch_threshold();
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, threshold, threshold > 1);
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    const int64_t decode_query_len =
        nd > 0 && s.num_decode_tokens > nd ? s.num_decode_tokens / nd : 1;
    Metadata& m = metadata();
    const Device d = config().device;
    m.set_int(kNumActualTokens, c.num_actual_tokens);
    m.set_int(kNumDecodes, nd);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, np);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_int(kMaxQueryLen, c.max_query_len);
    m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_tensor(kSeqLens, *c.seq_lens);
    m.set_tensor(kBlockTableTensor, *c.block_table_tensor);
    if (np > 0) {  // query_start_loc_cpu[nd:] - query_start_loc_cpu[nd], on the device
      const int32_t* qsl =
          (exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host) + nd;
      ops::MlaPrefillOut out;
      out.query_start_loc = buffers_.as<int32_t>(kBufQoIndptr);
      ops::mla_prefill_metadata(exec, qsl, np, out);
      m.set_tensor(kQoIndptr, make_vector(buffers_.get(kBufQoIndptr), d, kInt32, np + 1), true);
    } else {
      m.set_none(kQoIndptr);
    }
    m.set_bool(kHpcKvWritten, false);
    m.set_none(kHpcPrefillQScale);
    m.set_none(kHpcDecodeQScale);
    m.set_none(kHpcSplitKFlag);
    m.set_int(kDecodeQueryLen, decode_query_len);
    if (nd > 0)
      m.set_tensor(kQoIndptrDecode, rows_between(*c.query_start_loc, 0, nd + 1));
    else
      m.set_none(kQoIndptrDecode);
    m.set_none(kTaskMap);
    m.set_int(kTaskMapMaxNumSeqs, config().max_num_seqs);
    m.set_int(kTaskMapMaxModelLen, config().max_model_len > 0 ? config().max_model_len : 4096);
    m.set_int(kTaskMapNumKvHeads, spec().num_kv_heads);
    m.set_int(kTaskMapMinProcessLen, kMinProcessLen);
  }

 private:
  PersistentBuffers buffers_;
};

void check(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
  check_spec_kind(d, spec);
  if (config.num_speculative_tokens > kMaxMtp)
    invalid("HPC attention only supports up to 3 speculative tokens (mtp in {0, 1, 2, 3}), got "
            "config->num_speculative_tokens=", config.num_speculative_tokens);
}

}  // namespace

extern const BackendDescriptor kHpcAttnBackend;
const BackendDescriptor kHpcAttnBackend{
    "HPC_ATTN",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    0,
    [](const BackendDescriptor&, const KvCacheSpec&, const BuilderConfig& config) -> int32_t {
      return config.num_speculative_tokens > 0 ? kCgUniformBatch : kCgUniformSingleTokenDecode;
    },
    check,
    buffer_plan_of<plan>,
    create_builder_of<HpcAttnBuilder>,
};

}  // namespace attn::backends
