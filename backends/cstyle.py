"""Renderer: loop IR -> C-style kernel source, shared by OpenCL and CUDA. Pure: no device import.

The two languages differ only in the tables of a `Dialect`: qualifiers, type names, the block and
thread indices, the barrier, float16 loads/stores and how a value is rounded to float16. Every
other decision (integer wrap-around, numpy's division and modulo, nan-propagating max/min,
saturating float->int casts) is made once here.

Values live in registers in their own C type, except float16, which is computed in float and
rounded back to half after every operation (as numpy and the cpu backend do). Every non-trivial
expression is computed once per block into a `const` temporary, like the LLVM renderer's SSA
values. Loops bound to blocks/threads become `if (var < stop)` around their body, with `var`
declared at the top of the kernel from the hardware index; a `ThreadReduce` is a tree through
local/shared memory with a barrier between levels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ..ir import loop
from ..ir.dtypes import DType
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.ops import Op
from ..ir.walk import recurse


@dataclass(frozen=True)
class Dialect:
    name: str
    types: dict[str, str]              # register type of each dtype (bool, float16 -> float)
    memory_types: dict[str, str]       # element type of buffers
    kernel: str                        # text before the kernel's name
    global_pointer: str                # qualifier of a buffer parameter
    restrict: str
    block_index: str
    thread_index: str
    local: str                         # qualifier of a block-shared array
    barrier: str
    function: str                      # qualifier of a helper function
    int64_suffix: str
    load_half: Callable[[str, str], str]         # (buffer, index) -> float
    store_half: Callable[[str, str, str], str]   # (buffer, index, value) -> statement
    round_half: str                    # helper name: float -> float rounded to half
    double_to_half: str                # helper name: double -> float rounded to half once
    math_name: Callable[[str, str], str]         # (function, C type) -> function name
    bitcast: Callable[[str, str], str]           # (source C type, target C type) -> function name
    preamble: Callable[[set[str]], str]          # (features used) -> text before everything
    helpers: dict[str, str] = field(default_factory=dict)  # dialect-only helper definitions
    guarded: frozenset[str] = frozenset()        # functions whose argument needs a guard (_call)


# ---- the kernel renderer --------------------------------------------------------------------

def render(kernel: loop.Kernel, dialect: Dialect) -> str:
    """The source text of `kernel` in `dialect`."""
    return _Renderer(kernel, dialect).source()


class _Renderer:
    def __init__(self, kernel: loop.Kernel, dialect: Dialect):
        self.kernel, self.d = kernel, dialect
        self.lines: list[str] = []
        self.indent = 1
        self.counter = 0
        self.scopes: list[dict] = [{}]
        self.accumulating: dict[Expr, bool] = {}   # loop.reads_accumulator's answers
        self.helpers: dict[str, str] = {}   # name -> definition, in first-use order
        self.features: set[str] = set()
        self.reduce_arrays: dict[loop.ThreadReduce, str] = {}

    # ---- the whole source ---------------------------------------------------------------------

    def source(self) -> str:
        k, d = self.kernel, self.d
        params = []
        for i, p in enumerate(k.params):
            self._use(p.dtype)
            const = "" if p.is_output else "const "
            params.append(f"{d.global_pointer}{const}{d.memory_types[p.dtype.name]}* {d.restrict} buf{i}")
        header = [f"{d.kernel} {k.name}({', '.join(params)}) {{"]
        i64 = d.types["int64"]
        for b in k.bindings:   # loops bound to blocks/threads: their value from the hardware index
            index = d.block_index if b.kind is LoopKind.BLOCK else d.thread_index
            value = f"({i64}){index}" if b.stride == 1 else f"(({i64}){index} / {b.stride})"
            total = k.blocks if b.kind is LoopKind.BLOCK else k.threads
            if b.stride * b.extent < total:
                value = f"({value} % {b.extent})"
            header.append(f"  const {i64} {b.var} = {value}; (void){b.var};")
        if k.local_arrays:
            header.append(f"  const {i64} {loop.THREAD_ID.name} = ({i64}){d.thread_index};")
        for a in k.local_arrays:
            header.append(f"  {d.local} {self._local_type(a.dtype)} {a.name}[{a.size}];")
        for stmt in loop.walk(k.body):
            if isinstance(stmt, loop.ThreadReduce):
                name = f"lt_red{len(self.reduce_arrays)}"
                self.reduce_arrays[stmt] = name
                header.append(f"  {d.local} {self._local_type(stmt.acc.dtype)} {name}[{stmt.threads}];")
        for stmt in k.body:
            self._stmt(stmt)
        # guarded, so that sources can be concatenated into one file (the nvcc check does)
        helpers = [f"#ifndef {h.upper()}\n#define {h.upper()}\n{self.helpers[h]}\n#endif" for h in self.helpers]
        parts = [d.preamble(self.features), *helpers, *header, *self.lines, "}", ""]
        return "\n".join(p for p in parts if p)

    def _use(self, dtype: DType) -> None:
        if dtype.name in ("float64", "float16"):
            self.features.add(dtype.name)

    def _local_type(self, dtype: DType) -> str:
        return self.d.memory_types["bool"] if dtype.is_bool else self.d.types[dtype.name]

    # ---- statements ---------------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def block(self, opening: str, body) -> None:
        """`opening { body }` (a bare `{ }` scope when `opening` is empty)."""
        self.emit(f"{opening} {{" if opening else "{")
        self.indent += 1
        self.scopes.append({})
        for stmt in body:
            self._stmt(stmt)
        self.scopes.pop()
        self.indent -= 1
        self.emit("}")

    def _stmt(self, stmt: loop.Stmt) -> None:
        d = self.d
        if isinstance(stmt, For):
            if stmt.kind in (LoopKind.BLOCK, LoopKind.THREAD):
                bound = next(b.extent for b in self.kernel.bindings if b.var == stmt.var.name)
                if isinstance(stmt.stop, Const) and stmt.stop.value >= bound:
                    self.block("", stmt.body)  # every index is in range
                else:
                    self.block(f"if ({stmt.var.name} < {self.expr(stmt.stop)})", stmt.body)
                return
            start, stop, v = self.expr(stmt.start), self.expr(stmt.stop), stmt.var.name
            self.block(f"for ({d.types['int64']} {v} = {start}; {v} < {stop}; {v}++)", stmt.body)
        elif isinstance(stmt, loop.Store):
            self.emit(self._store(stmt.buf, self.expr(stmt.index), self.expr(stmt.value), stmt.value.dtype))
        elif isinstance(stmt, loop.Declare):
            self._use(stmt.var.dtype)
            self.emit(f"{d.types[stmt.var.dtype.name]} {stmt.var.name} = {self.expr(stmt.init)};")
        elif isinstance(stmt, loop.Assign):
            self.emit(f"{stmt.var.name} = {self.expr(stmt.value)};")
        elif isinstance(stmt, loop.If):
            self.block(f"if ({self.expr(stmt.cond)})", stmt.body)
        elif isinstance(stmt, loop.ThreadReduce):
            self._thread_reduce(stmt)
        elif isinstance(stmt, loop.LocalStore):
            value = self.expr(stmt.value)
            if stmt.value.dtype.is_bool:
                value = f"({self.d.memory_types['bool']}){value}"
            self.emit(f"{stmt.array}[{self.expr(stmt.index)}] = {value};")
        elif isinstance(stmt, loop.Barrier):
            self.emit(f"{d.barrier};")
        else:
            raise TypeError(f"cannot render {stmt!r}")

    def _store(self, buf: int, index: str, value: str, dtype: DType) -> str:
        if dtype.name == "float16":
            return self.d.store_half(f"buf{buf}", index, value) + ";"
        if dtype.is_bool:
            value = f"({self.d.memory_types['bool']}){value}"
        return f"buf{buf}[{index}] = {value};"

    def _thread_reduce(self, stmt: loop.ThreadReduce) -> None:
        """acc <- op over the block's threads: a tree through local memory, then every thread
        reads the result (a barrier after each level, and before the array could be reused)."""
        name, tid, acc = self.reduce_arrays[stmt], stmt.index.name, stmt.acc
        as_value = (lambda text: f"({text} != 0)") if acc.dtype.is_bool else (lambda text: text)
        self.emit(f"{name}[{tid}] = {acc.name};")
        self.emit(f"{self.d.barrier};")
        mine, other = Var("lt_mine", acc.dtype), Var("lt_other", acc.dtype)
        combine = Alu(stmt.op, (mine, other), acc.dtype)
        self.emit(f"for (int lt_s = {stmt.threads // 2}; lt_s > 0; lt_s >>= 1) {{")
        self.indent += 1
        self.emit(f"if ({tid} < lt_s) {{")
        self.indent += 1
        self.scopes.append({mine: as_value(f"{name}[{tid}]"), other: as_value(f"{name}[{tid} + lt_s]")})
        self.emit(f"{name}[{tid}] = {self.expr(combine)};")
        self.scopes.pop()
        self.indent -= 1
        self.emit("}")
        self.emit(f"{self.d.barrier};")
        self.indent -= 1
        self.emit("}")
        self.emit(f"{acc.name} = {as_value(f'{name}[0]')};")
        self.emit(f"{self.d.barrier};")

    # ---- expressions ---------------------------------------------------------------------------

    def expr(self, e: Expr) -> str:
        """A C expression for `e`: a literal, a variable, or a temporary computed once per block."""
        return recurse(self._value, e, {})

    def _value(self, e: Expr):
        """`expr` as a recursive definition (see ir/walk.py: `yield e` is a recursive call)."""
        if isinstance(e, Const):
            return self.literal(e.value, e.dtype)
        for scope in reversed(self.scopes):
            if e in scope:
                return scope[e]
        if isinstance(e, Var):
            return e.name
        if isinstance(e, loop.Load):
            text = self._load(e, (yield e.index))
        elif isinstance(e, loop.LocalLoad):   # changes between barriers: never reused (below)
            text = f"{e.array}[{(yield e.index)}]"
            if e.dtype.is_bool:
                text = f"({text} != 0)"
        elif isinstance(e, Alu):
            srcs = []
            for part in e.srcs:
                srcs.append((yield part))
            text = _OPS[e.op](self, e, srcs)
            if e.dtype.name == "float16" and e.op not in _EXACT_IN_HALF:
                text = f"{self.helper(self.d.round_half)}({text})"
        else:
            raise TypeError(f"cannot render expression {e!r}")
        self._use(e.dtype)
        self.counter += 1
        name = f"t{self.counter}"
        self.emit(f"const {self.d.types[e.dtype.name]} {name} = {text};")
        if not loop.reads_accumulator(e, self.accumulating):
            self.scopes[-1][e] = name
        return name

    def _load(self, e: loop.Load, index: str) -> str:
        if e.dtype.name == "float16":
            return self.d.load_half(f"buf{e.buf}", index)
        if e.dtype.is_bool:
            return f"(buf{e.buf}[{index}] != 0)"
        return f"buf{e.buf}[{index}]"

    def literal(self, value, dtype: DType) -> str:
        d = self.d
        if dtype.is_bool:
            return "true" if value else "false"
        ctype = d.types[dtype.name]
        if dtype.is_integer:
            value = int(value)
            bits = 8 * dtype.itemsize
            suffix = ("U" if dtype.is_unsigned else "") + (d.int64_suffix if bits == 64 else "")
            if dtype.is_int and value == -(1 << (bits - 1)):
                return f"(({ctype})(-{(1 << (bits - 1)) - 1}{suffix} - 1))"
            text = f"{value}{suffix}" if value >= 0 else f"({value}{suffix})"
            return text if bits >= 32 else f"(({ctype}){text})"
        self._use(dtype)
        value = float(value)
        if math.isnan(value):
            return f"(({ctype})NAN)"
        if math.isinf(value):
            return f"(({ctype}){'-' if value < 0 else ''}INFINITY)"
        text = value.hex()
        return f"({text}f)" if ctype == "float" else f"({text})"

    def helper(self, name: str) -> str:
        """Define helper function `name` (from the shared or the dialect's table) once; its name."""
        if name not in self.helpers:
            template = self.d.helpers.get(name) or _helper_source(name, self.d)
            self.helpers[name] = template
        return name

    def fn(self, name: str, dtype: DType) -> str:
        return self.d.math_name(name, self.d.types[dtype.name])


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

Render = Callable[[_Renderer, Alu, list[str]], str]
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
    return f"({s[1]} == 0 ? ({_ctype(r, e.dtype)})0 : ({_ctype(r, e.dtype)})({s[0]} / {s[1]}))"


def _floordiv(r: _Renderer, e: Alu, s: list[str]) -> str:
    t = _ctype(r, e.dtype)
    if e.dtype.is_float:
        return f"{r.helper(f'lt_floordiv_float_{_reg_name(e.dtype)}')}({s[0]}, {s[1]})"
    if e.dtype.is_unsigned or e.dtype.is_bool:
        return f"({s[1]} == 0 ? ({t})0 : ({t})({s[0]} / {s[1]}))"
    return f"{r.helper(f'lt_floordiv_int_{e.dtype.name}')}({s[0]}, {s[1]})"


def _mod(r: _Renderer, e: Alu, s: list[str]) -> str:
    t = _ctype(r, e.dtype)
    if e.dtype.is_float:
        return f"{r.helper(f'lt_mod_float_{_reg_name(e.dtype)}')}({s[0]}, {s[1]})"
    if e.dtype.is_unsigned or e.dtype.is_bool:
        return f"({s[1]} == 0 ? ({t})0 : ({t})({s[0]} % {s[1]}))"
    return f"{r.helper(f'lt_mod_int_{e.dtype.name}')}({s[0]}, {s[1]})"


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
    Op.FLOORDIV: _floordiv,
    Op.MOD: _mod,
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


# ---- the two dialects -------------------------------------------------------------------------

def _opencl_preamble(features: set[str]) -> str:
    return "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if "float64" in features else ""


OPENCL = Dialect(
    name="opencl",
    types={"bool": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
           "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
           "float16": "float", "float32": "float", "float64": "double"},
    memory_types={"bool": "uchar", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
                  "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
                  "float16": "half", "float32": "float", "float64": "double"},
    kernel="__kernel void",
    global_pointer="__global ",
    restrict="restrict",
    block_index="get_group_id(0)",
    thread_index="get_local_id(0)",
    local="__local",
    barrier="barrier(CLK_LOCAL_MEM_FENCE)",
    function="static",
    int64_suffix="L",
    load_half=lambda buf, i: f"vload_half({i}, {buf})",
    store_half=lambda buf, i, v: f"vstore_half_rte({v}, {i}, {buf})",
    round_half="lt_round_half",
    double_to_half="lt_double_to_half",
    math_name=lambda name, ctype: name,   # OpenCL's built-ins are overloaded by type
    bitcast=lambda source, target: f"as_{target}",
    preamble=_opencl_preamble,
    helpers={
        # without cl_khr_fp16 a half exists only in memory: round through a private one
        "lt_round_half": "static float lt_round_half(float x) {\n  ushort h;\n"
                         "  vstore_half_rte(x, 0, (__private half*)&h);\n  return vload_half(0, (__private half*)&h);\n}",
        "lt_double_to_half": "static float lt_double_to_half(double x) {\n  ushort h;\n"
                             "  vstore_half_rte(x, 0, (__private half*)&h);\n  return vload_half(0, (__private half*)&h);\n}",
    },
    # measured on PoCL 3.1 (LLVM 15) for float and double, every built-in the renderer uses, with
    # a literal nan, +-inf, +-FLT_MAX, 1e30, 2^40, -0.0 and the smallest subnormal as argument(s):
    # only these fold to no value (see _call)
    guarded=frozenset({"floor", "ceil", "trunc", "rint", "exp", "expm1", "sinh", "tanh"}),
)


def _cuda_preamble(features: set[str]) -> str:
    return "#include <cuda_fp16.h>" if "float16" in features else ""


_CUDA_FLOAT_NAMES = {"signbit": "signbit"}  # overloaded in CUDA as in C++; the rest take an f
_CUDA_BITCASTS = {("float", "unsigned int"): "__float_as_uint", ("unsigned int", "float"): "__uint_as_float",
                  ("float", "int"): "__float_as_int", ("int", "float"): "__int_as_float",
                  ("double", "long long"): "__double_as_longlong", ("long long", "double"): "__longlong_as_double"}


CUDA = Dialect(
    name="cuda",
    types={"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
           "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
           "uint64": "unsigned long long", "float16": "float", "float32": "float", "float64": "double"},
    memory_types={"bool": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
                  "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
                  "uint32": "unsigned int", "uint64": "unsigned long long", "float16": "__half",
                  "float32": "float", "float64": "double"},
    kernel='extern "C" __global__ void',
    global_pointer="",
    restrict="__restrict__",
    block_index="blockIdx.x",
    thread_index="threadIdx.x",
    local="__shared__",
    barrier="__syncthreads()",
    function="static __device__ __forceinline__",
    int64_suffix="LL",
    load_half=lambda buf, i: f"__half2float({buf}[{i}])",
    store_half=lambda buf, i, v: f"{buf}[{i}] = __float2half_rn({v})",
    round_half="lt_round_half",
    double_to_half="lt_double_to_half",
    math_name=lambda name, ctype: name + "f" if ctype == "float" and name not in _CUDA_FLOAT_NAMES else name,
    bitcast=lambda source, target: _CUDA_BITCASTS[source, target],
    preamble=_cuda_preamble,
    helpers={
        "lt_round_half": "static __device__ __forceinline__ float lt_round_half(float x) "
                         "{ return __half2float(__float2half_rn(x)); }",
        "lt_double_to_half": "static __device__ __forceinline__ float lt_double_to_half(double x) "
                             "{ return __half2float(__double2half(x)); }",
    },
)
