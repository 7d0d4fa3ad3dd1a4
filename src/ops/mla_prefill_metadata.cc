// MLA's chunked-context plan and prefill tensors (vLLM's MLACommonMetadataBuilder.build, the
// `num_prefills > 0` branch): the host-only plan and lists, the host reference of the tensors
// and their CUDA dispatch.
#include <algorithm>

#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"
#include "ops/error.h"

namespace attn::ops {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Chunk k of a context of c tokens with chunk size m: clamp(min(c, (k + 1) m) - k m, 0).
int64_t chunk_len(int64_t c, int64_t k, int64_t m) {
  return std::max<int64_t>(0, std::min(c, (k + 1) * m) - k * m);
}

/// vLLM's padded local context of one DCP rank: cdiv(c, dcp * I) * I.
int64_t padded_local(int64_t c, int32_t dcp_size, int32_t interleave) {
  return cdiv(c, static_cast<int64_t>(dcp_size) * interleave) * interleave;
}

}  // namespace

MlaChunkPlan mla_chunk_plan(const int32_t* context_lens, int64_t num_prefills,
                            int64_t workspace_size, int32_t page_size, int32_t dcp_size,
                            int32_t interleave, const char* who) {
  MlaChunkPlan p;
  for (int64_t i = 0; i < num_prefills; ++i) {
    p.max_context_len = std::max<int64_t>(p.max_context_len, context_lens[i]);
    if (context_lens[i] > 0) ++p.num_prefills_with_context;
  }
  if (p.max_context_len <= 0) return MlaChunkPlan{};
  // An equal share of the workspace per prefill with context, rounded down to whole pages
  // (vLLM's gather kernel needs page-aligned chunk starts).
  const int64_t share = workspace_size / p.num_prefills_with_context;
  p.max_context_chunk = share / page_size * page_size;
  const char* prefix = who ? who : "";
  const char* colon = who ? ": " : "";
  if (p.max_context_chunk <= 0)
    invalid(prefix, colon, "the chunked-prefill workspace of ", workspace_size,
            " tokens leaves no whole block of ", page_size, " tokens for each of the ",
            p.num_prefills_with_context,
            " prefills with context (vLLM asserts max_context_chunk > 0)");
  if (dcp_size > 1 && p.max_context_chunk % dcp_size != 0)
    invalid(prefix, colon, "max_context_chunk=", p.max_context_chunk,
            " is not a multiple of decode_context_parallel_size=", dcp_size,
            " (vLLM asserts it; use a block size divisible by the DCP size)");
  p.num_chunks = cdiv(p.max_context_len, p.max_context_chunk);
  // Chunk 0 is the largest: every later chunk of a request is no longer than its first.
  for (int64_t i = 0; i < num_prefills; ++i)
    p.max_chunk_tokens += chunk_len(context_lens[i], 0, p.max_context_chunk);
  if (dcp_size > 1) p.local_chunk = padded_local(p.max_context_chunk, dcp_size, interleave);
  return p;
}

void mla_chunk_host_lists(const int32_t* context_lens, int64_t num_prefills,
                          const MlaChunkPlan& plan, int32_t dcp_size, int32_t interleave,
                          const MlaChunkHostLists& out) {
  const int64_t P = num_prefills, m = plan.max_context_chunk, l = plan.local_chunk;
  const bool dcp = dcp_size > 1;
  for (int64_t k = 0; k < plan.num_chunks; ++k) {
    int64_t total = 0, local_total = 0, longest = 0;
    if (out.cu_seq_lens_lst) out.cu_seq_lens_lst[k * (P + 1)] = 0;
    for (int64_t i = 0; i < P; ++i) {
      const int64_t len = chunk_len(context_lens[i], k, m);
      total += len;
      longest = std::max(longest, len);
      if (out.seq_lens) out.seq_lens[k * P + i] = static_cast<int32_t>(len);
      if (out.cu_seq_lens_lst)
        out.cu_seq_lens_lst[k * (P + 1) + i + 1] = static_cast<int32_t>(total);
      if (dcp) {
        const int64_t local = chunk_len(padded_local(context_lens[i], dcp_size, interleave), k, l);
        local_total += local;
        if (out.padded_local_chunk_seq_lens)
          out.padded_local_chunk_seq_lens[k * P + i] = static_cast<int32_t>(local);
      }
    }
    if (out.seq_tot) out.seq_tot[k] = static_cast<int32_t>(dcp ? local_total : total);
    if (out.max_seq_lens) out.max_seq_lens[k] = static_cast<int32_t>(longest);
    if (out.chunk_total_token) out.chunk_total_token[k] = static_cast<int32_t>(total);
  }
  if (dcp && out.local_context_lens_allranks)
    for (int64_t i = 0; i < P; ++i)
      for (int32_t r = 0; r < dcp_size; ++r)
        out.local_context_lens_allranks[i * dcp_size + r] =
            dcp_local_len(context_lens[i], dcp_size, r, interleave);
}

void mla_prefill_metadata(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                          int64_t num_prefills, const MlaChunkPlan& plan, int32_t dcp_size,
                          int32_t interleave, int64_t token_width, const MlaPrefillOut& out) {
  if (out.token_to_seq != nullptr && out.cu_seq_lens == nullptr)
    invalid("mla_prefill_metadata: token_to_seq is derived from cu_seq_lens, which is NULL");
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, mla_prefill_metadata, qsl, seq_lens, num_prefills, plan, dcp_size,
                            interleave, token_width, out);
  const int64_t P = num_prefills, m = plan.max_context_chunk, l = plan.local_chunk;
  const bool dcp = dcp_size > 1;
  for (int64_t i = 0; i <= P; ++i) {
    if (out.query_start_loc) out.query_start_loc[i] = qsl[i] - qsl[0];
    if (out.query_seq_lens && i < P) out.query_seq_lens[i] = qsl[i + 1] - qsl[i];
  }
  for (int64_t k = 0; k < plan.num_chunks; ++k) {
    int64_t total = 0, local_total = 0;
    if (out.cu_seq_lens) out.cu_seq_lens[k * (P + 1)] = 0;
    if (dcp && out.padded_local_cu_seq_lens) out.padded_local_cu_seq_lens[k * (P + 1)] = 0;
    for (int64_t i = 0; i < P; ++i) {
      const int64_t context = static_cast<int64_t>(seq_lens[i]) - (qsl[i + 1] - qsl[i]);
      const int64_t len = chunk_len(context, k, m);
      if (out.token_to_seq)
        for (int64_t t = total; t < total + len && t < token_width; ++t)
          out.token_to_seq[k * token_width + t] = static_cast<int32_t>(i);
      total += len;
      if (out.cu_seq_lens) out.cu_seq_lens[k * (P + 1) + i + 1] = static_cast<int32_t>(total);
      if (out.starts) out.starts[k * P + i] = static_cast<int32_t>(k * (dcp ? l : m));
      if (dcp) {
        local_total += chunk_len(padded_local(context, dcp_size, interleave), k, l);
        if (out.padded_local_cu_seq_lens)
          out.padded_local_cu_seq_lens[k * (P + 1) + i + 1] = static_cast<int32_t>(local_total);
      }
    }
    if (out.token_to_seq)
      for (int64_t t = std::max<int64_t>(total, 0); t < token_width; ++t)
        out.token_to_seq[k * token_width + t] = 0;
  }
}

}  // namespace attn::ops
