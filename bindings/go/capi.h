/*
 * The C side of the Go binding: a table of every libattn function, filled with dlsym from a
 * library opened with dlopen (no link-time dependency on libattn), and one trampoline per
 * function, because cgo cannot call through a function pointer. The function list, the table,
 * the trampolines (gattn_<name>), the initializers (gattn_<struct>_init) and the required ABI
 * (GATTN_REQUIRED_MAJOR/MINOR, the header's) are generated from attn_c.h into capi_gen.h by
 * scripts/gen_bindings.sh; this file declares the loader.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ATTN_GO_CAPI_H_
#define ATTN_GO_CAPI_H_

#include <stddef.h>

#include "capi_gen.h"

/* The number of functions in the table. */
int gattn_function_count(void);
/* The name of function i (0 <= i < gattn_function_count()). */
const char* gattn_function_name(int i);

/* Status of gattn_open. */
enum { GATTN_OPENED = 0, GATTN_DLOPEN_FAILED = 1, GATTN_SYMBOL_MISSING = 2, GATTN_NO_MEMORY = 3 };

/* Opens `path` with dlopen(RTLD_NOW | RTLD_LOCAL) and resolves every function. On success
 * returns GATTN_OPENED and a table allocated with calloc in *out (never freed: the library
 * stays loaded). On failure returns the status, closes what it opened and writes a
 * NUL-terminated detail (dlerror's text, or the missing symbol's name) into detail. */
int gattn_open(const char* path, gattn_api_t** out, char* detail, size_t detail_size);

/* Whether the library has function `name` (every function of the table is resolved at open;
 * kept for the Go side's checks of the ABI 1.3 functions). */
int gattn_has_function(const gattn_api_t* a, const char* name);

/* The index (in GATTN_FUNCTIONS order, the order of attn_api_t) of the first member of
 * attn_get_api's table that is not the function resolved by name, or -1 when all agree. */
int gattn_table_mismatch(const gattn_api_t* a, const attn_api_t* table);

#endif /* ATTN_GO_CAPI_H_ */
