"""The lane's builder caches: the most recently used builders of each setting, kept across
batches (both sides' builders keep state between builds, and making one can cost seconds).
A construction that raised is remembered too, so a refused setting is refused again at once."""
from __future__ import annotations

from typing import Any, Callable


def cached(ctx: Any, store: str, key: Any, make: Callable[[], Any], cap: int) -> Any:
    """``make()``'s value for ``key`` in ctx's dict ``store``, keeping the ``cap`` most recently
    used keys (the oldest dropped first); a construction's exception is raised again for its key."""
    cache = ctx.__dict__.setdefault(store, {})
    if key in cache:
        cache[key] = cache.pop(key)
    else:
        while len(cache) >= cap:
            cache.pop(next(iter(cache)))
        try:
            cache[key] = (make(), None)
        except Exception as e:
            cache[key] = (None, e)
    value, err = cache[key]
    if err is not None:
        raise err
    return value
