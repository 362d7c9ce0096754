"""Loop versioning for tails: a loop whose body runs inner loops of `min(c, rest)` iterations (the
last, partial tile of a split whose factor does not divide its loop) runs its body in two
versions: where rest >= c, with those loops `c` long -- known trip counts, so a register tile
unrolls and lives in registers -- and otherwise as it was. (TVM's loop partitioning.) A local
array used only inside the body gets a copy of its own in the tail version: one tile accessed at
unknown indices anywhere would keep it in memory in both.

Which tails: in a kernel with symbolic sizes (lazytensor/sizes.py) every one, since its splits
cannot divide a size they do not know; in a kernel of known sizes, those of unrolled loops (a
register tile's rows: 6 rows of 1024 leave a tail of 4), where the second copy of the body
buys registers; elsewhere LLVM handles a loop of unknown length as well. Inside each version,
the unrolled loops' other tails get versions of their own (a tile's columns after its rows).
Where the sizes are known, the tail's length is too (n % c): the tail's loops then have that
length, vectorized in vectors that divide it (_remainder), so the last tile too stays in
registers.

A 64x128 @ 128x128 matmul with a symbolic row count: 92 -> 25 us, its concrete twin's time. A
matmul 1024 in tiles of 6x16 (4 rows left over): 81 -> 182 GFLOP/s (Zen 3, 2 cores).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import loop
from ..ir.loop import Alu, Const, For, If, LocalArray, LocalLoad, LocalStore, Var
from ..ir.ops import Op
from .nests import _evaluate

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
            else:   # (then the unrolled loops' tails inside each version: a tile's columns after its rows)
                versions = _two_versions(stmt.body, tail, whole, arrays)
                stmt = replace(stmt, body=_versioned(versions, whole, arrays, False))
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
    taken = {a.name for a in arrays}
    renamed = {}
    for name in sorted(own):   # (a tile versioned twice, rows then columns: a name each)
        renamed[name] = next(new for new in (f"{name}{TAIL}{k or ''}" for k in range(len(taken) + 1))
                             if new not in taken)
        taken.add(renamed[name])
    arrays += [replace(a, name=renamed[a.name]) for a in list(arrays) if a.name in renamed]
    last = _remainder(tail, body)   # (known: the tail's loops too have a known length)

    def in_tail(x):
        if x is tail and last is not None:
            return last
        if isinstance(x, LocalLoad) and x.array in renamed:
            return LocalLoad(renamed[x.array], x.index, x.dtype)
        return None
    partial = loop.rewrite_statements(_retiled(body, tail, last) if last is not None else body,
                                      lambda e: loop.rewrite(e, in_tail), renamed)
    return (If(loop.less(loop.const(c.value - 1), rest), full), If(loop.less(rest, c), partial))


def _retiled(stmts: tuple, tail: Alu, length: Const) -> tuple:
    """The loops that stop at `tail` in vectors that divide its known `length` (12 in 4s)."""
    out = []
    for s in stmts:
        if isinstance(s, For):
            body = _retiled(s.body, tail, length)
            if s.stop is tail and s.vector_width > 1:
                width = _dividing_width(s.vector_width, length.value)
                unroll = max(1, length.value // width) if s.unroll > 1 else 1
                s = replace(s, body=body, vector_width=width, unroll=unroll)
            else:
                s = replace(s, body=body)
        elif isinstance(s, If):
            s = replace(s, body=_retiled(s.body, tail, length))
        out.append(s)
    return tuple(out)


def _dividing_width(width: int, length: int) -> int:
    """The widest of `width`, its half, its quarter, ... that divides `length`."""
    while length % width:
        width //= 2
    return width


def _remainder(tail: Alu, body: tuple) -> Const | None:
    """The length of the last, partial tile of `tail` = min(c, rest) where it is known: rest is
    n - c * v in one loop variable v (a split of a known size n), so rest < c only in the last
    tile, where it is n % c (a 1000-column matmul's last 8 columns of 16: a loop of 8, whose
    tile LLVM keeps in registers too; of unknown length, it made the whole matmul 1.25x
    slower). A vectorized loop of that length runs in vectors that divide it (_retiled), at
    least half as wide as its own (the last 12 columns of 700 in 3 vectors of 4: the matmul
    1.4x faster than with 12 unknown; in vectors of 8, LLVM left them scalar, 1.5x slower);
    where none does (13 columns), its length stays unknown."""
    c, rest = tail.srcs
    widths = {x.vector_width for x in loop.walk(body) if isinstance(x, For) and x.stop is tail}
    parts = loop.postorder(rest)
    names = {x.name for x in parts if isinstance(x, Var)}
    if len(names) != 1 or not all(isinstance(x, (Const, Var)) or (isinstance(x, Alu) and x.op in (Op.ADD, Op.MUL))
                                  for x in parts):
        return None
    (name,) = names
    n, at1, at2 = (_evaluate(rest, {name: v}) for v in (0, 1, 2))   # (n, n - c, n - 2c where so)
    if at1 - n != -c.value or at2 - at1 != -c.value or n <= 0 or n % c.value == 0 or \
            any(_dividing_width(w, n % c.value) < w // 2 for w in widths):
        return None
    return loop.const(n % c.value)


def _accesses(stmts: tuple, name: str) -> int:
    count = 0
    for s in loop.walk(stmts):
        count += isinstance(s, LocalStore) and s.array == name
        for root in loop.expressions(s):
            count += sum(isinstance(e, LocalLoad) and e.array == name for e in loop.postorder(root))
    return count
