"""`tensor.backward()` and `lt.grad(f)`: autograd (autograd.py) driven from tensors -- the
gradients built as nodes, realized together with the tensor, accumulated into the leaves' .grad."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .autograd import _LEAVES, enable_grad, gradients, tracks
from .creation import asarray
from .ir.arith import add as _add, cast
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make
from .operands import as_tensor
from .realize import realize, realized_together, realized_value
from .tensor import Tensor, attach_methods


def backward(tensor: Tensor, gradient: Any, retain_graph: bool) -> None:
    """tensor.backward(): accumulate d(tensor)/d(leaf) into every leaf's .grad, computed
    together with the tensor itself in one realize."""
    if not tensor.requires_grad:
        raise RuntimeError("backward(): this tensor does not require grad; create the inputs with "
                           "requires_grad=True (or call .requires_grad_()) before computing it")
    if not tracks(tensor.node):
        raise RuntimeError("backward(): the graph of this tensor was freed by an earlier backward(); "
                           "pass retain_graph=True to the first call to run backward twice")
    if gradient is None:
        if tensor.dtype.is_complex:
            raise RuntimeError(f"backward() without a gradient needs a real value; this tensor is {tensor.dtype.name}: "
                               "differentiate a real function of it (lt.abs(z) ** 2, lt.real(z)) or pass gradient=")
        if tensor.size != 1:
            raise RuntimeError(f"backward() without a gradient works on a single value; this tensor has "
                               f"shape {tensor.shape}: pass gradient= of that shape, or call .sum() first")
        seed = const(1, tensor.dtype, tensor.shape)
    else:
        if not isinstance(gradient, Tensor):
            gradient = asarray(gradient, dtype=tensor.dtype, device=tensor.device)
        if gradient.shape != tensor.shape:
            raise RuntimeError(f"backward(): gradient has shape {gradient.shape}, the tensor {tensor.shape}")
        seed = cast(gradient.node, tensor.dtype)
    grads = gradients(tensor.node, seed)
    leaves = [(leaf, g) for leaf, g in ((_LEAVES[node](), g) for node, g in grads.items() if node in _LEAVES)
              if leaf is not None]   # (a leaf nobody keeps: its gradient goes nowhere)
    # detached here, so no tensor creation asks whether the whole gradient graph tracks a leaf
    with realized_together():
        new = [Tensor(make(Op.DETACH, g if leaf.grad is None else _add(leaf.grad.node, g)), leaf.device)
               for leaf, g in leaves]
    realize(tensor, *new)
    for (leaf, _), grad in zip(leaves, new):
        leaf.grad = grad
    if not retain_graph:
        tensor.node = realized_value(tensor.node)   # frees the graph (and its saved values)


def grad(f: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The gradient of a function with a single-value result, as a function (JAX's `grad`).

    >>> df = lt.grad(lambda x: (x * x).sum())
    >>> df(lt.asarray([1.0, 2.0])).tolist()
    [2.0, 4.0]
    """
    @functools.wraps(f)
    def gradient_of_f(*args, **kwargs):
        picked = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        inputs = list(args)
        for i in picked:
            inputs[i] = as_tensor(args[i]).detach().requires_grad_()
        with enable_grad():
            out = f(*inputs, **kwargs)
        out.backward()
        grads = tuple(inputs[i].grad for i in picked)
        return grads[0] if isinstance(argnums, int) else grads
    return gradient_of_f


class Backward:
    """Tensor.backward (attached below)."""

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Accumulate the gradient of this tensor with respect to every leaf that requires grad
        into the leaves' .grad. Without `gradient`, the tensor must hold a single value.

        >>> w = lt.asarray([1.0, 2.0], requires_grad=True)
        >>> (w * w).sum().backward()
        >>> w.grad.tolist()
        [2.0, 4.0]
        """
        backward(self, gradient, retain_graph)


attach_methods(Backward)
