"""vLLM 0.33's smaller attention builders against libattn's of the same name, on the builder
items' batches (a real VllmConfig for the lane's Llama-shaped model, a FullAttentionSpec of 8
KV heads of 128):

- B12X (B12xPagedMetadataBuilder): the batch's tables; `causal` False in one batch of ten and a
  per-request int32 tensor in one of five (vLLM passes either through);
- CACHE_ONLY_ATTN (CacheOnlyAttentionMetadataBuilder; a plain class, compared by its one
  attribute slot_mapping): `causal` False in one batch of ten, which both refuse;
- ROCM_ATTN (RocmAttentionMetadataBuilder) and ROCM_OCTAVE (RocmOctaveMetadataBuilder: the split
  and the per-token q_to_req / q_to_klen maps), ROCM_AITER_UNIFIED_ATTN
  (RocmAiterUnifiedAttentionMetadataBuilder) and ROCM_SEGMENTED_ATTN
  (RocmSegmentedAttentionMetadataBuilder), libattn's host path as a ROCm runtime uses it;
  `causal` a per-request tensor in a fifth of ROCM_ATTN's and ROCM_SEGMENTED_ATTN's batches;
- HPC_ATTN (HpcAttnMetadataBuilder): vLLM's builder imports the `hpc` kernel library, which
  has no CPU build: the lane puts a recorder in its place (patches-style), so vLLM's build runs
  and its two hpc calls are compared with libattn's task_map_* fields (the workspace's
  max_num_seqs, max_model_len, num_kv_heads, min_process_len; the decode schedule's
  seq_lens[:num_decodes], num_kv_heads, decode_query_len, min_process_len). task_map itself is
  hpc's workspace (the recorder's placeholder in vLLM), which libattn leaves None.

Each also compares the builder's class answers (compare.builder_answer_pairs). The items
"<name> (capture builds)" (issue 34) make both sides' builders for full CUDA graphs
(FULL_AND_PIECEWISE, vLLM's default capture sizes to 512) and call build_for_cudagraph_capture
on the batches layer_variant_items.capture_batch picks by the level vLLM's class answers
(vLLM's runner's dummy batches among theirs, one in eight), build otherwise."""
from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Dict, List, Tuple

import numpy as np

from .batches import BLOCK_SIZES, CAPTURE_SIZES, Batch
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, _cache, _leaf,
                            _missing_safe, other_group)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .draft_update import Sides, with_draft_update
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

CLASSES = {
    "B12X": ("vllm.v1.attention.backends.b12x", "B12xPagedMetadataBuilder"),
    "HPC_ATTN": ("vllm.v1.attention.backends.hpc_attn", "HpcAttnMetadataBuilder"),
    "CACHE_ONLY_ATTN": ("vllm.model_executor.models.extract_hidden_states",
                        "CacheOnlyAttentionMetadataBuilder"),
    "ROCM_ATTN": ("vllm.v1.attention.backends.rocm_attn", "RocmAttentionMetadataBuilder"),
    "ROCM_OCTAVE": ("vllm.v1.attention.backends.rocm_octave_attn", "RocmOctaveMetadataBuilder"),
    "ROCM_AITER_UNIFIED_ATTN": ("vllm.v1.attention.backends.rocm_aiter_unified_attn",
                                "RocmAiterUnifiedAttentionMetadataBuilder"),
    "ROCM_SEGMENTED_ATTN": ("vllm.v1.attention.backends.rocm_segmented_attn",
                            "RocmSegmentedAttentionMetadataBuilder"),
}
LAYER = "model.layers.0.self_attn"
#: what vLLM's hpc calls received, most recent last (the recorder's)
HPC_CALLS: List[Tuple[str, Dict[str, Any]]] = []


class _TaskMap:
    """The recorder's stand-in for hpc's workspace tensor."""

    def __repr__(self) -> str:
        return "<hpc task_map workspace>"


@contextlib.contextmanager
def _hpc_recorder():
    """sys.modules["hpc"]: get_attention_decode_task_workspace and assign_attention_decode_task
    recording their arguments (vLLM's HpcAttnMetadataBuilder imports hpc in __init__ and
    build)."""
    mod = types.ModuleType("hpc")

    def workspace(max_num_seqs, max_model_len, num_kv_heads, min_process_len=None):
        HPC_CALLS.append(("workspace", dict(max_num_seqs=max_num_seqs,
                                            max_model_len=max_model_len,
                                            num_kv_heads=num_kv_heads,
                                            min_process_len=min_process_len)))
        return _TaskMap()

    def assign(seq_lens, task_map, num_kv_heads, decode_query_len, new_kv_included=None,
               min_process_len=None):
        HPC_CALLS.append(("assign", dict(seq_lens=seq_lens.clone(), num_kv_heads=num_kv_heads,
                                         decode_query_len=decode_query_len,
                                         new_kv_included=new_kv_included,
                                         min_process_len=min_process_len)))

    mod.get_attention_decode_task_workspace = workspace
    mod.assign_attention_decode_task = assign
    old = sys.modules.get("hpc")
    sys.modules["hpc"] = mod
    try:
        yield
    finally:
        if old is None:
            sys.modules.pop("hpc", None)
        else:
            sys.modules["hpc"] = old


@contextlib.contextmanager
def _rocm_arch_query():
    """vllm.platforms.rocm (which rocm_aiter_unified_attn imports for on_gfx1250, an Impl-only
    query) reads the GPU's gcnArchName at import time, through amdsmi or else
    torch.cuda.get_device_properties, and no CPU answers either: while the lane imports it the
    latter answers gfx942 (an MI300). No builder reads the answer."""
    import types as _types
    import torch
    old = torch.cuda.get_device_properties
    torch.cuda.get_device_properties = lambda *a, **k: _types.SimpleNamespace(
        gcnArchName="gfx942")
    try:
        yield
    finally:
        torch.cuda.get_device_properties = old


def _causal(name: str, b: Batch) -> Dict[str, Any]:
    r = choice_rng(b, 60)
    u = r.random()
    if u < 0.1:
        return {"causal": False}
    if u < 0.3 and name in ("B12X", "ROCM_ATTN", "ROCM_SEGMENTED_ATTN") and b.n:
        return {"causal": r.integers(0, 2, b.n).astype(np.int32)}
    return {}


def _key(name: str, b: Batch, full: bool = False) -> Tuple[Any, ...]:
    return (name, b.block_size, b.spec, full)


def vllm_builder(ctx: Any, name: str, b: Batch, full: bool = False) -> Tuple[Any, Any]:
    """vLLM's builder (cached per key); ``full``: for full CUDA graphs (the capture items)."""
    key = ("vllm",) + _key(name, b, full)
    if not _cache(ctx, name, key):
        import importlib
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.kv_cache_interface import FullAttentionSpec
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, ("variants", name, full),
                             MAX_MODEL_LEN)
        if full:
            from vllm.config.compilation import CUDAGraphMode
            cc = vc.compilation_config
            cc.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
            cc.cudagraph_capture_sizes = list(CAPTURE_SIZES)
            cc.max_cudagraph_capture_size = max(CAPTURE_SIZES)
            from .vllm_env import engine_capture_sizes
            engine_capture_sizes(vc, b.spec, v2=False)
        spec = FullAttentionSpec(block_size=b.block_size, num_kv_heads=8, head_size=128,
                                 dtype=torch.bfloat16)
        mod, cls = CLASSES[name]
        try:
            HPC_CALLS.clear()
            with _rocm_arch_query():
                module = importlib.import_module(mod)
            with set_current_vllm_config(vc), _hpc_recorder():
                vb = getattr(module, cls)(spec, [LAYER], vc, torch.device("cpu"))
            ctx.builders[key] = (vb, vc, None, list(HPC_CALLS))
        except Exception as e:
            ctx.builders[key] = (None, vc, e, [])
    vb, vc, err, _ = ctx.builders[key]
    if err is not None:
        raise err
    return vb, vc


def lib_builder(ctx: Any, name: str, b: Batch, vc: Any, full: bool = False) -> Any:
    key = ("lib",) + _key(name, b, full)
    if not _cache(ctx, name, key):
        libattn = ctx.libattn
        extra = dict(cudagraph_capture_sizes=list(CAPTURE_SIZES),
                     max_cudagraph_capture_size=max(CAPTURE_SIZES)) if full else {}
        cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS,
                                    num_speculative_tokens=b.spec,
                                    cudagraph_mode=int(libattn.CudagraphMode[
                                        vc.compilation_config.cudagraph_mode.name]), **extra)
        ctx.builders[key] = ctx.lib.builder(name, libattn.KvCacheSpec(b.block_size, 8, 128), cfg)
    return ctx.builders[key]


def _captures(ctx: Any, name: str, b: Batch, full: bool) -> bool:
    """build_for_cudagraph_capture instead of build: a full-graph builder, on the batches
    layer_variant_items.capture_batch picks by the level of vLLM's builder class."""
    if not full:
        return False
    from vllm.config import set_current_vllm_config
    from .layer_variant_items import capture_batch
    vb, vc = vllm_builder(ctx, name, b, full)
    with set_current_vllm_config(vc):
        level = type(vb).get_cudagraph_support(vc, vb.kv_cache_spec)
    return capture_batch(level.name, b)


def variant_item(name: str, update: bool = False, full: bool = False) -> Item:
    """``update``: the item of update_block_table (B12X supports it): the built metadata
    updated with builder_items.other_group's table and slot mapping on both sides. ``full``:
    the capture-builds item (full CUDA graphs, build_for_cudagraph_capture where _captures)."""
    def v(ctx, b):
        vb, vc = vllm_builder(ctx, name, b, full)
        from vllm.config import set_current_vllm_config
        HPC_CALLS.clear()
        capture = _captures(ctx, name, b, full)
        with set_current_vllm_config(vc), _hpc_recorder():
            cm = vllm_common(ctx, b, **_causal(name, b))
            if capture:
                # the ROCm builders' captures write seq_lens and query_start_loc in place (as
                # libattn's do): vLLM's into copies, so that libattn's side reads the batch
                cm.seq_lens = cm.seq_lens.clone()
                cm.query_start_loc = cm.query_start_loc.clone()
            out = vb.build_for_cudagraph_capture(cm) if capture else vb.build(0, cm)
            if update:
                table, slots = other_group(b)
                out = vb.update_block_table(out, ctx.torch.from_numpy(table),
                                            ctx.torch.from_numpy(slots))
        return out, list(HPC_CALLS)

    def l(ctx, b):
        _, vc = vllm_builder(ctx, name, b, full)
        lb = lib_builder(ctx, name, b, vc, full)
        common = lib_common(ctx, b, **_causal(name, b))
        md = lb.build_for_cudagraph_capture(common) if _captures(ctx, name, b, full) else \
            lb.build(common)
        if update:
            table, slots = other_group(b)
            md = lb.update_block_table(md, table, slots)
        return md

    def pairs(ctx, b, vv, md):
        v, calls = vv
        lib = {n: md[n] for n in md.fields()}
        out: List[Pair] = []
        seen = set()
        fields = [("slot_mapping", v.slot_mapping)] if name == "CACHE_ONLY_ATTN" \
            else flatten_vllm(v)
        for f, value in fields:
            seen.add(f)
            if name == "HPC_ATTN" and f == "task_map":
                out.append(("task_map (hpc's workspace; libattn: None)", None, lib.get(f, MISSING)))
            elif f in lib:
                out.append((f, _leaf(value), lib[f]))
            else:
                out.append((f"{f} (vLLM field libattn lacks)", _leaf(value), MISSING))
        if name == "HPC_ATTN":
            out += _hpc_pairs(ctx, b, calls, lib, seen, full)
        for f in lib:
            if f not in seen:
                out.append((f"{f} (libattn field vLLM 0.33 lacks)", MISSING, lib[f]))
        vb, vc = vllm_builder(ctx, name, b, full)
        out += builder_answer_pairs(vb, vc, lib_builder(ctx, name, b, vc, full))
        return _missing_safe(out)

    def path(ctx, b, vv):
        v, _ = vv
        how = "captured" if _captures(ctx, name, b, full) else "built"
        if name == "HPC_ATTN":
            return f"{'decodes' if v.num_decodes else 'no decodes'}, " \
                   f"{'prefills' if v.num_prefills else 'no prefills'}, " \
                   f"q/decode {v.decode_query_len}, {how}"
        return how

    suffix = " (update_block_table)" if update else " (capture builds)" if full else ""
    if full:
        from .layer_variant_items import VARIANT_KINDS
        item = Item(name + suffix, "builder", v, l, pairs, max_spec=3, block_sizes=BLOCK_SIZES,
                    path=path, kinds=VARIANT_KINDS)
        return item  # a drafter updates a build, never a capture's
    item = Item(name + suffix, "builder", v, l, pairs, max_spec=3, block_sizes=BLOCK_SIZES,
                path=path)
    if update:  # update_block_table's result views other_group's slots, not the batch's
        return item

    def sides(ctx: Any, b: Batch) -> Sides:
        vb, vc = vllm_builder(ctx, name, b)
        return Sides(b, vb, vc, lib_builder(ctx, name, b, vc))

    return with_draft_update(item, sides, metadata=lambda vv: vv[0])


def _hpc_pairs(ctx: Any, b: Batch, calls: List[Tuple[str, Dict[str, Any]]],
               lib: Dict[str, Any], seen: set, full: bool) -> List[Pair]:
    """vLLM's two hpc calls against libattn's task_map_* fields (and its decode views)."""
    key = ("vllm",) + _key("HPC_ATTN", b, full)
    ws = dict(ctx.builders[key][3])
    out: List[Pair] = []
    for arg in ("max_num_seqs", "max_model_len", "num_kv_heads", "min_process_len"):
        f = f"task_map_{arg}"
        seen.add(f)
        out.append((f"hpc.get_attention_decode_task_workspace({arg}=) ~ {f}",
                    ws.get("workspace", {}).get(arg, MISSING), lib.get(f, MISSING)))
    assign = dict(calls).get("assign")
    nd = int(lib.get("num_decodes", 0))
    out.append(("hpc.assign_attention_decode_task called ~ num_decodes > 0", assign is not None,
                nd > 0))
    if assign is not None:
        seq = lib.get("seq_lens")
        out += [("assign(seq_lens=) ~ seq_lens[:num_decodes]", assign["seq_lens"],
                 None if seq is None else np.asarray(seq)[:nd]),
                ("assign(num_kv_heads=) ~ task_map_num_kv_heads", assign["num_kv_heads"],
                 lib.get("task_map_num_kv_heads", MISSING)),
                ("assign(decode_query_len=) ~ decode_query_len", assign["decode_query_len"],
                 lib.get("decode_query_len", MISSING)),
                ("assign(new_kv_included=)", assign["new_kv_included"], True),
                ("assign(min_process_len=) ~ task_map_min_process_len",
                 assign["min_process_len"], lib.get("task_map_min_process_len", MISSING))]
    return out


NAMES = ("B12X", "HPC_ATTN", "CACHE_ONLY_ATTN", "ROCM_ATTN", "ROCM_OCTAVE",
         "ROCM_AITER_UNIFIED_ATTN", "ROCM_SEGMENTED_ATTN")


def attn_variant_items() -> List[Item]:
    return ([variant_item(n) for n in NAMES] + [variant_item("B12X", update=True)] +
            [variant_item(n, full=True) for n in NAMES])
