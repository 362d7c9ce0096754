"""lt.nn.init, lt.nn.utils, Parameter.data, register_buffer(persistent=False), and the torch
options of Embedding (padding_idx) and LayerNorm (bias), against PyTorch.

- init: fans and gains equal torch's (every nonlinearity, shapes of 2 to 4 axes); each
  function fills in place (the same Parameter, still a leaf that requires grad, no gradient
  recorded), and its values have the distribution torch's formula says (bounds, mean, std on a
  large tensor; truncation);
- clip_grad_norm_ / clip_grad_value_: the returned norm and the scaled gradients equal torch's
  for norm types 1, 2, 3 and inf, clipping or not; the non-finite check;
- the docstring examples of lt.nn.init and lt.nn.utils run (test_docstrings covers lt.nn's
  classes and lt.nn.functional).
"""
from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import lazytensor as lt
from lazytensor import nn

torch = pytest.importorskip("torch")

SHAPES = [(5, 3), (4, 6, 3), (8, 2, 3, 5), (1, 7)]


# ---- init --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fans_match_torch(shape):
    assert nn.init._calculate_fan_in_and_fan_out(lt.zeros(shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))


@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
    ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)])
def test_gain_matches_torch(nonlinearity, param):
    assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15)


def _check_in_place(function, *args, shape=(300, 200), **kwargs):
    p = nn.Parameter(lt.zeros(shape))
    out = function(p, *args, **kwargs)
    assert out is p and p.requires_grad and p.is_leaf and p.grad is None
    assert isinstance(p, nn.Parameter) and p.shape == shape and p.dtype == lt.float32
    (p * 2).sum().backward()   # still a leaf of new graphs
    assert p.grad is not None
    return p.numpy().astype(np.float64)


# (function, args, kwargs, expected (low, high) bounds or None, mean, std) from torch's formulas
FAN_IN, FAN_OUT = 200, 300
XAVIER_STD = math.sqrt(2 / (FAN_IN + FAN_OUT))
INIT_CASES = {
    "uniform": (nn.init.uniform_, (-0.5, 1.5), {}, (-0.5, 1.5), 0.5, 2 / math.sqrt(12)),
    "normal": (nn.init.normal_, (), dict(mean=0.3, std=0.02), None, 0.3, 0.02),
    "xavier_uniform": (nn.init.xavier_uniform_, (), dict(gain=2.0), (-2 * math.sqrt(3) * XAVIER_STD,
                                                                  2 * math.sqrt(3) * XAVIER_STD), 0, 2 * XAVIER_STD),
    "xavier_normal": (nn.init.xavier_normal_, (), {}, None, 0, XAVIER_STD),
    "kaiming_uniform": (nn.init.kaiming_uniform_, (), dict(a=math.sqrt(5)),
                        (-1 / math.sqrt(FAN_IN), 1 / math.sqrt(FAN_IN)), 0, 1 / math.sqrt(3 * FAN_IN)),
    "kaiming_normal_fan_out": (nn.init.kaiming_normal_, (), dict(mode="fan_out", nonlinearity="relu"), None, 0,
                               math.sqrt(2 / FAN_OUT)),
    "trunc_normal": (nn.init.trunc_normal_, (), dict(mean=0.1, std=0.02, a=0.08, b=0.14), (0.08, 0.14), None, None),
}


@pytest.mark.parametrize("case", INIT_CASES, ids=list(INIT_CASES))
def test_random_init_in_place_with_torch_distribution(case):
    function, args, kwargs, bounds, mean, std = INIT_CASES[case]
    lt.manual_seed(0)
    values = _check_in_place(function, *args, **kwargs)
    if bounds is not None:
        assert bounds[0] <= values.min() and values.max() <= bounds[1]
        span = bounds[1] - bounds[0]
        assert values.min() < bounds[0] + 0.01 * span and values.max() > bounds[1] - 0.01 * span
    if mean is not None:
        assert abs(values.mean() - mean) < 5 * std / math.sqrt(values.size) + 1e-7
        assert values.std() == pytest.approx(std, rel=0.01)
    # torch's function on a tensor of the same shape: the same distribution (two-sample moments)
    theirs = getattr(torch.nn.init, function.__name__)(torch.zeros(300, 200), *args, **kwargs).numpy()
    assert values.mean() == pytest.approx(theirs.mean(), abs=6 * theirs.std() / math.sqrt(theirs.size) + 1e-7)
    assert values.std() == pytest.approx(theirs.std(), rel=0.02)


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
def test_trunc_normal_far_in_a_tail():
    lt.manual_seed(1)
    values = nn.init.trunc_normal_(lt.zeros(20000), mean=0.0, std=1.0, a=3.0, b=4.0).numpy()
    theirs = torch.nn.init.trunc_normal_(torch.zeros(20000), a=3.0, b=4.0).numpy()
    assert values.min() >= 3.0 and values.max() <= 4.0
    assert values.mean() == pytest.approx(theirs.mean(), abs=0.01)


def test_constant_inits_and_eye():
    assert (_check_in_place(nn.init.constant_, 0.25, shape=(3, 2)) == 0.25).all()
    assert (_check_in_place(nn.init.ones_, shape=(3, 2)) == 1).all()
    assert (_check_in_place(nn.init.zeros_, shape=(3, 2)) == 0).all()
    np.testing.assert_array_equal(_check_in_place(nn.init.eye_, shape=(3, 4)), torch.nn.init.eye_(torch.zeros(3, 4)))


@pytest.mark.parametrize("shape", [(3, 5), (6, 2), (4, 2, 3)], ids=str)
def test_orthogonal(shape):
    w = _check_in_place(nn.init.orthogonal_, gain=2.0, shape=shape).reshape(shape[0], -1)
    small = min(w.shape)
    gram = w @ w.T if w.shape[0] == small else w.T @ w
    np.testing.assert_allclose(gram, 4 * np.eye(small), atol=1e-5)


def test_init_writes_through_views_and_data():
    linear = nn.Linear(4, 3)
    nn.init.kaiming_uniform_(linear.weight.T, mode="fan_out")   # torch's idiom for x @ w weights
    assert linear.weight.requires_grad and linear.weight.is_leaf
    nn.init.zeros_(linear.bias.data)
    assert not linear.bias.numpy().any()


def test_init_leaves_graphs_alone_and_errors():
    p = nn.Parameter(lt.ones((3, 2)))
    y = (p * 2).sum()
    nn.init.zeros_(p)
    with pytest.raises(RuntimeError, match="updated in place"):
        y.backward()   # (as an optimizer step after the forward pass)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        nn.init.xavier_uniform_(lt.zeros(3))
    with pytest.raises(ValueError, match="mode"):
        nn.init.kaiming_normal_(lt.zeros((2, 2)), mode="fan_avg")
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.init.calculate_gain("softsign")
    with pytest.raises(TypeError, match="floating"):
        nn.init.normal_(lt.zeros(3, dtype=lt.int32))
    assert nn.init.kaiming_uniform_(lt.zeros((0, 3))).shape == (0, 3)


# ---- clip_grad_norm_ / clip_grad_value_ ---------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, math.inf], ids=str)
@pytest.mark.parametrize("max_norm", [0.5, 1e3], ids=["clips", "keeps"])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,), (2, 3, 2))]
    mine = [nn.Parameter(lt.zeros(g.shape)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for p, q, g in zip(mine, theirs, grads):
        p.grad, q.grad = lt.asarray(g), torch.tensor(g)
    mine.append(nn.Parameter(lt.zeros(2)))   # no grad: left out
    total = nn.utils.clip_grad_norm_(iter(mine), max_norm, norm_type=norm_type)
    want = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert total.shape == () and total.item() == pytest.approx(want.item(), rel=1e-5)
    for p, q in zip(mine, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert mine[-1].grad is None


def test_clip_grad_norm_single_tensor_empty_and_nonfinite():
    p = nn.Parameter(lt.zeros(2))
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == 0.0
    p.grad = lt.asarray([3.0, 4.0])
    grad = p.grad
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    assert p.grad is grad   # scaled in place, as torch's mul_
    np.testing.assert_allclose(grad.numpy(), [0.6, 0.8], rtol=1e-5)
    p.grad = lt.asarray([math.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert np.isinf(nn.utils.clip_grad_norm_([p], 1.0).item())


def test_clip_grad_value_matches_torch():
    g = np.array([-3.0, -0.2, 0.4, 2.0, np.nan], np.float32)
    p, q = nn.Parameter(lt.zeros(5)), torch.nn.Parameter(torch.zeros(5))
    p.grad, q.grad = lt.asarray(g), torch.tensor(g)
    nn.utils.clip_grad_value_([p], 0.5)
    torch.nn.utils.clip_grad_value_([q], 0.5)
    np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


# ---- Parameter.data, register_buffer ------------------------------------------------------------

def test_parameter_data_reads_without_autograd():
    p = nn.Parameter(lt.asarray([1.0, 2.0, 3.0]))
    d = p.data
    assert not d.requires_grad and d.tolist() == [1.0, 2.0, 3.0]
    y = (d * p).sum()   # only the p factor carries a gradient
    y.backward()
    assert p.grad.tolist() == [1.0, 2.0, 3.0]


def test_parameter_data_writes_into_the_parameter():
    p = nn.Parameter(lt.asarray([1.0, 2.0, 3.0]))
    p.data[0] = 10.0
    p.data *= 2
    d = p.data
    d[1:] += 1
    assert p.tolist() == [20.0, 5.0, 7.0] and d.tolist() == [20.0, 5.0, 7.0]
    assert p.requires_grad and p.is_leaf
    (p * p).sum().backward()
    assert p.grad.tolist() == [40.0, 10.0, 14.0]


def test_parameter_data_assignment():
    linear = nn.Linear(3, 2)
    optimizer = lt.optim.SGD(linear.parameters(), lr=0.1)
    linear.weight.data = np.ones((2, 3), np.float32)
    assert linear.weight.tolist() == [[1.0] * 3] * 2 and linear.weight.is_leaf
    linear.weight.grad = lt.ones((2, 3))
    linear.weight.data = lt.zeros((4, 3), dtype=lt.float64)   # a new shape and dtype, as torch allows
    assert linear.weight.shape == (4, 3) and linear.weight.dtype == lt.float64 and linear.weight.grad is None
    linear.weight.data = lt.ones((2, 3))
    linear(lt.ones((1, 3))).sum().backward()
    optimizer.step()   # the optimizer still holds the same parameter
    np.testing.assert_allclose(linear.weight.numpy(), 0.9)


def test_non_persistent_buffers():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.register_buffer("mask", lt.ones(2), persistent=False)
            self.register_buffer("count", lt.zeros(()))

    net = Net()
    assert set(net.state_dict()) == {"fc.weight", "fc.bias", "count"}
    assert {name for name, _ in net.named_buffers()} == {"mask", "count"}
    net.load_state_dict({k: v.numpy() for k, v in net.state_dict().items()})
    with pytest.raises(KeyError, match="unexpected: mask"):
        net.load_state_dict({**net.state_dict(), "mask": lt.ones(2)})
    net.mask = lt.zeros(2)   # stays a buffer, still not persistent
    assert "mask" in dict(net.named_buffers()) and "mask" not in net.state_dict()
    net.register_buffer("mask", lt.zeros(2))   # registered again: persistent
    assert "mask" in net.state_dict()
    # torch's module with a non-persistent buffer: its state_dict loads
    t = torch.nn.Linear(2, 2)
    t.register_buffer("mask", torch.ones(2), persistent=False)
    m = nn.Linear(2, 2)
    m.register_buffer("mask", lt.ones(2), persistent=False)
    m.load_state_dict(t.state_dict())
    with pytest.raises(KeyError):
        net.register_buffer("fc", lt.ones(1))
    with pytest.raises(KeyError):
        net.register_buffer("a.b", lt.ones(1))
    with pytest.raises(TypeError):
        net.register_buffer("b", np.ones(1))


def test_module_apply():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    seen = []
    assert net.apply(seen.append) is net
    assert [type(m).__name__ for m in seen] == ["Linear", "ReLU", "Linear", "Sequential"]
    net.apply(lambda m: nn.init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert not net[0].weight.numpy().any()


# ---- Embedding(padding_idx), LayerNorm(bias) ----------------------------------------------------

@pytest.mark.parametrize("padding_idx", [2, -1])
def test_embedding_padding_idx_matches_torch(padding_idx):
    t = torch.nn.Embedding(6, 3, padding_idx=padding_idx)
    m = nn.Embedding(6, 3, padding_idx=padding_idx)
    assert not m.weight.numpy()[padding_idx].any()
    m.load_state_dict(t.state_dict())
    idx = np.array([[0, 2, 5], [5, 2, 1]])
    want, got = t(torch.tensor(idx)), m(lt.asarray(idx))
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    (want ** 2).sum().backward()
    (got ** 2).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(6, 3, padding_idx=6)


def test_layer_norm_without_bias_matches_torch():
    t = torch.nn.LayerNorm(5, bias=False)
    m = nn.LayerNorm(5, bias=False)
    assert list(m.state_dict()) == list(t.state_dict()) == ["weight"]
    with torch.no_grad():
        t.weight.mul_(1.5)
    m.load_state_dict(t.state_dict())
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(m(lt.asarray(x)).numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


# ---- the docstring examples of the submodules ---------------------------------------------------

DOCUMENTED = [(f"lt.nn.{module.__name__.rsplit('.', 1)[1]}.{name}", getattr(module, name))
              for module in (nn.init, nn.utils) for name in module.__all__]


@pytest.mark.parametrize("name, value", DOCUMENTED, ids=[name for name, _ in DOCUMENTED])
def test_docstring_examples_run(name, value):
    test = doctest.DocTestParser().get_doctest(value.__doc__ or "", {"lt": lt, "np": np}, name, None, 0)
    assert test.examples, f"{name}: no example"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = []
    runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)
