#!/usr/bin/env python3
"""The Python binding's own cost per step (scripts/bench.sh runs it; never a test).

    bench_python.py path/to/libattn.so.1 [--quick]

Issue 7's target is the binding's overhead, so every figure is printed beside the bare ctypes
call it wraps (``lib.raw.attn_*`` with every argument prepared once: the floor for any Python
caller) and as a ratio to it. Times are ns per call, the best of 7 rounds, on two FLASH_ATTN
batches (1 request x 100 tokens, 256 decodes x 4k context):

  build      Builder.build(batch) vs lib.raw.attn_build: overhead = build - raw;
  batch      CommonMetadata(...) from ready numpy arrays (4 arrays; the scalars inferred from
             them, then given), beside the raw attn_build call for scale;
  field      md["seq_lens"] (a numpy view) and md["max_seq_len"] (an int), then md["seq_lens"]
             of a fresh build (build + read, less the build);
  persistent the persistent batch (issue 18) on the same arrays: BoundBatch.build (scalars
             only) vs the raw attn_build, md["seq_lens"] / md["max_seq_len"] read through
             the library (exact) and with trust_inputs; BoundBatch.stepper (issue 35: build
             and read seq_lens, max_seq_len in one call);
  utilities  split_decodes_and_prefills, reorder_batch_to_split_decodes_and_prefills,
             make_local_attention_virtual_batches (binding-allocated outputs, then the caller's:
             a dict converted per call, a LocalAttentionOutputs converted once; the raw call
             then skips attn_local_attention_num_virtual_batches, as the binding does) and
             make_kv_sharing_fast_prefill_common_attn_metadata (then with the caller's outputs),
             each vs its raw call(s) (plus attn_metadata_destroy where the binding frees a
             result);
  hybrid4    issue 35: a hybrid model's four groups (FLASH_ATTN full + sliding window, MAMBA2,
             GDN_ATTN) on one batch: libattn.build_groups vs four Builder.build, and
             PersistentGroupStep.build vs four BoundBatch.build, each pair measured in turn in
             this process (raw = one attn_build_groups call).

The C time itself is bench_abi_overhead's figure; machine load moves every absolute number
here, the ratios (measured seconds apart in one process) much less.
"""
import ctypes
import functools
import os
import platform
import sys
import time
from typing import Callable, Dict, List, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings",
                                "python"))
import libattn  # noqa: E402
from libattn.structs import attn_batch_split_t, attn_local_attention_out_t, new  # noqa: E402
from libattn.tensors import tensor_arg  # noqa: E402

TARGETS = {  # issue 7: ns of binding overhead (or of the whole call, for batch and field)
    "Builder.build overhead": 5000, "CommonMetadata(...), scalars given": 20000,
    "CommonMetadata(...), scalars inferred": 20000, 'md["seq_lens"]': 5000,
}
ROUNDS = 7


def best_ns(fn: Callable[[], object], budget_s: float = 0.02) -> float:
    """ns per call of fn: iterations sized to ~budget_s a round, best of ROUNDS rounds."""
    iters, t0 = 1, time.perf_counter()
    fn()
    while True:
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        dt = time.perf_counter() - t0
        if dt >= budget_s / 4 or iters >= 1 << 20:
            break
        iters *= 4
    iters = max(1, int(iters * budget_s / max(dt, 1e-9)))
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / iters)
    return best


def arrays(n: int, context: int) -> Dict[str, np.ndarray]:
    width = -(-(context + 1) // 16)
    seq = np.full(n, context + 1, np.int32)
    table = np.arange(1, n * width + 1, dtype=np.int32).reshape(n, width)
    slots = table[:, context // 16].astype(np.int64) * 16 + context % 16
    return dict(query_start_loc=np.arange(n + 1, dtype=np.int32), seq_lens=seq,
                block_table=table, slot_mapping=slots)


Row = Tuple[str, str, float, float]  # operation, batch, raw ns, binding ns


def measure_persistent(lib: "libattn.Library", b: "libattn.Builder", spec: "libattn.KvCacheSpec",
                       config: "libattn.BuilderConfig", a: Dict[str, np.ndarray], label: str,
                       raw_ns: float) -> List[Row]:
    """The persistent batch (issue 18) on the same arrays, written once: its build (scalars
    only) beside the raw attn_build, and field reads asking the library (exact) and with
    trust_inputs."""
    n = len(a["seq_lens"])
    batch = libattn.PersistentBatch(config, a["block_table"].shape[1])
    for name, x in a.items():
        batch.arrays[name][: len(x)] = x
    scalars = (n, n, 1, int(a["seq_lens"].max()))
    rows: List[Row] = []
    for trust in (False, True):
        step = b.bind(batch, trust_inputs=trust)
        md = step.build(*scalars)
        tag = ", trust_inputs" if trust else ""
        if not trust:
            rows.append(("BoundBatch.build (persistent batch)", label, raw_ns,
                         best_ns(lambda: step.build(*scalars))))
            if hasattr(step, "stepper"):  # issue 35: build + fields in one call
                run = step.stepper(("seq_lens", "max_seq_len"))
                rows.append(('BoundBatch.stepper: build, seq_lens, max_seq_len', label, raw_ns,
                             best_ns(lambda: run(*scalars))))
        md["seq_lens"], md["max_seq_len"]
        rows.append((f'md["seq_lens"], persistent{tag}', label, raw_ns,
                     best_ns(lambda: md["seq_lens"])))
        rows.append((f'md["max_seq_len"], persistent{tag}', label, raw_ns,
                     best_ns(lambda: md["max_seq_len"])))
    return rows


def alternating_ns(fns: List[Callable[[], object]], repeats: int = 3) -> List[float]:
    """best_ns of each fn, measured in turn ``repeats`` times (A, B, A, B, ...), the best of
    each kept: both sides see the same moments of a noisy machine."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_ns(fn))
    return best


#: a hybrid model's KV cache groups (bench_workloads.cc's hybrid4 rows, vllm_compare.py's HYBRID)
HYBRID = ("FLASH_ATTN full", "FLASH_ATTN sliding", "MAMBA2", "GDN_ATTN")


def hybrid_builders(lib: "libattn.Library", config: "libattn.BuilderConfig") -> list:
    mamba = dict(kind=libattn.KvCacheKind.MAMBA)
    specs = [("FLASH_ATTN", libattn.KvCacheSpec(16, 8, 128)),
             ("FLASH_ATTN", libattn.KvCacheSpec(16, 8, 128,
                                                kind=libattn.KvCacheKind.SLIDING_WINDOW,
                                                sliding_window=4096)),
             ("MAMBA2", libattn.KvCacheSpec(16, 1, 1, **mamba, mamba_type=libattn.MambaType.MAMBA2,
                                            mamba_chunk_size=256)),
             ("GDN_ATTN", libattn.KvCacheSpec(16, 1, 1, **mamba,
                                              mamba_type=libattn.MambaType.GDN_ATTENTION))]
    return [lib.builder(name, spec, config) for name, spec in specs]


def measure_hybrid(lib: "libattn.Library", n: int, context: int) -> List[Row]:
    """Issue 35: a hybrid model's four groups on one batch (decodes, ``is_prefilling`` all
    False), each pair measured alternately in one process: libattn.build_groups against four
    Builder.build, and the persistent grouped step (PersistentGroupStep.build) against the
    four single persistent steps (BoundBatch.build) on the same PersistentBatch; raw = the
    bare ctypes attn_build_groups call (on the CommonMetadata, then on the persistent batch's
    struct with every argument made once), measured in the same alternation."""
    if not hasattr(libattn, "PersistentGroupStep"):
        return []
    label = f"{n} x {context + 1}"
    a = arrays(n, context)
    config = libattn.BuilderConfig(256, 8192, 8192, 32, device_capability=90,
                                   cudagraph_mode=libattn.CudagraphMode.NONE)
    common = libattn.CommonMetadata(**a, is_prefilling=np.zeros(n, np.bool_))
    bs = hybrid_builders(lib, config)
    groups_fn = lib.optional_function("attn_build_groups")
    handles = (ctypes.c_void_p * 4)(*[b.handle for b in bs])
    out = (ctypes.c_void_p * 4)()
    rows: List[Row] = []
    raw_ns, singles, grouped = alternating_ns([
        lambda: groups_fn(handles, 4, None, common.ref, 0, out, None),
        lambda: [b.build(common) for b in bs], lambda: libattn.build_groups(bs, common)])
    rows.append(("hybrid4: four Builder.build (sum of single builds)", label, raw_ns, singles))
    rows.append(("hybrid4: libattn.build_groups", label, raw_ns, grouped))
    batch = libattn.PersistentBatch(config, a["block_table"].shape[1], inputs=("is_prefilling",))
    for name, x in a.items():
        batch.arrays[name][: len(x)] = x
    scalars = (n, n, 1, int(a["seq_lens"].max()))
    bounds = [b.bind(batch) for b in bs]
    group = libattn.PersistentGroupStep(bs, batch)
    batch.set_counts(*scalars)
    bare = functools.partial(ctypes.CFUNCTYPE(ctypes.c_void_p)(
        ctypes.cast(groups_fn, ctypes.c_void_p).value), handles, ctypes.c_size_t(4), None,
        ctypes.byref(batch.common.struct), ctypes.c_int32(0), out, None)
    raw_ns, singles, grouped = alternating_ns([bare, lambda: [bb.build(*scalars) for bb in bounds],
                                               lambda: group.build(*scalars)])
    rows.append(("hybrid4: four BoundBatch.build (sum of single persistent steps)", label,
                 raw_ns, singles))
    rows.append(("hybrid4: PersistentGroupStep.build", label, raw_ns, grouped))
    for b in bs:
        b.close()
    return rows


def measure_batch(lib: "libattn.Library", n: int, context: int, quick: bool) -> List[Row]:
    raw = lib.raw
    label = f"{n} x {context + 1}"
    a = arrays(n, context)
    given = dict(num_reqs=n, num_actual_tokens=n, max_query_len=1, max_seq_len=context + 1)
    batch = libattn.CommonMetadata(**a)
    spec = libattn.KvCacheSpec(16, 8, 128)
    config = libattn.BuilderConfig(256, 8192, 8192, 32, device_capability=90)
    rows: List[Row] = []
    md_out = ctypes.c_void_p()
    md_ref = ctypes.byref(md_out)
    with lib.builder("FLASH_ATTN", spec, config) as b:
        h, ref = b.handle, batch.ref
        raw_ns = best_ns(lambda: raw.attn_build(h, 0, ref, 0, md_ref, None))
        rows.append(("Builder.build", label, raw_ns, best_ns(lambda: b.build(batch))))
        rows.append(("CommonMetadata(...), scalars inferred", label, raw_ns,
                     best_ns(lambda: libattn.CommonMetadata(**a))))
        rows.append(("CommonMetadata(...), scalars given", label, raw_ns,
                     best_ns(lambda: libattn.CommonMetadata(**a, **given))))
        md = b.build(batch)
        rows.append(('md["seq_lens"]', label, raw_ns, best_ns(lambda: md["seq_lens"])))
        rows.append(('md["max_seq_len"]', label, raw_ns, best_ns(lambda: md["max_seq_len"])))
        # the first read of a fresh build, as a runtime reads a field once per step: build and
        # read, less the build alone (nothing is cached per metadata, so this matches the above
        # within the noise of a difference)
        both = best_ns(lambda: b.build(batch)["seq_lens"])
        rows.append(('md["seq_lens"] of a fresh build', label, raw_ns,
                     max(both - rows[0][3], 0.0)))
        if hasattr(libattn, "PersistentBatch"):  # issue 18: the persistent batch
            rows += measure_persistent(lib, b, spec, config, a, label, raw_ns)
    if quick:
        return rows

    # split_decodes_and_prefills
    split = new(attn_batch_split_t)
    split_ref = ctypes.byref(split)
    split_raw = best_ns(lambda: raw.attn_split_decodes_and_prefills(ref, 1, 0, split_ref))
    rows.append(("split_decodes_and_prefills", label, split_raw,
                 best_ns(lambda: lib.split_decodes_and_prefills(batch, 1))))
    # two batches that split differently, in turn: no answer repeats (the compiled path
    # returns its last BatchSplit again when the counts repeat)
    other = libattn.CommonMetadata(**arrays(n + 1, context))
    rows.append(("split_decodes_and_prefills, two batches in turn (per call)", label, split_raw,
                 best_ns(lambda: (lib.split_decodes_and_prefills(batch, 1),
                                  lib.split_decodes_and_prefills(other, 1))) / 2))

    # reorder_batch_to_split_decodes_and_prefills, requests shuffled (a decode-only batch: no
    # swaps; the figure is the binding's cost around the call)
    perm = np.random.default_rng(7).permutation(n)
    sched = np.ascontiguousarray(np.diff(a["query_start_loc"])[perm], np.int32)
    comp = np.ascontiguousarray((a["seq_lens"] - np.diff(a["query_start_loc"]))[perm], np.int32)
    swaps = np.zeros(2 * n, np.int32)
    i32p = ctypes.POINTER(ctypes.c_int32)
    r_args = (sched.ctypes.data_as(i32p), comp.ctypes.data_as(i32p), n, 1,
              swaps.ctypes.data_as(i32p), n, ctypes.byref(ctypes.c_int64()))
    rows.append(("reorder_batch_to_split_decodes_and_prefills", label,
                 best_ns(lambda: raw.attn_reorder_batch_to_split_decodes_and_prefills(*r_args)),
                 best_ns(lambda: lib.reorder_batch_to_split_decodes_and_prefills(sched, comp, 1))))

    # make_local_attention_virtual_batches (vllm_compare.py's chunk)
    chunk, block = 8192, 16
    v = lib.local_attention_num_virtual_batches(chunk, batch)
    local_out = {k: np.zeros(s, np.int32) for k, s in [
        ("query_start_loc", v + 1), ("query_start_loc_cpu", v + 1), ("seq_lens", v),
        ("seq_lens_cpu", v), ("num_computed_tokens_cpu", v), ("block_table", (v, chunk // block)),
        ("virtual_req", v), ("virtual_block_start", v)]}
    local_args = {k: tensor_arg(x) for k, x in local_out.items()}
    local_struct = new(attn_local_attention_out_t, **{k: x.ref for k, x in local_args.items()})
    v_ref, ls_ref = ctypes.byref(ctypes.c_int64()), ctypes.byref(local_struct)

    def raw_local() -> None:
        raw.attn_local_attention_num_virtual_batches(chunk, ref, v_ref)
        raw.attn_make_local_attention_virtual_batches(chunk, ref, block, ls_ref, md_ref, None)
        raw.attn_metadata_destroy(md_out)
    raw_local_ns = best_ns(raw_local)

    def raw_local_make() -> None:  # outputs given: no V to query
        raw.attn_make_local_attention_virtual_batches(chunk, ref, block, ls_ref, md_ref, None)
        raw.attn_metadata_destroy(md_out)
    raw_make_ns = best_ns(raw_local_make)
    rows.append(("make_local_attention_virtual_batches", label, raw_local_ns,
                 best_ns(lambda: lib.make_local_attention_virtual_batches(chunk, batch, block))))
    if hasattr(libattn, "LocalAttentionOutputs"):  # a binding with outputs= (issue 7)
        rows.append(("make_local_attention_virtual_batches(outputs=dict)", label, raw_make_ns,
                     best_ns(lambda: lib.make_local_attention_virtual_batches(
                         chunk, batch, block, outputs=local_out))))
        prepared = libattn.LocalAttentionOutputs(**local_out)
        rows.append(("make_local_attention_virtual_batches(outputs=LocalAttentionOutputs)", label,
                     raw_make_ns, best_ns(lambda: lib.make_local_attention_virtual_batches(
                         chunk, batch, block, outputs=prepared))))

    # make_kv_sharing_fast_prefill_common_attn_metadata: the last token of each request
    logits = (a["query_start_loc"][1:] - 1).astype(np.int32)
    common_l = libattn.CommonMetadata(**a, logits_indices_padded=logits, num_logits_indices=n)
    fp_q, fp_qc = tensor_arg(np.zeros(n + 1, np.int32)), tensor_arg(np.zeros(n + 1, np.int32))
    ref_l = common_l.ref

    def raw_fast_prefill() -> None:
        raw.attn_make_kv_sharing_fast_prefill_common_attn_metadata(ref_l, None, fp_q.ref,
                                                                   fp_qc.ref, md_ref, None)
        raw.attn_metadata_destroy(md_out)
    raw_fp_ns = best_ns(raw_fast_prefill)
    rows.append(("make_kv_sharing_fast_prefill_common_attn_metadata", label, raw_fp_ns,
                 best_ns(lambda: lib.make_kv_sharing_fast_prefill_common_attn_metadata(common_l))))
    if hasattr(libattn, "LocalAttentionOutputs"):  # with out_query_start_loc_cpu= too
        q, qc = fp_q.source, fp_qc.source
        rows.append(("make_kv_sharing_fast_prefill_...(out_query_start_loc[_cpu]=)", label,
                     raw_fp_ns, best_ns(
                         lambda: lib.make_kv_sharing_fast_prefill_common_attn_metadata(
                             common_l, out_query_start_loc=q, out_query_start_loc_cpu=qc))))
    return rows


def main() -> None:
    args = [x for x in sys.argv[1:] if not x.startswith("--")]
    quick = "--quick" in sys.argv
    lib = libattn.Library(args[0] if args else None)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    path = "libattn._native (compiled)" if getattr(lib, "native", None) else "ctypes"
    print(f"Python binding cost ({path}), ns per call, best of {ROUNDS} rounds; "
          f"ratio = binding / raw ctypes call")
    print(f"  {platform.python_implementation()} {platform.python_version()}, numpy "
          f"{np.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load:.1f}, libattn {'.'.join(map(str, lib.version))}")
    loop_ns = best_ns(lambda: None)  # this interpreter's speed: every figure scales with it
    print(f"  a Python call of an empty lambda here: {loop_ns:.0f} ns")
    rows: List[Row] = []
    for n, context in ((1, 99), (256, 4095)):
        rows += measure_batch(lib, n, context, quick)
    hybrid: List[Row] = []
    for n, context in ((1, 99), (256, 4095)):
        hybrid += measure_hybrid(lib, n, context)
    rows += hybrid
    print(f"  {'operation':<68} {'batch':<11} {'raw call':>9} {'binding':>9} "
          f"{'overhead':>9} {'ratio':>6}")
    for op, label, raw_ns, ns in rows:
        whole = op.startswith(("CommonMetadata", "md["))  # not a wrapper of the raw call
        over = "" if whole else f"{ns - raw_ns:9.0f}"
        print(f"  {op:<68} {label:<11} {raw_ns:9.0f} {ns:9.0f} {over:>9} {ns / raw_ns:6.2f}")
    print("  (CommonMetadata and md[...] rows: the whole Python cost; ratio to the attn_build "
          "call for scale; hybrid4 rows: raw = one attn_build_groups call)")
    for i in range(0, len(hybrid), 2):  # (four single calls, the grouped call) pairs
        (op_s, label, _, singles), (op_g, _, _, grouped) = hybrid[i], hybrid[i + 1]
        print(f"  {label:<11} {op_s.split(': ')[1]} / {op_g.split(': ')[1]}: "
              f"{singles / grouped:.2f}x")
    worst: Dict[str, Tuple[float, float]] = {}
    for op, _, raw_ns, ns in rows:
        key = "Builder.build overhead" if op == "Builder.build" else op if op in TARGETS else None
        if key:
            value = ns - raw_ns if key == "Builder.build overhead" else ns
            if value > worst.get(key, (-1.0, 0.0))[0]:
                worst[key] = (value, value / raw_ns)
    print("issue 7 targets (worst batch):")
    for key, limit in TARGETS.items():
        value, ratio = worst[key]
        print(f"  {key:<38} {value:9.0f} ns = {ratio:5.2f} x raw call   target < {limit} ns: "
              f"{'met' if value < limit else 'MISSED'}")


if __name__ == "__main__":
    main()
