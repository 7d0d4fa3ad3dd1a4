// WhisperCausalAttentionWithBlockPooling (vLLM 0.33's
// create_whisper_attention_backend_with_block_pooling, model_executor/models/whisper_causal.py):
// the streaming Whisper encoder's causal layers cache one KV entry per `block_pool_size` tokens'
// worth of blocks. The wrapped builder is created for blocks of block_size * block_pool_size
// tokens (the spec the wrapper hands it) and builds the batch with query_start_loc, seq_lens
// (and their host mirrors), num_actual_tokens, max_query_len, max_seq_len and common_prefix_len
// multiplied by block_pool_size and every slot expanded into block_pool_size consecutive slots.
// No fields of its own; level UNIFORM_SINGLE_TOKEN_DECODE, no update_block_table.
#include <utility>

#include "backends/field_list.h"
#include "backends/wrapped_builder.h"
#include "backends/wrapper_kinds.h"
#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

#define BLOCK_POOL_BUFFERS(X)                     \
  X(kQsl, "pooled query_start_loc")               \
  X(kSeqLens, "pooled seq_lens")                  \
  X(kSlots, "pooled slot_mapping")                \
  X(kQslCpu, "pooled query_start_loc_cpu")        \
  X(kSeqLensCpu, "pooled seq_lens_cpu")           \
  X(kSeqLensBound, "pooled seq_lens_cpu_upper_bound")
ATTN_NAMED_LIST(Buffer, BLOCK_POOL_BUFFERS);

class BlockPoolingBuilder final : public WrappedBuilder {
 public:
  BlockPoolingBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                      const BuilderConfig& config, std::unique_ptr<Builder> inner)
      : WrappedBuilder(std::move(backend), spec, config, std::move(inner),
                       "WhisperCausalAttentionWithBlockPooling_", {},
                       block_pooling_buffers(config)) {
    set_cudagraph_support(kCgUniformSingleTokenDecode);
  }

  /// vLLM: supports_update_block_table = False (the fast path would bypass the pooling).
  bool supports_update_block_table() const override { return false; }

 protected:
  CommonMetadata transform(const CommonMetadata& c, const ops::Exec& exec) override {
    const int32_t p = config().block_pool_size;
    const int64_t m = c.slot_mapping->shape[0];
    if (m > config().max_num_batched_tokens)
      invalid("common->slot_mapping has ", m, " entries: pooled (x block_pool_size=", p, "), ",
              m * p, " exceed the pooled slot buffer's config->max_num_batched_tokens * "
              "block_pool_size = ", static_cast<int64_t>(config().max_num_batched_tokens) * p);
    const Device d = config().device;
    const Device host{};
    const ops::Exec on_host{};
    const PersistentBuffers& b = buffers();
    CommonMetadata n = c;
    // `count` int32 values of `src` times block_pool_size into buffer `k`, viewed on `dev`
    auto scaled = [&](Buffer k, const ops::Exec& on, const int32_t* src, int64_t count,
                      const Device& dev) {
      auto* out = b.as<int32_t>(k);
      ops::block_pool_scale(on, src, count, p, out);
      return make_vector(out, dev, kInt32, count);
    };
    const int64_t rows = c.num_reqs + 1;
    n.query_start_loc = scaled(kQsl, exec, c.query_start_loc->as<const int32_t>(), rows, d);
    n.query_start_loc_cpu = scaled(kQslCpu, on_host, c.qsl_host, rows, host);
    n.seq_lens = scaled(kSeqLens, exec, c.seq_lens->as<const int32_t>(), c.num_reqs, d);
    if (c.seq_lens_cpu)  // libattn's exact host mirror follows the device tensor
      n.seq_lens_cpu = scaled(kSeqLensCpu, on_host, c.seq_lens_cpu->as<const int32_t>(),
                              c.num_reqs, host);
    if (c.seq_lens_cpu_upper_bound)
      n.seq_lens_cpu_upper_bound =
          scaled(kSeqLensBound, on_host, c.seq_lens_cpu_upper_bound->as<const int32_t>(),
                 c.num_reqs, host);
    auto* slots = b.as<int64_t>(kSlots);
    ops::block_pool_slot_mapping(exec, c.slot_mapping->as<const int64_t>(), m, p, slots);
    n.slot_mapping = make_vector(slots, d, kInt64, m * p);
    n.num_actual_tokens = c.num_actual_tokens * p;
    n.max_query_len = c.max_query_len * p;
    n.max_seq_len = c.max_seq_len * p;
    // vLLM keeps the per-token positions of the unpooled batch; the backends this wrapper
    // takes (wrapper_kinds.h) do not read them, and they no longer cover the pooled tokens.
    n.positions.reset();
    return n;
  }

  void do_build(int64_t common_prefix_len, const CommonMetadata& common, bool fast_build,
                const ops::Exec& exec) override {
    WrappedBuilder::do_build(common_prefix_len * config().block_pool_size, common, fast_build,
                             exec);
  }
};

}  // namespace

bool block_pooling_supports(const std::string& backend) {
  // Of vLLM 0.33's _SUPPORTED_BACKENDS, those compared with vLLM's wrapper (CPU_ATTN's slot
  // mapping reads the unpooled positions; ROCM_ATTN's and ROCM_AITER_FA's overridden
  // attributes are not modelled).
  return backend == "FLASH_ATTN" || backend == "TRITON_ATTN";
}

KvCacheSpec block_pooling_inner_spec(const KvCacheSpec& spec, const BuilderConfig& config) {
  KvCacheSpec inner = spec;
  inner.block_size = spec.block_size * config.block_pool_size;
  inner.tokens_per_state = 0;  // vLLM: tokens_per_state=1
  return inner;
}

std::vector<BufferRequest> block_pooling_buffers(const BuilderConfig& c) {
  const int64_t p = c.block_pool_size;
  BufferPlan plan(kBufferNames);
  plan.set(kQsl, buffer_bytes("pooled query_start_loc", {c.max_num_seqs + int64_t{1}, 4}));
  plan.set(kSeqLens, buffer_bytes("pooled seq_lens", {c.max_num_seqs, 4}));
  plan.set(kSlots, buffer_bytes("pooled slot_mapping", {c.max_num_batched_tokens, p, 8}));
  plan.set(kQslCpu, buffer_bytes("pooled query_start_loc_cpu", {c.max_num_seqs + int64_t{1}, 4}),
           true);
  plan.set(kSeqLensCpu, buffer_bytes("pooled seq_lens_cpu", {c.max_num_seqs, 4}), true);
  plan.set(kSeqLensBound, buffer_bytes("pooled seq_lens_cpu_upper_bound", {c.max_num_seqs, 4}),
           true);
  return plan.requests();
}

std::unique_ptr<Builder> make_block_pooling(std::shared_ptr<const Backend> backend,
                                            const KvCacheSpec& spec, const BuilderConfig& config,
                                            std::unique_ptr<Builder> inner) {
  return std::make_unique<BlockPoolingBuilder>(std::move(backend), spec, config, std::move(inner));
}

}  // namespace attn::backends
