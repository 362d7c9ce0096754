"""lazytensor's public namespace: every name `import lazytensor as lt` gives (the package
re-exports it, lazytensor/__init__.py). It is the top of the front end's layers -- the tensor
core (tensor.py), the op families, then this -- so that imports run one way; the adapters that
map other libraries' names onto it (numpy_api.py, einops_backend.py) import it from above.
"""
import math

from .backends.runtime import VERSION as __version__
from .autograd import enable_grad, is_grad_enabled, no_grad
from .backward import grad
from .compute import comm_reducer, compute, reduce_axis
from .schedules import KernelSchedule, lower, schedule
from .creation import (arange, array, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace,
                       manual_seed, ones, ones_like, rand, randn, tensor, zeros, zeros_like)
from .devices import cache_clear, devices, stats, synchronize
from .functions import *  # noqa: F401,F403  (lt.exp(x), lt.add(a, b), ...)
from .functions import __all__ as _functions
from .indexing import index_add, nonzero, take, take_along_axis
from .linalg import matmul
from .movement import chunk, split
from .sampling import multinomial
from .info import *  # noqa: F401,F403  (finfo, iinfo, result_type, can_cast, isdtype, ...)
from .info import __all__ as _info
from .manipulation import *  # noqa: F401,F403  (moveaxis, roll, tile, tensordot, ...)
from .sorting import *  # noqa: F401,F403  (sort, argsort, cumulative_sum, searchsorted, unique_*)
from .sorting import __all__ as _sorting
from .manipulation import __all__ as _manipulation
from .ir.dtypes import (DType, bfloat16, bool_, complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
                        uint32, uint64)
from .realize import realize
from .reductions import *  # noqa: F401,F403  (sum, mean, max, argmax, var, ...)
from .reductions import __all__ as _reductions
from .jit import CaptureError, jit
from .tensor import Tensor
from . import operators  # noqa: F401  (Tensor's operators and elementwise methods)

from . import linalg  # noqa: E402  (the Array API's linalg extension namespace)
from . import fft  # noqa: E402  (the Array API's fft extension namespace)
from . import nn, optim  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import tuning  # noqa: E402  (lt.tuning.export / load)
from .tuning import tune  # noqa: E402

bool = bool_  # numpy 2 spells it np.bool
float, double, half, long, int = float32, float64, float16, int64, int32   # PyTorch's names (torch.long, ...)
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
    "tune", "tuning", "compute", "reduce_axis", "comm_reducer", "schedule", "lower",
    "KernelSchedule",
    "float", "double", "half", "long", "int", "split", "chunk", "multinomial",
    "e", "pi", "inf", "nan", "newaxis", "take", "take_along_axis", "nonzero", "index_add", "matmul",
    *_functions, *_reductions, *_manipulation, *_info, *_sorting,
]
