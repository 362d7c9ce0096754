"""bfloat16 through DLPack, which numpy cannot carry: capsules relabelled between bfloat16 and
the uint16 bit patterns that numpy does carry.

numpy imports and exports DLPack for lazytensor (`np.from_dlpack`, `ndarray.__dlpack__`) but
knows no bfloat16. A bfloat16 tensor's memory is uint16 bit patterns to numpy, so an export is
numpy's uint16 capsule with its dtype field rewritten to bfloat16 before the consumer sees it,
and an import rewrites a bfloat16 capsule to uint16 before numpy reads it. A capsule is a
`DLManagedTensor` ("dltensor") or a `DLManagedTensorVersioned` ("dltensor_versioned", DLPack
1.x); both hold a `DLTensor`, whose `DLDataType` (code, bits, lanes) is rewritten in place.
"""
from __future__ import annotations

import ctypes
from typing import Any

# DLDataTypeCode values (dlpack.h)
UINT = 1
BFLOAT = 4

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

# where the DLTensor starts in each capsule's struct: first in DLManagedTensor; after the
# version (2 x uint32), manager_ctx, deleter and flags (uint64) in DLManagedTensorVersioned
_TENSOR_AT = {b"dltensor": 0, b"dltensor_versioned": 8 + 8 + 8 + 8}
_DTYPE_AT = 8 + 8 + 4   # in DLTensor: after data (void*), device (2 x int32) and ndim (int32)


def relabel(capsule: Any, code: int, new_code: int) -> bool:
    """Rewrites the 16-bit `code` element type of an unconsumed DLPack capsule to `new_code`;
    whether it was that type (a capsule of any other type is left as it is)."""
    name = _get_name(capsule)
    if name not in _TENSOR_AT:   # (a consumed or foreign capsule: numpy reports it)
        return False
    dtype = _get_pointer(capsule, name) + _TENSOR_AT[name] + _DTYPE_AT
    code_field, bits = ctypes.c_uint8.from_address(dtype), ctypes.c_uint8.from_address(dtype + 1).value
    if code_field.value != code or bits != 16:
        return False
    code_field.value = new_code
    return True


class BitsOf:
    """A DLPack producer standing for `source`, whose capsules say uint16 where the source's
    say bfloat16 (so numpy imports them); `bfloat16` tells whether they did."""

    def __init__(self, source: Any):
        self.source, self.bfloat16 = source, False

    def __dlpack_device__(self) -> Any:
        return self.source.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.source.__dlpack__(**kwargs)
        self.bfloat16 = relabel(capsule, BFLOAT, UINT)
        return capsule
