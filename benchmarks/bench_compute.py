"""lt.compute formulas (issue 24) against the built-in ops and numpy, same data, one run.

    python benchmarks/bench_compute.py [--repeat 5] [--out benchmarks/results]

The formulas are examples/tensor_expressions.py's. Each workload is timed twice for lazytensor:
eager (the graph built and realized each call: what a user's loop pays) and under lt.jit (the
kernels replayed: the kernels alone). The libraries take turns (bench_core.compare). The table
also counts the kernels a call launches; the issue's bars: the matmul formula as fast as a @ b
(the same kernel) and with examples/tensor_expressions.py's hand schedule >= 90% of it, the
three-stage softmax one kernel as the built-in one, the blur with its
prologue and epilogue one kernel and >= 3x numpy.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import lazytensor as lt  # noqa: E402

from bench_core import _ms, _ratio, compare, start, write_lines  # noqa: E402
from tensor_expressions import (blur_clamped, conv2d, matmul, numpy_blur_clamped, schedule_by_hand,  # noqa: E402
                                softmax)


def launches(f) -> int:
    f()
    before = lt.stats()["kernels_launched"]
    f()
    return lt.stats()["kernels_launched"] - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="runs per turn (3 turns each)")
    parser.add_argument("--out", default="benchmarks/results", help="folder for bench_compute.md")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    _, _, said = start(args.repeat)
    A, B = rng.standard_normal((1024, 1024)).astype(np.float32), rng.standard_normal((1024, 1024)).astype(np.float32)
    X = rng.standard_normal((8, 32, 56, 56)).astype(np.float32)
    W = (rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32)
    S = rng.standard_normal((4096, 4096)).astype(np.float32)
    P = rng.standard_normal((2048, 2048)).astype(np.float32)
    a, b, x, w, s, p = (lt.asarray(v) for v in (A, B, X, W, S, P))
    F = lt.nn.functional
    workloads = [   # name, formula, built-in (or None), numpy
        ("matmul 1024", lambda: matmul(a, b), lambda: a @ b, lambda: A @ B),
        ("matmul 1024, hand schedule", lambda: matmul(a, b), lambda: a @ b, lambda: A @ B),
        ("conv2d N8 C32->64 56x56 k3", lambda: conv2d(x, w), lambda: F.conv2d(x, w, padding=1), None),
        ("softmax 4096x4096 (3 stages)", lambda: softmax(s), lambda: F.softmax(s, dim=1), None),
        ("blur 3x3 + prologue + clamp 2048x2048", lambda: blur_clamped(p), None, lambda: numpy_blur_clamped(P)),
    ]
    lines = [said, "", "| workload | lt.compute | built-in | formula vs built-in | numpy | formula vs numpy "
             "| jit: formula | jit: built-in | kernels: formula / built-in |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    for name, formula, built_in, reference in workloads:
        hand = schedule_by_hand(formula()) if "hand schedule" in name else None
        jit_formula = lt.jit(lambda formula=formula: formula())
        jit_built_in = lt.jit(lambda built_in=built_in: built_in()) if built_in else None
        fns = {"formula": lambda: formula().realize(),
               "built-in": (lambda: built_in().realize()) if built_in else None,
               "numpy": reference,
               "jit formula": lambda: jit_formula().realize(),
               "jit built-in": (lambda: jit_built_in().realize()) if built_in else None}
        t = compare(fns, args.repeat)
        kernels = f"{launches(fns['formula'])} / {launches(fns['built-in']) if built_in else '-'}"
        cells = [name, _ms(t["formula"]), _ms(t.get("built-in")), _ratio(t.get("built-in"), t["formula"]),
                 _ms(t.get("numpy")), _ratio(t.get("numpy"), t["formula"]), _ms(t["jit formula"]),
                 _ms(t.get("jit built-in")), kernels]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
        if hand is not None:
            hand.reset()
    lines += ["", "(median of 3 turns, each after a pause and a warm-up; \"vs\" ratios above 1 mean the formula is "
              "faster; jit: the kernels replayed by lt.jit, no graph built)"]
    write_lines(args.out, "bench_compute.md", lines)


if __name__ == "__main__":
    main()
