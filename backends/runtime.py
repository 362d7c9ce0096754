"""One device's path from loop IR to a launch: render, name, compile through the cache, load."""
from __future__ import annotations

import hashlib
import sys
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from ..ir.loop import Kernel
from .cache import KernelCache, cache_key
from .lru import LRU
from .protocol import Buffer, Compiler, Device, Program, Stats

_PLACEHOLDER = "__lt_kernel__"
VERSION = "0.1.0"  # lazytensor's version: part of every cache key
# Per device: compiled kernels kept for reuse (a training script uses a few hundred; a process
# meeting ever new shapes keeps the most recent), and realize plans by graph structure. A device
# whose programs cost more memory says how many it keeps (`max_loaded_kernels`, protocol.py).
MAX_KERNELS = 1024
MAX_PLANS = 512


@dataclass
class CompiledKernel:
    name: str
    source: str
    kernel: Kernel
    program: Program
    size_values: tuple[int, ...] = ()   # a kernel with symbolic sizes, bound to these (kernel.sizes)


class Runtime:
    def __init__(self, device: Device, render: Callable[[Kernel], str], compiler: Compiler,
                 stats: Stats, debug: int = 0):
        self.device = device
        self.render = render
        self.compiler = compiler
        self.stats = stats
        self.debug = debug
        self.cache = KernelCache(stats)
        # Bounded: a kernel dropped from these lives on while a plan (or lt.jit) still uses it
        kernels = getattr(device, "max_loaded_kernels", MAX_KERNELS)
        self.loaded: LRU[CompiledKernel] = LRU(kernels)                        # by name (a hash of its source)
        self.by_expression: LRU[CompiledKernel] = LRU(kernels)                 # by fused kernel expression
        self.plans: LRU[Any] = LRU(min(MAX_PLANS, max(1, kernels // 2)))     # realize plans by graph structure
        self.families: LRU[Any] = LRU(MAX_PLANS)   # graphs by skeleton, for size templates (lazytensor/sizes.py)
        self.outlines: LRU[Any] = LRU(MAX_PLANS)   # graphs' integers by skeleton without EXPANDs (sizes.py)
        # one compile at a time per device: threads that need the same kernel compile it once
        self.compiling = threading.RLock()

    def forget_choices(self) -> None:
        """Drop the kernels chosen per kernel expression and the realize plans, so that every
        graph is planned and every kernel scheduled again (a schedule written, tuning switched):
        their programs stay loaded and cached, a kernel compiled the same way is found there."""
        self.by_expression.clear()
        self.plans.clear()

    def compile(self, kernel: Kernel, prefix: str) -> CompiledKernel:
        """The loaded program for `kernel` (named by its content, so equal kernels share it)."""
        text, name = self._named(kernel, prefix)
        with self.compiling:
            return self._compile(kernel, text, name)

    def _named(self, kernel: Kernel, prefix: str) -> tuple[str, str]:
        """The kernel's source with a placeholder for its name, and its name (by content)."""
        text = self.render(replace(kernel, name=_PLACEHOLDER))
        return text, f"{prefix}_{hashlib.sha256(text.encode()).hexdigest()[:12]}"

    def _key(self, source: str) -> str:
        return cache_key(source, self.compiler.identity, VERSION)

    def precompile(self, kernels: list[tuple[Kernel, str]]) -> None:
        """Compile several (kernel, prefix) at once into the cache, side by side where the
        compiler can (`compile_many`); a later `compile` of each then only loads it. A kernel
        that fails to compile is left for its `compile` to report."""
        jobs: dict[str, tuple[str, str]] = {}
        for kernel, prefix in kernels:
            text, name = self._named(kernel, prefix)
            source = text.replace(_PLACEHOLDER, name)
            key = self._key(source)
            if name not in self.loaded and not self.cache.has(key):
                jobs[key] = (source, name)
        many = getattr(self.compiler, "compile_many", None)
        if many is None or len(jobs) < 2:
            return
        start = time.perf_counter()
        binaries = many(list(jobs.values()))
        self.stats.compile_seconds += time.perf_counter() - start
        for key, binary in zip(jobs, binaries):
            if isinstance(binary, bytes):
                self.stats.kernels_compiled += 1
                self.cache.put(key, binary)

    def _compile(self, kernel: Kernel, text: str, name: str) -> CompiledKernel:
        known = self.loaded.get(name)
        if known is not None:
            self.stats.memory_cache_hits += 1
            return known
        source = text.replace(_PLACEHOLDER, name)
        key = self._key(source)

        def compile_now() -> bytes:
            start = time.perf_counter()
            binary = self.compiler.compile(source, name)
            self.stats.compile_seconds += time.perf_counter() - start
            self.stats.kernels_compiled += 1
            return binary

        # (a cached binary that fails to load is treated as corrupt: compiled again and rewritten)
        program = self.cache.load_or_compile(key, compile_now, lambda binary: self.device.load(binary, name))
        compiled = CompiledKernel(name, source, kernel, program)
        self.loaded.put(name, compiled)
        return compiled

    def run_opaque(self, op: Any, arg: Any, inputs: list[Buffer], out: Buffer) -> None:
        """An opaque op (sort, cumulative sum, ...) as one step, by the device's own code."""
        start = time.perf_counter()
        self.device.run_opaque(op, arg, inputs, out)
        self.stats.kernels_launched += 1
        if self.debug:
            elapsed = (time.perf_counter() - start) * 1e6
            print(f"lt: {self.device.name} {op.name.lower():<40} out {'x'.join(map(str, out.shape)) or 'scalar':<16} "
                  f"{elapsed:10.1f} us", file=sys.stderr)

    def launch(self, compiled: CompiledKernel, buffers: list[Buffer]) -> None:
        start = time.perf_counter() if self.debug else 0.0
        self.device.launch(compiled.program, buffers, compiled.kernel, compiled.size_values)
        self.stats.kernels_launched += 1
        if self.debug:
            self.device.synchronize()
            elapsed = (time.perf_counter() - start) * 1e6
            shape = "x".join(map(str, buffers[0].shape)) or "scalar"
            print(f"lt: {self.device.name} {compiled.name:<40} out {shape:<16} {elapsed:10.1f} us", file=sys.stderr)
