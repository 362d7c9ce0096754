"""Lowering's cpu tile: CacheWrite(at) keeps the output loops from `at` inward in a local array
(`_lower_cache_write`, which lowers the whole kernel), and CacheRead(slot, at) packs input `slot`
into a contiguous array before the tile reads it (`_pack_inputs`, `_pack`)."""
from __future__ import annotations

import math
from dataclasses import replace

from ..ir import loop
from ..ir.symbolic import at_most
from ..ir.graph import Node
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.ops import Op
from ..ir.view import View
from .lower_expr import _UPDATE, _ExprLowering, _masked_load, _replace_load, _vars, _walk_exprs, identity
from .nests import _Loop, _Nests, _kernel, _nest, _position, _stride
from .schedule import CacheRead, CacheWrite, reduce_axis


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
    inside = [lp.name for lp in tile if lp.reduction]
    if inside:
        raise ValueError(f"CacheWrite({prim.at!r}): the reduction loops {inside} run outside the tile, not inside "
                         "the tile (its outputs are finished after the whole reduction)")
    array = loop.LocalArray("lt_tile", r.dtype, at_most(math.prod(lp.extent for lp in tile)))
    position = _position(tile)
    out_idx = nests.out_index()
    lowering = _ExprLowering(reduces)
    idx = [nests.values[reduce_axis(0, a)] if a in r.arg else out_idx[a] for a in range(len(out_idx))]
    current = loop.LocalLoad(array.name, position, r.dtype)
    update = loop.LocalStore(array.name, position, _accumulated(r, current, lowering.expr(r.src[0], idx)),
                             reassociate=True)
    lowering.acc[r] = current
    out_index, _ = View.contiguous(expr.shape).index(out_idx)
    finish = loop.Store(0, out_index, lowering.expr(expr, out_idx))

    init = loop.LocalStore(array.name, position, Const(identity(r.op, r.dtype), r.dtype))
    update, packed, prologues = _pack_inputs(update, caches, outer, nests.reduces[0] + tile, first=1)
    start, end = _nest(tile, (init,)), _nest(tile, (finish,))
    blocks = [lp for lp in outer if lp.reduction]
    if blocks:
        start, end = _in_blocks(expr, r, blocks, tile, array, position, out_index, start, end)
    body = start + _nest(nests.reduces[0], _nest(tile, (update,))) + end
    return _kernel(name, expr, lowering, nparams, outer, body, prologues, local_arrays=(array, *packed))


def _accumulated(r: Node, current: Expr, term: Expr) -> Expr:
    """The tile's update, current op term. A float sum's term that is a sum itself (a sum of
    products: the gradient of an input read by three projections, dq @ Wq + dk @ Wk + dv @ Wv)
    is added term by term, ((current + p1) + p2) + p3 (the sum is reassociable): each product
    contracts into one FMA on the accumulator, where current + (p1 + p2 + p3) took a multiply
    and an add more per element, and held every product's operands at once."""
    if r.op is not Op.SUM or not r.dtype.is_float:
        return Alu(_UPDATE[r.op], (current, term), r.dtype)
    terms, stack = [], [term]
    while stack:   # (the addends left to right)
        e = stack.pop()
        if isinstance(e, Alu) and e.op is Op.ADD and e.dtype == r.dtype:
            stack.extend(reversed(e.srcs))
        else:
            terms.append(e)
    value = current
    for t in terms:
        value = Alu(Op.ADD, (value, t), r.dtype)
    return value


def _in_blocks(expr: Node, r: Node, blocks: list[_Loop], tile: list[_Loop], array: loop.LocalArray, position: Expr,
               out_index: Expr, start: tuple, end: tuple) -> tuple[tuple, tuple]:
    """The tile's `start` and `end` where loops of its reduction (`blocks`) run outside it: each
    visit of the tile then reduces one block, so the output keeps the partial results between
    visits. The first block starts from the identity (`start`), the others from the output;
    the last finishes the outputs (`end`: the expression around the reduction), the others
    store the partial results. The blocks' loops run in order (not in parallel), each at least
    once, so the first visit has them all at 0 and the last all at their last iteration."""
    if r.dtype != expr.dtype:
        raise ValueError(f"Reorder: the reduction loops {[lp.name for lp in blocks]} run outside the tile, whose "
                         f"partial results the {expr.dtype.name} output cannot keep (the reduction is in "
                         f"{r.dtype.name})")
    if any(not isinstance(n, int) or n < 1 for n in r.src[0].shape):
        raise ValueError(f"Reorder: the reduction loops {[lp.name for lp in blocks]} run outside the tile, which "
                         "needs reduced sizes known and not 0 (every output visited)")
    first = last = None
    for lp in blocks:
        first = loop.logical_and(first, loop.less(Var(lp.name), loop.const(1)))
        last = loop.logical_and(last, Alu(Op.CMPLE, (lp.stop, loop.add(Var(lp.name), loop.const(1))), loop.bool_))
    partial = loop.Load(0, out_index, r.dtype)
    resume = _nest(tile, (loop.LocalStore(array.name, position, partial),))
    keep = _nest(tile, (loop.Store(0, out_index, loop.LocalLoad(array.name, position, r.dtype)),))
    return ((loop.If(first, start), loop.If(Alu(Op.NOT, (first,), loop.bool_), resume)),
            (loop.If(last, end), loop.If(Alu(Op.NOT, (last,), loop.bool_), keep)))


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
    array = loop.LocalArray(f"lt_pack{number}", read.dtype, at_most(math.prod(lp.extent for lp in axes)))
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
