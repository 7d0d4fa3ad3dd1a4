// vLLM 0.33's reorder_batch_to_split_decodes_and_prefills (four regions), returning the
// swap_states calls it makes.
#include <algorithm>
#include <vector>

#include "ops/batch_ops.h"

namespace attn::ops {

int64_t reorder_batch_swaps(const int32_t* num_scheduled_tokens,
                            const int32_t* num_computed_tokens, const int32_t* num_prompt_tokens,
                            int64_t num_reqs, int32_t decode_threshold, int32_t* swaps) {
  // Regions: 0 decode, 1 short extend, 2 long extend, 3 prefill (no context); the target order
  // is the regions' order.
  std::vector<int32_t> region(static_cast<size_t>(num_reqs));
  int64_t count_of[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < num_reqs; ++i) {
    const int32_t computed = num_computed_tokens[i];
    const bool has_context = computed > 0;
    const bool below = num_scheduled_tokens[i] <= decode_threshold;
    const bool done_prefilling = num_prompt_tokens == nullptr || computed >= num_prompt_tokens[i];
    region[i] = !has_context ? 3 : (!below ? 2 : (done_prefilling ? 0 : 1));
    ++count_of[region[i]];
  }
  const int64_t end0 = count_of[0], end1 = end0 + count_of[1], end2 = end1 + count_of[2];
  auto target = [&](int64_t i) -> int32_t { return i < end0 ? 0 : i < end1 ? 1 : i < end2 ? 2 : 3; };
  // Only the misplaced requests move: stably sorted by region, they fill the misplaced
  // positions in order.
  std::vector<int32_t> misplaced;
  for (int64_t i = 0; i < num_reqs; ++i)
    if (region[i] != target(i)) misplaced.push_back(static_cast<int32_t>(i));
  if (misplaced.empty()) return 0;
  std::vector<int32_t> sources = misplaced;
  std::stable_sort(sources.begin(), sources.end(),
                   [&](int32_t a, int32_t b) { return region[a] < region[b]; });
  // src -> dst map; -1 marks positions that are not keys (map.get(dst, dst) returns dst).
  std::vector<int32_t> dest(static_cast<size_t>(num_reqs), -1);
  for (size_t k = 0; k < sources.size(); ++k) dest[sources[k]] = misplaced[k];
  int64_t count = 0;
  for (const int32_t src : sources) {  // the dict's insertion order
    int32_t dst = dest[src];
    while (src != dst) {
      swaps[2 * count] = src;
      swaps[2 * count + 1] = dst;
      ++count;
      const int32_t next = dest[dst] < 0 ? dst : dest[dst];
      dest[dst] = dst;
      dst = next;
    }
  }
  return count;
}

}  // namespace attn::ops
