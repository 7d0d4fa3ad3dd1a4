// TREE_ATTN's speculative token tree: vLLM's speculative_token_tree string (a Python literal
// list of paths, e.g. "[(0,), (1,), (0, 0)]") parsed, checked, and turned into the tree
// attention bias of _prepare_tree_attn_bias.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn::backends {

using TreeChoices = std::vector<std::vector<int64_t>>;

/// Parses a list of tuples or lists of non-negative integers ("[(0,), (1,), (0, 0)]",
/// "[[0], [1], [0, 0]]"). Error(kInvalidArgument) naming config->speculative_token_tree and
/// the position of the first bad character. Checks what vLLM's builder assumes: paths are
/// non-empty, sorted by depth (lengths 1, then 2, ... without gaps), and every proper prefix
/// of a path is an earlier path.
TreeChoices parse_tree_choices(const std::string& text);

/// The additive bias over the tree's L = len(choices) + 1 tokens (the root first), row-major
/// L x L: 0 where a token may attend (itself, the root, its ancestors), -inf elsewhere.
std::vector<float> tree_attention_bias(const TreeChoices& choices);

}  // namespace attn::backends
