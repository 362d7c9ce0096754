"""The cpu's schedules on OpenCL (scheduler/schedule.py work_item_schedule): where an OpenCL device's
work-items have SIMD lanes of their own (PoCL: a cpu), the tuner also tries the cpu's schedule,
each parallel iteration a block of one work-item whose vectorized loops clang vectorizes (a
pragma; a reduction's update in its own scope that may be regrouped). Each kernel of a
computation is given that schedule (remembered, as tuning would) and the values are checked
against numpy."""
import numpy as np
import pytest

import lazytensor as lt
from lazytensor import pipeline, tuned
from lazytensor.backends import cstyle
from lazytensor.devices import runtime
from lazytensor.scheduler.collapse import collapse_axes
from lazytensor.scheduler.schedule import Bind, alternative_schedules, gpu_schedule, work_item_schedule

from conftest import assert_close, own_cache
from test_gpu_schedule import TARGETS, needs_opencl

DEVICE = "opencl:0"


@pytest.fixture
def rt(tmp_path):
    """The OpenCL runtime with a kernel cache (and so a tuning store) of its own."""
    with own_cache(DEVICE, tmp_path) as rt:
        yield rt


def _array(rng, shape, dtype=np.float32):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _max_with_nan_and_zeros(rng):
    x = _array(rng, (9, 301))
    x[2, 17] = np.nan
    x[4] = -0.0
    x[4, 100] = 0.0
    return [x]


# name -> (inputs, lazytensor's computation, numpy's)
CASES = {
    "row sums": (lambda r: [_array(r, (37, 300))], lambda x: x.sum(axis=1), lambda x: x.sum(axis=1)),
    "long row sums": (lambda r: [_array(r, (5, 4097))], lambda x: x.sum(axis=1), lambda x: x.sum(axis=1)),
    "float64 row sums": (lambda r: [_array(r, (13, 999), np.float64)], lambda x: x.sum(axis=1), lambda x: x.sum(axis=1)),
    "float16 row sums": (lambda r: [_array(r, (6, 70), np.float16)], lambda x: x.sum(axis=1), lambda x: x.sum(axis=1)),
    "int32 column sums": (lambda r: [_array(r, (31, 17), np.int32)], lambda x: x.sum(axis=0), lambda x: x.sum(axis=0)),
    "max with nan and zeros": (_max_with_nan_and_zeros, lambda x: x.max(axis=1), lambda x: x.max(axis=1)),
    "softmax": (lambda r: [_array(r, (33, 129))], lambda x: lt.exp(x - x.max(axis=1, keepdims=True)) /
                lt.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True), _softmax),
    "elementwise 1-d": (lambda r: [_array(r, (5003,))], lambda x: x * 2 + lt.sin(x), lambda x: x * 2 + np.sin(x)),
    "broadcast 2-d": (lambda r: [_array(r, (19, 1)), _array(r, (1, 23))], lambda a, b: lt.exp(a - b) * a,
                      lambda a, b: np.exp(a - b) * a),
    "one element": (lambda r: [_array(r, (1, 1))], lambda x: x.sum(axis=1), lambda x: x.sum(axis=1)),
    "reversed rows": (lambda r: [_array(r, (11, 77))], lambda x: x[::-1, ::-1].sum(axis=1),
                      lambda x: x[::-1, ::-1].sum(axis=1)),
    "matmul": (lambda r: [_array(r, (67, 45)), _array(r, (45, 33))], lambda a, b: a @ b, lambda a, b: a @ b),
}


def _remember_work_item_schedules(result: lt.Tensor, rt) -> int:
    """Remember the cpu-style schedule for each kernel of `result`; how many kernels."""
    kernels = pipeline.kernels([result.node], rt.device.target).kernels
    for kernel in kernels:
        tuned.remember(kernel.expr, rt, work_item_schedule(collapse_axes(kernel.expr), rt.device.target), 1e-3, 2e-3, 1)
    return len(kernels)


@needs_opencl
@pytest.mark.parametrize("name", list(CASES))
def test_work_item_schedules_compute_numpys_values(rt, name):
    make, fn, reference = CASES[name]
    arrays = make(np.random.default_rng(len(name)))
    kernels = _remember_work_item_schedules(fn(*[lt.asarray(a, device=DEVICE) for a in arrays]), rt)
    before = rt.stats.tuned_kernels
    got = fn(*[lt.asarray(a, device=DEVICE) for a in arrays])
    assert_close(got.numpy(), reference(*arrays))
    assert rt.stats.tuned_kernels - before == kernels


@needs_opencl
def test_a_vectorized_loop_asks_clang_and_regroups_only_the_update():
    x = lt.asarray(np.ones((8, 256), np.float32), device=DEVICE)
    target = runtime(DEVICE).device.target
    (kernel,) = pipeline.kernels([x.sum(axis=1).node], target).kernels
    expr = collapse_axes(kernel.expr)
    _, _, lowered = pipeline.loops(kernel, target, work_item_schedule(expr, target))
    source = cstyle.render(lowered, cstyle.OPENCL)
    assert "#pragma clang loop vectorize_width(" in source
    assert '#pragma clang diagnostic ignored "-Wpass-failed"' in source
    # the pragma is the first line of a scope holding the update alone
    lines = source.splitlines()
    at = lines.index(cstyle.OPENCL.reassociate)
    assert lines[at - 1].strip() == "{" and lines[at + 2].strip() == "}" and "=" in lines[at + 1]
    # the gpu schedule's source and CUDA's have no pragma
    _, _, gpu = pipeline.loops(kernel, target, gpu_schedule(expr, target))
    assert "#pragma clang" not in cstyle.render(gpu, cstyle.OPENCL)
    assert "#pragma clang" not in cstyle.render(lowered, cstyle.CUDA)


@needs_opencl
def test_the_tuner_is_offered_work_item_schedules_where_work_items_have_vectors():
    x = lt.asarray(np.ones((1024, 512), np.float32), device=DEVICE)
    target = runtime(DEVICE).device.target
    expr = collapse_axes(pipeline.kernels([x.sum(axis=1).node], target).kernels[0].expr)
    offered = alternative_schedules(expr, target)
    assert (work_item_schedule(expr, target) in offered) == (target.simd_bytes >= 16)
    assert any(isinstance(p, Bind) for p in work_item_schedule(expr, target))   # (enough work to share)
    for gpu in TARGETS.values():   # a gpu's work-items have no vectors of their own
        assert all(s != work_item_schedule(expr, gpu) for s in alternative_schedules(expr, gpu))
