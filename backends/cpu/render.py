"""Renderer: loop IR -> LLVM IR text for the host CPU. Pure: no llvmlite, no device.

Each kernel becomes two functions: `<name>_body` takes its buffers as `noalias` pointers (which
is what lets LLVM vectorize without runtime alias checks) and `<name>`, the entry point with
one uniform signature `void (ptr args, i64 start, i64 end)`, which reads the buffer pointers from
the `args` array and calls the body (inlined). Loop variables and accumulators live in allocas
that LLVM's mem2reg turns into registers; a loop's kind becomes `llvm.loop` metadata
(vectorize width, interleave count) on its back edge, so the schedule says what LLVM does.

This module renders the kernel, its statements and loops, and walks its expressions; the code
of each op is `render_ops.py`'s table.
"""
from __future__ import annotations

import struct

from ...ir import loop
from ...ir.dtypes import DType
from ...ir.loop import Alu, Const, Expr, For, LoopKind, Var
from ...ir.ops import Op
from ...ir.walk import recurse
from . import mathlib
from .compile_worker import NO_SLP
from .render_ops import _ALU, _HELPERS, _INTRINSIC_SUFFIX, LLVM_TYPE

MEMORY_TYPE = {**LLVM_TYPE, "bool": "i8"}  # numpy stores bool in a byte


def render(kernel: loop.Kernel) -> str:
    """LLVM IR module text for `kernel`."""
    return _Renderer(kernel).module()


def literal(value, dtype: DType) -> str:
    """An exact LLVM constant. Floats are written as the hex of their double value (LLVM's rule,
    also for float), so nothing is lost in decimal printing."""
    if dtype.is_bool:
        return "true" if value else "false"
    if dtype.is_integer:
        return str(int(value))
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(value)))[0]


def _interleave(f: For) -> int:
    """The interleave count of a VECTORIZED loop: the schedule's unroll, less where the loop's
    extent is known and would leave a long scalar remainder. LLVM runs a vectorized loop in steps
    of width x interleave elements and the rest one element at a time: 58 columns in steps of
    4 x 8 ran 32 vectorized and 26 scalar (a Winograd input transform over padded rows of 58
    took 1.43 ms, 0.74 in steps of 8). The largest count up to the schedule's whose remainder
    is at most an eighth of the extent (or under one vector) is kept."""
    if not (isinstance(f.start, Const) and isinstance(f.stop, Const)):
        return f.unroll
    extent = f.stop.value - f.start.value
    for count in range(f.unroll, 1, -1):
        rest = extent % (f.vector_width * count)
        if rest < f.vector_width or rest * 8 <= extent:
            return count
    return 1


class _Renderer:
    def __init__(self, kernel: loop.Kernel):
        self.kernel = kernel
        self.lines: list[str] = []
        self.counter = 0
        self.scopes: list[dict] = [{}]
        self.loops: list[For] = []   # the loops around the statement being rendered, outermost first
        self.accumulating: dict[Expr, bool] = {}   # loop.reads_accumulator's answers
        self.declares: set[str] = set()
        self.math: set[tuple[str, str]] = set()
        self.metadata: list[str] = []
        self.helpers: set[str] = set()
        # calls LLVM cannot vectorize (libm, frem, loops in helpers): a loop containing one must
        # not demand vectorization, or LLVM prints a "loop not vectorized" warning
        self.scalar_calls = 0
        self._regroup: Expr | None = None   # the expression being rendered, where it may be regrouped
        # LLVM 22's x86 code generator folds an 8-bit vector division or remainder by a constant
        # of 2 or 4 lanes, widened by a shuffle and multiplied, to zeros; SLP vectorization builds
        # exactly that from short unrolled loops (`lt.tile((x % 7) * y, 2)` on uint8 was zeros).
        # A kernel with 8-bit division is compiled without SLP vectorization (NO_SLP).
        self.no_slp = False

    # ---- module ---------------------------------------------------------------------------

    def module(self) -> str:
        k = self.kernel
        params = ", ".join(f"ptr noalias %buf{i}" for i in range(len(k.params)))
        allocas = self._allocas()
        self.lines = []
        self._hoist_invariants()
        for stmt in k.body:
            self._stmt(stmt)
        body = "\n".join(allocas + self.lines)
        loads = "\n".join(
            [f"  %a{i}.ptr = getelementptr ptr, ptr %args, i64 {i}\n  %a{i} = load ptr, ptr %a{i}.ptr"
             for i in range(len(k.params))] +
            [f"  %s{j}.ptr = getelementptr ptr, ptr %args, i64 {len(k.params) + j}\n  %s{j} = load i64, ptr %s{j}.ptr"
             for j in range(len(k.sizes))])   # (symbolic sizes: integers in the slots after the buffers)
        call_args = ", ".join([f"ptr %a{i}" for i in range(len(k.params))] + [f"i64 %s{j}" for j in range(len(k.sizes))]
                              + ["i64 %start", "i64 %end"])
        params = ", ".join([params] * bool(params) + [f"i64 %size.{name}" for name in k.sizes])
        sep = ", " if params else ""
        parts = [
            f"; kernel {k.name}", *([NO_SLP] if self.no_slp else []),
            f"define internal void @{k.name}_body({params}{sep}i64 %start, i64 %end) alwaysinline nounwind {{",
            "entry:", body, "  ret void", "}", "",
            f"define void @{k.name}(ptr %args, i64 %start, i64 %end) nounwind {{",
            "entry:", loads, f"  call void @{k.name}_body({call_args})", "  ret void", "}", "",
        ]
        parts += sorted(self.declares)
        parts += [_HELPERS[h] for h in sorted(self.helpers)]
        if self.math:
            parts.append(mathlib.render_math(self.math))
        parts += self.metadata
        return "\n".join(parts) + "\n"

    def _allocas(self) -> list[str]:
        out = []
        for stmt in loop.walk(self.kernel.body):
            if isinstance(stmt, For):
                out.append(f"  %{stmt.var.name}.addr = alloca i64")
            elif isinstance(stmt, loop.Declare):
                out.append(f"  %{stmt.var.name}.addr = alloca {LLVM_TYPE[stmt.var.dtype.name]}")
        for array in self.kernel.local_arrays:   # a tile of outputs (CacheWrite), on the stack
            out.append(f"  %{array.name} = alloca [{array.size} x {LLVM_TYPE[array.dtype.name]}], align 64")
        return list(dict.fromkeys(out))   # a loop variable may drive several loops

    def _hoist_invariants(self) -> None:
        """Render first, before any loop, each largest computation in the kernel that reads no
        loop variable (an optimizer's bias correction 1 - beta**t from the step count): once,
        not once per element. LLVM hoists such code itself, but not a C library call (expm1f
        might set errno): AdamW's update, 128x128, called expm1f twice per element, in a loop
        the call kept scalar, 268 us against 23 with the call hoisted."""
        variant: dict[Expr, bool] = {}
        seen: set[Expr] = set()   # (an expression is a graph: each shared part is looked at once)
        for stmt in loop.walk(self.kernel.body):
            for root in loop.expressions(stmt):
                for e in loop.postorder(root):
                    if e not in variant:
                        variant[e] = isinstance(e, (Var, loop.LocalLoad)) or \
                            any(variant[c] for c in loop.children(e))
                stack = [root]
                while stack:
                    e = stack.pop()
                    if e in seen:
                        continue
                    seen.add(e)
                    if isinstance(e, Alu) and not variant[e]:
                        self.expr(e)   # (kept in the outermost scope: every loop finds it there)
                    else:
                        stack.extend(loop.children(e))

    # ---- statements -----------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def fresh(self, hint: str = "t") -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def _stmt(self, stmt: loop.Stmt) -> None:
        if isinstance(stmt, For):
            self._for(stmt)
        elif isinstance(stmt, loop.Store):
            value = self.expr(stmt.value)
            dtype = stmt.value.dtype
            ptr = self._address(stmt.buf, stmt.index, dtype)
            if dtype.is_bool:
                byte = self.fresh()
                self.emit(f"{byte} = zext i1 {value} to i8")
                value = byte
            self.emit(f"store {MEMORY_TYPE[dtype.name]} {value}, ptr {ptr}")
        elif isinstance(stmt, loop.Declare):
            init = self.expr(stmt.init)
            self.emit(f"store {LLVM_TYPE[stmt.var.dtype.name]} {init}, ptr %{stmt.var.name}.addr")
        elif isinstance(stmt, loop.Assign):
            value = self.expr(stmt.value, reassociate=stmt.reassociate)
            self.emit(f"store {LLVM_TYPE[stmt.var.dtype.name]} {value}, ptr %{stmt.var.name}.addr")
        elif isinstance(stmt, loop.LocalStore):
            value = self.expr(stmt.value, reassociate=stmt.reassociate)
            dtype = stmt.value.dtype
            ptr = self._local_address(stmt.array, stmt.index, dtype)
            self.emit(f"store {LLVM_TYPE[dtype.name]} {value}, ptr {ptr}")
        elif isinstance(stmt, loop.If):
            cond = self.expr(stmt.cond)
            self.counter += 1
            then, done = f"if.then{self.counter}", f"if.end{self.counter}"
            self.emit(f"br i1 {cond}, label %{then}, label %{done}")
            self.label(then)
            self.scopes.append({})   # (values computed in the branch serve only the branch)
            for inner in stmt.body:
                self._stmt(inner)
            self.scopes.pop()
            self.emit(f"br label %{done}")
            self.label(done)
        else:
            raise TypeError(f"cannot render {stmt!r}")

    def _for(self, f: For) -> None:
        name = f.var.name
        self.counter += 1
        head, body, done = f"{name}.cond{self.counter}", f"{name}.body{self.counter}", f"{name}.end{self.counter}"
        start = self.expr(f.start)
        self.emit(f"store i64 {start}, ptr %{name}.addr")
        self.emit(f"br label %{head}")
        self.label(head)
        iv = self.fresh(name + ".")
        self.emit(f"{iv} = load i64, ptr %{name}.addr")
        stop = self.expr(f.stop)
        cond = self.fresh()
        self.emit(f"{cond} = icmp slt i64 {iv}, {stop}")
        self.emit(f"br i1 {cond}, label %{body}, label %{done}")
        self.label(body)
        self.scopes.append({Var(name): iv})
        self.loops.append(f)
        scalar_calls = self.scalar_calls
        for stmt in f.body:
            self._stmt(stmt)
        self.loops.pop()
        self.scopes.pop()
        short = isinstance(f.stop, Const) and isinstance(f.start, Const) and \
            f.stop.value - f.start.value < f.vector_width
        if f.kind is LoopKind.VECTORIZED and (self.scalar_calls > scalar_calls or short):
            # (a hint on a loop that never runs one whole vector step, an empty one or the 3 columns
            # of a stack, makes LLVM print "loop not vectorized"; nothing is lost: none would run)
            f = For(f.var, f.start, f.stop, f.body, LoopKind.SERIAL, 1, f.unroll)
        nxt = self.fresh()
        self.emit(f"{nxt} = add nuw nsw i64 {iv}, 1")
        self.emit(f"store i64 {nxt}, ptr %{name}.addr")
        self.emit(f"br label %{head}, !llvm.loop {self._loop_metadata(f)}")
        self.label(done)

    def _loop_metadata(self, f: For) -> str:
        """The schedule's word on a loop, as LLVM loop hints: a VECTORIZED loop gets its width and
        interleave count, and is not to be unrolled (LLVM unrolls a short loop in full before its
        loop vectorizer runs, and its SLP vectorizer then bundles the unrolled statements along
        whichever axis it likes: a convolution's register tile of 4 pixels x 32 channels,
        vectorized along the pixels its output stores contiguously, became 32 accumulators of 4
        lanes, spilled, 2.5x slower). Every other loop is not to be vectorized: LLVM's loop
        vectorizer otherwise takes the reduction loop around a register tile, vectorizes it along
        the reduction with the unrolled tile inside, and the tile is lost (matmul 1024 on an AVX2
        CPU: 27 GFLOP/s, against 176 as scheduled)."""
        props = []
        if f.kind is LoopKind.VECTORIZED:
            # a width hint, not `vectorize.enable`: LLVM follows it where it is legal, and where
            # it is not (a call inside, say) it quietly keeps the loop scalar instead of warning
            props.append(f'!{{!"llvm.loop.vectorize.width", i32 {f.vector_width}}}')
            interleave = _interleave(f)
            if interleave > 1:
                props.append(f'!{{!"llvm.loop.interleave.count", i32 {interleave}}}')
            props.append('!{!"llvm.loop.unroll.disable"}')
        else:
            props.append('!{!"llvm.loop.vectorize.width", i32 1}')
            if f.unroll > 1:
                props.append(f'!{{!"llvm.loop.unroll.count", i32 {f.unroll}}}')
        base = len(self.metadata)
        ids = []
        for i, prop in enumerate(props):
            self.metadata.append(f"!{base + 1 + i} = {prop}")
            ids.append(f"!{base + 1 + i}")
        self.metadata.insert(base, f"!{base} = distinct !{{{', '.join([f'!{base}'] + ids)}}}")
        return f"!{base}"

    # ---- expressions ------------------------------------------------------------------------

    def _address(self, buf: int, index: Expr, dtype: DType) -> str:
        return self._element(f"%buf{buf}", MEMORY_TYPE[dtype.name], index)

    def _local_address(self, array: str, index: Expr, dtype: DType) -> str:
        return self._element(f"%{array}", LLVM_TYPE[dtype.name], index)

    def _element(self, base: str, element_type: str, index: Expr) -> str:
        return self._gep(base, element_type, self.expr(index))

    def _gep(self, base: str, element_type: str, idx: str) -> str:
        ptr = self.fresh("p")
        self.emit(f"{ptr} = getelementptr inbounds {element_type}, ptr {base}, i64 {idx}")
        return ptr

    def expr(self, e: Expr, reassociate: bool = False) -> str:
        """The SSA value (or constant) of `e`, computed once per enclosing loop body (where it
        reads no accumulator). `reassociate`: `e` itself may be regrouped (a reduction update)."""
        self._regroup = e if reassociate else None
        return recurse(self._value, e, {})

    def _value(self, e: Expr):
        """`expr` as a recursive definition (see ir/walk.py: `yield e` is a recursive call)."""
        if isinstance(e, Const):
            return literal(e.value, e.dtype)
        if isinstance(e, Var) and e.accumulator:
            value = self.fresh()  # accumulators change: always read the current value
            self.emit(f"{value} = load {LLVM_TYPE[e.dtype.name]}, ptr %{e.name}.addr")
            return value
        if isinstance(e, Var) and e.name in ("start", "end"):
            return f"%{e.name}"
        if isinstance(e, Var) and e.name in self.kernel.sizes:
            return f"%size.{e.name}"
        for scope in reversed(self.scopes):
            if e in scope:
                return scope[e]
        if isinstance(e, loop.Load):
            ptr = self._gep(f"%buf{e.buf}", MEMORY_TYPE[e.dtype.name], (yield e.index))
            value = self.fresh("v")
            self.emit(f"{value} = load {MEMORY_TYPE[e.dtype.name]}, ptr {ptr}")
            if e.dtype.is_bool:
                bit = self.fresh()
                self.emit(f"{bit} = icmp ne i8 {value}, 0")
                value = bit
        elif isinstance(e, loop.LocalLoad):
            ptr = self._gep(f"%{e.array}", LLVM_TYPE[e.dtype.name], (yield e.index))
            value = self.fresh("v")
            self.emit(f"{value} = load {LLVM_TYPE[e.dtype.name]}, ptr {ptr}")
        elif isinstance(e, Alu) and self._branch_guarded(e):
            cond, load, zero = e.srcs[0], e.srcs[1], e.srcs[2]
            value = self._guarded_load((yield cond), load, (yield load.index.srcs[1]), (yield zero))
        elif isinstance(e, Alu):
            srcs = []
            for part in e.srcs:
                srcs.append((yield part))
            if e is self._regroup and e.op in (Op.MAX, Op.MIN) and e.dtype.is_float:
                # LLVM's loop vectorizer takes `acc = maximum(acc, select(mask, x, -inf))` (a
                # masked row max: causal attention) for no reduction and runs it scalar, ~50x
                # slower; a freeze of the term (a no-op on a value) hides the select from it
                srcs = [s if isinstance(part, Var) and part.accumulator else self._freeze(s, e.dtype)
                        for part, s in zip(e.srcs, srcs)]
            value = _ALU[e.op](self, e, srcs, "reassoc contract " if e is self._regroup else "contract ")
            if e.op in (Op.FLOORDIV, Op.MOD) and e.dtype.is_integer and e.dtype.itemsize == 1:
                self.no_slp = True
        else:
            raise TypeError(f"cannot render expression {e!r}")
        if not loop.reads_accumulator(e, self.accumulating):
            self.scopes[-1][e] = value
        return value

    def _branch_guarded(self, e: Alu) -> bool:
        """Whether `e` is a guarded read, `where(c, buf[where(c, i, 0)], 0)` (lowering's
        `_masked_load`: padding), of 4 or 8 bytes, in a VECTORIZED innermost loop: it is rendered
        as a load in a branch, which LLVM's loop vectorizer turns into a masked vector load of
        consecutive elements. The select on the index hides that `i` is consecutive: the vectorizer
        gathered the lanes one by one (a 3x3 convolution's padding, 8x32x58x58, took 0.4 ms,
        2.5x numpy's copy). Masked loads of 1 or 2 bytes are no AVX2 instruction, and in a scalar
        loop the select (which reads index 0 where c is false) costs no branch."""
        if e.op is not Op.WHERE or not self.loops or self.loops[-1].kind is not LoopKind.VECTORIZED:
            return False
        cond, load, zero = e.srcs
        return isinstance(load, loop.Load) and load.dtype.itemsize >= 4 and not load.dtype.is_bool and \
            isinstance(zero, Const) and isinstance(load.index, Alu) and load.index.op is Op.WHERE and \
            load.index.srcs[0] == cond and load.index.srcs[2] == loop.const(0)

    def _guarded_load(self, cond: str, load: loop.Load, index: str, zero: str) -> str:
        """`buf[index]` where `cond` holds, else `zero`: the load in a block of its own."""
        self.counter += 1
        guard, read, join = f"guard{self.counter}", f"guarded{self.counter}", f"unguarded{self.counter}"
        memory = MEMORY_TYPE[load.dtype.name]
        self.emit(f"br label %{guard}")
        self.label(guard)
        self.emit(f"br i1 {cond}, label %{read}, label %{join}")
        self.label(read)
        ptr = self._gep(f"%buf{load.buf}", memory, index)
        value = self.fresh("v")
        self.emit(f"{value} = load {memory}, ptr {ptr}")
        self.emit(f"br label %{join}")
        self.label(join)
        out = self.fresh()
        self.emit(f"{out} = phi {memory} [ {value}, %{read} ], [ {zero}, %{guard} ]")
        return out

    def _freeze(self, value: str, dtype) -> str:
        frozen = self.fresh()
        self.emit(f"{frozen} = freeze {LLVM_TYPE[dtype.name]} {value}")
        return frozen

    def op(self, text: str) -> str:
        """Emit `%x = <text>` and return %x."""
        if text.startswith("frem"):
            self.scalar_calls += 1  # lowered to a call of fmod
        value = self.fresh()
        self.emit(f"{value} = {text}")
        return value

    def call(self, name: str, ret: str, args: list[tuple[str, str]], declare: bool = True) -> str:
        arg_types = ", ".join(t for t, _ in args)
        if declare:
            self.declares.add(f"declare {ret} @{name}({arg_types})")
        return self.op(f"call {ret} @{name}({', '.join(f'{t} {v}' for t, v in args)})")

    def intrinsic(self, base: str, t: str, args: list[str], extra: list[tuple[str, str]] = ()) -> str:
        return self.call(f"llvm.{base}.{_INTRINSIC_SUFFIX[t]}", t, [(t, a) for a in args] + list(extra))
