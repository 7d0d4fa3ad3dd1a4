// DOTS3_NOTE_TRITON_MLA: vLLM 0.33's Dots3NoteMLAMetadataBuilder (models/dots3_note/nvidia/
// attention.py), the builder of dots3 NOTE's sliding-window MLA layers (Dots3NoteTritonMLABackend,
// which vLLM names TRITON_MLA: libattn's name is its own). A TRITON_MLA builder (level
// UNIFORM_BATCH, uniform decodes, non-causal multi-token decode, the same draft decode update)
// for the NOTE dimensions (head size 1088: kv_lora_rank 1024 + qk_rope_head_dim 64) with:
// - the window from kv_cache_spec->sliding_window (required);
// - the decode part's query_len: the first request's query length (its _build_decode);
// - the prefill part run by the layer's own FlashAttention prefill (prefill_prefill_backend
//   FLASH_ATTN whatever config->mla_prefill_backend says; the query dtype still follows the
//   configured backend, as determine_prefill_query_data_type asks it), its chunked context
//   None, and its sliding_window gathers: the prefills cut into chunks whose latent rows
//   (kv_len = min(seq_len, query_len + window - 1) each) fit in the MLA workspace, planned from
//   seq_lens_cpu_upper_bound; with decodes in the batch the chunks' cu_seq_lens_k, starts and
//   token_to_seq are recomputed from the exact device seq_lens (num_kv_tokens and
//   max_seq_len_k stay the plan's);
// - refused: prefills under decode context parallelism (vLLM's NotImplementedError), a request
//   whose rows exceed the workspace (its ValueError).
// Fields: TRITON_MLA's with decode_query_len after the decode part's own, then
// prefill_sliding_window_*: num_chunks, the
// per-chunk host lists (chunk_req_start / _req_end, prefill request indices; chunk_query_start /
// _query_end, the prefills' query offsets; chunk_num_kv_tokens, chunk_max_seq_len_q / _k) and
// the chunks' tensors concatenated: chunk_cu_seq_lens_q / _k (chunk c's req_end - req_start + 1
// entries at req_start + c), chunk_starts (chunk c's at req_start), chunk_token_to_seq (chunk
// c's num_kv_tokens entries after those of the chunks before it). The workspace the gathers
// write is the runtime's, as the chunked context's is (docs/backends/mla.md).
#include <algorithm>
#include <utility>
#include <vector>

#include "backends/mla_triton.h"
#include "backends/persistent_copy.h"
#include "core/error.h"
#include "core/vllm_release.h"
#include "ops/swa_prefill_chunks.h"

namespace attn::backends {
namespace {

constexpr MlaClass kDots3Note =
    MlaClass("DOTS3_NOTE_TRITON_MLA", kCgUniformBatch, QueryLenSupport::kUniform)
        .non_causal_decode()
        .release(kVllmRelease)
        .head(1088)
        .layer_prefill(kPrefillFlashAttn)
        .windowed();

#define DOTS3_DECODE_FIELDS(X) X(kDecodeQueryLen, "decode_query_len")
ATTN_NAMED_LIST(DecodeAddition, DOTS3_DECODE_FIELDS);

#define DOTS3_SWA_FIELDS(X)                                                   \
  X(kSwaNumChunks, "prefill_sliding_window_num_chunks")                       \
  X(kSwaReqStart, "prefill_sliding_window_chunk_req_start")                   \
  X(kSwaReqEnd, "prefill_sliding_window_chunk_req_end")                       \
  X(kSwaQueryStart, "prefill_sliding_window_chunk_query_start")               \
  X(kSwaQueryEnd, "prefill_sliding_window_chunk_query_end")                   \
  X(kSwaNumKvTokens, "prefill_sliding_window_chunk_num_kv_tokens")            \
  X(kSwaMaxSeqLenQ, "prefill_sliding_window_chunk_max_seq_len_q")             \
  X(kSwaMaxSeqLenK, "prefill_sliding_window_chunk_max_seq_len_k")             \
  X(kSwaCuSeqLensQ, "prefill_sliding_window_chunk_cu_seq_lens_q")             \
  X(kSwaCuSeqLensK, "prefill_sliding_window_chunk_cu_seq_lens_k")             \
  X(kSwaStarts, "prefill_sliding_window_chunk_starts")                        \
  X(kSwaTokenToSeq, "prefill_sliding_window_chunk_token_to_seq")
ATTN_NAMED_LIST(SwaField, DOTS3_SWA_FIELDS);

/// The plan's host lists, in SwaChunkLists' order, max_num_seqs entries each.
enum HostList : int64_t {
  kListReqStart, kListReqEnd, kListTokenEnd,  // first: copied to the device together
  kListQueryStart, kListQueryEnd, kListNumKv, kListMaxQ, kListMaxK, kListCount
};

#define DOTS3_BUFFERS(X)                                                 \
  X(kBufCuQ, "prefill_sliding_window_chunk_cu_seq_lens_q")               \
  X(kBufCuK, "prefill_sliding_window_chunk_cu_seq_lens_k")               \
  X(kBufStarts, "prefill_sliding_window_chunk_starts")                   \
  X(kBufTokenToSeq, "prefill_sliding_window_chunk_token_to_seq")         \
  X(kBufPlan, "the sliding-window plan's lists on the device")           \
  X(kBufBound, "the prefills' seq_lens_cpu_upper_bound on the device")   \
  /* host */                                                             \
  X(kBufLists, "the sliding-window plan's lists")                        \
  X(kBufBoundStaging, "seq_lens_cpu_upper_bound staging")
ATTN_NAMED_LIST(Buffer, DOTS3_BUFFERS);

int64_t window(const KvCacheSpec& spec) { return std::max<int32_t>(spec.sliding_window, 1); }

class Dots3NoteBuilder final : public TritonMlaBuilder {
 public:
  explicit Dots3NoteBuilder(const MlaArgs& a)
      : TritonMlaBuilder(a, field_block(kDecodeAdditionNames), field_block(kSwaFieldNames),
                         buffer_plan(a.spec, a.config)) {}

  static std::vector<BufferRequest> buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c) {
    std::vector<BufferRequest> r = MlaCommonBuilder::buffer_plan(spec, c);
    const int64_t seqs = c.max_num_seqs, i32 = sizeof(int32_t);
    // Every request reads at most min(query_len + window - 1, max_model_len) rows, and a chunk
    // at most the workspace's: the KV rows of all chunks.
    const int64_t rows =
        std::min({c.max_num_batched_tokens + seqs * (window(spec) - 1),
                  seqs * static_cast<int64_t>(c.max_model_len), seqs * workspace_size(spec, c)});
    BufferPlan p(kBufferNames);
    p.set(kBufCuQ, buffer_bytes("prefill_sliding_window_chunk_cu_seq_lens_q", {2 * seqs, i32}));
    p.set(kBufCuK, buffer_bytes("prefill_sliding_window_chunk_cu_seq_lens_k", {2 * seqs, i32}));
    p.set(kBufStarts, buffer_bytes("prefill_sliding_window_chunk_starts", {seqs, i32}));
    p.set(kBufTokenToSeq, buffer_bytes("prefill_sliding_window_chunk_token_to_seq", {rows, i32}));
    p.set(kBufPlan, buffer_bytes("the sliding-window plan", {3, seqs, i32}));
    p.set(kBufBound, buffer_bytes("seq_lens_cpu_upper_bound", {seqs, i32}));
    p.set(kBufLists, buffer_bytes("the sliding-window plan", {kListCount, seqs, i32}),
          /*host=*/true);
    p.set(kBufBoundStaging, buffer_bytes("seq_lens_cpu_upper_bound", {seqs, i32}),
          /*host=*/true);
    return appended(std::move(r), p);
  }

 protected:
  void check_batch(const CommonMetadata& c, const ops::BatchSplit& s, bool) override {
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    if (np == 0) return;
    if (dcp() > 1)
      fail(Status::kUnsupported, kDots3Note.name,
           ": Dots3 NOTE SWA prefill does not support decode context parallelism "
           "(config->decode_context_parallel_size=", dcp(), ", ", np, " prefills)");
    plan(c, nd, np, ops::SwaChunkLists{});  // refuses a request wider than the workspace
  }

  void build_decode(const MlaDecode& d, const ops::Exec&) override {
    metadata().set_int(decode_field(kDecodeQueryLen), d.common.query_len(0));
  }

  void finish_build(const CommonMetadata& c, const ops::BatchSplit& s, int64_t,
                    const ops::Exec& exec) override {
    const int64_t nd = s.num_decodes, np = s.num_prefills;
    Metadata& m = metadata();
    for (size_t f = 0; f < mla::kChunkFieldCount; ++f) m.set_none(at(mla::ChunkField(f)));
    if (np == 0) return;
    const int64_t seqs = config().max_num_seqs;
    int32_t* lists = buffers_.as<int32_t>(kOwnBuffers + kBufLists);
    auto list = [&](HostList l) { return lists + l * seqs; };
    ops::SwaChunkLists out;
    out.req_start = list(kListReqStart);
    out.req_end = list(kListReqEnd);
    out.token_end = list(kListTokenEnd);
    out.query_start = list(kListQueryStart);
    out.query_end = list(kListQueryEnd);
    out.num_kv_tokens = list(kListNumKv);
    out.max_seq_len_q = list(kListMaxQ);
    out.max_seq_len_k = list(kListMaxK);
    const int64_t chunks = plan(c, nd, np, out);
    const int64_t tokens = out.token_end[chunks - 1];

    // The tensors: from the plan's bounds, or with decodes in the batch from seq_lens itself.
    ops::SwaChunkTensorArgs a;
    a.num_chunks = chunks;
    a.num_tokens = tokens;
    a.window = static_cast<int32_t>(window(spec()));
    if (exec.on_cuda) {
      a.query_start_loc = c.query_start_loc->as<const int32_t>() + nd;
      int32_t* dev_plan = buffers_.as<int32_t>(kOwnBuffers + kBufPlan);
      copy_i32_into_buffer(exec, lists, true, 3 * seqs, dev_plan);
      a.req_start = dev_plan + kListReqStart * seqs;
      a.req_end = dev_plan + kListReqEnd * seqs;
      a.token_end = dev_plan + kListTokenEnd * seqs;
      if (nd > 0) {
        a.seq_lens = c.seq_lens->as<const int32_t>() + nd;
      } else {
        int32_t* staging = buffers_.as<int32_t>(kOwnBuffers + kBufBoundStaging);
        int32_t* bound = buffers_.as<int32_t>(kOwnBuffers + kBufBound);
        std::copy(c.seq_lens_upper_bound() + nd, c.seq_lens_upper_bound() + nd + np, staging);
        copy_i32_into_buffer(exec, staging, true, np, bound);
        a.seq_lens = bound;
      }
    } else {
      a.query_start_loc = c.qsl_host + nd;
      a.req_start = out.req_start;
      a.req_end = out.req_end;
      a.token_end = out.token_end;
      a.seq_lens = (nd > 0 ? c.seq_lens->as<const int32_t>() : c.seq_lens_upper_bound()) + nd;
    }
    a.cu_seq_lens_q = buffers_.as<int32_t>(kOwnBuffers + kBufCuQ);
    a.cu_seq_lens_k = buffers_.as<int32_t>(kOwnBuffers + kBufCuK);
    a.starts = buffers_.as<int32_t>(kOwnBuffers + kBufStarts);
    a.token_to_seq = buffers_.as<int32_t>(kOwnBuffers + kBufTokenToSeq);
    ops::swa_prefill_chunk_tensors(exec, a);

    m.set_int(tail_field(kSwaNumChunks), chunks);
    static constexpr std::pair<SwaField, HostList> kLists[] = {
        {kSwaReqStart, kListReqStart},   {kSwaReqEnd, kListReqEnd},
        {kSwaQueryStart, kListQueryStart}, {kSwaQueryEnd, kListQueryEnd},
        {kSwaNumKvTokens, kListNumKv},   {kSwaMaxSeqLenQ, kListMaxQ},
        {kSwaMaxSeqLenK, kListMaxK}};
    for (const auto& [f, l] : kLists) m.set_tensor(tail_field(f), host_list(list(l), chunks), true);
    m.set_tensor(tail_field(kSwaCuSeqLensQ), device_vector(kOwnBuffers + kBufCuQ, np + chunks),
                 true);
    m.set_tensor(tail_field(kSwaCuSeqLensK), device_vector(kOwnBuffers + kBufCuK, np + chunks),
                 true);
    m.set_tensor(tail_field(kSwaStarts), device_vector(kOwnBuffers + kBufStarts, np), true);
    m.set_tensor(tail_field(kSwaTokenToSeq), device_vector(kOwnBuffers + kBufTokenToSeq, tokens),
                 true);
  }

 private:
  /// The chunks of the prefills (rows [nd, nd + np)) from their host bounds.
  int64_t plan(const CommonMetadata& c, int64_t nd, int64_t np, const ops::SwaChunkLists& out) {
    return ops::swa_prefill_chunk_plan(c.qsl_host + nd, c.seq_lens_upper_bound() + nd, np,
                                       static_cast<int32_t>(window(spec())), workspace(), out);
  }
};

}  // namespace

extern const BackendDescriptor kDots3NoteTritonMlaBackend;
const BackendDescriptor kDots3NoteTritonMlaBackend =
    mla_descriptor<kDots3Note, Dots3NoteBuilder>();

}  // namespace attn::backends
