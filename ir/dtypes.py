"""Data types of lazytensor and numpy-2 type promotion.

A `DType` is a singleton per type; it compares equal to the numpy dtype of the same name, so
`x.dtype == np.float32` works the way a numpy user expects.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    name: str
    itemsize: int
    kind: str  # "b" bool, "i" signed int, "u" unsigned int, "f" float, "c" complex (numpy's kind letters)

    @functools.cached_property
    def np(self) -> np.dtype:   # (asked at every allocation: np.dtype() costs ~0.3 us)
        return np.dtype(self.name)

    @property
    def dtype(self) -> np.dtype:
        """numpy's dtype (so np.dtype(lt.float32) and np.zeros(3, dtype=t.dtype) read it)."""
        return self.np

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """A signed integer."""
        return self.kind == "i"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_integer(self) -> bool:
        """A signed or unsigned integer (not bool)."""
        return self.kind in "iu"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_inexact(self) -> bool:
        """A real or complex floating-point type."""
        return self.kind in "fc"

    def __eq__(self, other: object) -> bool:
        """Equal to itself and to whatever numpy reads as the same dtype ("float32", np.float32,
        np.dtype("f4")); anything else is unequal. An equality test never raises or warns, since
        `dtype == x` is asked of arbitrary objects (`x in [lt.float32, ...]`, dict lookups)."""
        if isinstance(other, DType):
            return self is other
        if isinstance(other, np.dtype):
            return other == self.np
        if other is None:   # no dtype (numpy reads None as float64; here it is no dtype at all)
            return False
        read = _numpy_dtype(other) if isinstance(other, (str, type)) else _numpy_dtype.__wrapped__(other)
        return read is not None and read == self.np   # (the common spellings, str and type, read once)

    # the dtypes are module-level singletons (pickled by name): hash by identity, a C-level call
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"lazytensor.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickles as the module-level singleton of the same name


bool_ = DType("bool", 1, "b")
int8 = DType("int8", 1, "i")
int16 = DType("int16", 2, "i")
int32 = DType("int32", 4, "i")
int64 = DType("int64", 8, "i")
uint8 = DType("uint8", 1, "u")
uint16 = DType("uint16", 2, "u")
uint32 = DType("uint32", 4, "u")
uint64 = DType("uint64", 8, "u")
float16 = DType("float16", 2, "f")   # stored as half; arithmetic rounds to half after each op
float32 = DType("float32", 4, "f")
float64 = DType("float64", 8, "f")
# complex numbers are pairs of floats (real, imaginary) in memory, as in numpy and C; kernels never
# see them: a graph pass (ir/complex.py) lowers each complex node to a pair of real ones
complex64 = DType("complex64", 8, "c")
complex128 = DType("complex128", 16, "c")

DTYPES: dict[str, DType] = {d.name: d for d in (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                                 uint64, float16, float32, float64, complex64, complex128)}
default_float = float32
default_int = int64
default_complex = complex64   # (the complex type of the default float, as the Array API says)
COMPONENT = {complex64: float32, complex128: float64}   # a complex type's real and imaginary parts
COMPLEX_OF = {float16: complex64, float32: complex64, float64: complex128}


def real_dtype(dtype: DType) -> DType:
    """The type of a complex type's parts; any other type itself."""
    return COMPONENT.get(dtype, dtype)


@functools.lru_cache(maxsize=256)
def _numpy_dtype(like: Any) -> Any:
    """numpy's reading of `like` as a dtype, or None where it reads none (or fails in any way:
    np.dtype runs arbitrary code, such as a `dtype` property), without numpy's warnings about
    deprecated names ("a")."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.dtype(like)
    except Exception:   # noqa: BLE001
        return None


def to_dtype(like: Any) -> DType:
    """The lazytensor dtype for a DType, numpy dtype, Python type or name.

    None is the default float (float32), as wherever lazytensor infers a float (numpy's
    default, float64, is not lazytensor's).

    >>> to_dtype("float32") is float32, to_dtype(None) is float32
    (True, True)
    """
    if isinstance(like, DType):
        return like
    if like is None:
        return default_float
    try:
        name = np.dtype(like).name
    except TypeError:
        raise TypeError(f"data type {like!r} not understood") from None
    if name not in DTYPES:
        supported = ", ".join(DTYPES)
        raise TypeError(f"dtype {name} is not supported by lazytensor (supported: {supported}); "
                        "convert the data with .astype() first")
    return DTYPES[name]


def result_type(*operands: Any) -> DType:
    """numpy-2 (NEP 50) promotion of dtypes and Python scalars; scalars are 'weak'.

    >>> result_type(float32, 2.0) is float32, result_type(int32, 1.5) is float64
    (True, True)
    """
    # Under NEP 50 a Python scalar's value never changes the result, only its type, so the
    # answer is cached by types (numpy's result_type costs ~5 us a call).
    return _result_type(tuple(op if isinstance(op, DType) else _WEAK.get(type(op), op) for op in operands))


_WEAK = {bool: "weak_bool", int: "weak_int", float: "weak_float", complex: "weak_complex"}
_WEAK_VALUE = {"weak_bool": False, "weak_int": 0, "weak_float": 0.0, "weak_complex": 0j}


@functools.lru_cache(maxsize=1024)
def _result_type(operands: tuple) -> DType:
    converted = [op.np if isinstance(op, DType) else _WEAK_VALUE.get(op, op) for op in operands]
    return to_dtype(np.result_type(*converted))


def scalar_fits(value: Any, dtype: DType) -> bool:
    """Whether a Python scalar converts to `dtype` without the overflow numpy 2 rejects."""
    if dtype.is_integer and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype.np)
        return info.min <= value <= info.max
    return True


@functools.lru_cache(maxsize=4096)
def ufunc_result(ufunc: np.ufunc, *dtypes: DType) -> DType:
    """The dtype numpy's `ufunc` gives for operands of `dtypes` (asked of numpy once, cached):
    the exact answer for cases like np.exp(int8) -> float16 or int8 / int8 -> float64."""
    with np.errstate(all="ignore"):
        return to_dtype(ufunc(*[np.ones(1, dtype=d.np) for d in dtypes]).dtype)
