"""The verifier: checks a graph against the rule tables (run in tests and under LT_DEBUG)."""
from __future__ import annotations

from .graph import Node, toposort
from .linalg import arity as linalg_arity
from .ops import BINARY, GRAPH_ONLY, INDEXING, MOVEMENT, OPAQUE, REDUCTION, SOURCE, TERNARY, UNARY, Op
from .rules import DTYPE_RULES, SHAPE_RULES

_ARITY = {**{op: 0 for op in SOURCE}, **{op: 1 for op in UNARY | MOVEMENT | REDUCTION | GRAPH_ONLY},
          **{op: 2 for op in BINARY | INDEXING}, **{op: 3 for op in TERNARY},
          **{op: 1 for op in OPAQUE - {Op.SEARCHSORTED, Op.SCATTER_ADD}}, Op.SEARCHSORTED: 2, Op.SCATTER_ADD: 2,
          Op.REAL: 1, Op.IMAG: 1, Op.COMPLEX: 2, Op.PAIRS: 0}


class IRError(AssertionError):
    pass


def verify(roots: list[Node]) -> None:
    """Raise IRError naming the first node whose arity, shape or dtype breaks its rule."""
    for node in toposort(roots):
        if node.op not in _ARITY:
            raise IRError(f"{node}: {node.op.name} does not belong in a user graph")
        arity = (linalg_arity(node.arg) if node.op is Op.LINALG else len(node.arg[2]) if node.op is Op.PAIRS
                 else _ARITY[node.op])
        if len(node.src) != arity:
            raise IRError(f"{node}: expects {arity} sources, has {len(node.src)}")
        if node.op in SOURCE:
            continue
        if node.op is Op.WHERE and not node.src[0].dtype.is_bool:
            raise IRError(f"{node}: the condition must be bool")
        if node.op is Op.GATHER and not node.src[1].dtype.is_integer:
            raise IRError(f"{node}: the index must be an integer")
        if node.op is Op.SCATTER_ADD and not node.src[0].dtype.is_integer:
            raise IRError(f"{node}: the index must be an integer")
        if node.op in BINARY and node.src[0].dtype is not node.src[1].dtype:
            raise IRError(f"{node}: operand dtypes differ ({node.src[0].dtype}, {node.src[1].dtype})")
        try:
            shape = SHAPE_RULES[node.op](tuple(s.shape for s in node.src), node.arg)
        except AssertionError as error:
            raise IRError(f"{node}: {error}") from None
        dtype = DTYPE_RULES[node.op](tuple(s.dtype for s in node.src), node.arg)
        if shape != node.shape or dtype is not node.dtype:
            raise IRError(f"{node}: rules give {dtype.name}{list(shape)}")
