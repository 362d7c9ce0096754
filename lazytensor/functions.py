"""The functional forms: `lt.exp(x)` is `x.exp()`, `lt.add(a, b)` is `a + b`, for array-likes too."""
from __future__ import annotations

from typing import Any

from .ir.ops import Op
from .movement import (broadcast_to, concatenate, expand_dims, flip, pad, permute, reshape,
                       squeeze, stack)
from .tensor import Tensor, binary, where


def _tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from .creation import asarray
    return asarray(x)


def _method(name: str, doc: str):
    def function(x: Any, *args: Any, **kwargs: Any) -> Tensor:
        return getattr(_tensor(x), name)(*args, **kwargs)
    function.__name__ = name
    function.__doc__ = f"{doc}\n\n>>> lt.{name}(x) is the same as x.{name}()"
    return function


def _binary(op: Op, name: str, doc: str):
    def function(a: Any, b: Any) -> Tensor:
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            a = _tensor(a)
        return binary(op, a, b)
    function.__name__ = name
    function.__doc__ = f"{doc}, elementwise with broadcasting.\n\n>>> lt.{name}(lt.arange(3), 2)"
    return function


exp = _method("exp", "e**x elementwise")
log = _method("log", "Natural logarithm elementwise")
sqrt = _method("sqrt", "Square root elementwise")
sin = _method("sin", "Sine elementwise")
cos = _method("cos", "Cosine elementwise")
tanh = _method("tanh", "Hyperbolic tangent elementwise")
abs = _method("abs", "Absolute value elementwise")
neg = negative = _method("neg", "-x elementwise")
astype = _method("astype", "Convert to a dtype")
sum = _method("sum", "Sum over axes")
prod = _method("prod", "Product over axes")
mean = _method("mean", "Mean over axes")
max = _method("max", "Maximum over axes")
min = _method("min", "Minimum over axes")
argmax = _method("argmax", "Index of the maximum")
argmin = _method("argmin", "Index of the minimum")
transpose = _method("transpose", "Reverse or permute the axes")

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


def greater(a: Any, b: Any) -> Tensor:
    """a > b elementwise. >>> lt.greater(lt.arange(3), 1).tolist() == [False, False, True]"""
    return less(b, a)


def greater_equal(a: Any, b: Any) -> Tensor:
    """a >= b elementwise."""
    return less_equal(b, a)


def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product (numpy.matmul). >>> lt.matmul(lt.ones((2, 3)), lt.ones(3)).shape == (2,)"""
    from .linalg import matmul as _matmul
    return _matmul(_tensor(a) if not isinstance(b, Tensor) else a, b)


__all__ = [
    "exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "neg", "negative", "astype", "sum", "prod",
    "mean", "max", "min", "argmax", "argmin", "transpose", "add", "subtract", "multiply", "divide",
    "floor_divide", "mod", "remainder", "pow", "power", "maximum", "minimum", "less", "less_equal",
    "equal", "not_equal", "greater", "greater_equal", "matmul", "where", "reshape", "permute",
    "broadcast_to", "squeeze", "expand_dims", "flip", "pad", "concatenate", "stack",
]
