// Cross attention (vLLM's create_cross_attention_backend): decoder queries attend to the
// encoder's keys and values. The wrapped builder builds the batch with causal = false,
// seq_lens = encoder_seq_lens and max_seq_len = their maximum; the result's slot_mapping is the
// cross KV slot mapping (the encoder tokens of the requests on their first step, the only step
// that writes cross KV). libattn adds `decoder_seq_lens` (the batch's own seq_lens), which
// update_block_table needs to recompute that slot mapping for another block table.
#include <algorithm>
#include <utility>

#include "backends/field_list.h"
#include "backends/wrapped_builder.h"
#include "backends/wrapper_kinds.h"
#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

#define CROSS_ATTENTION_BUFFERS(X) X(kSlots, "cross slot_mapping")
ATTN_NAMED_LIST(Buffer, CROSS_ATTENTION_BUFFERS);
/// The fields after the wrapped backend's.
#define CROSS_ATTENTION_EXTRA_FIELDS(X) X(kExtraDecoderSeqLens, "decoder_seq_lens")
ATTN_NAMED_LIST(Extra, CROSS_ATTENTION_EXTRA_FIELDS);

class CrossAttentionBuilder final : public WrappedBuilder {
 public:
  CrossAttentionBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                        const BuilderConfig& config, std::unique_ptr<Builder> inner)
      : WrappedBuilder(std::move(backend), spec, config, std::move(inner), "CrossAttention_",
                       name_vector(kExtraNames), cross_attention_buffers(config)) {}

 protected:
  /// The outer batch is a decoder batch: validate it as one.
  CommonLimits limits() const override {
    CommonLimits lim = Builder::limits();
    lim.seq_lens_are_encoder_lens = false;
    lim.max_model_len = config().max_model_len;
    lim.block_size = 0;  // the block table is sized for the encoder, checked below
    lim.require_host_seq_lens = true;  // which requests write cross KV this step
    return lim;
  }

  CommonMetadata transform(const CommonMetadata& c, const ops::Exec& exec) override {
    const Tensor* enc = c.encoder_seq_lens ? &*c.encoder_seq_lens : nullptr;
    const Tensor* enc_host = c.encoder_seq_lens_cpu ? &*c.encoder_seq_lens_cpu : nullptr;
    if (enc == nullptr && enc_host != nullptr && usable_on(*enc_host, config().device)) enc = enc_host;
    if (enc == nullptr) invalid("common->encoder_seq_lens is NULL; cross attention needs it");
    if (enc_host == nullptr && enc->host_accessible()) enc_host = enc;
    if (enc_host == nullptr)
      invalid("common->encoder_seq_lens_cpu is NULL; it is required when "
              "common->encoder_seq_lens is on ", enc->device.to_string());
    const int32_t* e = enc_host->as<const int32_t>();
    const int64_t width = c.block_table_tensor->shape[1];
    const int32_t bs = spec().block_size;
    int64_t longest = 0, total = 0;
    for (int64_t r = 0; r < c.num_reqs; ++r) {
      if (e[r] > config().max_encoder_len)
        invalid("common->encoder_seq_lens[", r, "]=", e[r], " exceeds config->max_encoder_len=",
                config().max_encoder_len);
      if ((static_cast<int64_t>(e[r]) + bs - 1) / bs > width)
        invalid("common->block_table_tensor has ", width, " columns but request ", r,
                " needs cdiv(encoder_seq_lens[", r, "]=", e[r], ", block_size=", bs, ") blocks");
      longest = std::max<int64_t>(longest, e[r]);
      if (c.seq_lens_host[r] - c.query_len(r) <= 0) total += e[r];  // first step: writes
    }
    const Tensor& bt = *c.block_table_tensor;
    auto* slots = static_cast<int64_t*>(buffers().get(kSlots));
    // The host path computes from the validated host copies (the mirrors may stand for them).
    const bool dev = exec.on_cuda;
    ops::cross_attention_slot_mapping(
        exec, dev ? c.query_start_loc->as<const int32_t>() : c.qsl_host,
        dev ? c.seq_lens->as<const int32_t>() : c.seq_lens_host, dev ? enc->as<const int32_t>() : e,
        c.num_reqs, bt.as<const int32_t>(), bt.strides[0], width, bs, slots, total);
    num_slots_ = total;
    CommonMetadata n = c;
    n.causal = false;
    n.max_seq_len = longest;
    n.seq_lens = *enc;
    n.seq_lens_cpu = *enc_host;
    // vLLM 0.33: seq_lens_cpu_upper_bound becomes the encoder lengths too, and `causal = False`
    // replaces a per-request causal tensor as well (it is the same field there).
    n.seq_lens_cpu_upper_bound = *enc_host;
    n.causal_per_request.reset();
    return n;
  }

  void finish(const CommonMetadata& c, const CommonMetadata&, const ops::Exec&) override {
    Metadata& m = metadata();
    m.set_tensor(m.index_of("slot_mapping"),
                 make_vector(buffers().get(kSlots), config().device, kInt64, num_slots_), true);
    m.set_tensor(extra_base() + kExtraDecoderSeqLens, *c.seq_lens);
  }

  void do_update_block_table(const Metadata& src, const Tensor& block_table,
                             const Tensor& slot_mapping, const ops::Exec& exec) override {
    // A fresh build with this block table gives this slot mapping: recompute it; the decoder
    // `slot_mapping` of the call has no meaning for cross KV and is only checked.
    const Metadata& m = metadata();
    const Field& qsl = src.field(m.index_of("query_start_loc"));
    const Field& enc = src.field(m.index_of("seq_lens"));
    const Field& dec = src.field(extra_base() + kExtraDecoderSeqLens);
    const Field& slots = src.field(m.index_of("slot_mapping"));
    const Field& longest = src.field(m.index_of("max_seq_len"));
    if (qsl.kind != FieldKind::kTensor || enc.kind != FieldKind::kTensor ||
        dec.kind != FieldKind::kTensor)
      invalid("metadata has no query_start_loc/seq_lens/decoder_seq_lens (it was never built)");
    expect_dtype(block_table, "block_table", kInt32);
    expect_rows(block_table, "block_table", src.info.num_reqs);
    if (block_table.data == nullptr && block_table.numel() > 0) invalid("block_table has data=NULL");
    if (!usable_on(block_table, config().device))
      invalid("block_table is on ", block_table.device.to_string(), " but the builder runs on ",
              config().device.to_string());
    const int32_t bs = spec().block_size;
    if (block_table.shape[1] < (longest.int_value + bs - 1) / bs)
      invalid("block_table has ", block_table.shape[1], " columns but the longest encoder input (",
              longest.int_value, " tokens) needs ", (longest.int_value + bs - 1) / bs,
              " blocks of ", bs);
    expect_index_dtype(slot_mapping, "slot_mapping");
    const int64_t total = slots.tensor.shape[0];
    auto* out = static_cast<int64_t*>(buffers().get(kSlots));
    ops::cross_attention_slot_mapping(exec, qsl.tensor.as<const int32_t>(),
                                      dec.tensor.as<const int32_t>(), enc.tensor.as<const int32_t>(),
                                      src.info.num_reqs, block_table.as<const int32_t>(),
                                      block_table.strides[0], block_table.shape[1], bs, out, total);
    replace_tables(src, block_table, make_vector(out, config().device, kInt64, total), false, true);
  }

 private:
  int64_t num_slots_ = 0;
};

}  // namespace

std::vector<BufferRequest> cross_attention_buffers(const BuilderConfig& c) {
  BufferPlan p(kBufferNames);
  p.set(kSlots, buffer_bytes("cross slot_mapping", {c.max_num_seqs, c.max_encoder_len, 8}));
  return p.requests();
}

std::unique_ptr<Builder> make_cross_attention(std::shared_ptr<const Backend> backend,
                                              const KvCacheSpec& spec, const BuilderConfig& config,
                                              std::unique_ptr<Builder> inner) {
  return std::make_unique<CrossAttentionBuilder>(std::move(backend), spec, config, std::move(inner));
}

}  // namespace attn::backends
