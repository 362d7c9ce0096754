"""Loop versioning for tails: a loop whose body runs inner loops of `min(c, rest)` iterations (the
last, partial tile of a split whose factor need not divide a symbolic size) runs its body in two
versions: where rest >= c, with those loops `c` long -- known trip counts, so a register tile
unrolls and lives in registers -- and otherwise as it was. (TVM's loop partitioning.) A local
array used only inside the body gets a copy of its own in the tail version: one tile accessed at
unknown indices anywhere would keep it in memory in both. Only kernels with symbolic sizes, so
far (lazytensor/sizes.py): their tile splits cannot divide a size they do not know; the
heuristics choose dividing splits for known sizes.

A 64x128 @ 128x128 matmul with a symbolic row count: 92 -> 25 us, its concrete twin's time.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import loop
from ..ir.loop import Alu, Const, Expr, For, If, LocalArray, LocalLoad, LocalStore
from ..ir.ops import Op

TAIL = "_tail"


def version_tails(kernel: loop.Kernel) -> loop.Kernel:
    """`kernel` with the body of each outermost loop that has tails in two versions."""
    if not kernel.sizes:
        return kernel
    arrays = list(kernel.local_arrays)
    body = _versioned(kernel.body, kernel.body, arrays)
    return replace(kernel, body=body, local_arrays=tuple(arrays))


def _versioned(stmts: tuple, whole: tuple, arrays: list[LocalArray]) -> tuple:
    out = []
    for stmt in stmts:
        if isinstance(stmt, For):
            tail = _tail_of(stmt)
            if tail is None:
                stmt = replace(stmt, body=_versioned(stmt.body, whole, arrays))
            else:
                stmt = replace(stmt, body=_two_versions(stmt.body, tail, whole, arrays))
        elif isinstance(stmt, If):
            stmt = replace(stmt, body=_versioned(stmt.body, whole, arrays))
        out.append(stmt)
    return tuple(out)


def _tail_of(f: For) -> Alu | None:
    """The first `min(c, rest)` stop of a loop inside `f` whose `rest` reads f's variable."""
    for s in loop.walk(f.body):
        if isinstance(s, For) and isinstance(s.stop, Alu) and s.stop.op is Op.MIN and \
                isinstance(s.stop.srcs[0], Const) and f.var in loop.postorder(s.stop.srcs[1]):
            return s.stop
    return None


def _two_versions(body: tuple, tail: Alu, whole: tuple, arrays: list[LocalArray]) -> tuple:
    c, rest = tail.srcs
    full = _rewrite(body, lambda e: c if e is tail else None, {})
    own = {a.name for a in arrays if _accesses(body, a.name) == _accesses(whole, a.name)}
    renamed = {name: name + TAIL for name in own}
    arrays += [replace(a, name=renamed[a.name]) for a in list(arrays) if a.name in renamed]
    partial = _rewrite(body, lambda e: LocalLoad(renamed[e.array], e.index, e.dtype)
                       if isinstance(e, LocalLoad) and e.array in renamed else None, renamed)
    return (If(loop.less(loop.const(c.value - 1), rest), full), If(loop.less(rest, c), partial))


def _accesses(stmts: tuple, name: str) -> int:
    count = 0
    for s in loop.walk(stmts):
        count += isinstance(s, LocalStore) and s.array == name
        for root in loop.expressions(s):
            count += sum(isinstance(e, LocalLoad) and e.array == name for e in loop.postorder(root))
    return count


def _rewrite(stmts: tuple, replace_expr, renamed: dict[str, str]) -> tuple:
    """The statements with every expression rewritten by `replace_expr` (loop.rewrite) and the
    stores into arrays in `renamed` going to their new names."""
    def expr(e: Expr) -> Expr:
        return loop.rewrite(e, replace_expr)

    out = []
    for s in stmts:
        if isinstance(s, For):
            s = replace(s, start=expr(s.start), stop=expr(s.stop), body=_rewrite(s.body, replace_expr, renamed))
        elif isinstance(s, If):
            s = replace(s, cond=expr(s.cond), body=_rewrite(s.body, replace_expr, renamed))
        elif isinstance(s, LocalStore):
            s = replace(s, array=renamed.get(s.array, s.array), index=expr(s.index), value=expr(s.value))
        elif isinstance(s, loop.Store):
            s = replace(s, index=expr(s.index), value=expr(s.value))
        elif isinstance(s, loop.Declare):
            s = replace(s, init=expr(s.init))
        elif isinstance(s, loop.Assign):
            s = replace(s, value=expr(s.value))
        else:
            raise TypeError(f"version_tails: cannot copy {s!r}")
        out.append(s)
    return tuple(out)
