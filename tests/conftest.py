"""Shared test set-up: a private temp folder and kernel cache per test session, removed at its
end, and the devices to test on."""
import atexit
import contextlib
import operator
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import pytest

# ---- the session's temp folder ----------------------------------------------------------------
# Whatever a test session writes to the temp folder goes into one folder of its own, removed as
# the session ends (pytest_unconfigure below; atexit if the session never gets there): the
# kernel cache, the CUDA compile check's sources, and what tests, lazytensor's own code (the
# doctests' tempfile.mkdtemp()) and subprocesses create with tempfile. TMPDIR points there, so
# pytest-xdist's workers and every subprocess inherit it; the process that made it (the
# controller, or the only process without xdist) removes it. pytest's tmp_path folders stay in
# the real temp folder (PYTEST_DEBUG_TEMPROOT), where pytest keeps those of failed tests
# (tmp_path_retention_policy = "failed" in pyproject.toml) and removes the others.
_SESSION_TMP = os.environ.get("LT_TEST_SESSION_TMP")
_OWN_SESSION_TMP = not (_SESSION_TMP and os.path.isdir(_SESSION_TMP))
if _OWN_SESSION_TMP:
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    _SESSION_TMP = os.environ["LT_TEST_SESSION_TMP"] = tempfile.mkdtemp(prefix="lt-test-")
    atexit.register(shutil.rmtree, _SESSION_TMP, ignore_errors=True)
os.environ["TMPDIR"] = tempfile.tempdir = _SESSION_TMP

# Before lazytensor is imported anywhere: tests never touch the user's real cache.
if "LT_CACHE_DIR" not in os.environ:
    os.environ["LT_CACHE_DIR"] = os.path.join(_SESSION_TMP, "kernel-cache")
    os.makedirs(os.environ["LT_CACHE_DIR"], exist_ok=True)
# SciPy reads this once, at its import: its functions (and scikit-learn's array API dispatch,
# which needs it) then accept any Array API namespace, lazytensor's included.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
# Every stage of the compile pipeline is verified after it runs (lazytensor/pipeline.py).
os.environ.setdefault("LT_VERIFY", "1")

import lazytensor as lt  # noqa: E402

DEVICES = lt.devices()
DTYPES = [lt.bool_, lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.uint16, lt.uint32, lt.uint64,
          lt.float16, lt.float32, lt.float64]


def skip_without_scipy_array_api(why: str = "") -> None:
    """Skip the calling test module unless SciPy's Array API support is on (the variable set above
    must reach SciPy before its import)."""
    try:
        from scipy._lib._array_api import SCIPY_ARRAY_API
    except ImportError:   # (a SciPy without Array API support)
        SCIPY_ARRAY_API = False
    if not SCIPY_ARRAY_API:
        pytest.skip("SciPy's Array API support is off (set SCIPY_ARRAY_API=1 before SciPy is imported; "
                    f"tests/conftest.py does){why}", allow_module_level=True)


@contextlib.contextmanager
def own_cache(device: str, path):
    """`device`'s runtime with a kernel cache (and so a tuning store) of its own in `path`, and
    no plan or kernel compiled before: what runs inside compiles (or loads) through it."""
    from lazytensor.backends.cache import KernelCache
    from lazytensor.devices import runtime
    rt = runtime(device)
    saved = rt.cache
    rt.cache = KernelCache(rt.stats, path)
    rt.plans.clear()
    rt.by_expression.clear()
    try:
        yield rt
    finally:
        rt.cache = saved
        rt.plans.clear()
        rt.by_expression.clear()


def run_isolated(code: str, cache_dir, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run `code` (with `args` as sys.argv[1:]) in a fresh interpreter with its own, empty kernel
    cache: kernels really compile, memory is measured from a clean start, and a crash fails the
    test with its exit status (and faulthandler's lines) instead of taking pytest down."""
    env = dict(os.environ, LT_CACHE_DIR=str(cache_dir), PYTHONFAULTHANDLER="1")
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"exit status {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


# ---- the devices to test on --------------------------------------------------------------------
# `device` runs a test on every device here (DEVICES: tests that parametrize by hand use it). A
# backend with no device here is not left out silently:
# - OpenCL: a placeholder parameter "opencl", skipped with the reason and the fix; one per test
#   function (pytest_collection_modifyitems deselects the rest), not one per parameter set.
# - CUDA: one line at the end of the run (pytest_terminal_summary), not a skip per test function:
#   nearly every machine lacks a CUDA GPU, and as many skips again on every run would bury the
#   skips that say something; where nvcc exists, the CUDA compile check (below) still compiles
#   every kernel the session ran as CUDA source.
NO_OPENCL = ("no OpenCL device: install an OpenCL driver (apt-get install pocl-opencl-icd) "
             "to run the OpenCL tests")
NO_CUDA = ("no CUDA GPU: the CUDA tests need an NVIDIA GPU with its driver, pycuda (pip install pycuda) "
           "and nvcc")
_PLACEHOLDERS = {} if any(d.startswith("opencl") for d in DEVICES) else {"opencl": NO_OPENCL}


def device_params(devices=DEVICES) -> list:
    """`devices` as test parameters, and a skipped placeholder for each missing backend (above):
    for tests that parametrize by device by hand."""
    return [*devices, *(pytest.param(name, marks=pytest.mark.skip(reason=why)) for name, why in _PLACEHOLDERS.items())]


@pytest.fixture(params=device_params())
def device(request):
    return request.param


def has_fp64(device: str) -> bool:
    """Whether `device` computes in float64 (an OpenCL device may lack cl_khr_fp64)."""
    from lazytensor.devices import runtime
    return getattr(runtime(device).device, "fp64", True)


# ---- accelerators: the same tests, sampled -----------------------------------------------------
# Every test that takes the `device` fixture runs on the cpu and on each accelerator. An OpenCL
# kernel costs ~0.2 s to build on PoCL (the cpu: ~10 ms), so on an accelerator the test matrix is
# sampled: every test function runs there, and of its parameter sets one in LT_TEST_SAMPLE
# (default 4), chosen by a stable hash of the test id, so every run tests the same sample.
# LT_TEST_SAMPLE=1 runs the whole matrix on every device.
# A placeholder for a missing backend (above) is kept once per test function, whatever the sample.
def pytest_collection_modifyitems(config, items):
    every = int(os.environ.get("LT_TEST_SAMPLE", "4") or 1)
    seen, keep, drop, placeholders = set(), [], [], set()
    for item in items:
        device = getattr(item, "callspec", None) and item.callspec.params.get("device")
        if device is None or device == "cpu":
            keep.append(item)
            continue
        function = item.nodeid.split("[")[0]
        if device in _PLACEHOLDERS:
            if (device, function) not in placeholders:
                placeholders.add((device, function))
                keep.append(item)
            else:
                drop.append(item)
            continue
        others = item.nodeid.replace(str(device), "")
        if every <= 1 or function not in seen or zlib.crc32(others.encode()) % every == 0:
            seen.add(function)
            keep.append(item)
        else:
            drop.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


# ---- the CUDA compile check -------------------------------------------------------------------
# Where nvcc exists but no CUDA GPU runs the tests, every kernel expression the session realizes
# (on any device) is also scheduled for a CUDA GPU and rendered as CUDA; at the end the sources
# are compiled with nvcc, and invalid CUDA source fails the run. Under pytest-xdist each worker
# writes its sources to a folder and the controller compiles them all. LT_CUDA_CHECK=0: off.
_CUDA_KERNELS: dict = {}   # kernel expression -> its number of inputs (no buffers kept alive)


def _cuda_check_wanted() -> bool:
    from lazytensor.backends.cuda.compiler import nvcc_path
    return (nvcc_path() is not None and not any(d.startswith("cuda") for d in DEVICES)
            and os.environ.get("LT_CUDA_CHECK", "1") != "0")


def pytest_configure(config):
    if not _cuda_check_wanted():
        return
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        os.environ["LT_CUDA_CHECK_DIR"] = tempfile.mkdtemp(prefix="lt-cuda-check-")
    from lazytensor import pipeline
    from lazytensor.ir.symbolic import symbolic_nodes
    # (kernels with symbolic sizes are the cpu backend's only, so far: lazytensor/sizes.py)
    pipeline.OBSERVERS.append(lambda kernel: symbolic_nodes([kernel.expr]) or
                              _CUDA_KERNELS.setdefault(kernel.expr, len(kernel.inputs)))


def pytest_sessionfinish(session, exitstatus):
    folder = os.environ.get("LT_CUDA_CHECK_DIR")
    if not folder or not _cuda_check_wanted():
        return
    from cuda_check import compile_errors, cuda_source
    sources = {cuda_source(expr, ninputs) for expr, ninputs in _CUDA_KERNELS.items()}
    worker = getattr(session.config, "workerinput", None)
    if worker is not None:  # hand them to the controller
        with open(os.path.join(folder, f"{worker['workerid']}.cu"), "w") as f:
            f.write("\n//@@lt-kernel@@\n".join(sorted(sources)))
        return
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            sources.update(s for s in f.read().split("\n//@@lt-kernel@@\n") if s)
    shutil.rmtree(folder, ignore_errors=True)
    errors = compile_errors(sorted(sources))
    _CUDA_CHECK.update(kernels=len(sources), errors=errors)   # (reported by pytest_terminal_summary)
    if errors:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if session.config.pluginmanager.get_plugin("terminalreporter") is None:   # (-p no:terminal)
        print("\n".join(_cuda_check_lines()))


_CUDA_CHECK: dict = {}


def _cuda_check_lines() -> list:
    errors = _CUDA_CHECK["errors"]
    lines = [f"CUDA compile check (no GPU: kernels compiled with nvcc, not run): "
             f"{_CUDA_CHECK['kernels']} kernels, {len(errors)} failed"
             + (f" (the first {min(len(errors), 5)}: CUDA source and nvcc's message below)" if errors else "")]
    for source, message in errors[:5]:
        lines.append(f"---- CUDA source ----\n{source}\n---- nvcc ----\n{message}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On lines of their own at the end of the run (not glued to the progress dots): the devices
    tested on, the backends not tested and why, and the CUDA compile check's result. (Under
    pytest-xdist the controller collects no tests, so this reads the test reports alone.)"""
    ran = any(terminalreporter.stats.get(outcome) for outcome in ("passed", "failed", "skipped"))
    if hasattr(config, "workerinput") or not ran:
        return
    every = int(os.environ.get("LT_TEST_SAMPLE", "4") or 1)
    sample = (f" ({', '.join(DEVICES[1:])}: a sample, every test function and one in {every} of its "
              "parameter sets; LT_TEST_SAMPLE=1 runs them all)") if len(DEVICES) > 1 and every > 1 else ""
    lines = [f"tested on: {', '.join(DEVICES)}{sample}"]
    skipped = sum(1 for report in terminalreporter.stats.get("skipped", [])
                  if isinstance(report.longrepr, tuple) and NO_OPENCL in str(report.longrepr[2]))
    if skipped:
        lines.append(f"OpenCL: {skipped} tests skipped, one per test function (its other parameter sets "
                     f"deselected): {NO_OPENCL}")
    if not any(d.startswith("cuda") for d in DEVICES):
        lines.append(f"CUDA: not tested: {NO_CUDA}")
    if _CUDA_CHECK:
        lines += _cuda_check_lines()
    terminalreporter.write_sep("=", "devices")
    for line in lines:
        terminalreporter.write_line(line)


def pytest_unconfigure(config):
    if _OWN_SESSION_TMP:   # (the session's temp folder, above: the last thing it does)
        shutil.rmtree(_SESSION_TMP, ignore_errors=True)


def example_module(name: str):
    """The module examples/<name>.py, imported without leaving examples/ on sys.path."""
    import importlib
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    sys.path.insert(0, examples)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(examples)


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random values of `dtype` that exercise signs, zero and (for ints) small magnitudes."""
    np_dtype = np.dtype(dtype.name if isinstance(dtype, lt.DType) else dtype)
    if np_dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np_dtype.kind == "i":
        return rng.integers(-20, 20, size=shape).astype(np_dtype)
    if np_dtype.kind == "u":
        return rng.integers(0, 40, size=shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def assert_close(got, want, dtype=None) -> None:
    """Compare with numpy: exact for bool/int, a few ulp-ish relative tolerance for floats."""
    got_array = np.asarray(got)
    want = np.asarray(want)
    assert got_array.shape == want.shape, f"shape {got_array.shape} != numpy's {want.shape}"
    assert got_array.dtype == want.dtype, f"dtype {got_array.dtype} != numpy's {want.dtype}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got_array, want)
    else:
        tol = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5}.get(want.dtype, 1e-12)
        np.testing.assert_allclose(got_array, want, rtol=tol, atol=tol, equal_nan=True)


# Binary ops as (lazytensor spelling, numpy function). The lazytensor spelling is the Python
# operator where there is one, which also exercises the reflected form with a scalar on the left.
ARITHMETIC = {
    "add": (operator.add, np.add),
    "sub": (operator.sub, np.subtract),
    "mul": (operator.mul, np.multiply),
    "truediv": (operator.truediv, np.true_divide),
    "floordiv": (operator.floordiv, np.floor_divide),
    "mod": (operator.mod, np.remainder),
    "pow": (operator.pow, np.power),
}
COMPARISONS = {
    "lt": (operator.lt, np.less), "le": (operator.le, np.less_equal),
    "gt": (operator.gt, np.greater), "ge": (operator.ge, np.greater_equal),
    "eq": (operator.eq, np.equal), "ne": (operator.ne, np.not_equal),
}
OTHER_BINARY = {
    "and": (operator.and_, np.bitwise_and), "or": (operator.or_, np.bitwise_or),
    "xor": (operator.xor, np.bitwise_xor),
    "maximum": (lt.maximum, np.maximum), "minimum": (lt.minimum, np.minimum),
}
BINARY = {**ARITHMETIC, **COMPARISONS, **OTHER_BINARY}


def contract(a, b, axis: int):
    """sum(a * b, axis, keepdims) of two tensors (broadcast), summed in their dtype as a matrix
    product is (conv2d's and Winograd's products; a float32 .sum() goes through float64)."""
    from lazytensor.ir.arith import sum_of_products
    from lazytensor.operands import operands
    (left, right), device = operands(a, b, name="contract")
    return lt.Tensor(sum_of_products(left, right, (axis,), left.dtype), device)
