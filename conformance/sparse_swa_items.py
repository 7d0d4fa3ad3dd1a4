"""DeepSeek V4's sliding-window cache: vLLM 0.33's DeepseekSparseSWAMetadataBuilder
(DEEPSEEK_SPARSE_SWA, vllm/v1/attention/backends/mla/sparse_swa.py) against libattn's builder
of the same name, on the lane's random batches: every field of vLLM's DeepseekSparseSWAMetadata
(tile_sched_* and flashinfer_sparse_index_cache excepted: below) and the builder's answers.

vLLM's side is the indexer item's VllmConfig (the DeepSeek-V3.2-shaped model of sparse_mla_items,
no DCP) whose
``hf_config.sliding_window`` is set to the profile's window while the builder is made (text-only:
no vision layers, no compress ratios, so the SWA-only layer type) and a real SlidingWindowMLASpec
(head 512, bf16); libattn takes an ATTN_KV_SLIDING_WINDOW spec with that window, or on one
profile in three with window 128 an ATTN_KV_MLA spec without one (0 = DeepSeek V4's 128).
Speculative tokens k <= 3 (the split at 1 + k); on one batch in four some slots are -1 (the
invalid-token rows, ``invalid_slots``); on one decode-only batch in three both sides'
``update_draft_decode_metadata`` run after the decodes' seq_lens and slots changed in place
(``advance``) and the updated metadata is compared. On one batch in two build() gets
``replay_start`` (V4.1's SWA bounded replay; libattn's ``common->replay_start``, ABI 1.7):
``replay_starts`` draws a start in [0, prefix] per prefill and, on one of those batches in
four, in [0, prefix - 1] per decode too (vLLM's model state passes 0 there; the builders read
whatever they are given). DSpark: in about three builders in five with speculative tokens, vLLM's
speculative config says ``dspark`` (``use_dspark()``; libattn ``speculative_dspark``) and half of
their batches are non-causal (``causal=False``: the draft block's rows, and V4.1 FlashInfer's
``flashinfer_decode_*``). Capture builds (issue 34): vLLM's runner's dummy batches
(batches.dummy_batch) are among the kinds, and build_for_cudagraph_capture (vLLM's base class's:
build without ``replay_start``) runs on both sides where layer_variant_items.captures says (the
level vLLM's class answers under the item's platform stand-ins: every dummy batch it allows, a
third of the others).

What a CPU cannot run is replaced around the build only (``patched``): ``current_platform`` (a
proxy answering is_cuda() True and capability 9.0) and FlashMLA's ``get_mla_metadata`` (the
kernel library's scheduler object: a marker; libattn does not return tile_sched_*). The two
Triton kernels of the build (ComputeSWAIndicesAndLensKernel, ComputePrefillMetadataKernel) and
``compute_token_to_req_indices`` run in Triton's CPU interpreter on about one small batch in
``TRITON_EVERY``; on the others a numpy restatement of each (``_swa_rows_numpy``,
``_gather_lens_numpy``, ``_dspark_rows_numpy``, sparse_mla_items' ``token_to_req_numpy`` as the
documented ``_token_to_req_indices_cache``) stands in.

ROCm members (DEEPSEEK_SPARSE_SWA_ROCM_AITER, DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER: vLLM's
models/deepseek_v4/amd/rocm.py and models/deepseek_v41/amd/rocm.py builders, libattn's with
config.platform_rocm=1): current_platform answers is_rocm() (rocm_ragged.RocmPlatform: no
tile-scheduler objects), the modules are imported under the gfx942 answer, the ragged rows are
compared as rocm_ragged says, get_cudagraph_support under adaptive verification too, and no
draft decode update runs (both refuse it: supports_draft_decode_metadata_update False).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import types
from typing import Any, List

import numpy as np

from .batches import Batch
from .compare import MISSING, Pair, builder_answer_pairs
from .item import Item, choice_rng
from .layer_variant_items import VARIANT_KINDS, captures
from .mla_items import LAYER, _ABSENT, zlib_crc
from .sides import lib_common, vllm_common
from .sparse_indexer_items import Settings, _vllm_config
from .rocm_ragged import (RAGGED_NAMES, RocmPlatform, adaptive_level_pair, import_rocm,
                          ragged_kernels, ragged_pairs)
from .sparse_mla_items import _Platform, token_to_req_numpy

NAME = "DEEPSEEK_SPARSE_SWA"
MODULE = "vllm.v1.attention.backends.mla.sparse_swa"
# The family (src/backends/sparse_swa.cc): libattn's name -> vLLM 0.33's builder class (module,
# class), whose backend's get_name() is DEEPSEEK_SPARSE_SWA for all, and whether it plans
# FlashMLA's tile scheduler. Not a member: the V4 CPU builder (its build raises KeyError('c1a')
# in 0.33 on every batch; sparse_mla.md).
MEMBERS = {
    NAME: (MODULE, "DeepseekSparseSWAMetadataBuilder", True),
    "DEEPSEEK_SPARSE_SWA_FLASHMLA": ("vllm.models.deepseek_v4.nvidia.flashmla",
                                     "DeepseekSparseSWAFlashMLAMetadataBuilder", True),
    "DEEPSEEK_SPARSE_SWA_FLASHINFER": ("vllm.models.deepseek_v4.nvidia.flashinfer_sparse",
                                       "DeepseekSparseSWAFlashInferMetadataBuilder", True),
    "DEEPSEEK_V41_SPARSE_SWA": ("vllm.models.deepseek_v41.sparse_mla",
                                "DeepseekV41SparseSWAMetadataBuilder", True),
    "DEEPSEEK_V41_SPARSE_SWA_FLASHMLA": ("vllm.models.deepseek_v41.nvidia.flashmla",
                                         "DeepseekSparseSWAFlashMLAMetadataBuilder", True),
    "DEEPSEEK_V41_SPARSE_SWA_FLASHINFER": ("vllm.models.deepseek_v41.nvidia.flashinfer_sparse",
                                           "DeepseekSparseSWAFlashInferMetadataBuilder", True),
    "DEEPSEEK_SPARSE_SWA_ROCM_AITER": ("vllm.models.deepseek_v4.amd.rocm",
                                       "DeepseekV4ROCMAiterSparseSWAMetadataBuilder", False),
    "DEEPSEEK_V41_SPARSE_SWA_ROCM_AITER": ("vllm.models.deepseek_v41.amd.rocm",
                                           "DeepseekV41ROCMAiterSparseSWAMetadataBuilder", False),
}


def is_rocm(name: str) -> bool:
    return name.endswith("_ROCM_AITER")


TOKEN_BUDGET = 8192
TRITON_EVERY = 40
#: builder pairs kept per member, least recently used dropped (of up to 128 profiles a member,
#: DSpark's included; both sides' persistent buffers are sized for the VllmConfig's 131,072
#: tokens: up to ~400 MB a pair)
CACHED_BUILDERS = 16
WINDOWS = (4, 64, 128, 128)
LEFT_OUT = {
    "tile_sched_": "FlashMLA's scheduler objects (get_mla_metadata, filled by the kernel library "
                   "on the device): not returned by libattn",
    "flashinfer_sparse_index_cache": "an empty dict vLLM's layers fill: not returned",
}
_SCHED = "FlashMLASchedMeta"


def settings(b: Batch, name: str = NAME) -> Any:
    r = np.random.default_rng([zlib_crc(name), int(choice_rng(b, 50).integers(0, 1 << 30))])
    window = int(r.choice(WINDOWS))
    mla_kind = window == 128 and r.random() < 0.5
    dspark = b.spec > 0 and r.random() < 0.6
    return types.SimpleNamespace(window=window, mla_kind=mla_kind, spec=b.spec,
                                 block_size=b.block_size, dspark=dspark)


def noncausal(b: Batch, s: Any) -> bool:
    """Whether ``b`` is a DSpark draft block (causal=False): half the batches of a DSpark
    builder."""
    return bool(s.dspark) and int(choice_rng(b, 58).integers(0, 2)) == 0


def invalid_slots(b: Batch, salt: int = 52) -> None:
    """On one batch in four, about one slot in eight set to -1 (PAD_SLOT_ID: the invalid-token
    rows), the same on both sides: idempotent, applied before each side builds (the batch is
    this item's own). ``salt`` (and salt + 1) pick the batch's choices; each module its own."""
    if b.tokens and int(choice_rng(b, salt).integers(0, 4)) == 0:
        pick = choice_rng(b, salt + 1).random(b.tokens) < 0.125
        b.slots[pick] = -1


def draft_update(b: Batch, vmd: Any) -> bool:
    """update_draft_decode_metadata after the build, on one decode-only batch in three."""
    return (vmd.num_prefills == 0 and vmd.num_decode_tokens > 0 and
            int(choice_rng(b, 54).integers(0, 3)) == 0)


def advance(b: Batch, vmd: Any) -> None:
    """What the update reads changed in place under both sides' views: the decodes' seq_lens
    one shorter (where they hold context) and about one decode slot in five -1."""
    nd, ndt = int(vmd.num_decodes), int(vmd.num_decode_tokens)
    q = np.diff(b.qsl[:nd + 1])
    b.seq[:nd] = np.where(b.seq[:nd] - q >= 1, b.seq[:nd] - 1, b.seq[:nd])
    pick = choice_rng(b, 55).random(ndt) < 0.2
    b.slots[:ndt][pick] = -1


def replay_starts(b: Batch) -> Any:
    """build()'s ``replay_start`` for ``b`` (module doc), an int32 array, or None (vLLM's None:
    the builders' zeros) on one batch in two."""
    if int(choice_rng(b, 56).integers(0, 2)) == 0:
        return None
    r = choice_rng(b, 57)
    q = np.diff(b.qsl_cpu[:b.n + 1]).astype(np.int64)
    prefix = b.seq_cpu[:b.n].astype(np.int64) - q
    starts = (r.random(b.n) * (prefix + 1)).astype(np.int64)  # [0, prefix]
    decode = q <= 1 + b.spec
    if int(r.integers(0, 4)) == 0:  # decodes too, below their prefix (draft updates shorten it)
        starts[decode] = (r.random(int(decode.sum())) * np.maximum(prefix[decode], 1)).astype(
            np.int64)
    else:
        starts[decode] = 0
    return np.minimum(starts, np.maximum(prefix, 0)).astype(np.int32)


def triton_batch(b: Batch, salt: int = 51) -> bool:
    """Whether vLLM's own Triton kernels run (in Triton's interpreter) on this small batch: one
    in TRITON_EVERY; the others take the numpy restatements."""
    return (b.n <= 8 and b.tokens <= 2048 and
            int(choice_rng(b, salt).integers(0, TRITON_EVERY)) == 0)


def vllm_build(ctx: Any, b: Batch, vb: Any, vc: Any, patch: Any, salts: tuple = (52, 51),
               replay: Any = None, causal: bool = True, capture: bool = False) -> Any:
    """vLLM's build of ``b`` by ``vb`` under ``patch(real_triton)`` (the module's stand-ins),
    with the invalid slots applied and, off the Triton batches, the token-to-request map given
    as the numpy one; ``replay``: build()'s ``replay_start`` (None: not passed); ``causal``:
    the common metadata's; ``capture``: build_for_cudagraph_capture instead (it passes no
    ``replay_start``)."""
    from vllm.config import set_current_vllm_config
    invalid_slots(b, salts[0])
    cm = vllm_common(ctx, b) if causal else vllm_common(ctx, b, causal=False)
    real = triton_batch(b, salts[1])
    if not real:
        cm._token_to_req_indices_cache = token_to_req_numpy(b)
    kwargs = {}
    if replay is not None:
        import torch
        kwargs["replay_start"] = torch.from_numpy(replay.copy())
    with set_current_vllm_config(vc), patch(real):
        if capture:
            assert replay is None, "build_for_cudagraph_capture takes no replay_start"
            return vb.build_for_cudagraph_capture(cm)
        return vb.build(0, cm, **kwargs)


def finish_pairs(out: List[Pair], vb: Any, vc: Any, lb: Any, patch: Any) -> List[Pair]:
    """``out`` plus the builders' class answers, a field one side lacks shown as "absent"."""
    out = out + builder_answer_pairs(vb, vc, lb, patch(False))
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in out]


# ---- stand-ins ---------------------------------------------------------------------------

def _rows_numpy(swa_indices: Any, swa_lens: Any, index_width: int, query_start_loc: Any,
                seq_lens: Any, token_to_req_indices: Any, is_valid_token: Any, block_table: Any,
                block_size: int, num_tokens: int, token_offset: int, window: Any) -> None:
    """The two row kernels' shared part: row i is token t = token_offset + i of r =
    token_to_req[t]; invalid: len 0, a row of -1; else ``window(r, t, qsl, seq)`` = [start,
    end) as paged slots, -1 past its length."""
    qsl = query_start_loc.numpy().astype(np.int64)
    seq = seq_lens.numpy().astype(np.int64)
    t2r = token_to_req_indices.numpy().astype(np.int64)
    valid = is_valid_token.numpy()
    bt = block_table.numpy().astype(np.int64)
    rows = swa_indices.numpy().reshape(swa_indices.shape[0], -1)
    lens = swa_lens.numpy()
    j = np.arange(index_width)
    for i in range(num_tokens):
        t = token_offset + i
        if not valid[t]:
            lens[i] = 0
            rows[i, :index_width] = -1
            continue
        r = t2r[t]
        start, end = window(r, t, qsl, seq)
        n = end - start
        lens[i] = n
        p = start + j
        inside = j < n
        slots = np.full(index_width, -1, dtype=np.int64)
        slots[inside] = bt[r, p[inside] // block_size] * block_size + p[inside] % block_size
        rows[i, :index_width] = slots


def _swa_rows_numpy(swa_indices: Any, swa_lens: Any, window_size: int, index_width: int,
                    left_visible: Any, right_visible: Any, query_start_loc: Any, seq_lens: Any,
                    token_to_req_indices: Any, is_valid_token: Any, block_table: Any,
                    block_size: int, replay_start: Any, *, num_tokens: int, token_offset: int,
                    has_image: bool = False) -> None:
    """_compute_swa_indices_and_lens_kernel restated (causal, no image spans): pos = seq - q +
    t - qsl[r], the window [max(pos - w + 1, 0, replay[r]), pos + 1)."""
    assert not has_image
    rep = replay_start.numpy().astype(np.int64)

    def window(r: int, t: int, qsl: Any, seq: Any) -> Any:
        pos = seq[r] - (qsl[r + 1] - qsl[r]) + t - qsl[r]
        return max(pos - (window_size - 1), 0, rep[r]), pos + 1

    _rows_numpy(swa_indices, swa_lens, index_width, query_start_loc, seq_lens,
                token_to_req_indices, is_valid_token, block_table, block_size, num_tokens,
                token_offset, window)


def _gather_lens_numpy(prefill_gather_lens: Any, seq_lens: Any, query_start_loc: Any,
                       replay_start: Any, num_prefills: int, num_decodes: int,
                       window_size: int) -> None:
    """ComputePrefillMetadataKernel restated: q + min(max(prefix - replay, 0), w - 1)."""
    qsl = query_start_loc.numpy().astype(np.int64)
    seq = seq_lens.numpy().astype(np.int64)
    rep = replay_start.numpy().astype(np.int64)
    r = np.arange(num_decodes, num_decodes + num_prefills)
    q = qsl[r + 1] - qsl[r]
    vis = np.maximum(seq[r] - q - rep[r], 0)
    prefill_gather_lens.numpy()[:num_prefills] = q + np.minimum(vis, window_size - 1)


def _dspark_rows_numpy(swa_indices: Any, swa_lens: Any, window_size: int, index_width: int,
                      query_start_loc: Any, seq_lens: Any, token_to_req_indices: Any,
                      is_valid_token: Any, block_table: Any, block_size: int, *,
                      num_tokens: int, token_offset: int) -> None:
    """ComputeDSparkNoncausalSWAIndicesKernel restated: every valid token of request r gets
    [max(prefix - w, 0), seq_len) (prefix = seq_len - q)."""

    def window(r: int, t: int, qsl: Any, seq: Any) -> Any:
        return max(seq[r] - (qsl[r + 1] - qsl[r]) - window_size, 0), seq[r]

    _rows_numpy(swa_indices, swa_lens, index_width, query_start_loc, seq_lens,
                token_to_req_indices, is_valid_token, block_table, block_size, num_tokens,
                token_offset, window)


def _token_to_req_indices_numpy(query_start_loc: Any, out: Any, num_mapped_tokens: int,
                                num_tokens: int) -> Any:
    """compute_token_to_req_indices restated: t < num_mapped_tokens maps to the first r with
    qsl[r + 1] > t (at most n - 1), the rest of the first num_tokens to 0."""
    qsl = query_start_loc.numpy().astype(np.int64)
    n = qsl.shape[0] - 1
    o = out.numpy()
    o[:num_tokens] = 0
    m = min(num_mapped_tokens, num_tokens)
    if n > 0 and m > 0:
        o[:m] = np.minimum(np.searchsorted(qsl[1:n + 1], np.arange(m), side="right"), n - 1)
    return out[:num_tokens]


def patched(real_triton: bool, rocm: bool = False) -> Any:
    """The build's replacements (module doc), undone on exit."""
    from unittest import mock
    mod = importlib.import_module(MODULE)
    real = mod.current_platform
    real = real._real if isinstance(real, (_Platform, RocmPlatform)) else real
    stack = contextlib.ExitStack()
    if rocm:
        stack.enter_context(ragged_kernels(real_triton))
    swaps = {"current_platform": RocmPlatform(real) if rocm else _Platform(real),
             "get_mla_metadata": lambda *a, **k: (_SCHED, None)}
    if not real_triton:
        swaps["_COMPUTE_SWA_INDICES_AND_LENS_KERNEL"] = _swa_rows_numpy
        swaps["_COMPUTE_PREFILL_METADATA_KERNEL"] = _gather_lens_numpy
        swaps["_COMPUTE_DSPARK_NONCAUSAL_SWA_INDICES_KERNEL"] = _dspark_rows_numpy
        swaps["compute_token_to_req_indices"] = _token_to_req_indices_numpy
    for name, value in swaps.items():
        stack.enter_context(mock.patch.object(mod, name, value))
    return stack


# ---- the two sides -------------------------------------------------------------------------

def builders(ctx: Any, s: Any, name: str = NAME) -> Any:
    cache = ctx.__dict__.setdefault("sparse_swa_builders", {})
    key = (name, s.window, s.mla_kind, s.spec, s.block_size, s.dspark)
    if key in cache:
        cache[key] = cache.pop(key)  # most recently used last
        return cache[key]
    for k in [k for k in cache if k[0] != name]:  # one member's builders at a time (memory)
        del cache[k]
    while len(cache) >= CACHED_BUILDERS:  # the least recently used first
        del cache[next(iter(cache))]
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import SlidingWindowMLASpec
    vc = _vllm_config(ctx, Settings(s.spec, 1, 0, 1, 0, 90))  # the indexer's: no DCP
    spec = SlidingWindowMLASpec(block_size=s.block_size, num_kv_heads=1, head_size=512,
                                dtype=torch.bfloat16, sliding_window=s.window)
    hf = vc.model_config.hf_config
    old = getattr(hf, "sliding_window", _ABSENT)
    hf.sliding_window = s.window
    spec_config = vc.speculative_config
    if s.dspark:  # speculative_config.method "dspark", read by the builder's __init__
        object.__setattr__(vc, "speculative_config", types.SimpleNamespace(
            **{**vars(spec_config), "method": "dspark", "use_dspark": lambda: True}))
    try:
        module, cls_name, _ = MEMBERS[name]
        cls = getattr(import_rocm(module) if is_rocm(name) else importlib.import_module(module),
                      cls_name)
        with set_current_vllm_config(vc), patched(False, is_rocm(name)):
            vb = cls(spec, [LAYER], vc, torch.device("cpu"))
    finally:
        object.__setattr__(vc, "speculative_config", spec_config)
        if old is _ABSENT:
            delattr(hf, "sliding_window")
        else:
            hf.sliding_window = old
    libattn = ctx.libattn
    sc = vc.scheduler_config  # VllmConfig raises max_num_batched_tokens to max_model_len
    cfg = libattn.BuilderConfig(sc.max_num_seqs, sc.max_num_batched_tokens,
                                vc.model_config.max_model_len, 16,
                                num_speculative_tokens=s.spec, device_capability=90,
                                speculative_dspark=int(s.dspark),
                                platform_rocm=int(is_rocm(name)))
    kind = libattn.KvCacheKind.MLA if s.mla_kind else libattn.KvCacheKind.SLIDING_WINDOW
    lspec = libattn.KvCacheSpec(s.block_size, 1, 512, kind=kind,
                                sliding_window=0 if s.mla_kind else s.window)
    cache[key] = (vb, vc, ctx.lib.builder(name, lspec, cfg))
    return cache[key]


# ---- the comparison ------------------------------------------------------------------------

def swa_pairs(vmd: Any, lmd: Any, vb: Any, vc: Any, lb: Any, sched: bool = True,
              patch: Any = patched) -> List[Pair]:
    import dataclasses
    lib = {n: lmd[n] for n in lmd.fields()}
    out: List[Pair] = []
    for f in dataclasses.fields(vmd):
        val = getattr(vmd, f.name)
        if f.name.startswith("tile_sched_"):
            # present (the marker) for the SWA-only type with decode tokens, else None
            want = (_SCHED if (sched and f.name == "tile_sched_swaonly" and vmd.num_decode_tokens)
                    else None)
            out.append((f"{f.name} (FlashMLA's; not returned: vLLM's presence)", val, want))
            out.append((f"{f.name} (libattn leaves out)", MISSING, lib.pop(f.name, MISSING)))
            continue
        if f.name == "flashinfer_sparse_index_cache":
            out.append((f"{f.name} (an empty dict; not returned)", len(val), 0))
            out.append((f"{f.name} (libattn leaves out)", MISSING, lib.pop(f.name, MISSING)))
            continue
        if f.name in RAGGED_NAMES:
            continue
        out.append((f.name, val, lib.pop(f.name, MISSING)))
    out += ragged_pairs(vmd, lib)
    out += [(f"{n} (libattn field vLLM 0.33 lacks)", MISSING, x) for n, x in lib.items()]
    return finish_pairs(out, vb, vc, lb, patch)


def sparse_swa_item(name: str = NAME) -> Item:
    rocm = is_rocm(name)
    patch = functools.partial(patched, rocm=rocm)

    def capture(ctx: Any, b: Batch) -> bool:
        """build_for_cudagraph_capture on the batches layer_variant_items.captures picks by
        vLLM's class's level (every vLLM dummy batch it allows, a third of the others)."""
        vb, vc, _ = builders(ctx, settings(b, name), name)
        return captures(vb, vc, b, patch(False))

    def replay_of(ctx: Any, b: Batch) -> Any:
        return None if capture(ctx, b) else replay_starts(b)

    def v(ctx: Any, b: Batch) -> Any:
        s = settings(b, name)
        vb, vc, _ = builders(ctx, s, name)
        return vllm_build(ctx, b, vb, vc, patch, replay=replay_of(ctx, b),
                          causal=not noncausal(b, s), capture=capture(ctx, b))

    def l(ctx: Any, b: Batch) -> Any:
        invalid_slots(b)
        s = settings(b, name)
        replay = replay_of(ctx, b)
        extra = {} if replay is None else {"replay_start": replay}
        if noncausal(b, s):
            extra["causal"] = False
        lb = builders(ctx, s, name)[2]
        common = lib_common(ctx, b, **extra)
        return lb.build_for_cudagraph_capture(common) if capture(ctx, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        from vllm.config import set_current_vllm_config
        vb, vc, lb = builders(ctx, settings(b, name), name)
        if not rocm and draft_update(b, vmd):
            advance(b, vmd)
            with set_current_vllm_config(vc), patched(False):
                vb.update_draft_decode_metadata(vmd)
            lb.update_draft_decode_metadata(lmd)
        out = swa_pairs(vmd, lmd, vb, vc, lb, MEMBERS[name][2], patch)
        if rocm:
            out.append(adaptive_level_pair(ctx, vb, vc, lb, name, patch))
        return out

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(b, name)
        parts = ["capture" if capture(ctx, b) else "build",
                 "triton" if triton_batch(b) else "numpy stand-ins",
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills",
                 f"window {s.window}" + (" (MLA spec)" if s.mla_kind else "")]
        if vmd.is_valid_token is not None and not bool(vmd.is_valid_token.all()):
            parts.append("invalid slots")
        if s.dspark:
            parts.append("DSpark, non-causal" if noncausal(b, s) else "DSpark, causal")
        if not rocm and draft_update(b, vmd):
            parts.append("draft decode update")
        replay = replay_of(ctx, b)
        if replay is not None:
            parts.append("replay_start" + (" on decodes" if replay[:vmd.num_decodes].any() else ""))
        if getattr(vmd, "decode_swa_ragged_indices", None) is not None:
            parts.append("ragged decode rows")
        return ", ".join(parts)

    return Item(name, "builder", v, l, pairs, block_sizes=(32, 64, 128, 256), max_spec=3,
                max_requests=256, token_budget=TOKEN_BUDGET, path=path, kinds=VARIANT_KINDS,
                notes=[f"not comparable: {k}: {why}" for k, why in LEFT_OUT.items()])


def sparse_swa_items() -> List[Item]:
    return [sparse_swa_item(name) for name in MEMBERS]
