"""QWEN4_EXP_QSA_TRITON and QWEN4_EXP_QSA_TRITON_ROCM: vLLM 0.33's Qwen4-exp QSA owner builders
(models/qwen4_exp/nvidia/qsa.py and models/qwen4_exp/amd/qsa.py: Qwen4ExpQSAMetadataBuilder,
FlashAttentionMetadataBuilder subclasses with the class level UNIFORM_BATCH) on a FullAttentionSpec
against libattn's backends of those names, on the builder items' batches: every field and the
builder's class answers (builder_items, pseudo-wrappers "Qwen4QSA" / "Qwen4QSARocm": the batches
carry no 0.33 model inputs and no DCP, as the wrapper items; vLLM's QSA layer refuses context
parallelism and non-causal attention).

The NVIDIA class sets only ``_cudagraph_support``: its body is put over the FlashAttention version
module of the batch (patches.flash_attn_module: FA2, FA3 with its AOT schedule, FA4), as the
FLASH_ATTN item's builder is, and the lane refuses to do so if vLLM's class grows anything else.
The AMD class (its own ``__init__``: Octave workspace, no metadata) is vLLM's unmodified, made and
built with the ROCm platform query simulated (fa_utils.current_platform answers is_rocm(), so
get_flash_attn_version() is None: no AOT schedule), and libattn's builder gets
config.platform_rocm=1. Both modules import their model module first (vLLM's qsa.py and model.py
import each other)."""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, Dict, Iterator, List

from .builder_items import builder_item
from .item import Item

#: the pseudo-wrapper of each item: (vLLM's package, libattn's backend name, ROCm)
QSA_WRAPPERS = {"Qwen4QSA": ("nvidia", "QWEN4_EXP_QSA_TRITON", False),
                "Qwen4QSARocm": ("amd", "QWEN4_EXP_QSA_TRITON_ROCM", True)}
#: what the NVIDIA class may hold besides what Python and ABCMeta put in every class body
_CLASS_BODY = {"__module__", "__qualname__", "__doc__", "__annotations__", "__parameters__",
               "__abstractmethods__", "_abc_impl", "__dict__", "__weakref__",
               "_cudagraph_support"}
_REBASED: Dict[int, Any] = {}


def _vllm_cls(wrapper: str) -> Any:
    pkg = QSA_WRAPPERS[wrapper][0]
    importlib.import_module(f"vllm.models.qwen4_exp.{pkg}.model")
    return importlib.import_module(f"vllm.models.qwen4_exp.{pkg}.qsa").Qwen4ExpQSAMetadataBuilder


def qsa_builder_cls(wrapper: str, fa_version: int) -> Any:
    """vLLM's builder class of the item: the AMD one as it is; the NVIDIA one's body over the
    FlashAttention version module's FlashAttentionMetadataBuilder."""
    cls = _vllm_cls(wrapper)
    if QSA_WRAPPERS[wrapper][2]:
        return cls
    extra = set(vars(cls)) - _CLASS_BODY
    if extra:
        raise RuntimeError(f"vLLM's NVIDIA Qwen4ExpQSAMetadataBuilder defines {sorted(extra)}: "
                           "the lane only re-bases a class whose body sets _cudagraph_support")
    if fa_version not in _REBASED:
        from .patches import flash_attn_module
        base = flash_attn_module(fa_version).FlashAttentionMetadataBuilder
        body = {k: v for k, v in vars(cls).items()
                if k not in ("__dict__", "__weakref__", "__abstractmethods__", "_abc_impl")}
        _REBASED[fa_version] = type(cls.__name__, (base,), body)
    return _REBASED[fa_version]


def lib_name(wrapper: str) -> str:
    return QSA_WRAPPERS[wrapper][1]


def is_rocm(wrapper: str) -> bool:
    return wrapper in QSA_WRAPPERS and QSA_WRAPPERS[wrapper][2]


@contextlib.contextmanager
def rocm_platform(wrapper: str) -> Iterator[None]:
    """fa_utils.current_platform answering is_rocm() (rocm_ragged.RocmPlatform) for the ROCm
    item, around its construction, builds and class queries; nothing for the other."""
    if not is_rocm(wrapper):
        yield
        return
    from vllm.v1.attention.backends import fa_utils
    from .rocm_ragged import RocmPlatform
    real = fa_utils.current_platform
    fa_utils.current_platform = RocmPlatform(real)
    try:
        yield
    finally:
        fa_utils.current_platform = real


def qwen4_qsa_items() -> List[Item]:
    items = []
    for wrapper, (_, name, _) in QSA_WRAPPERS.items():
        item = builder_item("FLASH_ATTN", wrapper)
        item.name = name
        items.append(item)
        # FlashAttentionMetadataBuilder's update_block_table, inherited
        item = builder_item("FLASH_ATTN", wrapper, update=True)
        item.name = f"{name} (update_block_table)"
        items.append(item)
        # capture builds with full CUDA graphs (issue 34), as the wrappers' capture items
        import dataclasses
        from .layer_variant_items import VARIANT_KINDS, _full_graphs_adjust, _wrapper_capture_path
        items.append(dataclasses.replace(builder_item("FLASH_ATTN", wrapper),
                                         name=f"{name} (capture builds)",
                                         adjust=_full_graphs_adjust, kinds=VARIANT_KINDS,
                                         path=_wrapper_capture_path("FLASH_ATTN", wrapper)))
    return items
