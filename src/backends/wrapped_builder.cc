#include "backends/wrapped_builder.h"

#include <utility>

namespace attn::backends {

WrappedBuilder::WrappedBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                               const BuilderConfig& config, std::unique_ptr<Builder> inner,
                               const std::string& kind_prefix,
                               const std::vector<std::string>& extra_fields,
                               const std::vector<BufferRequest>& buffers)
    : Builder(std::move(backend), spec, config),
      inner_(std::move(inner)),
      buffers_(kind_prefix.c_str(), config.device, buffers, config.allocator, config.workspace,
               config.workspace_size) {
  std::vector<std::string> names = inner_->metadata_field_names();
  inner_fields_ = names.size();
  names.insert(names.end(), extra_fields.begin(), extra_fields.end());
  init_metadata(names, kind_prefix + inner_->metadata().kind());
  std::vector<std::string> cascade = inner_->cascade_metadata_field_names();
  if (!cascade.empty()) {  // the inner builder's cascade variant, then the wrapper's own fields
    cascade.insert(cascade.end(), extra_fields.begin(), extra_fields.end());
    init_cascade_metadata(cascade);
  }
  set_cudagraph_support(inner_->cudagraph_support());
  set_reorder_batch_threshold(inner_->reorder_batch_threshold());
}

void WrappedBuilder::finish(const CommonMetadata&, const CommonMetadata&, const ops::Exec&) {}

void WrappedBuilder::adopt(const Metadata& inner_metadata) {
  Metadata& m = metadata();
  m.reset();
  m.assign_prefix(inner_metadata);
  for (size_t i = 0; i < inner_fields_; ++i) {
    const Field& f = m.field(i);
    if (f.kind == FieldKind::kTensor && buffers_.contains(f.tensor.data))
      m.set_in_builder_buffer(i, true);
  }
}

void WrappedBuilder::do_build(int64_t common_prefix_len, const CommonMetadata& common,
                              bool fast_build, const ops::Exec& exec) {
  CommonMetadata t = transform(common, exec);
  adopt(inner_->build(common_prefix_len, t, fast_build, exec.stream));
  finish(common, t, exec);
}

void WrappedBuilder::do_capture(const CommonMetadata& common, const ops::Exec& exec) {
  CommonMetadata t = transform(common, exec);
  adopt(inner_->build_for_cudagraph_capture(t, exec.stream));
  finish(common, t, exec);
}

void WrappedBuilder::do_drafting(const CommonMetadata& common, int32_t draft_index,
                                 const ops::Exec& exec) {
  CommonMetadata t = transform(common, exec);
  adopt(inner_->build_for_drafting(t, draft_index, exec.stream));
  finish(common, t, exec);
}

}  // namespace attn::backends
