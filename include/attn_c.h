/*
 * libattn: per-step attention metadata for LLM inference engines, behind a stable C ABI.
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file attn_c.h
 * @brief The one public header of libattn (C99, no CUDA headers, no C++).
 *
 * libattn turns the scheduler's description of a batch (the *common attention metadata*:
 * query_start_loc, seq_lens, block table, slot mapping, ...) into the metadata one attention
 * kernel backend needs, the way vLLM v1's attention metadata builders do, and tells a runtime
 * what each backend supports (CUDA graph level, reorder threshold, block-table updates).
 *
 * @par Conventions that hold for every function unless its documentation says otherwise
 * - Every fallible function returns `attn_error_t*`; NULL means success. A non-NULL error is
 *   owned by the caller and released with attn_error_destroy().
 * - On failure, out-parameters are left untouched.
 * - No C++ exception, abort or assert crosses this ABI; bad input gives an error whose message
 *   names the argument and the value.
 * - Parameter order: the handle first, then inputs, then outputs, then the stream last.
 * - Structs the caller fills start with `size_t struct_size`. Set it with the matching
 *   `ATTN_*_INIT` macro (or to `ATTN_*_STRUCT_SIZE`). The library reads only the fields that fit
 *   in `struct_size` and uses the `ATTN_*_INIT` default for the rest, so fields can be appended in
 *   later minor versions without breaking old callers.
 * - Tensors are borrowed `attn_tensor_t` views, layout-identical to DLPack's `DLTensor`; the
 *   library never takes ownership of caller memory.
 * - Objects are not safe to use from several threads at once unless stated (see
 *   docs/threading.md). Distinct builders may be used from distinct threads at once; a second
 *   concurrent call on one builder returns ::ATTN_ERR_BUSY instead of corrupting it.
 *
 * @par Version rule
 * A program compiled against this header works with any libattn whose major version equals
 * ::ATTN_VERSION_MAJOR and whose minor version is at least ::ATTN_VERSION_MINOR. Check it at
 * start-up with `ATTN_CHECK_VERSION()`.
 *
 * @par Contents, in this order
 * - @ref version "Versions": ATTN_VERSION_MAJOR / MINOR / PATCH and the rule above, then the
 *   export macros.
 * - @ref handles "Handles and types": the opaque handles, and the structs the core calls take
 *   (each defined with its topic below).
 * - @ref errors "Errors": attn_error_code(), attn_error_message(), attn_error_destroy(), and
 *   the version functions: attn_get_version(), attn_check_version().
 * - The core calls: @ref builder "Builders" (attn_builder_create(), attn_builder_destroy(), what
 *   a builder supports), @ref build "Builds" (attn_build(), attn_update_block_table(), the
 *   capture and drafting builds, attn_use_cascade_attention()), @ref metadata
 *   "Metadata accessors" (fields by index and by name, clones), @ref backends
 *   "Backend registry" (the backends and what each supports, without a builder).
 * - Their inputs: @ref tensors "Tensors and devices" (::attn_tensor_t, DLPack's `DLTensor`),
 *   @ref enums "Enumerations mirrored from vLLM", @ref config "Configuration structs"
 *   (::attn_kv_cache_spec_t, ::attn_builder_config_t, the allocator, per-layer parameters),
 *   @ref common "Common attention metadata" (::attn_common_metadata_t, the batch).
 * - @ref utilities "Batch utilities": vLLM's utils.py functions on a batch.
 * - @ref hyper "Per-layer hyperparameters", @ref plugins "Plugins", and the @ref api_table
 *   "Function table" (attn_get_api(), ::ATTN_API_FUNCTIONS).
 *
 * @par Loading with dlopen
 * Every function can be found by name with `dlsym`, or (ABI 1.3) all at once: resolve
 * attn_get_api() alone and call through the const ::attn_api_t it returns, whose members are
 * listed once by ::ATTN_API_FUNCTIONS, each typed by the `PFN_` pointer type declared next to the
 * function.
 */
#ifndef ATTN_C_H_
#define ATTN_C_H_

#include <stddef.h>
#include <stdint.h>

/** @defgroup version Versions
 *  @brief Compile-time and run-time version of the library and its ABI.
 *  @{ */

/** Major version: changes only with an incompatible ABI change; it is the SONAME suffix. */
#define ATTN_VERSION_MAJOR 1
/** Minor version: grows when functions or struct fields are appended. */
#define ATTN_VERSION_MINOR 7
/** Patch version: bug fixes only, no ABI change. */
#define ATTN_VERSION_PATCH 0
/** ABI version: equal to the major version; `libattn.so.<ATTN_ABI_VERSION>`. */
#define ATTN_ABI_VERSION ATTN_VERSION_MAJOR

/** The vLLM release whose attention metadata this library matches (ABI 1.4): the reference its
 *  semantics, tests and conformance lane follow (`pip install vllm==0.33.0`). A backend that
 *  matches it says so in attn_backend_info()'s `vllm_release`; attn_get_vllm_release() gives the
 *  loaded library's. */
#define ATTN_VLLM_RELEASE "0.33.0"
/** Major version of ::ATTN_VLLM_RELEASE. */
#define ATTN_VLLM_RELEASE_MAJOR 0
/** Minor version of ::ATTN_VLLM_RELEASE. */
#define ATTN_VLLM_RELEASE_MINOR 33
/** Patch version of ::ATTN_VLLM_RELEASE. */
#define ATTN_VLLM_RELEASE_PATCH 0

/** @} */

/** @cond INTERNAL */
#if defined(_WIN32)
#if defined(ATTN_BUILDING_LIBRARY)
#define ATTN_API __declspec(dllexport)
#else
#define ATTN_API __declspec(dllimport)
#endif
#else
#define ATTN_API __attribute__((visibility("default")))
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
#define ATTN_NOEXCEPT noexcept
#else
#define ATTN_NOEXCEPT
#endif

#ifdef __cplusplus
#define ATTN_BEGIN_DECL extern "C" {
#define ATTN_END_DECL }
#else
#define ATTN_BEGIN_DECL
#define ATTN_END_DECL
#endif
/** @endcond */

ATTN_BEGIN_DECL

/* ------------------------------------------------------------------------------------------ */
/** @defgroup handles Handles and types
 *  @brief Objects created and destroyed only by the library, and the structs the calls take
 *  (defined with their topic below).
 *  @{ */

/** An error: a frozen code and a UTF-8 message. NULL stands for success. */
typedef struct attn_error attn_error_t;
/** A metadata builder for one backend, one KV cache spec and one config. */
typedef struct attn_builder attn_builder_t;
/** Named metadata fields (tensors and scalars) produced by a build or a batch utility. */
typedef struct attn_metadata attn_metadata_t;
/** A loaded plugin library that added backends to the registry. */
typedef struct attn_plugin attn_plugin_t;
/** A CUDA stream; binary-identical to `cudaStream_t` and `CUstream`. NULL is the default
 *  stream. Host builds ignore it. */
typedef struct CUstream_st* attn_stream_t;
/** A borrowed tensor view, layout-identical to DLPack's `DLTensor` (@ref tensors). */
typedef struct attn_tensor attn_tensor_t;
/** A KV cache spec, vLLM's `AttentionSpec` (@ref config). */
typedef struct attn_kv_cache_spec attn_kv_cache_spec_t;
/** The engine-side configuration of a builder, from vLLM's `VllmConfig` (@ref config). */
typedef struct attn_builder_config attn_builder_config_t;
/** The batch a build reads, vLLM's `CommonAttentionMetadata` (@ref common). */
typedef struct attn_common_metadata attn_common_metadata_t;

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup errors Errors
 *  @brief Error objects: a code that never changes its number and a message.
 *  @{ */

/** Status codes. The numbers are frozen: they are never renumbered or reused. */
typedef enum attn_status_code {
  ATTN_OK = 0,                   /**< Success (only as the code of a NULL error). */
  ATTN_ERR_INVALID_ARGUMENT = 1, /**< An argument, struct field or tensor is malformed. */
  ATTN_ERR_UNSUPPORTED = 2,      /**< Valid, but not supported here (backend, device, level). */
  ATTN_ERR_OUT_OF_MEMORY = 3,    /**< An allocation failed. */
  ATTN_ERR_CUDA = 4,             /**< The CUDA runtime reported an error; its text is quoted. */
  ATTN_ERR_NOT_FOUND = 5,        /**< No backend, field, index or symbol of that name. */
  ATTN_ERR_ABI_MISMATCH = 6,     /**< A version or plugin ABI does not match this library. */
  ATTN_ERR_BUSY = 7,             /**< The object is in use by another thread, or still in use. */
  ATTN_ERR_INTERNAL = 8          /**< A bug in libattn or a plugin; the message says where. */
} attn_status_code_t;

/**
 * @brief The status code of an error.
 * @param[in] err An error, or NULL.
 * @return One of ::attn_status_code_t; ::ATTN_OK for NULL.
 * @par Thread safety
 * Safe to call concurrently on the same error.
 */
ATTN_API int32_t attn_error_code(const attn_error_t* err) ATTN_NOEXCEPT;
/** Pointer type of attn_error_code(). */
typedef int32_t (*PFN_attn_error_code)(const attn_error_t* err);

/**
 * @brief The UTF-8 message of an error; it names the argument and the bad value.
 * @param[in] err An error, or NULL.
 * @return The message, owned by `err` and valid until attn_error_destroy(err); "" for NULL.
 * @par Thread safety
 * Safe to call concurrently on the same error.
 */
ATTN_API const char* attn_error_message(const attn_error_t* err) ATTN_NOEXCEPT;
/** Pointer type of attn_error_message(). */
typedef const char* (*PFN_attn_error_message)(const attn_error_t* err);

/**
 * @brief Releases an error returned by any libattn function.
 * @param[in] err The error to release; NULL is accepted and ignored.
 * @par Thread safety
 * Must not race with other uses of the same error.
 */
ATTN_API void attn_error_destroy(attn_error_t* err) ATTN_NOEXCEPT;
/** Pointer type of attn_error_destroy(). */
typedef void (*PFN_attn_error_destroy)(attn_error_t* err);

/**
 * @brief A static description of a status code.
 * @param[in] code Any integer.
 * @return A static string such as "invalid argument"; "unknown status" for numbers not in
 *         ::attn_status_code_t. Never NULL, never freed.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API const char* attn_status_string(int32_t code) ATTN_NOEXCEPT;
/** Pointer type of attn_status_string(). */
typedef const char* (*PFN_attn_status_string)(int32_t code);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @addtogroup version
 *  @{ */

/**
 * @brief The version of the loaded library. Never fails; its signature never changes.
 * @param[out] major Receives the major version; may be NULL.
 * @param[out] minor Receives the minor version; may be NULL.
 * @param[out] patch Receives the patch version; may be NULL.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API void attn_get_version(uint32_t* major, uint32_t* minor, uint32_t* patch) ATTN_NOEXCEPT;
/** Pointer type of attn_get_version(). */
typedef void (*PFN_attn_get_version)(uint32_t* major, uint32_t* minor, uint32_t* patch);

/**
 * @brief Checks that the loaded library can serve a caller compiled against `major.minor`.
 *
 * The rule: the library's major equals `major`, and the library's minor is at least `minor`.
 * @param[in] major The major version the caller was compiled against.
 * @param[in] minor The minor version the caller was compiled against.
 * @return NULL when compatible; an ::ATTN_ERR_ABI_MISMATCH error that states both versions
 *         otherwise.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_check_version(uint32_t major, uint32_t minor) ATTN_NOEXCEPT;
/** Pointer type of attn_check_version(). */
typedef attn_error_t* (*PFN_attn_check_version)(uint32_t major, uint32_t minor);

/** Checks the loaded library against the header this code was compiled with. */
#define ATTN_CHECK_VERSION() attn_check_version(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR)

/**
 * @brief The vLLM release the loaded library matches (ABI 1.4): its ::ATTN_VLLM_RELEASE and the
 * numbers of that release, which may differ from the header a caller was compiled with.
 * @param[out] release Receives the release as a static string ("0.33.0"), valid while the
 *             library is loaded; required.
 * @param[out] major Receives the release's major number; may be NULL.
 * @param[out] minor Receives the release's minor number; may be NULL.
 * @param[out] patch Receives the release's patch number; may be NULL.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT when `release` is NULL (then nothing is
 *         written).
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_get_vllm_release(const char** release, uint32_t* major,
                                             uint32_t* minor, uint32_t* patch) ATTN_NOEXCEPT;
/** Pointer type of attn_get_vllm_release(). */
typedef attn_error_t* (*PFN_attn_get_vllm_release)(const char** release, uint32_t* major,
                                                   uint32_t* minor, uint32_t* patch);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup builder Builders
 *  @brief A builder per (backend, KV cache spec, config), as vLLM has one per KV cache group.
 *
 * A builder allocates its persistent buffers once, in attn_builder_create(); builds allocate
 * nothing, so the addresses they return are stable and safe to capture in a CUDA graph.
 * @par Thread safety
 * One builder is used by one thread at a time: a call that finds another call in progress on
 * the same builder returns ::ATTN_ERR_BUSY. Distinct builders may be used concurrently.
 *  @{ */

/**
 * @brief The bytes of caller workspace a builder needs (two-phase, as CUB does): pass that many
 * bytes as `config->workspace` to have the builder place its persistent buffers there.
 * @param[in] backend A registered backend name, or one of its vLLM names (as attn_builder_create()).
 * @param[in] kv_cache_spec The KV cache spec.
 * @param[in] config The builder config (its `workspace` fields are ignored).
 * @param[out] out_bytes Receives the size in bytes (0 when the builder needs no buffers).
 * @return NULL on success; errors as attn_builder_create().
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_builder_workspace_size(const char* backend,
                                                   const attn_kv_cache_spec_t* kv_cache_spec,
                                                   const attn_builder_config_t* config,
                                                   size_t* out_bytes) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_workspace_size(). */
typedef attn_error_t* (*PFN_attn_builder_workspace_size)(const char* backend,
                                                         const attn_kv_cache_spec_t* kv_cache_spec,
                                                         const attn_builder_config_t* config,
                                                         size_t* out_bytes);

/**
 * @brief Creates a builder and its persistent buffers.
 * @param[in] backend A registered backend name, e.g. "FLASH_ATTN", or (since ABI 1.7) any name
 *            vLLM 0.33.0 uses for it, as ::attn_backend_info_t's `vllm_names` lists them: the
 *            backend enum member or the class's `get_name()` ("MAMBA2_ATTN" and "MAMBA2" both
 *            give MAMBA2; "LINEAR" gives LINEAR_ATTN; "ROCM_AITER_TRITON_MLA" and
 *            "AITER_TRITON_MLA" give ROCM_AITER_MLA). Exact and case-sensitive, as vLLM's enum
 *            lookup is. attn_builder_backend_name() gives the backend's own name.
 * @param[in] kv_cache_spec The KV cache spec; copied.
 * @param[in] config The config; copied (the `layers` array too). An allocator or workspace
 *            named in it must outlive the builder.
 * @param[out] out Receives the builder, owned by the caller; release with
 *             attn_builder_destroy().
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND (unknown backend), ::ATTN_ERR_INVALID_ARGUMENT
 *         (malformed spec or config), ::ATTN_ERR_UNSUPPORTED (spec, device or dtype the backend
 *         does not handle; CUDA device without CUDA support), ::ATTN_ERR_OUT_OF_MEMORY,
 *         ::ATTN_ERR_CUDA.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_builder_create(const char* backend,
                                           const attn_kv_cache_spec_t* kv_cache_spec,
                                           const attn_builder_config_t* config,
                                           attn_builder_t** out) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_create(). */
typedef attn_error_t* (*PFN_attn_builder_create)(const char* backend,
                                                 const attn_kv_cache_spec_t* kv_cache_spec,
                                                 const attn_builder_config_t* config,
                                                 attn_builder_t** out);

/**
 * @brief Destroys a builder, its buffers and the metadata it owns.
 * @param[in] builder The builder; NULL is accepted and ignored.
 * @par Thread safety
 * No other call may be using `builder`.
 */
ATTN_API void attn_builder_destroy(attn_builder_t* builder) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_destroy(). */
typedef void (*PFN_attn_builder_destroy)(attn_builder_t* builder);

/**
 * @brief The backend name of a builder: the backend's own name (attn_backend_name()), also when
 * the builder was created under one of its vLLM names.
 * @param[in] builder The builder.
 * @return The name, valid for the builder's lifetime; "" when `builder` is NULL.
 */
ATTN_API const char* attn_builder_backend_name(const attn_builder_t* builder) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_backend_name(). */
typedef const char* (*PFN_attn_builder_backend_name)(const attn_builder_t* builder);

/**
 * @brief The CUDA graph support level of this builder (the runtime's view of
 * `builder.get_cudagraph_support(...)`).
 * @param[in] builder The builder.
 * @param[out] out_level Receives one of ::attn_cudagraph_support_t.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments.
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy().
 */
ATTN_API attn_error_t* attn_builder_cudagraph_support(const attn_builder_t* builder,
                                                      int32_t* out_level) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_cudagraph_support(). */
typedef attn_error_t* (*PFN_attn_builder_cudagraph_support)(const attn_builder_t* builder,
                                                            int32_t* out_level);

/**
 * @brief The query length this builder pulls to the front of the batch (vLLM's
 * `reorder_batch_threshold`).
 * @param[in] builder The builder.
 * @param[out] out_threshold Receives the threshold, or ::ATTN_NO_REORDER (None in vLLM).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments.
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy().
 */
ATTN_API attn_error_t* attn_builder_reorder_batch_threshold(const attn_builder_t* builder,
                                                            int32_t* out_threshold) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_reorder_batch_threshold(). */
typedef attn_error_t* (*PFN_attn_builder_reorder_batch_threshold)(const attn_builder_t* builder,
                                                                  int32_t* out_threshold);

/**
 * @brief Whether attn_update_block_table() works with this builder.
 * @param[in] builder The builder.
 * @param[out] out Receives 1 or 0.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments.
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy().
 */
ATTN_API attn_error_t* attn_builder_supports_update_block_table(const attn_builder_t* builder,
                                                                int32_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_supports_update_block_table(). */
typedef attn_error_t* (*PFN_attn_builder_supports_update_block_table)(const attn_builder_t* builder,
                                                                      int32_t* out);

/**
 * @brief The lowest CUDA graph support over several builders: the reduction vLLM's model runner
 * does over its KV cache groups to pick its CUDA graph mode.
 * @param[in] builders `num_builders` builders (none may be NULL).
 * @param[in] num_builders May be 0: the answer is then ::ATTN_CG_ALWAYS, as in vLLM.
 * @param[out] out_level Receives the minimum level.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming a NULL entry.
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy() of one of the builders.
 */
ATTN_API attn_error_t* attn_min_cudagraph_support(const attn_builder_t* const* builders,
                                                  size_t num_builders,
                                                  int32_t* out_level) ATTN_NOEXCEPT;
/** Pointer type of attn_min_cudagraph_support(). */
typedef attn_error_t* (*PFN_attn_min_cudagraph_support)(const attn_builder_t* const* builders,
                                                        size_t num_builders, int32_t* out_level);

/**
 * @brief vLLM 0.33's `get_varlen_cudagraph_max_query_len(vllm_config, kv_cache_spec)` of this
 * builder (ABI 1.4): the largest per-request query length L of the variable-length decode
 * batches (each real request 1..L query tokens, each padding request 0) that a FULL cudagraph of
 * this builder replays. Model runner V2's adaptive verification needs L ≥ 1 + k from every
 * builder whose level is not ::ATTN_CG_ALWAYS (see attn_resolve_cudagraph_mode_and_sizes()).
 *
 * None (`*out_has_value` = 0, `*out_value` = -1) for the base class, as in vLLM: ALWAYS builders
 * replay any batch, and the others cannot replay varlen batches. MAMBA2 reports
 * max_decode_query_len (1 + num_speculative_tokens, + num_speculative_tokens more with
 * `parallel_drafting` on model runner V1); FLASHINFER reports 1 + k when its decode uses
 * trtllm-gen's varlen kernel. A wrapper reports its inner builder's value.
 * @param[in] builder The builder.
 * @param[out] out_value Receives L, or -1 for None.
 * @param[out] out_has_value Receives 1 when there is a bound, 0 for None.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments (outputs untouched).
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy().
 */
ATTN_API attn_error_t* attn_builder_varlen_cudagraph_max_query_len(
    const attn_builder_t* builder, int32_t* out_value, int32_t* out_has_value) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_varlen_cudagraph_max_query_len(). */
typedef attn_error_t* (*PFN_attn_builder_varlen_cudagraph_max_query_len)(
    const attn_builder_t* builder, int32_t* out_value, int32_t* out_has_value);

/** The inputs of attn_resolve_cudagraph_mode_and_sizes() (ABI 1.4): what vLLM 0.33's
 *  `CompilationConfig.resolve_cudagraph_mode_and_sizes` and the model runner's calls of it
 *  read. Fill with ::ATTN_CUDAGRAPH_RESOLVE_ARGS_INIT; the per-group arrays are parallel arrays
 *  of `num_groups` entries, one per attention group (builder) of every KV cache group. */
typedef struct attn_cudagraph_resolve_args {
  size_t struct_size;       /**< ::ATTN_CUDAGRAPH_RESOLVE_ARGS_STRUCT_SIZE. */
  int32_t cudagraph_mode;   /**< The configured ::attn_cudagraph_mode_t (default
                                 ::ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE; vLLM's None is NONE). */
  int32_t uniform_decode_query_len; /**< 1 + num_speculative_tokens (≥ 1; default 1). */
  size_t num_groups;        /**< Attention groups; 0: the minimum level is ALWAYS, as in vLLM. */
  const int32_t* group_cudagraph_support; /**< `num_groups` ::attn_cudagraph_support_t levels
                                               (attn_builder_cudagraph_support()); NULL only
                                               when `num_groups` is 0. */
  const char* const* group_backend_names; /**< NULL, or `num_groups` names for the messages
                                               (attn_builder_backend_name(); NULL entries read
                                               as vLLM's None). */
  const int32_t* group_varlen_max_query_len; /**< NULL (all None), or `num_groups` bounds from
                                                  attn_builder_varlen_cudagraph_max_query_len(),
                                                  -1 for None; read only with
                                                  `adaptive_verification`. */
  const int32_t* cudagraph_capture_sizes; /**< The configured capture sizes, as vLLM holds them
                                               after its config's post-init (sorted); may be
                                               NULL when `num_cudagraph_capture_sizes` is 0. */
  size_t num_cudagraph_capture_sizes; /**< Entries in `cudagraph_capture_sizes`. */
  int32_t max_cudagraph_capture_size; /**< The configured maximum; 0 for None. */
  int32_t use_v2_model_runner;        /**< 1: model runner V2 (no size rounding). */
  int32_t piecewise_capture_available; /**< 0: the model has neither a compiled submodule nor
                                            breakable graphs (MRV2); default 1. */
  int32_t splitting_ops_contain_attention; /**< vLLM's `splitting_ops_contain_attention()`;
                                                default 1 (vLLM's default config). */
  int32_t vllm_compile;                /**< compilation `mode` is VLLM_COMPILE; default 1. */
  int32_t use_inductor_graph_partition; /**< default 0. */
  int32_t has_mamba_layers;            /**< `kv_cache_config.has_mamba_layers` (0 without a
                                            KV cache config). */
  int32_t is_profiling;                /**< The profiling run (skips the Mamba check). */
  int32_t adaptive_verification;       /**< MRV2 adaptive verification: check the varlen
                                            bounds, then pick its decode route first. */
  int64_t num_blocks;                  /**< `kv_cache_config.num_blocks`. */
  int64_t max_num_reqs;                /**< max_num_seqs; 0 for None. */
} attn_cudagraph_resolve_args_t;

/** The size of ::attn_cudagraph_resolve_args_t in this header. */
#define ATTN_CUDAGRAPH_RESOLVE_ARGS_STRUCT_SIZE \
  (offsetof(attn_cudagraph_resolve_args_t, max_num_reqs) + sizeof(int64_t))
/** Defaults of ::attn_cudagraph_resolve_args_t: vLLM's default config, no groups, no sizes. */
#define ATTN_CUDAGRAPH_RESOLVE_ARGS_INIT                                                     \
  { ATTN_CUDAGRAPH_RESOLVE_ARGS_STRUCT_SIZE, ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 1, 0, NULL, \
    NULL, NULL, NULL, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0 }

/**
 * @brief vLLM 0.33's CUDA graph mode resolution (ABI 1.4): the model runner's reduction over its
 * attention groups (`_check_and_update_cudagraph_mode` on V1, `get_attn_cg_support` on V2), then
 * `CompilationConfig.resolve_cudagraph_mode_and_sizes`; with `adaptive_verification`, V2's
 * varlen bound check and `resolve_adaptive_cudagraph_mode` first.
 *
 * Let `min` be the lowest group level (the first group having it names the backend). NONE stays
 * NONE. A mode whose mixed batches run FULL (FULL) needs ALWAYS: below it, FULL_AND_PIECEWISE
 * when `splitting_ops_contain_attention`, else FULL_DECODE_ONLY. FULL decode graphs with a
 * NEVER group fall back to PIECEWISE (VLLM_COMPILE with attention split or inductor
 * partitioning) or NONE; with spec decode (`uniform_decode_query_len` > 1) and `min` below
 * UNIFORM_BATCH to PIECEWISE (`splitting_ops_contain_attention`) or NONE. Without
 * `piecewise_capture_available`, PIECEWISE becomes NONE and FULL_AND_PIECEWISE
 * FULL_DECODE_ONLY. On model runner V1 only, FULL decode graphs with spec decode round the
 * capture sizes up to multiples of `uniform_decode_query_len`, dropping those above the maximum
 * (sorted, unique; `[1 + k]` if none is left but it fits), and the maximum becomes the largest.
 *
 * Sizes, CUB-style: with `out_sizes` NULL, `*inout_num_sizes` receives the number of resolved
 * sizes (and the mode and maximum are written); otherwise `*inout_num_sizes` is the capacity of
 * `out_sizes` and receives the count.
 * @param[in] args The inputs (see ::attn_cudagraph_resolve_args_t).
 * @param[out] out_mode Receives the resolved ::attn_cudagraph_mode_t.
 * @param[out] out_max_capture_size Receives the resolved `max_cudagraph_capture_size` (0: None).
 * @param[out] out_sizes NULL (size query), or `*inout_num_sizes` entries for the sizes.
 * @param[in,out] inout_num_sizes Capacity in, count out.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL/malformed arguments (a mode or
 *         level out of range, `uniform_decode_query_len` < 1, sizes < 1, a capacity below the
 *         count, `adaptive_verification` without model runner V2 or without FULL graphs, sizes
 *         to round with no maximum: vLLM's assertions); ::ATTN_ERR_UNSUPPORTED for vLLM's
 *         ValueErrors: FULL graphs with a NEVER group ("please try cudagraph_mode=PIECEWISE"),
 *         no capture size left after rounding, `max_num_reqs` above `num_blocks` with Mamba
 *         layers and FULL graphs (outside profiling), an adaptive verification bound below
 *         `uniform_decode_query_len` (or None) on a non-ALWAYS group (NEVER counts as None).
 *         Outputs are untouched on failure.
 * @par Thread safety
 * Safe to call from any thread (no state).
 */
ATTN_API attn_error_t* attn_resolve_cudagraph_mode_and_sizes(
    const attn_cudagraph_resolve_args_t* args, int32_t* out_mode, int32_t* out_max_capture_size,
    int32_t* out_sizes, size_t* inout_num_sizes) ATTN_NOEXCEPT;
/** Pointer type of attn_resolve_cudagraph_mode_and_sizes(). */
typedef attn_error_t* (*PFN_attn_resolve_cudagraph_mode_and_sizes)(
    const attn_cudagraph_resolve_args_t* args, int32_t* out_mode, int32_t* out_max_capture_size,
    int32_t* out_sizes, size_t* inout_num_sizes);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup build Builds
 *  @brief Per-step metadata builds (vLLM's `build`, `update_block_table`,
 *  `build_for_cudagraph_capture`, `build_for_drafting`, `use_cascade_attention`).
 *
 * @par Ownership of the result
 * The metadata a build returns is owned by the builder: it stays valid until the next build or
 * update on the same builder, or until the builder is destroyed. Its tensors either view the
 * caller's input tensors (which must stay alive while it is used) or the builder's persistent
 * buffers. Keep it longer with attn_metadata_clone(). attn_metadata_destroy() on it does nothing.
 * Each successful build, capture, drafting build or update returns a new handle; a handle read
 * after its builder's next result is stale: every accessor that returns an error
 * (attn_metadata_field(), attn_metadata_get*(), attn_metadata_clone(),
 * attn_metadata_to_common(), attn_update_block_table()) then fails with
 * ::ATTN_ERR_INVALID_ARGUMENT ("metadata is stale: ...") instead of returning the newer data;
 * attn_metadata_kind() and attn_metadata_field_count() still answer (they never change). An
 * update_block_table() result also goes stale with the next result of the builder whose
 * metadata it shares. Detection covers the next 63 results of a builder (handles are reused
 * after 64); a handle of a destroyed builder must not be used at all.
 * @par Stream semantics
 * On a CUDA builder every device write is enqueued on `stream` and nothing synchronizes (unless
 * `config->validate` is ::ATTN_VALIDATE_FULL); outputs are ready in stream order. Host builds
 * finish before returning and ignore `stream`.
 * @par Failure
 * A build that fails validation leaves the builder's previous metadata as it was.
 *  @{ */

/**
 * @brief Builds the backend's metadata for one batch (vLLM's `build(common_prefix_len,
 * common_attn_metadata, fast_build)`).
 * @param[in] builder The builder.
 * @param[in] common_prefix_len Tokens shared by every request (0 = no cascade); >= 0.
 * @param[in] common The batch; validated against the builder's config and device.
 * @param[in] fast_build Non-zero to favour build speed over kernel speed (spec-decode drafting).
 * @param[out] out Receives the metadata, owned by the builder (see above).
 * @param[in] stream The CUDA stream for device work; ignored on the host.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad field and value;
 *         ::ATTN_ERR_BUSY; ::ATTN_ERR_CUDA.
 * @par Thread safety
 * One call per builder at a time (else ::ATTN_ERR_BUSY).
 */
ATTN_API attn_error_t* attn_build(attn_builder_t* builder, int64_t common_prefix_len,
                                  const attn_common_metadata_t* common, int32_t fast_build,
                                  attn_metadata_t** out, attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_build(). */
typedef attn_error_t* (*PFN_attn_build)(attn_builder_t* builder, int64_t common_prefix_len,
                                        const attn_common_metadata_t* common, int32_t fast_build,
                                        attn_metadata_t** out, attn_stream_t stream);

/**
 * @brief The builds of several builders over one batch, validated once (ABI 1.7): what a hybrid
 * model's runner does each step, one attn_build() per KV cache group (full attention, sliding
 * window, Mamba, GDN, ...), in one call.
 *
 * Equal to `attn_build(builders[i], common_prefix_lens[i], common, fast_build, &out[i], stream)`
 * for i = 0, 1, ..., in that order: each `out[i]` has the fields, values and tensor addresses
 * that call would return (the conversion of `common` and its validation are shared, nothing a
 * builder writes is; tests/c/test_build_groups.c compares every field for every pair of
 * registered backends). Validation: each builder's O(1) checks (the scalars against its
 * `config->max_num_seqs` and `max_num_batched_tokens`, the tensors it requires); one pass over
 * the batch's tensors and values with the union of what the builders check (the values when any
 * builder checks them, ::ATTN_VALIDATE_FULL's comparisons when any asks for them); then each
 * builder's own O(1) checks of the longest host seq_len against its `max_model_len` and of the
 * block table's width at its `block_size`, and `common_prefix_lens[i]` against the lengths. A
 * builder whose own attn_build() would refuse the batch makes the call fail with that message,
 * prefixed "builders[i]: " (the lowest such i), and nothing is built.
 * @param[in] builders `num_builders` distinct builders, all on the same device (the one
 *            `stream` belongs to) and reading `common->seq_lens` alike (no cross-attention
 *            builder beside a decoder one). The array is read during the call only.
 * @param[in] num_builders Entries of `builders`, `common_prefix_lens` and `out` (>= 1). The check
 *            for duplicates is quadratic in it.
 * @param[in] common_prefix_lens NULL (0 for every builder), or `num_builders` values (>= 0): vLLM
 *            computes the cascade prefix per KV cache group.
 * @param[in] common The batch every builder builds.
 * @param[in] fast_build As attn_build(), for every builder.
 * @param[out] out Receives `num_builders` handles, `out[i]` owned by `builders[i]` (see above).
 * @param[in] stream The CUDA stream for every builder's device work, enqueued in builder order;
 *            ignored on the host.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL `builders`, `out` or
 *         `builders[i]`, `num_builders` 0, a builder given twice, builders on different devices
 *         or reading seq_lens differently (each naming "builders[i]"), or a batch a builder
 *         refuses ("builders[i]: " and its message); ::ATTN_ERR_BUSY naming "builders[i]" when
 *         one is in use by another call (none is then held); a builder's own error during its
 *         build ("builders[i]: ...").
 * @par Failure
 * `out` is never written on failure: the caller owns no new handle. When the batch or an
 * argument is refused, every builder keeps its previous metadata and handles. When builders[i]
 * fails during its build (a backend's own check, a CUDA error), builders[0..i) have been
 * rebuilt: their earlier handles are stale (accessors fail with "metadata is stale");
 * builders[i] is as a failed attn_build() leaves it, later builders untouched.
 * @par Thread safety
 * Holds every builder for the call, as attn_build() does (else ::ATTN_ERR_BUSY).
 */
ATTN_API attn_error_t* attn_build_groups(attn_builder_t* const* builders, size_t num_builders,
                                         const int64_t* common_prefix_lens,
                                         const attn_common_metadata_t* common, int32_t fast_build,
                                         attn_metadata_t** out, attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_build_groups(). */
typedef attn_error_t* (*PFN_attn_build_groups)(attn_builder_t* const* builders,
                                               size_t num_builders,
                                               const int64_t* common_prefix_lens,
                                               const attn_common_metadata_t* common,
                                               int32_t fast_build, attn_metadata_t** out,
                                               attn_stream_t stream);

/**
 * @brief vLLM's `update_block_table`: metadata equal to `metadata` but for `block_table` and
 * `slot_mapping`, for KV cache groups whose metadata is otherwise identical.
 *
 * The result shares every other field with `metadata` (as vLLM's `copy.copy` does), so it stays
 * valid only while `metadata` does. `metadata` may come from another builder of the same backend.
 * @param[in] builder A builder whose backend supports it
 *            (attn_builder_supports_update_block_table()).
 * @param[in] metadata Metadata built by the same backend.
 * @param[in] block_table The new (num_reqs, max_blocks) int32 block table.
 * @param[in] slot_mapping The new slot mapping, same shape and dtype as the old one.
 * @param[out] out Receives the metadata, owned by `builder`.
 * @param[in] stream The CUDA stream; no device work is done today.
 * @return NULL on success; ::ATTN_ERR_UNSUPPORTED when the backend does not support it;
 *         ::ATTN_ERR_INVALID_ARGUMENT for a mismatched backend, shape, dtype or device;
 *         ::ATTN_ERR_BUSY.
 * @par Thread safety
 * One call per builder at a time (else ::ATTN_ERR_BUSY).
 */
ATTN_API attn_error_t* attn_update_block_table(attn_builder_t* builder,
                                               const attn_metadata_t* metadata,
                                               const attn_tensor_t* block_table,
                                               const attn_tensor_t* slot_mapping,
                                               attn_metadata_t** out,
                                               attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_update_block_table(). */
typedef attn_error_t* (*PFN_attn_update_block_table)(attn_builder_t* builder,
                                                     const attn_metadata_t* metadata,
                                                     const attn_tensor_t* block_table,
                                                     const attn_tensor_t* slot_mapping,
                                                     attn_metadata_t** out, attn_stream_t stream);

/**
 * @brief vLLM 0.33's `supports_draft_decode_metadata_update` of this builder (ABI 1.5): whether
 * attn_update_draft_decode_metadata() refreshes its draft decode metadata with capture-safe work
 * only, so that a speculator can record the refresh inside its draft decode CUDA graph and
 * skip the eager build between draft steps.
 *
 * As in vLLM 0.33: FLASH_ATTN without DCP; TRITON_ATTN without R-SWA (`config->rswa_window`);
 * FLASHINFER when its decode runs on trtllm-gen, without DCP; TRITON_MLA without DCP; a wrapper
 * (chunked local, cross, encoder-only, fast prefill) answers as its inner builder; every other
 * builder, plugin backends included, answers 0.
 * @param[in] builder The builder.
 * @param[out] out Receives 1 or 0.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments (`*out` untouched).
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy().
 */
ATTN_API attn_error_t* attn_builder_supports_draft_decode_metadata_update(
    const attn_builder_t* builder, int32_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_builder_supports_draft_decode_metadata_update(). */
typedef attn_error_t* (*PFN_attn_builder_supports_draft_decode_metadata_update)(
    const attn_builder_t* builder, int32_t* out);

/**
 * @brief vLLM 0.33's `update_draft_decode_metadata(metadata)` (ABI 1.5): refresh, in place and
 * with capture-safe work only, the metadata of a draft decode step whose persistent inputs
 * (`seq_lens`, `query_start_loc`, the block table, the slot mapping) the speculator advanced on
 * the device since the build.
 *
 * libattn's metadata of the supporting builders holds views of those inputs, so nothing is
 * rewritten: the call checks the builder and the metadata and returns (vLLM's TRITON_ATTN,
 * FLASHINFER and TRITON_MLA updates are no-ops too). FLASH_ATTN with an AOT schedule
 * (`aot_schedule` = 1): vLLM's update re-runs FA3's `get_scheduler_metadata`, FlashAttention's
 * code, which libattn never calls; the runtime re-runs it with the metadata's `scheduler_*`
 * fields (unchanged: views of the advanced inputs and the build's scalars), as after a build.
 * @param[in] builder A builder for which attn_builder_supports_draft_decode_metadata_update()
 *            answers 1.
 * @param[in] metadata Metadata this builder's backend built (the draft decode batch's build).
 * @param[in] stream The CUDA stream the refresh would run on; no device work is done today.
 * @return NULL on success; ::ATTN_ERR_UNSUPPORTED naming the backend and vLLM 0.33's reason
 *         when the builder does not support it; ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments,
 *         metadata of another backend or never built, or stale metadata; ::ATTN_ERR_BUSY.
 * @par Thread safety
 * One call per builder at a time (else ::ATTN_ERR_BUSY).
 */
ATTN_API attn_error_t* attn_update_draft_decode_metadata(attn_builder_t* builder,
                                                         attn_metadata_t* metadata,
                                                         attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_update_draft_decode_metadata(). */
typedef attn_error_t* (*PFN_attn_update_draft_decode_metadata)(attn_builder_t* builder,
                                                               attn_metadata_t* metadata,
                                                               attn_stream_t stream);

/**
 * @brief vLLM's `build_for_cudagraph_capture(common)` = `build(0, common)`, after checking that
 * the batch is one the builder's level allows in a captured graph.
 *
 * ::ATTN_CG_NEVER refuses every batch; ::ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE refuses batches with
 * a query longer than 1; ::ATTN_CG_UNIFORM_BATCH refuses batches whose query lengths differ
 * (all must equal max_query_len, except that the last may be shorter, as in vLLM's capture
 * batches); ::ATTN_CG_ALWAYS accepts any batch. Query lengths are read from the host mirror.
 *
 * Backends that override vLLM's capture build do what vLLM does: TRITON_ATTN writes 1 into every
 * entry of `common->seq_lens` (the runtime's tensor the graph reads at replay, so that capture
 * does not run long sequences; refill it before replaying), FLEX_ATTENTION builds with
 * max_seq_len = the host maximum of seq_lens. The Mamba family (MAMBA2, MAMBA1, SHORT_CONV,
 * GDN_ATTN) captures decode-only batches only (max_query_len == 1 + num_speculative_tokens, at
 * most decode_cudagraph_max_bs requests; GDN_ATTN: requests and tokens at most that); with spec
 * decode MAMBA2, SHORT_CONV and GDN_ATTN build them with num_accepted_tokens =
 * diff(query_start_loc) (GDN_ATTN also num_decode_draft_tokens = that - 1), whatever the caller
 * passes (docs/backends/mamba.md).
 * @param[in] builder The builder.
 * @param[in] common The capture batch (TRITON_ATTN writes its seq_lens, see above).
 * @param[out] out Receives the metadata, owned by the builder.
 * @param[in] stream The stream being captured.
 * @return NULL on success; ::ATTN_ERR_UNSUPPORTED naming the level and the offending query
 *         length; other errors as attn_build().
 * @par Thread safety
 * One call per builder at a time (else ::ATTN_ERR_BUSY).
 */
ATTN_API attn_error_t* attn_build_for_cudagraph_capture(attn_builder_t* builder,
                                                        const attn_common_metadata_t* common,
                                                        attn_metadata_t** out,
                                                        attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_build_for_cudagraph_capture(). */
typedef attn_error_t* (*PFN_attn_build_for_cudagraph_capture)(attn_builder_t* builder,
                                                              const attn_common_metadata_t* common,
                                                              attn_metadata_t** out,
                                                              attn_stream_t stream);

/**
 * @brief vLLM's `build_for_drafting(common, draft_index)` = `build(0, common, fast_build=True)`.
 * @param[in] builder The builder.
 * @param[in] common The draft batch.
 * @param[in] draft_index Index of the draft step (>= 0).
 * @param[out] out Receives the metadata, owned by the builder.
 * @param[in] stream The CUDA stream.
 * @return As attn_build(); ::ATTN_ERR_INVALID_ARGUMENT for a negative `draft_index`.
 * @par Thread safety
 * One call per builder at a time (else ::ATTN_ERR_BUSY).
 */
ATTN_API attn_error_t* attn_build_for_drafting(attn_builder_t* builder,
                                               const attn_common_metadata_t* common,
                                               int32_t draft_index, attn_metadata_t** out,
                                               attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_build_for_drafting(). */
typedef attn_error_t* (*PFN_attn_build_for_drafting)(attn_builder_t* builder,
                                                     const attn_common_metadata_t* common,
                                                     int32_t draft_index, attn_metadata_t** out,
                                                     attn_stream_t stream);

/** The inputs of vLLM's `use_cascade_attention`. Fill with ::ATTN_CASCADE_QUERY_INIT. */
typedef struct attn_cascade_query {
  size_t struct_size;          /**< ::ATTN_CASCADE_QUERY_STRUCT_SIZE. */
  int64_t common_prefix_len;   /**< Tokens shared by every request (>= 0). */
  const int32_t* query_lens;   /**< Host array of `num_reqs` query lengths. */
  int64_t num_reqs;            /**< Entries in `query_lens` (>= 0). */
  int32_t num_query_heads;     /**< Query heads (> 0). */
  int32_t num_kv_heads;        /**< KV heads (> 0). */
  int32_t use_alibi;           /**< Non-zero with ALiBi. */
  int32_t use_sliding_window;  /**< Non-zero with a sliding window. */
  int32_t use_local_attention; /**< Non-zero with chunked local attention. */
  int32_t num_sms;             /**< Streaming multiprocessors of the GPU (> 0). */
  int32_t dcp_world_size;      /**< DCP world size (>= 1). */
  void* extension;             /**< Reserved; must be NULL. */
} attn_cascade_query_t;

/** Size of ::attn_cascade_query_t in this header version. */
#define ATTN_CASCADE_QUERY_STRUCT_SIZE \
  (offsetof(attn_cascade_query_t, extension) + sizeof(void*))
/** Initializer: no prefix, no requests, DCP size 1 (heads and SMs must be set). */
#define ATTN_CASCADE_QUERY_INIT { ATTN_CASCADE_QUERY_STRUCT_SIZE, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 1, NULL }

/**
 * @brief Whether this builder would use cascade attention for a batch (vLLM's
 * `use_cascade_attention`): false for most backends; FLASH_ATTN applies vLLM's heuristic (no
 * cascade below a 256-token prefix, below 8 requests, with ALiBi, sliding window, local
 * attention or DCP; then a cost model of cascade against FlashDecoding).
 * @param[in] builder The builder.
 * @param[in] query The batch description.
 * @param[out] out Receives 1 (use cascade) or 0.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad field.
 * @par Thread safety
 * Safe to call concurrently with anything but attn_builder_destroy().
 */
ATTN_API attn_error_t* attn_use_cascade_attention(const attn_builder_t* builder,
                                                  const attn_cascade_query_t* query,
                                                  int32_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_use_cascade_attention(). */
typedef attn_error_t* (*PFN_attn_use_cascade_attention)(const attn_builder_t* builder,
                                                        const attn_cascade_query_t* query,
                                                        int32_t* out);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup metadata Metadata accessors
 *  @brief Named fields of built metadata, with vLLM's field names.
 *
 * Every backend has a fixed list of fields; a field is a tensor, an integer, a float, a boolean,
 * or None (an Optional that is unset for this batch). Metadata is immutable to readers: any
 * number of threads may read the same metadata while nothing rebuilds it.
 *  @{ */

/** What a field holds. */
typedef enum attn_field_kind {
  ATTN_FIELD_NONE = 0,   /**< Unset (None in vLLM). */
  ATTN_FIELD_TENSOR = 1, /**< A tensor view: `tensor`. */
  ATTN_FIELD_INT = 2,    /**< An integer: `int_value`. */
  ATTN_FIELD_FLOAT = 3,  /**< A float: `float_value`. */
  ATTN_FIELD_BOOL = 4    /**< A boolean: `int_value` is 0 or 1. */
} attn_field_kind_t;

/** One field, filled by the library. Set `struct_size` (::ATTN_FIELD_STRUCT_SIZE) before the
 *  call; the library writes only what fits. */
typedef struct attn_field {
  size_t struct_size;          /**< Set by the caller: ::ATTN_FIELD_STRUCT_SIZE. */
  const char* name;            /**< Field name, valid as long as the metadata. */
  int32_t kind;                /**< One of ::attn_field_kind_t. */
  const attn_tensor_t* tensor; /**< For ::ATTN_FIELD_TENSOR: the view, valid as long as the
                                    metadata; else NULL. Its `strides` are always set. */
  int64_t int_value;           /**< For ::ATTN_FIELD_INT and ::ATTN_FIELD_BOOL. */
  double float_value;          /**< For ::ATTN_FIELD_FLOAT. */
} attn_field_t;

/** Size of ::attn_field_t in this header version. */
#define ATTN_FIELD_STRUCT_SIZE (offsetof(attn_field_t, float_value) + sizeof(double))
/** Initializer for an output field. */
#define ATTN_FIELD_INIT { ATTN_FIELD_STRUCT_SIZE, NULL, ATTN_FIELD_NONE, NULL, 0, 0.0 }

/**
 * @brief The kind of metadata: the backend name that built it, or "common" for the results of
 * batch utilities such as attn_common_metadata_unpadded().
 * @param[in] metadata The metadata.
 * @return The kind, valid as long as the metadata; "" for NULL.
 */
ATTN_API const char* attn_metadata_kind(const attn_metadata_t* metadata) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_kind(). */
typedef const char* (*PFN_attn_metadata_kind)(const attn_metadata_t* metadata);

/**
 * @brief The number of fields.
 * @param[in] metadata The metadata.
 * @return The count; 0 for NULL.
 */
ATTN_API size_t attn_metadata_field_count(const attn_metadata_t* metadata) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_field_count(). */
typedef size_t (*PFN_attn_metadata_field_count)(const attn_metadata_t* metadata);

/**
 * @brief A field by index.
 * @param[in] metadata The metadata.
 * @param[in] index 0 <= index < attn_metadata_field_count().
 * @param[in,out] out A field whose `struct_size` is set; filled on success.
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND when `index` is out of range;
 *         ::ATTN_ERR_INVALID_ARGUMENT for NULL arguments or a too-small `out->struct_size`.
 */
ATTN_API attn_error_t* attn_metadata_field(const attn_metadata_t* metadata, size_t index,
                                           attn_field_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_field(). */
typedef attn_error_t* (*PFN_attn_metadata_field)(const attn_metadata_t* metadata, size_t index,
                                                 attn_field_t* out);

/**
 * @brief A field by name.
 * @param[in] metadata The metadata.
 * @param[in] name A field name such as "query_start_loc".
 * @param[in,out] out A field whose `struct_size` is set; filled on success.
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND naming the field and the metadata kind.
 */
ATTN_API attn_error_t* attn_metadata_get(const attn_metadata_t* metadata, const char* name,
                                         attn_field_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_get(). */
typedef attn_error_t* (*PFN_attn_metadata_get)(const attn_metadata_t* metadata, const char* name,
                                               attn_field_t* out);

/**
 * @brief A tensor field by name.
 * @param[in] metadata The metadata.
 * @param[in] name The field name.
 * @param[out] out Receives the view (valid as long as the metadata), or NULL when the field
 *             is None.
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND; ::ATTN_ERR_INVALID_ARGUMENT when the field is
 *         a scalar.
 */
ATTN_API attn_error_t* attn_metadata_get_tensor(const attn_metadata_t* metadata,
                                                const char* name,
                                                const attn_tensor_t** out) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_get_tensor(). */
typedef attn_error_t* (*PFN_attn_metadata_get_tensor)(const attn_metadata_t* metadata,
                                                      const char* name, const attn_tensor_t** out);

/**
 * @brief An integer or boolean field by name.
 * @param[in] metadata The metadata.
 * @param[in] name The field name.
 * @param[out] out Receives the value.
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND; ::ATTN_ERR_INVALID_ARGUMENT when the field is
 *         None, a tensor or a float.
 */
ATTN_API attn_error_t* attn_metadata_get_int(const attn_metadata_t* metadata, const char* name,
                                             int64_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_get_int(). */
typedef attn_error_t* (*PFN_attn_metadata_get_int)(const attn_metadata_t* metadata,
                                                   const char* name, int64_t* out);

/**
 * @brief Copies metadata so that it outlives the next build ("keep").
 *
 * Tensors that live in the builder's persistent buffers are copied into memory owned by the
 * clone (allocated with the builder's allocator on the same device; on a CUDA device the copy
 * synchronizes the device). Tensors that view the caller's inputs keep viewing them.
 * @param[in] metadata The metadata.
 * @param[out] out Receives the clone, owned by the caller; release with attn_metadata_destroy().
 * @return NULL on success; ::ATTN_ERR_OUT_OF_MEMORY; ::ATTN_ERR_CUDA.
 * @par Thread safety
 * May run while other threads read `metadata`, not while its builder rebuilds it.
 */
ATTN_API attn_error_t* attn_metadata_clone(const attn_metadata_t* metadata,
                                           attn_metadata_t** out) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_clone(). */
typedef attn_error_t* (*PFN_attn_metadata_clone)(const attn_metadata_t* metadata,
                                                 attn_metadata_t** out);

/**
 * @brief Releases metadata owned by the caller (from attn_metadata_clone() or a batch utility).
 * @param[in] metadata The metadata; NULL, and metadata owned by a builder, are ignored.
 */
ATTN_API void attn_metadata_destroy(attn_metadata_t* metadata) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_destroy(). */
typedef void (*PFN_attn_metadata_destroy)(attn_metadata_t* metadata);

/**
 * @brief Views metadata of kind "common" as an input batch for a build.
 * @param[in] metadata Metadata of kind "common".
 * @param[in,out] out A struct whose `struct_size` is set; its tensor pointers point into
 *                `metadata` and are valid as long as it.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT when the kind is not "common".
 */
ATTN_API attn_error_t* attn_metadata_to_common(const attn_metadata_t* metadata,
                                               attn_common_metadata_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_metadata_to_common(). */
typedef attn_error_t* (*PFN_attn_metadata_to_common)(const attn_metadata_t* metadata,
                                                     attn_common_metadata_t* out);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup backends Backend registry
 *  @brief The backends this library (and its loaded plugins) can build for, queried without a
 *  builder. Built-in backends come first, in a fixed order (FLASH_ATTN, FLASHINFER,
 *  TRITON_ATTN, FLEX_ATTENTION, TREE_ATTN, CPU_ATTN, then the families: the MLA backends
 *  FLASHMLA, FLASH_ATTN_MLA, CUTLASS_MLA, FLASHINFER_MLA, TRITON_MLA, which build for
 *  ::ATTN_KV_MLA specs only); plugin backends follow in load order.
 *  Indices shift when a plugin is unloaded.
 *
 * vLLM's builder wrappers apply to every backend and are asked for by the spec and the config,
 * not by name: an ::ATTN_KV_CHUNKED_LOCAL_ATTENTION spec builds on the local-attention virtual
 * batches (CUDA graph support NEVER), an ::ATTN_KV_CROSS_ATTENTION spec builds cross attention
 * over `encoder_seq_lens`, an ::ATTN_KV_ENCODER_ONLY spec builds with causal = false, and
 * `config->kv_sharing_fast_prefill` wraps all of these in KV-sharing fast prefill. The
 * metadata kind names the wrappers ("FastPrefillChunkedLocalAttention_8192_FLASH_ATTN"); its
 * fields are the backend's, then the wrappers' (docs/backends/wrappers.md).
 *  @{ */

/**
 * @brief The number of registered backends (built-in and plugins).
 * @return The count.
 * @par Thread safety
 * Safe to call from any thread; a concurrent plugin load or unload may change the answer.
 */
ATTN_API size_t attn_backend_count(void) ATTN_NOEXCEPT;
/** Pointer type of attn_backend_count(). */
typedef size_t (*PFN_attn_backend_count)(void);

/**
 * @brief The name of a registered backend, as vLLM's backend enum spells it ("FLASH_ATTN").
 * @param[in] index 0 <= index < attn_backend_count().
 * @param[out] out Receives the name: static for built-in backends; for a plugin's backends,
 *             valid until that plugin is unloaded.
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND when `index` is out of range.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_backend_name(size_t index, const char** out) ATTN_NOEXCEPT;
/** Pointer type of attn_backend_name(). */
typedef attn_error_t* (*PFN_attn_backend_name)(size_t index, const char** out);

/**
 * @brief The CUDA graph support a backend's builder would have for this spec and config,
 * without creating one (vLLM's classmethod `get_cudagraph_support`).
 * @param[in] backend A registered backend name, or one of its vLLM names (as attn_builder_create()).
 * @param[in] kv_cache_spec The KV cache spec.
 * @param[in] config The builder config.
 * @param[out] out_level Receives one of ::attn_cudagraph_support_t.
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND for an unknown backend;
 *         ::ATTN_ERR_INVALID_ARGUMENT for a malformed spec or config.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_backend_cudagraph_support(const char* backend,
                                                      const attn_kv_cache_spec_t* kv_cache_spec,
                                                      const attn_builder_config_t* config,
                                                      int32_t* out_level) ATTN_NOEXCEPT;
/** Pointer type of attn_backend_cudagraph_support(). */
typedef attn_error_t* (*PFN_attn_backend_cudagraph_support)(
    const char* backend, const attn_kv_cache_spec_t* kv_cache_spec,
    const attn_builder_config_t* config, int32_t* out_level);

/** Where a registered backend comes from (ABI 1.3). */
typedef enum attn_backend_origin {
  ATTN_BACKEND_BUILTIN = 0, /**< Compiled into libattn. */
  ATTN_BACKEND_PLUGIN = 1   /**< Registered by a plugin loaded with attn_plugin_load(). */
} attn_backend_origin_t;

/** What a backend is, answered without a builder (ABI 1.3). The caller sets `struct_size`
 *  (::ATTN_BACKEND_INFO_INIT) and attn_backend_info() fills the rest, writing no more than
 *  `struct_size` bytes. The strings are owned by the library: static for built-in backends, for
 *  a plugin's backends valid until that plugin is unloaded. */
typedef struct attn_backend_info_s {
  size_t struct_size;         /**< Set by the caller: ::ATTN_BACKEND_INFO_STRUCT_SIZE. */
  const char* name;           /**< As attn_backend_name() gives it ("FLASH_ATTN"). */
  uint32_t kv_cache_kinds;    /**< The KV cache spec kinds it builds for: bit k set when it
                                   accepts the ::attn_kv_cache_kind_t whose value is k
                                   (`1u << ATTN_KV_MLA`). Wrapper kinds (chunked local, cross,
                                   encoder-only) are included when the backend builds under
                                   those wrappers. */
  int32_t origin;             /**< One of ::attn_backend_origin_t. */
  const char* vllm_release;   /**< The vLLM release whose builder it matches ("0.33.0"); "" when
                                   unknown, "plugin" for a plugin's backends. */
  void* extension;            /**< Written as NULL; reserved. */
  /* ABI 1.7 */
  const char* vllm_names;     /**< Every name vLLM 0.33.0 uses for this backend, comma-separated,
                                   no spaces: its member of vLLM's backend enums and the
                                   `get_name()` of its class and of the classes that build with its
                                   builder ("MAMBA2,MAMBA2_ATTN", "LINEAR_ATTN,LINEAR"). Each one
                                   is accepted wherever a backend name is (attn_builder_create(),
                                   attn_builder_workspace_size(),
                                   attn_backend_cudagraph_support()). "" when vLLM 0.33.0 has no
                                   name of its own for the backend (TREE_ATTN; the compressors and
                                   sparse SWA subclasses, which vLLM names alike) and for a
                                   plugin's backends. Owned by the library, as `name`. Not
                                   written when `struct_size` is
                                   ::ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 (a library older than 1.7
                                   leaves it as the caller set it: NULL from the INIT macro). */
} attn_backend_info_t;

/** Size of ::attn_backend_info_t in this header version (ABI 1.7). */
#define ATTN_BACKEND_INFO_STRUCT_SIZE \
  (offsetof(attn_backend_info_t, vllm_names) + sizeof(const char*))
/** Size of ::attn_backend_info_t in ABI 1.3 to 1.6 (up to `extension`), the smallest accepted. */
#define ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 \
  (offsetof(attn_backend_info_t, extension) + sizeof(void*))
/** Initializer: sets `struct_size`; the library fills the rest. */
#define ATTN_BACKEND_INFO_INIT { ATTN_BACKEND_INFO_STRUCT_SIZE, NULL, 0u, 0, NULL, NULL, NULL }

/**
 * @brief Describes a registered backend: its name, the KV cache spec kinds it accepts, whether
 * it is built in or from a plugin, and the vLLM release it matches (ABI 1.3); since ABI 1.7 also
 * the names vLLM uses for it (`vllm_names`).
 *
 * Enumerate with `for (i = 0; i < attn_backend_count(); ++i)` and pick a spec per accepted
 * kind, instead of keeping a list of backend names.
 * @param[in] index 0 <= index < attn_backend_count().
 * @param[in,out] out A struct whose `struct_size` the caller has set (::ATTN_BACKEND_INFO_INIT);
 *                the library writes at most `struct_size` bytes and leaves `struct_size` as it
 *                was. The strings it receives are owned by the library (see
 *                ::attn_backend_info_t).
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND when `index` is out of range;
 *         ::ATTN_ERR_INVALID_ARGUMENT when `out` is NULL or its `struct_size` is smaller than
 *         ::ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 or lies between a released size and the next.
 *         On failure `*out` is left untouched.
 * @par Thread safety
 * Safe to call from any thread; a concurrent plugin unload may shift the indices.
 */
ATTN_API attn_error_t* attn_backend_info(size_t index, attn_backend_info_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_backend_info(). */
typedef attn_error_t* (*PFN_attn_backend_info)(size_t index, attn_backend_info_t* out);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup tensors Tensors and devices
 *  @brief Borrowed tensor views with DLPack's `DLTensor` layout.
 *
 * libattn declares its own layout-identical mirror of DLPack's `DLDevice`, `DLDataType` and
 * `DLTensor` instead of including `dlpack/dlpack.h`, so that this header needs nothing beyond
 * the C standard library (Rust, Go, Python and closed runtimes may not have dlpack.h). The
 * layout is that of every DLPack release from 0.6 to 1.x; a test compiles against Debian's
 * dlpack.h and checks every offset and size. A `DLTensor*` can be passed where a
 * `const attn_tensor_t*` is expected with a cast.
 *  @{ */

/** Device types, numbered as DLPack's `DLDeviceType`. */
typedef enum attn_device_type {
  ATTN_DEVICE_CPU = 1,           /**< Host memory (`kDLCPU`). */
  ATTN_DEVICE_CUDA = 2,          /**< CUDA device memory (`kDLCUDA`). */
  ATTN_DEVICE_CUDA_HOST = 3,     /**< Pinned host memory (`kDLCUDAHost`); host-readable. */
  ATTN_DEVICE_CUDA_MANAGED = 13  /**< CUDA managed memory (`kDLCUDAManaged`); both sides. */
} attn_device_type_t;

/** Data type codes, numbered as DLPack's `DLDataTypeCode`. */
typedef enum attn_dtype_code {
  ATTN_DTYPE_INT = 0,    /**< Signed integer (`kDLInt`). */
  ATTN_DTYPE_UINT = 1,   /**< Unsigned integer (`kDLUInt`). */
  ATTN_DTYPE_FLOAT = 2,  /**< IEEE float (`kDLFloat`). */
  ATTN_DTYPE_BFLOAT = 4, /**< bfloat16 (`kDLBfloat`). */
  ATTN_DTYPE_BOOL = 6    /**< Boolean (`kDLBool`). */
} attn_dtype_code_t;

/** A device: layout of DLPack's `DLDevice`. */
typedef struct attn_device {
  int32_t device_type; /**< One of ::attn_device_type_t. */
  int32_t device_id;   /**< Device ordinal; 0 for the host. */
} attn_device_t;

/** An element type: layout of DLPack's `DLDataType`. int32 is {ATTN_DTYPE_INT, 32, 1}. */
typedef struct attn_dtype {
  uint8_t code;   /**< One of ::attn_dtype_code_t. */
  uint8_t bits;   /**< Bits per lane: 8, 16, 32, 64. */
  uint16_t lanes; /**< Lanes; 1 for scalars. */
} attn_dtype_t;

/**
 * A borrowed n-dimensional view: layout of DLPack's `DLTensor`.
 *
 * Every view an entry point receives (and every view a plugin hands back) is refused with
 * ::ATTN_ERR_INVALID_ARGUMENT, naming the argument, before any address is computed from it when:
 * `ndim` is outside 0..8 or `shape` is NULL with `ndim` > 0; a size or stride is negative; the
 * element type is not whole bytes; its byte extent (`byte_offset` + sum over dimensions of
 * (shape - 1) * stride * itemsize + itemsize) exceeds 2^62 bytes or `data` + extent wraps the
 * address space; `data` is NULL while the view has elements; `data` + `byte_offset` is not
 * aligned to the element size (1, 2, 4, 8 or 16 bytes). A view whose memory is smaller than its
 * declared extent is the caller's bug: no library can detect it.
 */
struct attn_tensor {
  void* data;              /**< Base address (host or device); `byte_offset` is added to it. */
  attn_device_t device;    /**< Where `data` lives. */
  int32_t ndim;            /**< Number of dimensions (at most 8). */
  attn_dtype_t dtype;      /**< Element type. */
  int64_t* shape;          /**< `ndim` sizes. */
  int64_t* strides;        /**< `ndim` strides in elements, or NULL for compact row-major
                              (ignored for a view with no elements). */
  uint64_t byte_offset;    /**< Bytes from `data` to the first element. */
};

/**
 * @brief The number of devices of a type that this library can use.
 * @param[in] device_type ::ATTN_DEVICE_CPU (always 1) or ::ATTN_DEVICE_CUDA.
 * @param[out] out Receives the count.
 * @return NULL on success (a count of 0 is a success: CUDA is compiled in, no GPU is visible);
 *         ::ATTN_ERR_UNSUPPORTED when the library was built without CUDA; ::ATTN_ERR_CUDA with
 *         the runtime's text when the driver cannot be queried.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_device_count(int32_t device_type, int32_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_device_count(). */
typedef attn_error_t* (*PFN_attn_device_count)(int32_t device_type, int32_t* out);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup enums Enumerations mirrored from vLLM
 *  @{ */

/** CUDA graph support of a builder, with vLLM's `AttentionCGSupport` numbers. Cascade attention
 *  is never CUDA-graph supported, whatever the level. */
typedef enum attn_cudagraph_support {
  ATTN_CG_NEVER = 0,                       /**< No CUDA graph support. */
  ATTN_CG_UNIFORM_SINGLE_TOKEN_DECODE = 1, /**< Only batches of query_len == 1 decodes. */
  ATTN_CG_UNIFORM_BATCH = 2,               /**< Batches whose query lengths are all equal. */
  ATTN_CG_ALWAYS = 3                       /**< Any batch, mixed prefill/decode included. */
} attn_cudagraph_support_t;

/** ABI 1.4. FLASHINFER's `kv_cache_layout` metadata field: the FlashInfer layout string of
 *  vLLM's `KVCacheLayout` (get_flashinfer_layout_string): LBNHC and BLNHC are "NHD"; LBHNC,
 *  BLHNC and BHLNC are "HND". */
typedef enum attn_kv_cache_layout {
  ATTN_KV_CACHE_LAYOUT_NHD = 0, /**< "NHD": block, token, head, dim (vLLM's default). */
  ATTN_KV_CACHE_LAYOUT_HND = 1  /**< "HND": block, head, token, dim (compute capability 10.x). */
} attn_kv_cache_layout_t;

/** ABI 1.4. FLASHINFER's `decode_kernel` metadata field: vLLM 0.33's `FlashInferDecodeKernel`
 *  of a `FlashInferTrtllmAPIDecode` (the field is None for FlashInfer-native decode). */
typedef enum attn_flashinfer_decode_kernel {
  ATTN_FLASHINFER_DECODE_XQA = 0,       /**< "xqa": compute capability 9.0 and 12.x. */
  ATTN_FLASHINFER_DECODE_TRTLLM_GEN = 1 /**< "trtllm-gen": compute capability 10.x. */
} attn_flashinfer_decode_kernel_t;

/** The GDN prefill kernel vLLM 0.33 runs (`_resolve_gdn_prefill_backend`, from
 *  `additional_config["gdn_prefill_backend"]` and the platform): it decides whether GDN_ATTN
 *  returns FLA's `chunk_indices` / `chunk_offsets`. */
typedef enum attn_gdn_prefill_backend {
  ATTN_GDN_PREFILL_AUTO = 0,      /**< vLLM's "auto" as libattn can resolve it: FlashInfer on
                                       compute capability 9.0, else Triton. */
  ATTN_GDN_PREFILL_TRITON = 1,    /**< Triton/FLA: chunk_indices and chunk_offsets. */
  ATTN_GDN_PREFILL_FLASHINFER = 2 /**< FlashInfer: neither (its kernel reads cu_seqlens). */
} attn_gdn_prefill_backend_t;

/** The MLA prefill backend (vLLM 0.33's `attention_config.mla_prefill_backend`, an
 *  `MLAPrefillBackendEnum` member, or None for its automatic choice). The MLA builders report the
 *  backend in `prefill_prefill_backend` (MLAPrefillBackendEnum's order: FLASH_ATTN = 0, ...),
 *  which is this value minus one. ABI 1.7. */
typedef enum attn_mla_prefill_backend {
  ATTN_MLA_PREFILL_AUTO = 0,          /**< None: vLLM's automatic choice (TRTLLM_RAGGED on 10.x
                                           for (192, 64, 256) dimensions, else FLASH_ATTN). */
  ATTN_MLA_PREFILL_FLASH_ATTN = 1,    /**< FLASH_ATTN. */
  ATTN_MLA_PREFILL_FLASHINFER = 2,    /**< FLASHINFER (10.x, dimensions (128, 64, 128)). */
  ATTN_MLA_PREFILL_TRTLLM_RAGGED = 3, /**< TRTLLM_RAGGED (10.x, (128, 64, 128) or
                                           (192, 64, 256)). */
  ATTN_MLA_PREFILL_TOKENSPEED_MLA = 4 /**< TOKENSPEED_MLA (10.x, (128, 64, 128)). */
} attn_mla_prefill_backend_t;

/** vLLM 0.33's `kernel_config.sparse_indexer_topk_backend` (SparseIndexerTopkBackend, in its
 *  Literal's order). DEEPSEEK_V41_SPARSE_INDEXER runs its top-k with DeepSelect and refuses
 *  every value but AUTO and DEEP_SELECT, as vLLM does. ABI 1.7. */
typedef enum attn_sparse_indexer_topk_backend {
  ATTN_SPARSE_INDEXER_TOPK_AUTO = 0,        /**< "auto" (default). */
  ATTN_SPARSE_INDEXER_TOPK_DEEP_SELECT = 1, /**< "deep_select". */
  ATTN_SPARSE_INDEXER_TOPK_COOPERATIVE = 2, /**< "cooperative". */
  ATTN_SPARSE_INDEXER_TOPK_PERSISTENT = 3,  /**< "persistent". */
  ATTN_SPARSE_INDEXER_TOPK_PER_ROW = 4,     /**< "per_row". */
  ATTN_SPARSE_INDEXER_TOPK_FLASHINFER = 5,  /**< "flashinfer". */
  ATTN_SPARSE_INDEXER_TOPK_TORCH = 6,       /**< "torch". */
  ATTN_SPARSE_INDEXER_TOPK_AITER = 7        /**< "aiter". */
} attn_sparse_indexer_topk_backend_t;

/** The runtime's CUDA graph mode (vLLM's `CUDAGraphMode`); FULL_DECODE_ONLY and
 *  FULL_AND_PIECEWISE, tuples in vLLM, get numbers of their own here. */
typedef enum attn_cudagraph_mode {
  ATTN_CUDAGRAPH_MODE_NONE = 0,              /**< No CUDA graphs. */
  ATTN_CUDAGRAPH_MODE_PIECEWISE = 1,         /**< Piecewise graphs; attention runs eagerly. */
  ATTN_CUDAGRAPH_MODE_FULL = 2,              /**< Full graphs. */
  ATTN_CUDAGRAPH_MODE_FULL_DECODE_ONLY = 3,  /**< Full graphs for uniform decode batches only. */
  ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE = 4 /**< Full for decodes, piecewise otherwise
                                                  (vLLM's default). */
} attn_cudagraph_mode_t;

/** The kind of a KV cache spec (vLLM's `KVCacheSpec` subclasses). */
typedef enum attn_kv_cache_kind {
  ATTN_KV_FULL_ATTENTION = 0,          /**< `FullAttentionSpec`. */
  ATTN_KV_SLIDING_WINDOW = 1,          /**< `SlidingWindowSpec`; needs `sliding_window`. */
  ATTN_KV_CHUNKED_LOCAL_ATTENTION = 2, /**< `ChunkedLocalAttentionSpec`; needs
                                            `attention_chunk_size`. */
  ATTN_KV_MLA = 3,                     /**< `MLAAttentionSpec`. */
  ATTN_KV_CROSS_ATTENTION = 4,         /**< `CrossAttentionSpec`. */
  ATTN_KV_ENCODER_ONLY = 5,            /**< `EncoderOnlyAttentionSpec`. */
  ATTN_KV_MAMBA = 6,                   /**< `MambaSpec`. */
  ATTN_KV_CIRCULAR_BUFFER = 7          /**< ABI 1.7: `CircularBufferSpec`: one block per request
                                            holding a ring of `block_size` rows (the block table
                                            needs one column, whatever the seq_lens). A library
                                            older than 1.7 refuses the kind. */
} attn_kv_cache_kind_t;

/** KV cache element types (a spec's `dtype`, a config's `cache_dtype`). */
typedef enum attn_kv_dtype {
  ATTN_KV_DTYPE_AUTO = 0,     /**< Config only: the cache uses the spec's dtype ("auto"). */
  ATTN_KV_DTYPE_FLOAT16 = 1,  /**< float16. */
  ATTN_KV_DTYPE_BFLOAT16 = 2, /**< bfloat16. */
  ATTN_KV_DTYPE_FLOAT32 = 3,  /**< float32. */
  ATTN_KV_DTYPE_FP8_E4M3 = 4, /**< fp8 e4m3 ("fp8", "fp8_e4m3"). */
  ATTN_KV_DTYPE_FP8_E5M2 = 5, /**< fp8 e5m2 ("fp8_e5m2"). */
  ATTN_KV_DTYPE_UINT8 = 6     /**< uint8 (quantized caches stored as bytes). */
} attn_kv_dtype_t;

/** Attention types (vLLM's `AttentionType`). */
typedef enum attn_attention_type {
  ATTN_TYPE_DECODER = 0,        /**< Decoder self-attention. */
  ATTN_TYPE_ENCODER = 1,        /**< Encoder self-attention of an encoder-decoder model. */
  ATTN_TYPE_ENCODER_ONLY = 2,   /**< Encoder-only model attention (bidirectional). */
  ATTN_TYPE_ENCODER_DECODER = 3 /**< Decoder queries against encoder keys/values. */
} attn_attention_type_t;

/** How much a build validates (`attn_builder_config_t.validate`).
 *
 * ::ATTN_VALIDATE_TRUSTED (ABI 1.7) is for a runtime that trusts its scheduler, as vLLM's model
 * runner trusts its own: the build checks the struct, the scalars (counts >= 0 and within the
 * config's limits), and every view's shape, dtype, device, byte extent and alignment, all O(1) in
 * the batch, and not the values inside the tensors. What it leaves to the caller: query_start_loc
 * non-decreasing from 0 and ending at most at num_actual_tokens, each query <= max_query_len,
 * query_len <= seq_len <= max_seq_len (and max_model_len), the block table wide enough for each
 * seq_len, the mirrors equal to their device tensors, and the ordering and ranges of the optional
 * per-request tensors. Wrong values give wrong metadata (garbage in, garbage out) but never a
 * crash or an access outside the views the caller passed: a backend whose build reads values to
 * index memory (cascade, DCP, prefix-LM ranges, the split-dependent backends such as FLASHINFER,
 * the MLA and Mamba families) still checks the values it reads, so only the builds whose result
 * is views of the inputs plus scalars (FLASH_ATTN and TRITON_ATTN without cascade, DCP or
 * prefix-LM ranges) skip them and cost O(1). A library older than 1.7 refuses the value with
 * ::ATTN_ERR_INVALID_ARGUMENT ("config->validate=2 is not ..."): that is how a caller detects
 * support (or ATTN_CHECK_VERSION() with minor 7). docs/architecture.md, "Validation levels". */
typedef enum attn_validate_mode {
  ATTN_VALIDATE_HOST = 0,   /**< Default: shapes, dtypes, devices, and values read from host
                                 memory (host tensors and `*_cpu` mirrors). Never syncs. */
  ATTN_VALIDATE_FULL = 1,   /**< Also copies device tensors to the host and checks them against
                                 their mirrors. Synchronizes: for debugging only. */
  ATTN_VALIDATE_TRUSTED = 2 /**< ABI 1.7: shapes, dtypes, devices, byte extents, alignment and
                                 scalars only, O(1) in the batch; values are the caller's
                                 responsibility (never a crash; see above). */
} attn_validate_mode_t;

/** The kernel ISA of CPU_ATTN (vLLM's `_get_attn_isa` result; ABI 1.1). */
typedef enum attn_cpu_isa {
  ATTN_CPU_ISA_DETECT = 0, /**< Config only: decide from the host CPU as vLLM does. */
  ATTN_CPU_ISA_AMX = 1,    /**< "amx": x86 AMX tiles (bfloat16, block_size % 32 == 0). */
  ATTN_CPU_ISA_VEC = 2,    /**< "vec": x86 AVX-512/AVX2 (block_size % 32 == 0). */
  ATTN_CPU_ISA_VEC16 = 3,  /**< "vec16": head_size % 32 != 0, or block_size % 32 != 0. */
  ATTN_CPU_ISA_NEON = 4,   /**< "neon": Arm. */
  ATTN_CPU_ISA_VXE = 5,    /**< "vxe": s390x. */
  ATTN_CPU_ISA_VSX = 6,    /**< "vsx": POWER. */
  ATTN_CPU_ISA_RVV = 7     /**< "rvv": RISC-V with the vector extension. */
} attn_cpu_isa_t;

/** The state-space layer a ::ATTN_KV_MAMBA spec describes (vLLM's `MambaSpec.mamba_type`, which
 *  vLLM maps to a backend with `MAMBA_TYPE_TO_BACKEND_MAP`; ABI 1.2). */
typedef enum attn_mamba_type {
  ATTN_MAMBA_TYPE_AUTO = 0,             /**< Unspecified: any Mamba-family backend accepts it. */
  ATTN_MAMBA_TYPE_MAMBA1 = 1,           /**< "mamba1": backend MAMBA1. */
  ATTN_MAMBA_TYPE_MAMBA2 = 2,           /**< "mamba2": backend MAMBA2. */
  ATTN_MAMBA_TYPE_SHORT_CONV = 3,       /**< "short_conv": backend SHORT_CONV. */
  ATTN_MAMBA_TYPE_LINEAR_ATTENTION = 4, /**< "linear_attention": backend LINEAR_ATTN. */
  ATTN_MAMBA_TYPE_GDN_ATTENTION = 5     /**< "gdn_attention": backend GDN_ATTN. */
} attn_mamba_type_t;

/** Prefix caching of Mamba states (vLLM's `cache_config.mamba_cache_mode`; ABI 1.2). */
typedef enum attn_mamba_cache_mode {
  ATTN_MAMBA_CACHE_MODE_NONE = 0,  /**< "none": one state per request; the block table has
                                        1 + num_speculative_blocks columns. */
  ATTN_MAMBA_CACHE_MODE_ALL = 1,   /**< "all": removed in vLLM 0.33; MAMBA2, MAMBA1, SHORT_CONV
                                        and LINEAR_ATTN refuse it (ATTN_ERR_UNSUPPORTED). */
  ATTN_MAMBA_CACHE_MODE_ALIGN = 2  /**< "align": states kept at block boundaries; the builders
                                        gather the 1 + num_speculative_blocks columns from the
                                        block of the last token on. */
} attn_mamba_cache_mode_t;

/** Value of attn_builder_reorder_batch_threshold() for builders that do not reorder. */
#define ATTN_NO_REORDER 0

/** Slot id of padded entries in slot mappings (vLLM's `PAD_SLOT_ID`). */
#define ATTN_PAD_SLOT_ID (-1)

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup config Configuration structs
 *  @brief What a builder is built for: the KV cache spec, the engine config, the allocator.
 *  @{ */

/** A KV cache spec (vLLM's `AttentionSpec` and subclasses). Fill with ::ATTN_KV_CACHE_SPEC_INIT. */
struct attn_kv_cache_spec {
  size_t struct_size;           /**< ::ATTN_KV_CACHE_SPEC_STRUCT_SIZE. */
  int32_t kind;                 /**< One of ::attn_kv_cache_kind_t. */
  int32_t block_size;           /**< Tokens per KV cache block (> 0). */
  int32_t num_kv_heads;         /**< KV heads per rank (> 0). */
  int32_t head_size;            /**< Head dimension (> 0). */
  int32_t dtype;                /**< One of ::attn_kv_dtype_t except ::ATTN_KV_DTYPE_AUTO. */
  int32_t sliding_window;       /**< Window in tokens for ::ATTN_KV_SLIDING_WINDOW; else 0. */
  int32_t attention_chunk_size; /**< Chunk for ::ATTN_KV_CHUNKED_LOCAL_ATTENTION; else 0. */
  void* extension;              /**< Reserved; must be NULL. */
  /* ---- ABI 1.2: read only when struct_size covers them; older callers get the defaults.
   *      MambaSpec's parameters, read by the Mamba-family backends (MAMBA2, MAMBA1, SHORT_CONV,
   *      LINEAR_ATTN, GDN_ATTN) for ::ATTN_KV_MAMBA specs and range-checked but ignored for
   *      other kinds. A Mamba spec's `block_size` is MambaSpec's (vLLM's mamba_block_size);
   *      MambaSpec has no heads, so `num_kv_heads` and `head_size` only need to be positive
   *      (1 will do) and its `dtype` is not read. ---- */
  int32_t mamba_type;           /**< One of ::attn_mamba_type_t (vLLM's `MambaSpec.mamba_type`);
                                     default ::ATTN_MAMBA_TYPE_AUTO. A backend refuses a spec
                                     whose type vLLM maps to another backend. */
  int32_t mamba_chunk_size;     /**< vLLM's `model_config.get_mamba_chunk_size()`: the SSD scan
                                     chunk; MAMBA2 requires it (> 0); default 0 (None). */
  int32_t mamba_cache_mode;     /**< One of ::attn_mamba_cache_mode_t (vLLM's
                                     `cache_config.mamba_cache_mode`); default NONE. */
  int32_t num_speculative_blocks; /**< vLLM's `MambaSpec.num_speculative_blocks` (0 to 65536;
                                       the "align" mode gathers 1 + this many columns); default 0. */
  /* ---- ABI 1.6: vLLM 0.33's MambaSpec additions, read by MAMBA2, MAMBA1 and SHORT_CONV (all 0
   *      by default: no prefill checkpoints, no ReplaySSM state). ---- */
  int32_t num_prefill_checkpoint_blocks; /**< `MambaSpec.num_prefill_checkpoint_blocks` (0 to
                                              65536): with "align" mode and the config's
                                              `hash_block_size` and `cache_hit_alignment_tokens`,
                                              MAMBA2 places prefill checkpoints. */
  int32_t prefill_checkpoint_alignment; /**< `MambaSpec.prefill_checkpoint_alignment` (> 0), or
                                             0 (default) = None: no checkpoint is valid. */
  int32_t mamba_replayssm_ngroups; /**< `MambaSpec.shapes[4][0]`: the groups of the ReplaySSM B
                                        cache (Triton ReplaySSM's `bc_pre_scratch` rows); needed
                                        (> 0) with `config->use_replayssm` on Triton. */
  int32_t mamba_num_heads;         /**< `MambaSpec.shapes[2][0]`: the heads of the ReplaySSM x
                                        cache (FlashInfer ReplaySSM's scratch); needed (> 0) with
                                        `config->use_replayssm` on FlashInfer. */
  /* ---- ABI 1.7 (sparse MLA: DeepSeek V3.2's lightning-indexer layers): read by the sparse MLA
   *      backends (FLASHMLA_SPARSE) for ::ATTN_KV_MLA specs, range-checked for every kind. ---- */
  int32_t index_topk;           /**< The model's `hf_text_config.index_topk`: the tokens each
                                     query attends (vLLM's `SparseMLACommonMetadata.topk_tokens`);
                                     0 (default) = 2048, DeepSeek V3.2's value and the
                                     dataclass's default. */
  int32_t topk_buffer_width;    /**< `MLAAttentionSpec.topk_buffer_width`: the width of the
                                     model's top-k indices buffer, padding included; 0 (default)
                                     = None (= `index_topk`). */
  /* ---- ABI 1.7 (attention variants: static sinks and diff-KV): vLLM 0.33's
   *      SinkFullAttentionSpec.sink_len and AttentionSpec.head_size_v (both 0 by default: no
   *      sink, value heads as wide as the key heads). ---- */
  int32_t sink_len;    /**< `SinkFullAttentionSpec.sink_len`: static sink tokens a StaticSink
                            layer keeps in KV cache blocks 1..sink_len/block_size; > 0 wraps the
                            backend's builder in the StaticSink wrapper (::ATTN_KV_FULL_ATTENTION
                            specs only, a multiple of `block_size`); 0 (default) = None. */
  int32_t head_size_v; /**< `AttentionSpec.head_size_v`: the value head dimension; 0 (default)
                            = `head_size`. TRITON_ATTN_DIFFKV sizes its scratch by it; other
                            backends' metadata does not depend on it (as in vLLM). */
  /* ---- ABI 1.7 (DeepSeek V4 / V4.1 sparse MLA): vLLM 0.33's MLAAttentionSpec.tokens_per_state,
   *      read by the DeepSeek V4 sparse MLA backends (FLASHMLA_SPARSE_DSV4 and the others named
   *      in docs/backends/sparse_mla.md), range-checked for every kind. ---- */
  int32_t tokens_per_state; /**< `MLAAttentionSpec.tokens_per_state`: the layer's compress ratio
                                 (tokens folded into one cached state; the cache holds
                                 `block_size / tokens_per_state` states a block); 0 (default) = 1
                                 (no compression). Must divide `block_size`. */
  int32_t reserved_1_7;     /**< Reserved; must be 0 (keeps the struct free of tail padding). */
  /* ---- ABI 1.7 (Step5's CSA tail ring): the bound KV cache tensor's block stride, read by
   *      STEP5_CSA_TAIL_RING, range-checked (>= 0) for every kind. ---- */
  int32_t block_stride_bytes; /**< The bytes from one block to the next in the layer's bound KV
                                   cache tensor: vLLM's `kv_cache.stride(0)` times the element
                                   size, which vLLM's KV cache planner sets (the page rounded up
                                   to the spec's `block_stride_alignment`, or a whole
                                   block-outermost block holding other layers' pages too). 0
                                   (default) = the page size (blocks back to back).
                                   STEP5_CSA_TAIL_RING's rows per block are
                                   `block_stride_bytes / 1024` (vLLM's
                                   `Step5CSATailRing.rows_per_block`); it must be a multiple of
                                   1024 there. */
  int32_t reserved_1_7_b;     /**< Reserved; must be 0 (keeps the struct free of tail padding). */
};

/** Size of ::attn_kv_cache_spec_t in ABI 1.0 and 1.1 (the smallest `struct_size` accepted). */
#define ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_0 \
  (offsetof(attn_kv_cache_spec_t, extension) + sizeof(void*))
/** Size of ::attn_kv_cache_spec_t in ABI 1.2 to 1.5. */
#define ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_2 \
  (offsetof(attn_kv_cache_spec_t, num_speculative_blocks) + sizeof(int32_t))
/** Size of ::attn_kv_cache_spec_t in ABI 1.6. */
#define ATTN_KV_CACHE_SPEC_STRUCT_SIZE_1_6 \
  (offsetof(attn_kv_cache_spec_t, mamba_num_heads) + sizeof(int32_t))
/** Size of ::attn_kv_cache_spec_t in this header version. */
#define ATTN_KV_CACHE_SPEC_STRUCT_SIZE \
  (offsetof(attn_kv_cache_spec_t, reserved_1_7_b) + sizeof(int32_t))
/** Initializer: kind FULL_ATTENTION, dtype bfloat16, sizes 0 (which must be set), no Mamba
 *  parameters. */
#define ATTN_KV_CACHE_SPEC_INIT                                                                 \
  { ATTN_KV_CACHE_SPEC_STRUCT_SIZE, ATTN_KV_FULL_ATTENTION, 0, 0, 0, ATTN_KV_DTYPE_BFLOAT16, 0, \
    0, NULL, ATTN_MAMBA_TYPE_AUTO, 0, ATTN_MAMBA_CACHE_MODE_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
    0, 0 }

/** Hyperparameters of one attention layer (vLLM's `PerLayerParameters`). */
typedef struct attn_per_layer_params {
  size_t struct_size;          /**< ::ATTN_PER_LAYER_PARAMS_STRUCT_SIZE. */
  int32_t window_left;         /**< Left sliding-window size, or -1 for none. */
  int32_t has_logits_soft_cap; /**< Non-zero when `logits_soft_cap` is set (else None). */
  double logits_soft_cap;      /**< The soft cap when `has_logits_soft_cap`. */
  double sm_scale;             /**< Softmax scale. */
  int32_t has_sinks;           /**< Non-zero when the layer has attention sinks. */
  void* extension;             /**< Reserved; must be NULL. */
} attn_per_layer_params_t;

/** Size of ::attn_per_layer_params_t in this header version. */
#define ATTN_PER_LAYER_PARAMS_STRUCT_SIZE \
  (offsetof(attn_per_layer_params_t, extension) + sizeof(void*))
/** Initializer: no window, no soft cap, sm_scale 1, no sinks. */
#define ATTN_PER_LAYER_PARAMS_INIT { ATTN_PER_LAYER_PARAMS_STRUCT_SIZE, -1, 0, 0.0, 1.0, 0, NULL }

/**
 * @brief Allocation callback.
 * @param user_data The allocator's `user_data`.
 * @param bytes Bytes wanted (> 0).
 * @param alignment Alignment wanted (a power of two, at most 256).
 * @param device Where the memory must live (the builder's device).
 * @return The memory, or NULL on failure (libattn then reports ::ATTN_ERR_OUT_OF_MEMORY).
 */
typedef void* (*attn_alloc_fn)(void* user_data, size_t bytes, size_t alignment,
                               attn_device_t device);
/**
 * @brief Release callback, called once for every successful attn_alloc_fn() call.
 * @param user_data The allocator's `user_data`.
 * @param ptr A pointer the allocation callback returned.
 * @param bytes The size that was asked for.
 * @param device The device it was asked for.
 */
typedef void (*attn_free_fn)(void* user_data, void* ptr, size_t bytes, attn_device_t device);

/** A caller's allocator for a builder's persistent buffers. libattn calls it only inside
 *  attn_builder_create(), attn_builder_destroy(), attn_metadata_clone() and
 *  attn_metadata_destroy(), never inside a build. */
typedef struct attn_allocator {
  size_t struct_size; /**< ::ATTN_ALLOCATOR_STRUCT_SIZE. */
  attn_alloc_fn alloc; /**< Required. */
  attn_free_fn free;   /**< Required. */
  void* user_data;     /**< Passed to both callbacks. */
  void* extension;     /**< Reserved; must be NULL. */
} attn_allocator_t;

/** Size of ::attn_allocator_t in this header version. */
#define ATTN_ALLOCATOR_STRUCT_SIZE (offsetof(attn_allocator_t, extension) + sizeof(void*))
/** Initializer: no callbacks (which must be set). */
#define ATTN_ALLOCATOR_INIT { ATTN_ALLOCATOR_STRUCT_SIZE, NULL, NULL, NULL, NULL }

/**
 * The engine-side configuration of a builder: the parts of vLLM's `VllmConfig` that builders
 * read, the device, and memory options. Fill with ::ATTN_BUILDER_CONFIG_INIT, then set at least
 * `max_num_seqs`, `max_num_batched_tokens`, `max_model_len` and `num_attention_heads`.
 */
struct attn_builder_config {
  size_t struct_size;                /**< ::ATTN_BUILDER_CONFIG_STRUCT_SIZE. */
  attn_device_t device;              /**< Where builds run: {ATTN_DEVICE_CPU, 0} (default) or
                                          {ATTN_DEVICE_CUDA, n}. */
  int32_t max_num_seqs;              /**< Most requests in one batch (> 0); sizes buffers. */
  int32_t max_num_batched_tokens;    /**< Most tokens in one batch, padding included (> 0). */
  int32_t max_model_len;             /**< Longest sequence (> 0). */
  int32_t num_attention_heads;       /**< Query heads per rank (> 0). */
  int32_t num_speculative_tokens;    /**< Speculative tokens per step (0 to 65536); 0 without
                                          spec decode. */
  int32_t parallel_drafting;         /**< vLLM's `speculative_config.parallel_drafting`. */
  int32_t decode_context_parallel_size; /**< DCP world size (>= 1; default 1). */
  int32_t dcp_rank;                  /**< This rank in the DCP group (0 <= rank < size). */
  int32_t cp_kv_cache_interleave_size; /**< DCP interleave (>= 1; default 1). */
  int32_t cudagraph_mode;            /**< One of ::attn_cudagraph_mode_t (default
                                          ::ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE). */
  int32_t max_cudagraph_capture_size; /**< Largest captured token count; 0 for None. */
  int32_t cache_dtype;               /**< One of ::attn_kv_dtype_t (default AUTO). */
  int32_t attn_type;                 /**< One of ::attn_attention_type_t (default DECODER). */
  int32_t device_capability;         /**< CUDA compute capability as major*10+minor (90 for
                                          Hopper); 0 = ask the device (CUDA builds) or unknown.
                                          GDN_ATTN: 90 is vLLM's FlashInfer GDN prefill (no
                                          chunk_indices / chunk_offsets), others Triton's. With
                                          platform_rocm: vLLM's get_device_capability() of the
                                          AMD GPU (gfx942 = 94, gfx950 = 95); DeepSeek V4's ROCm
                                          builders read 95 as gfx950. */
  int32_t flash_attn_version;        /**< 2, 3 or 4; 0 = vLLM's choice from the capability
                                          (3 on 9.x, 4 on 10.x, else 2). */
  int32_t flash_attn_max_num_splits_for_cuda_graph; /**< vLLM's attention config (default 32). */
  int32_t batch_invariant;           /**< Non-zero for vLLM's batch-invariant mode. */
  int32_t validate;                  /**< One of ::attn_validate_mode_t. */
  const attn_per_layer_params_t* layers; /**< Per-layer hyperparameters of the model's attention
                                              layers, or NULL; elements are
                                              `layers[0].struct_size` bytes apart. */
  size_t num_layers;                 /**< Entries in `layers`. */
  const attn_allocator_t* allocator; /**< Allocator for persistent buffers; NULL = libattn's. */
  void* workspace;                   /**< Caller memory on `device` for the persistent buffers
                                          (256-byte aligned), or NULL to allocate. */
  size_t workspace_size;             /**< Bytes at `workspace`; see attn_builder_workspace_size().
                                          Host-side buffers (the `*_cpu` fields some backends
                                          return) of a CUDA builder are never placed here: they
                                          come from `allocator` on ::ATTN_DEVICE_CPU. */
  void* extension;                   /**< Reserved; must be NULL. */
  /* ---- ABI 1.1: read only when struct_size covers them; older callers get the defaults ---- */
  int32_t model_dtype;               /**< The model's dtype (::ATTN_KV_DTYPE_FLOAT16, BFLOAT16
                                          or FLOAT32); ::ATTN_KV_DTYPE_AUTO (default) = the
                                          spec's dtype. FLASHINFER's query and output dtypes. */
  int32_t use_trtllm_attention;      /**< vLLM's `attention_config.use_trtllm_attention`:
                                          -1 (default) = None, auto; 0 = False; 1 = True. Auto
                                          assumes FlashInfer's TRT-LLM kernels are installed
                                          (vLLM: flashinfer-cubin); pass 0 where they are not. */
  int32_t kv_transfer_enabled;       /**< Non-zero when a KV connector is configured (vLLM's
                                          `kv_transfer_config`); FLASHINFER then avoids TRT-LLM. */
  int32_t disable_flashinfer_q_quantization; /**< vLLM's attention_config flag of that name. */
  const int32_t* cudagraph_capture_sizes; /**< vLLM's `cudagraph_capture_sizes` in its order, or
                                          NULL for vLLM's default list ([1, 2, 4], multiples of
                                          8 below 256, multiples of 16 up to
                                          `max_cudagraph_capture_size`, or min(2 *
                                          max_num_seqs, 512) when that is 0). TRITON_ATTN. */
  size_t num_cudagraph_capture_sizes; /**< Entries in `cudagraph_capture_sizes`. */
  int64_t num_gpu_blocks;            /**< vLLM's `cache_config.num_gpu_blocks`: blocks in the KV
                                          cache; FLEX_ATTENTION requires it (> 0). */
  int32_t flex_attn_q_block_size;    /**< vLLM's attention_config value; 0 (default) = 16. */
  int32_t flex_attn_kv_block_size;   /**< vLLM's attention_config value; 0 (default) = the
                                          spec's block_size. */
  const char* speculative_token_tree; /**< vLLM's `speculative_config.speculative_token_tree`, a
                                          Python literal list of paths sorted by depth, e.g.
                                          "[(0,), (1,), (0, 0)]"; NULL = [(0,)]. TREE_ATTN. */
  int32_t kv_sharing_fast_prefill;   /**< Non-zero: wrap the backend in vLLM's KV-sharing
                                          fast-prefill builder (create_fast_prefill_custom_backend). */
  int32_t max_encoder_len;           /**< Longest encoder input (vLLM's max_encoder_len); needed
                                          by ::ATTN_KV_CROSS_ATTENTION specs. */
  int32_t cpu_attn_isa;              /**< CPU_ATTN kernel ISA: one of ::attn_cpu_isa_t;
                                          ::ATTN_CPU_ISA_DETECT (default) asks the host CPU. */
  int32_t reserved_1_1;              /**< Reserved (keeps the struct free of tail padding);
                                          must be 0. */
  /* ---- ABI 1.2: read only when struct_size covers them; older callers get the defaults.
   *      The MLA backends' options (FLASHMLA, FLASH_ATTN_MLA, CUTLASS_MLA, FLASHINFER_MLA,
   *      TRITON_MLA); other backends ignore them. ---- */
  int32_t mla_kv_lora_rank;          /**< The model's `kv_lora_rank` (vLLM's get_mla_dims); 0
                                          (default) = 512, DeepSeek-V2/V3's. With
                                          `mla_qk_rope_head_dim` it must add up to the MLA spec's
                                          head_size. FLASH_ATTN_MLA: the FA3 scheduler's
                                          headdim_v. */
  int32_t mla_qk_rope_head_dim;      /**< The model's `qk_rope_head_dim`; 0 (default) = 64.
                                          FLASH_ATTN_MLA: the FA3 scheduler's headdim. */
  int32_t mla_qk_nope_head_dim;      /**< The model's `qk_nope_head_dim`; 0 (default) = 128.
                                          MLA prefill: FlashInfer's head_dim_qk (nope + rope)
                                          and vLLM's DeepSeek-R1 dimension check. */
  int32_t mla_v_head_dim;            /**< The model's `v_head_dim`; 0 (default) = 128. MLA
                                          prefill: FlashInfer's head_dim_vo, R1 check. */
  int32_t mla_chunked_prefill_workspace_size; /**< Rows of the MLA chunked-prefill
                                          workspace; 0 (default) = vLLM 0.33's
                                          determine_chunked_prefill_workspace_size: min(max(
                                          8 * max_model_len, 4 * max_num_seqs * block_size),
                                          65536) rounded up to a multiple of block_size
                                          (lcm(block_size, dcp * interleave) under DCP). A
                                          value is used as given: at least that alignment and,
                                          under DCP, a multiple of the DCP size. It bounds
                                          every context chunk (docs/backends/mla.md). */
  int32_t disable_flashinfer_prefill; /**< vLLM 0.13's `attention_config` flag of that name,
                                          removed in vLLM 0.33 (its AttentionConfig refuses the
                                          key): must be 0 since libattn 1.7; choose the MLA
                                          prefill backend with `mla_prefill_backend`. */
  int32_t use_cudnn_prefill;         /**< vLLM 0.13's `attention_config.use_cudnn_prefill`,
                                          removed in vLLM 0.33 (no cuDNN MLA prefill there):
                                          must be 0 since libattn 1.7. */
  int32_t use_trtllm_ragged_deepseek_prefill; /**< vLLM 0.13's `attention_config` flag of that
                                          name, removed in vLLM 0.33: must be 0 since libattn
                                          1.7; pass `mla_prefill_backend` TRTLLM_RAGGED. */
  int32_t use_v2_model_runner;       /**< ABI 1.4. Non-zero when the engine runs vLLM's model
                                          runner V2 (`VllmConfig.use_v2_model_runner`): with
                                          `parallel_drafting`, a spec-as-decode backend's reorder
                                          threshold is 1 + num_speculative_tokens, not
                                          1 + 2 * num_speculative_tokens (vLLM 0.33's
                                          max_decode_query_len adds the parallel drafter's mask
                                          slots on model runner V1 only). 0 (default) = V1, the
                                          behaviour of earlier libattn versions. GDN_ATTN
                                          supports update_block_table only with it, on a
                                          CUDA builder (vLLM 0.33). */
  int32_t num_sms;                   /**< ABI 1.4. Streaming multiprocessors of the GPU (vLLM's
                                          `current_platform.num_compute_units()`); 0 (default) =
                                          unknown. TRITON_ATTN on compute capability 12.0 sizes
                                          vLLM 0.33's 64-segment softmax scratch from it; unknown
                                          keeps 16 segments. */
  int32_t rswa_window;               /**< ABI 1.4. vLLM 0.33's `model_config.rswa_window`: the
                                          Reference Sliding Window Attention window of the
                                          model (Unlimited-OCR), or 0 (default) = None. With a
                                          window, FLASH_ATTN and TRITON_ATTN return
                                          `rswa_prefix_lens` (a persistent copy of
                                          `common->rswa_prefix_lens`) and `rswa_window` when the
                                          batch carries prefix lengths; FLEX_ATTENTION refuses
                                          it (its R-SWA block mask is not implemented). */
  int32_t is_mm_prefix_lm;           /**< ABI 1.4. Non-zero for a multimodal PrefixLM model
                                          (vLLM 0.33's `model_config.is_mm_prefix_lm`):
                                          FLASH_ATTN then returns
                                          `mm_prefix_query_range_tensor` for batches with
                                          `common->mm_req_doc_ranges`. */
  int32_t use_non_causal;            /**< ABI 1.4. vLLM's `attention_config.use_non_causal`
                                          (non-causal draft attention, e.g. DFlash). Non-zero:
                                          FLASHINFER reports UNIFORM_SINGLE_TOKEN_DECODE unless
                                          its decode runs on XQA (compute capability 9.0 and
                                          12.x). 0 (default) = False. */
  int32_t enable_adaptive_verification; /**< ABI 1.4. vLLM's
                                          `speculative_config.enable_adaptive_verification`
                                          (drafts trimmed on the device; model runner V2).
                                          Non-zero with speculative tokens: FLASHINFER's
                                          trtllm-gen decode (compute capability 10.x) reads
                                          per-request query lengths (varlen decode, no uniform
                                          split; vLLM's get_varlen_cudagraph_max_query_len
                                          1 + k). 0 (default) = False. */
  /* ---- ABI 1.6: the vLLM 0.33 settings the Mamba builders (MAMBA2, MAMBA1, SHORT_CONV) read
   *      for ReplaySSM and prefill checkpoints; other backends ignore them. ---- */
  int32_t use_replayssm;             /**< `cache_config.use_replayssm` (`--use-replayssm`):
                                          non-zero adds the ReplaySSM decode fields. */
  int32_t replayssm_buffer_len;      /**< `cache_config.replayssm_buffer_len` (> 0; at most 16
                                          on FlashInfer); default 16 (0 also means 16). */
  int32_t mamba_backend_flashinfer;  /**< Non-zero when `mamba_config.backend` is FLASHINFER
                                          (FlashInfer's ReplaySSM scratch instead of Triton's
                                          ring cursors); 0 (default) = TRITON. */
  int32_t async_scheduling;          /**< `scheduler_config.async_scheduling`: Triton ReplaySSM
                                          refuses it with speculative decoding, as vLLM does. */
  int32_t hash_block_size;           /**< `cache_config.hash_block_size` (tokens per prefix-cache
                                          hash); 0 (default) = None: no prefill checkpoints. */
  int32_t cache_hit_alignment_tokens; /**< `cache_config.cache_hit_alignment_tokens`; 0
                                          (default) = None: no prefill checkpoints. */
  int32_t num_hash_lookahead_tokens; /**< `VllmConfig.num_hash_lookahead_tokens` (>= 0). */
  int32_t use_eagle_block_drop;      /**< `speculative_config.use_eagle_block_drop()` (non-zero:
                                          EAGLE's volatile trailing block is dropped). */
  /* ---- ABI 1.6: read only when struct_size covers it; older callers get the default ---- */
  int32_t gdn_prefill_backend;       /**< ABI 1.6. One of ::attn_gdn_prefill_backend_t: the GDN
                                          prefill kernel vLLM resolved. AUTO (default) decides
                                          from the compute capability; pass FLASHINFER where
                                          vLLM picks it on 10.x/12.x (the model's
                                          linear_key_head_dim 128, CUDA runtime 13+) and TRITON
                                          where `gdn_prefill_backend` asks for it. GDN_ATTN
                                          only. */
  int32_t reserved_1_6;              /**< Reserved (keeps the struct free of tail padding);
                                          must be 0. */
  /* ---- ABI 1.7 (MLA prefill inputs of vLLM 0.33's attention_config): read only when
   *      struct_size covers them; older callers get the defaults. The MLA backends read them;
   *      other backends ignore them. ---- */
  int32_t mla_prefill_backend;       /**< ABI 1.7. One of ::attn_mla_prefill_backend_t
                                          (`attention_config.mla_prefill_backend`). AUTO
                                          (default): vLLM's automatic choice. An explicit
                                          backend is checked as vLLM 0.33's
                                          get_mla_prefill_backend does (compute capability, MLA
                                          dimensions) and refused when invalid ("Selected MLA
                                          prefill backend ... is not valid for this
                                          configuration"). It decides `prefill_prefill_backend`,
                                          FP8 prefill queries (below) and which extension
                                          fields the prefill part carries. */
  int32_t use_prefill_query_quantization; /**< ABI 1.7.
                                          `attention_config.use_prefill_query_quantization`:
                                          non-zero makes `prefill_q_data_type` FP8_E4M3 when the
                                          KV cache is fp8, the compute capability is 10.x and the
                                          prefill backend is FLASHINFER, TRTLLM_RAGGED or
                                          TOKENSPEED_MLA (vLLM's
                                          determine_prefill_query_data_type); otherwise the
                                          model's dtype. 0 (default) = False. */
  /* ---- ABI 1.7 (the sparse indexers' construction argument) ---- */
  int32_t block_table_width;         /**< ABI 1.7. The `block_table_width` construction argument
                                          of vLLM 0.33's builders that declare
                                          `requires_block_table_width` (DEEPSEEK_V32_INDEXER):
                                          the columns of the worker's block table (its expanded
                                          per-token decode table has this width). 0 (default) =
                                          vLLM's worker width: cdiv(max_model_len, block_size *
                                          decode_context_parallel_size) rounded up to a
                                          multiple of 128 / gcd(128, block_size). Other
                                          backends ignore it. */
  int32_t reserved_1_7;              /**< Reserved (keeps the struct free of tail padding);
                                          must be 0. */
  /* ---- ABI 1.7 (DeepSeek V4 / V4.1: the compressors and the V4.1 sparse indexer): read only
   *      when struct_size covers them; older callers get the defaults. Other backends ignore
   *      them (the ranges are checked for every backend). ---- */
  int32_t platform_rocm;             /**< ABI 1.7. Non-zero when vLLM's `current_platform` is
                                          ROCm: DEEPSEEK_V4_COMPRESSOR then returns
                                          `num_decode_tokens` (vLLM's
                                          _prefer_two_stage_compressor). 0 (default) = CUDA. */
  int32_t prefill_context_parallel_size; /**< ABI 1.7. `parallel_config.
                                          prefill_context_parallel_size` (PCP world size); 0
                                          (default) or 1 = no PCP. DEEPSEEK_V41_COMPRESSOR and
                                          DEEPSEEK_V41_SPARSE_INDEXER refuse PCP (> 1). */
  int32_t candidate_block_size;      /**< ABI 1.7. The model's `hf_text_config.
                                          candidate_block_size` (DeepSeek V4.1's two-level
                                          indexer: tokens per candidate block); 0 (default) =
                                          absent. DEEPSEEK_V41_SPARSE_INDEXER requires > 0. */
  int32_t candidate_topk_blocks;     /**< ABI 1.7. The model's `hf_text_config.
                                          candidate_topk_blocks` (candidate blocks per query);
                                          0 (default) = absent. DEEPSEEK_V41_SPARSE_INDEXER
                                          requires > 0. */
  int32_t indexer_kv_mxfp4;          /**< ABI 1.7. Non-zero when vLLM's
                                          `attention_config.resolve_indexer_kv_dtype("fp8")` is
                                          "mxfp4" (the MXFP4 indexer K cache, compute capability
                                          10.x only); 0 (default) = "fp8".
                                          DEEPSEEK_V41_SPARSE_INDEXER requires it. */
  int32_t sparse_indexer_topk_backend; /**< ABI 1.7. One of
                                          ::attn_sparse_indexer_topk_backend_t (`kernel_config.
                                          sparse_indexer_topk_backend`); default AUTO. */
  /* ---- ABI 1.7 (DeepSeek V4 / V4.1's DSpark drafts) ---- */
  int32_t speculative_dspark;        /**< ABI 1.7. Non-zero when vLLM's
                                          `speculative_config.method` is "dspark"
                                          (`use_dspark()`): the sparse SWA builders
                                          (DEEPSEEK_SPARSE_SWA and its family) then build the
                                          decode rows of a non-causal batch (common->causal =
                                          0: the draft block) as DSpark's, each token seeing the
                                          trailing window before the block and the whole block,
                                          `align_up(window + num_speculative_tokens, 64)` wide.
                                          0 (default): such a batch is refused, as vLLM asserts. */
  int32_t reserved_1_7_b;            /**< Reserved (keeps the struct free of tail padding);
                                          must be 0. */
  /* ---- ABI 1.7 (Whisper causal block pooling) ---- */
  int32_t block_pool_size;           /**< ABI 1.7. `block_pool_size` of vLLM 0.33's
                                          `create_whisper_attention_backend_with_block_pooling`
                                          (the streaming Whisper encoder's causal layers): > 0
                                          wraps the backend's builder in the
                                          WhisperCausalAttentionWithBlockPooling wrapper
                                          (FLASH_ATTN and TRITON_ATTN; other backends are
                                          ATTN_ERR_UNSUPPORTED; docs/backends/wrappers.md),
                                          which builds over
                                          `kv_cache_spec->block_size * block_pool_size` token
                                          blocks; 0 (default) = not such a layer. */
  int32_t reserved_1_7_c;            /**< Reserved (keeps the struct free of tail padding);
                                          must be 0. */
  /* ---- ABI 1.7 (ROCm AITER's shuffled KV cache: MiniMax-M3's sparse paged attention) ---- */
  int32_t rocm_aiter_shuffle_kv_cache; /**< ABI 1.7. Non-zero when vLLM's
                                          `rocm_aiter_ops.is_enabled() and
                                          rocm_aiter_ops.is_shuffle_kv_cache_enabled()` (the
                                          environment switches VLLM_ROCM_USE_AITER=1 and
                                          VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT=1; vLLM 0.33's
                                          `_minimax_m3_aiter_sparse_pa_requested()`):
                                          MINIMAX_M3_SPARSE then builds the AITER sparse PA
                                          path's `page16_slot_mapping` and the prefills'
                                          `query_req_id` / `query_abs_pos`
                                          (docs/backends/minimax_m3.md). 0 (default) = off.
                                          Other backends ignore it. */
  int32_t reserved_1_7_d;            /**< Reserved (keeps the struct free of tail padding);
                                          must be 0. */
  /* ---- ABI 1.7 (MiniMax-M3's lightning indexer: its index-query heads per rank) ---- */
  int32_t sparse_num_index_heads;    /**< ABI 1.7. The model's
                                          `text_config.sparse_attention_config[
                                          "sparse_num_index_heads"]`: the index-query heads of
                                          all ranks (MiniMax-M3). MINIMAX_M3_SPARSE_INDEXER
                                          requires it (> 0; vLLM 0.33 reads the key) and
                                          refuses it with `tensor_parallel_size` as vLLM
                                          asserts (one divides the other); the builder runs
                                          max(1, heads / tensor_parallel_size) heads a rank
                                          (docs/backends/minimax_m3.md). 0 (default) = absent.
                                          Other backends ignore it. */
  int32_t tensor_parallel_size;      /**< ABI 1.7. vLLM's
                                          `get_tensor_model_parallel_world_size()` (the TP
                                          world size, `parallel_config.tensor_parallel_size`);
                                          0 (default) or 1 = no tensor parallelism. Read by
                                          MINIMAX_M3_SPARSE_INDEXER with
                                          `sparse_num_index_heads`; other backends ignore it. */
};

/** Size of ::attn_builder_config_t in ABI 1.0 (the smallest `struct_size` accepted). */
#define ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0 \
  (offsetof(attn_builder_config_t, extension) + sizeof(void*))
/** Size of ::attn_builder_config_t in ABI 1.1. */
#define ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_1 \
  (offsetof(attn_builder_config_t, reserved_1_1) + sizeof(int32_t))
/** Size of ::attn_builder_config_t in ABI 1.2 and 1.3. */
#define ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_2 \
  (offsetof(attn_builder_config_t, use_trtllm_ragged_deepseek_prefill) + sizeof(int32_t))
/** Size of ::attn_builder_config_t in ABI 1.4 and 1.5. */
#define ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4 \
  (offsetof(attn_builder_config_t, enable_adaptive_verification) + sizeof(int32_t))
/** Size of ::attn_builder_config_t in ABI 1.6. */
#define ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_6 \
  (offsetof(attn_builder_config_t, reserved_1_6) + sizeof(int32_t))
/** Size of ::attn_builder_config_t in this header version. */
#define ATTN_BUILDER_CONFIG_STRUCT_SIZE \
  (offsetof(attn_builder_config_t, tensor_parallel_size) + sizeof(int32_t))
/** Initializer with vLLM's defaults; the four required sizes are 0 and must be set. */
#define ATTN_BUILDER_CONFIG_INIT                                                            \
  { ATTN_BUILDER_CONFIG_STRUCT_SIZE, { ATTN_DEVICE_CPU, 0 }, 0, 0, 0, 0, 0, 0, 1, 0, 1,     \
    ATTN_CUDAGRAPH_MODE_FULL_AND_PIECEWISE, 0, ATTN_KV_DTYPE_AUTO, ATTN_TYPE_DECODER, 0, 0, \
    32, 0, ATTN_VALIDATE_HOST, NULL, 0, NULL, NULL, 0, NULL,                                \
    ATTN_KV_DTYPE_AUTO, -1, 0, 0, NULL, 0, 0, 0, 0, NULL, 0, 0, ATTN_CPU_ISA_DETECT, 0,    \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, ATTN_GDN_PREFILL_AUTO, 0, \
    ATTN_MLA_PREFILL_AUTO, 0, 0, 0, 0, 0, 0, 0, 0, ATTN_SPARSE_INDEXER_TOPK_AUTO, 0, 0, 0, 0, \
    0, 0, 0, 0 }

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup common Common attention metadata
 *  @brief The batch as the scheduler describes it (vLLM's `CommonAttentionMetadata`).
 *
 * Tensors on the builder's device: `query_start_loc`, `seq_lens`, `block_table_tensor`,
 * `slot_mapping` (and the optional device tensors). Host tensors: every `*_cpu` mirror. On a CPU
 * builder the device tensors are host tensors and the mirrors may be NULL.
 *  @{ */

/** The per-batch input of every build. Fill with ::ATTN_COMMON_METADATA_INIT. */
struct attn_common_metadata {
  size_t struct_size;                        /**< ::ATTN_COMMON_METADATA_STRUCT_SIZE. */
  const attn_tensor_t* query_start_loc;      /**< (num_reqs + 1,) int32: start of each request's
                                                  query tokens; [0] = 0, non-decreasing. */
  const attn_tensor_t* query_start_loc_cpu;  /**< Host mirror of `query_start_loc`; required on
                                                  CUDA builders. */
  const attn_tensor_t* seq_lens;             /**< (num_reqs,) int32: context length after this
                                                  step (computed + scheduled tokens). */
  const attn_tensor_t* seq_lens_cpu;         /**< Optional host mirror of `seq_lens`. */
  int64_t num_reqs;                          /**< Requests in the batch (padding included). */
  int64_t num_actual_tokens;                 /**< Tokens in the batch (may be padded). */
  int64_t max_query_len;                     /**< Longest query (>= every query length). */
  int64_t max_seq_len;                       /**< Longest sequence (may be an upper bound). */
  const attn_tensor_t* block_table_tensor;   /**< (num_reqs, max_blocks) int32 block ids; rows
                                                  may be strided (strides[1] must be 1). */
  const attn_tensor_t* slot_mapping;         /**< (>= num_actual_tokens,) int64 (or int32) slots
                                                  (vLLM's fast-prefill batch keeps the longer
                                                  original one). */
  int32_t causal;                            /**< Non-zero for causal attention (default 1). */
  const attn_tensor_t* logits_indices_padded; /**< Optional (n,) int32/int64 (fast prefill). */
  int64_t num_logits_indices;                /**< Valid entries of `logits_indices_padded`. */
  const attn_tensor_t* encoder_seq_lens;     /**< Optional (num_reqs,) int32 (cross attention). */
  const attn_tensor_t* encoder_seq_lens_cpu; /**< Optional host mirror of `encoder_seq_lens`. */
  const attn_tensor_t* dcp_local_seq_lens;   /**< Optional (num_reqs,) int32 (DCP). */
  const attn_tensor_t* dcp_local_seq_lens_cpu; /**< Optional host mirror of
                                                    `dcp_local_seq_lens`. */
  void* extension;                           /**< Reserved; must be NULL. */
  /* ---- ABI 1.1 ---- */
  const attn_tensor_t* logits_indices_padded_cpu; /**< Optional host mirror of
                                                    `logits_indices_padded`; a CUDA builder
                                                    with `kv_sharing_fast_prefill` needs it. */
  /* ---- ABI 1.2: the keyword arguments vLLM's model runner passes to the builds of the
   *      Mamba-family backends (spec decode), and CommonAttentionMetadata.is_prefilling. All
   *      optional (NULL = vLLM's None); other backends ignore them. ---- */
  const attn_tensor_t* num_accepted_tokens; /**< Optional (num_reqs,) int32 where the batch lives:
                                                  tokens accepted per request in the last step,
                                                  bonus token included (vLLM's build() kwarg
                                                  `num_accepted_tokens`). MAMBA2 and SHORT_CONV:
                                                  given, decodes may be multi-token (threshold
                                                  1 + num_speculative_tokens); GDN_ATTN: gathered
                                                  for the spec-decode requests. */
  const attn_tensor_t* num_decode_draft_tokens_cpu; /**< Optional (num_reqs,) int32 in host memory:
                                                  draft tokens scheduled per request, -1 for
                                                  requests that are not spec decodes (vLLM's
                                                  kwarg `num_decode_draft_tokens_cpu`). GDN_ATTN:
                                                  the spec-decode requests are those >= 0, and
                                                  one such request puts the batch on the spec
                                                  path (vLLM 0.33), drafts or not. */
  const attn_tensor_t* num_decode_draft_tokens; /**< Optional mirror of
                                                  `num_decode_draft_tokens_cpu` where the batch
                                                  lives; a CUDA GDN_ATTN builder needs it for
                                                  batches with spec decodes (its kernels derive
                                                  the spec mask from it). */
  const attn_tensor_t* is_prefilling;       /**< Optional (num_reqs,) bool/int8/uint8/int32 in
                                                  host memory: non-zero while a request is still
                                                  in its prompt (vLLM's
                                                  CommonAttentionMetadata.is_prefilling). The
                                                  Mamba-family split counts such requests as
                                                  prefills whatever their length
                                                  (treat_short_extends_as_decodes=False); vLLM
                                                  0.33's MAMBA2, MAMBA1 and SHORT_CONV require
                                                  it and count one-token rows with prior state
                                                  as decodes. NULL = none is (refused there). */
  /* ---- ABI 1.4: the fields vLLM 0.33.0's CommonAttentionMetadata added. All optional (NULL,
   *      or -1 for max_logits_per_req, = vLLM's None); see docs/architecture.md, "Common
   *      attention metadata", for which builder reads which. ---- */
  const attn_tensor_t* seq_lens_cpu_upper_bound; /**< Optional (num_reqs,) int32 in host memory:
                                                  vLLM 0.33's `seq_lens_cpu_upper_bound`, an
                                                  upper bound on `seq_lens` (exact for prefill
                                                  rows; may exceed the device value on async
                                                  spec-decode rows, which assume every draft
                                                  accepted). Checked as a bound (>= the query
                                                  length, <= max_seq_len, >= `seq_lens_cpu`
                                                  when both are given; full validation: >= the
                                                  device `seq_lens`). Builders read the exact
                                                  `seq_lens_cpu` (libattn's extension) when it
                                                  or a host `seq_lens` is given, else this;
                                                  GDN_ATTN's first-chunk test reads this bound
                                                  when given, as vLLM 0.33 does. */
  const attn_tensor_t* dcp_local_seq_lens_cpu_upper_bound; /**< Optional (num_reqs,) int32 in
                                                  host memory: vLLM 0.33's upper bound on
                                                  `dcp_local_seq_lens` (under PCP+DCP the
                                                  largest shard any DCP rank holds of the row's
                                                  request). >= `dcp_local_seq_lens_cpu` when
                                                  both are given. */
  const attn_tensor_t* positions;           /**< Optional (>= num_actual_tokens,) int64 where the
                                                  batch lives: each token's position (vLLM
                                                  0.33's `positions`, (num_actual_tokens,)).
                                                  attn_common_metadata_unpadded() drops it, as
                                                  0.33's unpadded() does; micro-batch slicing
                                                  keeps the slice's tokens. */
  const attn_tensor_t* causal_per_request;  /**< Optional (num_reqs,) int32 where the batch lives:
                                                  vLLM 0.33's `causal` given as a per-request
                                                  tensor (non-zero = causal). When given it
                                                  replaces the scalar `causal` for the builders
                                                  that read it. */
  int64_t max_logits_per_req;               /**< vLLM 0.33's `max_logits_per_req` (the largest
                                                  per-request count of `logits_indices`, for
                                                  fast prefill); -1 (default) = None. */
  const attn_tensor_t* req_idx;             /**< Optional (num_reqs,) int32 or int64 in host
                                                  memory: each row's index in the runner's
                                                  request table (vLLM 0.33's `req_idx`; equal
                                                  neighbours are PCP chunks of one request). */
  const attn_tensor_t* mm_req_doc_ranges;   /**< Optional (num_ranges, 3) int32 in host memory:
                                                  vLLM 0.33's `mm_req_doc_ranges` dict (request
                                                  index -> list of (start, end) PrefixLM
                                                  bidirectional token ranges) as rows
                                                  (request, start, end), requests in
                                                  non-decreasing order, each request's ranges in
                                                  the dict's order; 0 rows = an empty dict.
                                                  Requests in [0, num_reqs), start and end >= 0.
                                                  attn_common_metadata_unpadded() drops it, as
                                                  0.33's unpadded() does. */
  const attn_tensor_t* rswa_prefix_lens;    /**< Optional (num_reqs,) int32, in host memory or
                                                  where the batch lives: vLLM 0.33's
                                                  `rswa_prefix_lens` (per-request prefix length
                                                  for Reference Sliding Window Attention). */
  const attn_tensor_t* replayssm_decode_base_cpu; /**< Optional (num_reqs,) int32 in host memory:
                                                  vLLM 0.33's `replayssm_decode_base_cpu`
                                                  (Mamba2 ReplaySSM decode ring origin); values
                                                  >= 0. */
  /* ---- ABI 1.7 (DeepSeek V4.1's SWA bounded replay) ---- */
  const attn_tensor_t* replay_start;        /**< ABI 1.7. Optional (num_reqs,) int32 where the
                                                  batch lives: vLLM 0.33's build() keyword
                                                  `replay_start` of the sparse SWA builders
                                                  (DEEPSEEK_SPARSE_SWA and its family): the
                                                  position from which each request holds window
                                                  KV (SWA bounded replay, `Request.replay_start`;
                                                  0 = no lower bound). NULL = vLLM's None (a
                                                  capture, a group that does not replay): the
                                                  builders' persistent zeros. Values in host
                                                  memory are checked: >= 0 and, in the builders
                                                  that read it, <= the request's first scheduled
                                                  position (seq_len - query_len).
                                                  attn_common_metadata_unpadded() keeps
                                                  num_actual_reqs rows; micro-batch slicing does
                                                  not carry it (a build keyword, as
                                                  `num_accepted_tokens`). */
};

/** Size of ::attn_common_metadata_t in ABI 1.0 (the smallest `struct_size` accepted). */
#define ATTN_COMMON_METADATA_STRUCT_SIZE_1_0 \
  (offsetof(attn_common_metadata_t, extension) + sizeof(void*))
/** Size of ::attn_common_metadata_t in ABI 1.1. */
#define ATTN_COMMON_METADATA_STRUCT_SIZE_1_1 \
  (offsetof(attn_common_metadata_t, logits_indices_padded_cpu) + sizeof(void*))
/** Size of ::attn_common_metadata_t in ABI 1.2 and 1.3 (1.3 left it unchanged). */
#define ATTN_COMMON_METADATA_STRUCT_SIZE_1_3 \
  (offsetof(attn_common_metadata_t, is_prefilling) + sizeof(void*))
/** Size of ::attn_common_metadata_t in ABI 1.4 to 1.6 (1.5 and 1.6 left it unchanged). */
#define ATTN_COMMON_METADATA_STRUCT_SIZE_1_6 \
  (offsetof(attn_common_metadata_t, replayssm_decode_base_cpu) + sizeof(void*))
/** Size of ::attn_common_metadata_t in this header version. */
#define ATTN_COMMON_METADATA_STRUCT_SIZE \
  (offsetof(attn_common_metadata_t, replay_start) + sizeof(void*))
/** Initializer: everything NULL or 0, causal, max_logits_per_req -1 (None). */
#define ATTN_COMMON_METADATA_INIT                                                             \
  { ATTN_COMMON_METADATA_STRUCT_SIZE, NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, 1, NULL, \
    0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,                            \
    NULL, NULL, NULL, NULL, -1, NULL, NULL, NULL, NULL, NULL }

/**
 * @brief vLLM's `CommonAttentionMetadata.unpadded`: the batch cut to its real requests/tokens.
 *
 * query_start_loc (and its mirror) keep `num_actual_reqs + 1` entries; seq_lens, the block
 * table and the encoder and DCP lengths keep `num_actual_reqs` rows; slot_mapping keeps
 * `num_actual_tokens`; max_query_len, max_seq_len, causal and the logits fields are kept.
 * As vLLM 0.33.0's unpadded(): the per-request 1.4 fields (`seq_lens_cpu_upper_bound`,
 * `dcp_local_seq_lens_cpu_upper_bound`, `causal_per_request`, `req_idx`, `rswa_prefix_lens`,
 * `replayssm_decode_base_cpu`), 1.7's `replay_start` and `is_prefilling` keep `num_actual_reqs`
 * rows,
 * `max_logits_per_req` is kept, and `positions` and `mm_req_doc_ranges` are dropped (None).
 * The result's tensors are views of the input's memory (nothing is copied).
 * @param[in] common The padded batch; validated as for a build.
 * @param[in] num_actual_tokens Tokens to keep (0 <= n <= common->num_actual_tokens).
 * @param[in] num_actual_reqs Requests to keep (0 <= n <= common->num_reqs).
 * @param[out] out Receives metadata of kind "common", owned by the caller: release it with
 *             attn_metadata_destroy(); convert it with attn_metadata_to_common(). It borrows the
 *             memory of the input tensors, which must outlive it.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_common_metadata_unpadded(const attn_common_metadata_t* common,
                                                     int64_t num_actual_tokens,
                                                     int64_t num_actual_reqs,
                                                     attn_metadata_t** out) ATTN_NOEXCEPT;
/** Pointer type of attn_common_metadata_unpadded(). */
typedef attn_error_t* (*PFN_attn_common_metadata_unpadded)(const attn_common_metadata_t* common,
                                                           int64_t num_actual_tokens,
                                                           int64_t num_actual_reqs,
                                                           attn_metadata_t** out);

/**
 * @brief vLLM 0.33's `CommonAttentionMetadata.naive_query_lens()`: `query_start_loc[1:] -
 * query_start_loc[:-1]`, each request's query length assuming a query ends where the next one
 * starts (ABI 1.7).
 *
 * Reads only `common->query_start_loc` (and, for validation, the scalars and the host mirror
 * `query_start_loc_cpu`, as a split does); block table, slot mapping and lengths are not read.
 * Runs where `query_start_loc` lives: host code for host memory, one CUDA kernel on `stream`
 * for CUDA memory (no synchronization, capture-safe). vLLM's `batch_size()` (the rows of
 * `seq_lens`) is `common->num_reqs`: libattn requires `seq_lens` to have exactly that many rows,
 * so it has no function of its own (docs/batch_utilities.md).
 * @param[in] common The batch; validated as a split validates it (query_start_loc and its
 *            mirror, the scalars).
 * @param[in] out int32, 1-D compact, at least num_reqs entries, on the device of
 *            `common->query_start_loc`; the first num_reqs are written, the rest untouched.
 * @param[in] stream CUDA stream for CUDA memory (NULL: the default stream); ignored on the host.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument or field.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_common_metadata_naive_query_lens(const attn_common_metadata_t* common,
                                                             const attn_tensor_t* out,
                                                             attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_common_metadata_naive_query_lens(). */
typedef attn_error_t* (*PFN_attn_common_metadata_naive_query_lens)(
    const attn_common_metadata_t* common, const attn_tensor_t* out, attn_stream_t stream);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup utilities Batch utilities
 *  @brief vLLM's batch utilities (vllm/v1/attention/backends/utils.py, block_table.py,
 *  ubatch_utils.py), each as `attn_<vLLM name>`.
 *
 * Utilities whose results are host scalars or small host lists (splits, the reorder swap list,
 * prefill chunks, micro-batch slices) run on the host from host memory: the `*_cpu` mirrors, as
 * vLLM computes them. Utilities that produce tensors write into **output tensors the caller
 * provides** (no allocation per call) and run where the data lives: on the host, or as CUDA
 * kernels enqueued on `stream` when the tensors are CUDA memory. An output's descriptor is
 * borrowed like any input; its memory is written. Utilities that produce a new batch return it
 * as metadata of kind "common" (owned by the caller, release with attn_metadata_destroy()) whose
 * tensors view the caller's outputs and the input batch; attn_metadata_to_common() turns it
 * into a build's input.
 * @par Thread safety
 * Every utility may run on any thread; distinct calls must not share output tensors.
 *  @{ */

/** Request and token counts of a batch split. Fill with ::ATTN_BATCH_SPLIT_INIT. */
typedef struct attn_batch_split {
  size_t struct_size;          /**< ::ATTN_BATCH_SPLIT_STRUCT_SIZE. */
  int64_t num_decodes;         /**< Decode requests (at the front). */
  int64_t num_extends;         /**< Extend requests (query > threshold, with context); 0 from
                                    attn_split_decodes_and_prefills(). */
  int64_t num_prefills;        /**< Prefill requests. */
  int64_t num_decode_tokens;   /**< Tokens of the decode requests. */
  int64_t num_extend_tokens;   /**< Tokens of the extend requests. */
  int64_t num_prefill_tokens;  /**< Tokens of the prefill requests. */
} attn_batch_split_t;

/** Size of ::attn_batch_split_t in this header version. */
#define ATTN_BATCH_SPLIT_STRUCT_SIZE (offsetof(attn_batch_split_t, num_prefill_tokens) + sizeof(int64_t))
/** Initializer for an output split. */
#define ATTN_BATCH_SPLIT_INIT { ATTN_BATCH_SPLIT_STRUCT_SIZE, 0, 0, 0, 0, 0, 0 }

/**
 * @brief vLLM's split_decodes_and_prefills on a reordered batch (decodes first).
 *
 * vLLM 0.33's semantics with treat_short_extends_as_decodes=True (attn_split_decodes_and_prefills_ex()
 * takes every option). All decodes when max_query_len <= decode_threshold (and not
 * require_uniform, or decode_threshold <= 1); all prefills when the first query is longer than
 * the threshold; with require_uniform, a batch whose queries all equal the first or are 0 (a
 * padded uniform batch, whatever its token count) is all decodes, otherwise a prefill is a
 * query whose length differs from the first and is not 0; without it, a query longer than the
 * threshold. Decode tokens = query_start_loc[first prefill]. The all-decodes case is answered
 * from the scalars, as vLLM returns at once (ABI 1.7, O(1) in the batch): `decode_threshold`,
 * `struct_size`, the counts and that query_start_loc and seq_lens are given are checked, no
 * tensor is read or checked (a build of the batch checks them).
 * @param[in] common The batch (block table and slot mapping may be NULL); query lengths are
 *            read from query_start_loc_cpu (or query_start_loc in host memory).
 * @param[in] decode_threshold The longest query counted as a decode (>= 0).
 * @param[in] require_uniform Non-zero to require uniform decodes (full CUDA graphs).
 * @param[in,out] out A split whose struct_size is set; the extend counts are 0.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for a malformed batch. (Before vLLM 0.33
 *         and libattn 1.4, a uniform batch whose token count was not num_reqs * query_len[0]
 *         was refused with "tokens not padded correctly"; 0.33 accepts it.)
 */
ATTN_API attn_error_t* attn_split_decodes_and_prefills(const attn_common_metadata_t* common,
                                                       int32_t decode_threshold,
                                                       int32_t require_uniform,
                                                       attn_batch_split_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_split_decodes_and_prefills(). */
typedef attn_error_t* (*PFN_attn_split_decodes_and_prefills)(const attn_common_metadata_t* common,
                                                             int32_t decode_threshold,
                                                             int32_t require_uniform,
                                                             attn_batch_split_t* out);

/** The keyword arguments of vLLM 0.33's split_decodes_and_prefills (ABI 1.4). Fill with
 *  ::ATTN_SPLIT_OPTIONS_INIT (vLLM's defaults). */
typedef struct attn_split_options {
  size_t struct_size;                     /**< ::ATTN_SPLIT_OPTIONS_STRUCT_SIZE. */
  int32_t decode_threshold;               /**< The longest query counted as a decode (>= 0;
                                               default 1). */
  int32_t require_uniform;                /**< Non-zero: decodes share the first query length
                                               (full CUDA graphs; default 0). */
  int32_t treat_short_extends_as_decodes; /**< Non-zero (default): short extends, rows still
                                               in their prompt with a query <= threshold, are
                                               decodes. 0: every row `common->is_prefilling`
                                               marks is a prefill, and the all-decodes
                                               shortcuts are skipped. */
  int32_t reserved;                       /**< Must be 0. */
} attn_split_options_t;

/** Size of ::attn_split_options_t in this header version (ABI 1.4, the smallest accepted). */
#define ATTN_SPLIT_OPTIONS_STRUCT_SIZE \
  (offsetof(attn_split_options_t, reserved) + sizeof(int32_t))
/** Initializer with vLLM's defaults: threshold 1, not uniform, short extends as decodes. */
#define ATTN_SPLIT_OPTIONS_INIT { ATTN_SPLIT_OPTIONS_STRUCT_SIZE, 1, 0, 1, 0 }

/**
 * @brief vLLM 0.33's split_decodes_and_prefills(common, decode_threshold, require_uniform,
 * treat_short_extends_as_decodes) on a batch ordered decode -> short extend -> long extend ->
 * prefill (ABI 1.4).
 *
 * As attn_split_decodes_and_prefills() when treat_short_extends_as_decodes is non-zero. When it
 * is 0: no all-decodes shortcut (neither max_query_len <= threshold nor the padded uniform
 * batch); all prefills when the first query is longer than the threshold; otherwise a request
 * is a prefill when its query is longer than the threshold (with require_uniform: differs from
 * the first and is not 0) or `common->is_prefilling` marks it, and the first prefill splits the
 * batch.
 * @param[in] common The batch (block table and slot mapping may be NULL); query lengths are
 *            read from query_start_loc_cpu (or query_start_loc in host memory).
 *            `is_prefilling` is required when treat_short_extends_as_decodes is 0.
 * @param[in] options The options; NULL for vLLM's defaults (::ATTN_SPLIT_OPTIONS_INIT).
 * @param[in,out] out A split whose struct_size is set; the extend counts are 0.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for a malformed batch or options
 *         (negative threshold, reserved not 0, is_prefilling NULL when it is needed).
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_split_decodes_and_prefills_ex(const attn_common_metadata_t* common,
                                                          const attn_split_options_t* options,
                                                          attn_batch_split_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_split_decodes_and_prefills_ex(). */
typedef attn_error_t* (*PFN_attn_split_decodes_and_prefills_ex)(
    const attn_common_metadata_t* common, const attn_split_options_t* options,
    attn_batch_split_t* out);

/**
 * @brief vLLM's split_decodes_prefills_and_extends on a batch ordered decode -> extend ->
 * prefill: an extend's query is longer than the threshold and has context; a prefill's query is
 * longer than the threshold and equals its seq_len.
 * @param[in] common The batch; seq_lens must be readable on the host (seq_lens_cpu on a device).
 * @param[in] decode_threshold The longest query counted as a decode (>= 0).
 * @param[in,out] out A split whose struct_size is set.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad field.
 */
ATTN_API attn_error_t* attn_split_decodes_prefills_and_extends(const attn_common_metadata_t* common,
                                                               int32_t decode_threshold,
                                                               attn_batch_split_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_split_decodes_prefills_and_extends(). */
typedef attn_error_t* (*PFN_attn_split_decodes_prefills_and_extends)(
    const attn_common_metadata_t* common, int32_t decode_threshold, attn_batch_split_t* out);

/**
 * @brief vLLM's reorder_batch_to_split_decodes_and_prefills before 0.33: the swaps that order a
 * batch decode (<= threshold scheduled tokens, with context) -> extend (more, with context) ->
 * prefill (no context), moving only misplaced requests.
 *
 * The misplaced requests, stably sorted by region, fill the misplaced positions in order; the
 * swaps follow the cycles in the order vLLM calls `swap_states(src, dst)`. Apply them in order
 * to your own per-request state. This is
 * attn_reorder_batch_to_split_decodes_and_prefills_v2() with every request done with its prompt
 * (no short extends); vLLM 0.33 moves short extends (still in their prompt) behind the decodes:
 * use the v2 function to match it.
 * @param[in] num_scheduled_tokens Host array: tokens scheduled per request (>= 0).
 * @param[in] num_computed_tokens Host array: tokens already computed per request (>= 0).
 * @param[in] num_reqs Entries in both arrays.
 * @param[in] decode_threshold The longest decode (>= 0).
 * @param[out] out_swaps Receives `*out_num_swaps` pairs: out_swaps[2k] = src,
 *             out_swaps[2k + 1] = dst. `num_reqs` pairs always suffice.
 * @param[in] swaps_capacity Pairs `out_swaps` holds.
 * @param[out] out_num_swaps Receives the number of swaps; 0 means the batch was already ordered
 *             (vLLM returns False).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT (NULL arrays, negative counts, or a
 *         capacity smaller than the swaps needed, which the message states).
 */
ATTN_API attn_error_t* attn_reorder_batch_to_split_decodes_and_prefills(
    const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens, int64_t num_reqs,
    int32_t decode_threshold, int32_t* out_swaps, int64_t swaps_capacity,
    int64_t* out_num_swaps) ATTN_NOEXCEPT;
/** Pointer type of attn_reorder_batch_to_split_decodes_and_prefills(). */
typedef attn_error_t* (*PFN_attn_reorder_batch_to_split_decodes_and_prefills)(
    const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens, int64_t num_reqs,
    int32_t decode_threshold, int32_t* out_swaps, int64_t swaps_capacity, int64_t* out_num_swaps);

/**
 * @brief vLLM 0.33's reorder_batch_to_split_decodes_and_prefills: the swaps that order a batch
 * into four regions, decode -> short extend -> long extend -> prefill, moving only misplaced
 * requests (ABI 1.4).
 *
 * Request i is a prefill when num_computed_tokens[i] == 0 (whatever its scheduled tokens); with
 * context, a long extend when num_scheduled_tokens[i] > decode_threshold, else a short extend
 * when num_computed_tokens[i] < num_prompt_tokens[i] (still in its prompt), else a decode. The
 * misplaced requests, stably sorted by region, fill the misplaced positions in order; the swaps
 * follow the cycles in the order vLLM calls `swap_states(src, dst)`. Apply them in order to
 * your own per-request state.
 * @param[in] num_scheduled_tokens Host array: tokens scheduled per request (>= 0).
 * @param[in] num_computed_tokens Host array: tokens already computed per request (>= 0).
 * @param[in] num_prompt_tokens Host array: prompt length per request (>= 0; vLLM's
 *            `input_batch.num_prompt_tokens`).
 * @param[in] num_reqs Entries in the three arrays.
 * @param[in] decode_threshold The longest decode (>= 0).
 * @param[out] out_swaps Receives `*out_num_swaps` pairs: out_swaps[2k] = src,
 *             out_swaps[2k + 1] = dst. `num_reqs` pairs always suffice.
 * @param[in] swaps_capacity Pairs `out_swaps` holds.
 * @param[out] out_num_swaps Receives the number of swaps; 0 means the batch was already ordered
 *             (vLLM returns False).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT (NULL arrays, negative counts, or a
 *         capacity smaller than the swaps needed, which the message states).
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_reorder_batch_to_split_decodes_and_prefills_v2(
    const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens,
    const int32_t* num_prompt_tokens, int64_t num_reqs, int32_t decode_threshold,
    int32_t* out_swaps, int64_t swaps_capacity, int64_t* out_num_swaps) ATTN_NOEXCEPT;
/** Pointer type of attn_reorder_batch_to_split_decodes_and_prefills_v2(). */
typedef attn_error_t* (*PFN_attn_reorder_batch_to_split_decodes_and_prefills_v2)(
    const int32_t* num_scheduled_tokens, const int32_t* num_computed_tokens,
    const int32_t* num_prompt_tokens, int64_t num_reqs, int32_t decode_threshold,
    int32_t* out_swaps, int64_t swaps_capacity, int64_t* out_num_swaps);

/**
 * @brief vLLM's split_prefill_chunks: greedy request ranges whose seq_lens sum to at most
 * workspace_size.
 * @param[in] seq_lens Host array of `num_seqs` lengths (>= 0), each at most workspace_size.
 * @param[in] num_seqs Entries.
 * @param[in] workspace_size Tokens per chunk (>= 0).
 * @param[in] request_offset Added to every bound (>= 0).
 * @param[out] out_bounds Receives `*out_num_chunks` pairs (start, end), end exclusive.
 *             `num_seqs` pairs always suffice.
 * @param[in] bounds_capacity Pairs `out_bounds` holds.
 * @param[out] out_num_chunks Receives the number of chunks.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming a seq_len above the workspace or
 *         a capacity that is too small.
 */
ATTN_API attn_error_t* attn_split_prefill_chunks(const int32_t* seq_lens, int64_t num_seqs,
                                                 int64_t workspace_size, int64_t request_offset,
                                                 int64_t* out_bounds, int64_t bounds_capacity,
                                                 int64_t* out_num_chunks) ATTN_NOEXCEPT;
/** Pointer type of attn_split_prefill_chunks(). */
typedef attn_error_t* (*PFN_attn_split_prefill_chunks)(const int32_t* seq_lens, int64_t num_seqs,
                                                       int64_t workspace_size,
                                                       int64_t request_offset, int64_t* out_bounds,
                                                       int64_t bounds_capacity,
                                                       int64_t* out_num_chunks);

/**
 * @brief vLLM 0.33's compute_mm_prefix_range_tensor: the multimodal PrefixLM ranges of each
 * request as a zero-padded (num_seqs, max_ranges, 2) int32 tensor, for the Triton kernel
 * (ABI 1.4).
 *
 * Request i's list is its ranges, or [(0, 0)] when it has none; when every list is [(0, 0)]
 * the result is vLLM's None (`*out_max_ranges` = 0, `out` untouched). Otherwise max_ranges is
 * the longest list and row i holds its ranges, then (0, 0) padding. Two-phase: call with
 * `out` NULL to learn max_ranges, then with a (num_seqs, max_ranges, 2) output. vLLM copies
 * the result to the device (async_tensor_h2d); libattn writes host memory, the copy is the
 * caller's.
 * @param[in] mm_req_doc_ranges (num_ranges, 3) int32 host rows (request, start, end),
 *            requests non-decreasing (the layout of attn_common_metadata_t's
 *            `mm_req_doc_ranges` in ABI 1.4); rows of requests >= num_seqs are not read;
 *            NULL for vLLM's None.
 * @param[in] num_seqs Requests (>= 0).
 * @param[in] out NULL, or a compact (num_seqs, max_ranges, 2) int32 host tensor.
 * @param[out] out_max_ranges Receives max_ranges (0: None).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument (an output of
 *         another shape states the one needed).
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_compute_mm_prefix_range_tensor(const attn_tensor_t* mm_req_doc_ranges,
                                                           int64_t num_seqs,
                                                           const attn_tensor_t* out,
                                                           int64_t* out_max_ranges) ATTN_NOEXCEPT;
/** Pointer type of attn_compute_mm_prefix_range_tensor(). */
typedef attn_error_t* (*PFN_attn_compute_mm_prefix_range_tensor)(
    const attn_tensor_t* mm_req_doc_ranges, int64_t num_seqs, const attn_tensor_t* out,
    int64_t* out_max_ranges);

/**
 * @brief vLLM 0.33's fill_mm_prefix_query_ranges: for each scheduled query token, the absolute
 * [start, end] of the multimodal PrefixLM range that holds it (ABI 1.4).
 *
 * With T = query_start_loc_cpu[num_reqs]: nothing is written and `*out_num_rows` is 0 when the
 * ranges are None, T <= 0, or no range with start < end covers a scheduled token (request r's
 * query token j sits at position seq_lens_cpu[r] - query_len[r] + j); otherwise rows [0, T) of
 * `out` become (-1, -1), each covered token's row its range (later rows of mm_req_doc_ranges
 * win where ranges overlap), and `*out_num_rows` is T.
 * @param[in] out Compact (max_tokens, 2) int32 host staging buffer; max_tokens >= T whenever
 *            ranges are given (vLLM's assertion: "mm_prefix staging buffer holds ...").
 * @param[in] mm_req_doc_ranges (num_ranges, 3) int32 host rows (request, start, end), requests
 *            in [0, num_reqs), non-decreasing; NULL for vLLM's None.
 * @param[in] query_start_loc_cpu (num_reqs + 1,) int32 host, non-negative, non-decreasing.
 * @param[in] seq_lens_cpu (>= num_reqs,) int32 host (0.33's upper bound serves: it only needs
 *            to be exact for prefill rows).
 * @param[out] out_num_rows Receives the rows written (0 or T).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_fill_mm_prefix_query_ranges(const attn_tensor_t* out,
                                                        const attn_tensor_t* mm_req_doc_ranges,
                                                        const attn_tensor_t* query_start_loc_cpu,
                                                        const attn_tensor_t* seq_lens_cpu,
                                                        int64_t* out_num_rows) ATTN_NOEXCEPT;
/** Pointer type of attn_fill_mm_prefix_query_ranges(). */
typedef attn_error_t* (*PFN_attn_fill_mm_prefix_query_ranges)(
    const attn_tensor_t* out, const attn_tensor_t* mm_req_doc_ranges,
    const attn_tensor_t* query_start_loc_cpu, const attn_tensor_t* seq_lens_cpu,
    int64_t* out_num_rows);

/** Value of `dcp_rank` for the lengths of every rank. */
#define ATTN_DCP_ALL_RANKS (-1)

/**
 * @brief vLLM 0.33's should_skip_dcp_context_attention (v1/worker/cp_utils.py): whether every
 * decode-context-parallel rank can skip the context attention of a batch (ABI 1.4).
 *
 * True when the largest global context length (seq_len - query_len per request; not a rank's
 * local share, so that every rank takes the same branch) is 0. FLASH_ATTN's build under DCP
 * uses it: then max_dcp_context_kv_len is 0 and no scheduler inputs are returned.
 * @param[in] context_kv_lens (n,) int32 in host memory, n >= 1.
 * @param[out] out_skip 1 to skip, 0 otherwise; untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument (NULL, dtype,
 *         shape, empty, not in host memory).
 */
ATTN_API attn_error_t* attn_should_skip_dcp_context_attention(const attn_tensor_t* context_kv_lens,
                                                              int32_t* out_skip) ATTN_NOEXCEPT;
/** Pointer type of attn_should_skip_dcp_context_attention(). */
typedef attn_error_t* (*PFN_attn_should_skip_dcp_context_attention)(
    const attn_tensor_t* context_kv_lens, int32_t* out_skip);

/**
 * @brief vLLM 0.33's split_dcp_context_queries (v1/worker/cp_utils.py) on a batch ordered
 * decode -> extend -> prefill: the decode rows and the context-bearing extend rows that
 * FlashAttention's split DCP path runs separately (ABI 1.4).
 *
 * max_query_len <= 1: every request is a decode (num_reqs, 0, num_actual_tokens, 0). Without
 * host seq_lens (vLLM: seq_lens_cpu_upper_bound is None): (0, num_reqs, 0, num_actual_tokens).
 * Otherwise split_decodes_prefills_and_extends with threshold 1: its decodes and extends (pure
 * prefills, query == seq_len, are in neither).
 * @param[in] common The batch (block table and slot mapping may be NULL); query lengths from
 *            query_start_loc_cpu (or query_start_loc in host memory); the upper bound from
 *            seq_lens_cpu, or seq_lens in host memory, else none.
 * @param[out] out_num_decode_reqs,out_num_prefill_reqs,out_num_decode_tokens,out_num_prefill_tokens
 *            The four counts; untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument or field.
 */
ATTN_API attn_error_t* attn_split_dcp_context_queries(const attn_common_metadata_t* common,
                                                      int64_t* out_num_decode_reqs,
                                                      int64_t* out_num_prefill_reqs,
                                                      int64_t* out_num_decode_tokens,
                                                      int64_t* out_num_prefill_tokens) ATTN_NOEXCEPT;
/** Pointer type of attn_split_dcp_context_queries(). */
typedef attn_error_t* (*PFN_attn_split_dcp_context_queries)(const attn_common_metadata_t* common,
                                                            int64_t* out_num_decode_reqs,
                                                            int64_t* out_num_prefill_reqs,
                                                            int64_t* out_num_decode_tokens,
                                                            int64_t* out_num_prefill_tokens);

/** Value of `fa_version` in attn_should_split_fa2_dcp_context_attention() for vLLM's None. */
#define ATTN_FA_VERSION_NONE 0

/**
 * @brief vLLM 0.33's should_split_fa2_dcp_context_attention (v1/worker/cp_utils.py): whether
 * FLASH_ATTN under decode context parallelism runs the context attention of a mixed batch as
 * two FlashAttention-2 calls (decode rows, then context-bearing extend rows) (ABI 1.7).
 *
 * With num_prefills = num_reqs - num_decode_reqs: true when fa_version == 2, max_query_len > 1,
 * num_prefills > 0 and (num_decode_reqs > 0 or num_context_prefill_reqs < num_prefills). The
 * counts are those of attn_split_dcp_context_queries() (`num_context_prefill_reqs` is its
 * `out_num_prefill_reqs`).
 * @param[in] fa_version The FlashAttention version (2, 3, 4), or ::ATTN_FA_VERSION_NONE (vLLM's
 *            None); >= 0.
 * @param[in] max_query_len The batch's max_query_len (>= 0).
 * @param[in] num_reqs Requests in the batch (>= 0).
 * @param[in] num_decode_reqs Decode requests (0 <= n <= num_reqs).
 * @param[in] num_context_prefill_reqs Context-bearing extend requests
 *            (0 <= n <= num_reqs - num_decode_reqs).
 * @param[out] out_split 1 to split, 0 otherwise; untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument and its value.
 */
ATTN_API attn_error_t* attn_should_split_fa2_dcp_context_attention(
    int32_t fa_version, int64_t max_query_len, int64_t num_reqs, int64_t num_decode_reqs,
    int64_t num_context_prefill_reqs, int32_t* out_split) ATTN_NOEXCEPT;
/** Pointer type of attn_should_split_fa2_dcp_context_attention(). */
typedef attn_error_t* (*PFN_attn_should_split_fa2_dcp_context_attention)(
    int32_t fa_version, int64_t max_query_len, int64_t num_reqs, int64_t num_decode_reqs,
    int64_t num_context_prefill_reqs, int32_t* out_split);

/**
 * @brief vLLM 0.33's get_dcp_dummy_context_len (v1/worker/cp_utils.py): the context length the
 * runner gives the dummy requests of a warm-up or CUDA graph capture run under decode context
 * parallelism, so that the context attention path runs (ABI 1.7).
 *
 * 0 when dcp_world_size <= 1, without a KV cache config, or unless create_mixed_batch or
 * (is_graph_capturing and uniform_decode); else dcp_world_size * cp_kv_cache_interleave_size.
 * vLLM's prepare_dcp_dummy_context_metadata, which uses it, is not exported: it fills the
 * runner's own block tables (docs/batch_utilities.md gives the recipe with
 * attn_compute_slot_mapping()).
 * @param[in] dcp_world_size DCP world size (>= 1).
 * @param[in] cp_kv_cache_interleave_size Interleave (>= 1).
 * @param[in] has_kv_cache_config 0 or 1 (vLLM: `kv_cache_config is not None`).
 * @param[in] create_mixed_batch 0 or 1.
 * @param[in] is_graph_capturing 0 or 1.
 * @param[in] uniform_decode 0 or 1.
 * @param[out] out_len The length; untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument and its value.
 */
ATTN_API attn_error_t* attn_get_dcp_dummy_context_len(int32_t dcp_world_size,
                                                      int32_t cp_kv_cache_interleave_size,
                                                      int32_t has_kv_cache_config,
                                                      int32_t create_mixed_batch,
                                                      int32_t is_graph_capturing,
                                                      int32_t uniform_decode,
                                                      int64_t* out_len) ATTN_NOEXCEPT;
/** Pointer type of attn_get_dcp_dummy_context_len(). */
typedef attn_error_t* (*PFN_attn_get_dcp_dummy_context_len)(
    int32_t dcp_world_size, int32_t cp_kv_cache_interleave_size, int32_t has_kv_cache_config,
    int32_t create_mixed_batch, int32_t is_graph_capturing, int32_t uniform_decode,
    int64_t* out_len);

/**
 * @brief vLLM's get_dcp_local_seq_lens: the KV tokens each decode-context-parallel rank stores.
 *
 * base = seq_len // interleave // dcp_size * interleave; remainder = seq_len - base * dcp_size;
 * local = base + clip(remainder - rank * interleave, 0, interleave).
 * @param[in] seq_lens (n,) int32, host or CUDA.
 * @param[in] dcp_size DCP world size (>= 1).
 * @param[in] dcp_rank A rank in [0, dcp_size), or ::ATTN_DCP_ALL_RANKS.
 * @param[in] cp_kv_cache_interleave_size Interleave (>= 1).
 * @param[in] out (n,) int32 for one rank; for ::ATTN_DCP_ALL_RANKS a compact (n, dcp_size)
 *            int32 tensor, as vLLM (0.33) returns, (n, 1) when dcp_size == 1 (where libattn 1.3
 *            and earlier asked for (n,), which stays accepted); where seq_lens lives.
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT.
 */
ATTN_API attn_error_t* attn_get_dcp_local_seq_lens(const attn_tensor_t* seq_lens, int32_t dcp_size,
                                                   int32_t dcp_rank,
                                                   int32_t cp_kv_cache_interleave_size,
                                                   const attn_tensor_t* out,
                                                   attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_get_dcp_local_seq_lens(). */
typedef attn_error_t* (*PFN_attn_get_dcp_local_seq_lens)(const attn_tensor_t* seq_lens,
                                                         int32_t dcp_size, int32_t dcp_rank,
                                                         int32_t cp_kv_cache_interleave_size,
                                                         const attn_tensor_t* out,
                                                         attn_stream_t stream);

/**
 * @brief vLLM 0.33's compute_token_to_req_indices (v1/attention/ops/metadata.py): the request
 * index of each of the first `num_tokens` tokens (ABI 1.4).
 *
 * With num_reqs = query_start_loc's length - 1: out[t] for t < num_mapped_tokens is the first
 * request r whose query_start_loc[r + 1] > t, at most num_reqs - 1 (tokens past the batch map
 * to the last request; -1 when num_reqs is 0, as vLLM's kernel gives); out[t] = 0 for
 * num_mapped_tokens <= t < num_tokens; entries from num_tokens on are not written. Reads only
 * query_start_loc (never a host mirror), so it is safe to capture in a CUDA graph.
 * @param[in] query_start_loc (num_reqs + 1,) int32, host or CUDA (vLLM's device tensor).
 * @param[in] out (>= num_tokens,) int32 where query_start_loc lives.
 * @param[in] num_mapped_tokens Tokens that get their request (>= 0; may exceed num_tokens).
 * @param[in] num_tokens Entries written (0 <= n <= 2^31-1).
 * @param[in] stream CUDA stream for device tensors (one kernel).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_compute_token_to_req_indices(const attn_tensor_t* query_start_loc,
                                                         const attn_tensor_t* out,
                                                         int64_t num_mapped_tokens,
                                                         int64_t num_tokens,
                                                         attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_compute_token_to_req_indices(). */
typedef attn_error_t* (*PFN_attn_compute_token_to_req_indices)(
    const attn_tensor_t* query_start_loc, const attn_tensor_t* out, int64_t num_mapped_tokens,
    int64_t num_tokens, attn_stream_t stream);

/**
 * @brief vLLM's reshape_query_for_spec_decode: a (batch_size, tokens / batch_size, heads, dim)
 * view of a (tokens, heads, dim) query. Nothing is copied.
 * @param[in] query A 3-D tensor.
 * @param[in] batch_size Requests (> 0), dividing the token count.
 * @param[out] out Receives the view: query's data, device and dtype; shape and strides point
 *             to `out_shape` and `out_strides`.
 * @param[out] out_shape 4 entries, owned by the caller.
 * @param[out] out_strides 4 entries, owned by the caller.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT ("total_tokens=10 is not divisible by
 *         batch_size=3").
 */
ATTN_API attn_error_t* attn_reshape_query_for_spec_decode(const attn_tensor_t* query,
                                                          int64_t batch_size, attn_tensor_t* out,
                                                          int64_t* out_shape,
                                                          int64_t* out_strides) ATTN_NOEXCEPT;
/** Pointer type of attn_reshape_query_for_spec_decode(). */
typedef attn_error_t* (*PFN_attn_reshape_query_for_spec_decode)(const attn_tensor_t* query,
                                                                int64_t batch_size,
                                                                attn_tensor_t* out,
                                                                int64_t* out_shape,
                                                                int64_t* out_strides);

/**
 * @brief vLLM's reshape_attn_output_for_spec_decode: the inverse of
 * attn_reshape_query_for_spec_decode(), a (batch_size * seq_len, heads, dim) view of a
 * (batch_size, seq_len, heads, dim) attention output; a 3-D output is returned as it is
 * (ABI 1.7). Nothing is copied and the data is not read.
 *
 * As torch's `view`, the two leading dimensions must be mergeable: strides[0] ==
 * strides[1] * shape[1] unless one of them has size 1 (a view of a transposed tensor is refused).
 * @param[in] attn_output A 3-D or 4-D tensor (any device, dtype).
 * @param[out] out Receives the view: attn_output's data, byte_offset, device and dtype; shape
 *             and strides point to `out_shape` and `out_strides`.
 * @param[out] out_shape 3 entries, owned by the caller.
 * @param[out] out_strides 3 entries, owned by the caller.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT ("attn_output must be 4D, got 2D", a view
 *         torch refuses, a NULL argument).
 */
ATTN_API attn_error_t* attn_reshape_attn_output_for_spec_decode(const attn_tensor_t* attn_output,
                                                                attn_tensor_t* out,
                                                                int64_t* out_shape,
                                                                int64_t* out_strides) ATTN_NOEXCEPT;
/** Pointer type of attn_reshape_attn_output_for_spec_decode(). */
typedef attn_error_t* (*PFN_attn_reshape_attn_output_for_spec_decode)(
    const attn_tensor_t* attn_output, attn_tensor_t* out, int64_t* out_shape,
    int64_t* out_strides);

/** The inputs of compute_slot_mapping. Fill with ::ATTN_SLOT_MAPPING_ARGS_INIT. */
typedef struct attn_slot_mapping_args {
  size_t struct_size;                       /**< ::ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE. */
  const attn_tensor_t* query_start_loc;     /**< (num_reqs + 1,) int32, host or CUDA. */
  const attn_tensor_t* query_start_loc_cpu; /**< Host mirror; required for a CUDA
                                                 query_start_loc. */
  int64_t num_reqs;                         /**< Requests. */
  const attn_tensor_t* positions;           /**< (num_tokens,) int64 token positions. */
  const attn_tensor_t* positions_cpu;       /**< Optional host mirror; lets libattn check
                                                 every block index before the kernel. */
  const attn_tensor_t* block_table;         /**< (>= num_reqs, width) int32. */
  int32_t block_size;                       /**< Tokens per block (> 0). */
  int32_t dcp_world_size;                   /**< DCP world size (>= 1; default 1). */
  int32_t dcp_rank;                         /**< This rank (0 <= rank < world size). */
  int32_t cp_kv_cache_interleave_size;      /**< Interleave (>= 1, divides block_size). */
  const attn_tensor_t* slot_mapping;        /**< Output: (>= num_tokens,) int64. */
  void* extension;                          /**< Reserved; must be NULL. */
} attn_slot_mapping_args_t;

/** Size of ::attn_slot_mapping_args_t in this header version. */
#define ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE \
  (offsetof(attn_slot_mapping_args_t, extension) + sizeof(void*))
/** Initializer: no tensors, DCP size 1, interleave 1. */
#define ATTN_SLOT_MAPPING_ARGS_INIT \
  { ATTN_SLOT_MAPPING_ARGS_STRUCT_SIZE, NULL, NULL, 0, NULL, NULL, NULL, 0, 1, 0, 1, NULL, NULL }

/**
 * @brief block_table.py's compute_slot_mapping: slot = block_table[r][pos / (block_size *
 * dcp_size)] * block_size + local offset for each scheduled token of each request; with DCP,
 * tokens stored on other ranks get ::ATTN_PAD_SLOT_ID; entries from num_tokens to the end of
 * `slot_mapping` are set to ::ATTN_PAD_SLOT_ID (CUDA-graph padding).
 *
 * Tokens in [query_start_loc[num_reqs], num_tokens) are not written, as in vLLM. A position
 * whose block lies beyond the table is an error when positions can be read on the host; on
 * the device, without positions_cpu, it gets ::ATTN_PAD_SLOT_ID instead of a read outside the
 * table.
 * @param[in] args The inputs and the output.
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad field.
 */
ATTN_API attn_error_t* attn_compute_slot_mapping(const attn_slot_mapping_args_t* args,
                                                 attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_compute_slot_mapping(). */
typedef attn_error_t* (*PFN_attn_compute_slot_mapping)(const attn_slot_mapping_args_t* args,
                                                       attn_stream_t stream);

/**
 * @brief FlashInfer's paged KV layout (vLLM's FlashInferMetadataBuilder
 * _compute_flashinfer_kv_metadata): indptr = prefix sum of cdiv(seq_len, page_size); indices =
 * each block-table row's first cdiv(seq_len, page_size) entries, concatenated; last_page_len =
 * seq_len % page_size, or page_size when that is 0 and seq_len > 0. One kernel on CUDA.
 * @param[in] seq_lens (n,) int32, host or CUDA.
 * @param[in] seq_lens_cpu Host mirror (the page total sizes the output); NULL when seq_lens is
 *            host memory.
 * @param[in] block_table (>= n, width) int32 where seq_lens lives.
 * @param[in] page_size Tokens per page (> 0).
 * @param[in] out_indptr (>= n + 1,) int32.
 * @param[in] out_indices (>= total pages,) int32.
 * @param[in] out_last_page_len (>= n,) int32.
 * @param[out] out_num_pages Receives the total pages (indptr[n]).
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT (a row narrower than its pages, an output
 *         too small).
 */
ATTN_API attn_error_t* attn_compute_flashinfer_kv_metadata(
    const attn_tensor_t* seq_lens, const attn_tensor_t* seq_lens_cpu,
    const attn_tensor_t* block_table, int32_t page_size, const attn_tensor_t* out_indptr,
    const attn_tensor_t* out_indices, const attn_tensor_t* out_last_page_len,
    int64_t* out_num_pages, attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_compute_flashinfer_kv_metadata(). */
typedef attn_error_t* (*PFN_attn_compute_flashinfer_kv_metadata)(
    const attn_tensor_t* seq_lens, const attn_tensor_t* seq_lens_cpu,
    const attn_tensor_t* block_table, int32_t page_size, const attn_tensor_t* out_indptr,
    const attn_tensor_t* out_indices, const attn_tensor_t* out_last_page_len,
    int64_t* out_num_pages, attn_stream_t stream);

/** What attn_compute_causal_conv1d_metadata() reports. */
typedef struct attn_conv1d_info {
  size_t struct_size;    /**< Set by the caller: ::ATTN_CONV1D_INFO_STRUCT_SIZE. */
  int64_t tot;           /**< Programs of all prefill requests: sum of cdiv(seqlen, 8). */
  int64_t num_programs;  /**< max(1024, tot) * 2: the entries written to each buffer. */
} attn_conv1d_info_t;

/** Size of ::attn_conv1d_info_t in this header version. */
#define ATTN_CONV1D_INFO_STRUCT_SIZE (offsetof(attn_conv1d_info_t, num_programs) + sizeof(int64_t))
/** Initializer for an output info. */
#define ATTN_CONV1D_INFO_INIT { ATTN_CONV1D_INFO_STRUCT_SIZE, 0, 0 }

/**
 * @brief vLLM's compute_causal_conv1d_metadata (BLOCK_M = 8): for the prefill requests,
 * batch_ptr[p] = the request of program p and token_chunk_offset_ptr[p] = its index within the
 * request (cdiv(seqlen, 8) programs per request, in order), for p < tot; ::ATTN_PAD_SLOT_ID for
 * p in [tot, num_programs).
 * @param[in] query_start_loc_p_cpu (n + 1,) int32 in host memory: the prefill requests.
 * @param[in] query_start_loc_p The same values where the outputs live (may be the same tensor
 *            on the host).
 * @param[in] out_batch_ptr (>= num_programs,) int32.
 * @param[in] out_token_chunk_offset_ptr (>= num_programs,) int32.
 * @param[in] out_nums Optional (>= n,) int32 host output: cdiv(seqlen, 8) per request.
 * @param[in,out] info A struct whose struct_size is set; receives tot and num_programs.
 * @param[in] stream CUDA stream for device outputs (one single-block kernel).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT (outputs smaller than num_programs,
 *         which the message states).
 */
ATTN_API attn_error_t* attn_compute_causal_conv1d_metadata(
    const attn_tensor_t* query_start_loc_p_cpu, const attn_tensor_t* query_start_loc_p,
    const attn_tensor_t* out_batch_ptr, const attn_tensor_t* out_token_chunk_offset_ptr,
    const attn_tensor_t* out_nums, attn_conv1d_info_t* info, attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_compute_causal_conv1d_metadata(). */
typedef attn_error_t* (*PFN_attn_compute_causal_conv1d_metadata)(
    const attn_tensor_t* query_start_loc_p_cpu, const attn_tensor_t* query_start_loc_p,
    const attn_tensor_t* out_batch_ptr, const attn_tensor_t* out_token_chunk_offset_ptr,
    const attn_tensor_t* out_nums, attn_conv1d_info_t* info, attn_stream_t stream);

/**
 * @brief vLLM's make_kv_sharing_fast_prefill_common_attn_metadata: the batch of the tokens whose
 * logits are needed. When max_query_len == 1, or when fast prefill is not armed for this step
 * (`logits_indices_padded` is NULL, as in vLLM 0.33; libattn 1.3 and earlier refused it), the
 * result is the input batch as it is (outputs untouched); from ABI 1.7 that pass-through checks
 * the views and scalars but reads no value (O(1) in the batch, as vLLM's returns at once). Otherwise: the request of each of the first num_logits_indices logits indices
 * (bucketize over query_start_loc[1:], right), counted per request, give the new
 * query_start_loc; num_actual_tokens = their total, max_query_len = the largest count;
 * seq_lens, block table, slot mapping and max_seq_len are kept; causal.
 * @param[in] common The batch; logits_indices_padded, when given, sorted and inside the batch's
 *            tokens.
 * @param[in] logits_indices_cpu Host copy of logits_indices_padded (>= num_logits_indices
 *            entries, same dtype); required when logits_indices_padded is device memory.
 * @param[in] out_query_start_loc (>= num_reqs + 1,) int32 where the batch lives.
 * @param[in] out_query_start_loc_cpu (>= num_reqs + 1,) int32 in host memory.
 * @param[out] out Receives metadata of kind "common", owned by the caller, also when the batch
 *             passes through (a handle viewing the input; from ABI 1.7 a handle that
 *             attn_metadata_destroy() released on the same thread is reused, so a step's make
 *             and destroy allocate nothing after the first).
 *             attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex() makes no handle for a
 *             pass-through at all.
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT (unsorted or out-of-range indices).
 */
ATTN_API attn_error_t* attn_make_kv_sharing_fast_prefill_common_attn_metadata(
    const attn_common_metadata_t* common, const attn_tensor_t* logits_indices_cpu,
    const attn_tensor_t* out_query_start_loc, const attn_tensor_t* out_query_start_loc_cpu,
    attn_metadata_t** out, attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_make_kv_sharing_fast_prefill_common_attn_metadata(). */
typedef attn_error_t* (*PFN_attn_make_kv_sharing_fast_prefill_common_attn_metadata)(
    const attn_common_metadata_t* common, const attn_tensor_t* logits_indices_cpu,
    const attn_tensor_t* out_query_start_loc, const attn_tensor_t* out_query_start_loc_cpu,
    attn_metadata_t** out, attn_stream_t stream);

/**
 * @brief attn_make_kv_sharing_fast_prefill_common_attn_metadata() that returns the batch in a
 * struct of the caller's and, like vLLM, allocates nothing when the batch passes through
 * (ABI 1.7).
 *
 * vLLM's function returns its argument itself when max_query_len == 1 or fast prefill is not
 * armed (`logits_indices_padded` NULL); the ABI 1.0 function must still hand out a new
 * caller-owned handle then. This one writes the batch to `out_batch` and says whether anything
 * was made:
 * - **Pass-through**: `*out_owned` = NULL and `out_batch` = a copy of `*common` (the same tensor
 *   pointers: valid as long as the caller's own descriptors and memory). Nothing is allocated,
 *   no tensor descriptor or value is read, the outputs are untouched: O(1), tens of
 *   nanoseconds (docs/performance.md). Checked: the struct sizes, the pointer arguments, the
 *   scalars (counts >= 0 and below 2^31), that query_start_loc, seq_lens, block_table_tensor and
 *   slot_mapping are given, that `extension` is NULL, and that a batch without logits indices
 *   has no count or mirror of them. The batch's views and values are checked by the build that
 *   takes `out_batch`, as every build checks its input (the ABI 1.0 function checks the views
 *   here).
 * - **New batch**: exactly what the ABI 1.0 function makes (same checks, same values, the same
 *   outputs written): `*out_owned` = that caller-owned metadata, and `out_batch` = its view,
 *   as attn_metadata_to_common() gives (tensor pointers into `*out_owned`, valid until it is
 *   destroyed).
 *
 * Either way the caller builds on `out_batch` and then calls attn_metadata_destroy(*out_owned)
 * (a no-op for NULL): one code path for both cases.
 * @code
 *   attn_common_metadata_t batch = ATTN_COMMON_METADATA_INIT;
 *   attn_metadata_t* owned = NULL;
 *   err = attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(&common, NULL, &qsl, &qsl_cpu,
 *                                                                    &batch, &owned, stream);
 *   err = attn_build(builder, 0, &batch, 0, &metadata, stream);
 *   attn_metadata_destroy(owned);  // after the last use of batch
 * @endcode
 * @param[in] common The batch, as for the ABI 1.0 function.
 * @param[in] logits_indices_cpu As for the ABI 1.0 function (may be NULL).
 * @param[in] out_query_start_loc As for the ABI 1.0 function; required even when the batch
 *            passes through (a step with prefills needs it), written only for a new batch.
 * @param[in] out_query_start_loc_cpu The same, in host memory.
 * @param[in,out] out_batch A struct whose `struct_size` is set, at least `common->struct_size`
 *                (so that no field is lost); receives the batch, written up to its
 *                `struct_size`. May be `common` itself (the batch replaced in place, as vLLM
 *                rebinds `common_attn_metadata`).
 * @param[out] out_owned Receives NULL (passed through) or the metadata `out_batch` views, owned
 *             by the caller.
 * @param[in] stream CUDA stream for device tensors (new batch only).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the argument (then `out_batch`
 *         and `*out_owned` are untouched).
 * @par Thread safety
 * Safe to call from any thread; distinct calls must not share output tensors.
 */
ATTN_API attn_error_t* attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(
    const attn_common_metadata_t* common, const attn_tensor_t* logits_indices_cpu,
    const attn_tensor_t* out_query_start_loc, const attn_tensor_t* out_query_start_loc_cpu,
    attn_common_metadata_t* out_batch, attn_metadata_t** out_owned,
    attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex(). */
typedef attn_error_t* (*PFN_attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex)(
    const attn_common_metadata_t* common, const attn_tensor_t* logits_indices_cpu,
    const attn_tensor_t* out_query_start_loc, const attn_tensor_t* out_query_start_loc_cpu,
    attn_common_metadata_t* out_batch, attn_metadata_t** out_owned, attn_stream_t stream);

/** Output tensors of attn_make_local_attention_virtual_batches(), for V virtual batches
 *  (attn_local_attention_num_virtual_batches()). "Device" outputs live where the batch does. */
typedef struct attn_local_attention_out {
  size_t struct_size;                           /**< ::ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE. */
  const attn_tensor_t* query_start_loc;         /**< (>= V + 1,) int32, device. */
  const attn_tensor_t* query_start_loc_cpu;     /**< (>= V + 1,) int32, host. */
  const attn_tensor_t* seq_lens;                /**< (>= V,) int32, device. */
  const attn_tensor_t* seq_lens_cpu;            /**< (>= V,) int32, host. */
  const attn_tensor_t* num_computed_tokens_cpu; /**< Optional (>= V,) int32, host. */
  const attn_tensor_t* block_table;             /**< (>= V, >= chunk / block_size) int32,
                                                     device. */
  const attn_tensor_t* virtual_req;             /**< (>= V,) int32, device: the remap's source
                                                     request of each virtual batch. */
  const attn_tensor_t* virtual_block_start;     /**< (>= V,) int32, device: its first block. */
  void* extension;                              /**< Reserved; must be NULL. */
} attn_local_attention_out_t;

/** Size of ::attn_local_attention_out_t in this header version. */
#define ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE \
  (offsetof(attn_local_attention_out_t, extension) + sizeof(void*))
/** Initializer: no outputs. */
#define ATTN_LOCAL_ATTENTION_OUT_INIT \
  { ATTN_LOCAL_ATTENTION_OUT_STRUCT_SIZE, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }

/**
 * @brief The number of local-attention virtual batches of a batch, to size the outputs of
 * attn_make_local_attention_virtual_batches().
 * @param[in] attn_chunk_size Local attention chunk (> 0).
 * @param[in] common The batch (host mirrors of query_start_loc and seq_lens required).
 * @param[out] out Receives V.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT.
 */
ATTN_API attn_error_t* attn_local_attention_num_virtual_batches(int32_t attn_chunk_size,
                                                                const attn_common_metadata_t* common,
                                                                int64_t* out) ATTN_NOEXCEPT;
/** Pointer type of attn_local_attention_num_virtual_batches(). */
typedef attn_error_t* (*PFN_attn_local_attention_num_virtual_batches)(
    int32_t attn_chunk_size, const attn_common_metadata_t* common, int64_t* out);

/**
 * @brief vLLM's make_local_attention_virtual_batches: every request split into its local
 * attention chunks ("virtual batches"), each an independent request of the new batch.
 *
 * Per request: q_tokens_in_first_block = min(chunk - (context % chunk), q_len);
 * tokens_in_last_block = chunk + (seq_len % -chunk); local blocks = 1 + cdiv(q_len -
 * q_tokens_in_first_block, chunk); the local query lengths are the first block's, then chunks,
 * the last partial; KV lengths are chunk except tokens_in_last_block for the last; block table
 * rows start at k_start // block_size (k_start = seq_len - (reverse index * chunk +
 * tokens_in_last_block)), clipped to the table's last column. The result keeps
 * num_actual_tokens and slot_mapping, recomputes max_query_len and max_seq_len, and is causal.
 * The remap (virtual_req, virtual_block_start) rebuilds the local table from another group's
 * table: attn_remap_local_block_table().
 * @param[in] attn_chunk_size Local attention chunk (> 0, a multiple of block_size).
 * @param[in] common The batch (host mirrors of query_start_loc and seq_lens required).
 * @param[in] block_size Tokens per KV block (> 0).
 * @param[in] outputs The output tensors.
 * @param[out] out Receives metadata of kind "common" (num_reqs = V), owned by the caller.
 * @param[in] stream CUDA stream for device tensors (two kernels).
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT ("attn_chunk_size 24 is not divisible by
 *         block_size 16", outputs too small).
 */
ATTN_API attn_error_t* attn_make_local_attention_virtual_batches(
    int32_t attn_chunk_size, const attn_common_metadata_t* common, int32_t block_size,
    const attn_local_attention_out_t* outputs, attn_metadata_t** out,
    attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_make_local_attention_virtual_batches(). */
typedef attn_error_t* (*PFN_attn_make_local_attention_virtual_batches)(
    int32_t attn_chunk_size, const attn_common_metadata_t* common, int32_t block_size,
    const attn_local_attention_out_t* outputs, attn_metadata_t** out, attn_stream_t stream);

/**
 * @brief The local-attention remap applied to another block table (vLLM's make_block_table
 * lambda): out[v][j] = block_table[virtual_req[v]][min(virtual_block_start[v] + j, width - 1)]
 * for out.shape[1] columns.
 * @param[in] block_table The (rows, width) int32 table to remap.
 * @param[in] virtual_req (>= num_virtual_batches,) int32 from the virtual batches.
 * @param[in] virtual_block_start (>= num_virtual_batches,) int32.
 * @param[in] num_virtual_batches V.
 * @param[in] out (>= V, pages) int32 output table.
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT.
 */
ATTN_API attn_error_t* attn_remap_local_block_table(const attn_tensor_t* block_table,
                                                    const attn_tensor_t* virtual_req,
                                                    const attn_tensor_t* virtual_block_start,
                                                    int64_t num_virtual_batches,
                                                    const attn_tensor_t* out,
                                                    attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_remap_local_block_table(). */
typedef attn_error_t* (*PFN_attn_remap_local_block_table)(const attn_tensor_t* block_table,
                                                          const attn_tensor_t* virtual_req,
                                                          const attn_tensor_t* virtual_block_start,
                                                          int64_t num_virtual_batches,
                                                          const attn_tensor_t* out,
                                                          attn_stream_t stream);

/**
 * @brief ubatch_utils' slice_query_start_locs: out[k] = query_start_loc[start + k] -
 * query_start_loc[start] for requests [start, stop).
 * @param[in] query_start_loc (>= stop + 1,) int32, host or CUDA.
 * @param[in] request_start First request (0 <= start <= stop).
 * @param[in] request_stop One past the last request.
 * @param[in] out (>= stop - start + 1,) int32 where query_start_loc lives.
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT.
 */
ATTN_API attn_error_t* attn_slice_query_start_locs(const attn_tensor_t* query_start_loc,
                                                   int64_t request_start, int64_t request_stop,
                                                   const attn_tensor_t* out,
                                                   attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_slice_query_start_locs(). */
typedef attn_error_t* (*PFN_attn_slice_query_start_locs)(const attn_tensor_t* query_start_loc,
                                                         int64_t request_start,
                                                         int64_t request_stop,
                                                         const attn_tensor_t* out,
                                                         attn_stream_t stream);

/** A micro-batch: a request range and a token range, both end-exclusive. */
typedef struct attn_ubatch_slice {
  size_t struct_size;     /**< ::ATTN_UBATCH_SLICE_STRUCT_SIZE. */
  int64_t request_start;  /**< First request. */
  int64_t request_stop;   /**< One past the last request. */
  int64_t token_start;    /**< First token. */
  int64_t token_stop;     /**< One past the last token. */
} attn_ubatch_slice_t;

/** Size of ::attn_ubatch_slice_t in this header version. */
#define ATTN_UBATCH_SLICE_STRUCT_SIZE (offsetof(attn_ubatch_slice_t, token_stop) + sizeof(int64_t))
/** Initializer: an empty slice. */
#define ATTN_UBATCH_SLICE_INIT { ATTN_UBATCH_SLICE_STRUCT_SIZE, 0, 0, 0, 0 }

/**
 * @brief vLLM's maybe_create_ubatch_slices(should_ubatch=True, ...): token split points at
 * split_point * i, each slice's requests those overlapping its tokens; the padded slices extend
 * the last one to num_reqs_padded requests and num_tokens_padded tokens.
 * @param[in] num_scheduled_tokens Host array of `num_reqs` counts.
 * @param[in] num_reqs Requests.
 * @param[in] num_tokens_padded Tokens after padding (>= the scheduled total, <= 2^31-1).
 * @param[in] num_reqs_padded Requests after padding (>= num_reqs).
 * @param[in] num_ubatches Micro-batches (1 <= n <= 1024). More micro-batches than tokens give
 *            empty slices, as in vLLM 0.33 (libattn 1.3 and earlier refused them).
 * @param[in] split_point Tokens per split (at most num_tokens_padded); 0 for
 *            num_tokens_padded / num_ubatches. A list of split points:
 *            attn_maybe_create_ubatch_slices_ex().
 * @param[in,out] out_slices `num_ubatches` slices whose struct_size is set.
 * @param[in,out] out_padded_slices `num_ubatches` slices whose struct_size is set.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT.
 */
ATTN_API attn_error_t* attn_maybe_create_ubatch_slices(const int32_t* num_scheduled_tokens,
                                                       int64_t num_reqs, int64_t num_tokens_padded,
                                                       int64_t num_reqs_padded, int32_t num_ubatches,
                                                       int64_t split_point,
                                                       attn_ubatch_slice_t* out_slices,
                                                       attn_ubatch_slice_t* out_padded_slices)
    ATTN_NOEXCEPT;
/** Pointer type of attn_maybe_create_ubatch_slices(). */
typedef attn_error_t* (*PFN_attn_maybe_create_ubatch_slices)(
    const int32_t* num_scheduled_tokens, int64_t num_reqs, int64_t num_tokens_padded,
    int64_t num_reqs_padded, int32_t num_ubatches, int64_t split_point,
    attn_ubatch_slice_t* out_slices, attn_ubatch_slice_t* out_padded_slices);

/**
 * @brief vLLM 0.33's maybe_create_ubatch_slices(should_ubatch=True, ..., split_point) with
 * split_point a list (one token split point per micro-batch boundary) or None (ABI 1.4).
 *
 * The token ranges are [0, p_1), [p_1, p_2), ..., [p_{n-1}, scheduled total), each slice's
 * requests those overlapping its tokens (numpy searchsorted right - 1 of its start, left of its
 * end); the padded slices extend the last one to num_reqs_padded requests and
 * num_tokens_padded tokens. Slices may be empty (more micro-batches than tokens, equal points).
 * @param[in] num_scheduled_tokens Host array of `num_reqs` counts (>= 0).
 * @param[in] num_reqs Requests.
 * @param[in] num_tokens_padded Tokens after padding (>= the scheduled total, <= 2^31-1).
 * @param[in] num_reqs_padded Requests after padding (>= num_reqs).
 * @param[in] num_ubatches Micro-batches (1 <= n <= 1024).
 * @param[in] split_points `num_split_points` token split points, non-decreasing, each in
 *            [0, num_tokens_padded] (libattn's check: vLLM would make slices that end before
 *            they start); NULL for vLLM's None: split_point * i with split_point =
 *            num_tokens_padded / num_ubatches.
 * @param[in] num_split_points num_ubatches - 1 (vLLM asserts it); 0 when split_points is NULL.
 * @param[in,out] out_slices `num_ubatches` slices whose struct_size is set.
 * @param[in,out] out_padded_slices `num_ubatches` slices whose struct_size is set.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument; nothing is
 *         written on failure.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_maybe_create_ubatch_slices_ex(
    const int32_t* num_scheduled_tokens, int64_t num_reqs, int64_t num_tokens_padded,
    int64_t num_reqs_padded, int32_t num_ubatches, const int64_t* split_points,
    int64_t num_split_points, attn_ubatch_slice_t* out_slices,
    attn_ubatch_slice_t* out_padded_slices) ATTN_NOEXCEPT;
/** Pointer type of attn_maybe_create_ubatch_slices_ex(). */
typedef attn_error_t* (*PFN_attn_maybe_create_ubatch_slices_ex)(
    const int32_t* num_scheduled_tokens, int64_t num_reqs, int64_t num_tokens_padded,
    int64_t num_reqs_padded, int32_t num_ubatches, const int64_t* split_points,
    int64_t num_split_points, attn_ubatch_slice_t* out_slices,
    attn_ubatch_slice_t* out_padded_slices);

/**
 * @brief vLLM 0.33's is_last_ubatch_empty (v1/worker/ubatch_utils.py): whether the last of
 * `num_ubatches` equal micro-batches of `padded_num_tokens` tokens holds none of the
 * `orig_num_tokens` real ones: (padded_num_tokens // num_ubatches) * (num_ubatches - 1) >=
 * orig_num_tokens (ABI 1.7). The runner then does not micro-batch the step.
 * @param[in] orig_num_tokens Tokens before padding (>= 0).
 * @param[in] padded_num_tokens Tokens after padding (>= 0).
 * @param[in] num_ubatches Micro-batches (>= 1; vLLM divides by it).
 * @param[out] out_empty 1 when the last micro-batch is empty, else 0; untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument and its value.
 */
ATTN_API attn_error_t* attn_is_last_ubatch_empty(int64_t orig_num_tokens, int64_t padded_num_tokens,
                                                 int32_t num_ubatches,
                                                 int32_t* out_empty) ATTN_NOEXCEPT;
/** Pointer type of attn_is_last_ubatch_empty(). */
typedef attn_error_t* (*PFN_attn_is_last_ubatch_empty)(int64_t orig_num_tokens,
                                                       int64_t padded_num_tokens,
                                                       int32_t num_ubatches, int32_t* out_empty);

/**
 * @brief vLLM 0.33's get_num_ubatches (v1/worker/ubatch_utils.py) on the two ParallelConfig
 * fields it derives from: how many micro-batches a step is split into (ABI 1.7).
 *
 * ParallelConfig's `use_ubatching` is `enable_dbo or ubatch_size > 1` and its `num_ubatches` is
 * `2 if enable_dbo else ubatch_size`; the result is num_ubatches when ubatching is used, else 1.
 * @param[in] enable_dbo 0 or 1 (`parallel_config.enable_dbo`).
 * @param[in] ubatch_size `parallel_config.ubatch_size` (>= 0; vLLM's default is 0).
 * @param[out] out_num_ubatches The count (>= 1); untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument and its value.
 */
ATTN_API attn_error_t* attn_get_num_ubatches(int32_t enable_dbo, int32_t ubatch_size,
                                             int32_t* out_num_ubatches) ATTN_NOEXCEPT;
/** Pointer type of attn_get_num_ubatches(). */
typedef attn_error_t* (*PFN_attn_get_num_ubatches)(int32_t enable_dbo, int32_t ubatch_size,
                                                   int32_t* out_num_ubatches);

/**
 * @brief vLLM 0.33's check_ubatch_thresholds (v1/worker/ubatch_utils.py) on the ParallelConfig
 * fields it reads: whether a step of `num_tokens` tokens is large enough to micro-batch (ABI 1.7).
 *
 * False when ubatching is off (`enable_dbo` 0 and `ubatch_size` <= 1); else num_tokens >=
 * dbo_decode_token_threshold for a uniform decode batch, num_tokens >=
 * dbo_prefill_token_threshold otherwise.
 * @param[in] enable_dbo 0 or 1 (`parallel_config.enable_dbo`).
 * @param[in] ubatch_size `parallel_config.ubatch_size` (>= 0).
 * @param[in] dbo_decode_token_threshold `parallel_config.dbo_decode_token_threshold` (>= 0).
 * @param[in] dbo_prefill_token_threshold `parallel_config.dbo_prefill_token_threshold` (>= 0).
 * @param[in] num_tokens Tokens of the step (>= 0).
 * @param[in] uniform_decode 0 or 1.
 * @param[out] out_ubatch 1 when the step passes the threshold, else 0; untouched on failure.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT naming the bad argument and its value.
 */
ATTN_API attn_error_t* attn_check_ubatch_thresholds(int32_t enable_dbo, int32_t ubatch_size,
                                                    int64_t dbo_decode_token_threshold,
                                                    int64_t dbo_prefill_token_threshold,
                                                    int64_t num_tokens, int32_t uniform_decode,
                                                    int32_t* out_ubatch) ATTN_NOEXCEPT;
/** Pointer type of attn_check_ubatch_thresholds(). */
typedef attn_error_t* (*PFN_attn_check_ubatch_thresholds)(
    int32_t enable_dbo, int32_t ubatch_size, int64_t dbo_decode_token_threshold,
    int64_t dbo_prefill_token_threshold, int64_t num_tokens, int32_t uniform_decode,
    int32_t* out_ubatch);

/** Output tensors of one micro-batch's metadata (n = its requests). */
typedef struct attn_ubatch_out {
  size_t struct_size;                       /**< ::ATTN_UBATCH_OUT_STRUCT_SIZE. */
  const attn_tensor_t* query_start_loc;     /**< (>= n + 1,) int32 where the batch lives. */
  const attn_tensor_t* query_start_loc_cpu; /**< (>= n + 1,) int32, host. */
  const attn_tensor_t* seq_lens;            /**< (>= n,) int32 where the batch lives. */
  const attn_tensor_t* seq_lens_cpu;        /**< Optional (>= n,) int32, host; filled when the
                                                 batch's seq_lens are readable on the host:
                                                 the slice's `seq_lens_cpu`; or (ABI 1.4) when
                                                 the batch has a seq_lens_cpu_upper_bound, the
                                                 slice's `seq_lens_cpu_upper_bound` (cut as
                                                 vLLM 0.33 cuts it), and then no
                                                 `seq_lens_cpu`. */
  void* extension;                          /**< Reserved; must be NULL. */
} attn_ubatch_out_t;

/** Size of ::attn_ubatch_out_t in this header version. */
#define ATTN_UBATCH_OUT_STRUCT_SIZE (offsetof(attn_ubatch_out_t, extension) + sizeof(void*))
/** Initializer: no outputs. */
#define ATTN_UBATCH_OUT_INIT { ATTN_UBATCH_OUT_STRUCT_SIZE, NULL, NULL, NULL, NULL, NULL }

/**
 * @brief ubatch_utils' _make_metadata_with_slice: the batch of one micro-batch.
 *
 * query_start_loc is sliced and rebased; a first request cut by the token split loses its
 * earlier tokens from the query lengths (its seq_len is kept); a last request cut by the split
 * loses its later tokens from both its query length and its seq_len (context + the tokens in
 * this part). block_table and slot_mapping are views of the slice's rows and tokens;
 * max_seq_len is kept, max_query_len recomputed (the input's when every query is empty);
 * causal. As vLLM 0.33.0: `positions` keeps the slice's tokens, `seq_lens_cpu_upper_bound` is
 * cut like seq_lens (see ::attn_ubatch_out_t's seq_lens_cpu); other 1.4 fields are dropped.
 * @param[in] common The batch (query_start_loc_cpu required on a device batch).
 * @param[in] slice Requests and tokens; token_start must lie in the first request.
 * @param[in] outputs The output tensors.
 * @param[out] out Receives metadata of kind "common", owned by the caller.
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT (empty slice, token_start outside its
 *         first request, ranges beyond the batch).
 */
ATTN_API attn_error_t* attn_make_metadata_with_slice(const attn_common_metadata_t* common,
                                                     const attn_ubatch_slice_t* slice,
                                                     const attn_ubatch_out_t* outputs,
                                                     attn_metadata_t** out,
                                                     attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_make_metadata_with_slice(). */
typedef attn_error_t* (*PFN_attn_make_metadata_with_slice)(const attn_common_metadata_t* common,
                                                           const attn_ubatch_slice_t* slice,
                                                           const attn_ubatch_out_t* outputs,
                                                           attn_metadata_t** out,
                                                           attn_stream_t stream);

/**
 * @brief ubatch_utils' split_attn_metadata: attn_make_metadata_with_slice() for each slice.
 * @param[in] common The batch.
 * @param[in] slices `num_slices` slices.
 * @param[in] num_slices Slices.
 * @param[in] outputs `num_slices` output sets.
 * @param[out] out `num_slices` metadata pointers, each owned by the caller; on failure none is
 *             written (and nothing is left allocated).
 * @param[in] stream CUDA stream for device tensors.
 * @return NULL on success; the first slice's error, its message prefixed with "slices[k]: ".
 */
ATTN_API attn_error_t* attn_split_attn_metadata(const attn_common_metadata_t* common,
                                                const attn_ubatch_slice_t* slices,
                                                size_t num_slices,
                                                const attn_ubatch_out_t* outputs,
                                                attn_metadata_t** out,
                                                attn_stream_t stream) ATTN_NOEXCEPT;
/** Pointer type of attn_split_attn_metadata(). */
typedef attn_error_t* (*PFN_attn_split_attn_metadata)(const attn_common_metadata_t* common,
                                                      const attn_ubatch_slice_t* slices,
                                                      size_t num_slices,
                                                      const attn_ubatch_out_t* outputs,
                                                      attn_metadata_t** out, attn_stream_t stream);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup hyper Per-layer hyperparameters
 *  @{ */

/**
 * @brief vLLM's `infer_global_hyperparameters`: the first layer's parameters as the global
 * ones, and whether every layer shares its window and all its parameters.
 * @param[in] layers `num_layers` entries, `layers[0].struct_size` bytes apart.
 * @param[in] num_layers At least 1.
 * @param[in,out] out_global A struct whose `struct_size` is set; receives the first layer's
 *                parameters.
 * @param[out] out_has_same_window_lefts Receives 1 when every window_left equals the first.
 * @param[out] out_has_same_all_params Receives 1 when every layer equals the first in
 *             window_left, logits_soft_cap (None equals only None), sm_scale and has_sinks.
 * @return NULL on success; ::ATTN_ERR_INVALID_ARGUMENT for no layers ("No attention layers
 *         found in the model") or a bad `struct_size`.
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_infer_global_hyperparameters(const attn_per_layer_params_t* layers,
                                                         size_t num_layers,
                                                         attn_per_layer_params_t* out_global,
                                                         int32_t* out_has_same_window_lefts,
                                                         int32_t* out_has_same_all_params)
    ATTN_NOEXCEPT;
/** Pointer type of attn_infer_global_hyperparameters(). */
typedef attn_error_t* (*PFN_attn_infer_global_hyperparameters)(
    const attn_per_layer_params_t* layers, size_t num_layers, attn_per_layer_params_t* out_global,
    int32_t* out_has_same_window_lefts, int32_t* out_has_same_all_params);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup plugins Plugins
 *  @brief Backends from other shared libraries.
 *
 * A plugin is a shared library that exports ::ATTN_PLUGIN_ENTRY_NAME, a function of type
 * ::attn_plugin_entry_fn returning a static ::attn_plugin_table_t. A plugin includes this header
 * for its types only and never links to libattn: everything it may call comes in the
 * ::attn_plugin_output_t passed to its build. Its backends join the registry beside the built-in
 * ones and are used through the same functions.
 *  @{ */

/** The symbol a plugin exports. */
#define ATTN_PLUGIN_ENTRY_NAME "attn_plugin_entry"

/** How a plugin's build writes its fields; provided by libattn, valid during the call only.
 *  Each setter returns ::ATTN_OK, or ::ATTN_ERR_NOT_FOUND for a name the backend did not
 *  declare, or ::ATTN_ERR_INVALID_ARGUMENT for a malformed tensor. */
typedef struct attn_plugin_output {
  size_t struct_size; /**< Size of this struct as libattn filled it. */
  void* ctx;          /**< Pass as the first argument of every setter. */
  /** Sets a tensor field; the view (and its shape/strides) is copied, its data is not. */
  int32_t (*set_tensor)(void* ctx, const char* name, const attn_tensor_t* value);
  /** Sets an integer field. */
  int32_t (*set_int)(void* ctx, const char* name, int64_t value);
  /** Sets a float field. */
  int32_t (*set_float)(void* ctx, const char* name, double value);
  /** Sets a boolean field. */
  int32_t (*set_bool)(void* ctx, const char* name, int32_t value);
  /** Sets a field to None. */
  int32_t (*set_none)(void* ctx, const char* name);
  /** Gives the message of the error the build is about to return. */
  void (*set_error)(void* ctx, const char* message);
} attn_plugin_output_t;

/** One backend of a plugin. Every callback must be safe to call from any thread for distinct
 *  states, and must not throw or abort. Callbacks that fail return a status code and write a
 *  NUL-terminated message into `err` (at most `err_size` bytes). */
typedef struct attn_plugin_backend {
  size_t struct_size;              /**< ::ATTN_PLUGIN_BACKEND_STRUCT_SIZE. */
  const char* name;                /**< Backend name; unique in the registry. */
  const char* const* field_names;  /**< The names of every field its metadata has. */
  size_t num_fields;               /**< Entries in `field_names`. */
  int32_t supports_update_block_table; /**< Non-zero when its metadata has "block_table" and
                                            "slot_mapping" fields libattn may swap. */
  /** The level for a spec and config (vLLM's classmethod). */
  int32_t (*cudagraph_support)(const attn_kv_cache_spec_t* spec,
                               const attn_builder_config_t* config, int32_t* out_level,
                               char* err, size_t err_size);
  /** Creates a builder state; `*out_reorder_batch_threshold` starts as ::ATTN_NO_REORDER. */
  int32_t (*create)(const attn_kv_cache_spec_t* spec, const attn_builder_config_t* config,
                    void** out_state, int32_t* out_reorder_batch_threshold, char* err,
                    size_t err_size);
  /** Destroys a state from `create`. */
  void (*destroy)(void* state);
  /** Builds: writes every field through `out` (unset fields are None); the batch has been
   *  validated by libattn. Returns ::ATTN_OK or a status code after `out->set_error`. */
  int32_t (*build)(void* state, int64_t common_prefix_len, const attn_common_metadata_t* common,
                   int32_t fast_build, const attn_plugin_output_t* out, attn_stream_t stream);
  void* extension;                 /**< Reserved; must be NULL. */
} attn_plugin_backend_t;

/** Size of ::attn_plugin_backend_t in this header version. */
#define ATTN_PLUGIN_BACKEND_STRUCT_SIZE \
  (offsetof(attn_plugin_backend_t, extension) + sizeof(void*))

/** What a plugin's entry point returns; static storage in the plugin. */
typedef struct attn_plugin_table {
  size_t struct_size;                          /**< ::ATTN_PLUGIN_TABLE_STRUCT_SIZE. */
  uint32_t abi_major;                          /**< ::ATTN_VERSION_MAJOR it was built with. */
  uint32_t abi_minor;                          /**< ::ATTN_VERSION_MINOR it was built with. */
  const char* plugin_name;                     /**< A name for messages. */
  const attn_plugin_backend_t* const* backends; /**< `num_backends` backends. */
  size_t num_backends;                         /**< At least 1. */
  void* extension;                             /**< Reserved; must be NULL. */
} attn_plugin_table_t;

/** Size of ::attn_plugin_table_t in this header version. */
#define ATTN_PLUGIN_TABLE_STRUCT_SIZE (offsetof(attn_plugin_table_t, extension) + sizeof(void*))

/** The type of a plugin's entry point. */
typedef const attn_plugin_table_t* (*attn_plugin_entry_fn)(void);

/**
 * @brief Loads a plugin with dlopen and registers its backends.
 *
 * Refused when the library cannot be opened, lacks the entry point, returns NULL or a malformed
 * table, was built for another ABI major (or a newer minor), or names a backend that is already
 * registered; nothing is registered then and the library is closed again.
 * @param[in] path A path for dlopen.
 * @param[out] out Receives the plugin, owned by the caller; release with attn_plugin_unload().
 * @return NULL on success; ::ATTN_ERR_NOT_FOUND (no file, no entry point),
 *         ::ATTN_ERR_ABI_MISMATCH (with both versions), ::ATTN_ERR_INVALID_ARGUMENT (malformed
 *         table, duplicate name).
 * @par Thread safety
 * Safe to call from any thread.
 */
ATTN_API attn_error_t* attn_plugin_load(const char* path, attn_plugin_t** out) ATTN_NOEXCEPT;
/** Pointer type of attn_plugin_load(). */
typedef attn_error_t* (*PFN_attn_plugin_load)(const char* path, attn_plugin_t** out);

/**
 * @brief Removes a plugin's backends from the registry and closes it.
 * @param[in] plugin The plugin; NULL is accepted (returns NULL).
 * @return NULL on success (the handle is then freed); ::ATTN_ERR_BUSY while builders of its
 *         backends exist (nothing changes; destroy them and call again).
 * @par Thread safety
 * Safe to call from any thread; not concurrently for the same plugin.
 */
ATTN_API attn_error_t* attn_plugin_unload(attn_plugin_t* plugin) ATTN_NOEXCEPT;
/** Pointer type of attn_plugin_unload(). */
typedef attn_error_t* (*PFN_attn_plugin_unload)(attn_plugin_t* plugin);

/**
 * @brief The plugin's name from its table.
 * @param[in] plugin The plugin.
 * @return The name, valid until the plugin is unloaded; "" for NULL.
 */
ATTN_API const char* attn_plugin_name(const attn_plugin_t* plugin) ATTN_NOEXCEPT;
/** Pointer type of attn_plugin_name(). */
typedef const char* (*PFN_attn_plugin_name)(const attn_plugin_t* plugin);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup api_table Function table
 *  @brief Every function of this header in one const table (ABI 1.3), for programs that load
 *  libattn with `dlopen` and would rather resolve one symbol than one per function, as Vulkan's
 *  and PJRT's loaders do.
 *
 * Each function `attn_x` has a pointer type `PFN_attn_x` declared next to it, and a member
 * `attn_x` of that type in ::attn_api_t. ::ATTN_API_FUNCTIONS lists every function once, in the
 * table's order, so a program can generate its own declarations, checks or bindings from it:
 * @code
 *   #define CHECK_SYMBOL(name) assert(api->name == (PFN_##name)dlsym(lib, #name));
 *   ATTN_API_FUNCTIONS(CHECK_SYMBOL)
 * @endcode
 * The order is frozen: the functions of a released version keep their places and a minor
 * version appends its own at the end (a new `ATTN_API_FUNCTIONS_1_<minor>` list), so a table
 * from a newer library is a valid table for an older caller. The table is the library's only
 * schema of its functions: a test compares it with the declarations of this header, the
 * `PFN_` types and the exported symbols.
 *  @{ */

/** The functions of ABI 1.0 (unchanged in 1.1 and 1.2), in the order of this header.
 *  Released: never reordered, never extended.
 *  @param X A macro taking one function name. */
#define ATTN_API_FUNCTIONS_1_0(X)                           \
  X(attn_error_code)                                        \
  X(attn_error_message)                                     \
  X(attn_error_destroy)                                     \
  X(attn_status_string)                                     \
  X(attn_get_version)                                       \
  X(attn_check_version)                                     \
  X(attn_device_count)                                      \
  X(attn_common_metadata_unpadded)                          \
  X(attn_split_decodes_and_prefills)                        \
  X(attn_split_decodes_prefills_and_extends)                \
  X(attn_reorder_batch_to_split_decodes_and_prefills)       \
  X(attn_split_prefill_chunks)                              \
  X(attn_get_dcp_local_seq_lens)                            \
  X(attn_reshape_query_for_spec_decode)                     \
  X(attn_compute_slot_mapping)                              \
  X(attn_compute_flashinfer_kv_metadata)                    \
  X(attn_compute_causal_conv1d_metadata)                    \
  X(attn_make_kv_sharing_fast_prefill_common_attn_metadata) \
  X(attn_local_attention_num_virtual_batches)               \
  X(attn_make_local_attention_virtual_batches)              \
  X(attn_remap_local_block_table)                           \
  X(attn_slice_query_start_locs)                            \
  X(attn_maybe_create_ubatch_slices)                        \
  X(attn_make_metadata_with_slice)                          \
  X(attn_split_attn_metadata)                               \
  X(attn_backend_count)                                     \
  X(attn_backend_name)                                      \
  X(attn_backend_cudagraph_support)                         \
  X(attn_builder_workspace_size)                            \
  X(attn_builder_create)                                    \
  X(attn_builder_destroy)                                   \
  X(attn_builder_backend_name)                              \
  X(attn_builder_cudagraph_support)                         \
  X(attn_builder_reorder_batch_threshold)                   \
  X(attn_builder_supports_update_block_table)               \
  X(attn_min_cudagraph_support)                             \
  X(attn_build)                                             \
  X(attn_update_block_table)                                \
  X(attn_build_for_cudagraph_capture)                       \
  X(attn_build_for_drafting)                                \
  X(attn_use_cascade_attention)                             \
  X(attn_metadata_kind)                                     \
  X(attn_metadata_field_count)                              \
  X(attn_metadata_field)                                    \
  X(attn_metadata_get)                                      \
  X(attn_metadata_get_tensor)                               \
  X(attn_metadata_get_int)                                  \
  X(attn_metadata_clone)                                    \
  X(attn_metadata_destroy)                                  \
  X(attn_metadata_to_common)                                \
  X(attn_infer_global_hyperparameters)                      \
  X(attn_plugin_load)                                       \
  X(attn_plugin_unload)                                     \
  X(attn_plugin_name)

/** The functions ABI 1.3 added; frozen like the 1.0 list once 1.3 is released.
 *  @param X A macro taking one function name. */
#define ATTN_API_FUNCTIONS_1_3(X)                           \
  X(attn_backend_info)                                      \
  X(attn_get_api)

/** The functions ABI 1.4 added; frozen like the 1.0 list once 1.4 is released.
 *  @param X A macro taking one function name. */
#define ATTN_API_FUNCTIONS_1_4(X)                           \
  X(attn_get_vllm_release)                                  \
  X(attn_split_decodes_and_prefills_ex)                     \
  X(attn_reorder_batch_to_split_decodes_and_prefills_v2)    \
  X(attn_maybe_create_ubatch_slices_ex)                     \
  X(attn_compute_token_to_req_indices)                      \
  X(attn_compute_mm_prefix_range_tensor)                    \
  X(attn_fill_mm_prefix_query_ranges)                       \
  X(attn_should_skip_dcp_context_attention)                 \
  X(attn_split_dcp_context_queries)                         \
  X(attn_builder_varlen_cudagraph_max_query_len)            \
  X(attn_resolve_cudagraph_mode_and_sizes)

/** The functions ABI 1.5 added; frozen like the 1.0 list once 1.5 is released.
 *  @param X A macro taking one function name. */
#define ATTN_API_FUNCTIONS_1_5(X)                           \
  X(attn_builder_supports_draft_decode_metadata_update)     \
  X(attn_update_draft_decode_metadata)

/** The functions ABI 1.7 added (vLLM 0.33's remaining batch utilities, docs/batch_utilities.md;
 *  the grouped build attn_build_groups());
 *  frozen like the 1.0 list once 1.7 is released.
 *  @param X A macro taking one function name. */
#define ATTN_API_FUNCTIONS_1_7(X)                           \
  X(attn_common_metadata_naive_query_lens)                  \
  X(attn_reshape_attn_output_for_spec_decode)               \
  X(attn_get_dcp_dummy_context_len)                         \
  X(attn_should_split_fa2_dcp_context_attention)            \
  X(attn_is_last_ubatch_empty)                              \
  X(attn_get_num_ubatches)                                  \
  X(attn_check_ubatch_thresholds)                            \
  X(attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex) \
  X(attn_build_groups)

/** Every function of this header, in the order of ::attn_api_t's members.
 *  @param X A macro taking one function name. */
#define ATTN_API_FUNCTIONS(X) ATTN_API_FUNCTIONS_1_0(X) ATTN_API_FUNCTIONS_1_3(X) ATTN_API_FUNCTIONS_1_4(X) ATTN_API_FUNCTIONS_1_5(X) ATTN_API_FUNCTIONS_1_7(X)

/** The function table: `struct_size`, then one member per function of ::ATTN_API_FUNCTIONS, in
 *  that order, named as the function and typed as its `PFN_` pointer type
 *  (`PFN_attn_build attn_build;`). Filled by the library, never by the caller: read it through
 *  attn_get_api(). A member lies within the table only when its offset is below `struct_size`
 *  (a table from an older library is shorter). */
typedef struct attn_api attn_api_t;

/**
 * @brief The function table of this library, for a caller compiled against version
 * `major`.`minor` (ABI 1.3).
 *
 * Resolve this one symbol with dlsym, then call everything through the table:
 * @code
 *   PFN_attn_get_api get_api = (PFN_attn_get_api)dlsym(lib, "attn_get_api");
 *   const attn_api_t* api = NULL;
 *   attn_error_t* err = get_api(ATTN_VERSION_MAJOR, ATTN_VERSION_MINOR, &api);
 * @endcode
 * @param[in] major The caller's ::ATTN_VERSION_MAJOR; must equal the library's.
 * @param[in] minor The caller's ::ATTN_VERSION_MINOR; must not exceed the library's.
 * @param[out] out Receives the table: static, owned by the library, valid until the library is
 *             unloaded; its `struct_size` is the library's ::ATTN_API_STRUCT_SIZE, at least the
 *             caller's when the versions match (a newer library's table is longer).
 * @return NULL on success; ::ATTN_ERR_ABI_MISMATCH, with both versions in the message, when
 *         `major` differs or `minor` is newer than the library's; ::ATTN_ERR_INVALID_ARGUMENT
 *         when `out` is NULL.
 * @par Thread safety
 * Safe to call from any thread; the table is immutable.
 */
ATTN_API attn_error_t* attn_get_api(uint32_t major, uint32_t minor,
                                    const attn_api_t** out) ATTN_NOEXCEPT;
/** Pointer type of attn_get_api(). */
typedef attn_error_t* (*PFN_attn_get_api)(uint32_t major, uint32_t minor, const attn_api_t** out);

/** The definition of ::attn_api_t. */
struct attn_api {
  size_t struct_size; /**< The library's ::ATTN_API_STRUCT_SIZE. */
  /** @cond ATTN_API_MEMBERS */
#define ATTN_API_MEMBER_(name) PFN_##name name;
  ATTN_API_FUNCTIONS(ATTN_API_MEMBER_)
#undef ATTN_API_MEMBER_
  /** @endcond */
};

/** Size of ::attn_api_t in this header version: up to its last member. */
#define ATTN_API_STRUCT_SIZE (offsetof(attn_api_t, attn_build_groups) + sizeof(PFN_attn_build_groups))

/** @} */

ATTN_END_DECL

#endif /* ATTN_C_H_ */
