"""CUDA source -> cubin with the machine's nvcc. No pycuda here: the tests use this module to
prove the CUDA renderer's output compiles on machines that have nvcc but no GPU."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile


@functools.lru_cache(maxsize=None)
def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found is None and os.path.exists("/usr/local/cuda/bin/nvcc"):
        found = "/usr/local/cuda/bin/nvcc"
    return found


@functools.lru_cache(maxsize=None)
def nvcc_version() -> str:
    nvcc = nvcc_path()
    if nvcc is None:
        return "none"
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]


def nvcc_compile(source: str, arch: str, output: str = "cubin") -> bytes:
    """Compile `source` for `arch` ("sm_90") to a cubin (or "ptx"); RuntimeError with nvcc's
    message when it fails."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise RuntimeError("nvcc (the CUDA compiler) is not on PATH; install the CUDA toolkit")
    with tempfile.TemporaryDirectory(prefix="lt-nvcc-") as tmp:
        src, out = os.path.join(tmp, "kernel.cu"), os.path.join(tmp, f"kernel.{output}")
        with open(src, "w") as f:
            f.write(source)
        done = subprocess.run([nvcc, f"--{output}", f"-arch={arch}", "-O3", "-o", out, src],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip() or done.stdout.strip())
        with open(out, "rb") as f:
            return f.read()


class NVCCCompiler:
    """The Compiler of a CUDA device: nvcc for the device's architecture."""

    def __init__(self, device_name: str, arch: str, features: str) -> None:
        self.device_name, self.arch = device_name, arch
        self.identity = f"nvcc {nvcc_version()} | {arch} | {features}"

    def compile(self, source: str, name: str) -> bytes:
        try:
            return nvcc_compile(source, self.arch)
        except RuntimeError as error:
            raise RuntimeError(f"{self.device_name}: kernel {name} failed to compile:\n{error}\n"
                               "(run with LT_DEBUG=2 to print its source)") from None
