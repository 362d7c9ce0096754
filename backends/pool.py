"""Freed device memory kept by size for reuse, shared by every backend."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class MemoryPool:
    """Freed buffers by size, reused so a large output does not page-fault (cpu) or go through
    the driver's allocator (gpu) every time: a fresh 64 MB array costs ~16k page faults on first
    touch. Memory the user may still hold (exported) never comes back here.

    Bounded two ways, the sizes freed longest ago going first: at most MAX_BYTES in all, and at
    most MAX_SIZES distinct sizes. A training loop frees the same few dozen sizes every step, so
    they stay; a process meeting ever new shapes keeps only the recent ones (kept by bytes alone,
    it would fill up with sizes that never come back and then stop pooling the ones that do).
    Of one size it keeps PER_SIZE_BYTES' worth (at least PER_SIZE_MIN buffers, at most
    PER_SIZE_MAX): a step of a small GPT has some 30 activations and gradients of 2048x128
    floats alive at once; kept 4 of each size, 16 of them page-faulted again every step, 3-4 ms
    of a 60 ms step (Zen 3). A burst of one size freed at once keeps no more than that."""

    MAX_BYTES = 1 << 30
    MAX_SIZES = 256
    PER_SIZE_BYTES = 64 << 20
    PER_SIZE_MIN = 4
    PER_SIZE_MAX = 64

    def __init__(self) -> None:
        self.free: "OrderedDict[int, list[Any]]" = OrderedDict()   # by size, least recently freed first
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

    def per_size(self, nbytes: int) -> int:
        """How many freed buffers of `nbytes` bytes are kept."""
        return max(self.PER_SIZE_MIN, min(self.PER_SIZE_MAX, self.PER_SIZE_BYTES // max(1, nbytes)))

    def give(self, nbytes: int, memory: Any) -> None:
        if nbytes > self.MAX_BYTES:
            return
        with self.lock:
            handles = self.free.get(nbytes)
            if handles is None:
                handles = self.free[nbytes] = []
            self.free.move_to_end(nbytes)
            if len(handles) >= self.per_size(nbytes):
                return
            handles.append(memory)
            self.bytes += nbytes
            while self.bytes > self.MAX_BYTES or len(self.free) > self.MAX_SIZES:
                size, oldest = next(iter(self.free.items()))
                self.bytes -= size * len(oldest)
                del self.free[size]
