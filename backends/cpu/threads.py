"""Worker threads for parallel kernels, with a native hand-off instead of Python's.

A kernel's outer parallel loop runs as [start, end) chunks, a few per core. Handing a chunk to a
Python thread pool costs ~60 us a launch here (a future, a lock, two GIL hand-offs), more than
many kernels take. So the hand-off is native code, compiled once by LLVM: each worker is a Python
thread that enters `lt_pool_worker` through ctypes (the GIL is released) and never comes back.

`lt_pool_run`, called by the launching thread, publishes a job in one 64-bit word (generation,
chunk count, next chunk) and then claims chunks from it like any worker: an atomic add on the
word hands out the next chunk, so the launching thread and whichever workers are awake take all
of them, and the launch waits only for chunks a worker has claimed and not finished, never for a
worker that is asleep or descheduled (another process on its core, or a library's spinning
threads: OpenBLAS's hold a core for a while after each call). A claim names its generation, so a
worker that wakes late runs a chunk of the job now open or none, never one of a finished job.
The launcher spins a short while for claimed chunks, then sleeps until the last one is done (its
core going idle lets the scheduler move a descheduled worker there). A launch costs about a
microsecond more than a serial one.

A worker waiting for a job spins, then spins yielding its core, then sleeps in the kernel (futex)
after a few ms without one and is woken by the next job, so an idle process takes no CPU. A
worker that finds its wait was interrupted (another thread ran on its core meanwhile) naps for a
few ms, woken by no launch, so it stops taking turns on a core that is wanted elsewhere -- unless
the thread it took turns with is its own launcher: then it moves itself to another cpu
(MOVE_CYCLES says why), and a launch that woke sleeping workers yields once so that one woken
onto its cpu can look.

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

from .compiler import LLVM_LOCK, WORKER_STACK_BYTES, new_target_machine

# Byte offsets into the shared state. The job word, written by the launcher and claimed from by
# every thread, the counters the launcher waits on, and the job's fields each sit on a cache line
# of their own, so spinning on one does not slow the writes to another.
WORD = 0          # i64: generation << 32 | parts << 16 | next chunk to claim (futex: the generation half)
SLEEPERS = 64     # i32: workers asleep in the kernel until a launch wakes them
NAP = 68          # i32: 1 once the pool stops (futex: workers napping because their core is wanted)
DONE = 128        # i32: chunks the workers finished this job (futex: the launcher sleeps on it)
WAITING = 132     # i32: the launcher is asleep (or about to be) on DONE
JOB = 192         # fn, args, extent, stop: i64 each
HELPED = 256      # i64: chunks run by workers since the pool started (for tests and benchmarks)
LAUNCHER_CPU = 264   # i32: the cpu the last launch was published from
MOVED = 268       # i32: times a worker moved off the launcher's cpu (for tests and benchmarks)
STATE_BYTES = 320
# A worker waiting for a job spins (~25 us of time-stamp cycles), then spins yielding its core to
# any other thread that wants it, then sleeps (~3 ms after its last job). A sleeping thread's core
# may be halted, which on a virtual machine takes long to wake: a training step's Python between
# two kernels (a few hundred us) must not put the workers to sleep when the cores are free.
# But a wait that was interrupted for longer than PREEMPTED_CYCLES (~50 us: another thread or
# process ran on this core meanwhile) means the core is wanted: the worker naps NAP_NS, woken by
# no launch, rather than keep taking turns on it (with another process's spinning thread, a turn
# comes once a scheduler tick, 4 ms) and keep a third thread runnable on two cores, which puts
# the launching thread beside the other process now and then. Nothing waits for it meanwhile.
SPIN_CYCLES = 1 << 16
YIELD_CYCLES = 1 << 23
PREEMPTED_CYCLES = 1 << 17
NAP_NS = 8_000_000
# A worker on the cpu its launcher runs on (Linux wakes a sleeping thread on its waker's cpu when
# it judges the two share data) takes turns with the launcher there while another cpu idles: it
# gets the core only when the launcher yields it, after all the chunks are claimed, and its wait
# looks preempted, so it naps. Every launch then runs on one core: a softmax 1.1 ms instead of
# 0.65 here, in a process that had run torch, for many launches in a row, until the scheduler's
# balancer moved one of them. Such a worker moves itself: its allowed cpus without this one for
# a moment, then all of them again (where it now is, it stays). At most once in MOVE_CYCLES.
MOVE_CYCLES = 1 << 20
MASK_WORDS = 16   # a cpu_set_t: 1024 cpus
# Chunks a launch is cut into, per thread: a worker that comes late (woken, or given its core back
# by another process) still finds some to take, and one that is descheduled holding a chunk holds
# up less of the launch.
CHUNKS_PER_THREAD = 4
MAX_PARTS = 1 << 12   # (far below the 16 bits of the word: a claim past the last one adds 1 too)
FUTEX_WAIT, FUTEX_WAKE, SYS_FUTEX = 128, 129, 202   # *_PRIVATE; x86-64 syscall number


def _ir() -> str:
    """The pool's native code, with the constants above (read when a pool is made)."""
    return "\n" + "\n".join([_DECLARATIONS, _worker_ir(), _run_ir(), _stop_ir()])


_DECLARATIONS = """declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()
declare i32 @sched_getcpu()
declare i32 @sched_getaffinity(i32, i64, ptr)
declare i32 @sched_setaffinity(i32, i64, ptr)
declare i64 @llvm.ctpop.i64(i64)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""


def _worker_ir() -> str:
    """`lt_pool_worker`: wait for a job, claim its chunks and run them, until the pool stops."""
    return "\n".join([_worker_setup_ir(), _worker_wait_ir(), _worker_claim_ir()])


def _worker_setup_ir() -> str:
    """The worker's entry: pointers into the state, the nap's timespec, the clocks started."""
    return f"""define void @lt_pool_worker(ptr %state) {{
entry:
  %seen.a = alloca i32, align 4          ; the generation whose chunks were all claimed when we looked
  %since.a = alloca i64, align 8         ; time of our last chunk (or wake)
  %last.a = alloca i64, align 8          ; time of the previous look at the word
  %word = getelementptr i8, ptr %state, i64 {WORD}
  %generation = getelementptr i8, ptr %state, i64 {WORD + 4}
  %sleepers = getelementptr i8, ptr %state, i64 {SLEEPERS}
  %done = getelementptr i8, ptr %state, i64 {DONE}
  %waiting = getelementptr i8, ptr %state, i64 {WAITING}
  %job = getelementptr i8, ptr %state, i64 {JOB}
  %args.p = getelementptr i8, ptr %state, i64 {JOB + 8}
  %extent.p = getelementptr i8, ptr %state, i64 {JOB + 16}
  %stop.p = getelementptr i8, ptr %state, i64 {JOB + 24}
  %helped = getelementptr i8, ptr %state, i64 {HELPED}
  %nap.p = getelementptr i8, ptr %state, i64 {NAP}
  %nap.time = alloca [2 x i64], align 8   ; struct timespec
  store i64 0, ptr %nap.time, align 8
  %nap.ns = getelementptr i8, ptr %nap.time, i64 8
  store i64 {NAP_NS}, ptr %nap.ns, align 8
  store i32 0, ptr %seen.a, align 4      ; (generation 0 has no chunks: a job published before
  %t0 = call i64 @llvm.readcyclecounter() ;  this thread ran is claimed from like any other)
  store i64 %t0, ptr %since.a, align 8
  store i64 %t0, ptr %last.a, align 8
  %launcher.cpu = getelementptr i8, ptr %state, i64 {LAUNCHER_CPU}
  %moved = getelementptr i8, ptr %state, i64 {MOVED}
  %mask = alloca [{MASK_WORDS} x i64], align 8      ; the cpus this thread may run on
  %away = alloca [{MASK_WORDS} x i64], align 8      ; the same but the launcher's
  %moved.at = alloca i64, align 8
  store i64 0, ptr %moved.at, align 8
  %got = call i32 @sched_getaffinity(i32 0, i64 {MASK_WORDS * 8}, ptr %mask)
  %got.ok = icmp eq i32 %got, 0
  br i1 %got.ok, label %count, label %counted
count:                                   ; how many cpus it may run on (1: never move)
  %k = phi i64 [ 0, %entry ], [ %k.1, %count ]
  %n = phi i64 [ 0, %entry ], [ %n.1, %count ]
  %m.p = getelementptr i64, ptr %mask, i64 %k
  %m = load i64, ptr %m.p, align 8
  %bits = call i64 @llvm.ctpop.i64(i64 %m)
  %n.1 = add i64 %n, %bits
  %k.1 = add i64 %k, 1
  %more = icmp ult i64 %k.1, {MASK_WORDS}
  br i1 %more, label %count, label %counted
counted:
  %allowed = phi i64 [ 0, %entry ], [ %n.1, %count ]
  %can.move = icmp ugt i64 %allowed, 1
  br label %wait
"""


def _worker_wait_ir() -> str:
    """The worker's wait for a job: spin, then yield, then sleep on the futex; nap where
    its core is wanted."""
    return f"""wait:                                    ; until a new generation, or chunks left to claim
  %w = load atomic i64, ptr %word acquire, align 8
  %w.gen64 = lshr i64 %w, 32
  %w.gen = trunc i64 %w.gen64 to i32
  %seen = load i32, ptr %seen.a, align 4
  %fresh = icmp ne i32 %w.gen, %seen
  %w.next = and i64 %w, 65535
  %w.parts16 = lshr i64 %w, 16
  %w.parts = and i64 %w.parts16, 65535
  %open = icmp ult i64 %w.next, %w.parts
  %go = or i1 %fresh, %open
  br i1 %go, label %claim, label %idle

idle:
  %t = call i64 @llvm.readcyclecounter()
  %last = load i64, ptr %last.a, align 8
  store i64 %t, ptr %last.a, align 8
  %gap = sub i64 %t, %last
  %preempted = icmp ugt i64 %gap, {PREEMPTED_CYCLES}
  br i1 %can.move, label %where, label %judge
where:                                   ; on the launcher's cpu: move off it (not nap)
  %mine.cpu = call i32 @sched_getcpu()
  %theirs = load atomic i32, ptr %launcher.cpu monotonic, align 4
  %same = icmp eq i32 %mine.cpu, %theirs
  %known = icmp ult i32 %mine.cpu, {MASK_WORDS * 64}   ; (-1: sched_getcpu failed)
  %stacked = and i1 %same, %known
  %moved.last = load i64, ptr %moved.at, align 8
  %since.move = sub i64 %t, %moved.last
  %may = icmp ugt i64 %since.move, {MOVE_CYCLES}
  %go.move = and i1 %stacked, %may
  br i1 %go.move, label %move, label %judge
move:
  store i64 %t, ptr %moved.at, align 8
  call void @llvm.memcpy.p0.p0.i64(ptr %away, ptr %mask, i64 {MASK_WORDS * 8}, i1 false)
  %cpu64 = zext i32 %mine.cpu to i64
  %word.i = lshr i64 %cpu64, 6
  %bit.i = and i64 %cpu64, 63
  %bit = shl i64 1, %bit.i
  %away.p = getelementptr i64, ptr %away, i64 %word.i
  %away.w = load i64, ptr %away.p, align 8
  %notbit = xor i64 %bit, -1
  %away.w1 = and i64 %away.w, %notbit
  store i64 %away.w1, ptr %away.p, align 8
  call i32 @sched_setaffinity(i32 0, i64 {MASK_WORDS * 8}, ptr %away)   ; (moves this thread now)
  call i32 @sched_setaffinity(i32 0, i64 {MASK_WORDS * 8}, ptr %mask)
  atomicrmw add ptr %moved, i32 1 monotonic
  %t4 = call i64 @llvm.readcyclecounter()
  store i64 %t4, ptr %last.a, align 8
  br label %wait
judge:
  br i1 %preempted, label %nap, label %policy
policy:
  %since = load i64, ptr %since.a, align 8
  %waited = sub i64 %t, %since
  %spinning = icmp ult i64 %waited, {SPIN_CYCLES}
  br i1 %spinning, label %pause, label %later
pause:
  call void @llvm.x86.sse2.pause()
  br label %wait
later:
  %yielding = icmp ult i64 %waited, {YIELD_CYCLES}
  br i1 %yielding, label %give, label %sleep
give:
  call i32 @sched_yield()
  br label %wait

nap:                                     ; the core is wanted: sleep a while, not woken by launches,
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %nap.p, i64 {FUTEX_WAIT}, i64 0, ptr %nap.time)
  %t3 = call i64 @llvm.readcyclecounter() ; then wait yielding from the start (no spin that
  %t3.early = sub i64 %t3, {SPIN_CYCLES}  ; keeps the core from whoever wanted it)
  store i64 %t3.early, ptr %since.a, align 8
  store i64 %t3, ptr %last.a, align 8
  br label %wait

sleep:                                   ; a job published after this check wakes us (see run)
  atomicrmw add ptr %sleepers, i32 1 seq_cst
  %again = load atomic i64, ptr %word seq_cst, align 8
  %again.gen64 = lshr i64 %again, 32
  %again.gen = trunc i64 %again.gen64 to i32
  %still = icmp eq i32 %again.gen, %seen
  br i1 %still, label %futex, label %awake
futex:
  %seen64 = zext i32 %seen to i64
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %generation, i64 {FUTEX_WAIT}, i64 %seen64, ptr null)
  br label %awake
awake:                                   ; (woken maybe on the launcher's cpu: look first)
  atomicrmw sub ptr %sleepers, i32 1 seq_cst
  %t2 = call i64 @llvm.readcyclecounter()
  store i64 %t2, ptr %since.a, align 8
  store i64 %t2, ptr %last.a, align 8
  br label %idle
"""


def _worker_claim_ir() -> str:
    """The worker's claims: run chunks of the open job (waking a sleeping launcher after
    each), back to waiting when none is left, out when the pool stops."""
    return f"""claim:
  %stop = load atomic i64, ptr %stop.p acquire, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %exit, label %take
take:                                    ; the claim names its generation: a chunk of an old job
  %c = atomicrmw add ptr %word, i64 1 acq_rel   ; is never run, whenever this thread woke
  %c.gen64 = lshr i64 %c, 32
  %c.gen = trunc i64 %c.gen64 to i32
  %c.next = and i64 %c, 65535
  %c.parts16 = lshr i64 %c, 16
  %c.parts = and i64 %c.parts16, 65535
  %mine = icmp ult i64 %c.next, %c.parts
  br i1 %mine, label %run, label %missed
run:                                     ; the job cannot change before this chunk counts done
  %fn = load ptr, ptr %job, align 8
  %args = load ptr, ptr %args.p, align 8
  %extent = load i64, ptr %extent.p, align 8
  %lo.n = mul i64 %extent, %c.next
  %lo = udiv i64 %lo.n, %c.parts
  %c.after = add i64 %c.next, 1
  %hi.n = mul i64 %extent, %c.after
  %hi = udiv i64 %hi.n, %c.parts
  call void %fn(ptr %args, i64 %lo, i64 %hi)
  atomicrmw add ptr %helped, i64 1 monotonic
  atomicrmw add ptr %done, i32 1 seq_cst
  %waiter = load atomic i32, ptr %waiting seq_cst, align 4
  %wake = icmp ne i32 %waiter, 0
  br i1 %wake, label %wake.launcher, label %take
wake.launcher:
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %done, i64 {FUTEX_WAKE}, i64 1)
  br label %take
missed:                                  ; all claimed: wait for the next generation
  store i32 %c.gen, ptr %seen.a, align 4
  %t1 = call i64 @llvm.readcyclecounter()
  store i64 %t1, ptr %since.a, align 8
  store i64 %t1, ptr %last.a, align 8
  br label %wait
exit:
  ret void
}}
"""


def _run_ir() -> str:
    """`lt_pool_run`: publish a job, claim its chunks like a worker, wait for the workers' chunks."""
    return "\n".join([_run_publish_ir(), _run_claim_ir(), _run_settle_ir()])


def _run_publish_ir() -> str:
    """The launch's entry: the job's fields, a new generation in the word, sleeping workers woken."""
    return f"""define void @lt_pool_run(ptr %state, ptr %fn, ptr %args, i64 %extent, i64 %parts) {{
entry:
  %own.a = alloca i64, align 8           ; chunks this thread ran, and their cycles
  %spent.a = alloca i64, align 8
  %word = getelementptr i8, ptr %state, i64 {WORD}
  %generation = getelementptr i8, ptr %state, i64 {WORD + 4}
  %sleepers = getelementptr i8, ptr %state, i64 {SLEEPERS}
  %done = getelementptr i8, ptr %state, i64 {DONE}
  %waiting = getelementptr i8, ptr %state, i64 {WAITING}
  %job = getelementptr i8, ptr %state, i64 {JOB}
  %args.p = getelementptr i8, ptr %state, i64 {JOB + 8}
  %extent.p = getelementptr i8, ptr %state, i64 {JOB + 16}
  store ptr %fn, ptr %job, align 8
  store ptr %args, ptr %args.p, align 8
  store i64 %extent, ptr %extent.p, align 8
  store atomic i32 0, ptr %done monotonic, align 4
  store i64 0, ptr %own.a, align 8
  store i64 0, ptr %spent.a, align 8
  %w = load atomic i64, ptr %word monotonic, align 8
  %w.gen = and i64 %w, -4294967296
  %new.gen = add i64 %w.gen, 4294967296  ; (wraps: only a change is looked for)
  %parts.f = shl i64 %parts, 16
  %new = or i64 %new.gen, %parts.f
  %cpu = call i32 @sched_getcpu()
  %cpu.p = getelementptr i8, ptr %state, i64 {LAUNCHER_CPU}
  store atomic i32 %cpu, ptr %cpu.p monotonic, align 4
  store atomic i64 %new, ptr %word seq_cst, align 8   ; publishes the job, chunk 0 next
  %asleep = load atomic i32, ptr %sleepers seq_cst, align 4
  %any = icmp ne i32 %asleep, 0
  br i1 %any, label %wake, label %claim
wake:                                    ; (then yield: a worker woken onto this cpu runs, sees
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %generation, i64 {FUTEX_WAKE}, i64 2147483647)
  call i32 @sched_yield()                 ;  it shares it with its launcher, and moves off)
  br label %claim
"""


def _run_claim_ir() -> str:
    """The launching thread's own chunks, timed (their mean time sets the settle's patience)."""
    return """claim:                                   ; take chunks until none is left, like any worker
  %c = atomicrmw add ptr %word, i64 1 monotonic
  %i = and i64 %c, 65535
  %mine = icmp ult i64 %i, %parts
  br i1 %mine, label %chunk, label %settle
chunk:
  %t.a = call i64 @llvm.readcyclecounter()
  %lo.n = mul i64 %extent, %i
  %lo = udiv i64 %lo.n, %parts
  %i.after = add i64 %i, 1
  %hi.n = mul i64 %extent, %i.after
  %hi = udiv i64 %hi.n, %parts
  call void %fn(ptr %args, i64 %lo, i64 %hi)
  %t.b = call i64 @llvm.readcyclecounter()
  %took = sub i64 %t.b, %t.a
  %spent = load i64, ptr %spent.a, align 8
  %spent.1 = add i64 %spent, %took
  store i64 %spent.1, ptr %spent.a, align 8
  %own = load i64, ptr %own.a, align 8
  %own.1 = add i64 %own, 1
  store i64 %own.1, ptr %own.a, align 8
  br label %claim
"""


def _run_settle_ir() -> str:
    """The launch's wait for the chunks workers claimed: a spin of about two chunks' time,
    then the futex."""
    return f"""settle:                                  ; wait only for chunks that workers claimed
  %own.n = load i64, ptr %own.a, align 8
  %others = sub i64 %parts, %own.n
  %need = trunc i64 %others to i32
  %spent.n = load i64, ptr %spent.a, align 8
  %some = icmp ne i64 %own.n, 0
  %own.d = select i1 %some, i64 %own.n, i64 1
  %per = udiv i64 %spent.n, %own.d        ; a worker's chunk should end within about two of ours;
  %per2 = shl i64 %per, 1                 ; past that (and a short spin) it was likely descheduled,
  %patience = add i64 %per2, {SPIN_CYCLES}  ; and this thread sleeps: its idle core may take it
  %t.w = call i64 @llvm.readcyclecounter()
  br label %wait
wait:
  %d = load atomic i32, ptr %done acquire, align 4
  %all = icmp uge i32 %d, %need
  br i1 %all, label %exit, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %waited = sub i64 %t, %t.w
  %short = icmp ult i64 %waited, %patience
  br i1 %short, label %wait, label %sleep
sleep:                                   ; a worker finishing after this check wakes us
  store atomic i32 1, ptr %waiting seq_cst, align 4
  %d2 = load atomic i32, ptr %done seq_cst, align 4
  %all2 = icmp uge i32 %d2, %need
  br i1 %all2, label %exit, label %futex
futex:
  %d2.64 = zext i32 %d2 to i64
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %done, i64 {FUTEX_WAIT}, i64 %d2.64, ptr null)
  br label %sleep
exit:
  store atomic i32 0, ptr %waiting monotonic, align 4
  ret void
}}
"""


def _stop_ir() -> str:
    """`lt_pool_stop`: the stop flag, then a generation every worker sees, sleepers and nappers woken."""
    return f"""define void @lt_pool_stop(ptr %state) {{
entry:
  %word = getelementptr i8, ptr %state, i64 {WORD}
  %generation = getelementptr i8, ptr %state, i64 {WORD + 4}
  %stop.p = getelementptr i8, ptr %state, i64 {JOB + 24}
  store atomic i64 1, ptr %stop.p seq_cst, align 8
  %w = load atomic i64, ptr %word monotonic, align 8
  %w.gen = and i64 %w, -4294967296
  %new = add i64 %w.gen, 4294967296      ; a new generation with no chunks: every worker looks
  store atomic i64 %new, ptr %word seq_cst, align 8
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %generation, i64 {FUTEX_WAKE}, i64 2147483647)
  %nap.p = getelementptr i8, ptr %state, i64 {NAP}
  store atomic i32 1, ptr %nap.p seq_cst, align 4
  call i64 (i64, ...) @syscall(i64 {SYS_FUTEX}, ptr %nap.p, i64 {FUTEX_WAKE}, i64 2147483647)
  ret void
}}
"""


_ENTRY_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_ENTRY_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_ENTRY_STOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p)




class NativePool:
    """`cores - 1` workers; `run(kernel address, args, extent)` cuts [0, extent) into chunks that
    the calling thread and whichever workers are awake claim. One launch at a time: a thread that
    finds the pool busy runs its kernel serially instead of waiting. `start=False` leaves the
    workers unstarted until `start()` (tests: a launch needs none of them)."""

    def __init__(self, cores: int, start: bool = True) -> None:
        self.workers = cores - 1
        self.state = np.zeros(STATE_BYTES // 8, dtype=np.int64)   # kept alive: the threads use it
        with LLVM_LOCK:
            self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_ir()), new_target_machine())
            self.engine.finalize_object()
            self._run = _ENTRY_RUN(self.engine.get_function_address("lt_pool_run"))
            self._stop = _ENTRY_STOP(self.engine.get_function_address("lt_pool_stop"))
            worker = _ENTRY_WORKER(self.engine.get_function_address("lt_pool_worker"))
        self.busy = threading.Lock()
        self.closed = False
        self.address = self.state.ctypes.data   # (once: numpy makes a new ctypes object per .ctypes)
        self.threads = [threading.Thread(target=worker, args=(self.address,), daemon=True,
                                         name=f"lt-cpu-{i + 1}") for i in range(self.workers)]
        if start:
            self.start()

    def start(self) -> None:
        previous = threading.stack_size(WORKER_STACK_BYTES)   # (kernels keep packed panels on the stack)
        try:
            for thread in self.threads:
                thread.start()
        finally:
            threading.stack_size(previous)

    @property
    def worker_chunks(self) -> int:
        """Chunks the workers (not the launching threads) have run since the pool started."""
        return int(self.state[HELPED // 8])

    @property
    def moves(self) -> int:
        """Times a worker moved off the cpu of the thread launching (see MOVE_CYCLES)."""
        return int(self.state.view(np.int32)[MOVED // 4])

    def run(self, program: ctypes._CFuncPtr, args: ctypes.Array, extent: int) -> None:
        parts = min(extent, CHUNKS_PER_THREAD * (self.workers + 1), MAX_PARTS)
        if parts <= 1 or self.workers == 0 or not self.busy.acquire(blocking=False):
            program(args, 0, extent)
            return
        try:
            if self.closed:
                program(args, 0, extent)
            else:
                self._run(self.address, program.address, args, extent, parts)
        finally:
            self.busy.release()

    def close(self) -> None:
        """Let the workers return (each does when it sees the stop flag); later launches run serially."""
        with self.busy:
            if self.closed:
                return
            self.closed = True
            self._stop(self.address)
        for thread in self.threads:
            if thread.is_alive():
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
