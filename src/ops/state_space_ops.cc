// The state-space variants' small ops (KIMI_K3_KDA, BAILING_LINEAR_ATTN, PLE_SHORT_CONV_ATTN),
// written once (src/ops/launch.h): one item per element (or row) for the counts, widening and
// padded copies; PLE_SHORT_CONV_ATTN's gather over its request order is one row whose lanes scan
// the spec and non-spec query lengths (kernels::row_scan). kda_spec_split lives with
// gdn_spec_split (gdn_metadata.cc).
#include "ops/state_space_ops.h"

#include "ops/launch.h"
#include "row_scan.h"

namespace attn::ops {
namespace {

using kernels::Lanes;
using Sums2 = kernels::Sums<2>;

template <class P>
void computed_tokens_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t n,
                        int32_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = seq_lens[i] - (qsl[i + 1] - qsl[i]); });
}

template <class P>
void widen_on(P& p, const int32_t* in, int64_t n, int64_t* out) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = in[i]; });
}

template <class P>
void mask_padded_rows_on(P& p, const int32_t* src, int64_t src_stride, int64_t rows,
                         int64_t cols, const int32_t* seq_lens, int32_t pad, int32_t* dst,
                         int64_t dst_stride, int64_t total_rows) {
  p.for_each(total_rows, [=] ATTN_HD(int64_t r) {
    int32_t* d = dst + r * dst_stride;
    const bool keep = r < rows && seq_lens[r] != 0;
    if (cols == 1) {  // one state column (the common case): no inner loop to set up
      d[0] = keep ? src[r * src_stride] : pad;
    } else if (keep) {
      const int32_t* s = src + r * src_stride;
      for (int64_t j = 0; j < cols; ++j) d[j] = s[j];
    } else {
      for (int64_t j = 0; j < cols; ++j) d[j] = pad;
    }
  });
}

template <class P>
void has_initial_on(P& p, const int32_t* qsl, const int32_t* seq_lens, int64_t rows,
                    int64_t total, uint8_t* out) {
  p.for_each(total, [=] ATTN_HD(int64_t i) {
    out[i] = i < rows && seq_lens[i] - (qsl[i + 1] - qsl[i]) > 0 ? 1 : 0;
  });
}

/// The sums over the order: the query lengths of the spec requests and of the non-spec ones.
template <class P>
void ple_spec_gather_on(P& p, const int32_t* qsl, const int32_t* seq_lens, const int32_t* bt,
                        int64_t bt_stride, const int32_t* accepted, const int32_t* order,
                        int64_t num_spec, int64_t num_non_spec, int64_t num_non_spec_decodes,
                        int32_t* non_spec_qsl_p, GdnSplitOut out) {
  p.for_each_row(1, [=] ATTN_HD(int64_t, Lanes lanes) {
    if (lanes.leader()) {
      if (out.spec_qsl) out.spec_qsl[0] = 0;
      if (out.non_spec_qsl) out.non_spec_qsl[0] = 0;
      if (non_spec_qsl_p && num_non_spec_decodes == 0) non_spec_qsl_p[0] = 0;
    }
    kernels::row_scan<2>(
        lanes, num_spec + num_non_spec,
        [&](int64_t j) {
          const int64_t r = order[j];
          const int64_t q = qsl[r + 1] - qsl[r];
          return j < num_spec ? Sums2{{q, 0}} : Sums2{{0, q}};
        },
        [&](int64_t j, const Sums2& before, const Sums2& own) {
          const int64_t r = order[j];
          const int32_t start = qsl[r];
          if (j < num_spec) {
            const int64_t q = own[0];
            if (out.spec_state) out.spec_state[j] = bt[r * bt_stride];
            if (out.spec_accepted) out.spec_accepted[j] = accepted[r];
            if (out.spec_qsl) out.spec_qsl[j + 1] = static_cast<int32_t>(before[0] + q);
            if (out.spec_token_indx)
              for (int64_t t = 0; t < q; ++t) out.spec_token_indx[before[0] + t] = start + t;
          } else {
            const int64_t k = j - num_spec, q = own[1];
            const auto sum = static_cast<int32_t>(before[1] + q);
            if (out.non_spec_state) out.non_spec_state[k] = bt[r * bt_stride];
            if (out.non_spec_has_initial) out.non_spec_has_initial[k] = seq_lens[r] - q > 0 ? 1 : 0;
            if (out.non_spec_qsl) out.non_spec_qsl[k + 1] = sum;
            if (non_spec_qsl_p && k + 1 >= num_non_spec_decodes)
              non_spec_qsl_p[k + 1 - num_non_spec_decodes] =
                  sum - static_cast<int32_t>(num_non_spec_decodes);
            if (out.non_spec_token_indx)
              for (int64_t t = 0; t < q; ++t) out.non_spec_token_indx[before[1] + t] = start + t;
          }
        });
  });
}

}  // namespace

void num_computed_tokens_i32(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                             int64_t num_reqs, int32_t* out) {
  if (num_reqs <= 0) return;
  ATTN_LAUNCH(exec, computed_tokens_on, qsl, seq_lens, num_reqs, out);
}

void widen_i32_i64(const Exec& exec, const int32_t* in, int64_t n, int64_t* out) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, widen_on, in, n, out);
}

void mask_padded_rows_i32(const Exec& exec, const int32_t* src, int64_t src_stride, int64_t rows,
                          int64_t cols, const int32_t* seq_lens, int32_t pad, int32_t* dst,
                          int64_t dst_stride, int64_t total_rows) {
  if (total_rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, mask_padded_rows_on, src, src_stride, rows, cols, seq_lens, pad, dst,
              dst_stride, total_rows);
}

void ple_spec_gather(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                     const int32_t* bt, int64_t bt_stride, const int32_t* accepted,
                     const int32_t* order, int64_t num_spec, int64_t num_non_spec,
                     int64_t num_non_spec_decodes, int32_t* non_spec_qsl_p,
                     const GdnSplitOut& out) {
  if (num_spec + num_non_spec <= 0) return;
  ATTN_LAUNCH(exec, ple_spec_gather_on, qsl, seq_lens, bt, bt_stride, accepted, order, num_spec,
              num_non_spec, num_non_spec_decodes, non_spec_qsl_p, out);
}

void has_initial_states_u8(const Exec& exec, const int32_t* qsl, const int32_t* seq_lens,
                           int64_t rows, int64_t total, uint8_t* out) {
  if (total <= 0) return;
  ATTN_LAUNCH(exec, has_initial_on, qsl, seq_lens, rows, total, out);
}

}  // namespace attn::ops
