#include "core/build_group.h"

#include "core/error.h"

namespace attn {
namespace {

// Error `e` as it concerns builders[i].
[[noreturn]] void rethrow_for(size_t i, const Error& e) {
  throw Error(e.status(), cat("builders[", i, "]: ", e.message()));
}

int64_t prefix_of(const int64_t* lens, size_t i) { return lens != nullptr ? lens[i] : 0; }

// The shared validation refused the batch: the first builder whose own checks refuse it names
// the error (the message its attn_build would give).
[[noreturn]] void name_refusing_builder(Builder* const* b, size_t n, const int64_t* lens,
                                        CommonMetadata& common, const Error& shared) {
  for (size_t i = 0; i < n; ++i) {
    try {
      b[i]->check_build(prefix_of(lens, i), common);
    } catch (const Error& e) {
      rethrow_for(i, e);
    }
  }
  fail(Status::kInternal, "builders: the batch was refused (", shared.message(),
       ") but no builder's own validation refuses it");
}

}  // namespace

UseGroup::UseGroup(Builder* const* builders, size_t n) : builders_(builders) {
  for (; held_ < n; ++held_) {
    try {
      builders_[held_]->begin_use();
    } catch (const Error& e) {
      const size_t i = held_;
      while (held_ > 0) builders_[--held_]->end_use();
      rethrow_for(i, e);
    }
  }
}

UseGroup::~UseGroup() {
  while (held_ > 0) builders_[--held_]->end_use();
}

void build_group(Builder* const* b, size_t n, const int64_t* lens, CommonMetadata& common,
                 bool fast_build, void* stream, size_t* built) {
  *built = 0;
  if (n == 0) return;
  // What validate_batch reads of the limits must be alike, else the builders do not share a
  // batch: the device and how seq_lens are read.
  const CommonLimits first = b[0]->limits();
  for (size_t i = 1; i < n; ++i) {
    const Device& d0 = b[0]->config().device;
    const Device& di = b[i]->config().device;
    if (!(di == d0))
      invalid("builders[", i, "] runs on ", di.to_string(), " but builders[0] runs on ",
              d0.to_string(), "; one call builds on one device and one stream");
    if (b[i]->limits().seq_lens_are_encoder_lens != first.seq_lens_are_encoder_lens)
      invalid("builders[", i, "] (", b[i]->backend().name(), ") reads common->seq_lens as ",
              first.seq_lens_are_encoder_lens ? "decoder" : "encoder",
              " lengths but builders[0] (", b[0]->backend().name(), ") as ",
              first.seq_lens_are_encoder_lens ? "encoder" : "decoder",
              " lengths: they cannot share a batch");
  }

  // One validation for all: the union of what the builders check of the batch.
  CommonLimits shared;
  shared.device = first.device;
  shared.seq_lens_are_encoder_lens = first.seq_lens_are_encoder_lens;
  shared.values = false;
  shared.full = false;
  try {
    const CommonScalars scalars = scalars_of(common);
    for (size_t i = 0; i < n; ++i) {
      const CommonLimits lim = b[i]->build_limits(prefix_of(lens, i), common);
      validate_scalars(scalars, lim);
      shared.values = shared.values || lim.values;
      shared.full = shared.full || lim.full;
    }
    validate_batch(common, shared);
    for (size_t i = 0; i < n; ++i) {
      const CommonLimits lim = b[i]->build_limits(prefix_of(lens, i), common);
      validate_limits(common, lim);
      b[i]->check_prefix(prefix_of(lens, i), common, lim);
    }
  } catch (const Error& e) {
    name_refusing_builder(b, n, lens, common, e);
  }

  for (size_t i = 0; i < n; ++i) {
    const int64_t prefix = prefix_of(lens, i);
    apply_limits(common, b[i]->build_limits(prefix, common));
    try {
      b[i]->run_build(prefix, common, fast_build, stream);
    } catch (const Error& e) {
      rethrow_for(i, e);
    }
    *built = i + 1;
  }
}

}  // namespace attn
