"""Float expressions on graph nodes, for the composite functions eager code calls at every step
(nn.functional's linear, layer_norm, gelu, softmax): the graph the same operations on tensors
build, node for node, without a Tensor at each step.

Each tensor operation pays for its checks, numpy's promotion and broadcasting rules, a Tensor
(autograd's bookkeeping; under no_grad, a DETACH node), view bookkeeping, and the bound on
pending work: ~10-40 us, where the nodes themselves cost ~1 us each. A layer norm is 16 of them
(150 us a call), a Linear 4 (60 us): a GPT's forward for one generated token spent half its
graph building there. A composite whose tensors qualify -- float32 or float64, one dtype, one
device, Python numbers beside them -- builds its nodes here and makes one Tensor of the result
(`FloatExpr.of` says whether they qualify; the composite runs its tensor code otherwise). The
rules are those of the tensor operations in that case, written out for it: broadcasting, a
Python number as a constant of the tensors' dtype, float sums in float64 (reductions.py). Under
`lt.no_grad()` the one result is cut from the graph (adopt) where each step was before: the
values are the same.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Union

from .autograd import is_grad_enabled, mark_tracks, tracks
from .ir.arith import cast, reshaped, sum_of_products
from .ir.dtypes import DType, complex64, complex128, float16, float32, float64
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .operands import broadcast_pair, broadcast_node, normalize_axes
from .tensor import Tensor

Number = Union[float, int]


class FloatExpr:
    """A float32/float64 graph node with the arithmetic of a tensor of it (see the module's
    docstring). `x + y`, `2 * x`, `x ** -0.5` broadcast as tensors do; `x.node` is the node,
    `x.tracks` whether gradients flow from it to a leaf (autograd.tracks: any operand's do, but
    through a detach), kept along so that the result's Tensor need not walk its new nodes."""
    __slots__ = ("node", "tracks")

    def __init__(self, node: Node, tracks: bool):
        self.node = node
        self.tracks = tracks

    @staticmethod
    def of(*values: Any) -> Optional[tuple["FloatExpr", ...]]:
        """Each Tensor in `values` as a FloatExpr (None stays None), where they are float32 or
        float64 of one dtype on one device; None otherwise (a composite then takes its tensor
        path)."""
        first = next((v for v in values if v is not None), None)
        if not isinstance(first, Tensor) or first.dtype not in (float32, float64):
            return None
        dtype, device = first.dtype, first.device
        if any(v is not None and (not isinstance(v, Tensor) or v.dtype is not dtype or v.device != device)
               for v in values):
            return None
        return tuple(None if v is None else FloatExpr(v.node, tracks(v.node)) for v in values)

    # ---- elementwise ------------------------------------------------------------------------------

    def _binary(self, op: Op, other: Any, reflected: bool = False) -> "FloatExpr":
        x = self.node
        if isinstance(other, FloatExpr):
            y = other.node
            shape = x.shape if x.shape == y.shape else broadcast_pair(x.shape, y.shape)
            if shape is None:
                raise ValueError(f"operands could not be broadcast together with shapes {x.shape} {y.shape}")
            x, y = broadcast_node(x, shape), broadcast_node(y, shape)
            flows = self.tracks or other.tracks
        elif type(other) is float or (type(other) is int and -(1 << 24) < other < (1 << 24)):
            y = const(other, x.dtype, x.shape)   # (as the tensors' fast path: a weak scalar)
            flows = self.tracks
        else:
            return NotImplemented
        return FloatExpr(Node(op, x.dtype, x.shape, (y, x) if reflected else (x, y)), flows)

    def __add__(self, other: Any) -> "FloatExpr":
        return self._binary(Op.ADD, other)

    def __radd__(self, other: Number) -> "FloatExpr":
        return self._binary(Op.ADD, other, reflected=True)

    def __sub__(self, other: Any) -> "FloatExpr":
        return self._binary(Op.SUB, other)

    def __rsub__(self, other: Number) -> "FloatExpr":
        return self._binary(Op.SUB, other, reflected=True)

    def __mul__(self, other: Any) -> "FloatExpr":
        return self._binary(Op.MUL, other)

    def __rmul__(self, other: Number) -> "FloatExpr":
        return self._binary(Op.MUL, other, reflected=True)

    def __truediv__(self, other: Any) -> "FloatExpr":
        return self._binary(Op.DIV, other)

    def __pow__(self, other: Any) -> "FloatExpr":
        return self._binary(Op.POW, other)

    def unary(self, op: Op) -> "FloatExpr":
        """exp(x), erf(x), ... (a float's own dtype: float_unary's rule for it)."""
        return FloatExpr(make(op, self.node), self.tracks)

    def detach(self) -> "FloatExpr":
        """Tensor.detach: cut from the gradient where it would carry one."""
        return FloatExpr(make(Op.DETACH, self.node), False) if is_grad_enabled() and self.tracks else self

    # ---- reductions (the reduced axes kept, of size 1) ---------------------------------------------

    def sum(self, axis: Any) -> "FloatExpr":
        return FloatExpr(float_sum(self.node, axis, self.node.dtype), self.tracks)

    def mean(self, axis: Any) -> "FloatExpr":
        """Tensor.mean(axis, keepdims=True)."""
        return FloatExpr(mean_node(self.node, axis, self.node.dtype), self.tracks)

    def amax(self, axis: Any) -> "FloatExpr":
        return FloatExpr(reduce_node(Op.REDUCE_MAX, self.node, axis, "maximum"), self.tracks)

    # ---- movement and products ---------------------------------------------------------------------

    def reshape(self, shape: tuple[int, ...]) -> "FloatExpr":
        return FloatExpr(reshaped(self.node, shape), self.tracks)

    @property
    def mT(self) -> "FloatExpr":
        """The last two axes swapped (the node of Tensor.mT, a view)."""
        n = len(self.node.shape)
        return FloatExpr(make(Op.PERMUTE, self.node, arg=tuple(range(n - 2)) + (n - 1, n - 2)), self.tracks)

    def __matmul__(self, other: "FloatExpr") -> "FloatExpr":
        return FloatExpr(matmul_node(self.node, other.node, self.node.dtype), self.tracks or other.tracks)

    def tensor(self, device: str) -> Tensor:
        """The expression as a tensor (autograd adopts it: under no_grad, cut from the graph)."""
        if self.node.tracks is None:
            mark_tracks(self.node, self.tracks)
        return Tensor(self.node, device)


def matmul_node(a: Node, b: Node, dtype: DType) -> Node:
    """The node of linalg.matmul(a, b) in `dtype` (the operands checked and of that dtype or
    cast to it by its sum of products): 1-D operands are vectors, leading axes broadcast."""
    a_shape = a.shape if len(a.shape) > 1 else (1,) + a.shape   # (a vector is a row on the left, a column on the right)
    b_shape = b.shape if len(b.shape) > 1 else b.shape + (1,)
    m, k = a_shape[-2:]
    n = b_shape[-1]
    batch = broadcast_pair(a_shape[:-2], b_shape[:-2])
    if batch is None:
        raise ValueError(f"matmul: the batch axes of shapes {a.shape} and {b.shape} do not broadcast")
    full = batch + (m, k, n)
    left = broadcast_node(reshaped(a, a_shape + (1,)), full)
    right = broadcast_node(reshaped(b, b_shape[:-2] + (1, k, n)), full)
    summed = sum_of_products(left, right, (len(full) - 2,), dtype)
    return reshaped(summed, batch + ((m,) if len(a.shape) > 1 else ()) + ((n,) if len(b.shape) > 1 else ()))


def float_sum(x: Node, axis: Any, dtype: DType) -> Node:
    """The sum of a float (or complex) node over `axis` (kept, size 1), rounded once to `dtype`:
    float16/32 add in float64 (the cpu: float32 vectors over blocks, the blocks in float64),
    complex64 in complex128, at least as accurate as numpy's pairwise float32 sums."""
    wide = _WIDER_SUM.get(x.dtype)
    if wide is not None:
        return cast(reduce_node(Op.SUM, cast(x, wide), axis), dtype)
    return cast(reduce_node(Op.SUM, x, axis), dtype)


_WIDER_SUM = {float16: float64, float32: float64, complex64: complex128}


def mean_node(x: Node, axis: Any, dtype: DType) -> Node:
    """The mean of a float (or complex) node over `axis` (kept, size 1) in `dtype`: its float
    sum divided by the count (nan where there is none), the count a constant of `dtype`, as
    `total / count` on tensors makes it. (Tensor.mean, and FloatExpr's.)"""
    count = math.prod(x.shape[a] for a in normalize_axes(axis, len(x.shape)))
    total = float_sum(x, axis, dtype)
    op, value = (Op.DIV, count) if count else (Op.MUL, math.nan)
    return Node(op, dtype, total.shape, (total, const(value, dtype, total.shape)))


def reduce_node(op: Op, x: Node, axis: Any, name: str = "") -> Node:
    """The reduction with the reduced axes kept (size 1); `name` marks one without identity."""
    axes = normalize_axes(axis, len(x.shape))
    if name and 0 in [x.shape[a] for a in axes]:  # numpy's rule, even for an empty result
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                         f"(shape {x.shape}, axis {axis})")
    return make(op, x, arg=axes)
