"""Gradient clipping (`lt.nn.utils`, PyTorch's torch.nn.utils): the gradients are scaled in
place, lazily -- the total norm is a 0-d tensor in the same graph as the optimizer step that
follows, so clipping reads nothing back to the host unless asked to check it is finite.

>>> model = lt.nn.Linear(3, 1); model(lt.ones((2, 3))).sum().backward()
>>> total_norm = lt.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Union

from ..autograd import no_grad
from ..creation import zeros
from ..linalg import vector_norm
from ..manipulation import concat
from ..operands import where
from ..tensor import Tensor

Parameters = Union[Tensor, Iterable[Tensor]]


def _grads(parameters: Parameters) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in params if p.grad is not None]


def clip_grad_norm_(parameters: Parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    """Scale the gradients of `parameters` in place so that their total norm (the norm of the
    vector of each gradient's norm, of order `norm_type`, inf for the largest |g|) is at most
    `max_norm`: each .grad is multiplied by min(1, max_norm / (total + 1e-6)), as PyTorch does.
    Returns the total norm before clipping (a 0-d tensor; 0.0 with no gradients).
    error_if_nonfinite raises where the norm is nan or inf (this reads it: a sync). `foreach`
    is accepted for PyTorch's signature and has no effect.

    >>> w = lt.nn.Parameter(lt.zeros(2)); w.grad = lt.asarray([3.0, 4.0])
    >>> lt.nn.utils.clip_grad_norm_([w], max_norm=1.0).item(), [round(g, 4) for g in w.grad.tolist()]
    (5.0, [0.6, 0.8])
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return zeros(())
    device = grads[0].device
    with no_grad():
        norms = [vector_norm(g, ord=norm_type).to(device).reshape(1) for g in grads]
        total = vector_norm(concat(norms) if len(norms) > 1 else norms[0], ord=norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
                               "non-finite, so it cannot be clipped; to scale the gradients by it anyway, pass "
                               "error_if_nonfinite=False")
        coefficient = (max_norm / (total + 1e-6)).minimum(1.0)
        for g in grads:
            g *= coefficient.to(g.device).astype(g.dtype)
    return total


def clip_grad_value_(parameters: Parameters, clip_value: float, foreach: Any = None) -> None:
    """Clamp every gradient of `parameters` in place to [-clip_value, clip_value].

    >>> w = lt.nn.Parameter(lt.zeros(2)); w.grad = lt.asarray([-3.0, 0.5])
    >>> lt.nn.utils.clip_grad_value_([w], 1.0); w.grad.tolist()
    [-1.0, 0.5]
    """
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g._set_node(where(g > clip_value, clip_value, where(g < -clip_value, -clip_value, g)).astype(g.dtype).node)


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
