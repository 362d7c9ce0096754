"""Initialization (`lt.nn.init`, PyTorch's torch.nn.init): each function fills a tensor in place
-- a Parameter stays the same object, a leaf that requires grad -- as under `lt.no_grad()`, and
returns it. Fans and gains are computed as PyTorch computes them; the random values come from
the generator `lt.manual_seed` seeds (lt.rand / lt.randn).

>>> w = lt.nn.init.xavier_uniform_(lt.nn.Parameter(lt.empty((4, 3))))
>>> w.requires_grad, w.is_leaf
(True, True)
"""
from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from ..autograd import no_grad
from ..creation import asarray, eye, full, rand, randn
from ..tensor import Tensor


def _fill(tensor: Tensor, value: Tensor) -> Tensor:
    """Write `value` into `tensor` in place (its dtype kept) without recording gradients."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init: expected a Tensor (a Parameter), not {type(tensor).__name__}")
    with no_grad():
        tensor._set_node(value.astype(tensor.dtype).node)
    return tensor


def _float_dtype(tensor: Tensor) -> Any:
    if not tensor.dtype.is_float:
        raise TypeError(f"nn.init: random values need a floating-point tensor, not {tensor.dtype.name}")
    return tensor.dtype


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table): 1 for linear, conv and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope
    `param`, default 0.01), 3/4 for selu.

    >>> round(lt.nn.init.calculate_gain("relu"), 4)
    1.4142
    """
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight (out, in, *kernel): in and out times the kernel's size."""
    if tensor.ndim < 2:
        raise ValueError(f"nn.init: fan in and fan out need a tensor of at least 2 dimensions, got shape "
                         f"{tensor.shape}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"nn.init: mode {mode!r} not supported, use 'fan_in' or 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with values drawn uniformly from [a, b).

    >>> w = lt.nn.init.uniform_(lt.nn.Parameter(lt.zeros((2, 3))), -1, 1)
    >>> bool((w.abs() <= 1).all()), w.requires_grad
    (True, True)
    """
    dtype = _float_dtype(tensor)
    return _fill(tensor, rand(*tensor.shape, dtype=dtype, device=tensor.device) * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with values drawn from N(mean, std^2).

    >>> lt.nn.init.normal_(lt.zeros((2, 3)), std=0.02).shape
    (2, 3)
    """
    dtype = _float_dtype(tensor)
    return _fill(tensor, randn(*tensor.shape, dtype=dtype, device=tensor.device) * std + mean)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0) -> Tensor:
    """Fill with values from N(mean, std^2) truncated to [a, b] (a and b are values, not
    multiples of std, as in PyTorch).

    >>> w = lt.nn.init.trunc_normal_(lt.zeros(1000), std=1.0, a=-0.5, b=0.5)
    >>> bool((w.abs() <= 0.5).all())
    True
    """
    dtype = _float_dtype(tensor)
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    n = tensor.size
    dist = NormalDist(mean, std)
    low, high = dist.cdf(a), dist.cdf(b)
    if high - low >= 0.05:   # rejection: at most ~20 draws per value, usually far fewer
        kept = np.empty(0)
        while kept.size < n:
            draw = randn(max(2 * (n - kept.size), 16), dtype="float64").numpy() * std + mean
            kept = np.concatenate([kept, draw[(draw >= a) & (draw <= b)]])
        values = kept[:n]
    else:   # far in a tail: the inverse of the normal cdf on uniform draws between cdf(a) and cdf(b)
        u = low + rand(n, dtype="float64").numpy() * (high - low)
        values = np.clip(np.vectorize(dist.inv_cdf, otypes=[np.float64])(np.clip(u, 1e-300, 1 - 1e-16)), a, b)
    return _fill(tensor, asarray(values.reshape(tensor.shape), dtype=dtype, device=tensor.device))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`.

    >>> lt.nn.init.constant_(lt.zeros(2), 0.5).tolist()
    [0.5, 0.5]
    """
    return _fill(tensor, full(tensor.shape, val, dtype=tensor.dtype, device=tensor.device))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros.

    >>> lt.nn.init.zeros_(lt.ones(2)).tolist()
    [0.0, 0.0]
    """
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones.

    >>> lt.nn.init.ones_(lt.zeros(2)).tolist()
    [1.0, 1.0]
    """
    return constant_(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal).

    >>> lt.nn.init.eye_(lt.zeros((2, 3))).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-D tensors are supported, got shape {tensor.shape}")
    return _fill(tensor, eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).

    >>> w = lt.nn.init.xavier_uniform_(lt.zeros((4, 2)))
    >>> bool((w.abs() <= 1.0).all())
    True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).

    >>> lt.nn.init.xavier_normal_(lt.zeros((4, 2))).shape
    (4, 2)
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), the gain of `nonlinearity` (with
    negative slope `a`), fan the fan_in or fan_out of `mode`. A tensor with no elements is left
    as it is.

    >>> lt.nn.init.kaiming_uniform_(lt.zeros((4, 3)), a=5 ** 0.5).shape
    (4, 3)
    """
    if 0 in tensor.shape:
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan) (see kaiming_uniform_).

    >>> lt.nn.init.kaiming_normal_(lt.zeros((4, 3)), nonlinearity="relu").shape
    (4, 3)
    """
    if 0 in tensor.shape:
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """A (semi-)orthogonal matrix (of the tensor flattened to (rows, rest)) from the QR
    decomposition of a normal one, signs fixed as PyTorch fixes them, times `gain`.

    >>> w = lt.nn.init.orthogonal_(lt.zeros((3, 3))).numpy()
    >>> bool(np.allclose(w @ w.T, np.eye(3), atol=1e-5))
    True
    """
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, got shape {tensor.shape}")
    if tensor.size == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = randn(rows, cols, dtype="float64").numpy()
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, asarray(q.reshape(tensor.shape) * gain, dtype=tensor.dtype, device=tensor.device))


__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]
