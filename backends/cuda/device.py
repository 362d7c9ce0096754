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


class _Pushed:
    """This device's context pushed on one thread's context stack, for as long as the thread
    lives: it is kept in the device's thread-local state, which CPython clears in the thread
    itself as the thread ends, and then pops the context. (pycuda aborts the process when a
    thread ends with a context still on its stack.)"""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.thread = threading.get_ident()
        context.push()
        self.pushed = True

    def release(self) -> None:
        if not self.pushed or self.thread != threading.get_ident():
            return  # (the device's thread-local state dropped from another thread: nothing of ours there)
        self.pushed = False
        try:
            top = drv.Context.get_current()
            if top is not None and top.handle == self.context.handle:
                drv.Context.pop()
        except Exception:  # (pycuda torn down already at exit)
            pass

    def __del__(self) -> None:
        self.release()


class _Memory:
    """Device memory freed with its context current in the freeing thread, whichever thread
    drops it last (pycuda frees memory only where its context is current, or in the thread that
    made the context: elsewhere it warns and leaks). `gpudata` is what a launch passes."""
    __slots__ = ("device", "allocation", "gpudata")

    def __init__(self, device: "CUDADevice", allocation: Any) -> None:
        self.device, self.allocation, self.gpudata = device, allocation, int(allocation)

    def __del__(self) -> None:
        self.device.release(self.allocation.free)


class _Function:
    """A kernel of a loaded module; the module (the code) lives as long as this does, and is
    unloaded with its context current in the thread that drops it."""

    def __init__(self, device: "CUDADevice", module: Any, name: str) -> None:
        self.device = device
        self.module = [module]
        self.function = module.get_function(name)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.function(*args, **kwargs)

    def __del__(self) -> None:
        self.function = None
        self.device.release(self.module.clear)


class CUDADevice:
    def __init__(self, index: int) -> None:
        drv.init()
        self.name = f"cuda:{index}"
        self.cu_device = drv.Device(index)
        self.context = self.cu_device.retain_primary_context()
        self._threads = threading.local()   # .pushed: a _Pushed where this device's context is current
        self._closed = False
        self.current()
        atexit.register(self._close)  # pycuda aborts at exit if a context is left on the main thread's stack
        attr = drv.device_attribute
        major, minor = self.cu_device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.target = Target("cuda", simd_bytes=0, launches_blocks=True,
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
        memory = self._memory.take(nbytes)
        if memory is None:
            try:
                memory = _Memory(self, drv.mem_alloc(nbytes))
            except drv.MemoryError:
                free, total = drv.mem_get_info()
                raise MemoryError(f"{self.describe()}: cannot allocate {nbytes} bytes for {dtype.name}{list(shape)} "
                                  f"({free} of {total} bytes free)") from None
        return self._memory.track(Buffer(self.name, dtype, tuple(shape), memory, memory.gpudata), nbytes, memory)

    def from_numpy(self, array: np.ndarray) -> Buffer:
        buffer = self.allocate(array.shape, to_dtype(array.dtype))   # (makes the context current)
        if array.size:
            drv.memcpy_htod(buffer.address, np.ascontiguousarray(array))
        return buffer

    def to_numpy(self, buffer: Buffer, writeable: bool = False) -> np.ndarray:
        out = np.empty(buffer.shape, buffer.dtype.storage)
        self.current()
        if out.size:
            drv.memcpy_dtoh(out, buffer.address)  # synchronous: waits for the kernels before
        out.flags.writeable = writeable
        return out

    def read(self, buffer: Buffer, start: int, count: int) -> np.ndarray:
        """Elements start..start+count-1 of the buffer's memory (row-major), copied to the host."""
        out = np.empty(count, buffer.dtype.storage)
        self.current()
        if count:
            drv.memcpy_dtoh(out, buffer.address + start * buffer.dtype.itemsize)
        return out

    # ---- kernels --------------------------------------------------------------------------

    def load(self, binary: bytes, name: str) -> Program:
        self.current()
        return _Function(self, drv.module_from_buffer(binary), name)

    def launch(self, program: Program, buffers: list[Buffer], kernel: Kernel, sizes: tuple[int, ...] = ()) -> None:
        if sizes:   # (symbolic sizes are compiled for the cpu only: lazytensor/sizes.py)
            raise NotImplementedError(f"{self.name}: kernels with symbolic sizes are not supported")
        if kernel.blocks == 0:
            return  # nothing to compute (an empty output)
        self.current()
        program(*[np.uintp(b.address) for b in buffers], block=(kernel.threads, 1, 1), grid=(kernel.blocks, 1))

    def current(self) -> None:
        """Make this device's context current in the calling thread (a CUDA context is current
        per thread). Pushed once per thread, and popped as the thread ends (_Pushed)."""
        if getattr(self._threads, "pushed", None) is None and not self._closed:
            self._threads.pushed = _Pushed(self.context)

    def release(self, free: Any) -> None:
        """Call `free` (which frees memory or drops a module) with this device's context
        current: pushed for the call alone in a thread that has not used the device."""
        try:
            pushed = getattr(self._threads, "pushed", None)
            if pushed is not None and pushed.pushed:
                free()
                return
            self.context.push()
            try:
                free()
            finally:
                drv.Context.pop()
        except Exception:  # (pycuda torn down already at exit: the driver frees it all)
            pass

    def _close(self) -> None:
        """At exit: pop the context off the thread that runs exit handlers."""
        self._closed = True
        pushed = getattr(self._threads, "pushed", None)
        if pushed is not None:
            pushed.release()

    def run_opaque(self, op: Op, arg: Any, inputs: list[Buffer], out: Buffer) -> None:
        """Opaque ops (sort, cumulative sum, searchsorted, scatter-add) run on the host with numpy's routines."""
        result = NUMPY_REFERENCE[op]([self.to_numpy(b) for b in inputs], arg, out.dtype)
        result = np.ascontiguousarray(result, dtype=out.dtype.np)
        self.current()
        if result.size:
            drv.memcpy_htod(out.address, result)

    def synchronize(self) -> None:
        self.current()
        drv.Context.synchronize()
