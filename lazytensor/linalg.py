"""The Array API's linalg extension, as `lt.linalg`: products, decompositions, solvers, norms.

Products, diagonals, traces, cross products, matrix powers and norms are ordinary lazy ops: they
fuse into kernels like any other. Decompositions and solvers -- cholesky, det, eigh, eigvalsh,
inv, pinv, qr, slogdet, solve, svd, svdvals, and through svdvals matrix_rank and the 2, -2 and
'nuc' matrix norms -- are opaque steps of the graph (one LINALG node per result, ir/linalg.py):
lazy too, each computed on realize by numpy's LAPACK routines on the host, in the input's dtype.

Every function takes stacks of matrices: leading axes `...` are a batch. Dtypes: float32 and
float64 keep theirs; integers and bool decompose in float64 (numpy's rule), float16 in float32
rounded back (`_compute_dtype` decides, the one place to extend for complex types).

Singular input: where LAPACK fails on a matrix (inv or solve of a singular matrix, cholesky of a
matrix that is not positive definite, an SVD that does not converge), that matrix's result is
all nan and the rest of the batch is computed: nothing raises at realize, as in JAX (numpy and
PyTorch raise). Gradients: see lazytensor/linalg_grad.py.
"""
from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from .ir.dtypes import HALF_FLOATS, DType, float_limits, float32, float64, int64, real_dtype, result_type
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .creation import asarray, eye, zeros
from .ir.arith import cast
from .floatexpr import matmul_node
from .manipulation import matrix_transpose, tensordot, vecdot
from .movement import stack
from .operands import as_tensor, broadcast_node, broadcast_shapes, normalize_axes, same_device
from .tensor import Tensor


def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product with numpy's rules: 1-D operands are vectors, leading axes broadcast.

    >>> (lt.ones((2, 3)) @ lt.ones((3, 4))).shape
    (2, 4)
    """
    a = as_tensor(a, like=b)   # (array-likes go to the other operand's device)
    b = as_tensor(b, like=a)
    device = a.device
    if b.device != device:
        raise ValueError(f"matmul: operands are on different devices ({a.device} and {b.device})")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both operands need at least one axis; got shapes {a.shape} and {b.shape} "
                         "(use * to multiply by a scalar)")
    a_shape = a.shape if a.ndim > 1 else (1,) + a.shape   # (a vector is a row on the left, a column on the right)
    b_shape = b.shape if b.ndim > 1 else b.shape + (1,)
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
                         f"{k} (last axis of the first) != {k2} (axis -2 of the second)")
    try:   # (checked here: the message names the operands' shapes)
        broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: the batch axes of shapes {a.shape} and {b.shape} do not broadcast") from None
    return Tensor(matmul_node(a.node, b.node, result_type(a.dtype, b.dtype)), device)


# ---- results with names (the standard's) -------------------------------------------------------

class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


# ---- checks and dtypes -------------------------------------------------------------------------

def _matrices(x: Any, name: str, square: bool = False) -> Tensor:
    """x as a tensor of matrices (..., M, N) (square ones where asked), or a ValueError naming its shape."""
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"linalg.{name}: needs a matrix or a stack of matrices (..., M, N); got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.{name}: needs square matrices (..., M, M); got shape {x.shape} "
                         f"({x.shape[-2]}x{x.shape[-1]} matrices)")
    return x


def _compute_dtype(dtype: DType, name: str) -> DType:
    """The dtype LAPACK works in for a `dtype` input: float32, float64, complex64 and complex128
    their own, float16 in float32, integers and bool in float64 (numpy's rule)."""
    if dtype is float32 or dtype is float64 or dtype.is_complex:
        return dtype
    return float32 if dtype in HALF_FLOATS else float64


def _float(x: Tensor, name: str) -> Tensor:
    """x in the float dtype a norm is computed in: floats their own, integers and bool float64;
    complex values their magnitudes (every norm here is one of |x|)."""
    if x.dtype.is_complex:
        return x.abs()
    return x if x.dtype.is_float else x.astype(float64)


def _decompose(name: str, x: Tensor, outputs: int, options: tuple = (), extra: Sequence[Node] = ()) -> list[Tensor]:
    """The `outputs` results of LINALG routine `name` of x: one node each, computed in x's compute
    dtype and given back in x's float dtype. `extra` are further sources (already in that dtype)."""
    compute = _compute_dtype(x.dtype, name)
    source = cast(x.node, compute)
    results = [make(Op.LINALG, source, *extra, arg=(name, i, options)) for i in range(outputs)]
    # (float16 is given back as float16, bfloat16 as bfloat16; a complex input's real results --
    # eigenvalues, singular values, log|det| -- stay real, and eig's complex results complex64)
    return [x._new(cast(r, x.dtype) if x.dtype in HALF_FLOATS and not r.dtype.is_complex else r) for r in results]


def _rtol_node(x: Tensor, rtol: Any, name: str) -> Node:
    """pinv's and matrix_rank's relative cutoff as a node of x's batch shape, in x's compute
    dtype (its parts' for complex x: a cutoff is real); None means max(M, N) * eps, the
    standard's default."""
    dtype = real_dtype(_compute_dtype(x.dtype, name))
    batch = x.shape[:-2]
    if rtol is None:
        rtol = max(x.shape[-2:]) * float_limits(dtype).eps
    if not isinstance(rtol, Tensor):
        rtol = np.asarray(rtol)
        if rtol.ndim == 0:
            return const(float(rtol), dtype, batch)
        rtol = asarray(rtol, device=x.device)
    same_device(x, rtol, name=f"linalg.{name}")
    try:
        fits = broadcast_shapes(rtol.shape, batch) == batch
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"linalg.{name}: rtol of shape {rtol.shape} does not broadcast to the batch shape {batch} "
                         f"of x (shape {x.shape})")
    return broadcast_node(cast(rtol.node, dtype), batch)


# ---- decompositions and solvers: opaque steps --------------------------------------------------

def cholesky(x: Any, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix: lower L with x = L @ L.mT,
    or upper U with x = U.mT @ U. The lower (upper) triangle of x is read. A matrix that is not
    positive definite gives a matrix of nan (no error).

    >>> lt.linalg.cholesky(lt.asarray([[4.0, 2.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    x = _matrices(x, "cholesky", square=True)
    return _decompose("cholesky", x, 1, (("upper", bool(upper)),))[0]


def det(x: Any, /) -> Tensor:
    """The determinant of each square matrix (shape x.shape[:-2]), by LU factorization.

    >>> lt.linalg.det(lt.asarray([[1.0, 2.0], [3.0, 4.0]])).item()
    -2.0...
    """
    x = _matrices(x, "det", square=True)
    return _decompose("det", x, 1)[0]


def slogdet(x: Any, /) -> SlogdetResult:
    """(sign, logabsdet) of each square matrix's determinant: det = sign * exp(logabsdet),
    without overflow; a singular matrix gives (0, -inf).

    >>> sign, logabsdet = lt.linalg.slogdet(lt.asarray([[0.0, 2.0], [3.0, 0.0]]))
    >>> sign.item(), round(logabsdet.item(), 6)
    (-1.0, 1.791759)
    """
    x = _matrices(x, "slogdet", square=True)
    return SlogdetResult(*_decompose("slogdet", x, 2))


def inv(x: Any, /) -> Tensor:
    """The inverse of each square matrix. A singular matrix gives a matrix of nan (JAX's choice;
    numpy and PyTorch raise), and the other matrices of a stack are still inverted.

    >>> lt.linalg.inv(lt.asarray([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    x = _matrices(x, "inv", square=True)
    return _decompose("inv", x, 1)[0]


def solve(x1: Any, x2: Any, /) -> Tensor:
    """X with x1 @ X = x2, for square x1 (..., M, M) and x2 of shape (M,) (one right-hand side,
    result (..., M)) or (..., M, K) (result (..., M, K)); the batch axes broadcast. A singular
    x1 gives nan (no error).

    >>> lt.linalg.solve(lt.asarray([[2.0, 0.0], [0.0, 4.0]]), lt.asarray([1.0, 1.0])).tolist()
    [0.5, 0.25]
    """
    a = _matrices(as_tensor(x1, like=x2), "solve", square=True)
    b = as_tensor(x2, like=a)
    device = same_device(a, b, name="linalg.solve")
    m = a.shape[-1]
    vector = b.ndim == 1
    if b.ndim == 0 or b.shape[-1 if vector else -2] != m:
        raise ValueError(f"linalg.solve: x2 of shape {b.shape} does not fit x1 of shape {a.shape}: it needs shape "
                         f"({m},) or (..., {m}, K)")
    b_shape = (m, 1) if vector else b.shape
    try:
        batch = broadcast_shapes(a.shape[:-2], b_shape[:-2])
    except ValueError:
        raise ValueError(f"linalg.solve: the batch axes of x1 {a.shape} and x2 {b.shape} do not broadcast") from None
    dtype = result_type(a.dtype, b.dtype)
    compute = _compute_dtype(dtype, "solve")
    left = broadcast_node(cast(a.node, compute), batch + (m, m))
    right = broadcast_node(make(Op.RESHAPE, cast(b.node, compute), arg=b_shape), batch + b_shape[-2:])
    x = make(Op.LINALG, left, right, arg=("solve", 0, ()))
    if vector:
        x = make(Op.RESHAPE, x, arg=batch + (m,))
    return Tensor(cast(x, dtype if dtype in HALF_FLOATS else compute), device)


def eigh(x: Any, /) -> EighResult:
    """(eigenvalues, eigenvectors) of each symmetric matrix: eigenvalues in ascending order
    (..., M), eigenvectors as the columns of (..., M, M), so x = V @ diag(w) @ V.mT. Only the
    lower triangle of x is read.

    >>> w, v = lt.linalg.eigh(lt.asarray([[2.0, 1.0], [1.0, 2.0]]))
    >>> w.tolist()
    [1.0, 3.0]
    """
    x = _matrices(x, "eigh", square=True)
    return EighResult(*_decompose("eigh", x, 2))


def eigvalsh(x: Any, /) -> Tensor:
    """The eigenvalues of each symmetric matrix, ascending (..., M) (the lower triangle is read).

    >>> lt.linalg.eigvalsh(lt.asarray([[2.0, 1.0], [1.0, 2.0]])).tolist()
    [1.0, 3.0]
    """
    x = _matrices(x, "eigvalsh", square=True)
    return _decompose("eigvalsh", x, 1)[0]


def eig(x: Any, /) -> EigResult:
    """(eigenvalues, eigenvectors) of each square matrix, both complex (complex64 for float32
    input, complex128 for float64): x = V @ diag(w) @ inv(V), eigenvectors as the columns of V,
    each of norm 1 (LAPACK's order; for symmetric or Hermitian matrices prefer `eigh`).

    >>> w, v = lt.linalg.eig(lt.asarray([[0.0, -1.0], [1.0, 0.0]]))
    >>> w.tolist()
    [1j, -1j]
    """
    x = _matrices(x, "eig", square=True)
    return EigResult(*_decompose("eig", x, 2))


def eigvals(x: Any, /) -> Tensor:
    """The eigenvalues of each square matrix, complex (..., M) (as `eig`'s).

    >>> lt.linalg.eigvals(lt.asarray([[2.0, 0.0], [0.0, 3.0]])).tolist()
    [(2+0j), (3+0j)]
    """
    x = _matrices(x, "eigvals", square=True)
    return _decompose("eigvals", x, 1)[0]


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """(U, S, Vh) with x = U[..., :, :K] @ diag(S) @ Vh[..., :K, :], K = min(M, N): singular
    values S (..., K) in descending order; U (..., M, M) and Vh (..., N, N), or (..., M, K) and
    (..., K, N) with full_matrices=False. Each of the three is one step that runs the SVD.

    >>> u, s, vh = lt.linalg.svd(lt.asarray([[3.0, 0.0], [0.0, -4.0]]))
    >>> s.tolist()
    [4.0, 3.0]
    """
    x = _matrices(x, "svd")
    return SVDResult(*_decompose("svd", x, 3, (("full_matrices", bool(full_matrices)),)))


def svdvals(x: Any, /) -> Tensor:
    """The singular values of each matrix, descending (..., min(M, N)).

    >>> lt.linalg.svdvals(lt.asarray([[3.0, 0.0], [0.0, -4.0]])).tolist()
    [4.0, 3.0]
    """
    x = _matrices(x, "svdvals")
    return _decompose("svdvals", x, 1)[0]


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """(Q, R) with x = Q @ R, Q with orthonormal columns and R upper triangular: Q (..., M, K)
    and R (..., K, N), K = min(M, N), or with mode='complete' Q (..., M, M) and R (..., M, N).
    (R's diagonal may be negative: LAPACK's Householder signs.)

    >>> q, r = lt.linalg.qr(lt.asarray([[3.0, 1.0], [4.0, 2.0]]))
    >>> [[round(v, 6) for v in row] for row in r.tolist()]
    [[-5.0, -2.2], [0.0, 0.4]]
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', not {mode!r}")
    x = _matrices(x, "qr")
    return QRResult(*_decompose("qr", x, 2, (("mode", mode),)))


def pinv(x: Any, /, *, rtol: Optional[Union[float, Tensor]] = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix, (..., N, M): singular values at most
    rtol times the largest count as zero (rtol: a float, or a tensor broadcasting to the batch
    shape x.shape[:-2]; default max(M, N) * eps).

    >>> lt.linalg.pinv(lt.asarray([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    x = _matrices(x, "pinv")
    return _decompose("pinv", x, 1, extra=[_rtol_node(x, rtol, "pinv")])[0]


def matrix_rank(x: Any, /, *, rtol: Optional[Union[float, Tensor]] = None) -> Tensor:
    """The rank of each matrix (int64, shape x.shape[:-2]): how many singular values exceed rtol
    times the largest (rtol as in pinv; default max(M, N) * eps).

    >>> lt.linalg.matrix_rank(lt.asarray([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    x = _matrices(x, "matrix_rank")
    batch = x.shape[:-2]
    if min(x.shape[-2:]) == 0:   # (no singular values: no largest one)
        return zeros(batch, dtype=int64, device=x.device)
    s = svdvals(x)
    rtol = Tensor(make(Op.RESHAPE, _rtol_node(x, rtol, "matrix_rank"), arg=batch + (1,)), x.device)
    return (s > s.max(axis=-1, keepdims=True) * rtol).sum(axis=-1)


# ---- lazy ops: products, diagonals, powers ------------------------------------------------------

def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """Diagonal `offset` of each matrix (above the main one for offset > 0, below for < 0), as
    the last axis: a view, no copy.

    >>> lt.linalg.diagonal(lt.asarray([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    x = _matrices(x, "diagonal")
    offset = operator.index(offset)
    *batch, m, n = x.shape
    if offset >= 0:
        length, start = max(0, min(m, n - offset)), offset
    else:
        length, start = max(0, min(m + offset, n)), -offset * n
    flat = x.reshape(tuple(batch) + (m * n,))
    if length == 0:
        return flat[..., 0:0]
    # element (i, i + offset) of a row-major matrix is flat element start + i * (n + 1)
    return flat[..., start:start + (length - 1) * (n + 1) + 1:n + 1]


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of diagonal `offset` of each matrix; integers sum in int64 (unsigned in uint64),
    floats in their own dtype, or in `dtype` where given.

    >>> lt.linalg.trace(lt.asarray([[1, 2], [3, 4]])).item()
    5
    """
    return diagonal(x, offset=offset).sum(axis=-1, dtype=dtype)


def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two vectors: out[i, j] = x1[i] * x2[j] (promoted like *).

    >>> lt.linalg.outer(lt.asarray([1, 2]), lt.asarray([3, 4, 5])).tolist()
    [[3, 4, 5], [6, 8, 10]]
    """
    a, b = as_tensor(x1, like=x2), as_tensor(x2, like=x1)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"linalg.outer: needs two 1-D tensors; got shapes {a.shape} and {b.shape}")
    return a.reshape(a.shape[0], 1) * b.reshape(1, b.shape[0])


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along `axis` (negative: counted from the last axis of
    both), the other axes broadcasting.

    >>> lt.linalg.cross(lt.asarray([1, 0, 0]), lt.asarray([0, 1, 0])).tolist()
    [0, 0, 1]
    """
    a, b = as_tensor(x1, like=x2), as_tensor(x2, like=x1)
    same_device(a, b, name="linalg.cross")
    axis = operator.index(axis)
    if axis >= 0:   # (the standard asks for negative axes; a positive one is unambiguous only here)
        if a.ndim != b.ndim:
            raise ValueError(f"linalg.cross: a non-negative axis ({axis}) needs operands of one rank; got shapes "
                             f"{a.shape} and {b.shape} (use a negative axis)")
        axis -= a.ndim
    if not -min(a.ndim, b.ndim) <= axis < 0:
        raise ValueError(f"linalg.cross: axis {axis} is out of range for shapes {a.shape} and {b.shape}")
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError(f"linalg.cross: axis {axis} must have size 3 in both operands; got shapes {a.shape} and "
                         f"{b.shape}")
    dtype = result_type(a.dtype, b.dtype)
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    after = (slice(None),) * (-axis - 1)
    (a0, a1, a2), (b0, b1, b2) = [[t[(Ellipsis, i) + after] for i in range(3)] for t in (a, b)]
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis)


def matrix_power(x: Any, n: int, /) -> Tensor:
    """Each square matrix to the integer power n: repeated squaring (lazy products); n = 0 gives
    the identity, n < 0 powers of the inverse. Integer matrices stay integer for n >= 0.

    >>> lt.linalg.matrix_power(lt.asarray([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
    x = _matrices(x, "matrix_power", square=True)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"linalg.matrix_power: the exponent must be an integer, not {n!r}") from None
    if n == 0:
        identity = eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return Tensor(broadcast_node(identity.node, x.shape), x.device)
    if n < 0:
        x, n = inv(x), -n
    # numpy's order: the bits of n from the lowest, x squared for each
    result: Optional[Tensor] = None
    square: Optional[Tensor] = None
    while n > 0:
        square = x if square is None else square @ square
        n, bit = divmod(n, 2)
        if bit:
            result = square if result is None else result @ square
    return result


# ---- norms -------------------------------------------------------------------------------------

def vector_norm(x: Any, /, *, axis: Optional[Union[int, tuple[int, ...]]] = None, keepdims: bool = False,
                ord: Union[int, float] = 2) -> Tensor:
    """The vector p-norm over `axis` (None: all of x; an int or tuple of ints): ord 2 (default),
    1, inf, -inf, 0 (the count of nonzeros), or any other p: sum(|x|**p)**(1/p). Floats keep
    their dtype; integers give float64.

    >>> lt.linalg.vector_norm(lt.asarray([3.0, -4.0])).item()
    5.0
    """
    x = _float(as_tensor(x), "vector_norm")
    axes = normalize_axes(axis, x.ndim)
    if isinstance(ord, str) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise ValueError(f"linalg.vector_norm: ord must be a number (or +-inf), not {ord!r}")
    ord = float(ord)
    absolute = x.abs()
    if ord == 2:
        result = (x * x).sum(axis=axes, keepdims=keepdims).sqrt()
    elif ord == 1:
        result = absolute.sum(axis=axes, keepdims=keepdims)
    elif ord == math.inf:
        result = absolute.max(axis=axes, keepdims=keepdims)
    elif ord == -math.inf:
        result = absolute.min(axis=axes, keepdims=keepdims)
    elif ord == 0:
        result = (x != 0).astype(x.dtype).sum(axis=axes, keepdims=keepdims)
    elif math.isnan(ord):
        raise ValueError("linalg.vector_norm: ord must not be nan")
    else:
        result = (absolute ** ord).sum(axis=axes, keepdims=keepdims) ** (1.0 / ord)
    return result


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Optional[Union[int, float, str]] = "fro") -> Tensor:
    """The norm of each matrix: 'fro' (default, sqrt of the sum of squares), 'nuc' (sum of the
    singular values), 2 / -2 (largest / smallest singular value), 1 / -1 (largest / smallest
    column sum of |x|), inf / -inf (largest / smallest row sum of |x|).

    >>> lt.linalg.matrix_norm(lt.asarray([[3.0, 0.0], [0.0, 4.0]])).item()
    5.0
    """
    matrices = _matrices(x, "matrix_norm")
    x = _float(matrices, "matrix_norm")   # (|x| for complex x; the singular values are matrices')
    if isinstance(ord, str):
        if ord == "fro":
            result = (x * x).sum(axis=(-2, -1)).sqrt()
        elif ord == "nuc":
            result = svdvals(matrices).sum(axis=-1)
        else:
            raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, not {ord!r}")
    elif ord in (2, -2):
        s = svdvals(matrices)
        result = s.max(axis=-1) if ord == 2 else s.min(axis=-1)
    elif ord in (1, -1, math.inf, -math.inf):
        sums = x.abs().sum(axis=-2 if ord in (1, -1) else -1)
        result = sums.max(axis=-1) if ord > 0 else sums.min(axis=-1)
    else:
        raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, not {ord!r}")
    return result.reshape(result.shape + (1, 1)) if keepdims else result


__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm", "EigResult", "EighResult", "QRResult", "SlogdetResult",
           "SVDResult"]
