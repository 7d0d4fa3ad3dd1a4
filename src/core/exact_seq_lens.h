// vLLM 0.33's `seq_lens.cpu()` sync: the exact sequence lengths on the host, for the few places
// where 0.33 reads the device values rather than seq_lens_cpu_upper_bound (the local-attention
// virtual batches, FLASHINFER with speculative tokens).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common_metadata.h"

namespace attn {

/// The exact host lengths of a validated batch: host_seq_lens() when seq_lens_exact(); else the
/// device seq_lens copied into `storage` (a synchronous device-to-host copy, the sync vLLM 0.33
/// makes there). Throws Error(kInvalidArgument) naming common->seq_lens when neither exists.
const int32_t* exact_host_seq_lens(const CommonMetadata& c, std::vector<int32_t>& storage);

/// The same into caller-owned host memory of at least num_reqs entries (a builder's persistent
/// buffer: nothing is allocated); `storage` is written only when the lengths are copied.
const int32_t* exact_host_seq_lens(const CommonMetadata& c, int32_t* storage);

}  // namespace attn
