"""nan and inf operands that the device compiler can see, on every device, against numpy.

A Python scalar becomes a literal in the kernel's source, so a device compiler folds `t + nan`
to a constant nan and then folds the functions applied to it. PoCL 3.1's floor, ceil, trunc,
rint, exp, expm1, sinh and tanh convert their argument to an integer first (LLVM's fptosi: no
value for nan, so folding it gives poison) and `t // float('nan')` came back as garbage on
OpenCL (its helper calls floor). Here: `//` and `%` with a special scalar in either position,
then every float function on a value that folds to nan, inf or a huge constant.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazytensor as lt

NP_DTYPE = {lt.float32: np.float32, lt.float64: np.float64}
VALUES = [1.5, -2.0, 0.0, -0.0, 7.25, -0.5, 3.0, 1e30, -1e-30, np.inf, -np.inf, np.nan]
SCALARS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.5, -3.0, 1e-45, 3e38]


def _same(got: np.ndarray, want: np.ndarray, rtol: float = 0.0) -> np.ndarray:
    """Equal values (within `rtol` where finite) with the same sign (zeros too), or both nan."""
    with np.errstate(invalid="ignore"):
        near = (got == want) | np.isfinite(want) & (np.abs(got - want) <= rtol * np.abs(want))
    return near & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)


def _check(got: np.ndarray, want: np.ndarray, what: str, inputs: np.ndarray, rtol: float = 0.0) -> None:
    bad = np.nonzero(~_same(got, want, rtol))[0]
    assert not bad.size, f"{what}: " + ", ".join(f"x={inputs[i]!r}: got {got[i]!r}, want {want[i]!r}" for i in bad[:6])


def floor_divide_reference(a, b) -> np.ndarray:
    """numpy's floor_divide, but the Array API's where exactly one operand is infinite: x / y
    there (inf // 2 is inf, 1 // -inf is -0.0, where numpy gives nan and -1.0), as lazytensor
    does (lt.floor_divide says why)."""
    with np.errstate(all="ignore"):
        return np.where(np.isinf(a) != np.isinf(b), np.divide(a, b), np.floor_divide(a, b))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=["float32", "float64"])
def test_floordiv_and_mod_with_special_scalars(dtype, device):
    """The issue: t // float('nan') on OpenCL; both operators, every scalar, both positions."""
    np_dtype = NP_DTYPE[dtype]
    x = np.array(VALUES, np_dtype)
    t = lt.asarray(x, device=device)
    for scalar in SCALARS:
        c = np_dtype(scalar)
        with np.errstate(all="ignore"):
            _check((t // float(scalar)).numpy(), floor_divide_reference(x, c), f"x // {scalar}", x)
            _check((float(scalar) // t).numpy(), floor_divide_reference(c, x), f"{scalar} // x", x)
            _check((t % float(scalar)).numpy(), np.remainder(x, c), f"x % {scalar}", x)
            _check((float(scalar) % t).numpy(), np.remainder(c, x), f"{scalar} % x", x)


def _erf(x: np.ndarray) -> np.ndarray:   # numpy has none: the C library's
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


UNARY = {name: (getattr(lt, name), getattr(np, name)) for name in (
    "floor", "ceil", "trunc", "round", "exp", "expm1", "sinh", "cosh", "tanh", "log", "log1p", "log2",
    "log10", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
    "abs", "sign", "square", "reciprocal")}
UNARY["erf"] = (lt.erf, _erf)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=["float32", "float64"])
def test_functions_of_values_that_fold_to_special_constants(dtype, device):
    """f(t + nan) is f of a constant nan to the device compiler; f(t * 0 + c) is not folded
    (t could be inf) and checks the same functions at run time."""
    np_dtype = NP_DTYPE[dtype]
    rtol = 1e-5 if dtype == lt.float32 else 1e-12   # the transcendental tolerance of the tests
    x = np.array([1.5, -2.0, 0.0, 7.0], np_dtype)
    t = lt.asarray(x, device=device)
    for name, (lt_fn, np_fn) in UNARY.items():
        for scalar in (np.nan, -np.inf, 3e38):
            with np.errstate(all="ignore"):
                want = np_fn(x + np_dtype(scalar))
            _check(lt_fn(t + float(scalar)).numpy(), want, f"{name}(x + {scalar})", x, rtol)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=["float32", "float64"])
def test_binary_functions_with_a_nan_scalar(dtype, device):
    np_dtype = NP_DTYPE[dtype]
    rtol = 1e-5 if dtype == lt.float32 else 1e-12
    x = np.array([1.5, -2.0, 0.0, np.inf], np_dtype)
    t = lt.asarray(x, device=device)
    for name in ("power", "arctan2", "hypot", "copysign", "maximum", "minimum"):
        lt_fn, np_fn = getattr(lt, name), getattr(np, name)
        for scalar in (np.nan, np.inf, -np.inf):
            with np.errstate(all="ignore"):
                _check(lt_fn(t, float(scalar)).numpy(), np_fn(x, np_dtype(scalar)), f"{name}(x, {scalar})", x, rtol)
                _check(lt_fn(float(scalar), t).numpy(), np_fn(np_dtype(scalar), x), f"{name}({scalar}, x)", x, rtol)
