"""Device: host memory (numpy arrays), JIT-loaded kernels, and a thread pool for parallel loops.

Every kernel has the entry `void kernel(ptr args, i64 start, i64 end)`; a ctypes call releases
the GIL, so threads running disjoint [start, end) ranges of the outer parallel loop use every core.
"""
from __future__ import annotations

import ctypes
import functools
import math
import os
import struct
import threading
import weakref
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from ...ir.dtypes import DType
from ...ir.loop import Kernel
from ...ir.ops import Op
from ...ir.rules import NUMPY_REFERENCE, scatter_add_into
from ..pool import MemoryPool
from ..protocol import Buffer, Program
from .compiler import LLVM_LOCK, host_target
from . import support
from .jit import SharedJIT
from .objcheck import check_object
from .threads import NativePool, PythonPool, worker_pool

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_POOL_LOCK = threading.Lock()
_ARGS = [ctypes.c_void_p * count for count in range(64)]   # a kernel's argument array, by count


# Every buffer starts at a multiple of this many bytes: a cache line, an AVX-512 vector, and what
# jax (XLA) needs to take a DLPack export without copying it.
ALIGNMENT = 64


class CPUDevice:
    name = "cpu"
    host_memory = True   # buffers are host memory: to_numpy is a view, not a copy

    def __init__(self) -> None:
        self.target = host_target()
        self._jit = SharedJIT()
        self._memory = MemoryPool()
        self._threads: NativePool | PythonPool | None = None
        self._one_core = self.target.cores == 1

    # ---- memory ---------------------------------------------------------------------------

    def allocate(self, shape: tuple[int, ...], dtype: DType) -> Buffer:
        # at least one element: a masked (padded) load reads index 0 of even an empty input
        nbytes = max(1, math.prod(shape)) * dtype.itemsize
        memory = self._memory.take(nbytes)
        if memory is None:   # (the address kept with the memory: numpy's .ctypes.data costs ~1 us)
            raw = np.empty(nbytes + ALIGNMENT - 1, dtype=np.uint8)
            start = -raw.ctypes.data % ALIGNMENT
            raw = raw[start:start + nbytes]
            memory = (raw, raw.ctypes.data)
        raw, address = memory
        return self._memory.track(Buffer(self.name, dtype, tuple(shape), raw.view(dtype.storage), address), nbytes, memory)

    def from_numpy(self, array: np.ndarray) -> Buffer:
        buffer = self.allocate(array.shape, _dtype_of(array))
        buffer.handle[:array.size] = array.reshape(-1)
        return buffer

    def wrap_numpy(self, array: np.ndarray) -> Buffer:
        """A buffer over `array`'s own memory (zero-copy; the caller keeps it C-contiguous and
        alive through the buffer's handle). Never pooled: the memory is not ours to reuse."""
        return Buffer(self.name, _dtype_of(array), tuple(array.shape), array.reshape(-1), array.ctypes.data)

    def to_numpy(self, buffer: Buffer, writeable: bool = False) -> np.ndarray:
        buffer.owner.exported = True  # the user may hold this memory now: never pool it
        view = _view(buffer).view()
        view.flags.writeable = writeable  # read-only by default: lazy graphs may share the buffer
        return view

    def read(self, buffer: Buffer, start: int, count: int) -> np.ndarray:
        """Elements start..start+count-1 of the buffer's memory (row-major): a read-only view,
        valid while the buffer lives (a caller that keeps the values copies them)."""
        view = buffer.handle[start:start + count]
        view.flags.writeable = False
        return view

    # ---- kernels --------------------------------------------------------------------------

    def load(self, binary: bytes, name: str) -> Program:
        check_object(binary, name)   # (nothing LLVM would crash on reaches it: a cache entry may be bad)
        needed = undefined_symbols(binary)
        missing = [symbol for symbol in needed if symbol not in support.NAMES and not _process_has(symbol)]
        if missing:
            # the JIT would link these to address 0 and the first call would crash the process
            raise RuntimeError(f"cpu: kernel {name} needs {', '.join(missing)}, which this process does not "
                               "provide (a runtime library call LLVM emitted); run with LT_DEBUG=2 to see its source")
        # (libcalls LLVM may emit that the process need not have: ours, whether it has them or not)
        imports = {symbol: support.address(symbol) for symbol in needed if symbol in support.NAMES}
        loaded = self._jit.load(binary, name, imports)
        program = _ENTRY(loaded.address)
        program.address = loaded.address   # for the native thread pool, which calls it by address
        program.code = loaded              # the code lives as long as the program
        return program

    def launch(self, program: Program, buffers: list[Buffer], kernel: Kernel, sizes: tuple[int, ...] = ()) -> None:
        count = len(buffers) + len(sizes)   # (a kernel's symbolic sizes follow its buffers: render.py)
        args = (_ARGS[count] if count < len(_ARGS) else ctypes.c_void_p * count)(*[b.address for b in buffers], *sizes)
        extent = kernel.parallel_extent
        if not extent or extent == 1 or self._one_core:
            program(args, 0, extent or 1)
        else:
            self._thread_pool().run(program, args, extent)

    def run_opaque(self, op: Op, arg: Any, inputs: list[Buffer], out: Buffer) -> None:
        """Opaque ops on the cpu are numpy's own routines (stable sort, cumsum, searchsorted,
        scatter-add), the same table the reference interpreter uses, run on the buffers in place
        (a scatter-add adds into its zeroed output: no result array the size of the output)."""
        arrays = [_view(b) for b in inputs]
        if op is Op.SCATTER_ADD:
            target = _view(out)
            target[...] = 0
            scatter_add_into(target, arrays[0], arrays[1], arg[0])
            return
        result = NUMPY_REFERENCE[op](arrays, arg, out.dtype)
        _view(out)[...] = result

    def synchronize(self) -> None:
        pass  # launches are synchronous on the cpu

    def _thread_pool(self) -> NativePool | PythonPool:
        if self._threads is None:
            with _POOL_LOCK:   # one pool: a second one, dropped, would free the code its workers run
                if self._threads is None:
                    self._threads = worker_pool(self.target.cores)
                    # a forked child has none of these threads: it starts its own pool when it needs one
                    os.register_at_fork(after_in_child=functools.partial(_forget_pool, weakref.ref(self)))
        return self._threads


def _forget_pool(device: "weakref.ref[CPUDevice]") -> None:
    if device() is not None:
        device()._threads = None


def _view(buffer: Buffer) -> np.ndarray:
    """The buffer's memory as an array of its shape, for the device's own use (not exported)."""
    return buffer.handle[:math.prod(buffer.shape)].reshape(buffer.shape)


def undefined_symbols(binary: bytes) -> list[str]:
    """Names an ELF object file uses but does not define (read from its .symtab)."""
    with LLVM_LOCK:
        sections = {s.name(): s.data() for s in llvm.ObjectFileRef.from_data(binary).sections()}
    symtab, strtab = sections.get(b".symtab", b""), sections.get(b".strtab", b"")
    names = []
    for offset in range(0, len(symtab), 24):  # Elf64_Sym: name, info, other, shndx, value, size
        st_name, _, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", symtab, offset)
        if st_shndx == 0 and st_name:          # SHN_UNDEF, named
            names.append(strtab[st_name:strtab.index(b"\0", st_name)].decode())
    return [n for n in names if n != "_GLOBAL_OFFSET_TABLE_"]


@functools.lru_cache(maxsize=None)
def _process_has(symbol: str) -> bool:
    return hasattr(ctypes.CDLL(None), symbol)  # what the JIT's dlsym lookup will find


def _dtype_of(array: np.ndarray) -> DType:
    from ...ir.dtypes import to_dtype
    return to_dtype(array.dtype)
