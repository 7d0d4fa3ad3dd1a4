// ROCM_AITER_FA (vLLM 0.33's AiterFlashAttentionMetadataBuilder,
// v1/attention/backends/rocm_aiter_fa.py) on libattn's host path (a ROCm runtime builds host
// metadata and copies it; the CUDA path runs the same ops where a CUDA device serves).
//
// UNIFORM_BATCH; reorder threshold 1 (1 + k with speculative decoding:
// _init_reorder_batch_threshold(1, supports_spec_as_decode=True)); no update_block_table.
// A build splits the batch into decodes, extends and prefills
// (split_decodes_prefills_and_extends at the threshold) and fills vLLM's nested metadata,
// flattened by libattn's rule (`decode_metadata.max_query_len` -> `decode_metadata_max_query_len`;
// every field of a part vLLM leaves None is None):
//  - decode_metadata (decodes): the decodes' longest query and, for one-token decodes with a
//    sliding-window layer, the window-trimmed block table and rebased lengths in persistent
//    (max_num_seqs x (cdiv(window, block) + 1)) / (max_num_seqs) buffers (ops::swa_decode_tables,
//    host and CUDA) with swa_max_seq_len = min(max_seq_len, window + block - 1); else None,
//    None, 0.
//  - prefill_metadata (prefills): longest query and sequence, query_start_loc rebased (a buffer).
//  - extend_metadata (extends): longest query and sequence, query_start_loc rebased (a buffer),
//    and the chunked-context plan vLLM computes on the CPU: max_context_chunk = 32768 //
//    num_extends, num_chunks = cdiv(max context, max_context_chunk), chunk_starts,
//    cu_seq_lens_chunk, token_to_batch, max_seq_lens, total_token_per_batch, and with a sliding
//    window the swa_metadata (swa_cu_seqlens, swa_seq_starts, swa_token_to_batch,
//    swa_max_seqlens, swa_total_tokens). These are host tensors (vLLM's before its copy to the
//    device) in builder-owned host memory that grows with the largest plan seen.
//  - the workspaces (extend_workspace, swa_workspace, the KV-sharing one) are the runtime's
//    scratch memory: None. k_scale / v_scale (fp8 shuffle-layout caches only) and
//    kv_sharing_metadata (layers that share a KV cache) are None: libattn's config describes
//    neither.
// build_for_drafting is vLLM's override: every request a decode, no split, no .cpu(), the decode
// part with the batch's max_query_len and no sliding-window tables. A capture builds.
#include <algorithm>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/exact_seq_lens.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr int64_t kCpTokensPerIter = 32 * 1024;  // _CP_TOKENS_PER_ITER_ROCM

#define CC "extend_metadata_chunk_context_metadata_"
#define SWA CC "swa_metadata_"
#define AITER_FA_FIELDS(X)                                                        \
  X(kNumActualTokens, "num_actual_tokens")                                        \
  X(kQueryStartLoc, "query_start_loc")                                            \
  X(kMaxSeqLen, "max_seq_len")                                                    \
  X(kSeqLens, "seq_lens")                                                         \
  X(kSlotMapping, "slot_mapping")                                                 \
  X(kBlockTable, "block_table")                                                   \
  X(kCausal, "causal")                                                            \
  X(kNumDecodes, "num_decodes")                                                   \
  X(kNumDecodeTokens, "num_decode_tokens")                                        \
  X(kNumPrefills, "num_prefills")                                                 \
  X(kNumExtends, "num_extends")                                                   \
  X(kNumExtendTokens, "num_extend_tokens")                                        \
  X(kDecodeMaxQueryLen, "decode_metadata_max_query_len")                          \
  X(kDecodeSwaBlockTable, "decode_metadata_swa_block_table")                      \
  X(kDecodeSwaSeqLens, "decode_metadata_swa_seq_lens")                            \
  X(kDecodeSwaMaxSeqLen, "decode_metadata_swa_max_seq_len")                       \
  X(kPrefillMaxQueryLen, "prefill_metadata_max_query_len")                        \
  X(kPrefillMaxSeqLen, "prefill_metadata_max_seq_len")                            \
  X(kPrefillQueryStartLoc, "prefill_metadata_query_start_loc")                    \
  X(kExtendMaxQueryLen, "extend_metadata_max_query_len")                          \
  X(kExtendMaxSeqLen, "extend_metadata_max_seq_len")                              \
  X(kExtendQueryStartLoc, "extend_metadata_query_start_loc")                      \
  X(kCcWorkspace, CC "workspace")                                                 \
  X(kCcCuSeqLensChunk, CC "cu_seq_lens_chunk")                                    \
  X(kCcChunkStarts, CC "chunk_starts")                                            \
  X(kCcTokenToBatch, CC "token_to_batch")                                         \
  X(kCcMaxSeqLens, CC "max_seq_lens")                                             \
  X(kCcNumChunks, CC "num_chunks")                                                \
  X(kCcTotalTokenPerBatch, CC "total_token_per_batch")                            \
  X(kSwaCuSeqlens, SWA "swa_cu_seqlens")                                          \
  X(kSwaSeqStarts, SWA "swa_seq_starts")                                          \
  X(kSwaTokenToBatch, SWA "swa_token_to_batch")                                   \
  X(kSwaMaxSeqlens, SWA "swa_max_seqlens")                                        \
  X(kSwaTotalTokens, SWA "swa_total_tokens")                                      \
  X(kSwaWorkspace, SWA "swa_workspace")                                           \
  X(kKScale, "k_scale")                                                           \
  X(kVScale, "v_scale")                                                           \
  X(kKvSharingMetadata, "kv_sharing_metadata")
ATTN_NAMED_LIST(Field, AITER_FA_FIELDS);
#undef SWA
#undef CC

#define AITER_FA_BUFFERS(X)                                                      \
  X(kBufPrefillQsl, "prefill_query_start_loc")                                   \
  X(kBufExtendQsl, "extend_query_start_loc")                                     \
  X(kBufSwaBlockTable, "swa_block_table") X(kBufSwaSeqLens, "swa_seq_lens")      \
  X(kBufExactLensCpu, "exact_seq_lens_cpu")
ATTN_NAMED_LIST(Buffer, AITER_FA_BUFFERS);

/// vLLM's aot_sliding_window[0] (the layers' one window_left other than -1), or -1 for None.
int32_t aot_window_left(const BuilderConfig& c) {
  std::set<int32_t> lefts;
  for (const PerLayerParams& l : c.layers)
    if (l.window_left != -1) lefts.insert(l.window_left);
  if (lefts.size() > 1)
    fail(Status::kUnsupported, "ROCM_AITER_FA: config->layers has ", lefts.size(),
         " different sliding windows (window_left ", *lefts.begin(), " and ", *lefts.rbegin(),
         "); Aiter Flash ATTENTION can only support one valid sliding window!");
  return lefts.empty() ? -1 : *lefts.begin();
}

int64_t window_blocks(int32_t window_left, int32_t block_size) {
  return window_left < 0 ? 0 : (window_left + 1 + block_size - 1) / block_size + 1;
}

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t seqs = c.max_num_seqs;
  const int64_t wb = window_blocks(aot_window_left(c), spec.block_size);
  BufferPlan p(kBufferNames);
  p.set(kBufPrefillQsl, buffer_bytes("prefill_query_start_loc", {seqs + 1, 4}));
  p.set(kBufExtendQsl, buffer_bytes("extend_query_start_loc", {seqs + 1, 4}));
  p.set(kBufSwaBlockTable, wb > 0 ? buffer_bytes("swa_block_table", {seqs, wb, 4}) : 0);
  p.set(kBufSwaSeqLens, wb > 0 ? buffer_bytes("swa_seq_lens", {seqs, 4}) : 0);
  p.set(kBufExactLensCpu, buffer_bytes("exact_seq_lens_cpu", {seqs, 4}), /*host=*/true);
  return p.requests();
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

class RocmAiterFaBuilder final : public Builder {
 public:
  RocmAiterFaBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                     const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_("ROCM_AITER_FA", config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size),
        window_left_(aot_window_left(config)),
        window_blocks_(window_blocks(window_left_, spec.block_size)) {
    init_metadata(name_vector(kFieldNames));
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/true);
  }

 protected:
  void do_build(int64_t, const CommonMetadata& c, bool, const ops::Exec& exec) override {
    const int32_t threshold = *reorder_batch_threshold();
    const int32_t* qsl = c.qsl_host;
    // vLLM splits on seq_lens_cpu_upper_bound and then copies the exact seq_lens to the host
    // when there are prefills or extends (the split is the same on either); the exact lengths
    // are read only then.
    const int32_t* lens = nullptr;
    ops::BatchSplit s;
    if (c.max_query_len <= threshold) {
      s.num_decodes = c.num_reqs;
      s.num_decode_tokens = c.num_actual_tokens;
    } else {
      // the exact lengths, checked: the host mirror, or the device values copied and checked
      // as a mirror (they size the chunked-context plan below)
      lens = exact_host_seq_lens(c, buffers_.as<int32_t>(kBufExactLensCpu));
      s = ops::split_decodes_prefills_and_extends(qsl, lens, c.num_reqs, c.num_actual_tokens,
                                                  c.max_query_len, threshold);
      if (s.num_prefills == 0 && s.num_extends == 0) lens = nullptr;
    }
    const int64_t nd = s.num_decodes, ne = s.num_extends, np = s.num_prefills;
    set_top(c, s);

    if (nd > 0) {
      int64_t dmax = 0;
      for (int64_t r = 0; r < nd; ++r) dmax = std::max<int64_t>(dmax, qsl[r + 1] - qsl[r]);
      m().set_int(kDecodeMaxQueryLen, dmax);
      if (dmax == 1 && window_blocks_ > 0 && nd <= config().max_num_seqs)
        swa_decode(c, nd, exec);
      else
        no_swa_decode();
    } else {
      none({kDecodeMaxQueryLen, kDecodeSwaBlockTable, kDecodeSwaSeqLens, kDecodeSwaMaxSeqLen});
    }

    if (np > 0) {
      const int64_t first = nd + ne;
      m().set_int(kPrefillMaxQueryLen, max_query(qsl, first, c.num_reqs));
      m().set_int(kPrefillMaxSeqLen, max_of(lens, first, c.num_reqs));
      m().set_tensor(kPrefillQueryStartLoc, rebased_qsl(c, exec, kBufPrefillQsl, first, np), true);
    } else {
      none({kPrefillMaxQueryLen, kPrefillMaxSeqLen, kPrefillQueryStartLoc});
    }

    if (ne > 0)
      extend(c, exec, lens, nd, ne);
    else
      none({kExtendMaxQueryLen, kExtendMaxSeqLen, kExtendQueryStartLoc, kCcWorkspace,
            kCcCuSeqLensChunk, kCcChunkStarts, kCcTokenToBatch, kCcMaxSeqLens, kCcNumChunks,
            kCcTotalTokenPerBatch});
    if (ne == 0 || window_blocks_ == 0)
      none({kSwaCuSeqlens, kSwaSeqStarts, kSwaTokenToBatch, kSwaMaxSeqlens, kSwaTotalTokens,
            kSwaWorkspace});
  }

  /// vLLM's build_for_drafting override: all decodes, the batch's max_query_len, no tables.
  void do_drafting(const CommonMetadata& c, int32_t, const ops::Exec&) override {
    ops::BatchSplit s;
    s.num_decodes = c.num_reqs;
    s.num_decode_tokens = c.num_actual_tokens;
    set_top(c, s);
    m().set_int(kDecodeMaxQueryLen, c.max_query_len);
    no_swa_decode();
    for (size_t i = kPrefillMaxQueryLen; i <= kSwaWorkspace; ++i) m().set_none(i);
  }

 private:
  Metadata& m() { return metadata(); }

  void none(std::initializer_list<size_t> fields) {
    for (size_t f : fields) m().set_none(f);
  }

  void no_swa_decode() {
    m().set_none(kDecodeSwaBlockTable);
    m().set_none(kDecodeSwaSeqLens);
    m().set_int(kDecodeSwaMaxSeqLen, 0);
  }

  void set_top(const CommonMetadata& c, const ops::BatchSplit& s) {
    Metadata& md = m();
    md.set_int(kNumActualTokens, c.num_actual_tokens);
    md.set_tensor(kQueryStartLoc, *c.query_start_loc);
    md.set_int(kMaxSeqLen, c.max_seq_len);
    md.set_tensor(kSeqLens, *c.seq_lens);
    md.set_tensor(kSlotMapping, *c.slot_mapping);
    md.set_tensor(kBlockTable, *c.block_table_tensor);
    if (c.causal_per_request)
      md.set_tensor(kCausal, *c.causal_per_request);
    else
      md.set_bool(kCausal, c.causal);
    md.set_int(kNumDecodes, s.num_decodes);
    md.set_int(kNumDecodeTokens, s.num_decode_tokens);
    md.set_int(kNumPrefills, s.num_prefills);
    md.set_int(kNumExtends, s.num_extends);
    md.set_int(kNumExtendTokens, s.num_extend_tokens);
    md.set_none(kKScale);
    md.set_none(kVScale);
    md.set_none(kKvSharingMetadata);
  }

  static int64_t max_query(const int32_t* qsl, int64_t from, int64_t to) {
    int64_t v = 0;
    for (int64_t r = from; r < to; ++r) v = std::max<int64_t>(v, qsl[r + 1] - qsl[r]);
    return v;
  }
  static int64_t max_of(const int32_t* a, int64_t from, int64_t to) {
    int64_t v = 0;
    for (int64_t r = from; r < to; ++r) v = std::max<int64_t>(v, a[r]);
    return v;
  }

  /// query_start_loc[first:first + n + 1] - query_start_loc[first], in buffer `buf`.
  Tensor rebased_qsl(const CommonMetadata& c, const ops::Exec& exec, size_t buf, int64_t first,
                     int64_t n) {
    const int32_t* src = (exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host);
    ops::MlaPrefillOut out;
    out.query_start_loc = buffers_.as<int32_t>(buf);
    ops::mla_prefill_metadata(exec, src + first, n, out);
    return make_vector(buffers_.get(buf), config().device, kInt32, n + 1);
  }

  void swa_decode(const CommonMetadata& c, int64_t nd, const ops::Exec& exec) {
    const Tensor& bt = *c.block_table_tensor;
    const int32_t window = window_left_ + 1;
    const Device d = config().device;
    int32_t* table = buffers_.as<int32_t>(kBufSwaBlockTable);
    int32_t* seq = buffers_.as<int32_t>(kBufSwaSeqLens);
    ops::swa_decode_tables(exec, bt.as<const int32_t>(), bt.strides[0], bt.shape[1],
                           c.seq_lens->as<const int32_t>(), nd, window, spec().block_size,
                           window_blocks_, table, seq);
    m().set_tensor(kDecodeSwaBlockTable,
                   make_matrix(table, d, kInt32, nd, window_blocks_, window_blocks_), true);
    m().set_tensor(kDecodeSwaSeqLens, make_vector(seq, d, kInt32, nd), true);
    m().set_int(kDecodeSwaMaxSeqLen,
                std::min<int64_t>(c.max_seq_len, window + spec().block_size - 1));
  }

  /// The extend part: vLLM computes it on the CPU from the exact host lengths.
  void extend(const CommonMetadata& c, const ops::Exec& exec, const int32_t* lens, int64_t nd,
              int64_t ne) {
    const int32_t* qsl = c.qsl_host;
    m().set_int(kExtendMaxQueryLen, max_query(qsl, nd, nd + ne));
    m().set_int(kExtendMaxSeqLen, max_of(lens, nd, nd + ne));
    m().set_tensor(kExtendQueryStartLoc, rebased_qsl(c, exec, kBufExtendQsl, nd, ne), true);
    m().set_none(kCcWorkspace);
    std::vector<int64_t> ctx(static_cast<size_t>(ne));
    int64_t max_ctx = 0;
    for (int64_t i = 0; i < ne; ++i) {
      ctx[i] = static_cast<int64_t>(lens[nd + i]) - (qsl[nd + i + 1] - qsl[nd + i]);
      max_ctx = std::max(max_ctx, ctx[i]);
    }
    const int64_t mcc = kCpTokensPerIter / ne;
    if (mcc == 0)
      fail(Status::kUnsupported, "ROCM_AITER_FA: ", ne, " extend requests exceed the ",
           kCpTokensPerIter, "-token chunked-context workspace (vLLM divides by zero)");
    const int64_t chunks = cdiv(max_ctx, mcc);
    const int64_t w = ne + 1;
    cu_.assign(static_cast<size_t>(chunks * w), 0);
    starts_.assign(static_cast<size_t>(chunks * ne), 0);
    max_lens_.assign(static_cast<size_t>(chunks), 0);
    totals_.assign(static_cast<size_t>(chunks), 0);
    int64_t max_cum = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      const int64_t start = k * mcc;
      int64_t mx = 0;
      for (int64_t i = 0; i < ne; ++i) {
        starts_[k * ne + i] = static_cast<int32_t>(start);
        const int64_t len = std::max<int64_t>(std::min(ctx[i], start + mcc) - start, 0);
        cu_[k * w + i + 1] = static_cast<int32_t>(cu_[k * w + i] + len);
        mx = std::max(mx, len);
      }
      max_lens_[k] = mx;
      totals_[k] = cu_[k * w + ne];
      max_cum = std::max<int64_t>(max_cum, totals_[k]);
    }
    // token_to_batch[k][t]: how many of cu[k][1..ne] are <= t (cumsum of the matches)
    t2b_.assign(static_cast<size_t>(chunks * max_cum), 0);
    for (int64_t k = 0; k < chunks; ++k) {
      int64_t count = 0, i = 1;
      for (int64_t t = 0; t < max_cum; ++t) {
        for (; i <= ne && cu_[k * w + i] <= t; ++i) ++count;
        t2b_[k * max_cum + t] = count;
      }
    }
    const Device host{};
    m().set_tensor(kCcCuSeqLensChunk, make_matrix(cu_.data(), host, kInt32, chunks, w, w), true);
    m().set_tensor(kCcChunkStarts, make_matrix(starts_.data(), host, kInt32, chunks, ne, ne),
                   true);
    m().set_tensor(kCcTokenToBatch,
                   make_matrix(t2b_.data(), host, kInt64, chunks, max_cum, max_cum), true);
    m().set_tensor(kCcMaxSeqLens, make_vector(max_lens_.data(), host, kInt64, chunks), true);
    m().set_int(kCcNumChunks, chunks);
    m().set_tensor(kCcTotalTokenPerBatch, make_vector(totals_.data(), host, kInt64, chunks),
                   true);
    if (window_blocks_ > 0) swa_extend(lens, qsl, nd, ne);
  }

  void swa_extend(const int32_t* lens, const int32_t* qsl, int64_t nd, int64_t ne) {
    swa_cu_.assign(static_cast<size_t>(ne + 1), 0);
    swa_starts_.assign(static_cast<size_t>(ne), 0);
    int64_t mx = 0;
    std::vector<int32_t> swa_len(static_cast<size_t>(ne));
    for (int64_t i = 0; i < ne; ++i) {
      const int64_t q = qsl[nd + i + 1] - qsl[nd + i];
      const int64_t l = std::min<int64_t>(lens[nd + i], q + window_left_ + 1);
      swa_len[i] = static_cast<int32_t>(l);
      swa_cu_[i + 1] = static_cast<int32_t>(swa_cu_[i] + l);
      swa_starts_[i] = static_cast<int32_t>(lens[nd + i] - l);
      mx = std::max(mx, l);
    }
    const int64_t total = swa_cu_[ne];
    swa_t2b_.assign(static_cast<size_t>(total), 0);
    for (int64_t i = 0, t = 0; i < ne; ++i)
      for (int32_t j = 0; j < swa_len[i]; ++j) swa_t2b_[t++] = static_cast<int32_t>(i);
    const Device host{};
    m().set_tensor(kSwaCuSeqlens, make_vector(swa_cu_.data(), host, kInt32, ne + 1), true);
    m().set_tensor(kSwaSeqStarts, make_vector(swa_starts_.data(), host, kInt32, ne), true);
    m().set_tensor(kSwaTokenToBatch, make_vector(swa_t2b_.data(), host, kInt32, total), true);
    m().set_int(kSwaMaxSeqlens, mx);
    m().set_int(kSwaTotalTokens, total);
    m().set_none(kSwaWorkspace);
  }

  PersistentBuffers buffers_;
  int32_t window_left_;
  int64_t window_blocks_;
  // the chunked-context plan (host memory, grown to the largest plan seen)
  std::vector<int32_t> cu_, starts_, swa_cu_, swa_starts_, swa_t2b_;
  std::vector<int64_t> t2b_, max_lens_, totals_;
};

}  // namespace

extern const BackendDescriptor kRocmAiterFaBackend;
const BackendDescriptor kRocmAiterFaBackend{
    "ROCM_AITER_FA",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    0,
    fixed_cudagraph_support<kCgUniformBatch>,
    [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
      check_spec_kind(d, spec);
      // AiterFlashAttentionBackend.customize_spec
      if (spec.block_size % 16 != 0)
        fail(Status::kUnsupported, d.name, ": kv_cache_spec->block_size=", spec.block_size,
             " is not a multiple of 16 (ROCm's gather kernels read 16-token units)");
      aot_window_left(config);
    },
    buffer_plan_of<plan>,
    create_builder_of<RocmAiterFaBuilder>,
};

}  // namespace attn::backends
