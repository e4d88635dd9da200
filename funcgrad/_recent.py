"""The one eviction rule of funcgrad's in-process caches: the entry used longest ago goes first.

Each table that keeps compiled things in this process is a `Recent`: the kernels by their
text (backend/cache.py, fg.config.max_kernels), the library loops by value
(optimize/runners.py), a tiered function's hot signatures (tiering.py) and a compiled vjp's
plans (api/vjp_jit.py, fg.config.jit_max_signatures). fg.jit's own table of signatures
follows the same rule approximately, with a CLOCK (api/jit.py `_remember`): its hot call only
sets a flag, where moving the entry would cost a tenth of the call. Locking is the caller's.
"""
from __future__ import annotations

__all__ = ["Recent"]


class Recent:
    """A mapping that keeps at most `limit` entries (an int, or a function returning one, read
    whenever it grows), dropping the least recently used; `get` and `put` count as use."""

    __slots__ = ("_items", "_limit")

    def __init__(self, limit):
        self._items: dict = {}          # least recently used first
        self._limit = limit

    def get(self, key, default=None):
        value = self._items.pop(key, _ABSENT)
        if value is _ABSENT:
            return default
        self._items[key] = value        # (now the most recently used)
        return value

    def put(self, key, value):
        """Keep value under key, as the most recently used; entries past the limit go."""
        self._items.pop(key, None)
        self._items[key] = value
        limit = self._limit() if callable(self._limit) else self._limit
        while len(self._items) > limit:
            try:       # (tiering reads its table unlocked: another thread may move an entry)
                self._items.pop(next(iter(self._items)), None)
            except (StopIteration, RuntimeError):
                break

    def pop(self, key, default=None):
        return self._items.pop(key, default)

    def clear(self):
        self._items.clear()

    def items(self):
        return self._items.items()

    def values(self):
        return self._items.values()

    def __contains__(self, key):
        return key in self._items

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


_ABSENT = object()
