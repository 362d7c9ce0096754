"""What a kernel costs once it is compiled, and what a fresh process costs (issue 7).

    python benchmarks/bench_dispatch.py [--out benchmarks/results]

1. A cached small op: realizing x * 2 + 1 on 1024 float32 (building the graph, finding its plan,
   allocating, launching), the same under lt.jit (replayed), against numpy's and torch's eager
   op on the same data. The best of 15 rounds of 1000 calls: the floor, which noise on a shared
   machine only raises.
2. lt.jit replay: a jitted function that realizes a chain of 50 small steps (50 kernels of 1024
   float32), replayed: time per kernel, running the kernels included (each takes well under a
   microsecond), against the same function run eagerly; and a chain with reductions in it (row
   means and full sums of a 32x32 tensor).
3. Cold start: `examples/train_digits.py --epochs 1` in a fresh process, with an empty kernel
   cache and then with the cache that run filled (wall time and kernels compiled).

Writes the table to --out/bench_dispatch.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

import lazytensor as lt

try:
    import torch
except ImportError:
    torch = None

ROOT = Path(__file__).resolve().parent.parent


def floor_us(fn: Callable[[], object], calls: int = 1000, rounds: int = 15) -> float:
    for _ in range(calls):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def cold_start(cache: str) -> tuple[float, int]:
    """(seconds, kernels compiled) of one epoch of train_digits in a fresh process."""
    env = {**os.environ, "LT_CACHE_DIR": cache}
    env.pop("LT_DEBUG", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--epochs", "1"],
                          capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    line = next(line for line in done.stdout.splitlines() if "kernels compiled" in line)
    return seconds, int(line.rsplit("(", 1)[1].split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    data = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    x = lt.asarray(data)
    lines = ["| cached small op 1024: x * 2 + 1 | time per call | vs lazytensor |", "|---|---:|---:|"]
    ours = floor_us(lambda: (x * 2 + 1).realize())
    small = lt.jit(lambda t: t * 2 + 1)
    rows = [("lazytensor realize", ours), ("lazytensor lt.jit replay", floor_us(lambda: small(x))),
            ("numpy", floor_us(lambda: data * 2 + 1))]
    if torch is not None:
        t = torch.from_numpy(data)
        rows.append(("torch eager", floor_us(lambda: t * 2 + 1)))
    lines += [f"| {name} | {us:.1f} us | {us / ours:.2f}x |" for name, us in rows]
    chain = 50

    def steps(x: lt.Tensor) -> lt.Tensor:
        for _ in range(chain):
            x = (x * 1.0001 + 1.0).realize()
        return x
    jitted = lt.jit(steps)
    launched = lt.stats()["kernels_launched"]
    jitted(x)
    assert lt.stats()["kernels_launched"] - launched == chain
    replay, eager = floor_us(lambda: jitted(x), 100) / chain, floor_us(lambda: steps(x), 100) / chain
    lines += ["", f"| a chain of {chain} kernels of 1024 float32 | time per kernel | vs eager |", "|---|---:|---:|",
              f"| lt.jit replay | {replay:.2f} us | {eager / replay:.1f}x |",
              f"| eager (graph, plan, launch) | {eager:.2f} us | 1.0x |"]
    matrix = lt.asarray(np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32))

    def reducing(x: lt.Tensor) -> lt.Tensor:   # a row mean (hoisted: one kernel) and a full sum (two)
        for _ in range(chain // 2):
            x = (x - x.mean(axis=1, keepdims=True) * 0.5).realize()
            x = (x * 1.0001 + x.sum() * 1e-6).realize()
        return x
    jitted_reducing = lt.jit(reducing)
    launched = lt.stats()["kernels_launched"]
    jitted_reducing(matrix)
    kernels = lt.stats()["kernels_launched"] - launched
    replay = floor_us(lambda: jitted_reducing(matrix), 100) / kernels
    eager = floor_us(lambda: reducing(matrix), 20) / kernels
    lines += ["", f"| a chain of {kernels} kernels with reductions, 32x32 float32 | time per kernel | vs eager |",
              "|---|---:|---:|", f"| lt.jit replay | {replay:.2f} us | {eager / replay:.1f}x |",
              f"| eager (graph, plan, launch) | {eager:.2f} us | 1.0x |"]
    with tempfile.TemporaryDirectory() as cache:
        cold, cold_compiled = cold_start(cache)
        warm, warm_compiled = cold_start(cache)
    lines += ["", "| train_digits, 1 epoch, fresh process | wall time | kernels compiled |", "|---|---:|---:|",
              f"| empty kernel cache | {cold:.1f} s | {cold_compiled} |",
              f"| warm kernel cache | {warm:.1f} s | {warm_compiled} |"]
    print("\n".join(lines))
    os.makedirs(args.out, exist_ok=True)
    (Path(args.out) / "bench_dispatch.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
