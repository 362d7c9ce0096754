"""The verifiers, one per stage of the pipeline (run after each in tests and under LT_DEBUG):
a graph against the rule tables (`verify`), a fused kernel's expression (`verify_kernel_expression`)
and a loop-IR kernel (`verify_loops`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .graph import Node, toposort
from .linalg import arity as linalg_arity
from .ops import BINARY, GRAPH_ONLY, INDEXING, MOVEMENT, OPAQUE, REDUCTION, SOURCE, TERNARY, UNARY, Op
from .rules import DTYPE_RULES, SHAPE_RULES

_ARITY = {**{op: 0 for op in SOURCE}, **{op: 1 for op in UNARY | MOVEMENT | REDUCTION | GRAPH_ONLY},
          **{op: 2 for op in BINARY | INDEXING}, **{op: 3 for op in TERNARY},
          **{op: 1 for op in OPAQUE - {Op.SEARCHSORTED, Op.SCATTER_ADD}}, Op.SEARCHSORTED: 2, Op.SCATTER_ADD: 2,
          Op.REAL: 1, Op.IMAG: 1, Op.COMPLEX: 2, Op.PAIRS: 0}


if TYPE_CHECKING:
    from . import loop


class IRError(AssertionError):
    pass


def verify(roots: list[Node]) -> None:
    """Raise IRError naming the first node whose arity, shape or dtype breaks its rule."""
    for node in toposort(roots):
        if node.op not in _ARITY:
            raise IRError(f"{node}: {node.op.name} does not belong in a user graph")
        _check_rules(node)


def _check_rules(node: Node, shapes: bool = True) -> None:
    """Raise IRError where `node` breaks its op's arity, operand, dtype or (with `shapes`)
    shape rule."""
    arity = (linalg_arity(node.arg) if node.op is Op.LINALG else len(node.arg[2]) if node.op is Op.PAIRS
             else _ARITY[node.op])
    if len(node.src) != arity:
        raise IRError(f"{node}: expects {arity} sources, has {len(node.src)}")
    if node.op in SOURCE:
        return
    if node.op is Op.WHERE and not node.src[0].dtype.is_bool:
        raise IRError(f"{node}: the condition must be bool")
    if node.op is Op.GATHER and not node.src[1].dtype.is_integer:
        raise IRError(f"{node}: the index must be an integer")
    if node.op is Op.SCATTER_ADD and not node.src[0].dtype.is_integer:
        raise IRError(f"{node}: the index must be an integer")
    if node.op in BINARY and node.src[0].dtype is not node.src[1].dtype:
        raise IRError(f"{node}: operand dtypes differ ({node.src[0].dtype}, {node.src[1].dtype})")
    dtype = DTYPE_RULES[node.op](tuple(s.dtype for s in node.src), node.arg)
    if dtype is not node.dtype:
        raise IRError(f"{node}: rules give {dtype.name}")
    if not shapes:
        return
    try:
        shape = SHAPE_RULES[node.op](tuple(s.shape for s in node.src), node.arg)
    except AssertionError as error:
        raise IRError(f"{node}: {error}") from None
    if shape != node.shape:
        raise IRError(f"{node}: rules give shape {list(shape)}")


def verify_kernel_expression(expr: Node) -> None:
    """Raise IRError where a fused kernel's expression breaks its rules: leaves are LOAD, VALID
    and CONST only (no buffer, no movement or opaque op: fusion folded those into loads), and an
    operand's shape is its op's (a reduction's result may be read broadcast: a hoisted row
    reduction inside its row's elementwise work)."""
    for node in toposort([expr]):
        if node.op is Op.LOAD or node.op is Op.VALID:
            if node.src:
                raise IRError(f"{node}: a kernel leaf has no sources")
            if node.op is Op.VALID and not node.dtype.is_bool:
                raise IRError(f"{node}: VALID is bool")
            continue
        if node.op is Op.BUFFER or node.op in MOVEMENT or node.op in OPAQUE:
            raise IRError(f"{node}: {node.op.name} does not belong in a kernel expression")
        _check_rules(node, shapes=False)
        if node.op not in REDUCTION and node.op not in INDEXING and any(len(s.shape) != len(node.shape) or
                                            any(m not in (n, 1) for m, n in zip(s.shape, node.shape)) for s in node.src):
            raise IRError(f"{node}: operand shapes {[s.shape for s in node.src]} do not broadcast to {node.shape}")


def verify_loops(kernel: "loop.Kernel") -> None:
    """Raise IRError where a loop-IR kernel reads a variable before it is defined (or outside
    its loop), a parameter slot it does not have, a local array it does not declare, or
    stores into an input."""
    from . import loop
    defined = {loop.START.name, loop.END.name, loop.THREAD_ID.name} | {b.var for b in kernel.bindings} | \
        set(kernel.sizes)   # (symbolic sizes: parameters)
    arrays = {a.name for a in kernel.local_arrays}
    nparams = len(kernel.params)

    def check(e: "loop.Expr", where: str, scope: set) -> None:
        for part in loop.postorder(e):
            if isinstance(part, loop.Var) and part.name not in scope:
                raise IRError(f"{kernel.name}: {where} reads {part.name} where it is not defined")
            if isinstance(part, loop.Load) and not 0 <= part.buf < nparams:
                raise IRError(f"{kernel.name}: {where} loads from parameter {part.buf} of {nparams}")
            if isinstance(part, loop.LocalLoad) and part.array not in arrays:
                raise IRError(f"{kernel.name}: {where} reads local array {part.array}, not declared")

    stack = [(iter(kernel.body), set(defined))]   # (iterative: nests may be deep)
    while stack:
        statements, scope = stack[-1]
        s = next(statements, None)
        if s is None:
            stack.pop()
            continue
        if isinstance(s, loop.For):
            check(s.start, f"loop {s.var.name}'s start", scope)
            check(s.stop, f"loop {s.var.name}'s stop", scope)
            stack.append((iter(s.body), scope | {s.var.name}))
        elif isinstance(s, loop.If):
            check(s.cond, "a condition", scope)
            stack.append((iter(s.body), set(scope)))
        elif isinstance(s, loop.Declare):
            check(s.init, f"{s.var.name}'s initial value", scope)
            scope.add(s.var.name)
        elif isinstance(s, loop.Assign):
            if s.var.name not in scope:
                raise IRError(f"{kernel.name}: assigns {s.var.name} where it is not declared")
            check(s.value, f"the update of {s.var.name}", scope)
        elif isinstance(s, loop.Store):
            if not 0 <= s.buf < nparams or not kernel.params[s.buf].is_output:
                raise IRError(f"{kernel.name}: stores into parameter {s.buf}, which is not an output")
            check(s.index, "a store's index", scope)
            check(s.value, "a stored value", scope)
        elif isinstance(s, loop.LocalStore):
            if s.array not in arrays:
                raise IRError(f"{kernel.name}: stores into local array {s.array}, not declared")
            check(s.index, "a local store's index", scope)
            check(s.value, "a local store's value", scope)
        elif isinstance(s, loop.ThreadReduce) and s.acc.name not in scope:
            raise IRError(f"{kernel.name}: reduces {s.acc.name} across threads where it is not declared")
