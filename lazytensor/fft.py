"""The Array API's fft extension (`lt.fft`): discrete Fourier transforms as lazy graph steps.

Each transform is one opaque step (never fused; its input is computed first), run on the host by
numpy.fft (pocketfft) in the input's precision -- float32 and complex64 stay single precision --
and copied back to the device, as sort is. Real inputs of the complex transforms are taken as
complex; integers and bool compute in float64, float16 in float32, as numpy's. fftfreq and
rfftfreq are ordinary lazy tensors, fftshift and ifftshift rolls. Every transform is
differentiable: its gradient is the adjoint transform (lazytensor/fft_grad.py).

>>> x = lt.asarray([1.0, 2.0, 3.0, 4.0])
>>> lt.fft.fft(x).tolist()
[(10+0j), (-2+2j), (-2+0j), (-2-2j)]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from .creation import arange
from .ir.dtypes import COMPLEX_OF, HALF_FLOATS, DType, float32, float64, real_dtype, to_dtype
from .ir.fft import lengths
from .ir.ops import Op
from .ir.rules import make
from .manipulation import roll
from .operands import as_tensor, normalize_axes, where
from .tensor import Tensor

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_REAL_INPUT = ("rfft", "rfftn", "ihfft")   # (the others take complex input)


def _transform(name: str, x: Any, sizes: Optional[Sequence[int]], axes: Sequence[int], norm: str) -> Tensor:
    """Transform `name` of x over `axes` (normalized, distinct) with lengths `sizes` (or None)."""
    x = as_tensor(x)
    if norm not in _NORMS:
        raise ValueError(f"fft.{name}: norm must be one of {', '.join(map(repr, _NORMS))}, not {norm!r}")
    if name in _REAL_INPUT and x.dtype.is_complex:
        raise TypeError(f"fft.{name}: the input must be real, not {x.dtype.name} (use fft.fft for complex input)")
    part = _precision(x.dtype)
    x = x.astype(part if name in _REAL_INPUT else COMPLEX_OF[part])
    sizes = None if sizes is None else tuple(int(n) for n in sizes)
    for n, a in zip(lengths(name, x.shape, sizes, tuple(axes)), axes):
        if n < 1:
            raise ValueError(f"fft.{name}: invalid number of data points ({n}) along axis {a} of a tensor of "
                             f"shape {x.shape}; give n (or s) >= 1")
    return x._new(make(Op.FFT, x.node, arg=(name, sizes, tuple(axes), norm)))


def _precision(dtype: DType) -> DType:
    """The float type a transform of `dtype` computes in (numpy's)."""
    if dtype.is_complex or dtype is float32 or dtype is float64:
        return real_dtype(dtype)
    return float32 if dtype in HALF_FLOATS else float64


def _one_axis(name: str, x: Any, n: Optional[int], axis: int, norm: str) -> Tensor:
    x = as_tensor(x)
    if x.ndim == 0:
        raise ValueError(f"fft.{name}: the input needs at least one axis; got a 0-d tensor")
    (axis,) = normalize_axes(axis, x.ndim)
    return _transform(name, x, None if n is None else (n,), (axis,), norm)


def _many_axes(name: str, x: Any, s: Optional[Sequence[int]], axes: Optional[Sequence[int]], norm: str) -> Tensor:
    x = as_tensor(x)
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(normalize_axes(a, x.ndim)[0] for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"fft.{name}: axes must be distinct, got {axes}")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"fft.{name}: s has {len(s)} sizes for {len(axes)} axes")
    if not axes:
        raise ValueError(f"fft.{name}: no axes to transform (a 0-d tensor, or empty axes)")
    return _transform(name, x, s, axes, norm)


def fft(x: Any, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The one-dimensional discrete Fourier transform along `axis` (zero-padded or trimmed to n).

    >>> lt.fft.fft(lt.asarray([1.0, 1.0])).tolist()
    [(2+0j), 0j]
    """
    return _one_axis("fft", x, n, axis, norm)


def ifft(x: Any, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The inverse of `fft`.

    >>> lt.fft.ifft(lt.asarray([2.0, 0.0])).tolist()
    [(1+0j), (1+0j)]
    """
    return _one_axis("ifft", x, n, axis, norm)


def fftn(x: Any, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
         norm: str = "backward") -> Tensor:
    """The n-dimensional discrete Fourier transform over `axes` (all when None) with sizes `s`.

    >>> lt.fft.fftn(lt.ones((2, 2))).tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    return _many_axes("fftn", x, s, axes, norm)


def ifftn(x: Any, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: str = "backward") -> Tensor:
    """The inverse of `fftn`.

    >>> lt.fft.ifftn(lt.asarray([[4.0, 0.0], [0.0, 0.0]])).tolist()
    [[(1+0j), (1+0j)], [(1+0j), (1+0j)]]
    """
    return _many_axes("ifftn", x, s, axes, norm)


def rfft(x: Any, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The transform of real input: the n // 2 + 1 non-negative frequencies.

    >>> lt.fft.rfft(lt.asarray([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    return _one_axis("rfft", x, n, axis, norm)


def irfft(x: Any, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The inverse of `rfft`: n real values (2 * (m - 1) for m frequencies when n is None).

    >>> lt.fft.irfft(lt.asarray([10.0, -2 + 2j, -2.0])).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    return _one_axis("irfft", x, n, axis, norm)


def rfftn(x: Any, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: str = "backward") -> Tensor:
    """The n-dimensional transform of real input (the last axis halved, as in `rfft`).

    >>> lt.fft.rfftn(lt.ones((2, 2))).shape
    (2, 2)
    """
    return _many_axes("rfftn", x, s, axes, norm)


def irfftn(x: Any, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
           norm: str = "backward") -> Tensor:
    """The inverse of `rfftn`.

    >>> lt.fft.irfftn(lt.asarray([[4.0, 0.0], [0.0, 0.0]])).shape
    (2, 2)
    """
    return _many_axes("irfftn", x, s, axes, norm)


def hfft(x: Any, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The transform of a signal with Hermitian symmetry (given by its first half): real.

    >>> lt.fft.hfft(lt.asarray([1.0, 0.0, 0.0])).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    return _one_axis("hfft", x, n, axis, norm)


def ihfft(x: Any, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """The inverse of `hfft`, of real input.

    >>> lt.real(lt.fft.ihfft(lt.asarray([4.0, 0.0, 0.0, 0.0]))).tolist()
    [1.0, 1.0, 1.0]
    """
    return _one_axis("ihfft", x, n, axis, norm)


def _frequencies(n: int, count: int, dtype: Any, device: Any, name: str) -> tuple[Tensor, DType]:
    """arange(count) for an n-point transform, and the result's dtype (the default float)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"fft.{name}: n must be a positive int, not {n!r}")
    target = to_dtype(dtype)
    if not target.is_float:
        raise TypeError(f"fft.{name}: dtype must be a real floating-point type, not {target.name}")
    return arange(count, dtype="int64", device=device), target


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """The sample frequencies of an n-point `fft` with sample spacing d: [0, 1, ..., -1] / (d n).

    >>> lt.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    index, target = _frequencies(n, n, dtype, device, "fftfreq")
    signed = where(index < (n + 1) // 2, index, index - n)
    return (signed.astype(float64) / (d * n)).astype(target)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """The sample frequencies of an n-point `rfft`: [0, 1, ..., n // 2] / (d n).

    >>> lt.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    index, target = _frequencies(n, n // 2 + 1 if isinstance(n, int) else 0, dtype, device, "rfftfreq")
    return (index.astype(float64) / (d * n)).astype(target)


def _shift(x: Any, axes: Optional[Union[int, Sequence[int]]], sign: int) -> Tensor:
    x = as_tensor(x)
    axes = tuple(range(x.ndim)) if axes is None else normalize_axes(axes, x.ndim)
    if not axes:
        return x._new(x.node)
    return roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axis=axes)


def fftshift(x: Any, /, *, axes: Optional[Union[int, Sequence[int]]] = None) -> Tensor:
    """The zero frequency moved to the middle of `axes` (all when None).

    >>> lt.fft.fftshift(lt.fft.fftfreq(4)).tolist()
    [-0.5, -0.25, 0.0, 0.25]
    """
    return _shift(x, axes, 1)


def ifftshift(x: Any, /, *, axes: Optional[Union[int, Sequence[int]]] = None) -> Tensor:
    """The inverse of `fftshift`.

    >>> lt.fft.ifftshift(lt.asarray([-0.5, -0.25, 0.0, 0.25])).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    return _shift(x, axes, -1)
