#!/usr/bin/env python3
"""attn_resolve_cudagraph_mode_and_sizes against vLLM 0.33's own resolution, over a grid.

    VLLM_TARGET_DEVICE=cpu <vllm-venv>/bin/python scripts/vllm_cudagraph_mode_compare.py \
        --lib build-host/libattn.so [--cases out.txt]

For every point of the grid it runs vLLM's real functions on a CompilationConfig whose fields are
set directly (cudagraph_mode, cudagraph_capture_sizes, max_cudagraph_capture_size, splitting_ops,
mode, use_inductor_graph_partition): the model runner V1 reduction (min over groups, strict <,
first backend named), CompilationConfig.resolve_cudagraph_mode_and_sizes, and with adaptive
verification MRV2's get_varlen_cudagraph_unsupported_backend (its ValueError) and
resolve_adaptive_cudagraph_mode first. libattn gets the same inputs through the Python binding.
Compared: the mode, the capture sizes, max_cudagraph_capture_size, or the error (ValueError ->
ATTN_ERR_UNSUPPORTED, AssertionError -> ATTN_ERR_INVALID_ARGUMENT). Exits 1 on any mismatch.
--cases writes one line per point (inputs -> outcome), the source of the hand-checked cmocka
cases in tests/c/test_cudagraph_mode.c. Needs vLLM and torch (CPU): never a dependency of
libattn or its tests.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bindings", "python"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build-host/libattn.so")
    ap.add_argument("--cases")
    args = ap.parse_args()

    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.config.compilation import CompilationConfig, CompilationMode, CUDAGraphMode
    from vllm.v1.attention.backend import AttentionCGSupport
    from vllm.v1.worker.gpu.attn_utils import get_varlen_cudagraph_unsupported_backend
    from vllm.v1.worker.gpu.spec_decode.adaptive_verification import (
        resolve_adaptive_cudagraph_mode)
    logging.disable(logging.CRITICAL)

    import libattn
    lib = libattn.Library(args.lib)

    modes = [CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL,
             CUDAGraphMode.FULL_DECODE_ONLY, CUDAGraphMode.FULL_AND_PIECEWISE]
    mode_num = {m: i for i, m in enumerate(modes)}
    attention_ops = list(CompilationConfig()._attention_ops)

    def vllm_side(mode, groups, q, sizes, max_size, v2, pw, split, compile_, inductor, mamba,
                  num_blocks, max_reqs, profiling, adaptive):
        c = CompilationConfig()
        c.cudagraph_mode = mode
        c.cudagraph_capture_sizes = list(sizes)
        c.max_cudagraph_capture_size = max_size if max_size else None
        c.splitting_ops = attention_ops if split else []
        c.mode = CompilationMode.VLLM_COMPILE if compile_ else CompilationMode.NONE
        c.use_inductor_graph_partition = inductor
        kv = types.SimpleNamespace(has_mamba_layers=mamba, num_blocks=num_blocks)
        try:
            # The V1 runner's reduction (_check_and_update_cudagraph_mode), which V2's
            # get_attn_cg_support repeats.
            min_cg, min_name = AttentionCGSupport.ALWAYS, None
            for level, name, _ in groups:
                if AttentionCGSupport(level).value < min_cg.value:
                    min_cg, min_name = AttentionCGSupport(level), name
            if adaptive:
                attn_groups = [[_fake_group(level, name, bound, AttentionCGSupport)
                                for level, name, bound in groups]]
                bad = get_varlen_cudagraph_unsupported_backend(attn_groups, None, q)
                if bad is not None:
                    raise ValueError(f"varlen {bad}")
                c.cudagraph_mode = resolve_adaptive_cudagraph_mode(
                    c.cudagraph_mode, piecewise_capture_available=pw)
            out = c.resolve_cudagraph_mode_and_sizes(
                min_cg, min_name, q, use_v2_model_runner=v2, kv_cache_config=kv,
                max_num_reqs=max_reqs if max_reqs else None, is_profiling=profiling,
                piecewise_capture_available=pw)
            return ("ok", mode_num[out], list(c.cudagraph_capture_sizes or []),
                    c.max_cudagraph_capture_size or 0)
        except ValueError:
            return ("UNSUPPORTED",)
        except AssertionError:
            return ("INVALID_ARGUMENT",)

    def attn_side(mode, groups, q, sizes, max_size, v2, pw, split, compile_, inductor, mamba,
                  num_blocks, max_reqs, profiling, adaptive):
        try:
            m, s, mx = lib.resolve_cudagraph_mode_and_sizes(
                mode_num[mode], groups, uniform_decode_query_len=q, cudagraph_capture_sizes=sizes,
                max_cudagraph_capture_size=max_size, use_v2_model_runner=v2,
                piecewise_capture_available=pw, splitting_ops_contain_attention=split,
                vllm_compile=compile_, use_inductor_graph_partition=inductor,
                has_mamba_layers=mamba, is_profiling=profiling, adaptive_verification=adaptive,
                num_blocks=num_blocks, max_num_reqs=max_reqs)
            return ("ok", int(m), s, mx)
        except libattn.Unsupported:
            return ("UNSUPPORTED",)
        except libattn.InvalidArgument:
            return ("INVALID_ARGUMENT",)

    group_sets = [[], [(3, "A", None)], [(2, "U", None)], [(1, "S", None)], [(0, "N", None)],
                  [(3, "A", None), (0, "N", None)], [(2, "U", None), (1, "S", None)],
                  [(1, "S", None), (1, "T", None)]]
    size_sets = [([], 0), ([1, 2, 4, 8, 16], 16), ([1, 2], 2), ([5], 5), ([3, 9, 10], 10)]
    mamba_sets = [(False, 0, 0, False), (True, 4, 8, False), (True, 4, 8, True),
                  (True, 16, 8, False), (True, 8, 8, False)]
    grid = list(itertools.product(
        modes, group_sets, [1, 2, 4, 7], size_sets, [False, True], [True, False], [True, False],
        [(True, False), (False, False), (False, True)], mamba_sets))
    # Adaptive verification (MRV2 only): varlen bounds per group.
    adaptive_groups = [[], [(3, "A", None)], [(2, "M", 4)], [(2, "M", 2)], [(2, "F", None)],
                       [(0, "N", 8)], [(1, "S", 4)], [(3, "A", None), (2, "M", 4)],
                       [(2, "M", 4), (2, "F", 1)]]
    adaptive = list(itertools.product(
        [CUDAGraphMode.FULL, CUDAGraphMode.FULL_DECODE_ONLY, CUDAGraphMode.FULL_AND_PIECEWISE],
        adaptive_groups, [1, 4], [True, False], [True, False]))

    cases, mismatches = [], 0
    for mode, groups, q, (sizes, mx), v2, pw, split, (compile_, inductor), \
            (mamba, nb, mr, prof) in grid:
        point = (mode, groups, q, sizes, mx, v2, pw, split, compile_, inductor, mamba, nb, mr,
                 prof, False)
        cases.append((point, vllm_side(*point), attn_side(*point)))
    for mode, groups, q, pw, split in adaptive:
        point = (mode, groups, q, [1, 2, 4, 8], 8, True, pw, split, True, False, False, 0, 0,
                 False, True)
        cases.append((point, vllm_side(*point), attn_side(*point)))
    out = open(args.cases, "w") if args.cases else None
    for point, want, got in cases:
        line = f"{point} -> vllm {want} libattn {got}"
        if want != got:
            mismatches += 1
            print("MISMATCH", line)
        if out:
            out.write(line + "\n")
    print(f"{len(cases)} cases, {mismatches} mismatches")
    return 1 if mismatches else 0


def _fake_group(level, name, bound, AttentionCGSupport):
    """An AttentionGroup stand-in: what get_varlen_cudagraph_unsupported_backend reads."""
    builder = types.SimpleNamespace(
        get_cudagraph_support=lambda cfg, spec: AttentionCGSupport(level),
        get_varlen_cudagraph_max_query_len=lambda cfg, spec: bound)
    return types.SimpleNamespace(layer_names=[name], kv_cache_spec=None,
                                 backend=type(name, (), {}),
                                 get_metadata_builder=lambda i=0: builder)


if __name__ == "__main__":
    sys.exit(main())
