"""Shape a kernel's axes for its loops: split axes that a view reads as several, then merge
neighbouring axes that every access walks as one.

`(a + b)` over a contiguous (4096, 4096) becomes one loop of 16M: the inner loop is long, the
index is `i`, and the backend vectorizes it without div/mod. Two axes merge when every load's
top view can be reshaped to the merged shape without a new view (numpy's no-copy rule) and no
reduction reduces one of them but not the other.

Splitting comes first. A reshape that does not merge into a view's strides stacks a new view
that reads the one below through its row-major position: `x.permute(0, 2, 1, 3).reshape(n, 56,
56) + bias` reads x at (y // 4, x // 4, y % 4, x % 4)-like digits, div and mod in every load and
no vector along a row. Run over the axes of the view below -- 56 split into 14 x 4 -- the stack
is one affine map again (`ViewStack.affine`), and every other access (contiguous output, the
broadcast bias) only gets finer axes.
"""
from __future__ import annotations

import math

from ..ir.graph import Node, toposort
from ..ir.ops import REDUCTION, Op
from ..ir.view import View, ViewStack

Groups = list[list[int]]


def collapse_axes(expr: Node) -> Node:
    """The same kernel expression over the fewest axes, split first where that makes a view
    affine (`split_axes`)."""
    expr = split_axes(expr)
    nodes = toposort([expr])
    rank = len(expr.shape)
    if rank <= 1 or any(n.op is Op.GATHER for n in nodes):
        return expr  # a gather's source lives in its own index space: keep the axes as they are
    views = [n.arg[1] if n.op is Op.LOAD else n.arg for n in nodes if n.op in (Op.LOAD, Op.VALID)]
    reduces = [n for n in nodes if n.op in REDUCTION]
    spaces = [expr.shape] + [r.src[0].shape for r in reduces]

    def neutral(axis: int) -> bool:  # size 1 in every index space: may join any group
        return all(space[axis] == 1 for space in spaces)

    def allowed(group: list[int]) -> bool:
        for r in reduces:
            kinds = {axis in r.arg for axis in group if not neutral(axis)}
            if len(kinds) > 1:
                return False
        for v in views:
            merged = _with_top(v, _grouped(v.shape, [group], group[0]))
            if merged is None or (_concrete(v) and v.affine is not None and merged.affine is None):
                return False   # (a view that is affine stays so)
        return True

    groups: Groups = [[rank - 1]]
    for axis in range(rank - 2, -1, -1):
        candidate = [axis] + groups[0]
        if allowed(candidate):
            groups[0] = candidate
        else:
            groups.insert(0, [axis])
    if len(groups) == rank:
        return expr
    return _regroup(expr, groups, neutral)


def _grouped(shape: tuple[int, ...], groups: Groups, first: int | None = None) -> tuple[int, ...]:
    """`shape` with each group of axes merged; with `first`, only the one group starting there."""
    if first is not None:
        group = groups[0]
        return shape[:first] + (math.prod(shape[a] for a in group),) + shape[group[-1] + 1:]
    return tuple(math.prod(shape[a] for a in group) for group in groups)


def _regroup(expr: Node, groups: Groups, neutral) -> Node:
    memo: dict[Node, Node] = {}
    for node in toposort([expr]):
        src = tuple(memo[s] for s in node.src)
        arg = node.arg
        if node.op is Op.LOAD:
            arg = (arg[0], _reshaped(arg[1], _grouped(arg[1].shape, groups)))
        elif node.op is Op.VALID:
            arg = _reshaped(arg, _grouped(arg.shape, groups))
        elif node.op in REDUCTION:
            arg = tuple(g for g, group in enumerate(groups)
                        if any(a in node.arg for a in group if not neutral(a)))
        memo[node] = Node(node.op, node.dtype, _grouped(node.shape, groups), src, arg)
    return memo[expr]


def _with_top(stack: ViewStack, shape: tuple[int, ...]) -> ViewStack | None:
    """`stack` with its top view reshaped to `shape` (axes merged or split, no new view), or
    None where the top view cannot be."""
    top = stack.views[-1].reshape(shape)
    return None if top is None else ViewStack(stack.views[:-1] + (top,))


def _reshaped(stack: ViewStack, shape: tuple[int, ...]) -> ViewStack:
    reshaped = _with_top(stack, shape)
    assert reshaped is not None, "collapse_axes and split_axes checked that every view reshapes"
    return reshaped


def split_axes(expr: Node) -> Node:
    """The same kernel expression with axes split where a view stack reads them as several axes
    of the view below: every stack that div/mod would index and that becomes affine over the
    common refinement of the kernel's shape and the shapes below it (each axis split into the
    factors both shapes agree on: (56,) and (14, 4) refine to (14, 4); (4, 6) and (6, 4) have
    none). Only axes of one size in every index space split (never a reduced one), and only where
    every access can be reshaped to the finer axes without a new view. (A kernel with a
    symbolic size, one compile for many lengths, keeps its axes.)"""
    nodes = toposort([expr])
    if any(n.op is Op.GATHER for n in nodes):
        return expr
    stacks = [n.arg[1] if n.op is Op.LOAD else n.arg for n in nodes if n.op in (Op.LOAD, Op.VALID)]
    if not all(map(_concrete, stacks)):
        return expr
    spaces = [expr.shape] + [n.src[0].shape for n in nodes if n.op in REDUCTION]
    fixed = {a for a, size in enumerate(expr.shape) if any(space[a] != size for space in spaces)}
    splits: list[tuple[int, ...]] = [(size,) for size in expr.shape]
    for stack in stacks:
        top = stack.views[-1]
        if len(stack.views) > 1 and stack.affine is None and top.mask is None:
            finer = _refinement(splits, top, stack.views[-2].shape, fixed)
            if finer is None or finer == splits:
                continue
            split = _with_top(stack, _finer(stack.shape, finer))
            if split is not None and split.affine is not None:
                splits = finer
    if all(len(parts) == 1 for parts in splits):
        return expr
    if any(_with_top(stack, _finer(stack.shape, splits)) is None for stack in stacks):
        return expr
    return _resplit(nodes, expr, splits)


def _finer(shape: tuple[int, ...], splits: list[tuple[int, ...]]) -> tuple[int, ...]:
    """`shape` (the kernel's, or a reduction's index space: a reduced axis is 1 in the kernel's
    shape) over the split axes; an axis of another size than the kernel's stays whole, followed by
    size-1 axes. (Reads in a reduction's space have the reduced axes' full size: checked against
    the kernel's own shape, no split of a reduction kernel was ever made.)"""
    return tuple(p for size, parts in zip(shape, splits) for p in (parts if size == math.prod(parts) else
                                                                    (size,) + (1,) * (len(parts) - 1)))


def _concrete(stack: ViewStack) -> bool:
    """Whether every size, stride and offset of `stack` is a number (no symbolic size)."""
    return all(type(n) is int for view in stack.views for n in (*view.shape, *view.strides, view.offset))


def _refinement(splits: list[tuple[int, ...]], top: View, below: tuple[int, ...],
                fixed: set[int]) -> list[tuple[int, ...]] | None:
    """`splits` (each kernel axis as its factors) refined so that each axis `top` walks in
    steps that cross an axis boundary of `below` (a shape read row-major: its axes start at
    row-major strides, the cuts) is split at that cut, or None where that cut does not divide
    the axis or the axis is in `fixed`. (Whether the finer axes make the stack affine is the
    caller's to check: an offset may still carry a digit over.)"""
    cuts = []
    stride = 1
    for size in reversed(below):
        cuts.append(stride)
        stride *= size
    refined: list[tuple[int, ...]] = []
    for axis, (parts, step) in enumerate(zip(splits, top.strides)):
        new: list[int] = []
        for size in reversed(parts):
            if step <= 0 or size == 1:
                new.append(size)
                step *= size
                continue
            edges = [step] + [c for c in cuts if step < c < step * size and c % step == 0] + [step * size]
            if any(b % a for a, b in zip(edges, edges[1:])):
                return None
            new += [b // a for a, b in zip(edges, edges[1:])]
            step *= size
        if len(new) > len(parts) and axis in fixed:
            return None
        refined.append(tuple(reversed(new)))
    return refined


def _resplit(nodes: list[Node], expr: Node, splits: list[tuple[int, ...]]) -> Node:
    """Every node of the kernel over the split axes: views reshaped at the top, reduction axes
    renumbered (a reduced axis never splits, so each maps to one)."""
    first = [0]
    for parts in splits:
        first.append(first[-1] + len(parts))
    memo: dict[Node, Node] = {}
    for node in nodes:
        src = tuple(memo[s] for s in node.src)
        arg = node.arg
        if node.op is Op.LOAD:
            arg = (arg[0], _one_view(_reshaped(arg[1], _finer(arg[1].shape, splits))))
        elif node.op is Op.VALID:
            arg = _one_view(_reshaped(arg, _finer(arg.shape, splits)))
        elif node.op in REDUCTION:
            arg = tuple(first[a] for a in node.arg)
        memo[node] = Node(node.op, node.dtype, _finer(node.shape, splits), src, arg)
    return memo[expr]


def _one_view(stack: ViewStack) -> ViewStack:
    """`stack` as one view where it is one affine map with no bounds checks (after split_axes),
    so that merging axes later sees the strides it must keep apart."""
    if len(stack.views) > 1 and stack.affine is not None and not stack.affine[2]:
        strides, offset, _ = stack.affine
        return ViewStack((View(stack.shape, strides, offset),))
    return stack
