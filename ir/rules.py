"""Per-op knowledge as tables keyed by `Op`: shape rule, dtype rule, numpy reference.

The numpy reference is the living definition of what each op means; `ir/interpret.py` runs a
whole graph with it, and every backend is tested against it. Backends keep their own code tables
(`backends/cpu/render_ops.py`, `backends/cstyle_ops.py`); gradient rules live with autograd (`lazytensor/grad_rules.py`).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .dtypes import COMPLEX_OF, DType, bool_, int64, real_dtype, to_dtype
from .graph import Node
from .fft import fft_dtype, fft_reference, fft_shape
from .linalg import linalg_dtype, linalg_reference, linalg_shape
from .symbolic import ceil_div
from .ops import BINARY, COMPARISON, COMPLEX_OPS, ELEMENTWISE, GRAPH_ONLY, INDEXING, MOVEMENT, REDUCTION, Op

Shape = tuple[int, ...]


# ---- dtype rules: (op, source dtypes, arg) -> dtype ------------------------------------------

def _same_as_first(srcs: tuple[DType, ...], arg: Any) -> DType:
    return srcs[0]


def _operands_agree(srcs: tuple[DType, ...]) -> DType:
    """The one dtype of an elementwise op's operands (promotion happens before a node is made)."""
    assert all(d is srcs[0] for d in srcs), f"elementwise operands differ in dtype: {[d.name for d in srcs]}"
    return srcs[0]


def _compared(srcs: tuple[DType, ...]) -> DType:
    """A comparison's result: bool, of operands of one dtype."""
    _operands_agree(srcs)
    return bool_


DTYPE_RULES: dict[Op, Callable[[tuple[DType, ...], Any], DType]] = {
    **{op: _same_as_first for op in ELEMENTWISE | MOVEMENT | REDUCTION | INDEXING | GRAPH_ONLY},
    **{op: (lambda srcs, arg: _operands_agree(srcs)) for op in BINARY},
    **{op: (lambda srcs, arg: _compared(srcs)) for op in COMPARISON},
    Op.SIGNBIT: lambda srcs, arg: bool_,
    Op.CAST: lambda srcs, arg: arg,
    Op.BITCAST: lambda srcs, arg: arg,
    Op.WHERE: lambda srcs, arg: _operands_agree(srcs[1:]),
    Op.SORT: _same_as_first,
    Op.ARGSORT: lambda srcs, arg: int64,
    Op.CUMSUM: _same_as_first,
    Op.SEARCHSORTED: lambda srcs, arg: int64,
    Op.SCATTER_ADD: lambda srcs, arg: srcs[1],
    Op.LINALG: linalg_dtype,
    Op.FFT: fft_dtype,
    Op.ABS: lambda srcs, arg: real_dtype(srcs[0]),   # |z| of a complex z is real
    Op.REAL: lambda srcs, arg: real_dtype(srcs[0]),
    Op.IMAG: lambda srcs, arg: real_dtype(srcs[0]),
    Op.COMPLEX: lambda srcs, arg: COMPLEX_OF[srcs[0]],
    Op.PAIRS: lambda srcs, arg: real_dtype(arg[3]),
}


# ---- shape rules: (op, source shapes, arg) -> shape ------------------------------------------

def _elementwise_shape(shapes: tuple[Shape, ...], arg: Any) -> Shape:
    assert all(s == shapes[0] for s in shapes), f"elementwise operands differ in shape: {shapes}"
    return shapes[0]


def _reduce_shape(shapes: tuple[Shape, ...], axes: tuple[int, ...]) -> Shape:
    return tuple(1 if a in axes else n for a, n in enumerate(shapes[0]))


def _shrink_shape(shapes: tuple[Shape, ...], slices) -> Shape:
    return tuple(len(range(start, stop, step)) if type(start) is type(stop) is int else
                 max(0, ceil_div(stop - start, step) if step > 0 else ceil_div(start - stop, -step))
                 for start, stop, step in slices)   # (symbolic bounds: the same count, by arithmetic)


SHAPE_RULES: dict[Op, Callable[[tuple[Shape, ...], Any], Shape]] = {
    **{op: _elementwise_shape for op in ELEMENTWISE | GRAPH_ONLY},
    **{op: _reduce_shape for op in REDUCTION},
    Op.RESHAPE: lambda shapes, arg: tuple(arg),
    Op.PERMUTE: lambda shapes, order: tuple(shapes[0][a] for a in order),
    Op.EXPAND: lambda shapes, arg: tuple(arg),
    Op.SHRINK: _shrink_shape,
    Op.PAD: lambda shapes, pads: tuple(n + b + a for n, (b, a) in zip(shapes[0], pads)),
    Op.FLIP: lambda shapes, axes: shapes[0],
    Op.GATHER: lambda shapes, axis: shapes[0][:axis] + shapes[1] + shapes[0][axis + 1:],
    Op.SORT: lambda shapes, arg: shapes[0],
    Op.ARGSORT: lambda shapes, arg: shapes[0],
    Op.CUMSUM: lambda shapes, arg: tuple(n + (1 if a == arg[0] and arg[1] else 0) for a, n in enumerate(shapes[0])),
    Op.SEARCHSORTED: lambda shapes, side: shapes[1],
    Op.SCATTER_ADD: lambda shapes, arg: shapes[1][:arg[0]] + (arg[1],) + shapes[1][arg[0] + len(shapes[0]):],
    Op.LINALG: linalg_shape,
    Op.FFT: fft_shape,
    Op.PAIRS: lambda shapes, arg: tuple(arg[4]) + ((2,) if arg[3].is_complex else ()),
}


# ---- numpy reference: (source arrays, arg, output dtype) -> array -----------------------------

def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "i":
        return np.power(a, b)
    # numpy refuses negative integer exponents; we define them as the exact result truncated
    # toward zero (1 for base 1, +-1 for base -1, else 0), which is what the kernels compute.
    with_nonnegative = np.power(a, np.maximum(b, 0))
    with_negative = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, with_negative, with_nonnegative).astype(a.dtype)


def _gather(x: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if n == 0:
        return np.zeros(x.shape[:axis] + index.shape + x.shape[axis + 1:], x.dtype)
    index = np.where(index < 0, index + n, index).astype(np.int64)
    return np.take(x, np.clip(index, 0, n - 1), axis=axis)


SCATTER_ROUNDS = 32   # scatter_add_into: an index repeated more often is summed on its own


def scatter_add_into(out: np.ndarray, index: np.ndarray, values: np.ndarray, axis: int) -> None:
    """out[..., j, ...] += values[..., i..., ...] for every position i of `index` where index is j
    (SCATTER_ADD's meaning: np.add.at, in index order, with GATHER's wrapping and clamping), `out`
    C-contiguous and zero (as its callers give it). Rows (a run of 8 or more elements after
    `axis`) are added at the speed of fancy indexing, each target's rows in index order as
    np.add.at adds them: a target with more than SCATTER_ROUNDS rows sums them in one sequential
    reduction (np.add.reduce along an outer axis adds row after row), the others in rounds, round
    r adding every index's r-th occurrence by a buffered `out[idx] += rows` whose targets are
    distinct. (An embedding's gradient: 4,096 rows of 256 into 50,000, 0.6 ms, np.add.at 6.3; a
    character model's, 2,048 rows of 128 into 96 with a space in every sixth, 2.8 ms -> 0.6.)"""
    n, m = out.shape[axis], index.size
    before, after = math.prod(out.shape[:axis]), math.prod(out.shape[axis + 1:])
    if n == 0 or m == 0 or before * after == 0:
        return
    idx = index.reshape(-1).astype(np.int64)
    idx = np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1)
    target, source = out.reshape(before, n, after), values.reshape(before, m, after)
    if after < 8:
        np.add.at(target, (slice(None), idx), source)
        return
    order = np.argsort(idx, kind="stable")
    ordered = idx[order]
    first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])   # where each index's run starts
    counts = np.diff(np.r_[first, m])
    heavy = counts > SCATTER_ROUNDS
    for start, count in zip(first[heavy], counts[heavy]):
        target[:, ordered[start], :] += np.add.reduce(source[:, order[start:start + count], :], axis=1)
    light = ~np.repeat(heavy, counts)
    rank = np.arange(m) - np.repeat(first, counts)                      # occurrence number, from 0
    rounds = int(rank[light].max()) + 1 if light.any() else 0
    for r in range(rounds):
        picked = order if rounds == 1 and not heavy.any() else order[light & (rank == r)]
        target[:, idx[picked], :] += source[:, picked, :]


def _scatter_add(index: np.ndarray, values: np.ndarray, axis: int, n: int) -> np.ndarray:
    out = np.zeros(values.shape[:axis] + (n,) + values.shape[axis + index.ndim:], values.dtype)
    scatter_add_into(out, index, values, axis)
    return out


def _sort(x: np.ndarray, axis: int, descending: bool, indices: bool) -> np.ndarray:
    """Stable sort, nan last both ways; descending keeps equal elements in their original order."""
    if not descending:
        order = np.argsort(x, axis, kind="stable")
    elif x.dtype.kind == "f":
        # Negating is exact and keeps nan a nan, which a stable ascending sort puts last; -0.0
        # and 0.0 stay equal. (Reversing an ascending sort would put nan first.)
        order = np.argsort(-x, axis, kind="stable")
    else:
        # Integers have no nan, and negating would overflow (-(-128) in int8): reverse the
        # stable ascending order of the reversed values, which keeps ties in their order.
        flipped = np.flip(np.argsort(np.flip(x, axis), axis, kind="stable"), axis)
        order = x.shape[axis] - 1 - flipped
    return order if indices else np.take_along_axis(x, order, axis)


def _cumsum(x: np.ndarray, axis: int, include_initial: bool, dtype) -> np.ndarray:
    total = np.cumsum(x, axis=axis, dtype=dtype.np)
    if include_initial:
        zeros = np.zeros(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype.np)
        total = np.concatenate([zeros, total], axis=axis)
    return total


def _complex(real: np.ndarray, imag: np.ndarray, dtype: DType) -> np.ndarray:
    # (not real + 1j * imag: inf * 1j is nan + inf j)
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), dtype.np)
    out.real, out.imag = real, imag
    return out


def _on_pairs(srcs: list[np.ndarray], arg: tuple, dtype: DType) -> np.ndarray:
    """PAIRS: op arg[0] on the sources, those marked in arg[2] float pairs (..., 2) seen as the
    complex values they store; a complex result given back as pairs."""
    op, inner, paired, result, _ = arg
    values = [np.ascontiguousarray(s).view(COMPLEX_OF[to_dtype(s.dtype)].np)[..., 0] if pair else s
              for s, pair in zip(srcs, paired)]
    out = np.ascontiguousarray(np.asarray(NUMPY_REFERENCE[op](values, inner, result), dtype=result.np))
    return out.view(dtype.np).reshape(out.shape + (2,)) if result.is_complex else out


def _shrink(x: np.ndarray, slices) -> np.ndarray:
    # the positions range(start, stop, step) per axis, exactly (a Python slice reads a negative
    # start or stop from the end: slice(-1, -1, -1) is empty here, the whole axis reversed there)
    return x[np.ix_(*[np.arange(start, stop, step) for start, stop, step in slices])] if slices else x


def _reduce(fn: Callable) -> Callable:
    def run(srcs, axes, dtype):
        return fn(srcs[0], axis=tuple(axes), keepdims=True).astype(dtype.np, copy=False)
    return run


def _rounding(fn: Callable) -> Callable:
    # integers and bool are already whole: the Array API returns them unchanged
    return lambda x: fn(x) if x.dtype.kind == "f" else x


def _erf(x: np.ndarray) -> np.ndarray:
    # numpy has no erf: the C library's (math.erf), in float64, rounded to x's dtype
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


_UNARY_NUMPY = {
    Op.NEG: np.negative, Op.NOT: _not, Op.ABS: np.abs, Op.SQRT: np.sqrt, Op.EXP: np.exp,
    Op.LOG: np.log, Op.SIN: np.sin, Op.COS: np.cos, Op.TANH: np.tanh,
    Op.FLOOR: _rounding(np.floor), Op.CEIL: _rounding(np.ceil), Op.TRUNC: _rounding(np.trunc),
    Op.ROUND: _rounding(np.round), Op.TAN: np.tan, Op.ASIN: np.arcsin, Op.ACOS: np.arccos,
    Op.ATAN: np.arctan, Op.SINH: np.sinh, Op.COSH: np.cosh, Op.ASINH: np.arcsinh,
    Op.ACOSH: np.arccosh, Op.ATANH: np.arctanh, Op.EXPM1: np.expm1, Op.LOG1P: np.log1p,
    Op.LOG2: np.log2, Op.LOG10: np.log10, Op.SIGNBIT: np.signbit, Op.ERF: _erf,
}
# numpy's ufunc of each binary op: the reference computes with it (POW through _pow, which
# defines negative integer exponents), and the front end asks it for an arithmetic op's result
# dtype (lazytensor/operands.py's _UFUNC)
BINARY_UFUNC: dict[Op, np.ufunc] = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.true_divide,
    Op.FLOORDIV: np.floor_divide, Op.MOD: np.remainder, Op.POW: np.power, Op.MAX: np.maximum,
    Op.MIN: np.minimum, Op.CMPLT: np.less, Op.CMPLE: np.less_equal, Op.CMPEQ: np.equal,
    Op.CMPNE: np.not_equal, Op.AND: np.bitwise_and, Op.OR: np.bitwise_or, Op.XOR: np.bitwise_xor,
    Op.SHL: np.left_shift, Op.SHR: np.right_shift, Op.ATAN2: np.arctan2, Op.HYPOT: np.hypot,
    Op.COPYSIGN: np.copysign,
}
_BINARY_NUMPY = {**BINARY_UFUNC, Op.POW: _pow}

NUMPY_REFERENCE: dict[Op, Callable[[list[np.ndarray], Any, DType], np.ndarray]] = {
    **{op: (lambda fn: lambda srcs, arg, dt: fn(srcs[0]))(fn) for op, fn in _UNARY_NUMPY.items()},
    **{op: (lambda fn: lambda srcs, arg, dt: fn(srcs[0], srcs[1]))(fn) for op, fn in _BINARY_NUMPY.items()},
    Op.CAST: lambda srcs, dtype, dt: srcs[0].astype(dtype.np),
    Op.BITCAST: lambda srcs, dtype, dt: np.ascontiguousarray(srcs[0]).view(dtype.storage),
    Op.WHERE: lambda srcs, arg, dt: np.where(srcs[0], srcs[1], srcs[2]),
    Op.SUM: _reduce(np.sum),
    Op.PROD: _reduce(np.prod),
    Op.REDUCE_MAX: _reduce(np.max),
    Op.REDUCE_MIN: _reduce(np.min),
    Op.RESHAPE: lambda srcs, shape, dt: srcs[0].reshape(shape),
    Op.PERMUTE: lambda srcs, order, dt: srcs[0].transpose(order),
    Op.EXPAND: lambda srcs, shape, dt: np.broadcast_to(srcs[0], shape),
    Op.SHRINK: lambda srcs, slices, dt: _shrink(srcs[0], slices),
    Op.PAD: lambda srcs, pads, dt: np.pad(srcs[0], pads) if pads else srcs[0],   # (np.pad refuses a 0-d array)
    Op.FLIP: lambda srcs, axes, dt: np.flip(srcs[0], axes),
    Op.GATHER: lambda srcs, axis, dt: _gather(srcs[0], srcs[1], axis),
    Op.SORT: lambda srcs, arg, dt: _sort(srcs[0], arg[0], arg[1], indices=False),
    Op.ARGSORT: lambda srcs, arg, dt: _sort(srcs[0], arg[0], arg[1], indices=True).astype(np.int64),
    Op.CUMSUM: lambda srcs, arg, dt: _cumsum(srcs[0], arg[0], arg[1], dt),
    Op.DETACH: lambda srcs, arg, dt: srcs[0],
    Op.SEARCHSORTED: lambda srcs, side, dt: np.searchsorted(srcs[0], srcs[1], side=side).astype(np.int64),
    Op.SCATTER_ADD: lambda srcs, arg, dt: _scatter_add(srcs[0], srcs[1], arg[0], arg[1]),
    Op.LINALG: linalg_reference,
    Op.FFT: fft_reference,
    Op.REAL: lambda srcs, arg, dt: np.real(srcs[0]).astype(dt.np),
    Op.IMAG: lambda srcs, arg, dt: np.imag(srcs[0]).astype(dt.np),
    Op.COMPLEX: lambda srcs, arg, dt: _complex(srcs[0], srcs[1], dt),
    Op.PAIRS: _on_pairs,
}

assert BINARY <= NUMPY_REFERENCE.keys()


def make(op: Op, *src, arg: Any = None):
    """A graph node for `op` on `src`, its dtype and shape taken from the rule tables; a
    TypeError where the op has no meaning for complex operands."""
    if len(src) == 1:   # (the common cases without the lists: every op a tensor makes comes here)
        first = src[0]
        dtypes, shapes = (first.dtype,), (first.shape,)
    elif len(src) == 2:
        first, second = src
        dtypes, shapes = (first.dtype, second.dtype), (first.shape, second.shape)
    else:
        dtypes, shapes = tuple([s.dtype for s in src]), tuple([s.shape for s in src])
    dtype = DTYPE_RULES[op](dtypes, arg)
    if op not in COMPLEX_OPS and not _COMPLEX.isdisjoint(dtypes):
        names = ", ".join(sorted({d.name for d in dtypes}))
        raise TypeError(f"{op.name.lower()} is not defined for complex numbers (operands: {names}); "
                        "use real() / imag() / abs() to work on a part")
    return Node(op, dtype, SHAPE_RULES[op](shapes, arg), src, arg)


_COMPLEX = frozenset(COMPLEX_OF.values())
