"""Loading compiled kernels into the process: one shared ORC JIT, code freed with its kernel.

Every kernel's object file is linked as a library of its own into an LLJIT; its code lives as
long as the `LoadedKernel` that holds its resource tracker (the runtime keeps a bounded number of
kernels, and plans hold theirs), and is unmapped when that dies. A process that keeps meeting
new shapes therefore keeps a bounded amount of code mapped. (One MCJIT engine per kernel, never
freed, took three memory maps a kernel: past ~21,700 kernels the kernel's map limit was reached
and the next launch crashed.)

An LLJIT keeps a little bookkeeping for every library ever linked into it (~10 KB, and its
lookups slow down as they accumulate), even after the library's code is freed. So the JIT is
replaced by a fresh one every `LIBRARIES_PER_JIT` libraries; an old one is disposed of when the
last kernel linked into it dies. Measured here: ~170 us a load, flat over 20,000 loads, with
resident memory and memory maps flat too (one MCJIT engine per kernel: ~450 us a load).

LLVM's global state (the context that parses IR, the target machine that emits code) is not
safe to use from two threads at once: every use of LLVM in the cpu backend holds `LLVM_LOCK`.
"""
from __future__ import annotations

import atexit
import itertools

import llvmlite.binding as llvm

from .compiler import LLVM_LOCK, target_machine

LIBRARIES_PER_JIT = 256
# Set when the interpreter exits: code is not freed then (llvmlite may already be torn down, and
# the process is about to give back all of its memory anyway)
_EXITING: list[bool] = []
atexit.register(_EXITING.append, True)


class _Generation:
    """One LLJIT and how many libraries were linked into it."""

    def __init__(self) -> None:
        self.jit = llvm.create_lljit_compiler(target_machine())
        self.linked = 0

    def __del__(self, _lock=LLVM_LOCK, _exiting=_EXITING) -> None:   # (bound now: at exit, globals go)
        # (every LoadedKernel of this JIT holds it: they are all gone, their trackers closed)
        if not _exiting:
            with _lock:
                self.jit.close()


class LoadedKernel:
    """A kernel's code in the process: `address` stays valid while this object lives."""

    __slots__ = ("address", "_tracker", "_generation")

    def __init__(self, address: int, tracker: "llvm.ResourceTracker", generation: _Generation) -> None:
        self.address = address
        self._tracker = tracker
        self._generation = generation   # (kept: the JIT must outlive the library's tracker)

    def __del__(self, _lock=LLVM_LOCK, _exiting=_EXITING) -> None:   # (bound now: at exit, globals go)
        if not _exiting:
            with _lock:   # (an RLock: a collection inside a locked section may run this)
                self._tracker.close()
        self._generation = None


class SharedJIT:
    """Links object files into the current JIT generation; thread-safe."""

    def __init__(self) -> None:
        self._current: _Generation | None = None
        self._names = itertools.count()

    def load(self, binary: bytes, symbol: str, imports: dict[str, int] | None = None) -> LoadedKernel:
        """The object file `binary` linked into the process, its undefined symbols found in the
        process or in `imports` (name -> address); RuntimeError where it does not link or does
        not define `symbol`."""
        with LLVM_LOCK:
            if self._current is None or self._current.linked >= LIBRARIES_PER_JIT:
                self._current = _Generation()
            generation = self._current
            generation.linked += 1
            library = f"lt{next(self._names)}"   # (a library name cannot be used twice)
            builder = llvm.JITLibraryBuilder().add_object_img(binary).add_current_process().export_symbol(symbol)
            for name, address in (imports or {}).items():
                builder.import_symbol(name, address)
            tracker = builder.link(generation.jit, library)
            address = tracker[symbol]
        loaded = LoadedKernel(address, tracker, generation)
        if not address:
            raise RuntimeError(f"cpu: kernel {symbol} not found in its compiled object")
        return loaded
