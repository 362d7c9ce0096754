"""LINALG, the opaque op of the linalg extension's decompositions and solvers: its rules.

A LINALG node is one result of one numpy.linalg routine. Its arg is (function, output, options):
`function` names a row of FUNCTIONS below, `output` says which of the routine's results the node
is (svd's U, S and Vh are three nodes of one input), `options` is a tuple of (name, value) pairs
(("full_matrices", True),). The step runs on the host with numpy (LAPACK), in the input's dtype:
float32 stays float32. A routine with several results runs once for each result a graph uses.

Sources: the matrices (..., M, N) first; solve's right-hand sides (..., M, K) and pinv's rtol
(...) second, with the first source's batch shape (the front end broadcasts them).

Failures: where LAPACK gives up on a matrix -- inv or solve of a singular matrix, cholesky of one
that is not positive definite, an SVD that does not converge (numpy raises LinAlgError) -- every
element of that matrix's result is nan, and the other matrices of the batch are computed as
usual. A lazy step has no caller to raise to (JAX makes the same choice).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .dtypes import COMPLEX_OF, DType, real_dtype

Shape = tuple[int, ...]
Options = dict[str, Any]


@dataclass(frozen=True)
class Function:
    arity: int                                                        # how many sources
    shapes: Callable[[tuple[Shape, ...], Options], tuple[Shape, ...]]  # every result's shape
    compute: Callable[[list[np.ndarray], Options], tuple[np.ndarray, ...]]   # every result


def _square(shapes, options):
    return (shapes[0],)


def _batch(shapes, options):
    return (shapes[0][:-2],)


def _k(shape: Shape) -> int:
    return min(shape[-2:])


def _svd_shapes(shapes, options):
    *batch, m, n = shapes[0]
    k = min(m, n)
    batch = tuple(batch)
    if options["full_matrices"]:
        return batch + (m, m), batch + (k,), batch + (n, n)
    return batch + (m, k), batch + (k,), batch + (k, n)


def _qr_shapes(shapes, options):
    *batch, m, n = shapes[0]
    batch = tuple(batch)
    if options["mode"] == "complete":
        return batch + (m, m), batch + (m, n)
    k = min(m, n)
    return batch + (m, k), batch + (k, n)


FUNCTIONS: dict[str, Function] = {
    "cholesky": Function(1, _square, lambda srcs, o: (np.linalg.cholesky(srcs[0], upper=o["upper"]),)),
    "det": Function(1, _batch, lambda srcs, o: (np.linalg.det(srcs[0]),)),
    "slogdet": Function(1, lambda shapes, o: (shapes[0][:-2],) * 2, lambda srcs, o: tuple(np.linalg.slogdet(srcs[0]))),
    "inv": Function(1, _square, lambda srcs, o: (np.linalg.inv(srcs[0]),)),
    "solve": Function(2, lambda shapes, o: (shapes[1],), lambda srcs, o: (np.linalg.solve(srcs[0], srcs[1]),)),
    "eigh": Function(1, lambda shapes, o: (shapes[0][:-1], shapes[0]), lambda srcs, o: tuple(np.linalg.eigh(srcs[0]))),
    "eigvalsh": Function(1, lambda shapes, o: (shapes[0][:-1],), lambda srcs, o: (np.linalg.eigvalsh(srcs[0]),)),
    # (a general matrix's eigenvalues and vectors are complex: numpy gives real ones where all are)
    "eig": Function(1, lambda shapes, o: (shapes[0][:-1], shapes[0]), lambda srcs, o: tuple(np.linalg.eig(srcs[0]))),
    "eigvals": Function(1, lambda shapes, o: (shapes[0][:-1],), lambda srcs, o: (np.linalg.eigvals(srcs[0]),)),
    "svd": Function(1, _svd_shapes,
                    lambda srcs, o: tuple(np.linalg.svd(srcs[0], full_matrices=o["full_matrices"]))),
    "svdvals": Function(1, lambda shapes, o: (shapes[0][:-2] + (_k(shapes[0]),),),
                        lambda srcs, o: (np.linalg.svd(srcs[0], compute_uv=False),)),
    "qr": Function(1, _qr_shapes, lambda srcs, o: tuple(np.linalg.qr(srcs[0], mode=o["mode"]))),
    # rtol: the relative cutoff of each matrix's singular values (numpy's pinv: a source of
    # the batch's shape, so it may be a tensor)
    "pinv": Function(2, lambda shapes, o: (shapes[0][:-2] + shapes[0][-1:] + shapes[0][-2:-1],),
                     lambda srcs, o: (np.linalg.pinv(srcs[0], rtol=srcs[1]),)),
}


def arity(arg: tuple) -> int:
    return FUNCTIONS[arg[0]].arity


def linalg_shape(shapes: tuple[Shape, ...], arg: tuple) -> Shape:
    name, output, options = arg
    return FUNCTIONS[name].shapes(shapes, dict(options))[output]


# the results that are real for complex input: eigenvalues of a Hermitian matrix, singular values,
# log|det|
_REAL_RESULTS = {("eigh", 0), ("eigvalsh", 0), ("svd", 1), ("svdvals", 0), ("slogdet", 1)}


def linalg_dtype(dtypes: tuple[DType, ...], arg: tuple) -> DType:
    """The input's dtype, or its parts' for the results that are real (see above); eig's and
    eigvals' complex ones of its precision."""
    if arg[0] in ("eig", "eigvals"):
        return COMPLEX_OF[real_dtype(dtypes[0])]
    return real_dtype(dtypes[0]) if (arg[0], arg[1]) in _REAL_RESULTS else dtypes[0]


def linalg_reference(srcs: list[np.ndarray], arg: tuple, dtype: DType) -> np.ndarray:
    """The numpy value of a LINALG node: its routine's result `output`, nan for the matrices
    LAPACK could not handle."""
    name, output, options = arg
    function, options = FUNCTIONS[name], dict(options)
    with np.errstate(all="ignore"):
        try:
            return np.asarray(function.compute(srcs, options)[output]).astype(dtype.np, copy=False)
        except np.linalg.LinAlgError:
            pass
        # a matrix of the batch failed: each on its own, nan where it fails
        shape = function.shapes(tuple(s.shape for s in srcs), options)[output]
        result = np.full(shape, np.nan, dtype.np)
        for index in np.ndindex(srcs[0].shape[:-2]):
            try:
                result[index] = function.compute([s[index] for s in srcs], options)[output]
            except np.linalg.LinAlgError:
                pass
        return result
