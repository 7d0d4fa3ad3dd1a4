#include "core/builder.h"

#include <algorithm>

#include "core/error.h"

namespace attn {

Builder::Builder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                 const BuilderConfig& config)
    : backend_(std::move(backend)), spec_(spec), config_(config) {
  cudagraph_support_ = backend_->cudagraph_support(spec_, config_);
  backend_->live_builders_.fetch_add(1);
}

Builder::~Builder() { backend_->live_builders_.fetch_sub(1); }

bool Builder::use_cascade_attention(const CascadeQuery&) const { return false; }

bool Builder::reads_batch_values(int64_t, const CommonMetadata&) const { return true; }

int32_t Builder::max_decode_query_len() const { return attn::max_decode_query_len(config_); }

void Builder::init_reorder_batch_threshold(std::optional<int32_t> threshold,
                                           bool supports_spec_as_decode,
                                           bool supports_dcp_with_varlen) {
  reorder_batch_threshold_ = threshold;
  if (reorder_batch_threshold_ && supports_spec_as_decode && config_.num_speculative_tokens > 0) {
    reorder_batch_threshold_ = std::max(*reorder_batch_threshold_, max_decode_query_len());
  }
  if (config_.decode_context_parallel_size > 1 && !supports_dcp_with_varlen)
    reorder_batch_threshold_ = 1;
}

void Builder::init_metadata(const std::vector<std::string>& field_names) {
  metadata_ = Metadata(backend_->name(), field_names, config_.allocator);
}

void Builder::init_metadata(const std::vector<std::string>& field_names, const std::string& kind) {
  metadata_ = Metadata(kind, field_names, config_.allocator);
}

void Builder::init_cascade_metadata(const std::vector<std::string>& field_names) {
  cascade_metadata_ = Metadata(metadata_.kind(), field_names, config_.allocator);
  has_cascade_ = true;
}

ops::Exec Builder::exec(void* stream) const {
  ops::Exec e;
  e.on_cuda = config_.device.is_cuda();
  e.device_id = config_.device.id;
  e.stream = stream;
  return e;
}

CommonLimits Builder::limits() const {
  CommonLimits lim;
  lim.device = config_.device;
  lim.max_num_seqs = config_.max_num_seqs;
  lim.max_num_batched_tokens = config_.max_num_batched_tokens;
  lim.max_model_len = config_.max_model_len;
  lim.block_size = spec_.block_size;
  lim.full = config_.validate_full;
  // Encoder-only layers have no KV cache: vLLM's runner hands them a dummy (num_reqs, 1) table.
  if (spec_.kind == kKvEncoderOnly) lim.block_size = 0;
  // A circular buffer's block is a ring: one column per request (vLLM's CircularBufferSpec
  // max_num_blocks_per_req is 1), whatever the seq_lens.
  if (spec_.kind == kKvCircularBuffer) lim.block_size = 0;
  if (spec_.kind == kKvCrossAttention) {
    lim.seq_lens_are_encoder_lens = true;
    lim.max_model_len = config_.max_encoder_len > 0 ? config_.max_encoder_len : -1;
  }
  return lim;
}

CommonLimits Builder::build_limits(int64_t common_prefix_len, const CommonMetadata& common) const {
  if (common_prefix_len < 0)
    invalid("common_prefix_len=", common_prefix_len, " is negative");
  CommonLimits lim = limits();
  // ATTN_VALIDATE_TRUSTED: a build that reads no values needs none checked (O(1) in the batch).
  if (config_.validate_trusted && !reads_batch_values(common_prefix_len, common))
    lim.values = false;
  return lim;
}

void Builder::check_prefix(int64_t common_prefix_len, const CommonMetadata& common,
                           const CommonLimits& lim) const {
  if (common_prefix_len > 0 && lim.values && common.seq_lens_host != nullptr) {
    for (int64_t i = 0; i < common.num_reqs; ++i)
      if (common.seq_lens_host[i] < common_prefix_len)
        invalid("common_prefix_len=", common_prefix_len, " exceeds common->seq_lens[", i,
                "]=", common.seq_lens_host[i]);
  }
}

void Builder::check_build(int64_t common_prefix_len, CommonMetadata& common) const {
  const CommonLimits lim = build_limits(common_prefix_len, common);
  validate(common, lim);
  check_prefix(common_prefix_len, common, lim);
}

Metadata& Builder::build(int64_t common_prefix_len, CommonMetadata& common, bool fast_build,
                         void* stream) {
  check_build(common_prefix_len, common);
  return run_build(common_prefix_len, common, fast_build, stream);
}

Metadata& Builder::run_build(int64_t common_prefix_len, const CommonMetadata& common,
                             bool fast_build, void* stream) {
  const bool previous = cascade_active_;
  select_metadata(common_prefix_len > 0);
  try {
    do_build(common_prefix_len, common, fast_build, exec(stream));
  } catch (...) {
    cascade_active_ = previous;
    throw;
  }
  record_batch(common);
  return metadata();
}

void Builder::record_batch(const CommonMetadata& common) {
  BuildInfo& info = metadata().info;
  info.num_reqs = common.num_reqs;
  info.host_max_seq_len = common.host_max_seq_len;
  info.slot_mapping_dtype = common.slot_mapping ? common.slot_mapping->dtype : DType{};
  info.slot_mapping_len = common.slot_mapping ? common.slot_mapping->shape[0] : -1;
}

Metadata& Builder::build_for_cudagraph_capture(CommonMetadata& common, void* stream) {
  validate(common, limits());
  const int32_t level = cudagraph_support_;
  const char* level_name = cudagraph_support_name(level);
  if (level == kCgNever)
    fail(Status::kUnsupported, backend_->name(),
         " has CUDA graph support NEVER: its metadata cannot be captured");
  for (int64_t i = 0; i < common.num_reqs; ++i) {
    const int64_t q = common.query_len(i);
    if (level == kCgUniformSingleTokenDecode && q > 1)
      fail(Status::kUnsupported, backend_->name(), " has CUDA graph support ", level_name,
           ": request ", i, " has query length ", q, " (only single-token decodes)");
    const bool last = i + 1 == common.num_reqs;
    // Zero-length requests are the padding of a captured batch (vLLM's split counts them as
    // decodes).
    if (level == kCgUniformBatch && q != 0 &&
        (last ? q > common.max_query_len : q != common.max_query_len))
      fail(Status::kUnsupported, backend_->name(), " has CUDA graph support ", level_name,
           ": request ", i, " has query length ", q, " but the batch is uniform in ",
           common.max_query_len);
  }
  const bool previous = cascade_active_;
  select_metadata(false);
  try {
    do_capture(common, exec(stream));
  } catch (...) {
    cascade_active_ = previous;
    throw;
  }
  record_batch(common);
  return metadata();
}

void Builder::do_capture(const CommonMetadata& common, const ops::Exec& exec) {
  do_build(0, common, false, exec);
}

void Builder::do_drafting(const CommonMetadata& common, int32_t, const ops::Exec& exec) {
  do_build(0, common, true, exec);
}

std::vector<std::string> Builder::metadata_field_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < metadata_.size(); ++i) names.push_back(metadata_.field(i).name);
  return names;
}

std::vector<std::string> Builder::cascade_metadata_field_names() const {
  std::vector<std::string> names;
  if (!has_cascade_) return names;
  for (size_t i = 0; i < cascade_metadata_.size(); ++i)
    names.push_back(cascade_metadata_.field(i).name);
  return names;
}

Metadata& Builder::build_for_drafting(CommonMetadata& common, int32_t draft_index, void* stream) {
  if (draft_index < 0) invalid("draft_index=", draft_index, " is negative");
  validate(common, limits());
  const bool previous = cascade_active_;
  select_metadata(false);
  try {
    do_drafting(common, draft_index, exec(stream));
  } catch (...) {
    cascade_active_ = previous;
    throw;
  }
  record_batch(common);
  return metadata();
}

void Builder::require_own_kind(const Metadata& md) const {
  if (md.kind() != metadata_.kind())
    invalid("metadata was built by '", md.kind(), "', this builder is '", metadata_.kind(), "'");
}

std::string Builder::draft_decode_update_refusal() const {
  return "vLLM 0.33's base builder class does not support it";
}

void Builder::update_draft_decode_metadata(const Metadata& md, void* stream) {
  const std::string why = draft_decode_update_refusal();
  if (!why.empty())
    fail(Status::kUnsupported, backend_->name(), " does not support update_draft_decode_metadata: ",
         why);
  require_own_kind(md);
  bool built = false;  // a builder's metadata before its first build has every field None
  for (size_t i = 0; i < md.size() && !built; ++i) built = md.field(i).kind != FieldKind::kNone;
  if (!built) invalid("metadata was never built (build the draft decode batch first)");
  do_update_draft_decode(md, exec(stream));
}

void Builder::do_update_draft_decode(const Metadata&, const ops::Exec&) {}

Metadata& Builder::update_block_table(const Metadata& src, const Tensor& block_table,
                                      const Tensor& slot_mapping, void* stream) {
  if (!supports_update_block_table())
    fail(Status::kUnsupported, backend_->name(), " does not support update_block_table");
  require_own_kind(src);
  // The result has src's variant (a cascade build's fields, or the plain ones).
  const bool previous = cascade_active_;
  select_metadata(&src == &cascade_metadata_ ||
                  (has_cascade_ && src.size() == cascade_metadata_.size() &&
                   src.size() != metadata_.size()));
  // Backends whose metadata has no block_table/slot_mapping fields (the Mamba family derives
  // state indices from the table instead) check the replacement in do_update_block_table.
  try {
    const std::optional<size_t> bt_index = metadata().find("block_table");
    const std::optional<size_t> sm_index = metadata().find("slot_mapping");
    if (bt_index && sm_index) {
      const Field& old_bt = src.field(*bt_index);
      const Field& old_sm = src.field(*sm_index);
      if (old_bt.kind != FieldKind::kTensor || old_sm.kind != FieldKind::kTensor)
        invalid("metadata has no block_table/slot_mapping to replace (it was never built)");
    }
    do_update_block_table(src, block_table, slot_mapping, exec(stream));
  } catch (...) {
    cascade_active_ = previous;
    throw;
  }
  return metadata();
}

void Builder::do_update_block_table(const Metadata& src, const Tensor& block_table,
                                    const Tensor& slot_mapping, const ops::Exec&) {
  const Field& old_bt = src.field(metadata().index_of("block_table"));
  check_replacement_tables(src, old_bt.tensor.shape[0], block_table, slot_mapping);
  replace_tables(src, block_table, slot_mapping);
}

void Builder::check_replacement_tables(const Metadata& src, int64_t rows,
                                       const Tensor& block_table,
                                       const Tensor& slot_mapping) const {
  const Field& old_sm = src.field(metadata().index_of("slot_mapping"));
  expect_dtype(block_table, "block_table", kInt32);
  expect_rows(block_table, "block_table", rows);
  if (block_table.data == nullptr && block_table.numel() > 0) invalid("block_table has data=NULL");
  if (!usable_on(block_table, config_.device))
    invalid("block_table is on ", block_table.device.to_string(), " but the builder runs on ",
            config_.device.to_string());
  const int64_t longest = src.info.host_max_seq_len;
  if (longest >= 0) {
    const int64_t need = (longest + spec_.block_size - 1) / spec_.block_size;
    if (block_table.shape[1] < need)
      invalid("block_table has ", block_table.shape[1], " columns but the longest sequence (",
              longest, " tokens) needs ", need, " blocks of ", spec_.block_size);
  }
  check_replacement_slot_mapping(old_sm.tensor.dtype, old_sm.tensor.shape[0], slot_mapping);
}

void Builder::check_replacement_slot_mapping(const Metadata& src, const Tensor& slot_mapping) const {
  if (src.info.slot_mapping_len >= 0) {
    check_replacement_slot_mapping(src.info.slot_mapping_dtype, src.info.slot_mapping_len,
                                   slot_mapping);
  } else {  // built without one: any int32/int64 vector
    expect_index_dtype(slot_mapping, "slot_mapping");
    check_replacement_slot_mapping(slot_mapping.dtype, slot_mapping.ndim == 1 ? slot_mapping.shape[0] : -1,
                                   slot_mapping);
  }
}

void Builder::check_replacement_slot_mapping(DType dtype, int64_t len,
                                             const Tensor& slot_mapping) const {
  expect_dtype(slot_mapping, "slot_mapping", dtype);
  expect_vector(slot_mapping, "slot_mapping", len);
  if (slot_mapping.data == nullptr && slot_mapping.numel() > 0) invalid("slot_mapping has data=NULL");
  if (!usable_on(slot_mapping, config_.device))
    invalid("slot_mapping is on ", slot_mapping.device.to_string(), " but the builder runs on ",
            config_.device.to_string());
}

void Builder::replace_tables(const Metadata& src, const Tensor& block_table,
                             const Tensor& slot_mapping, bool block_table_in_buffer,
                             bool slot_mapping_in_buffer) {
  Metadata& m = metadata();
  if (&src != &m) m.assign_values(src);
  m.set_tensor(m.index_of("block_table"), block_table, block_table_in_buffer);
  m.set_tensor(m.index_of("slot_mapping"), slot_mapping, slot_mapping_in_buffer);
}

void Builder::begin_use() const {
  bool expected = false;
  if (!in_use_.compare_exchange_strong(expected, true, std::memory_order_acquire))
    fail(Status::kBusy, "builder '", backend_->name(),
         "' is in use by another call; one builder serves one thread at a time");
}

void Builder::end_use() const noexcept { in_use_.store(false, std::memory_order_release); }

Builder::Use::Use(const Builder& b) : builder_(b) { b.begin_use(); }

Builder::Use::~Use() { builder_.end_use(); }

}  // namespace attn
