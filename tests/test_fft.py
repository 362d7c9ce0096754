"""lt.fft against numpy.fft on every device: every transform with n/s, axes and norm, every input
dtype, the frequency helpers and shifts, and the errors of bad arguments."""
import zlib

import numpy as np
import pytest

import gradcheck
import lazytensor as lt
from conftest import has_fp64

ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_AXES = ["fftn", "ifftn", "rfftn", "irfftn"]
REAL_INPUT = {"rfft", "rfftn", "ihfft"}


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _input(rng, name, shape, precision):
    real = rng.standard_normal(shape)
    data = real if name in REAL_INPUT else real + 1j * rng.standard_normal(shape)
    return data.astype(precision if name in REAL_INPUT else {np.float32: np.complex64, np.float64: np.complex128}[precision])


def _close(got, want, precision):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=(2e-5 if precision is np.float32 else 1e-12) * scale)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("precision", [np.float32, np.float64], ids=lambda p: p.__name__)
def test_one_axis_transforms(device, rng, name, precision, norm):
    if precision is np.float64 and not has_fp64(device):
        pytest.skip("no float64")
    a = _input(rng, name, (3, 7, 5), precision)
    for n, axis in ((None, -1), (4, 1), (9, 0), (1, -1)):
        got = getattr(lt.fft, name)(lt.asarray(a, device=device), n=n, axis=axis, norm=norm).numpy()
        _close(got, getattr(np.fft, name)(a, n=n, axis=axis, norm=norm), precision)


@pytest.mark.parametrize("name", MANY_AXES)
@pytest.mark.parametrize("precision", [np.float32, np.float64], ids=lambda p: p.__name__)
def test_many_axes_transforms(device, rng, name, precision):
    if precision is np.float64 and not has_fp64(device):
        pytest.skip("no float64")
    a = _input(rng, name, (2, 5, 6), precision)
    for s, axes in ((None, None), ((4, 3), (1, 2)), (None, (0, 2)), ((3, 8), (2, 1)), (None, (-1,))):
        got = getattr(lt.fft, name)(lt.asarray(a, device=device), s=s, axes=axes, norm="ortho").numpy()
        _close(got, getattr(np.fft, name)(a, s=s, axes=axes, norm="ortho"), precision)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16])
def test_other_input_dtypes_compute_as_numpy(rng, dtype):
    a = (rng.standard_normal((2, 6)) * 4).astype(dtype)
    for name in ("fft", "rfft", "fftn", "irfft"):
        got = getattr(lt.fft, name)(lt.asarray(a)).numpy()
        if dtype is np.float16:   # float32 work, float32/complex64 results (numpy's irfft gives float16 here)
            want = getattr(np.fft, name)(a.astype(np.float32))
            np.testing.assert_allclose(got, want, atol=1e-5 * max(1.0, float(np.abs(want).max())))
            assert got.dtype == (np.complex64 if name != "irfft" else np.float32)
        else:
            _close(got, getattr(np.fft, name)(a), np.float64)


def test_round_trips_and_laziness(device, rng):
    a = rng.standard_normal((4, 10)).astype(np.float32)
    x = lt.asarray(a, device=device)
    spectrum = lt.fft.rfft(x * 2)    # (fused producer, then the opaque step, then a fused consumer)
    back = lt.fft.irfft(spectrum * 0.5, n=10) + 1
    np.testing.assert_allclose(back.numpy(), a + 1, atol=1e-5)
    z = lt.fft.ifft(lt.fft.fft(x))
    np.testing.assert_allclose(lt.real(z).numpy(), a, atol=1e-5)
    np.testing.assert_allclose(lt.imag(z).numpy(), 0, atol=1e-5)


def test_zero_size_batch(device):
    a = np.zeros((0, 4), np.complex64)
    got = lt.fft.fft(lt.asarray(a, device=device)).numpy()
    assert got.shape == (0, 4) and got.dtype == np.complex64


@pytest.mark.parametrize("n", [1, 2, 7, 8])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies_and_shifts(device, n, d):
    np.testing.assert_allclose(lt.fft.fftfreq(n, d=d, device=device).numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
    np.testing.assert_allclose(lt.fft.rfftfreq(n, d=d, device=device).numpy(), np.fft.rfftfreq(n, d), rtol=1e-6)
    assert lt.fft.fftfreq(n, device=device).dtype == lt.float32
    if has_fp64(device):
        assert lt.fft.fftfreq(n, dtype=lt.float64, device=device).numpy().dtype == np.float64
    a = np.arange(n * 3).reshape(3, n)
    for axes in (None, 1, (0,), (0, 1)):
        np.testing.assert_array_equal(lt.fft.fftshift(lt.asarray(a, device=device), axes=axes).numpy(),
                                      np.fft.fftshift(a, axes=axes))
        np.testing.assert_array_equal(lt.fft.ifftshift(lt.asarray(a, device=device), axes=axes).numpy(),
                                      np.fft.ifftshift(a, axes=axes))


@pytest.mark.parametrize("call, error, words", [
    (lambda x: lt.fft.fft(x, n=0), ValueError, "invalid number"),
    (lambda x: lt.fft.fft(x, norm="half"), ValueError, "norm"),
    (lambda x: lt.fft.rfft(x.astype(lt.complex64)), TypeError, "real"),
    (lambda x: lt.fft.irfft(x[:, :1]), ValueError, "invalid number"),
    (lambda x: lt.fft.fftn(x, s=(2,), axes=(0, 1)), ValueError, "sizes"),
    (lambda x: lt.fft.fftn(x, axes=(0, 0)), ValueError, "distinct"),
    (lambda x: lt.fft.fft(x, axis=2), ValueError, "axis"),
    (lambda x: lt.fft.fft(x[0, 0]), ValueError, "0-d"),
    (lambda x: lt.fft.fftfreq(0), ValueError, "positive"),
    (lambda x: lt.fft.fftfreq(3, dtype=lt.int32), TypeError, "floating"),
], ids=["n=0", "norm", "rfft-complex", "irfft-n=0", "s-axes", "repeated-axes", "axis-range", "0-d", "freq-n",
        "freq-dtype"])
def test_bad_arguments_raise_at_the_call(call, error, words):
    x = lt.ones((2, 3))
    with pytest.raises(error, match=words):
        call(x)


@pytest.mark.parametrize("name", ONE_AXIS)
def test_gradients_on_every_device(device, rng, name):
    # (every transform, norm and n= against finite differences in float64: tests/test_autograd.py)
    precision = np.float64 if has_fp64(device) else np.float32
    x = rng.standard_normal((2, 6)).astype(precision)
    if name not in REAL_INPUT:
        x = x + 1j * rng.standard_normal((2, 6)).astype(precision)
    transform = getattr(lt.fft, name)
    loose = {} if precision is np.float64 else {"eps": 1e-2, "rtol": 2e-3, "atol": 2e-3}
    gradcheck.check_gradient(lambda t: transform(t, n=5, norm="ortho") * 2, x, device=device, **loose)


def test_gradient_of_a_zero_size_transform(device):
    x = lt.zeros((0, 4), dtype=lt.complex64, device=device).requires_grad_()
    lt.abs(lt.fft.fft(x)).sum().backward()
    assert x.grad.shape == (0, 4) and x.grad.dtype == lt.complex64
