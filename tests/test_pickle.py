"""pickle, copy.copy and copy.deepcopy of tensors and modules (PyTorch's rules): values, dtype,
device and requires_grad survive; the graph does not (a copy is a leaf); deepcopy copies .grad
and refuses non-leaf tensors; a process pool can take tensors as arguments and results."""
import concurrent.futures
import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array

ALL_DTYPES = DTYPES + [lt.complex64, lt.complex128]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0, 3), (1,), (3, 4)], ids=str)
def test_pickle_round_trip_keeps_values_dtype_and_device(device, dtype, shape):
    rng = np.random.default_rng(len(shape))
    a = random_array(rng, shape, dtype) if not dtype.is_complex else \
        (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype.np)
    x = lt.asarray(a, device=device)
    for copied in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
        assert copied is not x and copied.dtype == dtype and copied.device == device
        assert_close(copied, a)


def test_every_dtype_pickles_as_itself():
    for dtype in ALL_DTYPES + [lt.bfloat16]:
        assert pickle.loads(pickle.dumps(dtype)) is dtype and copy.deepcopy(dtype) is dtype


def test_views_and_pending_values_are_copied_as_values(device):
    a = np.arange(24.0).reshape(4, 6)
    base = lt.asarray(a, device=device)
    view = base[::-2, 1:5]
    pending = view * 2 + 1
    for x, want in ((view, a[::-2, 1:5]), (pending, a[::-2, 1:5] * 2 + 1)):
        copied = pickle.loads(pickle.dumps(x))
        assert_close(copied, want)
        copied[0, 0] = -1.0   # (its own memory: the base does not change)
    assert_close(base, a)


def test_requires_grad_survives_and_the_copy_is_a_leaf():
    w = lt.asarray([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    copied = pickle.loads(pickle.dumps(w))
    assert copied.requires_grad and copied.is_leaf and copied.grad is None   # (pickle drops .grad)
    (copied * 3).sum().backward()
    assert_close(copied.grad, np.array([3.0, 3.0], np.float32))
    deep = copy.deepcopy(w)
    assert deep.requires_grad and deep.is_leaf and deep.grad is not w.grad
    assert_close(deep.grad, np.array([2.0, 4.0], np.float32))
    result = pickle.loads(pickle.dumps(w * 2))   # (a result pickles as a leaf of its values)
    assert result.requires_grad and result.is_leaf
    with pytest.raises(RuntimeError, match="leaf tensors only"):
        copy.deepcopy(w * 2)


def test_modules_deepcopy_and_pickle():
    model = lt.nn.Sequential(lt.nn.Linear(3, 4), lt.nn.ReLU(), lt.nn.Linear(4, 2))
    x = lt.asarray(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert_close(copied(x), model(x).numpy())
        params = list(copied.parameters())
        assert len(params) == 4 and all(type(p) is lt.nn.Parameter and p.requires_grad for p in params)
        assert all(p is not q for p, q in zip(params, model.parameters()))
        with lt.no_grad():
            params[0][0, 0] = 100.0   # (the copy's own memory)
    assert model[0].weight[0, 0].item() != 100.0


def _double(x):
    return x * 2


def test_a_process_pool_takes_and_returns_tensors():
    x = lt.asarray(np.arange(6.0).reshape(2, 3))
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        got = pool.submit(_double, x).result(timeout=300)
    assert isinstance(got, lt.Tensor)
    assert_close(got, np.arange(6.0).reshape(2, 3) * 2)


def test_a_checkpoint_of_model_and_optimizer_resumes_the_same_training():
    rng = np.random.default_rng(3)
    x = lt.asarray(rng.standard_normal((8, 3)).astype(np.float32))
    y = lt.asarray(rng.standard_normal((8, 2)).astype(np.float32))
    model = lt.nn.Linear(3, 2)
    optimizer = lt.optim.Adam(model.parameters(), lr=0.05)

    def step(model, optimizer):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss.item()

    step(model, optimizer)
    resumed_model, resumed_optimizer = pickle.loads(pickle.dumps((model, optimizer)))   # (one pickle: shared params)
    twin_model, twin_optimizer = copy.deepcopy((model, optimizer))
    losses = [step(model, optimizer) for _ in range(3)]
    assert [step(resumed_model, resumed_optimizer) for _ in range(3)] == losses
    assert [step(twin_model, twin_optimizer) for _ in range(3)] == losses
    assert_close(resumed_model.weight, twin_model.weight.numpy())


def test_joblib_workers_take_and_return_tensors():
    joblib = pytest.importorskip("joblib", reason="joblib is not installed")
    tensors = [lt.arange(n, dtype=lt.float64) for n in (1, 4, 7)]
    got = joblib.Parallel(n_jobs=2)(joblib.delayed(_double)(t) for t in tensors)
    for mine, t in zip(got, tensors):
        assert isinstance(mine, lt.Tensor)
        assert_close(mine, t.numpy() * 2)
