"""The C-style renderer's per-op code, shared by OpenCL and CUDA: for each `Alu` op, a C
expression with numpy's semantics (integer wrap-around, division and modulo by zero, nan-propagating
max/min, saturating float->int casts), and the helper functions (one per C type) some of it calls.
`cstyle.py` walks a kernel and its expressions and calls this table for each op.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from ..ir.dtypes import DType
from ..ir.loop import Alu, Const
from ..ir.ops import Op

if TYPE_CHECKING:
    from .cstyle import Dialect, _Renderer


# ---- helper functions (generated per C type) --------------------------------------------------

def _helper_source(name: str, d: Dialect) -> str:
    """Source of a shared helper named `lt_<what>_<dtype>`."""
    what, dtype_name = name[3:].rsplit("_", 1)
    t = d.types[dtype_name]
    f = d.function
    if what == "floordiv_int":
        return (f"{f} {t} {name}({t} a, {t} b) {{\n  if (b == 0) return 0;\n"
                f"  if (b == -1) return ({t})(0 - ({_wide(dtype_name, d)})a);\n"
                f"  {t} q = a / b, r = a % b;\n  return (r != 0 && ((r ^ b) < 0)) ? ({t})(q - 1) : q;\n}}")
    if what == "mod_int":
        return (f"{f} {t} {name}({t} a, {t} b) {{\n  if (b == 0 || b == -1) return 0;\n"
                f"  {t} r = a % b;\n  return (r != 0 && ((r ^ b) < 0)) ? ({t})(r + b) : r;\n}}")
    if what == "floordiv_float":
        fmod, floor, copysign, fabs = (d.math_name(n, t) for n in ("fmod", "floor", "copysign", "fabs"))
        # numpy's npy_floor_divide; a div that is whole already (beyond 2^mantissa), inf or nan
        # is the result, and never reaches floor: _call says why
        return (f"{f} {t} {name}({t} a, {t} b) {{\n  if (b == 0) return a / b;\n"
                f"  {t} mod = {fmod}(a, b);\n  {t} div = (a - mod) / b;\n"
                f"  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;\n"
                f"  if (div == 0) return {copysign}(({t})0, a / b);\n"
                f"  if (!({fabs}(div) < {_WHOLE[dtype_name]})) return div;\n"
                f"  {t} fl = {floor}(div);\n  return (div - fl > ({t})0.5) ? fl + 1 : fl;\n}}")
    if what == "mod_float":
        fmod, copysign = (d.math_name(n, t) for n in ("fmod", "copysign"))
        return (f"{f} {t} {name}({t} a, {t} b) {{\n  {t} m = {fmod}(a, b);\n"
                f"  if (m == 0) return {copysign}(({t})0, b);\n"
                f"  return (m != m || (b < 0) == (m < 0)) ? m : m + b;\n}}")
    if what == "ipow":
        return (f"{f} {t} {name}({t} a, {t} b) {{\n"
                f"  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
                f"  {t} acc = 1;\n  while (b != 0) {{ if (b & 1) acc = ({t})(acc * a); a = ({t})(a * a); b >>= 1; }}\n"
                f"  return acc;\n}}")
    if what == "toi64":   # float -> int64 as numpy on x86 (saturating, nan -> 0)
        i64 = d.types["int64"]
        return (f"{f} {i64} {name}({t} x) {{\n  if (x != x) return 0;\n"
                f"  if (x >= ({t})9223372036854775808.0) return 9223372036854775807{d.int64_suffix};\n"
                f"  if (x < ({t})-9223372036854775808.0) return -9223372036854775807{d.int64_suffix} - 1;\n"
                f"  return ({i64})x;\n}}")
    if what == "tou64":   # float -> uint64 for [2**63, 2**64) and beyond, through int64 below
        u64 = d.types["uint64"]
        return (f"{f} {u64} {name}({t} x) {{\n"
                f"  if (x >= ({t})18446744073709551616.0) return 18446744073709551615U{d.int64_suffix};\n"
                f"  if (x >= ({t})9223372036854775808.0) return ({u64})x;\n"
                f"  return ({u64})lt_toi64_{dtype_name}(x);\n}}")
    raise KeyError(name)


def _wide(dtype_name: str, d: Dialect) -> str:
    """The unsigned type integer arithmetic of `dtype_name` is done in (wraps, never overflows)."""
    return d.types["uint64"] if dtype_name in ("int64", "uint64") else d.types["uint32"]


# ---- per-op code table ------------------------------------------------------------------------
# Each entry: (renderer, expression, rendered sources) -> a C expression.

Render = Callable[["_Renderer", Alu, list[str]], str]
_EXACT_IN_HALF = {Op.NEG, Op.ABS, Op.MAX, Op.MIN, Op.WHERE, Op.FLOOR, Op.CEIL, Op.TRUNC, Op.ROUND,
                  Op.COPYSIGN}


def _ctype(r: _Renderer, dtype: DType) -> str:
    return r.d.types[dtype.name]


def _arith(symbol: str, bool_form: str) -> Render:
    def render(r: _Renderer, e: Alu, s: list[str]) -> str:
        if e.dtype.is_bool:
            return bool_form.format(*s)
        if e.dtype.is_float:
            return f"({s[0]} {symbol} {s[1]})"
        wide = _wide(e.dtype.name, r.d)  # wrap around like numpy, never C's undefined overflow
        return f"(({_ctype(r, e.dtype)})(({wide}){s[0]} {symbol} ({wide}){s[1]}))"
    return render


def _bitwise(symbol: str, bool_form: str) -> Render:
    def render(r: _Renderer, e: Alu, s: list[str]) -> str:
        if e.dtype.is_bool:
            return bool_form.format(*s)
        return f"(({_ctype(r, e.dtype)})({s[0]} {symbol} {s[1]}))"
    return render


def _div(r: _Renderer, e: Alu, s: list[str]) -> str:
    if e.dtype.is_float:
        return f"({s[0]} / {s[1]})"
    if e.dtype.is_bool:
        return f"({s[0]} && {s[1]})"
    return _unless_by_zero(_ctype(r, e.dtype), s[0], "/", s[1])


def _unless_by_zero(t: str, a: str, symbol: str, b: str) -> str:
    """C's `a symbol b` in type `t`, and 0 where b is 0 (numpy's integer result; C's is undefined)."""
    return f"({b} == 0 ? ({t})0 : ({t})({a} {symbol} {b}))"


def _floor_division(kind: str, symbol: str) -> Render:
    """numpy's floor division (`kind` "floordiv", C's `/`) or remainder ("mod", `%`): floats and
    signed integers through a helper; unsigned and bool values in C directly (by 0 gives 0)."""
    def render(r: _Renderer, e: Alu, s: list[str]) -> str:
        t = _ctype(r, e.dtype)
        if e.dtype.is_float:
            return f"{r.helper(f'lt_{kind}_float_{_reg_name(e.dtype)}')}({s[0]}, {s[1]})"
        if e.dtype.is_unsigned or e.dtype.is_bool:
            return _unless_by_zero(t, s[0], symbol, s[1])
        return f"{r.helper(f'lt_{kind}_int_{e.dtype.name}')}({s[0]}, {s[1]})"
    return render


def _reg_name(dtype: DType) -> str:
    """The dtype whose C type holds `dtype` in registers (float16 computes in float32)."""
    return "float32" if dtype.name == "float16" else dtype.name


def _pow(r: _Renderer, e: Alu, s: list[str]) -> str:
    if e.dtype.is_float:
        return f"{r.fn('pow', e.dtype)}({s[0]}, {s[1]})"
    if e.dtype.is_bool:
        return f"({s[0]} || !{s[1]})"
    return f"{r.helper(f'lt_ipow_{e.dtype.name}')}({s[0]}, {s[1]})"


def _extremum(greater: str, bool_form: str, zero_pick: str) -> Render:
    """numpy's maximum/minimum: nan wins; between zeros, +0 is the larger (llvm.maximum)."""
    def render(r: _Renderer, e: Alu, s: list[str]) -> str:
        a, b = s
        if e.dtype.is_bool:
            return bool_form.format(a, b)
        if not e.dtype.is_float:
            return f"({a} {greater} {b} ? {a} : {b})"
        sign = r.fn("signbit", e.dtype)
        # a nan test only for operands that can be nan (a constant's is known: no warning)
        nan = " || ".join(f"{x} != {x}" for x, src in zip(s, e.srcs)
                          if not isinstance(src, Const) or math.isnan(src.value))
        pick = (f"({a} {greater} {b}) ? {a} : ({b} {greater} {a}) ? {b} : "
                f"({zero_pick.format(sign=sign, a=a)} ? {a} : {b})")
        return f"(({nan}) ? ({a} + {b}) : {pick})" if nan else f"({pick})"
    return render


def _compare(symbol: str) -> Render:
    return lambda r, e, s: f"({s[0]} {symbol} {s[1]})"


def _neg(r: _Renderer, e: Alu, s: list[str]) -> str:
    if e.dtype.is_float:
        return f"(-{s[0]})"
    if e.dtype.is_bool:
        return s[0]
    return f"(({_ctype(r, e.dtype)})(0 - ({_wide(e.dtype.name, r.d)}){s[0]}))"


def _not(r: _Renderer, e: Alu, s: list[str]) -> str:
    return f"(!{s[0]})" if e.dtype.is_bool else f"(({_ctype(r, e.dtype)})(~{s[0]}))"


def _abs(r: _Renderer, e: Alu, s: list[str]) -> str:
    if e.dtype.is_float:
        return f"{r.fn('fabs', e.dtype)}({s[0]})"
    if e.dtype.kind in "bu":
        return s[0]
    wide = _wide(e.dtype.name, r.d)
    return f"(({_ctype(r, e.dtype)})({s[0]} < 0 ? 0 - ({wide}){s[0]} : ({wide}){s[0]}))"


def _function(name: str) -> Render:
    return lambda r, e, s: _call(r, name, e, s)


def _rounding(name: str) -> Render:
    return lambda r, e, s: _call(r, name, e, s) if e.dtype.is_float else s[0]


# Floats at or beyond these magnitudes are whole numbers (in the register type's C spelling).
_WHOLE = {"float32": "0x1p23f", "float64": "0x1p52"}
_ROUNDING = frozenset({"floor", "ceil", "trunc", "rint"})


def _call(r: _Renderer, name: str, e: Alu, s: list[str]) -> str:
    """`name(s...)`, with its argument guarded where the dialect lists it in `guarded`.

    PoCL 3.1's floor, ceil, trunc and rint start by converting x to an int, and its exp,
    expm1, sinh and tanh round x/ln2 to an int the same way: LLVM's fptosi, which has no value
    for nan (nor, in rint, beyond the int range). When the compiler can see the argument (a
    literal nan, or `t + nan`, which it folds to one) it folds the call to poison and drops the
    store: `floor(t + nan)` and `t // nan` gave whatever the buffer held. The guard sends such
    arguments around the call, which gives the same result for them: nan for nan, and x itself
    for rounding any x beyond 2^mantissa (a whole number already), inf or nan. An argument that
    is a literal is decided here, with no self-comparison for the compiler to warn about.
    """
    call = f"{r.fn(name, e.dtype)}({', '.join(s)})"
    if name not in r.d.guarded:
        return call
    x, src = s[0], e.srcs[0]
    if name in _ROUNDING:
        if isinstance(src, Const):
            return x if not abs(src.value) < 2.0 ** (23 if _reg_name(src.dtype) == "float32" else 52) else call
        return f"({r.fn('fabs', e.dtype)}({x}) < {_WHOLE[_reg_name(e.dtype)]} ? {call} : {x})"
    if isinstance(src, Const):
        return x if math.isnan(src.value) else call
    return f"({x} != {x} ? {x} : {call})"


def _cast(r: _Renderer, e: Alu, s: list[str]) -> str:
    src, dst, x = e.srcs[0].dtype, e.dtype, s[0]
    t = _ctype(r, dst)
    if dst.is_bool:  # numpy: nonzero (and nan) is True
        return f"({x} != 0)"
    if src.is_bool or src.is_integer and (dst.is_integer or dst.is_float):
        return f"(({t}){x})"    # C's conversions: sign/zero extension, wrap, rounding to float
    if src.is_float and dst.is_float:
        if dst.name == "float16" and src.name == "float64":
            return f"{r.helper(r.d.double_to_half)}({x})"   # rounded once (not through float)
        return f"(({t}){x})"
    # float -> int as numpy does on x86: through int64 (saturating, nan -> 0), so -5.0 -> uint8
    # wraps to 251; uint64 converts [2**63, 2**64) directly
    reg = _reg_name(src)
    if dst.name == "uint64" and src.itemsize > 2:
        r.helper(f"lt_toi64_{reg}")
        return f"{r.helper(f'lt_tou64_{reg}')}({x})"
    return f"(({t}){r.helper(f'lt_toi64_{reg}')}({x}))"


def _signbit(r: _Renderer, e: Alu, s: list[str]) -> str:
    src = e.srcs[0].dtype
    if src.is_float:
        return f"({r.fn('signbit', src)}({s[0]}) != 0)"
    return f"({s[0]} < 0)" if src.is_int else "false"


def _shift(r: _Renderer, e: Alu, s: list[str]) -> str:
    """numpy's shifts: by the bit width or more (or a negative count), << gives 0 and >> gives
    0 or -1 (the sign)."""
    (a, b), t = s, _ctype(r, e.dtype)
    bits = 1 if e.dtype.is_bool else 8 * e.dtype.itemsize
    wide = _wide(e.dtype.name if not e.dtype.is_bool else "uint8", r.d)
    too_far = f"(({wide}){b} >= {bits}u)"
    if e.dtype.is_bool:
        return f"({too_far} ? false : {a})"
    if e.op is Op.SHL:
        return f"({too_far} ? ({t})0 : ({t})(({wide}){a} << {b}))"
    fill = f"({a} < 0 ? ({t})-1 : ({t})0)" if e.dtype.is_int else f"({t})0"
    return f"({too_far} ? {fill} : ({t})({a} >> {b}))"


_LIBM = {
    Op.SQRT: "sqrt", Op.EXP: "exp", Op.LOG: "log", Op.SIN: "sin", Op.COS: "cos", Op.TANH: "tanh",
    Op.TAN: "tan", Op.ASIN: "asin", Op.ACOS: "acos", Op.ATAN: "atan", Op.SINH: "sinh",
    Op.COSH: "cosh", Op.ASINH: "asinh", Op.ACOSH: "acosh", Op.ATANH: "atanh", Op.EXPM1: "expm1",
    Op.LOG1P: "log1p", Op.LOG2: "log2", Op.LOG10: "log10", Op.ATAN2: "atan2", Op.HYPOT: "hypot",
    Op.COPYSIGN: "copysign", Op.ERF: "erf",
}

_OPS: dict[Op, Render] = {
    Op.ADD: _arith("+", "({} || {})"),
    Op.SUB: _arith("-", "({} != {})"),
    Op.MUL: _arith("*", "({} && {})"),
    Op.DIV: _div,
    Op.AND: _bitwise("&", "({} && {})"),
    Op.OR: _bitwise("|", "({} || {})"),
    Op.XOR: _bitwise("^", "({} != {})"),
    Op.FLOORDIV: _floor_division("floordiv", "/"),
    Op.MOD: _floor_division("mod", "%"),
    Op.POW: _pow,
    Op.MAX: _extremum(">", "({} || {})", "!{sign}({a})"),
    Op.MIN: _extremum("<", "({} && {})", "{sign}({a})"),
    Op.CMPLT: _compare("<"),
    Op.CMPLE: _compare("<="),
    Op.CMPEQ: _compare("=="),
    Op.CMPNE: _compare("!="),
    Op.NEG: _neg,
    Op.NOT: _not,
    Op.ABS: _abs,
    **{op: _function(name) for op, name in _LIBM.items()},
    Op.CAST: _cast,
    Op.BITCAST: lambda r, e, s: f"{r.d.bitcast(_ctype(r, e.srcs[0].dtype), _ctype(r, e.dtype))}({s[0]})",
    Op.WHERE: lambda r, e, s: f"({s[0]} ? {s[1]} : {s[2]})",
    Op.FLOOR: _rounding("floor"),
    Op.CEIL: _rounding("ceil"),
    Op.TRUNC: _rounding("trunc"),
    Op.ROUND: _rounding("rint"),   # rounds half to even
    Op.SIGNBIT: _signbit,
    Op.SHL: _shift,
    Op.SHR: _shift,
    Op.IDIV: lambda r, e, s: f"({s[0]} / {s[1]})",
    Op.IMOD: lambda r, e, s: f"({s[0]} % {s[1]})",
}
