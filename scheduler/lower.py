"""Lowering: a kernel expression plus its schedule -> loop IR.

The loop nest is built from the output axes (after the schedule's splits and reorders), then,
inside it, one accumulator loop nest per reduction, then the store of the output element.
Parameter 0 is the output buffer; LOAD slot k is parameter k + 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..ir import loop
from ..ir.dtypes import DType
from ..ir.graph import Node
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.ops import Op
from ..ir.view import View
from .schedule import Parallel, Reorder, Schedule, Split, Unroll, Vectorize, reductions

_UPDATE = {Op.SUM: Op.ADD, Op.PROD: Op.MUL, Op.REDUCE_MAX: Op.MAX, Op.REDUCE_MIN: Op.MIN}


def identity(op: Op, dtype: DType):
    """The start value of an accumulator. A float sum starts at -0.0 so that a sum of -0.0 is -0.0."""
    if op is Op.SUM:
        return -0.0 if dtype.is_float else (False if dtype.is_bool else 0)
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
    shape = expr.shape
    loops = [_Loop(f"i{d}", n, loop.const(n)) for d, n in enumerate(shape)]
    axis_value: dict[str, Expr] = {f"i{d}": Var(f"i{d}") for d in range(len(shape))}
    reduce_loops: dict[str, _Loop] = {}
    reduces = reductions(expr)
    for k, r in enumerate(reduces):
        for a in r.arg:
            n = r.src[0].shape[a]
            reduce_loops[f"r{k}_{a}"] = _Loop(f"r{k}_{a}", n, loop.const(n))

    def find(axis: str) -> _Loop:
        for lp in loops:
            if lp.name == axis:
                return lp
        if axis in reduce_loops:
            return reduce_loops[axis]
        raise ValueError(f"schedule names axis {axis!r}, which this kernel does not have")

    for prim in schedule:
        if isinstance(prim, Split):
            lp = find(prim.axis)
            if lp not in loops:
                raise ValueError(f"Split({prim.axis!r}): only output axes can be split so far")
            at = loops.index(lp)
            outer_n = -(-lp.extent // prim.factor)
            outer = _Loop(f"{lp.name}_o", outer_n, loop.const(outer_n))
            rest = loop.add(lp.stop, loop.mul(Var(outer.name), loop.const(-prim.factor)))
            inner_stop = (loop.const(prim.factor) if lp.extent % prim.factor == 0 and isinstance(lp.stop, Const)
                          else Alu(Op.MIN, (loop.const(prim.factor), rest), loop.int64))
            inner = _Loop(f"{lp.name}_i", prim.factor, inner_stop)
            loops[at:at + 1] = [outer, inner]
            value = loop.add(loop.mul(Var(outer.name), loop.const(prim.factor)), Var(inner.name))
            axis_value = {a: substitute(v, lp.name, value) for a, v in axis_value.items()}
            for other in loops:
                other.stop = substitute(other.stop, lp.name, value)
        elif isinstance(prim, Reorder):
            by_name = {lp.name: lp for lp in loops}
            loops = [by_name[a] for a in prim.axes] + [lp for lp in loops if lp.name not in prim.axes]
        elif isinstance(prim, Parallel):
            lp = find(prim.axis)
            if lp is not loops[0]:
                raise ValueError(f"Parallel({prim.axis!r}): only the outermost loop can run in parallel")
            lp.kind = LoopKind.PARALLEL
        elif isinstance(prim, Vectorize):
            lp = find(prim.axis)
            lp.kind, lp.width = LoopKind.VECTORIZED, prim.width
        elif isinstance(prim, Unroll):
            find(prim.axis).unroll = prim.factor

    out_idx = [axis_value[f"i{d}"] for d in range(len(shape))]
    body: list[loop.Stmt] = []
    lowering = _ExprLowering(reduces)
    for k, r in enumerate(reduces):
        acc = Var(f"acc{k}", r.dtype)
        idx = [Var(f"r{k}_{a}") if a in r.arg else out_idx[a] for a in range(len(shape))]
        value = Alu(_UPDATE[r.op], (acc, lowering.expr(r.src[0], idx)), r.dtype)
        stmt: loop.Stmt = loop.Assign(acc, value, reassociate=True)
        for a in sorted(r.arg, reverse=True):
            stmt = _wrap(reduce_loops[f"r{k}_{a}"], (stmt,))
        body += [loop.Declare(acc, Const(identity(r.op, r.dtype), r.dtype)), stmt]
    out_index, _ = View.contiguous(shape).index(out_idx)
    body.append(loop.Store(0, out_index, lowering.expr(expr, out_idx)))
    stmts = tuple(body)
    for lp in reversed(loops):
        stmts = (_wrap(lp, stmts),)
    parallel = loops[0].extent if loops and loops[0].kind is LoopKind.PARALLEL else None
    params = (loop.Param(expr.dtype, True),) + tuple(loop.Param(d, False) for d in lowering.param_dtypes(nparams))
    return loop.Kernel(name, params, stmts, parallel)


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
    """`expr` with the index variable `name` replaced by `value`."""
    if isinstance(expr, Var):
        return value if expr.name == name else expr
    if isinstance(expr, Alu):
        return replace(expr, srcs=tuple(substitute(s, name, value) for s in expr.srcs))
    if isinstance(expr, loop.Load):
        return replace(expr, index=substitute(expr.index, name, value))
    return expr


class _ExprLowering:
    """Kernel-expression nodes -> loop-IR expressions at a given index."""

    def __init__(self, reduces: list[Node]):
        self.acc = {r: Var(f"acc{k}", r.dtype) for k, r in enumerate(reduces)}
        self.loads: dict[int, DType] = {}
        self.memo: dict[tuple, Expr] = {}

    def param_dtypes(self, nparams: int) -> list[DType]:
        return [self.loads[k] for k in range(nparams)]

    def expr(self, node: Node, idx: list[Expr]) -> Expr:
        key = (node, tuple(idx))
        if key not in self.memo:
            self.memo[key] = self._expr(node, idx)
        return self.memo[key]

    def _expr(self, node: Node, idx: list[Expr]) -> Expr:
        if node in self.acc:
            return self.acc[node]
        if node.op is Op.CONST:
            return Const(node.arg, node.dtype)
        if node.op is Op.LOAD:
            slot, view = node.arg
            self.loads[slot] = node.dtype
            index, valid = view.index(idx)
            if valid is None:
                return loop.Load(slot + 1, index, node.dtype)
            # read index 0 where invalid (always in bounds), then replace the value by zero
            safe = Alu(Op.WHERE, (valid, index, loop.const(0)), loop.int64)
            zero = Const(False if node.dtype.is_bool else 0, node.dtype)
            return Alu(Op.WHERE, (valid, loop.Load(slot + 1, safe, node.dtype), zero), node.dtype)
        if node.op is Op.VALID:
            _, valid = node.arg.index(idx)
            return Const(True, node.dtype) if valid is None else valid
        if node.op is Op.GATHER:
            source, index = node.src
            axis, k = node.arg, len(index.shape)
            at = self.expr(index, idx[axis:axis + k])
            picked = _clamped_index(at, source.shape[axis])
            return self.expr(source, idx[:axis] + [picked] + idx[axis + k:])
        return Alu(node.op, tuple(self.expr(s, idx) for s in node.src), node.dtype)
