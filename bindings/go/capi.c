/*
 * The C side of the Go binding: the dlopen/dlsym loader. The trampolines are generated
 * (capi_gen.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "capi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* const kNames[] = {
#define GATTN_NAME(name) #name,
    GATTN_FUNCTIONS(GATTN_NAME)
#undef GATTN_NAME
};

int gattn_function_count(void) { return (int)(sizeof kNames / sizeof kNames[0]); }

const char* gattn_function_name(int i) {
  return i >= 0 && i < gattn_function_count() ? kNames[i] : "";
}

static void put(char* detail, size_t size, const char* text) {
  if (size == 0) return;
  snprintf(detail, size, "%s", text != NULL ? text : "(no detail)");
}

int gattn_open(const char* path, gattn_api_t** out, char* detail, size_t detail_size) {
  gattn_api_t* api;
  void* handle;
  put(detail, detail_size, "");
  dlerror(); /* clear a stale message */
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    put(detail, detail_size, dlerror());
    return GATTN_DLOPEN_FAILED;
  }
  api = (gattn_api_t*)calloc(1, sizeof *api);
  if (api == NULL) {
    dlclose(handle);
    put(detail, detail_size, "out of memory");
    return GATTN_NO_MEMORY;
  }
  api->handle = handle;
#define GATTN_RESOLVE(name)                                      \
  {                                                              \
    void* sym = dlsym(handle, #name);                            \
    if (sym == NULL) {                                           \
      put(detail, detail_size, #name);                           \
      free(api);                                                 \
      dlclose(handle);                                           \
      return GATTN_SYMBOL_MISSING;                               \
    }                                                            \
    memcpy(&api->name, &sym, sizeof sym);                        \
  }
  GATTN_FUNCTIONS(GATTN_RESOLVE)
#undef GATTN_RESOLVE
  *out = api;
  return GATTN_OPENED;
}

int gattn_has_function(const gattn_api_t* a, const char* name) {
#define GATTN_HAS(fn) \
  if (strcmp(name, #fn) == 0) return a->fn != NULL;
  GATTN_FUNCTIONS(GATTN_HAS)
#undef GATTN_HAS
  return 0;
}

int gattn_table_mismatch(const gattn_api_t* a, const attn_api_t* table) {
  int i = 0;
#define GATTN_SAME(fn)                                                                      \
  if ((size_t)((const char*)&table->fn - (const char*)table) >= table->struct_size ||       \
      (const void*)table->fn != (const void*)a->fn)                                         \
    return i;                                                                               \
  ++i;
  GATTN_FUNCTIONS(GATTN_SAME)
#undef GATTN_SAME
  return -1;
}
