// See rocm_ragged_rows.h.
#include "backends/rocm_ragged_rows.h"

#include <algorithm>

#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn::backends {

void check_rocm_platform(const BackendDescriptor& d, const BuilderConfig& c) {
  if (!c.platform_rocm)
    fail(Status::kUnsupported, d.name,
         " is vLLM 0.33's ROCm builder (its module reads the AMD GPU's architecture when "
         "imported): config->platform_rocm=0");
}

void set_ragged_rows(Metadata& m, size_t indices_field, size_t indptr_field, const int32_t* dense,
                     int64_t rows, int64_t width, int64_t row_stride, const int32_t* lens,
                     int64_t entries_per_row, bool gfx950, int32_t* ragged, int32_t* indptr,
                     Device device, const ops::Exec& exec) {
  ops::ragged_from_dense(exec, dense, rows, width, row_stride, lens, indptr, ragged);
  // _copy_ragged_to_graph_buffers: buffer[:max(rows * entries_per_row, 1)], on gfx950 cut to
  // the dense source's entries (rows * width)
  const int64_t entries = rows * (gfx950 ? width : entries_per_row);
  m.set_tensor(indices_field, make_vector(ragged, device, kInt32, std::max<int64_t>(entries, 1)),
               true);
  m.set_tensor(indptr_field, make_vector(indptr, device, kInt32, rows + 1), true);
}

}  // namespace attn::backends
