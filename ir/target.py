"""What the scheduler may know about a device: a plain description each backend provides."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str                 # "cpu", "opencl", "cuda"
    simd_bytes: int           # vector register width (64 for AVX-512)
    cores: int                # threads that run a parallel loop at once
    l1_bytes: int = 32 * 1024
    l2_bytes: int = 1024 * 1024
    max_threads_per_block: int = 0   # gpu only
    local_memory_bytes: int = 0      # gpu shared/local memory per block
    features: str = ""        # cpu features / gpu architecture: part of every cache key
    # (op, dtype name) pairs the device computes only by a scalar call (a C library function, say):
    # a loop that uses one runs scalar, however it is scheduled
    scalar_ops: frozenset = frozenset()
