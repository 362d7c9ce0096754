"""Regressions from the issue list, each against numpy on every device (and dtype where it
applies): the number in each section's title is the issue's."""
import math
import warnings

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array


def numpy_outcome(fn):
    """(result, None) or (None, exception type) of running `fn` (numpy's side of a comparison)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return fn(), None
        except Exception as error:  # noqa: BLE001 (the type is what is compared)
            return None, type(error)


# ---- 4: a Python scalar written into a tensor keeps its value in the tensor's dtype ----------------

WRITE_FORMS = {
    "int": lambda n: 0,
    "negative-int": lambda n: -1,
    "slice": lambda n: slice(1, 3),
    "stepped-slice": lambda n: slice(None, None, 2),
    "int-array": lambda n: [1],
    "int-array-repeated": lambda n: np.array([2, 0, 2]),
    "mask": lambda n: np.arange(n) % 2 == 1,
    "ellipsis": lambda n: Ellipsis,
    "empty-slice": lambda n: slice(3, 1),
}

# values numpy keeps exactly in each dtype (and a few it rounds or wraps on the way in)
SCALARS = {
    "float": [0.001, 1 / 3, -0.0, 1e-300, 1e300, 2.0**-149, float("inf"), float("nan"), 7, True],
    "int": [2**53 + 1, 2**62 + 3, -(2**63), 2**63 - 1, -7, 1.7, -1.7, True],
    "uint": [2**64 - 1, 2**63 + 1, 2**53 + 1, 7, 2.9, True],
    "bool": [True, False, 2, 0.5, 0.0],
}


def _scalars(dtype):
    values = SCALARS["float" if dtype.is_float else "bool" if dtype.is_bool else
                     "uint" if dtype.is_unsigned else "int"]
    info = np.iinfo(dtype.np) if dtype.is_integer else None
    # only values numpy accepts for this dtype (the refused ones are tested below)
    return [v for v in values if info is None or isinstance(v, float) or info.min <= v <= info.max]


@pytest.mark.parametrize("form", list(WRITE_FORMS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_python_scalar_written_keeps_its_value_in_the_tensor_dtype(device, dtype, form):
    n = 5
    for value in _scalars(dtype):
        index = WRITE_FORMS[form](n)
        want = np.zeros(n, dtype.np)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # 1e300 -> float32 inf
            want[index] = value
        x = lt.zeros(n, dtype=dtype, device=device)
        x[index] = value
        got = x.numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"x[{index!r}] = {value!r}")
        assert np.array_equal(np.signbit(got), np.signbit(want)) if dtype.is_float else True


def test_python_float_into_float64_is_not_rounded_through_float32(device):
    x = lt.zeros(3, dtype=lt.float64, device=device)
    x[0] = 0.001
    x[[1]] = 1 / 3
    x[lt.asarray([False, False, True], device=device)] = 0.1
    assert x.tolist() == [0.001, 1 / 3, 0.1]


@pytest.mark.parametrize("index", [0, slice(0, 2), [0, 1], np.array([True, True, False])], ids=repr)
def test_python_data_written_converts_straight_to_the_tensor_dtype(device, index):
    x = lt.zeros(3, dtype=lt.float64, device=device)
    want = np.zeros(3)
    value = [0.001, 1 / 3] if not isinstance(index, int) else 0.001
    x[index] = value
    want[index] = value
    assert x.tolist() == want.tolist()
    big = lt.zeros(3, dtype=lt.int64, device=device)
    big[1:] = [2**62 + 1, -(2**62) - 1]
    assert big.tolist() == [0, 2**62 + 1, -(2**62) - 1]


@pytest.mark.parametrize("dtype, value", [(lt.uint8, 300), (lt.uint8, -1), (lt.int8, 128), (lt.uint64, -1),
                                          (lt.int64, 2**63), (lt.int32, float("nan")), (lt.int64, float("inf"))],
                         ids=repr)
@pytest.mark.parametrize("index", [0, slice(None), [1], np.array([True, False, True])], ids=repr)
def test_writing_a_value_the_dtype_cannot_hold_raises_like_numpy(device, dtype, value, index):
    _, error = numpy_outcome(lambda: np.zeros(3, dtype.np).__setitem__(index, value))
    assert error is not None
    x = lt.zeros(3, dtype=dtype, device=device)
    with pytest.raises(error):
        x[index] = value
    assert x.tolist() == [0, 0, 0]   # (untouched)


# ---- 5: float16 reductions accumulate in float32 and round once, as numpy's ------------------------

def test_float16_prod_does_not_overflow_in_float16(device):
    a = np.array([300, 300, 0.001], np.float16)
    got = lt.asarray(a, device=device).prod()
    assert got.dtype == lt.float16
    assert got.item() == np.prod(a) == np.float16(90.06)


def test_float16_mean_does_not_overflow_in_float16(device):
    a = np.array([60000, 60000, 50000], np.float16)
    x = lt.asarray(a, device=device)
    assert_close(x.mean(), np.mean(a))
    assert_close(x.sum(), np.sum(a))             # inf: the result does not fit
    assert_close(x.var(), np.var(a))
    assert_close(x.reshape(1, 3).mean(axis=1, keepdims=True), np.mean(a.reshape(1, 3), axis=1, keepdims=True))


@pytest.mark.parametrize("reduction", ["sum", "prod", "mean", "var", "cumulative_sum"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_float16_reductions_match_numpy(device, reduction, axis):
    rng = np.random.default_rng(5)
    a = (rng.random((6, 40)) * 4 + 0.5).astype(np.float16)
    a[0, :3] = [2048, 1, 1]   # float16 sums that round differently in float16 and float32
    x = lt.asarray(a, device=device)
    if reduction == "cumulative_sum":
        if axis is None:
            return
        got, want = lt.cumulative_sum(x, axis=axis), np.cumsum(a, axis=axis)
    else:
        got, want = getattr(x, reduction)(axis=axis), getattr(np, reduction)(a, axis=axis)
    assert got.dtype == lt.float16
    assert_close(got, np.asarray(want, np.float16))


# ---- 7: a shape whose size overflows raises where it is made, as numpy's ---------------------------

HUGE = 1 << 62

TOO_BIG = {
    "ones": lambda d: lt.ones((HUGE, HUGE), device=d),
    "zeros-float64": lambda d: lt.zeros(HUGE, dtype=lt.float64, device=d),   # 2**62 * 8 bytes
    "full": lambda d: lt.full((HUGE, 4), 1.0, device=d),
    "empty": lambda d: lt.empty((HUGE, HUGE), device=d),
    "one-axis-past-int64": lambda d: lt.zeros(1 << 63, dtype=lt.int8, device=d),
    "zero-size-but-huge": lambda d: lt.zeros((0, HUGE, HUGE), device=d),
    "broadcast": lambda d: lt.ones((HUGE, 1), device=d) + lt.ones((1, HUGE), device=d),
    "broadcast_to": lambda d: lt.ones(1, device=d).broadcast_to((HUGE, HUGE)),
    "expand": lambda d: lt.ones((1, 1), device=d).expand(HUGE, HUGE),
    "reshape-empty": lambda d: lt.zeros(0, device=d).reshape(0, HUGE, HUGE),
    "pad": lambda d: lt.ones(2, device=d).pad((HUGE, HUGE)),
    "concatenate": lambda d: lt.concatenate([lt.ones(HUGE, dtype=lt.int8, device=d)] * 3),
    "tile": lambda d: lt.tile(lt.ones(HUGE // 2, dtype=lt.int8, device=d), (4,)),
    "repeat": lambda d: lt.repeat(lt.ones(HUGE // 2, dtype=lt.int8, device=d), 4),
    "matmul": lambda d: lt.ones((1 << 40, 1), device=d) @ lt.ones((1, 1 << 40), device=d),
    "outer-product": lambda d: lt.ones((1 << 40, 1), device=d) * lt.ones(1 << 40, device=d),
}


@pytest.mark.parametrize("make", list(TOO_BIG))
def test_a_shape_too_big_to_index_raises_at_the_call(device, make):
    with pytest.raises(ValueError, match="too big"):
        TOO_BIG[make](device)


def test_the_largest_shapes_numpy_allows_are_allowed(device):
    assert lt.zeros(HUGE, dtype=lt.int8, device=device).shape == (HUGE,)   # 2**62 bytes, as numpy
    assert lt.zeros((HUGE // 4, 0), device=device).size == 0
    np.broadcast_to(np.zeros((), np.int8), (HUGE,))   # (numpy allows it too)


def test_too_big_sum_raises_rather_than_returns_zero(device):
    with pytest.raises(ValueError, match=r"\(4611686018427387904, 4611686018427387904\)"):
        lt.ones((HUGE, HUGE), device=device).sum()


# ---- 13: empty writes are no-ops; empty reads and take_along_axis give empty results ---------------

EMPTY_SHAPES = [(5,), (0,), (3, 0), (0, 4), (2, 3)]


def _zero_size_indices(shape):
    n = shape[0]
    items = [slice(3, 1), slice(6, -1), slice(0, 0), slice(5, 0, 2), slice(None, None, -1), slice(None),
             np.array([], dtype=np.int64), np.zeros((0, 2), np.int64), np.zeros(shape, bool),
             np.zeros(n, bool), (np.array([], dtype=np.int64), Ellipsis), Ellipsis, None, (None, slice(2, 2)),
             (slice(4, 2), None), (Ellipsis, slice(2, 1)), [], ([],), [[]], np.zeros(0, np.float32)]
    if len(shape) > 1:
        items += [(slice(None), slice(1, 1)), (slice(None), slice(7, -1)), (slice(1, 1), 0 if shape[1] else slice(None)),
                  (slice(None), []), (Ellipsis, [[]])]
    return items


@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_zero_size_reads_and_writes_match_numpy(device, shape):
    a = np.arange(math.prod(shape)).reshape(shape)
    for index in _zero_size_indices(shape):
        want, error = numpy_outcome(lambda: a[index])
        if error is not None:
            with pytest.raises(error):
                lt.asarray(a, device=device)[index]
            continue
        assert_close(lt.asarray(a, device=device)[index], want)
        for value in (7, np.full(want.shape, 9), np.full(want.shape[-1:], 3)):
            b = a.copy()
            _, error = numpy_outcome(lambda: b.__setitem__(index, value))
            x = lt.asarray(a, device=device)
            if error is not None:
                with pytest.raises(error):
                    x[index] = value
                continue
            x[index] = value
            assert_close(x, b)


def _check_write_like_numpy(a: np.ndarray, index, value: np.ndarray, device) -> None:
    """x[index] = value (as numpy data and as a tensor) does what numpy's write does to a copy
    of `a`: the same values, or the same error."""
    b = a.copy()
    _, error = numpy_outcome(lambda: b.__setitem__(index, value))
    for v in (value, lt.asarray(value, device=device)):
        x = lt.asarray(a, device=device)
        if error is not None:
            with pytest.raises(error):
                x[index] = v
            continue
        x[index] = v
        assert_close(x, b)


@pytest.mark.parametrize("shape, index, value_shape", [
    ((5,), np.array([], np.int64), (2, 0)), ((5,), np.array([], np.int64), (2, 3)),
    ((6, 0, 4), (slice(None), slice(None), np.array([3, 3])), (2, 6, 0, 2)),
    ((6, 0, 4), (slice(None), slice(None), slice(0, 2)), (2, 6, 0, 2)),
    ((2, 2, 1), np.zeros((2, 2), bool), (3, 0, 1)), ((2, 2, 1), np.zeros((2, 2), bool), (3, 2, 1)),
    ((5,), slice(3, 1), (2, 0))], ids=str)
def test_empty_values_into_empty_targets(device, shape, index, value_shape):
    """numpy's array-index writes take any empty value for an empty target (its slices do not)."""
    a = np.zeros(shape, np.float32)
    value = np.ones(value_shape, np.float32)
    _check_write_like_numpy(a, index, value, device)


def test_issue_examples_of_empty_slice_writes(device):
    x = lt.arange(5, device=device)
    x[3:1] = 1
    x[6:-1] = 1
    x[2:2] = lt.zeros(0, dtype=lt.int64, device=device)
    assert x.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="broadcast"):
        x[3:1] = [1, 2]   # numpy: could not broadcast (2,) into (0,)


TAKE_ALONG = [((2, 0), (2, 0), 1), ((2, 0), (1, 0), 0), ((2, 0), (1, 1), 0), ((2, 0), (2, 1), 0),
              ((0, 3), (0, 3), 0), ((0, 3), (0, 2), 1), ((0, 3), (1, 2), 1), ((0, 3), (1, 1), 1),
              ((3, 0, 2), (1, 1, 1), 0), ((3, 0, 2), (3, 1, 0), 2), ((2, 3), (2, 0), 1), ((2, 3), (0, 3), 0),
              ((2, 3), (1, 0), 1), ((0,), (0,), 0), ((2, 3), (1, 2), 1), ((2, 3), (2, 1), 0),
              # numpy raises: indices into an empty axis, shapes that do not broadcast
              ((2, 0), (2, 3), 1), ((0,), (2,), 0), ((2, 3), (3, 2), 1), ((2, 3), (2, 4), 0)]


@pytest.mark.parametrize("x_shape, index_shape, axis", TAKE_ALONG, ids=str)
def test_take_along_axis_with_zero_size_axes(device, x_shape, index_shape, axis):
    a = np.arange(math.prod(x_shape), dtype=np.float32).reshape(x_shape)
    index = (np.arange(math.prod(index_shape)) % max(x_shape[axis], 1)).reshape(index_shape)
    want, error = numpy_outcome(lambda: np.take_along_axis(a, index, axis))
    x, i = lt.asarray(a, device=device), lt.asarray(index, device=device)
    if error is not None:
        with pytest.raises((IndexError, ValueError)):
            lt.take_along_axis(x, i, axis)
        return
    assert_close(lt.take_along_axis(x, i, axis), want)


# ---- 14: arange keeps its step when stop is left out -----------------------------------------------

ARANGE_CASES = [
    dict(start=1, step=0.25), dict(start=5, step=2), dict(start=-5, step=-2), dict(start=5, step=-1),
    dict(start=2.5, step=0.5), dict(start=-1.5, step=-0.5), dict(start=7, step=3), dict(start=0, step=2),
    dict(start=1, stop=2, step=0.25), dict(start=10, stop=-10, step=-3), dict(start=3.0, stop=-1.0, step=-0.5),
    dict(start=0, stop=1, step=0.1), dict(start=-3, stop=3, step=2), dict(start=5, stop=1), dict(start=4),
    dict(start=2.5), dict(start=1.5, stop=5, step=1.5), dict(start=0, stop=-1, step=0.1),
]


@pytest.mark.parametrize("case", ARANGE_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("dtype", [None, lt.int32, lt.int64, lt.uint8, lt.float16, lt.float32, lt.float64],
                         ids=lambda d: d.name if d else "inferred")
def test_arange_matches_numpy(device, case, dtype):
    np_args = dict(case, dtype=None if dtype is None else dtype.np)
    if "stop" not in case:   # numpy.arange(start, step=s) means arange(0, start, s)
        np_args = dict(start=0, stop=case["start"], step=case["step"] if "step" in case else 1, dtype=np_args["dtype"])
    want, error = numpy_outcome(lambda: np.arange(**np_args))
    if error is not None:
        with pytest.raises(error):
            lt.arange(**case, dtype=dtype, device=device)
        return
    if dtype is None:   # inferred as numpy does, except that float results are float32 (the default float)
        want = want.astype(np.float32 if want.dtype.kind == "f" else np.int64)
    got = lt.arange(**case, dtype=dtype, device=device)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


# ---- 15: comparing a dtype with anything that is not one is False, never an error -----------------

class _RaisesOnConversion:
    @property
    def dtype(self):
        raise RuntimeError("no dtype here")


class _RaisesOnEquality:
    def __eq__(self, other):
        raise RuntimeError("no comparing")

    __hash__ = object.__hash__


NOT_DTYPES = [None, {}, "a,b", "a", "not a dtype", "i4,i4", {"names": 1}, {"names": ["a"], "formats": ["f4"]},
              [1, 2], (1, 2), 3, 2.5, object(), _RaisesOnConversion(), _RaisesOnEquality(), np.zeros(2)]


@pytest.mark.parametrize("other", NOT_DTYPES, ids=lambda o: type(o).__name__ + repr(o)[:20])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_dtype_equality_with_a_non_dtype_is_false(dtype, other):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # not even a warning
        assert (dtype == other) is False
        assert (dtype != other) is True
        if not isinstance(other, (_RaisesOnEquality, np.ndarray)):   # (those decide for themselves)
            assert (other == dtype) is False


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_dtype_equality_and_hash_stay_consistent(dtype):
    assert dtype == dtype.np and dtype == dtype.name and dtype == np.dtype(dtype.name).type
    assert not (dtype != dtype.np)
    assert hash(dtype) == hash(dtype)
    assert {dtype: 1}[getattr(lt, dtype.name if dtype.name != "bool" else "bool_")] == 1
    assert len({*DTYPES, dtype}) == len(DTYPES)
    assert [d for d in DTYPES if d == dtype] == [dtype]


# ---- 16: a 0-d boolean index adds an axis of 1 (True) or 0 (False), as numpy's ---------------------

ZERO_D_MASK_INDICES = {
    "mask": lambda m: m,
    "ellipsis-mask": lambda m: (Ellipsis, m),
    "mask-ellipsis": lambda m: (m, Ellipsis),
    "int-mask": lambda m: (0, m),
    "mask-int": lambda m: (m, 1),
    "mask-slice-int": lambda m: (m, slice(None), 1),
    "int-slice-mask": lambda m: (1, slice(None), m),
    "none-mask": lambda m: (None, m),
    "slice-mask-slice": lambda m: (slice(1, None), m, slice(None, None, -1)),
}


def _zero_d_masks(value, device):
    yield lt.asarray(value, device=device)
    yield np.asarray(value)


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("form", list(ZERO_D_MASK_INDICES))
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)], ids=str)
def test_zero_d_boolean_index(device, shape, form, value):
    a = np.arange(math.prod(shape)).reshape(shape)
    for mask in _zero_d_masks(value, device):
        index = ZERO_D_MASK_INDICES[form](mask)
        np_index = ZERO_D_MASK_INDICES[form](np.asarray(value))
        want, error = numpy_outcome(lambda: a[np_index])
        x = lt.asarray(a, device=device)
        if error is not None:
            with pytest.raises(error):
                x[index]
            continue
        assert_close(x[index], want)
        b = a.copy()
        b[np_index] = -1
        x[index] = -1
        assert_close(x, b)


@pytest.mark.parametrize("scalar", [True, np.False_], ids=repr)
def test_a_python_bool_index_is_a_zero_d_mask(device, scalar):
    a = np.arange(3)
    assert_close(lt.asarray(a, device=device)[scalar], a[scalar])   # (issue 18: it was refused)


def test_zero_d_mask_issue_example(device):
    assert lt.asarray(5, device=device)[lt.asarray(True, device=device)].tolist() == [5]
    assert lt.asarray(5, device=device)[lt.asarray(False, device=device)].tolist() == []
    assert lt.zeros((2, 3), device=device)[lt.asarray(True, device=device)].shape == (1, 2, 3)


# ---- 17: dtype=None means the default (float32), or "like the input" / "from the arguments" --------

DEFAULT_FLOAT_CREATORS = {
    "zeros": lambda d: lt.zeros(2, dtype=None, device=d),
    "ones": lambda d: lt.ones(2, dtype=None, device=d),
    "empty": lambda d: lt.empty(2, dtype=None, device=d),
    "eye": lambda d: lt.eye(2, dtype=None, device=d),
    "linspace": lambda d: lt.linspace(0, 1, 3, dtype=None, device=d),
    "rand": lambda d: lt.rand(2, dtype=None, device=d),
    "randn": lambda d: lt.randn(2, dtype=None, device=d),
    "full-float": lambda d: lt.full(2, 1.5, dtype=None, device=d),
    "arange-float": lambda d: lt.arange(0.5, 3, dtype=None, device=d),
    "asarray-float": lambda d: lt.asarray([1.5], dtype=None, device=d),
}


@pytest.mark.parametrize("make", list(DEFAULT_FLOAT_CREATORS))
def test_explicit_dtype_none_is_the_default_float(device, make):
    assert DEFAULT_FLOAT_CREATORS[make](device).dtype == lt.float32


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_explicit_dtype_none_in_like_functions_is_the_input_dtype(device, dtype):
    x = lt.zeros(3, dtype=dtype, device=device)
    for made in (lt.zeros_like(x, dtype=None), lt.ones_like(x, dtype=None), lt.empty_like(x, dtype=None),
                 lt.full_like(x, 1, dtype=None), lt.asarray(x, dtype=None)):
        assert made.dtype == dtype and made.shape == (3,) and made.device == device


def test_explicit_dtype_none_is_inferred_from_the_arguments(device):
    assert lt.full(2, 7, dtype=None, device=device).dtype == lt.int64
    assert lt.full(2, True, dtype=None, device=device).dtype == lt.bool_
    assert lt.arange(3, dtype=None, device=device).dtype == lt.int64
    assert lt.asarray([1, 2], dtype=None, device=device).dtype == lt.int64
    assert lt.asarray(np.zeros(2, np.float16), dtype=None, device=device).dtype == lt.float16
    assert lt.zeros(2, device=device).astype(None).dtype == lt.float32   # (numpy: float64; here the default float)


# ---- 18: a descending sort puts nan last, as the ascending one does --------------------------------

def stable_descending_nan_last(a: np.ndarray, axis: int) -> np.ndarray:
    """The order of a descending, stable sort with nan last: written with Python's stable sort,
    independently of the library's numpy reference."""
    moved = np.moveaxis(a, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    order = np.array([sorted(range(len(row)), key=lambda i, row=row: (bool(np.isnan(row[i])),
                                                                        0.0 if np.isnan(row[i]) else -float(row[i])))
                      for row in rows], dtype=np.int64).reshape(moved.shape)
    return np.moveaxis(order, -1, axis)


@pytest.mark.parametrize("dtype", [lt.float16, lt.float32, lt.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [0, 1])
def test_descending_sort_puts_nan_last(device, dtype, axis):
    a = np.array([[1.0, np.nan, 3.0, -0.0, 3.0, np.nan, 0.0, -np.inf],
                  [np.nan, np.nan, 2.0, 2.0, np.inf, -1.0, 0.0, -0.0],
                  [5.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1.0, np.nan]], dtype.np)
    x = lt.asarray(a, device=device)
    order = stable_descending_nan_last(a, axis)
    got_order = lt.argsort(x, axis=axis, descending=True, stable=True)
    np.testing.assert_array_equal(got_order.numpy(), order)
    got = lt.sort(x, axis=axis, descending=True).numpy()
    want = np.take_along_axis(a, order, axis)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))   # -0.0 and 0.0 keep their order
    np.testing.assert_array_equal(lt.argsort(x, axis=axis).numpy(), np.argsort(a, axis=axis, kind="stable"))


def test_descending_sort_issue_example(device):
    x = lt.asarray([1.0, np.nan, 3.0], device=device)
    assert str(lt.sort(x, descending=True).tolist()) == "[3.0, 1.0, nan]"
    assert lt.argsort(x, descending=True).tolist() == [2, 0, 1]


# ---- found by the fuzzer (tests/fuzz.py): zero-size masks, values with extra leading axes ----------

MASKS_OVER_EMPTY = [((2, 3, 0), lambda a: np.ones((2, 3), bool)), ((0, 3, 2), lambda a: (slice(None), np.ones((3, 2), bool))),
                    ((2, 0, 3), lambda a: np.zeros((2, 0), bool)), ((2, 3, 0, 2), lambda a: (0, np.ones((3, 0), bool))),
                    ((3, 2, 0), lambda a: (Ellipsis, np.ones((2, 0), bool)))]


@pytest.mark.parametrize("shape, index", MASKS_OVER_EMPTY, ids=lambda v: str(v) if isinstance(v, tuple) else "")
def test_a_mask_over_a_tensor_with_a_zero_size_axis(device, shape, index):
    a = np.zeros(shape, np.float32)
    x = lt.asarray(a, device=device)
    assert_close(x[index(a)], a[index(a)])
    x[index(a)] = 5
    b = a.copy()
    b[index(a)] = 5
    assert_close(x, b)


@pytest.mark.parametrize("index, value_shape", [(slice(1, 2), (1, 1, 1)), (slice(None), (1, 1, 4, 1)),
                                                (([1, 2],), (1, 1, 2, 1)), (np.array([True, False, True, True]), (1, 3, 1)),
                                                ((1, 0), (1, 1)), ((1, 0), (1,)), (slice(1, 2), (2, 1, 1)),
                                                (slice(None), (1, 2, 1)), ((Ellipsis, 1, 0), (1, 1)),
                                                (np.asarray(2), (1,)), (np.asarray(2), (1, 1)),
                                                ((np.asarray(2), 0), (1, 1)), (2, (1, 1)), ((2, slice(None)), (1, 1))],
                         ids=str)
def test_write_values_with_extra_leading_size_1_axes(device, index, value_shape):
    a = np.zeros((4, 1), np.float32)
    value = np.arange(math.prod(value_shape), dtype=np.float32).reshape(value_shape) + 1
    _check_write_like_numpy(a, index, value, device)


@pytest.mark.parametrize("dtype", [lt.float16, lt.float32, lt.float64], ids=lambda d: d.name)
def test_logaddexp_keeps_a_python_scalar_weak_on_either_side(device, dtype):
    a = np.array([-1.0, 0.0, 1 / 3, 20.0], dtype.np)
    x = lt.asarray(a, device=device)
    for got, want in ((lt.logaddexp(1 / 3, x), np.logaddexp(1 / 3, a)), (lt.logaddexp(x, 1 / 3), np.logaddexp(a, 1 / 3))):
        assert got.dtype == want.dtype
        assert_close(got, want)
    assert lt.logaddexp(1.0, 2.0).dtype == lt.float32   # (two Python numbers: the default float)


def test_concatenate_with_axis_none_flattens_like_numpy(device):
    parts = [np.arange(6).reshape(2, 3), np.arange(4, dtype=np.int8).reshape(2, 1, 2), np.asarray(7)]
    got = lt.concatenate([lt.asarray(p, device=device) for p in parts], axis=None)
    assert_close(got, np.concatenate(parts, axis=None))


def test_results_that_numpy_copies_are_new_tensors(device):
    """Writing to the result of +x or a roll by 0 must not change x (numpy returns copies)."""
    x = lt.asarray(np.arange(4.0), device=device)
    y, z = +x, lt.roll(x, 0)
    assert y is not x and z is not x
    y += 1
    y[0] = 7
    z[1] = 9
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert y.tolist() == [7.0, 2.0, 3.0, 4.0] and z.tolist() == [0.0, 9.0, 2.0, 3.0]


def test_float16_logaddexp_rounds_once_as_numpy(device):
    """numpy's float16 logaddexp computes in float32 and rounds once; computed step by step in
    half it was 1% off (found by the fuzzer)."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(2000) * 5).astype(np.float16)
    b = (rng.standard_normal(2000) * 5).astype(np.float16)
    got = lt.logaddexp(lt.asarray(a, device=device), lt.asarray(b, device=device)).numpy()
    want = np.logaddexp(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_an_array_into_one_element_raises_for_every_dtype(device, dtype):
    """numpy refuses x[0] = [v] except into a bool array (a quirk the README names): lazytensor
    refuses it for every dtype, and takes the 0-d value."""
    x = lt.zeros(3, dtype=dtype, device=device)
    with pytest.raises(ValueError, match="shape"):
        x[0] = np.ones(1, dtype.np)
    x[np.asarray(1)] = np.ones((), dtype.np)
    assert x.tolist() == np.array([0, 1, 0]).astype(dtype.np).tolist()


def test_negative_integer_power_of_an_empty_result_is_empty(device):
    """numpy refuses integers to negative integer powers, but not where the result is empty
    (found by the fuzzer: `0 ** lt.full((0,), -1, dtype=lt.int32)` raised)."""
    got = [0 ** lt.full((0,), -1, dtype=lt.int32, device=device),
           lt.arange(3, device=device) ** lt.full((0, 1), -1, device=device),
           lt.zeros(0, dtype=lt.int64, device=device) ** -1]
    want = [0 ** np.full((0,), -1, dtype=np.int32), np.arange(3) ** np.full((0, 1), -1), np.zeros(0, np.int64) ** -1]
    for g, w in zip(got, want):
        assert g.numpy().shape == w.shape and g.numpy().dtype == w.dtype
    with pytest.raises(ValueError, match="negative integer powers"):
        lt.arange(3, device=device) ** -1
    with pytest.raises(ValueError, match="negative integer powers"):
        2 ** lt.full((2,), -1, device=device)


@pytest.mark.parametrize("source", [lt.int8, lt.int16, lt.int32, lt.int64, lt.uint64], ids=lambda d: d.name)
@pytest.mark.parametrize("target", [lt.float16, lt.float32, lt.float64], ids=lambda d: d.name)
def test_uint64_to_float_is_rounded_right_whatever_it_was_cast_from(device, source, target):
    """Negative integers cast to uint64 wrap to 2**64 - n, and convert to float from there (LLVM
    vectorized int8 -> uint64 -> float32 as 2**32 - n on x86; found by the fuzzer)."""
    rng = np.random.default_rng(11)
    info = np.iinfo(source.np)
    data = rng.integers(info.min, info.max, 203, dtype=source.np, endpoint=True)
    edges = [info.min, info.max, 0, 1, -1 if info.min else 2, info.max // 2, info.max - 1]
    data[:len(edges)] = np.array(edges, dtype=np.int64 if info.min else np.uint64).astype(source.np)
    if source == lt.uint64:
        data[7:12] = [2**63, 2**63 + 1, 2**64 - 2**39, 2**64 - 2**39 - 1, 2**63 + 2**39 + 1]
    for size in (1, 5, 11, 203):   # (LLVM's vector code differs with the length)
        part = np.concatenate([data[:size // 2], data[-(size - size // 2):]])
        with np.errstate(over="ignore"):
            want = part.astype(np.uint64).astype(target.np)
        got = lt.asarray(part, device=device).astype(lt.uint64).astype(target).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"{size} elements")


@pytest.mark.parametrize("reduce", ["var", "sum", "mean", "std"])
@pytest.mark.parametrize("shape", [(5, 6), (33, 17), (7, 300)], ids=str)
def test_a_reduction_read_two_ways_is_one_value(device, reduce, shape):
    """A reduction read squeezed and broadcast in one kernel is computed once: computed both in
    its own kernel and again inside the comparison, the two rounded apart and `s.squeeze(-1) !=
    s` was True (found by the fuzzer: an int32 var with correction=1)."""
    data = np.random.default_rng(5).integers(-30, 30, shape).astype(np.int32)
    kwargs = {"correction": 1} if reduce in ("var", "std") else {}
    x = lt.asarray(data, device=device)
    s = getattr(x, reduce)(axis=-1, keepdims=True, **kwargs)
    got = (s.squeeze(-1) != s).numpy()   # (realized alone: s is not a root of this realize)
    values = s.numpy()
    np.testing.assert_array_equal(got, values.squeeze(-1) != values)
    assert not got.diagonal().any()
