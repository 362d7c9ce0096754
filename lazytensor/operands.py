"""Operands made alike where the user wrote the call: numpy-2 promotion (Python scalars are
weak), numpy broadcasting and the checks that can fail (shapes, dtypes, devices, axes), so an
error points at the line that caused it rather than at realize time. `binary` and `where` are
the elementwise ops every family builds on."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .creation import asarray
from .devices import canonical_device
from .ir.arith import cast
from .ir.dtypes import bool_, float32, float64, int64, result_type, scalar_fits, ufunc_result, uint64
from .ir.graph import Node
from .ir.ops import COMPARISON, Op
from .ir.passes import const
from .ir.rules import BINARY_UFUNC, make
from .tensor import AxisError, Tensor

def float_unary(op: Op, x: Tensor) -> Tensor:
    # numpy's rule: integers and bool compute in the smallest float that holds them exactly
    return x._new(make(op, cast(x.node, ufunc_result(np.exp, x.dtype))))



def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcasting rule: align trailing axes; sizes must match or be 1.

    >>> lt.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if len(shapes) == 2:
        result = broadcast_pair(*shapes)
        if result is not None:
            return result
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError("operands could not be broadcast together with shapes "
                             + " ".join(str(tuple(s)) for s in shapes))
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcast_pair(s: tuple[int, ...], t: tuple[int, ...]) -> Optional[tuple[int, ...]]:
    """broadcast_shapes of two shapes, or None where they do not broadcast (the common case,
    written out: every broadcasting op of eager code comes here)."""
    if s == t:
        return tuple(s)
    if len(s) < len(t):
        s = (1,) * (len(t) - len(s)) + tuple(s)
    elif len(t) < len(s):
        t = (1,) * (len(s) - len(t)) + tuple(t)
    result = []
    for m, n in zip(s, t):
        if m == n or n == 1:
            result.append(m)
        elif m == 1:
            result.append(n)
        else:
            return None
    return tuple(result)


def broadcast_node(node: Node, shape: tuple[int, ...]) -> Node:
    """`node` broadcast to `shape` (which numpy's rule allows): leading axes of 1 added by a
    reshape, axes of 1 repeated by an expand. (The nodes are made directly: a movement op's
    shape is its argument and its dtype its source's.)"""
    if node.shape == shape:
        return node
    shape = tuple(shape)
    dtype = node.dtype
    if node.op is Op.CONST:
        return Node(Op.CONST, dtype, shape, (), node.arg)
    padded = (1,) * (len(shape) - len(node.shape)) + node.shape
    if padded != node.shape:
        node = Node(Op.RESHAPE, dtype, padded, (node,), padded)
    return Node(Op.EXPAND, dtype, shape, (node,), shape) if padded != shape else node


def as_tensor(x: Any, like: Any = None) -> Tensor:
    """`x` itself when it is a Tensor; else a new tensor of it, on the device of `like` (another
    operand, when that is a Tensor) or the default device."""
    if isinstance(x, Tensor):
        return x
    value = getattr(x, "_lt_value", None)
    if value is not None:   # (an index expression of lt.compute: its values over the iteration space)
        return value()
    return asarray(x, device=like.device if isinstance(like, Tensor) else None)


def same_device(*tensors: Tensor, name: str) -> str:
    """The device the tensors share; a ValueError naming both devices where they differ (no
    silent copies)."""
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device != device:
            raise ValueError(f"{name}: operands are on different devices ({device} and {t.device}); "
                             "move one with .to(device)")
    return device


def operands(*values: Any, name: str, device: Optional[str] = None,
             ufunc: Optional[np.ufunc] = None) -> tuple[list[Node], str]:
    """Graph nodes for `values` (tensors, Python scalars, array-likes) with one dtype (numpy-2
    promotion, scalars weak) and one broadcast shape, and the device they share. With `ufunc`,
    the dtype is the one that numpy's ufunc computes in (int8 / int8 divides in float64)."""
    if ufunc is None or ufunc in _FLOAT_PRESERVING:
        fast = _same_float_operands(*values)
        if fast is not None:   # (the tensors' device wins over `device`, as below)
            return fast
    tensors = [v for v in values if isinstance(v, Tensor)]
    device = same_device(*tensors, name=name) if tensors else canonical_device(device)
    items: list[Any] = []
    for v in values:
        if isinstance(v, (Tensor, bool, int, float, complex)):
            items.append(v)
        else:   # an array-like: its dtype is numpy's (a list of Python floats is float64 here,
            # as in numpy: x64 + [0.001] must not round 0.001 through the default float32)
            items.append(asarray(v if isinstance(v, np.ndarray) or hasattr(v, "__dlpack__") else np.asarray(v),
                                 device=device))
    dtype = result_type(*[v.dtype if isinstance(v, Tensor) else v for v in items])
    if ufunc is not None:
        try:   # (numpy picks the loop from the operands' own dtypes: hypot(uint8, int8) is float16,
            # though uint8 and int8 promote to int16, whose loop is float32's)
            dtype = ufunc_result(ufunc, *[v.dtype if isinstance(v, Tensor) else dtype for v in items])
        except TypeError:
            raise TypeError(f"{ufunc.__name__} is not defined for {dtype.name} operands "
                            "(numpy refuses it too); cast them with .astype() first") from None
    for v in items:
        if not isinstance(v, Tensor) and not scalar_fits(v, dtype):
            raise OverflowError(f"{name}: Python integer {v} out of bounds for {dtype.name}")
    shape = broadcast_shapes(*[v.shape for v in items if isinstance(v, Tensor)])
    nodes = [broadcast_node(cast(v.node, dtype), shape) if isinstance(v, Tensor) else const(v, dtype, shape)
             for v in items]
    return nodes, device


# The numpy ufunc of each arithmetic op (the rule tables'): numpy decides the result dtype (int /
# int is float64, bool // bool is int8) or refuses (bool - bool, float & float), and we follow it.
# Not comparisons: numpy's loop for them gives bool, their result's dtype, not their operands'.
_UFUNC = {op: ufunc for op, ufunc in BINARY_UFUNC.items() if op not in COMPARISON}


_NAMES = {op: op.name.lower() for op in Op}   # for messages (Enum's .name is a slow property)


def binary(op: Op, a: Any, b: Any) -> Tensor:
    """`a op b` with numpy's promotion and broadcasting."""
    if op in _SAME_DTYPE_OPS:   # (float32/64 operands of one dtype, or a Python scalar: the
        node = _same_float_node(op, a, b)   # result is theirs, no rule to look up)
        if node is not None:
            return Tensor(node, a.device if isinstance(a, Tensor) else b.device)
    if op in COMPARISON:
        a, b = _comparable(a, b)
        if _unsigned_against_signed(a, b):
            return _compare_exactly(op, a, b)
    (x, y), device = operands(a, b, name=_NAMES[op], ufunc=_UFUNC.get(op))
    if op is Op.ADD and x.dtype.is_bool:
        op = Op.OR   # numpy: True + True is True
    elif op is Op.MUL and x.dtype.is_bool:
        op = Op.AND
    elif op is Op.POW and x.dtype.is_integer and y.op is Op.CONST and y.arg < 0 and math.prod(x.shape):
        raise ValueError("integers to negative integer powers are not allowed; use a float base")
    return Tensor(make(op, x, y), device)   # (x and y share the broadcast shape: an empty one computes nothing)


def _unsigned_against_signed(a: Any, b: Any) -> bool:
    """uint64 against a signed integer tensor: they promote to float64, which cannot hold both
    exactly (2**63 + 1 and 2**63 - 1 compare equal there)."""
    return (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype.is_integer and b.dtype.is_integer
            and uint64 in (a.dtype, b.dtype) and not (a.dtype.is_unsigned and b.dtype.is_unsigned))


def _compare_exactly(op: Op, a: "Tensor", b: "Tensor") -> "Tensor":
    """`a op b` for uint64 against a signed integer, exactly, as numpy 2 compares them: a
    negative signed value is below every unsigned one; the others compare as uint64."""
    (x, y), device = operands(a.astype(uint64), b.astype(uint64), name=_NAMES[op])
    same = Tensor(make(op, x, y), device)
    if op in (Op.CMPEQ, Op.CMPNE):
        negative = (b < 0) if a.dtype.is_unsigned else (a < 0)
        return where(negative, op is Op.CMPNE, same)
    # CMPLT / CMPLE: a negative a is below any unsigned b; an unsigned a is above a negative b
    if not a.dtype.is_unsigned:
        return where(a < 0, True, same)
    return where(b < 0, False, same)


def _same_float_operands(*values: Any) -> Optional[tuple[list[Node], str]]:
    """The nodes of the operands and their device, where nothing needs promoting and
    broadcasting is trivial: float32/64 tensors of one dtype, shape (or 0-d: a learning rate) and
    device, and Python floats (or small ints, exact in float32). None otherwise: the general path
    decides."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    if not tensors:
        return None
    first = tensors[0]
    dtype, shape, device = first.dtype, first.node.shape, first.device
    if not shape:   # a 0-d first operand (lr * grad) takes the other's shape
        for t in tensors:
            shape = shape or t.node.shape
    if dtype.name not in ("float32", "float64"):
        return None
    for t in tensors:
        if t.dtype is not dtype or (t.node.shape != shape and t.node.shape) or t.device != device:
            return None
    nodes = []
    for v in values:
        if isinstance(v, Tensor):
            nodes.append(v.node if v.node.shape == shape else broadcast_node(v.node, shape))   # (a 0-d one)
        elif type(v) is float or (type(v) is int and -(1 << 24) < v < (1 << 24)):
            nodes.append(const(v, dtype, shape))
        else:
            return None
    return nodes, device


def _same_float_node(op: Op, a: Any, b: Any) -> Optional[Node]:
    """`a op b`'s node where it needs no promotion: float32/64 tensors of one dtype and device
    (broadcast), or one such tensor and a Python float (or an int exact in float32).
    None otherwise: the general path decides. (_same_float_operands' rule for two operands,
    without a 0-d one, written out: every small op of eager code comes here, and the general
    function's lists and loops cost ~0.5 us an op.)"""
    if isinstance(a, Tensor):   # (a Parameter too)
        x = a.node
        dtype = x.dtype
        if dtype is not float32 and dtype is not float64:
            return None
        if isinstance(b, Tensor):
            y = b.node
            if y.dtype is not dtype or b.device != a.device:
                return None
            if y.shape == x.shape:
                return Node(op, dtype, x.shape, (x, y))
            shape = broadcast_pair(x.shape, y.shape)   # (None: the general path raises)
            return None if shape is None else Node(op, dtype, shape, (broadcast_node(x, shape), broadcast_node(y, shape)))
        kind = type(b)
        if kind is float or (kind is int and -(1 << 24) < b < (1 << 24)):
            return Node(op, dtype, x.shape, (x, const(b, dtype, x.shape)))
        return None
    if isinstance(b, Tensor):
        y = b.node
        dtype = y.dtype
        kind = type(a)
        if (dtype is float32 or dtype is float64) and (kind is float or (kind is int and -(1 << 24) < a < (1 << 24))):
            return Node(op, dtype, y.shape, (const(a, dtype, y.shape), y))
    return None


# ops whose result has their float operands' dtype and shape
_SAME_DTYPE_OPS = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAX, Op.MIN, Op.POW})

# numpy ufuncs whose result keeps a float32/64 operand dtype (comparisons pass no ufunc)
_FLOAT_PRESERVING = frozenset({np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum,
                               np.arctan2, np.hypot, np.copysign, np.remainder, np.floor_divide})


def _comparable(a: Any, b: Any) -> tuple[Any, Any]:
    """numpy 2 compares an integer tensor with any Python int exactly: where the int does not
    fit the tensor's dtype, compare in int64 (exact for every dtype but uint64), or else against
    +-inf in float64 (the int is then beyond every value the tensor can hold)."""
    for scalar, other in ((a, b), (b, a)):
        if (isinstance(scalar, int) and not isinstance(scalar, bool) and isinstance(other, Tensor)
                and other.dtype.is_integer and not scalar_fits(scalar, other.dtype)):
            if scalar_fits(scalar, int64) and other.dtype is not uint64:
                widened, value = other.astype(int64), scalar
            else:
                widened, value = other.astype(float64), math.copysign(math.inf, scalar)
            return (value, widened) if scalar is a else (widened, value)
    return a, b


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Axes as sorted non-negative ints; AxisError (a ValueError and IndexError) when out of range."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:   # (the common case first)
        return (axis % ndim,)
    if getattr(axis, "_lt_index_into", None) is not None:   # (an lt.reduce_axis, on a plain tensor)
        raise TypeError(f"axis={axis!r} reduces a tensor expression of lt.compute (a tensor indexed by the "
                        "compute's variables), not a value that depends on none of them")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    result = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"axis must be an int or a tuple of ints, not {a!r}")
        if not -ndim <= a < ndim:
            raise AxisError(f"axis {a} is out of bounds for a tensor of dimension {ndim}")
        result.append(int(a) % ndim if ndim else 0)
    if len(set(result)) != len(result):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(result))



def where(condition: Any, x: Any, y: Any) -> Tensor:
    """x where condition is true, else y (broadcast together; x and y promoted like numpy).

    >>> lt.where(lt.asarray([True, False]), 1, 2).tolist()
    [1, 2]
    """
    for v in (condition, x, y):   # (inside lt.compute: an expression's where, over its iteration space)
        hook = getattr(v, "_lt_where", None)
        if hook is not None:
            return hook(condition, x, y)
    device = next((v.device for v in (condition, x, y) if isinstance(v, Tensor)), None)
    if isinstance(condition, (bool, np.bool_)):  # a constant: where(True, a, b) folds to a
        condition = Tensor(const(bool(condition), bool_, ()), canonical_device(device))
    elif not isinstance(condition, Tensor):
        condition = asarray(condition, device=device)
    (a, b), device = operands(x, y, name="where", device=condition.device)
    if device != condition.device:
        raise ValueError(f"where: condition is on {condition.device} but the values on {device}")
    shape = broadcast_shapes(condition.shape, a.shape)
    cond = broadcast_node(cast(condition.node, bool_), shape)
    return Tensor(make(Op.WHERE, cond, broadcast_node(a, shape), broadcast_node(b, shape)), device)
