"""Autotuning: search the schedule space around a kernel's heuristic schedule, measure on the
device, remember the fastest (tuned.py), which every later compile of the kernel then uses.

    tune(fn, *args, trials=32) -> Report     tune the kernels one call of fn runs
    LT_TUNE=1                                tune each new kernel as it is first compiled
                                             (LT_TUNE_TRIALS, LT_TUNE_SECONDS: its budget)
    export(path) / load(path)                tuning results as a JSON log, between machines

The search (`tune_kernel`) is evolutionary: a population of the fastest schedules measured
(BEAM of them, the heuristic one first) breeds the next batch of candidates, each one change away
from a parent (`neighbours`: a split factor, vector width or unroll factor doubled or halved; a
register tile's rows one or two more or fewer, its unroll with them; an Unroll added, a Parallel,
Unroll, CacheRead or CacheWrite dropped; two neighbouring loops swapped; the reduction loops in
another order)
plus structurally different seeds (`alternative_schedules`: say one work-item per output on a
device whose "GPU" is a CPU). A cost model learned from the measurements so far (ridge regression
of log time on the schedule's primitives and their log factors, as Ansor and MetaSchedule learn
one with XGBoost) ranks the candidates, and the batch takes the best ranked and one at random
(exploration). A candidate must lower (the pipeline's `loops`), so an invalid one is never
measured; a batch is compiled side by side (`Runtime.precompile`: worker processes on the CPU).

Each candidate runs on the same random inputs as the heuristic schedule: a warm-up run, then the
median of `runs` timed runs; its output must match the heuristic schedule's (within the rounding
a reordered sum may give), else it is rejected and counted, never kept. Since the heuristic
schedule is measured first and kept unless beaten, tuning never loses.
"""
from __future__ import annotations

import itertools
import math
import os
import random
import statistics
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Optional

import numpy as np

from . import capture, pipeline, tuned
from .backends.runtime import CompiledKernel, Runtime
from .devices import canonical_device, default_device, loaded_runtimes, runtime
from .ir import loop
from .ir.graph import Node
from .ir.loop_print import format_kernel
from .ir.target import Target
from .scheduler.fusion import KernelSpec
from .scheduler.schedule import (CacheRead, CacheWrite, Parallel, Reorder, Schedule, Split, Unroll, Vectorize,
                                 alternative_schedules, reduce_axis, reductions, terms_per_output)

try:
    from tqdm.auto import tqdm
except ImportError:   # (tqdm is optional: no progress bar without it)
    tqdm = None

BEAM = 4            # schedules a batch's candidates descend from
MEASURE_SECONDS = 0.01   # a candidate's timed runs take at least this long (up to MAX_RUNS runs)
MAX_RUNS = 100
CONFIRM_ROUNDS = 3  # the best candidate and the heuristic schedule measured in turn, this many times...
MARGIN = 0.97       # ...and the best kept only where its median is below this share of the heuristic one's
DEFAULT_TRIALS = 32
DEFAULT_SECONDS = 60.0


@dataclass(frozen=True)
class Measured:
    seconds: float          # the median of the timed runs
    output: np.ndarray      # the output's values (for the correctness check)


@dataclass
class Tuned:
    kernel: str             # tuned.describe of the kernel
    heuristic: Schedule
    heuristic_seconds: float
    best: Schedule
    best_seconds: float
    trials: int = 0         # candidates measured, the heuristic one included
    rejected: list[Schedule] = field(default_factory=list)   # outputs that differed
    failed: int = 0         # candidates that lowered but did not compile or run
    seconds: float = 0.0    # the wall time tuning took

    @property
    def speedup(self) -> float:
        return self.heuristic_seconds / self.best_seconds if self.best_seconds > 0 else 1.0


@dataclass(frozen=True)
class Candidate:
    schedule: Schedule
    lowered: loop.Kernel


# ---- the search space ---------------------------------------------------------------------

def neighbours(schedule: Schedule, reduced: tuple[str, ...] = ()) -> Iterator[Schedule]:
    """Schedules one change away from `schedule` (not checked: some do not lower). `reduced`:
    the kernel's reduction loops; where the schedule does not order them, each other order of
    them is a neighbour too (a 1x3 convolution over 32 channels ran 18% faster with the
    channels innermost, an order no change to the heuristic schedule's primitives reached)."""
    if len(reduced) > 1 and not any(isinstance(p, Reorder) and set(p.axes) <= set(reduced) for p in schedule):
        for order in itertools.permutations(reduced):
            if order != reduced:
                yield schedule + (Reorder(order),)
    for i, p in enumerate(schedule):
        changed: list = []
        if isinstance(p, Split):
            unrolled = next((j for j, q in enumerate(schedule) if q == Unroll(p.inner, p.factor)), None)
            if unrolled is not None:   # (a register tile's rows: any count, the tail runs apart)
                for f in sorted({p.factor * 2, p.factor // 2, p.factor + 1, p.factor - 1, p.factor + 2, p.factor - 2}):
                    if f >= 1 and f != p.factor:
                        new_schedule = list(schedule)
                        new_schedule[i], new_schedule[unrolled] = replace(p, factor=f), Unroll(p.inner, f)
                        yield tuple(new_schedule)
                continue
            changed = [replace(p, factor=f) for f in (p.factor * 2, p.factor // 2) if f >= 1]
        elif isinstance(p, Vectorize):
            changed = [replace(p, width=w) for w in (p.width * 2, p.width // 2) if w >= 1]
            if not any(isinstance(q, Unroll) and q.axis == p.axis for q in schedule):
                changed.append((p, Unroll(p.axis, 2)))
        elif isinstance(p, Unroll):
            changed = [replace(p, factor=f) for f in (p.factor * 2, p.factor // 2) if f >= 1] + [None]
        elif isinstance(p, (Parallel, CacheRead, CacheWrite)):
            changed = [None]
        elif isinstance(p, Reorder):
            axes = p.axes
            changed = [Reorder(axes[:j] + (axes[j + 1], axes[j]) + axes[j + 2:]) for j in range(len(axes) - 1)]
        for new in changed:
            middle = () if new is None else new if isinstance(new, tuple) else (new,)
            yield schedule[:i] + middle + schedule[i + 1:]


def candidates(kernel: KernelSpec, target: Target, limit: int = 32) -> list[Schedule]:
    """Up to `limit` distinct schedules that lower, the heuristic one first, then the
    alternative seeds and the heuristic one's neighbours."""
    expr, heuristic, lowered = pipeline.loops(kernel, target)
    space = _Space(kernel, target)
    found = [heuristic]
    space.add(heuristic, lowered)
    for schedule in [*alternative_schedules(expr, target), *neighbours(heuristic, reduction_loops(expr))]:
        if len(found) >= limit:
            break
        if space.lowered(schedule) is not None:
            found.append(schedule)
    return found


def reduction_loops(expr: Node) -> tuple[str, ...]:
    """The names of a (collapsed) kernel expression's reduction loops, in their default order;
    none where more than one reduction (a softmax's) share the kernel."""
    reduces = reductions(expr)
    if len(reduces) != 1:
        return ()
    return tuple(reduce_axis(0, a) for a in sorted(reduces[0].arg))


class _Space:
    """The schedules of one kernel tried so far, and lowering them (None: refused, or lowered to
    the loops of a schedule tried before: an unroll factor doubled past its loop's extent, a
    split by more than its axis, spend no trial)."""

    def __init__(self, kernel: KernelSpec, target: Target):
        self.kernel, self.target = kernel, target
        self.tried: set[Schedule] = set()
        self.programs: set[str] = set()

    def lowered(self, schedule: Schedule) -> Optional[Candidate]:
        if schedule in self.tried:
            return None
        self.tried.add(schedule)
        try:
            _, _, lowered = pipeline.loops(self.kernel, self.target, schedule)
        except Exception:   # (a schedule the lowering refuses, or local arrays that do not fit)
            return None
        return self.add(schedule, lowered)

    def add(self, schedule: Schedule, lowered: loop.Kernel) -> Optional[Candidate]:
        """Count `schedule`, lowered to `lowered`, as tried; None where its loops were tried."""
        self.tried.add(schedule)
        program = format_kernel(lowered)
        if program in self.programs:
            return None
        self.programs.add(program)
        return Candidate(schedule, lowered)


class CostModel:
    """Predicts a schedule's log time from its primitives: ridge regression over one feature per
    (primitive, axis), valued 1 + log2 of its factor or width (1 where it has none). Learned
    from the kernel's own measurements; before MIN_POINTS it ranks nothing."""
    MIN_POINTS = 3
    RIDGE = 0.1

    def __init__(self) -> None:
        self.points: list[tuple[dict[str, float], float]] = []
        self.weights: dict[str, float] = {}

    @staticmethod
    def features(schedule: Schedule) -> dict[str, float]:
        found: dict[str, float] = {}
        for p in schedule:
            number = getattr(p, "factor", None) or getattr(p, "width", None)
            where = getattr(p, "axis", None) or getattr(p, "at", None) or ",".join(getattr(p, "axes", ()))
            name = f"{type(p).__name__}:{where}:{getattr(p, 'slot', '')}{getattr(p, 'to', '')}"
            found[name] = 1.0 + (math.log2(number) if number else 0.0)
        return found

    def add(self, schedule: Schedule, seconds: float) -> None:
        self.points.append((self.features(schedule), math.log(max(seconds, 1e-9))))
        if len(self.points) >= self.MIN_POINTS:
            self._fit()

    def _fit(self) -> None:
        names = sorted({name for found, _ in self.points for name in found})
        x = np.array([[found.get(name, 0.0) for name in names] + [1.0] for found, _ in self.points])
        y = np.array([t for _, t in self.points])
        penalty = self.RIDGE * np.eye(x.shape[1])
        penalty[-1, -1] = 0.0   # (the intercept is not shrunk)
        w = np.linalg.solve(x.T @ x + penalty, x.T @ y)
        self.weights = dict(zip(names + [""], w))

    def predict(self, schedule: Schedule) -> float:
        return self.weights.get("", 0.0) + sum(self.weights.get(name, 0.0) * value
                                               for name, value in self.features(schedule).items())

    def rank(self, schedules: list[Schedule]) -> list[Schedule]:
        if len(self.points) < self.MIN_POINTS:
            return schedules
        return sorted(schedules, key=self.predict)


# ---- measuring ----------------------------------------------------------------------------

def random_inputs(kernel: KernelSpec, rt: Runtime, seed: int = 0) -> list:
    """Buffers of values for the kernel's inputs on `rt`'s device: floats in [-1, 1), integers
    in [0, 4) (valid indices for a gather's small axes; kernels clamp the rest), bools."""
    rng = np.random.default_rng(seed)
    buffers = []
    for node in kernel.inputs:
        dtype = np.dtype(node.dtype.storage)
        if node.dtype.is_bool:
            values = rng.random(node.shape) < 0.5
        elif node.dtype.is_inexact and dtype.kind == "f":
            values = rng.uniform(-1, 1, node.shape).astype(dtype)
        else:
            values = rng.integers(0, 4, node.shape).astype(dtype)
        buffers.append(rt.device.from_numpy(np.ascontiguousarray(values)).seen_as(node.dtype))
    return buffers


def measure(kernel: KernelSpec, rt: Runtime, compiled: CompiledKernel, inputs: list, runs: int = 5) -> Measured:
    """Run a compiled kernel once to warm up and `runs` times timed (more where that takes less
    than MEASURE_SECONDS: a short kernel's times scatter more); the median time and the output."""
    out = rt.device.allocate(kernel.root.shape, kernel.root.dtype)
    buffers = [out, *inputs]
    device = rt.device
    start = time.perf_counter()
    device.launch(compiled.program, buffers, compiled.kernel)
    device.synchronize()
    once = time.perf_counter() - start
    times = []
    for _ in range(max(runs, min(MAX_RUNS, int(MEASURE_SECONDS / max(once, 1e-7))))):
        start = time.perf_counter()
        device.launch(compiled.program, buffers, compiled.kernel)
        device.synchronize()
        times.append(time.perf_counter() - start)
    return Measured(statistics.median(times), np.array(device.to_numpy(out)))


def same_output(got: np.ndarray, want: np.ndarray, terms: int = 1) -> bool:
    """Whether a candidate's output `got` is the heuristic one's, `want`: equal for integers and
    bools; for floats, nan where it is nan and close elsewhere, within the rounding that
    summing `terms` terms in another order may give."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if want.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return False
    finite = np.isfinite(want)
    if not np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]):
        return False
    eps = np.finfo(want.dtype).eps
    scale = np.max(np.abs(want[finite]), initial=0.0)
    return bool(np.allclose(got[finite], want[finite], rtol=8 * eps * terms, atol=8 * eps * terms * scale))


# ---- the search ---------------------------------------------------------------------------

def tune_kernel(kernel: KernelSpec, rt: Runtime, trials: int = DEFAULT_TRIALS, runs: int = 5,
                seconds: float = DEFAULT_SECONDS, progress: Optional[Callable[[int], None]] = None,
                measure: Callable[..., Measured] = measure, seed: int = 0) -> Tuned:
    """The fastest of up to `trials` measured candidates (the heuristic one included) whose
    output matches the heuristic schedule's on the same random inputs, found within about
    `seconds`; `progress(n)` is told each measured candidate."""
    start = time.perf_counter()
    target = rt.device.target
    expr, heuristic, lowered = pipeline.loops(kernel, target)
    inputs = random_inputs(kernel, rt)
    terms = terms_per_output(reductions(kernel.expr))
    first = measure(kernel, rt, pipeline.compile_loops(kernel, lowered, rt), inputs, runs)
    result = Tuned(tuned.describe(kernel.expr), heuristic, first.seconds, heuristic, first.seconds, trials=1)
    if progress:
        progress(1)
    space, model, rng = _Space(kernel, target), CostModel(), random.Random(seed)
    reduced = reduction_loops(expr)
    space.add(heuristic, lowered)
    model.add(heuristic, first.seconds)
    timed = {heuristic: first.seconds}
    seeds = alternative_schedules(expr, target)
    remembered = tuned.lookup(kernel.expr, rt)
    if remembered is not None:
        seeds.insert(0, remembered)
    batch_size = max(2, min(8, 2 * (os.cpu_count() or 1)))
    while result.trials < trials and time.perf_counter() - start < seconds:
        parents = sorted(timed, key=timed.get)[:BEAM]
        pool = [s for s in [*seeds, *(n for p in parents for n in neighbours(p, reduced))] if s not in space.tried]
        seeds = []
        batch = _pick(space, model.rank(list(dict.fromkeys(pool))), min(batch_size, trials - result.trials), rng)
        if not batch:
            break
        rt.precompile([(c.lowered, pipeline.prefix(kernel)) for c in batch])
        for candidate in batch:
            try:
                measured = measure(kernel, rt, pipeline.compile_loops(kernel, candidate.lowered, rt), inputs, runs)
            except Exception:   # (a schedule the device cannot run: too many threads, say)
                result.failed += 1
                continue
            result.trials += 1
            if progress:
                progress(1)
            if not same_output(measured.output, first.output, terms):
                result.rejected.append(candidate.schedule)
                continue
            timed[candidate.schedule] = measured.seconds
            model.add(candidate.schedule, measured.seconds)
            if measured.seconds < result.best_seconds:
                result.best, result.best_seconds = candidate.schedule, measured.seconds
    if result.best != heuristic:
        _confirm(kernel, rt, result, inputs, runs, measure)
    result.seconds = time.perf_counter() - start
    return result


def _confirm(kernel: KernelSpec, rt: Runtime, result: Tuned, inputs: list, runs: int, measure) -> None:
    """Measure the best candidate and the heuristic schedule again, in turns (a burst of noise
    hits both), and keep the heuristic one unless the best is faster by a margin: a candidate
    that won by luck would make every later run slower."""
    compiled = [pipeline.compile_kernel(kernel, rt, s) for s in (result.heuristic, result.best)]
    times: list[list[float]] = [[], []]
    for _ in range(CONFIRM_ROUNDS):
        for i in (0, 1):
            times[i].append(measure(kernel, rt, compiled[i], inputs, runs).seconds)
    heuristic, best = statistics.median(times[0]), statistics.median(times[1])
    result.heuristic_seconds = heuristic
    if best < MARGIN * heuristic:
        result.best_seconds = best
    else:
        result.best, result.best_seconds = result.heuristic, heuristic


def _pick(space: _Space, ranked: list[Schedule], size: int, rng: random.Random) -> list[Candidate]:
    """Up to `size` candidates that lower: the best ranked, and the last one drawn at random
    from the rest (exploration: the model is learned from few points)."""
    picked: list[Candidate] = []
    rest = list(ranked)
    while rest and len(picked) < size:
        explore = size > 1 and len(picked) == size - 1 and len(rest) > 1
        schedule = rest.pop(rng.randrange(len(rest)) if explore else 0)
        candidate = space.lowered(schedule)
        if candidate is not None:
            picked.append(candidate)
    return picked


# ---- tuning as kernels compile: LT_TUNE and lt.tune ---------------------------------------

@dataclass
class _Session:
    trials: int
    seconds: float
    runs: int = 5
    explicit: bool = False   # (inside `tune`: every kernel is tuned, a remembered one too)
    results: list[Tuned] = field(default_factory=list)
    choices: list["Choice"] = field(default_factory=list)
    done: set = field(default_factory=set)   # (kernel expressions tuned, choices made, in an explicit session)


_ACTIVE = threading.local()
_LOCK = threading.RLock()   # one tuning at a time: measurements need the device to themselves


def _session() -> Optional[_Session]:
    active = getattr(_ACTIVE, "session", None)
    if active is not None:
        return active
    if os.environ.get("LT_TUNE", "") in ("", "0"):
        return None
    return _Session(_number("LT_TUNE_TRIALS", DEFAULT_TRIALS, int), _number("LT_TUNE_SECONDS", DEFAULT_SECONDS, float))


def _number(name: str, default, kind):
    value = os.environ.get(name, "")
    try:
        return kind(value) if value else default
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a number (say {name}={default})") from None


def compile_kernel(kernel: KernelSpec, rt: Runtime) -> CompiledKernel:
    """The pipeline's compile_kernel (which uses a remembered tuned schedule, else the heuristic
    one), the kernel first tuned where tuning is on: LT_TUNE (a kernel with no tuned schedule
    remembered) or inside `tune` (every kernel, once)."""
    session = _session()
    if session is not None and kernel.root.size > 0:
        _tune(kernel, rt, session)
    return pipeline.compile_kernel(kernel, rt)


def _tune(kernel: KernelSpec, rt: Runtime, session: _Session) -> None:
    expr = kernel.expr
    with _LOCK:
        if kernel.expr in session.done or not session.explicit and tuned.lookup(expr, rt) is not None:
            return
        if session.explicit:
            session.done.add(kernel.expr)
        bar = tqdm(total=session.trials, desc=f"tuning {tuned.describe(expr)}", leave=False,
                   disable=None) if tqdm is not None else None
        try:
            found = tune_kernel(kernel, rt, session.trials, session.runs, session.seconds,
                                progress=bar.update if bar is not None else None)
        finally:
            if bar is not None:
                bar.close()
        session.results.append(found)
        tuned.remember(expr, rt, found.best, found.best_seconds, found.heuristic_seconds, found.trials)
        rt.by_expression.pop(kernel.expr)   # (compiled with the schedule it had before)


# ---- implementations chosen by measurement ------------------------------------------------

@dataclass
class Choice:
    """One op's implementations measured for one signature (shapes, dtypes, arguments)."""
    op: str
    signature: str
    seconds: dict[str, float]   # each implementation's median time, the default first
    chosen: str


CHOICE_ROUNDS = 3   # the implementations measured in turn, this many times (noise comes in bursts)


def choose(op: str, signature: str, device: str, candidates: dict[str, Callable[..., Any]],
           stand_ins: Callable[[], tuple]) -> str:
    """Which of `candidates` (name -> a function of the op's inputs; the first is the default) to
    use for `op` at `signature` on `device`. The one remembered (tuned.chosen) where there is one;
    else, where tuning is on (LT_TUNE, or inside `tune`, which measures again once) and no lt.jit
    capture is recording, each is run on `stand_ins()` (random inputs of the same shapes), its
    kernels tuned as they compile, timed in turns, and the fastest remembered beside the tuned
    schedules; else the default. The heuristics alone never leave the default."""
    rt = runtime(device)
    default = next(iter(candidates))
    remembered = tuned.chosen(op, signature, rt)
    session = _session()
    done = (op, signature, rt.device.name)
    if session is None or capture.current() is not None or done in session.done or \
            remembered in candidates and not session.explicit:
        return remembered if remembered in candidates else default
    with _LOCK:
        session.done.add(done)
        inputs = stand_ins()
        for fn in candidates.values():   # (compiled, and tuned, before anything is timed)
            _run(fn, inputs, rt)
        times: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(CHOICE_ROUNDS):
            for name, fn in candidates.items():
                for _ in range(max(1, session.runs)):
                    start = time.perf_counter()
                    _run(fn, inputs, rt)
                    times[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(t) for name, t in times.items()}
    # (another implementation replaces the default only where clearly faster, as a tuned schedule does)
    kept = {name: t for name, t in seconds.items() if name == default or t < seconds[default] * MARGIN}
    best = min(kept, key=kept.get)
    tuned.remember_choice(op, signature, rt, best, seconds[best], seconds[default], len(seconds))
    session.choices.append(Choice(op, signature, seconds, best))
    return best


def _run(fn: Callable[..., Any], inputs: tuple, rt: Runtime) -> None:
    fn(*inputs).realize()
    rt.device.synchronize()


@dataclass
class Report:
    """What `tune` found: per kernel, its heuristic and best time and the trials measured; per
    op whose implementations were measured (conv2d's), their times and the one chosen."""
    kernels: list[Tuned]
    choices: list[Choice] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{'kernel':<36} {'heuristic ms':>12} {'tuned ms':>9} {'speedup':>8} {'trials':>6} {'rejected':>8}"]
        for k in self.kernels:
            lines.append(f"{k.kernel:<36} {k.heuristic_seconds * 1e3:>12.3f} {k.best_seconds * 1e3:>9.3f} "
                         f"{k.speedup:>7.2f}x {k.trials:>6} {len(k.rejected):>8}")
        for c in self.choices:
            times = ", ".join(f"{name} {t * 1e3:.3f} ms" for name, t in c.seconds.items())
            lines.append(f"{c.op} {c.signature}: {times}: {c.chosen}")
        return "\n".join(lines)


def tune(fn: Callable[..., Any], *args: Any, trials: int = DEFAULT_TRIALS, seconds: float = DEFAULT_SECONDS,
         runs: int = 5, **kwargs: Any) -> Report:
    """Tune the kernels one call `fn(*args, **kwargs)` runs (its result realized), each with up
    to `trials` measured candidates in about `seconds`, and remember the best schedules: every
    later realize of those kernels, in this process or another, runs them. Plans built before
    are dropped (they hold the kernels as first compiled); an `lt.jit` function keeps what it
    captured: tune the plain function, and the jit's next capture (or process) uses the result.

    >>> x = lt.ones((64, 48))
    >>> report = lt.tune(lambda: (x * 2).sum(axis=1), trials=3)
    >>> [k.kernel for k in report.kernels], report.kernels[0].trials <= 3
    (['r 64x1 float32'], True)
    """
    if trials < 1:
        raise ValueError(f"lt.tune: trials must be at least 1 (the heuristic schedule), not {trials}")
    session = _Session(trials, seconds, runs, explicit=True)
    previous = getattr(_ACTIVE, "session", None)
    _ACTIVE.session = session
    try:
        _forget_plans()
        _realize_all(fn(*args, **kwargs))
    finally:
        _ACTIVE.session = previous
    _forget_plans()
    return Report(session.results, session.choices)


def _forget_plans() -> None:
    for rt in loaded_runtimes():
        rt.plans.clear()


def _realize_all(result: Any) -> None:
    """Realize every tensor in `result` (a tensor, or lists, tuples and dicts of them)."""
    stack = [result]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif hasattr(item, "realize"):
            item.realize()


def export(path, device: Optional[str] = None) -> int:
    """Write the tuning results remembered in the kernel cache (every device's) to `path` as a
    readable JSON log: per kernel its key, the schedule as a list of primitives and the measured
    times. The number of records written."""
    return tuned.export(path, _runtime(device))


def load(path, device: Optional[str] = None) -> int:
    """Remember the tuning results of a JSON log `export` wrote (on a machine of the same kind:
    a record applies only to the kernel, device and version it was measured for). The number of
    records loaded."""
    return tuned.load(path, _runtime(device))


def _runtime(device: Optional[str]) -> Runtime:
    return runtime(canonical_device(device) if device is not None else default_device())


__all__ = ["Candidate", "Choice", "CostModel", "Measured", "Report", "Tuned", "candidates", "choose", "compile_kernel",
           "export", "load", "measure", "neighbours", "random_inputs", "same_output", "tune", "tune_kernel"]
