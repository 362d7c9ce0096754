"""Optimizers (lazytensor/optim.py).

- SGD (momentum, dampening, Nesterov, weight decay, maximize), Adam and AdamW: every parameter
  after each of 5 steps against a numpy transcription of PyTorch's update rules, and against
  torch.optim where torch is installed;
- a step keeps the parameters the same realized leaves, and after the second step compiles no
  new kernel (the learning rate and Adam's bias corrections are 0-d tensors, not constants);
- zero_grad, gradient accumulation, parameter groups, the errors of the constructors;
- a tiny MLP learns a separable problem with SGD(momentum) and with Adam;
- a NaN in the input reaches the loss.

The test problem: loss(a, b) = sum(A * a^2) + sum(B * sin(b)) + 0.1 * sum(a) * sum(b) for a of
shape (3, 5) and b of shape (7,), whose gradient numpy can write down.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import nn
from lazytensor.ir.ops import Op

FLOATS = [np.float32, np.float64]
STEPS = 5
TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12)}


# ---- the problem -----------------------------------------------------------------------------------

class Problem:
    """Two parameters of odd shapes and a quadratic-plus-sine loss, for lazytensor, torch and numpy."""

    shapes = ((3, 5), (7,))

    def __init__(self, dtype, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.dtype = np.dtype(dtype)
        self.A = rng.uniform(0.5, 2.0, self.shapes[0]).astype(dtype)
        self.B = rng.standard_normal(self.shapes[1]).astype(dtype)
        self.start = [rng.standard_normal(shape).astype(dtype) for shape in self.shapes]
        self.lt_constants = (lt.asarray(self.A), lt.asarray(self.B))

    def lt_params(self) -> list[lt.Tensor]:
        return [lt.asarray(p, requires_grad=True) for p in self.start]

    def lt_loss(self, a: lt.Tensor, b: lt.Tensor) -> lt.Tensor:
        A, B = self.lt_constants
        return (A * a * a).sum() + (B * b.sin()).sum() + 0.1 * a.sum() * b.sum()

    def torch_params(self, torch):
        return [torch.tensor(p, requires_grad=True) for p in self.start]

    def torch_loss(self, torch, a, b):
        A, B = torch.tensor(self.A), torch.tensor(self.B)
        return (A * a * a).sum() + (B * b.sin()).sum() + 0.1 * a.sum() * b.sum()

    def np_grads(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        return [2 * self.A * a + 0.1 * b.sum(), self.B * np.cos(b) + 0.1 * a.sum()]


def lt_step(problem: Problem, params: list[lt.Tensor], optimizer) -> lt.Tensor:
    optimizer.zero_grad()
    loss = problem.lt_loss(*params)
    loss.backward()
    optimizer.step()
    return loss


def assert_close(got, want, dtype, what: str = "") -> None:
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype} != {np.dtype(dtype)}"
    np.testing.assert_allclose(got, want, err_msg=what, **TOLERANCE[np.dtype(dtype)])


# ---- numpy transcriptions of torch.optim's update rules ---------------------------------------------
# Each takes one parameter p, its gradient g, its state dict and the step number t (from 1) and
# returns the new p. Written from the algorithms in PyTorch's documentation, and where the code
# differs from the documentation's pseudo-code, from the code (_single_tensor_sgd / _adam): maximize
# negates the gradient first, before weight decay is added.

def sgd_update(p, g, state, t, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
               maximize=False):
    if maximize:
        g = -g
    if weight_decay:
        g = g + weight_decay * p
    if momentum:
        buf = g if t == 1 else momentum * state["momentum_buffer"] + (1 - dampening) * g
        state["momentum_buffer"] = buf
        g = g + momentum * buf if nesterov else buf
    return p - lr * g


def adam_update(p, g, state, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False,
                decoupled=False):
    beta1, beta2 = betas
    if maximize:
        g = -g
    if decoupled:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    m = beta1 * state.get("exp_avg", 0.0) + (1 - beta1) * g
    v = beta2 * state.get("exp_avg_sq", 0.0) + (1 - beta2) * g * g
    state["exp_avg"], state["exp_avg_sq"] = m, v
    step_size = lr / (1 - beta1**t)
    denominator = np.sqrt(v) / math.sqrt(1 - beta2**t) + eps
    return p - step_size * m / denominator


def adamw_update(p, g, state, t, weight_decay=1e-2, **options):
    return adam_update(p, g, state, t, weight_decay=weight_decay, decoupled=True, **options)


UPDATES = {"SGD": sgd_update, "Adam": adam_update, "AdamW": adamw_update}

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.05, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    ("Adam", dict(lr=0.05, maximize=True)),
    ("AdamW", dict(lr=0.1)),
    ("AdamW", dict(lr=0.1, betas=(0.85, 0.95), weight_decay=0.3)),
]


def config_id(config) -> str:
    name, options = config
    return name + "-" + "-".join(f"{k}={v}" for k, v in options.items())


def numpy_trajectory(problem: Problem, name: str, options: dict, steps: int) -> list[list[np.ndarray]]:
    """The parameters after each step, by the numpy update rule (in float64)."""
    params = [p.astype(np.float64) for p in problem.start]
    states = [{} for _ in params]
    trajectory = []
    for t in range(1, steps + 1):
        grads = problem.np_grads(*params)
        params = [UPDATES[name](p, g, state, t, **options) for p, g, state in zip(params, grads, states)]
        trajectory.append(params)
    return trajectory


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_steps_match_numpy_reference(config, dtype):
    name, options = config
    problem = Problem(dtype)
    params = problem.lt_params()
    optimizer = getattr(lt.optim, name)(params, **options)
    for t, want in enumerate(numpy_trajectory(problem, name, options, STEPS), start=1):
        lt_step(problem, params, optimizer)
        for i, (p, w) in enumerate(zip(params, want)):
            assert_close(p.numpy(), w, dtype, f"parameter {i} after step {t}")


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_complex_parameters_step_as_pairs_of_reals(config):
    # PyTorch's rule: a complex parameter steps as its view_as_real (Adam's averages per part)
    name, options = config
    rng = np.random.default_rng(3)
    start, c = rng.standard_normal(4) + 1j * rng.standard_normal(4), 1 + 2j
    z = lt.asarray(start, requires_grad=True)
    optimizer = getattr(lt.optim, name)([z], **options)
    p, state = start.copy(), {}
    for t in range(1, 4):
        optimizer.zero_grad()
        (lt.abs(z * z - c) ** 2).sum().backward()
        optimizer.step()
        g = 4 * np.conj(p) * (p * p - c)   # d|z^2 - c|^2 / dRe + i d/dIm
        p = UPDATES[name](p.view(np.float64), g.view(np.float64), state, t, **options).view(np.complex128)
        np.testing.assert_allclose(z.numpy(), p, rtol=1e-12, atol=1e-12, err_msg=f"after step {t}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_steps_match_torch(config, dtype):
    torch = pytest.importorskip("torch")
    name, options = config
    problem = Problem(dtype)
    params, torch_params = problem.lt_params(), problem.torch_params(torch)
    optimizer = getattr(lt.optim, name)(params, **options)
    torch_optimizer = getattr(torch.optim, name)(torch_params, **options)
    for t in range(1, STEPS + 1):
        lt_step(problem, params, optimizer)
        torch_optimizer.zero_grad()
        problem.torch_loss(torch, *torch_params).backward()
        torch_optimizer.step()
        for i, (p, w) in enumerate(zip(params, torch_params)):
            assert_close(p.numpy(), w.detach().numpy(), dtype, f"parameter {i} after step {t}")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_a_tensor_learning_rate_steps_like_the_number(config, dtype):
    """lr as a 0-d tensor, halved in place after step 2, steps as the number halved there does
    (and stays the same tensor)."""
    name, options = config
    problem = Problem(dtype)
    by_number, by_tensor = problem.lt_params(), problem.lt_params()
    lr = lt.asarray(options["lr"], dtype=dtype)
    numbered = getattr(lt.optim, name)(by_number, **options)
    tensored = getattr(lt.optim, name)(by_tensor, **{**options, "lr": lr})
    for t in range(1, 5):
        if t == 3:
            numbered.param_groups[0]["lr"] *= 0.5
            lr *= 0.5
        lt_step(problem, by_number, numbered)
        lt_step(problem, by_tensor, tensored)
        for i, (a, b) in enumerate(zip(by_tensor, by_number)):
            assert_close(a.numpy(), b.numpy(), dtype, f"parameter {i} after step {t}")
    assert tensored.param_groups[0]["lr"] is lr


# ---- what a step leaves behind --------------------------------------------------------------------

STATEFUL = [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
            ("Adam", dict(lr=0.05, weight_decay=0.01)),
            ("AdamW", dict(lr=0.05))]


@pytest.mark.parametrize("config", STATEFUL, ids=config_id)
def test_parameters_stay_the_same_realized_leaves(config):
    name, options = config
    problem = Problem(np.float32)
    params = problem.lt_params()
    optimizer = getattr(lt.optim, name)(params, **options)
    for _ in range(3):
        lt_step(problem, params, optimizer)
        assert all(a is b for a, b in zip(optimizer.param_groups[0]["params"], params))
        for p in params:
            assert p.is_leaf and p.requires_grad
            assert p.node.op is Op.BUFFER and p.node.src == (), "the parameter holds a graph, not a buffer"
        for state in optimizer.state.values():
            for key, value in state.items():
                if isinstance(value, lt.Tensor):
                    assert value.node.op is Op.BUFFER, f"optimizer state {key!r} holds a graph"


@pytest.mark.parametrize("config", STATEFUL, ids=config_id)
def test_steps_after_the_second_compile_no_kernels(config):
    """Step 3 onwards (and a changed learning rate) reuse the kernels compiled before."""
    name, options = config
    problem = Problem(np.float64, seed=1)
    params = problem.lt_params()
    optimizer = getattr(lt.optim, name)(params, **options)
    for step in range(1, 11):
        if step == 7:
            optimizer.param_groups[0]["lr"] *= 0.5     # as a learning-rate schedule does
        loss = lt_step(problem, params, optimizer)
        loss.item()
        lt.realize(*params)
        if step == 3:
            compiled = new_kernels()
    assert new_kernels() == compiled, "steps 4-10 compiled new kernels"


def new_kernels() -> int:
    """Kernels not found in memory: compiled here, or (compiled by another test process) read from disk."""
    stats = lt.stats()
    return stats["kernels_compiled"] + stats["disk_cache_hits"]


def test_module_parameters_keep_their_identity():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    before = list(model.parameters())
    optimizer = lt.optim.Adam(model.parameters(), lr=0.01)
    x = lt.asarray(np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32))
    for _ in range(2):
        optimizer.zero_grad()
        (model(x) ** 2).mean().backward()
        optimizer.step()
    assert all(a is b for a, b in zip(before, model.parameters()))
    assert all(p.is_leaf and p.node.op is Op.BUFFER for p in model.parameters())


# ---- gradients, groups, errors --------------------------------------------------------------------

def test_zero_grad_sets_grads_to_none():
    problem = Problem(np.float32)
    params = problem.lt_params()
    optimizer = lt.optim.SGD(params, lr=0.1)
    problem.lt_loss(*params).backward()
    assert all(p.grad is not None for p in params)
    optimizer.zero_grad()
    assert all(p.grad is None for p in params)
    optimizer.step()                       # no gradients: nothing moves
    for p, start in zip(params, problem.start):
        np.testing.assert_array_equal(p.numpy(), start)


def test_gradients_accumulate_without_zero_grad():
    problem = Problem(np.float64)
    params = problem.lt_params()
    problem.lt_loss(*params).backward()
    problem.lt_loss(*params).backward()
    grads = problem.np_grads(*problem.start)
    for p, g in zip(params, grads):
        assert_close(p.grad.numpy(), 2 * g, np.float64, "accumulated gradient")
    lt.optim.SGD(params, lr=0.1).step()
    for p, start, g in zip(params, problem.start, grads):
        assert_close(p.numpy(), start - 0.1 * 2 * g, np.float64, "step with the accumulated gradient")


def test_param_groups_with_their_own_learning_rates():
    problem = Problem(np.float64)
    a, b = problem.lt_params()
    optimizer = lt.optim.SGD([{"params": [a], "lr": 0.1}, {"params": [b]}], lr=0.01, momentum=0.5)
    assert [group["lr"] for group in optimizer.param_groups] == [0.1, 0.01]
    assert [group["momentum"] for group in optimizer.param_groups] == [0.5, 0.5]
    want = [p.astype(np.float64) for p in problem.start]
    states = [{}, {}]
    for t in range(1, 3):
        lt_step(problem, [a, b], optimizer)
        grads = problem.np_grads(*want)
        want = [sgd_update(p, g, s, t, lr=lr, momentum=0.5) for p, g, s, lr in zip(want, grads, states, (0.1, 0.01))]
        assert_close(a.numpy(), want[0], np.float64, f"a after step {t}")
        assert_close(b.numpy(), want[1], np.float64, f"b after step {t}")


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_step_counts_that_part_ways(name):
    """Parameters of a group share their step count and its bias corrections while they step
    together; one that misses a step (no gradient) keeps its own count from then on, and a second
    group with other betas its own corrections: each parameter as numpy's Adam with its count."""
    rng = np.random.default_rng(5)
    starts = [rng.standard_normal(shape) for shape in ((3, 4), (5,), (2, 2), (7,))]
    params = [lt.asarray(s, dtype=lt.float64).requires_grad_() for s in starts]
    optimizer = getattr(lt.optim, name)([{"params": params[:3]}, {"params": params[3:], "betas": (0.8, 0.9)}],
                                        lr=0.1)
    want, states, counts = [s.copy() for s in starts], [{} for _ in starts], [0] * len(starts)
    for step in range(4):
        stepping = [i for i in range(len(params)) if not (step == 1 and i == 1)]   # the second skips step 2
        optimizer.zero_grad()
        sum((params[i] * params[i] * (i + 1)).sum() for i in stepping).backward()
        optimizer.step()
        for i in stepping:
            counts[i] += 1
            betas = (0.8, 0.9) if i == 3 else (0.9, 0.999)
            want[i] = UPDATES[name](want[i], 2 * (i + 1) * want[i], states[i], counts[i], lr=0.1, betas=betas)
        for i, p in enumerate(params):
            assert_close(p.numpy(), want[i], np.float64, f"parameter {i} after step {step + 1}")
    assert [optimizer.state[p]["step"].item() for p in params] == counts


def test_step_with_closure_returns_the_loss():
    problem = Problem(np.float64)
    params = problem.lt_params()
    optimizer = lt.optim.SGD(params, lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = problem.lt_loss(*params)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    a, b = problem.start
    want = np.sum(problem.A * a * a) + np.sum(problem.B * np.sin(b)) + 0.1 * a.sum() * b.sum()
    np.testing.assert_allclose(loss.item(), want, rtol=1e-12)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_constructor_errors(name):
    optimizer = getattr(lt.optim, name)
    with pytest.raises(ValueError, match="empty"):
        optimizer([], lr=0.1)
    w = lt.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="leaf"):
        optimizer([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        optimizer([w], lr=-0.1)
    if name != "SGD":
        for betas in [(1.0, 0.999), (0.9, 1.0), (-0.1, 0.999)]:
            with pytest.raises(ValueError, match="betas"):
                optimizer([w], betas=betas)
        with pytest.raises(ValueError, match="eps"):
            optimizer([w], eps=-1e-8)


def test_sgd_option_errors():
    w = lt.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="momentum"):
        lt.optim.SGD([w], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="Nesterov"):
        lt.optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        lt.optim.SGD([w], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="weight_decay"):
        lt.optim.SGD([w], lr=0.1, weight_decay=-1)


# ---- training end to end -----------------------------------------------------------------------------

def separable_problem(n: int = 64, seed: int = 3) -> tuple[lt.Tensor, lt.Tensor]:
    """Points in the plane, labelled by the side of a line they fall on."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2)).astype(np.float32)
    y = (x @ np.array([1.0, -0.7]) + 0.2 > 0).astype(np.int64)
    return lt.asarray(x), lt.asarray(y)


def mlp(activation=nn.ReLU) -> nn.Module:
    lt.manual_seed(4)
    return nn.Sequential(nn.Linear(2, 16), activation(), nn.Linear(16, 2))


@pytest.mark.parametrize("name, options", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05))],
                         ids=["SGD-momentum", "Adam"])
def test_tiny_mlp_learns(name, options):
    x, y = separable_problem()
    model = mlp()
    optimizer = getattr(lt.optim, name)(model.parameters(), **options)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0], f"loss went from {losses[0]:.4f} to {losses[-1]:.4f}"


@pytest.mark.parametrize("activation", [
    nn.Tanh,
    nn.ReLU,
], ids=["tanh", "relu"])
def test_nan_input_makes_the_loss_nan(activation):
    x, y = separable_problem(8)
    x_with_nan = np.array(x.numpy())
    x_with_nan[3, 1] = np.nan
    loss = F.cross_entropy(mlp(activation)(lt.asarray(x_with_nan)), y)
    assert math.isnan(loss.item())


def test_a_parameter_in_two_groups_is_refused():
    w = lt.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="more than once"):
        lt.optim.SGD([{"params": [w]}, {"params": [w], "lr": 0.1}], lr=0.01)
    with pytest.raises(ValueError, match="more than once"):
        lt.optim.Adam([w, w])
