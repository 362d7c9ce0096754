"""A training step: one SGD step of a 784-512-10 MLP (relu, cross-entropy), batch 128, float32;
lazytensor eager and with the step under lt.jit (captured once, then replayed).

    python benchmarks/bench_train.py [--repeat 10] [--turns 10] [--device cpu]

lazytensor, a hand-written numpy step and torch (when installed) start from the same weights
and take the same batch; the libraries take turns (`turns` turns of `repeat` steps, each after a
pause that lets the other libraries' thread pools go idle: this machine's speed changes every
few seconds, and turns spread that over every library); the table gives the median time per step
and the ratio to torch (and to numpy). The first step's loss of each is printed too: they must agree.
"""
from __future__ import annotations

import argparse
import os
from typing import Callable

import numpy as np

import lazytensor as lt
import lazytensor.nn.functional as F
from bench_core import compare   # (this folder is on the path when a benchmark runs)

try:
    import torch
except ImportError:
    torch = None

SIZES, BATCH, LR = (784, 512, 10), 128, 0.01


def numpy_step(weights: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> Callable[[], float]:
    w1, b1, w2, b2 = weights

    def step() -> float:
        h_pre = x @ w1.T + b1
        h = np.maximum(h_pre, 0)
        logits = h @ w2.T + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_probs[np.arange(len(labels)), labels].mean()
        d_logits = np.exp(log_probs)
        d_logits[np.arange(len(labels)), labels] -= 1
        d_logits /= len(labels)
        d_w2, d_b2 = d_logits.T @ h, d_logits.sum(axis=0)
        d_h = (d_logits @ w2) * (h_pre > 0)
        d_w1, d_b1 = d_h.T @ x, d_h.sum(axis=0)
        for w, g in ((w1, d_w1), (b1, d_b1), (w2, d_w2), (b2, d_b2)):
            w -= LR * g
        return float(loss)
    return step


def lazytensor_step(weights: list[np.ndarray], x: np.ndarray, labels: np.ndarray, device: str,
                    jit: bool = False) -> Callable[[], float]:
    net = lt.nn.Sequential(lt.nn.Linear(*SIZES[:2]), lt.nn.ReLU(), lt.nn.Linear(*SIZES[1:]))
    net.load_state_dict(dict(zip(["0.weight", "0.bias", "2.weight", "2.bias"], weights)))
    net.to(device)
    optimizer = lt.optim.SGD(net.parameters(), lr=LR)
    lx, ly = lt.asarray(x, device=device), lt.asarray(labels, device=device)

    def step(x: lt.Tensor, y: lt.Tensor) -> lt.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        return loss
    run = lt.jit(step) if jit else step
    return lambda: run(lx, ly).item()


def torch_step(weights: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> Callable[[], float]:
    net = torch.nn.Sequential(torch.nn.Linear(*SIZES[:2]), torch.nn.ReLU(), torch.nn.Linear(*SIZES[1:]))
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights):
            p.copy_(torch.from_numpy(w))
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    tx, ty = torch.from_numpy(x), torch.from_numpy(labels)

    def step() -> float:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(tx), ty)
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def problem() -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The model's initial weights (PyTorch's default init), one batch and its labels."""
    rng = np.random.default_rng(0)
    bound1, bound2 = 1 / np.sqrt(SIZES[0]), 1 / np.sqrt(SIZES[1])
    weights = [rng.uniform(-bound1, bound1, (SIZES[1], SIZES[0])), rng.uniform(-bound1, bound1, SIZES[1]),
               rng.uniform(-bound2, bound2, (SIZES[2], SIZES[1])), rng.uniform(-bound2, bound2, SIZES[2])]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    return [w.astype(np.float32) for w in weights], x, rng.integers(0, SIZES[2], BATCH)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="steps per turn")
    parser.add_argument("--turns", type=int, default=10, help="turns per library")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    weights, x, labels = problem()

    steps = {"numpy": numpy_step([w.copy() for w in weights], x, labels),
             f"lazytensor ({args.device})": lazytensor_step(weights, x, labels, args.device),
             f"lazytensor lt.jit ({args.device})": lazytensor_step(weights, x, labels, args.device, jit=True)}
    if torch is not None:
        torch.set_num_threads(len(os.sched_getaffinity(0)))
        steps["torch"] = torch_step(weights, x, labels)
    first_losses = {name: step() for name, step in steps.items()}
    times = compare(steps, args.repeat, args.turns)

    reference = times.get("torch", times["numpy"])
    print(f"one SGD step, MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32; median of {args.turns} "
          f"turns of {args.repeat} steps (the libraries take turns, each after a pause)\n")
    print(f"| {'library':<26} | {'first loss':>10} | {'ms / step':>9} | {'x torch' if torch else 'x numpy':>8} |")
    print(f"|{'-' * 28}|{'-' * 11}:|{'-' * 10}:|{'-' * 9}:|")
    for name, seconds in times.items():
        print(f"| {name:<26} | {first_losses[name]:>10.5f} | {seconds * 1e3:>9.2f} | {seconds / reference:>8.2f} |")
    if torch is None:
        print("\n(torch is not installed: ratios are to the numpy step)")


if __name__ == "__main__":
    main()
