#include "core/tensor_utilities.h"

#include <algorithm>

#include "core/common_metadata.h"
#include "core/error.h"
#include "core/tensor_args.h"
#include "ops/batch_ops.h"

namespace attn {
namespace {

constexpr int64_t kMaxRequests = (int64_t{1} << 31) - 1;

void check_dcp(int32_t size, int32_t rank, int32_t interleave, const char* size_name,
               const char* rank_name, const char* interleave_name, bool all_ranks_allowed) {
  if (size < 1) invalid(size_name, "=", size, " must be positive");
  if (rank >= size || rank < (all_ranks_allowed ? -1 : 0))
    invalid(rank_name, "=", rank, " is not in [", all_ranks_allowed ? -1 : 0, ", ", size_name,
            "=", size, ")", all_ranks_allowed ? " (-1: every rank)" : "");
  if (interleave < 1) invalid(interleave_name, "=", interleave, " must be positive");
}

// The host copy of a vector when one exists: the mirror, or the tensor itself in host memory.
const int32_t* host_i32(const Tensor& t, const std::optional<Tensor>& mirror) {
  if (mirror) return mirror->as<const int32_t>();
  return t.host_accessible() ? t.as<const int32_t>() : nullptr;
}

}  // namespace

void get_dcp_local_seq_lens(const Tensor& seq_lens, int32_t dcp_size, int32_t dcp_rank,
                            int32_t interleave, const Tensor& out, void* stream) {
  check_dcp(dcp_size, dcp_rank, interleave, "dcp_size", "dcp_rank", "cp_kv_cache_interleave_size",
            true);
  const ops::Exec ex = exec_for(seq_lens, stream);
  if (seq_lens.ndim != 1) invalid("seq_lens has ndim=", seq_lens.ndim, ", expected 1");
  const int64_t n = seq_lens.shape[0];
  expect_input(seq_lens, "seq_lens", kInt32, n, ex);
  // Every rank: (n, dcp_size), as vLLM 0.33 (also (n, 1) for dcp_size 1); a (n,) output for
  // dcp_size 1 stays accepted (libattn 1.3 and earlier asked for it; same memory).
  const bool per_rank = dcp_rank < 0 && (dcp_size > 1 || out.ndim == 2);
  expect_dtype(out, "out", kInt32);
  if (per_rank) {
    if (out.ndim != 2 || out.shape[0] != n || out.shape[1] != dcp_size || !out.is_compact())
      invalid("out must be a compact (", n, ", ", dcp_size, ") tensor for every rank, got ndim=",
              out.ndim);
    expect_output(make_vector(out.data, out.device, kInt32, n * dcp_size), "out", kInt32,
                  n * dcp_size, ex);
  } else {
    expect_input(out, "out", kInt32, n, ex);
  }
  if (seq_lens.host_accessible())
    for (int64_t i = 0; i < n; ++i)
      if (seq_lens.as<const int32_t>()[i] < 0)
        invalid("seq_lens[", i, "]=", seq_lens.as<const int32_t>()[i], " is negative");
  ops::dcp_local_seq_lens(ex, seq_lens.as<const int32_t>(), n, dcp_size,
                          dcp_rank < 0 && dcp_size == 1 ? 0 : dcp_rank, interleave,
                          out.as<int32_t>());
}

void compute_token_to_req_indices(const Tensor& qsl, const Tensor& out, int64_t num_mapped_tokens,
                                  int64_t num_tokens, void* stream) {
  const ops::Exec ex = exec_for(qsl, stream);
  if (qsl.ndim != 1) invalid("query_start_loc has ndim=", qsl.ndim, ", expected 1");
  if (qsl.shape[0] < 1) invalid("query_start_loc has no entries (it holds num_reqs + 1)");
  expect_input(qsl, "query_start_loc", kInt32, qsl.shape[0], ex);
  if (num_tokens < 0) invalid("num_tokens=", num_tokens, " is negative");
  if (num_tokens > (int64_t{1} << 31) - 1)
    invalid("num_tokens=", num_tokens, " exceeds 2^31-1 (token indices are int32)");
  if (num_mapped_tokens < 0) invalid("num_mapped_tokens=", num_mapped_tokens, " is negative");
  expect_output(out, "out", kInt32, num_tokens, ex);
  ops::compute_token_to_req_indices(ex, qsl.as<const int32_t>(), qsl.shape[0] - 1,
                                    num_mapped_tokens, num_tokens, out.as<int32_t>());
}

Tensor reshape_query_for_spec_decode(const Tensor& query, int64_t batch_size) {
  if (query.ndim != 3) invalid("query must be 3D, got ", query.ndim, "D");
  if (batch_size <= 0) invalid("batch_size=", batch_size, " must be positive");
  const int64_t tokens = query.shape[0];
  if (tokens % batch_size != 0)
    invalid("total_tokens=", tokens, " is not divisible by batch_size=", batch_size);
  Tensor v = query;
  const int64_t seq_len = tokens / batch_size;
  v.ndim = 4;
  v.shape[0] = batch_size;
  v.shape[1] = seq_len;
  v.shape[2] = query.shape[1];
  v.shape[3] = query.shape[2];
  if (__builtin_mul_overflow(query.strides[0], seq_len, &v.strides[0]))
    invalid("query has strides[0]=", query.strides[0], ": times ", seq_len,
            " tokens per request it overflows int64");
  v.strides[1] = query.strides[0];
  v.strides[2] = query.strides[1];
  v.strides[3] = query.strides[2];
  return v;
}

// torch's view stride rule (ATen's computeStride, restated): the strides of a view of
// (old shape, old strides) with `new_shape`, false when no view exists (torch asks for
// .reshape). Old dimensions are grouped into chunks that are contiguous with each other (a
// size-1 dimension never breaks a chunk); each chunk must be covered by whole new dimensions.
// (Products that overflow int64 are refused: hostile strides must not reach signed overflow.)
static bool view_strides(const int64_t* old_shape, const int64_t* old_strides, int old_n,
                         const int64_t* new_shape, int new_n, int64_t* new_strides) {
  bool ok = true;
  auto mul = [&ok](int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) ok = false;
    return r;
  };
  int64_t numel = 1;
  bool same = old_n == new_n;
  for (int d = 0; d < old_n; ++d) {
    numel = mul(numel, old_shape[d]);
    if (same && old_shape[d] != new_shape[d]) same = false;
  }
  if (numel == 0) {
    if (same) {
      for (int d = 0; d < new_n; ++d) new_strides[d] = old_strides[d];
      return true;
    }
    for (int d = new_n - 1; d >= 0; --d)
      new_strides[d] = d == new_n - 1 ? 1 : mul(std::max<int64_t>(new_shape[d + 1], 1), new_strides[d + 1]);
    return ok;
  }
  int view_d = new_n - 1;
  int64_t chunk_base_stride = old_strides[old_n - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = old_n - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel = mul(tensor_numel, old_shape[tensor_d]);
    if (tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != mul(tensor_numel, chunk_base_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_strides[view_d] = mul(view_numel, chunk_base_stride);
        view_numel = mul(view_numel, new_shape[view_d]);
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return ok && view_d == -1;
}

Tensor reshape_attn_output_for_spec_decode(const Tensor& attn_output) {
  if (attn_output.ndim == 3) return attn_output;  // already (tokens, heads, dim)
  if (attn_output.ndim != 4) invalid("attn_output must be 4D, got ", attn_output.ndim, "D");
  const int64_t* sh = attn_output.shape;
  const int64_t* st = attn_output.strides;
  int64_t tokens = 0, numel = 0;
  if (__builtin_mul_overflow(sh[0], sh[1], &tokens) ||
      __builtin_mul_overflow(tokens, sh[2], &numel) || __builtin_mul_overflow(numel, sh[3], &numel))
    invalid("attn_output has shape [", sh[0], ", ", sh[1], ", ", sh[2], ", ", sh[3],
            "]: its size overflows int64");
  Tensor v = attn_output;
  const int64_t new_shape[3] = {tokens, sh[2], sh[3]};
  int64_t new_strides[3] = {};
  if (!view_strides(sh, st, 4, new_shape, 3, new_strides))
    invalid("attn_output (shape [", sh[0], ", ", sh[1], ", ", sh[2], ", ", sh[3], "], strides [",
            st[0], ", ", st[1], ", ", st[2], ", ", st[3], "]) cannot be viewed as [", tokens,
            ", ", sh[2], ", ", sh[3], "] (torch: view size is not compatible with input tensor's "
            "size and stride)");
  v.ndim = 3;
  for (int d = 0; d < 3; ++d) {
    v.shape[d] = new_shape[d];
    v.strides[d] = new_strides[d];
  }
  v.shape[3] = 0;
  v.strides[3] = 0;
  return v;
}

void naive_query_lens(CommonMetadata& batch, const Tensor& out, void* stream) {
  // reads query_start_loc only: the scalars, it and its mirror are checked, as a split checks
  CommonMetadata common = utility_view(batch, /*seq_lens=*/false, /*is_prefilling=*/false);
  CommonLimits lim;
  lim.require_tables = false;
  lim.reads_seq_lens = false;
  validate(common, lim);
  const Tensor& qsl = *common.query_start_loc;
  const ops::Exec ex = exec_for(qsl, stream);
  expect_output(out, "out", kInt32, common.num_reqs, ex);
  ops::naive_query_lens(ex, qsl.as<const int32_t>(), common.num_reqs, out.as<int32_t>());
}

void compute_slot_mapping(const SlotMappingArgs& a, void* stream) {
  const ops::Exec ex = exec_for(a.query_start_loc, stream);
  if (a.num_reqs < 0) invalid("args->num_reqs=", a.num_reqs, " is negative");
  if (a.num_reqs > kMaxRequests) invalid("args->num_reqs=", a.num_reqs, " exceeds 2^31-1");
  if (a.block_size <= 0) invalid("args->block_size=", a.block_size, " must be positive");
  check_dcp(a.dcp_world_size, a.dcp_rank, a.interleave, "args->dcp_world_size", "args->dcp_rank",
            "args->cp_kv_cache_interleave_size", false);
  if (a.block_size % a.interleave != 0)
    invalid("args->block_size=", a.block_size, " is not a multiple of args->cp_kv_cache_interleave_size=",
            a.interleave);
  expect_input(a.query_start_loc, "args->query_start_loc", kInt32, a.num_reqs + 1, ex);
  if (a.positions.ndim != 1) invalid("args->positions has ndim=", a.positions.ndim, ", expected 1");
  const int64_t num_tokens = a.positions.shape[0];
  expect_input(a.positions, "args->positions", kInt64, num_tokens, ex);
  expect_block_table(a.block_table, "args->block_table", a.num_reqs, ex);
  expect_output(a.slot_mapping, "args->slot_mapping", kInt64, num_tokens, ex);
  if (a.query_start_loc_cpu)
    expect_host_vector(*a.query_start_loc_cpu, "args->query_start_loc_cpu", kInt32, a.num_reqs + 1);
  if (a.positions_cpu) expect_host_vector(*a.positions_cpu, "args->positions_cpu", kInt64, num_tokens);

  const int32_t* qsl = host_i32(a.query_start_loc, a.query_start_loc_cpu);
  if (qsl == nullptr)
    invalid("args->query_start_loc_cpu is NULL; it is required when args->query_start_loc is on ",
            a.query_start_loc.device.to_string());
  if (qsl[0] < 0) invalid("args->query_start_loc[0]=", qsl[0], " is negative");
  for (int64_t r = 0; r < a.num_reqs; ++r)
    if (qsl[r + 1] < qsl[r])
      invalid("args->query_start_loc[", r + 1, "]=", qsl[r + 1], " is less than args->query_start_loc[",
              r, "]=", qsl[r]);
  if (qsl[a.num_reqs] > num_tokens)
    invalid("args->query_start_loc[", a.num_reqs, "]=", qsl[a.num_reqs], " exceeds the ",
            num_tokens, " positions");
  const int64_t* pos = a.positions_cpu ? a.positions_cpu->as<const int64_t>()
                       : a.positions.host_accessible() ? a.positions.as<const int64_t>()
                                                       : nullptr;
  if (pos != nullptr) {
    const int64_t virtual_block = static_cast<int64_t>(a.block_size) * a.dcp_world_size;
    const int64_t width = a.block_table.shape[1];
    for (int64_t r = 0; r < a.num_reqs; ++r)
      for (int64_t t = qsl[r]; t < qsl[r + 1]; ++t) {
        if (pos[t] < 0) invalid("args->positions[", t, "]=", pos[t], " is negative");
        if (pos[t] / virtual_block >= width)
          invalid("args->positions[", t, "]=", pos[t], " needs block ", pos[t] / virtual_block,
                  " of args->block_table row ", r, ", which has ", width, " columns");
      }
  }
  // The host path computes from the validated host copies (the mirrors may stand for them).
  ops::compute_slot_mapping(ex, ex.on_cuda ? a.query_start_loc.as<const int32_t>() : qsl, a.num_reqs,
                            ex.on_cuda || pos == nullptr ? a.positions.as<const int64_t>() : pos,
                            num_tokens,
                            a.block_table.as<const int32_t>(), a.block_table.strides[0],
                            a.block_table.shape[1], a.block_size, a.dcp_world_size, a.dcp_rank,
                            a.interleave, a.slot_mapping.as<int64_t>(), a.slot_mapping.shape[0]);
}

int64_t compute_flashinfer_kv_metadata(const PagedKv& a, void* stream) {
  const ops::Exec ex = exec_for(a.seq_lens, stream);
  if (a.page_size <= 0) invalid("page_size=", a.page_size, " must be positive");
  if (a.seq_lens.ndim != 1) invalid("seq_lens has ndim=", a.seq_lens.ndim, ", expected 1");
  const int64_t n = a.seq_lens.shape[0];
  expect_input(a.seq_lens, "seq_lens", kInt32, n, ex);
  if (a.seq_lens_cpu) expect_host_vector(*a.seq_lens_cpu, "seq_lens_cpu", kInt32, n);
  const int32_t* seq = host_i32(a.seq_lens, a.seq_lens_cpu);
  if (seq == nullptr)
    invalid("seq_lens_cpu is NULL; it is required when seq_lens is on ",
            a.seq_lens.device.to_string(), " (the page count sizes the indices)");
  expect_block_table(a.block_table, "block_table", n, ex);
  int64_t total = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (seq[r] < 0) invalid("seq_lens[", r, "]=", seq[r], " is negative");
    const int64_t pages = (static_cast<int64_t>(seq[r]) + a.page_size - 1) / a.page_size;
    if (pages > a.block_table.shape[1])
      invalid("request ", r, " needs cdiv(seq_lens[", r, "]=", seq[r], ", page_size=", a.page_size,
              ")=", pages, " pages but block_table has ", a.block_table.shape[1], " columns");
    total += pages;
  }
  if (total > (int64_t{1} << 31) - 1) invalid("the batch has ", total, " pages, more than 2^31-1");
  expect_output(a.indptr, "out_indptr", kInt32, n + 1, ex);
  expect_output(a.indices, "out_indices", kInt32, total, ex);
  expect_output(a.last_page_len, "out_last_page_len", kInt32, n, ex);
  // The host path computes from the validated host lengths.
  ops::paged_kv_metadata(ex, ex.on_cuda ? a.seq_lens.as<const int32_t>() : seq, n,
                         a.block_table.as<const int32_t>(), a.block_table.strides[0],
                         a.block_table.shape[1], a.page_size, a.indptr.as<int32_t>(),
                         a.indices.as<int32_t>(), a.indices.shape[0], a.last_page_len.as<int32_t>());
  return total;
}

Conv1dInfo compute_causal_conv1d_metadata(const Tensor& qsl_cpu, const Tensor& qsl,
                                          const Tensor& batch_ptr, const Tensor& offsets,
                                          const std::optional<Tensor>& nums, void* stream) {
  if (qsl_cpu.ndim != 1 || qsl_cpu.shape[0] < 1)
    invalid("query_start_loc_p_cpu must be 1-D with at least one entry");
  const int64_t n = qsl_cpu.shape[0] - 1;
  expect_host_vector(qsl_cpu, "query_start_loc_p_cpu", kInt32, n + 1);
  const int32_t* h = qsl_cpu.as<const int32_t>();
  Conv1dInfo info;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t len = static_cast<int64_t>(h[r + 1]) - h[r];
    if (len < 0)
      invalid("query_start_loc_p_cpu[", r + 1, "]=", h[r + 1], " is less than query_start_loc_p_cpu[",
              r, "]=", h[r]);
    info.tot += (len + 7) / 8;
  }
  info.num_programs = std::max<int64_t>(1024, info.tot) * 2;
  const ops::Exec ex = exec_for(batch_ptr, stream);
  expect_input(qsl, "query_start_loc_p", kInt32, n + 1, ex);
  expect_output(batch_ptr, "out_batch_ptr", kInt32, info.num_programs, ex);
  expect_output(offsets, "out_token_chunk_offset_ptr", kInt32, info.num_programs, ex);
  if (nums) {
    expect_host_vector(*nums, "out_nums", kInt32, n, true);
    for (int64_t r = 0; r < n; ++r) nums->as<int32_t>()[r] = (h[r + 1] - h[r] + 7) / 8;
  }
  // The host path computes from the validated host copy.
  ops::causal_conv1d_metadata(ex, ex.on_cuda ? qsl.as<const int32_t>() : h, n, info.num_programs,
                              batch_ptr.as<int32_t>(), offsets.as<int32_t>());
  return info;
}

}  // namespace attn
