"""Matrix products (`@`, lt.matmul) compared with numpy.matmul."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array


def rand(shape, dtype=np.float64, seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype)


def check_matmul(a, b, device):
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    want = np.matmul(a, b)
    got = x @ y
    assert got.device == device
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert_close(got.numpy(), want)
    assert_close(lt.matmul(x, y).numpy(), want)


SHAPES = [
    ((3, 4), (4, 5)),
    ((1, 4), (4, 1)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((1,), (1,)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (6, 4, 2)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
    ((3, 0), (0, 5)),
    ((0,), (0,)),
    ((2, 0, 3), (3, 4)),
    ((3, 4), (4, 0)),
    ((0, 3, 4), (4, 2)),
    ((1, 1), (1, 1)),
    ((7, 1), (1, 6)),
    ((17, 33), (33, 9)),
    ((65, 130), (130, 67)),
    ((3, 33, 17), (17, 70)),
]


@pytest.mark.parametrize("a_shape, b_shape", SHAPES, ids=lambda s: str(s))
def test_matmul_shapes(device, a_shape, b_shape):
    check_matmul(rand(a_shape), rand(b_shape, seed=1), device)


@pytest.mark.parametrize("b_dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("a_dtype", DTYPES, ids=lambda d: d.name)
def test_matmul_dtypes(device, a_dtype, b_dtype):
    # numpy's result dtype; bool @ bool is a logical or-of-ands
    check_matmul(rand((3, 5), a_dtype.np), rand((5, 4), b_dtype.np, seed=1), device)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_matmul_dtypes_vector_and_batched(device, dtype):
    check_matmul(rand((6,), dtype.np), rand((6,), dtype.np, seed=1), device)
    check_matmul(rand((2, 3, 6), dtype.np), rand((6, 2), dtype.np, seed=1), device)


def test_bool_matmul_is_logical(device):
    a = np.array([[True, True, False], [False, False, False]])
    b = np.array([[True, False], [True, False], [True, True]])
    got = lt.asarray(a, device=device) @ lt.asarray(b, device=device)
    assert got.dtype == lt.bool_
    assert_close(got.numpy(), a @ b)  # True+True stays True, never 2


def test_int_matmul_is_exact(device):
    a = np.random.default_rng(2).integers(-1000, 1000, (8, 64)).astype(np.int64)
    b = np.random.default_rng(3).integers(-1000, 1000, (64, 8)).astype(np.int64)
    check_matmul(a, b, device)
    check_matmul(a.astype(np.int32), b.astype(np.int32), device)


def test_float32_long_k(device):
    a, b = rand((4, 2000), np.float32), rand((2000, 3), np.float32, seed=1)
    got = lt.asarray(a, device=device) @ lt.asarray(b, device=device)
    assert got.dtype == lt.float32
    np.testing.assert_allclose(got.numpy(), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int32], ids=lambda d: d.name)
def test_large_matmul(device, dtype):
    # big enough that the scheduler tiles / parallelises the loops
    a, b = rand((128, 256), dtype.np), rand((256, 192), dtype.np, seed=1)
    got = lt.asarray(a, device=device) @ lt.asarray(b, device=device)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.numpy(), want.astype(dtype.np), rtol=1e-4, atol=1e-3)


@settings(max_examples=20, deadline=None)
@given(m=st.integers(1, 5), k=st.integers(0, 5), n=st.integers(1, 5),
       batch_a=st.lists(st.integers(1, 3), max_size=2), batch_b=st.lists(st.integers(1, 3), max_size=2),
       vec_a=st.booleans(), vec_b=st.booleans(), seed=st.integers(0, 1000))
def test_matmul_random_shapes(m, k, n, batch_a, batch_b, vec_a, vec_b, seed):
    # make the batch axes broadcastable: where they differ, one of them becomes 1
    width = min(len(batch_a), len(batch_b))
    for i in range(1, width + 1):
        if batch_a[-i] != batch_b[-i]:
            batch_b[-i] = 1
    a_shape = (k,) if vec_a else (*batch_a, m, k)
    b_shape = (k,) if vec_b else (*batch_b, k, n)
    check_matmul(rand(a_shape, seed=seed), rand(b_shape, seed=seed + 1), "cpu")


# ---- operands that are views ----------------------------------------------------------------------

def test_transposed_operands(device):
    a, b = rand((5, 3)), rand((4, 5), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_close((x.T @ y.T).numpy(), a.T @ b.T)
    assert_close((y @ x).T.numpy(), (b @ a).T)
    assert_close((x.T @ x).numpy(), a.T @ a)


def test_sliced_and_flipped_operands(device):
    a, b = rand((6, 8)), rand((9, 5), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_close((x[::2, 1:] @ y[::-1][1:8, ::2]).numpy(), a[::2, 1:] @ b[::-1][1:8, ::2])
    assert_close((x[1] @ y[:8]).numpy(), a[1] @ b[:8])
    assert_close((x[:, ::-1][:, :5] @ y.T[:, 2]).numpy(), a[:, ::-1][:, :5] @ b.T[:, 2])


def test_broadcast_and_padded_operands(device):
    a, b = rand((1, 4)), rand((3, 2), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_close((x.expand(5, 4) @ y.pad(((0, 1), (1, 0)))).numpy(),
                 np.broadcast_to(a, (5, 4)) @ np.pad(b, ((0, 1), (1, 0))))


def test_permuted_batched_operands(device):
    a, b = rand((3, 2, 4)), rand((2, 5, 4), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_close((x.permute(1, 0, 2) @ y.permute(0, 2, 1)).numpy(), a.transpose(1, 0, 2) @ b.transpose(0, 2, 1))


def test_matmul_of_expressions(device):
    a, b = rand((4, 6)), rand((6, 3), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_close(((x * 2 - 1) @ (y + x[:, :3].sum(axis=0))).numpy(), (a * 2 - 1) @ (b + a[:, :3].sum(axis=0)))


def test_chained_matmuls(device):
    a, b, c = rand((3, 4)), rand((4, 5), seed=1), rand((5, 2), seed=2)
    x, y, z = (lt.asarray(v, device=device) for v in (a, b, c))
    assert_close((x @ y @ z).numpy(), a @ b @ c)
    assert_close((x @ (y @ z)).numpy(), a @ (b @ c))


def test_matmul_with_numpy_operands(device):
    a, b = rand((3, 4)), rand((4, 2), seed=1)
    x = lt.asarray(a, device=device)
    assert_close((x @ b).numpy(), a @ b)
    assert_close((b.T @ x.T).numpy(), b.T @ a.T)
    assert_close(lt.matmul(a, b).numpy(), a @ b)
    # a list of Python floats becomes float32 (the default float); float32 @ float64 is float64
    assert_close(lt.matmul(a.tolist(), x[0]).numpy(), a.astype(np.float32) @ a[0])


# ---- elementwise epilogues ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=lambda d: d.name)
def test_relu_epilogue(device, dtype):
    a, b, bias = rand((5, 7), dtype.np), rand((7, 3), dtype.np, seed=1), rand((3,), dtype.np, seed=2)
    x, y, z = (lt.asarray(v, device=device) for v in (a, b, bias))
    got = lt.maximum(x @ y + z, 0)
    assert_close(got.numpy(), np.maximum(a @ b + bias, 0))


def test_epilogue_chain_and_reduction(device):
    a, b = rand((4, 5), np.float32), rand((5, 6), np.float32, seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    h = (x @ y).tanh() * 2 + 1
    want = np.tanh(a @ b) * 2 + 1
    assert_close(h.numpy(), want)
    # float32 sums accumulate in float64 by design
    assert_close(h.sum(axis=1).numpy(), want.astype(np.float64).sum(axis=1).astype(np.float32))


def test_matmul_result_used_twice(device):
    a, b = rand((3, 3)), rand((3, 3), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    p = x @ y
    got = p * p.T - p
    assert_close(got.numpy(), (a @ b) * (a @ b).T - a @ b)
    lt.realize(p, got)
    assert_close(p.numpy(), a @ b)


def test_matmul_scalar_promotion_epilogue(device):
    a, b = rand((2, 3), np.int32), rand((3, 4), np.int32, seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    got = (x @ y) * 0.5
    assert_close(got.numpy(), (a @ b) * 0.5)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)], ids=str)
def test_inplace_matmul(device, shape):
    a, b = rand(shape), rand((3, 3), seed=1)
    x = lt.asarray(a, device=device)
    x @= lt.asarray(b, device=device)
    assert_close(x.numpy(), a @ b)


@pytest.mark.parametrize("shape", [(40, 40), (17, 33), (64, 16), (3, 40, 24)])
def test_products_of_a_tensor_with_itself(device, shape):
    """One input read two ways in one kernel (on a GPU: two tiles of the same buffer)."""
    a = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    x = lt.asarray(a, device=device)
    assert_close(x @ x.mT, a @ np.swapaxes(a, -1, -2))
    if shape[-1] == shape[-2]:
        assert_close(x @ x, a @ a)


def test_float16_vecdot_multiplies_and_sums_in_float32(device):
    """numpy's float16 vecdot (like matmul) does not round each product to half: 300 * 300 is
    past half's range (found by the fuzzer: nan where numpy gives 0)."""
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((5, 64)) * 20).astype(np.float16)
    b = (rng.standard_normal((5, 64)) * 20).astype(np.float16)
    a[:, :2], b[:, :2] = [300, -300], [300, 300]   # (products past half's range, cancelling)
    got = lt.vecdot(lt.asarray(a, device=device), lt.asarray(b, device=device)).numpy()
    want = np.vecdot(a, b)
    assert got.dtype == want.dtype and np.isfinite(got).all()
    np.testing.assert_allclose(got.astype(np.float64), (a.astype(np.float64) * b).sum(-1), rtol=2e-3, atol=4)


SUMS_OF_PRODUCTS = {   # name: (the lazytensor expression, numpy's), on operands a, w, b, v, c, u
    "two": (lambda a, w, b, v, c, u: a @ w + b @ v, lambda a, w, b, v, c, u: a @ w + b @ v),
    "three": (lambda a, w, b, v, c, u: a @ w + b @ v + c @ u, lambda a, w, b, v, c, u: a @ w + b @ v + c @ u),
    "bias-between": (lambda a, w, b, v, c, u: (a @ w + 1.5) + b @ v, lambda a, w, b, v, c, u: a @ w + 1.5 + b @ v),
    "k-differs": (lambda a, w, b, v, c, u: a @ w + c[:, :5] @ u[:5], lambda a, w, b, v, c, u: a @ w + c[:, :5] @ u[:5]),
    "batched": (lambda a, w, b, v, c, u: a.reshape(2, 3, 7) @ w + b.reshape(2, 3, 7) @ v,
                lambda a, w, b, v, c, u: a.reshape(2, 3, 7) @ w + b.reshape(2, 3, 7) @ v),
    "one-read-twice": (lambda a, w, b, v, c, u: (a @ w) * (a @ w + b @ v), lambda a, w, b, v, c, u: (a @ w) * (a @ w + b @ v)),
}


@pytest.mark.parametrize("case", list(SUMS_OF_PRODUCTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_sums_of_products_match_numpy(device, case, dtype):
    """Matrix products added together: summed as one reduction where their shapes agree and
    nothing else reads them (passes.merge_added_sums), else each in its kernel."""
    operands = [rand(shape, dtype, seed=i) for i, shape in enumerate(((6, 7), (7, 4), (6, 7), (7, 4), (6, 8), (8, 4)))]
    ours, numpys = SUMS_OF_PRODUCTS[case]
    got = ours(*(lt.asarray(x, device=device) for x in operands))
    want = numpys(*operands) if dtype == np.int32 else numpys(*(x.astype(np.float64) for x in operands)).astype(dtype)
    assert_close(got.numpy(), want)


def test_sums_of_products_run_in_register_tiles():
    """a @ w + b @ v (+ c @ u): one reduction of the products' sum where the shapes agree, in one
    register tile (CacheWrite); where they do not (an LSTM's x @ W_ih + h @ W_hh), one product
    per kernel, each in its tile: two in one kernel, no tile holds them (dot products along the
    strided weights: 25-55 ms against 1.1-1.2 at 2048 x 96-128 x 128)."""
    from lazytensor import pipeline
    from lazytensor.devices import runtime
    from lazytensor.scheduler.schedule import CacheWrite
    target = runtime("cpu").device.target
    rng = np.random.default_rng(7)
    t = lambda *shape: lt.asarray(rng.standard_normal(shape).astype(np.float32))
    a, b, c, w, v, u, h, wh = t(512, 64), t(512, 64), t(512, 64), t(64, 128), t(64, 128), t(64, 128), t(512, 96), t(96, 128)
    for out, reductions in ((a @ w + b @ v + c @ u, 1), (a @ w + h @ wh, 2)):
        specs = pipeline.kernels([out.node], target).kernels
        assert len(specs) == reductions, [spec.root for spec in specs]
        for spec in specs:
            assert any(isinstance(p, CacheWrite) for p in pipeline.loops(spec, target)[1]), spec.root
    # a product read elsewhere too is not summed again inside the other: its kernel's result is read
    y = a @ w
    z = y + b @ v
    specs = pipeline.kernels([z.node, y.node], target).kernels
    assert len(specs) == 2 and any(len(spec.inputs) == 3 for spec in specs), [spec.inputs for spec in specs]
