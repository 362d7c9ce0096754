"""What the Array API conformance suite (2025.12) checks, against numpy: the standard's
signatures, `dtype=` of the sums and products, repeat with counts per element, nextafter,
cumulative_prod, diff's prepend/append, expand_dims with several axes (2025.12), floor_divide's
infinities, the inspection namespace's dtypes, and element reads of pending tensors."""
import inspect
import math

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, has_fp64, random_array

P, K = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.KEYWORD_ONLY
PK = inspect.Parameter.POSITIONAL_OR_KEYWORD

# The standard's parameters of each function, in order, with their kinds (array_api_stubs/_2025_12)
REDUCTION = [("x", P), ("axis", K), ("keepdims", K)]
SIGNATURES = {
    "all": REDUCTION, "any": REDUCTION, "max": REDUCTION, "min": REDUCTION, "mean": REDUCTION,
    "argmax": REDUCTION, "argmin": REDUCTION,
    "sum": [("x", P), ("axis", K), ("dtype", K), ("keepdims", K)],
    "prod": [("x", P), ("axis", K), ("dtype", K), ("keepdims", K)],
    "std": [("x", P), ("axis", K), ("correction", K), ("keepdims", K)],
    "var": [("x", P), ("axis", K), ("correction", K), ("keepdims", K)],
    "astype": [("x", P), ("dtype", P), ("copy", K), ("device", K)],
    "isdtype": [("dtype", PK), ("kind", PK)],
    "reshape": [("x", P), ("shape", PK), ("copy", K)],
    "expand_dims": [("x", P), ("axis", PK)],
    "repeat": [("x", P), ("repeats", P), ("axis", K)],
    "diff": [("x", P), ("axis", K), ("n", K), ("prepend", K), ("append", K)],
    "nextafter": [("x1", P), ("x2", P)],
    "floor_divide": [("x1", P), ("x2", P)],
    "cumulative_sum": [("x", P), ("axis", K), ("dtype", K), ("include_initial", K)],
    "cumulative_prod": [("x", P), ("axis", K), ("dtype", K), ("include_initial", K)],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_the_standards(name):
    parameters = list(inspect.signature(getattr(lt, name)).parameters.values())
    want = SIGNATURES[name]
    assert [(p.name, p.kind) for p in parameters[:len(want)]] == want
    # anything more (numpy's ddof=) is keyword-only with a default
    assert all(p.kind is K and p.default is not inspect.Parameter.empty for p in parameters[len(want):])


def test_reductions_refuse_a_positional_axis():
    with pytest.raises(TypeError):
        lt.sum(lt.ones((2, 3)), 0)
    assert lt.ones((2, 3)).sum(0).tolist() == [2.0, 2.0, 2.0]   # (the method keeps PyTorch's style)


# ---- dtype= of sum, prod, cumulative_sum, cumulative_prod ------------------------------------

SHAPES = [(5,), (3, 7), (2, 0, 3), (4, 1, 5)]
TARGETS = [None, lt.int8, lt.uint16, lt.int64, lt.float32, lt.float64, lt.bool_]


def _reduction_input(dtype, shape, seed):
    a = random_array(np.random.default_rng(seed), shape, dtype)
    if np.dtype(dtype.name).kind == "f":
        a = ((a * 8).round() / 4).astype(a.dtype)   # (quarters: exact sums in any order)
    return a


@pytest.mark.parametrize("target", TARGETS, ids=lambda d: getattr(d, "name", "none"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_sum_and_prod_with_dtype(device, dtype, target):
    for i, shape in enumerate(SHAPES):
        a = _reduction_input(dtype, shape, i)
        x = lt.asarray(a, device=device)
        np_target = None if target is None else np.dtype(target.name)
        for axis in (None, 0, -1):
            for name in ("sum", "prod"):
                with np.errstate(all="ignore"):
                    want = getattr(np, name)(a, axis=axis, dtype=np_target)
                got = getattr(lt, name)(x, axis=axis, dtype=target)
                if np.dtype(dtype.name).kind in "iub" and want.dtype.kind in "iu":
                    assert_close(got, want)   # (integers wrap alike)
                else:
                    assert got.dtype.name == want.dtype.name
                    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64),
                                               rtol=5e-3 if "float16" in (dtype.name, want.dtype.name) else 1e-5)
        got = lt.sum(x, axis=0, dtype=target, keepdims=True)
        assert got.shape == (1,) + shape[1:]


@pytest.mark.parametrize("target", TARGETS, ids=lambda d: getattr(d, "name", "none"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_cumulative_sum_and_prod_with_dtype(device, dtype, target):
    for i, shape in enumerate(SHAPES):
        a = _reduction_input(dtype, shape, i + 10)
        if np.dtype(dtype.name).kind == "f":
            a = np.where(np.abs(a) > 2, np.sign(a) * 1.5, a).astype(a.dtype)   # (products that stay in range)
        x = lt.asarray(a, device=device)
        np_target = None if target is None else np.dtype(target.name)
        for axis in range(len(shape)):
            for name, np_name in (("cumulative_sum", "cumsum"), ("cumulative_prod", "cumprod")):
                with np.errstate(all="ignore"):
                    want = getattr(np, np_name)(a, axis=axis, dtype=np_target)
                got = getattr(lt, name)(x, axis=axis, dtype=target)
                if want.dtype.kind in "biu":
                    assert_close(got, want)
                else:
                    assert got.dtype.name == want.dtype.name
                    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64),
                                               rtol=1e-2 if "float16" in (dtype.name, want.dtype.name) else 1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_cumulative_prod_matches_numpy(device, dtype):
    rng = np.random.default_rng(7)
    for shape, axis in [((1,), 0), ((13,), 0), ((3, 9), 1), ((4, 5, 2), 0), ((2, 0, 3), 2), ((0,), 0), ((37,), None)]:
        a = random_array(rng, shape, dtype)
        if np.dtype(dtype.name).kind == "f":
            a = (1 + a / 8).astype(a.dtype)   # (around 1: no overflow on the way)
        x = lt.asarray(a, device=device)
        want = np.cumprod(a, axis=axis or 0)
        got = lt.cumulative_prod(x, axis=axis)
        if want.dtype.kind in "iu":
            assert_close(got, want)   # (integers wrap exactly alike)
        else:
            assert got.dtype.name == want.dtype.name
            np.testing.assert_allclose(got.numpy(), want, rtol=2e-2 if dtype is lt.float16 else 1e-5)
        with_one = lt.cumulative_prod(x, axis=axis, include_initial=True).numpy()
        ones = np.ones(shape[:axis or 0] + (1,) + shape[(axis or 0) + 1:], want.dtype)
        np.testing.assert_allclose(with_one, np.concatenate([ones, want], axis=axis or 0),
                                   rtol=2e-2 if dtype is lt.float16 else 1e-5)


def test_cumulative_prod_special_values_gradient_and_errors():
    a = np.array([2.0, np.inf, 0.0, 3.0, np.nan, 1.0])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(lt.cumulative_prod(lt.asarray(a)).numpy(), np.cumprod(a))
    x = lt.asarray([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]], dtype=lt.float64).requires_grad_()
    lt.cumulative_prod(x, axis=1).sum().backward()
    # d/dx_j of sum_i prod_{k<=i} x_k: [[1 + 2 + 6, 1 + 3, 2], [1, 4 + 20, 0]]
    np.testing.assert_allclose(x.grad.numpy(), [[9.0, 4.0, 2.0], [1.0, 24.0, 0.0]])
    with pytest.raises(ValueError, match="axis is required"):
        lt.cumulative_prod(lt.ones((2, 3)))
    with pytest.raises(np.exceptions.AxisError):
        lt.cumulative_prod(lt.ones((2, 3)), axis=2)


# ---- repeat with an array of counts ----------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_repeat_with_counts_per_element(device, dtype):
    rng = np.random.default_rng(5)
    a = random_array(rng, (3, 4, 2), dtype)
    x = lt.asarray(a, device=device)
    for axis in (None, 0, 1, -1):
        n = a.size if axis is None else a.shape[axis]
        for counts in (rng.integers(0, 4, n), np.array([2]), np.zeros(n, np.int64)):
            for kind in (np.int64, np.int8, np.uint16):
                want = np.repeat(a, counts.astype(kind), axis=axis)
                assert_close(lt.repeat(x, lt.asarray(counts.astype(kind), device=device), axis=axis), want)
            assert_close(lt.repeat(x, counts.tolist(), axis=axis), np.repeat(a, counts, axis=axis))
    assert_close(lt.repeat(x, 3, axis=1), np.repeat(a, 3, axis=1))
    assert_close(lt.repeat(lt.asarray(a[:0], device=device), lt.asarray(np.zeros(0, np.int64), device=device), axis=0),
                 np.repeat(a[:0], np.zeros(0, np.int64), axis=0))


def test_repeat_errors_at_the_call():
    x = lt.ones((2, 3))
    with pytest.raises(ValueError, match="do not match the 3 elements"):
        lt.repeat(x, lt.asarray([1, 2]), axis=1)
    with pytest.raises(ValueError, match="non-negative"):
        lt.repeat(x, lt.asarray([1, -1, 2]), axis=1)
    with pytest.raises(ValueError, match="non-negative"):
        lt.repeat(x, -1)
    with pytest.raises(TypeError, match="integers"):
        lt.repeat(x, lt.asarray([1.0, 2.0, 1.0]), axis=1)
    with pytest.raises(TypeError, match="an int or an array"):
        lt.repeat(x, 2.0)


def test_repeat_with_counts_has_a_gradient():
    x = lt.asarray([1.0, 2.0, 3.0], dtype=lt.float64).requires_grad_()
    (lt.repeat(x, lt.asarray([2, 0, 3])) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 1.0 * 2, 0.0, 2 * 3.0 * 3])


def test_repeat_result_is_a_new_tensor():
    x = lt.asarray([1, 2, 3])
    y = lt.repeat(x, lt.asarray([1, 0, 2]))
    y[0] = 9
    assert x.tolist() == [1, 2, 3] and y.tolist() == [9, 3, 3]


# ---- nextafter ---------------------------------------------------------------------------------

def _bits_equal(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Identical values: the same bits (so the same zero), or both nan."""
    ints = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
    return (got.view(ints) == want.view(ints)) | (np.isnan(got) & np.isnan(want))


def _hard_values(np_dtype) -> np.ndarray:
    f = np.finfo(np_dtype)
    one = np_dtype(1)
    base = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, f.max, f.smallest_normal, f.smallest_subnormal,
                     2 * f.smallest_normal, 4 * f.smallest_normal, 1.0, 2.0, 0.5, 3.0, 1.5, 1e-3], np_dtype)
    powers = np.ldexp(one, np.arange(f.minexp - f.nmant, f.maxexp, dtype=np.int32)).astype(np_dtype)
    values = np.concatenate([base, powers])
    with np.errstate(all="ignore"):
        values = np.concatenate([values, np.nextafter(values, np_dtype(np.inf)), np.nextafter(values, np_dtype(-np.inf))])
    return np.concatenate([values, -values])


@pytest.mark.parametrize("dtype", [lt.float16, lt.float32, lt.float64], ids=lambda d: d.name)
def test_nextafter_matches_numpy_bit_for_bit(device, dtype):
    np_dtype = np.dtype(dtype.name).type
    rng = np.random.default_rng(11)
    ints = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[np_dtype]
    random = rng.integers(0, np.iinfo(ints).max, 3000, dtype=ints, endpoint=True).view(np_dtype)
    a = np.concatenate([_hard_values(np_dtype), random])
    x = lt.asarray(a, device=device)
    for toward in (np.inf, -np.inf, 0.0, 1.0, -1.0, np.nan):
        b = np.full_like(a, toward)
        with np.errstate(all="ignore"):
            want = np.nextafter(a, b)
        got = lt.nextafter(x, lt.asarray(b, device=device)).numpy()
        # numpy's float16 loop gives x1 where x1 == x2 (nextafter(-0.0, 0.0) is -0.0 there); C's
        # nextafter, numpy's float32/64 and the Array API give x2
        if np_dtype is np.float16:
            want = np.where(a == b, b, want)
        bad = ~_bits_equal(got, want)
        assert not bad.any(), f"nextafter({a[bad][:4]}, {toward}) gave {got[bad][:4]}, numpy {want[bad][:4]}"
    shuffled = rng.permutation(a)
    with np.errstate(all="ignore"):
        want = np.nextafter(a, shuffled)
    if np_dtype is np.float16:
        want = np.where(a == shuffled, shuffled, want)
    assert _bits_equal(lt.nextafter(x, lt.asarray(shuffled, device=device)).numpy(), want).all()


def test_nextafter_special_cases_of_the_standard(device):
    x = lt.asarray([-0.0, 0.0, 0.0, -0.0, 1.0, np.nan, 1.0], dtype=lt.float64, device=device)
    y = lt.asarray([0.0, -0.0, 1.0, -1.0, np.nan, 1.0, 1.0], dtype=lt.float64, device=device)
    got = lt.nextafter(x, y).numpy()
    tiny = np.finfo(np.float64).smallest_subnormal
    np.testing.assert_array_equal(np.signbit(got[:2]), [False, True])    # -0 -> +0 is +0, +0 -> -0 is -0
    np.testing.assert_array_equal(got[2:4], [tiny, -tiny])
    assert np.isnan(got[4]) and np.isnan(got[5]) and got[6] == 1.0


def test_nextafter_dtypes_scalars_and_broadcasting(device):
    x = lt.asarray(np.float32([[1.0], [2.0]]), device=device)
    got = lt.nextafter(x, lt.asarray(np.float32([0.0, 3.0, 2.0]), device=device))
    want = np.nextafter(np.float32([[1.0], [2.0]]), np.float32([0.0, 3.0, 2.0]))
    assert_close(got, want)
    assert _bits_equal(got.numpy(), want).all()
    assert lt.nextafter(x, 0).dtype is lt.float32            # (a Python scalar is weak)
    assert lt.nextafter(1.0, x).shape == (2, 1)
    for dtype in (lt.int8, lt.int32, lt.uint16, lt.bool_):   # numpy computes integers in float
        a = random_array(np.random.default_rng(2), (4,), dtype)
        got = lt.nextafter(lt.asarray(a, device=device), lt.asarray(a[::-1].copy(), device=device))
        want = np.nextafter(a, a[::-1])
        assert got.dtype.name == want.dtype.name
        assert _bits_equal(got.numpy(), want).all()
    assert lt.nextafter(lt.zeros((0, 3), device=device), 1.0).shape == (0, 3)


# ---- diff with prepend / append, expand_dims with several axes ---------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_diff_prepend_append(device, dtype):
    rng = np.random.default_rng(9)
    a = random_array(rng, (3, 5, 2), dtype)
    x = lt.asarray(a, device=device)
    for axis in (0, 1, -1):
        side = list(a.shape)
        side[axis] = 2
        before, after = random_array(rng, tuple(side), dtype), random_array(rng, tuple(side[:axis % 3] + [1] + side[axis % 3 + 1:]), dtype)
        for n in (0, 1, 2, 3):
            for kw in (dict(prepend=before), dict(append=after), dict(prepend=before, append=after)):
                want = np.diff(a, axis=axis, n=n, **kw)
                got = lt.diff(x, axis=axis, n=n, **{k: lt.asarray(v, device=device) for k, v in kw.items()})
                assert_close(got, want)
        if dtype is not lt.bool_:
            assert_close(lt.diff(x, axis=axis, prepend=0, append=1), np.diff(a, axis=axis, prepend=0, append=1))


def test_diff_errors_at_the_call():
    x = lt.ones((2, 3))
    with pytest.raises(ValueError, match="does not fit"):
        lt.diff(x, axis=1, prepend=lt.ones((3, 1)))
    with pytest.raises(ValueError, match="non-negative"):
        lt.diff(x, n=-1)
    with pytest.raises(ValueError, match="0-d"):
        lt.diff(lt.asarray(1.0))


@pytest.mark.parametrize("axis", [0, -1, 2, (0,), (0, 1), (-1, 0), (1, 3), (-2, -1), (4, 0, 2)], ids=str)
def test_expand_dims_with_several_axes(device, axis):
    a = np.arange(6).reshape(2, 3)
    got = lt.expand_dims(lt.asarray(a, device=device), axis)
    assert_close(got, np.expand_dims(a, axis))


def test_expand_dims_is_a_view_and_checks_axes():
    x = lt.zeros((2, 3))
    v = lt.expand_dims(x, (0, 2))
    v[0, 1, 0, 2] = 5.0
    assert x[1, 2].item() == 5.0
    for bad in [(0, 4), (-5,), 3]:
        with pytest.raises(IndexError):
            lt.expand_dims(x, bad)
    with pytest.raises(ValueError, match="repeated"):
        lt.expand_dims(x, (1, 1))


# ---- floor_divide where one operand is infinite ----------------------------------------------

@pytest.mark.parametrize("dtype", [lt.float16, lt.float32, lt.float64], ids=lambda d: d.name)
def test_floor_divide_infinities_follow_the_standard(device, dtype):
    np_dtype = np.dtype(dtype.name)
    inf = np.inf
    # (x1, x2, the standard's result) for its special cases with one infinite operand
    cases = [(inf, 2.0, inf), (inf, -2.0, -inf), (-inf, 2.0, -inf), (-inf, -2.0, inf),
             (3.0, inf, 0.0), (3.0, -inf, -0.0), (-3.0, inf, -0.0), (-3.0, -inf, 0.0),
             (inf, 0.0, inf), (inf, -0.0, -inf), (0.0, inf, 0.0), (-0.0, inf, -0.0),
             (inf, inf, np.nan), (inf, np.nan, np.nan), (np.nan, inf, np.nan)]
    a, b, want = (np.array(column, np_dtype) for column in zip(*cases))
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    for got in (lt.floor_divide(x, y), x // y):
        np.testing.assert_array_equal(got.numpy(), want)   # (nan where nan)
        signed = ~np.isnan(want)   # (and the zeros' signs: a nan's is no matter)
        np.testing.assert_array_equal(np.signbit(got.numpy())[signed], np.signbit(want)[signed])
    z = x.copy()
    z //= y
    np.testing.assert_array_equal(z.numpy(), want)
    assert lt.floor_divide(x, 2.0).numpy()[0] == inf and (3.0 // y).numpy()[4] == 0.0


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=lambda d: d.name)
def test_floor_divide_elsewhere_is_numpys(device, dtype):
    rng = np.random.default_rng(4)
    a, b = random_array(rng, (4, 7), dtype), random_array(rng, (7,), dtype)
    if np.dtype(dtype.name).kind == "f":
        a.reshape(-1)[::5] = 0.0   # (0 // x, and x // 0 below: signed zeros, infinities, nan)
        b[::3] = 0.0
    else:
        b = np.where(b == 0, 3, b).astype(b.dtype)
    with np.errstate(all="ignore"):
        want = np.floor_divide(a, b)
    assert_close(lt.floor_divide(lt.asarray(a, device=device), lt.asarray(b, device=device)), want)
    assert_close(lt.asarray(a, device=device) // lt.asarray(b, device=device), want)
    assert_close(lt.asarray(a, device=device) // 3, np.floor_divide(a, a.dtype.type(3)))


# ---- the inspection namespace, astype and reshape with copy= ---------------------------------

def test_info_lists_the_standard_dtypes_only():
    info = lt.__array_namespace_info__()
    assert "float16" not in info.dtypes() and "float16" not in info.dtypes(kind="real floating")
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert lt.asarray([1.0], dtype=lt.float16).dtype is lt.float16 and lt.isdtype(lt.float16, "real floating")
    assert info.default_dtypes()["real floating"] is lt.float32 and info.default_dtypes()["indexing"] is lt.int64
    assert info.capabilities()["max dimensions"] == 64 and isinstance(info.devices(), tuple)
    assert info.default_device() in info.devices()


def test_astype_copy_false_returns_the_same_tensor(device):
    x = lt.asarray([1, 2, 3], device=device)
    assert lt.astype(x, lt.int64, copy=False) is x
    assert lt.astype(x, lt.int64) is not x
    y = lt.astype(x, lt.int64)
    y[0] = 7
    assert x.tolist() == [1, 2, 3]
    assert lt.astype(x, lt.float32, copy=False).tolist() == [1.0, 2.0, 3.0]


def test_reshape_copy(device):
    a = np.arange(12).reshape(3, 4)
    x = lt.asarray(a, device=device)
    view = lt.reshape(x, (4, 3), copy=False)
    view[0, 0] = 100
    assert x[0, 0].item() == 100
    copied = lt.reshape(x, (2, 6), copy=True)
    copied[0, 0] = -1
    assert x[0, 0].item() == 100 and copied.tolist()[0][0] == -1
    with pytest.raises(ValueError, match="without a copy"):
        lt.reshape(x.T, (12,), copy=False)
    assert_close(lt.reshape(x.T, (12,)), np.reshape(np.where(a == 0, 100, a).T, (12,)))
    with pytest.raises(TypeError):
        lt.reshape(x, (12,), copy="yes")


# ---- element reads of pending tensors --------------------------------------------------------

def test_element_reads_of_a_pending_tensor_compile_at_most_twice(device):
    a = np.arange(1, 61, dtype=np.int32).reshape(3, 4, 5)
    x = lt.asarray(a, device=device)
    y = x // 3 + 7   # (a structure no other test makes: its kernels are compiled here)
    before = lt.stats()["kernels_compiled"]
    for index in np.ndindex(*a.shape):
        assert int(y[index]) == a[index] // 3 + 7
    assert lt.stats()["kernels_compiled"] - before <= 2   # (the first element's kernel, then all of y)
    rows = y[1]   # a view of it: read from the same memory
    assert [rows[i, j].item() for i in range(4) for j in range(5)] == (a[1] // 3 + 7).reshape(-1).tolist()
    assert lt.stats()["kernels_compiled"] - before <= 2
    z = lt.zeros(4, device=device) + 2   # (the same graph on every device: each its own value)
    assert [z[i].item() for i in range(4)] == [2.0] * 4


def test_one_element_read_of_a_pending_tensor_computes_that_element_only(device):
    x = lt.asarray(np.arange(10.0), device=device)
    y = x * 3 + 0.5
    assert y[4].item() == 12.5
    assert y.node.op is not lt.ir.ops.Op.BUFFER   # (y itself is still pending)
    assert math.isclose(float(y[7]), 21.5)


# ---- isin (2025.12) ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_isin_matches_numpy(device, dtype):
    rng = np.random.default_rng(13)
    a = random_array(rng, (3, 5), dtype)
    if dtype.is_float:
        a[0, :2] = [np.nan, -0.0]
    x = lt.asarray(a, device=device)
    for other in (lt.int8, lt.uint64, lt.float64, lt.bool_, dtype):
        b = random_array(rng, (2, 4), other)
        if other.is_float:
            b[0, :2] = [np.nan, 0.0]   # (nan is in nothing; -0.0 is 0.0)
        for invert in (False, True):
            got = lt.isin(x, lt.asarray(b, device=device), invert=invert)
            assert_close(got, np.isin(a, b, invert=invert))
    assert_close(lt.isin(x, lt.asarray(a[:0], device=device)), np.zeros(a.shape, bool))
    assert_close(lt.isin(lt.asarray(a[:0], device=device), x), np.zeros((0, 5), bool))


def test_isin_scalars_and_errors():
    x = lt.asarray([1, 2, 3], dtype=lt.uint8)
    assert lt.isin(x, 2).tolist() == [False, True, False]
    assert lt.isin(x, 300, invert=True).tolist() == [True, True, True]
    got = lt.isin(2, x)
    assert got.shape == () and got.dtype is lt.bool_ and got.item() is True
    with pytest.raises(TypeError, match="must be a tensor"):
        lt.isin(1, 2)


def test_take_along_axis_defaults_to_the_last_axis(device):
    a = random_array(np.random.default_rng(3), (3, 4, 5), lt.int16)
    order = np.argsort(a, axis=-1)
    got = lt.take_along_axis(lt.asarray(a, device=device), lt.asarray(order, device=device))
    assert_close(got, np.take_along_axis(a, order, axis=-1))
    assert list(inspect.signature(lt.take_along_axis).parameters)[:3] == ["x", "indices", "axis"]


def test_version_is_2025_12():
    assert lt.__array_api_version__ == "2025.12"
    x = lt.ones(2)
    assert x.__array_namespace__(api_version="2025.12") is lt and x.__array_namespace__() is lt


# ---- values computed from elements of realized memory: on the host, as numpy's scalars ----------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_element_arithmetic_and_comparisons_compile_nothing(device, dtype):
    rng = np.random.default_rng(21)
    a, b = random_array(rng, (3, 4), dtype), random_array(rng, (3, 4), dtype)
    if dtype.is_float:
        a[0, :3] = [np.nan, -0.0, np.inf]
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    x.realize(), y.realize()
    before = lt.stats()["kernels_compiled"]
    for index in np.ndindex(*a.shape):
        assert bool(x[index] == y[index]) == bool(a[index] == b[index])
        assert bool(x[index] < y[index]) == bool(a[index] < b[index])
        assert bool(lt.isnan(x[index])) == bool(np.isnan(a[index]))
        if dtype is not lt.bool_:
            with np.errstate(all="ignore"):
                want = (a[index] * 3 + b[index]).item()
            got = (x[index] * 3 + y[index]).item()
            assert got == want or (math.isnan(got) and math.isnan(want)), (index, got, want)
    assert bool(lt.all(x[1, :3] == x[1, :3])) == bool(np.all(a[1, :3] == a[1, :3]))
    assert lt.stats()["kernels_compiled"] == before


@pytest.mark.parametrize("dtype", [lt.complex64, lt.complex128], ids=lambda d: d.name)
def test_complex_element_arithmetic_compiles_nothing_and_agrees_with_kernels(device, dtype):
    # (the conformance suite's outer and tensordot tests check out[i, j] == x1[i] * x2[j] per element)
    if dtype is lt.complex128 and not has_fp64(device):
        pytest.skip("no float64")
    rng = np.random.default_rng(22)
    a, b = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype.np), \
        (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype.np)
    a[0, :3] = [complex(np.nan, 1), complex(np.inf, -0.0), complex(-0.0, np.inf)]
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    products = (x * y + x - y).numpy()   # (kernels)
    tolerance = 1e-6 if dtype is lt.complex64 else 1e-14
    before = lt.stats()["kernels_compiled"]
    for index in np.ndindex(*a.shape):
        assert bool(x[index] == y[index]) == bool(a[index] == b[index])
        assert bool(x[index] != x[index]) == bool(a[index] != a[index])
        got = (x[index] * y[index] + x[index] - y[index]).item()
        with np.errstate(all="ignore"):
            want = (a[index] * b[index] + a[index] - b[index]).item()
        # (to rounding: numpy's array loops, its scalars and the kernels each may fuse a multiply-add)
        np.testing.assert_allclose(got, want, rtol=tolerance)
        np.testing.assert_allclose(got, products[index], rtol=tolerance)
        np.testing.assert_equal(lt.real(x[index]).item(), a[index].real)
    assert lt.stats()["kernels_compiled"] == before


def test_an_array_of_element_products_compiles_nothing(device):
    # (the suite's outer test: asarray([[x1[i] * x2[j] for j] for i]) reads each 0-d value with __array__)
    a, b = np.arange(1, 6, dtype=np.int32), np.arange(3, dtype=np.uint16)
    x1, x2 = lt.asarray(a, device=device), lt.asarray(b, device=device)
    before = lt.stats()["kernels_compiled"]
    got = lt.asarray([[x1[i] * x2[j] for j in range(3)] for i in range(5)], dtype=lt.int64, device=device)
    assert lt.stats()["kernels_compiled"] == before
    assert_close(got, np.outer(a, b).astype(np.int64))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_reductions_of_nothing_read_as_their_identity(device, dtype):
    for shape in [(0,), (2, 0), (0, 3)]:
        x = lt.zeros(shape, dtype=dtype, device=device)
        assert bool(lt.all(x)) is True and bool(lt.any(x)) is False
        assert bool(lt.all(x == x)) is True and lt.any(x != 0).item() is False
        assert lt.sum(x).item() == 0 and lt.prod(x).item() == 1


def test_host_values_leave_transcendental_functions_and_float_sums_to_kernels(device):
    a = np.linspace(0.1, 2.0, 12, dtype=np.float32).reshape(3, 4)
    x = lt.asarray(a, device=device)
    assert math.isclose(lt.exp(x[1, 2]).item(), float(np.exp(a[1, 2])), rel_tol=1e-6)
    assert math.isclose(x[1, :].sum().item(), float(a[1].sum()), rel_tol=1e-6)
    assert lt.asarray([3, 4], device=device)[0].item() // 2 == 1


def test_zero_d_integer_tensors_index_as_their_values(device):
    a = np.arange(24).reshape(2, 3, 4)
    x = lt.asarray(a, device=device)
    k = lt.asarray([1, 0, 2], device=device)
    wide = lt.broadcast_to(k, (5, 3))   # (elements of a view of memory too)
    before = lt.stats()["kernels_compiled"]
    for i, j in enumerate([1, 0, 2]):
        assert x[k[0], k[i], 3].item() == a[1, j, 3]
        assert_close(x[k[0], wide[4, i]], a[1, j])
        assert_close(x[:, k[i]], a[:, j])
        assert_close(x[lt.asarray(1, device=device), k[i] + 0], a[1, j])   # (a host value too)
    assert lt.stats()["kernels_compiled"] == before
    row = x[lt.asarray(1, device=device)]   # numpy's result: a copy, not a view
    row[0, 0] = -5
    assert x[1, 0, 0].item() == 12
    with pytest.raises(IndexError):
        x[lt.asarray(2, device=device)]
    assert_close(x[lt.asarray(1, device=device), [0, 2]], a[np.array(1), [0, 2]])
    assert x[lt.asarray(True, device=device)].shape == (1, 2, 3, 4)   # (a 0-d mask stays a mask)
