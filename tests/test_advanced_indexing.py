"""numpy's advanced indexing (issue 18 §3): several integer arrays broadcast together, mixed with
slices, None, `...`, integers and boolean masks, for reads, writes and `+=`; `lt.index_add`
(unbuffered) against np.add.at; gradients of gathers and scatter-adds. All against numpy."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazytensor as lt
from conftest import DEVICES, DTYPES, assert_close, device_params, random_array
from lazytensor.ir.graph import toposort
from lazytensor.ir.ops import Op


def numpy_outcome(fn):
    """(result, None) or (None, exception type) of numpy's side."""
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 (the type is what is compared)
        return None, type(error)


def kernels_for(t) -> int:
    before = lt.stats()["kernels_launched"]
    t.realize()
    return lt.stats()["kernels_launched"] - before


# ---- index expressions --------------------------------------------------------------------------
# An index is a tuple of items; each array item is kept as numpy data with a tag saying how it is
# given to lazytensor: a numpy array, a Python list, or a lazy tensor (whose out-of-range values
# clamp instead of raising, so tensors are only drawn in range).

class Item:
    def __init__(self, values: np.ndarray, form: str):
        self.values, self.form = values, form

    def for_numpy(self):
        return self.values.tolist() if self.form == "list" else self.values

    def for_lt(self, device):
        if self.form == "tensor":
            return lt.asarray(self.values, device=device)
        return self.values.tolist() if self.form == "list" else self.values

    def __repr__(self):
        return f"{self.form}({self.values.tolist()!r}, {self.values.dtype})"


def as_numpy(index: tuple) -> tuple:
    return tuple(item.for_numpy() if isinstance(item, Item) else item for item in index)


def as_lt(index: tuple, device: str) -> tuple:
    return tuple(item.for_lt(device) if isinstance(item, Item) else item for item in index)


@st.composite
def index_expressions(draw, shape: tuple, allow_errors: bool = True, tensors: bool = True):
    """A random numpy index for an array of `shape`: ints, slices, None, at most one Ellipsis,
    integer arrays whose shapes broadcast to one drawn shape (or, rarely, do not), boolean masks
    (n-d, 0-d, Python bools), list and tensor forms; negative and (rarely) out-of-range values."""
    ndim = len(shape)
    broadcast = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    items, axis = [], 0
    ellipsis_used = False
    forms = ["numpy", "list"] + (["tensor"] if tensors else [])
    while True:
        # after an Ellipsis the items must index the last axes, all of them: no stopping before
        must_fill = ellipsis_used and axis < ndim
        if len(items) >= ndim + 2 and not must_fill:
            break
        kinds = ([] if must_fill else ["stop", "none", "bool0"]) + ["array", "array"]
        kinds += ["ellipsis"] if not ellipsis_used else []
        if axis < ndim:
            kinds += ["int", "slice", "array", "array", "array", "mask"]
        kind = draw(st.sampled_from(kinds))
        if kind == "stop":
            break
        if kind == "none":
            items.append(None)
        elif kind == "ellipsis":
            items.append(Ellipsis)
            ellipsis_used = True
            # an Ellipsis covers what is left: later items index the trailing axes
            axis = max(axis, ndim - draw(st.integers(0, max(ndim - axis, 0))))
        elif kind == "int":
            n = shape[axis]
            if n == 0:
                items.append(slice(None))
            else:
                items.append(draw(st.integers(-n, n - 1)))
            axis += 1
        elif kind == "slice":
            n = shape[axis]
            ends = st.one_of(st.none(), st.integers(-n - 1, n + 1))
            items.append(slice(draw(ends), draw(ends), draw(st.sampled_from([None, 1, 2, -1, -2, 3]))))
            axis += 1
        elif kind == "array":
            if axis >= ndim:
                if not ellipsis_used and draw(st.booleans()):
                    break   # (too many indices: numpy's IndexError)
                continue
            n = shape[axis]
            dims = len(broadcast) - draw(st.integers(0, len(broadcast)))
            own = [1 if draw(st.integers(0, 3)) == 0 else m for m in broadcast[len(broadcast) - dims:]]
            if allow_errors and draw(st.integers(0, 30)) == 0:
                own = own + [4]   # (rarely: a shape that does not broadcast)
            form = draw(st.sampled_from(forms))
            dtype = draw(st.sampled_from(["int64", "int32", "int8", "uint8", "int16", "uint64"]))
            low, high = (-n, n - 1) if dtype[0] == "i" else (0, n - 1)
            if allow_errors and form != "tensor" and draw(st.integers(0, 30)) == 0:
                high += 2   # (rarely: out of range, numpy's IndexError)
            size = math.prod(own)
            if high < low:   # an empty axis: only an empty index fits (or an error)
                values = np.zeros(own, dtype) if size == 0 or not allow_errors else np.full(own, 0, dtype)
            else:
                values = np.array(draw(st.lists(st.integers(max(low, -128), min(high, 127)), min_size=size,
                                                max_size=size)), dtype=dtype).reshape(own)
            if form == "list" and values.size == 0:
                form = "numpy"   # ([] and [[]] read as int64, fine, but a (0, 2) list reads as (0,))
            items.append(Item(values, form))
            axis += 1
        elif kind == "mask":
            covers = draw(st.integers(1, min(2, ndim - axis)))
            covered = shape[axis:axis + covers]
            size = math.prod(covered)
            values = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool).reshape(covered)
            form = draw(st.sampled_from(forms if values.ndim == 1 or "list" not in forms else forms))
            items.append(Item(values, form if values.size else "numpy"))
            axis += covers
        elif kind == "bool0":
            value = draw(st.booleans())
            items.append(draw(st.sampled_from([value, np.bool_(value), Item(np.array(value), "numpy")]
                                              + ([Item(np.array(value), "tensor")] if tensors else []))))
    return tuple(items)


def check_read(a: np.ndarray, index: tuple, device: str) -> None:
    want, error = numpy_outcome(lambda: a[as_numpy(index)])
    x = lt.asarray(a, device=device)
    if error is not None:
        assert error is IndexError, error
        with pytest.raises(IndexError):
            x[as_lt(index, device)]
        return
    assert_close(x[as_lt(index, device)], want)


def check_writes(a: np.ndarray, index: tuple, device: str, rng: np.random.Generator) -> None:
    np_index = as_numpy(index)
    selected, error = numpy_outcome(lambda: a[np_index])
    if error is not None:
        return   # (check_read covers the errors)
    value = np.asarray(random_array(rng, selected.shape, a.dtype))
    for form in ("scalar", "array", "iadd"):
        b = a.copy()
        x = lt.asarray(a, device=device)
        if form == "scalar":
            b[np_index] = value.reshape(-1)[0] if value.size else 1
            x[as_lt(index, device)] = value.reshape(-1)[0].item() if value.size else 1
        elif form == "array":
            b[np_index] = value
            x[as_lt(index, device)] = lt.asarray(value, device=device)
        else:
            if a.dtype == np.bool_:
                continue   # (numpy's bool += is or; lazytensor's too, but not worth a special case)
            with np.errstate(over="ignore"):
                b[np_index] += value
            lt_index = as_lt(index, device)
            x[lt_index] += lt.asarray(value, device=device)
        assert_close(x, b)


SHAPES = st.lists(st.sampled_from([0, 1, 1, 2, 3, 4]), min_size=0, max_size=4).map(tuple)
NUMERIC = [lt.int8, lt.uint16, lt.int64, lt.float16, lt.float32, lt.float64, lt.bool_]


def _random_index_case(data, device):
    shape = data.draw(SHAPES, label="shape")
    dtype = data.draw(st.sampled_from(NUMERIC), label="dtype")
    index = data.draw(index_expressions(shape), label="index")
    rng = np.random.default_rng(data.draw(st.integers(0, 1000), label="seed"))
    a = np.asarray(random_array(rng, shape, dtype))
    check_read(a, index, device)
    check_writes(a, index, device, rng)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_index_expressions_cpu(data):
    _random_index_case(data, "cpu")


@pytest.mark.parametrize("device", device_params([d for d in DEVICES if d != "cpu"]))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_index_expressions_accelerators(device, data):
    _random_index_case(data, device)


# ---- fixed cases: the idioms, every dtype and device -----------------------------------

A = np.arange(3 * 4 * 5).reshape(3, 4, 5)

CASES = {
    "cross-entropy-pick": lambda: (np.arange(3), np.array([3, 0, -1])),
    "broadcast-column-row": lambda: (np.array([[0], [2]]), slice(None), np.array([1, -1, 0])),
    "separated-by-slice": lambda: (np.array([1, 0]), slice(1, 3), np.array([4, 2])),
    "int-slice-array": lambda: (0, slice(None), np.array([1, 2])),
    "int-array-adjacent": lambda: (slice(None), 2, np.array([[4, 0]])),
    "none-between": lambda: (np.array([0, 2]), None, np.array([1, 1])),
    "ellipsis-between": lambda: (np.array([0]), Ellipsis, np.array([3])),
    "mask-and-array": lambda: (np.array([True, False, True]), np.array([3, 1])),
    "array-and-2d-mask": lambda: (np.array([[1], [0]]), A[0] % 3 == 0),
    "python-bool-and-array": lambda: (True, np.array([2, 0]), slice(None, None, -2)),
    "three-arrays": lambda: (np.array([2, 0, 1]), np.array([[0], [3]]), np.array([4, 4, 0])),
    "empty-arrays": lambda: (np.zeros(0, np.int64), np.zeros((2, 0), np.int64)),
    "one-element": lambda: ([1], [2], [3]),
    "0d-arrays": lambda: (np.array(1), slice(None), np.array(-1)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(CASES))
def test_reads_and_writes_every_dtype(device, name, dtype):
    a = random_array(np.random.default_rng(len(name)), A.shape, dtype)
    index = CASES[name]()
    x = lt.asarray(a, device=device)
    assert_close(x[index], a[index])
    lazy = tuple(lt.asarray(i, device=device) if isinstance(i, np.ndarray) else i for i in index)
    assert_close(x[lazy], a[index])
    b = a.copy()
    value = random_array(np.random.default_rng(1), a[index].shape, dtype)
    b[index] = value
    x[lazy] = value
    assert_close(x, b)


def test_cross_entropy_idiom(device):
    """The issue's example: logp[arange(n), y] reads one element per row (it raised IndexError)."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    y = rng.integers(0, 4, 6)
    logp = lt.nn.functional.log_softmax(lt.asarray(logits, device=device), 1)
    want = logp.numpy()[np.arange(6), y]
    assert_close(logp[lt.arange(6, device=device), lt.asarray(y, device=device)], want)
    assert_close(logp[np.arange(6), y], want)


def test_repeated_indices_write_last_and_add_once(device):
    """x[i, j] = v: the last write wins; x[i, j] += v adds once per distinct (i, j), the last
    repeat's value (numpy's buffered semantics); index_add adds every repeat."""
    a = np.zeros((3, 3), np.float32)
    i, j = np.array([0, 0, 2, 0]), np.array([1, 1, 2, 1])
    v = np.array([1, 2, 3, 4], np.float32)
    x = lt.asarray(a, device=device)
    x[i, j] = v
    b = a.copy()
    b[i, j] = v
    assert_close(x, b)
    x = lt.asarray(a, device=device)
    x[lt.asarray(i, device=device), lt.asarray(j, device=device)] += lt.asarray(v, device=device)
    b = a.copy()
    b[i, j] += v
    assert_close(x, b)
    assert x.numpy()[0, 1] == 4
    flat = lt.index_add(lt.asarray(a, device=device).reshape(-1), i * 3 + j, v).reshape(3, 3)
    b = a.copy()
    np.add.at(b, (i, j), v)
    assert_close(flat, b)
    assert flat.numpy()[0, 1] == 7


def test_lazy_indices_clamp_host_indices_raise(device):
    """A lazy tensor index out of range is wrapped once and clamped within its own axis (a kernel
    cannot raise); the same values given as a list or numpy array raise numpy's IndexError."""
    a = np.arange(12).reshape(3, 4)
    x = lt.asarray(a, device=device)
    i, j = np.array([5, -9, 1]), np.array([0, -1, 7])
    got = x[lt.asarray(i, device=device), lt.asarray(j, device=device)]
    assert_close(got, a[np.clip(np.where(i < 0, i + 3, i), 0, 2), np.clip(np.where(j < 0, j + 4, j), 0, 3)])
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        x[i, j]
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        x[[0, 1, 2], j]
    with pytest.raises(IndexError, match="out of bounds"):
        x[i, j] = 0
    with pytest.raises(IndexError, match="index_add: index 5 is out of bounds"):
        lt.index_add(x, i, 1)


def test_array_indices_give_copies(device):
    """As in numpy, an advanced index (a 0-d integer array too: numpy reads its value as an
    integer's but copies) gives a new array: writing into it leaves x as it was."""
    a = np.arange(6).reshape(2, 3)
    for index in (np.array(1), (np.array(1), np.array(2)), ([0, 1], [2, 2]), np.array([True, False])):
        x = lt.asarray(a, device=device)
        picked = x[index]
        picked[...] = -1
        b = a.copy()
        numpy_picked = np.asarray(b[index])   # (b[1, 2] is a numpy scalar: a copy too)
        numpy_picked[...] = -1
        assert_close(x, b)
        assert_close(picked, numpy_picked)


def test_multi_array_gather_is_one_kernel(device):
    a = np.linspace(-1, 1, 42, dtype=np.float32).reshape(6, 7)
    x = lt.asarray(a, device=device)
    i, j = lt.asarray(np.array([0, 5, -1]), device=device), lt.asarray(np.array([[1], [6]]), device=device)
    out = x.exp()[i, j] + 1
    assert kernels_for(out) == 1
    np.testing.assert_allclose(out.numpy(), np.exp(a)[[0, 5, -1], [[1], [6]]] + 1, rtol=1e-6)
    out = x.exp()[[0, 5, -1], [[1], [6]]] + 1   # (host indices: the flat index computed on the host)
    assert kernels_for(out) == 1


# ---- index_add: unbuffered, against np.add.at -------------------------------------------------

def _index_add_case(data, device):
    shape = data.draw(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple), label="shape")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    n = shape[axis]
    index_shape = data.draw(st.lists(st.integers(0, 5), min_size=0, max_size=2).map(tuple), label="index_shape")
    if n == 0:
        index_shape = index_shape + (0,)
    axis_n = axis % len(shape)
    if data.draw(st.booleans(), label="rows"):   # (a trailing axis of 9: the row path, 8 or more after the axis)
        shape, axis = shape + (9,), axis_n
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    rng = np.random.default_rng(data.draw(st.integers(0, 1000), label="seed"))
    index = rng.integers(-n, max(n, 1), index_shape) if n else np.zeros(index_shape, np.int64)
    if data.draw(st.booleans(), label="few-distinct") and n:
        index = index % min(n, 2)   # many repeats
    a = np.asarray(random_array(rng, shape, dtype))
    values = random_array(rng, shape[:axis_n] + index.shape + shape[axis_n + 1:], dtype)
    want = a.copy()
    with np.errstate(over="ignore"):
        np.add.at(want, (slice(None),) * axis_n + (index,), values)
    lazy = data.draw(st.booleans(), label="lazy index")
    got = lt.index_add(lt.asarray(a, device=device), lt.asarray(index, device=device) if lazy else index,
                       lt.asarray(values, device=device), axis=axis)
    if a.dtype.kind != "f":
        assert_close(got, want)
        return
    # floats: lazytensor sums an index's values, then adds x (numpy adds each into x in turn), so
    # the two round apart; each is within a few ulps of the sum's magnitude of the exact sum
    at = (slice(None),) * axis_n + (index,)
    exact, magnitude = a.astype(np.float64), np.abs(a).astype(np.float64)
    np.add.at(exact, at, values.astype(np.float64))
    np.add.at(magnitude, at, np.abs(values).astype(np.float64))
    bound = magnitude * np.finfo(a.dtype).eps * (index.size + 2)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (np.abs(got.numpy().astype(np.float64) - exact) <= bound).all()
    assert (np.abs(want.astype(np.float64) - exact) <= bound).all()   # (the bound holds numpy too)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_index_add_matches_np_add_at_cpu(data):
    _index_add_case(data, "cpu")


@pytest.mark.parametrize("device", device_params([d for d in DEVICES if d != "cpu"]))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_index_add_matches_np_add_at_accelerators(device, data):
    _index_add_case(data, device)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_add_of_many_repeats_is_np_add_at_bit_for_bit(axis, dtype):
    """The cpu's scatter-add into zeros (an embedding's gradient): indices repeated a few times
    and hundreds of times (a character model's spaces) sum each target's rows in index order,
    as np.add.at does: the same bits, -0.0 rows and negative indices included."""
    from lazytensor.ir.rules import SCATTER_ROUNDS, scatter_add_into
    rng = np.random.default_rng(21)
    index = np.where(rng.random((40, 25)) < 0.4, 3, rng.integers(-200, 200, (40, 25)))   # 3: ~400 times
    values = random_array(rng, (6,) * axis + (40, 25, 16), np.dtype(dtype))
    values[..., ::5, :] = 0 if dtype == "int32" else -0.0
    out = np.zeros((6,) * axis + (200, 16), dtype)
    scatter_add_into(out, index, values, axis)
    want = np.zeros_like(out)
    np.add.at(want, (slice(None),) * axis + (np.where(index < 0, index + 200, index),), values)
    assert np.array_equal(out.view(np.uint8), want.view(np.uint8))
    counts = np.bincount(index.reshape(-1) % 200)
    assert counts.max() > SCATTER_ROUNDS >= counts[counts > 1].min()   # (both ways of adding ran)


def test_index_add_broadcasts_and_casts_values(device):
    x = lt.zeros((3, 4), dtype=lt.int32, device=device)
    assert_close(lt.index_add(x, [2, 2, 0], 1.0), np.array([[1] * 4, [0] * 4, [2] * 4], np.int32))
    assert_close(lt.index_add(x, [1], lt.asarray([[1, 2, 3, 4]], device=device), axis=0),
                 np.array([[0] * 4, [1, 2, 3, 4], [0] * 4], np.int32))
    with pytest.raises(ValueError, match="do not broadcast"):
        lt.index_add(x, [0, 1], lt.ones((3, 4), device=device))


# ---- gradients: real scatter-adds and gathers ---------------------------------------------------

def _ops(t) -> set:
    return {node.op for node in toposort([t.node])}


def test_gather_gradient_is_a_scatter_add(device):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((50, 8))
    idx = rng.integers(-50, 50, (7, 3))
    w = rng.standard_normal((7, 3, 8))
    x = lt.asarray(table, device=device).requires_grad_()
    loss = (x[lt.asarray(idx, device=device)] * lt.asarray(w, device=device)).sum()
    loss.backward()
    want = np.zeros_like(table)
    np.add.at(want, idx, w)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)
    from lazytensor.autograd import GRADIENT_RULES
    node = x[lt.asarray(idx, device=device)].node
    (grad, _) = GRADIENT_RULES[Op.GATHER](lt.ones(node.shape, dtype=lt.float64, device=device).node, node)
    assert grad.op is Op.SCATTER_ADD and Op.CMPEQ not in _ops(lt.Tensor(grad, device)), \
        "the gradient of a gather is a scatter-add, not a comparison with an iota"


def test_multi_array_gradients_match_np_add_at(device):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 5, 6))
    i, j = np.array([[0], [3], [0]]), np.array([1, -1, 1, 1])
    w = rng.standard_normal((3, 4, 5))   # separated by a slice: the broadcast axes (3, 4) go first
    x = lt.asarray(a, device=device).requires_grad_()
    (x[lt.asarray(i, device=device), :, lt.asarray(j, device=device)] * lt.asarray(w, device=device)).sum().backward()
    want = np.zeros_like(a)
    np.add.at(want, (i, slice(None), j), w)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)


def test_index_add_gradients(device):
    rng = np.random.default_rng(5)
    a, v = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    idx = np.array([4, 0, 4, -1])
    w = rng.standard_normal((5, 3))
    x = lt.asarray(a, device=device).requires_grad_()
    values = lt.asarray(v, device=device).requires_grad_()
    (lt.index_add(x, lt.asarray(idx, device=device), values) * lt.asarray(w, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w)
    np.testing.assert_allclose(values.grad.numpy(), w[idx])


def test_embedding_gradient_scales_with_the_index(device):
    """An embedding's backward does O(len(index) x width) work: a 20,000-row table with 64
    indices (a compare with an iota would do 20,000 x 64 x 32 of it, every row, every index)."""
    rng = np.random.default_rng(6)
    table = lt.asarray(rng.standard_normal((20_000, 32)).astype(np.float32), device=device).requires_grad_()
    idx = rng.integers(0, 20_000, 64)
    lt.nn.functional.embedding(lt.asarray(idx, device=device), table).sum().backward()
    want = np.zeros((20_000, 32), np.float32)
    np.add.at(want, idx, 1.0)
    np.testing.assert_array_equal(table.grad.numpy(), want)


@pytest.mark.parametrize("shape, mask_shape", [
    ((0, 1), (0, 0)), ((1,), (0,)), ((0, 2), (0, 1)), ((2, 0), (2, 1)), ((0, 3), (0,)), ((1, 0), (0, 0)),
    ((2, 3), (2, 0)), ((2, 3), (0, 3)), ((2, 3), (3,)), ((2,), (2, 1)),
], ids=str)
def test_a_mask_empty_along_an_axis_selects_nothing_as_numpy(device, shape, mask_shape):
    # numpy (and the conformance suite) accept a mask axis of size 0 against an axis of any size
    a, mask = np.arange(math.prod(shape), dtype=np.float32).reshape(shape), np.zeros(mask_shape, bool)
    x = lt.asarray(a, device=device)
    try:
        want = a[mask]
    except IndexError:
        with pytest.raises(IndexError, match="does not match|too many indices"):
            x[lt.asarray(mask, device=device)]
        with pytest.raises(IndexError, match="does not match|too many indices"):
            x[lt.asarray(mask, device=device)] = 1.0
        return
    assert_close(x[lt.asarray(mask, device=device)], want)
    x[lt.asarray(mask, device=device)] = 1.0
    assert_close(x, a)
