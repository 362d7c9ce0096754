"""The Array API's elementwise functions beyond the core ops, against numpy on every dtype,
with special values (nan, +-inf, -0.0). Where numpy refuses a dtype, lazytensor raises TypeError.
Rounding functions return integers unchanged, as the Array API (not numpy) specifies."""
import math

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-30, 1e30]

def np_erf(a: np.ndarray) -> np.ndarray:
    """erf as a numpy ufunc would give it (numpy has none): math.erf in float64, rounded to
    the dtype numpy's float ufuncs return for `a` (exp's)."""
    return np.vectorize(math.erf, otypes=[np.float64])(a.astype(np.float64)).astype(np.exp(a[:0]).dtype)


UNARY = {
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "expm1": np.expm1, "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": np.round, "signbit": np.signbit, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite, "sign": np.sign, "square": np.square,
    "positive": np.positive, "logical_not": np.logical_not, "bitwise_invert": np.invert,
    "erf": np_erf,
}
BINARY = {
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
    "logaddexp": np.logaddexp, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
ROUNDING = {"floor", "ceil", "trunc", "round"}


def sample(dtype: lt.DType, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        with np.errstate(over="ignore"):  # 1e30 is inf in float16, as intended
            return np.concatenate([SPECIAL, rng.standard_normal(40) * 3]).astype(dtype.np)
    if dtype.is_bool:
        return rng.random(50) < 0.5
    return rng.integers(0 if dtype.is_unsigned else -9, 9, 50).astype(dtype.np)


def expected(name, fn, *args):
    with np.errstate(all="ignore"):
        try:
            want = fn(*args)
        except TypeError:
            return TypeError
    if name in ROUNDING and args[0].dtype.kind != "f":
        return args[0]
    return want


def check(got, want) -> None:
    assert got.dtype == want.dtype, f"dtype {got.dtype} != numpy's {want.dtype}"
    tol = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6}.get(want.dtype, 1e-13)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
    if want.dtype.kind == "f":  # signed zeros too
        assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_function_matches_numpy(device, name, dtype):
    a = sample(dtype, 1)
    want = expected(name, UNARY[name], a)
    if want is TypeError:
        with pytest.raises(TypeError):
            getattr(lt, name)(lt.asarray(a, device=device))
        return
    check(getattr(lt, name)(lt.asarray(a, device=device)).numpy(), np.asarray(want))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_function_matches_numpy(device, name, dtype):
    a = sample(dtype, 2)
    b = a[::-1].copy()
    want = expected(name, BINARY[name], a, b)
    if want is TypeError:
        with pytest.raises(TypeError):
            getattr(lt, name)(lt.asarray(a, device=device), lt.asarray(b, device=device))
        return
    check(getattr(lt, name)(lt.asarray(a, device=device), lt.asarray(b, device=device)).numpy(), np.asarray(want))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d.is_integer], ids=lambda d: d.name)
def test_shifts_by_the_bit_width_or_more(device, dtype):
    bits = 8 * dtype.itemsize
    a = np.array([1, 3, 5, 7, 100, -8 if dtype.is_int else 8], dtype=dtype.np)
    counts = np.array([0, 1, bits - 1, bits, bits + 5, bits], dtype=dtype.np)
    x, n = lt.asarray(a, device=device), lt.asarray(counts, device=device)
    check((x << n).numpy(), np.left_shift(a, counts))
    check((x >> n).numpy(), np.right_shift(a, counts))


def test_shift_operators_and_in_place(device):
    a = np.arange(-5, 5, dtype=np.int32)
    x = lt.asarray(a, device=device)
    check((2 << lt.asarray(np.arange(4), device=device)).numpy(), 2 << np.arange(4))
    x <<= 2
    check(x.numpy(), a << 2)
    x >>= 1
    check(x.numpy(), (a << 2) >> 1)


def test_clip_and_real_parts(device):
    a = np.array([-3.0, -0.5, 0.0, 2.0, 9.0, np.nan], dtype=np.float32)
    x = lt.asarray(a, device=device)
    check(lt.clip(x, -1, 5).numpy(), np.clip(a, -1, 5))
    check(lt.clip(x, max=1.5).numpy(), np.minimum(a, np.float32(1.5)))
    ints = np.arange(-4, 5, dtype=np.int16)
    check(lt.clip(lt.asarray(ints, device=device), -2, 3).numpy(), np.clip(ints, -2, 3))
    check(lt.real(x).numpy(), a)
    check(lt.conj(x).numpy(), a)
    check(lt.imag(x).numpy(), np.zeros_like(a))


def test_logaddexp_does_not_overflow(device):
    a = np.array([1000.0, -1000.0, 0.0, -np.inf, np.inf], dtype=np.float64)
    check(lt.logaddexp(lt.asarray(a, device=device), a[::-1].copy()).numpy(), np.logaddexp(a, a[::-1]))
