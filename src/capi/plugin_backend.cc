#include "capi/plugin_backend.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "capi/abi_fields_io.h"
#include "capi/convert.h"
#include "core/builder.h"
#include "core/error.h"

namespace attn::capi {
namespace {

constexpr size_t kErrSize = 512;

Status plugin_status(int32_t code) {
  return code >= ATTN_ERR_INVALID_ARGUMENT && code <= ATTN_ERR_INTERNAL ? static_cast<Status>(code)
                                                                        : Status::kInternal;
}

std::string message_of(const char* err) {
  return err[0] != '\0' ? std::string(err, strnlen(err, kErrSize)) : std::string("no message");
}

// ABI views of a validated batch, for the duration of one plugin call: every field of
// attn_common_metadata_t (core/abi_fields.h).
class CommonView {
 public:
  explicit CommonView(const CommonMetadata& in) {
    attn_common_metadata_t& out = c_;
    out = ATTN_COMMON_METADATA_INIT;
    ATTN_COMMON_METADATA_FIELDS(ATTN_WRITE_FIELD)
  }
  const attn_common_metadata_t* get() const { return &c_; }

  /// Whether `t` lies inside one of the batch's tensors: a view of the caller's input (which a
  /// clone keeps as a view) rather than memory of the plugin's (which a clone must copy).
  bool views_input(const Tensor& t) const {
    const auto [first, last] = byte_span(t);
    for (size_t i = 0; i < used_; ++i) {
      const auto [in_first, in_last] = byte_span(inputs_[i]);
      if (t.device == inputs_[i].device && first >= in_first && last <= in_last) return true;
    }
    return false;
  }

 private:
  const attn_tensor_t* view(const std::optional<Tensor>& t) {
    if (!t) return nullptr;
    inputs_[used_] = *t;
    views_[used_] = from_tensor(*t);
    return &views_[used_++];
  }
  /// [first, last) bytes of a view (strides taken by magnitude; an empty view covers nothing).
  static std::pair<uintptr_t, uintptr_t> byte_span(const Tensor& t) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(t.data);
    if (t.numel() == 0) return {base, base};
    uint64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element
    for (int32_t d = 0; d < t.ndim; ++d) {
      const int64_t reach = (t.shape[d] - 1) * t.strides[d];
      if (reach < 0)
        lo += static_cast<uint64_t>(-reach);
      else
        hi += static_cast<uint64_t>(reach);
    }
    const uint64_t item = t.dtype.itemsize();
    return {base - lo * item, base + (hi + 1) * item};
  }
  /// At least one view per tensor field (each is a pointer in the struct).
  static constexpr size_t kTensors = sizeof(attn_common_metadata_t) / sizeof(attn_tensor_t*);
  Tensor inputs_[kTensors] = {};
  attn_common_metadata_t c_;
  attn_tensor_t views_[kTensors] = {};
  size_t used_ = 0;
};

// The context behind attn_plugin_output_t. Setters never throw into the plugin's C frames.
struct Output {
  Metadata* metadata;
  const CommonView* batch;  ///< The build's inputs, to tell views of them from plugin memory.
  std::string error;

  static Output& of(void* ctx) { return *static_cast<Output*>(ctx); }

  template <class Set>
  static int32_t set(void* ctx, const char* name, Set&& set_value) {
    try {
      Output& o = of(ctx);
      if (name == nullptr) return ATTN_ERR_INVALID_ARGUMENT;
      auto i = o.metadata->find(name);
      if (!i) return ATTN_ERR_NOT_FOUND;
      set_value(*o.metadata, *i);
      return ATTN_OK;
    } catch (...) {  // the value is refused and the field left as it was (None)
      return ATTN_ERR_INVALID_ARGUMENT;
    }
  }
  static int32_t set_tensor(void* ctx, const char* name, const attn_tensor_t* value) {
    return set(ctx, name, [&](Metadata& m, size_t i) {
      if (value == nullptr) {
        m.set_none(i);
      } else {
        // Memory of the plugin's (its state's buffers) changes with its next build, as a
        // built-in builder's buffers do: attn_metadata_clone copies it.
        // Checked as strictly as a caller's view (extent, alignment, NULL data).
        const Tensor t = *to_tensor(value, name);
        m.set_tensor(i, t, !of(ctx).batch->views_input(t));
      }
    });
  }
  static int32_t set_int(void* ctx, const char* name, int64_t v) {
    return set(ctx, name, [&](Metadata& m, size_t i) { m.set_int(i, v); });
  }
  static int32_t set_float(void* ctx, const char* name, double v) {
    return set(ctx, name, [&](Metadata& m, size_t i) { m.set_float(i, v); });
  }
  static int32_t set_bool(void* ctx, const char* name, int32_t v) {
    return set(ctx, name, [&](Metadata& m, size_t i) { m.set_bool(i, v != 0); });
  }
  static int32_t set_none(void* ctx, const char* name) {
    return set(ctx, name, [&](Metadata& m, size_t i) { m.set_none(i); });
  }
  static void set_error(void* ctx, const char* message) {
    try {
      of(ctx).error = message != nullptr ? message : "";
    } catch (...) {
    }
  }
};

class PluginBackend;

class PluginBuilder final : public Builder {
 public:
  PluginBuilder(std::shared_ptr<const Backend> backend, const attn_plugin_backend_t& d,
                const KvCacheSpec& spec, const BuilderConfig& config)
      : Builder(std::move(backend), spec, config), d_(d) {
    std::vector<std::string> names(d_.field_names, d_.field_names + d_.num_fields);
    init_metadata(names);
    std::vector<attn_per_layer_params_t> layers;
    const attn_kv_cache_spec_t s = from_spec(spec);
    const attn_builder_config_t c = from_config(config, layers);
    int32_t threshold = ATTN_NO_REORDER;
    char err[kErrSize] = {0};
    const int32_t code = d_.create(&s, &c, &state_, &threshold, err, kErrSize);
    if (code != ATTN_OK)
      fail(plugin_status(code), "plugin backend '", d_.name, "' create failed: ", message_of(err));
    if (threshold < 0) {
      d_.destroy(state_);
      fail(Status::kInternal, "plugin backend '", d_.name, "' returned reorder_batch_threshold=",
           threshold);
    }
    // The plugin's own answer, taken as it is (no spec-decode or DCP adjustment).
    init_reorder_batch_threshold(
        threshold == ATTN_NO_REORDER ? std::nullopt : std::optional<int32_t>(threshold), false,
        true);
  }
  ~PluginBuilder() override { d_.destroy(state_); }

  bool supports_update_block_table() const override { return d_.supports_update_block_table != 0; }

 protected:
  void do_build(int64_t common_prefix_len, const CommonMetadata& common, bool fast_build,
                const ops::Exec& exec) override {
    Metadata& m = metadata();
    m.reset();
    const CommonView view(common);
    Output ctx{&m, &view, {}};
    attn_plugin_output_t out{};
    out.struct_size = sizeof(out);
    out.ctx = &ctx;
    out.set_tensor = &Output::set_tensor;
    out.set_int = &Output::set_int;
    out.set_float = &Output::set_float;
    out.set_bool = &Output::set_bool;
    out.set_none = &Output::set_none;
    out.set_error = &Output::set_error;
    const int32_t code = d_.build(state_, common_prefix_len, view.get(), fast_build ? 1 : 0, &out,
                                  static_cast<attn_stream_t>(exec.stream));
    if (code != ATTN_OK) {
      m.reset();
      fail(plugin_status(code), "plugin backend '", d_.name, "' build failed: ",
           ctx.error.empty() ? std::string("no message") : ctx.error);
    }
  }

 private:
  attn_plugin_backend_t d_;
  void* state_ = nullptr;
};

class PluginBackend final : public Backend {
 public:
  PluginBackend(std::shared_ptr<PluginLibrary> library, const attn_plugin_backend_t& d)
      : library_(std::move(library)), d_(d), name_(d.name) {}

  const std::string& name() const override { return name_; }
  // A plugin's table names no spec kinds: libattn hands it every kind and the plugin's create
  // decides.
  uint32_t accepted_spec_kinds() const override { return kAllKvKinds; }
  const char* vllm_release() const override { return "plugin"; }

  int32_t cudagraph_support(const KvCacheSpec& spec, const BuilderConfig& config) const override {
    std::vector<attn_per_layer_params_t> layers;
    const attn_kv_cache_spec_t s = from_spec(spec);
    const attn_builder_config_t c = from_config(config, layers);
    int32_t level = ATTN_CG_NEVER;
    char err[kErrSize] = {0};
    const int32_t code = d_.cudagraph_support(&s, &c, &level, err, kErrSize);
    if (code != ATTN_OK)
      fail(plugin_status(code), "plugin backend '", name_, "' cudagraph_support failed: ",
           message_of(err));
    if (level < ATTN_CG_NEVER || level > ATTN_CG_ALWAYS)
      fail(Status::kInternal, "plugin backend '", name_, "' returned CUDA graph level ", level,
           " (not 0..3)");
    return level;
  }

  std::vector<BufferRequest> buffer_plan(const KvCacheSpec&, const BuilderConfig&) const override {
    return {};  // Plugins manage their own memory.
  }

  std::unique_ptr<Builder> create(const KvCacheSpec& spec,
                                  const BuilderConfig& config) const override {
    return std::make_unique<PluginBuilder>(shared_from_this(), d_, spec, config);
  }


 private:
  std::shared_ptr<PluginLibrary> library_;  // Keeps the code of d_'s callbacks loaded.
  attn_plugin_backend_t d_;
  std::string name_;
};

}  // namespace

bool is_plugin_backend(const Backend& backend) {
  return dynamic_cast<const PluginBackend*>(&backend) != nullptr;
}

std::shared_ptr<const Backend> make_plugin_backend(std::shared_ptr<PluginLibrary> library,
                                                   const attn_plugin_backend_t& descriptor) {
  return std::make_shared<PluginBackend>(std::move(library), descriptor);
}

}  // namespace attn::capi
