// STEP5_CSA_TAIL_RING: vLLM 0.33's Step5CSATailRingMetadataBuilder (models/step5/nvidia/
// csa_tail_ring.py), the builder of Step5's CSA tail ring layers: each request's open CSA region
// keeps its raw 1 KB indexer rows (bf16 [index_k | index_z], 512 elements) in a ring of
// `capacity` rows inside the request's one block. Level ALWAYS (the class attribute), reorder
// threshold None, no update_block_table, no draft-decode update (the base class's).
//
// The spec is the layer's CircularBufferSpec(block_size, 1 head, head_size, head_size_v 0,
// bfloat16): ATTN_KV_CIRCULAR_BUFFER (ABI 1.7; the block table needs one column, vLLM's
// max_num_blocks_per_req 1), or a FULL_ATTENTION spec of the same sizes (what libattn took
// before 1.7; the table is then checked as wide as the seq_lens need). capacity =
// page_size_bytes // 1024 with page_size_bytes = block_size * num_kv_heads * head_size *
// element size (the key part only: the layer declares head_size_v 0, which libattn's
// head_size_v cannot say, so it is not read). The rows per block are the bound KV cache
// tensor's block stride in rows (Step5CSATailRing.rows_per_block = kv_cache.stride(0) // 512):
// spec.block_stride_bytes / 1024 (ABI 1.7; 0 = the page: rows_per_block = capacity).
//
// build: base and slot_mapping, one int64 per token of the batch's slot_mapping
// (ops::step5_tail_ring_metadata), in persistent buffers of max_num_batched_tokens entries, from
// CommonAttentionMetadata.token_to_req_indices (a persistent int32 buffer, zeroed at create).
#include <algorithm>
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

constexpr const char* kName = "STEP5_CSA_TAIL_RING";
constexpr int64_t kRowBytes = 1024;  // one bf16 [index_k | index_z] row: 2 * 256 * 2 bytes

#define TAIL_RING_FIELDS(X) \
  X(kBase, "base")          \
  X(kSlotMapping, "slot_mapping")
ATTN_NAMED_LIST(Field, TAIL_RING_FIELDS);

#define TAIL_RING_BUFFERS(X)                \
  X(kBufTokenToReq, "token_to_req_indices") \
  X(kBufBase, "base")                       \
  X(kBufSlotMapping, "slot_mapping")
ATTN_NAMED_LIST(Buffer, TAIL_RING_BUFFERS);

int64_t element_bytes(int32_t dtype) {
  switch (dtype) {
    case kKvDtypeFloat32: return 4;
    case kKvDtypeFloat16:
    case kKvDtypeBfloat16: return 2;
    default: return 1;  // fp8, uint8
  }
}

/// CircularBufferSpec.page_size_bytes (head_size_v 0).
int64_t page_bytes(const KvCacheSpec& s) {
  return int64_t{s.block_size} * s.num_kv_heads * s.head_size * element_bytes(s.dtype);
}

/// Step5CSATailRingMetadataBuilder.capacity: page_size_bytes // 1024.
int32_t ring_capacity(const KvCacheSpec& s) {
  return static_cast<int32_t>(page_bytes(s) / kRowBytes);
}

/// Step5CSATailRing.rows_per_block: kv_cache.stride(0) // 512 elements.
int64_t rows_per_block(const KvCacheSpec& s) {
  return s.block_stride_bytes > 0 ? s.block_stride_bytes / kRowBytes : ring_capacity(s);
}

void check_tail_ring(const BackendDescriptor& d, const KvCacheSpec& s, const BuilderConfig& c) {
  check_spec_kind(d, s);
  const int64_t page = page_bytes(s);
  const int64_t need = 7 + int64_t{c.num_speculative_tokens};
  // Step5CSATailRing.get_kv_cache_spec raises when the page holds no whole number of rows or
  // fewer than 7 + k of them
  if (page % kRowBytes != 0 || page / kRowBytes < need)
    invalid("kv_cache_spec: a page of block_size=", s.block_size, " * num_kv_heads=",
            s.num_kv_heads, " * head_size=", s.head_size, " * ", element_bytes(s.dtype),
            " bytes = ", page, " bytes must hold a whole number of ", kRowBytes,
            "-byte rows, at least 7 + num_speculative_tokens=", need, " (", d.name,
            "'s ring; vLLM's Step5CSATailRing.get_kv_cache_spec raises)");
  // Step5CSATailRing.bind_kv_cache asserts kv_cache.stride(0) % 512 == 0 (bf16 elements)
  if (s.block_stride_bytes % kRowBytes != 0)
    invalid("kv_cache_spec->block_stride_bytes=", s.block_stride_bytes,
            " is not a multiple of ", kRowBytes, " (", d.name,
            " addresses the ring's rows across blocks; vLLM's bind_kv_cache asserts it)");
}

std::vector<BufferRequest> plan(const BackendDescriptor&, const KvCacheSpec&,
                                const BuilderConfig& c) {
  const int64_t tokens = c.max_num_batched_tokens;
  BufferPlan p(kBufferNames);
  p.set(kBufTokenToReq, buffer_bytes("token_to_req_indices", {tokens, int64_t{sizeof(int32_t)}}));
  p.set(kBufBase, buffer_bytes("base", {tokens, int64_t{sizeof(int64_t)}}));
  p.set(kBufSlotMapping, buffer_bytes("slot_mapping", {tokens, int64_t{sizeof(int64_t)}}));
  return p.requests();
}

class Step5CsaTailRingBuilder final : public Builder {
 public:
  Step5CsaTailRingBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                          const BuilderConfig& config, std::vector<BufferRequest> plan)
      : Builder(std::move(backend), spec, config),
        capacity_(ring_capacity(spec)),
        rows_per_block_(rows_per_block(spec)),
        buffers_(kName, config.device, std::move(plan), config.allocator, config.workspace,
                 config.workspace_size) {
    init_metadata(name_vector(kFieldNames));
    set_reorder_batch_threshold(std::nullopt);  // the base class's None
    ops::fill_i32(exec(nullptr), buffers_.as<int32_t>(kBufTokenToReq),
                  config.max_num_batched_tokens, 0);  // torch.zeros
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    check_batch(c);
    const int64_t n = c.num_reqs, T = c.num_actual_tokens;
    const int64_t tokens = c.slot_mapping->numel();  // num_tokens = slot_mapping.numel()
    Metadata& m = metadata();
    m.reset();
    const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
    // CommonAttentionMetadata.token_to_req_indices: mapped up to query_start_loc_cpu[-1]
    const int64_t mapped = c.qsl_host[n];
    int32_t* t2r = buffers_.as<int32_t>(kBufTokenToReq);
    ops::compute_token_to_req_indices(exec, qsl, n, mapped, std::max(mapped, T), t2r);
    const Tensor& bt = *c.block_table_tensor;
    int64_t* base = buffers_.as<int64_t>(kBufBase);
    int64_t* slots = buffers_.as<int64_t>(kBufSlotMapping);
    ops::step5_tail_ring_metadata(exec, t2r, bt.as<const int32_t>(), bt.strides[0],
                                  c.positions->as<const int64_t>(),
                                  c.seq_lens->as<const int32_t>(), qsl, n, T, tokens, capacity_,
                                  rows_per_block_, base, slots);
    m.set_tensor(kBase, make_vector(base, config().device, kInt64, tokens), true);
    m.set_tensor(kSlotMapping, make_vector(slots, config().device, kInt64, tokens), true);
  }

 private:
  /// What build() refuses (vLLM asserts, or its kernel would read or write out of bounds),
  /// before the metadata changes.
  void check_batch(const CommonMetadata& c) const {
    check_position_mapped_batch(c, config(), kName, "base and slot_mapping buffers");
    const int64_t owned = std::min<int64_t>(c.num_actual_tokens, c.qsl_host[c.num_reqs]);
    if (owned > 0 && c.block_table_tensor->shape[1] < 1)
      invalid("common->block_table_tensor is (", c.block_table_tensor->shape[0], ", ",
              c.block_table_tensor->shape[1], ") with ", owned, " scheduled tokens; ", kName,
              " reads each token's request's ring block from column 0");
  }

  int32_t capacity_;
  int64_t rows_per_block_;
  PersistentBuffers buffers_;
};

std::unique_ptr<Builder> create_tail_ring(const BackendDescriptor& d,
                                          std::shared_ptr<const Backend> backend,
                                          const KvCacheSpec& spec, const BuilderConfig& c) {
  return std::make_unique<Step5CsaTailRingBuilder>(std::move(backend), spec, c, plan(d, spec, c));
}

}  // namespace

extern const BackendDescriptor kStep5CsaTailRingBackend;
const BackendDescriptor kStep5CsaTailRingBackend{
    kName,
    kVllmRelease,
    // its CircularBufferSpec; FULL_ATTENTION as libattn took it before ABI 1.7
    kv_kind_bit(kKvCircularBuffer) | kv_kind_bit(kKvFullAttention),
    0,
    fixed_cudagraph_support<kCgAlways>,
    check_tail_ring,
    plan,
    create_tail_ring,
};

}  // namespace attn::backends
