// FLASHINFER: the metadata of vLLM's FlashInferMetadataBuilder.build(). vLLM hands the planned
// FlashInfer wrappers (prefill, decode, cascade) to its forward pass; libattn cannot run
// FlashInfer's plan(), so it returns every input plan() reads (host indptrs, device page
// indices, last-page lengths, heads, dtypes, hyperparameters) and the TRT-LLM prefill/decode
// fields, in vLLM's names, flattened with "prefill_"/"decode_" prefixes.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "backends/field_list.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/per_layer_params.h"
#include "core/persistent_buffers.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

constexpr const char* kName = "FLASHINFER";

#define FLASHINFER_FIELDS(X)                                             \
  X(kNumActualTokens, "num_actual_tokens")                               \
  X(kSlotMapping, "slot_mapping")                                        \
  X(kQDataType, "q_data_type")                                           \
  X(kNumDecodes, "num_decodes")                                          \
  X(kNumDecodeTokens, "num_decode_tokens")                               \
  X(kNumPrefills, "num_prefills")                                        \
  X(kNumPrefillTokens, "num_prefill_tokens")                             \
  X(kCausal, "causal")                                                   \
  X(kPrefillUseTrtllm, "prefill_use_trtllm")                             \
  X(kDecodeUseTrtllm, "decode_use_trtllm")                               \
  /* plan() inputs shared by the paths */                                \
  X(kPagedKvIndptr, "paged_kv_indptr")                                   \
  X(kPagedKvIndptrCpu, "paged_kv_indptr_cpu")                            \
  X(kPagedKvIndices, "paged_kv_indices")                                 \
  X(kPagedKvLastPageLen, "paged_kv_last_page_len")                       \
  X(kPagedKvLastPageLenCpu, "paged_kv_last_page_len_cpu")                \
  X(kNumQoHeads, "num_qo_heads")                                         \
  X(kNumKvHeads, "num_kv_heads")                                         \
  X(kHeadDim, "head_dim")                                                \
  X(kPageSize, "page_size")                                              \
  X(kKvDataType, "kv_data_type")                                         \
  X(kODataType, "o_data_type")                                           \
  X(kSmScale, "sm_scale")                                                \
  X(kWindowLeft, "window_left")                                          \
  X(kLogitsSoftCap, "logits_soft_cap")                                   \
  X(kPrefillFixedSplitSize, "prefill_fixed_split_size")                  \
  X(kDecodeFixedSplitSize, "decode_fixed_split_size")                    \
  X(kDisableSplitKv, "disable_split_kv")                                 \
  /* prefill: FlashInfer's plan, or TRTLLMPrefill */                     \
  X(kPrefillQoIndptrCpu, "prefill_qo_indptr_cpu")                        \
  X(kPrefillPagedKvIndptrCpu, "prefill_paged_kv_indptr_cpu")             \
  X(kPrefillPagedKvLastPageLenCpu, "prefill_paged_kv_last_page_len_cpu") \
  X(kPrefillBlockTables, "prefill_block_tables")                         \
  X(kPrefillSeqLens, "prefill_seq_lens")                                 \
  X(kPrefillCumSeqLensQ, "prefill_cum_seq_lens_q")                       \
  X(kPrefillCumSeqLensKv, "prefill_cum_seq_lens_kv")                     \
  X(kPrefillMaxQLen, "prefill_max_q_len")                                \
  X(kPrefillMaxSeqLen, "prefill_max_seq_len")                            \
  /* decode: FlashInfer's plan, or TRTLLMDecode */                       \
  X(kDecodePagedKvIndptrCpu, "decode_paged_kv_indptr_cpu")               \
  X(kDecodePagedKvLastPageLenCpu, "decode_paged_kv_last_page_len_cpu")   \
  X(kDecodeSeqLensCpu, "decode_seq_lens_cpu")                            \
  X(kDecodeNumQoHeads, "decode_num_qo_heads")                            \
  X(kDecodeUseCudagraph, "decode_use_cudagraph")                         \
  X(kDecodeBlockTables, "decode_block_tables")                           \
  X(kDecodeSeqLens, "decode_seq_lens")                                   \
  X(kDecodeMaxSeqLen, "decode_max_seq_len")                              \
  X(kDecodeQLenPerReq, "decode_q_len_per_req")                           \
  /* the two-level cascade plan: libattn's extension (vLLM 0.33 removed  \
     cascade attention), only in a build with common_prefix_len > 0 */   \
  X(kUseCascade, "use_cascade")                                          \
  X(kQoIndptrCpu, "qo_indptr_cpu")                                       \
  X(kSharedQoIndptrCpu, "shared_qo_indptr_cpu")                          \
  X(kSharedKvPageIndptrCpu, "shared_kv_page_indptr_cpu")                 \
  X(kSharedKvPageIndices, "shared_kv_page_indices")                      \
  X(kSharedKvLastPageLenCpu, "shared_kv_last_page_len_cpu")
ATTN_NAMED_LIST(Field, FLASHINFER_FIELDS);
constexpr size_t kPlainFieldCount = kUseCascade;  // the fields of a build without cascade

#define FLASHINFER_BUFFERS(X)                                \
  X(kBufIndptr, "paged_kv_indptr")                           \
  X(kBufIndices, "paged_kv_indices")                         \
  X(kBufLastPageLen, "paged_kv_last_page_len")               \
  X(kBufCumSeqLensQ, "prefill_cum_seq_lens_q")               \
  X(kBufCumSeqLensKv, "prefill_cum_seq_lens_kv")             \
  X(kBufCascadeCu, "cascade cu_prefix_query_lens")           \
  X(kBufCascadePrefix, "cascade prefix_kv_lens")             \
  X(kBufCascadeSuffix, "cascade suffix_kv_lens")             \
  X(kBufIndptrCpu, "paged_kv_indptr_cpu")                    \
  X(kBufLastPageLenCpu, "paged_kv_last_page_len_cpu")        \
  X(kBufPrefillQoIndptrCpu, "prefill_qo_indptr_cpu")         \
  X(kBufSharedQoIndptrCpu, "shared_qo_indptr_cpu")           \
  X(kBufSharedKvPageIndptrCpu, "shared_kv_page_indptr_cpu")  \
  X(kBufSharedLastPageLenCpu, "shared_kv_last_page_len_cpu") \
  X(kBufDecodeSeqLensCpu, "decode_seq_lens_cpu")             \
  X(kBufHostLens, "host seq_lens scratch")                   \
  X(kBufSuffixCpu, "host suffix lengths")
ATTN_NAMED_LIST(Buffer, FLASHINFER_BUFFERS);

std::vector<BufferRequest> plan(const KvCacheSpec& spec, const BuilderConfig& c) {
  const auto reqs = static_cast<size_t>(c.max_num_seqs);
  const size_t pages =
      buffer_bytes("paged_kv_indices", {c.max_num_seqs, c.max_blocks_per_req(spec.block_size)});
  const size_t i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufIndptr, (reqs + 1) * i32);
  p.set(kBufIndices, pages * i32);
  p.set(kBufLastPageLen, reqs * i32);
  p.set(kBufCumSeqLensQ, (reqs + 1) * i32);
  p.set(kBufCumSeqLensKv, (reqs + 1) * i32);
  p.set(kBufCascadeCu, 2 * i32);
  p.set(kBufCascadePrefix, i32);
  p.set(kBufCascadeSuffix, reqs * i32);
  p.set(kBufIndptrCpu, (reqs + 1) * i32, true);
  p.set(kBufLastPageLenCpu, reqs * i32, true);
  p.set(kBufPrefillQoIndptrCpu, (reqs + 1) * i32, true);
  p.set(kBufSharedQoIndptrCpu, 2 * i32, true);
  p.set(kBufSharedKvPageIndptrCpu, 2 * i32, true);
  p.set(kBufSharedLastPageLenCpu, i32, true);
  p.set(kBufDecodeSeqLensCpu, reqs * i32, true);
  p.set(kBufHostLens, reqs * i32, true);
  p.set(kBufSuffixCpu, reqs * i32, true);
  return p.requests();
}

int32_t capability_major(const BuilderConfig& c) { return resolved_device_capability(c) / 10; }

/// vLLM's can_use_trtllm_attention(num_qo_heads, num_kv_heads) for this config: not forced off
/// (config->use_trtllm_attention != 0), not batch-invariant, a 10.x device (SM100 family; the
/// TRT-LLM kernels are assumed installed), and num_qo_heads % num_kv_heads == 0.
bool flashinfer_can_use_trtllm(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.use_trtllm_attention == 0) return false;
  const bool supported = !c.batch_invariant && capability_major(c) == 10;
  return supported && c.num_attention_heads % spec.num_kv_heads == 0;
}

bool is_fp8(int32_t dtype) { return dtype == kKvDtypeFp8E4m3 || dtype == kKvDtypeFp8E5m2; }

/// The KV cache's element type as FlashInfer sees it: the fp8 cache dtype, else the spec's.
int32_t kv_cache_dtype(const KvCacheSpec& spec, const BuilderConfig& c) {
  return is_fp8(c.cache_dtype) ? c.cache_dtype : spec.dtype;
}

/// The global hyperparameters: the first layer's (vLLM's infer_global_hyperparameters), or,
/// without per-layer parameters, the spec's window, no soft cap, scale head_size^-0.5, no sinks.
GlobalHyperparameters hyperparameters(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (!c.layers.empty()) return infer_global_hyperparameters(c.layers);
  GlobalHyperparameters g;
  g.params.window_left = spec.kind == kKvSlidingWindow ? spec.sliding_window - 1 : -1;
  g.params.sm_scale = 1.0 / std::sqrt(static_cast<double>(spec.head_size));
  g.has_same_window_lefts = g.has_same_all_params = true;
  return g;
}

void check_supported(const KvCacheSpec& spec, const BuilderConfig& c) {
  if (spec.head_size != 64 && spec.head_size != 128 && spec.head_size != 256)
    fail(Status::kUnsupported, "FLASHINFER supports head sizes 64, 128 and 256, got "
                               "kv_cache_spec->head_size=", spec.head_size);
  if (spec.block_size != 16 && spec.block_size != 32 && spec.block_size != 64)
    fail(Status::kUnsupported, "FLASHINFER supports block sizes 16, 32 and 64, got "
                               "kv_cache_spec->block_size=", spec.block_size);
  if (spec.head_size == 256 && spec.block_size == 16 && capability_major(c) == 10)
    fail(Status::kUnsupported, "FLASHINFER with head_size 256 needs a block size other than 16 on "
                               "compute capability 10.x (FlashInfer issue 1993)");
  if (c.model_dtype_for(spec) != kKvDtypeFloat16 && c.model_dtype_for(spec) != kKvDtypeBfloat16)
    fail(Status::kUnsupported, "FLASHINFER runs float16 and bfloat16 models, got ",
         kv_dtype_name(c.model_dtype_for(spec)), " (config->model_dtype, else kv_cache_spec->dtype)");
  if (!is_fp8(c.cache_dtype) && c.model_dtype != kKvDtypeAuto && c.model_dtype != spec.dtype)
    invalid("kv_cache_spec->dtype=", kv_dtype_name(spec.dtype), " differs from config->model_dtype=",
            kv_dtype_name(c.model_dtype), " with a non-fp8 KV cache");
  const bool trtllm = flashinfer_can_use_trtllm(spec, c) && !c.kv_transfer_enabled;
  if (hyperparameters(spec, c).params.has_sinks && !trtllm)
    fail(Status::kUnsupported, "FLASHINFER supports attention sinks only on the TRT-LLM path "
                               "(compute capability 10.x, config->use_trtllm_attention != 0, no "
                               "KV transfer)");
}

struct Split {
  int64_t num_decodes, num_prefills, num_decode_tokens, num_prefill_tokens;
};

class FlashInferBuilder final : public Builder {
 public:
  FlashInferBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                    const BuilderConfig& config)
      : Builder(std::move(backend), spec, config),
        buffers_(kName, config.device, plan(spec, config), config.allocator,
                 config.workspace, config.workspace_size) {
    init_metadata(name_vector(kFieldNames, kPlainFieldCount));
    init_cascade_metadata(name_vector(kFieldNames));
    const BuilderConfig& c = this->config();
    max_num_pages_ = static_cast<int64_t>(c.max_num_seqs) * c.max_blocks_per_req(spec.block_size);
    if (c.batch_invariant) {
      decode_fixed_split_size_ = 2048;
      prefill_fixed_split_size_ = 4096;
      disable_split_kv_ = true;
    }
    enable_cuda_graph_ = has_full_cudagraphs(c.cudagraph_mode);
    decode_cudagraph_max_bs_ =
        static_cast<int64_t>(1 + c.num_speculative_tokens) * c.max_num_seqs;
    // vLLM's max_cudagraph_capture_size is always resolved: the largest capture size.
    const std::vector<int32_t> sizes = c.capture_sizes();
    const int64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
    if (c.max_cudagraph_capture_size > 0 || largest > 0)
      decode_cudagraph_max_bs_ = std::min<int64_t>(
          decode_cudagraph_max_bs_, c.max_cudagraph_capture_size > 0 ? c.max_cudagraph_capture_size : largest);
    kv_cache_dtype_ = kv_cache_dtype(spec, c);
    model_dtype_ = c.model_dtype_for(spec);
    // Resolved once: with device_capability 0 (auto) it is a device query, not for every build.
    capability_major_ = capability_major(c);
    can_use_trtllm_ = flashinfer_can_use_trtllm(spec, c) && !c.kv_transfer_enabled;
    q_data_type_ = can_use_trtllm_ && !c.disable_flashinfer_q_quantization ? kv_cache_dtype_ : model_dtype_;
    init_reorder_batch_threshold(1, /*supports_spec_as_decode=*/can_use_trtllm_);
    hyper_ = hyperparameters(spec, c);
  }

 protected:
  void do_build(int64_t cpl, const CommonMetadata& c, bool /*fast_build: unused by vLLM*/,
                const ops::Exec& exec) override {
    const BuilderConfig& cfg = config();
    const int32_t ps = spec().block_size;
    const int64_t n = c.num_reqs;
    const int32_t threshold = reorder_batch_threshold().value_or(1);
    const ops::BatchSplit b =
        ops::split_decodes_and_prefills(c.qsl_host, n, c.num_actual_tokens, c.max_query_len,
                                        threshold, /*require_uniform=*/true, "FLASHINFER");
    const Split s{b.num_decodes, b.num_prefills, b.num_decode_tokens, b.num_prefill_tokens};
    const bool use_cascade = cpl > 0;
    const bool use_dcp = cfg.decode_context_parallel_size > 1;
    const bool prefill_use_trtllm = use_trtllm_prefill();
    const bool decode_use_trtllm = can_use_trtllm_ && !use_dcp;
    const bool all_uses_trtllm = (s.num_prefills == 0 || prefill_use_trtllm) &&
                                 (s.num_decodes == 0 || decode_use_trtllm);
    const bool only_trtllm_decode = s.num_prefills == 0 && s.num_decodes > 0 && decode_use_trtllm;
    if (!all_uses_trtllm) {
      if (hyper_.params.has_sinks)
        fail(Status::kUnsupported, "FLASHINFER supports attention sinks only when every part of "
                                   "the batch runs on TRT-LLM");
      if (!hyper_.has_same_window_lefts)
        fail(Status::kUnsupported, "FLASHINFER needs the same window_left in every layer "
                                   "(vLLM: \"Window left is not the same for all layers\")");
      if (!hyper_.has_same_all_params)
        fail(Status::kUnsupported, "FLASHINFER needs every layer to share window_left, "
                                   "logits_soft_cap, sm_scale and has_sinks");
    }
    const bool needs_seq_lens_cpu = use_dcp || use_cascade || !only_trtllm_decode;
    if (needs_seq_lens_cpu && c.seq_lens_host == nullptr)
      invalid("common->seq_lens_cpu is NULL; FLASHINFER reads the sequence lengths on the host "
              "for this batch (vLLM copies them from the device)");
    if (use_cascade) {
      if (cpl % ps != 0)
        invalid("common_prefix_len=", cpl, " is not a multiple of block_size=", ps,
                " (FlashInfer's cascade needs whole pages)");
      for (int64_t i = 0; i < n; ++i)
        if (c.seq_lens_host[i] <= cpl)
          invalid("common->seq_lens[", i, "]=", c.seq_lens_host[i],
                  " leaves nothing after common_prefix_len=", cpl);
    }
    // Past every check: a refused batch leaves the builder as it was.
    if (!all_uses_trtllm) q_data_type_ = model_dtype_;  // vLLM keeps this for every later build

    Metadata& m = metadata();
    m.reset();
    m.set_int(kNumActualTokens, c.num_actual_tokens);
    m.set_tensor(kSlotMapping, *c.slot_mapping);
    m.set_int(kNumDecodes, s.num_decodes);
    m.set_int(kNumDecodeTokens, s.num_decode_tokens);
    m.set_int(kNumPrefills, s.num_prefills);
    m.set_int(kNumPrefillTokens, s.num_prefill_tokens);
    if (use_cascade) m.set_bool(kUseCascade, true);
    m.set_bool(kCausal, c.causal);
    m.set_int(kQDataType, q_data_type_);
    set_plan_scalars(m);

    const Device d = cfg.device;
    const Device host{};
    const Tensor& bt = *c.block_table_tensor;
    const int32_t* host_lens = c.seq_lens_host;
    if (use_dcp && needs_seq_lens_cpu && s.num_prefills > 0) {
      // vLLM subtracts the prefills' query lengths (their context stays; the new tokens run as a
      // ragged causal pass) before the last-page lengths and the DCP-local lengths.
      auto* adjusted = buffers_.as<int32_t>(kBufHostLens);
      for (int64_t i = 0; i < n; ++i)
        adjusted[i] = static_cast<int32_t>(i < s.num_decodes ? c.seq_lens_host[i]
                                                             : c.seq_lens_host[i] - c.query_len(i));
      host_lens = adjusted;
    }

    int64_t num_pages = 0;
    if (use_cascade || !only_trtllm_decode) {
      // Device: indptr, indices, last_page_len in one pass. With a shared prefix of C pages each
      // request keeps its pages [C, n): the suffix lengths and the table from column C.
      // The host path reads the validated host lengths (a mirror may stand for seq_lens).
      const int32_t* dev_lens = exec.on_cuda ? c.seq_lens->as<const int32_t>() : c.seq_lens_host;
      const int32_t* dev_table = bt.as<const int32_t>();
      auto* suffix_cpu = buffers_.as<int32_t>(kBufSuffixCpu);
      const int32_t* counts_lens = host_lens;
      if (use_cascade) {
        ops::cascade_split(exec, dev_lens, n, c.num_actual_tokens, cpl,
                           buffers_.as<int32_t>(kBufCascadeCu),
                           buffers_.as<int32_t>(kBufCascadePrefix),
                           buffers_.as<int32_t>(kBufCascadeSuffix));
        dev_lens = buffers_.as<const int32_t>(kBufCascadeSuffix);
        dev_table += cpl / ps;
        for (int64_t i = 0; i < n; ++i) suffix_cpu[i] = static_cast<int32_t>(c.seq_lens_host[i] - cpl);
        counts_lens = suffix_cpu;
      }
      const int64_t width = bt.shape[1] - (use_cascade ? cpl / ps : 0);
      ops::paged_kv_metadata(exec, dev_lens, n, dev_table, bt.strides[0], width, ps,
                             buffers_.as<int32_t>(kBufIndptr), buffers_.as<int32_t>(kBufIndices),
                             max_num_pages_, buffers_.as<int32_t>(kBufLastPageLen));
      auto* indptr_cpu = buffers_.as<int32_t>(kBufIndptrCpu);
      auto* last_cpu = buffers_.as<int32_t>(kBufLastPageLenCpu);
      // indptr from the full lengths; the last-page lengths from the (DCP-adjusted) ones.
      num_pages = ops::paged_kv_counts(use_cascade ? counts_lens : c.seq_lens_host, n, ps,
                                       indptr_cpu, last_cpu);
      if (host_lens != c.seq_lens_host && !use_cascade) {
        for (int64_t i = 0; i < n; ++i) {
          const int32_t len = host_lens[i], rem = len % ps;
          last_cpu[i] = rem == 0 && len != 0 ? ps : rem;
        }
      }
      m.set_tensor(kPagedKvIndptr, make_vector(buffers_.get(kBufIndptr), d, kInt32, n + 1), true);
      m.set_tensor(kPagedKvIndptrCpu, make_vector(indptr_cpu, host, kInt32, n + 1), true);
      m.set_tensor(kPagedKvIndices, make_vector(buffers_.get(kBufIndices), d, kInt32, num_pages), true);
      m.set_tensor(kPagedKvLastPageLen, make_vector(buffers_.get(kBufLastPageLen), d, kInt32, n), true);
      m.set_tensor(kPagedKvLastPageLenCpu, make_vector(last_cpu, host, kInt32, n), true);
    }

    if (use_cascade) {
      const int64_t pages = cpl / ps;
      auto* qo = buffers_.as<int32_t>(kBufSharedQoIndptrCpu);
      auto* kv = buffers_.as<int32_t>(kBufSharedKvPageIndptrCpu);
      auto* last = buffers_.as<int32_t>(kBufSharedLastPageLenCpu);
      qo[0] = 0;
      qo[1] = static_cast<int32_t>(c.num_actual_tokens);
      kv[0] = 0;
      kv[1] = static_cast<int32_t>(pages);
      last[0] = ps;
      m.set_tensor(kQoIndptrCpu, host_qsl(c));
      m.set_tensor(kSharedQoIndptrCpu, make_vector(qo, host, kInt32, 2), true);
      m.set_tensor(kSharedKvPageIndptrCpu, make_vector(kv, host, kInt32, 2), true);
      m.set_tensor(kSharedKvPageIndices, make_vector(bt.data, bt.device, kInt32, pages));
      m.set_tensor(kSharedKvLastPageLenCpu, make_vector(last, host, kInt32, 1), true);
      return;  // the whole batch runs through the cascade plan
    }

    const int64_t nd = s.num_decodes;
    if (s.num_prefills > 0) {
      m.set_bool(kPrefillUseTrtllm, prefill_use_trtllm);
      auto* qo = buffers_.as<int32_t>(kBufPrefillQoIndptrCpu);
      int64_t max_q = 0;
      for (int64_t i = nd; i <= n; ++i) qo[i - nd] = c.qsl_host[i] - c.qsl_host[nd];
      for (int64_t i = nd; i < n; ++i) max_q = std::max<int64_t>(max_q, c.query_len(i));
      m.set_tensor(kPrefillQoIndptrCpu, make_vector(qo, host, kInt32, n - nd + 1), true);
      if (prefill_use_trtllm) {
        auto* cum_q = buffers_.as<int32_t>(kBufCumSeqLensQ);
        ops::slice_query_start_locs(exec, c.query_start_loc->as<const int32_t>(), nd, n, 0, 0, cum_q);
        m.set_tensor(kPrefillBlockTables, rows_between(bt, nd, n));
        m.set_tensor(kPrefillSeqLens, rows_between(*c.seq_lens, nd, n));
        m.set_tensor(kPrefillCumSeqLensQ, make_vector(cum_q, d, kInt32, n - nd + 1), true);
        // vLLM 0.33 rebases it: 0, then the cumulative pages of the prefills (0.13 passed the
        // page indptr from the first prefill on). vLLM writes it over the tail of its indptr
        // buffer; libattn into a buffer of its own, so paged_kv_indptr stays whole.
        auto* cum_kv = buffers_.as<int32_t>(kBufCumSeqLensKv);
        ops::slice_query_start_locs(exec, buffers_.as<const int32_t>(kBufIndptr), nd, n, 0, 0,
                                    cum_kv);
        m.set_tensor(kPrefillCumSeqLensKv, make_vector(cum_kv, d, kInt32, n - nd + 1), true);
        m.set_int(kPrefillMaxQLen, max_q);
        m.set_int(kPrefillMaxSeqLen, c.max_seq_len);
      } else {
        m.set_tensor(kPrefillPagedKvIndptrCpu,
                     make_vector(buffers_.as<int32_t>(kBufIndptrCpu) + nd, host, kInt32, n - nd + 1), true);
        m.set_tensor(kPrefillPagedKvLastPageLenCpu,
                     make_vector(buffers_.as<int32_t>(kBufLastPageLenCpu) + nd, host, kInt32, n - nd), true);
      }
    }
    if (nd > 0) {
      m.set_bool(kDecodeUseTrtllm, decode_use_trtllm);
      if (decode_use_trtllm) {
        if (s.num_decode_tokens % nd != 0)
          invalid("FLASHINFER's TRT-LLM decode needs a uniform query length: ", s.num_decode_tokens,
                  " decode tokens over ", nd, " decodes");
        m.set_tensor(kDecodeBlockTables, rows_between(bt, 0, nd));
        m.set_tensor(kDecodeSeqLens, rows_between(*c.seq_lens, 0, nd));
        m.set_int(kDecodeMaxSeqLen, c.max_seq_len);
        m.set_int(kDecodeQLenPerReq, s.num_decode_tokens / nd);
      } else {
        // One query per decode here (FlashInfer-native decode runs at threshold 1); padded
        // requests of length 0 are counted as decodes and left out of the plan.
        const int64_t bs = std::min<int64_t>(s.num_decode_tokens, n);
        const bool use_cudagraph = enable_cuda_graph_ && s.num_prefills == 0 &&
                                   s.num_decode_tokens <= decode_cudagraph_max_bs_;
        const int32_t* lens = c.seq_lens_host;
        auto* local = buffers_.as<int32_t>(kBufDecodeSeqLensCpu);
        for (int64_t i = 0; i < bs; ++i)
          local[i] = use_dcp ? ops::dcp_local_len(host_lens[i], cfg.decode_context_parallel_size,
                                                  cfg.dcp_rank, cfg.cp_kv_cache_interleave_size)
                             : lens[i];
        m.set_tensor(kDecodePagedKvIndptrCpu,
                     make_vector(buffers_.get(kBufIndptrCpu), host, kInt32, bs + 1), true);
        m.set_tensor(kDecodePagedKvLastPageLenCpu,
                     make_vector(buffers_.get(kBufLastPageLenCpu), host, kInt32, bs), true);
        m.set_tensor(kDecodeSeqLensCpu, make_vector(local, host, kInt32, bs), true);
        m.set_int(kDecodeNumQoHeads,
                  static_cast<int64_t>(cfg.num_attention_heads) * cfg.decode_context_parallel_size);
        m.set_bool(kDecodeUseCudagraph, use_cudagraph);
      }
    }
  }

 private:
  /// vLLM's use_trtllm_attention(..., is_prefill=True, force_use_trtllm=config's, has_sinks,
  /// has_spec) with the builder's current q_data_type; false with a KV connector
  /// (has_spec only matters for decode, num_tokens only for its auto rule.)
  bool use_trtllm_prefill() const {
    const BuilderConfig& c = config();
    if (c.kv_transfer_enabled) return false;
    if (c.use_trtllm_attention == 0) return false;
    if (c.decode_context_parallel_size > 1) return false;
    if (c.batch_invariant || capability_major_ != 10) return false;
    if (c.num_attention_heads % spec().num_kv_heads != 0) return false;
    if (q_data_type_ == kKvDtypeFp8E4m3) return true;
    if (hyper_.params.has_sinks) return true;
    if (c.use_trtllm_attention == -1) return c.cache_dtype == kKvDtypeAuto;
    return true;
  }

  void set_plan_scalars(Metadata& m) const {
    m.set_int(kNumQoHeads, config().num_attention_heads);
    m.set_int(kNumKvHeads, spec().num_kv_heads);
    m.set_int(kHeadDim, spec().head_size);
    m.set_int(kPageSize, spec().block_size);
    m.set_int(kKvDataType, kv_cache_dtype_);
    m.set_int(kODataType, model_dtype_);
    m.set_float(kSmScale, hyper_.params.sm_scale);
    m.set_int(kWindowLeft, hyper_.params.window_left);
    if (hyper_.params.logits_soft_cap) m.set_float(kLogitsSoftCap, *hyper_.params.logits_soft_cap);
    m.set_int(kPrefillFixedSplitSize, prefill_fixed_split_size_);
    m.set_int(kDecodeFixedSplitSize, decode_fixed_split_size_);
    m.set_bool(kDisableSplitKv, disable_split_kv_);
  }

  static Tensor host_qsl(const CommonMetadata& c) {
    return c.query_start_loc_cpu ? *c.query_start_loc_cpu : *c.query_start_loc;
  }

  PersistentBuffers buffers_;
  int64_t max_num_pages_ = 0;
  GlobalHyperparameters hyper_;
  bool enable_cuda_graph_ = false;
  int64_t decode_cudagraph_max_bs_ = 0;
  int32_t kv_cache_dtype_ = kKvDtypeBfloat16;
  int32_t model_dtype_ = kKvDtypeBfloat16;
  int32_t q_data_type_ = kKvDtypeBfloat16;  ///< vLLM's self.q_data_type (it can only fall back)
  bool can_use_trtllm_ = false;
  int32_t capability_major_ = 0;  ///< Of the builder's device, resolved at create time.
  int64_t decode_fixed_split_size_ = -1;
  int64_t prefill_fixed_split_size_ = -1;
  bool disable_split_kv_ = false;
};

}  // namespace

extern const BackendDescriptor kFlashInferBackend;
const BackendDescriptor kFlashInferBackend{
    kName,
    "0.13-0.33 (partial)",
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow) |
        kv_kind_bit(kKvChunkedLocalAttention),  // vLLM's FlashInferImpl: decoder self-attention
    0,
    [](const BackendDescriptor&, const KvCacheSpec& spec, const BuilderConfig& config) -> int32_t {
      // vLLM's classmethod: UNIFORM_BATCH when every attention spec can use TRT-LLM (which
      // captures spec-decode batches), else single-token decodes only.
      return flashinfer_can_use_trtllm(spec, config) ? kCgUniformBatch
                                                     : kCgUniformSingleTokenDecode;
    },
    [](const BackendDescriptor& d, const KvCacheSpec& spec, const BuilderConfig& config) {
      check_spec_kind(d, spec);
      check_supported(spec, config);
    },
    buffer_plan_of<plan>,
    create_builder_of<FlashInferBuilder>,
};

}  // namespace attn::backends
