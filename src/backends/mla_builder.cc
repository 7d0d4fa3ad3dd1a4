// What every MLA metadata builder has (mla_builder.h): the shared refusals, the prefill part and
// its chunked context.
#include "backends/mla_builder.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backends/persistent_copy.h"
#include "core/error.h"

namespace attn::backends {
namespace {

using namespace mla;  // NOLINT: the field and buffer enumerators

/// The per-chunk host lists, each C + 1 int32 in kBufChunkLists, in this order: ContextChunk's
/// scalars, then the offsets of each chunk in the concatenated arrays.
using HostList = int32_t* ops::MlaChunkHostOut::*;
constexpr HostList kChunkLists[] = {
    &ops::MlaChunkHostOut::request_start,       &ops::MlaChunkHostOut::request_end,
    &ops::MlaChunkHostOut::token_start,         &ops::MlaChunkHostOut::token_end,
    &ops::MlaChunkHostOut::continuation_token_end, &ops::MlaChunkHostOut::is_continuation,
    &ops::MlaChunkHostOut::num_context_tokens,  &ops::MlaChunkHostOut::max_query_len,
    &ops::MlaChunkHostOut::max_seq_len,         &ops::MlaChunkHostOut::all_rows_active,
    &ops::MlaChunkHostOut::num_local_context_tokens, &ops::MlaChunkHostOut::request_offsets,
    &ops::MlaChunkHostOut::boundary_offsets,    &ops::MlaChunkHostOut::token_offsets,
    &ops::MlaChunkHostOut::local_token_offsets};
constexpr int64_t kChunkListCount = sizeof(kChunkLists) / sizeof(kChunkLists[0]);
/// The per-entry host lists, each E int32 in kBufEntryLists, then chunk_entry_offsets (C + 1)
/// and local_context_lens_allranks (E x dcp).
enum EntryList {
  kEntrySeqLens,
  kEntryPaddedLocalSeqLens,
  kEntryLocalStarts,
  kEntryRequest,
  kEntryStart,
  kEntryLen,
  kEntryListCount
};

constexpr size_t kAbsent = ~size_t{0};

/// "bfloat16 models only", "float16 and bfloat16 models", ...: the model dtypes of `mask`.
std::string model_dtypes_phrase(uint32_t mask) {
  static constexpr std::pair<int32_t, const char*> kTorchNames[] = {
      {kKvDtypeFloat16, "float16"}, {kKvDtypeBfloat16, "bfloat16"}, {kKvDtypeFloat32, "float32"}};
  std::vector<std::string> names;
  for (const auto& [dtype, name] : kTorchNames)
    if (mask & dtype_bit(dtype)) names.emplace_back(name);
  if (names.size() == 1) return names[0] + " models only";
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s + " models";
}

}  // namespace

void check_mla_spec(const MlaClass& cls, const KvCacheSpec& spec, const BuilderConfig& c) {
  if (spec.kind != kKvMla)
    fail(Status::kUnsupported, cls.name, " builds metadata for MLA KV cache specs only, not ",
         kv_cache_kind_name(spec.kind), " (kv_cache_spec->kind=", spec.kind, ")");
  if (spec.head_size != cls.head_size)
    fail(Status::kUnsupported, cls.name, " supports head size ", cls.head_size,
         " (kv_lora_rank + qk_rope_head_dim of the latent cache), got kv_cache_spec->head_size=",
         spec.head_size);
  if (cls.sliding_window && spec.sliding_window <= 0)
    invalid(cls.name, " reads its window from kv_cache_spec->sliding_window, got ",
            spec.sliding_window, " (vLLM's MLAAttentionSpec.sliding_window)");
  if (kv_lora_rank(c) + qk_rope_head_dim(c) != spec.head_size)
    invalid("config->mla_kv_lora_rank=", kv_lora_rank(c),
            " + config->mla_qk_rope_head_dim=", qk_rope_head_dim(c),
            " differs from kv_cache_spec->head_size=", spec.head_size,
            " (0 stands for 512 and 64)");
  if (spec.num_kv_heads != 1)
    invalid("kv_cache_spec->num_kv_heads=", spec.num_kv_heads,
            " must be 1 for an MLA spec (one latent head, vLLM's MLAAttentionSpec)");
  bool block_ok = false;
  std::string sizes;
  for (const int32_t s : cls.kernel_block_sizes) {
    if (s <= 0) continue;
    block_ok = block_ok || spec.block_size % s == 0;
    sizes += (sizes.empty() ? "" : " or ") + std::to_string(s);
  }
  if (!block_ok)
    fail(Status::kUnsupported, cls.name, " needs kv_cache_spec->block_size to be a multiple of ",
         sizes, ", got ", spec.block_size);
  if ((cls.cache_dtypes & dtype_bit(c.cache_dtype)) == 0)
    fail(Status::kUnsupported, cls.name,
         " does not support config->cache_dtype=", kv_dtype_name(c.cache_dtype));
  const int32_t model = c.model_dtype_for(spec);
  if ((cls.model_dtypes & dtype_bit(model)) == 0)
    fail(Status::kUnsupported, cls.name, " runs ", model_dtypes_phrase(cls.model_dtypes),
         ", got ", kv_dtype_name(model), " (config->model_dtype, else kv_cache_spec->dtype)");
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, cls.name,
         " runs decoder self-attention only (config->attn_type=", c.attn_type, ")");
  if (c.kv_sharing_fast_prefill)
    fail(Status::kUnsupported, cls.name,
         ": KV sharing is not supported for MLA "
         "(config->kv_sharing_fast_prefill)");
  for (size_t i = 0; i < c.layers.size(); ++i)
    if ((c.layers[i].window_left != -1 && !cls.sliding_window) || c.layers[i].logits_soft_cap)
      fail(Status::kUnsupported, cls.name,
           " does not support sliding windows or logits soft "
           "capping (config->layers[",
           i, "])");
}

void check_mla_workspace(int64_t workspace, const KvCacheSpec& spec, const BuilderConfig& c) {
  const int64_t alignment = mla_chunk_alignment(spec, c);
  if (workspace < alignment)
    invalid("config->mla_chunked_prefill_workspace_size=", workspace,
            " is smaller than the context chunk alignment of ", alignment,
            " rows (block_size, lcm'd with decode_context_parallel_size * "
            "cp_kv_cache_interleave_size under DCP; vLLM asserts max_context_chunk > 0)");
  if (c.decode_context_parallel_size > 1 && workspace % c.decode_context_parallel_size != 0)
    invalid("the MLA chunked-prefill workspace of ", workspace,
            " tokens is not a multiple of config->decode_context_parallel_size=",
            c.decode_context_parallel_size, " (vLLM asserts it)");
}

bool supports_dcp_with_varlen(const MlaClass& cls, const BuilderConfig& c) {
  return cls.dcp_with_varlen == DcpVarlen::kYes ||
         (cls.dcp_with_varlen == DcpVarlen::kInterleaveOne && c.cp_kv_cache_interleave_size == 1);
}

void require_bf16_model(const MlaClass& cls, const KvCacheSpec& spec, const BuilderConfig& c) {
  if (c.model_dtype_for(spec) != kKvDtypeBfloat16)
    fail(Status::kUnsupported, cls.name, " runs bfloat16 models only (supported_dtypes), got ",
         kv_dtype_name(c.model_dtype_for(spec)),
         " (config->model_dtype, else kv_cache_spec->dtype)");
}

std::vector<BufferRequest> mla_buffer_plan(const KvCacheSpec& spec, const BuilderConfig& c,
                                           int64_t workspace) {
  const int64_t seqs = c.max_num_seqs;
  const ops::MlaChunkParams cap = mla_chunk_capacities(spec, c, workspace);
  const int64_t C = cap.max_chunks, E = cap.max_entries;
  const bool dcp = c.decode_context_parallel_size > 1;
  const int64_t i32 = sizeof(int32_t);
  BufferPlan p(kBufferNames);
  p.set(kBufPrefillQsl, buffer_bytes("prefill_query_start_loc", {seqs + 1, i32}));
  p.set(kBufQuerySeqLens, buffer_bytes("prefill_query_seq_lens", {seqs, i32}));
  p.set(kBufContextLens, buffer_bytes("prefill_chunked_context_context_lens", {seqs, i32}));
  p.set(kBufStarts, buffer_bytes("prefill_chunked_context_chunk_starts", {E, i32}));
  p.set(kBufChunkQsl,
        buffer_bytes("prefill_chunked_context_chunk_query_start_loc", {E + C, i32}));
  p.set(kBufCuSeqLens, buffer_bytes("prefill_chunked_context_chunk_cu_seq_lens", {E + C, i32}));
  p.set(kBufTokenToSeq,
        buffer_bytes("prefill_chunked_context_chunk_token_to_seq", {cap.max_tokens, i32}));
  p.set(kBufPaddedLocalCu,
        dcp ? buffer_bytes("prefill_chunked_context_chunk_padded_local_cu_seq_lens",
                           {E + C, i32})
            : 0);
  p.set(kBufPaddedLocalTts,
        dcp ? buffer_bytes("prefill_chunked_context_chunk_padded_local_token_to_seq",
                           {cap.max_local_tokens, i32})
            : 0);
  p.set(kBufPlanScratch, buffer_bytes("the device's chunk plan", {3 * (C + 1) + 3 * E, i32}));
  p.set(kBufHostContextLens, buffer_bytes("host context lengths", {seqs, i32}), true);
  p.set(kBufContextLensList,
        buffer_bytes("prefill_chunked_context_context_lens_list", {seqs, i32}), true);
  p.set(kBufEmptySlices,
        buffer_bytes("prefill_chunked_context_empty_token_slices", {seqs, 2, i32}), true);
  p.set(kBufQueryLensCpu, buffer_bytes("prefill_query_lens_cpu", {seqs, i32}), true);
  p.set(kBufChunkLists, buffer_bytes("the per-chunk lists", {kChunkListCount, C + 1, i32}), true);
  const int64_t ranks = dcp ? c.decode_context_parallel_size : 0;
  p.set(kBufEntryLists,
        buffer_bytes("the per-entry lists", {kEntryListCount * E + C + 1 + E * ranks, i32}), true);
  return p.requests();
}

MlaBuilder::MlaBuilder(const MlaArgs& a, std::vector<BufferRequest> buffers, int64_t workspace,
                       const MlaFieldBlocks& blocks)
    : Builder(a.backend, a.spec, a.config),
      buffers_(a.cls.name, a.config.device, buffers, a.config.allocator, a.config.workspace,
               a.config.workspace_size),
      cls_(a.cls) {
  std::vector<std::string> names = name_vector(kCommonFieldNames);
  const auto add = [&names](FieldBlock b) {
    const size_t start = names.size();
    names.insert(names.end(), b.names, b.names + b.count);
    return start;
  };
  decode_[0] = add(blocks.decode[0]);
  decode_[1] = add(blocks.decode[1]);
  prefill_ = add(field_block(kPrefillFieldNames));
  has_plan_ = blocks.prefill_plan || blocks.prefill_plan_last;
  plan_ = blocks.prefill_plan ? add(field_block(kPlanFieldNames)) : kAbsent;
  chunked_ = add(field_block(kChunkFieldNames));
  tail_ = add(blocks.tail);
  if (blocks.prefill_plan_last) plan_ = add(field_block(kPlanFieldNames));
  init_metadata(names);
  const BuilderConfig& c = this->config();
  workspace_ = workspace;
  chunk_params_ = mla_chunk_capacities(spec(), c, workspace);
  // chunk_alignment 1 (the capacities stay those of the block alignment: upper bounds)
  if (!cls_.align_chunks_to_blocks) chunk_params_.block_size = 1;
  if (cls_.layer_prefill_backend < 0) {
    prefill_backend_ = configured_prefill_backend_ = mla_prefill_backend(cls_.platform, c);
  } else {
    // The layer's own class: vLLM asks get_mla_prefill_backend (and so refuses a configured
    // backend invalid for the dimensions) only for the query dtype on compute capability 10.x.
    prefill_backend_ = cls_.layer_prefill_backend;
    configured_prefill_backend_ = resolved_device_capability(c) / 10 == 10
                                      ? mla_prefill_backend(cls_.platform, c)
                                      : prefill_backend_;
  }
  dcp_ = c.decode_context_parallel_size;
  interleave_ = c.cp_kv_cache_interleave_size;
  if (!c.layers.empty()) {
    hyper_ = infer_global_hyperparameters(c.layers).params;
  } else {
    hyper_.sm_scale =
        1.0 / std::sqrt(static_cast<double>(qk_nope_head_dim(c) + qk_rope_head_dim(c)));
  }
}

size_t MlaBuilder::at(PlanField f) const {
  if (!has_plan_) fail(Status::kInternal, cls_.name, " has no field ", kPlanFieldNames[f]);
  return plan_ + f;
}

Tensor MlaBuilder::device_vector(size_t buffer, int64_t n) const {
  return make_vector(buffers_.get(buffer), config().device, kInt32, n);
}

Tensor MlaBuilder::host_list(int32_t* p, int64_t n) const {
  return make_vector(p, Device{}, kInt32, n);
}

int32_t* MlaBuilder::entry_list(size_t list) const {
  return buffers_.as<int32_t>(kBufEntryLists) + list * chunk_params_.max_entries;
}
int32_t* MlaBuilder::allranks_host() const {
  return entry_list(kEntryListCount) + chunk_params_.max_chunks + 1;
}

ops::MlaChunkHostOut MlaBuilder::host_chunk_out() {
  ops::MlaChunkHostOut o;
  int32_t* lists = buffers_.as<int32_t>(kBufChunkLists);
  for (int64_t l = 0; l < kChunkListCount; ++l)
    o.*kChunkLists[l] = lists + l * (chunk_params_.max_chunks + 1);
  o.seq_lens = entry_list(kEntrySeqLens);
  if (dcp_ > 1) {
    o.padded_local_seq_lens = entry_list(kEntryPaddedLocalSeqLens);
    o.local_starts = entry_list(kEntryLocalStarts);
    o.local_context_lens_allranks = allranks_host();
  }
  o.context_lens_list = buffers_.as<int32_t>(kBufContextLensList);
  o.empty_token_slices = buffers_.as<int32_t>(kBufEmptySlices);
  o.num_empty = &num_empty_;
  o.chunk_entry_offsets = entry_list(kEntryListCount);
  o.entry_request = entry_list(kEntryRequest);
  o.entry_start = entry_list(kEntryStart);
  o.entry_len = entry_list(kEntryLen);
  return o;
}

ops::MlaChunkTensors MlaBuilder::device_chunk_out() const {
  const int64_t C = chunk_params_.max_chunks, E = chunk_params_.max_entries;
  int32_t* scratch = buffers_.as<int32_t>(kBufPlanScratch);
  ops::MlaChunkTensors o;
  o.starts = buffers_.as<int32_t>(kBufStarts);
  o.query_start_loc = buffers_.as<int32_t>(kBufChunkQsl);
  o.cu_seq_lens = buffers_.as<int32_t>(kBufCuSeqLens);
  o.token_to_seq = buffers_.as<int32_t>(kBufTokenToSeq);
  if (dcp_ > 1) {
    o.padded_local_cu_seq_lens = buffers_.as<int32_t>(kBufPaddedLocalCu);
    o.padded_local_token_to_seq = buffers_.as<int32_t>(kBufPaddedLocalTts);
  }
  o.chunk_entry_offsets = scratch;
  o.chunk_token_offsets = scratch + (C + 1);
  o.chunk_local_token_offsets = scratch + 2 * (C + 1);
  o.entry_request = scratch + 3 * (C + 1);
  o.entry_start = o.entry_request + E;
  o.entry_len = o.entry_start + E;
  return o;
}

void MlaBuilder::check_prefill_lengths(const CommonMetadata& c, int64_t num_prefills) const {
  if (num_prefills > 0 && c.seq_lens_upper_bound() == nullptr)
    invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens is given); ",
            cls_.name, " reads the context lengths of the prefills on the host (vLLM 0.33 "
            "asserts seq_lens_cpu_upper_bound is not None)");
}

ops::MlaChunkCounts MlaBuilder::plan_chunks(const CommonMetadata& c, int64_t nd, int64_t np) {
  ops::MlaChunkCounts chunks;
  if (np == 0) return chunks;
  const int32_t* prefill_seq_lens = c.seq_lens_upper_bound();
  int32_t* contexts = buffers_.as<int32_t>(kBufHostContextLens);
  for (int64_t i = 0; i < np; ++i)
    contexts[i] = static_cast<int32_t>(prefill_seq_lens[nd + i] - c.query_len(nd + i));
  // The plan's only refusals are a workspace below the alignment (refused at create) and a
  // batch beyond the buffers' capacities (which the config's limits exclude).
  return ops::mla_context_chunk_plan(contexts, c.qsl_host + nd, np, chunk_params_,
                                     host_chunk_out(), cls_.name);
}

void MlaBuilder::build_common(const CommonMetadata& c, const ops::BatchSplit& s,
                              int64_t max_seq_len, bool causal) {
  Metadata& m = metadata();
  m.reset();
  m.set_int(at(kNumReqs), c.num_reqs);
  m.set_int(at(kMaxQueryLen), c.max_query_len);
  m.set_int(at(kMaxSeqLen), max_seq_len);
  m.set_int(at(kNumActualTokens), c.num_actual_tokens);
  m.set_tensor(at(kQueryStartLoc), *c.query_start_loc);
  m.set_tensor(at(kSlotMapping), *c.slot_mapping);
  m.set_int(at(kNumDecodes), s.num_decodes);
  m.set_int(at(kNumDecodeTokens), s.num_decode_tokens);
  m.set_int(at(kNumPrefills), s.num_prefills);
  m.set_bool(at(kCausal), causal);
  m.set_int(at(kChunkedPrefillWorkspaceSize), workspace_);
}

void MlaBuilder::build_prefill(const CommonMetadata& c, int64_t nd, int64_t np,
                               const ops::MlaChunkCounts& chunks, const MlaPrefill& p,
                               const ops::Exec& exec) {
  const BuilderConfig& cfg = config();
  Metadata& m = metadata();
  // 0.33's TRTLLM_RAGGED and TOKENSPEED_MLA prefills read the query lengths on the device
  // (their prepare_metadata's _query_seq_lens); FlashInfer's plans its ragged wrapper.
  const bool query_seq_lens = mla_prefill_reads_query_seq_lens(prefill_backend_);
  // The device inputs; the host path reads the validated host lengths.
  const int32_t* qsl = (exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host) + nd;
  ops::MlaPrefillOut out;
  out.query_start_loc = buffers_.as<int32_t>(kBufPrefillQsl);
  if (query_seq_lens) out.query_seq_lens = buffers_.as<int32_t>(kBufQuerySeqLens);
  ops::mla_prefill_metadata(exec, qsl, np, out);
  if (chunks.num_chunks > 0) {
    // vLLM 0.33's context_lens: the host's (from seq_lens_cpu_upper_bound), copied to the
    // device (an asynchronous copy on the build's stream: the host buffer is the builder's
    // and stays until the next build); the device plan reads them from there.
    int32_t* contexts = buffers_.as<int32_t>(kBufContextLens);
    copy_i32_into_buffer(exec, buffers_.as<int32_t>(kBufHostContextLens), true, np, contexts);
    ops::mla_context_chunk_tensors(exec, qsl, contexts, np, chunk_params_, chunks,
                                   device_chunk_out());
  }
  int32_t* query_lens_cpu = buffers_.as<int32_t>(kBufQueryLensCpu);
  for (int64_t i = 0; i < np; ++i) query_lens_cpu[i] = static_cast<int32_t>(c.query_len(nd + i));

  m.set_tensor(at(kPrefillBlockTable), rows_between(*c.block_table_tensor, nd, c.num_reqs));
  m.set_tensor(at(kPrefillQueryStartLoc), device_vector(kBufPrefillQsl, np + 1), true);
  m.set_int(at(kPrefillMaxQueryLen), p.max_query_len);
  m.set_int(at(kPrefillQDataType), p.q_data_type);
  m.set_int(at(kPrefillOutputDtype), cfg.model_dtype_for(spec()));  // the model's dtype
  m.set_int(at(kPrefillPrefillBackend), prefill_backend_);
  m.set_tensor(at(kPrefillQueryLensCpu), host_list(query_lens_cpu, np), true);
  m.set_bool(at(kPrefillUseDenseMha), p.use_dense_mha);
  if (query_seq_lens)
    m.set_tensor(at(kPrefillQuerySeqLens), device_vector(kBufQuerySeqLens, np), true);
  if (mla_prefill_plans_flashinfer(prefill_backend_) && has_plan_) {
    // FlashInfer's ragged prefill plan(): non-latent heads, num_kv_heads == num_qo_heads.
    m.set_int(at(kPrefillNumQoHeads), cfg.num_attention_heads);
    m.set_int(at(kPrefillNumKvHeads), cfg.num_attention_heads);
    m.set_int(at(kPrefillHeadDimQk), qk_nope_head_dim(cfg) + qk_rope_head_dim(cfg));
    m.set_int(at(kPrefillHeadDimVo), v_head_dim(cfg));
    m.set_float(at(kPrefillSmScale), hyper_.sm_scale);
    m.set_int(at(kPrefillWindowLeft), hyper_.window_left);
    if (hyper_.logits_soft_cap) m.set_float(at(kPrefillLogitsSoftCap), *hyper_.logits_soft_cap);
  }
  if (chunks.num_chunks > 0) build_chunked_context(chunks, np);  // else chunked_context is None
}

void MlaBuilder::build_chunked_context(const ops::MlaChunkCounts& chunks, int64_t np) {
  using Out = ops::MlaChunkHostOut;
  Metadata& m = metadata();
  const Out o = host_chunk_out();  // where the plan wrote
  const int64_t C = chunks.num_chunks, E = chunks.num_entries, boundaries = E + C;
  const Device host{};
  m.set_tensor(at(kContextLens), device_vector(kBufContextLens, np), true);
  m.set_tensor(at(kContextLensList), host_list(o.context_lens_list, np), true);
  m.set_tensor(at(kEmptyTokenSlices),
               make_matrix(o.empty_token_slices, host, kInt32, num_empty_, 2, 2), true);
  m.set_int(at(kNumChunks), C);
  static constexpr std::pair<ChunkField, HostList> kScalars[] = {
      {kChunkRequestStart, &Out::request_start},
      {kChunkRequestEnd, &Out::request_end},
      {kChunkTokenStart, &Out::token_start},
      {kChunkTokenEnd, &Out::token_end},
      {kChunkContinuationTokenEnd, &Out::continuation_token_end},
      {kChunkIsContinuation, &Out::is_continuation},
      {kChunkNumContextTokens, &Out::num_context_tokens},
      {kChunkMaxQueryLen, &Out::max_query_len},
      {kChunkMaxSeqLen, &Out::max_seq_len},
      {kChunkAllRowsActive, &Out::all_rows_active},
      {kChunkNumLocalContextTokens, &Out::num_local_context_tokens},
      {kChunkBoundaryOffsets, &Out::boundary_offsets}};
  for (const auto& [f, l] : kScalars) m.set_tensor(at(f), host_list(o.*l, C), true);
  m.set_tensor(at(kChunkRequestOffsets), host_list(o.request_offsets, C + 1), true);
  m.set_tensor(at(kChunkTokenOffsets), host_list(o.token_offsets, C + 1), true);
  m.set_tensor(at(kChunkQueryStartLoc), device_vector(kBufChunkQsl, boundaries), true);
  m.set_tensor(at(kChunkCuSeqLens), device_vector(kBufCuSeqLens, boundaries), true);
  m.set_tensor(at(kChunkStarts), device_vector(kBufStarts, E), true);
  m.set_tensor(at(kChunkSeqLens), host_list(o.seq_lens, E), true);
  m.set_tensor(at(kChunkTokenToSeq), device_vector(kBufTokenToSeq, chunks.num_tokens), true);
  if (dcp_ <= 1) return;  // the DCP fields stay None
  m.set_tensor(at(kChunkLocalTokenOffsets), host_list(o.local_token_offsets, C + 1), true);
  m.set_tensor(at(kChunkPaddedLocalSeqLens), host_list(o.padded_local_seq_lens, E), true);
  m.set_tensor(at(kChunkLocalContextLensAllranks),
               make_matrix(o.local_context_lens_allranks, host, kInt32, E, dcp_, dcp_), true);
  m.set_tensor(at(kChunkPaddedLocalCuSeqLens), device_vector(kBufPaddedLocalCu, boundaries), true);
  m.set_tensor(at(kChunkPaddedLocalTokenToSeq),
               device_vector(kBufPaddedLocalTts, chunks.num_local_tokens), true);
  m.set_tensor(at(kChunkLocalStarts), host_list(o.local_starts, E), true);
}

}  // namespace attn::backends
