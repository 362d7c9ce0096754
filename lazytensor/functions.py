"""The functional forms: `lt.exp(x)` is `x.exp()`, `lt.add(a, b)` is `a + b`, for array-likes too."""
from __future__ import annotations

from typing import Any

import math

import numpy as np

from .ir.dtypes import bool_, float16, float32, result_type, ufunc_result
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .movement import (broadcast_to, concatenate, expand_dims, flip, pad, permute, reshape,
                       squeeze, stack)
from .tensor import Tensor, as_tensor, binary, float_unary, where



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
astype = _method("astype", "Convert to a dtype\n\n>>> lt.astype(lt.asarray([1.7]), lt.int32).tolist()\n[1]")
sum = _method("sum", "Sum over axes\n\n>>> lt.sum(lt.asarray([1, 2, 3])).item()\n6")
prod = _method("prod", "Product over axes\n\n>>> lt.prod(lt.asarray([2, 3, 4])).item()\n24")
mean = _method("mean", "Mean over axes\n\n>>> lt.mean(lt.asarray([1.0, 2.0, 6.0])).item()\n3.0")
max = _method("max", "Maximum over axes\n\n>>> lt.max(lt.asarray([1, 5, 3])).item()\n5")
min = _method("min", "Minimum over axes\n\n>>> lt.min(lt.asarray([1, 5, 3])).item()\n1")
argmax = _method("argmax", "Index of the maximum\n\n>>> lt.argmax(lt.asarray([1, 5, 3])).item()\n1")
argmin = _method("argmin", "Index of the minimum\n\n>>> lt.argmin(lt.asarray([4, 1, 3])).item()\n1")
transpose = _method("transpose", "Reverse or permute the axes\n\n>>> lt.transpose(lt.zeros((2, 3))).shape\n(3, 2)")
all = _method("all", "True where every element along the axes is nonzero\n\n>>> lt.all(lt.asarray([True, False])).item()\nFalse")
any = _method("any", "True where some element along the axes is nonzero\n\n>>> lt.any(lt.asarray([True, False])).item()\nTrue")
var = _method("var", "Variance over axes (correction= or ddof= for the sample variance)\n\n>>> lt.var(lt.asarray([1.0, 2.0, 3.0, 4.0])).item()\n1.25")
std = _method("std", "Standard deviation over axes\n\n>>> lt.std(lt.asarray([1.0, 3.0])).item()\n1.0")

add = _binary(Op.ADD, "add", "a + b")
subtract = _binary(Op.SUB, "subtract", "a - b")
multiply = _binary(Op.MUL, "multiply", "a * b")
divide = _binary(Op.DIV, "divide", "a / b (true division)")
floor_divide = _binary(Op.FLOORDIV, "floor_divide", "a // b")
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


def _rounding(op: Op, name: str, doc: str):
    def function(x: Any) -> Tensor:
        x = as_tensor(x)
        return x._new(make(op, x.node)) if x.dtype.is_float else x._new(x.node)
    return _named(function, name, (f"{doc}, elementwise; integers and bool are returned unchanged (Array API)."
                                   f"\n\n>>> lt.{name}(lt.asarray([-1.5, 2.5])).tolist() == np.{name}([-1.5, 2.5]).tolist()\nTrue"))


floor = _rounding(Op.FLOOR, "floor", "The largest integer <= x")
ceil = _rounding(Op.CEIL, "ceil", "The smallest integer >= x")
trunc = _rounding(Op.TRUNC, "trunc", "x rounded toward zero")
round = _rounding(Op.ROUND, "round", "x rounded to the nearest integer, ties to even")


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
    return x != x if x.dtype.is_float else _all(x, False)


def isinf(x: Any) -> Tensor:
    """True where x is +inf or -inf.

    >>> lt.isinf(lt.asarray([float('inf'), 1.0])).tolist()
    [True, False]
    """
    x = as_tensor(x)
    return x.abs() == math.inf if x.dtype.is_float else _all(x, False)


def isfinite(x: Any) -> Tensor:
    """True where x is neither inf nor nan.

    >>> lt.isfinite(lt.asarray([float('nan'), 1.0])).tolist()
    [False, True]
    """
    x = as_tensor(x)
    return x.abs() < math.inf if x.dtype.is_float else _all(x, True)


def sign(x: Any) -> Tensor:
    """-1, 0 or 1 by the sign of x (nan stays nan).

    >>> lt.sign(lt.asarray([-2, 0, 3])).tolist()
    [-1, 0, 1]
    """
    x = as_tensor(x)
    if x.dtype.is_bool:
        raise TypeError("sign is not defined for bool (numpy refuses it too); cast with .astype() first")
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
    work = float32 if dtype is float16 else dtype
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


def conj(x: Any) -> Tensor:
    """The complex conjugate: x itself for real dtypes.

    >>> lt.conj(lt.asarray([1.0, -2.0])).tolist()
    [1.0, -2.0]
    """
    x = as_tensor(x)
    return x._new(x.node)


def real(x: Any) -> Tensor:
    """The real part: x itself for real dtypes.

    >>> lt.real(lt.asarray([1.0, -2.0])).tolist()
    [1.0, -2.0]
    """
    return conj(x)


def imag(x: Any) -> Tensor:
    """The imaginary part: zeros for real dtypes.

    >>> lt.imag(lt.asarray([1.0, -2.0])).tolist()
    [0.0, 0.0]
    """
    x = as_tensor(x)
    return x._new(const(0, x.dtype, x.shape))


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


def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product (numpy.matmul).

    >>> lt.matmul(lt.ones((2, 3)), lt.ones(3)).tolist()
    [3.0, 3.0]
    """
    from .linalg import matmul as _matmul
    return _matmul(as_tensor(a, like=b), b)


__all__ = [
    "exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "neg", "negative", "astype", "sum", "prod",
    "all", "any", "var", "std",
    "mean", "max", "min", "argmax", "argmin", "transpose", "add", "subtract", "multiply", "divide",
    "floor_divide", "mod", "remainder", "pow", "power", "maximum", "minimum", "less", "less_equal",
    "equal", "not_equal", "greater", "greater_equal", "matmul", "where", "reshape", "permute",
    "broadcast_to", "squeeze", "expand_dims", "flip", "pad", "concatenate", "stack",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "bitwise_invert", "atan2", "arctan2", "hypot", "copysign", "tan", "asin", "arcsin", "acos",
    "arccos", "atan", "arctan", "sinh", "cosh", "asinh", "arcsinh", "acosh", "arccosh", "atanh",
    "arctanh", "expm1", "log1p", "log2", "log10", "erf", "floor", "ceil", "trunc", "round", "signbit",
    "isnan", "isinf", "isfinite", "sign", "square", "positive", "logical_not", "logical_and",
    "logical_or", "logical_xor", "logaddexp", "clip", "conj", "real", "imag", "reciprocal",
]
