"""The compiled fast path, ``libattn._native`` (issue 35), or the ctypes layer: which one a
:class:`~libattn.Library` uses.

``libattn._native`` is a nanobind extension that the wheel (``pip install .``, the sdist) and a
CMake build compile when nanobind is installed; it links no libattn and calls, through their
addresses, the functions of the library this package loaded with ctypes (``$ATTN_LIBRARY``, a
path given to :class:`~libattn.Library`, the bundled one: the extension follows the choice). It
covers the per-step calls: :meth:`~libattn.Library.split_decodes_and_prefills`,
:meth:`~libattn.Library.reorder_batch_to_split_decodes_and_prefills`,
:meth:`~libattn.Library.make_kv_sharing_fast_prefill_common_attn_metadata_ex` and the persistent
step (:meth:`~libattn.BoundBatch.build`, :meth:`~libattn.BoundBatch.stepper`), the grouped
build (:func:`~libattn.build_groups`) and the persistent grouped step
(:meth:`~libattn.PersistentGroupStep.build`). Every other call is the ctypes layer's, and so is
everything without the extension.

``$LIBATTN_NATIVE``: unset (or ``auto``) uses the extension when it imports; ``0`` never uses
it (the ctypes layer alone, as without the extension); ``1`` requires it
(:class:`ImportError` when it does not import). ``$LIBATTN_NATIVE_MODULE`` names the extension's
file when it is not inside the package (a CMake build's ``python/libattn/_native*.so``; ctest
sets it).
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional

from . import _generated

if TYPE_CHECKING:
    from .library import Library

__all__ = ["NATIVE_ENV", "NATIVE_MODULE_ENV", "native_module", "attach"]

NATIVE_ENV = "LIBATTN_NATIVE"  #: "0": ctypes only; "1": the extension required; else auto
NATIVE_MODULE_ENV = "LIBATTN_NATIVE_MODULE"  #: the extension's file, outside the package

#: the C functions the extension calls (the ABI 1.7 fast prefill and attn_build_groups may be
#: absent: then their calls take the ctypes layer)
FUNCTIONS = ("attn_build", "attn_error_destroy", "attn_metadata_get",
             "attn_split_decodes_and_prefills", "attn_reorder_batch_to_split_decodes_and_prefills",
             "attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex", "attn_build_groups")

_module: Any = None  # the imported extension (None: not tried yet; False: unavailable)


def mode() -> str:
    """``"off"``, ``"required"`` or ``"auto"``, from ``$LIBATTN_NATIVE``."""
    v = os.environ.get(NATIVE_ENV, "").strip().lower()
    if v in ("0", "off", "no", "false"):
        return "off"
    if v in ("1", "on", "yes", "true", "required"):
        return "required"
    return "auto"


def _import() -> ModuleType:
    path = os.environ.get(NATIVE_MODULE_ENV)
    if path:
        spec = importlib.util.spec_from_file_location(f"{__package__}._native", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"${NATIVE_MODULE_ENV}={path!r} is not an extension module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[spec.name] = module
        return module
    from . import _native  # type: ignore[attr-defined]
    return _native


def native_module() -> Optional[ModuleType]:
    """The extension module, or None (``$LIBATTN_NATIVE=0``, or it does not import in auto
    mode). Raises ImportError when ``$LIBATTN_NATIVE=1`` and it does not import, or was built
    from another ABI version than this package's."""
    global _module
    m = mode()
    if m == "off":
        return None
    if _module is None:
        try:
            module = _import()
            built = (module.ATTN_VERSION_MAJOR, module.ATTN_VERSION_MINOR)
            mine = (_generated.ATTN_VERSION_MAJOR, _generated.ATTN_VERSION_MINOR)
            if built != mine:
                raise ImportError(f"libattn._native was built from ABI {built[0]}.{built[1]}, "
                                  f"this package is {mine[0]}.{mine[1]}: reinstall the package")
            _module = module
        except ImportError as e:
            _module = False
            _module_error[0] = e
    if _module is False:
        if m == "required":
            raise ImportError(f"${NATIVE_ENV}=1 but libattn._native does not import: "
                              f"{_module_error[0]}") from _module_error[0]
        return None
    return _module


_module_error: list = [None]


def _fast_prefill_result(lib: "Library", owned: int, data: bytes, common: Any, out: Any,
                         out_cpu: Any) -> Any:
    """The extension's fast prefill made a new batch: the CommonMetadata over it (as the
    ctypes layer's make_kv_sharing_fast_prefill_common_attn_metadata_ex)."""
    from .common_metadata import CommonMetadata
    from .metadata import Metadata
    from .structs import attn_common_metadata_t
    batch = attn_common_metadata_t.from_buffer_copy(data)
    md = Metadata(lib, owned, True, (common, out, out_cpu))
    return CommonMetadata._from_struct(batch, md._anchor())


def attach(lib: "Library") -> Any:
    """The extension's ``Api`` for ``lib`` (None without it), its per-step calls set on ``lib``
    in place of the ctypes layer's methods."""
    module = native_module()
    if module is None:
        return None
    from .utilities import BatchSplit, UtilitiesMixin
    addresses = {}
    for name in FUNCTIONS:
        try:
            addresses[name] = ctypes.cast(getattr(lib._dll, name), ctypes.c_void_p).value
        except AttributeError:
            addresses[name] = None  # a library older than the function: the ctypes layer's call
    # lib's own methods bound to it: the Api is lib's attribute, a cycle the collector clears
    api = module.Api(
        addresses, lib.check, BatchSplit,
        functools.partial(UtilitiesMixin.split_decodes_and_prefills, lib),
        functools.partial(UtilitiesMixin.reorder_batch_to_split_decodes_and_prefills, lib),
        functools.partial(UtilitiesMixin.make_kv_sharing_fast_prefill_common_attn_metadata_ex,
                          lib),
        functools.partial(_fast_prefill_result, lib))
    # the extension's calls as instance attributes, in place of the class's methods: one call
    # per use (split and fast prefill: builtins taking CPython's vectorcall arguments as they
    # come; anything they do not take goes to the ctypes layer's method)
    fast = api.fast_calls()
    lib.split_decodes_and_prefills = fast["split_decodes_and_prefills"]  # type: ignore[method-assign]
    lib.reorder_batch_to_split_decodes_and_prefills = (  # type: ignore[method-assign]
        api.reorder_batch_to_split_decodes_and_prefills)
    lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex = (  # type: ignore[method-assign]
        fast["make_kv_sharing_fast_prefill_common_attn_metadata_ex"])
    return api
