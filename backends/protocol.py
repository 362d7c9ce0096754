"""The backend protocol: each device gives its Runtime a render function (loop IR -> source text,
pure: a `Callable[[Kernel], str]`), a Compiler and a Device."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

import numpy as np

from ..ir.dtypes import DType
from ..ir.loop import Kernel
from ..ir.target import Target


@dataclass(eq=False)
class Buffer:
    """Memory on a device. `handle` is the device's own object (a numpy array on the cpu)."""
    device: str
    dtype: DType
    shape: tuple[int, ...]
    handle: Any
    address: int = 0   # raw pointer where the device has one (cpu), for cheap launches
    base: Optional["Buffer"] = None  # the buffer that owns the memory, for a reshaped alias
    # set on the owner once the memory is handed to the user (a numpy view): then it is never reused
    exported: bool = False
    # memory that one tensor alone holds, made for a DLPack export: shared with the consumer (whose
    # writes the tensor sees), never with another tensor
    private: bool = False
    # (pool, nbytes, memory): where the owner's memory goes when the owner dies (a pool's `track`)
    recycle: Optional[tuple] = None

    def __del__(self) -> None:
        # (cheaper than a weakref.finalize per buffer; aliases hold the owner, so it dies last)
        if self.recycle is not None and not self.exported:
            pool, nbytes, memory = self.recycle
            pool.give(nbytes, memory)

    @property
    def owner(self) -> "Buffer":
        return self.base if self.base is not None else self

    def reshaped(self, shape: tuple[int, ...], dtype: Optional[DType] = None) -> "Buffer":
        """The same memory seen with another shape of the same size (a row-major view), and
        with another dtype of the same total size where one is given (complex values as pairs
        of floats, and back)."""
        if dtype is None or dtype is self.dtype:
            return Buffer(self.device, self.dtype, tuple(shape), self.handle, self.address, self.owner)
        handle = self.handle
        if isinstance(handle, np.ndarray):   # (the cpu's flat array: seen as the new dtype too)
            nbytes = math.prod(shape) * dtype.itemsize
            handle = handle.view(np.uint8)[:nbytes].view(dtype.storage)
        return Buffer(self.device, dtype, tuple(shape), handle, self.address, self.owner)

    def seen_as(self, dtype: DType) -> "Buffer":
        """This buffer where it is of `dtype`, else its memory seen as `dtype`, a type of the same
        itemsize (bfloat16's memory arrives from numpy as uint16 bit patterns)."""
        return self if dtype is self.dtype else self.reshaped(self.shape, dtype)

    def __repr__(self) -> str:
        return f"Buffer({self.device}, {self.dtype.name}, {self.shape})"


class Compiler(Protocol):
    identity: str  # compiler and target versions/features: part of every cache key

    def compile(self, source: str, name: str) -> bytes: ...


Program = Callable[..., None]


class Device(Protocol):
    name: str
    target: Target
    # optional: how many loaded programs the runtime keeps for reuse (runtime.MAX_KERNELS if
    # absent); a device whose programs cost much memory keeps fewer
    # max_loaded_kernels: int
    # optional: True where buffers are host memory (to_numpy views them, no copy)
    # host_memory: bool

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> Buffer: ...
    def from_numpy(self, array: np.ndarray) -> Buffer: ...
    def to_numpy(self, buffer: Buffer) -> np.ndarray: ...
    def read(self, buffer: Buffer, start: int, count: int) -> np.ndarray: ...   # a flat range of elements
    def load(self, binary: bytes, name: str) -> Program: ...
    def launch(self, program: Program, buffers: list[Buffer], kernel: Kernel, sizes: tuple[int, ...] = ()) -> None: ...
    def run_opaque(self, op: Any, arg: Any, inputs: list[Buffer], out: Buffer) -> None: ...
    def synchronize(self) -> None: ...


@dataclass
class Stats:
    """Counters since the process started (`lt.stats()` returns them as a dict)."""
    kernels_launched: int = 0
    kernels_compiled: int = 0
    memory_cache_hits: int = 0
    disk_cache_hits: int = 0
    compile_seconds: float = 0.0
    transfers: int = 0          # copies between devices (Tensor.to)
    plan_cache_hits: int = 0    # realizes of a graph structure seen before (no passes ran)
    jit_captures: int = 0       # lt.jit: calls that ran the function and recorded its kernels
    jit_replays: int = 0        # lt.jit: calls that replayed recorded kernels (no Python body)
    tuned_kernels: int = 0      # kernels compiled with a schedule the tuner remembered (not the heuristic one)
    size_templates: int = 0     # graphs compiled once for a range of sizes (lazytensor/sizes.py)
    size_templates_refused: int = 0   # ... where the symbolic compile was refused (compiled per size)
    sized_plans: int = 0        # plans taken from a template, bound to a size (no compile)
