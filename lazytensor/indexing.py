"""Data-dependent indexing: gather (`take`, integer-array and boolean-mask reads), `nonzero`,
and writes (`x[index] = value`).

A gather stays lazy and fuses: `take(exp(x), idx)` is one kernel that computes exp only at the
picked elements. Out-of-range indices are clamped (a kernel cannot raise), and negative ones
count from the end. Operations whose result shape depends on values (`nonzero`, boolean masks)
realize their input first, as their docstrings say.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .ir.ops import Op
from .ir.rules import make
from .tensor import Tensor, as_tensor, broadcast_shapes, normalize_axes, where



def _index_tensor(indices: Any, like: Tensor, what: str) -> Tensor:
    if isinstance(indices, (list, tuple)) and np.size(indices) == 0:
        indices = np.zeros(np.shape(indices), np.int64)   # numpy reads an empty list ([], [[]]) as integers
    index = as_tensor(indices, like)
    if not index.dtype.is_integer:
        raise IndexError(f"{what}: indices must be integers, not {index.dtype.name}")
    if index.device != like.device:
        raise ValueError(f"{what}: indices are on {index.device} but the tensor is on {like.device}")
    return index


def take(x: Any, indices: Any, axis: Any = None) -> Tensor:
    """Elements of `x` at `indices` along `axis` (of the flattened tensor when None), like
    numpy.take. Negative indices count from the end; out-of-range ones are clamped.

    >>> lt.take(lt.asarray([10, 20, 30]), lt.asarray([2, 0, -1])).tolist()
    [30, 10, 30]
    """
    x = as_tensor(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    (axis,) = normalize_axes(axis, x.ndim)
    index = _index_tensor(indices, x, "take")
    if x.shape[axis] == 0 and index.size:
        raise IndexError(f"take: cannot take from an empty axis {axis} of shape {x.shape}")
    return x._new(make(Op.GATHER, x.node, index.node, arg=axis))


def take_along_axis(x: Any, indices: Any, axis: int) -> Tensor:
    """out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis` (numpy.take_along_axis);
    the other axes of `indices` broadcast against `x`.

    >>> lt.take_along_axis(lt.asarray([[10, 20], [30, 40]]), lt.asarray([[1], [0]]), 1).tolist()
    [[20], [30]]
    """
    from .creation import arange
    x = as_tensor(x)
    index = _index_tensor(indices, x, "take_along_axis")
    if index.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices need {x.ndim} dimensions like x {x.shape}, not {index.shape}")
    (axis,) = normalize_axes(axis, x.ndim)
    shape = _along_axis_shape(x.shape, index.shape, axis)
    strides = [math.prod(x.shape[a + 1:]) for a in range(x.ndim)]
    n = x.shape[axis]
    if n == 0 and math.prod(shape):
        raise IndexError(f"take_along_axis: cannot take from the empty axis {axis} of shape {x.shape}")
    picked = index.astype("int64")
    picked = where(picked < 0, picked + n, picked)  # count from the end before the flat index
    flat = None
    for a in range(x.ndim):
        if a == axis:
            coordinate = picked.maximum(0).minimum(max(n - 1, 0))  # clamp within this axis
        else:
            coordinate = arange(x.shape[a], device=x.device).reshape([-1 if b == a else 1 for b in range(x.ndim)])
        term = coordinate.broadcast_to(shape) * strides[a]
        flat = term if flat is None else flat + term
    return take(x.reshape(-1), flat, axis=0)


def _along_axis_shape(x_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """take_along_axis's result shape: the index's along `axis`, elsewhere the index and x
    broadcast (numpy's rule: a size of 0 against 1 is 0, so an empty x gives an empty result)."""
    others = [tuple(1 if a == axis else n for a, n in enumerate(s)) for s in (x_shape, index_shape)]
    try:
        shape = broadcast_shapes(*others)
    except ValueError:
        raise ValueError(f"take_along_axis: indices of shape {index_shape} do not broadcast against x of shape "
                         f"{x_shape} on the axes other than {axis}") from None
    return shape[:axis] + (index_shape[axis],) + shape[axis + 1:]


def nonzero(x: Any) -> tuple[Tensor, ...]:
    """The indices of the nonzero elements, one int64 tensor per axis (numpy.nonzero).
    The result's size depends on the values, so this realizes `x`.

    >>> [t.tolist() for t in lt.nonzero(lt.asarray([0, 3, 0, 4]))]
    [[1, 3]]
    """
    from .creation import asarray
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d tensor is not defined; use x.reshape(1)")
    return tuple(asarray(i.astype(np.int64), device=x.device) for i in np.nonzero(x.numpy()))


def boolean_mask(x: Tensor, mask: Any, at: int) -> Tensor:
    """x[..., mask, ...] with `mask` covering axes at..at+mask.ndim: realizes the mask."""
    if isinstance(mask, Tensor) and mask.device != x.device:
        raise ValueError(f"indexing: the boolean mask is on {mask.device} but the tensor is on {x.device}")
    mask_values = np.asarray(mask.numpy() if isinstance(mask, Tensor) else mask, dtype=bool)
    covered = x.shape[at:at + mask_values.ndim]
    if covered != mask_values.shape:
        raise IndexError(f"boolean index of shape {mask_values.shape} does not match the indexed axes "
                         f"{covered} of shape {x.shape}")
    # the covered axes as one (its size spelled out: -1 is ambiguous where another axis is 0)
    flat = x.reshape(x.shape[:at] + (mask_values.size,) + x.shape[at + mask_values.ndim:]) if mask_values.ndim != 1 else x
    return take(flat, np.flatnonzero(mask_values).astype(np.int64), axis=at)


def assign(x: Tensor, index: Any, value: Any) -> None:
    """x[index] = value, lazily: x's node becomes `where(written, value, x)`; x keeps its dtype.
    Works for every index that reads work for."""
    from .movement import getitem, is_element, written_value
    positions = _positions(x)
    target = getitem(positions, index)            # which flat position each written element hits
    if target.size == 0 and (value.size if isinstance(value, Tensor) else np.size(value)) == 0:
        return   # nothing into nothing: numpy's array-index writes check no shapes then
    value = written_value(x, value, target.shape, element=is_element(index, x.ndim))
    if target.size == 0:
        return
    written, source = _scatter_map(target, x.size)
    x._set_node(where(written.reshape(x.shape), take(value.reshape(-1), source.reshape(x.shape), axis=None), x).node)


def _positions(x: Tensor) -> Tensor:
    from .creation import arange
    return arange(x.size, device=x.device).reshape(x.shape)


def _scatter_map(target: Tensor, size: int) -> tuple[Tensor, Tensor]:
    """For every flat position of x: is it written, and by which element of the value (the last
    write wins, as in numpy). This realizes the written positions (the index, not x or value)."""
    from .creation import asarray
    hit = target.numpy().reshape(-1)
    source = np.full(size, 0, dtype=np.int64)
    written = np.zeros(size, dtype=bool)
    source[hit] = np.arange(hit.size)
    written[hit] = True
    return asarray(written, device=target.device), asarray(source, device=target.device)


__all__ = ["take", "take_along_axis", "nonzero"]
