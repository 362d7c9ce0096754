"""Tensor's operators (+, -, *, /, //, %, **, comparisons, bitwise, @, and their in-place
forms) and elementwise methods (abs, exp, log, ..., clip, real, imag), attached to the class:
numpy's promotion and broadcasting come from operands.py, the functions from functions.py and
linalg.py."""
from __future__ import annotations

import numpy as np

from .functions import clip, floor_divide, imag, real
from .ir.arith import cast
from .ir.dtypes import int8
from .ir.ops import Op
from .ir.rules import make
from .linalg import matmul
from .operands import as_tensor, binary, broadcast_shapes, float_unary, where
from .tensor import Tensor, attach_methods


class Operators:
    """Tensor's operators and elementwise methods (attached below)."""

    def __add__(self, other): return binary(Op.ADD, self, other)
    def __radd__(self, other): return binary(Op.ADD, other, self)
    def __sub__(self, other): return binary(Op.SUB, self, other)
    def __rsub__(self, other): return binary(Op.SUB, other, self)
    def __mul__(self, other): return binary(Op.MUL, self, other)
    def __rmul__(self, other): return binary(Op.MUL, other, self)
    def __truediv__(self, other): return binary(Op.DIV, self, other)
    def __rtruediv__(self, other): return binary(Op.DIV, other, self)
    def __floordiv__(self, other): return floor_divide(self, other)
    def __rfloordiv__(self, other): return floor_divide(other, self)
    def __mod__(self, other): return binary(Op.MOD, self, other)
    def __rmod__(self, other): return binary(Op.MOD, other, self)
    def __pow__(self, other):
        if type(other) is int and other == 2 and self.dtype.is_bool:   # numpy's `b ** 2` is square(b): int8
            return self.astype(int8) * self.astype(int8)
        return binary(Op.POW, self, other)

    def __rpow__(self, other): return binary(Op.POW, other, self)
    def __and__(self, other): return binary(Op.AND, self, other)
    def __rand__(self, other): return binary(Op.AND, other, self)
    def __or__(self, other): return binary(Op.OR, self, other)
    def __ror__(self, other): return binary(Op.OR, other, self)
    def __xor__(self, other): return binary(Op.XOR, self, other)
    def __rxor__(self, other): return binary(Op.XOR, other, self)
    def __lt__(self, other): return binary(Op.CMPLT, self, other)
    def __le__(self, other): return binary(Op.CMPLE, self, other)
    def __gt__(self, other): return binary(Op.CMPLT, other, self)
    def __ge__(self, other): return binary(Op.CMPLE, other, self)
    def __eq__(self, other): return binary(Op.CMPEQ, self, other)  # type: ignore[override]
    def __ne__(self, other): return binary(Op.CMPNE, self, other)  # type: ignore[override]
    def __lshift__(self, other): return binary(Op.SHL, self, other)
    def __rlshift__(self, other): return binary(Op.SHL, other, self)
    def __rshift__(self, other): return binary(Op.SHR, self, other)
    def __rrshift__(self, other): return binary(Op.SHR, other, self)
    def __matmul__(self, other): return matmul(self, other)
    def __rmatmul__(self, other): return matmul(other, self)

    def __iadd__(self, other): return self._inplace(Op.ADD, other)
    def __isub__(self, other): return self._inplace(Op.SUB, other)
    def __imul__(self, other): return self._inplace(Op.MUL, other)
    def __itruediv__(self, other): return self._inplace(Op.DIV, other)
    def __ifloordiv__(self, other): return self._inplace_result(floor_divide(self, other), "//=")
    def __imod__(self, other): return self._inplace(Op.MOD, other)
    def __ipow__(self, other): return self._inplace(Op.POW, other)
    def __iand__(self, other): return self._inplace(Op.AND, other)
    def __ior__(self, other): return self._inplace(Op.OR, other)
    def __ixor__(self, other): return self._inplace(Op.XOR, other)
    def __ilshift__(self, other): return self._inplace(Op.SHL, other)
    def __irshift__(self, other): return self._inplace(Op.SHR, other)
    def __imatmul__(self, other): return self._inplace_result(matmul(self, other), "@=")

    def _inplace(self, op: Op, other) -> "Tensor":
        return self._inplace_result(binary(op, self, other), op.name.lower())

    def _inplace_result(self, result: "Tensor", what: str) -> "Tensor":
        """`x op= y` keeps x's shape and dtype, like numpy (which refuses to cast float -> int)."""
        if result.shape != self.shape:
            raise ValueError(f"in-place {what}: the result has shape {result.shape}, "
                             f"which does not fit the left operand's shape {self.shape}")
        if not np.can_cast(result.dtype.np, self.dtype.np, casting="same_kind"):
            raise TypeError(f"in-place {what}: cannot cast the result from {result.dtype.name} to "
                            f"{self.dtype.name}; write x = x {what} y to get a new tensor instead")
        self._set_node(cast(result.node, self.dtype))
        return self

    def __neg__(self) -> "Tensor":
        if self.dtype.is_bool:
            raise TypeError("negative (-) of a bool tensor is not supported; use ~x or lt.logical_not(x)")
        return self._new(make(Op.NEG, self.node))

    def __pos__(self) -> "Tensor":
        return self._new(self.node)   # a new tensor, as numpy's: `y = +x; y += 1` leaves x alone

    def __invert__(self) -> "Tensor":
        if self.dtype.is_float:
            raise TypeError(f"invert (~) needs a bool or integer tensor, not {self.dtype.name}")
        return self._new(make(Op.NOT, self.node))

    def __abs__(self) -> "Tensor":
        return self.abs()

    def abs(self) -> "Tensor":
        """|x| elementwise.

        >>> lt.asarray([-1, 2]).abs().tolist()
        [1, 2]
        """
        return self._new(make(Op.ABS, self.node))

    def exp(self) -> "Tensor":
        """e**x elementwise (integers compute in float64).

        >>> lt.asarray([0.0]).exp().tolist()
        [1.0]
        """
        return float_unary(Op.EXP, self)

    def log(self) -> "Tensor":
        """Natural logarithm elementwise; log(0) = -inf, log(x<0) = nan.

        >>> lt.asarray([1.0]).log().tolist()
        [0.0]
        """
        return float_unary(Op.LOG, self)

    def sqrt(self) -> "Tensor":
        """Square root elementwise; sqrt(x<0) = nan.

        >>> lt.asarray([4.0, 9.0]).sqrt().tolist()
        [2.0, 3.0]
        """
        return float_unary(Op.SQRT, self)

    def sin(self) -> "Tensor":
        """Sine elementwise (radians).

        >>> lt.asarray([0.0]).sin().tolist()
        [0.0]
        """
        return float_unary(Op.SIN, self)

    def cos(self) -> "Tensor":
        """Cosine elementwise (radians).

        >>> lt.asarray([0.0]).cos().tolist()
        [1.0]
        """
        return float_unary(Op.COS, self)

    def tanh(self) -> "Tensor":
        """Hyperbolic tangent elementwise.

        >>> lt.asarray([0.0]).tanh().tolist()
        [0.0]
        """
        return float_unary(Op.TANH, self)

    def pow(self, exponent) -> "Tensor":
        """x ** exponent elementwise, with broadcasting.

        >>> lt.asarray([1, 2, 3]).pow(2).tolist()
        [1, 4, 9]
        """
        return binary(Op.POW, self, exponent)

    def neg(self) -> "Tensor":
        """-x elementwise.

        >>> lt.asarray([1, -2]).neg().tolist()
        [-1, 2]
        """
        return -self

    def maximum(self, other) -> "Tensor":
        """Elementwise maximum; nan wins, like numpy.maximum.

        >>> lt.asarray([1, 5]).maximum(3).tolist()
        [3, 5]
        """
        return binary(Op.MAX, self, other)

    def minimum(self, other) -> "Tensor":
        """Elementwise minimum; nan wins, like numpy.minimum.

        >>> lt.asarray([1, 5]).minimum(3).tolist()
        [1, 3]
        """
        return binary(Op.MIN, self, other)

    def clip(self, min=None, max=None) -> "Tensor":
        """Values limited to [min, max] (see lt.clip).

        >>> lt.asarray([1, 5, 9]).clip(2, 6).tolist()
        [2, 5, 6]
        """
        return clip(self, min, max)

    def clamp(self, min=None, max=None) -> "Tensor":
        """PyTorch's name for `clip`: values limited to [min, max].

        >>> lt.asarray([1, 5, 9]).clamp(min=2).tolist()
        [2, 5, 9]
        """
        return clip(self, min, max)

    def masked_fill(self, mask, value) -> "Tensor":
        """PyTorch's masked_fill: `value` where `mask` (a bool tensor that broadcasts to this
        tensor's shape) is True, this tensor's values elsewhere, in its dtype. `value` is a
        number or a 0-d tensor (which gets its gradient, as in PyTorch).

        >>> lt.zeros(3).masked_fill(lt.asarray([True, False, True]), -1.0).tolist()
        [-1.0, 0.0, -1.0]
        """
        return _masked_fill(self, mask, value, "masked_fill")

    def masked_fill_(self, mask, value) -> "Tensor":
        """masked_fill in place: this tensor (and the tensors it views or that view it) now holds
        `value` where `mask` is True. Returns this tensor.

        >>> x = lt.ones(3); _ = x.masked_fill_(lt.asarray([False, True, False]), 0.0); x.tolist()
        [1.0, 0.0, 1.0]
        """
        return self._inplace_result(_masked_fill(self, mask, value, "masked_fill_"), "masked_fill_")

    # numpy's and PyTorch's attributes (not the Array API's, which has only lt.real / lt.imag):
    # library code written for them (SciPy's signal.minimum_phase) reads `x.real`.
    @property
    def real(self) -> "Tensor":
        """The real part, as lt.real(x): the values themselves for a real dtype (a new tensor).

        >>> lt.asarray([1 + 2j]).real.tolist()
        [1.0]
        """
        return real(self)

    @property
    def imag(self) -> "Tensor":
        """The imaginary part, as lt.imag(x): zeros for a real dtype.

        >>> lt.asarray([1 + 2j]).imag.tolist()
        [2.0]
        """
        return imag(self)


def _masked_fill(x: Tensor, mask, value, name: str) -> Tensor:
    if not isinstance(mask, Tensor):
        mask = as_tensor(mask, like=x)
    if not mask.dtype.is_bool:
        raise TypeError(f"{name}: the mask must be a bool tensor, not {mask.dtype.name} (compare to make one: "
                        "mask == 0)")
    try:
        fits = broadcast_shapes(mask.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: a mask of shape {mask.shape} does not broadcast to the tensor's shape {x.shape}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(f"{name}: the value must be a number or a 0-d tensor, not a tensor of shape {value.shape}")
    elif not isinstance(value, (bool, int, float, complex, np.generic)):
        raise TypeError(f"{name}: the value must be a number or a 0-d tensor, not {type(value).__name__}")
    return where(mask, value, x).astype(x.dtype)


attach_methods(Operators)
