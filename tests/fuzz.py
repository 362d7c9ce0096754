"""A seeded differential fuzzer: small random programs run on numpy and on lazytensor, compared.

A program is a straight list of steps over variables v0, v1, ...: the inputs (random arrays of all
14 dtypes, complex ones included, of odd shapes: 0-d, 0- and 1-sized axes, now and then long axes)
and the results of random operations of every family (elementwise, casts, reductions with
keepdims, movement and views, indexing and writes `x[idx] = v`, matmul, sorting and scans,
creation). A value may be read by several later steps; several outputs are realized together
(`lt.realize(a, b, c)`). A step is kept only where numpy defines its result (no integer division
by zero, no float -> int cast out of range, ...: `undefined`) and where it does not run into a
defect already known (KNOWN_DEFECTS). Each step carries its lazytensor source and its numpy
source, so a failure prints as a self-contained Python script, and the same seed gives the same
program.

Floating-point tolerance comes from the program itself: the numpy reference runs again, several
times, with the result of every rounding step nudged by the error that step may make (an ulp for
`+`, a few for transcendentals, eps * sum|x| for a sum, ...). An output element may differ from
numpy by twice what the nudges moved it; an element that the nudges change discretely (a
comparison, a cast to int, an argmax near a tie, an int index) or by 10% or more (sin of 1e30) is
not compared, nor is the shape of an output that depends on such values (unique of a tanh).
Integers and bools are compared exactly, shapes and dtypes always.

Complex values: the steps offer a complex operand only the ops lazytensor defines for it (no
order, floor or bits: those raise TypeError there, and numpy orders complex numbers
lexicographically). Each part is nudged and compared as a float; where the parts mix (a product,
a function) both are nudged by the error of the modulus. Where numpy's special values differ
from the Array API's (C99 Annex G), which lazytensor follows, those elements are not compared
(`disputed`).

    python tests/fuzz.py --device cpu --minutes 30 --seed 0    # the long mode (a worker process)
    python tests/fuzz.py --device cpu --show 1234               # one program, as a script
"""
from __future__ import annotations

import argparse
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

import numpy as np

if __name__ == "__main__":  # a run of its own: a private kernel cache, like the test session's
    os.environ.setdefault("LT_CACHE_DIR", tempfile.mkdtemp(prefix="lt-fuzz-cache-"))

import lazytensor as lt  # noqa: E402

MAX_OPS = 12           # steps per program
SMALL_SIZE = 400       # elements per input, most of the time
LARGE_SIZE = 6000      # now and then: past the cpu's 4096-term sum blocks and vector tails
NUDGED_RUNS = 18       # reference runs with each rounding step nudged (see `nudge`): ~0.1 ms each

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
INTS = [d for d in DTYPES if d[0] in "iu"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
REAL_DTYPES = [d for d in DTYPES if d not in COMPLEX]

# Helpers the numpy side of a program calls (numpy has no erf, no descending sort); the same text
# is executed here and printed into every reproduction, so both always agree.
NUMPY_HELPERS = '''
def _erf(x):
    """math.erf per element, in the float dtype numpy's ufuncs give x's dtype."""
    dtype = np.exp(np.zeros((), x.dtype)).dtype
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(dtype)


def _argsort_desc(x, axis):
    """Stable descending order with nan last (lazytensor's documented order)."""
    key = -x if x.dtype.kind == "f" else ~x   # ~ reverses the order of bools and every int type
    return np.argsort(key, axis=axis, kind="stable")


def _sort_desc(x, axis):
    return np.take_along_axis(x, _argsort_desc(x, axis), axis=axis)


def _floordiv(a, b):
    """numpy's //, but the Array API's where exactly one operand is infinite, as lazytensor's
    (see lt.floor_divide): x / y there, so inf // 2 is inf and 1 // -inf is -0.0 (numpy: nan, -1.0)."""
    result = np.floor_divide(a, b)
    if np.asarray(result).dtype.kind != "f":
        return result
    with np.errstate(all="ignore"):   # (the operands as numpy took them: 1e30 is inf in float16)
        a, b = (np.asarray(v).astype(result.dtype) for v in (a, b))
        return np.where(np.isinf(a) != np.isinf(b), np.divide(a, b), result)


def _ifloordiv(a, b):
    """a //= b with _floordiv's values: in place, as numpy's //= (which refuses a result of
    another shape, (1, 2) into (2,), where np.copyto would broadcast it)."""
    result = _floordiv(a, b)
    if np.shape(result) != a.shape:
        raise ValueError(f"non-broadcastable output operand with shape {a.shape}")
    np.copyto(a, result, casting="same_kind")


def _unique(x, counts=False):
    """np.unique, sorted as lazytensor's; float16 goes through float32: numpy 2.4's default float16
    sort misorders some arrays of -0.0, 0.0 and 0.5 (np.unique of 4529 of them gave 50 values)."""
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    result = np.unique(wide, return_counts=counts, equal_nan=False)
    return result[1] if counts else result.astype(x.dtype)


def _log1p(x):
    """np.log1p, but for complex x accurate near 0: numpy's complex log1p is log(1 + x) (its
    log1p(1e-20 + 1e-20j) is 1e-20j). Kahan's way: log(u) * x / (u - 1) with u = 1 + x rounded."""
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return np.log1p(x)
    u = x.copy()
    u.real = x.real + 1   # (1 + x would add 1 + 0j: -0.0 + 0.0 loses the imaginary part's sign)
    with np.errstate(all="ignore"):
        near = np.isfinite(x) & (np.abs(x) < 0.5)   # (elsewhere 1 + x loses nothing that matters)
        small = np.where(u == 1, x, np.log(u) * (x / np.where(u == 1, 1, u - 1)))
        return np.where(near, small, np.log(u)).astype(x.dtype)


def _complex(real, imag, dtype):
    """A complex array from its parts, exactly (nan, inf and -0.0 in either part)."""
    out = np.empty(np.shape(real), dtype=dtype)
    out.real, out.imag = real, imag
    return out
'''
NP_ENV: dict = {"np": np, "math": math, "nan": math.nan, "inf": math.inf}
exec(NUMPY_HELPERS, NP_ENV)
_complex = NP_ENV["_complex"]   # (complex inputs are built here as the scripts build them)


# ---- programs ----------------------------------------------------------------------------------

@dataclass
class Step:
    """One line of a program. kind "expr": `target = <source>`; "write": a statement that changes
    `target` in place (`v3[1:] = v1`, `v3 += 2`); "peek": lazytensor realizes `target` mid-way.
    `op` names the operation for the checks, the error models and KNOWN_DEFECTS; `params` holds
    what they need (axis, keepdims, scalar operands, the index)."""
    kind: str
    op: str
    target: str
    lt: str
    np: str
    args: tuple = ()
    params: dict = field(default_factory=dict)
    error: str = "exact"

    def lt_statement(self) -> str:
        if self.kind == "expr":
            return f"{self.target} = {self.lt}"
        if self.kind == "peek":
            return f"{self.target}.numpy()  # realized mid-way"
        return self.lt

    def np_statement(self) -> str:
        return f"{self.target} = {self.np}" if self.kind == "expr" else self.np


@dataclass
class Program:
    seed: int
    device: str
    inputs: dict = field(default_factory=dict)     # name -> numpy array
    steps: list = field(default_factory=list)
    outputs: list = field(default_factory=list)    # names realized together at the end

    def names(self) -> list:
        seen = list(self.inputs)
        for step in self.steps:
            if step.kind == "expr" and step.target not in seen:
                seen.append(step.target)
        return seen

    def new_name(self) -> str:
        return f"v{sum(s.kind == 'expr' for s in self.steps)}"

    def producer(self, name: str) -> Optional[Step]:
        """The step that assigned `name`, None for an input."""
        return next((s for s in reversed(self.steps) if s.target == name and s.kind == "expr"), None)

    def last_step(self, name: str) -> Optional[Step]:
        """The last step that assigned or changed `name` (x %= 7 too), None for an untouched input."""
        return next((s for s in reversed(self.steps) if s.target == name and s.kind != "peek"), None)


# ---- random values -----------------------------------------------------------------------------

def random_dim(rng: np.random.Generator) -> int:
    r = rng.random()
    if r < 0.08:
        return 0
    if r < 0.35:
        return 1
    if r < 0.93:
        return int(rng.integers(2, 9))
    return int(rng.choice([13, 17, 31, 64, 100, 257]))


def fit_size(shape: list, limit: int) -> tuple:
    """`shape` with its largest axes halved until it holds at most `limit` elements."""
    shape = list(shape)
    while math.prod(shape) > limit:
        a = int(np.argmax(shape))
        shape[a] = max(1, shape[a] // 2)
    return tuple(shape)


def random_shape(rng: np.random.Generator) -> tuple:
    if rng.random() < 0.03:  # a long axis: sum blocks, vector tails, several threads
        return tuple(rng.permutation([int(rng.integers(4097, LARGE_SIZE)), 1])[: int(rng.integers(1, 3))])
    ndim = int(rng.choice([0, 1, 2, 3, 4], p=[0.1, 0.3, 0.3, 0.2, 0.1]))
    return fit_size([random_dim(rng) for _ in range(ndim)], SMALL_SIZE)


def broadcast_partner(rng: np.random.Generator, shape: tuple) -> tuple:
    """A shape that broadcasts with `shape`: a suffix of it with some axes 1 (or the other way
    round: a 1 of `shape` given a size), sometimes with a new leading axis."""
    k = int(rng.integers(0, len(shape) + 1))
    dims = []
    for n in shape[len(shape) - k:]:
        r = rng.random()
        dims.append(1 if r < 0.3 else (int(rng.integers(2, 5)) if n == 1 and r < 0.45 else n))
    if rng.random() < 0.15:
        dims.insert(0, int(rng.choice([1, 2, 3])))
    return fit_size(dims, SMALL_SIZE)


def special_values(dtype: str) -> list:
    if dtype == "bool":
        return [True, False]
    if dtype in INTS:
        info = np.iinfo(dtype)
        return [int(info.min), int(info.max), 0, 1, int(info.max) // 2 + 1, int(info.min) + 1]
    info = np.finfo(dtype)
    return [0.0, -0.0, math.nan, math.inf, -math.inf, 0.5, 1.5, 2.5, -2.5, float(info.max),
            float(info.tiny), float(info.smallest_subnormal), 1e4, -3e4, math.pi]


def random_values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Values of `dtype`: small integers, normal floats of a random scale (sometimes whole
    numbers, for ties), and now and then the dtype's edges (extremes, -0.0, nan, inf, subnormals).
    A complex value's parts are two such floats, each of its own scale and with its own edges."""
    if dtype in COMPLEX:
        part = np.finfo(dtype).dtype.name
        return _complex(real_values(rng, shape, part), real_values(rng, shape, part), dtype)
    return real_values(rng, shape, dtype)


def real_values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    if dtype == "bool":
        values = rng.random(shape) < 0.5
    elif dtype in INTS:
        info = np.iinfo(dtype)
        values = rng.integers(max(int(info.min), -20), min(int(info.max), 40), size=shape, endpoint=True)
        values = values.astype(dtype)
    else:
        values = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-3, 4))
        if rng.random() < 0.2:
            values = np.round(values * 2) / 2
        with np.errstate(over="ignore"):
            values = values.astype(dtype)
    values = np.asarray(values)
    if values.size and rng.random() < 0.25:
        picks = rng.integers(0, values.size, size=int(rng.integers(1, max(2, values.size // 4))))
        specials = special_values(dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            values.reshape(-1)[picks] = np.asarray([specials[i] for i in rng.integers(0, len(specials), len(picks))]).astype(dtype)
    return values


def is_real(value: np.ndarray) -> bool:
    return value.dtype.kind != "c"


def random_dtype(rng: np.random.Generator, complex_ok: bool = True) -> str:
    dtypes = DTYPES if complex_ok else REAL_DTYPES
    return dtypes[int(rng.integers(0, len(dtypes)))]


COMPLEX_PARTS = [0.0, -0.0, 0.5, -1.5, 2.0, 1e-3, 3.25, -1.0, 100.0, math.nan, math.inf]


def random_scalar(rng: np.random.Generator, dtype: np.dtype, complex_ok: bool = False) -> Any:
    """A Python scalar to combine with an array of `dtype` (weak, as numpy 2 treats it). Where
    `complex_ok`, now and then a complex one (with a complex array, most of the time)."""
    kind = dtype.kind
    if complex_ok and rng.random() < (0.6 if kind == "c" else 0.1):
        return complex(*(float(rng.choice(COMPLEX_PARTS)) for _ in range(2)))
    kind = "f" if kind == "c" else kind   # (a real scalar with a complex array)
    r = rng.random()
    if kind == "b" and r < 0.5:
        return bool(rng.random() < 0.5)
    if (kind in "iub" and r < 0.8) or (kind == "f" and r < 0.3):
        return int(rng.choice([-3, -2, -1, 0, 1, 2, 3, 5, 7])) if kind != "u" else int(rng.choice([0, 1, 2, 3, 5, 7]))
    return float(rng.choice([0.5, -1.5, 2.0, 1e-3, 3.25, -0.0, 0.1, 100.0, math.nan, math.inf, 1e30]))


# ---- source text -------------------------------------------------------------------------------

def lit(value: Any) -> str:
    """Python source for a scalar, array or index item, exact (floats by repr, so they round-trip)."""
    if isinstance(value, complex):   # (repr loses the sign of a zero part and spells nan "nanj")
        return f"complex({lit(value.real)}, {lit(value.imag)})"
    if isinstance(value, np.ndarray) and value.dtype.kind == "c":
        return f"_complex({lit(value.real.copy())}, {lit(value.imag.copy())}, np.{value.dtype.name})"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, np.ndarray):
        dtype = "np.bool" if value.dtype == np.bool_ else f"np.{value.dtype.name}"
        if value.ndim == 1 and value.size:
            return f"np.array({value.tolist()!r}, dtype={dtype})"
        return f"np.array({value.reshape(-1).tolist()!r}, dtype={dtype}).reshape({value.shape!r})"
    if isinstance(value, slice):
        parts = ["" if v is None else str(v) for v in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    return repr(value)


def index_source(items: tuple) -> str:
    return ", ".join(lit(i) for i in items) if items else "()"


def operand(value: Any) -> str:
    """Source for a binary operand: a variable's name, or a Python scalar."""
    return value if isinstance(value, str) else lit(value)


def operand_value(value: Any, ns: dict) -> Any:
    """A variable's array, or the Python scalar itself (numpy 2 treats it as weak)."""
    return ns[value] if isinstance(value, str) else value


def lt_dtype(name: str) -> str:
    return f"lt.{name}"


def np_dtype(name: str) -> str:
    return f"np.{name}"


# ---- the op families: each proposes one random step (or None), built from existing variables --

UNARY = {  # name: (lazytensor, numpy, kinds it takes, error model); kind "c": complex
    "neg": ("-{0}", "-{0}", "iufc", "exact"),
    "abs": ("lt.abs({0})", "np.abs({0})", "biuf", "exact"),
    "abs_complex": ("lt.abs({0})", "np.abs({0})", "c", "round"),   # (the modulus: a rounded hypot)
    "exp": ("lt.exp({0})", "np.exp({0})", "biufc", "transcendental"),
    "log": ("lt.log({0})", "np.log({0})", "biufc", "transcendental"),
    "sqrt": ("lt.sqrt({0})", "np.sqrt({0})", "biufc", "round"),
    "sin": ("lt.sin({0})", "np.sin({0})", "biufc", "transcendental"),
    "cos": ("lt.cos({0})", "np.cos({0})", "biufc", "transcendental"),
    "tan": ("lt.tan({0})", "np.tan({0})", "biufc", "transcendental"),
    "tanh": ("lt.tanh({0})", "np.tanh({0})", "biufc", "transcendental"),
    "asin": ("lt.asin({0})", "np.arcsin({0})", "biufc", "transcendental"),
    "acos": ("lt.acos({0})", "np.arccos({0})", "biufc", "transcendental"),
    "atan": ("lt.atan({0})", "np.arctan({0})", "biufc", "transcendental"),
    "sinh": ("lt.sinh({0})", "np.sinh({0})", "biufc", "transcendental"),
    "cosh": ("lt.cosh({0})", "np.cosh({0})", "biufc", "transcendental"),
    "asinh": ("lt.asinh({0})", "np.arcsinh({0})", "biufc", "transcendental"),
    "acosh": ("lt.acosh({0})", "np.arccosh({0})", "biufc", "transcendental"),
    "atanh": ("lt.atanh({0})", "np.arctanh({0})", "biufc", "transcendental"),
    "expm1": ("lt.expm1({0})", "np.expm1({0})", "biufc", "transcendental"),
    "log1p": ("lt.log1p({0})", "_log1p({0})", "biufc", "transcendental"),
    "log2": ("lt.log2({0})", "np.log2({0})", "biufc", "transcendental"),
    "log10": ("lt.log10({0})", "np.log10({0})", "biufc", "transcendental"),
    "erf": ("lt.erf({0})", "_erf({0})", "biuf", "transcendental"),
    "floor": ("lt.floor({0})", "np.floor({0})", "f", "exact"),
    "ceil": ("lt.ceil({0})", "np.ceil({0})", "f", "exact"),
    "trunc": ("lt.trunc({0})", "np.trunc({0})", "f", "exact"),
    "round": ("lt.round({0})", "np.round({0})", "fc", "exact"),   # (complex: each part)
    # the Array API's rounding of integers is the identity (numpy would give floats): on purpose
    "floor_int": ("lt.floor({0})", "{0}.copy()", "biu", "exact"),
    "round_int": ("lt.round({0})", "{0}.copy()", "biu", "exact"),
    "sign": ("lt.sign({0})", "np.sign({0})", "iuf", "exact"),
    "sign_complex": ("lt.sign({0})", "np.sign({0})", "c", "round"),   # (x / |x|)
    "square": ("lt.square({0})", "np.square({0})", "iufc", "round"),
    "positive": ("lt.positive({0})", "np.positive({0})", "iufc", "exact"),
    "reciprocal": ("lt.reciprocal({0})", "np.divide(1, {0})", "iufc", "round"),
    "signbit": ("lt.signbit({0})", "np.signbit({0})", "iuf", "exact"),
    "isnan": ("lt.isnan({0})", "np.isnan({0})", "biufc", "exact"),
    "isinf": ("lt.isinf({0})", "np.isinf({0})", "biufc", "exact"),
    "isfinite": ("lt.isfinite({0})", "np.isfinite({0})", "biufc", "exact"),
    "logical_not": ("lt.logical_not({0})", "np.logical_not({0})", "biufc", "exact"),
    "invert": ("~{0}", "~{0}", "biu", "exact"),
    "conj": ("lt.conj({0})", "np.conj({0})", "iufc", "exact"),   # (numpy's conj of bools is int8)
    # lazytensor's parts are new values, numpy's views of the array: copies, so writes agree
    "real": ("lt.real({0})", "np.real({0}).copy()", "biufc", "exact"),
    "imag": ("lt.imag({0})", "np.imag({0}).copy()", "biufc", "exact"),
}

BINARY = {  # name: (lazytensor, numpy, error model)
    "add": ("{0} + {1}", "{0} + {1}", "addition"),
    "sub": ("{0} - {1}", "{0} - {1}", "addition"),
    "mul": ("{0} * {1}", "{0} * {1}", "round"),
    "truediv": ("{0} / {1}", "{0} / {1}", "round"),
    "floordiv": ("{0} // {1}", "_floordiv({0}, {1})", "round"),
    "mod": ("{0} % {1}", "{0} % {1}", "round"),
    "pow": ("{0} ** {1}", "{0} ** {1}", "transcendental"),
    "and": ("{0} & {1}", "{0} & {1}", "exact"),
    "or": ("{0} | {1}", "{0} | {1}", "exact"),
    "xor": ("{0} ^ {1}", "{0} ^ {1}", "exact"),
    "lshift": ("{0} << {1}", "{0} << {1}", "exact"),
    "rshift": ("{0} >> {1}", "{0} >> {1}", "exact"),
    "lt": ("{0} < {1}", "{0} < {1}", "exact"),
    "le": ("{0} <= {1}", "{0} <= {1}", "exact"),
    "gt": ("{0} > {1}", "{0} > {1}", "exact"),
    "ge": ("{0} >= {1}", "{0} >= {1}", "exact"),
    "eq": ("{0} == {1}", "{0} == {1}", "exact"),
    "ne": ("{0} != {1}", "{0} != {1}", "exact"),
    "maximum": ("lt.maximum({0}, {1})", "np.maximum({0}, {1})", "zero_sign"),
    "minimum": ("lt.minimum({0}, {1})", "np.minimum({0}, {1})", "zero_sign"),
    "atan2": ("lt.atan2({0}, {1})", "np.arctan2({0}, {1})", "transcendental"),
    "hypot": ("lt.hypot({0}, {1})", "np.hypot({0}, {1})", "transcendental"),
    "copysign": ("lt.copysign({0}, {1})", "np.copysign({0}, {1})", "exact"),
    "logaddexp": ("lt.logaddexp({0}, {1})", "np.logaddexp({0}, {1})", "logaddexp"),
    "logical_and": ("lt.logical_and({0}, {1})", "np.logical_and({0}, {1})", "exact"),
    "logical_xor": ("lt.logical_xor({0}, {1})", "np.logical_xor({0}, {1})", "exact"),
}
INPLACE = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "floordiv": "//=", "mod": "%=",
           "and": "&=", "or": "|=", "xor": "^=", "pow": "**="}

# Ops lazytensor refuses for complex operands (TypeError: complex numbers have no order, no
# floor, no bits, as in the Array API), besides the UNARY ones whose kinds lack "c". numpy
# refuses some of them too, and orders complex numbers lexicographically for the others (<, max,
# sort, clip): the families offer them real operands only (and DIFFERENCES keeps them so).
REAL_ONLY = {"floordiv", "mod", "and", "or", "xor", "lshift", "rshift", "lt", "le", "gt", "ge",
             "maximum", "minimum", "atan2", "hypot", "copysign", "logaddexp", "clip", "max", "min",
             "argmax", "argmin", "var", "std", "sort", "argsort", "searchsorted"}

REDUCTIONS = {  # name: (lazytensor method or function, numpy function, error model)
    "sum": ("{0}.sum", "np.sum", "sum"),
    "prod": ("{0}.prod", "np.prod", "prod"),
    "max": ("{0}.max", "np.max", "zero_sign"),
    "min": ("{0}.min", "np.min", "zero_sign"),
    "mean": ("{0}.mean", "np.mean", "mean"),
    "var": ("{0}.var", "np.var", "var"),
    "std": ("{0}.std", "np.std", "std"),
    "all": ("{0}.all", "np.all", "exact"),
    "any": ("{0}.any", "np.any", "exact"),
    "argmax": ("{0}.argmax", "np.argmax", "exact"),
    "argmin": ("{0}.argmin", "np.argmin", "exact"),
    "count_nonzero": ("lt.count_nonzero", "np.count_nonzero", "exact"),
}


class Proposer:
    """What the op families below share: the random source, the program, its numpy values."""

    def __init__(self, rng: np.random.Generator, program: Program, ns: dict):
        self.rng, self.program, self.ns = rng, program, ns

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, options):
        return options[int(self.rng.integers(0, len(options)))]

    def pick(self, accept: Callable[[np.ndarray], bool] = lambda v: True) -> Optional[str]:
        """A variable, the newest one half the time (so programs grow deep), else any."""
        names = [n for n in self.program.names() if accept(self.ns[n])]
        if not names:
            return None
        return names[-1] if self.chance(0.5) else self.choice(names)

    def new_input(self, shape: tuple, dtype: str) -> str:
        name = f"x{len(self.program.inputs)}"
        self.program.inputs[name] = random_values(self.rng, shape, dtype)
        self.ns[name] = self.program.inputs[name].copy()
        return name

    def partner(self, shape: tuple, dtype: Optional[str] = None, complex_ok: bool = True) -> str:
        """A variable whose shape broadcasts with `shape`: an existing one or a new input (of a
        real dtype unless `complex_ok`)."""
        fits = [n for n in self.program.names() if _broadcasts(self.ns[n].shape, shape)
                and (complex_ok or is_real(self.ns[n]))]
        if fits and self.chance(0.6):
            return self.choice(fits)
        dtype = dtype if dtype and self.chance(0.5) else random_dtype(self.rng, complex_ok)
        return self.new_input(broadcast_partner(self.rng, shape), dtype)

    def axis(self, ndim: int, allow_tuple: bool = True):
        """None, one axis (negative ones too), or a tuple of them in any order (empty now and then)."""
        r = self.rng.random()
        if ndim == 0 or r < 0.25:
            return None
        if not allow_tuple or r < 0.7:
            return int(self.rng.integers(-ndim, ndim))
        count = int(self.rng.integers(0 if self.chance(0.1) else 1, ndim + 1))
        axes = [int(a) - (ndim if self.chance(0.3) else 0) for a in self.rng.permutation(ndim)[:count]]
        return tuple(axes)

    def expr(self, op: str, lt_src: str, np_src: str, args: tuple, error: str = "exact", **params) -> Step:
        return Step("expr", op, self.program.new_name(), lt_src, np_src, tuple(args), params, error)


def _broadcasts(a: tuple, b: tuple) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def propose_unary(p: Proposer) -> Optional[Step]:
    name = p.choice(list(UNARY))
    lt_src, np_src, kinds, error = UNARY[name]
    x = p.pick(lambda v: v.dtype.kind in kinds)
    if x is None:
        return None
    return p.expr(name, lt_src.format(x), np_src.format(x), (x,), error)


def propose_binary(p: Proposer) -> Optional[Step]:
    name = p.choice(list(BINARY))
    lt_src, np_src, error = BINARY[name]
    complex_ok = name not in REAL_ONLY
    a = p.pick(lambda v: complex_ok or is_real(v))
    if a is None:
        return None
    value = p.ns[a]
    if p.chance(0.3):
        b = random_scalar(p.rng, value.dtype, complex_ok)
    else:
        b = p.partner(value.shape, value.dtype.name, complex_ok)
    if p.chance(0.5):
        a, b = b, a
    args = tuple(v for v in (a, b) if isinstance(v, str))
    return p.expr(name, lt_src.format(operand(a), operand(b)), np_src.format(operand(a), operand(b)),
                  args, error, a=a, b=b)


def propose_where(p: Proposer) -> Optional[Step]:
    c = p.pick()
    a = p.partner(p.ns[c].shape)
    b = random_scalar(p.rng, p.ns[a].dtype, complex_ok=True) if p.chance(0.3) else p.partner(p.ns[c].shape)
    src = f"where({c}, {a}, {operand(b)})"
    return p.expr("where", f"lt.{src}", f"np.{src}", tuple(v for v in (c, a, b) if isinstance(v, str)))


def propose_clip(p: Proposer) -> Optional[Step]:
    x = p.pick(lambda v: v.dtype.kind in "iuf")
    if x is None:
        return None
    kind = p.ns[x].dtype.kind
    bounds = sorted(float(v) if kind == "f" else int(v) for v in p.rng.integers(-5 if kind != "u" else 0, 8, 2))
    lo, hi = [None if p.chance(0.2) else v for v in bounds]
    src = f"clip({x}, {lit(lo)}, {lit(hi)})"
    return p.expr("clip", f"lt.{src}", f"np.{src}", (x,), "zero_sign")


def propose_cast(p: Proposer) -> Optional[Step]:
    x = p.pick()
    # (complex -> real drops the imaginary part in numpy; lazytensor refuses it, as the Array API)
    dtype = random_dtype(p.rng) if is_real(p.ns[x]) else p.choice(COMPLEX + ["bool"])
    return p.expr("cast", f"{x}.astype({lt_dtype(dtype)})", f"{x}.astype({np_dtype(dtype)})", (x,),
                  "round" if dtype in FLOATS + COMPLEX else "exact", dtype=dtype)


def propose_reduction(p: Proposer) -> Optional[Step]:
    name = p.choice(list(REDUCTIONS))
    lt_fn, np_fn, error = REDUCTIONS[name]
    x = p.pick(lambda v: name not in REAL_ONLY or is_real(v))
    if x is None:
        return None
    ndim = p.ns[x].ndim
    axis = p.axis(ndim, allow_tuple=not name.startswith("arg"))
    keepdims = p.chance(0.5)
    extra = ""
    if name in ("var", "std") and p.chance(0.4):
        extra = ", correction=1"
    lt_call = (f"{lt_fn.format(x)}(axis={axis!r}, keepdims={keepdims}{extra})" if "{0}." in lt_fn
               else f"{lt_fn}({x}, axis={axis!r}, keepdims={keepdims})")
    np_call = f"{np_fn}({x}, axis={axis!r}, keepdims={keepdims}{extra.replace('correction', 'ddof')})"
    axes = range(ndim) if axis is None else ([axis] if isinstance(axis, int) else axis)
    count = math.prod(p.ns[x].shape[a] for a in axes)
    return p.expr(name, lt_call, np_call, (x,), error, axis=axis, keepdims=keepdims, n=count)


def random_reshape(p: Proposer, shape: tuple) -> tuple:
    size = math.prod(shape)
    if size == 0:
        dims = [random_dim(p.rng) for _ in range(int(p.rng.integers(1, 4)))]
        dims[int(p.rng.integers(0, len(dims)))] = 0
        return tuple(dims)
    dims, rest = [], size
    for f in range(2, rest + 1):  # split the size into random factors
        while rest % f == 0 and p.chance(0.7):
            dims.append(f)
            rest //= f
        if rest == 1:
            break
    if rest > 1:
        dims.append(rest)
    dims = [int(d) for d in p.rng.permutation(dims)] if dims else []
    merged = []
    for d in dims:  # merge some neighbours, sprinkle ones
        if merged and p.chance(0.4):
            merged[-1] *= d
        else:
            merged.append(d)
        if p.chance(0.15):
            merged.append(1)
    if merged and p.chance(0.3):
        merged[int(p.rng.integers(0, len(merged)))] = -1
    return tuple(merged)


def random_basic_index(p: Proposer, shape: tuple, for_write: bool = False) -> tuple:
    """ints (negative too), slices with any steps (negative, empty, past the ends), None, `...`."""
    items = []
    ndim = len(shape)
    used = int(p.rng.integers(0, ndim + 1)) if p.chance(0.3) else ndim
    for n in shape[:used]:
        r = p.rng.random()
        if r < 0.15 and n > 0:
            items.append(int(p.rng.integers(-n, n)))
        elif r < 0.45:
            items.append(slice(None))
        else:
            ends = [None, None, 0, 1, -1, -2, n, n + 2, -n - 1, n // 2]
            step = p.choice([None, 1, 1, 2, 3, -1, -1, -2, -3])
            items.append(slice(p.choice(ends), p.choice(ends), step))
        if not for_write and p.chance(0.08):
            items.append(None)
    if p.chance(0.15):
        items.insert(int(p.rng.integers(0, len(items) + 1)), Ellipsis)
    return tuple(items)


def propose_movement(p: Proposer) -> Optional[Step]:
    x = p.pick()
    value = p.ns[x]
    shape, ndim = value.shape, value.ndim
    kind = p.choice(["reshape", "permute", "T", "moveaxis", "mT", "expand", "squeeze", "unsqueeze",
                     "slice", "slice", "slice", "flip", "pad", "concat", "stack", "roll", "tile",
                     "repeat", "tril", "diff", "copy", "asarray"])
    if kind == "copy":
        return p.expr(kind, f"lt.asarray({x}, copy=True)", f"np.array({x})", (x,))
    if kind == "asarray":  # the tensor itself, as numpy's asarray returns its array: writes reach both
        return p.expr(kind, f"lt.asarray({x})", f"np.asarray({x})", (x,))
    if kind == "reshape":
        new = random_reshape(p, shape)
        return p.expr(kind, f"{x}.reshape({new!r})", f"{x}.reshape({new!r})", (x,))
    if kind == "permute":
        order = tuple(int(a) for a in p.rng.permutation(ndim))
        return p.expr(kind, f"{x}.permute({order!r})", f"np.transpose({x}, {order!r})", (x,))
    if kind == "T":
        return p.expr(kind, f"{x}.T", f"{x}.T", (x,))
    if kind == "moveaxis" and ndim:
        src, dst = (int(v) for v in p.rng.integers(-ndim, ndim, 2))
        return p.expr(kind, f"lt.moveaxis({x}, {src}, {dst})", f"np.moveaxis({x}, {src}, {dst})", (x,))
    if kind == "mT" and ndim >= 2:
        return p.expr(kind, f"{x}.mT", f"np.matrix_transpose({x})", (x,))
    if kind == "expand":
        new = tuple(int(p.choice([0, 1, 2, 3, 5])) if n == 1 and p.chance(0.6) else n for n in shape)
        new = tuple(int(p.rng.integers(1, 4)) for _ in range(int(p.rng.integers(0, 3)))) + new
        new = fit_size(list(new), LARGE_SIZE) if math.prod(new) > LARGE_SIZE else new
        lt_src = f"{x}.expand({new!r})" if p.chance(0.5) else f"lt.broadcast_to({x}, {new!r})"
        return p.expr(kind, lt_src, f"np.broadcast_to({x}, {new!r})", (x,), shape=new)
    if kind == "squeeze":
        ones = [a for a, n in enumerate(shape) if n == 1]
        axis = None if not ones or p.chance(0.3) else p.choice(ones) - (ndim if p.chance(0.3) else 0)
        return p.expr(kind, f"{x}.squeeze({axis!r})", f"np.squeeze({x}, {axis!r})", (x,))
    if kind == "unsqueeze":
        axis = int(p.rng.integers(-ndim - 1, ndim + 1))
        return p.expr(kind, f"lt.expand_dims({x}, {axis})", f"np.expand_dims({x}, {axis})", (x,))
    if kind == "slice":
        items = random_basic_index(p, shape)
        src = f"{x}[{index_source(items)}]"
        return p.expr(kind, src, src, (x,), index=items)
    if kind == "flip":
        axis = p.axis(ndim)
        return p.expr(kind, f"lt.flip({x}, axis={axis!r})", f"np.flip({x}, axis={axis!r})", (x,))
    if kind == "pad" and ndim:
        widths = tuple((int(a), int(b)) for a, b in p.rng.integers(0, 3, (ndim, 2)))
        fill = random_scalar(p.rng, value.dtype, complex_ok=not is_real(value)) if p.chance(0.5) else 0
        if value.dtype.kind == "b":
            fill = bool(fill) if not isinstance(fill, float) else True
        elif value.dtype.kind in "iu":
            fill = int(fill) if not isinstance(fill, float) else 1
        return p.expr(kind, f"lt.pad({x}, {widths!r}, value={lit(fill)})",
                      f"np.pad({x}, {widths!r}, constant_values={lit(fill)})", (x,), fill=fill)
    if kind in ("concat", "stack") and ndim:
        same = [n for n in p.program.names() if p.ns[n].ndim == ndim
                and (kind == "stack" and p.ns[n].shape == shape
                     or kind == "concat" and all(a == b for i, (a, b) in enumerate(zip(p.ns[n].shape, shape)) if i != 0))]
        others = [p.choice(same) for _ in range(int(p.rng.integers(1, 3)))]
        listed = ", ".join([x] + others)
        axis = int(p.rng.integers(-ndim, ndim)) if kind == "stack" else 0
        if kind == "concat" and p.chance(0.2):
            axis = None
        fn = "stack" if kind == "stack" else p.choice(["concat", "concatenate"])
        return p.expr(kind, f"lt.{fn}([{listed}], axis={axis!r})", f"np.{'stack' if kind == 'stack' else 'concatenate'}([{listed}], axis={axis!r})",
                      (x, *others), axis=axis)
    if kind == "roll":
        axis = None if ndim == 0 or p.chance(0.3) else int(p.rng.integers(-ndim, ndim))
        shift = int(p.rng.integers(-7, 8))
        return p.expr(kind, f"lt.roll({x}, {shift}, axis={axis!r})", f"np.roll({x}, {shift}, axis={axis!r})", (x,))
    if kind == "tile" and math.prod(shape) * 6 <= LARGE_SIZE:
        reps = tuple(int(r) for r in p.rng.integers(0 if p.chance(0.1) else 1, 3, int(p.rng.integers(1, ndim + 2))))
        return p.expr(kind, f"lt.tile({x}, {reps!r})", f"np.tile({x}, {reps!r})", (x,))
    if kind == "repeat" and math.prod(shape) * 3 <= LARGE_SIZE:
        axis = None if ndim == 0 or p.chance(0.3) else int(p.rng.integers(-ndim, ndim))
        r = int(p.rng.integers(0, 4))
        return p.expr(kind, f"lt.repeat({x}, {r}, axis={axis!r})", f"np.repeat({x}, {r}, axis={axis!r})", (x,))
    if kind == "tril" and ndim >= 2:
        fn, k = p.choice(["tril", "triu"]), int(p.rng.integers(-2, 3))
        return p.expr(kind, f"lt.{fn}({x}, k={k})", f"np.{fn}({x}, k={k})", (x,))
    if kind == "diff" and ndim and value.dtype.kind != "b":
        axis, n = int(p.rng.integers(-ndim, ndim)), int(p.rng.integers(1, 3))
        return p.expr(kind, f"lt.diff({x}, axis={axis}, n={n})", f"np.diff({x}, axis={axis}, n={n})", (x,),
                      "diff", axis=axis, n=n)
    return None


def random_int_index(p: Proposer, n: int) -> np.ndarray:
    """In-range indices (negative ones too) for an axis of size n, of a random small shape."""
    shape = fit_size([int(p.choice([0, 1, 2, 3, 5])) for _ in range(int(p.choice([0, 1, 1, 1, 2])))], 30)
    if n == 0:
        shape = tuple(0 if i == 0 else s for i, s in enumerate(shape)) or (0,)
        return np.zeros(shape, dtype=np.int64)
    dtype = p.choice(["int64", "int64", "int32", "int8", "uint8"])
    low = 0 if dtype == "uint8" else -n
    return p.rng.integers(max(low, -128), min(n, 127), size=shape).astype(dtype)


def index_variable(p: Proposer, n: int) -> Optional[str]:
    """An integer variable of the program whose values all index an axis of size n."""
    return p.pick(lambda v: v.dtype.kind in "iu" and v.ndim <= 2 and (v.size == 0 or (n > 0 and v.min() >= -n and v.max() < n)))


def propose_indexing(p: Proposer) -> Optional[Step]:
    x = p.pick(lambda v: v.ndim > 0)
    if x is None:
        return None
    shape, ndim = p.ns[x].shape, p.ns[x].ndim
    kind = p.choice(["getitem", "getitem", "take", "take_along_axis", "mask", "nonzero"])
    axis = int(p.rng.integers(0, ndim))
    variable = index_variable(p, shape[axis]) if p.chance(0.3) else None
    index = variable if variable else random_int_index(p, shape[axis])
    index_src = variable or lit(index)
    args = (x, variable) if variable else (x,)
    if kind == "getitem":
        items = list(random_basic_index(p, shape[:axis] + shape[axis + 1:]))
        items = [i for i in items if i is not Ellipsis and i is not None][:ndim - 1]
        at = min(axis, len(items))
        others = [q for q, item in enumerate(items) if not isinstance(item, slice) or p.chance(0.5)]
        if others and p.chance(0.35):   # a second integer array, broadcast against the first (numpy's rules)
            q = p.choice(others)
            n = shape[q if q < at else q + 1]
            first = p.ns[variable].shape if variable else index.shape
            second = tuple(1 if p.chance(0.3) else m for m in first[int(p.rng.integers(0, len(first) + 1)):])
            items[q] = p.rng.integers(-n, n, size=second).astype(np.int64) if n else np.zeros(second, np.int64)
        src = ", ".join([lit(i) for i in items[:at]] + [index_src] + [lit(i) for i in items[at:]])
        return p.expr(kind, f"{x}[{src}]", f"{x}[{src}]", args)
    if kind == "take":
        flat = p.chance(0.3)
        if flat:
            variable = index_variable(p, p.ns[x].size) if variable else None
            index = random_int_index(p, p.ns[x].size)
            index_src, args = variable or lit(index), ((x, variable) if variable else (x,))
        where = "" if flat else f", axis={axis - (ndim if p.chance(0.3) else 0)}"
        return p.expr(kind, f"lt.take({x}, {index_src}{where})", f"np.take({x}, {index_src}{where})", args)
    if kind == "take_along_axis":
        n = shape[axis]
        index_shape = [int(p.rng.integers(0, 4)) if a == axis else (n if p.chance(0.7) else 1) for a, n in enumerate(shape)]
        index = p.rng.integers(-n, max(n, 1), size=index_shape).astype(np.int64) if n else np.zeros(index_shape, np.int64)
        return p.expr(kind, f"lt.take_along_axis({x}, {lit(index)}, {axis})",
                      f"np.take_along_axis({x}, {lit(index)}, axis={axis})", (x,), axis=axis)
    if kind == "mask":
        covers = int(p.rng.integers(1, ndim + 1))
        masks = [n for n in p.program.names() if p.ns[n].dtype == np.bool_ and p.ns[n].shape == shape[:covers]]
        if masks and p.chance(0.6):
            mask = p.choice(masks)
            return p.expr(kind, f"{x}[{mask}]", f"{x}[{mask}]", (x, mask), mask_ndim=covers)
        mask = p.rng.random(shape[:covers]) < 0.5
        return p.expr(kind, f"{x}[{lit(mask)}]", f"{x}[{lit(mask)}]", (x,), mask_ndim=covers)
    if kind == "nonzero":
        k = int(p.rng.integers(0, ndim))
        return p.expr(kind, f"lt.nonzero({x})[{k}]", f"np.nonzero({x})[{k}]", (x,))
    return None


def propose_write(p: Proposer) -> Optional[Step]:
    """x[index] = value (basic, integer-array or mask index; a scalar or a variable), or x op= y."""
    x = p.pick()
    target = p.ns[x]
    shape, ndim = target.shape, target.ndim
    # a complex value goes into a complex target only (numpy drops the imaginary part, lazytensor
    # refuses, as the Array API)
    complex_ok = not is_real(target)
    if p.chance(0.25):  # in-place arithmetic
        name = p.choice([n for n in INPLACE if is_real(target) or n not in REAL_ONLY])
        value = (random_scalar(p.rng, target.dtype, complex_ok) if p.chance(0.4)
                 else p.partner(shape, target.dtype.name, complex_ok))
        src = f"{x} {INPLACE[name]} {operand(value)}"
        np_src = src if name != "floordiv" else f"_ifloordiv({x}, {operand(value)})"
        args = (x, value) if isinstance(value, str) else (x,)
        return Step("write", "i" + name, x, src, np_src, args, {"a": x, "b": value}, BINARY[name][2])
    r = p.rng.random()
    if r < 0.5 or ndim == 0:
        items = random_basic_index(p, shape, for_write=True)
    elif r < 0.7 or ndim < 2:
        axis = int(p.rng.integers(0, ndim))
        items = (slice(None),) * axis + (random_int_index(p, shape[axis]),)
    elif r < 0.8:   # two integer arrays, broadcast together (repeated positions: the last write wins)
        first = random_int_index(p, shape[0])
        last = p.chance(0.5)   # the second indexes the last axis (after an Ellipsis) or axis 1
        n = shape[-1] if last else shape[1]
        size = first.shape[-1:] if p.chance(0.7) else (1,)
        second = p.rng.integers(-n, n, size=size).astype(np.int64) if n else np.zeros(size, np.int64)
        items = (first, Ellipsis, second) if last else (first, second)
    else:
        covers = int(p.rng.integers(1, ndim + 1))
        items = (p.rng.random(shape[:covers]) < 0.5,)
    selected = target[items].shape if _index_ok(target, items) else shape
    if p.chance(0.5):
        value: Any = random_scalar(p.rng, target.dtype, complex_ok)
    else:
        fits = [n for n in p.program.names() if n != x and len(p.ns[n].shape) <= len(selected)
                and _broadcasts(p.ns[n].shape, selected) and (complex_ok or is_real(p.ns[n]))
                and all(m == 1 or m == k for m, k in zip(p.ns[n].shape[::-1], selected[::-1]))]
        value = p.choice(fits) if fits else p.new_input(broadcast_partner(p.rng, selected), random_dtype(p.rng, complex_ok))
    src = f"{x}[{index_source(items)}] = {operand(value)}"
    args = (x, value) if isinstance(value, str) else (x,)
    return Step("write", "setitem", x, src, src, args, {"index": items, "value": value},
                "round" if target.dtype.kind in "fc" else "exact")


def _index_ok(value: np.ndarray, items: tuple) -> bool:
    try:
        value[items]
        return True
    except (IndexError, ValueError, TypeError):
        return False


def propose_matmul(p: Proposer) -> Optional[Step]:
    a = p.pick(lambda v: v.ndim > 0)
    if a is None:
        return None
    shape = p.ns[a].shape
    kind = p.choice(["matmul", "matmul", "tensordot", "vecdot"])
    if kind == "matmul":
        k = shape[-1]
        m = random_dim(p.rng) if p.chance(0.9) else 0
        batch = tuple(1 if p.chance(0.3) else n for n in shape[:-2]) if len(shape) > 2 and p.chance(0.5) else ()
        other = (k,) if p.chance(0.2) else fit_size(list(batch) + [k, m], SMALL_SIZE)
        if other[-2:-1] != (k,) and len(other) > 1:
            other = (k, min(m, 8))
        b = _matching(p, other, p.ns[a].dtype.name)
        if p.chance(0.3) and len(shape) >= 2:  # the other way round: b @ a
            b_shape = (int(p.rng.integers(0, 6)), shape[-2])
            b = _matching(p, b_shape, p.ns[a].dtype.name)
            return p.expr(kind, f"{b} @ {a}", f"{b} @ {a}", (b, a), "dot", k=shape[-2])
        return p.expr(kind, f"{a} @ {b}", f"{a} @ {b}", (a, b), "dot", k=k)
    if kind == "tensordot":
        n = int(p.rng.integers(0, min(2, len(shape)) + 1))
        other = shape[len(shape) - n:] + tuple(random_dim(p.rng) for _ in range(int(p.rng.integers(0, 2))))
        b = _matching(p, fit_size(list(other), SMALL_SIZE) if n == 0 else other, p.ns[a].dtype.name)
        return p.expr(kind, f"lt.tensordot({a}, {b}, axes={n})", f"np.tensordot({a}, {b}, axes={n})", (a, b),
                      "dot", k=math.prod(shape[len(shape) - n:]))
    b = _matching(p, broadcast_partner(p.rng, shape[:-1]) + shape[-1:], p.ns[a].dtype.name)
    return p.expr(kind, f"lt.vecdot({a}, {b}, axis=-1)", f"np.vecdot({a}, {b}, axis=-1)", (a, b), "dot", k=shape[-1])


def _matching(p: Proposer, shape: tuple, dtype: str) -> str:
    """A variable of exactly `shape` (an existing one half the time there is one), else a new input."""
    same = [n for n in p.program.names() if p.ns[n].shape == tuple(shape)]
    if same and p.chance(0.5):
        return p.choice(same)
    return p.new_input(tuple(shape), dtype if p.chance(0.6) else random_dtype(p.rng))


def propose_sorting(p: Proposer) -> Optional[Step]:
    kind = p.choice(["sort", "argsort", "cumulative_sum", "cumulative_sum", "searchsorted", "unique_values", "unique_counts"])
    # (unique sorts complex values as numpy does, by real part, then imaginary part)
    x = p.pick(lambda v: v.ndim > 0 and (kind not in REAL_ONLY or is_real(v)))
    if x is None:
        return None
    ndim = p.ns[x].ndim
    axis = int(p.rng.integers(-ndim, ndim))
    if kind in ("sort", "argsort"):
        descending = p.chance(0.4)
        lt_src = f"lt.{kind}({x}, axis={axis}, descending={descending})"
        np_src = f"_{kind}_desc({x}, {axis})" if descending else f"np.{kind}({x}, axis={axis}, kind='stable')"
        return p.expr(kind, lt_src, np_src, (x,), descending=descending)
    if kind == "cumulative_sum":
        initial = p.chance(0.3)
        src = f"cumulative_sum({x}, axis={axis}, include_initial={initial})"
        return p.expr(kind, f"lt.{src}", f"np.{src}", (x,), "cumsum", n=p.ns[x].shape[axis])
    if kind == "searchsorted":
        values = p.pick(is_real)
        side = p.choice(["left", "right"])
        return p.expr(kind, f"lt.searchsorted(lt.sort({x}.reshape(-1)), {values}, side={side!r})",
                      f"np.searchsorted(np.sort({x}.reshape(-1)), {values}, side={side!r})", (x, values))
    if kind == "unique_values":
        # (numpy 2.3's unique_values does not sort; lazytensor's does, as np.unique)
        return p.expr(kind, f"lt.unique_values({x})", f"_unique({x})", (x,))
    return p.expr(kind, f"lt.unique_counts({x})[1]", f"_unique({x}, counts=True)", (x,))


def propose_creation(p: Proposer) -> Optional[Step]:
    dtype = random_dtype(p.rng)
    kind = p.choice(["arange", "full", "full_like", "eye", "linspace"])
    dev = "device=DEVICE"
    if kind == "arange" and dtype != "bool":
        start, stop = (int(v) for v in p.rng.integers(0 if dtype[0] == "u" else -10, 20, 2))
        step = int(p.choice([1, 1, 2, 3, -1, -2]))
        return p.expr(kind, f"lt.arange({start}, {stop}, {step}, dtype={lt_dtype(dtype)}, {dev})",
                      f"np.arange({start}, {stop}, {step}, dtype={np_dtype(dtype)})", (), step=step)
    if kind == "full":
        shape = random_shape(p.rng)
        value = random_scalar(p.rng, np.dtype(dtype), complex_ok=dtype in COMPLEX)
        value = value if dtype in FLOATS + COMPLEX or not isinstance(value, float) else 2
        value = bool(value) if dtype == "bool" else value
        return p.expr(kind, f"lt.full({shape!r}, {lit(value)}, dtype={lt_dtype(dtype)}, {dev})",
                      f"np.full({shape!r}, {lit(value)}, dtype={np_dtype(dtype)})", ())
    if kind == "full_like":
        x = p.pick()
        value = random_scalar(p.rng, p.ns[x].dtype, complex_ok=not is_real(p.ns[x]))
        value = value if p.ns[x].dtype.kind in "fc" or not isinstance(value, float) else 1
        fn = p.choice(["full_like({0}, {1})", "zeros_like({0})", "ones_like({0})"]).format(x, lit(value))
        return p.expr(kind, f"lt.{fn}", f"np.{fn}", (x,))
    if kind == "eye":
        n, m, k = int(p.rng.integers(0, 7)), int(p.rng.integers(0, 7)), int(p.rng.integers(-3, 4))
        return p.expr(kind, f"lt.eye({n}, {m}, k={k}, dtype={lt_dtype(dtype)}, {dev})",
                      f"np.eye({n}, {m}, k={k}, dtype={np_dtype(dtype)})", ())
    if kind == "linspace" and dtype in FLOATS + COMPLEX:
        start, stop = (float(v) for v in p.rng.integers(-10, 10, 2))
        num = int(p.rng.integers(0, 20))
        return p.expr(kind, f"lt.linspace({start}, {stop}, {num}, dtype={lt_dtype(dtype)}, {dev})",
                      f"np.linspace({start}, {stop}, {num}, dtype={np_dtype(dtype)})", (), "round")
    return None


def propose_peek(p: Proposer) -> Optional[Step]:
    """Realize an intermediate mid-way (lazytensor only): mixes realized and pending values."""
    x = p.pick()
    return Step("peek", "peek", x, "", "", (x,))


FAMILIES = [  # (weight, proposer)
    (16, propose_unary), (22, propose_binary), (3, propose_where), (2, propose_clip), (8, propose_cast),
    (14, propose_reduction), (18, propose_movement), (8, propose_indexing), (7, propose_write),
    (4, propose_matmul), (5, propose_sorting), (3, propose_creation), (2, propose_peek),
]


# ---- what numpy leaves undefined ---------------------------------------------------------------

def undefined(step: Step, ns: dict) -> bool:
    """True where numpy's result is undefined or platform-dependent for the values the step
    reads (`ns`: before it runs)."""
    op = step.op[1:] if step.kind == "write" and step.op != "setitem" else step.op
    if op in ("floordiv", "mod", "pow", "lshift", "rshift"):
        return _undefined_integer_binary(op, operand_value(step.params["a"], ns), operand_value(step.params["b"], ns))
    if op == "cast":
        return _cast_out_of_range(ns[step.args[0]], np.dtype(step.params["dtype"]))
    if op in ("var", "std"):
        return _variance_may_overflow(ns[step.args[0]])
    if op == "sum":
        return _half_sum_may_overflow(ns[step.args[0]])
    if op in ("unique_values", "unique_counts"):
        return _values_within_ulps(ns[step.args[0]], 16)
    if op == "prod":
        return _product_order_matters(ns[step.args[0]])
    if step.error == "dot":  # numpy's BLAS skips zero terms: there inf * 0 and nan * 0 vanish
        return any(v.dtype.kind in "fc" and not np.isfinite(v).all() for v in (ns[a] for a in step.args)) \
            or _dot_may_overflow(step, [ns[a] for a in step.args])
    if op in ("copysign", "signbit"):  # the sign bit of a nan is the platform's (x86: 0/0 is -nan)
        sign = operand_value(step.params["b"], ns) if op == "copysign" else ns[step.args[0]]
        return bool(np.isnan(np.asarray(sign, dtype=np.float64)).any())
    if op == "setitem":
        target, value = ns[step.target], np.asarray(operand_value(step.params["value"], ns))
        try:
            if value.ndim and np.ndim(target[step.params["index"]]) == 0:
                return True   # numpy refuses an array into one element, except into a bool array (a quirk)
        except (IndexError, ValueError, TypeError):
            return False   # (numpy's own error drops the step)
        return target.dtype.kind in "iub" and _cast_out_of_range(value, target.dtype)
    return False


def _undefined_integer_binary(op: str, a: Any, b: Any) -> bool:
    """Integer // and % by zero (or MIN // -1), shifts by a negative count or the bit width or
    more, ** that overflows (numpy refuses negative integer powers itself)."""
    dtype = np.result_type(a, b)
    if dtype.kind not in "iub":
        return False
    a, b = (np.asarray(v) for v in (a, b))
    if op == "pow" and (b < 0).any():
        return True
    a, b = np.broadcast_arrays(a.astype(np.int64) if a.dtype.kind != "u" else a, b.astype(np.int64) if b.dtype.kind != "u" else b)
    if op in ("floordiv", "mod"):
        minimum = np.iinfo(dtype).min if dtype.kind == "i" else None
        return bool((b == 0).any() or (minimum is not None and ((a == minimum) & (b == -1)).any()))
    if op in ("lshift", "rshift"):
        bits = 8 * dtype.itemsize
        return bool(((b < 0) | (b >= bits)).any())
    # pow: exact in Python integers; undefined where it overflows the result dtype. numpy refuses
    # negative powers of integers, but not on an empty array: never generated
    info = np.iinfo(dtype) if dtype.kind != "b" else None
    if (b < 0).any() or info is None:
        return bool((b < 0).any())
    base = a.astype(object).reshape(-1)
    exponent = b.astype(object).reshape(-1)
    if any(abs(x) > 1 and e > 64 for x, e in zip(base, exponent)):
        return True
    return any(not info.min <= x ** e <= info.max for x, e in zip(base, exponent))


def _dot_may_overflow(step: Step, operands: list) -> bool:
    """Whether a product's terms or partial sums may pass the largest float: their infinities
    (and inf - inf) then hang on the order and the way of the multiplications (numpy's complex
    BLAS gave nan + inf j where the textbook formula, lazytensor's, gives -3.4e38 + inf j)."""
    dtype = np.result_type(*operands)
    if dtype.kind not in "fc" or any(v.size == 0 for v in operands):
        return False
    largest = math.prod(float(_modulus(v).max()) for v in operands) * 2 * step.params.get("k", 1)
    return largest > float(np.finfo(dtype).max)


def _product_order_matters(x: np.ndarray) -> bool:
    """Whether some order of a float product's terms takes a partial product out of the normal
    range where another does not (1e-200 * 1e-200 * 1e200 * 1e200: 0 or 1; 0 * 1e200 * 1e200: 0 or
    nan): numpy multiplies in its order, lazytensor in its own. A complex product with an infinite
    or nan part too: its infinities meet zeros (inf * 0 in the textbook product) in an order's way."""
    if x.dtype.kind == "c" and not np.isfinite(x).all():
        return True
    if x.dtype.kind not in "fc":
        return False
    a = _modulus(x)   # (the whole tensor: a reduction over some axes has groups)
    info = np.finfo(x.dtype)
    logs = np.log2(a[(a > 0) & np.isfinite(a)])
    under = logs[logs < 0].sum() < np.log2(float(info.tiny))
    over = bool(np.isinf(a).any()) or logs[logs > 0].sum() > np.log2(float(info.max))
    if under:
        return True
    return over and bool((a == 0).any() or (not np.isinf(a).any() and logs.sum() <= np.log2(float(info.max))))


def _variance_may_overflow(x: np.ndarray) -> bool:
    """numpy's float16/32 var squares deviations from a rounded mean: where their squares come near
    the dtype's largest value, inf or not hangs on that rounding (var of 1e30s: inf, not 0)."""
    if x.dtype not in (np.float16, np.float32) or x.size == 0:
        return False
    values = x.astype(np.float64)[np.isfinite(x)]
    if values.size == 0:
        return False
    spread = np.abs(values - values.mean()).max() + 4 * eps(x.dtype) * np.abs(values).max()
    return bool(spread ** 2 * x.size > np.finfo(x.dtype).max)


def _values_within_ulps(x: np.ndarray, ulps: int) -> bool:
    """Whether two distinct values of float `x` lie within `ulps` ulps of each other: which of
    them are equal (what unique counts) then hangs on the last bits of the steps that made them
    (numpy's arccos gave two float32 values an ulp apart, lazytensor's, within its bound, one).
    Complex values: where either part has two such values (a superset of the pairs that matter)."""
    if x.dtype.kind not in "fc":
        return False
    for part in ([x.real, x.imag] if x.dtype.kind == "c" else [x]):
        values = np.unique(part[np.isfinite(part)].astype(np.float64))
        if values.size < 2:
            continue
        gaps = np.diff(values)
        if (gaps <= ulps * np.spacing(np.abs(values[1:]).astype(part.dtype)).astype(np.float64)).any():
            return True
    return False


def _half_sum_may_overflow(x: np.ndarray) -> bool:
    """numpy's float16 sum along a strided axis adds in half: a partial sum past 65504 is inf,
    and inf + -inf nan, where the sum of the same values laid out contiguously (and lazytensor's,
    in float64) is finite or -inf."""
    if x.dtype != np.float16:
        return False
    finite = x[np.isfinite(x)].astype(np.float64)
    return bool(np.abs(finite).sum() > float(np.finfo(np.float16).max))


def _cast_out_of_range(values: np.ndarray, dtype: np.dtype) -> bool:
    """A float -> integer cast of nan, inf or a value whose integer part does not fit."""
    values = np.asarray(values)
    if values.dtype.kind != "f" or dtype.kind not in "iu":
        return False
    whole = np.trunc(values.astype(np.float64))
    bits = 8 * dtype.itemsize
    low, high = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if dtype.kind == "i" else (0.0, 2.0 ** bits)
    return bool(((~np.isfinite(whole)) | (whole < low) | (whole >= high)).any())


# ---- defects already known: restrictions of the generator, each to go when its fix lands -------

@dataclass
class Candidate:
    """What a known-defect rule sees: the step, the values before it, the program so far."""
    step: Step
    ns: dict
    program: Program

    def arg(self, i: int = 0) -> np.ndarray:
        return np.asarray(self.ns[self.step.args[i]])


def _complex_argument(c: Candidate, ops: tuple) -> Optional[np.ndarray]:
    """The complex operand of a step of `ops` (the base of a power), else None."""
    op = c.step.op[1:] if c.step.kind == "write" and c.step.op != "setitem" else c.step.op
    if op not in ops:
        return None
    value = np.asarray(operand_value(c.step.params["a"], c.ns) if op == "pow" else c.arg())
    return value if value.dtype.kind == "c" else None


def _complex_log_overflows(c: Candidate) -> bool:
    z = _complex_argument(c, ("log", "log2", "log10", "log1p", "sqrt", "pow"))
    if z is None:
        return False
    x, y = z.real.astype(np.float64), z.imag.astype(np.float64)
    with np.errstate(all="ignore"):
        x = x + 1 if c.step.op == "log1p" else x
        size = np.abs(x) + np.hypot(x, y) if c.step.op == "sqrt" else np.hypot(x, y)
    return bool((np.isfinite(x) & np.isfinite(y) & (size > np.finfo(z.dtype).max)).any())


def _complex_tan_of_a_pending_result(c: Candidate) -> bool:
    """A complex tan or tanh whose operand a step rounded (through movement), not realized since:
    its kernels recompute that operand."""
    if c.step.op not in ("tan", "tanh") or is_real(c.arg()):
        return False
    name = c.step.args[0]
    for s in reversed(c.program.steps):   # (the step itself makes a new name)
        if s.target != name:
            continue
        if s.kind == "peek":
            return False
        if s.kind == "write" or s.error != "exact":
            return True
        if len(s.args) != 1:   # (creation, where, concat: not followed further)
            return False
        name = s.args[0]
    return False


def _complex_exp_overflows_early(c: Candidate) -> bool:
    """e^t past the largest float, t the part that exp, sinh and cosh (sin, cos: the imaginary
    part) raise e to, or Re(b log a) of a ** b (exp(b log a))."""
    z = _complex_argument(c, ("exp", "sinh", "cosh", "sin", "cos", "pow"))
    if z is None:
        return False
    with np.errstate(all="ignore"):
        if c.step.op in ("pow", "ipow"):
            exponent = np.asarray(operand_value(c.step.params["b"], c.ns)).astype(np.complex128)
            t = (exponent * np.log(z.astype(np.complex128))).real
        else:
            t = z.imag if c.step.op in ("sin", "cos") else z.real
            t = t if c.step.op == "exp" else np.abs(t)
        return bool((np.isfinite(t) & (t > math.log(float(np.finfo(z.dtype).max)))).any())


def _complex_log_near_one(c: Candidate) -> bool:
    """log z within 1/4 of z = 1, where log z is small and log(hypot(x, y))'s rounding is not."""
    z = _complex_argument(c, ("log", "log2", "log10"))
    return z is not None and bool((np.abs(z.astype(np.complex128) - 1) < 0.25).any())


def _complex_inverse_far_off(c: Candidate) -> bool:
    z = _complex_argument(c, ("asin", "acos", "asinh", "acosh"))
    if z is None:
        return False
    quarter = np.finfo(z.dtype).max / 4
    return bool(any((np.isfinite(part) & (np.abs(part) > quarter)).any() for part in (z.real, z.imag)))


def _complex_odd_special_sign(c: Candidate) -> bool:
    z = _complex_argument(c, ("asinh", "atanh", "asin", "atan"))
    if z is None:
        return False
    # (asin z = -i asinh(iz), atan likewise: iz = -imag(z) + i real(z))
    x, y = (z.real, z.imag) if c.step.op in ("asinh", "atanh") else (-z.imag, z.real)
    special = ~np.isfinite(x) | ~np.isfinite(y) | (x == 0) & ((y == 0) | np.isnan(y))
    return bool((np.signbit(x) & special).any())


def _complex_atanh_of_infinity(c: Candidate) -> bool:
    z = _complex_argument(c, ("atanh", "atan"))
    if z is None:
        return False
    x, y = (z.real, z.imag) if c.step.op == "atanh" else (z.imag, z.real)
    return bool((np.isinf(x) & (y == 0)).any())


def _complex_acosh_of_minus_zero_nan(c: Candidate) -> bool:
    z = _complex_argument(c, ("acosh",))
    return z is not None and bool(((z.real == 0) & np.signbit(z.real) & np.isnan(z.imag)).any())


KNOWN_DEFECTS = [  # (what, the generator's restriction). Remove a line when its fix lands.
    # (the defects the issues named and those the fuzzer found before are fixed: their lines went)
    ("complex log, log2, log10, log1p, sqrt (and ** through log) overflow where |z| (sqrt: |x| + |z|) "
     "passes the largest float: log(1.7e308 + 1.7e308j) is inf + 0.785j (numpy 710.1 + 0.785j), "
     "sqrt(1e308 + 1e308j) is inf + 0j (numpy 1.1e154 + 4.6e153j)", _complex_log_overflows),
    ("complex log, log2, log10 near z = 1 lose the low digits of log|z| (log of a rounded hypot): "
     "log(1 + 0.0012j) in complex128 is off by ~300 ulps of the result, log(1 + 1e-8 + 1e-8j) by "
     "1.6e7 (real part 9.999999889e-09; numpy, mpmath: 9.999999939e-09)", _complex_log_near_one),
    ("complex tan and tanh of a pending result lose ~16 ulps: the program's kernels each recompute "
     "the operand (contracted into fmas their own way), so Kahan's formula gets two values of it: "
     "tan(a * b) for a = -0.0951 - 0.000679j, b = 0.2317 + 113.8j (complex128) has imaginary part "
     "-0.9999999992127157, tan of the realized a * b -0.9999999992127194 (numpy, mpmath)",
     _complex_tan_of_a_pending_result),
    ("complex exp, sinh, cosh (sin, cos, ** through them) overflow where e^x does, not where the "
     "result does: exp(89 + 1.5j) in complex64 is inf + inf j (numpy, C99's cexp: 3.2e37 + inf j)",
     _complex_exp_overflows_early),
    ("complex asin, acos, asinh, acosh past a quarter of the largest float take log|z| for "
     "log(2|z|): asinh(1e308 + 0j) is 709.20 + 0j (numpy, cmath: 709.89)", _complex_inverse_far_off),
    ("complex asinh and atanh (asin, atan through them): the special cases (an infinite or nan part, "
     "a zero) with a negative real part flip the imaginary part's sign: asinh(-1 + inf j) is "
     "-inf - pi/2 j (numpy, C99: -inf + pi/2 j), asinh(-0 + 0j) -0 - 0j, atan(0j) -0 + 0j",
     _complex_odd_special_sign),
    ("complex atanh(+-inf +- 0j) (atan(+-0 +- inf j)) has a nan real part (numpy, C99: +-0 +- pi/2 j; "
     "the standard lists a positive imaginary part only)", _complex_atanh_of_infinity),
    ("complex acosh(-0 + nan j) is nan + nan j (numpy, C17's DR 471: nan + pi/2 j; the standard "
     "lists +0 only)", _complex_acosh_of_minus_zero_nan),
]


def _write_aliasing_zero_d(c: Candidate) -> bool:
    """A write into an array that shares memory with a 0-d one (or is 0-d and shares it): numpy's
    0-d arrays have views, its scalars (what reductions and ufuncs return) do not; lazytensor's
    0-d tensors are values, as numpy's scalars (README, "Semantics")."""
    if c.step.kind != "write":
        return False
    target = c.ns[c.step.target]   # (another name may hold the very array: np.squeeze of a 0-d one)
    return any(isinstance(v, np.ndarray) and name != c.step.target and (v.ndim == 0 or target.ndim == 0)
               and np.may_share_memory(v, target) for name, v in c.ns.items())


def _complex_refused(c: Candidate) -> bool:
    """An op lazytensor refuses for complex operands (TypeError) with a complex operand: the
    families do not offer one (REAL_ONLY, UNARY's kinds), but a partner or a scalar can bring it."""
    step = c.step
    operands = [c.ns[a] for a in step.args] + [v for k, v in step.params.items()
                                               if k in ("a", "b", "value") and not isinstance(v, str)]
    if all(np.asarray(v).dtype.kind != "c" for v in operands):
        return False
    op = step.op[1:] if step.kind == "write" and step.op != "setitem" else step.op
    if op in UNARY:
        return "c" not in UNARY[op][2]
    if op == "cast":
        return step.params["dtype"] not in COMPLEX + ["bool"]
    if op == "setitem":   # numpy drops the imaginary part of a complex value put into a real array
        return is_real(c.ns[step.target])
    return op in REAL_ONLY


# Where lazytensor differs from numpy on purpose: programs that run into it are not generated.
DIFFERENCES = [
    ("0-d tensors are values, as numpy's scalars: no views of them", _write_aliasing_zero_d),
    ("complex numbers have no order, floor or bits (the Array API's): lazytensor refuses <, "
     "max, sort, floor, //, &, a cast to a real type ...; numpy orders them lexicographically", _complex_refused),
]


def known_defect(candidate: Candidate) -> Optional[str]:
    return next((what for what, applies in KNOWN_DEFECTS + DIFFERENCES if applies(candidate)), None)


# ---- running a program on numpy ----------------------------------------------------------------

def apply_numpy(step: Step, ns: dict) -> None:
    if step.kind == "expr":
        ns[step.target] = np.asarray(eval(step.np, NP_ENV, ns))
    elif step.kind == "write":
        exec(step.np, NP_ENV, ns)


def try_step(program: Program, ns: dict, step: Step) -> bool:
    """Run `step` on numpy if it is defined there and meets no known defect; then keep its result
    in `ns` and return True (`ns` is unchanged otherwise)."""
    saved: list = []   # a write changes the arrays that share its target's memory, as in numpy:
    # their values before it, to put back where the step is not kept
    try:
        if undefined(step, ns) or known_defect(Candidate(step, ns, program)):
            return False
        trial = dict(ns)
        if step.kind == "write":
            target = ns[step.target]
            if not target.flags.writeable:  # a broadcast view: numpy refuses the write
                return False
            saved = [(v, v.copy()) for v in ns.values()
                     if isinstance(v, np.ndarray) and v.flags.writeable and np.may_share_memory(v, target)]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            apply_numpy(step, trial)
        result = trial.get(step.target)
        if isinstance(result, np.ndarray) and result.size > LARGE_SIZE * 2:
            raise ValueError("too big")
    except Exception:  # numpy refuses it (a bad shape, a cast it will not do): not a program
        for array, values in saved:
            array[...] = values
        return False
    ns.clear()
    ns.update(trial)
    return True


def generate(seed: int, device: str, max_ops: int = MAX_OPS) -> Program:
    """The program of `seed`: inputs, then up to max_ops steps, then the outputs."""
    rng = np.random.default_rng([seed, 0x1a2])
    program = Program(seed, device)
    ns: dict = {}
    proposer = Proposer(rng, program, ns)
    for _ in range(int(rng.integers(1, 4))):
        proposer.new_input(random_shape(rng), random_dtype(rng))
    weights = np.array([w for w, _ in FAMILIES], dtype=float)
    wanted = int(rng.integers(1, max_ops + 1))
    for _ in range(wanted * 12):
        if len(program.steps) >= wanted:
            break
        propose = FAMILIES[int(rng.choice(len(FAMILIES), p=weights / weights.sum()))][1]
        inputs_before = dict(program.inputs)
        step = propose(proposer)
        if step is not None:
            program.steps.append(step)
            if try_step(program, ns, step):
                continue
            program.steps.pop()
        for name in set(program.inputs) - set(inputs_before):  # inputs made for a refused step
            del program.inputs[name]
            ns.pop(name, None)
    program.outputs = choose_outputs(rng, program)
    return program


def choose_outputs(rng: np.random.Generator, program: Program) -> list:
    """The last value computed, and up to three others, realized together."""
    names = program.names()
    computed = [s.target for s in program.steps if s.kind != "peek"] or names
    outputs = [computed[-1]]
    for _ in range(int(rng.integers(0, 4))):
        name = names[int(rng.integers(0, len(names)))]
        if name not in outputs:
            outputs.append(name)
    return outputs


def validate(program: Program) -> bool:
    """Whether every step is still defined on numpy and clear of known defects (after shrinking)."""
    ns = {name: value.copy() for name, value in program.inputs.items()}
    for i, step in enumerate(program.steps):
        if not try_step(replace(program, steps=program.steps[:i]), ns, step):
            return False
    return all(name in ns for name in program.outputs)


# ---- the error each step may make, and the nudged reference runs -------------------------------

def eps(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps)


def _modulus(values: Any) -> np.ndarray:
    """|values| in float64 (of complex ones, the modulus)."""
    values = np.asarray(values)
    return np.abs(values.astype(np.complex128 if values.dtype.kind == "c" else np.float64))


def error_bound(step: Step, before: dict, result: np.ndarray) -> Optional[np.ndarray]:
    """The absolute error `step` may make at each element of its float `result`, by its error
    model; `before` holds the values it read. For a complex result see `_complex_bound`."""
    e = eps(result.dtype)
    magnitude = _modulus(result)
    if result.dtype.kind == "c":
        bound = _complex_bound(step, before, result, e, magnitude)
        if bound is not None:
            return bound
    # (float16 math computes in float32 and rounds once, as numpy's: right to an ulp)
    ulps = {"round": 1.0, "transcendental": 1.0 if result.dtype == np.float16 else 4.0,
            "logaddexp": 1.0 if result.dtype == np.float16 else None}.get(step.error)
    if ulps is not None:  # in ulps of the result's own dtype: a nudge reaches the next float
        return ulps * np.where(result == 0, 0.0, np.spacing(np.abs(result)).astype(np.float64))  # tan(0) is 0
    if step.error == "zero_sign":  # the larger of -0.0 and 0.0 is either (numpy: the first)
        return np.where(result == 0, float(np.finfo(result.dtype).smallest_subnormal), 0.0)
    if step.error == "logaddexp":
        # max(a, b) + log1p(exp(-|a - b|)) cancels where the result is near 0: an ulp of log1p's
        # value, from two math functions rounded apart from numpy's, is an ulp of the operands' size
        a, b = (np.abs(np.asarray(operand_value(step.params[k], before), dtype=np.float64)) for k in "ab")
        return e * (2 * (a + b) + 4 * magnitude)
    if step.error == "addition":
        # an ulp of each operand, not of the sum: the cpu contracts a*b + c into one fma (LLVM's
        # `contract`), so x*y - x*y may come out as the rounding error of x*y instead of 0
        a, b = (np.abs(np.asarray(operand_value(step.params[k], before), dtype=np.float64)) for k in "ab")
        return e * (a + b + magnitude)
    if step.error in ("sum", "mean", "cumsum", "dot"):
        return _sum_bound(step, {name: _modulus(before[name]) for name in step.args}, result, magnitude, e)
    if step.error == "diff":
        return _diff_bound(step, _modulus(before[step.args[0]]), magnitude, e)
    if step.error == "prod":
        return (step.params["n"] + 1) * e * magnitude
    if step.error in ("var", "std"):
        return _variance_bound(step, before, result, e)
    return None


# Complex results where the parts mix, in eps of the component type times the modulus: measured
# against mpmath, lazytensor's complex functions and numpy's err by at most ~2.3 eps |f(z)| each,
# a product or a quotient by ~1.1 eps |ab|.
COMPLEX_EPS = {"round": 2.0, "transcendental": 4.0}


def _complex_bound(step: Step, before: dict, result: np.ndarray, e: float, modulus: np.ndarray) -> Optional[np.ndarray]:
    """The error bound of a complex result: a real array bounds both parts, a complex one each
    part by its own real or imaginary part. None: the real model on moduli (a dot product's bound
    comes from sum |a||b|, for both parts).

    Where each part is rounded or summed on its own (a cast, a write, linspace, + and -, sums),
    each part gets the real model's bound. Where the parts mix (* /, sqrt, the functions) both get a bound of the
    modulus: a complex product errs by ~eps |a||b| = eps |ab| in either part, not by an ulp of
    each (the real part of (1+1j)*(1+1j) is 1 - 1: 0 in numpy, the rounding error of 1*1 where
    lazytensor contracts it into an fma). A part much smaller than the modulus is then not compared
    (the nudges move it by 10% or more): its low digits are the rounding of the larger one. That
    also leaves a part near a branch cut uncompared where its sign is the rounding's (log of
    -1 - 1e-30j: its imaginary part is -pi or pi)."""
    if step.error == "round" and step.op in ("cast", "setitem", "linspace"):
        re, im = (np.where(part == 0, 0.0, np.spacing(np.abs(part)).astype(np.float64)) for part in (result.real, result.imag))
        return _complex(re, im, np.complex128)
    if step.error == "addition":   # (see the real model)
        a, b = (np.asarray(operand_value(step.params[k], before)) for k in "ab")
        re, im = (e * (np.abs(part(a).astype(np.float64)) + np.abs(part(b).astype(np.float64)) + np.abs(part(result)))
                  for part in (np.real, np.imag))
        return _complex(re, im, np.complex128)
    if step.error in ("sum", "mean", "cumsum", "diff"):   # (the parts are summed apart: nan in one
        bounds = []                                       # leaves the other's bound)
        for part in (np.real, np.imag):
            terms = {name: np.abs(part(np.asarray(before[name]))).astype(np.float64) for name in step.args}
            magnitude = np.abs(part(result)).astype(np.float64)
            bounds.append(_diff_bound(step, terms[step.args[0]], magnitude, e) if step.error == "diff"
                          else _sum_bound(step, terms, part(result), magnitude, e))
        return _complex(*bounds, np.complex128)
    if step.error == "prod":   # (each complex product: ~1.1 eps)
        return 2 * (step.params["n"] + 1) * e * modulus
    ulps = COMPLEX_EPS.get(step.error)
    if ulps is None:
        return None
    if step.op in ("pow", "ipow"):
        # exp(b log a): log a's rounding, times b (numpy's integer powers multiply |b| times)
        a, b = (_modulus(operand_value(step.params[k], before)) for k in "ab")
        with np.errstate(all="ignore"):
            ulps = ulps * (1 + b * (1 + np.pi + np.abs(np.log(a))))
    subnormal = float(np.finfo(result.dtype).smallest_subnormal)
    return ulps * np.where(modulus == 0, 0.0, np.maximum(e * modulus, subnormal))


def _sum_bound(step: Step, absolute: dict, result: np.ndarray, magnitude: np.ndarray, e: float) -> np.ndarray:
    """A sum's, mean's, cumulative sum's or dot product's bound, from the same sum of the terms'
    magnitudes (`absolute`: the values it read, made nonnegative)."""
    with np.errstate(all="ignore"):
        scale = np.abs(np.asarray(eval(step.np, NP_ENV, absolute), dtype=np.float64))
    n = step.params.get("n", 1)
    factor = {"sum": _sum_error_factor(n), "mean": 1 + _sum_error_factor(n), "cumsum": max(2.0, float(n)),
              "dot": 2.0 + step.params.get("k", 1)}[step.error]
    bound = factor * e * scale.reshape(result.shape) + e * magnitude
    # the sign of a zero sum is the summation order's (numpy's BLAS gives +0.0 for -3.4 * -0.0)
    return np.where(result == 0, np.maximum(bound, float(np.finfo(result.dtype).smallest_subnormal)), bound)


def _diff_bound(step: Step, terms: np.ndarray, magnitude: np.ndarray, e: float) -> np.ndarray:
    """Differences of neighbours: an ulp of each term (see "addition")."""
    terms = np.moveaxis(terms, step.params["axis"], -1)
    for _ in range(step.params["n"]):
        terms = terms[..., 1:] + terms[..., :-1]
    return e * (np.moveaxis(terms, -1, step.params["axis"]) + magnitude)


def _variance_bound(step: Step, before: dict, result: np.ndarray, e: float) -> np.ndarray:
    """var: a sum of squared deviations from a mean that is itself a sum (see "sum" above)."""
    x = np.asarray(before[step.args[0]]).astype(np.float64)
    axis, keepdims = step.params["axis"], step.params["keepdims"]
    terms = _sum_error_factor(step.params["n"])
    with np.errstate(all="ignore"):
        deviation = np.abs(x - np.mean(x, axis=axis, keepdims=True))
        mean_abs = np.mean(np.abs(x), axis=axis, keepdims=keepdims)
        # (the last term: the mean's own rounding, which makes the deviations of equal values
        # nonzero: numpy's float32 var of six 287.57s is 1.7e-11, not 0)
        bound = e * terms * (np.mean(deviation ** 2, axis=axis, keepdims=keepdims)
                             + 2 * mean_abs * np.mean(deviation, axis=axis, keepdims=keepdims)
                             + e * terms * mean_abs ** 2)
        bound = bound.reshape(result.shape) + e * np.abs(result.astype(np.float64))
        if step.error == "std":
            std = np.abs(result.astype(np.float64))
            bound = np.where(std > np.sqrt(bound), bound / (2 * std), np.sqrt(bound))
    return bound


def _sum_error_factor(n: int) -> float:
    """Error of a sum of n terms, in eps * sum|x|: numpy's pairwise sum errs ~log2(n) eps; a
    sequential one (lazytensor's, in a kernel it does not vectorize) ~sqrt(n) eps, typically."""
    return 2.0 + 4.0 * math.sqrt(n)


def nudge(result: np.ndarray, bound: np.ndarray, run: int, step: int) -> np.ndarray:
    """`result` moved by +-bound. Runs 0 and 1 move every element up, then down (equal values stay
    equal; run 0 takes a value to 0 where its bound reaches it). lazytensor may round f(a) and f(b) apart where numpy's are equal, so the later runs
    break such ties both ways: run 2k+2 moves an element up where bit k of a hash of its position
    (and step) is set, down elsewhere; run 2k+3 the other way round. Two elements get opposite moves
    in both directions unless their hashes agree on every bit used (1 in 2**8). What depends on
    the ties is then not compared. For odd k the moves are a quarter of the bound, an ulp at least:
    moves of 4 ulps keep a whole number's parity and low bits, which a cast or a power may read.
    A complex result: each part as a float, by its own bound (a complex `bound`, see
    `_complex_bound`) or both by a real one, with ties broken apart from the other part's."""
    if result.dtype.kind == "c":
        bound = np.asarray(bound)
        bound_re, bound_im = (bound.real, bound.imag) if bound.dtype.kind == "c" else (bound, bound)
        return _complex(_nudge_floats(result.real, bound_re, run, step),
                        _nudge_floats(result.imag, bound_im, run, step + IMAGINARY_SALT), result.dtype)
    return _nudge_floats(result, bound, run, step)


IMAGINARY_SALT = 1 << 20   # (added to the step in the hash that breaks an imaginary part's ties)


def _nudge_floats(result: np.ndarray, bound: np.ndarray, run: int, step: int) -> np.ndarray:
    values = result.astype(np.float64)
    bound = np.where(np.isfinite(bound), bound, 0.0)
    if run < 2:
        sign = 1.0 if run == 0 else -1.0
    else:
        bit, flipped = divmod(run - 2, 2)
        sign = np.where((_position_hash(values.shape, step) >> np.uint64(bit)) & np.uint64(1) == flipped, 1.0, -1.0)
        if bit % 2:
            ulp = np.spacing(np.abs(result)).astype(np.float64)
            bound = np.where(bound > 0, np.maximum(bound / 4, ulp), 0.0)
    with np.errstate(all="ignore"):
        moved = values + sign * bound
        if run == 0:  # a value within its bound of 0 may be 0 (x != 0 and where(x, ...) read that)
            moved = np.where(np.abs(values) <= bound, 0.0, moved)
        return np.asarray(moved).astype(result.dtype)


def _position_hash(shape: tuple, step: int) -> np.ndarray:
    """splitmix64 of each element's flat position and the step: bits that look random."""
    with np.errstate(over="ignore"):
        h = np.arange(math.prod(shape), dtype=np.uint64).reshape(shape) + np.uint64(step * 0x9E3779B97F4A7C15 % 2 ** 64)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def reference(program: Program, run: Optional[int] = None, trace: Optional[list] = None,
              fell_back: Optional[list] = None) -> list:
    """numpy's outputs; with `run`, each rounding step's result nudged (see `nudge`). The plain
    reference records each step's result in `trace`: a nudged run that cannot do a step (an
    index the nudges moved out of range, shapes a nudged `unique` changed) takes it from there,
    and notes the step's index in `fell_back`. An output that a taken step reaches is None in
    that run: it says nothing of how far the nudges move it."""
    ns = {name: value.copy() for name, value in program.inputs.items()}
    taken: set = set()   # the variables a step taken from the trace reaches
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, step in enumerate(program.steps):
            if step.kind == "peek":
                if run is None and trace is not None:
                    trace.append(None)
                continue
            try:
                nudged_step(step, ns, run, i)
                if taken & set(step.args):
                    taken.add(step.target)
            except Exception:
                if run is None or trace is None:
                    raise
                ns[step.target] = trace[i].copy()
                taken.add(step.target)
                if fell_back is not None:
                    fell_back.append(i)
            if run is None and trace is not None:
                trace.append(np.array(ns[step.target], copy=True))
    return [None if name in taken else np.asarray(ns[name]) for name in program.outputs]


def nudged_step(step: Step, ns: dict, run: Optional[int], index: int) -> None:
    """Step `index` of a program on numpy; in a nudged run, its float result moved by its error,
    and its disputed elements (see `disputed`) given changing special values: what they reach
    then changes discretely from run to run, and is not compared."""
    before = dict(ns)
    if run is not None and step.kind == "write":   # (the values it read, before it writes them)
        target = ns[step.target]
        before = {k: v.copy() if isinstance(v, np.ndarray) and np.may_share_memory(v, target) else v
                  for k, v in ns.items()}
    apply_numpy(step, ns)
    result = ns[step.target]
    if run is None:
        return
    moved = result
    if step.error != "exact" and result.dtype.kind in "fc":
        bound = error_bound(step, before, result)
        if bound is not None:
            moved = nudge(result, bound, run, index)
    mask = disputed(step, before, result)
    if mask is not None and mask.any():
        moved = np.array(moved, copy=True)
        moved[mask] = DISPUTED_VALUES[run % len(DISPUTED_VALUES)]
    flips = sign_unspecified(step, before, result)
    if run % 2 and flips is not None and flips.any():
        moved = np.array(moved, copy=True)
        for part in (moved.real, moved.imag):   # (views of `moved`)
            signed = flips & ((part == 0) | np.isinf(part))
            part[signed] = -part[signed]
    if moved is not result and step.kind == "write":   # in place: the views of the target see it
        result[...] = moved                              # (x.T /= 3 changes x)
    elif moved is not result:
        ns[step.target] = moved


DISPUTED_VALUES = [complex(math.nan, math.nan), complex(math.inf, -math.inf), 0j]


def sign_unspecified(step: Step, before: dict, result: np.ndarray) -> Optional[np.ndarray]:
    """The elements of a complex function's result whose infinite or zero parts may have either
    sign: the standard leaves it unspecified in many of its special cases (sinh(inf + inf j) is
    +-inf + nan j, exp(-inf + nan j) +-0 +- 0j, acos(inf + nan j) nan +- inf j, expm1(+-0 + 0j)
    0 + 0j, ...), all of them with an infinite or nan part in the argument, or a zero one; there
    the odd nudged runs flip those signs, so that they, and what they reach, are not compared
    (numpy's sinh(-inf + inf j) is inf + nan j, lazytensor's -inf + nan j). And a real plus a
    complex value: the standard's table adds the parts it has (a + (c + dj) = (a + c) + dj, so
    -1 + (-1 - 0j) is -2 - 0j, lazytensor's where it folds constants), numpy first makes the
    real value complex (-1 + 0j) + (-1 - 0j) = -2 + 0j: a zero part's sign. None: no such elements."""
    if result.dtype.kind != "c":
        return None
    op = step.op[1:] if step.kind == "write" and step.op != "setitem" else step.op
    if op in ("add", "sub"):
        operands = [np.asarray(operand_value(step.params[k], before)) for k in "ab"]
        if all(is_real(v) for v in operands) or not any(is_real(v) for v in operands):
            return None
        return (result.real == 0) | (result.imag == 0)
    if op not in UNARY or UNARY[op][3] == "exact" or op == "reciprocal":
        return None
    z = np.asarray(before[step.args[0]])
    with np.errstate(all="ignore"):
        return np.broadcast_to(~np.isfinite(z) | (z == 0), result.shape)


def disputed(step: Step, before: dict, result: np.ndarray) -> Optional[np.ndarray]:
    """The elements of a complex result where numpy's special values differ from the Array API's
    (C99 Annex G's, which lazytensor follows), or where the standard leaves them to the
    implementation and numpy's way is not lazytensor's: not compared (None: no such elements).
    - expm1: numpy's is expm1(x) cos y - 2 sin(y/2)^2 + i exp(x) sin y, no special cases: its
      expm1(inf + 0j) is inf + nan j, expm1(-inf + inf j) nan + nan j, where the standard's are
      inf + 0j and -1 + 0j; so where a part of x is infinite or nan, or numpy's result is not
      finite (expm1(1e39 + 0j) in complex64: numpy's inf + nan j, the standard's inf + 0j).
    - sign: the standard's is x / |x|, with complex division's special cases, which it leaves
      to the implementation where a part is infinite or nan (numpy: sign(inf + 1j) = 1 + 0j;
      lazytensor: nan + nan j); and where |x| overflows both are wrong (sign(max + max j): numpy
      1j, lazytensor 0).
    - x ** y: the standard's complex power is exp(y log x); numpy multiplies out integer powers
      (its (1 + 1e308j) ** 3 is inf + nan j, exp(3 log x) -inf - inf j) and its 0 ** y is nan
      unless y is real and positive (exp(y log 0) is 0 where Re y > 0). So where a part of x or
      y is infinite or nan, x is 0, or numpy's result is not finite.
    - mean: the standard's divides each part of the sum by the count (complex / real); numpy's
      divides by count + 0j, a complex division, which takes a nan or an infinity of one part
      into the other (mean of [nan + 1j]: numpy's nan + nan j, the standard's nan + 1j). So where
      numpy's mean is not finite.
    - x / y, 1 / x: numpy's division multiplies by 1 / (c + d (d / c)), which overflows for a tiny
      divisor (1 / (5e-324 + 0j): numpy's inf + nan j; Smith's, lazytensor's, inf + 0j; the
      standard: implementation dependent). So where numpy's quotient is not finite."""
    if result.dtype.kind != "c":
        return None
    op = step.op[1:] if step.kind == "write" and step.op != "setitem" else step.op
    if op not in ("expm1", "sign_complex", "pow", "mean", "truediv", "reciprocal"):
        return None
    operands = ([np.asarray(operand_value(step.params[k], before)) for k in "ab"] if op == "pow"
                else [np.asarray(before[step.args[0]])] if op in ("expm1", "sign_complex") else [])
    with np.errstate(all="ignore"):
        mask = ~np.isfinite(result)
        for value in operands:
            mask = mask | ~np.isfinite(value)
        if op == "sign_complex":
            mask = mask | np.isinf(np.abs(operands[0]))
        if op == "pow":
            mask = mask | (operands[0] == 0)
    return np.broadcast_to(mask, result.shape)


# ---- running a program on lazytensor, comparing ------------------------------------------------

def run_lazytensor(program: Program) -> list:
    env = {"lt": lt, "np": np, "nan": math.nan, "inf": math.inf, "DEVICE": program.device}
    ns = {name: lt.asarray(value, device=program.device) for name, value in program.inputs.items()}
    for i, step in enumerate(program.steps):
        try:
            exec(step.lt_statement(), env, ns)
        except Exception as error:
            error.fuzz_step = i  # where it raised, for `check`
            raise
    outputs = [ns[name] for name in program.outputs]
    lt.realize(*outputs)
    return [np.array(t.numpy()) for t in outputs]


def compare(name: str, got: np.ndarray, want: np.ndarray, runs: list) -> Optional[str]:
    """None if `got` matches numpy's `want`; else what differs. `runs` are the nudged references:
    elements they change discretely are not compared, float ones may be off by twice their spread.
    A run that could not compute this output (None) leaves only its dtype to compare."""
    if any(r is None or r.shape != want.shape for r in runs):  # a shape that depends on values the nudges
        return None if got.dtype == want.dtype else f"{name}: lazytensor gives {got.dtype}, numpy {want.dtype}"
    if got.shape != want.shape or got.dtype != want.dtype:  # change (unique, a computed mask)
        return f"{name}: lazytensor gives {got.dtype}{list(got.shape)}, numpy {want.dtype}{list(want.shape)}"
    if want.dtype.kind in "fc":   # a complex value: each part as a float (a nan part too)
        bad, tolerance = np.zeros(want.shape, dtype=bool), np.zeros(want.shape)
        for part in ((np.real, np.imag) if want.dtype.kind == "c" else (np.asarray,)):
            part_bad, part_tolerance = _float_mismatches(part(got), part(want), [part(r) for r in runs])
            tolerance = np.where(part_bad & ~bad, part_tolerance, tolerance)
            bad |= part_bad
    else:
        unstable = np.zeros(want.shape, dtype=bool)
        for r in runs:
            unstable |= r != want
        bad = (got != want) & ~unstable
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{name}: {int(bad.sum())} of {want.size} elements differ (dtype {want.dtype}); first at "
            f"{list(where)}: lazytensor {got[where]!r}, numpy {want[where]!r}"
            + (f", tolerance {tolerance[where]:.3g}" if want.dtype.kind in "fc" else ""))


def _float_mismatches(got: np.ndarray, want: np.ndarray, runs: list) -> tuple:
    """(the elements of float `got` that differ from `want`, their tolerance), by the nudged runs."""
    w = want.astype(np.float64)
    g = got.astype(np.float64)
    unstable = np.zeros(want.shape, dtype=bool)
    spread = np.zeros(want.shape)
    for r in runs:
        r = r.astype(np.float64)
        unstable |= (np.isnan(r) != np.isnan(w)) | (np.isinf(r) != np.isinf(w)) | (np.isinf(w) & (r != w))
        with np.errstate(invalid="ignore"):
            spread = np.fmax(spread, np.abs(r - w))
    with np.errstate(invalid="ignore"):
        # ill-conditioned: the nudges move it by 10% or more (past the subnormals, where they
        # only give a zero its sign)
        unstable |= (spread > 0.1 * np.abs(w)) & (spread > np.finfo(want.dtype).tiny)
    with np.errstate(invalid="ignore", over="ignore"):
        tolerance = 2 * spread + np.spacing(np.abs(want)).astype(np.float64)
        close = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tolerance)
    return ~close & ~unstable, tolerance


@dataclass
class Outcome:
    seed: int
    device: str
    status: str            # "ok", "mismatch", "error" (lazytensor raised), "crash", "hang"
    message: str = ""
    script: str = ""       # the (shrunk) reproduction
    seconds: float = 0.0


def check(program: Program) -> tuple:
    """(status, message) of one run of `program` on lazytensor against numpy."""
    trace: list = []
    fell_back: list = []
    want = reference(program, trace=trace)
    runs = [reference(program, run, trace, fell_back) for run in range(NUDGED_RUNS)]
    try:
        got = run_lazytensor(program)
    except Exception as error:
        if fell_back and getattr(error, "fuzz_step", len(program.steps)) >= min(fell_back):
            # numpy could not do that step either once nudged: it hangs on unstable values (an
            # index from a tanh cast to int, a reshape of a nonzero's result), not a defect
            return "ok", ""
        frame = traceback.extract_tb(error.__traceback__)[-1]
        return "error", f"{type(error).__name__}: {error} (at {os.path.basename(frame.filename)}:{frame.lineno})"
    messages = [compare(name, g, w, [r[i] for r in runs])
                for i, (name, g, w) in enumerate(zip(program.outputs, got, want))]
    messages = [m for m in messages if m]
    return ("mismatch", "; ".join(messages)) if messages else ("ok", "")


def same_failure(a: tuple, b: tuple) -> bool:
    if a[0] != b[0]:
        return False
    return a[0] != "error" or a[1].split(":")[0] == b[1].split(":")[0]


def shrink(program: Program, failure: tuple, fails: Optional[Callable[[Program], tuple]] = None,
           budget: int = 60) -> Program:
    """A smaller program that fails the same way: fewer outputs, then steps dropped one at a
    time (last first) while numpy still defines it and it still fails; unused inputs dropped."""
    fails = fails or check
    tries = 0

    def still_fails(trial: Program) -> bool:
        nonlocal tries
        tries += 1
        return validate(trial) and same_failure(fails(trial), failure)

    # one output: the oldest variable that still fails (a step that raises fails whatever the
    # output; an intermediate may be wrong already)
    for name in program.names():
        if tries >= budget:
            break
        if program.outputs == [name]:
            continue
        trial = replace(program, outputs=[name])
        if still_fails(trial):
            program = trial
            break
    changed = True
    while changed and tries < budget:
        changed = False
        for i in reversed(range(len(program.steps))):
            if tries >= budget or i >= len(program.steps):
                break
            trial = replace(program, steps=program.steps[:i] + program.steps[i + 1:])
            if trial.outputs and still_fails(trial):
                program, changed = trial, True
    used = {a for s in program.steps for a in s.args} | set(program.outputs)
    return replace(program, inputs={k: v for k, v in program.inputs.items() if k in used})


def run_one(seed: int, device: str, max_ops: int = MAX_OPS, shrink_failures: bool = True) -> Outcome:
    """Generate the program of `seed`, check it, and on a failure shrink it and make its script."""
    start = time.perf_counter()
    program = generate(seed, device, max_ops)
    failure = check(program)
    if failure[0] == "ok":
        return Outcome(seed, device, "ok", seconds=time.perf_counter() - start)
    small = shrink(program, failure) if shrink_failures else program
    result = check(small) if small is not program else failure
    if not same_failure(result, failure):
        small, result = program, failure
    return Outcome(seed, device, result[0], result[1], script(small, result),
                   time.perf_counter() - start)


# ---- the reproduction --------------------------------------------------------------------------

def script(program: Program, failure: tuple = ("", "")) -> str:
    """A self-contained Python script that runs `program` on both and prints what differs."""
    names = ", ".join(program.inputs)
    outs = ", ".join(program.outputs)
    comma = "," if len(program.outputs) == 1 else ""
    lines = [f"# lazytensor fuzzer: seed {program.seed}, device {program.device!r}"
             + (f": {failure[0]}: {failure[1]}" if failure[0] else ""),
             "import math", "import numpy as np", "import lazytensor as lt", "from numpy import nan, inf",
             NUMPY_HELPERS.strip(), "", f"DEVICE = {program.device!r}", "INPUTS = {"]
    lines += [f"    {name!r}: {lit(value)}," for name, value in program.inputs.items()]
    lines += ["}", "", "", f"def run_numpy({names}):"]
    lines += [f"    {s.np_statement()}" for s in program.steps if s.kind != "peek"]
    lines += [f"    return {outs}{comma}", "", "", f"def run_lazytensor({names}):"]
    lines += [f"    {name} = lt.asarray({name}, device=DEVICE)" for name in program.inputs]
    lines += [f"    {s.lt_statement()}" for s in program.steps]
    lines += [f"    lt.realize({outs})", f"    return tuple(t.numpy() for t in ({outs}{comma}))", "", "",
              "want = run_numpy(**{k: v.copy() for k, v in INPUTS.items()})",
              "got = run_lazytensor(**INPUTS)",
              f"for name, g, w in zip({program.outputs!r}, got, want):",
              "    w = np.asarray(w)",
              "    same = g.shape == w.shape and g.dtype == w.dtype and np.allclose(g, w, rtol=1e-3, atol=0, equal_nan=True)",
              "    print(name, 'same' if same else 'DIFFERENT', g.dtype, g.shape, w.dtype, w.shape)",
              "    if not same:",
              "        print('  lazytensor:', g.tolist())",
              "        print('  numpy:     ', w.tolist())"]
    return "\n".join(lines) + "\n"


# ---- the long mode: programs in a worker process, so a crash is counted, not fatal -------------

def worker(device: str, max_ops: int) -> None:
    """Read seeds from stdin, answer one JSON Outcome a line on the real stdout (lazytensor's own
    prints go to stderr, with faulthandler's traceback of a crash)."""
    import faulthandler
    faulthandler.enable()
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        seed = int(line)
        if os.environ.get("LT_FUZZ_CRASH_SEED") == str(seed):  # the tests' check of crash handling
            os.abort()
        try:
            outcome = run_one(seed, device, max_ops)
        except Exception as error:  # the fuzzer's own bug: report it rather than die
            outcome = Outcome(seed, device, "fuzzer-error", f"{type(error).__name__}: {error}",
                              traceback.format_exc() + script(generate(seed, device, max_ops)))
        answers.write(json.dumps(outcome.__dict__) + "\n")
        answers.flush()


def crash_check(program: Program, timeout: float = 300.0) -> tuple:
    """("crash", how) if `program`'s script kills a fresh interpreter, else ("ok", "")."""
    try:
        done = subprocess.run([sys.executable, "-c", script(program)], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "ok", ""
    if done.returncode < 0:
        return "crash", f"signal {-done.returncode}"
    return "ok", ""


class Worker:
    """One worker process; a new one after a crash or a hang."""

    def __init__(self, device: str, max_ops: int):
        self.device, self.max_ops, self.process = device, max_ops, None
        self.log = tempfile.TemporaryFile()

    def start(self) -> None:
        self.log.seek(0)
        self.log.truncate()
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "--device", self.device, "--max-ops", str(self.max_ops)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)

    def run(self, seed: int, timeout: float) -> Outcome:
        if self.process is None or self.process.poll() is not None:
            self.start()
        start = time.perf_counter()
        self.process.stdin.write(f"{seed}\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if line:
            return Outcome(**json.loads(line))
        hung = not ready
        if not hung:  # the pipe closed: the worker is gone (reap it for its exit code)
            self.process.wait()
        message = f"the worker ran past {timeout} s" if hung else f"the worker died (exit code {self.process.poll()})"
        message += ": " + self.stderr_tail()
        self.stop()
        program = generate(seed, self.device, self.max_ops)
        if hung:
            return Outcome(seed, self.device, "hang", message, script(program, ("hang", message)), time.perf_counter() - start)
        if crash_check(program)[0] == "crash":  # it crashes on its own too: shrink it
            program = shrink(program, ("crash", ""), fails=crash_check, budget=20)
        else:
            message += " (its script alone did not crash)"
        return Outcome(seed, self.device, "crash", message, script(program, ("crash", message)), time.perf_counter() - start)

    def stderr_tail(self, lines: int = 24) -> str:
        """The worker's last words: faulthandler's report of a crash (where it died first)."""
        self.log.seek(0)
        text = self.log.read().decode(errors="replace").strip().splitlines()
        fatal = max((i for i, line in enumerate(text) if line.startswith("Fatal Python error")), default=len(text) - 6)
        return " | ".join(text[max(fatal, 0):][:lines])

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def long_run(device: str, minutes: float, seed: int, max_ops: int = MAX_OPS, timeout: float = 300.0,
             programs: Optional[int] = None, report: Callable[[str], None] = print) -> dict:
    """Programs seed, seed+1, ... for `minutes` (or `programs` of them) in a worker process.
    Returns the counts and the failures, each with its reproduction."""
    deadline = time.monotonic() + 60 * minutes
    counts = {"programs": 0, "mismatches": 0, "errors": 0, "crashes": 0, "hangs": 0, "fuzzer-errors": 0}
    key = {"mismatch": "mismatches", "error": "errors", "crash": "crashes", "hang": "hangs", "fuzzer-error": "fuzzer-errors"}
    failures = []
    runner = Worker(device, max_ops)
    last_report = time.monotonic()
    try:
        while time.monotonic() < deadline and counts["programs"] != programs:
            outcome = runner.run(seed, timeout)
            counts["programs"] += 1
            if outcome.status != "ok":
                counts[key[outcome.status]] += 1
                failures.append(outcome)
                report(f"seed {outcome.seed}: {outcome.status}: {outcome.message}")
            if time.monotonic() - last_report > 60:
                report(f"{device}: {counts}")
                last_report = time.monotonic()
            seed += 1
    finally:
        runner.stop()
    return {"counts": counts, "failures": failures, "next_seed": seed}


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-ops", type=int, default=MAX_OPS)
    parser.add_argument("--show", type=int, help="print the program of this seed as a script, and check it")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.device, args.max_ops)
        return 0
    if args.show is not None:
        outcome = run_one(args.show, args.device, args.max_ops)
        print(outcome.script or script(generate(args.show, args.device, args.max_ops)))
        print(f"# {outcome.status} {outcome.message}")
        return 0
    result = long_run(args.device, args.minutes, args.seed, args.max_ops)
    for outcome in result["failures"]:
        print(f"\n==== seed {outcome.seed}: {outcome.status}: {outcome.message}\n{outcome.script}")
    print(f"{args.device}: {result['counts']} (seeds {args.seed}..{result['next_seed'] - 1})")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
