"""Lowering: a kernel expression plus its schedule -> loop IR.

The loop nest is built from the output axes (after the schedule's splits and reorders), then,
inside it, one accumulator loop nest per reduction, then the store of the output element.
Parameter 0 is the output buffer; LOAD slot k is parameter k + 1.

`lower` is a list of passes, each with one job: `apply_primitives` (the loop nests, `_Nests`),
then either `_lower_cache_write` (a cpu register tile, with `_pack_inputs` packing inputs) or
`_reduction_updates` (each reduction's accumulator update, `_Update`), `_stage_inputs` (gpu:
inputs staged into local memory), `_use_partial_sums` (cpu: float32 partial sums),
`_reduction_loops` (the updates in their loops) and `_store`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..ir import loop
from ..ir.dtypes import DType, float32
from ..ir.graph import Node, toposort
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.ops import Op
from ..ir.view import View
from ..ir.walk import recurse
from .schedule import (Bind, CacheRead, CacheWrite, Fuse, Parallel, PartialSum, Reorder, Schedule, Split, Unroll,
                       Vectorize, output_axis, reduce_axis, reductions)

_UPDATE = {Op.SUM: Op.ADD, Op.PROD: Op.MUL, Op.REDUCE_MAX: Op.MAX, Op.REDUCE_MIN: Op.MIN}


def identity(op: Op, dtype: DType):
    """The start value of an accumulator. A float sum starts at +0.0, as numpy's does: an empty
    sum, and a sum of -0.0 values, is +0.0."""
    if op is Op.SUM:
        return 0.0 if dtype.is_float else (False if dtype.is_bool else 0)
    if op is Op.PROD:
        return 1.0 if dtype.is_float else (True if dtype.is_bool else 1)
    bits = 8 * dtype.itemsize
    lowest, highest = {"f": (-math.inf, math.inf), "b": (False, True), "u": (0, (1 << bits) - 1),
                       "i": (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)}[dtype.kind]
    return lowest if op is Op.REDUCE_MAX else highest


@dataclass
class _Loop:
    name: str
    extent: int
    stop: Expr            # usually const(extent); a split's inner loop stops early at the edge
    kind: LoopKind = LoopKind.SERIAL
    width: int = 1
    unroll: int = 1


def lower(expr: Node, schedule: Schedule, name: str, nparams: int) -> loop.Kernel:
    """The loop IR of a kernel expression under `schedule`, pass by pass: the primitives make the
    loop nests (`_Nests`); a CacheWrite makes a cpu tile (its packing included), otherwise each
    reduction becomes an update of an accumulator, gpu inputs are staged into local memory, cpu
    sums into partials, the updates are wrapped in their loops and the output element stored."""
    reduces = reductions(expr)
    _check_index_space(expr, reduces)
    nests = apply_primitives(expr.shape, reduces, schedule)
    blocks, threads, bindings = _launch_shape(nests)
    caches = {prim.slot: prim for prim in schedule if isinstance(prim, CacheRead)}
    tiles = [prim for prim in schedule if isinstance(prim, CacheWrite)]
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


# ---- applying the primitives: the loop nests ------------------------------------------------

@dataclass
class _Nests:
    """The loop nests, outermost loop first: `out` for the output axes, `reduces[k]` for reduction
    k's; and `values`, each axis of the kernel (output_axis, reduce_axis) as an expression of the
    loops' variables (a split axis is outer * factor + inner)."""
    out: list[_Loop]
    reduces: list[list[_Loop]]
    values: dict[str, Expr]
    rank: int                   # the number of output axes

    def all(self) -> list[list[_Loop]]:
        return [self.out, *self.reduces]

    def out_index(self) -> list[Expr]:
        """The output element's index, an expression per output axis."""
        return [self.values[output_axis(d)] for d in range(self.rank)]

    def find(self, axis: str) -> tuple[list[_Loop], int]:
        for nest in self.all():
            for at, lp in enumerate(nest):
                if lp.name == axis:
                    return nest, at
        raise ValueError(f"schedule names axis {axis!r}, which this kernel does not have")

    def replace_axis(self, old: str, value: Expr) -> None:
        """Loop `old` is gone: its variable is `value` in the axes' values and the loops' stops."""
        for a in self.values:
            self.values[a] = substitute(self.values[a], old, value)
        for nest in self.all():
            for other in nest:
                other.stop = substitute(other.stop, old, value)


def apply_primitives(shape: tuple[int, ...], reduces: list[Node], schedule: Schedule) -> _Nests:
    """The loop nests of a kernel of output `shape` and `reduces` after the schedule's loop
    primitives (CacheRead, CacheWrite and PartialSum are left to the passes after)."""
    nests = _Nests([_Loop(output_axis(d), n, loop.const(n)) for d, n in enumerate(shape)], [],
                   {output_axis(d): Var(output_axis(d)) for d in range(len(shape))},
                   len(shape))
    for k, r in enumerate(reduces):
        nests.reduces.append([_Loop(reduce_axis(k, a), r.src[0].shape[a], loop.const(r.src[0].shape[a]))
                              for a in r.arg])
        nests.values.update({reduce_axis(k, a): Var(reduce_axis(k, a)) for a in r.arg})
    for prim in schedule:
        apply = _APPLY.get(type(prim))
        if apply is not None:
            apply(nests, prim)
    return nests


def _split(nests: _Nests, prim: Split) -> None:
    nest, at = nests.find(prim.axis)
    lp = nest[at]
    outer_n = -(-lp.extent // prim.factor)
    outer = _Loop(prim.outer, outer_n, loop.const(outer_n))
    rest = loop.add(lp.stop, loop.mul(Var(outer.name), loop.const(-prim.factor)))
    inner_stop = (loop.const(prim.factor) if lp.extent % prim.factor == 0 and isinstance(lp.stop, Const)
                  else Alu(Op.MIN, (loop.const(prim.factor), rest), loop.int64))
    inner = _Loop(prim.inner, prim.factor, inner_stop)
    nest[at:at + 1] = [outer, inner]
    nests.replace_axis(lp.name, loop.add(loop.mul(Var(outer.name), loop.const(prim.factor)), Var(inner.name)))


def _fuse(nests: _Nests, prim: Fuse) -> None:
    nest, at = nests.find(prim.axes[0])
    fused = nest[at:at + len(prim.axes)]
    if [lp.name for lp in fused] != list(prim.axes) or any(not isinstance(lp.stop, Const) for lp in fused):
        raise ValueError(f"Fuse{prim.axes}: only neighbouring whole loops can be fused")
    extent = math.prod(lp.extent for lp in fused)
    one = _Loop(prim.fused, extent, loop.const(extent))
    nest[at:at + len(fused)] = [one]
    inner = 1
    for j, lp in reversed(list(enumerate(fused))):
        part = loop.idiv(Var(one.name), inner)
        nests.replace_axis(lp.name, part if j == 0 else loop.imod(part, lp.extent))
        inner *= lp.extent


def _reorder(nests: _Nests, prim: Reorder) -> None:
    nest, _ = nests.find(prim.axes[0])
    by_name = {lp.name: lp for lp in nest}
    nest[:] = [by_name[a] for a in prim.axes] + [lp for lp in nest if lp.name not in prim.axes]


def _parallel(nests: _Nests, prim: Parallel) -> None:
    nest, at = nests.find(prim.axis)
    if nest is not nests.out or at != 0:
        raise ValueError(f"Parallel({prim.axis!r}): only the outermost loop can run in parallel")
    nest[0].kind = LoopKind.PARALLEL


def _vectorize(nests: _Nests, prim: Vectorize) -> None:
    nest, at = nests.find(prim.axis)
    nest[at].kind, nest[at].width = LoopKind.VECTORIZED, prim.width


def _unroll(nests: _Nests, prim: Unroll) -> None:
    nest, at = nests.find(prim.axis)
    nest[at].unroll = prim.factor


def _bind(nests: _Nests, prim: Bind) -> None:
    nest, at = nests.find(prim.axis)
    if prim.to not in ("block", "thread"):
        raise ValueError(f"Bind({prim.axis!r}, {prim.to!r}): a loop binds to 'block' or 'thread'")
    nest[at].kind = LoopKind.BLOCK if prim.to == "block" else LoopKind.THREAD


_APPLY = {Split: _split, Fuse: _fuse, Reorder: _reorder, Parallel: _parallel, Vectorize: _vectorize,
          Unroll: _unroll, Bind: _bind}


# ---- reductions: accumulator updates, gpu staging, cpu partial sums, their loops -----------

@dataclass
class _Update:
    """One reduction's update of its accumulator, as the passes below build it."""
    acc: Var
    idx: list[Expr]             # the reduction's source index
    value: Expr                 # the accumulator's (or partial's) new value
    masked: frozenset[int]      # the inputs read through a mask so far (padding; not staged)
    staged: dict[str, list[loop.Stmt]] = field(default_factory=dict)   # loop name -> loads at its start
    part: Var | None = None     # PartialSum: the partial the terms go into, in loop `partial_at`
    partial_at: str | None = None


def _reduction_updates(nests: _Nests, reduces: list[Node], lowering: "_ExprLowering") -> list[_Update]:
    """Reduction k: acc<k> = acc<k> op term, the term at the reduction's index."""
    out_idx = nests.out_index()
    updates = []
    for k, r in enumerate(reduces):
        acc = Var(f"acc{k}", r.dtype, accumulator=True)
        idx = [nests.values[reduce_axis(k, a)] if a in r.arg else out_idx[a] for a in range(len(out_idx))]
        value = Alu(_UPDATE[r.op], (acc, lowering.expr(r.src[0], idx)), r.dtype)
        updates.append(_Update(acc, idx, value, frozenset(lowering.masked)))
    return updates


def _guard_thread_edges(nests: _Nests) -> Expr | None:
    """gpu staging: every thread must reach the barriers, so the output loops bound to threads run
    whole, and the store is guarded instead (the guard, None for none)."""
    store_guard = None
    for lp in nests.out:
        if lp.kind is LoopKind.THREAD and not (isinstance(lp.stop, Const) and lp.stop.value == lp.extent):
            store_guard = loop.logical_and(store_guard, loop.less(Var(lp.name), lp.stop))
            lp.stop = loop.const(lp.extent)
    return store_guard


def _stage_inputs(updates: list[_Update], caches: dict[int, CacheRead], nests: _Nests,
                  threads: int) -> list[loop.LocalArray]:
    """gpu: CacheRead(slot, at) on a loop of a reduction: the update reads input `slot` from local
    memory, loaded by the block's threads together at the start of `at` (_stage). Returns the
    local arrays."""
    local_arrays: list[loop.LocalArray] = []
    staged_slots: set[int] = set()
    for k, update in enumerate(updates):
        for slot, prim in caches.items():
            at = [lp.name for lp in nests.reduces[k]]
            if slot in staged_slots or prim.at not in at:
                continue
            inner = [lp for lp in nests.out if lp.kind is LoopKind.THREAD] + nests.reduces[k][at.index(prim.at) + 1:]
            if slot in update.masked:
                raise ValueError(f"CacheRead({slot}): input {slot} is read through a mask (padding), "
                                 "which is not staged")
            reads = [e for e in _walk_exprs(update.value) if isinstance(e, loop.Load) and e.buf == slot + 1]
            loads = []
            for read in reads:   # (x @ x.T reads one input two ways: a tile for each)
                update.value, more, array = _stage(update.value, read, inner, threads, len(local_arrays))
                local_arrays.append(array)
                loads += more
            staged_slots.add(slot)
            update.staged.setdefault(prim.at, []).extend(loads)
    missing = set(caches) - staged_slots
    if missing:
        raise ValueError(f"CacheRead: the loop {caches[min(missing)].at!r} is not a loop of a reduction")
    return local_arrays


def _partial_sums(schedule: Schedule, nests: _Nests, reduces: list[Node]) -> dict[int, tuple[Node, str]]:
    """For each PartialSum(at): the reduction's number -> its unwidened terms and `at`."""
    partials = {}
    for prim in schedule:
        if not isinstance(prim, PartialSum):
            continue
        k = next((k for k in range(len(reduces)) if prim.at in [lp.name for lp in nests.reduces[k]]), None)
        src = reduces[k].src[0] if k is not None else None
        if src is None or reduces[k].op is not Op.SUM or src.op is not Op.CAST or not src.dtype.is_float or \
                not src.src[0].dtype.is_float:
            raise ValueError(f"PartialSum({prim.at!r}): needs a loop of a float sum of widened float terms")
        partials[k] = (src.src[0], prim.at)
    return partials


def _use_partial_sums(updates: list[_Update], partials: dict[int, tuple[Node, str]],
                      lowering: "_ExprLowering") -> None:
    """cpu: the terms of a PartialSum's reduction unwidened (half: in float), into a partial."""
    for k, (terms, at) in partials.items():
        update = updates[k]
        part = Var(f"acc{k}_part", max(terms.dtype, float32, key=lambda d: d.itemsize), accumulator=True)
        term = lowering.expr(terms, update.idx)
        term = term if terms.dtype is part.dtype else Alu(Op.CAST, (term,), part.dtype)
        update.value, update.part, update.partial_at = Alu(Op.ADD, (part, term), part.dtype), part, at


def _reduction_loops(updates: list[_Update], reduces: list[Node], nests: _Nests, threads: int,
                     hoist: bool) -> tuple[list[loop.Stmt], dict[str | None, tuple], Var | None]:
    """Each update inside its reduction's loops (staged loads and barriers at the start of theirs,
    partial sums around theirs), after the accumulator's declaration; with `hoist`, at the
    innermost output loop it depends on (a prologue of that loop), otherwise in the body. A
    reduction over threads ends combining them. Returns the body, the prologues by loop name
    (None: before the loops) and the thread variable of such a reduction."""
    body: list[loop.Stmt] = []
    prologues: dict[str | None, tuple] = {}
    levels: dict[Node, int] = {}
    thread_var = None
    out_idx = nests.out_index()
    for k, (r, update) in enumerate(zip(reduces, updates)):
        acc = update.acc
        stmts: tuple = (loop.Assign(update.part if update.part is not None else acc, update.value, reassociate=True),)
        for lp in reversed(nests.reduces[k]):
            inside = stmts
            if lp.name in update.staged:  # load the tiles, compute on them, then let them be replaced
                inside = tuple(update.staged[lp.name]) + (loop.Barrier(),) + inside + (loop.Barrier(),)
            stmts = (_wrap(lp, inside),)
            if update.part is not None and lp.name == update.partial_at:
                stmts = _partial_sum(lp, inside, update.part, acc)
        level = levels[r] = _level(r, out_idx, nests.out, levels) if hoist else len(nests.out) - 1
        at = None if level < 0 else nests.out[level].name
        stmts = (loop.Declare(acc, Const(identity(r.op, r.dtype), r.dtype)), *stmts)
        if level == len(nests.out) - 1:
            body += stmts
        else:   # once per iteration of the output loops it depends on, not per output
            prologues[at] = prologues.get(at, ()) + stmts
        bound = [lp for lp in nests.reduces[k] if lp.kind is LoopKind.THREAD]
        if bound and threads & (threads - 1):
            raise ValueError(f"Bind({bound[0].name!r}, 'thread'): a reduction over threads needs a power-of-two "
                             f"thread count (the tree halves it), not {threads}")
        if bound:  # the threads of the block each hold a part: combine them
            thread_var = Var(bound[0].name)
            body.append(loop.ThreadReduce(acc, _UPDATE[r.op], threads, thread_var))
    return body, prologues, thread_var


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


def _partial_sum(lp: _Loop, inside: tuple, part: Var, acc: Var) -> tuple:
    """The loop `lp` adding its terms into `part` (from 0), then `part` added, widened, into
    `acc`. A vectorized loop runs whole vector steps (lanes x accumulators terms) only; the terms
    left over run after it, into a partial of their own. (Left to LLVM's scalar epilogue, they
    were added one by one into the whole block's float32 total: a float32 sum of 1000 terms was
    off by up to 7 ulp, numpy's pairwise sum by 1.)"""
    def flush() -> loop.Stmt:
        return loop.Assign(acc, Alu(Op.ADD, (acc, Alu(Op.CAST, (part,), acc.dtype)), acc.dtype), reassociate=True)
    start = loop.Declare(part, Const(0.0, part.dtype))
    step = lp.width * max(lp.unroll, 1)
    if lp.kind is not LoopKind.VECTORIZED or step == 1 or (isinstance(lp.stop, Const) and lp.stop.value % step == 0):
        return (start, _wrap(lp, inside), flush())
    whole = loop.mul(loop.idiv(lp.stop, step), loop.const(step))
    main = For(Var(lp.name), loop.const(0), whole, inside, lp.kind, lp.width, lp.unroll)
    rest = For(Var(lp.name), whole, lp.stop, inside, LoopKind.SERIAL)
    return (start, main, flush(), loop.Assign(part, Const(0.0, part.dtype)), rest, flush())


def _level(r: Node, out_idx: list[Expr], out: list[_Loop], levels: dict[Node, int]) -> int:
    """The position of the innermost output loop whose variable the reduction `r` depends on
    (its kept axes' indices, and the reductions it reads); -1 for none."""
    used = set().union(*[_vars(out_idx[a]) for a in range(len(out_idx)) if a not in r.arg])
    level = max([i for i, lp in enumerate(out) if lp.name in used], default=-1)
    inner = [levels[n] for n in toposort([r.src[0]]) if n in levels]
    return max([level] + inner)


def _kernel(name: str, expr: Node, lowering: "_ExprLowering", nparams: int, out: list[_Loop], body: tuple,
            prologues: dict[str | None, tuple] | None = None, **launch) -> loop.Kernel:
    """The kernel: `body` inside the output loops `out`, parameter 0 the output, then the loads."""
    parallel = out[0].extent if out and out[0].kind is LoopKind.PARALLEL else None
    params = (loop.Param(expr.dtype, True),) + tuple(loop.Param(d, False) for d in lowering.param_dtypes(nparams))
    start = (prologues or {}).get(None, ())   # once per call (per parallel chunk), before the loops
    return loop.Kernel(name, params, start + _nest(out, body, prologues), parallel, **launch)


def _nest(loops: list[_Loop], body: tuple, prologues: dict[str | None, tuple] | None = None) -> tuple:
    """`body` inside `loops`, outermost first; `prologues[name]` runs first in loop `name`'s body."""
    for lp in reversed(loops):
        body = (_wrap(lp, (prologues or {}).get(lp.name, ()) + body),)
    return body


def _lower_cache_write(expr: Node, tiles: list[CacheWrite], caches: dict[int, CacheRead], nests: _Nests,
                       reduces: list[Node], name: str, nparams: int) -> loop.Kernel:
    """CacheWrite(at): the output loops from `at` inward form a tile kept in a local array. For
    each element of the (single) reduction, every output of the tile is updated; then the tile's
    outputs are finished (the expression around the reduction) and stored:

        for outer loops:                   # (the first may run in parallel)
            [pack: copy the part of an input the loops inside read into a contiguous array]
            for tile loops: tile[t] = identity
            for reduction loops:
                for tile loops: tile[t] = tile[t] op value
            for tile loops: out[...] = expression(tile[t])

    CacheRead(slot, at) on an outer loop packs the input (_pack_inputs)."""
    (prim,) = tiles
    out = nests.out
    names = [lp.name for lp in out]
    at = names.index(prim.at) if prim.at in names else -1
    if at < 0 or len(reduces) != 1 or any(lp.kind in (LoopKind.BLOCK, LoopKind.THREAD) for lp in out):
        raise ValueError(f"CacheWrite({prim.at!r}): needs an output loop of a cpu kernel with one reduction")
    if at == 0 and out[0].kind is LoopKind.PARALLEL:
        raise ValueError(f"CacheWrite({prim.at!r}): the parallel loop stays outside the tile")
    outer, tile = out[:at], out[at:]
    (r,) = reduces
    array = loop.LocalArray("lt_tile", r.dtype, math.prod(lp.extent for lp in tile))
    position = _position(tile)
    out_idx = nests.out_index()
    lowering = _ExprLowering(reduces)
    idx = [nests.values[reduce_axis(0, a)] if a in r.arg else out_idx[a] for a in range(len(out_idx))]
    current = loop.LocalLoad(array.name, position, r.dtype)
    update = loop.LocalStore(array.name, position, Alu(_UPDATE[r.op], (current, lowering.expr(r.src[0], idx)), r.dtype),
                             reassociate=True)
    lowering.acc[r] = current
    out_index, _ = View.contiguous(expr.shape).index(out_idx)
    finish = loop.Store(0, out_index, lowering.expr(expr, out_idx))

    init = loop.LocalStore(array.name, position, Const(identity(r.op, r.dtype), r.dtype))
    update, packed, prologues = _pack_inputs(update, caches, outer, nests.reduces[0] + tile, first=1)
    body = _nest(tile, (init,)) + _nest(nests.reduces[0], _nest(tile, (update,))) + _nest(tile, (finish,))
    return _kernel(name, expr, lowering, nparams, outer, body, prologues, local_arrays=(array, *packed))


def _pack_inputs(update: loop.LocalStore, caches: dict[int, CacheRead], outer: list[_Loop], inner: list[_Loop],
                 first: int) -> tuple[loop.LocalStore, list[loop.LocalArray], dict[str | None, tuple]]:
    """cpu: CacheRead(slot, at) on an output loop outside the tile (or None: before the loops)
    packs, BLAS style: at the start of each iteration of `at`, the elements of input `slot` that
    the loops inside it (those of `outer` after it, then `inner`) read are copied into a local
    array in the order they are read (_pack), so that the tile's updates stream through
    contiguous memory instead of rows far apart (which share cache sets and evict each other).
    Returns the update reading the arrays, the arrays (numbered from `first`) and the copies by
    the loop they start (None: before the loops)."""
    arrays: list[loop.LocalArray] = []
    prologues: dict[str | None, tuple] = {}
    names = [lp.name for lp in outer]
    for slot, cache in caches.items():
        if cache.at is not None and cache.at not in names:
            raise ValueError(f"CacheRead({slot}, {cache.at!r}): on the cpu, the loop to pack at is an output loop "
                             f"outside the CacheWrite tile, one of {names}, or None (before the loops)")
        inside = outer[names.index(cache.at) + 1 if cache.at is not None else 0:] + inner
        reads = [e for e in _walk_exprs(update.value) if isinstance(e, loop.Load) and e.buf == slot + 1]
        if not reads:
            raise ValueError(f"CacheRead({slot}, {cache.at!r}): the reduction does not read input {slot}")
        for read in reads:   # (x @ x.T reads one input two ways: a panel for each)
            value, packing, packed = _pack(update.value, read, inside, first + len(arrays))
            update = replace(update, value=value)
            arrays.append(packed)
            prologues[cache.at] = prologues.get(cache.at, ()) + packing
    return update, arrays, prologues


def _pack(value: Expr, read: loop.Load, inside: list[_Loop], number: int) -> tuple[Expr, tuple, loop.LocalArray]:
    """Pack the read `read` of a tile update `value` (cpu): the elements the loops `inside` read
    are copied into a local array, the tile's vectorized loop innermost (its vectors are then
    contiguous, and copied as vectors), the other loops by their stride in memory; `value`
    then reads them from there. Returns the new value, the copy loop nest and the array."""
    used = _vars(read.index)
    axes = [lp for lp in inside if lp.name in used]
    axes.sort(key=lambda lp: (lp.kind is LoopKind.VECTORIZED, -_stride(read.index, lp.name, axes)))
    array = loop.LocalArray(f"lt_pack{number}", read.dtype, math.prod(lp.extent for lp in axes))
    position, valid = _position(axes), None
    for lp in axes:
        if not (isinstance(lp.stop, Const) and lp.stop.value == lp.extent):   # a split's remainder
            valid = loop.logical_and(valid, loop.less(Var(lp.name), lp.stop))
    element = _masked_load(read.buf, read.index, read.dtype, valid)   # (past the edge: never used)
    copy: tuple = (loop.LocalStore(array.name, position, element),)
    for lp in reversed(axes):
        vector = lp.kind is LoopKind.VECTORIZED and lp is axes[-1]
        copy = (For(Var(lp.name), loop.const(0), loop.const(lp.extent), copy,
                    LoopKind.VECTORIZED if vector else LoopKind.SERIAL, lp.width if vector else 1),)
    return _replace_load(value, read, loop.LocalLoad(array.name, position, read.dtype)), copy, array


def _stage(value: Expr, load: loop.Load, inner: list[_Loop], threads: int,
           number: int) -> tuple[Expr, list[loop.Stmt], loop.LocalArray]:
    """Stage the read `load` of a reduction update `value` in local memory: the block's threads
    together load the part of it that the loops `inner` (the threads and the reduction loops
    inside the cache point) read, once; `value` then reads it from there. Returns the new value,
    the cooperative load statements and the local array."""
    used = _vars(load.index)
    axes = [lp for lp in inner if lp.name in used]
    axes.sort(key=lambda lp: -_stride(load.index, lp.name, axes))   # unit stride innermost: coalesced
    size = math.prod(lp.extent for lp in axes)
    array = loop.LocalArray(f"lt_cache{number}", load.dtype, size)
    # the cooperative load: element f of the tile is thread (f % threads)'s, f = c * threads + tid
    c = Var(f"lt_c{number}")
    f = loop.add(loop.mul(c, loop.const(threads)), loop.THREAD_ID)
    index, valid, inner_size = load.index, None, size
    for lp in axes:
        inner_size //= lp.extent
        part = loop.imod(loop.idiv(f, inner_size), lp.extent)
        index = substitute(index, lp.name, part)
        if not (isinstance(lp.stop, Const) and lp.stop.value == lp.extent):   # a split's remainder
            valid = loop.logical_and(valid, loop.less(part, _substitute_all(lp.stop, axes, f, size)))
    element = _masked_load(load.buf, index, load.dtype, valid)   # (outside the tensor: never used)
    store = loop.If(loop.less(f, loop.const(size)), (loop.LocalStore(array.name, f, element),))
    loads = [For(c, loop.const(0), loop.const(-(-size // threads)), (store,))]
    return _replace_load(value, load, loop.LocalLoad(array.name, _position(axes), load.dtype)), loads, array


def _position(loops: list[_Loop]) -> Expr:
    """The row-major position of the loops' variables in an array of their extents (the last
    loop innermost): the element a local array keeps for this iteration."""
    position, stride = loop.const(0), 1
    for lp in reversed(loops):
        position = loop.add(position, loop.mul(Var(lp.name), loop.const(stride)))
        stride *= lp.extent
    return position


def _masked_load(buf: int, index: Expr, dtype: DType, valid: Expr | None) -> Expr:
    """Parameter `buf` at `index`; where `valid` is false, index 0 is read (always in bounds)
    and the value replaced by zero."""
    if valid is None:
        return loop.Load(buf, index, dtype)
    safe = Alu(Op.WHERE, (valid, index, loop.const(0)), loop.int64)
    zero = Const(False if dtype.is_bool else 0, dtype)
    return Alu(Op.WHERE, (valid, loop.Load(buf, safe, dtype), zero), dtype)


def _substitute_all(expr: Expr, axes: list[_Loop], f: Expr, size: int) -> Expr:
    inner_size = size
    for lp in axes:
        inner_size //= lp.extent
        expr = substitute(expr, lp.name, loop.imod(loop.idiv(f, inner_size), lp.extent))
    return expr


def _walk_exprs(e: Expr) -> list[Expr]:
    """Every distinct sub-expression, in a deterministic order (the reads of an input are staged
    or packed in this order)."""
    return loop.postorder(e)


def _vars(e: Expr) -> set[str]:
    return {x.name for x in loop.postorder(e) if isinstance(x, Var)}


def _replace_load(e: Expr, old: loop.Load, new: Expr) -> Expr:
    """`e` with the read `old` replaced by `new` (not inside other reads' indices)."""
    return loop.rewrite(e, lambda x: new if x == old else x if isinstance(x, (loop.Load, loop.LocalLoad)) else None)


def _stride(index: Expr, name: str, axes: list[_Loop]) -> int:
    """How far `index` moves when loop `name` steps by one (the others at 0); 0 where unknown."""
    def at(value: int):
        env = {lp.name: 0 for lp in axes}
        env[name] = value
        return _evaluate(index, env)
    try:
        return abs(at(1) - at(0))
    except KeyError:
        return 0


def _evaluate(e: Expr, env: dict[str, int]) -> int:
    """An index expression's value, with unknown variables (blocks, outer loops) at 0."""
    value: dict[Expr, int] = {}
    for x in loop.postorder(e):
        if isinstance(x, Const):
            value[x] = int(x.value)
        elif isinstance(x, Var):
            value[x] = env.get(x.name, 0)
        elif isinstance(x, Alu) and x.op in _INDEX_ARITHMETIC:
            value[x] = _INDEX_ARITHMETIC[x.op](*[value[p] for p in x.srcs])
        else:
            raise KeyError(x)
    return value[e]


_INDEX_ARITHMETIC = {Op.ADD: lambda a, b: a + b, Op.MUL: lambda a, b: a * b, Op.IDIV: lambda a, b: a // b,
                     Op.IMOD: lambda a, b: a % b, Op.MIN: min, Op.MAX: max}


def _launch_shape(nests: _Nests) -> tuple[int, int, tuple[loop.Binding, ...]]:
    """(blocks, threads, bindings) of the gpu grid from the loops bound to them. Block loops are
    the outermost output loops; threads are bound either to output loops or to reductions (one
    size); several loops bound to one kind split its hardware index row-major."""
    out = nests.out
    block = [lp for nest in nests.all() for lp in nest if lp.kind is LoopKind.BLOCK]
    if out[:len(block)] != block:
        bad = next(lp for i, lp in enumerate(block) if i >= len(out) or out[i] is not lp)
        raise ValueError(f"Bind({bad.name!r}, 'block'): only the outermost output loops can be bound to blocks")
    out_threads = [lp for lp in out if lp.kind is LoopKind.THREAD]
    reduce_threads = [lp for nest in nests.reduces for lp in nest if lp.kind is LoopKind.THREAD]
    if (out_threads and reduce_threads) or len({lp.extent for lp in reduce_threads}) > 1:
        raise ValueError("Bind: threads are bound either to output loops or to reductions (of one size each)")
    bindings = _row_major(block, LoopKind.BLOCK)
    if out_threads:
        bindings += _row_major(out_threads, LoopKind.THREAD)
    bindings += tuple(loop.Binding(lp.name, LoopKind.THREAD, 1, lp.extent) for lp in reduce_threads)
    threads = math.prod(lp.extent for lp in out_threads) if out_threads else (
        reduce_threads[0].extent if reduce_threads else 1)
    return math.prod(lp.extent for lp in block), threads, bindings


def _row_major(loops: list[_Loop], kind: LoopKind) -> tuple[loop.Binding, ...]:
    stride, out = 1, []
    for lp in reversed(loops):
        out.append(loop.Binding(lp.name, kind, stride, lp.extent))
        stride *= lp.extent
    return tuple(reversed(out))


def _wrap(lp: _Loop, body: tuple) -> For:
    if lp.kind is LoopKind.PARALLEL:
        return For(Var(lp.name), loop.START, loop.END, body, lp.kind, lp.width, lp.unroll)
    return For(Var(lp.name), loop.const(0), lp.stop, body, lp.kind, lp.width, lp.unroll)


def _clamped_index(value: Expr, n: int) -> Expr:
    """An index value as int64, negative ones counted from the end, clamped into [0, n-1]."""
    i = value if value.dtype is loop.int64 else Alu(Op.CAST, (value,), loop.int64)
    negative = Alu(Op.CMPLT, (i, loop.const(0)), loop.bool_)
    i = Alu(Op.WHERE, (negative, loop.add(i, loop.const(n)), i), loop.int64)
    i = Alu(Op.MAX, (i, loop.const(0)), loop.int64)
    return Alu(Op.MIN, (i, loop.const(max(n - 1, 0))), loop.int64)


def substitute(expr: Expr, name: str, value: Expr) -> Expr:
    """`expr` with the index variable `name` replaced by `value` (not inside local-array reads)."""
    return loop.rewrite(expr, lambda x: value if isinstance(x, Var) and x.name == name else
                        x if isinstance(x, loop.LocalLoad) else None)


class _ExprLowering:
    """Kernel-expression nodes -> loop-IR expressions at a given index."""

    def __init__(self, reduces: list[Node]):
        self.acc = {r: Var(f"acc{k}", r.dtype, accumulator=True) for k, r in enumerate(reduces)}
        self.loads: dict[int, DType] = {}
        self.masked: set[int] = set()   # slots read through a mask (padding)
        self.memo: dict[tuple, Expr] = {}

    def param_dtypes(self, nparams: int) -> list[DType]:
        return [self.loads[k] for k in range(nparams)]

    def expr(self, node: Node, idx: list[Expr]) -> Expr:
        return recurse(self._expr, (node, tuple(idx)), self.memo)

    def _expr(self, key: tuple[Node, tuple[Expr, ...]]):
        """The loop-IR expression of `node` at index `idx` (a recursive definition: see
        ir/walk.py; `yield` is a recursive call)."""
        node, idx = key
        if node in self.acc:
            return self.acc[node]
        if node.op is Op.CONST:
            return Const(node.arg, node.dtype)
        if node.op is Op.LOAD:
            slot, view = node.arg
            self.loads[slot] = node.dtype
            index, valid = view.index(list(idx))
            if valid is not None:
                self.masked.add(slot)
            return _masked_load(slot + 1, index, node.dtype, valid)
        if node.op is Op.VALID:
            _, valid = node.arg.index(list(idx))
            return Const(True, node.dtype) if valid is None else valid
        if node.op is Op.GATHER:
            source, index = node.src
            axis, k = node.arg, len(index.shape)
            at = yield (index, idx[axis:axis + k])
            picked = _clamped_index(at, source.shape[axis])
            return (yield (source, idx[:axis] + (picked,) + idx[axis + k:]))
        srcs = []
        for s in node.src:
            srcs.append((yield (s, idx)))
        return Alu(node.op, tuple(srcs), node.dtype)


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
