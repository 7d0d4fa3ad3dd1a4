"""The Mamba family's builders: vLLM 0.33's MAMBA2, MAMBA1, SHORT_CONV and LINEAR_ATTN builder
classes (a real VllmConfig and MambaSpec) against libattn's builder of the same name, on the
lane's random batches with vLLM 0.33's step inputs (is_prefilling, seq_lens_cpu_upper_bound)
and the spec-decode keyword arguments (num_accepted_tokens, num_decode_draft_tokens_cpu), in
the cache modes 0.33 keeps ("none", "align"), with and without full CUDA graphs (the persistent
decode buffers); every field of 0.33's metadata against libattn's, and the builder's class
answers. A second item per Mamba builder compares build_for_cudagraph_capture.

Per batch (choice_rng, so a shrunk batch keeps them): the cache mode, full CUDA graphs
(cudagraph_mode FULL_AND_PIECEWISE with max_cudagraph_capture_size 512) or none (vLLM's CPU
platform default), MAMBA2's chunk size, and with spec decode whether num_accepted_tokens and
the draft counts are given (padded prompt tails among the drafts). MambaSpec's
num_speculative_blocks is the batch's k; for "align" the batch's block table gets k extra
columns so that the gather stays inside it (vLLM's torch.gather would fail otherwise, as
libattn refuses).

nums_dict (vLLM's {8: {...}}) is compared entry by entry with libattn's flattened nums_dict_*
fields (mlist and offsetlist against batch_ptr / token_chunk_offset_ptr[:tot], which hold them);
replayssm_scratch (a tuple) against the three replayssm_scratch_* fields; checkpoint_meta (a
dataclass) field by field against checkpoint_meta_*. The lane's config has no ReplaySSM
(cache_config.use_replayssm False) and no prefill checkpoint blocks (MambaSpec's default 0):
libattn has no inputs for either (docs/backends/mamba.md), and 0.33's fields are None there.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

import numpy as np

from .batches import UTILITY_BLOCK_SIZES, Batch
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, LAYER, _cache,
                            _construct, _constructed, _leaf)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm, lib_field_name
from .item import Item, choice_rng
from .sides import lib_common, vllm_common

#: backend -> (vLLM module, backend class, MambaAttentionBackendEnum member, libattn MambaType)
MAMBA_BACKENDS = {
    "MAMBA2": ("vllm.v1.attention.backends.mamba2_attn", "Mamba2AttentionBackend", "MAMBA2",
               "MAMBA2"),
    "MAMBA1": ("vllm.v1.attention.backends.mamba1_attn", "Mamba1AttentionBackend", "MAMBA1",
               "MAMBA1"),
    "SHORT_CONV": ("vllm.v1.attention.backends.short_conv_attn", "ShortConvAttentionBackend",
                   "SHORT_CONV", "SHORT_CONV"),
    "LINEAR_ATTN": ("vllm.v1.attention.backends.linear_attn", "LinearAttentionBackend",
                    "LINEAR", "LINEAR_ATTENTION"),
}
#: subclass builders with items of their own (conformance/ple_items.py) that reuse this
#: module's builders and pairs: backend -> as MAMBA_BACKENDS
VARIANT_BACKENDS: Dict[str, Tuple[str, str, str, str]] = {}


def _classes(backend: str) -> Tuple[str, str, str, str]:
    return MAMBA_BACKENDS.get(backend) or VARIANT_BACKENDS[backend]


#: the builders whose build() takes vLLM's spec-decode keyword arguments
KWARG_BACKENDS = ("MAMBA2", "MAMBA1", "SHORT_CONV")
CHUNK_SIZES = (8, 16, 64, 256)
CAPTURE_SIZE = 512
#: the builder inputs vLLM's Mamba builders do not read from the batch (the lane's MambaSpec
#: shapes: conv state, SSM state, and for ReplaySSM x/dt/B caches; only shapes[4][0], the
#: B cache's groups, is read, and only with ReplaySSM)
SHAPES = ((4, 128), (8, 64, 16), (8, 16), (8, 16), (2, 16, 16))


def _settings(b: Batch) -> Tuple[str, bool, int]:
    """(cache mode, full CUDA graphs, MAMBA2 chunk size) of the batch."""
    r = choice_rng(b, 40)
    mode = "align" if r.random() < 0.5 else "none"
    full = bool(r.random() < 0.5)
    chunk = int(r.choice(CHUNK_SIZES))
    return mode, full, chunk


#: ReplaySSM variants: (backend, replayssm_buffer_len)
REPLAY_BUFFER_LENS = (4, 8, 16)


def _replay(backend: str, b: Batch) -> Any:
    """The batch's ReplaySSM (cache_config.use_replayssm with mamba_config.backend): None in
    half the batches, else ("triton" | "flashinfer", replayssm_buffer_len); the Mamba
    builders only (LINEAR_ATTN has none)."""
    if backend not in KWARG_BACKENDS:
        return None
    r = choice_rng(b, 42)
    u = r.random()
    if u < 0.5:
        return None
    return ("triton" if u < 0.75 else "flashinfer", int(r.choice(REPLAY_BUFFER_LENS)))


#: the builders with prefill checkpoints (MambaPrefillCheckpointBuilder)
CHECKPOINT_BACKENDS = ("MAMBA2", "PLE_SHORT_CONV_ATTN")


def _checkpoints(backend: str, b: Batch) -> Any:
    """MAMBA2's and PLE_SHORT_CONV_ATTN's prefill checkpoints in "align" mode, in 3 batches of
    4: (hash_block_size, cache_hit_alignment_tokens, prefill_checkpoint_alignment), with one
    checkpoint block in the spec; None otherwise."""
    if backend not in CHECKPOINT_BACKENDS or _settings(b)[0] != "align":
        return None
    r = choice_rng(b, 43)
    if r.random() < 0.25:
        return None
    h = int(r.choice([16, 32, 64]))
    return h, h * int(r.choice([1, 1, 2])), int(r.choice([8, 16, _settings(b)[2]]))


def _batch(b: Batch) -> Batch:
    """The batch both sides build: the lane's, with k extra block-table columns in "align"
    mode (the gather of 1 + num_speculative_blocks columns from the last token's block on).
    Cached on the batch, so that both sides (and the step inputs) see one object."""
    mb = getattr(b, "_mamba_batch", None)
    if mb is None and getattr(b, "_mamba_derived", False):
        mb = b
    if mb is None:
        mode = _settings(b)[0]
        mb = b
        if mode == "align" and b.spec > b.extra_cols:
            mb = Batch(b.q, b.ctx, b.prompt, b.block_size, b.spec, b.kind, b.dcp, b.interleave,
                       b.chunk, b.spec)
            mb.seed = getattr(b, "seed", (0, 0))
            mb._mamba_derived = True
        b._mamba_batch = mb
    return mb


def _kwargs(backend: str, b: Batch) -> Dict[str, Any]:
    """vLLM's build() keyword arguments for the batch (the same arrays go into libattn's
    CommonMetadata): with spec decode, num_accepted_tokens in 7 batches of 10 (1..query length
    per row) and num_decode_draft_tokens_cpu in half (query length - 1 on decodes, and on half
    the still-prefilling rows short enough to be padded prompt tails; -1 elsewhere)."""
    if backend not in KWARG_BACKENDS or not b.n:
        return {}
    r = choice_rng(b, 41)
    out: Dict[str, Any] = {}
    if _replay(backend, b) is not None:  # the ring origin of each row: 0..its context
        out["replayssm_decode_base_cpu"] = (r.random(b.n) * (b.ctx.astype(np.int64) + 1)).astype(
            np.int32)
    if not b.spec:
        return out
    q = b.q.astype(np.int64)
    if r.random() < 0.7:
        out["num_accepted_tokens"] = np.maximum(
            1, (r.random(b.n) * np.maximum(q, 1)).astype(np.int64) + 1).astype(np.int32)
        out["num_accepted_tokens"] = np.minimum(out["num_accepted_tokens"],
                                                np.maximum(q, 1)).astype(np.int32)
    if r.random() < 0.5:
        short = (q >= 1) & (q <= b.threshold)
        tail = short & b.is_prefilling & (r.random(b.n) < 0.5)
        drafts = np.where((short & ~b.is_prefilling) | tail, q - 1, -1)
        out["num_decode_draft_tokens_cpu"] = drafts.astype(np.int32)
    return out


def _vllm_spec(backend: str, b: Batch, mode: str) -> Any:
    import torch
    from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
    from vllm.v1.kv_cache_interface import MambaSpec
    ck = _checkpoints(backend, b)
    return MambaSpec(block_size=b.block_size, shapes=SHAPES,
                     dtypes=(torch.bfloat16,) * len(SHAPES),
                     mamba_type=MambaAttentionBackendEnum[_classes(backend)[2]],
                     mamba_cache_mode=mode, num_speculative_blocks=b.spec,
                     num_prefill_checkpoint_blocks=1 if ck else 0,
                     prefill_checkpoint_alignment=ck[2] if ck else None)


def _key(backend: str, b: Batch) -> Tuple[Any, ...]:
    mode, full, chunk = _settings(b)
    return ("mamba", backend, b.block_size, b.spec, mode, full,
            chunk if backend == "MAMBA2" else 0, _replay(backend, b), _checkpoints(backend, b))


def vllm_builder(ctx: Any, backend: str, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(backend, b)
    if not _cache(ctx, backend, key):
        import importlib
        import torch
        from vllm.config import CUDAGraphMode, set_current_vllm_config
        mode, full, chunk = _settings(b)
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, key, MAX_MODEL_LEN)
        vc.cache_config.mamba_cache_mode = mode
        if full:
            vc.compilation_config.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
            vc.compilation_config.max_cudagraph_capture_size = CAPTURE_SIZE
            from .vllm_env import engine_capture_sizes
            engine_capture_sizes(vc, b.spec, v2=False)
        elif backend in VARIANT_BACKENDS:
            # PLE's decode_cudagraph_max_tokens (max_num_seqs * (1 + k), capped by the capture
            # size) bounds its capture even without full graphs: the CPU platform's None
            # (uncapped) is what no CUDA engine resolves, and what libattn's 0 does not mean
            # (vLLM's default list's largest); both get the CUDA default, as gdn_items does
            vc.compilation_config.max_cudagraph_capture_size = CAPTURE_SIZE
        replay = _replay(backend, b)
        if replay is not None:
            from vllm.config.mamba import MambaBackendEnum
            vc.cache_config.use_replayssm = True
            vc.cache_config.replayssm_buffer_len = replay[1]
            vc.mamba_config.backend = MambaBackendEnum[replay[0].upper()]
        ck = _checkpoints(backend, b)
        if ck is not None:  # resolved by the engine after the KV cache exists
            vc.cache_config.hash_block_size, vc.cache_config.cache_hit_alignment_tokens = ck[:2]
        if backend == "MAMBA2":
            # the model's SSD chunk (model_config.get_mamba_chunk_size() reads the HF config's
            # mamba_chunk_size / chunk_size, which the lane's Llama-shaped model lacks)
            mc = copy.copy(vc.model_config)
            mc.get_mamba_chunk_size = lambda: chunk
            vc.model_config = mc
        mod, cls, _, _ = _classes(backend)
        builder_cls = getattr(importlib.import_module(mod), cls).get_builder_cls()
        def make() -> Any:
            with set_current_vllm_config(vc):
                return builder_cls(_vllm_spec(backend, b, mode), [LAYER], vc,
                                   torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, backend: str, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(backend, b)
    if not _cache(ctx, backend, key):
        libattn = ctx.libattn
        mode, full, chunk = _settings(b)
        cg = libattn.CudagraphMode[vc.compilation_config.cudagraph_mode.name]
        # vLLM's max_cudagraph_capture_size: 512 with full graphs, None (uncapped: max_num_seqs)
        # on the CPU platform otherwise
        from .vllm_env import configured_max_capture_size
        cap = configured_max_capture_size(vc) or MAX_SEQS
        replay, ck = _replay(backend, b), _checkpoints(backend, b)
        sc = vc.speculative_config
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS, num_speculative_tokens=b.spec,
            cudagraph_mode=int(cg), max_cudagraph_capture_size=int(cap),
            model_dtype=libattn.KvDtype.BFLOAT16,
            use_replayssm=int(replay is not None),
            replayssm_buffer_len=replay[1] if replay else 16,
            mamba_backend_flashinfer=int(bool(replay) and replay[0] == "flashinfer"),
            async_scheduling=int(bool(vc.scheduler_config.async_scheduling)),
            hash_block_size=ck[0] if ck else 0, cache_hit_alignment_tokens=ck[1] if ck else 0,
            num_hash_lookahead_tokens=int(vc.num_hash_lookahead_tokens),
            use_eagle_block_drop=int(sc is not None and b.spec > 0 and
                                     bool(sc.use_eagle_block_drop())))
        spec = libattn.KvCacheSpec(
            b.block_size, 1, 1, kind=libattn.KvCacheKind.MAMBA,
            mamba_type=libattn.MambaType[_classes(backend)[3]],
            mamba_chunk_size=chunk if backend == "MAMBA2" else 0,
            mamba_cache_mode=libattn.MambaCacheMode[mode.upper()],
            num_speculative_blocks=b.spec,
            num_prefill_checkpoint_blocks=1 if ck else 0,
            prefill_checkpoint_alignment=ck[2] if ck else 0,
            mamba_replayssm_ngroups=SHAPES[4][0], mamba_num_heads=SHAPES[2][0])
        ctx.builders[key] = ctx.lib.builder(backend, spec, cfg)
    return ctx.builders[key]


#: the common-metadata inputs among _kwargs (the others are build() keyword arguments)
COMMON_INPUTS = ("replayssm_decode_base_cpu",)


def _vllm_kwargs(ctx: Any, kw: Dict[str, Any]) -> Dict[str, Any]:
    return {k: ctx.torch.from_numpy(v) for k, v in kw.items() if k not in COMMON_INPUTS}


def _common_inputs(kw: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in kw.items() if k in COMMON_INPUTS}


def _nums_dict_pairs(v: Any, lib: Dict[str, Any], seen: set) -> List[Pair]:
    """vLLM's nums_dict ({8: {nums, tot, mlist, mlist_len, offsetlist, batch_ptr,
    token_chunk_offset_ptr}} or None) against libattn's nums_dict_* and program buffers."""
    names = ("nums_dict_block_m", "nums_dict_nums", "nums_dict_tot", "nums_dict_mlist_len")
    seen.update(names)
    nd = getattr(v, "nums_dict", None)
    if nd is None:
        return [(f"nums_dict (None) ~ {n}", None, lib.get(n, MISSING)) for n in names]
    pairs: List[Pair] = [("nums_dict keys ~ [nums_dict_block_m]", sorted(nd),
                          [lib.get("nums_dict_block_m", MISSING)])]
    e = nd.get(8, {})
    tot = int(e.get("tot", -1))
    pairs += [("nums_dict[8][nums]", e.get("nums"), lib.get("nums_dict_nums", MISSING)),
              ("nums_dict[8][tot]", e.get("tot"), lib.get("nums_dict_tot", MISSING)),
              ("nums_dict[8][mlist_len]", e.get("mlist_len"),
               lib.get("nums_dict_mlist_len", MISSING))]
    bp, off = lib.get("batch_ptr"), lib.get("token_chunk_offset_ptr")
    pairs += [("nums_dict[8][mlist] ~ batch_ptr[:tot]", e.get("mlist"),
               None if bp is None else np.asarray(bp)[:tot].astype(np.int64)),
              ("nums_dict[8][offsetlist] ~ token_chunk_offset_ptr[:tot]", e.get("offsetlist"),
               None if off is None else np.asarray(off)[:tot]),
              ("nums_dict[8][batch_ptr] ~ batch_ptr", e.get("batch_ptr"), bp),
              ("nums_dict[8][token_chunk_offset_ptr] ~ token_chunk_offset_ptr",
               e.get("token_chunk_offset_ptr"), off)]
    return pairs


SCRATCH_NAMES = ("replayssm_scratch_cb_scaled", "replayssm_scratch_cumAdt_vec",
                 "replayssm_scratch_cb_old")
#: ReplaySSM's scratch buffers, uninitialised in both (torch.empty; FlashInfer's
#: allocate_checkpointing_ssu_scratch): compared by shape and dtype only, as the lane does for
#: TRITON_ATTN's softmax scratch
SHAPE_ONLY = ("bc_pre_scratch",)  # the tuple's three: by (shape, dtype) pairs (_shape_dtype)


def mamba_pairs(ctx: Any, backend: str, b: Batch, v: Any, md: Any,
                none_only: Dict[str, str] = None) -> List[Pair]:
    """Every vLLM field against libattn's (missing and extra fields are mismatches), then the
    builder's class answers. `none_only`: vLLM fields libattn lacks that are None in every batch
    of the item (name -> why), compared with None."""
    lib = {n: md[n] for n in md.fields()}  # views, read before the next build
    pairs: List[Pair] = []
    seen: set = set()
    for name, value in flatten_vllm(v):
        if name == "nums_dict":
            pairs += _nums_dict_pairs(v, lib, seen)
            continue
        if name == "replayssm_scratch":
            seen.update(SCRATCH_NAMES)
            parts = (None,) * 3 if value is None else tuple(value)
            pairs += [(f"replayssm_scratch[{i}] ~ {n} (shape, dtype)", _shape_dtype(parts[i]),
                       _shape_dtype(lib.get(n, MISSING))) for i, n in enumerate(SCRATCH_NAMES)]
            continue
        if none_only and name in none_only:
            pairs.append((f"{name} (libattn: none; {none_only[name]})", _leaf(value), None))
            continue
        if name in ("checkpoint_meta", "checkpoint") and value is None:
            # the dataclass (MAMBA2's checkpoint_meta, PLE's checkpoint): its fields all None
            ck = [n for n in lib if n.startswith(name + "_") and n != "checkpoint_chunk_idx"]
            seen.update(ck)
            pairs += [(f"{name} (None) ~ {n}", None, lib[n]) for n in ck]
            if not ck:
                pairs.append((f"{name} (vLLM field libattn lacks)", None, MISSING))
            continue
        lname = lib_field_name(name, lib)
        seen.add(lname)
        if lname in lib:
            got = lib[lname]
            if isinstance(value, list) and got is not None:  # host lists (checkpoint_meta)
                got = [int(x) for x in np.asarray(got)]
            pairs.append((name, _leaf(value), got))
        else:
            pairs.append((f"{name} (vLLM field libattn lacks)", _leaf(value), MISSING))
    for name in lib:
        if name not in seen:
            pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    return _missing_safe(pairs) + _class_pairs(ctx, backend, b)


#: DLPack (code, bits) -> torch's dtype name
_DTYPE_NAMES = {(0, 8): "int8", (0, 32): "int32", (0, 64): "int64", (2, 16): "float16",
                (2, 32): "float32", (4, 16): "bfloat16", (6, 8): "bool", (1, 8): "uint8"}


def _shape_dtype(x: Any) -> Any:
    """A scratch buffer (uninitialised in both, compared by shape and dtype only) as (shape,
    dtype name): a torch tensor's, or a libattn field's (a TensorView where numpy has no such
    dtype, bfloat16)."""
    if x is None or x is MISSING:
        return x
    import torch
    if isinstance(x, torch.Tensor):
        return (tuple(x.shape), str(x.dtype).replace("torch.", ""))
    if isinstance(x, np.ndarray):
        return (tuple(x.shape), str(x.dtype))
    return (tuple(x.shape), _DTYPE_NAMES.get(tuple(x.dtype[:2]), str(x.dtype)))


def _missing_safe(pairs: List[Pair]) -> List[Pair]:
    from .builder_items import _missing_safe as safe
    return safe(pairs)


def _class_pairs(ctx: Any, backend: str, b: Batch) -> List[Pair]:
    """The builder's own answers (compare.builder_answer_pairs), vLLM's builder against
    libattn's."""
    vb, vc = vllm_builder(ctx, backend, b)
    return builder_answer_pairs(vb, vc, lib_builder(ctx, backend, b, vc))


def _path(backend: str, b: Batch, v: Any) -> str:
    mode, full, _ = _settings(b)
    nd, npf = getattr(v, "num_decodes", 0), getattr(v, "num_prefills", 0)
    split = "decodes only" if npf == 0 else ("prefills only" if nd == 0 else "mixed")
    replay = _replay(backend, b)
    extra = f", replayssm {replay[0]}" if replay else ""
    if getattr(v, "checkpoint_meta", None) is not None:
        extra += ", checkpoints"
    return f"{mode}, {'full graphs' if full else 'no graphs'}, {split}{extra}"


class NotUniform(Exception):
    """A capture batch whose non-zero query lengths differ: vLLM 0.33's
    build_for_cudagraph_capture checks only max_query_len == 1 + k, libattn also enforces the
    builder's UNIFORM_BATCH level (docs/conformance.md, the Mamba row; SPEC's capture rule), so
    the lane does not hand such a batch to vLLM's capture: counted as refused by both."""


def _uniform_or_refuse(b: Batch) -> None:
    q = b.q[b.q != 0]
    if len(q) and (q[:-1] != b.max_q).any():
        raise NotUniform(f"query lengths {sorted(set(q.tolist()))} are not uniform in {b.max_q}")


def mamba_item(backend: str, capture: bool = False) -> Item:
    def captured(ctx, mb) -> bool:
        """LINEAR_ATTN has no capture item (its builder is the base class's, the capture build
        a build): its own item captures where layer_variant_items.captures says (level
        UNIFORM_SINGLE_TOKEN_DECODE: vLLM's dummy decodes of one token, a third of the other
        single-token decode batches)."""
        if backend != "LINEAR_ATTN":
            return False
        from .layer_variant_items import captures
        return captures(*vllm_builder(ctx, backend, mb), mb)

    def v(ctx, b):
        from vllm.config import set_current_vllm_config
        mb = _batch(b)
        vb, vc = vllm_builder(ctx, backend, mb)
        kw = _kwargs(backend, mb)
        cm = vllm_common(ctx, mb, **_common_inputs(kw))
        with set_current_vllm_config(vc):
            if capture:
                _uniform_or_refuse(mb)
                return vb.build_for_cudagraph_capture(cm)
            if captured(ctx, mb):
                return vb.build_for_cudagraph_capture(cm)
            return vb.build(0, cm, **_vllm_kwargs(ctx, kw))

    def l(ctx, b):
        mb = _batch(b)
        _, vc = vllm_builder(ctx, backend, mb)
        lb = lib_builder(ctx, backend, mb, vc)
        kw = _kwargs(backend, mb)
        if capture:
            return lb.build_for_cudagraph_capture(lib_common(ctx, mb, **_common_inputs(kw)))
        if captured(ctx, mb):
            return lb.build_for_cudagraph_capture(lib_common(ctx, mb, **kw))
        return lb.build(lib_common(ctx, mb, **kw))

    name = f"{backend} (build_for_cudagraph_capture)" if capture else f"{backend}"
    kinds = ("decode", "spec", "padded", "edge", "dummy") if capture else \
        ("decode", "prefill", "mixed", "chunked", "spec", "padded", "edge", "dummy")
    return Item(name, "builder", v, l,
                lambda ctx, b, v, md: mamba_pairs(ctx, backend, _batch(b), v, md),
                shape_only=SHAPE_ONLY, max_spec=3, block_sizes=UTILITY_BLOCK_SIZES, kinds=kinds,
                path=lambda ctx, b, v: _path(backend, _batch(b), v))


class SpecDecodeUpdate(Exception):
    """update_block_table with spec decode: vLLM 0.33 sets supports_update_block_table False
    (the model runner never calls it) but the method still runs; libattn refuses the call
    (ATTN_ERR_UNSUPPORTED), so the lane does not make it: counted as refused by both."""


def _new_table(b: Batch) -> np.ndarray:
    """Another KV cache group's block table for the batch: every block id moved (3x + 1)."""
    return np.where(b.bt > 0, b.bt * 3 + 1, 0).astype(np.int32)


def update_item(backend: str) -> Item:
    """update_block_table after a build: vLLM's on its metadata, libattn's on its own, with the
    same new block table; every field of the result compared."""
    def v(ctx, b):
        from vllm.config import set_current_vllm_config
        mb = _batch(b)
        if mb.spec:
            raise SpecDecodeUpdate("spec decode: supports_update_block_table is False")
        vb, vc = vllm_builder(ctx, backend, mb)
        kw = _kwargs(backend, mb)
        cm = vllm_common(ctx, mb, **_common_inputs(kw))
        t = ctx.torch.from_numpy
        with set_current_vllm_config(vc):
            md = vb.build(0, cm, **_vllm_kwargs(ctx, kw))
            return vb.update_block_table(md, t(_new_table(mb)), t(mb.slots))

    def l(ctx, b):
        mb = _batch(b)
        _, vc = vllm_builder(ctx, backend, mb)
        lb = lib_builder(ctx, backend, mb, vc)
        md = lb.build(lib_common(ctx, mb, **_kwargs(backend, mb)))
        return lb.update_block_table(md, _new_table(mb), mb.slots)

    return Item(f"{backend} (update_block_table)", "builder", v, l,
                lambda ctx, b, v, md: mamba_pairs(ctx, backend, _batch(b), v, md),
                shape_only=SHAPE_ONLY, max_spec=3, block_sizes=UTILITY_BLOCK_SIZES,
                path=lambda ctx, b, v: _path(backend, _batch(b), v))


def mamba_items() -> List[Item]:
    items = [mamba_item(b) for b in MAMBA_BACKENDS]
    items += [mamba_item(b, capture=True) for b in KWARG_BACKENDS]
    items += [update_item(b) for b in KWARG_BACKENDS]
    return items
