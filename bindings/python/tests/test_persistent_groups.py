"""The grouped build in Python (issue 35): libattn.build_groups and PersistentGroupStep over a
hybrid model's groups (FLASH_ATTN full + FLASH_ATTN sliding window + MAMBA2 + GDN_ATTN, as
bench_workloads' hybrid4 rows), on random batches: every group's metadata equal field for field
to that builder's own build; a refused batch names builders[i]. Each test runs on the library
of the session (the extension with $LIBATTN_NATIVE=1, ctest's test_binding_python_native) and
on the ctypes layer alone ($LIBATTN_NATIVE=0 for its Library)."""
import os
import zlib

import numpy as np
import pytest

import libattn
from libattn import CudagraphMode, KvCacheKind, MambaType
from libattn import native as native_mod
from conftest import spec
from test_persistent import WIDTH, random_batch, same, write

INPUTS = ("query_start_loc_cpu", "seq_lens_cpu", "is_prefilling")
REFUSAL = r"builders\[2\]: common->num_reqs=20 exceeds config->max_num_seqs=8"


def config(**kw):
    return libattn.BuilderConfig(256, 8192, 1024, 32, cudagraph_mode=CudagraphMode.NONE,
                                 device_capability=90, num_gpu_blocks=4096, **kw)


def hybrid_specs():
    mamba = dict(block_size=16, num_kv_heads=1, head_size=1, kind=KvCacheKind.MAMBA)
    return [("FLASH_ATTN", spec()),
            ("FLASH_ATTN", spec(kind=KvCacheKind.SLIDING_WINDOW, sliding_window=128)),
            ("MAMBA2", libattn.KvCacheSpec(**mamba, mamba_type=MambaType.MAMBA2,
                                           mamba_chunk_size=16)),
            ("GDN_ATTN", libattn.KvCacheSpec(**mamba, mamba_type=MambaType.GDN_ATTENTION))]


@pytest.fixture(params=["session", "ctypes"])
def path_lib(request, lib):
    """The session's Library, then one on the ctypes layer alone."""
    if request.param == "session":
        return lib
    mp = pytest.MonkeyPatch()
    mp.setenv(native_mod.NATIVE_ENV, "0")
    try:
        ct = libattn.Library(os.environ["ATTN_LIBRARY"])
    finally:
        mp.undo()
    assert ct.native is None
    return ct


def builders(lib, configs=None):
    configs = configs or [config()] * 4
    return [lib.builder(name, s, c) for (name, s), c in zip(hybrid_specs(), configs)]


def write_step(rng, batch):
    query, context = random_batch(rng)
    counts = write(batch, query, context)
    n = counts[0]
    # vLLM's Mamba builders read is_prefilling: multi-token queries are prompt chunks, and a
    # few one-token ones too (a one-token first chunk)
    batch.is_prefilling[:n] = (query > 1) | (rng.random(n) < 0.1)
    return counts


def check_equal(groups, twins, common, fast_build=False):
    for i, (g, twin) in enumerate(zip(groups, twins)):
        single = twin.build(common, fast_build=fast_build)
        md = g.metadata() if isinstance(g, libattn.PersistentMetadata) else g
        assert md.kind == single.kind
        assert md.fields() == single.fields(), i
        for name in single.fields():
            assert same(g[name], single[name]), (i, single.kind, name)


def test_build_groups_random_hybrid_batches(path_lib):
    rng = np.random.default_rng(zlib.crc32(b"build_groups"))
    batch = libattn.PersistentBatch(config(), WIDTH, inputs=INPUTS)
    bs, twins = builders(path_lib), builders(path_lib)
    try:
        for _ in range(12):
            n, t, mq, ms = write_step(rng, batch)
            batch.set_counts(n, t, mq, ms)
            groups = libattn.build_groups(bs, batch.common)
            assert [type(g) for g in groups] == [libattn.Metadata] * 4
            check_equal(groups, twins, batch.common)
        bs[1].build(batch.common)  # a builder's next build makes its grouped result stale
        with pytest.raises(libattn.StaleMetadata):
            groups[1]["seq_lens"]
        groups[0]["seq_lens"]
    finally:
        for b in bs + twins:
            b.close()


def test_persistent_group_step_random_hybrid_batches(path_lib):
    rng = np.random.default_rng(zlib.crc32(b"PersistentGroupStep"))
    batch = libattn.PersistentBatch(config(), WIDTH, inputs=INPUTS)
    bs, twins = builders(path_lib), builders(path_lib)
    try:
        step = libattn.PersistentGroupStep(bs, batch)
        assert (step._native_step is not None) == (path_lib.native is not None)
        first = None
        for k in range(12):
            n, t, mq, ms = write_step(rng, batch)
            groups = step.build(n, t, mq, ms)
            first = first if first is not None else groups
            assert groups is first  # one list, made once
            assert [g is bb.metadata for g, bb in zip(groups, step.bounds)] == [True] * 4
            assert step.counts == (n, t, mq, ms)
            check_equal(groups, twins, batch.common)
        # the same batch again: the views made at the last read are the ones returned
        mamba = next(f for f in groups[2].metadata().fields()
                     if isinstance(groups[2][f], np.ndarray))
        view = groups[0]["seq_lens"], groups[2][mamba]
        again = step.build(n, t, mq, ms)
        assert again[0]["seq_lens"] is view[0] and again[2][mamba] is view[1]
        # a cascade prefix per group and fast_build go through the same call
        prefix = step.build(n, t, mq, ms, common_prefix_lens=[0, 0, 0, 0], fast_build=True)
        assert prefix is first
        check_equal(prefix, twins, batch.common, fast_build=True)
        # an ordinary build on a builder makes that group's metadata stale; the next step
        # builds it again
        bs[3].build(batch.common)
        with pytest.raises(libattn.StaleMetadata):
            groups[3]["seq_lens"]
        step.build(n, t, mq, ms)
        check_equal(groups, twins, batch.common)
        with pytest.raises(ValueError, match="common_prefix_lens has 1 entries for 4 builders"):
            step.build(n, t, mq, ms, common_prefix_lens=[0])
        with pytest.raises(libattn.InvalidArgument, match="num_reqs=300 is outside"):
            step.build(300, t, mq, ms)
        with pytest.raises(TypeError):
            step.build(1.5, t, mq, ms)
        # numpy integers are ints (the ctypes layer's path when the native call refuses them)
        assert step.build(np.int64(n), np.int32(t), mq, ms) is first
        assert step.counts == (n, t, mq, ms)
        check_equal(groups, twins, batch.common)
        bs[1].close()
        with pytest.raises(ValueError, match=r"builders\[1\] is closed"):
            step.build(n, t, mq, ms)
    finally:
        for b in bs + twins:
            b.close()


def test_refused_batch_names_the_builder(path_lib):
    """MAMBA2 (builders[2]) made for 8 requests beside groups made for 256: a batch of 20 is
    refused by the grouped build naming builders[2], nothing is built, every group's metadata
    is stale, and the next batch within every limit builds."""
    rng = np.random.default_rng(7)
    small = config().__class__(8, 8192, 1024, 32, cudagraph_mode=CudagraphMode.NONE,
                               device_capability=90, num_gpu_blocks=4096)
    batch = libattn.PersistentBatch(config(), WIDTH, inputs=INPUTS)
    bs = builders(path_lib, [config(), config(), small, config()])
    twins = builders(path_lib, [config(), config(), small, config()])
    try:
        step = libattn.PersistentGroupStep(bs, batch)
        query = np.ones(20, np.int32)
        context = rng.integers(1, 500, 20).astype(np.int32)
        n, t, mq, ms = write(batch, query, context)
        batch.is_prefilling[:n] = False
        with pytest.raises(libattn.InvalidArgument, match=REFUSAL):
            step.build(n, t, mq, ms)
        for g in step.bounds:
            with pytest.raises(libattn.StaleMetadata):
                g.metadata["seq_lens"]
        with pytest.raises(libattn.InvalidArgument, match=REFUSAL):
            libattn.build_groups(bs, batch.common)
        with pytest.raises(libattn.InvalidArgument, match=r"builders\[1\] is builders\[0\]"):
            libattn.build_groups([bs[0], bs[0]], batch.common)
        n, t, mq, ms = write(batch, query[:5], context[:5])
        batch.is_prefilling[:n] = False
        check_equal(step.build(n, t, mq, ms), twins, batch.common)
        bs[0].close()
        with pytest.raises(ValueError, match=r"builders\[0\] is closed"):
            libattn.build_groups(bs, batch.common)
    finally:
        for b in bs + twins:
            b.close()
