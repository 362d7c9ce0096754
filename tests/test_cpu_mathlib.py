"""Accuracy, special values and vectorization of backends/cpu/mathlib.py.

Each function is compiled (llvmlite, O3, host CPU) into a tiny loop kernel
`void k(ptr noalias out, ptr noalias in, i64 n)` and run through ctypes on numpy arrays.
Errors are in ulp of the result type at the reference value, the reference being numpy in
float64 (for float) or in long double (for double). The vectorization tests also compile the
kernels for other x86 CPUs, and ask backends/cpu/compiler.py for the width LLVM prefers.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")


def _load_mathlib():
    # Loaded from its file so that this test depends on nothing else in the package.
    path = Path(__file__).resolve().parents[1] / "backends" / "cpu" / "mathlib.py"
    spec = importlib.util.spec_from_file_location("_lt_cpu_mathlib_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mathlib = _load_mathlib()

llvm.initialize_native_target()
llvm.initialize_native_asmprinter()
TM = llvm.Target.from_default_triple().create_target_machine(
    cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3,
    codemodel="jitdefault")

NP_TYPE = {"float": np.float32, "double": np.float64}


def _erf(x: np.ndarray) -> np.ndarray:   # numpy has none: the C library's, in double
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


UNARY_OPS = sorted(mathlib.MATH_OPS - {"pow"})
REFERENCE = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "erf": _erf}
F32_BOUND = {"exp": 1.5, "log": 1.5, "tanh": 2.0, "sin": 1.0, "cos": 1.0, "erf": 1.0}  # max ulp asserted

# float32 arguments closest to a multiple of pi/2 (found by an exhaustive search of every float
# from 2^13 up, `python tests/test_math_range.py`): x mod pi/2 is as small as 2^-29.9 quarter
# periods there, so the reduction must keep ~60 bits of x*2/pi's fraction.  The first is the
# known worst case, 16367173 * 2^72.
SINCOS_HARD_F32 = [float.fromhex(h) for h in (
    "0x1.f37c8ap+95", "0x1.47d0fep+34", "0x1.32ede2p+85", "0x1.628d4cp+40", "0x1.130930p+76",
    "0x1.b08c4ap+111", "0x1.4665d2p+25", "0x1.abb4b0p+89", "0x1.0f79a0p+57", "0x1.9a48dep+15",
    "0x1.7f4134p+101", "0x1.7b9b40p+126", "0x1.c82258p+64")]

KERNEL = """
define void @k(ptr noalias %out, ptr noalias %in, ptr noalias %in2, i64 %n) {{
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %src = getelementptr inbounds {T}, ptr %in, i64 %i
  %x = load {T}, ptr %src
  %src2 = getelementptr inbounds {T}, ptr %in2, i64 %i
  %x2 = load {T}, ptr %src2
  %y = call {T} @{F}({ARGS})
  %dst = getelementptr inbounds {T}, ptr %out, i64 %i
  store {T} %y, ptr %dst
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""


def kernel_module(op: str, ty: str, tm) -> "llvm.ModuleRef":
    """KERNEL calling `op` on `ty`, parsed and optimized at O3 for the target machine `tm`."""
    args = ", ".join(f"{ty} {v}" for v in ["%x", "%x2"][:mathlib.ARITY.get(op, 1)])
    text = KERNEL.format(T=ty, F=mathlib.function_name(op, ty), ARGS=args)
    text += mathlib.render_math({(op, ty)})
    mod = llvm.parse_assembly(text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def kernel_asm(asm: str) -> str:
    """The machine code of the kernel `k` in a module's assembly."""
    start = asm.index("\nk:")
    return asm[start:asm.index(".Lfunc_end", start)]


class Compiled:
    def __init__(self, op: str, ty: str):
        mod = kernel_module(op, ty, TM)
        self.asm = TM.emit_assembly(mod)
        self.engine = llvm.create_mcjit_compiler(mod, TM)  # owns mod
        self.engine.finalize_object()
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
        self._fn = proto(self.engine.get_function_address("k"))
        self.dtype = NP_TYPE[ty]

    def __call__(self, x, y=None) -> np.ndarray:
        """op(x) (op(x, y) for pow)."""
        x = np.ascontiguousarray(x, dtype=self.dtype)
        y = x if y is None else np.ascontiguousarray(np.broadcast_to(y, x.shape), dtype=self.dtype)
        out = np.empty_like(x)
        self._fn(out.ctypes.data, x.ctypes.data, y.ctypes.data, x.size)
        return out

    def kernel_asm(self) -> str:
        return kernel_asm(self.asm)


@functools.lru_cache(maxsize=None)
def compiled(op: str, ty: str) -> Compiled:
    return Compiled(op, ty)


def ulp_error(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in units of y.dtype's spacing at ref (ref in a wider type).

    The spacing is that of the binade of |ref|, floored at the subnormal spacing, so a reference
    that rounds to a subnormal or to 0 is measured in subnormal ulps.  nan where both are nan
    and an exact match of a reference that overflows the type count as 0; other mismatches of
    nan/inf as inf.
    """
    info = np.finfo(y.dtype)
    with np.errstate(all="ignore"):
        _, e = np.frexp(np.abs(ref))
        spacing = np.ldexp(np.ones_like(ref), np.maximum(e - 1, info.minexp) - info.nmant)
        err = np.abs(y.astype(ref.dtype) - ref) / spacing
        rounded = ref.astype(y.dtype)
    err = np.where(np.isinf(rounded), np.where(y == rounded, 0.0, np.inf), err)
    err = np.where(np.isnan(ref) & np.isnan(y), 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def bits_around(center: float, count: int, dtype=np.float32) -> np.ndarray:
    """The `count` floats below `center` (by bit pattern) and `count` from it upwards."""
    utype = np.uint32 if dtype == np.float32 else np.uint64
    c = np.array(center, dtype=dtype).view(utype)
    return (np.arange(-count, count, dtype=np.int64).astype(utype) + c).view(dtype)  # wraps


def random_floats(n: int, seed: int, dtype=np.float32) -> np.ndarray:
    """Uniformly random bit patterns: every binade, sign, subnormals, inf and nan."""
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        return rng.integers(0, 2**32, size=n, dtype=np.uint32).view(np.float32)
    return rng.integers(0, 2**64, size=n, dtype=np.uint64).view(np.float64)


def f32_points(op: str) -> np.ndarray:
    """Random bit patterns plus dense grids where each function is delicate."""
    grids = [random_floats(1_000_000, seed=len(op))]
    tiny = np.float32(1e-30)
    if op == "exp":
        grids += [bits_around(0.0, 50_000), bits_around(-0.0, 50_000),  # tiny |x|
                  np.linspace(-1, 1, 100_001, dtype=np.float32),
                  bits_around(88.72283935546875, 100_000),   # last finite result, overflow
                  bits_around(-87.33654, 100_000),           # results turn subnormal
                  bits_around(-103.27893, 100_000),          # smallest subnormal result, then 0
                  np.linspace(-104, 89, 200_001, dtype=np.float32)]
    elif op == "log":
        grids += [bits_around(1.0, 200_000),                 # log(x) ~ 0: cancellation
                  bits_around(np.sqrt(0.5), 50_000), bits_around(np.sqrt(2.0), 50_000),
                  np.arange(1, 2**23, 37, dtype=np.uint32).view(np.float32),  # subnormals
                  bits_around(np.finfo(np.float32).max, 50_000)[:50_000]]
    elif op == "erf":   # tiny |x| (erf ~ 2x/sqrt(pi)), the switches at 0.75 and 2, rounding to 1
        grids += [bits_around(tiny, 50_000), bits_around(0.0, 50_000), bits_around(0.75, 200_000),
                  bits_around(2.0, 100_000), bits_around(-0.75, 50_000), bits_around(4.0, 50_000),
                  bits_around(-1.0, 50_000), np.linspace(-6, 6, 400_001, dtype=np.float32),
                  bits_around(3.9192059, 50_000)]
    elif op == "tanh":
        grids += [bits_around(tiny, 50_000), bits_around(0.5493061443340549, 100_000),
                  np.linspace(-10, 10, 200_001, dtype=np.float32), bits_around(9.0, 50_000)]
    else:  # sin, cos: near 0 and next to multiples of pi/2 (worst cancellation in reduction)
        k = np.arange(-70_000, 70_000, dtype=np.float64)
        kbig = np.random.default_rng(7).integers(2**17, 2**48, size=50_000).astype(np.float64)
        near = np.concatenate([k, kbig, -kbig]) * (np.pi / 2)
        m = near.astype(np.float32)
        hard = np.float32(SINCOS_HARD_F32)
        grids += [bits_around(tiny, 50_000), np.linspace(-10, 10, 100_001, dtype=np.float32),
                  m, np.nextafter(m, np.float32(np.inf)), np.nextafter(m, np.float32(-np.inf)),
                  hard, -hard, *(bits_around(h, 500) for h in hard),
                  # where the reductions for common and huge |x| meet; the largest floats
                  bits_around(2.0**50, 50_000), bits_around(-(2.0**50), 50_000),
                  bits_around(np.finfo(np.float32).max, 50_000)[:50_000],
                  np.float32([1e16, -1e16, 1e30])]
    return np.concatenate(grids)


# ---------------------------------------------------------------------------- API


def test_api():
    assert mathlib.MATH_OPS == frozenset({"exp", "log", "sin", "cos", "tanh", "erf", "pow"})
    assert mathlib.function_name("exp", "float") == "lt_exp_f32"
    assert mathlib.function_name("tanh", "double") == "lt_tanh_f64"
    assert mathlib.function_name("erf", "float") == "lt_erf_f32"
    with pytest.raises(ValueError):
        mathlib.function_name("erfc", "float")
    for op in ("erf", "pow"):
        with pytest.raises(ValueError):
            mathlib.function_name(op, "double")
    with pytest.raises(ValueError):
        mathlib.render_math({("exp", "half")})
    assert mathlib.render_math(set()) == ""


def test_render_is_deterministic_and_appendable():
    everything = sorted(mathlib.FUNCTIONS)
    assert {op for op, _ in everything} == mathlib.MATH_OPS
    text = mathlib.render_math(set(everything))
    assert text == mathlib.render_math(set(reversed(everything)))
    for op, ty in everything:
        assert text.count(f"define internal {ty} @{mathlib.function_name(op, ty)}(") == 1
    assert "declare" not in text and "attributes #" not in text
    # Appended to a module that declares the intrinsics itself: no redefinition errors.
    host = ("declare float @llvm.fma.f32(float, float, float)\n"
            "declare double @llvm.fabs.f64(double)\n")
    llvm.parse_assembly(host + text).verify()
    llvm.parse_assembly(text + host).verify()


# ---------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize("op", UNARY_OPS)
def test_float_accuracy(op):
    x = f32_points(op)
    y = compiled(op, "float")(x)
    with np.errstate(all="ignore"):
        ref = REFERENCE[op](x.astype(np.float64))
    err = ulp_error(y, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= F32_BOUND[op], (
        f"{op}: {err[worst]:.3f} ulp at x={x[worst]!r}: got {y[worst]!r}, want {ref[worst]!r}")


@pytest.mark.parametrize("op", ["exp", "log"])
def test_double_accuracy(op):
    x = random_floats(300_000, seed=11, dtype=np.float64)
    if op == "exp":
        x = np.concatenate([x, np.linspace(-746, 710, 200_001),
                            bits_around(0.0, 20_000, np.float64),
                            bits_around(709.782712893384, 20_000, np.float64),  # overflow
                            bits_around(-708.3964185322641, 20_000, np.float64),  # subnormals
                            bits_around(-744.4400719213812, 20_000, np.float64)])  # then 0
    else:
        x = np.concatenate([x, bits_around(1.0, 100_000, np.float64),
                            np.random.default_rng(3).integers(1, 2**52, 50_000).view(np.float64)])
    y = compiled(op, "double")(x)
    with np.errstate(all="ignore"):
        ref = REFERENCE[op](x.astype(np.longdouble))
    err = ulp_error(y, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= 1.5, f"{op}: {err[worst]:.3f} ulp at x={x[worst]!r}: got {y[worst]!r}"


@pytest.mark.parametrize("op", ["sin", "cos", "tanh"])
def test_double_libm(op):
    x = np.concatenate([np.linspace(-50, 50, 10_001), [1e-300, 1e300, -1e22]])
    y = compiled(op, "double")(x)
    assert ulp_error(y, REFERENCE[op](x.astype(np.longdouble))).max() <= 2.0  # glibc: <= 2 ulp


def test_inverse_pi_bits():
    """The 256 bits of 1/pi that sin/cos reduce huge arguments with."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workprec(400):
        want = int(mpmath.floor(mpmath.mpf(2) ** 256 / mpmath.pi))
    assert mathlib._INV_PI_BITS == want


# ---------------------------------------------------------------------------- special values

INF, NAN = float("inf"), float("nan")
MAX32, TINY32 = float(np.finfo(np.float32).max), float(np.finfo(np.float32).smallest_subnormal)
MAX64, TINY64 = float(np.finfo(np.float64).max), float(np.finfo(np.float64).smallest_subnormal)

SPECIAL = {  # (op, type): [(x, expected)], expected compared exactly, including the sign of 0
    ("exp", "float"): [(-INF, 0.0), (INF, INF), (NAN, NAN), (0.0, 1.0), (-0.0, 1.0),
                       (88.72284698486328, INF), (100.0, INF), (MAX32, INF), (-104.0, 0.0),
                       (-1000.0, 0.0), (-MAX32, 0.0), (-103.98, 0.0), (-103.0, TINY32)],
    ("exp", "double"): [(-INF, 0.0), (INF, INF), (NAN, NAN), (0.0, 1.0), (-0.0, 1.0),
                        (709.79, INF), (MAX64, INF), (-746.0, 0.0), (-MAX64, 0.0),
                        (-745.0, 5e-324)],
    ("log", "float"): [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-TINY32, NAN), (-INF, NAN),
                       (INF, INF), (NAN, NAN), (1.0, 0.0)],
    ("log", "double"): [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-TINY64, NAN), (-INF, NAN),
                        (INF, INF), (NAN, NAN), (1.0, 0.0)],
    ("sin", "float"): [(INF, NAN), (-INF, NAN), (NAN, NAN), (0.0, 0.0), (-0.0, -0.0),
                       (TINY32, TINY32), (-TINY32, -TINY32), (1e-20, 1e-20)],
    ("cos", "float"): [(INF, NAN), (-INF, NAN), (NAN, NAN), (0.0, 1.0), (-0.0, 1.0),
                       (TINY32, 1.0), (1e-20, 1.0)],
    ("tanh", "float"): [(INF, 1.0), (-INF, -1.0), (NAN, NAN), (0.0, 0.0), (-0.0, -0.0),
                        (TINY32, TINY32), (-TINY32, -TINY32), (20.0, 1.0), (-20.0, -1.0),
                        (MAX32, 1.0), (-MAX32, -1.0)],
    ("erf", "float"): [(INF, 1.0), (-INF, -1.0), (NAN, NAN), (0.0, 0.0), (-0.0, -0.0),
                       (TINY32, TINY32), (-TINY32, -TINY32), (4.0, 1.0), (-10.0, -1.0), (MAX32, 1.0),
                       (-MAX32, -1.0)],
    ("sin", "double"): [(INF, NAN), (NAN, NAN), (-0.0, -0.0)],
    ("cos", "double"): [(INF, NAN), (NAN, NAN), (-0.0, 1.0)],
    ("tanh", "double"): [(-INF, -1.0), (NAN, NAN), (-0.0, -0.0)],
}


@pytest.mark.parametrize("op,ty", sorted(SPECIAL))
def test_special_values(op, ty):
    x, want = (np.array(v, dtype=NP_TYPE[ty]) for v in zip(*SPECIAL[op, ty]))
    got = compiled(op, ty)(x)
    np.testing.assert_array_equal(got, want)
    signed = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))
    # ... and so does numpy (in higher precision, rounded), which checks the table itself.
    with np.errstate(all="ignore"):
        ref = REFERENCE[op](x.astype(np.longdouble)).astype(x.dtype)
    np.testing.assert_array_equal(ref, want)


def pow_points() -> tuple[np.ndarray, np.ndarray]:
    """(x, y) pairs for float pow: random bit patterns of both; positive and negative x with
    moderate and integer y; results near overflow and through the subnormals; x near 1 with
    huge y (where log x must be exact to many bits)."""
    rng = np.random.default_rng(12)
    n = 500_000
    x = [random_floats(n, 21), rng.uniform(0, 10, n).astype(np.float32), -rng.uniform(0, 10, n).astype(np.float32),
         rng.uniform(1.5, 2.5, n).astype(np.float32), rng.uniform(0.3, 0.7, n).astype(np.float32),
         bits_around(1.0, n // 2)]
    y = [random_floats(n, 22), rng.uniform(-30, 30, n).astype(np.float32),
         rng.integers(-40, 40, n).astype(np.float32), rng.uniform(120, 130, n).astype(np.float32),
         rng.uniform(120, 215, n).astype(np.float32), rng.uniform(-3e7, 3e7, n).astype(np.float32)]
    return np.concatenate(x), np.concatenate(y)


def test_float_pow_accuracy():
    x, y = pow_points()
    got = compiled("pow", "float")(x, y)
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    err = ulp_error(got, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= 1.0, f"pow: {err[worst]:.3f} ulp at x={x[worst]!r}, y={y[worst]!r}: got {got[worst]!r}"


def test_float_pow_special_values():
    """Every pair from a set of special and ordinary values, exactly as C99 (and numpy in
    float64, rounded) says: signed zeros, infinities, nan, odd and even integers, -1 and 1."""
    values = np.float32([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, INF, -INF, NAN,
                         TINY32, -TINY32, MAX32, -MAX32, 2.0**24 + 2, -(2.0**24 + 2), 2.0**25 + 1])
    x, y = (v.ravel() for v in np.meshgrid(values, values))
    got = compiled("pow", "float")(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
    bad = np.nonzero(~same)[0]
    assert not bad.size, [(x[i], y[i], got[i], want[i]) for i in bad[:10]]


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sincos_huge_arguments(op):
    """The issue's cases: 0 was returned for every |x| >= 2^50 (the mean over a period)."""
    x = np.float32([1e16, -1e16, 2.0**50, -(2.0**50), 2.0**50 - 2**26, MAX32, -MAX32, 1e20, -3e38,
                    *SINCOS_HARD_F32])
    y = compiled(op, "float")(x)
    ref = REFERENCE[op](x.astype(np.float64))
    err = ulp_error(y, ref)
    assert err.max() <= F32_BOUND[op], list(zip(x[err > F32_BOUND[op]], y[err > F32_BOUND[op]]))


# ---------------------------------------------------------------------------- vectorization

VECTORIZED = [(op, "float") for op in sorted(mathlib.MATH_OPS)]
VECTORIZED += [("exp", "double"), ("log", "double")]
REGISTER = {16: "xmm", 32: "ymm", 64: "zmm"}   # x86's vector registers by width in bytes
X86 = TM.triple.startswith(("x86_64", "i386", "i686"))
# Intel's server CPUs are tuned in LLVM to prefer 256-bit vectors (their 512-bit units lower the
# clock); AMD's Zen 4 and 5 run 512-bit vectors at full speed.
SIMULATED = {"skylake-avx512": 32, "icelake-server": 32, "sapphirerapids": 32, "znver4": 64,
             "haswell": 32, "x86-64": 16}


def packed_registers(asm: str) -> set[str]:
    """The vector registers that packed floating-point instructions (vmulps, vfmadd231pd,
    vcvtps2pd, vmovups...) use in `asm`; scalar ones (vmulss, vmovsd) use xmm too."""
    return set(re.findall(r"\tv?[a-z0-9]+p[sd]\s[^\n]*?%([xyz]mm)", asm))


def simulated_machine(cpu: str):
    """A target machine for another x86 CPU, with that CPU's own features and tuning."""
    return llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features="", opt=3,
                                                                     codemodel="jitdefault")


@pytest.mark.skipif(not X86, reason="x86 register names")
@pytest.mark.parametrize("op,ty", VECTORIZED)
def test_loop_is_vectorized(op, ty):
    """No calls, and vector code at the width the scheduler uses for this host
    (host_target().simd_bytes, what LLVM's vectorizer prefers here: zmm on this Zen 5)."""
    from lazytensor.backends.cpu.compiler import host_target
    asm = compiled(op, ty).kernel_asm()
    assert "call" not in asm, f"{op} {ty}: the kernel still calls a function"
    register = REGISTER[host_target().simd_bytes]
    assert register in packed_registers(asm), f"{op} {ty}: no packed {register} code in the kernel"


@pytest.mark.skipif(not X86, reason="x86 CPU names")
@pytest.mark.parametrize("cpu", sorted(SIMULATED))
def test_preferred_width_probe(cpu):
    """The probe behind host_target().simd_bytes finds each CPU's preference, whatever its
    feature list says (skylake-avx512 has avx512f and prefers 256 bits)."""
    from lazytensor.backends.cpu.compiler import preferred_vector_bytes
    assert preferred_vector_bytes(simulated_machine(cpu)) == SIMULATED[cpu]


@pytest.mark.skipif(not X86, reason="x86 register names")
@pytest.mark.parametrize("op,ty", VECTORIZED)
def test_loop_is_vectorized_on_an_intel_server(op, ty):
    """The same kernels compiled for skylake-avx512 (the issue's host): ymm code at the width
    the probe finds there."""
    from lazytensor.backends.cpu.compiler import preferred_vector_bytes
    tm = simulated_machine("skylake-avx512")
    asm = kernel_asm(tm.emit_assembly(kernel_module(op, ty, tm)))
    assert "call" not in asm, f"{op} {ty}: the kernel still calls a function"
    assert REGISTER[preferred_vector_bytes(tm)] in packed_registers(asm), f"{op} {ty}: no packed ymm code"


def test_libm_fallback_is_a_call():
    # The double sin is documented to use the C library: make sure the check above could fail.
    assert "call" in compiled("sin", "double").kernel_asm()
