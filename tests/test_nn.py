"""Neural-network functions and modules (lazytensor/nn).

- every function of nn.functional against a numpy reference written here (float32 and float64,
  odd shapes, batch of 1, non-square images, size-1 axes), and against torch.nn.functional where
  torch is installed;
- gradients of the layers against central finite differences in float64, and against torch;
- the errors raised at the call, naming the shapes;
- modules: registration, state_dict / save / load, train / eval, batch-norm running statistics,
  initialization bounds;
- a small conv + linear model's forward and backward on every available device.

A functional case is written once as `call(F, *tensors)`, where F is either lazytensor's or
torch's nn.functional: the two share names and argument order, so the same line drives both.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pytest

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import nn

FLOATS = [np.float32, np.float64]

# float32 results against a float64 reference: a few ulp of relative error, plus an absolute
# floor for values that cancel to near zero (sums of ~50 products in a convolution).
TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-5), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12)}

# The exact gelu uses the erf approximation of Abramowitz & Stegun 7.1.26, |error| < 1.5e-7, so
# |gelu - x * Phi(x)| <= 0.5 * |x| * 1.5e-7; it matters only for |x| < ~6 (beyond, erf rounds to
# +-1), so the error stays below 4.5e-7 (measured: 2.1e-7 near x = -3.1). 1e-6 covers it in float64.
ERF_APPROXIMATION_ERROR = 1.5e-7
GELU_ATOL = 1e-6

ERF = np.vectorize(math.erf, otypes=[np.float64])


# ---- helpers -------------------------------------------------------------------------------------

def normal(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float64, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(dtype)


def distinct(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """Distinct values in [-2, 2] in random order, spaced about 4/size apart: no ties for max pooling."""
    n = math.prod(shape)
    return ((rng.permutation(n) + rng.uniform(-0.4, 0.4, n)) * (4.0 / max(n, 1)) - 2).reshape(shape).astype(dtype)


def to_lt(array: np.ndarray, requires_grad: bool = False, device: str = "cpu") -> lt.Tensor:
    return lt.asarray(array, device=device, requires_grad=requires_grad)


def to_torch(torch, array: np.ndarray, requires_grad: bool = False):
    return torch.tensor(np.array(array), requires_grad=requires_grad)


def assert_matches(got, want: np.ndarray, dtype, atol: Optional[float] = None, what: str = "") -> None:
    """`got` (a lazytensor or torch result) has `dtype` and the reference's shape and values."""
    got = got.detach().numpy() if hasattr(got, "detach") and not isinstance(got, lt.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != reference {want.shape}"
    assert got.dtype == np.dtype(dtype), f"{what}: dtype {got.dtype} != {np.dtype(dtype)}"
    tolerance = dict(TOLERANCE[np.dtype(dtype)])
    if atol is not None:
        tolerance["atol"] = max(atol, tolerance["atol"])
    np.testing.assert_allclose(got, want.astype(np.float64), err_msg=what, **tolerance)


def pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


# ---- numpy references (float64) ------------------------------------------------------------------

def np_sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def np_gelu(x):
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)))


def np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def np_log_softmax(x, dim):
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


def np_softmax(x, dim):
    return np.exp(np_log_softmax(x, dim))


def np_linear(x, w, b=None):
    out = x @ w.T
    return out if b is None else out + b


def padded(x, padding, value=0.0):
    ph, pw = pair(padding)
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def output_size(size, kernel, stride, padding, dilation):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def window_slices(x_padded, kernel, stride, dilation, out_hw):
    """For each kernel offset (i, j): the strided slice of x_padded (N, C, oh, ow) it multiplies."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_hw
    for i in range(kh):
        for j in range(kw):
            yield i, j, x_padded[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]


def np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation by explicit loops over the kernel offsets of a padded array."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    stride, padding, dilation = pair(stride), pair(padding), pair(dilation)
    n, c_in, h, width = x.shape
    c_out, c_group, kh, kw = w.shape
    oh = output_size(h, kh, stride[0], padding[0], dilation[0])
    ow = output_size(width, kw, stride[1], padding[1], dilation[1])
    xp = padded(x, padding)
    out = np.zeros((n, c_out, oh, ow))
    per_group = c_out // groups
    for g in range(groups):
        outs = slice(g * per_group, (g + 1) * per_group)
        xs = xp[:, g * c_group:(g + 1) * c_group]
        for i, j, patch in window_slices(xs, (kh, kw), stride, dilation, (oh, ow)):
            out[:, outs] += np.einsum("nchw,oc->nohw", patch, w[outs, :, i, j])
    return out if b is None else out + b.astype(np.float64).reshape(1, -1, 1, 1)


def np_pool(x, kernel_size, stride, padding, dilation, kind):
    kernel = pair(kernel_size)
    stride = pair(stride) if stride is not None else kernel
    padding, dilation = pair(padding), pair(dilation)
    x = x.astype(np.float64)
    oh = output_size(x.shape[2], kernel[0], stride[0], padding[0], dilation[0])
    ow = output_size(x.shape[3], kernel[1], stride[1], padding[1], dilation[1])
    xp = padded(x, padding, -np.inf if kind == "max" else 0.0)
    windows = [patch for _, _, patch in window_slices(xp, kernel, stride, dilation, (oh, ow))]
    return np.max(windows, axis=0) if kind == "max" else np.sum(windows, axis=0) / (kernel[0] * kernel[1])


def np_max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1):
    return np_pool(x, kernel_size, stride, padding, dilation, "max")


def np_avg_pool2d(x, kernel_size, stride=None, padding=0):
    return np_pool(x, kernel_size, stride, padding, 1, "avg")


def np_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    out = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    out = out if weight is None else out * weight
    return out if bias is None else out + bias


def np_batch_norm_statistics(x):
    """(mean, biased variance, unbiased variance) per channel (axis 1)."""
    axes = (0,) + tuple(range(2, x.ndim))
    return x.mean(axis=axes), x.var(axis=axes), x.var(axis=axes, ddof=1)


def np_batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mean, var, _ = np_batch_norm_statistics(x)
    else:
        mean, var = running_mean, running_var
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    out = out if weight is None else out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def np_updated_running_stats(x, running_mean, running_var, momentum=0.1):
    """PyTorch's rule: running = (1 - momentum) * running + momentum * batch, with the batch's
    unbiased variance for the running variance."""
    mean, _, unbiased = np_batch_norm_statistics(x)
    return (1 - momentum) * running_mean + momentum * mean, (1 - momentum) * running_var + momentum * unbiased


def np_one_hot(labels, num_classes=-1):
    n = labels.max() + 1 if num_classes < 0 else num_classes
    return (labels[..., None] == np.arange(n)).astype(np.int64)


def np_reduce(loss, reduction, count=None):
    if reduction == "none":
        return loss
    total = loss.sum()
    return total if reduction == "sum" else total / (loss.size if count is None else count)


def np_nll_loss(log_probs, target, reduction="mean", ignore_index=-100):
    kept = target != ignore_index
    picked = np.take_along_axis(log_probs, np.where(kept, target, 0)[:, None], axis=1)[:, 0]
    return np_reduce(np.where(kept, -picked, 0.0), reduction, kept.sum())


def np_cross_entropy(logits, target, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    """PyTorch's: (1 - eps) * nll + eps * (mean over classes of -log p), ignored targets count
    nowhere (neither in the sum nor in the mean's denominator)."""
    log_probs = np_log_softmax(logits.astype(np.float64), 1)
    kept = target != ignore_index
    nll = np_nll_loss(log_probs, target, "none", ignore_index)
    smooth = np.where(kept, -log_probs.mean(axis=1), 0.0)
    return np_reduce((1 - label_smoothing) * nll + label_smoothing * smooth, reduction, kept.sum())


# ---- forward cases: lazytensor vs numpy, and vs torch --------------------------------------------

@dataclass
class Case:
    """One call of an nn.functional function. `call(F, *tensors)` works for lazytensor's and
    torch's F; `reference(*arrays)` is the numpy version; `inputs(rng, dtype)` makes the arrays
    (integer arrays stay integer); `grad_inputs` are the positions that get a gradient."""
    name: str
    call: Callable
    reference: Callable
    inputs: Callable
    grad_inputs: tuple[int, ...] = (0,)
    atol: Optional[float] = None

    def param(self):
        return pytest.param(self, id=self.name)


def floats(*shapes, scale: float = 1.0):
    return lambda rng, dtype: [normal(rng, shape, dtype, scale) for shape in shapes]


def targets(logit_shape, num_classes, ignored: int = 0, ignore_index: int = -100):
    """Random logits and integer targets, the first `ignored` targets set to ignore_index."""
    def make(rng, dtype):
        target_shape = logit_shape[:1] + logit_shape[2:]
        target = rng.integers(0, num_classes, target_shape).astype(np.int64)
        target.reshape(-1)[:ignored] = ignore_index
        return [normal(rng, logit_shape, dtype, 2.0), target]
    return make


def batch_norm_eval_inputs(x_shape):
    """x, running mean, running variance (positive), weight, bias."""
    def make(rng, dtype):
        c = x_shape[1]
        return [normal(rng, x_shape, dtype), normal(rng, (c,), dtype), rng.uniform(0.5, 2, c).astype(dtype),
                normal(rng, (c,), dtype), normal(rng, (c,), dtype)]
    return make


ACTIVATION_SHAPES = [(1,), (3, 1, 5), (2, 7)]
ACTIVATIONS = {
    "relu": (lambda F, x: F.relu(x), lambda x: np.maximum(x, 0)),
    "leaky_relu": (lambda F, x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "sigmoid": (lambda F, x: F.sigmoid(x), np_sigmoid),
    "tanh": (lambda F, x: F.tanh(x), np.tanh),
    "silu": (lambda F, x: F.silu(x), lambda x: x * np_sigmoid(x)),
    "softplus": (lambda F, x: F.softplus(x), lambda x: np.logaddexp(0.0, x)),
    "gelu": (lambda F, x: F.gelu(x), np_gelu),
    "gelu_tanh": (lambda F, x: F.gelu(x, approximate="tanh"), np_gelu_tanh),
}

FORWARD: list[Case] = []

for _name, (_call, _reference) in ACTIVATIONS.items():
    for _shape in ACTIVATION_SHAPES:
        # scale 8: sigmoid and tanh saturate
        FORWARD.append(Case(f"{_name}-{'x'.join(map(str, _shape))}", _call, _reference, floats(_shape, scale=8.0),
                            atol=GELU_ATOL if _name == "gelu" else None))

EXTREMES = [-100.0, -30.0, -20.5, -1.0, 0.0, 19.9, 20.1, 35.0, 100.0]   # softplus switches to x above 20
for _name in ("sigmoid", "silu", "softplus", "tanh"):
    FORWARD.append(Case(f"{_name}-extremes", *ACTIVATIONS[_name], lambda rng, dtype: [np.array(EXTREMES, dtype)]))

for _dim in (0, 1, -1):
    FORWARD.append(Case(f"softmax-dim{_dim}", lambda F, x, d=_dim: F.softmax(x, dim=d),
                        lambda x, d=_dim: np_softmax(x, d), floats((3, 5, 4))))
    FORWARD.append(Case(f"log_softmax-dim{_dim}", lambda F, x, d=_dim: F.log_softmax(x, dim=d),
                        lambda x, d=_dim: np_log_softmax(x, d), floats((3, 5, 4))))
FORWARD += [
    Case("softmax-1x1", lambda F, x: F.softmax(x, dim=1), lambda x: np_softmax(x, 1), floats((1, 1))),
    Case("linear-bias", lambda F, x, w, b: F.linear(x, w, b), np_linear, floats((2, 3), (4, 3), (4,)), (0, 1, 2)),
    Case("linear-3d-no-bias", lambda F, x, w: F.linear(x, w), np_linear, floats((1, 3, 5), (1, 5)), (0, 1)),
]

# (N, C_in, H, W), (C_out, C_in / groups, kH, kW), stride, padding, dilation, groups.

CONVOLUTIONS = {
    "plain-nonsquare": ((1, 3, 7, 5), (4, 3, 3, 3), 1, 0, 1, 1),
    "stride-pad-pairs": ((2, 2, 6, 9), (3, 2, 3, 2), (2, 1), (1, 0), 1, 1),
    "depthwise-dilated": ((1, 4, 8, 7), (4, 1, 3, 3), 1, 2, 2, 4),
    "kernel1x1-groups2": ((3, 4, 5, 5), (6, 2, 1, 1), 1, 0, 1, 2),
    "height1": ((1, 1, 1, 6), (2, 1, 1, 3), 1, (0, 1), 1, 1),
    "groups3-stride-dilation": ((2, 6, 9, 8), (3, 2, 2, 3), (3, 2), 0, (1, 2), 3),
    "kernel-fills-padded-input": ((1, 2, 3, 3), (2, 2, 5, 5), 1, 1, 1, 1),
    "stride-beyond-kernel": ((1, 2, 9, 10), (2, 2, 2, 2), (4, 3), 0, 1, 1),
    "groups3-stride3-pad1": ((2, 6, 9, 8), (3, 2, 2, 3), 3, 1, 1, 3),
    # enough output channels for vectors of them (the weights packed once, channels innermost)
    "channels16-odd-image": ((2, 5, 9, 13), (16, 5, 3, 3), 1, 1, 1, 1),
    "channels32-stride-dilation": ((1, 3, 11, 7), (32, 3, 3, 3), 2, 1, 2, 1),
    "channels48-kernel1x1": ((3, 7, 4, 6), (48, 7, 1, 1), 1, 0, 1, 1),
    "channels32-groups2": ((2, 4, 8, 8), (32, 2, 3, 3), 1, 1, 1, 2),
    # more channels than one tile's columns: the panel covers them all (packed once, not per row)
    "channels192-tiles": ((2, 3, 9, 10), (192, 3, 3, 3), 1, 1, 1, 1),
}


def conv_case(name, x_shape, w_shape, stride, padding, dilation, groups, bias=True):
    shapes = (x_shape, w_shape) + (((w_shape[0],),) if bias else ())
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    if bias:
        return Case(f"conv2d-{name}", lambda F, x, w, b: F.conv2d(x, w, b, **options),
                    lambda x, w, b: np_conv2d(x, w, b, **options), floats(*shapes), (0, 1, 2))
    return Case(f"conv2d-{name}-no-bias", lambda F, x, w: F.conv2d(x, w, None, **options),
                lambda x, w: np_conv2d(x, w, None, **options), floats(*shapes), (0, 1))


for _name, _spec in CONVOLUTIONS.items():
    FORWARD.append(conv_case(_name, *_spec))
FORWARD.append(conv_case("plain-nonsquare", *CONVOLUTIONS["plain-nonsquare"], bias=False))

# input shape, kernel_size, stride, padding, dilation (max only)
MAX_POOLS = {
    "2": ((2, 3, 6, 7), 2, None, 0, 1),
    "3-stride2-pad1": ((1, 2, 7, 5), 3, 2, 1, 1),
    "pairs-dilated": ((1, 1, 9, 8), (2, 3), (1, 2), (1, 1), (2, 1)),
    "1x1-image": ((3, 2, 1, 1), 1, None, 0, 1),
}
AVG_POOLS = {
    "2": ((2, 3, 6, 7), 2, None, 0),
    "3-stride2-pad1": ((1, 2, 7, 5), 3, 2, 1),
    "pairs": ((1, 1, 5, 8), (3, 2), 1, (1, 0)),
}
for _name, (_shape, *_args) in MAX_POOLS.items():
    FORWARD.append(Case(f"max_pool2d-{_name}", lambda F, x, a=tuple(_args): F.max_pool2d(x, *a),
                        lambda x, a=tuple(_args): np_max_pool2d(x, *a),
                        lambda rng, dtype, s=_shape: [distinct(rng, s, dtype)]))
for _name, (_shape, *_args) in AVG_POOLS.items():
    FORWARD.append(Case(f"avg_pool2d-{_name}", lambda F, x, a=tuple(_args): F.avg_pool2d(x, *a),
                        lambda x, a=tuple(_args): np_avg_pool2d(x, *a), floats(_shape)))

FORWARD += [
    Case("embedding", lambda F, i, w: F.embedding(i, w), lambda i, w: w[i],
         lambda rng, dtype: [rng.integers(0, 5, (2, 3)), normal(rng, (5, 4), dtype)], (1,)),
    Case("layer_norm-1-axis", lambda F, x, w, b: F.layer_norm(x, (5,), w, b),
         lambda x, w, b: np_layer_norm(x, 5, w, b), floats((3, 5), (5,), (5,)), (0, 1, 2)),
    Case("layer_norm-2-axes", lambda F, x, w, b: F.layer_norm(x, (3, 4), w, b),
         lambda x, w, b: np_layer_norm(x, (3, 4), w, b), floats((2, 3, 4), (3, 4), (3, 4)), (0, 1, 2)),
    Case("layer_norm-no-affine", lambda F, x: F.layer_norm(x, [1, 6]),
         lambda x: np_layer_norm(x, (1, 6)), floats((1, 1, 6))),
    Case("batch_norm-train-2d", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         lambda x, w, b: np_batch_norm(x, None, None, w, b, training=True), floats((5, 3), (3,), (3,)), (0, 1, 2)),
    Case("batch_norm-train-4d-batch1", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         lambda x, w, b: np_batch_norm(x, None, None, w, b, training=True), floats((1, 2, 3, 4), (2,), (2,)),
         (0, 1, 2)),
    Case("batch_norm-eval-3d", lambda F, x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
         lambda x, m, v, w, b: np_batch_norm(x, m, v, w, b), batch_norm_eval_inputs((2, 3, 5))),
]
for _reduction in ("none", "sum", "mean"):
    FORWARD += [
        Case(f"mse_loss-{_reduction}", lambda F, a, b, r=_reduction: F.mse_loss(a, b, reduction=r),
             lambda a, b, r=_reduction: np_reduce((a - b) ** 2, r), floats((2, 1, 3), (2, 1, 3)), (0, 1)),
        Case(f"l1_loss-{_reduction}", lambda F, a, b, r=_reduction: F.l1_loss(a, b, reduction=r),
             lambda a, b, r=_reduction: np_reduce(np.abs(a - b), r), floats((5,), (5,)), (0, 1)),
        Case(f"nll_loss-{_reduction}-ignore", lambda F, x, t, r=_reduction: F.nll_loss(x, t, reduction=r),
             lambda x, t, r=_reduction: np_nll_loss(x, t, r), targets((6, 4), 4, ignored=2)),
    ]
    for _smoothing in (0.0, 0.1):
        for _ignored, _index in ((0, -100), (2, -100), (2, 1)):
            FORWARD.append(Case(
                f"cross_entropy-{_reduction}-smooth{_smoothing}-ignore{_ignored}at{_index}",
                lambda F, x, t, r=_reduction, s=_smoothing, i=_index:
                    F.cross_entropy(x, t, reduction=r, ignore_index=i, label_smoothing=s),
                lambda x, t, r=_reduction, s=_smoothing, i=_index:
                    np_cross_entropy(x, t, r, ignore_index=i, label_smoothing=s),
                targets((7, 3), 3, ignored=_ignored, ignore_index=_index)))
FORWARD.append(Case(
    "cross_entropy-spatial-smooth", lambda F, x, t: F.cross_entropy(x, t, label_smoothing=0.2, ignore_index=0),
    lambda x, t: np_cross_entropy(
        np.moveaxis(x, 1, -1).reshape(-1, x.shape[1]), t.reshape(-1), label_smoothing=0.2, ignore_index=0),
    targets((2, 4, 3, 1), 4)))


def run_case(case: Case, dtype, seed: int = 0):
    arrays = case.inputs(np.random.default_rng(seed), dtype)
    return arrays, case.call(F, *[to_lt(a) for a in arrays])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", [c.param() for c in FORWARD])
def test_forward_matches_numpy(case: Case, dtype):
    arrays, got = run_case(case, dtype)
    want = case.reference(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
    assert_matches(got, want, dtype, case.atol, case.name)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", [c.param() for c in FORWARD])
def test_forward_matches_torch(case: Case, dtype):
    torch = pytest.importorskip("torch")
    arrays, got = run_case(case, dtype)
    want = case.call(torch.nn.functional, *[to_torch(torch, a) for a in arrays])
    assert_matches(got, want.double().numpy(), dtype, case.atol, case.name)


ONE_HOT_LABELS = np.array([[0, 3], [2, 2], [1, 0]])


def test_one_hot_matches_numpy():
    for num_classes in (-1, 4, 6):
        got = F.one_hot(to_lt(ONE_HOT_LABELS), num_classes)
        np.testing.assert_array_equal(got.numpy(), np_one_hot(ONE_HOT_LABELS, num_classes))
        assert got.dtype == lt.int64


def test_one_hot_matches_torch():
    torch = pytest.importorskip("torch")
    labels = ONE_HOT_LABELS
    for num_classes in (-1, 6):
        np.testing.assert_array_equal(F.one_hot(to_lt(labels), num_classes).numpy(),
                                      torch.nn.functional.one_hot(torch.tensor(labels), num_classes).numpy())


# ---- accuracy and stability ----------------------------------------------------------------------

def test_gelu_exact_within_erf_approximation_error():
    """float64 gelu on a fine grid against x * Phi(x) with math.erf: within 1e-6 everywhere, and
    within the bound that the erf approximation's documented error implies."""
    x = np.linspace(-10, 10, 20001)
    error = np.abs(F.gelu(to_lt(x)).numpy() - np_gelu(x))
    assert error.max() <= GELU_ATOL
    assert np.all(error <= 0.5 * np.abs(x) * ERF_APPROXIMATION_ERROR + 1e-15)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("function", ["softmax", "log_softmax"])
def test_softmax_of_large_values_stays_finite(function, dtype):
    x = (np.random.default_rng(1).standard_normal((3, 5)) * 300 + 1000).astype(dtype)
    x[0] = 1000.0   # a row of equal large values
    reference = np_softmax if function == "softmax" else np_log_softmax
    for dim in (0, 1):
        got = getattr(F, function)(to_lt(x), dim=dim)
        assert np.all(np.isfinite(got.numpy()))
        assert_matches(got, reference(x.astype(np.float64), dim), dtype, what=f"{function} dim={dim}")


def test_cross_entropy_of_large_logits_stays_finite():
    logits = np.array([[1000.0, 0.0, -1000.0], [-1000.0, 1000.0, 999.0]])
    target = np.array([2, 1])
    got = F.cross_entropy(to_lt(logits), to_lt(target))
    assert math.isfinite(got.item())
    np.testing.assert_allclose(got.item(), np_cross_entropy(logits, target), rtol=1e-12)


def test_relu_propagates_nan():
    assert math.isnan(F.relu(lt.asarray([math.nan])).item())


def test_max_pool_and_softmax_propagate_nan():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 1, 1] = np.nan
    pooled = F.max_pool2d(to_lt(x), 2).numpy()
    assert np.isnan(pooled[0, 0, 0, 0]) and not np.isnan(pooled[0, 0, 1, 1])
    assert np.all(np.isnan(F.softmax(to_lt(x[0, 0]), dim=1).numpy()[1]))


# ---- dropout -------------------------------------------------------------------------------------

def test_dropout_zeroes_about_p_and_scales_the_rest():
    p = 0.3
    x = np.random.default_rng(2).uniform(0.5, 1.5, (200, 150)).astype(np.float32)
    first = F.dropout(to_lt(x), p).numpy()
    second = F.dropout(to_lt(x), p).numpy()
    for out in (first, second):
        dropped = out == 0
        sigma = math.sqrt(p * (1 - p) / x.size)
        assert abs(dropped.mean() - p) < 5 * sigma
        np.testing.assert_allclose(out[~dropped], x[~dropped] / (1 - p), rtol=1e-6)
    assert not np.array_equal(first == 0, second == 0), "two dropout calls drew the same mask"


def test_dropout_identity_cases():
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_array_equal(F.dropout(to_lt(x), 0.5, training=False).numpy(), x)
    np.testing.assert_array_equal(F.dropout(to_lt(x), 0.0).numpy(), x)
    np.testing.assert_array_equal(F.dropout(to_lt(x), 1.0).numpy(), np.zeros_like(x))


# ---- gradients: finite differences in float64, and torch ----------------------------------------

GRADIENT_CASES = [
    conv_case("stride-pad-dilation", (1, 2, 5, 6), (3, 2, 3, 2), (2, 1), (1, 2), (1, 2), 1),
    conv_case("groups2-stride", (2, 4, 4, 3), (4, 2, 2, 2), (1, 2), 0, 1, 2),
    conv_case("depthwise-stride2", (1, 3, 5, 5), (3, 1, 3, 3), 2, 1, 1, 3),
    Case("max_pool2d-3-pad1", lambda F, x: F.max_pool2d(x, 3, 1, 1),
         lambda x: np_max_pool2d(x, 3, 1, 1), lambda rng, dtype: [distinct(rng, (1, 1, 4, 5), dtype)]),
    Case("max_pool2d-overlapping-dilated", lambda F, x: F.max_pool2d(x, 2, 1, 0, 2),
         lambda x: np_max_pool2d(x, 2, 1, 0, 2), lambda rng, dtype: [distinct(rng, (2, 1, 5, 4), dtype)]),
    Case("max_pool2d-2-stride2-pad1", lambda F, x: F.max_pool2d(x, 2, 2, 1),
         lambda x: np_max_pool2d(x, 2, 2, 1), lambda rng, dtype: [distinct(rng, (1, 2, 4, 5), dtype)]),
    Case("avg_pool2d-3-stride2-pad1", lambda F, x: F.avg_pool2d(x, 3, 2, 1),
         lambda x: np_avg_pool2d(x, 3, 2, 1), floats((1, 2, 5, 6))),
    Case("layer_norm-2-axes", lambda F, x, w, b: F.layer_norm(x, (2, 3), w, b),
         lambda x, w, b: np_layer_norm(x, (2, 3), w, b), floats((3, 2, 3), (2, 3), (2, 3)), (0, 1, 2)),
    Case("batch_norm-train-4d", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         lambda x, w, b: np_batch_norm(x, None, None, w, b, training=True),
         floats((2, 3, 2, 3), (3,), (3,)), (0, 1, 2)),
    Case("batch_norm-eval", lambda F, x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
         lambda x, m, v, w, b: np_batch_norm(x, m, v, w, b), batch_norm_eval_inputs((4, 3)), (0, 3, 4)),
    Case("cross_entropy-smooth-ignore", lambda F, x, t: F.cross_entropy(x, t, ignore_index=2, label_smoothing=0.1),
         lambda x, t: np_cross_entropy(x, t, ignore_index=2, label_smoothing=0.1), targets((6, 4), 4)),
    Case("cross_entropy-sum", lambda F, x, t: F.cross_entropy(x, t, reduction="sum"),
         lambda x, t: np_cross_entropy(x, t, "sum"), targets((5, 3), 3, ignored=1)),
    Case("gelu", ACTIVATIONS["gelu"][0], np_gelu, floats((3, 4), scale=2.0)),
    Case("gelu_tanh", ACTIVATIONS["gelu_tanh"][0], np_gelu_tanh, floats((3, 4), scale=2.0)),
    Case("sigmoid", ACTIVATIONS["sigmoid"][0], np_sigmoid, floats((3, 4), scale=3.0)),
    Case("softmax-dim0", lambda F, x: F.softmax(x, dim=0), lambda x: np_softmax(x, 0), floats((3, 4))),
    Case("log_softmax-dim-1", lambda F, x: F.log_softmax(x, dim=-1), lambda x: np_log_softmax(x, -1),
         floats((2, 1, 5))),
    Case("linear", lambda F, x, w, b: F.linear(x, w, b), np_linear,
         floats((2, 3), (4, 3), (4,)), (0, 1, 2)),
]


def weights_for(shape: tuple[int, ...]) -> np.ndarray:
    """Fixed random weights W: the checked loss is sum(f(x) * W), so every output element matters."""
    return np.random.default_rng(100 + sum(shape)).standard_normal(shape)


def lt_gradients(case: Case, arrays: list[np.ndarray], device: str = "cpu") -> list[np.ndarray]:
    tensors = [to_lt(a, requires_grad=i in case.grad_inputs, device=device) for i, a in enumerate(arrays)]
    out = case.call(F, *tensors)
    (out * to_lt(weights_for(out.shape), device=device)).sum().backward()
    return [tensors[i].grad.numpy() for i in case.grad_inputs]


def numeric_gradients(case: Case, arrays: list[np.ndarray], eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of sum(f(x) * W), f evaluated by lazytensor in float64: the gradient
    backward() computes must be the derivative of the function the forward pass computes."""
    def loss(values):
        out = case.call(F, *[to_lt(v) for v in values]).numpy()
        return float(np.sum(out * weights_for(out.shape)))

    grads = []
    for i in case.grad_inputs:
        grad = np.zeros(arrays[i].shape)
        for index in np.ndindex(arrays[i].shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i][index] += eps
            minus[i][index] -= eps
            grad[index] = (loss(plus) - loss(minus)) / (2 * eps)
        grads.append(grad)
    return grads


@pytest.mark.parametrize("case", [c.param() for c in GRADIENT_CASES])
def test_gradient_matches_finite_differences(case: Case):
    arrays = case.inputs(np.random.default_rng(5), np.float64)
    got = lt_gradients(case, arrays)
    for i, g, want in zip(case.grad_inputs, got, numeric_gradients(case, arrays)):
        assert g.shape == arrays[i].shape and g.dtype == np.float64
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7, err_msg=f"{case.name}: input {i}")


@pytest.mark.parametrize("case", [c.param() for c in GRADIENT_CASES])
def test_gradient_matches_torch(case: Case):
    torch = pytest.importorskip("torch")
    arrays = case.inputs(np.random.default_rng(5), np.float64)
    got = lt_gradients(case, arrays)
    tensors = [to_torch(torch, a, requires_grad=i in case.grad_inputs) for i, a in enumerate(arrays)]
    out = case.call(torch.nn.functional, *tensors)
    (out * torch.tensor(weights_for(tuple(out.shape)))).sum().backward()
    # the erf approximation's derivative differs from the exact one torch uses by up to 5.3e-7 (times W)
    atol = 2e-6 if case.name == "gelu" else 1e-12
    for i, g in zip(case.grad_inputs, got):
        np.testing.assert_allclose(g, tensors[i].grad.numpy(), rtol=1e-9, atol=atol, err_msg=f"{case.name}: input {i}")


# ---- errors at the call ----------------------------------------------------------------------------

def raises_naming(error, *shapes, match: str = ""):
    """pytest.raises that also checks the message names each shape (as Python prints a tuple)."""
    pattern = "".join(f"(?=.*{re.escape(str(tuple(s)))})" for s in shapes) + (f"(?=.*{match})" if match else "")
    return pytest.raises(error, match=re.compile(pattern, re.DOTALL))


def ones(*shape):
    return lt.ones(shape)


def test_conv2d_errors_name_the_shapes():
    with raises_naming(ValueError, (4, 2, 3, 3), match="3 channels"):
        F.conv2d(ones(1, 3, 5, 5), ones(4, 2, 3, 3))
    with raises_naming(ValueError, (6, 2, 3, 3), match="groups=3"):
        F.conv2d(ones(1, 4, 5, 5), ones(6, 2, 3, 3), groups=3)
    with raises_naming(ValueError, (3, 2, 3, 3), match="groups=2"):    # C_out not divisible by groups
        F.conv2d(ones(1, 4, 5, 5), ones(3, 2, 3, 3), groups=2)
    with raises_naming(ValueError, (1, 1, 3, 3), (5, 5)):
        F.conv2d(ones(1, 1, 3, 3), ones(1, 1, 5, 5), padding=0)
    with raises_naming(ValueError, (1, 1, 3, 4), (3, 3), match="dilation"):
        F.conv2d(ones(1, 1, 3, 4), ones(1, 1, 3, 3), dilation=2)
    with raises_naming(ValueError, (3, 5, 5), match="4-D"):
        F.conv2d(ones(3, 5, 5), ones(2, 3, 3, 3))
    with raises_naming(ValueError, (2, 3, 3), match="4-D"):
        F.conv2d(ones(1, 3, 5, 5), ones(2, 3, 3))


def test_conv2d_channel_error_names_the_input_shape():
    with raises_naming(ValueError, (1, 3, 5, 5), (4, 2, 3, 3)):
        F.conv2d(ones(1, 3, 5, 5), ones(4, 2, 3, 3))


def test_pool_errors_name_the_shapes():
    with raises_naming(ValueError, (1, 1, 3, 3), (4, 4)):
        F.max_pool2d(ones(1, 1, 3, 3), 4)
    with raises_naming(ValueError, (1, 3, 3), match="4-D"):
        F.avg_pool2d(ones(1, 3, 3), 2)


def test_linear_error_names_the_shapes():
    with raises_naming(ValueError, (2, 3), (4, 5)):
        F.linear(ones(2, 3), ones(4, 5))
    with raises_naming(ValueError, (2, 3), (4, 5)):
        nn.Linear(5, 4)(ones(2, 3))


def test_loss_target_errors():
    logits = ones(4, 3)
    with pytest.raises(TypeError, match="float32"):
        F.cross_entropy(logits, lt.zeros(4))
    with raises_naming(ValueError, (4, 3), (4,), (4, 1)):
        F.cross_entropy(logits, lt.zeros((4, 1), dtype=lt.int64))
    with raises_naming(ValueError, (4, 3), (4,), (3,)):
        F.nll_loss(logits, lt.asarray([0, 1, 2]))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_probability_outside_0_1_raises(p):
    with pytest.raises(ValueError, match=re.escape(str(p))):
        F.dropout(ones(3), p)
    with pytest.raises(ValueError, match=re.escape(str(p))):
        nn.Dropout(p)


# ---- modules: registration -------------------------------------------------------------------------

class Net(nn.Module):
    """conv -> batch norm -> relu -> pool -> linear: parameters, buffers and nesting."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 2 * 3, 4), nn.Tanh(), nn.Linear(4, 2))
        self.scale = nn.Parameter(lt.ones(1))

    def forward(self, x):
        return self.head(F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)) * self.scale


NET_INPUT_SHAPE = (2, 2, 4, 6)


def test_parameter_names_follow_registration_order():
    net = Net()
    assert [name for name, _ in net.named_parameters()] == [
        "scale", "conv.weight", "conv.bias", "bn.weight", "bn.bias",
        "head.1.weight", "head.1.bias", "head.3.weight", "head.3.bias"]
    assert [name for name, _ in net.named_buffers()] == ["bn.running_mean", "bn.running_var"]
    assert list(net.state_dict()) == [name for name, _ in net.named_parameters()] + ["bn.running_mean",
                                                                                      "bn.running_var"]
    assert [p.shape for p in net.parameters()] == [(1,), (3, 2, 3, 3), (3,), (3,), (3,), (4, 18), (4,), (2, 4), (2,)]
    nested = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5)))
    assert list(nested.state_dict()) == ["0.weight", "0.bias", "2.0.weight", "2.0.bias", "2.1.weight", "2.1.bias",
                                         "2.1.running_mean", "2.1.running_var"]
    assert [name for name, _ in nested.named_modules()] == ["", "0", "1", "2", "2.0", "2.1"]


def test_shared_modules_and_parameters_are_listed_once():
    shared = nn.Linear(3, 3)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    assert [name for name, _ in net.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(net.parameters())) == 2
    tied = nn.Module()
    tied.a = nn.Linear(2, 2)
    tied.b = nn.Linear(2, 2)
    tied.b.weight = tied.a.weight
    assert [name for name, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]


def test_parameter_is_a_leaf_that_requires_grad():
    p = nn.Parameter(lt.zeros((2, 3)) + 1)
    assert p.requires_grad and p.is_leaf and p.grad is None
    frozen = nn.Parameter(lt.zeros(2), requires_grad=False)
    assert not frozen.requires_grad
    layer = nn.Linear(3, 2)
    for p in layer.parameters():
        assert isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
    layer(lt.ones((4, 3))).sum().backward()
    assert layer.weight.grad.shape == (2, 3) and layer.bias.grad.shape == (2,)
    np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(2, 4.0))
    layer.zero_grad()
    assert layer.weight.grad is None and layer.bias.grad is None


def test_module_to_cpu_and_repr():
    net = Net()
    before = list(net.parameters())
    assert net.to("cpu") is net
    assert all(a is b for a, b in zip(before, net.parameters()))
    text = repr(net)
    for fragment in ("(conv): Conv2d(2, 3", "(bn): BatchNorm2d(3", "(head): Sequential", "(1): Linear(in_features=18",
                     "(2): Tanh"):
        assert fragment in text, f"{fragment!r} not in\n{text}"
    repr(nn.Parameter(lt.ones(2)))
    repr(nn.ModuleList([nn.ReLU(), nn.GELU(approximate="tanh")]))


@pytest.mark.parametrize("make, fan_in", [
    (lambda: nn.Linear(50, 7), 50),
    (lambda: nn.Linear(1, 300), 1),
    (lambda: nn.Conv2d(4, 6, (3, 2), groups=2), 2 * 3 * 2),
    (lambda: nn.Conv2d(3, 8, 5), 3 * 5 * 5),
])
def test_init_bounds(make, fan_in):
    """weight and bias uniform in +-1/sqrt(fan_in), PyTorch's default, and spread over that range."""
    bound = 1 / math.sqrt(fan_in)
    layer = make()
    for p in (layer.weight, layer.bias):
        values = p.numpy()
        assert np.all(np.abs(values) <= bound)
    weights = layer.weight.numpy()
    assert weights.max() > 0.5 * bound and weights.min() < -0.5 * bound


# ---- modules: forward against numpy ---------------------------------------------------------------

def parameters_of(module: nn.Module) -> list[np.ndarray]:
    return [p.numpy().astype(np.float64) for p in module.parameters()]


IMAGE = (2, 4, 5, 6)
# id -> (make the module, input shapes, numpy reference of (module, *inputs))
MODULES = {
    "ReLU": (nn.ReLU, [IMAGE], lambda m, x: np.maximum(x, 0)),
    "Sigmoid": (nn.Sigmoid, [IMAGE], lambda m, x: np_sigmoid(x)),
    "Tanh": (nn.Tanh, [IMAGE], lambda m, x: np.tanh(x)),
    "SiLU": (nn.SiLU, [IMAGE], lambda m, x: x * np_sigmoid(x)),
    "GELU": (nn.GELU, [IMAGE], lambda m, x: np_gelu(x)),
    "GELU-tanh": (lambda: nn.GELU(approximate="tanh"), [IMAGE], lambda m, x: np_gelu_tanh(x)),
    "LeakyReLU-positional": (lambda: nn.LeakyReLU(0.3), [IMAGE], lambda m, x: np.where(x > 0, x, 0.3 * x)),
    "Softmax-dim0": (lambda: nn.Softmax(dim=0), [IMAGE], lambda m, x: np_softmax(x, 0)),
    "LogSoftmax-dim1": (lambda: nn.LogSoftmax(1), [IMAGE], lambda m, x: np_log_softmax(x, 1)),
    "MaxPool2d-positional": (lambda: nn.MaxPool2d(3, 2, 1), [IMAGE], lambda m, x: np_max_pool2d(x, 3, 2, 1)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2), [IMAGE], lambda m, x: np_avg_pool2d(x, 2)),
    "Flatten": (nn.Flatten, [IMAGE], lambda m, x: x.reshape(2, -1)),
    "Flatten-0-1": (lambda: nn.Flatten(0, 1), [IMAGE], lambda m, x: x.reshape(8, 5, 6)),
    "Identity": (nn.Identity, [IMAGE], lambda m, x: x),
    "Dropout-eval": (lambda: nn.Dropout(0.5).eval(), [IMAGE], lambda m, x: x),
    "Linear": (lambda: nn.Linear(6, 3), [IMAGE], lambda m, x: np_linear(x, *parameters_of(m))),
    "Linear-no-bias": (lambda: nn.Linear(6, 1, bias=False), [(3, 6)], lambda m, x: np_linear(x, *parameters_of(m))),
    "Conv2d-padded": (lambda: nn.Conv2d(4, 3, 3, padding=1), [IMAGE],
                      lambda m, x: np_conv2d(x, m.weight.numpy(), m.bias.numpy(), padding=1)),
    "Conv2d-groups-stride-dilation": (
        lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(1, 2), groups=2, bias=False), [IMAGE],
        lambda m, x: np_conv2d(x, m.weight.numpy(), None, stride=(2, 1), dilation=(1, 2), groups=2)),
    "LayerNorm-2-axes": (lambda: nn.LayerNorm((5, 6)), [IMAGE], lambda m, x: np_layer_norm(x, (5, 6))),
    "BatchNorm2d-eval": (lambda: nn.BatchNorm2d(4).eval(), [IMAGE],
                         lambda m, x: np_batch_norm(x, np.zeros(4), np.ones(4))),
    "Sequential": (lambda: nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2)), [(3, 6)],
                   lambda m, x: np_linear(np.tanh(np_linear(x, m[0].weight.numpy(), m[0].bias.numpy())),
                                          m[2].weight.numpy(), m[2].bias.numpy())),
    "MSELoss-sum": (lambda: nn.MSELoss(reduction="sum"), [(3, 4), (3, 4)], lambda m, a, b: np.sum((a - b) ** 2)),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_module_matches_numpy(name):
    make, shapes, reference = MODULES[name]
    module = make()
    arrays = [normal(np.random.default_rng(14), shape, np.float32) for shape in shapes]
    got = module(*[to_lt(a) for a in arrays])
    assert_matches(got, reference(module, *[a.astype(np.float64) for a in arrays]), np.float32,
                   atol=GELU_ATOL if name == "GELU" else None, what=name)


def test_embedding_and_cross_entropy_modules():
    embedding = nn.Embedding(10, 3)
    indices = np.array([[1, 9, 1], [0, 4, 2]])
    np.testing.assert_array_equal(embedding(to_lt(indices)).numpy(), embedding.weight.numpy()[indices])
    assert embedding.weight.requires_grad and embedding.weight.shape == (10, 3)

    logits, target = targets((5, 4), 4)(np.random.default_rng(15), np.float32)
    loss = nn.CrossEntropyLoss(ignore_index=1, label_smoothing=0.1)(to_lt(logits), to_lt(target))
    assert_matches(loss, np_cross_entropy(logits, target, ignore_index=1, label_smoothing=0.1), np.float32)


def test_module_list_registers_its_modules():
    layers = nn.ModuleList([nn.Linear(2, 3), nn.ReLU()])
    layers.append(nn.Linear(3, 1))
    assert len(layers) == 3 and isinstance(layers[2], nn.Linear)
    assert [name for name, _ in layers.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    holder = nn.Module()
    holder.blocks = layers
    assert [name for name, _ in holder.named_parameters()][:2] == ["blocks.0.weight", "blocks.0.bias"]
    with pytest.raises(AttributeError, match="super"):
        class Forgetful(nn.Module):
            def __init__(self):
                self.fc = nn.Linear(2, 2)
        Forgetful()


# ---- modules: state ----------------------------------------------------------------------------------

def net_input(seed: int = 7) -> lt.Tensor:
    return to_lt(normal(np.random.default_rng(seed), NET_INPUT_SHAPE, np.float32))


def test_state_dict_save_load_round_trip(tmp_path):
    net = Net().eval()
    rng = np.random.default_rng(12)         # running statistics of their own, so the buffers matter
    net.bn.running_mean = to_lt(normal(rng, (3,), np.float32))
    net.bn.running_var = to_lt(rng.uniform(0.5, 2.0, 3).astype(np.float32))
    want = net(net_input()).numpy()
    path = str(tmp_path / "net.npz")
    lt.save(net.state_dict(), path)

    other = Net().eval()
    assert not np.array_equal(other(net_input()).numpy(), want)
    other.load_state_dict(lt.load(path))
    np.testing.assert_array_equal(other(net_input()).numpy(), want)
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[name].numpy(), value.numpy(), err_msg=name)

    third = Net().eval()
    net.save(str(tmp_path / "again.npz"))
    np.testing.assert_array_equal(third.load(str(tmp_path / "again.npz"))(net_input()).numpy(), want)


def test_loaded_parameters_stay_trainable_leaves(tmp_path):
    net = Net().eval()
    params = dict(net.named_parameters())
    net.load_state_dict({name: value.numpy() * 2 for name, value in net.state_dict().items()})
    for name, p in net.named_parameters():
        assert p is params[name] and p.is_leaf and p.requires_grad, name
    sum((p * p).sum() for p in net.parameters()).backward()
    for name, p in net.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), 2 * p.numpy(), rtol=1e-6, err_msg=name)


def test_load_state_dict_reports_every_problem_at_once():
    net = Net()
    state = {name: value.numpy() for name, value in net.state_dict().items()}
    del state["conv.bias"]
    state["extra.weight"] = np.zeros(3)
    state["head.1.weight"] = np.zeros((4, 17))
    with pytest.raises(KeyError) as error:
        net.load_state_dict(state)
    message = str(error.value)
    for fragment in ("conv.bias", "extra.weight", "head.1.weight", "(4, 18)", "(4, 17)"):
        assert fragment in message, f"{fragment!r} not in {message}"

    before = net.conv.weight.numpy().copy()
    with pytest.raises(KeyError, match=re.escape("head.1.weight")):
        net.load_state_dict(state, strict=False)       # a wrong shape is never tolerated
    state["head.1.weight"] = np.zeros((4, 18))
    state["conv.weight"] = before + 1
    net.load_state_dict(state, strict=False)           # missing and unexpected are
    np.testing.assert_array_equal(net.conv.weight.numpy(), before + 1)
    np.testing.assert_array_equal(net.head[1].weight.numpy(), np.zeros((4, 18)))


# ---- modules: train / eval ----------------------------------------------------------------------------

def test_dropout_module_follows_train_and_eval():
    net = nn.Sequential(nn.Dropout(0.25), nn.Identity())
    x = np.random.default_rng(4).uniform(1, 2, (100, 80)).astype(np.float32)
    assert net.training and net[0].training
    dropped = net(to_lt(x)).numpy() == 0
    assert abs(dropped.mean() - 0.25) < 5 * math.sqrt(0.25 * 0.75 / x.size)
    assert net.eval() is net and not net[0].training
    np.testing.assert_array_equal(net(to_lt(x)).numpy(), x)
    net.train()
    assert net[0].training and (net(to_lt(x)).numpy() == 0).any()


def batch_norm_passes(seed: int = 8, channels: int = 3) -> list[np.ndarray]:
    """Three batches (float64 holding float32 values) of different means and spreads."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((4, channels, 2, 5)) * (1 + i) + i).astype(np.float32).astype(np.float64)
            for i in range(3)]


def test_batch_norm_running_statistics_follow_pytorch_formula(channels=3):
    """Three training passes update the running statistics as PyTorch does; eval() uses them."""
    bn = nn.BatchNorm2d(channels)
    mean, var = np.zeros(channels), np.ones(channels)
    for x in batch_norm_passes(channels=channels):
        out = bn(to_lt(x.astype(np.float32)))
        assert_matches(out, np_batch_norm(x, None, None, training=True), np.float32, what="training output")
        mean, var = np_updated_running_stats(x, mean, var)
    assert_matches(bn.running_mean, mean, np.float32, what="running_mean")
    assert_matches(bn.running_var, var, np.float32, what="running_var")

    bn.eval()
    x = batch_norm_passes(9, channels)[0]
    assert_matches(bn(to_lt(x.astype(np.float32))), np_batch_norm(x, mean, var), np.float32, what="eval output")
    assert_matches(bn.running_mean, mean, np.float32, what="running_mean unchanged by eval")


def test_batch_norm_functional_updates_running_stats_in_place():
    x = np.random.default_rng(10).standard_normal((6, 4))
    running_mean, running_var = to_lt(np.full(4, 0.5)), to_lt(np.full(4, 2.0))
    out = F.batch_norm(to_lt(x), running_mean, running_var, training=True, momentum=0.3)
    want_mean, want_var = np_updated_running_stats(x, np.full(4, 0.5), np.full(4, 2.0), momentum=0.3)
    assert_matches(out, np_batch_norm(x, None, None, training=True), np.float64)
    assert_matches(running_mean, want_mean, np.float64)
    assert_matches(running_var, want_var, np.float64)


def test_batch_norm_module_eval_uses_the_running_statistics():
    bn = nn.BatchNorm1d(4, eps=1e-3).eval()
    rng = np.random.default_rng(13)
    mean, var = normal(rng, (4,), np.float32), rng.uniform(0.5, 2.0, 4).astype(np.float32)
    bn.running_mean, bn.running_var = to_lt(mean), to_lt(var)
    for x_shape in [(5, 4), (2, 4, 3)]:
        x = normal(rng, x_shape, np.float32)
        want = np_batch_norm(x.astype(np.float64), mean.astype(np.float64), var.astype(np.float64), eps=1e-3)
        assert_matches(bn(to_lt(x)), want, np.float32, what=f"eval on {x_shape}")
    with raises_naming(ValueError, (5, 3)):
        bn(lt.ones((5, 3)))


def test_batch_norm_matches_torch_over_three_passes():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    for x in batch_norm_passes():
        x = x.astype(np.float32)
        assert_matches(ours(to_lt(x)), theirs(torch.tensor(x)).detach().numpy(), np.float32)
    assert_matches(ours.running_mean, theirs.running_mean.numpy(), np.float32)
    assert_matches(ours.running_var, theirs.running_var.numpy(), np.float32)
    ours.eval(), theirs.eval()
    x = batch_norm_passes(9)[0].astype(np.float32)
    assert_matches(ours(to_lt(x)), theirs(torch.tensor(x)).detach().numpy(), np.float32)


# ---- every device: a small conv + linear model -------------------------------------------------------

def small_model_step(arrays: dict[str, np.ndarray], device: str):
    """Loss and gradients of conv -> relu -> flatten -> linear -> cross-entropy on `device`."""
    params = {name: to_lt(a, requires_grad=True, device=device) for name, a in arrays.items() if name != "x"}
    x = to_lt(arrays["x"], device=device)
    hidden = F.relu(F.conv2d(x, params["conv_w"], params["conv_b"], stride=(1, 2), padding=1))
    logits = F.linear(hidden.reshape(hidden.shape[0], -1), params["fc_w"], params["fc_b"])
    loss = F.cross_entropy(logits, lt.asarray([0, 2], device=device))
    loss.backward()
    return logits.numpy(), loss.item(), {name: p.grad.numpy() for name, p in params.items()}


def test_small_model_forward_backward_on_every_device(device):
    rng = np.random.default_rng(11)
    arrays = {"x": normal(rng, (2, 2, 3, 4), np.float32), "conv_w": normal(rng, (3, 2, 3, 3), np.float32),
              "conv_b": normal(rng, (3,), np.float32), "fc_w": normal(rng, (3, 3 * 3 * 2), np.float32, 0.3),
              "fc_b": normal(rng, (3,), np.float32)}
    logits, loss, grads = small_model_step(arrays, device)
    want_logits, want_loss, want_grads = small_model_step(arrays, "cpu")
    hidden = np.maximum(np_conv2d(arrays["x"], arrays["conv_w"], arrays["conv_b"], stride=(1, 2), padding=1), 0)
    reference_logits = np_linear(hidden.reshape(2, -1), arrays["fc_w"], arrays["fc_b"])
    assert_matches(want_logits, reference_logits, np.float32, what="cpu logits vs numpy")
    assert_matches(logits, want_logits, np.float32, what=f"logits on {device}")
    np.testing.assert_allclose(loss, want_loss, rtol=2e-5)
    for name, grad in grads.items():
        assert_matches(grad, want_grads[name], np.float32, what=f"gradient of {name} on {device}")


def test_module_to_device_keeps_its_parameters(device):
    """Module.to moves parameters in place: the same objects, so an optimizer made before still
    updates them; a step there matches the same step on the cpu."""
    def trained(target: str) -> list[np.ndarray]:
        lt.manual_seed(16)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        params = list(model.parameters())
        optimizer = lt.optim.SGD(model.parameters(), lr=0.1)
        assert model.to(target) is model
        assert all(a is b for a, b in zip(params, model.parameters()))
        assert all(p.device == target and p.is_leaf and p.requires_grad for p in params)
        x = lt.asarray(np.random.default_rng(17).standard_normal((5, 3)).astype(np.float32), device=target)
        (model(x) ** 2).mean().backward()
        optimizer.step()
        return [p.numpy() for p in params]

    for got, want in zip(trained(device), trained("cpu")):
        assert_matches(got, want.astype(np.float64), np.float32)


def test_out_of_range_class_indices_raise_at_the_call():
    """Labels and embedding rows already in memory are checked where the loss is built (the
    kernel would clamp them silently); ignore_index is allowed."""
    logits = lt.zeros((2, 3))
    with pytest.raises(IndexError, match="7 is out of range for 3 classes"):
        F.cross_entropy(logits, lt.asarray([0, 7]))
    with pytest.raises(IndexError, match="-1"):
        F.nll_loss(F.log_softmax(logits, 1), lt.asarray([-1, 0]))
    assert math.isfinite(F.cross_entropy(logits, lt.asarray([0, -100])).item())
    with pytest.raises(IndexError, match="5 is out of range for 3 rows"):
        F.embedding(lt.asarray([5]), lt.eye(3))
    with pytest.raises(IndexError, match="out of range"):
        F.one_hot(lt.asarray([0, 5]), 3)
    labels = lt.asarray([0, 2])   # the same labels (checked once, remembered) against fewer classes
    assert math.isfinite(F.cross_entropy(lt.zeros((2, 3)), labels).item())
    with pytest.raises(IndexError, match="2 is out of range for 2 classes"):
        F.cross_entropy(lt.zeros((2, 2)), labels)


def test_sigmoid_is_accurate_over_the_whole_float32_range():
    """sigmoid against float64 numpy over two million points and the special values: within
    4 ulp everywhere, tiny results included (sigmoid(-20) = 2.06e-9 must not cancel to 0)."""
    from test_cpu_mathlib import ulp_error
    rng = np.random.default_rng(5)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.0, -88.0, 104.0, -104.0, -20.0]
    x = np.concatenate([rng.standard_normal(1_000_000) * 12, rng.uniform(-110, 110, 1_000_000),
                        special]).astype(np.float32)
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-x.astype(np.float64)))
    err = ulp_error(F.sigmoid(lt.asarray(x)).numpy(), want)
    worst = int(np.nanargmax(err))
    assert np.nanmax(err) <= 4, f"sigmoid: {err[worst]:.2f} ulp at x={x[worst]!r}"
    assert np.isnan(F.sigmoid(lt.asarray(np.float32(np.nan))).item())
