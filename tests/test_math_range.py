"""sin, cos and tan over their whole range, through the public API, on every device.

The float32 sin/cos of the cpu backend returned 0 for every |x| >= 2^50 (the issue: sin(1e16),
sin(FLT_MAX)). Inputs: random bit patterns (every binade, both signs, subnormals, inf, nan),
the floats nearest a multiple of pi/2 (where the argument reduction cancels most) and the
issue's values. Errors are in ulp of the result at the reference: numpy in float64 for float32,
in long double for float64.

    python tests/test_math_range.py     # the search that found SINCOS_HARD_F32 (~2 minutes)
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import lazytensor as lt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cpu_mathlib import SINCOS_HARD_F32, random_floats, ulp_error  # noqa: E402

MAX32, MAX64 = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
NP_DTYPE = {lt.float32: np.float32, lt.float64: np.float64}
OPS = ["sin", "cos", "tan"]

# float64: the double nearest a multiple of pi/2 (6381956970095103 * 2^797, 2^-60.9 from it;
# Muller, "Elementary Functions") and the usual large values.
HARD_F64 = [6381956970095103 * 2.0**797, 1e16, 1e22, 1e300, MAX64, MAX32, 2.0**1023 * 1.5]

# Max ulp asserted. cpu: float32 sin/cos are backends/cpu/mathlib.py's (0.501 measured here), the
# rest the C library's (glibc 2.36: tanf 1.28 at 52516.434, double 0.53). The OpenCL C
# specification allows 4 ulp for sin and cos and 5 for tan (float and double); PoCL 3.1 measured
# 1.58 and 2.83 here (1.95 and 3.01 over 300,000 random bit patterns).
BOUND = {"cpu": {"sin": 1.0, "cos": 1.0, "tan": 2.0}, "opencl": {"sin": 4.0, "cos": 4.0, "tan": 5.0}}
BOUND_F64_CPU = 2.0
# glibc's double cos and tan at the double nearest a multiple of pi/2: 7.95 and 14.4 ulp (its
# reduction keeps ~2^-111 absolute); numpy returns the same values there.
GLIBC_WORST_CASE = 16.0


def _points(dtype) -> np.ndarray:
    np_dtype = NP_DTYPE[dtype]
    if np_dtype == np.float32:
        hard = np.float32(SINCOS_HARD_F32 + [1e16, 2.0**50, MAX32, 1e30, 3e15, 1e38, 2.0**24, 2.0**50 - 2**26])
    else:
        hard = np.float64(HARD_F64)
    with np.errstate(over="ignore"):   # (the float after the largest: inf)
        hard = np.concatenate([hard, -hard, np.nextafter(hard, np_dtype(0)), np.nextafter(hard, np_dtype(np.inf))])
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(np_dtype).smallest_subnormal,
                         -np.finfo(np_dtype).smallest_subnormal, np.finfo(np_dtype).tiny], np_dtype)
    return np.concatenate([random_floats(100_000, seed=5, dtype=np_dtype), hard, specials])


def _reference(op: str, x: np.ndarray) -> np.ndarray:
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return getattr(np, op)(x.astype(wide))


def _bound(device: str, op: str, dtype, x: np.ndarray) -> np.ndarray:
    kind = device.split(":")[0]
    if kind == "cpu" and dtype == lt.float64:
        bound = np.full(x.shape, BOUND_F64_CPU)
        bound[np.abs(x) == HARD_F64[0]] = GLIBC_WORST_CASE
        return bound
    return np.full(x.shape, BOUND.get(kind, BOUND["opencl"])[op])


def test_trig_whole_range(device):
    """Every op and float dtype in one test, so that each runs on every device."""
    failures = []
    for dtype in (lt.float32, lt.float64):
        x = _points(dtype)
        for op in OPS:
            got = getattr(lt, op)(lt.asarray(x, device=device)).numpy()
            err = ulp_error(got, _reference(op, x))
            bad = np.nonzero(err > _bound(device, op, dtype, x))[0]
            failures += [f"{op} {dtype}: {err[i]:.2f} ulp at x={x[i]!r}: got {got[i]!r}" for i in bad[:3]]
    assert not failures, "\n".join(failures)


def test_trig_special_values(device):
    """Exactly numpy's: the sign of a zero result, subnormals kept, nan for inf and nan."""
    for dtype in (lt.float32, lt.float64):
        np_dtype = NP_DTYPE[dtype]
        tiny = np.finfo(np_dtype).smallest_subnormal
        x = np.array([0.0, -0.0, tiny, -tiny, 1e-30, np.inf, -np.inf, np.nan], np_dtype)
        for op in OPS:
            got = getattr(lt, op)(lt.asarray(x, device=device)).numpy()
            with np.errstate(invalid="ignore"):
                want = getattr(np, op)(x)
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {dtype}")
            np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]),
                                          err_msg=f"{op} {dtype}: sign of zero")


@pytest.mark.parametrize("value", [1e16, MAX32, -MAX32])
def test_float32_sincos_of_huge_scalars(value, device):
    """The issue's calls: 0-d float32 tensors, 0 came back."""
    for op in ("sin", "cos"):
        got = getattr(lt, op)(lt.asarray(value, dtype=lt.float32, device=device)).item()
        want = getattr(np, op)(np.float64(np.float32(value)))
        assert abs(got - want) <= np.spacing(np.float32(abs(want))), (op, value, got, want)


# ---- the search for SINCOS_HARD_F32 --------------------------------------------------------------

def nearest_to_multiples_of_half_pi(first_exponent: int = -10, count: int = 40) -> list[tuple[float, float]]:
    """(x, log2 of x's distance to the nearest multiple of pi/2 in quarter periods) for the
    `count` positive float32 x >= 2^(first_exponent + 23) nearest one, over every such float.

    A binade is x = m * 2^e, m = 2^23 .. 2^24 - 1: x*2/pi mod 1 = m*F mod 1 with F the fraction
    of 2^e * 2/pi, taken to 128 bits, so numpy computes it for the whole binade in 64-bit
    integers (2^-64 resolution; the distances found are near 2^-30).
    """
    import mpmath
    mpmath.mp.prec = 700
    two_over_pi = int(mpmath.floor(2 * mpmath.mpf(2) ** 512 / mpmath.pi))
    m = np.arange(2**23, 2**24, dtype=np.uint64)
    found = []
    for e in range(first_exponent, 105):
        f = (two_over_pi << e if e >= 0 else two_over_pi >> -e) >> (512 - 128) & (2**128 - 1)
        hi, lo = np.uint64(f >> 64), f & (2**64 - 1)
        with np.errstate(over="ignore"):
            carry = (m * np.uint64(lo >> 32) + ((m * np.uint64(lo & 0xFFFFFFFF)) >> np.uint64(32))) >> np.uint64(32)
            frac = m * hi + carry                                   # (m*F mod 1) * 2^64
        distance = np.minimum(frac, np.uint64(0) - frac)
        for i in np.argsort(distance)[:3]:
            found.append((float(int(m[i]) * 2.0**e), float(np.log2(float(distance[i]) / 2**64))))
    return sorted(found, key=lambda item: item[1])[:count]


if __name__ == "__main__":
    for x, log_distance in nearest_to_multiples_of_half_pi():
        print(f"{float.hex(x)}  {np.float32(x)!r:>28}  2^{log_distance:.2f}")
