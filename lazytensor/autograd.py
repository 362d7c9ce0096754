"""Reverse-mode autodiff on the lazy graph: gradients are graph nodes too.

`loss.backward()` walks the graph from `loss` back to the leaf tensors that require grad and
builds, with one rule per op (GRADIENT_RULES), the nodes that compute each leaf's gradient.
Nothing runs until the gradients are realized, together with the loss, so forward and backward
fuse, share work (hash-consing makes their common parts one node) and hit the kernel cache like
any other graph.

Leaves are realized tensors: each one a BUFFER node of its own, registered here. A node *tracks*
when it reaches a leaf through anything but DETACH; only tracking nodes carry gradients, and a
tensor requires grad when its node tracks (and grad mode was on when it was made).

Complex values follow PyTorch's convention: the gradient of a real loss L with respect to
z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger derivative, times 2), so that z - lr * grad
descends. For a holomorphic f, the rule is g * conj(f'(z)); a real-valued rule is its own
conjugate, so each rule writes the conjugate once (`_conj`, a no-op on real nodes).
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import TYPE_CHECKING, Optional

from .fft_grad import fft_rule
from .grad_rules import RULES, Rule
from .ir.arith import add as _add
from .ir.graph import Node, toposort
from .ir.ops import Op
from .ir.rules import make
from .linalg_grad import linalg_rule

if TYPE_CHECKING:
    from .tensor import Tensor

# ---- grad mode ---------------------------------------------------------------------------------

_mode = threading.local()


def is_grad_enabled() -> bool:
    """Whether operations record gradients now (False inside `lt.no_grad()`).

    >>> with lt.no_grad():
    ...     lt.is_grad_enabled()
    False
    """
    return getattr(_mode, "enabled", True)


class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __enter__(self):
        self.before = is_grad_enabled()
        _mode.enabled = self.enabled

    def __exit__(self, *exc):
        _mode.enabled = self.before
        return False


def no_grad() -> _GradMode:
    """A context (or decorator) in which results carry no gradient: for evaluation and for
    updating parameters in place.

    >>> w = lt.ones(3, requires_grad=True)
    >>> with lt.no_grad():
    ...     y = w * 2
    >>> y.requires_grad
    False
    """
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """A context (or decorator) that turns gradient recording back on inside `no_grad()`.

    >>> with lt.no_grad(), lt.enable_grad():
    ...     lt.is_grad_enabled()
    True
    """
    return _GradMode(True)


# ---- leaves and tracking -----------------------------------------------------------------------

# A leaf's node -> its tensor (weakly). The entry lives as long as the node, that is as long as
# some graph still reads it, not the tensor: a leaf made inside a function and dropped there
# still takes part in the graphs built from it (they require grad and backward() runs; its
# gradient goes nowhere, as in PyTorch).
_LEAVES: "weakref.WeakKeyDictionary[Node, weakref.ref[Tensor]]" = weakref.WeakKeyDictionary()
_REPLACED: "weakref.WeakKeyDictionary[Node, bool]" = weakref.WeakKeyDictionary()  # old leaf values


def register_leaf(tensor: "Tensor", buffer_node: Node) -> Node:
    """A fresh BUFFER node for `tensor`'s realized value, registered as a leaf. Fresh, so no graph
    built before (and no entry of the tracking memo) can contain it."""
    old = is_leaf_node(tensor) and tensor.node
    if old:
        del _LEAVES[old]
        _REPLACED[old] = True
    node = _fresh(buffer_node)
    _LEAVES[node] = weakref.ref(tensor)
    object.__setattr__(node, "tracks", True)   # (a leaf tracks itself, and so does its node once replaced)
    return node


def _fresh(buffer_node: Node) -> Node:
    """A BUFFER node for the same memory that no graph contains yet (a new Buffer object)."""
    return Node(Op.BUFFER, buffer_node.dtype, buffer_node.shape, (), buffer_node.arg.reshaped(buffer_node.shape))


def unregister_leaf(tensor: "Tensor") -> Node:
    """The tensor's value as a fresh, plain BUFFER node (the leaf node may be memoized as tracking)."""
    if is_leaf_node(tensor):
        del _LEAVES[tensor.node]
    return _fresh(tensor.node)


def is_leaf_node(tensor: "Tensor") -> bool:
    ref = _LEAVES.get(tensor.node)
    return ref is not None and ref() is tensor


def tracks(node: Node) -> bool:
    """Whether gradients flow from `node` to some leaf: it reaches one through float nodes, not
    through a DETACH (bool and integer values carry no gradient; float and complex ones do).
    Memoized on the node; a node never changes its answer, since new leaves are fresh nodes,
    marked as tracking when registered (so is a leaf's node after an in-place update replaced
    it: backward() raises there). Any other node without sources tracks nothing. (The walk asks
    no weak dictionary: it runs for every node a tensor is made of, ~10 us a node before.)"""
    if not _LEAVES.data:   # (no leaf: the cheap test, see realize._REALIZED)
        return False
    known = node.tracks
    if known is not None:
        return known
    value = _from_sources(node)
    if value is not None:   # (most often its sources are decided: the node made by one tensor op)
        _set_tracks(node, value)
        return value
    stack = [node]   # depth first: a node is decided once its sources are
    while stack:
        n = stack[-1]
        if n.tracks is not None:   # (pushed twice, decided meanwhile)
            stack.pop()
            continue
        value = _from_sources(n)
        if value is None:
            stack.extend(s for s in n.src if s.tracks is None)
            continue
        stack.pop()
        _set_tracks(n, value)
    return node.tracks


def _from_sources(n: Node) -> Optional[bool]:
    """tracks(n) from its sources' memoized answers; None while one of them is undecided. A
    DETACH tracks nothing whatever is under it; nor does a node without sources."""
    if n.op is _DETACH:
        return False
    value = False
    for s in n.src:
        known = s.tracks
        if known is None:
            return None
        value = value or known
    return value and n.dtype.kind in _INEXACT


_DETACH = Op.DETACH
_INEXACT = ("f", "c")
_set_tracks = Node.tracks.__set__   # (the slot itself: Node.__setattr__ refuses every write)


def mark_tracks(node: Node, value: bool) -> None:
    """Memoize tracks(node) where the caller knows it (floatexpr.py: whether any operand of a
    composite tracks), so that no walk over the nodes it made asks again."""
    _set_tracks(node, value)


def adopt(node: Node) -> tuple[Node, bool]:
    """The node a new tensor holds and whether it requires grad: in no_grad mode a tracking node
    is wrapped in DETACH, so later operations on the result do not reach the leaves."""
    if not tracks(node):
        return node, False
    if is_grad_enabled():
        return node, True
    return make(Op.DETACH, node), False


def zero_grads(params, set_to_none: bool) -> None:
    """Forget the parameters' gradients (before the next backward, which would add to them):
    None, or zeros where asked to keep the tensors. (Module.zero_grad, Optimizer.zero_grad.)"""
    for p in params:
        p.grad = None if set_to_none or p.grad is None else p.grad * 0


# ---- the rules: grad_rules.py's, with the linalg and fft extensions' --------------------------

GRADIENT_RULES: dict[Op, Optional[Rule]] = {**RULES, Op.LINALG: linalg_rule, Op.FFT: fft_rule}


# ---- backward ----------------------------------------------------------------------------------

def gradients(root: Node, seed: Node) -> dict[Node, Node]:
    """d(root)/d(leaf) for every leaf node that `root` reaches, as graph nodes: the chain rule
    applied in reverse topological order, summing where a node feeds several others."""
    order = [n for n in toposort([root], expand=tracks) if tracks(n)]
    pending: dict[Node, Node] = {root: seed}
    result: dict[Node, Node] = {}
    for node in reversed(order):
        g = pending.pop(node, None)
        if g is None:
            continue
        if node.op is Op.BUFFER:
            if node in _REPLACED:
                raise RuntimeError("a tensor this graph used was updated in place (an optimizer step?) after "
                                   "the graph was built, so its gradient is lost; run the forward pass again "
                                   "before backward()")
            if node in _LEAVES:
                result[node] = g
            continue
        rule = GRADIENT_RULES[node.op]
        if rule is None:
            continue
        for src, gs in zip(node.src, rule(g, node)):
            if gs is None or not tracks(src):
                continue
            assert gs.shape == src.shape and gs.dtype is src.dtype, (node.op, gs, src)
            pending[src] = _add(pending[src], gs) if src in pending else gs
    return result
