"""Lowering's gpu staging: CacheRead(slot, at) on a loop of a reduction stages input `slot` in
local memory, loaded by the block's threads together at the start of `at` (`_stage_inputs`,
`_stage`); the output loops bound to threads then run whole (`_guard_thread_edges`)."""
from __future__ import annotations

import math

from ..ir import loop
from ..ir.loop import Const, Expr, For, LoopKind, Var
from .lower_expr import _masked_load, _replace_load, _vars, _walk_exprs, substitute
from .nests import _Loop, _Nests, _position, _stride
from .reduction_loops import _Update
from .schedule import CacheRead


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


def _substitute_all(expr: Expr, axes: list[_Loop], f: Expr, size: int) -> Expr:
    inner_size = size
    for lp in axes:
        inner_size //= lp.extent
        expr = substitute(expr, lp.name, loop.imod(loop.idiv(f, inner_size), lp.extent))
    return expr
