"""The libcalls the cpu backend provides (backends/cpu/support.py): half conversions, checked
against numpy's on every half, on the float and double values around every rounding boundary
and on random ones; and the float16 kernels whose machine code calls them."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import lazytensor as lt
from lazytensor.devices import runtime

# One kernel per support function: out[i] = f(in[i]) over [start, end), with the kernels' entry.
_KERNEL = """
declare {ret} @{name}({arg})
define void @k_{name}(ptr %args, i64 %start, i64 %end) {{
entry:
  %outp = getelementptr ptr, ptr %args, i64 0
  %out = load ptr, ptr %outp
  %inp = getelementptr ptr, ptr %args, i64 1
  %in = load ptr, ptr %inp
  %go = icmp slt i64 %start, %end
  br i1 %go, label %loop, label %done
loop:
  %i = phi i64 [ %start, %entry ], [ %next, %loop ]
  %src = getelementptr {arg}, ptr %in, i64 %i
  %x = load {arg}, ptr %src
  %y = call {ret} @{name}({arg} %x)
  %dst = getelementptr {ret}, ptr %out, i64 %i
  store {ret} %y, ptr %dst
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %end
  br i1 %more, label %loop, label %done
done:
  ret void
}}
"""
_SIGNATURES = {"__truncsfhf2": ("half", "float"), "__truncdfhf2": ("half", "double"),
               "__extendhfsf2": ("float", "half"), "__gnu_f2h_ieee": ("i16", "float"),
               "__gnu_h2f_ieee": ("float", "i16")}


def _call(name: str, values: np.ndarray, out_dtype) -> np.ndarray:
    """`name` applied to each of `values` by a compiled kernel that calls it."""
    ret, arg = _SIGNATURES[name]
    rt = runtime("cpu")
    binary = rt.compiler.compile(_KERNEL.format(name=name, ret=ret, arg=arg), f"k_{name}")
    program = rt.device.load(binary, f"k_{name}")
    values = np.ascontiguousarray(values)
    out = np.empty(values.shape, out_dtype)
    args = (ctypes.c_void_p * 2)(out.ctypes.data, values.ctypes.data)
    program(args, 0, values.size)
    return out


def _boundaries(dtype) -> np.ndarray:
    """Every half's value converted up, the midpoints between neighbouring halves, and the
    values just around those (as `dtype`): where rounding to half can go wrong."""
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = np.sort(halves[np.isfinite(halves)].astype(np.float64))
    finite = np.unique(np.concatenate([finite, [65520.0, -65520.0, 65504.0 + 16, 2.0 ** -25, 2.0 ** -26]]))
    mids = (finite[:-1] + finite[1:]) / 2
    values = np.concatenate([finite, mids]).astype(dtype)
    nearby = [np.nextafter(values, np.inf), np.nextafter(values, -np.inf)]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 3e38, 1e-30, -1e-45], dtype)
    rng = np.random.default_rng(0)
    rand = (rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000)).astype(dtype)
    return np.concatenate([values, *nearby, special, rand])


def _same_halves(got_bits: np.ndarray, want: np.ndarray) -> None:
    got = got_bits.view(np.float16)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    bad = got_bits[keep] != want[keep].view(np.uint16)
    assert not bad.any(), list(zip(got[keep][bad][:5], want[keep][bad][:5]))


@pytest.mark.parametrize("name", ["__truncsfhf2", "__gnu_f2h_ieee"])
def test_float_to_half_rounds_as_numpy(name):
    values = _boundaries(np.float32)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    _same_halves(_call(name, values, np.uint16), want)


def test_double_to_half_rounds_once_as_numpy():
    values = _boundaries(np.float64)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)   # (numpy rounds a double to half directly, once)
    _same_halves(_call("__truncdfhf2", values, np.uint16), want)


@pytest.mark.parametrize("name", ["__extendhfsf2", "__gnu_h2f_ieee"])
def test_every_half_widens_exactly(name):
    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(np.float16).astype(np.float32)
    got = _call(name, bits, np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    assert np.array_equal(got[keep].view(np.uint32), want[keep].view(np.uint32))


@pytest.mark.parametrize("n", [1, 2, 31, 64])
@pytest.mark.parametrize("fn", ["sin", "cos", "erf"])
def test_float16_chains_whose_code_calls_a_libcall_load_and_compute(n, fn):
    """Scalar code for a float16 function computed through double, rounded to half: LLVM merges
    the two roundings into one call of __truncdfhf2 (which the process lacked: the kernel
    failed to load)."""
    import math
    data = np.linspace(-3, 3, n).astype(np.float16)
    x = lt.asarray(data)
    reference = {"sin": np.sin, "cos": np.cos, "erf": np.vectorize(math.erf, otypes=[np.float32])}[fn]
    inner = reference(data.astype(np.float32)).astype(np.float16)
    got = lt.tanh(getattr(lt, fn)(x)).numpy()
    want = np.tanh(inner.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
    with np.errstate(invalid="ignore"):   # (x % 0 is nan, in both)
        remainder = (data % inner + np.float16(4)).astype(np.float32)
    np.testing.assert_allclose((x % getattr(lt, fn)(x) + 4.0).numpy().astype(np.float32), remainder,
                               rtol=4e-3, atol=4e-3)
