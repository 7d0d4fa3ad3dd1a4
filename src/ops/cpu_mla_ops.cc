// AMX_MLA's ops, written once (src/ops/launch.h): the expanded block table is one row per
// request whose lanes take its columns (each writing the column's block_size rows); the int64
// ranges and lengths one item per entry.
#include "ops/cpu_mla_ops.h"

#include "ops/launch.h"

namespace attn::ops {
namespace {

using kernels::Lanes;

// vLLM 0.33's _expand_block_table: table * block_size + arange in the table's int32, then (the
// prefills') .to(torch.int64). torch's int32 arithmetic wraps; so does this one, through
// uint32 (no signed overflow on any block id, INT32_MAX and INT32_MIN included).
template <class T, class P>
void expand_on(P& p, const int32_t* bt, int64_t stride, int64_t rows, int64_t cols, int32_t bs,
               T* out) {
  p.for_each_row(rows, [=] ATTN_HD(int64_t r, Lanes lanes) {
    const int32_t* row = bt + r * stride;
    T* dst = out + r * cols * bs;
    lanes.for_each(cols, [&](int64_t j) {
      const uint32_t base = static_cast<uint32_t>(row[j]) * static_cast<uint32_t>(bs);
      for (int32_t o = 0; o < bs; ++o)
        dst[j * bs + o] = static_cast<T>(static_cast<int32_t>(base + static_cast<uint32_t>(o)));
    });
  });
}

template <class P>
void iota_i64_on(P& p, int64_t* out, int64_t n) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = i; });
}

template <class P>
void extend_lens_on(P& p, const int32_t* qsl, int64_t n, int64_t* lens, int64_t* starts) {
  p.for_each(n, [=] ATTN_HD(int64_t i) {
    lens[i] = static_cast<int64_t>(qsl[i + 1]) - qsl[i];
    starts[i] = qsl[i];
  });
}

}  // namespace

void expand_block_table_i32(const Exec& exec, const int32_t* bt, int64_t stride, int64_t rows,
                            int64_t cols, int32_t block_size, int32_t* out) {
  if (rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, expand_on<int32_t>, bt, stride, rows, cols, block_size, out);
}

void expand_block_table_i64(const Exec& exec, const int32_t* bt, int64_t stride, int64_t rows,
                            int64_t cols, int32_t block_size, int64_t* out) {
  if (rows <= 0 || cols <= 0) return;
  ATTN_LAUNCH(exec, expand_on<int64_t>, bt, stride, rows, cols, block_size, out);
}

void iota_i64(const Exec& exec, int64_t* out, int64_t n) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, iota_i64_on, out, n);
}

void extend_lens_i64(const Exec& exec, const int32_t* qsl, int64_t n, int64_t* lens,
                     int64_t* starts) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, extend_lens_on, qsl, n, lens, starts);
}

}  // namespace attn::ops
