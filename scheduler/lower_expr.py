"""Lowering's expressions: kernel-expression nodes as loop-IR expressions at an index
(`_ExprLowering`), each reduction's accumulator start value (`identity`) and update op, and the
helpers the passes share to read and rewrite expressions."""
from __future__ import annotations

import math

from ..ir import loop
from ..ir.dtypes import DType
from ..ir.graph import Node
from ..ir.loop import Alu, Const, Expr, Var
from ..ir.ops import Op
from ..ir.walk import recurse


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
        if node.op is Op.WHERE:
            return where(*srcs)
        return Alu(node.op, tuple(srcs), node.dtype)


def where(cond: Expr, if_true: Expr, if_false: Expr) -> Expr:
    """`where(cond, if_true, if_false)`, a branch that is itself a select on `cond` replaced by
    the side `cond` picks: a padded read is `where(valid, <masked load>, 0)` and the masked load
    is `where(valid, buf[...], 0)` again; left nested, the renderer did not see the guarded read
    (`_branch_guarded`) and a vectorized loop gathered its lanes one by one."""
    if isinstance(if_true, Alu) and if_true.op is Op.WHERE and if_true.srcs[0] == cond:
        if_true = if_true.srcs[1]
    if isinstance(if_false, Alu) and if_false.op is Op.WHERE and if_false.srcs[0] == cond:
        if_false = if_false.srcs[2]
    return Alu(Op.WHERE, (cond, if_true, if_false), if_true.dtype)


def _clamped_index(value: Expr, n: int) -> Expr:
    """An index value as int64, negative ones counted from the end, clamped into [0, n-1]."""
    i = value if value.dtype is loop.int64 else Alu(Op.CAST, (value,), loop.int64)
    negative = Alu(Op.CMPLT, (i, loop.const(0)), loop.bool_)
    i = Alu(Op.WHERE, (negative, loop.add(i, loop.const(n)), i), loop.int64)
    i = Alu(Op.MAX, (i, loop.const(0)), loop.int64)
    return Alu(Op.MIN, (i, loop.const(max(n - 1, 0))), loop.int64)


def _masked_load(buf: int, index: Expr, dtype: DType, valid: Expr | None) -> Expr:
    """Parameter `buf` at `index`; where `valid` is false, index 0 is read (always in bounds)
    and the value replaced by zero."""
    if valid is None:
        return loop.Load(buf, index, dtype)
    safe = Alu(Op.WHERE, (valid, index, loop.const(0)), loop.int64)
    zero = Const(False if dtype.is_bool else 0, dtype)
    return Alu(Op.WHERE, (valid, loop.Load(buf, safe, dtype), zero), dtype)


def substitute(expr: Expr, name: str, value: Expr) -> Expr:
    """`expr` with the index variable `name` replaced by `value` (not inside local-array reads)."""
    return loop.rewrite(expr, lambda x: value if isinstance(x, Var) and x.name == name else
                        x if isinstance(x, loop.LocalLoad) else None)


def _walk_exprs(e: Expr) -> list[Expr]:
    """Every distinct sub-expression, in a deterministic order (the reads of an input are staged
    or packed in this order)."""
    return loop.postorder(e)


def _vars(e: Expr) -> set[str]:
    return {x.name for x in loop.postorder(e) if isinstance(x, Var)}


def _replace_load(e: Expr, old: loop.Load, new: Expr) -> Expr:
    """`e` with the read `old` replaced by `new` (not inside other reads' indices)."""
    return loop.rewrite(e, lambda x: new if x == old else x if isinstance(x, (loop.Load, loop.LocalLoad)) else None)
