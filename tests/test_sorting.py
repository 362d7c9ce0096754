"""sort, argsort, cumulative_sum, searchsorted and unique_*, against numpy (stable sorts,
nan last, numpy's accumulation dtypes); sorting stays lazy until realized."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array


def descending_order(a: np.ndarray, axis: int) -> np.ndarray:
    """The stable descending order (equal values keep their original order), nan last as in
    the ascending order: by nan-ness first, then by value, largest first (lexsort is stable)."""
    if a.dtype.kind != "f":
        flipped = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
        return a.shape[axis] - 1 - flipped
    nan = np.isnan(a)
    return np.lexsort((np.where(nan, 0, -a.astype(np.float64)), nan), axis=axis)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(device, dtype, axis, descending):
    a = random_array(np.random.default_rng(10), (5, 8), dtype)
    if dtype.is_float:
        a[1, 2], a[3, 0] = np.nan, -0.0
    x = lt.asarray(a, device=device)
    order = descending_order(a, axis) if descending else np.argsort(a, axis=axis, kind="stable")
    assert_close(lt.argsort(x, axis=axis, descending=descending), order)
    assert_close(lt.sort(x, axis=axis, descending=descending), np.take_along_axis(a, order, axis))


def test_sort_is_lazy_and_a_step_of_its_own(device):
    x = lt.asarray(np.array([5, 3, 9, 1]), device=device)
    launched = lt.stats()["kernels_launched"]
    y = lt.sort(x * 2) + 1
    assert lt.stats()["kernels_launched"] == launched   # recorded, not run
    assert_close(y, np.sort(np.array([5, 3, 9, 1]) * 2) + 1)
    assert lt.stats()["kernels_launched"] - launched == 3  # x*2, the sort, +1


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_cumulative_sum(device, dtype):
    a = random_array(np.random.default_rng(11), (4, 6), dtype)
    x = lt.asarray(a, device=device)
    for axis in (0, 1):
        want = np.cumsum(a, axis=axis)
        got = lt.cumulative_sum(x, axis=axis)
        assert got.dtype == want.dtype
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got.numpy(), want, rtol=2e-3 if dtype is lt.float16 else 1e-6)
        else:
            assert_close(got, want)
    flat = a.reshape(-1)
    with_zero = lt.cumulative_sum(lt.asarray(flat, device=device), include_initial=True)
    assert with_zero.shape == (flat.size + 1,)
    assert_close(with_zero[1:], lt.cumulative_sum(lt.asarray(flat, device=device)).numpy())
    assert with_zero[0].item() == 0
    with pytest.raises(ValueError, match="axis"):
        lt.cumulative_sum(x)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(device, side):
    sorted_values = np.array([1.0, 2.0, 2.0, 5.0, np.inf])
    values = np.array([[0.0, 2.0], [2.5, 9.0]])
    got = lt.searchsorted(lt.asarray(sorted_values, device=device), lt.asarray(values, device=device), side=side)
    assert_close(got, np.searchsorted(sorted_values, values, side=side).astype(np.int64))
    shuffled = np.array([5.0, 1.0, 2.0])
    sorter = np.argsort(shuffled)
    assert_close(lt.searchsorted(lt.asarray(shuffled, device=device), lt.asarray([3.0], device=device), sorter=sorter),
                 np.searchsorted(shuffled, [3.0], sorter=sorter).astype(np.int64))


def test_unique(device):
    a = np.array([[3.0, 1.0, np.nan], [3.0, np.nan, 2.0]])
    values, indices, inverse, counts = np.unique(a.reshape(-1), return_index=True, return_inverse=True,
                                                 return_counts=True, equal_nan=False)
    x = lt.asarray(a, device=device)
    assert_close(lt.unique_values(x), values)
    result = lt.unique_all(x)
    assert_close(result.values, values)
    assert_close(result.indices, indices.astype(np.int64))
    assert_close(result.inverse_indices, inverse.reshape(a.shape).astype(np.int64))
    assert_close(result.counts, counts.astype(np.int64))
    assert_close(lt.unique_counts(x).counts, counts.astype(np.int64))
    assert_close(lt.unique_inverse(x).inverse_indices, inverse.reshape(a.shape).astype(np.int64))


def test_bad_input(device):
    with pytest.raises(ValueError, match="0-d"):
        lt.sort(lt.asarray(3))
    with pytest.raises(ValueError, match="1-D"):
        lt.searchsorted(lt.zeros((2, 2)), lt.zeros(2))
    with pytest.raises(ValueError, match="side"):
        lt.searchsorted(lt.zeros(2), lt.zeros(2), side="middle")
