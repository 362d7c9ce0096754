"""bfloat16 as float32 in kernels: the graph pass that lowers it before fusion.

A bfloat16 value is the upper half of a float32's bits, and memory holds those halves (uint16
bit patterns). `lower` rewrites a graph so that no node is bfloat16, computing as PyTorch does
on a CPU: a bfloat16 buffer is read as its bits widened to float32 (exact), each op with a
bfloat16 result is its float32 op rounded to bfloat16 (to nearest, ties to even; the rounded
value stays a float32 in the kernel), and a bfloat16 output is written back as the upper
halves. Sums and products accumulate in float32 and round once, at the end. Fusion, scheduling
and every backend then see float32, uint16 and uint32 nodes only.
"""
from __future__ import annotations

import math

from .dtypes import bfloat16, float32, uint16, uint32
from .graph import Node, toposort
from .ops import MOVEMENT, Op
from .passes import const
from .rules import make

# ops whose float32 result is a bfloat16 value already when their operands are (no rounding)
_EXACT = MOVEMENT | frozenset({Op.NEG, Op.ABS, Op.MAX, Op.MIN, Op.WHERE, Op.FLOOR, Op.CEIL, Op.TRUNC, Op.ROUND,
                               Op.COPYSIGN, Op.REDUCE_MAX, Op.REDUCE_MIN, Op.GATHER, Op.SORT})


def lower(roots: list[Node], leaves: list[Node]) -> tuple[list[Node], list[Node]]:
    """The graph under `roots` with every bfloat16 node lowered to float32 ones, and `leaves`
    (its buffers) as the lowered graph reads them: a bfloat16 buffer as its uint16 bits."""
    order = toposort(roots)
    if not any(node.dtype is bfloat16 for node in order):
        return roots, leaves
    lowered: dict[Node, Node] = {}   # node -> its node in the lowered graph (float32 for bfloat16)
    seen_as: dict[Node, Node] = {}   # bfloat16 buffer -> its bits
    for node in order:
        if node.op is Op.BUFFER and node.dtype is bfloat16:
            bits = Node(Op.BUFFER, uint16, node.shape, (), node.arg.reshaped(node.shape, uint16))
            seen_as[node] = bits
            lowered[node] = _widen(bits)
        elif node.op is Op.CONST and node.dtype is bfloat16:
            lowered[node] = const(node.arg, float32, node.shape)   # (a bfloat16 value: const() rounds)
        elif node.dtype is bfloat16:
            lowered[node] = _computed(node, tuple(lowered[s] for s in node.src))
        else:
            src = tuple(lowered[s] for s in node.src)
            lowered[node] = node if src == node.src else Node(node.op, node.dtype, node.shape, src, node.arg)
    return ([_narrow(lowered[r]) if r.dtype is bfloat16 else lowered[r] for r in roots],
            [seen_as.get(leaf, leaf) for leaf in leaves])


def _computed(node: Node, src: tuple[Node, ...]) -> Node:
    """A bfloat16 node's value: its op in float32 on the lowered operands, rounded."""
    if node.op is Op.CAST:   # (from any type: through float32, as PyTorch converts)
        x = src[0]
        return _round(x if x.dtype is float32 else make(Op.CAST, x, arg=float32))
    computed = Node(node.op, float32, node.shape, src, node.arg)
    return computed if node.op in _EXACT else _round(computed)


def _widen(bits: Node) -> Node:
    """The float32 values of bfloat16 bit patterns (uint16): the bits as a float32's upper half."""
    wide = make(Op.CAST, bits, arg=uint32)
    return make(Op.BITCAST, make(Op.SHL, wide, const(16, uint32, bits.shape)), arg=float32)


def _round(x: Node) -> Node:
    """float32 values rounded to the nearest bfloat16 value, ties to even: the bits plus half an
    upper-half unit (less one where the kept part is even), the lower half cleared. A nan becomes
    the quiet nan (its upper half alone could read as an infinity)."""
    shape = x.shape
    bits = make(Op.BITCAST, x, arg=uint32)
    odd = make(Op.AND, make(Op.SHR, bits, const(16, uint32, shape)), const(1, uint32, shape))
    half = make(Op.ADD, const(0x7FFF, uint32, shape), odd)
    kept = make(Op.AND, make(Op.ADD, bits, half), const(0xFFFF0000, uint32, shape))
    rounded = make(Op.BITCAST, kept, arg=float32)
    return make(Op.WHERE, make(Op.CMPNE, x, x), const(math.nan, float32, shape), rounded)


def _narrow(x: Node) -> Node:
    """The bfloat16 bit patterns of float32 values that are bfloat16 values: their upper halves."""
    bits = make(Op.BITCAST, x, arg=uint32)
    return make(Op.CAST, make(Op.SHR, bits, const(16, uint32, x.shape)), arg=uint16)
