"""Compiler: LLVM IR text -> host object code, with llvmlite at O3 for this CPU's features."""
from __future__ import annotations

import functools
import os
import queue
import re
import struct
import subprocess
import sys
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import llvmlite
import llvmlite.binding as llvm

from ...ir.target import Target
from .compile_worker import compile_object, optimized
from .render_ops import scalar_ops


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


# Stack of a worker thread: kernels keep their local arrays there (a register tile, a packed
# panel of up to 512 KB); 16 MB of address space, of which only the pages touched are memory.
WORKER_STACK_BYTES = 16 << 20
# The most a kernel's local arrays may take (the cpu Target's local_memory_bytes): half the
# smaller of a worker's stack and a main thread's default one (8 MB), which runs chunks too.
# The heuristics stay under ~600 KB; an explicit schedule past it is refused, not run to a crash.
LOCAL_ARRAY_MAX_BYTES = min(WORKER_STACK_BYTES, 8 << 20) // 2


def host_target() -> Target:
    features = llvm.get_host_cpu_features()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return Target("cpu", simd_bytes=_host_vector_bytes(), cores=cores, hoists_reductions=True,
                  local_memory_bytes=LOCAL_ARRAY_MAX_BYTES, vector_registers=vector_registers(features),
                  l1_bytes=cache_bytes(1, Target.l1_bytes), l2_bytes=cache_bytes(2, Target.l2_bytes),
                  features=f"{llvm.get_host_cpu_name()} {features.flatten()}", scalar_ops=scalar_ops())


def cache_bytes(level: int, default: int) -> int:
    """The size of a core's data cache at `level` as Linux describes the first cpu's (a Zen 3:
    32 KB and 512 KB, a Zen 5 1 MB of L2); `default` where it does not (another system)."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(os.listdir(root)):
            if not index.startswith("index"):
                continue
            fields = {}
            for name in ("level", "type", "size"):
                with open(os.path.join(root, index, name)) as f:
                    fields[name] = f.read().strip()
            if fields["level"] == str(level) and fields["type"] in ("Data", "Unified"):
                size = fields["size"]
                return int(size[:-1]) << {"K": 10, "M": 20}[size[-1]] if size[-1] in "KM" else int(size)
    except (OSError, ValueError, KeyError):
        pass
    return default


def vector_registers(features: "llvm.FeatureMap") -> int:
    """The host's vector registers: 32 with AVX-512 (zmm0-31; ymm16-31 too, on a CPU that prefers
    256-bit vectors) and on aarch64 (v0-v31), 16 on other x86-64 (ymm0-15 with AVX2)."""
    if llvm.get_default_triple().startswith(("aarch64", "arm64")):
        return 32
    return 32 if features.get("avx512f") else 16


# The vector width the scheduler plans for is the one LLVM's loop vectorizer picks on its own for
# this CPU, found by compiling a probe loop: the feature list cannot tell it (Intel's server CPUs,
# skylake-avx512 on, have avx512f but are tuned "prefer-256-bit": 512-bit code lowers their clock;
# AMD's Zen 4 and 5 run it at full speed), and timing 256- against 512-bit code at start-up is noisy
# and misses the clock drop, which slows the code around the kernel. Measured on this Zen 5 (one
# thread, 64K values): zmm code is 1.64-1.79x as fast as ymm for float exp, log, tanh and double
# exp, as the probe's 64 bytes here says. The probe costs 8-16 ms, once per process (import and a
# first kernel take ~450 ms).
_PROBE_LOOP = """
define void @probe(ptr noalias %out, ptr noalias %in, i64 %n) {
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %src = getelementptr inbounds float, ptr %in, i64 %i
  %x = load float, ptr %src
  %y = call float @llvm.fma.f32(float %x, float 3.0, float 1.0)
  %dst = getelementptr inbounds float, ptr %out, i64 %i
  store float %y, ptr %dst
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""


def preferred_vector_bytes(tm: "llvm.TargetMachine") -> int:
    """The width in bytes of the vectors LLVM's loop vectorizer makes of a float loop for `tm`
    (with no width hint: its own choice for the CPU): 64 on a Zen 5, 32 on skylake-avx512 and
    AVX2 CPUs, 16 with SSE only."""
    header = f'target triple = "{tm.triple}"\ntarget datalayout = "{tm.target_data}"\n'
    module = optimized(header + _PROBE_LOOP, tm)
    lanes = [int(n) for n in re.findall(r"<(\d+) x float>", str(module))]
    return 4 * max(lanes) if lanes else 16   # (none: scalable vectors, or none at all)


@functools.lru_cache(maxsize=None)
def _host_vector_bytes() -> int:
    with LLVM_LOCK:
        return preferred_vector_bytes(target_machine())


class LLVMCompiler:
    """Compiles in a worker process (compile_worker.py: bounded memory, and LLVM crashing on a
    module cannot take the interpreter down); in-process where no worker can be started, or with
    LT_COMPILE_WORKER=0."""

    def __init__(self) -> None:
        tm = target_machine()
        self.identity = f"llvmlite {llvmlite.__version__} llvm {llvm.llvm_version_info} {tm.triple} " + host_target().features
        self.cpu, self.features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        self.worker = _Worker(self.cpu, self.features) if os.environ.get("LT_COMPILE_WORKER", "1") != "0" else None
        self.helpers: list[_Worker] = []   # more workers, for compile_many

    def compile(self, source: str, name: str) -> bytes:
        try:
            if self.worker is not None:
                try:
                    return self.worker.compile(source)
                except OSError as error:   # no process could be started: compile here from now on
                    warnings.warn(f"lazytensor: cannot start a compile worker process ({error}); compiling "
                                  "in this process (its memory grows ~70 KB a kernel, an llvmlite leak)")
                    self.worker = None
            with LLVM_LOCK:
                return _without_remarks(compile_object, source, self.cpu, self.features)
        except RuntimeError as error:
            raise _failed(name, error) from None

    def compile_many(self, jobs: list[tuple[str, str]]) -> list:
        """The object files of several (source, name) jobs, compiled side by side in up to one
        worker process per core (the autotuner compiles its candidates so); per job its bytes,
        or the RuntimeError `compile` would have raised."""
        if self.worker is None or len(jobs) < 2:
            return [_outcome(self.compile, source, name) for source, name in jobs]
        while len(self.helpers) < min(len(jobs), os.cpu_count() or 1) - 1:
            self.helpers.append(_Worker(self.cpu, self.features))
        idle: "queue.Queue[_Worker]" = queue.Queue()
        for worker in [self.worker, *self.helpers]:
            idle.put(worker)

        def run(job: tuple[str, str]):
            worker = idle.get()
            try:
                return _outcome(lambda source, name: self._with(worker, source, name), *job)
            finally:
                idle.put(worker)

        with ThreadPoolExecutor(1 + len(self.helpers)) as pool:
            return list(pool.map(run, jobs))

    def _with(self, worker: "_Worker", source: str, name: str) -> bytes:
        try:
            return worker.compile(source)
        except RuntimeError as error:
            raise _failed(name, error) from None

    def assembly(self, source: str) -> str:
        """The optimized machine code of `source` (for tests and LT_DEBUG; in-process)."""
        with LLVM_LOCK:
            tm = target_machine()
            return _without_remarks(lambda: tm.emit_assembly(optimized(source, tm)))


# Modules a worker compiles before it is replaced: its leak (~70 KB a module) stays under ~35 MB.
MAX_COMPILES = 500
_WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_worker.py")
# runs the script as __main__ without its folder on sys.path (its modules' names are generic)
_LAUNCH = "import runpy, sys; sys.path.pop(0); sys.argv.pop(0); runpy.run_path(sys.argv[0], run_name='__main__')"


class _Worker:
    """A compile worker process: started at the first compile, replaced after MAX_COMPILES
    and after a crash; one compile at a time. A forked child starts its own. What LLVM prints
    (its "loop not vectorized" remarks: nothing a user can act on) goes to a file of its own,
    whose end is quoted if the worker crashes."""

    def __init__(self, cpu: str, features: str) -> None:
        self.args = [sys.executable, "-c", _LAUNCH, _WORKER_SCRIPT, cpu, features]
        self.process: subprocess.Popen | None = None
        self.stderr = None
        self.compiles = 0
        self.lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def compile(self, source: str) -> bytes:
        """The object file of `source`; RuntimeError where it is invalid or the worker died
        compiling it (OSError where no worker can be started)."""
        with self.lock:
            if self.process is None or self.compiles >= MAX_COMPILES:
                self._stop()
                self.stderr = tempfile.TemporaryFile()
                self.process = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=self.stderr)
                self.compiles = 0
            self.compiles += 1
            data = source.encode()
            try:
                self.process.stdin.write(struct.pack("<I", len(data)) + data)
                self.process.stdin.flush()
                status, n = struct.unpack("<BI", _read(self.process.stdout, 5))
                payload = _read(self.process.stdout, n)
            except (OSError, EOFError, struct.error):
                code = self.process.wait()
                self.process = None
                raise RuntimeError(f"the LLVM compiler crashed (worker exit status {code}){self._said()}") from None
        if status:
            raise RuntimeError(payload.decode())
        return payload

    def _said(self, limit: int = 2000) -> str:
        """The end of what the worker printed, if anything: its file is closed."""
        said, self.stderr = self.stderr, None
        if said is None:
            return ""
        with said:
            said.seek(max(0, said.seek(0, os.SEEK_END) - limit))
            text = said.read().decode(errors="replace").strip()
        return f"; it printed:\n{text}" if text else ""

    def _stop(self) -> None:
        self._said()
        if self.process is not None:
            self.process.stdin.close()   # (the worker exits at the end of its input)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:   # (never hang on a stuck worker)
                self.process.kill()
            self.process = None

    def _forget(self) -> None:
        """In a forked child: the parent's worker stays the parent's. The child closes its copies
        of the pipes (a copy of the worker's input kept open here would keep the worker from
        ever seeing the parent close it) and starts a worker of its own when it compiles."""
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        self.process, self.lock, self.stderr = None, threading.Lock(), None

    def __del__(self) -> None:
        if self.process is not None:
            self.process.stdin.close()


def _without_remarks(fn, *args):
    """fn(*args) in this process with LLVM's remarks ("remark: ... loop not vectorized") kept
    off stderr: the process's stderr goes to a file meanwhile, and whatever else was written
    there (another thread's, say) is written on afterwards."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as said:
        saved = os.dup(2)
        os.dup2(said.fileno(), 2)
        try:
            return fn(*args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            said.seek(0)
            kept = [line for line in said.read().splitlines(keepends=True) if not line.startswith(b"remark: ")]
            if kept:
                os.write(2, b"".join(kept))


def _failed(name: str, error: RuntimeError) -> RuntimeError:
    return RuntimeError(f"cpu: kernel {name} failed to compile: {error}\n(run with LT_DEBUG=2 to print its source)")


def _outcome(compile, source: str, name: str):
    """`compile(source, name)`'s bytes, or the RuntimeError it raised."""
    try:
        return compile(source, name)
    except RuntimeError as error:
        return error


def _read(stream, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError
    return data
