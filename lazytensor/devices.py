"""Devices by name, each with its runtime (created on first use), and the shared counters."""
from __future__ import annotations

import functools
import os
import threading

from .backends.cache import KernelCache
from .backends.protocol import Stats
from .backends.runtime import Runtime

STATS = Stats()
_RUNTIMES: dict[str, Runtime] = {}
_MAKING = threading.Lock()


def debug_level() -> int:
    try:
        return int(os.environ.get("LT_DEBUG", "0") or 0)
    except ValueError:
        return 0


def devices() -> tuple[str, ...]:
    """The devices available in this process: "cpu" always, then "opencl:N" for each OpenCL
    device (with pyopencl installed) and "cuda:N" for each CUDA GPU (with pycuda installed).

    >>> "cpu" in lt.devices()
    True
    """
    return ("cpu", *_backend_names("opencl"), *_backend_names("cuda"))


@functools.lru_cache(maxsize=None)
def _backend_names(kind: str) -> list[str]:
    """The devices of one backend; none where its Python package (or driver) is missing."""
    try:
        if kind == "opencl":
            from .backends.opencl.device import device_names
        else:
            from .backends.cuda.device import device_names
    except ImportError:
        return []
    return device_names()


def default_device() -> str:
    name = os.environ.get("LT_DEVICE", "cpu")
    try:
        return canonical_device(name)
    except ValueError as error:
        raise ValueError(f"LT_DEVICE={name}: {error}") from None


def canonical_device(name: object) -> str:
    """The canonical name of a device: "cpu", "opencl:0", "cuda:1" (a bare "opencl" or "cuda"
    is device 0); a ValueError listing the devices there are for one that is not here."""
    if name is None:
        return default_device()
    text = str(name).strip().lower()
    if text in ("cpu", "cpu:0"):
        return "cpu"
    if text in ("opencl", "cuda", "gpu"):
        text = {"gpu": "cuda"}.get(text, text) + ":0"
    if text in devices():
        return text
    raise ValueError(f"device {name!r} is not available; available devices: {', '.join(devices())}")


def runtime(device: str) -> Runtime:
    rt = _RUNTIMES.get(device)
    if rt is None:
        with _MAKING:   # one runtime per device, however many threads ask for it first
            if device not in _RUNTIMES:
                _RUNTIMES[device] = _make_runtime(canonical_device(device))
            rt = _RUNTIMES[device]
    return rt


def loaded_runtimes() -> list[Runtime]:
    """The runtimes of the devices used so far in this process."""
    return list(_RUNTIMES.values())


def _make_runtime(device: str) -> Runtime:
    kind, _, index = device.partition(":")
    if kind == "cpu":
        from .backends.cpu.compiler import LLVMCompiler
        from .backends.cpu.device import CPUDevice
        from .backends.cpu.render import render
        return Runtime(CPUDevice(), render, LLVMCompiler(), STATS, debug_level())
    from .backends import cstyle
    if kind == "opencl":
        from .backends.opencl.device import OpenCLCompiler, OpenCLDevice
        gpu = OpenCLDevice(int(index))
        return Runtime(gpu, functools.partial(cstyle.render, dialect=cstyle.OPENCL), OpenCLCompiler(gpu),
                       STATS, debug_level())
    from .backends.cuda.device import CUDADevice
    gpu = CUDADevice(int(index))
    return Runtime(gpu, functools.partial(cstyle.render, dialect=cstyle.CUDA), gpu.compiler(),
                   STATS, debug_level())


def synchronize(device: object = None) -> None:
    """Wait until every kernel launched on `device` (default: the default device) has finished
    (on a GPU, launches return before the kernel ends; reading values waits by itself).

    >>> lt.synchronize("cpu")
    """
    name = canonical_device(device)
    if name in _RUNTIMES:
        _RUNTIMES[name].device.synchronize()


def cache_clear() -> None:
    """Forget every compiled kernel: the disk cache's entries, and in this process the binaries,
    loaded programs and realize plans of every device. Later realizes compile again.

    >>> lt.cache_clear()
    """
    for rt in _RUNTIMES.values():
        rt.cache.clear()
        rt.loaded.clear()
        rt.forget_choices()
    if not _RUNTIMES:   # (no device used yet: the disk cache alone)
        KernelCache(STATS).clear()


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
        "transfers": STATS.transfers,
        "tuned_kernels": STATS.tuned_kernels,
        "plan_cache_hits": STATS.plan_cache_hits,
        "jit_captures": STATS.jit_captures,
        "jit_replays": STATS.jit_replays,
        "size_templates": STATS.size_templates,
        "size_templates_refused": STATS.size_templates_refused,
        "sized_plans": STATS.sized_plans,
    }
