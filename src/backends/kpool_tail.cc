// KPOOL_TAIL: vLLM 0.33's KpoolTailMetadataBuilder (mla/indexer.py), the storage-only tail cache
// of GLM-5.3-Flash's pooled indexer keys: each request owns one circular block of `kpool` =
// block_size slots, so the builder only maps every token to its request's block (column 0 of
// the block table) at position mod kpool (compute_kpool_tail_slot_mapping), -1 for the null
// block; the rest is the batch's (DeepseekV32IndexerMetadata with no decode/prefill part).
// Level ALWAYS, reorder_batch_threshold None, no update_block_table, draft decode updates
// (slot // kpool * kpool + position mod kpool over the decode tokens).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "KPOOL_TAIL";

#define KPOOL_TAIL_FIELDS(X)                     \
  X(kSeqLens, "seq_lens")                        \
  X(kMaxSeqLen, "max_seq_len")                   \
  X(kSlotMapping, "slot_mapping")                \
  X(kNumDecodes, "num_decodes")                  \
  X(kNumDecodeTokens, "num_decode_tokens")       \
  X(kNumPrefills, "num_prefills")                \
  X(kNumPrefillTokens, "num_prefill_tokens")     \
  X(kDecode, "decode")                           \
  X(kPrefill, "prefill")                         \
  X(kPositions, "positions")                     \
  X(kBlockTable, "block_table")
ATTN_NAMED_LIST(Field, KPOOL_TAIL_FIELDS);

#define KPOOL_TAIL_BUFFERS(X) X(kBufSlotMapping, "slot_mapping_buffer")
ATTN_NAMED_LIST(Buffer, KPOOL_TAIL_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec&, const BuilderConfig& c) {
  BufferPlan p(kBufferNames);
  p.set(kBufSlotMapping, buffer_bytes("slot_mapping_buffer",
                                      {c.max_num_batched_tokens, int64_t{sizeof(int64_t)}}));
  return p.requests();
}

class KpoolTailBuilder final : public Builder {
 public:
  KpoolTailBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                   const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    set_reorder_batch_threshold(std::nullopt);  // a class attribute: None
  }

  std::string draft_decode_update_refusal() const override { return ""; }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, 1, false, kName);
    const Tensor& slots = *c.slot_mapping;
    if (c.positions && slots.dtype != kInt64)
      invalid("common->slot_mapping is ", slots.dtype.to_string(), "; ", kName,
              " writes int64 slots (vLLM's slot_mapping)");
    if (c.positions && slots.numel() > config().max_num_batched_tokens)
      invalid("common->slot_mapping has ", slots.numel(), " entries, more than "
              "config->max_num_batched_tokens=", config().max_num_batched_tokens);
    if (c.positions && c.positions->numel() < c.num_actual_tokens)
      invalid("common->positions has ", c.positions->numel(), " entries, fewer than "
              "num_actual_tokens=", c.num_actual_tokens);
    Metadata& m = metadata();
    m.reset();
    m.set_tensor(kSeqLens, *c.seq_lens);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, s.num_prefills);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_none(kDecode);
    m.set_none(kPrefill);
    m.set_none(kBlockTable);
    if (!c.positions) {
      m.set_tensor(kSlotMapping, slots);
      m.set_none(kPositions);
      return;
    }
    const Tensor& bt = *c.block_table_tensor;
    const int64_t n = slots.numel();
    const int64_t actual = std::min<int64_t>(c.num_actual_tokens, n);
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    int64_t* out = buffers_.as<int64_t>(kBufSlotMapping);
    ops::kpool_tail_slot_mapping(exec, qsl, c.num_reqs, bt.as<const int32_t>(), bt.strides[0],
                                 c.positions->as<const int64_t>(), slots.as<const int64_t>(),
                                 actual, n, spec().block_size, out);
    m.set_tensor(kSlotMapping, make_vector(out, config().device, kInt64, n), true);
    m.set_tensor(kPositions, *c.positions);
  }

  /// update_draft_decode_metadata: the decode tokens' slots moved to the advanced positions
  /// within their block (the builder's slot_mapping, in place).
  void do_update_draft_decode(const Metadata& md, const ops::Exec& exec) override {
    const attn::Field& pos = md.field(kPositions);
    if (pos.kind != FieldKind::kTensor)
      invalid(kName, "'s update_draft_decode_metadata needs positions (vLLM asserts them); "
              "the batch was built without common->positions");
    const attn::Field& slots = md.field(kSlotMapping);
    if (!slots.in_builder_buffer) return;  // not reached: positions imply the builder's slots
    ops::kpool_tail_draft_update(exec, slots.tensor.as<int64_t>(), pos.tensor.as<const int64_t>(),
                                 md.field(kNumDecodeTokens).int_value, spec().block_size);
  }

 private:
  PersistentBuffers buffers_;
};

void check_kpool_tail(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig&) {
  check_spec_kind(d, spec);
  if (spec.block_size <= 0)
    invalid("kv_cache_spec->block_size=", spec.block_size, " must be positive (KPOOL_TAIL's kpool)");
}

}  // namespace

extern const BackendDescriptor kKpoolTailBackend;
const BackendDescriptor kKpoolTailBackend{
    kName,
    kVllmRelease,
    kv_kind_bit(kKvMla),
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_kpool_tail,
    buffer_plan_of<plan>,
    create_builder_of<KpoolTailBuilder>,
};

}  // namespace attn::backends
