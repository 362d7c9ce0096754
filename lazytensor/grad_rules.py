"""autograd's rules: for each op, the gradient of its sources as graph nodes, from the gradient
of its output `g` and the output node itself (its sources are `out.src`). The rules of the
linalg and fft extensions are in linalg_grad.py and fft_grad.py; autograd.py puts the three
tables together.

A rule returns None for a source that takes no gradient (a condition, an index, an integer).
Complex values follow PyTorch's convention (see autograd.py): each rule writes the conjugate of
the local derivative once (`_conj`, a no-op on real nodes).
"""
from __future__ import annotations

import math
from typing import Callable, Optional

from .ir.arith import add as _add, c as _c, complex_ as _complex, conj as _conj, div as _div, mul as _mul
from .ir.arith import neg as _neg, real as _real, sub as _sub, where as _where
from .ir.dtypes import int64 as _INT64
from .ir.graph import Node
from .ir.ops import Op
from .ir.rules import make

Grads = tuple[Optional[Node], ...]
Rule = Callable[[Node, Node], Grads]


# ---- node arithmetic for the rules -------------------------------------------------------------

def _square(a: Node) -> Node:
    return _mul(a, a)


def _zero_where(cond: Node, g: Node) -> Node:
    """g, but 0 where `cond` holds (torch's masked_fill(cond, 0))."""
    return _where(cond, _c(0, g), g)


def _expand_to(g: Node, shape: tuple[int, ...]) -> Node:
    return g if g.shape == shape else make(Op.EXPAND, g, arg=shape)


def _sum_to(g: Node, shape: tuple[int, ...]) -> Node:
    """Sum `g` over the axes where `shape` has 1 and g does not (undoing an expand)."""
    axes = tuple(a for a, (n, m) in enumerate(zip(shape, g.shape)) if n == 1 and m != 1)
    return make(Op.SUM, g, arg=axes) if axes else g


def _iota(n: int, axis: int, ndim: int) -> Node:
    """0, 1, ..., n-1 (int64) along `axis` of an ndim-shaped node of size-1 axes elsewhere. Built
    from constants (a cumulative sum of ones), so it needs no buffer and no device."""
    ones = Node(Op.CONST, _INT64, (n,), (), 1)
    counts = make(Op.CUMSUM, ones, arg=(0, True))                    # 0, 1, ..., n
    first = make(Op.SHRINK, counts, arg=((0, n, 1),))
    return make(Op.RESHAPE, first, arg=tuple(n if a == axis else 1 for a in range(ndim)))


# ---- the rules: (gradient of the output, the output node) -> gradient of each source ----------
# A rule returns None for a source that takes no gradient (a condition, an index, an integer).

def _unary(derivative: Callable[[Node, Node], Node]) -> Rule:
    """A rule from d(out)/d(x) given (x, out): g * conj(f'(x))."""
    return lambda g, out: (_mul(g, _conj(derivative(out.src[0], out))),)


def _abs(g: Node, out: Node) -> Grads:
    x = out.src[0]
    if x.dtype.is_complex:   # g * x / |x| (0 at 0, as PyTorch's sgn), from real parts
        ratio = _zero_where(make(Op.CMPEQ, out, _c(0, out)), _div(g, out))
        return (_complex(_mul(ratio, make(Op.REAL, x)), _mul(ratio, make(Op.IMAG, x))),)
    positive, negative = make(Op.CMPLT, _c(0, x), x), make(Op.CMPLT, x, _c(0, x))
    return (_mul(g, _where(positive, _c(1, x), _where(negative, _c(-1, x), _c(0, x)))),)


def _d_inverse_sqrt(x: Node, sign: float, offset: float) -> Node:
    """1 / sqrt(offset + sign * x^2), the shape of asin', acos', asinh', acosh' derivatives."""
    return _div(_c(1, x), make(Op.SQRT, _add(_c(offset, x), _mul(_c(sign, x), _square(x)))))


def _zero(g: Node, out: Node) -> Grads:
    """Piecewise-constant ops (floor, round, ...): zero gradient, as in PyTorch."""
    return tuple(_c(0, s) if s.dtype.is_float else None for s in out.src)


def _cast_rule(g: Node, out: Node) -> Grads:
    # real -> complex: the real part flows back; complex -> real (the imaginary part dropped):
    # a gradient with no imaginary part
    x = out.src[0]
    if not (x.dtype.is_inexact and out.dtype.is_inexact):
        return (None,)
    if out.dtype.is_complex and not x.dtype.is_complex:
        g = make(Op.REAL, g)
    elif x.dtype.is_complex and not out.dtype.is_complex:
        g = _complex(g, _c(0, g))
    return (g if g.dtype is x.dtype else make(Op.CAST, g, arg=x.dtype),)


def _div_rule(g: Node, out: Node) -> Grads:
    x, y = out.src
    return _div(g, _conj(y)), _neg(_div(_mul(g, _conj(out)), _conj(y)))


def _mod(g: Node, out: Node) -> Grads:
    x, y = out.src
    return g, _neg(_mul(g, make(Op.FLOOR, _div(x, y))))


def _pow(g: Node, out: Node) -> Grads:
    # PyTorch's conventions: d/dx is 0 where the exponent is 0; d/dy is 0 where x == 0 and y >= 0
    # (complex: the real part of the exponent decides)
    x, y = out.src
    dx = _zero_where(make(Op.CMPEQ, y, _c(0, y)), _mul(g, _conj(_mul(y, make(Op.POW, x, _sub(y, _c(1, y)))))))
    zero_base = make(Op.AND, make(Op.CMPEQ, x, _c(0, x)), make(Op.CMPLE, _c(0, _real(y)), _real(y)))
    dy = _zero_where(zero_base, _mul(g, _conj(_mul(out, make(Op.LOG, x)))))
    return dx, dy


def _extremum(g: Node, out: Node) -> Grads:
    # where the operands tie each gets half (PyTorch's maximum/minimum)
    x, y = out.src
    first, second = (x, y) if out.op is Op.MAX else (y, x)
    wins_x, tie = make(Op.CMPLT, second, first), make(Op.CMPEQ, x, y)
    wins_y = make(Op.CMPLT, first, second)
    half = _mul(g, _c(0.5, g))
    return (_where(wins_x, g, _where(tie, half, _c(0, g))), _where(wins_y, g, _where(tie, half, _c(0, g))))


def _atan2(g: Node, out: Node) -> Grads:
    y, x = out.src
    r2 = _add(_square(x), _square(y))
    return _div(_mul(g, x), r2), _neg(_div(_mul(g, y), r2))


def _hypot(g: Node, out: Node) -> Grads:
    a, b = out.src
    return _mul(g, _div(a, out)), _mul(g, _div(b, out))


def _copysign(g: Node, out: Node) -> Grads:
    a, _ = out.src
    ratio = _zero_where(make(Op.CMPEQ, a, _c(0, a)), _div(out, a))
    return _mul(g, ratio), _c(0, a)


def _where_rule(g: Node, out: Node) -> Grads:
    cond = out.src[0]
    return None, _where(cond, g, _c(0, g)), _where(cond, _c(0, g), g)


def _sum(g: Node, out: Node) -> Grads:
    return (_expand_to(g, out.src[0].shape),)


def _prod(g: Node, out: Node) -> Grads:
    # out / x where x != 0; where x is the only zero of its group, the product of the others
    x = out.src[0]
    is_zero = make(Op.CMPEQ, x, _c(0, x))
    zeros = make(Op.SUM, make(Op.CAST, is_zero, arg=x.dtype), arg=out.arg)
    others = make(Op.PROD, _where(is_zero, _c(1, x), x), arg=out.arg)
    lone_zero = _where(make(Op.CMPEQ, zeros, _c(1, zeros)), others, _c(0, others))
    ratio = _where(is_zero, _expand_to(lone_zero, x.shape), _div(_expand_to(out, x.shape), x))
    return (_mul(_expand_to(g, x.shape), _conj(ratio)),)


def _reduce_extremum(g: Node, out: Node) -> Grads:
    # shared evenly between the elements that reach the extremum (PyTorch's amax/amin)
    x = out.src[0]
    hit = make(Op.CMPEQ, x, _expand_to(out, x.shape))
    count = make(Op.SUM, make(Op.CAST, hit, arg=x.dtype), arg=out.arg)
    return (_where(hit, _expand_to(_div(g, count), x.shape), _c(0, x)),)


def _permute(g: Node, out: Node) -> Grads:
    inverse = tuple(sorted(range(len(out.arg)), key=lambda a: out.arg[a]))
    return (make(Op.PERMUTE, g, arg=inverse),)


def _shrink(g: Node, out: Node) -> Grads:
    """Put each kept element back where it came from, zeros elsewhere: per axis, a negative step
    is a flip; a step s > 1 spreads the elements s apart (pad a new axis to s, merge); then pad."""
    x = out.src[0]
    if x.size == 0 or g.size == 0:
        return (_c(0, x),)
    for axis, ((start, stop, step), n) in enumerate(zip(out.arg, x.shape)):
        k = g.shape[axis]
        if step < 0:  # x[start:stop:step] is flip(x)[n-1-start : : -step]
            g = make(Op.FLIP, _spread_and_pad(g, axis, n - 1 - start, -step, k, n), arg=(axis,))
        else:
            g = _spread_and_pad(g, axis, start, step, k, n)
    return (g,)


def _spread_and_pad(g: Node, axis: int, start: int, step: int, k: int, n: int) -> Node:
    if step > 1:
        head, tail = g.shape[:axis], g.shape[axis + 1:]
        g = make(Op.RESHAPE, g, arg=head + (k, 1) + tail)
        g = make(Op.PAD, g, arg=tuple((0, step - 1) if a == axis + 1 else (0, 0) for a in range(len(g.shape))))
        g = make(Op.RESHAPE, g, arg=head + (k * step,) + tail)
        span = (k - 1) * step + 1
        g = make(Op.SHRINK, g, arg=tuple((0, span, 1) if a == axis else (0, m, 1) for a, m in enumerate(g.shape)))
    span = g.shape[axis]
    return make(Op.PAD, g, arg=tuple((start, n - start - span) if a == axis else (0, 0) for a in range(len(g.shape))))


def _pad(g: Node, out: Node) -> Grads:
    x = out.src[0]
    return (make(Op.SHRINK, g, arg=tuple((b, b + n, 1) for (b, _), n in zip(out.arg, x.shape))),)


def _gather(g: Node, out: Node) -> Grads:
    # each picked element's gradient goes back where it was picked from, summed over repeats: a
    # scatter-add (O(len(index)) work), whose indices mean what the gather's did (wrapped, clamped)
    x, index = out.src
    n = x.shape[out.arg]
    if n == 0 or g.size == 0:
        return _c(0, x), None
    return make(Op.SCATTER_ADD, index, g, arg=(out.arg, n)), None


def _scatter_add_rule(g: Node, out: Node) -> Grads:
    # the transpose of a gather is a gather: each value's gradient is read where it was added
    index, values = out.src
    if values.size == 0 or g.size == 0:
        return None, _c(0, values)
    return None, make(Op.GATHER, g, index, arg=out.arg[0])


def _sort(g: Node, out: Node) -> Grads:
    x = out.src[0]
    axis = out.arg[0]
    n = x.shape[axis]
    if x.size == 0:
        return (_c(0, x),)
    order = make(Op.ARGSORT, x, arg=out.arg)   # out[..., i, ...] = x[..., order[i], ...]
    return (_scatter_along(g, order, axis, n),)


def _scatter_along(g: Node, index: Node, axis: int, n: int) -> Node:
    """out[..., j, ...] = sum over i of g[..., i, ...] where index[..., i, ...] == j (index has
    g's shape: the inverse of take_along_axis)."""
    head, tail = g.shape[:axis + 1], g.shape[axis + 1:]
    spread = head + (n,) + tail
    lift = lambda node: _expand_to(make(Op.RESHAPE, node, arg=head + (1,) + tail), spread)  # noqa: E731
    hit = make(Op.CMPEQ, lift(index), _expand_to(_iota(n, axis + 1, len(spread)), spread))
    summed = make(Op.SUM, _where(hit, lift(g), _c(0, lift(g))), arg=(axis,))
    return make(Op.RESHAPE, summed, arg=g.shape[:axis] + (n,) + tail)


def _cumsum(g: Node, out: Node) -> Grads:
    # out[i] = sum of x[:i+1] (or x[:i] with the initial 0): x[k] feeds every later out[i]
    axis, include_initial = out.arg
    if include_initial:
        g = make(Op.SHRINK, g, arg=tuple((1, m, 1) if a == axis else (0, m, 1) for a, m in enumerate(g.shape)))
    flipped = make(Op.FLIP, g, arg=(axis,))
    return (make(Op.FLIP, make(Op.CUMSUM, flipped, arg=(axis, False)), arg=(axis,)),)


LN2, LN10 = math.log(2.0), math.log(10.0)

RULES: dict[Op, Optional[Rule]] = {
    # unary: d(out)/dx from (x, out)
    Op.NEG: lambda g, out: (_neg(g),),
    Op.ABS: _abs,
    Op.SQRT: lambda g, out: (_div(g, _conj(_mul(_c(2, out), out))),),
    Op.EXP: _unary(lambda x, out: out),
    Op.LOG: lambda g, out: (_div(g, _conj(out.src[0])),),
    Op.SIN: _unary(lambda x, out: make(Op.COS, x)),
    Op.COS: _unary(lambda x, out: _neg(make(Op.SIN, x))),
    Op.TANH: _unary(lambda x, out: _sub(_c(1, out), _square(out))),
    Op.ERF: _unary(lambda x, out: _mul(_c(2 / math.sqrt(math.pi), x), make(Op.EXP, _neg(_square(x))))),
    Op.TAN: _unary(lambda x, out: _add(_c(1, out), _square(out))),
    Op.ASIN: _unary(lambda x, out: _d_inverse_sqrt(x, -1, 1)),
    Op.ACOS: _unary(lambda x, out: _neg(_d_inverse_sqrt(x, -1, 1))),
    Op.ATAN: _unary(lambda x, out: _div(_c(1, x), _add(_c(1, x), _square(x)))),
    Op.SINH: _unary(lambda x, out: make(Op.COSH, x)),
    Op.COSH: _unary(lambda x, out: make(Op.SINH, x)),
    Op.ASINH: _unary(lambda x, out: _d_inverse_sqrt(x, 1, 1)),
    Op.ACOSH: _unary(lambda x, out: _d_inverse_sqrt(x, 1, -1)),
    Op.ATANH: _unary(lambda x, out: _div(_c(1, x), _sub(_c(1, x), _square(x)))),
    Op.EXPM1: _unary(lambda x, out: _add(out, _c(1, out))),
    Op.LOG1P: lambda g, out: (_div(g, _conj(_add(out.src[0], _c(1, out)))),),
    Op.LOG2: lambda g, out: (_div(g, _conj(_mul(out.src[0], _c(LN2, out)))),),
    Op.LOG10: lambda g, out: (_div(g, _conj(_mul(out.src[0], _c(LN10, out)))),),
    Op.FLOOR: _zero, Op.CEIL: _zero, Op.TRUNC: _zero, Op.ROUND: _zero,
    Op.CAST: _cast_rule,
    # binary
    Op.ADD: lambda g, out: (g, g),
    Op.SUB: lambda g, out: (g, _neg(g)),
    Op.MUL: lambda g, out: (_mul(g, _conj(out.src[1])), _mul(g, _conj(out.src[0]))),
    Op.DIV: _div_rule,
    Op.FLOORDIV: _zero,
    Op.MOD: _mod,
    Op.POW: _pow,
    Op.MAX: _extremum, Op.MIN: _extremum,
    Op.ATAN2: _atan2,
    Op.HYPOT: _hypot,
    Op.COPYSIGN: _copysign,
    Op.WHERE: _where_rule,
    # reductions
    Op.SUM: _sum,
    Op.PROD: _prod,
    Op.REDUCE_MAX: _reduce_extremum, Op.REDUCE_MIN: _reduce_extremum,
    # movement: the inverse movement (an expand's inverse is a sum)
    Op.RESHAPE: lambda g, out: (make(Op.RESHAPE, g, arg=out.src[0].shape),),
    Op.PERMUTE: _permute,
    Op.EXPAND: lambda g, out: (_sum_to(g, out.src[0].shape),),
    Op.SHRINK: _shrink,
    Op.PAD: _pad,
    Op.FLIP: lambda g, out: (make(Op.FLIP, g, arg=out.arg),),
    Op.GATHER: _gather,
    Op.SCATTER_ADD: _scatter_add_rule,
    Op.SORT: _sort,
    Op.CUMSUM: _cumsum,
    # no gradient flows: bool or integer results, and the stop itself
    **{op: None for op in (Op.NOT, Op.SIGNBIT, Op.CMPLT, Op.CMPLE, Op.CMPEQ, Op.CMPNE, Op.AND, Op.OR,
                           Op.XOR, Op.SHL, Op.SHR, Op.ARGSORT, Op.SEARCHSORTED, Op.DETACH)},
    # complex parts: a real part's gradient is the real part of a complex one, and back
    Op.REAL: lambda g, out: (_complex(g, _c(0, g)),),
    Op.IMAG: lambda g, out: (_complex(_c(0, g), g),),
    Op.COMPLEX: lambda g, out: (make(Op.REAL, g), make(Op.IMAG, g)),
    Op.PAIRS: None,   # (made after autograd, when complex nodes are lowered)
    Op.BITCAST: None,   # (made after autograd, when bfloat16 nodes are lowered)
}
