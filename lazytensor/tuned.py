"""Tuned schedules remembered: the fastest schedule the tuner found for a kernel, kept on disk
beside the compiled kernels and used by every later compile of that kernel, in any process.

    lookup(expr, rt) -> Schedule | None    the remembered schedule of a kernel's expression
    remember(expr, rt, tuned)              record a tuning result
    chosen(op, signature, rt) -> name      the implementation measured fastest (tuning.choose)
    export(path) / load(path)              the records as a readable JSON log, to move between machines

A record is one line of JSON in `tuning.jsonl` in the kernel cache's directory (LT_CACHE_DIR):

    {"key": "9f2c...", "kernel": "r 8x64x56x56x1x1x1 float32", "device": "cpu",
     "schedule": [["Split", "i3", 4], ["Parallel", "i0xi2"], ...],
     "seconds": 0.00206, "heuristic_seconds": 0.0028, "trials": 32, "check": "51be..."}

`key` hashes what the schedule was measured for: the kernel's structure (its expression as
`pretty` prints it: ops, dtypes, shapes, the views it reads; the schedule names the axes that
`collapse_axes` makes of it, a function of it), the device (its target
description and compiler identity) and the library version. A record never applies elsewhere.

Several processes share the file. A record is appended with one `write` (O_APPEND: lines from
different processes do not interleave); a reader re-reads the file when its size changed (a
process that tunes while another runs is seen at that one's next compile). The file is as
trusted as the kernels beside it (the same directory checks, cache.py) and no more: a line that
does not parse, whose `check` (a hash of the line's other fields) does not match, or that names
an unknown primitive is skipped with a warning. A schedule only orders the same computation, and
the pipeline lowers a remembered one like any other (one that no longer lowers falls back to the
heuristic schedule, with a warning). Where two records share a key, the faster one is used. The
file is rewritten with one record per key (a temporary file renamed over it) when it passes
COMPACT_BYTES.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Optional

from .backends.cache import cache_key
from .backends.runtime import VERSION, Runtime
from .ir.graph import Node, pretty
from .scheduler import schedule as S
from .scheduler.schedule import Schedule

FILE = "tuning.jsonl"
COMPACT_BYTES = 4 << 20
PRIMITIVES = {cls.__name__: cls for cls in (S.Split, S.Reorder, S.Parallel, S.Vectorize, S.Unroll, S.Fuse,
                                            S.Bind, S.CacheRead, S.CacheWrite, S.PartialSum)}


def device_key(rt: Runtime) -> str:
    """What a measurement depends on besides the kernel: the target description (every field but
    the scalar-op table, which the compiler identity determines), the compiler and the version."""
    target = rt.device.target
    fields = [f"{f.name}={getattr(target, f.name)}" for f in dataclasses.fields(target) if f.name != "scalar_ops"]
    return cache_key(*fields, rt.compiler.identity, VERSION)


def kernel_key(expr: Node, rt: Runtime) -> str:
    """The record key of a kernel's expression (`KernelSpec.expr`) on `rt`'s device."""
    return cache_key("tuned", pretty([expr]), device_key(rt))


def describe(expr: Node) -> str:
    """A short name for a kernel in logs and reports: 'r 64x64 float32' (r: it reduces)."""
    kind = "r" if S.reductions(expr) else "e"
    return f"{kind} {'x'.join(map(str, expr.shape)) or 'scalar'} {expr.dtype.name}"


def encode(schedule: Schedule) -> list[list]:
    """A schedule as JSON-ready lists: [primitive name, field values...]."""
    return [[type(p).__name__, *(list(v) if isinstance(v, tuple) else v for v in dataclasses.astuple(p))]
            for p in schedule]


def decode(items: Any) -> Schedule:
    """The schedule `encode` gave; ValueError where `items` is not one."""
    if not isinstance(items, list):
        raise ValueError("a schedule is a list of primitives")
    schedule = []
    for item in items:
        if not isinstance(item, list) or not item or item[0] not in PRIMITIVES:
            raise ValueError(f"not a schedule primitive: {item!r}")
        cls = PRIMITIVES[item[0]]
        fields = dataclasses.fields(cls)
        values = item[1:]
        if len(values) != len(fields):
            raise ValueError(f"{item[0]} takes {len(fields)} values, not {len(values)}: {item!r}")
        args = []
        for value in values:
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = tuple(value)
            elif not (value is None or isinstance(value, (str, int)) and not isinstance(value, bool)):
                raise ValueError(f"not a primitive's value: {value!r} in {item!r}")
            args.append(value)
        schedule.append(cls(*args))
    return tuple(schedule)


def _check(record: dict) -> str:
    body = json.dumps({k: v for k, v in record.items() if k != "check"}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def make_record(key: str, expr: Node, rt: Runtime, schedule: Schedule, seconds: float,
                heuristic_seconds: float, trials: int) -> dict:
    return _record(key, describe(expr), rt, schedule, seconds, heuristic_seconds, trials)


def _record(key: str, name: str, rt: Runtime, schedule: Schedule, seconds: float, heuristic_seconds: float,
            trials: int, **more: Any) -> dict:
    """A record of `name` (a kernel, or an op's signature) with its check."""
    record = {"key": key, "kernel": name, "device": rt.device.name, "schedule": encode(schedule),
              "seconds": seconds, "heuristic_seconds": heuristic_seconds, "trials": trials, **more}
    record["check"] = _check(record)
    return record


def _parse(line: str) -> Optional[tuple[dict, Schedule]]:
    """A line's record and schedule; None (warned) where it is not a valid record."""
    try:
        record = json.loads(line)
        if not isinstance(record, dict) or record.get("check") != _check(record):
            raise ValueError("its check does not match its content")
        if not isinstance(record.get("key"), str) or not isinstance(record.get("seconds"), (int, float)):
            raise ValueError("it has no key or time")
        if not isinstance(record.get("algorithm", ""), str):
            raise ValueError("its algorithm is not a name")
        return record, decode(record["schedule"])
    except (ValueError, TypeError) as error:
        warnings.warn(f"lazytensor: skipping a tuning record that is not valid ({error}): {line[:120]!r}")
        return None


class Store:
    """The records of one directory (or of memory alone, where there is no usable directory)."""

    def __init__(self, directory: Optional[Path], writable: bool):
        self.path = directory / FILE if directory is not None else None
        self.writable = writable and directory is not None
        self.records: dict[str, tuple[dict, Schedule]] = {}
        self.unsaved: dict[str, tuple[dict, Schedule]] = {}   # records the file could not take
        self.read_bytes = 0     # how much of the file was read (it only grows, but for compaction)
        self.lock = threading.Lock()

    def add(self, record: dict) -> None:
        """Keep `record` (where it is faster than the one known for its key) and append it."""
        parsed = _parse(json.dumps(record))
        if parsed is None:
            return
        with self.lock:
            self._refresh()
            self._keep(*parsed)
            if not self._append(json.dumps(record, sort_keys=True) + "\n"):
                self.unsaved[record["key"]] = self.records[record["key"]]

    def all(self) -> list[dict]:
        with self.lock:
            self._refresh()
            return [record for record, _ in self.records.values()]

    def _keep(self, record: dict, schedule: Schedule) -> None:
        known = self.records.get(record["key"])
        if known is None or record["seconds"] <= known[0]["seconds"]:
            self.records[record["key"]] = (record, schedule)

    def _refresh(self) -> None:
        """Read what was appended since the last read (the whole file where it shrank: rewritten)."""
        if self.path is None:
            return
        try:
            size = os.stat(self.path).st_size
        except OSError:   # (none yet, or removed: what it held is gone)
            size = 0
        if size == self.read_bytes:
            return
        start = self.read_bytes if size > self.read_bytes else 0
        if start == 0:   # (rewritten or removed: read afresh; what was never written stays)
            self.records = dict(self.unsaved)
            self.read_bytes = 0
            if size == 0:
                return
        try:
            with open(self.path, "rb") as file:
                file.seek(start)
                data = file.read(size - start)
        except OSError as error:
            warnings.warn(f"lazytensor: cannot read tuning records {self.path}: {error}")
            self.read_bytes = size
            return
        end = data.rfind(b"\n") + 1   # (a line being written is read once it is whole)
        self.read_bytes = start + end
        for line in data[:end].decode("utf-8", "replace").splitlines():
            if line.strip():
                parsed = _parse(line)
                if parsed is not None:
                    self._keep(*parsed)

    def _append(self, line: str) -> bool:
        """Append a line to the file; whether it was written."""
        if not self.writable or self.path is None:
            return False
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
            size = os.stat(self.path).st_size
            if size > COMPACT_BYTES:
                self._compact()
            elif size == self.read_bytes + len(line.encode()):   # (nobody else wrote meanwhile)
                self.read_bytes = size
        except OSError as error:
            warnings.warn(f"lazytensor: cannot write tuning records to {self.path} ({error}); "
                          "tuning results are kept in this process only")
            self.writable = False
            return False
        return True

    def _compact(self) -> None:
        assert self.path is not None
        temporary = self.path.with_name(f".{FILE}.{os.getpid()}.tmp")
        lines = "".join(json.dumps(record, sort_keys=True) + "\n" for record, _ in self.records.values())
        temporary.write_text(lines)
        os.replace(temporary, self.path)
        self.read_bytes = len(lines.encode())


_STORES: dict[Optional[Path], Store] = {}
_STORES_LOCK = threading.Lock()


def store(rt: Runtime) -> Store:
    """The store in `rt`'s kernel cache directory (one per directory in a process)."""
    directory = rt.cache.directory
    with _STORES_LOCK:
        found = _STORES.get(directory)
        if found is None:
            found = _STORES[directory] = Store(directory, rt.cache.writable)
        return found


# LT_TUNED=0: compile with the heuristic schedules, remembered ones ignored (to compare; the
# benchmark switches it, then drops the compiled kernels and plans: benchmarks/bench_tune.py)
ENABLED = os.environ.get("LT_TUNED", "1") != "0"


def lookup(expr: Node, rt: Runtime) -> Optional[Schedule]:
    """The remembered schedule of kernel expression `expr` (`KernelSpec.expr`) on `rt`'s device, or None.
    (Nothing is hashed while no record is known: a process that never tuned pays a stat.)"""
    hit = _remembered(rt, lambda: kernel_key(expr, rt))
    return hit[1] if hit is not None else None


def _remembered(rt: Runtime, key: "Callable[[], str]") -> Optional[tuple[dict, Schedule]]:
    """The record (and its schedule) of `key()` in `rt`'s store, or None; the key is only
    computed where the store holds a record (nothing is hashed in a process that never tuned)."""
    if not ENABLED:
        return None
    found = store(rt)
    with found.lock:
        found._refresh()
        if not found.records:
            return None
    return found.records.get(key())


# Schedules written by hand (lt.schedule, schedules.py): per kernel expression and device, over
# the kernel's own axes (not collapsed), before any remembered one; in memory only, the last
# WRITTEN_MOST kept.
WRITTEN_MOST = 256
_written: "OrderedDict[tuple[Node, str], Schedule]" = OrderedDict()
_written_lock = threading.Lock()


def written(expr: Node, rt: Runtime) -> Optional[Schedule]:
    """The schedule written by hand for kernel expression `expr` on `rt`'s device, or None."""
    if not _written:
        return None
    with _written_lock:
        return _written.get((expr, rt.device.name))


def write(expr: Node, rt: Runtime, schedule: Optional[Schedule]) -> None:
    """Use `schedule` (None: the automatic one again) for every later compile of `expr` on `rt`'s
    device; the kernels and plans compiled before are dropped (compiled again when next run)."""
    with _written_lock:
        key = (expr, rt.device.name)
        _written.pop(key, None)
        if schedule is not None:
            _written[key] = schedule
            while len(_written) > WRITTEN_MOST:
                _written.popitem(last=False)
    rt.forget_choices()


def remember(expr: Node, rt: Runtime, schedule: Schedule, seconds: float, heuristic_seconds: float,
             trials: int) -> None:
    store(rt).add(make_record(kernel_key(expr, rt), expr, rt, schedule, seconds, heuristic_seconds, trials))


# Implementations chosen by measurement (tuning.choose): which of an op's ways to compute it
# (conv2d: the direct kernel or Winograd's) was fastest for its shapes and dtypes on a device. A
# record of the same store, its schedule empty, its "algorithm" the name chosen.

def choice_key(op: str, signature: str, rt: Runtime) -> str:
    return cache_key("algorithm", op, signature, device_key(rt))


def chosen(op: str, signature: str, rt: Runtime) -> Optional[str]:
    """The implementation of `op` remembered for `signature` on `rt`'s device, or None."""
    hit = _remembered(rt, lambda: choice_key(op, signature, rt))
    return hit[0].get("algorithm") if hit is not None else None


def remember_choice(op: str, signature: str, rt: Runtime, algorithm: str, seconds: float,
                    default_seconds: float, trials: int) -> None:
    store(rt).add(_record(choice_key(op, signature, rt), f"{op} {signature}", rt, (), seconds, default_seconds,
                          trials, algorithm=algorithm))


def export(path: str | os.PathLike, rt: Runtime) -> int:
    """Write the tuning records of `rt`'s cache directory (every device's) to `path` as a JSON
    log; the number written."""
    records = store(rt).all()
    Path(path).write_text(json.dumps({"lazytensor": VERSION, "records": records}, indent=1) + "\n")
    return len(records)


def load(path: str | os.PathLike, rt: Runtime) -> int:
    """Add the records of a JSON log that `export` wrote to `rt`'s store (they apply where their
    key matches: the same kernel on the same kind of device and version); the number added."""
    try:
        log = json.loads(Path(path).read_text())
        records = log["records"]
        if not isinstance(records, list):
            raise TypeError("'records' is not a list")
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise ValueError(f"{path} is not a lazytensor tuning log (lt.tuning.export writes one): {error}") from None
    target = store(rt)
    added = 0
    for record in records:
        if isinstance(record, dict) and _parse(json.dumps(record)) is not None:
            target.add(record)
            added += 1
    return added


__all__ = ["Store", "choice_key", "chosen", "decode", "describe", "device_key", "encode", "export", "kernel_key",
           "load", "lookup", "make_record", "remember", "remember_choice", "store"]
