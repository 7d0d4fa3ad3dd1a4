#!/usr/bin/env bash
# The "no sync, no allocation" half of CUDA graph safety that a reading of the sources can check
# (ctest: test_graph_safety_lint; no GPU needed). A build on a CUDA builder may launch kernels on
# the caller's stream and nothing else: no device or host-pinned allocation, no synchronous copy
# or memset, no stream/device/event synchronization, no Thrust (its algorithms allocate temporary
# storage and may synchronize), no device-wide CUB algorithm (it needs temporary storage; the
# block-level cub::Block* primitives are fine). docs/cuda_graphs.md has the contract.
#
#   1. kernels/ (the executors) and src/ops/ (the ops, whose device path is the same code): those
#      runtime calls appear only in kernels/device_runtime.cc, the wrappers that
#      src/ops/device_runtime.h exposes for create time, clones and validate-full mode. The
#      simulated device (kernels/sim) is a runtime, not a caller, and is not scanned.
#   2. src/: those wrappers (ops::cuda_malloc, cuda_free, cuda_memset_zero, cuda_copy_*), core's
#      exact_host_seq_lens (a synchronous seq_lens.cpu()) and
#      Allocator::allocate are called only from the files listed below, each for a reason that
#      is not a build.
# A new call site fails this check: move the work to create time (persistent buffers, planned
# from the config) or onto the stream, or add the file here with the reason.
#   scripts/check_graph_safety.sh [source root]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
status=0

# 1. CUDA runtime calls that allocate or synchronize, outside the runtime wrappers.
runtime='cuda(Malloc|MallocHost|MallocManaged|MallocAsync|MallocPitch|Malloc3D|MallocArray|HostAlloc|HostRegister|Free|FreeHost|FreeAsync|FreeArray|Memcpy|Memcpy2D|Memcpy3D|MemcpyPeer|MemcpyToSymbol|MemcpyFromSymbol|Memset|Memset2D|Memset3D|DeviceSynchronize|StreamSynchronize|EventSynchronize|ThreadSynchronize|StreamQuery|EventQuery|DeviceReset|GraphLaunch)[[:space:]]*\('
libraries='thrust::|#[[:space:]]*include[[:space:]]*<thrust/|cub::Device[A-Za-z]*|#[[:space:]]*include[[:space:]]*<cub/device/'
hits=$(grep -nE "$runtime|$libraries" kernels/*.cuh kernels/*.h kernels/*.cc \
         src/ops/*.cc src/ops/*.h 2>/dev/null \
         | grep -vE '^(kernels|src/ops)/device_runtime\.cc:' | grep -vE ':[0-9]+:[[:space:]]*//' || true)
if [ -n "$hits" ]; then
  echo "FAIL: allocation, synchronous copy/memset, synchronization, Thrust or device-wide CUB in an op"
  echo "      or kernel file (only kernels/device_runtime.cc may call these; builds launch kernels only):"
  echo "$hits" | sed 's/^/  /'
  status=1
fi

# 2. The synchronous runtime wrappers and the allocator, outside their create-time callers.
allowed=(
  src/ops/device_runtime.cc        # the wrappers themselves
  src/ops/device_runtime.h
  src/core/allocator.cc            # libattn's default allocator (cudaMalloc/cudaFree)
  src/core/persistent_buffers.cc   # create time: one allocation, zeroed once (cudaMemset)
  src/core/metadata.cc             # attn_metadata_clone: allocates and copies, by contract
  src/core/common_metadata.cc      # ATTN_VALIDATE_FULL: reads device tensors back (documented sync)
  src/backends/tree_attn.cc        # create time: the tree bias uploaded once (constructor)
  src/core/exact_seq_lens.cc       # vLLM 0.33's seq_lens.cpu() (only without an exact host copy),
  src/core/exact_seq_lens.h        # called from the places below, where 0.33 syncs too:
  src/core/batch_transforms.cc     #   local-attention virtual batches;
  src/backends/flashinfer.cc       #   FLASHINFER with speculative tokens (documented sync)
  src/backends/rocm_aiter_fa.cc    #   ROCM_AITER_FA with prefills or extends (0.33's .cpu())
  src/backends/mla_rocm_aiter_sparse.cc #   ROCM_AITER_MLA_SPARSE's metadata_key (0.33's .cpu())
  src/capi/convert.cc              # the caller's allocator callbacks, wrapped
)
calls='exact_host_seq_lens[[:space:]]*\(|ops::cuda_(malloc|free|memset_zero|copy_to_host|copy_to_device|copy_device_to_device)[[:space:]]*\(|->[[:space:]]*allocate[[:space:]]*\(|\.allocate[[:space:]]*\(|default_allocator\(\)->'
hits=$(grep -rnE "$calls" src --include='*.cc' --include='*.h' || true)
for f in "${allowed[@]}"; do
  hits=$(printf '%s\n' "$hits" | grep -v "^$f:" || true)
done
hits=$(printf '%s\n' "$hits" | grep -vE ':[0-9]+:[[:space:]]*//' | sed '/^$/d' || true)
if [ -n "$hits" ]; then
  echo "FAIL: a synchronous device copy/memset or an allocation outside its create-time callers"
  echo "      (builds write persistent buffers planned at create time; see the list in $0):"
  echo "$hits" | sed 's/^/  /'
  status=1
fi

# 3. Raw CUDA runtime calls above src/ops (the layers above never include a CUDA header).
hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*<cuda|cuda[A-Z][A-Za-z]*[[:space:]]*\(' src/core src/backends src/capi \
         --include='*.cc' --include='*.h' | grep -vE ':[0-9]+:[[:space:]]*//' || true)
if [ -n "$hits" ]; then
  echo "FAIL: CUDA runtime calls above src/ops (they belong in src/ops/device_runtime or kernels/):"
  echo "$hits" | sed 's/^/  /'
  status=1
fi

if [ "$status" -eq 0 ]; then
  n=$(ls kernels/*.cuh kernels/*.h kernels/*.cc src/ops/*.cc src/ops/*.h | wc -l)
  echo "graph-safety lint: OK ($n op and kernel files, src/ call sites of the synchronous wrappers and the allocator all in their create-time files)"
fi
exit "$status"
