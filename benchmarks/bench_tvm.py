"""Autotuning against TVM 0.27 MetaSchedule: the same workloads and trial budgets, one machine.

    python benchmarks/bench_tvm.py [--trials 64 256] [--only matmul|conv] [--repeat 10] [--out benchmarks/results]

Two workloads: matmul 1024 fp32 and conv2d N8 C32->64 56x56 k3 (NCHW, padding 1, stride 1)
followed by bias add and relu. Both libraries compute the same thing, bias and relu included:
TVM as one TE function (pad, conv, bias add, relu) made a PrimFunc, one tuning task; lazytensor
as its call runs it, two kernels (the pad, and the conv with the bias and relu fused).

Each workload and trial budget runs in a fresh process with an empty lazytensor kernel cache
(so our tuner starts from the heuristic schedules):
  1. TVM: `tune_tir(max_trials_global=trials)` in a temporary work dir (its tuning wall time),
     then `compile_tir` and `tvm.compile` of the best schedule; its output checked against numpy.
  2. lazytensor: the same budget in all (`tune_lt`: a first `lt.tune` with one trial a kernel
     counts the call's kernels, a second gives each its share; the trial budget stops it, not
     the clock), its wall time; the tuned call's output checked.
  3. The two tuned functions take turns (bench_core.compare: `--rounds` turns each, after a
     pause and a warm-up call, `repeat` calls a turn); the median of each.
TVM's function writes into an output allocated once (its calling convention); lazytensor's call
builds the graph and allocates its result every time, in its time.

The table gives the tuning wall times, the trials measured (TVM's tuning records; ours summed
over kernels), each median time and rate, and TVM time / ours (above 1, lazytensor is faster).
It also goes to `--out`/bench_tvm.md with the per-kernel lazytensor numbers. Where TVM is not
installed, the script says so and exits 0.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

INSTALL = "pip install apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 xgboost psutil cloudpickle"
MATMUL, CONV = "matmul 1024 fp32", "conv2d N8 C32->64 56x56 k3 +bias relu"
CORES = len(os.sched_getaffinity(0))
TOLERANCE = 1e-3   # largest difference from numpy's output, relative to its largest magnitude


@dataclass
class Case:
    name: str
    flops: float
    inputs: list[np.ndarray]
    expected: np.ndarray
    te_function: Callable[[], object]           # () -> the TVM PrimFunc (inputs..., output)
    lt_call: Callable[[list], Callable[[], object]]   # lazytensor inputs -> the call


def matmul_case(rng: np.random.Generator) -> Case:
    n = 1024
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))

    def te_function():
        from tvm import te
        x, y = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
        k = te.reduce_axis((0, n), name="k")
        out = te.compute((n, n), lambda i, j: te.sum(x[i, k] * y[k, j], axis=k), name="C")
        return te.create_prim_func([x, y, out])
    return Case(MATMUL, 2 * n ** 3, [a, b], a @ b, te_function, lambda t: lambda: (t[0] @ t[1]).realize())


def conv_case(rng: np.random.Generator) -> Case:
    from bench_core import _numpy_conv
    img = rng.standard_normal((8, 32, 56, 56)).astype(np.float32)   # (bench_core's data)
    weight = (rng.standard_normal((64, 32, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)

    def te_function():
        from tvm import te, topi
        x, w, b = (te.placeholder(v.shape, name=name) for v, name in ((img, "X"), (weight, "W"), (bias, "B")))
        conv = topi.nn.conv2d_nchw(x, w, stride=1, padding=1, dilation=1, out_dtype="float32")
        biased = te.compute(conv.shape, lambda n, c, h, v: conv[n, c, h, v] + b[c], name="bias_add")
        return te.create_prim_func([x, w, b, topi.nn.relu(biased)])

    def lt_call(t):
        import lazytensor as lt
        return lambda: lt.nn.functional.relu(lt.nn.functional.conv2d(t[0], t[1], t[2], padding=1)).realize()
    return Case(CONV, 2 * 8 * 64 * 56 * 56 * 32 * 9, [img, weight, bias], _numpy_conv(img, weight, bias),
                te_function, lt_call)


def relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def checked(error: float) -> str:
    return f"{error:.0e}" + ("" if error <= TOLERANCE else " (wrong)")


def tvm_target() -> dict:
    """LLVM for this machine's CPU (as TVM's LLVM names it) on every core we have."""
    from tvm.target import codegen
    return {"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": CORES}


def _import_intrinsics() -> None:
    """The builder's worker initializer. Each of TVM's build workers imports its tensor
    intrinsics on its first build (28 s on a 2-core Zen 3, 20 of them CUDA's) and is killed at
    the build timeout (30 s) before it ends: no candidate is ever built. Imported here, before the
    worker takes its first build, that time still counts in TVM's tuning wall time but no longer
    in any one build's timeout."""
    import importlib
    importlib.import_module("tvm.s_tir.tensor_intrin")


def tune_tvm(case: Case, trials: int) -> tuple[Callable[[], object], dict]:
    """MetaSchedule-tune the case's PrimFunc with `trials` trials and build the best schedule:
    (a call of the tuned function, its numbers)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)   # (its log file keeps all)
    func, target = case.te_function(), tvm.target.Target(tvm_target())
    with tempfile.TemporaryDirectory(prefix="lt-bench-tvm-") as work_dir:
        began = time.perf_counter()
        builder = ms.builder.LocalBuilder(initializer=_import_intrinsics)
        database = ms.tune_tir(func, target, work_dir, max_trials_global=trials, builder=builder)
        tuning = time.perf_counter() - began
        records = len(database.get_all_tuning_records())
        began = time.perf_counter()
        schedule = ms.tir_integration.compile_tir(database, func, target)
        if schedule is None:
            raise RuntimeError(f"TVM's tuning measured no valid schedule in {tuning:.0f} s "
                               f"({records} tuning records); see its logs in the work dir")
        module = tvm.compile(schedule.mod, target=target).mod
        build = time.perf_counter() - began
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(v, dev) for v in case.inputs] + [tvm.runtime.empty(case.expected.shape, "float32", dev)]
    main = module["main"]
    main(*args)
    evaluator = module.time_evaluator("main", dev, number=5, repeat=5)   # (TVM's own timer, for comparison)
    return (lambda: main(*args)), {"tvm_tuning_s": tuning, "tvm_build_s": build, "tvm_trials": records,
                                   "tvm_error": relative_error(args[-1].numpy(), case.expected),
                                   "tvm_evaluator_s": float(np.median(evaluator(*args).results))}


def tune_lt(case: Case, trials: int) -> tuple[Callable[[], object], dict]:
    """lt.tune the case's call within `trials` trials in all, as TVM's global budget: a first
    `lt.tune` with one trial a kernel (the heuristic schedules, and conv2d's choice of
    implementation) counts the kernels the call runs, then each gets its share of the budget.
    Both count in the tuning wall time and the trials. Returns the call and its numbers."""
    import lazytensor as lt
    call = case.lt_call([lt.asarray(v) for v in case.inputs])
    began = time.perf_counter()
    first = lt.tune(call, trials=1, seconds=600)
    report = lt.tune(call, trials=max(1, trials // len(first.kernels)), seconds=600)
    tuning = time.perf_counter() - began
    print(str(report), file=sys.stderr, flush=True)
    kernels = [{"kernel": k.kernel, "heuristic_ms": k.heuristic_seconds * 1e3, "tuned_ms": k.best_seconds * 1e3,
                "trials": k.trials, "seconds": k.seconds} for k in report.kernels]
    measured = sum(k.trials for k in [*first.kernels, *report.kernels])
    return call, {"lt_tuning_s": tuning, "lt_trials": measured, "kernels": kernels,
                  "lt_error": relative_error(np.asarray(call()), case.expected)}


def measure(name: str, trials: int, repeat: int, rounds: int) -> dict:
    """One workload at one trial budget (in its own process): both tuned, then timed in turns."""
    from bench_core import compare
    case = (matmul_case if name == MATMUL else conv_case)(np.random.default_rng(0))
    tvm_call, row = tune_tvm(case, trials)
    print(f"{name}: TVM tuned in {row['tvm_tuning_s']:.0f} s ({row['tvm_trials']} trials)", file=sys.stderr, flush=True)
    lt_call, ours = tune_lt(case, trials)
    print(f"{name}: lazytensor tuned in {ours['lt_tuning_s']:.0f} s", file=sys.stderr, flush=True)
    medians = compare({"tvm": tvm_call, "lt": lt_call}, repeat, rounds)
    return {"workload": name, "trials": trials, "flops": case.flops, **row, **ours,
            "tvm_s": medians["tvm"], "lt_s": medians["lt"]}


def run_child(name: str, trials: int, args: argparse.Namespace) -> dict:
    """`measure` in a fresh process with an empty kernel cache of its own."""
    with tempfile.TemporaryDirectory(prefix="lt-bench-tvm-cache-") as cache:
        env = dict(os.environ, LT_CACHE_DIR=cache, TVM_NUM_THREADS=str(CORES))
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--trials", str(trials),
                               "--repeat", str(args.repeat), "--rounds", str(args.rounds)],
                              stdout=subprocess.PIPE, text=True, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"bench_tvm: {name} at {trials} trials failed (exit {done.returncode})")
    return json.loads(lines[-1][len("RESULT "):])


def table_row(r: dict) -> str:
    from bench_core import _ms, _ratio
    cells = [r["workload"], f"{r['trials']}", f"{r['tvm_trials']} / {r['lt_trials']}",
             f"{r['tvm_tuning_s']:.0f}", f"{r['lt_tuning_s']:.0f}", _ms(r["tvm_s"]), _ms(r["lt_s"]),
             f"{r['flops'] / r['tvm_s'] / 1e9:.0f}", f"{r['flops'] / r['lt_s'] / 1e9:.0f}",
             _ratio(r["tvm_s"], r["lt_s"]), f"{checked(r['tvm_error'])} / {checked(r['lt_error'])}"]
    return "| " + " | ".join(cells) + " |"


def kernel_lines(r: dict) -> list[str]:
    return [f"- {r['workload']}, {r['trials']} trials: TVM's build of the best {r['tvm_build_s']:.1f} s, its "
            f"time_evaluator {r['tvm_evaluator_s'] * 1e3:.2f} ms; lazytensor kernels: "
            + "; ".join(f"`{k['kernel']}` {k['heuristic_ms']:.2f} -> {k['tuned_ms']:.2f} ms, {k['trials']} trials, "
                        f"{k['seconds']:.0f} s" for k in r["kernels"])]


def write(args: argparse.Namespace, lines: list[str], rows: list[dict]) -> None:
    notes = ["", f"(median of {args.rounds} turns each, {args.repeat} calls a turn; \"TVM vs lt\" is TVM's time / "
             "ours, above 1 lazytensor is faster; lt's trials are summed over the kernels its call runs, "
             "conv2d's two implementations' included)", ""]
    from bench_core import write_lines
    write_lines(args.out, "bench_tvm.md", [*lines, *notes, *(line for r in rows for line in kernel_lines(r))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, nargs="+", default=[64, 256], help="trial budgets, each run apart")
    parser.add_argument("--only", default="", help="run only the workloads whose name contains this text")
    parser.add_argument("--repeat", type=int, default=10, help="calls per turn")
    parser.add_argument("--rounds", type=int, default=5, help="turns each")
    parser.add_argument("--out", default="benchmarks/results", help="folder for bench_tvm.md")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        import tvm
    except ImportError:
        print(f"bench_tvm: skipped, TVM is not installed ({INSTALL})")
        return
    if args.child:
        print("RESULT " + json.dumps(measure(args.child, args.trials[0], args.repeat, args.rounds)), flush=True)
        return
    lines = [f"TVM {tvm.__version__} MetaSchedule, target {json.dumps(tvm_target())}; {CORES} cores", "",
             "| workload | trials | measured TVM / lt | TVM tuning s | lt tuning s | TVM | lt | TVM GFLOP/s "
             "| lt GFLOP/s | TVM vs lt | rel. error TVM / lt |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    rows = []
    for trials in args.trials:
        for name in (MATMUL, CONV):
            if args.only in name:
                rows.append(run_child(name, trials, args))
                lines.append(table_row(rows[-1]))
                print(lines[-1], flush=True)
                write(args, lines, rows)   # (after each row: a 256-trial run takes many minutes)


if __name__ == "__main__":
    main()
