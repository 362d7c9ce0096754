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


class _Fields:
    """Node's storage."""
    __slots__ = ("op", "dtype", "shape", "src", "arg", "tracks", "local", "depth", "__weakref__")


class _Unfinished(_Fields):
    """A node being made: its fields are written as plain attributes (Node itself refuses
    writes), then it becomes a Node (the same layout: only its class changes)."""
    __slots__ = ()


class _Entry(weakref.ref):
    """A live-node table entry: a weak reference that knows its key, so that one shared
    callback drops the entry when the node dies (no closure made per node)."""
    __slots__ = ("key",)


class Node(_Fields):
    # `tracks` is autograd's memo (lazytensor/autograd.py): whether gradients flow from this node
    # to a leaf tensor; None until asked. A derived fact, so it does not make nodes mutable values.
    # It is a slot, not a weak dictionary in autograd, for speed: training asks it a few times for
    # every op it records (a slot read is ~20 ns, a WeakKeyDictionary lookup ~200 ns, its entries
    # cost more to make and to drop: ~1 us of an op's ~9 us graph building). The IR never reads it.
    # `local` is (op, dtype, shape, arg key): the node without its sources, for structure keys.
    # `depth` is the longest path of pending (not yet computed) nodes down from this one: 0 for a
    # buffer or constant; a realized value's node is set back to 0 (realize.py), so it measures
    # the work still pending under a tensor and the front end can bound it (realize.bound_pending).
    __slots__ = ()
    # live nodes by (local, src), each entry dropped when its node dies (a weak dictionary, with
    # plain weak references: a WeakValueDictionary's entries cost 4x as much to make)
    _live: "dict[tuple, _Entry]" = {}

    op: Op
    dtype: DType
    shape: Shape
    src: tuple["Node", ...]
    arg: Any
    tracks: Optional[bool]
    local: tuple
    depth: int

    def __new__(cls, op: Op, dtype: DType, shape: Shape, src: tuple["Node", ...] = (), arg: Any = None) -> "Node":
        if op is _BUFFER:   # (a buffer's node is never found again: each holds a new Buffer object)
            return _buffer_node(cls, dtype, shape, arg)
        kind = type(arg)   # (_arg_key inlined for the common args: every op made pays for this)
        local = (op, dtype, shape, arg if arg is None or kind is tuple else
                 ("f", _PACK_DOUBLE(arg)) if kind is float else _arg_key(arg))
        key = (local, src)
        entry = _LIVE.get(key)
        node = entry() if entry is not None else None
        if node is None:
            depth = 0
            for s in src:
                if s.depth >= depth:
                    depth = s.depth + 1
            node = _made(cls, op, dtype, tuple(shape), tuple(src), arg, local, depth)
            entry = _Entry(node, _forget)
            entry.key = key
            _LIVE[key] = entry
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
_BUFFER = Op.BUFFER


def _made(cls: type, op: Op, dtype: DType, shape: Shape, src: tuple, arg: Any, local: tuple, depth: int) -> Node:
    node = object.__new__(_Unfinished)
    node.op = op
    node.dtype = dtype
    node.shape = shape
    node.src = src
    node.arg = arg
    node.tracks = None
    node.local = local
    node.depth = depth
    node.__class__ = cls
    return node


def _buffer_node(cls: type, dtype: DType, shape: Shape, buffer: Any) -> Node:
    """A BUFFER node, not hash-consed: Buffer objects compare by identity and every buffer node
    is made with its own, so looking one up could never find another."""
    shape = tuple(shape)
    return _made(cls, _BUFFER, dtype, shape, (), buffer, (_BUFFER, dtype, shape, buffer), 0)


def _forget(entry: _Entry) -> None:
    """A node died: drop its entry, unless a new node took the key since."""
    if _LIVE.get(entry.key) is entry:
        del _LIVE[entry.key]


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


def readers(order: list[Node]) -> dict[Node, list[Node]]:
    """The distinct nodes in `order` that use each node as a source, in `order`'s order."""
    found: dict[Node, list[Node]] = {}
    for node in order:
        for s in dict.fromkeys(node.src):
            found.setdefault(s, []).append(node)
    return found


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
