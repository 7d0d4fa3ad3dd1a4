// Chunked local attention (vLLM's create_chunked_local_attention_backend, mainline): the batch
// becomes its local-attention virtual batches (make_local_attention_virtual_batches), the
// wrapped builder builds those, and update_block_table re-gathers another group's block table
// with the same remap before the wrapped builder's own update. CUDA graph support NEVER, as
// vLLM's override says.
#include <string>
#include <utility>

#include "backends/field_list.h"
#include "backends/wrapped_builder.h"
#include "backends/wrapper_kinds.h"
#include "core/batch_transforms.h"
#include "core/error.h"

namespace attn::backends {
namespace {

#define CHUNKED_LOCAL_BUFFERS(X)                     \
  X(kQsl, "local query_start_loc")                   \
  X(kQslCpu, "local query_start_loc_cpu")            \
  X(kSeqLens, "local seq_lens")                      \
  X(kSeqLensCpu, "local seq_lens_cpu")               \
  X(kComputedCpu, "local num_computed_tokens_cpu")   \
  X(kBlockTable, "local block_table")                \
  X(kVirtualReq, "virtual_req")                      \
  X(kVirtualBlockStart, "virtual_block_start")       \
  X(kUpdatedBlockTable, "updated local block_table")
ATTN_NAMED_LIST(Buffer, CHUNKED_LOCAL_BUFFERS);

/// The fields after the wrapped backend's.
#define CHUNKED_LOCAL_EXTRA_FIELDS(X) \
  X(kExtraVirtualReq, "virtual_req") X(kExtraVirtualBlockStart, "virtual_block_start")
ATTN_NAMED_LIST(Extra, CHUNKED_LOCAL_EXTRA_FIELDS);

int64_t pages_per_batch(const KvCacheSpec& spec) { return spec.attention_chunk_size / spec.block_size; }

class ChunkedLocalBuilder final : public WrappedBuilder {
 public:
  ChunkedLocalBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                      const BuilderConfig& config, std::unique_ptr<Builder> inner)
      : WrappedBuilder(std::move(backend), spec, config, std::move(inner),
                       "ChunkedLocalAttention_" + std::to_string(spec.attention_chunk_size) + "_",
                       name_vector(kExtraNames), chunked_local_buffers(spec, config)),
        max_virtual_(chunked_local_max_virtual_batches(spec, config)),
        pages_(pages_per_batch(spec)) {
    set_cudagraph_support(kCgNever);
  }

 protected:
  CommonMetadata transform(const CommonMetadata& common, const ops::Exec& exec) override {
    CommonMetadata c = common;
    const int32_t chunk = spec().attention_chunk_size;
    const int64_t v = local_attention_num_virtual_batches(chunk, c);
    if (v > max_virtual_)
      fail(Status::kInternal, "the batch makes ", v, " local-attention virtual batches, more than the ",
           max_virtual_, " this builder was sized for");
    const Device d = config().device;
    const Device host{};
    const PersistentBuffers& b = buffers();
    LocalAttentionOutputs out;
    out.query_start_loc = make_vector(b.get(kQsl), d, kInt32, max_virtual_ + 1);
    out.query_start_loc_cpu = make_vector(b.get(kQslCpu), host, kInt32, max_virtual_ + 1);
    out.seq_lens = make_vector(b.get(kSeqLens), d, kInt32, max_virtual_);
    out.seq_lens_cpu = make_vector(b.get(kSeqLensCpu), host, kInt32, max_virtual_);
    out.num_computed_tokens_cpu = make_vector(b.get(kComputedCpu), host, kInt32, max_virtual_);
    out.block_table = make_matrix(b.get(kBlockTable), d, kInt32, max_virtual_, pages_, pages_);
    out.virtual_req = make_vector(b.get(kVirtualReq), d, kInt32, max_virtual_);
    out.virtual_block_start = make_vector(b.get(kVirtualBlockStart), d, kInt32, max_virtual_);
    num_virtual_ = v;
    return make_local_attention_virtual_batches(chunk, c, spec().block_size, out, exec.stream);
  }

  void finish(const CommonMetadata&, const CommonMetadata&, const ops::Exec&) override {
    const Device d = config().device;
    Metadata& m = metadata();
    m.set_tensor(extra_base() + kExtraVirtualReq,
                 make_vector(buffers().get(kVirtualReq), d, kInt32, num_virtual_), true);
    m.set_tensor(extra_base() + kExtraVirtualBlockStart,
                 make_vector(buffers().get(kVirtualBlockStart), d, kInt32, num_virtual_), true);
  }

  void do_update_block_table(const Metadata& src, const Tensor& block_table,
                             const Tensor& slot_mapping, const ops::Exec& exec) override {
    // `block_table` is the other group's table of the original requests; re-gather it with the
    // remap `src` was built with, then the wrapped builder's update (block_table, slot_mapping).
    const Field& vreq = src.field(extra_base() + kExtraVirtualReq);
    const Field& vstart = src.field(extra_base() + kExtraVirtualBlockStart);
    if (vreq.kind != FieldKind::kTensor || vstart.kind != FieldKind::kTensor)
      invalid("metadata has no virtual_req/virtual_block_start (it was never built)");
    expect_dtype(block_table, "block_table", kInt32);
    expect_rows(block_table, "block_table", src.info.num_reqs);
    if (src.info.host_max_seq_len >= 0) {
      const int64_t need = (src.info.host_max_seq_len + spec().block_size - 1) / spec().block_size;
      if (block_table.shape[1] < need)
        invalid("block_table has ", block_table.shape[1], " columns but the longest sequence (",
                src.info.host_max_seq_len, " tokens) needs ", need, " blocks of ", spec().block_size);
    }
    const int64_t v = vreq.tensor.shape[0];
    const Tensor out =
        make_matrix(buffers().get(kUpdatedBlockTable), config().device, kInt32, v, pages_, pages_);
    remap_local_block_table(block_table, vreq.tensor, vstart.tensor, v, out, exec.stream);
    const Field& old_bt = src.field(metadata().index_of("block_table"));
    Metadata probe = src;  // the width check of the virtual table, not of the original one
    probe.info.host_max_seq_len = -1;
    check_replacement_tables(probe, old_bt.tensor.shape[0], out, slot_mapping);
    replace_tables(src, out, slot_mapping, /*block_table_in_buffer=*/true);
  }

 private:
  int64_t max_virtual_;
  int64_t pages_;
  int64_t num_virtual_ = 0;
};

}  // namespace

int64_t chunked_local_max_virtual_batches(const KvCacheSpec& spec, const BuilderConfig& c) {
  // Each request makes 1 + cdiv(q - q_first, chunk) virtual batches with q_first >= min(1, q),
  // so V <= 2 * num_reqs + num_tokens / chunk.
  const int64_t chunk = spec.attention_chunk_size;
  return 2 * static_cast<int64_t>(c.max_num_seqs) + (c.max_num_batched_tokens + chunk - 1) / chunk;
}

std::vector<BufferRequest> chunked_local_buffers(const KvCacheSpec& spec, const BuilderConfig& c) {
  const auto v = static_cast<size_t>(chunked_local_max_virtual_batches(spec, c));
  const auto pages = static_cast<size_t>(pages_per_batch(spec));
  const size_t i32 = sizeof(int32_t);
  buffer_bytes("local block_table", {static_cast<int64_t>(v), static_cast<int64_t>(pages), 4});
  BufferPlan p(kBufferNames);
  p.set(kQsl, (v + 1) * i32);
  p.set(kQslCpu, (v + 1) * i32, true);
  p.set(kSeqLens, v * i32);
  p.set(kSeqLensCpu, v * i32, true);
  p.set(kComputedCpu, v * i32, true);
  p.set(kBlockTable, v * pages * i32);
  p.set(kVirtualReq, v * i32);
  p.set(kVirtualBlockStart, v * i32);
  p.set(kUpdatedBlockTable, v * pages * i32);
  return p.requests();
}

std::unique_ptr<Builder> make_chunked_local(std::shared_ptr<const Backend> backend,
                                            const KvCacheSpec& spec, const BuilderConfig& config,
                                            std::unique_ptr<Builder> inner) {
  return std::make_unique<ChunkedLocalBuilder>(std::move(backend), spec, config, std::move(inner));
}

}  // namespace attn::backends
