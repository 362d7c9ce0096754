"""The compile pipeline, read top to bottom: graph -> kernels -> schedule -> loops -> code.

    kernels(outputs, target, leaves)             a graph's kernels:
        optimize (fold, simplify; CSE by hash-consing)
        -> lower complex numbers to pairs of reals, bfloat16 to float32 (ir/complex.py, ir/bfloat16.py)
        -> optimize again -> fuse into kernels (scheduler/fusion.py)
    compile_kernel(kernel, rt, schedule=None)    one kernel's program on `rt`'s device:
        collapse axes -> schedule (one given, else a tuned one remembered (tuned.py), else the
        heuristic one) -> lower to loop IR
        -> render and compile through the kernel cache (backends/runtime.py)

`realize` runs a graph through both (lazytensor/realize.py, which also keeps the plans); tests
and tools call them, or the stages inside them (`loops`), directly.

Every stage can be printed: LT_DUMP lists the stages to print to stderr, of `graph`, `fuse`,
`schedule`, `loops` and `source` (LT_DUMP=fuse,loops; LT_DUMP=all). LT_DEBUG=2 implies
`source`, LT_DEBUG=3 `graph` too. Every stage is verified (ir/verify.py) after it runs under
LT_DEBUG or LT_VERIFY=1, which the test suite sets.
"""
from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from . import tuned
from .backends.runtime import CompiledKernel, Runtime
from .devices import debug_level
from .ir import loop
from .ir.bfloat16 import lower as lower_bfloat16
from .ir.complex import lower as lower_complex
from .ir.graph import Node, pretty
from .ir.loop_print import format_kernel
from .ir.ops import OPAQUE, Op
from .ir.symbolic import HINTS, Undecidable, concrete, symbolic_nodes
from .ir.passes import optimize
from .ir.target import Target
from .ir.verify import IRError, verify, verify_kernel_expression, verify_loops
from .scheduler.collapse import collapse_axes
from .scheduler.fusion import CopyTransposed, KernelSpec, fuse
from .scheduler.heuristics import TRANSPOSED_COPY_MIN_ROWS, TRANSPOSED_COPY_MIN_WORK, pack_span_bytes
from .scheduler.lower import check_fits, lower
from .scheduler.schedule import CacheRead, CacheWrite, Schedule, heuristic_schedule, reductions

STAGES = ("graph", "fuse", "schedule", "loops", "source")


@dataclass(frozen=True)
class Kernels:
    """A graph's kernels, in the order they run, and what they compute: `roots`, the nodes that
    are the graph's outputs once lowered (a reshape at the top stripped: a view of the memory),
    and `leaves`, the buffers the kernels read as they read them (a complex buffer as floats)."""
    kernels: list[KernelSpec]
    roots: list[Node]
    leaves: list[Node]


def kernels(outputs: list[Node], target: Target, leaves: Sequence[Node] = ()) -> Kernels:
    """The fused kernels that compute `outputs` for `target`; `leaves` are the graph's buffers,
    given back as the kernels read them (realize passes them in this order at run time)."""
    leaves = list(leaves)
    roots = optimize(outputs)
    _check_graph(roots, "graph")
    bases = [_strip_reshapes(root) for root in roots]
    lowered, leaves = lower_complex(bases, leaves)      # (kernels compute with real numbers only,
    lowered, leaves = lower_bfloat16(lowered, leaves)   # and bfloat16 values as float32)
    if lowered is not bases:
        bases = optimize(lowered)
        _check_graph(bases, "lowered graph")
    copies = None if target.launches_blocks else CopyTransposed(pack_span_bytes(target), 2 * target.simd_bytes,
                                                                 TRANSPOSED_COPY_MIN_ROWS, TRANSPOSED_COPY_MIN_WORK)
    specs = fuse(bases, hoist_reductions=target.hoists_reductions, transposed_copies=copies)
    if _wanted("fuse") or _verifying():
        for i, spec in enumerate(specs):
            if spec.root.op not in OPAQUE:
                _verified(verify_kernel_expression, spec.expr, f"kernel {i}")
            _dump("fuse", lambda: f"kernel {i}: {len(spec.inputs)} inputs\n{pretty([spec.expr])}")
    return Kernels(specs, bases, leaves)


def loops(kernel: KernelSpec, target: Target, schedule: Optional[Schedule] = None, name: str = "kernel",
          collapse: bool = True) -> tuple[Node, Schedule, loop.Kernel]:
    """One kernel's expression with its axes collapsed (unless `collapse` is False: then a
    schedule names the axes of the kernel's own shape), its schedule (the heuristic one unless
    `schedule` is given) and its loop IR."""
    expr = collapse_axes(kernel.expr) if collapse else kernel.expr
    symbolic = schedule is None and symbolic_nodes([expr])
    if schedule is None:   # (sizes that are symbolic: the schedule for their hints)
        schedule = heuristic_schedule(concrete([expr], HINTS)[0] if symbolic else expr, target)
    _dump("schedule", lambda: f"{name} {'x'.join(map(str, expr.shape))}: " + ", ".join(map(repr, schedule)))
    lowered = None
    if symbolic:   # (a panel packed or a tile kept along a symbolic size may not fit the stack:
        for staged in (CacheRead, CacheWrite):   # read in place, then accumulate in place)
            try:
                lowered = lower(expr, schedule, name, len(kernel.inputs))
                break
            except Undecidable:
                schedule = tuple(p for p in schedule if not isinstance(p, staged))
    if lowered is None:
        lowered = lower(expr, schedule, name, len(kernel.inputs))
    check_fits(lowered, target)
    _verified(verify_loops, lowered, name)
    _dump("loops", lambda: format_kernel(lowered))
    return expr, schedule, lowered


def compile_kernel(kernel: KernelSpec, rt: Runtime, schedule: Optional[Schedule] = None,
                   collapse: bool = True) -> CompiledKernel:
    """The compiled program of one kernel on `rt`'s device, through the kernel cache. Without a
    `schedule`: the one written by hand for this kernel (lt.schedule), else the one tuned for it
    on this kind of device where one is remembered (tuned.py), else the heuristic one; reused
    while the same kernel expression recurs (expressions are hash-consed and hold no buffers, so
    equal structure is the same node)."""
    for observe in OBSERVERS:
        observe(kernel)
    automatic = schedule is None and collapse
    if automatic:
        known = rt.by_expression.get(kernel.expr)
        if known is not None:
            rt.stats.memory_cache_hits += 1
            return known
        schedule = tuned.written(kernel.expr, rt)
        if schedule is not None:   # (written by hand, lt.schedule: over the kernel's own axes)
            collapse = False
        else:
            schedule = tuned.lookup(kernel.expr, rt)
            rt.stats.tuned_kernels += schedule is not None
    _, _, lowered = _loops_or_heuristic(kernel, rt.device.target, schedule, collapse, remembered=automatic)
    compiled = compile_loops(kernel, lowered, rt)
    if automatic:
        rt.by_expression.put(kernel.expr, compiled)
    return compiled


def compile_loops(kernel: KernelSpec, lowered: loop.Kernel, rt: Runtime) -> CompiledKernel:
    """The compiled program of `kernel`'s loop IR `lowered` (from `loops`), through the cache."""
    compiled = rt.compile(lowered, prefix(kernel))
    _dump("source", lambda: f"---- {rt.device.name} kernel {compiled.name} ----\n{compiled.source}")
    return compiled


def prefix(kernel: KernelSpec) -> str:
    """The start of a kernel's compiled name: 'r' where it reduces, else 'e', and its shape."""
    return ("r" if reductions(kernel.expr) else "e") + "_" + "_".join(
        str(n) if isinstance(n, int) else "n" for n in kernel.expr.shape or (1,))   # (n: a symbolic size)


def _loops_or_heuristic(kernel: KernelSpec, target: Target, schedule: Optional[Schedule], collapse: bool,
                        remembered: bool) -> tuple[Node, Schedule, loop.Kernel]:
    """`loops`, where a `remembered` (tuned) schedule that no longer lowers falls back to the
    heuristic one with a warning (a given schedule's error is the caller's)."""
    if not remembered or schedule is None:
        return loops(kernel, target, schedule, collapse=collapse)
    try:
        return loops(kernel, target, schedule, collapse=collapse)
    except Exception as error:   # (any refusal of the lowering: the record is only a hint)
        warnings.warn(f"lazytensor: a tuned schedule of kernel {tuned.describe(kernel.expr)} does not apply "
                      f"({type(error).__name__}: {error}); using the heuristic one")
        return loops(kernel, target, None, collapse=collapse)


# Callables given each kernel compile_kernel is asked for, compiled before or not (the test
# suite's CUDA check collects them to render for a GPU it does not have).
OBSERVERS: list[Callable[[KernelSpec], None]] = []


def _strip_reshapes(node: Node) -> Node:
    while node.op is Op.RESHAPE:
        node = node.src[0]
    return node


# ---- printing and verifying the stages ------------------------------------------------------

def _wanted(stage: str) -> bool:
    named = {s.strip() for s in os.environ.get("LT_DUMP", "").split(",")}
    level = debug_level()
    return (stage in named or "all" in named or (stage == "source" and level >= 2)
            or (stage == "graph" and level >= 3))


def _verifying() -> bool:
    return debug_level() > 0 or os.environ.get("LT_VERIFY", "") not in ("", "0")


def _dump(stage: str, text: Callable[[], str]) -> None:
    if _wanted(stage):
        print(f"---- {stage} ----\n{text()}", file=sys.stderr)


def _verified(check: Callable, value, what: str) -> None:
    """`check(value)` where stages are verified; its IRError names the stage."""
    if _verifying():
        try:
            check(value)
        except IRError as error:
            raise IRError(f"{what}: {error}") from None


def _check_graph(roots: list[Node], what: str) -> None:
    _verified(verify, roots, what)
    _dump("graph", lambda: f"{what}:\n{pretty(roots)}")


__all__ = ["Kernels", "kernels", "loops", "compile_kernel", "compile_loops", "prefix", "OBSERVERS", "STAGES"]
