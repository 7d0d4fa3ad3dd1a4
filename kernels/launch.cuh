// Launch helpers shared by the kernels: grid sizes for grid-stride loops.
#pragma once

#include <cstdint>

namespace attn::kernels {

constexpr int kThreads = 256;

/// Blocks for n items with a grid-stride loop: at least 1, at most 4096.
inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  if (blocks > 4096) blocks = 4096;
  return static_cast<unsigned>(blocks);
}

}  // namespace attn::kernels
