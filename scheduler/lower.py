"""Lowering: a kernel expression plus its schedule -> loop IR.

The loop nest is built from the output axes (after the schedule's splits and reorders), then,
inside it, one accumulator loop nest per reduction, then the store of the output element.
Parameter 0 is the output buffer; LOAD slot k is parameter k + 1.

`lower` is a list of passes, each with one job: `apply_primitives` (nests.py: the loop nests,
`_Nests`), then either `_lower_cache_write` (cpu_tile.py: a cpu register tile, with
`_pack_inputs` packing inputs) or `_reduction_updates` (reduction_loops.py: each reduction's
accumulator update, `_Update`), `_stage_inputs` (staging.py: gpu inputs staged into local
memory), `_use_partial_sums` (reduction_loops.py: cpu float32 partial sums), `_reduction_loops`
(reduction_loops.py: the updates in their loops) and `_store` (here). The passes lower kernel
expressions with `_ExprLowering` (lower_expr.py). `check_fits` checks the local arrays fit.
"""
from __future__ import annotations

from ..ir import loop
from ..ir.graph import Node
from ..ir.loop import Alu, Expr, LoopKind, Var
from ..ir.ops import Op
from ..ir.view import View
from .cpu_tile import _lower_cache_write
from .lower_expr import _ExprLowering
from .nests import _kernel, _launch_shape, _Nests, apply_primitives
from .partition import partition_conditions
from .reduction_loops import _partial_sums, _reduction_loops, _reduction_updates, _use_partial_sums
from .schedule import CacheRead, CacheWrite, PartialSum, Schedule, reductions
from .staging import _guard_thread_edges, _stage_inputs
from .tails import version_tails


def lower(expr: Node, schedule: Schedule, name: str, nparams: int) -> loop.Kernel:
    """The loop IR of a kernel expression under `schedule`, pass by pass: the primitives make the
    loop nests (`_Nests`); a CacheWrite makes a cpu tile (its packing included), otherwise each
    reduction becomes an update of an accumulator, gpu inputs are staged into local memory, cpu
    sums into partials, the updates are wrapped in their loops and the output element stored;
    last, loops with tails of symbolic length run full tiles apart (tails.py) and loops that
    test their index against constants run in pieces without the tests (partition.py)."""
    return partition_conditions(version_tails(_lower(expr, schedule, name, nparams)))


def _lower(expr: Node, schedule: Schedule, name: str, nparams: int) -> loop.Kernel:
    reduces = reductions(expr)
    _check_index_space(expr, reduces)
    nests = apply_primitives(expr.shape, reduces, schedule)
    blocks, threads, bindings = _launch_shape(nests)
    caches = {prim.slot: prim for prim in schedule if isinstance(prim, CacheRead)}
    tiles = [prim for prim in schedule if isinstance(prim, CacheWrite)]
    blocked = [lp.name for lp in nests.out if lp.reduction]
    if blocked and not tiles:
        raise ValueError(f"Reorder: the reduction loops {blocked} among the output loops need a CacheWrite tile "
                         "inside them (it keeps the partial results in the output between their iterations)")
    if tiles:
        if any(isinstance(prim, PartialSum) for prim in schedule):
            raise ValueError("PartialSum: not with CacheWrite (the tile keeps one accumulator per output)")
        return _lower_cache_write(expr, tiles, caches, nests, reduces, name, nparams)
    store_guard = _guard_thread_edges(nests) if caches else None
    lowering = _ExprLowering(reduces)
    partials = _partial_sums(schedule, nests, reduces)
    updates = _reduction_updates(nests, reduces, lowering)
    local_arrays = _stage_inputs(updates, caches, nests, threads)
    _use_partial_sums(updates, partials, lowering)
    # cpu: each reduction runs at the innermost output loop it depends on (a softmax's row max
    # and sum once per row, not once per element); bound gpu loops keep it with the store
    bound = any(lp.kind in (LoopKind.BLOCK, LoopKind.THREAD) for nest in nests.all() for lp in nest)
    body, prologues, thread_var = _reduction_loops(updates, reduces, nests, threads, hoist=not caches and not bound)
    store = _store(expr, nests, lowering, thread_var, store_guard)
    return _kernel(name, expr, lowering, nparams, nests.out, tuple(body) + (store,), prologues, blocks=blocks,
                   threads=threads, bindings=bindings, local_arrays=tuple(local_arrays))


def _check_index_space(expr: Node, reduces: list[Node]) -> None:
    shape = expr.shape
    for r in reduces:   # each runs over the kernel's output indices for the axes it keeps
        if len(r.shape) != len(shape) or any(r.shape[a] != n for a, n in enumerate(shape) if a not in r.arg):
            raise AssertionError(f"lower: a reduction of shape {r.shape} is not in the index space of its "
                                 f"kernel {shape} (fusion must compute it into memory)")


def _store(expr: Node, nests: _Nests, lowering: "_ExprLowering", thread_var: Var | None,
           guard: Expr | None) -> loop.Stmt:
    """The store of the output element (by one thread where the threads reduced together)."""
    out_idx = nests.out_index()
    out_index, _ = View.contiguous(expr.shape).index(out_idx)
    store: loop.Stmt = loop.Store(0, out_index, lowering.expr(expr, out_idx))
    if thread_var is not None:  # every thread has the result: one writes it
        store = loop.If(Alu(Op.CMPEQ, (thread_var, loop.const(0)), loop.bool_), (store,))
    if guard is not None:
        store = loop.If(guard, (store,))
    return store


def check_fits(kernel: loop.Kernel, target) -> None:
    """A ValueError where the kernel's local arrays (a CacheWrite tile, packed panels, gpu
    staging) need more than the target's `local_memory_bytes` (a cpu thread's share of its
    stack, a gpu block's shared memory): past it a cpu kernel would crash the process."""
    arrays = kernel.local_arrays
    need = sum(a.size * a.dtype.itemsize for a in arrays)
    if need > target.local_memory_bytes:
        sizes = ", ".join(f"{a.name} {a.size * a.dtype.itemsize:,} B" for a in arrays)
        raise ValueError(f"CacheWrite/CacheRead: the kernel's local arrays need {need:,} bytes ({sizes}), more "
                         f"than {target.local_memory_bytes:,} on {target.name}; split the tile's loops, or pack "
                         "at a loop further in")
