"""Views: tensors that alias another tensor's values, as numpy's and PyTorch's views do.

Basic slicing, `reshape` (where numpy returns a view), `permute`/`transpose`/`.T`, `squeeze`,
`expand_dims`/`unsqueeze`, `flip`, `diagonal` and `broadcast_to` return views. A view is a
tensor whose value is a chain of movement ops over its *base* (the tensor it was first taken
from: a view of a view has the same base, as in PyTorch). Values stay functional underneath
(PyTorch's functionalization): nothing is copied, and

- a write into the base (`x[3] = 42`, `x += 1`, an optimizer step) gives the base a new graph
  node, and every live view of it a new node: the same movement ops over the new value;
- a write into a view (`v[0] = 7`, `v += 1`) is a write into the base: the view's new value is
  put back into the base's value through the inverse of the view's movement ops (a pad, a
  reshape, a permute or flip back; a stepped slice is a pad of a reshape), and the base then
  updates its other views as above.

A write reads the value it changes (a tensor's node, its base's) and sets the new one: under
`WRITING`, so writes from several threads into parts of one tensor (numpy allows it: joblib's
threads filling the slices of one result) all land, none built on a value another replaced.

A broadcast (`broadcast_to`, `expand`) is a read-only view, as numpy's: writing into it raises.
A reshape that numpy would have to copy (a transpose flattened) is a new tensor, as in numpy.
As numpy's scalars, one element picked by integers (`x[1, 2]`) and anything taken from a 0-d
tensor (what a full reduction returns) are values of their own, not views.
"""
from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from .ir.dtypes import bool_
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make

if TYPE_CHECKING:
    from .tensor import Tensor

Move = tuple[Op, Any]   # a movement op and its argument

# Held from reading a tensor's value to setting the new value of an in-place write (re-entrant:
# a write takes it again in `write`). One lock for all tensors: a write only builds graph nodes.
WRITING = threading.RLock()


class ViewOf:
    """What a view is a view of: its base tensor and the movement ops from the base's value."""
    __slots__ = ("base", "moves", "readonly")

    def __init__(self, base: "Tensor", moves: tuple[Move, ...], readonly: bool):
        self.base, self.moves, self.readonly = base, moves, readonly


class WeakById:
    """Tensors by id, held weakly, without a callback per entry: a weak reference with a
    callback costs ~1.5 us to make and again to drop, and eager code makes views (a Linear's
    `w.T`) and deep tensors (realize.bound_pending) at every op. Dead entries are swept in bulk
    when the table has doubled since the last sweep (amortized O(1) an entry; the table stays
    within twice the most entries alive at once, or `least`); a dead one found meanwhile reads
    as None. `live()` lists the tensors in the order they were added. (The caller guards it: a
    view's base with WRITING, realize's with its lock.)"""
    __slots__ = ("refs", "bound", "least")

    def __init__(self, least: int = 8) -> None:
        self.refs: dict[int, weakref.ref] = {}
        self.bound = self.least = least

    def add(self, tensor: "Tensor") -> None:
        refs = self.refs
        # (an id a dead tensor had: its entry goes, and the new one comes last, so that the
        # table lists its tensors in the order they came, as realize's cuts need: the order of
        # a cut's roots is part of its plan's structure)
        refs.pop(id(tensor), None)
        refs[id(tensor)] = weakref.ref(tensor)
        if len(refs) > self.bound:
            self.refs = {i: ref for i, ref in refs.items() if ref() is not None}
            self.bound = max(self.least, 2 * len(self.refs))

    def live(self) -> list["Tensor"]:
        return [t for t in (ref() for ref in list(self.refs.values())) if t is not None]

    def discard(self, tensor: "Tensor") -> None:
        ref = self.refs.get(id(tensor))
        if ref is not None and ref() is tensor:
            del self.refs[id(tensor)]


Views = WeakById   # a base tensor's live views


def apply(node: Node, moves: tuple[Move, ...]) -> Node:
    for op, arg in moves:
        node = make(op, node, arg=arg)
    return node


def view(x: "Tensor", moves: tuple[Move, ...], readonly: bool = False) -> "Tensor":
    """A view of `x` through `moves` (of x's base where x is a view itself)."""
    seen = x.node
    result = x._new(apply(seen, moves))
    if not x.ndim:   # a 0-d tensor is numpy's scalar (what its reductions return): a value, no views
        return result
    with WRITING:   # (a write in another thread sees this view whole, with its moves, or not at all)
        alias = x._alias
        if isinstance(alias, ViewOf):
            base, moves, readonly = alias.base, alias.moves + moves, alias.readonly or readonly
        else:
            base = x
            if alias is None:
                alias = x._alias = Views()
        result._alias = ViewOf(base, moves, readonly)
        base._alias.add(result)
        if x.node is not seen:   # written meanwhile, before this view was there to be told
            result.node, result.requires_grad = result._adopt(apply(base.node, moves))
    return result


def fresh(x: "Tensor") -> "Tensor":
    """x's values as a tensor of their own (not a view), for functions that numpy has return
    new arrays even where they are movement ops underneath (tile, repeat, flatten, meshgrid)."""
    return x._new(x.node) if x._alias is not None else x


def base_of(x: "Tensor") -> "Tensor":
    alias = x._alias
    return alias.base if isinstance(alias, ViewOf) else x


def write(x: "Tensor", node: Node) -> None:
    """x now holds `node` (an in-place write): through its base where x is a view, and seen by
    every view of that base."""
    with WRITING:
        _write(x, node)


def _write(x: "Tensor", node: Node) -> None:
    alias = x._alias
    if isinstance(alias, ViewOf):
        if alias.readonly:
            raise ValueError(f"assignment destination is read-only: this tensor of shape {x.shape} is a broadcast "
                             "view (broadcast_to / expand) of another, whose elements it repeats; write into a "
                             "copy of it (x.copy()) instead")
        base = alias.base
        base._write_value(put_back(base.node, alias.moves, node))
        x.node, x.requires_grad = x._adopt(node)   # (its own value as written: a smaller graph)
        return
    x._write_value(node)


def update_views(base: "Tensor") -> None:
    """After a write into `base`: each of its views is its moves over the base's new value."""
    views = base._alias
    if isinstance(views, Views):
        for v in views.live():
            v.node, v.requires_grad = v._adopt(apply(base.node, v._alias.moves))


def put_back(base: Node, moves: tuple[Move, ...], value: Node) -> Node:
    """The base's value with the elements a view (`moves` over `base`) sees replaced by `value`
    (the view's new value): the inverse of each move, last first, applied to the value and to a
    mask of the elements it covers."""
    shapes = [base.shape]
    node = base
    for op, arg in moves:
        node = make(op, node, arg=arg)
        shapes.append(node.shape)
    covered: Optional[Node] = None   # None: every element (until a move covers fewer)
    for (op, arg), shape in zip(reversed(moves), reversed(shapes[:-1])):
        value, covered = _inverse(op, arg, shape, value, covered)
    if covered is None:
        return value
    return make(Op.WHERE, covered, value, base)


def _inverse(op: Op, arg: Any, shape: tuple[int, ...], value: Node, covered: Optional[Node]) -> tuple[Node, Optional[Node]]:
    """Undo one move: `value` (and the `covered` mask) in the shape before the move."""
    if op is Op.RESHAPE:
        return make(Op.RESHAPE, value, arg=shape), covered and make(Op.RESHAPE, covered, arg=shape)
    if op is Op.PERMUTE:
        back = tuple(int(a) for a in np.argsort(arg))
        return make(Op.PERMUTE, value, arg=back), covered and make(Op.PERMUTE, covered, arg=back)
    if op is Op.FLIP:
        return make(Op.FLIP, value, arg=arg), covered and make(Op.FLIP, covered, arg=arg)
    if op is Op.SHRINK:
        if covered is None:
            covered = const(True, bool_, value.shape)
        for axis, (start, stop, step) in enumerate(arg):
            value = _unshrink_axis(value, axis, start, step, shape[axis])
            covered = _unshrink_axis(covered, axis, start, step, shape[axis])
        return value, covered
    raise AssertionError(f"no inverse for a view through {op.name}")


def _unshrink_axis(node: Node, axis: int, start: int, step: int, n: int) -> Node:
    """The inverse of keeping elements start, start+step, ... of an axis of length n: those
    elements back in place, zero (False) elsewhere."""
    k = node.shape[axis]
    if k == n and step == 1:
        return node
    if k == 0:
        start = 0
    elif step < 0:   # counted from the other end it is a positive step: place it there, flip back
        placed = _unshrink_axis(node, axis, n - 1 - start, -step, n)
        return make(Op.FLIP, placed, arg=(axis,))
    if step > 1 and k > 1:   # element j at j*step: each followed by step-1 zeros, the last ones cut
        rank = len(node.shape)
        split = node.shape[:axis] + (k, 1) + node.shape[axis + 1:]
        node = make(Op.RESHAPE, node, arg=split)
        node = make(Op.PAD, node, arg=tuple((0, step - 1) if a == axis + 1 else (0, 0) for a in range(rank + 1)))
        node = make(Op.RESHAPE, node, arg=node.shape[:axis] + (k * step,) + node.shape[axis + 2:])
        keep = (k - 1) * step + 1
        node = make(Op.SHRINK, node, arg=tuple((0, keep, 1) if a == axis else (0, m, 1) for a, m in enumerate(node.shape)))
    span = node.shape[axis]
    return make(Op.PAD, node, arg=tuple((start, n - start - span) if a == axis else (0, 0) for a in range(len(node.shape))))


# ---- layouts: where numpy would view and where it would copy -----------------------------------

def _shrink(array: np.ndarray, slices) -> np.ndarray:
    # (start, stop, step) as slice.indices gives them, where -1 means "before the front" (with a
    # negative step, or an empty range), not "the last element" as in a Python slice
    return array[tuple([slice(start, None if stop < 0 else stop, step) if start >= 0 else slice(0, 0)
                        for start, stop, step in slices])]


# numpy's own movement ops, applied to arrays (or to layouts that own no memory: none reads an element)
NUMPY_MOVE = {
    Op.RESHAPE: lambda array, shape: np.reshape(array, shape, copy=False),   # (ValueError where it would copy)
    Op.PERMUTE: np.transpose,
    Op.EXPAND: np.broadcast_to,
    Op.SHRINK: _shrink,
    Op.FLIP: np.flip,
}


def layout(shape: tuple[int, ...], itemsize: int) -> np.ndarray:
    """An array of `shape` in row-major order that owns no memory (never read an element of it):
    numpy's movement ops on it tell where a view's elements lie."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return np.lib.stride_tricks.as_strided(np.empty(1, np.uint8), shape, tuple(reversed(strides)))


def reshape_is_view(x: "Tensor", shape: tuple[int, ...]) -> bool:
    """Whether numpy's reshape of x (a view of a row-major base) to `shape` would be a view."""
    alias = x._alias
    if not isinstance(alias, ViewOf):
        return True   # a base is row-major
    array = layout(alias.base.shape, 1)
    try:
        for op, arg in alias.moves + ((Op.RESHAPE, shape),):
            array = NUMPY_MOVE[op](array, arg)
    except ValueError:
        return False
    return True


def is_contiguous(x: "Tensor") -> bool:
    """Whether x's values lie in row-major order in memory, as PyTorch's `is_contiguous`: every
    tensor but views that skip, repeat or reorder their base's elements (axes of length 1 do not
    count, as in numpy and PyTorch)."""
    alias = x._alias
    if not isinstance(alias, ViewOf):
        return True
    array = layout(alias.base.shape, 1)
    for op, arg in alias.moves:
        array = NUMPY_MOVE[op](array, arg)
    return bool(array.flags.c_contiguous)
