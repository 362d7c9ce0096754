"""Node arithmetic: the small constructors that graph rewrites write their formulas with
(autograd's gradient rules, the complex lowering, the front end's casts). Each makes one node through the rule tables."""
from __future__ import annotations

from .dtypes import HALF_FLOATS, DType, float32, float64
from .graph import Node
from .ops import Op
from .passes import const
from .rules import make


def c(value: float, like: Node) -> Node:
    """The constant `value` in `like`'s dtype and shape."""
    return const(value, like.dtype, like.shape)


def cast(a: Node, dtype: DType) -> Node:
    """`a` in `dtype` (itself where it has that dtype already)."""
    return a if a.dtype is dtype else make(Op.CAST, a, arg=dtype)


def add(a: Node, b: Node) -> Node:
    return make(Op.ADD, a, b)


def sub(a: Node, b: Node) -> Node:
    return make(Op.SUB, a, b)


def mul(a: Node, b: Node) -> Node:
    return make(Op.MUL, a, b)


def div(a: Node, b: Node) -> Node:
    return make(Op.DIV, a, b)


def neg(a: Node) -> Node:
    return make(Op.NEG, a)


def where(cond: Node, a: Node, b: Node) -> Node:
    return make(Op.WHERE, cond, a, b)


def conj(a: Node) -> Node:
    """The complex conjugate; `a` itself when real."""
    if not a.dtype.is_complex:
        return a
    return make(Op.COMPLEX, make(Op.REAL, a), make(Op.NEG, make(Op.IMAG, a)))


def real(a: Node) -> Node:
    """The real part (in the component float type); `a` itself when real."""
    return make(Op.REAL, a) if a.dtype.is_complex else a


def complex_(re: Node, im: Node) -> Node:
    """The complex value re + i im of two floats of one dtype."""
    return make(Op.COMPLEX, re, im)


def reshaped(node: Node, shape: tuple[int, ...]) -> Node:
    """`node` reshaped to `shape` (of as many elements): make()'s RESHAPE node, made directly (a
    reshape's shape is its argument and its dtype its source's)."""
    shape = tuple(shape)
    return Node(Op.RESHAPE, node.dtype, shape, (node,), shape)


def sum_of_products(left: Node, right: Node, axes: tuple[int, ...], dtype: DType) -> Node:
    """The sum over `axes` of left * right (nodes of one shape) in `dtype`, accumulated as a
    matrix product is: in the dtype itself, not in float64 like a plain float32 sum, so each
    term is one FMA of full vectors; float16 products are summed in float32 and rounded once,
    as numpy does. (matmul, and conv2d's windows times weights.)"""
    if left.dtype is dtype and right.dtype is dtype and (dtype is float32 or dtype is float64):
        # (no casts, no rules to ask: the nodes made directly, as below; every matmul comes here)
        product = Node(Op.MUL, dtype, left.shape, (left, right))
        return Node(Op.SUM, dtype, tuple([1 if a in axes else n for a, n in enumerate(left.shape)]), (product,), axes)
    accumulate = float32 if dtype in HALF_FLOATS else dtype
    product = make(Op.AND if dtype.is_bool else Op.MUL, cast(left, accumulate), cast(right, accumulate))
    return sum_in_dtype(product, axes, dtype)


def sum_in_dtype(terms: Node, axes: tuple[int, ...], dtype: DType) -> Node:
    """The sum over `axes` of `terms` in `dtype`, as a matrix product accumulates (float16 in
    float32, rounded once); sum_of_products' sum, and lt.compute's lt.sum."""
    accumulate = float32 if dtype in HALF_FLOATS else dtype
    return cast(make(Op.SUM, cast(terms, accumulate), arg=axes), dtype)
