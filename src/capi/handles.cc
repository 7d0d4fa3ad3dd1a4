#include "capi/handles.h"

#include "capi/convert.h"

void attn_metadata::refresh() {
  const size_t n = core->size();
  if (views.size() != n) views.assign(n, attn_tensor_t{});
  for (size_t i = 0; i < n; ++i) {
    const attn::Field& f = core->field(i);
    if (f.kind == attn::FieldKind::kTensor) views[i] = attn::capi::from_tensor(f.tensor);
  }
}
