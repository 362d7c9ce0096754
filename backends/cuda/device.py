"""Device for CUDA GPUs through pycuda (the only module that imports it); kernels are compiled
by nvcc (compiler.py) for the GPU's own architecture and loaded from the cubin."""
from __future__ import annotations

import atexit
import functools
import math
import threading
from typing import Any

import numpy as np
import pycuda.driver as drv

from ...ir.dtypes import DType, to_dtype
from ...ir.loop import Kernel
from ...ir.ops import Op
from ...ir.rules import NUMPY_REFERENCE
from ...ir.target import Target
from ..pool import MemoryPool
from ..protocol import Buffer, Program
from .compiler import NVCCCompiler, nvcc_path


@functools.lru_cache(maxsize=None)
def _count() -> int:
    try:
        drv.init()
        return drv.Device.count()
    except drv.Error:  # no driver or no GPU
        return 0


def device_names() -> list[str]:
    if nvcc_path() is None:
        return []  # kernels could not be compiled
    return [f"cuda:{i}" for i in range(_count())]


class _Function:
    """A kernel of a loaded module; the module (the code) lives as long as this does."""

    def __init__(self, module: Any, name: str) -> None:
        self.module = module
        self.function = module.get_function(name)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.function(*args, **kwargs)


class CUDADevice:
    def __init__(self, index: int) -> None:
        drv.init()
        self.name = f"cuda:{index}"
        self.cu_device = drv.Device(index)
        self.context = self.cu_device.retain_primary_context()
        self.context.push()
        atexit.register(self.context.pop)  # pycuda warns at exit about a context left pushed
        self._threads = threading.local()   # (where this device's context is current)
        self._threads.current = True
        attr = drv.device_attribute
        major, minor = self.cu_device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.target = Target("cuda", simd_bytes=0,
                             cores=self.cu_device.get_attribute(attr.MULTIPROCESSOR_COUNT),
                             max_threads_per_block=self.cu_device.get_attribute(attr.MAX_THREADS_PER_BLOCK),
                             local_memory_bytes=self.cu_device.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK),
                             features=f"{self.cu_device.name()} | {self.arch} | driver {drv.get_driver_version()}")
        self._memory = MemoryPool()

    def describe(self) -> str:
        return f"{self.name} ({self.cu_device.name()})"

    def compiler(self) -> NVCCCompiler:
        return NVCCCompiler(self.describe(), self.arch, self.target.features)

    # ---- memory ---------------------------------------------------------------------------

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> Buffer:
        nbytes = max(1, math.prod(shape)) * dtype.itemsize  # >= 1 element: masked loads read index 0
        self.current()
        handle = self._memory.take(nbytes)
        if handle is None:
            try:
                handle = drv.mem_alloc(nbytes)
            except drv.MemoryError:
                free, total = drv.mem_get_info()
                raise MemoryError(f"{self.describe()}: cannot allocate {nbytes} bytes for {dtype.name}{list(shape)} "
                                  f"({free} of {total} bytes free)") from None
        return self._memory.track(Buffer(self.name, dtype, tuple(shape), handle, int(handle)), nbytes, handle)

    def from_numpy(self, array: np.ndarray) -> Buffer:
        buffer = self.allocate(array.shape, to_dtype(array.dtype))   # (makes the context current)
        if array.size:
            drv.memcpy_htod(buffer.handle, np.ascontiguousarray(array))
        return buffer

    def to_numpy(self, buffer: Buffer, writeable: bool = False) -> np.ndarray:
        out = np.empty(buffer.shape, buffer.dtype.np)
        self.current()
        if out.size:
            drv.memcpy_dtoh(out, buffer.handle)  # synchronous: waits for the kernels before
        out.flags.writeable = writeable
        return out

    # ---- kernels --------------------------------------------------------------------------

    def load(self, binary: bytes, name: str) -> Program:
        self.current()
        return _Function(drv.module_from_buffer(binary), name)

    def launch(self, program: Program, buffers: list[Buffer], kernel: Kernel) -> None:
        if kernel.blocks == 0:
            return  # nothing to compute (an empty output)
        self.current()
        program(*[b.handle for b in buffers], block=(kernel.threads, 1, 1), grid=(kernel.blocks, 1))

    def current(self) -> None:
        """Make this device's context current in the calling thread (a CUDA context is current
        per thread: the one made current where the device was created is not in other threads).
        Pushed once per thread and left there, as the creating thread leaves it."""
        if not getattr(self._threads, "current", False):
            self.context.push()
            self._threads.current = True

    def run_opaque(self, op: Op, arg: Any, inputs: list[Buffer], out: Buffer) -> None:
        """Opaque ops (sort, cumulative sum, searchsorted) run on the host with numpy's routines."""
        result = NUMPY_REFERENCE[op]([self.to_numpy(b) for b in inputs], arg, out.dtype)
        result = np.ascontiguousarray(result, dtype=out.dtype.np)
        if result.size:
            drv.memcpy_htod(out.handle, result)

    def synchronize(self) -> None:
        self.current()
        drv.Context.synchronize()
