"""complex64 and complex128 on every device, against numpy: arithmetic and promotion, the
elementwise functions (also at infinities, nans and signed zeros), reductions, matmul, views,
indexing, casts, and the errors for what complex numbers do not have (order, rounding)."""
import math
import operator
import zlib

import numpy as np
import pytest

import lazytensor as lt
from conftest import has_fp64

COMPLEX = [np.complex64, np.complex128]
PART = {np.complex64: np.float32, np.complex128: np.float64}
RTOL = {np.complex64: 2e-5, np.complex128: 1e-12}


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def random_complex(rng, shape, dtype, scale=1.0):
    return (scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))).astype(dtype)


def assert_complex_close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    """Equal dtype and shape; each part: nan where numpy's is nan, the same infinity where
    numpy's is infinite, close elsewhere (relative to the value's magnitude)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        infinite = np.isinf(w)
        np.testing.assert_array_equal(g[infinite], w[infinite])
        finite = np.isfinite(w)
        scale = np.maximum(np.abs(want), 1e-30)   # (a part is close relative to the whole value)
        scale = scale if np.ndim(scale) else np.asarray(scale)
        np.testing.assert_array_less(np.abs(g[finite] - w[finite]), rtol * scale[finite] + atol + 1e-300)


# ---- arithmetic and promotion -------------------------------------------------------------------

BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
          "pow": operator.pow}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_binary_against_numpy(device, rng, name, dtype):
    fn = BINARY[name]
    a = random_complex(rng, (3, 1, 5), dtype)
    b = random_complex(rng, (4, 1), dtype)   # (broadcast)
    if device.startswith("opencl") and dtype is np.complex128 and not lt.devices():
        pytest.skip("no float64 here")
    got = fn(lt.asarray(a, device=device), lt.asarray(b, device=device)).numpy()
    with np.errstate(all="ignore"):
        assert_complex_close(got, fn(a, b), rtol=RTOL[dtype] * (50 if name == "pow" else 4))


@pytest.mark.parametrize("other", [np.float32, np.float64, np.int32, np.bool_, "python-float", "python-complex"],
                         ids=str)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_mixed_operands_promote_as_numpy(device, rng, dtype, other):
    a = random_complex(rng, (2, 3), dtype)
    if other == "python-float":
        b, lb = 1.5, 1.5
    elif other == "python-complex":
        b, lb = 0.5 - 2j, 0.5 - 2j
    else:
        b = (rng.standard_normal((2, 3)) * 3).astype(other)
        lb = lt.asarray(b, device=device)
    x = lt.asarray(a, device=device)
    for fn in (operator.add, operator.mul, operator.truediv):
        want, got = fn(a, b), fn(x, lb)
        assert got.dtype == want.dtype, (fn, got.dtype, want.dtype)
        assert_complex_close(got.numpy(), want, rtol=RTOL[dtype] * 4)
        want, got = fn(b, a), fn(lb, x)
        assert got.dtype == want.dtype
        assert_complex_close(got.numpy(), want, rtol=RTOL[dtype] * 4)


def test_real_tensor_with_python_complex_is_complex64(device):
    x = lt.asarray([1.0, -2.0], device=device)
    assert (x * 1j).dtype == lt.complex64
    assert (x.astype(lt.float64) + 1j).dtype == lt.complex128
    assert lt.asarray([1j], device=device).dtype == lt.complex64
    assert lt.full((2,), 2 - 1j, device=device).dtype == lt.complex64
    np.testing.assert_array_equal((x * 1j).numpy(), np.array([1j, -2j], np.complex64))


def test_division_by_zero_as_numpy(device):
    a = np.array([1 + 1j, 0j, -2 + 0j, 1j], np.complex128)
    b = np.zeros(4, np.complex128)
    with np.errstate(all="ignore"):
        want = a / b
    if device.startswith("opencl") and not has_fp64(device):
        pytest.skip("no float64")
    assert_complex_close((lt.asarray(a, device=device) / lt.asarray(b, device=device)).numpy(), want, 1e-12)


# ---- elementwise functions ----------------------------------------------------------------------

UNARY = ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "asin", "acos", "atan", "asinh", "acosh", "atanh", "square", "negative", "positive", "sign", "conj",
         "round"]
NUMPY_NAME = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
              "atanh": "arctanh"}


def _numpy_sign(a):
    with np.errstate(all="ignore"):
        return np.where(a == 0, 0, a / np.abs(a)).astype(a.dtype)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_unary_against_numpy(device, rng, name, dtype):
    if dtype is np.complex128 and not has_fp64(device):
        pytest.skip("no float64")
    a = random_complex(rng, (4, 7), dtype, scale=1.5)
    a[0, :3] = [0, 0.5, -0.25j]   # (zero, real and imaginary axes)
    a[1, :2] = [2.5 - 1.5j, -0.5 + 3.5j]   # (round: ties to even, part by part)
    want_fn = _numpy_sign if name == "sign" else getattr(np, NUMPY_NAME.get(name, name))
    got = getattr(lt, name)(lt.asarray(a, device=device)).numpy()
    with np.errstate(all="ignore"):
        want = want_fn(a)
    assert_complex_close(got, want, rtol=RTOL[dtype] * 8, atol=RTOL[dtype] * 2)


def test_functions_near_zero_keep_their_digits(device):
    # (numpy's complex log1p and expm1 lose them: log1p(1e-9 + 1e-9j) has 7 digits there; the
    # references are the series z -+ z**2 / 2, exact to ~|z|**3 here)
    a = np.array([1e-9 + 1e-9j, -3e-12 + 2e-12j, 2e-10 - 0j], np.complex128)
    if not has_fp64(device):
        pytest.skip("no float64")
    x = lt.asarray(a, device=device)
    assert_complex_close(lt.expm1(x).numpy(), a + a * a / 2, rtol=1e-15)
    assert_complex_close(lt.log1p(x).numpy(), a - a * a / 2, rtol=1e-15)


SPECIAL = [complex(x, y) for x in (0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan)
           for y in (0.0, -0.0, 0.75, -3.0, math.inf, -math.inf, math.nan)]
# (where C99 leaves a sign unspecified, numpy's and ours may differ: those are compared as magnitudes)
SPECIAL_FUNCTIONS = ["exp", "log", "sqrt", "sinh", "cosh", "tanh", "expm1", "log1p", "abs"]


def _spec_expm1(z: complex, numpy_value: complex) -> complex:
    """The Array API's expm1 at an infinite or nan real part (numpy's complex expm1 is exp(z) - 1,
    which misses these cases); numpy's value elsewhere."""
    x, y = z.real, z.imag
    if x == math.inf and not math.isfinite(y):
        return complex(math.inf, math.nan)
    if x == -math.inf and not math.isfinite(y):
        return complex(-1.0, 0.0)
    if (math.isinf(x) or math.isnan(x)) and y == 0:
        return complex(math.inf if x == math.inf else -1.0 if x < 0 else math.nan, y)
    return numpy_value


def _same_part(got: float, want: float) -> bool:
    # where C99 leaves a sign unspecified (sinh(-inf + inf j) is +-inf + nan j), numpy's and ours
    # may differ: parts compare by magnitude
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return abs(got) == abs(want) or abs(got - want) <= 1e-12 * max(1.0, abs(want))


@pytest.mark.parametrize("name", SPECIAL_FUNCTIONS)
def test_special_values_as_numpy(name):
    a = np.array(SPECIAL, np.complex128)
    got = getattr(lt, name)(lt.asarray(a)).numpy()
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a)
    if name == "abs":
        np.testing.assert_array_max_ulp(got, want, maxulp=1)
        return
    for g, w, z in zip(got, want, a):
        if name == "expm1":
            w = _spec_expm1(complex(z), complex(w))
        assert _same_part(g.real, w.real) and _same_part(g.imag, w.imag), (name, z, g, w)


def test_abs_real_imag_and_tests(device, rng):
    a = random_complex(rng, (3, 4), np.complex64)
    a[0, 0], a[0, 1], a[0, 2] = complex(math.nan, 1), complex(1, -math.inf), complex(3e38, 3e38)
    x = lt.asarray(a, device=device)
    assert abs(x).dtype == lt.float32 and lt.real(x).dtype == lt.float32 and lt.imag(x).dtype == lt.float32
    np.testing.assert_allclose(abs(x).numpy(), np.abs(a), rtol=1e-6)
    np.testing.assert_array_equal(lt.real(x).numpy(), a.real)
    np.testing.assert_array_equal(lt.imag(x).numpy(), a.imag)
    np.testing.assert_array_equal(lt.isnan(x).numpy(), np.isnan(a))
    np.testing.assert_array_equal(lt.isinf(x).numpy(), np.isinf(a))
    np.testing.assert_array_equal(lt.isfinite(x).numpy(), np.isfinite(a))
    y = lt.asarray(a.copy(), device=device)
    np.testing.assert_array_equal((x == y).numpy(), a == a)
    np.testing.assert_array_equal((x != y).numpy(), a != a)
    np.testing.assert_array_equal((x == lt.conj(y)).numpy(), a == np.conj(a))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float32, np.int16], ids=lambda d: d.__name__)
def test_real_and_imag_attributes_are_numpys(device, rng, dtype):
    # numpy's and PyTorch's x.real / x.imag (library code written for them reads the attributes)
    if dtype is np.complex128 and not has_fp64(device):
        pytest.skip("no float64")
    if np.dtype(dtype).kind == "c":
        a = random_complex(rng, (3, 4), dtype)
    else:
        a = (10 * rng.standard_normal((3, 4))).astype(dtype)
    x = lt.asarray(a, device=device)
    for got, want in ((x.real, a.real), (x.imag, a.imag), ((x * 2).real[1:, ::2], (a * 2).real[1:, ::2])):
        assert isinstance(got, lt.Tensor) and got.dtype == lt.asarray(want).dtype
        np.testing.assert_array_equal(got.numpy(), want)


# ---- reductions, matmul, scans ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
@pytest.mark.parametrize("shape,axis", [((5, 7), None), ((5, 7), 0), ((2, 3, 4), (0, 2)), ((0, 3), 0), ((1,), None)],
                         ids=str)
def test_reductions(device, rng, dtype, shape, axis):
    if dtype is np.complex128 and not has_fp64(device):
        pytest.skip("no float64")
    a = random_complex(rng, shape, dtype)
    x = lt.asarray(a, device=device)
    assert_complex_close(x.sum(axis=axis).numpy(), np.asarray(a.sum(axis=axis)), RTOL[dtype] * 8, RTOL[dtype] * 8)
    assert_complex_close(x.prod(axis=axis).numpy(), np.asarray(a.prod(axis=axis)), RTOL[dtype] * 8, RTOL[dtype])
    if a.size:
        assert_complex_close(x.mean(axis=axis).numpy(), np.asarray(a.mean(axis=axis)), RTOL[dtype] * 8, RTOL[dtype])


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_matmul_and_scan(device, rng, dtype):
    if dtype is np.complex128 and not has_fp64(device):
        pytest.skip("no float64")
    a, b = random_complex(rng, (2, 5, 7), dtype), random_complex(rng, (7, 3), dtype)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_complex_close((x @ y).numpy(), a @ b, RTOL[dtype] * 16, RTOL[dtype] * 16)
    real = rng.standard_normal((7,)).astype(PART[dtype])
    assert_complex_close((x @ lt.asarray(real, device=device)).numpy(), a @ real, RTOL[dtype] * 16, RTOL[dtype] * 16)
    assert_complex_close(lt.cumulative_sum(x, axis=1).numpy(), np.cumsum(a, axis=1), RTOL[dtype] * 8, RTOL[dtype] * 8)


# ---- memory: views, indexing, writes, casts, interchange ---------------------------------------

def test_views_indexing_and_writes(device, rng):
    a = random_complex(rng, (4, 6), np.complex64)
    x = lt.asarray(a.copy(), device=device)
    np.testing.assert_array_equal(x[1:3, ::-2].numpy(), a[1:3, ::-2])
    np.testing.assert_array_equal(x.T.reshape(3, 8).numpy(), a.T.reshape(3, 8))
    index = np.array([3, 0, 0, 2])
    np.testing.assert_array_equal(x[lt.asarray(index, device=device)].numpy(), a[index])
    np.testing.assert_array_equal(lt.where(lt.asarray(a.real > 0, device=device), x, 1j).numpy(),
                                  np.where(a.real > 0, a, 1j).astype(np.complex64))
    v = x[1]
    x[1, 2] = 5 - 5j
    a[1, 2] = 5 - 5j
    np.testing.assert_array_equal(v.numpy(), a[1])
    assert x[1, 2].item() == 5 - 5j and complex(x[1, 2]) == 5 - 5j
    assert x[:0].numpy().shape == (0, 6) and x[:0].numpy().dtype == np.complex64
    assert lt.concat([x, x[:1]]).shape == (5, 6)
    np.testing.assert_array_equal(lt.stack([x[0], x[1]]).numpy(), a[:2])
    assert x.tolist()[1][2] == 5 - 5j
    assert "complex64" in repr(x)


def test_casts(device, rng):
    a = random_complex(rng, (3, 3), np.complex64)
    a[0, 0], a[0, 1] = 0, 1j
    x = lt.asarray(a, device=device)
    np.testing.assert_array_equal(x.astype(lt.bool).numpy(), a.astype(bool))
    if has_fp64(device):
        np.testing.assert_array_equal(x.astype(lt.complex128).numpy(), a.astype(np.complex128))
    for real in (np.float32, np.int32, np.bool_):
        r = (rng.standard_normal(5) * 3).astype(real)
        np.testing.assert_array_equal(lt.asarray(r, device=device).astype(lt.complex64).numpy(), r.astype(np.complex64))
    with pytest.raises(TypeError, match="imaginary"):
        x.astype(lt.float32)


def test_dlpack_and_numpy_round_trip(rng):
    a = random_complex(rng, (2, 5), np.complex128)
    x = lt.from_dlpack(a)
    assert x.dtype == lt.complex128
    np.testing.assert_array_equal(np.from_dlpack((x + 0).realize()), a)
    np.testing.assert_array_equal(np.asarray(x * 2), a * 2)


def test_jit_and_plans_replay_complex(rng):
    @lt.jit
    def step(z, w):
        return z * w + lt.exp(z)
    a, b = random_complex(rng, (8,), np.complex64), random_complex(rng, (8,), np.complex64)
    for _ in range(3):
        assert_complex_close(step(lt.asarray(a), lt.asarray(b)).numpy(), a * b + np.exp(a), 1e-5)


# ---- what complex numbers do not have -----------------------------------------------------------

@pytest.mark.parametrize("what", ["lt", "floor", "max", "maximum", "sort", "floordiv", "astype-int"])
def test_undefined_operations_raise_type_error(device, what):
    x = lt.asarray(np.array([1 + 2j, 3 - 1j], np.complex64), device=device)
    attempt = {"lt": lambda: x < x, "floor": lambda: lt.floor(x), "max": lambda: x.max(),
               "maximum": lambda: lt.maximum(x, x), "sort": lambda: lt.sort(x), "floordiv": lambda: x // x,
               "astype-int": lambda: x.astype(lt.int32)}[what]
    with pytest.raises(TypeError, match="complex|imaginary"):
        attempt()


def test_gradients_through_complex_values(device):
    # (each rule against finite differences in float64: tests/test_autograd.py; here float32 on
    # every device, and what carries no gradient)
    w = lt.asarray([1.0, 2.0], device=device).requires_grad_()
    z = w.astype(lt.complex64) * (1 + 2j)
    (lt.abs(z * z) + lt.real(lt.exp(1j * w.astype(lt.complex64)))).sum().backward()
    want = 2 * 5 * np.array([1.0, 2.0]) - np.sin([1.0, 2.0])   # |z|^2 = 5 w^2
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5)
    w.grad = None
    mask = (w.astype(lt.complex64) == 1j)   # (a bool result of complex values carries no gradient)
    (lt.where(mask, 0.0, w) * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])


def test_backward_of_a_complex_value_needs_a_gradient():
    z = lt.asarray([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="needs a real value.*gradient="):
        (z * z).sum().backward()
    (z * z).sum().backward(gradient=lt.asarray(1 - 1j))   # d/dz of g * z^2 in PyTorch's convention: conj(2z) g
    np.testing.assert_allclose(z.grad.numpy(), [np.conj(2 * (1 + 1j)) * (1 - 1j)])


# ---- linalg ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.__name__)
def test_linalg_of_complex_matrices(device, rng, dtype):
    if dtype is np.complex128 and not has_fp64(device):
        pytest.skip("no float64")
    a = random_complex(rng, (2, 4, 4), dtype)
    h = (a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)).astype(dtype)   # Hermitian positive definite
    x, hx = lt.asarray(a, device=device), lt.asarray(h, device=device)
    tol = RTOL[dtype] * 100
    linalg = lt.linalg
    assert_complex_close(linalg.inv(x).numpy(), np.linalg.inv(a), tol, tol)
    assert_complex_close(linalg.det(x).numpy(), np.linalg.det(a), tol, tol)
    assert_complex_close(linalg.solve(x, hx).numpy(), np.linalg.solve(a, h), tol, tol)
    assert_complex_close(linalg.cholesky(hx).numpy(), np.linalg.cholesky(h), tol, tol)
    sign, logabsdet = linalg.slogdet(x)
    assert logabsdet.dtype == PART[dtype] and sign.dtype == dtype
    np.testing.assert_allclose(logabsdet.numpy(), np.linalg.slogdet(a)[1], rtol=tol)
    values, vectors = linalg.eigh(hx)
    assert values.dtype == PART[dtype] and vectors.dtype == dtype
    np.testing.assert_allclose(values.numpy(), np.linalg.eigvalsh(h), rtol=tol)
    v = vectors.numpy()   # (eigenvectors are unique up to a phase: check the decomposition)
    assert_complex_close((v * values.numpy()[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), h, tol, tol)
    s = linalg.svdvals(x)
    assert s.dtype == PART[dtype]
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=tol)
    q, r = linalg.qr(x)
    assert_complex_close((q @ r).numpy(), a, tol, tol)
    np.testing.assert_allclose(linalg.matrix_norm(x, ord=2).numpy(), np.linalg.norm(a, ord=2, axis=(-2, -1)), rtol=tol)
    np.testing.assert_allclose(linalg.matrix_norm(x).numpy(), np.linalg.norm(a, axis=(-2, -1)), rtol=tol)
    np.testing.assert_allclose(linalg.vector_norm(x, axis=-1, ord=3).numpy(),
                               np.linalg.norm(a, axis=-1, ord=3), rtol=tol)
    assert_complex_close(linalg.trace(x).numpy(), np.trace(a, axis1=-2, axis2=-1), tol, tol)
    assert_complex_close(linalg.matrix_power(x, 3).numpy(), np.linalg.matrix_power(a, 3), tol, tol)


def test_vecdot_conjugates_the_first_operand(device, rng):
    a, b = random_complex(rng, (3, 5), np.complex64), random_complex(rng, (5,), np.complex64)
    got = lt.vecdot(lt.asarray(a, device=device), lt.asarray(b, device=device)).numpy()
    assert_complex_close(got, np.vecdot(a, b), 1e-5, 1e-6)


def test_pinv_and_matrix_rank_of_complex_matrices(rng):
    a = random_complex(rng, (2, 5, 3), np.complex128)
    a[1, :, 2] = a[1, :, 0] * (2 - 1j)   # (rank 2)
    x = lt.asarray(a)
    assert_complex_close(lt.linalg.pinv(x).numpy(), np.linalg.pinv(a), 1e-10, 1e-10)
    np.testing.assert_array_equal(lt.linalg.matrix_rank(x).numpy(), np.linalg.matrix_rank(a))


def test_sums_of_complex_constants_are_not_folded_as_integers(device):
    # (constant folding summed any non-float constant exactly, as an integer: int() of a complex)
    got = lt.full((2, 3), 2 + 1j, dtype=lt.complex64, device=device)
    np.testing.assert_allclose(got.sum().numpy(), np.full((2, 3), 2 + 1j, np.complex64).sum())
    np.testing.assert_allclose(got.mean(axis=1).numpy(), np.full(2, 2 + 1j, np.complex64))
    dot = lt.full((3,), 1j, device=device) @ lt.full((3,), 1 + 1j, device=device)
    np.testing.assert_allclose(dot.numpy(), np.full(3, 1j, np.complex64) @ np.full(3, 1 + 1j, np.complex64))
