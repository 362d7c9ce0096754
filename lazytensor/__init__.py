"""lazytensor: a JIT array compiler for Python with lazy tensors.

>>> import lazytensor as lt
>>> x = lt.asarray([1.0, 2.0, 3.0])
>>> float((x * 2).sum())
12.0
"""
import math

from .backends.runtime import VERSION as __version__
from .autograd import enable_grad, grad, is_grad_enabled, no_grad
from .creation import (arange, array, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace,
                       manual_seed, ones, ones_like, rand, randn, tensor, zeros, zeros_like)
from .devices import cache_clear, devices, stats, synchronize
from .functions import *  # noqa: F401,F403  (lt.exp(x), lt.add(a, b), ...)
from .functions import __all__ as _functions
from .indexing import index_add, nonzero, take, take_along_axis
from .info import *  # noqa: F401,F403  (finfo, iinfo, result_type, can_cast, isdtype, ...)
from .info import __all__ as _info
from .manipulation import *  # noqa: F401,F403  (moveaxis, roll, tile, tensordot, ...)
from .sorting import *  # noqa: F401,F403  (sort, argsort, cumulative_sum, searchsorted, unique_*)
from .sorting import __all__ as _sorting
from .manipulation import __all__ as _manipulation
from .ir.dtypes import (DType, bfloat16, bool_, complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
                        uint32, uint64)
from .realize import realize
from .jit import CaptureError, jit
from .tensor import Tensor

from . import linalg  # noqa: E402  (the Array API's linalg extension namespace)
from . import fft  # noqa: E402  (the Array API's fft extension namespace)
from . import nn, optim  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import einops_backend  # noqa: E402,F401  (einops.rearrange(t, ...) where einops is installed)

bool = bool_  # numpy 2 spells it np.bool
e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None
unsqueeze = expand_dims  # noqa: F405  (the PyTorch name)

__all__ = [
    "__version__", "Tensor", "no_grad", "enable_grad", "is_grad_enabled", "grad",
    "DType", "bool", "bool_", "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
    "int64", "uint8", "uint16", "uint32", "uint64", "arange", "array", "asarray", "tensor",
    "empty", "empty_like", "full", "full_like", "manual_seed", "ones", "ones_like", "rand", "randn",
    "zeros", "zeros_like", "devices", "cache_clear", "stats", "synchronize", "realize", "unsqueeze", "eye",
    "linspace", "from_dlpack", "linalg", "fft", "nn", "optim", "save", "load", "jit", "CaptureError",
    "e", "pi", "inf", "nan", "newaxis", "take", "take_along_axis", "nonzero", "index_add",
    *_functions, *_manipulation, *_info, *_sorting,
]
