"""Array API manipulation and linear-algebra helpers, built from views and fused ops."""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .creation import arange, asarray
from .ir.dtypes import float16, float32, result_type
from .movement import concatenate, permute
from .views import fresh
from .functions import conj
from .indexing import take
from .operands import as_tensor, broadcast_shapes, normalize_axes, where  # noqa: F401 (broadcast_shapes: exported)
from .tensor import Tensor, spelled_once



def _first_tensor(values) -> Tensor | None:
    return next((v for v in values if isinstance(v, Tensor)), None)


def broadcast_arrays(*arrays: Any) -> tuple[Tensor, ...]:
    """Views of `arrays` broadcast to one shape (a tuple, as the standard asks since 2025.12).

    >>> [t.shape for t in lt.broadcast_arrays(lt.zeros((3, 1)), lt.zeros(4))]
    [(3, 4), (3, 4)]
    """
    tensors = [as_tensor(a, _first_tensor(arrays)) for a in arrays]
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.broadcast_to(shape) for t in tensors)


def meshgrid(*arrays: Any, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D arrays ('xy': cartesian, 'ij': matrix indexing), a tuple of new
    tensors (as numpy's, which copies by default).

    >>> [g.shape for g in lt.meshgrid(lt.arange(3), lt.arange(2))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    tensors = [as_tensor(a, _first_tensor(arrays)) for a in arrays]
    for t in tensors:
        if t.ndim != 1:
            raise ValueError(f"meshgrid takes 1-D arrays; got shape {t.shape}")
    sizes = [t.shape[0] for t in tensors]
    if indexing == "xy" and len(tensors) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, t in enumerate(tensors):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and len(tensors) >= 2 else i
        shape = [1] * len(tensors)
        shape[axis] = t.shape[0]
        grids.append(fresh(t.reshape(shape).broadcast_to(tuple(sizes))))
    return tuple(grids)


def moveaxis(x: Any, source: Any, destination: Any) -> Tensor:
    """Move axes to new positions, the others keeping their order.

    >>> lt.moveaxis(lt.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    x = as_tensor(x)
    src = [normalize_axes(a, x.ndim)[0] for a in (source if isinstance(source, (tuple, list)) else [source])]
    dst = [normalize_axes(a, x.ndim)[0] for a in (destination if isinstance(destination, (tuple, list)) else [destination])]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, order)


def roll(x: Any, shift: Any, axis: Any = None) -> Tensor:
    """Elements shifted along `axis` (the flattened tensor when None), wrapping around.

    >>> lt.roll(lt.arange(5), 2).tolist()
    [3, 4, 0, 1, 2]
    """
    x = as_tensor(x)
    if axis is None:
        return roll(x.reshape(-1), shift, 0).reshape(x.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else [shift] * (len(axis) if isinstance(axis, (tuple, list)) else 1)
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    for s, a in zip(shifts, axes):
        (a,) = normalize_axes(a, x.ndim)
        n = x.shape[a]
        if n == 0:
            continue
        s = operator.index(s) % n
        if s:
            head = x[(slice(None),) * a + (slice(n - s, None),)]
            tail = x[(slice(None),) * a + (slice(0, n - s),)]
            x = concatenate([head, tail], axis=a)
    return x._new(x.node)   # a new tensor even where nothing moved: writing to it must not change x


def tile(x: Any, repetitions: Sequence[int]) -> Tensor:
    """`x` repeated `repetitions[i]` times along axis i (a new tensor, as numpy's).

    >>> lt.tile(lt.asarray([1, 2]), (2,)).tolist()
    [1, 2, 1, 2]
    """
    x = as_tensor(x)
    reps = tuple(repetitions) if isinstance(repetitions, (tuple, list)) else (repetitions,)
    rank = max(len(reps), x.ndim)
    reps = (1,) * (rank - len(reps)) + reps
    x = x.reshape((1,) * (rank - x.ndim) + x.shape)
    spread = x.reshape(tuple(d for n in x.shape for d in (1, n)))
    big = spread.broadcast_to(tuple(d for r, n in zip(reps, x.shape) for d in (r, n)))
    return fresh(big.reshape(tuple(r * n for r, n in zip(reps, x.shape))))


def repeat(x: Any, repeats: Any, /, *, axis: Any = None) -> Tensor:
    """Each element repeated along `axis` (the flattened tensor when None): `repeats` times, or
    repeats[i] times for element i where `repeats` is a 1-D array of counts (one per element
    along the axis, or a single one). A new tensor, as numpy's.

    An array of counts fixes the result's shape, so it is read when called (realized where it is
    pending), as the Array API allows; the elements are then gathered in one kernel.

    >>> lt.repeat(lt.asarray([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    >>> lt.repeat(lt.asarray([[1, 2], [3, 4]]), lt.asarray([1, 2]), axis=0).tolist()
    [[1, 2], [3, 4], [3, 4]]
    """
    x = as_tensor(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    (axis,) = normalize_axes(axis, x.ndim)
    if isinstance(repeats, (Tensor, np.ndarray, list, tuple)):
        counts = _repeat_counts(repeats, x.shape[axis])
        if counts.shape != (1,):
            index = np.repeat(np.arange(x.shape[axis], dtype=np.int64), counts)
            return take(x, asarray(index, device=x.device), axis=axis)
        repeats = int(counts[0])
    else:
        if isinstance(repeats, (bool, np.bool_)) or not isinstance(repeats, (int, np.integer)):
            raise TypeError(f"repeat: repeats must be an int or an array of ints, not {type(repeats).__name__} {repeats!r}")
        repeats = operator.index(repeats)
        if repeats < 0:
            raise ValueError(f"repeat: repeats must be non-negative, not {repeats}")
    expanded = x.reshape(x.shape[:axis + 1] + (1,) + x.shape[axis + 1:])
    expanded = expanded.broadcast_to(x.shape[:axis + 1] + (repeats,) + x.shape[axis + 1:])
    return fresh(expanded.reshape(x.shape[:axis] + (x.shape[axis] * repeats,) + x.shape[axis + 1:]))


def _repeat_counts(repeats: Any, n: int) -> np.ndarray:
    """The counts of `repeat` as a 1-D int64 numpy array of length n, or 1 (one for every element)."""
    values = repeats.numpy() if isinstance(repeats, Tensor) else np.asarray(repeats)
    if values.dtype.kind not in "iub" and values.size:   # (numpy casts bool counts; [] is float64, and empty)
        raise TypeError(f"repeat: counts must be integers, not {values.dtype.name} (cast them with .astype())")
    values = values.reshape(-1) if values.ndim == 0 else values
    if values.ndim != 1 or values.shape[0] not in (1, n):
        raise ValueError(f"repeat: repeats of shape {values.shape} do not match the {n} elements along the axis "
                         f"(give one count per element, or a single one)")
    if (values < 0).any():
        raise ValueError(f"repeat: counts must be non-negative; got {values[values < 0][0]}")
    return values.astype(np.int64)


def _band(x: Tensor, k: int, lower: bool) -> Tensor:
    if x.ndim < 2:
        raise ValueError(f"tril/triu need at least 2 dimensions; got shape {x.shape}")
    rows, cols = x.shape[-2:]
    offset = arange(cols, device=x.device).reshape(1, cols) - arange(rows, device=x.device).reshape(rows, 1)
    keep = offset <= k if lower else offset >= k
    return where(keep, x, 0).astype(x.dtype)


_DIAGONAL = "the diagonal as k (numpy's) or diagonal= (PyTorch's)"


def tril(x: Any, k: int = 0, *, diagonal: Any = None) -> Tensor:
    """The lower triangle (on and below diagonal k) of the last two axes; zeros elsewhere
    (`diagonal=` is PyTorch's name for k).

    >>> lt.tril(lt.ones((2, 2))).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    >>> lt.tril(lt.ones((2, 2)), diagonal=-1).tolist()
    [[0.0, 0.0], [1.0, 0.0]]
    """
    return _band(as_tensor(x), spelled_once("tril", k, 0, diagonal, _DIAGONAL), lower=True)


def triu(x: Any, k: int = 0, *, diagonal: Any = None) -> Tensor:
    """The upper triangle (on and above diagonal k) of the last two axes; zeros elsewhere
    (`diagonal=` is PyTorch's name for k).

    >>> lt.triu(lt.ones((2, 2))).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return _band(as_tensor(x), spelled_once("triu", k, 0, diagonal, _DIAGONAL), lower=False)


def matrix_transpose(x: Any) -> Tensor:
    """The last two axes swapped.

    >>> lt.matrix_transpose(lt.zeros((2, 3, 4))).shape
    (2, 4, 3)
    """
    return as_tensor(x).mT


def vecdot(x1: Any, x2: Any, axis: int = -1) -> Tensor:
    """The dot product along `axis`, with broadcasting (one fused multiply-sum kernel).

    >>> lt.vecdot(lt.ones((2, 3)), lt.ones(3)).tolist()
    [3.0, 3.0]
    """
    a, b = as_tensor(x1, like=x2), as_tensor(x2, like=x1)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot needs at least one axis in each operand")
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} has size {a.shape[axis]} in {a.shape} but {b.shape[axis]} in {b.shape}")
    dtype = result_type(a.dtype, b.dtype)
    if dtype is float16:   # products and their sum in float32, rounded once, as numpy's (and matmul)
        a, b = a.astype(float32), b.astype(float32)
    if a.dtype.is_complex:   # (the Array API's vecdot conjugates the first operand, as np.vecdot does)
        a = conj(a)
    product = a * b
    return product.any(axis) if product.dtype.is_bool else product.sum(axis=axis).astype(dtype)


def tensordot(x1: Any, x2: Any, axes: Any = 2) -> Tensor:
    """Sum of products over `axes` (an int: the last n of x1 with the first n of x2; or two lists).

    >>> lt.tensordot(lt.ones((2, 3, 4)), lt.ones((3, 4, 5))).shape
    (2, 5)
    """
    a, b = as_tensor(x1, like=x2), as_tensor(x2, like=x1)
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        a_axes, b_axes = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        a_axes, b_axes = [list(v) if isinstance(v, (tuple, list)) else [v] for v in axes]
    a_axes = [normalize_axes(v, a.ndim)[0] for v in a_axes]
    b_axes = [normalize_axes(v, b.ndim)[0] for v in b_axes]
    for i, j in zip(a_axes, b_axes):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: axis {i} of {a.shape} and axis {j} of {b.shape} differ in size")
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [j for j in range(b.ndim) if j not in b_axes]
    k = math.prod(a.shape[i] for i in a_axes)
    left = permute(a, a_free + a_axes).reshape(math.prod(a.shape[i] for i in a_free), k)
    right = permute(b, b_axes + b_free).reshape(k, math.prod(b.shape[j] for j in b_free))
    return (left @ right).reshape(tuple(a.shape[i] for i in a_free) + tuple(b.shape[j] for j in b_free))


def concat(arrays: Sequence[Any], /, *, axis: Any = 0) -> Tensor:
    """Join arrays along an existing axis (all flattened first when axis is None): the Array
    API's name for concatenate.

    >>> lt.concat([lt.zeros(2), lt.ones(1)]).tolist()
    [0.0, 0.0, 1.0]
    """
    if axis is None:
        return concatenate([as_tensor(a, _first_tensor(arrays)).reshape(-1) for a in arrays], axis=0)
    return concatenate(arrays, axis=axis)


def cat(tensors: Sequence[Any], dim: int = 0, *, axis: Any = None) -> Tensor:
    """PyTorch's name for concatenate: join tensors along the existing axis `dim` (numpy's
    `axis=` is accepted too).

    >>> lt.cat([lt.zeros((1, 2)), lt.ones((1, 2))], dim=1).tolist()
    [[0.0, 0.0, 1.0, 1.0]]
    """
    dim = spelled_once("cat", dim, 0, axis, "the axis as dim (PyTorch's) or axis= (numpy's)")
    if isinstance(tensors, Tensor):
        raise TypeError("cat: takes a sequence of tensors (a list or tuple), not one tensor")
    return concatenate(tensors, axis=dim)


def bmm(x1: Any, x2: Any, /) -> Tensor:
    """PyTorch's batched matrix product: (b, n, m) @ (b, m, p) -> (b, n, p), for 3-D tensors of
    one batch size only (no broadcasting; `matmul` broadcasts).

    >>> lt.bmm(lt.ones((2, 3, 4)), lt.ones((2, 4, 5))).shape
    (2, 3, 5)
    """
    a, b = as_tensor(x1, like=x2), as_tensor(x2, like=x1)
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"bmm: takes two 3-D tensors (batch, rows, columns), not shapes {a.shape} and {b.shape}; "
                         "use lt.matmul (or @) for other ranks and broadcasting")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"bmm: shapes {a.shape} and {b.shape} do not fit: the batch sizes must be equal and the "
                         "first's columns the second's rows")
    return a @ b


def permute_dims(x: Any, /, axes: Sequence[int]) -> Tensor:
    """Axes reordered: the Array API's name for permute.

    >>> lt.permute_dims(lt.zeros((2, 3)), (1, 0)).shape
    (3, 2)
    """
    return permute(as_tensor(x), axes)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of x along `axis`, as a tuple of views.

    >>> len(lt.unstack(lt.zeros((3, 2))))
    3
    """
    x = as_tensor(x)
    (axis,) = normalize_axes(axis, x.ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """How many elements along `axis` are nonzero (int64).

    >>> lt.count_nonzero(lt.asarray([0, 2, 3])).item()
    2
    """
    return (as_tensor(x) != 0).sum(axis=axis, keepdims=keepdims)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Tensor:
    """The n-th discrete difference along `axis`: x[1:] - x[:-1], n times (one fused kernel; for
    bool, x[1:] != x[:-1], as numpy's). `prepend` and `append` are joined to x along `axis`
    first: tensors of x's shape but for that axis, or scalars (one element there), as numpy's.

    >>> lt.diff(lt.asarray([1, 4, 9, 16])).tolist()
    [3, 5, 7]
    >>> lt.diff(lt.asarray([1, 4, 9]), prepend=0, append=lt.asarray([20])).tolist()
    [1, 3, 5, 11]
    """
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError("diff needs at least one dimension; got a 0-d tensor")
    (axis,) = normalize_axes(axis, x.ndim)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"diff: n must be an int, not {n!r}")
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, not {n}")
    if n == 0:
        return x   # (numpy's: x itself, prepend and append left out)
    if prepend is not None or append is not None:
        parts = [_diff_part(v, x, axis, name) for v, name in ((prepend, "prepend"), (x, ""), (append, "append"))
                 if v is not None]
        x = concatenate(parts, axis=axis)
    for _ in range(n):
        head = (slice(None),) * axis
        x = (x[head + (slice(1, None),)] != x[head + (slice(None, -1),)]) if x.dtype.is_bool else \
            x[head + (slice(1, None),)] - x[head + (slice(None, -1),)]
    return x


def _diff_part(value: Any, x: Tensor, axis: int, name: str) -> Tensor:
    """x itself, or what diff joins before or after it: a scalar becomes one element along `axis`."""
    if value is x:
        return x
    part = as_tensor(value, like=x)
    if part.ndim == 0:
        return part.broadcast_to(x.shape[:axis] + (1,) + x.shape[axis + 1:])
    if part.ndim != x.ndim or any(m != k for a, (m, k) in enumerate(zip(part.shape, x.shape)) if a != axis):
        raise ValueError(f"diff: {name} of shape {part.shape} does not fit x of shape {x.shape} along axis {axis} "
                         "(it needs x's shape but for that axis, or to be a scalar)")
    return part


# ---- einsum ----------------------------------------------------------------------------------------

def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, as numpy's and PyTorch's: `equation` names each operand's axes with
    letters ("ij,jk->ik"); a letter in two operands pairs those axes, one left out of the output
    (after "->") is summed, a letter twice in one operand takes its diagonal ("ii->i"), "..."
    stands for the axes not named (broadcast across operands). Without "->" the output is the
    letters named once, in alphabetical order, after the "..." axes. Operands may also come as
    one list (PyTorch's `einsum(eq, [a, b])`). Axes of length 1 broadcast against their pair,
    as in PyTorch.

    Each pair of operands is contracted, left to right, as one batched matrix product (matmul:
    the axes in both and in the output are the batch, those in both and not in the output the
    inner axis), so matrix-shaped equations run as fast as matmul.

    >>> lt.einsum("ij,jk->ik", lt.ones((2, 3)), lt.ones((3, 4))).shape
    (2, 4)
    >>> lt.einsum("ii", lt.eye(3)).item(), lt.einsum("bij->bji", lt.zeros((5, 2, 3))).shape
    (3.0, (5, 3, 2))
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the first argument is the equation (a str such as 'ij,jk->ik'), not "
                        f"{type(equation).__name__} (numpy's interleaved operand, sublist form is not supported)")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    like = _first_tensor(operands)
    tensors = [as_tensor(op, like) for op in operands]
    terms, output = _parse_einsum(equation.replace(" ", ""), tensors)
    sizes: dict[str, int] = {}
    for term, t in zip(terms, tensors):
        for label, n in zip(term, t.shape):
            if sizes.get(label, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: '{label}' names axes of lengths {sizes[label]} and {n} in {equation!r} "
                                 f"(shapes {[t.shape for t in tensors]}); they must be equal (or one of them 1)")
            sizes[label] = n if sizes.get(label, 1) == 1 else sizes[label]
    # each operand with its letters distinct: diagonals taken, letters in no other term summed
    items = []
    for i, (term, t) in enumerate(zip(terms, tensors)):
        t, term = _einsum_diagonals(t, term)
        elsewhere = set(output).union(*[set(other) for j, other in enumerate(terms) if j != i])
        t, term = _einsum_sum(t, term, [c for c in term if c not in elsewhere])
        items.append((t, term))
    t, term = items[0]
    for k in range(1, len(items)):
        later = set(output).union(*[set(other) for _, other in items[k + 1:]])
        t, term = _einsum_pair(t, term, *items[k], later, sizes)
    t, term = _einsum_sum(t, term, [c for c in term if c not in output])
    t = t.broadcast_to(tuple(sizes[c] if c in term and n == 1 else n for c, n in zip(term, t.shape)))
    result = permute(t, [term.index(c) for c in output]) if term != output else t
    # a tensor of its own: never an operand itself, nor a view of one
    return result._new(result.node) if result is tensors[0] or result._alias is not None else result


def _parse_einsum(equation: str, tensors: list[Tensor]) -> tuple[list[str], str]:
    """Each operand's letters (with "..." replaced by one character per broadcast axis, the same
    for every operand, right-aligned) and the output's."""
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(tensors):
        raise ValueError(f"einsum: the equation {equation!r} names {len(terms)} operands, but {len(tensors)} were given")
    for part in terms + ([output] if arrow else []):
        letters = part.replace("...", "")
        if part.count("...") > 1 or not all(c.isascii() and c.isalpha() for c in letters):
            raise ValueError(f"einsum: bad subscripts {part!r} in {equation!r}: use letters a-z, A-Z and at most one "
                             "'...' per operand")
    ellipsis_axes = 0
    for term, t in zip(terms, tensors):
        named = len(term.replace("...", ""))
        if (named != t.ndim and "..." not in term) or named > t.ndim:
            raise ValueError(f"einsum: subscripts {term!r} name {named} axes, but the operand has shape {t.shape}")
        if "..." in term:
            ellipsis_axes = max(ellipsis_axes, t.ndim - named)
    broadcast = [chr(0x100 + i) for i in range(ellipsis_axes)]   # (characters no equation uses)
    expanded = []
    for term, t in zip(terms, tensors):
        if "..." in term:
            before, _, after = term.partition("...")
            count = t.ndim - len(before) - len(after)
            term = before + "".join(broadcast[ellipsis_axes - count:]) + after
        expanded.append(term)
    if arrow:
        if "..." in output:
            before, _, after = output.partition("...")
            output = before + "".join(broadcast) + after
        repeated = sorted({c for c in output if output.count(c) > 1})
        unknown = sorted({c for c in output if not any(c in term for term in expanded)})
        if repeated or unknown:
            raise ValueError(f"einsum: the output {equation.partition('->')[2]!r} names "
                             f"{'letters twice: ' + ', '.join(repeated) if repeated else ''}"
                             f"{'letters in no operand: ' + ', '.join(unknown) if unknown else ''}")
    else:
        counts = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        output = "".join(broadcast) + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in broadcast))
    return expanded, output



def _einsum_diagonals(t: Tensor, term: str) -> tuple[Tensor, str]:
    """A letter named twice in one operand: its diagonal, as one axis (the last)."""
    while len(set(term)) < len(term):
        c = next(c for c in term if term.count(c) > 1)
        first, second = term.index(c), term.index(c, term.index(c) + 1)
        n = t.shape[first]
        if t.shape[second] != n:
            raise ValueError(f"einsum: '{c}' names two axes of one operand with lengths {n} and {t.shape[second]}; "
                             "a diagonal needs them equal")
        rest = [a for a in range(t.ndim) if a not in (first, second)]
        moved = permute(t, rest + [first, second]).reshape(tuple(t.shape[a] for a in rest) + (n * n,))
        t = moved[(slice(None),) * len(rest) + (slice(None, None, n + 1),)]
        term = "".join(term[a] for a in rest) + c
    return t, term


def _einsum_sum(t: Tensor, term: str, letters: list[str]) -> tuple[Tensor, str]:
    if not letters:
        return t, term
    axes = tuple(term.index(c) for c in letters)
    return t.sum(axis=axes, dtype=t.dtype) if not t.dtype.is_bool else t.any(axis=axes), \
        "".join(c for c in term if c not in letters)


def _einsum_pair(a: Tensor, a_term: str, b: Tensor, b_term: str, later: set, sizes: dict) -> tuple[Tensor, str]:
    """Two operands contracted as one batched matmul: (batch..., m, k) @ (batch..., k, n)."""
    shared = [c for c in a_term if c in b_term]
    batch = [c for c in shared if c in later]
    inner = [c for c in shared if c not in later]
    left = [c for c in a_term if c not in b_term]
    right = [c for c in b_term if c not in a_term]
    # an inner axis of length 1 on one side only: summed on the other side first (it broadcasts)
    for c in inner:
        if a.shape[a_term.index(c)] != b.shape[b_term.index(c)]:
            if a.shape[a_term.index(c)] == 1:
                b = b.sum(axis=b_term.index(c), keepdims=True, dtype=b.dtype)
            else:
                a = a.sum(axis=a_term.index(c), keepdims=True, dtype=a.dtype)
    dtype = result_type(a.dtype, b.dtype)
    a_shape = {c: n for c, n in zip(a_term, a.shape)}
    b_shape = {c: n for c, n in zip(b_term, b.shape)}
    m = math.prod(a_shape[c] for c in left)
    k = math.prod(a_shape[c] for c in inner)
    n = math.prod(b_shape[c] for c in right)
    a2 = permute(a, [a_term.index(c) for c in batch + left + inner])
    a2 = a2.reshape(tuple(a_shape[c] for c in batch) + (m, k))
    b2 = permute(b, [b_term.index(c) for c in batch + inner + right])
    b2 = b2.reshape(tuple(b_shape[c] for c in batch) + (k, n))
    if dtype.is_bool:   # (matmul of bool is the logical or of ands)
        product = (a2.reshape(a2.shape + (1,)) & b2.reshape(b2.shape[:-2] + (1,) + b2.shape[-2:])).any(axis=-2)
    else:
        product = a2.astype(dtype) @ b2.astype(dtype)
    batch_shape = product.shape[:-2]
    out = product.reshape(batch_shape + tuple(a_shape[c] for c in left) + tuple(b_shape[c] for c in right))
    return out, "".join(batch + left + right)


__all__ = ["broadcast_arrays", "meshgrid", "moveaxis", "roll", "tile", "repeat", "tril", "triu",
           "matrix_transpose", "vecdot", "tensordot", "concat", "cat", "permute_dims", "unstack", "count_nonzero",
           "diff", "broadcast_shapes", "bmm", "einsum"]
