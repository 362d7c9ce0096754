"""Shared test set-up: a private kernel cache per test session, and the devices to test on."""
import os
import tempfile

import numpy as np
import pytest

# Before lazytensor is imported anywhere: tests never touch the user's real cache.
os.environ.setdefault("LT_CACHE_DIR", tempfile.mkdtemp(prefix="lt-test-cache-"))

import lazytensor as lt  # noqa: E402

DEVICES = lt.devices()
DTYPES = [lt.bool_, lt.int32, lt.int64, lt.float32, lt.float64]


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
        tol = 2e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got_array, want, rtol=tol, atol=tol, equal_nan=True)
