"""Movement ops and basic indexing (the views x[index] takes, indexing.py dispatches there):
each records a view node, never a copy. Tensor's movement methods are at the end."""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .ir.dtypes import bool_, result_type
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from . import views
from .creation import asarray
from .ir.arith import cast
from .operands import as_tensor, broadcast_shapes, normalize_axes, where
from .tensor import AxisError, Scalar, Tensor, attach_methods, one_axis, shape_arg, spelled_once


def reshape(x: Tensor, shape: Any) -> Tensor:
    """The same values in `shape`; one axis may be -1.

    >>> lt.reshape(lt.arange(6), (3, -1)).shape
    (3, 2)
    """
    dims = shape_arg(shape, "reshape")
    unknown = [i for i, n in enumerate(dims) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in dims):
        raise ValueError(f"reshape: bad shape {dims}: at most one axis may be -1 and none below -1")
    size = x.node.size
    if unknown:
        known = math.prod(n for n in dims if n != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape tensor of size {size} into shape {dims}")
        dims = tuple(size // known if n == -1 else n for n in dims)
    if math.prod(dims) != size:
        raise ValueError(f"cannot reshape tensor of size {size} (shape {x.shape}) into shape {dims}")
    if not views.reshape_is_view(x, dims):
        return x._new(make(Op.RESHAPE, x.node, arg=dims))   # (numpy copies here: a new tensor)
    return views.view(x, ((Op.RESHAPE, dims),))


def permute(x: Tensor, axes: Sequence[int]) -> Tensor:
    """Result axis i is input axis axes[i].

    >>> lt.permute(lt.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    order = tuple(int(a) % x.ndim if x.ndim and -x.ndim <= a < x.ndim else a for a in axes)
    if sorted(order) != list(range(x.ndim)):
        raise ValueError(f"permute: axes {tuple(axes)} are not a permutation of the {x.ndim} axes of shape {x.shape}")
    return views.view(x, ((Op.PERMUTE, order),))


def broadcast_to(x: Tensor, shape: Any) -> Tensor:
    """`x` repeated (without copying) to `shape`, by numpy's broadcasting rule.

    >>> lt.broadcast_to(lt.asarray([1, 2]), (2, 2)).tolist()
    [[1, 2], [1, 2]]
    """
    dims = shape_arg(shape, "broadcast_to")
    if len(dims) < x.ndim or broadcast_shapes(x.shape, dims) != dims:
        raise ValueError(f"cannot broadcast a tensor of shape {x.shape} to shape {dims}")
    padded = (1,) * (len(dims) - x.ndim) + x.shape
    moves = ((Op.RESHAPE, padded),) if padded != x.shape else ()
    moves += ((Op.EXPAND, dims),) if padded != dims else ()
    return views.view(x, moves, readonly=bool(moves))   # (numpy's broadcast view is read-only)


def squeeze(x: Tensor, axis: Any = None) -> Tensor:
    """Remove axes of size 1 (all of them, or those named).

    >>> lt.squeeze(lt.zeros((1, 3, 1))).shape
    (3,)
    """
    if axis is None:
        axes = tuple(a for a, n in enumerate(x.shape) if n == 1)
    else:
        axes = normalize_axes(axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 (shape {x.shape})")
    return reshape(x, tuple(n for a, n in enumerate(x.shape) if a not in axes))


def expand_dims(x: Tensor, axis: int) -> Tensor:
    """A new axis of size 1 at position `axis` (negative counts from the end of the result).

    >>> lt.expand_dims(lt.zeros(3), 0).shape
    (1, 3)
    """
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise AxisError(f"axis {axis} is out of bounds for a result of dimension {x.ndim + 1}")
    axis = axis % (x.ndim + 1)
    return reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])


def flip(x: Tensor, axis: Any = None) -> Tensor:
    """Reverse the order of elements along `axis` (all axes when None).

    >>> lt.flip(lt.arange(3)).tolist()
    [2, 1, 0]
    """
    return views.view(x, ((Op.FLIP, normalize_axes(axis, x.ndim)),))


def _pad_widths(pad_width: Any, ndim: int) -> tuple[tuple[int, int], ...]:
    # numpy's forms: n, (n,), (before, after), ((before, after),), one (n,) or pair per axis
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (ndim, 2))
    if (widths < 0).any():
        raise ValueError(f"pad: widths must be non-negative, got {pad_width!r}")
    return tuple((int(b), int(a)) for b, a in widths)


def pad(x: Tensor, pad_width: Any, value: Any = 0) -> Tensor:
    """Pad with a constant, numpy.pad style: an int, (before, after), or one pair per axis.

    >>> lt.asarray([1, 2]).pad((1, 2)).tolist()
    [0, 1, 2, 0, 0]
    """
    try:
        widths = _pad_widths(pad_width, x.ndim)
    except ValueError as error:
        raise ValueError(f"pad: cannot use pad_width {pad_width!r} for shape {x.shape}: {error}") from None
    padded = make(Op.PAD, x.node, arg=widths)
    if value == 0 and not (x.dtype.is_float and math.copysign(1.0, value) < 0):   # (-0.0 pads -0.0)
        return x._new(padded)
    inside = make(Op.PAD, const(True, bool_, x.shape), arg=widths)
    return where(x._new(inside), x._new(padded), value).astype(x.dtype)


def _expand_ellipsis(items: tuple, ndim: int) -> tuple:
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for tensor: tensor is {ndim}-dimensional, but {used} were indexed")
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        return items[:at] + (slice(None),) * (ndim - used) + items[at + 1:]
    return items + (slice(None),) * (ndim - used)


def basic_index(x: Tensor, items: tuple) -> tuple[list[tuple[int, int, int]], list[int]]:
    """(start, stop, step) per axis of x, and the result's shape, for a basic index."""
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, slice) or hasattr(item, "__index__")):
            raise IndexError(f"only integers, slices (:), ellipsis (...), None, integer arrays and "
                             f"boolean arrays are valid indices, not {item!r}")
    slices, final_shape, axis = [], [], 0
    for item in _expand_ellipsis(items, x.ndim):
        if item is None:
            final_shape.append(1)
            continue
        size = x.shape[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            slices.append((start, stop, step))
            final_shape.append(len(range(start, stop, step)))
        else:
            i = operator.index(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
            i %= size
            slices.append((i, i + 1, 1))
        axis += 1
    return slices, final_shape


def _apply_basic(x: Tensor, slices, final_shape) -> Tensor:
    return views.view(x, basic_moves(x, slices, final_shape))


def basic_moves(x: Tensor, slices, final_shape) -> tuple:
    """The movement ops of a basic index (see basic_index): a shrink, then a reshape."""
    moves: tuple = ()
    if slices:   # (a whole slice too, `x[:T]` at T == len(x): the graph keeps the shape of a
        moves += ((Op.SHRINK, tuple(slices)),)   # shorter one, so sizes.py finds one template for all T)
    shrunk = tuple(len(range(*s)) for s in slices)
    if shrunk != tuple(final_shape):
        moves += ((Op.RESHAPE, tuple(final_shape)),)
    return moves


def is_element(index: Any, ndim: int) -> bool:
    """Whether an index picks one element of a tensor of `ndim` axes by integers alone, 0-d
    integer arrays counting as integers (x[1, 0] of a matrix: numpy sets it from a scalar only,
    not from an array of one)."""
    def integer(item: Any) -> bool:
        if isinstance(item, (Tensor, np.ndarray)):
            return item.ndim == 0 and item.dtype.kind in "iu"
        return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))
    items = index if isinstance(index, tuple) else (index,)
    return len(items) == ndim and all(integer(item) for item in items)


def written_value(x: Tensor, value: Any, shape: tuple[int, ...], element: bool = False) -> Tensor:
    """`value` for `x[index] = value`: in x's dtype on x's device (see `_in_dtype_of`), broadcast
    to `shape`, the written part of x. As in numpy, an array (not a list) may have more leading
    axes than the target where they have size 1, unless the target is an `element` picked by
    integers alone."""
    converted = _in_dtype_of(x, value)
    extra = converted.ndim - len(shape)
    if extra > 0 and not element and not isinstance(value, (list, tuple)) \
            and all(n == 1 for n in converted.shape[:extra]):
        converted = converted.reshape(converted.shape[extra:])
    try:
        return converted.broadcast_to(shape)
    except ValueError:
        raise ValueError(f"setitem: could not broadcast a value of shape {np.shape(value)} into the written "
                         f"shape {shape}") from None


def _in_dtype_of(x: Tensor, value: Any) -> Tensor:
    """`value` in x's dtype on x's device. Python and numpy data convert straight to x's dtype
    by numpy's own assignment (so a float written into float64 keeps every digit, 2**64 - 1 fits
    uint64, and 300 into uint8 or nan into int64 raise as in numpy): made into a tensor of its own
    first, a Python float would be rounded to float32, the default float. A scalar becomes a
    constant (no buffer, no copy to the device); a Tensor is cast."""
    if isinstance(value, Tensor):
        if value.device != x.device:
            raise ValueError(f"setitem: the value is on {value.device} but the tensor on {x.device}; "
                             "move it with .to(device)")
        return value.astype(x.dtype)
    holder = np.empty(np.shape(value), x.dtype.np)
    holder[...] = value   # numpy's conversion, checks and all
    if holder.ndim == 0:
        return Tensor(const(holder.item(), x.dtype, ()), x.device)
    return asarray(holder, dtype=x.dtype, device=x.device)


def concatenate(tensors: Sequence[Tensor], axis: Any = 0) -> Tensor:
    """Join tensors along an existing axis (dtypes promoted like numpy); with axis=None, the
    flattened tensors, as numpy's.

    >>> lt.concatenate([lt.zeros(2), lt.ones(1)]).tolist()
    [0.0, 0.0, 1.0]
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("need at least one tensor to concatenate")
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    tensors = [as_tensor(t, like) for t in tensors]
    if axis is None:
        tensors, axis = [t.reshape(-1) for t in tensors], 0
    ndim = tensors[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional tensors cannot be concatenated")
    (axis,) = normalize_axes(axis, ndim)
    for t in tensors:
        if t.ndim != ndim or any(n != m for a, (n, m) in enumerate(zip(t.shape, tensors[0].shape)) if a != axis):
            raise ValueError("concatenate: all shapes must match except on axis "
                             f"{axis}; got {[tuple(t.shape) for t in tensors]}")
        if t.device != tensors[0].device:
            raise ValueError(f"concatenate: tensors on different devices ({tensors[0].device}, {t.device})")
    dtype = result_type(*[t.dtype for t in tensors])
    total = sum(t.shape[axis] for t in tensors)
    result: Node | None = None
    offset = 0
    for t in tensors:
        n = t.shape[axis]
        widths = tuple((offset, total - offset - n) if a == axis else (0, 0) for a in range(ndim))
        offset += n
        if n == 0 and result is not None:
            continue
        piece = make(Op.PAD, cast(t.node, dtype), arg=widths)
        if result is None:
            result = piece
        else:
            inside = make(Op.PAD, const(True, bool_, t.shape), arg=widths)
            result = make(Op.WHERE, inside, piece, result)
    return Tensor(result, tensors[0].device)


def stack(tensors: Sequence[Tensor], axis: int = 0, *, dim: Any = None) -> Tensor:
    """Join tensors of one shape along a new axis (`dim=` is PyTorch's name for `axis`).

    >>> lt.stack([lt.zeros(2), lt.ones(2)]).tolist()
    [[0.0, 0.0], [1.0, 1.0]]
    >>> lt.stack([lt.zeros(2), lt.ones(2)], dim=1).shape
    (2, 2)
    """
    axis = spelled_once("stack", axis, 0, dim, "the new axis as axis (numpy's) or dim= (PyTorch's)")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("need at least one tensor to stack")
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    tensors = [as_tensor(t, like) for t in tensors]
    if any(t.shape != tensors[0].shape for t in tensors):
        raise ValueError(f"stack: all tensors must have the same shape; got {[t.shape for t in tensors]}")
    return concatenate([expand_dims(t, axis) for t in tensors], axis=axis)


def split(x: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """PyTorch's split: views of `x` along `dim`, each `split_size_or_sections` long (an int;
    the last may be shorter) or of the lengths a list gives (they must add up to the axis).
    (numpy's `np.split`, which takes the number of pieces or where to cut, stays numpy's.)

    >>> [t.tolist() for t in lt.split(lt.arange(5), 2)]
    [[0, 1], [2, 3], [4]]
    >>> [t.shape for t in lt.split(lt.zeros((2, 5)), [1, 4], dim=1)]
    [(2, 1), (2, 4)]
    """
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError("split: a 0-d tensor has no axis to split; reshape it first")
    axis = one_axis(dim, x.ndim, "split")
    n = x.shape[axis]
    if isinstance(split_size_or_sections, (tuple, list)):
        sizes = [operator.index(k) for k in split_size_or_sections]
        if any(k < 0 for k in sizes) or sum(sizes) != n:
            raise ValueError(f"split: sections {sizes} must be non-negative and add up to {n}, the length of "
                             f"dim {dim} of shape {x.shape}")
    else:
        if isinstance(split_size_or_sections, bool) or not isinstance(split_size_or_sections, (int, np.integer)):
            raise TypeError(f"split: takes an int (the length of each piece) or a list of lengths, not "
                            f"{split_size_or_sections!r}")
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n):
            raise ValueError(f"split: the length of each piece must be positive (0 only for an empty axis), not "
                             f"{size} (dim {dim} of shape {x.shape} has length {n})")
        sizes = [min(size, n - start) for start in range(0, n, size)] if n else [0]
    pieces, start = [], 0
    for k in sizes:
        pieces.append(x[(slice(None),) * axis + (slice(start, start + k),)])
        start += k
    return tuple(pieces)


def chunk(x: Any, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """PyTorch's chunk: `x` split along `dim` into pieces of ceil(length / chunks) (views; the
    last may be shorter, and there may be fewer than `chunks` of them, as in PyTorch).

    >>> [t.tolist() for t in lt.chunk(lt.arange(5), 3)]
    [[0, 1], [2, 3], [4]]
    """
    x = as_tensor(x)
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, not {chunks!r}")
    if x.ndim == 0:
        raise ValueError("chunk: a 0-d tensor has no axis to split; reshape it first")
    n = x.shape[one_axis(dim, x.ndim, "chunk")]
    if n == 0:   # (PyTorch's: `chunks` empty pieces)
        return split(x, [0] * int(chunks), dim)
    return split(x, -(-n // int(chunks)), dim)


# ---- Tensor's movement methods -------------------------------------------------------------------

class Movement:
    """Tensor's movement methods (attached below): views, as the functions above make them."""

    @property
    def T(self) -> "Tensor":
        return self.transpose()

    @property
    def mT(self) -> "Tensor":
        """The last two axes swapped (a stack of matrices, transposed)."""
        if self.ndim < 2:
            raise ValueError(f"mT needs at least 2 dimensions; this tensor has shape {self.shape}")
        return self.permute(tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2))

    def reshape(self, *shape) -> "Tensor":
        """The same values in a new shape; one axis may be -1.

        >>> lt.arange(6).reshape(2, -1).shape
        (2, 3)
        """
        return reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)

    def permute(self, *axes) -> "Tensor":
        """Axes reordered: result axis i is input axis axes[i].

        >>> lt.zeros((2, 3, 4)).permute(2, 0, 1).shape
        (4, 2, 3)
        """
        return permute(self, axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes)

    def transpose(self, *axes, dim0=None, dim1=None) -> "Tensor":
        """With two ints, PyTorch's transpose: axes `dim0` and `dim1` swapped (negative ones
        count from the end), on any number of axes -- so on a matrix `x.transpose(0, 1)` is its
        transpose, as in PyTorch (numpy's would be the identity). Otherwise numpy's: the axes
        reversed (no argument), or reordered like `permute` (a tuple, or as many ints as the
        tensor has axes where that is not 2). A view.

        >>> lt.zeros((2, 3, 4)).transpose(0, -1).shape
        (4, 3, 2)
        >>> lt.zeros((2, 3)).transpose().shape, lt.zeros((2, 3, 4)).transpose(1, 2, 0).shape
        ((3, 2), (3, 4, 2))
        """
        if dim0 is not None or dim1 is not None:
            if axes or dim0 is None or dim1 is None:
                raise TypeError("transpose: give both dim0= and dim1= (and no other axes), or the axes alone")
            axes = (dim0, dim1)
        if len(axes) == 2 and all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
            first, second = (one_axis(a, self.ndim or 1, "transpose") for a in axes)
            order = list(range(self.ndim))
            if self.ndim:
                order[first], order[second] = order[second], order[first]
            return self.permute(tuple(order))
        if not axes or (len(axes) == 1 and axes[0] is None):
            return self.permute(tuple(reversed(range(self.ndim))))
        return self.permute(*axes)

    def t(self) -> "Tensor":
        """PyTorch's t(): a matrix transposed; a tensor of fewer than 2 axes itself (as a view).

        >>> lt.zeros((2, 3)).t().shape
        (3, 2)
        """
        if self.ndim > 2:
            raise ValueError(f"t() takes a tensor of at most 2 dimensions, not shape {self.shape}; use "
                             "transpose(dim0, dim1) or permute(...)")
        return self.permute(tuple(reversed(range(self.ndim))))

    def view(self, *shape) -> "Tensor":
        """PyTorch's view: the same memory seen in `shape` (one axis may be -1); writes to
        either are seen by both. As in PyTorch, a shape the layout cannot give without a copy
        (a transposed tensor flattened) is an error: call `.contiguous()` first, or `reshape`.
        (`view(dtype)`, PyTorch's reinterpretation of bits, is not supported.)

        >>> x = lt.zeros(6); v = x.view(2, 3); v[0, 1] = 5
        >>> x.tolist()
        [0.0, 5.0, 0.0, 0.0, 0.0, 0.0]
        """
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list)) and not hasattr(shape[0], "__index__"):
            raise TypeError(f"view({shape[0]!r}): reinterpreting the bits as another dtype is not supported; "
                            "convert the values with .astype(dtype), or give view a shape")
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        result = reshape(self, dims)
        if self.ndim and not isinstance(result._alias, views.ViewOf):
            raise ValueError(f"view: this tensor's layout (a view of shape {self.shape} over another tensor's "
                             f"memory) cannot be seen as shape {tuple(dims)} without a copy; use "
                             ".contiguous().view(...) or .reshape(...) instead")
        return result

    def is_contiguous(self) -> bool:
        """Whether the values lie in row-major order in memory, as PyTorch's: True for every
        tensor but views that skip, repeat or reorder their base's elements.

        >>> x = lt.zeros((2, 3))
        >>> x.is_contiguous(), x.T.is_contiguous()
        (True, False)
        """
        return views.is_contiguous(self)

    def contiguous(self) -> "Tensor":
        """PyTorch's contiguous(): itself where its values lie in row-major order (see
        `is_contiguous`), else a new tensor of its values (not a view: writing to it leaves
        this tensor alone).

        >>> lt.zeros((2, 3)).T.contiguous().view(-1).shape
        (6,)
        """
        return self if views.is_contiguous(self) else self._new(self.node)

    def split(self, split_size_or_sections, dim: int = 0) -> tuple:
        """PyTorch's split: views along `dim` of `split_size_or_sections` elements each (see
        lt.split).

        >>> [t.tolist() for t in lt.arange(5).split(2)]
        [[0, 1], [2, 3], [4]]
        """
        return split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        """PyTorch's chunk: `chunks` views along `dim` (see lt.chunk).

        >>> [t.shape for t in lt.zeros((4, 6)).chunk(3, dim=-1)]
        [(4, 2), (4, 2), (4, 2)]
        """
        return chunk(self, chunks, dim)

    def expand(self, *shape) -> "Tensor":
        """Broadcast to `shape` without copying; -1 keeps an axis's size (as in PyTorch).

        >>> lt.zeros((1, 3)).expand(4, -1).shape
        (4, 3)
        """
        dims = tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)
        lead = len(dims) - self.ndim
        dims = tuple(self.shape[a - lead] if n == -1 and a >= lead else n for a, n in enumerate(dims))
        return broadcast_to(self, dims)

    def broadcast_to(self, shape) -> "Tensor":
        """This tensor repeated (without copying) to `shape`, by numpy's broadcasting rule.

        >>> lt.asarray([1, 2]).broadcast_to((2, 2)).tolist()
        [[1, 2], [1, 2]]
        """
        return broadcast_to(self, shape)

    def squeeze(self, axis=None, *, dim=None) -> "Tensor":
        """Remove axes of size 1 (all of them, or those named). Naming an axis whose size is
        not 1 is an error, as in numpy; with PyTorch's keyword `dim=` such an axis is left as
        it is, as in PyTorch.

        >>> lt.zeros((1, 3, 1)).squeeze().shape
        (3,)
        >>> lt.zeros((2, 1)).squeeze(dim=0).shape
        (2, 1)
        """
        if dim is not None:
            if axis is not None:
                raise TypeError("squeeze: give axis (numpy's) or dim= (PyTorch's), not both")
            axes = normalize_axes(dim, self.ndim)
            return squeeze(self, tuple(a for a in axes if self.shape[a] == 1))
        return squeeze(self, axis)

    def unsqueeze(self, axis: int = None, *, dim: int = None) -> "Tensor":
        """A new axis of size 1 at position `axis` (like lt.expand_dims; `dim=` is PyTorch's name).

        >>> lt.zeros(3).unsqueeze(0).shape, lt.zeros(3).unsqueeze(dim=-1).shape
        ((1, 3), (3, 1))
        """
        if (axis is None) == (dim is None):
            raise TypeError("unsqueeze: give the position of the new axis once (axis, or PyTorch's dim=)")
        return expand_dims(self, axis if dim is None else dim)

    def flip(self, axis=None) -> "Tensor":
        """Reverse the order of elements along `axis` (all axes when None).

        >>> lt.arange(3).flip().tolist()
        [2, 1, 0]
        """
        return flip(self, axis)

    def pad(self, pad_width, value: Scalar = 0) -> "Tensor":
        """Pad with a constant, numpy.pad style (see lt.pad).

        >>> lt.asarray([1, 2]).pad(1).tolist()
        [0, 1, 2, 0]
        """
        return pad(self, pad_width, value)

    def ravel(self) -> "Tensor":
        """The values as a 1-D tensor: a view where numpy's ravel is one, else a copy.

        >>> lt.zeros((2, 3)).ravel().shape
        (6,)
        """
        return self.reshape(-1)

    def flatten(self, start_dim=0, end_dim: int = -1) -> "Tensor":
        """The values as a 1-D tensor of their own (a copy, as numpy's; `ravel` is the view);
        PyTorch's `flatten(start_dim, end_dim)` merges only the axes from start_dim to end_dim
        (a copy too, which PyTorch's contract allows). numpy's `flatten('F')` reads the values
        in column-major order.

        >>> lt.zeros((2, 3)).flatten().shape, lt.zeros((2, 3, 4)).flatten(1).shape
        ((6,), (2, 12))
        """
        if isinstance(start_dim, str):   # numpy's order
            if start_dim not in ("C", "F", "A", "K"):
                raise ValueError(f"flatten: order must be 'C', 'F', 'A' or 'K', not {start_dim!r}")
            source = self.transpose() if start_dim == "F" else self
            return views.fresh(source.reshape(-1))
        start, end = (one_axis(d, self.ndim or 1, "flatten") for d in (start_dim, end_dim))
        if self.ndim == 0:
            return views.fresh(self.reshape(1))
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {self.shape})")
        merged = math.prod(self.shape[start:end + 1])
        return views.fresh(self.reshape(self.shape[:start] + (merged,) + self.shape[end + 1:]))


attach_methods(Movement)


def windows_last_axis(shape: tuple[int, ...], k: int, s: int, d: int, moves: list) -> tuple[int, ...]:
    """Append to `moves` the movement ops that make the sliding windows of the last axis of `shape`
    (a convolution's, a pooling's; sliding_windows, lt.compute's indices y*s + k*d):
    (..., i) -> (..., o, k); the resulting shape. Row r of x repeated (period ip) and cut into
    rows of length ip + d starts at x[r * d]: element (r, j) is x[(r*d + j) mod ip]. Taking
    j = o*s gives the window element x[o*s + r*d], which never wraps since (k-1)*d + (o-1)*s <
    i <= ip."""
    i, lead = shape[-1], shape[:-1]
    if k == 1 and s == 1:   # (windows of one element: each element is its own, a 1xk convolution's rows)
        moves.append((Op.RESHAPE, lead + (i, 1)))
        return lead + (i, 1)
    whole = tuple((0, m, 1) for m in lead)
    o = (i - d * (k - 1) - 1) // s + 1
    ip = max(i, o * s)
    if ip > i:
        moves.append((Op.PAD, ((0, 0),) * len(lead) + ((0, ip - i),)))
    length = ip + d
    repeats = -(-k * length // ip)
    moves += [(Op.RESHAPE, lead + (1, ip)), (Op.EXPAND, lead + (repeats, ip)), (Op.RESHAPE, lead + (repeats * ip,)),
              (Op.SHRINK, whole + ((0, k * length, 1),)), (Op.RESHAPE, lead + (k, length)),   # rows[..., :k*length]
              (Op.SHRINK, whole + ((0, k, 1), (0, o * s, 1)))]
    if s > 1:   # every s-th: [..., 0] of rows of s
        moves += [(Op.RESHAPE, lead + (k, o, s)), (Op.SHRINK, whole + ((0, k, 1), (0, o, 1), (0, 1, 1))),
                  (Op.RESHAPE, lead + (k, o))]
    moves.append((Op.PERMUTE, (*range(len(lead)), len(lead) + 1, len(lead))))
    return lead + (o, k)


def sliding_windows(x: Tensor, kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]) -> Tensor:
    """The sliding windows of the last len(kernel) axes as a view: (..., i1, i2) ->
    (..., o1, o2, k1, k2), element [o, k] = x[o * stride + k * dilation]. No copy: the view is
    built from repeat (expand + reshape), slices and permutes, so a kernel indexes x directly.
    (The movement ops are made on the graph in one go: a conv2d or pool call makes ~30 of them,
    and as tensor views they cost a millisecond a call.)"""
    moves, shape = [], x.shape
    n = len(kernel)
    lead = x.ndim - n
    for a in reversed(range(n)):   # windows of the last axis first; each pair (o, k) goes to the end
        order = tuple(d for d in range(len(shape)) if d != lead + a) + (lead + a,)
        if order != tuple(range(len(shape))):
            moves.append((Op.PERMUTE, order))
        shape = windows_last_axis(tuple(shape[d] for d in order), kernel[a], stride[a], dilation[a], moves)
    # now (..., o_n, k_n, ..., o_1, k_1): gather the o's, then the k's
    outs = [lead + 2 * (n - 1 - a) for a in range(n)]
    moves.append((Op.PERMUTE, (*range(lead), *outs, *[o + 1 for o in outs])))
    return x._new(views.apply(x.node, tuple(moves)))
