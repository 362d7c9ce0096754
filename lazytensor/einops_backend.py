"""einops on lazytensor tensors: `einops.rearrange(t, "b c h w -> b (h w) c")`, `reduce`,
`repeat`, `pack`, `unpack` give lazy tensors.

einops finds a tensor's backend among the subclasses of its `AbstractBackend`, so lazytensor
declares one when einops is installed (importing einops costs ~3 ms; lazytensor does not need
it). Everything einops asks of a backend is an Array API call, so every result stays lazy.
"""
try:
    from einops._backends import AbstractBackend
except Exception:   # (no einops, or one installed with errors or without this module: nothing to declare)
    AbstractBackend = None

if AbstractBackend is not None:
    import numpy as np

    from . import namespace as lt

    class LazytensorBackend(AbstractBackend):
        framework_name = "lazytensor"

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, lt.Tensor)

        def from_numpy(self, x):
            return lt.asarray(x)

        def to_numpy(self, x):
            return np.asarray(x)

        def arange(self, start, stop):
            return lt.arange(start, stop)

        def reshape(self, x, shape):
            return lt.reshape(x, tuple(shape))

        def transpose(self, x, axes):
            return lt.permute_dims(x, tuple(axes))

        def reduce(self, x, operation, axes):
            return getattr(lt, operation)(x, axis=tuple(axes))

        def stack_on_zeroth_dimension(self, tensors: list):
            return lt.stack(tensors)

        def add_axis(self, x, new_position):
            return lt.expand_dims(x, axis=new_position)

        def add_axes(self, x, n_axes, pos2len):
            shape = list(x.shape)
            for position in sorted(pos2len):   # (new axes of length 1, then a broadcast: no copy until used)
                shape.insert(position, 1)
            x = lt.reshape(x, tuple(shape))
            return lt.broadcast_to(x, tuple(pos2len.get(i, n) for i, n in enumerate(shape)))

        def tile(self, x, repeats):
            return lt.tile(x, tuple(repeats))

        def concat(self, tensors, axis: int):
            return lt.concat(tensors, axis=axis)

        def is_float_type(self, x):
            return x.dtype.is_float
