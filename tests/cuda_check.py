"""The CUDA compile check: kernel expressions scheduled for a CUDA GPU, rendered as CUDA and
compiled with nvcc. conftest.py runs it over every kernel the test session realized, where nvcc
exists but no CUDA GPU runs the tests, so invalid CUDA source fails the run."""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

from lazytensor import pipeline
from lazytensor.backends import cstyle
from lazytensor.backends.cuda.compiler import nvcc_compile
from lazytensor.ir.target import Target
from lazytensor.scheduler.fusion import KernelSpec

# what an H100 tells the scheduler (cuda:0 on the machines the device tool lends)
H100 = Target("cuda", simd_bytes=0, cores=132, launches_blocks=True, max_threads_per_block=1024, local_memory_bytes=48 * 1024,
              features="sm_90")
ARCH = "sm_90"
CHUNK = 400  # kernels per nvcc run: one file of many kernels costs ~5 ms a kernel


def cuda_source(expr, ninputs: int) -> str:
    """The CUDA source of a fused kernel's expression (of `ninputs` inputs), named by its content
    (as the runtime names kernels), so sources from several processes can share one file."""
    kernel = KernelSpec(root=expr, expr=expr, inputs=(None,) * ninputs)   # (no buffers: the inputs' count)
    _, _, lowered = pipeline.loops(kernel, H100, name="__lt_kernel__")
    text = cstyle.render(lowered, cstyle.CUDA)
    return text.replace("__lt_kernel__", "k_" + hashlib.sha256(text.encode()).hexdigest()[:16])


def compile_errors(sources: list[str]) -> list[tuple[str, str]]:
    """(source, nvcc's message) for every source that does not compile."""
    chunks = [sources[i:i + CHUNK] for i in range(0, len(sources), CHUNK)]

    def check(chunk: list[str]) -> list[tuple[str, str]]:
        try:
            nvcc_compile("\n".join(chunk), ARCH, "ptx")
            return []
        except RuntimeError:
            pass
        errors = []
        for source in chunk:  # find the culprits
            try:
                nvcc_compile(source, ARCH, "ptx")
            except RuntimeError as error:
                errors.append((source, str(error)))
        return errors or [("\n".join(chunk), "the kernels compile alone but not together")]

    with ThreadPoolExecutor(max_workers=2) as pool:
        return [e for errors in pool.map(check, chunks) for e in errors]
