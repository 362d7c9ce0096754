"""Symbolic sizes: an integer that is a polynomial in named size variables, each known to lie in
a range [lo, hi], so that one compiled kernel serves every size in the range.

A `Sym` supports what shape arithmetic does with ints (+, -, *, exact // and %, comparisons) and
decides a comparison only where it holds for every value of the variables in their ranges
(`bounds`: exact for one variable, interval arithmetic over the monomials for several: sound,
never a guess). Where it does not (is
`n == 64`? is `n % 8 == 0`?), it raises `Undecidable`: the caller falls back to concrete sizes,
so a symbolic compile is either right for the whole range or not made. A Sym is never an index
(`range(n)`, `int(n)` raise too): code that needs the number must ask for it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Union

from .ops import Op

# name -> (lo, hi): the range of each size variable (1 <= lo <= hi)
RANGES: dict[str, tuple[int, int]] = {}
# name -> the value performance decisions assume (a schedule's tile sizes; never correctness)
HINTS: dict[str, int] = {}
# name -> (x, f): a variable derived from others, ceil(x / f) (a split's outer loop count)
DERIVED: dict[str, tuple["Sym", int]] = {}


class Undecidable(Exception):
    """A question about symbolic sizes whose answer depends on their values."""


Int = Union[int, "Sym"]
_Terms = tuple[tuple[tuple[str, ...], int], ...]   # ((monomial, coefficient), ...), sorted; () monomial = 1


def var(name: str, lo: int, hi: int, hint: int) -> "Sym":
    """The size variable `name`, in [lo, hi]; schedules are chosen as if it were `hint`."""
    if not 1 <= lo <= hint <= hi:
        raise ValueError(f"size variable {name}: range [{lo}, {hi}] and hint {hint} must have 1 <= lo <= hint <= hi")
    RANGES[name] = (lo, hi)
    HINTS[name] = hint
    return Sym((((name,), 1),))


def _normal(terms: dict[tuple[str, ...], int]) -> Int:
    kept = tuple(sorted((m, c) for m, c in terms.items() if c))
    if not kept:
        return 0
    if len(kept) == 1 and kept[0][0] == ():
        return kept[0][1]
    return Sym(kept)


def _terms(x: Int) -> dict[tuple[str, ...], int]:
    if isinstance(x, Sym):
        return dict(x.terms)
    if isinstance(x, int) and not isinstance(x, bool):
        return {(): int(x)}
    raise TypeError(f"symbolic size arithmetic with {type(x).__name__}")


class Sym:
    __slots__ = ("terms", "_hash")

    def __init__(self, terms: _Terms):
        object.__setattr__(self, "terms", terms)
        object.__setattr__(self, "_hash", hash(("lt.Sym", terms)))

    def __setattr__(self, name, value):
        raise AttributeError("symbolic sizes are immutable")

    # ---- arithmetic -------------------------------------------------------------------------

    def __add__(self, other: Int) -> Int:
        if not isinstance(other, (int, Sym)):
            return NotImplemented
        terms = _terms(self)
        for m, c in _terms(other).items():
            terms[m] = terms.get(m, 0) + c
        return _normal(terms)

    __radd__ = __add__

    def __neg__(self) -> Int:
        return _normal({m: -c for m, c in self.terms})

    def __sub__(self, other: Int) -> Int:
        if not isinstance(other, (int, Sym)):
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other: Int) -> Int:
        return (-self) + other

    def __mul__(self, other: Int) -> Int:
        if not isinstance(other, (int, Sym)):
            return NotImplemented
        terms: dict[tuple[str, ...], int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in _terms(other).items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return _normal(terms)

    __rmul__ = __mul__

    def __floordiv__(self, other: Int) -> Int:
        """Exact where every coefficient divides (then it is the polynomial's quotient for every
        value), or where the quotient is one value over the whole range."""
        if isinstance(other, int) and other > 0:
            if all(c % other == 0 for _, c in self.terms):
                return _normal({m: c // other for m, c in self.terms})
            lo, hi = self.bounds()
            if lo // other == hi // other:
                return lo // other
        raise Undecidable(f"({self}) // {other}")

    def __mod__(self, other: Int) -> Int:
        if isinstance(other, int) and other > 0:
            rest = {m: c for m, c in self.terms if m and c % other}
            if not rest:
                return dict(self.terms).get((), 0) % other
            return self - other * (self // other)
        raise Undecidable(f"({self}) % {other}")

    def __rfloordiv__(self, other: Int) -> Int:
        if other == 0 and self.bounds()[0] > 0:
            return 0
        raise Undecidable(f"{other} // ({self})")

    def __divmod__(self, other: Int) -> tuple[Int, Int]:
        return self // other, self % other

    def __rmod__(self, other: Int) -> Int:
        if other == 0 and self.bounds()[0] > 0:
            return 0
        raise Undecidable(f"{other} % ({self})")

    # ---- what is known ----------------------------------------------------------------------

    def bounds(self) -> tuple[int, int]:
        """(least, greatest) value over the variables' ranges: exact for a polynomial of degree
        <= 3 in one variable (at the range's ends and the integers around its turning points),
        else by interval arithmetic per monomial (an enclosure: sound, maybe wider)."""
        names = {name for m, _ in self.terms for name in m}
        if len(names) == 1 and max(len(m) for m, _ in self.terms) <= 3:
            (name,) = names
            lo, hi = RANGES[name]
            c = [0, 0, 0, 0]
            for m, coef in self.terms:
                c[len(m)] = coef
            points = {lo, hi}
            a, b, d = 3 * c[3], 2 * c[2], c[1]   # p'(x) = a x^2 + b x + d
            roots = []
            if a:
                disc = b * b - 4 * a * d
                if disc >= 0:
                    roots = [(-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)]
            elif b:
                roots = [-d / b]
            for r in roots:
                for x in (math.floor(r) - 1, math.floor(r), math.floor(r) + 1, math.floor(r) + 2):
                    if lo <= x <= hi:
                        points.add(x)
            values = [c[0] + c[1] * x + c[2] * x * x + c[3] * x ** 3 for x in points]
            return min(values), max(values)
        lo = hi = 0
        for m, c in self.terms:
            a = b = 1
            for name in m:
                v_lo, v_hi = RANGES[name]
                a, b = a * v_lo, b * v_hi   # (all values >= 0: sizes and counts)
            lo, hi = (lo + c * a, hi + c * b) if c > 0 else (lo + c * b, hi + c * a)
        return lo, hi

    def _sign(self, other: Int) -> tuple[int, int]:
        diff = self - other
        return diff.bounds() if isinstance(diff, Sym) else (diff, diff)

    def __lt__(self, other: Int) -> bool:
        lo, hi = self._sign(other)
        if hi < 0:
            return True
        if lo >= 0:
            return False
        raise Undecidable(f"{self} < {other}")

    def __le__(self, other: Int) -> bool:
        lo, hi = self._sign(other)
        if hi <= 0:
            return True
        if lo > 0:
            return False
        raise Undecidable(f"{self} <= {other}")

    def __gt__(self, other: Int) -> bool:
        return not self <= other

    def __ge__(self, other: Int) -> bool:
        return not self < other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (int, Sym)) or isinstance(other, bool):
            return NotImplemented
        lo, hi = self._sign(other)
        if lo == hi == 0:
            return True
        if lo > 0 or hi < 0:
            return False
        raise Undecidable(f"{self} == {other}")

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return self != 0

    def __index__(self) -> int:
        raise Undecidable(f"{self} used as a number")

    __int__ = __index__

    def __repr__(self) -> str:
        parts = []
        for m, c in self.terms:
            names = "*".join(m)
            parts.append(str(c) if not m else names if c == 1 else f"{c}*{names}")
        return " + ".join(parts) or "0"

    def substitute(self, values: dict[str, int]) -> int:
        """The value for these values of the variables (derived ones computed from them)."""
        return sum(c * math.prod(_value(name, values) for name in m) for m, c in self.terms)

    def names(self) -> set[str]:
        """The size variables it reads, a derived one's own (a kernel's parameters)."""
        names: set[str] = set()
        for m, _ in self.terms:
            for name in m:
                names |= DERIVED[name][0].names() if name in DERIVED else {name}
        return names


def _value(name: str, values: dict[str, int]) -> int:
    if name in values:
        return values[name]
    x, f = DERIVED[name]
    return -(-x.substitute(values) // f)


def ceil_div(x: Int, f: int) -> Int:
    """ceil(x / f) for f > 0: an int, an exact quotient, or a derived variable."""
    if not isinstance(x, Sym):
        return -(-x // f)
    if all(c % f == 0 for _, c in x.terms):
        return x // f
    name = f"ceil(({x})/{f})"
    if name not in DERIVED:
        lo, hi = x.bounds()
        if lo < 0:   # (a count: never below 0 where the sizes are valid; the bounds code assumes it)
            raise Undecidable(f"ceil(({x})/{f}) may be negative")
        RANGES[name] = (-(-lo // f), -(-hi // f))
        HINTS[name] = -(-x.substitute(HINTS) // f)
        DERIVED[name] = (x, f)
    return Sym((((name,), 1),))


def hint(x):
    """`x` at the sizes schedules are chosen for (HINTS): for decisions of speed, never of
    correctness (whether to compute a value into memory, how to tile a loop)."""
    return substitute(x, HINTS) if has_sym(x) else x


def surely_equal(a, b) -> bool:
    """Whether a == b for certain (ints, Syms or tuples of them); False where that depends on
    the sizes. For rewrites that apply only where it holds (an identity view dropped)."""
    try:
        return a == b
    except Undecidable:
        return False


def at_most(x: Int, cap: int = 1 << 16) -> int:
    """An int no less than x over the sizes' ranges (a local array's length), at most `cap`:
    Undecidable beyond (a tile that size would not fit on the stack)."""
    if not isinstance(x, Sym):
        return x
    high = x.bounds()[1]
    if high > cap:
        raise Undecidable(f"{x} may reach {high}: too long for a local array")
    return high


def divides(f: int, x: Int) -> bool:
    """Whether f divides x for certain (False where that depends on the sizes)."""
    try:
        return x % f == 0
    except Undecidable:
        return False


def substitute(x, values: dict[str, int]):
    """`x` (an int, a Sym, tuples of them, nested, or a frozen dataclass of such fields: a view)
    with the variables given values."""
    if isinstance(x, Sym):
        return x.substitute(values)
    if isinstance(x, tuple):
        return tuple(substitute(e, values) for e in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        changes = {f.name: substitute(getattr(x, f.name), values) for f in dataclasses.fields(x)}
        return type(x)(**changes)
    return x


def symbolic_nodes(roots) -> bool:
    """Whether some node under `roots` has a symbolic size."""
    from .graph import toposort
    return any(has_sym(n.shape) or has_sym(n.arg) for n in toposort(roots))


def has_sym(x) -> bool:
    """Whether `x` (an int, a Sym, tuples or dataclasses of them) holds a symbolic size."""
    if isinstance(x, Sym):
        return True
    if isinstance(x, tuple):
        return any(has_sym(e) for e in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(has_sym(getattr(x, f.name)) for f in dataclasses.fields(x))
    return False


def concrete(roots, values: dict[str, int]):
    """The graph (or kernel expression) under `roots` with every size variable given its value."""
    from .graph import Node, toposort
    memo = {}
    for n in toposort(roots):
        src = tuple(memo[s] for s in n.src)
        if n.op is Op.BUFFER:   # (its arg is the buffer: kept as it is)
            memo[n] = Node(n.op, n.dtype, substitute(n.shape, values), (), n.arg)
        else:
            memo[n] = Node(n.op, n.dtype, substitute(n.shape, values), src, substitute(n.arg, values))
    return [memo[r] for r in roots]


def prod(xs) -> Int:
    out: Int = 1
    for x in xs:
        out = out * x
    return out
