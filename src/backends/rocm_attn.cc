// vLLM 0.33's ROCm attention builders on libattn's host path (a ROCm runtime builds host
// metadata and copies it; the CUDA path serves where the same ops run):
//  - ROCM_ATTN (v1/attention/backends/rocm_attn.py, RocmAttentionMetadataBuilder): the batch's
//    tables, scheduler_metadata None, causal; ALWAYS, no reorder, no update_block_table; capture
//    builds, then writes 1 into seq_lens and 0 into query_start_loc in place (the runtime's
//    buffers, as vLLM's override does: the prefix-prefill kernel must not read past them).
//  - ROCM_AITER_UNIFIED_ATTN (rocm_aiter_unified_attn.py,
//    RocmAiterUnifiedAttentionMetadataBuilder): ROCM_ATTN's builder whose capture writes 1 into
//    seq_lens only (unified attention reads query_start_loc on replay); block sizes multiples
//    of 16 (its customize_spec refuses others).
//  - ROCM_SEGMENTED_ATTN (rocm_segmented_attn.py, RocmSegmentedAttentionMetadataBuilder):
//    ROCM_ATTN's builder as it is (only the head counts it keeps differ, which no field holds);
//    decoder attention only.
// Spec kinds as the backends' supports_attn_type: ROCM_ATTN no cross attention (ENCODER_DECODER),
// ROCM_AITER_UNIFIED_ATTN all four attention types.
//  - ROCM_OCTAVE (rocm_octave_attn.py, RocmOctaveMetadataBuilder): the tables, the
//    decode/prefill split at 1 (no speculative decodes), and per query token its request
//    (q_to_req) and causal key length (q_to_klen) in persistent max_num_batched_tokens buffers;
//    UNIFORM_BATCH, threshold 1, no update_block_table; update_draft_decode_metadata refills the
//    two maps from the metadata's seq_lens (draft steps advance them in place).
#include <memory>
#include <utility>

#include "backends/backend_descriptor.h"
#include "backends/common_fields.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

#define ROCM_ATTN_FIELDS(X) \
  ATTN_PASSTHROUGH_FIELDS(X, k, "") X(kSchedulerMetadata, "scheduler_metadata") X(kCausal, "causal")
ATTN_NAMED_LIST(Field, ROCM_ATTN_FIELDS);

/// What a capture build writes in place after building (vLLM's build_for_cudagraph_capture).
enum class CaptureWrites {
  kSeqLensAndQueryStartLoc,  ///< ROCM_ATTN, ROCM_SEGMENTED_ATTN: seq_lens 1, query_start_loc 0.
  kSeqLensOnly,              ///< ROCM_AITER_UNIFIED_ATTN: seq_lens 1 (replay reads the qsl).
};

template <CaptureWrites kCapture>
class RocmAttnBuilder final : public Builder {
 public:
  RocmAttnBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                  const BuilderConfig& config)
      : Builder(std::move(backend), spec, config) {
    init_metadata(name_vector(kFieldNames));
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec&) override {
    Metadata& m = metadata();
    set_passthrough(m, kNumActualTokens, c);
    m.set_none(kSchedulerMetadata);
    if (c.causal_per_request)  // `causal=common_attn_metadata.causal`: bool or tensor
      m.set_tensor(kCausal, *c.causal_per_request);
    else
      m.set_bool(kCausal, c.causal);
  }

  void do_capture(const CommonMetadata& c, const ops::Exec& exec) override {
    do_build(0, c, false, exec);
    ops::fill_i32(exec, c.seq_lens->as<int32_t>(), c.num_reqs, 1);
    if (kCapture == CaptureWrites::kSeqLensAndQueryStartLoc)
      ops::fill_i32(exec, c.query_start_loc->as<int32_t>(), c.query_start_loc->shape[0], 0);
  }
};

#define OCTAVE_FIELDS(X)                                                                       \
  X(kONumActualTokens, "num_actual_tokens") X(kOMaxQueryLen, "max_query_len")                  \
  X(kOQueryStartLoc, "query_start_loc") X(kOSeqLens, "seq_lens") X(kOBlockTable, "block_table") \
  X(kOSlotMapping, "slot_mapping") X(kONumDecodes, "num_decodes")                              \
  X(kONumDecodeTokens, "num_decode_tokens") X(kOQToReq, "q_to_req") X(kOQToKlen, "q_to_klen")
ATTN_NAMED_LIST(OctaveField, OCTAVE_FIELDS);

#define OCTAVE_BUFFERS(X) X(kBufQToReq, "q_to_req") X(kBufQToKlen, "q_to_klen")
ATTN_NAMED_LIST(OctaveBuffer, OCTAVE_BUFFERS);

std::vector<BufferRequest> octave_plan(const KvCacheSpec&, const BuilderConfig& c) {
  BufferPlan p(kOctaveBufferNames);
  p.set(kBufQToReq, buffer_bytes("q_to_req", {c.max_num_batched_tokens, 4}));
  p.set(kBufQToKlen, buffer_bytes("q_to_klen", {c.max_num_batched_tokens, 4}));
  return p.requests();
}

class RocmOctaveBuilder final : public Builder {
 public:
  RocmOctaveBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_("ROCM_OCTAVE", config.device, octave_plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kOctaveFieldNames));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/false);
  }

  std::string draft_decode_update_refusal() const override { return ""; }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const ops::BatchSplit s = ops::split_decodes_and_prefills(
        c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len, 1, false);
    Metadata& m = metadata();
    const int64_t n = c.num_actual_tokens;
    m.set_int(kONumActualTokens, n);
    m.set_int(kOMaxQueryLen, c.max_query_len);
    m.set_tensor(kOQueryStartLoc, *c.query_start_loc);
    m.set_tensor(kOSeqLens, *c.seq_lens);
    m.set_tensor(kOBlockTable, *c.block_table_tensor);
    m.set_tensor(kOSlotMapping, *c.slot_mapping);
    m.set_int(kONumDecodes, s.num_decodes);
    m.set_int(kONumDecodeTokens, s.num_decode_tokens);
    const Device d = config().device;
    const Tensor q_to_req = make_vector(buffers_.get(kBufQToReq), d, kInt32, n);
    const Tensor q_to_klen = make_vector(buffers_.get(kBufQToKlen), d, kInt32, n);
    m.set_tensor(kOQToReq, q_to_req, true);
    m.set_tensor(kOQToKlen, q_to_klen, true);
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    ops::query_key_maps(exec, qsl, c.seq_lens->as<const int32_t>(), c.num_reqs, n,
                        q_to_req.as<int32_t>(), q_to_klen.as<int32_t>());
  }

  /// vLLM: `self._fill_query_maps(metadata)` from the metadata's own query_start_loc and
  /// seq_lens (which the drafter advanced in place), into its q_to_req / q_to_klen.
  void do_update_draft_decode(const Metadata& md, const ops::Exec& exec) override {
    const attn::Field& qsl = md.field(kOQueryStartLoc);
    const attn::Field& seq = md.field(kOSeqLens);
    const attn::Field& req = md.field(kOQToReq);
    const attn::Field& klen = md.field(kOQToKlen);
    const int64_t n = md.field(kONumActualTokens).int_value;
    const int64_t num_reqs = qsl.tensor.shape[0] - 1;
    ops::query_key_maps(exec, qsl.tensor.as<const int32_t>(), seq.tensor.as<const int32_t>(),
                        num_reqs, n, static_cast<int32_t*>(req.tensor.data),
                        static_cast<int32_t*>(klen.tensor.data));
  }

 private:
  PersistentBuffers buffers_;
};

/// RocmAttentionBackend.supports_attn_type: decoder, encoder and encoder-only attention, not
/// cross attention (its prefix-prefill kernel assumes self-attention).
constexpr uint32_t kRocmAttnKinds =
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow) |
    kv_kind_bit(kKvChunkedLocalAttention) | kv_kind_bit(kKvEncoderOnly);
/// Decoder self-attention only (ROCM_SEGMENTED_ATTN's supports_attn_type), also under the
/// chunked-local wrapper.
constexpr uint32_t kDecoderKinds = kv_kind_bit(kKvFullAttention) |
                                   kv_kind_bit(kKvSlidingWindow) |
                                   kv_kind_bit(kKvChunkedLocalAttention);

}  // namespace

extern const BackendDescriptor kRocmAttnBackend;
const BackendDescriptor kRocmAttnBackend{
    "ROCM_ATTN",
    kVllmRelease,
    kRocmAttnKinds,
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_spec_kind_only,
    no_buffers,
    create_builder_of<RocmAttnBuilder<CaptureWrites::kSeqLensAndQueryStartLoc>>,
};

extern const BackendDescriptor kRocmAiterUnifiedAttnBackend;
const BackendDescriptor kRocmAiterUnifiedAttnBackend{
    "ROCM_AITER_UNIFIED_ATTN",
    kVllmRelease,
    kPagedAttentionKinds,
    0,
    fixed_cudagraph_support<kCgAlways>,
    [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig&) {
      check_spec_kind(d, spec);
      // RocmAiterUnifiedAttentionBackend.customize_spec (block size 1 is vLLM's page-size
      // probe, never a builder's)
      if (spec.block_size % 16 != 0)
        fail(Status::kUnsupported, d.name, ": kv_cache_spec->block_size=", spec.block_size,
             " is not a multiple of 16 (ROCm's kernel gathers blocks in 16-token units)");
    },
    no_buffers,
    create_builder_of<RocmAttnBuilder<CaptureWrites::kSeqLensOnly>>,
};

extern const BackendDescriptor kRocmSegmentedAttnBackend;
const BackendDescriptor kRocmSegmentedAttnBackend{
    "ROCM_SEGMENTED_ATTN",
    kVllmRelease,
    kDecoderKinds,
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_spec_kind_only,
    no_buffers,
    create_builder_of<RocmAttnBuilder<CaptureWrites::kSeqLensAndQueryStartLoc>>,
};

extern const BackendDescriptor kRocmOctaveBackend;
const BackendDescriptor kRocmOctaveBackend{
    "ROCM_OCTAVE",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    check_spec_kind_only,
    buffer_plan_of<octave_plan>,
    create_builder_of<RocmOctaveBuilder>,
};

}  // namespace attn::backends
