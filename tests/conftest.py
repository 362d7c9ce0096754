"""Shared test set-up: a private kernel cache per test session, and the devices to test on."""
import operator
import os
import tempfile

import numpy as np
import pytest

# Before lazytensor is imported anywhere: tests never touch the user's real cache.
os.environ.setdefault("LT_CACHE_DIR", tempfile.mkdtemp(prefix="lt-test-cache-"))

import lazytensor as lt  # noqa: E402

DEVICES = lt.devices()
DTYPES = [lt.bool_, lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.uint16, lt.uint32, lt.uint64,
          lt.float16, lt.float32, lt.float64]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random values of `dtype` that exercise signs, zero and (for ints) small magnitudes."""
    np_dtype = np.dtype(dtype.name if isinstance(dtype, lt.DType) else dtype)
    if np_dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np_dtype.kind == "i":
        return rng.integers(-20, 20, size=shape).astype(np_dtype)
    if np_dtype.kind == "u":
        return rng.integers(0, 40, size=shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def assert_close(got, want, dtype=None) -> None:
    """Compare with numpy: exact for bool/int, a few ulp-ish relative tolerance for floats."""
    got_array = np.asarray(got)
    want = np.asarray(want)
    assert got_array.shape == want.shape, f"shape {got_array.shape} != numpy's {want.shape}"
    assert got_array.dtype == want.dtype, f"dtype {got_array.dtype} != numpy's {want.dtype}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got_array, want)
    else:
        tol = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5}.get(want.dtype, 1e-12)
        np.testing.assert_allclose(got_array, want, rtol=tol, atol=tol, equal_nan=True)


# Binary ops as (lazytensor spelling, numpy function). The lazytensor spelling is the Python
# operator where there is one, which also exercises the reflected form with a scalar on the left.
ARITHMETIC = {
    "add": (operator.add, np.add),
    "sub": (operator.sub, np.subtract),
    "mul": (operator.mul, np.multiply),
    "truediv": (operator.truediv, np.true_divide),
    "floordiv": (operator.floordiv, np.floor_divide),
    "mod": (operator.mod, np.remainder),
    "pow": (operator.pow, np.power),
}
COMPARISONS = {
    "lt": (operator.lt, np.less), "le": (operator.le, np.less_equal),
    "gt": (operator.gt, np.greater), "ge": (operator.ge, np.greater_equal),
    "eq": (operator.eq, np.equal), "ne": (operator.ne, np.not_equal),
}
OTHER_BINARY = {
    "and": (operator.and_, np.bitwise_and), "or": (operator.or_, np.bitwise_or),
    "xor": (operator.xor, np.bitwise_xor),
    "maximum": (lt.maximum, np.maximum), "minimum": (lt.minimum, np.minimum),
}
BINARY = {**ARITHMETIC, **COMPARISONS, **OTHER_BINARY}
