"""Array API reductions (all, any, var, std), manipulation, creation and linear-algebra helpers,
and array attributes, against numpy."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array

AXES = [None, 0, -1, (0, 2)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any(device, name, axis, dtype):
    a = random_array(np.random.default_rng(3), (3, 4, 5), dtype)
    a.reshape(-1)[::3] = 0
    assert_close(getattr(lt, name)(lt.asarray(a, device=device), axis=axis), getattr(np, name)(a, axis=axis))
    assert_close(getattr(lt.asarray(a, device=device), name)(axis=axis, keepdims=True),
                 getattr(np, name)(a, axis=axis, keepdims=True))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_all_any_of_empty(device, shape):
    x = lt.zeros(shape, device=device)
    for axis in (None, 0, 1):
        assert_close(x.all(axis=axis), np.zeros(shape, np.float32).all(axis=axis))
        assert_close(x.any(axis=axis), np.zeros(shape, np.float32).any(axis=axis))


@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("correction", [0, 1])
def test_var_std(device, dtype, axis, correction):
    a = random_array(np.random.default_rng(4), (3, 4, 5), dtype)
    x = lt.asarray(a, device=device)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is lt.float32 else dict(rtol=1e-12)
    for name in ("var", "std"):
        got = getattr(x, name)(axis=axis, correction=correction)
        want = getattr(np, name)(a, axis=axis, ddof=correction)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want, **tol)
        np.testing.assert_allclose(getattr(lt, name)(x, axis=axis, ddof=correction).numpy(), want, **tol)


def test_moveaxis_roll_tile_repeat(device):
    a = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    x = lt.asarray(a, device=device)
    assert_close(lt.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    assert_close(lt.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    for shift, axis in [(1, None), (-2, None), (5, 1), ((1, 2), (0, 2)), (0, 0)]:
        assert_close(lt.roll(x, shift, axis), np.roll(a, shift, axis))
    for reps in [(2,), (2, 1, 3), (1, 2, 1, 1)]:
        assert_close(lt.tile(x, reps), np.tile(a, reps))
    for axis in (None, 0, 2, -1):
        assert_close(lt.repeat(x, 3, axis=axis), np.repeat(a, 3, axis=axis))


def test_broadcast_arrays_and_meshgrid(device):
    a, b = np.arange(3).reshape(3, 1), np.arange(4)
    arrays = lt.broadcast_arrays(lt.asarray(a, device=device), lt.asarray(b, device=device))
    assert type(arrays) is tuple   # (the standard's since 2025.12; numpy 2's)
    for got, want in zip(arrays, np.broadcast_arrays(a, b)):
        assert_close(got, want)
    xs, ys, zs = np.arange(3), np.arange(4.0), np.arange(2)
    for indexing in ("xy", "ij"):
        got = lt.meshgrid(*(lt.asarray(v, device=device) for v in (xs, ys, zs)), indexing=indexing)
        assert type(got) is tuple
        for g, w in zip(got, np.meshgrid(xs, ys, zs, indexing=indexing)):
            assert_close(g, w.astype(np.float32) if w.dtype == np.float64 and g.dtype == lt.float32 else w)


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu(device, k):
    a = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) + 1
    assert_close(lt.tril(lt.asarray(a, device=device), k), np.tril(a, k))
    assert_close(lt.triu(lt.asarray(a, device=device), k), np.triu(a, k))


def test_linalg_helpers(device):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4, 5))
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    assert_close(lt.tensordot(x, y), np.tensordot(a, b))
    assert_close(lt.tensordot(x, y, axes=([1], [0])), np.tensordot(a, b, axes=([1], [0])))
    assert_close(lt.matrix_transpose(x), np.swapaxes(a, -1, -2))
    assert_close(x.mT, np.swapaxes(a, -1, -2))
    v = rng.standard_normal(4)
    assert_close(lt.vecdot(x, lt.asarray(v, device=device)), np.sum(a * v, axis=-1))
    with pytest.raises(ValueError, match="mT"):
        lt.asarray(v).mT


def test_creation_helpers(device):
    assert_close(lt.linspace(-1, 2, 7, device=device), np.linspace(-1, 2, 7).astype(np.float32))
    assert_close(lt.linspace(0, 1, 4, endpoint=False, dtype=lt.float64), np.linspace(0, 1, 4, endpoint=False))
    assert_close(lt.eye(3, 4, k=1, device=device), np.eye(3, 4, k=1, dtype=np.float32))
    assert_close(lt.eye(2, dtype=lt.int32), np.eye(2, dtype=np.int32))


def test_array_namespace_and_device(device):
    x = lt.ones(3, device=device)
    assert x.__array_namespace__() is lt
    assert x.__array_namespace__(api_version="2025.12") is lt
    assert x.__array_namespace__(api_version="2024.12") is lt
    with pytest.raises(ValueError, match="2025.12"):
        x.__array_namespace__(api_version="1999.01")
    assert x.to_device(device) is x
    with pytest.raises(ValueError):
        x.to_device("no-such-device")


# names array-api-strict exports that lazytensor deliberately lacks: its own helpers
NOT_PROVIDED = {"ArrayAPIStrictFlags", "Device", "get_array_api_strict_flags", "set_array_api_strict_flags",
                "reset_array_api_strict_flags"}


def test_namespace_has_every_name_of_the_standard():
    xp = pytest.importorskip("array_api_strict")
    xp.set_array_api_strict_flags(api_version="2025.12")
    missing = [n for n in xp.__all__ if not n.startswith("_") and n not in NOT_PROVIDED and not hasattr(lt, n)]
    assert not missing, f"lazytensor lacks {missing}"
    for name in ("matmul", "matrix_transpose", "vecdot", "tensordot", "eig", "eigvals"):
        assert callable(getattr(lt.linalg, name))
    assert (lt.e, lt.pi, lt.inf, lt.newaxis) == (np.e, np.pi, np.inf, None) and np.isnan(lt.nan)


def test_standard_spellings(device):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((3, 4))
    x = lt.asarray(a, device=device)
    assert_close(lt.concat([x, x], axis=1), np.concatenate([a, a], axis=1))
    assert_close(lt.concat([x, a[0]], axis=None), np.concatenate([a.reshape(-1), a[0]]))
    assert_close(lt.permute_dims(x, (1, 0)), a.T)
    for got, want in zip(lt.unstack(x, axis=1), np.moveaxis(a, 1, 0)):
        assert_close(got, want)
    assert_close(lt.count_nonzero(x > 0, axis=0), np.count_nonzero(a > 0, axis=0).astype(np.int64))
    assert_close(lt.diff(x, axis=0, n=2), np.diff(a, axis=0, n=2))
    assert_close(lt.reciprocal(x), 1 / a)
    assert_close(lt.linalg.vecdot(x, x), np.sum(a * a, axis=-1))
    assert complex(lt.asarray([2.5])) == 2.5 + 0j
