"""The cpu renderer's per-op code: for each `Alu` op, the LLVM IR that computes it with numpy's
semantics (division and modulo by zero, casts, shifts, nan-propagating max/min, half computed in
float), and the helper functions some of it calls. `render.py` walks a kernel and its expressions
and calls this table for each op; `scalar_ops` tells the scheduler which ops keep a loop scalar.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...ir.loop import Alu, Expr
from ...ir.ops import Op
from . import mathlib

if TYPE_CHECKING:
    from .render import _Renderer

LLVM_TYPE = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "i8",
             "uint16": "i16", "uint32": "i32", "uint64": "i64", "float16": "half", "float32": "float",
             "float64": "double"}

_MATH_OPS = {Op.EXP: "exp", Op.LOG: "log", Op.SIN: "sin", Op.COS: "cos", Op.TANH: "tanh", Op.ERF: "erf", Op.POW: "pow"}
_INTRINSIC_SUFFIX = {"half": "f16", "float": "f32", "double": "f64", "i1": "i1", "i8": "i8", "i16": "i16",
                     "i32": "i32", "i64": "i64"}


# ---- per-op code table ------------------------------------------------------------------------
# Each entry: (renderer, expression, rendered sources, float flags) -> SSA value.

Render = Callable[["_Renderer", Alu, list[str], str], str]


def _ty(e: Expr) -> str:
    return LLVM_TYPE[e.dtype.name]


def _src_ty(e: Alu, i: int = 0) -> str:
    return LLVM_TYPE[e.srcs[i].dtype.name]


def _arith(float_op: str, int_op: str, bool_op: str) -> Render:
    def render(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
        t = _ty(e)
        if e.dtype.is_float:
            return r.op(f"{float_op} {flags}{t} {s[0]}, {s[1]}")
        return r.op(f"{bool_op if e.dtype.is_bool else int_op} {t} {s[0]}, {s[1]}")
    return render


def _compare(float_pred: str, int_pred: str) -> Render:
    def render(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
        t = _src_ty(e)
        if e.srcs[0].dtype.is_float:
            return r.op(f"fcmp {float_pred} {t} {s[0]}, {s[1]}")
        if e.srcs[0].dtype.kind in "bu":  # unsigned order (an i1 true is -1 when signed)
            return r.op(f"icmp {int_pred.replace('s', 'u')} {t} {s[0]}, {s[1]}")
        return r.op(f"icmp {int_pred} {t} {s[0]}, {s[1]}")
    return render


def _extremum(float_name: str, int_name: str, bool_op: str) -> Render:
    def render(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
        t = _ty(e)
        if e.dtype.is_bool:
            return r.op(f"{bool_op} i1 {s[0]}, {s[1]}")
        if e.dtype.is_unsigned:
            return r.intrinsic("u" + int_name[1:], t, s)  # smax -> umax
        return r.intrinsic(float_name if e.dtype.is_float else int_name, t, s)
    return render


def _neg(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    t = _ty(e)
    if e.dtype.is_float:
        return r.op(f"fneg {t} {s[0]}")
    if e.dtype.is_bool:
        return s[0]
    return r.op(f"sub {t} 0, {s[0]}")


def _not(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    return r.op(f"xor {_ty(e)} {s[0]}, {'true' if e.dtype.is_bool else -1}")


def _abs(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    if e.dtype.is_float:
        return r.intrinsic("fabs", _ty(e), s)
    if e.dtype.kind in "bu":
        return s[0]
    return r.intrinsic("abs", _ty(e), s, [("i1", "false")])


def _in_float(r: _Renderer, t: str, args: list[str], compute: Callable[[str, list[str]], str]) -> str:
    """`compute(type, args)` as is, but for half in float, rounded once back to half (as numpy)."""
    if t != "half":
        return compute(t, args)
    value = compute("float", [r.op(f"fpext half {v} to float") for v in args])
    return r.op(f"fptrunc float {value} to half")


def _math(op: Op) -> Render:
    """mathlib's vector code for `op` where it has some for the type (half computes in float);
    the C library's function where it has none (double erf, pow)."""
    name = _MATH_OPS[op]

    def render(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
        def compute(t: str, args: list[str]) -> str:
            if (name, t) not in mathlib.FUNCTIONS:
                return _libm_call(r, name, t, args)
            r.math.add((name, t))
            if (name, t) in mathlib.CALLS_LIBRARY:
                r.scalar_calls += 1
            return r.call(mathlib.function_name(name, t), t, [(t, a) for a in args], declare=False)
        return _in_float(r, _ty(e), s, compute)
    return render


def _unsigned_div_parts(r: _Renderer, e: Alu, s: list[str]) -> tuple[str, str, str]:
    """(quotient, remainder, b==0) of unsigned division, safe for b == 0 (numpy gives 0)."""
    t, (a, b) = _ty(e), s
    zero = r.op(f"icmp eq {t} {b}, 0")
    safe = r.op(f"select i1 {zero}, {t} 1, {t} {b}")
    return r.op(f"udiv {t} {a}, {safe}"), r.op(f"urem {t} {a}, {safe}"), zero


def _int_div_parts(r: _Renderer, e: Alu, s: list[str]) -> tuple[str, str, str, str, str]:
    """(quotient, remainder, b==0, b==-1) of C division, safe for b == 0 and INT_MIN / -1."""
    t, (a, b) = _ty(e), s
    zero = r.op(f"icmp eq {t} {b}, 0")
    minus_one = r.op(f"icmp eq {t} {b}, -1")
    special = r.op(f"or i1 {zero}, {minus_one}")
    safe = r.op(f"select i1 {special}, {t} 1, {t} {b}")
    q = r.op(f"sdiv {t} {a}, {safe}")
    rem = r.op(f"srem {t} {a}, {safe}")
    # floor semantics: fix up when the remainder is non-zero and its sign differs from b's
    nonzero = r.op(f"icmp ne {t} {rem}, 0")
    signs = r.op(f"xor {t} {rem}, {b}")
    differ = r.op(f"icmp slt {t} {signs}, 0")
    fix = r.op(f"and i1 {nonzero}, {differ}")
    return q, rem, zero, minus_one, fix


def _float_floordiv(r: _Renderer, e: Alu, s: list[str]) -> str:
    """numpy's npy_floor_divide: (a - fmod(a, b)) / b moved to the divisor's sign and rounded to
    the nearest integer (it is integral up to rounding); a zero keeps the sign of a / b."""
    t, (a, b) = _ty(e), s
    mod = r.op(f"frem {t} {a}, {b}")
    div = r.op(f"fdiv {t} {r.op(f'fsub {t} {a}, {mod}')}, {b}")
    mod_nonzero = r.op(f"fcmp une {t} {mod}, 0.0")
    differ = r.op(f"xor i1 {r.op(f'fcmp olt {t} {b}, 0.0')}, {r.op(f'fcmp olt {t} {mod}, 0.0')}")
    adjust = r.op(f"and i1 {mod_nonzero}, {differ}")
    div = r.op(f"select i1 {adjust}, {t} {r.op(f'fsub {t} {div}, 1.0')}, {t} {div}")
    floor = r.intrinsic("floor", t, [div])
    round_up = r.op(f"fcmp ogt {t} {r.op(f'fsub {t} {div}, {floor}')}, 0x3FE0000000000000")
    floor = r.op(f"select i1 {round_up}, {t} {r.op(f'fadd {t} {floor}, 1.0')}, {t} {floor}")
    quotient = r.op(f"fdiv {t} {a}, {b}")
    signed_zero = r.intrinsic("copysign", t, ["0.0", quotient])
    result = r.op(f"select i1 {r.op(f'fcmp une {t} {div}, 0.0')}, {t} {floor}, {t} {signed_zero}")
    return r.op(f"select i1 {r.op(f'fcmp oeq {t} {b}, 0.0')}, {t} {quotient}, {t} {result}")


def _floordiv(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    if e.dtype.is_float:
        return _float_floordiv(r, e, s)
    t = _ty(e)
    if e.dtype.is_unsigned:
        q, _, zero = _unsigned_div_parts(r, e, s)
        return r.op(f"select i1 {zero}, {t} 0, {t} {q}")
    q, _, zero, minus_one, fix = _int_div_parts(r, e, s)
    q1 = r.op(f"sub {t} {q}, 1")
    floored = r.op(f"select i1 {fix}, {t} {q1}, {t} {q}")
    negated = r.op(f"sub {t} 0, {s[0]}")            # a // -1 wraps at INT_MIN, like numpy
    by_minus_one = r.op(f"select i1 {minus_one}, {t} {negated}, {t} {floored}")
    return r.op(f"select i1 {zero}, {t} 0, {t} {by_minus_one}")  # numpy: x // 0 == 0


def _mod(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    t, (a, b) = _ty(e), s
    if e.dtype.is_float:
        # numpy: fmod, moved into the divisor's sign; an exact zero takes the divisor's sign
        m = r.op(f"frem {t} {a}, {b}")
        nonzero = r.op(f"fcmp une {t} {m}, 0.0")
        m_neg = r.op(f"fcmp olt {t} {m}, 0.0")
        b_neg = r.op(f"fcmp olt {t} {b}, 0.0")
        differ = r.op(f"xor i1 {m_neg}, {b_neg}")
        fix = r.op(f"and i1 {nonzero}, {differ}")
        shifted = r.op(f"fadd {t} {m}, {b}")
        fixed = r.op(f"select i1 {fix}, {t} {shifted}, {t} {m}")
        signed_zero = r.intrinsic("copysign", t, ["0.0", b])
        is_zero = r.op(f"fcmp oeq {t} {m}, 0.0")
        return r.op(f"select i1 {is_zero}, {t} {signed_zero}, {t} {fixed}")
    if e.dtype.is_unsigned:
        _, rem, zero = _unsigned_div_parts(r, e, s)
        return r.op(f"select i1 {zero}, {t} 0, {t} {rem}")
    _, rem, zero, minus_one, fix = _int_div_parts(r, e, s)
    shifted = r.op(f"add {t} {rem}, {b}")
    fixed = r.op(f"select i1 {fix}, {t} {shifted}, {t} {rem}")
    special = r.op(f"or i1 {zero}, {minus_one}")
    return r.op(f"select i1 {special}, {t} 0, {t} {fixed}")


def _pow(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    t = _ty(e)
    if e.dtype.is_float:
        return _math(Op.POW)(r, e, s, flags)
    exponent = s[1]
    if e.dtype.is_unsigned:  # never negative: clear the top bit's meaning for the signed helper
        exponent = r.intrinsic("umin", t, [s[1], str((1 << (8 * e.dtype.itemsize - 1)) - 1)])
    r.helpers.add(f"ipow_{t}")
    r.scalar_calls += 1  # the helper loops
    return r.call(f"lt_ipow_{t}", t, [(t, s[0]), (t, exponent)], declare=False)


def _where(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    t = _ty(e)
    return r.op(f"select i1 {s[0]}, {t} {s[1]}, {t} {s[2]}")


def _index_op(name: str) -> Render:
    return lambda r, e, s, flags: r.op(f"{name} i64 {s[0]}, {s[1]}")


def _cast(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    src, dst = e.srcs[0].dtype, e.dtype
    st, dt = LLVM_TYPE[src.name], LLVM_TYPE[dst.name]
    if st == dt:
        return s[0]  # same bits (e.g. int32 <-> uint32 wraps, like numpy)
    if dst.is_bool:  # numpy: nonzero (and nan) is True
        return r.op(f"fcmp une {st} {s[0]}, 0.0" if src.is_float else f"icmp ne {st} {s[0]}, 0")
    if src.is_bool:
        return r.op(f"uitofp i1 {s[0]} to {dt}" if dst.is_float else f"zext i1 {s[0]} to {dt}")
    if src.itemsize == 8 and dst.itemsize == 2 and src.is_float and dst.is_float:
        return _double_to_half(r, s[0])
    if src.is_float and dst.is_float:
        return r.op(f"{'fpext' if dst.itemsize > src.itemsize else 'fptrunc'} {st} {s[0]} to {dt}")
    if src.is_integer and dst.is_integer:
        if dst.itemsize < src.itemsize:
            return r.op(f"trunc {st} {s[0]} to {dt}")
        return r.op(f"{'zext' if src.is_unsigned else 'sext'} {st} {s[0]} to {dt}")
    if src.is_integer and src.is_unsigned and src.itemsize == 8:
        return _uint64_to_float(r, s[0], dt)
    if src.is_integer:
        return r.op(f"{'uitofp' if src.is_unsigned else 'sitofp'} {st} {s[0]} to {dt}")
    # float -> int as numpy does on x86: through int64, so -5.0 -> uint8 wraps to 251; the
    # saturating conversions are defined (not poison) for nan and out-of-range values
    fs = _INTRINSIC_SUFFIX[st]
    wide = r.call(f"llvm.fptosi.sat.i64.{fs}", "i64", [(st, s[0])])
    if dst.is_unsigned and dst.itemsize == 8 and src.itemsize > 2:  # [2**63, 2**64): unsigned conversion
        big = r.op(f"fcmp oge {st} {s[0]}, 0x43E0000000000000")
        unsigned = r.call(f"llvm.fptoui.sat.i64.{fs}", "i64", [(st, s[0])])
        wide = r.op(f"select i1 {big}, i64 {unsigned}, i64 {wide}")
    return wide if dt == "i64" else r.op(f"trunc i64 {wide} to {dt}")


def _uint64_to_float(r: _Renderer, x: str, dt: str) -> str:
    """uint64 -> float, correctly rounded, by a signed conversion: x >= 2**63 is halved keeping
    its lowest bit (sticky: the rounding stays right), converted and doubled. LLVM 22's own
    uitofp of vectors of i64 sign-extended from i8/i16 to float32 on x86 converts as if they were
    extended to 32 bits only (int8 -5 -> uint64 -> float32 gave 2**32 - 5, not 1.8e19)."""
    big = r.op(f"icmp slt i64 {x}, 0")
    halved = r.op(f"or i64 {r.op(f'lshr i64 {x}, 1')}, {r.op(f'and i64 {x}, 1')}")
    converted = r.op(f"sitofp i64 {r.op(f'select i1 {big}, i64 {halved}, i64 {x}')} to {dt}")
    return r.op(f"select i1 {big}, {dt} {r.op(f'fadd {dt} {converted}, {converted}')}, {dt} {converted}")


def _double_to_half(r: _Renderer, x: str) -> str:
    """double -> half, rounded once. LLVM would call __truncdfhf2, which the process lacks. We go
    through float with round-to-odd (truncate toward zero, then set the last bit if inexact),
    which is exact because float keeps more than twice half's precision."""
    f = r.op(f"fptrunc double {x} to float")                 # rounded to nearest...
    back = r.op(f"fpext float {f} to double")
    inexact = r.op(f"fcmp une double {back}, {x}")
    away = r.op(f"fcmp ogt double {r.intrinsic('fabs', 'double', [back])}, {r.intrinsic('fabs', 'double', [x])}")
    finite = r.op(f"fcmp olt float {r.intrinsic('fabs', 'float', [f])}, 0x7FF0000000000000")
    bits = r.op(f"bitcast float {f} to i32")
    toward_zero = r.op(f"select i1 {away}, i32 {r.op(f'sub i32 {bits}, 1')}, i32 {bits}")  # ...made truncated
    odd = r.op(f"or i32 {toward_zero}, 1")
    sticky = r.op(f"select i1 {r.op(f'and i1 {inexact}, {finite}')}, i32 {odd}, i32 {bits}")
    return r.op(f"fptrunc float {r.op(f'bitcast i32 {sticky} to float')} to half")


def _rounding(intrinsic_name: str) -> Render:
    def render(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
        if not e.dtype.is_float:
            return s[0]  # integers and bool are whole already
        return r.intrinsic(intrinsic_name, _ty(e), s)
    return render


def _libm(name: str) -> Render:
    """A C library function: `name` for double, `name`f for float; half computes in float.
    Scalar calls: a loop that uses one is not vectorized (issue 6 makes these vector code)."""
    return lambda r, e, s, flags: _in_float(r, _ty(e), s, lambda t, args: _libm_call(r, name, t, args))


def _libm_call(r: _Renderer, name: str, t: str, args: list[str]) -> str:
    r.scalar_calls += 1
    return r.call(name + ("f" if t == "float" else ""), t, [(t, v) for v in args])


def _signbit(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    src = e.srcs[0].dtype
    if src.is_float:
        bits = {2: "i16", 4: "i32", 8: "i64"}[src.itemsize]
        return r.op(f"icmp slt {bits} {r.op(f'bitcast {_src_ty(e)} {s[0]} to {bits}')}, 0")
    if src.is_int:
        return r.op(f"icmp slt {_src_ty(e)} {s[0]}, 0")
    return "false"  # unsigned and bool have no sign


def _shift(r: _Renderer, e: Alu, s: list[str], flags: str) -> str:
    """numpy's shifts: by the bit width or more, << gives 0 and >> gives 0 or -1 (the sign)."""
    t, (a, b), bits = _ty(e), s, 8 * e.dtype.itemsize
    if e.dtype.is_bool:
        t, bits = "i1", 1
    too_far = r.op(f"icmp uge {t} {b}, {bits}")  # unsigned: a negative count is also too far
    safe = r.op(f"select i1 {too_far}, {t} 0, {t} {b}")
    if e.op is Op.SHL:
        return r.op(f"select i1 {too_far}, {t} 0, {t} {r.op(f'shl {t} {a}, {safe}')}")
    kind = "ashr" if e.dtype.is_int else "lshr"
    fill = r.op(f"ashr {t} {a}, {bits - 1}") if e.dtype.is_int else "0"
    return r.op(f"select i1 {too_far}, {t} {fill}, {t} {r.op(f'{kind} {t} {a}, {safe}')}")


_LIBM_UNARY = {
    Op.TAN: "tan", Op.ASIN: "asin", Op.ACOS: "acos", Op.ATAN: "atan", Op.SINH: "sinh",
    Op.COSH: "cosh", Op.ASINH: "asinh", Op.ACOSH: "acosh", Op.ATANH: "atanh", Op.EXPM1: "expm1",
    Op.LOG1P: "log1p", Op.LOG2: "log2", Op.LOG10: "log10",
}

_ALU: dict[Op, Render] = {
    Op.ADD: _arith("fadd", "add", "or"),
    Op.SUB: _arith("fsub", "sub", "xor"),
    Op.MUL: _arith("fmul", "mul", "and"),
    Op.DIV: _arith("fdiv", "sdiv", "and"),
    Op.AND: _arith("and", "and", "and"),
    Op.OR: _arith("or", "or", "or"),
    Op.XOR: _arith("xor", "xor", "xor"),
    Op.FLOORDIV: _floordiv,
    Op.MOD: _mod,
    Op.POW: _pow,
    Op.MAX: _extremum("maximum", "smax", "or"),
    Op.MIN: _extremum("minimum", "smin", "and"),
    Op.CMPLT: _compare("olt", "slt"),
    Op.CMPLE: _compare("ole", "sle"),
    Op.CMPEQ: _compare("oeq", "eq"),
    Op.CMPNE: _compare("une", "ne"),
    Op.NEG: _neg,
    Op.NOT: _not,
    Op.ABS: _abs,
    Op.SQRT: lambda r, e, s, flags: r.intrinsic("sqrt", _ty(e), s),
    **{op: _math(op) for op in _MATH_OPS if op is not Op.POW},   # (pow: integers too, below)
    Op.CAST: _cast,
    Op.BITCAST: lambda r, e, s, flags: r.op(f"bitcast {_src_ty(e)} {s[0]} to {_ty(e)}"),
    Op.WHERE: _where,
    Op.FLOOR: _rounding("floor"),
    Op.CEIL: _rounding("ceil"),
    Op.TRUNC: _rounding("trunc"),
    Op.ROUND: _rounding("roundeven"),
    **{op: _libm(name) for op, name in _LIBM_UNARY.items()},
    Op.ATAN2: _libm("atan2"),
    Op.HYPOT: _libm("hypot"),
    Op.COPYSIGN: lambda r, e, s, flags: r.intrinsic("copysign", _ty(e), s),
    Op.SIGNBIT: _signbit,
    Op.SHL: _shift,
    Op.SHR: _shift,
    Op.IDIV: _index_op("udiv"),
    Op.IMOD: _index_op("urem"),
}


def scalar_ops() -> frozenset[tuple[Op, str]]:
    """The (op, dtype name) pairs rendered as a scalar call, which keeps a loop that uses one
    scalar: a C library function (half computes in float), `frem` (fmod) for float % and //,
    and the integer power's helper loop. For the scheduler, through the Target."""
    floats = {"float16": "float", "float32": "float", "float64": "double"}
    pairs = {(op, dtype) for op in (*_LIBM_UNARY, Op.ATAN2, Op.HYPOT, Op.MOD, Op.FLOORDIV) for dtype in floats}
    pairs |= {(op, dtype) for op, name in _MATH_OPS.items() for dtype, t in floats.items()
              if (name, t) not in mathlib.FUNCTIONS or (name, t) in mathlib.CALLS_LIBRARY}
    pairs |= {(Op.POW, dtype) for dtype in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}
    return frozenset(pairs)


_IPOW = """define internal {t} @lt_ipow_{t}({t} %a, {t} %b) alwaysinline nounwind {{
entry:
  %neg = icmp slt {t} %b, 0
  br i1 %neg, label %negative, label %loop
negative:                      ; exact result truncated toward zero: only |a| == 1 survives
  %is_one = icmp eq {t} %a, 1
  %is_minus_one = icmp eq {t} %a, -1
  %odd = trunc {t} %b to i1
  %sign = select i1 %odd, {t} -1, {t} 1
  %m1 = select i1 %is_minus_one, {t} %sign, {t} 0
  %r = select i1 %is_one, {t} 1, {t} %m1
  ret {t} %r
loop:                          ; exponentiation by squaring
  %acc = phi {t} [1, %entry], [%acc2, %loop]
  %base = phi {t} [%a, %entry], [%base2, %loop]
  %e = phi {t} [%b, %entry], [%e2, %loop]
  %bit = trunc {t} %e to i1
  %mul = mul {t} %acc, %base
  %acc2 = select i1 %bit, {t} %mul, {t} %acc
  %base2 = mul {t} %base, %base
  %e2 = lshr {t} %e, 1
  %more = icmp ne {t} %e2, 0
  br i1 %more, label %loop, label %done
done:
  %res = phi {t} [%acc2, %loop]
  ret {t} %res
}}
"""
_HELPERS = {f"ipow_{t}": _IPOW.format(t=t) for t in ("i8", "i16", "i32", "i64")}
