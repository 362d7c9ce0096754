"""LLVM IR -> object code, in a worker process (this file runs as a script) or in-process.

Why a process: llvmlite leaks every PassBuilder's instrumentation callbacks (its
`LLVMPY_CreatePassBuilder` news a PassInstrumentationCallbacks that nothing deletes, ~70 KB
with the pass-name table every PassBuilder fills in), and the optimization pipeline needs a new
PassBuilder per module. In-process, a process meeting 10,000 new shapes grew by ~700 MB of it.
The worker is replaced after `MAX_COMPILES` modules, so that memory is bounded; and a crash of
LLVM on some module ends the worker, not the user's interpreter.

Only the standard library and llvmlite are imported here: the worker starts in ~0.1 s. It is
started with the host cpu's name and feature string as its arguments. Protocol on stdin/stdout,
little-endian: a request is a kernel's LLVM IR (a u32 length, then UTF-8 bytes); the reply is one
status byte (0 ok, 1 error), a u32 length and the object file (or the error message).
"""
from __future__ import annotations

import struct
import sys

import llvmlite.binding as llvm

_TARGET_MACHINES: dict = {}


def target_machine(cpu: str, features: str) -> "llvm.TargetMachine":
    """A target machine for the host CPU `cpu` with `features` (one per pair, kept)."""
    key = (cpu, features)
    if key not in _TARGET_MACHINES:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        # jitdefault + pic: the object file can be loaded at any address by the JIT, now or from disk
        _TARGET_MACHINES[key] = target.create_target_machine(cpu=cpu, features=features, opt=3,
                                                             codemodel="jitdefault", reloc="pic")
    return _TARGET_MACHINES[key]


# A line in a kernel's source asking not to SLP-vectorize it (render.py says when, and why)
NO_SLP = "; lt: no slp vectorization"


def optimized(source: str, tm: "llvm.TargetMachine") -> "llvm.ModuleRef":
    """The module of `source`, verified and optimized at O3 (RuntimeError where it is invalid)."""
    module = llvm.parse_assembly(source)
    module.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = NO_SLP not in source
    passes = llvm.create_pass_builder(tm, options)
    passes.getModulePassManager().run(module, passes)
    return module


def compile_object(source: str, cpu: str, features: str) -> bytes:
    """The object file of the LLVM IR `source` for the host CPU (RuntimeError where the IR is
    invalid)."""
    tm = target_machine(cpu, features)
    return tm.emit_object(optimized(source, tm))


def _read(stream, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError
    return data


def serve(cpu: str, features: str, requests, replies) -> None:
    """Compile requests until the input ends."""
    while True:
        try:
            (n,) = struct.unpack("<I", _read(requests, 4))
            source = _read(requests, n).decode()
        except EOFError:
            return
        try:
            status, payload = 0, compile_object(source, cpu, features)
        except Exception as error:   # (reported to the caller, who raises it there)
            status, payload = 1, f"{type(error).__name__}: {error}".encode()
        replies.write(struct.pack("<BI", status, len(payload)) + payload)
        replies.flush()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.stdin.buffer, sys.stdout.buffer)
