"""Gradient rules of FFT nodes (the fft extension's transforms).

autograd.py's table sends Op.FFT here (fft_rule). Every transform is linear, so its gradient is its
adjoint applied to the result's gradient (PyTorch's convention for complex values: see
autograd.py), itself a transform:

  fft, fftn (and the inverses)  the inverse transform with the swapped norm ("backward" <->
                                "forward"; "ortho" is its own), cropped or zero-padded back to
                                the input's lengths (the adjoint of n= / s=)
  rfft, rfftn                   the half spectrum zero-padded to n, the inverse c2c transform,
                                its real part
  irfft, irfftn                 rfftn of the gradient, the frequencies that stand for two (k and
                                n - k) doubled
  hfft, ihfft                   numpy's definitions: irfft(conj(x)) and conj(rfft(x)), swapped norm
"""
from __future__ import annotations

from .grad_rules import Grads, _c, _conj, _mul
from .ir.fft import lengths
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .ir.rules import make

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_INVERSE = {"fft": "ifftn", "fftn": "ifftn", "ifft": "fftn", "ifftn": "fftn"}


def fft_rule(g: Node, out: Node) -> Grads:
    """The gradient of an FFT node's source, given the gradient of the node."""
    name, sizes, axes, norm = out.arg
    x = out.src[0]
    if x.size == 0 or g.size == 0:
        return (_c(0, x),)
    n = lengths(name, x.shape, sizes, axes)
    if name in _INVERSE:
        grad = _transform(_INVERSE[name], g, axes, _SWAP[norm])
    elif name in ("rfft", "rfftn"):
        grad = _real_of_inverse(g, axes, n[-1], _SWAP[norm])
    elif name == "ihfft":
        grad = _real_of_inverse(_conj(g), axes, n[-1], norm)
    elif name in ("irfft", "irfftn"):
        grad = _half_spectrum(g, axes, n[-1], _SWAP[norm])
    else:
        assert name == "hfft", name
        grad = _conj(_half_spectrum(g, axes, n[-1], norm))
    return (_fit(grad, x.shape),)


def _transform(name: str, x: Node, axes: tuple[int, ...], norm: str) -> Node:
    """The transform over `axes` at x's own lengths."""
    return make(Op.FFT, x, arg=(name, None, axes, norm))


def _real_of_inverse(g: Node, axes: tuple[int, ...], n: int, norm: str) -> Node:
    """The adjoint of a real-input transform: g's half spectrum (last axis) padded to n, the
    inverse complex transform, its real part."""
    last = axes[-1]
    full = make(Op.PAD, g, arg=tuple((0, n - m) if a == last else (0, 0) for a, m in enumerate(g.shape)))
    return make(Op.REAL, _transform("ifftn", full, axes, norm))


def _half_spectrum(g: Node, axes: tuple[int, ...], n: int, norm: str) -> Node:
    """The adjoint of a real-output transform of a half spectrum: rfftn of g, with the
    frequencies 1 .. (n - 1) // 2 doubled (each stands for itself and its mirror n - k)."""
    spectrum = _transform("rfftn", g, axes, norm)
    twice = (n - 1) // 2
    if twice == 0:
        return spectrum
    last = axes[-1]
    shape = spectrum.shape
    ones = const(1, spectrum.dtype, tuple(twice if a == last else m for a, m in enumerate(shape)))
    extra = make(Op.PAD, ones, arg=tuple((1, m - 1 - twice) if a == last else (0, 0) for a, m in enumerate(shape)))
    return _mul(spectrum, make(Op.ADD, extra, _c(1, extra)))


def _fit(g: Node, shape: tuple[int, ...]) -> Node:
    """g cropped or zero-padded to `shape` (the adjoint of numpy's n= and s=)."""
    if g.shape == shape:
        return g
    crop = tuple((0, min(m, k), 1) for m, k in zip(g.shape, shape))
    g = make(Op.SHRINK, g, arg=crop) if any(m > k for m, k in zip(g.shape, shape)) else g
    padding = tuple((0, k - m) for m, k in zip(g.shape, shape))
    return make(Op.PAD, g, arg=padding) if any(p for _, p in padding) else g
