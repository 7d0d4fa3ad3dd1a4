// The backends' data against their behaviour: for every built-in backend and every KV cache spec
// kind, creating a builder (through the capi's path, wrappers included) succeeds iff the kind is
// in accepted_spec_kinds(); every backend names a vLLM release; a plugin's backends accept every
// kind and say "plugin". Links the library's objects (C++ internals, no ABI in between).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attn_c.h"
#include "backends/builder_factory.h"
#include "backends/builtin_backends.h"
#include "core/backend.h"
#include "core/builder_config.h"
#include "core/error.h"
#include "core/kv_cache_spec.h"
#include "core/registry.h"

namespace {

int failures = 0;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      ++failures;                                                 \
      std::fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                          \
      std::fprintf(stderr, "\n");                                 \
    }                                                             \
  } while (0)

bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }

/// A spec of `kind` that the backend's family can build when it accepts the kind: the family's
/// head and block sizes (MLA's latent cache, a Mamba state), the kind's own parameters.
attn::KvCacheSpec spec_for(const std::string& backend, int32_t kind) {
  attn::KvCacheSpec s;
  s.kind = kind;
  s.block_size = 16;
  s.num_kv_heads = 8;
  s.head_size = 128;
  // the indexer and DeepSeek's sparse SWA run on MLA caches
  if (has(backend, "MLA") || has(backend, "INDEXER") || has(backend, "SPARSE_SWA")) {
    s.num_kv_heads = 1;
    s.head_size = 576;
    s.block_size = 128;  // a multiple of every MLA kernel's block size (CUTLASS_MLA's 128)
  }
  // DeepSeek V4 / V4.1 sparse MLA and the V4 indexer: kernel block size 256
  if (has(backend, "DSV4") || has(backend, "V4_MLA") || has(backend, "V4_INDEXER"))
    s.block_size = 256;
  if (backend == "DOTS3_NOTE_TRITON_MLA") {  // dots3 NOTE's windowed 1024 + 64 latent cache
    s.head_size = 1088;
    s.sliding_window = 128;
  }
  if (has(backend, "MINIMAX_M3_SPARSE")) s.block_size = 128;  // its kernel block size
  s.mamba_chunk_size = 256;  // MAMBA2 needs one; read by ATTN_KV_MAMBA specs only
  if (kind == attn::kKvSlidingWindow) s.sliding_window = 64;
  if (kind == attn::kKvChunkedLocalAttention) s.attention_chunk_size = 256;
  return s;
}

/// Small limits every backend accepts (MLA sizes its chunked-prefill workspace from them).
attn::BuilderConfig small_config() {
  attn::BuilderConfig c;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 1024;
  c.num_attention_heads = 32;
  c.device_capability = 90;
  c.num_gpu_blocks = 1024;  // FLEX_ATTENTION reads it
  c.max_encoder_len = 32;   // cross attention
  return c;
}

void test_builtin_kinds_match_create() {
  attn::backends::register_builtin_backends();
  attn::Registry& r = attn::Registry::instance();
  CHECK(r.count() == 83, "%zu built-in backends, expected 83", r.count());
  for (size_t i = 0; i < r.count(); ++i) {
    const std::shared_ptr<const attn::Backend> b = r.at(i);
    const std::string& name = b->name();
    const uint32_t mask = b->accepted_spec_kinds();
    CHECK(mask != 0 && (mask & ~attn::kAllKvKinds) == 0, "%s: mask 0x%x", name.c_str(), mask);
    CHECK(b->vllm_release() != nullptr && std::strlen(b->vllm_release()) > 0,
          "%s: no vLLM release", name.c_str());
    for (int32_t kind = 0; kind < attn::kKvKindCount; ++kind) {
      attn::KvCacheSpec spec = spec_for(name, kind);
      attn::BuilderConfig config = small_config();
      if (name == "TOKENSPEED_MLA") config.cache_dtype = attn::kKvDtypeFp8E4m3;  // fp8 only
      // DeepSeek V4 / V4.1's and Qwen4-exp's ROCm builders are vLLM's on ROCm only
      if (has(name, "ROCM_FLASHMLA_SPARSE") || has(name, "SPARSE_SWA_ROCM") ||
          name == "QWEN4_EXP_QSA_TRITON_ROCM")
        config.platform_rocm = true;
      if (name == "DOTS3_NOTE_TRITON_MLA") config.mla_kv_lora_rank = 1024;  // NOTE's latent
      if (has(name, "MINIMAX_M3_SPARSE_INDEXER")) config.sparse_num_index_heads = 4;  // required
      if (name == "DEEPSEEK_V41_SPARSE_INDEXER") {  // DeepSeek V4.1's inputs, SM100 only
        config.device_capability = 100;
        config.candidate_block_size = 64;
        config.candidate_topk_blocks = 8;
        config.indexer_kv_mxfp4 = true;
      }
      const bool accepted = attn::accepts_spec_kind(mask, kind);
      std::string error;
      attn::Status status = attn::Status::kOk;
      try {
        attn::validate(spec);
        attn::validate(config, spec);
      } catch (const attn::Error& e) {
        CHECK(false, "%s kind %d: the test's spec or config is invalid: %s", name.c_str(), kind,
              e.what());
        continue;
      }
      // The default cache dtype first, then FP8 for the backends whose caches are FP8 only
      // (TOKENSPEED_MLA): a kind is accepted when either builds.
      for (const int32_t cache_dtype : {attn::kKvDtypeAuto, attn::kKvDtypeFp8E4m3}) {
        config.cache_dtype = cache_dtype;
        error.clear();
        status = attn::Status::kOk;
        try {
          auto builder = attn::backends::create_builder(b, spec, config);
          CHECK(builder != nullptr, "%s kind %d: null builder", name.c_str(), kind);
        } catch (const attn::Error& e) {
          error = e.what();
          status = e.status();
        }
        if (error.empty() || !has(error, "cache_dtype")) break;
      }
      if (accepted) {
        CHECK(error.empty(), "%s accepts %s specs but creating a builder failed: %s",
              name.c_str(), attn::kv_cache_kind_name(kind), error.c_str());
      } else {
        CHECK(!error.empty(), "%s does not list %s specs but created a builder", name.c_str(),
              attn::kv_cache_kind_name(kind));
        CHECK(status == attn::Status::kUnsupported || status == attn::Status::kInvalidArgument,
              "%s kind %d: status %d", name.c_str(), kind, static_cast<int>(status));
      }
      // Backend::create alone (no wrapper): a kind outside the mask is always unsupported.
      if (!accepted) {
        bool refused = false;
        try {
          (void)b->create(spec, config);
        } catch (const attn::Error& e) {
          refused = e.status() == attn::Status::kUnsupported &&
                    has(e.what(), attn::kv_cache_kind_name(kind));
          if (!refused) std::fprintf(stderr, "  %s: %s\n", name.c_str(), e.what());
        }
        CHECK(refused, "%s::create did not refuse %s specs naming the kind", name.c_str(),
              attn::kv_cache_kind_name(kind));
      }
    }
    std::printf("%-16s kinds 0x%02x  vLLM %s\n", name.c_str(), mask, b->vllm_release());
  }
}

void test_plugin_accepts_any_kind() {
  attn_plugin_t* plugin = nullptr;
  attn_error_t* e = attn_plugin_load(ATTN_EXAMPLE_PLUGIN, &plugin);
  CHECK(e == nullptr, "attn_plugin_load: %s", e ? attn_error_message(e) : "");
  if (e != nullptr) {
    attn_error_destroy(e);
    return;
  }
  const std::shared_ptr<const attn::Backend> b = attn::Registry::instance().find("EXAMPLE_PAGED");
  CHECK(b != nullptr, "EXAMPLE_PAGED is not registered");
  if (b != nullptr) {
    CHECK(b->accepted_spec_kinds() == attn::kAllKvKinds, "plugin mask 0x%x",
          b->accepted_spec_kinds());
    CHECK(std::strcmp(b->vllm_release(), "plugin") == 0, "plugin release %s", b->vllm_release());
  }
  if (attn_error_t* u = attn_plugin_unload(plugin)) attn_error_destroy(u);
}

/// A backend that is only names, for a registry of its own.
class NamedBackend final : public attn::Backend {
 public:
  NamedBackend(const char* name, const char* vllm_names) : name_(name), vllm_names_(vllm_names) {}
  const std::string& name() const override { return name_; }
  const char* vllm_names() const override { return vllm_names_; }
  uint32_t accepted_spec_kinds() const override { return attn::kAllKvKinds; }
  const char* vllm_release() const override { return "test"; }
  int32_t cudagraph_support(const attn::KvCacheSpec&, const attn::BuilderConfig&) const override {
    return 0;
  }
  std::vector<attn::BufferRequest> buffer_plan(const attn::KvCacheSpec&,
                                               const attn::BuilderConfig&) const override {
    return {};
  }
  std::unique_ptr<attn::Builder> create(const attn::KvCacheSpec&,
                                        const attn::BuilderConfig&) const override {
    return nullptr;
  }

 private:
  const std::string name_;
  const char* const vllm_names_;
};

std::shared_ptr<const attn::Backend> named(const char* name, const char* vllm_names) {
  return std::make_shared<NamedBackend>(name, vllm_names);
}

/// The message of the Error that `add` throws, or "" when it throws none.
std::string add_error(attn::Registry& r, std::vector<std::shared_ptr<const attn::Backend>> bs,
                      const void* owner) {
  try {
    r.add(bs, owner);
  } catch (const attn::Error& e) {
    return e.what();
  }
  return "";
}

/// vLLM's names (Backend::vllm_names()) resolve to their backend; whole names only; no name may
/// be two backends' (a plugin cannot take a built-in backend's vLLM name), all or nothing.
void test_registry_vllm_names() {
  attn::Registry r;
  static const int kOwner = 0;
  CHECK(add_error(r, {named("MAMBA2", "MAMBA2,MAMBA2_ATTN"), named("LINEAR_ATTN", "LINEAR_ATTN,LINEAR"),
                      named("TREE_ATTN", "")},
                  nullptr)
            .empty(),
        "adding distinct names failed");
  auto b = r.find("MAMBA2_ATTN");
  CHECK(b != nullptr && b->name() == "MAMBA2", "MAMBA2_ATTN does not resolve to MAMBA2");
  b = r.find("LINEAR");
  CHECK(b != nullptr && b->name() == "LINEAR_ATTN", "LINEAR does not resolve to LINEAR_ATTN");
  CHECK(r.find("TREE_ATTN") != nullptr, "a backend without vLLM names is found by its own");
  for (const char* near : {"MAMBA2,MAMBA2_ATTN", "MAMBA2_", "", ",", "LINEAR_"})
    CHECK(r.find(near) == nullptr, "'%s' resolved", near);
  {
    auto pin = r.pin("MAMBA2_ATTN");
    CHECK(pin && pin.backend()->name() == "MAMBA2", "pin(MAMBA2_ATTN)");
  }
  std::string e = add_error(r, {named("OK_ONE", ""), named("MAMBA2_ATTN", "")}, &kOwner);
  CHECK(has(e, "backend 'MAMBA2_ATTN': the name 'MAMBA2_ATTN' is already a name of backend "
               "'MAMBA2'"),
        "a plugin named as a vLLM name: '%s'", e.c_str());
  e = add_error(r, {named("PLUGIN_X", "PLUGIN_X,LINEAR")}, &kOwner);
  CHECK(has(e, "the name 'LINEAR' is already a name of backend 'LINEAR_ATTN'"),
        "a plugin's vLLM name taken: '%s'", e.c_str());
  e = add_error(r, {named("A_ONE", "A_ONE,SHARED"), named("B_ONE", "SHARED")}, &kOwner);
  CHECK(has(e, "backend 'B_ONE': the name 'SHARED' is also a name of backend 'A_ONE'"),
        "two new backends sharing a name: '%s'", e.c_str());
  CHECK(r.count() == 3 && r.find("OK_ONE") == nullptr && r.find("A_ONE") == nullptr,
        "a refused add registered something (%zu backends)", r.count());
}

}  // namespace

int main() {
  test_builtin_kinds_match_create();
  test_plugin_accepts_any_kind();
  test_registry_vllm_names();
  if (failures != 0) std::fprintf(stderr, "%d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
