"""Device and compiler for OpenCL through pyopencl (the only module that imports it).

`opencl:N` is the N-th device over all platforms, in the order pyopencl lists them. Kernels are
built from the shared C-style renderer's source; the program binary is what the kernel cache
keeps, so a warm cache skips the OpenCL C compiler (loading a binary takes ~2 ms on PoCL).
"""
from __future__ import annotations

import functools
import math
import threading
import warnings
from typing import Any

import numpy as np
import pyopencl as cl

from ...ir.dtypes import DType
from ...ir.loop import Kernel
from ...ir.ops import Op
from ...ir.rules import NUMPY_REFERENCE
from ...ir.target import Target
from ..cpu.render_ops import scalar_ops
from ..pool import MemoryPool
from ..protocol import Buffer, Program


@functools.lru_cache(maxsize=None)
def _all_devices() -> tuple:
    try:
        return tuple(d for p in cl.get_platforms() for d in p.get_devices())
    except cl.Error:  # no ICD loader or no platform: no OpenCL devices
        return ()


def device_names() -> list[str]:
    return [f"opencl:{i}" for i in range(len(_all_devices()))]


class OpenCLDevice:
    # A built program holds ~1.2 MB of the driver's memory on PoCL (measured: 128 loaded kernels
    # ~150 MB), so fewer are kept than on the cpu: a process meeting ever new shapes stays near
    # 150 MB of programs. One dropped and needed again loads from its binary (~1.3 ms on PoCL).
    max_loaded_kernels = 128

    def __init__(self, index: int) -> None:
        self.name = f"opencl:{index}"
        self.cl_device = _all_devices()[index]
        d = self.cl_device
        self.context = cl.Context([d])
        self.queue = cl.CommandQueue(self.context)
        self.fp64 = "cl_khr_fp64" in d.extensions
        self.max_alloc = d.max_mem_alloc_size
        # a cpu behind OpenCL (local memory is ordinary memory: PoCL) compiles through LLVM as the
        # cpu backend does, and keeps a loop that calls a C library function (tan, log1p, fmod)
        # scalar as it does: such sums are then accumulated in float64, not in float32 partials
        # meant for vector lanes (tests/test_reductions.py: as accurate as numpy)
        emulated = d.local_mem_type == cl.device_local_mem_type.GLOBAL
        # a work-item's own vectors (a cpu device's SIMD lanes: 64 bytes on AVX-512 PoCL; 4 on a gpu)
        self.target = Target("opencl", simd_bytes=4 * d.native_vector_width_float, launches_blocks=True,
                             cores=d.max_compute_units,
                             max_threads_per_block=d.max_work_group_size, local_memory_bytes=d.local_mem_size,
                             local_memory_emulated=emulated, scalar_ops=scalar_ops() if emulated else frozenset(),
                             features=f"{d.platform.name} | {d.name} | {d.version} | {d.driver_version}")
        self._memory = MemoryPool()
        # a launch sets the kernel object's arguments, then enqueues it: two threads launching one
        # kernel at once must not interleave (clSetKernelArg is not thread-safe per kernel object)
        self._launching = threading.Lock()

    def describe(self) -> str:
        return f"{self.name} ({self.cl_device.name.strip()})"

    # ---- memory ---------------------------------------------------------------------------

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> Buffer:
        if dtype.name == "float64" and not self.fp64:
            raise TypeError(f"{self.describe()} has no float64 support (cl_khr_fp64); use float32 or the cpu")
        nbytes = max(1, math.prod(shape)) * dtype.itemsize  # >= 1 element: masked loads read index 0
        handle = self._memory.take(nbytes)
        if handle is None:
            if nbytes > self.max_alloc:
                raise MemoryError(f"{self.describe()}: cannot allocate {nbytes} bytes for {dtype.name}{list(shape)}; "
                                  f"the device allows at most {self.max_alloc} bytes in one buffer")
            try:
                handle = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
            except cl.Error as error:
                raise MemoryError(f"{self.describe()}: cannot allocate {nbytes} bytes for {dtype.name}"
                                  f"{list(shape)}: {error}") from None
        return self._memory.track(Buffer(self.name, dtype, tuple(shape), handle), nbytes, handle)

    def from_numpy(self, array: np.ndarray) -> Buffer:
        from ...ir.dtypes import to_dtype
        buffer = self.allocate(array.shape, to_dtype(array.dtype))
        if array.size:
            cl.enqueue_copy(self.queue, buffer.handle, np.ascontiguousarray(array))
        return buffer

    def to_numpy(self, buffer: Buffer, writeable: bool = False) -> np.ndarray:
        out = np.empty(buffer.shape, buffer.dtype.storage)
        if out.size:
            cl.enqueue_copy(self.queue, out, buffer.handle)  # blocking: waits for the kernels before
        out.flags.writeable = writeable
        return out

    def read(self, buffer: Buffer, start: int, count: int) -> np.ndarray:
        """Elements start..start+count-1 of the buffer's memory (row-major), copied to the host."""
        out = np.empty(count, buffer.dtype.storage)
        if count:
            cl.enqueue_copy(self.queue, out, buffer.handle, src_offset=start * buffer.dtype.itemsize)
        return out

    # ---- kernels --------------------------------------------------------------------------

    def load(self, binary: bytes, name: str) -> Program:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)  # (notes on generated code)
            program = cl.Program(self.context, [self.cl_device], [binary]).build()
        return getattr(program, name)

    def launch(self, program: Program, buffers: list[Buffer], kernel: Kernel, sizes: tuple[int, ...] = ()) -> None:
        if sizes:   # (symbolic sizes are compiled for the cpu only: lazytensor/sizes.py)
            raise NotImplementedError(f"{self.name}: kernels with symbolic sizes are not supported")
        if kernel.blocks == 0:
            return  # nothing to compute (an empty output)
        try:
            with self._launching:
                program(self.queue, (kernel.blocks * kernel.threads,), (kernel.threads,), *[b.handle for b in buffers])
        except cl.MemoryError as error:  # drivers may allocate buffers only when first used
            nbytes = sum(b.handle.size for b in buffers)
            raise MemoryError(f"{self.describe()}: out of memory running a kernel over {nbytes} bytes "
                              f"of buffers: {error}") from None

    def run_opaque(self, op: Op, arg: Any, inputs: list[Buffer], out: Buffer) -> None:
        """Opaque ops (sort, cumulative sum, searchsorted, scatter-add) run on the host with numpy's routines:
        the inputs are copied there and the result back."""
        result = NUMPY_REFERENCE[op]([self.to_numpy(b) for b in inputs], arg, out.dtype)
        result = np.ascontiguousarray(result, dtype=out.dtype.np)
        if result.size:
            cl.enqueue_copy(self.queue, out.handle, result)

    def synchronize(self) -> None:
        self.queue.finish()


class OpenCLCompiler:
    def __init__(self, device: OpenCLDevice) -> None:
        self.device = device
        self.identity = f"pyopencl {cl.VERSION_TEXT} | {device.target.features}"

    def compile(self, source: str, name: str) -> bytes:
        try:
            with warnings.catch_warnings():
                # the driver's notes on generated code are nothing a user can act on
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(self.device.context, source).build()
        except cl.Error as error:
            raise RuntimeError(f"{self.device.describe()}: kernel {name} failed to compile:\n{error}\n"
                               "(run with LT_DEBUG=2 to print its source)") from None
        return program.get_info(cl.program_info.BINARIES)[0]
