#include "json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char* p;
  int ok;
} parser;

static void skip(parser* ps) {
  while (*ps->p && isspace((unsigned char)*ps->p)) ps->p++;
}

static int parse_value(parser* ps, json_value* out);

static char* parse_string_raw(parser* ps) {
  const char* start;
  size_t n;
  char* s;
  if (*ps->p != '"') return NULL;
  start = ++ps->p;
  while (*ps->p && *ps->p != '"') {
    if (*ps->p == '\\' && ps->p[1]) ps->p++;
    ps->p++;
  }
  if (*ps->p != '"') return NULL;
  n = (size_t)(ps->p - start);
  s = (char*)malloc(n + 1);
  memcpy(s, start, n);
  s[n] = '\0';
  ps->p++;
  return s;
}

static int parse_array(parser* ps, json_value* out) {
  size_t cap = 8;
  out->type = JSON_ARRAY;
  out->items = (json_value*)calloc(cap, sizeof(json_value));
  ps->p++;
  skip(ps);
  if (*ps->p == ']') {
    ps->p++;
    return 1;
  }
  for (;;) {
    if (out->count == cap) {
      cap *= 2;
      out->items = (json_value*)realloc(out->items, cap * sizeof(json_value));
    }
    memset(&out->items[out->count], 0, sizeof(json_value));
    if (!parse_value(ps, &out->items[out->count])) return 0;
    out->count++;
    skip(ps);
    if (*ps->p == ',') {
      ps->p++;
      continue;
    }
    if (*ps->p == ']') {
      ps->p++;
      return 1;
    }
    return 0;
  }
}

static int parse_object(parser* ps, json_value* out) {
  size_t cap = 8;
  out->type = JSON_OBJECT;
  out->items = (json_value*)calloc(cap, sizeof(json_value));
  out->keys = (char**)calloc(cap, sizeof(char*));
  ps->p++;
  skip(ps);
  if (*ps->p == '}') {
    ps->p++;
    return 1;
  }
  for (;;) {
    char* key;
    skip(ps);
    key = parse_string_raw(ps);
    if (key == NULL) return 0;
    skip(ps);
    if (*ps->p != ':') {
      free(key);
      return 0;
    }
    ps->p++;
    if (out->count == cap) {
      cap *= 2;
      out->items = (json_value*)realloc(out->items, cap * sizeof(json_value));
      out->keys = (char**)realloc(out->keys, cap * sizeof(char*));
    }
    memset(&out->items[out->count], 0, sizeof(json_value));
    out->keys[out->count] = key;
    if (!parse_value(ps, &out->items[out->count])) {
      out->count++;
      return 0;
    }
    out->count++;
    skip(ps);
    if (*ps->p == ',') {
      ps->p++;
      continue;
    }
    if (*ps->p == '}') {
      ps->p++;
      return 1;
    }
    return 0;
  }
}

static int parse_value(parser* ps, json_value* out) {
  skip(ps);
  switch (*ps->p) {
    case '{':
      return parse_object(ps, out);
    case '[':
      return parse_array(ps, out);
    case '"':
      out->type = JSON_STRING;
      out->string = parse_string_raw(ps);
      return out->string != NULL;
    case 't':
      if (strncmp(ps->p, "true", 4) != 0) return 0;
      out->type = JSON_BOOL;
      out->number = 1;
      ps->p += 4;
      return 1;
    case 'f':
      if (strncmp(ps->p, "false", 5) != 0) return 0;
      out->type = JSON_BOOL;
      out->number = 0;
      ps->p += 5;
      return 1;
    case 'n':
      if (strncmp(ps->p, "null", 4) != 0) return 0;
      out->type = JSON_NULL;
      ps->p += 4;
      return 1;
    default: {
      char* end = NULL;
      out->type = JSON_NUMBER;
      out->number = strtod(ps->p, &end);
      if (end == ps->p) return 0;
      ps->p = end;
      return 1;
    }
  }
}

static void free_inner(json_value* v) {
  size_t i;
  free(v->string);
  for (i = 0; i < v->count; ++i) {
    free_inner(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
}

void json_free(json_value* v) {
  if (v == NULL) return;
  free_inner(v);
  free(v);
}

json_value* json_load(const char* path) {
  FILE* f = fopen(path, "rb");
  long size;
  char* text;
  parser ps;
  json_value* v;
  if (f == NULL) {
    fprintf(stderr, "json_load: cannot open %s\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = (char*)malloc((size_t)size + 1);
  if (fread(text, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    free(text);
    return NULL;
  }
  fclose(f);
  text[size] = '\0';
  v = (json_value*)calloc(1, sizeof *v);
  ps.p = text;
  ps.ok = 1;
  if (!parse_value(&ps, v)) {
    fprintf(stderr, "json_load: %s is not valid JSON near offset %ld\n", path, (long)(ps.p - text));
    json_free(v);
    v = NULL;
  }
  free(text);
  return v;
}

const json_value* json_get(const json_value* obj, const char* key) {
  size_t i;
  if (obj == NULL || obj->type != JSON_OBJECT) return NULL;
  for (i = 0; i < obj->count; ++i)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

size_t json_ints(const json_value* arr, int64_t* out, size_t cap) {
  size_t i, n = 0;
  if (arr == NULL || arr->type != JSON_ARRAY) return 0;
  for (i = 0; i < arr->count && n < cap; ++i)
    if (arr->items[i].type == JSON_NUMBER) out[n++] = (int64_t)arr->items[i].number;
  return n;
}
