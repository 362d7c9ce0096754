"""The GPU layer, without a GPU: heuristic GPU schedules and their lowering (the launch grid, thread
reductions and who stores), the errors for schedules that cannot be lowered, and the C-style
renderer's OpenCL and CUDA source for every dtype, compiled with PoCL (one program) and nvcc (one
call). Values are checked on OpenCL where it is here: through lt on "opencl:0", and by launching
kernels scheduled for a small target (64 threads a block) or by hand from that one program."""
from __future__ import annotations

import functools
import math
import re
import warnings
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array
from cuda_check import H100
from lazytensor.backends import cstyle
from lazytensor.backends.cuda.compiler import nvcc_compile, nvcc_path
from lazytensor.devices import runtime
from lazytensor import pipeline
from lazytensor.ir import loop
from lazytensor.ir.graph import Node
from lazytensor.ir.ops import OPAQUE, Op
from lazytensor.ir.target import Target
from lazytensor.scheduler.fusion import KernelSpec
from lazytensor.scheduler.heuristics import cpu_like
from lazytensor.scheduler.lower import lower
from lazytensor.scheduler.schedule import (Bind, CacheRead, Fuse, Reorder, Split, gpu_schedule, reductions)

HAS_OPENCL = "opencl:0" in lt.devices()
needs_opencl = pytest.mark.skipif(not HAS_OPENCL, reason="no OpenCL device (needs pyopencl and a driver such as PoCL)")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc (the CUDA compiler) is not installed")

# What the scheduler may be told about a GPU: an H100, a small device, a limit that is not a power
# of two, and a device that states no limit.
TARGETS = {
    "h100": H100,
    "small": Target("opencl", simd_bytes=0, cores=4, launches_blocks=True, max_threads_per_block=64, local_memory_bytes=16 * 1024),
    "limit96": Target("cuda", simd_bytes=0, cores=8, launches_blocks=True, max_threads_per_block=96, local_memory_bytes=48 * 1024),
    "nolimit": Target("cuda", simd_bytes=0, cores=16, launches_blocks=True),
}
DEFAULT_THREADS = 256  # what a target without max_threads_per_block gets (heuristics.GPU_THREADS)
f16, f32, f64 = np.float16, np.float32, np.float64


def in_f64(fn: Callable, dtype=f32) -> Callable:
    """numpy's reference computed in float64 and rounded once (lt accumulates float sums in float64)."""
    return lambda *arrays: np.asarray(fn(*[a.astype(f64) for a in arrays])).astype(dtype)


def softmax(x, xp_exp):
    e = xp_exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Case:
    shapes: tuple
    dtype: lt.DType
    build: Callable        # lt tensors -> the lt result
    reference: Callable    # numpy arrays -> numpy's result
    tree: bool = False     # few outputs, long reductions: a block per output, its threads share the work


CASES = {
    "elementwise-7x300": Case(((7, 300), (7, 300)), lt.float32, lambda a, b: (a * 2 - b).exp(),
                              lambda a, b: np.exp(a * 2 - b)),
    "transposed-broadcast": Case(((300, 7), (7,)), lt.float32, lambda a, b: a.T * b[:, None] + 1,
                                 lambda a, b: a.T * b[:, None] + 1),
    "elementwise-1": Case(((1,),), lt.float32, lambda a: a * 3 - 1, lambda a: a * 3 - 1),
    "elementwise-0x5": Case(((0, 5), (0, 5)), lt.float32, lambda a, b: a + b, lambda a, b: a + b),
    "elementwise-0d": Case(((),), lt.float32, lambda a: a * 3 - 1, lambda a: a * 3 - 1),
    "int-elementwise": Case(((33, 65), (33, 65)), lt.int32, lambda a, b: (a * b) // 3 + a % 5 - (b << 2),
                            lambda a, b: (a * b) // 3 + a % 5 - (b << 2)),
    "row-sum": Case(((7, 300),), lt.float32, lambda a: a.sum(axis=1), in_f64(lambda a: a.sum(axis=1)), tree=True),
    "row-max-long": Case(((3, 5000),), lt.float32, lambda a: a.max(axis=1), lambda a: a.max(axis=1), tree=True),
    "short-rows": Case(((300, 7),), lt.float32, lambda a: a.sum(axis=1), in_f64(lambda a: a.sum(axis=1))),
    "column-sum-many": Case(((7, 300),), lt.float32, lambda a: a.sum(axis=0), in_f64(lambda a: a.sum(axis=0))),
    "column-sum-few": Case(((300, 7),), lt.float32, lambda a: a.sum(axis=0), in_f64(lambda a: a.sum(axis=0)),
                           tree=True),
    "full-sum": Case(((7, 300),), lt.float32, lambda a: a.sum(), in_f64(lambda a: a.sum()), tree=True),
    "full-max-1d": Case(((1000,),), lt.float32, lambda a: a.max(), lambda a: a.max(), tree=True),
    "mean-rows": Case(((5, 129),), lt.float32, lambda a: a.mean(axis=1), in_f64(lambda a: a.mean(axis=1)),
                      tree=True),
    "empty-reduction": Case(((5, 0),), lt.float32, lambda a: a.sum(axis=1), lambda a: a.sum(axis=1), tree=True),
    "two-reductions": Case(((7, 300),), lt.float32,
                           lambda a: a.exp().sum(axis=1, keepdims=True).log() + a.max(axis=1, keepdims=True),
                           in_f64(lambda a: np.log(np.exp(a).sum(axis=1, keepdims=True))
                                  + a.max(axis=1, keepdims=True)),
                           tree=True),
    "softmax": Case(((6, 77),), lt.float32, lambda a: softmax(a, lt.exp), in_f64(lambda a: softmax(a, np.exp))),
    "matmul": Case(((5, 300), (300, 9)), lt.float32, lt.matmul, in_f64(np.matmul), tree=True),
    "matmul-batched-vector": Case(((4, 5, 33), (33,)), lt.float32, lt.matmul, in_f64(np.matmul)),
    "int-row-sum": Case(((7, 300),), lt.int32, lambda a: a.sum(axis=1), lambda a: a.sum(axis=1), tree=True),
    "bool-any": Case(((7, 300),), lt.float32, lambda a: (a > 1.5).any(axis=1), lambda a: (a > 1.5).any(axis=1),
                     tree=True),
    "float16-sum": Case(((7, 300),), lt.float16, lambda a: a.sum(axis=1), in_f64(lambda a: a.sum(axis=1), f16),
                        tree=True),
    "argmax": Case(((7, 300),), lt.float32, lambda a: a.argmax(axis=1), lambda a: a.argmax(axis=1)),
}


def inputs(name: str) -> list[np.ndarray]:
    """The case's inputs: random, with a seed fixed per case (so a failure reproduces)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return [random_array(rng, shape, CASES[name].dtype) for shape in CASES[name].shapes]


def identifier(*parts: str) -> str:
    return "_".join(re.sub(r"\W", "_", p) for p in parts)


# ---- building kernels the way realize does ----------------------------------------------------------

@dataclass(frozen=True)
class Lowered:
    spec: KernelSpec
    expr: Node                 # the collapsed kernel expression
    schedule: tuple
    kernel: loop.Kernel


def lower_tensor(result: lt.Tensor, target: Target, prefix: str) -> tuple[list[Lowered], Node]:
    """The kernels that realize `result` (an unrealized cpu tensor) for `target`, and the node the
    last of them computes."""
    found = pipeline.kernels([result.node], target)
    kernels = []
    for i, spec in enumerate(found.kernels):
        assert spec.root.op not in OPAQUE, "these expressions have no opaque steps (those run on the host)"
        expr, schedule, kernel = pipeline.loops(spec, target, name=identifier(prefix, str(i)))
        # (a gpu target gets the gpu heuristics; a cpu behind OpenCL, as PoCL is, the cpu's: see below)
        assert (work_item_or_gpu(expr, target) if cpu_like(target) else gpu_schedule(expr, target)) == schedule
        kernels.append(Lowered(spec, expr, schedule, kernel))
    return kernels, found.roots[0]


@functools.lru_cache(maxsize=None)
def work_item_or_gpu(expr: Node, target: Target) -> tuple:
    """The schedule a cpu behind OpenCL gets: the cpu's as blocks of one work-item, or the gpu's
    where the cpu's holds a register tile."""
    from lazytensor.scheduler.schedule import CacheWrite, work_item_schedule
    found = work_item_schedule(expr, target)
    return gpu_schedule(expr, target) if any(isinstance(p, CacheWrite) for p in found) else found


def case_kernels(name: str, target: str) -> tuple[tuple[Lowered, ...], Node]:
    result = CASES[name].build(*[lt.asarray(a) for a in inputs(name)])
    kernels, root = lower_tensor(result, TARGETS[target], f"c_{name}_{target}")
    return tuple(kernels), root


def with_ancestors(stmts, ancestors=()):
    """(statement, the statements it is nested in, outermost first), depth first."""
    for s in stmts:
        yield s, ancestors
        if isinstance(s, (loop.For, loop.If)):
            yield from with_ancestors(s.body, ancestors + (s,))


def is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def kinds(kernel: loop.Kernel, kind: loop.LoopKind) -> list[loop.For]:
    return [s for s in loop.walk(kernel.body) if isinstance(s, loop.For) and s.kind is kind]


def trees(kernel: loop.Kernel) -> list[loop.ThreadReduce]:
    return [s for s in loop.walk(kernel.body) if isinstance(s, loop.ThreadReduce)]


# ---- the heuristic schedules, lowered -----------------------------------------------------------------

def expected_threads(target: Target) -> int:
    """The largest power of two within the target's limit, at most 256."""
    threads, limit = DEFAULT_THREADS, target.max_threads_per_block or DEFAULT_THREADS
    while threads > limit:
        threads //= 2
    return threads


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_launch_grid(name, target):
    kernels, root = case_kernels(name, target)
    if root.size == 0:
        assert kernels == ()   # an empty result needs memory, no kernel
        return
    assert kernels, "no kernel for a non-empty result"
    limit = TARGETS[target].max_threads_per_block or DEFAULT_THREADS
    for lw in kernels:
        k = lw.kernel
        assert is_pow2(k.threads) and k.threads <= limit, (k.threads, limit)
        assert k.threads == (expected_threads(TARGETS[target]) if lw.expr.shape else 1)
        assert len(kinds(k, loop.LoopKind.BLOCK)) == (1 if lw.expr.shape else 0)
        outputs = math.prod(lw.expr.shape)
        if trees(k):   # one block per output; its threads share the reduction
            assert k.blocks == outputs, (k.blocks, outputs)
        else:          # one output per thread: the grid covers every output, and no block is idle
            assert k.blocks * k.threads >= outputs, (k.blocks, k.threads, outputs)
            assert (k.blocks - 1) * k.threads < outputs, (k.blocks, k.threads, outputs)
    if CASES[name].tree:
        assert any(trees(lw.kernel) for lw in kernels), [lw.schedule for lw in kernels]
    if not any(reductions(lw.expr) for lw in kernels):
        assert not any(trees(lw.kernel) for lw in kernels)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_thread_reductions_and_the_store(name, target):
    """A reduction bound to threads ends in a ThreadReduce that every thread of the block reaches
    (it holds barriers: not inside a guard), then one thread (index 0) stores the result."""
    for lw in case_kernels(name, target)[0]:
        k = lw.kernel
        thread_reduction_loops = {f.var for f in kinds(k, loop.LoopKind.THREAD) if f.var.name.startswith("r")}
        tree_indices = {t.index for t in trees(k)}
        assert tree_indices == thread_reduction_loops
        if thread_reduction_loops:   # every reduction of the kernel is shared by the threads
            assert len(trees(k)) == len(reductions(lw.expr))
        stores = [(s, up) for s, up in with_ancestors(k.body) if isinstance(s, loop.Store)]
        assert len(stores) == 1
        store, store_ancestors = stores[0]
        order = list(loop.walk(k.body))
        for tree, up in ((s, up) for s, up in with_ancestors(k.body) if isinstance(s, loop.ThreadReduce)):
            assert not any(isinstance(a, loop.If) or a.kind is loop.LoopKind.THREAD for a in up), up
            assert tree.threads == k.threads
            assert order.index(tree) < order.index(store)
        guards = [a for a in store_ancestors if isinstance(a, loop.If)]
        if tree_indices:
            assert len(guards) == 1
            cond = guards[0].cond
            assert isinstance(cond, loop.Alu) and cond.op is Op.CMPEQ
            assert cond.srcs[0] in tree_indices and cond.srcs[1] == loop.const(0)
            assert not any(isinstance(a, loop.For) and a.kind is loop.LoopKind.THREAD for a in store_ancestors)
        else:
            assert guards == []


def test_two_reductions_share_one_kernel_with_two_trees():
    for target in TARGETS:
        kernels, _ = case_kernels("two-reductions", target)
        assert len(kernels) == 1
        assert [t.op for t in trees(kernels[0].kernel)] == [Op.ADD, Op.MAX]


# The cases realized through lt on opencl:0 (each kernel costs PoCL ~0.5 s the first time); every
# case runs on OpenCL below, scheduled for the small target, from the one program.
LT_VALUE_CASES = ["elementwise-0d", "elementwise-0x5", "transposed-broadcast", "int-elementwise", "row-max-long",
                  "column-sum-few", "full-sum", "two-reductions", "softmax", "matmul", "bool-any"]


@needs_opencl
@pytest.mark.parametrize("name", LT_VALUE_CASES)
def test_values_on_opencl(name):
    arrays = inputs(name)
    got = CASES[name].build(*[lt.asarray(a, device="opencl") for a in arrays])
    assert got.device == "opencl:0"
    assert_close(got.numpy(), CASES[name].reference(*arrays))


# ---- schedules that cannot be lowered ---------------------------------------------------------------

def single_kernel(result: lt.Tensor) -> Node:
    (spec,) = pipeline.kernels([result.node], TARGETS["h100"]).kernels
    return spec.expr


def transposed() -> Node:   # (10, 6): axes i0, i1 (a transpose does not collapse)
    return single_kernel(lt.asarray(np.ones((6, 10), np.float32)).T * 2)


def three_d() -> Node:      # (4, 2, 3): i0, i1, i2
    return single_kernel(lt.asarray(np.ones((2, 3, 4), np.float32)).permute(2, 0, 1) + 1)


def row_sum() -> Node:      # (6, 1) with reduction axis r0_1 of 10
    return single_kernel(lt.asarray(np.ones((6, 10), np.float32)).sum(axis=1, keepdims=True))


BAD_SCHEDULES = {
    "fuse-out-of-order": (transposed, [Fuse(("i1", "i0"))], "Fuse"),
    "fuse-not-neighbours": (three_d, [Fuse(("i0", "i2"))], "Fuse"),
    "fuse-uneven-split": (transposed, [Split("i0", 4), Fuse(("i0_o", "i0_i"))], "Fuse"),
    "fuse-split-inner-with-next": (transposed, [Split("i0", 3), Fuse(("i0_i", "i1"))], "Fuse"),
    "fuse-output-with-reduction": (row_sum, [Fuse(("i1", "r0_1"))], "Fuse"),
    "block-inner-loop": (transposed, [Bind("i1", "block")], "outermost"),
    "block-split-inner": (transposed, [Split("i0", 2), Bind("i0_i", "block")], "outermost"),
    "block-reduction-loop": (row_sum, [Bind("r0_1", "block")], "outermost"),
    "threads-on-outputs-and-reduction": (row_sum, [Bind("i0", "thread"), Split("r0_1", 4), Bind("r0_1_i", "thread")],
                                         "either to output loops or to reductions"),
    "unknown-axis": (transposed, [Bind("i7", "block")], "'i7'"),
}


@pytest.mark.parametrize("name", BAD_SCHEDULES)
def test_bad_schedules_raise_value_error(name):
    make_expr, schedule, words = BAD_SCHEDULES[name]
    with pytest.raises(ValueError) as info:
        lower(make_expr(), tuple(schedule), "k", 1)
    assert words in str(info.value)


def test_bind_to_an_unknown_kind_is_a_value_error():
    with pytest.raises(ValueError, match="block"):
        lower(transposed(), (Bind("i0", "warp"),), "k", 1)


def test_good_neighbours_can_be_fused():
    expr = transposed()
    kernel = lower(expr, (Split("i0", 5), Fuse(("i0_o", "i0_i")), Fuse(("i0_oxi0_i", "i1"))), "k", 1)
    (outer,) = kernel.body
    assert isinstance(outer, loop.For) and outer.var.name == "i0_oxi0_ixi1" and outer.stop == loop.const(60)


# ---- hand-written schedules: any valid one gives the same values -------------------------------------

CUSTOM = {
    "row-sum-32-threads": ("row-sum", (Fuse(("i0", "i1")), Bind("i0xi1", "block"), Split("r0_1", 32),
                                       Bind("r0_1_i", "thread"))),
    "row-sum-more-threads-than-values": ("row-sum", (Fuse(("i0", "i1")), Bind("i0xi1", "block"), Split("r0_1", 512),
                                                     Bind("r0_1_i", "thread"))),
    "row-sum-uneven-thread-split": ("row-sum", (Fuse(("i0", "i1")), Split("i0xi1", 4), Bind("i0xi1_o", "block"),
                                                Bind("i0xi1_i", "thread"))),
    "row-sum-one-thread": ("row-sum", ()),
    "column-sum-strided-tree": ("column-sum-few", (Fuse(("i0", "i1")), Bind("i0xi1", "block"), Split("r0_0", 16),
                                                   Bind("r0_0_i", "thread"))),
    "transposed-block-per-row": ("transposed-broadcast", (Split("i1", 64), Bind("i0", "block"),
                                                          Bind("i1_i", "thread"))),
    "transposed-fused-128": ("transposed-broadcast", (Fuse(("i0", "i1")), Split("i0xi1", 128),
                                                      Bind("i0xi1_o", "block"), Bind("i0xi1_i", "thread"))),
    "transposed-2d-grid": ("transposed-broadcast", (Bind("i0", "block"), Bind("i1", "block"))),
    "transposed-2d-threads": ("transposed-broadcast", (Split("i0", 2), Split("i1", 4), Bind("i0_i", "thread"),
                                                       Bind("i1_i", "thread"))),
    "matmul-tiled-through-local-memory": ("matmul", (Split("i0", 8), Split("i2", 8),
                                                     Reorder(("i0_o", "i2_o", "i1", "i0_i", "i2_i")),
                                                     Bind("i0_o", "block"), Bind("i2_o", "block"),
                                                     Bind("i0_i", "thread"), Bind("i2_i", "thread"),
                                                     Split("r0_1", 8), CacheRead(0, "r0_1_o"),
                                                     CacheRead(1, "r0_1_o"))),
    "matmul-tree-of-8": ("matmul", (Fuse(("i0", "i1", "i2")), Bind("i0xi1xi2", "block"), Split("r0_1", 8),
                                    Bind("r0_1_i", "thread"))),
}
# A tree over a number of threads that is not a power of two: lower accepts it, and the
# renderer's halving tree (s = threads/2, /4, ...) then drops partial sums.
NOT_POW2 = ("row-sum", (Fuse(("i0", "i1")), Bind("i0xi1", "block"), Split("r0_1", 6), Bind("r0_1_i", "thread")))


@functools.lru_cache(maxsize=None)
def custom_kernel(name: str) -> tuple[Lowered, Node]:
    case, schedule = NOT_POW2 if name == "not-pow2" else CUSTOM[name]
    result = CASES[case].build(*[lt.asarray(a) for a in inputs(case)])
    found = pipeline.kernels([result.node], TARGETS["h100"])
    (spec,) = found.kernels
    expr, _, kernel = pipeline.loops(spec, TARGETS["h100"], schedule, name=identifier("h", name))
    return Lowered(spec, expr, schedule, kernel), found.roots[0]


def not_pow2_kernel():
    """The kernel of NOT_POW2, or None where lower refuses it (a fix may do that)."""
    try:
        return custom_kernel("not-pow2")
    except ValueError:
        return None


@pytest.mark.parametrize("name", CUSTOM)
def test_custom_schedules_lower(name):
    lw, _ = custom_kernel(name)
    assert is_pow2(lw.kernel.threads)
    assert bool(trees(lw.kernel)) == any(isinstance(p, Bind) and p.axis.startswith("r") for p in lw.schedule)


# ---- rendering: every dtype, both dialects, compiled ------------------------------------------------

def dtype_matrix(rng) -> dict[str, lt.Tensor]:
    """Unrealized cpu tensors (only their graphs are used) that between them render every dtype:
    per dtype, the arithmetic ops stacked into one kernel, the casts from float16/uint64/bool, and
    a sum and a max (two trees in one kernel); per float16/uint64/bool, the casts to it from every
    dtype (one kernel each) and a full reduction to a scalar. Few kernels, many ops: PoCL's cost
    is per kernel (~0.1 s, ~0.3 s with a tree)."""
    tensors = {dtype: lt.asarray(random_array(rng, (5, 33), dtype)) for dtype in DTYPES}
    special = (lt.float16, lt.uint64, lt.bool_)
    exprs = {}
    for dtype, a in tensors.items():
        b = lt.asarray(random_array(rng, (5, 33), dtype))
        ops = [a + b, a * b, a // b, a % b, a ** b, lt.maximum(a, b), lt.minimum(a, b),
               a ^ b if dtype.is_bool else a - b]
        if dtype.is_integer:
            ops += [a << b, a >> b, a & b, a | b]
        exprs[f"binary_{dtype.name}"] = lt.stack(ops)
        exprs[f"from_{dtype.name}"] = lt.stack([tensors[other].astype(dtype) for other in special])
        exprs[f"sum_max_{dtype.name}"] = a.sum(axis=1, keepdims=True) + a.max(axis=1, keepdims=True)
    for other in special:
        exprs[f"to_{other.name}"] = lt.stack([a.astype(other) for a in tensors.values()])
        exprs[f"sum_all_{other.name}"] = tensors[other].sum()
    return exprs


@functools.lru_cache(maxsize=None)
def matrix_kernels(target_name: str, with_float64: bool = True) -> tuple[Lowered, ...]:
    target = runtime("opencl:0").device.target if target_name == "opencl" else TARGETS[target_name]
    rng = np.random.default_rng(7)
    kernels = []
    for name, tensor in dtype_matrix(rng).items():
        if not with_float64 and ("float64" in name or name.startswith("to_")):
            continue
        kernels += lower_tensor(tensor, target, f"m_{name}_{target_name}")[0]
    return tuple(kernels)


def test_dtype_matrix_covers_every_dtype_op_and_cast():
    kernels = matrix_kernels("h100")
    names = [lw.kernel.name for lw in kernels]
    assert len(names) == len(set(names)) == len(dtype_matrix(np.random.default_rng(7)))   # one kernel each
    alus = [a for lw in kernels for a in walk_exprs(lw.kernel)]
    ops = {(a.op, a.dtype) for a in alus}
    casts = {(a.srcs[0].dtype, a.dtype) for a in alus if a.op is Op.CAST}
    for dtype in DTYPES:
        for op in (Op.MAX, Op.MIN):
            assert (op, dtype) in ops, (op, dtype)
        if not dtype.is_bool:
            for op in (Op.ADD, Op.MUL, Op.FLOORDIV, Op.MOD, Op.POW, Op.SUB):
                assert (op, dtype) in ops, (op, dtype)
        if dtype.is_integer:
            for op in (Op.SHL, Op.SHR, Op.AND, Op.OR):
                assert (op, dtype) in ops, (op, dtype)
        for other in (lt.float16, lt.uint64, lt.bool_):
            if other is not dtype:
                assert (dtype, other) in casts and (other, dtype) in casts, (dtype, other)
    assert sum(len(trees(lw.kernel)) for lw in kernels) >= 2 * len(DTYPES)


def walk_exprs(kernel: loop.Kernel):
    """Every Alu in the kernel's statements."""
    def visit(e):
        if isinstance(e, loop.Alu):
            yield e
            for s in e.srcs:
                yield from visit(s)
        elif isinstance(e, loop.Load):
            yield from visit(e.index)
    for s in loop.walk(kernel.body):
        for field in ("value", "index", "init", "cond", "stop"):
            if hasattr(s, field):
                yield from visit(getattr(s, field))


def all_cuda_sources() -> list[str]:
    sources = []
    for target in TARGETS:
        for name in CASES:
            sources += [cstyle.render(lw.kernel, cstyle.CUDA) for lw in case_kernels(name, target)[0]]
    sources += [cstyle.render(custom_kernel(name)[0].kernel, cstyle.CUDA) for name in CUSTOM]
    sources += [cstyle.render(lw.kernel, cstyle.CUDA) for lw in matrix_kernels("h100")]
    return sources


@pytest.mark.parametrize("name", ["row-sum", "two-reductions", "full-sum", "elementwise-7x300", "bool-any"])
@pytest.mark.parametrize("dialect", ["opencl", "cuda"])
def test_rendered_source_shape(name, dialect):
    d = cstyle.OPENCL if dialect == "opencl" else cstyle.CUDA
    shared = "__local" if dialect == "opencl" else "__shared__"
    for lw in case_kernels(name, "small")[0]:
        source = cstyle.render(lw.kernel, d)
        (header,) = [line for line in source.splitlines() if line.startswith(f"{d.kernel} {lw.kernel.name}(")]
        assert re.findall(r"\bbuf\d+\b", header) == [f"buf{i}" for i in range(len(lw.kernel.params))]
        assert re.search(r"\bconst\b[^,]*\bbuf0\b", header) is None   # the output is written
        assert header.count("const ") == len(lw.kernel.params) - 1     # the inputs are read only
        tree_count = len(trees(lw.kernel))
        assert len(re.findall(rf"{shared} [\w ]+ lt_red\d+\[{lw.kernel.threads}\];", source)) == tree_count
        # a barrier after the threads write their parts, after each level of the tree, after the read
        assert source.count(d.barrier) == 3 * tree_count


@needs_nvcc
def test_cuda_sources_compile_with_one_nvcc_call():
    sources = all_cuda_sources()
    assert len(sources) > 100
    try:
        ptx = nvcc_compile("\n".join(sources), "sm_90", "ptx")
    except RuntimeError as error:
        pytest.fail(f"nvcc rejected the CUDA renderer's output:\n{str(error)[:4000]}")
    text = ptx.decode(errors="replace")
    for name in ("c_row_sum_h100_0", "h_row_sum_32_threads", "m_binary_float16_h100_0", "m_sum_max_bool_h100_0"):
        assert f".entry {name}(" in text, name


# ---- OpenCL: one program for everything ---------------------------------------------------------------

def opencl_kernels() -> list[Lowered]:
    kernels = [lw for name in CASES for lw in case_kernels(name, "small")[0]]
    kernels += [custom_kernel(name)[0] for name in CUSTOM]
    if not_pow2_kernel() is not None:
        kernels.append(not_pow2_kernel()[0])
    kernels += list(matrix_kernels("opencl", with_float64=runtime("opencl:0").device.fp64))
    return kernels


@pytest.fixture(scope="module")
def opencl_program():
    """All the OpenCL kernels of this file, built as one program (PoCL: ~0.1 s a kernel, once)."""
    if not HAS_OPENCL:
        pytest.skip("no OpenCL device (needs pyopencl and a driver such as PoCL)")
    import pyopencl as cl
    kernels = opencl_kernels()
    source = "\n".join(cstyle.render(lw.kernel, cstyle.OPENCL) for lw in kernels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)   # e.g. "comparison of unsigned < 0 is always false"
        try:
            program = cl.Program(runtime("opencl:0").device.context, source).build()
        except cl.Error as error:
            pytest.fail(f"the OpenCL renderer's output does not build:\n{str(error)[:4000]}")
    return program, kernels


@needs_opencl
def test_opencl_program_builds_every_kernel(opencl_program):
    import pyopencl as cl
    program, kernels = opencl_program
    assert len(kernels) > 50
    names = set(program.get_info(cl.program_info.KERNEL_NAMES).split(";"))
    assert {lw.kernel.name for lw in kernels} <= names
    binaries = program.get_info(cl.program_info.BINARIES)   # PoCL generates code only now
    assert len(binaries) == 1 and len(binaries[0]) > 0


def launch(program, kernels: list[Lowered], root: Node) -> np.ndarray:
    """Run `kernels` (in order; later ones read earlier results) from `program` on opencl:0 with
    the cpu inputs they were built from; the values of `root`."""
    gpu, cpu = runtime("opencl:0").device, runtime("cpu").device
    buffers = {}
    for lw in kernels:
        out = gpu.allocate(lw.spec.root.shape, lw.spec.root.dtype)
        args = [buffers[n] if n in buffers else gpu.from_numpy(np.ascontiguousarray(cpu.to_numpy(n.arg)))
                for n in lw.spec.inputs]
        gpu.launch(getattr(program, lw.kernel.name), [out] + args, lw.kernel)
        buffers[lw.spec.root] = out
    return gpu.to_numpy(buffers[root])


@needs_opencl
@pytest.mark.parametrize("name", CASES)
def test_values_of_the_small_target_schedules(name, opencl_program):
    program, _ = opencl_program
    kernels, root = case_kernels(name, "small")
    want = CASES[name].reference(*inputs(name))
    if not kernels:
        assert want.size == 0
        return
    assert_close(launch(program, list(kernels), root).reshape(want.shape), want)


@needs_opencl
@pytest.mark.parametrize("name", CUSTOM)
def test_values_of_custom_schedules(name, opencl_program):
    program, _ = opencl_program
    lw, root = custom_kernel(name)
    case = CUSTOM[name][0]
    want = CASES[case].reference(*inputs(case))
    assert_close(launch(program, [lw], root).reshape(want.shape), want)


@needs_opencl
def test_thread_reduction_over_a_number_of_threads_that_is_not_a_power_of_two(opencl_program):
    program, _ = opencl_program
    lowered = not_pow2_kernel()
    if lowered is None:
        return   # refused with a ValueError: fine
    lw, root = lowered
    want = CASES["row-sum"].reference(*inputs("row-sum"))
    assert_close(launch(program, [lw], root).reshape(want.shape), want)



# ---- a cpu behind OpenCL ----------------------------------------------------------------------------

CPU_LIKE = Target("opencl", simd_bytes=32, cores=2, launches_blocks=True, max_threads_per_block=4096,
                  local_memory_bytes=512 * 1024, local_memory_emulated=True)


@pytest.mark.parametrize("name", ["elementwise-7x300", "row-sum", "short-rows", "column-sum-many", "softmax",
                                  "two-reductions", "argmax", "matmul"])
def test_a_cpu_behind_opencl_gets_the_cpus_schedules(name):
    """A block-launched target whose local memory is emulated and whose work-items have SIMD
    lanes (PoCL) gets the cpu's schedule, its parallel loop's iterations as blocks of one
    work-item, no block-wide tree; where the cpu's holds a register tile (CacheWrite: a matmul,
    short rows), which lowers for cpu kernels only, the gpu's. The same target with real local
    memory (a gpu) gets the gpu's."""
    from dataclasses import replace
    from lazytensor.scheduler.schedule import CacheWrite, heuristic_schedule, work_item_schedule
    result = CASES[name].build(*[lt.asarray(a) for a in inputs(name)])
    gpu = replace(CPU_LIKE, local_memory_emulated=False)
    for spec in pipeline.kernels([result.node], CPU_LIKE).kernels:
        expr = pipeline.loops(spec, CPU_LIKE, name="k")[0]
        chosen, cpu = heuristic_schedule(expr, CPU_LIKE), work_item_schedule(expr, CPU_LIKE)
        assert chosen == work_item_or_gpu(expr, CPU_LIKE)
        if not any(isinstance(p, CacheWrite) for p in cpu):
            assert not any(isinstance(p, Bind) and p.kind == "thread" for p in chosen)
        assert name in ("matmul", "short-rows", "column-sum-many") or chosen == cpu
        assert heuristic_schedule(expr, gpu) == gpu_schedule(expr, gpu)


@needs_opencl
def test_pocl_says_it_is_a_cpu_and_every_case_is_right_on_it():
    """PoCL's target states emulated local memory (CL_DEVICE_LOCAL_MEM_TYPE GLOBAL); every case,
    realized through lt on opencl:0 with the schedules its target gets, equals numpy's."""
    target = runtime("opencl:0").device.target
    if "Portable Computing Language" not in target.features:
        pytest.skip("opencl:0 is not PoCL")
    assert target.local_memory_emulated
    for name in CASES:
        arrays = inputs(name)
        got = CASES[name].build(*[lt.asarray(a, device="opencl") for a in arrays])
        assert_close(got.numpy(), CASES[name].reference(*arrays))
