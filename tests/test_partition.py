"""Loop partitioning on index conditions (scheduler/partition.py): a loop that tests its index
against constants runs in pieces with the tests decided. The pieces must compute what the loop
did (checked by running both on a small evaluator, and end to end against numpy), and the pad
of a convolution's input must lose its bounds checks where they always hold."""
import numpy as np
import pytest

import lazytensor as lt
from lazytensor import pipeline
from lazytensor.devices import runtime
from lazytensor.ir import loop
from lazytensor.ir.dtypes import bool_, int64
from lazytensor.ir.loop import Alu, Const, For, If, LoopKind, Store, Var
from lazytensor.ir.ops import Op
from lazytensor.scheduler.partition import COPIES, partition_conditions

from conftest import contract, has_fp64


# ---- a small evaluator of loop IR, for these statements and expressions -----------------------

def _value(e, env):
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    s = [_value(x, env) for x in e.srcs]
    return {Op.ADD: lambda: s[0] + s[1], Op.MUL: lambda: s[0] * s[1], Op.CMPLT: lambda: s[0] < s[1],
            Op.AND: lambda: s[0] and s[1], Op.OR: lambda: s[0] or s[1], Op.NOT: lambda: not s[0],
            Op.WHERE: lambda: s[1] if s[0] else s[2]}[e.op]()


def _run(stmts, env, out):
    for s in stmts:
        if isinstance(s, For):
            for i in range(_value(s.start, env), _value(s.stop, env)):
                _run(s.body, {**env, s.var.name: i}, out)
        elif isinstance(s, If):
            if _value(s.cond, env):
                _run(s.body, env, out)
        else:
            out.append((_value(s.index, env), _value(s.value, env)))


def _affine(rng, var):
    a, b = int(rng.integers(-3, 4)), int(rng.integers(-12, 13))
    return loop.add(loop.mul(var, loop.const(a)), loop.const(b))


def test_pieces_compute_what_the_loop_did():
    rng = np.random.default_rng(0)
    i, j = Var("i"), Var("j")
    partitioned = 0
    for trial in range(300):
        tests = []
        for _ in range(int(rng.integers(1, 4))):
            var = i if rng.random() < 0.5 else j
            left, right = (_affine(rng, var), loop.const(int(rng.integers(-8, 9))))
            tests.append(loop.less(left, right) if rng.random() < 0.5 else loop.less(right, left))
        cond = tests[0]
        for t in tests[1:]:
            cond = Alu(Op.AND if rng.random() < 0.7 else Op.OR, (cond, t), bool_)
        if rng.random() < 0.3:
            cond = Alu(Op.NOT, (cond,), bool_)
        value = Alu(Op.WHERE, (cond, loop.add(loop.mul(i, loop.const(10)), j), loop.const(-1)), int64)
        store = Store(0, loop.add(loop.mul(i, loop.const(100)), j), value)
        body = (store,) if rng.random() < 0.7 else (If(tests[-1], (store,)),)
        start, stop = int(rng.integers(-3, 4)), int(rng.integers(4, 12))
        inner = For(j, loop.const(start), loop.const(stop), body, LoopKind.VECTORIZED, 8)
        kernel = loop.Kernel("k", (), (For(i, loop.const(0), loop.const(int(rng.integers(1, 9))), (inner,)),))
        want, got = [], []
        _run(kernel.body, {}, want)
        after = partition_conditions(kernel)
        _run(after.body, {}, got)
        assert sorted(got) == sorted(want), trial
        partitioned += after is not kernel
        loops = sum(isinstance(s, For) for s in loop.walk(after.body))
        assert loops <= 1 + COPIES
    assert partitioned > 100   # (most draws have a test that flips inside the loop)


def test_a_vectorized_loop_selecting_on_an_outer_condition_runs_twice_under_if():
    """A condition the vectorized loop's iterations share (a padded row: the row index is an
    outer loop's) is decided once outside it: the loop under `if c` with plain values and under
    `if not c` with the others; stores as before, for every value of the outer index."""
    i, k, j = Var("i"), Var("k"), Var("j")
    row = loop.add(loop.add(loop.mul(i, loop.const(4)), k), loop.const(-1))   # (two loops' indices: no piece decides it)
    cond = Alu(Op.AND, (loop.less(loop.const(-1), row), loop.less(row, loop.const(9))), bool_)
    value = Alu(Op.WHERE, (cond, loop.add(loop.mul(row, loop.const(10)), j), loop.const(-1)), int64)
    at = loop.add(loop.add(loop.mul(i, loop.const(1000)), loop.mul(k, loop.const(100))), j)
    inner = For(j, loop.const(0), loop.const(16), (Store(0, at, value),), LoopKind.VECTORIZED, 8)
    kernel = loop.Kernel("k", (), (For(i, loop.const(0), loop.const(3), (For(k, loop.const(0), loop.const(6), (inner,)),)),))
    after = partition_conditions(kernel)
    ifs = [s for s in loop.walk(after.body) if isinstance(s, If)]
    assert len(ifs) == 2 and all(isinstance(s.body[0], For) and s.body[0].kind is LoopKind.VECTORIZED for s in ifs)
    assert not any(isinstance(e, Alu) and e.op is Op.WHERE for s in loop.walk(after.body)
                   for root in loop.expressions(s) for e in loop.postorder(root))
    want, got = [], []
    _run(kernel.body, {}, want)
    _run(after.body, {}, got)
    assert sorted(got) == sorted(want)


def test_a_padded_row_read_in_a_reduction_loads_plain_vectors():
    """Rows of a padded input read by a sum, 4 apart (Winograd's input transform): the row's
    bounds test is decided outside the vectorized loop (the loop ran 3x its unpadded time with
    masked loads). Values as numpy's."""
    rng = np.random.default_rng(4)
    x, coef = rng.standard_normal((2, 3, 9, 13)).astype(np.float32), rng.standard_normal((6, 6)).astype(np.float32)
    from lazytensor.movement import sliding_windows
    xp = lt.asarray(x).pad(((0, 0), (0, 0), (1, 4), (1, 1)))          # rows 14 = 4 * 3 + 2
    taps = sliding_windows(xp, (6, 1), (4, 1), (1, 1)).reshape(2, 1, 3, 3, 15, 6)
    out = contract(taps, lt.asarray(coef).reshape(1, 6, 1, 1, 1, 6), 5)
    rt = runtime("cpu")
    (spec,) = [k for k in pipeline.kernels([out.node], rt.device.target).kernels if k.expr.op is not Op.PAD][-1:]
    lowered = pipeline.loops(spec, rt.device.target)[2]
    guarded = [s for s in loop.walk(lowered.body) if isinstance(s, If)]
    assert guarded and all(isinstance(s.body[0], For) for s in guarded)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 4), (1, 1)))
    rows = np.stack([padded[:, :, 4 * t:4 * t + 6] for t in range(3)], axis=2)          # (n, c, t, i, X)
    want = np.einsum("ai,nctix->nactx", coef, rows)
    np.testing.assert_allclose(out.numpy()[..., 0], want, rtol=1e-5, atol=1e-5)


def test_loops_run_on_threads_or_with_unknown_bounds_are_kept():
    i = Var("i")
    test = loop.less(loop.const(2), i)
    store = Store(0, i, Alu(Op.WHERE, (test, loop.const(1), loop.const(0)), int64))
    for kind, stop in ((LoopKind.PARALLEL, loop.const(9)), (LoopKind.THREAD, loop.const(9)),
                       (LoopKind.SERIAL, Var("n"))):
        kernel = loop.Kernel("k", (), (For(i, loop.const(0), stop, (store,), kind),))
        assert partition_conditions(kernel) is kernel


# ---- end to end ----------------------------------------------------------------------------------

def _pad_kernel(x, widths):
    y = x.pad(widths)
    rt = runtime("cpu")
    spec = pipeline.kernels([y.node], rt.device.target).kernels[0]
    return pipeline.loops(spec, rt.device.target)[2]


def test_a_convolutions_pad_copies_its_interior_without_tests():
    x = lt.asarray(np.ones((8, 32, 56, 56), np.float32))
    lowered = _pad_kernel(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    stores = [s for s in loop.walk(lowered.body) if isinstance(s, Store)]
    plain = [s for s in stores if not any(isinstance(e, Alu) and e.op is Op.WHERE for e in loop.postorder(s.value))]
    zeros = [s for s in stores if isinstance(s.value, Const)]
    assert len(plain) == len(stores) and len(zeros) == len(stores) - 1   # one copy, the rest zeros


def test_a_concatenation_along_the_inner_axis_copies_each_piece_without_tests():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((64, n)).astype(np.float32) for n in (100, 3, 57, 40)]
    y = lt.concat([lt.asarray(a) for a in arrays], axis=1)
    rt = runtime("cpu")
    (spec,) = pipeline.kernels([y.node], rt.device.target).kernels
    lowered = pipeline.loops(spec, rt.device.target)[2]
    stores = [s for s in loop.walk(lowered.body) if isinstance(s, Store)]
    assert len(stores) == 4 and all(isinstance(s.value, loop.Load) for s in stores)
    np.testing.assert_array_equal(y.numpy(), np.concatenate(arrays, axis=1))


DTYPES = ["float32", "float64", "int32", "uint8", "bool", "int64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_pads_flips_and_concatenations_match_numpy(device, dtype):
    if dtype == "float64" and not has_fp64(device):
        pytest.skip(f"{device} has no float64")
    rng = np.random.default_rng(DTYPES.index(dtype))
    for _ in range(6):
        shape = tuple(int(n) for n in rng.choice([0, 1, 2, 3, 5, 17], size=int(rng.integers(1, 4))))
        a = (rng.standard_normal(shape) * 10).astype(dtype)
        b = (rng.standard_normal(shape) * 10).astype(dtype)
        widths = tuple((int(rng.integers(0, 3)), int(rng.integers(0, 4))) for _ in shape)
        x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
        want = np.pad(a, widths)
        np.testing.assert_array_equal(x.pad(widths).numpy(), want)
        np.testing.assert_array_equal(x.pad(widths)[..., ::-1].numpy(), want[..., ::-1])
        np.testing.assert_array_equal((x.pad(widths) * 2).numpy(), want * 2)
        axis = int(rng.integers(0, len(shape)))
        np.testing.assert_array_equal(lt.concat([x, y, x[::-1]], axis=axis).numpy(),
                                      np.concatenate([a, b, a[::-1]], axis=axis))
