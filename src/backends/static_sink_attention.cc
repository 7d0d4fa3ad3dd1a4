// StaticSink (vLLM 0.33's create_static_sink_attention_backend): a layer whose first sink_len
// KV tokens are static sink tokens kept in KV cache blocks 1..sink_len/block_size. The wrapped
// builder builds the batch with those blocks prepended to every request's block table (a
// persistent max_num_seqs x (sink blocks + cdiv(max_model_len, block_size)) table whose sink
// columns hold 1..n), seq_lens + sink_len (a padded request's 0 stays 0) and max_seq_len +
// sink_len. No fields of its own; level, reorder threshold and update_block_table are the
// wrapped builder's (vLLM's subclass inherits them: its update_block_table installs the given
// table as it is, without sink blocks).
#include <algorithm>
#include <utility>

#include "backends/field_list.h"
#include "backends/wrapped_builder.h"
#include "backends/wrapper_kinds.h"
#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

#define STATIC_SINK_BUFFERS(X)                    \
  X(kTable, "block_table_with_sink")              \
  X(kSeqLens, "sink seq_lens")                    \
  X(kSeqLensCpu, "sink seq_lens_cpu")             \
  X(kSeqLensBound, "sink seq_lens_cpu_upper_bound")
ATTN_NAMED_LIST(Buffer, STATIC_SINK_BUFFERS);

int64_t num_sink_blocks(const KvCacheSpec& s) { return s.sink_len / s.block_size; }
/// vLLM's max_num_blocks = cdiv(max_model_len, block_size): the table's columns after the sinks.
int64_t max_num_blocks(const KvCacheSpec& s, const BuilderConfig& c) {
  return (static_cast<int64_t>(c.max_model_len) + s.block_size - 1) / s.block_size;
}

class StaticSinkBuilder final : public WrappedBuilder {
 public:
  StaticSinkBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config, std::unique_ptr<Builder> inner)
      : WrappedBuilder(std::move(backend), spec, config, std::move(inner), "StaticSink_", {},
                       static_sink_buffers(spec, config)),
        sinks_(num_sink_blocks(spec)),
        width_(sinks_ + max_num_blocks(spec, config)) {
    // block_table_with_sink[:, :num_sink_blocks] = arange(1, num_sink_blocks + 1)
    ops::static_sink_prefix(exec(nullptr), buffers().as<int32_t>(kTable), config.max_num_seqs,
                            width_, sinks_);
  }

 protected:
  CommonMetadata transform(const CommonMetadata& c, const ops::Exec& exec) override {
    const int32_t sink = spec().sink_len;
    const int32_t bs = spec().block_size;
    const Tensor& bt = *c.block_table_tensor;
    // vLLM: block_table_with_sink[:num_reqs, n : n + k] = block_table_tensor[:, :k] with
    // k = cdiv(max_seq_len + sink_len, block_size): min(k, cdiv(max_model_len, block_size))
    // columns receive min(k, the table's width); torch raises unless the two agree or the
    // source has one column, which it broadcasts.
    const int64_t k = (c.max_seq_len + sink + bs - 1) / bs;
    const int64_t want = std::min<int64_t>(k, width_ - sinks_);
    const int64_t have = std::min<int64_t>(k, bt.shape[1]);
    const bool broadcast = have == 1 && want > 1;
    if (have != want && !broadcast)
      invalid("common->block_table_tensor has ", bt.shape[1], " columns: vLLM 0.33's StaticSink "
              "copies min(k, its width) = ", have, " of them into min(k, cdiv(max_model_len, "
              "block_size)) = ", want, " columns, k = cdiv(max_seq_len + sink_len, block_size) = ",
              k, " (max_seq_len=", c.max_seq_len, ", sink_len=", sink,
              "); torch refuses unless they agree or the table has one column");
    const Device d = config().device;
    const Device host{};
    const PersistentBuffers& b = buffers();
    auto* table = b.as<int32_t>(kTable);
    // torch's expand: column stride 0 reads column 0 for every column
    ops::static_sink_block_table(exec, bt.as<const int32_t>(), bt.strides[0],
                                 broadcast ? 0 : bt.strides[1], c.num_reqs, want, sinks_, table,
                                 width_);
    CommonMetadata n = c;
    auto* sl = b.as<int32_t>(kSeqLens);
    ops::static_sink_seq_lens(exec, c.seq_lens->as<const int32_t>(), c.num_reqs, sink, sl);
    n.seq_lens = make_vector(sl, d, kInt32, c.num_reqs);
    const ops::Exec on_host{};
    if (c.seq_lens_cpu) {  // libattn's exact host mirror follows the device tensor
      auto* h = b.as<int32_t>(kSeqLensCpu);
      ops::static_sink_seq_lens(on_host, c.seq_lens_cpu->as<const int32_t>(), c.num_reqs, sink, h);
      n.seq_lens_cpu = make_vector(h, host, kInt32, c.num_reqs);
    }
    if (c.seq_lens_cpu_upper_bound) {  // a bound of the new lengths (see docs/backends/wrappers.md)
      auto* h = b.as<int32_t>(kSeqLensBound);
      ops::static_sink_seq_lens(on_host, c.seq_lens_cpu_upper_bound->as<const int32_t>(),
                                c.num_reqs, sink, h);
      n.seq_lens_cpu_upper_bound = make_vector(h, host, kInt32, c.num_reqs);
    }
    n.max_seq_len = c.max_seq_len + sink;
    n.block_table_tensor = make_matrix(table, d, kInt32, c.num_reqs, width_, width_);
    return n;
  }

 private:
  int64_t sinks_;
  int64_t width_;
};

}  // namespace

std::vector<BufferRequest> static_sink_buffers(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t width = num_sink_blocks(spec) + max_num_blocks(spec, c);
  BufferPlan p(kBufferNames);
  p.set(kTable, buffer_bytes("block_table_with_sink", {c.max_num_seqs, width, 4}));
  p.set(kSeqLens, buffer_bytes("sink seq_lens", {c.max_num_seqs, 4}));
  p.set(kSeqLensCpu, buffer_bytes("sink seq_lens_cpu", {c.max_num_seqs, 4}), true);
  p.set(kSeqLensBound, buffer_bytes("sink seq_lens_cpu_upper_bound", {c.max_num_seqs, 4}), true);
  return p.requests();
}

std::unique_ptr<Builder> make_static_sink(std::shared_ptr<const Backend> backend,
                                          const KvCacheSpec& spec, const BuilderConfig& config,
                                          std::unique_ptr<Builder> inner) {
  return std::make_unique<StaticSinkBuilder>(std::move(backend), spec, config, std::move(inner));
}

}  // namespace attn::backends
