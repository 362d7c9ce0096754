"""Vectorizable transcendental functions for the CPU backend, as LLVM IR text.

LLVM lowers `llvm.exp.f32` and friends to scalar libm calls, and the loop vectorizer refuses a
loop that contains a call.  The functions here are written out as straight-line IR instead:
`internal`, `alwaysinline`, no calls, no loops, no branches (special cases are `select`s), so
that once inlined into a kernel its loop vectorizes (to zmm code on an AVX-512 host).

The intrinsics used (fma, fabs, copysign, fshl) lower to instructions on an FMA-capable x86
host (fshl, a funnel shift: one with AVX-512 VBMI2, two shifts and an or without).
The text never `declare`s them: the LLVM >= 19 IR parser declares intrinsics implicitly, and an
explicit declaration would clash with one the kernel module may already have.

Max error, in ulp of the result, against numpy computing in float64 (for float) or long double:
  float  exp 1.06, log 0.90, tanh 1.58, erf 0.81 (every float input checked);
         sin, cos 0.5012 over the whole range (every float from 2^50 up checked; below, the
         reduction in double is exact and the polynomial 2^-33.7);
         pow 0.50 (computed in double; 3 million pairs, special values exactly as C99).
  double exp 0.92, log 0.84 (32 million samples each).
  double sin, cos, tanh use `llvm.{sin,cos,tanh}.f64`, which LLVM lowers to calls of the C
         library's sin/cos/tanh (resolved by the JIT from the process): no vectorization.
         glibc 2.36: 0.52 ulp on random arguments, but cos is 7.95 ulp off at the double
         nearest a multiple of pi/2 (6381956970095103 * 2^797); numpy returns the same value.
         double erf and pow are not here: the renderer calls the C library's.
Special values follow numpy: exp(-inf) = 0, exp(inf) = inf, overflow -> inf, underflow ->
gradual (a subnormal result is rounded once) then 0; log(+-0) = -inf, log(x < 0) = nan,
log(inf) = inf, subnormal x exact; sin/cos(+-inf) = nan; tanh(+-inf) = erf(+-inf) = +-1; sin,
tanh and erf keep -0.0; nan in -> nan out everywhere.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Callable

MATH_OPS: frozenset[str] = frozenset({"exp", "log", "sin", "cos", "tanh", "erf", "pow"})
# (op, type) pairs implemented by a call of the C library: a loop using them does not vectorize
CALLS_LIBRARY: frozenset[tuple[str, str]] = frozenset({("sin", "double"), ("cos", "double"), ("tanh", "double")})

_SUFFIX = {"float": "f32", "double": "f64", "i32": "i32", "i64": "i64"}
_INT = {"float": "i32", "double": "i64"}
_ATTRS = "alwaysinline nounwind willreturn memory(none)"


def function_name(op: str, llvm_type: str) -> str:
    """IR name of `op` on `llvm_type`: ("exp", "float") -> "lt_exp_f32", "double" -> "_f64"."""
    if op not in MATH_OPS:
        raise ValueError(f"unknown math op {op!r}")
    if llvm_type not in _INT:
        raise ValueError(f"math ops take float or double, not {llvm_type!r}")
    if (op, llvm_type) not in FUNCTIONS:
        raise ValueError(f"no {op} on {llvm_type} here (the renderer calls the C library's)")
    return f"lt_{op}_{_SUFFIX[llvm_type]}"


def _hex(*literals: str) -> list[float]:
    """C99 hex float literals (Python has no syntax for them); exact."""
    return [float.fromhex(v) for v in literals]


# --------------------------------------------------------------------------- IR builder


@dataclass(frozen=True)
class _V:
    """An IR operand (SSA name or literal) and its type."""
    ty: str
    ref: str


class _Builder:
    """Collects the straight-line body of one function; each helper returns the new value."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def _emit(self, ty: str, text: str) -> _V:
        name = f"%v{len(self.lines)}"
        self.lines.append(f"  {name} = {text}")
        return _V(ty, name)

    @staticmethod
    def c(value: float, ty: str) -> _V:
        """A constant; floats are written as the hex of their double, rounded to float first
        for `float` (LLVM requires the value to be exact in the type)."""
        if ty == "float":
            value = struct.unpack("<f", struct.pack("<f", value))[0]
        if ty in ("float", "double"):
            return _V(ty, "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0])
        return _V(ty, str(int(value)))

    def op(self, opcode: str, a: _V, b: _V) -> _V:
        return self._emit(a.ty, f"{opcode} {a.ty} {a.ref}, {b.ref}")

    def call(self, intrinsic: str, *args: _V) -> _V:
        ty = args[0].ty
        arglist = ", ".join(f"{a.ty} {a.ref}" for a in args)
        return self._emit(ty, f"call {ty} @llvm.{intrinsic}.{_SUFFIX[ty]}({arglist})")

    def fma(self, a: _V, b: _V, c: _V) -> _V:
        return self.call("fma", a, b, c)

    def cmp(self, opcode: str, pred: str, a: _V, b: _V) -> _V:
        return self._emit("i1", f"{opcode} {pred} {a.ty} {a.ref}, {b.ref}")

    def select(self, cond: _V, a: _V, b: _V) -> _V:
        return self._emit(a.ty, f"select i1 {cond.ref}, {a.ty} {a.ref}, {b.ty} {b.ref}")

    def cast(self, opcode: str, a: _V, ty: str) -> _V:
        return self._emit(ty, f"{opcode} {a.ty} {a.ref} to {ty}")

    def poly(self, x: _V, coeffs: list[float]) -> _V:
        """coeffs[0] + x*(coeffs[1] + x*(...)), Horner's scheme with fma."""
        acc = self.c(coeffs[-1], x.ty)
        for k in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(k, x.ty))
        return acc


def _bits(value: float, ty: str) -> int:
    fmt = "<f" if ty == "float" else "<d"
    return int.from_bytes(struct.pack(fmt, value), "little")


# --------------------------------------------------------------------------- exp

# q(r) = (exp(r) - 1)/r on |r| <= ln2/2, minimax for the relative error of exp(r) = 1 + r*q(r)
# (Remez exchange in mpmath, coefficients rounded to the type): 2^-28.9 (float), 2^-58 (double).
_EXP_Q = {
    "float": _hex("0x1p0", "0x1.fffffcp-2", "0x1.55541ap-3", "0x1.555824p-5", "0x1.1267b4p-7",
                  "0x1.6ae702p-10"),
    "double": _hex("0x1p0", "0x1.000000000000bp-1", "0x1.55555555554b3p-3",
                   "0x1.555555555018bp-5", "0x1.111111112f845p-7", "0x1.6c16c1855cb79p-10",
                   "0x1.a01a0111c9d7dp-13", "0x1.a0199756fcd27p-16", "0x1.71df48cadbca9p-19",
                   "0x1.28af9bf3911f9p-22", "0x1.ad597b87dfa15p-26"),
}
# lo: below it exp is 0 (beyond total underflow); hi: clamp just beyond overflow, so the
# scaling itself produces inf.
# ln2 = ln2_hi + ln2_lo with trailing zeros in ln2_hi (n*ln2_hi is exact; fdlibm's split).
# shift = 1.5*2^mantissa_bits: adding it rounds to an integer that lands in the low bits.
_EXP_K = {
    "float": dict(lo=-104.0, hi=89.0, ln2_hi=float.fromhex("0x1.62e4p-1"), ln2_lo=1.4286068203e-06,
                  shift=float.fromhex("0x1.8p23"), mant=23, bias=127),
    "double": dict(lo=-746.0, hi=710.0, ln2_hi=6.93147180369123816490e-01,
                   ln2_lo=1.90821492927058770002e-10, shift=float.fromhex("0x1.8p52"),
                   mant=52, bias=1023),
}
_LOG2E = 1.4426950408889634


def _exp(b: _Builder, x: _V) -> _V:
    """exp(x) = 2^n * exp(r): n = rint(x/ln2), r = x - n*ln2 by Cody-Waite, |r| <= ln2/2.

    NaN flows through the arithmetic; +inf is clamped into range like any large x.  2^n is
    applied as two factors 2^(n>>1) * 2^(n - (n>>1)): both are normal, so a subnormal result is
    rounded only once (by the second multiply) and overflow gives inf.  Below `lo` (-inf too)
    the result is 0: such a lane computes exp(0) and is replaced, since computing its way down
    to 0 goes through subnormal products, which x86 cores finish in microcode (a causal
    softmax, half its scores -inf, ran at half the speed of an unmasked one).
    """
    ty, k, c = x.ty, _EXP_K[x.ty], b.c
    ity = _INT[ty]
    x = b.select(b.cmp("fcmp", "ogt", x, c(k["hi"], ty)), c(k["hi"], ty), x)
    under = b.cmp("fcmp", "olt", x, c(k["lo"], ty))
    x = b.select(under, c(0.0, ty), x)
    z = b.fma(x, c(_LOG2E, ty), c(k["shift"], ty))
    n = b.op("fsub", z, c(k["shift"], ty))
    r = b.fma(n, c(-k["ln2_hi"], ty), x)
    r = b.fma(n, c(-k["ln2_lo"], ty), r)
    p = b.fma(b.poly(r, _EXP_Q[ty]), r, c(1.0, ty))
    ni = b.op("sub", b.cast("bitcast", z, ity), c(_bits(k["shift"], ty), ity))
    n1 = b.op("ashr", ni, c(1, ity))
    for part in (n1, b.op("sub", ni, n1)):
        scale = b.op("shl", b.op("add", part, c(k["bias"], ity)), c(k["mant"], ity))
        p = b.op("fmul", p, b.cast("bitcast", scale, ty))
    return b.select(under, c(0.0, ty), p)


# --------------------------------------------------------------------------- log

# float: log1p(f) = f + f^2*Q(f) on f in [sqrt(1/2) - 1, sqrt(2) - 1], Q minimax for the
# relative error (Remez, mpmath): 2^-27.8.  A polynomial instead of fdlibm's f/(2+f) avoids
# the division, which costs more than the four extra fmas.
_LOG_Q = _hex("-0x1.fffff8p-2", "0x1.55555p-2", "-0x1.000432p-2", "0x1.99a49p-3",
              "-0x1.542592p-3", "0x1.22639p-3", "-0x1.0f3898p-3", "0x1.08a938p-3",
              "-0x1.39229ap-4")
# double: fdlibm e_log.c, log(1+f) = f - f^2/2 + s*(f^2/2 + R(s^2)), s = f/(2+f),
# R minimax with |error| < 2^-58.45.
_LOG_LG = [6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
           2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
           1.479819860511658591e-01]
_LOG_K = {
    "float": dict(ln2_hi=6.9313812256e-01, ln2_lo=9.0580006145e-06, sub_scale=2.0**25, sub_k=25,
                  sqrt_half=0x3F3504F3, one=0x3F800000, mant=23, min_normal=2.0**-126),
    "double": dict(ln2_hi=6.93147180369123816490e-01, ln2_lo=1.90821492927058770002e-10,
                   sub_scale=2.0**54, sub_k=54, sqrt_half=0x3FE6A09E667F3BCD,
                   one=0x3FF0000000000000, mant=52, min_normal=2.0**-1022),
}


def _log(b: _Builder, x: _V) -> _V:
    """log(x) = k*ln2 + log(m), x = 2^k * m with m in [sqrt(1/2), sqrt(2)) (fdlibm/musl)."""
    ty, k, c = x.ty, _LOG_K[x.ty], b.c
    ity = _INT[ty]
    # Subnormals are scaled into the normal range (x <= 0 is fixed up at the end).
    sub = b.cmp("fcmp", "olt", x, c(k["min_normal"], ty))
    xs = b.select(sub, b.op("fmul", x, c(k["sub_scale"], ty)), x)
    kadj = b.select(sub, c(-k["sub_k"], ity), c(0, ity))
    # Adding 1.0 - sqrt(1/2) to the bits makes the exponent field step at sqrt(2) (musl).
    ix = b.op("add", b.cast("bitcast", xs, ity), c(k["one"] - k["sqrt_half"], ity))
    e = b.op("sub", b.op("lshr", ix, c(k["mant"], ity)), c(k["one"] >> k["mant"], ity))
    mbits = b.op("add", b.op("and", ix, c((1 << k["mant"]) - 1, ity)), c(k["sqrt_half"], ity))
    f = b.op("fsub", b.cast("bitcast", mbits, ty), c(1.0, ty))
    dk = b.cast("sitofp", b.op("add", e, kadj), ty)
    if ty == "float":
        # (f^2*Q + k*ln2_lo) + f + k*ln2_hi: small terms first, k*ln2_hi exact.
        y = b.fma(b.op("fmul", f, f), b.poly(f, _LOG_Q), b.op("fmul", dk, c(k["ln2_lo"], ty)))
        y = b.op("fadd", y, f)
    else:
        s = b.op("fdiv", f, b.op("fadd", f, c(2.0, ty)))
        z = b.op("fmul", s, s)
        w = b.op("fmul", z, z)
        t1 = b.op("fmul", w, b.poly(w, _LOG_LG[1::2]))
        t2 = b.op("fmul", z, b.poly(w, _LOG_LG[0::2]))
        hfsq = b.op("fmul", b.op("fmul", f, f), c(0.5, ty))
        # s*(hfsq + R) + k*ln2_lo - hfsq + f + k*ln2_hi, in this order (musl).
        y = b.op("fmul", s, b.op("fadd", hfsq, b.op("fadd", t2, t1)))
        y = b.fma(dk, c(k["ln2_lo"], ty), y)
        y = b.op("fadd", b.op("fsub", y, hfsq), f)
    y = b.fma(dk, c(k["ln2_hi"], ty), y)
    y = b.select(b.cmp("fcmp", "oeq", x, c(float("inf"), ty)), x, y)
    y = b.select(b.cmp("fcmp", "oeq", x, c(0.0, ty)), c(float("-inf"), ty), y)
    return b.select(b.cmp("fcmp", "ult", x, c(0.0, ty)), c(float("nan"), ty), y)  # x < 0, nan


# --------------------------------------------------------------------------- tanh (float)

# tanh(a) = a + a^3*G(a^2) for a < ln(3)/2, G minimax for the relative error of tanh (Remez,
# mpmath): 2^-29.9.
_TANH_G = _hex("-0x1.55554ap-2", "0x1.110d3p-3", "-0x1.b92a2p-5", "0x1.594b98p-6",
               "-0x1.9b880ap-8")
_TANH_SPLIT = 0.5493061443340549  # ln(3)/2, where tanh = 1/2: 1 - 2/(e^2a + 1) loses < 1 bit


def _tanh(b: _Builder, x: _V) -> _V:
    """tanh(|x|) by an odd polynomial below ln(3)/2 and 1 - 2/(exp(2|x|) + 1) above, then the
    sign of x is copied on (keeps -0.0).  exp overflows to inf for large |x|, giving exactly 1;
    nan takes the exp branch and stays nan."""
    c = b.c
    a = b.call("fabs", x)
    z = b.op("fmul", a, a)
    small = b.fma(b.op("fmul", a, z), b.poly(z, _TANH_G), a)
    e = _exp(b, b.op("fadd", a, a))
    ratio = b.op("fdiv", c(2.0, x.ty), b.op("fadd", e, c(1.0, x.ty)))
    big = b.op("fsub", c(1.0, x.ty), ratio)
    t = b.select(b.cmp("fcmp", "olt", a, c(_TANH_SPLIT, x.ty)), small, big)
    return b.call("copysign", t, x)


# --------------------------------------------------------------------------- sin, cos (float)

# sin(r) = r + r^3*S(r^2) on |r| <= pi/2 + 0.15, S minimax for the relative error (Remez,
# mpmath), evaluated in double: 2^-33.7.
_SIN_S = _hex("-0x1.55555531ca733p-3", "0x1.11110700bab64p-7", "-0x1.a0163fb7b7516p-13",
              "0x1.713fbd30efcf3p-19", "-0x1.966bd1f6c7dbap-26")
_PIO2 = _hex("0x1.921fb54442d18p0", "0x1.1a62633145c07p-54", "-0x1.f1976b7ed8fbcp-110")
_INV_PI = float.fromhex("0x1.45f306dc9c883p-2")
_CODY_WAITE_LIMIT = 2.0**50  # below, the quotient is an exact integer and the reduction exact

# 1/pi to 256 bits, as four 64-bit words: word i holds the bits of weight 2^-(64i+1) ..
# 2^-(64i+64).  The digits are those of 2/pi (fdlibm's ipio2 table: a2f983 6e4e44 1529fc ...)
# halved; tests/test_cpu_mathlib.py checks them against mpmath.
_INV_PI_BITS = int("a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561", 16) >> 1
_INV_PI_WORDS = [(_INV_PI_BITS >> (64 * (3 - i))) & (2**64 - 1) for i in range(4)]


def _signed(word: int) -> int:
    """An unsigned 64-bit word as the i64 literal LLVM reads."""
    return word - 2**64 if word >= 2**63 else word


def _cody_waite(b: _Builder, a: _V, cosine: bool) -> tuple[_V, _V]:
    """(r, h) for a = |x| (double) < 2^50: a = n*pi + r (sin) or (n + 1/2)*pi + r (cos) with
    |r| <= pi/2, and an i64 h whose lowest bit is that of n.

    n = rint(a/pi) is exact below 2^50 (rounded by adding 1.5*2^52, so it lands in z's low
    bits), and so is a - q*pi2_hi for q = 2n (+1): r has a relative error ~2^-52 even next to
    multiples of pi/2, where it is smallest (a float's last bit is above 2^-52 there).
    """
    c = b.c
    shift = c(float.fromhex("0x1.8p52"), "double")
    if cosine:
        z = b.op("fadd", b.fma(a, c(_INV_PI, "double"), c(-0.5, "double")), shift)
    else:
        z = b.fma(a, c(_INV_PI, "double"), shift)
    n = b.op("fsub", z, shift)
    q = b.fma(n, c(2.0, "double"), c(1.0 if cosine else 0.0, "double"))  # multiple of pi/2
    r = a
    for part in _PIO2:
        r = b.fma(q, c(-part, "double"), r)
    return r, b.cast("bitcast", z, "i64")


def _payne_hanek(b: _Builder, ax: _V, cosine: bool) -> tuple[_V, _V]:
    """(r, h) as _cody_waite's, for any finite float ax = |x| >= 2^24, in integer arithmetic.

    ax = m * 2^e with m the 24-bit integer significand.  a/pi mod 2 = m * 2^e * (1/pi) mod 2
    needs only the bits of 1/pi from weight 2^-e down (the higher ones give multiples of 2): a
    96-bit window W of them, cut out of the four constant words by two funnel shifts, gives
    F = m*W*2^-95 mod 2, kept as the 64-bit fixed-point number T = F*2^63 (one integer bit).
    The bits of 1/pi below the window and the product's low 32 bits dropped make T low by less
    than 2^-62.99 half-periods; the float nearest a multiple of pi/2 (16367173 * 2^72) is
    2^-30.9 half-periods from it, so r keeps a relative error below 2^-32.  A branch-free form
    of ARM's optimized-routines sinf reduce_large, with shifts in place of its table (no
    memory: vectorizes to plain integer code).
    """
    c, i64 = b.c, "i64"
    bits = b.cast("zext", b.op("and", b.cast("bitcast", ax, "i32"), c(0x7FFFFFFF, "i32")), i64)
    m = b.op("or", b.op("and", bits, c(0x7FFFFF, i64)), c(0x800000, i64))
    # e = exponent - 150; the window's first bit (weight 2^-e) is bit o = e - 1 of the words
    o = b.op("sub", b.op("lshr", bits, c(23, i64)), c(151, i64))
    s = b.op("and", o, c(63, i64))
    second = b.cmp("icmp", "sgt", o, c(63, i64))   # o < 128 for every float
    w = [b.select(second, c(_signed(_INV_PI_WORDS[i + 1]), i64), c(_signed(_INV_PI_WORDS[i]), i64))
         for i in range(3)]
    hi = b.call("fshl", w[0], w[1], s)                                          # 64 bits
    lo = b.op("lshr", b.call("fshl", w[1], w[2], s), c(32, i64))                # 32 more
    t = b.op("add", b.op("mul", m, hi), b.op("lshr", b.op("mul", m, lo), c(32, i64)))
    # u = (F + 1/2) * 2^63 mod 2^64: its top bit is that of n = rint(F) (for cos, F - 1/2 is
    # reduced, and its u is t), the rest is F - n + 1/2.
    u = t if cosine else b.op("add", t, c(2**62, i64))
    frac = b.op("sub", b.op("and", u, c(2**63 - 1, i64)), c(2**62, i64))     # (F - n) * 2^63
    r = b.op("fmul", b.cast("sitofp", frac, "double"), c(math.pi * 2.0**-63, "double"))
    return r, b.op("lshr", u, c(63, i64))


def _sincos(b: _Builder, x: _V, cosine: bool) -> _V:
    """sin or cos of a float, computed in double with one polynomial.

    sin: a = |x| = n*pi + r, sin(x) = sign(x) * (-1)^n * sin(r).
    cos: a = (2n + 1)*pi/2 + r, cos(x) = (-1)^(n+1) * sin(r) (SLEEF).
    Each element takes Cody-Waite's reduction below 2^50 and Payne-Hanek's at and above (one
    compare, then selects: the loop vectorizer turns any branch into selects, so a vector
    computes both; measured, one thread, 1M floats: 0.58 ms against 0.39 with Cody-Waite alone,
    in [-10, 10] as in [-1e30, 1e30]; benchmarks/bench_sincos.py).  inf and nan take
    Cody-Waite's, which gives nan for both.
    """
    c = b.c
    ax = b.call("fabs", x)
    a = b.cast("fpext", ax, "double")
    r_small, h_small = _cody_waite(b, a, cosine)
    r_big, h_big = _payne_hanek(b, ax, cosine)
    big = b.op("and", b.cmp("fcmp", "oge", ax, c(_CODY_WAITE_LIMIT, "float")),
               b.cmp("fcmp", "one", ax, c(math.inf, "float")))
    r = b.select(big, r_big, r_small)
    h = b.select(big, h_big, h_small)
    r2 = b.op("fmul", r, r)
    v = b.fma(b.op("fmul", r, r2), b.poly(r2, _SIN_S), r)
    # The sign flips for odd n (sin) or even n (cos), and sin takes the sign of x.
    if cosine:
        h = b.op("add", h, c(1, "i64"))
    sign = b.op("shl", h, c(63, "i64"))
    if not cosine:
        xsign = b.op("and", b.cast("bitcast", x, "i32"), c(-0x80000000, "i32"))
        sign = b.op("xor", sign, b.op("shl", b.cast("zext", xsign, "i64"), c(32, "i64")))
    v = b.cast("bitcast", b.op("xor", b.cast("bitcast", v, "i64"), sign), "double")
    return b.cast("fptrunc", v, "float")


# --------------------------------------------------------------------------- erf

# float erf in float arithmetic (8 lanes to a 256-bit vector, not 4 in double), by |x|:
#   < 0.75:     x + x*R(x^2), R(z) = erf(sqrt z)/sqrt z - 1 (|R| <= 0.13: its error weighs little)
#   0.75 .. 2:  m + P(a - 1.125), m = erf(1.125) rounded to float (P(0) holds the rest)
#   >= 2:       n + Q(a - 3), n = erf(3) rounded to float; a is clamped to 4, where erf rounds
#               to 1 (inf stays finite; nan passes the clamp's ordered compare). (It was
#               1 - exp(-a^2) * W(1/(1 + a/2)): an exp and a division in every lane, since every
#               lane computes every branch; F.gelu of 1M floats 1.0 ms, torch's 0.47.)
# R, P, Q: least squares on Chebyshev nodes against mpmath (Q: against the C library's erf in
# double), coefficients rounded to float one by one and the rest refitted: errors 1.6e-9 (R),
# 3.6e-10 (P), 0.52 ulp of the result (Q, evaluated in float).
_ERF_R = _hex("0x1.06eba8p-3", "-0x1.81273cp-2", "0x1.ce2b52p-4", "-0x1.b7b264p-6", "0x1.4f774ap-8",
              "-0x1.637476p-11")
_ERF_MID, _ERF_M = 1.125, float.fromhex("0x1.c6dad2p-1")
_ERF_P = _hex("0x1.04d72p-26", "0x1.45e99cp-2", "-0x1.6ea6cep-2", "0x1.4cb3bep-3", "0x1.ca4e52p-6",
              "-0x1.f65880p-5", "0x1.fd4190p-7", "0x1.3a2c7cp-7", "-0x1.8bce58p-8", "-0x1.288d6ap-12",
              "0x1.224094p-10", "-0x1.20e4c0p-12")
_ERF_BIG, _ERF_N = 3.0, float.fromhex("0x1.fffd1ap-1")
_ERF_Q = _hex("0x1.7b1af2p-26", "0x1.2407eap-13", "-0x1.b5fe50p-12", "0x1.9dbe26p-11", "-0x1.11f5d4p-10",
              "0x1.0a60a6p-10", "-0x1.815a26p-11", "0x1.9ae9cep-12", "-0x1.27f47ep-13", "0x1.8f2ec2p-17",
              "0x1.7310a0p-16", "-0x1.3da86cp-17")


def _erf_float(b: _Builder, x: _V) -> _V:
    """erf(+-inf) = +-1, erf(-0.0) = -0.0 (x + x*R keeps the sign), nan flows through the
    last branch. Max error 0.81 ulp (every float in [-4, 4] checked against scipy's erf in
    double; beyond, the result is +-1, correctly rounded)."""
    c, ty = b.c, x.ty
    a = b.call("fabs", x)
    small = b.fma(x, b.poly(b.op("fmul", x, x), _ERF_R), x)
    middle = b.op("fadd", c(_ERF_M, ty), b.poly(b.op("fsub", a, c(_ERF_MID, ty)), _ERF_P))
    a = b.select(b.cmp("fcmp", "ogt", a, c(4.0, ty)), c(4.0, ty), a)
    tail = b.op("fadd", c(_ERF_N, ty), b.poly(b.op("fsub", a, c(_ERF_BIG, ty)), _ERF_Q))
    big = b.select(b.cmp("fcmp", "olt", a, c(2.0, ty)), middle, tail)
    return b.select(b.cmp("fcmp", "olt", a, c(0.75, ty)), small, b.call("copysign", big, x))


# --------------------------------------------------------------------------- pow

def _pow_float(b: _Builder, x: _V, y: _V) -> _V:
    """float x**y = exp(y * log|x|) in double (relative error ~1e-14 for every float result:
    correctly rounded but for ties within that), then the sign and C99's special cases:
    pow(x, +-0) = 1 and pow(1, y) = 1 (nan included), pow(-1, +-inf) = 1; x < 0 (finite) with
    a finite non-integer y is nan; a negative x (-0.0 and -inf too) with an odd integer y
    negates the result. Zero, inf and |x| <> 1 against +-inf come out of exp/log themselves
    (log 0 = -inf, exp(-inf) = 0, exp(inf) = inf); overflow and underflow round once."""
    c, d = b.c, "double"
    dx, dy = b.cast("fpext", x, d), b.cast("fpext", y, d)
    ax = b.call("fabs", dx)
    r = _exp(b, b.op("fmul", dy, _log(b, ax)))
    whole = b.cmp("fcmp", "oeq", b.call("trunc", dy), dy)
    half = b.op("fmul", dy, c(0.5, d))
    odd = b.op("and", whole, b.cmp("fcmp", "one", b.call("trunc", half), half))
    negative = b.cmp("icmp", "slt", b.cast("bitcast", dx, "i64"), c(0, "i64"))
    r = b.select(b.op("and", negative, odd), b.op("fsub", c(-0.0, d), r), r)
    infinite_y = b.cmp("fcmp", "oeq", b.call("fabs", dy), c(math.inf, d))
    finite_y = b.cmp("fcmp", "one", b.call("fabs", dy), c(math.inf, d))   # (nan: neither)
    invalid = b.op("and", b.op("and", b.cmp("fcmp", "olt", dx, c(0.0, d)),
                               b.cmp("fcmp", "one", ax, c(math.inf, d))),
                   b.op("and", finite_y, b.op("xor", whole, c(1, "i1"))))
    r = b.select(invalid, c(math.nan, d), r)
    one = b.op("or", b.op("or", b.cmp("fcmp", "oeq", dy, c(0.0, d)), b.cmp("fcmp", "oeq", dx, c(1.0, d))),
               b.op("and", b.cmp("fcmp", "oeq", ax, c(1.0, d)), infinite_y))
    r = b.select(one, c(1.0, d), r)
    return b.cast("fptrunc", r, "float")


# --------------------------------------------------------------------------- module text

def _libm(intrinsic: str) -> Callable[[_Builder, _V], _V]:
    return lambda b, x: b.call(intrinsic, x)


_GENERATORS: dict[tuple[str, str], Callable[..., _V]] = {   # (builder, *operands) -> result
    ("exp", "float"): _exp,
    ("exp", "double"): _exp,
    ("log", "float"): _log,
    ("log", "double"): _log,
    ("tanh", "float"): _tanh,
    ("erf", "float"): _erf_float,   # (double erf and pow: the C library's, called by the renderer)
    ("pow", "float"): _pow_float,
    ("sin", "float"): lambda b, x: _sincos(b, x, cosine=False),
    ("cos", "float"): lambda b, x: _sincos(b, x, cosine=True),
    # No branch-free double versions: the intrinsics become calls of libm's sin, cos, tanh.
    ("sin", "double"): _libm("sin"),
    ("cos", "double"): _libm("cos"),
    ("tanh", "double"): _libm("tanh"),
}


# every (op, type) defined here
FUNCTIONS: frozenset[tuple[str, str]] = frozenset(_GENERATORS)


ARITY = {"pow": 2}   # operands of each op (1 where not listed)


def _render_one(op: str, llvm_type: str) -> str:
    b = _Builder()
    names = ["%x", "%y"][:ARITY.get(op, 1)]
    result = _GENERATORS[op, llvm_type](b, *(_V(llvm_type, n) for n in names))
    params = ", ".join(f"{llvm_type} {n}" for n in names)
    return "\n".join([
        f"define internal {llvm_type} @{function_name(op, llvm_type)}({params}) {_ATTRS} {{",
        *b.lines,
        f"  ret {llvm_type} {result.ref}",
        "}",
        "",
    ])


def render_math(needed: set[tuple[str, str]]) -> str:
    """LLVM IR defining each (op, llvm_type) in `needed` ("float" or "double"), sorted, so the
    output is deterministic.  Only `define internal` functions with inline attributes: no
    declarations, globals or attribute groups, so the text can be appended to any module."""
    for op, llvm_type in needed:
        function_name(op, llvm_type)  # validates
    return "\n".join(_render_one(op, llvm_type) for op, llvm_type in sorted(needed))
