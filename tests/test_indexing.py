"""Integer-array and boolean indexing, take, take_along_axis, nonzero and writes, against numpy."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array

A = np.arange(4 * 6 * 5).reshape(4, 6, 5)


def kernels_for(t) -> int:
    before = lt.stats()["kernels_launched"]
    t.realize()
    return lt.stats()["kernels_launched"] - before


READS = {
    "first-axis": lambda i: np.array([3, 0, -1, 2]),
    "middle-axis": lambda i: (slice(None), np.array([5, 0, 0])),
    "with-int": lambda i: (1, np.array([[1, 2], [3, 4]])),
    "with-ellipsis": lambda i: (Ellipsis, [4, 0]),
    "sliced": lambda i: (slice(1, 3), [0, 5], slice(None, None, -2)),
    "list": lambda i: [0, 0, 1],
    "empty": lambda i: np.array([], dtype=np.int64),
    "mask-first": lambda i: A[:, 0, 0] % 2 == 0,
    "mask-2d": lambda i: A[:, :, 0] % 3 == 0,
    "mask-after-slice": lambda i: (slice(None), A[0, :, 0] > 10),
    "mask-all": lambda i: A % 7 == 0,
    "ellipsis-then-mask-2d": lambda i: (Ellipsis, A[0] % 3 == 0),
    "int-ellipsis-array": lambda i: (0, Ellipsis, [1, 3]),
    "none-ellipsis-array": lambda i: (None, Ellipsis, [4, 0], None),
    "array-then-ellipsis": lambda i: ([2, 1], Ellipsis, 0),
    "int-next-to-array": lambda i: (slice(None), 2, [4, 0]),
    "int-slice-mask": lambda i: (1, slice(None), A[0, 0] > 1),
}


@pytest.mark.parametrize("name", list(READS))
def test_advanced_reads(device, name):
    index = READS[name](None)
    assert_close(lt.asarray(A, device=device)[index], A[index])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_take_every_dtype_and_index_dtype(device, dtype):
    a = random_array(np.random.default_rng(8), (5, 7), dtype)
    for index_dtype in (np.int8, np.int32, np.int64, np.uint16):
        idx = np.array([4, 0, 2, 2], dtype=index_dtype)
        assert_close(lt.take(lt.asarray(a, device=device), idx, axis=0), np.take(a, idx, axis=0))
        assert_close(lt.take(lt.asarray(a, device=device), lt.asarray(idx, device=device), axis=1), np.take(a, idx, axis=1))
    assert_close(lt.take(lt.asarray(a, device=device), [-1, 3]), np.take(a, [-1, 3]))


def test_out_of_range_indices_are_clamped(device):
    x = lt.asarray(np.arange(5), device=device)
    assert_close(lt.take(x, lt.asarray([7, -9, 2], device=device)), np.array([4, 0, 2]))


def test_gather_fuses_with_its_source_and_consumer(device):
    a = np.linspace(-1, 1, 60, dtype=np.float32).reshape(6, 10)
    x = lt.asarray(a, device=device)
    idx = lt.asarray(np.array([5, 1, 1]), device=device)
    out = lt.take((x * 2.0).exp(), idx, axis=0) + 1.0
    assert kernels_for(out) == 1
    np.testing.assert_allclose(out.numpy(), np.exp(a * 2)[[5, 1, 1]] + 1, rtol=1e-6)
    summed = lt.take(x, idx, axis=1).sum(axis=1)
    np.testing.assert_allclose(summed.numpy(), a[:, [5, 1, 1]].sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis(device, axis):
    a = random_array(np.random.default_rng(9), (4, 6), lt.float32)
    order = np.argsort(a, axis=axis)
    assert_close(lt.take_along_axis(lt.asarray(a, device=device), order, axis), np.take_along_axis(a, order, axis))
    picks = np.zeros((4, 6), np.int64)[:1] if axis == 0 else np.array([[1], [0], [5], [-1]])
    assert_close(lt.take_along_axis(lt.asarray(a, device=device), picks, axis), np.take_along_axis(a, picks, axis))


def test_nonzero(device):
    a = np.array([[0, 3, 0], [1, 0, 2]])
    for got, want in zip(lt.nonzero(lt.asarray(a, device=device)), np.nonzero(a)):
        assert_close(got, want)
    with pytest.raises(ValueError):
        lt.nonzero(lt.asarray(5))


WRITES = {
    "block": (np.s_[1:3, 2:4], -1),
    "row-broadcast": (np.s_[2], np.arange(6 * 5).reshape(6, 5)),
    "int": (np.s_[0, 0, 0], 99),
    "steps": (np.s_[::2, 1], 7),
    "negative-step": (np.s_[::-1, 0, 1:4], np.arange(12).reshape(4, 3)),
    "ellipsis": (np.s_[..., -1], 5),
    "int-array-repeats": (np.array([0, 2, 0]), np.arange(3 * 6 * 5).reshape(3, 6, 5)),
    "mask": (A % 4 == 0, 0),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_writes(device, name):
    index, value = WRITES[name]
    x = lt.asarray(A, device=device)
    before = x.node
    x[index] = value
    assert x.node is not before           # recorded lazily, nothing computed yet
    want = A.copy()
    want[index] = value
    assert_close(x, want)


def test_write_keeps_dtype_and_reads_stay_lazy(device):
    x = lt.zeros((3, 4), dtype=lt.int32, device=device)
    y = lt.ones((3, 4), device=device) * 2.7
    x[1:] = y[1:]
    assert x.dtype == lt.int32
    assert_close(x, np.where(np.arange(3)[:, None] >= 1, 2, 0).repeat(4, 1).astype(np.int32))


@pytest.mark.parametrize("reduce", ["max", "sum", "argmax"])
@pytest.mark.parametrize("axis", [0, 1])
def test_a_gather_whose_index_is_a_reduction(device, reduce, axis):
    """A reduction computed as a gather's index lives in the index's space, not the kernel's: it
    was inlined into the kernel and reduced along the kernel's axes (wrong elements on every
    device; found by the fuzzer)."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 3, (4, 2))
    b = rng.standard_normal((4, 3)).astype(np.float32)
    index = {"max": lambda t, m: m.max(t, axis=1, keepdims=True),
             "sum": lambda t, m: m.sum(t, axis=1, keepdims=True) % 3,
             "argmax": lambda t, m: m.argmax(t, axis=1, keepdims=True)}[reduce]
    got = lt.take(lt.asarray(b, device=device), index(lt.asarray(a, device=device), lt), axis=axis)
    want = np.take(b, index(a, np), axis=axis)
    np.testing.assert_array_equal(got.numpy(), want)
    got = lt.take_along_axis(lt.asarray(b, device=device), index(lt.asarray(a, device=device), lt), axis=1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(b, index(a, np), axis=1))
