"""The same lazytensor program on every device here, side by side in one run.

    python benchmarks/bench_devices.py [--repeat 10] [--devices cpu,opencl:0,cuda:0]

For each device: the device's own copy bandwidth (a buffer-to-buffer copy by its driver, the
limit an elementwise kernel can reach), then the workloads, each timed to the end of its
kernels (`lt.synchronize`). The table gives times, the chain's bandwidth as a fraction of the
copy bandwidth, and, where torch runs on a CUDA GPU, torch's time on the same GPU.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np

import lazytensor as lt
from lazytensor.devices import runtime

try:
    import torch
except ImportError:
    torch = None


def median_time(fn: Callable[[], object], repeat: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def copy_seconds(device: str, nbytes: int, repeat: int) -> float:
    """Time of one device-to-device copy of `nbytes` by the device's own driver."""
    dev = runtime(device).device
    src, dst = dev.allocate((nbytes // 4,), lt.float32), dev.allocate((nbytes // 4,), lt.float32)
    if device == "cpu":
        return median_time(lambda: np.copyto(dst.handle, src.handle), repeat, lambda: None)
    if device.startswith("opencl"):
        import pyopencl as cl
        return median_time(lambda: cl.enqueue_copy(dev.queue, dst.handle, src.handle), repeat, dev.synchronize)
    import pycuda.driver as drv
    return median_time(lambda: drv.memcpy_dtod(dst.handle, src.handle, nbytes), repeat, dev.synchronize)


def workloads(device: str, rng: np.random.Generator):
    n = 1 << 24
    a, b, c = (lt.asarray(rng.standard_normal(n).astype(np.float32), device=device) for _ in range(3))
    x = lt.asarray(rng.standard_normal((4096, 4096)).astype(np.float32), device=device)
    m = 4096 if device.startswith("cuda") else 1024
    p, q = (lt.asarray(rng.standard_normal((m, m)).astype(np.float32), device=device) for _ in range(2))

    def softmax():
        e = (x - x.max(axis=1, keepdims=True)).exp()
        return (e / e.sum(axis=1, keepdims=True)).realize()

    yield "fused chain 16M", 4 * 4 * n, lambda: ((a * b + c) * 0.5 + a.abs().sqrt()).realize()
    yield "row softmax 4096²", 2 * 4 * 4096 * 4096, softmax
    yield "row sums 4096²", 4 * 4096 * 4096, lambda: x.sum(axis=1).realize()
    yield f"matmul {m} fp32", -2 * m ** 3, lambda: (p @ q).realize()   # negative: flops, not bytes


def torch_workloads(rng: np.random.Generator):
    """The same workloads with torch on the CUDA GPU (None where torch has no GPU)."""
    if torch is None or not torch.cuda.is_available():
        return {}
    n = 1 << 24
    a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
    x = torch.randn(4096, 4096, device="cuda")
    p, q = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    return {"fused chain 16M": lambda: (a * b + c) * 0.5 + a.abs().sqrt(),
            "row softmax 4096²": lambda: torch.softmax(x, dim=1),
            "row sums 4096²": lambda: x.sum(dim=1),
            "matmul 4096 fp32": lambda: p @ q}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--devices", default=",".join(lt.devices()))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| device | workload | time | GB/s (GFLOP/s) | of copy bandwidth | torch (same GPU) | lt vs torch |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for device in args.devices.split(","):
        sync = (lambda d=device: lt.synchronize(d))
        copy = copy_seconds(device, 1 << 28, args.repeat)
        copy_rate = 2 * (1 << 28) / copy   # bytes read + written per second
        print(f"| {device} | copy probe 256 MB | {copy * 1e3:.2f} ms | {copy_rate / 1e9:.1f} | 100% | - | - |")
        theirs = torch_workloads(rng) if device.startswith("cuda") else {}
        for name, nbytes, fn in workloads(device, rng):
            t = median_time(fn, args.repeat, sync)
            rate = abs(nbytes) / t
            t_torch = median_time(theirs[name], args.repeat, torch.cuda.synchronize) if name in theirs else None
            cells = [device, name, f"{t * 1e3:.2f} ms", f"{rate / 1e9:.1f}" if nbytes > 0 else f"({rate / 1e9:.1f})",
                     f"{rate / copy_rate:.0%}" if nbytes > 0 else "-",
                     f"{t_torch * 1e3:.2f} ms" if t_torch else "-", f"{t_torch / t:.2f}x" if t_torch else "-"]
            print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\n(median of {args.repeat} runs after one warm-up, each to the end of its kernels; "
          "'lt vs torch' above 1 means lazytensor is faster)")


if __name__ == "__main__":
    main()
