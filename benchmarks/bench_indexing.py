"""Advanced indexing, forward and backward: an embedding lookup and the cross-entropy pick.

    python benchmarks/bench_indexing.py [--repeat 10] [--turns 5] [--device cpu]

- embedding: a 50,000 x 256 float32 table (requires grad), 4,096 int64 indices (repeats among
  them, as in a batch of tokens); forward `table[idx]` weighted by a 4,096 x 256 array and summed,
  backward to the table's gradient (a scatter-add of 4,096 rows into zeros of the table's shape).
- pick: the cross-entropy idiom `logp[arange(n), y]` on a 4,096 x 1,000 float32 array, summed,
  and its gradient (a scatter-add of 4,096 values).

numpy computes the gradients by hand (`np.add.at` into zeros); torch (when installed) with its
autograd, on the GPU when --device is a CUDA one and torch sees a GPU. The libraries take turns (see bench_core.compare); the table gives the median time of
one forward + backward and the ratio to torch. Each library's gradient is checked against numpy's.
"""
from __future__ import annotations

import argparse
import os
from typing import Callable

import numpy as np

import lazytensor as lt
from bench_core import compare   # (this folder is on the path when a benchmark runs)

try:
    import torch
except ImportError:
    torch = None

VOCAB, WIDTH, TOKENS = 50_000, 256, 4_096
ROWS, CLASSES = 4_096, 1_000


def torch_device(device: str) -> str:
    return "cuda" if device.startswith("cuda") and torch is not None and torch.cuda.is_available() else "cpu"


def synced(step: Callable, device: str) -> Callable:
    """`step`, waiting for the device's queued work before it returns (GPU launches are async)."""
    if device == "cpu":
        return step

    def run():
        result = step()
        if isinstance(result, lt.Tensor):
            lt.synchronize(device)
        elif torch is not None and isinstance(result, torch.Tensor) and result.is_cuda:
            torch.cuda.synchronize()
        return result
    return run


def embedding(rng: np.random.Generator, device: str) -> dict[str, Callable[[], np.ndarray]]:
    table = rng.standard_normal((VOCAB, WIDTH)).astype(np.float32)
    idx = rng.integers(0, VOCAB, TOKENS)
    weights = rng.standard_normal((TOKENS, WIDTH)).astype(np.float32)

    def numpy_step() -> np.ndarray:
        _ = (table[idx] * weights).sum()
        grad = np.zeros_like(table)
        np.add.at(grad, idx, weights)
        return grad

    lt_table = lt.asarray(table, device=device).requires_grad_()
    lt_idx, lt_weights = lt.asarray(idx, device=device), lt.asarray(weights, device=device)

    def lt_step() -> lt.Tensor:
        lt_table.grad = None
        (lt_table[lt_idx] * lt_weights).sum().backward()
        return lt_table.grad

    steps = {"numpy (np.add.at)": numpy_step, f"lazytensor ({device})": lt_step}
    if torch is not None:
        on = torch_device(device)
        t_table = torch.from_numpy(table.copy()).to(on).requires_grad_()
        t_idx, t_weights = torch.from_numpy(idx).to(on), torch.from_numpy(weights).to(on)

        def torch_step() -> torch.Tensor:
            t_table.grad = None
            (t_table[t_idx] * t_weights).sum().backward()
            return t_table.grad

        def torch_embedding_step() -> torch.Tensor:
            t_table.grad = None
            (torch.nn.functional.embedding(t_idx, t_table) * t_weights).sum().backward()
            return t_table.grad
        steps[f"torch ({on})"] = torch_step
        steps[f"torch F.embedding ({on})"] = torch_embedding_step
    return steps


def pick(rng: np.random.Generator, device: str) -> dict[str, Callable[[], np.ndarray]]:
    logp = rng.standard_normal((ROWS, CLASSES)).astype(np.float32)
    y = rng.integers(0, CLASSES, ROWS)
    rows = np.arange(ROWS)

    def numpy_step() -> np.ndarray:
        _ = logp[rows, y].sum()
        grad = np.zeros_like(logp)
        np.add.at(grad, (rows, y), 1.0)
        return grad

    lt_logp = lt.asarray(logp, device=device).requires_grad_()
    lt_y = lt.asarray(y, device=device)

    def lt_step() -> lt.Tensor:
        lt_logp.grad = None
        lt_logp[lt.arange(ROWS, device=device), lt_y].sum().backward()
        return lt_logp.grad

    steps = {"numpy (np.add.at)": numpy_step, f"lazytensor ({device})": lt_step}
    if torch is not None:
        on = torch_device(device)
        t_logp = torch.from_numpy(logp.copy()).to(on).requires_grad_()
        t_y = torch.from_numpy(y).to(on)

        def torch_step() -> torch.Tensor:
            t_logp.grad = None
            t_logp[torch.arange(ROWS, device=on), t_y].sum().backward()
            return t_logp.grad
        steps[f"torch ({on})"] = torch_step
    return steps


def to_numpy(value) -> np.ndarray:
    if isinstance(value, lt.Tensor):
        return value.numpy()
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="calls per turn")
    parser.add_argument("--turns", type=int, default=5, help="turns per library")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if torch is not None:
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    rng = np.random.default_rng(0)
    workloads = {f"embedding {VOCAB:,} x {WIDTH}, {TOKENS:,} indices": embedding(rng, args.device),
                 f"logp[arange(n), y], {ROWS:,} x {CLASSES:,}": pick(rng, args.device)}
    print(f"forward + backward, float32, median of {args.turns} turns of {args.repeat} calls "
          "(the libraries take turns, each after a pause)\n")
    print(f"| {'workload':<42} | {'library':<27} | {'ms':>7} | {'x torch' if torch else 'x numpy':>7} |")
    print(f"|{'-' * 44}|{'-' * 29}|{'-' * 8}:|{'-' * 8}:|")
    for title, steps in workloads.items():
        steps = {name: synced(step, args.device) for name, step in steps.items()}
        want = to_numpy(steps["numpy (np.add.at)"]())
        for name, step in steps.items():
            np.testing.assert_allclose(to_numpy(step()), want, rtol=1e-5, atol=1e-5, err_msg=f"{title}: {name}")
        times = compare(steps, args.repeat, args.turns)
        reference = next((t for name, t in times.items() if name.startswith("torch (")), times["numpy (np.add.at)"])
        for name, seconds in times.items():
            print(f"| {title:<42} | {name:<27} | {seconds * 1e3:>7.2f} | {seconds / reference:>7.2f} |")
    if torch is None:
        print("\n(torch is not installed: ratios are to numpy)")


if __name__ == "__main__":
    main()
