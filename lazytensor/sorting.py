"""Sorting, searching, cumulative sums and products, isin and unique values (the Array API's names).

`sort`, `argsort`, `cumulative_sum` and `searchsorted` stay lazy: each is an opaque step of
the graph (never fused; its inputs are realized first). `cumulative_prod` is a scan of fused
multiplies. `unique_*` have value-dependent shapes, so they realize their input when called,
as their docstrings say.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np

from .ir.dtypes import DType, bool_, result_type, to_dtype
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .creation import asarray
from .indexing import take, take_along_axis
from .movement import flip
from .ir.arith import cast
from .operands import as_tensor, normalize_axes, same_device
from .reductions import _accumulator, _no_out
from .tensor import Tensor, attach_methods, spelled_once



def _sort_axis(x: Tensor, axis: int, what: str) -> int:
    if x.ndim == 0:
        raise ValueError(f"{what} needs at least one dimension; got a 0-d tensor")
    return normalize_axes(axis, x.ndim)[0]


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Values sorted along `axis` (stable; nan last, as numpy).

    >>> lt.sort(lt.asarray([3, 1, 2])).tolist()
    [1, 2, 3]
    """
    x = as_tensor(x)
    return x._new(make(Op.SORT, x.node, arg=(_sort_axis(x, axis, "sort"), bool(descending))))


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The int64 indices that sort `x` along `axis` (stable: equal values keep their order).

    >>> lt.argsort(lt.asarray([3, 1, 2])).tolist()
    [1, 2, 0]
    """
    x = as_tensor(x)
    return x._new(make(Op.ARGSORT, x.node, arg=(_sort_axis(x, axis, "argsort"), bool(descending))))


def _scan_operands(x: Any, axis: Optional[int], dtype: Any, name: str) -> tuple[Tensor, int, DType]:
    """A scan's tensor, its axis (required beyond one dimension) and the dtype it runs in
    (`dtype`, or numpy's accumulator: int64 for bool and signed, uint64 for unsigned)."""
    x = as_tensor(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name}: axis is required for a {x.ndim}-d tensor (shape {x.shape})")
        axis = 0
    (axis,) = normalize_axes(axis, x.ndim)
    return x, axis, to_dtype(dtype) if dtype is not None else _accumulator(x.dtype)


def cumulative_sum(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                   include_initial: bool = False) -> Tensor:
    """Running sums along `axis` (needed for more than one dimension); integers and bool sum in
    int64 (unsigned in uint64) like numpy.cumsum; include_initial prepends a zero.

    >>> lt.cumulative_sum(lt.asarray([1, 2, 3])).tolist()
    [1, 3, 6]
    """
    x, axis, target = _scan_operands(x, axis, dtype, "cumulative_sum")
    return x._new(make(Op.CUMSUM, cast(x.node, target), arg=(axis, bool(include_initial))))


def cumulative_prod(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                    include_initial: bool = False) -> Tensor:
    """Running products along `axis` (needed for more than one dimension); integers and bool
    multiply in int64 (unsigned in uint64) like numpy.cumprod, `dtype` casts `x` to it first;
    include_initial prepends a one.

    A log-depth scan of fused multiplies (no sequential loop, and a gradient for free): the
    products are grouped as a tree, so where a running float product overflows or underflows
    partway the result can differ from numpy's left-to-right one (integers wrap exactly alike).

    >>> lt.cumulative_prod(lt.asarray([1, 2, 3, 4])).tolist()
    [1, 2, 6, 24]
    >>> lt.cumulative_prod(lt.asarray([[1.0, 2.0], [3.0, 4.0]]), axis=0, include_initial=True).tolist()
    [[1.0, 1.0], [1.0, 2.0], [3.0, 8.0]]
    """
    x, axis, target = _scan_operands(x, axis, dtype, "cumulative_prod")
    node = _scan_product(cast(x.node, target), axis)   # (dtype=bool: a running logical and, as numpy's)
    if include_initial:
        widths = tuple((1, 0) if a == axis else (0, 0) for a in range(x.ndim))
        node = _pad_with(node, widths, 1)
    return x._new(node)


def _scan_product(node: Node, axis: int) -> Node:
    """Hillis and Steele's scan: after the step that multiplies each element by the one `shift`
    before it (1 before the start), each holds the product of the 2*shift elements ending
    there; log2(n) steps make it the running product. [a, b, c, d] -> [a, ab, bc, cd] ->
    [a, ab, abc, abcd]."""
    n = node.shape[axis]
    shift = 1
    while shift < n:
        keep = tuple((0, n - shift, 1) if a == axis else (0, m, 1) for a, m in enumerate(node.shape))
        widths = tuple((shift, 0) if a == axis else (0, 0) for a in range(len(node.shape)))
        before = _pad_with(make(Op.SHRINK, node, arg=keep), widths, 1)
        node = make(Op.AND if node.dtype.is_bool else Op.MUL, node, before)
        shift *= 2
    return node


def _pad_with(node: Node, widths: tuple, value: Any) -> Node:
    """`node` padded by `widths` ((before, after) per axis) with `value`."""
    inside = make(Op.PAD, const(True, bool_, node.shape), arg=widths)
    return make(Op.WHERE, inside, make(Op.PAD, node, arg=widths), const(value, node.dtype, inside.shape))


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Tensor:
    """Where each value of x2 would go in the sorted 1-D x1 to keep it sorted (int64).

    >>> lt.searchsorted(lt.asarray([1, 3, 5]), lt.asarray([0, 3, 9])).tolist()
    [0, 1, 3]
    """
    sorted_x = as_tensor(x1, like=x2)
    values = as_tensor(x2, like=sorted_x)
    same_device(sorted_x, values, name="searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', not {side!r}")
    if sorted_x.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D; got shape {sorted_x.shape}")
    if sorter is not None:
        sorted_x = take(sorted_x, as_tensor(sorter, like=sorted_x))
    dtype = result_type(sorted_x.dtype, values.dtype)  # compare in the common dtype, like numpy
    a, b = cast(sorted_x.node, dtype), cast(values.node, dtype)
    return values._new(make(Op.SEARCHSORTED, a, b, arg=side))


def isin(x1: Any, x2: Any, /, *, invert: bool = False) -> Tensor:
    """Whether each element of x1 is among the values of x2 (any shape; compared by value in
    their common dtype, as `==` compares: nan is in nothing), bool of x1's shape (0-d for a
    Python scalar x1); `invert` asks whether it is not. Lazy: x2's values are sorted (an
    opaque step) and each element of x1 looked up there by binary search.

    >>> lt.isin(lt.asarray([1, 2, 3, 4]), lt.asarray([[4, 1], [9, 9]])).tolist()
    [True, False, False, True]
    >>> lt.isin(lt.asarray([1, 2]), 2, invert=True).tolist()
    [True, False]
    """
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        raise TypeError("isin: x1 or x2 must be a tensor (the Array API's rule); "
                        f"got {type(x1).__name__} and {type(x2).__name__}")
    values = as_tensor(x1, like=x2)
    if isinstance(x2, (bool, int, float)):   # (a Python scalar: weak, compared as == compares it)
        return values != x2 if invert else values == x2
    table = as_tensor(x2, like=values)
    same_device(values, table, name="isin")
    dtype = result_type(values.dtype, table.dtype)
    if table.size == 0:
        found = values._new(const(False, bool_, values.shape))
    else:
        flat = table.reshape(-1).astype(dtype)
        ordered = sort(flat)
        wanted = values.astype(dtype)
        place = searchsorted(ordered, wanted)   # (where it would go: there, if anywhere)
        found = take(ordered, place.clip(max=flat.size - 1)) == wanted
    return ~found if invert else found


class UniqueAll(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCounts(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverse(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(x: Any):
    x = as_tensor(x)
    values, indices, inverse, counts = np.unique(x.numpy().reshape(-1), return_index=True, return_inverse=True,
                                                 return_counts=True, equal_nan=False)
    device = x.device
    return (asarray(values, dtype=x.dtype, device=device), asarray(indices.astype(np.int64), device=device),
            asarray(inverse.astype(np.int64).reshape(x.shape), device=device),
            asarray(counts.astype(np.int64), device=device))


def unique_values(x: Any) -> Tensor:
    """The distinct values, sorted (each nan counts as distinct). Realizes `x` (the result's
    size depends on its values).

    >>> lt.unique_values(lt.asarray([2, 1, 2])).tolist()
    [1, 2]
    """
    return _unique(x)[0]


def unique_counts(x: Any) -> UniqueCounts:
    """(values, counts) of the distinct values. Realizes `x`.

    >>> values, counts = lt.unique_counts(lt.asarray([2, 1, 2]))
    >>> counts.tolist()
    [1, 2]
    """
    values, _, _, counts = _unique(x)
    return UniqueCounts(values, counts)


def unique_inverse(x: Any) -> UniqueInverse:
    """(values, inverse_indices): values[inverse_indices] rebuilds x. Realizes `x`.

    >>> lt.unique_inverse(lt.asarray([2, 1, 2])).inverse_indices.tolist()
    [1, 0, 1]
    """
    values, _, inverse, _ = _unique(x)
    return UniqueInverse(values, inverse)


def unique_all(x: Any) -> UniqueAll:
    """(values, indices of first occurrence, inverse_indices, counts). Realizes `x`.

    >>> lt.unique_all(lt.asarray([2, 1, 2])).indices.tolist()
    [1, 0]
    """
    return UniqueAll(*_unique(x))


# ---- PyTorch's names: topk and cumsum ---------------------------------------------------------------

class TopK(NamedTuple):
    """What `topk` returns (as PyTorch's torch.return_types.topk): values and int64 indices."""
    values: Tensor
    indices: Tensor


def topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:
    """PyTorch's topk: the `k` largest values along `dim` (the smallest with largest=False), in
    order (largest first), and their int64 indices. As in PyTorch a nan counts as larger than
    every number; values that tie come in the order of their indices. `sorted=False` is
    accepted (the result is sorted anyway). Gradients flow to the picked elements.

    >>> lt.topk(lt.asarray([1.0, 5.0, 3.0, 4.0]), 2)
    TopK(values=Tensor([5., 4.], dtype=float32, device='cpu'), indices=Tensor([1, 3], dtype=int64, device='cpu'))
    """
    x = as_tensor(x)
    if x.dtype.is_complex:
        raise TypeError("topk: complex values have no order; take lt.abs(x) or lt.real(x) first")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"topk: k must be an int, not {k!r}")
    if x.ndim == 0:   # (PyTorch's: one element, along dim 0 or -1)
        normalize_axes(dim, 1)
        if k not in (0, 1):
            raise ValueError(f"topk: k={k} is out of range for a 0-d tensor (it has one element)")
        values, indices = topk(x.reshape(1), k, 0, largest)
        if k:   # (tensors of their own, as every result of topk: not views of the 1-element ones)
            values, indices = (t._new(make(Op.RESHAPE, t.node, arg=())) for t in (values, indices))
        return TopK(values, indices)
    (axis,) = normalize_axes(dim, x.ndim)
    n = x.shape[axis]
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} is out of range for dim {dim} of length {n} (shape {x.shape}); "
                         f"it must be in [0, {n}]")
    if largest:   # descending with nan first and ties in index order: the ascending (stable) order
        # of x reversed along the axis, itself reversed
        reversed_order = x._new(make(Op.ARGSORT, flip(x, axis).node, arg=(axis, False)))
        order = (n - 1) - flip(reversed_order, axis)
    else:
        order = x._new(make(Op.ARGSORT, x.node, arg=(axis, False)))
    indices = order[(slice(None),) * axis + (slice(0, k),)]
    indices = indices._new(indices.node)   # (a tensor of its own, not a view of the whole order)
    return TopK(take_along_axis(x, indices, axis), indices)


def cumsum(x: Any, axis: Optional[int] = None, dtype: Any = None, *, dim: Optional[int] = None) -> Tensor:
    """Running sums along `axis` (PyTorch's `dim=`): numpy's cumsum, so the flattened tensor
    when no axis is given; integers and bool sum in int64 (unsigned in uint64) as in numpy and
    PyTorch. (The Array API's name is cumulative_sum.)

    >>> lt.cumsum(lt.asarray([[1, 2], [3, 4]]), dim=1).tolist()
    [[1, 3], [3, 7]]
    """
    return as_tensor(x).cumsum(axis, dtype, dim=dim)


class Sorting:
    """Tensor's methods of this family (attached below)."""

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:
        """PyTorch's topk: the k largest values along `dim` and their indices (see lt.topk).

        >>> lt.asarray([[1, 9, 4]]).topk(2).indices.tolist()
        [[1, 2]]
        """
        return topk(self, k, dim, largest, sorted)

    def cumsum(self, axis=None, dtype=None, out=None, *, dim=None) -> "Tensor":
        """Running sums along `axis` (PyTorch's `dim`; numpy's: the flattened tensor when none
        is given; see lt.cumsum).

        >>> lt.asarray([1, 2, 3]).cumsum(0).tolist()
        [1, 3, 6]
        """
        _no_out(out, "cumsum")
        axis = spelled_once("cumsum", axis, None, dim, "the axis as axis (numpy's) or dim= (PyTorch's)")
        if axis is None:
            return cumulative_sum(self.reshape(-1), axis=0, dtype=dtype)
        if self.ndim == 0:   # (PyTorch's: a 0-d tensor along dim 0 or -1)
            normalize_axes(axis, 1)
            summed = cumulative_sum(self.reshape(1), axis=0, dtype=dtype)
            return summed._new(make(Op.RESHAPE, summed.node, arg=()))
        return cumulative_sum(self, axis=axis, dtype=dtype)


attach_methods(Sorting)

__all__ = ["sort", "argsort", "cumulative_sum", "cumulative_prod", "searchsorted", "isin", "unique_values",
           "unique_counts", "unique_inverse", "unique_all", "topk", "cumsum"]
