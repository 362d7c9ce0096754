"""Saving and loading dicts of tensors (a module's state_dict) as .npz files."""
from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

import numpy as np

from .tensor import Tensor


def save(state: dict, path: str) -> None:
    """Write a dict of tensors (or arrays) to a .npz file, atomically (a crash leaves the old file).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> lt.save({"w": lt.ones(2)}, path)
    >>> lt.load(path)["w"].tolist()
    [1.0, 1.0]
    """
    arrays = {}
    for name, value in state.items():
        if not isinstance(name, str):
            raise TypeError(f"save: keys must be strings, got {name!r}")
        arrays[name] = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
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
    from .creation import asarray
    with np.load(path, allow_pickle=False) as data:
        return {name: asarray(data[name], device=device) for name in data.files}


__all__ = ["save", "load"]
