"""Indexing: `x[index]` and `x[index] = value` (Tensor's __getitem__/__setitem__: basic indices
are movement.py's views; integer elements are read without a kernel where their memory is
there, host.py), and the data-dependent ops: gather (`take`, numpy's advanced indexing
`x[i, j]`), `nonzero`, writes through array indices and the unbuffered accumulate `index_add`.

A gather stays lazy and fuses: `take(exp(x), idx)` is one kernel that computes exp only at the
picked elements. In `x[...]` and `index_add`, indices given as lists or numpy arrays are checked
where the index is written (IndexError, as numpy); the values of a lazy tensor index are not known there, so a kernel
wraps negative ones once (they count from the end) and clamps the rest into range. Operations
whose result shape depends on values (`nonzero`, boolean masks) realize their input first, as
their docstrings say.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from . import capture, views
from .creation import arange, asarray
from .devices import runtime
from .host import VIEWS, host_value, read_element, realized
from .ir.dtypes import int64
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .movement import _apply_basic, basic_index, basic_moves, is_element, permute, reshape, written_value
from .operands import as_tensor, broadcast_node, broadcast_shapes, normalize_axes, where
from .tensor import Tensor, attach_methods


# ---- x[index] and x[index] = value ---------------------------------------------------------------

class Indexing:
    """Tensor's indexing methods (attached below)."""

    def __getitem__(self, index) -> "Tensor":
        kind = type(index)
        if kind is int or kind is tuple:   # (reading elements is common: cheap, past the general rules)
            found = elements(self, (index,) if kind is int else index)
            if found is not None:
                return found
        hook = _index_variables(index, kind)
        if hook is not None:   # (inside lt.compute: x[i, j] over its index variables)
            return hook(self, index)
        items = _integer_items(index) if kind is Tensor or kind is tuple else None
        if items is not None:   # 0-d integer tensors index as their ints (numpy's result: a copy)
            return views.fresh(self[items])
        return getitem(self, index)

    def __setitem__(self, index, value) -> None:
        """x[index] = value: lazy, like every other op (numpy's last-write-wins for repeats)."""
        setitem(self, index, value)


attach_methods(Indexing)


def _is_array_index(item: Any) -> bool:
    return isinstance(item, (Tensor, np.ndarray, list, tuple)) or isinstance(item, (bool, np.bool_))


def getitem(x: Tensor, index: Any) -> Tensor:
    """numpy indexing: ints (negative too), slices with steps, None, Ellipsis (all views), and
    numpy's advanced indexing: integer arrays broadcast together and boolean masks (which realize
    the mask), mixed with the rest (below)."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(_is_array_index(item) for item in items):
        slices, final_shape = basic_index(x, items)
        if is_element(items, x.ndim):   # one element by integers: a value of its own, as numpy's scalar
            return x._new(views.apply(x.node, basic_moves(x, slices, final_shape)))
        return _apply_basic(x, slices, final_shape)
    return advanced_index(x, items)


def setitem(x: Tensor, index: Any, value: Any) -> None:
    """x[index] = value, lazily (x's node becomes a select between value and x). A basic index
    puts the value back through the index's movement ops (views.put_back: pads, reshapes); an
    array index realizes only the written positions. An empty target writes nothing (the value
    must still broadcast to it, as in numpy)."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(_is_array_index(item) for item in items):
        slices, final_shape = basic_index(x, items)
        piece = written_value(x, value, tuple(final_shape), element=is_element(items, x.ndim))
        if piece.size:
            moves = basic_moves(x, slices, final_shape)
            with views.WRITING:   # (x's value read and replaced at once: see views.WRITING)
                x._set_node(views.put_back(x.node, moves, piece.node))
        return
    assign(x, index, value)



def _index_variables(index: Any, kind: type):
    """The indexing of lt.compute's index variables where `index` holds one (compute.py: an
    index expression carries it), else None."""
    for item in (index if kind is tuple else (index,)):
        hook = getattr(item, "_lt_index_into", None)
        if hook is not None:
            return hook
    return None


def elements(x: Tensor, items: tuple) -> Optional[Tensor]:
    """x[i, j, ...] with Python ints (fewer than x.ndim: the rest are whole axes); None where an
    item is anything else (the general rules decide)."""
    shape = x.node.shape
    slices = []
    for i, size in zip(items, shape):
        if type(i) is not int:
            return None
        if i < 0:
            i += size
        if not 0 <= i < size:
            axis = len(slices)
            raise IndexError(f"index {items[axis]} is out of bounds for axis {axis} with size {size}")
        slices.append((i, i + 1, 1))
    if len(items) != len(slices):   # (more items than axes, or a non-int among the extra ones)
        if any(type(i) is not int for i in items):
            return None
        raise IndexError(f"too many indices for tensor: tensor is {x.ndim}-dimensional, but {len(items)} were indexed")
    if not items:   # x[()]: of a 0-d tensor its value (numpy's scalar), else a view of all of it
        return x._new(x.node) if not x.ndim else views.view(x, ())
    rest = shape[len(items):]
    if rest:
        return views.view(x, ((Op.SHRINK, tuple(slices) + tuple([(0, n, 1) for n in rest])), (Op.RESHAPE, rest)))
    # one element: a value of its own, as numpy's scalar (its nodes made directly: shapes known)
    shrunk = Node(Op.SHRINK, x.node.dtype, (1,) * len(items), (x.node,), tuple(slices))
    return Tensor(Node(Op.RESHAPE, shrunk.dtype, (), (shrunk,), ()), x.device)

def _integer_items(index: Any) -> Optional[tuple]:
    """`index` with its 0-d integer tensors replaced by their values, where those are the only
    tensors in it and their values can be read without a kernel (elements of realized memory, or
    a few host operations on them: x[k[i], k[j]] in a loop would otherwise gather with a kernel
    compiled per step); else None."""
    items = index if type(index) is tuple else (index,)
    if capture.RECORDING is not None or not any(type(i) is Tensor for i in items):
        return None
    converted = []
    for item in items:
        if type(item) is Tensor:
            if item.node.size != 1 or item.node.shape or not item.dtype.is_integer:
                return None
            node = item.node
            found = realized(node)
            value = (runtime(item.device).device.read(found.arg, 0, 1) if found is not None else
                     read_element(node, item.device) if node.op in VIEWS else None)
            if value is None:
                value = host_value(node, item.device)
            if value is None:
                return None
            item = int(np.asarray(value).reshape(()))
        elif isinstance(item, (list, np.ndarray)) or hasattr(item, "__array__"):
            return None   # (other arrays: numpy's advanced indexing, as before)
        converted.append(item)
    return tuple(converted)


# ---- gathers, scatters and array indices -----------------------------------------------------------

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


def take_along_axis(x: Any, indices: Any, axis: int = -1) -> Tensor:
    """out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis` (numpy.take_along_axis;
    the last axis by default, as the Array API's); the other axes of `indices` broadcast against `x`.

    >>> lt.take_along_axis(lt.asarray([[10, 20], [30, 40]]), lt.asarray([[1], [0]]), 1).tolist()
    [[20], [30]]
    """
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
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d tensor is not defined; use x.reshape(1)")
    return tuple(asarray(i.astype(np.int64), device=x.device) for i in np.nonzero(x.numpy()))


# ---- numpy's advanced indexing -------------------------------------------------------------------
# x[items]: integer arrays (and boolean masks, each k-d mask standing for the k integer arrays of
# its nonzero positions) broadcast together to one shape B; the axes they index are replaced by
# B's axes in the result -- where the first advanced index stood when the advanced indices are
# adjacent, else first. With arrays present, integers count as advanced indices too (they pick
# their element, and a slice or None between them and an array moves B's axes first). It is
# computed as the basic part (a view), then one gather along the indexed axes merged into one,
# at a flat index computed from the broadcast arrays (on the host where they are host data).

class _Array:
    """An advanced index over one axis of the basic result: host values or a lazy tensor."""
    def __init__(self, values: Any, at: int, n: int, axis: int):
        self.values, self.at, self.n, self.axis = values, at, n, axis   # at: its axis in the basic result

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)


def advanced_index(x: Tensor, items: tuple) -> Tensor:
    """x[items] for an index with at least one integer array or boolean mask (numpy's rules)."""
    # adjacent: nothing but advanced indices between the first and the last (an Ellipsis that
    # stands for no axis still separates them, as in numpy)
    advanced_at = [p for p, item in enumerate(items) if _is_advanced(item) or _is_integer(item)]
    adjacent = advanced_at == list(range(advanced_at[0], advanced_at[-1] + 1))
    items = _expand(items, x.ndim)
    basic: list = []          # the basic part: slices and Nones; an integer that applies as one
    arrays: list[_Array] = []
    axis = 0   # of x
    r_axis = 0   # of the basic part's result
    for item in items:
        if item is None:
            basic.append(None)
            r_axis += 1
        elif isinstance(item, slice):
            basic.append(item)
            r_axis, axis = r_axis + 1, axis + 1
        elif not _is_advanced(item):   # an integer: applied by the basic part, advanced for placement
            basic.append(item)
            axis += 1
        elif _is_mask(item):
            mask = _mask_values(item, x)
            if mask.ndim == 0:   # adds an axis of length 1, indexed by [0] when True, [] when False
                basic.append(None)
                arrays.append(_Array(np.zeros(int(mask), np.int64), r_axis, 1, -1))
                r_axis += 1
            else:
                covered = x.shape[axis:axis + mask.ndim]   # (an empty mask axis selects nothing of any axis: numpy's)
                if len(covered) != mask.ndim or any(m not in (n, 0) for m, n in zip(mask.shape, covered)):
                    raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed axes "
                                     f"{covered} (axes {axis}..{axis + mask.ndim - 1} of shape {x.shape}); "
                                     "a mask covers the axes it indexes exactly (or is empty along them)")
                for positions in np.nonzero(mask):
                    basic.append(slice(None))
                    arrays.append(_Array(positions.astype(np.int64), r_axis, x.shape[axis], axis))
                    r_axis, axis = r_axis + 1, axis + 1
        else:
            basic.append(slice(None))
            arrays.append(_Array(_integer_array(item, x), r_axis, x.shape[axis], axis))
            r_axis, axis = r_axis + 1, axis + 1
    result = _apply_basic(x, *basic_index(x, tuple(basic)))
    try:
        shape = broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(a.shape) for a in arrays) + "; give the integer arrays (and the "
                         "masks' numbers of True values) shapes that broadcast, as numpy does") from None
    for a in arrays:
        _check_bounds(a, shape)
    at = arrays[0].at if adjacent else 0
    if not adjacent:   # the indexed axes first, in order
        moved = [a.at for a in arrays]
        result = permute(result, moved + [r for r in range(result.ndim) if r not in moved])
    k = len(arrays)
    if k == 1:
        (only,) = arrays
        index = only.values if isinstance(only.values, Tensor) else _device_index(only.values, x)
        return take(result, index, axis=at)
    sizes = result.shape[at:at + k]
    merged = reshape(result, result.shape[:at] + (math.prod(sizes),) + result.shape[at + k:])
    return take(merged, _flat_index(arrays, sizes, shape, x), axis=at)


def _flat_index(arrays: list[_Array], sizes: tuple[int, ...], shape: tuple[int, ...], x: Tensor) -> Any:
    """The position in the merged axes (row-major over `sizes`) that each element of the broadcast
    index picks: computed with numpy where every array is host data, else lazily, each lazy
    index wrapped and clamped within its own axis first (as a gather does along one)."""
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    if not any(isinstance(a.values, Tensor) for a in arrays):
        flat = np.zeros(shape, np.int64)
        for a, stride in zip(arrays, strides):
            if a.n:
                flat += (a.values.astype(np.int64) % a.n) * stride
        return _device_index(flat, x)
    flat = None
    for a, stride in zip(arrays, strides):
        if isinstance(a.values, Tensor):   # (graph nodes built directly: no promotion rules to apply)
            i = a.values.node if a.values.dtype is int64 else make(Op.CAST, a.values.node, arg=int64)
            wrapped = make(Op.WHERE, make(Op.CMPLT, i, _const(0, i)), make(Op.ADD, i, _const(a.n, i)), i)
            i = make(Op.MIN, make(Op.MAX, wrapped, _const(0, i)), _const(max(a.n - 1, 0), i))
        else:
            i = _device_index(a.values.astype(np.int64) % max(a.n, 1), x).node
        term = make(Op.MUL, i, _const(stride, i)) if stride != 1 else i
        term = broadcast_node(term, shape)
        flat = term if flat is None else make(Op.ADD, flat, term)
    return x._new(flat)


def _const(value: int, like: Node) -> Node:
    return const(value, like.dtype, like.shape)


def _device_index(values: np.ndarray, x: Tensor) -> Tensor:
    return asarray(values, device=x.device)


def _check_bounds(a: _Array, shape: tuple[int, ...]) -> None:
    """numpy's IndexError for host indices out of range. A lazy index is clamped (its values are
    not known before it runs); so is one that indexes an empty axis, where it must be empty."""
    if isinstance(a.values, Tensor):
        # (numpy reads a 0-d index as an integer, checked whatever the other arrays' shapes)
        if a.n == 0 and (math.prod(shape) or a.values.ndim == 0):
            raise IndexError(f"index is out of bounds for axis {a.axis} with size 0 (an index of shape "
                             f"{shape} into an empty axis); index an empty axis with an empty index only")
        return
    values = a.values
    if values.size and (math.prod(shape) or values.ndim == 0):   # (a 0-d index is checked as an integer is)
        _raise_out_of_bounds(values, a.n, a.axis, "")


def _raise_out_of_bounds(values: np.ndarray, n: int, axis: int, what: str) -> None:
    """IndexError naming the first index out of [-n, n) (numpy's message), if any."""
    if values.min() < -n or values.max() >= n:
        bad = values[(values < -n) | (values >= n)].flat[0]
        fits = f"indices lie in [-{n}, {n})" if n else "an empty axis takes only an empty index"
        raise IndexError(f"{what}index {int(bad)} is out of bounds for axis {axis} with size {n}; {fits}")


def _is_integer(item: Any) -> bool:
    return hasattr(item, "__index__") and not isinstance(item, (bool, np.bool_))


def _is_advanced(item: Any) -> bool:
    return isinstance(item, (Tensor, np.ndarray, list, tuple, bool, np.bool_))


def _is_mask(item: Any) -> bool:
    if isinstance(item, Tensor):
        return item.dtype.is_bool
    if isinstance(item, (bool, np.bool_)):
        return True
    return _host_array(item).dtype == np.bool_


def _host_array(item: Any) -> np.ndarray:
    if isinstance(item, (list, tuple)) and np.size(item) == 0:
        return np.zeros(np.shape(item), np.int64)   # numpy reads an empty list ([], [[]]) as integers
    try:
        return np.asarray(item)
    except ValueError:   # (ragged)
        raise IndexError(f"an index list must be rectangular (one shape), not {item!r}") from None


def _mask_values(item: Any, x: Tensor) -> np.ndarray:
    if isinstance(item, Tensor):
        if item.device != x.device:
            raise ValueError(f"indexing: the boolean mask is on {item.device} but the tensor is on {x.device}; "
                             "move it with .to(device)")
        return item.numpy()   # (its positions decide the result's shape: the mask is realized)
    return np.asarray(item, dtype=bool)


def _integer_array(item: Any, x: Tensor) -> Any:
    """An integer array index as a lazy tensor (a Tensor) or host values (anything else)."""
    if isinstance(item, Tensor):
        if not item.dtype.is_integer:
            raise IndexError(f"arrays used as indices must hold integers (or booleans), not {item.dtype.name}; "
                             "convert the index with .astype(lt.int64)")
        if item.device != x.device:
            raise ValueError(f"indexing: the index is on {item.device} but the tensor is on {x.device}; "
                             "move it with .to(device)")
        return item
    values = _host_array(item)
    if values.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must hold integers (or booleans), not {values.dtype}; "
                         "convert the index with .astype(int)")
    return values


def _expand(items: tuple, ndim: int) -> tuple:
    """The index with its Ellipsis (or the missing trailing axes) spelled out as full slices."""
    def covers(item: Any) -> int:
        if item is None or item is Ellipsis:
            return 0
        if _is_advanced(item) and _is_mask(item):
            return item.ndim if isinstance(item, Tensor) else _host_array(item).ndim
        return 1
    used = sum(covers(item) for item in items)
    if used > ndim:
        raise IndexError(f"too many indices for tensor: tensor is {ndim}-dimensional, but {used} were indexed")
    ellipses = [p for p, item in enumerate(items) if item is Ellipsis]   # (`in` would compare arrays)
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, slice) or _is_advanced(item)
                or hasattr(item, "__index__")):
            raise IndexError(f"only integers, slices (:), ellipsis (...), None, integer arrays and "
                             f"boolean arrays are valid indices, not {item!r}")
    if ellipses:
        at = ellipses[0]
        return items[:at] + (slice(None),) * (ndim - used) + items[at + 1:]
    return items + (slice(None),) * (ndim - used)


def assign(x: Tensor, index: Any, value: Any) -> None:
    """x[index] = value, lazily: x's node becomes `where(written, value, x)`; x keeps its dtype.
    Works for every index that reads work for."""
    positions = _positions(x)
    target = getitem(positions, index)            # which flat position each written element hits
    if target.size == 0 and (value.size if isinstance(value, Tensor) else np.size(value)) == 0:
        return   # nothing into nothing: numpy's array-index writes check no shapes then
    value = written_value(x, value, target.shape, element=is_element(index, x.ndim))
    if target.size == 0:
        return
    written, source = _scatter_map(target, x.size)
    update = take(value.reshape(-1), source.reshape(x.shape), axis=None)
    with views.WRITING:   # (x's value read and replaced at once: see views.WRITING)
        x._set_node(where(written.reshape(x.shape), update, x).node)


def index_add(x: Any, index: Any, values: Any, axis: int = 0) -> Tensor:
    """A new tensor: `x` with `values` added at the integer `index` along `axis`, every repeat of
    an index adding again (unbuffered: numpy's np.add.at, PyTorch's index_add). `x[index] += v`
    is numpy's buffered read-add-write instead: a repeated index adds once, the last repeat's
    value. `values` has (or broadcasts to) the shape of `lt.take(x, index, axis)`:
    x.shape[:axis] + index.shape + x.shape[axis + 1:], and is cast to x's dtype. The values that
    meet at one position are summed in index order, then added to x (floats may round apart from
    np.add.at, which adds each into x in turn). Several index
    arrays at once go through one flat index: index_add(x.reshape(-1), i * x.shape[1] + j, v).
    A list or numpy index out of range raises IndexError; a lazy tensor's indices are clamped into
    range, negative ones counting from the end, as in a gather (its transpose). The gradient of
    x[idx] (a gather) is this scatter-add into zeros, and the gradient of `values` a gather.

    >>> lt.index_add(lt.zeros(4), [0, 2, 0], lt.asarray([1.0, 2.0, 3.0])).tolist()
    [4.0, 0.0, 2.0, 0.0]
    >>> lt.index_add(lt.zeros((2, 3), dtype=lt.int32), lt.asarray([1, 1]), 1, axis=1).tolist()
    [[0, 2, 0], [0, 2, 0]]
    """
    x = as_tensor(x)
    (axis,) = normalize_axes(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(index, Tensor):
        index = _integer_array(index, x)
    else:
        host = _integer_array(index, x)
        if host.size:
            _raise_out_of_bounds(host, n, axis, "index_add: ")
        index = _device_index(host, x)
    shape = x.shape[:axis] + index.shape + x.shape[axis + 1:]
    if isinstance(values, Tensor):
        if values.device != x.device:
            raise ValueError(f"index_add: the values are on {values.device} but x is on {x.device}; "
                             "move them with .to(device)")
        values = values.astype(x.dtype)
    else:
        values = asarray(np.asarray(values).astype(x.dtype.np), dtype=x.dtype, device=x.device)
    try:
        values = values.broadcast_to(shape)
    except ValueError:
        raise ValueError(f"index_add: values of shape {values.shape} do not broadcast to {shape}, the shape of "
                         f"lt.take(x, index, axis={axis}) for x of shape {x.shape} and index of shape "
                         f"{index.shape}") from None
    added = x._new(make(Op.SCATTER_ADD, index.node, values.node, arg=(axis, n)))
    return (x + added).astype(x.dtype)


def _positions(x: Tensor) -> Tensor:
    return arange(x.size, device=x.device).reshape(x.shape)


def _scatter_map(target: Tensor, size: int) -> tuple[Tensor, Tensor]:
    """For every flat position of x: is it written, and by which element of the value (the last
    write wins, as in numpy). This realizes the written positions (the index, not x or value)."""
    hit = target.numpy().reshape(-1)
    source = np.full(size, 0, dtype=np.int64)
    written = np.zeros(size, dtype=bool)
    source[hit] = np.arange(hit.size)
    written[hit] = True
    return asarray(written, device=target.device), asarray(source, device=target.device)


__all__ = ["take", "take_along_axis", "nonzero", "index_add"]
