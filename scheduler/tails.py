"""Loop versioning for tails: a loop whose body runs inner loops of `min(c, rest)` iterations (the
last, partial tile of a split whose factor does not divide its loop) runs its body in two
versions: where rest >= c, with those loops `c` long -- known trip counts, so a register tile
unrolls and lives in registers -- and otherwise as it was. (TVM's loop partitioning.) A local
array used only inside the body gets a copy of its own in the tail version: one tile accessed at
unknown indices anywhere would keep it in memory in both.

Which tails: in a kernel with symbolic sizes (lazytensor/sizes.py) every one, since its splits
cannot divide a size they do not know; in a kernel of known sizes, those of unrolled loops (a
register tile's rows: 6 rows of 1024 leave a tail of 4), where the second copy of the body
buys registers; elsewhere LLVM handles a loop of unknown length as well.

A 64x128 @ 128x128 matmul with a symbolic row count: 92 -> 25 us, its concrete twin's time. A
matmul 1024 in tiles of 6x16 (4 rows left over): 81 -> 182 GFLOP/s (Zen 3, 2 cores).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import loop
from ..ir.loop import Alu, Const, For, If, LocalArray, LocalLoad, LocalStore
from ..ir.ops import Op

TAIL = "_tail"


def version_tails(kernel: loop.Kernel) -> loop.Kernel:
    """`kernel` with the body of each outermost loop that has tails (of unrolled loops, where
    the kernel's sizes are known) in two versions."""
    arrays = list(kernel.local_arrays)
    body = _versioned(kernel.body, kernel.body, arrays, every=bool(kernel.sizes))
    return replace(kernel, body=body, local_arrays=tuple(arrays))


def _versioned(stmts: tuple, whole: tuple, arrays: list[LocalArray], every: bool) -> tuple:
    out = []
    for stmt in stmts:
        if isinstance(stmt, For):
            tail = _tail_of(stmt, every)
            if tail is None:
                stmt = replace(stmt, body=_versioned(stmt.body, whole, arrays, every))
            else:
                stmt = replace(stmt, body=_two_versions(stmt.body, tail, whole, arrays))
        elif isinstance(stmt, If):
            stmt = replace(stmt, body=_versioned(stmt.body, whole, arrays, every))
        out.append(stmt)
    return tuple(out)


def _tail_of(f: For, every: bool) -> Alu | None:
    """The first `min(c, rest)` stop of a loop inside `f` (an unrolled loop, unless `every`) whose
    `rest` reads f's variable and no variable of a loop inside f (defined only there: a tile's
    rows split twice are versioned at the inner split's loop)."""
    inner = {s.var for s in loop.walk(f.body) if isinstance(s, For)}
    for s in loop.walk(f.body):
        if isinstance(s, For) and isinstance(s.stop, Alu) and s.stop.op is Op.MIN and (every or s.unroll > 1) and \
                isinstance(s.stop.srcs[0], Const):
            reads = set(loop.postorder(s.stop.srcs[1]))
            if f.var in reads and not reads & inner:
                return s.stop
    return None


def _two_versions(body: tuple, tail: Alu, whole: tuple, arrays: list[LocalArray]) -> tuple:
    c, rest = tail.srcs
    full = loop.rewrite_statements(body, lambda e: loop.rewrite(e, lambda x: c if x is tail else None))
    own = {a.name for a in arrays if _accesses(body, a.name) == _accesses(whole, a.name)}
    renamed = {name: name + TAIL for name in own}
    arrays += [replace(a, name=renamed[a.name]) for a in list(arrays) if a.name in renamed]
    partial = loop.rewrite_statements(body, lambda e: loop.rewrite(e, lambda x: LocalLoad(
        renamed[x.array], x.index, x.dtype) if isinstance(x, LocalLoad) and x.array in renamed else None), renamed)
    return (If(loop.less(loop.const(c.value - 1), rest), full), If(loop.less(rest, c), partial))


def _accesses(stmts: tuple, name: str) -> int:
    count = 0
    for s in loop.walk(stmts):
        count += isinstance(s, LocalStore) and s.array == name
        for root in loop.expressions(s):
            count += sum(isinstance(e, LocalLoad) and e.array == name for e in loop.postorder(root))
    return count
