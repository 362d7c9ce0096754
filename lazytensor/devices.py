"""Devices by name, each with its runtime (created on first use), and the shared counters."""
from __future__ import annotations

import os

from .backends.protocol import Stats
from .backends.runtime import Runtime

STATS = Stats()
_RUNTIMES: dict[str, Runtime] = {}


def debug_level() -> int:
    try:
        return int(os.environ.get("LT_DEBUG", "0") or 0)
    except ValueError:
        return 0


def devices() -> list[str]:
    """The devices available in this process.

    >>> "cpu" in lt.devices()
    True
    """
    return ["cpu"]


def default_device() -> str:
    return canonical_device(os.environ.get("LT_DEVICE", "cpu"))


def canonical_device(name: object) -> str:
    if name is None:
        return default_device()
    text = str(name).strip().lower()
    if text in ("cpu", "cpu:0"):
        return "cpu"
    raise ValueError(f"device {name!r} is not available; available devices: {', '.join(devices())}")


def runtime(device: str) -> Runtime:
    if device not in _RUNTIMES:
        if device != "cpu":
            raise ValueError(f"device {device!r} is not available; available devices: {', '.join(devices())}")
        from .backends.cpu.compiler import LLVMCompiler
        from .backends.cpu.device import CPUDevice
        from .backends.cpu.render import render
        _RUNTIMES[device] = Runtime(CPUDevice(), render, LLVMCompiler(), STATS, debug_level())
    return _RUNTIMES[device]


def stats() -> dict:
    """Counters since the process started: kernels launched/compiled, cache hits, compile time.

    >>> sorted(lt.stats())[:2]
    ['compile_seconds', 'disk_cache_hits']
    """
    return {
        "kernels_launched": STATS.kernels_launched,
        "kernels_compiled": STATS.kernels_compiled,
        "memory_cache_hits": STATS.memory_cache_hits,
        "disk_cache_hits": STATS.disk_cache_hits,
        "compile_seconds": STATS.compile_seconds,
    }
