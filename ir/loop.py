"""Loop IR: what a scheduled kernel lowers to and every backend renders.

Expressions are scalar trees (`Const`, `Var`, `Load`, `Alu`); statements are `For` loops with a
kind, `Store`s and accumulator updates. `Alu` reuses the graph's `Op` for its arithmetic, plus
the index ops IDIV/IMOD. The helpers `add`, `mul`, `idiv`, `imod` build int64 index arithmetic
and fold what is constant, so `i*1 + 0` is rendered as `i`.
"""
from __future__ import annotations

import struct
import weakref
import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Union

from .dtypes import DType, bool_, int64
from .ops import Op
from .symbolic import DERIVED, Sym
from .walk import recurse


@dataclass(frozen=True, eq=False)
class Const:
    value: Union[bool, int, float]
    dtype: DType

    # Equal only with exactly the same value: 0.0 == -0.0 in Python, and a renderer that reuses
    # the value of an equal expression must not give `x * -0.0` the value of `x * 0.0`.
    def _key(self) -> tuple:
        value = self.value
        return (self.dtype, type(value), struct.pack("<d", value) if isinstance(value, float) else value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class Var:
    name: str
    dtype: DType = int64
    # a reduction's running value (a Declare, then Assigns): it changes as the loops run, so a
    # renderer reads it afresh at each use instead of reusing an earlier read (reads_accumulator)
    accumulator: bool = False


def _forget(key: tuple) -> None:
    """An expression node died: drop its entry, unless a new node took the key since."""
    ref = _Tree._live.get(key)
    if ref is not None and ref() is None:
        del _Tree._live[key]


class _Tree:
    """Expression nodes with sub-expressions, hash-consed like graph nodes: making a node equal
    to a live one returns that one, so equal expressions are one object. Renderers look values
    up by expression over and over, and expressions get deep: equality is identity and the hash
    is computed once, from the parts' (no walk of the tree, no recursion). (Compared
    structurally, equal trees built apart cost a walk per lookup: 3 s of rendering for
    examples/train_digits.py.)"""

    _live: "dict[tuple, weakref.ref]" = {}

    def __new__(cls, *args, **kwargs):
        names = tuple(cls.__dataclass_fields__)
        values = args + tuple(kwargs[name] for name in names[len(args):])
        key = (cls,) + values
        ref = _Tree._live.get(key)
        node = ref() if ref is not None else None
        if node is None:
            node = object.__new__(cls)
            for name, value in zip(names, values):
                object.__setattr__(node, name, value)
            object.__setattr__(node, "_hash", hash(key))
            ref = weakref.ref(node, lambda _, key=key: _forget(key))
            found = _Tree._live.setdefault(key, ref)   # (atomic: two threads making one node agree)
            if found is not ref:
                other = found()
                if other is not None:
                    return other
                _Tree._live[key] = ref
        return node

    def __init__(self, *args, **kwargs) -> None:
        pass   # (made in __new__)

    def __hash__(self) -> int:
        return self.__dict__["_hash"]

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return recurse(_repr, self, {})


def _repr(e: object):
    """repr() of an expression as a recursive definition (ir/walk.py): deep ones print too."""
    if not isinstance(e, _Tree):
        return repr(e)
    parts = []
    for f in e.__dataclass_fields__:
        value = getattr(e, f)
        if isinstance(value, tuple):
            items = []
            for item in value:
                items.append((yield item))
            text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        else:
            text = yield value
        parts.append(f"{f}={text}")
    return f"{type(e).__name__}({', '.join(parts)})"


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Load(_Tree):
    buf: int          # parameter slot of the kernel
    index: "Expr"     # element index (int64)
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Alu(_Tree):
    op: Op
    srcs: tuple["Expr", ...]
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False, init=False)
class LocalLoad(_Tree):
    """An element of a kernel's local array (gpu: block-shared memory; cpu: a tile on the stack)."""
    array: str
    index: "Expr"
    dtype: DType


Expr = Union[Const, Var, Load, Alu, LocalLoad]


class LoopKind(Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"      # iterations split across cores (cpu) or bound to blocks (gpu)
    VECTORIZED = "vectorized"  # the backend vectorizes it with `vector_width` lanes
    UNROLLED = "unrolled"
    BLOCK = "block"            # gpu: one iteration per block (work-group); `if (var < stop)`
    THREAD = "thread"          # gpu: one iteration per thread (work-item) of a block


@dataclass(frozen=True)
class Store:
    buf: int
    index: Expr
    value: Expr


@dataclass(frozen=True)
class Declare:
    var: Var
    init: Expr


@dataclass(frozen=True)
class Assign:
    var: Var
    value: Expr
    reassociate: bool = False  # a reduction update the backend may reorder (vectorize)


@dataclass(frozen=True)
class For:
    var: Var
    start: Expr
    stop: Expr
    body: tuple["Stmt", ...]
    kind: LoopKind = LoopKind.SERIAL
    vector_width: int = 1
    unroll: int = 1            # unroll factor; in a reduction, also the number of accumulators


@dataclass(frozen=True)
class If:
    cond: Expr
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class ThreadReduce:
    """gpu: combine the accumulator `acc` of the `threads` threads of a block with `op` (a tree
    through local/shared memory); afterwards every thread holds the block's result in `acc`."""
    acc: Var
    op: Op
    threads: int
    index: Var                 # the thread index variable


@dataclass(frozen=True)
class LocalStore:
    array: str
    index: Expr
    value: Expr
    reassociate: bool = False   # an accumulator update: float adds may be regrouped (vectorized)


@dataclass(frozen=True)
class Barrier:
    """gpu: every thread of the block waits here until all have arrived (local memory is then
    consistent). Only where every thread of the block reaches it."""


@dataclass(frozen=True)
class LocalArray:
    name: str
    dtype: DType
    size: int


@dataclass(frozen=True)
class Binding:
    """gpu: the value of a loop bound to blocks/threads, from the 1-d hardware index:
    (index // stride) % extent (loops bound to the same kind split the index row-major)."""
    var: str
    kind: "LoopKind"
    stride: int
    extent: int


Stmt = Union[Store, Declare, Assign, For, If, ThreadReduce, LocalStore, Barrier]


@dataclass(frozen=True)
class Param:
    dtype: DType
    is_output: bool


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    # The extent of the outermost PARALLEL loop (None when there is none); the runtime calls the
    # kernel with ranges [start, end) of it, so those loops read the parameters `start`/`end`.
    parallel_extent: int | None = None
    # gpu kernels: a 1-d grid of `blocks` blocks of `threads` threads (loops bound to them)
    blocks: int = 1
    threads: int = 1
    bindings: tuple[Binding, ...] = ()
    local_arrays: tuple[LocalArray, ...] = ()
    # symbolic sizes (ir/symbolic.py): the size variables the kernel reads, passed at launch
    # after the buffers; `parallel_extent` may then be a Sym
    sizes: tuple[str, ...] = ()


START, END = Var("start"), Var("end")
THREAD_ID = Var("lt_tid")   # gpu: the thread's index in its block (0 .. threads-1)


# ---- index arithmetic that folds constants --------------------------------------------------

def const(value: "int | Sym") -> Expr:
    """An int64 constant; a symbolic size (ir/symbolic.py) as its expression in the size
    variables, which a kernel takes as parameters."""
    if isinstance(value, Sym):
        return _sym_expr(value)
    return Const(int(value), int64)


def _sym_expr(value: Sym) -> Expr:
    total: Expr = Const(0, int64)
    for monomial, coef in value.terms:
        term: Expr = Const(coef, int64)
        for name in monomial:
            term = mul(term, size_var(name))
        total = add(total, term)
    return total


def size_var(name: str) -> Expr:
    """A size variable's value: a kernel parameter, or computed from them (a derived one)."""
    if name in DERIVED:
        x, f = DERIVED[name]
        return idiv(add(_sym_expr(x), Const(f - 1, int64)), f)
    return Var(name)


def add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        return const(a.value + b.value)
    if isinstance(a, Const):
        a, b = b, a
    if isinstance(b, Const) and b.value == 0:
        return a
    # (x + c1) + c2 -> x + (c1 + c2): keeps all constant offsets in one place
    if isinstance(b, Const) and isinstance(a, Alu) and a.op is Op.ADD and isinstance(a.srcs[1], Const):
        return add(a.srcs[0], const(a.srcs[1].value + b.value))
    return Alu(Op.ADD, (a, b), int64)


def mul(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        return const(a.value * b.value)
    if isinstance(a, Const):
        a, b = b, a
    if isinstance(b, Const):
        if b.value == 0:
            return const(0)
        if b.value == 1:
            return a
    return Alu(Op.MUL, (a, b), int64)


def idiv(a: Expr, b: "int | Sym") -> Expr:
    """a // b for a >= 0 and b > 0 (a symbolic size b: divided at run time)."""
    if isinstance(b, int) and b == 1:
        return a
    if isinstance(a, Const) and isinstance(b, int):
        return const(a.value // b)
    return Alu(Op.IDIV, (a, const(b)), int64)


def imod(a: Expr, b: "int | Sym") -> Expr:
    """a % b for a >= 0 and b > 0 (a symbolic size b: divided at run time)."""
    if isinstance(b, int) and b == 1:
        return const(0)
    if isinstance(a, Const) and isinstance(b, int):
        return const(a.value % b)
    return Alu(Op.IMOD, (a, const(b)), int64)


def logical_and(a: Expr | None, b: Expr | None) -> Expr | None:
    """AND of two optional conditions (None means always true)."""
    if a is None:
        return b
    if b is None:
        return a
    return Alu(Op.AND, (a, b), bool_)


def less(a: Expr, b: Expr) -> Expr:
    return Alu(Op.CMPLT, (a, b), bool_)


def children(e: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of `e`."""
    if isinstance(e, Alu):
        return e.srcs
    if isinstance(e, (Load, LocalLoad)):
        return (e.index,)
    return ()


def with_children(e: Expr, parts: tuple[Expr, ...]) -> Expr:
    """`e` with its sub-expressions replaced by `parts` (itself where they are the same)."""
    if parts == children(e):
        return e
    if isinstance(e, Alu):
        return Alu(e.op, tuple(parts), e.dtype)
    if isinstance(e, Load):
        return Load(e.buf, parts[0], e.dtype)
    return LocalLoad(e.array, parts[0], e.dtype)


def postorder(root: Expr) -> list[Expr]:
    """Every distinct sub-expression of `root` (itself included), each after its own."""
    order: list[Expr] = []
    seen: set[Expr] = {root}
    stack = [(root, iter(children(root)))]
    while stack:
        e, parts = stack[-1]
        for part in parts:
            if part not in seen:
                seen.add(part)
                stack.append((part, iter(children(part))))
                break
        else:
            stack.pop()
            order.append(e)
    return order


def rewrite(root: Expr, replace: "Callable[[Expr], Expr | None]") -> Expr:
    """`root` with every sub-expression for which `replace` gives an expression replaced by it
    (and not looked into), the rest rebuilt from their rewritten parts."""
    done: dict[Expr, Expr] = {}
    for e in postorder(root):
        new = replace(e)
        done[e] = new if new is not None else with_children(e, tuple(done[p] for p in children(e)))
    return done[root]


def reads_accumulator(e: Expr, memo: dict) -> bool:
    """Whether `e` reads a value that changes as a reduction runs (an accumulator, a local tile):
    a renderer computes such an expression again at each use instead of reusing it. `memo` holds
    the answers for one kernel: its expression is a DAG, and walking it as a tree at every node
    took 2 s of rendering for the 75 kernels of examples/train_digits.py (so answers known are
    not walked again)."""
    return recurse(_reads_accumulator, e, memo)


def _reads_accumulator(e: Expr):
    if isinstance(e, LocalLoad):
        return True
    if isinstance(e, Var):
        return e.accumulator
    found = False
    for part in children(e):
        found = (yield part) or found
    return found


def walk(stmts: tuple[Stmt, ...]):
    """Every statement, depth first (in order: a loop before its body)."""
    stack = [iter(stmts)]
    while stack:
        s = next(stack[-1], None)
        if s is None:
            stack.pop()
            continue
        yield s
        if isinstance(s, (For, If)):
            stack.append(iter(s.body))


def rewrite_statements(stmts: tuple[Stmt, ...], expr: "Callable[[Expr], Expr]",
                       arrays: "dict[str, str] | None" = None) -> tuple[Stmt, ...]:
    """The statements with each of their expressions `e` replaced by `expr(e)`, and the stores
    into the local arrays named in `arrays` going to their new names (loads are `expr`'s to
    rename: they are expressions). Statements without expressions are kept as they are."""
    arrays = arrays or {}   # (recursive: a loop nest is as deep as its kernel's axes, no deeper)
    out = []
    for s in stmts:
        if isinstance(s, For):
            s = dataclasses.replace(s, start=expr(s.start), stop=expr(s.stop),
                                    body=rewrite_statements(s.body, expr, arrays))
        elif isinstance(s, If):
            s = dataclasses.replace(s, cond=expr(s.cond), body=rewrite_statements(s.body, expr, arrays))
        elif isinstance(s, LocalStore):
            s = dataclasses.replace(s, array=arrays.get(s.array, s.array), index=expr(s.index),
                                    value=expr(s.value))
        elif isinstance(s, Store):
            s = dataclasses.replace(s, index=expr(s.index), value=expr(s.value))
        elif isinstance(s, Declare):
            s = dataclasses.replace(s, init=expr(s.init))
        elif isinstance(s, Assign):
            s = dataclasses.replace(s, value=expr(s.value))
        elif not isinstance(s, (Barrier, ThreadReduce)):
            raise TypeError(f"rewrite_statements: unknown statement {s!r}")
        out.append(s)
    return tuple(out)


def expressions(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates itself (a loop, a condition: not its body's)."""
    if isinstance(stmt, For):
        return (stmt.start, stmt.stop)
    if isinstance(stmt, If):
        return (stmt.cond,)
    if isinstance(stmt, (Store, LocalStore)):
        return (stmt.index, stmt.value)
    if isinstance(stmt, Declare):
        return (stmt.init,)
    if isinstance(stmt, Assign):
        return (stmt.value,)
    return ()
