// TURBOQUANT and ULTRAQUANT: the metadata of vLLM 0.33's TurboQuantMetadataBuilder
// (vllm/v1/attention/backends/turboquant_attn.py), which ULTRAQUANT's backend
// (ultraquant_attn.py) keeps: the decode/prefill split at threshold 1 (decodes first, spec
// decodes are not decodes), the batch's tensors as they are, is_prefill = max_query_len > 1, the
// host mirrors; capture builds it and fills seq_lens with 1 in place. UNIFORM_BATCH, no
// update_block_table. The quantized cache dtypes ("turboquant_*", "ultraquant_4bit") select the
// backend in vLLM and are not libattn inputs: the builder does not read them.
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

enum class Variant { kTurboQuant, kUltraQuant };

#define TURBOQUANT_FIELDS(X)                      \
  X(kSeqLens, "seq_lens")                         \
  X(kSlotMapping, "slot_mapping")                 \
  X(kBlockTable, "block_table")                   \
  X(kQueryStartLoc, "query_start_loc")            \
  X(kNumActualTokens, "num_actual_tokens")        \
  X(kMaxQueryLen, "max_query_len")                \
  X(kMaxSeqLen, "max_seq_len")                    \
  X(kIsPrefill, "is_prefill")                     \
  X(kNumDecodes, "num_decodes")                   \
  X(kNumDecodeTokens, "num_decode_tokens")        \
  X(kQueryStartLocCpu, "query_start_loc_cpu")     \
  X(kSeqLensCpu, "seq_lens_cpu")
ATTN_NAMED_LIST(Field, TURBOQUANT_FIELDS);

const char* name_of(Variant v) { return v == Variant::kTurboQuant ? "TURBOQUANT" : "ULTRAQUANT"; }

/// What create() refuses: decoder attention only (supports_attn_type), kernel blocks of 16, 32,
/// 64 or 128 (block_size a multiple of 16), the backends' model dtypes (TURBOQUANT float16 or
/// bfloat16, ULTRAQUANT bfloat16: its FlyDSL decode loads bf16 queries).
void check(const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& c) {
  check_spec_kind(d, spec);
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, d.name, " runs decoder self-attention only (config->attn_type=",
         c.attn_type, ")");
  if (spec.block_size % 16 != 0)
    fail(Status::kUnsupported, d.name, " needs kv_cache_spec->block_size to be a multiple of a "
         "kernel block size (16, 32, 64, 128), got ", spec.block_size);
  const int32_t model = c.model_dtype_for(spec);
  const bool ultra = static_cast<Variant>(d.variant) == Variant::kUltraQuant;
  if (ultra ? model != kKvDtypeBfloat16
            : model != kKvDtypeFloat16 && model != kKvDtypeBfloat16)
    fail(Status::kUnsupported, d.name,
         ultra ? " runs bfloat16 models only, got " : " runs float16 and bfloat16 models, got ",
         kv_dtype_name(model), " (config->model_dtype, else kv_cache_spec->dtype)");
}

class TurboQuantBuilder final : public Builder {
 public:
  TurboQuantBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config)
      : Builder(std::move(backend), spec, config) {
    init_metadata(name_vector(kFieldNames));
    // _init_reorder_batch_threshold(1, supports_spec_as_decode=False)
    init_reorder_batch_threshold(1, false);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec&) override {
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len,
        reorder_batch_threshold().value_or(1), /*require_uniform=*/false);
    Metadata& m = metadata();
    m.reset();
    m.set_tensor(kSeqLens, *c.seq_lens);
    m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_tensor(kBlockTable, *c.block_table_tensor);
    m.set_tensor(kQueryStartLoc, *c.query_start_loc);
    m.set_int(kNumActualTokens, c.num_actual_tokens);
    m.set_int(kMaxQueryLen, c.max_query_len);
    m.set_int(kMaxSeqLen, c.max_seq_len);
    m.set_bool(kIsPrefill, c.max_query_len > 1);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    // The host mirrors: query_start_loc_cpu (the query_start_loc itself when it is on the
    // host), seq_lens_cpu_upper_bound (else libattn's exact seq_lens_cpu mirror, else the host
    // seq_lens).
    if (c.query_start_loc_cpu)
      m.set_tensor(kQueryStartLocCpu, *c.query_start_loc_cpu);
    else if (!c.query_start_loc->device.is_cuda())
      m.set_tensor(kQueryStartLocCpu, *c.query_start_loc);
    if (c.seq_lens_cpu_upper_bound)
      m.set_tensor(kSeqLensCpu, *c.seq_lens_cpu_upper_bound);
    else if (c.seq_lens_cpu)
      m.set_tensor(kSeqLensCpu, *c.seq_lens_cpu);
    else if (!c.seq_lens->device.is_cuda())
      m.set_tensor(kSeqLensCpu, *c.seq_lens);
  }

  /// vLLM's build_for_cudagraph_capture: the build, then seq_lens.fill_(1) in place (the
  /// runtime's buffer, which the captured graph reads at replay).
  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    do_build(0, c, false, exec);
    ops::fill_i32(exec, c.seq_lens->as<int32_t>(), c.num_reqs, 1);
  }
};

BackendDescriptor descriptor(Variant v) {
  return {name_of(v),
          kVllmRelease,
          kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
          static_cast<int32_t>(v),
          fixed_cudagraph_support<kCgUniformBatch>,
          check,
          [](const BackendDescriptor&, const KvCacheSpec&, const BuilderConfig&) {
            return std::vector<BufferRequest>{};
          },
          create_builder_of<TurboQuantBuilder>};
}

}  // namespace

extern const BackendDescriptor kTurboQuantBackend, kUltraQuantBackend;
const BackendDescriptor kTurboQuantBackend = descriptor(Variant::kTurboQuant);
/// ULTRAQUANT: TurboQuant's builder (its backend class overrides the cache dtype, the model
/// dtype, the preferred block size 64 and sinks, not the builder).
const BackendDescriptor kUltraQuantBackend = descriptor(Variant::kUltraQuant);

}  // namespace attn::backends
