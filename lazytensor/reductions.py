"""Reductions: sum, prod, max, min, mean, var, std, all, any, argmax, argmin -- the Array
API's functions (x positional-only, options keyword-only, as the standard writes them) and the
Tensor methods of the same names (which also take axis positionally, PyTorch-style, and numpy's
dtype= and out=None, since numpy's functions call them).

(This module defines sum, max, min, any and all: its own code must not call the builtins of
those names.)
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional

import numpy as np

from .creation import arange
from .floatexpr import FloatExpr, float_sum, mean_node, reduce_node
from .ir.arith import cast
from .ir.dtypes import DType, bool_, float16, float32, float64, int64, to_dtype, uint64
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .operands import as_tensor, normalize_axes, where
from .tensor import Tensor, attach_methods, one_axis, spelled_once


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """Sum over `axis` (an int, a tuple, or None for all). Signed integers and bool sum to
    int64, unsigned to uint64, floats keep their dtype; `dtype` casts `x` to it first and
    returns that dtype (numpy's `dtype=`).

    >>> lt.sum(lt.asarray([[1, 2], [3, 4]]), axis=0).tolist()
    [4, 6]
    >>> lt.sum(lt.asarray([100, 100], dtype=lt.int8), dtype=lt.int8).item()   # wraps, as numpy's
    -56
    """
    return as_tensor(x).sum(axis, keepdims, dtype=dtype, dim=dim, keepdim=keepdim)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         dim: Any = None, keepdim: Any = None) -> Tensor:
    """Product over `axis`; integers and bool multiply in int64 (unsigned: uint64), floats keep
    their dtype; `dtype` casts `x` to it first (numpy's `dtype=`).

    >>> lt.prod(lt.asarray([2, 3, 4])).item()
    24
    >>> lt.prod(lt.asarray([0.5, 3.0]), dtype=lt.float64).dtype
    lazytensor.float64
    """
    return as_tensor(x).prod(axis, keepdims, dtype=dtype, dim=dim, keepdim=keepdim)


def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False,
         dim: Any = None, keepdim: Any = None) -> Tensor:
    """Arithmetic mean over `axis` (integers give float64, as numpy's).

    >>> lt.mean(lt.asarray([1.0, 2.0, 6.0])).item()
    3.0
    """
    return as_tensor(x).mean(axis, keepdims, dim=dim, keepdim=keepdim)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """Maximum over `axis`; nan where any value is nan. Empty input raises ValueError. With
    PyTorch's dim= (torch.max(x, dim=d)): the named tuple (values, indices), as PyTorch's.

    >>> lt.max(lt.asarray([[1, 5], [7, 3]]), axis=1).tolist()
    [5, 7]
    >>> lt.max(lt.asarray([[1, 5], [7, 3]]), dim=1).indices.tolist()
    [1, 0]
    """
    return as_tensor(x).max(axis, keepdims, dim=dim, keepdim=keepdim)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """Minimum over `axis`; nan where any value is nan. Empty input raises ValueError. With
    PyTorch's dim=: the named tuple (values, indices), as PyTorch's.

    >>> lt.min(lt.asarray([[1, 5], [7, 3]]), axis=1, keepdims=True).tolist()
    [[1], [3]]
    """
    return as_tensor(x).min(axis, keepdims, dim=dim, keepdim=keepdim)


def argmax(x: Any, /, *, axis: Any = None, keepdims: bool = False,
           dim: Any = None, keepdim: Any = None) -> Tensor:
    """Index of the first maximum along `axis` (of the flattened tensor when None), int64; a
    nan counts as the maximum, as in numpy.

    >>> lt.argmax(lt.asarray([1, 5, 3])).item()
    1
    """
    return as_tensor(x).argmax(axis, keepdims, dim=dim, keepdim=keepdim)


def argmin(x: Any, /, *, axis: Any = None, keepdims: bool = False,
           dim: Any = None, keepdim: Any = None) -> Tensor:
    """Index of the first minimum along `axis` (of the flattened tensor when None), int64.

    >>> lt.argmin(lt.asarray([4, 1, 3])).item()
    1
    """
    return as_tensor(x).argmin(axis, keepdims, dim=dim, keepdim=keepdim)


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """True where every element along `axis` is nonzero (True for empty input).

    >>> lt.all(lt.asarray([True, False])).item()
    False
    """
    return as_tensor(x).all(axis, keepdims, dim=dim, keepdim=keepdim)


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """True where some element along `axis` is nonzero (False for empty input).

    >>> lt.any(lt.asarray([True, False])).item()
    True
    """
    return as_tensor(x).any(axis, keepdims, dim=dim, keepdim=keepdim)


def var(x: Any, /, *, axis: Any = None, correction: Any = None, keepdims: bool = False,
        ddof: Any = None,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """Variance over `axis`: the mean squared deviation, divided by n - correction (`ddof` is
    numpy's name for correction, accepted too). Without one, correction is 0 (the Array API's
    and numpy's), or PyTorch's 1 where the axis is given as PyTorch's dim=.

    >>> lt.var(lt.asarray([1.0, 2.0, 3.0, 4.0])).item()
    1.25
    >>> lt.var(lt.asarray([1.0, 2.0, 3.0, 4.0]), correction=1).item()
    1.666...
    """
    return as_tensor(x).var(axis, keepdims, correction, ddof, dim=dim, keepdim=keepdim)


def std(x: Any, /, *, axis: Any = None, correction: Any = None, keepdims: bool = False,
        ddof: Any = None,
        dim: Any = None, keepdim: Any = None) -> Tensor:
    """Standard deviation over `axis` (the square root of `var`, with its `correction`).

    >>> lt.std(lt.asarray([1.0, 3.0])).item()
    1.0
    """
    return as_tensor(x).std(axis, keepdims, correction, ddof, dim=dim, keepdim=keepdim)


def softmax(x: Any, dim: int, *, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (PyTorch's torch.softmax), from x - max(x) so that it
    cannot overflow; `dtype` casts x to it first.

    >>> lt.softmax(lt.asarray([0.0, 0.0]), -1).tolist()
    [0.5, 0.5]
    """
    return as_tensor(x).softmax(dim, dtype=dtype)


def log_softmax(x: Any, dim: int, *, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along `dim` (PyTorch's torch.log_softmax), without forming the softmax.

    >>> [round(v, 4) for v in lt.log_softmax(lt.asarray([0.0, 0.0]), -1).tolist()]
    [-0.6931, -0.6931]
    """
    return as_tensor(x).log_softmax(dim, dtype=dtype)


class MaxMin(NamedTuple):
    """What PyTorch's `x.max(dim=d)` and `x.min(dim=d)` return (as torch.return_types.max): the
    values and their int64 indices along d."""
    values: Tensor
    indices: Tensor


# The reductions take PyTorch's keywords, dim= and keepdim=, as well as numpy's and the Array
# API's axis and keepdims (one of each pair). Where PyTorch's result differs from numpy's, a call
# spelled PyTorch's way gets PyTorch's: `x.max(dim=1)` is (values, indices), `x.var(dim=1)`
# divides by n - 1; `x.max(1)`, `x.max(axis=1)` and `x.var(axis=1)` stay numpy's.

def _torch_axes(name: str, axis: Any, keepdims: bool, dim: Any, keepdim: Any) -> tuple[Any, bool]:
    """(axis, keepdims) from numpy's keywords or PyTorch's (dim=, keepdim=), refusing both."""
    axis = spelled_once(name, axis, None, dim, "the axes as axis (numpy's) or dim= (PyTorch's)")
    keepdims = spelled_once(name, keepdims, False, keepdim, "keepdims (numpy's) or keepdim= (PyTorch's)")
    return axis, bool(keepdims)


def _torch_extremum(x: Tensor, name: str, axis: Any, keepdims: bool, dim: Any, keepdim: Any) -> Any:
    """max/min: PyTorch's (values, indices) where called with dim= or keepdim= and an axis,
    PyTorch's elementwise maximum/minimum where given a tensor, else the reduced values."""
    if isinstance(axis, Tensor) and dim is None and keepdim is None and not keepdims:   # x.max(other)
        return x.maximum(axis) if name == "max" else x.minimum(axis)
    torch_style = dim is not None or (keepdim is not None and axis is not None)
    axis, keepdims = _torch_axes(name, axis, keepdims, dim, keepdim)
    values_alone = x.amax if name == "max" else x.amin
    if not torch_style:
        return values_alone(axis, keepdims)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}(dim=...): PyTorch's form takes one int dim, not {axis!r} (amax/amin reduce "
                        "several axes)")
    axis = one_axis(axis, x.ndim or 1, name)
    if x.ndim == 0:   # (PyTorch's: a 0-d tensor has dims 0 and -1, each of one element)
        return MaxMin(x._new(x.node), x._new(const(0, int64, ())))
    indices = _arg_extremum(x, axis, True, name)
    if x.requires_grad:   # the value at the index (exactly: -0.0 adds nothing), so that the
        # gradient goes to that one element, as PyTorch's (a reduction's goes to every tie)
        n = x.shape[axis]
        at = arange(n, device=x.device).reshape(tuple(n if a == axis else 1 for a in range(x.ndim))) == indices
        values = where(at, x, -0.0 if x.dtype.is_float else 0).astype(x.dtype).sum(axis, keepdims=True, dtype=x.dtype)
    else:
        values = values_alone(axis, keepdims=True)
    if not keepdims:   # (tensors of their own, not views of the kept-axis results: lt.jit returns them)
        values, indices = (x._new(_drop_axes(t.node, axis, False)) for t in (values, indices))
    return MaxMin(values, indices)


def _correction(correction: Any, ddof: Any, torch_style: bool, unbiased: Any) -> float:
    """var/std's divisor offset: numpy's ddof or the Array API's correction where given; else
    PyTorch's default (1, or unbiased=) for a call spelled PyTorch's way, numpy's 0 otherwise."""
    given = [v for v in (correction, ddof) if v is not None]
    if unbiased is not None:
        if given:
            raise TypeError("var/std: give one of correction, ddof and unbiased")
        return 1 if unbiased else 0
    if len(given) > 1 and given[0] != given[1]:
        raise TypeError(f"var/std: correction={correction!r} and ddof={ddof!r} disagree; give one")
    return given[0] if given else (1 if torch_style else 0)


class Reductions:
    """Tensor's reduction methods (attached below). Each takes numpy's and the Array API's
    `axis` and `keepdims` or PyTorch's `dim=` and `keepdim=` (see `_torch_axes`)."""

    def sum(self, axis=None, keepdims: bool = False, *, dtype=None, out=None, dim=None, keepdim=None) -> "Tensor":
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
        axis, keepdims = _torch_axes("sum", axis, keepdims, dim, keepdim)
        if dtype is not None:   # numpy's: the sum computed in, and returned as, `dtype`
            return _in_dtype(self, dtype).sum(axis, keepdims).astype(dtype)
        x = self.node
        if x.dtype.is_inexact:
            total = float_sum(x, axis, x.dtype)
        else:
            total = reduce_node(Op.SUM, cast(x, _accumulator(x.dtype)), axis)
        return self._new(_drop_axes(total, axis, keepdims))

    def prod(self, axis=None, keepdims: bool = False, *, dtype=None, out=None, dim=None, keepdim=None) -> "Tensor":
        """Product over `axis`; integers and bool multiply in int64 (unsigned: uint64), float16 in
        float32 rounded once at the end, as numpy's (300 * 300 * 0.001 does not overflow).

        >>> lt.asarray([2, 3, 4]).prod().item()
        24
        """
        _no_out(out, "prod")
        axis, keepdims = _torch_axes("prod", axis, keepdims, dim, keepdim)
        if dtype is not None:
            return _in_dtype(self, dtype).prod(axis, keepdims).astype(dtype)
        x = self.node
        if x.dtype is float16:
            total = cast(reduce_node(Op.PROD, cast(x, float32), axis), float16)
        else:
            total = reduce_node(Op.PROD, cast(x, _accumulator(x.dtype)), axis)
        return self._new(_drop_axes(total, axis, keepdims))

    def max(self, axis=None, keepdims: bool = False, *, out=None, dim=None, keepdim=None) -> "Tensor":
        """Maximum over `axis`; nan if any value is nan. Empty input raises ValueError.

        Spelled PyTorch's way -- `x.max(dim=d)`, or an axis with `keepdim=` -- PyTorch's result:
        a named tuple (values, indices) along the one axis d (the first index where values tie).
        `x.max(other)` with a tensor is PyTorch's elementwise maximum. numpy's spellings,
        `x.max(1)` and `x.max(axis=1)`, keep numpy's result, the values alone (so numpy's
        functions, which call this method, get what they expect).

        >>> lt.asarray([1, 5, 3]).max().item()
        5
        >>> lt.asarray([[1, 5], [7, 3]]).max(dim=1)
        MaxMin(values=Tensor([5, 7], dtype=int64, device='cpu'), indices=Tensor([1, 0], dtype=int64, device='cpu'))
        """
        _no_out(out, "max")
        return _torch_extremum(self, "max", axis, keepdims, dim, keepdim)

    def min(self, axis=None, keepdims: bool = False, *, out=None, dim=None, keepdim=None) -> "Tensor":
        """Minimum over `axis`; nan if any value is nan. Empty input raises ValueError. As `max`:
        `x.min(dim=d)` is PyTorch's (values, indices), `x.min(other)` the elementwise minimum.

        >>> lt.asarray([1, 5, 3]).min().item()
        1
        >>> lt.asarray([[1, 5], [7, 3]]).min(dim=0).indices.tolist()
        [0, 1]
        """
        _no_out(out, "min")
        return _torch_extremum(self, "min", axis, keepdims, dim, keepdim)

    def amax(self, axis=None, keepdims: bool = False, *, out=None, dim=None, keepdim=None) -> "Tensor":
        """Maximum over `axis` (an int, a tuple, or None for all): the values alone, whichever
        keywords name the axes (PyTorch's amax, numpy's np.amax).

        >>> lt.asarray([[1, 5], [7, 3]]).amax(dim=(0, 1)).item()
        7
        """
        _no_out(out, "amax")
        axis, keepdims = _torch_axes("amax", axis, keepdims, dim, keepdim)
        return self._new(_drop_axes(reduce_node(Op.REDUCE_MAX, self.node, axis, "maximum"), axis, keepdims))

    def amin(self, axis=None, keepdims: bool = False, *, out=None, dim=None, keepdim=None) -> "Tensor":
        """Minimum over `axis`: the values alone (PyTorch's amin, numpy's np.amin).

        >>> lt.asarray([[1, 5], [7, 3]]).amin(dim=1, keepdim=True).tolist()
        [[1], [3]]
        """
        _no_out(out, "amin")
        axis, keepdims = _torch_axes("amin", axis, keepdims, dim, keepdim)
        return self._new(_drop_axes(reduce_node(Op.REDUCE_MIN, self.node, axis, "minimum"), axis, keepdims))

    def mean(self, axis=None, keepdims: bool = False, *, dtype=None, out=None, dim=None, keepdim=None) -> "Tensor":
        """Arithmetic mean over `axis` (integers give float64; numpy's dtype= computes in it).

        >>> lt.asarray([1.0, 2.0, 6.0]).mean().item()
        3.0
        """
        _no_out(out, "mean")
        axis, keepdims = _torch_axes("mean", axis, keepdims, dim, keepdim)
        if dtype is not None:
            return _in_dtype(self, dtype).mean(axis, keepdims).astype(dtype)
        x = self if self.dtype.is_inexact else self.astype(float64)
        # float16 sums and divides in float32 and rounds once, as numpy's mean (no overflow on the way)
        inner = float32 if x.dtype is float16 else x.dtype
        mean = mean_node(x.node, normalize_axes(axis, self.ndim), inner)
        return self._new(_drop_axes(cast(mean, x.dtype), axis, keepdims))

    def all(self, axis=None, keepdims: bool = False, *, out=None, dim=None, keepdim=None) -> "Tensor":
        """True where every element along `axis` is nonzero (True for empty input).

        >>> lt.asarray([True, False]).all().item()
        False
        """
        _no_out(out, "all")
        axis, keepdims = _torch_axes("all", axis, keepdims, dim, keepdim)
        return self._new(_drop_axes(reduce_node(Op.REDUCE_MIN, cast(self.node, bool_), axis), axis, keepdims))

    def any(self, axis=None, keepdims: bool = False, *, out=None, dim=None, keepdim=None) -> "Tensor":
        """True where some element along `axis` is nonzero (False for empty input).

        >>> lt.asarray([True, False]).any().item()
        True
        """
        _no_out(out, "any")
        axis, keepdims = _torch_axes("any", axis, keepdims, dim, keepdim)
        return self._new(_drop_axes(reduce_node(Op.REDUCE_MAX, cast(self.node, bool_), axis), axis, keepdims))

    def var(self, axis=None, keepdims: bool = False, correction=None, ddof=None, *, dtype=None,
            out=None, dim=None, keepdim=None, unbiased=None) -> "Tensor":
        """Variance over `axis`: mean squared deviation, divided by n - correction (numpy's ddof;
        numpy's dtype= computes in it). Without a correction it is numpy's and the Array API's
        0, except in a call spelled PyTorch's way (dim=, keepdim= or unbiased=), where it is
        PyTorch's 1: `x.var(dim=0)` is `torch.var(x, dim=0)`.

        >>> lt.asarray([1.0, 2.0, 3.0, 4.0]).var().item()
        1.25
        >>> round(lt.asarray([1.0, 2.0, 3.0, 4.0]).var(dim=0).item(), 4)
        1.6667
        """
        _no_out(out, "var")
        torch_style = dim is not None or keepdim is not None or unbiased is not None
        axis, keepdims = _torch_axes("var", axis, keepdims, dim, keepdim)
        correction = _correction(correction, ddof, torch_style, unbiased)
        if dtype is not None:
            return _in_dtype(self, dtype).var(axis, keepdims, correction).astype(dtype)
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

    def std(self, axis=None, keepdims: bool = False, correction=None, ddof=None, *, dtype=None,
            out=None, dim=None, keepdim=None, unbiased=None) -> "Tensor":
        """Standard deviation over `axis` (the square root of `var`, whose correction rule it
        follows: numpy's 0 by default, PyTorch's 1 in a call with dim=, keepdim= or unbiased=).

        >>> lt.asarray([1.0, 3.0]).std().item()
        1.0
        """
        _no_out(out, "std")
        torch_style = dim is not None or keepdim is not None or unbiased is not None
        axis, keepdims = _torch_axes("std", axis, keepdims, dim, keepdim)
        correction = _correction(correction, ddof, torch_style, unbiased)
        if dtype is not None:
            return _in_dtype(self, dtype).std(axis, keepdims, correction).astype(dtype)
        return self.var(axis, keepdims, correction).sqrt()

    def argmax(self, axis: Optional[int] = None, keepdims: bool = False, *, out=None, dim=None,
               keepdim=None) -> "Tensor":
        """Index of the first maximum along `axis` (of the flattened tensor when None); a nan
        counts as the maximum, like numpy and PyTorch. Returns int64.

        >>> lt.asarray([1, 5, 3]).argmax().item()
        1
        """
        _no_out(out, "argmax")
        axis, keepdims = _torch_axes("argmax", axis, keepdims, dim, keepdim)
        return _arg_extremum(self, axis, keepdims, "max")

    def argmin(self, axis: Optional[int] = None, keepdims: bool = False, *, out=None, dim=None,
               keepdim=None) -> "Tensor":
        """Index of the first minimum along `axis`; a nan counts as the minimum, like numpy.

        >>> lt.asarray([4, 1, 3]).argmin().item()
        1
        """
        _no_out(out, "argmin")
        axis, keepdims = _torch_axes("argmin", axis, keepdims, dim, keepdim)
        return _arg_extremum(self, axis, keepdims, "min")

    def softmax(self, dim: int, *, dtype=None) -> "Tensor":
        """exp(x) / sum(exp(x)) along `dim` (PyTorch's x.softmax(dim)), computed from
        x - max(x) so that it cannot overflow; `dtype` casts x to it first. Floats only.

        >>> lt.asarray([[0.0, 0.0]]).softmax(-1).tolist()
        [[0.5, 0.5]]
        """
        x = _softmax_input(self, dim, dtype, "softmax")
        if x.ndim == 0 or x.shape[dim] == 0:
            return _elementwise_softmax(x, dim, "softmax")
        return softmax_along(x, dim)

    def log_softmax(self, dim: int, *, dtype=None) -> "Tensor":
        """log(softmax(x)) along `dim` (PyTorch's x.log_softmax(dim)), without forming the
        softmax (stable for large |x|).

        >>> [round(v, 4) for v in lt.asarray([0.0, 0.0]).log_softmax(0).tolist()]
        [-0.6931, -0.6931]
        """
        x = _softmax_input(self, dim, dtype, "log_softmax")
        if x.ndim == 0 or x.shape[dim] == 0:
            return _elementwise_softmax(x, dim, "log_softmax")
        return log_softmax_along(x, dim)


attach_methods(Reductions)

__all__ = ["sum", "prod", "mean", "max", "min", "argmax", "argmin", "all", "any", "var", "std", "softmax",
           "log_softmax"]


def softmax_along(x: Tensor, axis: Any) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`, from x - max(x) (the max out of the gradient): the
    formula alone, unchecked (Tensor.softmax and nn.functional.softmax check their own input)."""
    fast = FloatExpr.of(x)
    if fast:   # (the same nodes, without a tensor at each step: floatexpr.py)
        e = (fast[0] - fast[0].amax(axis).detach()).unary(Op.EXP)
        return (e / e.sum(axis)).tensor(x.device)
    e = (x - x.max(axis=axis, keepdims=True).detach()).exp()
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_along(x: Tensor, axis: Any) -> Tensor:
    """log(softmax(x)) along `axis` without forming the softmax, as softmax_along."""
    shifted = x - x.max(axis=axis, keepdims=True).detach()
    return shifted - shifted.exp().sum(axis=axis, keepdims=True).log()


def _elementwise_softmax(x: Tensor, dim: int, name: str) -> Tensor:
    """softmax (1) or log_softmax (0) where the axis has one element (a 0-d tensor) or none."""
    if x.ndim and x.shape[dim] == 0:
        return x._new(x.node)
    one = 1 if name == "softmax" else 0
    return x * 0 + one   # (nan and inf stay nan, as in PyTorch)


def _softmax_input(x: Tensor, dim: Any, dtype: Any, name: str) -> Tensor:
    """x for softmax along the one axis `dim`, cast to `dtype` where given (floats only, as PyTorch)."""
    if dtype is not None:
        x = x.astype(dtype)
    if not x.dtype.is_float:
        raise TypeError(f"{name}: takes a float tensor, not {x.dtype.name}; cast it (x.float()) or pass dtype=")
    one_axis(dim, x.ndim or 1, name)
    return x


# ---- helpers -------------------------------------------------------------------------------------

def _in_dtype(x: Tensor, dtype: Any) -> Tensor:
    """x cast to a reduction's `dtype=` (numpy casts as it accumulates: any cast is allowed)."""
    return x.astype(to_dtype(dtype))


def _accumulator(dtype: DType) -> DType:
    """What sum and prod accumulate in (numpy's): int64 for bool and signed, uint64 for unsigned."""
    return dtype if dtype.is_inexact else uint64 if dtype.is_unsigned else int64


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
