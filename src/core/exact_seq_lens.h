// vLLM 0.33's `seq_lens.cpu()` sync: the exact sequence lengths on the host, for the few places
// where 0.33 reads the device values rather than seq_lens_cpu_upper_bound (the local-attention
// virtual batches, FLASHINFER with speculative tokens, ROCM_AITER_FA's prefills and extends).
// Lengths copied from the device are checked as validate() checks a mirror
// (check_device_seq_lens) before any caller sizes or indexes work with them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common_metadata.h"

namespace attn {

/// The exact host lengths of a validated batch: host_seq_lens() when seq_lens_exact(); else the
/// device seq_lens copied into `storage` (a synchronous device-to-host copy, the sync vLLM 0.33
/// makes there) and checked (check_device_seq_lens). Throws Error(kInvalidArgument) naming
/// common->seq_lens when neither exists or a copied value fails a check.
const int32_t* exact_host_seq_lens(const CommonMetadata& c, std::vector<int32_t>& storage);

/// The same into caller-owned host memory of at least num_reqs entries (a builder's persistent
/// buffer: nothing is allocated); `storage` is written only when the lengths are copied.
const int32_t* exact_host_seq_lens(const CommonMetadata& c, int32_t* storage);

}  // namespace attn
