"""Creating tensors: asarray, constants, arange, empty, *_like and random, compared with numpy."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array


def rand(shape, dtype=np.float64, seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype)


# ---- asarray --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (2, 0, 3), (2, 1, 3, 2)], ids=str)
def test_asarray_from_numpy_keeps_shape_and_dtype(device, shape, dtype):
    a = rand(shape, dtype.np)
    x = lt.asarray(a, device=device)
    assert x.device == device
    assert x.shape == a.shape
    assert x.ndim == a.ndim
    assert x.size == a.size
    assert x.dtype == dtype
    assert_close(x.numpy(), a)


@pytest.mark.parametrize("view", ["transposed", "negative-step", "strided", "broadcast"])
def test_asarray_from_non_contiguous_numpy(device, view):
    a = rand((4, 6), np.int32)
    v = {"transposed": a.T, "negative-step": a[::-1, ::-2], "strided": a[1::2, ::3],
         "broadcast": np.broadcast_to(a[:1], (3, 6))}[view]
    assert_close(lt.asarray(v, device=device).numpy(), v)


LISTS = {
    "floats": [1.5, -2.25, 3.0],
    "ints": [1, -2, 3],
    "bools": [True, False, True],
    "mixed-int-float": [1, 2.5],
    "mixed-bool-int": [True, 2],
    "nested-floats": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
    "nested-ints": [[[1], [2]], [[3], [4]]],
    "empty": [],
    "empty-nested": [[], []],
    "big-int": [2**40, -(2**40)],
}


@pytest.mark.parametrize("name", list(LISTS))
def test_asarray_from_lists(device, name):
    data = LISTS[name]
    want = np.asarray(data)
    # Python floats default to float32 (numpy's default is float64); ints to int64
    if want.dtype == np.float64:
        want = want.astype(np.float32)
    x = lt.asarray(data, device=device)
    assert_close(x.numpy(), want)
    assert x.tolist() == want.tolist()


@pytest.mark.parametrize("value", [1.5, -3, True, False, 0, 2**62], ids=repr)
def test_asarray_from_python_scalar(device, value):
    want = np.asarray(value)
    if want.dtype == np.float64:
        want = want.astype(np.float32)
    x = lt.asarray(value, device=device)
    assert x.shape == ()
    assert x.dtype == want.dtype
    assert_close(x.numpy(), want)
    assert x.item() == value
    assert type(x.item()) is type(value)


@pytest.mark.parametrize("value", [np.float64(1.25), np.float32(-2.5), np.int32(7), np.int64(-9), np.bool_(True)],
                         ids=lambda v: f"{type(v).__name__}({v})")
def test_asarray_from_numpy_scalar_keeps_dtype(device, value):
    x = lt.asarray(value, device=device)
    assert x.shape == ()
    assert x.dtype == value.dtype
    assert_close(x.numpy(), np.asarray(value))


def test_default_dtypes(device):
    assert lt.asarray(1.0, device=device).dtype == lt.float32
    assert lt.asarray([1.0], device=device).dtype == lt.float32
    assert lt.asarray(1, device=device).dtype == lt.int64
    assert lt.asarray([[1]], device=device).dtype == lt.int64
    assert lt.asarray(True, device=device).dtype == lt.bool_
    assert lt.zeros(2, device=device).dtype == lt.float32
    assert lt.ones(2, device=device).dtype == lt.float32
    assert lt.empty(2, device=device).dtype == lt.float32
    assert lt.full(2, 1.5, device=device).dtype == lt.float32
    assert lt.full(2, 3, device=device).dtype == lt.int64
    assert lt.full(2, True, device=device).dtype == lt.bool_
    assert lt.arange(3, device=device).dtype == lt.int64
    assert lt.arange(0.5, 3, device=device).dtype == lt.float32
    assert lt.rand(2, device=device).dtype == lt.float32
    assert lt.randn(2, device=device).dtype == lt.float32


@pytest.mark.parametrize("like", [lt.float64, np.float64, "float64", float], ids=repr)
def test_dtype_spellings(device, like):
    assert lt.asarray([1, 2], dtype=like, device=device).dtype == lt.float64
    assert lt.zeros(2, dtype=like, device=device).dtype == lt.float64


@pytest.mark.parametrize("like, want", [(int, lt.int64), (bool, lt.bool_), ("int32", lt.int32),
                                        (np.dtype("float32"), lt.float32), (lt.bool, lt.bool_)], ids=repr)
def test_more_dtype_spellings(device, like, want):
    assert lt.asarray([0, 1], dtype=like, device=device).dtype == want


@pytest.mark.parametrize("target", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("source", DTYPES, ids=lambda d: d.name)
def test_asarray_with_dtype_converts_like_numpy(device, source, target):
    a = rand((7,), source.np) * (np.array(3, source.np) if not source.is_bool else True)
    got = lt.asarray(a, dtype=target, device=device)
    assert got.dtype == target
    assert_close(got.numpy(), a.astype(target.np))
    try:
        want = np.asarray(a.tolist(), dtype=target.np)
    except OverflowError:  # numpy 2 refuses Python ints out of the target's range: so do we
        with pytest.raises(OverflowError):
            lt.asarray(a.tolist(), dtype=target, device=device)
        return
    assert_close(lt.asarray(a.tolist(), dtype=target, device=device).numpy(), want)


@pytest.mark.parametrize("target", DTYPES, ids=lambda d: d.name)
def test_asarray_of_tensor(device, target):
    a = rand((2, 3), np.float64) * 5
    x = lt.asarray(a, device=device)
    assert lt.asarray(x) is x
    assert lt.asarray(x, device=device) is x
    y = lt.asarray(x * 2, dtype=target)
    assert y.dtype == target
    assert_close(y.numpy(), (a * 2).astype(target.np))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_asarray_copy_keyword_follows_the_array_api(device, dtype):
    """copy=True: a new tensor (writes to it leave the source alone, and the reverse);
    copy=False: the tensor itself, or ValueError where a copy is needed; None: copy if needed."""
    a = rand((4, 3), dtype.np)
    x = lt.asarray(a, device=device)
    y = lt.asarray(x, copy=True)
    assert y is not x and y.dtype == x.dtype and y.device == x.device
    y[0] = a[1]
    x[1] = a[2]
    want_x, want_y = a.copy(), a.copy()
    want_y[0] = a[1]
    want_x[1] = a[2]
    assert_close(x.numpy(), want_x)
    assert_close(y.numpy(), want_y)
    assert lt.asarray(x, copy=False) is x and lt.asarray(x, dtype=dtype, device=device, copy=False) is x
    other = lt.float32 if dtype != lt.float32 else lt.int16
    with pytest.raises(ValueError, match="copy=False"):
        lt.asarray(x, dtype=other, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        lt.asarray(a, device=device, copy=False)
    assert_close(lt.asarray(x, dtype=other, copy=True).numpy(), want_x.astype(other.np))
    assert_close(lt.asarray(a.tolist(), dtype=dtype, device=device, copy=True).numpy(), a)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_asarray_copies_numpy_data(device, dtype):
    a = rand((3, 4), dtype.np)
    original = a.copy()
    x = lt.asarray(a, device=device)
    y = x * 1 if not dtype.is_bool else x & True  # an unrealized expression reading x
    a[...] = a[::-1, ::-1]  # changed after the tensor was made, before anything was realized
    a[0, 0] = not a[0, 0] if dtype.is_bool else a[0, 0] + 1
    assert_close(x.numpy(), original)
    assert_close(y.numpy(), original * 1 if not dtype.is_bool else original)


def test_asarray_copies_list_data(device):
    data = [[1.0, 2.0], [3.0, 4.0]]
    x = lt.asarray(data, device=device)
    data[0][0] = 100.0
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_numpy_result_does_not_alias_source(device):
    a = rand((3,))
    out = lt.asarray(a, device=device).numpy()
    assert not np.shares_memory(out, a)


# ---- zeros / ones / full / empty ------------------------------------------------------------------

SHAPES = [(), 0, 3, (3,), (2, 3), [2, 3], (2, 0, 4), (1, 1, 1)]


def shape_id(shape):
    return f"{type(shape).__name__}{shape}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_zeros_ones(device, shape, dtype):
    for lt_fn, np_fn in ((lt.zeros, np.zeros), (lt.ones, np.ones)):
        got = lt_fn(shape, dtype=dtype, device=device)
        assert got.device == device
        assert_close(got.numpy(), np_fn(shape, dtype=dtype.np))


def test_zeros_ones_default_float32(device):
    assert_close(lt.zeros((2, 2), device=device).numpy(), np.zeros((2, 2), np.float32))
    assert_close(lt.ones(3, device=device).numpy(), np.ones(3, np.float32))


def test_shape_as_varargs_tuple(device):
    assert lt.zeros((2, 3), device=device).shape == (2, 3)
    assert lt.ones(np.int64(4), device=device).shape == (4,)
    assert lt.rand(2, 3, device=device).shape == (2, 3)
    assert lt.rand((2, 3), device=device).shape == (2, 3)
    assert lt.randn([4], device=device).shape == (4,)


@pytest.mark.parametrize("fill", [7, -3, 2.5, -0.0, True, np.inf, np.nan], ids=repr)
@pytest.mark.parametrize("dtype", [None, *DTYPES], ids=lambda d: d.name if d else "default")
def test_full(device, dtype, fill):
    if dtype is not None and not dtype.is_float and isinstance(fill, float) and not np.isfinite(fill):
        pytest.skip("numpy refuses/undefines nan and inf as integers")
    if dtype is not None and dtype.is_unsigned and fill == -3:
        with pytest.raises(OverflowError):  # numpy 2 refuses it too
            np.full((2, 3), fill, dtype=dtype.np)
        with pytest.raises(OverflowError):
            lt.full((2, 3), fill, dtype=dtype, device=device)
        return
    got = lt.full((2, 3), fill, dtype=dtype, device=device)
    if dtype is None:
        want = np.full((2, 3), fill)
        if want.dtype == np.float64:
            want = want.astype(np.float32)  # Python floats default to float32
    else:
        want = np.full((2, 3), fill, dtype=dtype.np)
    assert_close(got.numpy(), want)
    if isinstance(fill, float) and fill == 0:
        assert np.signbit(got.numpy()).all() == np.signbit(want).all()


def test_full_with_tensor_fill_value(device):
    got = lt.full((2,), lt.asarray([4.5], device=device).sum(), device=device)
    assert_close(got.numpy(), np.full((2,), 4.5, np.float32))


@pytest.mark.parametrize("value", [np.float64(1.5), np.int32(3), np.float32(2.5), np.bool_(True)],
                         ids=lambda v: f"{type(v).__name__}({v})")
def test_full_keeps_numpy_scalar_dtype_like_asarray(device, value):
    # numpy scalars keep their dtype in asarray (and in numpy.full); full must agree with asarray
    got = lt.full((3,), value, device=device)
    assert got.dtype == lt.asarray(value, device=device).dtype
    assert_close(got.numpy(), np.full((3,), value))


@pytest.mark.parametrize("value, dtype", [(2**40, lt.int32), (-(2**31) - 1, lt.int32), (2**63, lt.int64)],
                         ids=str)
def test_full_out_of_range_int_raises_like_numpy(device, value, dtype):
    with pytest.raises(OverflowError):
        np.full((2,), value, dtype=dtype.np)
    with pytest.raises(OverflowError):
        lt.full((2,), value, dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 0), (4, 5)], ids=str)
def test_empty(device, shape, dtype):
    x = lt.empty(shape, dtype=dtype, device=device)
    assert x.shape == shape
    assert x.dtype == dtype
    out = x.numpy()
    assert out.shape == shape
    assert out.dtype == dtype.np
    # whatever it holds (maybe nan), it can feed a kernel
    assert_close(lt.where(x == x, 1, 1).numpy(), np.ones(shape, np.int64))


# ---- *_like ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [None, *DTYPES], ids=lambda d: d.name if d else "same")
@pytest.mark.parametrize("source", DTYPES, ids=lambda d: d.name)
def test_like_functions(device, source, dtype):
    a = rand((2, 3), source.np)
    x = lt.asarray(a, device=device).T  # a view: the result follows its shape
    np_dtype = None if dtype is None else dtype.np
    assert_close(lt.zeros_like(x, dtype=dtype).numpy(), np.zeros_like(a.T, dtype=np_dtype))
    assert_close(lt.ones_like(x, dtype=dtype).numpy(), np.ones_like(a.T, dtype=np_dtype))
    assert_close(lt.full_like(x, 1, dtype=dtype).numpy(), np.full_like(a.T, 1, dtype=np_dtype))
    empty = lt.empty_like(x, dtype=dtype)
    assert empty.shape == (3, 2)
    assert empty.dtype == (source if dtype is None else dtype)
    for made in (lt.zeros_like(x, dtype=dtype), lt.full_like(x, 1, dtype=dtype), empty):
        assert made.device == device


@pytest.mark.parametrize("fill", [2.7, -2.7, 5, True], ids=repr)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_full_like_casts_fill_to_dtype(device, dtype, fill):
    a = rand((4,), dtype.np)
    want = np.full_like(a, fill)
    got = lt.full_like(lt.asarray(a, device=device), fill)
    assert_close(got.numpy(), want)


def test_like_of_pending_expression(device):
    x = lt.asarray(rand((3, 4)), device=device)
    y = (x @ x.T).sum(axis=0, keepdims=True)
    launched = lt.stats()["kernels_launched"]
    z = lt.zeros_like(y)
    assert z.shape == (1, 3)
    assert lt.stats()["kernels_launched"] == launched  # shape and dtype are known without computing y
    assert_close(z.numpy(), np.zeros((1, 3)))


# ---- arange ---------------------------------------------------------------------------------------

ARANGES = [(5,), (0,), (1, 7), (1, 7, 2), (5, 0, -1), (5, 1), (-3, 3, 2), (10, -10, -3), (0, 1, 0.1),
           (0.5, 3), (2.5,), (1, 2, 0.25), (3.0, -1.0, -0.5), (np.int32(4),)]


@pytest.mark.parametrize("args", ARANGES, ids=str)
def test_arange(device, args):
    got = lt.arange(*args, device=device)
    want = np.arange(*args)
    if want.dtype == np.float64:
        want = want.astype(np.float32)  # float results default to float32
    elif want.dtype.kind == "i":
        want = want.astype(np.int64)
    assert_close(got.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=lambda d: d.name)
def test_arange_with_dtype(device, dtype):
    assert_close(lt.arange(2, 11, 3, dtype=dtype, device=device).numpy(), np.arange(2, 11, 3, dtype=dtype.np))
    assert_close(lt.arange(6, dtype=dtype, device=device).numpy(), np.arange(6, dtype=dtype.np))


def test_arange_in_expressions(device):
    x = lt.arange(12, device=device).reshape(3, 4)
    want = np.arange(12).reshape(3, 4)
    assert_close((x * x.T.T - 1).sum(axis=1).numpy(), (want * want - 1).sum(axis=1))


# ---- random ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_random_same_seed_same_values(device, fn):
    make = getattr(lt, fn)
    a = make(3, 4, seed=123, device=device).numpy()
    b = make(3, 4, seed=123, device=device).numpy()
    c = make(3, 4, seed=124, device=device).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (3, 4)
    assert a.dtype == np.float32


@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_manual_seed(device, fn):
    make = getattr(lt, fn)
    lt.manual_seed(7)
    first, second = make(50, device=device).numpy(), make(50, device=device).numpy()
    lt.manual_seed(7)
    again_first, again_second = make(50, device=device).numpy(), make(50, device=device).numpy()
    np.testing.assert_array_equal(first, again_first)
    np.testing.assert_array_equal(second, again_second)
    assert not np.array_equal(first, second)


def test_rand_values_in_unit_interval(device):
    x = lt.rand(100_000, seed=0, device=device).numpy()
    assert x.min() >= 0.0
    assert x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.std() - np.sqrt(1 / 12)) < 0.01
    # spread over the whole interval, not clumped
    counts, _ = np.histogram(x, bins=10, range=(0, 1))
    assert counts.min() > 9000


def test_randn_roughly_standard_normal(device):
    x = lt.randn(100_000, seed=1, device=device).numpy().astype(np.float64)
    assert abs(x.mean()) < 0.02
    assert abs(x.std() - 1.0) < 0.02
    assert 0.66 < np.mean(np.abs(x) < 1) < 0.70  # ~68% within one sigma
    assert (x < 0).any() and (x > 2).any()


@pytest.mark.parametrize("fn", ["rand", "randn"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=lambda d: d.name)
def test_random_dtype_and_shapes(device, fn, dtype):
    make = getattr(lt, fn)
    x = make(2, 0, 3, seed=0, dtype=dtype, device=device)
    assert x.shape == (2, 0, 3)
    assert x.dtype == dtype
    y = make(5, seed=0, dtype=dtype, device=device)
    assert y.numpy().dtype == dtype.np


@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_random_0d(device, fn):
    x = getattr(lt, fn)(seed=0, device=device)
    assert x.shape == ()
    assert x.numpy().shape == ()


def test_random_tensors_are_fixed_once_made(device):
    x = lt.rand(4, 4, seed=3, device=device)
    first = x.numpy().copy()
    assert_close((x + 0).numpy(), first)
    assert_close(x.numpy(), first)
