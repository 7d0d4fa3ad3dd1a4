// vLLM 0.33's MLACommonMetadataBuilder (mla_common.h).
#include "backends/mla_common.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"

namespace attn::backends {

using namespace mla;  // NOLINT: the field enumerators

std::vector<BufferRequest> MlaCommonBuilder::buffer_plan(const KvCacheSpec& spec,
                                                         const BuilderConfig& c) {
  return mla_buffer_plan(spec, c, workspace_size(spec, c));
}

MlaCommonBuilder::MlaCommonBuilder(const MlaArgs& a, FieldBlock decode, FieldBlock tail,
                                   std::vector<BufferRequest> buffers)
    : MlaBuilder(a, std::move(buffers), workspace_size(a.spec, a.config),
                 MlaFieldBlocks{{field_block(kDecodeFieldNames), decode}, true, tail, false}) {
  init_reorder_batch_threshold(a.cls.reorder_batch_threshold,
                               a.cls.query_len_support != QueryLenSupport::kSingleOnly,
                               supports_dcp_with_varlen(a.cls, config()));
}

bool MlaCommonBuilder::require_uniform_decodes() const {
  return mla_class().query_len_support != QueryLenSupport::kVarlen;
}

void MlaCommonBuilder::do_build(int64_t, const CommonMetadata& c,
                                bool /*fast_build: unused by vLLM's MLA*/,
                                const ops::Exec& exec) {
  const BuilderConfig& cfg = config();
  const char* name = mla_class().name;
  const int32_t threshold = reorder_batch_threshold().value_or(1);
  // vLLM 0.33: a non-causal batch (common.causal is False, not a per-request tensor) is one
  // uniform query block, all decodes; otherwise the split with
  // treat_short_extends_as_decodes = not use_pcp (libattn has no prefill context
  // parallelism: always true).
  const bool non_causal = !c.causal && !c.causal_per_request;
  const ops::BatchSplit s =
      non_causal ? non_causal_split(c)
                 : ops::split_decodes_and_prefills(c.qsl_host, c.num_reqs, c.num_actual_tokens,
                                                   c.max_query_len, threshold,
                                                   require_uniform_decodes(), name);
  const int64_t nd = s.num_decodes, np = s.num_prefills;
  const bool under_dcp = dcp() > 1;
  check_prefill_lengths(c, np);
  if (nd > 0 && under_dcp && !c.dcp_local_seq_lens)
    invalid("common->dcp_local_seq_lens is NULL; ", name,
            " decodes with "
            "decode_context_parallel_size=",
            dcp(), " read this rank's lengths from it");
  check_batch(c, s, !non_causal);
  const ops::MlaChunkCounts chunks = plan_chunks(c, nd, np);
  // Past every check: a refused batch leaves the previous metadata as it was.

  int64_t max_seq_len = c.max_seq_len;
  if (nd > 0 && under_dcp) {
    // The most tokens a rank holds: ceil(L / (N * I)) * I, without a device sync.
    const int64_t partitions = static_cast<int64_t>(dcp()) * interleave();
    max_seq_len = (max_seq_len + partitions - 1) / partitions * interleave();
  }
  build_common(c, s, max_seq_len, !non_causal);  // vLLM's causal=not non_causal_decode
  Metadata& m = metadata();
  m.set_int(at(kHeadDim), spec().head_size);
  if (np > 0) {
    // The output has the model's dtype; the query FP8 under use_prefill_query_quantization.
    const int32_t model = cfg.model_dtype_for(spec());
    build_prefill(c, nd, np, chunks,
                  {c.max_query_len, mla_prefill_query_dtype(cfg, configured_prefill_backend(), model),
                   false},
                  exec);
  }
  if (nd > 0) {
    const Tensor seq_lens = rows_between(under_dcp ? *c.dcp_local_seq_lens : *c.seq_lens, 0, nd);
    m.set_tensor(at(kDecodeBlockTable), rows_between(*c.block_table_tensor, 0, nd));
    m.set_tensor(at(kDecodeSeqLens), seq_lens);
    if (under_dcp) m.set_tensor(at(kDecodeDcpTotSeqLens), rows_between(*c.seq_lens, 0, nd));
    int64_t max_query_len = 0;  // the decodes' (uniform unless VARLEN)
    for (int64_t i = 0; i < nd; ++i) max_query_len = std::max(max_query_len, c.query_len(i));
    // vLLM 0.33 hands _build_decode the promised bound min(common.max_query_len, threshold);
    // FLASHMLA and FLASH_ATTN_MLA measure the decodes' longest query instead.
    const int64_t bound = std::min<int64_t>(c.max_query_len, threshold);
    build_decode({c, nd, s.num_decode_tokens, max_seq_len, bound, max_query_len, seq_lens}, exec);
  }
  finish_build(c, s, max_seq_len, exec);
}

void MlaCommonBuilder::do_capture(const CommonMetadata& c, const ops::Exec& exec) {
  const char* name = mla_class().name;
  const int64_t t = reorder_batch_threshold().value_or(1);
  if (c.num_reqs > c.num_actual_tokens * t)
    fail(Status::kUnsupported, name,
         " only supports decode-only full CUDA graph capture: "
         "num_reqs=",
         c.num_reqs, " exceeds num_actual_tokens=", c.num_actual_tokens,
         " * reorder_batch_threshold=", t, " (make every capture size <= max_num_seqs)");
  if (c.max_query_len > t)
    fail(Status::kUnsupported, name,
         " only supports decode-only full CUDA graph capture: "
         "max_query_len=",
         c.max_query_len, " exceeds reorder_batch_threshold=", t);
  do_build(0, c, false, exec);
}

ops::BatchSplit MlaCommonBuilder::non_causal_split(const CommonMetadata& c) const {
  if (!mla_class().supports_non_causal_multi_token_decode)
    fail(Status::kUnsupported, mla_class().name,
         ": non-causal multi-token MLA (common->causal=0) requires an explicitly supported "
         "attention group (vLLM 0.33's supports_non_causal_multi_token_decode: "
         "FLASHINFER_MLA, TRITON_MLA)");
  const int64_t n = c.num_reqs;
  int64_t active = 0;
  for (int64_t i = 0; i < n; ++i) active += c.query_len(i) > 0;
  bool ok = active > 0;
  for (int64_t i = 0; i < n && ok; ++i)
    ok = i < active ? c.query_len(i) == c.query_len(0) : c.query_len(i) == 0;
  if (!ok) {
    std::string lens;
    for (int64_t i = 0; i < n && i < 16; ++i)
      lens += (i ? ", " : "") + std::to_string(c.query_len(i));
    invalid("Non-causal MLA requires a uniform query block; got query lengths [", lens,
            n > 16 ? ", ...]" : "]", " (common->causal=0)");
  }
  ops::BatchSplit s;
  s.num_decodes = n;
  s.num_decode_tokens = c.num_actual_tokens;
  return s;
}

}  // namespace attn::backends
