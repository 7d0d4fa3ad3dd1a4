"""The signature of every function of ``include/attn_c.h``, for ctypes.

:data:`SIGNATURES` maps each exported name to ``(restype, argtypes)``; it is generated from the
header into :mod:`libattn._generated` (``scripts/gen_bindings.sh``). :class:`~libattn.Library`
resolves every one at load time (a missing symbol is an error naming it) and exposes them as
``library.raw.<name>``. ``tests/test_layout.py`` checks the names against ``abi/symbols.txt``.
Handles (``attn_error_t*``, ``attn_builder_t*``, ...) and streams are ``c_void_p``.
"""
from __future__ import annotations

from ._generated import SIGNATURES

__all__ = ["SIGNATURES"]
