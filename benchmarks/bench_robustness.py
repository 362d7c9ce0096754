"""The figures of "never wrong, never down" (issue 17): the compiler's cost on deep graphs, memory
of a process that keeps meeting new shapes, and one writer with readers in threads.

    python benchmarks/bench_robustness.py [--shapes 10000] [--device cpu]

Each measurement runs in a fresh interpreter with an empty kernel cache (what a first run pays):

- chains: build and realize `y = y + 1.0` N times (the issue: 1,000 took 0.27 s, 3,000 2.0 s,
  10,000 26.6 s, 15,000 crashed), and 10,000 chained `(-y.reshape(2, 4).T).reshape(8)` (crashed);
- shapes: `(x * 2 + 1)` on N new shapes, resident memory growth (the issue: 10,000 grew 1.5 GB,
  ~21,700 crashed);
- threads: one thread writes `x[:] = i + 1` 300 times while two read (the issue: x ended at 63 to
  106, or a segfault); the final value of 5 runs.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

CHAIN = """
import time, numpy as np, lazytensor as lt
start = time.perf_counter()
y = lt.ones(8, device=DEVICE)
for _ in range(DEPTH):
    y = y + 1.0
assert y.numpy()[0] == DEPTH + 1
print(time.perf_counter() - start)
"""

MOVES = """
import time, numpy as np, lazytensor as lt
start = time.perf_counter()
y = lt.asarray(np.arange(8, dtype=np.float32), device=DEVICE)
want = np.arange(8, dtype=np.float32)
for _ in range(10000):
    y = (-y.reshape(2, 4).T).reshape(8)
    want = (-want.reshape(2, 4).T).reshape(8)
assert (y.numpy() == want).all()
print(time.perf_counter() - start)
"""

SHAPES = """
import time, numpy as np, lazytensor as lt
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
for n in range(1, 50):
    (lt.asarray(np.ones(n, np.float32), device=DEVICE) * 2.0 + 1.0).numpy()
base, start = rss_mb(), time.perf_counter()
for n in range(100, 100 + SHAPES):
    assert ((lt.asarray(np.full(n, 3.0, np.float32), device=DEVICE) * 2.0 + 1.0).numpy() == 7.0).all()
print(rss_mb() - base, time.perf_counter() - start, lt.stats()["kernels_compiled"])
"""

THREADS = """
import threading, numpy as np, lazytensor as lt
x = lt.zeros(1000, device=DEVICE)
done = threading.Event()
def writer():
    for i in range(300):
        x[:] = float(i + 1)
    done.set()
def reader():
    while not done.is_set():
        x.numpy()
threads = [threading.Thread(target=f) for f in (writer, reader, reader)]
[t.start() for t in threads]
[t.join() for t in threads]
print(float(x.numpy()[0]))
"""


def run(code: str, device: str, **values: int) -> list[float]:
    for name, value in values.items():
        code = code.replace(name, str(value))
    code = code.replace("DEVICE", repr(device))
    env = dict(os.environ, LT_CACHE_DIR=tempfile.mkdtemp(prefix="lt-bench-"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:   # (a crash is a result too: nan, and what it printed)
        print(f"exit status {out.returncode}\n{out.stderr[-2000:]}", file=sys.stderr)
        return [float("nan")] * 3
    return [float(v) for v in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", type=int, default=10000)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    rows = []
    for depth in (1000, 3000, 10000, 50000):
        rows.append((f"{depth:,} chained adds, build + realize", f"{run(CHAIN, args.device, DEPTH=depth)[0]:.2f} s"))
    rows.append(("10,000 chained (-y.reshape(2, 4).T).reshape(8)", f"{run(MOVES, args.device)[0]:.2f} s"))
    grown, seconds, compiled = run(SHAPES, args.device, SHAPES=args.shapes)
    rows.append((f"{args.shapes:,} new shapes ({compiled:.0f} kernels compiled)", f"+{grown:.0f} MB resident, {seconds:.0f} s"))
    finals = [run(THREADS, args.device)[0] for _ in range(5)]
    rows.append(("1 writer (300 writes) + 2 readers: final value, 5 runs", ", ".join(f"{v:.0f}" for v in finals)))
    print(f"device {args.device}\n\n| measurement | result |\n|---|---|")
    for what, result in rows:
        print(f"| {what} | {result} |")


if __name__ == "__main__":
    main()
