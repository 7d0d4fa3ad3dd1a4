"""attn_resolve_cudagraph_mode_and_sizes against vLLM 0.33's own resolution (issue 33, part 4):
``vllm_side`` runs vLLM's real functions on a CompilationConfig whose fields are set directly
(cudagraph_mode, cudagraph_capture_sizes, max_cudagraph_capture_size, splitting_ops, mode,
use_inductor_graph_partition): the model runner V1 reduction over the attention groups (min
level, strict <, the first backend named), CompilationConfig.resolve_cudagraph_mode_and_sizes,
and with adaptive verification MRV2's get_varlen_cudagraph_unsupported_backend (its ValueError)
and resolve_adaptive_cudagraph_mode first. ``attn_side`` gives libattn the same inputs through
the Python binding. Compared: the outcome (ok, or the error: ValueError as UNSUPPORTED,
AssertionError as INVALID_ARGUMENT), the mode, the capture sizes, max_cudagraph_capture_size.

The lane item draws one point per batch (``draw``); scripts/vllm_cudagraph_mode_compare.py
runs the same two sides over a fixed grid (the source of tests/c/test_cudagraph_mode.c's
hand-checked cases)."""
from __future__ import annotations

import functools
import types
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from .batches import Batch
from .item import Item, choice_rng

#: vLLM's CUDAGraphMode members in libattn's attn_cudagraph_mode_t order
MODE_NAMES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


class Point(NamedTuple):
    """One resolution's inputs (``mode``: an index into MODE_NAMES; ``groups``: (level,
    backend name, varlen bound or None) per attention group)."""
    mode: int
    groups: Sequence[Tuple[int, Optional[str], Optional[int]]]
    q: int
    sizes: Sequence[int]
    max_size: int
    v2: bool
    pw: bool
    split: bool
    compile_: bool
    inductor: bool
    mamba: bool
    num_blocks: int
    max_reqs: int
    profiling: bool
    adaptive: bool


def vllm_side(p: Point) -> Tuple[Any, ...]:
    from vllm.config.compilation import CompilationConfig, CompilationMode, CUDAGraphMode
    from vllm.v1.attention.backend import AttentionCGSupport
    from vllm.v1.worker.gpu.attn_utils import get_varlen_cudagraph_unsupported_backend
    from vllm.v1.worker.gpu.spec_decode.adaptive_verification import (
        resolve_adaptive_cudagraph_mode)
    c = CompilationConfig()
    c.cudagraph_mode = CUDAGraphMode[MODE_NAMES[p.mode]]
    c.cudagraph_capture_sizes = list(p.sizes)
    c.max_cudagraph_capture_size = p.max_size if p.max_size else None
    c.splitting_ops = list(_attention_ops()) if p.split else []
    c.mode = CompilationMode.VLLM_COMPILE if p.compile_ else CompilationMode.NONE
    c.use_inductor_graph_partition = p.inductor
    kv = types.SimpleNamespace(has_mamba_layers=p.mamba, num_blocks=p.num_blocks)
    try:
        # The V1 runner's reduction (_check_and_update_cudagraph_mode), which V2's
        # get_attn_cg_support repeats.
        min_cg, min_name = AttentionCGSupport.ALWAYS, None
        for level, name, _ in p.groups:
            if AttentionCGSupport(level).value < min_cg.value:
                min_cg, min_name = AttentionCGSupport(level), name
        if p.adaptive:
            attn_groups = [[_fake_group(level, name, bound, AttentionCGSupport)
                            for level, name, bound in p.groups]]
            bad = get_varlen_cudagraph_unsupported_backend(attn_groups, None, p.q)
            if bad is not None:
                raise ValueError(f"varlen {bad}")
            c.cudagraph_mode = resolve_adaptive_cudagraph_mode(
                c.cudagraph_mode, piecewise_capture_available=p.pw)
        out = c.resolve_cudagraph_mode_and_sizes(
            min_cg, min_name, p.q, use_v2_model_runner=p.v2, kv_cache_config=kv,
            max_num_reqs=p.max_reqs if p.max_reqs else None, is_profiling=p.profiling,
            piecewise_capture_available=p.pw)
        return ("ok", MODE_NAMES.index(out.name), list(c.cudagraph_capture_sizes or []),
                c.max_cudagraph_capture_size or 0)
    except ValueError:
        return ("UNSUPPORTED",)
    except AssertionError:
        return ("INVALID_ARGUMENT",)


@functools.lru_cache(maxsize=None)
def _attention_ops() -> tuple:
    """CompilationConfig's attention splitting ops (a default config's), made once."""
    from vllm.config.compilation import CompilationConfig
    return tuple(CompilationConfig()._attention_ops)


def attn_side(lib: Any, libattn: Any, p: Point) -> Tuple[Any, ...]:
    try:
        m, s, mx = lib.resolve_cudagraph_mode_and_sizes(
            p.mode, p.groups, uniform_decode_query_len=p.q, cudagraph_capture_sizes=p.sizes,
            max_cudagraph_capture_size=p.max_size, use_v2_model_runner=p.v2,
            piecewise_capture_available=p.pw, splitting_ops_contain_attention=p.split,
            vllm_compile=p.compile_, use_inductor_graph_partition=p.inductor,
            has_mamba_layers=p.mamba, is_profiling=p.profiling, adaptive_verification=p.adaptive,
            num_blocks=p.num_blocks, max_num_reqs=p.max_reqs)
        return ("ok", int(m), s, mx)
    except libattn.Unsupported:
        return ("UNSUPPORTED",)
    except libattn.InvalidArgument:
        return ("INVALID_ARGUMENT",)


def _fake_group(level: int, name: Optional[str], bound: Optional[int], cg_support: Any) -> Any:
    """An AttentionGroup stand-in: what get_varlen_cudagraph_unsupported_backend reads."""
    builder = types.SimpleNamespace(
        get_cudagraph_support=lambda cfg, spec: cg_support(level),
        get_varlen_cudagraph_max_query_len=lambda cfg, spec: bound)
    return types.SimpleNamespace(layer_names=[name], kv_cache_spec=None,
                                 backend=type(name or "Unnamed", (), {}),
                                 get_metadata_builder=lambda i=0: builder)


def draw(b: Batch) -> Point:
    """A point seeded by the batch: any mode; 0 to 3 groups of any level (backend names A, B,
    C; varlen bounds None or 1 to 8); uniform decode query length 1 to 10; no sizes, or a
    sorted list of 1 to 6 sizes up to 64 (what vLLM keeps after its config) with its largest as
    the maximum; either model runner; the compilation flags; Mamba layers with 1 to 32 blocks
    and a request cap in half; profiling; adaptive verification (model runner V2 only) in a
    quarter of the V2 points."""
    r = choice_rng(b, 64)
    groups = [(int(r.integers(0, 4)), "ABC"[i],
               None if r.random() < 0.5 else int(r.integers(1, 9)))
              for i in range(int(r.integers(0, 4)))]
    if r.random() < 0.2:
        sizes: List[int] = []
    else:
        sizes = sorted({int(x) for x in r.integers(1, 65, int(r.integers(1, 7)))})
    v2 = bool(r.random() < 0.5)
    compile_, inductor = ((True, False), (False, False), (False, True))[int(r.integers(0, 3))]
    mamba = bool(r.random() < 0.3)
    return Point(mode=int(r.integers(0, len(MODE_NAMES))), groups=groups,
                 q=int(r.integers(1, 11)), sizes=sizes, max_size=sizes[-1] if sizes else 0,
                 v2=v2, pw=bool(r.random() < 0.7), split=bool(r.random() < 0.7),
                 compile_=compile_, inductor=inductor, mamba=mamba,
                 num_blocks=int(r.integers(1, 33)) if mamba else 0,
                 max_reqs=int(r.integers(1, 33)) if r.random() < 0.5 else 0,
                 profiling=bool(r.random() < 0.2), adaptive=v2 and bool(r.random() < 0.25))


def resolve_item() -> Item:
    def pairs(ctx, b, v, l):
        names = ("outcome", "cudagraph_mode", "cudagraph_capture_sizes",
                 "max_cudagraph_capture_size")
        out = [(n, a, c) for n, a, c in zip(names, v, l)]
        if len(v) != len(l):
            out.append(("outcome fields", len(v), len(l)))
        return out

    def path(ctx, b, v):
        p = draw(b)
        return (f"{v[0]}{', V2' if p.v2 else ''}{', adaptive' if p.adaptive else ''}"
                f"{', mamba' if p.mamba else ''}")
    return Item("resolve_cudagraph_mode_and_sizes (runner reduction, MRV2 adaptive)", "utility",
                lambda ctx, b: vllm_side(draw(b)),
                lambda ctx, b: attn_side(ctx.lib, ctx.libattn, draw(b)), pairs, path=path)


def cudagraph_resolve_items() -> List[Item]:
    return [resolve_item()]
