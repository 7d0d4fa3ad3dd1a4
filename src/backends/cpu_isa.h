// CPU_ATTN's kernel ISA: vLLM's _get_attn_isa(dtype, block_size, head_dim, kv_cache_dtype), with
// the host CPU's features read from cpuid (x86) or the compile target (Arm, s390x, POWER,
// RISC-V).
#pragma once

#include <cstdint>

namespace attn::backends {

/// Numbered as the ABI's ATTN_CPU_ISA_* values.
enum CpuIsa : int32_t {
  kCpuIsaDetect = 0,
  kCpuIsaAmx = 1,
  kCpuIsaVec = 2,
  kCpuIsaVec16 = 3,
  kCpuIsaNeon = 4,
  kCpuIsaVxe = 5,
  kCpuIsaVsx = 6,
  kCpuIsaRvv = 7,
};

const char* cpu_isa_name(int32_t isa);

struct CpuFeatures {
  bool amx = false;     ///< AMX tiles with bfloat16, enabled by the OS (XCR0).
  bool avx512 = false;  ///< AVX-512F.
  enum Arch { kX86, kArm, kS390x, kPowerPc, kRiscv, kOther } arch = kOther;
  bool rvv = false;     ///< RISC-V vector extension.
};

/// The host's features.
CpuFeatures host_cpu_features();

/// vLLM's choice for a model dtype, block size, head size and KV cache dtype (ATTN_KV_DTYPE_*
/// codes). Error(kUnsupported) where vLLM raises (fp8 caches need AMX or AVX-512 and a head
/// size that is a multiple of 32).
int32_t choose_cpu_isa(const CpuFeatures& cpu, int32_t model_dtype, int32_t block_size,
                       int32_t head_size, int32_t cache_dtype);

}  // namespace attn::backends
