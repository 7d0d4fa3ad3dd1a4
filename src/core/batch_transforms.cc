#include "core/batch_transforms.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/exact_seq_lens.h"
#include "core/tensor_args.h"
#include "ops/batch_ops.h"

namespace attn {
namespace {

// A view of the first `n` entries of a 1-D output.
Tensor head(const Tensor& t, int64_t n) { return slice_rows(t, n); }

// Rows [start, start + n) of a 2-D (or 1-D) tensor.
Tensor rows_from(const Tensor& t, int64_t start, int64_t n) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + start * t.strides[0] * static_cast<int64_t>(t.dtype.itemsize());
  v.shape[0] = n;
  return v;
}

int64_t index_at(const Tensor& t, int64_t k) {
  return t.dtype.bits == 64 ? t.as<const int64_t>()[k] : t.as<const int32_t>()[k];
}

CommonLimits batch_limits(const CommonMetadata& c) {
  CommonLimits lim;
  lim.device = c.query_start_loc ? std::optional<Device>(c.query_start_loc->device) : std::nullopt;
  return lim;
}

}  // namespace

// ---- KV-sharing fast prefill ------------------------------------------------------------------

CommonMetadata make_kv_sharing_fast_prefill(CommonMetadata& c,
                                            const std::optional<Tensor>& logits_cpu,
                                            const FastPrefillOutputs& out, void* stream,
                                            bool* passthrough) {
  // All requests are single-token decodes, or fast prefill is not armed for this step (vLLM
  // 0.33: no logits indices, as in a CUDA graph capture): the batch as it is, which vLLM
  // returns at once. Nothing reads a value then, so only the shapes, dtypes, devices and
  // scalars are checked (O(1) in the batch; a build of the result checks the values).
  CommonLimits lim;
  *passthrough = fast_prefill_passes_through(c.max_query_len, c.logits_indices_padded.has_value());
  lim.values = !*passthrough;
  validate(c, lim);
  if (*passthrough) return c;
  const Tensor& padded = *c.logits_indices_padded;
  const int64_t n_idx = c.num_logits_indices;
  const Tensor* host = nullptr;
  const std::optional<Tensor>& mirror = logits_cpu ? logits_cpu : c.logits_indices_padded_cpu;
  if (logits_cpu) {
    expect_index_dtype(*logits_cpu, "logits_indices_cpu");
    if (logits_cpu->dtype != padded.dtype)
      invalid("logits_indices_cpu has dtype ", logits_cpu->dtype.to_string(),
              " but common->logits_indices_padded has ", padded.dtype.to_string());
    expect_host_vector(*logits_cpu, "logits_indices_cpu", logits_cpu->dtype, n_idx, true);
    host = &*logits_cpu;
  } else if (mirror) {
    host = &*mirror;  // common->logits_indices_padded_cpu, checked by validate()
  } else if (padded.host_accessible()) {
    host = &padded;
  } else {
    invalid("logits_indices_cpu and common->logits_indices_padded_cpu are NULL; one is required "
            "when common->logits_indices_padded is on ", padded.device.to_string());
  }
  const int64_t num_reqs = c.num_reqs;
  const int32_t* qsl = c.qsl_host;
  const int64_t tokens = qsl[num_reqs];
  for (int64_t k = 0; k < n_idx; ++k) {
    const int64_t i = index_at(*host, k);
    if (i < 0 || i >= tokens)
      invalid("logits_indices_padded[", k, "]=", i, " is outside the batch's ", tokens,
              " query tokens");
    if (k > 0 && i < index_at(*host, k - 1))
      invalid("logits_indices_padded[", k, "]=", i, " is less than logits_indices_padded[", k - 1,
              "]=", index_at(*host, k - 1), " (the indices must be sorted)");
  }
  const ops::Exec ex = exec_for(*c.query_start_loc, stream);
  expect_output(out.query_start_loc, "out_query_start_loc", kInt32, num_reqs + 1, ex);
  expect_host_vector(out.query_start_loc_cpu, "out_query_start_loc_cpu", kInt32, num_reqs + 1, true);

  const ops::Exec host_ex{};
  int32_t* qsl_new = out.query_start_loc_cpu.as<int32_t>();
  ops::fast_prefill_query_start_loc(host_ex, qsl, num_reqs, host->data, host->dtype.bits, n_idx,
                                    qsl_new);
  int64_t max_q = 0;
  for (int64_t r = 0; r < num_reqs; ++r) max_q = std::max<int64_t>(max_q, qsl_new[r + 1] - qsl_new[r]);
  ops::fast_prefill_query_start_loc(ex, c.query_start_loc->as<const int32_t>(), num_reqs,
                                    padded.data, padded.dtype.bits, n_idx,
                                    out.query_start_loc.as<int32_t>());

  CommonMetadata r;
  r.query_start_loc = head(out.query_start_loc, num_reqs + 1);
  r.query_start_loc_cpu = head(out.query_start_loc_cpu, num_reqs + 1);
  r.seq_lens = c.seq_lens;
  r.seq_lens_cpu = c.seq_lens_cpu;
  r.seq_lens_cpu_upper_bound = c.seq_lens_cpu_upper_bound;  // vLLM 0.33 passes it on
  r.num_reqs = num_reqs;
  r.num_actual_tokens = qsl_new[num_reqs];
  // vLLM 0.33 takes max_query_len from max_logits_per_req (asserting it is given) rather than
  // syncing the per-request counts; without it (-1, an older caller) the host counts decide.
  if (c.max_logits_per_req >= 0) {
    if (c.max_logits_per_req < max_q)
      invalid("common->max_logits_per_req=", c.max_logits_per_req, " is less than ", max_q,
              ", the logits indices of one request (logits_indices_padded)");
    max_q = c.max_logits_per_req;
  }
  r.max_query_len = max_q;
  r.max_seq_len = c.max_seq_len;
  r.block_table_tensor = c.block_table_tensor;
  r.slot_mapping = c.slot_mapping;
  r.causal = true;
  validate(r, batch_limits(r));
  return r;
}

// ---- local attention ------------------------------------------------------------------------

namespace {
void check_chunk(int32_t chunk, int32_t block_size) {
  if (chunk <= 0) invalid("attn_chunk_size=", chunk, " must be positive");
  if (block_size <= 0) invalid("block_size=", block_size, " must be positive");
  if (chunk % block_size != 0)
    invalid("attn_chunk_size ", chunk, " is not divisible by block_size ", block_size);
}

CommonLimits local_limits() {
  CommonLimits lim;
  lim.require_host_seq_lens = true;
  return lim;
}
}  // namespace

int64_t local_attention_num_virtual_batches(int32_t chunk, CommonMetadata& batch) {
  if (chunk <= 0) invalid("attn_chunk_size=", chunk, " must be positive");
  // a count from query_start_loc and the exact seq_lens: only they are checked
  CommonMetadata c = utility_view(batch, /*seq_lens=*/true, /*is_prefilling=*/false);
  CommonLimits lim = local_limits();
  lim.require_tables = false;
  validate(c, lim);
  // vLLM 0.33 syncs the device seq_lens here (not seq_lens_cpu_upper_bound).
  std::vector<int32_t> storage;
  const int32_t* seq = exact_host_seq_lens(c, storage);
  return ops::local_attention_num_virtual_batches(c.qsl_host, seq, c.num_reqs, chunk);
}

CommonMetadata make_local_attention_virtual_batches(int32_t chunk, CommonMetadata& c,
                                                    int32_t block_size,
                                                    const LocalAttentionOutputs& out,
                                                    void* stream) {
  check_chunk(chunk, block_size);
  validate(c, local_limits());
  // vLLM 0.33 syncs the device seq_lens here (`seq_lens.cpu()`), not seq_lens_cpu_upper_bound.
  std::vector<int32_t> exact_storage;
  const int32_t* exact = exact_host_seq_lens(c, exact_storage);
  const int64_t v = ops::local_attention_num_virtual_batches(c.qsl_host, exact, c.num_reqs, chunk);
  const int64_t pages = chunk / block_size;
  const ops::Exec ex = exec_for(*c.query_start_loc, stream);
  expect_output(out.query_start_loc, "out->query_start_loc", kInt32, v + 1, ex);
  expect_host_vector(out.query_start_loc_cpu, "out->query_start_loc_cpu", kInt32, v + 1, true);
  expect_output(out.seq_lens, "out->seq_lens", kInt32, v, ex);
  expect_host_vector(out.seq_lens_cpu, "out->seq_lens_cpu", kInt32, v, true);
  if (out.num_computed_tokens_cpu)
    expect_host_vector(*out.num_computed_tokens_cpu, "out->num_computed_tokens_cpu", kInt32, v, true);
  expect_block_table(out.block_table, "out->block_table", v, ex);
  if (out.block_table.shape[1] < pages)
    invalid("out->block_table has ", out.block_table.shape[1], " columns but attn_chunk_size / block_size = ",
            pages, " are needed");
  expect_output(out.virtual_req, "out->virtual_req", kInt32, v, ex);
  expect_output(out.virtual_block_start, "out->virtual_block_start", kInt32, v, ex);

  const ops::LocalAttentionPlan plan = ops::local_attention_plan(
      c.qsl_host, exact, c.num_reqs, chunk, block_size,
      out.query_start_loc_cpu.as<int32_t>(), out.seq_lens_cpu.as<int32_t>(),
      out.num_computed_tokens_cpu ? out.num_computed_tokens_cpu->as<int32_t>() : nullptr, nullptr,
      nullptr);
  const Tensor& bt = *c.block_table_tensor;
  if (v > 0 && bt.shape[1] == 0)
    invalid("common->block_table_tensor has no columns to gather the local blocks from");
  // The host path computes from the validated host copies (the mirrors may stand for them).
  ops::local_attention_virtual_batches(
      ex, ex.on_cuda ? c.query_start_loc->as<const int32_t>() : c.qsl_host,
      ex.on_cuda ? c.seq_lens->as<const int32_t>() : exact, c.num_reqs,
      chunk, block_size, bt.as<const int32_t>(), bt.shape[0], bt.strides[0], bt.shape[1],
      out.query_start_loc.as<int32_t>(), out.seq_lens.as<int32_t>(), out.block_table.as<int32_t>(),
      out.block_table.strides[0], out.virtual_req.as<int32_t>(),
      out.virtual_block_start.as<int32_t>(), v);

  CommonMetadata r;
  r.query_start_loc = head(out.query_start_loc, v + 1);
  r.query_start_loc_cpu = head(out.query_start_loc_cpu, v + 1);
  r.seq_lens = head(out.seq_lens, v);
  r.seq_lens_cpu = head(out.seq_lens_cpu, v);
  r.seq_lens_cpu_upper_bound = r.seq_lens_cpu;  // vLLM 0.33: the local lengths are its bound
  r.num_reqs = v;
  r.num_actual_tokens = c.num_actual_tokens;
  r.max_query_len = plan.max_query_len;
  r.max_seq_len = plan.max_seq_len;
  Tensor local_bt = head(out.block_table, v);
  local_bt.shape[1] = pages;
  r.block_table_tensor = local_bt;
  r.slot_mapping = c.slot_mapping;
  r.causal = true;
  CommonLimits lim = batch_limits(r);
  lim.block_size = block_size;
  validate(r, lim);
  return r;
}

void remap_local_block_table(const Tensor& bt, const Tensor& vreq, const Tensor& vstart,
                             int64_t num_virtual, const Tensor& out, void* stream) {
  if (num_virtual < 0) invalid("num_virtual_batches=", num_virtual, " is negative");
  const ops::Exec ex = exec_for(bt, stream);
  expect_block_table(bt, "block_table", 0, ex);
  if (num_virtual > 0 && bt.shape[1] == 0)
    invalid("block_table has no columns to gather the local blocks from");
  expect_output(vreq, "virtual_req", kInt32, num_virtual, ex);
  expect_output(vstart, "virtual_block_start", kInt32, num_virtual, ex);
  expect_block_table(out, "out", num_virtual, ex);
  if (vreq.host_accessible())
    for (int64_t k = 0; k < num_virtual; ++k)
      if (vreq.as<const int32_t>()[k] < 0 || vreq.as<const int32_t>()[k] >= bt.shape[0])
        invalid("virtual_req[", k, "]=", vreq.as<const int32_t>()[k], " is not a row of block_table (",
                bt.shape[0], " rows)");
  ops::remap_block_table(ex, bt.as<const int32_t>(), bt.shape[0], bt.strides[0], bt.shape[1],
                         vreq.as<const int32_t>(), vstart.as<const int32_t>(), num_virtual,
                         out.shape[1], out.as<int32_t>(), out.strides[0]);
}

// ---- micro-batch slicing ----------------------------------------------------------------------

// vLLM's dual-batch overlap uses 2; the cap keeps a bad count from sizing huge allocations.
constexpr int32_t kMaxUbatches = 1024;

void create_ubatch_slices(const int32_t* num_scheduled, int64_t num_reqs, int64_t num_tokens_padded,
                          int64_t num_reqs_padded, int32_t num_ubatches, int64_t split_point,
                          const int64_t* split_points, int64_t num_split_points,
                          std::vector<UbatchSlice>* slices, std::vector<UbatchSlice>* padded) {
  if (num_reqs < 0) invalid("num_reqs=", num_reqs, " is negative");
  if (num_reqs > (int64_t{1} << 31) - 1) invalid("num_reqs=", num_reqs, " exceeds 2^31-1");
  if (num_reqs > 0 && num_scheduled == nullptr) invalid("num_scheduled_tokens is NULL but num_reqs=", num_reqs);
  if (num_ubatches < 1) invalid("num_ubatches=", num_ubatches, " must be positive");
  if (num_reqs_padded < num_reqs)
    invalid("num_reqs_padded=", num_reqs_padded, " is less than num_reqs=", num_reqs);
  std::vector<int64_t> cu(static_cast<size_t>(num_reqs) + 1, 0);
  for (int64_t r = 0; r < num_reqs; ++r) {
    if (num_scheduled[r] < 0) invalid("num_scheduled_tokens[", r, "]=", num_scheduled[r], " is negative");
    cu[r + 1] = cu[r] + num_scheduled[r];
  }
  if (num_tokens_padded > (int64_t{1} << 31) - 1)
    invalid("num_tokens_padded=", num_tokens_padded, " exceeds 2^31-1");
  if (num_tokens_padded < cu[num_reqs])
    invalid("num_tokens_padded=", num_tokens_padded, " is less than the ", cu[num_reqs], " scheduled tokens");
  if (num_ubatches > kMaxUbatches)
    invalid("num_ubatches=", num_ubatches, " exceeds libattn's limit of ", kMaxUbatches);
  // More micro-batches than tokens: vLLM 0.33 makes empty slices (split point 0), as here.
  std::vector<int64_t> ends;
  if (split_points != nullptr) {
    if (num_split_points != num_ubatches - 1)
      invalid("num_split_points=", num_split_points, " must be num_ubatches - 1 = ",
              num_ubatches - 1, " (one per micro-batch boundary)");
    // libattn's checks: vLLM would make slices that end before they start.
    for (int64_t i = 0; i < num_split_points; ++i) {
      const int64_t p = split_points[i];
      if (p < 0 || p > num_tokens_padded)
        invalid("split_points[", i, "]=", p, " is outside [0, num_tokens_padded=",
                num_tokens_padded, "]");
      if (i > 0 && p < split_points[i - 1])
        invalid("split_points[", i, "]=", p, " is less than split_points[", i - 1,
                "]=", split_points[i - 1], " (the split points must not decrease)");
      ends.push_back(p);
    }
  } else {
    if (split_point <= 0) split_point = num_tokens_padded / num_ubatches;
    // libattn's check: vLLM would make slices that start after they end (and split_point * i
    // could overflow).
    if (split_point > num_tokens_padded)
      invalid("split_point=", split_point, " exceeds num_tokens_padded=", num_tokens_padded);
    for (int32_t i = 1; i < num_ubatches; ++i) ends.push_back(split_point * i);
  }
  ends.push_back(cu[num_reqs]);
  slices->clear();
  int64_t start = 0;
  for (const int64_t end : ends) {
    UbatchSlice s;
    // The request holding `start` (or starting exactly there) up to the first starting at or
    // after `end`: numpy searchsorted right - 1, and left.
    s.request_start = (std::upper_bound(cu.begin(), cu.end(), start) - cu.begin()) - 1;
    s.request_stop = std::lower_bound(cu.begin(), cu.end(), end) - cu.begin();
    s.token_start = start;
    s.token_stop = end;
    slices->push_back(s);
    start = end;
  }
  *padded = *slices;
  padded->back().request_stop = num_reqs_padded;
  padded->back().token_stop = num_tokens_padded;
}

void slice_query_start_locs(const Tensor& qsl, int64_t start, int64_t stop, const Tensor& out,
                            void* stream) {
  const ops::Exec ex = exec_for(qsl, stream);
  if (qsl.ndim != 1) invalid("query_start_loc has ndim=", qsl.ndim, ", expected 1");
  expect_input(qsl, "query_start_loc", kInt32, qsl.shape[0], ex);
  if (start < 0 || stop < start || stop >= qsl.shape[0])
    invalid("request slice [", start, ", ", stop, ") is not within the ", qsl.shape[0] - 1,
            " requests of query_start_loc");
  expect_output(out, "out", kInt32, stop - start + 1, ex);
  ops::slice_query_start_locs(ex, qsl.as<const int32_t>(), start, stop, 0, 0, out.as<int32_t>());
}

CommonMetadata make_metadata_with_slice(const UbatchSlice& s, CommonMetadata& c,
                                        const SliceOutputs& out, void* stream) {
  CommonLimits lim;
  validate(c, lim);
  if (s.request_start == s.request_stop || s.token_start == s.token_stop)
    invalid("ubatch slice requests [", s.request_start, ", ", s.request_stop, ") tokens [",
            s.token_start, ", ", s.token_stop, ") is empty");
  if (s.request_start < 0 || s.request_stop > c.num_reqs || s.request_start > s.request_stop)
    invalid("slice requests [", s.request_start, ", ", s.request_stop, ") are not within the ",
            c.num_reqs, " requests");
  if (s.token_start < 0 || s.token_stop > c.num_actual_tokens || s.token_start > s.token_stop)
    invalid("slice tokens [", s.token_start, ", ", s.token_stop, ") are not within the ",
            c.num_actual_tokens, " tokens");
  const int32_t* qsl = c.qsl_host;
  const int64_t first = s.request_start, last = s.request_stop - 1;
  if (!(qsl[first] <= s.token_start && s.token_start < qsl[first + 1]))
    invalid("slice token_start=", s.token_start, " is outside its first request ", first,
            " (tokens [", qsl[first], ", ", qsl[first + 1], "))");
  const int64_t n = s.request_stop - s.request_start;
  const bool splits_first = s.token_start > qsl[first];
  const bool splits_last = s.token_stop < qsl[last + 1];
  const auto skip_first = static_cast<int32_t>(splits_first ? s.token_start - qsl[first] : 0);
  const auto skip_last = static_cast<int32_t>(splits_last ? qsl[last + 1] - s.token_stop : 0);

  const ops::Exec ex = exec_for(*c.query_start_loc, stream);
  expect_output(out.query_start_loc, "out->query_start_loc", kInt32, n + 1, ex);
  expect_host_vector(out.query_start_loc_cpu, "out->query_start_loc_cpu", kInt32, n + 1, true);
  expect_output(out.seq_lens, "out->seq_lens", kInt32, n, ex);
  // The host lengths the slice carries: vLLM 0.33's seq_lens_cpu_upper_bound when the batch has
  // one (0.33 slices it), else libattn's exact host lengths.
  const int32_t* host_src = c.seq_lens_cpu_upper_bound
                                ? c.seq_lens_cpu_upper_bound->as<const int32_t>()
                                : c.seq_lens_host;
  const bool host_seq = out.seq_lens_cpu && host_src != nullptr;
  if (out.seq_lens_cpu) expect_host_vector(*out.seq_lens_cpu, "out->seq_lens_cpu", kInt32, n, true);

  const ops::Exec host_ex{};
  int32_t* qsl_cpu = out.query_start_loc_cpu.as<int32_t>();
  ops::slice_query_start_locs(host_ex, qsl, first, s.request_stop, skip_first, skip_last, qsl_cpu);
  ops::slice_query_start_locs(ex, c.query_start_loc->as<const int32_t>(), first, s.request_stop,
                              skip_first, skip_last, out.query_start_loc.as<int32_t>());
  ops::copy_trim_last(ex, c.seq_lens->as<const int32_t>() + first, n, skip_last,
                      out.seq_lens.as<int32_t>());
  if (host_seq) ops::copy_trim_last(host_ex, host_src + first, n, skip_last, out.seq_lens_cpu->as<int32_t>());

  int64_t max_q = 0;
  for (int64_t k = 0; k < n; ++k) max_q = std::max<int64_t>(max_q, std::abs(qsl_cpu[k + 1] - qsl_cpu[k]));
  if (max_q == 0) max_q = c.max_query_len;  // a dummy run's batch of zeros

  CommonMetadata r;
  r.query_start_loc = head(out.query_start_loc, n + 1);
  r.query_start_loc_cpu = head(out.query_start_loc_cpu, n + 1);
  r.seq_lens = head(out.seq_lens, n);
  // vLLM 0.33 slices seq_lens_cpu_upper_bound (its only host lengths) the same way: the one host
  // output holds the cut bound when the batch has one (the slice's exact lengths are then its
  // seq_lens when those are in host memory), else libattn's cut exact lengths (seq_lens_cpu).
  if (host_seq) {
    if (c.seq_lens_cpu_upper_bound)
      r.seq_lens_cpu_upper_bound = head(*out.seq_lens_cpu, n);
    else
      r.seq_lens_cpu = head(*out.seq_lens_cpu, n);
  }
  r.num_reqs = n;
  r.num_actual_tokens = s.token_stop - s.token_start;
  r.max_query_len = max_q;
  r.max_seq_len = c.max_seq_len;  // vLLM keeps the batch's bound (>= every slice's)
  r.block_table_tensor = rows_from(*c.block_table_tensor, first, n);
  r.slot_mapping = rows_from(*c.slot_mapping, s.token_start, s.token_stop - s.token_start);
  if (c.positions)  // vLLM 0.33: positions[token_slice]
    r.positions = rows_from(*c.positions, s.token_start, s.token_stop - s.token_start);
  r.causal = true;
  validate(r, batch_limits(r));
  return r;
}

}  // namespace attn
