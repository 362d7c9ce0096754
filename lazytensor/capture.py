"""The capture in progress, for the few places that behave differently while `lt.jit` records a
function (lazytensor/jit.py does the recording; this module only holds it, and imports nothing,
so that the tensor code can ask cheaply):

- a value read into Python (`.numpy()`, `.item()`, `bool(x)`, ...) is refused when it depends on
  the call's inputs or state: the replay would not run that Python again;
- random numbers are made anew at each replay, not fixed at capture;
- Python-side settings that decide the graph (a module's training flag, an optimizer's learning
  rate) are guards: a replay that finds another value captures again.

Outside a capture every hook is one test of `RECORDING is None`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, Optional

# The Recording (jit.py) of the capture in progress, or None. One capture at a time in a process.
RECORDING: Optional[Any] = None


class CaptureError(RuntimeError):
    """What `lt.jit` cannot capture: raised at the call that does it, with what to do instead."""


def current() -> Optional[Any]:
    """The recording in progress when this thread is the one capturing (others run as usual)."""
    recording = RECORDING
    return recording if recording is not None and recording.thread == threading.get_ident() else None


def guard(key: Hashable, read: Callable[[], Hashable]) -> None:
    """While capturing: the captured kernels are valid only while `read()` gives what it gives
    now; a replay that finds another value captures the function again. One guard per `key`
    (what it checks, such as a module's training flag), however often the function asks."""
    recording = current()
    if recording is not None and key not in recording.guarded:
        recording.guarded.add(key)
        recording.guards.append((read, read()))


def ran(rt: Any, plan: Any, buffers: list, outputs: list) -> None:
    """While capturing: realize ran `plan` on `buffers` and it wrote `outputs` (recorded)."""
    recording = current()
    if recording is not None:
        recording.ran(rt, plan, buffers, outputs)


def fresh(tensor: Any, make: Callable[[], Any]) -> None:
    """While capturing: `tensor` holds new random values at every call; a replay makes them with
    `make()` (a tensor of the same layout) instead of reusing the captured ones."""
    recording = current()
    if recording is not None:
        recording.fresh(tensor, make)


def reading(buffer: Any) -> None:
    """Before a realized buffer's values are read into Python: refused while capturing when they
    depend on the call's inputs or state."""
    recording = current()
    if recording is not None:
        recording.read(buffer)
