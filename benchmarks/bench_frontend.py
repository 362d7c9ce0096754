"""What eager code pays at each call, and sums of matrix products, against torch (issue 23).

    python benchmarks/bench_frontend.py [--repeat 5] [--out benchmarks/results]

1. Calls: each nn.functional composite a transformer calls at every step (linear, layer_norm,
   gelu, softmax) and a broadcasting add, on one sequence (1, 40, 128) under no_grad, its weights
   Parameters: lazytensor's time to record the call (the graph, no kernel: that runs at realize)
   against torch's time to run it. The best of `--repeat` rounds of 2,000 calls.
2. A GPT's forward for one token of generation (examples/gpt_model.py, context 40): lazytensor's
   time to build the graph and to realize it (the kernels compiled before), against torch's
   forward. Medians of 100 runs, the libraries taking turns at each.
3. Sums of matrix products, realized: a @ w + b @ v + c @ u (2048 x 128 x 128 each) and an
   LSTM's x @ W_ih + h @ W_hh (K 96 and 128), against torch and numpy (bench_core's compare: in turns).

Writes the tables to --out/bench_frontend.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import timeit
from pathlib import Path

os.environ.setdefault("LT_CACHE_DIR", tempfile.mkdtemp(prefix="lt-bench-frontend-"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import numpy as np  # noqa: E402

import lazytensor as lt  # noqa: E402
import lazytensor.nn.functional as F  # noqa: E402

from bench_core import _ms, _ratio, compare, write_lines  # noqa: E402

try:
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
except ImportError:
    torch = None


def calls(repeat: int) -> list[str]:
    rng = np.random.default_rng(0)
    arrays = {"x": rng.standard_normal((1, 40, 128)), "w": rng.standard_normal((128, 128)) / 11,
              "b": rng.standard_normal(128), "s": rng.standard_normal((1, 4, 40, 40))}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    ours = {k: lt.asarray(v) for k, v in arrays.items()}
    for k in ("w", "b"):
        ours[k] = lt.nn.Parameter(ours[k])
    lt.realize(*ours.values())
    cases = {
        "F.linear(x, w, b)": (lambda o: F.linear(o["x"], o["w"], o["b"]),
                              lambda t: torch.nn.functional.linear(t["x"], t["w"], t["b"])),
        "F.layer_norm(x, (128,), w, b)": (lambda o: F.layer_norm(o["x"], (128,), o["b"], o["b"]),
                                          lambda t: torch.nn.functional.layer_norm(t["x"], (128,), t["b"], t["b"])),
        "F.gelu(x)": (lambda o: F.gelu(o["x"]), lambda t: torch.nn.functional.gelu(t["x"])),
        "F.softmax(s, dim=-1)": (lambda o: F.softmax(o["s"], dim=-1), lambda t: torch.softmax(t["s"], dim=-1)),
        "x + b (broadcast)": (lambda o: o["x"] + o["b"], lambda t: t["x"] + t["b"]),
    }
    theirs = None
    if torch is not None:
        theirs = {k: torch.from_numpy(v) for k, v in arrays.items()}
        for k in ("w", "b"):
            theirs[k] = torch.nn.Parameter(theirs[k])
    rows = []
    for name, (lt_call, torch_call) in cases.items():
        with lt.no_grad():
            ours_us = min(timeit.repeat(lambda: lt_call(ours), number=2000, repeat=repeat)) / 2000 * 1e6
        torch_us = None
        if theirs is not None:
            with torch.no_grad():
                torch_us = min(timeit.repeat(lambda: torch_call(theirs), number=2000, repeat=repeat)) / 2000 * 1e6
        rows.append(f"| {name} | {ours_us:.1f} | {'-' if torch_us is None else f'{torch_us:.1f}'} | "
                    f"{_ratio(ours_us, torch_us)} |")
    return ["### calls: µs a call, (1, 40, 128) float32 under no_grad, weights Parameters", "",
            "| call | lazytensor (records it) | torch (runs it) | x torch |", "|---|---:|---:|---:|", *rows, ""]


def forward(runs: int = 100) -> list[str]:
    from gpt_model import GPT, Config
    config = Config(vocab_size=96)
    model = GPT(config)
    ids = np.arange(1, 41)[None] % 96
    twin = None
    if torch is not None:
        from bench_gpt import torch_twin
        twin = torch_twin({name: p.numpy().copy() for name, p in model.named_parameters()}, config)
    build, realize, theirs = [], [], []
    for _ in range(runs + 5):
        with lt.no_grad():
            start = time.perf_counter()
            out = model(lt.asarray(ids))[0, -1]
            built = time.perf_counter()
            out.numpy()
            done = time.perf_counter()
        build.append(built - start)
        realize.append(done - built)
        if twin is not None:
            with torch.no_grad():
                start = time.perf_counter()
                twin(torch.from_numpy(ids))[0, -1].numpy()
                theirs.append(time.perf_counter() - start)
    b, r = np.median(build[5:]) * 1e3, np.median(realize[5:]) * 1e3
    t = np.median(theirs[5:]) * 1e3 if theirs else None
    return ["### a GPT's forward for one token (context 40, d_model 128, 2 blocks): ms", "",
            "| | lazytensor: build the graph | realize it | in all | torch | x torch |", "|---|---:|---:|---:|---:|---:|",
            f"| forward | {b:.2f} | {r:.2f} | {b + r:.2f} | {'-' if t is None else f'{t:.2f}'} | {_ratio(b + r, t)} |", ""]


def products(repeat: int) -> list[str]:
    rng = np.random.default_rng(1)
    arr = lambda *shape: rng.standard_normal(shape).astype(np.float32)   # noqa: E731
    cases = {"a @ w + b @ v + c @ u, 2048 x 128 x 128 each": [(arr(2048, 128), arr(128, 128)) for _ in range(3)],
             "x @ W_ih + h @ W_hh (an LSTM's gates: 2048 x 96 x 128, 2048 x 128 x 128)":
                 [(arr(2048, 96), arr(96, 128)), (arr(2048, 128), arr(128, 128))]}
    rows = []
    for name, pairs in cases.items():
        ours = [(lt.asarray(a), lt.asarray(b)) for a, b in pairs]
        lt.realize(*[t for pair in ours for t in pair])
        fns = {"lazytensor": lambda ours=ours: lt.realize(_summed_products(ours)),
               "numpy": lambda pairs=pairs: _summed_products(pairs),
               "torch": None if torch is None else
               lambda theirs=[(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs]: _summed_products(theirs)}
        times = compare(fns, repeat)
        cells = [_ms(times.get(library)) for library in ("lazytensor", "torch", "numpy")]
        rows.append(f"| {name} | {' | '.join(cells)} | {_ratio(times['lazytensor'], times.get('torch'))} |")
    return ["### sums of matrix products, realized (in turns)", "",
            "| | lazytensor | torch | numpy | x torch |", "|---|---:|---:|---:|---:|", *rows, ""]


def _summed_products(pairs):
    total = pairs[0][0] @ pairs[0][1]
    for a, b in pairs[1:]:
        total = total + a @ b
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    lines = ["# bench_frontend", ""] + calls(args.repeat) + forward() + products(args.repeat)
    print("\n".join(lines))
    write_lines(args.out, "bench_frontend.md", lines)


if __name__ == "__main__":
    main()
