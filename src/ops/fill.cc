// ops::fill_i32, written once (src/ops/launch.h).
#include "ops/batch_ops.h"
#include "ops/launch.h"

namespace attn::ops {
namespace {

template <class P>
void fill_on(P& p, int32_t* out, int64_t n, int32_t value) {
  p.for_each(n, [=] ATTN_HD(int64_t i) { out[i] = value; });
}

}  // namespace

void fill_i32(const Exec& exec, int32_t* out, int64_t n, int32_t value) {
  if (n <= 0) return;
  ATTN_LAUNCH(exec, fill_on, out, n, value);
}

}  // namespace attn::ops
