"""``--device-sim``: the builder items with libattn's builders on the simulated device.

libattn is built with ATTN_DEVICE_SIM=ON (scripts/conformance.sh --device-sim builds it in
build-conformance-sim/): its device path runs on libsimcuda, a CUDA runtime in host memory whose
device allocations are out of the host's reach (docs/architecture.md, "The simulated device").
``enable`` changes three things in the libattn Python binding, for the whole process, so that
every builder item runs unchanged:

- every ``BuilderConfig`` is a CUDA builder's (``device="cuda"``);
- every ``CommonMetadata`` gets its device inputs (the tensors vLLM keeps on the GPU:
  query_start_loc, seq_lens, the block table, the slot mapping, positions, ...) copied into
  simulated device memory (the ``*_cpu`` mirrors and the host-only inputs stay on the host), and
  ``Builder.update_block_table`` its block table and slot mapping;
- a tensor field read from a metadata (``md[name]``) on the device is copied back (a
  synchronous copy, which first runs the queued device work); a dtype numpy lacks (bfloat16)
  comes back as a host TensorView of that dtype, as a host build's field is;
- ``num_decode_draft_tokens`` is given beside its ``_cpu`` mirror (vLLM on a GPU holds both);
- ``Builder.update_draft_decode_metadata`` first copies the host arrays behind the device
  inputs of the batch the metadata was built from (else the builder's last built batch) again,
  since the lane changes them in place between build and update (as a runtime rewrites its
  device buffers).

The simulated device reports compute capability 0.0 here (ATTN_SIM_CAPABILITY=0), so a config's
``device_capability`` 0 means the CPU platform's answer on both sides; items that simulate a GPU
pass theirs. Items of backends that build for the host only (HOST_ONLY_ITEMS) are skipped.

vLLM's side is unchanged, so a mismatch is a difference between libattn's device path and
vLLM 0.33.0's builder.
"""
from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any, Dict, List

import numpy as np

# The CommonMetadata inputs vLLM 0.33 keeps on the GPU (CommonAttentionMetadata and the build()
# keywords): on the simulated device here. Everything else (the *_cpu mirrors, the host-only
# inputs) stays on the host.
DEVICE_INPUTS = ("query_start_loc", "seq_lens", "block_table", "block_table_tensor",
                 "slot_mapping", "logits_indices_padded", "encoder_seq_lens",
                 "dcp_local_seq_lens", "num_accepted_tokens", "num_decode_draft_tokens",
                 "positions", "causal_per_request", "replay_start")
POSITIONAL = ("query_start_loc", "seq_lens", "block_table", "slot_mapping")
# Builder items whose backend builds metadata for the host only (libattn refuses a CUDA device:
# CPU_ATTN's check in src/backends/cpu_attn.cc): the host lane covers them; --device-sim lists
# them as skipped.
HOST_ONLY_ITEMS = ("CPU_ATTN",)
H2D, D2H = 1, 2
CUDA = 2

_sim: Any = None
_counts = {"inputs": 0, "readbacks": 0}


class _Buffer:
    """A simulated device allocation holding a copy of a host array."""

    def __init__(self, host: np.ndarray) -> None:
        self.ptr = ctypes.c_void_p()
        _check(_sim.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(max(host.nbytes, 4))))
        if host.nbytes:
            _check(_sim.cudaMemcpy(self.ptr, host.ctypes.data_as(ctypes.c_void_p),
                                   ctypes.c_size_t(host.nbytes), H2D))
        weakref.finalize(self, _sim.cudaFree, self.ptr)


def _check(status: int) -> None:
    if status != 0:
        name = _sim.cudaGetErrorName(status)
        raise RuntimeError(f"simulated device: {name.decode() if name else status}")


def _view(data: Any, device: Any, shape: Any, dtype: Any, owner: Any) -> Any:
    """A compact TensorView of `shape` and `dtype` (code, bits, lanes) at `data` on `device`
    (type, id; 1 is the host, CUDA the simulated device), keeping `owner` alive."""
    from libattn._generated import attn_tensor_t
    from libattn.dlpack import TensorView
    t = attn_tensor_t()
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    t.data = data
    t.device.device_type, t.device.device_id = device
    t.ndim = len(shape)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
    t.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    t.strides = None
    t.byte_offset = 0
    return TensorView(t, owner)  # TensorView copies shape and strides


def _to_device(value: Any) -> Any:
    """A device TensorView over a copy of `value` (numpy array or list); other values as they are."""
    if value is None or hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        return value
    arr = np.ascontiguousarray(value if isinstance(value, np.ndarray) else np.asarray(value))
    if arr.dtype == np.float64 or arr.dtype.kind not in "iub":
        return value  # not an index tensor: leave it to the library to judge
    buf = _Buffer(arr)
    kind = arr.dtype.kind
    view = _view(buf.ptr.value, (CUDA, 0), arr.shape,
                 ({"i": 0, "u": 1, "b": 6}[kind], 8 if kind == "b" else arr.dtype.itemsize * 8, 1),
                 buf)
    _counts["inputs"] += 1
    # the host array it was copied from: _resync copies it again where the lane changes it in
    # place (as a runtime rewrites its device buffers between a build and an update)
    view._sim_source = (value, buf) if isinstance(value, np.ndarray) else None
    return view


def _resync(common: Any) -> None:
    """Copies the host arrays behind `common`'s device inputs into their device buffers again."""
    for view in getattr(common, "_sim_views", ()):
        value, buf = view._sim_source
        arr = np.ascontiguousarray(value)
        if arr.nbytes:
            _check(_sim.cudaMemcpy(buf.ptr, arr.ctypes.data_as(ctypes.c_void_p),
                                   ctypes.c_size_t(arr.nbytes), H2D))


# DLPack type codes numpy represents (int, uint, float, bool); others (bfloat16) come back as a
# host TensorView of the same dtype, as a host build's field is (the lane compares its shape and
# dtype name, e.g. Mamba's replayssm scratch).
NUMPY_CODES = (0, 1, 2, 6)


def _host_view(view: Any) -> Any:
    """A host TensorView over a copy of a device TensorView, its dtype kept."""
    raw = np.ascontiguousarray(_to_host(view))  # the bytes, as unsigned integers of its width
    return _view(raw.ctypes.data if raw.size else None, (1, 0), raw.shape, view.dtype, raw)


def _to_host(view: Any) -> np.ndarray:
    """A numpy copy of a device TensorView."""
    code, bits, lanes = view.dtype
    dtype = np.dtype({0: "i", 1: "u", 2: "f", 6: "b"}.get(code, "u") + str(max(bits // 8, 1)))
    if code == 6:
        dtype = np.dtype(bool)
    n = 1
    for d in view.shape:
        n *= d
    item = dtype.itemsize
    # the span the view covers, then its elements by stride
    if n == 0:
        return np.zeros(view.shape, dtype)
    span = 1 + sum((s - 1) * st for s, st in zip(view.shape, view.strides))
    raw = np.empty(span, dtype)
    _check(_sim.cudaMemcpy(raw.ctypes.data_as(ctypes.c_void_p), ctypes.c_void_p(view.data_ptr),
                           ctypes.c_size_t(span * item), D2H))
    _counts["readbacks"] += 1
    return np.lib.stride_tricks.as_strided(raw, view.shape, [s * item for s in view.strides]).copy()


def enable(lib_path: str) -> Dict[str, int]:
    """Loads libsimcuda beside `lib_path` and patches the binding (see the module's text).
    Returns the live counters (device inputs made, tensors read back)."""
    global _sim
    # device_capability 0 means the platform's own answer: the CPU platform's (none) on vLLM's
    # side, so the simulated device reports 0.0 (kernels/sim/simcuda.cc); items that simulate a
    # GPU pass their capability explicitly. Read once, before the first call into libsimcuda.
    os.environ["ATTN_SIM_CAPABILITY"] = "0"
    import libattn
    from libattn.dlpack import TensorView
    _sim = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(lib_path)), "libsimcuda.so"))
    _sim.cudaGetErrorName.restype = ctypes.c_char_p
    if libattn.Library(lib_path).device_count() < 1:
        raise RuntimeError(f"{lib_path} sees no simulated device: build it with ATTN_DEVICE_SIM=ON")

    config_init = libattn.BuilderConfig.__init__

    def cuda_config(self: Any, *a: Any, **kw: Any) -> None:
        config_init(self, *a, **kw)
        self.device = "cuda"

    common_init = libattn.CommonMetadata.__init__

    def device_common(self: Any, *a: Any, **kw: Any) -> None:
        args: List[Any] = list(a)
        for i, name in enumerate(POSITIONAL[:len(args)]):
            args[i] = _to_device(args[i])
        # a runtime keeps a host mirror of what the library reads on the host (vLLM's *_cpu)
        for name, mirror in (("logits_indices_padded", "logits_indices_padded_cpu"),):
            if kw.get(name) is not None and kw.get(mirror) is None:
                kw[mirror] = kw[name]
        # vLLM 0.33 passes the per-request causal tensor as `causal` itself
        if "causal" in kw and not isinstance(kw["causal"], (bool, int, np.bool_, np.integer)):
            kw["causal"] = _to_device(kw["causal"])
        # vLLM on a GPU holds num_decode_draft_tokens beside its _cpu mirror
        if kw.get("num_decode_draft_tokens_cpu") is not None and \
                kw.get("num_decode_draft_tokens") is None:
            kw["num_decode_draft_tokens"] = kw["num_decode_draft_tokens_cpu"]
        for name in DEVICE_INPUTS:
            if name in kw:
                kw[name] = _to_device(kw[name])
        common_init(self, *args, **kw)
        self._sim_views = [v for v in list(args) + list(kw.values())
                           if getattr(v, "_sim_source", None) is not None]

    getitem = libattn.Metadata.__getitem__

    def host_item(self: Any, name: str) -> Any:
        v = getitem(self, name)
        if not isinstance(v, TensorView) or v.device[0] != CUDA:
            return v
        if v.dtype[0] in NUMPY_CODES:
            return _to_host(v)
        return _host_view(v)

    update = libattn.Builder.update_block_table

    def device_update(self: Any, metadata: Any, block_table: Any, slot_mapping: Any, *a: Any,
                      **kw: Any) -> Any:
        return update(self, metadata, _to_device(block_table), _to_device(slot_mapping), *a, **kw)

    def remembering(method: Any) -> Any:
        def call(self: Any, common: Any, *a: Any, **kw: Any) -> Any:
            self._sim_common = common
            md = method(self, common, *a, **kw)
            if isinstance(md, libattn.Metadata):  # the batch a later update resyncs
                md._sim_common = common
            return md
        return call

    draft_update = libattn.Builder.update_draft_decode_metadata

    def resynced_update(self: Any, metadata: Any, *a: Any, **kw: Any) -> Any:
        # the batch the metadata was built from (the builder's last one when unknown): an item
        # may call the update through another builder object than the one that built
        _resync(getattr(metadata, "_sim_common", None) or getattr(self, "_sim_common", None))
        return draft_update(self, metadata, *a, **kw)

    for name in ("build", "build_for_cudagraph_capture", "build_for_drafting"):
        setattr(libattn.Builder, name, remembering(getattr(libattn.Builder, name)))
    libattn.Builder.update_draft_decode_metadata = resynced_update
    libattn.BuilderConfig.__init__ = cuda_config
    libattn.CommonMetadata.__init__ = device_common
    libattn.Metadata.__getitem__ = host_item
    libattn.Builder.update_block_table = device_update
    return _counts
