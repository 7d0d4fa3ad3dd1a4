// CommonAttentionMetadata: the batch as the scheduler describes it, shared by every layer and
// backend; its validation (what vLLM asserts or trusts, checked here with named messages), its
// derived host-side values and vLLM's unpadded().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/abi_fields.h"
#include "core/error.h"
#include "core/metadata.h"
#include "core/tensor.h"

namespace attn {

/// attn_common_metadata_t's fields (core/abi_fields.h lists them, attn_c.h documents them),
/// then what validate() derives.
struct CommonMetadata {
  ATTN_COMMON_METADATA_FIELDS(ATTN_CORE_MEMBER)

  // Set by validate(): host views, never a device sync.
  const int32_t* qsl_host = nullptr;       ///< query_start_loc_cpu, or query_start_loc on host.
  /// The host sequence lengths a builder uses, as vLLM 0.33 does: the exact lengths when known
  /// (seq_lens_cpu, libattn's extension, or seq_lens itself in host memory), else 0.33's
  /// seq_lens_cpu_upper_bound; null when neither exists. Read it through host_seq_lens().
  const int32_t* seq_lens_host = nullptr;
  bool seq_lens_host_exact = false;        ///< seq_lens_host holds exact lengths (not the bound).
  /// max(seq_lens_host) for the builder being built: batch_max_seq_len when its limits check
  /// values, else -1 (unknown); apply_limits() sets it.
  int64_t host_max_seq_len = -1;
  /// max(seq_lens_host) as validate_batch() found it while checking values; -1 when it checked
  /// none or there is no host seq_lens.
  int64_t batch_max_seq_len = -1;
  /// The same for dcp_local_seq_lens: dcp_local_seq_lens_cpu, or dcp_local_seq_lens in host
  /// memory, else dcp_local_seq_lens_cpu_upper_bound; null when none is given.
  const int32_t* dcp_local_seq_lens_host = nullptr;
  /// The limits validate() checked the host lengths against (CommonLimits), kept for the
  /// lengths a builder later copies from the device (check_device_seq_lens).
  int64_t checked_max_model_len = -1;
  int32_t checked_block_size = 0;
  bool checked_encoder_lens = false;

  /// The host sequence lengths a builder should use (vLLM 0.33's choice; see seq_lens_host):
  /// exact when seq_lens_exact(), else the upper bound. Null when there is none.
  const int32_t* host_seq_lens() const { return seq_lens_host; }
  /// Whether host_seq_lens() is exact (false: vLLM 0.33's upper bound, which may exceed the
  /// device value on async spec-decode rows; a builder that needs exact decode lengths, as
  /// 0.33's FlashInfer does with spec tokens, must read the device seq_lens instead).
  bool seq_lens_exact() const { return seq_lens_host != nullptr && seq_lens_host_exact; }
  /// vLLM 0.33's seq_lens_cpu_upper_bound (host) when given, else host_seq_lens() (a caller
  /// without the bound: its exact lengths bound themselves). For the host reads 0.33 makes from
  /// the bound (prefill plans: exact for a prefilling row, optimistic for an async spec-decode
  /// row a uniform split counts as a prefill). Null when neither exists.
  const int32_t* seq_lens_upper_bound() const {
    return seq_lens_cpu_upper_bound ? seq_lens_cpu_upper_bound->as<const int32_t>()
                                    : seq_lens_host;
  }
  /// The host DCP-local lengths a builder should use (exact mirror, else the bound); null when
  /// none is given.
  const int32_t* host_dcp_local_seq_lens() const { return dcp_local_seq_lens_host; }
  /// causal_per_request[i] != 0 when the tensor is given and in host memory, else `causal`.
  bool causal_for(int64_t i) const;

  /// The is_prefilling flags as a value a loop keeps in registers: flags(i) is
  /// is_prefilling[i] != 0, false when is_prefilling is absent (validate() checked the dtype).
  /// A loop that stores bytes (which may alias this struct) reads them through it, not through
  /// prefilling(i), so that it does not reload the optional per request (the Mamba family's
  /// per-request loops: bench hybrid4_group/decode_256x4k).
  struct PrefillingFlags {
    const uint8_t* u8 = nullptr;
    const int32_t* i32 = nullptr;
    bool operator()(int64_t i) const {
      return i32 != nullptr ? i32[i] != 0 : u8 != nullptr && u8[i] != 0;
    }
  };
  PrefillingFlags prefilling_flags() const {
    PrefillingFlags f;
    if (is_prefilling && is_prefilling->dtype.bits == 32)
      f.i32 = is_prefilling->as<const int32_t>();
    else if (is_prefilling)
      f.u8 = is_prefilling->as<const uint8_t>();
    return f;
  }
  /// is_prefilling[i] != 0 (false when is_prefilling is absent).
  bool prefilling(int64_t i) const { return prefilling_flags()(i); }
  /// Whether any of the num_reqs is_prefilling flags is set (false when is_prefilling is
  /// absent), in one vectorized pass: the builders whose per-request rules need a set flag skip
  /// their loops on a decode-only step.
  bool any_prefilling() const;

  int64_t query_len(int64_t i) const {
    return static_cast<int64_t>(qsl_host[i + 1]) - qsl_host[i];
  }
  /// vLLM's derived num_computed_tokens_cpu = seq_lens_cpu - query lengths, written to `out`
  /// (num_reqs entries). Error(kInvalidArgument) when no host copy of seq_lens exists.
  void num_computed_tokens_cpu(int32_t* out) const;
};

/// What a batch is checked against. Builders pass their config; batch utilities pass none.
struct CommonLimits {
  std::optional<Device> device;    ///< Device tensors must be usable there.
  int64_t max_num_seqs = -1;       ///< -1: unchecked.
  int64_t max_num_batched_tokens = -1;
  int64_t max_model_len = -1;
  int32_t block_size = 0;          ///< >0: block table wide enough for cdiv(seq_len, block_size).
  bool full = false;               ///< Also compare device tensors with their host mirrors.
  /// false (ATTN_VALIDATE_TRUSTED, for a build that reads no values): shapes, dtypes, devices
  /// and scalars only, O(1) in the batch; host_max_seq_len is then -1 (unknown).
  bool values = true;
  bool require_tables = true;      ///< block_table_tensor and slot_mapping must be given.
  bool require_host_seq_lens = false;  ///< seq_lens must be readable on the host (or mirrored).
  /// false: a utility that never reads the sequence lengths (vLLM's split_decodes_and_prefills):
  /// seq_lens is not required (a utility_view without them holds none).
  bool reads_seq_lens = true;
  /// Cross attention: seq_lens are encoder lengths, which may be shorter than the decoder's
  /// query (no seq_len >= query_len check).
  bool seq_lens_are_encoder_lens = false;
};

/// The part of `common` a batch utility that returns only host scalars or lists reads (a
/// utility checks what it reads, no more: vLLM's split never looks at the slot mapping or the
/// block table): the scalars, causal, query_start_loc and its mirror; with `seq_lens` also
/// seq_lens, seq_lens_cpu and seq_lens_cpu_upper_bound; with `is_prefilling` that tensor.
/// Validate the result with CommonLimits::require_tables false (and reads_seq_lens as given).
CommonMetadata utility_view(const CommonMetadata& common, bool seq_lens, bool is_prefilling);

/// Checks shapes, dtypes, devices and (from host memory) values; fills the host views.
/// Throws Error(kInvalidArgument) naming "common-><field>" and the value.
/// = validate_scalars, validate_batch, validate_limits and apply_limits, in that order.
void validate(CommonMetadata& common, const CommonLimits& limits);

/// validate() in parts, so that several builders sharing one batch (build_group) check it once:
/// validate_batch() makes every check, and fills every host view, that depends on the batch and
/// on only these limits: `device`, `values`, `full` and `seq_lens_are_encoder_lens` (the other
/// limits are not read). It finds batch_max_seq_len. Call it after validate_scalars() passed.
void validate_batch(CommonMetadata& common, const CommonLimits& limits);
/// The checks of one builder's sizes on a batch validate_batch() accepted, O(1) unless one fails
/// (the failing loop names the request): seq_lens readable on the host when
/// `require_host_seq_lens`; with `values`, the longest host seq_len (batch_max_seq_len) within
/// `max_model_len` and the block table wide enough for it at `block_size`.
void validate_limits(const CommonMetadata& common, const CommonLimits& limits);
/// Sets what validate() derives from the limits rather than the batch (host_max_seq_len and
/// checked_*), O(1): before each builder's build of a batch validated once for several.
void apply_limits(CommonMetadata& common, const CommonLimits& limits);

/// What validate() checks before it reads any tensor descriptor: the scalars, that the required
/// tensors are given and that the logits fields come together. Given as plain values so that a
/// caller holding only the ABI struct can run them (fast prefill's pass-through, O(1)).
struct CommonScalars {
  int64_t num_reqs = 0;
  int64_t num_actual_tokens = 0;
  int64_t max_query_len = 0;
  int64_t max_seq_len = 0;
  int64_t num_logits_indices = 0;
  bool has_query_start_loc = false;
  bool has_seq_lens = false;
  bool has_block_table = false;
  bool has_slot_mapping = false;
  bool has_logits_indices = false;
  bool has_logits_indices_cpu = false;
};
/// The largest count or length a batch may hold (the kernels index with int32).
inline constexpr int64_t kMaxBatchIndex = 2147483647;

/// The first checks of validate(), with its messages (validate() calls it). Inline: fast
/// prefill's pass-through runs nothing else, and the passing path is a few compares.
inline void validate_scalars(const CommonScalars& c, const CommonLimits& lim) {
  // Scalars first: they size every shape check of validate().
  if (c.num_reqs < 0) invalid("common->num_reqs=", c.num_reqs, " is negative");
  if (c.num_reqs > kMaxBatchIndex)
    invalid("common->num_reqs=", c.num_reqs, " exceeds 2^31-1");
  if (lim.max_num_seqs >= 0 && c.num_reqs > lim.max_num_seqs)
    invalid("common->num_reqs=", c.num_reqs, " exceeds config->max_num_seqs=", lim.max_num_seqs);
  if (c.num_actual_tokens < 0)
    invalid("common->num_actual_tokens=", c.num_actual_tokens, " is negative");
  if (c.num_actual_tokens > kMaxBatchIndex)
    invalid("common->num_actual_tokens=", c.num_actual_tokens, " exceeds 2^31-1");
  if (lim.max_num_batched_tokens >= 0 && c.num_actual_tokens > lim.max_num_batched_tokens)
    invalid("common->num_actual_tokens=", c.num_actual_tokens,
            " exceeds config->max_num_batched_tokens=", lim.max_num_batched_tokens);
  if (c.max_query_len < 0) invalid("common->max_query_len=", c.max_query_len, " is negative");
  if (c.max_seq_len < 0) invalid("common->max_seq_len=", c.max_seq_len, " is negative");
  if (c.max_seq_len > kMaxBatchIndex)
    invalid("common->max_seq_len=", c.max_seq_len, " exceeds 2^31-1");

  // Required tensors.
  if (!c.has_query_start_loc) invalid("common->query_start_loc is NULL");
  if (!c.has_seq_lens && lim.reads_seq_lens) invalid("common->seq_lens is NULL");
  if (lim.require_tables && !c.has_block_table) invalid("common->block_table_tensor is NULL");
  if (lim.require_tables && !c.has_slot_mapping) invalid("common->slot_mapping is NULL");

  if (!c.has_logits_indices) {
    if (c.has_logits_indices_cpu)
      invalid(
          "common->logits_indices_padded_cpu is given but common->logits_indices_padded is NULL");
    if (c.num_logits_indices != 0)
      invalid("common->num_logits_indices=", c.num_logits_indices,
              " but common->logits_indices_padded is NULL");
  }
}

/// The scalars of `common` as validate_scalars() reads them.
CommonScalars scalars_of(const CommonMetadata& common);

/// The checks validate() makes on the host lengths, for `values` (num_reqs entries) a builder
/// copied from the device seq_lens (vLLM 0.33's seq_lens.cpu()): not negative, at least the
/// query length, at most max_seq_len, config->max_model_len and seq_lens_cpu_upper_bound, the
/// block table wide enough. A value that reaches the host from a device buffer sizes and
/// indexes host work: Error(kInvalidArgument) names common->seq_lens, the row and the value.
void check_device_seq_lens(const CommonMetadata& common, const int32_t* values);

/// vLLM's CommonAttentionMetadata.unpadded(num_actual_tokens, num_actual_reqs) of a validated
/// batch: views sliced to the real requests and tokens; the result is validated again. As 0.33:
/// per-request tensors keep num_actual_reqs rows, positions and mm_req_doc_ranges are dropped.
CommonMetadata unpadded(const CommonMetadata& common, int64_t num_actual_tokens,
                        int64_t num_actual_reqs);

/// The field names of metadata of kind "common", in ABI struct order.
const std::vector<std::string>& common_field_names();
/// A batch as metadata of kind "common" (tensor views, scalars; absent tensors are None).
Metadata to_metadata(const CommonMetadata& common);
/// to_metadata into metadata that to_metadata made before (same kind and fields): every field
/// and the build info assigned, nothing allocated.
void assign_metadata(const CommonMetadata& common, Metadata& out);

}  // namespace attn
