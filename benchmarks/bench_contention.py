"""The cpu worker pool when other threads or processes want the cores.

    python benchmarks/bench_contention.py [--steps 300] [--turns 5] [--only mixed|hog]
                                          [--pool-module PATH]

mixed: a 256x256 float32 matmul in lazytensor (realized, its plan cached) and in numpy (OpenBLAS,
whose threads spin for a while after each call and so hold a core), each alone in a loop, then
one after the other in one loop. The libraries take turns (`turns` turns of `steps` iterations,
each after a pause); the table gives the median over turns of each loop's mean and median
iteration, and the mixed loop against the sum of each alone (the goal: at most 1.3).

hog: bench_train's MLP step (784-512-10, batch 128) under lt.jit, `steps` steps quiet and then
while another process spins on one core (`python -c "while True: pass"`, started here and killed
after); the median, p95 and mean step (the goal: p95 at most 1.5x the median under the hog).

`--pool-module` takes the worker pool from another threads.py, to compare policies in one
checkout: `git show <commit>:backends/cpu/threads.py > /tmp/old_threads.py`. `LT_NATIVE_THREADS=0`
gives the Python thread pool. The chunks the workers (not the launching thread) ran are counted
where the pool counts them. On a shared machine others' work spoils the tails: each table says
how many cores other processes kept busy while it was timed (from /proc); trust a run near 0.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

import numpy as np

import lazytensor as lt
from bench_train import BATCH, SIZES, lazytensor_step, problem   # (this folder is on the path when a benchmark runs)

SETTLE = 0.3   # seconds idle before a turn: the other loop's threads (OpenBLAS's, ours) go quiet
TICKS = os.sysconf("SC_CLK_TCK")


class OtherLoad:
    """Cores kept busy meanwhile by processes other than this one and its hog (from /proc): a
    shared machine's other work makes any figure here worse, and this says how much there was."""

    def __init__(self) -> None:
        self.seconds, self.busy = 0.0, 0.0

    @staticmethod
    def _machine() -> float:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS   # all but idle and iowait

    @staticmethod
    def _process(pid: int | str = "self") -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS   # utime, stime

    def start(self, hog: subprocess.Popen | None = None) -> None:
        self.hog = hog
        self.t0, self.m0, self.p0 = time.perf_counter(), self._machine(), self._process()
        self.h0 = self._process(hog.pid) if hog else 0.0

    def stop(self) -> None:
        used = self._machine() - self.m0 - (self._process() - self.p0)
        if self.hog:
            used -= self._process(self.hog.pid) - self.h0
        self.seconds += time.perf_counter() - self.t0
        self.busy += max(0.0, used)

    def __str__(self) -> str:
        return f"other processes kept {self.busy / max(self.seconds, 1e-9):.2f} cores busy meanwhile"


def use_pool_module(path: str) -> None:
    """Make the cpu device build its worker pool from the threads.py at `path` (before its first
    parallel launch, which builds the pool)."""
    from lazytensor.backends.cpu import device as cpu_device
    name = "lazytensor.backends.cpu._compared_threads"   # (a name in the package: its relative imports work)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    cpu_device.worker_pool = module.worker_pool


def worker_chunks() -> int | None:
    from lazytensor.devices import runtime
    pool = runtime("cpu").device._threads
    return getattr(pool, "worker_chunks", None)


def iteration_times(fns: list[Callable[[], object]], steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        for fn in fns:
            fn()
        times.append(time.perf_counter() - start)
    return times


def percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_mixed(steps: int, turns: int) -> None:
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    a, b = lt.asarray(a_np), lt.asarray(b_np)

    def lt_matmul() -> None:
        lt.realize(a @ b)

    def np_matmul() -> None:
        a_np @ b_np

    np.testing.assert_allclose((a @ b).numpy(), a_np @ b_np, rtol=1e-4, atol=1e-3)
    loops = {"lazytensor alone": [lt_matmul], "numpy alone": [np_matmul], "numpy then lazytensor": [np_matmul, lt_matmul]}
    for fns in loops.values():
        iteration_times(fns, 50)   # warm-up: compiled, plan cached, pools started
    means: dict[str, list[float]] = {name: [] for name in loops}
    medians: dict[str, list[float]] = {name: [] for name in loops}
    chunks_before = worker_chunks()
    load = OtherLoad()
    for _ in range(turns):
        for name, fns in loops.items():
            time.sleep(SETTLE)
            load.start()
            times = iteration_times(fns, steps)
            load.stop()
            means[name].append(statistics.mean(times))
            medians[name].append(statistics.median(times))
    chunks = worker_chunks()

    mean = {name: statistics.median(v) * 1e3 for name, v in means.items()}
    median = {name: statistics.median(v) * 1e3 for name, v in medians.items()}
    print(f"256x256 float32 matmul, {turns} turns of {steps} iterations each (median over turns)\n")
    print(f"| {'loop':<22} | {'mean ms / iter':>14} | {'median ms / iter':>16} |")
    print(f"|{'-' * 24}|{'-' * 15}:|{'-' * 17}:|")
    for name in loops:
        print(f"| {name:<22} | {mean[name]:>14.3f} | {median[name]:>16.3f} |")
    alone_mean = mean["lazytensor alone"] + mean["numpy alone"]
    alone_median = median["lazytensor alone"] + median["numpy alone"]
    print(f"\nmixed / (sum alone): {mean['numpy then lazytensor'] / alone_mean:.2f} by means, "
          f"{median['numpy then lazytensor'] / alone_median:.2f} by medians (goal: <= 1.3)")
    if chunks is not None and chunks_before is not None:
        print(f"chunks run by workers while timed: {chunks - chunks_before}")
    print(f"({load})")


def training_step() -> Callable[[], float]:
    weights, x, labels = problem()
    return lazytensor_step(weights, x, labels, "cpu", jit=True)


def bench_hog(steps: int, turns: int) -> None:
    step = training_step()
    for _ in range(20):
        step()
    rows: dict[str, list[float]] = {"quiet": [], "one core busy": []}
    chunks: dict[str, int] = {name: 0 for name in rows}
    load = OtherLoad()
    for _ in range(turns):
        for name in rows:
            hog = None
            if name != "quiet":
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                time.sleep(SETTLE)
                before = worker_chunks()
                load.start(hog)
                rows[name] += iteration_times([step], steps)
                load.stop()
                after = worker_chunks()
                if before is not None:
                    chunks[name] += after - before
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
    print(f"\none SGD step of an MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, under lt.jit; {turns} turns "
          f"of {steps} steps, quiet and with another process spinning on one core\n")
    print(f"| {'while':<13} | {'median ms':>9} | {'p95 ms':>7} | {'mean ms':>7} | {'max ms':>7} | {'p95 / median':>12} | {'worker chunks':>13} |")
    print(f"|{'-' * 15}|{'-' * 10}:|{'-' * 8}:|{'-' * 8}:|{'-' * 8}:|{'-' * 13}:|{'-' * 14}:|")
    for name, times in rows.items():
        median, p95 = statistics.median(times), percentile(times, 0.95)
        print(f"| {name:<13} | {median * 1e3:>9.3f} | {p95 * 1e3:>7.3f} | {statistics.mean(times) * 1e3:>7.3f} | "
              f"{max(times) * 1e3:>7.2f} | {p95 / median:>12.2f} | {chunks[name]:>13} |")
    print(f"\n(goal: p95 / median <= 1.5 with one core busy; {load})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="iterations (steps) per turn")
    parser.add_argument("--turns", type=int, default=5, help="turns per loop")
    parser.add_argument("--only", choices=("mixed", "hog"))
    parser.add_argument("--pool-module", help="a threads.py to take the worker pool from")
    args = parser.parse_args()
    if args.pool_module:
        use_pool_module(args.pool_module)
    print(f"{len(os.sched_getaffinity(0))} cores; pool: {args.pool_module or 'this checkout'}"
          f"{' (LT_NATIVE_THREADS=0)' if os.environ.get('LT_NATIVE_THREADS') == '0' else ''}\n")
    if args.only in (None, "mixed"):
        bench_mixed(args.steps, args.turns)
    if args.only in (None, "hog"):
        bench_hog(args.steps, args.turns)


if __name__ == "__main__":
    main()
