// build_group: the builds of several builders (one per KV cache group of a hybrid model) over
// one batch, validated once; what attn_build_groups() runs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/builder.h"
#include "core/common_metadata.h"

namespace attn {

/// Builder::Use for several builders: marks builders[0..n) in use, in order. When one is held
/// by another call, releases those it marked and throws Error(kBusy) naming "builders[i]".
class UseGroup {
 public:
  UseGroup(Builder* const* builders, size_t num_builders);
  ~UseGroup();
  UseGroup(const UseGroup&) = delete;
  UseGroup& operator=(const UseGroup&) = delete;

 private:
  Builder* const* builders_;
  size_t held_ = 0;
};

/// builders[i]->build(common_prefix_lens[i], common, fast_build, stream) for i = 0..n-1, in that
/// order, each result equal to that build's, with the batch validated once:
///  - every builder must run on the same device and read common->seq_lens alike (encoder
///    lengths or not), else Error(kInvalidArgument) naming "builders[i]";
///  - each builder's O(1) checks (validate_scalars with its limits: max_num_seqs,
///    max_num_batched_tokens, the tensors it requires), then validate_batch once with the union
///    of what they check (values when any builder checks values, ATTN_VALIDATE_FULL's
///    comparisons when any asks for them), then each builder's validate_limits (max_model_len,
///    block table width at its block_size, host seq_lens) and prefix check;
///  - when any of it fails, each builder's own check_build runs, in order, and the first that
///    fails gives the error, prefixed "builders[i]: " (the message attn_build would give it);
///    nothing is built then.
/// Then, per builder, apply_limits and run_build. An error there is prefixed "builders[i]: ";
/// `*built` counts the builders whose build completed (their metadata changed), so that the
/// caller can retire what it handed out for them. `common_prefix_lens` may be null (all 0).
/// The caller holds every builder (UseGroup); builders are non-null and distinct.
void build_group(Builder* const* builders, size_t num_builders, const int64_t* common_prefix_lens,
                 CommonMetadata& common, bool fast_build, void* stream, size_t* built);

}  // namespace attn
