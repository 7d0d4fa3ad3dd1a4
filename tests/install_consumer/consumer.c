/* Links against an installed libattn (include <attn/attn_c.h> via the package's include dir). */
#include <stdio.h>

#include "attn_c.h"

int consumer_header_major(void); /* consumer_namespaced.c, through <attn/attn_c.h> */

int main(void) {
  if (consumer_header_major() != ATTN_VERSION_MAJOR) return 1;
  attn_error_t* err = ATTN_CHECK_VERSION();
  const char* name = NULL;
  if (err != NULL) {
    fprintf(stderr, "%s\n", attn_error_message(err));
    attn_error_destroy(err);
    return 1;
  }
  err = attn_backend_name(0, &name);
  if (err != NULL) {
    attn_error_destroy(err);
    return 1;
  }
  printf("consumer: libattn with %zu backend(s), first %s\n", attn_backend_count(), name);
  return 0;
}
