"""A probe for issue 22's conv2d bar, not yet a library path: 1-D Winograd F(4,3) along the rows,
written with lt.compute, against F.conv2d (direct) and torch, tuned and not, eager and under
lt.jit, libraries taking turns.

    python benchmarks/probe_winograd.py [--trials 48] [--repeat 5]

conv2d N8 C32->64 56x56 k3 (padding 1): the direct kernel runs at ~88% of this machine's FMA
rate, so 1.2x over it needs fewer multiplications. 2-D Winograd tiles need stride-4 reads along
the contiguous axis (gathers); along the rows alone, every stage reads rows contiguously:

    V[n, a, c, ty, X] = sum_i BT[a, i] * xp[n, c, 4 ty + i, X]        input rows -> 6 terms
    U[a, k, c, 0, kw] = sum_h G[a, h] * w[k, c, h, kw]                   weights -> 6 terms
    M = conv2d(V, U, groups=6)  (a 1x3 convolution per term)            4.5 MACs an output, not 9
    y[n, k, ty, u, x] = sum_a AT[u, a] * M[n, a, k, ty, x] + bias[k]     6 terms -> 4 output rows

What is left before it is a library path: F.conv2d building it from nodes (lt.compute costs
~1.4 ms of graph building a call), and the choice between it and the direct kernel made by the
tuner (measured, remembered per shape) rather than by a rule.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import lazytensor as lt  # noqa: E402

from bench_core import _ms, _ratio, compare, start, torch  # noqa: E402

F = lt.nn.functional
# F(4, 3) (Lavin & Gray), points 0, +-1, +-2
BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
               [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float32)
G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
              [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float32)
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float32)


def winograd_rows(x: lt.Tensor, w: lt.Tensor, bias: lt.Tensor) -> lt.Tensor:
    """conv2d(x, w, bias, padding=1) for a 3x3 kernel and a height divisible by 4, as
    (n, k, h / 4, 4, w): reshape to (n, k, h, w) (a view)."""
    n, c, h, wd = x.shape
    k, t = w.shape[0], h // 4
    bt, g, at = (lt.asarray(m, device=x.device) for m in (BT, G, AT))
    xp = x.pad(((0, 0), (0, 0), (1, 1), (1, 1)))
    i, r, j = lt.reduce_axis(6), lt.reduce_axis(3), lt.reduce_axis(6)
    v = lt.compute((n, 6, c, t, wd + 2), lambda n_, a, c_, y, z: lt.sum(bt[a, i] * xp[n_, c_, 4 * y + i, z], axis=i))
    u = lt.compute((6, k, c, 1, 3), lambda a, k_, c_, o, z: lt.sum(g[a, r] * w[k_, c_, r, z], axis=r))
    m = F.conv2d(v.reshape(n, 6 * c, t, wd + 2), u.reshape(6 * k, c, 1, 3), groups=6).reshape(n, 6, k, t, wd)
    return lt.compute((n, k, t, 4, wd), lambda n_, k_, y, o, z: lt.sum(at[o, j] * m[n_, j, k_, y, z], axis=j) + bias[k_])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=48, help="tuning trials per kernel")
    parser.add_argument("--repeat", type=int, default=5, help="runs per turn (3 turns each)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    _, _, said = start(args.repeat)
    X = rng.standard_normal((8, 32, 56, 56)).astype(np.float32)
    W = (rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32)
    Bias = rng.standard_normal(64).astype(np.float32)
    x, w, b = lt.asarray(X), lt.asarray(W), lt.asarray(Bias)
    direct = F.conv2d(x, w, b, padding=1).numpy()
    got = winograd_rows(x, w, b).reshape(8, 64, 56, 56).numpy()
    print(said)
    print(f"winograd vs direct: largest difference {np.abs(got - direct).max() / np.abs(direct).max():.1e} of the "
          "largest value")
    jit_direct = lt.jit(lambda x, w, b: F.conv2d(x, w, b, padding=1))
    jit_wino = lt.jit(winograd_rows)

    def run(label: str) -> None:
        fns = {"direct": lambda: F.conv2d(x, w, b, padding=1).realize(),
               "winograd": lambda: winograd_rows(x, w, b).realize(),
               "direct jit": lambda: jit_direct(x, w, b).realize(),
               "winograd jit": lambda: jit_wino(x, w, b).realize()}
        if torch is not None:
            tx, tw, tb = (torch.from_numpy(v) for v in (X, W, Bias))
            fns["torch"] = lambda: torch.conv2d(tx, tw, tb, padding=1)
        t = compare(fns, args.repeat)
        print(f"\n{label}: " + ", ".join(f"{name} {_ms(s)}" for name, s in t.items()))
        print(f"  winograd vs direct: eager {_ratio(t['direct'], t['winograd'])}, jit "
              f"{_ratio(t['direct jit'], t['winograd jit'])}; vs torch: winograd jit "
              f"{_ratio(t.get('torch'), t['winograd jit'])}, direct jit {_ratio(t.get('torch'), t['direct jit'])}")

    run("heuristic schedules")
    lt.tune(lambda: F.conv2d(x, w, b, padding=1), trials=args.trials)
    report = lt.tune(lambda: winograd_rows(x, w, b), trials=args.trials)
    print(report)
    jit_direct, jit_wino = lt.jit(lambda x, w, b: F.conv2d(x, w, b, padding=1)), lt.jit(winograd_rows)
    run(f"tuned ({args.trials} trials a kernel)")


if __name__ == "__main__":
    main()
