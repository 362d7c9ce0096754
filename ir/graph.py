"""The graph IR: one frozen, hash-consed node type.

Building a node with the same (op, dtype, shape, src, arg) as a live node returns that node, so
equal sub-expressions are one object (common-subexpression elimination for free) and node
identity can key caches. Nodes do not know about devices or Python-side tensors.
"""
from __future__ import annotations

import math
import struct
import weakref
from typing import Any, Callable, Iterable, Optional

from .dtypes import DType
from .ops import Op

Shape = tuple[int, ...]


_PACK_DOUBLE = struct.Struct("<d").pack


def _arg_key(arg: Any) -> Any:
    # 0.0 == -0.0 and 1 == 1.0 == True in Python; constants must keep their exact bits and type.
    if isinstance(arg, float):
        return ("f", struct.pack("<d", arg))
    if isinstance(arg, (bool, int)):
        return (type(arg).__name__, arg)
    return arg


class Node:
    # `tracks` is autograd's memo (lazytensor/autograd.py): whether gradients flow from this node
    # to a leaf tensor; None until asked. A derived fact, so it does not make nodes mutable values.
    # `local` is (op, dtype, shape, arg key): the node without its sources, for structure keys.
    # `depth` is the longest path of pending (not yet computed) nodes down from this one: 0 for a
    # buffer or constant; a realized value's node is set back to 0 (realize.py), so it measures
    # the work still pending under a tensor and the front end can bound it (tensor.py).
    __slots__ = ("op", "dtype", "shape", "src", "arg", "tracks", "local", "depth", "__weakref__")
    # live nodes by (local, src), each entry dropped when its node dies (a weak dictionary, with
    # plain weak references: a WeakValueDictionary's entries cost 4x as much to make)
    _live: "dict[tuple, weakref.ref[Node]]" = {}

    op: Op
    dtype: DType
    shape: Shape
    src: tuple["Node", ...]
    arg: Any
    depth: int

    def __new__(cls, op: Op, dtype: DType, shape: Shape, src: tuple["Node", ...] = (), arg: Any = None) -> "Node":
        kind = type(arg)   # (_arg_key inlined for the common args: every op made pays for this)
        local = (op, dtype, shape, arg if arg is None or kind is tuple else
                 ("f", _PACK_DOUBLE(arg)) if kind is float else _arg_key(arg))
        key = (local, src)
        ref = _LIVE.get(key)
        node = ref() if ref is not None else None
        if node is None:
            node = object.__new__(cls)
            set_slot = object.__setattr__
            set_slot(node, "op", op)
            set_slot(node, "dtype", dtype)
            set_slot(node, "shape", tuple(shape))
            set_slot(node, "src", tuple(src))
            set_slot(node, "arg", arg)
            set_slot(node, "tracks", None)
            set_slot(node, "local", local)
            depth = 0
            for s in src:
                if s.depth >= depth:
                    depth = s.depth + 1
            set_slot(node, "depth", depth)
            _LIVE[key] = weakref.ref(node, lambda _, key=key: _forget(key))
        return node

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("graph nodes are immutable")

    def __reduce__(self):
        raise TypeError("graph nodes are not picklable")

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __repr__(self) -> str:
        arg = f", arg={self.arg!r}" if self.arg is not None and self.op is not Op.BUFFER else ""
        return f"Node({self.op.name}, {self.dtype.name}, {self.shape}{arg}, nsrc={len(self.src)})"


_LIVE = Node._live


def _forget(key: tuple) -> None:
    """A node died: drop its entry, unless a new node took the key since (its entry is live)."""
    ref = _LIVE.get(key)
    if ref is not None and ref() is None:
        del _LIVE[key]


def toposort(roots: Iterable[Node], expand: Optional[Callable[[Node], bool]] = None) -> list[Node]:
    """Every node reachable from `roots`, each after its sources, depth first from the first root
    and source (iterative: graphs get deep). Where `expand(node)` is False the node is listed but
    its sources are not visited."""
    order: list[Node] = []
    seen: set[Node] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.src if expand is None or expand(root) else ()))]
        while stack:
            node, sources = stack[-1]
            for s in sources:   # descend into the next unseen source; resume here after it
                if s not in seen:
                    seen.add(s)
                    stack.append((s, iter(s.src if expand is None or expand(s) else ())))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def consumers(order: list[Node]) -> dict[Node, int]:
    """How many distinct nodes in `order` use each node as a source."""
    count: dict[Node, int] = {}
    for node in order:
        for s in set(node.src):
            count[s] = count.get(s, 0) + 1
    return count


def pretty(roots: Iterable[Node]) -> str:
    """A readable listing of the graph, one node per line (for LT_DEBUG and test failures)."""
    order = toposort(roots)
    names = {node: f"%{i}" for i, node in enumerate(order)}
    lines = []
    for node in order:
        srcs = ", ".join(names[s] for s in node.src)
        arg = "" if node.arg is None or node.op is Op.BUFFER else f" {node.arg!r}"
        lines.append(f"{names[node]} = {node.op.name}{arg}({srcs}) : {node.dtype.name}{list(node.shape)}")
    return "\n".join(lines)
