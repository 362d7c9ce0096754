"""Complex numbers as pairs of reals: the graph pass that lowers them before fusion.

A complex value x + iy is stored as numpy and C store it, two floats with the real part first,
so a complex64 buffer of shape S is a float32 buffer of shape S + (2,). `lower` rewrites a graph
so that no node is complex: each complex node becomes a pair (x, y) of real nodes of its
component type, each op on complex values the real ops that compute it (C99's formulas, with the
Array API's special cases for infinities, nans and signed zeros), a complex input the two halves
of its buffer, a complex output the pairs written back side by side. Fusion, scheduling and every
backend then see real nodes only.
"""
from __future__ import annotations

import math
from typing import Callable

from .arith import add as _add, c as _c, div as _div, mul as _mul, neg as _neg, sub as _sub, where as _where
from .dtypes import COMPONENT, bool_
from .graph import Node, toposort
from .ops import MOVEMENT, Op
from .passes import const
from .rules import make

Pair = tuple[Node, Node]


def lower(roots: list[Node], leaves: list[Node]) -> tuple[list[Node], list[Node]]:
    """The graph under `roots` with every complex node lowered to real ones, and `leaves` (its
    buffers) as the lowered graph reads them: a complex buffer as floats of shape S + (2,)."""
    order = toposort(roots)
    if not any(node.dtype.is_complex for node in order):
        return roots, leaves
    pairs: dict[Node, Pair] = {}
    real: dict[Node, Node] = {}
    seen_as: dict[Node, Node] = {}   # complex buffer -> its float view
    for node in order:
        if node.op is Op.BUFFER and node.dtype.is_complex:
            part = COMPONENT[node.dtype]
            floats = Node(Op.BUFFER, part, node.shape + (2,), (), node.arg.reshaped(node.shape + (2,), part))
            seen_as[node] = floats
            pairs[node] = _halves(floats)
        elif node.dtype.is_complex:
            pairs[node] = _complex_node(node, pairs, real)
        elif any(s.dtype.is_complex for s in node.src):
            real[node] = _real_of_complex(node, pairs, real)
        else:
            src = tuple(real[s] for s in node.src)
            real[node] = node if src == node.src else Node(node.op, node.dtype, node.shape, src, node.arg)
    return ([_interleave(*pairs[r]) if r.dtype.is_complex else real[r] for r in roots],
            [seen_as.get(leaf, leaf) for leaf in leaves])


# ---- memory: pairs in, pairs out ----------------------------------------------------------------

def _halves(floats: Node) -> Pair:
    """The real and imaginary parts of complex values stored as floats of shape S + (2,)."""
    shape = floats.shape[:-1]
    whole = tuple((0, n, 1) for n in shape)
    return tuple(make(Op.RESHAPE, make(Op.SHRINK, floats, arg=whole + ((k, k + 1, 1),)), arg=shape)
                 for k in (0, 1))   # type: ignore[return-value]


def _interleave(x: Node, y: Node) -> Node:
    """Floats of shape S + (2,) holding the pairs (x, y): their complex values' memory."""
    shape = x.shape + (1,)
    widths = lambda k: tuple((0, 0) for _ in x.shape) + ((k, 1 - k),)   # noqa: E731
    first = make(Op.PAD, const(True, bool_, shape), arg=widths(0))
    return make(Op.WHERE, first, make(Op.PAD, make(Op.RESHAPE, x, arg=shape), arg=widths(0)),
                make(Op.PAD, make(Op.RESHAPE, y, arg=shape), arg=widths(1)))


# ---- real-valued helpers ------------------------------------------------------------------------

def _and(a: Node, b: Node) -> Node:
    return make(Op.AND, a, b)


def _or(a: Node, b: Node) -> Node:
    return make(Op.OR, a, b)


def _eq(a: Node, value: float) -> Node:
    return make(Op.CMPEQ, a, _c(value, a))


def _is_inf(a: Node) -> Node:
    return _eq(make(Op.ABS, a), math.inf)


def _is_finite(a: Node) -> Node:
    return make(Op.CMPLT, make(Op.ABS, a), _c(math.inf, a))


def _is_nan(a: Node) -> Node:
    return make(Op.CMPNE, a, a)


def _select(cond: Node, then: Pair, other: Pair) -> Pair:
    return _where(cond, then[0], other[0]), _where(cond, then[1], other[1])


def _mul_pairs(a: Pair, b: Pair) -> Pair:
    (ar, ai), (br, bi) = a, b
    return _sub(_mul(ar, br), _mul(ai, bi)), _add(_mul(ar, bi), _mul(ai, br))


def _div_pairs(a: Pair, b: Pair) -> Pair:
    """a / b by Smith's method (no overflow from squaring b), as numpy divides; a zero divisor
    gives the parts divided by zero (inf or nan), as numpy's."""
    (ar, ai), (br, bi) = a, b
    wide = make(Op.CMPLE, make(Op.ABS, bi), make(Op.ABS, br))   # |b.real| >= |b.imag|
    r1 = _div(bi, br)
    d1 = _add(br, _mul(bi, r1))
    first = _div(_add(ar, _mul(ai, r1)), d1), _div(_sub(ai, _mul(ar, r1)), d1)
    r2 = _div(br, bi)
    d2 = _add(bi, _mul(br, r2))
    second = _div(_add(_mul(ar, r2), ai), d2), _div(_sub(_mul(ai, r2), ar), d2)
    zero = _and(_eq(br, 0.0), _eq(bi, 0.0))
    by_zero = _div(ar, make(Op.ABS, br)), _div(ai, make(Op.ABS, br))
    return _select(zero, by_zero, _select(wide, first, second))


# ---- the functions: each maps a pair to a pair --------------------------------------------------

def _exp(z: Pair) -> Pair:
    x, y = z
    e = make(Op.EXP, x)
    re, im = _mul(e, make(Op.COS, y)), _mul(e, make(Op.SIN, y))
    im = _where(_eq(y, 0.0), y, im)   # exp(inf + 0j) is inf + 0j, not inf * 0
    # x = +-inf and y inf or nan: 0 + 0j below, inf + nan j above
    unbounded = _and(_is_inf(x), make(Op.NOT, _is_finite(y)))
    negative = make(Op.CMPLT, x, _c(0.0, x))
    at_inf = _where(negative, _c(0.0, x), x), _where(negative, _c(0.0, y), _c(math.nan, y))
    return _select(unbounded, at_inf, (re, im))


def _expm1(z: Pair) -> Pair:
    x, y = z
    # e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y / 2): no cancellation near 0
    half = make(Op.SIN, _mul(y, _c(0.5, y)))
    re = _sub(_mul(make(Op.EXPM1, x), make(Op.COS, y)), _mul(_c(2.0, y), _mul(half, half)))
    im = _where(_eq(y, 0.0), y, _mul(make(Op.EXP, x), make(Op.SIN, y)))
    re = _where(_and(_eq(x, 0.0), _eq(y, 0.0)), _c(0.0, x), re)   # (expm1(-0 + 0j) is +0 + 0j)
    unbounded = _and(_is_inf(x), make(Op.NOT, _is_finite(y)))
    negative = make(Op.CMPLT, x, _c(0.0, x))
    at_inf = _where(negative, _c(-1.0, x), x), _where(negative, _c(0.0, y), _c(math.nan, y))
    return _select(unbounded, at_inf, (re, im))


def _log(z: Pair) -> Pair:
    x, y = z
    return make(Op.LOG, make(Op.HYPOT, x, y)), make(Op.ATAN2, y, x)


def _log1p(z: Pair) -> Pair:
    x, y = z
    one_x = _add(x, _c(1.0, x))
    near = _and(make(Op.CMPLT, make(Op.ABS, x), _c(0.5, x)), make(Op.CMPLT, make(Op.ABS, y), _c(0.5, y)))
    # |1 + z|^2 - 1 = x (2 + x) + y^2: log1p of it keeps the digits log(|1 + z|) would lose near 0
    small = _mul(_c(0.5, x), make(Op.LOG1P, _add(_mul(x, _add(x, _c(2.0, x))), _mul(y, y))))
    return _where(near, small, make(Op.LOG, make(Op.HYPOT, one_x, y))), make(Op.ATAN2, y, one_x)


def _scaled(by: float) -> Callable[[Pair], Pair]:
    def log_base(z: Pair) -> Pair:
        x, y = _log(z)
        return _mul(x, _c(by, x)), _mul(y, _c(by, y))
    return log_base


def _sqrt(z: Pair) -> Pair:
    x, y = z
    t = make(Op.SQRT, _mul(_add(make(Op.ABS, x), make(Op.HYPOT, x, y)), _c(0.5, x)))
    half_y = _div(y, _mul(t, _c(2.0, t)))
    right = t, half_y                                                        # x >= 0
    left = _div(make(Op.ABS, y), _mul(t, _c(2.0, t))), make(Op.COPYSIGN, t, y)   # x < 0
    result = _select(make(Op.CMPLT, x, _c(0.0, x)), left, right)
    result = _select(_and(_eq(x, 0.0), _eq(y, 0.0)), (_c(0.0, x), y), result)   # sqrt(+-0 + 0j) = 0 + 0j
    return _select(_is_inf(y), (_c(math.inf, x), y), result)                     # sqrt(a + inf j) = inf + inf j


def _sinh(z: Pair) -> Pair:
    x, y = z
    re = _mul(make(Op.SINH, x), make(Op.COS, y))
    im = _where(_eq(y, 0.0), y, _mul(make(Op.COSH, x), make(Op.SIN, y)))
    odd = _and(_or(_eq(x, 0.0), _is_inf(x)), make(Op.NOT, _is_finite(y)))   # 0 or inf, with y inf or nan
    return _select(odd, (x, _c(math.nan, y)), (re, im))


def _cosh(z: Pair) -> Pair:
    x, y = z
    re = _mul(make(Op.COSH, x), make(Op.COS, y))
    im = _mul(make(Op.SINH, x), make(Op.SIN, y))
    im = _where(_eq(y, 0.0), _mul(make(Op.COPYSIGN, _c(0.0, x), x), y), im)
    im = _where(_and(_eq(x, 0.0), make(Op.NOT, _is_finite(y))), _c(0.0, x), im)
    at_inf = _and(_is_inf(x), make(Op.NOT, _is_finite(y)))
    return _select(at_inf, (_c(math.inf, x), _c(math.nan, y)), (re, im))


def _tanh(z: Pair) -> Pair:
    x, y = z
    # Kahan's formula: t = tan y, s = sinh x, rho = sqrt(1 + s^2), beta = 1 + t^2;
    # tanh z = (beta rho s + i t) / (1 + beta s^2); past |x| = 20 the real part is +-1 to the last bit
    t, s = make(Op.TAN, y), make(Op.SINH, x)
    rho = make(Op.SQRT, _add(_c(1.0, s), _mul(s, s)))
    beta = _add(_c(1.0, t), _mul(t, t))
    denominator = _add(_c(1.0, s), _mul(beta, _mul(s, s)))
    re, im = _div(_mul(beta, _mul(rho, s)), denominator), _div(t, denominator)
    far = _and(make(Op.CMPLT, _c(20.0, x), make(Op.ABS, x)), _is_finite(y))
    decay = make(Op.EXP, _mul(_c(-2.0, x), make(Op.ABS, x)))
    far_im = _mul(_mul(_c(4.0, y), _mul(make(Op.SIN, y), make(Op.COS, y))), decay)
    re, im = _where(far, make(Op.COPYSIGN, _c(1.0, x), x), re), _where(far, far_im, im)
    im = _where(_eq(y, 0.0), y, im)
    re, im = _select(_is_inf(x), (make(Op.COPYSIGN, _c(1.0, x), x), make(Op.COPYSIGN, _c(0.0, y), y)), (re, im))
    zero_odd = _and(_eq(x, 0.0), make(Op.NOT, _is_finite(y)))   # tanh(0 + inf j) = 0 + nan j
    return _select(zero_odd, (x, _c(math.nan, y)), (re, im))


def _times_i(z: Pair) -> Pair:
    return _neg(z[1]), z[0]


def _times_minus_i(z: Pair) -> Pair:
    return z[1], _neg(z[0])


def _sin(z: Pair) -> Pair:      # sin z = -i sinh(iz)
    return _times_minus_i(_sinh(_times_i(z)))


def _cos(z: Pair) -> Pair:      # cos z = cosh(iz)
    return _cosh(_times_i(z))


def _tan(z: Pair) -> Pair:      # tan z = -i tanh(iz)
    return _times_minus_i(_tanh(_times_i(z)))


def _one(z: Pair) -> Pair:
    return _c(1.0, z[0]), _c(0.0, z[1])


# The inverse functions as CPython's cmath computes them (Modules/cmathmodule.c: products of
# square roots, no cancellation, and log(2|z|) where |z| is near overflow), then the Array API's
# special cases (C99 Annex G) applied on top where an infinity or a nan is involved.

def _large(x: Node, y: Node, limit: Callable[[float], float]) -> Node:
    """|x| or |y| beyond `limit` of the largest finite value of their dtype."""
    bound = _c(limit(_FLOAT_MAX[x.dtype.name]), x)
    return _or(make(Op.CMPLT, bound, make(Op.ABS, x)), make(Op.CMPLT, bound, make(Op.ABS, y)))


def _quarter(largest: float) -> float:   # (where |z| / 2 and log 2 of it are safe)
    return largest / 4


_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}
_FLOAT_MIN = {"float32": 1.1754943508222875e-38, "float64": 2.2250738585072014e-308}


def _log_abs(x: Node, y: Node) -> Node:
    """log |x + iy| without overflow: log(|z| / 2) + log 2 (for |z| near the largest float)."""
    return _add(make(Op.LOG, make(Op.HYPOT, _mul(x, _c(0.5, x)), _mul(y, _c(0.5, y)))), _c(math.log(2.0), x))


def _asinh(z: Pair) -> Pair:
    x, y = z
    one = _c(1.0, x)
    s1 = _sqrt((_add(one, y), _neg(x)))
    s2 = _sqrt((_sub(one, y), x))
    re = make(Op.ASINH, _sub(_mul(s1[0], s2[1]), _mul(s2[0], s1[1])))
    im = make(Op.ATAN2, y, _sub(_mul(s1[0], s2[0]), _mul(s1[1], s2[1])))
    far_re = _where(make(Op.CMPLE, _c(0.0, y), y), make(Op.COPYSIGN, _log_abs(x, y), x),
                    _neg(make(Op.COPYSIGN, _log_abs(x, y), _neg(x))))
    far = _large(x, y, _quarter)
    result = _where(far, far_re, re), _where(far, make(Op.ATAN2, y, make(Op.ABS, x)), im)
    return _special(_ASINH_SPECIAL, z, result, odd=True)


def _acos(z: Pair) -> Pair:
    x, y = z
    one = _c(1.0, x)
    s1 = _sqrt((_sub(one, x), _neg(y)))
    s2 = _sqrt((_add(one, x), y))
    re = _mul(_c(2.0, x), make(Op.ATAN2, s1[0], s2[0]))
    im = make(Op.ASINH, _sub(_mul(s2[0], s1[1]), _mul(s2[1], s1[0])))
    far_im = _where(make(Op.CMPLT, x, _c(0.0, x)), _neg(make(Op.COPYSIGN, _log_abs(x, y), y)),
                    make(Op.COPYSIGN, _log_abs(x, y), _neg(y)))
    far = _large(x, y, _quarter)
    result = _where(far, make(Op.ATAN2, make(Op.ABS, y), x), re), _where(far, far_im, im)
    return _special(_ACOS_SPECIAL, z, result, odd=False)


def _acosh(z: Pair) -> Pair:
    x, y = z
    one = _c(1.0, x)
    s1 = _sqrt((_sub(x, one), y))
    s2 = _sqrt((_add(x, one), y))
    re = make(Op.ASINH, _add(_mul(s1[0], s2[0]), _mul(s1[1], s2[1])))
    im = _mul(_c(2.0, x), make(Op.ATAN2, s1[1], s2[0]))
    far = _large(x, y, _quarter)
    result = _where(far, _log_abs(x, y), re), _where(far, make(Op.ATAN2, y, x), im)
    return _special(_ACOSH_SPECIAL, z, result, odd=False)


def _atanh(z: Pair) -> Pair:
    # on |x| (atanh(-z) = -atanh(z)), the sign put back at the end
    x0, y = z
    x = make(Op.ABS, x0)
    ay = make(Op.ABS, y)
    one = _c(1.0, x)
    below, above = _sub(one, x), _add(one, x)
    re = _mul(make(Op.LOG1P, _div(_mul(_c(4.0, x), x), _add(_mul(below, below), _mul(ay, ay)))), _c(0.25, x))
    im = _mul(_neg(make(Op.ATAN2, _mul(_c(-2.0, y), y), _sub(_mul(below, above), _mul(ay, ay)))), _c(0.5, y))
    # far from 0: atanh z ~ 1/z +- i pi/2
    h = make(Op.HYPOT, _mul(x, _c(0.5, x)), _mul(y, _c(0.5, y)))
    far = _large(x, ay, lambda largest: math.sqrt(largest / 4))
    far_re = _div(_div(_mul(x, _c(0.25, x)), h), h)
    far_im = _neg(make(Op.COPYSIGN, _c(math.pi / 2, y), _neg(y)))
    # at 1 +- tiny i: C99's atanh(1 + 0i) = inf + 0i, and the limit nearby
    edge = _and(_eq(x, 1.0), make(Op.CMPLT, ay, _c(math.sqrt(_FLOAT_MIN[x.dtype.name]), y)))
    edge_re = _neg(make(Op.LOG, _div(make(Op.SQRT, ay), make(Op.SQRT, make(Op.HYPOT, ay, _c(2.0, y))))))
    edge_re = _where(_eq(ay, 0.0), _c(math.inf, x), edge_re)
    edge_im = _where(_eq(ay, 0.0), y, make(Op.COPYSIGN, _mul(make(Op.ATAN2, _c(2.0, y), _neg(ay)), _c(0.5, y)), y))
    re, im = _select(far, (far_re, far_im), _select(edge, (edge_re, edge_im), (re, im)))
    result = make(Op.COPYSIGN, re, x0), im
    return _special(_ATANH_SPECIAL, z, result, odd=True)


def _asin(z: Pair) -> Pair:     # -i asinh(iz)
    return _times_minus_i(_asinh(_times_i(z)))


def _atan(z: Pair) -> Pair:     # -i atanh(iz)
    return _times_minus_i(_atanh(_times_i(z)))


# ---- special cases (C99 Annex G, as the Array API lists them) -----------------------------------
# Each table: (condition on the real part, condition on the imaginary part, result), for the
# upper half plane (imaginary part with its sign bit clear) and, for the odd functions, the right
# half plane; the functions are conjugate-symmetric (f(conj z) = conj f(z)) and the odd ones odd,
# so the other quadrants take the mirrored result. The first matching row wins.

def _is(kind: str, v: Node) -> Node:
    if kind == "+0":
        return _and(_eq(v, 0.0), make(Op.NOT, make(Op.SIGNBIT, v)))
    if kind == "0":
        return _eq(v, 0.0)
    if kind == "+inf":
        return _eq(v, math.inf)
    if kind == "-inf":
        return _eq(v, -math.inf)
    if kind == "inf":
        return _is_inf(v)
    if kind == "nan":
        return _is_nan(v)
    if kind == "finite":
        return _is_finite(v)
    if kind == "finite>0":
        return _and(_is_finite(v), make(Op.CMPLT, _c(0.0, v), v))
    if kind == "finite!=0":
        return _and(_is_finite(v), make(Op.NOT, _eq(v, 0.0)))
    if kind == "1":
        return _eq(v, 1.0)
    raise ValueError(f"no special-case condition {kind!r}")


_PI = math.pi
_NAN, _INF = math.nan, math.inf
_ACOS_SPECIAL = [
    ("0", "+0", (_PI / 2, -0.0)), ("0", "nan", (_PI / 2, _NAN)), ("finite", "+inf", (_PI / 2, -_INF)),
    ("finite!=0", "nan", (_NAN, _NAN)), ("-inf", "finite>0", (_PI, -_INF)), ("+inf", "finite>0", (0.0, -_INF)),
    ("-inf", "+inf", (3 * _PI / 4, -_INF)), ("+inf", "+inf", (_PI / 4, -_INF)), ("inf", "nan", (_NAN, _INF)),
    ("nan", "finite", (_NAN, _NAN)), ("nan", "+inf", (_NAN, -_INF)), ("nan", "nan", (_NAN, _NAN)),
]
_ACOSH_SPECIAL = [
    ("0", "+0", (0.0, _PI / 2)), ("finite", "+inf", (_INF, _PI / 2)), ("finite!=0", "nan", (_NAN, _NAN)),
    ("+0", "nan", (_NAN, _PI / 2)), ("-inf", "finite>0", (_INF, _PI)), ("+inf", "finite>0", (_INF, 0.0)),
    ("-inf", "+inf", (_INF, 3 * _PI / 4)), ("+inf", "+inf", (_INF, _PI / 4)), ("inf", "nan", (_INF, _NAN)),
    ("nan", "finite", (_NAN, _NAN)), ("nan", "+inf", (_INF, _NAN)), ("nan", "nan", (_NAN, _NAN)),
]
_ASINH_SPECIAL = [   # (on |x|: odd)
    ("+0", "+0", (0.0, 0.0)), ("finite>0", "+inf", (_INF, _PI / 2)), ("finite", "nan", (_NAN, _NAN)),
    ("+inf", "finite>0", (_INF, 0.0)), ("+inf", "+inf", (_INF, _PI / 4)), ("+inf", "nan", (_INF, _NAN)),
    ("nan", "+0", (_NAN, 0.0)), ("nan", "finite!=0", (_NAN, _NAN)), ("nan", "+inf", (_INF, _NAN)),
    ("nan", "nan", (_NAN, _NAN)),
]
_ATANH_SPECIAL = [   # (on |x|: odd)
    ("+0", "+0", (0.0, 0.0)), ("+0", "nan", (0.0, _NAN)), ("1", "+0", (_INF, 0.0)),
    ("finite>0", "+inf", (0.0, _PI / 2)), ("finite!=0", "nan", (_NAN, _NAN)), ("+inf", "finite>0", (0.0, _PI / 2)),
    ("+inf", "+inf", (0.0, _PI / 2)), ("+inf", "nan", (0.0, _NAN)), ("nan", "finite", (_NAN, _NAN)),
    ("nan", "+inf", (0.0, _PI / 2)), ("nan", "nan", (_NAN, _NAN)),
]


def _special(table: list, z: Pair, result: Pair, odd: bool) -> Pair:
    """`result` with the rows of `table` that match z (mirrored into z's quadrant) put in."""
    x, y = z
    flip_y = make(Op.SIGNBIT, y)
    flip_x = make(Op.SIGNBIT, x) if odd else None
    ax = _where(flip_x, _neg(x), x) if odd else x
    ay = _where(flip_y, _neg(y), y)
    re, im = result
    for x_kind, y_kind, (want_re, want_im) in reversed(table):   # (the first row matching wins)
        hit = _and(_is(x_kind, ax), _is(y_kind, ay))
        row_re, row_im = _c(want_re, x), _c(want_im, y)
        if odd:
            row_re = _where(flip_x, _neg(row_re), row_re)
            row_im = _where(flip_x, _neg(row_im), row_im)
        row_im = _where(flip_y, _neg(row_im), row_im)
        re, im = _where(hit, row_re, re), _where(hit, row_im, im)
    return re, im


def _pow(a: Pair, b: Pair) -> Pair:   # exp(b log a); a^0 is 1, 0^b is 0 for b with a positive real part
    result = _exp(_mul_pairs(b, _log(a)))
    zero_base = _and(_and(_eq(a[0], 0.0), _eq(a[1], 0.0)), make(Op.CMPLT, _c(0.0, b[0]), b[0]))
    result = _select(zero_base, (_c(0.0, a[0]), _c(0.0, a[1])), result)
    return _select(_and(_eq(b[0], 0.0), _eq(b[1], 0.0)), _one(a), result)


_UNARY: dict[Op, Callable[[Pair], Pair]] = {
    Op.NEG: lambda z: (_neg(z[0]), _neg(z[1])),
    Op.EXP: _exp, Op.EXPM1: _expm1, Op.LOG: _log, Op.LOG1P: _log1p,
    Op.LOG2: _scaled(1 / math.log(2)), Op.LOG10: _scaled(1 / math.log(10)), Op.SQRT: _sqrt,
    Op.SIN: _sin, Op.COS: _cos, Op.TAN: _tan, Op.SINH: _sinh, Op.COSH: _cosh, Op.TANH: _tanh,
    Op.ASIN: _asin, Op.ACOS: _acos, Op.ATAN: _atan, Op.ASINH: _asinh, Op.ACOSH: _acosh, Op.ATANH: _atanh,
}
_BINARY: dict[Op, Callable[[Pair, Pair], Pair]] = {
    Op.ADD: lambda a, b: (_add(a[0], b[0]), _add(a[1], b[1])),
    Op.SUB: lambda a, b: (_sub(a[0], b[0]), _sub(a[1], b[1])),
    Op.MUL: _mul_pairs, Op.DIV: _div_pairs, Op.POW: _pow,
}


# ---- the lowering of one node -------------------------------------------------------------------

def _complex_node(node: Node, pairs: dict[Node, Pair], real: dict[Node, Node]) -> Pair:
    """The (real, imaginary) nodes of the complex `node`, its sources lowered already."""
    op, part = node.op, COMPONENT[node.dtype]
    if op is Op.CONST:
        value = complex(node.arg)
        return const(value.real, part, node.shape), const(value.imag, part, node.shape)
    if op is Op.COMPLEX:
        return real[node.src[0]], real[node.src[1]]
    if op is Op.CAST:
        (source,) = node.src
        if source.dtype.is_complex:
            x, y = pairs[source]
            return make(Op.CAST, x, arg=part) if x.dtype is not part else x, \
                make(Op.CAST, y, arg=part) if y.dtype is not part else y
        x = real[source]
        x = make(Op.CAST, x, arg=part) if x.dtype is not part else x
        return x, const(0.0, part, node.shape)
    if op in _UNARY:
        return _UNARY[op](pairs[node.src[0]])
    if op in _BINARY:
        return _BINARY[op](pairs[node.src[0]], pairs[node.src[1]])
    if op is Op.WHERE:
        cond = real[node.src[0]]
        return _select(cond, pairs[node.src[1]], pairs[node.src[2]])
    if op in MOVEMENT or op is Op.SUM or op is Op.CUMSUM:   # each part alone
        x, y = pairs[node.src[0]]
        return make(op, x, arg=node.arg), make(op, y, arg=node.arg)
    if op is Op.GATHER:
        x, y = pairs[node.src[0]]
        index = real[node.src[1]]
        return make(op, x, index, arg=node.arg), make(op, y, index, arg=node.arg)
    if op is Op.SCATTER_ADD:
        x, y = pairs[node.src[1]]
        index = real[node.src[0]]
        return make(op, index, x, arg=node.arg), make(op, index, y, arg=node.arg)
    if op in _ON_THE_HOST:
        return _halves(_on_host(node, pairs, real))
    raise NotImplementedError(f"complex {node.dtype.name} values have no lowering for {op.name} "
                              "(the front end should have refused it)")


# ops whose complex meaning is no function of the parts alone: run by numpy on the host, on the
# values stored as float pairs
_ON_THE_HOST = {Op.PROD, Op.LINALG, Op.FFT}


def _on_host(node: Node, pairs: dict[Node, Pair], real: dict[Node, Node]) -> Node:
    """`node` as a PAIRS step: its complex sources as float pairs, its result pairs if complex."""
    srcs = [_interleave(*pairs[s]) if s.dtype.is_complex else real[s] for s in node.src]
    arg = (node.op, node.arg, tuple(s.dtype.is_complex for s in node.src), node.dtype, node.shape)
    return make(Op.PAIRS, *srcs, arg=arg)


def _real_of_complex(node: Node, pairs: dict[Node, Pair], real: dict[Node, Node]) -> Node:
    """A real `node` whose source is complex (abs, real, imag, ==, !=, a cast to a real type, a
    real result of a host op: eigenvalues, singular values)."""
    op = node.op
    if op in _ON_THE_HOST:
        return _on_host(node, pairs, real)
    x, y = pairs[node.src[0]]
    if op is Op.REAL:
        return x
    if op is Op.IMAG:
        return y
    if op is Op.ABS:
        return make(Op.HYPOT, x, y)
    if op in (Op.CMPEQ, Op.CMPNE):
        u, v = pairs[node.src[1]]
        if op is Op.CMPEQ:
            return _and(make(Op.CMPEQ, x, u), make(Op.CMPEQ, y, v))
        return _or(make(Op.CMPNE, x, u), make(Op.CMPNE, y, v))
    if op is Op.CAST and node.dtype.is_bool:   # nonzero: either part is
        return _or(make(Op.CMPNE, x, _c(0.0, x)), make(Op.CMPNE, y, _c(0.0, y)))
    if op is Op.CAST:   # numpy's: the real part
        return x if x.dtype is node.dtype else make(Op.CAST, x, arg=node.dtype)
    raise NotImplementedError(f"{op.name} of complex values has no lowering (the front end should have refused it)")
