"""Python exceptions for libattn's error objects: one class per ``attn_status_code_t``."""
from __future__ import annotations

from typing import Dict, Type

from .enums import Status

__all__ = ["AttnError", "InvalidArgument", "Unsupported", "OutOfMemory", "CudaError",
           "NotFound", "AbiMismatch", "Busy", "InternalError", "error_for"]


class AttnError(Exception):
    """An error returned by libattn: ``code`` (a :class:`~libattn.Status`) and ``message`` (the
    library's text, which names the argument and the bad value)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"[{_name(code)}] {message}")
        self.code = Status(code) if code in Status._value2member_map_ else code
        self.message = message


class InvalidArgument(AttnError, ValueError):
    """``ATTN_ERR_INVALID_ARGUMENT``."""


class Unsupported(AttnError):
    """``ATTN_ERR_UNSUPPORTED``."""


class OutOfMemory(AttnError, MemoryError):
    """``ATTN_ERR_OUT_OF_MEMORY``."""


class CudaError(AttnError):
    """``ATTN_ERR_CUDA``: the message carries CUDA's."""


class NotFound(AttnError, LookupError):
    """``ATTN_ERR_NOT_FOUND``: an unknown backend or field, a missing library or symbol."""


class AbiMismatch(AttnError):
    """``ATTN_ERR_ABI_MISMATCH``: the library (or a plugin) serves another ABI."""


class Busy(AttnError):
    """``ATTN_ERR_BUSY``: a builder used by two threads at once."""


class InternalError(AttnError):
    """``ATTN_ERR_INTERNAL``."""


_BY_CODE: Dict[int, Type[AttnError]] = {
    Status.INVALID_ARGUMENT: InvalidArgument, Status.UNSUPPORTED: Unsupported,
    Status.OUT_OF_MEMORY: OutOfMemory, Status.CUDA: CudaError, Status.NOT_FOUND: NotFound,
    Status.ABI_MISMATCH: AbiMismatch, Status.BUSY: Busy, Status.INTERNAL: InternalError,
}


def _name(code: int) -> str:
    try:
        return Status(code).name.lower().replace("_", " ")
    except ValueError:
        return f"status {code}"


def error_for(code: int, message: str) -> AttnError:
    """The exception for ``code`` (its subclass when the code is known)."""
    return _BY_CODE.get(code, AttnError)(code, message)
