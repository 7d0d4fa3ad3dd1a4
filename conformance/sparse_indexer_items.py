"""The DeepSeek V3.2 lightning indexer: vLLM 0.33's DeepseekV32IndexerMetadataBuilder
(DEEPSEEK_V32_INDEXER, vllm/v1/attention/backends/mla/indexer.py) against libattn's builder of
the same name, on the lane's random batches: every field of vLLM's DeepseekV32IndexerMetadata,
its decode part and each prefill chunk (against libattn's flattened chunk lists and arrays), and
the builder's answers.

vLLM's side is a real VllmConfig of the DeepSeek-V3.2-shaped model of sparse_mla_items and a real
MLAAttentionSpec as DeepseekV32IndexerCache makes it (132 uint8 a token, cache_role INDEXER,
block size 64); the builder is made per batch with ``block_table_width`` = the batch table's
columns (the worker's width; both sides). Per batch: speculative tokens k <= 3, DCP 1/2/4 with
interleave 1/8/16 and any rank.

What a CPU cannot run is replaced around the construction and the build only (``patched``):
``current_platform`` in indexer.py and vllm/utils/deep_gemm.py (a proxy answering is_cuda() True
and capability 9.0), ``has_deep_gemm`` True (the indexer needs DeepGEMM on CUDA: it decides the
native decode widths 1, 2, 4 on SM90 and the flattening of k = 2 into one row per token), the DCP
group's rank and size, the SM count, and DeepGEMM's ``get_paged_mqa_logits_metadata`` (the
kernel library's schedule, filled on the device: a zero tensor of its documented shape, slots + 1
rows of 2; libattn returns the persistent rows, compared by shape). The two Triton kernels of the
build (BuildPrefillChunkMetadataKernel, PrepareUniformDecodeKernel) run in Triton's CPU
interpreter on about one small batch in ``TRITON_EVERY`` (``triton_batch``); on the others a numpy restatement of each
(``_prefill_chunk_numpy``, ``_uniform_decode_numpy``) stands in, since the interpreter costs about
a second a batch. Three profiles in ten run SM100 (a 10.0 platform proxy): the varlen decode
kernel (``_indexer_decode_metadata_kernel``) likewise, Triton's on the small batches and
``_VarlenDecodeNumpy`` otherwise.
Capture builds (issue 34): vLLM's runner's dummy batches (batches.dummy_batch) are among the
kinds, and build_for_cudagraph_capture (vLLM's base class's: build) runs on both sides where
layer_variant_items.captures says: the level vLLM's class answers under the stand-ins (ALWAYS
where the varlen decode kernel or the flattening is in use, else UNIFORM_BATCH), every dummy
batch it allows and a third of the others.
"""
from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any, Dict, Iterator, List

import numpy as np

from .batches import Batch
from .compare import MISSING, Pair, builder_answer_pairs
from .draft_update import Sides, with_draft_update
from .item import OPTIMISTIC_SPEC_DUMMY, Item, choice_rng
from .layer_variant_items import VARIANT_KINDS, captures
from .mla_items import LAYER, NUM_SMS, _ABSENT, optimistic_prefill_rows, zlib_crc
from .sides import lib_common, vllm_common
from .sparse_mla_items import _Platform, _model

NAME = "DEEPSEEK_V32_INDEXER"
MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN = 256, 16384, 131072
TOKEN_BUDGET = 8192  # keeps a batch under MAX_TOKENS (vLLM's per-token tables are that long)
TRITON_EVERY = 40
PROFILES = 24
MODULE = "vllm.v1.attention.backends.mla.indexer"

NOT_COMPARABLE = {
    "decode.schedule_metadata": "DeepGEMM's get_paged_mqa_logits_metadata (filled on the device "
                                "by the kernel library): shape compared",
}


class Settings(tuple):
    fields = ("spec", "dcp", "rank", "interleave", "width", "cap")

    def __new__(cls, *values: Any) -> "Settings":
        return tuple.__new__(cls, values)

    def __getattr__(self, name: str) -> Any:
        return self[self.fields.index(name)]


def settings(b: Batch) -> Settings:
    p = int(choice_rng(b, 40).integers(0, PROFILES))
    r = np.random.default_rng([zlib_crc(NAME), p])
    dcp = int(r.choice([1, 1, 1, 2, 4]))
    inter = int(r.choice([1, 8, 16])) if dcp > 1 else 1
    rank = int(r.integers(0, dcp))
    cap = 100 if r.random() < 0.3 else 90  # SM100: the varlen decode kernel
    return Settings(b.spec, dcp, rank, inter, int(b.bt.shape[1]), cap)


def triton_batch(b: Batch) -> bool:
    """Triton's interpreter on one small batch (<= 8 requests, <= 4096 tokens) in about
    TRITON_EVERY: it runs a Python loop per program, seconds on a large batch."""
    return (b.n <= 8 and b.tokens <= 4096 and
            int(choice_rng(b, 42).integers(0, TRITON_EVERY)) == 0)


# ---- stand-ins ---------------------------------------------------------------------------

def _local(lens: Any, world: int, rank: int, inter: int) -> Any:
    base = lens // inter // world * inter
    return base + np.clip(lens - base * world - rank * inter, 0, inter)


def _prefill_chunk_numpy(query_start_loc: Any, uncompressed_seq_lens: Any,
                         cu_compressed_seq_lens: Any, row_start_cu_compressed_seq_lens: Any,
                         token_to_seq: Any, cu_compressed_seq_len_ks: Any,
                         cu_compressed_seq_len_ke: Any, query_slice_start: int,
                         query_slice_stop: int, DCP_RANK: int, DCP_WORLD: int,
                         DCP_INTERLEAVE: int, *, num_reqs: int, COMPRESS_RATIO: int) -> None:
    """BuildPrefillChunkMetadataKernel restated: per request b and query offset o with its
    absolute position in [query_slice_start, query_slice_stop), ks = row_start[b], ke = ks +
    (seq - q + 1 + o) // ratio (DCP-local under DCP); token_to_seq over each request's rows."""
    qsl = query_start_loc.numpy().astype(np.int64)
    seq = uncompressed_seq_lens.numpy().astype(np.int64)
    cu = cu_compressed_seq_lens.numpy().astype(np.int64)
    row = row_start_cu_compressed_seq_lens.numpy().astype(np.int64)
    ks, ke, t2s = (cu_compressed_seq_len_ks.numpy(), cu_compressed_seq_len_ke.numpy(),
                   token_to_seq.numpy())
    for bi in range(num_reqs):
        q = int(qsl[bi + 1] - qsl[bi])
        off = np.arange(q)
        pos = qsl[bi] + off
        m = (pos >= query_slice_start) & (pos < query_slice_stop)
        ln = (seq[bi] - q + 1 + off) // COMPRESS_RATIO
        if DCP_WORLD > 1:
            ln = _local(ln, DCP_WORLD, DCP_RANK, DCP_INTERLEAVE)
        ks[pos[m] - query_slice_start] = row[bi]
        ke[pos[m] - query_slice_start] = row[bi] + ln[m]
        t2s[cu[bi]:cu[bi + 1]] = bi


def _uniform_decode_numpy(seq_lens: Any, decode_seq_lens: Any, block_table: Any,
                          expanded_block_table: Any, decode_lens: Any, num_decode_tokens: int,
                          max_decode_len: int) -> None:
    """PrepareUniformDecodeKernel restated: token idx of request idx // L: max(seq - L +
    idx % L + 1, 0), the request's block table row (the expanded table's width), length 1."""
    idx = np.arange(num_decode_tokens)
    req = idx // max_decode_len
    s = seq_lens.numpy()[req].astype(np.int64)
    decode_seq_lens.numpy()[:num_decode_tokens] = np.maximum(
        s - max_decode_len + idx % max_decode_len + 1, 0)
    w = expanded_block_table.shape[1]
    expanded_block_table.numpy()[:num_decode_tokens] = block_table.numpy()[req, :w]
    decode_lens.numpy()[:num_decode_tokens] = 1


def _paged_mqa_logits_metadata(cap: int) -> Any:
    def metadata(context_lens: Any, block_size: int, num_sms: int, indices: Any = None) -> Any:
        """DeepGEMM's schedule, shape only: _paged_mqa_logits_schedule_slots (SM90's next_n 4
        runs one task per 2-CTA cluster) + 1 rows of 2."""
        import torch
        next_n = context_lens.shape[1] if context_lens.dim() == 2 else 1
        slots = num_sms // (2 if next_n == 4 and cap == 90 else 1)
        return torch.zeros((slots + 1, 2), dtype=torch.int32)
    return metadata


class _Platform100(_Platform):
    """current_platform as the indexer asks it on an SM 10.0 GPU."""

    def is_device_capability_family(self, family: int, *a: Any, **k: Any) -> bool:
        return family == 100


class _VarlenDecodeNumpy:
    """_indexer_decode_metadata_kernel (v1/attention/ops/metadata.py) restated: token t < T of
    request r (the first r with qsl[r + 1] > t, at most n - 1): length seq - q + (t - qsl[r])
    + 1 (0 past qsl[n]), decode_lens 1, indices r (n + t - qsl[n] past it), the request's
    block table row (zeros past it); zeros from T to capacity; per_req_lens the query lengths."""

    def __getitem__(self, grid: Any) -> Any:
        return self.launch

    @staticmethod
    def launch(query_start_loc: Any, seq_lens: Any, block_table: Any, output_seq_lens: Any,
               output_block_table: Any, decode_lens: Any, indices: Any, per_req_lens: Any,
               num_reqs: int, num_tokens: int, capacity: int, input_stride: int,
               output_stride: int, BLOCK_COLS: int, **k: Any) -> None:
        qsl = query_start_loc.numpy().astype(np.int64)
        seq = seq_lens.numpy().astype(np.int64)
        actual = int(qsl[num_reqs])
        t = np.arange(num_tokens)
        req = np.minimum(np.searchsorted(qsl[1:num_reqs + 1], t, side="right"), num_reqs - 1)
        valid = t < actual
        start, end = qsl[req], qsl[req + 1]
        out = output_seq_lens.numpy()
        out[:num_tokens] = np.where(valid, seq[req] - (end - start) + t - start + 1, 0)
        out[num_tokens:capacity] = 0
        decode_lens.numpy()[:num_tokens] = 1
        indices.numpy()[:num_tokens] = np.where(valid, req, num_reqs + t - actual)
        bt = block_table.numpy()
        obt = output_block_table.numpy()
        obt[:num_tokens, :BLOCK_COLS] = np.where(valid[:, None], bt[req, :BLOCK_COLS], 0)
        per_req_lens.numpy()[:num_reqs] = np.diff(qsl[:num_reqs + 1])


@contextlib.contextmanager
def patched(s: Settings, real_triton: bool) -> Iterator[None]:
    undo = []

    def put(obj: Any, name: str, value: Any) -> None:
        undo.append((obj, name, getattr(obj, name, _ABSENT)))
        setattr(obj, name, value)
    try:
        mod = importlib.import_module(MODULE)
        dg = importlib.import_module("vllm.utils.deep_gemm")
        platform = _Platform100 if s.cap == 100 else _Platform
        for m in (mod, dg):
            real = m.current_platform
            real = real._real if isinstance(real, _Platform) else real
            put(m, "current_platform", platform(real))
        put(mod, "has_deep_gemm", lambda: True)
        put(mod, "get_dcp_group", lambda: types.SimpleNamespace(world_size=s.dcp,
                                                                rank_in_group=s.rank))
        put(mod, "num_compute_units", lambda *a, **k: NUM_SMS)
        put(mod, "get_paged_mqa_logits_metadata", _paged_mqa_logits_metadata(s.cap))
        if not real_triton:
            put(mod, "_BUILD_PREFILL_CHUNK_METADATA_KERNEL", _prefill_chunk_numpy)
            put(mod, "_PREPARE_UNIFORM_DECODE_KERNEL", _uniform_decode_numpy)
            ops = importlib.import_module("vllm.v1.attention.ops.metadata")
            put(ops, "_indexer_decode_metadata_kernel", _VarlenDecodeNumpy())
        yield
    finally:
        for obj, name, value in reversed(undo):
            if value is _ABSENT:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


# ---- the two sides -------------------------------------------------------------------------

def new_vllm_config(ctx: Any, spec: int, topk: int = 2048, block_size: int = 64) -> Any:
    """A fresh VllmConfig of the DeepSeek-V3.2-shaped model (index_topk `topk`): MAX_SEQS,
    MAX_TOKENS, MAX_MODEL_LEN, the cache's block size, `spec` speculative tokens (an ngram
    speculative config), on the CPU. The DeepSeek V3.2 / V4 / V4.1 items share it."""
    from vllm.config import CacheConfig, DeviceConfig, SchedulerConfig, VllmConfig
    vc = VllmConfig(model_config=_model(ctx, 16, topk),
                    device_config=DeviceConfig(device="cpu"),
                    scheduler_config=SchedulerConfig(
                        max_num_seqs=MAX_SEQS, max_num_batched_tokens=MAX_TOKENS,
                        max_model_len=MAX_MODEL_LEN, is_encoder_decoder=False),
                    cache_config=CacheConfig())
    vc.cache_config.block_size = block_size
    if spec:
        object.__setattr__(vc, "speculative_config", types.SimpleNamespace(
            num_speculative_tokens=spec, parallel_drafting=False, method="ngram",
            enable_adaptive_verification=False, use_dspark=lambda: False))
    return vc


def _vllm_config(ctx: Any, s: Settings) -> Any:
    cache = ctx.__dict__.setdefault("indexer_configs", {})
    key = (s.spec, s.dcp, s.interleave)
    if key in cache:
        return cache[key]
    vc = new_vllm_config(ctx, s.spec)
    vc.parallel_config.decode_context_parallel_size = s.dcp
    vc.parallel_config.cp_kv_cache_interleave_size = s.interleave
    cache[key] = vc
    return vc


def vllm_builder(ctx: Any, s: Settings) -> Any:
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.v1.kv_cache_interface import MLAAttentionSpec
    vc = _vllm_config(ctx, s)
    kw: Dict[str, Any] = {}
    try:
        from vllm.v1.kv_cache_interface import SparseCacheRole
        kw["cache_role"] = SparseCacheRole.INDEXER
    except ImportError:  # pragma: no cover
        pass
    spec = MLAAttentionSpec(block_size=64, num_kv_heads=1, max_tp_shards=1, head_size=132,
                            dtype=torch.uint8, **kw)
    cls = importlib.import_module(MODULE).DeepseekV32IndexerMetadataBuilder
    with set_current_vllm_config(vc), patched(s, False):
        return cls(spec, [LAYER], vc, torch.device("cpu"), block_table_width=s.width), vc


def lib_builder(ctx: Any, s: Settings) -> Any:
    libattn = ctx.libattn
    kv = libattn.KvDtype
    cfg = libattn.BuilderConfig(
        MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, 16, decode_context_parallel_size=s.dcp,
        dcp_rank=s.rank, cp_kv_cache_interleave_size=s.interleave, num_speculative_tokens=s.spec,
        device_capability=s.cap, num_sms=NUM_SMS, block_table_width=s.width)
    spec = libattn.KvCacheSpec(64, 1, 132, kind=libattn.KvCacheKind.MLA, dtype=kv.FP8_E4M3)
    return ctx.lib.builder(NAME, spec, cfg)


# ---- the comparison ------------------------------------------------------------------------

def _np(x: Any) -> Any:
    return None if x is None else np.asarray(x)


def _i32(x: Any) -> Any:
    return None if x is None else np.asarray(x).astype(np.int32).reshape(-1).tolist()


def indexer_pairs(ctx: Any, s: Settings, b: Batch, v: Any, md: Any, vb: Any, vc: Any,
                  lb: Any, patches: Any = None) -> List[Pair]:
    """Every field of vLLM's DeepseekV32IndexerMetadata ``v`` against libattn's ``md`` and the
    builders' answers, vLLM's classmethods inside ``patches`` (default: ``patched(s, False)``,
    the CUDA platform proxy)."""
    torch = ctx.torch
    lib = {n: md[n] for n in md.fields()}
    seen = set()
    pairs: List[Pair] = []

    def put(name: str, vval: Any, lname: str) -> None:
        seen.add(lname)
        if isinstance(vval, torch.Tensor) and vval.dim() == 0:
            vval = vval.item()
        pairs.append((name, vval, lib.get(lname, MISSING)))

    for f in ("seq_lens", "max_seq_len", "slot_mapping", "num_decodes", "num_decode_tokens",
              "num_prefills", "num_prefill_tokens", "positions", "block_table"):
        put(f, getattr(v, f), f)
    d = v.decode
    dnames = [n for n in lib if n.startswith("decode_")]
    if d is None:
        pairs += [(f"{n} (decode is None)", None, lib[n]) for n in dnames]
        seen.update(dnames)
    else:
        for f in ("block_table", "seq_lens", "decode_lens", "requires_padding", "global_seq_lens",
                  "per_req_decode_lens", "decode_is_uniform", "write_max_decode_len", "indices"):
            put("decode." + f, getattr(d, f), "decode_" + f)
        seen.add("decode_schedule_metadata")
        got = lib.get("decode_schedule_metadata")
        pairs.append(("decode.schedule_metadata (DeepGEMM's; shape)",
                      tuple(d.schedule_metadata.shape),
                      None if got is None else tuple(np.asarray(got).shape)))
    p = v.prefill
    pnames = [n for n in lib if n.startswith("prefill_")]
    seen.update(pnames)
    if p is None:
        pairs += [(f"{n} (prefill is None)", None, lib[n]) for n in pnames]
    else:  # every batch: both plan the chunks from seq_lens_cpu_upper_bound
        pairs += _prefill_pairs(p, lib, int(v.num_decodes), b)
    pairs += builder_answer_pairs(vb, vc, lb, patches if patches is not None else
                                  patched(s, False))
    for name in lib:
        if name not in seen:
            pairs.append((f"{name} (libattn field vLLM 0.33 lacks)", MISSING, lib[name]))
    return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
            if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in pairs]


def _prefill_pairs(p: Any, lib: Dict[str, Any], nd: int, b: Batch) -> List[Pair]:
    P = "prefill_"
    out: List[Pair] = [("prefill.max_prefill_seq_len", p.max_prefill_seq_len,
                        lib.get(P + "max_prefill_seq_len")),
                       ("prefill.row_shard_sizes", p.row_shard_sizes,
                        lib.get(P + "row_shard_sizes")),
                       ("len(prefill.chunks) ~ prefill_num_chunks", len(p.chunks),
                        lib.get(P + "num_chunks"))]
    L = {k: _i32(lib.get(P + "chunk_" + k)) for k in (
        "token_start", "token_end", "req_start", "req_end", "cu_offset", "total_seq_lens",
        "max_seqlen_k", "skip_kv_gather", "local_total_seq_lens", "max_local_total_seq_lens")}
    ks, ke = _np(lib.get(P + "cu_seqlen_ks")), _np(lib.get(P + "cu_seqlen_ke"))
    cu, lcu = _np(lib.get(P + "cu_seq_lens")), _np(lib.get(P + "local_cu_seq_lens"))
    bt = _np(lib.get("block_table"))
    first = int(b.qsl[nd])
    for i, c in enumerate(p.chunks):
        n = f"prefill.chunks[{i}]"
        if L["token_start"] is None or i >= len(L["token_start"]):
            out.append((n, "a chunk", "absent"))
            continue
        rs, re_, off = L["req_start"][i], L["req_end"][i], L["cu_offset"][i]
        ts, te = L["token_start"][i], L["token_end"][i]
        k = re_ - rs
        lib_cu = cu[off:off + k + 1]
        expanded = np.repeat(np.arange(k, dtype=np.int32), np.diff(lib_cu)) if k else \
            np.zeros(0, np.int32)
        # token_to_seq has total_seq_lens rows (seq_lens_cpu_upper_bound's sum); the kernel
        # writes those of the exact lengths (cu_seq_lens), the rest stays torch.empty's
        t2s = c.token_to_seq.numpy()
        out += [(f"{n}.token_start", int(c.token_start), ts),
                (f"{n}.token_end", int(c.token_end), te),
                (f"{n}.num_reqs ~ req_end - req_start", int(c.num_reqs), k),
                (f"{n}.block_table ~ block_table[req_start:req_end]", c.block_table.numpy(),
                 bt[rs:re_]),
                (f"{n}.cu_seqlen_ks ~ prefill_cu_seqlen_ks[token range]", c.cu_seqlen_ks.numpy(),
                 ks[ts - first:te - first]),
                (f"{n}.cu_seqlen_ke ~ prefill_cu_seqlen_ke[token range]", c.cu_seqlen_ke.numpy(),
                 ke[ts - first:te - first]),
                (f"{n}.cu_seq_lens ~ prefill_cu_seq_lens[cu_offset:+num_reqs+1]",
                 c.cu_seq_lens.numpy(), lib_cu),
                (f"{n}.local_cu_seq_lens ~ prefill_local_cu_seq_lens[cu_offset:...]",
                 c.local_cu_seq_lens.numpy(), lcu[off:off + k + 1]),
                (f"{n}.token_to_seq[:cu_seq_lens[-1]] ~ cu_seq_lens expanded",
                 t2s[:len(expanded)], expanded),
                (f"{n}.len(token_to_seq) ~ total_seq_lens", len(t2s), L["total_seq_lens"][i]),
                (f"{n}.total_seq_lens", int(c.total_seq_lens), L["total_seq_lens"][i]),
                (f"{n}.max_seqlen_k", int(c.max_seqlen_k), L["max_seqlen_k"][i]),
                (f"{n}.skip_kv_gather", bool(c.skip_kv_gather), bool(L["skip_kv_gather"][i])),
                (f"{n}.local_total_seq_lens", int(c.local_total_seq_lens),
                 L["local_total_seq_lens"][i]),
                (f"{n}.max_local_total_seq_lens", int(c.max_local_total_seq_lens),
                 L["max_local_total_seq_lens"][i]),
                (f"{n}.pcp_deinterleave_idx", c.pcp_deinterleave_idx, None)]
    return out


def path_parts(vmd: Any) -> List[str]:
    """The decode path vLLM took (varlen, flattened, native MTP, native) and the prefill plan's
    shape (several chunks, query sub-chunks, none at all), for an item's ``path``."""
    parts: List[str] = []
    d = vmd.decode
    if d is not None:
        if d.indices is not None:
            parts.append("varlen decode")
        elif d.block_table.shape[0] != vmd.num_decodes or d.decode_lens.numel() != \
                vmd.num_decodes:
            parts.append("flattened decode")
        elif d.seq_lens.dim() == 2 and d.seq_lens.shape[1] > 1:
            parts.append("native MTP decode")
        else:
            parts.append("native decode")
        if d.requires_padding:
            parts.append("requires_padding")
    if vmd.prefill is not None:
        c = vmd.prefill.chunks
        if len(c) > 1:
            parts.append("several chunks")
        if any(x.skip_kv_gather for x in c):
            parts.append("query sub-chunks")
        if not c:
            parts.append("no chunk (no K row)")
    return parts


def indexer_item() -> Item:
    def common_extra(ctx: Any, b: Batch, s: Settings) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if s.dcp > 1:
            t = ctx.vu.get_dcp_local_seq_lens(ctx.torch.from_numpy(b.seq), s.dcp, s.rank,
                                              s.interleave)
            out["dcp_local_seq_lens"] = np.ascontiguousarray(
                t.numpy().astype(np.int32).reshape(-1))
        return out

    def vllm_side(ctx: Any, b: Batch) -> Any:
        """vLLM's builder and config that built ``b`` (made again if another batch came
        between)."""
        last = ctx.__dict__.get("indexer_last")
        return (last[1], last[2]) if last is not None and last[0] is b else \
            vllm_builder(ctx, settings(b))

    def capture(ctx: Any, b: Batch) -> bool:
        """build_for_cudagraph_capture where layer_variant_items.captures says (by vLLM's
        class's level: its dummy batches, a third of the others); none where vLLM could not
        make its builder (libattn's side then builds, and the refusal is counted as vLLM's)."""
        try:
            vb, vc = vllm_side(ctx, b)
        except Exception:  # noqa: BLE001 (vLLM's refusal, reported by its own side)
            return False
        return captures(vb, vc, b, patched(settings(b), False))

    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        s = settings(b)
        vb, vc = vllm_builder(ctx, s)
        ctx.__dict__["indexer_last"] = (b, vb, vc)
        cm = vllm_common(ctx, b, **common_extra(ctx, b, s))
        with set_current_vllm_config(vc), patched(s, triton_batch(b)):
            return vb.build_for_cudagraph_capture(cm) if capture(ctx, b) else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        s = settings(b)
        lb = lib_builder(ctx, s)
        ctx.__dict__["indexer_lib_builder"] = lb
        common = lib_common(ctx, b, **common_extra(ctx, b, s))
        return lb.build_for_cudagraph_capture(common) if capture(ctx, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        s = settings(b)
        vb, vc = vllm_side(ctx, b)
        lb = ctx.__dict__.get("indexer_lib_builder") or lib_builder(ctx, s)
        return indexer_pairs(ctx, s, b, vmd, lmd, vb, vc, lb)

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        s = settings(b)
        parts = ["capture" if capture(ctx, b) else "build",
                 "triton" if triton_batch(b) else "numpy stand-ins",
                 "decodes" if vmd.num_decodes else "no decodes",
                 "prefills" if vmd.num_prefills else "no prefills"]
        parts += path_parts(vmd)
        if s.dcp > 1:
            parts.append(f"dcp {s.dcp}/{s.interleave}")
        if s.cap == 100:
            parts.append("SM100")
        if vmd.num_prefills and optimistic_prefill_rows(b, vmd):
            parts.append("optimistic prefill bounds")
        return ", ".join(parts)

    def sides(ctx: Any, b: Batch) -> Sides:
        # the builders that built the batch (a drafter updates with the builder that built)
        s = settings(b)
        vb, vc = vllm_side(ctx, b)
        lb = ctx.__dict__.get("indexer_lib_builder") or lib_builder(ctx, s)
        return Sides(b, vb, vc, lb, lambda: patched(s, False))

    return with_draft_update(Item(
        NAME, "builder", v, l, pairs, block_sizes=(64,), max_spec=3, max_requests=256,
        token_budget=TOKEN_BUDGET, path=path, **OPTIMISTIC_SPEC_DUMMY,
        notes=[f"not comparable: {k}: {why}" for k, why in NOT_COMPARABLE.items()]), sides)


def kpool_tail_item() -> Item:
    """KPOOL_TAIL: vLLM 0.33's KpoolTailMetadataBuilder (GLM-5.3-Flash's storage-only kpool tail
    cache, kpool = the spec's block size) against libattn's: every field, the builder's
    answers. vLLM's compute_kpool_tail_slot_mapping takes its torch path on CPU tensors (the
    Triton kernel's semantics on CUDA; libattn's kernel is checked against its host path by the
    GPU tests). Nothing is patched. Capture builds on vLLM's dummy batches and a third of the
    others, as the level allows (layer_variant_items.captures)."""
    name = "KPOOL_TAIL"

    def builders(ctx: Any, b: Batch) -> Any:
        cache = ctx.__dict__.setdefault("kpool_tail_builders", {})
        if b.block_size not in cache:
            import torch
            from vllm.config import set_current_vllm_config
            from vllm.v1.kv_cache_interface import MLAAttentionSpec
            vc = _vllm_config(ctx, Settings(0, 1, 0, 1, 1))
            spec = MLAAttentionSpec(block_size=b.block_size, num_kv_heads=1, head_size=132,
                                    dtype=torch.uint8)
            cls = importlib.import_module(MODULE).KpoolTailMetadataBuilder
            with set_current_vllm_config(vc):
                vb = cls(spec, [LAYER], vc, torch.device("cpu"))
            libattn = ctx.libattn
            cfg = libattn.BuilderConfig(MAX_SEQS, MAX_TOKENS, MAX_MODEL_LEN, 16,
                                        device_capability=90)
            lspec = libattn.KvCacheSpec(b.block_size, 1, 132, kind=libattn.KvCacheKind.MLA,
                                        dtype=libattn.KvDtype.FP8_E4M3)
            cache[b.block_size] = (vb, vc, ctx.lib.builder(name, lspec, cfg))
        return cache[b.block_size]

    def capture(ctx: Any, b: Batch) -> bool:
        vb, vc, _ = builders(ctx, b)
        return captures(vb, vc, b)

    def v(ctx: Any, b: Batch) -> Any:
        from vllm.config import set_current_vllm_config
        vb, vc, _ = builders(ctx, b)
        cm = vllm_common(ctx, b)
        with set_current_vllm_config(vc):
            return vb.build_for_cudagraph_capture(cm) if capture(ctx, b) else vb.build(0, cm)

    def l(ctx: Any, b: Batch) -> Any:
        lb, common = builders(ctx, b)[2], lib_common(ctx, b)
        return lb.build_for_cudagraph_capture(common) if capture(ctx, b) else lb.build(common)

    def pairs(ctx: Any, b: Batch, vmd: Any, lmd: Any) -> List[Pair]:
        import dataclasses
        vb, vc, lb = builders(ctx, b)
        lib = {n: lmd[n] for n in lmd.fields()}
        out: List[Pair] = []
        for f in dataclasses.fields(vmd):
            val = getattr(vmd, f.name)
            out.append((f.name, val, lib.pop(f.name, MISSING)))
        out += [(f"{n} (libattn field vLLM 0.33 lacks)", MISSING, x) for n, x in lib.items()]
        out += builder_answer_pairs(vb, vc, lb)
        return [(n, "absent" if a is MISSING else a, "absent" if c is MISSING else c)
                if (a is MISSING or c is MISSING) else (n, a, c) for n, a, c in out]

    def path(ctx: Any, b: Batch, vmd: Any) -> str:
        sm = vmd.slot_mapping.numpy()[:b.tokens]
        return (f"{'capture' if capture(ctx, b) else 'build'}, kpool {b.block_size}" +
                (", null-block rows" if (sm == -1).any() else ""))

    def sides(ctx: Any, b: Batch) -> Sides:
        vb, vc, lb = builders(ctx, b)
        return Sides(b, vb, vc, lb)

    return with_draft_update(Item(
        name, "builder", v, l, pairs, block_sizes=(16, 32, 64, 128), max_spec=3,
        max_requests=256, token_budget=TOKEN_BUDGET, path=path, kinds=VARIANT_KINDS), sides)


def sparse_indexer_items() -> List[Item]:
    return [indexer_item(), kpool_tail_item()]
