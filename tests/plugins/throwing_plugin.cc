// A C++ plugin whose callbacks throw: a std::exception from build, a non-std exception from
// cudagraph_support on request. libattn must contain both (ATTN_ERR_INTERNAL), stay usable, and
// unload the plugin cleanly. (Throwing through the plugin's C interface is outside the ABI's
// promise; this checks that GCC/Clang builds on Linux contain it anyway.)
#include <stdexcept>

#include "attn_c.h"

namespace {

int g_state;
const char* const kFields[] = {"num_reqs"};

int32_t level(const attn_kv_cache_spec_t*, const attn_builder_config_t* config, int32_t* out,
              char*, size_t) {
  if (config->max_num_seqs == 13) throw 42;  // not a std::exception
  *out = ATTN_CG_NEVER;
  return ATTN_OK;
}

int32_t create(const attn_kv_cache_spec_t*, const attn_builder_config_t*, void** out,
               int32_t*, char*, size_t) {
  *out = &g_state;
  return ATTN_OK;
}

void destroy(void*) {}

int32_t build(void*, int64_t, const attn_common_metadata_t*, int32_t, const attn_plugin_output_t*,
              attn_stream_t) {
  throw std::runtime_error("boom from the plugin");
}

const attn_plugin_backend_t kBackend = {ATTN_PLUGIN_BACKEND_STRUCT_SIZE,
                                        "TEST_THROWS",
                                        kFields,
                                        1,
                                        0,
                                        level,
                                        create,
                                        destroy,
                                        build,
                                        nullptr};
const attn_plugin_backend_t* const kBackends[] = {&kBackend};
const attn_plugin_table_t kTable = {ATTN_PLUGIN_TABLE_STRUCT_SIZE, ATTN_VERSION_MAJOR,
                                    ATTN_VERSION_MINOR, "throwing_plugin", kBackends, 1, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const attn_plugin_table_t* attn_plugin_entry() {
  return &kTable;
}
