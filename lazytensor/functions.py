"""The functional forms: `lt.exp(x)` is `x.exp()`, `lt.add(a, b)` is `a + b`, for array-likes too."""
from __future__ import annotations

from typing import Any

import math
import operator

import numpy as np

from .devices import canonical_device
from .ir import arith
from .ir.dtypes import HALF_FLOATS, bool_, float_limits, float32, result_type, to_dtype, ufunc_result
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .movement import broadcast_to, concatenate, flip, pad, permute, squeeze, stack
from .movement import expand_dims as _expand_dims
from .movement import reshape as _reshape
from .operands import as_tensor, binary, float_unary, normalize_axes, operands, where
from .tensor import AxisError, Tensor
from .views import ViewOf, fresh



def _named(function, name: str, doc: str):
    """`function` with the public name and docstring the factories below give it."""
    function.__name__ = name
    function.__doc__ = doc
    return function


def _method(name: str, doc: str):
    def function(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        return getattr(as_tensor(x), name)(*args, **kwargs)
    return _named(function, name, f"{doc}\n\nlt.{name}(x, ...) is the same as x.{name}(...).")


def _binary(op: Op, name: str, doc: str):
    def function(a: Any, b: Any) -> Tensor:
        hook = getattr(a, "_lt_binary", None) or getattr(b, "_lt_binary", None)
        if hook is not None:   # (inside lt.compute: on expressions)
            return hook(function, a, b)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            a = as_tensor(a)
        return binary(op, a, b)
    return _named(function, name, (f"{doc}, elementwise with broadcasting.\n\n"
                                   f">>> np.allclose(lt.{name}(lt.arange(3), 2).numpy(), np.{name}(np.arange(3), 2))\nTrue"))


exp = _method("exp", "e**x elementwise\n\n>>> lt.exp(lt.asarray([0.0])).tolist()\n[1.0]")
log = _method("log", "Natural logarithm elementwise\n\n>>> lt.log(lt.asarray([1.0])).tolist()\n[0.0]")
sqrt = _method("sqrt", "Square root elementwise\n\n>>> lt.sqrt(lt.asarray([4.0, 9.0])).tolist()\n[2.0, 3.0]")
sin = _method("sin", "Sine elementwise\n\n>>> lt.sin(lt.asarray([0.0])).tolist()\n[0.0]")
cos = _method("cos", "Cosine elementwise\n\n>>> lt.cos(lt.asarray([0.0])).tolist()\n[1.0]")
tanh = _method("tanh", "Hyperbolic tangent elementwise\n\n>>> lt.tanh(lt.asarray([0.0])).tolist()\n[0.0]")
abs = _method("abs", "Absolute value elementwise\n\n>>> lt.abs(lt.asarray([-1, 2])).tolist()\n[1, 2]")
neg = negative = _method("neg", "-x elementwise\n\n>>> lt.neg(lt.asarray([1, -2])).tolist()\n[-1, 2]")


def transpose(x: Any, /, *axes: Any, dim0: Any = None, dim1: Any = None, **numpy_axes: Any) -> Tensor:
    """numpy's transpose: the axes reversed (`lt.transpose(x)`) or reordered
    (`lt.transpose(x, (1, 2, 0))`, or axes=); with two ints, PyTorch's:
    `lt.transpose(x, dim0, dim1)` swaps those two axes (see Tensor.transpose).

    >>> lt.transpose(lt.zeros((2, 3))).shape, lt.transpose(lt.zeros((2, 3, 4)), 0, 2).shape
    ((3, 2), (4, 3, 2))
    """
    if numpy_axes:
        if set(numpy_axes) != {"axes"} or axes:
            raise TypeError(f"transpose: unexpected arguments {sorted(numpy_axes)}; give the axes (numpy's axes=) "
                            "or PyTorch's dim0, dim1")
        axes = (numpy_axes["axes"],)
    return as_tensor(x).transpose(*axes, dim0=dim0, dim1=dim1)


# ---- conversions and movement, with the Array API's signatures ---------------------------------
# (x positional-only, the options keyword-only, as the standard writes them; the reductions are
# in reductions.py)

def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """`x` converted to `dtype` (numpy's casting rules for values). With copy=False, `x` itself
    when it already has that dtype (and device); every other call gives a new tensor.

    >>> lt.astype(lt.asarray([1.7, -1.7]), lt.int32).tolist()
    [1, -1]
    >>> x = lt.asarray([1, 2]); lt.astype(x, lt.int64, copy=False) is x
    True
    """
    x = as_tensor(x)
    if not copy and to_dtype(dtype) is x.dtype and (device is None or canonical_device(device) == x.device):
        return x
    return x.astype(dtype, copy=copy, device=device)


def reshape(x: Any, /, shape: Any, *, copy: Any = None) -> Tensor:
    """The same values in `shape` (one axis may be -1). copy=None: a view where one is possible
    (numpy's rule), else a new tensor; copy=True: always a new tensor; copy=False: a view, or
    a ValueError where the layout needs a copy.

    >>> lt.reshape(lt.arange(6), (3, -1)).shape
    (3, 2)
    """
    x = as_tensor(x)
    if copy not in (None, True, False):
        raise TypeError(f"reshape: copy must be None, True or False, not {copy!r}")
    result = _reshape(x, shape)
    if copy is True:
        return fresh(result)
    if copy is False and x.ndim and not isinstance(result._alias, ViewOf):   # (movement.reshape copied)
        raise ValueError(f"reshape: shape {x.shape} cannot become {shape!r} without a copy "
                         "(this tensor's layout needs one); pass copy=None or copy=True")
    return result


def expand_dims(x: Any, /, axis: Any) -> Tensor:
    """A view with a new axis of size 1 at `axis`, or at each axis of a tuple (positions in the
    result; negative ones count from its end), as numpy's.

    >>> lt.expand_dims(lt.zeros(3), 0).shape
    (1, 3)
    >>> lt.expand_dims(lt.zeros((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
    """
    x = as_tensor(x)
    if not isinstance(axis, (tuple, list)):
        return _expand_dims(x, operator.index(axis))
    rank = x.ndim + len(axis)
    try:
        new = normalize_axes(tuple(axis), rank)
    except AxisError:
        raise AxisError(f"expand_dims: axis {tuple(axis)} is out of bounds for a result of dimension {rank}") from None
    except ValueError:
        raise ValueError(f"expand_dims: repeated axis in {tuple(axis)}") from None
    sizes = iter(x.shape)
    return _reshape(x, tuple(1 if a in new else next(sizes) for a in range(rank)))

add = _binary(Op.ADD, "add", "a + b")
subtract = _binary(Op.SUB, "subtract", "a - b")
multiply = _binary(Op.MUL, "multiply", "a * b")
divide = _binary(Op.DIV, "divide", "a / b (true division)")
mod = remainder = _binary(Op.MOD, "mod", "a % b (sign of b)")
pow = power = _binary(Op.POW, "pow", "a ** b")
maximum = _binary(Op.MAX, "maximum", "The larger of a and b (nan wins)")
minimum = _binary(Op.MIN, "minimum", "The smaller of a and b (nan wins)")
less = _binary(Op.CMPLT, "less", "a < b")
less_equal = _binary(Op.CMPLE, "less_equal", "a <= b")
equal = _binary(Op.CMPEQ, "equal", "a == b")
not_equal = _binary(Op.CMPNE, "not_equal", "a != b")


bitwise_and = _binary(Op.AND, "bitwise_and", "a & b")
bitwise_or = _binary(Op.OR, "bitwise_or", "a | b")
bitwise_xor = _binary(Op.XOR, "bitwise_xor", "a ^ b")
bitwise_left_shift = _binary(Op.SHL, "bitwise_left_shift", "a << b (0 once b reaches the bit width)")
bitwise_right_shift = _binary(Op.SHR, "bitwise_right_shift", "a >> b (arithmetic for signed a)")
atan2 = arctan2 = _binary(Op.ATAN2, "atan2", "The angle of the point (b, a): atan(a / b) in the right quadrant")
hypot = _binary(Op.HYPOT, "hypot", "sqrt(a**2 + b**2) without overflow")
copysign = _binary(Op.COPYSIGN, "copysign", "|a| with the sign of b")


def floor_divide(x1: Any, x2: Any, /) -> Tensor:
    """x1 // x2 elementwise with broadcasting: the quotient rounded toward -inf, numpy's results
    except where exactly one operand is infinite. There the Array API (2024.12) wants the
    limit of floor(x1 / x2) (inf // 2 is inf, 1 // -inf is -0.0, -1 // inf is -0.0), where
    numpy gives nan, -1.0 and -1.0 (Python's divmod rule); the conformance suite tests the
    standard's, so lazytensor follows it there. `a // b` and `a //= b` are this function.

    >>> lt.floor_divide(lt.asarray([7, -7]), 2).tolist()
    [3, -4]
    >>> lt.floor_divide(lt.asarray([float("inf"), 1.0, -1.0]), lt.asarray([2.0, -float("inf"), float("inf")])).tolist()
    [inf, -0.0, -0.0]
    """
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        x1 = as_tensor(x1)
    result = binary(Op.FLOORDIV, x1, x2)
    if not result.dtype.is_float:
        return result
    (a, b), _ = operands(x1, x2, name="floor_divide", ufunc=np.floor_divide)
    infinity = const(math.inf, a.dtype, a.shape)
    one_infinite = make(Op.CMPNE, make(Op.CMPEQ, make(Op.ABS, a), infinity), make(Op.CMPEQ, make(Op.ABS, b), infinity))
    # (x / y is that limit, with its sign, and nan where the other operand is nan)
    return result._new(make(Op.WHERE, one_infinite, make(Op.DIV, a, b), result.node))


def nextafter(x1: Any, x2: Any, /) -> Tensor:
    """The next representable number after x1 in the direction of x2, elementwise with
    broadcasting (numpy.nextafter): x2 where they are equal (so nextafter(-0.0, 0.0) is 0.0),
    the smallest subnormal after zero, nan where either is nan. Integers compute in float, as
    numpy's.

    >>> lt.nextafter(lt.asarray([1.0, 1.0, 0.0]), lt.asarray([2.0, 0.0, -1.0])).tolist() == \\
    ...     np.nextafter(np.float32([1, 1, 0]), np.float32([2, 0, -1])).tolist()
    True
    """
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        x1 = as_tensor(x1)
    (a, b), device = operands(x1, x2, name="nextafter", ufunc=np.nextafter)
    return Tensor(_next_after(a, b), device)


def _next_after(a: Node, b: Node) -> Node:
    """nextafter built from arithmetic, with no access to the bits. For a normal x with
    u = 2**-p (p the significand's bits), x + u*(1 + 2u)*|x| rounds to the next float up and
    x - u*(1 + 2u)*|x| to the next one down: the step is more than half the gap on the side it
    goes to and less than one and a half (Rump, Zimmermann, Boldo & Melquiond, "Computing
    predecessor and successor in rounding to nearest", 2009; it holds with the product rounded
    or fused into the add). The step must itself be a normal number, so the smallest normal
    values are first scaled up by a power of two (exact) and the result back down. Below twice
    the smallest normal (subnormals and zeros too) the step is the smallest subnormal, exactly;
    infinities step to the largest finite value."""
    dtype, shape = a.dtype, a.shape
    limits = float_limits(dtype)
    u = limits.eps / 2
    scaled_below = limits.smallest_normal * 2 / u   # where u * |x| would not be normal

    def c(value: float) -> Node:
        return const(value, dtype, shape)

    magnitude = make(Op.ABS, a)
    scale = make(Op.WHERE, make(Op.CMPLT, magnitude, c(scaled_below)), c(2 / u), c(1.0))
    scaled = make(Op.MUL, a, scale)
    step = make(Op.MUL, c(u * (1 + 2 * u)), make(Op.ABS, scaled))
    up = make(Op.CMPLT, a, b)
    normal = make(Op.DIV, make(Op.WHERE, up, make(Op.ADD, scaled, step), make(Op.SUB, scaled, step)), scale)
    # below twice the smallest normal the gap either way is the smallest subnormal (a step of
    # one to zero keeps x's sign: nextafter(-tiny, 1) is -0.0)
    subnormal = c(limits.smallest_subnormal)
    tiny = make(Op.WHERE, up, make(Op.ADD, a, subnormal), make(Op.SUB, a, subnormal))
    tiny = make(Op.WHERE, make(Op.CMPEQ, tiny, c(0.0)), make(Op.COPYSIGN, c(0.0), a), tiny)
    result = make(Op.WHERE, make(Op.CMPLT, magnitude, c(2 * limits.smallest_normal)), tiny, normal)
    result = make(Op.WHERE, make(Op.CMPEQ, magnitude, c(math.inf)), make(Op.COPYSIGN, c(limits.max), a), result)
    result = make(Op.WHERE, make(Op.CMPEQ, a, b), b, result)
    either_nan = make(Op.OR, make(Op.CMPNE, a, a), make(Op.CMPNE, b, b))
    return make(Op.WHERE, either_nan, c(math.nan), result)


def _float_function(op: Op, name: str, doc: str):
    def function(x: Any) -> Tensor:
        return float_unary(op, as_tensor(x))
    return _named(function, name, (f"{doc}, elementwise; integers compute in float like numpy.\n\n"
                                   f">>> np.allclose(lt.{name}(lt.asarray([0.5])).numpy(), np.{name}(0.5), equal_nan=True)\nTrue"))


tan = _float_function(Op.TAN, "tan", "Tangent")
asin = arcsin = _float_function(Op.ASIN, "asin", "Inverse sine")
acos = arccos = _float_function(Op.ACOS, "acos", "Inverse cosine")
atan = arctan = _float_function(Op.ATAN, "atan", "Inverse tangent")
sinh = _float_function(Op.SINH, "sinh", "Hyperbolic sine")
cosh = _float_function(Op.COSH, "cosh", "Hyperbolic cosine")
asinh = arcsinh = _float_function(Op.ASINH, "asinh", "Inverse hyperbolic sine")
acosh = arccosh = _float_function(Op.ACOSH, "acosh", "Inverse hyperbolic cosine")
atanh = arctanh = _float_function(Op.ATANH, "atanh", "Inverse hyperbolic tangent")
expm1 = _float_function(Op.EXPM1, "expm1", "exp(x) - 1, accurate near 0")
log1p = _float_function(Op.LOG1P, "log1p", "log(1 + x), accurate near 0")
log2 = _float_function(Op.LOG2, "log2", "Base-2 logarithm")
log10 = _float_function(Op.LOG10, "log10", "Base-10 logarithm")


def erf(x: Any) -> Tensor:
    """The error function, 2/sqrt(pi) times the integral of exp(-t**2) from 0 to x, elementwise
    (torch.erf, scipy.special.erf); integers compute in float like numpy's ufuncs.

    >>> [round(v, 6) for v in lt.erf(lt.asarray([-1.0, 0.0, 0.5])).tolist()]
    [-0.842701, 0.0, 0.5205]
    """
    return float_unary(Op.ERF, as_tensor(x))


def _rounding(op: Op, name: str, doc: str, parts: bool = False):
    def function(x: Any) -> Tensor:
        x = as_tensor(x)
        if parts and x.dtype.is_complex:   # (round: each part on its own, as the standard says)
            real, imag = make(Op.REAL, x.node), make(Op.IMAG, x.node)
            return x._new(arith.complex_(make(op, real), make(op, imag)))
        # (complex floor, ceil, trunc: make refuses; the Array API defines them for real values only)
        return x._new(make(op, x.node)) if x.dtype.is_inexact else x._new(x.node)
    return _named(function, name, (f"{doc}, elementwise; integers and bool are returned unchanged (Array API)."
                                   f"\n\n>>> lt.{name}(lt.asarray([-1.5, 2.5])).tolist() == np.{name}([-1.5, 2.5]).tolist()\nTrue"))


floor = _rounding(Op.FLOOR, "floor", "The largest integer <= x")
ceil = _rounding(Op.CEIL, "ceil", "The smallest integer >= x")
trunc = _rounding(Op.TRUNC, "trunc", "x rounded toward zero")
round = _rounding(Op.ROUND, "round", "x rounded to the nearest integer, ties to even (complex x: each part)",
                  parts=True)


def _all(x: Tensor, value: bool) -> Tensor:
    return x._new(const(value, bool_, x.shape))


def signbit(x: Any) -> Tensor:
    """True where the sign bit is set (also for -0.0).

    >>> lt.signbit(lt.asarray([-0.0, 1.0])).tolist()
    [True, False]
    """
    x = as_tensor(x)
    return x._new(make(Op.SIGNBIT, x.node))


def isnan(x: Any) -> Tensor:
    """True where x is nan.

    >>> lt.isnan(lt.asarray([float('nan'), 1.0])).tolist()
    [True, False]
    """
    x = as_tensor(x)
    return x != x if x.dtype.is_inexact else _all(x, False)   # (complex: either part is nan)


def isinf(x: Any) -> Tensor:
    """True where x is +inf or -inf.

    >>> lt.isinf(lt.asarray([float('inf'), 1.0])).tolist()
    [True, False]
    """
    x = as_tensor(x)
    if x.dtype.is_complex:   # (either part: |x| of finite parts may overflow)
        return isinf(real(x)) | isinf(imag(x))
    return x.abs() == math.inf if x.dtype.is_float else _all(x, False)


def isfinite(x: Any) -> Tensor:
    """True where x is neither inf nor nan.

    >>> lt.isfinite(lt.asarray([float('nan'), 1.0])).tolist()
    [False, True]
    """
    x = as_tensor(x)
    if x.dtype.is_complex:   # (both parts finite: |x| of finite parts may still overflow)
        return isfinite(real(x)) & isfinite(imag(x))
    return x.abs() < math.inf if x.dtype.is_float else _all(x, True)


def sign(x: Any) -> Tensor:
    """-1, 0 or 1 by the sign of x (nan stays nan).

    >>> lt.sign(lt.asarray([-2, 0, 3])).tolist()
    [-1, 0, 1]
    """
    x = as_tensor(x)
    if x.dtype.is_bool:
        raise TypeError("sign is not defined for bool (numpy refuses it too); cast with .astype() first")
    if x.dtype.is_complex:   # x / |x|, and 0 for 0 (the Array API's; numpy 2's too)
        magnitude = x.abs()
        return where(magnitude == 0, x._new(const(0, x.dtype, x.shape)), x / where(magnitude == 0, 1, magnitude).astype(x.dtype))
    # zeros (either sign) give +0 and nan stays nan, as in numpy
    positive = where(x > 0, 1, where(x == 0, 0, x)).astype(x.dtype)
    return where(x < 0, -1, positive).astype(x.dtype) if not x.dtype.is_unsigned else positive


def square(x: Any) -> Tensor:
    """x * x.

    >>> lt.square(lt.asarray([3])).tolist()
    [9]
    """
    x = as_tensor(x)
    x = x.astype(ufunc_result(np.square, x.dtype))  # numpy squares bool in int8
    return x * x


def positive(x: Any) -> Tensor:
    """+x (the same values).

    >>> lt.positive(lt.asarray([-1])).tolist()
    [-1]
    """
    x = as_tensor(x)
    if x.dtype.is_bool:
        raise TypeError("positive is not defined for bool (numpy refuses it too)")
    return x._new(x.node)


def bitwise_invert(x: Any) -> Tensor:
    """~x: bitwise not of integers, logical not of bool.

    >>> lt.bitwise_invert(lt.asarray([0, 1])).tolist()
    [-1, -2]
    """
    return ~as_tensor(x)


def logical_not(x: Any) -> Tensor:
    """not x, as bool.

    >>> lt.logical_not(lt.asarray([0, 2])).tolist()
    [True, False]
    """
    return ~as_tensor(x).astype(bool_)


def _logical(op: Op, name: str, word: str):
    def function(a: Any, b: Any) -> Tensor:
        a = as_tensor(a, like=b).astype(bool_)
        b = bool(b) if isinstance(b, (bool, int, float)) else as_tensor(b, like=a).astype(bool_)
        return binary(op, a, b)
    return _named(function, name, (f"a {word} b, as bool.\n\n"
                                   f">>> lt.{name}(lt.asarray([True, False]), True).tolist() == np.{name}([True, False], True).tolist()\nTrue"))


logical_and = _logical(Op.AND, "logical_and", "and")
logical_or = _logical(Op.OR, "logical_or", "or")
logical_xor = _logical(Op.XOR, "logical_xor", "xor")


def logaddexp(a: Any, b: Any) -> Tensor:
    """log(exp(a) + exp(b)) without overflow.

    >>> lt.logaddexp(lt.asarray([1000.0]), 1000.0).tolist()
    [1000.69...]
    """
    hook = getattr(a, "_lt_binary", None) or getattr(b, "_lt_binary", None)
    if hook is not None:   # (inside lt.compute, or lt.comm_reducer's probe)
        return hook(logaddexp, a, b)
    # Python numbers stay weak scalars on either side (a tensor of their own would be float32,
    # and a float64 or float16 operand would be promoted or rounded through it)
    if not isinstance(a, (Tensor, bool, int, float)):
        a = as_tensor(a, like=b)
    if not isinstance(b, (Tensor, bool, int, float)):
        b = as_tensor(b, like=a)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = as_tensor(a)   # (two Python numbers: a tensor of the default dtype, as elsewhere)
    common = result_type(*[v.dtype if isinstance(v, Tensor) else v for v in (a, b)])
    # (numpy picks the loop from the operands' own dtypes, as tensor.operands does)
    dtype = ufunc_result(np.logaddexp, *[v.dtype if isinstance(v, Tensor) else common for v in (a, b)])
    # float16 computes in float32 and rounds once, as numpy's loop does (each step in half
    # rounded a few times over: 1% off)
    work = float32 if dtype in HALF_FLOATS else dtype
    a, b = [v.astype(work) if isinstance(v, Tensor) else v for v in (a, b)]
    high = maximum(a, b)
    low = minimum(a, b)
    # equal infinities would give inf - inf = nan below: there the answer is the value itself
    spread = log1p(exp(low - high))
    result = where(low == high, high + math.log(2.0), high + spread)
    return result if work is dtype else result.astype(dtype)


def clip(x: Any, min: Any = None, max: Any = None) -> Tensor:
    """x limited to [min, max] (either may be None); keeps x's dtype.

    >>> lt.clip(lt.asarray([-2, 5, 9]), 0, 6).tolist()
    [0, 5, 6]
    """
    x = as_tensor(x)
    result = x
    if min is not None:
        result = maximum(result, min)
    if max is not None:
        result = minimum(result, max)
    return result.astype(x.dtype)


def clamp(x: Any, min: Any = None, max: Any = None) -> Tensor:
    """PyTorch's name for `clip`: x limited to [min, max] (either may be None; where min > max,
    max, as in PyTorch); keeps x's dtype.

    >>> lt.clamp(lt.asarray([-2.0, 0.5, 9.0]), min=0.0, max=1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    return clip(x, min, max)


def conj(x: Any) -> Tensor:
    """The complex conjugate: x itself for real dtypes.

    >>> lt.conj(lt.asarray([1 + 2j])).tolist()
    [(1-2j)]
    """
    x = as_tensor(x)
    return x._new(arith.conj(x.node))


def real(x: Any) -> Tensor:
    """The real part (of the component float type for complex x): x itself for real dtypes.

    >>> lt.real(lt.asarray([1 + 2j])).tolist()
    [1.0]
    """
    x = as_tensor(x)
    return x._new(make(Op.REAL, x.node) if x.dtype.is_complex else x.node)


def imag(x: Any) -> Tensor:
    """The imaginary part (of the component float type for complex x): zeros for real dtypes.

    >>> lt.imag(lt.asarray([1 + 2j])).tolist()
    [2.0]
    """
    x = as_tensor(x)
    return x._new(make(Op.IMAG, x.node) if x.dtype.is_complex else const(0, x.dtype, x.shape))


def reciprocal(x: Any) -> Tensor:
    """1 / x elementwise (integers give float64, like numpy's true division).

    >>> lt.reciprocal(lt.asarray([2, 4])).tolist()
    [0.5, 0.25]
    """
    return 1 / as_tensor(x)


def greater(a: Any, b: Any) -> Tensor:
    """a > b elementwise.

    >>> lt.greater(lt.arange(3), 1).tolist()
    [False, False, True]
    """
    return less(b, a)


def greater_equal(a: Any, b: Any) -> Tensor:
    """a >= b elementwise.

    >>> lt.greater_equal(lt.arange(3), 1).tolist()
    [False, True, True]
    """
    return less_equal(b, a)


__all__ = [
    "exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "neg", "negative", "astype", "transpose", "add", "subtract",
    "multiply", "divide", "floor_divide", "mod", "remainder", "pow", "power", "maximum", "minimum", "less", "less_equal",
    "equal", "not_equal", "greater", "greater_equal", "where", "reshape", "permute",
    "broadcast_to", "squeeze", "expand_dims", "flip", "pad", "concatenate", "stack",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "bitwise_invert", "atan2", "arctan2", "hypot", "copysign", "tan", "asin", "arcsin", "acos",
    "arccos", "atan", "arctan", "sinh", "cosh", "asinh", "arcsinh", "acosh", "arccosh", "atanh",
    "arctanh", "expm1", "log1p", "log2", "log10", "erf", "floor", "ceil", "trunc", "round", "signbit",
    "isnan", "isinf", "isfinite", "sign", "square", "positive", "logical_not", "logical_and",
    "logical_or", "logical_xor", "logaddexp", "clip", "clamp", "conj", "real", "imag", "reciprocal", "nextafter",
]
