// MiniMax-M3's shared split, start of build() and spec checks (minimax_m3_common.h).
#include "backends/minimax_m3_common.h"

#include "core/error.h"
#include "ops/batch_ops.h"
#include "ops/state_space_ops.h"

namespace attn::backends {

MiniMaxM3Split minimax_m3_split(const CommonMetadata& c, int32_t threshold,
                                int64_t context_capacity, const char* who) {
  const int64_t n = c.num_reqs;
  if (n > context_capacity)
    invalid("common->num_reqs=", n, " exceeds config->max_num_batched_tokens=",
            context_capacity, " (", who, "'s context_len_buffer has that many entries)");
  const ops::BatchSplit s = ops::split_decodes_and_prefills(
      c.qsl_host, n, c.num_actual_tokens, c.max_query_len, threshold, /*require_uniform=*/true,
      who);
  MiniMaxM3Split out;
  out.num_decodes = s.num_decodes;
  out.num_decode_tokens = s.num_decode_tokens;
  out.num_prefills = s.num_prefills;
  out.num_prefill_tokens = s.num_prefill_tokens;
  if (s.num_decodes == 0) return out;
  const int64_t q = c.query_len(0);
  if (q <= 0)
    invalid("common->query_start_loc_cpu gives the first decode request a query of ", q,
            " tokens; ", who, " needs a positive decode_query_len (vLLM asserts "
            "decode_query_len > 0)");
  for (int64_t r = 1; r < s.num_decodes; ++r)
    if (c.query_len(r) != q && c.query_len(r) != 0)
      invalid("decode request ", r, " has a query of ", c.query_len(r),
              " tokens, neither the first decode's ", q, " nor 0 (", who,
              "'s decodes are uniform: vLLM asserts it)");
  if (s.num_decode_tokens != s.num_decodes * q)
    invalid("the ", s.num_decodes, " decode requests of ", q, " tokens hold num_decode_tokens=",
            s.num_decode_tokens, " tokens, not ", s.num_decodes * q, " (", who,
            " asserts num_decode_tokens == num_decodes * decode_query_len: a padded uniform "
            "batch's empty queries or padded tokens break it)");
  out.decode_query_len = static_cast<int32_t>(q);
  return out;
}

const int32_t* minimax_m3_build_top(const CommonMetadata& c, const MiniMaxM3Split& s,
                                    const ops::Exec& exec, int32_t* context_lens, Metadata& m) {
  const int32_t* qsl = exec.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host;
  ops::num_computed_tokens_i32(exec, qsl, c.seq_lens->as<const int32_t>(), c.num_reqs,
                               context_lens);
  m.reset();
  m.set_tensor(kTopSeqLens, *c.seq_lens);
  m.set_int(kTopMaxSeqLen, c.max_seq_len);
  m.set_tensor(kTopSlotMapping, *c.slot_mapping);
  m.set_int(kTopNumActualTokens, c.num_actual_tokens);
  m.set_int(kTopNumDecodes, s.num_decodes);
  m.set_int(kTopNumDecodeTokens, s.num_decode_tokens);
  m.set_int(kTopNumPrefills, s.num_prefills);
  m.set_int(kTopNumPrefillTokens, s.num_prefill_tokens);
  return qsl;
}

void check_minimax_m3_spec(const BackendDescriptor& d, const KvCacheSpec& spec,
                           const BuilderConfig& c) {
  check_spec_kind(d, spec);
  if (spec.block_size != kMiniMaxM3BlockSize)
    fail(Status::kUnsupported, d.name, " takes the kernel block size ", kMiniMaxM3BlockSize,
         " (vLLM 0.33's get_supported_kernel_block_sizes(): one sparse block per page): "
         "kv_cache_spec->block_size=",
         spec.block_size);
  if (c.attn_type != kAttnDecoder)
    fail(Status::kUnsupported, d.name,
         " runs decoder self-attention only (config->attn_type=", c.attn_type, ")");
}

}  // namespace attn::backends
