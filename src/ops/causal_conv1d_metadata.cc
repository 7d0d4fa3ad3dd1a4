// compute_causal_conv1d_metadata's device buffers (BLOCK_M = 8): host reference and CUDA
// dispatch.
#include "ops/batch_ops.h"
#include "ops/cuda_dispatch.h"

namespace attn::ops {

void causal_conv1d_metadata(const Exec& exec, const int32_t* qsl_p, int64_t num_prefills,
                            int64_t num_programs, int32_t* batch_ptr,
                            int32_t* token_chunk_offset_ptr) {
  if (exec.on_cuda)
    return ATTN_CUDA_LAUNCH(exec, causal_conv1d_metadata, qsl_p, num_prefills, num_programs,
                            batch_ptr, token_chunk_offset_ptr);
  constexpr int64_t kBlockM = 8;
  int64_t p = 0;
  for (int64_t r = 0; r < num_prefills; ++r) {
    const int64_t len = static_cast<int64_t>(qsl_p[r + 1]) - qsl_p[r];
    const int64_t nums = (len + kBlockM - 1) / kBlockM;
    for (int64_t k = 0; k < nums && p < num_programs; ++k, ++p) {  // never past the buffers
      batch_ptr[p] = static_cast<int32_t>(r);
      token_chunk_offset_ptr[p] = static_cast<int32_t>(k);
    }
  }
  for (; p < num_programs; ++p) batch_ptr[p] = token_chunk_offset_ptr[p] = -1;  // PAD_SLOT_ID
}

}  // namespace attn::ops
