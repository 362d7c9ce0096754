"""The gradient check the autograd, linalg and fft tests share: backward() of a real loss of
f's output against central finite differences, one input element at a time.

The loss is sum(f(x) * W) for fixed random weights W (for a complex output, the sum of
real * Re W + imag * Im W), so every element of f's output matters. A complex input's gradient
is dL/dRe + i dL/dIm (PyTorch's convention), each part measured by its own differences.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

import lazytensor as lt
from lazytensor.ir.graph import toposort
from lazytensor.ir.ops import Op


def ops_in(tensor: lt.Tensor) -> set[Op]:
    """The ops of the graph that computes `tensor`."""
    return {node.op for node in toposort([tensor.node])}


def fixed_weights(shape: tuple[int, ...], dtype: lt.DType) -> np.ndarray:
    """The same random weights for the same output shape, every run (complex for a complex dtype)."""
    rng = np.random.default_rng(1 + sum(n * 31**i for i, n in enumerate(shape)))
    weights = rng.standard_normal(shape)
    if dtype.is_complex:
        weights = weights + 1j * rng.standard_normal(shape)
    return weights.astype(dtype.np)


def weighted_loss(out: lt.Tensor, weights: np.ndarray) -> lt.Tensor:
    w = lt.asarray(weights, device=out.device)
    if out.dtype.is_complex:
        return (lt.real(out) * lt.real(w) + lt.imag(out) * lt.imag(w)).sum()
    return (out * w).sum()


def loss_value(f: Callable, arrays: list[np.ndarray], weights: np.ndarray, device: str) -> float:
    """The weighted loss of f(*arrays), computed by lazytensor on tensors that need no grad."""
    out = f(*[lt.asarray(a, device=device) for a in arrays]).numpy()
    return float(np.sum(out.real.astype(np.float64) * weights.real.astype(np.float64))
                 + np.sum(out.imag.astype(np.float64) * weights.imag.astype(np.float64)))


def numeric_gradient(f: Callable, arrays: list[np.ndarray], i: int, weights: np.ndarray, device: str,
                     eps: float) -> np.ndarray:
    """d loss / d arrays[i] by central differences, one element (and part) at a time."""
    x = arrays[i]
    units = (1, 1j) if x.dtype.kind == "c" else (1,)
    grad = np.zeros(x.shape, np.complex128 if x.dtype.kind == "c" else np.float64)
    for index in np.ndindex(x.shape):
        for unit in units:
            plus, minus = x.copy(), x.copy()
            plus[index] += eps * unit
            minus[index] -= eps * unit
            step = ((complex(plus[index]) - complex(minus[index])) / unit).real   # the step really taken
            up = loss_value(f, arrays[:i] + [plus] + arrays[i + 1:], weights, device)
            down = loss_value(f, arrays[:i] + [minus] + arrays[i + 1:], weights, device)
            grad[index] += unit * (up - down) / step
    return grad


def check_gradient(f: Callable, *arrays: np.ndarray, op: Optional[Op] = None, device: str = "cpu",
                   eps: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-7) -> list[np.ndarray]:
    """backward() of the weighted loss of f(*tensors) against central finite differences: each
    array becomes a leaf that requires grad (keeping a float or complex dtype, float64 otherwise);
    `op`, when given, must appear in the graph f builds. Returns the gradients backward() computed."""
    arrays = [np.array(a) if np.asarray(a).dtype.kind in "fc" else np.array(a, dtype=np.float64) for a in arrays]
    leaves = [lt.asarray(a, device=device, requires_grad=True) for a in arrays]
    out = f(*leaves)
    assert out.requires_grad, "f's result does not require grad"
    if op is not None:
        assert op in ops_in(out), f"{op} is not in the graph of f, so its rule is not tested here"
    weights = fixed_weights(out.shape, out.dtype)
    weighted_loss(out, weights).backward()
    grads = []
    for i, (array, leaf) in enumerate(zip(arrays, leaves)):
        assert leaf.grad is not None, f"input {i} of shape {array.shape} got no gradient"
        got = leaf.grad.numpy()
        assert got.shape == array.shape, f"input {i}: gradient shape {got.shape} != input shape {array.shape}"
        assert got.dtype == array.dtype, f"input {i}: gradient dtype {got.dtype} != input dtype {array.dtype}"
        want = numeric_gradient(f, arrays, i, weights, device, eps)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
        grads.append(got)
    return grads
