#include "backends/cpu_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/error.h"
#include "core/kv_cache_spec.h"

namespace attn::backends {

const char* cpu_isa_name(int32_t isa) {
  switch (isa) {
    case kCpuIsaAmx: return "amx";
    case kCpuIsaVec: return "vec";
    case kCpuIsaVec16: return "vec16";
    case kCpuIsaNeon: return "neon";
    case kCpuIsaVxe: return "vxe";
    case kCpuIsaVsx: return "vsx";
    case kCpuIsaRvv: return "rvv";
    default: return "detect";
  }
}

CpuFeatures host_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  f.arch = CpuFeatures::kX86;
  // As torch's checks (which vLLM asks): AVX-512 F, DQ, BW and VL, AMX tiles, each with the OS
  // saving the registers (XCR0).
  unsigned a = 0, b = 0, c = 0, d = 0;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  const bool osxsave = __get_cpuid(1, &a1, &b1, &c1, &d1) && ((c1 >> 27) & 1u);
  if (osxsave && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const bool avx512_hw = ((b >> 16) & 1u) && ((b >> 17) & 1u) && ((b >> 30) & 1u) && ((b >> 31) & 1u);
    f.avx512 = avx512_hw && (lo & 0xe6u) == 0xe6u;  // SSE, AVX, opmask, ZMM state
    f.amx = ((d >> 24) & 1u) && ((lo >> 17) & 3u) == 3u;  // AMX-TILE; XTILECFG, XTILEDATA
  }
#elif defined(__aarch64__) || defined(__arm__)
  f.arch = CpuFeatures::kArm;
#elif defined(__s390x__)
  f.arch = CpuFeatures::kS390x;
#elif defined(__powerpc64__) || defined(__powerpc__)
  f.arch = CpuFeatures::kPowerPc;
#elif defined(__riscv)
  f.arch = CpuFeatures::kRiscv;
#if defined(__riscv_vector)
  f.rvv = true;
#endif
#endif
  return f;
}

int32_t choose_cpu_isa(const CpuFeatures& cpu, int32_t model_dtype, int32_t block_size,
                       int32_t head_size, int32_t cache_dtype) {
  const bool fp8 = cache_dtype == kKvDtypeFp8E4m3 || cache_dtype == kKvDtypeFp8E5m2;
  if (head_size % 32 != 0 && head_size % 16 == 0) {
    if (fp8)
      fail(Status::kUnsupported, "CPU_ATTN runs fp8 KV caches only with head sizes that are "
                                 "multiples of 32, got ", head_size);
    return kCpuIsaVec16;
  }
  if (fp8 && !cpu.amx && !cpu.avx512)
    fail(Status::kUnsupported, "CPU_ATTN runs fp8 KV caches only on CPUs with AMX or AVX-512");
  if (cpu.amx && model_dtype == kKvDtypeBfloat16 && block_size % 32 == 0) return kCpuIsaAmx;
  if (block_size % 32 == 0) {
    switch (cpu.arch) {
      case CpuFeatures::kArm: return kCpuIsaNeon;
      case CpuFeatures::kRiscv:
        if (cpu.rvv) return kCpuIsaRvv;
        break;
      case CpuFeatures::kS390x: return kCpuIsaVxe;
      case CpuFeatures::kPowerPc: return kCpuIsaVsx;
      default: break;
    }
    return kCpuIsaVec;
  }
  return kCpuIsaVec16;
}

}  // namespace attn::backends
