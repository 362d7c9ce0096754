"""lt.linalg, the Array API's linalg extension, against numpy on random inputs: every function on
stacks of odd shapes (1x1, tall, wide, zero-size batches), float32 and float64, on every device;
what a singular matrix gives; the errors; gradients against central finite differences."""
import doctest
import math

import numpy as np
import pytest

import gradcheck
import lazytensor as lt
from conftest import assert_close, has_fp64
from lazytensor.ir.graph import toposort
from lazytensor.ir.ops import Op

L = lt.linalg
FLOATS = [lt.float32, lt.float64]


def rand(rng, shape, dtype=lt.float64):
    return rng.standard_normal(shape).astype(dtype.np)


def well_conditioned(rng, shape, dtype=lt.float64):
    """Square matrices comfortably far from singular: random plus 3 times the identity."""
    return (rng.standard_normal(shape) + 3 * np.eye(shape[-1])).astype(dtype.np)


def spd(rng, shape, dtype=lt.float64):
    """Symmetric positive-definite matrices."""
    a = rng.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype.np)


def symmetric(rng, shape, dtype=lt.float64):
    a = rng.standard_normal(shape)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype.np)


def close(got, want, rtol=None):
    """assert_close with a looser tolerance for float32 results of decompositions (LAPACK's
    result is numpy's, but the matrices in a batch and the one-by-one fallback may round apart)."""
    want = np.asarray(want)
    if rtol is None:
        assert_close(got, want)
        return
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def ops_of(t: lt.Tensor) -> set:
    return {n.op for n in toposort([t.node])}


def test_the_verifier_knows_linalg_arities():
    from lazytensor.ir.graph import Node
    from lazytensor.ir.verify import IRError, verify
    x = lt.asarray(np.eye(3) * 2)
    verify([L.svd(x).U.node, L.solve(x, x).node, L.pinv(x, rtol=0.5).node])
    bad = Node(Op.LINALG, x.dtype, (3, 3), (x.node, x.node), ("inv", 0, ()))
    with pytest.raises(IRError, match="expects 1 sources, has 2"):
        verify([bad])


# ---- decompositions and solvers vs numpy --------------------------------------------------------

SQUARE_SHAPES = [(1, 1), (3, 3), (2, 4, 4), (2, 1, 5, 5), (0, 3, 3), (2, 0, 0)]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SQUARE_SHAPES, ids=str)
def test_square_decompositions(device, dtype, shape):
    rng = np.random.default_rng(sum(shape) + 7)
    a = well_conditioned(rng, shape, dtype)
    x = lt.asarray(a, device=device)
    close(L.inv(x), np.linalg.inv(a))
    close(L.det(x), np.linalg.det(a))
    sign, logabsdet = L.slogdet(x)
    want = np.linalg.slogdet(a)
    close(sign, want.sign)
    close(logabsdet, want.logabsdet)
    p = spd(rng, shape, dtype)
    close(L.cholesky(lt.asarray(p, device=device)), np.linalg.cholesky(p))
    close(L.cholesky(lt.asarray(p, device=device), upper=True), np.linalg.cholesky(p, upper=True))
    s = symmetric(rng, shape, dtype)
    w, v = L.eigh(lt.asarray(s, device=device))
    close(w, np.linalg.eigh(s).eigenvalues)
    close(v, np.linalg.eigh(s).eigenvectors)
    close(L.eigvalsh(lt.asarray(s, device=device)), np.linalg.eigvalsh(s))
    for t in (L.inv(x), w, v, sign):
        assert t.device == device
    # a general matrix: complex eigenvalues and vectors of x's precision (numpy's eig: complex
    # where some eigenvalue is, real otherwise)
    values, vectors = L.eig(x)
    want = np.linalg.eig(a)
    complex_of = np.complex64 if dtype in (lt.float32, lt.float16) else np.complex128
    assert values.dtype.np == complex_of and vectors.dtype.np == complex_of
    close(values, want.eigenvalues.astype(complex_of))
    close(vectors, want.eigenvectors.astype(complex_of))
    close(L.eigvals(x), np.linalg.eigvals(a).astype(complex_of))


MATRIX_SHAPES = [(1, 1), (5, 3), (3, 5), (2, 4, 3), (2, 3, 1, 4), (0, 2, 3), (3, 0), (2, 3, 0)]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", MATRIX_SHAPES, ids=str)
def test_rectangular_decompositions(device, dtype, shape):
    rng = np.random.default_rng(sum(shape) + 11)
    a = rand(rng, shape, dtype)
    x = lt.asarray(a, device=device)
    for full in (True, False):
        u, s, vh = L.svd(x, full_matrices=full)
        want = np.linalg.svd(a, full_matrices=full)
        close(u, want.U)
        close(s, want.S)
        close(vh, want.Vh)
    close(L.svdvals(x), np.linalg.svd(a, compute_uv=False))
    for mode in ("reduced", "complete"):
        q, r = L.qr(x, mode=mode)
        want = np.linalg.qr(a, mode=mode)
        close(q, want.Q)
        close(r, want.R)
    close(L.pinv(x), np.linalg.pinv(a, rtol=max(shape[-2:]) * np.finfo(dtype.np).eps))
    close(L.matrix_rank(x), np.linalg.matrix_rank(a).astype(np.int64) if min(shape[-2:]) else
          np.zeros(shape[:-2], np.int64))


def test_decompositions_reconstruct_their_input(device):
    """The factors multiply back to the input (a check that does not lean on numpy's answer)."""
    rng = np.random.default_rng(3)
    a = rand(rng, (2, 5, 3))
    x = lt.asarray(a, device=device)
    u, s, vh = L.svd(x, full_matrices=False)
    close((u * s[..., None, :]) @ vh, a, rtol=1e-12)
    q, r = L.qr(x)
    close(q @ r, a, rtol=1e-12)
    close(q.mT @ q, np.broadcast_to(np.eye(3), (2, 3, 3)), rtol=1e-12)
    p = spd(rng, (2, 4, 4))
    lower = L.cholesky(lt.asarray(p, device=device))
    close(lower @ lower.mT, p, rtol=1e-12)
    w, v = L.eigh(lt.asarray(p, device=device))
    close((v * w[..., None, :]) @ v.mT, p, rtol=1e-12)
    w, v = L.eig(lt.asarray(a[..., :3, :], device=device))
    close((v * w[..., None, :]) @ L.inv(v), a[..., :3, :].astype(np.complex128), rtol=1e-12)
    close(L.pinv(x) @ x, np.broadcast_to(np.eye(3), (2, 3, 3)), rtol=1e-12)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (3,)), ((2, 3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)), ((4, 1, 3, 3), (2, 3, 2)),
    ((1, 1), (1, 4)), ((0, 2, 2), (2,)), ((2, 2), (0, 2, 3)),
], ids=str)
def test_solve(device, a_shape, b_shape):
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a, b = well_conditioned(rng, a_shape), rand(rng, b_shape)
    got = L.solve(lt.asarray(a, device=device), lt.asarray(b, device=device))
    b_matrix = b[:, None] if len(b_shape) == 1 else b   # (a vector: one right-hand side)
    batch = np.broadcast_shapes(a_shape[:-2], b_matrix.shape[:-2])
    want = np.linalg.solve(np.broadcast_to(a, batch + a_shape[-2:]),
                           np.broadcast_to(b_matrix, batch + b_matrix.shape[-2:]))
    if len(b_shape) == 1:
        want = want[..., 0]
    close(got, want, rtol=1e-12)


def test_solve_promotes_and_float32_stays_float32(device):
    rng = np.random.default_rng(4)
    a, b = well_conditioned(rng, (3, 3), lt.float32), rand(rng, (3,), lt.float32)
    got = L.solve(lt.asarray(a, device=device), lt.asarray(b, device=device))
    close(got, np.linalg.solve(a, b))
    mixed = L.solve(lt.asarray(a, device=device), lt.asarray(b.astype(np.float64), device=device))
    assert mixed.dtype == lt.float64


@pytest.mark.parametrize("rtol", [None, 0.3, "tensor", "broadcast"])
def test_pinv_and_matrix_rank_tolerances(device, rtol):
    rng = np.random.default_rng(5)
    # singular values 4, 1, 0.2 in every matrix: the cutoff decides the rank
    u, _ = np.linalg.qr(rng.standard_normal((3, 4, 3)))
    v, _ = np.linalg.qr(rng.standard_normal((3, 3, 3)))
    a = u @ (np.array([4.0, 1.0, 0.2])[:, None] * np.swapaxes(v, -1, -2))
    if rtol == "tensor":
        r = np.array([0.01, 0.1, 0.5])
    elif rtol == "broadcast":
        r = np.array([0.1])
    else:
        r = rtol
    x = lt.asarray(a, device=device)
    given = lt.asarray(r, device=device) if isinstance(r, np.ndarray) else r
    want_rtol = 3 * np.finfo(np.float64).eps if r is None else r
    close(L.pinv(x, rtol=given), np.linalg.pinv(a, rtol=want_rtol), rtol=1e-12)
    close(L.matrix_rank(x, rtol=given), np.linalg.matrix_rank(a, rtol=want_rtol).astype(np.int64))


def test_results_are_named_tuples():
    x = lt.asarray(np.eye(3) * 2)
    assert L.eigh(x)._fields == ("eigenvalues", "eigenvectors")
    assert L.eig(x)._fields == ("eigenvalues", "eigenvectors")
    assert L.qr(x)._fields == ("Q", "R")
    assert L.slogdet(x)._fields == ("sign", "logabsdet")
    assert L.svd(x)._fields == ("U", "S", "Vh")
    result = L.svd(x)
    assert result.S is result[1] and result.Vh is result[2]


def test_decompositions_are_lazy_opaque_steps(device):
    rng = np.random.default_rng(6)
    x = lt.asarray(rand(rng, (4, 3)), device=device)
    launched = lt.stats()["kernels_launched"]
    u, s, vh = L.svd(x * 2, full_matrices=False)
    y = (u * s[None, :]) @ vh
    assert lt.stats()["kernels_launched"] == launched   # recorded, not run
    assert Op.LINALG in ops_of(y) and Op.LINALG in ops_of(s)
    assert {n.arg for n in toposort([y.node]) if n.op is Op.LINALG} == {
        ("svd", i, (("full_matrices", False),)) for i in range(3)}
    close(y, x.numpy() * 2, rtol=1e-12)


def test_integer_and_float16_inputs(device):
    a = np.array([[2, 1], [1, 3]], np.int32)
    x = lt.asarray(a, device=device)
    close(L.inv(x), np.linalg.inv(a))                       # numpy: integers decompose in float64
    close(L.det(x), np.linalg.det(a))
    half = lt.asarray(a.astype(np.float16), device=device)
    assert L.inv(half).dtype == lt.float16                   # computed in float32, rounded back
    np.testing.assert_allclose(L.inv(half).numpy(), np.linalg.inv(a.astype(np.float32)), rtol=1e-3)
    assert L.svd(half).S.dtype == lt.float16


# ---- what singular and failing matrices give ----------------------------------------------------

def test_singular_matrices_give_nan_and_the_rest_of_the_batch(device):
    a = np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[2.0, 0.0], [0.0, 4.0]])])
    x = lt.asarray(a, device=device)
    got = L.inv(x).numpy()
    assert np.isnan(got[0]).all()
    close(got[1], np.linalg.inv(a[1]))
    b = np.array([1.0, 1.0])
    solved = L.solve(x, lt.asarray(b, device=device)).numpy()
    assert np.isnan(solved[0]).all()
    close(solved[1], np.linalg.solve(a[1], b))
    close(L.det(x), np.array([0.0, 8.0]))
    sign, logabsdet = L.slogdet(x)
    close(sign, np.array([0.0, 1.0]))
    close(logabsdet, np.array([-np.inf, np.log(8.0)]))
    not_pd = lt.asarray(np.stack([np.array([[1.0, 2.0], [2.0, 1.0]]), np.eye(2)]), device=device)
    factor = L.cholesky(not_pd).numpy()
    assert np.isnan(factor[0]).all()
    close(factor[1], np.eye(2))
    assert (L.matrix_rank(x).numpy() == [1, 2]).all()


def test_nan_input_does_not_raise(device):
    a = np.array([[np.nan, 1.0], [1.0, 2.0]])
    x = lt.asarray(a, device=device)
    assert np.isnan(L.svdvals(x).numpy()).all()   # numpy raises "SVD did not converge"
    assert np.isnan(L.svd(x).U.numpy()).all()
    assert np.isnan(L.det(x).item())


# ---- lazy functions: diagonal, trace, outer, cross, matrix_power ----------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 4), (0, 2, 2), (2, 0, 3), (1, 1)], ids=str)
def test_diagonal_and_trace(device, shape):
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(-9, 9, shape).astype(np.int32)
    x = lt.asarray(a, device=device)
    for offset in range(-6, 7):
        close(L.diagonal(x, offset=offset), np.diagonal(a, offset, -2, -1))
        close(L.trace(x, offset=offset), np.trace(a, offset, -2, -1).astype(np.int64))
    f = rand(rng, shape, lt.float32)
    close(L.trace(lt.asarray(f, device=device), offset=1), np.trace(f, 1, -2, -1).astype(np.float32))
    assert L.trace(lt.asarray(f, device=device), dtype=lt.float64).dtype == lt.float64
    assert L.trace(lt.asarray(a.astype(np.uint8), device=device)).dtype == lt.uint64


@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("int8", "uint8"), ("float32", "float64"), ("bool", "bool"),
                                    ("float32", "int16")], ids=str)
def test_outer(device, dtypes):
    rng = np.random.default_rng(8)
    a = (rng.standard_normal(5) * 4).astype(dtypes[0])
    b = (rng.standard_normal(3) * 4).astype(dtypes[1])
    close(L.outer(lt.asarray(a, device=device), lt.asarray(b, device=device)), np.outer(a, b))
    close(L.outer(lt.asarray(a[:0], device=device), lt.asarray(b, device=device)), np.outer(a[:0], b))


@pytest.mark.parametrize("shapes, axis", [
    (((3,), (3,)), -1), (((4, 3), (3,)), -1), (((2, 1, 3), (5, 3)), -1), (((3, 4), (3, 4)), -2),
    (((2, 3, 4), (3, 1)), -2), (((3, 2), (3, 2)), 0), (((0, 3), (3,)), -1),
], ids=str)
def test_cross(device, shapes, axis):
    rng = np.random.default_rng(9)
    a, b = (rng.integers(-9, 9, s) for s in shapes)
    want = np.cross(a, b, axis=axis if axis >= 0 else None, axisa=axis, axisb=axis, axisc=axis)
    close(L.cross(lt.asarray(a, device=device), lt.asarray(b, device=device), axis=axis), want)
    af = a.astype(np.float32)
    close(L.cross(lt.asarray(af, device=device), lt.asarray(b, device=device), axis=axis),
          np.cross(af, b.astype(np.float64), axisa=axis, axisb=axis, axisc=axis))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
def test_matrix_power(device, n):
    rng = np.random.default_rng(10 + n)
    a = well_conditioned(rng, (2, 3, 3)) / 3
    close(L.matrix_power(lt.asarray(a, device=device), n), np.linalg.matrix_power(a, n), rtol=1e-12)
    f = a.astype(np.float32)
    close(L.matrix_power(lt.asarray(f, device=device), n), np.linalg.matrix_power(f, n), rtol=2e-5)
    if n >= 0:
        i = rng.integers(-3, 4, (3, 3))
        close(L.matrix_power(lt.asarray(i, device=device), n), np.linalg.matrix_power(i, n))


def test_matrix_power_of_empty_and_one_by_one(device):
    close(L.matrix_power(lt.asarray(np.zeros((0, 2, 2)), device=device), 3), np.zeros((0, 2, 2)))
    close(L.matrix_power(lt.asarray(np.full((1, 1), 2.0), device=device), -2), np.full((1, 1), 0.25))


# ---- norms -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (), (2, 0, 1)], ids=str)
def test_vector_norm(device, dtype, axis):
    rng = np.random.default_rng(12)
    a = rand(rng, (3, 4, 2), dtype)
    a[0, 1, 0] = 0.0
    x = lt.asarray(a, device=device)
    for ord in [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1, -2, 2.5]:
        for keepdims in (False, True):
            got = L.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
            with np.errstate(divide="ignore"):   # (negative orders of a zero)
                want = np.linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=ord)
            assert got.dtype == dtype
            close(got, want.astype(dtype.np), rtol=2e-5 if dtype is lt.float32 else 1e-12)


def test_vector_norm_of_integers_and_empty(device):
    a = np.array([[3, -4], [0, 0]], np.int16)
    got = L.vector_norm(lt.asarray(a, device=device), axis=1)
    close(got, np.array([5.0, 0.0]))
    close(L.vector_norm(lt.asarray(np.zeros((0, 3)), device=device), axis=0), np.zeros(3))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (1, 1), (0, 2, 2)], ids=str)
def test_matrix_norm(device, dtype, shape):
    rng = np.random.default_rng(13)
    a = rand(rng, shape, dtype)
    x = lt.asarray(a, device=device)
    for ord in ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]:
        for keepdims in (False, True):
            got = L.matrix_norm(x, keepdims=keepdims, ord=ord)
            want = np.linalg.matrix_norm(a, keepdims=keepdims, ord=ord).astype(dtype.np)
            close(got, want, rtol=2e-5 if dtype is lt.float32 else 1e-12)


# ---- errors ------------------------------------------------------------------------------------

def test_errors_name_the_shapes():
    square_only = [L.inv, L.det, L.slogdet, L.cholesky, L.eigh, L.eigvalsh, L.eig, L.eigvals,
                   lambda x: L.matrix_power(x, 2)]
    for f in square_only:
        with pytest.raises(ValueError, match=r"square.*\(2, 3\)"):
            f(lt.zeros((2, 3)))
    for f in square_only + [L.svd, L.svdvals, L.qr, L.pinv, L.matrix_rank, L.matrix_norm, L.diagonal, L.trace]:
        with pytest.raises(ValueError, match=r"\(\.\.\., M, N\); got shape \(3,\)"):
            f(lt.zeros(3))
    with pytest.raises(ValueError, match=r"x2 of shape \(4,\) does not fit x1 of shape \(3, 3\)"):
        L.solve(lt.zeros((3, 3)), lt.zeros(4))
    with pytest.raises(ValueError, match=r"x2 of shape \(2, 4, 1\) does not fit"):
        L.solve(lt.zeros((3, 3)), lt.zeros((2, 4, 1)))
    with pytest.raises(ValueError, match=r"batch axes of x1 \(2, 3, 3\) and x2 \(4, 3, 1\)"):
        L.solve(lt.zeros((2, 3, 3)), lt.zeros((4, 3, 1)))
    with pytest.raises(ValueError, match=r"size 3 in both operands; got shapes \(4,\) and \(3,\)"):
        L.cross(lt.zeros(4), lt.zeros(3))
    with pytest.raises(ValueError, match="out of range"):
        L.cross(lt.zeros((3, 3)), lt.zeros(3), axis=-2)
    with pytest.raises(ValueError, match=r"1-D tensors; got shapes \(2, 2\) and \(2,\)"):
        L.outer(lt.zeros((2, 2)), lt.zeros(2))
    with pytest.raises(ValueError, match="mode"):
        L.qr(lt.zeros((2, 2)), mode="r")
    with pytest.raises(ValueError, match="ord"):
        L.matrix_norm(lt.zeros((2, 2)), ord=3)
    with pytest.raises(ValueError, match="ord"):
        L.vector_norm(lt.zeros(2), ord="fro")
    with pytest.raises(TypeError, match="integer"):
        L.matrix_power(lt.zeros((2, 2)), 1.5)
    with pytest.raises(ValueError, match=r"rtol of shape \(3,\) does not broadcast to the batch shape \(2,\)"):
        L.pinv(lt.zeros((2, 3, 3)), rtol=lt.zeros(3))


# ---- gradients against finite differences (float64) -------------------------------------------

def check_gradient(f, *arrays, device="cpu"):
    return gradcheck.check_gradient(f, *arrays, device=device, rtol=1e-6, atol=1e-6)


def _sym(x):
    return (x + x.mT) * 0.5


def _spd(x):
    return x @ x.mT + lt.eye(x.shape[-1], dtype=lt.float64, device=x.device) * 3


def _sign_free_columns(v):
    """Each column times its first entry: a function of eigen/singular vectors that does not
    depend on their signs (which are arbitrary)."""
    return v * v[..., :1, :]


_g = np.random.default_rng(2024)
GRADIENT_CASES = {
    "inv": (L.inv, [well_conditioned(_g, (2, 3, 3))]),
    "solve-matrix-broadcast": (L.solve, [well_conditioned(_g, (2, 3, 3)), _g.standard_normal((3, 2))]),
    "solve-vector": (L.solve, [well_conditioned(_g, (3, 3)), _g.standard_normal(3)]),
    "det": (L.det, [well_conditioned(_g, (2, 3, 3))]),
    "slogdet": (lambda x: L.slogdet(x).logabsdet * 2 + L.slogdet(x).sign,
                [well_conditioned(_g, (3, 3)) - 6 * np.eye(3)]),
    "cholesky": (lambda x: L.cholesky(_spd(x)), [_g.standard_normal((2, 3, 3))]),
    "cholesky-upper": (lambda x: L.cholesky(_spd(x), upper=True), [_g.standard_normal((3, 3))]),
    "eigh": (lambda x: L.eigh(_sym(x)).eigenvalues[..., None] + _sign_free_columns(L.eigh(_sym(x)).eigenvectors),
             [_g.standard_normal((2, 4, 4))]),
    "eigvalsh": (lambda x: L.eigvalsh(_sym(x)), [_g.standard_normal((3, 3))]),
    "svdvals": (L.svdvals, [_g.standard_normal((2, 4, 3))]),
    "qr-square": (lambda x: L.qr(x).Q * 2 + L.qr(x).R, [_g.standard_normal((3, 3))]),
    "qr-tall": (lambda x: L.qr(x).Q.sum(axis=-2) + L.qr(x).R.sum(axis=-2), [_g.standard_normal((2, 5, 3))]),
    "qr-wide-complete": (lambda x: L.qr(x, mode="complete").Q.sum(axis=-1) + L.qr(x, mode="complete").R.sum(axis=-1),
                         [_g.standard_normal((3, 5))]),
    "pinv-tall": (L.pinv, [_g.standard_normal((4, 3))]),
    "pinv-wide": (L.pinv, [_g.standard_normal((2, 3, 4))]),
    "matrix_power-negative": (lambda x: L.matrix_power(x, -2), [well_conditioned(_g, (3, 3))]),
    "matrix_norm-fro": (lambda x: L.matrix_norm(x, keepdims=True), [_g.standard_normal((2, 3, 4))]),
    "matrix_norm-nuc": (lambda x: L.matrix_norm(x, ord="nuc"), [_g.standard_normal((3, 4))]),
    "matrix_norm-2": (lambda x: L.matrix_norm(x, ord=2), [_g.standard_normal((3, 4))]),
    "trace-diagonal": (lambda x: L.trace(x, offset=1) + L.diagonal(x, offset=-1).sum(axis=-1),
                       [_g.standard_normal((2, 3, 4))]),
    "cross-outer": (lambda a, b: L.cross(a, b) @ L.outer(a[0], b), [_g.standard_normal((2, 3)), _g.standard_normal(3)]),
}
for _shape in [(4, 3), (3, 4), (3, 3)]:
    for _full in (True, False):
        _k = min(_shape)
        GRADIENT_CASES[f"svd-{_shape}-full={_full}"] = (
            lambda x, full=_full, k=_k: (
                L.svd(x, full_matrices=full).S[..., None, :] * 3
                + _sign_free_columns(L.svd(x, full_matrices=full).U[..., :k])[..., :k, :]
                + _sign_free_columns(L.svd(x, full_matrices=full).Vh[..., :k, :].mT)[..., :k, :]),
            [_g.standard_normal(_shape)])
# complex matrices: conjugate transposes, and functions of the vectors that do not depend on their
# phases (eigh's and svd's vectors are defined up to one each)
def _complex(shape):
    return _g.standard_normal(shape) + 1j * _g.standard_normal(shape)


def _herm(x):
    return (x + lt.conj(x.mT)) * 0.5


def _hpd(x):
    return x @ lt.conj(x.mT) + lt.eye(x.shape[-1], dtype=x.dtype, device=x.device) * 3


def _phase_free_columns(v):
    return v * lt.conj(v[..., :1, :])


GRADIENT_CASES.update({
    "complex-inv": (L.inv, [well_conditioned(_g, (2, 3, 3)) + 0.5j * _g.standard_normal((2, 3, 3))]),
    "complex-solve": (L.solve, [well_conditioned(_g, (3, 3)) + 0.5j * _g.standard_normal((3, 3)), _complex((3, 2))]),
    "complex-det": (L.det, [_complex((2, 3, 3))]),
    "complex-slogdet": (lambda x: L.slogdet(x).logabsdet * 2 + L.slogdet(x).sign, [_complex((3, 3))]),
    "complex-cholesky": (lambda x: L.cholesky(_hpd(x)), [_complex((2, 3, 3))]),
    "complex-cholesky-upper": (lambda x: L.cholesky(_hpd(x), upper=True), [_complex((3, 3))]),
    "complex-eigh": (lambda x: L.eigh(_herm(x)).eigenvalues[..., None] + _phase_free_columns(L.eigh(_herm(x)).eigenvectors),
                     [_complex((2, 3, 3))]),
    "complex-eigvalsh": (lambda x: L.eigvalsh(_herm(x)), [_complex((3, 3))]),
    "eig": (lambda x: L.eig(x).eigenvalues[..., None, :] + _phase_free_columns(L.eig(x).eigenvectors),
            [_g.standard_normal((2, 3, 3))]),
    "complex-eig": (lambda x: L.eig(x).eigenvalues[..., None, :] + _phase_free_columns(L.eig(x).eigenvectors),
                    [_complex((3, 3))]),
    "eigvals": (L.eigvals, [_g.standard_normal((4, 4))]),
    "complex-eigvals": (L.eigvals, [_complex((2, 3, 3))]),
    "complex-svdvals": (L.svdvals, [_complex((2, 4, 3))]),
    "complex-qr-tall": (lambda x: L.qr(x).Q * 2 + L.qr(x).R.sum(axis=-2), [_complex((4, 3))]),
    "complex-qr-wide": (lambda x: L.qr(x).Q.sum(axis=-1) + L.qr(x).R.sum(axis=-1), [_complex((2, 3, 4))]),
    "complex-pinv": (L.pinv, [_complex((3, 4))]),
    "complex-matrix_norm-nuc": (lambda x: L.matrix_norm(x, ord="nuc"), [_complex((3, 4))]),
    "complex-vector_norm": (lambda x: L.vector_norm(x, axis=-1, ord=3), [_complex((3, 4))]),
})
for _shape in [(4, 3), (3, 4)]:
    _k = min(_shape)
    GRADIENT_CASES[f"complex-svd-{_shape}"] = (
        lambda x, k=_k: (L.svd(x, full_matrices=False).S[..., None, :] * 3
                         + _phase_free_columns(L.svd(x, full_matrices=False).U)[..., :k, :]
                         + _phase_free_columns(L.svd(x, full_matrices=False).Vh.mT)[..., :k, :]),
        [_complex(_shape)])
for _ord in [2, 1, math.inf, -math.inf, 3, 0.5, -1]:
    GRADIENT_CASES[f"vector_norm-{_ord}"] = (lambda x, o=_ord: L.vector_norm(x, axis=-1, ord=o),
                                             [_g.standard_normal((3, 4))])


@pytest.mark.parametrize("name", list(GRADIENT_CASES))
def test_gradient_matches_finite_differences(name):
    f, arrays = GRADIENT_CASES[name]
    check_gradient(f, *arrays)


def test_gradients_on_every_device(device):
    rng = np.random.default_rng(14)
    check_gradient(lambda x: L.svdvals(x) + L.det(x[..., :3]), rng.standard_normal((3, 4)), device=device)
    if has_fp64(device):   # (complex128: finite differences need the digits)
        z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
        check_gradient(lambda x: L.inv(x) * L.det(x) + L.eigvals(x)[..., None], z, device=device)


def test_qr_complete_of_a_tall_matrix_is_not_differentiable():
    x = lt.asarray(np.random.default_rng(15).standard_normal((4, 2)), requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='complete' is not differentiable"):
        L.qr(x, mode="complete").Q.sum().backward()


def test_svd_gradient_skips_the_vectors_beyond_k():
    """full_matrices=True: U's columns past min(M, N) are not unique, so no gradient flows
    through them (PyTorch's choice): the gradient equals the one through the first K only."""
    a = np.random.default_rng(16).standard_normal((4, 2))
    x = lt.asarray(a, requires_grad=True)
    L.svd(x).U.sum().backward()
    y = lt.asarray(a, requires_grad=True)
    L.svd(y).U[..., :2].sum().backward()
    close(x.grad, y.grad.numpy())


# ---- documentation ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in L.__all__ if n[0].islower()])
def test_docstring_examples_run(name):
    """tests/test_docstrings.py runs lt.*'s examples; lt.linalg's run here."""
    function = getattr(L, name)
    assert ">>> " in (function.__doc__ or ""), f"linalg.{name} has no example"
    test = doctest.DocTestParser().get_doctest(function.__doc__, {"lt": lt, "np": np}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = []
    runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)
