// libFuzzer target: for every registered backend, builder configs, KV cache specs and batches from arbitrary bytes through
// attn_builder_create, attn_build and every other builder entry point, then every accessor on
// the result. The only outcomes allowed are success or an error object (sanitizers watch).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "attn_c.h"
#include "fuzz_fields.h"
#include "fuzz_input.h"

namespace {

void drop(attn_error_t* e) { attn_error_destroy(e); }

void read_everything(const attn_metadata_t* m) {
  const size_t n = attn_metadata_field_count(m);
  for (size_t i = 0; i <= n; ++i) {
    attn_field_t f = ATTN_FIELD_INIT;
    drop(attn_metadata_field(m, i, &f));
    if (f.kind == ATTN_FIELD_TENSOR && f.tensor != nullptr && f.tensor->data != nullptr &&
        f.tensor->device.device_type == ATTN_DEVICE_CPU && f.tensor->ndim == 1) {
      // Builder-owned tensors must be readable in full.
      volatile int64_t sum = 0;
      const auto* p = static_cast<const char*>(f.tensor->data);
      const int64_t item = f.tensor->dtype.bits / 8;
      for (int64_t k = 0; k < f.tensor->shape[0] && k < 4096; ++k)
        sum = sum + p[k * f.tensor->strides[0] * item];
    }
  }
  attn_metadata_t* copy = nullptr;
  if (attn_error_t* e = attn_metadata_clone(m, &copy)) {
    drop(e);
  } else {
    attn_metadata_destroy(copy);
  }
  attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
  drop(attn_metadata_to_common(m, &c));
  int64_t v = 0;
  drop(attn_metadata_get_int(m, "num_actual_tokens", &v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  fuzz::Arena arena;

  attn_kv_cache_spec_t spec = ATTN_KV_CACHE_SPEC_INIT;
  const int32_t blocks[] = {16, 32, 64, 16, 8, 0, -16, 2};
  spec.kind = in.u8() % 8;
  if (spec.kind > 2 && !in.one_in(3)) spec.kind = 0;
  spec.block_size = in.one_in(16) ? static_cast<int32_t>(in.u32()) : blocks[in.u8() % 8];
  spec.num_kv_heads = 1 + in.u8() % 16;
  spec.head_size = in.one_in(8) ? static_cast<int32_t>(in.u8()) : 64 * (1 + in.u8() % 4);
  spec.dtype = in.one_in(8) ? in.u8() % 9 : 2;
  spec.sliding_window = spec.kind == 1 ? 1 + in.u8() : (in.one_in(16) ? static_cast<int32_t>(in.u32()) : 0);
  spec.attention_chunk_size = spec.kind == 2 ? 16 * (1 + in.u8() % 8) : 0;
  // MLA specs (kind 3) mostly as vLLM's MLAAttentionSpec: one latent head of 576, blocks the
  // MLA kernels take (64, 128), so that the MLA backends build.
  if (spec.kind == 3 && !in.one_in(8)) {
    spec.num_kv_heads = 1;
    spec.head_size = 576;
    if (in.one_in(3)) spec.block_size = in.one_in(2) ? 64 : 128;
  }
  // ABI 1.2: MambaSpec's parameters, meaningful for ATTN_KV_MAMBA specs (kind 6).
  if (spec.kind == 6 || in.one_in(16)) {
    spec.mamba_type = in.one_in(8) ? static_cast<int32_t>(in.u8()) - 2 : in.u8() % 6;
    spec.mamba_chunk_size = in.one_in(8) ? static_cast<int32_t>(in.u32()) : 8 * (in.u8() % 33);
    spec.mamba_cache_mode = in.one_in(8) ? static_cast<int32_t>(in.u8()) - 1 : in.u8() % 3;
    spec.num_speculative_blocks = in.one_in(8) ? static_cast<int32_t>(in.u8()) - 2 : in.u8() % 4;
    // Counts up to their type's limit (issue 15): refused above 65536, never overflowing.
    if (in.one_in(16)) spec.num_speculative_blocks = static_cast<int32_t>(in.u32());
    // ABI 1.6: prefill checkpoints and the ReplaySSM state shapes (some negative: refused)
    spec.num_prefill_checkpoint_blocks = static_cast<int32_t>(in.u8() % 3) - in.one_in(16);
    spec.prefill_checkpoint_alignment = in.one_in(2) ? 8 * (in.u8() % 9) - in.one_in(16) : 0;
    spec.mamba_replayssm_ngroups = static_cast<int32_t>(in.u8() % 5) - in.one_in(16);
    spec.mamba_num_heads = static_cast<int32_t>(in.u8() % 9) - in.one_in(16);
  }
  fuzz::mutate(in, arena, {}, spec);  // any field of the list, the ones above included
  if (in.one_in(32)) spec.struct_size = in.u8();

  // Any field of the list first; the values set below win (they keep buffers fuzzer-sized).
  attn_builder_config_t config = ATTN_BUILDER_CONFIG_INIT;
  fuzz::mutate(in, arena, {}, config);
  // Sizes stay where every backend's persistent buffers fit in the fuzzer's memory (vLLM sizes
  // them from the config); negative ones test the validation. Size overflow is a cmocka test.
  auto sized = [&](int32_t typical, int32_t limit) {
    if (!in.one_in(16)) return typical;
    return in.one_in(2) ? -static_cast<int32_t>(in.u8()) : static_cast<int32_t>(in.u32() % static_cast<uint32_t>(limit));
  };
  config.max_num_seqs = sized(1 + in.u8() % 64, 1024);
  config.max_num_batched_tokens = sized(1 + in.u8() * 8, 16384);
  config.max_model_len = sized(64 + in.u8() * 16, 65536);
  config.num_attention_heads = in.one_in(16) ? -1 : 1 + in.u8() % 64;
  config.num_speculative_tokens = in.u8() % 4;
  if (in.one_in(16))  // up to INT32_MAX / INT32_MIN, or just past libattn's bound of 65536
    config.num_speculative_tokens = in.one_in(2) ? static_cast<int32_t>(in.u32())
                                                 : 65536 + static_cast<int32_t>(in.u8() % 2);
  config.parallel_drafting = in.u8() % 2;
  const int32_t dcp[] = {1, 1, 2, 4};
  config.decode_context_parallel_size = dcp[in.u8() % 4];
  config.dcp_rank = in.u8() % (config.decode_context_parallel_size + 1);
  config.cp_kv_cache_interleave_size = in.one_in(4) ? 1 + in.u8() % 16 : 1;
  config.cudagraph_mode = in.u8() % 6;
  config.max_cudagraph_capture_size = in.one_in(2) ? in.u8() * 4 : 0;
  config.cache_dtype = in.u8() % 8;
  config.attn_type = in.u8() % 5;
  config.device_capability = in.one_in(2) ? 90 : 80 + (in.u8() % 4) * 10;
  config.flash_attn_version = in.u8() % 6;
  config.batch_invariant = in.u8() % 2;
  // FULL on a host builder reads nothing extra; TRUSTED (ABI 1.7) skips the value checks of
  // the builds that read no values: garbage values must still never crash (issue 18).
  config.validate = in.one_in(16) ? ATTN_VALIDATE_FULL
                    : in.one_in(3) ? ATTN_VALIDATE_TRUSTED
                                   : ATTN_VALIDATE_HOST;
  if (in.one_in(32)) config.device = {ATTN_DEVICE_CUDA, 0};
  std::vector<attn_per_layer_params_t> layers(in.u8() % 4);
  for (auto& l : layers) {
    l = ATTN_PER_LAYER_PARAMS_INIT;
    l.window_left = static_cast<int32_t>(in.u8()) - 2;
  }
  // struct_size on the array's elements (issue 15): hostile sizes must be refused, never used
  // as the stride past the array.
  if (!layers.empty() && in.one_in(16)) {
    const size_t hostile[] = {0, 1, sizeof(attn_per_layer_params_t) + 8, size_t{1} << 30,
                              size_t{1} << 32, static_cast<size_t>(in.i64())};
    const size_t v = hostile[in.u8() % 6];
    for (auto& l : layers) l.struct_size = in.one_in(4) ? ATTN_PER_LAYER_PARAMS_STRUCT_SIZE : v;
  }
  config.layers = layers.empty() ? nullptr : layers.data();
  config.num_layers = layers.size();
  // ABI 1.1: the FLASHINFER, TRITON_ATTN, FLEX_ATTENTION, TREE_ATTN, CPU_ATTN and wrapper options.
  static const char* const trees[] = {nullptr, "[(0,)]", "[(0,), (1,), (0, 0)]",
                                      "[(0,), (0, 0), (0, 0, 0), (1,)]", "[(0, 0)]", "[(",
                                      "[(0,), (1, 2)]", "[[0], [1], [0, 1],]", "x"};
  config.model_dtype = in.one_in(4) ? in.u8() % 5 : 0;
  config.use_trtllm_attention = static_cast<int32_t>(in.u8() % 4) - 1;
  config.kv_transfer_enabled = in.one_in(4);
  config.disable_flashinfer_q_quantization = in.one_in(4);
  std::vector<int32_t> capture(in.u8() % 5);
  for (auto& s : capture) s = in.one_in(8) ? static_cast<int32_t>(in.u32()) : 1 + in.u8();
  config.cudagraph_capture_sizes = capture.empty() ? nullptr : capture.data();
  config.num_cudagraph_capture_sizes = capture.size();
  // (A count larger than the array would be the caller's bug, not libattn's to detect; a NULL
  // array with a count is checked.)
  if (in.one_in(32)) config.cudagraph_capture_sizes = nullptr;
  // Hostile counts are rejected before anything is sized; valid ones stay small.
  config.num_gpu_blocks = !in.one_in(8) ? in.u8() * 4
                          : in.one_in(2) ? -static_cast<int64_t>(in.u8()) - 1
                                         : (int64_t{1} << 31) + in.u8();
  config.flex_attn_q_block_size = in.one_in(4) ? in.u8() % 65 : 0;
  config.flex_attn_kv_block_size = in.one_in(8) ? in.u8() % 129 : 0;
  config.speculative_token_tree = trees[in.u8() % 9];
  config.kv_sharing_fast_prefill = in.one_in(4);
  config.max_encoder_len = in.one_in(2) ? in.u8() : 0;
  config.cpu_attn_isa = in.one_in(4) ? in.u8() % 9 : 0;
  // ABI 1.2: the MLA options. An MLA builder's chunked-context buffers grow with max_model_len
  // and max_num_seqs: keep them fuzzer-sized.
  if (in.one_in(8)) config.mla_kv_lora_rank = in.one_in(2) ? 448 : static_cast<int32_t>(in.u8()) * 4 - 8;
  if (in.one_in(8)) config.mla_qk_rope_head_dim = in.one_in(2) ? 128 : static_cast<int32_t>(in.u8()) - 8;
  if (in.one_in(8)) config.mla_qk_nope_head_dim = 32 * (in.u8() % 8);
  if (in.one_in(8)) config.mla_v_head_dim = static_cast<int32_t>(in.u8()) - 4;
  if (in.one_in(4))
    config.mla_chunked_prefill_workspace_size =
        in.one_in(8) ? -static_cast<int32_t>(in.u8()) : static_cast<int32_t>(in.u8()) * 64;
  // ABI 1.7: the MLA prefill backend (5 is out of range) and FP8 prefill queries
  config.mla_prefill_backend = in.u8() % 6;
  config.use_prefill_query_quantization = in.one_in(2);
  // ABI 1.6: the Mamba builders' ReplaySSM and prefill-checkpoint settings
  config.use_replayssm = in.one_in(4);
  config.replayssm_buffer_len = in.one_in(8) ? static_cast<int32_t>(in.u8()) - 2 : 1 + in.u8() % 16;
  config.mamba_backend_flashinfer = in.one_in(2);
  config.async_scheduling = in.one_in(8);
  config.hash_block_size = in.one_in(2) ? 16 * (in.u8() % 5) - in.one_in(16) : 0;
  config.cache_hit_alignment_tokens = in.one_in(2) ? 16 * (in.u8() % 5) : 0;
  config.num_hash_lookahead_tokens = in.one_in(4) ? in.u8() % 4 : 0;
  config.use_eagle_block_drop = in.one_in(4);
  if (spec.kind == 3) {
    config.max_model_len = std::min(config.max_model_len, 8192);
    config.max_num_seqs = std::min(config.max_num_seqs, 256);
  }

  // Every built-in backend (the registry's order), and now and then a name that is not one.
  const char* backend = "NO_SUCH_BACKEND";
  const size_t pick = in.u8();
  if (pick < 250 && attn_backend_count() > 0) drop(attn_backend_name(pick % attn_backend_count(), &backend));
  int32_t level = 0;
  size_t workspace = 0;
  drop(attn_backend_cudagraph_support(backend, &spec, &config, &level));
  drop(attn_builder_workspace_size(backend, &spec, &config, &workspace));
  attn_builder_t* builder = nullptr;
  if (attn_error_t* e = attn_builder_create(backend, &spec, &config, &builder)) {
    drop(e);
    return 0;
  }
  for (int round = 0; round < 3 && in.left() > 0; ++round) {
    const int64_t num_reqs = in.count(16);
    const std::vector<int64_t> qsl = fuzz::query_starts(in, num_reqs, 8);
    const int64_t tokens = in.one_in(8) ? in.count(200) : qsl.back() + in.u8() % 4;
    std::vector<int64_t> seq(qsl.size());
    for (size_t i = 0; i + 1 < qsl.size(); ++i)
      seq[i] = in.one_in(12) ? static_cast<int32_t>(in.u32()) : (qsl[i + 1] - qsl[i]) + in.u8() * 3;
    const int64_t width = in.one_in(8) ? in.count(64) : 1 + in.u8() % 48;
    attn_common_metadata_t c = ATTN_COMMON_METADATA_INIT;
    c.query_start_loc = fuzz::make_tensor(in, arena, fuzz::sat_add(num_reqs, 1), -1, 32,
                                          [&](int64_t i) { return i < (int64_t)qsl.size() ? qsl[i] : 0; });
    if (in.one_in(3)) c.query_start_loc_cpu = c.query_start_loc;
    c.seq_lens = fuzz::make_tensor(in, arena, num_reqs, -1, 32,
                                   [&](int64_t i) { return i < (int64_t)seq.size() ? seq[i] : 0; });
    if (in.one_in(3)) c.seq_lens_cpu = c.seq_lens;
    c.num_reqs = num_reqs;
    c.num_actual_tokens = tokens;
    c.max_query_len = in.one_in(8) ? in.count(64) : 8;
    c.max_seq_len = in.one_in(8) ? in.count(4096) : 8 + 255 * 3;
    c.block_table_tensor = in.one_in(48) ? nullptr
                           : fuzz::make_tensor(in, arena, num_reqs, width, 32,
                                               [&](int64_t) { return static_cast<int32_t>(in.u32()); });
    c.slot_mapping = fuzz::make_tensor(in, arena, tokens, -1, in.one_in(4) ? 32 : 64,
                                       [&](int64_t) { return in.i64(); });
    c.causal = in.u8() % 2;
    if (in.one_in(3)) {
      int64_t last = 0;  // mostly sorted, as the runtime gives them
      c.logits_indices_padded = fuzz::make_tensor(in, arena, in.count(8), -1, 64, [&](int64_t) {
        last += in.one_in(8) ? -static_cast<int64_t>(in.u8()) : in.u8() % 8;
        return last;
      });
      c.num_logits_indices = in.count(8);
    }
    if (in.one_in(4))
      c.encoder_seq_lens_cpu = c.encoder_seq_lens =
          fuzz::make_tensor(in, arena, num_reqs, -1, 32, [&](int64_t) { return in.u8() - 3; });
    if (c.logits_indices_padded && in.one_in(2)) c.logits_indices_padded_cpu = c.logits_indices_padded;
    // Every other field of the list (the optional tensors of ABI 1.2 to 1.7 and any added
    // later): now and then a plausible one, then any field a value of its kind.
    const fuzz::BatchShape shape{num_reqs, tokens, &seq};
    fuzz::populate(in, arena, shape, c, 4);
    if (c.seq_lens_cpu_upper_bound && in.one_in(2)) c.seq_lens_cpu = nullptr;  // the bound alone
    fuzz::mutate(in, arena, shape, c);
    if (in.one_in(32)) c.struct_size = in.u8();

    attn_metadata_t* m = nullptr;
    attn_error_t* e = nullptr;
    switch (in.u8() % 4) {
      case 0: e = attn_build(builder, in.one_in(3) ? 16 * (in.u8() % 4) : in.count(64), &c, in.u8() % 2, &m, nullptr); break;
      case 1: e = attn_build_for_cudagraph_capture(builder, &c, &m, nullptr); break;
      case 2: e = attn_build_for_drafting(builder, &c, static_cast<int32_t>(in.count(3)), &m, nullptr); break;
      default: {
        e = attn_build(builder, 0, &c, 0, &m, nullptr);
        if (e == nullptr) {
          attn_metadata_t* m2 = nullptr;
          drop(attn_update_block_table(builder, m, c.block_table_tensor, c.slot_mapping, &m2, nullptr));
        }
      }
    }
    if (e != nullptr) {
      drop(e);
    } else {
      // ABI 1.5: the draft decode refresh of whatever was built (refused where unsupported)
      int32_t draft = 0;
      drop(attn_builder_supports_draft_decode_metadata_update(builder, &draft));
      if (in.one_in(4)) drop(attn_update_draft_decode_metadata(builder, m, nullptr));
      read_everything(m);
    }
    attn_cascade_query_t q = ATTN_CASCADE_QUERY_INIT;
    std::vector<int32_t> lens(static_cast<size_t>(in.u8() % 16), 1);
    q.common_prefix_len = in.count(4096);
    q.query_lens = lens.data();
    q.num_reqs = static_cast<int64_t>(lens.size());
    q.num_query_heads = static_cast<int32_t>(in.count(64));
    q.num_kv_heads = static_cast<int32_t>(in.count(16));
    q.num_sms = static_cast<int32_t>(in.count(200));
    q.dcp_world_size = static_cast<int32_t>(in.count(4));
    int32_t use = 0;
    drop(attn_use_cascade_attention(builder, &q, &use));
    attn_metadata_t* u = nullptr;
    if (attn_error_t* ue = attn_common_metadata_unpadded(&c, in.count(200), in.count(16), &u)) {
      drop(ue);
    } else {
      read_everything(u);
      attn_metadata_destroy(u);
    }
  }
  attn_builder_destroy(builder);
  return 0;
}
