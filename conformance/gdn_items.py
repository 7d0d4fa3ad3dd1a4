"""GDN_ATTN: vLLM 0.33's GDNAttentionMetadataBuilder (a real VllmConfig and MambaSpec) against
libattn's GDN_ATTN builder on the same batches, every field of vLLM's GDNAttentionMetadata.

Per batch (choices seeded by the batch, so a shrunk batch keeps them):
- the spec-decode inputs model runner V2 passes (v1/worker/gpu/model_states/mamba_hybrid.py):
  num_decode_draft_tokens_cpu = query length - 1 on decode rows (not prefilling, 1..1+k
  tokens), -1 elsewhere; num_accepted_tokens 1..query length per row; in one batch of eight
  with k > 0 no draft counts at all (vLLM's None);
- mamba_cache_mode "none", or "align" in one batch of three (num_speculative_blocks = k; the
  batch's table gets k extra columns);
- FULL_AND_PIECEWISE CUDA graphs (the persistent decode buffers) in half the builders, NONE in
  the others;
- the prefill backend: vLLM's CPU platform resolves Triton/FLA (chunk_indices/chunk_offsets);
  in a third of the builders _resolve_gdn_prefill_backend is patched to answer FlashInfer, as
  on compute capability 9.0 (no chunk metadata). libattn is told either way in half the
  builders each: by device_capability (90 for FlashInfer, 0 for Triton, AUTO) or by the ABI 1.6
  gdn_prefill_backend (FLASHINFER with no capability, TRITON with capability 90);
- capture builds (build_for_cudagraph_capture) in one uniform decode batch of four.

Compared beyond the dataclass fields: nums_dict (vLLM's {8: {...}}) by libattn's nums_dict_*
fields, its mlist / offsetlist by the first mlist_len entries of batch_ptr /
token_chunk_offset_ptr (libattn keeps no separate lists), and the builder's class answers.
- prefill checkpoints in "align" mode in 3 builders of 4 (MambaSpec.num_prefill_checkpoint_blocks
  = 1, hash_block_size / cache_hit_alignment_tokens / prefill_checkpoint_alignment drawn as for
  MAMBA2, alignments 64 and 128 included so that FlashInfer's checkpoint plan is built): the
  checkpoint dataclass field by field against libattn's checkpoint_* fields (host lists as
  lists), the flashinfer_checkpoint_plan against flashinfer_checkpoint_plan_*.
aiter_prefill_metadata is ROCm's: None in vLLM here and compared with None (libattn has no such
field).

KIMI_K3_KDA_ROCM: the same item over vLLM 0.33's KimiK3ROCmKDAMetadataBuilder
(models/kimi_k3/amd/kda_metadata.py, a GDN subclass) against libattn's KIMI_K3_KDA_ROCM, with
two more draws: adaptive verification (speculative_config.enable_adaptive_verification) in half
the builders with k > 0, given to both sides; and the prefill backend libattn is told (Triton or
FlashInfer, as above) while vLLM's builder runs unpatched: the CPU platform's Triton/FLA is what
vLLM's ROCm platform resolves for this builder whatever is asked (FlashInfer falls back to
Triton there, and AITER refuses a builder with its own chunk metadata), so libattn must ignore
FlashInfer. prepare_chunk_metadata_device's Triton kernel (_chunk_metadata_kernel) runs in
Triton's CPU interpreter on about one small batch in ``TRITON_EVERY``; on the others
``_ChunkMetadataNumpy`` stands in for the kernel only.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, List, Tuple

import numpy as np

from .batches import BLOCK_SIZES, LARGE_BLOCK_SIZES, VARIANT_KINDS, Batch, dummy_uniform_decode
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, _cache, _construct,
                            _constructed, _missing_safe)
from .compare import MISSING, Pair, flatten_vllm
from .item import Item, choice_rng
from .sides import lib_common, vllm_common
from .vllm_env import configured_max_capture_size

NAME = "GDN_ATTN"
ROCM_KDA = "KIMI_K3_KDA_ROCM"
ROCM_KDA_MODULE = "vllm.models.kimi_k3.amd.kda_metadata"
TRITON_EVERY = 40
#: the Mamba layer's state shapes (vLLM's MambaSpec needs some; the builder reads none)
STATE_SHAPES = ((4, 128), (16, 128, 128))
#: the largest CUDA graph capture size of the lane's configs (vLLM's default at 1024 sequences)
CAPTURE_SIZE = 512
#: fields of vLLM's metadata libattn does not have, None in every batch the lane makes
NONE_ONLY = {
    "aiter_prefill_metadata": "ROCm AITER's prefill metadata",
}
#: the dataclass fields vLLM leaves None as a whole (libattn: every field of the prefix None)
NESTED = ("checkpoint", "flashinfer_checkpoint_plan")


def _settings(b: Batch) -> Tuple[str, bool, str, bool]:
    """(mamba_cache_mode, full CUDA graphs, prefill backend, whether libattn is told the
    backend through config->gdn_prefill_backend rather than the compute capability) of the
    batch's builder."""
    r = choice_rng(b, 40)
    mode = "align" if r.random() < 1 / 3 else "none"
    full = bool(r.random() < 0.5)
    prefill = "flashinfer" if r.random() < 1 / 3 else "triton"
    return mode, full, prefill, bool(r.random() < 0.5)


def _adaptive(name: str, b: Batch) -> bool:
    """KIMI_K3_KDA_ROCM: adaptive verification in half the builders with k > 0."""
    return name == ROCM_KDA and b.spec > 0 and bool(choice_rng(b, 45).random() < 0.5)


def _triton_batch(b: Batch) -> bool:
    return (b.n <= 8 and b.tokens <= 2048 and
            int(choice_rng(b, 46).integers(0, TRITON_EVERY)) == 0)


class _ChunkMetadataNumpy:
    """_chunk_metadata_kernel restated: program i of N writes chunk_offsets[i] = the chunks
    (cdiv(len, BT)) of the sequences before i, chunk_offsets[N] = all chunks, and its chunks'
    rows (i, j) of chunk_indices from row chunk_offsets[i]."""

    def __getitem__(self, grid: Any) -> Any:
        return self.launch

    @staticmethod
    def launch(cu_seqlens: Any, chunk_indices: Any, chunk_offsets: Any, N: int, BT: int,
               **k: Any) -> None:
        cu = cu_seqlens.numpy().astype(np.int64)
        nt = -(-(cu[1:N + 1] - cu[:N]) // BT)
        off = np.concatenate([[0], np.cumsum(nt)])
        chunk_offsets.numpy()[:N + 1] = off
        ci = chunk_indices.numpy().reshape(-1, 2)
        for i in range(N):
            ci[off[i]:off[i + 1], 0] = i
            ci[off[i]:off[i + 1], 1] = np.arange(nt[i])


def _batch(b: Batch) -> Batch:
    """The batch as the item uses it: in align mode k extra table columns (vLLM gathers
    columns start..start + num_speculative_blocks)."""
    mode = _settings(b)[0]
    if mode != "align" or b.extra_cols >= b.spec:
        return b
    c = getattr(b, "_gdn_align", None)
    if c is None:
        c = Batch(b.q, b.ctx, b.prompt, b.block_size, b.spec, b.kind, b.dcp, b.interleave,
                  b.chunk, b.spec)
        c.seed = getattr(b, "seed", (0, 0))
        b._gdn_align = c
    return c


def _kwargs(b: Batch) -> Dict[str, Any]:
    """num_accepted_tokens and num_decode_draft_tokens_cpu as model runner V2 computes them."""
    if not b.spec:
        return {}
    r = choice_rng(b, 41)
    q = b.q.astype(np.int64)
    decode = ~b.is_prefilling & (q > 0) & (q <= b.threshold)
    drafts = np.where(decode, q - 1, -1).astype(np.int32)
    accepted = np.maximum(1, (r.random(b.n) * (q + 1)).astype(np.int64)).astype(np.int32)
    out: Dict[str, Any] = {"num_accepted_tokens": accepted}
    if r.random() >= 1 / 8:
        out["num_decode_draft_tokens_cpu"] = drafts
    return out


def uniform_decode_capture(b: Batch, salt: int) -> bool:
    """A capture build: one uniform decode batch (every query 1..1+k tokens, the same) of four
    (drawn with ``salt``, each item its own), and vLLM's runner's uniform decode dummy batch (its
    FULL-graph capture batch; its other dummy batches are warmup). GDN, KDA and Bailing."""
    if b.kind == "dummy":
        return dummy_uniform_decode(b)
    if b.n == 0 or b.kind not in ("decode", "spec"):
        return False
    return bool(np.all(b.q == b.q[0])) and choice_rng(b, salt).random() < 0.25


def _capture(b: Batch) -> bool:
    return uniform_decode_capture(b, 42)


def _checkpoints(b: Batch) -> Any:
    """Prefill checkpoints in "align" mode, in 3 builders of 4: (hash_block_size,
    cache_hit_alignment_tokens, prefill_checkpoint_alignment); None otherwise."""
    if _settings(b)[0] != "align":
        return None
    r = choice_rng(b, 44)
    if r.random() < 0.25:
        return None
    h = int(r.choice([16, 32, 64]))
    return h, h * int(r.choice([1, 1, 2])), int(r.choice([8, 16, 64, 128]))


def _key(name: str, b: Batch) -> Tuple[Any, ...]:
    return (name, b.block_size, b.spec, _settings(b), _checkpoints(b), _adaptive(name, b))


@contextlib.contextmanager
def _prefill_patch(prefill: str):
    """vLLM's _resolve_gdn_prefill_backend answering ("auto", prefill): the CPU platform's own
    answer is Triton; FlashInfer is what it answers on compute capability 9.0."""
    if prefill == "triton":
        yield
        return
    from unittest import mock
    from vllm.model_executor.layers.mamba.gdn import qwen_gdn_linear_attn as q
    with mock.patch.object(q, "_resolve_gdn_prefill_backend",
                           lambda vllm_config: ("auto", prefill)):
        yield


def _builder_cls(name: str) -> Any:
    if name == ROCM_KDA:
        import importlib
        return importlib.import_module(ROCM_KDA_MODULE).KimiK3ROCmKDAMetadataBuilder
    from vllm.v1.attention.backends.gdn_attn import GDNAttentionMetadataBuilder
    return GDNAttentionMetadataBuilder


@contextlib.contextmanager
def _chunk_patch(name: str, b: Batch):
    """KIMI_K3_KDA_ROCM off the Triton batches: _ChunkMetadataNumpy for the kernel."""
    if name != ROCM_KDA or _triton_batch(b):
        yield
        return
    import importlib
    from unittest import mock
    with mock.patch.object(importlib.import_module(ROCM_KDA_MODULE), "_chunk_metadata_kernel",
                           _ChunkMetadataNumpy()):
        yield


def vllm_builder(ctx: Any, b: Batch, name: str = NAME) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(name, b)
    if not _cache(ctx, name, key):
        import torch
        from vllm.config import CUDAGraphMode, set_current_vllm_config
        from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
        from vllm.v1.kv_cache_interface import MambaSpec
        mode, full, prefill, _ = _settings(b)
        if name == ROCM_KDA:
            prefill = "triton"  # vLLM's ROCm platform for this builder (the module's head)
        # one VllmConfig per builder (the whole key, checkpoint settings included): vLLM's
        # checkpoint builder reads cache_config.hash_block_size at build time, so builders that
        # shared a config saw the last one's settings
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size, key, MAX_MODEL_LEN)
        vc.cache_config.mamba_cache_mode = mode
        vc.compilation_config.cudagraph_mode = (CUDAGraphMode.FULL_AND_PIECEWISE if full
                                                else CUDAGraphMode.NONE)
        # the CPU platform leaves the capture sizes unresolved (None: no cap on
        # decode_cudagraph_max_bs); a CUDA engine resolves vLLM's default list, whose largest
        # entry at 1024 sequences is 512 (what libattn assumes for 0): given to both sides
        if vc.compilation_config.max_cudagraph_capture_size is None:
            vc.compilation_config.max_cudagraph_capture_size = CAPTURE_SIZE
        from .vllm_env import engine_capture_sizes
        engine_capture_sizes(vc, b.spec, v2=False)
        if vc.speculative_config is not None:
            vc.speculative_config.enable_adaptive_verification = _adaptive(name, b)
        ck = _checkpoints(b)
        if ck is not None:  # resolved by the engine after the KV cache exists
            vc.cache_config.hash_block_size, vc.cache_config.cache_hit_alignment_tokens = ck[:2]
        spec = MambaSpec(block_size=b.block_size, shapes=STATE_SHAPES,
                         dtypes=(torch.bfloat16, torch.float32),
                         mamba_type=MambaAttentionBackendEnum.GDN_ATTN, mamba_cache_mode=mode,
                         num_speculative_blocks=b.spec if mode == "align" else 0,
                         num_prefill_checkpoint_blocks=1 if ck else 0,
                         prefill_checkpoint_alignment=ck[2] if ck else None)
        def make() -> Any:
            with set_current_vllm_config(vc), _prefill_patch(prefill):
                return _builder_cls(name)(
                    spec, ["model.layers.0.linear_attn"], vc, torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, b: Batch, vc: Any, name: str = NAME) -> Any:
    key = ("lib",) + _key(name, b)
    if not _cache(ctx, name, key):
        libattn = ctx.libattn
        mode, full, prefill, explicit = _settings(b)
        cc = vc.compilation_config
        if explicit:  # the resolved kernel, on the other capability
            how = dict(gdn_prefill_backend=int(libattn.GdnPrefillBackend[prefill.upper()]),
                       device_capability=0 if prefill == "flashinfer" else 90)
        else:  # AUTO: from the capability
            how = dict(device_capability=90 if prefill == "flashinfer" else 0)
        ck = _checkpoints(b)
        sc = vc.speculative_config
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS, num_speculative_tokens=b.spec,
            cudagraph_mode=int(libattn.CudagraphMode[cc.cudagraph_mode.name]),
            max_cudagraph_capture_size=configured_max_capture_size(vc) or 0,
            hash_block_size=ck[0] if ck else 0, cache_hit_alignment_tokens=ck[1] if ck else 0,
            num_hash_lookahead_tokens=int(vc.num_hash_lookahead_tokens),
            enable_adaptive_verification=int(_adaptive(name, b)),
            use_eagle_block_drop=int(sc is not None and b.spec > 0 and
                                     bool(sc.use_eagle_block_drop())), **how)
        spec = libattn.KvCacheSpec(
            b.block_size, 1, 1, kind=libattn.KvCacheKind.MAMBA,
            mamba_type=libattn.MambaType.GDN_ATTENTION,
            mamba_cache_mode=libattn.MambaCacheMode[mode.upper()],
            num_speculative_blocks=b.spec if mode == "align" else 0,
            num_prefill_checkpoint_blocks=1 if ck else 0,
            prefill_checkpoint_alignment=ck[2] if ck else 0)
        ctx.builders[key] = ctx.lib.builder(name, spec, cfg)
    return ctx.builders[key]


def _vllm(ctx: Any, b: Batch, name: str = NAME) -> Any:
    from vllm.config import set_current_vllm_config
    b = _batch(b)
    vb, vc = vllm_builder(ctx, b, name)
    with set_current_vllm_config(vc), _chunk_patch(name, b):
        if _capture(b):
            return vb.build_for_cudagraph_capture(vllm_common(ctx, b))
        kw = {k: ctx.torch.from_numpy(v) for k, v in _kwargs(b).items()}
        return vb.build(0, vllm_common(ctx, b), **kw)


def _lib(ctx: Any, b: Batch, name: str = NAME) -> Any:
    b = _batch(b)
    _, vc = vllm_builder(ctx, b, name)
    lb = lib_builder(ctx, b, vc, name)
    if _capture(b):
        return lb.build_for_cudagraph_capture(lib_common(ctx, b))
    return lb.build(lib_common(ctx, b, **_kwargs(b)))


def _nums_dict_pairs(nd: Any, lib: Dict[str, Any]) -> List[Pair]:
    """vLLM's nums_dict {8: {nums, tot, mlist, mlist_len, offsetlist, batch_ptr,
    token_chunk_offset_ptr}} against libattn's nums_dict_* fields and program buffers."""
    names = ("nums_dict_block_m", "nums_dict_nums", "nums_dict_tot", "nums_dict_mlist_len")
    if nd is None:
        return [(f"nums_dict is None ~ {n}", None, lib.get(n, MISSING)) for n in names]
    (block_m, d), = nd.items()
    n = int(d["mlist_len"])
    bp, tp = lib.get("batch_ptr"), lib.get("token_chunk_offset_ptr")
    as64 = lambda x: None if x is None else np.asarray(x, np.int64)  # noqa: E731
    return [("nums_dict key ~ nums_dict_block_m", block_m, lib.get("nums_dict_block_m", MISSING)),
            ("nums_dict[8][nums]", d["nums"], lib.get("nums_dict_nums", MISSING)),
            ("nums_dict[8][tot]", d["tot"], lib.get("nums_dict_tot", MISSING)),
            ("nums_dict[8][mlist_len]", n, lib.get("nums_dict_mlist_len", MISSING)),
            ("nums_dict[8][mlist] ~ batch_ptr[:mlist_len]", as64(d["mlist"]),
             None if bp is None else as64(bp)[:n]),
            ("nums_dict[8][offsetlist] ~ token_chunk_offset_ptr[:mlist_len]",
             as64(d["offsetlist"]), None if tp is None else as64(tp)[:n]),
            ("nums_dict[8][batch_ptr]", d["batch_ptr"], bp),
            ("nums_dict[8][token_chunk_offset_ptr]", d["token_chunk_offset_ptr"], tp)]


def _pairs(ctx: Any, b: Batch, v: Any, md: Any, backend: str = NAME) -> List[Pair]:
    b = _batch(b)
    lib = {n: md[n] for n in md.fields()}
    pairs: List[Pair] = []
    seen = {"nums_dict_block_m", "nums_dict_nums", "nums_dict_tot", "nums_dict_mlist_len"}
    for name, value in flatten_vllm(v):
        if name == "nums_dict":
            pairs += _nums_dict_pairs(value, lib)
        elif name in NONE_ONLY:
            pairs.append((f"{name} (libattn: none; {NONE_ONLY[name]})", value, None))
        elif name in NESTED and value is None:  # the dataclass's fields are all None
            sub = [n for n in lib if n.startswith(name + "_")]
            seen.update(sub)
            pairs += [(f"{name} (None) ~ {n}", None, lib[n]) for n in sub]
            if not sub:
                pairs.append((f"{name} (vLLM field libattn lacks)", None, MISSING))
        elif name.replace(".", "_") in lib:
            lname = name.replace(".", "_")
            seen.add(lname)
            got = lib[lname]
            if isinstance(value, list) and got is not None:  # host lists (checkpoint)
                got = [int(x) for x in np.asarray(got)]
            pairs.append((name, value, got))
        else:
            pairs.append((f"{name} (vLLM field libattn lacks)", value, MISSING))
    for name in lib:
        if name not in seen:
            pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    vb, vc = vllm_builder(ctx, b, backend)
    lb = lib_builder(ctx, b, vc, backend)
    cls = type(vb)
    from vllm.config import set_current_vllm_config
    with set_current_vllm_config(vc):
        level = cls.get_cudagraph_support(vc, vb.kv_cache_spec).name
        varlen = cls.get_varlen_cudagraph_max_query_len(vc, vb.kv_cache_spec)
    pairs += [("builder: get_cudagraph_support", level, lb.cudagraph_support.name),
              ("builder: get_varlen_cudagraph_max_query_len", varlen,
               lb.varlen_cudagraph_max_query_len),
              ("builder: reorder_batch_threshold", vb.reorder_batch_threshold,
               lb.reorder_batch_threshold),
              ("builder: supports_update_block_table", bool(vb.supports_update_block_table),
               bool(lb.supports_update_block_table)),
              ("builder: supports_draft_decode_metadata_update",
               bool(vb.supports_draft_decode_metadata_update),
               bool(lb.supports_draft_decode_metadata_update))]
    return _missing_safe(pairs)


def _path(ctx: Any, b: Batch, v: Any, name: str = NAME) -> str:
    mode, full, prefill, explicit = _settings(b)
    if _capture(_batch(b)):
        kind = "capture"
    elif v.spec_sequence_masks is not None:
        kind = "spec" if v.num_prefills == 0 else "spec+prefill"
    else:
        kind = "decode" if v.num_prefills == 0 else (
            "prefill" if v.num_decodes == 0 else "decode+prefill")
    how = " (config)" if explicit else ""
    ck = ""
    if getattr(v, "checkpoint", None) is not None:
        ck = ", checkpoints" + (" + FlashInfer plan" if v.flashinfer_checkpoint_plan is not None
                                else "")
    extra = ""
    if name == ROCM_KDA:
        extra = (", adaptive" if _adaptive(name, b) else "") + (
            ", triton" if _triton_batch(_batch(b)) else "")
    return f"{kind}, {mode}, {prefill}{how}{', full graphs' if full else ''}{ck}{extra}"


def gdn_items() -> List[Item]:
    """GDN_ATTN and KIMI_K3_KDA_ROCM (the same item over the subclass)."""
    out = []
    for name in (NAME, ROCM_KDA):
        bind = lambda f, n=name: (lambda *a: f(*a, n))  # noqa: E731
        out.append(Item(name, "builder", bind(_vllm), bind(_lib), bind(_pairs), max_spec=3,
                        block_sizes=BLOCK_SIZES + LARGE_BLOCK_SIZES, path=bind(_path),
                        kinds=VARIANT_KINDS))
    return out
