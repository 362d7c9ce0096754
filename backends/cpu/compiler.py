"""Compiler: LLVM IR text -> host object code, with llvmlite at O3 for this CPU's features."""
from __future__ import annotations

import functools
import threading

import llvmlite
import llvmlite.binding as llvm

from ...ir.target import Target


# LLVM's global context and a target machine are not safe to use from two threads at once: every
# use of LLVM in the cpu backend (parse, optimize, emit, link, free) holds this lock. Reentrant:
# freeing a kernel's code can happen inside a locked section, when a garbage collection runs there.
LLVM_LOCK = threading.RLock()


@functools.lru_cache(maxsize=None)
def target_machine() -> "llvm.TargetMachine":
    """The host's target machine, shared by the compiler and the JIT (it lives as long as the
    process)."""
    return new_target_machine()


def new_target_machine() -> "llvm.TargetMachine":
    """A target machine of one's own: an execution engine owns the one it is given and frees it
    with itself."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    # jitdefault + pic: the object file can be loaded at any address by the JIT, now or from disk
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, codemodel="jitdefault", reloc="pic")


def host_target() -> Target:
    import os
    features = llvm.get_host_cpu_features()
    simd = 64 if features.get("avx512f") else 32 if features.get("avx2") or features.get("avx") else 16
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return Target("cpu", simd_bytes=simd, cores=cores,
                  features=f"{llvm.get_host_cpu_name()} {features.flatten()}")


class LLVMCompiler:
    def __init__(self) -> None:
        tm = target_machine()
        self.identity = f"llvmlite {llvmlite.__version__} llvm {llvm.llvm_version_info} {tm.triple} " + host_target().features

    def compile(self, source: str, name: str) -> bytes:
        with LLVM_LOCK:
            return self._compile(source, name)

    def _compile(self, source: str, name: str) -> bytes:
        tm = target_machine()
        try:
            module = llvm.parse_assembly(source)
            module.verify()
        except RuntimeError as error:
            raise RuntimeError(f"cpu: kernel {name} failed to compile: {error}\n"
                               "(run with LT_DEBUG=2 to print its source)") from None
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = True
        options.slp_vectorization = True
        passes = llvm.create_pass_builder(tm, options)
        passes.getModulePassManager().run(module, passes)
        return tm.emit_object(module)

    def assembly(self, source: str) -> str:
        """The optimized machine code of `source` (for tests and LT_DEBUG)."""
        with LLVM_LOCK:
            return self._assembly(source)

    def _assembly(self, source: str) -> str:
        tm = target_machine()
        module = llvm.parse_assembly(source)
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        passes = llvm.create_pass_builder(tm, options)
        passes.getModulePassManager().run(module, passes)
        return tm.emit_assembly(module)
