"""Lowering's reduction passes: each reduction's accumulator update (`_reduction_updates`,
`_Update`), cpu float32 partial sums (`_partial_sums`, `_use_partial_sums`), and the updates
inside their loops, hoisted to the output loop they depend on (`_reduction_loops`)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import loop
from ..ir.dtypes import float32
from ..ir.graph import Node, toposort
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.ops import Op
from .lower_expr import _UPDATE, _ExprLowering, _vars, identity
from .nests import _Loop, _Nests, _wrap
from .schedule import PartialSum, Schedule, reduce_axis


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
