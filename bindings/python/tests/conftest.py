"""pytest fixtures: the library under test ($ATTN_LIBRARY), its example plugin
($ATTN_EXAMPLE_PLUGIN), the test vectors, and small batches computed by hand."""
import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))

import libattn  # noqa: E402

BLOCK = 16


def pytest_configure(config):
    if not os.environ.get("ATTN_LIBRARY"):
        raise pytest.UsageError("set ATTN_LIBRARY to the libattn.so.1 under test "
                                "(ctest's test_binding_python does)")


@pytest.fixture(scope="session")
def lib():
    return libattn.Library(os.environ["ATTN_LIBRARY"])


@pytest.fixture(scope="session")
def plugin_path():
    path = os.environ.get("ATTN_EXAMPLE_PLUGIN")
    if not path:
        pytest.fail("set ATTN_EXAMPLE_PLUGIN to the example plugin (ctest does)")
    return path


def vectors(name):
    with open(os.path.join(ROOT, "tests", "data", "vectors", name)) as f:
        return json.load(f)


def spec(**kw):
    return libattn.KvCacheSpec(block_size=BLOCK, num_kv_heads=8, head_size=128, **kw)


def config(capability=90, **kw):
    return libattn.BuilderConfig(max_num_seqs=256, max_num_batched_tokens=8192,
                                 max_model_len=1024, num_attention_heads=32,
                                 device_capability=capability, num_gpu_blocks=4096, **kw)


class Batch:
    """A batch from context and query lengths, its numbers computed here by hand: blocks
    numbered from 1 in request order, slot = block * 16 + offset."""

    def __init__(self, context, query, width=64, first_block=1):
        self.context = list(context)
        self.query = list(query)
        self.seq = [c + q for c, q in zip(context, query)]
        self.qsl = [0]
        for q in query:
            self.qsl.append(self.qsl[-1] + q)
        full = np.zeros((len(query), max(width, 1 + max(self.seq, default=0) // BLOCK)), np.int32)
        nxt = first_block
        for r, s in enumerate(self.seq):
            for j in range(-(-s // BLOCK)):
                full[r, j] = nxt
                nxt += 1
        self.table = np.ascontiguousarray(full[:, :width])  # width may be too narrow on purpose
        self.slots = [int(full[r, p // BLOCK]) * BLOCK + p % BLOCK
                      for r in range(len(query)) for p in range(self.context[r], self.seq[r])]
        self.arrays = dict(query_start_loc=np.array(self.qsl, np.int32),
                           seq_lens=np.array(self.seq, np.int32), block_table=self.table,
                           slot_mapping=np.array(self.slots, np.int64))

    def common(self, **kw):
        return libattn.CommonMetadata(**{**self.arrays, **kw})


@pytest.fixture
def mixed():
    """The demo's batch: three decodes, a chunked prefill (64 + 32), a fresh prefill (20)."""
    return Batch([40, 99, 16, 64, 0], [1, 1, 1, 32, 20])
