"""libattn for Python: vLLM v1's attention metadata builders through libattn's C ABI (ctypes).

>>> import libattn
>>> lib = libattn.load()                      # $ATTN_LIBRARY, else the installed libattn.so.1
>>> spec = libattn.KvCacheSpec(block_size=16, num_kv_heads=8, head_size=128)
>>> config = libattn.BuilderConfig(256, 8192, 4096, 32, device_capability=90)
>>> batch = libattn.CommonMetadata(query_start_loc=[0, 1, 3], seq_lens=[5, 2],
...                                block_table=[[1, 0], [2, 0]], slot_mapping=[20, 32, 33])
>>> with lib.builder("FLASH_ATTN", spec, config) as b:
...     md = b.build(batch)
...     md["seq_lens"]
array([5, 2], dtype=int32)

Inputs: numpy arrays, lists, or any object with ``__dlpack__`` (torch, cupy, jax), without a
copy. Outputs: :class:`Metadata`, a mapping of vLLM's field names to numpy views, DLPack-able
:class:`TensorView` objects, and scalars. Errors: :class:`AttnError` subclasses carrying the
library's code and message.
"""
from .builder import Builder, build_groups
from .common_metadata import CommonMetadata
from .config import BuilderConfig, KvCacheSpec, PerLayerParams
from .dlpack import TensorView
from . import enums as _enums
from .errors import (AbiMismatch, AttnError, Busy, CudaError, InternalError, InvalidArgument,
                     NotFound, OutOfMemory, Unsupported)
from .library import ABI_VERSION, LIBRARY_ENV, Library, load
from .metadata import Metadata, StaleMetadata
from .persistent import BoundBatch, PersistentBatch, PersistentMetadata
from .persistent_groups import PersistentGroupStep
from .plugin import Plugin
from .registry import BackendInfo, BackendOrigin
from .utilities import (BatchSplit, Conv1dMetadata, LocalAttentionBatches, LocalAttentionOutputs,
                        PagedKvMetadata, UbatchSlice)

from ._generated import __version__  # include/attn_c.h's ATTN_VERSION_MAJOR.MINOR.PATCH

# every enumeration of include/attn_c.h (the generated list, _generated.ENUMS), NO_REORDER and
# PAD_SLOT_ID: enums.__all__, one list, so a new C enum is exported here without an edit
globals().update({_name: getattr(_enums, _name) for _name in _enums.__all__})

__all__ = [
    "load", "Library", "ABI_VERSION", "BackendInfo", "BackendOrigin", "LIBRARY_ENV", "Builder", "build_groups", "CommonMetadata", "Metadata",
    "StaleMetadata", "TensorView", "PersistentBatch", "BoundBatch", "PersistentMetadata", "PersistentGroupStep", "Plugin", "KvCacheSpec", "BuilderConfig", "PerLayerParams",
    "BatchSplit", "UbatchSlice", "LocalAttentionBatches", "LocalAttentionOutputs",
    "PagedKvMetadata", "Conv1dMetadata",
    "AttnError", "InvalidArgument", "Unsupported", "OutOfMemory", "CudaError", "NotFound",
    "AbiMismatch", "Busy", "InternalError",
    *(_name for _name in _enums.__all__ if _name != "BackendOrigin"),  # listed above
]
