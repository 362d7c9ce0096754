"""Optimizers (PyTorch's names and defaults). A step computes every new parameter and state value
lazily, realizes them together (one batch of fused kernels per device), and puts the values in
place: the parameters stay the same leaf tensors and no graph grows from step to step.

Numbers that change between steps enter the kernels as 0-d tensors, not constants, so the
kernels of step 2 are the compiled ones of step 1: the learning rate, and Adam's step count, from
which the kernels compute its bias corrections (so a step captured by lt.jit stays right).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Optional, Union

from .autograd import enable_grad, no_grad, zero_grads
from . import capture
from .creation import asarray, zeros, zeros_like
from .functions import expm1, imag, real
from .ir.arith import complex_
from .ir.dtypes import float32, float64, real_dtype
from .movement import stack
from .realize import realize
from .tensor import Tensor


class Optimizer:
    """Base class: parameter groups (dicts with "params" and options) and per-parameter state."""

    def __init__(self, params: Iterable[Any], defaults: dict):
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.defaults = defaults
        self.param_groups: list[dict] = []
        seen: set[int] = set()
        for group in groups:
            params = list(group["params"])
            if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
                raise ValueError(f"{type(self).__name__}: a parameter appears more than once in the parameter "
                                 "groups; give each parameter to one group")
            seen.update(id(p) for p in params)
            for p in params:
                if not isinstance(p, Tensor) or not p.is_leaf or not p.requires_grad:
                    raise TypeError(f"{type(self).__name__} optimizes leaf tensors that require grad "
                                    f"(model.parameters()); got {type(p).__name__} with "
                                    f"requires_grad={getattr(p, 'requires_grad', None)}")
            self.param_groups.append({**defaults, **group, "params": params})
        self.state: dict[Tensor, dict] = {}
        # 0-d tensors of the numbers a step uses, by value: made once, shared by the parameters
        # (and by later steps while the value stays: buffers never change)
        self._scalars: dict[tuple, Tensor] = {}
        # values one step computes once for every parameter they are the same for (see `_once`)
        self._shared: dict[tuple, Any] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (before the next backward, which would add to them)."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    @no_grad()
    def step(self, closure: Optional[Callable[[], Tensor]] = None) -> Optional[Tensor]:
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if len(self._scalars) > 64:   # (a learning rate schedule changes them every step)
            self._scalars.clear()
        if capture.RECORDING is not None:   # a replay of lt.jit checks the settings it captured
            capture.guard(("settings", id(self)), self._settings)
        updates: list[tuple[Tensor, Tensor]] = []   # (where the value goes, the new value)
        self._shared = {}
        try:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        g = -p.grad if group.get("maximize") else p.grad
                        updates.extend(self._update(p, g, group, self.state.setdefault(p, {})))
        finally:
            self._shared = {}
        realize(*[value for _, value in updates])
        for target, value in updates:
            target._set_node(value.node)
        return loss

    def _settings(self) -> tuple:
        """The numbers a step's kernels were built with (a tensor setting is an input: by identity)."""
        return tuple(tuple((k, ("tensor", id(v)) if isinstance(v, Tensor) else v) for k, v in group.items()
                           if k != "params") for group in self.param_groups)

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> list[tuple[Tensor, Tensor]]:
        """(where each new value goes, the new value) for parameter `p` with gradient `g`
        (already negated for maximize)."""
        raise NotImplementedError

    def _scalar(self, value: Union[float, Tensor], like: Tensor) -> Tensor:
        """A 0-d tensor of `value` (a setting such as lr: a number, or a 0-d tensor the caller
        may change in place) in `like`'s dtype, on its device."""
        if isinstance(value, Tensor):
            return value if value.dtype == like.dtype else value.astype(like.dtype)
        key = (value, like.dtype, like.device)
        if key in self._scalars:
            return self._scalars[key]
        scalar = asarray(value, dtype=like.dtype, device=like.device)
        if capture.RECORDING is None:   # (kept by lt.jit, a tensor made during its capture would
            self._scalars[key] = scalar  # be state it cannot replay; the settings' guard covers it)
        return scalar

    def _once(self, key: tuple, make: Callable[[], Any]) -> Any:
        """`make()`, made once per step for each `key`: the parameters of a group share their
        step count's tensor while they step together (one node: `key` holds it), and with it
        the bias corrections computed from it -- ten fewer tensor ops a parameter per step."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


def _log(beta: float) -> float:
    return math.log(beta) if beta > 0 else -math.inf


def _check(name: str, value: float, low: float = 0.0) -> None:
    if not value >= low:
        raise ValueError(f"invalid {name}: {value} (must be >= {low})")


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

    >>> w = lt.ones(2, requires_grad=True)
    >>> opt = lt.optim.SGD([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step()
    >>> w.tolist()
    [0.0, 0.0]
    """

    def __init__(self, params: Iterable[Any], lr: Union[float, Tensor] = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
        for name, value in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
            _check(name, value)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _update(self, p, g, group, state):
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        changes = []
        if group["momentum"]:
            if "momentum_buffer" not in state:
                buf = g
                state["momentum_buffer"] = zeros_like(p)
            else:
                buf = state["momentum_buffer"] * group["momentum"] + g * (1 - group["dampening"])
            changes.append((state["momentum_buffer"], buf))
            g = g + buf * group["momentum"] if group["nesterov"] else buf
        return [(p, p - self._scalar(group["lr"], p) * g)] + changes


class Adam(Optimizer):
    """Adam (Kingma & Ba): per-parameter steps from running averages of the gradient and its
    square, bias-corrected; weight_decay adds to the gradient (L2), as in PyTorch's Adam. A
    complex parameter is two real ones (its parts each get their own step, as PyTorch's).

    >>> w = lt.ones(2, requires_grad=True)
    >>> opt = lt.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, 0.9]
    """

    decoupled = False

    def __init__(self, params: Iterable[Any], lr: Union[float, Tensor] = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 maximize: bool = False):
        _check("lr", lr)
        _check("eps", eps)
        _check("weight_decay", weight_decay)
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"invalid betas {betas}: each must be in [0, 1)")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, p, g, group, state):
        beta1, beta2 = group["betas"]
        lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
        if decay and not self.decoupled:
            g = g + p * decay
        part = real_dtype(p.dtype)
        if "exp_avg" not in state:
            # the step count is a tensor (as in PyTorch): the bias corrections are computed by the
            # kernels, so a step captured by lt.jit replays with the count it has then
            count = float64 if part == float64 else float32
            zero = self._once(("zero", count, p.device), lambda: zeros((), dtype=count, device=p.device))
            state["step"] = zero._new(zero.node)
            state["exp_avg"], state["exp_avg_sq"] = zeros_like(p), zeros_like(_parts(p))
        step = state["step"]

        def corrections() -> tuple[Tensor, Tensor, Tensor]:
            # p -= lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps), where 1 - beta^t is
            # -expm1(t log beta): 1 - 0.999^t directly would lose digits to the rounding of 0.999
            t = step + 1
            return t, (self._scalar(lr, t) / -expm1(t * _log(beta1))).astype(part), \
                (1 / -expm1(t * _log(beta2))).astype(part)
        lr_key = ("tensor", id(lr)) if isinstance(lr, Tensor) else lr
        t, step_size, inverse_correction = self._once(("corrections", step.node, lr_key, beta1, beta2, part),
                                                      corrections)
        m = state["exp_avg"] * beta1 + g * (1 - beta1)
        v = state["exp_avg_sq"] * beta2 + _parts(g) * _parts(g) * (1 - beta2)
        base = p * self._scalar(1 - lr * decay, p) if decay and self.decoupled else p
        new_p = base - _whole(step_size * _parts(m) / ((v * inverse_correction).sqrt() + eps), p)
        return [(p, new_p), (state["exp_avg"], m), (state["exp_avg_sq"], v), (state["step"], t)]


def _parts(z: Tensor) -> Tensor:
    """A complex tensor as its real and imaginary parts along a new last axis; a real one as is."""
    return stack((real(z), imag(z)), axis=-1) if z.dtype.is_complex else z


def _whole(x: Tensor, like: Tensor) -> Tensor:
    """The inverse of _parts for a tensor like `like`."""
    return x._new(complex_(x[..., 0].node, x[..., 1].node)) if like.dtype.is_complex else x


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): parameters shrink by lr * weight_decay
    each step, apart from the gradient's running averages. Default weight_decay 0.01.

    >>> w = lt.ones(2, requires_grad=True)
    >>> opt = lt.optim.AdamW([w], lr=0.1, weight_decay=0.0)
    >>> (w * w).sum().backward(); opt.step()
    >>> [round(v, 4) for v in w.tolist()]
    [0.9, 0.9]
    """

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: Union[float, Tensor] = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, maximize)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
