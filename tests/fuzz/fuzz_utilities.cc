// libFuzzer target: every batch utility with inputs and output tensors from arbitrary bytes
// (lying shapes, wrong dtypes, negative and huge lengths, out-of-range block ids, outputs that
// are too small). The only outcomes allowed are success or an error object.
#include <cstdint>
#include <vector>

#include "attn_c.h"
#include "fuzz_fields.h"
#include "fuzz_input.h"

namespace {

void drop(attn_error_t* e) { attn_error_destroy(e); }

struct Batch {
  std::vector<int64_t> qsl, seq;
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
};

Batch make_batch(fuzz::Reader& in, fuzz::Arena& a) {
  Batch b;
  const int64_t n = in.count(24);
  b.qsl = fuzz::query_starts(in, n, 12);
  b.seq.resize(b.qsl.size());
  for (size_t i = 0; i + 1 < b.qsl.size(); ++i)
    b.seq[i] = in.one_in(10) ? static_cast<int32_t>(in.u32()) : (b.qsl[i + 1] - b.qsl[i]) + in.u8() % 40;
  const int64_t tokens = in.one_in(8) ? in.count(300) : b.qsl.back();
  const int64_t width = in.one_in(8) ? in.count(40) : 1 + in.u8() % 32;
  b.c.query_start_loc = fuzz::make_tensor(in, a, fuzz::sat_add(n, 1), -1, 32, [&](int64_t i) {
    return i < static_cast<int64_t>(b.qsl.size()) ? b.qsl[i] : 0;
  });
  b.c.query_start_loc_cpu = in.one_in(2) ? b.c.query_start_loc : nullptr;
  b.c.seq_lens = fuzz::make_tensor(in, a, n, -1, 32, [&](int64_t i) {
    return i < static_cast<int64_t>(b.seq.size()) ? b.seq[i] : 0;
  });
  b.c.seq_lens_cpu = in.one_in(2) ? b.c.seq_lens : nullptr;
  b.c.num_reqs = n;
  b.c.num_actual_tokens = tokens;
  b.c.max_query_len = in.one_in(6) ? in.count(64) : 12;
  b.c.max_seq_len = in.one_in(6) ? in.count(4096) : 12 + 255;
  b.c.block_table_tensor = fuzz::make_tensor(in, a, n, width, 32, [&](int64_t) {
    return static_cast<int32_t>(in.u32());
  });
  b.c.slot_mapping = fuzz::make_tensor(in, a, tokens, -1, 64, [&](int64_t) { return in.i64(); });
  b.c.causal = 1;
  if (in.one_in(3)) {
    b.c.logits_indices_padded = fuzz::make_tensor(in, a, in.count(16), -1, in.one_in(2) ? 32 : 64,
                                                  [&](int64_t i) { return i * (1 + in.u8() % 3); });
    b.c.num_logits_indices = in.count(16);
  }
  // Every other field of the list (ABI 1.2 to 1.7 and any added later): validated and cut
  // (unpadded, micro-batch slicing) like the others.
  const fuzz::BatchShape shape{n, tokens, &b.seq};
  fuzz::populate(in, a, shape, b.c, 6);
  fuzz::mutate(in, a, shape, b.c);
  return b;
}

attn_tensor_t* out_vec(fuzz::Reader& in, fuzz::Arena& a, int64_t want, uint8_t bits = 32) {
  return fuzz::make_tensor(in, a, in.one_in(8) ? in.count(64) : want, -1, bits,
                           [](int64_t) { return 0; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  fuzz::Arena a;
  Batch b = make_batch(in, a);
  const int64_t n = b.c.num_reqs < 0 ? 0 : (b.c.num_reqs > 4096 ? 4096 : b.c.num_reqs);
  attn_metadata_t* m = nullptr;
  switch (in.u8() % 14) {
    case 0: {
      attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
      drop(attn_split_decodes_and_prefills(&b.c, static_cast<int32_t>(in.count(8)), in.u8() % 2, &s));
      drop(attn_split_decodes_prefills_and_extends(&b.c, static_cast<int32_t>(in.count(8)), &s));
      // ABI 1.4: every option, NULL options, hostile struct_size / reserved
      attn_split_options_t o = ATTN_SPLIT_OPTIONS_INIT;
      o.decode_threshold = static_cast<int32_t>(in.count(8)) - (in.one_in(8) ? 9 : 0);
      o.require_uniform = in.u8() % 2;
      o.treat_short_extends_as_decodes = in.u8() % 2;
      if (in.one_in(8)) o.reserved = 1;
      if (in.one_in(8)) o.struct_size = static_cast<size_t>(in.u8());
      drop(attn_split_decodes_and_prefills_ex(&b.c, in.one_in(6) ? nullptr : &o, &s));
      break;
    }
    case 1: {
      std::vector<int32_t> sched(n), comp(n), swaps(2 * n + 2);
      for (int64_t i = 0; i < n; ++i) {
        sched[i] = static_cast<int32_t>(in.count(8));
        comp[i] = static_cast<int32_t>(in.count(8));
      }
      int64_t k = 0;
      drop(attn_reorder_batch_to_split_decodes_and_prefills(sched.data(), comp.data(), n,
                                                            static_cast<int32_t>(in.count(4)),
                                                            swaps.data(), in.count(n + 1), &k));
      std::vector<int32_t> prompt(n);
      for (int64_t i = 0; i < n; ++i)
        prompt[i] = in.one_in(16) ? -1 : static_cast<int32_t>(in.count(12));
      drop(attn_reorder_batch_to_split_decodes_and_prefills_v2(
          sched.data(), comp.data(), in.one_in(16) ? nullptr : prompt.data(), n,
          static_cast<int32_t>(in.count(4)), swaps.data(), in.count(n + 1), &k));
      break;
    }
    case 2: {
      std::vector<int32_t> seq(n);
      std::vector<int64_t> bounds(2 * n + 2);
      for (int64_t i = 0; i < n; ++i) seq[i] = static_cast<int32_t>(in.count(300));
      int64_t k = 0;
      drop(attn_split_prefill_chunks(seq.data(), n, in.count(400), in.count(4), bounds.data(),
                                     in.count(n + 1), &k));
      // ABI 1.4: the multimodal PrefixLM helpers, with lying rows (requests out of range or out
      // of order, start >= end), shapes and capacities
      const int64_t nr = in.count(8);
      attn_tensor_t* rows = fuzz::make_tensor(in, a, nr, in.one_in(8) ? in.count(4) : 3, 32, [&](int64_t) {
        return in.one_in(8) ? static_cast<int32_t>(in.u32()) : static_cast<int32_t>(in.count(n + 1));
      });
      int64_t w = 0;
      drop(attn_compute_mm_prefix_range_tensor(in.one_in(8) ? nullptr : rows, in.count(n + 1), nullptr, &w));
      if (w >= 0 && w < 64 && n < 4096)
        drop(attn_compute_mm_prefix_range_tensor(rows, n, fuzz::make_tensor(in, a, n * w * 2, -1, 32,
                                                                             [](int64_t) { return 0; }),
                                                 &w));
      drop(attn_fill_mm_prefix_query_ranges(
          fuzz::make_tensor(in, a, in.one_in(8) ? in.count(64) : 300, 2, 32, [](int64_t) { return 0; }),
          in.one_in(8) ? nullptr : rows, b.c.query_start_loc_cpu ? b.c.query_start_loc_cpu : b.c.query_start_loc,
          b.c.seq_lens, &k));
      break;
    }
    case 3: {
      const int32_t size = static_cast<int32_t>(in.count(4));
      drop(attn_get_dcp_local_seq_lens(b.c.seq_lens, size, static_cast<int32_t>(in.count(4)) - 1,
                                       static_cast<int32_t>(in.count(16)),
                                       fuzz::make_tensor(in, a, n, in.one_in(2) ? size : -1, 32,
                                                         [](int64_t) { return 0; }),
                                       nullptr));
      break;
    }
    case 4: {
      attn_tensor_t v;
      int64_t shape[4], strides[4];
      drop(attn_reshape_query_for_spec_decode(
          fuzz::make_tensor(in, a, in.count(64), in.count(4), 16, [](int64_t) { return 0; }),
          in.count(8), &v, shape, strides));
      break;
    }
    case 5: {
      attn_slot_mapping_args_t s = ATTN_SLOT_MAPPING_ARGS_INIT;
      const int64_t tokens = b.qsl.back() < 4096 && b.qsl.back() >= 0 ? b.qsl.back() : 0;
      s.query_start_loc = b.c.query_start_loc;
      s.num_reqs = b.c.num_reqs;
      s.positions = fuzz::make_tensor(in, a, tokens, -1, 64,
                                      [&](int64_t) { return in.one_in(8) ? in.i64() : in.u8() * 4; });
      s.block_table = b.c.block_table_tensor;
      s.block_size = static_cast<int32_t>(in.count(32));
      s.dcp_world_size = static_cast<int32_t>(in.count(4));
      s.dcp_rank = static_cast<int32_t>(in.count(4));
      s.cp_kv_cache_interleave_size = static_cast<int32_t>(in.count(4));
      s.slot_mapping = out_vec(in, a, tokens + in.u8() % 8, 64);
      drop(attn_compute_slot_mapping(&s, nullptr));
      break;
    }
    case 6: {
      int64_t pages = 0;
      drop(attn_compute_flashinfer_kv_metadata(b.c.seq_lens, b.c.seq_lens_cpu, b.c.block_table_tensor,
                                               static_cast<int32_t>(in.count(32)), out_vec(in, a, n + 1),
                                               out_vec(in, a, in.count(4096)), out_vec(in, a, n), &pages,
                                               nullptr));
      break;
    }
    case 7: {
      attn_conv1d_info_t info = ATTN_CONV1D_INFO_INIT;
      drop(attn_compute_causal_conv1d_metadata(b.c.query_start_loc, b.c.query_start_loc,
                                               out_vec(in, a, 2048 + in.u8()), out_vec(in, a, 2048),
                                               in.one_in(2) ? out_vec(in, a, n) : nullptr, &info, nullptr));
      break;
    }
    case 8: {
      if (in.one_in(2)) {
        if (attn_error_t* e = attn_make_kv_sharing_fast_prefill_common_attn_metadata(
                &b.c, nullptr, out_vec(in, a, n + 1), out_vec(in, a, n + 1), &m, nullptr)) {
          drop(e);
        }
      } else {  // ABI 1.7: the batch into a caller's struct, no handle on a pass-through
        attn_common_metadata_t batch = ATTN_COMMON_METADATA_INIT;
        if (in.one_in(8)) batch.struct_size = in.count(300);
        if (attn_error_t* e = attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
                &b.c, nullptr, out_vec(in, a, n + 1), out_vec(in, a, n + 1), &batch, &m, nullptr)) {
          drop(e);
        }
      }
      break;
    }
    case 9: {
      const int32_t block = static_cast<int32_t>(in.count(8));
      const int32_t chunk = static_cast<int32_t>(in.one_in(6) ? in.count(64) : int64_t{block} * (1 + in.u8() % 4));
      int64_t v = 0;
      if (attn_error_t* e = attn_local_attention_num_virtual_batches(chunk, &b.c, &v)) {
        drop(e);
        v = in.count(64);
      }
      if (v < 0 || v > 4096) v = in.u8() % 65;  // sizes the outputs; keep it sane
      const int64_t pages = block > 0 && chunk > 0 ? chunk / block : 1;
      attn_local_attention_out_t o = ATTN_LOCAL_ATTENTION_OUT_INIT;
      o.query_start_loc = out_vec(in, a, v + 1);
      o.query_start_loc_cpu = out_vec(in, a, v + 1);
      o.seq_lens = out_vec(in, a, v);
      o.seq_lens_cpu = out_vec(in, a, v);
      o.num_computed_tokens_cpu = in.one_in(2) ? out_vec(in, a, v) : nullptr;
      o.block_table = fuzz::make_tensor(in, a, v, pages > 0 && pages < 64 ? pages : 1, 32, [](int64_t) { return 0; });
      o.virtual_req = out_vec(in, a, v);
      o.virtual_block_start = out_vec(in, a, v);
      if (attn_error_t* e = attn_make_local_attention_virtual_batches(chunk, &b.c, block, &o, &m, nullptr)) {
        drop(e);
      } else {
        drop(attn_remap_local_block_table(b.c.block_table_tensor, o.virtual_req, o.virtual_block_start,
                                          in.count(v + 1), o.block_table, nullptr));
      }
      break;
    }
    case 10: {
      drop(attn_slice_query_start_locs(b.c.query_start_loc, in.count(n), in.count(n + 1),
                                       out_vec(in, a, n + 1), nullptr));
      // ABI 1.4: reads only query_start_loc (lying values included), writes num_tokens entries
      const int64_t tokens = in.one_in(8) ? in.i64() : in.count(400);
      drop(attn_compute_token_to_req_indices(b.c.query_start_loc,
                                             out_vec(in, a, tokens >= 0 && tokens < 4096 ? tokens : 0),
                                             in.one_in(8) ? in.i64() : in.count(400), tokens, nullptr));
      break;
    }
    case 11: {
      std::vector<int32_t> sched(n);
      for (int64_t i = 0; i < n; ++i) sched[i] = static_cast<int32_t>(in.count(20));
      const int32_t ub = static_cast<int32_t>(in.count(4));
      // The contract: both arrays hold num_ubatches elements (the library rejects counts above 1024).
      std::vector<attn_ubatch_slice_t> sl(ub > 0 && ub <= 1024 ? ub : 1), pad(sl.size());
      for (auto& s : sl) s = ATTN_UBATCH_SLICE_INIT;
      for (auto& s : pad) s = ATTN_UBATCH_SLICE_INIT;
      if (in.one_in(8)) {  // hostile struct_size on the elements: refused, never a stride
        const size_t hostile[] = {0, 8, sizeof(attn_ubatch_slice_t) + 8, size_t{1} << 30,
                                  size_t{1} << 32, static_cast<size_t>(in.i64())};
        const size_t v = hostile[in.u8() % 6];
        (in.one_in(2) ? sl : pad)[0].struct_size = v;
      }
      drop(attn_maybe_create_ubatch_slices(sched.data(), n, in.count(400), in.count(30), ub,
                                           in.count(200), sl.data(), pad.data()));
      // ABI 1.4: a list of split points (any count, order and range)
      std::vector<int64_t> points(in.u8() % 9);
      for (auto& p : points) p = in.one_in(8) ? in.i64() : in.count(400);
      drop(attn_maybe_create_ubatch_slices_ex(sched.data(), n, in.count(400), in.count(30), ub,
                                              in.one_in(8) ? nullptr : points.data(),
                                              static_cast<int64_t>(points.size()), sl.data(),
                                              pad.data()));
      break;
    }
    default: {
      attn_ubatch_slice_t s = ATTN_UBATCH_SLICE_INIT;
      s.request_start = in.count(n);
      s.request_stop = in.count(n + 1);
      s.token_start = in.count(64);
      s.token_stop = in.count(128);
      // Unsigned: the fuzzed bounds may be far apart (the library checks them, the harness only sizes).
      const int64_t k = static_cast<int64_t>(static_cast<uint64_t>(s.request_stop) -
                                             static_cast<uint64_t>(s.request_start));
      const int64_t cap = k >= 0 && k < 4096 ? k : 4;
      attn_ubatch_out_t o = ATTN_UBATCH_OUT_INIT;
      o.query_start_loc = out_vec(in, a, cap + 1);
      o.query_start_loc_cpu = out_vec(in, a, cap + 1);
      o.seq_lens = out_vec(in, a, cap);
      o.seq_lens_cpu = in.one_in(2) ? out_vec(in, a, cap) : nullptr;
      if (in.one_in(2)) {
        drop(attn_make_metadata_with_slice(&b.c, &s, &o, &m, nullptr));
      } else {
        attn_ubatch_slice_t two[2] = {s, s};
        attn_ubatch_out_t outs[2] = {o, o};
        if (in.one_in(8)) two[0].struct_size = two[1].struct_size = size_t{1} << (in.u8() % 40);
        if (in.one_in(8)) outs[0].struct_size = outs[1].struct_size = static_cast<size_t>(in.i64());
        attn_metadata_t* ms[2] = {nullptr, nullptr};
        if (attn_error_t* e = attn_split_attn_metadata(&b.c, two, 2, outs, ms, nullptr)) {
          drop(e);
        } else {
          attn_metadata_destroy(ms[0]);
          attn_metadata_destroy(ms[1]);
        }
      }
    }
  }
  if (m != nullptr) {
    attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
    drop(attn_metadata_to_common(m, &c));
    attn_metadata_destroy(m);
  }
  return 0;
}
