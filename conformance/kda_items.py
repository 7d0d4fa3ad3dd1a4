"""KIMI_K3_KDA: vLLM 0.33's KimiK3KDAMetadataBuilder (vllm/models/kimi_k3/nvidia/kda_metadata.py,
a real VllmConfig and MambaSpec) against libattn's KIMI_K3_KDA builder on the same batches,
every field of vLLM's KimiK3KDAMetadata.

Per batch (choices seeded by the batch, so a shrunk batch keeps them):
- the spec-decode inputs model runner V2 passes, as for GDN_ATTN (conformance/gdn_items.py):
  num_decode_draft_tokens_cpu = query length - 1 on decode rows, -1 elsewhere, and in one
  batch of eight none; num_accepted_tokens 1..query length;
- mamba_cache_mode "none", or "align" in one batch of three (model runner V1: vLLM gathers the
  columns itself; k extra table columns);
- FULL_AND_PIECEWISE CUDA graphs in half the builders, NONE in the others;
- RecoverSSM (cache_config.use_kda_recoverssm; libattn: config->use_replayssm) in half the
  builders with spec decode;
- kda_prefill_backend "flashinfer" (additional_config; libattn: config->gdn_prefill_backend
  FLASHINFER) in a third of the builders;
- model runner V2 in a quarter of the builders (VllmConfig.use_v2_model_runner answering it;
  libattn's config->use_v2_model_runner): in "align" mode vLLM then needs the aligned state
  indices MRV2 precomputes, which libattn does not take (both refuse), else the same;
- capture builds (GDN's build_for_cudagraph_capture) in one uniform decode batch of four.

Three things of vLLM's that cannot run on a CPU are replaced (conformance/patches.py): the
"align" gather and the CUDA-graph staging (Triton kernels asserting CUDA tensors) by the PyTorch
equivalents their source gives, and the RecoverSSM context lookup (a handle on a loaded model's
layers, compare=False). flashinfer_prefill_seq_order is torch.argsort(descending=True), which
does not order equal lengths stably (CPU and CUDA differ): compared as the permutation's lengths
(non-increasing, the same multiset) and as a permutation; libattn orders ties by request.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, List, Tuple

import numpy as np

from .batches import BLOCK_SIZES, LARGE_BLOCK_SIZES, VARIANT_KINDS, Batch
from .builder_items import (MAX_MODEL_LEN, MAX_SEQS, MAX_TOKENS, NUM_HEADS, _cache, _construct,
                            _constructed, _missing_safe)
from .compare import MISSING, Pair, builder_answer_pairs, flatten_vllm
from .gdn_items import (CAPTURE_SIZE, STATE_SHAPES, _kwargs, _nums_dict_pairs,
                        uniform_decode_capture)
from .item import Item, choice_rng
from .sides import lib_common, vllm_common
from .vllm_env import configured_max_capture_size

NAME = "KIMI_K3_KDA"
#: fields of vLLM's metadata (GDN's) the KDA build never sets: None in every batch
NONE_ONLY = {
    "spec_sequence_masks": "KDA's build passes None",
    "spec_sequence_masks_cpu": "GDN's field; KDA's build leaves it None",
    "uniform_spec_sequence_length": "GDN's field; KDA's build leaves it None",
    "chunk_indices": "Kimi-K3's prefill kernel prepares its own chunks",
    "chunk_offsets": "Kimi-K3's prefill kernel prepares its own chunks",
    "prefill_query_start_loc": "GDN's field; KDA's build leaves it None",
    "prefill_state_indices": "GDN's field; KDA's build leaves it None",
    "prefill_has_initial_state": "GDN's field; KDA's build leaves it None",
    "checkpoint": "prefill checkpoints need MambaSpec.num_prefill_checkpoint_blocks > 0 (0 here)",
    "flashinfer_checkpoint_plan": "GDN's field; KDA's build leaves it None",
    "aiter_prefill_metadata": "ROCm AITER's prefill metadata",
}
#: libattn's flattened names of vLLM's nested recoverssm_commit (and its align)
COMMIT_FIELDS = ("recoverssm_commit_state_indices", "recoverssm_commit_query_start_loc",
                 "recoverssm_commit_request_indices", "recoverssm_commit_align_block_table",
                 "recoverssm_commit_align_num_computed_tokens",
                 "recoverssm_commit_align_block_size")


def _settings(b: Batch) -> Tuple[str, bool, bool, bool, bool]:
    """(mamba_cache_mode, full CUDA graphs, RecoverSSM, FlashInfer prefill, model runner V2) of
    the builder."""
    r = choice_rng(b, 50)
    mode = "align" if r.random() < 1 / 3 else "none"
    full = bool(r.random() < 0.5)
    recover = bool(b.spec > 0 and r.random() < 0.5)
    flashinfer = bool(r.random() < 1 / 3)
    mrv2 = bool(r.random() < 0.25)
    return mode, full, recover, flashinfer, mrv2


def _batch(b: Batch) -> Batch:
    """In align mode k extra table columns (vLLM gathers start..start + k)."""
    if _settings(b)[0] != "align" or b.extra_cols >= b.spec:
        return b
    c = getattr(b, "_kda_align", None)
    if c is None:
        c = Batch(b.q, b.ctx, b.prompt, b.block_size, b.spec, b.kind, b.dcp, b.interleave,
                  b.chunk, b.spec)
        c.seed = getattr(b, "seed", (0, 0))
        b._kda_align = c
    return c


def _capture(b: Batch) -> bool:
    return uniform_decode_capture(b, 52)


def _key(b: Batch) -> Tuple[Any, ...]:
    return (NAME, b.block_size, b.spec, _settings(b))


@contextlib.contextmanager
def _patches(mrv2: bool):
    """The three replacements (conformance/patches.py), and the model runner the builder reads
    (VllmConfig.use_v2_model_runner, an environment-driven property) answering `mrv2`."""
    from unittest import mock
    from vllm.config import VllmConfig
    from vllm.models.kimi_k3.nvidia import kda_metadata as k
    from . import patches
    with mock.patch.object(k, "_mamba_get_block_table_tensor", patches.kda_aligned_state_indices), \
            mock.patch.object(k, "stage_spec_decode_metadata", patches.kda_stage_spec_decode), \
            mock.patch.object(k.KimiK3KDAMetadataBuilder, "_get_recoverssm_context",
                              patches.kda_recoverssm_context), \
            mock.patch.object(VllmConfig, "use_v2_model_runner", property(lambda self: mrv2)):
        yield


def vllm_builder(ctx: Any, b: Batch) -> Tuple[Any, Any]:
    key = ("vllm",) + _key(b)
    if not _cache(ctx, NAME, key):
        import torch
        from vllm.config import CUDAGraphMode, set_current_vllm_config
        from vllm.models.kimi_k3.nvidia.kda_metadata import KimiK3KDAMetadataBuilder
        from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
        from vllm.v1.kv_cache_interface import MambaSpec
        mode, full, recover, flashinfer, mrv2 = _settings(b)
        vc = ctx.configs.get(MAX_SEQS, MAX_TOKENS, b.spec, b.block_size,
                             ("kda",) + _settings(b), MAX_MODEL_LEN)
        vc.cache_config.mamba_cache_mode = mode
        vc.cache_config.use_kda_recoverssm = recover
        vc.additional_config = {"kda_prefill_backend": "flashinfer"} if flashinfer else {}
        vc.compilation_config.cudagraph_mode = (CUDAGraphMode.FULL_AND_PIECEWISE if full
                                                else CUDAGraphMode.NONE)
        if vc.compilation_config.max_cudagraph_capture_size is None:
            vc.compilation_config.max_cudagraph_capture_size = CAPTURE_SIZE
        from .vllm_env import engine_capture_sizes
        engine_capture_sizes(vc, b.spec, v2=mrv2)
        spec = MambaSpec(block_size=b.block_size, shapes=STATE_SHAPES,
                         dtypes=(torch.bfloat16, torch.float32),
                         mamba_type=MambaAttentionBackendEnum.GDN_ATTN, mamba_cache_mode=mode,
                         num_speculative_blocks=b.spec if mode == "align" else 0)
        def make() -> Any:
            with set_current_vllm_config(vc), _patches(mrv2):
                return KimiK3KDAMetadataBuilder(
                    spec, ["model.layers.0.self_attn"], vc, torch.device("cpu"))
        _construct(ctx, key, vc, make)
    return _constructed(ctx, key)


def lib_builder(ctx: Any, b: Batch, vc: Any) -> Any:
    key = ("lib",) + _key(b)
    if not _cache(ctx, NAME, key):
        libattn = ctx.libattn
        mode, full, recover, flashinfer, mrv2 = _settings(b)
        cc = vc.compilation_config
        cfg = libattn.BuilderConfig(
            MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, NUM_HEADS, num_speculative_tokens=b.spec,
            use_v2_model_runner=int(mrv2),
            cudagraph_mode=int(libattn.CudagraphMode[cc.cudagraph_mode.name]),
            max_cudagraph_capture_size=configured_max_capture_size(vc) or 0,
            use_replayssm=recover,
            gdn_prefill_backend=int(libattn.GdnPrefillBackend[
                "FLASHINFER" if flashinfer else "AUTO"]))
        spec = libattn.KvCacheSpec(
            b.block_size, 1, 1, kind=libattn.KvCacheKind.MAMBA,
            mamba_type=libattn.MambaType.GDN_ATTENTION,
            mamba_cache_mode=libattn.MambaCacheMode[mode.upper()],
            num_speculative_blocks=b.spec if mode == "align" else 0)
        ctx.builders[key] = ctx.lib.builder(NAME, spec, cfg)
    return ctx.builders[key]


def _vllm(ctx: Any, b: Batch) -> Any:
    from vllm.config import set_current_vllm_config
    b = _batch(b)
    vb, vc = vllm_builder(ctx, b)
    with set_current_vllm_config(vc), _patches(_settings(b)[4]):
        if _capture(b):
            return vb.build_for_cudagraph_capture(vllm_common(ctx, b))
        kw = {k: ctx.torch.from_numpy(v) for k, v in _kwargs(b).items()}
        return vb.build(0, vllm_common(ctx, b), **kw)


def _lib(ctx: Any, b: Batch) -> Any:
    b = _batch(b)
    _, vc = vllm_builder(ctx, b)
    lb = lib_builder(ctx, b, vc)
    if _capture(b):
        return lb.build_for_cudagraph_capture(lib_common(ctx, b))
    return lb.build(lib_common(ctx, b, **_kwargs(b)))


def _seq_order_pairs(v: Any, lib: Dict[str, Any]) -> List[Pair]:
    """flashinfer_prefill_seq_order: torch's unstable descending argsort, compared as the
    lengths it orders (the same non-increasing sequence) and as a permutation."""
    vo, lo = v.flashinfer_prefill_seq_order, lib.get("flashinfer_prefill_seq_order", MISSING)
    if vo is None or lo is None or lo is MISSING:
        return [("flashinfer_prefill_seq_order", vo, lo)]
    lens = np.diff(np.asarray(v.flashinfer_prefill_query_start_loc, np.int64))
    vo_np, lo_np = np.asarray(vo), np.asarray(lo)
    return [("flashinfer_prefill_seq_order (dtype, shape)", vo_np.dtype.name, lo_np.dtype.name),
            ("flashinfer_prefill_seq_order (lengths in order)", lens[vo_np.astype(np.int64)],
             lens[lo_np.astype(np.int64)] if lo_np.shape == vo_np.shape else lo_np),
            ("flashinfer_prefill_seq_order (a permutation)", np.sort(vo_np), np.sort(lo_np))]


def _pairs(ctx: Any, b: Batch, v: Any, md: Any) -> List[Pair]:
    from . import patches
    b = _batch(b)
    lib = {n: md[n] for n in md.fields()}
    pairs: List[Pair] = []
    seen = {"nums_dict_block_m", "nums_dict_nums", "nums_dict_tot", "nums_dict_mlist_len",
            "flashinfer_prefill_seq_order"}
    for name, value in flatten_vllm(v):
        flat = name.replace(".", "_")
        if name == "nums_dict":
            pairs += _nums_dict_pairs(value, lib)
        elif name == "flashinfer_prefill_seq_order":
            pairs += _seq_order_pairs(v, lib)
        elif name == "recoverssm_context":  # a handle on the layers, given with a commit
            pairs.append(("recoverssm_context (given with recoverssm_commit)",
                          value is patches.KDA_RECOVERSSM_CONTEXT,
                          lib.get("recoverssm_commit_state_indices") is not None))
        elif name in NONE_ONLY:
            pairs.append((f"{name} (libattn: none; {NONE_ONLY[name]})", value, None))
        elif flat in lib:
            seen.add(flat)
            pairs.append((name, value, lib[flat]))
        elif value is None and any(f.startswith(flat + "_") for f in lib):
            # a None nested dataclass: each of libattn's flattened fields of it is None
            for f in lib:
                if f.startswith(flat + "_"):
                    seen.add(f)
                    pairs.append((f"{name} is None ~ {f}", None, lib[f]))
        else:
            pairs.append((f"{name} (vLLM field libattn lacks)", value, MISSING))
    for name in lib:
        if name not in seen:
            pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    vb, vc = vllm_builder(ctx, b)
    pairs += builder_answer_pairs(vb, vc, lib_builder(ctx, b, vc), _patches(_settings(b)[4]))
    return _missing_safe(pairs)


def _path(ctx: Any, b: Batch, v: Any) -> str:
    mode, full, recover, flashinfer, mrv2 = _settings(b)
    if _capture(_batch(b)):
        kind = "capture"
    elif v.num_spec_decodes > 0:
        kind = "spec" if v.num_prefills == 0 and v.num_decodes == 0 else (
            "spec+prefill" if v.num_prefills else "spec+decode")
    else:
        kind = "decode" if v.num_prefills == 0 else (
            "prefill" if v.num_decodes == 0 else "decode+prefill")
    extra = "".join([", recoverssm" if recover else "", ", flashinfer" if flashinfer else "",
                     ", full graphs" if full else "", ", MRV2" if mrv2 else ""])
    return f"{kind}, {mode}{extra}"


def kda_items() -> List[Item]:
    return [Item(NAME, "builder", _vllm, _lib, _pairs, max_spec=3,
                 block_sizes=BLOCK_SIZES + LARGE_BLOCK_SIZES, path=_path, kinds=VARIANT_KINDS)]
