// vLLM 0.33's composite backends (v1/attention/backends/composite.py,
// create_composite_attention_backend with MMPrefixAttentionRouting): TRITON_FLASH_ATTN
// (TRITON_ATTN + FLASH_ATTN) and TRITON_FLASHINFER (TRITON_ATTN + FLASHINFER). Both children
// build for the same spec; each batch goes to one of them: TRITON_ATTN (variant 0, "general")
// when a query must see multimodal PrefixLM image keys (requires_mm_prefix), else the causal
// child (variant 1). The metadata is the chosen child's: libattn's field list is the union of
// the two children's (TRITON_ATTN's names, then the causal child's others) plus
// `attention_backend_variant` (vLLM's `_attention_backend_variant` attribute), then the
// children's fields appended after the composites were released (kAppendedChildFields); the
// fields the chosen child lacks are None.
//
// Level: min(general, causal, routing), the routing's being NEVER when a layer has an unclamped
// sliding window, else UNIFORM_SINGLE_TOKEN_DECODE; reorder threshold: the smallest of the
// children's that is not None; no update_block_table (the composite builder does not declare
// it); capture builds with the causal child (capture_variant 1). vLLM asks every layer of the
// model for its window (static_forward_context) and the group's own layers for the routing;
// libattn takes a SLIDING_WINDOW spec as such a layer (no layer clamps its window for image
// masks in libattn's inputs): a runtime whose model has any sliding-window group gets NEVER from
// attn_min_cudagraph_support over its builders, as vLLM's min over layers.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_descriptor.h"
#include "core/builder.h"
#include "core/error.h"
#include "core/persistent_buffers.h"
#include "core/vllm_release.h"

namespace attn::backends {

extern const BackendDescriptor kTritonAttnBackend;
extern const BackendDescriptor kFlashAttnBackend;
extern const BackendDescriptor kFlashInferBackend;

namespace {

constexpr const char* kVariantField = "attention_backend_variant";
/// The children's fields appended after the composites were released: the composite appends
/// them after attention_backend_variant, so that no field of a released list moves
/// (tests/data/metadata_field_names.txt checks the order).
constexpr const char* kAppendedChildFields[] = {"prefill_sink_wrapper"};  // FLASHINFER, issue 34

bool appended_child_field(const std::string& name) {
  for (const char* f : kAppendedChildFields)
    if (name == f) return true;
  return false;
}
constexpr int kCaptureVariant = 1;  // MMPrefixAttentionRouting.capture_variant

const BackendDescriptor& causal_child(const BackendDescriptor& d) {
  return d.variant == 0 ? kFlashAttnBackend : kFlashInferBackend;
}

/// The layers' sliding window, unclamped (see the file comment).
bool unclamped_window(const KvCacheSpec& spec) { return spec.kind == kKvSlidingWindow; }

int32_t routing_cudagraph_support(const KvCacheSpec& spec) {
  return unclamped_window(spec) ? kCgNever : kCgUniformSingleTokenDecode;
}

/// The children's configs: each gets its own part of a caller workspace.
std::pair<BuilderConfig, BuilderConfig> child_configs(const BackendDescriptor& d,
                                                      const KvCacheSpec& spec,
                                                      const BuilderConfig& config) {
  BuilderConfig g = config, c = config;
  if (config.workspace != nullptr) {
    const size_t own = workspace_bytes(kTritonAttnBackend.buffer_plan(kTritonAttnBackend, spec, config),
                                       config.device);
    c.workspace = static_cast<char*>(config.workspace) + std::min(own, config.workspace_size);
    c.workspace_size = config.workspace_size - std::min(own, config.workspace_size);
    g.workspace_size = std::min(own, config.workspace_size);
  }
  (void)d;
  return {g, c};
}

/// vLLM 0.33's requires_mm_prefix(metadata, unclamped_window): whether a scheduled query of a
/// request overlaps one of its image ranges (rows (request, start, end) of mm_req_doc_ranges),
/// on the host lengths (seq_lens_cpu_upper_bound, which vLLM asserts; libattn also takes the
/// exact host lengths when no bound is given).
bool requires_mm_prefix(const CommonMetadata& c, bool unclamped) {
  if (!c.mm_req_doc_ranges || c.mm_req_doc_ranges->shape[0] == 0) return false;
  if (c.max_query_len <= 1 && !unclamped) return false;
  const int32_t* seq = c.seq_lens_cpu_upper_bound
                           ? c.seq_lens_cpu_upper_bound->as<const int32_t>()
                           : c.host_seq_lens();
  if (seq == nullptr)
    invalid("common->seq_lens_cpu_upper_bound is NULL; the composite backends' routing reads it "
            "with common->mm_req_doc_ranges (vLLM 0.33 asserts it)");
  const int32_t* r = c.mm_req_doc_ranges->as<const int32_t>();
  for (int64_t k = 0; k < c.mm_req_doc_ranges->shape[0]; ++k, r += 3) {
    const int64_t req = r[0], start = r[1], stop = r[2];
    const int64_t q = c.query_len(req);
    if (q == 0 || (q == 1 && !unclamped)) continue;
    const int64_t end = seq[req], begin = end - q;
    if (unclamped && start < stop && start < end && stop >= begin) return true;
    if (start < stop && start < end - 1 && stop > begin) return true;
  }
  return false;
}

class CompositeBuilder final : public Builder {
 public:
  CompositeBuilder(std::shared_ptr<const Backend> backend, const KvCacheSpec& spec,
                   const BuilderConfig& config, const BackendDescriptor& d)
      : Builder(std::move(backend), spec, config) {
    const auto [g, c] = child_configs(d, spec, config);
    children_[0] = make_backend(kTritonAttnBackend)->create(spec, g);
    children_[1] = make_backend(causal_child(d))->create(spec, c);
    std::vector<std::string> names, appended;
    for (const auto& child : children_)
      for (const std::string& n : child->metadata_field_names()) {
        std::vector<std::string>& into = appended_child_field(n) ? appended : names;
        if (std::find(into.begin(), into.end(), n) == into.end()) into.push_back(n);
      }
    variant_index_ = names.size();
    names.push_back(kVariantField);
    names.insert(names.end(), appended.begin(), appended.end());
    init_metadata(names);
    std::optional<int32_t> t;
    for (const auto& child : children_) {
      const std::optional<int32_t> ct = child->reorder_batch_threshold();
      if (ct && (!t || *ct < *t)) t = ct;
    }
    set_reorder_batch_threshold(t);
  }

 protected:
  void do_build(int64_t common_prefix_len, const CommonMetadata& common, bool fast_build,
                const ops::Exec& exec) override {
    // vLLM 0.33 passes common_prefix_len on, and its children ignore it ("deprecated and always
    // 0"): the children build without libattn's cascade extension.
    (void)common_prefix_len;
    const int variant = requires_mm_prefix(common, unclamped_window(spec())) ? 0 : 1;
    CommonMetadata c = common;
    adopt(children_[variant]->build(0, c, fast_build, exec.stream), variant);
  }

  void do_capture(const CommonMetadata& common, const ops::Exec& exec) override {
    CommonMetadata c = common;
    adopt(children_[kCaptureVariant]->build_for_cudagraph_capture(c, exec.stream),
          kCaptureVariant);
  }

 private:
  /// The chosen child's fields by name; the others None.
  void adopt(const Metadata& child, int variant) {
    Metadata& m = metadata();
    for (size_t i = 0; i < m.size(); ++i) {
      if (i == variant_index_) continue;
      const std::optional<size_t> j = child.find(m.field(i).name);
      if (!j) {
        m.set_none(i);
        continue;
      }
      const Field& f = child.field(*j);
      switch (f.kind) {
        case FieldKind::kNone: m.set_none(i); break;
        case FieldKind::kTensor: m.set_tensor(i, f.tensor, f.in_builder_buffer); break;
        case FieldKind::kInt: m.set_int(i, f.int_value); break;
        case FieldKind::kFloat: m.set_float(i, f.float_value); break;
        case FieldKind::kBool: m.set_bool(i, f.int_value != 0); break;
      }
    }
    m.set_int(variant_index_, variant);
  }

  std::unique_ptr<Builder> children_[2];
  size_t variant_index_ = 0;  ///< attention_backend_variant's index
};

int32_t composite_cudagraph_support(const BackendDescriptor& d, const KvCacheSpec& spec,
                                    const BuilderConfig& config) {
  const auto [g, c] = child_configs(d, spec, config);
  const BackendDescriptor& causal = causal_child(d);
  return std::min({kTritonAttnBackend.cudagraph_support(kTritonAttnBackend, spec, g),
                   causal.cudagraph_support(causal, spec, c), routing_cudagraph_support(spec)});
}

void composite_check(const BackendDescriptor& d, const KvCacheSpec& spec,
                     const BuilderConfig& config) {
  check_spec_kind(d, spec);
  const auto [g, c] = child_configs(d, spec, config);
  kTritonAttnBackend.check(kTritonAttnBackend, spec, g);
  causal_child(d).check(causal_child(d), spec, c);
}

std::vector<BufferRequest> composite_plan(const BackendDescriptor& d, const KvCacheSpec& spec,
                                          const BuilderConfig& config) {
  const auto [g, c] = child_configs(d, spec, config);
  std::vector<BufferRequest> p = kTritonAttnBackend.buffer_plan(kTritonAttnBackend, spec, g);
  const std::vector<BufferRequest> q = causal_child(d).buffer_plan(causal_child(d), spec, c);
  p.insert(p.end(), q.begin(), q.end());
  return p;
}

std::unique_ptr<Builder> composite_create(const BackendDescriptor& d,
                                          std::shared_ptr<const Backend> backend,
                                          const KvCacheSpec& spec, const BuilderConfig& config) {
  return std::make_unique<CompositeBuilder>(std::move(backend), spec, config, d);
}

}  // namespace

// Decoder self-attention specs both children build for.
extern const BackendDescriptor kTritonFlashAttnBackend;
const BackendDescriptor kTritonFlashAttnBackend{
    "TRITON_FLASH_ATTN",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    0,
    composite_cudagraph_support,
    composite_check,
    composite_plan,
    composite_create,
};

extern const BackendDescriptor kTritonFlashInferBackend;
const BackendDescriptor kTritonFlashInferBackend{
    "TRITON_FLASHINFER",
    kVllmRelease,
    kv_kind_bit(kKvFullAttention) | kv_kind_bit(kKvSlidingWindow),
    1,
    composite_cudagraph_support,
    composite_check,
    composite_plan,
    composite_create,
};

}  // namespace attn::backends
