"""Finding, loading and checking libattn: :class:`Library` and :func:`load`."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from typing import Optional, Tuple

from . import _generated
from .enums import Status
from .errors import NotFound, error_for
from .functions import SIGNATURES
from .registry import RegistryMixin
from .utilities import UtilitiesMixin

__all__ = ["Library", "load", "ABI_VERSION", "LIBRARY_ENV", "DEFAULT_NAME"]

#: the ABI this binding is generated from (major, minor): include/attn_c.h's
ABI_VERSION = (_generated.ATTN_VERSION_MAJOR, _generated.ATTN_VERSION_MINOR)
LIBRARY_ENV = "ATTN_LIBRARY"  #: environment variable naming the library
DEFAULT_NAME = "libattn.so.1"  #: what the system loader searches for last


class _Raw:
    """Every ABI function as a ctypes function: ``library.raw.attn_build(...)``."""


def _locate(path: Optional[str]) -> str:
    if path:
        return os.fspath(path)
    if os.environ.get(LIBRARY_ENV):
        return os.environ[LIBRARY_ENV]
    return ctypes.util.find_library("attn") or DEFAULT_NAME


class Library(RegistryMixin, UtilitiesMixin):
    """A loaded libattn.

    ``Library(path)`` loads ``path``; without one, ``$ATTN_LIBRARY``, else the installed
    library (``ctypes.util.find_library("attn")``, else ``libattn.so.1`` through the loader).
    Every ABI function is resolved at load time and the version is checked with
    ``attn_check_version`` against :data:`ABI_VERSION` (same major, minor at least as new).

    Raises :class:`~libattn.NotFound` when the library or a symbol is missing and
    :class:`~libattn.AbiMismatch` for an incompatible version.
    """

    def __init__(self, path: Optional[str] = None) -> None:
        self.path = _locate(path)
        try:
            self._dll = ctypes.CDLL(self.path)
        except OSError as e:
            raise NotFound(Status.NOT_FOUND, f"cannot load libattn from '{self.path}': {e}") from None
        self.raw = _Raw()
        for name, (restype, argtypes) in SIGNATURES.items():
            try:
                fn = getattr(self._dll, name)
            except AttributeError:
                raise NotFound(Status.NOT_FOUND,
                               f"'{self.path}' has no symbol {name} (not libattn {ABI_VERSION[0]}."
                               f"{ABI_VERSION[1]}?)") from None
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self.raw, name, fn)
        err = self.raw.attn_check_version(*ABI_VERSION)
        if err:
            self.check(err)

    # ---- errors ---------------------------------------------------------------------------
    def check(self, err: Optional[int]) -> None:
        """Raises the exception for an ``attn_error_t*`` (destroying it); nothing for NULL."""
        if not err:
            return
        code = int(self.raw.attn_error_code(err))
        message = (self.raw.attn_error_message(err) or b"").decode(errors="replace")
        self.raw.attn_error_destroy(err)
        raise error_for(code, message)

    def status_string(self, code: int) -> str:
        """``attn_status_string``: the library's text for a status code."""
        return self.raw.attn_status_string(int(code)).decode()

    # ---- version and devices ---------------------------------------------------------------
    @property
    def version(self) -> Tuple[int, int, int]:
        """``attn_get_version``: (major, minor, patch) of the loaded library."""
        v = [ctypes.c_uint32() for _ in range(3)]
        self.raw.attn_get_version(*(ctypes.byref(x) for x in v))
        return tuple(int(x.value) for x in v)  # type: ignore[return-value]

    def check_version(self, major: int, minor: int) -> None:
        """``attn_check_version``: raises :class:`~libattn.AbiMismatch` unless the library
        serves ABI ``major.minor``."""
        self.check(self.raw.attn_check_version(major, minor))

    def device_count(self, device_type: int = 2) -> int:
        """``attn_device_count``: visible devices of a type (CUDA by default; 0 without)."""
        n = ctypes.c_int32()
        self.check(self.raw.attn_device_count(int(device_type), ctypes.byref(n)))
        return int(n.value)

    def __repr__(self) -> str:
        return f"Library({self.path!r}, version={'.'.join(map(str, self.version))})"


_default: Optional[Library] = None
_default_lock = threading.Lock()


def load(path: Optional[str] = None) -> Library:
    """A :class:`Library`: ``load(path)`` loads that one; ``load()`` loads (once) and returns
    the default one (``$ATTN_LIBRARY`` or the installed library)."""
    global _default
    if path is not None:
        return Library(path)
    with _default_lock:
        if _default is None:
            _default = Library()
        return _default


