"""Fusion: cut an optimized graph into kernels, each a tensor expression over index variables.

Rules (TVM's categories): elementwise chains fuse into their consumer; movement ops fold into
the index of the loads below them (a `ViewStack`), so views never make kernels; a reduction
absorbs its elementwise inputs. A reduction's result is also inlined into its consumer (e.g.
`x.sum() * 2`, `mean`, `relu(x @ w + b)`) when its consumers are all in that kernel and read
it at the same index (no movement op, no other reduction around it); otherwise the reduction is
realized into a buffer, so `exp(x - x.max(-1, keepdims=True))` costs one kernel for the max,
then one for the rest -- except where the target hoists reductions (the cpu): a reduction read
broadcast along its reduced axes, which are the kernel's inner axes, is computed in the kernel,
once per row (a softmax, a layer norm: one kernel, one pass over memory).
An elementwise node used twice is recomputed in each kernel that needs it: cheaper than a
round trip through memory -- except where a reduction reads it broadcast over many elements
(a matmul's gradient reads `g * (h > 0)` once per column of the other operand; a convolution
reads each element of its padded input once per tap and output channel): then it is computed
once into memory; so is a view that is no affine map of its buffer's index (merged attention
heads: a division per index) where a reduction reads it many times, and, on the cpu, an operand
that a reduction reads down long rows (a weight gradient's g in g.T @ x): copied transposed.
Opaque ops (sort, cumulative sum, ...) are steps of their own: their inputs are realized first,
and their results are read by later kernels like any buffer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir.dtypes import bool_
from ..ir.graph import Node, consumers, toposort
from ..ir.ops import ELEMENTWISE, MOVEMENT, OPAQUE, REDUCTION, Op
from ..ir.passes import const
from ..ir.rules import make
from ..ir.symbolic import has_sym, hint
from ..ir.view import ViewStack
from ..ir.walk import recurse
from . import heuristics as H


@dataclass(frozen=True)
class KernelSpec:
    """One fused kernel before scheduling: it computes `root` (a graph node) as `expr`, a tree of
    LOAD/VALID/CONST leaves, elementwise ops and reductions; LOAD slot k reads `inputs[k]`."""
    root: Node
    expr: Node
    inputs: tuple[Node, ...]


def fuse(outputs: list[Node], hoist_reductions: bool = False,
         transposed_copies: CopyTransposed | None = None) -> list[KernelSpec]:
    """Kernels that compute `outputs`, in an order where each runs after the kernels it reads.

    hoist_reductions: the target computes a reduction once per iteration of the output loops it
    depends on (the cpu lowering does): then a reduction that a kernel reads broadcast along
    its reduced axes, which are the kernel's inner axes (a row's max and sum in a softmax, a
    row's mean in a layer norm), is computed inside that kernel, not realized in memory first.
    transposed_copies: where a reduction reads an operand down long rows, that operand is
    copied transposed first (_transposed_copy; None: never)."""
    order = toposort(outputs)
    position = {node: i for i, node in enumerate(order)}
    uses = consumers(order)
    hoistable = _read_broadcast(order, uses) if hoist_reductions else set()
    outputs = [node for node in dict.fromkeys(outputs) if node.op is not Op.BUFFER]
    cuts = _cuts(order, set(outputs), uses)
    # A value computed into memory is loaded by every kernel that reads it, never also computed
    # there: that would repeat its work, and the two computations may round apart (fma
    # contraction, reassociation). Which values go to memory is only known once kernels are
    # built (a reduction decides to load a broadcast operand), so where one was computed by an
    # earlier kernel, the kernels are built again with it loaded everywhere.
    loaded: list[Node] = []
    while True:
        specs, inlined, roots = _kernels(outputs, cuts + loaded, uses, hoistable, transposed_copies)
        again = sorted((node for node in inlined if node in roots), key=position.__getitem__)
        if not again:   # (a transposed copy made by fusion runs right after what it copies)
            return sorted(specs.values(), key=lambda spec: (position[spec.root], 0) if spec.root in position
                          else (position[spec.root.src[0]], 1))
        loaded += again


def _kernels(outputs: list[Node], cuts: list[Node], uses: dict[Node, int], hoistable: set[Node],
             transposed_copies: CopyTransposed | None) -> tuple[dict[Node, KernelSpec], set[Node], set[Node]]:
    """The kernels computing `outputs` and `cuts` and whatever they decide to read from memory;
    with the nodes some kernel computed inside itself (not its root), and every root."""
    roots = set(outputs) | set(cuts)
    # in the outputs' order, not the set's: a kernel built later sees the roots found before it
    # (and loads them instead of recomputing), so the order decides the kernels; a set of nodes
    # iterates by their addresses, which differ from run to run
    pending = cuts + outputs
    specs: dict[Node, KernelSpec] = {}
    inlined: set[Node] = set()
    copy_roots: set[Node] = set()   # (see _KernelBuilder.copy_roots)
    while pending:
        root = pending.pop()
        if root in specs or root.size == 0:
            continue  # a zero-size result needs memory but no kernel
        if root.op in OPAQUE:  # a step of its own, on realized inputs
            for source in root.src:
                if source.op is not Op.BUFFER and source not in roots:
                    roots.add(source)
                    pending.append(source)
            specs[root] = KernelSpec(root, root, root.src)
            continue
        builder = _KernelBuilder(root, roots, uses, hoistable, transposed_copies, copy_roots)
        specs[root] = spec = builder.build()
        # the kernel's loops run over its expression's shape: anything else leaves output unwritten
        assert spec.expr.shape == root.shape, f"kernel for {root} computes shape {spec.expr.shape}"
        inlined |= builder.inlined
        copy_roots.update(copy for copy in builder.copies if copy not in roots)
        copy_roots.difference_update(builder.new_roots)   # (a root for every kernel after all)
        roots.update(builder.new_roots, builder.copies)
        pending.extend(builder.new_roots + builder.copies)
    return specs, inlined, roots


def _cuts(order: list[Node], roots: set[Node], uses: dict[Node, int]) -> list[Node]:
    """The nodes to compute into memory, beyond the roots, so that no kernel's expression has
    more than H.MAX_KERNEL_NODES nodes. A long chain (a loop of `y = y + 1` unrolled in Python,
    50,000 steps) becomes kernels of a bounded size -- and equal ones, compiled once -- instead
    of one expression whose compile time grows with the square of its length. Sizes count a
    node's expression as a tree (each distinct source once): a shared sub-expression counted
    twice only cuts earlier. A reduction counts as one load for its readers (most are computed
    into memory; one inlined into its reader is bounded itself). Where a node is too big, its
    biggest sources are cut first. An elementwise value with several consumers is computed into
    memory once its expression passes H.SHARED_RECOMPUTE_MAX nodes that compute: recomputed by each
    consumer, and the consumers' consumers..., a loop's `y = y - y.mean() + 1` does work that
    grows with the square of its steps."""
    seen_as: dict[Node, int] = {}   # what a node adds to the expression of a kernel that reads it
    work: dict[Node, int] = {}      # the same, counting the ops that compute (not views: index math)
    cuts: list[Node] = []
    for node in order:
        if node.op is Op.CONST:
            seen_as[node] = work[node] = 0
            continue
        if node.op is Op.BUFFER:
            seen_as[node] = work[node] = 1
            continue
        sources = sorted({s for s in node.src if s.op is not Op.CONST}, key=lambda s: seen_as[s])
        size = 1 + sum(seen_as[s] for s in sources)
        while size > H.MAX_KERNEL_NODES and sources and seen_as[sources[-1]] > 1:
            biggest = sources.pop()   # computed into memory: read as one load
            cuts.append(biggest)
            size -= seen_as[biggest] - 1
            seen_as[biggest] = work[biggest] = 1
        cost = (node.op not in MOVEMENT) + sum(work[s] for s in set(node.src))   # (a cut source: 1, a load)
        if cost > H.SHARED_RECOMPUTE_MAX and uses.get(node, 0) > 1 and node.op in ELEMENTWISE and node not in roots:
            cuts.append(node)
            size = cost = 1
        kept = node in roots or node.op in OPAQUE or node.op in REDUCTION
        seen_as[node], work[node] = (1, 1) if kept else (size, cost)
    return cuts


def _read_broadcast(order: list[Node], uses: dict[Node, int]) -> set[Node]:
    """The reductions a kernel may compute inside itself (hoist_reductions): those read once,
    through an expand, maybe with elementwise ops between (a softmax's row max; its row sum,
    cast back to float32; a layer norm's row mean)."""
    found: set[Node] = set()
    seen: set[Node] = set()
    stack = [n.src[0] for n in order if n.op is Op.EXPAND]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op in REDUCTION and uses[node] == 1:
            found.add(node)
        elif node.op in ELEMENTWISE:
            stack.extend(node.src)
    return found


_VIEW_METHOD = {
    Op.RESHAPE: ViewStack.reshape, Op.PERMUTE: ViewStack.permute, Op.EXPAND: ViewStack.expand,
    Op.SHRINK: ViewStack.shrink, Op.PAD: ViewStack.pad, Op.FLIP: ViewStack.flip,
}


def view_through(shape: tuple[int, ...], path: tuple[Node, ...]) -> ViewStack:
    """The view of a contiguous tensor of `shape` after the movement ops of `path` (top first)."""
    view = ViewStack.contiguous(shape)
    for move in reversed(path):
        view = _VIEW_METHOD[move.op](view, move.arg)
    return view


@dataclass(frozen=True)
class CopyTransposed:
    """When fusion copies a reduction's operand transposed (_transposed_copy): where the kernel's
    last axis is a whole number of `tile_bytes` (a register tile's columns, which vectorize
    along it), and the rows it reads along the reduced axes span `span` bytes or more (g in
    g.T @ x), or it runs along the reduced axes across the tile's columns, `rows` rows or more
    of the tile reuse it and the product does `work` multiply-adds or more (w in x @ w.T)."""
    span: int
    tile_bytes: int
    rows: int
    work: int


@dataclass
class _KernelBuilder:
    root: Node
    roots: set[Node]
    uses: dict[Node, int]
    hoistable: set[Node] = field(default_factory=set)
    transposed_copies: CopyTransposed | None = None
    # roots that are only a transposed copy some kernel made for itself (the graph's own view
    # node, `w.T`, permuted into memory): other kernels read through them, as views of their
    # source, unless they want the copy too
    copy_roots: set[Node] = field(default_factory=set)
    inputs: list[Node] = field(default_factory=list)
    new_roots: list[Node] = field(default_factory=list)
    copies: list[Node] = field(default_factory=list)   # the transposed copies this kernel reads
    memo: dict = field(default_factory=dict)
    inside: dict = field(default_factory=dict)
    computed: set = field(default_factory=set)      # reductions this kernel computes
    materialized: set = field(default_factory=set)  # reductions every read of which loads
    inlined: set = field(default_factory=set)       # nodes (not the root) computed in this kernel
    factors: set = field(default_factory=set)       # what a sum of products here multiplies (under views)

    def build(self) -> KernelSpec:
        """The kernel's expression. A reduction is computed here at every read or loaded at
        every read, never both: computed twice (here and in its own kernel), reassociation and
        fma contraction may round the two apart, and `s.squeeze() != s` came out True. Where a
        build does both, it is built again with that reduction loaded everywhere."""
        self.inside = self._uses_inside()
        while True:
            self.inputs, self.new_roots, self.memo, self.computed, self.inlined = [], [], {}, set(), set()
            self.copies = []
            self.factors = set()
            expr = self.visit(self.root, (), False, False, frozenset())
            both = self.computed & set(self.new_roots)
            if not both:
                self.inlined.discard(self.root)
                return KernelSpec(self.root, expr, tuple(self.inputs))
            self.materialized |= both

    def _uses_inside(self) -> dict[Node, int]:
        """How many consumers each node has inside this kernel's region (the elementwise and
        movement nodes reachable from the root, not through a buffer, another root or a
        reduction -- except one this kernel may compute (`hoistable`): a softmax's exp is read by
        its row sum and by the division, both here). A node all of whose consumers are inside is
        not shared with other kernels. (Counting a reduction that is realized after all only lets
        work be done in two kernels, never a wrong value; so only candidates count: counting a
        gradient's matmul made a relu mask recompute the forward matmul beside its own kernel.)"""
        def inside(node: Node) -> bool:
            return node is self.root or not (node.op is Op.BUFFER or self.is_root(node) or node.op in OPAQUE
                                              or (node.op in REDUCTION and node not in self.hoistable))
        return consumers([n for n in toposort([self.root], expand=inside) if inside(n)])

    def is_root(self, node: Node) -> bool:
        """Whether another kernel computes `node` into memory, for every kernel to read."""
        return node in self.roots and node not in self.copy_roots

    def load(self, node: Node, path: tuple[Node, ...]) -> Node:
        if node not in self.inputs:
            self.inputs.append(node)
        view = view_through(node.shape, path)
        return Node(Op.LOAD, node.dtype, view.shape, (), (self.inputs.index(node), view))

    def read(self, node: Node, path: tuple[Node, ...], in_reduce: bool, space: tuple[int, ...],
             frame: frozenset[int] | None) -> Node:
        """A load of `node` (computed into memory) through `path`. Where a reduction reads it
        many times through a view that needs a division per index (merged heads: y.permute(0,
        2, 1, 3).reshape(B, T, C)), that view is copied once into memory instead, and the
        reduction reads the copy through plain strides (and tiles, packs it); so is an operand
        read down long rows along the reduced axes, copied transposed (_transposed_copy)."""
        if in_reduce and _read_often(node, space):
            cut = _unaffine_view(node, path)
            if cut is not None:
                self.new_roots.append(path[cut])
                return self.load(path[cut], path[:cut])
            return self.computed_into_memory(node, path, frame, in_memory=True)
        return self.load(node, path)

    def computed_into_memory(self, node: Node, path: tuple[Node, ...], frame: frozenset[int] | None,
                             in_memory: bool = False) -> Node:
        """A load of `node` through `path`, `node` computed into memory by a kernel of its own
        (`in_memory`: it is there already) -- and copied with its axes permuted where the
        reduction around reads it down long rows (_transposed_copy): the reduction reads the
        copy. (Computed transposed in one kernel instead, its own inputs are read across rows
        and the value again by any other kernel that needs it: a GELU gradient, 2048x512, took
        1.6 ms so against 1.1 + 0.4 computed, then copied.)"""
        moved = _transposed_copy(node, path, frame, self.transposed_copies, node in self.factors) \
            if self.transposed_copies is not None and frame else None
        if not in_memory:
            self.new_roots.append(node)
        if moved is None:
            return self.load(node, path)
        self.copies.append(moved[0])
        return self.load(*moved)

    def visit(self, node: Node, path: tuple[Node, ...], shared: bool, in_reduce: bool,
              frame: frozenset[int] | None) -> Node:
        """Kernel expression for `node` seen through the movement ops `path` (top first).

        shared: some node between the root and here has consumers in other kernels (so this part
        may be evaluated by several kernels); in_reduce: we are inside a reduction's input;
        frame: the kernel's axes that the reductions around here reduce (None inside a gather,
        where the index space is not the kernel's).
        """
        return recurse(self._visit, (node, path, shared, in_reduce, frame), self.memo)

    def _visit(self, key: tuple):
        """`visit` as a recursive definition (see ir/walk.py: `yield key` is a recursive call)."""
        node, path, shared, in_reduce, frame = key
        space = path[0].shape if path else node.shape  # the index space this value is read in
        if node.op is Op.BUFFER or (node is not self.root and self.is_root(node)):
            return self.read(node, path, in_reduce, space, frame)
        if node.op is Op.CONST:
            return Node(Op.CONST, node.dtype, space, (), node.arg)
        if node.op is Op.PAD and in_reduce and node is not self.root and _read_often(node, space):
            # a padded input read many times over (a convolution's windows): padded once into
            # memory, so the reduction reads plain vectors instead of checking bounds per element
            self.new_roots.append(node)
            return self.load(node, path)
        if node.op is Op.PAD:
            self.inlined.add(node)
            valid_view = view_through(node.src[0].shape, path + (node,))
            gate = Node(Op.VALID, bool_, space, (), valid_view)
            value = yield (node.src[0], path + (node,), shared, in_reduce, frame)
            zero = const(0, node.dtype, space)
            return Node(Op.WHERE, node.dtype, space, (gate, value, zero))
        if node.op in MOVEMENT:
            return (yield (node.src[0], path + (node,), shared, in_reduce, frame))
        if node.op in OPAQUE:
            self.new_roots.append(node)
            return self.load(node, path)
        if node.op is Op.GATHER:
            if path and node is not self.root:  # its index space is data-dependent: no view fits
                self.new_roots.append(node)
                return self.load(node, path)
            self.inlined.add(node)
            # x is evaluated at a data-dependent index: reductions inside it cannot be inlined
            source = yield (node.src[0], (), shared, True, None)
            index = yield (node.src[1], (), shared, in_reduce, None)
            return Node(Op.GATHER, node.dtype, node.shape, (source, index), node.arg)
        if node.op in REDUCTION:
            # (not inside a gather either, frame None: the lowering computes a reduction at the
            # kernel's indices, and a gather's index or source lives in an index space of its own)
            # (one contraction a kernel: a register tile holds one reduction; a @ w + b @ v with
            # two in one kernel ran both in dot products along strided weights, 40x slower)
            inline = not path and not shared and not in_reduce and frame is not None and \
                self.uses.get(node, 0) == 1 and not (_contraction(node) and any(map(_contraction, self.computed)))
            if node is not self.root and (node in self.materialized or
                                          not inline and not self._hoistable(node, path, shared, frame)):
                self.new_roots.append(node)
                return self.read(node, path, in_reduce, space, frame)
            self.computed.add(node)
            self.inlined.add(node)
            if node.op is Op.SUM:   # (a matmul's operands, or several matmuls' summed: a @ w + b @ v)
                self.factors.update(_under_views(factor) for product in _addends(node.src[0])
                                    if product.op is Op.MUL for factor in product.src)
            inner = frame | frozenset(node.arg) if frame is not None else None
            child = yield (node.src[0], (), shared, True, inner)
            return Node(node.op, node.dtype, node.shape, (child,), node.arg)
        assert node.op in ELEMENTWISE, node
        if in_reduce and node is not self.root and _recomputed_often(node, space):
            return self.computed_into_memory(node, path, frame)
        self.inlined.add(node)
        shared = shared or (node is not self.root and self.uses.get(node, 0) > self.inside.get(node, 0))
        src = []
        for s in node.src:
            src.append((yield (s, path, shared, in_reduce, frame)))
        return Node(node.op, node.dtype, space, tuple(src), node.arg)

    def _hoistable(self, reduce: Node, path: tuple[Node, ...], shared: bool, frame: frozenset[int] | None) -> bool:
        """Whether a reduction read through `path` can be computed inside this kernel, once per
        row (with hoist_reductions): the path only broadcasts it along its reduced axes, the
        axes it keeps are the kernel's outer axes (some longer than 1, or a single row too short
        to run in parallel: a generated token's layer norm; a long one keeps its reductions
        apart, each kernel runs the row on every core), no reduction around here reduces them,
        nothing else reads it, and an elementwise op of this kernel reads it (the lowering reads
        a hoisted reduction's value at every index of that op's space; read by the root's own
        broadcast, it would be the kernel's expression, in its own shape)."""
        if reduce not in self.hoistable or frame is None or shared or not path or path[0] is self.root or \
                any(p.op is not Op.EXPAND for p in path):
            return False
        space, rank = path[0].shape, len(reduce.shape)
        kept = [a for a in range(rank) if a not in reduce.arg]
        rows = any(reduce.shape[a] > 1 for a in kept) or hint(math.prod(space)) < H.PARALLEL_MIN_WORK
        return len(space) == rank and kept == list(range(len(kept))) and rows \
            and not frame & set(kept) and all(a in reduce.arg for a in range(rank) if reduce.shape[a] != space[a])


def _unaffine_view(node: Node, path: tuple[Node, ...]) -> int | None:
    """Where `node` read through the movement ops `path` (top first, the last reading `node`) is
    no affine map of its index: the position in `path` of the op whose result, copied into
    memory, is read affinely from there on; None where the view is affine, that op is not in
    the chain of ops from `node` up (each the source of the next: ops above an elementwise op
    reach the path through it, and their graph node is not a view of `node`), or the copy would
    be bigger than `node` (a broadcast made into rows: a convolution's windows)."""
    if not path or path[-1].src[0] is not node or view_through(node.shape, path).affine is not None:
        return None
    chain = len(path) - 1
    while chain > 0 and path[chain - 1].src[0] is path[chain]:
        chain -= 1
    for cut in reversed(range(chain, len(path))):   # the first op, from the buffer up, that leaves the affine maps
        if view_through(node.shape, path[cut:]).affine is None:
            return cut if hint(path[cut].size) <= hint(node.size) else None
    return None


def _contraction(node: Node) -> bool:
    """Whether `node` sums products of broadcast operands (a matmul, a convolution's windows
    times weights; not a row of dot products, (a * b).sum(1), which streams its rows)."""
    return node.op is Op.SUM and any(term.op is Op.MUL and any(map(_broadcast, term.src))
                                     for term in _addends(node.src[0]))


def _broadcast(node: Node) -> bool:
    """Whether `node` is a view that repeats its source (an expand among its movement ops)."""
    while node.op in MOVEMENT:
        if node.op is Op.EXPAND:
            return True
        node = node.src[0]
    return False


def _addends(node: Node) -> list[Node]:
    """The terms of a sum of terms (an ADD tree), or `node` itself."""
    terms, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.op is Op.ADD:
            stack.extend(n.src)
        else:
            terms.append(n)
    return terms


def _under_views(node: Node) -> Node:
    """What `node` views (through movement ops other than padding), or `node` itself."""
    while node.op in MOVEMENT and node.op is not Op.PAD:
        node = node.src[0]
    return node


def _transposed_copy(node: Node, path: tuple[Node, ...], frame: frozenset[int],
                     when: CopyTransposed, factor: bool) -> tuple[Node, tuple[Node, ...]] | None:
    """Where a reduction reads `node` through `path` (top first) broadcast along the kernel's last
    output axis (a register tile's vector axis, where it holds whole tiles: the other operand's
    rows) and contiguous along another output axis, but down long rows along its reduced axes
    `frame`, rows that span `when.span` bytes or more (g in a weight gradient g.T @ x, g
    2048x512: each reduced step reads a new line, 16 bytes of it for a tile; at that stride the
    lines share a few cache sets and are gone before the next tile comes back for its bytes: 65
    GFLOP/s on a Zen 3): `node` copied with its axes permuted so that the reduced ones come
    last, and the path that reads the copy as `path` reads `node` (a transposing copy runs near
    memory speed, the product of the copy at 190 GFLOP/s; weight gradients 1.2-1.8x faster in
    all). And where a reduction reads `node` along its reduced axes but across the kernel's last
    output axis, broadcast along other output axes that reuse it (w in x @ w.T, a Linear
    layer's forward, which a dot-product tile read at 85-100 GFLOP/s), where it is a `factor`
    of a sum of products (pairwise distances, sum((a - b)**2), ran 1.8-2.5x slower in a tile
    than in dot products): `node` copied with the output axes last, so the product runs in the
    register tile of x @ w (CopyTransposed says when). Only where each axis of the read steps
    along one axis of `node`, or along several that a reshape merged, forwards; None otherwise
    (a slice or a reversed view is read as it is)."""
    if has_sym(node.shape) or (path and has_sym(path[0].shape)):   # (symbolic sizes: read as it is)
        return None
    view = view_through(node.shape, path)
    if view.affine is None or not path:
        return None
    strides, space = view.affine[0], path[0].shape
    outputs = [d for d in range(len(space)) if d not in frame and space[d] > 1]
    reduced = [d for d in sorted(frame) if space[d] > 1]
    if not outputs or not reduced or space[outputs[-1]] * node.dtype.itemsize % when.tile_bytes:
        return None
    if strides[outputs[-1]] == 0:   # g in g.T @ x: the reduced axes last in the copy
        if all(strides[d] != 1 for d in outputs) or \
                math.prod(space[d] for d in reduced) * abs(strides[reduced[-1]]) * node.dtype.itemsize < when.span:
            return None
        first, last = outputs, reduced
    else:   # w in x @ w.T (a factor of a sum of products): the output axes last
        reuse = math.prod(space[d] for d in outputs if strides[d] == 0)
        if not factor or strides[reduced[-1]] != 1 or strides[outputs[-1]] == 1 or reuse < when.rows or \
                math.prod(space) < when.work:
            return None
        first, last = reduced, outputs
    row_major = [math.prod(node.shape[j + 1:]) for j in range(len(node.shape))]
    runs: dict[int, list[int]] = {}   # read axis -> the axes of `node` it steps along (merged by a reshape)
    for d in outputs + reduced:
        if strides[d] == 0:
            continue
        inner = [j for j, n in enumerate(node.shape) if n > 1 and row_major[j] == strides[d]]
        if len(inner) != 1:
            return None
        run = inner
        while math.prod(node.shape[j] for j in run) < space[d] and run[0] > 0:
            run = [run[0] - 1] + run
        if math.prod(node.shape[j] for j in run) != space[d]:
            return None
        runs[d] = run
    taken = sorted(j for run in runs.values() for j in run if node.shape[j] > 1)
    if taken != [j for j, n in enumerate(node.shape) if n > 1]:
        return None
    order = [j for j, n in enumerate(node.shape) if n == 1 and all(j not in run for run in runs.values())]
    order += [j for d in first + last if d in runs for j in runs[d]]
    if order == list(range(len(node.shape))):
        return None
    copy = make(Op.PERMUTE, node, arg=tuple(order))
    back = make(Op.PERMUTE, copy, arg=tuple(sorted(range(len(order)), key=order.__getitem__)))
    return copy, path + (back,)


def _recomputed_often(node: Node, space: tuple[int, ...]) -> bool:
    """Whether an elementwise node read in index space `space` would be evaluated many times
    per element (a broadcast) and costs more than a load and a cast to do so."""
    if not _read_often(node, space):
        return False
    work, stack, seen = 0, [node], set()
    while stack and work < 2:
        n = stack.pop()
        if n in seen or n.op not in ELEMENTWISE:
            continue
        seen.add(n)
        work += n.op is not Op.CAST
        stack.extend(n.src)
    return work >= 2


def _read_often(node: Node, space: tuple[int, ...]) -> bool:
    """Whether reading `node` in index space `space` reads each of its elements many times."""
    return hint(math.prod(space)) >= H.RECOMPUTE_BROADCAST_MAX * max(1, hint(node.size))
