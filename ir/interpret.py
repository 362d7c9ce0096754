"""The reference interpreter: runs a graph with numpy, op by op, from the NUMPY_REFERENCE table.

It is the living definition of the graph IR; tests check that compiled kernels agree with it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .dtypes import cast_values
from .graph import Node, toposort
from .ops import Op
from .rules import NUMPY_REFERENCE


def interpret(roots: list[Node], read_buffer: Callable[[object], np.ndarray]) -> list[np.ndarray]:
    """The values of `roots`; `read_buffer` turns a BUFFER node's arg into a numpy array."""
    values: dict[Node, np.ndarray] = {}
    for node in toposort(roots):
        if node.op is Op.BUFFER:
            values[node] = np.asarray(read_buffer(node.arg)).reshape(node.shape)
        elif node.op is Op.CONST:
            values[node] = np.full(node.shape, node.arg, dtype=node.dtype.np)   # (bfloat16's: rounded)
        else:
            with np.errstate(all="ignore"):
                result = NUMPY_REFERENCE[node.op]([values[s] for s in node.src], node.arg, node.dtype)
            values[node] = cast_values(result, node.dtype)
    return [values[r] for r in roots]
