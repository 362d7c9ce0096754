"""`lt.jit`: record the kernels a function launches once, then replay them on later calls with the
new inputs, without running the function's Python.

    @lt.jit
    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

What a call depends on, and what is fixed when it is captured (as with jax.jit):

- Tensor arguments (also inside tuples, lists and dicts) are the inputs: each call passes its own.
  A call whose tensors differ in shape, dtype, device or requires_grad, or whose other arguments
  differ (compared with ==: they must be hashable), is captured anew; MAX_CAPTURES signatures
  are kept per function, holding at most MAX_CONSTANT_BYTES of constants (the least recently
  used forgotten first).
- Tensors that exist before the call and that the function reads or changes (parameters,
  optimizer state, running statistics) are its state: a replay reads their values at that time
  and puts back what the function changes in them (in-place updates, `.grad`). State is these
  tensor objects: change them in place (`w += d`, `load_state_dict`, an optimizer step). A
  module the function calls is checked to hold the same parameters, buffers and sub-modules
  (`model.fc = other` captures again); a new tensor put anywhere else is not seen.
- Everything else the Python body decides is fixed at capture: Python numbers and branches,
  numpy arrays made into tensors, loop counts. Random tensors (lt.rand, lt.randn, dropout) are
  drawn anew at every call; module training flags and optimizer settings are checked at every
  call (a change captures again; a 0-d tensor learning rate is state instead).
- Reading a value that depends on the inputs or state into Python (`.item()`, `.numpy()`,
  `if x > 0:`, nonzero or boolean-mask indexing, a copy to another device) raises CaptureError
  there: a replay would not run that Python again.
- Results are new tensors at every call (never the memory of an earlier call's results), and
  carry no gradient history: call backward() inside the function.

How: a capture runs the function as usual while it records every plan realize runs (plan.py),
with the buffers each read and wrote, and which tensors the function read and changed (Tensor's
`node` and `grad` slots are watched, for the capturing thread, during the call; state not yet
computed is computed when first read, unrecorded, as a replay does). The plans merge
into one program over numbered slots, whose intermediates are freed after their last reader.
A replay fills the first slots from the arguments and the state, runs the program's steps and
puts the results in place. A call that leaves behind tensors it made other than its results and
gradients (an optimizer creating its momentum on its first step) is not kept: the next call is
captured again, now that the state exists.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import math
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Iterator, Optional, Union

from . import autograd, capture, plan
from .backends.protocol import Buffer
from .backends.runtime import Runtime
from .capture import CaptureError
from .devices import STATS
from .ir.graph import Node
from .ir.ops import Op
from .realize import realize_all, realized_value
from .tensor import Tensor

# Signatures kept per function; the least recently used is forgotten beyond it. A capture holds
# its steps (the kernels are shared) and the constants it made: a GPT forward's ~30 KB. Text
# generation calls the model with every context length, one signature each, again and again:
# below their count an LRU forgets each just before its next use (64 lengths kept in 32: every
# call captured anew, 10.9 ms a token against 1.6 replayed).
MAX_CAPTURES = 256
MAX_CONSTANT_BYTES = 1 << 28   # ... and the constants (arrays made into tensors) of those kept, at most

_NODE, _GRAD = Tensor.__dict__["node"], Tensor.__dict__["grad"]   # the slots' own descriptors
_CAPTURING = threading.Lock()   # one capture at a time: the watched slots are the class's
STALE = object()                # what a replay returns when a guard fails (capture again)

# Where a value comes from at a replay: the argument tensor at this position, or this tensor.
Where = Union[int, Tensor]


def jit(fn: Optional[Callable] = None) -> Any:
    """`fn`, captured on its first call and replayed on later ones (see the module's docstring).
    `@lt.jit` and `@lt.jit()` both work.

    >>> @lt.jit
    ... def f(x):
    ...     return (x * 2).sum()
    >>> [f(lt.asarray([1.0, 2.0])).item(), f(lt.asarray([3.0, 4.0])).item()]
    [6.0, 14.0]
    """
    if fn is None:
        return jit
    if not callable(fn):
        raise TypeError(f"lt.jit wraps a function, not {type(fn).__name__}")
    return Jitted(fn)


class Jitted:
    """A jitted function: its captured programs by call signature."""

    def __init__(self, fn: Callable):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.captures: "OrderedDict[tuple, Program]" = OrderedDict()
        self.uncaptured: dict[tuple, int] = {}   # calls in a row that made state, by signature

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        # a jitted method: the instance is an argument like any other (hashable, compared by identity)
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capture.current() is not None:   # called inside another capture: part of that one
            return self.fn(*args, **kwargs)
        key, tensors = _signature(args, kwargs)
        program = self.captures.get(key)
        if program is not None:
            result = program.replay(tensors)
            if result is not STALE:
                self.captures.move_to_end(key)
                return result
            del self.captures[key]
        return self._capture(key, args, kwargs, tensors)

    def _capture(self, key: tuple, args: tuple, kwargs: dict, tensors: list[Tensor]) -> Any:
        realize_all(*tensors)   # the inputs, and side results still pending, get their values first
        with _CAPTURING, Recording(tensors, getattr(self.fn, "__qualname__", repr(self.fn))) as recording:
            result = self.fn(*args, **kwargs)
            program = recording.finish(result)
        STATS.jit_captures += 1
        if program is not None:
            self.uncaptured.pop(key, None)
            self.captures[key] = program
            while len(self.captures) > MAX_CAPTURES or (
                    len(self.captures) > 1 and sum(p.constant_bytes for p in self.captures.values()) > MAX_CONSTANT_BYTES):
                self.captures.popitem(last=False)
        elif self.uncaptured.get(key, 0) >= 1:   # a first call may create state; a second must not
            raise CaptureError(recording.escaped_message())
        else:
            self.uncaptured[key] = 1
        return result


# ---- signatures and results ------------------------------------------------------------------

_TENSOR = "tensor"   # a tensor's place in a flattened structure


def _flatten(value: Any, tensors: list[Tensor], path: str, hashable: bool) -> Hashable:
    """`value`'s structure with each tensor replaced by a marker (the tensors are appended to
    `tensors`). Containers: tuple, list, dict; anything else is a fixed value."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return _TENSOR
    if type(value) in (tuple, list):
        return type(value), tuple(_flatten(v, tensors, f"{path}[{i}]", hashable) for i, v in enumerate(value))
    if type(value) is dict:
        return dict, tuple(value), tuple(_flatten(v, tensors, f"{path}[{k!r}]", hashable) for k, v in value.items())
    if hashable:
        if type(value).__module__ == "numpy" and type(value).__name__ == "ndarray":
            raise TypeError(f"lt.jit: {path} is a numpy array, which would be fixed at capture; pass "
                            "lt.asarray(array) to make it an input of each call")
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"lt.jit: {path} ({type(value).__name__}) is neither a tensor nor hashable; "
                            "arguments that are not tensors select a capture by their value") from None
    return type(value), value


def _unflatten(structure: Hashable, tensors: Iterator[Tensor]) -> Any:
    if structure == _TENSOR:
        return next(tensors)
    kind = structure[0]
    if kind in (tuple, list):
        return kind(_unflatten(s, tensors) for s in structure[1])
    if kind is dict:
        return {k: _unflatten(s, tensors) for k, s in zip(structure[1], structure[2])}
    return structure[1]


def _signature(args: tuple, kwargs: dict) -> tuple[tuple, list[Tensor]]:
    """What selects a capture: the arguments' structure and fixed values, each tensor's layout,
    which tensors are the same object, and the grad mode; and the argument tensors."""
    if not kwargs and all(isinstance(a, Tensor) for a in args):   # (the common case, cheaply)
        tensors, structure = list(args), len(args)
    else:
        tensors = []
        structure = (_flatten(args, tensors, "argument", True), _flatten(kwargs, tensors, "argument", True))
    layouts = tuple([(t.node.shape, t.node.dtype, t.device, t.requires_grad) for t in tensors])
    ids = [id(t) for t in tensors]
    same = tuple(ids.index(i) for i in ids) if len(set(ids)) < len(ids) else None
    return (structure, layouts, same, autograd.is_grad_enabled()), tensors


def _value(node: Node) -> Optional[Node]:
    """The BUFFER node holding `node`'s value, if it has been computed."""
    value = realized_value(node)
    return value if value.op is Op.BUFFER else None


# ---- the recording -----------------------------------------------------------------------------

class _Watched:
    """A slot of Tensor watched during a capture: the capturing thread's reads and writes are
    reported to the recording, which gives the value read (other threads only pass through)."""

    def __init__(self, slot: Any, thread: int, read: Callable, write: Callable):
        self.slot, self.thread, self.read, self.write = slot, thread, read, write

    def __get__(self, tensor: Any, owner: Any = None) -> Any:
        if tensor is None:
            return self
        value = self.slot.__get__(tensor, owner)
        if threading.get_ident() == self.thread:
            return self.read(tensor, value)
        return value

    def __set__(self, tensor: Any, value: Any) -> None:
        if threading.get_ident() == self.thread:
            self.write(tensor)
        self.slot.__set__(tensor, value)


_UNREAD = object()   # a .grad written before it was read


class Recording:
    """What one call did: the plans realize ran (with their buffers), the tensors that existed
    before the call and were read (what they held) or changed, the tensors made during the call,
    random values, guards. `finish` turns it into a Program."""

    def __init__(self, inputs: list[Tensor], name: str):
        self.thread = threading.get_ident()
        self.inputs, self.name = inputs, name
        self.guards: list[tuple[Callable[[], Hashable], Hashable]] = []
        self.guarded: set[Hashable] = set()   # the guards' keys (their reads keep what they check alive)
        self.runs: list[tuple[Runtime, plan.Plan, list[Buffer], list[Buffer]]] = []
        self.randoms: list[tuple[Buffer, Callable[[], Tensor]]] = []
        self.made: dict[int, weakref.ref] = {}   # tensors made during the call, by id
        # tensors made before the call, by id: what each held when first read (None: written first),
        # which were given new values, and the same for their .grad
        self.seen: dict[int, tuple[Tensor, Optional[Node]]] = {}
        self.changed: dict[int, Tensor] = {}
        self.grads_seen: dict[int, tuple[Tensor, Any]] = {}
        self.grads_changed: dict[int, Tensor] = {}
        self.grad_of: dict[int, Tensor] = {}     # id of a gradient -> whose .grad it was read as
        # buffers whose values depend on the call (the inputs, the state, random values and what
        # is computed from them), by id of the memory's owner (kept alive here)
        self.dynamic: dict[int, Buffer] = {}
        self.input_nodes = [realized_value(t.node) for t in inputs]   # (computed before the call)
        for node in self.input_nodes:
            self.dynamic[id(node.arg.owner)] = node.arg.owner
        self.escaped: list[Tensor] = []

    def __enter__(self) -> "Recording":
        setattr(Tensor, "node", _Watched(_NODE, self.thread, self._node_read, self._node_written))
        setattr(Tensor, "grad", _Watched(_GRAD, self.thread, self._grad_read, self._grad_written))
        capture.RECORDING = self
        return self

    def __exit__(self, *exc: Any) -> None:
        capture.RECORDING = None
        setattr(Tensor, "node", _NODE)
        setattr(Tensor, "grad", _GRAD)

    @contextlib.contextmanager
    def _paused(self):
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()

    # -- what the watched slots and the hooks report --

    def _node_read(self, t: Tensor, node: Node) -> Node:
        i = id(t)
        if i in self.made or i in self.seen:
            return node
        if _value(node) is None:   # state not computed yet: computed now, unrecorded (a replay does it too)
            with self._paused():
                t.realize()
            node = _NODE.__get__(t)
        self.seen[i] = (t, node)
        value = _value(node)
        self.dynamic[id(value.arg.owner)] = value.arg.owner
        return node

    def _node_written(self, t: Tensor) -> None:
        i = id(t)
        if i in self.made:
            return
        try:
            _NODE.__get__(t)
        except AttributeError:   # a tensor being made
            # (the callback holds the dictionary, not the recording and the buffers it keeps)
            self.made[i] = weakref.ref(t, lambda _, i=i, made=self.made: made.pop(i, None))
            return
        self.seen.setdefault(i, (t, None))
        self.changed[i] = t

    def _grad_read(self, t: Tensor, grad: Optional[Tensor]) -> Optional[Tensor]:
        i = id(t)
        if i not in self.made and i not in self.grads_seen:
            self.grads_seen[i] = (t, grad)
            if grad is not None:
                self.grad_of[id(grad)] = t
        return grad

    def _grad_written(self, t: Tensor) -> None:
        i = id(t)
        if i not in self.made:
            self.grads_seen.setdefault(i, (t, _UNREAD))
            self.grads_changed[i] = t

    def ran(self, rt: Runtime, found: plan.Plan, buffers: list[Buffer], outputs: list[Buffer]) -> None:
        self.runs.append((rt, found, buffers, outputs))
        if any(id(b.owner) in self.dynamic for b in buffers):
            self.dynamic.update((id(b.owner), b.owner) for b in outputs)

    def fresh(self, tensor: Tensor, make: Callable[[], Tensor]) -> None:
        owner = tensor.node.arg.owner
        self.randoms.append((owner, make))
        self.dynamic[id(owner)] = owner

    def read(self, buffer: Buffer) -> None:
        if id(buffer.owner) in self.dynamic:
            raise CaptureError(
                f"lt.jit: {self.name} reads a value that depends on its inputs or state into Python (.item(), "
                ".numpy(), .tolist(), bool(x) or `if x:`, float(x), print(x), nonzero(), x[mask], or a copy to "
                "another device): a replay runs the captured kernels, not this Python. Compute it with tensor "
                "ops (lt.where instead of `if`), or read it outside the jitted function")

    # -- the end of the call --

    def finish(self, result: Any) -> Optional["Program"]:
        """The program of this call; None when the call left behind tensors it made (state)."""
        outputs: list[Tensor] = []
        structure = _flatten(result, outputs, "result", False)
        changed, grads_changed = list(self.changed.values()), list(self.grads_changed.values())
        grads = [t.grad for t in grads_changed if t.grad is not None]
        realize_all(*outputs, *changed, *grads)   # (recorded like the rest)
        for t in outputs:
            if autograd.tracks(t.node) and not autograd.is_leaf_node(t):
                raise CaptureError(f"lt.jit: {self.name} returns a tensor with gradient history: a replay gives "
                                   "values only. Call backward() inside the function, return x.detach(), or "
                                   "call it under lt.no_grad()")
        for t in changed:
            if autograd.tracks(t.node) and not autograd.is_leaf_node(t):
                raise CaptureError(f"lt.jit: {self.name} changes in place a tensor made outside it that carries "
                                   "gradient history; a replay can put back values only")
        kept = {id(t) for t in outputs} | {id(g) for g in grads}
        self.escaped = [t for i, ref in list(self.made.items()) if i not in kept and (t := ref()) is not None]
        if self.escaped:   # (or only garbage in reference cycles)
            self.escaped = []
            gc.collect()
            self.escaped = [t for i, ref in list(self.made.items()) if i not in kept and (t := ref()) is not None]
        if self.escaped:
            return None
        return self._program(structure, outputs, changed, grads_changed)

    def escaped_message(self) -> str:
        shapes = ", ".join(str(t.shape) for t in self.escaped[:4])
        return (f"lt.jit: each call of {self.name} keeps tensors it made other than its results and gradients "
                f"({len(self.escaped)}: shapes {shapes}), such as tensors stored in a list or an attribute. A "
                "replay cannot make them: return them, or keep state in tensors made before the first call "
                "and update them in place")

    def _where(self, t: Tensor) -> Where:
        for i, x in enumerate(self.inputs):
            if x is t:
                return i
        return t

    def _program(self, structure: Hashable, outputs: list[Tensor], changed: list[Tensor],
                 grads_changed: list[Tensor]) -> "Program":
        """The recorded plans as one program over numbered slots: first what a replay reads (the
        inputs, the state, new random values, then the constants), then each step's output."""
        slot_of: dict[int, int] = {}   # id of a buffer's owner -> its slot
        readers: list[tuple[Where, bool, tuple]] = []   # (whose value, its .grad?, layout it must have)

        def read(where: Where, grad: bool, t: Tensor, node: Node) -> None:
            slot_of.setdefault(id(_value(node).arg.owner), len(readers))
            readers.append((where, grad, (node.shape, node.dtype, t.device, t.requires_grad)))

        for i, (t, node) in enumerate(zip(self.inputs, self.input_nodes)):
            read(i, False, t, node)
        for t, node in self.seen.values():
            if node is not None and self._where(t) is t:
                whose = self.grad_of.get(id(t))
                read(t, False, t, node) if whose is None else read(self._where(whose), True, t, node)
        for k, (owner, _) in enumerate(self.randoms):
            slot_of[id(owner)] = len(readers) + k
        finals = ([realized_value(t.node).arg for t in outputs + changed] +
                  [realized_value(t.grad.node).arg for t in grads_changed if t.grad is not None])
        constants: list[Buffer] = []   # read, made neither before the call nor by its plans
        made: set[int] = set()

        def constant(buffers: list[Buffer]) -> None:
            for b in buffers:
                if id(b.owner) not in slot_of and id(b.owner) not in made:
                    slot_of[id(b.owner)] = len(readers) + len(self.randoms) + len(constants)
                    constants.append(b.owner)
        for _, _, buffers, results in self.runs:
            constant(buffers)
            made.update(id(b.owner) for b in results)
        constant(finals)

        n_leaves = len(readers) + len(self.randoms) + len(constants)
        steps: list[plan.Step] = []
        segments: list[tuple[Runtime, int]] = []   # (runtime, first step) where the device changes
        for rt, found, buffers, results in self.runs:
            if not segments or segments[-1][0] is not rt:
                segments.append((rt, len(steps)))
            local = [slot_of[id(b.owner)] for b in buffers]   # the plan's slots -> the program's
            for step in found.steps:
                steps.append(replace(step, inputs=tuple(local[i] for i in step.inputs)))
                local.append(n_leaves + len(steps) - 1)
            for b, i in zip(results, found.outputs):
                slot_of.setdefault(id(b.owner), local[i])

        def final(t: Tensor, node: Node) -> tuple[int, tuple[int, ...], Any, str]:
            return slot_of[id(realized_value(node).arg.owner)], node.shape, node.dtype, t.device

        results = [final(t, t.node) for t in outputs]
        writes = [(self._where(t), final(t, t.node)) for t in changed]
        grad_writes = [(self._where(t), None if t.grad is None else final(t.grad, t.grad.node))
                       for t in grads_changed]
        kept = [r[0] for r in results] + [w[1][0] for w in writes] + [w[1][0] for w in grad_writes if w[1]]
        bounds = [first for _, first in segments] + [len(steps)]
        devices = [rt.device.name for (rt, _), a, b in zip(segments, bounds, bounds[1:]) for _ in range(a, b)]
        frees, takes = plan.memory(n_leaves, steps, kept, devices)
        return Program(
            guards=self.guards, readers=readers,
            grad_guards=[(self._where(t), g is None) for t, g in self.grads_seen.values() if g is not _UNREAD],
            randoms=[make for _, make in self.randoms], constants=constants,
            segments=[(rt, steps[a:b], frees[a:b], takes[a:b]) for (rt, _), a, b in zip(segments, bounds, bounds[1:])],
            structure=structure, results=results, writes=writes, grad_writes=grad_writes)


def _at(where: Where, inputs: list[Tensor]) -> Tensor:
    return inputs[where] if type(where) is int else where


@dataclass(eq=False)
class Program:
    """A captured call: what a replay checks, reads, runs and puts back."""
    guards: list[tuple[Callable[[], Hashable], Hashable]]
    readers: list[tuple[Where, bool, tuple]]
    grad_guards: list[tuple[Where, bool]]
    randoms: list[Callable[[], Tensor]]
    constants: list[Buffer]
    segments: list[tuple[Runtime, list[plan.Step], tuple, tuple]]   # (runtime, steps, frees, takes)
    structure: Hashable
    results: list[tuple[int, tuple[int, ...], Any, str]]             # (slot, shape, dtype, device)
    writes: list[tuple[Where, tuple]]                                 # new node of a tensor
    grad_writes: list[tuple[Where, Optional[tuple]]]                  # new .grad of a tensor

    @functools.cached_property
    def constant_bytes(self) -> int:
        return sum(math.prod(b.shape) * b.dtype.itemsize for b in self.constants)

    def replay(self, inputs: list[Tensor]) -> Any:
        for read, value in self.guards:
            if read() != value:
                return STALE
        for where, was_none in self.grad_guards:
            if (_at(where, inputs).grad is None) != was_none:
                return STALE
        slots: list[Any] = []
        for where, grad, layout in self.readers:
            t = _at(where, inputs)
            if grad:
                t = t.grad
            node = t.node
            if node.op is not Op.BUFFER:
                node = _value(node)
                if node is None:   # (changed outside since: computed now)
                    node = _value(t.realize().node)
            if (node.shape, node.dtype, t.device, t.requires_grad) != layout:
                return STALE
            slots.append(node.arg)
        slots.extend(make().node.arg for make in self.randoms)
        slots.extend(self.constants)
        for rt, steps, frees, takes in self.segments:
            plan.execute(rt, steps, frees, takes, slots)
        STATS.jit_replays += 1
        for where, (slot, shape, dtype, device) in self.writes:
            _put(_at(where, inputs), _buffer_node(slots[slot], shape, dtype))
        for where, new in self.grad_writes:
            _at(where, inputs).grad = None if new is None else _result(slots, *new)
        return _unflatten(self.structure, iter([_result(slots, *result) for result in self.results]))


def _result(slots: list, slot: int, shape: tuple[int, ...], dtype: Any, device: str) -> Tensor:
    return Tensor(_buffer_node(slots[slot], shape, dtype), device)


def _buffer_node(buffer: Buffer, shape: tuple[int, ...], dtype: Any) -> Node:
    # (a new alias of the memory, as realize makes: a node of the buffer itself could be one some
    # tensor holds already, a parameter's leaf node when the function returns its input)
    # (and of its dtype: complex values are computed as pairs of floats)
    return Node(Op.BUFFER, dtype, shape, (), buffer.reshaped(shape, dtype))


def _put(t: Tensor, node: Node) -> None:
    """`t` holds `node` now, as the function's in-place update left it (a leaf stays a leaf)."""
    if autograd.is_leaf_node(t):
        t.node = autograd.register_leaf(t, node)
    else:
        t.node, t.requires_grad = node, False


__all__ = ["jit", "Jitted", "CaptureError"]
