"""Autotuning (issue 22), its core: the schedules around a kernel's heuristic one, each measured
on the device and checked against the heuristic schedule's output.

    candidates(kernel, target, limit)   valid schedules; candidate 0 is the heuristic one
    measure(kernel, rt, schedule, inputs, runs) -> Measured   median time and the output
    tune_kernel(kernel, rt, trials) -> Tuned   the fastest candidate whose output matches

Candidates change the numbers the heuristics chose (split factors, vector widths, unroll
factors) and drop a primitive that may not pay (a Parallel, an Unroll); each must lower (the
pipeline's `loops`), so an invalid one is never measured. Since the heuristic schedule is
measured too, tuning never loses. A candidate whose output differs from the heuristic one's
beyond the rounding a reordered sum may give is rejected and counted, never kept.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from . import pipeline
from .backends.runtime import Runtime
from .ir.target import Target
from .scheduler.fusion import KernelSpec
from .scheduler.schedule import Parallel, Schedule, Split, Unroll, Vectorize, reductions, terms_per_output


@dataclass(frozen=True)
class Measured:
    seconds: float          # the median of the timed runs
    output: np.ndarray      # the output's values (for the correctness check)


@dataclass
class Tuned:
    heuristic: Schedule
    heuristic_seconds: float
    best: Schedule
    best_seconds: float
    trials: int = 0         # candidates measured, the heuristic one included
    rejected: list[Schedule] = field(default_factory=list)   # outputs that differed


def candidates(kernel: KernelSpec, target: Target, limit: int = 32) -> list[Schedule]:
    """Up to `limit` distinct schedules that lower, the heuristic one first: each changes one
    number of it (twice or half a split factor, vector width or unroll factor) or drops one
    Parallel or Unroll."""
    _, heuristic, _ = pipeline.loops(kernel, target)
    found: list[Schedule] = [heuristic]
    seen = {heuristic}
    for schedule in _neighbours(heuristic):
        if len(found) >= limit:
            break
        if schedule in seen:
            continue
        seen.add(schedule)
        try:
            pipeline.loops(kernel, target, schedule)
        except Exception:   # (a schedule the lowering refuses, or local arrays that do not fit)
            continue
        found.append(schedule)
    return found


def _neighbours(schedule: Schedule):
    """Schedules one change away from `schedule`."""
    for i, p in enumerate(schedule):
        changed: list = []
        if isinstance(p, Split):
            changed = [replace(p, factor=f) for f in (p.factor * 2, p.factor // 2) if f >= 1]
        elif isinstance(p, Vectorize):
            changed = [replace(p, width=w) for w in (p.width * 2, p.width // 2) if w >= 1]
        elif isinstance(p, Unroll):
            changed = [replace(p, factor=f) for f in (p.factor * 2, p.factor // 2) if f >= 1] + [None]
        elif isinstance(p, Parallel):
            changed = [None]
        for new in changed:
            yield schedule[:i] + ((new,) if new is not None else ()) + schedule[i + 1:]


def random_inputs(kernel: KernelSpec, rt: Runtime, seed: int = 0) -> list:
    """Buffers of values for the kernel's inputs on `rt`'s device: floats in [-1, 1), integers
    in [0, 4) (valid indices for a gather's small axes; kernels clamp the rest), bools."""
    rng = np.random.default_rng(seed)
    buffers = []
    for node in kernel.inputs:
        dtype = np.dtype(node.dtype.storage)
        if node.dtype.is_bool:
            values = rng.random(node.shape) < 0.5
        elif node.dtype.is_inexact and dtype.kind == "f":
            values = rng.uniform(-1, 1, node.shape).astype(dtype)
        else:
            values = rng.integers(0, 4, node.shape).astype(dtype)
        buffers.append(rt.device.from_numpy(np.ascontiguousarray(values)).seen_as(node.dtype))
    return buffers


def measure(kernel: KernelSpec, rt: Runtime, schedule: Optional[Schedule], inputs: list, runs: int = 5) -> Measured:
    """Compile `kernel` with `schedule` (the heuristic one where None), run it once to warm up
    and `runs` times timed; the median time and the output."""
    compiled = pipeline.compile_kernel(kernel, rt, schedule)
    out = rt.device.allocate(kernel.root.shape, kernel.root.dtype)
    buffers = [out, *inputs]
    device = rt.device
    device.launch(compiled.program, buffers, compiled.kernel)
    device.synchronize()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        device.launch(compiled.program, buffers, compiled.kernel)
        device.synchronize()
        times.append(time.perf_counter() - start)
    return Measured(statistics.median(times), np.array(device.to_numpy(out)))


def same_output(got: np.ndarray, want: np.ndarray, terms: int = 1) -> bool:
    """Whether a candidate's output `got` is the heuristic one's, `want`: equal for integers and
    bools; for floats, nan where it is nan and close elsewhere, within the rounding that
    summing `terms` terms in another order may give."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return False
    finite = np.isfinite(want)
    if not np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]):
        return False
    eps = np.finfo(want.dtype).eps
    scale = np.max(np.abs(want[finite]), initial=0.0)
    return bool(np.allclose(got[finite], want[finite], rtol=8 * eps * terms, atol=8 * eps * terms * scale))


def tune_kernel(kernel: KernelSpec, rt: Runtime, trials: int = 16, runs: int = 5) -> Tuned:
    """The fastest of up to `trials` candidates whose output matches the heuristic schedule's on
    the same random inputs (by construction no slower than the heuristic one)."""
    schedules = candidates(kernel, rt.device.target, trials)
    inputs = random_inputs(kernel, rt)
    terms = terms_per_output(reductions(kernel.expr))
    first = measure(kernel, rt, schedules[0], inputs, runs)
    tuned = Tuned(schedules[0], first.seconds, schedules[0], first.seconds, trials=1)
    for schedule in schedules[1:]:
        result = measure(kernel, rt, schedule, inputs, runs)
        tuned.trials += 1
        if not same_output(result.output, first.output, terms):
            tuned.rejected.append(schedule)
        elif result.seconds < tuned.best_seconds:
            tuned.best, tuned.best_seconds = schedule, result.seconds
    return tuned


__all__ = ["Measured", "Tuned", "candidates", "measure", "random_inputs", "same_output", "tune_kernel"]
