// FLEX_ATTENTION: the metadata of vLLM's FlexAttentionMetadataBuilder.build()
// (vllm/v1/attention/backends/flex_attention.py, with torch >= 2.9's small blocks). vLLM's
// BlockMask and mask/score functions are torch objects; libattn returns what they are built
// from: the inverse block table, the per-token request ids, the per-request offsets, and, on the
// direct-build path, the block mask's kv_num_blocks and kv_indices (BlockMask.from_kv_blocks).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "FLEX_ATTENTION";

// In the order of vLLM 0.33's FlexAttentionMetadata; the block mask's kv_num_blocks and
// kv_indices (libattn's) last. 0.33 has no cascade fields (FLEX never supported cascade).
#define FLEX_ATTENTION_FIELDS(X)                              \
  X(kCausal, "causal")                                        \
  X(kNumActualTokens, "num_actual_tokens")                    \
  X(kMaxQueryLen, "max_query_len")                            \
  X(kQueryStartLoc, "query_start_loc")                        \
  X(kQueryStartLocCpu, "query_start_loc_cpu")                 \
  X(kMaxSeqLen, "max_seq_len")                                \
  X(kSeqLens, "seq_lens")                                     \
  X(kBlockTable, "block_table")                               \
  X(kSlotMapping, "slot_mapping")                             \
  X(kTotalCacheTokens, "total_cache_tokens")                  \
  X(kBlockSize, "block_size")                                 \
  X(kMaxPossibleSequenceLength, "max_possible_sequence_length") \
  X(kNumReqs, "num_reqs")                                     \
  X(kPhysicalToLogical, "physical_to_logical")                \
  X(kDecodeOffset, "decode_offset")                           \
  X(kNumBlocksPerSeq, "num_blocks_per_seq")                   \
  X(kPersistentKvIndices, "persistent_kv_indices")            \
  X(kPersistentKvNumBlocks, "persistent_kv_num_blocks")       \
  X(kPersistentDocIds, "persistent_doc_ids")                  \
  X(kNumInputTokens, "num_input_tokens")                      \
  X(kNumBlocks, "num_blocks")                                 \
  X(kUsesPagedKv, "uses_paged_kv")                            \
  X(kDocIds, "doc_ids")                                       \
  X(kDirectBuild, "direct_build")                             \
  X(kQBlockSize, "q_block_size")                              \
  X(kKvBlockSize, "kv_block_size")                            \
  X(kSlidingWindow, "sliding_window")                         \
  X(kMmPrefixRange, "mm_prefix_range")                       \
  X(kBlockSparsityHint, "block_sparsity_hint")               \
  X(kRswaPrefixLens, "rswa_prefix_lens")                     \
  X(kRswaWindow, "rswa_window")                              \
  X(kKvNumBlocks, "kv_num_blocks")                            \
  X(kKvIndices, "kv_indices")
ATTN_NAMED_LIST(Field, FLEX_ATTENTION_FIELDS);

#define FLEX_ATTENTION_BUFFERS(X)                          \
  X(kBufKvNumBlocks, "persistent_kv_num_blocks")           \
  X(kBufOffset, "persistent_offset_tensor")                \
  X(kBufDocIds, "persistent_doc_ids")                      \
  X(kBufPhysicalToLogical, "persistent_physical_to_logical") \
  X(kBufKvIndices, "persistent_kv_indices")                \
  X(kBufNumBlocksPerSeq, "num_blocks_per_seq")             \
  X(kBufQueryStartLoc, "persistent_query_start_loc")       \
  X(kBufSeqLens, "persistent_seq_lens")                    \
  X(kBufScratch, "block-mask scratch")
ATTN_NAMED_LIST(Buffer, FLEX_ATTENTION_BUFFERS);

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

struct Sizes {
  int64_t q_block, kv_block, groups, kv_indices_per_group, hash_capacity;
  bool direct_build;
};

Sizes sizes_for(const KvCacheSpec& spec, const BuilderConfig& c) {
  Sizes s{};
  // vLLM's _get_block_sizes: small blocks (16, the cache's) with a paged KV cache; encoder-only
  // attention has none and keeps 128 x 128.
  const bool small = spec.kind != kKvEncoderOnly;
  s.q_block = c.flex_attn_q_block_size > 0 ? c.flex_attn_q_block_size : (small ? 16 : 128);
  s.kv_block = c.flex_attn_kv_block_size > 0 ? c.flex_attn_kv_block_size
                                              : (small ? spec.block_size : 128);
  s.direct_build = s.kv_block == spec.block_size;
  s.groups = (c.max_num_batched_tokens + s.q_block - 1) / s.q_block;
  s.kv_indices_per_group = s.q_block * c.max_blocks_per_req(spec.block_size);
  s.hash_capacity = 1;
  while (s.hash_capacity < 2 * s.kv_indices_per_group) s.hash_capacity <<= 1;
  return s;
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const Sizes s = sizes_for(spec, c);
  const int64_t reqs = c.max_num_seqs;
  // The direct build's dedupe scratch: a hash table per group on CUDA, one stamp per block id on
  // the host.
  const size_t scratch = c.device.is_cuda()
                             ? buffer_bytes("block-mask scratch", {s.groups, s.hash_capacity, 8})
                             : buffer_bytes("block-mask scratch", {c.num_gpu_blocks, 4});
  BufferPlan p(kBufferNames);
  p.set(kBufKvNumBlocks, buffer_bytes("persistent_kv_num_blocks", {s.groups, 4}));
  p.set(kBufOffset, buffer_bytes("persistent_offset_tensor", {reqs, 4}));
  p.set(kBufDocIds, buffer_bytes("persistent_doc_ids", {c.max_num_batched_tokens, 4}));
  p.set(kBufPhysicalToLogical,
        buffer_bytes("persistent_physical_to_logical", {reqs, c.num_gpu_blocks, 8}));
  p.set(kBufKvIndices,
        buffer_bytes("persistent_kv_indices", {s.groups, s.kv_indices_per_group, 4}));
  p.set(kBufNumBlocksPerSeq, buffer_bytes("num_blocks_per_seq", {reqs, 4}));
  p.set(kBufQueryStartLoc, buffer_bytes("persistent_query_start_loc", {reqs + 1, 4}));
  p.set(kBufSeqLens, buffer_bytes("persistent_seq_lens", {reqs, 4}));
  p.set(kBufScratch, s.direct_build ? scratch : 0);
  return p.requests();
}

void check_supported(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  if (!accepts_spec_kind(d.accepted_spec_kinds, spec.kind))
    fail(Status::kUnsupported, "FLEX_ATTENTION builds decoder and encoder-only attention, not ",
         kv_cache_kind_name(spec.kind), " KV cache specs (kv_cache_spec->kind=", spec.kind, ")");
  if (spec.block_size % 16 != 0)
    fail(Status::kUnsupported, "FLEX_ATTENTION needs kv_cache_spec->block_size to be a multiple of "
                               "16, got ", spec.block_size);
  if (c.cache_dtype == kKvDtypeFp8E4m3 || c.cache_dtype == kKvDtypeFp8E5m2 ||
      c.cache_dtype == kKvDtypeUint8)
    fail(Status::kUnsupported, "FLEX_ATTENTION does not support quantized KV caches "
                               "(config->cache_dtype=", kv_dtype_name(c.cache_dtype), ")");
  if (c.num_gpu_blocks <= 0)
    invalid("config->num_gpu_blocks=", c.num_gpu_blocks,
            "; FLEX_ATTENTION needs the number of KV cache blocks (vLLM's cache_config.num_gpu_blocks)");
  if (c.rswa_window > 0)
    fail(Status::kUnsupported, "FLEX_ATTENTION with config->rswa_window=", c.rswa_window,
         " is not supported: vLLM 0.33's R-SWA block mask (q_block_size 1, its own persistent "
         "kv indices) is not implemented in libattn");
  const Sizes s = sizes_for(spec, c);
  if (!power_of_two(s.q_block))
    invalid("config->flex_attn_q_block_size=", s.q_block, " is not a power of two");
  if (!power_of_two(s.kv_block))
    invalid("config->flex_attn_kv_block_size=", s.kv_block, " is not a power of two");
}

class FlexAttentionBuilder final : public Builder {
 public:
  FlexAttentionBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                       const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        sizes_(sizes_for(spec, config)),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
  }

 protected:
  void do_build(int64_t cpl, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    if (cpl > 0)
      fail(Status::kUnsupported, "FLEX_ATTENTION does not support cascade attention "
                                 "(common_prefix_len=", cpl, ")");
    if (c.causal_per_request)
      invalid("common->causal_per_request is given; FLEX_ATTENTION takes a scalar causal only "
              "(vLLM 0.33's FlexAttention evaluates `not causal`, which a per-request tensor "
              "cannot answer)");
    const BuilderConfig& cfg = config();
    const Device d = cfg.device;
    const int64_t n = c.num_reqs;
    const int32_t bs = spec().block_size;
    const int64_t gpu_blocks = cfg.num_gpu_blocks;
    const Tensor& bt = *c.block_table_tensor;
    if (bt.host_accessible() && c.seq_lens_host != nullptr) {
      // vLLM indexes its inverse table with these ids: they must name KV cache blocks.
      for (int64_t r = 0; r < n; ++r) {
        const int64_t blocks =
            std::min<int64_t>((static_cast<int64_t>(c.seq_lens_host[r]) + bs - 1) / bs, bt.shape[1]);
        for (int64_t j = 0; j < blocks; ++j) {
          const int32_t v = bt.as<const int32_t>()[r * bt.strides[0] + j];
          if (v < 0 || v >= gpu_blocks)
            invalid("common->block_table_tensor[", r, "][", j, "]=", v,
                    " is not a block of the KV cache (config->num_gpu_blocks=", gpu_blocks, ")");
        }
      }
    }
    const int64_t tokens = c.qsl_host[n];  // doc_ids covers the scheduled tokens
    const bool uses_paged_kv = spec().kind != kKvEncoderOnly;
    const bool direct = sizes_.direct_build && uses_paged_kv;

    auto* blocks_per_seq = buffers_.as<int32_t>(kBufNumBlocksPerSeq);
    auto* offset = buffers_.as<int32_t>(kBufOffset);
    auto* doc = buffers_.as<int32_t>(kBufDocIds);
    auto* p2l = buffers_.as<int64_t>(kBufPhysicalToLogical);
    // The host path computes from the validated host copies (the mirrors may stand for them).
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    const int32_t* seq = exec.on_cuda || c.seq_lens_host == nullptr ? c.seq_lens->as<const int32_t>()
                                                                     : c.seq_lens_host;
    // One launch on CUDA (then one more for the direct block mask below): graph-safe, nothing
    // but kernels on the caller's stream (docs/cuda_graphs.md).
    auto* qsl_copy = buffers_.as<int32_t>(kBufQueryStartLoc);
    auto* seq_copy = buffers_.as<int32_t>(kBufSeqLens);
    ops::flex_request_arrays(exec, qsl, seq, n, tokens, bs, bt.as<const int32_t>(), bt.strides[0],
                             bt.shape[1], gpu_blocks, blocks_per_seq, offset, doc, p2l, gpu_blocks,
                             qsl_copy, seq_copy);
    const int64_t reqs = cfg.max_num_seqs;

    Metadata& m = metadata();
    m.reset();
    m.set_bool(kCausal, c.causal);
    // vLLM 0.33 passes the dict on (it shapes the mask_mod, not the block mask);
    // block_sparsity_hint is a per-layer callable set at forward time, None after build().
    if (c.mm_req_doc_ranges) m.set_tensor(kMmPrefixRange, *c.mm_req_doc_ranges);
    // vLLM 0.33 hands out its full-capacity persistent copies of query_start_loc and seq_lens
    // (and of the inverse table and the offsets): shapes that do not change with the batch.
    m.set_int(kNumActualTokens, c.num_actual_tokens);
    m.set_int(kMaxQueryLen, c.max_query_len);
    m.set_tensor(kQueryStartLoc, make_vector(qsl_copy, d, kInt32, reqs + 1), true);
    m.set_tensor(kQueryStartLocCpu, c.query_start_loc_cpu);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    m.set_tensor(kSeqLens, make_vector(seq_copy, d, kInt32, reqs), true);
    m.set_tensor(kBlockTable, *c.block_table_tensor);
    m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_int(kTotalCacheTokens, gpu_blocks * bs);
    m.set_int(kBlockSize, bs);
    m.set_int(kMaxPossibleSequenceLength, cfg.max_model_len);
    m.set_int(kNumReqs, n);
    m.set_tensor(kPhysicalToLogical, make_matrix(p2l, d, kInt64, reqs, gpu_blocks, gpu_blocks),
                 true);
    m.set_tensor(kDecodeOffset, make_vector(offset, d, kInt32, reqs), true);
    m.set_tensor(kNumBlocksPerSeq, make_vector(blocks_per_seq, d, kInt32, n), true);
    m.set_tensor(kPersistentKvIndices,
                 make_matrix(buffers_.get(kBufKvIndices), d, kInt32, sizes_.groups,
                             sizes_.kv_indices_per_group, sizes_.kv_indices_per_group), true);
    m.set_tensor(kPersistentKvNumBlocks,
                 make_vector(buffers_.get(kBufKvNumBlocks), d, kInt32, sizes_.groups), true);
    m.set_tensor(kPersistentDocIds, make_vector(doc, d, kInt32, cfg.max_num_batched_tokens), true);
    m.set_int(kNumInputTokens, 0);
    m.set_int(kNumBlocks, gpu_blocks);
    m.set_bool(kUsesPagedKv, uses_paged_kv);
    m.set_tensor(kDocIds, make_vector(doc, d, kInt32, tokens), true);
    m.set_bool(kDirectBuild, direct);
    m.set_int(kQBlockSize, sizes_.q_block);
    m.set_int(kKvBlockSize, sizes_.kv_block);
    // vLLM sets it (and prunes by it) only under full CUDA graphs.
    const int32_t window = has_full_cudagraphs(cfg.cudagraph_mode) ? spec().sliding_window : 0;
    if (window > 0) m.set_int(kSlidingWindow, window);
    if (!direct) return;  // the runtime builds its block mask (create_block_mask) itself

    // vLLM gathers block_table[doc_ids, :cdiv(max_seq_len, block)]: at most the table's width.
    const int64_t pages = std::min<int64_t>((c.max_seq_len + bs - 1) / bs, bt.shape[1]);
    const int64_t max_pages = cfg.max_blocks_per_req(bs);
    if (pages > max_pages)
      invalid("common->max_seq_len=", c.max_seq_len, " exceeds config->max_model_len=",
              cfg.max_model_len, " (FLEX_ATTENTION sizes its block mask by it)");
    const int64_t groups = (tokens + sizes_.q_block - 1) / sizes_.q_block;
    const int64_t per_group = sizes_.q_block * pages;
    int64_t capacity = 1;  // the CUDA dedupe tables, sized for this build's groups
    while (capacity < 2 * per_group) capacity <<= 1;
    auto* kv_indices = buffers_.as<int32_t>(kBufKvIndices);
    auto* kv_num_blocks = buffers_.as<int32_t>(kBufKvNumBlocks);
    ops::FlexBlockMaskIn in;
    in.doc_ids = doc;
    in.num_tokens = tokens;
    in.query_start_loc = qsl;
    in.decode_offset = offset;
    in.num_blocks_per_seq = blocks_per_seq;
    in.block_table = bt.as<const int32_t>();
    in.block_table_stride = bt.strides[0];
    in.pages = pages;
    in.block_size = bs;
    in.q_block = static_cast<int32_t>(sizes_.q_block);
    in.causal = c.causal ? 1 : 0;
    in.sliding_window = window;
    in.num_gpu_blocks = gpu_blocks;
    ops::flex_kv_indices(exec, in, groups, kv_indices, sizes_.kv_indices_per_group, kv_num_blocks,
                         buffers_.get(kBufScratch), capacity);
    m.set_tensor(kKvNumBlocks, make_vector(kv_num_blocks, d, kInt32, groups), true);
    m.set_tensor(kKvIndices,
                 make_matrix(kv_indices, d, kInt32, groups, per_group, sizes_.kv_indices_per_group),
                 true);
  }

  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    // vLLM 0.33 captures with max_seq_len = max(seq_lens_cpu_upper_bound), which exceeds the
    // exact lengths' maximum on async spec-decode rows; a caller without the bound gets the
    // host maximum of seq_lens where there is one (vLLM 0.33 asserts the bound exists).
    CommonMetadata copy = c;
    if (c.seq_lens_cpu_upper_bound && c.num_reqs > 0) {
      const int32_t* bound = c.seq_lens_cpu_upper_bound->as<const int32_t>();
      copy.max_seq_len = *std::max_element(bound, bound + c.num_reqs);
    } else if (c.host_max_seq_len >= 0) {
      copy.max_seq_len = c.host_max_seq_len;
    }
    do_build(0, copy, false, exec);
  }

 private:
  Sizes sizes_;
  PersistentBuffers buffers_;
};

}  // namespace

extern const BackendDescriptor kFlexAttentionBackend;
const BackendDescriptor kFlexAttentionBackend{
    kName,
    "0.13-0.33 (partial)",
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow) | kv_kind_bit(kKvEncoderOnly),
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_supported,
    buffer_plan_of<plan>,
    create_builder_of<FlexAttentionBuilder>,
};

}  // namespace attn::backends
