"""dtype promotion compared with numpy 2: tensor with tensor (every pair of dtypes), tensor with
Python scalars (weak, NEP 50), numpy scalars and arrays (strong), the dtypes lt.asarray picks,
and the TypeError for dtypes lazytensor does not support.

The expected dtype is numpy's: `np.result_type` of the operands, with true division of integers
and bools giving float64, cross-checked against the dtype numpy's own operation returns.
"""
import operator
import zlib

import numpy as np
import pytest

import lazytensor as lt
from conftest import ARITHMETIC, BINARY, COMPARISONS, DTYPES, OTHER_BINARY, assert_close, random_array

DTYPE_IDS = [d.name for d in DTYPES]
PAIRS = [(a, b) for a in DTYPES for b in DTYPES]
PAIR_IDS = [f"{a.name}-{b.name}" for a, b in PAIRS]
SUPPORTED_NP = {np.dtype(d.name) for d in DTYPES}

ALL_BINARY = BINARY

UNSUPPORTED = ["float128"]  # float128: x86 long double


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def numpy_outcome(fn, *args):
    """The dtype numpy's operation returns, or the exception class lazytensor must raise
    (a result in a dtype lazytensor lacks, like bool // bool -> int8, is a TypeError)."""
    with np.errstate(all="ignore"):
        try:
            result = np.asarray(fn(*args))
        except TypeError:
            return TypeError
        except OverflowError:
            return OverflowError
        except ValueError:
            return ValueError
    return result.dtype if result.dtype in SUPPORTED_NP else TypeError


def promoted(name, a_dtype, b_dtype) -> np.dtype:
    """The brief's rule: np.result_type, except true division of integers/bools gives float64,
    and bool // bool, bool % bool, bool ** bool compute in int8."""
    dtype = np.result_type(a_dtype, b_dtype)
    if name == "truediv" and dtype.kind in "biu":
        return np.dtype(np.float64)
    if name in ("floordiv", "mod", "pow") and dtype.kind == "b":
        return np.dtype(np.int8)
    return dtype


def dtype_of(tensor) -> np.dtype:
    assert isinstance(tensor, lt.Tensor)
    return np.dtype(tensor.dtype.name)


def operands_for(name, a_dtype, b_dtype, rng, shape=(3, 7)):
    a = random_array(rng, shape, a_dtype)
    b = random_array(rng, shape, b_dtype)
    if name == "pow" and np.dtype(b_dtype.name).kind == "i":
        b = rng.integers(0, 6, size=shape).astype(b_dtype.name)   # numpy refuses negative powers
    return a, b


# ---- tensor with tensor: every pair of dtypes ---------------------------------------------------

@pytest.mark.parametrize("a_dtype,b_dtype", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("name", list(ARITHMETIC))
def test_arithmetic_result_dtype_of_every_pair(name, a_dtype, b_dtype, device, rng):
    lt_op, np_fn = ARITHMETIC[name]
    a, b = operands_for(name, a_dtype, b_dtype, rng)
    outcome = numpy_outcome(np_fn, a, b)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    if isinstance(outcome, type):
        # bool - bool ...: refused where it was written, as numpy refuses it
        with pytest.raises(outcome):
            lt_op(x, y)
        return
    assert outcome == promoted(name, a.dtype, b.dtype), "the promotion rule disagrees with numpy"
    got = lt_op(x, y)
    assert dtype_of(got) == outcome, f"{a_dtype.name} {name} {b_dtype.name}"
    with np.errstate(all="ignore"):
        want = np.asarray(np_fn(a, b))
    if want.dtype == np.float32 and name == "pow":
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        assert_close(got.numpy(), want)


@pytest.mark.parametrize("a_dtype,b_dtype", PAIRS, ids=PAIR_IDS)
def test_comparison_bitwise_and_extremum_dtypes_of_every_pair(a_dtype, b_dtype, device, rng):
    a, b = operands_for("lt", a_dtype, b_dtype, rng)
    b = np.where(rng.random(b.shape) < 0.3, a.astype(b.dtype), b)   # some equal values across dtypes
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    for name, (lt_op, np_fn) in {**COMPARISONS, **OTHER_BINARY}.items():
        outcome = numpy_outcome(np_fn, a, b)
        if isinstance(outcome, type):
            with pytest.raises(outcome):
                lt_op(x, y)
            continue
        got = lt_op(x, y)
        expected = np.dtype(bool) if name in COMPARISONS else np.result_type(a.dtype, b.dtype)
        assert outcome == expected
        assert dtype_of(got) == expected, f"{a_dtype.name} {name} {b_dtype.name}"
    # values too, where the comparison happens in the promoted dtype
    assert_close((x < y).numpy(), a < b)
    assert_close((x == y).numpy(), a == b)
    assert_close(lt.maximum(x, y).numpy(), np.maximum(a, b))


@pytest.mark.parametrize("a_dtype,b_dtype", PAIRS, ids=PAIR_IDS)
def test_where_promotes_its_branches(a_dtype, b_dtype, device, rng):
    cond = random_array(rng, (9,), lt.bool_)
    a = random_array(rng, (9,), a_dtype)
    b = random_array(rng, (9,), b_dtype)
    got = lt.where(lt.asarray(cond, device=device), lt.asarray(a, device=device),
                   lt.asarray(b, device=device))
    want = np.where(cond, a, b)
    assert dtype_of(got) == want.dtype == np.result_type(a.dtype, b.dtype)
    assert_close(got.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tanh"])
def test_float_function_result_dtype(name, dtype, device):
    x = lt.zeros((2,), dtype=dtype, device=device)
    got = dtype_of(getattr(x, name)())
    with np.errstate(all="ignore"):  # e.g. bool and int8 compute in float16, int16 in float32
        assert got == getattr(np, name)(np.zeros(2, dtype=dtype.name)).dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sign_and_bit_unary_ops_keep_the_dtype(dtype, device):
    a = np.zeros(2, dtype=dtype.name)
    x = lt.asarray(a, device=device)
    assert dtype_of(abs(x)) == np.abs(a).dtype
    for lt_op, np_op in ((operator.neg, np.negative), (operator.invert, np.invert)):
        if numpy_outcome(np_op, a) is TypeError:
            with pytest.raises(TypeError):
                lt_op(x)
        else:
            assert dtype_of(lt_op(x)) == np_op(a).dtype


def check_like_numpy(name, lt_op, np_fn, args_lt, args_np):
    """Where numpy raises, lazytensor raises the same exception type at the call; elsewhere the
    result dtypes agree."""
    outcome = numpy_outcome(np_fn, *args_np)
    if isinstance(outcome, type):
        with pytest.raises(outcome):
            lt_op(*args_lt)
        return
    assert dtype_of(lt_op(*args_lt)) == outcome, f"{args_np[0]!r} {name} {args_np[1]!r}"


# ---- Python scalars are weak (NEP 50) -----------------------------------------------------------

SCALARS = {"true": True, "int": 2, "negative_int": -3, "big_int": 2**31 - 1, "float": 1.5,
           "tiny_float": 1e-3}


@pytest.mark.parametrize("side", ["scalar_right", "scalar_left"])
@pytest.mark.parametrize("scalar", list(SCALARS.values()), ids=list(SCALARS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_python_scalar_is_weak(dtype, scalar, side, device):
    a = np.ones(3, dtype=dtype.name)
    x = lt.asarray(a, device=device)
    for name, (lt_op, np_fn) in ALL_BINARY.items():
        args_np = (scalar, a) if side == "scalar_left" else (a, scalar)
        args_lt = (scalar, x) if side == "scalar_left" else (x, scalar)
        # (an operator against numpy's same operator: numpy's `bool ** 2` is square's int8, np.power's int64)
        check_like_numpy(name, lt_op, lt_op if lt_op is operator.pow else np_fn, args_lt, args_np)


def test_float32_tensor_times_python_float_stays_float32(device, rng):
    a = random_array(rng, (5,), lt.float32)
    got = lt.asarray(a, device=device) * 2.0
    assert got.dtype == lt.float32
    assert_close(got.numpy(), a * 2.0)
    assert (0.1 + lt.asarray(a, device=device)).dtype == lt.float32
    assert (lt.asarray(a, device=device) / 3).dtype == lt.float32


def test_int32_tensor_plus_python_float_is_float64(device, rng):
    a = random_array(rng, (5,), lt.int32)
    got = lt.asarray(a, device=device) + 1.5
    assert got.dtype == lt.float64 and (a + 1.5).dtype == np.float64
    assert_close(got.numpy(), a + 1.5)
    assert (2.5 * lt.asarray(a, device=device)).dtype == lt.float64


def test_int32_tensor_plus_python_int_stays_int32(device, rng):
    a = random_array(rng, (5,), lt.int32)
    x = lt.asarray(a, device=device)
    for value in (7, 2**31 - 1, -(2**31)):
        got = x + value
        assert got.dtype == lt.int32
        with np.errstate(all="ignore"):
            assert_close(got.numpy(), a + value)   # wraps around like numpy


OUT_OF_RANGE = [("int32", 2**40), ("int32", 2**31), ("int32", -(2**31) - 1), ("int64", 2**63),
                ("int64", -(2**63) - 1)]


@pytest.mark.parametrize("dtype_name,value", OUT_OF_RANGE,
                         ids=[f"{d}-{v}" for d, v in OUT_OF_RANGE])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "floordiv", "mod", "maximum"])
def test_out_of_range_python_int_raises_overflow_error(name, dtype_name, value, device):
    a = np.ones(3, dtype=dtype_name)
    x = lt.asarray(a, device=device)
    lt_op, np_fn = ALL_BINARY[name]
    for args_np, args_lt in (((a, value), (x, value)), ((value, a), (value, x))):
        assert numpy_outcome(np_fn, *args_np) is OverflowError
        with pytest.raises(OverflowError):
            lt_op(*args_lt)


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_with_out_of_range_python_int_follows_numpy(name, device):
    # numpy 2 answers these (every int32 is below 2**40) instead of raising
    a = np.array([-5, 0, 7], dtype=np.int32)
    lt_op, np_fn = COMPARISONS[name]
    for value in (2**40, -(2**40)):
        want = np_fn(a, value)
        got = lt_op(lt.asarray(a, device=device), value)
        assert_close(got.numpy(), want)


def test_python_scalars_on_bool_tensors(device):
    a = np.array([True, False, True])
    x = lt.asarray(a, device=device)
    assert_close((x + 1).numpy(), a + 1)          # int64: numpy's default int
    assert_close((x * 1.5).numpy(), a * 1.5)      # float64
    assert_close((x + True).numpy(), a + True)    # stays bool (logical or)
    assert_close((x & False).numpy(), a & False)


def test_python_scalars_mixed_with_each_other(device):
    # two weak operands give numpy's defaults, exactly as np.where does
    cond = np.array([True, False])
    assert dtype_of(lt.where(lt.asarray(cond, device=device), 1, 2.5)) == np.where(cond, 1, 2.5).dtype
    assert dtype_of(lt.where(lt.asarray(cond, device=device), 1, 2)) == np.where(cond, 1, 2).dtype


def test_complex_python_scalar_is_weak(device):
    x = lt.ones(3, device=device)
    assert (x + 1j).dtype == lt.complex64 and (1j * x.astype(lt.float64)).dtype == lt.complex128
    np.testing.assert_array_equal((x + 1j).numpy(), np.ones(3, np.float32) + 1j)


# ---- numpy scalars and arrays are strong --------------------------------------------------------

STRONG = {
    "np.float64": np.float64(2.0), "np.float32": np.float32(2.0), "np.int64": np.int64(2),
    "np.int32": np.int32(2), "np.bool": np.bool_(True), "0-d float64 array": np.array(2.0),
    "0-d int32 array": np.array(2, dtype=np.int32),
}


@pytest.mark.parametrize("other", list(STRONG.values()), ids=list(STRONG))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_numpy_scalars_and_zero_d_arrays_are_strong(dtype, other, device):
    a = np.ones(3, dtype=dtype.name)
    x = lt.asarray(a, device=device)
    for name in ("add", "mul", "truediv", "maximum", "lt"):
        lt_op, np_fn = ALL_BINARY[name]
        for args_np, args_lt in (((a, other), (x, other)), ((other, a), (other, x))):
            check_like_numpy(name, lt_op, np_fn, args_lt, args_np)


def test_float32_tensor_with_float64_numpy_array_is_float64(device, rng):
    a = random_array(rng, (4,), lt.float32)
    b = random_array(rng, (4,), lt.float64)
    got = lt.asarray(a, device=device) + b
    assert got.dtype == lt.float64
    assert_close(got.numpy(), a + b)
    got = b - lt.asarray(a, device=device)
    assert got.dtype == lt.float64
    assert_close(got.numpy(), b - a)


# ---- the dtypes lt.asarray picks ----------------------------------------------------------------

PYTHON_FLOATS = {"float": 1.5, "list_of_floats": [1.5, -2.0], "nested": [[0.5], [2.0]],
                 "mixed_int_float": [1, 2.5], "list_with_bool_and_float": [True, 0.5]}
PYTHON_INTS = {"int": 7, "list_of_ints": [1, -2, 3], "nested": [[1, 2], [3, 4]],
               "mixed_bool_int": [True, 2], "big_int": [2**40, -(2**40)]}


@pytest.mark.parametrize("obj", list(PYTHON_FLOATS.values()), ids=list(PYTHON_FLOATS))
def test_asarray_of_python_floats_is_float32(obj, device):
    # a deliberate difference from numpy (which gives float64): float32 is the default float
    x = lt.asarray(obj, device=device)
    assert x.dtype == lt.float32
    assert_close(x.numpy(), np.asarray(obj).astype(np.float32))


@pytest.mark.parametrize("obj", list(PYTHON_INTS.values()), ids=list(PYTHON_INTS))
def test_asarray_of_python_ints_is_int64(obj, device):
    x = lt.asarray(obj, device=device)
    assert x.dtype == lt.int64
    assert_close(x.numpy(), np.asarray(obj).astype(np.int64))


@pytest.mark.parametrize("obj", [True, [True, False], [[False], [True]]], ids=["bool", "list", "nested"])
def test_asarray_of_python_bools_is_bool(obj, device):
    x = lt.asarray(obj, device=device)
    assert x.dtype == lt.bool_
    assert_close(x.numpy(), np.asarray(obj))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_asarray_keeps_a_numpy_arrays_dtype(dtype, device, rng):
    a = random_array(rng, (3, 4), dtype)
    x = lt.asarray(a, device=device)
    assert dtype_of(x) == a.dtype
    assert x.dtype == a.dtype            # a DType compares equal to the numpy dtype
    assert_close(x.numpy(), a)


@pytest.mark.parametrize("value", [np.float64(1.25), np.float32(1.25), np.int32(-3), np.int64(5),
                                   np.bool_(True)],
                         ids=["float64", "float32", "int32", "int64", "bool"])
def test_asarray_keeps_a_numpy_scalars_dtype(value, device):
    x = lt.asarray(value, device=device)
    assert dtype_of(x) == np.asarray(value).dtype
    assert x.shape == np.asarray(value).shape == ()
    assert x.item() == value.item()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_asarray_with_explicit_dtype(dtype, device):
    data = [[0, 1, 2], [3, -4 if not dtype.is_unsigned else 4, 5]]
    for spelling in (dtype, np.dtype(dtype.name), dtype.name):
        x = lt.asarray(data, dtype=spelling, device=device)
        assert x.dtype == dtype
        assert_close(x.numpy(), np.asarray(data, dtype=dtype.name))
    y = lt.asarray(np.asarray(data, dtype=np.float64), dtype=dtype, device=device)
    assert_close(y.numpy(), np.asarray(data, dtype=np.float64).astype(dtype.name))


def test_functional_form_of_python_scalars_uses_asarray_defaults(device):
    # lt.add(1, 2.5): the first operand becomes a tensor (int64), the second stays weak
    got = lt.add(1, 2.5)
    assert got.dtype == np.result_type(np.int64, 2.5)
    assert got.item() == 3.5


# ---- unsupported dtypes -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype_name", UNSUPPORTED)
def test_unsupported_dtype_raises_type_error_naming_it(dtype_name, device):
    a = np.zeros(3, dtype=dtype_name)
    x = lt.zeros(3, device=device)
    attempts = {
        "asarray": lambda: lt.asarray(a, device=device),
        "asarray_dtype": lambda: lt.asarray([1, 2], dtype=dtype_name, device=device),
        "asarray_np_dtype": lambda: lt.asarray([1, 2], dtype=np.dtype(dtype_name), device=device),
        "astype": lambda: x.astype(dtype_name),
        "zeros": lambda: lt.zeros(3, dtype=np.dtype(dtype_name), device=device),
        "tensor_plus_array": lambda: x + a,
        "array_plus_tensor": lambda: a + x,
    }
    for what, attempt in attempts.items():
        with pytest.raises(TypeError) as info:
            attempt()
        assert dtype_name in str(info.value), f"{what}: the message does not name {dtype_name}"


def test_unsupported_numpy_scalar_raises_type_error(device):
    with pytest.raises(TypeError, match="float128"):
        lt.asarray(np.longdouble(1), device=device)


_FLOAT_BINARY = {"hypot": (lt.hypot, np.hypot), "atan2": (lt.atan2, np.arctan2),
                 "copysign": (lt.copysign, np.copysign), "logaddexp": (lt.logaddexp, np.logaddexp),
                 "truediv": (operator.truediv, np.true_divide)}
_WHOLE = [d for d in DTYPES if not d.is_float]


@pytest.mark.parametrize("name", sorted(_FLOAT_BINARY))
@pytest.mark.parametrize("a_dtype", _WHOLE, ids=lambda d: d.name)
@pytest.mark.parametrize("b_dtype", _WHOLE, ids=lambda d: d.name)
def test_float_functions_of_mixed_integer_kinds_pick_numpys_loop(name, a_dtype, b_dtype, device, rng):
    """numpy picks a float loop from the operands' own dtypes: hypot(uint8, int8) is float16,
    though uint8 and int8 promote to int16, whose loop is float32's (found by the fuzzer)."""
    ours, theirs = _FLOAT_BINARY[name]
    a, b = random_array(rng, (5,), a_dtype), random_array(rng, (5,), b_dtype)
    with np.errstate(all="ignore"):
        want = theirs(a, b)
    got = ours(lt.asarray(a, device=device), lt.asarray(b, device=device))
    assert_close(got.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("other", [[0.001, 1 / 3, 2.5], [1, -2, 3], [True, False, True], (7, 8, 9)],
                         ids=["floats", "ints", "bools", "tuple"])
def test_a_python_list_operand_follows_numpy(dtype, other, device, rng):
    """A list in a binary op is converted as numpy converts it (floats: float64), then promoted:
    x64 + [0.001] is exact (the list once became a float32 tensor first)."""
    x = random_array(rng, (3,), dtype)
    if x.dtype == np.bool_ and isinstance(other[0], bool):
        x = x.astype(np.int8)
    with np.errstate(all="ignore"):
        want = x + np.asarray(other)
    assert_close((lt.asarray(x, device=device) + other).numpy(), want)
    assert_close((other + lt.asarray(x, device=device)).numpy(), np.asarray(other) + x)


@pytest.mark.parametrize("name", sorted(COMPARISONS))
@pytest.mark.parametrize("signed", ["int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("swap", [False, True])
def test_uint64_against_signed_integers_compares_exactly(name, signed, swap, device):
    """numpy 2 compares uint64 with a signed integer exactly; through their float64 promotion
    2**63 + 1 == 2**63 - 1 (found by the fuzzer)."""
    ours, theirs = COMPARISONS[name]
    info = np.iinfo(signed)
    u = np.array([2**63 + 1, 0, 5, 2**64 - 1, 2**63 - 1, 2**63, 1], np.uint64)
    s = np.array([info.max, -1, 5, info.min, info.max, 0, -(2**7)], signed)
    a, b = (s, u) if swap else (u, s)
    want = theirs(a, b)
    got = ours(lt.asarray(a, device=device), lt.asarray(b, device=device))
    assert_close(got.numpy(), want)
    # broadcast against a column
    want = theirs(a[:, None], b[None, :])
    got = ours(lt.asarray(a[:, None], device=device), lt.asarray(b[None, :], device=device))
    assert_close(got.numpy(), want)
