// ROCM_AITER_MLA's decode plan (mla_rocm_aiter_plan.h).
#include "backends/mla_rocm_aiter_plan.h"

#include <algorithm>

#include "core/error.h"

namespace attn::backends {

int64_t aiter_uniform_padded_mtp_qo_len(const int32_t* qsl, int64_t n, int64_t max_qo_len,
                                        int64_t num_decode_tokens) {
  if (n == 0 || num_decode_tokens <= 0 || num_decode_tokens % n != 0) return 0;
  const int64_t uniform = num_decode_tokens / n;
  if (uniform <= 1) return 0;
  int64_t sum = 0, positive = 0, first_zero = -1;
  for (int64_t i = 0; i < n; ++i) sum += qsl[i + 1] - qsl[i];
  if (num_decode_tokens <= sum) return 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t q = qsl[i + 1] - qsl[i];
    if (q > 0) {
      ++positive;
      if (first_zero >= 0) return 0;  // a live row after a dummy one
    } else if (first_zero < 0) {
      first_zero = i;
    }
  }
  if (positive == n) return 0;
  if (positive > 0) {
    if (max_qo_len != uniform) return 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = qsl[i + 1] - qsl[i];
      if (q > 0 && q != uniform) return 0;
    }
  }
  return uniform;
}

AiterPlan plan_aiter_decode(const AiterPlanIn& in) {
  AiterPlan p;
  const int64_t n = in.num_decodes;
  int64_t measured = 0;
  for (int64_t i = 0; i < n; ++i) measured = std::max<int64_t>(measured, in.qsl[i + 1] - in.qsl[i]);
  p.varlen = in.varlen_qlen > 0 && in.causal;
  if (p.varlen) {
    p.max_qo_len = in.varlen_qlen;
    p.pad = true;
  } else {
    p.max_qo_len = measured;
    const int64_t padded =
        aiter_uniform_padded_mtp_qo_len(in.qsl, n, p.max_qo_len, in.num_decode_tokens);
    if (padded > 0) p.max_qo_len = padded;
    p.pad = padded > 0;
  }
  if (p.pad)
    p.uniform_qo = static_cast<int32_t>(p.max_qo_len);
  else if (!in.full_graphs && p.max_qo_len == 1)
    p.uniform_qo = 1;
  // Gluon (gfx950 only) and the DCP row-view routes never run here (docs/backends/rocm.md).
  constexpr int64_t kMinHeads = 16, kPaddedMaxPsQlen = 4;
  p.persistent = (!in.causal || in.decode_heads >= kMinHeads ||
                  p.max_qo_len <= kPaddedMaxPsQlen || in.fp8) &&
                 p.max_qo_len >= 1 && p.max_qo_len <= in.mtp_qlen;
  if (!in.causal && p.max_qo_len == 2 && in.fp8) {
    const int64_t kernel_heads = (in.decode_heads + 15) / 16 * 16;
    if (kernel_heads != 32 && kernel_heads != 64 && kernel_heads != 96 && kernel_heads != 128)
      invalid("ROCM_AITER_MLA: AITER has no non-causal fp8 MLA kernel for this 2-token query "
              "block (", in.decode_heads, " heads pad to ", kernel_heads,
              "; vLLM 0.33 raises ValueError: pin the draft to TRITON_MLA)");
  }
  if (p.persistent) {
    bool uniform = true;
    for (int64_t i = 0; i < n; ++i) uniform = uniform && in.qsl[i + 1] - in.qsl[i] == p.max_qo_len;
    p.uni_seqlen_qo = p.pad || uniform ? p.max_qo_len : -1;
  }
  return p;
}

}  // namespace attn::backends
