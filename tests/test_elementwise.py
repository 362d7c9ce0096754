"""Elementwise ops compared with numpy: every op over every dtype, broadcasting, zero-size and
one-element shapes, strided numpy inputs, Python scalars and numpy arrays on either side,
in-place forms, special float values, division by zero, and long fused chains.

The expected value is always numpy's answer on the same inputs. Where numpy raises for a dtype
(`-` of bool, `~` of float), lazytensor must raise the same kind of error at the call, before
anything is realized. Where numpy answers in a dtype lazytensor does not have (complex, say),
lazytensor refuses the call with a TypeError.
"""
import math
import operator
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazytensor as lt
from conftest import BINARY, DTYPES, assert_close, random_array

DTYPE_IDS = [d.name for d in DTYPES]
SUPPORTED_NP = {np.dtype(d.name) for d in DTYPES}
FLOAT_DTYPES = [lt.float32, lt.float64]
INT_DTYPES = [lt.int32, lt.int64]

OPERATOR_OPS = [name for name in BINARY if name not in ("maximum", "minimum")]
COMPARISONS = ["lt", "le", "gt", "ge", "eq", "ne"]

TRANSCENDENTAL = ["exp", "log", "sin", "cos", "tanh"]
FLOAT_UNARY = ["exp", "log", "sqrt", "sin", "cos", "tanh"]


# name -> (lazytensor spelling, numpy reference)
UNARY = {
    "neg": (operator.neg, np.negative),
    "abs": (abs, np.abs),
    "invert": (operator.invert, np.invert),
    **{name: (operator.methodcaller(name), getattr(np, name)) for name in FLOAT_UNARY},
}


# ---- helpers ------------------------------------------------------------------------------------

def numpy_result(fn, *args):
    """numpy's answer as an array, or the exception class lazytensor must raise instead."""
    with np.errstate(all="ignore"):
        try:
            out = np.asarray(fn(*args))
        except TypeError:      # includes numpy's UFuncTypeError
            return TypeError
        except OverflowError:
            return OverflowError
        except ValueError:
            return ValueError
    if out.dtype not in SUPPORTED_NP:
        return TypeError       # a dtype lazytensor lacks: refused by lazytensor
    return out


def as_operand(value, device):
    """numpy arrays become tensors; Python scalars stay as they are."""
    return lt.asarray(value, device=device) if isinstance(value, np.ndarray) else value


def tolerance(want: np.ndarray, transcendental: bool = False):
    if want.dtype == np.float16:
        return dict(rtol=2e-3, atol=2e-3)  # half precision: ~3 decimal digits
    if want.dtype == np.float32 and transcendental:
        return dict(rtol=1e-5, atol=1e-6)
    if want.dtype == np.float32:
        return dict(rtol=2e-5, atol=2e-5)
    return dict(rtol=1e-12, atol=1e-12)


def assert_matches(got, want, transcendental: bool = False) -> None:
    """Like conftest.assert_close, with the float32 transcendental tolerance where asked."""
    assert isinstance(got, lt.Tensor), f"expected a lazy Tensor, got {type(got).__name__}"
    got_array = got.numpy()
    assert got_array.shape == want.shape, f"shape {got_array.shape} != numpy's {want.shape}"
    assert got_array.dtype == want.dtype, f"dtype {got_array.dtype} != numpy's {want.dtype}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got_array, want, equal_nan=True, **tolerance(want, transcendental))
    else:
        np.testing.assert_array_equal(got_array, want)


def assert_same_zero_signs(got: np.ndarray, want: np.ndarray, where=None) -> None:
    """-0.0 and 0.0 compare equal; numpy's sign of a zero result must be kept too."""
    zero = (want == 0) if where is None else (want == 0) & where
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]),
                                  err_msg="sign of zero results differs from numpy")


def check_binary(name, a, b, device, transcendental=False):
    """`a op b` with lazytensor (numpy arrays turned into tensors) against numpy on a, b."""
    lt_op, np_fn = BINARY[name]
    want = numpy_result(np_fn, a, b)
    x, y = as_operand(a, device), as_operand(b, device)
    if isinstance(want, type):
        with pytest.raises(want):
            lt_op(x, y)       # raises at the call: nothing has been realized yet
        return
    got = lt_op(x, y)
    assert got.device == device
    assert_matches(got, want, transcendental=transcendental or name == "pow")


def binary_inputs(rng, name, dtype, shape_a, shape_b):
    """Random operands for `name`, with ties (for comparisons) and exponents numpy accepts."""
    a = random_array(rng, shape_a, dtype)
    b = random_array(rng, shape_b, dtype)
    np_dtype = np.dtype(dtype.name)
    if shape_a == shape_b and name != "pow":
        b = np.where(rng.random(shape_b) < 0.25, a, b)   # equal pairs: ties for <=, ==, max
    if name == "pow" and np_dtype.kind == "i":
        b = rng.integers(0, 8, size=shape_b).astype(np_dtype)   # numpy refuses negative powers
    elif name == "pow" and np_dtype.kind == "f":
        a = (a * 2).astype(np_dtype)
        # integral exponents give finite powers of negative bases; the others give nan
        b = np.where(rng.random(shape_b) < 0.5, np.round(b * 3), b).astype(np_dtype)
    # 0-d results of numpy arithmetic are numpy scalars: keep arrays, or `a ** b` is numpy's alone
    return np.asarray(a), np.asarray(b)


@pytest.fixture
def rng(request):
    # a fixed seed per test id, so a failure reproduces
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# ---- every binary op over every dtype -----------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_op_matches_numpy(name, dtype, device, rng):
    a, b = binary_inputs(rng, name, dtype, (4, 33), (4, 33))
    check_binary(name, a, b, device)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_op_matches_numpy(name, dtype, device, rng):
    a = random_array(rng, (5, 19), dtype)
    if name in ("log", "sqrt") and dtype.is_float:
        a = np.where(rng.random(a.shape) < 0.8, np.abs(a), a).astype(a.dtype)  # mostly defined
    lt_op, np_fn = UNARY[name]
    want = numpy_result(np_fn, a)
    x = lt.asarray(a, device=device)
    if isinstance(want, type):
        with pytest.raises(want):
            lt_op(x)
        return
    assert_matches(lt_op(x), want, transcendental=name in TRANSCENDENTAL)


def test_negative_of_bool_raises_at_the_call(device):
    x = lt.asarray(np.array([True, False]), device=device)
    with pytest.raises(TypeError):
        -x
    with pytest.raises(TypeError):
        x - x
    with pytest.raises(TypeError):
        x - True


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_bitwise_ops_on_floats_raise_at_the_call(dtype, device):
    x = lt.ones(3, dtype=dtype, device=device)
    for op in (operator.and_, operator.or_, operator.xor):
        with pytest.raises(TypeError):
            op(x, x)
        with pytest.raises(TypeError):
            op(x, 1)
    with pytest.raises(TypeError):
        ~x


# ---- transcendentals over wide ranges -----------------------------------------------------------

def _wide_inputs(name, np_dtype, rng):
    n = 4099   # not a multiple of any vector width: the loop tail is exercised too
    if name == "exp":
        hi = 88.0 if np_dtype == np.float32 else 709.0
        return rng.uniform(-hi, hi, n)
    if name in ("log", "sqrt"):
        exponent = 37 if np_dtype == np.float32 else 300
        return 10.0 ** rng.uniform(-exponent, exponent, n)
    if name in ("sin", "cos"):
        return np.concatenate([rng.uniform(-1e4, 1e4, n), rng.uniform(-4, 4, n)])
    if name == "tanh":
        return np.concatenate([rng.uniform(-20, 20, n), rng.uniform(-1e-3, 1e-3, n)])
    raise AssertionError(name)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_float_unary_over_wide_range(name, dtype, device, rng):
    np_dtype = np.dtype(dtype.name)
    a = _wide_inputs(name, np_dtype, rng).astype(np_dtype)
    got = getattr(lt.asarray(a, device=device), name)()
    assert_matches(got, getattr(np, name)(a), transcendental=name in TRANSCENDENTAL)


# ---- where, astype ------------------------------------------------------------------------------

@pytest.mark.parametrize("cond_dtype", DTYPES, ids=[f"cond_{n}" for n in DTYPE_IDS])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_where_matches_numpy(dtype, cond_dtype, device, rng):
    cond = random_array(rng, (4, 9), cond_dtype)   # non-bool conditions count by truthiness
    a = random_array(rng, (4, 9), dtype)
    b = random_array(rng, (4, 9), dtype)
    got = lt.where(lt.asarray(cond, device=device), lt.asarray(a, device=device),
                   lt.asarray(b, device=device))
    assert_matches(got, np.where(cond, a, b))


@pytest.mark.parametrize("shapes", [((4, 1), (1, 5), ()), ((5,), (3, 1), (1,)), ((), (2, 3), (3,)),
                                    ((0, 3), (3,), ()), ((2, 1, 3), (4, 1), (1, 1, 1, 3))],
                         ids=lambda s: " ".join(map(str, s)))
def test_where_broadcasts_all_three(shapes, device, rng):
    cond = random_array(rng, shapes[0], lt.bool_)
    a = random_array(rng, shapes[1], lt.float32)
    b = random_array(rng, shapes[2], lt.float32)
    got = lt.where(lt.asarray(cond, device=device), lt.asarray(a, device=device),
                   lt.asarray(b, device=device))
    assert_matches(got, np.where(cond, a, b))


def test_where_with_scalar_branches(device, rng):
    cond = random_array(rng, (7,), lt.bool_)
    x = random_array(rng, (7,), lt.float32)
    tensor, mask = lt.asarray(x, device=device), lt.asarray(cond, device=device)
    assert_matches(lt.where(mask, tensor, 0.5), np.where(cond, x, np.float32(0.5)))
    assert_matches(lt.where(mask, -1, tensor), np.where(cond, np.float32(-1), x))
    assert_matches(lt.where(mask, 1, 2), np.where(cond, 1, 2))
    assert_matches(lt.where(cond, tensor, 3.0), np.where(cond, x, np.float32(3.0)))


@pytest.mark.parametrize("target", DTYPES, ids=[f"to_{n}" for n in DTYPE_IDS])
@pytest.mark.parametrize("source", DTYPES, ids=[f"from_{n}" for n in DTYPE_IDS])
def test_astype_matches_numpy(source, target, device, rng):
    a = random_array(rng, (3, 21), source)
    if source.is_float:
        a = (a * 50).astype(a.dtype)   # fractions of both signs, all well inside int32
        a[0, :4] = [0.0, -0.0, 0.999, -0.999]
    got = lt.asarray(a, device=device).astype(target)
    assert_matches(got, a.astype(target.name))


def test_astype_accepts_every_dtype_spelling(device):
    x = lt.asarray(np.array([1.7, -1.7, 0.0]), device=device)
    for spelling in (lt.int32, np.int32, np.dtype("int32"), "int32"):
        assert_matches(x.astype(spelling), np.array([1, -1, 0], dtype=np.int32))


@pytest.mark.parametrize("target", ["int32", "float32", "float64", "bool"])
def test_astype_of_large_int64_follows_numpy(target, device):
    # int64 -> int32 wraps around; int64 -> float rounds to nearest; nonzero -> True
    a = np.array([2**40 + 5, -(2**40) - 5, 2**53 + 1, 2**62 + 2**39 + 1, -(2**63), 2**31, 0])
    got = lt.asarray(a, device=device).astype(target)
    with np.errstate(all="ignore"):
        assert_matches(got, a.astype(target))


@pytest.mark.parametrize("target", ["bool", "float32", "float64"])
def test_astype_of_special_floats(target, device):
    a = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, 3.4e38, 1e300, -1e300])
    with np.errstate(all="ignore"):
        want = a.astype(target)
    got = lt.asarray(a, device=device).astype(target).numpy()
    assert_close(got, want)
    if target != "bool":
        assert_same_zero_signs(got, want)


# ---- broadcasting, zero-size and one-element shapes ---------------------------------------------

BROADCAST_SHAPES = [
    ((), ()), ((), (5,)), ((5,), ()), ((1,), (6,)), ((6,), (1,)), ((4, 1), (1, 5)),
    ((4, 5), (5,)), ((5,), (4, 5)), ((3, 1, 5), (4, 1)), ((2, 3, 4, 5), (3, 1, 5)),
    ((1, 1, 1), (2, 3, 4)), ((1, 1), ()), ((2, 1, 3, 1), (1, 4, 1, 5)),
    ((0,), (1,)), ((0,), ()), ((3, 0), (3, 1)), ((2, 0, 4), (4,)), ((0, 1), (1, 0)),
]
BROADCAST_OPS = ["add", "sub", "truediv", "mod", "lt", "eq", "maximum", "pow"]


def _shape_id(shapes):
    return "x".join(str(s).replace(" ", "") for s in shapes)


@pytest.mark.parametrize("dtype", [lt.int32, lt.float32], ids=["int32", "float32"])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=_shape_id)
def test_broadcasting_matches_numpy(shapes, dtype, device, rng):
    for name in BROADCAST_OPS:
        a, b = binary_inputs(rng, name, dtype, *shapes)
        check_binary(name, a, b, device)


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3), (2,)), ((0,), (2,)),
                                    ((4, 1, 3), (2, 3, 1, 2))], ids=_shape_id)
def test_incompatible_shapes_raise_at_the_call(shapes, device):
    x = lt.zeros(shapes[0], device=device)
    y = lt.zeros(shapes[1], device=device)
    for name in ("add", "mul", "lt", "maximum"):
        with pytest.raises(ValueError):
            BINARY[name][0](x, y)
    with pytest.raises(ValueError):
        lt.where(x > 0, x, y)


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                 min_side=0, max_side=4),
       dtype=st.sampled_from(DTYPES),
       name=st.sampled_from(list(BINARY)),
       seed=st.integers(0, 2**16))
def test_binary_random_broadcast_shapes(shapes, dtype, name, seed):
    rng = np.random.default_rng(seed)
    a, b = binary_inputs(rng, name, dtype, *shapes.input_shapes)
    check_binary(name, a, b, "cpu")


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6),
       dtype=st.sampled_from(DTYPES),
       name=st.sampled_from(list(UNARY)),
       seed=st.integers(0, 2**16))
def test_unary_random_shapes(shape, dtype, name, seed):
    a = random_array(np.random.default_rng(seed), shape, dtype)
    lt_op, np_fn = UNARY[name]
    want = numpy_result(np_fn, a)
    x = lt.asarray(a)
    if isinstance(want, type):
        with pytest.raises(want):
            lt_op(x)
    else:
        assert_matches(lt_op(x), want, transcendental=name in TRANSCENDENTAL)


SMALL_SHAPES = [(0,), (2, 0, 3), (0, 0), (), (1,), (1, 1, 1)]


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int64, lt.float32], ids=["bool", "int64", "float32"])
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: str(s).replace(" ", ""))
def test_zero_size_and_one_element_shapes(shape, dtype, device, rng):
    for name in ("add", "mul", "floordiv", "lt", "minimum", "xor"):
        a, b = binary_inputs(rng, name, dtype, shape, shape)
        check_binary(name, a, b, device)
    a = random_array(rng, shape, dtype)
    for name in ("abs", "exp", "invert", "neg"):
        lt_op, np_fn = UNARY[name]
        want = numpy_result(np_fn, a)
        if isinstance(want, type):
            with pytest.raises(want):
                lt_op(lt.asarray(a, device=device))
        else:
            assert_matches(lt_op(lt.asarray(a, device=device)), want, transcendental=True)


def test_zero_d_tensors_not_made_from_numpy(device, rng):
    # 0-d tensors from lt.full and from a full reduction, apart from lt.asarray
    a = random_array(rng, (4, 3), lt.float64)
    total = lt.asarray(a, device=device).sum()
    two = lt.full((), 2.0, dtype=lt.float64, device=device)
    assert total.shape == () and two.shape == ()
    assert_matches(total * two, np.asarray(a.sum() * 2.0))
    assert_matches(lt.maximum(two, total), np.asarray(np.maximum(2.0, a.sum())))
    assert_matches(two - lt.asarray(a, device=device), 2.0 - a)
    assert_matches((two < total).astype(lt.int32), np.asarray(2.0 < a.sum()).astype(np.int32))


def test_one_element_results_convert_to_python(device):
    x = lt.asarray(np.array([[2.5]]), device=device)
    assert (x * 2).item() == 5.0
    assert float(x - 0.5) == 2.0
    assert bool(x > 2) is True
    assert int(lt.asarray(np.int32(7), device=device) // 2) == 3


# ---- strided and negative-stride numpy inputs ---------------------------------------------------

VIEWS = {
    "reversed": lambda a: a[::-1],
    "cols_reversed_step2": lambda a: a[:, ::-2],
    "both_reversed": lambda a: a[::-1, ::-1],
    "transposed": lambda a: a.T,
    "strided": lambda a: a[1::2, ::3],
    "reversed_transposed": lambda a: a[::-1, 2:9].T,
    "zero_stride": lambda a: np.broadcast_to(a[:1], a.shape),
}


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int32, lt.float64], ids=["bool", "int32", "float64"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_non_contiguous_numpy_inputs(view, dtype, device, rng):
    base = random_array(rng, (8, 12), dtype)
    a = VIEWS[view](base)
    assert not a.flags.c_contiguous
    b = random_array(rng, a.shape, dtype)
    x = lt.asarray(a, device=device)
    y = lt.asarray(b, device=device)
    assert_close(x.numpy(), a)
    assert_matches(x + y, np.asarray(a + b))
    assert_matches(y == x, np.asarray(b == a))
    assert_matches(a | y if dtype.is_bool else a - y, np.asarray(a | b if dtype.is_bool else a - b))
    assert_matches(lt.maximum(x, y), np.maximum(a, b))
    if not dtype.is_bool:
        assert_matches(abs(x), np.abs(a))


def test_tensor_from_numpy_is_a_copy(device, rng):
    a = random_array(rng, (6, 5), lt.float64)
    original = a.copy()
    x = lt.asarray(a, device=device)
    y = lt.asarray(a[::-1], device=device)
    total = x + y
    a[...] = 0.0                     # changing the numpy array after the fact changes nothing
    assert_matches(total, original + original[::-1])
    assert_matches(x * 1.0, original)


def test_lazytensor_views_as_operands(device, rng):
    a = random_array(rng, (6, 8), lt.float32)
    x = lt.asarray(a, device=device)
    assert_matches(x[::-1] + x, a[::-1] + a)
    assert_matches(x[:, ::-2] * x[:, 1::2], a[:, ::-2] * a[:, 1::2])
    assert_matches(x.T - x.T[::-1], a.T - a.T[::-1])
    assert_matches(x.flip(1) < x, np.flip(a, 1) < a)
    assert_matches(x[2:5, ::3].exp(), np.exp(a[2:5, ::3]), transcendental=True)


# ---- large tensors and kernel reuse -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [lt.float32, lt.int64], ids=["float32", "int64"])
def test_large_tensors_with_odd_sizes(dtype, device, rng):
    # big enough to be split into parallel chunks, with sizes no vector width divides
    a = random_array(rng, (1025, 1027), dtype)
    b = random_array(rng, (1027,), dtype)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_matches(x * y + x, a * b + a)
    assert_matches(x[::-1, ::2] - y[::2], a[::-1, ::2] - b[::2])
    assert_matches(x.T < y[:1025], a.T < b[:1025])
    assert_matches(lt.where(x > y, x, y), np.where(a > b, a, b))


def test_same_kernel_shape_with_new_data_and_new_constants(device, rng):
    # the compiled kernel is reused by structure: data and constants must still be the new ones
    for _ in range(3):
        a = random_array(rng, (6, 7), lt.float64)
        b = random_array(rng, (6, 7), lt.float64)
        x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
        for c in (2.0, 3.0, -0.5):
            assert_matches(x * c + y, a * c + b)
        for k in (1, 5, -3):
            assert_matches(x.astype(lt.int32) % k, a.astype(np.int32) % k)


# ---- Python scalars and numpy arrays as operands ------------------------------------------------

SCALARS = {"int": 3, "negative_int": -2, "float": 2.5, "bool": True}


def _scalar_case_inputs(rng, name, dtype, scalar, scalar_left):
    a = random_array(rng, (3, 11), dtype)
    if name == "pow" and scalar_left and dtype.kind == "i":
        a = rng.integers(0, 8, size=a.shape).astype(a.dtype)   # exponents numpy accepts
    if name == "pow" and not scalar_left and isinstance(scalar, float):
        a = np.abs(a) + 0.5 if dtype.is_float else a             # a real result mostly
    return a


@pytest.mark.parametrize("side", ["scalar_right", "scalar_left"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", list(BINARY))
def test_python_scalar_operands(name, dtype, side, device, rng):
    for scalar_kind, scalar in SCALARS.items():
        if scalar_kind == "negative_int" and name not in ("sub", "floordiv", "mod", "pow", "lt"):
            continue   # a second int scalar adds little elsewhere; each case compiles a kernel
        a = _scalar_case_inputs(rng, name, dtype, scalar, side == "scalar_left")
        args = (scalar, a) if side == "scalar_left" else (a, scalar)
        if name == "pow" and side == "scalar_right" and scalar == -2 and dtype.is_int:
            with pytest.raises(ValueError):   # numpy: integers to negative integer powers
                BINARY[name][0](lt.asarray(a, device=device), scalar)
            continue
        check_binary(name, *args, device=device)


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int32, lt.float64], ids=["bool", "int32", "float64"])
@pytest.mark.parametrize("name", OPERATOR_OPS)
def test_numpy_array_on_the_left_gives_a_tensor(name, dtype, device, rng):
    a, b = binary_inputs(rng, name, dtype, (4, 7), (4, 7))
    lt_op, np_fn = BINARY[name]
    want = numpy_result(np_fn, a, b)
    y = lt.asarray(b, device=device)
    if isinstance(want, type):
        with pytest.raises(want):
            lt_op(a, y)
        return
    got = lt_op(a, y)      # numpy defers to the tensor's reflected operator
    assert isinstance(got, lt.Tensor), f"np.ndarray {name} Tensor gave {type(got).__name__}"
    assert_matches(got, want, transcendental=name == "pow")


def test_numpy_array_of_another_dtype_on_the_left(device, rng):
    a = random_array(rng, (5,), lt.float64)
    b = random_array(rng, (5,), lt.float32)
    got = a * lt.asarray(b, device=device)
    assert isinstance(got, lt.Tensor)
    assert_matches(got, a * b)               # numpy arrays are not weak: float64 wins
    c = random_array(rng, (5,), lt.int32)
    assert_matches(c + lt.asarray(b, device=device), c + b)


def test_numpy_scalar_and_zero_d_array_operands(device, rng):
    a = random_array(rng, (6,), lt.float32)
    x = lt.asarray(a, device=device)
    assert_matches(x + np.float64(1.5), a + np.float64(1.5))
    assert_matches(np.float32(2.0) * x, np.float32(2.0) * a)
    assert_matches(x - np.array(0.25), a - np.array(0.25))


def test_array_likes_as_right_operand(device):
    x = lt.asarray(np.array([1.0, 2.0, 3.0], dtype=np.float32), device=device)
    got = x + [1, 2, 3]
    assert isinstance(got, lt.Tensor)
    # a list becomes a tensor first, with lazytensor's defaults (ints -> int64)
    assert_matches(got, np.array([2.0, 4.0, 6.0]))


# ---- in-place forms -----------------------------------------------------------------------------

INPLACE = {
    "iadd": (operator.iadd, "add"), "isub": (operator.isub, "sub"), "imul": (operator.imul, "mul"),
    "itruediv": (operator.itruediv, "truediv"), "ifloordiv": (operator.ifloordiv, "floordiv"),
    "imod": (operator.imod, "mod"), "ipow": (operator.ipow, "pow"), "iand": (operator.iand, "and"),
    "ior": (operator.ior, "or"), "ixor": (operator.ixor, "xor"),
}
INPLACE_OPERANDS = ["same_dtype_tensor", "float64_tensor", "int_scalar", "float_scalar"]


def _inplace_operand(kind, rng, name, dtype, shape):
    if kind == "int_scalar":
        return 3
    if kind == "float_scalar":
        return 1.5
    operand_dtype = dtype if kind == "same_dtype_tensor" else lt.float64
    if name == "pow" and operand_dtype.is_int:
        return rng.integers(0, 5, size=shape).astype(operand_dtype.name)
    return random_array(rng, shape, operand_dtype)


@pytest.mark.parametrize("operand", INPLACE_OPERANDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("inplace", list(INPLACE))
def test_inplace_op_matches_numpy(inplace, dtype, operand, device, rng):
    op, name = INPLACE[inplace]
    a = random_array(rng, (3, 10), dtype)
    if name == "pow" and dtype.is_float:
        a = np.abs(a)
    b = _inplace_operand(operand, rng, name, dtype, (3, 10))
    want = a.copy()
    with np.errstate(all="ignore"):
        try:
            want = op(want, b)
            expected_error = None
        except TypeError:      # numpy's UFuncTypeError: e.g. a float result into an int array
            expected_error = TypeError
    x = lt.asarray(a, device=device)
    alias = x
    y = as_operand(b, device)
    if expected_error is not None:
        with pytest.raises(expected_error):
            op(x, y)
        assert alias.dtype == dtype and alias.shape == a.shape   # the tensor is left as it was
        assert_matches(alias, a)
        return
    result = op(x, y)
    assert result is alias, "x op= y must update x itself, like numpy"
    assert_matches(alias, want, transcendental=name == "pow")


def test_inplace_float_into_int_raises_type_error(device):
    x = lt.asarray(np.arange(4, dtype=np.int32), device=device)
    with pytest.raises(TypeError):
        x += 1.5
    with pytest.raises(TypeError):
        x /= 2
    with pytest.raises(TypeError):
        x *= lt.ones(4, dtype=lt.float32, device=device)
    assert_matches(x, np.arange(4, dtype=np.int32))


@pytest.mark.parametrize("shapes", [((3,), (2, 3)), ((1, 3), (2, 3)), ((2, 1), (2, 3)), ((), (1,)),
                                    ((4,), (1, 4))], ids=_shape_id)
def test_inplace_result_that_does_not_fit_raises_value_error(shapes, device):
    x = lt.zeros(shapes[0], device=device)
    y = lt.ones(shapes[1], device=device)
    with pytest.raises(ValueError):
        np.zeros(shapes[0], dtype=np.float32).__iadd__(np.ones(shapes[1], dtype=np.float32))
    with pytest.raises(ValueError):
        x += y
    assert x.shape == shapes[0]


def test_inplace_broadcast_that_fits(device, rng):
    a = random_array(rng, (4, 5), lt.float32)
    b = random_array(rng, (5,), lt.float32)
    x = lt.asarray(a, device=device)
    x -= lt.asarray(b, device=device)
    x *= 2
    want = a - b
    want *= 2
    assert_matches(x, want)


def test_inplace_narrowing_same_kind_follows_numpy(device, rng):
    a = np.array([2**31 - 1, -(2**31), 5], dtype=np.int32)
    b = np.array([1, -1, 2**40], dtype=np.int64)
    x = lt.asarray(a, device=device)
    x += lt.asarray(b, device=device)        # int64 result cast back to int32: wraps like numpy
    want = a.copy()
    want += b
    assert_matches(x, want)
    f = random_array(rng, (6,), lt.float32)
    y = lt.asarray(f, device=device)
    y += lt.asarray(np.full(6, 0.1), device=device)   # float64 result cast back to float32
    g = f.copy()
    g += np.full(6, 0.1)
    assert_matches(y, g)


def test_inplace_does_not_change_earlier_results(device, rng):
    a = random_array(rng, (7,), lt.float64)
    x = lt.asarray(a, device=device)
    doubled = x * 2             # recorded before the update: must see the old x
    x += 1
    x *= x
    assert_matches(doubled, a * 2)
    assert_matches(x, (a + 1) * (a + 1))
    assert_matches(doubled + x, a * 2 + (a + 1) * (a + 1))


# ---- special float values -----------------------------------------------------------------------

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -7.0,
           1e-30, -1e-30, 1e30, -1e30]
SPECIAL_BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "maximum", "minimum",
                  *COMPARISONS]


def _special_grid(np_dtype):
    values = np.array(SPECIAL, dtype=np_dtype)
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.ravel(), b.ravel()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", SPECIAL_BINARY)
def test_special_values_binary(name, dtype, device):
    a, b = _special_grid(np.dtype(dtype.name))
    lt_op, np_fn = BINARY[name]
    if name == "floordiv":   # (the Array API's results where one operand is infinite, not numpy's)
        from test_nonfinite_operands import floor_divide_reference as np_fn
    with np.errstate(all="ignore"):
        want = np.asarray(np_fn(a, b))
    got = lt_op(lt.asarray(a, device=device), lt.asarray(b, device=device))
    assert_matches(got, want)
    if want.dtype.kind == "f":
        # which zero maximum(0.0, -0.0) returns is not specified; every other zero is
        ties = (a == 0) & (b == 0) if name in ("maximum", "minimum") else np.zeros_like(a, bool)
        assert_same_zero_signs(got.numpy(), want, where=~ties)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_special_values_pow(dtype, device):
    a, b = _special_grid(np.dtype(dtype.name))
    with np.errstate(all="ignore"):
        want = np.power(a, b)
    got = lt.asarray(a, device=device) ** lt.asarray(b, device=device)
    assert_matches(got, want, transcendental=True)
    assert_same_zero_signs(got.numpy(), want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", ["neg", "abs", *FLOAT_UNARY])
def test_special_values_unary(name, dtype, device):
    np_dtype = np.dtype(dtype.name)
    values = SPECIAL + [100.0, -100.0, 1000.0, -1000.0, 1e-40, -1e-40, 1e-310]
    if name in ("sin", "cos") and dtype == lt.float32:
        values = [v for v in values if not abs(v) > 1e4 or math.isinf(v)]   # float32: |x| <= 1e4
    with np.errstate(all="ignore"):
        a = np.array(values, dtype=np_dtype)
        lt_op, np_fn = UNARY[name]
        want = np_fn(a)
    got = lt_op(lt.asarray(a, device=device))
    assert_matches(got, want, transcendental=name in TRANSCENDENTAL)
    assert_same_zero_signs(got.numpy(), want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_special_values_through_where(dtype, device):
    np_dtype = np.dtype(dtype.name)
    a = np.array(SPECIAL, dtype=np_dtype)
    x = lt.asarray(a, device=device)
    assert_matches(lt.where(x != x, 0.0, x), np.where(a != a, np_dtype.type(0), a))   # nan -> 0
    assert_matches(lt.where(x > 0, x, -0.0), np.where(a > 0, a, np_dtype.type(-0.0)))
    got = lt.where(x < 1, np.nan, x)
    want = np.where(a < 1, np_dtype.type(np.nan), a)
    assert_matches(got, want)
    assert_same_zero_signs(lt.where(x > 0, x, -0.0).numpy(), np.where(a > 0, a, np_dtype.type(-0.0)))


def test_nan_propagating_maximum_minimum(device):
    a = np.array([np.nan, 1.0, np.nan, -np.inf, np.inf, np.nan])
    b = np.array([1.0, np.nan, np.nan, np.nan, -np.inf, -np.inf])
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_matches(lt.maximum(x, y), np.maximum(a, b))
    assert_matches(lt.minimum(x, y), np.minimum(a, b))
    assert_matches(x.maximum(2.0), np.maximum(a, 2.0))
    assert_matches(lt.minimum(-3.0, y), np.minimum(-3.0, b))


# ---- integer division and modulo by zero, and their extremes ------------------------------------

@pytest.mark.parametrize("dtype", INT_DTYPES, ids=["int32", "int64"])
@pytest.mark.parametrize("name", ["floordiv", "mod"])
def test_integer_division_by_zero_gives_zero_like_numpy(name, dtype, device, rng):
    a = random_array(rng, (40,), dtype)
    a[:3] = [0, 7, -7]
    zeros = np.zeros_like(a)
    mixed = np.where(rng.random(a.shape) < 0.5, 0, random_array(rng, a.shape, dtype)).astype(a.dtype)
    for divisor in (zeros, mixed):
        check_binary(name, a, divisor, device)
    check_binary(name, a, 0, device)               # a Python scalar zero too
    check_binary(name, 5, zeros, device)           # and a scalar divided by zeros
    with np.errstate(all="ignore"):
        got = BINARY[name][0](lt.asarray(a, device=device), lt.asarray(zeros, device=device)).numpy()
    np.testing.assert_array_equal(got, np.zeros_like(a))


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=["int32", "int64"])
def test_integer_true_division_by_zero(dtype, device):
    a = np.array([3, -3, 0, 0], dtype=dtype.name)
    b = np.array([0, 0, 0, 2], dtype=dtype.name)
    check_binary("truediv", a, b, device)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=["int32", "int64"])
@pytest.mark.parametrize("name", ["floordiv", "mod"])
def test_integer_division_of_the_minimum_by_minus_one(name, dtype, device):
    # hardware division traps here; numpy gives the wrapped quotient and remainder 0
    info = np.iinfo(dtype.name)
    a = np.array([info.min, info.min, info.max, -7, 7], dtype=dtype.name)
    b = np.array([-1, 1, -1, -1, -1], dtype=dtype.name)
    check_binary(name, a, b, device)


@pytest.mark.parametrize("dtype", INT_DTYPES + [lt.float64], ids=["int32", "int64", "float64"])
def test_floor_division_and_modulo_signs(dtype, device):
    a = np.array([7, -7, 7, -7, 6, -6, 1, -1, 0], dtype=dtype.name)
    b = np.array([2, 2, -2, -2, 3, 3, -5, 5, -3], dtype=dtype.name)
    check_binary("floordiv", a, b, device)
    check_binary("mod", a, b, device)
    check_binary("floordiv", a, -4, device)
    check_binary("mod", 9, b, device)


# ---- integer powers -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INT_DTYPES, ids=["int32", "int64"])
def test_integer_power_with_nonnegative_exponents(dtype, device, rng):
    np_dtype = np.dtype(dtype.name)
    base = random_array(rng, (64,), dtype)
    exponent = rng.integers(0, 13, size=64).astype(np_dtype)   # large enough to wrap around
    base[:6] = [0, 0, 1, -1, -1, 2]
    exponent[:6] = [0, 3, 1000, 1001, 1000, 62]
    check_binary("pow", base, exponent, device)
    for scalar in (0, 1, 2, 3, 7, 31):
        check_binary("pow", base, scalar, device)
    check_binary("pow", 2, exponent, device)
    check_binary("pow", -3, exponent, device)


def test_integer_pow_by_negative_scalar_raises(device):
    x = lt.asarray(np.array([1, 2, 3], dtype=np.int64), device=device)
    with pytest.raises(ValueError):
        np.array([1, 2, 3]) ** -1
    with pytest.raises(ValueError):
        x ** -1


# ---- long fused chains --------------------------------------------------------------------------

def float_chain(xp, x, y):
    """26 elementwise ops; `xp` is numpy or lazytensor (the same spelling works in both)."""
    z = x * 1.5 + y
    z = z - 0.25 * x
    z = xp.tanh(z) * 3.0
    z = xp.maximum(z, y)
    z = xp.minimum(z, 2.0)
    z = xp.abs(z) + 1.0
    z = xp.sqrt(z)
    z = xp.log(z) / 0.5
    z = xp.exp(-z)
    z = xp.where(x > 0, z, -z)
    z = xp.sin(z) + xp.cos(y)
    z = z * z - y
    return z / (1.0 + xp.abs(x))


def int_chain(xp, x, y):
    """24 integer ops, including division, modulo and bit operations."""
    z = x * 3 + y
    z = z // 2 - x % 5
    z = (z ^ y) | (x & 12)
    z = xp.maximum(z, -y)
    z = xp.minimum(z, 40)
    z = -z + ~x
    z = xp.abs(z) ** 2
    z = xp.where(z % 3 == 0, z, x - y)
    return (z * 7) % 1001 - (z // 3)


@pytest.mark.parametrize("shapes", [((6, 40), (6, 40)), ((6, 1), (1, 40)), ((40,), (5, 1, 40))],
                         ids=_shape_id)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_long_float_chain_matches_numpy(dtype, shapes, device, rng):
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    want = float_chain(np, a, b)
    got = float_chain(lt, lt.asarray(a, device=device), lt.asarray(b, device=device))
    assert_matches(got, want, transcendental=True)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=["int32", "int64"])
def test_long_int_chain_matches_numpy(dtype, device, rng):
    a = random_array(rng, (6, 40), dtype)
    b = random_array(rng, (6, 40), dtype)
    with np.errstate(all="ignore"):
        want = int_chain(np, a, b)
    assert_matches(int_chain(lt, lt.asarray(a, device=device), lt.asarray(b, device=device)), want)


def test_long_chain_across_dtypes(device, rng):
    a = random_array(rng, (5, 33), lt.float32)
    b = random_array(rng, (5, 33), lt.int32)

    def chain(xp, x, y, cast):
        i = cast(x * 10, "int32") + y          # float32 -> int32
        i = (i // 3) * (i % 7) - 2
        f = cast(i, "float64") / 4.0           # int32 -> float64
        f = xp.maximum(f, cast(x, "float64"))
        m = (f > 0) & (y < 5)                  # bool
        g = xp.where(m, f, -1.5) + cast(m, "int64")
        return cast(g * 0.5 + 1, "float32") - x

    want = chain(np, a, b, lambda v, t: v.astype(t))
    got = chain(lt, lt.asarray(a, device=device), lt.asarray(b, device=device),
                lambda v, t: v.astype(t))
    assert_matches(got, want)


CHAIN_STEPS = {
    "add_y": lambda xp, z, x, y: z + y,
    "sub_x": lambda xp, z, x, y: z - x,
    "scale": lambda xp, z, x, y: z * 0.75,
    "tanh": lambda xp, z, x, y: xp.tanh(z),
    "sin": lambda xp, z, x, y: xp.sin(z),
    "max_y": lambda xp, z, x, y: xp.maximum(z, y),
    "min_x": lambda xp, z, x, y: xp.minimum(z, x),
    "abs": lambda xp, z, x, y: xp.abs(z),
    "neg": lambda xp, z, x, y: -z,
    "where": lambda xp, z, x, y: xp.where(z > x, z, y),
    "sqrt1p": lambda xp, z, x, y: xp.sqrt(z * z + 1.0),
    "div": lambda xp, z, x, y: z / (xp.abs(y) + 1.0),
    "mod": lambda xp, z, x, y: z % 1.5,
}


@settings(max_examples=15, deadline=None)
@given(steps=st.lists(st.sampled_from(list(CHAIN_STEPS)), min_size=5, max_size=25),
       seed=st.integers(0, 2**16))
def test_random_fused_chain_matches_numpy(steps, seed):
    rng = np.random.default_rng(seed)
    a = random_array(rng, (3, 17), lt.float64)
    b = random_array(rng, (17,), lt.float64)
    want, z = a, lt.asarray(a)
    x, y = lt.asarray(a), lt.asarray(b)
    for step in steps:
        want = CHAIN_STEPS[step](np, want, a, b)
        z = CHAIN_STEPS[step](lt, z, x, y)
    got = z.numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


# ---- functional forms ---------------------------------------------------------------------------

FUNCTIONAL_BINARY = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "divide": operator.truediv, "floor_divide": operator.floordiv, "mod": operator.mod,
    "remainder": operator.mod, "pow": operator.pow, "power": operator.pow,
    "maximum": lambda a, b: a.maximum(b), "minimum": lambda a, b: a.minimum(b),
    "less": operator.lt, "less_equal": operator.le, "greater": operator.gt,
    "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne,
}
FUNCTIONAL_UNARY = {
    "exp": lambda x: x.exp(), "log": lambda x: x.log(), "sqrt": lambda x: x.sqrt(),
    "sin": lambda x: x.sin(), "cos": lambda x: x.cos(), "tanh": lambda x: x.tanh(),
    "abs": lambda x: x.abs(), "neg": lambda x: -x, "negative": lambda x: x.neg(),
}


@pytest.mark.parametrize("name", list(FUNCTIONAL_BINARY))
def test_functional_binary_equals_method_form(name, device, rng):
    a = np.abs(random_array(rng, (4, 6), lt.float32)) + 0.5
    b = random_array(rng, (4, 6), lt.float32)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    functional = getattr(lt, name)
    method = FUNCTIONAL_BINARY[name]
    np.testing.assert_array_equal(functional(x, y).numpy(), method(x, y).numpy())
    np.testing.assert_array_equal(functional(x, 2.0).numpy(), method(x, 2.0).numpy())
    # numpy arrays and lists are accepted and give a tensor
    from_numpy = functional(a, b)
    assert isinstance(from_numpy, lt.Tensor)
    np.testing.assert_array_equal(from_numpy.numpy(), method(x, y).numpy())


@pytest.mark.parametrize("name", list(FUNCTIONAL_UNARY))
def test_functional_unary_equals_method_form(name, device, rng):
    a = np.abs(random_array(rng, (4, 6), lt.float64)) + 0.1
    x = lt.asarray(a, device=device)
    got = getattr(lt, name)(x)
    np.testing.assert_array_equal(got.numpy(), FUNCTIONAL_UNARY[name](x).numpy())
    from_numpy = getattr(lt, name)(a)   # on the default device: libraries may differ in the last ulp
    assert isinstance(from_numpy, lt.Tensor)
    assert_close(from_numpy.numpy(), got.numpy())


def test_functional_where_and_astype(device, rng):
    a = random_array(rng, (9,), lt.float64)
    x = lt.asarray(a, device=device)
    assert_matches(lt.astype(x, lt.int32), a.astype(np.int32))
    np.testing.assert_array_equal(lt.astype(x, "float32").numpy(), x.astype(lt.float32).numpy())
    assert_matches(lt.where(x > 0, x, 0.0), np.where(a > 0, a, 0.0))
    got = lt.exp([0.0, 1.0])
    assert isinstance(got, lt.Tensor) and got.dtype == lt.float32   # lists: the default float
    assert_matches(got, np.exp(np.array([0.0, 1.0], dtype=np.float32)), transcendental=True)


def test_functional_forms_are_lazy_until_realized(device, rng):
    a = random_array(rng, (5,), lt.float64)
    launched = lt.stats()["kernels_launched"]
    y = lt.add(lt.exp(lt.asarray(a, device=device)), 1.0)
    assert isinstance(y, lt.Tensor)
    assert lt.stats()["kernels_launched"] == launched, "recording an op must not run a kernel"
    assert_close(y.numpy(), np.exp(a) + 1.0)
    assert lt.stats()["kernels_launched"] > launched
    assert math.isclose(float(y[0]), math.exp(a[0]) + 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16"])
@pytest.mark.parametrize("op", ["mod", "floordiv"])
@pytest.mark.parametrize("n, reps", [(2, 2), (4, 2), (2, 4), (3, 3), (8, 2), (40, 2)])
@pytest.mark.parametrize("divisor", [3, 7, 10])
def test_small_integer_division_by_a_constant_then_a_product_read_twice(device, dtype, op, n, reps, divisor):
    """LLVM 22's x86 code generator folds an 8-bit vector division or remainder by a constant of
    2 or 4 lanes, widened by a shuffle and multiplied, to zeros (SLP vectorization builds that
    from `lt.tile((x % 7) * y, 2)`); the cpu renders such kernels without SLP vectorization
    (found by the fuzzer)."""
    rng = np.random.default_rng(n * 31 + divisor)
    x = rng.integers(0, 120, n).astype(dtype)
    y = rng.integers(1, 4, 1).astype(dtype)
    fn = {"mod": np.remainder, "floordiv": np.floor_divide}[op]
    ours = {"mod": lambda a: a % divisor, "floordiv": lambda a: a // divisor}[op]
    got = lt.tile(ours(lt.asarray(x, device=device)) * lt.asarray(y, device=device), (reps,))
    assert_close(got.numpy(), np.tile(fn(x, x.dtype.type(divisor)) * y, (reps,)))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_power_of_one_half_is_numpys_square_root(device, dtype):
    """numpy's x ** 0.5 is sqrt(x): nan at -inf and -0.0 at -0.0, where C's pow gives inf and
    +0.0 (found by the fuzzer)."""
    data = np.array([-np.inf, -0.0, 0.0, 4.0, 2.0, np.inf, np.nan, -1.0], dtype)
    with np.errstate(invalid="ignore"):
        want = data ** 0.5
    got = (lt.asarray(data, device=device) ** 0.5).numpy()
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)   # (a nan's sign is the hardware's: x86 sets it, CUDA does not)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def test_bool_squared_is_int8_as_numpys(device):
    data = np.array([True, False, True])
    got = lt.asarray(data, device=device) ** 2
    assert_close(got.numpy(), data ** 2)
