"""Schedules are data: any valid list of primitives gives the same values; heuristics pick
parallel outer loops and vectorized inner loops; the cpu code really is vectorized."""
import dataclasses
import math

import numpy as np
import pytest

import lazytensor as lt
from conftest import contract, run_isolated
from lazytensor.devices import runtime
from lazytensor.ir.ops import Op
from lazytensor import pipeline
from lazytensor.scheduler.collapse import collapse_axes
from lazytensor.scheduler.schedule import (CacheRead, CacheWrite, Parallel, PartialSum, Reorder, Split, Unroll,
                                           Vectorize, reductions)

# The heuristics answer to the target: tests of the schedules they pick state the one they mean,
# a 2-core AVX-512 CPU (64-byte vectors, 32 registers), or an AVX2 one (32 bytes, 16 registers).
AVX512 = dataclasses.replace(runtime("cpu").device.target, simd_bytes=64, vector_registers=32, cores=2,
                             l2_bytes=1 << 20)
AVX2 = dataclasses.replace(AVX512, simd_bytes=32, vector_registers=16)


def kernels_of(*outputs: lt.Tensor, target=None) -> list:
    """The fused kernels that compute `outputs` on the cpu, or for `target` (the pipeline's first
    stage)."""
    return pipeline.kernels([out.node for out in outputs], target or runtime("cpu").device.target).kernels


def schedule_of(spec, target=None) -> tuple:
    """The heuristic schedule of a kernel for `target` (the cpu's by default)."""
    return pipeline.loops(spec, target or runtime("cpu").device.target)[1]


def run_with_schedule(out: lt.Tensor, schedule, collapse: bool = True) -> np.ndarray:
    """Realize `out` (a single-kernel expression) with an explicit schedule."""
    rt = runtime("cpu")
    (spec,) = kernels_of(out)
    compiled = pipeline.compile_kernel(spec, rt, tuple(schedule), collapse=collapse)
    result = rt.device.allocate(spec.root.shape, spec.root.dtype)
    rt.launch(compiled, [result] + [n.arg for n in spec.inputs])
    return rt.device.to_numpy(result).copy()


@pytest.fixture(scope="module")
def operands():
    rng = np.random.default_rng(3)
    return rng.standard_normal((37, 29)).astype(np.float32), rng.standard_normal((37, 29)).astype(np.float32)


ELEMENTWISE_SCHEDULES = {
    "none": [],
    "split-uneven": [Split("i0", 7)],
    "split-reorder": [Split("i0", 8), Split("i1", 5), Reorder(("i1_o", "i0_o", "i0_i", "i1_i"))],
    "parallel-vector": [Parallel("i0"), Vectorize("i1", 16), Unroll("i1", 2)],
    "split-parallel-vector": [Split("i0", 10), Parallel("i0_o"), Vectorize("i1", 8)],
    "unroll-outer": [Unroll("i0", 4)],
    "swap": [Reorder(("i1", "i0"))],
}


@pytest.mark.parametrize("name", ELEMENTWISE_SCHEDULES)
def test_elementwise_schedules_agree(operands, name):
    a, b = operands
    out = (lt.asarray(a).T * 2.0 + lt.asarray(b).T).exp()   # transposed: not collapsible to 1-D
    got = run_with_schedule(out, ELEMENTWISE_SCHEDULES[name], collapse=False)
    np.testing.assert_allclose(got, np.exp(a.T * 2 + b.T), rtol=1e-6)


REDUCE_SCHEDULES = {
    "none": [],
    "vector-reduce": [Vectorize("r0_1", 16), Unroll("r0_1", 4)],
    "parallel-rows": [Parallel("i0"), Vectorize("r0_1", 8)],
    "split-rows": [Split("i0", 6), Parallel("i0_o")],
}


@pytest.mark.parametrize("name", REDUCE_SCHEDULES)
def test_reduction_schedules_agree(operands, name):
    a, _ = operands
    out = (lt.asarray(a) * 3.0).max(axis=1, keepdims=True) + 1.0
    got = run_with_schedule(out, REDUCE_SCHEDULES[name])
    np.testing.assert_allclose(got, (a * 3).max(axis=1, keepdims=True) + 1, rtol=1e-6)


def test_bad_schedules_are_refused(operands):
    a, b = operands
    out = lt.asarray(a).T + lt.asarray(b).T
    with pytest.raises(ValueError, match="outermost"):
        run_with_schedule(out, [Parallel("i1")], collapse=False)
    with pytest.raises(ValueError, match="does not have"):
        run_with_schedule(out, [Vectorize("i7", 8)], collapse=False)


def test_heuristics_parallelize_and_vectorize():
    target = runtime("cpu").device.target
    x = lt.asarray(np.ones((1 << 20,), np.float32))
    (spec,) = kernels_of((x * 2 + 1))
    schedule = schedule_of(spec, target)
    kinds = {type(p) for p in schedule}
    assert {Split, Parallel, Vectorize} <= kinds
    lanes = target.simd_bytes // 4
    assert Vectorize("i0_i", lanes) in schedule
    rows = lt.asarray(np.ones((4096, 512), np.float32)).sum(axis=1, keepdims=True)
    (spec,) = kernels_of(rows)
    schedule = schedule_of(spec, target)
    assert Parallel("i0") in schedule
    assert any(isinstance(p, Vectorize) and p.axis.startswith("r") for p in schedule)
    tiny = lt.asarray(np.ones(100, np.float32)) + 1
    (spec,) = kernels_of(tiny)
    assert not any(isinstance(p, Parallel) for p in schedule_of(spec, target))


@pytest.mark.parametrize("length", [100, 300, 500, 512, 784, 4096])
def test_a_reduction_takes_the_accumulators_that_leave_least_to_a_scalar_tail(length):
    # (a float32 max: no partial sums; the part of the row after the last full step of lanes x
    # accumulators runs as a scalar chain, so 500 takes 2 accumulators, 512 takes 4)
    target = runtime("cpu").device.target
    lanes = max(1, target.simd_bytes // 4)
    values = np.random.default_rng(length).standard_normal((64, length)).astype(np.float32)
    rows = lt.asarray(values).max(axis=1, keepdims=True)
    (spec,) = kernels_of(rows)
    unroll = next(p.factor for p in schedule_of(spec, target)
                  if isinstance(p, Unroll) and p.axis.startswith("r"))

    def cost(a: int) -> int:
        return length // (lanes * a) + length % (lanes * a)
    assert unroll in (2, 4) and all(cost(unroll) < cost(a) or (cost(unroll) == cost(a) and unroll >= a) for a in (2, 4))
    np.testing.assert_array_equal(rows.numpy(), values.max(axis=1, keepdims=True))


def test_collapse_makes_contiguous_elementwise_one_loop():
    x = lt.asarray(np.ones((64, 32, 16), np.float32))
    (spec,) = kernels_of((x * 2))
    assert collapse_axes(spec.expr).shape == (64 * 32 * 16,)
    (spec,) = kernels_of((x.permute(1, 0, 2) * 2))
    assert collapse_axes(spec.expr).shape == (32, 64, 16)  # a transpose keeps its axes apart
    (spec,) = kernels_of(x.sum(axis=(1, 2), keepdims=True))
    collapsed = collapse_axes(spec.expr)
    reduce_node = next(n for n in _walk(collapsed) if n.op is Op.SUM)
    assert reduce_node.src[0].shape == (64, 32 * 16)


def _loop_text(out: lt.Tensor) -> str:
    (spec,) = kernels_of(out)
    from lazytensor.ir.loop_print import format_kernel
    return format_kernel(pipeline.loops(spec, runtime("cpu").device.target)[2])


def test_a_reshaped_permute_with_an_epilogue_runs_over_the_permutes_axes():
    """`y.permute(..).reshape(merged) + bias` (Winograd's output tiles put back in place, merged
    attention heads plus a bias) reads its permuted input through a reshape that does not merge
    into strides: over the merged axes every load was div/mod (8x slower than the plain copy);
    split at the view's own axis boundaries it is one affine load."""
    x = lt.asarray(np.ones((8, 6, 5, 7, 4, 4), np.float32))
    bias = lt.asarray(np.ones(6, np.float32)).reshape(1, 6, 1, 1)
    out = x.permute(0, 1, 2, 4, 3, 5).reshape(8, 6, 20, 28) + bias
    (spec,) = kernels_of(out)
    assert collapse_axes(spec.expr).shape == (8, 6, 5, 4, 7, 4)
    text = _loop_text(out)
    assert " / " not in text and " % " not in text, text
    # a cut that does not divide the axis (the shrink to 27 columns) leaves the axes as they are
    shrunk = x.permute(0, 1, 2, 4, 3, 5).reshape(8, 6, 20, 28)[:, :, :, :27] + bias
    assert collapse_axes(kernels_of(shrunk)[0].expr).shape[-1] == 27
    # a reduced axis is never split
    summed = (x.permute(0, 1, 2, 4, 3, 5).reshape(8, 6, 20, 28) * bias).sum(axis=3)
    reduce_node = next(n for n in _walk(collapse_axes(kernels_of(summed)[0].expr)) if n.op is Op.SUM)
    assert 28 in reduce_node.src[0].shape


def _walk(node):
    yield node
    for s in node.src:
        yield from _walk(s)


def test_cpu_code_is_vectorized():
    rt = runtime("cpu")
    if rt.device.target.simd_bytes < 64:
        pytest.skip("the host has no AVX-512: zmm registers are not expected")
    x = lt.asarray(np.ones(1 << 20, np.float32))
    rows, causal = lt.asarray(np.ones((512, 64), np.float32)), lt.asarray(np.tril(np.ones((512, 64), bool)))
    # (a masked row max: LLVM took maximum(acc, select(mask, x, -inf)) for no reduction)
    for out in ((x * 2 + 1).sqrt(), (x * x).sum(keepdims=True), (x - 1).exp(),
                lt.where(causal, rows, -np.inf).max(axis=1), lt.where(causal, rows, np.inf).min(axis=1)):
        (spec,) = kernels_of(out)
        from lazytensor.pipeline import compile_kernel
        assembly = rt.compiler.assembly(compile_kernel(spec, rt).source)
        assert "zmm" in assembly


def test_loops_shorter_than_a_vector_compile_without_llvm_warnings(tmp_path):
    """A vectorized loop of fewer iterations than one vector step (the 3 columns of a stack:
    scikit-learn's GaussianNB stacks its per-class log-likelihoods) runs scalar: with the width
    hint, LLVM printed "remark: ... loop not vectorized" to stderr from `lt.stack(cols).T`.
    A fresh interpreter and cache: the kernels really compile."""
    code = """
import numpy as np, lazytensor as lt
rng = np.random.default_rng(0)
for dtype in (np.float32, np.float64):
    for k in range(1, 10):
        prior = rng.random(k).astype(dtype) + 0.1
        cols = rng.random((k, 40)).astype(dtype)
        p = lt.asarray(prior)
        out = lt.stack([lt.log(p[i]) - 0.5 * lt.asarray(cols[i]) for i in range(k)]).T
        np.testing.assert_allclose(out.numpy(), (np.log(prior)[:, None] - 0.5 * cols).T, rtol=1e-5, atol=1e-6)
print("ok")
"""
    out = run_isolated(code, tmp_path)
    assert out.stdout.strip().endswith("ok")
    assert "not vectorized" not in out.stderr, out.stderr


@pytest.mark.parametrize("factor", [1, 3, 4, 1000])
def test_split_of_a_reduction_axis_keeps_the_values(operands, factor):
    a, _ = operands
    got = run_with_schedule(lt.asarray(a).sum(axis=1, keepdims=True), [Split("r0_1", factor)])
    np.testing.assert_allclose(got, a.sum(axis=1, keepdims=True), rtol=1e-5)


# ---- PartialSum: float32 terms summed in float32 over blocks, the blocks in float64 --------------

PARTIAL_SUM_SCHEDULES = {
    "whole-row": [PartialSum("r0_1")],
    "blocks-uneven": [Split("r0_1", 7), PartialSum("r0_1_i"), Vectorize("r0_1_i", 16), Unroll("r0_1_i", 2)],
    "outer-of-split": [Split("r0_1", 4), PartialSum("r0_1_o")],
    "parallel-vector": [Parallel("i0"), PartialSum("r0_1"), Vectorize("r0_1", 16), Unroll("r0_1", 4)],
}


@pytest.mark.parametrize("name", PARTIAL_SUM_SCHEDULES)
def test_partial_sum_schedules_agree(operands, name):
    a, _ = operands   # (37, 29): the sum of each row, then an epilogue
    out = lt.asarray(a).sum(axis=1, keepdims=True) * 2
    got = run_with_schedule(out, PARTIAL_SUM_SCHEDULES[name]).reshape(37, 1)
    np.testing.assert_allclose(got, a.astype(np.float64).sum(axis=1, keepdims=True) * 2, rtol=1e-6, atol=1e-6)


def test_partial_sum_is_refused_where_it_does_not_fit(operands):
    a, b = operands
    no_widening = (lt.asarray(a).max(axis=1, keepdims=True),
                   lt.asarray(a.astype(np.float64)).sum(axis=1, keepdims=True))
    for out in no_widening:
        with pytest.raises(ValueError, match="PartialSum"):
            run_with_schedule(out, [PartialSum("r0_1")])
    with pytest.raises(ValueError, match="PartialSum"):
        run_with_schedule(lt.asarray(a).sum(axis=1, keepdims=True), [PartialSum("i0")])
    with pytest.raises(ValueError, match="PartialSum"):
        run_with_schedule(_matmul_kernel(lt.asarray(a).T @ lt.asarray(b)), [CacheWrite("i0"), PartialSum("r0_1")])


def test_heuristic_sums_float32_in_blocks():
    x = lt.asarray(np.ones((64, 5000), np.float32))
    assert PartialSum("r0_1_i") in _schedule_of(x.sum(axis=1))   # a long row: blocks of it
    assert PartialSum("r0_1") in _schedule_of(x[:, :300].sum(axis=1))   # a short one: the whole row
    for n in (64, 100, 300):   # one vector step (lanes x accumulators) fits in the row
        schedule = _schedule_of(x[:, :n].sum(axis=1))
        step = math.prod(p.width for p in schedule if isinstance(p, Vectorize)) * \
            math.prod(p.factor for p in schedule if isinstance(p, Unroll))
        assert PartialSum("r0_1") in schedule and step <= n, schedule
    assert not any(isinstance(p, PartialSum) for p in _schedule_of(x.astype(lt.float64).sum(axis=1)))


# ---- CacheWrite: a tile of outputs in a local array, the reduction outside it -------------------

CACHE_WRITE_SCHEDULES = {
    "tile-last": [CacheWrite("i1")],
    "tile-all": [CacheWrite("i0")],
    "parallel-tile-vector": [Parallel("i0"), CacheWrite("i1"), Vectorize("i1", 16), Unroll("i1", 4)],
    "split-tile": [Split("i1", 7), CacheWrite("i1_i"), Vectorize("i1_i", 8)],
    "split-reduction": [Split("r0_1", 5), CacheWrite("i1")],
}


def _matmul_kernel(out: lt.Tensor) -> lt.Tensor:
    """The reduction of a matmul result, without its final reshape (a free view, no kernel)."""
    return lt.Tensor(out.node.src[0]) if out.node.op is Op.RESHAPE else out


@pytest.mark.parametrize("name", CACHE_WRITE_SCHEDULES)
def test_cache_write_schedules_agree(operands, name):
    a, b = operands   # (37, 29) each: a.T @ b reduces over the strided axis of both
    out = _matmul_kernel((lt.asarray(a).T * 0.5) @ lt.asarray(b))   # a one-op prologue fuses in
    got = run_with_schedule(out, CACHE_WRITE_SCHEDULES[name]).reshape(29, 29)
    np.testing.assert_allclose(got, (a.T * 0.5) @ b, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("rows", [6, 5])
def test_a_register_tile_that_does_not_divide_its_rows_keeps_whole_tiles_in_registers(rows):
    """scheduler/tails.py on a kernel of known sizes: tiles of 6 (or 5) rows of a 70-row matmul
    leave a tail of 4 (or 0 rows: 70 = 14 x 5, no versions then); whole tiles run loops of known
    length (LLVM keeps the unrolled tile in registers: at 1024 rows, 81 -> 182 GFLOP/s), the
    last tile runs apart, its 4 rows a loop of known length too, and the values are numpy's."""
    from lazytensor.ir import loop
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((70, 45)).astype(np.float32), rng.standard_normal((45, 32)).astype(np.float32)
    out = _matmul_kernel(lt.asarray(a) @ lt.asarray(b))
    schedule = (Split("i0", rows), Split("i2", 16), Reorder(("i2_o", "i0_o", "i1", "i0_i", "i2_i")),
                Parallel("i2_o"), CacheWrite("i0_i"), Unroll("i0_i", rows), Vectorize("i2_i", 8), Unroll("i2_i", 2))
    (spec,) = kernels_of(out)
    _, _, lowered = pipeline.loops(spec, runtime("cpu").device.target, schedule)
    stops = [s.stop for s in loop.walk(lowered.body) if isinstance(s, loop.For) and s.var.name == "i0_i"]
    assert stops.count(loop.const(rows)) == 3, "no whole-tile version"   # (its first values, update, store)
    assert all(isinstance(stop, loop.Const) for stop in stops), stops
    assert stops.count(loop.const(70 % rows)) == (3 if 70 % rows else 0)   # (the tail's, where there is one)
    got = run_with_schedule(out, schedule).reshape(70, 32)
    np.testing.assert_allclose(got, a @ b, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("columns", [700, 696, 701])
def test_a_register_tiles_last_columns_run_in_vectors_that_divide_them(columns):
    """tails.py: a tile of 16 columns over 700 leaves 12, a loop of known length in 3 vectors of
    4 (in vectors of 8, LLVM left it scalar: the matmul 1.5x slower); over 696, 8 in one vector
    of 8; over 701, 13 columns, which no vector of at least 4 divides: a loop of unknown length.
    The rows' tail (6 rows over 20 leave 2) is versioned inside each, and the values are numpy's."""
    from lazytensor.ir import loop
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((20, 33)).astype(np.float32), rng.standard_normal((33, columns)).astype(np.float32)
    out = _matmul_kernel(lt.asarray(a) @ lt.asarray(b))
    schedule = (Split("i0", 6), Split("i2", 16), Reorder(("i2_o", "i0_o", "i1", "i0_i", "i2_i")),
                Parallel("i2_o"), CacheWrite("i0_i"), Unroll("i0_i", 6), Vectorize("i2_i", 8), Unroll("i2_i", 2))
    (spec,) = kernels_of(out)
    _, _, lowered = pipeline.loops(spec, runtime("cpu").device.target, schedule)
    tiles = {(s.stop.value if isinstance(s.stop, loop.Const) else None, s.vector_width, s.unroll)
             for s in loop.walk(lowered.body) if isinstance(s, loop.For) and s.var.name == "i2_i"}
    last = {700: (12, 4, 3), 696: (8, 8, 1), 701: (None, 8, 2)}[columns]
    assert (16, 8, 2) in tiles and last in tiles, tiles
    rows = {s.stop.value if isinstance(s.stop, loop.Const) else None
            for s in loop.walk(lowered.body) if isinstance(s, loop.For) and s.var.name == "i0_i"}
    assert rows == {6, 2}, rows
    got = run_with_schedule(out, schedule).reshape(20, columns)
    np.testing.assert_allclose(got, a @ b, rtol=2e-5, atol=2e-5)


def test_a_tail_whose_length_reads_an_inner_loop_is_versioned_inside_it():
    """Rows split twice (blocks of 16, tiles of 4 unrolled): the last tile's length reads both
    outer loops, so its two versions go inside the tiles' loop, not at the block loop where
    that loop's variable is not yet defined (which the loop verifier refused)."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((70, 33)).astype(np.float32), rng.standard_normal((33, 45)).astype(np.float32)
    schedule = (Split("i0", 16), Split("i0_i", 4), Split("i2", 16),
                Reorder(("i0_o", "i2_o", "i0_i_o", "i1", "i0_i_i", "i2_i")), Parallel("i0_o"),
                CacheWrite("i0_i_i"), Unroll("i0_i_i", 4), Vectorize("i2_i", 8))
    got = run_with_schedule(_matmul_kernel(lt.asarray(a) @ lt.asarray(b)), schedule).reshape(70, 45)
    np.testing.assert_allclose(got, a @ b, rtol=2e-5, atol=2e-5)


def _blocked(block: int, pack_rows: bool = True) -> tuple:
    """A BLAS-like schedule of an (m, 1, n) matmul: blocks of 16 rows in parallel, the reduction
    in blocks of `block` outside the register tile (4 rows by 16 columns), each block's rows of
    the left operand packed once per reduction block, the right one's columns per column tile."""
    return ((Split("i0", 16), Split("i0_i", 4), Split("i2", 16), Split("r0_1", block),
             Reorder(("i0_o", "r0_1_o", "i2_o", "i0_i_o", "i1", "i0_i_i", "i2_i")), Parallel("i0_o"))
            + ((CacheRead(0, "r0_1_o"),) if pack_rows else ())
            + (CacheRead(1, "i2_o"), CacheWrite("i0_i_i"), Unroll("i0_i_i", 4), Vectorize("i2_i", 8)))


@pytest.mark.parametrize("block", [64, 100, 300, 512])
def test_a_reduction_blocked_outside_the_tile_accumulates_in_the_output(block):
    """A reduction loop among the output loops, outside the CacheWrite tile (BLAS's K blocks,
    so that a block of one operand stays in cache while the other streams): the tile starts
    from the output's partial sums after the first block, stores them back before the last,
    and only the last block applies what follows the reduction (bias and relu here, which
    would be wrong applied to a partial sum). Blocks that do not divide the reduction (300 by
    64) leave a shorter last one; one block of all (300, 512) is the plain tile."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((70, 300)).astype(np.float32), rng.standard_normal((300, 45)).astype(np.float32)
    bias = rng.standard_normal(45).astype(np.float32)
    out = lt.nn.functional.relu(lt.asarray(a) @ lt.asarray(b) + lt.asarray(bias))
    for pack_rows in (True, False):
        got = run_with_schedule(out, _blocked(block, pack_rows)).reshape(70, 45)
        np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_a_blocked_reduction_is_refused_where_it_cannot_accumulate_in_the_output():
    """The output holds the partial sums between reduction blocks: so a reduction loop among the
    output loops needs a CacheWrite tile inside it, runs serially (threads would add into the
    same outputs), stays outside the tile, and needs an output of the accumulator's dtype
    (float16 sums in float32)."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((40, 50)).astype(np.float32), rng.standard_normal((50, 24)).astype(np.float32)
    out = lt.asarray(a) @ lt.asarray(b)
    order = Reorder(("r0_1_o", "i0", "i1", "i2"))
    with pytest.raises(ValueError, match="r0_1_o.*CacheWrite"):
        run_with_schedule(out, [Split("r0_1", 16), order])
    with pytest.raises(ValueError, match="Parallel.*r0_1_o.*reduction"):
        run_with_schedule(out, [Split("r0_1", 16), order, Parallel("r0_1_o")])
    with pytest.raises(ValueError, match="r0_1_o.*inside the tile"):
        run_with_schedule(out, [Split("r0_1", 16), Reorder(("i0", "r0_1_o", "i1", "i2")), CacheWrite("i0")])
    half = lt.asarray(a.astype(np.float16)) @ lt.asarray(b.astype(np.float16))
    with pytest.raises(ValueError, match="float16.*float32"):
        run_with_schedule(half, [Split("r0_1", 16), order, CacheWrite("i0")])
    got = run_with_schedule(out, [Split("r0_1", 16), order, CacheWrite("i0")]).reshape(40, 24)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


def test_cache_write_is_refused_where_it_does_not_fit(operands):
    a, b = operands
    with pytest.raises(ValueError, match="CacheWrite"):
        run_with_schedule(_matmul_kernel(lt.asarray(a).T @ lt.asarray(b)), [Parallel("i0"), CacheWrite("i0")])
    with pytest.raises(ValueError, match="CacheWrite"):
        run_with_schedule(lt.asarray(a) * 2, [CacheWrite("i0")])


def _reduction_of(out: lt.Tensor, target=None):
    """The kernel of a matmul-like result's reduction (fusion may copy an operand first)."""
    return [spec for spec in kernels_of(_matmul_kernel(out), target=target) if reductions(spec.expr)][-1]


def _schedule_of(out: lt.Tensor, target=AVX512):
    return schedule_of(_reduction_of(out, target), target)


def test_heuristic_tiles_outputs_for_a_strided_reduction():
    x, g = lt.asarray(np.ones((128, 300), np.float32)), lt.asarray(np.ones((128, 70), np.float32))
    assert any(isinstance(p, CacheWrite) for p in _schedule_of(x.T @ g))          # weight-gradient form
    # the dot-product form vectorizes the reduction, not an output axis
    assert all(p.axis.startswith("r") for p in _schedule_of(x @ x.T) if isinstance(p, Vectorize))
    assert not any(isinstance(p, CacheWrite) for p in _schedule_of(x.sum(axis=1)))
    # 300 x 64: a register tile (rows x vectors, both dividing their axes, unrolled in full)
    tiled = _schedule_of(x.T @ lt.asarray(np.ones((128, 64), np.float32)))
    assert CacheWrite("i0_i") in tiled and Unroll("i0_i", 4) in tiled


def test_register_tile_vectorizes_along_whichever_output_axis_fits():
    """g.T @ x (512 x 784, a weight gradient in w's layout): 784 takes no power-of-two tile of
    vectors, 512 does, and both operands read it contiguously: the tile's vectors run along
    axis 0 (stored with a stride once per tile); x.T @ g keeps its last axis."""
    g, x = lt.asarray(np.ones((128, 512), np.float32)), lt.asarray(np.ones((128, 784), np.float32))
    tiled = _schedule_of(g.T @ x)
    assert CacheWrite("i2_i") in tiled and Vectorize("i0_i", 16) in tiled and Unroll("i0_i", 4) in tiled
    assert Vectorize("i2_i", 16) in _schedule_of(x.T @ g)


def test_batched_matmuls_tile_each_matrix_not_the_batch():
    """Every operand of a batched matmul varies along the batch: a tile of batches reuses
    nothing, a tile of a matrix's rows reuses each column vector it loads (attention's p @ v
    and q @ k.T, heads as the batch). The batch runs outermost, in parallel; an operand
    strided along the tile's columns (k.T, head by head) is packed once per batch."""
    p, v = lt.asarray(np.ones((128, 64, 48), np.float32)), lt.asarray(np.ones((128, 48, 32), np.float32))
    q, k = lt.asarray(np.ones((128, 64, 32), np.float32)), lt.asarray(np.full((128, 48, 32), 2, np.float32))
    for tiled in (_schedule_of(p @ v), _schedule_of(q @ k.permute(0, 2, 1))):
        (tile,) = [prim for prim in tiled if isinstance(prim, CacheWrite)]
        assert tile.at in ("i1_i", "i3_i") and Parallel("i0") in tiled, tiled
    assert any(isinstance(prim, CacheRead) and prim.at == "i0" for prim in _schedule_of(q @ k.permute(0, 2, 1)))


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_attention_p_at_v_runs_head_by_head(target):
    """p @ v with v's heads split from a (B, T, C) projection: the heads run outermost in the
    parallel loop, so one head's v stays in cache while its tiles read it (rows outermost
    reread every head's v once per block of rows)."""
    B, H, T, D = 4, 4, 64, 32
    rng = np.random.default_rng(5)
    s, v = rng.standard_normal((B, H, T, T)).astype(np.float32), rng.standard_normal((B, T, H * D)).astype(np.float32)
    heads = lt.asarray(v).reshape(B, T, H, D).permute(0, 2, 1, 3)
    y = lt.asarray(s) @ heads
    (parallel,) = [p for p in _schedule_of(y, target) if isinstance(p, Parallel)]
    axes = parallel.axis.split("x")
    assert axes[:2] == ["i0", "i1"], parallel   # (then the tile's row blocks, or packed per head)
    want = s.astype(np.float64) @ v.reshape(B, T, H, D).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shapes", [((6, 20, 33), (6, 33, 16)), ((3, 2, 16, 70), (3, 2, 70, 8)),
                                    ((5, 12, 64), (64, 32)), ((1, 8, 96), (1, 96, 16)), ((4, 64, 128), (4, 128, 64)),
                                    ((8, 4, 64, 32), (8, 4, 32, 64)), ((3, 5, 48, 16), (3, 5, 16, 40))],
                         ids=str)
def test_batched_matmuls_match_numpy(shapes):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    want = a.astype(np.float64) @ b.astype(np.float64) * 2
    for y in (lt.asarray(b), lt.asarray(np.swapaxes(b, -1, -2).copy()).mT):   # (the second with k innermost)
        np.testing.assert_allclose((lt.asarray(a) @ y * 2).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(128, 33, 17), (5, 1, 40), (3, 9, 5000), (64, 300, 1), (1, 20, 19),
                                   (16, 64, 128), (9, 28, 96), (2, 8, 16), (16, 64, 10), (8, 24, 5),
                                   (16, 64, 49), (7, 128, 12)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_reductions_match_numpy(shape, dtype):
    """Shapes that take the CacheWrite heuristic (and its split tile past 2048 outputs), with a
    fused epilogue, and a 1-D result (x.T @ v)."""
    batch, k, n = shape
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((batch, k)).astype(dtype), rng.standard_normal((batch, n)).astype(dtype)
    lx, lg = lt.asarray(x), lt.asarray(g)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(((lx.T @ lg) * 0.5).exp().numpy(), np.exp((x.T @ g) * 0.5), rtol=rtol, atol=rtol)
    np.testing.assert_allclose((lx.T @ lg[:, 0]).numpy(), x.T @ g[:, 0], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(lx.sum(axis=0).numpy(), x.sum(axis=0), rtol=rtol, atol=rtol)
    # the transposed layout (the tile may vectorize along axis 0 and store with a stride)
    np.testing.assert_allclose((lg.T @ lx + 1).numpy(), g.T @ x + 1, rtol=rtol, atol=rtol)


# ---- CacheRead on the cpu: a panel of an input packed into contiguous memory ------------------

PACK_SCHEDULES = {   # a.T @ b: inputs 1 (a) and 2 (b); the tile runs along i1 (b's columns)
    "pack-b": [Split("i1", 8), Reorder(("i1_o", "i0", "i1_i")), CacheRead(1, "i1_o"), CacheWrite("i1_i"),
               Vectorize("i1_i", 8)],
    "pack-both-parallel": [Split("i1", 8), Reorder(("i1_o", "i0", "i1_i")), Parallel("i1_o"), CacheRead(0, "i1_o"),
                           CacheRead(1, "i1_o"), CacheWrite("i1_i"), Vectorize("i1_i", 8)],
    "pack-remainder": [Split("i1", 7), Split("i0", 4), Reorder(("i1_o", "i0_o", "i0_i", "i1_i")),
                       CacheRead(1, "i1_o"), CacheWrite("i0_i"), Unroll("i0_i", 4)],
    "pack-inner-split-reduction": [Split("i0", 6), Split("r0_1", 4), Reorder(("i0_o", "i1", "i0_i")),
                                   CacheRead(0, "i0_o"), CacheWrite("i1")],
}


@pytest.mark.parametrize("name", PACK_SCHEDULES)
def test_packing_schedules_agree(operands, name):
    a, b = operands   # (37, 29) each: nothing divides evenly
    out = _matmul_kernel((lt.asarray(a).T * 0.5) @ lt.asarray(b))
    got = run_with_schedule(out, PACK_SCHEDULES[name]).reshape(29, 29)
    np.testing.assert_allclose(got, (a.T * 0.5) @ b, rtol=2e-5, atol=2e-5)


def test_local_arrays_past_a_stack_are_refused():
    """A tile or panel bigger than a thread's stack would crash the process: refused, naming sizes."""
    big = lt.asarray(np.ones((1100, 1100), np.float32))
    with pytest.raises(ValueError, match="local arrays need .* bytes"):
        run_with_schedule(_matmul_kernel(big.T @ big), [CacheWrite("i0")])   # a tile of 1100 x 1100 floats
    with pytest.raises(ValueError, match="lt_pack"):   # all of `big`, twice, packed before the loops
        run_with_schedule(_matmul_kernel(big.T @ big), [Split("i2", 16), Reorder(("i0", "i2_o", "i1", "i2_i")),
                                                        CacheRead(0, None), CacheWrite("i2_i")])


def test_packing_is_refused_where_it_does_not_fit(operands):
    a, b = operands
    out = _matmul_kernel(lt.asarray(a).T @ lt.asarray(b))
    with pytest.raises(ValueError, match="CacheRead"):   # inside the tile
        run_with_schedule(out, [CacheRead(1, "i1"), CacheWrite("i0")])
    with pytest.raises(ValueError, match="CacheRead"):   # an input the reduction does not read
        run_with_schedule(out, [Reorder(("i1", "i0")), CacheRead(5, "i1"), CacheWrite("i0")])


def test_heuristic_packs_the_strided_panel_of_a_large_matmul():
    """A @ B with B's rows 1 KB or more apart and many blocks of rows: B's panel for a block of
    columns is packed, and those blocks run in parallel; a short A (few blocks of rows) is not."""
    a, b = lt.asarray(np.ones((128, 300), np.float32)), lt.asarray(np.ones((300, 512), np.float32))
    tiled = _schedule_of(a @ b)
    assert CacheRead(1, "i2_o") in tiled and Parallel("i2_o") in tiled
    assert not any(isinstance(p, CacheRead) for p in _schedule_of(a[:16] @ b))
    assert not any(isinstance(p, CacheRead) for p in _schedule_of(a @ b[:, :128]))   # rows 512 B apart


def test_heuristic_packs_a_panel_whose_rows_span_much_of_l2():
    """B's rows 512 B apart, but 2048 of them span 1 MB, more than a quarter of L2: rows at that
    stride share an eighth of the cache sets, so read in place they evict each other (90
    against 196 GFLOP/s packed on a Zen 3); 128 of them (64 KB) stay, and are read in place.
    (On AVX2: AVX-512's 64-column blocks would leave too few blocks for the cores.)"""
    long_k = lt.asarray(np.ones((128, 2048), np.float32)) @ lt.asarray(np.ones((2048, 128), np.float32))
    short_k = lt.asarray(np.ones((128, 128), np.float32)) @ lt.asarray(np.ones((128, 128), np.float32))
    assert CacheRead(1, "i2_o") in _schedule_of(long_k, AVX2)
    assert not any(isinstance(p, CacheRead) for p in _schedule_of(short_k, AVX2))


@pytest.mark.parametrize("case", ["plain", "f64", "flipped", "strided-b", "self", "long-k"])
def test_packed_matmuls_match_numpy(case):
    """Shapes that take the packed-panel heuristic, with a fused bias + relu epilogue; B read
    backwards (a negative stride), through a step, and A @ A (one input packed, read twice)."""
    rng = np.random.default_rng(5)
    dtype = np.float64 if case == "f64" else np.float32
    m, k, n = (192, 2000, 256) if case == "long-k" else (128, 300, 512)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    la, lb = lt.asarray(a), lt.asarray(b)
    if case == "flipped":
        b, lb = b[::-1], lb[::-1]
    elif case == "strided-b":
        b2 = rng.standard_normal((2 * k, n)).astype(dtype)
        b, lb = b2[::2], lt.asarray(b2)[::2]
    elif case == "self":
        a = rng.standard_normal((n, n)).astype(dtype)
        la, b, lb = lt.asarray(a), a, lt.asarray(a)
    if case != "self":
        assert any(isinstance(p, CacheRead) for p in _schedule_of(la @ lb))
    got = lt.nn.functional.relu(la @ lb + lt.asarray(bias)).numpy()
    tol = 1e-10 if dtype == np.float64 else 2e-4 * np.sqrt(k / 300)
    np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=tol, atol=tol)


def test_heuristic_tiles_dot_products_in_registers():
    """x @ w.T reads K innermost in both operands: a tile of dot products vectorized along K."""
    x = lt.asarray(np.ones((128, 256), np.float32))
    tiled = _schedule_of(x @ lt.asarray(np.ones((64, 256), np.float32)).T)
    assert any(isinstance(p, CacheWrite) for p in tiled)
    assert any(isinstance(p, Vectorize) and p.axis == "r0_1" for p in tiled)
    assert not any(isinstance(p, CacheWrite) for p in _schedule_of(x.sum(axis=1)))       # no reuse
    short = lt.asarray(np.ones((128, 8), np.float32))
    assert not any(isinstance(p, CacheWrite) for p in _schedule_of(short @ short.T))     # K too short


@pytest.mark.parametrize("shape", [(8, 64, 12), (12, 200, 6), (4, 97, 8), (9, 130, 7), (16, 64, 1)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_product_tiles_match_numpy(shape, dtype):
    """Shapes that take the dot-product tile (and ones that fall back), with a fused epilogue."""
    m, k, n = shape
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    got = lt.nn.functional.relu(lt.asarray(x) @ lt.asarray(w).T + lt.asarray(b)).numpy()
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=rtol, atol=rtol)


def test_convolution_tiles_outputs_along_channels_with_packed_weights():
    """A 3x3 convolution's taps are too short to vectorize. The register tile's vectors run
    along the output channels, read from the weights packed once per call (channels
    innermost), its rows along the image row (neighbouring inputs, broadcast); the reduction
    runs its longest axis, the input channels, innermost (the weights are packed in that order):
    a 1x3 convolution over 32 channels ran 3.4 ms with its taps innermost, 2.75 ms so."""
    x, w = lt.asarray(np.ones((2, 8, 12, 56), np.float32)), lt.asarray(np.ones((16, 8, 3, 3), np.float32))
    specs = kernels_of(lt.nn.functional.conv2d(x, w, padding=1))
    assert [bool(reductions(s.expr)) for s in specs][:2] == [False, True]   # the input padded once, then the sum
    tiled = schedule_of(specs[1], AVX512)
    assert CacheRead(1, None) in tiled and CacheWrite("i3_i") in tiled and Vectorize("i1_i", 16) in tiled
    (order,) = [p.axes for p in tiled if isinstance(p, Reorder) and p.axes[0].startswith("r")]
    (summed,) = reductions(collapse_axes(specs[1].expr))
    extents = {f"r0_{a}": summed.src[0].shape[a] for a in summed.arg}
    assert extents[order[-1]] == 8 == max(extents.values())   # the 8 input channels, not the 3 taps
    # a short output row with no tile of vectors along it: the same along channels
    w64 = lt.asarray(np.ones((64, 8, 3, 3), np.float32))
    specs = kernels_of(lt.nn.functional.conv2d(lt.asarray(np.ones((2, 8, 9, 9), np.float32)), w64))
    tiled = schedule_of(specs[0], AVX512)
    assert CacheRead(1, None) in tiled and Vectorize("i1_i", 16) in tiled


def _accumulators(schedule) -> int:
    """The vectors a register tile keeps: its unrolled rows times its vectors a row."""
    (tile,) = [p for p in schedule if isinstance(p, CacheWrite)]
    vectorized = next(p.axis for p in schedule if isinstance(p, Vectorize))
    unrolled = {p.axis: p.factor for p in schedule if isinstance(p, Unroll)}
    return unrolled.get(tile.at, 1) * unrolled.get(vectorized, 1)


@pytest.mark.parametrize("case", ["matmul", "weight-gradient", "conv", "dot"])
def test_register_tiles_fit_the_targets_vector_registers(case):
    """A tile's accumulators stay in registers with room for a step's loads: 16 vectors where
    there are 32 registers (AVX-512), at most 12 where there are 16 (AVX2: a 4 x 4 tile there
    spilled every step, matmul 1024 at a third of its speed)."""
    x, g = lt.asarray(np.ones((1024, 1024), np.float32)), lt.asarray(np.ones((128, 512), np.float32))
    if case == "conv":
        out = lt.nn.functional.conv2d(lt.asarray(np.ones((8, 32, 56, 56), np.float32)),
                                      lt.asarray(np.ones((64, 32, 3, 3), np.float32)), padding=1)
        spec = kernels_of(out)[1]
    elif case == "dot":   # x @ w.T: dot products along K, a tile of MR x NR of them
        (spec,) = kernels_of(_matmul_kernel(x[:128] @ x[:512].T))
    else:
        spec = _reduction_of(x @ x if case == "matmul" else g.T @ g)
    for target, most in ((AVX512, 16), (AVX2, 12)):
        schedule = schedule_of(spec, target)
        if case == "dot":
            unrolled = [p.factor for p in schedule if isinstance(p, Unroll)]
            used = math.prod(unrolled)
        else:
            used = _accumulators(schedule)
        assert 4 <= used <= most, (target.vector_registers, schedule)


@pytest.mark.parametrize("n", [768, 1536, 300, 700])
def test_register_tiles_leave_registers_for_a_steps_loads(n):
    """A tile's accumulators, the vectors a step loads and a broadcast fit in the registers: 3
    rows of 4 vectors on AVX2 (12 + 4 + 1 = 17 of 16) spilled, matmul 768 at 84 GFLOP/s against
    136 in 6 rows of 2. Along long axes the tile need not divide them (tails.py runs the rest):
    on AVX2, 6 x 16 for 300 and 700 too (300 in half vectors of 4 before: 1.2x slower)."""
    spec = _reduction_of(lt.asarray(np.ones((n, n), np.float32)) @ lt.asarray(np.ones((n, n), np.float32)))
    for target in (AVX512, AVX2):
        schedule = schedule_of(spec, target)
        vectorized = next(p.axis for p in schedule if isinstance(p, Vectorize))
        vectors = next((p.factor for p in schedule if isinstance(p, Unroll) and p.axis == vectorized), 1)
        assert _accumulators(schedule) + vectors + 1 <= target.vector_registers, (target.vector_registers, schedule)
    schedule = schedule_of(spec, AVX2)
    assert Split("i0", 6) in schedule and Split("i2", 16) in schedule, schedule


def test_llvm_is_told_the_schedule_on_every_loop():
    """Every loop of the cpu source says what LLVM may do with it: a vectorized loop its width
    and no unrolling before that (LLVM would unroll a short loop in full and re-vectorize the
    statements along another axis), every other loop no vectorizing (LLVM vectorized the
    reduction around a register tile along the reduction, and the tile was lost)."""
    import re
    rt = runtime("cpu")
    x = lt.asarray(np.ones((256, 256), np.float32))
    (spec,) = kernels_of(_matmul_kernel(x @ x))
    from lazytensor.pipeline import compile_kernel
    source = compile_kernel(spec, rt).source
    loops = re.findall(r"!llvm\.loop (![0-9]+)", source)
    nodes = dict(re.findall(r"^(![0-9]+) = (.*)$", source, re.M))
    assert loops
    kinds = []
    for ref in loops:
        props = [nodes[p] for p in re.findall(r"![0-9]+", nodes[ref])[1:]]
        width = [int(re.search(r"i32 ([0-9]+)", p).group(1)) for p in props if "vectorize.width" in p]
        assert len(width) == 1, props
        kinds.append(width[0] > 1)
        if width[0] > 1:
            assert '!{!"llvm.loop.unroll.disable"}' in props, props
    assert any(kinds) and not all(kinds)


def test_computations_that_read_no_loop_variable_run_once_before_the_loops():
    """AdamW's bias correction, 1 - beta**t from the step count, calls the C library's expm1:
    rendered before the loops, the loop over the elements calls nothing and vectorizes (in the
    loop, the call ran twice per element, scalar). Values as numpy's, also for a zero step."""
    from lazytensor.pipeline import compile_kernel
    rng = np.random.default_rng(3)
    m, v = rng.standard_normal((64, 100)).astype(np.float32), rng.random((64, 100)).astype(np.float32)
    for step in (3.0, 0.0):
        t = lt.asarray(np.float32(step))
        out = lt.asarray(m) / -lt.expm1(t * -0.1) / (lt.sqrt(lt.asarray(v) / -lt.expm1(t * -0.001)) + 1e-8)
        (spec,) = kernels_of(out)
        source = compile_kernel(spec, runtime("cpu")).source
        body = source[source.index("define internal"):]
        assert body.index("@expm1f") < body.index(".cond"), body   # called before the first loop
        assert "llvm.loop.vectorize.width\", i32 8" in source or "i32 16" in source
        with np.errstate(divide="ignore", invalid="ignore"):
            want = m / -np.expm1(np.float32(step) * np.float32(-0.1)) / \
                (np.sqrt(v / -np.expm1(np.float32(step) * np.float32(-0.001))) + np.float32(1e-8))
        np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-6)


def test_rendering_looks_at_each_shared_part_of_an_expression_once():
    """Loop-IR expressions are graphs: 22 levels that each read the one below twice are 4 million
    paths but 67 expressions. Rendering them (looking for what to compute before the loops too)
    takes milliseconds; a walk along paths took 10 s, and deep gather chains hung."""
    import time
    from lazytensor.backends.cpu.render import render
    from lazytensor.ir import loop
    from lazytensor.ir.dtypes import float32
    i = loop.Var("i0")
    x, c = loop.Load(2, i, float32), loop.Load(1, loop.const(0), float32)
    for _ in range(22):
        x = loop.Alu(Op.ADD, (loop.Alu(Op.MUL, (x, c), float32), x), float32)
        c = loop.Alu(Op.MUL, (c, c), float32)
    kernel = loop.Kernel("k", (loop.Param(float32, True), loop.Param(float32, False), loop.Param(float32, False)),
                         (loop.For(i, loop.const(0), loop.const(8), (loop.Store(0, i, loop.Alu(Op.ADD, (x, c), float32)),)),))
    start = time.perf_counter()
    render(kernel)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "int8", "bool"])
def test_padded_reads_in_vectorized_loops(dtype, monkeypatch):
    """A padded read in a vectorized loop is a load in a branch (which LLVM makes a masked vector
    load; a select on the index made it gather the lanes one by one) where the element has 4 or
    8 bytes, a select elsewhere: values as numpy's, at the buffer's first and last elements, in
    reversed views, with the pad value anything. (Loop partitioning, scheduler/partition.py,
    takes the tests out of a plain pad's loops: it is off here, as where a test's threshold is
    not a constant.)"""
    from lazytensor.pipeline import compile_kernel
    from lazytensor.scheduler import lower
    monkeypatch.setattr(lower, "partition_conditions", lambda kernel: kernel)
    rt = runtime("cpu")
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((5, 67)) * 20).astype(dtype)
    widths = ((2, 3), (5, 4))
    try:
        rt.plans.clear()   # (kernels compiled without the partitioning: for this test only)
        rt.by_expression.clear()
        for view, value in ((lambda v: v, 0), (lambda v: v[::-1, ::-1], 3)):
            x = view(lt.asarray(a)).pad(widths, value)
            (spec,) = kernels_of(x)
            source = compile_kernel(spec, rt).source
            assert ("guarded" in source) == (np.dtype(dtype).itemsize >= 4), source
            np.testing.assert_array_equal(x.numpy(), np.pad(view(a), widths, constant_values=value))
    finally:
        rt.plans.clear()
        rt.by_expression.clear()


def test_row_reductions_run_once_per_row():
    """In a softmax kernel the row max and sum loops run in the row loop, before the loop over
    the row's elements, not inside it (which would cost a row's work per element)."""
    from lazytensor.ir import loop
    X = lt.asarray(np.ones((64, 300), np.float32))
    e = (X - X.max(axis=1, keepdims=True)).exp()
    (spec,) = kernels_of(e / e.sum(axis=1, keepdims=True))
    _, _, kernel = pipeline.loops(spec, runtime("cpu").device.target)
    (rows,) = kernel.body
    assert rows.var.name == "i0"
    inner = [s.var.name for s in rows.body if isinstance(s, loop.For)]
    # (two reductions; a float32 sum's loop runs its whole vector steps, then the terms left over)
    assert inner[-1] == "i1" and len({name for name in inner if name.startswith("r")}) == 2
    (elements,) = [s for s in rows.body if isinstance(s, loop.For) and s.var.name == "i1"]
    assert not any(isinstance(s, loop.For) for s in loop.walk(elements.body))


@pytest.mark.parametrize("rows, cols", [(2000, 500), (37, 1001), (300, 17), (5, 16)])
def test_a_transposed_matrix_vector_product_updates_vectors_of_outputs(rows, cols):
    # A.T @ v reduces along A's strided axis: per element of v, a vector of outputs is updated
    # (not a gather down each column); with one long output axis, its tiles run in parallel
    rng = np.random.default_rng(rows)
    a, v = rng.standard_normal((rows, cols)).astype(np.float32), rng.standard_normal(rows).astype(np.float32)
    out = lt.asarray(a).T @ lt.asarray(v)
    schedule = _schedule_of(out)
    assert any(isinstance(p, CacheWrite) for p in schedule)
    if rows * cols >= 1 << 17:
        assert any(isinstance(p, Parallel) for p in schedule)
    np.testing.assert_allclose(out.numpy(), a.T @ v, rtol=1e-4, atol=1e-4 * np.sqrt(rows))


@pytest.mark.parametrize("shape", [(2048, 512, 128), (300, 64, 48), (37, 8, 24)], ids=str)
def test_the_tuner_is_offered_a_packed_panel_where_the_heuristics_do_not_pack(shape):
    """A weight gradient g.T @ x whose x rows lie closer than PACK_MIN_STRIDE_BYTES: the
    heuristics do not pack x's panel (their guess of what pays), the tuner is offered the tile
    with it packed (it measured 1.24x faster on a Zen 3 at 2048 x 512 x 128), and that schedule
    computes the same values."""
    n, m, k = shape
    rng = np.random.default_rng(2)
    g, x = rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    out = _matmul_kernel(lt.asarray(g).T @ lt.asarray(x))
    spec = _reduction_of(out, AVX512)
    expr = collapse_axes(spec.expr)
    from lazytensor.scheduler.schedule import alternative_schedules, cpu_schedule
    host = runtime("cpu").device.target
    assert not any(isinstance(p, CacheRead) for p in cpu_schedule(expr, AVX512))
    packed = [s for s in alternative_schedules(expr, AVX512) if any(isinstance(p, CacheRead) for p in s)]
    assert len(packed) == 1 and packed[0] == cpu_schedule(expr, AVX512, pack_panels=True)
    for schedule in alternative_schedules(expr, host):   # (on this host: run, and right)
        got = run_with_schedule(out, schedule).reshape(m, k)
        np.testing.assert_allclose(got, g.T.astype(np.float64) @ x, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("cols", [64, 37, 1], ids=str)
def test_a_wide_value_broadcast_along_the_row_keeps_the_rows_vectors_wide(cols):
    """A float64 value the same along the vectorized axis (a row's sum, broadcast: softmax's
    gradient) is computed once per vector: float32 math around it vectorizes 8 lanes on AVX2
    (32 bytes), not 4; what varies along the row in float64 still sets the width."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((48, cols)).astype(np.float32)
    row = rng.uniform(1, 2, (48, 1))              # float64
    lx, lrow = lt.asarray(x), lt.asarray(row)
    out = (lx / lrow.astype(np.float32)).exp() * 0.5
    (spec,) = kernels_of(out)
    if cols > 1:
        assert Vectorize("i1", 8) in schedule_of(spec, AVX2)
        (wide,) = kernels_of(lx.astype(np.float64) * lrow)
        assert Vectorize("i1", 4) in schedule_of(wide, AVX2)
    np.testing.assert_allclose(out.numpy(), np.exp(x / row.astype(np.float32)) * 0.5, rtol=1e-6)


@pytest.mark.parametrize("extent, unroll, want", [
    (58, 4, 1),     # 32 vectorized + 26 scalar with 4; 56 + 2 with 1
    (56, 4, 1),
    (64, 4, 4), (1024, 4, 4), (1000, 4, 4), (100, 4, 4),
    (40, 4, 1), (48, 4, 3), (17, 2, 2),
])
def test_a_vectorized_loops_interleave_leaves_a_short_scalar_tail(extent, unroll, want):
    """LLVM runs a vectorized loop in steps of width x interleave and the rest one element at a
    time: the interleave count is cut where the schedule's would leave more than an eighth of a
    loop of known extent (and more than a vector's worth) to that scalar tail."""
    from lazytensor.backends.cpu.render import _interleave
    from lazytensor.ir import loop
    f = loop.For(loop.Var("i"), loop.const(0), loop.const(extent), (), loop.LoopKind.VECTORIZED, 8, unroll)
    assert _interleave(f) == want
    assert _interleave(dataclasses.replace(f, stop=loop.Var("end"))) == unroll   # (extent unknown)


def test_a_padded_read_is_one_select_on_its_condition(monkeypatch):
    """A padded read fused into a kernel is `where(valid, buf[where(valid, i, 0)], 0)`, never
    that again inside a select on the same condition (the renderer then did not see the guarded
    load, and a vectorized loop read it through a select on its index)."""
    from lazytensor.ir import loop
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 10, 12)).astype(np.float32)
    coef = rng.standard_normal((6, 4)).astype(np.float32)
    xp = lt.asarray(x).pad(((0, 0), (0, 0), (1, 1), (1, 1)))
    i = lt.reduce_axis(4)
    out = lt.compute((3, 6, 4, 3, 14), lambda n, a, c, y, z: lt.sum(lt.asarray(coef)[a, i] * xp[n, c, 3 * y + i, z], axis=i))
    (spec,) = kernels_of(out)
    from lazytensor.scheduler import lower
    monkeypatch.setattr(lower, "partition_conditions", lambda kernel: kernel)   # (it decides the selects)
    _, _, kernel = pipeline.loops(spec, runtime("cpu").device.target)
    monkeypatch.undo()
    exprs = [e for s in loop.walk(kernel.body) for f in dataclasses.fields(s)
             if isinstance(getattr(s, f.name), (loop.Alu, loop.Load)) for e in loop.postorder(getattr(s, f.name))]
    assert any(isinstance(e, loop.Alu) and e.op is Op.WHERE for e in exprs)
    nested = [e for e in exprs if isinstance(e, loop.Alu) and e.op is Op.WHERE and
              any(isinstance(s, loop.Alu) and s.op is Op.WHERE and s.srcs[0] == e.srcs[0] for s in e.srcs[1:])]
    assert not nested
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    rows = np.stack([padded[:, :, 3 * y:3 * y + 4, :] for y in range(3)], axis=2)   # (n, c, y, i, z)
    np.testing.assert_allclose(out.numpy(), np.einsum("ai,ncyiz->nacyz", coef, rows), rtol=1e-5, atol=1e-5)


def test_a_register_tile_of_one_block_of_rows_still_runs_in_parallel():
    """A tile whose rows are the whole row axis (4 output rows of a 6-term transform) leaves its
    row blocks' loop one iteration long: the outer loops are fused into one parallel loop
    instead (the kernel ran on one thread, 4.4 ms for 0.57)."""
    rng = np.random.default_rng(6)
    m = rng.standard_normal((4, 6, 16, 7, 56)).astype(np.float32)
    coef = rng.standard_normal((4, 6)).astype(np.float32)
    j = lt.reduce_axis(6)
    M, A = lt.asarray(m), lt.asarray(coef)
    out = lt.compute((4, 16, 7, 4, 56), lambda n, k, y, u, x: lt.sum(A[u, j] * M[n, j, k, y, x], axis=j))
    (spec,) = kernels_of(out)
    assert any(isinstance(p, Parallel) for p in schedule_of(spec))
    np.testing.assert_allclose(out.numpy(), np.einsum("uj,njkyx->nkyux", coef, m), rtol=1e-5, atol=1e-5)


def test_a_short_sum_over_a_short_output_axis_takes_no_tile():
    """Winograd's weight transform, U[a, k, c, j] = sum over 3 terms of G[a, h] w[k, c, h, j]:
    a CacheWrite tile of its 6 terms (under a vector) is zeroed and stored for every 3-term
    sum, 0.2 ms against 0.015 as plain loops; it takes none. Values as numpy's."""
    rng = np.random.default_rng(8)
    w, g = rng.standard_normal((64, 32, 3, 3)).astype(np.float32), rng.standard_normal((6, 3)).astype(np.float32)
    out = contract(lt.asarray(w).permute(0, 1, 3, 2).reshape(1, 64, 32, 3, 3), lt.asarray(g).reshape(6, 1, 1, 1, 3), 4)
    (spec,) = kernels_of(out)
    assert not any(isinstance(p, CacheWrite) for p in schedule_of(spec))
    np.testing.assert_allclose(out.numpy()[..., 0], np.einsum("ah,kchj->akcj", g, w), rtol=1e-5, atol=1e-5)


def test_a_reduction_read_through_merged_tile_rows_runs_over_the_tiles():
    """A sum whose inputs are read through a merged view, rows 4t + u of (t, u): split_axes runs
    the kernel over (t, u), where every read is affine. (Its check compared the reads, made in
    the sum's own index space, with the kernel's shape, where the summed axis is 1: no reduction
    kernel was ever split, and Winograd's output transform read its input with a division per
    element: 8.7 ms for 0.3.) Values as numpy's."""
    from lazytensor.scheduler.collapse import split_axes
    rng = np.random.default_rng(9)
    m, coef = rng.standard_normal((2, 6, 3, 5, 7)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    spread, merged = (2, 6, 3, 5, 4, 7), (2, 6, 3, 20, 7)
    terms = lt.asarray(m).reshape(2, 6, 3, 5, 1, 7).expand(spread).reshape(merged)
    weights = lt.asarray(coef).T.reshape(1, 6, 1, 1, 4, 1).expand(spread).reshape(merged)
    out = (terms * weights).sum(axis=1)
    (spec,) = kernels_of(out)
    assert len(split_axes(spec.expr).shape) > len(spec.expr.shape)
    want = np.einsum("ua,nakty->nktuy", coef, m).reshape(2, 3, 20, 7)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
