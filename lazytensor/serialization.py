"""Saving and loading dicts of tensors (a module's state_dict) as .npz files; pickling and
deep-copying tensors."""
from __future__ import annotations

import copy
import os
import tempfile
from typing import Any, Optional

import numpy as np

from .creation import asarray
from .ir.dtypes import DType
from .tensor import Tensor, attach_methods


def save(state: dict, path: str) -> None:
    """Write a dict of tensors (or arrays) to a .npz file, atomically (a crash leaves the old file).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> lt.save({"w": lt.ones(2)}, path)
    >>> lt.load(path)["w"].tolist()
    [1.0, 1.0]
    """
    arrays, bfloat16 = {}, []
    for name, value in state.items():
        if not isinstance(name, str):
            raise TypeError(f"save: keys must be strings, got {name!r}")
        arrays[name] = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        if isinstance(value, Tensor) and value.dtype == "bfloat16":   # (saved as its float32 values)
            bfloat16.append(name)
    if bfloat16:
        arrays[_BFLOAT16] = np.array(bfloat16)
    folder = os.path.dirname(os.path.abspath(path))
    handle, partial = tempfile.mkstemp(dir=folder, suffix=".npz.partial")
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez(file, **arrays)
        os.replace(partial, path)
    except BaseException:
        os.unlink(partial)
        raise


def load(path: str, device: Optional[str] = None) -> dict[str, Any]:
    """The dict of tensors in a .npz file written by save(), on `device` (default: the default device).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "state.npz")
    >>> lt.save({"bias": lt.zeros(2)}, path)
    >>> lt.load(path)["bias"].tolist()
    [0.0, 0.0]
    """
    with np.load(path, allow_pickle=False) as data:
        bfloat16 = set(data[_BFLOAT16].tolist()) if _BFLOAT16 in data.files else set()
        return {name: asarray(data[name], dtype="bfloat16" if name in bfloat16 else None, device=device)
                for name in data.files if name != _BFLOAT16}


# the entry of a saved file that names its bfloat16 tensors (numpy has no bfloat16: their values
# are saved as float32)
_BFLOAT16 = "__lazytensor_bfloat16__"


__all__ = ["save", "load"]


# ---- pickle and copy ---------------------------------------------------------------------------

class Pickling:
    """Tensor's pickle and deepcopy protocols (attached below)."""

    def __reduce__(self):
        """pickle (and copy.copy): the values, the device and requires_grad, as PyTorch keeps
        them; not the graph -- the copy is a leaf -- and not .grad."""
        return _rebuild, (type(self), np.array(self.numpy()), self.device, self.requires_grad, self.dtype)

    def __deepcopy__(self, memo: dict) -> "Tensor":
        """copy.deepcopy: a new tensor of the same values (a leaf that requires grad where this
        one is), its .grad deep-copied too (PyTorch's rule)."""
        if not self.is_leaf:
            raise RuntimeError("deepcopy works on leaf tensors only (as in PyTorch): this one is the result of "
                               "operations that require grad; deepcopy x.detach(), or pickle it")
        new = _rebuild(type(self), np.array(self.numpy()), self.device, self.requires_grad, self.dtype)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = copy.deepcopy(self.grad, memo)
        return new


attach_methods(Pickling)


def _rebuild(cls: type, values: np.ndarray, device: str, requires_grad: bool, dtype: Optional[DType] = None) -> Tensor:
    """A pickled tensor back: a new leaf of `values` on `device` (a subclass such as
    nn.Parameter is made from the tensor and requires_grad), of `dtype` (the values' own where
    none is given: bfloat16 values come as float32)."""
    tensor = asarray(values, dtype=dtype, device=device)
    if cls is not Tensor:
        return cls(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_() if requires_grad else tensor
