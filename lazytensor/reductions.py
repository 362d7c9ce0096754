"""Reductions: sum, prod, max, min, mean, var, std, all, any, argmax, argmin -- the Array
API's functions (x positional-only, options keyword-only, as the standard writes them) and the
Tensor methods of the same names (which also take axis positionally, PyTorch-style, and numpy's
dtype= and out=None, since numpy's functions call them).

(This module defines sum, max, min, any and all: its own code must not call the builtins of
those names.)
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .creation import arange
from .ir.arith import cast
from .ir.dtypes import DType, bool_, complex64, complex128, float16, float32, float64, int64, to_dtype, uint64
from .ir.graph import Node
from .ir.ops import Op
from .ir.rules import make
from .operands import as_tensor, normalize_axes, where
from .tensor import Tensor, attach_methods


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Sum over `axis` (an int, a tuple, or None for all). Signed integers and bool sum to
    int64, unsigned to uint64, floats keep their dtype; `dtype` casts `x` to it first and
    returns that dtype (numpy's `dtype=`).

    >>> lt.sum(lt.asarray([[1, 2], [3, 4]]), axis=0).tolist()
    [4, 6]
    >>> lt.sum(lt.asarray([100, 100], dtype=lt.int8), dtype=lt.int8).item()   # wraps, as numpy's
    -56
    """
    return as_tensor(x).sum(axis, keepdims, dtype=dtype)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Product over `axis`; integers and bool multiply in int64 (unsigned: uint64), floats keep
    their dtype; `dtype` casts `x` to it first (numpy's `dtype=`).

    >>> lt.prod(lt.asarray([2, 3, 4])).item()
    24
    >>> lt.prod(lt.asarray([0.5, 3.0]), dtype=lt.float64).dtype
    lazytensor.float64
    """
    return as_tensor(x).prod(axis, keepdims, dtype=dtype)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over `axis` (integers give float64, as numpy's).

    >>> lt.mean(lt.asarray([1.0, 2.0, 6.0])).item()
    3.0
    """
    return as_tensor(x).mean(axis, keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Maximum over `axis`; nan where any value is nan. Empty input raises ValueError.

    >>> lt.max(lt.asarray([[1, 5], [7, 3]]), axis=1).tolist()
    [5, 7]
    """
    return as_tensor(x).max(axis, keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Minimum over `axis`; nan where any value is nan. Empty input raises ValueError.

    >>> lt.min(lt.asarray([[1, 5], [7, 3]]), axis=1, keepdims=True).tolist()
    [[1], [3]]
    """
    return as_tensor(x).min(axis, keepdims)


def argmax(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Index of the first maximum along `axis` (of the flattened tensor when None), int64; a
    nan counts as the maximum, as in numpy.

    >>> lt.argmax(lt.asarray([1, 5, 3])).item()
    1
    """
    return as_tensor(x).argmax(axis, keepdims)


def argmin(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Index of the first minimum along `axis` (of the flattened tensor when None), int64.

    >>> lt.argmin(lt.asarray([4, 1, 3])).item()
    1
    """
    return as_tensor(x).argmin(axis, keepdims)


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """True where every element along `axis` is nonzero (True for empty input).

    >>> lt.all(lt.asarray([True, False])).item()
    False
    """
    return as_tensor(x).all(axis, keepdims)


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """True where some element along `axis` is nonzero (False for empty input).

    >>> lt.any(lt.asarray([True, False])).item()
    True
    """
    return as_tensor(x).any(axis, keepdims)


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False,
        ddof: Any = None) -> Tensor:
    """Variance over `axis`: the mean squared deviation, divided by n - correction (`ddof` is
    numpy's name for correction, accepted too).

    >>> lt.var(lt.asarray([1.0, 2.0, 3.0, 4.0])).item()
    1.25
    >>> lt.var(lt.asarray([1.0, 2.0, 3.0, 4.0]), correction=1).item()
    1.666...
    """
    return as_tensor(x).var(axis, keepdims, correction, ddof)


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False,
        ddof: Any = None) -> Tensor:
    """Standard deviation over `axis` (the square root of `var`, with its `correction`).

    >>> lt.std(lt.asarray([1.0, 3.0])).item()
    1.0
    """
    return as_tensor(x).std(axis, keepdims, correction, ddof)


class Reductions:
    """Tensor's reduction methods (attached below)."""

    def sum(self, axis=None, keepdims: bool = False, *, dtype=None, out=None) -> "Tensor":
        """Sum over `axis` (int, tuple or None for all). Signed integers and bool sum to int64,
        unsigned to uint64; float16/32 sum in float64 (the cpu adds blocks of up to 4096 terms in
        float32 vectors, 32 terms a lane, then the blocks in float64): about as accurate as
        numpy's pairwise sum, far more than a running float32 sum.

        >>> lt.asarray([[1, 2], [3, 4]]).sum(axis=0).tolist()
        [4, 6]
        >>> lt.asarray([1, 2], dtype=lt.int8).sum(dtype=lt.float32).dtype == lt.float32
        True
        """
        _no_out(out, "sum")
        if dtype is not None:   # numpy's: the sum computed in, and returned as, `dtype`
            return _in_dtype(self, dtype).sum(axis, keepdims).astype(dtype)
        x = self.node
        if x.dtype.is_inexact:
            total = _float_sum(x, axis, x.dtype)
        else:
            total = _reduce(Op.SUM, cast(x, _accumulator(x.dtype)), axis)
        return self._new(_drop_axes(total, axis, keepdims))

    def prod(self, axis=None, keepdims: bool = False, *, dtype=None, out=None) -> "Tensor":
        """Product over `axis`; integers and bool multiply in int64 (unsigned: uint64), float16 in
        float32 rounded once at the end, as numpy's (300 * 300 * 0.001 does not overflow).

        >>> lt.asarray([2, 3, 4]).prod().item()
        24
        """
        _no_out(out, "prod")
        if dtype is not None:
            return _in_dtype(self, dtype).prod(axis, keepdims).astype(dtype)
        x = self.node
        if x.dtype is float16:
            total = cast(_reduce(Op.PROD, cast(x, float32), axis), float16)
        else:
            total = _reduce(Op.PROD, cast(x, _accumulator(x.dtype)), axis)
        return self._new(_drop_axes(total, axis, keepdims))

    def max(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Maximum over `axis`; nan if any value is nan. Empty input raises ValueError.

        >>> lt.asarray([1, 5, 3]).max().item()
        5
        """
        _no_out(out, "max")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MAX, self.node, axis, "maximum"), axis, keepdims))

    def min(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Minimum over `axis`; nan if any value is nan. Empty input raises ValueError.

        >>> lt.asarray([1, 5, 3]).min().item()
        1
        """
        _no_out(out, "min")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MIN, self.node, axis, "minimum"), axis, keepdims))

    def mean(self, axis=None, keepdims: bool = False, *, dtype=None, out=None) -> "Tensor":
        """Arithmetic mean over `axis` (integers give float64; numpy's dtype= computes in it).

        >>> lt.asarray([1.0, 2.0, 6.0]).mean().item()
        3.0
        """
        _no_out(out, "mean")
        if dtype is not None:
            return _in_dtype(self, dtype).mean(axis, keepdims).astype(dtype)
        x = self if self.dtype.is_inexact else self.astype(float64)
        axes = normalize_axes(axis, self.ndim)
        count = math.prod(self.shape[a] for a in axes)
        # float16 sums and divides in float32 and rounds once, as numpy's mean (no overflow on the way)
        inner = float32 if x.dtype is float16 else x.dtype
        total = x._new(_float_sum(x.node, axes, inner))
        mean = total / count if count else total * math.nan
        return self._new(_drop_axes(cast(mean.node, x.dtype), axis, keepdims))

    def all(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """True where every element along `axis` is nonzero (True for empty input).

        >>> lt.asarray([True, False]).all().item()
        False
        """
        _no_out(out, "all")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MIN, cast(self.node, bool_), axis), axis, keepdims))

    def any(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """True where some element along `axis` is nonzero (False for empty input).

        >>> lt.asarray([True, False]).any().item()
        True
        """
        _no_out(out, "any")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MAX, cast(self.node, bool_), axis), axis, keepdims))

    def var(self, axis=None, keepdims: bool = False, correction: float = 0.0, ddof=None, *, dtype=None,
            out=None) -> "Tensor":
        """Variance over `axis`: mean squared deviation, divided by n - correction (numpy's ddof;
        numpy's dtype= computes in it).

        >>> lt.asarray([1.0, 2.0, 3.0, 4.0]).var().item()
        1.25
        """
        _no_out(out, "var")
        if dtype is not None:
            return _in_dtype(self, dtype).var(axis, keepdims, correction, ddof).astype(dtype)
        correction = ddof if ddof is not None else correction
        x = self if self.dtype.is_float else self.astype(float64)
        axes = normalize_axes(axis, self.ndim)
        count = math.prod(self.shape[a] for a in axes)
        mean = x.sum(axis=axes, keepdims=True)   # (numpy's var divides in x's dtype, float16 too, unlike its mean)
        mean = mean / count if count else mean * math.nan
        deviation = x - mean
        total = (deviation * deviation).sum(axis=axes, keepdims=True)
        divisor = count - correction
        result = total / divisor if divisor > 0 else total * math.nan
        return self._new(_drop_axes(result.node, axes, keepdims))

    def std(self, axis=None, keepdims: bool = False, correction: float = 0.0, ddof=None, *, dtype=None,
            out=None) -> "Tensor":
        """Standard deviation over `axis` (the square root of `var`).

        >>> lt.asarray([1.0, 3.0]).std().item()
        1.0
        """
        _no_out(out, "std")
        if dtype is not None:
            return _in_dtype(self, dtype).std(axis, keepdims, correction, ddof).astype(dtype)
        return self.var(axis, keepdims, correction, ddof).sqrt()

    def argmax(self, axis: Optional[int] = None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Index of the first maximum along `axis` (of the flattened tensor when None); a nan
        counts as the maximum, like numpy. Returns int64.

        >>> lt.asarray([1, 5, 3]).argmax().item()
        1
        """
        _no_out(out, "argmax")
        return _arg_extremum(self, axis, keepdims, "max")

    def argmin(self, axis: Optional[int] = None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Index of the first minimum along `axis`; a nan counts as the minimum, like numpy.

        >>> lt.asarray([4, 1, 3]).argmin().item()
        1
        """
        _no_out(out, "argmin")
        return _arg_extremum(self, axis, keepdims, "min")


attach_methods(Reductions)

__all__ = ["sum", "prod", "mean", "max", "min", "argmax", "argmin", "all", "any", "var", "std"]


# ---- helpers -------------------------------------------------------------------------------------

def _in_dtype(x: Tensor, dtype: Any) -> Tensor:
    """x cast to a reduction's `dtype=` (numpy casts as it accumulates: any cast is allowed)."""
    return x.astype(to_dtype(dtype))



def _float_sum(x: Node, axis, dtype: DType) -> Node:
    """The sum of a float (or complex) node over `axis` (kept, size 1), rounded once to `dtype`:
    float16/32 add in float64 (the cpu: float32 vectors over blocks, the blocks in float64),
    complex64 in complex128, at least as accurate as numpy's pairwise float32 sums."""
    wide = _WIDER_SUM.get(x.dtype)
    if wide is not None:
        return cast(_reduce(Op.SUM, cast(x, wide), axis), dtype)
    return cast(_reduce(Op.SUM, x, axis), dtype)


_WIDER_SUM = {float16: float64, float32: float64, complex64: complex128}


def _accumulator(dtype: DType) -> DType:
    """What sum and prod accumulate in (numpy's): int64 for bool and signed, uint64 for unsigned."""
    return dtype if dtype.is_inexact else uint64 if dtype.is_unsigned else int64



def _reduce(op: Op, x: Node, axis, name: str = "") -> Node:
    """The reduction with the reduced axes kept (size 1); `name` marks one without identity."""
    axes = normalize_axes(axis, len(x.shape))
    if name and 0 in [x.shape[a] for a in axes]:  # numpy's rule, even for an empty result
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                         f"(shape {x.shape}, axis {axis})")
    return make(op, x, arg=axes)

def _drop_axes(reduced: Node, axis, keepdims: bool) -> Node:
    """Remove the reduced axes last, after any epilogue, so the reduction and its epilogue stay one
    kernel and the reshape is a free view at the end."""
    if keepdims:
        return reduced
    axes = normalize_axes(axis, len(reduced.shape))
    return make(Op.RESHAPE, reduced, arg=tuple(n for a, n in enumerate(reduced.shape) if a not in axes))

def _arg_extremum(x: Tensor, axis: Optional[int], keepdims: bool, kind: str) -> Tensor:
    if axis is None:
        flat = x.reshape(-1)
        result = _arg_extremum(flat, 0, False, kind)
        return result.reshape((1,) * x.ndim) if keepdims else result
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"arg{kind}: axis must be one int or None, not {axis!r}")
    (axis,) = normalize_axes(axis, x.ndim)
    n = x.shape[axis]
    if n == 0:
        raise ValueError(f"attempt to get arg{kind} of an empty sequence (shape {x.shape}, axis {axis})")
    best = x.max(axis, keepdims=True) if kind == "max" else x.min(axis, keepdims=True)
    hit = x == best
    if x.dtype.is_float:
        hit = hit | (x != x)   # the first nan wins, as in numpy
    index_shape = tuple(n if a == axis else 1 for a in range(x.ndim))
    index = arange(n, device=x.device).reshape(index_shape)
    return where(hit, index, n).min(axis, keepdims=keepdims)

def _no_out(out: Any, name: str) -> None:
    """numpy's functions pass out=None on to the methods (np.sum(x) calls x.sum(..., out=None))."""
    if out is not None:
        raise TypeError(f"{name}: out= is not supported (a lazy result is a new tensor); assign the result instead")
