"""Plans that serve a range of sizes: one compile for graphs that differ only in a size.

Generating text one token at a time builds the same graph for every context length T, each
with new shapes: compiled per shape, 64 lengths made 1,158 kernels. Here a graph whose plan is
not cached is compared with the graphs of the same *skeleton* seen before (the structure with
every integer of a shape taken out, in nodes and in the arguments of reshape, expand, shrink and
pad; axes and other ops' integers are data and stay in): where two differ only in integers, and
each integer is a*t + b of one of them, t (the size variable), the graph is rebuilt with that
variable (ir/symbolic.py), run through the pipeline once -- every decision on its sizes must
hold over the whole range or the compile is abandoned -- and the plan found is bound to each
later size: checked to be exactly the template's graph at that t, then run with t passed to
its kernels (no compile). Anything the symbolic pipeline cannot decide falls back to the
concrete compile, which is always right.

A graph at size 1 has another skeleton than at 2 and up: broadcasting across an axis of size 1
needs no EXPAND (generation's first token, T = 1, adds a bias to a (1, 1, 128) row without one).
So each graph's *outline* is kept too: its skeleton with the EXPANDs left out. A new skeleton
whose outline an earlier graph had gets its template at once, the earlier graph's integers
giving each line's second point (an EXPAND's sizes are those of its source, or of the node that
reads it where it broadcasts): generation compiles T = 1, then the template at T = 2.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import traceback
import threading
from dataclasses import dataclass
from typing import Any, Optional

from . import pipeline, plan
from .backends.runtime import CompiledKernel, Runtime
from .devices import debug_level
from .ir import symbolic
from .ir.graph import Node, readers, toposort
from .ir.ops import Op
from .ir.rules import make

LOWEST = 2            # the least size a template serves (size 1 is special everywhere: broadcasting)
HIGHEST = 1 << 24     # the greatest
HINT = 64             # the size a template's schedules are chosen for (or its greatest, if less)
# The greatest size a template serves. Its kernels are scheduled for HINT, and a packed panel or
# a tile along a size it cannot bound is dropped: far above, they run far below their concrete
# twins (a matmul 2048 after one of 1024 made a template: 1.2 s, 12 GFLOP/s, against 0.1 s
# compiled for its sizes), while a compile costs little beside such a kernel's time. So larger
# sizes compile for themselves, as without templates.
MOST = 4 * HINT
ENABLED = os.environ.get("LT_SYMBOLIC", "1") != "0"   # LT_SYMBOLIC=0: every size compiled on its own
SIZED = frozenset({Op.RESHAPE, Op.EXPAND, Op.SHRINK, Op.PAD})   # ops whose arguments are sizes

_lock = threading.Lock()


@dataclass
class _Template:
    """A plan for every size t in [LOWEST, highest]: integer k of the skeleton is a[k]*t + b[k].
    (highest: at most MOST)"""
    name: str
    a: list[int]
    b: list[int]
    plan: Optional[plan.Plan]   # None: not compiled yet, or refused
    highest: int = HIGHEST      # the greatest size the plan serves (its compile assumed no more)
    refused: bool = False       # the symbolic compile failed: the family compiles per size
    # made through an outline (_through_outline) and no other size fitted it yet: where one does
    # not, the family drops it and fits its next two graphs as any family does
    unconfirmed: bool = False


@dataclass
class _Family:
    sample: list[int]                  # the integers of the last graph seen (no template yet)
    template: Optional[_Template] = None


def skeleton(roots: list[Node]) -> tuple[tuple, list[int], list[Node], dict[Node, int]]:
    """(the graph's structure without its integers, the integers in order, the nodes in the
    walk's order, where each node's integers start among them): the integers of shapes and of
    SIZED ops' arguments, a node's shape first."""
    order = toposort(roots)
    index = {n: i for i, n in enumerate(order)}
    ints: list[int] = []
    starts: dict[Node, int] = {}
    parts = []
    for n in order:
        starts[n] = len(ints)
        shape = _take(n.shape, ints)
        # (sizes only: any other op's integers (an axis, a permutation, a random seed) are data
        # and stay in the skeleton)
        arg = _take(n.arg, ints) if n.op in SIZED else None if n.op is Op.BUFFER else n.local[3]
        parts.append((n.op, n.dtype, shape, arg, tuple(index[s] for s in n.src)))
    return (tuple(parts), tuple(index[r] for r in roots)), ints, order, starts


def _outline(key: tuple, ints: list[int], order: list[Node], starts: dict[Node, int]) -> tuple[tuple, list[int]]:
    """The skeleton `key` without its EXPAND nodes (a reader of one reads what it expands), and
    the integers of the nodes left, in order."""
    parts, roots = key
    kept: dict[int, int] = {}   # index in `order` -> index in the outline
    through: list[int] = []     # index in `order` -> the node it stands for (itself, or what an EXPAND expands)
    outline, left = [], []
    for i, (n, part) in enumerate(zip(order, parts)):
        if n.op is Op.EXPAND:
            through.append(through[part[4][0]])
            continue
        through.append(i)
        kept[i] = len(outline)
        op, dtype, shape, arg, src = part
        outline.append((op, dtype, shape, arg, tuple(kept[through[j]] for j in src)))
        left += ints[starts[n]:_end(order, starts, i, ints)]
    return (tuple(outline), tuple(kept[through[r]] for r in roots)), left


def _end(order: list[Node], starts: dict[Node, int], i: int, ints: list[int]) -> int:
    """Where the integers of order[i] end among `ints`."""
    return starts[order[i + 1]] if i + 1 < len(order) else len(ints)


def _through_outline(old: list[int], new: list[int], key: tuple, ints: list[int], order: list[Node],
                     starts: dict[Node, int]) -> Optional[_Template]:
    """The template through an earlier graph of this graph's outline (its integers `old`, this
    one's `new`; the earlier one may be at size 1) and this graph: each integer of a node kept
    in the outline on its line through the two, an EXPAND's sizes on the lines of its source's
    sizes, or where it broadcasts on those of a node that reads it at its shape; None where some
    integer is no line, or a broadcast has no such reader."""
    lines = _lines(old, new, lowest=1)
    if lines is None:
        return None
    a: list = [None] * len(ints)
    b: list = [None] * len(ints)
    taken = 0
    for i, n in enumerate(order):
        if n.op is not Op.EXPAND:
            start, end = starts[n], _end(order, starts, i, ints)
            a[start:end] = lines[0][taken:taken + end - start]
            b[start:end] = lines[1][taken:taken + end - start]
            taken += end - start
    read_by = readers(order)
    for n in order:
        if n.op is not Op.EXPAND:
            continue
        src = n.src[0]
        for d, size in enumerate(n.shape):
            if src.shape[d] == size:
                q = starts[src] + d
            else:
                reader = next((r for r in read_by.get(n, ()) if r.op is not Op.EXPAND and r.shape == n.shape), None)
                if reader is None:
                    return None
                q = starts[reader] + d
            for p in (starts[n] + d, starts[n] + len(n.shape) + d):   # (its shape, then its arg: the same sizes)
                a[p], b[p] = a[q], b[q]
    return _named(key, a, b)


def _take(x: Any, ints: list[int]) -> Any:
    if type(x) is int:
        ints.append(x)
        return "#"
    if isinstance(x, tuple):
        return tuple(_take(e, ints) for e in x)
    return x


def _put(x: Any, values: list, at: list[int]) -> Any:
    """`x` with its integers replaced by values[at[0]], ... in the order _take found them."""
    if type(x) is int:
        at[0] += 1
        return values[at[0] - 1]
    if isinstance(x, tuple):
        return tuple(_put(e, values, at) for e in x)
    return x


def bound_plan(rt: Runtime, roots: list[Node]) -> Optional[plan.Plan]:
    """A plan for the graph under `roots` from a template of its skeleton (made here from an
    earlier graph where this one differs from it only in one size), or None."""
    if not ENABLED or rt.device.name != "cpu":   # (size parameters are rendered by the cpu backend only, so far)
        return None
    key, ints, order, starts = skeleton(roots)
    with _lock:
        family = rt.families.get(key)
        if family is None:
            family = _Family(ints)
            rt.families.put(key, family)
            outline, left = _outline(key, ints, order, starts)
            earlier = rt.outlines.get(outline)
            rt.outlines.put(outline, left)
            family.template = None if earlier is None else _through_outline(earlier, left, key, ints, order, starts)
            if family.template is None:
                return None
            family.template.unconfirmed = True
        template = family.template
        if template is None:
            template = _fit(family.sample, ints, key)
            family.sample = ints
            if template is None:
                return None
            family.template = template
    if template.plan is None and not template.refused:
        try:
            template.plan = _compile(rt, template, order, starts, roots)
            rt.stats.size_templates += 1
        except Exception as error:   # (anything the symbolic pipeline cannot decide or do: compile concretely)
            if debug_level():
                print(f"lt: sizes: no template compiled ({type(error).__name__}: {error})", file=sys.stderr)
                if debug_level() >= 2:
                    traceback.print_exc()
            template.refused = True
            rt.stats.size_templates_refused += 1
            if template.unconfirmed:   # (made through an outline: the family's next two graphs fit as usual)
                with _lock:
                    family.template = None
            return None
    if template.plan is None:
        return None
    t = _size(template, ints)
    if template.unconfirmed:
        with _lock:
            if t is None:
                family.template, family.sample = None, ints
            elif ints != family.sample:
                template.unconfirmed = False
    if t is None:
        return None
    rt.stats.sized_plans += 1
    return _bind(template.plan, {template.name: t})


def _fit(old: list[int], new: list[int], key: tuple) -> Optional[_Template]:
    """The template through two graphs' integers: integer k is a[k]*t + b[k], t the first one
    that differs; None where some integer is no such line."""
    lines = _lines(old, new, LOWEST)
    return None if lines is None else _named(key, *lines)


def _lines(old: list[int], new: list[int], lowest: int) -> Optional[tuple[list[int], list[int]]]:
    """(a, b): integer k of both on the line a[k]*t + b[k] through them, t the first integer
    that differs (in old, at least `lowest`; in new, at least LOWEST); None where there is no
    such t or some integer is no such line."""
    if len(old) != len(new):
        return None
    pivot = next((k for k, (u, v) in enumerate(zip(old, new)) if u != v), None)
    if pivot is None:
        return None
    t1, t2 = old[pivot], new[pivot]
    if t1 < lowest or t2 < LOWEST or min(t1, t2) > MOST:
        return None
    a, b = [], []
    for u, v in zip(old, new):
        slope, rest = divmod(v - u, t2 - t1)
        if rest:
            return None
        a.append(slope)
        b.append(u - slope * t1)
    return a, b


def _named(key: tuple, a: list[int], b: list[int]) -> _Template:
    # (a name from the template itself: a kernel's source, and so its disk cache entry, is the
    # same in every process that meets this template)
    digest = hashlib.sha256(repr((key, a, b)).encode()).hexdigest()[:12]
    return _Template(f"n{digest}", a, b, None)


def _size(template: _Template, ints: list[int]) -> Optional[int]:
    """The size t at which the template's integers are `ints`, or None."""
    if len(ints) != len(template.a):
        return None
    pivot = next(k for k, a in enumerate(template.a) if a)
    t, rest = divmod(ints[pivot] - template.b[pivot], template.a[pivot])
    if rest or not LOWEST <= t <= template.highest:
        return None
    if any(v != a * t + b for v, a, b in zip(ints, template.a, template.b)):
        return None
    return t


def _compile(rt: Runtime, template: _Template, order: list[Node], starts: dict[Node, int],
             roots: list[Node]) -> plan.Plan:
    """The template's graph with its size variable, through the pipeline: its plan."""
    highest = template.highest = min(_highest(template, order, starts), MOST)
    n = symbolic.var(template.name, LOWEST, highest, min(HINT, highest))
    values = [a * n + b if a else b for a, b in zip(template.a, template.b)]
    at = [0]
    memo: dict[Node, Node] = {}
    for node in order:
        shape = _put(node.shape, values, at)
        if node.op is Op.BUFFER:
            memo[node] = Node(Op.BUFFER, node.dtype, shape, (), node.arg)
            continue
        arg = _put(node.arg, values, at) if node.op in SIZED else node.arg
        src = tuple(memo[s] for s in node.src)
        made = make(node.op, *src, arg=arg) if src else Node(node.op, node.dtype, shape, (), arg)
        if made.shape != shape or made.dtype is not node.dtype:   # (the template's shapes hold)
            raise symbolic.Undecidable(f"{node.op.name}: shape {made.shape} is not the template's {shape}")
        memo[node] = made
    graph = [memo[r] for r in roots]
    _, sym_leaves = plan.structure(graph)
    found = pipeline.kernels(graph, rt.device.target, sym_leaves)
    return plan.build(found.kernels, found.roots, found.leaves, lambda kernel: pipeline.compile_kernel(kernel, rt))


def _highest(template: _Template, order: list[Node], starts: dict[Node, int]) -> int:
    """The greatest size for which the template's graph is valid (below HIGHEST): a slice
    of a fixed-size tensor bounds it (a causal mask's [:T, :T] of a (64, 64) buffer)."""
    highest = HIGHEST
    for node in order:
        if node.op is not Op.SHRINK:
            continue
        args = starts[node] + len(node.shape)   # (its (start, stop, step) per axis follow its shape)
        for d in range(len(node.shape)):
            q = starts[node.src[0]] + d
            for p in (args + 3 * d, args + 3 * d + 1):   # start and stop <= the source's length
                slope = template.a[p] - template.a[q]
                if slope > 0:
                    highest = min(highest, (template.b[q] - template.b[p]) // slope)
    if highest < LOWEST:
        raise symbolic.Undecidable("the template's graph holds for no size")
    return highest


def _bind(template: plan.Plan, values: dict[str, int]) -> plan.Plan:
    """The template plan at these sizes: concrete shapes, kernels given their size values."""
    steps = []
    for step in template.steps:
        run = step.run
        if isinstance(run, CompiledKernel) and run.kernel.sizes:
            kernel = run.kernel
            extent = kernel.parallel_extent
            run = dataclasses.replace(run, kernel=dataclasses.replace(
                kernel, parallel_extent=symbolic.substitute(extent, values)),
                size_values=tuple(values[name] for name in kernel.sizes))
        steps.append(dataclasses.replace(step, run=run, shape=symbolic.substitute(step.shape, values),
                                         shapes=symbolic.substitute(step.shapes, values)))
    return dataclasses.replace(template, steps=tuple(steps))


__all__ = ["bound_plan", "skeleton"]
