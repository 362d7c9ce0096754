"""SciPy's Array API support on lazytensor tensors: functions of scipy.special, stats, fft,
cluster, integrate, signal and ndimage take lazytensor tensors and give lazytensor tensors equal to
what they give on numpy arrays (float64 and float32), and leave their inputs unchanged.

On the cpu only: SciPy's code is not device-agnostic for a namespace it does not know (its
compiled, cpu-only functions return arrays on the default device, and `xp.asarray(python_scalar)`
meets the inputs in `xp.where`), and lazytensor, as the standard allows, refuses to mix devices.
With another device as lazytensor's default (LT_DEVICE), they run on it."""
import numpy as np
import pytest

scipy = pytest.importorskip("scipy", reason="SciPy is not installed")

from conftest import skip_without_scipy_array_api  # noqa: E402

skip_without_scipy_array_api()

from scipy import fft, integrate, ndimage, special, stats  # noqa: E402
from scipy import signal as sig  # noqa: E402
from scipy.cluster import hierarchy, vq  # noqa: E402
from scipy.signal import windows  # noqa: E402

import lazytensor as lt  # noqa: E402

rng = np.random.default_rng(20251)
N = 24
Z, Z2 = rng.standard_normal(N), rng.standard_normal(N)     # any real
P, P2 = rng.uniform(0.2, 3.0, N), rng.uniform(0.2, 3.0, N)  # positive
U = rng.uniform(0.05, 0.95, N)                              # probabilities
K = rng.integers(0, 6, N)                                   # small counts
M = rng.standard_normal((6, 5))
IMG = rng.standard_normal((8, 9))
OBS = np.concatenate([rng.standard_normal((10, 2)), rng.standard_normal((10, 2)) + 4])
X = np.sort(rng.uniform(0, 3, N))                           # sample points
B, A = np.asarray([0.2, 0.3, 0.1]), np.asarray([1.0, -0.5, 0.1])   # a filter
SOS = sig.butter(4, 0.2, output="sos")

# (id, call(asarray, xp), what SciPy gives back):
#   "xp"      arrays of the input's namespace, of numpy's dtypes for float64 inputs;
#   (names)   arrays of the input's namespace of these dtypes for float64 inputs, where SciPy makes
#             them from Python numbers: float32, the namespace's default float (as in PyTorch),
#             where numpy's are float64; int64 where SciPy gives numpy a float (as on PyTorch);
#   "numpy"   numpy values (a function SciPy computes with numpy only)
CASES = [
    # ---- scipy.special
    ("special.erf", lambda a, xp: special.erf(a(Z)), "xp"),
    ("special.erfc", lambda a, xp: special.erfc(a(Z)), "xp"),
    ("special.gammaln", lambda a, xp: special.gammaln(a(P)), "xp"),
    ("special.psi", lambda a, xp: special.psi(a(P)), "xp"),
    ("special.xlogy", lambda a, xp: special.xlogy(a(Z), a(P)), "xp"),
    ("special.xlog1py", lambda a, xp: special.xlog1py(a(Z), a(P)), "xp"),
    ("special.ndtr", lambda a, xp: special.ndtr(a(M)), "xp"),
    ("special.ndtri", lambda a, xp: special.ndtri(a(U)), "xp"),
    ("special.log_ndtr", lambda a, xp: special.log_ndtr(a(Z)), "xp"),
    ("special.expit", lambda a, xp: special.expit(a(Z)), "xp"),
    ("special.logit", lambda a, xp: special.logit(a(U)), "xp"),
    ("special.entr", lambda a, xp: special.entr(a(np.concatenate([P, [0.0, -1.0]]))), "xp"),
    ("special.rel_entr", lambda a, xp: special.rel_entr(a(P), a(P2)), "xp"),
    ("special.i0e", lambda a, xp: special.i0e(a(Z)), "xp"),
    ("special.gammainc", lambda a, xp: special.gammainc(a(P), a(P2)), "xp"),
    ("special.betainc", lambda a, xp: special.betainc(a(P), a(P2), a(U)), "xp"),
    ("special.logsumexp", lambda a, xp: special.logsumexp(a(M), axis=1), "xp"),
    ("special.logsumexp(all)", lambda a, xp: special.logsumexp(a(M)), "xp"),
    ("special.logsumexp(b,keepdims)",
     lambda a, xp: special.logsumexp(a(M), axis=0, b=a(np.abs(M)), keepdims=True), "xp"),
    ("special.logsumexp(return_sign)", lambda a, xp: special.logsumexp(a(Z), b=a(Z2), return_sign=True), "xp"),
    ("special.softmax", lambda a, xp: special.softmax(a(M), axis=1), "xp"),
    ("special.log_softmax", lambda a, xp: special.log_softmax(a(M), axis=0), "xp"),
    # ---- scipy.stats
    ("stats.zscore", lambda a, xp: stats.zscore(a(M), axis=0), "xp"),
    ("stats.zscore(ddof)", lambda a, xp: stats.zscore(a(Z), ddof=1), "xp"),
    ("stats.zmap", lambda a, xp: stats.zmap(a(Z[:5]), a(Z2)), "xp"),
    ("stats.moment", lambda a, xp: stats.moment(a(M), order=3, axis=0), "xp"),
    ("stats.moment(orders)", lambda a, xp: stats.moment(a(M), order=[1, 2, 4], axis=1), "xp"),
    ("stats.skew", lambda a, xp: stats.skew(a(Z)), "xp"),
    ("stats.skew(bias=False)", lambda a, xp: stats.skew(a(M), axis=1, bias=False), "xp"),
    ("stats.kurtosis", lambda a, xp: stats.kurtosis(a(Z)), "xp"),
    ("stats.kurtosis(pearson)", lambda a, xp: stats.kurtosis(a(M), fisher=False, bias=False), "xp"),
    ("stats.describe", lambda a, xp: tuple(stats.describe(a(M), axis=0)), "xp"),
    ("stats.variation", lambda a, xp: stats.variation(a(P)), "xp"),
    ("stats.sem", lambda a, xp: stats.sem(a(M), axis=None), "xp"),
    ("stats.gmean", lambda a, xp: stats.gmean(a(P), weights=a(P2)), "xp"),
    ("stats.hmean", lambda a, xp: stats.hmean(a(P)), "xp"),
    ("stats.pmean", lambda a, xp: stats.pmean(a(P), 2.5), "xp"),
    ("stats.tmean", lambda a, xp: stats.tmean(a(Z), (-1, 1)), "xp"),
    ("stats.trim_mean", lambda a, xp: stats.trim_mean(a(M), 0.2, axis=1), "xp"),
    ("stats.quantile", lambda a, xp: stats.quantile(a(M), a(np.asarray([0.25, 0.5, 0.9])), axis=1), "xp"),
    ("stats.iqr", lambda a, xp: stats.iqr(a(Z)), "xp"),
    ("stats.rankdata", lambda a, xp: stats.rankdata(a(K)), ("float32",)),
    ("stats.mode", lambda a, xp: tuple(stats.mode(a(K))), "xp"),
    ("stats.entropy", lambda a, xp: stats.entropy(a(P)), "xp"),
    ("stats.entropy(qk,base)", lambda a, xp: stats.entropy(a(np.abs(M)), a(np.abs(M[::-1])), base=2, axis=1), "xp"),
    ("stats.differential_entropy", lambda a, xp: stats.differential_entropy(a(Z)), "xp"),
    ("stats.ttest_1samp", lambda a, xp: tuple(stats.ttest_1samp(a(Z), 0.2)), ("float64", "float64", "int64")),
    ("stats.ttest_1samp.ci", lambda a, xp: tuple(stats.ttest_1samp(a(Z), 0.0).confidence_interval(0.9)), "xp"),
    ("stats.ttest_ind", lambda a, xp: tuple(stats.ttest_ind(a(Z[:12]), a(Z2[:15] + 0.3))), "xp"),
    ("stats.ttest_ind(welch,2d)", lambda a, xp: tuple(stats.ttest_ind(a(M[:3]), a(M[3:]), equal_var=False)), "xp"),
    ("stats.ttest_rel", lambda a, xp: tuple(stats.ttest_rel(a(Z), a(Z2), alternative="less")),
     ("float64", "float64", "int64")),
    ("stats.pearsonr", lambda a, xp: tuple(stats.pearsonr(a(Z), a(Z + Z2))), "xp"),
    ("stats.pearsonr(axis=1)", lambda a, xp: tuple(stats.pearsonr(a(M[:3]), a(M[3:]), axis=1)), "xp"),
    ("stats.skewtest", lambda a, xp: tuple(stats.skewtest(a(Z))), "xp"),
    ("stats.normaltest", lambda a, xp: tuple(stats.normaltest(a(Z))), "xp"),
    ("stats.jarque_bera", lambda a, xp: tuple(stats.jarque_bera(a(Z))), "xp"),
    ("stats.bartlett", lambda a, xp: tuple(stats.bartlett(a(Z[:12]), a(2 * Z2[:15]))), "xp"),
    ("stats.chisquare", lambda a, xp: tuple(stats.chisquare(a(K + 1.0))), "xp"),
    ("stats.combine_pvalues", lambda a, xp: tuple(stats.combine_pvalues(a(U[:8]), method="stouffer")), "xp"),
    ("stats.circmean", lambda a, xp: stats.circmean(a(M), axis=0), "xp"),
    # ---- scipy.fft
    ("fft.fft", lambda a, xp: fft.fft(a(Z)), "xp"),
    ("fft.ifft(n,ortho)", lambda a, xp: fft.ifft(a(Z + 1j * Z2), n=30, norm="ortho"), "xp"),
    ("fft.rfft(next_fast_len)", lambda a, xp: fft.rfft(a(Z), n=fft.next_fast_len(N + 5, real=True)), "xp"),
    ("fft.irfft", lambda a, xp: fft.irfft(a(Z + 1j * Z2)), "xp"),
    ("fft.hfft", lambda a, xp: fft.hfft(a(Z + 1j * Z2), n=20), "xp"),
    ("fft.fft2", lambda a, xp: fft.fft2(a(M)), "xp"),
    ("fft.rfftn(s)", lambda a, xp: fft.rfftn(a(M), s=(8, 8)), "xp"),
    ("fft.fftshift", lambda a, xp: fft.fftshift(a(M)), "xp"),
    ("fft.ifftshift(axes)", lambda a, xp: fft.ifftshift(a(M), axes=0), "xp"),
    ("fft.fftfreq", lambda a, xp: fft.fftfreq(10, 0.1, xp=xp), ("float32",)),
    ("fft.rfftfreq", lambda a, xp: fft.rfftfreq(9, 0.5, xp=xp), ("float32",)),
    ("fft.dct", lambda a, xp: fft.dct(a(Z), type=2, norm="ortho"), "xp"),
    ("fft.idctn", lambda a, xp: fft.idctn(a(M)), "xp"),
    # ---- scipy.cluster
    ("vq.whiten", lambda a, xp: vq.whiten(a(OBS)), "xp"),
    ("vq.vq", lambda a, xp: vq.vq(a(OBS), a(OBS[[0, 15]])), "xp"),
    ("vq.kmeans(guess)", lambda a, xp: vq.kmeans(a(OBS), a(OBS[[0, 15]]))[0], "xp"),
    ("vq.kmeans2(matrix)", lambda a, xp: vq.kmeans2(a(OBS), a(OBS[[0, 15]]), minit="matrix"), "xp"),
    ("vq.kmeans2(++,seed)", lambda a, xp: vq.kmeans2(a(OBS), 2, minit="++", rng=np.random.default_rng(3)), "xp"),
    ("hierarchy.linkage", lambda a, xp: hierarchy.linkage(a(OBS[:8]), "average"), "xp"),
    ("hierarchy.fcluster", lambda a, xp: hierarchy.fcluster(hierarchy.ward(a(OBS[:8])), 2, criterion="maxclust"), "xp"),
    # ---- scipy.integrate
    ("integrate.trapezoid", lambda a, xp: integrate.trapezoid(a(P)), "xp"),
    ("integrate.trapezoid(x)", lambda a, xp: integrate.trapezoid(a(P), x=a(X)), "xp"),
    ("integrate.trapezoid(dx,axis)", lambda a, xp: integrate.trapezoid(a(M), dx=0.5, axis=0), "xp"),
    ("integrate.cumulative_trapezoid", lambda a, xp: integrate.cumulative_trapezoid(a(P), initial=0), "xp"),
    ("integrate.cumulative_trapezoid(x)", lambda a, xp: integrate.cumulative_trapezoid(a(M), x=a(X[:6]), axis=0), "xp"),
    ("integrate.cumulative_simpson(x)", lambda a, xp: integrate.cumulative_simpson(a(P), x=a(X)), "xp"),
    ("integrate.cumulative_simpson(initial)",   # (asks xp.result_type of Python scalars alone)
     lambda a, xp: integrate.cumulative_simpson(a(P), x=a(X), initial=0), "xp"),
    ("integrate.simpson", lambda a, xp: integrate.simpson(a(P), x=a(X)), "numpy"),
    ("integrate.romb", lambda a, xp: integrate.romb(a(P[:17]), dx=0.1), "xp"),
    ("integrate.tanhsinh", lambda a, xp: integrate.tanhsinh(lambda t: xp.exp(-t * t), a(np.zeros(2)),
                                                           a(np.asarray([0.5, 2.0]))).integral, "xp"),
    # ---- scipy.signal
    ("signal.convolve", lambda a, xp: sig.convolve(a(Z), a(Z2[:5])), "xp"),
    ("signal.convolve(same,direct)", lambda a, xp: sig.convolve(a(Z), a(Z2[:5]), mode="same", method="direct"), "xp"),
    ("signal.convolve(2d,fft)", lambda a, xp: sig.convolve(a(IMG), a(M[:3, :3]), method="fft"), "xp"),
    ("signal.correlate(valid)", lambda a, xp: sig.correlate(a(Z), a(Z2[:5]), mode="valid"), "xp"),
    ("signal.fftconvolve", lambda a, xp: sig.fftconvolve(a(Z), a(Z2[:7])), "xp"),
    ("signal.fftconvolve(2d,same)", lambda a, xp: sig.fftconvolve(a(IMG), a(M[:3, :3]), mode="same"), "xp"),
    ("signal.oaconvolve", lambda a, xp: sig.oaconvolve(a(Z), a(Z2[:5])), "xp"),
    ("signal.convolve2d", lambda a, xp: sig.convolve2d(a(IMG), a(M[:3, :3])), "xp"),
    ("signal.lfilter", lambda a, xp: sig.lfilter(a(B), a(A), a(Z)), "xp"),
    ("signal.lfilter(zi,axis)", lambda a, xp: sig.lfilter(a(B), a(A), a(M), axis=0, zi=a(np.ones((2, 5)))), "xp"),
    ("signal.filtfilt", lambda a, xp: sig.filtfilt(a(B), a(A), a(Z)), "xp"),
    ("signal.sosfilt", lambda a, xp: sig.sosfilt(a(SOS), a(Z)), "xp"),
    ("signal.detrend", lambda a, xp: sig.detrend(a(M), axis=0), "xp"),
    ("signal.hilbert", lambda a, xp: sig.hilbert(a(Z)), "xp"),
    ("signal.resample", lambda a, xp: sig.resample(a(Z), 12), "xp"),
    ("signal.savgol_filter", lambda a, xp: sig.savgol_filter(a(Z), 7, 2), "xp"),
    ("signal.medfilt", lambda a, xp: sig.medfilt(a(Z), 3), "xp"),
    ("signal.freqz", lambda a, xp: sig.freqz(a(B), a(A), worN=16), "xp"),
    ("signal.minimum_phase", lambda a, xp: sig.minimum_phase(a(sig.firwin(15, 0.3))), "xp"),   # reads x.real
    ("signal.firwin", lambda a, xp: sig.firwin(11, a(np.asarray(0.3))), "xp"),
    ("windows.get_window", lambda a, xp: windows.get_window("hann", 11, xp=xp), "xp"),
    ("windows.kaiser", lambda a, xp: windows.kaiser(11, 4.0, xp=xp), "xp"),
    # ---- scipy.ndimage
    ("ndimage.gaussian_filter", lambda a, xp: ndimage.gaussian_filter(a(IMG), 1.0), "xp"),
    ("ndimage.uniform_filter1d", lambda a, xp: ndimage.uniform_filter1d(a(Z), 3), "xp"),
    ("ndimage.median_filter", lambda a, xp: ndimage.median_filter(a(IMG), 3), "xp"),
    ("ndimage.sobel", lambda a, xp: ndimage.sobel(a(IMG), axis=0), "xp"),
    ("ndimage.zoom", lambda a, xp: ndimage.zoom(a(IMG), 1.5, order=1), "xp"),
    ("ndimage.label", lambda a, xp: ndimage.label(a(IMG > 0.3)), "xp"),
    ("ndimage.mean(labels)", lambda a, xp: ndimage.mean(a(IMG), a(np.arange(72).reshape(8, 9) % 3), a(np.arange(3))),
     "xp"),
]


def _leaves(result) -> list:
    """The arrays and numbers of a result (tuples of them, nested), in order."""
    if isinstance(result, (tuple, list)):
        return [leaf for part in result for leaf in _leaves(part)]
    return [result]


def _run(call, dtype):
    """call's result on arrays made by lt.asarray of float64 data cast to `dtype` (other data as
    it is), checking that SciPy left the inputs as they were."""
    made = []

    def asarray(data):
        data = np.asarray(data)
        tensor = lt.asarray(data.astype(dtype) if data.dtype == np.float64 else data)
        made.append((tensor, tensor.numpy().copy()))
        return tensor
    result = call(asarray, lt)
    for tensor, before in made:
        np.testing.assert_array_equal(tensor.numpy(), before, err_msg="SciPy changed an input")
    return result


def _numpy_result(call, dtype):
    return call(lambda data: np.asarray(data).astype(dtype) if np.asarray(data).dtype == np.float64
                else np.asarray(data), np)


@pytest.mark.parametrize("case", CASES, ids=[name for name, _, _ in CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: d.__name__)
def test_scipy_function_on_lazytensor_matches_numpy(case, dtype):
    name, call, gives = case
    got, want = _leaves(_run(call, dtype)), _leaves(_numpy_result(call, dtype))
    assert len(got) == len(want), f"{name}: {len(got)} results, on numpy {len(want)}"
    dtypes = gives if isinstance(gives, tuple) else (None,) * len(want)
    for g, w, expected in zip(got, want, dtypes):
        if isinstance(w, (np.ndarray, np.generic)):
            if gives == "numpy":
                assert isinstance(g, (np.ndarray, np.generic)), f"{name} gave {type(g).__name__}"
            else:
                assert isinstance(g, lt.Tensor), f"{name} gave {type(g).__name__}, not a lazytensor Tensor"
                if dtype is np.float64:
                    assert g.dtype.name == (expected or w.dtype.name), (name, g.dtype, expected or w.dtype)
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{name}: shape {g.shape}, on numpy {w.shape}"
        if w.dtype.kind in "fc" or g.dtype.kind in "fc":
            single = dtype is np.float32 or expected == "float32"
            np.testing.assert_allclose(g, w, rtol=2e-4 if single else 1e-10, atol=2e-5 if single else 1e-12,
                                       equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_results_stay_lazy_and_compose():
    # A SciPy result is an ordinary lazytensor tensor: it feeds lazytensor and SciPy again.
    x = lt.asarray(Z)
    z = stats.zscore(x)
    assert isinstance(z, lt.Tensor)
    y = special.logsumexp(lt.exp(z) * 2, b=special.softmax(z))
    want = special.logsumexp(np.exp(stats.zscore(Z)) * 2, b=special.softmax(stats.zscore(Z)))
    assert isinstance(y, lt.Tensor) and y.shape == ()
    np.testing.assert_allclose(y.item(), want, rtol=1e-12)
