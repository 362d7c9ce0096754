"""realize(): pending tensors to buffers.

    structure of the graph -> a plan cached for it? run it. Else the pipeline
    (lazytensor/pipeline.py: kernels, then compile_kernel for each) -> the plan
    (lazytensor/plan.py) -> launch
"""
from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Optional

from . import capture, pipeline, plan, sizes, tuning
from .backends.runtime import Runtime
from .autograd import tracks
from .devices import runtime
from .ir.graph import Node, toposort
from .ir.ops import Op
from .views import WeakById

if TYPE_CHECKING:
    from .tensor import Tensor


# The values of realized nodes that autograd still needs as nodes: a tensor whose node tracks a
# leaf keeps it (backward() walks it) and finds its value here. Entries live while the node does.
_REALIZED: "weakref.WeakKeyDictionary[Node, Node]" = weakref.WeakKeyDictionary()
# (Emptiness of these weak dictionaries is tested on their `.data`: len() of one is a Python-level
# call, ~0.3 us, paid on every realize. `.data` may still hold entries being removed: then the
# general path runs, which is always correct.)


def realized_value(node: Node) -> Node:
    """The BUFFER node holding `node`'s value where it was realized, else `node` itself."""
    return _REALIZED.get(node, node)


# Tensors to compute with the next realize on their device: side results of a step (a batch
# norm's running statistics) that would otherwise hold the step's graph until someone reads them.
# (By id: a WeakSet would compare tensors with ==, which builds a tensor.)
_WITH_NEXT: "weakref.WeakValueDictionary[int, Tensor]" = weakref.WeakValueDictionary()
# Guards _WITH_NEXT and the write-back of a realized value into its tensor (any thread may
# realize, or write into a tensor, at any time).
_LOCK = threading.Lock()


# ---- bounding pending work ---------------------------------------------------------------------
# Tensors feel eager: a loop `x = x - lr * grad(x)` with no realize() must not build one graph
# that grows with the step count (each realize would recompute the whole history). So the front
# end bounds the pending work under every tensor, measured as its node's `depth` (the longest
# path of pending nodes): a tensor made deeper than PENDING_MAX_DEPTH is realized on the spot,
# together with every live tensor that holds pending work inside its graph (a loop's carried
# value, read again by the next step: computed once, not again by the next step's graph). After
# that first cut, a tensor made PENDING_MIN_DEPTH deep by the same operation as the last cut (a
# loop's next lap) is cut too: the steps of a loop are then cut at one place, so their graphs
# have one structure and replay one compiled plan.
PENDING_MAX_DEPTH = 256
PENDING_MIN_DEPTH = 64
# tensors at least this deep are remembered (weakly, by id) as candidates to realize with a cut
_HELD_FROM_DEPTH = 16
_HELD = WeakById(least=1024)
_last_cut: list = [None]   # the `local` of the node whose tensor was cut last


_TOGETHER = threading.local()   # .depth: realized_together() blocks this thread is in


class realized_together:
    """`with realized_together(): ...` makes tensors that the caller realizes together right
    after (backward()'s gradients, one per leaf): none is cut on its own as it is made
    (bound_pending), which would compute the graph they share once per tensor (a GPT's step:
    2,295 kernels instead of 304)."""

    def __enter__(self) -> None:
        _TOGETHER.depth = getattr(_TOGETHER, "depth", 0) + 1

    def __exit__(self, *exc) -> None:
        _TOGETHER.depth -= 1


def bound_pending(tensor: "Tensor") -> None:
    """Called for each new tensor at least _HELD_FROM_DEPTH deep: remember it, and cut the
    pending graph here when it has grown past the bound (see above)."""
    if getattr(_TOGETHER, "depth", 0):
        return
    node = tensor.node
    with _LOCK:   # (any thread may make tensors: a weak dictionary is not safe to share unguarded)
        _HELD.add(tensor)
    if node.depth < PENDING_MIN_DEPTH or (node.depth < PENDING_MAX_DEPTH and node.local != _last_cut[0]):
        return
    _last_cut[0] = node.local
    with _LOCK:
        candidates = _HELD.live()
    others = [t for t in candidates if t is not tensor and t.device == tensor.device and t.node.depth]
    held = []
    if others:   # (the walk stops at the shallowest candidate's depth: a node's sources are shallower)
        lowest = min(t.node.depth for t in others)
        inside = set(toposort([node], expand=lambda n: n.depth > lowest))
        held = [t for t in others if t.node in inside]
    with _LOCK:
        for t in held + [tensor]:
            _HELD.discard(t)
    realize(tensor, *held)


def realize_with_next(*tensors: "Tensor") -> None:
    """Compute these tensors along with whatever is realized next on their device (sharing its
    work), instead of now."""
    with _LOCK:
        _WITH_NEXT.update((id(t), t) for t in tensors)


def realize_all(*tensors: "Tensor") -> None:
    """Compute these tensors and every side result waiting for the next realize, on any device."""
    with _LOCK:
        riders = list(_WITH_NEXT.values())
        _WITH_NEXT.clear()
    realize(*tensors, *riders)


def realize(*tensors: "Tensor") -> None:
    """Compute several tensors together, so work they share runs once.

    >>> a = lt.arange(4) * 2
    >>> lt.realize(a, a + 1)
    """
    values(*tensors)


def values(*tensors: "Tensor") -> list[Node]:
    """Realize the tensors together; the value (a BUFFER node) of each, computed from what it
    held when this was called. Each tensor then holds its value, unless it was written to (by
    another thread) meanwhile: a newer write is never replaced by an older value."""
    if len(tensors) == 1 and not _WITH_NEXT.data:   # (the common case, on its own short path)
        t = tensors[0]
        return [value_of(t.node, t.device, t)]   # (the node now: other threads may write meanwhile)
    wanted = [(t, t.node) for t in tensors]
    taken = wanted
    if _WITH_NEXT.data:
        devices = {t.device for t in tensors}
        with _LOCK:
            riders = [t for t in list(_WITH_NEXT.values()) if t.device in devices]
            for t in riders:
                _WITH_NEXT.pop(id(t), None)
        taken = wanted + [(t, t.node) for t in riders]
    by_device: dict[str, list[tuple["Tensor", Node]]] = {}
    known = _REALIZED.data
    for t, node in taken:
        if node.op is not _BUFFER and (not known or node not in _REALIZED):
            pending = by_device.get(t.device)
            if pending is None:
                by_device[t.device] = [(t, node)]
            else:
                pending.append((t, node))
    if not by_device:
        return [realized_value(node) for _, node in wanted]
    computed: dict[Node, Node] = {}
    for device, pending in by_device.items():
        outputs = _run(runtime(device), [node for _, node in pending])
        for (t, node), buffer in zip(pending, outputs):
            computed[node] = _settle(t, node, buffer)
    return [computed.get(node) or realized_value(node) for _, node in wanted]


def value_of(node: Node, device: str, tensor: "Optional[Tensor]" = None) -> Node:
    """The value (a BUFFER node) of `node` on `device`, computed for `tensor` (see _settle) or
    for none in particular (the host reads keep it: host.compute_viewed)."""
    if node.op is _BUFFER:
        return node
    if _REALIZED.data and node in _REALIZED:
        return _REALIZED[node]
    return _settle(tensor, node, _run(runtime(device), [node])[0])


def _settle(tensor: "Optional[Tensor]", node: Node, buffer) -> Node:
    """The value node of `node`, computed into `buffer` for `tensor` (if any), which holds it
    from now on: autograd still needs the node itself where it tracks a leaf (its value is found
    in _REALIZED then), and a tensor written to meanwhile keeps the newer write."""
    if buffer.shape != node.shape or buffer.dtype is not node.dtype:   # (complex values: computed as float pairs)
        buffer = buffer.reshaped(node.shape, node.dtype)
    value = Node(_BUFFER, node.dtype, node.shape, (), buffer)
    if tracks(node):
        _REALIZED[node] = value
        object.__setattr__(node, "depth", 0)   # (nothing pending under it now: see Node.depth)
    elif tensor is not None:
        with _LOCK:
            if tensor.node is node:
                tensor.node = value
    return value


def _run(rt: Runtime, roots: list[Node]) -> list:
    """The buffers of `roots` on `rt`'s device, by the plan cached for their graph's structure
    (made first where there is none)."""
    graph = _known_values(roots) if _REALIZED.data else roots
    key, leaves = plan.structure(graph)
    found = rt.plans.get(key)
    if found is None:   # (a template's plan where this graph differs from earlier ones in a size only)
        found = sizes.bound_plan(rt, graph) or _plan(rt, graph, leaves)
        rt.plans.put(key, found)
    else:
        rt.stats.plan_cache_hits += 1
    buffers = [leaf.arg for leaf in leaves]
    outputs = plan.run(rt, found, buffers)
    if capture.RECORDING is not None:
        capture.ran(rt, found, buffers, outputs)
    return outputs


_BUFFER = Op.BUFFER


def _plan(rt: Runtime, graph: list[Node], leaves: list[Node]) -> plan.Plan:
    """The plan for a structure not seen before: the pipeline's kernels, each compiled."""
    found = pipeline.kernels(graph, rt.device.target, leaves)
    return plan.build(found.kernels, found.roots, found.leaves, lambda kernel: tuning.compile_kernel(kernel, rt))


def _known_values(roots: list[Node]) -> list[Node]:
    """The graph with every node realized before replaced by its buffer (nothing is recomputed)."""
    memo: dict[Node, Node] = {}
    for node in toposort(roots, expand=lambda n: n not in _REALIZED):
        src = tuple(memo[s] for s in node.src) if node not in _REALIZED else ()
        memo[node] = _REALIZED.get(node) or (node if src == node.src else
                                             Node(node.op, node.dtype, node.shape, src, node.arg))
    return [memo[r] for r in roots]


__all__ = ["realize"]
