"""Data types of lazytensor and numpy-2 type promotion.

A `DType` is a singleton per type; it compares equal to the numpy dtype of the same name, so
`x.dtype == np.float32` works the way a numpy user expects.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    name: str
    itemsize: int
    kind: str  # "b" bool, "i" signed int, "u" unsigned int, "f" float, "c" complex (numpy's kind letters)

    @functools.cached_property
    def np(self) -> np.dtype:
        """numpy's dtype for this type's values on the host (constants, host computations,
        `numpy()`): its own, but float32 for bfloat16, which numpy lacks (float32 holds every
        bfloat16 value exactly)."""
        return np.dtype("float32" if self.name == "bfloat16" else self.name)

    @functools.cached_property
    def storage(self) -> np.dtype:   # (asked at every allocation: np.dtype() costs ~0.3 us)
        """numpy's dtype for this type's memory: its own, but uint16 bit patterns for bfloat16
        (the upper half of a float32's bits)."""
        return np.dtype("uint16" if self.name == "bfloat16" else self.name)

    @property
    def dtype(self) -> np.dtype:
        """numpy's dtype (so np.dtype(lt.float32) and np.zeros(3, dtype=t.dtype) read it);
        bfloat16's is ml_dtypes' where that is installed (numpy has none)."""
        if self.name != "bfloat16":
            return self.np
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("numpy has no bfloat16 dtype (install ml_dtypes for one); lazytensor gives "
                            "bfloat16 values to numpy as float32 (x.numpy())") from None
        return np.dtype(ml_dtypes.bfloat16)

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
            return other == self.np if self.name != "bfloat16" else other.name == "bfloat16"
        if other is None:   # no dtype (numpy reads None as float64; here it is no dtype at all)
            return False
        if isinstance(other, str) and other == "bfloat16":   # (a name numpy knows with ml_dtypes only)
            return self.name == "bfloat16"
        read = _numpy_dtype(other) if isinstance(other, (str, type)) else _numpy_dtype.__wrapped__(other)
        return read is not None and self == read   # (the common spellings, str and type, read once)

    # the dtypes are module-level singletons (pickled by name): hash by identity, a C-level call
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"lazytensor.{self.name}"

    def __reduce__(self) -> tuple:
        return to_dtype, (self.name,)   # pickles as the singleton of that name


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
# bfloat16 (the upper half of a float32) exists in memory only: kernels compute in float32 and
# round each result to bfloat16, as PyTorch does; a graph pass (ir/bfloat16.py) lowers its nodes
bfloat16 = DType("bfloat16", 2, "f")
# complex numbers are pairs of floats (real, imaginary) in memory, as in numpy and C; kernels never
# see them: a graph pass (ir/complex.py) lowers each complex node to a pair of real ones
complex64 = DType("complex64", 8, "c")
complex128 = DType("complex128", 16, "c")

DTYPES: dict[str, DType] = {d.name: d for d in (bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                                 uint64, float16, bfloat16, float32, float64, complex64,
                                                 complex128)}
# the 16-bit floats: a computation of many steps (a product's sum, a transform, a decomposition)
# runs in float32 and rounds once, as numpy and PyTorch do
HALF_FLOATS = frozenset({float16, bfloat16})
default_float = float32
default_int = int64
default_complex = complex64   # (the complex type of the default float, as the Array API says)
COMPONENT = {complex64: float32, complex128: float64}   # a complex type's real and imaginary parts
COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}


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
    if isinstance(like, str) and like in DTYPES:
        return DTYPES[like]
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
    if bfloat16 in operands:
        return _with_bfloat16(operands)
    converted = [op.np if isinstance(op, DType) else _WEAK_VALUE.get(op, op) for op in operands]
    return to_dtype(np.result_type(*converted))


def _with_bfloat16(operands: tuple) -> DType:
    """PyTorch's and JAX's promotion with bfloat16 (numpy has none): bools, integers and Python
    scalars of those kinds or floats give bfloat16; any other float or complex type promotes
    as float32 would (bfloat16 with float16 -> float32, with float64 -> float64, with a Python
    complex -> complex64)."""
    wider = tuple(op for op in operands if op is not bfloat16 and op not in ("weak_bool", "weak_int", "weak_float")
                  and not (isinstance(op, DType) and op.kind in "biu"))
    return _result_type(wider + (float32,)) if wider else bfloat16


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
    if bfloat16 in dtypes:
        # numpy has no bfloat16: the loop of the promoted type, bfloat16's asked as float16's
        # (the other 16-bit float's)
        common = result_type(*dtypes)
        result = ufunc_result(ufunc, *[float16 if common is bfloat16 else common] * len(dtypes))
        return bfloat16 if result is float16 else result
    with np.errstate(all="ignore"):
        return to_dtype(ufunc(*[np.ones(1, dtype=d.np) for d in dtypes]).dtype)


def can_cast_safe(source: DType, target: DType) -> bool:
    """Whether every value of `source` converts to `target` exactly (numpy's "safe" casting)."""
    if source is target:
        return True
    if source is bfloat16:   # (8 significant bits, float32's exponent range)
        return target.kind == "c" or target in (float32, float64)
    if target is bfloat16:
        return source in (bool_, int8, uint8)
    return bool(np.can_cast(source.np, target.np, casting="safe"))


class FloatLimits(NamedTuple):
    bits: int
    eps: float
    max: float
    smallest_normal: float
    smallest_subnormal: float


def float_limits(dtype: DType) -> FloatLimits:
    """numpy's finfo of a real floating-point type (Python numbers), bfloat16's too."""
    if dtype is bfloat16:   # (float32's exponent range, 8 significant bits)
        return FloatLimits(16, 2.0 ** -7, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126, 2.0 ** -133)
    limits = np.finfo(dtype.np)
    return FloatLimits(int(limits.bits), float(limits.eps), float(limits.max), float(limits.smallest_normal),
                       float(limits.smallest_subnormal))


# ---- bfloat16 on the host: float32 values <-> the bit patterns in memory ----------------------

def bfloat16_bits(values: Any) -> np.ndarray:
    """The bfloat16 bit patterns (uint16) of `values` rounded to nearest, ties to even (through
    float32, as PyTorch converts); every nan becomes the quiet nan 0x7fc0, as in PyTorch."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    return np.where(np.isnan(bits.view(np.float32)), np.uint16(0x7FC0), rounded.astype(np.uint16))


def bfloat16_values(bits: np.ndarray) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact)."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32)
    wide <<= np.uint32(16)   # (in place: an operator would make a 0-d array a scalar)
    return wide.view(np.float32)


def cast_values(values: Any, dtype: DType) -> np.ndarray:
    """`values` converted to `dtype` as host values (numpy's astype; bfloat16's float32 values
    rounded to bfloat16)."""
    converted = np.asarray(values).astype(dtype.np, copy=False)
    return bfloat16_values(bfloat16_bits(converted)).reshape(converted.shape) if dtype is bfloat16 else converted
