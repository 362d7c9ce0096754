"""Functions LLVM's code generator may call from a kernel that a process need not provide.

LLVM turns some operations into calls to runtime-library functions ("libcalls") as it generates
machine code: half-precision conversions where the CPU has no instruction for them (no F16C),
and a double -> half rounding where it merges `fptrunc double -> float -> half` into one
(scalar code for float16 sin, cos, erf, pow: `lt.tanh(lt.sin(x))` on 31 float16 values failed
to load). compiler-rt and libgcc >= 12 define them, but a Python process need not have either
loaded, and the JIT would link a missing one to address 0. So they are defined here, in integer
arithmetic (no conversion instruction or libcall of their own), compiled once per process, and
linked into every kernel that calls them.

float -> half rounds to nearest even, the method of F. Giesen's float_to_half_fast3_rtne (a
magic add aligns a subnormal's bits; normals add a rounding bias); double -> half first rounds
to float to odd, which is exact to round again (float keeps more than twice half's precision).
half -> float re-biases the exponent and renormalizes subnormals with one float subtraction.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from .compiler import LLVM_LOCK, new_target_machine

_IR = r"""
define internal i16 @lt_f32_to_f16_bits(float %f) {
  %u = bitcast float %f to i32
  %sign = and i32 %u, 2147483648
  %a = xor i32 %u, %sign
  ; Inf or nan: 65536.0 and beyond (and nan) have no finite half; 65520 rounds to inf below
  %special = icmp uge i32 %a, 1199570944               ; (127 + 16) << 23 = 65536.0
  %isnan = icmp ugt i32 %a, 2139095040                 ; above +inf's bits
  %infnan = select i1 %isnan, i32 32256, i32 31744     ; 0x7e00 (quiet nan), 0x7c00 (inf)
  ; subnormal or zero half: add 0.5 (2^-1: the magic (127-15+23-10+1) << 23), keep the low bits
  %tiny = icmp ult i32 %a, 947912704                   ; 113 << 23 = 2^-14, the least normal half
  %af = bitcast i32 %a to float
  %shifted = fadd float %af, 5.000000e-01
  %sbits = bitcast float %shifted to i32
  %sub = sub i32 %sbits, 1056964608                    ; the magic's bits
  ; normal half: re-bias the exponent, round to nearest even, take the top bits
  %odd = lshr i32 %a, 13
  %mant_odd = and i32 %odd, 1
  %biased = add i32 %a, -939520001                     ; ((15 - 127) << 23) + 0xfff
  %rounded = add i32 %biased, %mant_odd
  %normal = lshr i32 %rounded, 13
  %finite = select i1 %tiny, i32 %sub, i32 %normal
  %bits = select i1 %special, i32 %infnan, i32 %finite
  %top = lshr i32 %sign, 16
  %all = or i32 %bits, %top
  %h = trunc i32 %all to i16
  ret i16 %h
}

define internal float @lt_f16_bits_to_f32(i16 %h) {
  %w = zext i16 %h to i32
  %magnitude = and i32 %w, 32767
  %o = shl i32 %magnitude, 13
  %exp = and i32 %o, 260046848                         ; 0x7c00 << 13
  %rebiased = add i32 %o, 939524096                    ; (127 - 15) << 23
  %isinf = icmp eq i32 %exp, 260046848
  %infnan = add i32 %rebiased, 939524096               ; (128 - 16) << 23 more: exponent 255
  %iszero = icmp eq i32 %exp, 0
  %denorm_bits = add i32 %rebiased, 8388608            ; 1 << 23
  %denorm_f = bitcast i32 %denorm_bits to float
  %renormal = fsub float %denorm_f, 0x3F10000000000000 ; 2^-14 (113 << 23)
  %renormal_bits = bitcast float %renormal to i32
  %mid = select i1 %isinf, i32 %infnan, i32 %rebiased
  %body = select i1 %iszero, i32 %renormal_bits, i32 %mid
  %sign = and i32 %w, 32768
  %signbit = shl i32 %sign, 16
  %bits = or i32 %body, %signbit
  %f = bitcast i32 %bits to float
  ret float %f
}

define internal float @lt_f64_to_f32_odd(double %x) {
  ; round to float toward zero, then set the last bit where that was inexact (round to odd)
  %f = fptrunc double %x to float
  %back = fpext float %f to double
  %inexact = fcmp une double %back, %x
  %ab = call double @llvm.fabs.f64(double %back)
  %ax = call double @llvm.fabs.f64(double %x)
  %away = fcmp ogt double %ab, %ax
  %af = call float @llvm.fabs.f32(float %f)
  %finite = fcmp olt float %af, 0x7FF0000000000000
  %bits = bitcast float %f to i32
  %less = sub i32 %bits, 1
  %toward_zero = select i1 %away, i32 %less, i32 %bits
  %odd = or i32 %toward_zero, 1
  %sticky_cond = and i1 %inexact, %finite
  %sticky = select i1 %sticky_cond, i32 %odd, i32 %bits
  %r = bitcast i32 %sticky to float
  ret float %r
}

define half @__truncsfhf2(float %f) {
  %b = call i16 @lt_f32_to_f16_bits(float %f)
  %h = bitcast i16 %b to half
  ret half %h
}

define half @__truncdfhf2(double %x) {
  %f = call float @lt_f64_to_f32_odd(double %x)
  %b = call i16 @lt_f32_to_f16_bits(float %f)
  %h = bitcast i16 %b to half
  ret half %h
}

define float @__extendhfsf2(half %h) {
  %b = bitcast half %h to i16
  %f = call float @lt_f16_bits_to_f32(i16 %b)
  ret float %f
}

define i16 @__gnu_f2h_ieee(float %f) {
  %b = call i16 @lt_f32_to_f16_bits(float %f)
  ret i16 %b
}

define float @__gnu_h2f_ieee(i16 %b) {
  %f = call float @lt_f16_bits_to_f32(i16 %b)
  ret float %f
}

declare double @llvm.fabs.f64(double)
declare float @llvm.fabs.f32(float)
"""

NAMES = ("__truncsfhf2", "__truncdfhf2", "__extendhfsf2", "__gnu_f2h_ieee", "__gnu_h2f_ieee")


@functools.lru_cache(maxsize=None)
def _engine() -> "llvm.ExecutionEngine":
    """The support functions compiled and loaded (kept for the life of the process: every kernel
    that calls them holds their addresses)."""
    with LLVM_LOCK:
        module = llvm.parse_assembly(_IR)
        module.verify()
        # (an engine owns and frees the target machine it is given: one of its own)
        engine = llvm.create_mcjit_compiler(module, new_target_machine())
        engine.finalize_object()
        return engine


def address(name: str) -> int:
    """Where the support function `name` (one of NAMES) is in this process."""
    found = _engine().get_function_address(name)
    assert found, name
    return found
