"""bfloat16 against PyTorch's bfloat16, and lazytensor's own float32, on the same data.

    python benchmarks/bench_bfloat16.py [--rounds 7]

Cases: an elementwise chain `x * y + x` on 4M values (memory-bound: bfloat16 moves half the
bytes of float32) and a 512 x 512 matmul. The machine may be shared and noisy: the libraries
take turns, `rounds` turns of 10 calls each, and the table gives each one's median and the ratio
of PyTorch's time to lazytensor's (above 1: lazytensor is faster). Each lazytensor call computes
its result anew (`realize()`; a plan cached after the first call), as a training step would.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import lazytensor as lt


def median_ms(fn, calls: int = 10) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def cases(rng: np.random.Generator):
    """(name, lazytensor bfloat16 fn, lazytensor float32 fn, torch bfloat16 fn or None)."""
    try:
        import torch
    except ImportError:
        torch = None
    shapes = {"x * y + x, 4M": ((1 << 22,), (1 << 22,)), "matmul 512": ((512, 512), (512, 512))}
    for name, (sa, sb) in shapes.items():
        a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
        xs = {dt: (lt.asarray(a, dtype=dt).realize(), lt.asarray(b, dtype=dt).realize()) for dt in (lt.bfloat16, lt.float32)}

        def run(dt, name=name, xs=xs):
            x, y = xs[dt]
            return ((x * y + x) if name.startswith("x") else (x @ y)).realize()
        theirs = None
        if torch is not None:
            tx, ty = (torch.from_dlpack(v) for v in xs[lt.bfloat16])
            theirs = (lambda tx=tx, ty=ty, name=name: (tx * ty + tx) if name.startswith("x") else (tx @ ty))
        yield name, (lambda run=run: run(lt.bfloat16)), (lambda run=run: run(lt.float32)), theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"{'case':<16} {'lt bf16 ms':>10} {'torch bf16 ms':>13} {'lt f32 ms':>10} {'torch/lt':>9}")
    for name, ours, ours32, theirs in cases(np.random.default_rng(0)):
        for fn in (ours, ours32, theirs):   # (warm-up: compile, first touch)
            if fn is not None:
                fn()
        timing = {"ours": [], "ours32": [], "theirs": []}
        for _ in range(args.rounds):   # (the libraries take turns)
            timing["ours"].append(median_ms(ours))
            timing["ours32"].append(median_ms(ours32))
            if theirs is not None:
                timing["theirs"].append(median_ms(theirs))
        ours_ms, ours32_ms = statistics.median(timing["ours"]), statistics.median(timing["ours32"])
        theirs_ms = statistics.median(timing["theirs"]) if timing["theirs"] else float("nan")
        print(f"{name:<16} {ours_ms:>10.3f} {theirs_ms:>13.3f} {ours32_ms:>10.3f} {theirs_ms / ours_ms:>9.2f}")


if __name__ == "__main__":
    main()
