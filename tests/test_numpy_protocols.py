"""numpy's functions on tensors: np.sum(t), np.exp(t), `array + t`, `array += t`, np.dtype(...).

numpy's reductions call the tensor's methods with its own keywords (out=None, dtype=); its ufuncs
go through Tensor.__array_ufunc__, which gives lazy tensors for what lazytensor computes and lets
numpy compute the rest on the values."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import assert_close
from lazytensor.numpy_api import UFUNCS as _UFUNCS

_rng = np.random.default_rng(5)


@pytest.mark.parametrize("name, kwargs", [
    ("sum", {}), ("sum", {"axis": 0, "dtype": np.float64}), ("mean", {"axis": 1, "keepdims": True}),
    ("mean", {"dtype": np.float64}), ("var", {"ddof": 1}), ("std", {"axis": 0, "dtype": np.float64}),
    ("max", {"axis": 1}), ("min", {}), ("prod", {"axis": 0}), ("any", {}), ("all", {"axis": 1}),
    ("argmax", {"axis": 0}), ("argmin", {}),
], ids=lambda v: str(v))
def test_numpy_reductions_give_tensors(device, name, kwargs):
    a = _rng.standard_normal((3, 4)).astype(np.float32)
    got = getattr(np, name)(lt.asarray(a, device=device), **kwargs)
    assert isinstance(got, lt.Tensor), f"np.{name} gave {type(got).__name__}"
    want = getattr(np, name)(a, **kwargs)
    assert_close(got, np.asarray(want))


def test_out_is_refused_by_the_methods():
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(lt.ones(3), out=np.zeros(()))


UNARY_DOMAIN = {"log": (0.5, 2), "log2": (0.5, 2), "log10": (0.5, 2), "log1p": (0.5, 2), "sqrt": (0.5, 2),
                "arccosh": (1.5, 3), "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
                "reciprocal": (0.5, 2), "power": (0.5, 2)}
BOOLEAN = {"logical_and", "logical_or", "logical_xor", "logical_not"}
INTEGER = {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"}


@pytest.mark.parametrize("name", sorted(_UFUNCS))
def test_numpy_ufuncs_give_lazy_tensors(name):
    ufunc = getattr(np, name)
    if name in BOOLEAN:
        arrays = [_rng.random((2, 5)) < 0.5 for _ in range(ufunc.nin)]
    elif name in INTEGER:
        arrays = [_rng.integers(0, 6, (2, 5)).astype(np.int32) for _ in range(ufunc.nin)]
    elif name == "matmul":
        arrays = [_rng.standard_normal((2, 5)), _rng.standard_normal((5, 3))]
    else:
        low, high = UNARY_DOMAIN.get(name, (-2, 2))
        arrays = [_rng.uniform(low, high, (2, 5)) for _ in range(ufunc.nin)]
    want = ufunc(*arrays)
    got = ufunc(*[lt.asarray(a) for a in arrays])
    assert isinstance(got, lt.Tensor), f"np.{name} gave {type(got).__name__}"
    assert_close(got, want)
    mixed = ufunc(arrays[0], *[lt.asarray(a) for a in arrays[1:]]) if ufunc.nin == 2 else None
    if mixed is not None:   # (an ndarray on the left: the tensor's __array_ufunc__ decides)
        assert isinstance(mixed, lt.Tensor)
        assert_close(mixed, want)


def test_an_ndarray_on_the_left_and_in_place():
    a, t = np.arange(4.0), lt.asarray([1.0, 2.0, 3.0, 4.0])
    for result, want in ((a + t, a + t.numpy()), (a < t, a < t.numpy()), (a @ t, a @ t.numpy())):
        assert isinstance(result, lt.Tensor)
        assert_close(result, np.asarray(want))
    b = a.copy()
    b += t          # numpy's in-place add: b stays an ndarray and holds the values
    assert type(b) is np.ndarray
    np.testing.assert_array_equal(b, a + t.numpy())
    c = np.zeros(4, np.int32)
    with pytest.raises(Exception):   # (numpy's same_kind rule: float into int)
        c += t


def test_what_lazytensor_lacks_numpy_computes_on_the_values():
    t = lt.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert np.add.reduce(t, axis=0).tolist() == [4.0, 6.0]
    assert np.exp(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="cannot write into a lazytensor tensor"):
        np.add.accumulate(np.ones(2), out=lt.zeros(2))


def test_out_tensor_and_np_dtype():
    t = lt.zeros(3)
    assert np.add(lt.ones(3), 1.0, out=t) is t
    assert t.tolist() == [2.0, 2.0, 2.0]
    assert np.dtype(lt.float32) == np.float32 and np.zeros(2, dtype=lt.complex64).dtype == np.complex64
    assert np.dtype(lt.asarray([1, 2]).dtype) == np.int64


# ---- numpy's functions (__array_function__) -----------------------------------------------------

def _data(shape, dtype=np.float64, low=-2.0, high=2.0):
    return _rng.uniform(low, high, shape).astype(dtype)


_SQUARE = _data((2, 3, 3)) + 4 * np.eye(3)
_SPD = _SQUARE @ np.swapaxes(_SQUARE, -1, -2)
_INTS = _rng.integers(-3, 4, (4, 5))
_SORTED = np.sort(_data(7))

# (call, its array arguments): numpy's function on tensors must give a tensor of numpy's values
FUNCTIONS = [
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), [_data((2, 3)), _data((2, 1))]),
    ("concatenate-none", lambda a, b: np.concatenate([a, b], axis=None), [_data((2, 3)), _data(4)]),
    ("concatenate-dtype", lambda a, b: np.concatenate([a, b], dtype=np.float32), [_data(3), _data(2)]),
    ("concat", lambda a, b: np.concat((a, b)), [_data((1, 3)), _data((2, 3))]),
    ("stack", lambda a, b: np.stack([a, b], axis=-1), [_data((2, 3)), _data((2, 3))]),
    ("where", lambda c, a: np.where(c > 0, a, 0.5), [_data((3, 4)), _data((1, 4))]),
    ("where-1", lambda c: np.where(c > 0), [_data((3, 4))]),
    ("reshape", lambda a: np.reshape(a, (6, -1)), [_data((3, 4))]),
    ("transpose", lambda a: np.transpose(a), [_data((2, 3, 4))]),
    ("transpose-axes", lambda a: np.transpose(a, (1, 0, 2)), [_data((2, 3, 4))]),
    ("permute_dims", lambda a: np.permute_dims(a, (2, 0, 1)), [_data((2, 3, 4))]),
    ("matrix_transpose", lambda a: np.matrix_transpose(a), [_data((2, 3, 4))]),
    ("swapaxes", lambda a: np.swapaxes(a, 0, -1), [_data((2, 3, 4))]),
    ("ravel", lambda a: np.ravel(a), [_data((2, 3))[:, ::-1]]),
    ("expand_dims", lambda a: np.expand_dims(a, 1), [_data((2, 3))]),
    ("squeeze", lambda a: np.squeeze(a), [_data((1, 3, 1))]),
    ("squeeze-axis", lambda a: np.squeeze(a, axis=2), [_data((1, 3, 1))]),
    ("moveaxis", lambda a: np.moveaxis(a, 0, -1), [_data((2, 3, 4))]),
    ("flip", lambda a: np.flip(a, axis=1), [_data((2, 3))]),
    ("flip-all", lambda a: np.flip(a), [_data((2, 3))]),
    ("roll", lambda a: np.roll(a, 2), [_data((2, 3))]),
    ("roll-axis", lambda a: np.roll(a, -1, axis=0), [_data((3, 2))]),
    ("tile", lambda a: np.tile(a, (2, 1)), [_data((2, 3))]),
    ("repeat", lambda a: np.repeat(a, 2, axis=0), [_data((2, 3))]),
    ("repeat-flat", lambda a: np.repeat(a, 3), [_data((2, 2))]),
    ("broadcast_to", lambda a: np.broadcast_to(a, (4, 3)), [_data(3)]),
    ("tril", lambda a: np.tril(a, k=-1), [_data((4, 4))]),
    ("triu", lambda a: np.triu(a), [_data((3, 4))]),
    ("clip", lambda a: np.clip(a, -0.5, 0.5), [_data((3, 4))]),
    ("clip-keywords", lambda a: np.clip(a, min=0.0), [_data((3, 4))]),
    ("round", lambda a: np.round(a), [_data(6) * 3]),
    ("around", lambda a: np.around(a), [_data(6) * 3]),
    ("cumsum", lambda a: np.cumsum(a), [_data((2, 3))]),
    ("cumsum-axis", lambda a: np.cumsum(a, axis=1), [_data((2, 3))]),
    ("cumprod", lambda a: np.cumprod(a, axis=0), [_data((3, 2))]),
    ("cumulative_sum", lambda a: np.cumulative_sum(a, axis=0, include_initial=True), [_data((3, 2))]),
    ("diff", lambda a: np.diff(a, n=2, axis=0), [_data((5, 3))]),
    ("diff-append", lambda a: np.diff(a, append=a[-1:]), [_data(5)]),
    ("sort", lambda a: np.sort(a, axis=0), [_data((4, 3))]),
    ("sort-flat", lambda a: np.sort(a, axis=None), [_data((4, 3))]),
    ("argsort", lambda a: np.argsort(a, kind="stable"), [_INTS.astype(np.float64)]),
    ("searchsorted", lambda a, v: np.searchsorted(a, v, side="right"), [_SORTED, _data(5)]),
    ("take", lambda a, i: np.take(a, i, axis=1), [_data((2, 5)), _rng.integers(0, 5, 3)]),
    ("take-flat", lambda a, i: np.take(a, i), [_data((2, 5)), _rng.integers(0, 10, 4)]),
    ("take_along_axis", lambda a: np.take_along_axis(a, np.argsort(a, axis=1), axis=1), [_data((3, 4))]),
    ("nonzero", lambda a: np.nonzero(a), [_INTS]),
    ("count_nonzero", lambda a: np.count_nonzero(a, axis=0), [_INTS]),
    ("isin", lambda a: np.isin(a, [0, 2, 3]), [_INTS]),
    ("unique", lambda a: np.unique(a), [_INTS]),
    ("unique_values", lambda a: np.sort(np.unique_values(a)), [_INTS]),
    ("dot", lambda a, b: np.dot(a, b), [_data((3, 4)), _data(4)]),
    ("dot-scalar", lambda a: np.dot(a, 2.0), [_data(3)]),
    ("outer", lambda a, b: np.outer(a, b), [_data((2, 2)), _data(3)]),
    ("tensordot", lambda a, b: np.tensordot(a, b, axes=([1], [0])), [_data((2, 3)), _data((3, 4))]),
    ("trace", lambda a: np.trace(a), [_data((3, 4, 2))]),
    ("diagonal", lambda a: np.diagonal(a, offset=1), [_data((3, 4))]),
    ("zeros_like", lambda a: np.zeros_like(a), [_data((2, 3))]),
    ("full_like", lambda a: np.full_like(a, 7, dtype=np.int32), [_data((2, 3))]),
    ("astype", lambda a: np.astype(a, np.float32), [_data(3)]),
    ("copy", lambda a: np.copy(a), [_data(3)]),
    ("broadcast_arrays", lambda a, b: np.broadcast_arrays(a, b), [_data((3, 1)), _data(4)]),
    ("meshgrid", lambda a, b: np.meshgrid(a, b, indexing="ij"), [_data(3), _data(2)]),
    ("linalg.inv", lambda a: np.linalg.inv(a), [_SQUARE]),
    ("linalg.det", lambda a: np.linalg.det(a), [_SQUARE]),
    ("linalg.slogdet", lambda a: np.linalg.slogdet(a), [_SQUARE]),
    ("linalg.solve", lambda a, b: np.linalg.solve(a, b), [_SQUARE, _data((2, 3, 2))]),
    ("linalg.cholesky", lambda a: np.linalg.cholesky(a), [_SPD]),
    ("linalg.cholesky-upper", lambda a: np.linalg.cholesky(a, upper=True), [_SPD]),
    ("linalg.eigvalsh", lambda a: np.linalg.eigvalsh(a), [_SPD]),
    ("linalg.eigh", lambda a: np.linalg.eigh(a), [_SPD]),
    ("linalg.qr", lambda a: np.linalg.qr(a, mode="complete"), [_data((4, 3))]),
    ("linalg.svd", lambda a: np.linalg.svd(a, full_matrices=False), [_data((4, 3))]),
    ("linalg.svdvals", lambda a: np.linalg.svd(a, compute_uv=False), [_data((4, 3))]),
    ("linalg.matrix_power", lambda a: np.linalg.matrix_power(a, 3), [_SQUARE]),
    ("linalg.norm", lambda a: np.linalg.norm(a), [_data((3, 4))]),
    ("linalg.norm-axis", lambda a: np.linalg.norm(a, ord=1, axis=1, keepdims=True), [_data((3, 4))]),
    ("linalg.norm-matrix", lambda a: np.linalg.norm(a, ord="nuc", axis=(2, 0)), [_data((3, 2, 4))]),
    ("linalg.matrix_norm", lambda a: np.linalg.matrix_norm(a, ord=np.inf), [_data((2, 3, 4))]),
    ("linalg.vector_norm", lambda a: np.linalg.vector_norm(a, axis=0, ord=3), [_data((3, 4))]),
    ("linalg.cross", lambda a, b: np.linalg.cross(a, b), [_data((2, 3)), _data((2, 3))]),
    ("linalg.outer", lambda a, b: np.linalg.outer(a, b), [_data(2), _data(3)]),
    ("linalg.trace", lambda a: np.linalg.trace(a, offset=-1), [_data((2, 3, 3))]),
    ("fft.fft", lambda a: np.fft.fft(a, n=6), [_data((2, 5))]),
    ("fft.rfft", lambda a: np.fft.rfft(a, axis=0, norm="ortho"), [_data((5, 2))]),
    ("fft.irfft", lambda a: np.fft.irfft(np.fft.rfft(a)), [_data(8)]),
    ("fft.fftn", lambda a: np.fft.fftn(a, axes=(0, 1)), [_data((3, 4))]),
    ("fft.fftshift", lambda a: np.fft.fftshift(a), [_data((3, 4))]),
]


def _leaves(value):
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("call, arrays", [case[1:] for case in FUNCTIONS], ids=[case[0] for case in FUNCTIONS])
def test_numpy_functions_give_lazy_tensors(call, arrays):
    want = call(*arrays)
    got = call(*[lt.asarray(a) for a in arrays])
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
    for mine, theirs in zip(_leaves(got), _leaves(want)):
        assert isinstance(mine, lt.Tensor), f"gave {type(mine).__name__}"
        assert np.dtype(mine.dtype) == np.asarray(theirs).dtype
        np.testing.assert_allclose(mine.numpy(), np.asarray(theirs), rtol=1e-9, atol=1e-9)


def test_numpy_functions_stay_lazy_and_fuse():
    a = _data((3, 4))
    t = lt.asarray(a).realize()
    result = np.sum(np.concatenate([np.exp(t), t]) * 2, axis=0)
    assert isinstance(result, lt.Tensor) and result.node.op.name != "BUFFER"   # (pending)
    launched = lt.stats()["kernels_launched"]
    assert_close(result, np.sum(np.concatenate([np.exp(a), a]) * 2, axis=0))
    assert lt.stats()["kernels_launched"] - launched == 1   # (exp, concatenate, scale and sum: one kernel)


def test_numpy_functions_take_ndarrays_beside_tensors(device):
    a, b = _data((2, 3)), _data((1, 3))
    got = np.concatenate([lt.asarray(a, device=device), b])
    assert isinstance(got, lt.Tensor) and got.device == device
    assert_close(got, np.concatenate([a, b]))
    got = np.where(a > 0, lt.asarray(b, device=device), a)
    assert isinstance(got, lt.Tensor) and got.device == device
    assert_close(got, np.where(a > 0, b, a))


def test_shape_queries_do_not_compute():
    t = lt.asarray(_data((3, 4))) + 1   # (pending: reading its shape must not realize it)
    assert np.shape(t) == (3, 4) and np.ndim(t) == 2 and np.size(t) == 12 and np.size(t, 1) == 4
    assert np.result_type(t, np.float32) == np.float64
    assert t.node.op.name != "BUFFER"


@pytest.mark.parametrize("call", [
    lambda a: np.median(a, axis=0), lambda a: np.percentile(a, 30), lambda a: np.einsum("ij->j", a),
    lambda a: np.round(a, 2), lambda a: np.take(a, [[0, 1]], axis=0), lambda a: np.dot(np.stack([a, a]), a.T),
    lambda a: np.concatenate([a, a], casting="unsafe", dtype=np.int32), lambda a: np.allclose(a, a),
    lambda a: np.unique(a, return_counts=True), lambda a: np.linalg.pinv(a), lambda a: np.real(a),
    lambda a: np.atleast_3d(a), lambda a: np.linalg.eig(a + a.T),
], ids=["median", "percentile", "einsum", "round-decimals", "take-2d", "dot-stacks", "concatenate-casting",
        "allclose", "unique-counts", "pinv", "real", "atleast_3d", "eig-real"])
def test_what_lazytensor_lacks_numpy_computes(call):
    a = _data((3, 3))
    want = call(a)
    got = call(lt.asarray(a))
    for mine, theirs in zip(_leaves(got), _leaves(want)):
        assert not isinstance(mine, lt.Tensor)
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_out_arrays_are_written_by_numpy():
    a = _data((2, 3))
    out = np.empty((4, 3))
    assert np.concatenate([lt.asarray(a), a], out=out) is out
    np.testing.assert_array_equal(out, np.concatenate([a, a]))


def test_other_libraries_arrays_are_theirs():
    class Foreign:
        def __array_function__(self, func, types, args, kwargs):
            return "foreign"
    assert np.concatenate([lt.ones(2), Foreign()]) == "foreign"
