"""Core workloads, lazytensor vs numpy (and torch / jax.jit when installed), same data, one run.

    python benchmarks/bench_core.py [--repeat 5] [--out benchmarks/results] [--only matmul]

The libraries take turns (three turns each, after a pause and a warm-up call, `repeat` runs a
turn); the table gives the median time, lazytensor's speedup over each library (their time /
ours; above 1 is faster) and its rate against the machine's limits, measured first: a memory
copy probe and a peak-FMA probe. The table also goes to `--out`/bench_core.md, and a bar chart
to bench_core.png (matplotlib: the `bench` extra).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass
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


@dataclass
class Workload:
    name: str
    numpy: Callable[[], object]
    lt: Callable[[], object]
    torch: Optional[Callable[[], object]]
    jax: Optional[Callable[[], object]]
    flops: float = 0.0      # per call, for GFLOP/s
    nbytes: float = 0.0     # read + written per call, for the share of copy bandwidth
    slow: bool = False      # a few runs only (one call takes seconds somewhere)

    def rate(self, seconds: float, bandwidth: float, fma: float) -> str:
        """Its rate at `seconds` a call, against the machine's limits."""
        if self.flops:
            return f"{self.flops / seconds / 1e9:.0f} GFLOP/s ({self.flops / seconds / fma:.0%} of FMA)"
        if self.nbytes:
            return f"{self.nbytes / seconds / 1e9:.0f} GB/s ({self.nbytes / seconds / bandwidth:.0%} of copy)"
        return "-"


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

    yield Workload("fused chain 16M: (a*b+c)*0.5+sqrt(abs(a))",
                   lambda: (a * b + c) * 0.5 + np.sqrt(np.abs(a)),
                   lambda: ((la * lb + lc) * 0.5 + la.abs().sqrt()).realize(),
                   _torch(lambda t: (t[0] * t[1] + t[2]) * 0.5 + t[0].abs().sqrt(), a, b, c),
                   _jax(lambda p, q, r: (p * q + r) * 0.5 + jnp.sqrt(jnp.abs(p)), a, b, c), nbytes=16 * n)
    yield Workload("row softmax 4096x4096", np_softmax, lt_softmax,
                   _torch(lambda t: torch.softmax(t[0], dim=1), x),
                   _jax(lambda v: jax.nn.softmax(v, axis=1), x), nbytes=2 * x.nbytes)
    yield Workload("row sums 4096x4096", lambda: x.sum(axis=1), lambda: lx.sum(axis=1).realize(),
                   _torch(lambda t: t[0].sum(dim=1), x), _jax(lambda v: v.sum(axis=1), x), nbytes=x.nbytes)
    yield Workload("exp 16M", lambda: np.exp(a), lambda: la.exp().realize(), _torch(lambda t: t[0].exp(), a),
                   _jax(lambda v: jnp.exp(v), a), nbytes=8 * n)
    # float32 sin/cos: |x| <= 10 takes the Cody-Waite reduction, |x| up to 1e30 the Payne-Hanek
    # one (backends/cpu/mathlib.py); a vector computes both and selects, so the two should match
    m = 1 << 20
    for low, high in ((-10.0, 10.0), (-1e30, 1e30)):
        v = rng.uniform(low, high, m).astype(np.float32)
        lv = lt.asarray(v)
        for fn in ("sin", "cos"):
            yield Workload(f"{fn} 1M fp32 in [{low:g}, {high:g}]", lambda v=v, fn=fn: getattr(np, fn)(v),
                           lambda lv=lv, fn=fn: getattr(lv, fn)().realize(),
                           _torch(lambda t, fn=fn: getattr(t[0], fn)(), v),
                           _jax(lambda u, fn=fn: getattr(jnp, fn)(u), v), nbytes=8 * m)
    for size in (1024, 2048):
        p, q = (rng.standard_normal((size, size)).astype(np.float32) for _ in range(2))
        lp, lq = lt.asarray(p), lt.asarray(q)
        yield Workload(f"matmul {size} fp32", lambda p=p, q=q: p @ q, lambda lp=lp, lq=lq: (lp @ lq).realize(),
                       _torch(lambda t: t[0] @ t[1], p, q), _jax(lambda u, v: u @ v, p, q), flops=2 * size ** 3)
    img = rng.standard_normal((8, 32, 56, 56)).astype(np.float32)
    weight = (rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)
    limg, lweight, lbias = lt.asarray(img), lt.asarray(weight), lt.asarray(bias)
    yield Workload("conv2d N8 C32->64 56x56 k3 +bias relu", lambda: _numpy_conv(img, weight, bias),
                   lambda: lt.nn.functional.relu(lt.nn.functional.conv2d(limg, lweight, lbias, padding=1)).realize(),
                   _torch(lambda t: torch.relu(torch.nn.functional.conv2d(t[0], t[1], t[2], padding=1)),
                          img, weight, bias),
                   _jax(lambda u, v, w: jax.nn.relu(jax.lax.conv(u, v, (1, 1), "SAME") + w[None, :, None, None]),
                        img, weight, bias),
                   flops=2 * 8 * 64 * 56 * 56 * 32 * 9, slow=True)
    yield Workload("cached small op 1024: x*2+1", lambda: small * 2 + 1, lambda: (lsmall * 2 + 1).realize(),
                   _torch(lambda t: t[0] * 2 + 1, small), _jax(lambda v: v * 2 + 1, small))


def _numpy_conv(img: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """What a numpy user writes: im2col through a strided view, then one matmul."""
    padded = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))   # N C H W kh kw
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(-1, weight[0].size)
    out = (cols @ weight.reshape(len(weight), -1).T + bias).reshape(img.shape[0], 56, 56, -1)
    return np.maximum(out.transpose(0, 3, 1, 2), 0)


def limits(repeat: int) -> tuple[float, float]:
    """The machine's limits as this process sees them: copy bandwidth (numpy copying 256 MB,
    read + write) and FMA throughput (one lazytensor kernel of nothing but FMAs over a
    array on every core: 8 independent chains of 13, joined by FMAs too; ~110 FMAs per element
    read make it compute-bound, and the array is large enough that building the graph of the
    call, ~0.3 ms, is a few percent of its time). 8 chains, unrolled twice, are 16 vectors in
    flight: enough to cover an FMA's latency on two units, and they fit in 16 vector registers
    (AVX2); the expression stays under MAX_KERNEL_NODES, so it is one kernel (16 chains of 17
    were three, each through memory: the probe read half of what a matmul reaches on Zen 3).
    Returns (bytes/s, FLOP/s)."""
    src = np.ones(1 << 26, dtype=np.float32)
    dst = np.empty_like(src)
    copy = median_time(lambda: np.copyto(dst, src), repeat)
    v = lt.asarray(np.ones((1024, 4096), dtype=np.float32))
    chains = [v * (1.0 + i / 64) + 0.5 for i in range(8)]
    for _ in range(12):
        chains = [t * 0.999 + 0.001 for t in chains]
    total = chains[0]
    for t in chains[1:]:
        total = total * 0.5 + t
    fmas = 8 * 13 + 7
    peak = median_time(lambda: lt.realize(total * 1.0), repeat)   # (a fresh tensor: computed each call)
    return 2 * src.nbytes / copy, 2 * fmas * v.size / peak


def start(repeat: int) -> tuple[float, float, str]:
    """Torch on every core we have, and the machine's limits: (bytes/s, FLOP/s, a line saying them)."""
    if torch is not None:
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    bandwidth, fma = limits(repeat)
    return bandwidth, fma, (f"limits here: copy {bandwidth / 1e9:.1f} GB/s (numpy, 256 MB), FMA {fma / 1e9:.0f} "
                            "GFLOP/s (lazytensor, compute-bound kernel)")


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
    parser.add_argument("--repeat", type=int, default=5, help="runs per turn (3 turns each)")
    parser.add_argument("--out", default="benchmarks/results", help="folder for bench_core.md and .png")
    parser.add_argument("--only", default="", help="run only the workloads whose name contains this text")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    bandwidth, fma, said = start(args.repeat)
    lines = [said, "",
             "| workload | numpy | lazytensor | vs numpy | torch | vs torch | jax.jit | vs jax | lt rate |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    rows = []
    for w in workloads(rng):
        if args.only not in w.name:
            continue
        medians = compare({"numpy": w.numpy, "lt": w.lt, "torch": w.torch, "jax": w.jax},
                          2 if w.slow else args.repeat)
        t_np, t_lt, t_torch, t_jax = (medians.get(k) for k in ("numpy", "lt", "torch", "jax"))
        rate = w.rate(t_lt, bandwidth, fma)
        cells = [w.name, _ms(t_np), _ms(t_lt), _ratio(t_np, t_lt), _ms(t_torch), _ratio(t_torch, t_lt),
                 _ms(t_jax), _ratio(t_jax, t_lt), rate]
        lines.append("| " + " | ".join(cells) + " |")
        rows.append((w.name, t_np, t_lt, t_torch, t_jax))
        print(lines[-1], flush=True)
    lines += ["", "(median of 3 turns, each after a pause and a warm-up; \"vs\" ratios above 1 mean lazytensor "
              "is faster)"]
    print("\n" + lines[-1])
    write_lines(args.out, "bench_core.md", lines)
    _chart(rows, os.path.join(args.out, "bench_core.png"))


def _ratio(theirs: Optional[float], ours: Optional[float]) -> str:
    return f"{theirs / ours:.2f}x" if theirs and ours else "-"


def _chart(rows: list[tuple], path: str) -> None:
    """Bars of each library's speed relative to numpy (log scale), one group per workload."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no chart: matplotlib is not installed; pip install -e '.[bench]')")
        return
    present = [(k, name) for k, name in enumerate(["lazytensor", "torch", "jax.jit"])
               if any(row[2 + k] for row in rows)]   # (libraries not installed get no bars)
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(present)
    for slot, (k, library) in enumerate(present):
        speedups = [row[1] / row[2 + k] if row[2 + k] else 0 for row in rows]
        ax.bar([i + slot * width for i in range(len(rows))], speedups, width, label=library)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("speed vs numpy (higher is faster)")
    ax.set_xticks([i + width for i in range(len(rows))], [r[0].split(":")[0] for r in rows], rotation=20, ha="right")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"chart: {path}")


def write_lines(folder: str, name: str, lines: list[str]) -> None:
    """A benchmark's table (its lines) as `folder`/`name`, the folder made where missing."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "w") as f:
        f.write("\n".join(lines) + "\n")


def _ms(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"


if __name__ == "__main__":
    main()
