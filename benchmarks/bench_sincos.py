"""float32 sin/cos kernels from backends/cpu/mathlib.py at two git revisions, and numpy.

    python benchmarks/bench_sincos.py [--before cf98a69~1] [--after WORKTREE] [--rounds 7]

Each mathlib is compiled into tests/test_cpu_mathlib.py's loop kernel (one thread, no
lazytensor runtime: the cost of the math alone) and run on 1M float32 uniform in [-10, 10] and
in [-1e30, 1e30]. The machine may be shared and noisy: the versions take turns, `rounds` turns
of 20 calls each, and the table gives medians (and the fastest call).
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MATHLIB = "backends/cpu/mathlib.py"


def load_mathlib(revision: str):
    """mathlib.py as of `revision` ("WORKTREE": the file as it is now) as a module."""
    if revision == "WORKTREE":
        path = ROOT / MATHLIB
    else:
        text = subprocess.run(["git", "show", f"{revision}:{MATHLIB}"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        path = Path(tempfile.mkdtemp()) / "mathlib.py"
        path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"mathlib_{abs(hash(revision))}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def kernels(mathlib) -> dict:
    """{op: compiled kernel} through the test harness, with `mathlib` in place of its own."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_cpu_mathlib as harness
    saved = harness.mathlib
    harness.mathlib = mathlib
    try:
        return {op: harness.Compiled(op, "float") for op in ("sin", "cos")}
    finally:
        harness.mathlib = saved


def timings(fn, x: np.ndarray, calls: int = 20) -> list[float]:
    fn(x)
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(x)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="cf98a69~1", help="git revision of the old mathlib")
    parser.add_argument("--after", default="WORKTREE", help="git revision of the new one")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    inputs = {f"[{lo:g}, {hi:g}]": rng.uniform(lo, hi, 1 << 20).astype(np.float32)
              for lo, hi in ((-10.0, 10.0), (-1e30, 1e30))}
    versions = {"before": kernels(load_mathlib(args.before)), "after": kernels(load_mathlib(args.after))}
    times: dict[tuple, list[float]] = {}
    for _ in range(args.rounds):
        for range_name, x in inputs.items():
            for op in ("sin", "cos"):
                times.setdefault((op, range_name, "numpy"), []).extend(timings(getattr(np, op), x))
                for version, compiled in versions.items():
                    times.setdefault((op, range_name, version), []).extend(timings(compiled[op], x))
    print(f"before = {args.before}, after = {args.after}; ms per call on 1M float32, one thread "
          "(median, fastest); ratio = numpy's median / ours")
    print("| op | inputs | numpy | before | after | numpy/before | numpy/after | after/before |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for op in ("sin", "cos"):
        for range_name in inputs:
            med = {v: statistics.median(times[op, range_name, v]) for v in ("numpy", "before", "after")}
            low = {v: min(times[op, range_name, v]) for v in ("numpy", "before", "after")}
            cells = [f"{1e3 * med[v]:.3f} ({1e3 * low[v]:.3f})" for v in ("numpy", "before", "after")]
            print(f"| {op} | {range_name} | " + " | ".join(cells) + f" | {med['numpy'] / med['before']:.2f}x"
                  f" | {med['numpy'] / med['after']:.2f}x | {med['after'] / med['before']:.2f} |")


if __name__ == "__main__":
    main()
