// ops::aiter_mla_decode_tables (vLLM 0.33's AiterMLAMetadataBuilder._build_decode,
// _expand_page_indices_kernel and _fill_varlen_rows), written once (src/ops/launch.h): the -1
// fill of the indices; a scan of the kernel lengths gives indptr (and qo_indptr);
// a row per decode writes its kernel length and expands its block-table row into per-token
// indices; the tails of indptr and qo_indptr; with varlen rows a zero fill of o_rows and a row
// per decode over its padded query rows. No planner.
#include "index_math.h"
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::iclamp;
using kernels::imin;
using kernels::Lanes;

template <class P>
void aiter_mla_decode_on(P& p, const AiterMlaDecodeArgs& args) {
  const AiterMlaDecodeArgs a = args;
  const int64_t n = a.num_reqs;
  // full CUDA graphs: every index -1 first (a constant, so that the host's loop is a memset:
  // fill_i32's runtime value is ~25% slower on this buffer of max_num_seqs * max_model_len)
  if (a.reset_indices) {
    int32_t* indices = a.indices;
    p.for_each(a.indices_capacity, [=] ATTN_HD(int64_t i) { indices[i] = -1; });
  }
  // seq_lens_for_kernel: varlen pads every query to pad_qlen; uniform MTP gives an empty
  // (padded) request pad_qlen
  auto kernel_len = [=] ATTN_HD(int64_t r) -> int64_t {
    const int64_t q = a.query_start_loc[r + 1] - a.query_start_loc[r];
    const int64_t seq = a.seq_lens[r];
    if (a.varlen) return seq + a.pad_qlen - q;
    return a.pad_qlen > 0 && q <= 0 ? a.pad_qlen : seq;
  };
  p.scan(
      n + 1, [=] ATTN_HD(int64_t i) -> int64_t { return i == 0 ? 0 : kernel_len(i - 1); },
      [=] ATTN_HD(int64_t i, int64_t sum) {
        a.indptr[i] = static_cast<int32_t>(sum);
        a.qo_indptr[i] = a.uniform_qo > 0 ? static_cast<int32_t>(i * a.uniform_qo)
                                          : a.query_start_loc[i];
      });
  p.for_each_row(n, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t len = kernel_len(r);
    if (lanes.leader() && a.kernel_seq_lens) a.kernel_seq_lens[r] = static_cast<int32_t>(len);
    // indptr is int32 (wrapping past 2^31, as the host's cast): read back as unsigned, it is the
    // exact start for every total below 2^32 entries
    const int64_t start = static_cast<uint32_t>(a.indptr[r]);
    const int64_t K = a.kernel_block_size, seq = a.seq_lens[r];
    const int32_t* row = a.block_table + r * a.bt_stride;
    lanes.for_each(imin(len, a.indices_capacity - start), [&](int64_t t) {
      const int64_t s = a.varlen && t >= seq ? 0 : t;
      const int64_t col = iclamp<int64_t>(s / K, 0, a.bt_width - 1);
      a.indices[start + t] = static_cast<int32_t>(row[col] * K + s % K);
    });
  });
  p.for_each(a.indptr_capacity - (n + 1), [=] ATTN_HD(int64_t i) {
    a.indptr[n + 1 + i] = a.indptr[n];
    a.qo_indptr[n + 1 + i] = a.qo_indptr[n];
  });
  if (!a.varlen || a.q_rows == nullptr) return;
  p.for_each(a.o_rows_size, [=] ATTN_HD(int64_t i) { a.o_rows[i] = 0; });
  const int64_t w = a.pad_qlen;
  p.for_each_row(n, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int64_t q = a.query_start_loc[r + 1] - a.query_start_loc[r];
    const int64_t first = a.query_start_loc[r];
    // row i = r * w + j is real when j < q: q_rows[i] = its packed token, o_rows[token] = i
    lanes.for_each(w, [&](int64_t j) {
      const int64_t i = r * w + j, packed = first + j;
      const bool real = j < q;
      a.q_rows[i] = real ? packed : 0;
      if (real && packed >= 0 && packed < a.o_rows_size) a.o_rows[packed] = i;
    });
    // o_rows' last entry (the dump slot) takes the last non-real row of all (torch's sequential
    // scatter): this request's last, when it has one
    if (lanes.leader() && q < w && a.o_rows_size > 0)
      kernels::atomic_max_u64(reinterpret_cast<uint64_t*>(a.o_rows + a.o_rows_size - 1),
                              static_cast<uint64_t>(r * w + w - 1));
  });
}

}  // namespace

void aiter_mla_decode_tables(const Exec& exec, const AiterMlaDecodeArgs& a) {
  ATTN_LAUNCH(exec, aiter_mla_decode_on, a);
}

}  // namespace attn::ops
