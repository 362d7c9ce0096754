"""Values read without a kernel: elements and views of realized memory (x[i], a row, a
transpose), read in place, and small values computed on the host from a few such elements
(x[i] == y[j], bool(x[i] < 0)) as numpy computes with its scalars. Tensor.item(), numpy() and
indexing by 0-d tensors read through here; every other value is a kernel's (realize.py)."""
from __future__ import annotations

import weakref
from typing import Optional

import numpy as np

from . import capture, views
from .devices import runtime
from .ir.dtypes import DType, bfloat16, bfloat16_values, cast_values
from .ir.graph import Node
from .ir.ops import COMPLEX_PARTS, ELEMENTWISE, MOVEMENT, TRANSCENDENTAL, Op
from .ir.rules import NUMPY_REFERENCE
from .realize import _REALIZED, value_of

VIEWS = frozenset({Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.SHRINK, Op.FLIP})


def read_element(node: Node, device: str) -> Optional[np.generic]:
    """The value of an element of realized memory as indexing.elements makes it (x[i, j, k] of a
    realized x: a RESHAPE to () of a one-element SHRINK of a buffer), read from that memory: the
    common read, on its own short path. None for any other node (read_view reads those)."""
    if node.op is not Op.RESHAPE or node.shape or node.src[0].op is not Op.SHRINK:
        return None
    shrink = node.src[0]
    base = shrink.src[0]
    if base.op is not Op.BUFFER:
        found = _REALIZED.get(base) if _REALIZED.data else None
        if found is None and _READ_VALUES.data:
            found = _read_value(base, device)
        base = found
        if base is None:
            return None
    offset = 0
    for (start, _, _), n in zip(shrink.arg, base.shape):   # (each range holds one element: its start)
        offset = offset * n + start
    if capture.RECORDING is not None:
        capture.reading(base.arg)
    return host_values(runtime(device).device.read(base.arg, offset, 1), node.dtype)[0]


def read_view(node: Node, device: str) -> Optional[np.ndarray]:
    """The values of `node`, movement ops over realized memory (an element, a row, a transpose
    of a realized tensor), read from that memory: no kernel. numpy applies the same movement ops
    to an array of the memory's layout; where the memory is not the host's, that array owns no
    memory (none of the ops reads an element) and only the range the result spans is copied
    over (a few bytes for an element). None where the ops are not one strided view of the memory
    (a reshape of a transpose)."""
    path = []
    while node.op is not Op.BUFFER:
        if node.op not in VIEWS:
            return None
        path.append(node)
        node = node.src[0]
        if _REALIZED.data:
            node = _REALIZED.get(node, node)
        if _READ_VALUES.data:
            kept = _read_value(node, device)
            node = node if kept is None else kept
    buffer, dtype = node.arg, node.dtype.storage
    device_ = runtime(device).device
    host = getattr(device_, "host_memory", False)
    view = layout = device_.to_numpy(buffer) if host else views.layout(node.shape, dtype.itemsize)
    try:
        for move in reversed(path):
            view = views.NUMPY_MOVE[move.op](view, move.arg)
    except ValueError:   # (a reshape that needs a copy)
        return None
    if capture.RECORDING is not None:
        capture.reading(buffer)
    if host:
        return host_values(view, node.dtype)
    if view.size == 0:
        return np.empty(view.shape, node.dtype.np)
    itemsize = dtype.itemsize
    offset = (view.__array_interface__["data"][0] - layout.__array_interface__["data"][0]) // itemsize
    lo = offset + sum([(n - 1) * st for n, st in zip(view.shape, view.strides) if st < 0]) // itemsize
    hi = offset + sum([(n - 1) * st for n, st in zip(view.shape, view.strides) if st > 0]) // itemsize
    memory = device_.read(buffer, lo, hi + 1 - lo)
    values = np.ndarray(view.shape, dtype, memory, (offset - lo) * itemsize, view.strides)
    values.flags.writeable = False
    return host_values(values, node.dtype)


def host_values(stored: np.ndarray, dtype: DType) -> np.ndarray:
    """The values of memory read as `dtype.storage`: that array itself, but bfloat16's bit
    patterns as float32 values (a read-only copy)."""
    if dtype is not bfloat16:
        return stored
    values = bfloat16_values(stored)
    values.flags.writeable = False
    return values


# Reading elements of a pending tensor (x = a // b; x[0], x[1], ... as numpy's users do): each
# read alone would compute its element by a kernel of its own, compiled for that element (the
# index is part of the kernel), one compile per element. So the second read of a pending value
# computes all of it, once; that and every later read take their elements from its memory. (The
# first read stays one element's kernel: reading one element of a big pending result must not
# compute all of it.) Values of nodes never change, so a value kept for a node is always right;
# it is kept per device (a node with no buffer under it, lt.zeros(3) * 2, is the same node on
# every device).
_READ_ONCE: "weakref.WeakKeyDictionary[Node, set[str]]" = weakref.WeakKeyDictionary()
_READ_VALUES: "weakref.WeakKeyDictionary[Node, dict[str, Node]]" = weakref.WeakKeyDictionary()


def _read_value(node: Node, device: str) -> Optional[Node]:
    """The value (a BUFFER node) kept on `device` for pending `node` by compute_viewed, or None."""
    kept = _READ_VALUES.get(node)
    return kept.get(device) if kept else None


def compute_viewed(node: Node, device: str) -> bool:
    """For a view (movement ops) of a pending value being read: compute that value where it was
    read before (see above). Whether it was computed now."""
    while node.op in VIEWS:
        node = node.src[0]
    if node.op is Op.BUFFER or _read_value(node, device) is not None or (_REALIZED.data and node in _REALIZED):
        return False   # (memory already, or a view read_view cannot take: a copy of a reshape)
    seen = _READ_ONCE.setdefault(node, set())
    if device not in seen:
        seen.add(device)
        return False
    _READ_VALUES.setdefault(node, {})[device] = value_of(node, device)
    return True


# One value computed from a few elements of realized memory (x[i] == y[j], bool(x[i] < 0),
# lt.all(x[2:5] == 7)), as numpy computes with its scalars: on the host, by the reference
# interpreter's table (the one constant folding uses). Compiled, each would be a kernel of its
# own, since the elements' positions and the constants are part of a kernel: a loop comparing
# elements would compile one per step. Only ops numpy computes exactly as the kernels do
# (arithmetic, comparisons, casts, selection, movement; integer reductions and max/min): no
# transcendental functions, whose device libraries may round otherwise, no float sums, whose
# order differs, and nothing integer division or shifts leave undefined. Complex values: the ops
# whose lowering (ir/complex.py) is numpy's formula, part by part.
_HOST_OPS = ((ELEMENTWISE | MOVEMENT | {Op.REDUCE_MAX, Op.REDUCE_MIN, Op.SUM, Op.PROD})
             - TRANSCENDENTAL - COMPLEX_PARTS - {Op.FLOORDIV, Op.MOD, Op.SHL, Op.SHR})
_HOST_COMPLEX_OPS = MOVEMENT | COMPLEX_PARTS | {Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.CAST, Op.WHERE, Op.CMPEQ, Op.CMPNE}
_REDUCTIONS = frozenset({Op.REDUCE_MAX, Op.REDUCE_MIN, Op.SUM, Op.PROD})
_HOST_MAX_NODES = 64        # a few operations on a few elements: more is a kernel's work
_HOST_MAX_ELEMENTS = 256


def host_value(node: Node, device: str) -> Optional[np.ndarray]:
    """The value of small pending `node` computed on the host from realized memory (see above),
    or None where it is no such graph (then it is realized as usual)."""
    if capture.RECORDING is not None:   # (lt.jit records the kernels a call runs)
        return None
    known: dict[Node, np.ndarray] = {}
    inner: list[Node] = []
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if len(seen) > _HOST_MAX_NODES or n.size > _HOST_MAX_ELEMENTS:
            return None
        if n.op is Op.CONST:
            known[n] = np.full(n.shape, n.arg, n.dtype.np)
            continue
        value = realized(n)
        if value is not None:
            known[n] = host_values(runtime(device).device.read(value.arg, 0, n.size), n.dtype).reshape(n.shape)
            continue
        if n.op in VIEWS and n is not node:   # (an element or a slice of memory: read just that;
            read = read_view(n, device)        # item() has tried the node itself)
            if read is None and compute_viewed(n, device):
                read = read_view(n, device)
            if read is not None:
                known[n] = read
                continue
        complex_ = n.dtype.is_complex or any(s.dtype.is_complex for s in n.src)
        if n.op not in (_HOST_COMPLEX_OPS if complex_ else _HOST_OPS) or (n.op in _REDUCTIONS and not n.src[0].size):
            return None   # (numpy's max of nothing is an error where the kernel's all() is True)
        if n.dtype.is_inexact and (n.op is Op.SUM or n.op is Op.PROD):
            return None
        inner.append(n)
        stack.extend(n.src)
    for n in sorted(inner, key=lambda n: n.depth):   # (sources are shallower: computed first)
        with np.errstate(all="ignore"):
            result = NUMPY_REFERENCE[n.op]([known[s] for s in n.src], n.arg, n.dtype)
        known[n] = cast_values(result, n.dtype).reshape(n.shape)
    return known[node]


def realized(node: Node) -> Optional[Node]:
    """The BUFFER node holding `node`'s value, where it has one."""
    if node.op is Op.BUFFER:
        return node
    return _REALIZED.get(node) if _REALIZED.data else None
