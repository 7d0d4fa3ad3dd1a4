"""vLLM 0.33's metadata Triton kernels, run by Triton's CPU interpreter (TRITON_INTERPRET=1, see
vllm_env.py): BlockTable.compute_slot_mapping's kernel (vllm/v1/worker/block_table.py, with
the DCP world, rank and interleave a BlockTable reads from the DCP group) and
compute_token_to_req_indices (vllm/v1/attention/ops/metadata.py)."""
from __future__ import annotations

from typing import List

import numpy as np

from .batches import Batch
from .item import Item, choice_rng


#: the Triton items' batch cap (the interpreter costs 0.1-0.5 s a batch)
TRITON_MAX_BATCHES = 2000


def _slot_args(b: Batch):
    """The DCP rank (the batch's DCP world and interleave) and the padded output length."""
    r = choice_rng(b, 12)
    rank = int(r.integers(0, b.dcp)) if b.dcp > 1 else 0
    pad = int(r.integers(0, 40)) if r.random() < 0.5 else 0
    return rank, b.tokens + pad


def slot_mapping_item() -> Item:
    def v(ctx, b):
        from vllm.v1.worker.block_table import _COMPUTE_SLOT_MAPPING_KERNEL
        t = ctx.torch.from_numpy
        rank, total = _slot_args(b)
        out = ctx.torch.zeros(total, dtype=ctx.torch.int64)
        bt = t(b.bt)
        # BlockTable.compute_slot_mapping's call: the launcher over vLLM's block table, with
        # max_num_batched_tokens = the output's length (the tail gets PAD_SLOT_ID)
        _COMPUTE_SLOT_MAPPING_KERNEL(b.n, b.tokens, total, t(b.qsl), t(b.positions), bt,
                                     bt.stride(0), out, b.block_size, b.dcp, rank, b.interleave)
        return out

    def l(ctx, b):
        rank, total = _slot_args(b)
        return ctx.lib.compute_slot_mapping(b.qsl, b.positions, b.bt, b.block_size,
                                            out=np.zeros(total, np.int64), dcp_world_size=b.dcp,
                                            dcp_rank=rank, cp_kv_cache_interleave_size=b.interleave)
    return Item("compute_slot_mapping (BlockTable kernel, DCP 1/2/4)", "utility", v, l,
                lambda ctx, b, v, l: [("slot_mapping", v, l)], max_requests=64,
                token_budget=4096, max_batches=TRITON_MAX_BATCHES)


def _mapped(b: Batch):
    r = choice_rng(b, 13)
    n = b.tokens + (int(r.integers(0, 300)) if r.random() < 0.5 else 0)
    mapped = int(r.integers(0, b.tokens + 1)) if r.random() < 0.3 else b.tokens
    return mapped, n


def token_to_req_item() -> Item:
    def v(ctx, b):
        from vllm.v1.attention.ops.metadata import compute_token_to_req_indices
        mapped, n = _mapped(b)
        out = ctx.torch.full((max(n, 1),), 7, dtype=ctx.torch.int32)
        return compute_token_to_req_indices(ctx.torch.from_numpy(b.qsl), out, mapped, n)

    def l(ctx, b):
        mapped, n = _mapped(b)
        return ctx.lib.compute_token_to_req_indices(b.qsl, mapped, n,
                                                    out=np.full(max(n, 1), 7, np.int32))
    return Item("compute_token_to_req_indices", "utility", v, l,
                lambda ctx, b, v, l: [("token_to_req_indices", v, l)], max_requests=256,
                token_budget=4096, max_batches=TRITON_MAX_BATCHES)


def triton_items() -> List[Item]:
    return [slot_mapping_item(), token_to_req_item()]
