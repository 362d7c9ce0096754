"""Sampling from the categorical distributions a tensor holds: `multinomial` (PyTorch's).

The random numbers come from the generator `lt.rand` uses (`lt.manual_seed`, or `seed=`), drawn
on the host; under `lt.jit` each call draws new ones (creation._random). The sampling itself
stays lazy: the probabilities are not read when called.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from . import views
from .creation import _random
from .devices import canonical_device
from .ir.dtypes import float32, float64
from .operands import as_tensor, where
from .sorting import topk
from .tensor import Tensor


def _gumbel(generator: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return generator.gumbel(size=shape)


def multinomial(input: Any, num_samples: int, replacement: bool = False, *, generator: Any = None,
                seed: Optional[int] = None) -> Tensor:
    """PyTorch's multinomial: `num_samples` category indices (int64) drawn from each row of
    `input` (1-D: one distribution; 2-D: one per row), category i with probability
    input[i] / sum(input). The weights need not sum to 1. Without replacement a category is drawn
    at most once per row (in the order drawn, as successive draws from what is left).

    `seed=` (an int, as lt.rand takes it) or `generator=` (a numpy Generator) makes the draws
    reproducible; without them the generator `lt.manual_seed` seeds draws them.

    The weights stay lazy (not read when called, as a lazy index is not), so what PyTorch refuses
    by reading them is not checked: categories whose weight is 0, negative or nan are never drawn
    (a row with none positive gives index 0), and without replacement a row with fewer positive
    weights than `num_samples` fills the rest with the first zero-weight categories.

    Each draw is the argmax of log(weight) plus Gumbel noise (the Gumbel-max trick; without
    replacement the top `num_samples` of one noisy row, which draws without replacement exactly).

    >>> lt.multinomial(lt.asarray([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    >>> lt.multinomial(lt.asarray([[1.0, 1.0, 1.0]]), 3, seed=0).shape
    (1, 3)
    """
    probs = as_tensor(input)
    if probs.ndim not in (1, 2):
        raise ValueError(f"multinomial: takes a 1-D tensor of weights or a 2-D tensor of rows of weights, not "
                         f"shape {probs.shape}")
    if not probs.dtype.is_float:
        raise TypeError(f"multinomial: the weights must be floats, not {probs.dtype.name}; cast them (x.float())")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be a positive int, not {num_samples!r}")
    n = probs.shape[-1]
    if n == 0:
        raise ValueError(f"multinomial: the weights of shape {probs.shape} have no category to draw")
    if not replacement and num_samples > n:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from {n} categories "
                         "(pass replacement=True, or draw fewer)")
    if generator is not None:
        if seed is not None:
            raise TypeError("multinomial: give seed= or generator=, not both")
        if not isinstance(generator, np.random.Generator):
            raise TypeError(f"multinomial: generator must be a numpy Generator (np.random.default_rng(...)), not "
                            f"{type(generator).__name__}; or pass seed=")
        seed = generator
    rows = probs.reshape(1, n) if probs.ndim == 1 else probs
    work = float64 if probs.dtype is float64 else float32
    weights = rows.astype(work)
    device = canonical_device(probs.device)
    if replacement:
        noise = _random(_gumbel, (rows.shape[0], int(num_samples), n), seed, work, device)
        weights = weights.reshape(rows.shape[0], 1, n)
    else:
        noise = _random(_gumbel, rows.shape, seed, work, device)
    # (never drawn: weights 0, negative or nan, whatever the noise, an infinite draw too)
    scores = where(weights > 0, weights.log() + noise, -math.inf)
    drawn = scores.argmax(axis=-1) if replacement else topk(scores, int(num_samples), dim=-1).indices
    # (the 1-D result: a tensor of its own, not a view of the 2-D one, which lt.jit could not replay)
    return views.fresh(drawn.reshape(int(num_samples))) if probs.ndim == 1 else drawn


__all__ = ["multinomial"]
