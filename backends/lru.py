"""A bounded, thread-safe mapping that forgets its least recently used entries.

What a long-running process accumulates per shape (compiled kernels, realize plans) lives in
these, so a process that keeps meeting new shapes stays bounded in memory.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, Optional, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    """At most `capacity` entries (and, given `weigh`, at most `max_weight` of their weights in
    all: bytes, say); `get` and `put` mark an entry used, and a `put` past either bound drops
    the entries used longest ago (never the one just put). Safe to use from several threads."""

    def __init__(self, capacity: int, weigh: Optional[Callable[[V], int]] = None, max_weight: int = 0) -> None:
        self.capacity = capacity
        self.weigh, self.max_weight, self.weight = weigh, max_weight, 0
        self._entries: "OrderedDict[Hashable, V]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Optional[V]:
        # (no lock: each of these is one atomic step of the C OrderedDict, and the only thing a
        # `put` in another thread can do between them is drop the entry: then it stays dropped)
        value = self._entries.get(key)
        if value is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:
                pass
        return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            if self.weigh is not None:
                old = self._entries.get(key)
                self.weight += self.weigh(value) - (0 if old is None else self.weigh(old))
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > max(1, self.capacity) or (
                    self.weigh is not None and self.weight > self.max_weight and len(self._entries) > 1):
                _, dropped = self._entries.popitem(last=False)
                if self.weigh is not None:
                    self.weight -= self.weigh(dropped)

    def pop(self, key: Hashable) -> Optional[V]:
        """Forget `key`'s entry; its value, or None."""
        with self._lock:
            value = self._entries.pop(key, None)
            if value is not None and self.weigh is not None:
                self.weight -= self.weigh(value)
            return value

    def values(self) -> list[V]:
        """The values, least recently used first."""
        with self._lock:
            return list(self._entries.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.weight = 0

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)
