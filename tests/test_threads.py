"""The cpu worker pool: parallel kernels give numpy's results however they are launched (many in
a row, from several Python threads, in a forked child, with the Python fallback), and idle
workers sleep instead of spinning."""
from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import lazytensor as lt
from conftest import run_isolated
from lazytensor.backends.cpu.threads import NativePool, native_supported

native_only = pytest.mark.skipif(not native_supported(), reason="the native hand-off needs Linux on x86-64")
rng = np.random.default_rng(7)


def _parallel_work(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Kernels large enough to run in parallel chunks: an elementwise chain and row sums."""
    data = np.random.default_rng(seed).standard_normal((513, 1031)).astype(np.float32)
    x = lt.asarray(data)
    return ((x * 2 + 1).numpy(), x.sum(axis=1).numpy()), (data * 2 + 1, data.sum(axis=1))


def test_many_parallel_launches_in_a_row():
    data = rng.standard_normal((300, 1000)).astype(np.float32)
    x = lt.asarray(data)
    for step in range(300):   # new values each time: a lost chunk would leave stale memory
        out = (x * step + 1).numpy()
        np.testing.assert_allclose(out, data * step + 1, rtol=1e-6, atol=1e-6)   # (fma)


def _run_together(*jobs, timeout: float = 300) -> None:
    """Run the functions `jobs` in threads at once; the first failure of any is raised here."""
    failures: list[BaseException] = []

    def run(job) -> None:
        try:
            job()
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not failures, failures[0]


def test_launches_from_several_python_threads():
    def work(seed: int) -> None:
        for i in range(20):
            (got_ew, got_sum), (want_ew, want_sum) = _parallel_work(seed * 100 + i)
            np.testing.assert_allclose(got_ew, want_ew, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(got_sum, want_sum, rtol=1e-4, atol=1e-3)

    _run_together(*[functools.partial(work, s) for s in range(4)], timeout=120)


def _child(queue) -> None:
    (got, _), (want, _) = _parallel_work(3)
    queue.put(bool(np.allclose(got, want)))


@pytest.mark.skipif(sys.platform != "linux", reason="fork is a Linux start method here")
def test_forked_child_starts_its_own_workers():
    _parallel_work(1)   # the parent's pool exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0, "the forked child failed or hung"
    assert queue.get(timeout=5) is True


def test_python_fallback_pool_gives_the_same_results():
    code = ("import numpy as np, lazytensor as lt\n"
            "from lazytensor.backends.cpu.device import CPUDevice\n"
            "from lazytensor.devices import runtime\n"
            "d = np.arange(600 * 700, dtype=np.float32).reshape(600, 700) % 17\n"
            "x = lt.asarray(d)\n"
            "assert np.allclose((x * 3 - 1).numpy(), d * 3 - 1)\n"
            "assert np.allclose(x.sum(axis=1).numpy(), d.sum(axis=1))\n"
            "print(type(runtime('cpu').device._threads).__name__)\n")
    env = dict(os.environ, LT_NATIVE_THREADS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    if os.cpu_count() and len(os.sched_getaffinity(0)) > 1:
        assert out.stdout.strip() == "PythonPool"


@native_only
def test_idle_workers_sleep():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: no workers")
    _parallel_work(2)
    time.sleep(0.05)   # past the spin budget: the workers are asleep now
    cpu_before, wall_before = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    cpu = time.process_time() - cpu_before
    wall = time.perf_counter() - wall_before
    assert cpu < 0.25 * wall, f"idle workers used {cpu:.3f} s of cpu in {wall:.3f} s"


@native_only
def test_native_pool_splits_the_range_and_closes():
    """The pool itself, on a kernel-shaped function: every index of [0, extent) is visited once,
    by the chunk it belongs to; close() lets every worker return."""
    import ctypes
    pool = NativePool(4)
    hits = np.zeros(1000, dtype=np.int64)

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    def chunk(args, start, end):   # a Python callback takes the GIL: slower, same contract
        hits[start:end] += 1

    chunk.address = ctypes.cast(chunk, ctypes.c_void_p).value
    args = (ctypes.c_void_p * 1)()
    for extent in (1, 2, 3, 7, 1000):
        hits[:] = 0
        pool.run(chunk, args, extent)
        assert hits[:extent].tolist() == [1] * extent and not hits[extent:].any()
    pool.close()
    assert not any(t.is_alive() for t in pool.threads)


# ---- any thread may realize at any time ------------------------------------------------------

_FOUR_THREADS = """
import sys, threading, numpy as np, lazytensor as lt, lazytensor.sizes
device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
lazytensor.sizes.ENABLED = TEMPLATES   # (templates on: the new sizes share compiles, made by any thread)
failures = []

def work(k):
    rng = np.random.default_rng(k)
    try:
        for i in range(ROUNDS):
            # equal graphs in every thread (one plan, run at once) and different ones (new kernels
            # compiled at once: a shape of this thread's own), several outputs realized together
            # (sizes a template serves: at most lazytensor.sizes.MOST)
            for n in (57, 100 + 25 * k + i):
                a = rng.standard_normal((3, n)).astype(np.float32)
                b = rng.standard_normal(n).astype(np.float32)
                x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
                e = (x - x.max(axis=1, keepdims=True)).exp()
                s, t, u = e / e.sum(axis=1, keepdims=True), (x * y + 1.0).sum(axis=0), (x[:, ::-1] @ y)
                lt.realize(s, t, u)
                ea = np.exp(a - a.max(axis=1, keepdims=True))
                np.testing.assert_allclose(s.numpy(), ea / ea.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
                np.testing.assert_allclose(t.numpy(), (a * b + 1).sum(axis=0), rtol=1e-5, atol=1e-5)
                np.testing.assert_allclose(u.numpy(), a[:, ::-1] @ b, rtol=1e-4, atol=1e-4)
    except BaseException as error:
        failures.append(error)

threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failures:
    raise failures[0]
print("kernels compiled", lt.stats()["kernels_compiled"])
"""


def test_four_threads_compile_and_realize_equal_and_different_graphs(tmp_path, device):
    rounds = 6 if device == "cpu" else 2   # (an OpenCL kernel takes ~0.2 s to build on PoCL)
    script = _FOUR_THREADS.replace("ROUNDS", str(rounds)).replace("TEMPLATES", "False")
    out = run_isolated(script, tmp_path, device, timeout=600).stdout
    compiled = int(out.split()[-1])
    assert compiled >= 4 * rounds, "the threads did not compile kernels of their own"


def test_four_threads_make_and_bind_size_templates(tmp_path):
    """The same, with graphs that differ in a size served by templates (lazytensor/sizes.py):
    made by whichever thread meets the second size, bound by all; every value checked."""
    script = _FOUR_THREADS.replace("ROUNDS", "6").replace("TEMPLATES", "True")
    out = run_isolated(script, tmp_path, "cpu", timeout=600).stdout
    assert int(out.split()[-1]) < 4 * 6, "the sizes did not share their compiles"


def test_one_writer_and_two_readers_of_one_tensor(device):
    """A reader sees some whole write, never an older one than it saw before, and never puts an
    older value back over a newer write (a realize once wrote its result over later writes)."""
    x = lt.zeros(1000, device=device)
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(300):
                x[:] = float(i + 1)
        finally:
            done.set()

    def reader() -> None:
        seen = 0.0
        while not done.is_set():
            values = x.numpy()
            assert (values == values[0]).all(), f"a read saw a mix of writes: {np.unique(values)}"
            assert values[0] >= seen, f"a read went back from {seen} to {values[0]}"
            seen = values[0]

    _run_together(writer, reader, reader)
    assert (x.numpy() == 300).all(), np.unique(x.numpy())


def _into_slice(x: lt.Tensor, rows: list, value: lt.Tensor) -> None:
    x[rows[0]:rows[-1] + 1] = value


def _into_array_index(x: lt.Tensor, rows: list, value: lt.Tensor) -> None:
    x[lt.asarray(rows)] = value


def _added_into_slice(x: lt.Tensor, rows: list, value: lt.Tensor) -> None:
    x[rows[0]:rows[-1] + 1] += value   # (a view's in-place add, then a write of it back)


WRITES_INTO_PARTS = {"slice": _into_slice, "array index": _into_array_index, "+= into a slice": _added_into_slice}


@pytest.mark.parametrize("write", WRITES_INTO_PARTS)
@pytest.mark.parametrize("transposed", [False, True], ids=["base", "transposed view"])
def test_threads_writing_parts_of_one_tensor_all_land(write, transposed):
    """Threads that write disjoint parts of one tensor at once (scikit-learn's n_jobs threads
    fill the column blocks of a transposed `empty` result) all land: each write once read the
    tensor's value, and a write built on a value another thread replaced meanwhile lost that
    thread's rows."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # (switch threads often: between a write's read and its write)
    try:
        for round_ in range(30):
            data = np.random.default_rng(round_).standard_normal((8, 6))
            x = lt.zeros((6, 8), dtype=lt.float64).T if transposed else lt.zeros((8, 6), dtype=lt.float64)
            start = threading.Barrier(4)

            def job(k: int) -> None:
                start.wait()
                rows = [2 * k, 2 * k + 1]
                WRITES_INTO_PARTS[write](x, rows, lt.asarray(data[rows]))

            _run_together(*[functools.partial(job, k) for k in range(4)])
            np.testing.assert_array_equal(x.numpy(), data, err_msg=f"round {round_}")
    finally:
        sys.setswitchinterval(switch)


_THREADS_END = """
import gc, sys, threading, numpy as np, lazytensor as lt
from lazytensor.devices import runtime
device = sys.argv[1]
made = []

def use(k):   # realizes and ends; what it made lives on in the main thread
    x = lt.asarray(np.arange(1000 + k, dtype=np.float32), device=device)
    made.append((x, (x * 2 + k).sum()))

def drop():   # never used the device: frees memory and kernels made elsewhere
    made.clear()
    runtime(device).loaded.clear()
    runtime(device).by_expression.clear()
    runtime(device).plans.clear()
    gc.collect()

for round in range(3):
    threads = [threading.Thread(target=use, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    for x, s in made:
        assert float(s.numpy()) == float((x.numpy() * 2 + (x.shape[0] - 1000)).sum())
    t = threading.Thread(target=drop)
    t.start()
    t.join()
print("done")
"""


def test_threads_that_used_a_device_end_and_free_anywhere(tmp_path, device):
    """A thread that realized on a device may end (a CUDA context left current in an ending
    thread aborts the process under pycuda), and memory and kernels made in one thread may be
    freed by another that never used the device, with nothing leaked or warned at exit."""
    out = run_isolated(_THREADS_END, tmp_path, device, timeout=600)
    assert out.stdout.strip() == "done"
    assert "could not be cleaned up" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="fork is a Linux start method here")
def test_a_forked_child_compiles_with_a_worker_of_its_own(tmp_path):
    """The parent's compile worker is not shared with a forked child (their messages would mix)
    and the child's copies of its pipes are closed: the parent can still replace its worker."""
    code = """
import multiprocessing, numpy as np, lazytensor as lt
from lazytensor.backends.cpu import compiler
from lazytensor.devices import runtime
(lt.arange(7) * 2).numpy()   # the parent's worker runs

def child(queue, done):
    queue.put((lt.arange(11) * 3 + 1).tolist())
    done.wait(120)   # alive while the parent replaces its worker

ctx = multiprocessing.get_context("fork")
queue, done = ctx.Queue(), ctx.Event()
p = ctx.Process(target=child, args=(queue, done))
p.start()
got = queue.get(timeout=120)
assert got == [3 * i + 1 for i in range(11)], got
worker = runtime("cpu").compiler.worker
old = worker.process
worker.compiles = compiler.MAX_COMPILES   # the next compile replaces the parent's worker
assert (lt.arange(13) * 5).tolist() == [5 * i for i in range(13)]
assert old.returncode == 0, "the parent's old worker did not see the end of its input"
done.set()
p.join(timeout=120)
assert p.exitcode == 0, p.exitcode
print("ok")
"""
    assert run_isolated(code, tmp_path, timeout=300).stdout.strip().endswith("ok")


LLVM_REMARK = """
import numpy as np, lazytensor as lt
q = lt.asarray(np.random.default_rng(0).standard_normal((32, 4, 64, 32)).astype(np.float32))
causal = lt.asarray(np.tril(np.ones((64, 64), bool)))
scores = lt.where(causal, (q @ q.permute(0, 1, 3, 2)) * 0.17, -np.inf)
print(lt.nn.functional.softmax(scores, dim=-1).numpy().shape)
"""


@pytest.mark.parametrize("in_worker", ["1", "0"])
def test_llvm_remarks_never_reach_stderr(tmp_path, monkeypatch, in_worker):
    # (this masked softmax's kernel has a loop LLVM does not vectorize: it says so on stderr)
    monkeypatch.setenv("LT_COMPILE_WORKER", in_worker)
    out = run_isolated(LLVM_REMARK, tmp_path)
    assert out.stdout.strip() == "(32, 4, 64, 64)" and out.stderr == ""


def test_a_crashed_compile_worker_is_quoted_in_the_error():
    from lazytensor.backends.cpu import compiler
    worker = compiler._Worker("", "")
    worker.args = [sys.executable, "-c", "import sys; sys.stderr.write('LLVM ERROR: out of luck'); sys.exit(3)"]
    with pytest.raises(RuntimeError, match="(?s)exit status 3.*LLVM ERROR: out of luck"):
        worker.compile("anything")
    assert worker.process is None and worker.stderr is None
