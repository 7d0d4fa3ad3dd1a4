// Turns fuzzer bytes into libattn inputs: scalars (mostly plausible, sometimes hostile), and
// host tensors whose declared shape, strides, dtype and device may lie about the batch but whose
// memory always covers what they declare (a view that points outside its memory is a caller bug
// no library can detect; everything else must give success or an error object).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "attn_c.h"

namespace fuzz {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() { return n_ ? (--n_, *p_++) : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | u8();
    return v;
  }
  int64_t i64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | u8();
    return static_cast<int64_t>(v);
  }
  bool one_in(int k) { return u8() % k == 0; }
  /// A small count in [0, hi], or once in a while something hostile.
  int64_t count(int64_t hi) {
    switch (u8() % 16) {
      case 0: return -1 - (u8() % 4);
      case 1: return static_cast<int64_t>(u32());
      case 2: return i64();
      default: return u8() % (hi + 1);
    }
  }
  size_t left() const { return n_; }

 private:
  const uint8_t* p_;
  size_t n_;
};

/// a + b, saturating instead of overflowing (the harness must not have undefined behaviour).
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/// Keeps every buffer and shape array alive for one fuzz input.
class Arena {
 public:
  template <class T>
  T* array(size_t n) {
    blocks_.emplace_back(n * sizeof(T) + 1, 0);
    return reinterpret_cast<T*>(blocks_.back().data());
  }
  attn_tensor_t* tensor() {
    tensors_.emplace_back();
    return &tensors_.back();
  }

 private:
  std::deque<std::vector<char>> blocks_;
  std::deque<attn_tensor_t> tensors_;
};

constexpr int64_t kMaxElements = 1 << 16;

/// A value in [2^62, 2^63): as a stride of a dimension of 2 or more, or as a byte offset, it
/// puts the view's byte extent past what libattn accepts, whatever the element size.
inline int64_t past_extent(Reader& in) {
  return (int64_t{1} << 62) | (in.i64() & ((int64_t{1} << 62) - 1));
}

/// Now and then makes a view hostile in a way libattn must refuse (issue 15): a stride over the
/// whole int64 range (negative or past the extent limit), a byte offset past the limit or
/// misaligned for the element type, NULL data under the declared shape. A view whose extent
/// stays within its memory is never made to point elsewhere (no library can detect that).
inline void hostile_layout(Reader& in, Arena& a, attn_tensor_t* t, int32_t nd) {
  if (!in.one_in(20)) return;
  switch (in.u8() % 5) {
    case 0:
    case 1: {  // one stride anywhere in int64: negative, or large enough to be refused
      if (nd <= 0 || t->shape == nullptr) return;
      int64_t* strides = a.array<int64_t>(8);
      int64_t s = 1;
      for (int d = nd - 1; d >= 0; --d) {
        strides[d] = t->strides ? t->strides[d] : s;
        s *= t->shape[d] > 0 && t->shape[d] < kMaxElements ? t->shape[d] : 1;
      }
      const int d = in.u8() % nd;
      const int64_t v = in.i64();
      strides[d] = v < 0 ? v : past_extent(in);
      t->strides = strides;
      return;
    }
    case 2:  // a byte offset past the extent limit, up to UINT64_MAX
      t->byte_offset = static_cast<uint64_t>(past_extent(in)) << (in.u8() % 2);
      return;
    case 3:  // misaligned: within the element, so the memory still covers it
      if (t->data != nullptr) t->byte_offset = 1 + in.u8() % 3;
      return;
    default:  // NULL data under the declared shape
      t->data = nullptr;
  }
}

/// A tensor meant to be `rows` (x `cols` when cols >= 0) of `bits`-bit ints, possibly lying.
/// Integer contents come from `fill(i)`.
template <class Fill>
attn_tensor_t* make_tensor(Reader& in, Arena& a, int64_t rows, int64_t cols, uint8_t bits,
                           Fill fill) {
  attn_tensor_t* t = a.tensor();
  std::memset(t, 0, sizeof *t);
  t->device = {ATTN_DEVICE_CPU, 0};
  t->dtype = {ATTN_DTYPE_INT, bits, 1};
  t->ndim = cols >= 0 ? 2 : 1;
  if (in.one_in(24)) t->ndim = static_cast<int32_t>(in.u8() % 10) - 1;  // -1 .. 8
  if (in.one_in(24)) t->dtype = {static_cast<uint8_t>(in.u8() % 8), static_cast<uint8_t>(in.u8()), 1};
  if (in.one_in(32)) t->device = {static_cast<int32_t>(in.u8() % 16), in.u8() % 2};
  const int32_t nd = t->ndim < 0 ? 0 : (t->ndim > 8 ? 8 : t->ndim);
  int64_t* shape = a.array<int64_t>(8);
  shape[0] = rows;
  if (nd > 1) shape[1] = cols >= 0 ? cols : 1;
  for (int d = 2; d < nd; ++d) shape[d] = 1;
  if (in.one_in(12)) shape[0] = sat_add(shape[0], static_cast<int64_t>(in.u8() % 3) - 1);
  if (in.one_in(40)) shape[in.u8() % (nd ? nd : 1)] = in.i64();
  t->shape = nd > 0 ? shape : (in.one_in(2) ? nullptr : shape);
  int64_t* strides = nullptr;
  if (in.one_in(8)) {
    strides = a.array<int64_t>(8);
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; --d) {
      strides[d] = in.one_in(6) ? static_cast<int64_t>(in.u8()) - 8 : s;
      s *= shape[d] > 0 && shape[d] < kMaxElements ? shape[d] : 1;
    }
    t->strides = strides;
  }
  // The memory the view declares (last element's offset + 1), when that is small enough.
  int64_t extent = 1;
  bool ok = true;
  int64_t compact = 1;
  for (int d = nd - 1; d >= 0; --d) {
    if (shape[d] < 0 || shape[d] > kMaxElements) { ok = false; break; }
    if (shape[d] == 0) { extent = 0; break; }
    const int64_t st = strides ? strides[d] : compact;
    if (st < 0 || st > kMaxElements) { ok = false; break; }
    extent += (shape[d] - 1) * st;
    compact *= shape[d];
    if (extent > kMaxElements || compact > kMaxElements) { ok = false; break; }
  }
  const size_t item = t->dtype.bits >= 8 ? t->dtype.bits / 8 : 1;
  if (!ok || in.one_in(64)) {
    t->data = nullptr;  // libattn must refuse (or never touch) an undeclared buffer
  } else {
    char* mem = a.array<char>(static_cast<size_t>(extent + 1) * (item < 8 ? 8 : item));
    for (int64_t i = 0; i < extent; ++i) {
      const int64_t v = fill(i);
      if (item == 8) std::memcpy(mem + i * 8, &v, 8);
      else if (item == 4) { const auto w = static_cast<int32_t>(v); std::memcpy(mem + i * 4, &w, 4); }
      else if (item == 2) { const auto w = static_cast<int16_t>(v); std::memcpy(mem + i * 2, &w, 2); }
      else mem[i] = static_cast<char>(v);
    }
    t->data = mem;
  }
  if (in.one_in(48) && t->data) t->byte_offset = in.u8() % 2 ? 0 : item;
  hostile_layout(in, a, t, nd);
  return t;
}

/// Query-start locations: mostly a valid prefix sum of small lengths, sometimes anything.
inline std::vector<int64_t> query_starts(Reader& in, int64_t n, int64_t max_len) {
  std::vector<int64_t> v(static_cast<size_t>(n < 0 ? 0 : (n > kMaxElements ? kMaxElements : n)) + 1, 0);
  const bool hostile = in.one_in(10);
  for (size_t i = 1; i < v.size(); ++i)
    v[i] = hostile ? static_cast<int32_t>(in.u32()) : sat_add(v[i - 1], in.u8() % (max_len + 1));
  return v;
}

}  // namespace fuzz
