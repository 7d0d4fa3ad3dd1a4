"""Finding, loading and checking libattn: :class:`Library` and :func:`load`."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import List, Optional, Tuple

from . import _generated
from .enums import Status
from .errors import NotFound, error_for
from .functions import SIGNATURES
from .native import attach
from .registry import RegistryMixin
from .utilities import UtilitiesMixin

__all__ = ["Library", "load", "ABI_VERSION", "LIBRARY_ENV", "DEFAULT_NAME"]

#: the ABI this binding is generated from (major, minor): include/attn_c.h's
ABI_VERSION = (_generated.ATTN_VERSION_MAJOR, _generated.ATTN_VERSION_MINOR)
LIBRARY_ENV = "ATTN_LIBRARY"  #: environment variable naming the library
DEFAULT_NAME = "libattn.so.1"  #: what the system loader searches for last


class _Raw:
    """Every ABI function as a ctypes function: ``library.raw.attn_build(...)``."""


#: where a wheel (``pip install .`` in a libattn checkout, or of its sdist) puts the library:
#: inside the package
BUNDLED_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", DEFAULT_NAME)


def _locate(path: Optional[str]) -> Tuple[str, str]:
    """(what to load, where it came from: "argument", "env", "bundled" or "system")."""
    if path:
        return os.fspath(path), "argument"
    if os.environ.get(LIBRARY_ENV):
        return os.environ[LIBRARY_ENV], "env"
    for bundled in _bundled_candidates():
        if os.path.isfile(bundled):
            return bundled, "bundled"
    return ctypes.util.find_library("attn") or DEFAULT_NAME, "system"


def _bundled_candidates() -> List[str]:
    """BUNDLED_PATH, then _lib/ of the package's other folders: an editable install
    (pip install -e) imports the sources but installs the library under site-packages."""
    package = sys.modules.get(__package__ or "")
    others = [os.path.join(d, "_lib", DEFAULT_NAME) for d in getattr(package, "__path__", [])]
    return [BUNDLED_PATH] + [c for c in others if c != BUNDLED_PATH]


def _not_found_message(path: str, origin: str, error: OSError) -> str:
    if origin == "argument":
        return f"cannot load libattn from '{path}': {error}"
    if origin == "env":
        return (f"cannot load libattn from ${LIBRARY_ENV}='{path}': {error} (unset {LIBRARY_ENV} "
                f"to use the library bundled with the package or the installed one)")
    if origin == "bundled":
        return (f"cannot load the libattn bundled with the package, '{path}': {error} "
                f"(reinstall the package, or set {LIBRARY_ENV} to a libattn.so.1)")
    return (f"libattn not found; tried, in order: ${LIBRARY_ENV} (not set), the library bundled "
            f"with the package ({', '.join(_bundled_candidates())}: absent, this installation "
            f"has none), and "
            f"'{path}' through the system loader ({error}). Fix: install the package with its "
            f"library (pip install . in a libattn checkout, or pip install of its sdist "
            f"libattn-<version>.tar.gz, builds and bundles it), or point {LIBRARY_ENV} at a "
            f"libattn.so.1 (e.g. build/libattn.so.1 of a CMake build), or install libattn where "
            f"the loader finds it (cmake --install, ldconfig)")


class Library(RegistryMixin, UtilitiesMixin):
    """A loaded libattn.

    ``Library(path)`` loads ``path``; without one, in order: ``$ATTN_LIBRARY`` when set (it
    overrides everything else), else the library bundled in the package by a wheel
    (:data:`BUNDLED_PATH`, ``libattn/_lib/libattn.so.1``, what ``pip install .`` builds; for
    an editable install, ``_lib/`` of the package's other ``__path__`` folders) when present,
    else the installed library (``ctypes.util.find_library("attn")``, else
    ``libattn.so.1`` through the system loader). :attr:`origin` says which one was loaded
    (``"argument"``, ``"env"``, ``"bundled"``, ``"system"``). :attr:`native` is the compiled
    fast path over this same library when ``libattn._native`` is available (None otherwise:
    every call through ctypes); see :mod:`libattn.native`.
    Every ABI function is resolved at load time and the version is checked with
    ``attn_check_version`` against :data:`ABI_VERSION` (same major, minor at least as new).

    Raises :class:`~libattn.NotFound` when the library or a symbol is missing (without a
    path, the message names the three places tried and how to provide one) and
    :class:`~libattn.AbiMismatch` for an incompatible version.
    """

    def __init__(self, path: Optional[str] = None) -> None:
        self.path, self.origin = _locate(path)
        try:
            self._dll = ctypes.CDLL(self.path)
        except OSError as e:
            raise NotFound(Status.NOT_FOUND, _not_found_message(self.path, self.origin, e)) from None
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
        #: the compiled fast path's ``Api`` over this library (``libattn._native``), or None:
        #: the ctypes layer alone (see :mod:`libattn.native`, ``$LIBATTN_NATIVE``)
        self.native = attach(self)

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
    the default one: ``$ATTN_LIBRARY`` when set, else the library bundled in the package
    (``libattn/_lib/libattn.so.1``, put there by ``pip install .`` of a checkout) when
    present, else the installed ``libattn.so.1`` through the system loader. When none loads,
    :class:`~libattn.NotFound` names the three places tried and the fix."""
    global _default
    if path is not None:
        return Library(path)
    with _default_lock:
        if _default is None:
            _default = Library()
        return _default


