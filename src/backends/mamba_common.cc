#include "backends/mamba_common.h"

#include <algorithm>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "ops/batch_ops.h"

namespace attn::backends {
namespace {

const char* backend_of_type(int32_t type) {
  switch (type) {
    case kMambaTypeMamba1:
      return "MAMBA1";
    case kMambaTypeMamba2:
      return "MAMBA2";
    case kMambaTypeShortConv:
      return "SHORT_CONV";
    case kMambaTypeLinearAttention:
      return "LINEAR_ATTN";
    case kMambaTypeGdnAttention:
      return "GDN_ATTN";
    default:
      return "?";
  }
}

/// Python's // and % (rounding toward negative infinity), for positive divisors.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

/// The first column "align" gathers for a sequence: max((seq_len - 1) // block_size, 0).
int64_t align_start(int64_t seq_len, int32_t block_size) {
  return std::max<int64_t>((seq_len - 1) / block_size, 0);
}

}  // namespace

void check_mamba_spec(const char* backend, int32_t expected, const KvCacheSpec& spec) {
  if (spec.kind != kKvMamba)
    fail(Status::kUnsupported, backend, " builds metadata only for MAMBA KV cache specs "
         "(vLLM's MambaSpec), got kv_cache_spec->kind=", spec.kind, " (",
         kv_cache_kind_name(spec.kind), ")");
  if (spec.mamba_type != kMambaTypeAuto && spec.mamba_type != expected)
    fail(Status::kUnsupported, "kv_cache_spec->mamba_type=", spec.mamba_type, " (\"",
         mamba_type_name(spec.mamba_type), "\") is served by vLLM's ",
         backend_of_type(spec.mamba_type), " backend, not ", backend, " (\"",
         mamba_type_name(expected), "\")");
}

void check_mamba_cache_mode(const char* backend, const KvCacheSpec& spec) {
  if (spec.mamba_cache_mode == kMambaCacheAll)
    fail(Status::kUnsupported, "kv_cache_spec->mamba_cache_mode=", spec.mamba_cache_mode,
         " (\"all\") was removed in vLLM 0.33 (cache_config.mamba_cache_mode accepts \"none\" "
         "and \"align\"); ", backend, " builds \"none\" and \"align\" only");
}

bool prefill_checkpoints_enabled(const KvCacheSpec& spec, const BuilderConfig& c) {
  return spec.mamba_cache_mode == kMambaCacheAlign && spec.num_prefill_checkpoint_blocks > 0 &&
         c.hash_block_size > 0 && c.cache_hit_alignment_tokens > 0;
}

bool checkpoint_drops_eagle_block(const BuilderConfig& c) {
  return c.num_speculative_tokens > 0 && c.use_eagle_block_drop && c.num_hash_lookahead_tokens == 0;
}

const int32_t* checkpoint_seq_lens(const char* backend, const CommonMetadata& batch) {
  const int32_t* seq = batch.seq_lens_cpu_upper_bound
                           ? batch.seq_lens_cpu_upper_bound->as<const int32_t>()
                           : batch.host_seq_lens();
  if (seq == nullptr)
    invalid("common->seq_lens_cpu_upper_bound is NULL (and no host seq_lens is given); ", backend,
            "'s prefill checkpoints read it (vLLM 0.33 asserts it is not None)");
  return seq;
}

bool plan_prefill_checkpoints(const char* backend, const KvCacheSpec& spec,
                              const BuilderConfig& c, const CommonMetadata& batch,
                              const int32_t* seq_lens, const int64_t* request_rows,
                              int64_t first_row, int64_t count, const CheckpointPlan& out) {
  const int64_t hash = c.hash_block_size, align_tokens = c.cache_hit_alignment_tokens;
  const int64_t bs = spec.block_size, alignment = spec.prefill_checkpoint_alignment;
  const int64_t width = batch.block_table_tensor->shape[1];
  const bool drop_eagle = checkpoint_drops_eagle_block(c);
  bool any = false;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = request_rows ? request_rows[k] : first_row + k;
    const int64_t q = batch.query_len(r), seq = seq_lens[r];
    const int64_t start = seq - q;
    const int64_t limit = drop_eagle ? seq : seq - std::max<int64_t>(1, c.num_hash_lookahead_tokens);
    int64_t position = floor_div(limit, align_tokens) * align_tokens;
    if (drop_eagle) position -= align_tokens;
    position = std::max<int64_t>(position, 0);
    bool valid = false;
    if (alignment > 0) {  // vLLM: prefill_checkpoint_alignment None -> never valid
      const int64_t initial_col = floor_div(start - 1, bs);
      const int64_t ckpt_col = (seq + bs - 1) / bs - 2;
      valid = floor_mod(start, hash) == 0 && ckpt_col > initial_col &&
              start + hash <= position && start < position && position < seq &&
              floor_mod(position - start, alignment) == 0;
    }
    const int64_t col = valid ? (seq + bs - 1) / bs - 2 : -1;
    if (valid && col >= width)
      invalid("common->block_table_tensor has ", width, " columns but request ", r, "'s ",
              backend, " prefill checkpoint (seq_len ", seq, ", block_size ", bs,
              ") is in column ", col);
    out.offsets[k] = valid ? static_cast<int32_t>(position - start) : 0;
    if (out.query_lens) out.query_lens[k] = static_cast<int32_t>(q);
    if (out.rows) out.rows[k] = r;
    out.cols[k] = col;
    any = any || valid;
  }
  return any;
}

int64_t decode_cudagraph_max_bs(const BuilderConfig& c, int64_t per_seq) {
  int64_t bs = static_cast<int64_t>(c.max_num_seqs) * per_seq;
  // vLLM's compilation_config.max_cudagraph_capture_size as its builders read it
  const int64_t cap = c.resolved_max_cudagraph_capture_size();
  if (cap > 0) bs = std::min(bs, cap);
  return bs;
}

void check_state_table(const char* backend, const KvCacheSpec& spec, const CommonMetadata& c) {
  const Tensor& bt = *c.block_table_tensor;
  const int64_t width = bt.shape[1];
  if (spec.mamba_cache_mode == kMambaCacheNone) {
    if (c.num_reqs > 0 && width < 1)
      invalid("common->block_table_tensor has no columns; ", backend,
              " reads each request's state index from column 0");
  } else if (spec.mamba_cache_mode == kMambaCacheAlign) {
    if (c.num_reqs == 0) return;
    if (c.seq_lens_host == nullptr)
      invalid("common->seq_lens_cpu is NULL; ", backend, " checks on the host that the \"align\" "
              "mode's state columns lie inside the block table (it gathers them by seq_len)");
    const int64_t cols = 1 + static_cast<int64_t>(spec.num_speculative_blocks);
    for (int64_t i = 0; i < c.num_reqs; ++i) {
      const int64_t start = align_start(c.seq_lens_host[i], spec.block_size);
      if (start + cols > width)
        invalid("common->block_table_tensor has ", width, " columns but request ", i,
                " (seq_lens[", i, "]=", c.seq_lens_host[i], ", block_size=", spec.block_size,
                ") gathers columns ", start, "..", start + cols - 1, " in \"align\" mode",
                c.seq_lens_exact() ? "" : " (checked with common->seq_lens_cpu_upper_bound, "
                "which may exceed the device length of an async spec-decode row: pass the "
                "exact common->seq_lens_cpu)");
    }
  }
}

void check_replacement_state_table(const char* backend, const KvCacheSpec& spec,
                                   const Tensor& bt, int64_t rows, int64_t host_max_seq_len,
                                   const Device& device) {
  expect_dtype(bt, "block_table", kInt32);
  if (bt.ndim != 2 || bt.shape[0] != rows)
    invalid("Mismatch in number of requests when updating block table: block_table has ",
            bt.ndim == 2 ? bt.shape[0] : -1, " rows (ndim=", bt.ndim, "), expected ", rows,
            " (num_prefills + num_decodes of the metadata)");
  expect_rows(bt, "block_table", rows);
  if (bt.data == nullptr && bt.numel() > 0) invalid("block_table has data=NULL");
  if (!usable_on(bt, device))
    invalid("block_table is on ", bt.device.to_string(), " but the builder runs on ",
            device.to_string());
  const int64_t width = bt.shape[1];
  if (rows > 0 && width < 1)
    invalid("block_table has no columns; ", backend, " reads state indices from it");
  if (host_max_seq_len < 0) return;
  int64_t need = 1;
  if (spec.mamba_cache_mode == kMambaCacheAlign)
    need = align_start(host_max_seq_len, spec.block_size) + 1 + spec.num_speculative_blocks;
  else if (spec.mamba_cache_mode == kMambaCacheAll)
    need = (host_max_seq_len + spec.block_size - 1) / spec.block_size;
  if (rows > 0 && width < need)
    invalid("block_table has ", width, " columns but the longest sequence (", host_max_seq_len,
            " tokens) needs ", need, " in \"", mamba_cache_mode_name(spec.mamba_cache_mode),
            "\" mode (block_size=", spec.block_size, ")");
}

StateTable mamba_state_table(const ops::Exec& exec, const KvCacheSpec& spec, const Tensor& bt,
                             const int32_t* seq_lens, int64_t num_reqs, int32_t* align_buffer,
                             const Device& device) {
  StateTable s;
  if (spec.mamba_cache_mode != kMambaCacheAlign) {
    s.table = slice_rows(bt, num_reqs);
    return s;
  }
  const int64_t cols = 1 + static_cast<int64_t>(spec.num_speculative_blocks);
  ops::mamba_gather_state_indices(exec, bt.as<const int32_t>(), bt.strides[0], bt.shape[1],
                                  seq_lens, num_reqs, spec.block_size, cols, align_buffer, cols);
  s.table = make_matrix(align_buffer, device, kInt32, num_reqs, cols, cols);
  s.in_buffer = true;
  return s;
}

Tensor matrix_view(const Tensor& m, int64_t row0, int64_t rows, int64_t cols) {
  Tensor t = rows_between(m, row0, row0 + rows);
  t.shape[1] = cols;
  return t;
}

Tensor column_view(const Tensor& m, int64_t row0, int64_t rows, int64_t col) {
  Tensor t;
  t.device = m.device;
  t.dtype = m.dtype;
  t.ndim = 1;
  t.shape[0] = rows;
  t.strides[0] = m.strides[0];
  if (m.data != nullptr)
    t.data = static_cast<char*>(m.data) +
             (row0 * m.strides[0] + col * m.strides[1]) * static_cast<int64_t>(m.dtype.itemsize());
  return t;
}

Tensor vector_view(const Tensor& v, int64_t start, int64_t n) { return rows_between(v, start, start + n); }

int64_t conv1d_metadata(const ops::Exec& exec, const int32_t* qsl_p_host,
                        const int32_t* qsl_p_exec, int64_t num_prefills, int32_t* nums,
                        int32_t* batch_ptr, int32_t* offsets, int64_t program_capacity) {
  int64_t tot = 0;
  for (int64_t r = 0; r < num_prefills; ++r) {
    const int64_t len = static_cast<int64_t>(qsl_p_host[r + 1]) - qsl_p_host[r];
    nums[r] = static_cast<int32_t>((len + 7) / 8);
    tot += nums[r];
  }
  const int64_t programs = conv1d_num_programs(tot);
  if (programs > program_capacity)  // cannot happen for a validated batch
    fail(Status::kInternal, "causal conv1d metadata needs ", programs,
         " programs, more than the ", program_capacity, " planned");
  ops::causal_conv1d_metadata(exec, qsl_p_exec, num_prefills, programs, batch_ptr, offsets);
  return tot;
}

int64_t conv1d_program_capacity(const BuilderConfig& c) {
  return conv1d_num_programs((static_cast<int64_t>(c.max_num_batched_tokens) + 7) / 8 +
                             c.max_num_seqs);
}

}  // namespace attn::backends
