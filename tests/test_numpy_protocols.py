"""numpy's functions on tensors: np.sum(t), np.exp(t), `array + t`, `array += t`, np.dtype(...).

numpy's reductions call the tensor's methods with its own keywords (out=None, dtype=); its ufuncs
go through Tensor.__array_ufunc__, which gives lazy tensors for what lazytensor computes and lets
numpy compute the rest on the values."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import assert_close
from lazytensor.tensor import _UFUNCS

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
