"""A 3x3 convolution by Winograd's minimal filtering along the rows: F(4, 3) (Lavin & Gray,
"Fast Algorithms for Convolutional Neural Networks", points 0, +-1, +-2), one of the
implementations `F.conv2d` may choose (tuning.choose measures it against the direct kernel).

The direct kernel does 9 multiply-adds per output and input channel, and runs near the CPU's
FMA rate; this one does 4.5. Four output rows are computed from six input rows transformed into
six terms; each term is a 1x3 convolution (the weights transformed along their rows too); the six
results are transformed back into four rows:

    V[n, a, c, t, X] = sum_i BT[a, i] * xp[n, c, 4t + i, X]          input rows -> 6 terms
    U[a, k, c, kw]   = sum_h G[a, h] * w[k, c, h, kw]                  weights -> 6 terms
    M = conv2d(V, U, groups=6)                                        a 1x3 convolution per term
    y[n, k, t, u, x] = sum_a AT[u, a] * M[n, a, k, t, x] (+ bias[k])  6 terms -> 4 output rows

Along the rows only, every stage reads rows of contiguous elements: 2-D tiles (F(4x4, 3x3))
would save more multiplications but read the columns of each tile four elements apart, which
the CPU gathers one by one (a prototype spent 9-25 ms in the transforms, against a 5.7 ms
direct convolution). Each stage is an ordinary contraction of views, so it fuses, tunes, runs
on every backend and differentiates like the direct one. The rounding differs from the direct
sum's (the transforms scale terms by up to 8 and add them back): ~2e-6 of the largest value
in float32; only float32 convolutions take it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..creation import asarray
from ..ir.arith import sum_of_products
from ..ir.ops import Op
from ..ir.rules import make
from ..movement import sliding_windows
from ..operands import operands
from ..tensor import Tensor

BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
               [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
              [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64)
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)
TERMS, ROWS = 6, 4   # input rows (terms) per tile, output rows per tile

# Below this many multiply-adds (direct) a convolution is not measured: a kernel launch or two
# more cost more than the multiplications saved.
MIN_MACS = 1 << 24


def fits(x: Tensor, weight: Tensor, stride: tuple[int, int], dilation: tuple[int, int], groups: int) -> bool:
    """Whether the convolution is one this implementation computes (3x3, stride and dilation 1,
    one group, float32) and large enough to be worth measuring."""
    if weight.shape[2:] != (3, 3) or stride != (1, 1) or dilation != (1, 1) or groups != 1:
        return False
    if x.dtype.name != "float32" or weight.dtype.name != "float32":
        return False
    n, c, h, w = x.shape
    return n * weight.shape[0] * h * w * c * 9 >= MIN_MACS


def conv2d_rows(x: Tensor, weight: Tensor, bias: "Tensor | None", padding: tuple[int, int],
                direct: Callable[[Tensor, Tensor, int], Tensor]) -> Tensor:
    """conv2d(x, weight, bias, padding=padding) for a 3x3 weight, stride and dilation 1;
    `direct(x, w, groups)` is the direct convolution (of the six 1x3 ones)."""
    n, c, h, w = x.shape
    k = weight.shape[0]
    oh, ow = h + 2 * padding[0] - 2, w + 2 * padding[1] - 2
    tiles = -(-oh // ROWS)
    rows, width = ROWS * tiles + 2, ow + 2
    xp = x.pad(((0, 0), (0, 0), (padding[0], rows - h - padding[0]), (padding[1], padding[1])))
    bt, g, at = _matrices(x.device)
    taps = sliding_windows(xp, (TERMS, 1), (ROWS, 1), (1, 1))                      # (n, c, t, X, i, 1)
    v = _contract(taps.reshape(n, 1, c, tiles, width, TERMS), bt.reshape(1, TERMS, 1, 1, 1, TERMS), 5)
    u = _contract(weight.permute(0, 1, 3, 2).reshape(1, k, c, 3, 3), g.reshape(TERMS, 1, 1, 1, 3), 4)
    m = direct(v.reshape(n, TERMS * c, tiles, width), u.reshape(TERMS * k, c, 1, 3), TERMS)   # (n, 6k, t, ow)
    # the output rows 4t + u as one axis (the kernel runs over t and u: collapse.split_axes), so
    # that a bias and what follows (a relu) fuse into the transform's kernel
    # (the terms' axis where the product has it, not permuted last: the product keeps its layout)
    spread, merged = (n, TERMS, k, tiles, ROWS, ow), (n, TERMS, k, ROWS * tiles, ow)
    terms = m.reshape(n, TERMS, k, tiles, 1, ow).expand(spread).reshape(merged)                 # (n, a, k, 4t + u, ow)
    y = _contract(terms, at.T.reshape(1, TERMS, 1, 1, ROWS, 1).expand(spread).reshape(merged), 1)
    out = make(Op.RESHAPE, y.node, arg=(n, k, ROWS * tiles, ow))
    if ROWS * tiles != oh:
        out = make(Op.SHRINK, out, arg=((0, n, 1), (0, k, 1), (0, oh, 1), (0, ow, 1)))
    out = Tensor(out, x.device)
    return out + bias.reshape(1, k, 1, 1) if bias is not None else out


_MATRICES: dict[str, tuple[Tensor, Tensor, Tensor]] = {}


def _matrices(device: str) -> tuple[Tensor, Tensor, Tensor]:
    """BT, G and AT as float32 tensors on `device`, made once (each call made three buffers: a
    third of the graph building's time)."""
    found = _MATRICES.get(device)
    if found is None:
        found = _MATRICES[device] = tuple(asarray(m.astype(np.float32), device=device) for m in (BT, G, AT))
    return found


def _contract(a: Tensor, b: Tensor, axis: int) -> Tensor:
    """sum(a * b, axis, keepdims) (broadcast), summed in their dtype as a matrix product is."""
    (left, right), device = operands(a, b, name="conv2d")
    return Tensor(sum_of_products(left, right, (axis,), left.dtype), device)
