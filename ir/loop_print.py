"""Loop IR as text a person reads (LT_DUMP=loops): C-like statements, one per line.

    kernel kernel(out0: float32*, in1: float32*)          (x.sum(axis=1) * 2, x of 64 x 128)
      for i0 in 0..64:
        float64 acc0 = 0.0
        float32 acc0_part = 0.0
        for r0_1 in 0..128 vectorized x16 unroll 8:
          acc0_part = (acc0_part + in1[((i0 * 128) + r0_1)])   (reassociable)
        acc0 = (acc0 + cast<float64>(acc0_part))   (reassociable)
        for i1 in 0..1:
          out0[i0] = (cast<float32>(acc0) * 2.0)
"""
from __future__ import annotations

from .loop import (Alu, Assign, Barrier, Const, Declare, Expr, For, If, Kernel, Load, LocalLoad, LocalStore, LoopKind,
                   Stmt, Store, ThreadReduce, Var, postorder)
from .ops import Op

_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.IDIV: "/", Op.IMOD: "%", Op.MOD: "%",
          Op.CMPLT: "<", Op.CMPLE: "<=", Op.CMPEQ: "==", Op.CMPNE: "!=", Op.AND: "&", Op.OR: "|", Op.XOR: "^",
          Op.SHL: "<<", Op.SHR: ">>"}


def format_kernel(kernel: Kernel) -> str:
    """The kernel as indented text: its parameters, launch shape and statements."""
    params = ", ".join(f"{'out' if p.is_output else 'in'}{i}: {p.dtype.name}*" for i, p in enumerate(kernel.params))
    head = f"kernel {kernel.name}({params})"
    if kernel.parallel_extent is not None:
        head += f"   parallel 0..{kernel.parallel_extent}"
    if kernel.blocks > 1 or kernel.threads > 1:
        head += f"   grid {kernel.blocks} blocks x {kernel.threads} threads"
    lines = [head]
    lines += [f"  local {a.dtype.name} {a.name}[{a.size}]" for a in kernel.local_arrays]
    lines += [f"  {b.var} = ({b.kind.value} index / {b.stride}) % {b.extent}" for b in kernel.bindings]
    stack: list[tuple[int, Stmt]] = [(1, s) for s in reversed(kernel.body)]
    while stack:   # (iterative: loop nests may be deep)
        depth, s = stack.pop()
        lines.append("  " * depth + _statement(s))
        if isinstance(s, (For, If)):
            stack.extend((depth + 1, inner) for inner in reversed(s.body))
    return "\n".join(lines)


def _statement(s: Stmt) -> str:
    if isinstance(s, For):
        how = "" if s.kind is LoopKind.SERIAL else f" {s.kind.value}"
        how += f" x{s.vector_width}" if s.vector_width > 1 else ""
        how += f" unroll {s.unroll}" if s.unroll > 1 else ""
        return f"for {s.var.name} in {expression(s.start)}..{expression(s.stop)}{how}:"
    if isinstance(s, If):
        return f"if {expression(s.cond)}:"
    if isinstance(s, Store):
        return f"out{s.buf}[{expression(s.index)}] = {expression(s.value)}"
    if isinstance(s, Declare):
        return f"{s.var.dtype.name} {s.var.name} = {expression(s.init)}"
    if isinstance(s, Assign):
        return f"{s.var.name} = {expression(s.value)}" + ("   (reassociable)" if s.reassociate else "")
    if isinstance(s, LocalStore):
        return f"{s.array}[{expression(s.index)}] = {expression(s.value)}"
    if isinstance(s, ThreadReduce):
        return f"{s.acc.name} = {s.op.name.lower()} over {s.threads} threads"
    if isinstance(s, Barrier):
        return "barrier"
    return repr(s)


def expression(root: Expr) -> str:
    """An expression as infix text (iterative: expressions may be deep)."""
    text: dict[Expr, str] = {}
    for e in postorder(root):
        if isinstance(e, Const):
            text[e] = repr(e.value)
        elif isinstance(e, Var):
            text[e] = e.name
        elif isinstance(e, Load):
            text[e] = f"{'out' if e.buf == 0 else 'in'}{e.buf}[{text[e.index]}]"   # (parameter 0: the output)
        elif isinstance(e, LocalLoad):
            text[e] = f"{e.array}[{text[e.index]}]"
        elif isinstance(e, Alu) and e.op in _INFIX and len(e.srcs) == 2:
            text[e] = f"({text[e.srcs[0]]} {_INFIX[e.op]} {text[e.srcs[1]]})"
        elif isinstance(e, Alu) and e.op in (Op.CAST, Op.BITCAST):
            text[e] = f"{e.op.name.lower()}<{e.dtype.name}>({text[e.srcs[0]]})"
        elif isinstance(e, Alu):
            text[e] = f"{e.op.name.lower()}({', '.join(text[s] for s in e.srcs)})"
        else:
            text[e] = repr(e)
    return text[root]
