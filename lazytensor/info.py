"""The Array API's data-type functions and inspection namespace (standard version 2025.12).

`finfo`, `iinfo`, `result_type`, `can_cast`, `isdtype` and `__array_namespace_info__()` answer
questions about lazytensor's dtypes without building a graph. Promotion and casting follow
numpy 2 (NEP 50), which is what lazytensor's operations do: it agrees with the standard
everywhere the standard defines a result and also answers the mixed-kind cases the standard
leaves to the implementation (int8 with float32 -> float32, bool with int8 -> int8,
int64 with uint64 -> float64).

>>> lt.result_type(lt.int8, lt.uint8)
lazytensor.int16
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from .devices import canonical_device, default_device, devices
from .ir.dtypes import (DTYPES, DType, can_cast_safe, default_complex, default_float, default_int, float_limits,
                        real_dtype, to_dtype)
from .ir.dtypes import result_type as _promote
from .tensor import Tensor

__array_api_version__ = "2025.12"

__all__ = ["__array_api_version__", "finfo", "iinfo", "result_type", "can_cast", "isdtype", "Info",
           "__array_namespace_info__"]

# The standard's dtype kinds, each as a test on a DType.
KINDS = {
    "bool": lambda d: d.is_bool,
    "signed integer": lambda d: d.is_int,
    "unsigned integer": lambda d: d.is_unsigned,
    "integral": lambda d: d.is_integer,
    "real floating": lambda d: d.is_float,
    "complex floating": lambda d: d.is_complex,
    "numeric": lambda d: d.is_integer or d.is_inexact,
}

# lazytensor's dtypes that the standard does not define: usable everywhere (lt.float16), but not
# listed by __array_namespace_info__().dtypes(), whose every entry must be a standard dtype
EXTRA_DTYPES = frozenset({"float16", "bfloat16"})

# Python scalar types that promote as "weak" (only their kind matters). Exact types: a numpy
# scalar such as np.float64(1.0) subclasses float but is a strong float64, as in numpy.
_WEAK_SCALARS = (bool, int, float, complex)


class DTypeKindError(TypeError, ValueError):
    """A dtype of the wrong kind, e.g. finfo(int8). A TypeError (the argument's type is wrong)
    that is also a ValueError, the class numpy and array-api-strict raise for the same call, so
    code written for either still catches it."""


@dataclass(frozen=True)
class FloatInfo:
    """Machine limits of a floating-point dtype, as `finfo` returns them (Python floats)."""
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class IntInfo:
    """Machine limits of an integer dtype, as `iinfo` returns them (Python ints)."""
    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(value: Any, function: str, argument: str) -> DType:
    """The DType a `value` names: a DType, numpy dtype or type, a dtype name, or a Tensor."""
    if isinstance(value, Tensor):
        return value.dtype
    if value is None:  # np.dtype(None) is float64; here None is a mistake, not a default
        raise TypeError(f"{function}: {argument} must be a dtype or a Tensor, not None")
    try:
        return to_dtype(value)
    except TypeError as error:
        raise TypeError(f"{function}: {argument}={value!r} is not a lazytensor dtype or Tensor ({error})") from None


def finfo(type: Union[DType, Tensor, Any], /) -> FloatInfo:
    """Machine limits of a floating-point dtype (or of a Tensor's dtype); of a complex dtype's
    parts for a complex one (finfo(complex64) is float32's, as the Array API says).

    >>> lt.finfo(lt.float16).max
    65504.0
    """
    dtype = real_dtype(_dtype_of(type, "finfo", "type"))
    if not dtype.is_float:
        raise DTypeKindError(f"finfo needs a floating-point dtype, got {dtype.name}; use iinfo for integers")
    limits = float_limits(dtype)
    return FloatInfo(bits=limits.bits, eps=limits.eps, max=limits.max, min=-limits.max,
                     smallest_normal=limits.smallest_normal, dtype=dtype)


def iinfo(type: Union[DType, Tensor, Any], /) -> IntInfo:
    """Machine limits of an integer dtype (or of a Tensor's dtype).

    >>> lt.iinfo(lt.uint8).max
    255
    """
    dtype = _dtype_of(type, "iinfo", "type")
    if not dtype.is_integer:
        raise DTypeKindError(f"iinfo needs an integer dtype, got {dtype.name}; use finfo for floating point")
    limits = np.iinfo(dtype.np)
    return IntInfo(bits=int(limits.bits), max=int(limits.max), min=int(limits.min), dtype=dtype)


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype an operation on these Tensors, dtypes and Python scalars gives (numpy-2 rules:
    Python scalars are weak, so only their kind counts, never their value).

    >>> lt.result_type(lt.int8, lt.float32), lt.result_type(lt.float16, 2.0)
    (lazytensor.float32, lazytensor.float16)
    """
    operands: list = []
    for operand in arrays_and_dtypes:
        if type(operand) in _WEAK_SCALARS:
            operands.append(operand)
        elif isinstance(operand, np.generic):  # a numpy scalar value carries a strong dtype
            operands.append(_dtype_of(operand.dtype, "result_type", "operand"))
        else:
            operands.append(_dtype_of(operand, "result_type", "operand"))
    if not operands:
        raise ValueError("result_type needs at least one Tensor, dtype or scalar")
    if not any(isinstance(operand, DType) for operand in operands):
        # Python scalars alone (the standard leaves this open): the default dtype of the highest
        # kind among them, as numpy and PyTorch give theirs (SciPy asks result_type(0, 1.0))
        kind = max(_WEAK_SCALARS.index(type(operand)) for operand in operands)
        return (DTYPES["bool"], default_int, default_float, default_complex)[kind]
    return _promote(*operands)


def can_cast(from_: Union[DType, Tensor, Any], to: Union[DType, Any], /) -> bool:
    """Whether `from_` (a dtype or a Tensor's dtype) converts to `to` without losing values:
    numpy's "safe" casting, the standard's rule extended to the mixed kinds it leaves open.

    >>> lt.can_cast(lt.int16, lt.float32), lt.can_cast(lt.int64, lt.int32)
    (True, False)
    """
    if isinstance(to, Tensor):
        raise TypeError("can_cast: `to` must be a dtype, not a Tensor; pass tensor.dtype")
    source = _dtype_of(from_, "can_cast", "from_")
    target = _dtype_of(to, "can_cast", "to")
    return can_cast_safe(source, target)


def _as_isdtype_dtype(value: Any, argument: str) -> Optional[DType]:
    """A dtype argument of isdtype: a DType or a numpy dtype/scalar type (strings are kind names
    there, so dtype names are not accepted, as in numpy). None for a numpy dtype lazytensor lacks."""
    if isinstance(value, DType):
        return value
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return DTYPES.get(np.dtype(value).name)
    raise TypeError(f"isdtype: {argument} must be a dtype, not {type(value).__name__} {value!r}")


def _check_kind_name(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown dtype kind {kind!r}; the kinds are {', '.join(map(repr, KINDS))}")


def isdtype(dtype: DType, kind: Union[DType, str, tuple]) -> bool:
    """Whether `dtype` is of `kind`: a kind name ('bool', 'signed integer', 'unsigned integer',
    'integral', 'real floating', 'complex floating', 'numeric'), a dtype, or a tuple of those.

    >>> lt.isdtype(lt.uint8, "integral"), lt.isdtype(lt.float32, ("bool", lt.int8))
    (True, False)
    """
    checked = _as_isdtype_dtype(dtype, "dtype")
    if checked is None:
        raise TypeError(f"isdtype: {dtype!r} is not a lazytensor dtype (supported: {', '.join(DTYPES)})")
    if isinstance(kind, tuple):
        if any(isinstance(k, tuple) for k in kind):
            raise TypeError(f"isdtype: kind must be a dtype, a kind name or a flat tuple of those, not {kind!r}")
        return any(isdtype(checked, k) for k in kind)
    if isinstance(kind, str):
        _check_kind_name(kind)
        return KINDS[kind](checked)
    if isinstance(kind, (DType, np.dtype)) or (isinstance(kind, type) and issubclass(kind, np.generic)):
        return checked is _as_isdtype_dtype(kind, "kind")
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple of those, not "
                    f"{type(kind).__name__} {kind!r}")


class Info:
    """The Array API's inspection namespace for lazytensor: devices, default and supported dtypes.

    >>> lt.__array_namespace_info__().default_dtypes()["real floating"]
    lazytensor.float32
    """

    def capabilities(self) -> dict:
        """What this library supports beyond the core: no data-dependent output shapes yet.

        >>> lt.__array_namespace_info__().capabilities()["max dimensions"]
        64
        """
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> str:
        """The device new Tensors go to when none is named.

        >>> lt.__array_namespace_info__().default_device()
        'cpu'
        """
        return default_device()

    def devices(self) -> tuple[str, ...]:
        """The devices available in this process (as `lt.devices()`).

        >>> "cpu" in lt.__array_namespace_info__().devices()
        True
        """
        return devices()

    def default_dtypes(self, *, device: Any = None) -> dict:
        """The dtype creation functions pick for floats, complex numbers, integers and indices on
        `device`.

        >>> lt.__array_namespace_info__().default_dtypes()["integral"]
        lazytensor.int64
        """
        canonical_device(device)  # an unknown device is an error here, where the user named it
        return {"real floating": default_float, "complex floating": default_complex, "integral": default_int,
                "indexing": default_int}

    def dtypes(self, *, device: Any = None, kind: Union[None, str, tuple] = None) -> dict:
        """The standard's dtypes `device` supports, name -> DType, optionally only those of `kind`
        (a kind name or a tuple of kind names, as for isdtype). lazytensor's float16 works on
        every device too, but is no standard dtype, so it is not listed.

        >>> list(lt.__array_namespace_info__().dtypes(kind="unsigned integer"))
        ['uint8', 'uint16', 'uint32', 'uint64']
        >>> list(lt.__array_namespace_info__().dtypes(kind="real floating"))
        ['float32', 'float64']
        """
        canonical_device(device)
        standard = {name: dtype for name, dtype in DTYPES.items() if name not in EXTRA_DTYPES}
        if kind is None:
            return standard
        names = kind if isinstance(kind, tuple) else (kind,)
        for name in names:
            if not isinstance(name, str) or name not in KINDS:
                raise ValueError(f"dtypes: unsupported kind {name!r}; the kinds are {', '.join(map(repr, KINDS))}")
        return {dtype_name: dtype for dtype_name, dtype in standard.items() if isdtype(dtype, names)}

    def __repr__(self) -> str:
        return "lazytensor.__array_namespace_info__()"


def __array_namespace_info__() -> Info:
    """The Array API inspection namespace (capabilities, devices, dtypes) of lazytensor.

    >>> lt.__array_namespace_info__().dtypes()["float32"]
    lazytensor.float32
    """
    return Info()
