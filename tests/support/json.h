/* A minimal JSON reader for the test vectors (objects, arrays, numbers, strings, literals). */
#ifndef ATTN_TEST_JSON_H_
#define ATTN_TEST_JSON_H_

#include <stddef.h>
#include <stdint.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
  json_type type;
  double number;             /* JSON_NUMBER, JSON_BOOL (0/1) */
  char* string;              /* JSON_STRING */
  struct json_value* items;  /* JSON_ARRAY and JSON_OBJECT values */
  char** keys;               /* JSON_OBJECT keys */
  size_t count;
} json_value;

/* Parses a file; NULL (and a message on stderr) on failure. */
json_value* json_load(const char* path);
void json_free(json_value* v);
/* Member of an object, NULL when absent. */
const json_value* json_get(const json_value* obj, const char* key);
/* An array of integers into `out` (at most `cap`); returns the count. */
size_t json_ints(const json_value* arr, int64_t* out, size_t cap);

#endif
