"""Compute only what is read: a node whose every reader takes a slice of it is computed as that
slice (its sources narrowed in turn), not whole and then sliced.

`model(ids)[0, -1]`, the next token's logits, reads one row of the head's matmul, of the final
layer norm and of the last block's MLP, attention output and queries: those run on one row,
not on every position (the keys and values still run on all of them: attention reads every
row of those). A slice of `x @ w` is a smaller matmul; of `exp(x) + 1`, fewer exponentials.

Windows. A window is, per axis, None (the whole axis) or (start, stop), a unit-step range. Going
from the roots down (each node after all of its readers), a node's window is the smallest one
that holds what each reader reads of it (the reader's own window mapped through the reader's op:
_demand). Going up, each node whose window is not whole is rebuilt as that window, reading its
sources' windows through a SHRINK where a source's window is larger than what it reads.

Only ops that compute each element from the same element of their sources (elementwise ops,
with broadcasting written as EXPAND), reductions (narrowed along the axes they keep), PERMUTE,
unit-step SHRINK, EXPAND and RESHAPE where the narrowed axis stays one axis are narrowed. Any
other op (a gather, padding, a sort, a buffer) is computed whole and read through a view;
a root is read whole.
"""
from __future__ import annotations

from typing import Optional, Sequence

from .graph import Node, readers, toposort
from .ops import ELEMENTWISE, REDUCTION, Op
from .symbolic import Undecidable, prod, surely_equal

Range = Optional[tuple]                 # None: the whole axis; else (start, stop)
Window = tuple[Range, ...]


def narrow(roots: list[Node]) -> list[Node]:
    """The graph under `roots` with every node computed only where it is read (module doc)."""
    order = toposort(roots)
    read_by = readers(order)
    whole = set(roots)
    windows: dict[Node, Window] = {}
    for node in reversed(order):
        windows[node] = _window(node, read_by.get(node, ()), windows, whole)
    if not any(_narrowed(w) for w in windows.values()):
        return roots
    memo: dict[Node, Node] = {}
    for node in order:
        memo[node] = _rebuilt(node, windows, memo)
    return [memo[r] for r in roots]


def _narrowed(window: Window) -> bool:
    return any(r is not None for r in window)


def _window(node: Node, its_readers: Sequence[Node], windows: dict[Node, Window], whole: set[Node]) -> Window:
    """The least window of `node` that holds what each of its readers reads of it."""
    full: Window = (None,) * len(node.shape)
    if node in whole or not its_readers or not _narrowable(node):
        return full
    union: Optional[list] = None
    reduced = node.arg if node.op in REDUCTION else ()   # (a reduction's reduced axes are size 1, whole)
    for reader in its_readers:
        for slot, s in enumerate(reader.src):
            if s is not node:
                continue
            read = _demand(reader, windows[reader], slot)
            union = list(read) if union is None else [_union(a, b) for a, b in zip(union, read)]
            if not _narrowed(tuple(union)):
                return full
    window = tuple(None if r is not None and _covers(r, n) or a in reduced else r
                   for a, (r, n) in enumerate(zip(union, node.shape)))
    if any(r is not None and type(r[0]) is type(r[1]) is int and r[1] <= r[0] for r in window):
        return full   # (nothing of it is read: computed as before rather than as an empty node)
    if node.op is Op.RESHAPE and _reshaped(node.src[0].shape, node.shape, window) is None:
        return full   # (a narrowed axis that is no axis of the source: the reshape is read whole)
    return window


def _covers(r: tuple, size) -> bool:
    return surely_equal(r[0], 0) and surely_equal(r[1], size)


def _union(a: Range, b: Range) -> Range:
    if a is None or b is None:
        return None
    if surely_equal(a, b):
        return a
    if all(type(x) is int for x in a + b):
        return (min(a[0], b[0]), max(a[1], b[1]))
    return None   # (symbolic and apart: the whole axis)


def _narrowable(node: Node) -> bool:
    op = node.op
    if op in ELEMENTWISE or op in REDUCTION or op in (Op.CONST, Op.PERMUTE, Op.EXPAND, Op.RESHAPE):
        return True
    return op is Op.SHRINK and all(step == 1 and not (type(start) is type(stop) is int and stop < start)
                                   for start, stop, step in node.arg)


def _demand(reader: Node, window: Window, slot: int) -> Window:
    """What `reader`, computed over `window`, reads of its source `slot`."""
    op, src = reader.op, reader.src[slot]
    full: Window = (None,) * len(src.shape)
    if not _narrowable(reader):
        return full
    if op is Op.SHRINK:   # (a slice reads a window of its source even where all of it is read)
        return tuple((start, stop) if r is None else (start + r[0], start + r[1])
                     for (start, stop, _), r in zip(reader.arg, window))
    if not _narrowed(window):
        return full
    if op in ELEMENTWISE:
        return window
    if op in REDUCTION:
        return tuple(None if a in reader.arg else r for a, r in enumerate(window))
    if op is Op.EXPAND:
        return tuple(None if n == 1 else r for r, n in zip(window, src.shape))
    if op is Op.PERMUTE:
        read = [None] * len(src.shape)
        for axis, r in zip(reader.arg, window):
            read[axis] = r
        return tuple(read)
    return _reshaped(src.shape, reader.shape, window)   # (never None: _window checked)


def _reshaped(before: tuple, after: tuple, window: Window) -> Optional[Window]:
    """The window of a reshape's source for `window` of its result: where each narrowed axis of
    the result is one axis of the source (the same size, the same product of sizes outside it),
    that axis takes its range; None otherwise."""
    read: list[Range] = [None] * len(before)
    try:
        for axis, r in enumerate(window):
            if r is None:
                continue
            outer = prod(after[:axis])
            same = [a for a in range(len(before))
                    if surely_equal(before[a], after[axis]) and surely_equal(prod(before[:a]), outer)]
            if not same:
                return None
            read[same[0]] = r
    except Undecidable:
        return None
    return tuple(read)


def _size(window: Window, shape: tuple) -> tuple:
    return tuple(n if r is None else r[1] - r[0] for r, n in zip(window, shape))


def _rebuilt(node: Node, windows: dict[Node, Window], memo: dict[Node, Node]) -> Node:
    """`node` over its window, from its sources' rebuilt nodes, each read where `node` reads it."""
    window = windows[node]
    if node.op is Op.SHRINK and _narrowable(node):   # (what it reads is what it is)
        return _read(node.src[0], _demand(node, window, 0), windows, memo)
    if not _narrowed(window):
        src = tuple(memo[s] for s in node.src)
        return node if src == node.src else Node(node.op, node.dtype, node.shape, src, node.arg)
    src = tuple(_read(s, _demand(node, window, slot), windows, memo) for slot, s in enumerate(node.src))
    shape = _size(window, node.shape)
    arg = shape if node.op in (Op.EXPAND, Op.RESHAPE) else node.arg
    return Node(node.op, node.dtype, shape, src, arg)


def _read(node: Node, read: Window, windows: dict[Node, Window], memo: dict[Node, Node]) -> Node:
    """`node` (rebuilt: memo) seen over `read`, which its own window holds: a SHRINK relative to
    that window where the two differ, else the rebuilt node itself."""
    have = windows[node]
    rebuilt = memo[node]
    slices = []
    for r, h, n in zip(read, have, node.shape):
        if r is None:   # (then h is None too: a window holds what each reader reads)
            slices.append((0, n, 1))
            continue
        start = 0 if h is None else h[0]
        slices.append((r[0] - start, r[1] - start, 1))
    if all(surely_equal(s[0], 0) and surely_equal(s[1], m) for s, m in zip(slices, rebuilt.shape)):
        return rebuilt
    shape = tuple(stop - start for start, stop, _ in slices)
    return Node(Op.SHRINK, node.dtype, shape, (rebuilt,), tuple(slices))
