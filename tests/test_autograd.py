"""Reverse-mode autograd (lazytensor/autograd.py).

- every op has a gradient rule (None where no gradient flows);
- every differentiable op's rule agrees with central finite differences in float64, driven
  through the public API, with broadcasting, size-1 axes, 0-d and zero-size tensors;
- a representative set agrees with PyTorch (ties of max/min included), where torch is installed;
- the semantics around backward(): accumulation, no_grad, detach, lt.grad, in-place updates, errors;
- gradients on every available device.

Every check differentiates loss = sum(f(x) * W) for fixed random weights W, so every element of
f's output matters.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pytest

import lazytensor as lt
from gradcheck import check_gradient, fixed_weights, ops_in, weighted_loss
from lazytensor.autograd import GRADIENT_RULES
from lazytensor.ir.ops import ELEMENTWISE, GRAPH_ONLY, INDEXING, MOVEMENT, OPAQUE, REDUCTION, Op

# ---- helpers -------------------------------------------------------------------------------------

def on(like: lt.Tensor, array, dtype=None) -> lt.Tensor:
    """A constant (needing no grad) on the device of `like`."""
    return lt.asarray(np.asarray(array), dtype=dtype, device=like.device)


# ---- inputs: in each op's domain, away from its kinks ----------------------------------------------

_rng = np.random.default_rng(20240601)


def normal(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape)


def uniform(low: float, high: float, *shape: int) -> np.ndarray:
    return _rng.uniform(low, high, shape)


def away_from_zero(*shape: int, low: float = 0.3, high: float = 2.0) -> np.ndarray:
    """|x| in [low, high], either sign: away from the kinks of abs, copysign, division."""
    return _rng.choice([-1.0, 1.0], shape) * _rng.uniform(low, high, shape)


def distinct(*shape: int) -> np.ndarray:
    """Values at least 0.2 apart in random order: no ties for max, min, sort."""
    n = math.prod(shape)
    return ((_rng.permutation(n) + _rng.uniform(-0.3, 0.3, n)) * 0.5 - n / 4).reshape(shape)


def between_integers(*shape: int) -> np.ndarray:
    """k + f with f in [0.15, 0.35] or [0.65, 0.85]: away from the kinks of floor, ceil, trunc,
    round (integers and halves)."""
    fraction = _rng.uniform(0.15, 0.35, shape) + _rng.choice([0.0, 0.5], shape)
    return _rng.integers(-3, 4, shape) + fraction


def separated(x: np.ndarray, *shape: int) -> np.ndarray:
    """Values at least 0.2 away from each of x's (broadcast): no ties for maximum, minimum."""
    return x + away_from_zero(*shape, low=0.2, high=1.0)


def with_zeros(x: np.ndarray, zeros_per_row: list[int]) -> np.ndarray:
    """x (2-D) with the given number of zeros placed in each row."""
    x = x.copy()
    for row, k in enumerate(zeros_per_row):
        x[row, _rng.choice(x.shape[1], k, replace=False)] = 0.0
    return x


# ---- the finite-difference cases: (op whose rule it checks, id, f, arrays, tolerances) -----------

CASES: list = []


def case(op: Op, name: str, f: Callable, *arrays: np.ndarray, xfail: str = "", **tolerances) -> None:
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    CASES.append(pytest.param(op, f, arrays, tolerances, id=f"{op.name.lower()}-{name}", marks=marks))


# unary elementwise
case(Op.NEG, "operator", lambda x: -x, normal(3, 4))
case(Op.ABS, "function", lt.abs, away_from_zero(3, 4))
case(Op.ABS, "builtin-0d", lambda x: abs(x), away_from_zero())
case(Op.SQRT, "method", lambda x: x.sqrt(), uniform(0.3, 3.0, 2, 3))
case(Op.EXP, "method", lambda x: x.exp(), normal(2, 1, 3))
case(Op.EXP, "0d", lt.exp, normal())
case(Op.EXP, "zero-size", lt.exp, normal(0, 3))
case(Op.LOG, "function", lt.log, uniform(0.3, 3.0, 4, 3))
case(Op.SIN, "function", lt.sin, normal(3, 4))
case(Op.COS, "method", lambda x: x.cos(), normal(3, 4))
case(Op.TANH, "function", lt.tanh, normal(1, 5))
case(Op.ERF, "function", lt.erf, normal(3, 4))
case(Op.TAN, "function", lt.tan, uniform(-1.2, 1.2, 3, 4))
case(Op.ASIN, "function", lt.asin, uniform(-0.9, 0.9, 3, 4))
case(Op.ACOS, "function", lt.acos, uniform(-0.9, 0.9, 3, 4))
case(Op.ATAN, "function", lt.atan, normal(3, 4))
case(Op.SINH, "function", lt.sinh, normal(3, 4))
case(Op.COSH, "function", lt.cosh, normal(3, 4))
case(Op.ASINH, "function", lt.asinh, normal(3, 4))
case(Op.ACOSH, "function", lt.acosh, uniform(1.2, 3.0, 3, 4))
case(Op.ATANH, "function", lt.atanh, uniform(-0.9, 0.9, 3, 4))
case(Op.EXPM1, "function", lt.expm1, normal(3, 4))
case(Op.LOG1P, "function", lt.log1p, uniform(-0.7, 3.0, 3, 4))
case(Op.LOG2, "function", lt.log2, uniform(0.3, 3.0, 3, 4))
case(Op.LOG10, "function", lt.log10, uniform(0.3, 3.0, 3, 4))
case(Op.FLOOR, "zero-gradient", lt.floor, between_integers(3, 4))
case(Op.CEIL, "zero-gradient", lt.ceil, between_integers(3, 4))
case(Op.TRUNC, "zero-gradient", lt.trunc, between_integers(3, 4))
case(Op.ROUND, "zero-gradient", lt.round, between_integers(3, 4))
# a float64 leaf through float32 and back: finite differences see float32 rounding, so a big step
case(Op.CAST, "float64-to-float32", lambda x: x.astype(lt.float32) * 2, normal(3, 4), eps=1e-2, rtol=1e-4, atol=1e-5)
case(Op.CAST, "float32-to-float64", lambda x: x.astype(lt.float64).exp(), normal(3, 4).astype(np.float32),
     eps=1e-3, rtol=1e-4, atol=1e-5)
case(Op.CAST, "float32-promoted-by-float64", lambda a, b: a * b, normal(3, 1).astype(np.float32), normal(4),
     eps=1e-3, rtol=1e-4, atol=1e-5)
case(Op.CAST, "float-to-int-takes-none", lambda x: x * x.astype(lt.int64), between_integers(3, 4))

# binary elementwise, with broadcasting, scalars on either side and 0-d operands
case(Op.ADD, "broadcast", lambda a, b: a + b, normal(3, 1, 4), normal(5, 1))
case(Op.ADD, "0d-and-vector", lt.add, normal(), normal(3))
case(Op.ADD, "zero-size-broadcast", lambda a, b: a + b, normal(0, 1), normal(1, 3))
case(Op.SUB, "broadcast", lambda a, b: a - b, normal(3, 1, 4), normal(5, 1))
case(Op.SUB, "scalar-left", lambda x: 1.5 - x, normal(2, 3))
case(Op.MUL, "broadcast", lambda a, b: a * b, normal(2, 3), normal(3))
case(Op.MUL, "0d", lambda a, b: a * b, normal(), normal())
case(Op.DIV, "broadcast", lambda a, b: a / b, normal(4, 1), away_from_zero(1, 3))
case(Op.DIV, "scalar-left", lambda x: 2.0 / x, away_from_zero(2, 3))
case(Op.DIV, "reciprocal", lt.reciprocal, away_from_zero(5))


def quotients(shape_x, shape_y):
    """(x, y) with x / y at least 0.15 from an integer: away from the jumps of // and %."""
    y = away_from_zero(*shape_y, low=0.5)
    return between_integers(*np.broadcast_shapes(shape_x, shape_y)) * y, y


case(Op.FLOORDIV, "zero-gradient", lambda a, b: a // b, *quotients((3, 4), (3, 4)))
case(Op.MOD, "broadcast", lambda a, b: a % b, *quotients((3, 4), (4,)))
case(Op.MOD, "scalar-divisor", lambda x: lt.remainder(x, 2.5), between_integers(3, 4) * 2.5)
case(Op.POW, "tensor-exponent", lambda a, b: a ** b, uniform(0.5, 2.0, 3, 1), normal(1, 4))
case(Op.POW, "cube-negative-base", lambda x: x ** 3, normal(3, 4))
case(Op.POW, "square-with-zero-base", lambda x: x ** 2, np.array([0.0, -1.5, 2.0]))
case(Op.POW, "sqrt", lambda x: x ** 0.5, uniform(0.3, 3.0, 3, 4))
case(Op.POW, "negative-exponent", lambda x: lt.pow(x, -2), away_from_zero(3, 4))
case(Op.POW, "zero-exponent", lambda x: x ** 0, normal(3, 4))
case(Op.POW, "scalar-base", lambda x: 2.0 ** x, normal(3, 4))
case(Op.POW, "zero-base-tensor-exponent", lambda y: on(y, [0.0, 0.0, 1.5]) ** y, uniform(1.5, 3.0, 3))
# distinct(3, 1, 4) lies within 0.15 of the multiples of 0.5 (less 3); these are 0.25 off them
case(Op.MAX, "broadcast", lt.maximum, distinct(3, 1, 4), _rng.integers(0, 12, (5, 1)) * 0.5 - 2.75)
case(Op.MAX, "scalar", lambda x: x.maximum(0.1), away_from_zero(3, 4) + 0.1)
_x = normal(3, 1, 4)
case(Op.MIN, "same-shape", lt.minimum, _x, separated(_x, 3, 1, 4))
case(Op.MIN, "scalar", lambda x: lt.minimum(x, -0.2), away_from_zero(3, 4) - 0.2)
case(Op.ATAN2, "broadcast", lt.atan2, away_from_zero(3, 1), normal(1, 4))
case(Op.HYPOT, "broadcast", lt.hypot, normal(3, 1), away_from_zero(1, 4))
case(Op.COPYSIGN, "broadcast", lt.copysign, away_from_zero(3, 4), away_from_zero(4))
_mask = _rng.random((3, 5, 4)) < 0.5
case(Op.WHERE, "broadcast", lambda a, b: lt.where(on(a, _mask), a, b), normal(3, 1, 4), normal(5, 1))
case(Op.WHERE, "condition-from-x", lambda x, y: lt.where(x > 0, x * 2, y), away_from_zero(3, 4), normal(3, 4))
case(Op.WHERE, "scalar-branch", lambda x: lt.where(on(x, [True, False, True]), x, 0.5), normal(2, 3))

# reductions
case(Op.SUM, "all", lambda x: x.sum(), normal(3, 4))
case(Op.SUM, "axis", lambda x: x.sum(axis=1), normal(3, 4))
case(Op.SUM, "axes-keepdims", lambda x: lt.sum(x, axis=(0, 2), keepdims=True), normal(2, 3, 4))
case(Op.SUM, "negative-axis", lambda x: x.sum(axis=-1), normal(2, 1, 3))
case(Op.SUM, "0d", lambda x: x.sum(), normal())
case(Op.SUM, "empty-axis", lambda x: x.sum(axis=1), normal(2, 0))
case(Op.SUM, "all-of-zero-size", lambda x: x.sum(), normal(0, 3))
case(Op.PROD, "axis", lambda x: x.prod(axis=1), uniform(0.5, 1.5, 3, 4))
case(Op.PROD, "all", lt.prod, normal(2, 3))
case(Op.PROD, "one-zero-in-a-row", lambda x: x.prod(axis=1), with_zeros(normal(3, 4), [1, 0, 1]))
case(Op.PROD, "two-zeros-in-a-row", lambda x: x.prod(axis=1), with_zeros(normal(3, 4), [2, 1, 0]))
case(Op.PROD, "zeros-keepdims", lambda x: x.prod(axis=0, keepdims=True), with_zeros(normal(4, 3), [1, 1, 0, 0]))
case(Op.PROD, "empty-axis", lambda x: x.prod(axis=1), normal(2, 0))
case(Op.REDUCE_MAX, "axis", lambda x: x.max(axis=1), distinct(3, 4))
case(Op.REDUCE_MAX, "all", lt.max, distinct(2, 3, 2))
case(Op.REDUCE_MAX, "keepdims", lambda x: x.max(axis=0, keepdims=True), distinct(3, 4))
case(Op.REDUCE_MIN, "axis", lambda x: lt.min(x, axis=-1), distinct(3, 4))
case(Op.REDUCE_MIN, "all", lambda x: x.min(), distinct(4, 3))
case(Op.REDUCE_MAX, "zero-size-rows", lambda x: x.max(axis=1), normal(0, 3))

# movement
_column = normal(4, 1)
case(Op.RESHAPE, "method", lambda x: x.reshape(4, 3) * on(x, _column), normal(2, 6))
case(Op.RESHAPE, "flatten-squeeze-expand-dims", lambda x: lt.expand_dims(x.squeeze(), 0).flatten(), normal(3, 1, 2))
case(Op.PERMUTE, "transpose", lambda x: x.transpose(), normal(3, 4))
case(Op.PERMUTE, "permute", lambda x: x.permute(2, 0, 1), normal(2, 3, 4))
case(Op.PERMUTE, "mT-then-broadcast", lambda x: x.mT * on(x, _column[:3]), normal(2, 4, 3))
case(Op.PERMUTE, "moveaxis", lambda x: lt.moveaxis(x, 0, -1), normal(2, 3, 4))
case(Op.EXPAND, "broadcast_to", lambda x: lt.broadcast_to(x, (2, 3, 4)), normal(3, 1))
case(Op.EXPAND, "expand", lambda x: x.expand(5, -1, 2), normal(3, 1))
case(Op.SHRINK, "negative-and-big-steps", lambda x: x[::-2, 1:4:3], normal(5, 6))
case(Op.SHRINK, "inner-slices", lambda x: x[1:-1, ::3], normal(4, 7))
case(Op.SHRINK, "integer-index", lambda x: x[-1], normal(3, 4))
case(Op.SHRINK, "reverse-ellipsis", lambda x: x[..., ::-1], normal(2, 3, 4))
case(Op.SHRINK, "backward-steps", lambda x: x[3:0:-2, 4:0:-3], normal(5, 6))
case(Op.SHRINK, "step-past-the-end", lambda x: x[1::4], normal(7, 2))
case(Op.SHRINK, "empty-slice", lambda x: x[1:1], normal(3, 4))
case(Op.PAD, "method", lambda x: x.pad(((1, 2), (0, 3))), normal(2, 3))
case(Op.PAD, "function", lambda x: lt.pad(x, 1), normal(3))
case(Op.PAD, "with-value", lambda x: x.pad(1, value=2.5), normal(2, 2))
case(Op.FLIP, "one-axis", lambda x: lt.flip(x, axis=0), normal(3, 4))
case(Op.FLIP, "all-axes", lambda x: x.flip(), normal(2, 3, 2))
case(Op.FLIP, "two-axes", lambda x: lt.flip(x, axis=(0, 2)), normal(2, 3, 2))

# data-dependent indexing, sorting, cumulative sums
case(Op.GATHER, "take-flat-negative-repeated", lambda x: lt.take(x, on(x, [0, -1, 5, 0, 0, -12])), normal(3, 4))
case(Op.GATHER, "take-axis-2d-index", lambda x: lt.take(x, on(x, [[1, -1], [1, 1]]), axis=1), normal(3, 4))
case(Op.GATHER, "take-out-of-range-clamps", lambda x: lt.take(x, on(x, [7, -9, 2]), axis=0), normal(4, 2))
case(Op.GATHER, "take-empty-index", lambda x: lt.take(x, on(x, np.zeros(0, np.int64)), axis=0), normal(4, 2))
case(Op.GATHER, "take_along_axis-last", lambda x: lt.take_along_axis(x, on(x, [[0, -1, 0], [2, 2, 1], [3, 0, 0]]), -1),
     normal(3, 4))
case(Op.GATHER, "take_along_axis-first-broadcast", lambda x: lt.take_along_axis(x, on(x, [[2, 0, -1]]), 0),
     normal(3, 3))
case(Op.GATHER, "integer-array-index", lambda x: x[on(x, [2, 0, 2, -1])], normal(3, 2))
case(Op.GATHER, "boolean-mask", lambda x: x[:, on(x, [True, False, True, True])], normal(2, 4))
case(Op.GATHER, "two-arrays-broadcast-repeated", lambda x: x[on(x, [[0], [2], [0]]), on(x, [1, -1, 1])], normal(3, 4))
case(Op.GATHER, "arrays-separated-by-a-slice", lambda x: x[[1, 0, 1], :, [2, 2, 0]], normal(2, 3, 4))
case(Op.GATHER, "lazy-arrays-out-of-range-clamp", lambda x: x[on(x, [5, -1]), on(x, [0, -9])], normal(3, 4))
case(Op.GATHER, "mask-and-array", lambda x: x[on(x, [True, False, True]), 1:, [0, 2]], normal(3, 3, 3))
case(Op.SCATTER_ADD, "index_add-repeated", lambda x, v: lt.index_add(x, on(x, [2, 0, 2, 2]), v), normal(3, 2),
     normal(4, 2))
case(Op.SCATTER_ADD, "index_add-axis-2d-index", lambda x, v: lt.index_add(x, on(x, [[1, -1], [1, 0]]), v, axis=1),
     normal(2, 3), normal(2, 2, 2))
case(Op.SCATTER_ADD, "index_add-broadcast-values", lambda v: lt.index_add(lt.zeros((4, 3), dtype=lt.float64),
                                                                             [3, 3, 1], v), normal(3))
case(Op.SORT, "last-axis", lt.sort, distinct(3, 4))
case(Op.SORT, "first-axis-descending", lambda x: lt.sort(x, axis=0, descending=True), distinct(4, 3))
case(Op.SORT, "1d", lt.sort, distinct(6))
case(Op.SORT, "size-1-axis", lambda x: lt.sort(x, axis=1), normal(3, 1))
case(Op.SORT, "zero-size", lambda x: lt.sort(x, axis=1), normal(0, 3))
case(Op.CUMSUM, "1d", lt.cumulative_sum, normal(5))
case(Op.CUMSUM, "axis-0", lambda x: lt.cumulative_sum(x, axis=0), normal(3, 4))
case(Op.CUMSUM, "include-initial", lambda x: lt.cumulative_sum(x, axis=1, include_initial=True), normal(3, 4))
case(Op.CUMSUM, "include-initial-zero-size-axis", lambda x: lt.cumulative_sum(x, axis=0, include_initial=True),
     normal(0, 3))
case(Op.CUMSUM, "zero-size-rows", lambda x: lt.cumulative_sum(x, axis=1), normal(0, 3))

# composite functions, built from the ops above
case(Op.SUM, "matmul-2d", lambda a, b: a @ b, normal(3, 4), normal(4, 2))
case(Op.SUM, "matmul-vector-matrix", lt.matmul, normal(4), normal(4, 2))
case(Op.SUM, "matmul-matrix-vector", lt.matmul, normal(3, 4), normal(4))
case(Op.SUM, "matmul-vector-vector", lt.matmul, normal(4), normal(4))
case(Op.SUM, "matmul-batched-broadcast", lambda a, b: a @ b, normal(2, 1, 3, 4), normal(3, 4, 2))
case(Op.SUM, "matmul-empty-inner", lambda a, b: a @ b, normal(2, 0), normal(0, 3))
case(Op.SUM, "mean", lambda x: x.mean(axis=0), normal(3, 4))
case(Op.SUM, "var-corrected", lambda x: lt.var(x, axis=1, correction=1), normal(3, 4))
case(Op.SQRT, "std", lambda x: x.std(axis=(0, 2)), normal(2, 3, 4))
case(Op.LOG1P, "logaddexp", lt.logaddexp, normal(3, 1), normal(4) + 0.05)
case(Op.MAX, "clip-scalars", lambda x: lt.clip(x, -0.5, 0.5), distinct(4, 5) * 0.5 + 0.11)
# distinct(3, 4) lies within 0.15 of the multiples of 0.5 (less 3): the bounds keep 0.05 off them
case(Op.MIN, "clip-tensors", lambda x, lo, hi: lt.clip(x, lo, hi), distinct(3, 4), uniform(-1.3, -1.2, 4),
     uniform(1.2, 1.3, 3, 1))
case(Op.MUL, "square", lt.square, normal(3, 4))
case(Op.WHERE, "sign-zero-gradient", lambda x: lt.sign(x) * 3, away_from_zero(3, 4))
case(Op.PAD, "concatenate", lambda a, b: lt.concatenate([a, b, a], axis=1), normal(2, 3), normal(2, 1))
case(Op.RESHAPE, "stack", lambda a, b: lt.stack([a, b], axis=1), normal(2, 3), normal(2, 3))
case(Op.SHRINK, "roll", lambda x: lt.roll(x, 2, axis=1), normal(3, 4))
case(Op.EXPAND, "tile", lambda x: lt.tile(x, (2, 3)), normal(2, 2))
case(Op.EXPAND, "repeat", lambda x: lt.repeat(x, 3, axis=0), normal(2, 2))
case(Op.WHERE, "tril", lambda x: lt.tril(x, 1), normal(4, 4))
case(Op.SUB, "diff", lambda x: lt.diff(x, axis=0, n=2), normal(5, 3))
case(Op.SUM, "tensordot", lambda a, b: lt.tensordot(a, b, axes=([1, 2], [0, 1])), normal(2, 3, 4), normal(3, 4, 2))
case(Op.SUM, "vecdot", lambda a, b: lt.vecdot(a, b), normal(3, 4), normal(4))
# the linalg extension's opaque steps (every routine is checked in tests/test_linalg.py); a
# generator of their own, so the inputs above stay what they were
_linalg_rng = np.random.default_rng(20250101)
case(Op.LINALG, "inv-batched", lt.linalg.inv, _linalg_rng.standard_normal((2, 3, 3)) + 3 * np.eye(3))
case(Op.LINALG, "solve-vector", lt.linalg.solve, _linalg_rng.standard_normal((3, 3)) + 3 * np.eye(3),
     _linalg_rng.standard_normal(3))
case(Op.LINALG, "svdvals-tall", lt.linalg.svdvals, _linalg_rng.standard_normal((4, 3)))


# complex values (PyTorch's convention, see gradcheck.py): each rule that complex values pass
# through, inputs inside every function's domain (right half plane, off the real axis: no branch cut)
def complex_domain(*shape: int) -> np.ndarray:
    """re in [0.3, 1.2], |im| in [0.2, 0.8]: away from every branch cut and from 0."""
    return _rng.uniform(0.3, 1.2, shape) + 1j * _rng.choice([-1.0, 1.0], shape) * _rng.uniform(0.2, 0.8, shape)


def cnormal(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)


_COMPLEX_UNARY = {
    Op.NEG: lt.negative, Op.ABS: lt.abs, Op.SQRT: lt.sqrt, Op.EXP: lt.exp, Op.LOG: lt.log, Op.SIN: lt.sin,
    Op.COS: lt.cos, Op.TANH: lt.tanh, Op.TAN: lt.tan, Op.ASIN: lt.asin, Op.ACOS: lt.acos, Op.ATAN: lt.atan,
    Op.SINH: lt.sinh, Op.COSH: lt.cosh, Op.ASINH: lt.asinh, Op.ACOSH: lt.acosh, Op.ATANH: lt.atanh,
    Op.EXPM1: lt.expm1, Op.LOG1P: lt.log1p, Op.LOG2: lt.log2, Op.LOG10: lt.log10,
}
for _op, _f in _COMPLEX_UNARY.items():
    case(_op, "complex", _f, complex_domain(2, 3))
case(Op.ABS, "complex-with-zero", lt.abs, np.array([0j, 1 - 2j, 3j]))   # (0 at 0, as PyTorch's sgn)
case(Op.ADD, "complex-broadcast", lambda a, b: a + b, cnormal(3, 1), cnormal(4))
case(Op.SUB, "complex-scalar", lambda x: (1 - 2j) - x, cnormal(2, 3))
case(Op.MUL, "complex-broadcast", lambda a, b: a * b, cnormal(2, 3), cnormal(3))
case(Op.MUL, "complex-times-real", lambda a, b: a * b, cnormal(2, 3), normal(2, 3))
case(Op.DIV, "complex-broadcast", lambda a, b: a / b, cnormal(4, 1), complex_domain(3))
case(Op.POW, "complex", lambda a, b: a ** b, complex_domain(2, 3), cnormal(2, 3) * 0.5)
# 0 ** y is 0 near any y with a positive real part: no gradient (PyTorch gives nan there)
case(Op.POW, "complex-zero-base", lambda y: on(y, [0j, 0j, 2 + 1j]) ** y, np.array([1 + 1j, 0.5 - 2j, 0.3 + 0.2j]))
case(Op.CAST, "complex64-to-complex128", lambda x: x.astype(lt.complex128) * (1 + 1j),
     cnormal(3).astype(np.complex64), eps=1e-3, rtol=1e-4, atol=1e-5)
case(Op.CAST, "float-to-complex", lambda x: lt.exp(x.astype(lt.complex128) * 1j), normal(3, 2))
case(Op.REAL, "function", lambda x: lt.real(x) * lt.imag(x * x), cnormal(2, 3))
case(Op.IMAG, "function", lambda x: lt.imag(x) ** 2, cnormal(2, 3))
case(Op.COMPLEX, "conj", lambda x: lt.conj(x) * x + lt.conj(x), cnormal(2, 3))
case(Op.WHERE, "complex", lambda a, b: lt.where(lt.real(a) > 0, a, b), cnormal(3, 4), cnormal(4))
case(Op.SUM, "complex-axis", lambda x: x.sum(axis=1), cnormal(3, 4))
case(Op.PROD, "complex-with-zero", lambda x: x.prod(axis=1), with_zeros(cnormal(3, 4), [0, 1, 2]))
case(Op.EXPAND, "complex-matmul", lt.matmul, cnormal(2, 3, 4), cnormal(4, 2))
case(Op.SHRINK, "complex-slices-and-pad", lambda x: x[::-2, 1:].pad(((1, 0), (0, 2))), cnormal(5, 4))
case(Op.GATHER, "complex-take", lambda x: lt.take(x, on(x, [2, 0, 2])), cnormal(4))
case(Op.CUMSUM, "complex", lambda x: lt.cumulative_sum(x, axis=0), cnormal(4, 2))

# the fft extension: every transform, every norm, with n / s cropping and padding
for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    for _norm, _n in (("backward", None), ("ortho", 3), ("forward", 8)):
        _input = normal(2, 5) if _name in ("rfft", "ihfft") else cnormal(2, 5)
        case(Op.FFT, f"{_name}-{_norm}-n={_n}",
             lambda x, name=_name, n=_n, norm=_norm: getattr(lt.fft, name)(x, n=n, norm=norm), _input)
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    for _s in (None, (3, 6)):
        _input = normal(2, 4, 5) if _name == "rfftn" else cnormal(2, 4, 5)
        case(Op.FFT, f"{_name}-s={_s}",
             lambda x, name=_name, s=_s: getattr(lt.fft, name)(x, s=s, axes=(0, 2) if s else None), _input)
case(Op.FFT, "float32", lambda x: lt.fft.rfft(x), normal(6).astype(np.float32), eps=1e-2, rtol=1e-4, atol=1e-4)
case(Op.FFT, "fftshift", lambda x: lt.fft.fftshift(lt.fft.fft(x)), cnormal(5))

def test_every_op_has_a_gradient_rule():
    ops = ELEMENTWISE | MOVEMENT | REDUCTION | INDEXING | OPAQUE | GRAPH_ONLY
    missing = sorted(op.name for op in ops if op not in GRADIENT_RULES)
    assert not missing, f"ops without an entry in GRADIENT_RULES (use None where no gradient flows): {missing}"


def test_every_differentiable_op_has_a_finite_difference_case():
    differentiable = {op for op, rule in GRADIENT_RULES.items() if rule is not None}
    checked = {param.values[0] for param in CASES}
    missing = sorted(op.name for op in differentiable - checked)
    assert not missing, f"differentiable ops with no finite-difference case in this file: {missing}"


@pytest.mark.parametrize("op, f, arrays, tolerances", CASES)
def test_gradient_matches_finite_differences(op, f, arrays, tolerances):
    check_gradient(f, *arrays, op=op, **tolerances)


def random_broadcast_shapes(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast together: up to 3 axes each (0-d too), sizes 1-3, 1s on either side."""
    full = tuple(int(n) for n in rng.integers(1, 4, rng.integers(0, 4)))
    def operand():
        kept = full[len(full) - rng.integers(0, len(full) + 1):]
        return tuple(1 if rng.random() < 0.3 else n for n in kept)
    return operand(), operand()


@pytest.mark.parametrize("seed", range(6))
def test_gradient_with_random_broadcast_shapes(seed):
    rng = np.random.default_rng(seed)
    shape_a, shape_b = random_broadcast_shapes(rng)
    f = lambda a, b: a * b + a.exp() / (1 + b * b) - lt.tanh(b)  # noqa: E731
    check_gradient(f, rng.standard_normal(shape_a), rng.standard_normal(shape_b))


# ---- piecewise-constant ops: zero gradient, not no gradient --------------------------------------

@pytest.mark.parametrize("f", [lt.floor, lt.ceil, lt.trunc, lt.round, lambda x: x // 0.7, lt.sign],
                         ids=["floor", "ceil", "trunc", "round", "floor_divide", "sign"])
def test_piecewise_constant_ops_give_zero_gradient(f):
    x = lt.asarray(between_integers(3, 4), requires_grad=True)
    (f(x) * 2).sum().backward()
    assert x.grad is not None, "the leaf gets a gradient (of zeros), as in PyTorch"
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4)))


# ---- against PyTorch -----------------------------------------------------------------------------

def _ties(shape) -> np.ndarray:
    """Small integers as floats: many exact ties."""
    return _rng.integers(-2, 3, shape).astype(np.float64)


TORCH_CASES = [
    # id, lazytensor f, torch f (given the torch module first), inputs
    ("exp", lt.exp, lambda t, x: t.exp(x), [normal(3, 4)]),
    ("log", lt.log, lambda t, x: t.log(x), [uniform(0.3, 3, 3, 4)]),
    ("sqrt", lt.sqrt, lambda t, x: t.sqrt(x), [uniform(0.3, 3, 3, 4)]),
    ("tanh", lt.tanh, lambda t, x: t.tanh(x), [normal(3, 4)]),
    ("abs-with-zero", lt.abs, lambda t, x: t.abs(x), [np.array([-1.0, 0.0, 2.0])]),
    ("atanh", lt.atanh, lambda t, x: t.atanh(x), [uniform(-0.9, 0.9, 5)]),
    ("log1p", lt.log1p, lambda t, x: t.log1p(x), [uniform(-0.5, 2, 5)]),
    ("floor", lt.floor, lambda t, x: t.floor(x), [between_integers(5)]),
    ("round", lt.round, lambda t, x: t.round(x), [between_integers(5)]),
    ("add-broadcast", lt.add, lambda t, a, b: a + b, [normal(3, 1, 4), normal(5, 1)]),
    ("mul-broadcast", lt.multiply, lambda t, a, b: a * b, [normal(2, 3), normal(3)]),
    ("div", lt.divide, lambda t, a, b: a / b, [normal(2, 3), away_from_zero(2, 3)]),
    ("pow-tensor", lt.pow, lambda t, a, b: a ** b, [uniform(0.5, 2, 3, 4), normal(3, 4)]),
    ("pow-zero-base", lt.pow, lambda t, a, b: a ** b, [np.array([0.0, 0.0, 0.0, 2.0]), np.array([0.0, 1.0, 2.5, 0.0])]),
    ("pow-scalar", lambda x: x ** 3, lambda t, x: x ** 3, [normal(3, 4)]),
    ("remainder", lt.remainder, lambda t, a, b: t.remainder(a, b), list(quotients((3, 4), (3, 4)))),
    ("atan2", lt.atan2, lambda t, a, b: t.atan2(a, b), [normal(3, 4), normal(3, 4)]),
    ("hypot", lt.hypot, lambda t, a, b: t.hypot(a, b), [normal(3, 4), normal(3, 4)]),
    ("copysign", lt.copysign, lambda t, a, b: t.copysign(a, b), [away_from_zero(3, 4), away_from_zero(3, 4)]),
    ("maximum-ties", lt.maximum, lambda t, a, b: t.maximum(a, b), [_ties((4, 5)), _ties((4, 5))]),
    ("minimum-ties", lt.minimum, lambda t, a, b: t.minimum(a, b), [_ties((4, 5)), _ties((5,))]),
    ("where", lambda a, b: lt.where(a > b, a, b), lambda t, a, b: t.where(a > b, a, b), [normal(3, 4), normal(4)]),
    ("logaddexp", lt.logaddexp, lambda t, a, b: t.logaddexp(a, b), [normal(3, 4), normal(3, 4)]),
    ("sum-axes", lambda x: x.sum(axis=(0, 2)), lambda t, x: x.sum(dim=(0, 2)), [normal(2, 3, 4)]),
    ("mean", lambda x: x.mean(axis=1), lambda t, x: x.mean(dim=1), [normal(3, 4)]),
    ("var-corrected", lambda x: x.var(axis=0, correction=1), lambda t, x: x.var(dim=0, correction=1), [normal(4, 3)]),
    ("std", lambda x: x.std(), lambda t, x: x.std(correction=0), [normal(3, 4)]),
    ("prod-zeros", lambda x: x.prod(axis=1), lambda t, x: x.prod(dim=1), [with_zeros(normal(4, 4), [0, 1, 2, 3])]),
    ("max-axis-ties", lambda x: x.max(axis=1), lambda t, x: t.amax(x, dim=1), [_ties((4, 6))]),
    ("min-axis-ties", lambda x: x.min(axis=0, keepdims=True), lambda t, x: t.amin(x, dim=0, keepdim=True),
     [_ties((6, 3))]),
    ("max-all-ties", lambda x: x.max(), lambda t, x: t.amax(x), [np.array([[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]])]),
    ("permute", lambda x: x.permute(2, 0, 1), lambda t, x: x.permute(2, 0, 1), [normal(2, 3, 4)]),
    ("reshape", lambda x: x.reshape(6, 2), lambda t, x: x.reshape(6, 2), [normal(3, 4)]),
    ("expand", lambda x: x.expand(2, 3, 4), lambda t, x: x.expand(2, 3, 4), [normal(3, 1)]),
    ("slice-steps", lambda x: x[1::2, ::3], lambda t, x: x[1::2, ::3], [normal(5, 7)]),
    ("flip", lambda x: lt.flip(x, axis=1), lambda t, x: t.flip(x, dims=(1,)), [normal(3, 4)]),
    ("pad", lambda x: x.pad(((1, 0), (2, 1))), lambda t, x: t.nn.functional.pad(x, (2, 1, 1, 0)), [normal(2, 3)]),
    ("take-flat", lambda x: lt.take(x, on(x, [0, -1, 3, 0])), lambda t, x: x.flatten()[[0, -1, 3, 0]], [normal(2, 3)]),
    ("take_along_axis", lambda x: lt.take_along_axis(x, on(x, [[0, 2], [1, 1]]), 1),
     lambda t, x: t.take_along_dim(x, t.tensor([[0, 2], [1, 1]]), 1), [normal(2, 3)]),
    ("sort", lambda x: lt.sort(x, axis=0), lambda t, x: t.sort(x, dim=0).values, [distinct(4, 3)]),
    ("sort-ties-stable", lambda x: lt.sort(x, axis=1), lambda t, x: t.sort(x, dim=1, stable=True).values,
     [_ties((3, 6))]),
    ("logaddexp-ties", lt.logaddexp, lambda t, a, b: t.logaddexp(a, b), [_ties((3, 4)), _ties((3, 4))]),
    ("cumsum", lambda x: lt.cumulative_sum(x, axis=1), lambda t, x: t.cumsum(x, dim=1), [normal(3, 4)]),
    ("matmul-2d", lt.matmul, lambda t, a, b: a @ b, [normal(3, 4), normal(4, 5)]),
    ("matmul-vectors", lt.matmul, lambda t, a, b: a @ b, [normal(4), normal(4)]),
    ("matmul-batched-broadcast", lt.matmul, lambda t, a, b: a @ b, [normal(2, 1, 3, 4), normal(5, 4, 2)]),
    # complex values: the same convention as PyTorch's
    ("complex-mul-div", lambda a, b: a * b / (b + 2), lambda t, a, b: a * b / (b + 2), [cnormal(3, 4), cnormal(4)]),
    ("complex-abs-with-zero", lt.abs, lambda t, x: x.abs(), [np.array([0j, 3 - 4j, 1j])]),
    ("complex-sqrt-log", lambda x: lt.sqrt(x) + lt.log(x), lambda t, x: x.sqrt() + x.log(), [complex_domain(3, 4)]),
    ("complex-pow", lt.pow, lambda t, a, b: a ** b, [complex_domain(3, 4), cnormal(3, 4)]),
    ("complex-matmul", lt.matmul, lambda t, a, b: a @ b, [cnormal(2, 3, 4), cnormal(4, 2)]),
    ("complex-real-imag-conj", lambda x: lt.real(x) * lt.imag(x) + lt.conj(x),
     lambda t, x: x.real * x.imag + x.conj(), [cnormal(3, 4)]),
    ("complex-prod", lambda x: x.prod(axis=0), lambda t, x: x.prod(dim=0), [with_zeros(cnormal(4, 4), [0, 1, 2, 0])]),
    ("fft-ortho-n", lambda x: lt.fft.fft(x, n=7, norm="ortho"), lambda t, x: t.fft.fft(x, n=7, norm="ortho"),
     [cnormal(3, 5)]),
    ("irfft-rfft", lambda x: lt.fft.irfft(lt.fft.rfft(x) * lt.fft.rfft(x), n=6),
     lambda t, x: t.fft.irfft(t.fft.rfft(x) * t.fft.rfft(x), n=6), [normal(2, 6)]),
    ("hfft-ihfft", lambda x: lt.fft.hfft(x, n=5) + lt.abs(lt.fft.ihfft(lt.fft.hfft(x, n=5))).sum(),
     lambda t, x: t.fft.hfft(x, n=5) + t.fft.ihfft(t.fft.hfft(x, n=5)).abs().sum(), [cnormal(4)]),
    ("rfftn-irfftn", lambda x: lt.fft.irfftn(lt.fft.rfftn(x, s=(3, 4)) * 2j, s=(3, 5)),
     lambda t, x: t.fft.irfftn(t.fft.rfftn(x, s=(3, 4)) * 2j, s=(3, 5)), [normal(2, 3, 5)]),
]


@pytest.mark.parametrize("lt_f, torch_f, arrays", [pytest.param(*c[1:], id=c[0]) for c in TORCH_CASES])
def test_gradient_matches_torch(lt_f, torch_f, arrays):
    torch = pytest.importorskip("torch")
    leaves = [lt.asarray(a, requires_grad=True) for a in arrays]
    out = lt_f(*leaves)
    weights = fixed_weights(out.shape, out.dtype)
    weighted_loss(out, weights).backward()

    torch_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    torch_out = torch_f(torch, *torch_leaves)
    assert tuple(torch_out.shape) == out.shape
    w = torch.tensor(weights)
    (torch_out.real * w.real + torch_out.imag * w.imag if torch_out.is_complex() else torch_out * w).sum().backward()
    for i, (leaf, torch_leaf) in enumerate(zip(leaves, torch_leaves)):
        want = torch_leaf.grad.resolve_conj().numpy() if torch_leaf.grad is not None else np.zeros(arrays[i].shape)
        assert leaf.grad is not None, f"input {i} got no gradient"
        np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=f"input {i}")


# ---- semantics -----------------------------------------------------------------------------------

def test_gradients_accumulate_until_reset():
    a = normal(3)
    x = lt.asarray(a, requires_grad=True)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * a)
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0))


def test_no_grad_results_carry_no_gradient_later():
    a = normal(4)
    x = lt.asarray(a, requires_grad=True)
    with lt.no_grad():
        y = x * 2
        assert not lt.is_grad_enabled()
    assert lt.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    loss = (y * x).sum()          # outside no_grad: only the direct path to x counts
    assert loss.requires_grad
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)


def test_no_grad_as_decorator_and_enable_grad_inside():
    x = lt.asarray(normal(3), requires_grad=True)

    @lt.no_grad()
    def evaluate(t):
        with lt.enable_grad():
            inner = t * 2
        return t * 2, inner

    outer, inner = evaluate(x)
    assert not outer.requires_grad
    assert inner.requires_grad


def test_detach_stops_the_gradient():
    a = normal(4)
    x = lt.asarray(a, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), a)
    (x * x.detach() + (x * 3).detach()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), a)


def test_grad_function():
    a, b = normal(3), normal(3)
    df = lt.grad(lambda x: (x * x).sum())
    np.testing.assert_allclose(df(lt.asarray(a)).numpy(), 2 * a)
    dfs = lt.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))
    dx, dy = dfs(lt.asarray(a), lt.asarray(b))
    np.testing.assert_allclose(dx.numpy(), b)
    np.testing.assert_allclose(dy.numpy(), a)
    x = lt.asarray(a, requires_grad=True)
    lt.grad(lambda t: (t * 5).sum())(x)
    assert x.grad is None, "lt.grad differentiates a detached copy, leaving the caller's .grad alone"
    with pytest.raises(RuntimeError, match="single value"):
        lt.grad(lambda t: t * 2)(lt.asarray(a))


def test_a_tensor_used_twice_sums_both_paths():
    a = uniform(0.5, 1.5, 3, 2)
    check_gradient(lambda x: x * x + lt.sin(x), a)
    check_gradient(lambda x: (lambda y: y * y + y.sum(axis=1, keepdims=True))(x.exp()), a)


def test_realized_intermediate_keeps_its_graph():
    a = normal(3)
    x = lt.asarray(a, requires_grad=True)
    y = (x * 2).realize()
    np.testing.assert_allclose(y.numpy(), 2 * a)
    assert y.requires_grad and not y.is_leaf
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * a)


def test_in_place_on_a_leaf_that_requires_grad():
    a = normal(3)
    x = lt.asarray(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        x += 1
    with pytest.raises(RuntimeError, match="no_grad"):
        x[0] = 5.0
    with lt.no_grad():
        x -= 0.5
        x[1:] = 2.0
    assert x.is_leaf and x.requires_grad
    want = np.array([a[0] - 0.5, 2.0, 2.0])
    np.testing.assert_allclose(x.numpy(), want)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * want)


def test_graph_built_before_an_in_place_update_of_its_leaf():
    x = lt.asarray(normal(3), requires_grad=True)
    loss = (x * x).sum()
    with lt.no_grad():
        x -= 0.1 * lt.ones(3, dtype=lt.float64)
    with pytest.raises(RuntimeError, match="in place"):
        loss.backward()


def test_in_place_add_on_a_non_leaf_carries_gradients():
    def f(x, y):
        z = x * 1.5
        z += y * y
        z *= x
        return z
    check_gradient(f, normal(3, 4), normal(4))


def test_setitem_on_a_non_leaf_carries_gradients():
    def f(x, v):
        z = x.exp()
        z[1:3] = v                # overwritten: no gradient to x there
        z[0, ::2] = v[0, 1] * 2   # a step > 1 takes the other (gather) path
        return z
    check_gradient(f, normal(4, 3), normal(2, 3))


def test_setitem_of_a_tracked_value_into_a_plain_tensor():
    def f(v):
        z = lt.zeros((3, 4), dtype=lt.float64, device=v.device)
        z[:, 1] = v
        return z * 2
    check_gradient(f, normal(3))


def test_requires_grad_on_an_integer_tensor_raises():
    with pytest.raises(RuntimeError, match="floating point"):
        lt.asarray([1, 2, 3], requires_grad=True)
    with pytest.raises(RuntimeError, match="int64"):
        lt.arange(3).requires_grad_()


def test_a_leaf_made_inside_no_grad_requires_grad():
    with lt.no_grad():
        w = lt.ones(3, dtype=lt.float64, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))


def test_integer_and_bool_results_do_not_require_grad():
    x = lt.asarray(normal(3), requires_grad=True)
    assert not (x > 0).requires_grad
    assert not x.argmax().requires_grad
    assert not x.astype(lt.int64).requires_grad


def test_backward_without_a_differentiable_path_raises():
    x = lt.asarray(normal(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="requires_grad"):
        lt.where(x > 0, 1.0, 2.0).sum().backward()


@pytest.mark.skipif(len(lt.devices()) < 2, reason="needs a second device")
def test_a_copy_to_another_device_refuses_to_cut_the_gradient():
    """Copies do not carry gradients yet: rather than silently losing it, .to() says so; detached
    values and copies under no_grad move freely."""
    x = lt.asarray(normal(3), requires_grad=True)
    other = lt.devices()[1]
    with pytest.raises(RuntimeError, match="gradient"):
        (x * 2).to(other)
    np.testing.assert_allclose((x * 2).detach().to(other).numpy(), 2 * x.numpy())
    with lt.no_grad():
        assert not x.to(other).requires_grad


def test_backward_through_a_deep_graph():
    x = lt.asarray(normal(3), requires_grad=True)
    t = x
    for _ in range(1000):
        t = t * 1.001 + 0.001
    t.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 1.001 ** 1000))


def test_requires_grad_false_on_a_leaf():
    x = lt.asarray(normal(3), requires_grad=True)
    x.requires_grad_(False)
    assert not x.requires_grad
    assert not (x * 2).requires_grad


def test_leaf_and_result_flags():
    x = lt.asarray(normal(3), requires_grad=True)
    y = x * 2
    assert x.is_leaf and x.requires_grad
    assert not y.is_leaf and y.requires_grad
    assert lt.asarray(normal(3)).is_leaf and not lt.asarray(normal(3)).requires_grad
    assert lt.ones(3, requires_grad=True).is_leaf


def test_backward_of_a_non_scalar_needs_a_gradient():
    x = lt.asarray(normal(2, 3), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\(2, 3\)"):
        (x * 2).backward()


def test_backward_with_an_explicit_gradient():
    a, g = normal(2, 3), normal(2, 3)
    x = lt.asarray(a, requires_grad=True)
    (x * x).backward(gradient=lt.asarray(g))
    np.testing.assert_allclose(x.grad.numpy(), 2 * a * g)
    x.grad = None
    (x * 3).backward(g)                     # an array-like works too
    np.testing.assert_allclose(x.grad.numpy(), 3 * g)
    with pytest.raises(RuntimeError, match="shape"):
        (x * 3).backward(lt.asarray(normal(3)))


def test_backward_on_a_tensor_that_needs_no_grad():
    with pytest.raises(RuntimeError, match="requires_grad"):
        (lt.asarray(normal(3)) * 2).sum().backward()


def test_backward_twice_without_retain_graph():
    x = lt.asarray(normal(3), requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()


def test_backward_of_a_leaf_itself():
    x = lt.asarray(np.float64(2.5), requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0


def test_nan_in_the_forward_shows_in_the_loss():
    x = lt.asarray(np.array([1.0, -1.0, 2.0]), requires_grad=True)
    loss = lt.log(x).sum()
    loss.backward()
    assert math.isnan(loss.item())
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.5])
    y = lt.asarray(np.array([1.0, np.nan]), requires_grad=True)
    loss = (y * 0).sum()                  # 0 * nan is nan: no folding may hide it
    loss.backward()
    assert math.isnan(loss.item())


def test_nan_gradient_is_not_hidden():
    x = lt.asarray(np.array([4.0, -1.0]), requires_grad=True)
    lt.sqrt(x).sum().backward()
    grad = x.grad.numpy()
    assert grad[0] == 0.25 and math.isnan(grad[1])


# ---- on every device -----------------------------------------------------------------------------

DEVICE_CASES = ["exp-method", "mul-broadcast", "div-broadcast", "max-broadcast", "prod-two-zeros-in-a-row",
                "reduce_max-axis", "shrink-negative-and-big-steps", "pad-method", "gather-take-axis-2d-index",
                "sort-first-axis-descending", "cumsum-include-initial", "sum-matmul-batched-broadcast"]


@pytest.mark.parametrize("op, f, arrays, tolerances", [c for c in CASES if c.id in DEVICE_CASES])
def test_gradient_on_device(device, op, f, arrays, tolerances):
    check_gradient(f, *arrays, op=op, device=device, **tolerances)


def test_accumulation_and_in_place_update_on_device(device):
    a = normal(2, 3)
    x = lt.asarray(a, device=device, requires_grad=True)
    loss = (x.exp() * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert x.grad.device == device
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(a) * (1 + a), rtol=1e-12)
    with lt.no_grad():
        x -= 0.1 * x.grad
    x.grad = None
    assert x.is_leaf and x.device == device
    (x * x.detach()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x.numpy(), rtol=1e-12)
