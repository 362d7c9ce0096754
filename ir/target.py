"""What the scheduler may know about a device: a plain description each backend provides."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """The device as the scheduler and the pipeline see it: capabilities, never a name test."""
    name: str                 # "cpu", "opencl", "cuda": for messages and cache keys only
    simd_bytes: int           # vector register width (64 for AVX-512)
    cores: int                # threads that run a parallel loop at once
    l1_bytes: int = 32 * 1024
    # architectural vector registers (16 on x86-64 with AVX2, 32 with AVX-512 or on aarch64): a
    # register tile keeps its accumulators in them, and one that does not fit spills every step
    vector_registers: int = 16
    l2_bytes: int = 1024 * 1024      # per core (the packing heuristic keeps a panel in half of it)
    max_threads_per_block: int = 0   # gpu only (0: none stated)
    local_memory_bytes: int = 0      # a kernel's local arrays: a gpu block's shared memory, a cpu thread's stack share
    # the lowering computes a reduction once per iteration of the output loops it depends on (the
    # cpu's loop nests), so fusion may keep a reduction read broadcast inside its consumer
    hoists_reductions: bool = False
    features: str = ""        # cpu features / gpu architecture: part of every cache key
    # (op, dtype name) pairs the device computes only by a scalar call (a C library function, say):
    # a loop that uses one runs scalar, however it is scheduled
    scalar_ops: frozenset = frozenset()
    # kernels run as a grid of thread blocks (gpu-style schedules: Bind, local memory); else as
    # loop nests on cores with SIMD vectors (cpu-style schedules: Parallel, Vectorize)
    launches_blocks: bool = False
    # a block-launched device whose local memory is ordinary memory (OpenCL's
    # CL_DEVICE_LOCAL_MEM_TYPE GLOBAL: a cpu behind OpenCL, as PoCL is): its blocks gain nothing
    # from sharing work through it, and run one after another on its cores
    local_memory_emulated: bool = False
