"""Reductions (sum mean max min prod argmax argmin) compared with numpy."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]
ARG_REDUCTIONS = ["argmax", "argmin"]


def numpy_reduce(name, a, axis=None, keepdims=False):
    """numpy's answer, except that float32 sum/mean is the float64 result rounded to float32:
    lazytensor sums float32 in float64 by design (on the cpu, blocks of float32 vectors added in
    float64), about as accurate as numpy's float32."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of nothing
        if a.dtype == np.float32 and name in ("sum", "mean"):
            wide = getattr(np, name)(a.astype(np.float64), axis=axis, keepdims=keepdims)
            return np.asarray(wide).astype(np.float32)
        return np.asarray(getattr(np, name)(a, axis=axis, keepdims=keepdims))


def check_reduce(name, a, device, axis=None, keepdims=False, form="method"):
    x = lt.asarray(a, device=device)
    if form == "method":
        got = getattr(x, name)(axis=axis, keepdims=keepdims)
    else:
        got = getattr(lt, name)(x, axis=axis, keepdims=keepdims)
    assert isinstance(got, lt.Tensor)
    assert got.device == device
    want = numpy_reduce(name, a, axis, keepdims)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != numpy's {want.dtype}"
    assert_close(got.numpy(), want)


AXES = [None, 0, 1, 2, -1, -3, (0, 2), (2, 0), (-1, 1), (0, 1, 2), ()]


@pytest.mark.parametrize("axis", AXES, ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_reduce_axes(device, dtype, name, axis):
    a = random_array(np.random.default_rng(0), (3, 4, 5), dtype)
    check_reduce(name, a, device, axis)


@pytest.mark.parametrize("axis", [None, 1, -1, (0, 2)], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.bool_], ids=lambda d: d.name)
def test_reduce_keepdims(device, dtype, name, axis):
    a = random_array(np.random.default_rng(1), (2, 3, 4), dtype)
    check_reduce(name, a, device, axis, keepdims=True)


@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, -1], ids=lambda a: f"axis={a}")
def test_function_form(device, name, axis):
    a = random_array(np.random.default_rng(2), (4, 6), np.float64)
    got = getattr(lt, name)(lt.asarray(a, device=device), axis=axis)
    assert_close(got.numpy(), getattr(np, name)(a, axis=axis))


@pytest.mark.parametrize("name", ["sum", "max", "argmin"])
def test_function_form_accepts_array_likes(name):
    a = np.arange(12, dtype=np.int32).reshape(3, 4) % 5
    assert_close(getattr(lt, name)(a, axis=1).numpy(), getattr(np, name)(a, axis=1))
    assert_close(getattr(lt, name)(a.tolist()).numpy(), getattr(np, name)(np.asarray(a.tolist())))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -3], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", ARG_REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_arg_reduce(device, dtype, name, axis):
    # few distinct values so that ties are common: the FIRST extremum must win, like numpy
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, size=(3, 4, 5)).astype(dtype.np)
    if dtype == lt.bool_:
        a = rng.random((3, 4, 5)) < 0.3
    got = getattr(lt.asarray(a, device=device), name)(axis=axis)
    assert_close(got.numpy(), getattr(np, name)(a, axis=axis))


@pytest.mark.parametrize("axis", [None, 1, -1], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", ARG_REDUCTIONS)
def test_arg_reduce_keepdims(device, name, axis):
    a = random_array(np.random.default_rng(4), (2, 3, 4), np.float32)
    got = getattr(lt.asarray(a, device=device), name)(axis=axis, keepdims=True)
    assert_close(got.numpy(), getattr(np, name)(a, axis=axis, keepdims=True))


@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(REDUCTIONS),
    dtype=st.sampled_from(DTYPES),
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5),
    keepdims=st.booleans(),
)
def test_reduce_random_shapes_and_axes(data, name, dtype, shape, keepdims):
    axis = data.draw(st.one_of(st.none(), hnp.valid_tuple_axes(len(shape), min_size=1),
                               st.integers(-len(shape), len(shape) - 1)), label="axis")
    a = random_array(np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed")), shape, dtype)
    check_reduce(name, a, "cpu", axis, keepdims)


@settings(max_examples=15, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(ARG_REDUCTIONS),
    dtype=st.sampled_from(DTYPES),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
)
def test_arg_reduce_random_shapes(data, name, dtype, shape):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)), label="axis")
    a = random_array(np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed")), shape, dtype)
    got = getattr(lt.asarray(a), name)(axis=axis)
    assert_close(got.numpy(), getattr(np, name)(a, axis=axis))


# ---- result dtypes --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_result_dtype_matches_numpy(dtype, name):
    a = random_array(np.random.default_rng(5), (3,), dtype)
    got = getattr(lt.asarray(a), name)()
    assert got.dtype == getattr(np, name)(a).dtype
    assert got.numpy().dtype == getattr(np, name)(a).dtype


def test_float32_sum_is_accumulated_in_float64(device):
    # many values: a float32 running sum would drift far from the float64 answer
    a = np.random.default_rng(6).random(100_003).astype(np.float32)
    got = lt.asarray(a, device=device).sum()
    assert got.dtype == lt.float32
    want = a.astype(np.float64).sum()
    np.testing.assert_allclose(got.item(), want, rtol=1e-7)
    np.testing.assert_allclose(lt.asarray(a, device=device).mean().item(), want / a.size, rtol=1e-7)


@pytest.mark.parametrize("shape,axis", [((64, 4096), 1), ((33, 1024), 1), ((3, 5000), 1), ((4100, 3), 0),
                                        ((1, 1 << 20), None), ((4, 1 << 18), 1), ((2, 1025, 2), (1, 2)),
                                        ((16, 1000), 1), ((3000,), None), ((8, 4095), 1)], ids=str)
def test_float32_sums_are_as_accurate_as_numpy(device, shape, axis):
    """Worst relative error over the results, against the float64 sum: within a factor of 2 of
    numpy's own float32 sum (pairwise), whatever the schedule (float32 blocks on the cpu); a
    float32 running sum would be ~100x off on the long rows. Rows that are no whole number of
    vector steps (1000, 3000, 4095 terms) once added their last terms one by one into the
    block's float32 total, up to 7 ulp off."""
    a = np.random.default_rng(8).random(shape).astype(np.float32)
    want = a.astype(np.float64).sum(axis=axis)
    ours = np.max(np.abs(lt.asarray(a, device=device).sum(axis=axis).numpy() - want) / want)
    numpy = np.max(np.abs(a.sum(axis=axis) - want) / want)
    assert ours <= 2 * max(numpy, 2.0 ** -24), (ours, numpy)


@pytest.mark.parametrize("term", ["log1p", "tan", "mod"])
@pytest.mark.parametrize("shape,axis", [((3000,), None), ((6, 2500), 1)], ids=str)
def test_float32_sums_of_library_function_terms_are_as_accurate_as_numpy(device, term, shape, axis):
    """Terms the cpu computes by a scalar C library call (log1p, tan, fmod) keep their loop
    scalar: summed there as float32 partials, a block of 4096 terms was one running float32
    sum (scikit-learn's float32 logistic loss, through log1p, was off by 12 ulp)."""
    a = (np.random.default_rng(9).random(shape) + 0.5).astype(np.float32)
    terms = {"log1p": lt.log1p, "tan": lt.tan, "mod": lambda x: x % 0.7}[term]
    x = lt.asarray(a, device=device)
    values = terms(x).numpy()   # (the same terms, computed on their own)
    want = values.astype(np.float64).sum(axis=axis)
    ours = np.max(np.abs(terms(x).sum(axis=axis).numpy() - want) / np.abs(want))
    numpy = np.max(np.abs(values.sum(axis=axis) - want) / np.abs(want))
    assert ours <= 2 * max(numpy, 2.0 ** -24), (ours, numpy)


# ---- zero-size and size-1 -------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_empty_sum_and_prod_give_the_identity(device, dtype, name, axis):
    a = np.zeros((0, 3), dtype=dtype.np)
    check_reduce(name, a, device, axis)


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 0)], ids=str)
def test_empty_sum_is_zero_and_prod_is_one(device, shape):
    x = lt.zeros(shape, device=device)
    assert x.sum().item() == 0.0
    assert x.prod().item() == 1.0
    assert lt.zeros(shape, dtype=lt.int64, device=device).sum().item() == 0
    assert lt.zeros(shape, dtype=lt.int64, device=device).prod().item() == 1


@pytest.mark.parametrize("axis", [None, 0, 1], ids=lambda a: f"axis={a}")
def test_empty_mean_is_nan_like_numpy(device, axis):
    check_reduce("mean", np.zeros((0, 3), np.float32), device, axis)
    check_reduce("mean", np.zeros((0, 3), np.int64), device, axis)


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("shape, axis", [((0,), None), ((0,), 0), ((2, 0), None), ((2, 0), 1),
                                         ((0, 3), 0), ((0, 3), None)], ids=str)
def test_empty_extremum_raises_at_the_call(device, name, shape, axis):
    a = np.zeros(shape, np.float32)
    with pytest.raises(ValueError):
        getattr(np, name)(a, axis=axis)
    x = lt.asarray(a, device=device)
    with pytest.raises(ValueError):
        getattr(x, name)(axis=axis)  # raised when recorded, before anything is realized


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin", "sum", "prod"])
@pytest.mark.parametrize("shape, axis", [((0, 3), 1), ((3, 0, 2), 2), ((3, 0, 2), -1)], ids=str)
def test_extremum_over_non_empty_axis_of_empty_array(device, name, shape, axis):
    # numpy: the reduced axis is not empty, so the result is simply empty (no error)
    a = np.zeros(shape, np.float32)
    want = getattr(np, name)(a, axis=axis)
    got = getattr(lt.asarray(a, device=device), name)(axis=axis)
    assert_close(got.numpy(), want)


@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2)], ids=lambda a: f"axis={a}")
def test_size_one_axes(device, name, axis):
    if name in ARG_REDUCTIONS and isinstance(axis, tuple):
        pytest.skip("argmax/argmin take one axis")
    a = random_array(np.random.default_rng(7), (1, 5, 1), np.float32)
    got = getattr(lt.asarray(a, device=device), name)(axis=axis)
    want = numpy_reduce(name, a, axis) if name in REDUCTIONS else getattr(np, name)(a, axis=axis)
    assert_close(got.numpy(), want)


@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
def test_zero_dim_input(device, name):
    a = np.asarray(3.5, dtype=np.float64)
    got = getattr(lt.asarray(a, device=device), name)()
    want = getattr(np, name)(a)
    assert_close(got.numpy(), want)


# ---- nan and inf ----------------------------------------------------------------------------------

def array_with_nans(dtype):
    a = random_array(np.random.default_rng(8), (4, 6), dtype)
    a[1, 2] = np.nan
    a[1, 4] = np.nan
    a[3, 0] = np.nan
    a[0, 5] = np.inf
    a[2, 1] = -np.inf
    return a


@pytest.mark.parametrize("axis", [None, 0, 1], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", ["max", "min", "sum", "mean", "prod"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=lambda d: d.name)
def test_nan_propagates(device, dtype, name, axis):
    a = array_with_nans(dtype.np)
    got = getattr(lt.asarray(a, device=device), name)(axis=axis)
    want = numpy_reduce(name, a, axis)
    assert np.isnan(want).any()
    assert_close(got.numpy(), want)


@pytest.mark.parametrize("axis", [None, 0, 1], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("name", ARG_REDUCTIONS)
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=lambda d: d.name)
def test_arg_reduce_returns_the_first_nan(device, dtype, name, axis):
    a = array_with_nans(dtype.np)
    got = getattr(lt.asarray(a, device=device), name)(axis=axis)
    assert_close(got.numpy(), getattr(np, name)(a, axis=axis))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_infinities_without_nan(device, name):
    a = np.array([[1.0, np.inf, -np.inf], [-np.inf, -np.inf, 2.0], [np.inf, np.inf, np.inf]], np.float32)
    for axis in (None, 0, 1):
        got = getattr(lt.asarray(a, device=device), name)(axis=axis)
        assert_close(got.numpy(), getattr(np, name)(a, axis=axis))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [lt.int32, lt.int64], ids=lambda d: d.name)
def test_extreme_integers(device, dtype, name):
    info = np.iinfo(dtype.np)
    a = np.array([[0, info.min, 5], [info.max, -1, info.max], [info.min, info.min, info.min]], dtype.np)
    for axis in (None, 0, 1):
        got = getattr(lt.asarray(a, device=device), name)(axis=axis)
        assert_close(got.numpy(), getattr(np, name)(a, axis=axis))


# ---- reductions of expressions and of views -------------------------------------------------------

@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.float64], ids=lambda d: d.name)
def test_reduce_of_expression(device, dtype, name):
    rng = np.random.default_rng(9)
    a, b = random_array(rng, (5, 7), dtype), random_array(rng, (5, 7), dtype)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    got = getattr(x * y + 1, name)(axis=1)
    e = a * b + 1
    want = numpy_reduce(name, e, 1) if name in REDUCTIONS else getattr(np, name)(e, axis=1)
    assert_close(got.numpy(), want)


def test_reduction_followed_by_arithmetic(device):
    rng = np.random.default_rng(10)
    a = random_array(rng, (6, 8), np.float64)
    b = random_array(rng, (6,), np.float64)
    x = lt.asarray(a, device=device)
    got = (x - x.mean(axis=1, keepdims=True)).max(axis=1) * lt.asarray(b, device=device) + x.sum()
    want = (a - a.mean(axis=1, keepdims=True)).max(axis=1) * b + a.sum()
    assert_close(got.numpy(), want)


def test_softmax_like_chain(device):
    a = random_array(np.random.default_rng(11), (4, 9), np.float32)
    x = lt.asarray(a, device=device)
    e = (x - x.max(axis=-1, keepdims=True)).exp()
    got = e / e.sum(axis=-1, keepdims=True)
    ea = np.exp(a - a.max(axis=-1, keepdims=True))
    assert_close(got.numpy(), ea / ea.sum(axis=-1, keepdims=True))


VIEWS = {
    "transposed": (lambda x: x.T, lambda a: a.T),
    "permuted": (lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "negative-step-slice": (lambda x: x[::-1, 1::2, ::-2], lambda a: a[::-1, 1::2, ::-2]),
    "int-index": (lambda x: x[1], lambda a: a[1]),
    "broadcast": (lambda x: x[:, :1, :].expand(3, 6, 5), lambda a: np.broadcast_to(a[:, :1, :], (3, 6, 5))),
    "flipped": (lambda x: x.flip(1), lambda a: np.flip(a, 1)),
    "padded": (lambda x: x.pad(((1, 0), (0, 2), (1, 1))), lambda a: np.pad(a, ((1, 0), (0, 2), (1, 1)))),
    "transpose-reshape": (lambda x: x.T.reshape(10, 9), lambda a: a.T.reshape(10, 9)),
}


@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("view", list(VIEWS))
def test_reduce_of_views(device, view, name):
    lt_view, np_view = VIEWS[view]
    a = random_array(np.random.default_rng(12), (3, 6, 5), np.float64)
    v = np_view(a)
    for axis in (None, 0, -1):
        got = getattr(lt_view(lt.asarray(a, device=device)), name)(axis=axis)
        want = numpy_reduce(name, v, axis) if name in REDUCTIONS else getattr(np, name)(v, axis=axis)
        assert_close(got.numpy(), want)


def test_broadcast_int_sum(device):
    a = np.arange(4, dtype=np.int32)
    got = lt.asarray(a, device=device).broadcast_to((1000, 4)).sum(axis=0)
    assert_close(got.numpy(), np.broadcast_to(a, (1000, 4)).sum(axis=0))


def test_reduce_twice(device):
    a = random_array(np.random.default_rng(13), (4, 5, 6), np.int64)
    got = lt.asarray(a, device=device).sum(axis=2).max(axis=0)
    assert_close(got.numpy(), a.sum(axis=2).max(axis=0))


# ---- .item() --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_item(device, dtype, name):
    a = random_array(np.random.default_rng(14), (3, 4), dtype)
    got = getattr(lt.asarray(a, device=device), name)().item()
    want = numpy_reduce(name, a).item()
    assert type(got) is type(want)
    if isinstance(want, float):
        tolerance = 2e-3 if a.dtype == np.float16 else 2e-6  # float16 keeps ~3 digits
        assert got == pytest.approx(want, rel=tolerance, abs=1e-6)
    else:
        assert got == want


def test_item_of_keepdims_result(device):
    a = random_array(np.random.default_rng(15), (2, 3), np.int32)
    got = lt.asarray(a, device=device).sum(keepdims=True)
    assert got.shape == (1, 1)
    assert got.item() == a.sum()


def test_item_needs_one_element(device):
    x = lt.asarray([[1, 2]], device=device).sum(axis=0)
    with pytest.raises(ValueError, match=r"\(2,\)"):
        x.item()


@settings(max_examples=20, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(REDUCTIONS),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3),
)
def test_reduce_random_shapes_with_empty_axes(data, name, shape):
    # numpy raises for max/min exactly when a reduced axis is empty; lazytensor must agree
    axis = data.draw(st.one_of(st.none(), hnp.valid_tuple_axes(len(shape), min_size=1)), label="axis")
    a = random_array(np.random.default_rng(0), shape, np.float64)
    try:
        want = numpy_reduce(name, a, axis)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(lt.asarray(a), name)(axis=axis)
        return
    assert_close(getattr(lt.asarray(a), name)(axis=axis).numpy(), want)


# ---- sizes big enough to be split across threads / vector lanes -----------------------------------

@pytest.mark.parametrize("name", REDUCTIONS + ARG_REDUCTIONS)
@pytest.mark.parametrize("dtype", [lt.int32, lt.float64], ids=lambda d: d.name)
def test_large_reductions(device, dtype, name):
    a = random_array(np.random.default_rng(16), (257, 1031), dtype)
    if name == "prod":
        a = (a % 3 - 1) if dtype.is_int else np.sign(a) * np.exp(a * 1e-3)  # keep the product finite
    x = lt.asarray(a, device=device)
    for axis in (None, 0, 1):
        got = getattr(x, name)(axis=axis)
        want = numpy_reduce(name, a, axis) if name in REDUCTIONS else getattr(np, name)(a, axis=axis)
        if want.dtype == np.float64 and name in ("sum", "mean", "prod"):
            # a different summation order over 10**5 terms: compare with a relative bound
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-9)
        else:
            assert_close(got.numpy(), want)


def test_same_kernel_on_new_data(device):
    # the kernel compiled for the first input is reused; every result must follow its own data
    rng = np.random.default_rng(17)
    for _ in range(3):
        a = random_array(rng, (6, 7), np.float32)
        x = lt.asarray(a, device=device)
        assert_close(x.max(axis=1).numpy(), a.max(axis=1))
        assert_close(x.argmin(axis=0).numpy(), a.argmin(axis=0))
        assert_close(x.sum(axis=0).numpy(), numpy_reduce("sum", a, 0))


def test_sums_of_nothing_and_of_negative_zeros_have_numpys_sign(device):
    for a in (np.zeros((2, 0), np.float32), np.full((3, 4), -0.0), np.full(5, -0.0, np.float16)):
        got = lt.asarray(a, device=device).sum(axis=-1).numpy()
        want = a.sum(axis=-1)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
