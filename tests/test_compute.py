"""lt.compute (issue 24): operators written as index formulas, against numpy on random inputs
(odd shapes, size-1 and zero-size axes, every dtype the formula allows, every device), their
gradients against finite differences, the errors at the call that caused them, and the kernels
they make (as few as the built-in ops make)."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array
from gradcheck import check_gradient


def launches(f) -> int:
    """Kernels one call of `f` launches (after a first call compiled them)."""
    f()
    before = lt.stats()["kernels_launched"]
    f()
    return lt.stats()["kernels_launched"] - before


@pytest.mark.parametrize("m,k,n", [(5, 7, 3), (1, 1, 1), (4, 0, 2), (0, 3, 2), (33, 17, 65)], ids=str)
def test_matmul(device, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    A, B = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    a, b = lt.asarray(A, device=device), lt.asarray(B, device=device)
    r = lt.reduce_axis(k)
    c = lt.compute((m, n), lambda i, j: lt.sum(a[i, r] * b[r, j], axis=r))
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_elementwise_formulas_of_every_dtype(device, dtype):
    """Transposes, steps, flips, constants and index values, as numpy's slicing gives them."""
    rng = np.random.default_rng(1)
    A = random_array(rng, (6, 9), dtype)
    a = lt.asarray(A, device=device)
    assert_close(lt.compute((9, 6), lambda i, j: a[j, i]).numpy(), A.T)
    assert_close(lt.compute((3, 4), lambda i, j: a[2 * i, 8 - 2 * j]).numpy(), A[0:6:2, 8::-2][:, :4])
    assert_close(lt.compute((5,), lambda i: a[3, i + 2]).numpy(), A[3, 2:7])
    assert_close(lt.compute((6, 9), lambda i, j: lt.where(i < j, a[i, j], a[i, 8 - j])).numpy(),
                 np.where(np.arange(6)[:, None] < np.arange(9), A, A[:, ::-1]))
    np.testing.assert_array_equal(lt.compute((3, 4), lambda i, j: i * 10 - j).numpy(),
                                  np.arange(3)[:, None] * 10 - np.arange(4))


def test_unused_axes_broadcast_and_numbers_fill():
    x = np.arange(4.0, dtype=np.float32)
    out = lt.compute((3, 4), lambda i, j: lt.asarray(x)[j] * 2)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x * 2, (3, 4)))
    np.testing.assert_array_equal(lt.compute((2, 2), lambda i, j: 7).numpy(), np.full((2, 2), 7))
    assert lt.compute((0, 3), lambda i, j: lt.asarray(x)[j]).shape == (0, 3)


@pytest.mark.parametrize("stride,pad,dilation", [(1, 1, 1), (2, 1, 1), (1, 0, 2), (3, 2, 1)], ids=str)
def test_conv2d_with_stride_padding_dilation(device, stride, pad, dilation):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(stride * 10 + pad)
    X = rng.standard_normal((2, 3, 11, 9)).astype(np.float32)
    W = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    xp = lt.asarray(X, device=device).pad(((0, 0), (0, 0), (pad, pad), (pad, pad)))
    w = lt.asarray(W, device=device)
    oh = (11 + 2 * pad - dilation * 2 - 1) // stride + 1
    ow = (9 + 2 * pad - dilation * 1 - 1) // stride + 1
    rc, ry, rx = lt.reduce_axis(3), lt.reduce_axis(3), lt.reduce_axis(2)
    out = lt.compute((2, 4, oh, ow), lambda n, f, y, x: lt.sum(
        xp[n, rc, y * stride + ry * dilation, x * stride + rx * dilation] * w[f, rc, ry, rx], axis=(rc, ry, rx)))
    want = torch.nn.functional.conv2d(torch.from_numpy(X), torch.from_numpy(W), stride=stride, padding=pad,
                                      dilation=dilation).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_max_min_and_integer_sums():
    rng = np.random.default_rng(2)
    A = rng.integers(-50, 50, (7, 5)).astype(np.int32)
    a = lt.asarray(A)
    r = lt.reduce_axis(5)
    np.testing.assert_array_equal(lt.compute((7,), lambda i: lt.max(a[i, r], axis=r)).numpy(), A.max(1))
    np.testing.assert_array_equal(lt.compute((7,), lambda i: lt.min(a[i, r], axis=r)).numpy(), A.min(1))
    total = lt.compute((7,), lambda i: lt.sum(a[i, r], axis=r))
    np.testing.assert_array_equal(total.numpy(), A.sum(1))   # (numpy's: int32 sums to int64)
    assert total.dtype == lt.int64


def test_a_reduction_over_an_axis_the_value_does_not_use_counts_each_step():
    """sum over k of x[i] is extent(k) * x[i] (TVM's meaning), not x[i]: a value broadcast along
    a reduce axis is spread to its extent before reducing."""
    X = np.array([1.0, -2.0, 3.0], np.float32)
    x = lt.asarray(X)
    k = lt.reduce_axis(4)
    np.testing.assert_array_equal(lt.compute((3,), lambda i: lt.sum(x[i] * 2, axis=k)).numpy(), X * 8)
    np.testing.assert_array_equal(lt.compute((3,), lambda i: lt.prod(x[i], axis=k)).numpy(), X ** 4)
    np.testing.assert_array_equal(lt.compute((3,), lambda i: lt.max(x[i], axis=k)).numpy(), X)


def test_a_float16_sum_accumulates_in_float32():
    A = np.full((1, 3000), 1.0, np.float16)
    r = lt.reduce_axis(3000)
    got = lt.compute((1,), lambda i: lt.sum(lt.asarray(A)[i, r] * 1.0, axis=r))
    assert got.dtype == lt.float16 and got.numpy()[0] == np.float16(3000)   # (2048 + 1 = 2048 in float16)


def test_softmax_in_three_stages_is_one_kernel_as_the_built_in():
    rng = np.random.default_rng(3)
    S = rng.standard_normal((64, 37)).astype(np.float32)
    s = lt.asarray(S)

    def softmax():
        r, r2 = lt.reduce_axis(37), lt.reduce_axis(37)
        top = lt.compute((64,), lambda i: lt.max(s[i, r], axis=r))
        e = lt.compute((64, 37), lambda i, j: lt.exp(s[i, j] - top[i]))
        total = lt.compute((64,), lambda i: lt.sum(e[i, r2], axis=r2))
        return lt.compute((64, 37), lambda i, j: e[i, j] / total[i]).realize()
    want = np.exp(S - S.max(1, keepdims=True))
    np.testing.assert_allclose(softmax().numpy(), want / want.sum(1, keepdims=True), rtol=1e-6, atol=1e-7)
    assert launches(softmax) == launches(lambda: lt.nn.functional.softmax(s, dim=1).realize()) == 1


def test_a_stencil_fuses_with_its_prologue_and_epilogue():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 33)).astype(np.float32)
    x = lt.asarray(X)

    def blurred():
        xp = (x * 0.5 + 1.0).pad(((1, 1), (1, 1)))
        horizontal = lt.compute((42, 33), lambda i, j: xp[i, j] + xp[i, j + 1] + xp[i, j + 2])
        box = lt.compute((40, 33), lambda i, j: (horizontal[i, j] + horizontal[i + 1, j] + horizontal[i + 2, j]) / 9)
        return lt.maximum(box - 0.5, 0.0).realize()
    xp = np.pad(X * 0.5 + 1.0, 1)
    h = xp[:, :-2] + xp[:, 1:-1] + xp[:, 2:]
    np.testing.assert_allclose(blurred().numpy(), np.maximum((h[:-2] + h[1:-1] + h[2:]) / 9 - 0.5, 0), rtol=1e-6,
                               atol=1e-6)
    assert launches(blurred) == 1


def test_the_matmul_formula_runs_the_matmul_kernel():
    """lt.compute's matmul and a @ b: one kernel each, scheduled alike (the same primitives)."""
    from lazytensor import pipeline
    from lazytensor.devices import runtime
    a, b = lt.asarray(np.ones((64, 48), np.float32)), lt.asarray(np.ones((48, 80), np.float32))
    r = lt.reduce_axis(48)
    target = runtime("cpu").device.target
    schedules = []
    for out in (lt.compute((64, 80), lambda i, j: lt.sum(a[i, r] * b[r, j], axis=r)), a @ b):
        (spec,) = pipeline.kernels([out.node], target).kernels
        schedules.append([type(p).__name__ for p in pipeline.loops(spec, target)[1]])
    assert schedules[0] == schedules[1]


def test_gradients_against_finite_differences():
    """backward() through the formulas' views and reductions: both operands of a matmul, the
    input and weights of a strided convolution."""
    rng = np.random.default_rng(5)

    def matmul(a, b):
        r = lt.reduce_axis(6)
        return lt.compute((4, 3), lambda i, j: lt.sum(a[i, r] * b[r, j], axis=r))

    def conv(x, w):
        xp = x.pad(((0, 0), (0, 0), (1, 1), (1, 1)))
        rc, ry, rx = lt.reduce_axis(2), lt.reduce_axis(3), lt.reduce_axis(3)
        return lt.compute((1, 3, 4, 3), lambda n, f, y, x_: lt.sum(
            xp[n, rc, 2 * y + ry, 2 * x_ + rx] * w[f, rc, ry, rx], axis=(rc, ry, rx)))

    check_gradient(matmul, rng.standard_normal((4, 6)), rng.standard_normal((6, 3)))
    check_gradient(conv, rng.standard_normal((1, 2, 7, 6)), rng.standard_normal((3, 2, 3, 3)))


def test_argmax_and_comm_reducers():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((5, 7)).astype(np.float32)
    X[1, 2] = X[1, 5] = X[1].max() + 1   # (ties: the first)
    x = lt.asarray(X)
    k = lt.reduce_axis(7)
    np.testing.assert_array_equal(lt.compute((5,), lambda i: lt.argmax(x[i, k], axis=k)).numpy(), X.argmax(1))
    np.testing.assert_array_equal(lt.compute((5,), lambda i: x[i, k].argmin(axis=k)).numpy(), X.argmin(1))
    relu_max = lt.comm_reducer(lambda a, b: lt.maximum(a, b), 0.0)
    np.testing.assert_array_equal(lt.compute((5,), lambda i: relu_max(x[i, k], axis=k)).numpy(),
                                  np.maximum(X.max(1), 0))
    total = lt.comm_reducer(lambda a, b: a + b, 2.5)
    np.testing.assert_allclose(lt.compute((5,), lambda i: total(x[i, k], axis=k)).numpy(), X.sum(1) + 2.5, rtol=1e-6)
    product = lt.comm_reducer(lambda a, b: a * b, 1.0)
    np.testing.assert_allclose(lt.compute((5,), lambda i: product(x[i, k], axis=k)).numpy(), X.prod(1), rtol=1e-5)
    # logsumexp: stable for large values, -inf for a row of -inf, from the identity given
    L = X * 100
    L[3] = -np.inf
    big = lt.asarray(L)
    logsumexp = lt.comm_reducer(lambda a, b: lt.logaddexp(a, b), -np.inf)
    np.testing.assert_allclose(lt.compute((5,), lambda i: logsumexp(big[i, k], axis=k)).numpy(),
                               np.logaddexp.reduce(L, axis=1), rtol=1e-6)
    from_zero = lt.comm_reducer(lambda a, b: lt.logaddexp(a, b), 0.0)
    np.testing.assert_allclose(lt.compute((5,), lambda i: from_zero(big[i, k], axis=k)).numpy(),
                               np.logaddexp(np.logaddexp.reduce(L, axis=1), 0.0), rtol=1e-6)
    np.testing.assert_allclose(lt.compute((5, 7), lambda i, j: lt.logaddexp(x[i, j], 1.0)).numpy(),
                               np.logaddexp(X, 1.0), rtol=1e-6)


def test_comm_reducers_of_pairs_carry_an_arg_extremum():
    """TVM's argmax: (value, index) pairs, one kept by comparing values; >= keeps the first of
    equal values, > the last; the key first or second; the identity met first."""
    rng = np.random.default_rng(12)
    X = rng.integers(0, 4, (6, 9)).astype(np.float32)   # (many ties)
    x = lt.asarray(X)
    k = lt.reduce_axis(9)

    def pick(op, key_first=True):
        compare = {">=": lambda u, v: u >= v, ">": lambda u, v: u > v, "<=": lambda u, v: u <= v}[op]
        if key_first:
            return lambda a, b: (lt.where(compare(a[0], b[0]), a[0], b[0]), lt.where(compare(a[0], b[0]), a[1], b[1]))
        return lambda a, b: (lt.where(compare(a[1], b[1]), a[0], b[0]), lt.where(compare(a[1], b[1]), a[1], b[1]))
    first = lt.comm_reducer(pick(">="), (-np.inf, -1))
    values, where_ = lt.compute((6,), lambda i: first((x[i, k], k), axis=k))
    np.testing.assert_array_equal(values.numpy(), X.max(1))
    np.testing.assert_array_equal(where_.numpy(), X.argmax(1))
    last = lt.comm_reducer(pick(">", key_first=False), (-1, -np.inf))
    where_, values = lt.compute((6,), lambda i: last((k, x[i, k]), axis=k))
    np.testing.assert_array_equal(where_.numpy(), 8 - X[:, ::-1].argmax(1))
    smallest = lt.comm_reducer(pick("<="), (np.inf, -1))
    np.testing.assert_array_equal(lt.compute((6,), lambda i: smallest((x[i, k], k), axis=k))[1].numpy(), X.argmin(1))
    floor = lt.comm_reducer(pick(">="), (2.5, -1))   # (an identity above some rows' maximum wins there)
    values, where_ = lt.compute((6,), lambda i: floor((x[i, k], k), axis=k))
    np.testing.assert_array_equal(values.numpy(), np.maximum(X.max(1), 2.5))
    np.testing.assert_array_equal(where_.numpy(), np.where(X.max(1) >= 2.5, X.argmax(1), -1))
    with pytest.raises(ValueError, match="comparing keys"):
        lt.comm_reducer(lambda a, b: (lt.where(a[0] >= b[0], a[0], b[0]), lt.where(a[0] >= b[0], b[1], a[1])), (0, 0))


def _bilinear(x: lt.Tensor, out_h: int, out_w: int) -> lt.Tensor:
    """PyTorch's bilinear resize (align_corners=False) of (N, C, H, W), computed coordinates
    clipped into range, each output from its four neighbours."""
    n, c, h, w = x.shape

    def coordinate(o, size, out):
        f = lt.clip((o + 0.5) * (size / out) - 0.5, 0, size - 1)
        low = lt.floor(f)
        first = low.astype(lt.int64)
        return first, lt.clip(first + 1, 0, size - 1), f - low

    def pixel(b, ch, i, j):
        y0, y1, wy = coordinate(i, h, out_h)
        x0, x1, wx = coordinate(j, w, out_w)
        return ((x[b, ch, y0, x0] * (1 - wx) + x[b, ch, y0, x1] * wx) * (1 - wy)
                + (x[b, ch, y1, x0] * (1 - wx) + x[b, ch, y1, x1] * wx) * wy)
    return lt.compute((n, c, out_h, out_w), pixel)


@pytest.mark.parametrize("out", [(8, 12), (3, 5), (5, 6)], ids=str)
def test_bilinear_resize_and_nearest_upsampling(device, out):
    """Indices computed from the variables (a floor of a scaled coordinate, i // 2): a gather,
    bounds proven from the clip; values as torch's interpolate."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    X = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    x = lt.asarray(X, device=device)
    want = torch.nn.functional.interpolate(torch.from_numpy(X), size=out, mode="bilinear", align_corners=False)
    np.testing.assert_allclose(_bilinear(x, *out).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    nearest = lt.compute((2, 3, 8, 12), lambda b, c, i, j: x[b, c, i // 2, j // 2])
    np.testing.assert_array_equal(nearest.numpy(), X.repeat(2, axis=2).repeat(2, axis=3))


def test_clamped_indices_and_index_values_in_math(device):
    """x[lt.clip(i - 1, 0, n - 1)]: an edge-replicating stencil (the clip proves the gather in
    range); an index in float math; a conditional index is bounded by both its branches (clip it)."""
    X = np.random.default_rng(13).standard_normal(10).astype(np.float32)
    x = lt.asarray(X, device=device)
    edge = lt.compute((10,), lambda i: x[lt.clip(i - 1, 0, 9)] + x[i] + x[lt.clip(i + 1, 0, 9)])
    n = np.arange(10)
    np.testing.assert_allclose(edge.numpy(), X[np.clip(n - 1, 0, 9)] + X + X[np.clip(n + 1, 0, 9)], rtol=1e-6)
    np.testing.assert_allclose(lt.compute((4,), lambda i: lt.exp(i * 0.5) + x[i]).numpy(),
                               np.exp(np.arange(4) * 0.5) + X[:4], rtol=1e-6)
    with pytest.raises(IndexError, match=r"\[-1, 8\].*clip it"):
        lt.compute((10,), lambda i: x[lt.where(i > 0, i - 1, 0)])
    # a float coordinate floored: its bounds rounded like the value (i * 0.5 <= 4.5 floors to 4)
    np.testing.assert_array_equal(lt.compute((10,), lambda i: x[lt.floor(i * 0.5).astype(lt.int64)]).numpy(),
                                  X[np.arange(10) // 2])
    # an index that wraps around in a narrow integer type has no bound: refused, not read wrapped
    wide = lt.asarray(np.arange(300.0, dtype=np.float32), device=device)
    with pytest.raises(IndexError, match=r"\[-inf, inf\]"):
        lt.compute((200,), lambda i: wide[i.value().astype(lt.int8).astype(lt.int64)])


def test_the_gradient_of_a_gather():
    rng = np.random.default_rng(11)
    check_gradient(lambda x: _bilinear(x, 5, 7), rng.standard_normal((1, 2, 3, 4)))


def test_errors_at_the_call_that_caused_them():
    x = lt.ones((4, 5))
    with pytest.raises(IndexError, match=r"ranges over \[-1, 2\], outside \[0, 4\); pad the tensor"):
        lt.compute((4,), lambda i: x[i - 1, 0])
    with pytest.raises(IndexError, match="needs 2 indices"):
        lt.compute((4,), lambda i: x[i])
    r = lt.reduce_axis(5)
    with pytest.raises(ValueError, match="used outside a reducer"):
        lt.compute((4,), lambda i: x[i, r] * 2)
    with pytest.raises(TypeError, match="without indices"):
        lt.compute((4, 5), lambda i, j: x[i, j] + x)
    with pytest.raises(TypeError, match="float64, not an integer"):
        lt.compute((4,), lambda i: x[i * 0.5, 0])
    with pytest.raises(IndexError, match=r"may range over \[1, 4\], outside \[0, 4\); clip it"):
        lt.compute((4,), lambda i: x[i // 1 + 1, 0])
    with pytest.raises(IndexError, match="may range over"):   # (a value read from memory: no bound known)
        data = lt.asarray(np.arange(20).reshape(4, 5) % 4)
        lt.compute((4,), lambda i: x[data[i, 0], 0])
    with pytest.raises(ValueError, match="combine must be"):
        lt.comm_reducer(lambda a, b: a - b, 0)
    with pytest.raises(TypeError, match="depends on none of them"):
        lt.compute((4,), lambda i: lt.sum(x[0, 0] * 2, axis=r))
    with pytest.raises(TypeError, match="variable times a variable"):
        lt.compute((2, 2), lambda i, j: x[i * j, 0])
    with pytest.raises(ValueError, match="diagonal"):
        lt.compute((4,), lambda i: x[i, i])
    with pytest.raises(ValueError, match="reduces over reduce axes"):
        lt.compute((4,), lambda i: lt.sum(x[i, r], axis=1))
    with pytest.raises(ValueError, match="only usable inside an lt.compute"):
        x[r, 0]
    with pytest.raises(TypeError, match="no truth value"):
        lt.compute((4,), lambda i: x[i, 0] if x[i, 0] > 0 else 0)
    with pytest.raises(ValueError, match="extent"):
        lt.reduce_axis(-1)


def test_a_formula_under_lt_jit_replays():
    """A compute is a tensor of its own (not a view of the space it was built in), so lt.jit
    captures it and replays its kernel with new inputs."""
    rng = np.random.default_rng(6)

    def scaled_matmul(a, b):
        r = lt.reduce_axis(a.shape[1])
        return lt.compute((a.shape[0], b.shape[1]), lambda i, j: lt.sum(a[i, r] * b[r, j], axis=r) * 0.5)
    run = lt.jit(scaled_matmul)
    for _ in range(3):
        A, B = rng.standard_normal((9, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
        np.testing.assert_allclose(run(lt.asarray(A), lt.asarray(B)).numpy(), A @ B * 0.5, rtol=1e-5, atol=1e-6)
    assert lt.stats()["jit_replays"] >= 1


def test_a_reduce_axis_defined_outside_and_used_in_two_computes():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    t = lt.asarray(x)
    r = lt.reduce_axis(4)
    rows = lt.compute((3,), lambda i: lt.sum(t[i, r], axis=r))
    tops = lt.compute((3,), lambda i: lt.max(t[i, r] * rows[i], axis=r))
    np.testing.assert_allclose(tops.numpy(), (x * x.sum(1, keepdims=True)).max(1))
    with pytest.raises(ValueError, match="belongs to another lt.compute"):
        inner = []
        lt.compute((2,), lambda i: inner.append(i) or 0)
        lt.compute((2,), lambda j: t[inner[0], 0])


# ---- schedules by hand ---------------------------------------------------------------------------

def _matmul_formula(a, b):
    r = lt.reduce_axis(a.shape[1])
    return lt.compute((a.shape[0], b.shape[1]), lambda i, j: lt.sum(a[i, r] * b[r, j], axis=r))


def test_a_hand_schedule_runs_when_the_tensor_is_realized():
    """The BLAS-style schedule written by hand (a tile of 4 x 16 outputs, the B panel packed,
    the column blocks in parallel): the kernel's loops are the schedule's, the values numpy's,
    and other data of the same shapes compiles with it too; reset() brings the automatic one back."""
    rng = np.random.default_rng(7)
    A, B = rng.standard_normal((36, 20)).astype(np.float32), rng.standard_normal((20, 48)).astype(np.float32)
    c = _matmul_formula(lt.asarray(A), lt.asarray(B))
    s = lt.schedule(c)
    assert s.axes == ["i0", "i1", "i2"] and s.reduce_axes == ["r0_2"] and s.extent("r0_2") == 20
    io, ii = s.split("i0", 4)
    jo, ji = s.split("i1", 16)
    s.reorder(jo, io, "i2", ii, ji)
    s.parallel(jo)
    s.cache_write(ii)
    s.cache_read(1, jo)
    s.unroll(ii, 4)
    s.vectorize(ji, 8)
    text = lt.lower(c)
    assert "i1_o in start..end parallel" in text and "lt_pack1" in text and "vectorized x8" in text, text
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-5, atol=1e-5)
    A2 = rng.standard_normal((36, 20)).astype(np.float32)
    again = _matmul_formula(lt.asarray(A2), lt.asarray(B))
    assert "i1_o in start..end parallel" in lt.lower(again)
    np.testing.assert_allclose(again.numpy(), A2 @ B, rtol=1e-5, atol=1e-5)
    s.reset()
    assert lt.schedule(_matmul_formula(lt.asarray(A2), lt.asarray(B))).primitives == ()
    np.testing.assert_allclose(_matmul_formula(lt.asarray(A2), lt.asarray(B)).numpy(), A2 @ B, rtol=1e-5, atol=1e-5)


def test_a_hand_schedule_may_run_the_reduction_in_blocks_outside_the_tile():
    """BLAS's K blocks by hand: the reduction split, its outer loop among the output loops
    (after the tile is declared, which keeps the partial sums in the output between blocks)."""
    rng = np.random.default_rng(8)
    A, B = rng.standard_normal((36, 21)).astype(np.float32), rng.standard_normal((21, 48)).astype(np.float32)
    c = _matmul_formula(lt.asarray(A), lt.asarray(B))
    s = lt.schedule(c)
    io, ii = s.split("i0", 4)
    jo, ji = s.split("i1", 16)
    ko, _ = s.split("r0_2", 8)
    s.cache_write(ii)
    s.reorder(jo, ko, io, "i2", ii, ji)
    s.parallel(jo)
    text = lt.lower(c)
    assert "for r0_2_o in" in text and "= out0[" in text, text   # (the tile resumes from the output)
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-5, atol=1e-5)
    s.reset()


@pytest.mark.parametrize("steps", [
    [("split", "i0", 8), ("parallel", "i0_o")],
    [("split", "i1", 3), ("reorder", "i1_o", "i0", "i1_i"), ("unroll", "i1_i", 3)],
    [("fuse", "i0", "i1"), ("vectorize", "i0xi1", 4)],
    [("split", "i1", 5), ("split", "i1_i", 2), ("vectorize", "i1_i_i", 2)],
], ids=["split-parallel", "reorder-unroll", "fuse-vectorize", "split-twice"])
def test_hand_schedules_of_an_elementwise_formula(device, steps):
    """Loops split by factors that do not divide them, reordered, fused, unrolled, vectorized:
    the values stay numpy's on every device (a GPU schedule binds the outer loop to blocks)."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((13, 17)).astype(np.float32)
    x = lt.asarray(X, device=device)
    y = lt.compute((13, 17), lambda i, j: x[i, 16 - j] * 2 + x[i, j])
    s = lt.schedule(y)
    for name, *args in steps:
        if name == "parallel" and device != "cpu":
            name, args = "bind", [args[0], "block"]
        getattr(s, name)(*args)
    np.testing.assert_allclose(y.numpy(), X[:, ::-1] * 2 + X, rtol=1e-6)
    s.reset()


def test_a_primitive_the_lowering_refuses_is_refused_by_name():
    x = lt.ones((16, 8))
    y = lt.compute((16, 8), lambda i, j: x[i, j] + 1)
    s = lt.schedule(y)
    s.split("i0", 4)
    with pytest.raises(ValueError, match=r"Parallel\(axis='i0_i'\) is refused: .*outermost"):
        s.parallel("i0_i")
    with pytest.raises(ValueError, match=r"Split\(axis='nope', factor=2\) is refused"):
        s.split("nope", 2)
    with pytest.raises(ValueError, match="no axis 'nope'"):
        s.extent("nope")
    assert [type(p).__name__ for p in s.primitives] == ["Split"]   # (the refused ones not taken)
    np.testing.assert_array_equal(y.numpy(), np.full((16, 8), 2.0, np.float32))
    s.reset()
    with pytest.raises(ValueError, match="already realized"):
        lt.schedule(y)
    with pytest.raises(TypeError, match="takes a tensor"):
        lt.schedule(np.ones(3))


# ---- random formulas against numpy ------------------------------------------------------------------

def _random_index(rng, size, variables, extents):
    """(a callable of the variables giving the index, a numpy function of the index grids), for
    an axis of `size`: a constant, a*v + c, a*v + b*w + c or v // 2 + c, always in range; or
    None where the variables left cannot stay in range."""
    forms = ["const"] + (["one", "floordiv"] if variables else []) + (["two"] if len(variables) >= 2 else [])
    form = forms[rng.integers(len(forms))]
    if form == "const":
        c = int(rng.integers(size))
        return (lambda vs: c), (lambda grids: np.full_like(next(iter(grids.values())), c)), []
    if form == "two":
        (v, w), (a, b) = rng.choice(variables, 2, replace=False), rng.integers(1, 3, 2)
        terms = [(v, int(a)), (w, int(b))]
    elif form == "one":
        v = rng.choice(variables)
        terms = [(v, int(rng.choice([-2, -1, 1, 2])))]
    else:
        v = rng.choice(variables)
        low, high = 0, (extents[v] - 1) // 2
        if high >= size:
            return None
        c = int(rng.integers(0, size - high))
        return (lambda vs, v=v, c=c: vs[v] // 2 + c), (lambda grids, v=v, c=c: grids[v] // 2 + c), [v]
    low = sum(min(0, a * (extents[v] - 1)) for v, a in terms)
    high = sum(max(0, a * (extents[v] - 1)) for v, a in terms)
    if high - low >= size:
        return None
    c = int(rng.integers(-low, size - high))

    def index(vs, terms=terms, c=c):
        total = c
        for v, a in terms:
            total = total + a * vs[v]
        return total
    return index, (lambda grids, terms=terms, c=c: c + sum(a * grids[v] for v, a in terms)), [v for v, _ in terms]


@pytest.mark.parametrize("seed", range(40))
def test_random_formulas_match_numpy(seed):
    """Random index formulas (constants, steps, reversals, windows, floor divisions), an optional
    elementwise op and an optional reduction (sum, prod, max or min; over an axis the formula may
    not even use), evaluated by numpy on the index grids."""
    rng = np.random.default_rng(1000 + seed)
    shape = tuple(int(n) for n in rng.integers(1, 8, rng.integers(1, 4)))
    A = rng.standard_normal(shape).astype(np.float32)
    out_shape = tuple(int(n) for n in rng.integers(1, 5, rng.integers(1, 3)))
    reducer = rng.choice(["none", "sum", "prod", "max", "min"])
    extents = {f"i{d}": n for d, n in enumerate(out_shape)}
    if reducer != "none":
        extents["k"] = int(rng.integers(1, 4))
    free = list(extents)
    indices, used = [], set()
    for size in shape:
        made = _random_index(rng, size, [v for v in free if v not in used], extents)
        if made is None:
            made = (lambda vs, c=0: c), (lambda grids, c=0: np.zeros_like(next(iter(grids.values()))) + c), []
        indices.append(made[:2])
        used.update(made[2])
    if not used:   # (a value of no variable is a plain tensor: lt.sum(axis=k) refuses it, tested apart)
        reducer, extents = "none", {v: n for v, n in extents.items() if v != "k"}
    op = rng.choice(["none", "exp", "square", "affine"])
    apply_lt = {"none": lambda e: e, "exp": lambda e: lt.exp(e * 0.5), "square": lambda e: e * e,
                "affine": lambda e: e * 3 - 1}[op]
    apply_np = {"none": lambda e: e, "exp": lambda e: np.exp(e * 0.5), "square": lambda e: e * e,
                "affine": lambda e: e * 3 - 1}[op]
    a = lt.asarray(A)
    k = lt.reduce_axis(extents["k"]) if "k" in extents else None

    def formula(*axes):
        vs = {f"i{d}": v for d, v in enumerate(axes)}
        if k is not None:
            vs["k"] = k
        value = apply_lt(a[tuple(index(vs) for index, _ in indices)])
        return value if k is None else getattr(lt, reducer)(value, axis=k)
    got = lt.compute(out_shape, formula).numpy()
    names = list(extents)
    grids = dict(zip(names, np.meshgrid(*[np.arange(extents[v]) for v in names], indexing="ij")))
    want = apply_np(A[tuple(np_index(grids) for _, np_index in indices)])
    if k is not None:
        want = getattr(np, reducer)(want, axis=-1)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-5, atol=2e-5,
                               err_msg=f"shape {shape}, out {out_shape}, {reducer}, {op}")
