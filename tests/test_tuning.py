"""The autotuner's core (lazytensor/tuning.py): candidates around the heuristic schedule, each
measured and checked against the heuristic schedule's output."""
import numpy as np
import pytest

import lazytensor as lt
from lazytensor.ir.loop_print import format_kernel
from lazytensor import pipeline, tuning
from lazytensor.devices import runtime
from lazytensor.scheduler.schedule import Unroll, reductions, terms_per_output


def _kernel(tensor, device):
    """The kernel that computes `tensor` (the last of its kernels: a softmax on a gpu target is
    several; the earlier ones' results are its inputs)."""
    rt = runtime(device)
    return pipeline.kernels([tensor.node], rt.device.target).kernels[-1], rt


def _workloads(device):
    rng = np.random.default_rng(0)
    a = lt.asarray(rng.standard_normal((67, 45)).astype(np.float32), device=device)
    b = lt.asarray(rng.standard_normal((45, 33)).astype(np.float32), device=device)
    v = lt.asarray(rng.standard_normal(5003).astype(np.float32), device=device)
    i = lt.asarray(rng.integers(-9, 9, (31, 17)), device=device)
    return {"elementwise": v * 2 + lt.sin(v), "row sums": a.sum(axis=1), "matmul": a @ b,
            "softmax": lt.exp(a - a.max(axis=1, keepdims=True)) / lt.exp(a - a.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True),
            "int sums": i.sum(axis=0)}


@pytest.mark.parametrize("name", ["elementwise", "row sums", "matmul", "softmax", "int sums"])
def test_candidates_lower_and_start_with_the_heuristic_schedule(device, name):
    kernel, rt = _kernel(_workloads(device)[name], device)
    found = tuning.candidates(kernel, rt.device.target, limit=12)
    _, heuristic, _ = pipeline.loops(kernel, rt.device.target)
    assert found[0] == heuristic
    assert len(set(found)) == len(found)
    programs = [format_kernel(pipeline.loops(kernel, rt.device.target, schedule)[2]) for schedule in found]
    assert len(set(programs)) == len(programs)   # (each lowers, to loops of its own: none measured twice)


@pytest.mark.parametrize("name", ["elementwise", "row sums", "matmul", "softmax", "int sums"])
def test_tuned_schedule_is_no_slower_and_computes_the_same_values(device, name):
    kernel, rt = _kernel(_workloads(device)[name], device)
    tuned = tuning.tune_kernel(kernel, rt, trials=6, runs=2)
    assert tuned.best_seconds <= tuned.heuristic_seconds
    assert 1 < tuned.trials <= 6 and tuned.failed == 0
    assert not tuned.rejected
    inputs = tuning.random_inputs(kernel, rt)
    best = tuning.measure(kernel, rt, pipeline.compile_kernel(kernel, rt, tuned.best), inputs, runs=1).output
    heuristic = tuning.measure(kernel, rt, pipeline.compile_kernel(kernel, rt, tuned.heuristic), inputs, runs=1).output
    assert tuning.same_output(best, heuristic, terms_per_output(reductions(kernel.expr)))


def test_same_output_rejects_what_differs():
    want = np.array([1.0, np.nan, np.inf, -2.0], np.float32)
    assert tuning.same_output(want.copy(), want)
    assert tuning.same_output(want + np.array([1e-7, 0, 0, 0], np.float32), want, terms=4)
    assert not tuning.same_output(want + np.array([1e-3, 0, 0, 0], np.float32), want, terms=4)
    assert not tuning.same_output(np.array([1.0, 0.0, np.inf, -2.0], np.float32), want)     # nan lost
    assert not tuning.same_output(np.array([1.0, np.nan, -np.inf, -2.0], np.float32), want)  # inf's sign
    assert not tuning.same_output(want.astype(np.float64), want)
    assert tuning.same_output(np.arange(4), np.arange(4))
    assert not tuning.same_output(np.arange(4) + (np.arange(4) == 3), np.arange(4))


def test_a_candidate_that_differs_is_rejected():
    v = lt.asarray(np.linspace(-1, 1, 4096, dtype=np.float32))
    kernel, rt = _kernel(v * 3 + 1, "cpu")
    calls = []

    def wrong_after_the_first(kernel, rt, compiled, inputs, runs=5):
        calls.append(compiled)
        result = tuning.measure(kernel, rt, compiled, inputs, runs)
        if len(calls) > 1:   # every candidate but the heuristic one computes a wrong value
            return tuning.Measured(0.0, result.output + 1)
        return result
    tuned = tuning.tune_kernel(kernel, rt, trials=4, runs=1, measure=wrong_after_the_first)
    assert tuned.best == tuned.heuristic and tuned.best_seconds == tuned.heuristic_seconds
    assert len(tuned.rejected) == tuned.trials - 1 >= 1


def test_the_cost_model_learns_which_factor_is_faster():
    model = tuning.CostModel()
    for factor in (1, 2, 4, 8, 16):   # (time halves as the unroll factor doubles)
        model.add((Unroll("i0", factor),), 1.0 / factor)
    ranked = model.rank([(Unroll("i0", 2),), (Unroll("i0", 32),), (Unroll("i0", 4),)])
    assert ranked == [(Unroll("i0", 32),), (Unroll("i0", 4),), (Unroll("i0", 2),)]


def test_a_register_tiles_rows_change_with_their_unroll():
    """A split whose inner loop a register tile unrolls in full (its rows) has neighbours with
    one or two rows more or fewer, or twice or half as many, the unroll changed with it (a tile
    of 6 rows, not a power of two and not dividing 1024, ran matmul 1024 2% faster than 4 on a
    Zen 3); a plain split only doubles or halves."""
    from lazytensor.scheduler.schedule import CacheWrite, Split, Unroll
    tile = (Split("i0", 4), CacheWrite("i0_i"), Unroll("i0_i", 4), Split("i2", 16))
    found = [n for n in tuning.neighbours(tile) if len(n) == len(tile)]
    assert sorted(n[0].factor for n in found if n[0] != tile[0]) == [2, 3, 5, 6, 8]
    assert all(n[2] == Unroll("i0_i", n[0].factor) for n in found if n[0] != tile[0])
    assert sorted(n[3].factor for n in found if n[3] != tile[3]) == [8, 32]


def test_the_reduction_loops_order_is_in_the_search_space():
    """A schedule that leaves a kernel's reduction loops in their default order has every other
    order of them as neighbours (none where it orders them itself, or with one loop); the
    names are those of the kernel's own reduction loops."""
    from lazytensor.scheduler.schedule import Reorder, Split
    base = (Split("i0", 4),)
    found = [n for n in tuning.neighbours(base, ("r0_1", "r0_2", "r0_3")) if isinstance(n[-1], Reorder)]
    assert len(found) == 5 and all(n[:-1] == base and sorted(n[-1].axes) == ["r0_1", "r0_2", "r0_3"] for n in found)
    ordered = base + (Reorder(("r0_2", "r0_1")),)
    assert not [n for n in tuning.neighbours(ordered, ("r0_1", "r0_2")) if len(n) > len(ordered)]
    assert not [n for n in tuning.neighbours(base, ("r0_1",)) if len(n) > len(base)]
    rng = np.random.default_rng(2)
    x, w = (lt.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((2, 8, 10, 10), (4, 8, 3, 3)))
    kernel = pipeline.kernels([lt.nn.functional.conv2d(x, w).node], runtime("cpu").device.target).kernels[-1]
    expr, _, _ = pipeline.loops(kernel, runtime("cpu").device.target)
    assert len(tuning.reduction_loops(expr)) == 3
    assert any(isinstance(s[-1], Reorder) and set(s[-1].axes) == set(tuning.reduction_loops(expr))
               for s in tuning.candidates(kernel, runtime("cpu").device.target, limit=64))
