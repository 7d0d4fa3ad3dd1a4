// The MLA prefill backend a layer runs (vLLM 0.33's mla/prefill registry: MLAPrefillBackendEnum,
// get_mla_prefill_backend and each platform's get_mla_prefill_backend_cls) and what the metadata
// builders derive from it (determine_prefill_query_data_type).
#pragma once

#include <cstdint>

#include "backends/field_list.h"
#include "core/builder_config.h"

namespace attn::backends {

/// vLLM 0.33's MLAPrefillBackendEnum, in its order: the values of prefill_prefill_backend.
#define MLA_PREFILL_BACKENDS(X)                 \
  X(kPrefillFlashAttn, "FLASH_ATTN")            \
  X(kPrefillFlashInfer, "FLASHINFER")           \
  X(kPrefillTrtllmRagged, "TRTLLM_RAGGED")      \
  X(kPrefillTokenspeedMla, "TOKENSPEED_MLA")    \
  X(kPrefillRocmAiterFa, "ROCM_AITER_FA")       \
  X(kPrefillCpu, "CPU")                         \
  X(kPrefillZenCpu, "ZEN_CPU")
ATTN_NAMED_LIST(MlaPrefillBackend, MLA_PREFILL_BACKENDS);

/// The platform whose get_mla_prefill_backend_cls picks a builder's prefill backend.
enum class MlaPlatform { kCuda, kRocm, kCpu };

/// The layer's prefill backend on `platform` (its _prefill_backend):
/// - CUDA: config->mla_prefill_backend when set, refused (Error(kInvalidArgument)) as vLLM
///   refuses an invalid one; else on 10.x TRTLLM_RAGGED for the (192, 64, 256) dimensions and
///   FLASH_ATTN otherwise; below 10.x, FLASH_ATTN.
/// - ROCm: config->mla_prefill_backend when set, else ROCM_AITER_FA (valid for the dimensions
///   libattn accepts).
/// - CPU: CPU (the platform ignores attention_config.mla_prefill_backend and takes ZEN_CPU where
///   zentorch is installed; libattn assumes it is not).
int32_t mla_prefill_backend(MlaPlatform platform, const BuilderConfig& c);

/// What the prefill backend's prepare_metadata reads besides the prefill part: the prefills'
/// query lengths on the device (TRTLLM_RAGGED's and TOKENSPEED_MLA's _query_seq_lens).
bool mla_prefill_reads_query_seq_lens(int32_t backend);
/// Whether the prefill backend plans FlashInfer's ragged prefill wrapper (FLASHINFER).
bool mla_prefill_plans_flashinfer(int32_t backend);

/// vLLM 0.33's determine_prefill_query_data_type: FP8_E4M3 (the CUDA platform's float8_e4m3fn)
/// when the cache is quantized, use_prefill_query_quantization is set and
/// backend_supports_prefill_query_quantization (compute capability family 100 and the prefill
/// backend FLASHINFER, TRTLLM_RAGGED or TOKENSPEED_MLA); else the model's dtype.
int32_t mla_prefill_query_dtype(const BuilderConfig& c, int32_t backend, int32_t model_dtype);

}  // namespace attn::backends
