"""FFT, the opaque op of the fft extension: its rules. A node is one numpy.fft transform of its
source, run on the host (pocketfft through numpy) in the source's precision; complex values
reach it as float pairs (ir/complex.py). arg: (name, sizes, axes, norm) -- `sizes` the
transform's lengths along `axes` (numpy's n or s; None: the input's own), `norm` numpy's."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .dtypes import COMPLEX_OF, DType, real_dtype

Shape = tuple[int, ...]

COMPLEX_RESULT = frozenset({"fft", "ifft", "fftn", "ifftn", "rfft", "rfftn", "ihfft"})
HALF_SPECTRUM_IN = frozenset({"irfft", "irfftn", "hfft"})    # the last axis holds n // 2 + 1 values
HALF_SPECTRUM_OUT = frozenset({"rfft", "rfftn", "ihfft"})    # the last axis gives n // 2 + 1 values
ONE_AXIS = frozenset({"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"})


def lengths(name: str, shape: Shape, sizes: Optional[tuple[int, ...]], axes: tuple[int, ...]) -> tuple[int, ...]:
    """The transform's length along each axis (n or s, or what the input gives)."""
    if sizes is not None:
        return tuple(sizes)
    return tuple(2 * (shape[a] - 1) if name in HALF_SPECTRUM_IN and i == len(axes) - 1 else shape[a]
                 for i, a in enumerate(axes))


def fft_shape(shapes: tuple[Shape, ...], arg: tuple) -> Shape:
    name, sizes, axes, _ = arg
    out = list(shapes[0])
    for i, (a, n) in enumerate(zip(axes, lengths(name, shapes[0], sizes, axes))):
        last = i == len(axes) - 1
        out[a] = n // 2 + 1 if name in HALF_SPECTRUM_OUT and last else n
    return tuple(out)


def fft_dtype(dtypes: tuple[DType, ...], arg: tuple) -> DType:
    part = real_dtype(dtypes[0])
    return COMPLEX_OF[part] if arg[0] in COMPLEX_RESULT else part


def fft_reference(srcs: list[np.ndarray], arg: tuple, dtype: DType) -> np.ndarray:
    name, sizes, axes, norm = arg
    transform = getattr(np.fft, name)
    if name in ONE_AXIS:
        result = transform(srcs[0], n=None if sizes is None else sizes[0], axis=axes[0], norm=norm)
    else:
        result = transform(srcs[0], s=sizes, axes=axes, norm=norm)
    return np.asarray(result).astype(dtype.np, copy=False)
