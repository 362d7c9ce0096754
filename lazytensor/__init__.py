"""lazytensor: a JIT array compiler for Python with lazy tensors.

>>> import lazytensor as lt
>>> x = lt.asarray([1.0, 2.0, 3.0])
>>> float((x * 2).sum())
12.0
"""
from .namespace import *  # noqa: F401,F403
from .namespace import __all__  # noqa: F401
# adapters over the namespace: numpy's protocols on tensors (np.exp(t), np.concatenate([t])) and
# einops' backend (where einops is installed)
from . import einops_backend, numpy_api  # noqa: F401,E402
