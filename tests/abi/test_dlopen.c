/* Loads libattn with dlopen, as engines do, and resolves every symbol of abi/symbols.txt under
 * its version node with dlvsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "attn_c.h"

int main(int argc, char** argv) {
  void* lib;
  FILE* list;
  char line[256];
  int count = 0, missing = 0;
  void (*get_version)(uint32_t*, uint32_t*, uint32_t*);
  uint32_t major = 0;
  if (argc != 3) {
    fprintf(stderr, "usage: %s libattn.so abi/symbols.txt\n", argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  list = fopen(argv[2], "r");
  if (list == NULL) {
    fprintf(stderr, "cannot open %s\n", argv[2]);
    return 1;
  }
  while (fgets(line, sizeof line, list)) {
    char name[256], version[64];
    if (line[0] == '#' || line[0] == '\n') continue;
    if (sscanf(line, "%255[^@\n]@@%63s", name, version) != 2) {
      fprintf(stderr, "malformed line in %s: %s", argv[2], line);
      return 1;
    }
    if (dlvsym(lib, name, version) == NULL) {
      fprintf(stderr, "missing: %s@@%s\n", name, version);
      ++missing;
    }
    ++count;
  }
  fclose(list);
  *(void**)(&get_version) = dlsym(lib, "attn_get_version");
  get_version(&major, NULL, NULL);
  if (major != ATTN_VERSION_MAJOR) {
    fprintf(stderr, "library major %u, header major %u\n", major, ATTN_VERSION_MAJOR);
    return 1;
  }
  dlclose(lib);
  printf("%d symbols resolved with dlvsym, %d missing\n", count, missing);
  return missing == 0 && count > 0 ? 0 : 1;
}
