// vLLM 0.33's seq_lens.cpu() sync (see exact_seq_lens.h).
#include "core/exact_seq_lens.h"

#include "core/error.h"
#include "ops/device_runtime.h"

namespace attn {

const int32_t* exact_host_seq_lens(const CommonMetadata& c, int32_t* storage) {
  if (c.seq_lens_exact()) return c.host_seq_lens();
  if (!c.seq_lens)
    invalid("common->seq_lens is NULL; the exact sequence lengths are needed");
  const Tensor& s = *c.seq_lens;
  if (c.num_reqs == 0) return storage;
  if (s.host_accessible()) {  // validate() makes this exact already; kept for completeness
    for (int64_t i = 0; i < c.num_reqs; ++i) storage[i] = s.as<const int32_t>()[i * s.strides[0]];
    check_device_seq_lens(c, storage);
    return storage;
  }
  if (s.strides[0] != 1)
    invalid("common->seq_lens has stride ", s.strides[0], "; the exact lengths are copied from "
            "the device as one contiguous range");
  // cudaMemcpy: it waits for the legacy default stream, not for a non-blocking stream's pending
  // writes of seq_lens (vLLM's .cpu() orders after its current stream).
  ops::cuda_copy_to_host(s.device.id, storage, s.data,
                         static_cast<size_t>(c.num_reqs) * sizeof(int32_t));
  // Values from a device buffer are checked like a mirror's before they size or index anything
  // (the builders read them for page counts, chunk plans and host loops).
  check_device_seq_lens(c, storage);
  return storage;
}

const int32_t* exact_host_seq_lens(const CommonMetadata& c, std::vector<int32_t>& storage) {
  if (c.seq_lens_exact()) return c.host_seq_lens();
  storage.assign(static_cast<size_t>(c.num_reqs), 0);
  return exact_host_seq_lens(c, storage.data());
}

}  // namespace attn
