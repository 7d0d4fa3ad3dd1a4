// Checks and execution placement for the tensors that batch utilities read and write.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/exec.h"

namespace attn {

/// Where an op on `t` runs: on its CUDA device when it is CUDA memory, else on the host.
ops::Exec exec_for(const Tensor& t, void* stream);
/// The device an Exec stands for (for messages and usable_on checks).
Device exec_device(const ops::Exec& exec);

/// An input vector: dtype, 1-D compact with `n` entries, data, usable where the op runs.
void expect_input(const Tensor& t, const char* name, DType dtype, int64_t n, const ops::Exec& ex);
/// An output vector: dtype, 1-D compact, at least `min_len` entries, data, usable there.
void expect_output(const Tensor& t, const char* name, DType dtype, int64_t min_len,
                   const ops::Exec& ex);
/// A host vector (a *_cpu mirror or host output): dtype, 1-D compact, n (or >= n) entries.
void expect_host_vector(const Tensor& t, const char* name, DType dtype, int64_t n,
                        bool at_least = false);
/// A block table: int32, 2-D, at least `rows` rows, unit column stride, usable there.
void expect_block_table(const Tensor& t, const char* name, int64_t rows, const ops::Exec& ex);

}  // namespace attn
