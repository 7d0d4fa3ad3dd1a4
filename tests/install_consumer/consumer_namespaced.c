/* The header by its namespaced path, <attn/attn_c.h>, as a zstd or libgit2 user would write it
 * (the installed package exposes both that and "attn_c.h"). */
#include <attn/attn_c.h>

/* The library's major version, through the namespaced header (consumer.c checks it matches). */
int consumer_header_major(void) { return ATTN_VERSION_MAJOR; }
