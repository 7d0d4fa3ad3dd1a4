// libattn._native: the Python binding's compiled fast path (issue 35, part 2), a nanobind
// extension over the public C ABI only (include/attn_c.h). It links no libattn: every entry
// point is a function pointer taken from the library the ctypes layer loaded (libattn.Library,
// so $ATTN_LIBRARY, a path argument and the bundled library all work unchanged), passed in as
// integer addresses. The ctypes layer stays the fallback; the Python package decides which path
// runs (bindings/python/libattn/native.py).
//
// What it covers, per step: split_decodes_and_prefills, reorder_batch_to_split_decodes_and_prefills,
// make_kv_sharing_fast_prefill_common_attn_metadata_ex, the persistent step (BoundBatch.build
// and BoundBatch.stepper: write the scalars, attn_build, read fields, in one call), the grouped
// build (libattn.build_groups: attn_build_groups and its Metadata objects) and the persistent
// grouped step (PersistentGroupStep.build: write the scalars, attn_build_groups, publish each
// group's handle to its PersistentMetadata, in one call). Anything
// outside its fast path (arguments that are not plain host buffers, a stream, a field whose
// header changed) is handed to the Python code given at construction, so the answers are the
// ctypes layer's by construction.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <attn_c.h>

#include <cstddef>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace {

// the four scalars the persistent step writes, consecutive int64 in attn_common_metadata_t
static_assert(offsetof(attn_common_metadata_t, num_actual_tokens) ==
                  offsetof(attn_common_metadata_t, num_reqs) + 8 &&
              offsetof(attn_common_metadata_t, max_query_len) ==
                  offsetof(attn_common_metadata_t, num_reqs) + 16 &&
              offsetof(attn_common_metadata_t, max_seq_len) ==
                  offsetof(attn_common_metadata_t, num_reqs) + 24,
              "the persistent step writes the four scalars as one block");

template <class F>
F address_of(nb::dict fns, const char* name) {
  nb::str key(name);
  if (!fns.contains(key)) return nullptr;
  nb::handle v = fns[key];
  if (v.is_none()) return nullptr;
  return reinterpret_cast<F>(static_cast<uintptr_t>(nb::cast<uint64_t>(v)));
}

// A Python object -> value cache keyed by identity, holding a strong reference to each key so
// that an address is never reused while it is cached (4 entries, replaced in turn).
template <class V>
struct IdCache {
  static constexpr int kSize = 4;
  nb::object keys[kSize];
  V values[kSize]{};
  int next = 0;
  V* find(PyObject* k) {
    for (int i = 0; i < kSize; ++i)
      if (keys[i].ptr() == k) return &values[i];
    return nullptr;
  }
  V* put(nb::handle k, const V& v) {
    int i = next;
    next = (next + 1) % kSize;
    keys[i] = nb::borrow(k);
    values[i] = v;
    return &values[i];
  }
};

// A host buffer as an attn_tensor_t (1-D, C-contiguous, int32 or int64); shape/strides stored
// in the entry.
struct HostTensor {
  attn_tensor_t t{};
  int64_t shape = 0;
  int64_t stride = 1;
};

// 'i'/'l'/'q' formats of 4 or 8 bytes, with an optional native/little byte-order prefix
bool integer_format(const char* fmt, Py_ssize_t itemsize) {
  if (!fmt) return false;
  if (*fmt == '=' || *fmt == '@' || (*fmt == '<' && PY_LITTLE_ENDIAN)) ++fmt;
  if (fmt[0] == '\0' || fmt[1] != '\0') return false;
  char c = fmt[0];
  return (itemsize == 4 && (c == 'i' || c == 'l')) || (itemsize == 8 && (c == 'l' || c == 'q'));
}

// obj as a HostTensor when it exports a 1-D C-contiguous integer buffer (writable when asked)
bool host_tensor(nb::handle obj, bool writable, HostTensor* out) {
  Py_buffer view;
  int flags = PyBUF_ND | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), &view, flags) != 0) {
    PyErr_Clear();
    return false;
  }
  bool ok = view.ndim == 1 && integer_format(view.format, view.itemsize) &&
            (reinterpret_cast<uintptr_t>(view.buf) % static_cast<uintptr_t>(view.itemsize)) == 0;
  if (ok) {
    out->shape = view.shape[0];
    out->stride = 1;
    out->t.data = view.buf;
    out->t.device.device_type = ATTN_DEVICE_CPU;
    out->t.device.device_id = 0;
    out->t.ndim = 1;
    out->t.dtype.code = ATTN_DTYPE_INT;
    out->t.dtype.bits = static_cast<uint8_t>(view.itemsize * 8);
    out->t.dtype.lanes = 1;
    out->t.byte_offset = 0;
  }
  PyBuffer_Release(&view);
  return ok;
}

struct Api {
  PFN_attn_build build = nullptr;
  PFN_attn_error_destroy error_destroy = nullptr;
  PFN_attn_metadata_get metadata_get = nullptr;
  PFN_attn_split_decodes_and_prefills split_fn = nullptr;
  PFN_attn_reorder_batch_to_split_decodes_and_prefills reorder_fn = nullptr;
  PFN_attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex fast_prefill_ex_fn = nullptr;
  PFN_attn_build_groups groups_fn = nullptr;  // ABI 1.7: NULL in an older library

  nb::object check;              // Library.check(address): raises the error (and frees it)
  nb::object batch_split;        // libattn.BatchSplit
  nb::object split_fallback;     // the ctypes layer's split, for other arguments
  nb::object reorder_fallback;   // the ctypes layer's reorder, for other inputs
  nb::object fast_prefill_fallback;  // the ctypes layer's fast prefill _ex, for other inputs
  nb::object fast_prefill_result;    // (owned, batch bytes, common, out, out_cpu) -> CommonMetadata

  IdCache<const attn_common_metadata_t*> structs;  // a CommonMetadata's .struct -> its address
  IdCache<HostTensor> outputs;                      // a writable int array -> its descriptor
  std::vector<int32_t> swaps;
  nb::object last_split;  // the last BatchSplit made, and its counts
  int64_t last_counts[4]{};

  Api(nb::dict fns, nb::object check_, nb::object batch_split_, nb::object split_fallback_,
      nb::object reorder_fallback_, nb::object fast_prefill_fallback_,
      nb::object fast_prefill_result_)
      : check(std::move(check_)),
        batch_split(std::move(batch_split_)),
        split_fallback(std::move(split_fallback_)),
        reorder_fallback(std::move(reorder_fallback_)),
        fast_prefill_fallback(std::move(fast_prefill_fallback_)),
        fast_prefill_result(std::move(fast_prefill_result_)) {
    build = address_of<PFN_attn_build>(fns, "attn_build");
    error_destroy = address_of<PFN_attn_error_destroy>(fns, "attn_error_destroy");
    metadata_get = address_of<PFN_attn_metadata_get>(fns, "attn_metadata_get");
    split_fn = address_of<PFN_attn_split_decodes_and_prefills>(fns, "attn_split_decodes_and_prefills");
    reorder_fn = address_of<PFN_attn_reorder_batch_to_split_decodes_and_prefills>(
        fns, "attn_reorder_batch_to_split_decodes_and_prefills");
    fast_prefill_ex_fn = address_of<PFN_attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex>(
        fns, "attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex");
    groups_fn = address_of<PFN_attn_build_groups>(fns, "attn_build_groups");
    if (!build || !error_destroy || !metadata_get || !split_fn || !reorder_fn)
      throw nb::value_error("libattn._native.Api: attn_build, attn_error_destroy, attn_metadata_get, "
                            "attn_split_decodes_and_prefills and "
                            "attn_reorder_batch_to_split_decodes_and_prefills are required");
  }

  [[noreturn]] void raise(attn_error_t* err) {
    if (!check.is_valid()) {  // cleared by the garbage collector (interpreter exit)
      error_destroy(err);
      throw nb::value_error("libattn: the library reported an error");
    }
    check(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(err)));
    throw nb::value_error("libattn: an error the library reported was not raised");
  }

  // the attn_common_metadata_t* of a libattn.CommonMetadata (its ctypes .struct)
  const attn_common_metadata_t* common_ptr(nb::handle common) {
    static nb::str struct_name("struct");
    nb::object s = common.attr(struct_name);
    if (auto* hit = structs.find(s.ptr())) return *hit;
    Py_buffer view;
    if (PyObject_GetBuffer(s.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
    // the library reads struct_size bytes: the buffer must hold them (what ctypes' type check
    // of the argument gives the ctypes layer)
    size_t len = static_cast<size_t>(view.len);
    size_t struct_size = 0;
    if (len >= sizeof(size_t)) std::memcpy(&struct_size, view.buf, sizeof(size_t));
    bool fits = len >= ATTN_COMMON_METADATA_STRUCT_SIZE_1_0 && struct_size <= len;
    auto* p = static_cast<const attn_common_metadata_t*>(view.buf);
    PyBuffer_Release(&view);
    if (!fits)
      throw nb::type_error("common.struct is not an attn_common_metadata_t (its buffer is "
                           "shorter than its struct_size)");
    return *structs.put(s, p);
  }

  nb::object split(nb::handle common, int32_t decode_threshold, bool require_uniform) {
    const attn_common_metadata_t* c = common_ptr(common);
    attn_batch_split_t s = ATTN_BATCH_SPLIT_INIT;
    if (attn_error_t* err = split_fn(c, decode_threshold, require_uniform ? 1 : 0, &s)) raise(err);
    // the counts of the last answer again (a step's batches often split alike): the same
    // BatchSplit, an immutable tuple, without making one
    if (last_split.is_valid() && s.num_decodes == last_counts[0] &&
        s.num_prefills == last_counts[1] && s.num_decode_tokens == last_counts[2] &&
        s.num_prefill_tokens == last_counts[3])
      return last_split;
    nb::object items = nb::steal(PyTuple_New(6));
    if (!items.is_valid()) throw nb::python_error();
    const int64_t v[6] = {s.num_decodes, s.num_prefills, s.num_decode_tokens,
                          s.num_prefill_tokens, 0, 0};
    for (int i = 0; i < 6; ++i) {
      PyObject* x = PyLong_FromLongLong(v[i]);
      if (!x) throw nb::python_error();
      PyTuple_SET_ITEM(items.ptr(), i, x);
    }
    // tuple.__new__(BatchSplit, items): the named tuple without its Python __new__
    nb::object args = nb::steal(PyTuple_Pack(1, items.ptr()));
    if (!args.is_valid()) throw nb::python_error();
    PyObject* r = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(batch_split.ptr()),
                                      args.ptr(), nullptr);
    if (!r) throw nb::python_error();
    last_split = nb::steal(r);
    last_counts[0] = s.num_decodes;
    last_counts[1] = s.num_prefills;
    last_counts[2] = s.num_decode_tokens;
    last_counts[3] = s.num_prefill_tokens;
    return last_split;
  }

  nb::object reorder(nb::handle sched, nb::handle comp, int32_t decode_threshold) {
    HostTensor a, b;
    if (!host_tensor(sched, false, &a) || !host_tensor(comp, false, &b) || a.t.dtype.bits != 32 ||
        b.t.dtype.bits != 32 || a.shape != b.shape)
      return reorder_fallback(sched, comp, decode_threshold);
    // the buffers stay valid: sched and comp are referenced by the caller during this call
    int64_t n = a.shape;
    size_t need = static_cast<size_t>(2 * (n > 1 ? n : 1));
    if (swaps.size() < need) swaps.resize(need);
    int64_t count = 0;
    if (attn_error_t* err = reorder_fn(static_cast<const int32_t*>(a.t.data),
                                       static_cast<const int32_t*>(b.t.data), n, decode_threshold,
                                       swaps.data(), n > 1 ? n : 1, &count))
      raise(err);
    nb::object out = nb::steal(PyList_New(static_cast<Py_ssize_t>(count)));
    if (!out.is_valid()) throw nb::python_error();
    for (int64_t k = 0; k < count; ++k) {
      PyObject* pair = Py_BuildValue("(ii)", swaps[2 * k], swaps[2 * k + 1]);
      if (!pair) throw nb::python_error();
      PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(k), pair);
    }
    return out;
  }

  const HostTensor* output(nb::handle obj) {
    if (auto* hit = outputs.find(obj.ptr())) return hit;
    HostTensor t;
    if (!host_tensor(obj, true, &t) || t.t.dtype.bits != 32) return nullptr;
    HostTensor* e = outputs.put(obj, t);
    e->t.shape = &e->shape;
    e->t.strides = &e->stride;
    return e;
  }

  nb::object fast_prefill_ex(nb::handle common, nb::handle logits, nb::handle out_q,
                             nb::handle stream, nb::handle out_qc) {
    const HostTensor* oc = nullptr;
    const HostTensor* o = nullptr;
    if (fast_prefill_ex_fn && logits.is_none() && stream.is_none() && !out_qc.is_none()) {
      oc = output(out_qc);
      o = out_q.is_none() ? oc : output(out_q);
    }
    if (!oc || !o) {
      nb::dict kw;
      kw["out_query_start_loc_cpu"] = out_qc;
      return fast_prefill_fallback(common, logits, out_q, stream, **kw);
    }
    const attn_common_metadata_t* c = common_ptr(common);
    // written by the library up to struct_size when it makes a new batch (read only then)
    attn_common_metadata_t batch;
    batch.struct_size = ATTN_COMMON_METADATA_STRUCT_SIZE;
    attn_metadata_t* owned = nullptr;
    if (attn_error_t* err = fast_prefill_ex_fn(c, nullptr, &o->t, &oc->t, &batch, &owned, nullptr))
      raise(err);
    if (!owned) return nb::borrow(common);  // passed through: vLLM returns its argument
    nb::bytes bytes(reinterpret_cast<const char*>(&batch), sizeof batch);
    return fast_prefill_result(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(owned)), bytes,
                               common, out_q.is_none() ? out_qc : out_q, out_qc);
  }

  uint64_t address(const std::string& name) const {
    const void* p = nullptr;
    if (name == "attn_build") p = reinterpret_cast<const void*>(build);
    else if (name == "attn_error_destroy") p = reinterpret_cast<const void*>(error_destroy);
    else if (name == "attn_metadata_get") p = reinterpret_cast<const void*>(metadata_get);
    else if (name == "attn_split_decodes_and_prefills") p = reinterpret_cast<const void*>(split_fn);
    else if (name == "attn_reorder_batch_to_split_decodes_and_prefills")
      p = reinterpret_cast<const void*>(reorder_fn);
    else if (name == "attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex")
      p = reinterpret_cast<const void*>(fast_prefill_ex_fn);
    else if (name == "attn_build_groups") p = reinterpret_cast<const void*>(groups_fn);
    else throw nb::key_error(name.c_str());
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
  }
};

// Builder._result of the ctypes layer for a build's handle `out`: the builder's generation moved
// on, a libattn.Metadata (made without its Python __init__: the same attributes, set here)
// viewing `out` and keeping `keep` alive. A new reference, or NULL with the Python error set.
PyObject* new_result(PyObject* builder, PyObject* metadata_type, PyObject* lib,
                     attn_metadata_t* out, PyObject* keep) {
  static PyObject* handle_name = PyUnicode_InternFromString("_handle");
  static PyObject* generation_name = PyUnicode_InternFromString("_generation");
  static PyObject* lib_name = PyUnicode_InternFromString("_lib");
  static PyObject* keep_name = PyUnicode_InternFromString("_keep");
  static PyObject* builder_name = PyUnicode_InternFromString("_builder");
  nb::object g = nb::steal(PyObject_GetAttr(builder, generation_name));
  if (!g.is_valid()) return nullptr;
  nb::object next = nb::steal(PyNumber_Add(g.ptr(), nb::int_(1).ptr()));
  if (!next.is_valid() || PyObject_SetAttr(builder, generation_name, next.ptr()) != 0)
    return nullptr;
  auto* type = reinterpret_cast<PyTypeObject*>(metadata_type);
  nb::object empty = nb::steal(PyTuple_New(0));
  if (!empty.is_valid()) return nullptr;
  nb::object md = nb::steal(PyBaseObject_Type.tp_new(type, empty.ptr(), nullptr));
  if (!md.is_valid()) return nullptr;
  nb::object addr = nb::steal(PyLong_FromVoidPtr(out));
  if (!addr.is_valid() || PyObject_SetAttr(md.ptr(), lib_name, lib) != 0 ||
      PyObject_SetAttr(md.ptr(), handle_name, addr.ptr()) != 0 ||
      PyObject_SetAttr(md.ptr(), keep_name, keep) != 0 ||
      PyObject_SetAttr(md.ptr(), builder_name, builder) != 0 ||
      PyObject_SetAttr(md.ptr(), generation_name, next.ptr()) != 0)
    return nullptr;
  return md.release().ptr();
}

// The attn_builder_t* of builders[i] (its _handle); "builders[i] is closed" for a closed one
attn_builder_t* group_member(nb::handle builder, size_t i) {
  static nb::str handle_name("_handle");
  nb::object h = builder.attr(handle_name);
  if (h.is_none())
    throw nb::value_error(("builders[" + std::to_string(i) + "] is closed").c_str());
  return reinterpret_cast<attn_builder_t*>(static_cast<uintptr_t>(nb::cast<uint64_t>(h)));
}

// libattn.build_groups(builders, common) without a cascade prefix, fast_build or stream:
// attn_build_groups, then each builder's Metadata as Builder._result makes it
nb::object build_groups(Api* api, nb::sequence builders, nb::handle common,
                        nb::handle metadata_type) {
  if (!api->groups_fn) throw nb::value_error("this libattn has no attn_build_groups (ABI 1.7)");
  size_t n = nb::len(builders);
  if (n == 0) throw nb::value_error("build_groups needs at least one builder");
  std::vector<nb::object> members(n);
  std::vector<attn_builder_t*> handles(n);
  for (size_t i = 0; i < n; ++i) {
    members[i] = builders[i];
    handles[i] = group_member(members[i], i);
  }
  const attn_common_metadata_t* c = api->common_ptr(common);
  std::vector<attn_metadata_t*> out(n, nullptr);
  if (attn_error_t* err = api->groups_fn(handles.data(), n, nullptr, c, 0, out.data(), nullptr))
    api->raise(err);
  static nb::str lib_name("_lib");
  nb::object lib = members[0].attr(lib_name);
  nb::object result = nb::steal(PyList_New(static_cast<Py_ssize_t>(n)));
  if (!result.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < n; ++i) {
    PyObject* md = new_result(members[i].ptr(), metadata_type.ptr(), lib.ptr(), out[i],
                              common.ptr());
    if (!md) throw nb::python_error();
    PyList_SET_ITEM(result.ptr(), static_cast<Py_ssize_t>(i), md);
  }
  return result;
}

// One field a stepper reads: the library's answer at the last read, byte for byte, and the
// value made for it then (the slot of Step::values).
struct FieldState {
  std::string name;
  bool valid = false;
  int32_t kind = 0;
  const attn_tensor_t* tensor = nullptr;
  int64_t int_value = 0;
  double float_value = 0;
  attn_tensor_t head{};
  int64_t dims[16]{};  // shape then strides (ndim <= 8)
};

// A step's stream argument as the ABI's handle (None, or what stream_handle answers None for:
// the default stream). `stream_handle` is libattn.builder.stream_handle.
attn_stream_t stream_arg(const nb::object& stream_handle, nb::handle stream) {
  if (stream.is_none()) return nullptr;
  nb::object h = stream_handle(stream);
  if (h.is_none()) return nullptr;
  return reinterpret_cast<attn_stream_t>(static_cast<uintptr_t>(nb::cast<uint64_t>(h)));
}

// A persistent step's four scalars, written where its build reads them: the bound batch struct,
// its shape cells (num_actual_tokens, num_reqs + 1, num_reqs) and the step's counts.
void write_step_scalars(attn_common_metadata_t* common, int64_t* cells, int64_t* counts,
                        int64_t num_reqs, int64_t num_actual_tokens, int64_t max_query_len,
                        int64_t max_seq_len) {
  cells[0] = num_actual_tokens;
  cells[1] = num_reqs + 1;
  cells[2] = num_reqs;
  common->num_reqs = num_reqs;
  common->num_actual_tokens = num_actual_tokens;
  common->max_query_len = max_query_len;
  common->max_seq_len = max_seq_len;
  counts[0] = num_reqs;
  counts[1] = num_actual_tokens;
  counts[2] = max_query_len;
  counts[3] = max_seq_len;
}

// The persistent step of a libattn.BoundBatch: the scalars written into the bound
// attn_common_metadata_t and the batch's shape cells, attn_build with arguments made once, the
// builder's and the metadata's generation moved on, the fields named by set_fields read.
struct Step {
  Api* api;
  nb::object api_ref;
  nb::object builder;   // libattn.Builder (its _handle says whether it is open)
  nb::object native;    // its NativeHandle: the attn_builder_t* lives as long as this step
  nb::object metadata;  // the bound PersistentMetadata
  attn_builder_t* handle;
  attn_common_metadata_t* common;
  int64_t* cells;           // num_actual_tokens, num_reqs + 1, num_reqs
  attn_metadata_t** out;    // the BoundBatch's c_void_p: the ctypes readers read it
  int64_t max_reqs, max_tokens;
  nb::object refuse;        // (num_reqs, num_actual_tokens) -> raises
  nb::object failed;        // () -> marks the bound metadata stale
  nb::object stream_handle; // libattn.builder.stream_handle
  int64_t generation = -1;  // the generation this step set last
  int64_t counts[4]{};      // the last build's scalars
  std::vector<FieldState> fields;
  nb::object values;  // the list returned by __call__: made once, its items replaced on change
  nb::object slow;    // name -> value: the ctypes reader, for a field whose answer changed
  nb::object fallback;  // the ctypes layer's build, for arguments that are not plain ints

  Step(nb::handle api_obj, nb::object builder_, nb::object native_, nb::object metadata_,
       uint64_t handle_, uint64_t common_, uint64_t cells_, uint64_t out_, int64_t max_reqs_,
       int64_t max_tokens_, nb::object refuse_, nb::object failed_, nb::object stream_handle_,
       nb::object fallback_)
      : api(nb::cast<Api*>(api_obj)),
        api_ref(nb::borrow(api_obj)),
        builder(std::move(builder_)),
        native(std::move(native_)),
        metadata(std::move(metadata_)),
        handle(reinterpret_cast<attn_builder_t*>(static_cast<uintptr_t>(handle_))),
        common(reinterpret_cast<attn_common_metadata_t*>(static_cast<uintptr_t>(common_))),
        cells(reinterpret_cast<int64_t*>(static_cast<uintptr_t>(cells_))),
        out(reinterpret_cast<attn_metadata_t**>(static_cast<uintptr_t>(out_))),
        max_reqs(max_reqs_),
        max_tokens(max_tokens_),
        refuse(std::move(refuse_)),
        failed(std::move(failed_)),
        stream_handle(std::move(stream_handle_)),
        values(nb::steal(PyList_New(0))),
        fallback(std::move(fallback_)) {
    if (!handle || !common || !cells || !out)
      throw nb::value_error("libattn._native.Step: a NULL address");
  }

  nb::object build(int64_t num_reqs, int64_t num_actual_tokens, int64_t max_query_len,
                   int64_t max_seq_len, int64_t common_prefix_len, bool fast_build,
                   nb::handle stream) {
    static nb::str handle_name("_handle"), generation_name("_generation");
    if (!builder.is_valid()) throw nb::value_error("builder is closed");
    // Builder.close() moves the generation on too: while it is the one this step set, the
    // builder is open and nothing else built on it (one attribute read per step)
    nb::object g = builder.attr(generation_name);
    bool current = PyLong_CheckExact(g.ptr()) && PyLong_AsLongLong(g.ptr()) == generation;
    if (!current && builder.attr(handle_name).is_none()) throw nb::value_error("builder is closed");
    if (num_reqs < 0 || num_reqs > max_reqs || num_actual_tokens < 0 ||
        num_actual_tokens > max_tokens) {
      refuse(num_reqs, num_actual_tokens);
      throw nb::value_error("libattn: the batch's capacity was exceeded");
    }
    attn_stream_t s = stream_arg(stream_handle, stream);
    write_step_scalars(common, cells, counts, num_reqs, num_actual_tokens, max_query_len,
                       max_seq_len);
    if (attn_error_t* err = api->build(handle, common_prefix_len, common, fast_build ? 1 : 0, out, s)) {
      failed();
      api->raise(err);
    }
    // the generation: every build of this step is one generation of the builder while nothing
    // else builds on it (an ordinary build, another BoundBatch, PersistentMetadata.metadata())
    // moves it on; then this step takes the next one, so the results made in between are stale.
    // No Python object is made while it holds.
    if (!current) {
      generation = nb::cast<int64_t>(g) + 1;
      nb::object gen = nb::int_(generation);
      nb::setattr(builder, generation_name, gen);
      nb::setattr(metadata, generation_name, gen);
    }
    return metadata;
  }

  // build() and __call__() with arguments that are not plain ints: the ctypes layer's build
  // (its TypeError, or its build), then every field through the ctypes readers
  nb::object build_other(nb::args args, nb::kwargs kwargs) {
    if (!fallback.is_valid()) throw nb::value_error("builder is closed");
    nb::object md = fallback(*args, **kwargs);
    after_fallback();
    return md;
  }
  // the ctypes build wrote the scalars into the same struct and moved the generation on
  void after_fallback() {
    generation = -1;
    counts[0] = common->num_reqs;
    counts[1] = common->num_actual_tokens;
    counts[2] = common->max_query_len;
    counts[3] = common->max_seq_len;
  }
  nb::object step_other(nb::args args) {
    if (!fallback.is_valid()) throw nb::value_error("builder is closed");
    if (args.size() != 4 + writes.size())
      throw nb::type_error("the stepper takes num_reqs, num_actual_tokens, max_query_len, "
                           "max_seq_len and one array per input named in `writes`");
    fallback(args[0], args[1], args[2], args[3]);  // the TypeError of a non-int scalar
    after_fallback();
    if (!writes.empty()) {  // scalars the ctypes build took: the writes, then build again
      const int64_t by_cell[3] = {counts[1], counts[0] + 1, counts[0]};
      for (size_t i = 0; i < writes.size(); ++i) write(i, args[4 + i], by_cell[writes[i].cell]);
      fallback(args[0], args[1], args[2], args[3]);
      after_fallback();
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      fields[i].valid = false;
      nb::object v = slow(fields[i].name);
      PyList_SetItem(values.ptr(), static_cast<Py_ssize_t>(i), v.release().ptr());
    }
    return values;
  }

  void set_fields(std::vector<std::string> names, nb::object slow_) {
    fields.clear();
    for (auto& n : names) {
      FieldState f;
      f.name = std::move(n);
      fields.push_back(std::move(f));
    }
    values = nb::steal(PyList_New(static_cast<Py_ssize_t>(fields.size())));
    if (!values.is_valid()) throw nb::python_error();
    for (size_t i = 0; i < fields.size(); ++i) {
      Py_INCREF(Py_None);
      PyList_SET_ITEM(values.ptr(), static_cast<Py_ssize_t>(i), Py_None);
    }
    slow = std::move(slow_);
  }

  // the inputs a stepper call writes first (BoundBatch.stepper's `writes`): the host array's
  // first rows, `cell` says how many (0 tokens, 1 num_reqs + 1, 2 num_reqs)
  struct Write {
    char* data = nullptr;  // NULL: not a host array here; the Python assignment writes it
    Py_ssize_t itemsize = 0;
    char kind = 0;  // 'i' signed integer, 'b' bool
    int cell = 0;
  };
  std::vector<Write> writes;
  nb::object write_fallback;  // (index, source, count): dst[:count] = source, numpy's way

  void set_writes(std::vector<std::tuple<uint64_t, int64_t, std::string, int>> w,
                  nb::object fallback_) {
    writes.clear();
    for (auto& [data, itemsize, kind, cell] : w) {
      Write x;
      x.data = reinterpret_cast<char*>(static_cast<uintptr_t>(data));
      x.itemsize = static_cast<Py_ssize_t>(itemsize);
      x.kind = kind.empty() ? 0 : kind[0];
      x.cell = cell;
      writes.push_back(x);
    }
    write_fallback = std::move(fallback_);
  }

  // source -> the first `count` rows of input `i`: a memcpy when the source is a C-contiguous
  // buffer of exactly `count` items of the input's integer type, else numpy's assignment
  void write(size_t i, nb::handle src, int64_t count) {
    const Write& w = writes[i];
    if (w.data) {
      Py_buffer view;
      if (PyObject_GetBuffer(src.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        const char* f = view.format ? view.format : "B";
        if (*f == '=' || *f == '@' || (*f == '<' && PY_LITTLE_ENDIAN)) ++f;
        bool kind_ok = f[0] && !f[1] &&
                       ((w.kind == 'i' && (f[0] == 'i' || f[0] == 'l' || f[0] == 'q')) ||
                        (w.kind == 'b' && f[0] == '?'));
        bool ok = kind_ok && view.itemsize == w.itemsize && view.ndim == 1 &&
                  view.shape[0] == count;
        if (ok) std::memcpy(w.data, view.buf, static_cast<size_t>(count * w.itemsize));
        PyBuffer_Release(&view);
        if (ok) return;
      } else {
        PyErr_Clear();
      }
    }
    write_fallback(i, src, count);
  }

  nb::object step(int64_t num_reqs, int64_t num_actual_tokens, int64_t max_query_len,
                  int64_t max_seq_len, nb::args sources) {
    if (sources.size() != writes.size())
      throw nb::type_error("the stepper takes one array per input named in `writes`");
    if (!writes.empty()) {
      if (num_reqs < 0 || num_reqs > max_reqs || num_actual_tokens < 0 ||
          num_actual_tokens > max_tokens) {
        if (refuse.is_valid()) refuse(num_reqs, num_actual_tokens);
        throw nb::value_error("libattn: the batch's capacity was exceeded");
      }
      const int64_t counts_by_cell[3] = {num_actual_tokens, num_reqs + 1, num_reqs};
      for (size_t i = 0; i < writes.size(); ++i)
        write(i, sources[i], counts_by_cell[writes[i].cell]);
    }
    build(num_reqs, num_actual_tokens, max_query_len, max_seq_len, 0, false, nb::none());
    for (size_t i = 0; i < fields.size(); ++i) {
      FieldState& st = fields[i];
      attn_field_t f = ATTN_FIELD_INIT;
      if (attn_error_t* err = api->metadata_get(*out, st.name.c_str(), &f)) {
        // the ctypes reader asks again and reports it (KeyError for a name the backend lacks)
        api->error_destroy(err);
        st.valid = false;
        nb::object v = slow(st.name);
        PyList_SetItem(values.ptr(), static_cast<Py_ssize_t>(i), v.release().ptr());
        continue;
      }
      bool same = st.valid && f.kind == st.kind && f.tensor == st.tensor &&
                  f.int_value == st.int_value &&
                  std::memcmp(&f.float_value, &st.float_value, sizeof(double)) == 0;
      int nd = 0;
      if (same && f.kind == ATTN_FIELD_TENSOR && f.tensor) {
        same = std::memcmp(f.tensor, &st.head, sizeof(attn_tensor_t)) == 0;
        nd = f.tensor->ndim;
        if (same && (nd < 0 || nd > 8 || !f.tensor->shape)) same = false;
        if (same) {
          same = std::memcmp(f.tensor->shape, st.dims, sizeof(int64_t) * nd) == 0 &&
                 (!f.tensor->strides ||
                  std::memcmp(f.tensor->strides, st.dims + 8, sizeof(int64_t) * nd) == 0);
        }
      }
      if (same) continue;
      // changed (or first read): the ctypes reader makes the value, then remember the answer
      nb::object v = slow(st.name);
      PyList_SetItem(values.ptr(), static_cast<Py_ssize_t>(i), v.release().ptr());
      st.valid = true;
      st.kind = f.kind;
      st.tensor = f.tensor;
      st.int_value = f.int_value;
      st.float_value = f.float_value;
      if (f.kind == ATTN_FIELD_TENSOR && f.tensor) {
        std::memcpy(&st.head, f.tensor, sizeof(attn_tensor_t));
        nd = f.tensor->ndim;
        if (nd < 0 || nd > 8 || !f.tensor->shape) {
          st.valid = false;  // read through the ctypes reader every time
        } else {
          std::memcpy(st.dims, f.tensor->shape, sizeof(int64_t) * nd);
          if (f.tensor->strides) std::memcpy(st.dims + 8, f.tensor->strides, sizeof(int64_t) * nd);
        }
      }
    }
    return values;
  }

  void forget_generation() { generation = -1; }

  nb::tuple get_counts() const {
    return nb::make_tuple(counts[0], counts[1], counts[2], counts[3]);
  }
};

// The persistent grouped step of a libattn.PersistentGroupStep: the scalars written into the
// bound attn_common_metadata_t and the batch's shape cells (as Step), one attn_build_groups over
// every builder with arguments made once, each result handle published to its BoundBatch's
// c_void_p (where that builder's PersistentMetadata reads fields), each builder's and
// metadata's generation moved on as Step does. Returns the list of PersistentMetadata made once:
// no Python object is made per step while nothing else builds on the builders.
struct GroupStep {
  Api* api;
  nb::object api_ref;
  std::vector<nb::object> builders;  // libattn.Builder, in group order (empty once cleared)
  std::vector<nb::object> natives;   // their NativeHandles: the handles live as long as this
  std::vector<nb::object> metadata;  // each builder's PersistentMetadata
  nb::object values;                 // the list of them (PersistentGroupStep's), every build's
  std::vector<attn_builder_t*> handles;
  std::vector<attn_metadata_t**> outs;   // each BoundBatch's c_void_p
  std::vector<attn_metadata_t*> results; // attn_build_groups' out
  std::vector<int64_t> generations;      // the generation this step set last, per builder
  std::vector<int64_t> seen;             // the builders' generations read this build
  std::vector<int64_t> prefixes;         // common_prefix_lens when given
  attn_common_metadata_t* common;
  int64_t* cells;
  int64_t max_reqs, max_tokens;
  nb::object refuse;         // (num_reqs, num_actual_tokens) -> raises
  nb::object failed;         // () -> marks every group's metadata stale
  nb::object stream_handle;  // libattn.builder.stream_handle
  nb::object fallback;       // the ctypes layer's grouped step, for arguments that are not ints
  int64_t counts[4]{};

  GroupStep(nb::handle api_obj, nb::list builders_, nb::list natives_, nb::list metadata_,
            std::vector<uint64_t> handles_, uint64_t common_, uint64_t cells_,
            std::vector<uint64_t> outs_, int64_t max_reqs_, int64_t max_tokens_,
            nb::object refuse_, nb::object failed_, nb::object stream_handle_,
            nb::object fallback_)
      : api(nb::cast<Api*>(api_obj)),
        api_ref(nb::borrow(api_obj)),
        common(reinterpret_cast<attn_common_metadata_t*>(static_cast<uintptr_t>(common_))),
        cells(reinterpret_cast<int64_t*>(static_cast<uintptr_t>(cells_))),
        max_reqs(max_reqs_),
        max_tokens(max_tokens_),
        refuse(std::move(refuse_)),
        failed(std::move(failed_)),
        stream_handle(std::move(stream_handle_)),
        fallback(std::move(fallback_)) {
    size_t n = nb::len(builders_);
    if (!api->groups_fn)
      throw nb::value_error("libattn._native.GroupStep: this libattn has no attn_build_groups");
    if (n == 0 || nb::len(natives_) != n || nb::len(metadata_) != n || handles_.size() != n ||
        outs_.size() != n)
      throw nb::value_error("libattn._native.GroupStep: one builder, handle, metadata and out "
                            "per group, at least one");
    if (!common || !cells) throw nb::value_error("libattn._native.GroupStep: a NULL address");
    // the caller's list itself: the ctypes layer's step (the fallback) returns it too
    values = nb::borrow(metadata_);
    for (size_t i = 0; i < n; ++i) {
      builders.push_back(nb::borrow(builders_[i]));
      natives.push_back(nb::borrow(natives_[i]));
      metadata.push_back(nb::borrow(metadata_[i]));
      handles.push_back(reinterpret_cast<attn_builder_t*>(static_cast<uintptr_t>(handles_[i])));
      outs.push_back(reinterpret_cast<attn_metadata_t**>(static_cast<uintptr_t>(outs_[i])));
      if (!handles.back() || !outs.back())
        throw nb::value_error("libattn._native.GroupStep: a NULL address");
    }
    results.assign(n, nullptr);
    generations.assign(n, -1);
    seen.assign(n, 0);
  }

  nb::object build(int64_t num_reqs, int64_t num_actual_tokens, int64_t max_query_len,
                   int64_t max_seq_len, nb::handle common_prefix_lens, bool fast_build,
                   nb::handle stream) {
    static nb::str handle_name("_handle"), generation_name("_generation");
    if (builders.empty()) throw nb::value_error("builder is closed");
    size_t n = builders.size();
    // as Step: while a builder's generation is the one this step set, it is open and nothing
    // else built on it (Builder.close() moves it on)
    for (size_t i = 0; i < n; ++i) {
      PyObject* g = PyObject_GetAttr(builders[i].ptr(), generation_name.ptr());
      if (!g) throw nb::python_error();
      int64_t v = PyLong_CheckExact(g) ? PyLong_AsLongLong(g) : -1;
      Py_DECREF(g);
      if (v == -1 && PyErr_Occurred()) throw nb::python_error();
      seen[i] = v;
      if (v != generations[i] && builders[i].attr(handle_name).is_none())
        throw nb::value_error(("builders[" + std::to_string(i) + "] is closed").c_str());
    }
    if (num_reqs < 0 || num_reqs > max_reqs || num_actual_tokens < 0 ||
        num_actual_tokens > max_tokens) {
      refuse(num_reqs, num_actual_tokens);
      throw nb::value_error("libattn: the batch's capacity was exceeded");
    }
    const int64_t* prefix = nullptr;
    if (!common_prefix_lens.is_none()) {
      prefixes = nb::cast<std::vector<int64_t>>(common_prefix_lens);
      if (prefixes.size() != n)
        throw nb::value_error(("common_prefix_lens has " + std::to_string(prefixes.size()) +
                               " entries for " + std::to_string(n) + " builders").c_str());
      prefix = prefixes.data();
    }
    attn_stream_t s = stream_arg(stream_handle, stream);
    write_step_scalars(common, cells, counts, num_reqs, num_actual_tokens, max_query_len,
                       max_seq_len);
    if (attn_error_t* err = api->groups_fn(handles.data(), n, prefix, common, fast_build ? 1 : 0,
                                           results.data(), s)) {
      generations.assign(n, -1);
      failed();
      api->raise(err);
    }
    for (size_t i = 0; i < n; ++i) {
      *outs[i] = results[i];
      if (seen[i] != generations[i]) {
        generations[i] = seen[i] + 1;
        nb::object gen = nb::int_(generations[i]);
        nb::setattr(builders[i], generation_name, gen);
        nb::setattr(metadata[i], generation_name, gen);
      }
    }
    return values;
  }

  // other arguments (a scalar that is not an int): the ctypes layer's grouped step
  nb::object build_other(nb::args args, nb::kwargs kwargs) {
    if (!fallback.is_valid()) throw nb::value_error("builder is closed");
    nb::object r = fallback(*args, **kwargs);
    generations.assign(builders.size(), -1);
    counts[0] = common->num_reqs;
    counts[1] = common->num_actual_tokens;
    counts[2] = common->max_query_len;
    counts[3] = common->max_seq_len;
    return r;
  }

  nb::tuple get_counts() const {
    return nb::make_tuple(counts[0], counts[1], counts[2], counts[3]);
  }
};

// ---- entry points called with CPython's vectorcall convention directly (METH_FASTCALL |
// METH_KEYWORDS builtins bound to the Api object): the per-call argument handling of the two
// calls that return in tens of ns. Arguments are matched by position or keyword exactly as
// the ctypes layer's signatures; anything else (an unknown keyword, a non-int threshold, a
// value out of range) goes to the ctypes layer's method, whose errors are the binding's.

// Parameter names as interned strings: a keyword written in the caller's source is the same
// interned object, matched by address (else by value)
struct Names {
  std::vector<PyObject*> names;  // interned, immortal for the module's life
  explicit Names(std::initializer_list<const char*> list) {
    for (const char* n : list) names.push_back(PyUnicode_InternFromString(n));
  }
};

// args + kwnames -> the slots of `names` (NULL: not given); false for an unknown or repeated
// name
bool match(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const Names& names,
           PyObject** out) {
  Py_ssize_t n = static_cast<Py_ssize_t>(names.names.size());
  if (nargs > n) return false;
  for (Py_ssize_t i = 0; i < n; ++i) out[i] = i < nargs ? args[i] : nullptr;
  if (!kwnames) return true;
  Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nk; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    Py_ssize_t i = 0;
    while (i < n && names.names[i] != key) ++i;
    if (i == n) {
      for (i = 0; i < n; ++i) {
        int eq = PyUnicode_Compare(key, names.names[i]);
        if (eq == 0) break;
        if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
      }
    }
    if (i == n || out[i]) return false;
    out[i] = args[nargs + k];
  }
  return true;
}

// the same arguments, to a Python callable (the ctypes layer's method)
PyObject* forward(nb::handle fn, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return PyObject_Vectorcall(fn.ptr(), args, static_cast<size_t>(nargs), kwnames);
}

// a C++ exception of this file as the Python exception nanobind would raise for it
void set_error(const nb::builtin_exception& e) {
  PyObject* type = PyExc_RuntimeError;
  switch (e.type()) {
    case nb::exception_type::type_error: type = PyExc_TypeError; break;
    case nb::exception_type::value_error: type = PyExc_ValueError; break;
    case nb::exception_type::key_error: type = PyExc_KeyError; break;
    default: break;
  }
  PyErr_SetString(type, e.what());
}

/// A METH_FASTCALL | METH_KEYWORDS entry over F on the bound object of type T: the C++
/// exceptions of F raised as Python's.
template <class T, PyObject* (*F)(T*, PyObject* const*, Py_ssize_t, PyObject*)>
PyObject* fastcall(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    return F(nb::inst_ptr<T>(self), args, nargs, kwnames);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::builtin_exception& e) {
    set_error(e);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

bool small_int(PyObject* o, int32_t* out) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || v < INT32_MIN || v > INT32_MAX) {
    PyErr_Clear();
    return false;
  }
  *out = static_cast<int32_t>(v);
  return true;
}

PyObject* split_fast(Api* api, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const Names names{"common", "decode_threshold", "require_uniform"};
  PyObject* a[3];
  int32_t thr = 1;
  if (!match(args, nargs, kwnames, names, a) || !a[0] || (a[1] && !small_int(a[1], &thr)) ||
      (a[2] && !PyBool_Check(a[2]) && !PyLong_CheckExact(a[2])))
    return forward(api->split_fallback, args, nargs, kwnames);
  bool uniform = a[2] && PyObject_IsTrue(a[2]) == 1;
  return api->split(a[0], thr, uniform).release().ptr();
}

PyObject* fast_prefill_fast(Api* api, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const Names names{"common", "logits_indices_cpu", "out_query_start_loc", "stream",
                            "out_query_start_loc_cpu"};
  PyObject* a[5];
  // out_query_start_loc_cpu is keyword-only in the ctypes layer's signature
  if (nargs > 4 || !match(args, nargs, kwnames, names, a) || !a[0])
    return forward(api->fast_prefill_fallback, args, nargs, kwnames);
  auto h = [](PyObject* o) { return o ? nb::handle(o) : nb::handle(Py_None); };
  return api->fast_prefill_ex(h(a[0]), h(a[1]), h(a[2]), h(a[3]), h(a[4])).release().ptr();
}

// Builder.build(common, common_prefix_len=0, fast_build=False, stream=None): attn_build and
// the Metadata the ctypes layer's Builder._result makes (the same attributes, set here)
struct Build {
  Api* api;
  nb::object api_ref;
  nb::object builder;   // libattn.Builder
  nb::object metadata;  // the class libattn.Metadata
  nb::object lib;       // the Library
  nb::object fallback;  // the ctypes layer's Builder.build, bound to the builder
};

PyObject* build_fast(Build* b, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const Names names{"common", "common_prefix_len", "fast_build", "stream"};
  static PyObject* handle_name = PyUnicode_InternFromString("_handle");
  PyObject* a[4];
  if (!b->builder.is_valid() || !match(args, nargs, kwnames, names, a) || !a[0] ||
      (a[1] && !(PyLong_CheckExact(a[1]) && PyLong_AsLongLong(a[1]) == 0)) ||
      (a[2] && a[2] != Py_False && !(PyLong_CheckExact(a[2]) && PyLong_AsLongLong(a[2]) == 0)) ||
      (a[3] && a[3] != Py_None)) {
    PyErr_Clear();  // (an int beyond long long: the ctypes layer's call says what it is)
    return b->fallback.is_valid() ? forward(b->fallback, args, nargs, kwnames)
                                  : (PyErr_SetString(PyExc_ValueError, "builder is closed"),
                                     nullptr);
  }
  nb::object h = nb::steal(PyObject_GetAttr(b->builder.ptr(), handle_name));
  if (!h.is_valid()) return nullptr;
  if (h.is_none()) return forward(b->fallback, args, nargs, kwnames);  // "builder is closed"
  auto* handle = static_cast<attn_builder_t*>(PyLong_AsVoidPtr(h.ptr()));
  if (!handle && PyErr_Occurred()) return nullptr;
  const attn_common_metadata_t* c = b->api->common_ptr(a[0]);
  attn_metadata_t* out = nullptr;
  if (attn_error_t* err = b->api->build(handle, 0, c, 0, &out, nullptr)) b->api->raise(err);
  // Builder._result: the generation moved on, the Metadata of this build
  return new_result(b->builder.ptr(), b->metadata.ptr(), b->lib.ptr(), out, a[0]);
}

PyMethodDef build_def = {"build",
                         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(
                             fastcall<Build, build_fast>)),
                         METH_FASTCALL | METH_KEYWORDS,
                         "build(common, common_prefix_len=0, fast_build=False, stream=None): "
                         "libattn._native's Builder.build"};

PyMethodDef split_def = {"split_decodes_and_prefills",
                         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(
                             fastcall<Api, split_fast>)),
                         METH_FASTCALL | METH_KEYWORDS,
                         "split_decodes_and_prefills(common, decode_threshold=1, "
                         "require_uniform=False): libattn._native's"};
PyMethodDef fast_prefill_def = {
    "make_kv_sharing_fast_prefill_common_attn_metadata_ex",
    reinterpret_cast<PyCFunction>(
        reinterpret_cast<void (*)()>(fastcall<Api, fast_prefill_fast>)),
    METH_FASTCALL | METH_KEYWORDS,
    "make_kv_sharing_fast_prefill_common_attn_metadata_ex(common, logits_indices_cpu=None, "
    "out_query_start_loc=None, stream=None, *, out_query_start_loc_cpu=None): libattn._native's"};

// Garbage collection: an Api references its Library's methods and a Step its BoundBatch's
// objects, which reference them back; the collector sees these references and clears them.
int api_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Api* a = nb::inst_ptr<Api>(self);
  for (nb::handle h : {nb::handle(a->check), nb::handle(a->batch_split), nb::handle(a->split_fallback),
                       nb::handle(a->reorder_fallback), nb::handle(a->fast_prefill_fallback),
                       nb::handle(a->fast_prefill_result)})
    Py_VISIT(h.ptr());
  for (auto& k : a->structs.keys) Py_VISIT(k.ptr());
  for (auto& k : a->outputs.keys) Py_VISIT(k.ptr());
  Py_VISIT(a->last_split.ptr());
  return 0;
}

int api_clear(PyObject* self) {
  Api* a = nb::inst_ptr<Api>(self);
  a->check.reset();
  a->batch_split.reset();
  a->split_fallback.reset();
  a->reorder_fallback.reset();
  a->fast_prefill_fallback.reset();
  a->fast_prefill_result.reset();
  for (auto& k : a->structs.keys) k.reset();
  for (auto& k : a->outputs.keys) k.reset();
  a->last_split.reset();
  return 0;
}

int step_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Step* s = nb::inst_ptr<Step>(self);
  for (nb::handle h : {nb::handle(s->api_ref), nb::handle(s->builder), nb::handle(s->native),
                       nb::handle(s->metadata), nb::handle(s->refuse), nb::handle(s->failed),
                       nb::handle(s->stream_handle), nb::handle(s->values), nb::handle(s->slow),
                       nb::handle(s->fallback), nb::handle(s->write_fallback)})
    Py_VISIT(h.ptr());
  return 0;
}

int step_clear(PyObject* self) {
  Step* s = nb::inst_ptr<Step>(self);
  s->builder.reset();  // build() then says "builder is closed"
  s->metadata.reset();
  s->refuse.reset();
  s->failed.reset();
  s->stream_handle.reset();
  s->values.reset();
  s->slow.reset();
  s->fallback.reset();
  s->write_fallback.reset();
  s->fields.clear();
  s->writes.clear();
  // api_ref and native (the attn_builder_t*'s owner) last: nothing may build after this
  s->native.reset();
  return 0;
}

int build_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Build* b = nb::inst_ptr<Build>(self);
  for (nb::handle h : {nb::handle(b->api_ref), nb::handle(b->builder), nb::handle(b->metadata),
                       nb::handle(b->lib), nb::handle(b->fallback)})
    Py_VISIT(h.ptr());
  return 0;
}

int build_clear(PyObject* self) {
  Build* b = nb::inst_ptr<Build>(self);
  b->builder.reset();  // then every call says "builder is closed"
  b->metadata.reset();
  b->lib.reset();
  b->fallback.reset();
  return 0;
}

int group_step_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  GroupStep* g = nb::inst_ptr<GroupStep>(self);
  for (nb::handle h : {nb::handle(g->api_ref), nb::handle(g->values), nb::handle(g->refuse),
                       nb::handle(g->failed), nb::handle(g->stream_handle),
                       nb::handle(g->fallback)})
    Py_VISIT(h.ptr());
  for (auto& v : {&g->builders, &g->natives, &g->metadata})
    for (auto& h : *v) Py_VISIT(h.ptr());
  return 0;
}

int group_step_clear(PyObject* self) {
  GroupStep* g = nb::inst_ptr<GroupStep>(self);
  g->builders.clear();  // build() then says "builder is closed"
  g->metadata.clear();
  g->values.reset();
  g->refuse.reset();
  g->failed.reset();
  g->stream_handle.reset();
  g->fallback.reset();
  g->natives.clear();  // the handles' owners last: nothing builds after this
  return 0;
}

PyType_Slot group_step_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(group_step_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(group_step_clear)},
    {0, nullptr}};

PyType_Slot build_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(build_traverse)},
                             {Py_tp_clear, reinterpret_cast<void*>(build_clear)},
                             {0, nullptr}};

PyType_Slot api_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(api_traverse)},
                           {Py_tp_clear, reinterpret_cast<void*>(api_clear)},
                           {0, nullptr}};
PyType_Slot step_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(step_traverse)},
                            {Py_tp_clear, reinterpret_cast<void*>(step_clear)},
                            {0, nullptr}};

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "libattn's compiled fast path over the C ABI (see bindings/python/README.md)";
  m.attr("ATTN_VERSION_MAJOR") = ATTN_VERSION_MAJOR;
  m.attr("ATTN_VERSION_MINOR") = ATTN_VERSION_MINOR;

  nb::class_<Api>(m, "Api", nb::type_slots(api_slots))
      .def(nb::init<nb::dict, nb::object, nb::object, nb::object, nb::object, nb::object,
                    nb::object>(),
           nb::arg("functions"), nb::arg("check"), nb::arg("batch_split"), nb::arg("split_fallback"),
           nb::arg("reorder_fallback"), nb::arg("fast_prefill_fallback"),
           nb::arg("fast_prefill_result"))
      .def("split_decodes_and_prefills", &Api::split, nb::arg("common"),
           nb::arg("decode_threshold") = 1, nb::arg("require_uniform") = false)
      .def("reorder_batch_to_split_decodes_and_prefills", &Api::reorder,
           nb::arg("num_scheduled_tokens"), nb::arg("num_computed_tokens"),
           nb::arg("decode_threshold") = 1)
      .def("make_kv_sharing_fast_prefill_common_attn_metadata_ex", &Api::fast_prefill_ex,
           nb::arg("common"), nb::arg("logits_indices_cpu") = nb::none(),
           nb::arg("out_query_start_loc") = nb::none(), nb::arg("stream") = nb::none(),
           nb::kw_only(), nb::arg("out_query_start_loc_cpu") = nb::none())
      .def("fast_calls",
           [](nb::handle self) {
             // the builtins, bound to this Api object (they keep it alive)
             nb::dict d;
             d["split_decodes_and_prefills"] =
                 nb::steal(PyCFunction_NewEx(&split_def, self.ptr(), nullptr));
             d["make_kv_sharing_fast_prefill_common_attn_metadata_ex"] =
                 nb::steal(PyCFunction_NewEx(&fast_prefill_def, self.ptr(), nullptr));
             return d;
           },
           "The per-step calls as builtins with CPython's vectorcall convention.")
      .def("build_groups", &build_groups, nb::arg("builders"), nb::arg("common"),
           nb::arg("metadata_type"),
           "libattn.build_groups(builders, common) in one call (no prefix, fast_build, stream).")
      .def_prop_ro("has_build_groups", [](const Api& a) { return a.groups_fn != nullptr; })
      .def("address", &Api::address, nb::arg("name"),
           "The address of the C function this object calls for `name`.");

  nb::class_<Build>(m, "Build", nb::type_slots(build_slots))
      .def("__init__",
           [](Build* self, nb::handle api, nb::object builder, nb::object metadata, nb::object lib,
              nb::object fallback) {
             new (self) Build{nb::cast<Api*>(api), nb::borrow(api), std::move(builder),
                              std::move(metadata), std::move(lib), std::move(fallback)};
           })
      .def("call",
           [](nb::handle self) {
             return nb::steal(PyCFunction_NewEx(&build_def, self.ptr(), nullptr));
           },
           "Builder.build as a builtin bound to this object.");

  nb::class_<GroupStep>(m, "GroupStep", nb::type_slots(group_step_slots))
      .def(nb::init<nb::handle, nb::list, nb::list, nb::list, std::vector<uint64_t>, uint64_t,
                    uint64_t, std::vector<uint64_t>, int64_t, int64_t, nb::object, nb::object,
                    nb::object, nb::object>())
      .def("build", &GroupStep::build, nb::arg("num_reqs"), nb::arg("num_actual_tokens"),
           nb::arg("max_query_len"), nb::arg("max_seq_len"),
           nb::arg("common_prefix_lens") = nb::none(), nb::arg("fast_build") = false,
           nb::arg("stream") = nb::none())
      .def("build", &GroupStep::build_other)
      .def_prop_ro("counts", &GroupStep::get_counts);

  nb::class_<Step>(m, "Step", nb::type_slots(step_slots))
      .def(nb::init<nb::handle, nb::object, nb::object, nb::object, uint64_t, uint64_t, uint64_t,
                    uint64_t, int64_t, int64_t, nb::object, nb::object, nb::object, nb::object>())
      .def("build", &Step::build, nb::arg("num_reqs"), nb::arg("num_actual_tokens"),
           nb::arg("max_query_len"), nb::arg("max_seq_len"), nb::arg("common_prefix_len") = 0,
           nb::arg("fast_build") = false, nb::arg("stream") = nb::none())
      .def("build", &Step::build_other)
      .def("set_fields", &Step::set_fields, nb::arg("names"), nb::arg("slow"))
      .def("__call__", &Step::step, nb::arg("num_reqs"), nb::arg("num_actual_tokens"),
           nb::arg("max_query_len"), nb::arg("max_seq_len"), nb::arg("sources"))
      .def("set_writes", &Step::set_writes, nb::arg("writes"), nb::arg("fallback"))
      .def("__call__", &Step::step_other)
      .def("forget_generation", &Step::forget_generation,
           "After a failed build: the next build takes a new generation.")
      .def_prop_ro("counts", &Step::get_counts);
}
