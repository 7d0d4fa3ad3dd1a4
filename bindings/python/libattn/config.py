"""The configuration structs: :class:`KvCacheSpec`, :class:`BuilderConfig`, :class:`PerLayerParams`.

Each is a plain Python object whose attributes are the C fields (same names, same defaults as
the header's ``*_INIT`` macros); ``to_struct()`` fills the ctypes mirror and keeps alive what it
points into. :class:`KvCacheSpec` and :class:`BuilderConfig` are dataclasses made from the
structs' field lists (``_generated.FIELDS``, generated from the header and
src/core/abi_fields.h): every field of the header is one, with its ``*_INIT`` default.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, make_dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _generated
from .enums import DeviceType
from .structs import attn_builder_config_t, attn_kv_cache_spec_t, attn_per_layer_params_t, new

__all__ = ["KvCacheSpec", "BuilderConfig", "PerLayerParams", "Device", "parse_device"]

Device = Union[str, Tuple[int, int]]


def parse_device(device: Device) -> Tuple[int, int]:
    """``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``(device_type, id)`` pair -> the pair."""
    if isinstance(device, tuple):
        return int(device[0]), int(device[1])
    if device == "cpu":
        return DeviceType.CPU, 0
    if device == "cuda":
        return DeviceType.CUDA, 0
    if isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
        return DeviceType.CUDA, int(device[5:])
    raise ValueError(f"device={device!r}: expected 'cpu', 'cuda', 'cuda:N' or (type, id)")


def _fields_of(struct: str, required: Tuple[str, ...],
               special: Dict[str, Optional[Tuple[Any, Any]]]) -> Tuple[list, Tuple[str, ...]]:
    """The dataclass fields of ``struct`` from its field list (``_generated.FIELDS``, from
    src/core/abi_fields.h and the header): ``required`` first, without a default, then every
    other field in the header's order with its ``*_INIT`` value as default; ``special``: the
    (type, default) of the fields this module converts itself, None for a field that is not one
    (``num_layers`` is ``len(layers)``). struct_size, extension and the reserved fields are not
    fields. Also returns the names of the plain ones (ints, copied as they are)."""
    ctypes_of = dict(getattr(_generated, struct)._fields_)
    head, tail, plain = [], [], []
    for name, kind, _, init in _generated.FIELDS[struct]:
        if kind in ("SIZE", "EXT", "RESERVED"):
            continue
        if name in special:
            if special[name] is not None:
                tail.append((name, special[name][0], special[name][1]))
            continue
        if kind == "SPECIAL" and ctypes_of[name] not in (ctypes.c_int32, ctypes.c_int64):
            raise TypeError(f"{struct}.{name} is SPECIAL in src/core/abi_fields.h: convert it in "
                            f"libattn/config.py")
        plain.append(name)
        if name in required:
            head.append((name, int))
        else:
            tail.append((name, int, field(default=init)))
    return head + tail, tuple(plain)


def _spec_to_struct(self) -> attn_kv_cache_spec_t:
    return new(attn_kv_cache_spec_t, **{n: int(getattr(self, n)) for n in _SPEC_PLAIN})


_spec_fields, _SPEC_PLAIN = _fields_of("attn_kv_cache_spec_t",
                                       ("block_size", "num_kv_heads", "head_size"), {})
#: ``attn_kv_cache_spec_t`` (vLLM's ``AttentionSpec``): block size, KV heads, head size, then
#: every other field of the header (generated from its field list).
KvCacheSpec = make_dataclass("KvCacheSpec", _spec_fields, namespace={
    "__module__": __name__, "to_struct": _spec_to_struct,
    "__doc__": """``attn_kv_cache_spec_t`` (vLLM's ``AttentionSpec``): block size, KV heads, head size.

    Every other field of the header's struct is a keyword argument of the same name with the
    header's default (``ATTN_KV_CACHE_SPEC_INIT``): the ``mamba_*`` fields and
    ``num_speculative_blocks`` (ABI 1.2) are ``MambaSpec``'s, read for ``KvCacheKind.MAMBA``
    specs by the Mamba-family backends; attn_c.h documents each. The fields are made from
    ``_generated.FIELDS`` (src/core/abi_fields.h), so a field added to the header is one here."""})


@dataclass
class PerLayerParams:
    """``attn_per_layer_params_t`` (vLLM's ``PerLayerParameters``)."""

    window_left: int = -1
    logits_soft_cap: Optional[float] = None
    sm_scale: float = 1.0
    has_sinks: bool = False

    def fill(self, s: attn_per_layer_params_t) -> None:
        s.struct_size = ctypes.sizeof(attn_per_layer_params_t)
        s.window_left = self.window_left
        s.has_logits_soft_cap = int(self.logits_soft_cap is not None)
        s.logits_soft_cap = float(self.logits_soft_cap or 0.0)
        s.sm_scale = float(self.sm_scale)
        s.has_sinks = int(self.has_sinks)

    @classmethod
    def from_struct(cls, s: attn_per_layer_params_t) -> "PerLayerParams":
        return cls(window_left=s.window_left,
                   logits_soft_cap=s.logits_soft_cap if s.has_logits_soft_cap else None,
                   sm_scale=s.sm_scale, has_sinks=bool(s.has_sinks))


def layer_array(layers: Sequence[PerLayerParams]) -> "ctypes.Array":
    """A C array of ``attn_per_layer_params_t`` for ``layers``."""
    arr = (attn_per_layer_params_t * max(len(layers), 1))()
    for s, layer in zip(arr, layers):
        layer.fill(s)
    return arr


def _config_to_struct(self) -> "ConfigStruct":
    """The filled ``attn_builder_config_t`` (with what it points into)."""
    s = new(attn_builder_config_t)
    keep: list = []
    for name in _CONFIG_PLAIN:
        setattr(s, name, int(getattr(self, name)))
    s.workspace_size = int(self.workspace_size)
    s.device.device_type, s.device.device_id = parse_device(self.device)
    if self.layers:
        arr = layer_array(self.layers)
        keep.append(arr)
        s.layers = ctypes.cast(arr, ctypes.POINTER(attn_per_layer_params_t))
        s.num_layers = len(self.layers)
    if self.workspace is not None:
        s.workspace = self.workspace
    if self.cudagraph_capture_sizes is not None:
        sizes = (ctypes.c_int32 * max(len(self.cudagraph_capture_sizes), 1))(
            *self.cudagraph_capture_sizes)
        keep.append(sizes)
        s.cudagraph_capture_sizes = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int32))
        s.num_cudagraph_capture_sizes = len(self.cudagraph_capture_sizes)
    if self.speculative_token_tree is not None:
        tree = self.speculative_token_tree.encode()
        if b"\0" in tree:
            raise ValueError("speculative_token_tree contains a NUL byte")
        keep.append(tree)
        s.speculative_token_tree = tree
    return ConfigStruct(s, keep)


_config_fields, _CONFIG_PLAIN = _fields_of(
    "attn_builder_config_t",
    ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "num_attention_heads"),
    {"device": (Device, "cpu"),
     "layers": (List[PerLayerParams], field(default_factory=list)),
     "num_layers": None,
     "allocator": None,  # callbacks: left to library.raw
     "workspace": (Optional[int], None),  # address of caller memory for the persistent buffers
     "workspace_size": (int, 0),
     "cudagraph_capture_sizes": (Optional[List[int]], None),
     "num_cudagraph_capture_sizes": None,
     "speculative_token_tree": (Optional[str], None)})
BuilderConfig = make_dataclass("BuilderConfig", _config_fields, namespace={
    "__module__": __name__, "to_struct": _config_to_struct,
    "__doc__": """``attn_builder_config_t``: the parts of vLLM's ``VllmConfig`` builders read. The four
    sizes are required; every other field of the header's struct is a keyword argument of the
    same name with the header's default (``ATTN_BUILDER_CONFIG_INIT``, vLLM's): attn_c.h
    documents each. ``device`` is ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a pair; ``layers`` a
    list of :class:`PerLayerParams`; ``workspace`` an address of caller memory;
    ``cudagraph_capture_sizes`` a list (None: vLLM's default); ``speculative_token_tree`` a
    string. The fields are made from ``_generated.FIELDS`` (src/core/abi_fields.h), so a field
    added to the header is one here."""})


class ConfigStruct:
    """An ``attn_builder_config_t`` and the arrays it points into."""

    def __init__(self, struct: attn_builder_config_t, keep: list) -> None:
        self.struct = struct
        self.keep = keep
        self.ref = ctypes.pointer(struct)
