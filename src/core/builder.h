// The builder base class: vLLM's AttentionMetadataBuilder. Subclasses implement do_build();
// the base validates every batch, implements _init_reorder_batch_threshold,
// build_for_cudagraph_capture, build_for_drafting, the generic update_block_table and the
// one-caller-at-a-time rule.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/backend.h"
#include "core/builder_config.h"
#include "core/common_metadata.h"
#include "core/kv_cache_spec.h"
#include "core/metadata.h"
#include "ops/exec.h"

namespace attn {

/// The inputs of vLLM's use_cascade_attention.
struct CascadeQuery {
  int64_t common_prefix_len = 0;
  const int32_t* query_lens = nullptr;
  int64_t num_reqs = 0;
  int32_t num_query_heads = 0;
  int32_t num_kv_heads = 0;
  bool use_alibi = false;
  bool use_sliding_window = false;
  bool use_local_attention = false;
  int32_t num_sms = 0;
  int32_t dcp_world_size = 1;
};

class Builder {
 public:
  Builder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
          const BuilderConfig& config);
  virtual ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  const Backend& backend() const { return *backend_; }
  const KvCacheSpec& spec() const { return spec_; }
  const BuilderConfig& config() const { return config_; }

  /// The builder's level (the backend's get_cudagraph_support for its spec and config).
  int32_t cudagraph_support() const { return cudagraph_support_; }
  /// vLLM's reorder_batch_threshold; nullopt = None (does not reorder).
  std::optional<int32_t> reorder_batch_threshold() const { return reorder_batch_threshold_; }
  virtual bool supports_update_block_table() const { return false; }
  /// vLLM 0.33's get_varlen_cudagraph_max_query_len: the largest per-request query length L of
  /// the variable-length decode batches (every real request 1..L tokens, padding 0) a FULL
  /// cudagraph of this builder replays; nullopt = None (the default: ALWAYS builders, which
  /// replay anything, and builders that cannot replay varlen batches).
  virtual std::optional<int32_t> varlen_cudagraph_max_query_len() const { return std::nullopt; }
  /// vLLM 0.33's max_decode_query_len(vllm_config): 1 + k, plus k more for the parallel
  /// drafter's mask slots on model runner V1 only.
  int32_t max_decode_query_len() const;
  /// vLLM's use_cascade_attention; false unless a backend overrides it.
  virtual bool use_cascade_attention(const CascadeQuery& query) const;
  /// Why vLLM 0.33's update_draft_decode_metadata does not apply to this builder, or "" when
  /// it does (its supports_draft_decode_metadata_update). The base builder's answer is vLLM's
  /// base class's: not supported.
  virtual std::string draft_decode_update_refusal() const;
  bool supports_draft_decode_metadata_update() const { return draft_decode_update_refusal().empty(); }
  /// vLLM 0.33's update_draft_decode_metadata(metadata): refreshes, with capture-safe work only,
  /// draft decode metadata whose persistent inputs the speculator advanced in place. Checks
  /// support and that `md` is this backend's built metadata; then do_update_draft_decode.
  void update_draft_decode_metadata(const Metadata& md, void* stream);

  /// build(common_prefix_len, common, fast_build). Validates `common` first; on a validation
  /// error the previous metadata is unchanged.
  Metadata& build(int64_t common_prefix_len, CommonMetadata& common, bool fast_build,
                  void* stream);
  /// build(0, common) after checking the batch against the level (see attn_c.h).
  Metadata& build_for_cudagraph_capture(CommonMetadata& common, void* stream);
  /// build(0, common, fast_build=true).
  Metadata& build_for_drafting(CommonMetadata& common, int32_t draft_index, void* stream);
  /// Copy of `src` (same backend) with block_table and slot_mapping replaced.
  Metadata& update_block_table(const Metadata& src, const Tensor& block_table,
                               const Tensor& slot_mapping, void* stream);

  /// The field names of this builder's metadata, in order (a wrapper's start with these).
  std::vector<std::string> metadata_field_names() const;
  /// The field names of its cascade variant (init_cascade_metadata), or none.
  std::vector<std::string> cascade_metadata_field_names() const;

  /// The metadata of the last build: the cascade variant after a build with
  /// common_prefix_len > 0 when the builder has one, else the plain one.
  Metadata& metadata() { return cascade_active_ ? cascade_metadata_ : metadata_; }
  const Metadata& metadata() const { return cascade_active_ ? cascade_metadata_ : metadata_; }

  /// The limits build(common_prefix_len, common) validates `common` against: limits(), without
  /// the value checks under ATTN_VALIDATE_TRUSTED for a build that reads none; Error for a
  /// negative common_prefix_len. O(1); `common` need not be validated yet.
  CommonLimits build_limits(int64_t common_prefix_len, const CommonMetadata& common) const;
  /// Every check build() makes before do_build: validate(common, build_limits(...)) and the
  /// prefix against the host lengths. On success `common` is validated for this builder.
  void check_build(int64_t common_prefix_len, CommonMetadata& common) const;

  /// begin_use() marks the builder in use by the calling thread (Error(kBusy) when another call
  /// holds it), end_use() releases it; Use is their scoped form.
  void begin_use() const;
  void end_use() const noexcept;

  /// Marks the builder in use by the calling thread; Error(kBusy) when another call holds it.
  class Use {
   public:
    explicit Use(const Builder& b);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    const Builder& builder_;
  };

 protected:
  /// vLLM's _init_reorder_batch_threshold (SPEC.md). Call from a subclass constructor.
  void init_reorder_batch_threshold(std::optional<int32_t> threshold = 1,
                                    bool supports_spec_as_decode = false,
                                    bool supports_dcp_with_varlen = false);
  /// Creates the metadata with the backend's field names; call from a subclass constructor.
  void init_metadata(const std::vector<std::string>& field_names);
  /// The same with a kind other than the backend's name (a wrapper's "FastPrefillFLASH_ATTN").
  void init_metadata(const std::vector<std::string>& field_names, const std::string& kind);
  /// Creates the cascade variant of the metadata (same kind): the fields a build with
  /// common_prefix_len > 0 returns. vLLM 0.33 removed cascade attention, so a builder whose
  /// 0.33 metadata has no cascade fields keeps them here, as libattn's extension; call after
  /// init_metadata().
  void init_cascade_metadata(const std::vector<std::string>& field_names);
  /// Writes every field of metadata() for a validated batch.
  virtual void do_build(int64_t common_prefix_len, const CommonMetadata& common,
                        bool fast_build, const ops::Exec& exec) = 0;
  /// build_for_cudagraph_capture after the level check; default do_build(0, common, false).
  virtual void do_capture(const CommonMetadata& common, const ops::Exec& exec);
  /// build_for_drafting; default do_build(0, common, true) (vLLM's base class).
  virtual void do_drafting(const CommonMetadata& common, int32_t draft_index,
                           const ops::Exec& exec);
  /// update_draft_decode_metadata after its checks. The default does nothing: every field of
  /// libattn's metadata that vLLM's supported builders refresh is a view of the persistent
  /// inputs the speculator advanced (vLLM's TRITON_ATTN and FLASHINFER updates are no-ops too).
  virtual void do_update_draft_decode(const Metadata& md, const ops::Exec& exec);
  /// update_block_table after the support check; the default checks the new tensors against
  /// `src` and calls replace_tables().
  virtual void do_update_block_table(const Metadata& src, const Tensor& block_table,
                                     const Tensor& slot_mapping, const ops::Exec& exec);
  /// Refuses metadata of another kind (another backend or wrapper): the metadata given to
  /// update_block_table and update_draft_decode_metadata.
  void require_own_kind(const Metadata& md) const;
  /// Checks a replacement block table (rows, width for the longest sequence of the batch `src`
  /// was built from, dtype, device) and slot mapping (as long as src's).
  void check_replacement_tables(const Metadata& src, int64_t rows, const Tensor& block_table,
                                const Tensor& slot_mapping) const;
  /// Checks a replacement slot mapping against the batch `src` was built from (its dtype and
  /// length; any int32/int64 vector when that batch had none), for metadata without a
  /// slot_mapping field (the Mamba family).
  void check_replacement_slot_mapping(const Metadata& src, const Tensor& slot_mapping) const;
  /// metadata_ = src with block_table and slot_mapping replaced (`*_in_buffer`: the new tensor
  /// is one of this builder's persistent buffers, which a clone must copy).
  void replace_tables(const Metadata& src, const Tensor& block_table, const Tensor& slot_mapping,
                      bool block_table_in_buffer = false, bool slot_mapping_in_buffer = false);

  /// For wrappers and backends whose level or threshold is not the class-level one.
  void set_cudagraph_support(int32_t level) { cudagraph_support_ = level; }
  void set_reorder_batch_threshold(std::optional<int32_t> t) { reorder_batch_threshold_ = t; }

  /// Whether do_build(common_prefix_len, common) reads values inside the batch's tensors on the
  /// host (to index memory, or to decide anything). Under ATTN_VALIDATE_TRUSTED a build for
  /// which this is false skips validate()'s value checks and costs O(1) in the batch; it must be
  /// answered in O(1) from the scalars and which tensors are given. Default true (values
  /// checked, so the ops that index memory by them stay in bounds).
  virtual bool reads_batch_values(int64_t common_prefix_len, const CommonMetadata& common) const;

  ops::Exec exec(void* stream) const;
  /// build()'s check of common_prefix_len against a batch validated for `lim` (build_limits).
  void check_prefix(int64_t common_prefix_len, const CommonMetadata& common,
                    const CommonLimits& lim) const;
  /// What every batch is validated against: the config's sizes and the spec's block size;
  /// a cross-attention spec's seq_lens are encoder lengths (config->max_encoder_len bounds them).
  virtual CommonLimits limits() const;

 private:
  /// build_group validates once, then runs each builder's check_prefix and run_build.
  friend void build_group(Builder* const* builders, size_t num_builders,
                          const int64_t* common_prefix_lens, CommonMetadata& common,
                          bool fast_build, void* stream, size_t* built);
  /// do_build on a batch that validate() accepted, then records its BuildInfo.
  Metadata& run_build(int64_t common_prefix_len, const CommonMetadata& common, bool fast_build,
                      void* stream);
  /// Records the batch's BuildInfo in metadata_ after a build.
  void record_batch(const CommonMetadata& common);
  void check_replacement_slot_mapping(DType dtype, int64_t len, const Tensor& slot_mapping) const;

  std::shared_ptr<const Backend> backend_;
  KvCacheSpec spec_;
  BuilderConfig config_;
  int32_t cudagraph_support_ = 0;
  std::optional<int32_t> reorder_batch_threshold_;
  /// Makes metadata() the cascade variant (when there is one) or the plain one.
  void select_metadata(bool cascade) { cascade_active_ = cascade && has_cascade_; }

  Metadata metadata_;
  Metadata cascade_metadata_;
  bool has_cascade_ = false;
  bool cascade_active_ = false;
  mutable std::atomic<bool> in_use_{false};
};

}  // namespace attn
