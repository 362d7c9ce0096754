"""Graph passes: constant folding and algebraic simplification, applied as rewrite rules.

Common-subexpression elimination needs no pass: nodes are hash-consed, so rebuilding a node
with equal parts returns the existing one. Dead code needs none either: `optimize` rebuilds only
what the outputs reach, so a branch a rule cut off (`where(True, a, b) -> a`) disappears.
"""
from __future__ import annotations

import math
import struct
from typing import Callable, Optional

import numpy as np

from .dtypes import DType, can_cast_safe, cast_values
from .graph import Node, consumers, toposort
from .narrow import narrow
from .ops import ELEMENTWISE, MOVEMENT, REDUCTION, Op
from .symbolic import surely_equal
from .rules import NUMPY_REFERENCE
from .view import ViewStack


# The CONST nodes made last for Python ints and floats (`x * 2`: every op with a scalar makes
# one): found again by value, dtype and shape without converting the value again. (The sign
# is part of a float's key: 0.0 == -0.0. A nan is never found: nan != nan.) Bounded: cleared
# when full.
_RECENT: dict = {}
_RECENT_MAX = 256


def const(value, dtype: DType, shape: tuple[int, ...]) -> Node:
    """A CONST node; the value is stored exactly as `dtype` holds it (float32 rounding, wrap)."""
    kind = type(value)
    key = None
    if (kind is float or kind is int) and type(shape) is tuple:
        key = (value, kind, dtype, shape, kind is float and value == 0.0 and math.copysign(1.0, value) < 0)
        node = _RECENT.get(key)
        if node is not None:
            return node
    node = _const(value, dtype, shape)
    if key is not None:
        if len(_RECENT) >= _RECENT_MAX:
            _RECENT.clear()
        _RECENT[key] = node
    return node


def _const(value, dtype: DType, shape: tuple[int, ...]) -> Node:
    if type(value) in (float, int) and dtype.name == "float64" and abs(value) < (1 << 53):
        scalar = float(value)   # exact already: the common cases need no numpy round trip
    elif type(value) in (float, int) and dtype.name == "float32" and abs(value) < 3e38:
        scalar = struct.unpack("<f", struct.pack("<f", value))[0]   # rounded to float32
    else:
        scalar = cast_values(value, dtype).item()
    return Node(Op.CONST, dtype, tuple(shape), (), scalar)


def _is_const(node: Node, value) -> bool:
    return node.op is Op.CONST and node.arg == value


def _is_neg_zero(node: Node) -> bool:
    return node.op is Op.CONST and type(node.arg) is float and node.arg == 0 and math.copysign(1.0, node.arg) < 0


# ---- constant folding ------------------------------------------------------------------------

def fold_constants(node: Node) -> Optional[Node]:
    """exp(CONST 0) -> CONST 1; EXPAND(CONST c) -> CONST c of the new shape; max of CONST c -> c."""
    if not node.src or not all(s.op is Op.CONST for s in node.src):
        return None
    if node.op in ELEMENTWISE:
        values = [np.array(s.arg, dtype=s.dtype.np) for s in node.src]
        with np.errstate(all="ignore"):
            result = NUMPY_REFERENCE[node.op](values, node.arg, node.dtype)
        return const(np.asarray(result).item(), node.dtype, node.shape)
    if node.op in MOVEMENT and node.op is not Op.PAD:
        return const(node.src[0].arg, node.dtype, node.shape)
    if node.op in (Op.REDUCE_MAX, Op.REDUCE_MIN) and node.src[0].size > 0:
        return const(node.src[0].arg, node.dtype, node.shape)
    if node.op is Op.SUM and not node.dtype.is_inexact:  # exact for integers; floats (and complex) would round
        count = node.src[0].size // max(node.size, 1)
        return const(int(node.src[0].arg) * count, node.dtype, node.shape)
    return None


# ---- algebraic simplification -----------------------------------------------------------------

def _identity_arithmetic(node: Node) -> Optional[Node]:
    """x*1 -> x, 1*x -> x, x/1 -> x, x-0 -> x, x+(-0.0) -> x, integer x+0 -> x and x*0 -> 0;
    x**1 -> x, x**2 -> x*x, float x**0.5 -> sqrt(x).

    Float x+0.0 stays: (-0.0)+0.0 is +0.0. Float x*0 stays: nan*0 is nan.
    """
    op, src = node.op, node.src
    if op is Op.MUL:
        for a, b in (src, src[::-1]):
            if _is_const(b, 1):
                return a
            if _is_const(b, 0) and node.dtype.is_integer:
                return b
    if op is Op.DIV and _is_const(src[1], 1):
        return src[0]
    if op is Op.SUB and _is_const(src[1], 0):
        return src[0]
    if op is Op.ADD:
        for a, b in (src, src[::-1]):
            if _is_const(b, 0) and (node.dtype.is_integer or _is_neg_zero(b)):
                return a
    if op is Op.POW and src[1].op is Op.CONST:
        if src[1].arg == 1:
            return src[0]
        if src[1].arg == 2:  # exact, and a multiply instead of a call to pow
            return Node(Op.MUL, node.dtype, node.shape, (src[0], src[0]))
        if src[1].arg == 0.5 and node.dtype.is_float:   # numpy's x ** 0.5 is sqrt(x): nan for -inf, -0.0 for -0.0
            return Node(Op.SQRT, node.dtype, node.shape, (src[0],))
    return None


def _involutions(node: Node) -> Optional[Node]:
    """-(-x) -> x; cast(cast(x: f32 -> f64) -> f32) -> x; cast to own dtype -> x."""
    if node.op is Op.NEG and node.src[0].op is Op.NEG:
        return node.src[0].src[0]
    if node.op is Op.CAST:
        inner = node.src[0]
        if inner.dtype is node.dtype:
            return inner
        if inner.op is Op.CAST and inner.src[0].dtype is node.dtype and _widens(node.dtype, inner.dtype):
            return inner.src[0]
    return None


def _widens(narrow: DType, wide: DType) -> bool:
    return can_cast_safe(narrow, wide)


def _select(node: Node) -> Optional[Node]:
    """where(True, a, b) -> a; where(False, a, b) -> b; where(c, a, a) -> a."""
    if node.op is not Op.WHERE:
        return None
    cond, a, b = node.src
    if a is b:
        return a
    if cond.op is Op.CONST:
        return a if cond.arg else b
    return None


def _movement(node: Node) -> Optional[Node]:
    """reshape/expand to the same shape -> x; identity permute, flip of no axis, zero pad -> x;
    reshape(reshape(x)) -> reshape(x); permute(permute(x)) -> one permute; a permute that
    moves only size-1 axes -> reshape (a view of realized memory, no kernel)."""
    op = node.op
    if op not in MOVEMENT:
        return None
    x = node.src[0]
    if op in (Op.RESHAPE, Op.EXPAND, Op.SHRINK, Op.PAD) and surely_equal(node.shape, x.shape):
        if op is not Op.SHRINK or all(step == 1 for _, _, step in node.arg):
            return x
    if op is Op.PERMUTE and tuple(node.arg) == tuple(range(len(node.arg))):
        return x
    if op is Op.PERMUTE and [a for a in node.arg if x.shape[a] != 1] == [a for a, n in enumerate(x.shape) if n != 1]:
        return Node(Op.RESHAPE, node.dtype, node.shape, (x,), node.shape)   # only size-1 axes move
    if op is Op.FLIP and not node.arg:
        return x
    if op is Op.RESHAPE and x.op is Op.RESHAPE:
        return Node(Op.RESHAPE, node.dtype, node.shape, x.src, node.shape)
    if op is Op.RESHAPE and x.op is Op.EXPAND and x.src[0].op is Op.RESHAPE:
        return _unit_reshaped_expand(node)
    if op is Op.PERMUTE and x.op is Op.PERMUTE:
        order = tuple(x.arg[a] for a in node.arg)
        return Node(Op.PERMUTE, node.dtype, node.shape, x.src, order)
    return None


def _detach(node: Node) -> Optional[Node]:
    """detach(x) -> x: gradients are built before a graph is optimized, so the stop has done its job."""
    return node.src[0] if node.op is Op.DETACH else None


def _unit_axes_only(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return [n for n in a if n != 1] == [n for n in b if n != 1]


def _unit_reshaped_expand(node: Node) -> Optional[Node]:
    """reshape(expand(reshape(y))) -> expand(y) where the reshapes only add or drop size-1 axes
    and the two read alike: a reduction's result broadcast back into the index space it was
    reduced in (a row max of a matmul's (.., M, 1, N) result, read by the elements), which the
    fusion then recognises as such a broadcast."""
    expand, inner = node.src[0], node.src[0].src[0]
    y = inner.src[0]
    if len(y.shape) != len(node.shape) or any(m not in (1, n) for m, n in zip(y.shape, node.shape)) or \
            not (_unit_axes_only(node.shape, expand.shape) and _unit_axes_only(inner.shape, y.shape)):
        return None
    chain = ViewStack.contiguous(y.shape).reshape(inner.shape).expand(expand.shape).reshape(node.shape)
    if not chain.reads_like(ViewStack.contiguous(y.shape).expand(node.shape)):
        return None
    return Node(Op.EXPAND, node.dtype, node.shape, (y,), node.shape)


def _sink_unit_reshape(node: Node) -> Optional[Node]:
    """f(reshape(y), z) -> reshape(f(y, reshape(z))) where the reshape only adds or drops size-1
    axes and y is computed (a reduction or elementwise): the epilogue then runs in y's index
    space, so it fuses into y's kernel. `x @ w + b` is one kernel, not a matmul and an add."""
    if node.op not in ELEMENTWISE:
        return None
    inner = next((s.src[0] for s in node.src if s.op is Op.RESHAPE and _unit_axes_only(s.shape, s.src[0].shape)
                  and (s.src[0].op in REDUCTION or s.src[0].op in ELEMENTWISE)), None)
    if inner is None:
        return None
    shape = inner.shape

    def into(s: Node) -> Node:
        if s.op is Op.RESHAPE and s.src[0].shape == shape:
            return s.src[0]
        if s.op is Op.CONST:
            return Node(Op.CONST, s.dtype, shape, (), s.arg)
        # (simplified itself: a broadcast reduction's reshape(expand(reshape(r))) becomes expand(r))
        return simplify(Node(Op.RESHAPE, s.dtype, shape, (s,), shape))
    sunk = Node(node.op, node.dtype, shape, tuple(into(s) for s in node.src), node.arg)
    return Node(Op.RESHAPE, node.dtype, node.shape, (sunk,), node.shape)


def _reduce_unit_reshape(node: Node) -> Optional[Node]:
    """reduce(reshape(y)) -> reshape(reduce(y)) where the reshape only adds or drops size-1 axes
    and y is computed: the reduction then runs in y's index space, as the elementwise ops
    around it do (_sink_unit_reshape), so a kernel reading it broadcast may compute it inside
    itself (a softmax of a matmul's (.., M, 1, N) result: one kernel, not three)."""
    if node.op not in REDUCTION or node.src[0].op is not Op.RESHAPE:
        return None
    reshape = node.src[0]
    y = reshape.src[0]
    if not _unit_axes_only(reshape.shape, y.shape) or not (y.op in REDUCTION or y.op in ELEMENTWISE):
        return None
    big_y = [a for a, n in enumerate(y.shape) if n != 1]
    big = [a for a, n in enumerate(reshape.shape) if n != 1]
    axes = tuple(sorted(big_y[big.index(a)] for a in node.arg if a in big))
    if not axes:
        return None
    shape = tuple(1 if a in axes else n for a, n in enumerate(y.shape))
    reduced = Node(node.op, node.dtype, shape, (y,), axes)
    return Node(Op.RESHAPE, node.dtype, node.shape, (reduced,), node.shape)


def _trivial_reduce(node: Node) -> Optional[Node]:
    """sum(x, axes where x has size 1) -> x: the reduced shape equals the input's."""
    if node.op in REDUCTION and node.shape == node.src[0].shape:
        return node.src[0]
    return None


RULES: tuple[Callable[[Node], Optional[Node]], ...] = (
    _detach, fold_constants, _identity_arithmetic, _involutions, _select, _movement, _trivial_reduce,
    _sink_unit_reshape, _reduce_unit_reshape,
)


def simplify(node: Node) -> Node:
    """Apply RULES to one node until none fires (its sources are already simplified)."""
    while True:
        for rule in RULES:
            new = rule(node)
            if new is not None and new is not node:
                assert new.shape == node.shape and new.dtype is node.dtype, (rule.__name__, node, new)
                node = new
                break
        else:
            return node


def optimize(roots: list[Node]) -> list[Node]:
    """The graph-level pipeline: every reachable node rebuilt from simplified sources, then
    computed only where it is read (narrow.py), sums added together summed as one, then
    reductions reordered to the layout they are read in."""
    simplified = _simplified(roots)
    narrowed = narrow(simplified)
    if narrowed is not simplified:   # (new slices and smaller nodes: simplified again)
        narrowed = _simplified(narrowed)
    return reduce_in_read_order(merge_added_sums(narrowed))


def _simplified(roots: list[Node]) -> list[Node]:
    """Every node reachable from `roots` rebuilt from simplified sources and simplified."""
    return _rebuild(roots, lambda node, _: simplify(node))


def merge_added_sums(roots: list[Node]) -> list[Node]:
    """sum(x, axes) + sum(y, axes) -> sum(x + y, axes), for sums over equal shapes in their
    operands' own dtype (a matmul's: `a @ w + b @ v`, an LSTM's gates) that nothing else reads,
    also where each is reshaped alike (a matmul's result drops its summed axis). One reduction
    then runs in one register tile, each product an FMA on its accumulators; the sums added
    were two reductions in one kernel, which no tile holds (a @ w + b @ v + c @ u at 2048 x 128
    x 128: 55 ms in dot products along the strided weights, against 1.2 in the tile). Floats
    regroup as a reduction's terms may (sum(x) + sum(y) may round apart from it, or overflow
    where it does not)."""
    order = toposort(roots)
    single = {node for node, count in consumers(order).items() if count == 1}
    return _rebuild(roots, lambda node, original: _merged_sum(node, original, single) or node, order)


def _merged_sum(node: Node, original: Node, single: set[Node]) -> Optional[Node]:
    if node.op is not Op.ADD or not (node.dtype.is_float or node.dtype.is_integer):
        return None
    parts = [_summed(s, o, single) for s, o in zip(node.src, original.src)]
    if None in parts:
        return None
    a, b = parts
    if a.arg != b.arg or not surely_equal(a.src[0].shape, b.src[0].shape):
        return None
    terms = Node(Op.ADD, node.dtype, a.src[0].shape, (a.src[0], b.src[0]))
    merged = Node(Op.SUM, node.dtype, a.shape, (terms,), a.arg)
    return merged if surely_equal(merged.shape, node.shape) else \
        Node(Op.RESHAPE, node.dtype, node.shape, (merged,), node.shape)


def _summed(node: Node, original: Node, single: set[Node]) -> Optional[Node]:
    """The sum `node` is, or reshapes, where nothing else reads it nor its reshapes (in the
    graph as it was: `original`) and it keeps its operand's dtype; None otherwise."""
    while original.op is Op.RESHAPE and original in single:
        original = original.src[0]
    if original not in single:
        return None
    if node.op is Op.RESHAPE:
        node = node.src[0]
    return node if node.op is Op.SUM and node.dtype is node.src[0].dtype else None


def _rebuild(roots: list[Node], rewrite: Callable[[Node, Node], Node],
             order: Optional[list[Node]] = None) -> list[Node]:
    """Every node reachable from `roots` (`order`: toposort(roots), where the caller has it)
    rebuilt bottom-up from rewritten sources, then rewritten: rewrite(rebuilt, original), the
    original as the graph had it (for what was known of it)."""
    memo: dict[Node, Node] = {}
    for node in order if order is not None else toposort(roots):
        src = tuple(memo[s] for s in node.src)
        memo[node] = rewrite(node if src == node.src else Node(node.op, node.dtype, node.shape, src, node.arg), node)
    return [memo[r] for r in roots]


def reduce_in_read_order(roots: list[Node]) -> list[Node]:
    """permute(sum(x)) -> reshape(sum(permute(x))) where nothing else reads the sum (also through
    a reshape that only adds or drops size-1 axes): the reduction then writes its result in the
    order it is read, instead of a reduction kernel and then a transposing copy. The weight
    gradient of `x @ w.T` is `(g.T @ x).T`, and comes out as w's (n, k) directly.
    Not where another reduction reads the permute as it is (no reshape between that merges
    axes, for which the order is needed): there the permute arranges a contraction's operand
    (lt.compute puts the reduced axes last), the reading kernel's loops follow its own output,
    and a reduction written in that arrangement was read across its innermost axis (a Winograd
    transform's product, its 6 terms innermost: 5 ms, 0.6 in its own order)."""
    order = toposort(roots)
    uses = consumers(order)
    single = {node for node, count in uses.items() if count == 1}
    reduced = _read_by_reductions(order)
    return _rebuild(roots, lambda node, original: node if original in reduced else
                    _permuted_reduction(node, single) or node, order)


def _read_by_reductions(order: list[Node]) -> set[Node]:
    """The nodes of `order` (sources first) a reduction reads through elementwise and movement
    ops that keep the axes apart (a reshape only adds or drops size-1 axes)."""
    read: set[Node] = set()
    for node in reversed(order):
        if node.op in REDUCTION or (node in read and (node.op in ELEMENTWISE or node.op in MOVEMENT)):
            if node.op is Op.RESHAPE and not _unit_axes_only(node.shape, node.src[0].shape):
                continue
            read.update(s for s in node.src if s.op not in REDUCTION)
    return read


def _permuted_reduction(node: Node, single: set[Node]) -> Optional[Node]:
    if node.op is not Op.PERMUTE:
        return None
    reduced = reshape = node.src[0]
    if reshape.op is Op.RESHAPE and reshape in single and _unit_axes_only(reshape.shape, reshape.src[0].shape):
        reduced = reshape.src[0]
    if reduced.op not in REDUCTION or reduced not in single:
        return None
    # The permute reorders the non-unit axes (the reduced ones are size 1, kept): do the same to
    # the reduction's input, leaving its size-1 axes where they are.
    big = [axis for axis, n in enumerate(reduced.shape) if n != 1]
    seen = [axis for axis, n in enumerate(reshape.shape) if n != 1]
    order = [big[seen.index(axis)] for axis in node.arg if reshape.shape[axis] != 1]
    permutation = list(range(len(reduced.shape)))
    for slot, axis in zip(big, order):
        permutation[slot] = axis
    if permutation == sorted(permutation):
        return None
    x = reduced.src[0]
    moved = Node(Op.PERMUTE, x.dtype, tuple(x.shape[a] for a in permutation), (x,), tuple(permutation))
    result = Node(reduced.op, reduced.dtype, tuple(reduced.shape[a] for a in permutation), (moved,), reduced.arg)
    return result if result.shape == node.shape else Node(Op.RESHAPE, node.dtype, node.shape, (result,), node.shape)
