"""lt.jit: capture once, replay with new inputs; recapture on a new signature; clear errors for
what cannot be captured; the known pitfalls of capture-and-replay, each against eager results."""
from __future__ import annotations

import gc
import sys
import threading
import zlib

import numpy as np
import pytest

import lazytensor as lt
from lazytensor.autograd import is_leaf_node
from lazytensor.devices import runtime
from conftest import DTYPES, assert_close

nn, F = lt.nn, lt.nn.functional


@pytest.fixture
def rng(request):
    # a fixed seed per test id, so a failure reproduces
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def counts() -> tuple[int, int]:
    stats = lt.stats()
    return stats["jit_captures"], stats["jit_replays"]


def calls(f, *args):
    """(captures, replays) that calling f(*args) made."""
    before = counts()
    f(*args)
    after = counts()
    return after[0] - before[0], after[1] - before[1]


# ---- replay computes what the function computes ------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 5), (1, 7), (4, 1), (0, 3), (), (33, 65)])
def test_replays_compute_each_calls_inputs(rng, device, shape):
    @lt.jit
    def f(x, y, b):
        return lt.exp(x) * y + b, (x - y).sum(axis=-1) if x.ndim else x - y

    bias = rng.standard_normal(shape[-1:]).astype(np.float32)
    for call in range(4):
        x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        before = counts()
        first, second = f(lt.asarray(x, device=device), lt.asarray(y, device=device), lt.asarray(bias, device=device))
        np.testing.assert_allclose(first.numpy(), np.exp(x) * y + bias, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(second.numpy(), (x - y).sum(axis=-1) if x.ndim else x - y, rtol=1e-5, atol=1e-5)
        assert counts()[1] - before[1] == (call > 0)   # captured once, replayed after
        assert first.device == device


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_every_dtype_replays(rng, dtype):
    @lt.jit
    def f(x, y):
        return (x & y) if dtype == lt.bool_ else (x * y + x), lt.max(x, axis=0)

    for _ in range(3):
        x = rng.integers(0, 9, (5, 6)).astype(dtype.np)
        y = rng.integers(0, 9, (5, 6)).astype(dtype.np)
        a, b = f(lt.asarray(x), lt.asarray(y))
        assert_close(a.numpy(), (x & y) if dtype == lt.bool_ else (x * y + x))
        assert_close(b.numpy(), x.max(axis=0))


def test_strided_and_lazy_inputs_are_computed_first(rng):
    """A negative-stride view, a slice and a lazy result as inputs: each call's own values."""
    @lt.jit
    def f(x):
        return x * 2

    for _ in range(3):
        a = rng.standard_normal((6, 8)).astype(np.float32)
        view = lt.asarray(a)[::-1, 1::2]
        np.testing.assert_allclose(f(view).numpy(), a[::-1, 1::2] * 2)
        np.testing.assert_allclose(f(lt.asarray(a)[:, :4] + 1).numpy(), (a[:, :4] + 1) * 2, rtol=1e-6)


def test_results_keep_their_structure(rng):
    @lt.jit
    def f(x, scale):
        return {"double": x * 2, "parts": [x + 1, (x.sum(), None)], "scale": scale, "shape": x.shape}

    for _ in range(3):
        a = rng.standard_normal(4).astype(np.float32)
        out = f(lt.asarray(a), 3)
        assert set(out) == {"double", "parts", "scale", "shape"}
        np.testing.assert_allclose(out["double"].numpy(), a * 2)
        np.testing.assert_allclose(out["parts"][0].numpy(), a + 1)
        np.testing.assert_allclose(out["parts"][1][0].numpy(), a.sum(), rtol=1e-6)
        assert out["parts"][1][1] is None and out["scale"] == 3 and out["shape"] == (4,)


def test_tensors_inside_containers_and_keywords_are_inputs(rng):
    @lt.jit
    def f(pair, *, weights):
        return pair[0] @ weights["w"] + pair[1]

    for _ in range(3):
        a, w, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)
        out = f((lt.asarray(a), lt.asarray(b)), weights={"w": lt.asarray(w)})
        np.testing.assert_allclose(out.numpy(), a @ w + b, rtol=1e-10)


@pytest.mark.parametrize("name", ["conv2d", "linear", "max_pool2d", "avg_pool2d", "layer_norm", "softmax", "gelu",
                                  "compute"])
def test_layers_returned_bare_are_captured(rng, name):
    """A layer's result returned as it is (no bias or activation after it) is a tensor of its
    own: a library function that returned a view of a temporary it made (conv2d did, through a
    reshape) could not be jitted (the temporary escapes)."""
    import lazytensor.nn.functional as F
    x, w = rng.standard_normal((2, 3, 8, 8)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    r = lt.reduce_axis(8)
    layers = {"conv2d": lambda t, k: F.conv2d(t, k, padding=1), "linear": lambda t, k: F.linear(t, t[0, 0]),
              "max_pool2d": lambda t, k: F.max_pool2d(t, 2), "avg_pool2d": lambda t, k: F.avg_pool2d(t, 2),
              "layer_norm": lambda t, k: F.layer_norm(t, 8), "softmax": lambda t, k: F.softmax(t, dim=1),
              "gelu": lambda t, k: F.gelu(t),
              "compute": lambda t, k: lt.compute((2, 3), lambda i, j: lt.sum(t[i, j, 0, r], axis=r))}
    run = lt.jit(layers[name])
    for _ in range(3):
        got = run(lt.asarray(x), lt.asarray(w))
        np.testing.assert_allclose(got.numpy(), layers[name](lt.asarray(x), lt.asarray(w)).numpy(), rtol=1e-6, atol=1e-6)
        x = x + 1


def test_jit_with_or_without_parentheses(rng):
    a = rng.standard_normal(3)

    @lt.jit()
    def f(x):
        return x + 1
    for _ in range(2):
        np.testing.assert_allclose(f(lt.asarray(a)).numpy(), a + 1)
    with pytest.raises(TypeError, match="wraps a function"):
        lt.jit(3)


def test_a_jitted_method_captures_per_instance(rng):
    class Scaler:
        def __init__(self, k):
            self.k = k

        @lt.jit
        def apply(self, x):
            return x * self.k

    two, three = Scaler(2.0), Scaler(3.0)
    a = rng.standard_normal(5).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(two.apply(lt.asarray(a)).numpy(), a * 2)
        np.testing.assert_allclose(three.apply(lt.asarray(a)).numpy(), a * 3)


# ---- what selects a capture --------------------------------------------------------------------

def test_a_new_shape_dtype_or_static_argument_captures_again(rng):
    @lt.jit
    def f(x, power):
        return x ** power

    a = rng.random((3, 4)).astype(np.float32)
    assert calls(f, lt.asarray(a), 2) == (1, 0)
    assert calls(f, lt.asarray(a), 2) == (0, 1)
    for args in [(lt.asarray(a[:2]), 2), (lt.asarray(a.astype(np.float64)), 2), (lt.asarray(a), 3)]:
        assert calls(f, *args) == (1, 0)
        out = f(*args)   # and each is kept
        np.testing.assert_allclose(out.numpy(), args[0].numpy() ** args[1], rtol=1e-6)
    assert calls(f, lt.asarray(a), 2) == (0, 1)
    assert calls(f, lt.asarray(a), 2.0) == (1, 0)   # 2.0 is not 2: another type, another graph


def test_another_device_captures_again(rng):
    others = [d for d in lt.devices() if d != "cpu"]
    if not others:
        pytest.skip("one device only")

    @lt.jit
    def f(x):
        return x + 1

    a = rng.standard_normal(5).astype(np.float32)
    for device in ["cpu", others[0], "cpu", others[0]]:
        out = f(lt.asarray(a, device=device))
        assert out.device == device
        np.testing.assert_allclose(out.numpy(), a + 1)
    assert len(f.captures) == 2


def test_the_same_tensor_twice_is_another_signature(rng):
    @lt.jit
    def f(x, y):
        x += 1          # with y the same tensor, y changes too
        return x + y

    a, b = rng.standard_normal(3), rng.standard_normal(3)
    for _ in range(2):
        np.testing.assert_allclose(f(lt.asarray(a), lt.asarray(b)).numpy(), a + 1 + b)
    same = lt.asarray(a)
    np.testing.assert_allclose(f(same, same).numpy(), (a + 1) * 2)
    np.testing.assert_allclose(same.numpy(), a + 1)


def test_grad_mode_is_part_of_the_signature(rng):
    w = lt.asarray(rng.standard_normal(3), requires_grad=True)

    @lt.jit
    def f(x):
        return (x * w).detach() if lt.is_grad_enabled() else x * w * 10

    a = rng.standard_normal(3)
    for _ in range(2):
        np.testing.assert_allclose(f(lt.asarray(a)).numpy(), a * w.numpy())
        with lt.no_grad():
            np.testing.assert_allclose(f(lt.asarray(a)).numpy(), a * w.numpy() * 10)


def test_old_signatures_are_forgotten_beyond_the_limit(rng, monkeypatch):
    monkeypatch.setattr(sys.modules["lazytensor.jit"], "MAX_CAPTURES", 3)   # (lt.jit is the function)

    @lt.jit
    def f(x):
        return x * 2

    for n in range(1, 7):
        np.testing.assert_allclose(f(lt.ones(n)).numpy(), np.full(n, 2.0))
    assert len(f.captures) == 3


def test_signatures_holding_big_constants_are_forgotten_beyond_their_bytes(monkeypatch):
    """Each signature's capture holds the arrays the function made into tensors: the kept ones
    hold at most MAX_CONSTANT_BYTES of them (the newest is always kept)."""
    monkeypatch.setattr(sys.modules["lazytensor.jit"], "MAX_CONSTANT_BYTES", 10_000)

    @lt.jit
    def f(x):
        return x + lt.asarray(np.arange(x.shape[0] * 1000, dtype=np.float32).reshape(x.shape[0], 1000)).sum(axis=1)

    for n in range(1, 6):
        want = np.ones(n) + np.arange(n * 1000, dtype=np.float32).reshape(n, 1000).sum(axis=1)
        np.testing.assert_allclose(f(lt.ones(n)).numpy(), want, rtol=1e-6)
        assert sum(p.constant_bytes for p in f.captures.values()) <= 10_000 or len(f.captures) == 1
    assert 1 <= len(f.captures) < 5


# ---- errors at the call that causes them -------------------------------------------------------

@pytest.mark.parametrize("body", [
    lambda x: x * x.sum().item(),
    lambda x: x if x.sum() > 0 else -x,          # a Python branch on a value
    lambda x: x * float(x[0]),
    lambda x: lt.asarray(x.numpy() * 2),
    lambda x: x[x > 0],                          # a data-dependent shape
    lambda x: lt.nonzero(x)[0],
    lambda x: x.tolist(),
])
def test_reading_values_of_the_inputs_into_python_is_refused(rng, body):
    f = lt.jit(body)
    with pytest.raises(lt.CaptureError, match="depends on its inputs or state into Python"):
        f(lt.asarray(rng.standard_normal(5)))
    # nothing half-recorded stays behind: the function still runs eagerly, and so does the library
    assert not f.captures
    assert (lt.asarray([1.0, 2.0]) * 2).tolist() == [2.0, 4.0]


def test_reading_values_of_the_state_into_python_is_refused():
    w = lt.asarray([1.0, 2.0, 3.0])

    @lt.jit
    def f(x):
        return x * w.sum().item()

    with pytest.raises(lt.CaptureError):
        f(lt.ones(3))


def test_values_that_do_not_depend_on_the_call_may_be_read(rng):
    """Constants made inside (a value read of them is the same at every call), and in-place
    writes with static indices, which read their own index maps."""
    @lt.jit
    def f(x):
        n = int(lt.arange(5).sum().item())   # 10, at every call
        x = x * n
        x[1:3] = 0.0
        return x

    for _ in range(3):
        a = rng.standard_normal(5).astype(np.float32)
        want = a * 10
        want[1:3] = 0
        np.testing.assert_allclose(f(lt.asarray(a)).numpy(), want, rtol=1e-6)


def test_copies_between_devices_are_refused():
    others = [d for d in lt.devices() if d != "cpu"]
    if not others:
        pytest.skip("one device only")
    f = lt.jit(lambda x: x.to(others[0]) + 1)
    with pytest.raises(lt.CaptureError):
        f(lt.ones(3))


def test_results_with_gradient_history_are_refused():
    w = lt.ones(3, requires_grad=True)
    f = lt.jit(lambda x: x * w)
    with pytest.raises(lt.CaptureError, match="gradient history"):
        f(lt.ones(3))
    with lt.no_grad():   # the suggested fixes work
        np.testing.assert_allclose(f(lt.ones(3) * 2).numpy(), [2.0] * 3)
    np.testing.assert_allclose(lt.jit(lambda x: (x * w).detach())(lt.ones(3)).numpy(), [1.0] * 3)


@pytest.mark.parametrize("argument, message", [
    (np.ones(3), "numpy array"),
    ([lt.ones(2), {"a": {1, 2}}], "neither a tensor nor hashable"),
])
def test_arguments_that_cannot_select_a_capture_are_refused(argument, message):
    with pytest.raises(TypeError, match=message):
        lt.jit(lambda a: a)(argument)


def test_a_function_that_keeps_new_tensors_each_call_is_refused():
    kept = []

    @lt.jit
    def f(x):
        y = x * 2
        kept.append(y)   # a Python side effect a replay cannot repeat
        return x + 1

    f(lt.ones(2))   # (a first call may create state)
    with pytest.raises(lt.CaptureError, match="keeps tensors it made"):
        f(lt.ones(2))


# ---- the pitfalls of capture and replay --------------------------------------------------------

def test_python_numbers_are_fixed_at_capture_and_arguments_are_not(rng):
    """As in jax.jit: a Python number the body reads is part of the captured kernels; pass it as
    an argument (a new value captures again) or as a tensor (an input) when it changes."""
    scale = 2.0

    @lt.jit
    def fixed(x):
        return x * scale

    @lt.jit
    def passed(x, s):
        return x * s

    a = lt.asarray(rng.standard_normal(4))
    fixed(a)
    scale = 5.0
    np.testing.assert_allclose(fixed(a).numpy(), a.numpy() * 2.0)   # captured with 2.0
    for s in (2.0, 5.0, lt.asarray(7.0, dtype=lt.float64), lt.asarray(9.0, dtype=lt.float64)):
        np.testing.assert_allclose(passed(a, s).numpy(), a.numpy() * float(np.asarray(s)))


def test_state_is_read_at_each_call(rng):
    """A tensor made before the first call and changed outside the function between calls (in
    place, or given a new value lazily): each replay reads what it holds then."""
    w = lt.asarray(rng.standard_normal(4))

    @lt.jit
    def f(x):
        return x * w

    a = rng.standard_normal(4)
    for step in range(4):
        np.testing.assert_allclose(f(lt.asarray(a)).numpy(), a * w.numpy())
        w += 1.0 if step % 2 else lt.asarray(rng.standard_normal(4))   # lazy: computed at the replay
    assert len(f.captures) == 1


def test_results_are_new_memory_at_each_call(rng):
    """A replay never writes into the results of an earlier call (the CUDA graphs pitfall)."""
    @lt.jit
    def f(x):
        return x * 2, x

    a, b = rng.standard_normal(5), rng.standard_normal(5)
    first = f(lt.asarray(a))
    second = f(lt.asarray(b))
    third = f(lt.asarray(a + b))
    np.testing.assert_allclose(first[0].numpy(), a * 2)
    np.testing.assert_allclose(second[0].numpy(), b * 2)
    np.testing.assert_allclose(third[0].numpy(), (a + b) * 2)
    np.testing.assert_allclose(second[1].numpy(), b)   # an input returned as it is


def test_a_parameter_returned_as_it_is_stays_the_parameters_own():
    """A replay's result is a new tensor over the value, never the leaf node of the parameter
    it was (which would make the result look like that parameter to autograd)."""
    w = lt.ones(3, requires_grad=True)
    f = lt.jit(lambda x: x)
    results = [f(w) for _ in range(3)]
    assert results[0] is w   # (the call that captures runs the function: it returns its input)
    for out in results[1:]:
        assert out.node is not w.node and not out.requires_grad
        np.testing.assert_array_equal(out.numpy(), [1.0, 1.0, 1.0])
    assert is_leaf_node(w)


def test_in_place_updates_of_inputs_are_replayed(rng):
    @lt.jit
    def f(x, y):
        x += y          # the caller's x changes
        y[0] = -1.0
        return x * 2

    for _ in range(3):
        a, b = rng.standard_normal(4), rng.standard_normal(4)
        x, y = lt.asarray(a), lt.asarray(b)
        out = f(x, y)
        np.testing.assert_allclose(x.numpy(), a + b)
        np.testing.assert_allclose(out.numpy(), (a + b) * 2)
        np.testing.assert_allclose(y.numpy(), np.concatenate([[-1.0], b[1:]]))


def test_random_values_are_new_at_each_call_and_follow_the_seed():
    @lt.jit
    def noisy(x):
        return x + lt.rand(*x.shape) + lt.randn(*x.shape, seed=3)   # (a seed fixes its values)

    def eager(x):
        return x + lt.rand(*x.shape) + lt.randn(*x.shape, seed=3)

    x = lt.zeros(1000)
    lt.manual_seed(7)
    got = [noisy(x).numpy() for _ in range(3)]
    lt.manual_seed(7)
    want = [eager(x).numpy() for _ in range(3)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert not np.array_equal(got[1], got[2])


def test_nested_jit_is_part_of_the_outer_capture(rng):
    inner = lt.jit(lambda x: x * 3)

    @lt.jit
    def outer(x):
        return inner(x + 1) - 1

    for _ in range(3):
        a = rng.standard_normal(4)
        np.testing.assert_allclose(outer(lt.asarray(a)).numpy(), (a + 1) * 3 - 1)
    assert not inner.captures


def test_another_thread_runs_eagerly_during_a_capture(rng):
    """While one thread captures, another's work is its own (not recorded, not refused)."""
    started, finish = threading.Event(), threading.Event()
    seen = []

    @lt.jit
    def slow(x):
        started.set()
        finish.wait(10)
        return x + 1

    def other():
        started.wait(10)
        seen.append((lt.asarray([1.0, 2.0]) * 2).tolist())
        finish.set()

    thread = threading.Thread(target=other)
    thread.start()
    out = slow(lt.ones(2))
    thread.join()
    assert seen == [[2.0, 4.0]]
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0])
    finish.set()
    np.testing.assert_allclose(slow(lt.ones(2) * 3).numpy(), [4.0, 4.0])   # its replay: its own kernels


# ---- training ------------------------------------------------------------------------------------

def _mlp(seed: int, dropout: float = 0.0, batch_norm: bool = False):
    rng = np.random.default_rng(seed)
    layers = [nn.Linear(20, 32)] + ([nn.BatchNorm1d(32)] if batch_norm else []) + [nn.ReLU()]
    layers += ([nn.Dropout(dropout)] if dropout else []) + [nn.Linear(32, 5)]
    model = nn.Sequential(*layers)
    model.load_state_dict({k: v if "running" in k else rng.standard_normal(v.shape).astype(np.float32) * 0.3
                           for k, v in model.state_dict().items()})
    return model


def _step(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def _batches(n: int, seed: int = 1, device: str = "cpu"):
    rng = np.random.default_rng(seed)
    return [(lt.asarray(rng.standard_normal((16, 20)).astype(np.float32), device=device),
             lt.asarray(rng.integers(0, 5, 16), device=device)) for _ in range(n)]


@pytest.mark.parametrize("make_optimizer", [
    lambda p: lt.optim.SGD(p, lr=0.1),
    lambda p: lt.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda p: lt.optim.Adam(p, lr=0.01),
    lambda p: lt.optim.AdamW(p, lr=0.01),
], ids=["sgd", "sgd-momentum", "adam", "adamw"])
def test_a_jitted_training_step_matches_the_eager_one(make_optimizer, device):
    """Parameters, optimizer state (momentum created by the first step; Adam's step count) and
    losses agree bit for bit with eager steps on the same batches."""
    eager_model, jit_model = _mlp(0).to(device), _mlp(0).to(device)
    eager = _step(eager_model, make_optimizer(eager_model.parameters()))
    jitted = lt.jit(_step(jit_model, make_optimizer(jit_model.parameters())))
    before = counts()
    for x, y in _batches(6, device=device):
        assert eager(x, y).item() == jitted(x, y).item()
    assert counts()[1] - before[1] >= 3   # replayed
    for a, b in zip(eager_model.parameters(), jit_model.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_dropout_and_batch_norm_train_like_eager():
    """New dropout masks at each replay (the same as eager from the same seed); batch norm's
    running statistics are updated by each replay."""
    eager_model, jit_model = _mlp(0, dropout=0.3, batch_norm=True), _mlp(0, dropout=0.3, batch_norm=True)
    eager = _step(eager_model, lt.optim.SGD(eager_model.parameters(), lr=0.1))
    jitted = lt.jit(_step(jit_model, lt.optim.SGD(jit_model.parameters(), lr=0.1)))
    batches = _batches(5)
    lt.manual_seed(0)
    want = [eager(x, y).item() for x, y in batches]
    lt.manual_seed(0)
    got = [jitted(x, y).item() for x, y in batches]
    np.testing.assert_allclose(got, want, rtol=1e-6)   # (the same masks: else they would differ by far)
    for (name, a), b in zip(eager_model.state_dict().items(), jit_model.state_dict().values()):
        # (a capture does not read the labels to check them, so its loss divides by the count of
        # labels it kept, where eager divides by the batch size: the last bit may differ)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7, err_msg=name)


def test_switching_to_eval_or_changing_the_learning_rate_captures_again():
    model = _mlp(0, dropout=0.5)
    optimizer = lt.optim.SGD(model.parameters(), lr=0.1)
    step = lt.jit(_step(model, optimizer))
    predict = lt.jit(lambda x: model(x))
    x, y = _batches(1)[0]
    for _ in range(3):
        step(x, y)
    with lt.no_grad():
        train_mode = [predict(x).numpy() for _ in range(2)]
        model.eval()
        eval_mode = [predict(x).numpy() for _ in range(2)]
        np.testing.assert_array_equal(eval_mode[0], eval_mode[1])   # no dropout, and the same
        assert not np.array_equal(train_mode[0], train_mode[1])     # dropout, new masks
        np.testing.assert_allclose(eval_mode[0], model(x).numpy())
    model.train()
    reference = _mlp(0, dropout=0.5)
    reference.load_state_dict(model.state_dict())
    optimizer.param_groups[0]["lr"] = 0.5
    weight = model[0].weight.numpy().copy()
    lt.manual_seed(1)
    step(x, y)
    lt.manual_seed(1)
    ref_opt = lt.optim.SGD(reference.parameters(), lr=0.5)
    _step(reference, ref_opt)(x, y)
    np.testing.assert_allclose(model[0].weight.numpy(), reference[0].weight.numpy(), rtol=1e-6)
    assert not np.array_equal(model[0].weight.numpy(), weight)


@pytest.mark.parametrize("as_tensor", [False, True], ids=["float-lr", "tensor-lr"])
def test_a_learning_rate_schedule_is_followed(as_tensor):
    """A float learning rate changed every step captures every step (right, not faster); a 0-d
    tensor learning rate changed in place is an input the replays read."""
    eager_model, jit_model = _mlp(0), _mlp(0)
    lrs = [lt.asarray(0.1, dtype=lt.float32) for _ in range(2)] if as_tensor else [0.1, 0.1]
    eager_opt = lt.optim.SGD(eager_model.parameters(), lr=lrs[0], momentum=0.9)
    jit_opt = lt.optim.SGD(jit_model.parameters(), lr=lrs[1], momentum=0.9)
    eager, jitted = _step(eager_model, eager_opt), lt.jit(_step(jit_model, jit_opt))
    before = counts()
    for i, (x, y) in enumerate(_batches(6)):
        for opt in (eager_opt, jit_opt):
            if as_tensor:
                opt.param_groups[0]["lr"] *= 0.5     # in place: the same tensor
            else:
                opt.param_groups[0]["lr"] = 0.1 * 0.5 ** i
        assert eager(x, y).item() == jitted(x, y).item()
    captures, replays = counts()[0] - before[0], counts()[1] - before[1]
    assert (captures, replays) == ((2, 4) if as_tensor else (6, 0))
    for a, b in zip(eager_model.parameters(), jit_model.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_parameter_or_layer_put_in_a_module_captures_again(rng):
    """State is the tensor objects the capture read; a called module is checked to hold the same
    parameters and sub-modules, so a new one put in is seen."""
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    predict = lt.jit(lambda x: model(x))
    x = lt.asarray(rng.standard_normal((2, 3)).astype(np.float32))
    with lt.no_grad():
        for change in [None, "weight", "layer"]:
            if change == "weight":
                model[0].weight = nn.Parameter(lt.asarray(rng.standard_normal((4, 3)).astype(np.float32)))
            elif change == "layer":
                setattr(model, "1", nn.Sigmoid())   # (Sequential names its layers by position)
            for _ in range(2):
                np.testing.assert_allclose(predict(x).numpy(), model.forward(x).numpy(), rtol=1e-6)
    assert lt.stats()["jit_replays"] > 0


def test_a_module_called_often_is_checked_once_per_replay():
    layer = nn.Linear(4, 4)
    model = nn.Sequential(layer, nn.Tanh())

    @lt.jit
    def f(x):
        with lt.no_grad():
            for _ in range(3):
                x = model(x)
        return x

    f(lt.ones((2, 4)))
    (program,) = f.captures.values()
    assert len(program.guards) == 3   # the Sequential, the Linear, the Tanh: once each


def test_gradients_accumulate_across_replays_like_eager(rng):
    """Without zero_grad, backward adds to .grad: each replay reads the gradient that is there."""
    w_eager = lt.asarray(rng.standard_normal(4), requires_grad=True)
    w_jit = lt.asarray(w_eager.numpy(), requires_grad=True)

    def accumulate(w):
        def f(x):
            (w * x).sum().backward()
        return f
    eager, jitted = accumulate(w_eager), lt.jit(accumulate(w_jit))
    for _ in range(4):
        x = lt.asarray(rng.standard_normal(4))
        eager(x)
        jitted(x)
        np.testing.assert_allclose(w_jit.grad.numpy(), w_eager.grad.numpy())
    w_jit.grad = None     # a gradient that is gone is another graph: captured again
    w_eager.grad = None
    eager(x)
    jitted(x)
    np.testing.assert_allclose(w_jit.grad.numpy(), w_eager.grad.numpy())


def test_intermediates_of_a_replay_share_memory(rng):
    """The captured program reuses each intermediate's memory after its last reader: a chain of
    8 realized steps of 4 MB each replays in two blocks of memory (each step writes where the
    step before last did), allocated once, not 8."""
    @lt.jit
    def chain(x):
        for _ in range(8):
            x = (x * 1.5 + 1.0).realize()
        return x

    a = rng.standard_normal(1 << 20).astype(np.float32)
    x = lt.asarray(a)
    chain(x)
    rt = runtime("cpu")
    allocate, addresses = rt.device.allocate, []

    def spy(shape, dtype):
        buffer = allocate(shape, dtype)
        addresses.append(buffer.address)
        return buffer
    rt.device.allocate = spy
    try:
        out = chain(x)
    finally:
        rt.device.allocate = allocate
    want = a
    for _ in range(8):
        want = want * np.float32(1.5) + np.float32(1.0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4)
    assert len(addresses) == 2 and len(set(addresses)) == 2


def test_a_long_jitted_loop_keeps_its_memory_flat():
    """2,000 replayed SGD steps: resident memory grows by less than 2 MB after the first 200."""
    import os
    if not os.path.exists("/proc/self/status"):
        pytest.skip("resident memory is read from /proc")
    from test_memory import _rss_mb
    model = _mlp(0)
    step = lt.jit(_step(model, lt.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)))
    x, y = _batches(1)[0]
    for i in range(2000):
        step(x, y)
        if i == 200:
            gc.collect()
            start = _rss_mb()
    gc.collect()
    assert _rss_mb() - start < 2.0
