"""Inputs without copies (numpy, DLPack producers, strided views) and outputs as views."""
import ctypes
import gc
import sys

import numpy as np
import pytest

import libattn
from libattn.dlpack import DLManagedTensor, live_exports
from conftest import Batch, config, spec


class OnlyDlpack:
    """A producer with nothing but the DLPack protocol (as a torch/cupy tensor would be)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


_P = ctypes.PYFUNCTYPE
_capsule_name = _P(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_deleter_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class HandMadeProducer:
    """A DLPack producer written here with ctypes, independent of numpy's: it counts the calls
    of its deleter, and its capsule destructor frees an unconsumed tensor (the protocol)."""

    def __init__(self, array):
        self.array = array
        self.deleted = 0
        self.capsules = []

        @_deleter_t
        def deleter(address):
            self.deleted += 1
        self._deleter = deleter

    def __dlpack__(self, stream=None):
        m = DLManagedTensor()
        shape = (ctypes.c_int64 * 1)(self.array.shape[0])
        t = m.dl_tensor
        t.data = self.array.ctypes.data
        t.device.device_type, t.ndim = libattn.DeviceType.CPU, 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = libattn.DTypeCode.INT, 32, 1
        t.shape = shape  # strides NULL: compact
        m.deleter = self._deleter
        self._keep = (m, shape)
        new = _P(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
            ("PyCapsule_New", ctypes.pythonapi))
        capsule = new(ctypes.addressof(m), b"dltensor", None)
        self.capsules.append(capsule)
        return capsule


@pytest.fixture
def fa(lib):
    with lib.builder("FLASH_ATTN", spec(), config(90)) as b:
        yield b


def test_outputs_view_the_inputs_without_a_copy(fa, mixed):
    common = mixed.common()
    md = fa.build(common)
    qsl = md["query_start_loc"]
    assert np.shares_memory(qsl, mixed.arrays["query_start_loc"])
    assert np.shares_memory(md["block_table"], mixed.table)
    assert not qsl.flags.writeable


def test_dlpack_inputs(fa, mixed):
    arrays = {k: OnlyDlpack(v) for k, v in mixed.arrays.items()}
    md = fa.build(libattn.CommonMetadata(**arrays, num_reqs=5, num_actual_tokens=55,
                                         max_query_len=32, max_seq_len=100))
    np.testing.assert_array_equal(md["seq_lens"], mixed.seq)
    assert np.shares_memory(md["seq_lens"], mixed.arrays["seq_lens"])
    # numpy arrays are taken through their own __dlpack__ when wrapped
    arg = libattn.tensors.tensor_arg(OnlyDlpack(np.arange(6, dtype=np.int32)[::2]))
    assert arg.shape == (3,) and arg.struct.strides[0] == 2


def test_strided_and_list_inputs(fa, mixed):
    wide = np.zeros((5, 128), np.int32)
    wide[:, :64] = mixed.table  # a (5, 64) view with row stride 128: taken as it is
    md = fa.build(mixed.common(block_table=wide[:, :64]))
    bt = md["block_table"]
    assert bt.shape == (5, 64) and bt.strides == (128 * 4, 4)
    assert np.shares_memory(bt, wide)
    np.testing.assert_array_equal(bt, mixed.table)
    spread = np.zeros((5, 128), np.int32)
    spread[:, ::2] = mixed.table
    with pytest.raises(libattn.InvalidArgument) as e:  # columns must be contiguous
        fa.build(mixed.common(block_table=spread[:, ::2]))
    assert e.value.message == "common->block_table_tensor has column stride 2, expected 1"
    md = fa.build(libattn.CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
                                         block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33]))
    np.testing.assert_array_equal(md["slot_mapping"], [20, 32, 33])
    assert md["slot_mapping"].dtype == np.int64
    with pytest.raises(TypeError):
        libattn.tensors.tensor_arg(np.array(["a"]))


def test_tensor_views_export_with_dlpack(fa, mixed):
    md = fa.build(mixed.common(), common_prefix_len=16)
    view = md.tensor_view("suffix_kv_lens")
    assert view.shape == (5,) and view.dtype == (libattn.DTypeCode.INT, 32, 1)
    assert view.__dlpack_device__() == (libattn.DeviceType.CPU, 0)
    before = live_exports()
    arr = np.from_dlpack(view)
    np.testing.assert_array_equal(arr, np.array(mixed.seq) - 16)
    assert np.shares_memory(arr, md["suffix_kv_lens"])
    del arr
    gc.collect()
    assert live_exports() == before
    view.__dlpack__()  # an unconsumed capsule is released by its destructor
    gc.collect()
    assert live_exports() == before
    with pytest.raises(libattn.NotFound):
        md.tensor_view("no_such_field")


def test_get_int(fa, mixed):
    md = fa.build(mixed.common())
    assert md.get_int("num_actual_tokens") == 55
    assert md.get_int("causal") == 1
    with pytest.raises(libattn.InvalidArgument) as e:
        md.get_int("seq_lens")
    assert "seq_lens" in e.value.message


def test_inputs_stay_alive_as_long_as_the_metadata(fa):
    b = Batch([5, 9], [3, 1])
    md = fa.build(b.common())
    expected = list(b.seq)
    del b
    gc.collect()
    np.testing.assert_array_equal(md["seq_lens"], expected)


def test_dlpack_capsules_are_consumed_and_their_deleter_called_once(fa, mixed):
    producer = HandMadeProducer(mixed.arrays["seq_lens"])
    md = fa.build(mixed.common(seq_lens=producer))
    (capsule,) = producer.capsules
    assert _capsule_name(capsule) == b"used_dltensor"  # consumed, as the protocol requires
    np.testing.assert_array_equal(md["seq_lens"], mixed.seq)
    assert np.shares_memory(md["seq_lens"], mixed.arrays["seq_lens"])
    assert producer.deleted == 0  # the metadata still views the tensor
    del md
    gc.collect()
    assert producer.deleted == 1
    del capsule
    producer.capsules.clear()
    gc.collect()
    assert producer.deleted == 1  # the renamed capsule's destructor did not free it again


def test_numpy_dlpack_reference_is_returned(fa, mixed):
    seq = mixed.arrays["seq_lens"]
    before = sys.getrefcount(seq)
    arg = libattn.tensors.tensor_arg(OnlyDlpack(seq))
    assert sys.getrefcount(seq) > before  # numpy's DLManagedTensor holds the array
    assert arg.struct.data == seq.ctypes.data
    del arg
    gc.collect()
    assert sys.getrefcount(seq) == before  # numpy's deleter ran: nothing leaked
