"""Neural-network functions, PyTorch's names and argument order (`lt.nn.functional`, usually
imported as F). Each is a composition of tensor operations, so it is lazy, fuses with its
neighbours and differentiates through the gradient rules of the ops it is made of."""
from __future__ import annotations

import math
import weakref
from typing import Any, Optional, Sequence, Union

import numpy as np

from .. import capture
from ..creation import arange, asarray
from ..functions import erf, log1p
from ..autograd import is_grad_enabled, no_grad
from ..floatexpr import FloatExpr
from ..indexing import take
from ..movement import sliding_windows
from ..ir.arith import sum_of_products
from ..ir.ops import Op
from ..ir.rules import make
from ..tuning import choose
from ..operands import as_tensor, operands, where
from ..reductions import log_softmax_along, softmax_along
from ..realize import realize_with_next, realized_value
from ..tensor import Tensor
from . import winograd
from .attention import dropout, multi_head_attention_forward, scaled_dot_product_attention

IntPair = Union[int, Sequence[int]]
Moments = Union[Tensor, FloatExpr]   # a norm's statistics: of tensors, or of their nodes (floatexpr.py)


def _pair(value: IntPair, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
    return pair  # type: ignore[return-value]


# ---- activations ----------------------------------------------------------------------------------

def relu(x: Tensor) -> Tensor:
    """max(x, 0); NaN stays NaN and the gradient at 0 is 0 (as PyTorch's).

    >>> F.relu(lt.asarray([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """
    return where(x <= 0, 0, x).astype(x.dtype)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, else negative_slope * x.

    >>> F.leaky_relu(lt.asarray([-1.0, 2.0]), 0.5).tolist()
    [-0.5, 2.0]
    """
    return where(x > 0, x, x * negative_slope)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), computed from e = exp(-|x|) <= 1 as 1 / (1 + e) for x >= 0 and
    e / (1 + e) below: nothing overflows, and a tiny result (sigmoid(-20) = 2.06e-9) keeps its
    digits instead of cancelling in 1 - (something near 1).

    >>> F.sigmoid(lt.asarray([0.0])).tolist()
    [0.5]
    """
    x = as_tensor(x)
    positive = x >= 0
    e = where(positive, -x, x).exp()    # (where, not abs: the gradient at 0 stays 1/4)
    return where(positive, 1.0, e) / (1.0 + e)


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent.

    >>> F.tanh(lt.asarray([0.0])).tolist()
    [0.0]
    """
    return x.tanh()


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x).

    >>> F.silu(lt.asarray([0.0])).tolist()
    [0.0]
    """
    return x * sigmoid(x)


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)), computed without overflow.

    >>> round(F.softplus(lt.asarray([0.0])).item(), 4)
    0.6931
    """
    return where(x > 20, x, log1p(x.minimum(20).exp()))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: x * Phi(x); approximate='tanh' for the tanh form.

    >>> round(F.gelu(lt.asarray([1.0])).item(), 4)
    0.8413
    """
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + inner.tanh())
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    fast = FloatExpr.of(x)
    if fast:   # (the same nodes, without a tensor at each step: floatexpr.py)
        fx = fast[0]
        return (0.5 * fx * (1 + (fx * (1 / math.sqrt(2))).unary(Op.ERF))).tensor(x.device)
    return 0.5 * x * (1 + erf(x * (1 / math.sqrt(2))))


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, computed from x - max(x) so it cannot overflow.

    >>> F.softmax(lt.asarray([0.0, 0.0]), dim=0).tolist()
    [0.5, 0.5]
    """
    return softmax_along(x, dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """log(softmax(x)) along `dim`, without forming the softmax (stable for large |x|).

    >>> [round(v, 4) for v in F.log_softmax(lt.asarray([0.0, 0.0]), dim=0).tolist()]
    [-0.6931, -0.6931]
    """
    return log_softmax_along(x, dim)


# ---- layers ---------------------------------------------------------------------------------------

def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """x @ weight.T + bias (weight: (out_features, in_features)).

    >>> F.linear(lt.ones((2, 3)), lt.ones((4, 3))).shape
    (2, 4)
    """
    if x.shape[-1:] != weight.shape[-1:]:
        raise ValueError(f"linear: input of shape {x.shape} has {x.shape[-1] if x.ndim else 0} features, "
                         f"the weight {weight.shape} expects {weight.shape[-1]}")
    fast = FloatExpr.of(x, weight, bias) if x.ndim >= 2 and weight.ndim == 2 else None
    if fast:   # (the same nodes, without a tensor at each step: floatexpr.py)
        fx, fw, fb = fast
        out = fx @ fw.mT
        return (out + fb if fb is not None else out).tensor(x.device)
    out = x @ weight.T
    return out + bias if bias is not None else out


def _spatial_args(x: Tensor, what: str, kernel: tuple[int, int], stride: tuple[int, int],
                  padding: tuple[int, int], dilation: tuple[int, int]) -> None:
    if x.ndim != 4:
        raise ValueError(f"{what}: expected a 4-D input (N, C, H, W), got shape {x.shape}")
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise ValueError(f"{what}: kernel {kernel}, stride {stride} and dilation {dilation} must be >= 1 "
                         f"and padding {padding} >= 0")
    for size, k, p, d in zip(x.shape[2:], kernel, padding, dilation):
        if size + 2 * p < d * (k - 1) + 1:
            raise ValueError(f"{what}: the input {x.shape} padded by {padding} is smaller than the "
                             f"kernel {kernel} with dilation {dilation}")


def conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntPair = 1,
           padding: IntPair = 0, dilation: IntPair = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as in PyTorch): x (N, C_in, H, W), weight
    (C_out, C_in / groups, kH, kW) -> (N, C_out, H_out, W_out). The windows are a view of x and
    the output one sum over (C_in, kH, kW) of windows times weights; a large 3x3 float32 one
    that records no gradient may run Winograd's F(4,3) instead, where tuning measured it faster
    (nn/winograd.py).

    >>> F.conv2d(lt.ones((1, 2, 5, 5)), lt.ones((4, 2, 3, 3)), padding=1).shape
    (1, 4, 5, 5)
    """
    stride, padding, dilation = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    if weight.ndim != 4:
        raise ValueError(f"conv2d: expected a 4-D weight (C_out, C_in/groups, kH, kW), got shape {weight.shape}")
    c_out, c_group, kh, kw = weight.shape
    _spatial_args(x, "conv2d", (kh, kw), stride, padding, dilation)
    n, c_in = x.shape[:2]
    if groups < 1 or c_in % groups or c_out % groups or c_in // groups != c_group:
        raise ValueError(f"conv2d: input of shape {x.shape} ({c_in} channels), weight {weight.shape} and "
                         f"groups={groups} do not fit: need C_in = groups * weight.shape[1] and C_out "
                         "divisible by groups")
    # (Winograd's only where no gradient is recorded: its choice measures a forward call, and the
    # backward of its transforms is not what was measured)
    recorded = is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias))
    if winograd.fits(x, weight, stride, dilation, groups) and not recorded and \
            _implementation(x, weight, bias, padding) == "winograd":
        return winograd.conv2d_rows(x, weight, bias, padding)
    return _direct(x, weight, bias, stride, padding, dilation, groups)


def _implementation(x: Tensor, weight: Tensor, bias: Optional[Tensor], padding: tuple[int, int]) -> str:
    """conv2d's implementation for these shapes: the direct kernel unless tuning measured
    Winograd's (nn/winograd.py) faster here (tuning.choose: LT_TUNE=1 or lt.tune measure it)."""
    signature = f"{'x'.join(map(str, x.shape))} * {'x'.join(map(str, weight.shape))} padding {padding[0]},{padding[1]}" \
        f"{' bias' if bias is not None else ''} {x.dtype.name}"

    def stand_ins() -> tuple:
        rng = np.random.default_rng(0)
        made = [asarray(rng.standard_normal(shape).astype(np.float32), device=x.device)
                for shape in (x.shape, weight.shape, (weight.shape[0],))]
        return tuple(made[:2]) + ((made[2],) if bias is not None else (None,))

    return choose("conv2d", signature, x.device, {
        "direct": lambda a, w, b: _direct(a, w, b, (1, 1), padding, (1, 1), 1),
        "winograd": lambda a, w, b: winograd.conv2d_rows(a, w, b, padding)}, stand_ins)


def _direct(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: tuple[int, int], padding: tuple[int, int],
            dilation: tuple[int, int], groups: int) -> Tensor:
    """The direct convolution: one sum over (C_in, kH, kW) of windows times weights."""
    n, c_in = x.shape[:2]
    c_out, c_group, kh, kw = weight.shape
    if any(padding):
        x = x.pad(((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    win = sliding_windows(x, (kh, kw), stride, dilation)              # (N, C_in, oh, ow, kh, kw)
    oh, ow = win.shape[2:4]
    # out[n, g, o, y, x] = sum over (c, i, j) of win[n, g, c, y, x, i, j] * w[g, o, c, i, j]: every
    # axis kept apart (no im2col reshape merges them), so the kernel indexes the input affinely
    cols = win.reshape(n, groups, 1, c_group, oh, ow, kh, kw).permute(0, 1, 2, 4, 5, 3, 6, 7)
    w = weight.reshape(1, groups, c_out // groups, 1, 1, c_group, kh, kw)
    (left, right), device = operands(cols, w, name="conv2d")
    # (the reshape made on the nodes: the result is a tensor of its own, not a view of a temporary
    # that lt.jit would see escape)
    out = Tensor(make(Op.RESHAPE, sum_of_products(left, right, (5, 6, 7), left.dtype), arg=(n, c_out, oh, ow)), device)
    return out + bias.reshape(1, c_out, 1, 1) if bias is not None else out


def _pool_args(kernel_size: IntPair, stride: Optional[IntPair], padding: IntPair, dilation: IntPair):
    kernel = _pair(kernel_size, "kernel_size")
    return kernel, _pair(stride if stride is not None else kernel, "stride"), _pair(padding, "padding"), \
        _pair(dilation, "dilation")


def max_pool2d(x: Tensor, kernel_size: IntPair, stride: Optional[IntPair] = None, padding: IntPair = 0,
               dilation: IntPair = 1) -> Tensor:
    """The maximum of each window (stride defaults to the kernel size; padding is -inf).

    >>> F.max_pool2d(lt.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, dilation)
    _spatial_args(x, "max_pool2d", kernel, stride, padding, dilation)
    if any(p * 2 > k for p, k in zip(padding, kernel)):
        raise ValueError(f"max_pool2d: padding {padding} must be at most half the kernel {kernel}")
    if any(padding):
        x = x.pad(((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2), value=-math.inf)
    return sliding_windows(x, kernel, stride, dilation).max(axis=(-2, -1))


def avg_pool2d(x: Tensor, kernel_size: IntPair, stride: Optional[IntPair] = None, padding: IntPair = 0) -> Tensor:
    """The mean of each window (padding counts as zeros, PyTorch's count_include_pad=True).

    >>> F.avg_pool2d(lt.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, 1)
    _spatial_args(x, "avg_pool2d", kernel, stride, padding, dilation)
    if any(padding):
        x = x.pad(((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    return sliding_windows(x, kernel, stride, dilation).mean(axis=(-2, -1))


def embedding(indices: Any, weight: Tensor, padding_idx: Optional[int] = None) -> Tensor:
    """Rows of `weight` picked by integer `indices`: shape indices.shape + (embedding_dim,).
    Row `padding_idx` (if given) gets no gradient, as in PyTorch.

    >>> F.embedding(lt.asarray([2, 0]), lt.eye(3)).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    indices = as_tensor(indices, weight)
    if not indices.dtype.is_integer:
        raise TypeError(f"embedding: indices must be integers, not {indices.dtype.name}")
    _check_indices(indices, weight.shape[0], "embedding", "rows of the weight")
    rows = take(weight, indices, axis=0)
    if padding_idx is None or not rows.requires_grad:
        return rows
    padding_idx = _padding_index(padding_idx, weight.shape[0])
    padded = (indices == padding_idx).reshape(indices.shape + (1,))
    return where(padded, rows.detach(), rows)


def _padding_index(padding_idx: int, n: int) -> int:
    if not -n <= padding_idx < n:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for {n} embeddings")
    return padding_idx % n


def layer_norm(x: Tensor, normalized_shape: Union[int, Sequence[int]], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last len(normalized_shape) axes to mean 0 and variance 1, then scale
    and shift.

    >>> F.layer_norm(lt.asarray([[1.0, 3.0]]), 2).numpy().round(4).tolist()
    [[-1.0, 1.0]]
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} does not match the end of the input shape {x.shape}")
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    fast = FloatExpr.of(x, weight, bias) if type(eps) is float else None
    if fast:   # (the same nodes, without a tensor at each step: floatexpr.py)
        fx, fw, fb = fast
        return _normalize(fx, *_moments(fx, axes), eps, fw, fb, shape).tensor(x.device)
    mean, var = _moments(x, axes)
    return _normalize(x, mean, var, eps, weight, bias, shape)


def _moments(x: Moments, axes: tuple[int, ...]) -> tuple[Moments, Moments]:
    """Mean and (biased) variance over `axes`, kept as size-1 axes (of a tensor, or of its
    FloatExpr: the same nodes)."""
    mean = x.mean(axes) if isinstance(x, FloatExpr) else x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = centered * centered
    return mean, var.mean(axes) if isinstance(var, FloatExpr) else var.mean(axis=axes, keepdims=True)


def _normalize(x: Moments, mean: Moments, var: Moments, eps: float, weight: Optional[Moments],
               bias: Optional[Moments], shape: tuple[int, ...]) -> Moments:
    """(x - mean) / sqrt(var + eps), scaled by `weight` and shifted by `bias` (seen in `shape`)."""
    out = (x - mean) * (var + eps) ** -0.5
    if weight is not None:
        out = out * weight.reshape(shape)
    return out + bias.reshape(shape) if bias is not None else out


def batch_norm(x: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (axis 1) by the batch's statistics when training (updating the
    running ones in place), by the running statistics otherwise.

    >>> F.batch_norm(lt.asarray([[1.0], [3.0]]), None, None, training=True).numpy().round(4).tolist()
    [[-1.0], [1.0]]
    """
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of shape (N, C, ...), got {x.shape}")
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        count = x.size // max(x.shape[1], 1)
        if count <= 1:
            raise ValueError(f"batch_norm: training needs more than one value per channel, input shape {x.shape}")
        mean, var = _moments(x, axes)
        if running_mean is not None and running_var is not None:
            with no_grad():
                new_mean = running_mean * (1 - momentum) + mean.reshape(x.shape[1]) * momentum
                new_var = running_var * (1 - momentum) + var.reshape(x.shape[1]) * (momentum * count / (count - 1))
                running_mean._set_node(new_mean.astype(running_mean.dtype).node)
                running_var._set_node(new_var.astype(running_var.dtype).node)
            realize_with_next(running_mean, running_var)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: evaluation (training=False) needs running_mean and running_var")
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    return _normalize(x, mean, var, eps, weight, bias, shape)


# ---- losses ---------------------------------------------------------------------------------------

def _check_indices(indices: Tensor, n: int, what: str, noun: str = "classes",
                   ignore: Optional[int] = None) -> Optional[bool]:
    """Out-of-range class or row indices raise here, where they are known: when the indices are
    already in memory (a batch of labels), they are read (a small copy from a GPU); indices
    computed lazily in the same graph are clamped by the kernel instead (it cannot raise).
    Returns whether some index is `ignore` (None where the indices are not in memory)."""
    node = realized_value(indices.node)
    if node.op is not Op.BUFFER or capture.RECORDING is not None:   # (lt.jit: new indices each call)
        return None
    if indices.size == 0:
        return False
    bounds = _INDEX_BOUNDS.setdefault(node.arg.owner, {})
    if ignore not in bounds:   # (a buffer never changes: a training loop's labels are read once)
        values = indices.numpy()
        kept = values[values != ignore] if ignore is not None else values
        bounds[ignore] = (kept.min(), kept.max(), kept.size < values.size) if kept.size else (0, 0, True)
    low, high, ignored = bounds[ignore]
    if low < 0 or high >= n:
        raise IndexError(f"{what}: index {low if low < 0 else high} is out of range for {n} {noun} "
                         f"(valid: 0..{n - 1})")
    return ignored


# the smallest and largest index in a buffer of indices, and whether some index is the ignored
# one, by the value ignored
_INDEX_BOUNDS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _reduce_loss(loss: Tensor, reduction: str, what: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{what}: reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


def one_hot(labels: Any, num_classes: int = -1) -> Tensor:
    """int64 one-hot rows: shape labels.shape + (num_classes,).

    >>> F.one_hot(lt.asarray([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    labels = as_tensor(labels)
    if not labels.dtype.is_integer:
        raise TypeError(f"one_hot: labels must be integers, not {labels.dtype.name}")
    if num_classes < 0:
        num_classes = int(labels.max().item()) + 1 if labels.size else 0
    _check_indices(labels, num_classes, "one_hot")
    classes = arange(num_classes, device=labels.device)
    return (labels.reshape(labels.shape + (1,)) == classes).astype("int64")


def nll_loss(log_probs: Tensor, target: Any, reduction: str = "mean", ignore_index: int = -100) -> Tensor:
    """Negative log-likelihood of integer class targets: log_probs (N, C, ...) and target (N, ...).

    >>> F.nll_loss(lt.asarray([[-1.0, -2.0]]), lt.asarray([1])).item()
    2.0
    """
    target = as_tensor(target, log_probs)
    if log_probs.ndim < 2 or target.shape != log_probs.shape[:1] + log_probs.shape[2:]:
        raise ValueError(f"nll_loss: input of shape {log_probs.shape} needs a target of shape "
                         f"{log_probs.shape[:1] + log_probs.shape[2:]}, got {target.shape}")
    if not target.dtype.is_integer:
        raise TypeError(f"nll_loss: the target must hold integer class indices, not {target.dtype.name}; "
                        "for probabilities use a soft-label loss")
    ignored = _check_indices(target, log_probs.shape[1], "nll_loss / cross_entropy target", ignore=ignore_index)
    classes = arange(log_probs.shape[1], device=log_probs.device).reshape((-1,) + (1,) * (log_probs.ndim - 2))
    picked = where(target.reshape(target.shape[:1] + (1,) + target.shape[1:]) == classes, log_probs, 0)
    loss = -picked.sum(axis=1)
    if ignored is False:   # labels in memory, none of them ignore_index: the plain mean/sum
        return _reduce_loss(loss, reduction, "nll_loss")
    kept = target != ignore_index
    loss = where(kept, loss, 0).astype(loss.dtype)
    if reduction == "mean":
        return loss.sum() / kept.sum().astype(loss.dtype)
    return _reduce_loss(loss, reduction, "nll_loss")


def cross_entropy(logits: Tensor, target: Any, reduction: str = "mean", ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits (N, C, ...) against integer class targets (N, ...).

    >>> round(F.cross_entropy(lt.asarray([[0.0, 0.0]]), lt.asarray([1])).item(), 4)
    0.6931
    """
    log_probs = log_softmax(logits, dim=1)
    loss = nll_loss(log_probs, target, reduction, ignore_index)
    if not label_smoothing:
        return loss
    if not 0 <= label_smoothing <= 1:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    target = as_tensor(target, logits)
    kept = target != ignore_index
    smooth = where(kept, -log_probs.mean(axis=1), 0).astype(log_probs.dtype)
    if reduction == "mean":
        smooth = smooth.sum() / kept.sum().astype(loss.dtype)
    else:
        smooth = _reduce_loss(smooth, reduction, "cross_entropy")
    return loss * (1 - label_smoothing) + smooth * label_smoothing


def mse_loss(input: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Mean squared error (shapes broadcast).

    >>> F.mse_loss(lt.asarray([1.0, 3.0]), lt.asarray([1.0, 1.0])).item()
    2.0
    """
    diff = input - target
    return _reduce_loss(diff * diff, reduction, "mse_loss")


def l1_loss(input: Tensor, target: Any, reduction: str = "mean") -> Tensor:
    """Mean absolute error (shapes broadcast).

    >>> F.l1_loss(lt.asarray([1.0, 3.0]), lt.asarray([1.0, 1.0])).item()
    1.0
    """
    return _reduce_loss((input - target).abs(), reduction, "l1_loss")


__all__ = ["relu", "leaky_relu", "sigmoid", "tanh", "silu", "softplus", "gelu", "softmax", "log_softmax", "linear",
           "conv2d", "max_pool2d", "avg_pool2d", "dropout", "scaled_dot_product_attention",
           "multi_head_attention_forward", "embedding", "layer_norm", "batch_norm",
           "one_hot", "nll_loss", "cross_entropy", "mse_loss", "l1_loss"]
