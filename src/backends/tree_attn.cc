// TREE_ATTN: the metadata of vLLM's TreeAttentionMetadataBuilder (vllm/v1/attention/backends/
// tree_attn.py, in vLLM up to v0.20), field for field, with its prefill_metadata and
// decode_metadata views flattened as prefill_* and decode_* fields.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "backends/tree_choices.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "ops/batch_ops.h"
#include "ops/device_runtime.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "TREE_ATTN";

#define TREE_ATTN_FIELDS(X)                          \
  ATTN_PASSTHROUGH_FIELDS(X, k, "")                  \
  X(kNumPrefillTokens, "num_prefill_tokens")         \
  X(kNumDecodeTokens, "num_decode_tokens")           \
  X(kNumPrefills, "num_prefills")                    \
  X(kNumDecodes, "num_decodes")                      \
  X(kTreeAttnBias, "tree_attn_bias")                 \
  ATTN_PASSTHROUGH_FIELDS(X, kPrefill, "prefill_")   \
  ATTN_PASSTHROUGH_FIELDS(X, kDecode, "decode_")
ATTN_NAMED_LIST(Field, TREE_ATTN_FIELDS);
/// The prefill_metadata and decode_metadata views: passthrough blocks (set_passthrough's order).
constexpr size_t kPrefillBase = kPrefillNumActualTokens;
constexpr size_t kDecodeBase = kDecodeNumActualTokens;
static_assert(kPrefillSlotMapping - kPrefillBase == kPtSlotMapping &&
              kDecodeSlotMapping - kDecodeBase == kPtSlotMapping);

#define TREE_ATTN_BUFFERS(X)                          \
  X(kBufBias, "tree_attn_bias")                       \
  X(kBufDraftBias, "drafting tree_attn_bias")         \
  X(kBufPrefillQsl, "prefill query_start_loc")
ATTN_NAMED_LIST(Buffer, TREE_ATTN_BUFFERS);

TreeChoices choices_of(const BuilderConfig& c) {
  return parse_tree_choices(c.speculative_token_tree.value_or("[(0,)]"));
}

std::vector<BufferRequest> plan(const BuilderConfig& c, size_t l) {
  BufferPlan p(kBufferNames);
  p.set(kBufBias, l * l * sizeof(float));
  p.set(kBufDraftBias, (l - 1) * (l - 1) * sizeof(float));
  p.set(kBufPrefillQsl, (static_cast<size_t>(c.max_num_seqs) + 1) * sizeof(int32_t));
  return p.requests();
}

class TreeAttnBuilder final : public Builder {
 public:
  TreeAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                  const BuilderConfig& config, const TreeChoices& choices)
      : Builder(std::move(backend), spec, config),
        size_(static_cast<int64_t>(choices.size()) + 1),
        buffers_(kName, config.device, plan(config, static_cast<size_t>(size_)),
                 config.allocator, config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    const std::vector<float> bias = tree_attention_bias(choices);
    const size_t bytes = bias.size() * sizeof(float);
    if (config.device.is_cuda())
      ops::cuda_copy_to_device(config.device.id, buffers_.get(kBufBias), bias.data(), bytes);
    else
      std::copy(bias.begin(), bias.end(), buffers_.as<float>(kBufBias));
    bias_ = square(buffers_.get(kBufBias), size_, size_);
    current_bias_ = bias_;
    // Set directly from the bias (no speculative-token or DCP adjustment), as vLLM does.
    set_reorder_batch_threshold(static_cast<int32_t>(size_));
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int32_t threshold = static_cast<int32_t>(current_bias_.shape[0]);
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, threshold, false);
    Metadata& m = metadata();
    m.reset();
    set_passthrough(m, 0, c);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, s.num_prefills);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_tensor(kTreeAttnBias, current_bias_, true);
    const int64_t d = s.num_decodes, dt = s.num_decode_tokens, n = c.num_reqs;
    if (s.num_prefills > 0) {
      auto* qsl = buffers_.as<int32_t>(kBufPrefillQsl);
      ops::slice_query_start_locs(exec, c.query_start_loc->as<const int32_t>(), d, n, 0, 0, qsl);
      write_part(m, kPrefillBase, c, d, n, dt, c.slot_mapping->shape[0], s.num_prefill_tokens,
                 make_vector(qsl, config().device, kInt32, n - d + 1), true);
    }
    if (dt > 0)
      write_part(m, kDecodeBase, c, 0, d, 0, dt, dt, rows_between(*c.query_start_loc, 0, d + 1), false);
  }

  void do_drafting(const CommonMetadata& c, int32_t draft_index, const ops::Exec& exec) override {
    const Tensor saved = current_bias_;
    if (draft_index == 0) {
      // The root level drafts with plain causal prefill attention: an empty bias, threshold 0.
      current_bias_ = square(buffers_.get(kBufDraftBias), 0, 0);
      current_bias_.ndim = 1;
    } else {
      // bias[1 : 1 + max_query_len, 1 : 1 + max_query_len] as Python slices it (clipped).
      const int64_t rows = std::clamp<int64_t>(c.max_query_len, 0, size_ - 1);
      ops::copy_submatrix_f32(exec, bias_.as<const float>(), size_, 1, 1, rows, rows,
                              buffers_.as<float>(kBufDraftBias));
      current_bias_ = square(buffers_.get(kBufDraftBias), rows, rows);
    }
    try {
      do_build(0, c, true, exec);
    } catch (...) {
      current_bias_ = saved;
      throw;
    }
    current_bias_ = saved;
  }

 private:
  /// One of vLLM's cached prefill/decode views: requests [r0, r1), tokens from t0.
  void write_part(Metadata& m, size_t base, const CommonMetadata& c, int64_t r0, int64_t r1,
                  int64_t t0, int64_t t1, int64_t tokens, const Tensor& qsl, bool qsl_in_buffer) {
    int64_t max_q = 0;
    for (int64_t i = r0; i < r1; ++i) max_q = std::max<int64_t>(max_q, c.query_len(i));
    // vLLM syncs for max(seq_lens); libattn reads the host copy, or keeps the batch's bound.
    int64_t max_seq = c.max_seq_len;
    if (c.seq_lens_host != nullptr) {
      max_seq = 0;
      for (int64_t i = r0; i < r1; ++i) max_seq = std::max<int64_t>(max_seq, c.seq_lens_host[i]);
    }
    m.set_int(base + kPtNumActualTokens, tokens);
    m.set_int(base + kPtMaxQueryLen, max_q);
    m.set_tensor(base + kPtQueryStartLoc, qsl, qsl_in_buffer);
    m.set_int(base + kPtMaxSeqLen, max_seq);
    m.set_tensor(base + kPtSeqLens, rows_between(*c.seq_lens, r0, r1));
    m.set_tensor(base + kPtBlockTable, rows_between(*c.block_table_tensor, r0, r1));
    m.set_tensor(base + kPtSlotMapping, rows_between(*c.slot_mapping, t0, t1));
  }

  Tensor square(void* data, int64_t rows, int64_t cols) const {
    Tensor t = make_matrix(data, config().device, kFloat32, rows, cols, cols);
    return t;
  }

  int64_t size_;
  PersistentBuffers buffers_;
  Tensor bias_;          ///< The full L x L bias.
  Tensor current_bias_;  ///< What builds use (drafting swaps in a sub-bias).
};

void check_supported(const BackendDescriptor& d, const KvCacheSpec& spec,
                     const BuilderConfig& config) {
  if (config.cache_dtype != kKvDtypeAuto && config.cache_dtype != kKvDtypeFloat16 &&
      config.cache_dtype != kKvDtypeBfloat16)
    fail(Status::kUnsupported, "TREE_ATTN supports KV cache dtypes auto, float16 and bfloat16, "
                               "got config->cache_dtype=", kv_dtype_name(config.cache_dtype));
  if (!accepts_spec_kind(d.accepted_spec_kinds, spec.kind))
    fail(Status::kUnsupported, "TREE_ATTN builds decoder self-attention only, not ",
         kv_cache_kind_name(spec.kind), " KV cache specs (kv_cache_spec->kind=", spec.kind, ")");
  if (spec.block_size % 16 != 0)
    fail(Status::kUnsupported, "TREE_ATTN needs kv_cache_spec->block_size to be a multiple of "
                               "16, got ", spec.block_size);
  static const int32_t kHeads[] = {32, 64, 96, 128, 160, 192, 224, 256};
  if (std::find(std::begin(kHeads), std::end(kHeads), spec.head_size) == std::end(kHeads))
    fail(Status::kUnsupported, "TREE_ATTN supports head sizes 32, 64, 96, 128, 160, 192, 224 "
                               "and 256, got kv_cache_spec->head_size=", spec.head_size);
}

}  // namespace

extern const BackendDescriptor kTreeAttnBackend;
const BackendDescriptor kTreeAttnBackend{
    kName,
    "0.13-0.20.2 (removed from vLLM after 0.20.2; not in 0.33)",
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    0,
    fixed_cudagraph_support<kCgNever>,
    check_supported,
    [](const BackendDescriptor&, const KvCacheSpec&, const BuilderConfig& config) {
      return plan(config, choices_of(config).size() + 1);
    },
    [](const BackendDescriptor&, std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
       const BuilderConfig& config) -> std::unique_ptr<Builder> {
      return std::make_unique<TreeAttnBuilder>(std::move(backend), spec, config, choices_of(config));
    },
};

}  // namespace attn::backends
