"""Collapse a kernel's axes: merge neighbouring axes that every access walks as one.

`(a + b)` over a contiguous (4096, 4096) becomes one loop of 16M: the inner loop is long, the
index is `i`, and the backend vectorizes it without div/mod. Two axes merge when every load's
top view can be reshaped to the merged shape without a new view (numpy's no-copy rule) and no
reduction reduces one of them but not the other.
"""
from __future__ import annotations

import math

from ..ir.graph import Node, toposort
from ..ir.ops import REDUCTION, Op
from ..ir.view import ViewStack

Groups = list[list[int]]


def collapse_axes(expr: Node) -> Node:
    """The same kernel expression over the fewest axes."""
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
        return all(v.views[-1].reshape(_grouped(v.shape, [group], group[0])) is not None for v in views)

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
            arg = (arg[0], _reshape_top(arg[1], groups))
        elif node.op is Op.VALID:
            arg = _reshape_top(arg, groups)
        elif node.op in REDUCTION:
            arg = tuple(g for g, group in enumerate(groups)
                        if any(a in node.arg for a in group if not neutral(a)))
        memo[node] = Node(node.op, node.dtype, _grouped(node.shape, groups), src, arg)
    return memo[expr]


def _reshape_top(view: ViewStack, groups: Groups) -> ViewStack:
    top = view.views[-1].reshape(_grouped(view.shape, groups))
    assert top is not None, "collapse_axes checked that every view merges"
    return ViewStack(view.views[:-1] + (top,))
