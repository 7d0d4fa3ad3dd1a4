"""Seeded random batches: the requests of one step, laid out as vLLM's model runner lays them
out (blocks numbered from 1, 0 the null block; one block-table row per request; the slots of
the scheduled tokens), as numpy arrays both sides view.

Kinds: all decodes, all prefills, mixed (decode, short extend, long extend, prefill), chunked
prefills, spec-decode uniform batches (1+k), padded tails (zero-length queries after the real
requests), and edges (queries ending on a block or chunk boundary, seq_len == query_len, one
request, the empty batch); and, for the items that ask for them (kind "dummy"), the batches
vLLM's runner builds for CUDA graph capture and warmup (dummy_batch). Block sizes 16/32/64, and for the utilities also the MLA/Mamba
sizes 128, 256, 528 (the builders compared today take 16/32/64), DCP sizes 1/2/4 with interleave 1/8/16, 1..1024 requests,
contexts up to 128k: most batches small, some large, and the context cap shrinks as the request
count grows so that the block table stays small (a run stays fast).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

KINDS = ("decode", "prefill", "mixed", "chunked", "spec", "padded", "edge")
#: the base items' batch kinds and vLLM's runner's dummy batches (dummy_batch), one in eight:
#: the items that compare capture builds
VARIANT_KINDS = tuple(KINDS) + ("dummy",)
#: vLLM's default CUDA graph capture sizes (1, 2, 4, multiples of 8 below 256, of 16 to 512):
#: the token counts of dummy_batch
CAPTURE_SIZES = (1, 2, 4) + tuple(range(8, 256, 8)) + tuple(range(256, 513, 16))
BLOCK_SIZES = (16, 32, 64)
LARGE_BLOCK_SIZES = (128, 256, 528)  # MLA (64 is in BLOCK_SIZES) and Mamba-hybrid sizes
#: the utilities' block sizes: 16/32/64 and, in one batch of five, the large ones
UTILITY_BLOCK_SIZES = BLOCK_SIZES * 4 + LARGE_BLOCK_SIZES
MAX_CONTEXT = 131072
TABLE_BUDGET = 400_000  # sum over requests of context tokens, roughly (keeps arrays small)
TOKEN_BUDGET = 32768  # scheduled tokens of the extends and prefills, roughly


#: attributes an item's Item.adjust sets on a batch, kept by Batch.subset (shrinking)
ITEM_ATTRS = ("pad_tokens", "max_seqs", "fi_settings", "layer")


class Batch:
    """One step's requests. ``q`` query (scheduled) tokens, ``ctx`` computed tokens, ``prompt``
    prompt length (for the reorder's short-extend region), all int32 of length n; ``spec`` the
    speculative tokens k (decode threshold 1 + k), ``dcp``/``interleave`` the DCP world and
    interleave, ``chunk`` a local-attention chunk (a multiple of the block size). ``optimistic``
    is the chance that sides.step_inputs raises seq_lens_cpu_upper_bound above the exact
    lengths on the batch's spec-decode rows (its item's; subset keeps it)."""

    optimistic = 0.25
    #: tokens past the scheduled ones (vLLM's runner pads num_actual_tokens to a CUDA graph
    #: size: slot_mapping PAD_SLOT_ID, positions 0 there); 0 for the generator's batches
    pad_tokens = 0

    def __init__(self, q: Sequence[int], ctx: Sequence[int], prompt: Sequence[int],
                 block_size: int = 16, spec: int = 0, kind: str = "mixed", dcp: int = 1,
                 interleave: int = 1, chunk: int = 0, extra_cols: int = 0) -> None:
        self.q = np.asarray(q, np.int32).reshape(-1)
        self.ctx = np.asarray(ctx, np.int32).reshape(-1)
        self.prompt = np.asarray(prompt, np.int32).reshape(-1)
        self.block_size, self.spec, self.kind = int(block_size), int(spec), kind
        self.dcp, self.interleave = int(dcp), int(interleave)
        self.chunk = int(chunk) or 4 * self.block_size
        self.extra_cols = int(extra_cols)
        self._derive()

    def _derive(self) -> None:
        q, ctx, bs = self.q, self.ctx, self.block_size
        self.n = n = len(q)
        self.seq = (q + ctx).astype(np.int32)
        self.qsl = np.zeros(n + 1, np.int32)
        np.cumsum(q, out=self.qsl[1:])
        self.tokens = int(self.qsl[-1])
        self.max_q = int(q.max()) if n else 0
        self.max_s = int(self.seq.max()) if n else 0
        nblocks = -(-self.seq.astype(np.int64) // bs)
        self.width = width = max(int(nblocks.max()) if n else 0, 1) + self.extra_cols
        first = 1 + np.concatenate([[0], np.cumsum(nblocks)[:-1]]).astype(np.int64) if n else \
            np.zeros(0, np.int64)
        cols = np.arange(width)
        self.bt = np.where(cols[None, :] < nblocks[:, None], first[:, None] + cols[None, :],
                           0).astype(np.int32).reshape(n, width)
        req = np.repeat(np.arange(n), q)
        self.positions = (np.arange(self.tokens) - self.qsl[:-1][req] + ctx[req]).astype(np.int64)
        self.slots = (self.bt[req, self.positions // bs].astype(np.int64) * bs +
                      self.positions % bs) if self.tokens else np.zeros(0, np.int64)
        if self.kind == "dummy" and self.dcp == 1:
            # vLLM's dummy runs: the block table rows zeroed, every slot -1 (DCP ones point the
            # rows at allocated blocks and compute the slots: the derived ones stand in)
            self.bt[:] = 0
            self.slots = np.full(self.tokens, -1, np.int64)
        # host mirrors: separate memory, as a runtime keeps them
        self.qsl_cpu = self.qsl.copy()
        self.seq_cpu = self.seq.copy()
        self.is_prefilling = (ctx < self.prompt)

    @property
    def threshold(self) -> int:
        return 1 + self.spec

    def subset(self, keep: Sequence[int]) -> "Batch":
        """The batch of the requests ``keep`` (for shrinking a failing batch)."""
        k = np.asarray(keep, np.int64)
        b = Batch(self.q[k], self.ctx[k], self.prompt[k], self.block_size, self.spec,
                  self.kind, self.dcp, self.interleave, self.chunk, self.extra_cols)
        b.optimistic = self.optimistic
        for attr in ITEM_ATTRS:  # an item's per-batch choices (Item.adjust) stay with it
            if attr in self.__dict__:
                setattr(b, attr, self.__dict__[attr])
        return b

    def describe(self, limit: int = 16) -> str:
        def arr(a: np.ndarray) -> str:
            s = ",".join(str(int(x)) for x in a[:limit])
            return f"[{s}{',...' if len(a) > limit else ''}]"
        extra = "".join([f" k={self.spec}" if self.spec else "",
                         f" dcp={self.dcp}/{self.interleave}" if self.dcp > 1 else "",
                         f" extra_cols={self.extra_cols}" if self.extra_cols else ""])
        if self.pad_tokens:
            extra += f" num_actual_tokens={self.tokens + self.pad_tokens}"
        return (f"{self.kind} n={self.n} bs={self.block_size}{extra} q={arr(self.q)} "
                f"ctx={arr(self.ctx)} prompt={arr(self.prompt)}")


def _count(rng: np.random.Generator, max_requests: int = 1024) -> int:
    r = rng.random()
    if r < 0.60:
        n = int(rng.integers(1, 9))
    elif r < 0.85:
        n = int(rng.integers(9, 65))
    elif r < 0.95:
        n = int(rng.integers(65, 257))
    else:
        n = int(rng.integers(257, 1025))
    return min(n, max_requests)


def _log_uniform(rng: np.random.Generator, lo: int, hi: int, size: int) -> np.ndarray:
    hi = max(hi, lo)
    x = np.exp(rng.uniform(np.log(lo), np.log(hi + 1), size))
    return np.clip(x.astype(np.int64), lo, hi).astype(np.int32)


def dummy_uniform_decode(b: "Batch") -> bool:
    """Whether ``b`` is the dummy batch vLLM's runner captures a FULL CUDA graph with for a
    UNIFORM_BATCH builder: dummy_batch's "uniform" shape, every request a decode of 1 + k
    tokens and none prefilling; its spread and mixed shapes are warmup (piecewise) runs there,
    even where their query lengths look uniform (a spread of one-token requests, a mixed batch
    of one or two tokens: vLLM's runner forces them piecewise), and they have prefilling rows
    (every spread row, the mixed batch's last)."""
    return (b.kind == "dummy" and b.n > 0 and bool((b.q == 1 + b.spec).all())
            and not bool(np.asarray(b.is_prefilling).any()))


def dummy_batch(rng: np.random.Generator, bs: int, max_spec: int, max_requests: int) -> Batch:
    """One of the batches vLLM 0.33's GPUModelRunner._dummy_run builds for CUDA graph capture
    and warmup, for a token count drawn from CAPTURE_SIZES (max_requests standing for
    max_num_seqs): a uniform decode (half of them: 1 + k tokens per request, the count a
    multiple of 1 + k as vLLM rounds capture sizes, seq_lens = 1 + k), an even spread
    (min(tokens, max_num_seqs) requests, seq_lens = tokens) or the mixed warmup batch
    (min(max_num_seqs - 1, tokens // 2) one-token decodes of seq_len 1 and one prefill of the
    rest, seq_len + 1); with DCP the uniform and mixed ones carry dcp * interleave more context
    (get_dcp_dummy_context_len). Batch._derive zeroes the block table and the slots without
    DCP, as the runner does."""
    shape = str(rng.choice(("uniform", "uniform", "spread", "mixed")))
    size = int(rng.choice(CAPTURE_SIZES))
    spec = int(rng.integers(0, max_spec + 1))
    dcp = int(rng.choice([1, 1, 2, 4]))
    interleave = int(rng.choice([1, 8, 16])) if dcp > 1 else 1
    dummy_ctx = dcp * interleave if dcp > 1 else 0
    if shape == "uniform":
        q_len = 1 + spec
        n = max(1, min(max_requests, size // q_len))
        q = np.full(n, q_len, np.int32)
        seq = q.copy()
        prompt_is_seq = np.zeros(n, bool)
    elif shape == "spread":
        n = max(1, min(size, max_requests))
        q = np.full(n, size // n, np.int32)
        q[-1] += size % n
        seq = np.full(n, size, np.int32)
        prompt_is_seq = np.ones(n, bool)
        dummy_ctx = 0
    else:
        nd = max(0, min(max_requests - 1, size // 2))
        q = np.array([1] * nd + [size - nd], np.int32)
        seq = np.array([1] * nd + [size - nd + 1], np.int32)
        prompt_is_seq = np.arange(nd + 1) == nd
    ctx = (seq - q + dummy_ctx).astype(np.int32)
    prompt = np.where(prompt_is_seq, ctx + q, ctx).astype(np.int32)
    return Batch(q, ctx, prompt, bs, spec, "dummy", dcp, interleave)


def random_batch(rng: np.random.Generator, *, block_sizes: Sequence[int] = UTILITY_BLOCK_SIZES,
                 kinds: Sequence[str] = KINDS, max_spec: int = 7, max_requests: int = 1024,
                 table_budget: int = TABLE_BUDGET, token_budget: int = TOKEN_BUDGET,
                 ragged_spec: float = 0.2) -> Batch:
    """One seeded random batch (see the module doc for what it covers). ``max_requests`` and
    ``table_budget`` (about the sum of the contexts) bound it for the builders whose persistent
    tables grow with the KV cache (FLEX_ATTENTION). ``ragged_spec``: the chance that a spec
    batch gives some requests fewer drafts (a uniform split makes them prefills)."""
    kind = str(rng.choice(kinds))
    bs = int(rng.choice(block_sizes))
    if kind == "dummy":
        return dummy_batch(rng, bs, max_spec, max_requests)
    n = _count(rng, max_requests)
    spec = int(rng.integers(1, max_spec + 1)) if kind == "spec" or (
        kind in ("mixed", "padded") and rng.random() < 0.3) else 0
    thr = 1 + spec
    cap = int(min(MAX_CONTEXT - 4096, max(64, table_budget // n)))
    qcap = int(max(thr + 1, min(8192, token_budget // n)))
    q = np.ones(n, np.int32)
    ctx = _log_uniform(rng, 1, cap, n)
    region = np.zeros(n, np.int32)  # 0 decode, 1 short extend, 2 long extend, 3 prefill, 4 pad
    if kind == "decode":
        q[:] = 1
    elif kind == "spec":
        q[:] = thr
        if rng.random() < ragged_spec:  # some requests with fewer drafts
            m = rng.random(n) < 0.3
            q[m] = rng.integers(1, thr + 1, int(m.sum()))
    elif kind == "prefill":
        region[:] = 3
    elif kind == "chunked":
        region[:] = 2
        region[rng.random(n) < 0.2] = 1
    elif kind == "padded":
        pad = int(rng.integers(1, n + 1)) if n > 1 else 1
        n_real = max(n - pad, 1 if rng.random() < 0.9 else 0)
        q[:] = thr if spec and rng.random() < 0.7 else 1
        region[n_real:] = 4
    else:  # mixed and edge: decode, short extend, long extend, prefill in random proportions
        region = np.sort(rng.integers(0, 4, n)).astype(np.int32)
        if kind == "edge" and rng.random() < 0.5:
            region[:] = int(rng.integers(0, 4))
    nd = region == 0
    q[nd] = np.where(q[nd] > thr, thr, q[nd])
    se = region == 1
    q[se] = rng.integers(1, thr + 1, int(se.sum()))
    le = region == 2
    q[le] = _log_uniform(rng, thr + 1, qcap, int(le.sum()))
    pf = region == 3
    q[pf] = _log_uniform(rng, 1, qcap, int(pf.sum()))
    ctx[pf] = 0
    pad = region == 4
    q[pad] = 0
    ctx[pad] = 0
    np.minimum(ctx, MAX_CONTEXT - q, out=ctx)  # seq_len <= the model length (128k)
    # prompt: decodes are past their prompt; extends and prefills end it within or after this step
    prompt = np.where(region == 0, rng.integers(1, np.maximum(ctx, 1) + 1),
                      ctx + q + (rng.random(n) < 0.5) * rng.integers(0, 64, n)).astype(np.int32)
    prompt[se] = ctx[se] + q[se] + rng.integers(1, 64, int(se.sum()))
    prompt[pad] = 0
    chunk = bs * int(rng.choice([1, 2, 4, 8, 16]))
    if rng.random() < 0.3:
        chunk = max(chunk, bs * max(8192 // bs, 1))
    if kind == "edge":
        _edges(rng, q, ctx, bs, chunk, region)
    dcp = int(rng.choice([1, 1, 2, 4]))
    interleave = int(rng.choice([1, 8, 16])) if dcp > 1 else 1
    extra = int(rng.integers(0, 3)) if rng.random() < 0.2 else 0
    if kind == "edge" and rng.random() < 0.02:
        q, ctx, prompt = q[:0], ctx[:0], prompt[:0]  # the empty batch
    return Batch(q, ctx, prompt, bs, spec, kind, dcp, interleave, chunk, extra)


def _edges(rng: np.random.Generator, q: np.ndarray, ctx: np.ndarray, bs: int, chunk: int,
           region: np.ndarray) -> None:
    """Moves some requests onto boundaries: the query ending on a block or on a
    local-attention chunk boundary, a context ending on a block, seq_len == query_len."""
    for i in range(len(q)):
        if region[i] == 4:
            continue
        r = rng.random()
        if r < 0.3:  # the query ends on a block (or a chunk) boundary
            unit = chunk if rng.random() < 0.3 else bs
            seq = int(q[i]) + int(ctx[i])
            up = -(-seq // unit) * unit
            if up < MAX_CONTEXT:
                ctx[i] += up - seq
        elif r < 0.45 and ctx[i] > 0:  # the context ends on a block boundary
            ctx[i] = max(bs, (int(ctx[i]) // bs) * bs)
        elif r < 0.55:  # seq_len == query_len
            ctx[i] = 0
