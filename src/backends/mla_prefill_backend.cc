// The MLA prefill backend selection (mla_prefill_backend.h).
#include "backends/mla_prefill_backend.h"

#include <string>
#include <vector>

#include "backends/mla_config.h"
#include "core/error.h"

namespace attn::backends {
namespace {

constexpr int32_t id(MlaPrefillBackend b) { return static_cast<int32_t>(b); }

/// vLLM 0.33's MLADimensions (qk_nope_head_dim, qk_rope_head_dim, v_head_dim).
struct MlaDims {
  int64_t nope, rope, v;
  bool operator==(const MlaDims& o) const { return nope == o.nope && rope == o.rope && v == o.v; }
  std::string str() const {
    return "(qk_nope_head_dim=" + std::to_string(nope) + ", qk_rope_head_dim=" +
           std::to_string(rope) + ", v_head_dim=" + std::to_string(v) + ")";
  }
};
constexpr MlaDims kR1Dims{128, 64, 128}, kV32Dims{192, 64, 256};

MlaDims dims_of(const BuilderConfig& c) {
  return {qk_nope_head_dim(c), qk_rope_head_dim(c), v_head_dim(c)};
}

/// Why vLLM 0.33's validate_configuration refuses prefill backend `b` for this config (empty:
/// valid): FLASHINFER, TRTLLM_RAGGED and TOKENSPEED_MLA need compute capability 10.x; each
/// accepts the MLA dimensions it lists (FLASH_ATTN its own four, without listing them). The
/// model's dtype (float16/bfloat16, checked at create) and the libraries (assumed installed)
/// never refuse here.
std::vector<std::string> prefill_backend_refusals(int32_t b, const BuilderConfig& c) {
  std::vector<std::string> why;
  const int32_t cap = resolved_device_capability(c);
  if (b != id(kPrefillFlashAttn) && cap / 10 != 10)
    why.push_back(cap <= 0 ? "device capability not available"
                           : "compute capability " + std::to_string(cap / 10) + "." +
                                 std::to_string(cap % 10) + " not supported");
  const MlaDims d = dims_of(c);
  std::vector<MlaDims> listed;  // supported_mla_dimensions
  bool ok = false;
  if (b == id(kPrefillFlashAttn)) {
    for (const MlaDims& x : {kR1Dims, kV32Dims, MlaDims{64, 64, 128}, MlaDims{256, 0, 256}})
      ok = ok || d == x;
  } else {
    listed = {kR1Dims};
    if (b == id(kPrefillTrtllmRagged)) listed.push_back(kV32Dims);
    for (const MlaDims& x : listed) ok = ok || d == x;
  }
  if (!ok) {
    std::string r = "Model does not have supported MLA dimensions (got " + d.str();
    for (size_t i = 0; i < listed.size(); ++i) r += (i ? ", " : "; supported: ") + listed[i].str();
    why.push_back(r + ")");
  }
  return why;
}

/// The CUDA platform's choice (get_mla_prefill_backend). The first of each automatic list is
/// valid for the models libattn accepts (float16/bfloat16, the dimensions named), with the
/// libraries assumed installed.
int32_t cuda_prefill_backend(const BuilderConfig& c) {
  if (c.mla_prefill_backend != kMlaPrefillAuto) {
    const int32_t b = c.mla_prefill_backend - 1;  // MLAPrefillBackendEnum's order
    const std::vector<std::string> why = prefill_backend_refusals(b, c);
    if (!why.empty()) {
      std::string list;
      for (const std::string& w : why) list += (list.empty() ? "'" : ", '") + w + "'";
      invalid("Selected MLA prefill backend ", kMlaPrefillBackendNames[b],
              " is not valid for this configuration. Reason: [", list,
              "] (config->mla_prefill_backend=", c.mla_prefill_backend, ")");
    }
    return b;
  }
  const bool sm100 = resolved_device_capability(c) / 10 == 10;
  return id(sm100 && dims_of(c) == kV32Dims ? kPrefillTrtllmRagged : kPrefillFlashAttn);
}

}  // namespace

int32_t mla_prefill_backend(MlaPlatform platform, const BuilderConfig& c) {
  switch (platform) {
    case MlaPlatform::kCpu: return id(kPrefillCpu);
    case MlaPlatform::kRocm:
      return c.mla_prefill_backend == kMlaPrefillAuto ? id(kPrefillRocmAiterFa)
                                                      : c.mla_prefill_backend - 1;
    case MlaPlatform::kCuda: break;
  }
  return cuda_prefill_backend(c);
}

bool mla_prefill_reads_query_seq_lens(int32_t backend) {
  return backend == id(kPrefillTrtllmRagged) || backend == id(kPrefillTokenspeedMla);
}

bool mla_prefill_plans_flashinfer(int32_t backend) { return backend == id(kPrefillFlashInfer); }

int32_t mla_prefill_query_dtype(const BuilderConfig& c, int32_t backend, int32_t model_dtype) {
  const bool backend_ok = mla_prefill_plans_flashinfer(backend) ||
                          mla_prefill_reads_query_seq_lens(backend);
  const bool fp8 = is_fp8_cache(c) && c.use_prefill_query_quantization &&
                   resolved_device_capability(c) / 10 == 10 && backend_ok;
  return fp8 ? kKvDtypeFp8E4m3 : model_dtype;
}

}  // namespace attn::backends
