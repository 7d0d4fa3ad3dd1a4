#include "core/common_metadata.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/device_runtime.h"

namespace attn {
namespace {

constexpr int64_t kMaxIndex = kMaxBatchIndex;

void expect_data(const Tensor& t, const char* name) {
  if (t.data == nullptr && t.numel() > 0) invalid(name, " has data=NULL and ", t.numel(), " elements");
}

// A tensor that lives beside the builder's work: on its device, or (no builder) on the same
// device as query_start_loc.
void expect_device(const Tensor& t, const char* name, const Device& where) {
  if (!usable_on(t, where))
    invalid(name, " is on ", t.device.to_string(), " but the build runs on ", where.to_string());
}

void expect_host(const Tensor& t, const char* name) {
  if (!t.host_accessible())
    invalid(name, " is on ", t.device.to_string(), "; a *_cpu mirror must be in host memory");
}

// The common case of check_vector and check_mirror in one inline test (issue 18: four calls per
// view were a third of an O(1) build's validation): a compact (n,) vector of `dtype` with data,
// in host memory. Anything else takes the checks that name what is wrong.
inline bool host_vector_ok(const Tensor& t, DType dtype, int64_t n) {
  return t.dtype == dtype && t.ndim == 1 && t.shape[0] == n && (n <= 1 || t.strides[0] == 1) &&
         (t.data != nullptr || n == 0) && t.device.type == kDeviceCPU;
}

void check_vector(const std::optional<Tensor>& t, const char* name, DType dtype, int64_t n,
                  const Device& where) {
  if (!t) return;
  if (!where.is_cuda() && host_vector_ok(*t, dtype, n)) return;
  expect_dtype(*t, name, dtype);
  expect_vector(*t, name, n);
  expect_data(*t, name);
  expect_device(*t, name, where);
}

void check_mirror(const std::optional<Tensor>& t, const char* name, DType dtype, int64_t n) {
  if (!t) return;
  if (host_vector_ok(*t, dtype, n)) return;
  expect_dtype(*t, name, dtype);
  expect_vector(*t, name, n);
  expect_data(*t, name);
  expect_host(*t, name);
}

// validate-full mode: read a device tensor back and compare it with its host mirror.
void compare_with_mirror(const Tensor& dev, const int32_t* host, int64_t n, const char* dev_name,
                         const char* host_name) {
  if (dev.host_accessible() || n == 0) return;
  std::vector<int32_t> copy(static_cast<size_t>(n));
  ops::cuda_copy_to_host(dev.device.id, copy.data(), dev.data, copy.size() * sizeof(int32_t));
  for (int64_t i = 0; i < n; ++i)
    if (copy[i] != host[i])
      invalid(dev_name, "[", i, "]=", copy[i], " differs from ", host_name, "[", i, "]=", host[i]);
}

// A per-request tensor that may live in host memory or where the batch lives.
void check_host_or_device(const std::optional<Tensor>& t, const char* name, DType dtype,
                          int64_t n, const Device& where) {
  if (!t) return;
  expect_dtype(*t, name, dtype);
  expect_vector(*t, name, n);
  expect_data(*t, name);
  if (!t->host_accessible() && !usable_on(*t, where))
    invalid(name, " is on ", t->device.to_string(), "; expected host memory or ",
            where.to_string());
}

// A tensor in host memory beside its *_cpu mirror (a host build's "device" tensors are host
// memory): they must hold the same values. Builders and ops on the host path read the tensor
// itself where vLLM reads the device tensor, and only the mirror's values were checked; a
// tensor that disagrees ("mirror right, tensor garbage") is refused here, with no sync.
// Device tensors are compared by ATTN_VALIDATE_FULL only (compare_with_mirror).
// compare_host_values is the comparison itself, out of line; compare_host_pair (below, inline)
// answers the common cases (no mirror, the same buffer) without a call (issue 31: ~20
// instructions per pair per build).
[[gnu::noinline]] void compare_host_values(const Tensor* t, const Tensor* mirror, int64_t n,
                                           const char* name, const char* mirror_name) {
  const int64_t size = t->dtype.bits / 8;
  const auto* a = static_cast<const char*>(t->data);
  const auto* b = static_cast<const char*>(mirror->data);
  // A dimension of size 1 may have any stride (even one whose byte stride overflows): only
  // n > 1 rows step by it, and then the view's validated extent bounds it.
  const int64_t sa = n > 1 ? t->strides[0] * size : size;
  const int64_t sb = n > 1 ? mirror->strides[0] * size : size;
  if (sa == size && sb == size && std::memcmp(a, b, static_cast<size_t>(n * size)) == 0) return;
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i * sa, b + i * sb, static_cast<size_t>(size)) == 0) continue;
    const auto value = [size](const char* p) -> int64_t {
      if (size == 8) return *reinterpret_cast<const int64_t*>(p);
      return *reinterpret_cast<const int32_t*>(p);
    };
    invalid(name, "[", i, "]=", value(a + i * sa), " differs from its host mirror ", mirror_name,
            "[", i, "]=", value(b + i * sb));
  }
}

inline void compare_host_pair(const std::optional<Tensor>& t, const std::optional<Tensor>& mirror,
                              int64_t n, const char* name, const char* mirror_name) {
  if (!t || !mirror || n == 0 || t->device.type != kDeviceCPU) return;
  if (t->data == mirror->data && t->strides[0] == mirror->strides[0]) return;
  compare_host_values(&*t, &*mirror, n, name, mirror_name);
}

// validate-full mode: a device tensor read back must not exceed its host upper bound.
void compare_with_bound(const Tensor& dev, const int32_t* bound, int64_t n, const char* dev_name,
                        const char* bound_name) {
  if (n == 0) return;
  std::vector<int32_t> copy(static_cast<size_t>(n));
  if (dev.host_accessible())
    std::memcpy(copy.data(), dev.data, copy.size() * sizeof(int32_t));
  else
    ops::cuda_copy_to_host(dev.device.id, copy.data(), dev.data, copy.size() * sizeof(int32_t));
  for (int64_t i = 0; i < n; ++i)
    if (copy[i] > bound[i])
      invalid(dev_name, "[", i, "]=", copy[i], " exceeds its upper bound ", bound_name, "[", i,
              "]=", bound[i]);
}

// The ABI 1.4 fields (vLLM 0.33.0's): shapes, dtypes, devices, and the values held on the host.
void validate_0_33_fields(const CommonMetadata& c, const Device& where, bool values) {
  check_mirror(c.seq_lens_cpu_upper_bound, "common->seq_lens_cpu_upper_bound", kInt32, c.num_reqs);
  check_mirror(c.dcp_local_seq_lens_cpu_upper_bound, "common->dcp_local_seq_lens_cpu_upper_bound",
               kInt32, c.num_reqs);
  if (c.positions) {
    const Tensor& t = *c.positions;
    expect_dtype(t, "common->positions", kInt64);
    if (t.ndim != 1) invalid("common->positions has ndim=", t.ndim, ", expected 1");
    if (t.shape[0] < c.num_actual_tokens)
      invalid("common->positions has shape (", t.shape[0],
              ",), fewer than common->num_actual_tokens=", c.num_actual_tokens);
    expect_vector(t, "common->positions", t.shape[0]);
    expect_data(t, "common->positions");
    expect_device(t, "common->positions", where);
  }
  check_vector(c.causal_per_request, "common->causal_per_request", kInt32, c.num_reqs, where);
  if (c.max_logits_per_req < -1 || c.max_logits_per_req > kMaxIndex)
    invalid("common->max_logits_per_req=", c.max_logits_per_req,
            " is not -1 (None) or in [0, 2^31-1]");
  if (c.req_idx) {
    const Tensor& t = *c.req_idx;
    expect_index_dtype(t, "common->req_idx");
    expect_vector(t, "common->req_idx", c.num_reqs);
    expect_data(t, "common->req_idx");
    expect_host(t, "common->req_idx");
  }
  if (c.mm_req_doc_ranges) {
    const Tensor& t = *c.mm_req_doc_ranges;
    const char* name = "common->mm_req_doc_ranges";
    expect_dtype(t, name, kInt32);
    if (t.ndim != 2 || t.shape[1] != 3)
      invalid(name, " has ndim=", t.ndim, t.ndim == 2 ? " and shape[1]=" : "",
              t.ndim == 2 ? std::to_string(t.shape[1]) : std::string(),
              ", expected (num_ranges, 3) rows (request, start, end)");
    if (!t.is_compact()) invalid(name, " is not compact (row-major, no gaps)");
    expect_data(t, name);
    expect_host(t, name);
    const int32_t* r = t.as<const int32_t>();
    int64_t prev = 0;
    // (none of the values under ATTN_VALIDATE_TRUSTED)
    for (int64_t k = 0; values && k < t.shape[0]; ++k, r += 3) {
      if (r[0] < 0 || r[0] >= c.num_reqs)
        invalid(name, "[", k, "] names request ", r[0], ", not in [0, common->num_reqs=",
                c.num_reqs, ")");
      if (r[0] < prev)
        invalid(name, "[", k, "] names request ", r[0], " after request ", prev,
                "; rows must be in non-decreasing request order");
      if (r[1] < 0 || r[2] < 0)
        invalid(name, "[", k, "]=(", r[0], ", ", r[1], ", ", r[2], ") has a negative position");
      prev = r[0];
    }
  }
  check_host_or_device(c.rswa_prefix_lens, "common->rswa_prefix_lens", kInt32, c.num_reqs, where);
  check_mirror(c.replayssm_decode_base_cpu, "common->replayssm_decode_base_cpu", kInt32,
               c.num_reqs);
  check_vector(c.replay_start, "common->replay_start", kInt32, c.num_reqs, where);
  if (!values) return;  // ATTN_VALIDATE_TRUSTED: the checks below read values
  if (c.rswa_prefix_lens && c.rswa_prefix_lens->host_accessible()) {
    const int32_t* v = c.rswa_prefix_lens->as<const int32_t>();
    for (int64_t i = 0; i < c.num_reqs; ++i)
      if (v[i] < 0) invalid("common->rswa_prefix_lens[", i, "]=", v[i], " is negative");
  }
  if (c.replayssm_decode_base_cpu) {
    const int32_t* v = c.replayssm_decode_base_cpu->as<const int32_t>();
    for (int64_t i = 0; i < c.num_reqs; ++i)
      if (v[i] < 0) invalid("common->replayssm_decode_base_cpu[", i, "]=", v[i], " is negative");
  }
  if (c.replay_start && c.replay_start->host_accessible()) {
    const int32_t* v = c.replay_start->as<const int32_t>();
    for (int64_t i = 0; i < c.num_reqs; ++i)
      if (v[i] < 0) invalid("common->replay_start[", i, "]=", v[i], " is negative");
  }
}

// The bounds' values: each bounds its exact counterpart (when given) and, for seq_lens, the
// query length and max_seq_len, as vLLM 0.33's runner guarantees.
void validate_bounds(const CommonMetadata& c, const CommonLimits& lim,
                     const int32_t* exact_seq_lens) {
  if (c.seq_lens_cpu_upper_bound) {
    const int32_t* b = c.seq_lens_cpu_upper_bound->as<const int32_t>();
    for (int64_t i = 0; i < c.num_reqs; ++i) {
      const int64_t q = c.query_len(i);
      if (b[i] < q && !lim.seq_lens_are_encoder_lens)
        invalid("common->seq_lens_cpu_upper_bound[", i, "]=", b[i],
                " is less than its query length ", q);
      if (b[i] < 0)
        invalid("common->seq_lens_cpu_upper_bound[", i, "]=", b[i], " is negative");
      if (b[i] > c.max_seq_len)
        invalid("common->seq_lens_cpu_upper_bound[", i, "]=", b[i],
                " exceeds common->max_seq_len=", c.max_seq_len);
      if (exact_seq_lens != nullptr && b[i] < exact_seq_lens[i])
        invalid("common->seq_lens_cpu_upper_bound[", i, "]=", b[i], " is less than the exact ",
                c.seq_lens_cpu ? "common->seq_lens_cpu[" : "common->seq_lens[", i, "]=",
                exact_seq_lens[i]);
    }
  }
  if (c.dcp_local_seq_lens_cpu_upper_bound) {
    const int32_t* b = c.dcp_local_seq_lens_cpu_upper_bound->as<const int32_t>();
    const int32_t* exact = c.dcp_local_seq_lens_cpu ? c.dcp_local_seq_lens_cpu->as<const int32_t>()
                                                    : nullptr;
    for (int64_t i = 0; i < c.num_reqs; ++i) {
      if (b[i] < 0)
        invalid("common->dcp_local_seq_lens_cpu_upper_bound[", i, "]=", b[i], " is negative");
      if (exact != nullptr && b[i] < exact[i])
        invalid("common->dcp_local_seq_lens_cpu_upper_bound[", i, "]=", b[i],
                " is less than the exact common->dcp_local_seq_lens_cpu[", i, "]=", exact[i]);
    }
  }
}

// An AVX2 clone next to the baseline one, chosen at load time through an IFUNC. Not under
// ThreadSanitizer: the IFUNC resolver runs during relocation, before the TSan runtime is up, and
// its instrumented entry crashes every program that loads libattn (the TSan lane of
// scripts/test.sh caught it). Not off x86-64, where "avx2" names no target.
#if defined(__SANITIZE_THREAD__)
#define ATTN_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ATTN_TSAN_BUILD 1
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATTN_TSAN_BUILD)
#define ATTN_VECTORIZED_PASS \
  __attribute__((noinline, optimize("O3"), target_clones("avx2", "default")))
#else
#define ATTN_VECTORIZED_PASS __attribute__((noinline))
#endif

// The per-request value checks of validate() as branch-free passes over 32-bit lanes, which the
// compiler vectorizes (issue 18: the default build's validation was ~4 ns per request, more
// than vLLM's whole TRITON_ATTN build at 1024 requests). They only say whether every request
// passes; the loops that name the first bad value run when one does not.
ATTN_VECTORIZED_PASS bool query_starts_ok(const int32_t* qsl, int64_t n,
                                                     int64_t max_query_len) {
  const uint32_t max_q = static_cast<uint32_t>(std::min<int64_t>(max_query_len, UINT32_MAX));
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    // With qsl[i + 1] >= qsl[i] the unsigned difference is the exact query length.
    const uint32_t d = static_cast<uint32_t>(qsl[i + 1]) - static_cast<uint32_t>(qsl[i]);
    bad |= static_cast<uint32_t>(qsl[i + 1] < qsl[i]) | static_cast<uint32_t>(d > max_q);
  }
  return bad == 0;
}

// query_starts_ok and every seq_len in [query length (unless encoder lengths), upper], in one
// pass; `longest` receives the largest seq_len.
ATTN_VECTORIZED_PASS bool seq_lens_ok(const int32_t* qsl, const int32_t* sl, int64_t n,
                                                 int64_t max_query_len, int32_t upper,
                                                 bool encoder, int32_t* longest) {
  const uint32_t max_q = static_cast<uint32_t>(std::min<int64_t>(max_query_len, UINT32_MAX));
  uint32_t bad = 0;
  const uint32_t check_query = encoder ? 0u : 1u;
  int32_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t d = static_cast<uint32_t>(qsl[i + 1]) - static_cast<uint32_t>(qsl[i]);
    const int32_t v = sl[i];
    bad |= static_cast<uint32_t>(qsl[i + 1] < qsl[i]) | static_cast<uint32_t>(d > max_q);
    bad |= static_cast<uint32_t>(v < 0) | static_cast<uint32_t>(v > upper) |
           (check_query & static_cast<uint32_t>(static_cast<uint32_t>(v) < d));
    top = v > top ? v : top;
  }
  *longest = top;
  return bad == 0;
}

// Whether any of n flags is set, as one OR over the lanes (vectorized).
template <class T>
ATTN_VECTORIZED_PASS bool any_set(const T* flags, int64_t n) {
  T any = 0;
  for (int64_t i = 0; i < n; ++i) any |= flags[i];
  return any != 0;
}

}  // namespace

bool CommonMetadata::any_prefilling() const {
  const PrefillingFlags f = prefilling_flags();
  if (f.i32 != nullptr) return any_set(f.i32, num_reqs);
  return f.u8 != nullptr && any_set(f.u8, num_reqs);
}

bool CommonMetadata::causal_for(int64_t i) const {
  if (causal_per_request && causal_per_request->host_accessible())
    return causal_per_request->as<const int32_t>()[i] != 0;
  return causal;
}

void CommonMetadata::num_computed_tokens_cpu(int32_t* out) const {
  if (seq_lens_host == nullptr)
    invalid("num_computed_tokens_cpu needs common->seq_lens_cpu (seq_lens is not in host memory)");
  for (int64_t i = 0; i < num_reqs; ++i)
    out[i] = static_cast<int32_t>(seq_lens_host[i] - query_len(i));
}

CommonScalars scalars_of(const CommonMetadata& c) {
  CommonScalars s;
  s.num_reqs = c.num_reqs;
  s.num_actual_tokens = c.num_actual_tokens;
  s.max_query_len = c.max_query_len;
  s.max_seq_len = c.max_seq_len;
  s.num_logits_indices = c.num_logits_indices;
  s.has_query_start_loc = c.query_start_loc.has_value();
  s.has_seq_lens = c.seq_lens.has_value();
  s.has_block_table = c.block_table_tensor.has_value();
  s.has_slot_mapping = c.slot_mapping.has_value();
  s.has_logits_indices = c.logits_indices_padded.has_value();
  s.has_logits_indices_cpu = c.logits_indices_padded_cpu.has_value();
  return s;
}

void validate(CommonMetadata& c, const CommonLimits& lim) {
  validate_scalars(scalars_of(c), lim);
  validate_batch(c, lim);
  validate_limits(c, lim);
  apply_limits(c, lim);
}

void apply_limits(CommonMetadata& c, const CommonLimits& lim) {
  c.checked_max_model_len = lim.max_model_len;
  c.checked_block_size = lim.block_size;
  c.checked_encoder_lens = lim.seq_lens_are_encoder_lens;
  c.host_max_seq_len = lim.values ? c.batch_max_seq_len : -1;
}

void validate_limits(const CommonMetadata& c, const CommonLimits& lim) {
  if (c.seq_lens_host == nullptr && lim.require_host_seq_lens)
    invalid("common->seq_lens_cpu is NULL; it is required when common->seq_lens is on ",
            c.seq_lens ? c.seq_lens->device.to_string() : std::string("no device (NULL)"),
            " (or vLLM 0.33's common->seq_lens_cpu_upper_bound)");
  // The longest host seq_len bounds them all: a compare per builder, a loop only to name the
  // request that fails. (None under ATTN_VALIDATE_TRUSTED for a build that reads no values.)
  const int32_t* sl = c.seq_lens_host;
  if (!lim.values || sl == nullptr) return;
  const int64_t width = c.block_table_tensor ? c.block_table_tensor->shape[1] : 0;
  // cdiv(seq, block_size) > width exactly when seq > width * block_size: no division per request.
  // (A table without rows may declare any width: saturate instead of overflowing.)
  int64_t table_tokens = INT64_MAX;
  if (lim.block_size > 0 && c.block_table_tensor &&
      __builtin_mul_overflow(width, static_cast<int64_t>(lim.block_size), &table_tokens))
    table_tokens = INT64_MAX;
  const int64_t longest = c.batch_max_seq_len;
  if ((lim.max_model_len < 0 || longest <= lim.max_model_len) && longest <= table_tokens) return;
  const char* sl_name =
      c.seq_lens_host_exact ? "common->seq_lens" : "common->seq_lens_cpu_upper_bound";
  for (int64_t i = 0; i < c.num_reqs; ++i) {
    if (lim.max_model_len >= 0 && sl[i] > lim.max_model_len)
      invalid(sl_name, "[", i, "]=", sl[i], " exceeds config->max_model_len=", lim.max_model_len);
    if (sl[i] > table_tokens) {
      const int64_t blocks = (static_cast<int64_t>(sl[i]) + lim.block_size - 1) / lim.block_size;
      invalid("common->block_table_tensor has ", width, " columns but request ", i, " needs cdiv(",
              sl_name + 8, "[", i, "]=", sl[i], ", block_size=", lim.block_size, ")=", blocks,
              " blocks");
    }
  }
}

void validate_batch(CommonMetadata& c, const CommonLimits& lim) {
  const Device where = lim.device ? *lim.device : c.query_start_loc->device;
  check_vector(c.query_start_loc, "common->query_start_loc", kInt32, c.num_reqs + 1, where);
  check_vector(c.seq_lens, "common->seq_lens", kInt32, c.num_reqs, where);
  check_mirror(c.query_start_loc_cpu, "common->query_start_loc_cpu", kInt32, c.num_reqs + 1);
  check_mirror(c.seq_lens_cpu, "common->seq_lens_cpu", kInt32, c.num_reqs);

  if (c.block_table_tensor) {
    const Tensor& bt = *c.block_table_tensor;
    expect_dtype(bt, "common->block_table_tensor", kInt32);
    expect_rows(bt, "common->block_table_tensor", c.num_reqs);
    expect_data(bt, "common->block_table_tensor");
    expect_device(bt, "common->block_table_tensor", where);
  }
  if (c.slot_mapping) {
    const Tensor& sm = *c.slot_mapping;
    expect_index_dtype(sm, "common->slot_mapping");
    // At least num_actual_tokens: vLLM's fast-prefill batch keeps the full slot mapping.
    if (sm.ndim != 1) invalid("common->slot_mapping has ndim=", sm.ndim, ", expected 1");
    if (sm.shape[0] < c.num_actual_tokens)
      invalid("common->slot_mapping has shape (", sm.shape[0], ",), fewer than common->num_actual_tokens=",
              c.num_actual_tokens);
    expect_vector(sm, "common->slot_mapping", sm.shape[0]);
    expect_data(sm, "common->slot_mapping");
    expect_device(sm, "common->slot_mapping", where);
  }

  if (c.logits_indices_padded) {
    const Tensor& li = *c.logits_indices_padded;
    expect_index_dtype(li, "common->logits_indices_padded");
    if (li.ndim != 1)
      invalid("common->logits_indices_padded has ndim=", li.ndim, ", expected 1");
    expect_vector(li, "common->logits_indices_padded", li.shape[0]);
    expect_data(li, "common->logits_indices_padded");
    expect_device(li, "common->logits_indices_padded", where);
    if (c.num_logits_indices < 0 || c.num_logits_indices > li.shape[0])
      invalid("common->num_logits_indices=", c.num_logits_indices,
              " is not in [0, len(logits_indices_padded)=", li.shape[0], "]");
    if (c.logits_indices_padded_cpu) {
      const Tensor& m = *c.logits_indices_padded_cpu;
      expect_index_dtype(m, "common->logits_indices_padded_cpu");
      if (m.dtype != li.dtype)
        invalid("common->logits_indices_padded_cpu has dtype ", m.dtype.to_string(),
                " but common->logits_indices_padded has ", li.dtype.to_string());
      expect_vector(m, "common->logits_indices_padded_cpu", li.shape[0]);
      expect_data(m, "common->logits_indices_padded_cpu");
      if (!m.host_accessible())
        invalid("common->logits_indices_padded_cpu is on ", m.device.to_string(),
                "; a *_cpu mirror must be in host memory");
    }
  }  // (without logits indices: validate_scalars checked the mirror and the count)
  check_vector(c.encoder_seq_lens, "common->encoder_seq_lens", kInt32, c.num_reqs, where);
  check_mirror(c.encoder_seq_lens_cpu, "common->encoder_seq_lens_cpu", kInt32, c.num_reqs);
  check_vector(c.dcp_local_seq_lens, "common->dcp_local_seq_lens", kInt32, c.num_reqs, where);
  check_mirror(c.dcp_local_seq_lens_cpu, "common->dcp_local_seq_lens_cpu", kInt32, c.num_reqs);
  // ABI 1.2: the Mamba family's build inputs.
  check_vector(c.num_accepted_tokens, "common->num_accepted_tokens", kInt32, c.num_reqs, where);
  check_vector(c.num_decode_draft_tokens, "common->num_decode_draft_tokens", kInt32, c.num_reqs,
               where);
  check_mirror(c.num_decode_draft_tokens_cpu, "common->num_decode_draft_tokens_cpu", kInt32,
               c.num_reqs);
  if (c.is_prefilling) {
    const Tensor& t = *c.is_prefilling;
    const bool byte = t.dtype.lanes == 1 && t.dtype.bits == 8 &&
                      (t.dtype.code == 0 || t.dtype.code == 1 || t.dtype.code == 6);
    if (!byte && t.dtype != kInt32)
      invalid("common->is_prefilling has dtype ", t.dtype.to_string(),
              ", expected bool, int8, uint8 or int32");
    expect_vector(t, "common->is_prefilling", c.num_reqs);
    expect_data(t, "common->is_prefilling");
    if (!t.host_accessible())
      invalid("common->is_prefilling is on ", t.device.to_string(),
              "; it is read on the host (vLLM keeps it on the CPU)");
  }

  validate_0_33_fields(c, where, lim.values);

  // Host views.
  if (c.query_start_loc_cpu)
    c.qsl_host = c.query_start_loc_cpu->as<const int32_t>();
  else if (c.query_start_loc->host_accessible())
    c.qsl_host = c.query_start_loc->as<const int32_t>();
  else
    invalid("common->query_start_loc_cpu is NULL; it is required when common->query_start_loc "
            "is on ", c.query_start_loc->device.to_string());
  // vLLM 0.33's choice of host lengths: exact when known, else the upper bound.
  c.seq_lens_host_exact = true;
  if (c.seq_lens_cpu)
    c.seq_lens_host = c.seq_lens_cpu->as<const int32_t>();
  else if (c.seq_lens && c.seq_lens->host_accessible())
    c.seq_lens_host = c.seq_lens->as<const int32_t>();
  else
    c.seq_lens_host = nullptr;
  const int32_t* exact_seq_lens = c.seq_lens_host;
  if (c.seq_lens_host == nullptr && c.seq_lens_cpu_upper_bound) {
    c.seq_lens_host = c.seq_lens_cpu_upper_bound->as<const int32_t>();
    c.seq_lens_host_exact = false;
  }
  if (c.dcp_local_seq_lens_cpu)
    c.dcp_local_seq_lens_host = c.dcp_local_seq_lens_cpu->as<const int32_t>();
  else if (c.dcp_local_seq_lens && c.dcp_local_seq_lens->host_accessible())
    c.dcp_local_seq_lens_host = c.dcp_local_seq_lens->as<const int32_t>();
  else if (c.dcp_local_seq_lens_cpu_upper_bound)
    c.dcp_local_seq_lens_host = c.dcp_local_seq_lens_cpu_upper_bound->as<const int32_t>();
  else
    c.dcp_local_seq_lens_host = nullptr;

  // Values, from host memory only (none under ATTN_VALIDATE_TRUSTED for a build that reads
  // none: the caller vouches for them, and that build only passes the views on).
  c.batch_max_seq_len = -1;
  if (!lim.values) return;
  const int32_t* qsl = c.qsl_host;
  if (qsl[0] != 0) invalid("common->query_start_loc[0]=", qsl[0], ", expected 0");
  // A fast pass first (vectorized, no branch per request): the query starts and, when they are
  // read on the host, the seq_lens against every bound at once. The loops that name the first
  // bad value (in the order of the checks) run only when it finds one.
  // (config->max_model_len and the block table's width are the builder's: validate_limits.)
  const int32_t* sl = c.seq_lens_host;
  int32_t top = 0;
  const bool lens_ok = sl != nullptr &&
                       seq_lens_ok(qsl, sl, c.num_reqs, c.max_query_len,
                                   static_cast<int32_t>(c.max_seq_len),  // in [0, 2^31-1]
                                   lim.seq_lens_are_encoder_lens, &top);
  const bool starts_ok =
      lens_ok || (sl == nullptr && query_starts_ok(qsl, c.num_reqs, c.max_query_len));
  for (int64_t i = 0; !starts_ok && i < c.num_reqs; ++i) {
    if (qsl[i + 1] < qsl[i])
      invalid("common->query_start_loc[", i + 1, "]=", qsl[i + 1],
              " is less than common->query_start_loc[", i, "]=", qsl[i]);
    const int64_t q = c.query_len(i);
    if (q > c.max_query_len)
      invalid("query length of request ", i, " is ", q, " (query_start_loc[", i + 1,
              "] - query_start_loc[", i, "]) but common->max_query_len=", c.max_query_len);
  }
  if (qsl[c.num_reqs] > c.num_actual_tokens)
    invalid("common->query_start_loc[", c.num_reqs, "]=", qsl[c.num_reqs],
            " exceeds common->num_actual_tokens=", c.num_actual_tokens);

  if (sl != nullptr) {
    const char* sl_name =
        c.seq_lens_host_exact ? "common->seq_lens" : "common->seq_lens_cpu_upper_bound";
    int64_t longest = top;
    for (int64_t i = 0; !lens_ok && i < c.num_reqs; ++i) {
      const int64_t q = c.query_len(i);
      if (sl[i] < q && !lim.seq_lens_are_encoder_lens)
        invalid(sl_name, "[", i, "]=", sl[i], " is less than its query length ", q);
      if (sl[i] < 0) invalid(sl_name, "[", i, "]=", sl[i], " is negative");
      if (sl[i] > c.max_seq_len)
        invalid(sl_name, "[", i, "]=", sl[i], " exceeds common->max_seq_len=",
                c.max_seq_len);
      if (sl[i] > longest) longest = sl[i];
    }
    c.batch_max_seq_len = longest;
  }
  validate_bounds(c, lim, exact_seq_lens);
  compare_host_pair(c.query_start_loc, c.query_start_loc_cpu, c.num_reqs + 1,
                    "common->query_start_loc", "common->query_start_loc_cpu");
  compare_host_pair(c.seq_lens, c.seq_lens_cpu, c.num_reqs, "common->seq_lens",
                    "common->seq_lens_cpu");
  compare_host_pair(c.encoder_seq_lens, c.encoder_seq_lens_cpu, c.num_reqs,
                    "common->encoder_seq_lens", "common->encoder_seq_lens_cpu");
  compare_host_pair(c.dcp_local_seq_lens, c.dcp_local_seq_lens_cpu, c.num_reqs,
                    "common->dcp_local_seq_lens", "common->dcp_local_seq_lens_cpu");
  compare_host_pair(c.num_decode_draft_tokens, c.num_decode_draft_tokens_cpu, c.num_reqs,
                    "common->num_decode_draft_tokens", "common->num_decode_draft_tokens_cpu");
  if (c.logits_indices_padded)
    compare_host_pair(c.logits_indices_padded, c.logits_indices_padded_cpu,
                      c.logits_indices_padded->shape[0], "common->logits_indices_padded",
                      "common->logits_indices_padded_cpu");
  if (c.encoder_seq_lens_cpu) {
    const int32_t* enc = c.encoder_seq_lens_cpu->as<const int32_t>();
    for (int64_t i = 0; i < c.num_reqs; ++i)
      if (enc[i] < 0) invalid("common->encoder_seq_lens_cpu[", i, "]=", enc[i], " is negative");
  }

  if (lim.full) {
    compare_with_mirror(*c.query_start_loc, qsl, c.num_reqs + 1, "common->query_start_loc",
                        "common->query_start_loc_cpu");
    if (c.seq_lens_cpu && c.seq_lens)
      compare_with_mirror(*c.seq_lens, c.seq_lens_host, c.num_reqs, "common->seq_lens",
                          "common->seq_lens_cpu");
    if (c.seq_lens_cpu_upper_bound && c.seq_lens && !c.seq_lens->host_accessible())
      compare_with_bound(*c.seq_lens, c.seq_lens_cpu_upper_bound->as<const int32_t>(),
                         c.num_reqs, "common->seq_lens", "common->seq_lens_cpu_upper_bound");
    if (c.dcp_local_seq_lens && c.dcp_local_seq_lens_cpu_upper_bound &&
        !c.dcp_local_seq_lens->host_accessible())
      compare_with_bound(*c.dcp_local_seq_lens,
                         c.dcp_local_seq_lens_cpu_upper_bound->as<const int32_t>(), c.num_reqs,
                         "common->dcp_local_seq_lens",
                         "common->dcp_local_seq_lens_cpu_upper_bound");
    if (c.num_decode_draft_tokens && c.num_decode_draft_tokens_cpu)
      compare_with_mirror(*c.num_decode_draft_tokens,
                          c.num_decode_draft_tokens_cpu->as<const int32_t>(), c.num_reqs,
                          "common->num_decode_draft_tokens", "common->num_decode_draft_tokens_cpu");
  }
}

void check_device_seq_lens(const CommonMetadata& c, const int32_t* v) {
  const char* name = "common->seq_lens";
  const int32_t* bound = c.seq_lens_cpu_upper_bound
                             ? c.seq_lens_cpu_upper_bound->as<const int32_t>() : nullptr;
  const int64_t width = c.block_table_tensor ? c.block_table_tensor->shape[1] : 0;
  const int32_t bs = c.checked_block_size;
  for (int64_t i = 0; i < c.num_reqs; ++i) {
    const int64_t q = c.qsl_host != nullptr ? c.query_len(i) : 0;
    if (v[i] < 0) invalid(name, "[", i, "]=", v[i], " (read from the device) is negative");
    if (v[i] < q && !c.checked_encoder_lens)
      invalid(name, "[", i, "]=", v[i], " (read from the device) is less than its query length ",
              q);
    if (v[i] > c.max_seq_len)
      invalid(name, "[", i, "]=", v[i], " (read from the device) exceeds common->max_seq_len=",
              c.max_seq_len);
    if (c.checked_max_model_len >= 0 && v[i] > c.checked_max_model_len)
      invalid(name, "[", i, "]=", v[i], " (read from the device) exceeds config->max_model_len=",
              c.checked_max_model_len);
    if (bound != nullptr && v[i] > bound[i])
      invalid(name, "[", i, "]=", v[i], " (read from the device) exceeds its upper bound "
              "common->seq_lens_cpu_upper_bound[", i, "]=", bound[i]);
    if (bs > 0 && c.block_table_tensor && (static_cast<int64_t>(v[i]) + bs - 1) / bs > width)
      invalid("common->block_table_tensor has ", width, " columns but request ", i, " needs cdiv(",
              name, "[", i, "]=", v[i], " (read from the device), block_size=", bs, ") blocks");
  }
}

CommonMetadata utility_view(const CommonMetadata& c, bool seq_lens, bool is_prefilling) {
  CommonMetadata v;
  v.query_start_loc = c.query_start_loc;
  v.query_start_loc_cpu = c.query_start_loc_cpu;
  v.num_reqs = c.num_reqs;
  v.num_actual_tokens = c.num_actual_tokens;
  v.max_query_len = c.max_query_len;
  v.max_seq_len = c.max_seq_len;
  v.causal = c.causal;
  if (seq_lens) {
    v.seq_lens = c.seq_lens;
    v.seq_lens_cpu = c.seq_lens_cpu;
    v.seq_lens_cpu_upper_bound = c.seq_lens_cpu_upper_bound;
  }
  if (is_prefilling) v.is_prefilling = c.is_prefilling;
  return v;
}

CommonMetadata unpadded(const CommonMetadata& c, int64_t num_actual_tokens,
                        int64_t num_actual_reqs) {
  if (num_actual_reqs < 0 || num_actual_reqs > c.num_reqs)
    invalid("num_actual_reqs=", num_actual_reqs, " is not in [0, common->num_reqs=", c.num_reqs,
            "]");
  if (num_actual_tokens < 0 || num_actual_tokens > c.num_actual_tokens)
    invalid("num_actual_tokens=", num_actual_tokens, " is not in [0, common->num_actual_tokens=",
            c.num_actual_tokens, "]");
  // Every field of the list (core/abi_fields.h), each tensor as its `unpadded` column says:
  // SLICE cuts it to its real rows, KEEP keeps it, DROP leaves it None (0.33 does not pass
  // positions and mm_req_doc_ranges on).
  auto cut = [](const std::optional<Tensor>& t, int64_t n) -> std::optional<Tensor> {
    if (!t) return std::nullopt;
    return slice_rows(*t, n);
  };
  const int64_t rows_QSL = num_actual_reqs + 1, rows_REQS = num_actual_reqs,
                rows_TOKENS = num_actual_tokens;
  CommonMetadata u;
#define UNPAD(kind, ...) UNPAD_##kind(__VA_ARGS__)
#define UNPAD_SIZE(name)
#define UNPAD_EXT(name)
#define UNPAD_I64(name, value) u.name = c.name;
#define UNPAD_BOOL(name, value) u.name = c.name;
#define UNPAD_OPT_I64(name) u.name = c.name;
#define UNPAD_TENSOR(name, dtype, rows, rule) UNPAD_##rule(name, rows)
#define UNPAD_SLICE(name, rows) u.name = cut(c.name, rows_##rows);
#define UNPAD_KEEP(name, rows) u.name = c.name;
#define UNPAD_DROP(name, rows)
  ATTN_COMMON_METADATA_FIELDS(UNPAD)
#undef UNPAD
  u.num_reqs = num_actual_reqs;
  u.num_actual_tokens = num_actual_tokens;
  CommonLimits lim;
  lim.device = c.query_start_loc->device;
  lim.require_tables = false;
  validate(u, lim);
  return u;
}

// The rows of core/abi_fields.h as fields of kind "common": every row but struct_size and
// extension, tensors as tensors (None when absent), max_logits_per_req None when -1.
#define FIELD_NAME(kind, ...) FIELD_NAME_##kind(__VA_ARGS__)
#define FIELD_NAME_SIZE(name)
#define FIELD_NAME_EXT(name)
#define FIELD_NAME_I64(name, value) #name,
#define FIELD_NAME_BOOL(name, value) #name,
#define FIELD_NAME_OPT_I64(name) #name,
#define FIELD_NAME_TENSOR(name, ...) #name,

const std::vector<std::string>& common_field_names() {
  static const std::vector<std::string> names = {ATTN_COMMON_METADATA_FIELDS(FIELD_NAME)};
  return names;
}

#define SET_FIELD(kind, ...) SET_FIELD_##kind(__VA_ARGS__)
#define SET_FIELD_SIZE(name)
#define SET_FIELD_EXT(name)
#define SET_FIELD_I64(name, value) m.set_int(i++, c.name);
#define SET_FIELD_BOOL(name, value) m.set_bool(i++, c.name);
#define SET_FIELD_OPT_I64(name) \
  if (c.name >= 0)              \
    m.set_int(i++, c.name);     \
  else                          \
    m.set_none(i++);
#define SET_FIELD_TENSOR(name, ...) m.set_tensor(i++, c.name);

void assign_metadata(const CommonMetadata& c, Metadata& m) {
  if (m.kind() != "common" || m.size() != common_field_names().size())
    fail(Status::kInternal, "assign_metadata on metadata of kind '", m.kind(), "'");
  size_t i = 0;
  ATTN_COMMON_METADATA_FIELDS(SET_FIELD)
  m.info = BuildInfo{};
  m.info.num_reqs = c.num_reqs;
  m.info.host_max_seq_len = c.host_max_seq_len;
}

Metadata to_metadata(const CommonMetadata& c) {
  Metadata m("common", common_field_names());
  assign_metadata(c, m);
  return m;
}

}  // namespace attn
