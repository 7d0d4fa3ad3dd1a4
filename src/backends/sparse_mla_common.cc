// vLLM 0.33's SparseMLACommonMetadataBuilder (sparse_mla_common.h).
#include "backends/sparse_mla_common.h"

#include <algorithm>
#include <utility>

namespace attn::backends {

using namespace mla;  // NOLINT: the field and buffer enumerators

namespace {

/// The sparse builders' reorder threshold by this rank's query heads: the 10.x table ({8, 16,
/// 32: 128, 64: 256, 128: 1024}, else 1024) or the one below ({16, 32: 128, 64: 256, 128: 256},
/// else 256). FlashMLASparseMetadataBuilder picks by the device family; FLASH_ATTN_MLA_SPARSE
/// always takes the first (9.x) table, the FlashInfer sparse builders the 10.x one; a class
/// without a table (kNone: ROCM_AITER_MLA_SPARSE) passes its own value.
int32_t sparse_reorder_threshold(const MlaClass& cls, const BuilderConfig& c) {
  const SparseThresholds table = cls.sparse_thresholds;
  if (table == SparseThresholds::kNone) return cls.reorder_batch_threshold;
  const int32_t h = c.num_attention_heads;
  const bool sm100_table =
      table == SparseThresholds::kSm100 ||
      (table == SparseThresholds::kByCapability && resolved_device_capability(c) / 10 == 10);
  if (sm100_table) {
    if (h == 8 || h == 16 || h == 32) return 128;
    return h == 64 ? 256 : 1024;
  }
  if (h == 16 || h == 32) return 128;
  return 256;
}

}  // namespace

std::vector<BufferRequest> SparseMlaCommonBuilder::buffer_plan(const KvCacheSpec& spec,
                                                               const BuilderConfig& c) {
  std::vector<BufferRequest> r = mla_buffer_plan(spec, c, workspace_size(spec, c));
  BufferPlan p(kSparseBufferNames);
  const int64_t tokens = std::max<int64_t>(1, c.max_num_batched_tokens);
  p.set(kBufReqIdPerToken, buffer_bytes("req_id_per_token", {tokens, sizeof(int32_t)}));
  return appended(std::move(r), p);
}

SparseMlaCommonBuilder::SparseMlaCommonBuilder(const MlaArgs& a, FieldBlock tail,
                                               std::vector<BufferRequest> buffers)
    : MlaBuilder(a, std::move(buffers), workspace_size(a.spec, a.config),
                 MlaFieldBlocks{{field_block(kSparseFieldNames), {}}, false, tail, true}),
      topk_tokens_(sparse_index_topk(a.spec)) {
  init_reorder_batch_threshold(sparse_reorder_threshold(a.cls, config()),
                               /*supports_spec_as_decode=*/true,
                               supports_dcp_with_varlen(a.cls, config()));
}

std::optional<int32_t> SparseMlaCommonBuilder::varlen_cudagraph_max_query_len() const {
  if (mla_class().varlen_cudagraph_max_query_len) return max_decode_query_len();
  return std::nullopt;
}

std::string SparseMlaCommonBuilder::draft_decode_update_refusal() const {
  if (!mla_class().draft_decode_update_without_dcp) return Builder::draft_decode_update_refusal();
  return dcp() > 1 ? "decode context parallel (vLLM 0.33's sparse builders update only "
                     "without DCP)"
                   : "";
}

void SparseMlaCommonBuilder::do_update_draft_decode(const Metadata& md, const ops::Exec& exec) {
  if (!mla_class().draft_decode_update_without_dcp)
    return Builder::do_update_draft_decode(md, exec);
  const int64_t tokens = md.field(at(kNumDecodeTokens)).int_value;
  if (tokens == 0) return;
  const Tensor& qsl = md.field(at(kQueryStartLoc)).tensor;
  ops::compute_token_to_req_indices(exec, qsl.as<const int32_t>(),
                                    md.field(at(kNumReqs)).int_value, tokens, tokens,
                                    buffers_.as<int32_t>(kOwnBuffers + kBufReqIdPerToken));
}

int64_t SparseMlaCommonBuilder::prefill_max_seq_len(const CommonMetadata& c, int64_t nd,
                                                    int64_t np) const {
  int64_t longest = 0;
  for (int64_t i = nd; i < nd + np; ++i)
    longest = std::max<int64_t>(longest, c.seq_lens_upper_bound()[i]);
  return longest;
}

void SparseMlaCommonBuilder::do_build(int64_t, const CommonMetadata& c, bool,
                                      const ops::Exec& exec) {
  // The sparse builders never read common.causal: the split with require_uniform_decodes.
  const ops::BatchSplit s = ops::split_decodes_and_prefills(
      c.qsl_host, c.num_reqs, c.num_actual_tokens, c.max_query_len,
      reorder_batch_threshold().value_or(1),
      mla_class().query_len_support != QueryLenSupport::kVarlen, mla_class().name);
  const int64_t nd = s.num_decodes, np = s.num_prefills, T = c.num_actual_tokens;
  // the prefill part's prefills: none without the layer's prefill backend
  const int64_t npp = has_prefill_backend() ? np : 0;
  check_prefill_lengths(c, npp);
  const ops::MlaChunkCounts chunks = plan_chunks(c, nd, npp);
  plan_batch(c, s);
  // Past every check: a refused batch leaves the previous metadata as it was.

  build_common(c, s, c.max_seq_len, true);  // head_dim stays None
  Metadata& m = metadata();
  // CommonAttentionMetadata.token_to_req_indices: mapped up to query_start_loc_cpu[-1], zeros
  // after, num_actual_tokens returned.
  const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
  const int64_t mapped = c.qsl_host[c.num_reqs];
  int32_t* req_id_per_token = buffers_.as<int32_t>(kOwnBuffers + kBufReqIdPerToken);
  ops::compute_token_to_req_indices(exec, qsl, c.num_reqs, mapped, std::max(mapped, T),
                                    req_id_per_token);
  m.set_tensor(at(kSparseBlockTable), *c.block_table_tensor);
  m.set_tensor(at(kReqIdPerToken), device_vector(kOwnBuffers + kBufReqIdPerToken, T), true);
  m.set_tensor(at(kSparseSeqLens), *c.seq_lens);
  m.set_int(at(kBlockSize), spec().block_size);
  m.set_int(at(kTopkTokens), topk_tokens_);
  int64_t decode_max_query_len = 0;
  if (nd > 0) {
    if (c.max_logits_per_req >= 0) {
      decode_max_query_len = c.max_logits_per_req;
    } else if (np == 0) {
      decode_max_query_len = c.max_query_len;
    } else {
      for (int64_t i = 0; i < nd; ++i)
        decode_max_query_len = std::max(decode_max_query_len, c.query_len(i));
    }
  }
  m.set_int(at(kDecodeMaxQueryLen), decode_max_query_len);
  m.set_int(at(kPrefillMaxSeqLen), npp > 0 ? prefill_max_seq_len(c, nd, np) : 0);
  m.set_int(at(kCpKvCacheInterleaveSize), interleave());
  if (npp > 0) {
    // _build_prefill_fields measures the prefills' longest query; the query keeps the model's
    // dtype. Dense MHA when every prefill fits the top-k budget (vLLM 0.33's
    // _use_dense_mha_prefill without HiSparse or sparse_mla_force_mqa, neither a libattn input;
    // libattn has no prefill context parallelism).
    int64_t max_query_len = 0;
    for (int64_t i = 0; i < np; ++i) max_query_len = std::max(max_query_len, c.query_len(nd + i));
    build_prefill(c, nd, np, chunks,
                  {max_query_len, config().model_dtype_for(spec()),
                   prefill_max_seq_len(c, nd, np) <= topk_tokens_},
                  exec);
  }
  finish_build(c, s, exec);
}

}  // namespace attn::backends
