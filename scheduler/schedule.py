"""A schedule is data: an ordered list of primitives applied to a kernel's loop nest.

Axes are named: output axes `i0, i1, ...` (after collapse), the axes of the k-th reduction
`r{k}_{axis}`; `Split("i0", 4096)` makes `i0_o` (outer) and `i0_i` (inner). `heuristic_schedule`
picks primitives for a target; a later autotuner searches over the same primitives, and
`lower.py` is the only place that applies them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from ..ir.graph import Node, toposort
from ..ir.ops import REDUCTION
from ..ir.target import Target
from . import heuristics as H


@dataclass(frozen=True)
class Split:
    axis: str
    factor: int


@dataclass(frozen=True)
class Reorder:
    axes: tuple[str, ...]   # the new order of the output loops, outermost first


@dataclass(frozen=True)
class Parallel:
    axis: str               # must be the outermost loop


@dataclass(frozen=True)
class Vectorize:
    axis: str
    width: int


@dataclass(frozen=True)
class Unroll:
    axis: str
    factor: int


@dataclass(frozen=True)
class Fuse:
    axes: tuple[str, ...]   # neighbouring loops, outermost first, become one loop named "x".join(axes)


@dataclass(frozen=True)
class Bind:
    axis: str
    to: str                 # "block" or "thread" (gpu): one iteration per block / per thread


Primitive = Union[Split, Reorder, Parallel, Vectorize, Unroll, Fuse, Bind]
Schedule = tuple[Primitive, ...]


def reductions(expr: Node) -> list[Node]:
    """The reductions of a kernel expression in the order the lowering numbers them."""
    return [n for n in toposort([expr]) if n.op in REDUCTION]


def heuristic_schedule(expr: Node, target: Target) -> Schedule:
    """The heuristic schedule of a kernel expression for `target`."""
    if target.name == "cpu":
        return cpu_schedule(expr, target)
    return gpu_schedule(expr, target)


def gpu_schedule(expr: Node, target: Target) -> Schedule:
    """GPU heuristics. The output axes become one loop. Without a reduction (or with many outputs
    and short or strided reductions) each thread computes one output: consecutive threads write
    consecutive elements, so memory access is coalesced. Otherwise each block computes one
    output: its threads stride through the reduced axis side by side (coalesced) and combine
    their partial results in a tree through local memory."""
    shape = expr.shape
    reduces = reductions(expr)
    threads = H.gpu_threads(target)
    prims: list[Primitive] = []
    out = "x".join(f"i{d}" for d in range(len(shape)))
    if len(shape) > 1:
        prims.append(Fuse(tuple(f"i{d}" for d in range(len(shape)))))
    outputs = math.prod(shape)
    longest = max([1] + [math.prod(r.src[0].shape[a] for a in r.arg) for r in reduces])
    innermost = all(r.arg and max(r.arg) == len(r.src[0].shape) - 1 for r in reduces)
    per_thread = not reduces or outputs >= H.GPU_OUTPUTS_PER_THREAD_MIN * target.cores or (
        longest <= H.GPU_SHORT_REDUCTION or not innermost) and outputs >= threads
    if per_thread:
        if shape:
            prims += [Split(out, threads), Bind(f"{out}_o", "block"), Bind(f"{out}_i", "thread")]
        return tuple(prims)
    if shape:
        prims.append(Bind(out, "block"))
    for k, r in enumerate(reduces):
        if r.arg:
            inner = f"r{k}_{max(r.arg)}"
            prims += [Split(inner, threads), Bind(f"{inner}_i", "thread")]
    return tuple(prims)


def cpu_schedule(expr: Node, target: Target) -> Schedule:
    """CPU heuristics: the outer loop in parallel chunks on every core when there is enough work,
    the innermost loop vectorized for the SIMD width (with several accumulators in reductions)."""
    shape = expr.shape
    reduces = reductions(expr)
    # as many lanes as the widest value in the kernel fits in one vector register
    widest = max(n.dtype.itemsize for n in toposort([expr]))
    lanes = max(1, target.simd_bytes // widest)
    work = math.prod(shape) * max([1] + [r.src[0].size // max(1, r.size) for r in reduces])
    prims: list[Primitive] = []
    if not reduces:
        if not shape:
            return ()
        last = f"i{len(shape) - 1}"
        if len(shape) == 1 and work >= H.PARALLEL_MIN_WORK:
            # one long loop: split it so the outer part runs in parallel, the inner vectorized
            chunks = target.cores * H.CHUNKS_PER_CORE
            factor = -(-shape[0] // chunks)
            factor = -(-factor // lanes) * lanes
            prims += [Split("i0", factor), Parallel("i0_o")]
            last = "i0_i"
        elif len(shape) > 1 and work >= H.PARALLEL_MIN_WORK:
            prims.append(Parallel("i0"))
        prims += [Vectorize(last, lanes), Unroll(last, H.ELEMENTWISE_UNROLL)]
        return tuple(prims)
    if shape and work >= H.PARALLEL_MIN_WORK and shape[0] > 1:
        prims.append(Parallel("i0"))
    for k, r in enumerate(reduces):
        if r.arg:
            inner = f"r{k}_{max(r.arg)}"
            r_lanes = max(1, target.simd_bytes // max(1, r.src[0].dtype.itemsize))
            prims += [Vectorize(inner, r_lanes), Unroll(inner, H.REDUCE_ACCUMULATORS)]
    return tuple(prims)
