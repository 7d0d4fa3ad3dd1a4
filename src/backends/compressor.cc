// DeepSeek V4 / V4.1's KV compressor state caches: vLLM 0.33's CompressorMetadataBuilder of
// models/deepseek_v4/compressor.py (DEEPSEEK_V4_COMPRESSOR) and of
// models/deepseek_v41/compressor.py (DEEPSEEK_V41_COMPRESSOR). vLLM names both backends
// "CompressorBackend"; libattn's registry needs unique names, so each takes its model's.
// Level ALWAYS (a class attribute), reorder_batch_threshold None, no update_block_table, no
// draft decode update (the base class's).
//
// DEEPSEEK_V4_COMPRESSOR (SlidingWindowMLASpec or MLAAttentionSpec; block size 4 for the C4
// and 8 for the C128 state): block_table is the batch's table clamped at 0 IN PLACE (vLLM's
// block_table_tensor.clamp_(min=0): the caller's tensor, returned as itself), slot_mapping the
// batch's, block_size the spec's, token_to_req_indices CommonAttentionMetadata's, and
// num_decode_tokens (split_decodes_and_prefills at threshold 1) only on ROCm
// (config->platform_rocm: _prefer_two_stage_compressor), else None. c128_boundary, only for
// block size 8 without async speculative decoding (config->async_scheduling with speculative
// tokens), else None: whether a request's query crosses a 128-token boundary, start % 128 +
// query_len >= 128 with start = seq_lens_cpu_upper_bound - query_len (None without the bound).
//
// DEEPSEEK_V41_COMPRESSOR (CircularBufferSpec: ATTN_KV_CIRCULAR_BUFFER, ABI 1.7, one
// block-table column per request; or, as libattn took it before 1.7, a FULL_ATTENTION spec,
// whose table is checked as wide as the seq_lens need; block_size is the ring capacity either
// way): slot_mapping the ring slot of every token
// (_ring_slot_mapping_kernel: the request's block in column 0 of the block table times the
// capacity plus position mod capacity, -1 for the null block and past num_actual_tokens; needs
// common->positions), query_start_loc and token_to_req_indices. Prefill context parallelism
// (its all-gathered chunk links) is refused at create.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "backends/position_mapped_checks.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

enum Variant : int32_t { kV4 = 0, kV41 = 1 };
constexpr const char* kNames[] = {"DEEPSEEK_V4_COMPRESSOR", "DEEPSEEK_V41_COMPRESSOR"};
constexpr int32_t kC128BlockSize = 8;  // the C128 state's block size (c128_boundary's gate)

#define V4_FIELDS(X)                               \
  X(kBlockTable, "block_table")                    \
  X(kSlotMapping, "slot_mapping")                  \
  X(kBlockSize, "block_size")                      \
  X(kTokenToReqIndices, "token_to_req_indices")    \
  X(kNumDecodeTokens, "num_decode_tokens")         \
  X(kC128Boundary, "c128_boundary")
ATTN_NAMED_LIST(V4Field, V4_FIELDS);

#define V41_FIELDS(X)                                 \
  X(kRingSlotMapping, "slot_mapping")                 \
  X(kQueryStartLoc, "query_start_loc")                \
  X(kRingTokenToReqIndices, "token_to_req_indices")   \
  X(kGatherTokens, "gather_tokens")                   \
  X(kRingWriteSlots, "ring_write_slots")              \
  X(kPrevRowIndices, "prev_row_indices")
ATTN_NAMED_LIST(V41Field, V41_FIELDS);

#define COMPRESSOR_BUFFERS(X)                       \
  X(kBufTokenToReq, "token_to_req_indices")         \
  X(kBufSlotMapping, "slot_mapping_buffer")
ATTN_NAMED_LIST(Buffer, COMPRESSOR_BUFFERS);

std::vector<BufferRequest> plan(const BackendDescriptor& d, const KvCacheSpec&,
                                const BuilderConfig& c) {
  const int64_t tokens = c.max_num_batched_tokens;
  BufferPlan p(kBufferNames);
  p.set(kBufTokenToReq, buffer_bytes("token_to_req_indices", {tokens, int64_t{sizeof(int32_t)}}));
  p.set(kBufSlotMapping, buffer_bytes("slot_mapping_buffer",
                                      {d.variant == kV41 ? tokens : 0, int64_t{sizeof(int64_t)}}));
  return p.requests();
}

/// vLLM's c128_boundary: whether some request's query crosses a multiple of 128 (None, as
/// nullopt, without seq_lens_cpu_upper_bound).
std::optional<bool> c128_boundary(const CommonMetadata& c) {
  if (!c.seq_lens_cpu_upper_bound) return std::nullopt;
  const int32_t* bound = c.seq_lens_cpu_upper_bound->as<const int32_t>();
  for (int64_t i = 0; i < c.num_reqs; ++i) {
    const int64_t q = c.qsl_host[i + 1] - c.qsl_host[i];
    const int64_t start = bound[i] - q;
    if (((start % 128) + 128) % 128 + q >= 128) return true;  // Python's modulo
  }
  return false;
}

class CompressorBuilder final : public Builder {
 public:
  CompressorBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config, Variant variant, std::vector<BufferRequest> plan)
      : Builder(std::move(backend), spec, config),
        variant_(variant),
        buffers_(kNames[variant], config.device, std::move(plan), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(variant == kV4 ? name_vector(kV4FieldNames) : name_vector(kV41FieldNames));
    set_reorder_batch_threshold(std::nullopt);  // the base class's None
    ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufTokenToReq),
                  config.max_num_batched_tokens, 0);  // torch.zeros
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    const Tensor& slots = *c.slot_mapping;
    check_batch(c);
    Metadata& m = metadata();
    m.reset();
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    // CommonAttentionMetadata.token_to_req_indices: mapped up to query_start_loc_cpu[-1]
    const int64_t mapped = c.qsl_host[n];
    int32_t* t2r = buffers_.as<int32_t>(kBufTokenToReq);
    ops::compute_token_to_req_indices(exec, qsl, n, mapped, std::max(mapped, T), t2r);
    const Tensor t2r_view = make_vector(t2r, config().device, kInt32, T);
    Tensor& bt = const_cast<Tensor&>(*c.block_table_tensor);
    if (variant_ == kV4) {
      ops::compressor_clamp_block_table(exec, bt.as<int32_t>(), bt.shape[0], bt.shape[1],
                                        bt.strides[0]);
      m.set_tensor(kBlockTable, bt);
      m.set_tensor(kSlotMapping, slots);
      m.set_int(kBlockSize, spec().block_size);
      m.set_tensor(kTokenToReqIndices, t2r_view, true);
      if (config().platform_rocm)
        m.set_int(kNumDecodeTokens, ops::split_decodes_and_prefills(
                                        c.qsl_host, n, T, c.max_query_len, 1, false)
                                        .num_decode_tokens);
      else
        m.set_none(kNumDecodeTokens);
      const bool async_spec = config().async_scheduling && config().num_speculative_tokens > 0;
      const std::optional<bool> boundary =
          spec().block_size == kC128BlockSize && !async_spec ? c128_boundary(c) : std::nullopt;
      if (boundary)
        m.set_bool(kC128Boundary, *boundary);
      else
        m.set_none(kC128Boundary);
      return;
    }
    const int64_t tokens = slots.numel();  // slot_mapping.numel() // pcp_size, PCP refused
    int64_t* ring = buffers_.as<int64_t>(kBufSlotMapping);
    ops::compressor_ring_slot_mapping(exec, t2r, bt.as<const int32_t>(), bt.strides[0],
                                      c.positions->as<const int64_t>(), T, tokens,
                                      spec().block_size, ring);
    m.set_tensor(kRingSlotMapping, make_vector(ring, config().device, kInt64, tokens), true);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kRingTokenToReqIndices, t2r_view, true);
    for (const size_t f : {kGatherTokens, kRingWriteSlots, kPrevRowIndices}) m.set_none(f);
  }

 private:
  /// What build() refuses (vLLM asserts or would read out of bounds), before the metadata
  /// changes.
  void check_batch(const CommonMetadata& c) const {
    const char* name = kNames[variant_];
    if (variant_ != kV41) return;
    check_position_mapped_batch(c, config(), name, "slot_mapping_buffer");
    if (c.num_actual_tokens > 0 &&
        (c.num_reqs == 0 || c.block_table_tensor->shape[0] < 1 ||
         c.block_table_tensor->shape[1] < 1))
      invalid("common->block_table_tensor is (", c.block_table_tensor->shape[0], ", ",
              c.block_table_tensor->shape[1], ") with num_reqs=", c.num_reqs,
              " and num_actual_tokens=", c.num_actual_tokens, "; ", name,
              " reads each token's request's ring block from column 0");
  }

  Variant variant_;
  PersistentBuffers buffers_;
};

void check_compressor(const BackendDescriptor& d, const KvCacheSpec& spec,
                      const BuilderConfig& c) {
  check_spec_kind(d, spec);
  if (spec.block_size <= 0)
    invalid("kv_cache_spec->block_size=", spec.block_size, " must be positive (", d.name,
            d.variant == kV41 ? "'s ring capacity)" : "'s state block size)");
  if (d.variant == kV41 && c.prefill_context_parallel_size > 1)
    fail(Status::kUnsupported, d.name, " does not build the prefill-context-parallel links "
         "(vLLM 0.33's _link_pcp_chunks all-gathers every rank's rows): "
         "config->prefill_context_parallel_size=", c.prefill_context_parallel_size);
}

std::vector<BufferRequest> compressor_plan(const BackendDescriptor& d, const KvCacheSpec& spec,
                                           const BuilderConfig& c) {
  return plan(d, spec, c);
}

std::unique_ptr<Builder> create_compressor(const BackendDescriptor& d,
                                           std::shared_ptr<const Backend> backend,
                                           const KvCacheSpec& spec, const BuilderConfig& c) {
  return std::make_unique<CompressorBuilder>(std::move(backend), spec, c,
                                             static_cast<Variant>(d.variant), plan(d, spec, c));
}

}  // namespace

extern const BackendDescriptor kDeepseekV4CompressorBackend;
const BackendDescriptor kDeepseekV4CompressorBackend{
    kNames[kV4],
    kVllmRelease,
    kv_kind_bit(kKvSlidingWindow) | kv_kind_bit(kKvMla),
    kV4,
    fixed_cudagraph_support<kCgAlways>,
    check_compressor,
    compressor_plan,
    create_compressor,
};

extern const BackendDescriptor kDeepseekV41CompressorBackend;
const BackendDescriptor kDeepseekV41CompressorBackend{
    kNames[kV41],
    kVllmRelease,
    // its CircularBufferSpec; FULL_ATTENTION as libattn took it before ABI 1.7
    kv_kind_bit(kKvCircularBuffer) | kv_kind_bit(kKvFullAttention),
    kV41,
    fixed_cudagraph_support<kCgAlways>,
    check_compressor,
    compressor_plan,
    create_compressor,
};

}  // namespace attn::backends
