"""Freed device memory kept by size for reuse, shared by every backend."""
from __future__ import annotations

import threading
from typing import Any


class MemoryPool:
    """Freed buffers by size, reused so a large output does not page-fault (cpu) or go through
    the driver's allocator (gpu) every time: a fresh 64 MB array costs ~16k page faults on first
    touch. Memory the user may still hold (exported) never comes back here."""

    MAX_BYTES = 1 << 30  # freed memory kept at most; beyond it, freed buffers are released
    PER_SIZE = 4

    def __init__(self) -> None:
        self.free: dict[int, list[Any]] = {}
        self.bytes = 0
        self.lock = threading.Lock()

    def take(self, nbytes: int) -> Any | None:
        with self.lock:
            handles = self.free.get(nbytes)
            if not handles:
                return None
            self.bytes -= nbytes
            return handles.pop()

    def track(self, buffer: Any, nbytes: int, memory: Any) -> Any:
        """`buffer`'s memory comes back here when the buffer dies, unless it was exported."""
        buffer.recycle = (self, nbytes, memory)
        return buffer

    def give(self, nbytes: int, memory: Any) -> None:
        with self.lock:
            handles = self.free.setdefault(nbytes, [])
            if len(handles) < self.PER_SIZE and self.bytes + nbytes <= self.MAX_BYTES:
                handles.append(memory)
                self.bytes += nbytes
