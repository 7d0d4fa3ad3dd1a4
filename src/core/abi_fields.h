/* The fields of the ABI's three growing structs (include/attn_c.h: attn_kv_cache_spec_t,
 * attn_builder_config_t, attn_common_metadata_t), each listed once, in the struct's order, with
 * how libattn holds it. Everything that walks a struct's fields is derived from these lists:
 *   - the core structs' members (KvCacheSpec, BuilderConfig, CommonMetadata) and their defaults;
 *   - src/capi/convert.cc (ABI -> core, and back for plugins), the plugin's view of a batch
 *     (src/capi/plugin_backend.cc), attn_metadata_to_common (src/capi/metadata_api.cc);
 *   - unpadded() and the metadata of kind "common" (src/core/common_metadata.cc);
 *   - the fuzzers' mutators (tests/fuzz/fuzz_fields.h) and tests/c/test_plugin_fields.c;
 *   - the Python and Go bindings' field tables (scripts/gen_bindings.py reads this file).
 * src/capi/abi_fields_check.cc proves at compile time that each list names exactly the header's
 * fields, in order (their count, their order, each name), and that each default is the
 * header's *_INIT value; gen_bindings.py refuses a list that differs from the header.
 *
 * Adding a field: declare it in attn_c.h (and its *_INIT value, *_STRUCT_SIZE), add its row
 * here, run scripts/gen_bindings.sh. The core then holds it, plugins and bindings see it, the
 * fuzzers mutate it; a SPECIAL field is converted by hand in src/capi/convert.cc.
 *
 * Plain C (macros only, no includes): the C tests and fuzz plugin read it too.
 *
 * Each row is X(KIND, name, ...), the arguments after the name by kind:
 *   SIZE                  struct_size (the ABI's own; the core holds nothing)
 *   EXT                   extension: must be NULL (not held)
 *   RESERVED              must be 0 (not held; keeps the struct free of tail padding)
 *   REMOVED               a vLLM 0.13 flag vLLM 0.33 removed: must be 0 (not held)
 *   SPECIAL               converted by hand (pointers, arrays, strings, the device, validate)
 *   I32, default          int32_t, copied
 *   I32Z, default         int32_t; 0 (the *_INIT value) stands for `default`
 *   I64, default          int64_t, copied
 *   BOOL, default         bool; the ABI's int32_t, non-zero = true
 *   OPT_I64               int64_t; -1 = None (the *_INIT value)
 *   TENSOR, dtype, rows, unpadded
 *                         std::optional<Tensor>; NULL = None.
 *                         dtype: I32, I64 or BOOL, the element type it usually has (what the
 *                           bindings make of a list, what the fuzzers make);
 *                         rows: QSL (num_reqs + 1), REQS (num_reqs), TOKENS (num_actual_tokens),
 *                           ANY (its own length), RANGES ((n, 3) rows);
 *                         unpadded: what vLLM 0.33's unpadded() does with it: SLICE (cut to the
 *                           real requests / tokens by `rows`), KEEP, DROP (None).
 */
#ifndef ATTN_CORE_ABI_FIELDS_H_
#define ATTN_CORE_ABI_FIELDS_H_

/* attn_kv_cache_spec_t (vLLM's AttentionSpec and its subclasses). */
#define ATTN_KV_CACHE_SPEC_FIELDS(X)                                                            \
  X(SIZE, struct_size)                                                                          \
  X(I32, kind, kKvFullAttention)                                                                \
  X(I32, block_size, 0)                                                                         \
  X(I32, num_kv_heads, 0)                                                                       \
  X(I32, head_size, 0)                                                                          \
  X(I32, dtype, kKvDtypeBfloat16)                                                               \
  X(I32, sliding_window, 0)                                                                     \
  X(I32, attention_chunk_size, 0)                                                               \
  X(EXT, extension)                                                                             \
  /* ABI 1.2: MambaSpec's parameters (ATTN_KV_MAMBA specs) */                                   \
  X(I32, mamba_type, kMambaTypeAuto)                                                            \
  X(I32, mamba_chunk_size, 0)             /* model_config.get_mamba_chunk_size(); 0 = None */   \
  X(I32, mamba_cache_mode, kMambaCacheNone)                                                     \
  X(I32, num_speculative_blocks, 0)       /* at most kMaxSpeculativeBlocks */                   \
  /* ABI 1.6: vLLM 0.33's MambaSpec additions */                                                \
  X(I32, num_prefill_checkpoint_blocks, 0) /* at most kMaxSpeculativeBlocks */                  \
  X(I32, prefill_checkpoint_alignment, 0) /* 0 = None */                                        \
  X(I32, mamba_replayssm_ngroups, 0)      /* shapes[4][0]; 0 = not given */                     \
  X(I32, mamba_num_heads, 0)              /* shapes[2][0]; 0 = not given */                     \
  /* ABI 1.7: sparse MLA (DeepSeek V3.2's indexer layers) */                                    \
  X(I32, index_topk, 0)                   /* hf_text_config.index_topk; 0 = 2048 */             \
  X(I32, topk_buffer_width, 0)            /* MLAAttentionSpec.topk_buffer_width; 0 = None */    \
  /* ABI 1.7: attention variants */                                                             \
  X(I32, sink_len, 0)                     /* SinkFullAttentionSpec.sink_len; 0 = None */        \
  X(I32, head_size_v, 0)                  /* AttentionSpec.head_size_v; 0 = head_size */        \
  /* ABI 1.7: DeepSeek V4 sparse MLA */                                                         \
  X(I32, tokens_per_state, 0)             /* MLAAttentionSpec.tokens_per_state; 0 = 1 */        \
  X(RESERVED, reserved_1_7)                                                                     \
  /* ABI 1.7: Step5's CSA tail ring */                                                          \
  X(I32, block_stride_bytes, 0)           /* kv_cache.stride(0) in bytes; 0 = the page size */  \
  X(RESERVED, reserved_1_7_b)

/* attn_builder_config_t (the parts of vLLM's VllmConfig builders read). */
#define ATTN_BUILDER_CONFIG_FIELDS(X)                                                           \
  X(SIZE, struct_size)                                                                          \
  X(SPECIAL, device)                                                                            \
  X(I32, max_num_seqs, 0)                                                                       \
  X(I32, max_num_batched_tokens, 0)                                                             \
  X(I32, max_model_len, 0)                                                                      \
  X(I32, num_attention_heads, 0)                                                                \
  X(I32, num_speculative_tokens, 0)       /* at most kMaxSpeculativeTokens */                   \
  X(BOOL, parallel_drafting, false)                                                             \
  X(I32, decode_context_parallel_size, 1)                                                       \
  X(I32, dcp_rank, 0)                                                                           \
  X(I32, cp_kv_cache_interleave_size, 1)                                                        \
  X(I32, cudagraph_mode, kCudagraphFullAndPiecewise)                                            \
  X(I32, max_cudagraph_capture_size, 0)   /* 0 = None */                                        \
  X(I32, cache_dtype, kKvDtypeAuto)                                                             \
  X(I32, attn_type, kAttnDecoder)                                                               \
  X(I32, device_capability, 0)                                                                  \
  X(I32, flash_attn_version, 0)                                                                 \
  X(I32, flash_attn_max_num_splits_for_cuda_graph, 32)                                          \
  X(BOOL, batch_invariant, false)                                                               \
  X(SPECIAL, validate)                    /* validate_full, validate_trusted */                 \
  X(SPECIAL, layers)                      /* with num_layers: layers */                         \
  X(SPECIAL, num_layers)                                                                        \
  X(SPECIAL, allocator)                   /* allocator (never null after validation) */         \
  X(SPECIAL, workspace)                                                                         \
  X(SPECIAL, workspace_size)                                                                    \
  X(EXT, extension)                                                                             \
  /* ABI 1.1 */                                                                                 \
  X(I32, model_dtype, kKvDtypeAuto)       /* AUTO: the spec's dtype (model_dtype_for) */        \
  X(I32, use_trtllm_attention, -1)        /* -1 None (auto), 0 False, 1 True */                 \
  X(BOOL, kv_transfer_enabled, false)                                                           \
  X(BOOL, disable_flashinfer_q_quantization, false)                                             \
  X(SPECIAL, cudagraph_capture_sizes)     /* with num_: empty = vLLM's default list */          \
  X(SPECIAL, num_cudagraph_capture_sizes)                                                       \
  X(I64, num_gpu_blocks, 0)                                                                     \
  X(I32, flex_attn_q_block_size, 0)                                                             \
  X(I32, flex_attn_kv_block_size, 0)                                                            \
  X(SPECIAL, speculative_token_tree)      /* std::optional<std::string> */                      \
  X(BOOL, kv_sharing_fast_prefill, false)                                                       \
  X(I32, max_encoder_len, 0)                                                                    \
  X(I32, cpu_attn_isa, 0)                 /* ATTN_CPU_ISA_*; 0 = detect */                      \
  X(RESERVED, reserved_1_1)                                                                     \
  /* ABI 1.2: the MLA backends (0 = the default named in attn_c.h) */                           \
  X(I32, mla_kv_lora_rank, 0)                                                                   \
  X(I32, mla_qk_rope_head_dim, 0)                                                               \
  X(I32, mla_qk_nope_head_dim, 0)                                                               \
  X(I32, mla_v_head_dim, 0)                                                                     \
  X(I32, mla_chunked_prefill_workspace_size, 0)                                                 \
  X(REMOVED, disable_flashinfer_prefill)                                                        \
  X(REMOVED, use_cudnn_prefill)                                                                 \
  X(REMOVED, use_trtllm_ragged_deepseek_prefill)                                                \
  /* ABI 1.4 */                                                                                 \
  X(BOOL, use_v2_model_runner, false)     /* vLLM's model runner V2 (max_decode_query_len) */   \
  X(I32, num_sms, 0)                      /* 0 = unknown */                                     \
  X(I32, rswa_window, 0)                  /* model_config.rswa_window; 0 = None */              \
  X(BOOL, is_mm_prefix_lm, false)                                                               \
  X(BOOL, use_non_causal, false)                                                                \
  X(BOOL, enable_adaptive_verification, false)                                                  \
  /* ABI 1.6: vLLM 0.33's ReplaySSM and prefill-checkpoint settings (the Mamba builders) */     \
  X(BOOL, use_replayssm, false)                                                                 \
  X(I32Z, replayssm_buffer_len, 16)       /* > 0 */                                             \
  X(BOOL, mamba_backend_flashinfer, false)                                                      \
  X(BOOL, async_scheduling, false)                                                              \
  X(I32, hash_block_size, 0)              /* 0 = None */                                        \
  X(I32, cache_hit_alignment_tokens, 0)   /* 0 = None */                                        \
  X(I32, num_hash_lookahead_tokens, 0)                                                          \
  X(BOOL, use_eagle_block_drop, false)                                                          \
  X(I32, gdn_prefill_backend, kGdnPrefillAuto)                                                  \
  X(RESERVED, reserved_1_6)                                                                     \
  /* ABI 1.7: vLLM 0.33's MLA prefill inputs, the indexers' table width */                      \
  X(I32, mla_prefill_backend, kMlaPrefillAuto)                                                  \
  X(BOOL, use_prefill_query_quantization, false)                                                \
  X(I32, block_table_width, 0)            /* 0 = the worker's width */                          \
  X(RESERVED, reserved_1_7)                                                                     \
  /* ABI 1.7: DeepSeek V4 / V4.1 (the compressors, the V4.1 sparse indexer, DSpark) */          \
  X(BOOL, platform_rocm, false)                                                                 \
  X(I32Z, prefill_context_parallel_size, 1)                                                     \
  X(I32, candidate_block_size, 0)         /* 0 = absent */                                      \
  X(I32, candidate_topk_blocks, 0)        /* 0 = absent */                                      \
  X(BOOL, indexer_kv_mxfp4, false)                                                              \
  X(I32, sparse_indexer_topk_backend, kSparseIndexerTopkAuto)                                   \
  X(BOOL, speculative_dspark, false)                                                            \
  X(RESERVED, reserved_1_7_b)                                                                   \
  /* ABI 1.7: Whisper causal block pooling */                                                   \
  X(I32, block_pool_size, 0)              /* 0 = not a block-pooling layer */                   \
  X(RESERVED, reserved_1_7_c)                                                                   \
  /* ABI 1.7: ROCm AITER's shuffled KV cache (MiniMax-M3's AITER sparse paged attention) */     \
  X(BOOL, rocm_aiter_shuffle_kv_cache, false)                                                   \
  X(RESERVED, reserved_1_7_d)                                                                   \
  /* ABI 1.7: MiniMax-M3's lightning indexer (index-query heads, TP world size) */              \
  X(I32, sparse_num_index_heads, 0)       /* 0 = absent */                                      \
  X(I32Z, tensor_parallel_size, 1)        /* 0 = 1 */

/* attn_common_metadata_t (vLLM's CommonAttentionMetadata and its builders' build() keywords). */
#define ATTN_COMMON_METADATA_FIELDS(X)                                                          \
  X(SIZE, struct_size)                                                                          \
  X(TENSOR, query_start_loc, I32, QSL, SLICE)                                                   \
  X(TENSOR, query_start_loc_cpu, I32, QSL, SLICE)                                               \
  X(TENSOR, seq_lens, I32, REQS, SLICE)                                                         \
  X(TENSOR, seq_lens_cpu, I32, REQS, SLICE)                                                     \
  X(I64, num_reqs, 0)                                                                           \
  X(I64, num_actual_tokens, 0)                                                                  \
  X(I64, max_query_len, 0)                                                                      \
  X(I64, max_seq_len, 0)                                                                        \
  X(TENSOR, block_table_tensor, I32, REQS, SLICE)                                               \
  X(TENSOR, slot_mapping, I64, TOKENS, SLICE)                                                   \
  X(BOOL, causal, true)                                                                         \
  X(TENSOR, logits_indices_padded, I32, ANY, KEEP)                                              \
  X(I64, num_logits_indices, 0)                                                                 \
  X(TENSOR, encoder_seq_lens, I32, REQS, SLICE)                                                 \
  X(TENSOR, encoder_seq_lens_cpu, I32, REQS, SLICE)                                             \
  X(TENSOR, dcp_local_seq_lens, I32, REQS, SLICE)                                               \
  X(TENSOR, dcp_local_seq_lens_cpu, I32, REQS, SLICE)                                           \
  X(EXT, extension)                                                                             \
  /* ABI 1.1 */                                                                                 \
  X(TENSOR, logits_indices_padded_cpu, I32, ANY, KEEP)                                          \
  /* ABI 1.2: vLLM's build() keywords for the Mamba family, and is_prefilling */                \
  X(TENSOR, num_accepted_tokens, I32, REQS, SLICE)          /* where the batch lives */         \
  X(TENSOR, num_decode_draft_tokens_cpu, I32, REQS, SLICE)  /* host */                          \
  X(TENSOR, num_decode_draft_tokens, I32, REQS, SLICE)      /* its mirror on the device */      \
  X(TENSOR, is_prefilling, BOOL, REQS, SLICE)               /* bool/int8/uint8/int32, host */   \
  /* ABI 1.4: vLLM 0.33.0's fields; 0.33's unpadded() drops positions, mm_req_doc_ranges */     \
  X(TENSOR, seq_lens_cpu_upper_bound, I32, REQS, SLICE)     /* host */                          \
  X(TENSOR, dcp_local_seq_lens_cpu_upper_bound, I32, REQS, SLICE) /* host */                    \
  X(TENSOR, positions, I64, TOKENS, DROP)                   /* >= num_actual_tokens, device */  \
  X(TENSOR, causal_per_request, I32, REQS, SLICE)           /* 0.33's tensor causal, device */  \
  X(OPT_I64, max_logits_per_req)                                                                \
  X(TENSOR, req_idx, I64, REQS, SLICE)                      /* int32/int64, host */             \
  X(TENSOR, mm_req_doc_ranges, I32, RANGES, DROP)           /* rows (req, start, end), host */  \
  X(TENSOR, rswa_prefix_lens, I32, REQS, SLICE)             /* host or device */                \
  X(TENSOR, replayssm_decode_base_cpu, I32, REQS, SLICE)    /* host */                          \
  /* ABI 1.7: the sparse SWA builders' build() keyword (DeepSeek V4.1's bounded replay) */      \
  X(TENSOR, replay_start, I32, REQS, SLICE)                 /* where the batch lives */

/* Consumers define one macro per kind and expand a list with
 *   #define ROW(kind, ...) MY_##kind(__VA_ARGS__)
 *   ATTN_COMMON_METADATA_FIELDS(ROW)                                                          */

/* A row's name: ATTN_FIELD_NAME(SIZE, struct_size) is struct_size. */
#define ATTN_FIELD_NAME(kind, ...) ATTN_FIELD_NAME_(__VA_ARGS__, ~)
#define ATTN_FIELD_NAME_(name, ...) name

/* The core's members: declared in KvCacheSpec, BuilderConfig and CommonMetadata with
 * `ATTN_KV_CACHE_SPEC_FIELDS(ATTN_CORE_MEMBER)` (C++ only). */
#define ATTN_CORE_MEMBER(kind, ...) ATTN_CORE_MEMBER_##kind(__VA_ARGS__)
#define ATTN_CORE_MEMBER_SIZE(name)
#define ATTN_CORE_MEMBER_EXT(name)
#define ATTN_CORE_MEMBER_RESERVED(name)
#define ATTN_CORE_MEMBER_REMOVED(name)
#define ATTN_CORE_MEMBER_SPECIAL(name)
#define ATTN_CORE_MEMBER_I32(name, value) int32_t name = value;
#define ATTN_CORE_MEMBER_I32Z(name, value) int32_t name = value;
#define ATTN_CORE_MEMBER_I64(name, value) int64_t name = value;
#define ATTN_CORE_MEMBER_BOOL(name, value) bool name = value;
#define ATTN_CORE_MEMBER_OPT_I64(name) int64_t name = -1;
#define ATTN_CORE_MEMBER_TENSOR(name, dtype, rows, unpadded) std::optional<Tensor> name;

#endif /* ATTN_CORE_ABI_FIELDS_H_ */
