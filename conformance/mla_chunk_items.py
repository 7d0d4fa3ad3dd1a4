"""MLA's chunked context at vLLM 0.33: ``build_mla_chunked_context_metadata`` (with
``plan_mla_context_chunks``) and ``determine_chunked_prefill_workspace_size`` (with
``align_mla_chunked_context_workspace_size``), called directly, against a TRITON_MLA builder's
``prefill_chunked_context_*`` fields read back as per-chunk dicts (``Metadata.mla_context_chunks``).

Each batch draws its own case from the batch's seed: 1 to 64 prefills (as many as the batch has
requests), block size, DCP size and interleave, the workspace (0.33's default from a random
max_model_len and max_num_seqs, or a random size that is a multiple of the DCP size and at least
one alignment), context lengths (a third of them 0, the rest up to three workspaces, within max_model_len) and query
lengths >= 2 (every request a prefill at threshold 1). Every field of every ContextChunk is
compared, with ChunkedContextMetadata's context_lens, context_lens_list, empty_token_slices and
the number of chunks.
"""
from __future__ import annotations

import math
import types
from typing import Any, Dict, List

import numpy as np

from .batches import Batch
from .compare import Pair
from .item import Item, choice_rng

BLOCKS = (1, 16, 32, 64, 128)
DCPS = (1, 1, 2, 3, 4, 8)
INTERLEAVES = (1, 2, 4, 8, 16, 64)


def _case(b: Batch) -> Dict[str, Any]:
    """The case of a batch (cached on it): sizes, config and the prefills."""
    c = getattr(b, "_mla_chunks_case", None)
    if c is not None:
        return c
    r = choice_rng(b, 21)
    block = int(r.choice(BLOCKS))
    dcp = int(r.choice(DCPS))
    il = int(r.choice([x for x in INTERLEAVES if block % x == 0])) if dcp > 1 else 1
    align = block if dcp == 1 else math.lcm(block, dcp * il)
    n = max(1, min(int(b.n), 64))
    if r.random() < 0.3:  # 0.33's default workspace
        max_model_len = int(r.integers(64, 40000))
        max_num_seqs = int(r.integers(n, 300))
        override = 0
    else:
        max_num_seqs = 256
        w = align * int(r.integers(1, 8))
        if r.random() < 0.3:
            w += int(r.integers(0, align))
        w = max(w // dcp * dcp, align)
        override = w
        max_model_len = 0
    c = dict(block=block, dcp=dcp, il=il, n=n, override=override, max_num_seqs=max_num_seqs,
             max_model_len=max_model_len, r=r)
    b._mla_chunks_case = c
    return c


def _workspace_vllm(ctx: Any, c: Dict[str, Any]) -> int:
    from vllm.model_executor.layers.attention.mla_attention import MLACommonMetadataBuilder
    if c["override"]:
        return c["override"]
    cfg = types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(max_num_seqs=c["max_num_seqs"]),
        cache_config=types.SimpleNamespace(block_size=c["block"]),
        model_config=types.SimpleNamespace(max_model_len=c["max_model_len"]),
        parallel_config=types.SimpleNamespace(decode_context_parallel_size=c["dcp"],
                                              cp_kv_cache_interleave_size=c["il"]))
    return int(MLACommonMetadataBuilder.determine_chunked_prefill_workspace_size(cfg))


def _prefills(c: Dict[str, Any], workspace: int):
    """Context and query lengths of the case (drawn once, after the workspace is known)."""
    if "ctx" not in c:
        r, n = c["r"], c["n"]
        top = 3 * workspace
        if c["max_model_len"]:
            top = min(top, c["max_model_len"] - 32)  # seq_len <= max_model_len
        ctx = r.integers(1, top + 1, n) * (r.random(n) >= 1 / 3)
        c["ctx"] = ctx.astype(np.int32)
        c["q"] = r.integers(2, 33, n).astype(np.int32)
    return c["ctx"], c["q"]


def _vllm(ctx: Any, b: Batch) -> Any:
    from vllm.model_executor.layers.attention.mla_attention import \
        build_mla_chunked_context_metadata
    torch = ctx.torch
    c = _case(b)
    w = _workspace_vllm(ctx, c)
    cl, q = _prefills(c, w)
    qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
    md = build_mla_chunked_context_metadata(
        context_lens_cpu=torch.from_numpy(cl.copy()),
        prefill_query_start_loc_cpu=torch.from_numpy(qsl), chunked_prefill_workspace=None,
        chunked_prefill_workspace_size=w, block_size=c["block"], align_chunk_to_block=True,
        device=torch.device("cpu"), dcp_world_size=c["dcp"], dcp_local_block_size=c["il"],
        dcp_virtual_block_size=c["il"] * c["dcp"])
    return w, md


def _lib(ctx: Any, b: Batch) -> Any:
    la = ctx.libattn
    c = _case(b)
    w = _workspace_vllm(ctx, c)  # the prefills' lengths are drawn from it on both sides
    cl, q = _prefills(c, w)
    seq = (cl + q).astype(np.int32)
    qsl = np.concatenate([[0], np.cumsum(q)]).astype(np.int32)
    spec = la.KvCacheSpec(c["block"], 1, 576, kind=la.KvCacheKind.MLA)
    mml = max(c["max_model_len"], int(seq.max()))
    cfg = la.BuilderConfig(max_num_seqs=max(c["max_num_seqs"], c["n"]),
                           max_num_batched_tokens=int(qsl[-1]), max_model_len=mml,
                           num_attention_heads=16, decode_context_parallel_size=c["dcp"],
                           cp_kv_cache_interleave_size=c["il"])
    cfg.mla_chunked_prefill_workspace_size = c["override"]
    builder = la.Builder(ctx.lib, "TRITON_MLA", spec, cfg)
    n = len(q)
    common = la.CommonMetadata(
        query_start_loc=qsl, seq_lens=seq,
        block_table=np.zeros((n, -(-mml // c["block"])), np.int32),
        slot_mapping=np.zeros(int(qsl[-1]), np.int64), query_start_loc_cpu=qsl,
        seq_lens_cpu=seq, num_reqs=n, num_actual_tokens=int(qsl[-1]), max_query_len=int(q.max()),
        max_seq_len=int(seq.max()))
    md = builder.build(common)
    return builder, md


def _arr(x: Any) -> Any:
    if x is None:
        return None
    try:
        import torch
        if isinstance(x, torch.Tensor):
            return x.numpy().astype(np.int32)
    except ImportError:
        pass
    return np.asarray(x).astype(np.int32)


def _pairs(ctx: Any, b: Batch, v: Any, l: Any) -> List[Pair]:
    w, cc = v
    builder, md = l
    out: List[Pair] = [("chunked_prefill_workspace_size", w, md["chunked_prefill_workspace_size"]),
                       ("num_prefills", _case(b)["n"], md["num_prefills"])]
    chunks = md.mla_context_chunks()
    if cc is None:
        return out + [("chunked_context (None)", None, chunks)]
    if chunks is None:
        return out + [("chunked_context", "present", None)]
    P = "prefill_chunked_context_"
    out += [("context_lens", _arr(cc.context_lens), _arr(md[P + "context_lens"])),
            ("context_lens_list", list(cc.context_lens_list),
             _arr(md[P + "context_lens_list"]).tolist()),
            ("empty_token_slices", [(s.start, s.stop) for s in cc.empty_token_slices],
             [tuple(x) for x in _arr(md[P + "empty_token_slices"]).tolist()]),
            ("len(chunks)", len(cc.chunks), len(chunks))]
    for vc, lc in zip(cc.chunks, chunks):
        i = vc.index
        for f in ("index", "continuation_token_end", "num_context_tokens", "max_query_len",
                  "max_seq_len", "num_local_context_tokens"):
            out.append((f"chunks[{i}].{f}", int(getattr(vc, f)), lc[f]))
        for f in ("is_continuation", "all_rows_active"):
            out.append((f"chunks[{i}].{f}", bool(getattr(vc, f)), lc[f]))
        for f in ("request_slice", "token_slice"):
            s = getattr(vc, f)
            out.append((f"chunks[{i}].{f}", (s.start, s.stop), (lc[f].start, lc[f].stop)))
        out.append((f"chunks[{i}].num_requests", vc.num_requests,
                    lc["request_slice"].stop - lc["request_slice"].start))
        for f in ("query_start_loc", "cu_seq_lens", "starts", "seq_lens", "token_to_seq",
                  "padded_local_cu_seq_lens", "padded_local_token_to_seq"):
            out.append((f"chunks[{i}].{f}", _arr(getattr(vc, f)), _arr(lc[f])))
        for f in ("padded_local_seq_lens", "local_context_lens_allranks", "local_starts"):
            out.append((f"chunks[{i}].{f}", getattr(vc, f), lc[f]))
    return out


def _path(ctx: Any, b: Batch, v: Any) -> str:
    w, cc = v
    c = _case(b)
    if cc is None:
        return "no context (None)"
    kind = "continuation" if any(x.is_continuation for x in cc.chunks) else \
        ("several chunks" if len(cc.chunks) > 1 else "one chunk")
    return f"{kind}, {'DCP' if c['dcp'] > 1 else 'no DCP'}" + \
        (", default workspace" if not c["override"] else "")


def mla_chunks_item() -> Item:
    return Item("build_mla_chunked_context_metadata (TRITON_MLA's prefill_chunked_context_*)",
                "utility", _vllm, _lib, _pairs, path=_path)
