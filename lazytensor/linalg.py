"""matmul: a broadcast multiply and a sum over the shared axis, fused into one kernel. As
`lt.linalg`, this module is also the Array API's linalg extension namespace (so far:
matmul, matrix_transpose, vecdot, tensordot)."""
from __future__ import annotations

from typing import Any

from .ir.dtypes import DType, float16, float32, result_type
from .ir.graph import Node
from .ir.ops import Op
from .ir.rules import make
from .tensor import Tensor, _cast, broadcast_node, broadcast_shapes


def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product with numpy's rules: 1-D operands are vectors, leading axes broadcast.

    >>> (lt.ones((2, 3)) @ lt.ones((3, 4))).shape
    (2, 4)
    """
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        from .creation import asarray
        device = a.device if isinstance(a, Tensor) else b.device
        a = a if isinstance(a, Tensor) else asarray(a, device=device)
        b = b if isinstance(b, Tensor) else asarray(b, device=device)
    device = a.device
    if b.device != device:
        raise ValueError(f"matmul: operands are on different devices ({a.device} and {b.device})")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both operands need at least one axis; got shapes {a.shape} and {b.shape} "
                         "(use * to multiply by a scalar)")
    a_shape = a.shape if a.ndim > 1 else (1,) + a.shape   # (a vector is a row on the left, a column on the right)
    b_shape = b.shape if b.ndim > 1 else b.shape + (1,)
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
                         f"{k} (last axis of the first) != {k2} (axis -2 of the second)")
    try:
        batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: the batch axes of shapes {a.shape} and {b.shape} do not broadcast") from None
    dtype = result_type(a.dtype, b.dtype)
    full = batch + (m, k, n)
    left = broadcast_node(make(Op.RESHAPE, a.node, arg=a_shape + (1,)), full)
    right = broadcast_node(make(Op.RESHAPE, b.node, arg=b_shape[:-2] + (1, k, n)), full)
    summed = sum_of_products(left, right, (len(full) - 2,), dtype)
    out_shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    return Tensor(make(Op.RESHAPE, summed, arg=out_shape), device)


def sum_of_products(left: Node, right: Node, axes: tuple[int, ...], dtype: DType) -> Node:
    """The sum over `axes` of left * right (nodes of one shape) in `dtype`, accumulated as a
    matrix product is: in the dtype itself, not in float64 like a plain float32 sum, so each
    term is one FMA of full vectors; float16 products are summed in float32 and rounded once,
    as numpy does. (matmul, and conv2d's windows times weights.)"""
    accumulate = float32 if dtype is float16 else dtype
    product = make(Op.AND if dtype.is_bool else Op.MUL, _cast(left, accumulate), _cast(right, accumulate))
    return _cast(make(Op.SUM, product, arg=axes), dtype)


def __getattr__(name: str):
    # the extension's other functions live with the manipulation helpers (no import cycle here)
    if name in ("matrix_transpose", "vecdot", "tensordot"):
        from . import manipulation
        return getattr(manipulation, name)
    raise AttributeError(f"lazytensor.linalg has no function {name!r} yet")
