"""Bad input raises at the call that recorded the op (nothing is realized), with a message that
names the shapes / dtypes / devices involved, and with numpy's exception types."""
import contextlib
import re

import numpy as np
import pytest

import lazytensor as lt

AxisError = np.exceptions.AxisError


@contextlib.contextmanager
def raises_at_call(exception, *fragments):
    """The block raises `exception` whose message contains every fragment, and no kernel ran
    (the error came from recording the op, not from realizing it)."""
    launched = lt.stats()["kernels_launched"]
    with pytest.raises(exception) as info:
        yield info
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in the message {message!r}"
    assert lt.stats()["kernels_launched"] == launched, "the error was raised only after realizing"


def pending(shape, dtype=lt.float32, device="cpu"):
    """An unrealized expression of `shape`: errors must not need its values."""
    return lt.ones(shape, dtype=dtype, device=device) * 2 + lt.zeros(shape, dtype=dtype, device=device)


# ---- broadcasting ---------------------------------------------------------------------------------

BROADCAST_MISMATCHES = [((2, 3), (4,)), ((2, 3), (3, 2)), ((5, 1, 4), (2, 3)), ((0,), (2,)), ((3,), (4, 2))]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "lt", "eq", "maximum", "where"])
@pytest.mark.parametrize("a_shape, b_shape", BROADCAST_MISMATCHES, ids=str)
def test_broadcast_mismatch(device, a_shape, b_shape, op):
    with pytest.raises(ValueError):
        np.broadcast_shapes(a_shape, b_shape)
    x, y = pending(a_shape, device=device), pending(b_shape, device=device)
    call = {
        "add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "truediv": lambda: x / y,
        "lt": lambda: x < y, "eq": lambda: x == y, "maximum": lambda: lt.maximum(x, y),
        "where": lambda: lt.where(x > 0, x, y),
    }[op]
    with raises_at_call(ValueError, str(a_shape), str(b_shape)):
        call()


def test_broadcast_mismatch_with_numpy_operand(device):
    x = pending((2, 3), device=device)
    with raises_at_call(ValueError, "(2, 3)", "(4,)"):
        x + np.ones(4, np.float32)


def test_inplace_broadcast_to_a_bigger_shape(device):
    x = pending((3,), device=device)
    with raises_at_call(ValueError, "(3,)", "(2, 3)"):
        x += pending((2, 3), device=device)


@pytest.mark.parametrize("src, dst", [((2, 3), (3, 3)), ((3,), (3, 2)), ((2, 3), (3,)), ((2,), (0,))], ids=str)
def test_broadcast_to_mismatch(device, src, dst):
    with pytest.raises(ValueError):
        np.broadcast_to(np.ones(src), dst)
    with raises_at_call(ValueError, str(src), str(dst)):
        pending(src, device=device).broadcast_to(dst)


# ---- matmul ---------------------------------------------------------------------------------------

MATMUL_MISMATCHES = [((2, 3), (4, 5)), ((3,), (4,)), ((3,), (4, 5)), ((2, 3), (4,)), ((2, 3, 4), (3, 4, 5)),
                     ((5, 2, 3), (4, 3, 2)), ((), (3,)), ((3, 3), ())]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_MISMATCHES, ids=str)
def test_matmul_mismatch(device, a_shape, b_shape):
    with pytest.raises(ValueError):
        np.matmul(np.ones(a_shape), np.ones(b_shape))
    x, y = pending(a_shape, device=device), pending(b_shape, device=device)
    with raises_at_call(ValueError, str(a_shape), str(b_shape)):
        x @ y
    with raises_at_call(ValueError, str(a_shape), str(b_shape)):
        lt.matmul(x, y)


# ---- axes -----------------------------------------------------------------------------------------

AXIS_CALLS = {
    "sum": lambda x, axis: x.sum(axis=axis),
    "lt.sum": lambda x, axis: lt.sum(x, axis=axis),
    "mean": lambda x, axis: x.mean(axis=axis),
    "max": lambda x, axis: x.max(axis=axis),
    "min": lambda x, axis: x.min(axis=axis),
    "prod": lambda x, axis: x.prod(axis=axis),
    "argmax": lambda x, axis: x.argmax(axis=axis),
    "argmin": lambda x, axis: x.argmin(axis=axis),
    "flip": lambda x, axis: x.flip(axis),
    "squeeze": lambda x, axis: x.squeeze(axis),
    "unsqueeze": lambda x, axis: x.unsqueeze(axis + (1 if axis >= 0 else -1)),
    "expand_dims": lambda x, axis: lt.expand_dims(x, axis + (1 if axis >= 0 else -1)),
    "concatenate": lambda x, axis: lt.concatenate([x, x], axis=axis),
    "stack": lambda x, axis: lt.stack([x, x], axis=axis + (1 if axis >= 0 else -1)),
}


@pytest.mark.parametrize("axis", [2, -3, 7], ids=lambda a: f"axis={a}")
@pytest.mark.parametrize("call", list(AXIS_CALLS))
def test_bad_axis(device, call, axis):
    x = pending((1, 1), device=device)
    with raises_at_call(AxisError, str(axis if call not in ("unsqueeze", "expand_dims", "stack")
                                       else axis + (1 if axis >= 0 else -1))) as info:
        AXIS_CALLS[call](x, axis)
    # numpy's AxisError is both: code catching either keeps working
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("call", ["sum", "mean", "max", "min", "prod", "flip"])
def test_bad_axis_inside_a_tuple(device, call):
    x = pending((2, 3), device=device)
    with raises_at_call(AxisError, "2"):
        AXIS_CALLS[call](x, (0, 2))


@pytest.mark.parametrize("call", ["sum", "max", "prod", "flip"])
def test_repeated_axis(device, call):
    with pytest.raises(ValueError):
        np.sum(np.ones((2, 3)), axis=(1, -1))
    with raises_at_call(ValueError):
        AXIS_CALLS[call](pending((2, 3), device=device), (1, -1))


@pytest.mark.parametrize("call", ["argmax", "argmin"])
def test_arg_reduction_takes_one_axis(device, call):
    with pytest.raises(TypeError):
        getattr(np, call)(np.ones((2, 3)), axis=(0, 1))
    with raises_at_call(TypeError):
        AXIS_CALLS[call](pending((2, 3), device=device), (0, 1))


@pytest.mark.parametrize("axis", [1.0, "0", True], ids=repr)
def test_axis_of_wrong_type(device, axis):
    with raises_at_call(TypeError):
        pending((2, 3), device=device).sum(axis=axis)


def test_squeeze_axis_that_is_not_one(device):
    with raises_at_call(ValueError, "(2, 3)"):
        pending((2, 3), device=device).squeeze(1)


def test_permute_not_a_permutation(device):
    for axes in [(0, 0), (0,), (0, 1, 2), (0, 5)]:
        with raises_at_call(ValueError, "(2, 3)"):
            pending((2, 3), device=device).permute(axes)


# ---- reshape --------------------------------------------------------------------------------------

@pytest.mark.parametrize("src, dst", [((2, 3), (4, 2)), ((2, 3), (7,)), ((2, 3), (5, -1)), ((2, 3), (-1, -1)),
                                      ((2, 3), (-2, -3)), ((0, 3), (0, -1)), ((6,), ()), ((), (2,))], ids=str)
def test_reshape_to_wrong_size(device, src, dst):
    with pytest.raises(ValueError):
        np.ones(src).reshape(dst)
    with raises_at_call(ValueError, str(dst)):
        pending(src, device=device).reshape(dst)


def test_reshape_message_names_the_size(device):
    with raises_at_call(ValueError, "6", "(4, 2)"):
        pending((2, 3), device=device).reshape(4, 2)


def test_reshape_shape_of_wrong_type(device):
    with raises_at_call(TypeError):
        pending((2, 3), device=device).reshape(2.0, 3)


# ---- indexing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("index", [np.s_[3], np.s_[-4], np.s_[0, 5], np.s_[:, -6], np.s_[..., 5], np.s_[None, 3]],
                         ids=repr)
def test_static_index_out_of_range(device, index):
    with pytest.raises(IndexError):
        np.ones((3, 5))[index]
    with raises_at_call(IndexError, "out of bounds"):
        pending((3, 5), device=device)[index]


@pytest.mark.parametrize("index", [np.s_[0, 0, 0], np.s_[0, ..., 0, 0], np.s_[:, :, :], np.s_[None, 0, 0, 0]],
                         ids=repr)
def test_too_many_indices(device, index):
    with pytest.raises(IndexError):
        np.ones((3, 5))[index]
    with raises_at_call(IndexError, "too many indices"):
        pending((3, 5), device=device)[index]


def test_index_into_0d(device):
    with raises_at_call(IndexError):
        pending((), device=device)[0]


ADVANCED_INDEX_ERRORS = {   # numpy's IndexError for each, raised where the index is written
    "arrays-do-not-broadcast": (lambda x: (np.array([0, 1]), np.array([1, 0, 2])), "could not be broadcast"),
    "array-and-mask-do-not-broadcast": (lambda x: (np.array([0, 1]), np.ones(5, bool)), "could not be broadcast"),
    "host-array-out-of-range": (lambda x: (np.array([0, 1]), np.array([1, 5])), "index 5 is out of bounds"),
    "list-negative-out-of-range": (lambda x: [0, -4], "index -4 is out of bounds"),
    "float-array": (lambda x: (0, np.array([0.5])), "integers (or booleans)"),
}


@pytest.mark.parametrize("kind", list(ADVANCED_INDEX_ERRORS))
def test_advanced_index_errors_raise_at_the_call(device, kind):
    index, fragment = ADVANCED_INDEX_ERRORS[kind]
    with pytest.raises(IndexError):
        np.ones((3, 5))[index(None)]
    x = pending((3, 5), device=device)
    with raises_at_call(IndexError, fragment):
        x[index(x)]
    with raises_at_call(IndexError, fragment):
        x[index(x)] = 1


def test_float_and_mismatched_array_indices(device):
    x = pending((3, 5), device=device)
    with raises_at_call(IndexError, "integers"):
        x[lt.asarray([0.5, 1.5])]
    with pytest.raises(IndexError, match=r"\(2,\)"):
        x[np.ones(2, bool)]  # a mask must cover the axes it indexes


@pytest.mark.parametrize("index", [1.5, "a", np.s_[1.0:], np.s_[..., ...]], ids=repr)
def test_invalid_index_types(device, index):
    with pytest.raises((IndexError, TypeError)):
        np.ones((3, 5))[index]
    with raises_at_call((IndexError, TypeError)):
        pending((3, 5), device=device)[index]


# ---- dtypes ---------------------------------------------------------------------------------------

UNSUPPORTED = [np.longdouble]


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=lambda d: np.dtype(d).name)
def test_unsupported_dtype(device, dtype):
    name = np.dtype(dtype).name
    with raises_at_call(TypeError, name):
        lt.asarray(np.zeros(3, dtype), device=device)
    with raises_at_call(TypeError, name):
        lt.asarray([1, 2], dtype=dtype, device=device)
    with raises_at_call(TypeError, name):
        lt.zeros((2,), dtype=dtype, device=device)
    with raises_at_call(TypeError, name):
        lt.full((2,), 1, dtype=dtype, device=device)
    with raises_at_call(TypeError, name):
        pending((2,), device=device).astype(dtype)
    with raises_at_call(TypeError, name):
        lt.zeros_like(pending((2,), device=device), dtype=dtype)
    with raises_at_call(TypeError, name):
        lt.arange(3, dtype=dtype, device=device)


@pytest.mark.parametrize("data", [["a", "b"], [object(), 1], np.array(["x"])],
                         ids=["strings", "objects", "unicode-array"])
def test_unconvertible_data(device, data):
    with raises_at_call(TypeError):
        lt.asarray(data, device=device)


def test_unknown_dtype_name(device):
    with raises_at_call(TypeError, "not_a_dtype"):
        lt.zeros(2, dtype="not_a_dtype", device=device)


def test_complex_operand_of_an_ordering_op(device):
    with raises_at_call(TypeError, "complex"):
        pending((2,), device=device) < 1j
    with raises_at_call(TypeError, "complex"):
        lt.floor(pending((2,), device=device) + 1j)


@pytest.mark.parametrize("op", ["and", "or", "xor", "invert"])
def test_bitwise_ops_on_floats(device, op):
    x = pending((2,), device=device)
    with raises_at_call(TypeError, "float32"):
        {"and": lambda: x & x, "or": lambda: x | x, "xor": lambda: x ^ 1, "invert": lambda: ~x}[op]()


def test_negative_of_bool(device):
    with raises_at_call(TypeError, "bool"):
        -(pending((2,), device=device) > 0)


def test_inplace_unsafe_cast(device):
    x = pending((3,), dtype=lt.int32, device=device)
    with raises_at_call(TypeError, "float64", "int32"):
        x += 1.5


def test_python_int_out_of_range(device):
    with raises_at_call(OverflowError, "int32"):
        pending((2,), dtype=lt.int32, device=device) + 2**40


def test_integer_to_negative_power(device):
    with raises_at_call(ValueError, "negative"):
        pending((2,), dtype=lt.int64, device=device) ** -1


# ---- devices --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpu", "cuda:7", "tpu", "cpu:1", ""], ids=repr)
def test_bad_device_name(name):
    calls = [
        lambda: lt.asarray([1.0], device=name),
        lambda: lt.zeros(2, device=name),
        lambda: lt.ones(2, device=name),
        lambda: lt.full(2, 1.0, device=name),
        lambda: lt.empty(2, device=name),
        lambda: lt.arange(3, device=name),
        lambda: lt.rand(2, device=name),
        lambda: lt.randn(2, device=name),
    ]
    for call in calls:
        with raises_at_call(ValueError, repr(name)) as info:
            call()
        for available in lt.devices():
            assert available in str(info.value), f"{available!r} not listed in {str(info.value)!r}"


# ---- creation -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(-1,), (2, -3), -1, (0, -1)], ids=str)
def test_negative_dims_in_creation(device, shape):
    with pytest.raises(ValueError):
        np.zeros(shape)
    dims = re.escape(str(shape if isinstance(shape, tuple) else (shape,)))
    for create in (lt.zeros, lt.ones, lt.empty, lambda s, device: lt.full(s, 3, device=device)):
        with raises_at_call(ValueError, "negative") as info:
            create(shape, device=device)
        assert re.search(dims, str(info.value))
    for create in (lt.rand, lt.randn):
        with raises_at_call(ValueError, "negative"):
            create(*(shape if isinstance(shape, tuple) else (shape,)), device=device)


def test_arange_zero_step(device):
    with raises_at_call(ValueError, "step"):
        lt.arange(0, 5, 0, device=device)


def test_shape_of_wrong_type(device):
    with raises_at_call(TypeError):
        lt.zeros((2.5, 3), device=device)
    with raises_at_call(TypeError):
        lt.ones("3", device=device)


# ---- other movement errors ------------------------------------------------------------------------

def test_concatenate_mismatched_shapes(device):
    with raises_at_call(ValueError, "(2, 3)", "(3, 2)"):
        lt.concatenate([pending((2, 3), device=device), pending((3, 2), device=device)], axis=0)
    with raises_at_call(ValueError):
        lt.concatenate([pending((2, 3), device=device), pending((2,), device=device)])
    with raises_at_call(ValueError):
        lt.concatenate([])
    with raises_at_call(ValueError):
        lt.concatenate([pending((), device=device), pending((), device=device)])


def test_stack_mismatched_shapes(device):
    with raises_at_call(ValueError, "(2, 3)", "(3, 2)"):
        lt.stack([pending((2, 3), device=device), pending((3, 2), device=device)])
    with raises_at_call(ValueError):
        lt.stack([])


@pytest.mark.parametrize("pad_width", [-1, (1, -2), ((1, 1), (0, 1), (1, 1)), ((1, 2, 3),)], ids=repr)
def test_bad_pad_width(device, pad_width):
    with pytest.raises(ValueError):
        np.pad(np.ones((2, 3)), pad_width)
    with raises_at_call(ValueError, "(2, 3)"):
        pending((2, 3), device=device).pad(pad_width)


# ---- conversions ----------------------------------------------------------------------------------

def test_item_of_many_elements(device):
    with raises_at_call(ValueError, "(2, 3)"):
        pending((2, 3), device=device).item()


def test_truth_value_of_many_elements(device):
    with raises_at_call(ValueError, "ambiguous"):
        bool(pending((2,), device=device))


def test_float_tensor_as_index(device):
    with raises_at_call(TypeError):
        [1, 2, 3][lt.ones((1,), device=device)]
