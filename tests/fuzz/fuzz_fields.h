// The fuzzers' mutators of the three growing structs, walked from their field lists
// (core/abi_fields.h): a field added to the header and its list is fuzzed with no other edit.
// The harnesses build plausible specs, configs and batches by hand; these then give the
// optional batch fields plausible values now and then, and any field a value of its kind that
// libattn must check (hostile numbers, wrong shapes, reserved and removed fields set, an
// extension that is not NULL).
#pragma once

#include <cstdint>
#include <vector>

#include "attn_c.h"
#include "core/abi_fields.h"
#include "fuzz_input.h"

namespace fuzz {

/// An int32 for a scalar field: mostly small (counts, sizes, enum values), sometimes hostile.
inline int32_t i32_value(Reader& in) {
  switch (in.u8() % 8) {
    case 0: return -1 - in.u8() % 4;
    case 1: return static_cast<int32_t>(in.u32());
    case 2: return 16 * (in.u8() % 9);
    default: return in.u8() % 8;
  }
}

inline int64_t i64_value(Reader& in) { return in.one_in(4) ? in.i64() : i32_value(in); }

/// What a batch tensor's rows are measured against.
struct BatchShape {
  int64_t num_reqs = 0;
  int64_t num_tokens = 0;
  const std::vector<int64_t>* seq_lens = nullptr;  ///< per request, when the harness has them
};

/// A tensor for a batch field of `rows` (QSL, REQS, TOKENS, ANY, RANGES: core/abi_fields.h) and
/// `bits`-bit elements: lengths near the request's seq_len, small counts, indices, or garbage.
inline attn_tensor_t* batch_tensor(Reader& in, Arena& a, const BatchShape& b, char rows,
                                   uint8_t bits) {
  int64_t n = 0, cols = -1;
  switch (rows) {
    case 'Q': n = sat_add(b.num_reqs, 1); break;
    case 'R': n = b.num_reqs; break;
    case 'T': n = b.num_tokens; break;
    case 'G': n = in.count(8), cols = 3; break;
    default: n = in.count(16);
  }
  const uint8_t mode = in.u8() % 5;
  int64_t request = 0;
  return make_tensor(in, a, n, cols, bits, [&](int64_t i) -> int64_t {
    if (cols == 3) {  // (request, start, end) rows, mostly in request order
      if (i % 3 != 0) return in.u8() - (in.one_in(16) ? 300 : 0);
      request += in.one_in(8) ? -1 : in.u8() % 2;
      return request;
    }
    const auto* seq = b.seq_lens;
    switch (mode) {
      case 0: return (seq && i < static_cast<int64_t>(seq->size()) ? (*seq)[i] : 0) + in.u8() % 3;
      case 1: return in.u8() % 8;
      case 2: return i;
      case 3: return static_cast<int64_t>(in.u8()) - 2;
      default: return static_cast<int32_t>(in.u32());
    }
  });
}

// Row kinds as characters for batch_tensor, element types as bits.
#define FUZZ_ROWS_QSL 'Q'
#define FUZZ_ROWS_REQS 'R'
#define FUZZ_ROWS_TOKENS 'T'
#define FUZZ_ROWS_ANY 'A'
#define FUZZ_ROWS_RANGES 'G'
#define FUZZ_BITS_I32 32
#define FUZZ_BITS_I64 64
#define FUZZ_BITS_BOOL 8

// One mutation of field `name` of `s` by its row's kind (the rate of each is the caller's).
#define FUZZ_MUTATE(kind, ...) FUZZ_MUTATE_##kind(__VA_ARGS__)
#define FUZZ_MUTATE_SIZE(name)
#define FUZZ_MUTATE_SPECIAL(name)
#define FUZZ_MUTATE_EXT(name) \
  if (k++ == pick) s.name = reinterpret_cast<void*>(uintptr_t{64} * (1 + in.u8()));
#define FUZZ_MUTATE_RESERVED(name) \
  if (k++ == pick) s.name = i32_value(in);
#define FUZZ_MUTATE_REMOVED(name) \
  if (k++ == pick) s.name = 1;
#define FUZZ_MUTATE_I32(name, value) \
  if (k++ == pick) s.name = i32_value(in);
#define FUZZ_MUTATE_I32Z(name, value) \
  if (k++ == pick) s.name = i32_value(in);
#define FUZZ_MUTATE_I64(name, value) \
  if (k++ == pick) s.name = i64_value(in);
#define FUZZ_MUTATE_BOOL(name, value) \
  if (k++ == pick) s.name = in.one_in(8) ? i32_value(in) : in.u8() % 2;
#define FUZZ_MUTATE_OPT_I64(name) \
  if (k++ == pick) s.name = in.one_in(4) ? in.i64() : static_cast<int64_t>(in.u8()) - 2;
#define FUZZ_MUTATE_TENSOR(name, dtype, rows, unpadded) \
  if (k++ == pick)                                      \
    s.name = in.one_in(8) ? nullptr : batch_tensor(in, a, b, FUZZ_ROWS_##rows, FUZZ_BITS_##dtype);
#define FUZZ_COUNT(kind, ...) FUZZ_COUNT_##kind
#define FUZZ_COUNT_SIZE
#define FUZZ_COUNT_SPECIAL
#define FUZZ_COUNT_EXT +1
#define FUZZ_COUNT_RESERVED +1
#define FUZZ_COUNT_REMOVED +1
#define FUZZ_COUNT_I32 +1
#define FUZZ_COUNT_I32Z +1
#define FUZZ_COUNT_I64 +1
#define FUZZ_COUNT_BOOL +1
#define FUZZ_COUNT_OPT_I64 +1
#define FUZZ_COUNT_TENSOR +1

/// Up to three fields of `s`, each any field of its list, given a value of its kind (a tensor
/// field: a tensor of its rows, mostly plausible, or NULL; `a` and `b` serve only those).
#define FUZZ_DEFINE_MUTATE(T, LIST)                                                 \
  inline void mutate(Reader& in, Arena& a, const BatchShape& b, T& s) {             \
    constexpr uint32_t kFields = 0 LIST(FUZZ_COUNT);                                \
    (void)a;                                                                         \
    (void)b;                                                                         \
    for (int round = in.u8() % 4; round > 0; --round) {                             \
      const uint32_t pick = in.u8() % kFields;                                      \
      uint32_t k = 0;                                                               \
      LIST(FUZZ_MUTATE)                                                             \
    }                                                                               \
  }
FUZZ_DEFINE_MUTATE(attn_kv_cache_spec_t, ATTN_KV_CACHE_SPEC_FIELDS)
FUZZ_DEFINE_MUTATE(attn_builder_config_t, ATTN_BUILDER_CONFIG_FIELDS)
FUZZ_DEFINE_MUTATE(attn_common_metadata_t, ATTN_COMMON_METADATA_FIELDS)

#define FUZZ_POPULATE(kind, ...) FUZZ_POPULATE_##kind(__VA_ARGS__)
#define FUZZ_POPULATE_SIZE(name)
#define FUZZ_POPULATE_EXT(name)
#define FUZZ_POPULATE_I64(name, value)
#define FUZZ_POPULATE_BOOL(name, value)
#define FUZZ_POPULATE_OPT_I64(name) \
  if (in.one_in(rate)) s.name = static_cast<int64_t>(in.u8() % 16) - 1;
#define FUZZ_POPULATE_TENSOR(name, dtype, rows, unpadded) \
  if (s.name == nullptr && in.one_in(rate))               \
    s.name = batch_tensor(in, a, b, FUZZ_ROWS_##rows, FUZZ_BITS_##dtype);

/// Each batch field the harness left unset (NULL, or -1 for max_logits_per_req) set one time in
/// `rate` to a tensor of its rows and usual dtype (or a small count), mostly plausible: the
/// optional inputs every backend and utility must check.
inline void populate(Reader& in, Arena& a, const BatchShape& b, attn_common_metadata_t& s,
                     int rate) {
  ATTN_COMMON_METADATA_FIELDS(FUZZ_POPULATE)
}

}  // namespace fuzz
