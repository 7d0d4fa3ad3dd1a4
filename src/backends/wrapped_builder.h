// The base of vLLM's builder wrappers (subclass_attention_backend): a builder that turns the
// batch into another batch, builds that with an inner builder of the same backend, and returns
// the inner metadata's fields followed by fields of its own. The inner builder's buffers follow
// the wrapper's in a caller's workspace.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/builder.h"
#include "core/persistent_buffers.h"

namespace attn::backends {

class WrappedBuilder : public Builder {
 public:
  /// `kind`: the metadata kind (vLLM's class-name prefix + the inner kind); `extra_fields`: the
  /// names after the inner builder's; `buffers`: the wrapper's persistent buffers (placed at the
  /// start of config.workspace when there is one).
  WrappedBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                 const BuilderConfig& config, std::unique_ptr<Builder> inner,
                 const std::string& kind_prefix, const std::vector<std::string>& extra_fields,
                 const std::vector<BufferRequest>& buffers);

  bool supports_update_block_table() const override { return inner_->supports_update_block_table(); }
  bool use_cascade_attention(const CascadeQuery& q) const override {
    return inner_->use_cascade_attention(q);
  }
  /// vLLM's wrappers subclass the inner builder class and inherit its classmethod.
  std::optional<int32_t> varlen_cudagraph_max_query_len() const override {
    return inner_->varlen_cudagraph_max_query_len();
  }
  /// Inherited too (the inner builder's __init__ sets it on vLLM's subclass).
  std::string draft_decode_update_refusal() const override {
    return inner_->draft_decode_update_refusal();
  }

 protected:
  /// The batch the inner builder builds (views of `common` and of this builder's buffers).
  virtual CommonMetadata transform(const CommonMetadata& common, const ops::Exec& exec) = 0;
  /// Writes the wrapper's own fields (from extra_base()) once the inner fields are in place.
  virtual void finish(const CommonMetadata& common, const CommonMetadata& transformed,
                      const ops::Exec& exec);

  void do_build(int64_t common_prefix_len, const CommonMetadata& common, bool fast_build,
                const ops::Exec& exec) override;
  void do_capture(const CommonMetadata& common, const ops::Exec& exec) override;
  void do_drafting(const CommonMetadata& common, int32_t draft_index,
                   const ops::Exec& exec) override;

  size_t extra_base() const { return inner_fields_; }
  const PersistentBuffers& buffers() const { return buffers_; }
  Builder& inner() { return *inner_; }

 private:
  /// Copies the inner metadata into this one, marking the fields that alias this builder's
  /// buffers (a clone must copy those).
  void adopt(const Metadata& inner_metadata);

  std::unique_ptr<Builder> inner_;
  size_t inner_fields_ = 0;
  PersistentBuffers buffers_;
};

}  // namespace attn::backends
