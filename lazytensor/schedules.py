"""Schedules by hand: the primitives the heuristics and the tuner use, in the user's hands.

    s = lt.schedule(t)           the schedule of the kernel that computes tensor t (not realized)
    s.axes, s.reduce_axes        its loops' names ('i0', 'i1', ...; 'r0_2', ...) and s.extent(name);
                                 s.lanes: a vector register's worth of its values
    io, ii = s.split("i0", 16)   each primitive returns the names of the loops it makes
    s.reorder(...), s.fuse(...), s.parallel(...), s.vectorize(...), s.unroll(...), s.bind(...),
    s.cache_read(...), s.cache_write(...)
    print(s.lower()) / lt.lower(t)   the loop IR the kernel compiles to

Each primitive is checked as it is added: the schedule so far must lower (scheduler/lower.py
is the one place primitives are applied), else it is refused with a ValueError naming it and
the lowering's reason, and the schedule stays as it was. From the first primitive on, every
kernel of the same structure on that device -- this one when t is realized, and the same
computation on other data of the same shapes and dtypes -- compiles with it instead of the
heuristic or a tuned one (`s.reset()` undoes that), and the kernels compiled before are
dropped. Axis names are the kernel's own axes (not merged as the automatic schedules' are): the
output axes of t's kernel in order, and the reduce axes of its reduction, named by their place
in the reduced tensor's shape (for lt.compute: the output axes, then the reduce axes in the
order the formula first used them).
"""
from __future__ import annotations

from typing import Optional

from . import pipeline, tuned
from .devices import runtime
from .ir.loop_print import format_kernel
from .ir.ops import Op
from .scheduler.schedule import (Bind, CacheRead, CacheWrite, Fuse, Parallel, Primitive, Reorder, Split, Unroll,
                                 Vectorize, output_axis, reduce_axis, reductions)
from .tensor import Tensor


class KernelSchedule:
    """The hand-written schedule of the kernel that computes a tensor (lt.schedule(t))."""

    def __init__(self, t: Tensor):
        if not isinstance(t, Tensor):
            raise TypeError(f"lt.schedule: takes a tensor, not {type(t).__name__}")
        if t.node.op is Op.BUFFER:
            raise ValueError("lt.schedule: the tensor is already realized (no kernel left to schedule); schedule it "
                             "before its value is used")
        self._rt = runtime(t.device)
        kernels = pipeline.kernels([t.node], self._rt.device.target).kernels
        if not kernels:
            raise ValueError("lt.schedule: the tensor is a view of memory that needs no kernel")
        self._kernel = kernels[-1]   # (the last to run: the one that computes t)
        expr = self._kernel.expr
        self.axes = [output_axis(d) for d in range(len(expr.shape))]
        self._extents = dict(zip(self.axes, expr.shape))
        self.reduce_axes = []
        for k, r in enumerate(reductions(expr)):
            for a in sorted(r.arg):
                self.reduce_axes.append(reduce_axis(k, a))
                self._extents[reduce_axis(k, a)] = r.src[0].shape[a]
        self.primitives: tuple[Primitive, ...] = tuned.written(expr, self._rt) or ()
        # a vector register's worth of the kernel's values (the vectorize default)
        self.lanes = max(1, self._rt.device.target.simd_bytes // expr.dtype.itemsize)

    def extent(self, axis: str) -> int:
        """The number of iterations of a loop of the kernel as it is before any primitive."""
        if axis not in self._extents:
            raise ValueError(f"lt.schedule: no axis {axis!r} (the kernel's: {', '.join(self._extents)})")
        return self._extents[axis]

    def _add(self, primitive: Primitive) -> None:
        candidate = self.primitives + (primitive,)
        try:
            pipeline.loops(self._kernel, self._rt.device.target, candidate, collapse=False)
        except Exception as error:   # (whatever the lowering refuses: the primitive is not taken)
            raise ValueError(f"lt.schedule: {primitive} is refused: {error}") from None
        self.primitives = candidate
        tuned.write(self._kernel.expr, self._rt, candidate)

    def split(self, axis: str, factor: int) -> tuple[str, str]:
        """The loop `axis` as an outer loop over blocks of `factor` and an inner one: their names."""
        split = Split(axis, factor)
        self._add(split)
        return split.outer, split.inner

    def reorder(self, *axes: str) -> None:
        """The output loops in this order, outermost first (the reduction runs inside them). Loops
        of the reduction (split off it) may run among them, outside a cache_write tile (declare it
        first): the reduction in blocks, the tile's partial results kept in the output between."""
        self._add(Reorder(tuple(axes)))

    def fuse(self, *axes: str) -> str:
        """Neighbouring loops, outermost first, as one loop: its name."""
        fuse = Fuse(tuple(axes))
        self._add(fuse)
        return fuse.fused

    def parallel(self, axis: str) -> None:
        """The outermost loop `axis` in parallel chunks on the device's cores."""
        self._add(Parallel(axis))

    def vectorize(self, axis: str, width: Optional[int] = None) -> None:
        """The loop `axis` in vectors of `width` lanes (default: a vector register's worth)."""
        self._add(Vectorize(axis, width or self.lanes))

    def unroll(self, axis: str, factor: int) -> None:
        self._add(Unroll(axis, factor))

    def bind(self, axis: str, to: str) -> None:
        """GPU: one iteration of `axis` per block (to="block") or per thread (to="thread")."""
        self._add(Bind(axis, to))

    def cache_read(self, slot: int, at: Optional[str] = None) -> None:
        """Input `slot` of the kernel staged: packed before the loops (cpu, at=None) or into local
        memory once per iteration of reduction loop `at` (gpu)."""
        self._add(CacheRead(slot, at))

    def cache_write(self, at: str) -> None:
        """The outputs of the loops from `at` inward kept in registers while the reduction runs."""
        self._add(CacheWrite(at))

    def reset(self) -> None:
        """Back to the automatic schedule (heuristic or tuned) for this kernel."""
        self.primitives = ()
        tuned.write(self._kernel.expr, self._rt, None)

    def lower(self) -> str:
        """The loop IR the kernel compiles to (with the automatic schedule while none is written)."""
        written = self.primitives or None
        return format_kernel(pipeline.loops(self._kernel, self._rt.device.target, written,
                                            collapse=written is None)[2])

    def __repr__(self) -> str:
        shape = "x".join(str(self._extents[a]) for a in self.axes)
        return f"lt.schedule(kernel {shape}: {', '.join(map(repr, self.primitives)) or 'automatic'})"


def schedule(t: Tensor) -> KernelSchedule:
    """The schedule of the kernel that computes `t`, to write by hand (see the module's docstring).

    >>> a, b = lt.ones((64, 32)), lt.ones((32, 48))
    >>> k = lt.reduce_axis(32)
    >>> c = lt.compute((64, 48), lambda i, j: lt.sum(a[i, k] * b[k, j], axis=k))
    >>> s = lt.schedule(c)
    >>> io, ii = s.split("i0", 4)
    >>> s.parallel(io)
    >>> c.numpy()[0, :3].tolist()
    [32.0, 32.0, 32.0]
    """
    return KernelSchedule(t)


def lower(t: Tensor) -> str:
    """The loop IR of the kernel that computes `t` (its hand-written schedule, else the automatic one).

    >>> x = lt.asarray(np.arange(8.0))
    >>> print(lt.lower(x * 2).splitlines()[0].split("(")[0])
    kernel kernel
    """
    return KernelSchedule(t).lower()


__all__ = ["KernelSchedule", "lower", "schedule"]
