"""The persistent batch (issue 18): PersistentBatch, Builder.bind, Library.persistent_builder.

Every field of a persistent build equals the ordinary API's on the same batch (random batches,
several backends, batches growing and shrinking so that the views made once are re-sliced and
grown); capacity overflow is refused naming the capacity; views are made once, re-sliced per
build, show the buffer and go stale as documented."""
import gc
import zlib

import numpy as np
import pytest

import libattn
from conftest import BLOCK, config, spec

BACKENDS = ["FLASH_ATTN", "TRITON_ATTN", "FLASHINFER", "CPU_ATTN", "TREE_ATTN"]
WIDTH = 64  # block table columns: max_model_len 1024 / block 16


def random_batch(rng, max_reqs=40, max_query=64):
    """(query lengths, context lengths) of a random batch, decodes first (vLLM's order after
    reorder_batch_to_split_decodes_and_prefills)."""
    n = int(rng.integers(1, max_reqs + 1))
    query = rng.integers(1, max_query + 1, n)
    query[: int(rng.integers(0, n + 1))] = 1
    context = rng.integers(0, 1024 - max_query, n)
    return query.astype(np.int32), context.astype(np.int32)


def write(batch, query, context):
    """A step's writes: the first rows of the persistent arrays; returns the scalars."""
    n = len(query)
    seq = query + context
    qsl = np.zeros(n + 1, np.int32)
    np.cumsum(query, out=qsl[1:])
    t = int(qsl[-1])
    batch.query_start_loc[: n + 1] = qsl
    batch.seq_lens[:n] = seq
    for name, values in (("query_start_loc_cpu", qsl), ("seq_lens_cpu", seq)):
        if name in batch.arrays:
            batch.arrays[name][: len(values)] = values
    blocks = -(-seq // BLOCK)
    first = 1 + np.concatenate([[0], np.cumsum(blocks)[:-1]])
    cols = np.arange(WIDTH)
    batch.block_table[:n] = np.where(cols < blocks[:, None], first[:, None] + cols, 0)
    req = np.repeat(np.arange(n), query)
    pos = np.arange(t) - qsl[:-1][req] + context[req]
    batch.slot_mapping[:t] = batch.block_table[req, pos // BLOCK].astype(np.int64) * BLOCK + \
        pos % BLOCK
    return n, t, int(query.max()), int(seq.max())


def ordinary(batch, n, t, mq, ms):
    """The ordinary API's CommonMetadata of copies of the batch's first rows."""
    kw = dict(query_start_loc=batch.query_start_loc[: n + 1].copy(),
              seq_lens=batch.seq_lens[:n].copy(), block_table=batch.block_table[:n].copy(),
              slot_mapping=np.from_dlpack(batch.slot_mapping)[:t].copy(), num_reqs=n,
              num_actual_tokens=t,
              max_query_len=mq, max_seq_len=ms)
    if "query_start_loc_cpu" in batch.arrays:
        kw["query_start_loc_cpu"] = batch.query_start_loc_cpu[: n + 1].copy()
        kw["seq_lens_cpu"] = batch.seq_lens_cpu[:n].copy()
    return libattn.CommonMetadata(**kw)


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and np.array_equal(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mirrors,trust", [(False, False), (True, False), (True, True)])
def test_same_metadata_as_the_ordinary_api(lib, backend, mirrors, trust):
    rng = np.random.default_rng(zlib.crc32(f"{backend}{mirrors}{trust}".encode()))
    cfg = config()
    inputs = ("query_start_loc_cpu", "seq_lens_cpu") if mirrors else ()
    batch = libattn.PersistentBatch(cfg, WIDTH, inputs=inputs)
    step = lib.persistent_builder(backend, spec(), cfg, batch, trust_inputs=trust)
    with step.builder, lib.builder(backend, spec(), cfg) as plain:
        for i in range(25):
            query, context = random_batch(rng)
            # all decodes at times (the builders' shortcuts), and first: trust_inputs decides
            # on the first read, where a prefix of the decodes would look like the whole input
            if i % 5 == 4 or i == 0:
                query[:] = 1
            n, t, mq, ms = write(batch, query, context)
            want = plain.build(ordinary(batch, n, t, mq, ms)).to_dict()
            md = step.build(n, t, mq, ms)
            names = list(want)
            for name in names + names[::-1]:  # read twice: the second read is the cached view
                got = md[name]
                if isinstance(got, libattn.TensorView):  # pragma: no cover - no device here
                    pytest.skip("device tensors")
                assert same(got, want[name]), (backend, i, name, got, want[name])
                if isinstance(got, np.ndarray):
                    assert not got.flags.writeable
            if trust and backend in ("FLASH_ATTN", "TRITON_ATTN"):  # pass-through inputs
                assert {"query_start_loc", "seq_lens", "block_table",
                        "slot_mapping", "max_seq_len", "max_query_len"} <= set(md._trusted)
            elif not trust:
                assert not md._trusted
            # the ordinary Metadata of the same build agrees too
            full = md.metadata().to_dict()
            assert all(same(full[k], want[k]) for k in names)


def test_views_are_made_once_and_sliced(lib):
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    step = libattn.Library.persistent_builder(lib, "FLASH_ATTN", spec(), cfg, batch)
    rng = np.random.default_rng(1)
    q, c = random_batch(rng, 10)
    n, t, mq, ms = write(batch, q, c)
    md = step.build(n, t, mq, ms)
    seq = md["seq_lens"]
    # the same array object while the shape stays; a view of the batch's own array
    assert md["seq_lens"] is seq
    assert np.shares_memory(seq, batch.seq_lens) and seq.base is not None
    md = step.build(n, t, mq, ms)
    assert md["seq_lens"] is seq
    # a longer batch: a new slice of the same base view
    q2 = np.concatenate([q, q])
    c2 = np.concatenate([c, c])
    n2, t2, mq2, ms2 = write(batch, q2, c2)
    md2 = step.build(n2, t2, mq2, ms2)
    seq2 = md2["seq_lens"]
    assert seq2 is not seq and seq2.base is seq.base and len(seq2) == n2
    assert np.array_equal(seq2, q2 + c2)
    # a view shows the buffer, not a snapshot: the old slice sees the new values
    assert np.array_equal(seq, (q2 + c2)[:n])
    tab = md2["block_table"]
    assert tab.shape == (n2, WIDTH) and np.shares_memory(tab, batch.block_table)
    step.builder.close()


def test_builder_buffer_fields_follow_the_reported_shape(lib):
    """FLASHINFER's paged KV indices live in the builder's buffers: their length is the
    library's answer on every build (a longer one grows the view made once)."""
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH, inputs=("query_start_loc_cpu", "seq_lens_cpu"))
    step = lib.persistent_builder("FLASHINFER", spec(), cfg, batch)
    with step.builder, lib.builder("FLASHINFER", spec(), cfg) as plain:
        for context in ([10, 20], [500, 900, 300], [5], [1000] * 30, [17, 3]):
            q = np.ones(len(context), np.int32)
            c = np.array(context, np.int32)
            args = write(batch, q, c)
            want = plain.build(ordinary(batch, *args))
            md = step.build(*args)
            for name in ("paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len"):
                if want[name] is None:
                    continue
                got = md[name]
                assert np.array_equal(got, want[name]) and got.shape == want[name].shape, name
                assert not np.shares_memory(got, batch.block_table)


def test_capacity_overflow_is_refused(lib):
    cfg = config()  # 256 requests, 8192 tokens
    batch = libattn.PersistentBatch(cfg, WIDTH)
    step = lib.persistent_builder("FLASH_ATTN", spec(), cfg, batch)
    with step.builder:
        with pytest.raises(libattn.StaleMetadata, match="nothing has been built"):
            step.metadata["seq_lens"]
        with pytest.raises(libattn.InvalidArgument, match=r"num_reqs=257 .*capacity \[0, 256\]"):
            step.build(257, 257, 1, 10)
        with pytest.raises(libattn.InvalidArgument,
                           match=r"num_actual_tokens=8193 .*capacity \[0, 8192\]"):
            step.build(1, 8193, 8193, 8193)
        with pytest.raises(libattn.InvalidArgument, match="num_reqs=-1"):
            step.build(-1, 0, 0, 0)
        with pytest.raises(TypeError, match="must be ints"):
            step.build(1.5, 1, 1, 1)
        # a scalar pack_into refused: the batch's shapes may be half set, the metadata is stale
        with pytest.raises(libattn.StaleMetadata, match="last build .* failed"):
            step.metadata["seq_lens"]
        # the capacity itself builds
        batch.query_start_loc[:] = np.arange(257)
        batch.seq_lens[:] = 1
        batch.block_table[:, 0] = 1
        md = step.build(256, 256, 1, 1)
        assert len(md["seq_lens"]) == 256 and len(md["slot_mapping"]) == 256
    with pytest.raises(libattn.InvalidArgument, match=r"seq_lens has shape \(255,\), smaller"):
        libattn.PersistentBatch(cfg, WIDTH, seq_lens=np.zeros(255, np.int32))
    with pytest.raises(libattn.InvalidArgument, match=r"block_table has shape \(256, 8\)"):
        libattn.PersistentBatch(cfg, WIDTH, block_table=np.zeros((256, 8), np.int32))
    with pytest.raises(TypeError, match="unknown input 'logits_indices_padded'"):
        libattn.PersistentBatch(cfg, WIDTH, inputs=("logits_indices_padded",))


def test_library_checks_still_apply(lib):
    """HOST validation reads the values the step wrote: a bad one is the library's error."""
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    step = lib.persistent_builder("FLASH_ATTN", spec(), cfg, batch)
    with step.builder:
        batch.query_start_loc[:3] = [0, 1, 5]
        batch.seq_lens[:2] = [3, 2]  # request 1: 4 query tokens, sequence 2
        with pytest.raises(libattn.InvalidArgument, match="common->"):
            step.build(2, 5, 4, 3)
        with pytest.raises(libattn.StaleMetadata, match="last build .* failed"):
            step.metadata["seq_lens"]
        batch.seq_lens[:2] = [3, 4]
        md = step.build(2, 5, 4, 4)
        assert list(md["seq_lens"]) == [3, 4]


def test_staleness_and_lifetimes(lib):
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH, inputs=("query_start_loc_cpu", "seq_lens_cpu"))
    b = lib.builder("FLASH_ATTN", spec(), cfg)
    step = b.bind(batch)
    args = write(batch, np.array([1, 3], np.int32), np.array([7, 0], np.int32))
    md = step.build(*args)
    assert md["max_seq_len"] == 8 and md["num_actual_tokens"] == 4
    with pytest.raises(KeyError):
        md["no_such_field"]
    assert md.get("no_such_field", 5) == 5
    kept = md.metadata().clone()
    # an ordinary build on the same builder makes the persistent metadata stale
    b.build(ordinary(batch, *args))
    with pytest.raises(libattn.StaleMetadata, match="built again"):
        md["seq_lens"]
    md = step.build(*args)  # and the next persistent build makes it current again
    seq = md["seq_lens"]
    b.close()
    with pytest.raises(libattn.StaleMetadata, match="closed"):
        md["seq_lens"]
    with pytest.raises(ValueError, match="closed"):
        step.build(*args)
    gc.collect()
    assert list(seq) == [8, 3] and list(kept["seq_lens"]) == [8, 3]  # views keep their memory
    kept.close()


def test_validation_level_is_passed_through(lib):
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    step = lib.persistent_builder("FLASH_ATTN", spec(), cfg, batch,
                                  validate=libattn.ValidateMode.FULL)
    assert step.builder.config.validate == libattn.ValidateMode.FULL
    assert cfg.validate == libattn.ValidateMode.HOST  # the caller's config is not changed
    step.builder.close()
    # a level this library does not know is the library's refusal (how a caller detects it)
    with pytest.raises(libattn.InvalidArgument, match="config->validate=99"):
        lib.persistent_builder("FLASH_ATTN", spec(), cfg, batch, validate=99)


class DLPackOnly:
    """An object with only the DLPack protocol (the binding's general path, as torch's)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_given_arrays_and_dlpack_tensors_are_bound(lib):
    cfg = config()
    seq = np.zeros(300, np.int32)  # longer than the capacity: fine
    slots = np.zeros(8192, np.int64)
    batch = libattn.PersistentBatch(cfg, WIDTH, seq_lens=seq, slot_mapping=DLPackOnly(slots))
    assert batch.seq_lens is seq
    step = lib.persistent_builder("TRITON_ATTN", spec(), cfg, batch)
    with step.builder, lib.builder("TRITON_ATTN", spec(), cfg) as plain:
        query, context = np.array([1, 1, 4], np.int32), np.array([30, 0, 60], np.int32)
        n = 3
        qsl = np.array([0, 1, 2, 6], np.int32)
        batch.query_start_loc[:4] = qsl
        seq[:n] = query + context
        batch.block_table[:n, :5] = np.arange(1, 16).reshape(3, 5)
        slots[:6] = np.arange(6) + 40
        md = step.build(n, 6, 4, 64)
        want = plain.build(ordinary(batch, n, 6, 4, 64)).to_dict()
        for name, value in want.items():
            assert same(md[name], value), name
        assert np.shares_memory(md["slot_mapping"], slots)


@pytest.mark.parametrize("backend", ["FLASH_ATTN", "TRITON_ATTN"])
def test_trusted_validation_level_gives_the_same_metadata(lib, backend):
    """ATTN_VALIDATE_TRUSTED (2, libattn 1.7) passed through: on valid batches the metadata is
    the host-validated one's. Skipped with a library that refuses the level (before 1.7)."""
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    try:
        step = lib.persistent_builder(backend, spec(), cfg, batch, validate=2,
                                      trust_inputs=True)
    except libattn.InvalidArgument as e:
        assert "config->validate=2" in str(e)
        pytest.skip(f"this library refuses ATTN_VALIDATE_TRUSTED: {e}")
    rng = np.random.default_rng(7)
    with step.builder, lib.builder(backend, spec(), cfg) as plain:
        for _ in range(20):
            args = write(batch, *random_batch(rng))
            want = plain.build(ordinary(batch, *args)).to_dict()
            md = step.build(*args)
            for name, value in want.items():
                assert same(md[name], value), name


@pytest.mark.parametrize("trust", [False, True])
def test_cascade_builds_switch_and_back(lib, trust):
    """FLASH_ATTN with a common prefix (vLLM's cascade: its own metadata variant in the
    builder, other fields and tensors) between plain builds: every field as the ordinary API's,
    whatever moved in between."""
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    step = lib.persistent_builder("FLASH_ATTN", spec(), cfg, batch, trust_inputs=trust)
    rng = np.random.default_rng(11)
    with step.builder, lib.builder("FLASH_ATTN", spec(), cfg) as plain:
        for prefix in (0, 32, 0, 48, 16, 0):
            query, context = random_batch(rng, 12, 8)
            context = np.maximum(context, 64).astype(np.int32)
            args = write(batch, query, context)
            if prefix:  # the first blocks shared by every request
                batch.block_table[: args[0], : prefix // BLOCK] = np.arange(1, prefix // BLOCK + 1)
            want = plain.build(ordinary(batch, *args), common_prefix_len=prefix).to_dict()
            md = step.build(*args, common_prefix_len=prefix)
            for name, value in want.items():
                assert same(md[name], value), (prefix, name)
            # the cascade fields exist in the cascade variant only: KeyError in a plain build,
            # also once read in a cascade build
            if prefix:
                assert md["use_cascade"] is True and md["common_prefix_len"] == prefix
            else:
                with pytest.raises(KeyError):
                    md["use_cascade"]
