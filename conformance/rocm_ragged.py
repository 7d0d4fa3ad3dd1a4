"""What the lane items of DeepSeek V4 / V4.1's ROCm builders (vLLM 0.33's
models/deepseek_v4/amd/rocm.py and models/deepseek_v41/amd/rocm.py: ROCM_FLASHMLA_SPARSE_DSV4,
ROCM_FLASHMLA_SPARSE_DSV41 in v4_sparse_mla_items; DEEPSEEK_SPARSE_SWA_ROCM_AITER,
DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER in sparse_swa_items) share.

- The modules import vllm.platforms.rocm, which reads the GPU's GCN arch at import time: they
  are imported while torch answers gfx942 (attn_variant_items._rocm_arch_query), so _ON_GFX950
  is False, libattn's answer for device_capability 90 (src/backends/rocm_ragged_rows.h); the
  gfx950 batches of ROCM_FLASHMLA_SPARSE_DSV4 patch the module's _ON_GFX950 (v4_sparse_mla_items).
- build_ragged_indices_from_dense's two Triton kernels (_count_valid_row_entries_kernel,
  _compact_dense_row_to_ragged_kernel) run in Triton's interpreter on the items' Triton batches
  and as numpy restatements (``_count_numpy``, ``_compact_numpy``, launched by vLLM's own
  wrapper: its grid, its cumsum, its buffers) on the others.
- The ragged indices vLLM returns are a view of its persistent buffer whose entries past
  indptr[-1] are uninitialized memory (torch.empty, copied over): ``ragged_pairs`` compares the
  length and the first indptr[-1] entries, and the indptr whole.
- get_cudagraph_support under adaptive verification (``adaptive_level_pair``): vLLM's class
  asked with speculative_config.enable_adaptive_verification set for the call (the lane's
  VllmConfig is shared, so it is restored), libattn's attn_backend_cudagraph_support with
  enable_adaptive_verification=1."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
from typing import Any, Iterator, List

import numpy as np

from .compare import MISSING, Pair

RAGGED_OPS = "vllm.v1.attention.ops.rocm_aiter_mla_sparse"
#: (indices field, indptr field) pairs of the ROCm metadata
RAGGED_FIELDS = (("c128a_decode_topk_ragged_indices", "c128a_decode_topk_ragged_indptr"),
                 ("decode_swa_ragged_indices", "decode_swa_ragged_indptr"),
                 ("prefill_swa_ragged_indices", "prefill_swa_ragged_indptr"))


def import_rocm(module: str) -> Any:
    """vLLM's ROCm module, imported under the gfx942 answer."""
    from .attn_variant_items import _rocm_arch_query
    with _rocm_arch_query():
        importlib.import_module("vllm.platforms.rocm")
        return importlib.import_module(module)


def _keep(indices: Any, lengths: Any, num_rows_limit: int, num_queries: int,
          row_width: int) -> Any:
    """The kept entries: column j < min(len, width) of a row with a value >= 0 (and below the
    limit when one is given)."""
    rows = indices.numpy().reshape(indices.shape[0], -1)[:num_queries, :row_width]
    lens = lengths.numpy()[:num_queries].astype(np.int64)
    keep = (np.arange(row_width)[None, :] < lens[:, None]) & (rows >= 0)
    if num_rows_limit >= 0:
        keep &= rows < num_rows_limit
    return rows, keep


def _count_numpy(indices: Any, lengths: Any, counts: Any, indptr: Any, indices_stride0: int,
                 num_rows_limit: int, num_queries: int, row_width: int, **_: Any) -> None:
    """_count_valid_row_entries_kernel restated: counts[r] = the entries row r keeps;
    indptr[0] = 0."""
    _, keep = _keep(indices, lengths, num_rows_limit, num_queries, row_width)
    counts.numpy()[:num_queries] = keep.sum(axis=1)
    indptr.numpy()[0] = 0


def _compact_numpy(indices: Any, lengths: Any, indptr: Any, out: Any, indices_stride0: int,
                   num_rows_limit: int, row_width: int, **_: Any) -> None:
    """_compact_dense_row_to_ragged_kernel restated: row r's kept entries, in order, at
    out[indptr[r]:]."""
    n = indices.shape[0]
    rows, keep = _keep(indices, lengths, num_rows_limit, n, row_width)
    ptr = indptr.numpy()
    o = out.numpy()
    for r in range(n):
        kept = rows[r][keep[r]]
        o[ptr[r]:ptr[r] + kept.shape[0]] = kept


class _Launch:
    """A restatement launched as vLLM launches its kernel: ``kernel[grid](*args)``."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __getitem__(self, grid: Any) -> Any:
        return self.fn


@contextlib.contextmanager
def ragged_kernels(real_triton: bool) -> Iterator[None]:
    """The numpy restatements in place of the two kernels, unless ``real_triton``."""
    from unittest import mock
    with contextlib.ExitStack() as stack:
        if not real_triton:
            mod = importlib.import_module(RAGGED_OPS)
            stack.enter_context(mock.patch.object(mod, "_count_valid_row_entries_kernel",
                                                  _Launch(_count_numpy)))
            stack.enter_context(mock.patch.object(mod, "_compact_dense_row_to_ragged_kernel",
                                                  _Launch(_compact_numpy)))
        yield


def ragged_pairs(vmd: Any, lib: dict) -> List[Pair]:
    """The ragged fields of ``vmd`` against ``lib`` (popped from it): the indptr whole, the
    indices' length and first indptr[-1] entries."""
    out: List[Pair] = []
    for ind, ptr in RAGGED_FIELDS:
        if not hasattr(vmd, ind):
            continue
        vi, vp = getattr(vmd, ind), getattr(vmd, ptr)
        li, lp = lib.pop(ind, MISSING), lib.pop(ptr, MISSING)
        out.append((ptr, vp, lp))
        if vi is None or li is None or li is MISSING or vp is None:
            out.append((ind, vi, li))
            continue
        nnz = int(vp[-1])
        li = np.asarray(li)
        out.append((f"{ind} (length)", int(vi.shape[0]), int(li.shape[0])))
        out.append((f"{ind} [:indptr[-1]] (past it vLLM's is uninitialized memory)",
                    vi[:nnz], li[:nnz]))
    return out


RAGGED_NAMES = frozenset(n for pair in RAGGED_FIELDS for n in pair)


class RocmPlatform:
    """current_platform as the base builders ask it on a ROCm GPU (is_rocm: no FlashMLA tile
    scheduler objects), everything else the real one's."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def is_rocm(self) -> bool:
        return True

    def is_cuda(self) -> bool:
        return False

    def is_device_capability_family(self, family: int, *a: Any, **k: Any) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def adaptive_level_pair(ctx: Any, vb: Any, vc: Any, lb: Any, name: str, patch: Any) -> Pair:
    """get_cudagraph_support with adaptive verification on (speculative decoding only: without
    it vLLM has no speculative_config), vLLM's (asked inside ``patch(False)``, the item's
    replacements) against libattn's."""
    from vllm.config import set_current_vllm_config
    sc = vc.speculative_config
    if sc is None:
        return ("builder: get_cudagraph_support (adaptive verification: no speculative "
                "decoding)", None, None)
    old = sc.enable_adaptive_verification
    sc.enable_adaptive_verification = True
    try:
        with set_current_vllm_config(vc), patch(False):
            level = type(vb).get_cudagraph_support(vc, vb.kv_cache_spec).name
    finally:
        sc.enable_adaptive_verification = old
    cfg = dataclasses.replace(lb.config, enable_adaptive_verification=1)
    got = ctx.lib.backend_cudagraph_support(name, lb.spec, cfg).name
    return ("builder: get_cudagraph_support (adaptive verification)", level, got)
