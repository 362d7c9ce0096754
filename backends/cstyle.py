"""Renderer: loop IR -> C-style kernel source, shared by OpenCL and CUDA. Pure: no device import.

The two languages differ only in the tables of a `Dialect`: qualifiers, type names, the block and
thread indices, the barrier, float16 loads/stores and how a value is rounded to float16. Every
other decision (integer wrap-around, numpy's division and modulo, nan-propagating max/min,
saturating float->int casts) is made once, here and in `cstyle_ops.py`.

Values live in registers in their own C type, except float16, which is computed in float and
rounded back to half after every operation (as numpy and the cpu backend do). Every non-trivial
expression is computed once per block into a `const` temporary, like the LLVM renderer's SSA
values. Loops bound to blocks/threads become `if (var < stop)` around their body, with `var`
declared at the top of the kernel from the hardware index; a `ThreadReduce` is a tree through
local/shared memory with a barrier between levels.

This module renders the kernel, its statements and thread reductions, and walks its expressions;
the code of each op, and the helpers it calls, is `cstyle_ops.py`'s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ..ir import loop
from ..ir.dtypes import DType
from ..ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ..ir.walk import recurse
from .cstyle_ops import _EXACT_IN_HALF, _OPS, _helper_source


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
    # a compiler that vectorizes loops itself (clang: OpenCL on PoCL): the pragma before a
    # VECTORIZED loop, (lanes, unroll) -> line, and the one that lets a reduction update in it
    # be regrouped (the vectorizer keeps one partial per lane); None: rendered as plain loops
    vector_loop: Callable[[int, int], str] | None = None
    reassociate: str | None = None


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
        self.vectorized = 0   # VECTORIZED loops (with a pragma) around the statement rendered

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
            vectorized = stmt.kind is LoopKind.VECTORIZED and d.vector_loop is not None
            if vectorized:
                self.lines.append(d.vector_loop(stmt.vector_width, stmt.unroll))
                self.features.add("vector_loop")
            self.vectorized += vectorized
            self.block(f"for ({d.types['int64']} {v} = {start}; {v} < {stop}; {v}++)", stmt.body)
            self.vectorized -= vectorized
        elif isinstance(stmt, loop.Store):
            self.emit(self._store(stmt.buf, self.expr(stmt.index), self.expr(stmt.value), stmt.value.dtype))
        elif isinstance(stmt, loop.Declare):
            self._use(stmt.var.dtype)
            self.emit(f"{d.types[stmt.var.dtype.name]} {stmt.var.name} = {self.expr(stmt.init)};")
        elif isinstance(stmt, loop.Assign) and stmt.reassociate and self.vectorized and d.reassociate and \
                isinstance(stmt.value, Alu):
            # only the update itself may be regrouped: its operands are computed outside the scope
            srcs = [self.expr(part) for part in stmt.value.srcs]
            self.emit("{")
            self.lines.append(d.reassociate)
            self.emit(f"  {stmt.var.name} = {self._alu(stmt.value, srcs)};")
            self.emit("}")
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
            text = self._alu(e, srcs)
        else:
            raise TypeError(f"cannot render expression {e!r}")
        self._use(e.dtype)
        self.counter += 1
        name = f"t{self.counter}"
        self.emit(f"const {self.d.types[e.dtype.name]} {name} = {text};")
        if not loop.reads_accumulator(e, self.accumulating):
            self.scopes[-1][e] = name
        return name

    def _alu(self, e: Alu, srcs: list[str]) -> str:
        """The C expression of `e` applied to its operands' texts."""
        text = _OPS[e.op](self, e, srcs)
        if e.dtype.name == "float16" and e.op not in _EXACT_IN_HALF:
            text = f"{self.helper(self.d.round_half)}({text})"
        return text

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


# ---- the two dialects -------------------------------------------------------------------------

def _opencl_preamble(features: set[str]) -> str:
    lines = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if "float64" in features else []
    if "vector_loop" in features:   # a loop clang could not vectorize is no news to the user
        lines.append('#pragma clang diagnostic ignored "-Wpass-failed"')
    return "\n".join(lines)


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
    # clang's (PoCL's compiler; other OpenCL compilers ignore an unknown pragma)
    vector_loop=lambda lanes, unroll: f"#pragma clang loop vectorize_width({lanes}) interleave_count({max(unroll, 1)})",
    reassociate="#pragma clang fp reassociate(on)",
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
