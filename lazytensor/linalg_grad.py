"""Gradient rules of LINALG nodes (the linalg extension's decompositions and solvers).

autograd.py's table sends Op.LINALG here (linalg_rule); each routine has one rule, given the gradient `g`
of one result node (`out`, result `out.arg[1]`) and giving the gradients of the sources. A
routine with several results (svd's U, S, Vh) is several nodes: each result's rule adds its part
(the formulas are linear in the results' gradients), and the other results it needs are the
same nodes again (hash-consing: one step each). The formulas are PyTorch's (real case; for
complex matrices each transpose is the conjugate transpose, written ^T below):

  inv       X = A^-1:          gA = -X^T g X^T
  solve     X = A^-1 B:        gB = solve(A^T, g), gA = -gB X^T
  det       d = det A:         gA = g d A^-T
  slogdet   (sign, log|d|):    gA = g A^-T (the sign is piecewise constant: no gradient)
  cholesky  A = L L^T:         gA = sym(L^-T Phi(L^T g) L^-1), Phi: the lower triangle, diagonal halved
  eigh      A = V diag(w) V^T: gA = V (diag(gw) + skew(V^T gV) / E) V^T, E_ij = w_j - w_i
  eig       A = V diag(w) V^-1: gA = V^-H (diag(gw) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H
            (the vectors have norm 1), its real part for a real A
  svd       A = U diag(S) Vh:  PyTorch's svd_backward, with the first K = min(M, N) singular vectors
  qr        A = Q R:           TensorFlow's QrGrad (deep, square and wide matrices)
  pinv                         PyTorch's pinv_backward

They hold where the function is differentiable: invertible matrices (inv, solve, det, slogdet;
a singular one gives nan), distinct eigenvalues and distinct nonzero singular values (eigh's and
svd's vectors), full-rank R (qr), constant rank (pinv). With full_matrices=True, svd's columns of
U and rows of Vh past K are not unique: no gradient flows through them (as in PyTorch).

Complex matrices: as PyTorch -- det by conj(d), slogdet's sign through the phase, svd's phase
term (i Im(U^H gU)_kk / S_k), qr with R's real diagonal; eigh's and svd's vectors are defined up
to a phase each, so only losses that do not depend on those phases have a gradient (as there).
"""
from __future__ import annotations

from typing import Optional

from .grad_rules import Grads, _add, _c, _complex, _conj, _div, _iota, _mul, _neg, _sub, _where
from .ir.arith import cast, sum_of_products
from .ir.graph import Node
from .ir.ops import Op
from .ir.rules import make


# ---- node helpers: stacks of matrices -----------------------------------------------------------

def _mT(a: Node) -> Node:
    """The (conjugate) transpose of each matrix of the stack."""
    n = len(a.shape)
    return _conj(make(Op.PERMUTE, a, arg=tuple(range(n - 2)) + (n - 1, n - 2)))


def _mm(a: Node, b: Node) -> Node:
    """a @ b for stacks of one batch shape, (..., m, k) @ (..., k, n)."""
    *batch, m, k = a.shape
    n = b.shape[-1]
    full = tuple(batch) + (m, k, n)
    left = make(Op.EXPAND, make(Op.RESHAPE, a, arg=tuple(batch) + (m, k, 1)), arg=full)
    right = make(Op.EXPAND, make(Op.RESHAPE, b, arg=tuple(batch) + (1, k, n)), arg=full)
    return make(Op.RESHAPE, sum_of_products(left, right, (len(full) - 2,), a.dtype), arg=tuple(batch) + (m, n))


def _columns(v: Node, shape: tuple[int, ...]) -> Node:
    """v (..., n) as the columns' factor of a (..., m, n) stack: v[..., None, :] broadcast."""
    return make(Op.EXPAND, make(Op.RESHAPE, v, arg=v.shape[:-1] + (1, v.shape[-1])), arg=shape)


def _rows(v: Node, shape: tuple[int, ...]) -> Node:
    """v (..., m) as the rows' factor of a (..., m, n) stack: v[..., :, None] broadcast."""
    return make(Op.EXPAND, make(Op.RESHAPE, v, arg=v.shape + (1,)), arg=shape)


def _per_matrix(v: Node, shape: tuple[int, ...]) -> Node:
    """v (...) (one value a matrix) broadcast over the (..., m, n) stack."""
    return make(Op.EXPAND, make(Op.RESHAPE, v, arg=v.shape + (1, 1)), arg=shape)


def _band(shape: tuple[int, ...], lower: bool) -> Node:
    """A bool (..., n, n) mask: the lower triangle with the diagonal (lower), or the diagonal."""
    n = shape[-1]
    square = (n, n)
    rows = make(Op.EXPAND, _iota(n, 0, 2), arg=square)
    cols = make(Op.EXPAND, _iota(n, 1, 2), arg=square)
    mask = make(Op.CMPLE if lower else Op.CMPEQ, cols, rows)
    return make(Op.EXPAND, make(Op.RESHAPE, mask, arg=(1,) * (len(shape) - 2) + square), arg=shape)


def _shrink(a: Node, rows: Optional[int] = None, cols: Optional[int] = None) -> Node:
    """a[..., :rows, :cols]."""
    *batch, m, n = a.shape
    rows, cols = m if rows is None else rows, n if cols is None else cols
    if (rows, cols) == (m, n):
        return a
    return make(Op.SHRINK, a, arg=tuple((0, b, 1) for b in batch) + ((0, rows, 1), (0, cols, 1)))


def _pad_columns(a: Node, before: int, after: int) -> Node:
    return make(Op.PAD, a, arg=((0, 0),) * (len(a.shape) - 1) + ((before, after),))


def _linalg(name: str, *src: Node, output: int = 0, options: tuple = ()) -> Node:
    return make(Op.LINALG, *src, arg=(name, output, options))


def _inverse_transposed_times(x: Node, r: Node) -> Node:
    """x R^-T = (R^-1 x^T)^T, by a solve."""
    return _mT(_linalg("solve", r, _mT(x)))


# ---- the rules ---------------------------------------------------------------------------------

def _inv(g: Node, out: Node, options: dict) -> Grads:
    xt = _mT(out)
    return (_neg(_mm(_mm(xt, g), xt)),)


def _solve(g: Node, out: Node, options: dict) -> Grads:
    a, _ = out.src
    gb = _linalg("solve", _mT(a), g)
    return _neg(_mm(gb, _mT(out))), gb


def _det(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    return (_mul(_per_matrix(_mul(g, _conj(out)), a.shape), _mT(_linalg("inv", a))),)


def _slogdet(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    if out.arg[1] == 0:   # the sign: piecewise constant when real; a complex one turns with the phase
        if not a.dtype.is_complex:
            return (None,)
        turn = make(Op.IMAG, _mul(g, _conj(out)))   # i Im(g conj(sign)) A^-H
        g = _complex(_c(0, turn), turn)
    return (_mul(_per_matrix(cast(g, a.dtype), a.shape), _mT(_linalg("inv", a))),)


def _cholesky(g: Node, out: Node, options: dict) -> Grads:
    lower, gl = (_mT(out), _mT(g)) if options["upper"] else (out, g)
    phi = _mm(_mT(lower), gl)
    half = _where(_band(phi.shape, lower=False), _c(0.5, phi), _c(1, phi))
    phi = _where(_band(phi.shape, lower=True), _mul(phi, half), _c(0, phi))
    inverse = _linalg("inv", lower)
    ga = _mm(_mm(_mT(inverse), phi), inverse)
    return (_mul(_add(ga, _mT(ga)), _c(0.5, ga)),)


def _eigh(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    vectors = _linalg("eigh", a, output=1)
    if out.arg[1] == 0:   # the eigenvalues: V diag(g) V^T
        return (_mm(_mul(vectors, _columns(cast(g, a.dtype), a.shape)), _mT(vectors)),)
    values = _linalg("eigh", a, output=0)
    vtg = _mm(_mT(vectors), g)
    skew = _mul(_sub(vtg, _mT(vtg)), _c(0.5, vtg))
    gaps = _sub(_columns(values, a.shape), _rows(values, a.shape))   # w_j - w_i
    gaps = _where(_band(a.shape, lower=False), _c(1, gaps), gaps)
    return (_mm(_mm(vectors, _div(skew, cast(gaps, a.dtype))), _mT(vectors)),)


def _eigvalsh(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    vectors = _linalg("eigh", a, output=1)
    return (_mm(_mul(vectors, _columns(cast(g, a.dtype), a.shape)), _mT(vectors)),)


def _eig(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    vectors = _linalg("eig", a, output=1)
    vh = _mT(vectors)
    if out.arg[0] == "eigvals" or out.arg[1] == 0:   # the eigenvalues: V^-H diag(g) V^H
        inner = _mul(_rows(g, vh.shape), vh)
    else:
        values = _linalg("eig", a, output=0)
        vhg = _mm(vh, g)
        diagonal = _band(vhg.shape, lower=False)
        scale = make(Op.SUM, _where(diagonal, make(Op.REAL, vhg), _c(0, make(Op.REAL, vhg))), arg=(len(a.shape) - 2,))
        vhg = _sub(vhg, _mm(vh, _mul(vectors, cast(make(Op.EXPAND, scale, arg=vhg.shape), vhg.dtype))))
        gaps = _conj(_sub(_columns(values, vhg.shape), _rows(values, vhg.shape)))   # conj(w_j - w_i)
        gaps = _where(diagonal, _c(1, gaps), gaps)
        inner = _mm(_div(vhg, gaps), vh)
    ga = _linalg("solve", vh, inner)
    return (ga if a.dtype.is_complex else make(Op.REAL, ga),)


def _svd_parts(a: Node, options: tuple) -> tuple[Node, Node, Node]:
    """(U, S, Vh) of `a` with K columns of U and K rows of Vh: the forward's nodes, narrowed."""
    k = min(a.shape[-2:])
    u, s, vh = (_linalg("svd", a, output=i, options=options) for i in range(3))
    return _shrink(u, cols=k), s, _shrink(vh, rows=k)


def _svd(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    *_, m, n = a.shape
    k = min(m, n)
    u, s, vh = _svd_parts(a, out.arg[2])
    output = out.arg[1]
    if output == 1:
        return (_svd_values(g, u, vh),)
    if k == 0:
        return (_c(0, a),)
    square = a.shape[:-2] + (k, k)
    real_s, s = s, cast(s, a.dtype)   # (scaling complex vectors: S as complex)
    s2 = _mul(s, s)
    gaps = _sub(_columns(s2, square), _rows(s2, square))   # E_jk = S_k^2 - S_j^2, 1 on the diagonal
    gaps = _where(_band(square, lower=False), _c(1, gaps), gaps)
    if output == 0:
        gu = _shrink(g, cols=k)
        utg = _mm(_mT(u), gu)
        inner = _div(_mul(_sub(utg, _mT(utg)), _columns(s, square)), gaps)
        if a.dtype.is_complex:   # the phase: i Im(U^H gU)_kk / S_k on the diagonal (and none from Vh's)
            phase = _div(make(Op.IMAG, utg), _columns(real_s, square))
            inner = _where(_band(square, lower=False), _complex(_c(0, phase), phase), inner)
        ga = _mm(u, inner)
        if m > n:   # the part of gU outside U's span: (I - U U^T) gU S^-1
            scaled = _div(gu, _columns(s, gu.shape))
            ga = _add(ga, _sub(scaled, _mm(u, _mm(_mT(u), scaled))))
        return (_mm(ga, vh),)
    gvh = _shrink(g, rows=k)
    vhgv = _mm(vh, _mT(gvh))
    inner = _div(_mul(_rows(s, square), _sub(vhgv, _mT(vhgv))), gaps)
    if a.dtype.is_complex:   # (the phase is all U's: see above)
        inner = _where(_band(square, lower=False), _c(0, inner), inner)
    ga = _mm(inner, vh)
    if m < n:   # S^-1 gVh (I - V Vh)
        scaled = _div(gvh, _rows(s, gvh.shape))
        ga = _add(ga, _sub(scaled, _mm(_mm(scaled, _mT(vh)), vh)))
    return (_mm(u, ga),)


def _svd_values(g: Node, u: Node, vh: Node) -> Node:
    """U diag(gS) Vh."""
    return _mm(_mul(u, _columns(cast(g, u.dtype), u.shape)), vh)


def _svdvals(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    u, _, vh = _svd_parts(a, (("full_matrices", False),))
    return (_svd_values(g, u, vh),)


def _qr_deep(q: Node, r: Node, gq: Optional[Node], gr: Optional[Node]) -> Node:
    """A = Q R with R square (M >= N): TensorFlow's _QrGradSquareAndDeepMatrices,
    gA = Q (gR + tril(Q^T gQ - gQ^T Q + R gR^T - gR R^T) R^-T) + (gQ - Q Q^T gQ) R^-T
    (complex: R's diagonal is real, so Q^H dQ's diagonal is i Im((Q^H dA R^-1)_kk), which halves
    the tril's diagonal)."""
    inner: Optional[Node] = None
    if gq is not None:
        qtg = _mm(_mT(q), gq)
        inner = _sub(qtg, _mT(qtg))
    if gr is not None:
        rgt = _mm(r, _mT(gr))
        inner = _add(inner, _sub(rgt, _mT(rgt))) if inner is not None else _sub(rgt, _mT(rgt))
    inner = _where(_band(inner.shape, lower=True), inner, _c(0, inner))
    if inner.dtype.is_complex:   # R's diagonal is real: half of the diagonal's imaginary part (0 when real)
        inner = _where(_band(inner.shape, lower=False), _mul(inner, _c(0.5, inner)), inner)
    inner = _inverse_transposed_times(inner, r)
    ga = _mm(q, _add(gr, inner) if gr is not None else inner)
    if gq is not None:
        ga = _add(ga, _inverse_transposed_times(_sub(gq, _mm(q, qtg)), r))
    return ga


def _qr(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    *_, m, n = a.shape
    if options["mode"] == "complete" and m > n:
        raise RuntimeError(f"linalg.qr: mode='complete' is not differentiable for matrices with more rows than "
                           f"columns (shape {a.shape}): Q's last columns are not unique; use mode='reduced'")
    q, r = (_linalg("qr", a, output=i, options=out.arg[2]) for i in range(2))
    gq, gr = (g, None) if out.arg[1] == 0 else (None, g)
    if m >= n:
        return (_qr_deep(q, r, gq, gr),)
    # wide: A = Q [X | Y] with X square; TensorFlow's _QrGradWideMatrices
    x = _shrink(r, cols=m)
    if gr is None:
        return (_pad_columns(_qr_deep(q, x, gq, None), 0, n - m),)
    y = make(Op.SHRINK, a, arg=tuple((0, b, 1) for b in a.shape[:-1]) + ((m, n, 1),))
    gx, gy = _shrink(gr, cols=m), make(Op.SHRINK, gr, arg=tuple((0, b, 1) for b in gr.shape[:-1]) + ((m, n, 1),))
    dx = _qr_deep(q, x, _mm(y, _mT(gy)), gx)
    return (_add(_pad_columns(dx, 0, n - m), _pad_columns(_mm(q, gy), m, 0)),)


def _pinv(g: Node, out: Node, options: dict) -> Grads:
    a = out.src[0]
    p, pt, gt = out, _mT(out), _mT(g)
    *_, m, n = a.shape
    if m <= n:
        k = _mm(gt, p)
        kpt = _mm(k, pt)
        ga = _add(_sub(kpt, _mT(_mm(p, k))), _sub(_mm(_mm(pt, p), _sub(gt, _mm(k, a))), _mm(_mm(a, p), kpt)))
    else:
        k = _mm(p, gt)
        ptk = _mm(pt, k)
        ga = _add(_sub(_mm(_mm(_sub(gt, _mm(a, k)), p), pt), _mT(_mm(k, p))), _sub(ptk, _mm(_mm(ptk, p), a)))
    return ga, None


_RULES = {
    "inv": _inv, "solve": _solve, "det": _det, "slogdet": _slogdet, "cholesky": _cholesky, "eigh": _eigh,
    "eigvalsh": _eigvalsh, "eig": _eig, "eigvals": _eig, "svd": _svd, "svdvals": _svdvals, "qr": _qr, "pinv": _pinv,
}


def linalg_rule(g: Node, out: Node) -> Grads:
    """The gradients of a LINALG node's sources, given the gradient of the node."""
    name, _, options = out.arg
    return _RULES[name](g, out, dict(options))
