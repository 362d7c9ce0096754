"""Worker threads for parallel kernels, with a native hand-off instead of Python's.

A kernel's outer parallel loop runs as [start, end) chunks, one per core. Handing a chunk to a
Python thread pool costs ~60 us a launch here (a future, a lock, two GIL hand-offs), more than
many kernels take. So the hand-off is native code, compiled once by LLVM: each worker is a Python
thread that enters `lt_pool_worker` through ctypes (the GIL is released) and never comes back.
It spins on a generation counter for a new job (yielding its core after a while), runs its
chunk and counts itself done.
`lt_pool_run`, called by the launching thread, publishes a job, runs chunk 0 itself and spins
until every worker has counted itself done; a launch then costs about a microsecond more than a
serial one. A worker that sees no job for a few ms sleeps in the kernel (futex) and is woken by the
next job, so an idle process takes no CPU.

This needs Linux's futex and x86's `pause`; elsewhere `PythonPool` (a ThreadPoolExecutor) does
the same job more slowly.
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import llvmlite.binding as llvm
import numpy as np

from .compiler import LLVM_LOCK, new_target_machine

# Byte offsets into the shared state; the counters written by different threads sit on
# different cache lines, so spinning on one does not slow the writes to another.
GENERATION, SLEEPERS, DONE, JOB = 0, 64, 128, 192   # JOB: fn, args, extent, parts, stop
STATE_BYTES = 256
# A worker waiting for a job spins (~25 us of time-stamp cycles), then spins yielding its core to
# any other thread that wants it, then sleeps (~3 ms after its last job). A sleeping thread's core
# may be halted, which on a virtual machine takes long to wake: a training step's Python between
# two kernels (a few hundred us) must not put the workers to sleep.
SPIN_CYCLES = 1 << 16
YIELD_CYCLES = 1 << 23
FUTEX_WAIT, FUTEX_WAKE, SYS_FUTEX = 128, 129, 202   # *_PRIVATE; x86-64 syscall number

_IR = f"""
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

define void @lt_pool_worker(ptr %state, i64 %index) {{
entry:
  %generation = getelementptr i8, ptr %state, i64 {GENERATION}
  %sleepers = getelementptr i8, ptr %state, i64 {SLEEPERS}
  %done = getelementptr i8, ptr %state, i64 {DONE}
  %job = getelementptr i8, ptr %state, i64 {JOB}
  %t0 = call i64 @llvm.readcyclecounter()
  br label %spin

spin:                                    ; wait for a generation other than %seen: from 0, the
                                         ; state's first, as a job may come before this thread runs
  %seen = phi i32 [ 0, %entry ], [ %now, %finished ], [ %seen, %pause ], [ %seen, %give ], [ %seen, %woken ]
  %since = phi i64 [ %t0, %entry ], [ %t1, %finished ], [ %since, %pause ], [ %since, %give ], [ %t2, %woken ]
  %now = load atomic i32, ptr %generation acquire, align 4
  %new = icmp ne i32 %now, %seen
  br i1 %new, label %work, label %pause

pause:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %waited = sub i64 %t, %since
  %long = icmp ugt i64 %waited, {SPIN_CYCLES}
  br i1 %long, label %yield, label %spin
yield:
  %longer = icmp ugt i64 %waited, {YIELD_CYCLES}
  br i1 %longer, label %sleep, label %give
give:
  call i32 @sched_yield()
  br label %spin

sleep:                                   ; a job published after this check wakes us (see run)
  atomicrmw add ptr %sleepers, i32 1 seq_cst
  %again = load atomic i32, ptr %generation seq_cst, align 4
  %still = icmp eq i32 %again, %seen
  br i1 %still, label %futex, label %awake
futex:
  %seen64 = zext i32 %seen to i64
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %generation, i64 {FUTEX_WAIT}, i64 %seen64, ptr null)
  br label %awake
awake:
  atomicrmw sub ptr %sleepers, i32 1 seq_cst
  br label %woken
woken:
  %t2 = call i64 @llvm.readcyclecounter()
  br label %spin

work:
  %stop.p = getelementptr i8, ptr %job, i64 32
  %stop = load i64, ptr %stop.p, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %exit, label %job.read
job.read:
  %fn = load ptr, ptr %job, align 8
  %args.p = getelementptr i8, ptr %job, i64 8
  %args = load ptr, ptr %args.p, align 8
  %extent.p = getelementptr i8, ptr %job, i64 16
  %extent = load i64, ptr %extent.p, align 8
  %parts.p = getelementptr i8, ptr %job, i64 24
  %parts = load i64, ptr %parts.p, align 8
  %mine = icmp ult i64 %index, %parts
  br i1 %mine, label %chunk, label %finished
chunk:
  %lo.n = mul i64 %extent, %index
  %lo = udiv i64 %lo.n, %parts
  %next = add i64 %index, 1
  %hi.n = mul i64 %extent, %next
  %hi = udiv i64 %hi.n, %parts
  call void %fn(ptr %args, i64 %lo, i64 %hi)
  br label %finished
finished:
  atomicrmw add ptr %done, i64 1 release
  %t1 = call i64 @llvm.readcyclecounter()
  br label %spin
exit:                                    ; counted done, so close() knows every worker left
  atomicrmw add ptr %done, i64 1 release
  ret void
}}

define void @lt_pool_run(ptr %state, ptr %fn, ptr %args, i64 %extent, i64 %parts, i64 %workers, i64 %stop) {{
entry:
  %generation = getelementptr i8, ptr %state, i64 {GENERATION}
  %sleepers = getelementptr i8, ptr %state, i64 {SLEEPERS}
  %done = getelementptr i8, ptr %state, i64 {DONE}
  %job = getelementptr i8, ptr %state, i64 {JOB}
  store ptr %fn, ptr %job, align 8
  %args.p = getelementptr i8, ptr %job, i64 8
  store ptr %args, ptr %args.p, align 8
  %extent.p = getelementptr i8, ptr %job, i64 16
  store i64 %extent, ptr %extent.p, align 8
  %parts.p = getelementptr i8, ptr %job, i64 24
  store i64 %parts, ptr %parts.p, align 8
  %stop.p = getelementptr i8, ptr %job, i64 32
  store i64 %stop, ptr %stop.p, align 8
  store atomic i64 0, ptr %done monotonic, align 8
  atomicrmw add ptr %generation, i32 1 seq_cst   ; publishes the job (release)
  %asleep = load atomic i32, ptr %sleepers seq_cst, align 4
  %wake = icmp ne i32 %asleep, 0
  br i1 %wake, label %futex, label %own
futex:
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %generation, i64 {FUTEX_WAKE}, i64 2147483647)
  br label %own
own:
  %run = icmp eq i64 %stop, 0
  br i1 %run, label %chunk, label %wait
chunk:
  %hi = udiv i64 %extent, %parts
  call void %fn(ptr %args, i64 0, i64 %hi)
  br label %wait
wait:
  %count = load atomic i64, ptr %done acquire, align 8
  %all = icmp uge i64 %count, %workers
  br i1 %all, label %exit, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  br label %wait
exit:
  ret void
}}
"""

_ENTRY_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
_ENTRY_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)


# Stack of a worker thread: kernels keep their local arrays there (a register tile, a packed
# panel of up to 512 KB); 16 MB of address space, of which only the pages touched are memory.
WORKER_STACK_BYTES = 16 << 20


class NativePool:
    """`cores - 1` workers; `run(kernel address, args, extent)` splits [0, extent) among them and
    the calling thread. One launch at a time: a thread that finds the pool busy runs its kernel
    serially instead of waiting."""

    def __init__(self, cores: int) -> None:
        self.workers = cores - 1
        self.state = np.zeros(STATE_BYTES // 8, dtype=np.int64)   # kept alive: the threads use it
        with LLVM_LOCK:
            self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_IR), new_target_machine())
            self.engine.finalize_object()
            self._run = _ENTRY_RUN(self.engine.get_function_address("lt_pool_run"))
            worker = _ENTRY_WORKER(self.engine.get_function_address("lt_pool_worker"))
        self.busy = threading.Lock()
        self.address = self.state.ctypes.data   # (once: numpy makes a new ctypes object per .ctypes)
        self.threads = [threading.Thread(target=worker, args=(self.address, i + 1), daemon=True,
                                         name=f"lt-cpu-{i + 1}") for i in range(self.workers)]
        previous = threading.stack_size(WORKER_STACK_BYTES)   # (kernels keep packed panels on the stack)
        try:
            for thread in self.threads:
                thread.start()
        finally:
            threading.stack_size(previous)

    def run(self, program: ctypes._CFuncPtr, args: ctypes.Array, extent: int) -> None:
        parts = min(self.workers + 1, extent)
        if parts <= 1 or not self.busy.acquire(blocking=False):
            program(args, 0, extent)
            return
        try:
            self._run(self.address, program.address, args, extent, parts, self.workers, 0)
        finally:
            self.busy.release()

    def close(self) -> None:
        """Let the workers return (they exit when they see the stop flag)."""
        with self.busy:
            self._run(self.address, None, None, 0, 1, self.workers, 1)
        for thread in self.threads:
            thread.join()


class PythonPool:
    """The same contract with Python threads, for platforms without the native hand-off."""

    def __init__(self, cores: int) -> None:
        self.workers = cores - 1
        self.executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="lt-cpu")

    def run(self, program: ctypes._CFuncPtr, args: ctypes.Array, extent: int) -> None:
        parts = min(self.workers + 1, extent)
        bounds = [extent * t // parts for t in range(parts + 1)]
        futures = [self.executor.submit(program, args, bounds[t], bounds[t + 1]) for t in range(1, parts)]
        program(args, bounds[0], bounds[1])
        for future in futures:
            future.result()

    def close(self) -> None:
        self.executor.shutdown()


def native_supported() -> bool:
    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64") and \
        os.environ.get("LT_NATIVE_THREADS", "1") != "0"


def worker_pool(cores: int) -> NativePool | PythonPool:
    return NativePool(cores) if native_supported() else PythonPool(cores)
