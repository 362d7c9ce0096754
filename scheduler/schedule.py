"""A schedule is data: an ordered list of primitives applied to a kernel's loop nest.

Axes are named: output axes `i0, i1, ...` (after collapse: `output_axis(d)`), the axes of the
k-th reduction `r{k}_{axis}` (`reduce_axis(k, axis)`); a primitive that makes loops names them:
`Split("i0", 4096)` makes `.outer` (`i0_o`) and `.inner` (`i0_i`), `Fuse(axes)` makes `.fused`.
The heuristics and the lowering (`lower.py` and its passes) take every name from these, never spell
one out. `heuristic_schedule` picks primitives for a target; a later autotuner searches over the
same primitives, and the lowering is the only place that applies them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

from ..ir.graph import Node, toposort
from ..ir.ops import REDUCTION, Op
from ..ir.target import Target
from . import heuristics as H


def output_axis(d: int) -> str:
    """The name of output axis `d` (after collapse)."""
    return f"i{d}"


def reduce_axis(k: int, a: int) -> str:
    """The name of axis `a` (of its source's shape) of the kernel's `k`-th reduction."""
    return f"r{k}_{a}"


@dataclass(frozen=True)
class Split:
    axis: str
    factor: int

    @property
    def outer(self) -> str:
        """The loop over the blocks of `factor` iterations."""
        return f"{self.axis}_o"

    @property
    def inner(self) -> str:
        """The loop inside a block (it stops early in the last block where `factor` does not divide)."""
        return f"{self.axis}_i"


@dataclass(frozen=True)
class Reorder:
    axes: tuple[str, ...]   # the new order of the output loops, outermost first; or of a reduction's.
                            # Reduction loops may run among output loops outside a CacheWrite tile
                            # (cpu_tile.py: the reduction in blocks, partial results in the output)


@dataclass(frozen=True)
class Parallel:
    axis: str               # must be the outermost loop


@dataclass(frozen=True)
class Vectorize:
    axis: str
    width: int


@dataclass(frozen=True)
class Unroll:
    axis: str
    factor: int


@dataclass(frozen=True)
class Fuse:
    axes: tuple[str, ...]   # neighbouring loops, outermost first, become one loop (`fused`)

    @property
    def fused(self) -> str:
        """The one loop the axes become."""
        return "x".join(self.axes)


@dataclass(frozen=True)
class Bind:
    axis: str
    to: str                 # "block" or "thread" (gpu): one iteration per block / per thread


@dataclass(frozen=True)
class CacheRead:
    slot: int               # an input of the kernel (its LOAD slot)
    at: str | None          # gpu: a reduction loop: once per iteration of it, the block's threads
                            # load the part of the input the loops inside it read into local memory.
                            # cpu (with CacheWrite): an output loop outside the tile, or None (before
                            # the loops): the part read inside is packed into a contiguous array


@dataclass(frozen=True)
class CacheWrite:
    at: str                 # an output loop: the loops from it inward keep their outputs in a local
                            # array, and the (single) reduction runs outside them: for each reduced
                            # element, every output of the tile is updated (cpu: the inner output
                            # loop vectorizes when the reduced axis is strided in memory)


@dataclass(frozen=True)
class PartialSum:
    at: str                 # a loop of a sum that widens its terms (float32 summed in float64): the
                            # loop and those inside it add the terms in their own dtype (half: in
                            # float) into a partial that starts at 0 on each entry and is added,
                            # widened, into the sum after it (float32 vectors over blocks, the
                            # blocks in float64)


Primitive = Union[Split, Reorder, Parallel, Vectorize, Unroll, Fuse, Bind, CacheRead, CacheWrite, PartialSum]
Schedule = tuple[Primitive, ...]


def reductions(expr: Node) -> list[Node]:
    """The reductions of a kernel expression in the order the lowering numbers them."""
    return [n for n in toposort([expr]) if n.op in REDUCTION]


def terms_per_output(reduces: list[Node]) -> int:
    """The most terms one output sums, given a kernel's `reductions` (1 where it has none)."""
    return max([1] + [r.src[0].size // max(1, r.size) for r in reduces])


def heuristic_schedule(expr: Node, target: Target) -> Schedule:
    """The heuristic schedule of a kernel expression for `target`."""
    if target.launches_blocks:
        if H.cpu_like(target):
            found = work_item_schedule(expr, target)
            if not any(isinstance(p, CacheWrite) for p in found):   # (a register tile lowers for cpu kernels only)
                return found
        return gpu_schedule(expr, target)
    return cpu_schedule(expr, target)


def alternative_schedules(expr: Node, target: Target) -> list[Schedule]:
    """Schedules of another structure than the heuristic one, for the tuner to start from too
    (its mutations change numbers, not structure): on a GPU target, a reduction computed by one
    thread per output where the heuristics chose a block per output, and the other way round,
    the untiled schedule where they chose a tiled matmul, and where work-items have SIMD lanes
    of their own, the cpu's schedule (`work_item_schedule`)."""
    if not target.launches_blocks:
        packed = cpu_schedule(expr, target, pack_panels=True)
        return [packed] if packed != cpu_schedule(expr, target) else []
    found = [work_item_schedule(expr, target)] if target.simd_bytes >= H.GPU_WORK_ITEM_SIMD_BYTES else []
    if H.cpu_like(target):
        found += [gpu_schedule(expr, target)]
    if reductions(expr) and expr.shape:
        found += [gpu_schedule(expr, target, per_thread=True, tiled=False),
                  gpu_schedule(expr, target, per_thread=False, tiled=False)]
    return found


def work_item_schedule(expr: Node, target: Target) -> Schedule:
    """The cpu's schedule on a device whose work-items have SIMD lanes (OpenCL on a cpu: PoCL):
    the iterations of its parallel loop become blocks of one work-item, each running the rest
    of the loops, whose vectorized ones the device's compiler vectorizes (a pragma)."""
    return tuple(Bind(p.axis, "block") if isinstance(p, Parallel) else p for p in cpu_schedule(expr, target))


def gpu_schedule(expr: Node, target: Target, per_thread: bool | None = None, tiled: bool = True) -> Schedule:
    """GPU heuristics. The output axes become one loop. Without a reduction (or with many outputs
    and short or strided reductions) each thread computes one output: consecutive threads write
    consecutive elements, so memory access is coalesced. Otherwise each block computes one
    output: its threads stride through the reduced axis side by side (coalesced) and combine
    their partial results in a tree through local memory. `per_thread` forces one choice, and
    `tiled=False` leaves a matmul untiled (the tuner's alternatives)."""
    shape = expr.shape
    reduces = reductions(expr)
    threads = H.gpu_threads(target)
    matmul = _gpu_matmul_schedule(expr, reduces, target) if tiled else None
    if matmul is not None:
        return matmul
    prims: list[Primitive] = []
    fuse = Fuse(tuple(output_axis(d) for d in range(len(shape))))
    out = fuse.fused
    if len(shape) > 1:
        prims.append(fuse)
    outputs = math.prod(shape)
    longest = max([1] + [math.prod(r.src[0].shape[a] for a in r.arg) for r in reduces])
    innermost = all(r.arg and max(r.arg) == len(r.src[0].shape) - 1 for r in reduces)
    if per_thread is None:
        per_thread = not reduces or outputs >= H.GPU_OUTPUTS_PER_THREAD_MIN * target.cores or (
            longest <= H.GPU_SHORT_REDUCTION or not innermost) and outputs >= threads
    if per_thread:
        if shape:
            split = Split(out, threads)
            prims += [split, Bind(split.outer, "block"), Bind(split.inner, "thread")]
        return tuple(prims)
    if shape:
        prims.append(Bind(out, "block"))
    for k, r in enumerate(reduces):
        if r.arg:
            split = Split(reduce_axis(k, max(r.arg)), threads)
            prims += [split, Bind(split.inner, "thread")]
    return tuple(prims)


def _gpu_matmul_schedule(expr: Node, reduces: list[Node], target: Target) -> Schedule | None:
    """A product-sum over a kept middle axis, `sum(x[.., m, 1?, k] * y[.., 1?, n, k])` as matmul
    builds it (shape (.., M, 1, N), reducing axis -2): tiled through local memory. Each block
    computes a TILE x TILE tile of outputs, one per thread; per step of TILE along the reduced
    axis its threads load a tile of each input into local memory together, then each thread
    reads its row and column from there. None where the pattern does not match."""
    tile = H.GPU_MATMUL_TILE
    if len(reduces) != 1 or len(expr.shape) < 3:
        return None
    (r,) = reduces
    rank, a = len(expr.shape), len(expr.shape) - 2
    product = r.src[0]
    if r.op is not Op.SUM or r.arg != (a,) or product.op is not Op.MUL or expr.shape[a] != 1:
        return None
    loads = product.src
    if any(x.op is not Op.LOAD or any(v.mask is not None for v in x.arg[1].views) for x in loads):
        return None
    m, n, k = expr.shape[a - 1], expr.shape[a + 1], product.shape[a]
    itemsize = max(x.dtype.itemsize for x in loads)
    if min(m, n, k) < tile or 2 * tile * tile * itemsize > target.local_memory_bytes or \
            tile * tile > (target.max_threads_per_block or tile * tile):
        return None
    batch = [output_axis(d) for d in range(a - 1)]
    im, iN, red = Split(output_axis(a - 1), tile), Split(output_axis(rank - 1), tile), Split(reduce_axis(0, a), tile)
    return (im, iN,
            Reorder(tuple(batch) + (im.outer, iN.outer, output_axis(a), im.inner, iN.inner)),
            *[Bind(b, "block") for b in batch], Bind(im.outer, "block"), Bind(iN.outer, "block"),
            Bind(im.inner, "thread"), Bind(iN.inner, "thread"),
            red, *[CacheRead(x.arg[0], red.outer) for x in loads])


def cpu_schedule(expr: Node, target: Target, pack_panels: bool = False) -> Schedule:
    """CPU heuristics: the outer loop in parallel chunks on every core when there is enough work,
    the innermost loop vectorized for the SIMD width (with several accumulators in reductions).
    Matmul-like reductions get register tiles (CacheWrite): dot products along a contiguous K,
    or rows of outputs updated per element of a strided reduction (weight gradients, A @ B).
    `pack_panels`: a tile packs a strided input's panel wherever that is valid (the tuner's
    alternative), not only where the thresholds say it pays."""
    shape = expr.shape
    reduces = reductions(expr)
    # as many lanes as the widest value in the kernel fits in one vector register (without
    # reductions: the widest that varies along the vectorized last axis)
    widest = max(n.dtype.itemsize for n in toposort([expr])) if reduces or not shape else \
        _widest_varying(expr, len(shape) - 1)
    lanes = max(1, target.simd_bytes // widest)
    work = math.prod(shape) * terms_per_output(reduces)
    prims: list[Primitive] = []
    if not reduces:
        if not shape:
            return ()
        last = output_axis(len(shape) - 1)
        blocked = _transpose_schedule(expr, lanes, work)
        if blocked is not None:
            return blocked
        if len(shape) == 1 and work >= H.PARALLEL_MIN_WORK:
            # one long loop: split it so the outer part runs in parallel, the inner vectorized
            chunks = target.cores * H.CHUNKS_PER_CORE
            factor = -(-shape[0] // chunks)
            factor = -(-factor // lanes) * lanes
            split = Split(output_axis(0), factor)
            prims += [split, Parallel(split.outer)]
            last = split.inner
        elif len(shape) > 1 and work >= H.PARALLEL_MIN_WORK:
            prims.append(Parallel(output_axis(0)))
        prims += [Vectorize(last, lanes), Unroll(last, H.ELEMENTWISE_UNROLL)]
        return tuple(prims)
    embedded = any(r.shape != shape for r in reduces)   # (a softmax: row reductions under an elementwise root)
    tileable = None if embedded else _tileable_reduction(expr, reduces)
    dot_tile = _dot_tile_schedule(expr, *tileable[:2], work, lanes, target) if tileable else None
    if dot_tile is not None:
        return dot_tile
    vector_axes = _outer_reduction_axes(shape, tileable, target) if tileable else []
    if vector_axes:
        tiled = _register_tile_schedule(shape, vector_axes, work, lanes, tileable, target, pack_panels)
        if tiled is not None:
            return tiled
        # the longest such axis (the last on a tie: contiguous stores), as wide as it allows:
        # a short one still beats gathering (a matrix-vector product A.T @ v has only one)
        n, col = max((shape[d], d) for d in vector_axes)
        if n >= H.CACHE_WRITE_MIN_LANES and (n >= lanes or terms_per_output(reduces) >= H.CACHE_WRITE_MIN_TERMS):
            return _cache_write_schedule(shape, work, min(lanes, 1 << (n.bit_length() - 1)), col, target.cores)
    if shape and work >= H.PARALLEL_MIN_WORK and shape[0] > 1:
        prims.append(Parallel(output_axis(0)))
    for k, r in enumerate(reduces):
        if r.arg:
            inner = reduce_axis(k, max(r.arg))
            terms = _narrow_terms(expr, r, target)
            if terms is not None:   # float32 in float32 vectors over blocks, the blocks in float64
                if r.src[0].shape[max(r.arg)] > H.PARTIAL_SUM_BLOCK:
                    split = Split(inner, H.PARTIAL_SUM_BLOCK)
                    prims.append(split)
                    inner = split.inner
                prims.append(PartialSum(inner))
            r_lanes = max(1, target.simd_bytes // max(1, (terms or r.src[0]).dtype.itemsize))
            extent = r.src[0].shape[max(r.arg)]
            accumulators = _partial_sum_accumulators(min(extent, H.PARTIAL_SUM_BLOCK), r_lanes) \
                if terms is not None else _accumulators(extent, r_lanes)
            prims += [Vectorize(inner, r_lanes), Unroll(inner, accumulators)]
    if embedded and len(shape) > 1 and shape[-1] > 1:   # the row's outputs, after its reductions
        last = output_axis(len(shape) - 1)
        prims += [Vectorize(last, max(1, target.simd_bytes // expr.dtype.itemsize)), Unroll(last, H.ELEMENTWISE_UNROLL)]
    return tuple(prims)


def _transpose_schedule(expr: Node, lanes: int, work: int) -> Schedule | None:
    """Blocks of a transposing copy: where a load steps a cache line or more per element along
    the vectorized last axis but is contiguous along another output axis `a` (x.T, a permute),
    each vector gathers its lanes from as many lines. Row by row, those lines are used one
    element at a time and gone before the next row comes back for its element (at a row stride
    of 2 KB or more they share a few cache sets): 3-5 GB/s on a Zen 3 whose copy runs at 34.
    In blocks of TRANSPOSE_BLOCK_BYTES along `a` by one vector along the last axis, the block's
    lines stay in L1 until all their elements are used: 17-40 GB/s (every block shape from 16x8
    to 128x32 measured at six matrix shapes; this one was best or near it at each). The
    blocks of `a` run outermost, in parallel, the other axes keep their order inside them."""
    shape = expr.shape
    if len(shape) < 2 or shape[-1] < lanes:
        return None
    last = len(shape) - 1
    strides, loads = _load_strides(expr)
    for st, load in zip(strides, loads):
        if st is None or load.shape != shape or abs(st[last]) * load.dtype.itemsize < H.CACHE_LINE_BYTES:
            continue   # (a load under a gather indexes a space of its own)
        block = H.TRANSPOSE_BLOCK_BYTES // load.dtype.itemsize
        axes = [d for d in range(last) if st[d] == 1 and shape[d] >= block]
        if not axes:
            continue
        a, b = Split(output_axis(axes[0]), block), Split(output_axis(last), lanes)
        others = [output_axis(d) for d in range(last) if d != axes[0]]
        prims: list[Primitive] = [a, b, Reorder((a.outer, *others, b.outer, a.inner, b.inner))]
        if work >= H.PARALLEL_MIN_WORK:
            prims.append(Parallel(a.outer))
        return tuple(prims) + (Vectorize(b.inner, lanes),)
    return None


def _widest_varying(expr: Node, axis: int) -> int:
    """The widest value, in bytes, of a kernel expression without reductions that varies along
    output axis `axis`. A value the same all along it (a softmax gradient's float64 row sum,
    broadcast along the row) is computed once per vector, not in its lanes: it must not narrow
    the vectors of the float32 values around it (4 lanes on AVX2, not 8: 3.5x slower)."""
    varying: dict[Node, bool] = {}
    for n in toposort([expr]):
        if n.op is Op.LOAD:
            strides = _strides(n)   # (over the kernel's index space, where it is one map)
            varying[n] = strides is None or len(strides) != len(expr.shape) or strides[axis] != 0
        elif n.op is Op.CONST:
            varying[n] = False
        elif n.op is Op.GATHER or not n.src:   # (a gather's index space is not the kernel's)
            varying[n] = True
        else:
            varying[n] = any(varying[x] for x in n.src)
    return max([n.dtype.itemsize for n, v in varying.items() if v] + [expr.dtype.itemsize])


def _accumulators(extent: int, lanes: int) -> int:
    """Vector accumulators for a reduction loop of `extent` terms (a power of two, at most
    H.REDUCE_ACCUMULATORS and at least 2). Each step of lanes x accumulators terms costs about
    one FMA latency; what is left after the last full step runs as a scalar chain, a latency a
    term. So the fewest steps plus terms left, the most accumulators on a tie: 500 terms of 16
    lanes take 2 (15 steps, 20 left) rather than 4 (7 steps, 52 left)."""
    options = [a for a in (2, 4, 8, 16) if a <= H.REDUCE_ACCUMULATORS] or [H.REDUCE_ACCUMULATORS]
    return min(options, key=lambda a: (extent // (lanes * a) + extent % (lanes * a), -a))


def _partial_sum_accumulators(block: int, lanes: int) -> int:
    """Vector accumulators for a PartialSum's block of `block` terms: H.PARTIAL_SUM_ACCUMULATORS,
    halved until one step (lanes x accumulators terms) fits in the block. Its terms past the
    last whole step are added one by one (_partial_sum): rows of 64 with 8 x 16 a step ran
    wholly scalar, exp and all (a softmax's sum over attention's 64 keys)."""
    accumulators = H.PARTIAL_SUM_ACCUMULATORS
    while accumulators > 1 and lanes * accumulators > block:
        accumulators //= 2
    return accumulators


def _narrow_terms(expr: Node, r: Node, target: Target) -> Node | None:
    """The terms of a float sum that widens them only to round its result back (a float32 sum:
    cast(sum(cast(x, float64)), float32)), or None. (A float64 sum of float32 values keeps
    float64's accuracy: no partial sums in float32 for it. Nor do terms that call a scalar
    function, log1p, say: their loop runs scalar, and its float32 partial would be one running
    sum of a block's 4096 terms, some 10 ulp off where numpy's pairwise sum is within 1.)"""
    src = r.src[0]
    if not (r.op is Op.SUM and src.op is Op.CAST and src.dtype.is_float and src.src[0].dtype.is_float and
            src.src[0].dtype.itemsize < src.dtype.itemsize):
        return None
    if target.scalar_ops and any((n.op, n.dtype.name) in target.scalar_ops for n in toposort([src.src[0]])):
        return None
    uses = [n for n in toposort([expr]) if r in n.src]
    widest = max(4, src.src[0].dtype.itemsize)   # (half terms: float partial sums)
    if not uses or any(n.op is not Op.CAST or not n.dtype.is_float or n.dtype.itemsize > widest for n in uses):
        return None
    return src.src[0]


def _load_strides(node: Node) -> tuple[list[tuple[int, ...] | None], list[Node]]:
    """The memory strides of every load under `node` over its index space (None for a load
    through several views that are not one affine map), and the loads."""
    loads = [n for n in toposort([node]) if n.op is Op.LOAD]
    return [_strides(n) for n in loads], loads


def _strides(load: Node) -> tuple[int, ...] | None:
    """The memory strides of one load over its index space (None: not one affine map)."""
    views = load.arg[1]
    return views.views[0].strides if len(views.views) == 1 else views.affine[0] if views.affine is not None else None


Tileable = tuple[Node, list[tuple[int, ...]], list[Node]]


def _tileable_reduction(expr: Node, reduces: list[Node]) -> Tileable | None:
    """The kernel's reduction, the memory strides of its loads and the loads, where a register
    tile may apply: one float reduction, no gather, every load one affine map. None otherwise."""
    if len(reduces) != 1 or any(n.op is Op.GATHER for n in toposort([expr])):
        return None
    (r,) = reduces
    if not r.dtype.is_float or not r.arg:
        return None
    strides, loads = _load_strides(r.src[0])
    if not strides or any(st is None for st in strides):
        return None
    return r, strides, loads


def _outer_reduction_axes(shape: tuple[int, ...], tileable: Tileable, target: Target) -> list[int]:
    """Where the innermost reduced axis of `r` is strided in memory (a matmul's weight gradient:
    sum over the batch of x[b, k] * g[b, n]) or too short to vectorize (a convolution's taps),
    the output axes every load reads contiguously, not at all, or packed (_packable_once), some
    contiguously or packed. Reducing element by element would gather across memory (or add up
    a few lanes); updating vectors of outputs along such an axis, per reduced element, reads
    and writes whole vectors instead."""
    r, strides, loads = tileable
    innermost = max(r.arg)
    short = r.src[0].shape[innermost] < H.DOT_TILE_MIN_REDUCTION   # (a conv's 3 taps: no vector)
    if not shape or not (short or any(st[innermost] not in (0, 1) for st in strides)):
        return []
    axes = []
    batch = _batch_axes(shape, r, strides)
    for axis, n in enumerate(shape):
        if axis in r.arg or n == 1:
            continue
        packed = [_packable_once(shape, axis, r, st, load, loads, batch, target) for st, load in zip(strides, loads)]
        if all(st[axis] in (0, 1) or p for st, p in zip(strides, packed)) and \
                any(st[axis] == 1 or p for st, p in zip(strides, packed)):
            axes.append(axis)
    return axes


def _packable_once(shape: tuple[int, ...], axis: int, r: Node, st: tuple[int, ...], load: Node,
                   loads: list[Node], batch: list[int], target: Target) -> bool:
    """Whether a load strided along output axis `axis` can be packed once per call (or once per
    batch) into a layout where `axis` is contiguous: it varies along no other output axis but
    batch axes (a convolution's weights, per output channel; attention's keys, per head), it is
    the only read of its input, and all it reads fits in a panel. (`batch`: the kernel's
    `_batch_axes`.)"""
    panel = shape[axis] * math.prod(r.src[0].shape[a] for a in r.arg) * load.dtype.itemsize
    return st[axis] not in (0, 1) and _read_once(load, loads) and panel <= H.pack_panel_bytes(target) and \
        all(st[d] == 0 or d in batch for d, n in enumerate(shape) if d != axis and d not in r.arg and n > 1)


def _batch_axes(shape: tuple[int, ...], r: Node, strides: list[tuple[int, ...]]) -> list[int]:
    """The output axes (longer than 1) along which every load of the reduction varies: a batch of
    independent products (heads in attention), which a tile reuses nothing along."""
    return [d for d, n in enumerate(shape) if n > 1 and d not in r.arg and all(st[d] != 0 for st in strides)]


def _dot_tile_schedule(expr: Node, r: Node, strides: list[tuple[int, ...]], work: int,
                       lanes: int, target: Target) -> Schedule | None:
    """Dot products in a register tile: where the reduction runs along an axis that every load
    reads contiguously (x @ w.T: both operands hold K innermost) and two loads are broadcast
    across different output axes (matmul-like reuse), an MR x NR tile of outputs accumulates
    vectors along K together: per step, MR + NR vector loads feed MR * NR FMAs. The tile loops
    unroll in full (registers), the reduction vectorizes; its lanes add up at the end. None
    where the pattern or the divisibility does not hold."""
    shape = expr.shape
    if len(shape) < 2 or shape[-1] < 2:
        return None
    k = max(r.arg)
    if r.src[0].shape[k] < H.DOT_TILE_MIN_REDUCTION or any(st[k] not in (0, 1) for st in strides):
        return None
    col = len(shape) - 1
    rows = _reusing_rows(col, strides, [(n, d) for d, n in enumerate(shape[:-1]) if n > 1 and d not in r.arg])
    if not rows:
        return None
    m, row = max(rows)
    most = H.tile_accumulators(target)
    fit = next(((mr, nr) for mr, nr in H.DOT_TILES if mr * nr <= most and m % mr == 0 and shape[col] % nr == 0), None)
    if fit is None:
        return None
    mr, nr = fit
    prims, tile_col = _tile_loops(shape, row, col, mr, nr, work)
    r_lanes = max(1, lanes * expr.dtype.itemsize // r.dtype.itemsize)
    return prims + (Unroll(tile_col, nr), Vectorize(reduce_axis(0, k), r_lanes))


def _reusing_rows(col: int, strides: list[tuple[int, ...]], rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The (extent, axis) pairs of `rows` along which a register tile with columns along `col`
    reuses what it loads: some load does not vary along the row (the columns' vectors, loaded
    once for all the tile's rows) and some other not along the column (the rows' broadcasts).
    A batch axis, along which every load varies, reuses nothing."""
    return [(n, d) for n, d in rows if any(st[col] == 0 and st[d] != 0 for st in strides) and
            any(st[d] == 0 and st[col] != 0 for st in strides)]


def _tile_loops(shape: tuple[int, ...], row: int, col: int, mr: int, nr: int | None,
                work: int, pack: int | None = None, batch: Sequence[int] = ()) -> tuple[Schedule, str]:
    """The loops of a register tile: `mr` of output axis `row` by `nr` of axis `col` (None: the
    whole axis), innermost and unrolled, kept in a local array (CacheWrite); the rows' outer
    loop outermost, in parallel where there is enough work. With `pack` (an input's slot), the
    columns' outer loop runs outermost instead, and that input's panel for a block of columns
    is packed once per block (CacheRead), then used by every block of rows. With `batch` axes
    (every input varies along them: attention's heads), those run outermost, fused with the
    rows' outer loop into the parallel one: one product's operands stay in cache while its
    tiles use them. (With the row blocks outermost, p @ v of 128 heads of 64x64 @ 64x32 read
    each head's v from L3 once per block of rows: 0.48 ms, against 0.285 heads outermost and
    torch's 0.28.) Returns the primitives and the name of the tile's column loop."""
    r = Split(output_axis(row), mr)
    if batch and pack is None and nr is not None:
        c = Split(output_axis(col), nr)
        outer = Fuse((*(output_axis(d) for d in batch), r.outer))
        others = [output_axis(d) for d in range(len(shape)) if d not in (row, col, *batch)]
        prims: list[Primitive] = [r, c, Reorder((*outer.axes, c.outer, *others, r.inner, c.inner)), outer]
        if work >= H.PARALLEL_MIN_WORK:
            prims.append(Parallel(outer.fused))
        return tuple(prims) + (CacheWrite(r.inner), Unroll(r.inner, mr)), c.inner
    others = [output_axis(d) for d in range(len(shape)) if d not in (row, col)]
    if nr is None:
        c = output_axis(col)
        prims = [r, Reorder((r.outer, *others, r.inner, c))]
        tile_col = c
    elif pack is None:
        c = Split(output_axis(col), nr)
        prims = [r, c, Reorder((r.outer, c.outer, *others, r.inner, c.inner))]
        if work >= H.PARALLEL_MIN_WORK and shape[row] // mr <= 1:
            # one block of rows (a Winograd output transform's 4 rows of 6 terms): the outer
            # loops fused into one parallel loop, the columns' blocks innermost of them so that a
            # chunk walks its rows in order (the kernel ran on one thread: 4.4 ms, 0.57 fused)
            extents = [-(-shape[col] // nr)] + [shape[d] for d in range(len(shape)) if d not in (row, col)]
            if math.prod(extents) > 1:
                outer = Fuse((r.outer, *others, c.outer))
                prims = [r, c, Reorder((*outer.axes, r.inner, c.inner)), outer, Parallel(outer.fused)]
                return tuple(prims) + (CacheWrite(r.inner), Unroll(r.inner, mr)), c.inner
        tile_col = c.inner
    else:
        c = Split(output_axis(col), nr)
        prims = [r, c, Reorder((c.outer, r.outer, *others, r.inner, c.inner))]
        tile_col = c.inner
        if work >= H.PARALLEL_MIN_WORK:
            prims.append(Parallel(c.outer))
        return tuple(prims) + (CacheRead(pack, c.outer), CacheWrite(r.inner), Unroll(r.inner, mr)), tile_col
    if work >= H.PARALLEL_MIN_WORK and shape[row] // mr > 1:
        prims.append(Parallel(r.outer))
    return tuple(prims) + (CacheWrite(r.inner), Unroll(r.inner, mr)), tile_col


def _packed_tile_loops(shape: tuple[int, ...], row: int, col: int, mr: int, nr: int, work: int,
                       slots: list[int], batch: list[int]) -> tuple[Schedule, str]:
    """The loops of a register tile whose column vectors come from inputs packed once per call
    (CacheRead before the loops: a convolution's weights, output channels innermost). The
    other output axes keep their order, then the rows' outer loop (neighbouring tiles read
    neighbouring memory); those loops fuse into one that runs in parallel. The columns' outer
    loop runs inside them, alone: the packed input reads along it, so the panel is the whole
    column axis by the reduction (fused into the parallel loop, it would be packed once per
    iteration of that). The reductions run longest innermost, as in any tile (the panel is
    packed in that order): a 1x3 convolution over 32 channels ran 3.4 ms with its 3 taps
    innermost, 2.75 with the channels.
    With `batch` axes (every input varies along them), those run outermost, fused and in
    parallel, and the inputs are packed once per batch instead. Returns the primitives and the
    name of the tile's column loop."""
    r, c = Split(output_axis(row), mr), Split(output_axis(col), nr)
    if batch:
        outer = Fuse(tuple(output_axis(d) for d in batch))
        rest = tuple(output_axis(d) for d in range(len(shape)) if d not in (row, col, *batch))
        order, pack_at = outer.axes + rest + (r.outer, c.outer, r.inner, c.inner), outer.fused
    else:
        outer = Fuse(tuple(output_axis(d) for d in range(len(shape)) if d not in (row, col)) + (r.outer,))
        order, pack_at = outer.axes + (c.outer, r.inner, c.inner), None
    prims: list[Primitive] = [r, c, Reorder(order)]
    if len(outer.axes) > 1:
        prims.append(outer)
    if work >= H.PARALLEL_MIN_WORK:
        prims.append(Parallel(outer.fused))
    prims += [CacheRead(slot, pack_at) for slot in dict.fromkeys(slots)]
    return tuple(prims) + (CacheWrite(r.inner), Unroll(r.inner, mr)), c.inner


def _read_once(load: Node, loads: list[Node]) -> bool:
    """Whether no other load of the kernel reads `load`'s input: CacheRead packs every read of an
    input (A @ A would pack the rows' read too, all of A)."""
    return sum(n.arg[0] == load.arg[0] for n in loads) == 1


def _panel_to_pack(shape: tuple[int, ...], tileable: Tileable, row: int, col: int, mr: int, nr: int,
                   target: Target, always: bool = False) -> int | None:
    """The input whose panel a register tile should read packed (BLAS style), or None. That is
    the load the tile reads as vectors along its columns and that steps through memory with a
    long stride per reduced element (B in A @ B: rows N floats apart, which map to few cache
    sets and evict each other; or many rows that span more of L2 than it holds at that stride;
    packed, a block of columns is one contiguous stream). Worth it where many blocks of rows
    reuse each packed panel, the panel fits in half of a core's L2, there are column blocks
    for every core, and no other output axis (a batch) would multiply the panel. `always`:
    wherever the panel fits and no batch multiplies it, those guesses of what pays aside (the
    tuner measures)."""
    r, strides, loads = tileable
    k = math.prod(r.src[0].shape[a] for a in r.arg)
    if any(n > 1 for d, n in enumerate(shape) if d not in (row, col)):
        return None
    if not always and (shape[row] // mr < H.PACK_MIN_REUSE or shape[col] // nr < 2 * target.cores):
        return None
    for st, load in zip(strides, loads):
        if not _read_once(load, loads) or st[col] != 1 or st[row] != 0 or \
                k * nr * load.dtype.itemsize > H.pack_panel_bytes(target):
            continue
        stride = max(abs(st[a]) for a in r.arg) * load.dtype.itemsize
        if always or stride >= H.PACK_MIN_STRIDE_BYTES or k * stride >= H.pack_span_bytes(target):
            return load.arg[0]
    return None


def _register_tile_schedule(shape: tuple[int, ...], vector_axes: list[int], work: int, lanes: int,
                            tileable: Tileable, target: Target, pack_panels: bool = False) -> Schedule | None:
    """A register-blocked micro-kernel, BLAS style: an MR x NR tile of outputs (NR along one of
    `vector_axes`, rows from the longest other output axis) stays in registers while the
    reduction runs: per reduced element, MR broadcasts and NR/lanes vector loads feed
    MR * NR/lanes FMAs. The tile loops unroll fully, so LLVM keeps the tile in registers; that
    needs them to divide the axes evenly. The vector axis whose tile does most FMAs per load
    wins, the last axis on a tie (its stores are contiguous; along another axis the tile is
    stored with a stride, once per tile). A strided input's panel may be packed (_panel_to_pack).
    None where no tile fits."""
    last = len(shape) - 1
    fits = []
    for width in (lanes, lanes // 2):   # (half vectors where full ones do not divide: 56 = 7 x 8)
        for col in vector_axes:
            rows = [(n, d) for d, n in enumerate(shape) if n > 1 and d != col]
            rows = _reusing_rows(col, tileable[1], rows) or rows
            if not rows or width < H.CACHE_WRITE_MIN_LANES:
                continue
            m, row = max(rows)
            fit = _best_tile(m, shape[col], width, H.tile_accumulators(target), target.vector_registers)
            if fit is not None:   # widest vectors, then most FMAs per load, then the last axis
                rank = (-width, -_fmas_per_load(fit[0], fit[1] // width), col != last)
                fits.append((rank, row, col, width, fit))
    r, strides, loads = tileable
    if fits:
        _, row, col, width, (mr, nr) = min(fits)
        once = [load.arg[0] for st, load in zip(strides, loads) if st[col] not in (0, 1)]
        if once:
            batch = [d for d in _batch_axes(shape, r, strides) if d not in (row, col)]
            prims, tile_col = _packed_tile_loops(shape, row, col, mr, nr, work, once, batch)
            return prims + (Vectorize(tile_col, width), Unroll(tile_col, nr // width)) + _longest_reduction_innermost(r)
        pack = _panel_to_pack(shape, tileable, row, col, mr, nr, target, always=pack_panels)
        batch = [d for d in _batch_axes(shape, r, strides) if d not in (row, col)]
        prims, tile_col = _tile_loops(shape, row, col, mr, nr, work, pack, batch)
        return prims + (Vectorize(tile_col, width), Unroll(tile_col, nr // width)) + _longest_reduction_innermost(r)
    # a short last axis (a 10-class layer) is a whole row of the tile
    rows = [(n, d) for d, n in enumerate(shape[:-1]) if n > 1]
    if last not in vector_axes or not rows or shape[-1] > 2 * lanes or shape[-1] < H.CACHE_WRITE_MIN_LANES:
        return None
    m, row = max(rows)
    mr = next((mr for mr in H.SHORT_ROW_TILES if m % mr == 0), None)
    if mr is None:
        return None
    width = min(lanes, 1 << (shape[-1].bit_length() - 1))
    prims, tile_col = _tile_loops(shape, row, last, mr, None, work)
    return prims + (Vectorize(tile_col, width), Unroll(tile_col, -(-shape[-1] // width))) + \
        _longest_reduction_innermost(r)


def _longest_reduction_innermost(r: Node) -> Schedule:
    """Reduction loops shortest first: the longest one runs innermost, around the register tile.
    (LLVM unrolls short loops in full: a convolution's 3x3 taps innermost would become a
    horizontal sum per output instead of vectors of outputs.)"""
    if len(r.arg) < 2:
        return ()
    order = sorted(r.arg, key=lambda a: r.src[0].shape[a])
    return (Reorder(tuple(reduce_axis(0, a) for a in order)),)


def _fmas_per_load(rows: int, vectors: int) -> float:
    """Per reduced element a tile broadcasts `rows` values and loads `vectors` vectors."""
    return rows * vectors / (rows + vectors)


def _best_tile(m: int, n: int, lanes: int, most: int, registers: int) -> tuple[int, int] | None:
    """(rows, columns) of the register tile for an m x n output, `vectors` of `lanes` wide. The
    tile holds at most `most` vector accumulators (H.tile_accumulators), and its accumulators,
    a step's vectors and a broadcast fit in the target's `registers` (3 rows of 4 vectors on
    AVX2 needed 17 of 16, spilled, and ran matmul 768 at 84 GFLOP/s against 136 in 6 x 2). Its
    loops unroll fully (LLVM interleaves a power of two of vectors). It divides m and n, or
    leaves a last, shorter tile along an axis long enough that it is rare (at least
    H.TILE_TAIL_MIN_TILES tiles), which runs apart, its loops' lengths known to the rest
    (tails.py). Most FMAs per load first (each step broadcasts `rows` values and loads
    `vectors`: rows*vectors FMAs per rows+vectors loads), then most accumulators, then a tile
    that divides."""
    def fits_along(extent, size: int) -> bool:
        return extent % size == 0 or (isinstance(extent, int) and extent >= H.TILE_TAIL_MIN_TILES * size)
    fits = [(_fmas_per_load(mr, v), mr * v, m % mr == 0 and n % (v * lanes) == 0, mr, v)
            for mr in range(1, most + 1) for v in (1, 2, 4, 8)
            if mr * v <= most and mr * v + v + 1 <= registers and fits_along(m, mr) and fits_along(n, v * lanes)]
    if not fits:
        return None
    *_, mr, v = max(fits)
    return (mr, v * lanes) if mr * v >= H.TILE_MIN_ACCUMULATORS else None


def _cache_write_schedule(shape: tuple[int, ...], work: int, lanes: int, col: int, cores: int) -> Schedule:
    """Tile output axis `col` (split where long) and run it innermost, vectorized; run the
    longest of the other output axes (or the split's outer part) outermost, in parallel. Where
    `col` is the only long axis (a matrix-vector product), it is split into one chunk a core:
    each row is then read in runs as long as they can be (A.T @ v at 2000x500 on 2 cores: 256
    columns a chunk run in 56 us, 64 in 94 us; the price: a late thread holds such a kernel
    back longer than smaller chunks would)."""
    tile = output_axis(col)
    loops = [output_axis(d) for d in range(len(shape))]
    prims: list[Primitive] = []
    outer = [(n, output_axis(d)) for d, n in enumerate(shape) if n > 1 and d != col]
    size = H.CACHE_WRITE_TILE   # keep the local array small (in L1)
    if not outer and work >= H.PARALLEL_MIN_WORK:
        share = -(-shape[col] // cores)
        size = min(size, max(lanes * H.REDUCE_ACCUMULATORS, -(-share // lanes) * lanes))
    if shape[col] > size:
        split = Split(tile, size)
        prims.append(split)
        outer.append((-(-shape[col] // size), split.outer))
        tile = split.inner
        loops[col:col + 1] = [split.outer, split.inner]
    parallel = outer and work >= H.PARALLEL_MIN_WORK
    first = [max(outer)[1]] if parallel else []
    # the parallel loop outermost, the tile innermost (axes after it, of size 1 here, go outside)
    prims.append(Reorder(tuple(first + [name for name in loops if name != tile and name not in first] + [tile])))
    if parallel:
        prims.append(Parallel(first[0]))
    return tuple(prims) + (CacheWrite(tile), Vectorize(tile, lanes), Unroll(tile, H.REDUCE_ACCUMULATORS))
