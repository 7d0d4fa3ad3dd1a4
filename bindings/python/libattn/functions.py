"""The signature of every function of ``include/attn_c.h``, for ctypes.

:data:`SIGNATURES` maps each exported name to ``(restype, argtypes)``; it is generated from the
header into :mod:`libattn._generated` (``scripts/gen_bindings.sh``). :class:`~libattn.Library`
resolves every one at load time (a missing symbol is an error naming it) and exposes them as
``library.raw.<name>``. ``tests/test_layout.py`` checks the names against ``abi/symbols.txt``.
Handles (``attn_error_t*``, ``attn_builder_t*``, ...) and streams are ``c_void_p``.
"""
from __future__ import annotations

from ._generated import SIGNATURES as _ALL, SINCE

#: the ABI 1.0 functions, resolved when the library is loaded
SIGNATURES = {name: sig for name, sig in _ALL.items() if SINCE[name] == (1, 0)}
#: the functions later minor versions added (``attn_backend_info``, ``attn_get_api`` in 1.3),
#: resolved on first use (:meth:`~libattn.Library.optional_function`)
OPTIONAL_SIGNATURES = {name: sig for name, sig in _ALL.items() if SINCE[name] != (1, 0)}

__all__ = ["SIGNATURES", "OPTIONAL_SIGNATURES", "SINCE"]
