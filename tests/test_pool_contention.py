"""The native worker pool's hand-off when workers are missing, late or descheduled: a launch is
finished by whoever is awake (the launching thread alone if need be), every index of every launch
is visited exactly once, a worker that comes late never runs a chunk of a finished job, and
close() ends workers whether they spin, sleep or nap. Correctness only: no timing is asserted."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time

import llvmlite.binding as llvm
import numpy as np
import pytest

from lazytensor.backends.cpu.compiler import LLVM_LOCK, new_target_machine
from lazytensor.backends.cpu.threads import NativePool, native_supported

pytestmark = pytest.mark.skipif(not native_supported(), reason="the native hand-off needs Linux on x86-64")

# A kernel-shaped chunk function (args, start, end): hits[i] += 1 for i in [start, end), where
# hits is the first pointer of args. Native, so chunks are short and run with no GIL.
_COUNT_IR = """
define void @count(ptr %args, i64 %lo, i64 %hi) {
entry:
  %hits = load ptr, ptr %args, align 8
  br label %check
check:
  %i = phi i64 [ %lo, %entry ], [ %next, %body ]
  %more = icmp slt i64 %i, %hi
  br i1 %more, label %body, label %done
body:
  %p = getelementptr i64, ptr %hits, i64 %i
  atomicrmw add ptr %p, i64 1 monotonic
  %next = add i64 %i, 1
  br label %check
done:
  ret void
}
"""
_CHUNK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


@pytest.fixture(scope="module")
def count():
    with LLVM_LOCK:
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_COUNT_IR), new_target_machine())
        engine.finalize_object()
        address = engine.get_function_address("count")
    program = _CHUNK(address)
    program.address = address   # (what the pool calls; the object itself is the serial path)
    program.engine = engine     # the code lives as long as the program
    return program


class Job:
    """One launch's own counters, so that a chunk run for the wrong launch shows in both."""

    def __init__(self, extent: int, size: int = 0) -> None:
        self.extent = extent
        self.hits = np.zeros(max(size, extent) + 8, dtype=np.int64)
        self.args = (ctypes.c_void_p * 1)(self.hits.ctypes.data)

    def run(self, pool: NativePool, program) -> None:
        pool.run(program, self.args, self.extent)

    def check(self) -> None:
        assert (self.hits[:self.extent] == 1).all() and not self.hits[self.extent:].any(), \
            f"extent {self.extent}: {np.flatnonzero(self.hits != (np.arange(self.hits.size) < self.extent))[:10]}"


def _in_thread(work, timeout: float = 240) -> None:
    """Run `work` in a thread and fail (rather than hang the run) if it does not end in time."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # reported below
            failures.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the pool hung"
    assert not failures, failures[0]


class Hogs:
    """`n` other processes that spin on a core each while the block runs."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> "Hogs":
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc) -> None:
        for p in self.processes:
            p.kill()
            p.wait()


def test_a_launch_needs_no_worker_and_a_late_worker_runs_no_old_chunk(count):
    pool = NativePool(4, start=False)   # three workers, none running yet
    jobs = [Job(extent) for extent in (2, 3, 5, 7, 16, 100, 1000)]
    for job in jobs:
        _in_thread(lambda: job.run(pool, count), timeout=60)
        job.check()
    assert pool.worker_chunks == 0   # the launching thread ran every chunk
    pool.start()                     # workers that come after the jobs (as if woken late)
    time.sleep(0.05)
    for job in jobs:
        job.check()                  # none of them ran a chunk of an old launch
    for extent in (1, 2, 9, 64, 1000):
        job = Job(extent)
        job.run(pool, count)
        job.check()
    pool.close()
    assert not any(t.is_alive() for t in pool.threads)
    job = Job(50)
    job.run(pool, count)             # a closed pool runs the kernel itself
    job.check()


@pytest.mark.parametrize("hogs", [0, 1, 2], ids=["quiet", "one-core-busy", "every-core-busy"])
def test_every_index_once_on_an_oversubscribed_pool(count, hogs):
    """More workers than cores, with other processes spinning: workers are descheduled holding
    chunks, nap and come back late; each launch still visits each index once, and ends."""
    cores = len(os.sched_getaffinity(0))
    rng = np.random.default_rng(hogs)
    extents = rng.integers(1, 400, size=1500)
    extents[::7] = 1 << 14   # and some long launches, whose chunks take a while
    jobs = [Job(int(e)) for e in extents]

    def work() -> None:
        pool = NativePool(2 * cores + 2)
        for i, job in enumerate(jobs):
            job.run(pool, count)
            job.check()   # complete when the launch returns
            if i % 300 == 299:
                time.sleep(0.01)   # the workers go from spinning to yielding and sleeping
        pool.close()
        assert not any(t.is_alive() for t in pool.threads)

    with Hogs({0: 0, 1: 1, 2: cores}[hogs]):
        _in_thread(work)
    for job in jobs:
        job.check()


def test_close_ends_sleeping_workers_and_launches_after_a_long_idle(count):
    pool = NativePool(3)
    Job(100).run(pool, count)
    time.sleep(0.1)   # past the spin and yield budget: the workers sleep in the kernel
    job = Job(1000)
    job.run(pool, count)   # a job published while every worker sleeps
    job.check()
    time.sleep(0.1)
    _in_thread(pool.close, timeout=60)
    assert not any(t.is_alive() for t in pool.threads)


def test_several_threads_share_one_pool(count):
    """One launch at a time: the others run serially; none waits, none is lost."""
    pool = NativePool(len(os.sched_getaffinity(0)) + 1)
    jobs = [[Job(int(e)) for e in np.random.default_rng(k).integers(1, 3000, size=300)] for k in range(4)]

    def work() -> None:
        threads = [threading.Thread(target=lambda js=js: [(j.run(pool, count), j.check()) for j in js]) for js in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    _in_thread(work)
    for js in jobs:
        for job in js:
            job.check()
    pool.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cpus")
def test_a_worker_on_its_launchers_cpu_moves_off_it(count):
    """Linux may wake a worker on the cpu of the thread that woke it; there the two take turns
    while another cpu idles, and every launch runs on one core. Put there by hand (both pinned
    to one cpu, the worker's own mask still all of them), the worker moves itself off and keeps
    its freedom: it ends on another cpu, still allowed all, and runs chunks again."""
    cpus = sorted(os.sched_getaffinity(0))
    pool = NativePool(2)
    try:
        Job(1000).run(pool, count)
        (worker,) = [t.native_id for t in pool.threads]

        def work() -> None:
            os.sched_setaffinity(0, {cpus[0]})   # (this thread only)
            try:
                os.sched_setaffinity(worker, {cpus[0]})
                helped, moved = pool.worker_chunks, pool.moves   # (it may have moved before: a move
                deadline = time.monotonic() + 30                 # counts once its mask is back)
                while pool.moves == moved or pool.worker_chunks == helped:
                    assert time.monotonic() < deadline, "the worker never moved off its launcher's cpu"
                    job = Job(20000)
                    job.run(pool, count)
                    job.check()
            finally:
                os.sched_setaffinity(0, cpus)

        _in_thread(work)
        assert sorted(os.sched_getaffinity(worker)) == cpus   # (free again, wherever it went)
    finally:
        _in_thread(pool.close, timeout=60)
