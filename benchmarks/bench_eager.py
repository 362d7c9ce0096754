"""Does lazytensor feel eager (issue 18)? numpy-style code without realize(), timed against the
same code with realize() each step, numpy and torch (when installed), in one process with an
empty kernel cache (so the first run includes compiling).

    python benchmarks/bench_eager.py [--out benchmarks/results]

1. Gradient descent on least squares, `x = x - lr * (A.T @ (A @ x - b))`, 200 steps, at
   200x50 and 2000x500: no realize() (lazytensor bounds the pending work itself), realize()
   each step, numpy, torch. Kernels compiled in the first run; times of the first (cold) and
   the best of 5 later (warm) runs.
2. `y = y - y.mean() + 1.0`, 320 steps of 1,000 float32.
3. Reading the 75 elements of a realized (5, 1, 1, 5, 3) bool array one at a time with
   `bool(out[idx])`: microseconds an element, kernels run.

Writes the table to --out/bench_eager.md.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LT_CACHE_DIR", tempfile.mkdtemp(prefix="lt-bench-eager-"))

import numpy as np  # noqa: E402

import lazytensor as lt  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def timed(fn, runs: int = 5) -> tuple[float, float]:
    """(first run, best of `runs` later runs) in seconds."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return first, best


def lazy_rows(lazy) -> list[tuple]:
    """Rows for the loop `lazy(realize_each_step)` builds: without realize(), then with it
    (name, first run, best warm run, kernels compiled or loaded from disk by the first run)."""
    rows = []
    for name, fn in (("lazytensor, no realize()", lazy(False)), ("lazytensor, realize() each step", lazy(True))):
        compiled = lt.stats()["kernels_compiled"] + lt.stats()["disk_cache_hits"]
        first, best = timed(fn)
        rows.append((name, first, best, lt.stats()["kernels_compiled"] + lt.stats()["disk_cache_hits"] - compiled))
    return rows


def descent(n: int, m: int, steps: int = 200) -> list[tuple]:
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((n, m)) / np.sqrt(n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    A, B = lt.asarray(a), lt.asarray(b)

    def lazy(realize_each_step: bool):
        def run():
            x = lt.zeros(m)
            for _ in range(steps):
                x = x - 0.01 * (A.T @ (A @ x - B))
                if realize_each_step:
                    x.realize()
            return float((x * x).sum())
        return run

    def numpy_run():
        x = np.zeros(m, np.float32)
        for _ in range(steps):
            x = x - np.float32(0.01) * (a.T @ (a @ x - b))
        return float((x * x).sum())

    rows = lazy_rows(lazy)
    rows.append(("numpy", *timed(numpy_run), None))
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)

        def torch_run():
            x = torch.zeros(m)
            for _ in range(steps):
                x = x - 0.01 * (ta.T @ (ta @ x - tb))
            return float((x * x).sum())
        rows.append(("torch", *timed(torch_run), None))
    return rows


def centering(steps: int = 320) -> list[tuple]:
    values = np.random.default_rng(1).standard_normal(1000).astype(np.float32)

    def lazy(realize_each_step: bool):
        def run():
            y = lt.asarray(values)
            for _ in range(steps):
                y = y - y.mean() + 1.0
                if realize_each_step:
                    y.realize()
            return float(y.sum())
        return run

    def numpy_run():
        y = values
        for _ in range(steps):
            y = y - y.mean() + np.float32(1.0)
        return float(y.sum())

    rows = lazy_rows(lazy)
    rows.append(("numpy", *timed(numpy_run), None))
    return rows


def element_reads() -> tuple[float, float, int]:
    values = np.random.default_rng(2).standard_normal((5, 1, 1, 5, 3)) > 0
    out = lt.asarray(values).realize()
    indices = list(np.ndindex(*values.shape))
    launched = lt.stats()["kernels_launched"]
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        for i in indices:
            bool(out[i])
        best = min(best, (time.perf_counter() - start) / len(indices))
    start = time.perf_counter()
    for _ in range(20):
        for i in indices:
            bool(values[i])
    numpy_us = (time.perf_counter() - start) / len(indices) / 20 * 1e6
    return best * 1e6, numpy_us, lt.stats()["kernels_launched"] - launched


def table(title: str, rows: list[tuple]) -> list[str]:
    reference = next(best for name, _, best, _ in rows if name.startswith("lazytensor, realize"))
    lines = [f"### {title}", "", "| | first run (s) | warm, best of 5 (s) | warm vs realize() each step | kernels compiled |",
             "|---|---:|---:|---:|---:|"]
    for name, first, best, compiled in rows:
        lines.append(f"| {name} | {first:.4f} | {best:.4f} | {best / reference:.2f}x | "
                     f"{'' if compiled is None else compiled} |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    lines = ["# bench_eager", ""]
    lines += table("gradient descent 200x50, 200 steps", descent(200, 50))
    lines += table("gradient descent 2000x500, 200 steps", descent(2000, 500))
    lines += table("y = y - y.mean() + 1.0, 320 steps of 1,000", centering())
    us, numpy_us, launched = element_reads()
    lines += ["### reading elements of a realized (5, 1, 1, 5, 3) bool array: bool(out[idx])", "",
              f"lazytensor {us:.2f} us an element, {launched} kernels run; numpy {numpy_us:.2f} us", ""]
    text = "\n".join(lines)
    print(text)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench_eager.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
