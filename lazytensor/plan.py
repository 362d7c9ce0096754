"""Realize plans: the steps a graph's *structure* needs, found once and replayed.

A training loop builds the same graph every step, with new buffers. The first realize of a
structure optimizes, fuses, schedules and compiles it into a plan: a list of steps (a compiled
kernel or an opaque op, the slots it reads, the shape of what it writes). A later realize of
the same structure on the same device -- the same ops, dtypes, shapes and constants, the same
pattern of shared nodes and inputs -- runs the plan on its own input buffers, skipping every
pass. Buffer identities never enter the structure (only their dtype and shape), so the plan is
valid for any buffers of that layout: buffers are contiguous and immutable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Union

from .backends.protocol import Buffer
from .backends.runtime import CompiledKernel, Runtime
from .ir.dtypes import DType
from .ir.graph import Node
from .ir.ops import OPAQUE, Op


@dataclass(frozen=True)
class Step:
    run: Union[CompiledKernel, tuple[Op, Any], None]   # a kernel, an opaque (op, arg), or None:
    inputs: tuple[int, ...]                            # only memory (a zero-size result)
    shape: tuple[int, ...]
    dtype: DType
    # an opaque op's input shapes and dtypes (it views its inputs by them; a kernel reads addresses)
    shapes: Optional[tuple[tuple[int, ...], ...]] = None
    dtypes: Optional[tuple[DType, ...]] = None


@dataclass(frozen=True)
class Plan:
    """Slots 0..n_leaves-1 are the graph's input buffers, in structure order; step j writes slot
    n_leaves + j; `outputs` are the slots of the realized roots. After step j, the intermediate
    slots `frees[j]` are read no more: their memory goes back to the pool, where a later step's
    output of the same size takes it (intermediates whose lifetimes do not overlap share it)."""
    n_leaves: int
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    read_leaves: tuple[int, ...]   # the input slots some step reads (their device is checked)
    frees: tuple[tuple[int, ...], ...]   # per step
    takes: tuple[Optional[int], ...]     # per step: the dropped slot whose memory it writes (see memory())


def structure(roots: list[Node]) -> tuple[tuple, list[Node]]:
    """A hashable description of the graph under `roots` that leaves out which buffers it reads,
    and those buffers' nodes, in the order the description numbers them. (It runs at every
    realize: each node contributes its stored `local` key and its sources' numbers, in the order
    of a depth-first walk from the first root and source -- a function of the structure alone.)
    A buffer contributes (dtype, shape), a constant its `local` (a 4-tuple: never equal to a
    2-tuple), any other node (local, source numbers)."""
    index: dict[Node, int] = {}
    parts: list[tuple] = []
    leaves: list[Node] = []
    for root in roots:
        stack = [root]   # (a node stays under its unnumbered sources until they are numbered)
        while stack:
            node = stack[-1]
            if node in index:
                stack.pop()
                continue
            ready = True
            for s in node.src:
                if s not in index:
                    if s.src:
                        stack.append(s)
                        ready = False
                    else:   # (a buffer or constant: numbered on the spot)
                        index[s] = len(parts)
                        if s.op is _BUFFER:
                            leaves.append(s)
                            parts.append((s.dtype, s.shape))
                        else:
                            parts.append(s.local)
            if ready:
                stack.pop()
                index[node] = len(parts)
                if node.src:
                    parts.append((node.local, tuple([index[s] for s in node.src])))
                # a root without sources, numbered as the sources above are (written twice: one
                # loop for both, over a stand-in parent of the roots, cost ~0.15 us a realize)
                elif node.op is _BUFFER:
                    leaves.append(node)
                    parts.append((node.dtype, node.shape))
                else:
                    parts.append(node.local)
    return (tuple(parts), tuple([index[r] for r in roots])), leaves


_BUFFER = Op.BUFFER


def build(specs: list, bases: list[Node], leaves: list[Node], compile_kernel) -> Plan:
    """The plan that runs the fused kernels `specs` (in order) and yields `bases`."""
    slot: dict[Node, int] = {leaf: i for i, leaf in enumerate(leaves)}
    steps: list[Step] = []

    def add(step: Step, node: Node) -> int:
        slot[node] = len(leaves) + len(steps)
        steps.append(step)
        return slot[node]

    read: set[int] = set()
    for spec in specs:
        inputs = []
        for n in spec.inputs:
            if n not in slot:   # a zero-size intermediate: memory, no kernel
                add(Step(None, (), n.shape, n.dtype), n)
            inputs.append(slot[n])
        read.update(i for i in inputs if i < len(leaves))
        if spec.root.op in OPAQUE:
            step = Step((spec.root.op, spec.root.arg), tuple(inputs), spec.root.shape, spec.root.dtype,
                        tuple(n.shape for n in spec.inputs), tuple(n.dtype for n in spec.inputs))
        else:
            step = Step(compile_kernel(spec), tuple(inputs), spec.root.shape, spec.root.dtype)
        add(step, spec.root)
    outputs = tuple(slot[b] if b in slot else add(Step(None, (), b.shape, b.dtype), b) for b in bases)
    return Plan(len(leaves), tuple(steps), outputs, tuple(sorted(read)), *memory(len(leaves), steps, outputs))


def memory(n_leaves: int, steps: Sequence[Step], outputs: Iterable[int],
           devices: Optional[Sequence[Any]] = None) -> tuple[tuple[tuple[int, ...], ...], tuple[Optional[int], ...]]:
    """Where each step's output lives: (frees, takes), per step. An intermediate slot (never an
    input or output) is read no more after its last reader; a later step of the same shape and
    dtype (on the same device: `devices` per step, where the steps span several) writes into its
    memory -- `takes` is that slot, or None to allocate -- and the other intermediates are dropped
    after their last reader (`frees`), their memory going back to the device's pool. A chain of
    kernels thus runs in a few buffers, without a trip through the pool per kernel. (No step
    takes memory it reads: what it takes was last read by an earlier step.)"""
    last: dict[int, int] = {}
    for j, step in enumerate(steps):
        for i in step.inputs:
            if i >= n_leaves:
                last[i] = j
    kept = set(outputs)
    ends: list[list[int]] = [[] for _ in steps]
    for i, j in last.items():
        if i not in kept:
            ends[j].append(i)

    def kind(j: int) -> tuple:
        return steps[j].shape, steps[j].dtype, None if devices is None else devices[j]
    spare: dict[tuple, list[int]] = {}   # dropped slots by (shape, dtype, device), not yet taken
    takes: list[Optional[int]] = []
    for j in range(len(steps)):
        free = spare.get(kind(j))
        takes.append(free.pop() if free else None)
        for i in sorted(ends[j]):
            spare.setdefault(kind(i - n_leaves), []).append(i)
    taken = set(takes)
    return tuple(tuple(i for i in sorted(e) if i not in taken) for e in ends), tuple(takes)


def run(rt: Runtime, plan: Plan, buffers: list[Buffer]) -> list[Buffer]:
    """Run `plan` on its input buffers (the structure's leaves, in order); its outputs."""
    here = rt.device.name
    for i in plan.read_leaves:
        if buffers[i].device != here:  # a kernel must never touch another device's memory (it would crash)
            foreign = sorted({buffers[i].device for i in plan.read_leaves} - {here})
            raise ValueError(f"this computation on {here} reads tensors on {', '.join(foreign)}; "
                             "move them with .to(device) first")
    slots: list[Optional[Buffer]] = list(buffers)
    execute(rt, plan.steps, plan.frees, plan.takes, slots)
    return [slots[i] for i in plan.outputs]


def execute(rt: Runtime, steps: Sequence[Step], frees: Sequence[tuple[int, ...]], takes: Sequence[Optional[int]],
            slots: list) -> None:
    """Run `steps` in order, each appending its output to `slots` (which hold the inputs first):
    step j writes into the buffer of slot `takes[j]` (moved out of that slot), or into new
    memory; after step j the slots `frees[j]` are dropped, so their memory can serve a later
    step. (Queues run in order: a step may write memory an earlier one read.)"""
    allocate, launch = rt.device.allocate, rt.launch
    for step, done, take in zip(steps, frees, takes):
        if take is None:
            out = allocate(step.shape, step.dtype)
        else:
            out = slots[take]
            slots[take] = None
        if step.shapes is None:
            if step.run is not None:
                launch(step.run, [out, *[slots[i] for i in step.inputs]])
        else:
            inputs = [slots[i] if slots[i].shape == shape and slots[i].dtype is dtype else slots[i].reshaped(shape, dtype)
                      for i, shape, dtype in zip(step.inputs, step.shapes, step.dtypes)]
            rt.run_opaque(step.run[0], step.run[1], inputs, out)
        slots.append(out)
        for i in done:   # (queues run in order: a later step may write this memory safely)
            slots[i] = None
