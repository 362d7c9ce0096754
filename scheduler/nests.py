"""Lowering's loop nests: the kernel's loops after the schedule's loop primitives
(`apply_primitives`: Split, Fuse, Reorder, Parallel, Vectorize, Unroll, Bind, into `_Nests`), the
gpu launch shape they bind, positions and strides of their variables in arrays and index
expressions, and statements wrapped in them (`_wrap`, `_nest`, `_kernel`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import loop
from ..ir.graph import Node
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.ops import Op
from ..ir.symbolic import HINTS, RANGES, Sym, ceil_div, divides, prod
from .lower_expr import _ExprLowering, substitute
from .schedule import Bind, Fuse, Parallel, Reorder, Schedule, Split, Unroll, Vectorize, output_axis, reduce_axis


@dataclass
class _Loop:
    name: str
    extent: int
    stop: Expr            # usually const(extent); a split's inner loop stops early at the edge
    kind: LoopKind = LoopKind.SERIAL
    width: int = 1
    unroll: int = 1
    reduction: bool = False   # a reduction's loop among the output loops (its blocks, outside a tile)


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
    outer_n = ceil_div(lp.extent, prim.factor)
    outer = _Loop(prim.outer, outer_n, loop.const(outer_n))
    rest = loop.add(lp.stop, loop.mul(Var(outer.name), loop.const(-prim.factor)))
    inner_stop = (loop.const(prim.factor) if divides(prim.factor, lp.extent) and isinstance(lp.stop, Const)
                  else Alu(Op.MIN, (loop.const(prim.factor), rest), loop.int64))
    inner = _Loop(prim.inner, prim.factor, inner_stop)
    nest[at:at + 1] = [outer, inner]
    nests.replace_axis(lp.name, loop.add(loop.mul(Var(outer.name), loop.const(prim.factor)), Var(inner.name)))


def _fuse(nests: _Nests, prim: Fuse) -> None:
    nest, at = nests.find(prim.axes[0])
    fused = nest[at:at + len(prim.axes)]
    if [lp.name for lp in fused] != list(prim.axes) or any(lp.stop != loop.const(lp.extent) for lp in fused):
        raise ValueError(f"Fuse{prim.axes}: only neighbouring whole loops can be fused")
    extent = prod(lp.extent for lp in fused)
    one = _Loop(prim.fused, extent, loop.const(extent))
    nest[at:at + len(fused)] = [one]
    inner = 1
    for j, lp in reversed(list(enumerate(fused))):
        part = loop.idiv(Var(one.name), inner)
        nests.replace_axis(lp.name, part if j == 0 else loop.imod(part, lp.extent))
        inner *= lp.extent


def _reorder(nests: _Nests, prim: Reorder) -> None:
    """The loops of one nest in a new order. An order of output loops may take in loops of a
    reduction: they then run among the output loops (the reduction in blocks, BLAS's K blocks:
    a CacheWrite tile inside them keeps its partial results in the output between blocks)."""
    outputs = {lp.name for lp in nests.out}
    nest = nests.out if outputs.intersection(prim.axes) else nests.find(prim.axes[0])[0]
    by_name = {lp.name: lp for lp in nest}
    for name in prim.axes:
        if name not in by_name:
            other, at = nests.find(name)
            if nest is not nests.out:
                raise ValueError(f"Reorder{prim.axes}: {name!r} is a loop of another reduction (an order takes "
                                 "the loops of one reduction, or output loops and reduction loops among them)")
            by_name[name] = other.pop(at)
            by_name[name].reduction = True
    nest[:] = [by_name[a] for a in prim.axes] + [lp for lp in nest if lp.name not in prim.axes]


def _parallel(nests: _Nests, prim: Parallel) -> None:
    nest, at = nests.find(prim.axis)
    if nest is not nests.out or at != 0:
        raise ValueError(f"Parallel({prim.axis!r}): only the outermost loop can run in parallel")
    if nest[0].reduction:
        raise ValueError(f"Parallel({prim.axis!r}): a reduction's loop runs serially (its blocks add into the same "
                         "outputs)")
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


def _position(loops: list[_Loop]) -> Expr:
    """The row-major position of the loops' variables in an array of their extents (the last
    loop innermost): the element a local array keeps for this iteration."""
    position, stride = loop.const(0), 1
    for lp in reversed(loops):
        position = loop.add(position, loop.mul(Var(lp.name), loop.const(stride)))
        stride *= lp.extent
    return position


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
    """An index expression's value, with unknown variables (blocks, outer loops) at 0 and
    symbolic sizes at their hints (for decisions of speed: a packing order)."""
    value: dict[Expr, int] = {}
    for x in loop.postorder(e):
        if isinstance(x, Const):
            value[x] = int(x.value)
        elif isinstance(x, Var):
            value[x] = env.get(x.name, HINTS.get(x.name, 0))
        elif isinstance(x, Alu) and x.op in _INDEX_ARITHMETIC:
            value[x] = _INDEX_ARITHMETIC[x.op](*[value[p] for p in x.srcs])
        else:
            raise KeyError(x)
    return value[e]


_INDEX_ARITHMETIC = {Op.ADD: lambda a, b: a + b, Op.MUL: lambda a, b: a * b, Op.IDIV: lambda a, b: a // b,
                     Op.IMOD: lambda a, b: a % b, Op.MIN: min, Op.MAX: max}


def _wrap(lp: _Loop, body: tuple) -> For:
    if lp.kind is LoopKind.PARALLEL:
        return For(Var(lp.name), loop.START, loop.END, body, lp.kind, lp.width, lp.unroll)
    return For(Var(lp.name), loop.const(0), lp.stop, body, lp.kind, lp.width, lp.unroll)


def _nest(loops: list[_Loop], body: tuple, prologues: dict[str | None, tuple] | None = None) -> tuple:
    """`body` inside `loops`, outermost first; `prologues[name]` runs first in loop `name`'s body."""
    for lp in reversed(loops):
        body = (_wrap(lp, (prologues or {}).get(lp.name, ()) + body),)
    return body


def _kernel(name: str, expr: Node, lowering: "_ExprLowering", nparams: int, out: list[_Loop], body: tuple,
            prologues: dict[str | None, tuple] | None = None, **launch) -> loop.Kernel:
    """The kernel: `body` inside the output loops `out`, parameter 0 the output, then the loads."""
    parallel = out[0].extent if out and out[0].kind is LoopKind.PARALLEL else None
    params = (loop.Param(expr.dtype, True),) + tuple(loop.Param(d, False) for d in lowering.param_dtypes(nparams))
    start = (prologues or {}).get(None, ())   # once per call (per parallel chunk), before the loops
    stmts = start + _nest(out, body, prologues)
    return loop.Kernel(name, params, stmts, parallel, sizes=_size_names(stmts, parallel), **launch)


def _size_names(stmts: tuple, parallel) -> tuple[str, ...]:
    """The size variables (symbolic sizes) the statements or the parallel extent read, sorted."""
    names = parallel.names() if isinstance(parallel, Sym) else set()
    for stmt in loop.walk(stmts):
        for root in loop.expressions(stmt):
            names.update(e.name for e in loop.postorder(root) if isinstance(e, Var) and e.name in RANGES)
    return tuple(sorted(names))
