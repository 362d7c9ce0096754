"""Core workloads, lazytensor vs numpy (and torch / jax.jit when installed), same data, one run.

    python benchmarks/bench_core.py [--repeat 15]

The libraries take turns (three turns each, after a pause and a warm-up call, `repeat` runs a
turn); the table gives the median time and the speedup over numpy (numpy time / lazytensor
time; above 1 is faster).
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Optional

import numpy as np

import lazytensor as lt

try:
    import torch
except ImportError:
    torch = None
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = None


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()
    return statistics.median(_times(fn, repeat))


def _times(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


# Seconds to stay idle before timing a library: the thread pools of the one timed before
# (OpenBLAS, OpenMP, ours) spin for a while after their last job and would take its cores.
SETTLE = 0.3


def compare(fns: dict[str, Optional[Callable[[], object]]], repeat: int, rounds: int = 3) -> dict[str, float]:
    """Median time of each function, timed in turns: `rounds` times over the libraries, each
    after an idle pause and a warm-up call, `repeat` calls a turn. Noise on a shared machine
    comes in bursts of seconds; taking turns spreads it over every library."""
    times: dict[str, list[float]] = {name: [] for name, fn in fns.items() if fn is not None}
    for _ in range(rounds):
        for name in times:
            time.sleep(SETTLE)
            fns[name]()
            times[name] += _times(fns[name], repeat)
    return {name: statistics.median(t) for name, t in times.items()}


def workloads(rng: np.random.Generator):
    n = 1 << 24
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    x = rng.standard_normal((4096, 4096)).astype(np.float32)
    small = rng.standard_normal(1024).astype(np.float32)
    la, lb, lc, lx, lsmall = (lt.asarray(v) for v in (a, b, c, x, small))

    def lt_softmax():
        e = (lx - lx.max(axis=1, keepdims=True)).exp()
        return (e / e.sum(axis=1, keepdims=True)).realize()

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    yield ("fused chain 16M: (a*b+c)*0.5+sqrt(abs(a))",
           lambda: (a * b + c) * 0.5 + np.sqrt(np.abs(a)),
           lambda: ((la * lb + lc) * 0.5 + la.abs().sqrt()).realize(),
           _torch(lambda t: (t[0] * t[1] + t[2]) * 0.5 + t[0].abs().sqrt(), a, b, c),
           _jax(lambda p, q, r: (p * q + r) * 0.5 + jnp.sqrt(jnp.abs(p)), a, b, c))
    yield ("row softmax 4096x4096", np_softmax, lt_softmax,
           _torch(lambda t: torch.softmax(t[0], dim=1), x),
           _jax(lambda v: jax.nn.softmax(v, axis=1), x))
    yield ("row sums 4096x4096", lambda: x.sum(axis=1), lambda: lx.sum(axis=1).realize(),
           _torch(lambda t: t[0].sum(dim=1), x), _jax(lambda v: v.sum(axis=1), x))
    yield ("cached small op 1024: x*2+1", lambda: small * 2 + 1, lambda: (lsmall * 2 + 1).realize(),
           _torch(lambda t: t[0] * 2 + 1, small), _jax(lambda v: v * 2 + 1, small))


def _torch(fn, *arrays) -> Optional[Callable]:
    if torch is None:
        return None
    tensors = [torch.from_numpy(v) for v in arrays]
    return lambda: fn(tensors)


def _jax(fn, *arrays) -> Optional[Callable]:
    if jax is None:
        return None
    jitted = jax.jit(fn)
    device_arrays = [jnp.asarray(v) for v in arrays]
    return lambda: jitted(*device_arrays).block_until_ready()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    header = "| workload | numpy | lazytensor | speedup vs numpy | torch | lt vs torch | jax.jit | lt vs jax |"
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, np_fn, lt_fn, torch_fn, jax_fn in workloads(rng):
        medians = compare({"numpy": np_fn, "lt": lt_fn, "torch": torch_fn, "jax": jax_fn}, args.repeat)
        t_np, t_lt, t_torch, t_jax = (medians.get(k) for k in ("numpy", "lt", "torch", "jax"))
        cells = [name, _ms(t_np), _ms(t_lt), f"{t_np / t_lt:.2f}x",
                 _ms(t_torch), f"{t_torch / t_lt:.2f}x" if t_torch else "-",
                 _ms(t_jax), f"{t_jax / t_lt:.2f}x" if t_jax else "-"]
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\n(median of 3 turns of {args.repeat} runs, each turn after a pause and a warm-up; ratios above 1 "
          "mean lazytensor is faster)")


def _ms(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"


if __name__ == "__main__":
    main()
