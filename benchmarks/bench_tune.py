"""Autotuning: tuned against heuristic schedules (and torch), same data, one run.

    python benchmarks/bench_tune.py [--trials 32] [--repeat 5] [--only conv] [--opencl] [--out benchmarks/results]

Every bench_core.py workload (and with --opencl, row sums and softmax 4096² on the OpenCL
device) is tuned with `lt.tune(fn, trials=...)` in a private, empty kernel cache, so the tuner
starts from the heuristic schedules. Then the heuristic kernels (remembered schedules ignored,
as LT_TUNED=0 does), the tuned ones and torch take turns (three turns each, after a pause and a
warm-up call, `repeat` runs a turn). The tuned side includes the implementations tuning chose
(conv2d: Winograd's where measured faster; the heuristic side is the direct kernel, as with no
tuning). Last, a second process with that cache runs the conv2d workload with no tuning flag:
its kernels use the tuned schedules (and the chosen implementation) without a trial.

The table gives the tuning wall time and trials, each median time, and tuned against heuristic
and torch (their time / ours: above 1, the tuned kernels are faster). It also goes to
`--out`/bench_tune.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = tempfile.mkdtemp(prefix="lt-bench-tune-")
os.environ["LT_CACHE_DIR"] = CACHE   # (before lazytensor reads it)
sys.path.insert(0, HERE)

import lazytensor as lt  # noqa: E402
from lazytensor import tuned  # noqa: E402
from lazytensor.devices import loaded_runtimes  # noqa: E402

from bench_core import Workload, _ms, _ratio, compare, start, workloads, write_lines  # noqa: E402

SECOND_PROCESS = """
import numpy as np, lazytensor as lt
rng = np.random.default_rng(0)
img = lt.asarray(rng.standard_normal((8, 32, 56, 56)).astype(np.float32))
weight = lt.asarray((rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32))
bias = lt.asarray(rng.standard_normal(64).astype(np.float32))
lt.nn.functional.relu(lt.nn.functional.conv2d(img, weight, bias, padding=1)).realize()
print(lt.stats()["tuned_kernels"])
"""


def use_tuned(on: bool) -> None:
    """Compile with the remembered (tuned) schedules or the heuristic ones from now on: the
    kernels and plans compiled the other way are dropped (recompiled from the kernel cache)."""
    if tuned.ENABLED != on:
        tuned.ENABLED = on
        for rt in loaded_runtimes():
            rt.forget_choices()


def opencl_workloads(rng: np.random.Generator):
    device = next((d for d in lt.devices() if d.startswith("opencl")), None)
    if device is None:
        return
    x = rng.standard_normal((4096, 4096)).astype(np.float32)
    lx = lt.asarray(x, device=device)

    def softmax():   # (a kernel launch returns before it ran: timed to its end)
        e = (lx - lx.max(axis=1, keepdims=True)).exp()
        lt.synchronize((e / e.sum(axis=1, keepdims=True)).realize().device)

    def row_sums():
        lt.synchronize(lx.sum(axis=1).realize().device)
    yield Workload(f"{device} row sums 4096x4096", lambda: x.sum(axis=1), row_sums, None, None, nbytes=x.nbytes)
    yield Workload(f"{device} row softmax 4096x4096", lambda: None, softmax, None, None, nbytes=2 * x.nbytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=32, help="measured candidates per kernel")
    parser.add_argument("--repeat", type=int, default=5, help="runs per turn (3 turns each)")
    parser.add_argument("--only", default="", help="run only the workloads whose name contains this text")
    parser.add_argument("--opencl", action="store_true", help="also row sums and softmax on the OpenCL device")
    parser.add_argument("--out", default="benchmarks/results", help="folder for bench_tune.md")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    bandwidth, fma, said = start(args.repeat)
    lines = [f"{said}; {args.trials} trials per kernel", "",
             "| workload | kernels | trials | tuning s | heuristic | tuned | tuned vs heuristic | torch | tuned vs torch "
             "| tuned rate |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    chosen = [*workloads(rng), *(opencl_workloads(rng) if args.opencl else [])]
    for w in chosen:
        if args.only not in w.name:
            continue
        use_tuned(True)
        began = time.perf_counter()
        report = lt.tune(w.lt, trials=args.trials)
        tuning_seconds = time.perf_counter() - began
        medians = compare({"heuristic": lambda w=w: (use_tuned(False), w.lt()),
                           "tuned": lambda w=w: (use_tuned(True), w.lt()), "torch": w.torch},
                          2 if w.slow else args.repeat)
        t_h, t_t, t_torch = (medians.get(k) for k in ("heuristic", "tuned", "torch"))
        rate = w.rate(t_t, bandwidth, fma)
        cells = [w.name, str(len(report.kernels)), str(sum(k.trials for k in report.kernels)), f"{tuning_seconds:.1f}",
                 _ms(t_h), _ms(t_t), _ratio(t_h, t_t), _ms(t_torch), _ratio(t_torch, t_t), rate]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
        print(str(report), file=sys.stderr, flush=True)
    if not args.only or "conv" in args.only:
        done = subprocess.run([sys.executable, "-c", SECOND_PROCESS], capture_output=True, text=True,
                              env=dict(os.environ, LT_CACHE_DIR=CACHE), timeout=600)
        kernels = done.stdout.strip() if done.returncode == 0 else f"failed: {done.stderr[-300:]}"
        lines += ["", f"second process, conv2d with no tuning flag: kernels compiled with a tuned schedule: {kernels}"]
        print(lines[-1])
    lines += ["", "(median of 3 turns, each after a pause and a warm-up; \"vs\" ratios above 1 mean the tuned "
              "kernels are faster)"]
    write_lines(args.out, "bench_tune.md", lines)


if __name__ == "__main__":
    main()
