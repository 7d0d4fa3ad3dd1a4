""":class:`Plugin`: a library of backends loaded with ``attn_plugin_load``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from .library import Library

__all__ = ["Plugin"]


class Plugin:
    """A loaded plugin; its backends are in the registry until :meth:`unload`. Unloading
    refuses (:class:`~libattn.Busy`) while a builder of its backends exists; a plugin still
    loaded when this object is garbage collected stays loaded (unloading then could pull code
    from under a builder)."""

    def __init__(self, lib: "Library", handle: int, path: str) -> None:
        self._lib = lib
        self._handle: Optional[int] = handle
        self.path = path

    @property
    def name(self) -> str:
        """``attn_plugin_name``: the name the plugin gives itself."""
        if self._handle is None:
            raise ValueError("plugin is unloaded")
        return self._lib.raw.attn_plugin_name(self._handle).decode()

    @property
    def loaded(self) -> bool:
        return self._handle is not None

    def unload(self) -> None:
        """``attn_plugin_unload``: removes its backends and closes the library (idempotent)."""
        if self._handle is not None:
            self._lib.check(self._lib.raw.attn_plugin_unload(self._handle))
            self._handle = None

    def __enter__(self) -> "Plugin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unload()

    def __repr__(self) -> str:
        return f"Plugin({self.name!r})" if self._handle is not None else "Plugin(unloaded)"
