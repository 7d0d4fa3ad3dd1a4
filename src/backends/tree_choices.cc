#include "backends/tree_choices.h"

#include <cctype>
#include <limits>

#include "core/error.h"

namespace attn::backends {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  TreeChoices parse() {
    TreeChoices out;
    expect('[');
    skip();
    if (peek() == ']') {
      ++i_;
    } else {
      for (;;) {
        out.push_back(path());
        skip();
        if (peek() == ',') {
          ++i_;
          skip();
          if (peek() == ']') {  // trailing comma
            ++i_;
            break;
          }
          continue;
        }
        expect(']');
        break;
      }
    }
    skip();
    if (i_ != s_.size()) bad("unexpected text after the list");
    return out;
  }

 private:
  std::vector<int64_t> path() {
    skip();
    const char open = peek();
    if (open != '(' && open != '[') bad("expected '(' or '[' starting a path");
    const char close = open == '(' ? ')' : ']';
    ++i_;
    std::vector<int64_t> p;
    bool comma_after_last = false;
    for (;;) {
      skip();
      if (peek() == close) {
        ++i_;
        break;
      }
      p.push_back(number());
      comma_after_last = false;
      skip();
      if (peek() == ',') {
        ++i_;
        comma_after_last = true;
        continue;
      }
      if (peek() != close) bad("expected ',' or the end of the path");
    }
    if (p.empty()) bad("a path is empty");
    if (open == '(' && p.size() == 1 && !comma_after_last)
      bad("(n) is an integer in Python, not a path; write (n,)");
    return p;
  }

  int64_t number() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("expected a non-negative integer");
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (s_[i_++] - '0');
      if (v > (int64_t{1} << 31)) bad("an index is too large");
    }
    return v;
  }

  void expect(char c) {
    skip();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  [[noreturn]] void bad(const std::string& why) const {
    invalid("config->speculative_token_tree is not a list of paths: ", why, " at character ", i_);
  }

  const std::string& s_;
  size_t i_ = 0;
};

size_t index_of(const TreeChoices& c, const std::vector<int64_t>& path, size_t before) {
  for (size_t k = 0; k < before; ++k)
    if (c[k] == path) return k;
  return before;
}

}  // namespace

TreeChoices parse_tree_choices(const std::string& text) {
  TreeChoices c = Parser(text).parse();
  if (c.empty()) invalid("config->speculative_token_tree has no paths");
  if (c.size() > 4096) invalid("config->speculative_token_tree has ", c.size(), " paths; libattn allows 4096");
  size_t depth = 0;
  for (size_t k = 0; k < c.size(); ++k) {
    const size_t len = c[k].size();
    if (len != depth && len != depth + 1)
      invalid("config->speculative_token_tree is not sorted by depth: path ", k, " has length ",
              len, " after paths of length ", depth);
    depth = len;
    for (size_t d = 1; d < len; ++d) {
      const std::vector<int64_t> prefix(c[k].begin(), c[k].begin() + static_cast<std::ptrdiff_t>(d));
      if (index_of(c, prefix, k) == k)
        invalid("config->speculative_token_tree: path ", k, " has no earlier path for its prefix of ",
                "length ", d);
    }
  }
  return c;
}

std::vector<float> tree_attention_bias(const TreeChoices& c) {
  const size_t l = c.size() + 1;
  std::vector<float> bias(l * l, -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < l; ++i) {
    bias[i * l + i] = 0.0f;  // every token sees itself
    bias[i * l] = 0.0f;      // and the root
  }
  for (size_t k = 0; k < c.size(); ++k)
    for (size_t d = 1; d < c[k].size(); ++d) {
      const std::vector<int64_t> prefix(c[k].begin(), c[k].begin() + static_cast<std::ptrdiff_t>(d));
      bias[(k + 1) * l + index_of(c, prefix, c.size()) + 1] = 0.0f;
    }
  return bias;
}

}  // namespace attn::backends
