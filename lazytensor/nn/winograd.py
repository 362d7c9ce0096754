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

import threading
from collections import OrderedDict

import numpy as np

from ..creation import asarray
from ..ir.arith import sum_of_products
from ..ir.dtypes import float32
from ..ir.graph import Node
from ..ir.ops import Op
from ..ir.rules import make
from ..movement import windows_last_axis
from ..tensor import Tensor
from ..views import apply

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
    if not all(type(d) is int for d in (*x.shape, *weight.shape)):   # (a symbolic size: one kernel for many)
        return False
    n, c, h, w = x.shape
    return n * weight.shape[0] * h * w * c * 9 >= MIN_MACS


def conv2d_rows(x: Tensor, weight: Tensor, bias: "Tensor | None", padding: tuple[int, int]) -> Tensor:
    """conv2d(x, weight, bias, padding=padding) for a 3x3 float32 weight, stride and dilation 1.
    (Built on the graph's nodes, each operand's movement ops in one go: as tensor ops, the ~70
    nodes cost 0.75 ms a call, more than a kernel of it.)"""
    n, c, h, w = x.shape
    k = weight.shape[0]
    oh, ow = h + 2 * padding[0] - 2, w + 2 * padding[1] - 2
    tiles = -(-oh // ROWS)
    rows, width = ROWS * tiles + 2, ow + 2
    # input rows 4t .. 4t+5 -> 6 terms: V[n, a, c, t, X] = sum_i BT[a, i] xp[n, c, 4t + i, X]
    moves: list = [(Op.PAD, ((0, 0), (0, 0), (padding[0], rows - h - padding[0]), (padding[1], padding[1]))),
                   (Op.PERMUTE, (0, 1, 3, 2))]
    windows_last_axis((n, c, width, rows), TERMS, ROWS, 1, moves)                    # (n, c, X, t, i)
    spread = (n, TERMS, c, tiles, width, TERMS)
    moves += [(Op.PERMUTE, (0, 1, 3, 2, 4)), (Op.RESHAPE, (n, 1, c, tiles, width, TERMS)), (Op.EXPAND, spread)]
    v = sum_of_products(apply(x.node, tuple(moves)), _coefficients(x.device, "BT", spread), (5,), float32)
    # weights -> 6 terms: U[a, k, c, j] = sum_h G[a, h] w[k, c, h, j]
    spread = (TERMS, k, c, 3, 3)
    u = sum_of_products(apply(weight.node, ((Op.PERMUTE, (0, 1, 3, 2)), (Op.RESHAPE, (1, k, c, 3, 3)),
                                            (Op.EXPAND, spread))), _coefficients(x.device, "G", spread), (4,), float32)
    # a 1x3 convolution per term: M[n, a, k, t, x] = sum_(c, j) U[a, k, c, j] V[n, a, c, t, x + j]
    # (arranged as conv2d's direct sum, (n, group, out, rows, columns, in, taps), for its schedule)
    moves = [(Op.RESHAPE, (n, TERMS, c, tiles, width))]
    windows_last_axis((n, TERMS, c, tiles, width), 3, 1, 1, moves)                   # (n, a, c, t, x, j)
    spread = (n, TERMS, k, tiles, ow, c, 3)
    moves += [(Op.PERMUTE, (0, 1, 3, 4, 2, 5)), (Op.RESHAPE, (n, TERMS, 1, tiles, ow, c, 3)), (Op.EXPAND, spread)]
    taps = apply(u, ((Op.RESHAPE, (1, TERMS, k, 1, 1, c, 3)), (Op.EXPAND, spread)))
    m = sum_of_products(apply(v, tuple(moves)), taps, (5, 6), float32)
    # 6 terms -> 4 output rows, in place along the terms (the product keeps its layout), the rows
    # 4t + u as one axis (the kernel runs over t and u: collapse.split_axes) so that a bias and
    # what follows (a relu) fuse into it: y[n, k, 4t + u, x] = sum_a AT[u, a] M[n, a, k, t, x]
    spread, merged = (n, TERMS, k, tiles, ROWS, ow), (n, TERMS, k, ROWS * tiles, ow)
    terms = apply(m, ((Op.RESHAPE, (n, TERMS, k, tiles, 1, ow)), (Op.EXPAND, spread), (Op.RESHAPE, merged)))
    y = sum_of_products(terms, _coefficients(x.device, "AT", merged), (1,), float32)
    out = make(Op.RESHAPE, y, arg=(n, k, ROWS * tiles, ow))
    if ROWS * tiles != oh:
        out = make(Op.SHRINK, out, arg=((0, n, 1), (0, k, 1), (0, oh, 1), (0, ow, 1)))
    result = Tensor(out, x.device)
    return result + bias.reshape(1, k, 1, 1) if bias is not None else result


# The transform matrices as each product reads them (reshaped and broadcast to its shape), per
# device and shape: each matrix realized, and its nodes made, once.
_COEFFICIENTS: "OrderedDict[tuple, Node]" = OrderedDict()
_COEFFICIENTS_MOST = 64
_LOCK = threading.Lock()


def _coefficients(device: str, name: str, shape: tuple[int, ...]) -> Node:
    key = (device, name, shape)
    with _LOCK:
        found = _COEFFICIENTS.get(key)
        if found is not None:
            _COEFFICIENTS.move_to_end(key)
            return found
    matrix = asarray({"BT": BT, "G": G, "AT": AT}[name].astype(np.float32), device=device).node
    if name == "BT":     # (n, a, c, t, X, i)
        moves = ((Op.RESHAPE, (1, TERMS, 1, 1, 1, TERMS)), (Op.EXPAND, shape))
    elif name == "G":    # (a, k, c, j, h)
        moves = ((Op.RESHAPE, (TERMS, 1, 1, 1, 3)), (Op.EXPAND, shape))
    else:                # (n, a, k, 4t + u, x): AT[u, a] along the terms, repeated along the tiles
        n, _, k, rows, ow = shape
        moves = ((Op.PERMUTE, (1, 0)), (Op.RESHAPE, (1, TERMS, 1, 1, ROWS, 1)),
                 (Op.EXPAND, (n, TERMS, k, rows // ROWS, ROWS, ow)), (Op.RESHAPE, shape))
    found = apply(matrix, moves)
    with _LOCK:
        _COEFFICIENTS[key] = found
        while len(_COEFFICIENTS) > _COEFFICIENTS_MOST:
            _COEFFICIENTS.popitem(last=False)
    return found
