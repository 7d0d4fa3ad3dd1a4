"""The compiled fast path, libattn._native (issue 35), against the ctypes layer.

ctest runs this suite twice: test_binding_python_native with $LIBATTN_NATIVE=1 (the extension
required: test_the_path_asked_for_is_the_one_used fails if it silently fell back) and
test_binding_python with $LIBATTN_NATIVE=0 (the ctypes layer alone, as without the extension).
The comparisons below need the extension and skip without it; the stepper's tests run on both
paths."""
import ctypes
import gc
import os
import shutil
import weakref

import numpy as np
import pytest

import libattn
from libattn import native as native_mod
from conftest import BLOCK, config, spec
from test_persistent import WIDTH, random_batch, write

STEP_FIELDS = ("query_start_loc", "seq_lens", "block_table", "slot_mapping", "max_seq_len")


@pytest.fixture(scope="module")
def ctypes_lib(monkeypatch_module):
    monkeypatch_module.setenv(native_mod.NATIVE_ENV, "0")
    lib = libattn.Library(os.environ["ATTN_LIBRARY"])
    monkeypatch_module.undo()
    assert lib.native is None
    return lib


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def needs_native(lib):
    if lib.native is None:
        pytest.skip(f"libattn._native not in use (${native_mod.NATIVE_ENV}="
                    f"{os.environ.get(native_mod.NATIVE_ENV)!r})")


def test_the_path_asked_for_is_the_one_used(lib):
    mode = native_mod.mode()
    if mode == "required":
        assert lib.native is not None
        assert type(lib.split_decodes_and_prefills).__module__ != "libattn.utilities"
        assert lib.split_decodes_and_prefills.__self__ is lib.native
        assert lib.reorder_batch_to_split_decodes_and_prefills.__self__ is lib.native
    elif mode == "off":
        assert lib.native is None
        assert lib.split_decodes_and_prefills.__func__ is \
            libattn.Library.split_decodes_and_prefills
    else:
        assert (lib.native is None) == (native_mod.native_module() is None)


def test_required_without_the_extension_is_an_import_error(monkeypatch, tmp_path):
    bogus = tmp_path / "_native.so"
    bogus.write_bytes(b"not an extension")
    monkeypatch.setenv(native_mod.NATIVE_ENV, "1")
    monkeypatch.setenv(native_mod.NATIVE_MODULE_ENV, str(bogus))
    monkeypatch.setattr(native_mod, "_module", None)
    with pytest.raises(ImportError, match=r"LIBATTN_NATIVE=1 but libattn._native does not import"):
        libattn.Library(os.environ["ATTN_LIBRARY"])
    monkeypatch.setenv(native_mod.NATIVE_ENV, "auto")  # auto: the ctypes layer, no error
    assert libattn.Library(os.environ["ATTN_LIBRARY"]).native is None


def test_the_extension_calls_the_library_that_was_loaded(lib, tmp_path):
    """$ATTN_LIBRARY or a path given to Library: the extension calls that library's functions
    (their addresses come from the ctypes load), not a library of its own."""
    needs_native(lib)
    for name in native_mod.FUNCTIONS:
        assert lib.native.address(name) == ctypes.cast(getattr(lib._dll, name),
                                                        ctypes.c_void_p).value
    copy = tmp_path / "libattn.so.1"
    shutil.copy(os.environ["ATTN_LIBRARY"], copy)
    other = libattn.Library(str(copy))
    assert other.native is not None and other.path == str(copy)
    assert other.native.address("attn_build") != lib.native.address("attn_build")
    assert other.native.address("attn_build") == ctypes.cast(other._dll.attn_build,
                                                              ctypes.c_void_p).value


def batches(seed, count=60):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        query, context = random_batch(rng)
        seq = query + context
        qsl = np.zeros(len(query) + 1, np.int32)
        np.cumsum(query, out=qsl[1:])
        yield query, context, libattn.CommonMetadata(
            query_start_loc=qsl, seq_lens=seq, block_table=np.ones((len(query), 4), np.int32),
            slot_mapping=np.zeros(int(qsl[-1]), np.int64))


def test_split_equals_the_ctypes_layer(lib, ctypes_lib):
    needs_native(lib)
    for _, _, common in batches(1):
        for thr in (1, 2, 4, 64):
            for uniform in (False, True):
                got = lib.split_decodes_and_prefills(common, thr, uniform)
                assert type(got) is libattn.BatchSplit
                assert got == ctypes_lib.split_decodes_and_prefills(common, thr, uniform)
    bad = next(batches(2))[2]
    bad.struct.max_query_len = -3
    with pytest.raises(libattn.InvalidArgument) as e:
        lib.split_decodes_and_prefills(bad, 1)
    with pytest.raises(libattn.InvalidArgument) as f:
        ctypes_lib.split_decodes_and_prefills(bad, 1)
    assert e.value.message == f.value.message


def test_a_short_struct_is_refused(lib):
    """The library reads struct_size bytes of common.struct: the extension checks the buffer
    holds them (the ctypes layer has ctypes' type check of the argument)."""
    needs_native(lib)

    class Fake:
        struct = bytearray(16)

    with pytest.raises(TypeError, match="struct_size"):
        lib.split_decodes_and_prefills(Fake())
    Fake.struct = bytearray(4096)
    Fake.struct[:8] = (1 << 40).to_bytes(8, "little")
    with pytest.raises(TypeError, match="struct_size"):
        lib.split_decodes_and_prefills(Fake())


def test_reorder_equals_the_ctypes_layer(lib, ctypes_lib):
    needs_native(lib)
    rng = np.random.default_rng(3)
    for query, context, _ in batches(4):
        perm = rng.permutation(len(query))
        sched, comp = query[perm], context[perm]
        for thr in (1, 3):
            want = ctypes_lib.reorder_batch_to_split_decodes_and_prefills(sched, comp, thr)
            assert lib.reorder_batch_to_split_decodes_and_prefills(sched, comp, thr) == want
            # other inputs (lists, int64, strided) take the ctypes layer's conversions
            assert lib.reorder_batch_to_split_decodes_and_prefills(
                sched.tolist(), comp.astype(np.int64), thr) == want
            assert lib.reorder_batch_to_split_decodes_and_prefills(
                np.repeat(sched, 2)[::2], comp, thr) == want
    for path in (lib, ctypes_lib):  # the C function reads num_reqs entries of each
        with pytest.raises(libattn.InvalidArgument, match="have 3 and 2 entries"):
            path.reorder_batch_to_split_decodes_and_prefills(np.ones(3, np.int32),
                                                             np.ones(2, np.int32))


def test_fast_prefill_ex_equals_the_ctypes_layer(lib, ctypes_lib):
    needs_native(lib)
    for query, _, common in batches(5, 30):
        n = len(query)
        logits = (np.cumsum(query) - 1).astype(np.int32)
        armed = libattn.CommonMetadata(
            query_start_loc=np.concatenate([[0], np.cumsum(query)]).astype(np.int32),
            seq_lens=(query + 5).astype(np.int32), block_table=np.ones((n, 8), np.int32),
            slot_mapping=np.zeros(int(query.sum()), np.int64), logits_indices_padded=logits,
            num_logits_indices=n)
        outs = [np.full(n + 1, -1, np.int32) for _ in range(4)]
        got = lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(
            armed, out_query_start_loc=outs[0], out_query_start_loc_cpu=outs[1])
        want = ctypes_lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(
            armed, out_query_start_loc=outs[2], out_query_start_loc_cpu=outs[3])
        assert (got is armed) == (want is armed)
        if got is not armed:
            assert ((got.num_reqs, got.num_actual_tokens, got.max_query_len, got.max_seq_len) ==
                    (want.num_reqs, want.num_actual_tokens, want.max_query_len,
                     want.max_seq_len))
            np.testing.assert_array_equal(outs[0], outs[2])
            np.testing.assert_array_equal(outs[1], outs[3])
            with lib.builder("FLASH_ATTN", spec(), config()) as b:
                a = b.build(got)["query_start_loc"].copy()
                np.testing.assert_array_equal(a, b.build(want)["query_start_loc"])


@pytest.mark.parametrize("backend", ["FLASH_ATTN", "TRITON_ATTN", "FLASHINFER"])
@pytest.mark.parametrize("trust", [False, True])
def test_stepper_equals_the_ordinary_build(lib, backend, trust):
    """On both paths: every step's values equal the ordinary build's; the list is one object,
    and a view stays the same object while its shape does."""
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    bound = lib.persistent_builder(backend, spec(), cfg, batch, trust_inputs=trust)
    rng = np.random.default_rng(11)
    last = None
    with bound.builder, lib.builder(backend, spec(), cfg) as plain:
        query, context = random_batch(rng)
        write(batch, query, context)
        names = [f for f in STEP_FIELDS if f in plain.build(batch.common)]
        run = bound.stepper(names)
        for i in range(40):
            if i % 4:
                query, context = random_batch(rng)
            scalars = write(batch, query, context)
            values = run(*scalars)
            if last is not None:
                assert values is last[0]
                if last[1] == scalars:  # same shapes: the same view objects
                    for k, before in enumerate(last[2]):
                        if isinstance(before, np.ndarray):
                            assert values[k] is before, (i, names[k])
            want = plain.build(batch.common)
            for name, v in zip(names, values):
                w = want[name]
                if isinstance(w, np.ndarray):
                    np.testing.assert_array_equal(v, w, err_msg=f"step {i} {name}")
                else:
                    assert v == w, (i, name)
            last = (values, scalars, list(values))


def test_stepper_staleness_and_close(lib):
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH)
    rng = np.random.default_rng(5)
    bound = lib.persistent_builder("FLASH_ATTN", spec(), cfg, batch)
    run = bound.stepper(["seq_lens"])
    scalars = write(batch, *random_batch(rng))
    run(*scalars)
    ordinary = bound.builder.build(batch.common)  # a build of its own: then stale
    run(*scalars)
    with pytest.raises(libattn.StaleMetadata):
        ordinary["seq_lens"]
    kept = bound.metadata.metadata()  # the ordinary Metadata of a step's build
    np.testing.assert_array_equal(kept["seq_lens"], batch.seq_lens[:scalars[0]])
    run(*scalars)
    with pytest.raises(libattn.StaleMetadata):
        kept["seq_lens"]
    np.testing.assert_array_equal(bound.metadata["seq_lens"], batch.seq_lens[:scalars[0]])
    with pytest.raises(TypeError, match="must be ints"):
        run(1.5, 1, 1, 1)
    with pytest.raises(libattn.InvalidArgument, match="capacity"):
        run(cfg.max_num_seqs + 1, 1, 1, 1)
    bound.builder.close()
    with pytest.raises(ValueError, match="builder is closed"):
        run(*scalars)
    with pytest.raises(ValueError, match="builder is closed"):
        bound.build(*scalars)


def test_a_dropped_stepper_is_collected(lib):
    """The extension's objects join the cycles of the Python objects (Library -> Api ->
    Library.check, BoundBatch -> Step -> its metadata -> BoundBatch): the collector frees
    them (nanobind reports leaked instances at exit otherwise)."""
    cfg = config()

    def make():
        batch = libattn.PersistentBatch(cfg, WIDTH)
        mine = libattn.Library(os.environ["ATTN_LIBRARY"])
        bound = mine.persistent_builder("FLASH_ATTN", spec(), cfg, batch)
        run = bound.stepper(["seq_lens"])
        run(*write(batch, np.ones(3, np.int32), np.full(3, 7, np.int32)))
        return weakref.ref(bound), weakref.ref(mine)

    refs = make()
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_builder_build_equals_the_ctypes_layer(lib, ctypes_lib):
    """Builder.build through the extension: the same fields as the ctypes layer's, the same
    lifetimes (an earlier result goes stale, a closed builder refuses), and the arguments it
    does not take (a cascade prefix, fast_build, a stream) go to the ctypes layer's method."""
    needs_native(lib)
    rng = np.random.default_rng(8)
    for backend in ("FLASH_ATTN", "TRITON_ATTN", "FLASHINFER"):
        with lib.builder(backend, spec(), config()) as b, \
                ctypes_lib.builder(backend, spec(), config()) as c:
            assert type(b.build).__name__ == "builtin_function_or_method"
            for _ in range(10):
                batch = libattn.PersistentBatch(config(), WIDTH)
                write(batch, *random_batch(rng))
                n = batch.common.num_reqs
                common = libattn.CommonMetadata(
                    query_start_loc=batch.query_start_loc[:n + 1],
                    seq_lens=batch.seq_lens[:n], block_table=batch.block_table[:n],
                    slot_mapping=batch.slot_mapping[:batch.common.num_actual_tokens])
                got, want = b.build(common), c.build(common)
                assert type(got) is libattn.Metadata and got._builder is b
                assert got.to_dict().keys() == want.to_dict().keys()
                for k, w in want.to_dict().items():
                    v = got[k]
                    assert (np.array_equal(v, w) if isinstance(w, np.ndarray) else v == w), k
                key = next(iter(want.to_dict()))
                again = b.build(common, 0, False, None)  # the same call, every argument given
                with pytest.raises(libattn.StaleMetadata):
                    got[key]
                assert again.to_dict().keys() == want.to_dict().keys()
                # what the native call does not take: the ctypes layer's method
                assert b.build(common, fast_build=True).to_dict().keys() == \
                    c.build(common, fast_build=True).to_dict().keys()
            with pytest.raises(TypeError):
                b.build(common, nonsense=1)
        with pytest.raises(ValueError, match="builder is closed"):
            b.build(common)


@pytest.mark.parametrize("backend", ["FLASH_ATTN", "TRITON_ATTN"])
def test_stepper_writes_equal_the_assignments(lib, backend):
    """On both paths: stepper(names, writes) writes the arrays given after the scalars into the
    batch's first rows, then steps; equal to assigning them and stepping. Other dtypes go
    through numpy's assignment (converted); a wrong length is numpy's error."""
    cfg = config()
    batch = libattn.PersistentBatch(cfg, WIDTH, inputs=("seq_lens_cpu",))
    ref = libattn.PersistentBatch(cfg, WIDTH, inputs=("seq_lens_cpu",))
    bound = lib.persistent_builder(backend, spec(), cfg, batch)
    writes = ("query_start_loc", "seq_lens", "slot_mapping", "seq_lens_cpu")
    rng = np.random.default_rng(21)
    with bound.builder, lib.builder(backend, spec(), cfg) as plain:
        run = bound.stepper(["seq_lens", "slot_mapping"], writes)
        for i in range(20):
            query, context = random_batch(rng)
            scalars = write(ref, query, context)
            batch.block_table[:] = ref.block_table
            n, t = scalars[0], scalars[1]
            srcs = [ref.query_start_loc[:n + 1].copy(), ref.seq_lens[:n].copy(),
                    ref.slot_mapping[:t].copy(), ref.seq_lens[:n].copy()]
            if i % 3 == 1:  # another dtype: numpy's converting assignment
                srcs[1] = srcs[1].astype(np.int64)
                srcs[2] = srcs[2].tolist()
            values = run(*scalars, *srcs)
            for name in ("query_start_loc", "seq_lens", "slot_mapping"):
                k = {"query_start_loc": n + 1, "slot_mapping": t}.get(name, n)
                np.testing.assert_array_equal(batch.arrays[name][:k], ref.arrays[name][:k])
            np.testing.assert_array_equal(batch.arrays["seq_lens_cpu"][:n], ref.seq_lens[:n])
            want = plain.build(batch.common)
            np.testing.assert_array_equal(values[0], want["seq_lens"])
            np.testing.assert_array_equal(values[1], want["slot_mapping"])
        with pytest.raises(ValueError):  # numpy: could not broadcast
            run(*scalars, srcs[0][:-1], *srcs[1:])
        with pytest.raises(TypeError):
            run(*scalars, *srcs[:-1])
        with pytest.raises(TypeError, match="must be ints"):
            run(1.5, 1, 1, 1, *srcs)
        with pytest.raises(KeyError, match="not an input"):
            bound.stepper(["seq_lens"], ["query_start_loc_cpu"])
