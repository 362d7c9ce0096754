"""Devices: their names, the errors for a device that is not here and for operands on two
devices, copies between devices (values, dtypes, shapes, the transfer counter), DLPack, failed
allocations and compilations, the kernel cache per device, LT_DEVICE, and a process without
pyopencl. Copies need no kernels, so these tests build few OpenCL programs."""
import operator
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

import lazytensor as lt
from conftest import assert_close, random_array
from lazytensor.backends.cuda.compiler import NVCCCompiler, nvcc_compile, nvcc_path
from lazytensor.devices import canonical_device, runtime

HAS_OPENCL = "opencl:0" in lt.devices()
needs_opencl = pytest.mark.skipif(not HAS_OPENCL, reason="no OpenCL device (needs pyopencl and a driver such as PoCL)")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc (the CUDA compiler) is not installed")


@pytest.fixture
def rng(request):
    # a fixed seed per test id, so a failure reproduces
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def transfers() -> int:
    return lt.stats()["transfers"]


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter, with `env` on top of this process's environment (whose
    LT_CACHE_DIR is the session's private cache) and LT_DEVICE unset unless given."""
    environment = {k: v for k, v in os.environ.items() if k != "LT_DEVICE"}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                          timeout=120)


# ---- names --------------------------------------------------------------------------------------

def test_devices_start_with_cpu_and_are_canonical():
    names = lt.devices()
    assert names[0] == "cpu"
    assert len(set(names)) == len(names), names
    assert all(canonical_device(name) == name for name in names)


def test_opencl_is_listed_where_pyopencl_has_a_device():
    cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed")
    try:
        count = sum(len(p.get_devices()) for p in cl.get_platforms())
    except cl.Error:
        count = 0
    if count == 0:
        pytest.skip("pyopencl has no OpenCL platform/device here (install pocl-opencl-icd)")
    listed = [d for d in lt.devices() if d.startswith("opencl:")]
    assert listed == [f"opencl:{i}" for i in range(count)]
    assert lt.devices().index("opencl:0") == 1  # right after the cpu


@pytest.mark.parametrize("name, canonical", [
    ("cpu", "cpu"), ("CPU", "cpu"), ("cpu:0", "cpu"), (" Cpu ", "cpu"),
    pytest.param("opencl", "opencl:0", marks=needs_opencl),
    pytest.param("OpenCL", "opencl:0", marks=needs_opencl),
    pytest.param("opencl:0", "opencl:0", marks=needs_opencl),
])
def test_canonical_names(name, canonical):
    assert canonical_device(name) == canonical
    assert lt.zeros(2, device=name).device == canonical       # (a constant: no memory, no kernel)
    assert lt.asarray([1, 2], device=name).device == canonical


UNKNOWN = ["cuda:7", "tpu", "opencl:99", "cpu:1", "opencl:-1", ""]
MAKERS = {
    "asarray": lambda d: lt.asarray([1.0, 2.0], device=d),
    "zeros": lambda d: lt.zeros((2, 3), device=d),
    "empty": lambda d: lt.empty((2,), device=d),
    "arange": lambda d: lt.arange(3, device=d),
    "from_dlpack": lambda d: lt.from_dlpack(np.arange(3), device=d),
    "to": lambda d: lt.arange(3).to(d),
    "to_device": lambda d: lt.arange(3).to_device(d),
    "astype": lambda d: lt.arange(3).astype(lt.float32, device=d),
}


@pytest.mark.parametrize("maker", MAKERS)
@pytest.mark.parametrize("name", UNKNOWN)
def test_unknown_device_lists_the_available_ones(name, maker):
    before = transfers()
    with pytest.raises(ValueError) as info:
        MAKERS[maker](name)
    message = str(info.value)
    assert repr(name) in message
    for available in lt.devices():
        assert available in message, message
    assert transfers() == before


# ---- operands on two devices ----------------------------------------------------------------------

CROSS_DEVICE = {
    "add": operator.add,
    "mul": operator.mul,
    "lt": operator.lt,
    "pow": operator.pow,
    "maximum": lt.maximum,
    "where-values": lambda a, b: lt.where(a > 0, a, b),
    "where-condition": lambda a, b: lt.where(b > 0, a, 1.0),
    "concat": lambda a, b: lt.concat([a, b]),
    "concat-axis-none": lambda a, b: lt.concat([a, b], axis=None),
    "stack": lambda a, b: lt.stack([a, b]),
    "matmul": lambda a, b: lt.matmul(a, b.T),
    "matmul-operator": lambda a, b: a @ b.T,
    "inplace-add": operator.iadd,
    "take": lambda a, b: lt.take(a, (b > 0).astype(lt.int64)),
    "integer-index": lambda a, b: a[(b > 0).astype(lt.int64)],
    "setitem-value": lambda a, b: a.__setitem__(slice(0, 1), b[0:1]),
    "vecdot": lambda a, b: lt.vecdot(a, b),
    "tensordot": lambda a, b: lt.tensordot(a, b.T, axes=1),
}


@needs_opencl
@pytest.mark.parametrize("first", ["cpu", "opencl:0"])
@pytest.mark.parametrize("op", CROSS_DEVICE)
def test_operands_on_two_devices_are_refused(op, first, rng):
    values = random_array(rng, (2, 3), lt.float32)
    other = "opencl:0" if first == "cpu" else "cpu"
    a, b = lt.asarray(values, device=first), lt.asarray(values, device=other)
    before = transfers()
    with pytest.raises(ValueError) as info:
        CROSS_DEVICE[op](a, b)
    message = str(info.value)
    assert "cpu" in message and "opencl:0" in message, message
    assert transfers() == before  # no silent copy


@needs_opencl
@pytest.mark.parametrize("first", ["cpu", "opencl:0"])
def test_searchsorted_on_two_devices_is_refused_at_the_call(first, rng):
    other = "opencl:0" if first == "cpu" else "cpu"
    sorted_values = np.sort(random_array(rng, (8,), lt.float32))
    with pytest.raises(ValueError) as info:
        lt.searchsorted(lt.asarray(sorted_values, device=first), lt.asarray(sorted_values[::3], device=other))
    assert "cpu" in str(info.value) and "opencl:0" in str(info.value)


@needs_opencl
@pytest.mark.parametrize("first", ["cpu", "opencl:0"])
@pytest.mark.parametrize("how", ["getitem", "setitem"])
def test_boolean_mask_on_another_device_is_refused(how, first, rng):
    other = "opencl:0" if first == "cpu" else "cpu"
    values = random_array(rng, (6,), lt.float32)
    x, mask = lt.asarray(values, device=first), lt.asarray(values > 0, device=other)
    with pytest.raises(ValueError) as info:
        if how == "getitem":
            x[mask]
        else:
            x[mask] = 1.0
    assert "cpu" in str(info.value) and "opencl:0" in str(info.value)


# ---- copies between devices -----------------------------------------------------------------------

COPY_DTYPES = [lt.bool_, lt.int8, lt.uint16, lt.int32, lt.int64, lt.uint64, lt.float16, lt.float32, lt.float64]
COPY_SHAPES = [(3, 5), (1,), (0, 4), (2, 0, 3), (4, 1, 2)]
COPIES = {
    "to": lambda x, d: x.to(d),
    "to_device": lambda x, d: x.to_device(d),
    "asarray": lambda x, d: lt.asarray(x, device=d),
    "astype": lambda x, d: x.astype(x.dtype, device=d),   # the same dtype: a pure copy
}


def special_values(dtype) -> np.ndarray:
    """The values a careless copy or conversion would get wrong."""
    np_dtype = np.dtype(dtype.name)
    if np_dtype.kind == "f":
        info = np.finfo(np_dtype)
        return np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, info.max, info.min, info.tiny,
                         info.smallest_subnormal, -info.smallest_subnormal, 1 / 3], dtype=np_dtype)
    if np_dtype.kind == "b":
        return np.array([True, False, True])
    info = np.iinfo(np_dtype)
    return np.array([info.min, info.max, 0, 1, info.max // 3, info.min + 1], dtype=np_dtype)


def assert_identical(got: np.ndarray, want: np.ndarray) -> None:
    """Same shape, dtype and bits (so -0.0, nan payloads and subnormals count)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert got.tobytes() == want.tobytes(), (got, want)


@needs_opencl
@pytest.mark.parametrize("shape", COPY_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", COPY_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("how", COPIES)
def test_copy_to_opencl_and_back(how, dtype, shape, rng):
    skip_without_fp64(dtype)
    values = random_array(rng, shape, dtype)
    x = lt.asarray(values)
    before = transfers()
    y = COPIES[how](x, "opencl")
    assert transfers() == before + 1
    assert y.device == "opencl:0" and x.device == "cpu"
    assert y.shape == shape and y.dtype == dtype
    assert_identical(y.numpy(), values)
    back = COPIES[how](y, "cpu")
    assert transfers() == before + 2
    assert back.device == "cpu" and back.shape == shape and back.dtype == dtype
    assert_identical(back.numpy(), values)
    assert_identical(x.numpy(), values)  # the source is untouched


def skip_without_fp64(dtype) -> None:
    if dtype is lt.float64 and not runtime("opencl:0").device.fp64:
        pytest.skip("this OpenCL device has no float64 (cl_khr_fp64)")


@needs_opencl
@pytest.mark.parametrize("dtype", COPY_DTYPES, ids=lambda d: d.name)
def test_copies_are_bit_exact(dtype):
    skip_without_fp64(dtype)
    values = special_values(dtype)
    y = lt.asarray(values).to("opencl")
    assert_identical(y.numpy(), values)
    assert_identical(y.to("cpu").numpy(), values)
    assert_identical(lt.asarray(values, device="opencl").to("cpu").numpy(), values)


@needs_opencl
@pytest.mark.parametrize("where", ["cpu", "opencl:0", "opencl"])
@pytest.mark.parametrize("how", COPIES)
def test_no_copy_when_already_there(how, where, rng):
    x = lt.asarray(random_array(rng, (3,), lt.int32), device=where)
    before = transfers()
    y = COPIES[how](x, where)
    assert transfers() == before
    assert y.device == x.device
    assert y is x or y.node is x.node   # the same tensor (astype of the same dtype: the same node)


@needs_opencl
@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("source", ["cpu", "opencl:0"])
def test_copy_of_a_0d_tensor_keeps_its_shape(how, source, rng):
    value = random_array(rng, (), lt.float32)
    x = lt.asarray(value, device=source)
    target = "cpu" if source != "cpu" else "opencl"
    y = COPIES[how](x, target)
    assert y.shape == ()
    assert_identical(y.numpy(), value)
    assert y.tolist() == value.item()


@needs_opencl
def test_copy_is_independent_of_the_source_memory(rng):
    values = random_array(rng, (4, 3), lt.int64)
    shared = np.array(values)
    x = lt.from_dlpack(shared)          # shares `shared`'s memory (cpu, C-contiguous)
    y = x.to("opencl")
    shared[...] = -1                    # later writes to the source...
    np.testing.assert_array_equal(y.numpy(), values)   # ...are not seen by the copy
    np.testing.assert_array_equal(x.numpy(), shared)


@needs_opencl
@pytest.mark.parametrize("view", ["transpose", "slice", "reshape", "broadcast"])
def test_views_are_copied_with_their_own_layout(view, rng):
    values = random_array(rng, (6, 4), lt.float32)
    x = lt.asarray(values)
    pick = {"transpose": lambda a: a.T, "slice": lambda a: a[::2, 1:],
            "reshape": lambda a: a.reshape(3, 8), "broadcast": lambda a: a[None, :, 1:2] + 0 * a[:1, None, :1]}[view]
    moved = pick(x).to("opencl")
    assert_close(moved.numpy(), pick(values))
    assert moved.to("cpu").shape == pick(values).shape


@needs_opencl
@pytest.mark.parametrize("source, dtype, target", [
    (lt.float32, lt.float16, "opencl"),
    (lt.float16, lt.uint64, "opencl"),
    (lt.int64, lt.bool_, "cpu"),
])
def test_astype_to_another_device_converts_there(source, dtype, target, rng):
    values = random_array(rng, (5, 7), source)
    if source.is_float:   # non-negative, several units: float -> uint64 is well defined
        values = (np.abs(values) * 30).astype(source.name)
    start = "cpu" if target != "cpu" else "opencl:0"
    x = lt.asarray(values, device=start)
    before = transfers()
    y = x.astype(dtype, device=target)
    assert transfers() == before + 1
    assert y.device == canonical_device(target) and y.dtype == dtype
    assert_identical(y.numpy(), values.astype(dtype.name))


@needs_opencl
def test_lazy_expression_computes_on_its_own_device_before_the_copy(rng):
    values = random_array(rng, (9, 11), lt.float32)
    cpu_kernels = runtime("cpu").by_expression
    gpu_kernels = runtime("opencl:0").by_expression
    cpu_kernels.clear()   # (counted below: a full LRU, 128 kernels on OpenCL, would not grow)
    gpu_kernels.clear()
    # cpu -> opencl: the cpu computes
    lazy = (lt.asarray(values) * 1.75 - 0.5).abs() + 0.25
    n_cpu, n_gpu, before = len(cpu_kernels), len(gpu_kernels), transfers()
    moved = lazy.to("opencl")
    assert transfers() == before + 1
    assert len(cpu_kernels) == n_cpu + 1 and len(gpu_kernels) == n_gpu
    assert moved.device == "opencl:0"
    assert_close(moved.numpy(), np.abs(values * np.float32(1.75) - np.float32(0.5)) + np.float32(0.25))
    # opencl -> cpu: the opencl device computes
    lazy = lt.maximum(lt.asarray(values, device="opencl") * -2.25, 0.125)
    n_cpu, n_gpu = len(cpu_kernels), len(gpu_kernels)
    back = lazy.to("cpu")
    assert len(gpu_kernels) == n_gpu + 1 and len(cpu_kernels) == n_cpu
    assert back.device == "cpu"
    assert_close(back.numpy(), np.maximum(values * np.float32(-2.25), np.float32(0.125)))


@needs_opencl
def test_round_trip_of_a_computed_result(rng):
    a, b = random_array(rng, (7, 13), lt.float32), random_array(rng, (13,), lt.float32)
    on_gpu = lt.asarray(a).to("opencl") * lt.asarray(b, device="opencl")
    back = on_gpu.to("cpu")
    assert back.device == "cpu"
    assert_close(back.numpy(), a * b)
    assert_close((back + 1).numpy(), a * b + 1)  # and it computes on the cpu afterwards


# ---- DLPack ---------------------------------------------------------------------------------------

@needs_opencl
def test_dlpack_export_from_opencl_is_refused(rng):
    y = lt.asarray(random_array(rng, (3,), lt.float32), device="opencl")
    with pytest.raises(BufferError, match=r"\.to\('cpu'\)"):
        y.__dlpack__()
    with pytest.raises(BufferError, match="opencl:0"):
        np.from_dlpack(y)
    with pytest.raises(BufferError):
        np.from_dlpack(y, device="cpu", copy=False)   # a host view of device memory cannot be
    assert y.__dlpack_device__() == (4, 0)   # kDLOpenCL, device 0
    np.testing.assert_array_equal(np.from_dlpack(y.to("cpu")), y.numpy())


@needs_opencl
def test_dlpack_host_copy_when_asked_for(rng):
    values = random_array(rng, (3, 4), lt.float32)
    y = lt.asarray(values, device="opencl") * 2   # (computed on the device first)
    for copy in (None, True):
        host = np.from_dlpack(y, device="cpu", copy=copy)
        assert_identical(host, values * np.float32(2))
        host[...] = 0                             # a copy of its own: the tensor is untouched
        assert_identical(y.numpy(), values * np.float32(2))


def test_dlpack_device_of_cpu_tensors():
    assert lt.arange(3).__dlpack_device__() == (1, 0)   # kDLCPU
    assert (lt.arange(3) + 1).__dlpack_device__() == (1, 0)


@needs_opencl
@pytest.mark.parametrize("dtype", [lt.bool_, lt.uint8, lt.int64, lt.float16, lt.float32], ids=lambda d: d.name)
def test_from_dlpack_onto_opencl(dtype, rng):
    source = random_array(rng, (4, 6), dtype)
    kept = source.copy()
    for producer in (source, source.T, source[:, ::2]):   # contiguous and not
        x = lt.from_dlpack(producer, device="opencl")
        assert x.device == "opencl:0" and x.dtype == dtype and x.shape == producer.shape
        assert_identical(x.numpy(), np.ascontiguousarray(producer))
    x = lt.from_dlpack(source, device="opencl")
    source[...] = source[::-1]      # a copy on the device: later writes are not seen
    assert_identical(x.numpy(), kept)


# ---- failures: allocation and compilation ---------------------------------------------------------

@needs_opencl
def test_allocation_beyond_the_device_raises_memory_error():
    nbytes = 2 ** 40 * 4
    with pytest.raises(MemoryError) as info:
        lt.empty((2 ** 40,), dtype=lt.float32, device="opencl")
    assert "opencl:0" in str(info.value) and str(nbytes) in str(info.value)
    with pytest.raises(MemoryError) as info:
        runtime("opencl:0").device.allocate((2 ** 20, 2 ** 20), lt.float32)
    assert "opencl:0" in str(info.value) and str(nbytes) in str(info.value)
    assert lt.empty((3,), device="opencl").shape == (3,)   # the device still works


@needs_opencl
def test_opencl_compile_error_names_device_kernel_and_how_to_see_the_source():
    with pytest.raises(RuntimeError) as info:
        runtime("opencl:0").compiler.compile("__kernel void k(){ this is not C; }", "k_bad")
    message = str(info.value)
    assert "opencl:0" in message and "k_bad" in message and "LT_DEBUG=2" in message
    assert "error" in message.lower()   # the OpenCL compiler's own message is kept


@needs_nvcc
def test_cuda_compile_error_names_kernel_and_keeps_nvcc_message():
    with pytest.raises(RuntimeError) as info:
        NVCCCompiler("cuda:0 (test)", "sm_90", "").compile("bad source", "k_bad")
    message = str(info.value)
    assert "cuda:0 (test)" in message and "k_bad" in message and "LT_DEBUG=2" in message
    assert 'identifier "bad" is undefined' in message   # nvcc's message
    assert len(nvcc_compile('extern "C" __global__ void k_good(float* x) { x[0] = 1.0f; }', "sm_90", "ptx")) > 0


# ---- the kernel cache is per device ----------------------------------------------------------------

def builds() -> int:
    """Kernels compiled or loaded from the disk cache (a session may reuse LT_CACHE_DIR)."""
    stats = lt.stats()
    return stats["kernels_compiled"] + stats["disk_cache_hits"]


@needs_opencl
def test_kernel_cache_is_kept_per_device(rng):
    def expression(device):
        x = lt.asarray(random_array(rng, (11, 17), lt.float32), device=device)
        y = lt.asarray(random_array(rng, (17,), lt.float32), device=device)
        return x, y, (x * 0.375 + y).abs().sqrt() - y * y

    def want(x, y):
        return np.sqrt(np.abs(x.numpy() * np.float32(0.375) + y.numpy())) - y.numpy() * y.numpy()

    counts = []
    for device in ["cpu", "opencl:0", "opencl:0", "cpu"]:
        before = builds()
        x, y, result = expression(device)
        assert_close(result.numpy(), want(x, y))
        counts.append(builds() - before)
    assert counts == [1, 1, 0, 0]


# ---- LT_DEVICE ------------------------------------------------------------------------------------

@needs_opencl
def test_lt_device_picks_the_default_device():
    done = run_python("import lazytensor as lt\n"
                      "print(lt.asarray([1, 2]).device, lt.zeros(2).device, lt.arange(2).device)\n"
                      "print(lt.asarray([1, 2], device='cpu').device)\n"
                      "print(lt.asarray([1, 2]).tolist())", LT_DEVICE="opencl")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["opencl:0 opencl:0 opencl:0", "cpu", "[1, 2]"]


def test_lt_device_nonsense_is_a_clear_error():
    done = run_python("import lazytensor as lt\nprint(lt.devices())\nlt.asarray([1, 2])", LT_DEVICE="nonsense")
    assert done.returncode != 0
    assert done.stdout.strip() == str(lt.devices())   # importing and listing still work
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError") and "'nonsense'" in last, done.stderr
    assert all(name in last for name in lt.devices()), last


def test_lt_device_error_names_the_variable(monkeypatch):
    monkeypatch.setenv("LT_DEVICE", "nonsense")
    with pytest.raises(ValueError, match="LT_DEVICE"):
        lt.asarray([1, 2])


# ---- without pyopencl ------------------------------------------------------------------------------

def test_without_pyopencl_only_the_cpu_is_listed_and_works():
    code = """
import os, sys
sys.modules["pyopencl"] = None   # import pyopencl now raises ImportError
sys.modules["pycuda"] = None
import lazytensor as lt
assert lt.devices() == ("cpu",), lt.devices()
x = lt.arange(6).reshape(2, 3)
assert (x * 3 + 1).sum(axis=1).tolist() == [12, 39]
for name in ("opencl", "opencl:0"):
    try:
        lt.zeros(2, device=name)
    except ValueError as error:
        assert "available devices: cpu" in str(error), error
    else:
        raise AssertionError("no error for " + name)
os.environ["LT_DEVICE"] = "opencl"
try:
    lt.asarray([1])
except ValueError as error:
    assert "'opencl'" in str(error), error
else:
    raise AssertionError("LT_DEVICE=opencl without pyopencl gave no error")
print("ok")
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_cpu_target_states_this_machines_caches(tmp_path, monkeypatch):
    """The cpu target's L1 and L2 sizes are the machine's where Linux describes them (the packing
    heuristics size panels by L2), and the defaults where it does not."""
    import os
    from lazytensor.backends.cpu import compiler
    from lazytensor.ir.target import Target
    target = compiler.host_target()
    assert 8 << 10 <= target.l1_bytes <= target.l2_bytes <= 64 << 20
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert compiler.cache_bytes(2, 0) == target.l2_bytes > 0
    assert compiler.cache_bytes(9, 1234) == 1234
    monkeypatch.setattr(compiler.os, "listdir", lambda path: (_ for _ in ()).throw(OSError("no sysfs")))
    assert compiler.cache_bytes(2, Target.l2_bytes) == Target.l2_bytes
