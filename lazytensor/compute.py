"""Tensor expressions: an operator written as its index formula, as TVM's `te.compute`, made of
lazy tensors so it fuses with the code around it.

    lt.compute(shape, fcompute, name=None) -> Tensor   out[i, j, ...] = fcompute(i, j, ...)
    lt.reduce_axis(extent, name=None)                  an axis the reducers reduce
    lt.comm_reducer(combine, identity)                 a reducer from a combine (+, *, max, min,
                                                       logaddexp)

    k = lt.reduce_axis(K)
    c = lt.compute((M, N), lambda i, j: lt.sum(a[i, k] * b[k, j], axis=k))   # a matmul

`fcompute` gets one index variable per output axis. Inside it, a tensor indexed by expressions
of the variables (`x[i, 2 * j + 1]`, `x[n, c, y * s + ky, x * s + kx]`) is an `Expression`: a
lazy tensor (a Tensor subclass) over the compute's iteration space -- the output axes, then the
reduce axes in the order they are first used, size 1 where it does not vary -- so arithmetic,
`lt.where`, casts and the math functions are the ordinary tensor ops, broadcast over that
space. The reducers (lt.sum, lt.prod, lt.max, lt.min, lt.argmax, lt.argmin with axis= reduce
axes; Expression.logsumexp) reduce over them; a sum accumulates in the expression's dtype, as a matrix product does
(float16 in float32). The result is one lazy tensor: no new op in the graph, only views,
elementwise ops, gathers and reductions, so elementwise producers inline into it, consumers
fuse as epilogues, every backend runs it and `backward()` goes through it. (fcompute may run
more than once: again where it meets a reduce axis or a device it did not know, so that the
space holds exactly what is used -- a reduction over extra size-1 axes would not fuse with its
consumers.)

How an index becomes a view, per axis of the indexed tensor: a constant selects; `a*v + c`
(one variable) is a slice with step a (reversed where a < 0); `a*v + b*w + c` (two variables,
coefficients of one sign) is the sliding-window view of a convolution. These are checked
against the tensor's bounds over the variables' whole ranges at the indexing call (pad the
tensor first to read past its edge). Any other integer index -- `i // 2`, a clipped floor of a
scaled coordinate -- is computed as a value and read through a gather, where interval
arithmetic over its graph must prove it in range (clip it). Not yet: a variable in two axes of
one tensor (a diagonal), three variables in one axis, a combine of lt.comm_reducer that is
none of those it recognizes (a general fold would need a reduction op of its own).
"""
from __future__ import annotations

import itertools
import math
import threading
from typing import Any, Callable, Optional, Sequence, Union

from .creation import arange, full
from .devices import default_device
from .indexing import take, take_along_axis
from .ir.arith import sum_in_dtype
from .ir.graph import Node, toposort
from .ir.dtypes import int64
from .ir.ops import Op
from .movement import windows_last_axis
from .operands import where
from .tensor import Tensor
from .views import apply as apply_moves

MAX_REDUCE_AXES = 8   # reduce axes one lt.compute may use

_local = threading.local()
_ids = itertools.count()


class Affine:
    """An affine index expression: const + sum of coefficient * variable (ints)."""
    __slots__ = ("terms", "const")

    def __init__(self, terms: tuple[tuple["IndexVar", int], ...], const: int):
        self.terms = terms
        self.const = const

    @staticmethod
    def of(value: Any) -> "Affine":
        if isinstance(value, IndexVar):
            return Affine(((value, 1),), 0)
        if isinstance(value, Affine):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return Affine((), value)
        raise TypeError(f"lt.compute: an index is an int or an affine expression of index variables "
                        f"(i + 1, 2 * j - k), not {type(value).__name__}")

    def _combine(self, other: Any, sign: int) -> "Affine":
        other = Affine.of(other)
        coefs: dict[int, list] = {id(v): [v, c] for v, c in self.terms}
        for v, c in other.terms:
            coefs.setdefault(id(v), [v, 0])[1] += sign * c
        return Affine(tuple((v, c) for v, c in coefs.values() if c), self.const + sign * other.const)

    # with ints and other indices: an index again; with floats and expressions: a value
    def __add__(self, other: Any) -> Any:
        return self._combine(other, 1) if _index_like(other) else self.value() + other

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._combine(other, -1) if _index_like(other) else self.value() - other

    def __rsub__(self, other: Any) -> Any:
        return Affine.of(other)._combine(self, -1) if _index_like(other) else other - self.value()

    def __neg__(self) -> "Affine":
        return Affine((), 0)._combine(self, -1)

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, int) and not isinstance(other, bool):
            return Affine(tuple((v, c * other) for v, c in self.terms if c * other), self.const * other)
        if isinstance(other, Affine):
            raise TypeError("lt.compute: an index is affine: a variable times a variable is not (write the "
                            "product as a value: i.value() * j)")
        return self.value() * other

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> "Expression":
        """i // c: an integer expression (an index read through a gather)."""
        return self.value() // _positive(other, "//")

    def __mod__(self, other: Any) -> "Expression":
        return self.value() % _positive(other, "%")

    def __truediv__(self, other: Any) -> "Expression":
        return self.value() / other

    def __rtruediv__(self, other: Any) -> "Expression":
        return other / self.value()

    def range(self) -> tuple[int, int]:
        """The least and greatest value over every variable's range (extents > 0)."""
        lo = hi = self.const
        for v, c in self.terms:
            lo += min(0, c * (v.extent - 1))
            hi += max(0, c * (v.extent - 1))
        return lo, hi

    def value(self) -> "Expression":
        """The index's values as an int64 expression over the iteration space (what an index
        becomes in arithmetic with floats or expressions)."""
        space = _space("use an index variable as a value")
        device = space.value_device()
        total: Tensor = full(space.unit_shape(), self.const, dtype=int64, device=device)
        for v, c in self.terms:
            values = arange(v.extent, device=device)
            space.ranges[values.node] = (0, v.extent - 1)   # (for the bounds of indices made from it)
            total = total + values.reshape(space.shape_along(v)) * c
        return _wrap(total)

    def __repr__(self) -> str:
        parts = [f"{c}*{v.name}" if c != 1 else v.name for v, c in self.terms]
        return " + ".join(parts + ([str(self.const)] if self.const or not parts else []))

    # comparisons give boolean expressions (lt.where(i < 5, x[i], 0))
    def __lt__(self, other): return self.value() < other
    def __le__(self, other): return self.value() <= other
    def __gt__(self, other): return self.value() > other
    def __ge__(self, other): return self.value() >= other
    def __eq__(self, other): return self.value() == other   # type: ignore[override]
    def __ne__(self, other): return self.value() != other   # type: ignore[override]

    __hash__ = object.__hash__


class IndexVar(Affine):
    """An index variable of lt.compute: an output axis, or a reduce axis (lt.reduce_axis)."""
    __slots__ = ("extent", "name", "reduce")

    def __init__(self, extent: int, name: str, reduce: bool):
        if not isinstance(extent, int) or isinstance(extent, bool) or extent < 0:
            raise ValueError(f"lt.compute: an axis extent is an int >= 0, not {extent!r}")
        self.extent, self.name, self.reduce = extent, name, reduce
        super().__init__(((self, 1),), 0)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{'reduce_axis' if self.reduce else 'axis'}({self.name}, {self.extent})"


def _positive(value: Any, op: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise TypeError(f"lt.compute: an index {op} takes a positive int, not {value!r}")
    return value


def _index_like(value: Any) -> bool:
    return isinstance(value, Affine) or (isinstance(value, int) and not isinstance(value, bool))


def reduce_axis(extent: int, name: Optional[str] = None) -> IndexVar:
    """An axis of `extent` that a reducer (lt.sum, lt.max, lt.min with axis=it) sums over in an
    lt.compute.

    >>> a, b = lt.ones((2, 3)), lt.ones((3, 4))
    >>> k = lt.reduce_axis(3)
    >>> lt.compute((2, 4), lambda i, j: lt.sum(a[i, k] * b[k, j], axis=k)).tolist()[0]
    [3.0, 3.0, 3.0, 3.0]
    """
    return IndexVar(extent, name or f"k{next(_ids)}", reduce=True)


class _Grow(Exception):
    """Raised where fcompute uses reduce axes its iteration space has no place for yet: it is run
    again with them (so that the space holds exactly the axes used: a reduction built over
    unused size-1 axes would not fuse with its consumers, whose spaces would differ in rank)."""

    def __init__(self, axes: list["IndexVar"], device: Optional[str] = None):
        super().__init__("lt.compute: internal (a reduce axis or the device found)")
        self.axes, self.device = axes, device


class _Space:
    """The iteration space of the lt.compute being evaluated: its output axes, then the reduce
    axes it uses, in the order they were first met; and its device, the first indexed tensor's
    (index values made before one was met are made there on a second run)."""

    def __init__(self, axes: Sequence[IndexVar], reduced: Sequence[IndexVar], device: Optional[str]):
        self.axes, self.reduced = list(axes), list(reduced)
        self.device, self.made_on = device, None
        self.ranges: dict = {}   # the index values' aranges (graph nodes) -> (least, greatest) value
        self.places: dict[int, int] = {id(v): d for d, v in enumerate(self.axes + self.reduced)}
        self.rank = len(self.places)

    def place(self, v: IndexVar) -> int:
        if id(v) not in self.places:
            self.grow([v])
        return self.places[id(v)]

    def grow(self, variables: Sequence[IndexVar]) -> None:
        """Raise _Grow with those of `variables` the space has no place for (none: return)."""
        new = list({id(v): v for v in variables if id(v) not in self.places}.values())
        for v in new:
            if not v.reduce:
                raise ValueError(f"lt.compute: index variable {v.name} belongs to another lt.compute")
        if new:
            raise _Grow(new)

    def unit_shape(self) -> tuple[int, ...]:
        return (1,) * self.rank

    def value_device(self) -> str:
        """The device to make index values and constants on (remembered, so that a tensor met
        later on another device reruns fcompute with that one)."""
        self.made_on = self.device or default_device()
        return self.made_on

    def meet(self, device: str) -> None:
        """A tensor of `device` is indexed."""
        if self.device is None:
            self.device = device
            if self.made_on is not None and self.made_on != device:
                raise _Grow([], device)

    def shape_along(self, v: IndexVar) -> tuple[int, ...]:
        shape = [1] * self.rank
        shape[self.place(v)] = v.extent
        return tuple(shape)


def _space(what: str) -> _Space:
    space = getattr(_local, "space", None)
    if space is None:
        raise ValueError(f"lt.compute: index variables are only usable inside an lt.compute's fcompute "
                         f"(tried to {what})")
    return space


class Expression(Tensor):
    """A value of a tensor expression: a lazy tensor over the iteration space of the
    lt.compute being evaluated. The tensor methods and lt's functions work on it and give
    expressions (a Tensor subclass: `_new` keeps the kind); its operators refuse a plain tensor
    (index it with the variables: broadcast over the space by position, it would be wrong)."""
    __slots__ = ()

    def _new(self, node: Node) -> "Expression":
        return Expression(node, self.device)

    def __getattribute__(self, name: str) -> Any:
        """Tensor methods give expressions (astype, exp, clip, ...: a method that makes a plain
        Tensor of the result has it wrapped)."""
        value = object.__getattribute__(self, name)
        if name.startswith("_") or name in _OWN_METHODS or not callable(value):
            return value

        def method(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return _wrap(result) if type(result) is Tensor else result
        return method

    @property
    def tensor(self) -> Tensor:
        """The same value as a plain tensor over the iteration space."""
        return Tensor(self.node, self.device)

    def _binary(self, other: Any, op: Callable[[Any, Any], Any], swap: bool = False) -> "Expression":
        other = _operand(other)
        return _wrap(op(other, self.tensor) if swap else op(self.tensor, other))

    def __add__(self, o): return self._binary(o, lambda a, b: a + b)
    def __radd__(self, o): return self._binary(o, lambda a, b: a + b, swap=True)
    def __sub__(self, o): return self._binary(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._binary(o, lambda a, b: a - b, swap=True)
    def __mul__(self, o): return self._binary(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._binary(o, lambda a, b: a * b, swap=True)
    def __truediv__(self, o): return self._binary(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._binary(o, lambda a, b: a / b, swap=True)
    def __floordiv__(self, o): return self._binary(o, lambda a, b: a // b)
    def __rfloordiv__(self, o): return self._binary(o, lambda a, b: a // b, swap=True)
    def __mod__(self, o): return self._binary(o, lambda a, b: a % b)
    def __rmod__(self, o): return self._binary(o, lambda a, b: a % b, swap=True)
    def __pow__(self, o): return self._binary(o, lambda a, b: a ** b)
    def __rpow__(self, o): return self._binary(o, lambda a, b: a ** b, swap=True)
    def __lt__(self, o): return self._binary(o, lambda a, b: a < b)
    def __le__(self, o): return self._binary(o, lambda a, b: a <= b)
    def __gt__(self, o): return self._binary(o, lambda a, b: a > b)
    def __ge__(self, o): return self._binary(o, lambda a, b: a >= b)
    def __eq__(self, o): return self._binary(o, lambda a, b: a == b)   # type: ignore[override]
    def __ne__(self, o): return self._binary(o, lambda a, b: a != b)   # type: ignore[override]
    __hash__ = object.__hash__
    def __and__(self, o): return self._binary(o, lambda a, b: a & b)
    def __or__(self, o): return self._binary(o, lambda a, b: a | b)

    def __bool__(self) -> bool:
        raise TypeError("lt.compute: an expression has no truth value while it is built (use lt.where "
                        "for a condition)")

    # the reducers (lt.sum(e, axis=k) comes here)
    def sum(self, axis: Any = None, keepdims: bool = False, *, dtype: Any = None, **ignored: Any) -> "Expression":
        """The sum over reduce axes, accumulated in the dtype (or in `dtype`, cast to first), as a
        matrix product accumulates: float16 in float32; integers and bool as numpy sums them."""
        places = _reduced_places("sum", axis)
        x = _spread(self.tensor if dtype is None else self.tensor.astype(dtype), places)
        if not (x.dtype.is_float or x.dtype.is_complex):
            return _wrap(x.sum(axis=places, keepdims=True))
        return Expression(sum_in_dtype(x.node, places, x.dtype), x.device)

    def prod(self, axis: Any = None, keepdims: bool = False, **ignored: Any) -> "Expression":
        places = _reduced_places("prod", axis)
        return _wrap(_spread(self.tensor, places).prod(axis=places, keepdims=True))

    def max(self, axis: Any = None, keepdims: bool = False, **ignored: Any) -> "Expression":
        places = _reduced_places("max", axis)
        return _wrap(_spread(self.tensor, places).max(axis=places, keepdims=True))

    def min(self, axis: Any = None, keepdims: bool = False, **ignored: Any) -> "Expression":
        places = _reduced_places("min", axis)
        return _wrap(_spread(self.tensor, places).min(axis=places, keepdims=True))

    def logsumexp(self, axis: Any = None, keepdims: bool = False, **ignored: Any) -> "Expression":
        """log(sum(exp(x))) over reduce axes, from the maximum (no overflow; -inf where every
        value is -inf)."""
        places = _reduced_places("logsumexp", axis)
        x = _spread(self.tensor, places)
        top = x.max(axis=places, keepdims=True)
        shift = where(abs(top) < math.inf, top, 0.0)   # (an all -inf or inf row: no nan from inf - inf)
        return _wrap((x - shift).exp().sum(axis=places, keepdims=True).log() + shift)

    def argmax(self, axis: Any = None, keepdims: bool = False, **ignored: Any) -> "Expression":
        """The place along one reduce axis of the greatest value (the first of equal ones)."""
        place = _one_place("argmax", axis)
        return _wrap(_spread(self.tensor, (place,)).argmax(axis=place, keepdims=True))

    def argmin(self, axis: Any = None, keepdims: bool = False, **ignored: Any) -> "Expression":
        place = _one_place("argmin", axis)
        return _wrap(_spread(self.tensor, (place,)).argmin(axis=place, keepdims=True))


_OWN_METHODS = frozenset({"sum", "prod", "max", "min", "logsumexp", "argmax", "argmin", "tensor"})


def _spread(t: Tensor, places: tuple[int, ...]) -> Tensor:
    """`t` broadcast along the reduce axes at `places` to their extents: a value that does not
    vary along a reduce axis still counts once per step of it (a sum over k of x[i] is
    extent(k) * x[i], as TVM's)."""
    space = _space("reduce")
    shape = list(t.shape)
    for p in places:
        shape[p] = space.reduced[p - len(space.axes)].extent
    return t if tuple(shape) == t.shape else t.broadcast_to(tuple(shape))


def _wrap(t: Tensor) -> Expression:
    """`t` (a tensor over the iteration space) as an expression."""
    return Expression(t.node, t.device)


def _reduced_places(what: str, axis: Any) -> tuple[int, ...]:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if not axes or not all(isinstance(a, IndexVar) and a.reduce for a in axes):
        raise ValueError(f"lt.{what} of a tensor expression reduces over reduce axes: axis=k or axis=(k, l) "
                         f"with k = lt.reduce_axis(n), not axis={axis!r}")
    space = _space(f"reduce with lt.{what}")
    space.grow(axes)
    return tuple(sorted(space.place(a) for a in axes))


def _one_place(what: str, axis: Any) -> int:
    if isinstance(axis, (tuple, list)) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, (tuple, list)):
        raise ValueError(f"lt.{what} of a tensor expression runs along one reduce axis, not {len(axis)}")
    (place,) = _reduced_places(what, axis)
    return place


class _Probe:
    """A stand-in operand that records the operations a combine function applies to it."""
    _lt_binary = staticmethod(lambda function, a, b: _Probe(function.__name__, (a, b)))
    _lt_where = staticmethod(lambda c, x, y: _Probe("where", (c, x, y)))

    def __init__(self, op: str = "", args: tuple = ()):
        self.op, self.args = op, args

    def __add__(self, other): return _Probe("add", (self, other))
    def __radd__(self, other): return _Probe("add", (other, self))
    def __mul__(self, other): return _Probe("multiply", (self, other))
    def __rmul__(self, other): return _Probe("multiply", (other, self))
    def __gt__(self, other): return _Probe("gt", (self, other))
    def __ge__(self, other): return _Probe("ge", (self, other))
    def __lt__(self, other): return _Probe("lt", (self, other))
    def __le__(self, other): return _Probe("le", (self, other))

    def __getitem__(self, item):
        raise TypeError("a stand-in for one value")   # (a combine of pairs: tried with pairs next)


_REDUCERS = {"add": ("sum", 0), "multiply": ("prod", 1), "maximum": ("max", -math.inf), "minimum": ("min", math.inf),
             "logaddexp": ("logsumexp", -math.inf)}
_MIRRORED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}   # b OP a is a MIRRORED[OP] b
_NEGATED = {"gt": "le", "ge": "lt", "lt": "ge", "le": "gt"}


def comm_reducer(combine: Callable[[Any, Any], Any], identity: Any, name: Optional[str] = None) -> Callable[..., Any]:
    """A commutative reducer from its combine function and identity (TVM's te.comm_reducer):
    reducer(expr, axis=k) combines the identity with every value along the reduce axes, in order.
    The combine is recognized by calling it on stand-ins; it must be

    - of two values: a + b, a * b, lt.maximum(a, b), lt.minimum(a, b) or lt.logaddexp(a, b) (a
      log-sum-exp, computed stably from the maximum);
    - of two pairs, an arg-extremum carried as (key, payload) -- say (value, index) -- that keeps
      one pair by comparing keys: (lt.where(c, a[0], b[0]), lt.where(c, a[1], b[1])) with c a
      comparison of a[0] and b[0] (or the same with the key second). `>=` keeps the first of
      equal keys, `>` the last. reducer((key, payload), axis=k) gives both (lt.compute returns
      a tuple of two tensors then).

    >>> x = lt.asarray([[3.0, -1.0], [-2.0, -5.0]])
    >>> k = lt.reduce_axis(2)
    >>> relu_max = lt.comm_reducer(lambda a, b: lt.maximum(a, b), 0.0)
    >>> lt.compute((2,), lambda i: relu_max(x[i, k], axis=k)).tolist()
    [3.0, 0.0]
    >>> argmax = lt.comm_reducer(lambda a, b: (lt.where(a[0] >= b[0], a[0], b[0]), lt.where(a[0] >= b[0], a[1], b[1])),
    ...                          (-np.inf, -1))
    >>> [t.tolist() for t in lt.compute((2,), lambda i: argmax((x[i, k], k), axis=k))]
    [[3.0, -2.0], [0, 0]]
    """
    a, b = _Probe(), _Probe()
    try:
        made = combine(a, b)
    except Exception:   # (anything else it does to its operands: perhaps a combine of pairs)
        made = None
    if isinstance(made, _Probe) and made.op in _REDUCERS and set(map(id, made.args)) == {id(a), id(b)}:
        return _value_reducer(combine, identity, made.op, name)
    pair = _pair_kind(combine)
    if pair is None:
        raise ValueError("lt.comm_reducer: the combine must be a + b, a * b, lt.maximum(a, b), lt.minimum(a, b), "
                         "lt.logaddexp(a, b) of its two operands, or keep one of two (key, payload) pairs by "
                         "comparing keys (an argmax)")
    return _pair_reducer(combine, identity, *pair, name)


def _value_reducer(combine: Callable, identity: Any, op: str, name: Optional[str]) -> Callable[..., Any]:
    method, natural = _REDUCERS[op]

    def reducer(expr: Any, axis: Any) -> Expression:
        if not isinstance(expr, Expression):
            expr = _wrap(_operand(expr)) if isinstance(expr, Affine) else expr
        reduced = getattr(expr, method)(axis=axis)
        return reduced if identity == natural else combine(reduced, identity)
    reducer.__name__ = name or f"{method}_from_{identity!r}"
    return reducer


def _pair_kind(combine: Callable) -> Optional[tuple[int, str]]:
    """(which element of a pair is the key, the comparison that keeps the first pair: 'ge' /
    'gt' for a maximum, 'le' / 'lt' for a minimum) of a combine of pairs, or None."""
    a, b = (_Probe(), _Probe()), (_Probe(), _Probe())
    try:
        made = combine(a, b)
    except Exception:
        return None
    if not (isinstance(made, tuple) and len(made) == 2 and all(isinstance(m, _Probe) and m.op == "where" for m in made)):
        return None
    condition, other = made[0].args[0], made[1].args[0]
    if not (isinstance(condition, _Probe) and isinstance(other, _Probe) and condition.op in _MIRRORED
            and other.op == condition.op and _same(other.args, condition.args)):
        return None   # (one comparison, written once or twice)
    condition_args = condition.args
    for key in (0, 1):
        kept = made[key].args[1:]
        if _same(condition_args, (a[key], b[key])):
            op = condition.op
        elif _same(condition_args, (b[key], a[key])):
            op = _MIRRORED[condition.op]
        else:
            continue
        if _same(kept, (b[key], a[key])):   # (where(c, b, a): a kept where c does not hold)
            op = _NEGATED[op]
        elif not _same(kept, (a[key], b[key])):
            return None
        payload = made[1 - key].args[1:]
        first_kept = kept[0] is a[key]
        if not _same(payload, (a[1 - key], b[1 - key]) if first_kept else (b[1 - key], a[1 - key])):
            return None
        return key, op
    return None


def _same(these: tuple, those: tuple) -> bool:
    """The same objects, in order (stand-ins compare by identity: their == records an op)."""
    return len(these) == len(those) and all(u is v for u, v in zip(these, those))


def _pair_reducer(combine: Callable, identity: Any, key: int, op: str, name: Optional[str]) -> Callable[..., Any]:
    def reducer(pair: Any, axis: Any) -> tuple[Expression, Expression]:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError("lt.comm_reducer: this reducer takes a pair (key, payload) of expressions")
        place = _one_place("comm_reducer", axis)
        keys, payload = (_spread(_operand(v), (place,)) for v in (pair[key], pair[1 - key]))
        last = op in ("gt", "lt")   # (ties keep the later pair: the arg-extremum of the reversed axis)
        searched = keys.flip(place) if last else keys
        found = searched.argmax(axis=place, keepdims=True) if op in ("ge", "gt") else \
            searched.argmin(axis=place, keepdims=True)
        if last:
            found = (keys.shape[place] - 1) - found
        reduced = [_wrap(take_along_axis(keys, found, axis=place)), _wrap(take_along_axis(payload, found, axis=place))]
        if key == 1:   # (the pair as the user's: key second)
            reduced.reverse()
        return tuple(combine(tuple(identity), tuple(reduced)))   # (the identity first: it is met first)
    reducer.__name__ = name or f"arg_{op}_reducer"
    return reducer


def _operand(value: Any) -> Any:
    """A tensor-expression operand as a tensor over the iteration space (numbers stay)."""
    if isinstance(value, Expression):
        return value.tensor
    if isinstance(value, Affine):
        return value.value().tensor
    if isinstance(value, Tensor):
        if value.ndim == 0:
            return value
        raise TypeError(f"lt.compute: a tensor of shape {value.shape} used in an expression without indices: "
                        "index it with the compute's variables (x[i, j])")
    return value


def _where(condition: Any, x: Any, y: Any) -> Expression:
    """lt.where inside lt.compute: over the iteration space."""
    return _wrap(where(*[_operand(v) for v in (condition, x, y)]))


def _binary(function: Callable[[Any, Any], Tensor], a: Any, b: Any) -> Expression:
    """A two-operand function of the namespace (lt.maximum, lt.minimum, ...) inside lt.compute."""
    return _wrap(function(_operand(a), _operand(b)))


# the op families call these through the objects (they are below this module: no import)
Affine._lt_value = Affine.value   # (lt.clip(i - 1, 0, n - 1), lt.exp(i * 0.1): an index's values)
Affine._lt_index_into = Expression._lt_index_into = staticmethod(lambda x, key: index(x, key))
Affine._lt_where = Expression._lt_where = staticmethod(lambda c, x, y: _where(c, x, y))
Affine._lt_binary = Expression._lt_binary = staticmethod(lambda f, a, b: _binary(f, a, b))


def index(x: Tensor, key: Any) -> Expression:
    """x[key] where the key holds index variables: the view of x over the iteration space."""
    space = _space("index a tensor")
    key = key if isinstance(key, tuple) else (key,)
    if len(key) != x.ndim:
        raise IndexError(f"lt.compute: a tensor of shape {x.shape} needs {x.ndim} indices, got {len(key)} "
                         f"({', '.join(map(repr, key))})")
    if any(isinstance(k, Expression) for k in key):
        space.meet(x.device)
        return _gathered(x, key, space)
    exprs = [Affine.of(k) for k in key]
    space.grow([v for e in exprs for v, _ in e.terms])
    space.meet(x.device)
    empty = any(v.extent == 0 for e in exprs for v, _ in e.terms)   # (no element read: no bound to check)
    seen: dict[int, int] = {}
    for axis, e in enumerate(exprs):
        for v, _ in e.terms:
            if seen.setdefault(id(v), axis) != axis:
                raise ValueError(f"lt.compute: variable {v.name} indexes two axes of a tensor of shape {x.shape} "
                                 "(a diagonal): not supported yet")
        if len(e.terms) > 2:
            raise ValueError(f"lt.compute: index {e!r} of axis {axis} has more than two variables: not supported "
                             "yet (two: a sliding window, y * stride + ky)")
        lo, hi = e.range()
        if not empty and (lo < 0 or hi >= x.shape[axis]):
            raise IndexError(f"lt.compute: index {e!r} of axis {axis} of a tensor of shape {x.shape} ranges over "
                             f"[{lo}, {hi}], outside [0, {x.shape[axis]}); pad the tensor first (x.pad(...)) "
                             "or index a smaller range")
    if empty:   # (nothing read: zeros of the space's shape along the variables)
        shape = [1] * space.rank
        for e in exprs:
            for v, _ in e.terms:
                shape[space.place(v)] = v.extent
        return _wrap(full(tuple(shape), 0, dtype=x.dtype, device=x.device))
    return _wrap(x._new(apply_moves(x.node, tuple(_moves(x.shape, exprs, space)))))


def _gathered(x: Tensor, key: tuple, space: _Space) -> Expression:
    """x[key] where some index is computed (an integer expression: i // 2, a clipped floor of a
    scaled coordinate): a gather from x's elements, each index first proven within its axis over
    the whole space (interval arithmetic over the index's graph, `_value_range`), else refused."""
    flat = None
    for axis, (k, n) in enumerate(zip(key, x.shape)):
        values = _operand(k if isinstance(k, Expression) else Affine.of(k))
        if not values.dtype.is_integer:
            raise TypeError(f"lt.compute: index {axis} of a tensor of shape {x.shape} is {values.dtype.name}, not an "
                            "integer (cast a computed coordinate with .astype(lt.int64) after flooring it)")
        lo, hi = _value_range(values.node, space.ranges)
        if lo < 0 or hi >= n:
            raise IndexError(f"lt.compute: computed index {axis} of a tensor of shape {x.shape} may range over "
                             f"[{lo}, {hi}], outside [0, {n}); clip it (lt.clip(index, 0, {n - 1})) or pad the tensor")
        stride = math.prod(x.shape[axis + 1:])
        term = values * stride if stride != 1 else values
        flat = term if flat is None else flat + term
    if flat is None:
        return _wrap(x.reshape(space.unit_shape()))
    return _wrap(take(x.reshape(-1), flat.astype(int64)))


_EXACT = {Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.SHRINK, Op.FLIP, Op.DETACH}
_ROUNDING = {Op.FLOOR: math.floor, Op.CEIL: math.ceil, Op.TRUNC: math.trunc, Op.ROUND: round}   # (round: to even)


def _value_range(node: Node, known: dict) -> tuple[float, float]:
    """The least and greatest value `node` can take: interval arithmetic over its graph, from
    the index values' aranges (`known`) and constants; unbounded where it cannot say."""
    ranges: dict[Node, tuple[float, float]] = {}
    for n in toposort([node]):
        spans = [ranges[src] for src in n.src]
        if n in known:
            value = known[n]
        elif n.op is Op.CONST and isinstance(n.arg, (int, float)):
            value = (n.arg, n.arg)
        elif n.op in _EXACT or (n.op is Op.CAST and spans):
            value = spans[0]
            if n.op is Op.CAST and n.dtype.is_integer:   # (a float cast to an integer truncates)
                value = (math.trunc(value[0]), math.trunc(value[1])) if all(map(math.isfinite, value)) else value
        elif n.op in _ROUNDING:   # (each monotonic: the bounds' own roundings)
            value = spans[0]
            if all(map(math.isfinite, value)):
                value = tuple(map(_ROUNDING[n.op], value))
        elif n.op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV) and len(spans) == 2:
            value = _arithmetic(n.op, *spans)
            if n.dtype.is_float:   # (rounded: a few ulps wider, away from zero; 0 stays exact)
                value = tuple(v * (1 + math.copysign(_ULPS, v) * (1 if i else -1)) if math.isfinite(v) else v
                              for i, v in enumerate(value))
        elif n.op is Op.NEG:
            value = (-spans[0][1], -spans[0][0])
        elif n.op in (Op.MAX, Op.MIN):
            pick = max if n.op is Op.MAX else min
            value = (pick(spans[0][0], spans[1][0]), pick(spans[0][1], spans[1][1]))
        elif n.op in (Op.FLOORDIV, Op.IDIV) and spans[1][0] == spans[1][1] and spans[1][0] > 0:
            c = spans[1][0]
            value = (math.floor(spans[0][0] / c) if math.isfinite(spans[0][0]) else -math.inf,
                     math.floor(spans[0][1] / c) if math.isfinite(spans[0][1]) else math.inf)
        elif n.op in (Op.MOD, Op.IMOD) and spans[1][0] == spans[1][1] and spans[1][0] > 0:
            value = (0, spans[1][0] - 1) if n.dtype.is_integer else (0, spans[1][0])
        elif n.op is Op.WHERE:
            value = (min(spans[1][0], spans[2][0]), max(spans[1][1], spans[2][1]))
        else:
            value = (-math.inf, math.inf)
        if n.dtype.is_integer and not n.dtype.is_bool and (value[0] < _least(n.dtype) or value[1] > _most(n.dtype)):
            value = (-math.inf, math.inf)   # (it would wrap around)
        ranges[n] = value
    return ranges[node]


_ULPS = 2.0 ** -10   # (a relative widening above float16's rounding, and far above float32's)


def _least(dtype) -> int:
    return -(1 << (8 * dtype.itemsize - 1)) if not dtype.is_unsigned else 0


def _most(dtype) -> int:
    return (1 << (8 * dtype.itemsize - (0 if dtype.is_unsigned else 1))) - 1


def _arithmetic(op: Op, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    if op is Op.ADD:
        return a[0] + b[0], a[1] + b[1]
    if op is Op.SUB:
        return a[0] - b[1], a[1] - b[0]
    if op is Op.DIV:
        if b[0] <= 0 <= b[1]:
            return -math.inf, math.inf
        b = (1 / b[1], 1 / b[0])
    products = [u * v for u in a for v in b if not (math.isinf(u) and v == 0 or math.isinf(v) and u == 0)]
    return (min(products), max(products)) if products else (-math.inf, math.inf)


def _moves(shape: tuple[int, ...], exprs: list[Affine], space: _Space) -> list:
    """The movement ops that make a tensor of `shape` indexed by `exprs` (one per axis) a view
    over the iteration space: one SHRINK cuts each axis to what its index reads (a constant: one
    element; a*v + c: a slice with step a, reversed where a < 0; a*v + b*w + c: the range its
    windows span, reversed where both are negative), the sliding windows of the two-variable
    axes (movement.windows_last_axis), then the variables' axes put in their places."""
    slices, owners, windows = [], [], []
    for axis, e in enumerate(exprs):
        if not e.terms:
            slices.append((e.const, e.const + 1, 1))
            owners.append(None)
        elif len(e.terms) == 1:
            (v, a), = e.terms
            slices.append((e.const, e.const + a * v.extent, a))
            owners.append(v)
        else:
            (v, a), (w, b) = e.terms
            if (a < 0) != (b < 0):
                raise ValueError(f"lt.compute: index {e!r} mixes a positive and a negative coefficient: not "
                                 "supported yet")
            sign = -1 if a < 0 else 1   # (both negative: the span read backwards, then as both positive)
            span = abs(a) * (v.extent - 1) + abs(b) * (w.extent - 1) + 1   # (extents > 0: index() reads none else)
            slices.append((e.const, e.const + sign * span, sign))
            owners.append((v, w))
            windows.append((axis, w.extent, abs(a), abs(b)))
    moves: list = []
    if any(cut != (0, n, 1) for cut, n in zip(slices, shape)):
        moves.append((Op.SHRINK, tuple(slices)))
    shape = tuple(max(0, -(-(stop - start) // step)) for start, stop, step in slices)
    order = list(range(len(shape)))
    for axis, k, stride, dilation in windows:   # each to the end, made (o, k) there
        at = order.index(axis)
        if at != len(order) - 1:
            perm = tuple(d for d in range(len(shape)) if d != at) + (at,)
            moves.append((Op.PERMUTE, perm))
            shape = tuple(shape[d] for d in perm)
            order = [order[d] for d in perm]
        shape = windows_last_axis(shape, k, stride, dilation, moves)
        order = order[:-1] + [(axis, 0), (axis, 1)]
    variables = []
    for item in order:   # the variable of each axis now (None: a constant's axis of size 1)
        owner = owners[item[0]] if isinstance(item, tuple) else owners[item]
        variables.append(owner[item[1]] if isinstance(item, tuple) else owner)
    kept = [d for d, v in enumerate(variables) if v is not None]
    places = {d: space.place(variables[d]) for d in kept}
    ranked = sorted(kept, key=places.__getitem__)
    if len(kept) < len(shape):
        moves.append((Op.RESHAPE, tuple(shape[d] for d in kept)))
        ranked = [kept.index(d) for d in ranked]
    if ranked != sorted(ranked):
        moves.append((Op.PERMUTE, tuple(ranked)))
    full_shape = [1] * space.rank
    for d in kept:
        full_shape[places[d]] = shape[d]
    if tuple(full_shape) != tuple(shape[d] for d in sorted(kept, key=places.__getitem__)):
        moves.append((Op.RESHAPE, tuple(full_shape)))
    return moves


def _evaluated(value: Any, space: _Space) -> Any:
    """fcompute's value as a tensor over `space`, every reduce axis reduced (a tuple of them for
    a tuple of values: a reducer of pairs gives two)."""
    if isinstance(value, tuple):
        return tuple(_evaluated(v, space) for v in value)
    if isinstance(value, Affine):
        value = value.value()
    if isinstance(value, Expression):
        result = value.tensor
    elif isinstance(value, Tensor) and value.ndim == 0:
        result = value.reshape(space.unit_shape())
    elif isinstance(value, (bool, int, float, complex)):
        result = full(space.unit_shape(), value, device=space.value_device())
    else:
        raise TypeError(f"lt.compute: fcompute returned {type(value).__name__}; it returns an expression of "
                        "indexed tensors (x[i, j] * 2), an index expression or a number")
    loose = [v.name for v in space.reduced if result.shape[space.places[id(v)]] != 1]
    if loose:
        raise ValueError(f"lt.compute: reduce axis {', '.join(loose)} is used outside a reducer: wrap the "
                         "expression in lt.sum / lt.max / lt.min over it (axis=k)")
    return result


def compute(shape: Union[int, Sequence[int]], fcompute: Callable[..., Any], name: Optional[str] = None) -> Tensor:
    """A tensor of `shape` whose element [i, j, ...] is fcompute(i, j, ...), an expression over
    tensors indexed by affine expressions of the index variables (see the module's docstring).

    >>> x = lt.arange(6.0).reshape(2, 3)
    >>> lt.compute((3, 2), lambda i, j: x[j, i] * 10).tolist()
    [[0.0, 30.0], [10.0, 40.0], [20.0, 50.0]]
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    axes = [IndexVar(n, f"i{d}", reduce=False) for d, n in enumerate(shape)]
    reduced: list[IndexVar] = []
    device = None
    outer = getattr(_local, "space", None)
    while True:   # (fcompute runs again where it used reduce axes or a device not known before)
        space = _Space(axes, reduced, device)
        _local.space = space
        try:
            result = _evaluated(fcompute(*axes), space)
            break
        except _Grow as grown:
            reduced += grown.axes
            device = grown.device or space.device
            if len(reduced) > MAX_REDUCE_AXES:
                raise ValueError(f"lt.compute: at most {MAX_REDUCE_AXES} reduce axes in one compute") from None
        finally:
            _local.space = outer
    if isinstance(result, tuple):
        return tuple(_output(r, shape) for r in result)
    return _output(result, shape)


def _output(result: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A value over the iteration space (every reduce axis reduced) as the compute's result."""
    moves = [(Op.RESHAPE, result.shape[:len(shape)])]   # (made on the nodes: a tensor of its own, no view)
    if result.shape[:len(shape)] != shape:   # (an output axis the formula does not use)
        moves.append((Op.EXPAND, shape))
    return result._new(apply_moves(result.node, tuple(moves)))


__all__ = ["comm_reducer", "compute", "reduce_axis"]
