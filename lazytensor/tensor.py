"""The lazy `Tensor`: a graph node on a device. Every operation records a node; values are
computed on demand (realize.py) or read without a kernel where they are already there (host.py).

This module is the core the op families build on: the class with its attributes, conversions
(numpy, DLPack, item), copies and casts, in-place writes and autograd's leaf state. The methods
that are operations -- arithmetic, math, reductions, movement, indexing -- are defined with the
op families (methods.py, reductions.py) and attached to the class there, so that imports run
one way: this module, then the families, then the namespace.
"""
from __future__ import annotations

import math
import operator
import sys
from types import FunctionType
from typing import Any, Optional, Union

import numpy as np

from . import autograd, capture, dlpack, views
from .autograd import adopt
from .devices import STATS, canonical_device, runtime
from .host import VIEWS, compute_viewed, host_value, host_values, read_element, read_view
from .ir.arith import cast
from .ir.dtypes import DType, bfloat16, to_dtype
from .ir.dtypes import bool_ as _BOOL, float16 as _FLOAT16, float32 as _FLOAT32, float64 as _FLOAT64
from .ir.dtypes import int32 as _INT32, int64 as _INT64
from .ir.graph import Node
from .ir.ops import Op
from .ir.rules import make
from .realize import _HELD_FROM_DEPTH, bound_pending, realized_value, values

_LEAVES_DATA = autograd._LEAVES.data   # (the leaves' weak dictionary's own dict: emptiness is cheap to test)

Scalar = Union[bool, int, float]
AxisError = np.exceptions.AxisError


def one_axis(dim: Any, ndim: int, what: str) -> int:
    """The one axis `dim` (an int, counting from the end where negative) of a tensor of `ndim`
    axes, as a non-negative int: TypeError where it is no int, AxisError where out of range."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{what}: dim must be an int (an axis), not {dim!r}")
    if not -ndim <= dim < ndim:
        raise AxisError(f"{what}: dim {dim} is out of range for a tensor of {ndim} dimensions "
                        f"(expected one in [{-ndim}, {ndim - 1}])")
    return int(dim) % ndim


def spelled_once(what: str, value: Any, default: Any, alias: Any, names: str) -> Any:
    """An argument numpy and PyTorch spell apart (numpy's axis, PyTorch's dim=): `value` (which
    is `default` where not given) or `alias` (None where not given), whichever was given; a
    TypeError naming both spellings (`names`) where both were."""
    if alias is None:
        return value
    if value is not default and value != default:
        raise TypeError(f"{what}: give {names} once, not both ({value!r} and {alias!r})")
    return alias


class Tensor:
    """A lazy n-dimensional array on a device.

    >>> x = lt.asarray([1.0, 2.0, 3.0])
    >>> (x * 2 + 1).numpy()
    array([3., 5., 7.], dtype=float32)
    """

    # _alias: for a view, what it views (views.ViewOf); for a base, its live views (views.Views)
    __slots__ = ("node", "device", "requires_grad", "grad", "_alias", "__weakref__")
    __hash__ = object.__hash__  # `==` builds a tensor, so hashing is by identity

    def __init__(self, node: Node, device: str = "cpu"):
        if not 0 < math.prod(node.shape) <= _SURELY_FITS:   # (the common case costs one product: ~40 ns)
            check_size(node.shape, node.dtype)
        if _LEAVES_DATA:   # (else nothing can track a leaf: no need to ask autograd)
            self.node, self.requires_grad = adopt(node)
        else:
            self.node, self.requires_grad = node, False
        self.device = device
        self.grad: Optional[Tensor] = None
        self._alias = None
        if node.depth >= _HELD_FROM_DEPTH:   # (deep pending work: bounded, see realize.bound_pending)
            bound_pending(self)

    # ---- attributes ---------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> DType:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    @property
    def size(self) -> "Size":
        """The number of elements (the Array API's and numpy's attribute), an int that can also
        be called as PyTorch's method: `x.size()` is the shape, `x.size(d)` the length of axis d.

        >>> x = lt.zeros((2, 3, 4))
        >>> x.size, x.size(), x.size(1), x.size(-1)
        (24, (2, 3, 4), 3, 4)
        """
        return Size(self.node.size, self.node.shape)

    def dim(self) -> int:
        """The number of axes (PyTorch's name for `ndim`).

        >>> lt.zeros((2, 3)).dim()
        2
        """
        return len(self.node.shape)

    def numel(self) -> int:
        """The number of elements (PyTorch's name for `size`), a plain int.

        >>> lt.zeros((2, 3)).numel()
        6
        """
        return self.node.size

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes the values take (size * itemsize), as numpy's."""
        return self.node.size * self.dtype.itemsize

    def to_device(self, device: Any, stream: Any = None) -> "Tensor":
        """This tensor on `device`: itself when it is there already, else a copy (computed
        first on its own device; each copy counts in `lt.stats()["transfers"]`).

        >>> lt.arange(3).to_device('cpu').tolist()
        [0, 1, 2]
        """
        target = canonical_device(device)
        if target == self.device:
            return self
        if self.requires_grad and autograd.is_grad_enabled():
            raise RuntimeError(f"to_device: copying a tensor that requires grad to {target} would cut its "
                               "gradient (copies do not carry gradients yet); move the inputs and the model "
                               "before the forward pass, or copy .detach() for a value you only read")
        host = runtime(self.device).device.to_numpy(self._buffer())   # (bfloat16: its bits)
        buffer = runtime(target).device.from_numpy(np.asarray(host, order="C")).seen_as(self.dtype)  # (keeps 0-d 0-d)
        STATS.transfers += 1
        return Tensor(Node(Op.BUFFER, self.dtype, self.shape, (), buffer), target)

    def to(self, *args: Any, dtype: Any = None, device: Any = None) -> "Tensor":
        """PyTorch's to: this tensor on a device (`to_device`) and/or in a dtype (`astype`), given
        positionally or by keyword, or as another tensor's (`x.to(other)`); itself where both
        are already so.

        >>> lt.ones(2).to("cpu").tolist()
        [1.0, 1.0]
        >>> lt.ones(2).to(lt.float16).dtype, lt.ones(2).to("cpu", lt.int64).dtype
        (lazytensor.float16, lazytensor.int64)
        """
        for arg in args:
            if isinstance(arg, Tensor):
                found = [("dtype", arg.dtype), ("device", arg.device)]
            elif isinstance(arg, (DType, np.dtype)) or (isinstance(arg, type) and (issubclass(arg, np.generic) or arg
                                                                                  in (bool, int, float, complex))):
                found = [("dtype", arg)]
            else:
                found = [("device", arg)]
            for name, value in found:
                if (dtype if name == "dtype" else device) is not None:
                    raise TypeError(f"to: the {name} is given twice ({args!r}, dtype={dtype!r}, device={device!r})")
                if name == "dtype":
                    dtype = value
                else:
                    device = value
        result = self if device is None else self.to_device(device)
        return result if dtype is None or to_dtype(dtype) is result.dtype else result.astype(dtype)

    def __array_namespace__(self, api_version: Optional[str] = None):
        """The module implementing the Python Array API for this tensor: lazytensor itself."""
        if api_version not in (None, "2025.12", "2024.12", "2023.12", "2022.12", "2021.12"):
            raise ValueError(f"lazytensor implements Array API version 2025.12 (and the earlier ones), "
                             f"not {api_version!r}")
        return sys.modules[__package__]   # (the package: imported whole before any tensor exists)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:   # (raised by iter() itself, as numpy does: matplotlib tests iter(x))
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ---- realization and conversion -----------------------------------------------------------------

    def realize(self) -> "Tensor":
        """Compute this tensor now (it stays a Tensor). Returns self.

        >>> y = (lt.ones(3) * 2).realize()
        """
        values(self)
        return self

    def _buffer(self):
        """The memory holding this tensor's value (for reading it), computed first where it is
        pending. (While lt.jit captures, refused for values that depend on the call.)"""
        buffer = values(self)[0].arg
        if capture.RECORDING is not None:
            capture.reading(buffer)
        return buffer

    def numpy(self) -> np.ndarray:
        """The values as a read-only numpy array (copy it with np.array(x) to write).

        >>> lt.arange(3).numpy()
        array([0, 1, 2])
        """
        node = self.node
        if node.op in VIEWS:
            values = read_view(node, self.device)
            if values is None and compute_viewed(node, self.device):
                values = read_view(node, self.device)
            if values is not None:
                return values
        if node.size == 1 and node.op is not Op.BUFFER:   # (a value from elements of realized memory,
            values = host_value(node, self.device)      # as item() computes it: np.asarray([x[i] * y[j], ...]))
            if values is not None:
                values.flags.writeable = False
                return values
        return host_values(runtime(self.device).device.to_numpy(self._buffer()), self.dtype)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None):
        """DLPack export: `np.from_dlpack(x)`, `torch.from_dlpack(x)` (DLPack 1.x when the consumer
        gives max_version, the legacy capsule otherwise).

        On the cpu the consumer shares memory that this tensor alone holds: the first export
        moves the values into such memory (one copy), later ones share it, and the consumer's
        writes change this tensor and no other -- not a copy of it, not a tensor computed the same
        way (lazytensor shares buffers between equal values). copy=True gives a copy of its own.
        From another device only as a copy to the host, asked for with `dl_device=(1, 0)`
        (`np.from_dlpack(x, device="cpu")`)."""
        if self.requires_grad:
            raise BufferError("DLPack export of a tensor that requires grad: export x.detach() (a consumer's "
                              "writes would bypass autograd)")
        kwargs = {} if max_version is None else {"max_version": max_version}
        if self.device != "cpu" and (dl_device is None or copy is False):
            raise BufferError(f"DLPack export: this tensor is on {self.device}; copy it with .to('cpu') "
                              "first (or ask for a host copy: np.from_dlpack(x, device='cpu'))")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"DLPack export: to the host only (dl_device=(1, 0)), not to device {tuple(dl_device)}")
        if self.device != "cpu" or copy:
            array = np.array(runtime(self.device).device.to_numpy(self._buffer()))
        else:
            array = runtime(self.device).device.to_numpy(self._private_buffer(), writeable=True)
        capsule = array.__dlpack__(stream=stream, **kwargs)
        if self.dtype is bfloat16:   # (numpy exported its bits: relabelled before the consumer reads them)
            dlpack.relabel(capsule, dlpack.UINT, dlpack.BFLOAT)
        return capsule

    def _private_buffer(self):
        """This tensor's values in memory no other tensor holds (see __dlpack__)."""
        node = self.node
        if node.op is Op.BUFFER and node.arg.private:
            return node.arg
        device = runtime(self.device).device
        buffer = device.from_numpy(device.to_numpy(self._buffer())).seen_as(self.dtype)
        buffer.private = True
        self.node = Node(Op.BUFFER, self.dtype, buffer.shape, (), buffer)
        return buffer

    def __dlpack_device__(self) -> tuple[int, int]:
        kind, _, index = self.device.partition(":")
        return ({"cpu": 1, "cuda": 2, "opencl": 4}[kind], int(index or 0))  # kDLCPU, kDLCUDA, kDLOpenCL

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """np.asarray(x) gives a writable copy; with copy=False, the read-only view."""
        array = self.numpy()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError(f"converting {self.dtype.name} to {np.dtype(dtype)} needs a copy")
            return array.astype(dtype)
        return array if copy is False else array.copy()

    def item(self) -> Scalar:
        """The single value of a one-element tensor as a Python scalar.

        >>> lt.asarray([[5]]).item()
        5
        """
        node = self.node
        if node.size != 1:
            raise ValueError(f"item() needs a tensor with one element; this one has shape {self.shape}")
        if node.op in VIEWS:   # (an element of realized memory: read in place, the common case)
            value = read_element(node, self.device)
            if value is not None:
                return value.item()
            values = read_view(node, self.device)
            if values is not None:
                return values.item()
        if node.op is not Op.BUFFER:
            value = host_value(node, self.device)
            if value is not None:
                return value.item()
        if node.op in VIEWS and compute_viewed(node, self.device):
            return read_view(node, self.device).item()
        return host_values(runtime(self.device).device.to_numpy(self._buffer()), self.dtype).item()

    def tolist(self) -> Any:
        """Nested Python lists of the values.

        >>> lt.arange(2).tolist()
        [0, 1]
        """
        return self.numpy().tolist()

    def __bool__(self) -> bool:
        if self.node.size != 1:
            raise ValueError(f"the truth value of a tensor with shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_float or self.node.size != 1:
            raise TypeError("only integer tensors with one element can be used as an index")
        return int(self.item())

    def __repr__(self) -> str:
        values = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        return f"Tensor({values}, dtype={self.dtype.name}, device={self.device!r})"

    def __complex__(self) -> complex:
        return complex(self.item())

    def __format__(self, spec: str) -> str:
        """f"{x:.4f}" formats a 0-d tensor's value; other tensors take no format spec (as numpy)."""
        if not self.shape:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} for a tensor of shape {self.shape}; "
                            "format its elements (or a 0-d tensor)")
        return str(self)

    # ---- copies and casts ---------------------------------------------------------------------------

    def copy(self) -> "Tensor":
        """A new tensor with the same values (never a view; gradients flow through it).

        >>> x = lt.arange(3); y = x.copy(); y[0] = 5
        >>> x.tolist()
        [0, 1, 2]
        """
        return Tensor(self.node, self.device)

    def clone(self) -> "Tensor":
        """A new tensor with the same values (PyTorch's name for `copy`).

        >>> lt.arange(2).clone().tolist()
        [0, 1]
        """
        return self.copy()

    def astype(self, dtype: Any, copy: bool = True, device: Any = None) -> "Tensor":
        """A copy converted to `dtype` (numpy's casting rules for values); `copy` and `device`
        are the Array API's (every result is a new lazy tensor, on `device` when one is given).

        >>> lt.asarray([1.7, -1.7]).astype(lt.int32).tolist()
        [1, -1]
        """
        target = to_dtype(dtype)
        if self.dtype.is_complex and not target.is_complex and not target.is_bool:
            raise TypeError(f"astype: casting {self.dtype.name} to {target.name} would drop the imaginary part; "
                            "take lt.real(x) or lt.imag(x) first (the Array API refuses this cast)")
        source = self if device is None else self.to_device(device)
        return Tensor(cast(source.node, target), source.device)

    def type_as(self, other: "Tensor") -> "Tensor":
        """This tensor converted to `other`'s dtype (PyTorch's; itself where it has that dtype).

        >>> lt.arange(3).type_as(lt.zeros(1)).dtype
        lazytensor.float32
        """
        if not isinstance(other, Tensor):
            raise TypeError(f"type_as: takes a Tensor, whose dtype to convert to, not {type(other).__name__}")
        return self if other.dtype is self.dtype else self.astype(other.dtype)

    # PyTorch's casts by name: each is x itself where it has that dtype already, as in PyTorch
    def float(self) -> "Tensor":
        """This tensor as float32 (PyTorch's `x.float()`; itself where it is float32 already).

        >>> lt.arange(2).float().tolist()
        [0.0, 1.0]
        """
        return self._as(_FLOAT32)

    def double(self) -> "Tensor":
        """This tensor as float64 (PyTorch's `x.double()`).

        >>> lt.arange(2).double().dtype
        lazytensor.float64
        """
        return self._as(_FLOAT64)

    def half(self) -> "Tensor":
        """This tensor as float16 (PyTorch's `x.half()`).

        >>> lt.ones(2).half().dtype
        lazytensor.float16
        """
        return self._as(_FLOAT16)

    def long(self) -> "Tensor":
        """This tensor as int64 (PyTorch's `x.long()`; floats are truncated toward zero).

        >>> lt.asarray([1.7, -1.7]).long().tolist()
        [1, -1]
        """
        return self._as(_INT64)

    def int(self) -> "Tensor":
        """This tensor as int32 (PyTorch's `x.int()`).

        >>> lt.asarray([2.5]).int().dtype
        lazytensor.int32
        """
        return self._as(_INT32)

    def bool(self) -> "Tensor":
        """This tensor as bool: True where nonzero (PyTorch's `x.bool()`).

        >>> lt.asarray([0, 2]).bool().tolist()
        [False, True]
        """
        return self._as(_BOOL)

    def _as(self, dtype: DType) -> "Tensor":
        return self if self.dtype is dtype else self.astype(dtype)

    def _new(self, node: Node) -> "Tensor":
        return Tensor(node, self.device)

    # ---- in-place writes and autograd's leaves ------------------------------------------------------

    def _set_node(self, node: Node) -> None:
        """An in-place update (`x += y`, `x[i] = v`, an optimizer step): x now holds `node`; so do
        its base and the other views of that base, where x is a view or has views (views.py)."""
        views.write(self, node)

    def _write_value(self, node: Node) -> None:
        """A base tensor now holds `node`, and its views see it. A leaf that requires grad may
        change only under `lt.no_grad()`; it stays a leaf (realized)."""
        if not autograd.is_leaf_node(self):
            self.node, self.requires_grad = adopt(node)
        elif autograd.is_grad_enabled():
            raise RuntimeError("a leaf tensor that requires grad cannot be changed in place while gradients "
                               "are recorded; update it inside `with lt.no_grad():`")
        else:
            if node.op is not Op.BUFFER:
                node = Tensor(node, self.device).realize().node
            self.node = autograd.register_leaf(self, node)
        if self._alias is not None:
            views.update_views(self)

    @property
    def is_leaf(self) -> bool:
        """True for a tensor that requires no grad or was made with requires_grad=True (its
        .grad is filled by backward()); False for results of operations on such tensors."""
        return not self.requires_grad or autograd.is_leaf_node(self)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Make this tensor a leaf whose gradient backward() accumulates in .grad (computes it now).

        >>> w = lt.zeros(3).requires_grad_()
        >>> w.requires_grad, w.is_leaf
        (True, True)
        """
        if not requires_grad:
            if not self.is_leaf:
                raise RuntimeError("requires_grad_(False) works on leaf tensors only; use .detach() "
                                   "for a result of operations")
            if autograd.is_leaf_node(self):
                self.node = autograd.unregister_leaf(self)
            self.requires_grad = False
            return self
        if self.requires_grad:
            return self
        if not self.dtype.is_inexact:
            raise RuntimeError(f"only floating point and complex tensors can require gradients, not {self.dtype.name}; "
                               "cast with .astype(lt.float32) first")
        self.realize()
        self.node = autograd.register_leaf(self, realized_value(self.node))
        self.requires_grad = True
        return self

    def detach(self) -> "Tensor":
        """The same values, cut from the graph: no gradient flows back through the result.

        >>> w = lt.ones(2, requires_grad=True)
        >>> (w * 3).detach().requires_grad
        False
        """
        return Tensor(make(Op.DETACH, self.node) if self.requires_grad else self.node, self.device)

    _adopt = staticmethod(adopt)


class Size(int):
    """A tensor's number of elements, as `x.size` gives it (the Array API's attribute); calling
    it is PyTorch's `x.size()` (the shape) and `x.size(dim)` (the length of one axis)."""

    def __new__(cls, elements: int, shape: tuple[int, ...]) -> "Size":
        size = super().__new__(cls, elements)
        size.shape = shape
        return size

    def __call__(self, dim: Any = None) -> Union[int, tuple[int, ...]]:
        if dim is None:
            return self.shape
        return self.shape[one_axis(dim, len(self.shape), "size")]

    def __reduce__(self):   # (pickles and copies as the plain int it is)
        return int, (int(self),)

    def __repr__(self) -> str:
        return int.__repr__(self)


def attach_methods(*groups: type) -> None:
    """Make the methods of each class in `groups` (functions and properties of its body) methods
    of Tensor: the op families define Tensor's operations beside their functions and attach them
    here, as JAX attaches its array methods (jax/_src/numpy/array_methods.py)."""
    for group in groups:
        for name, value in vars(group).items():
            if isinstance(value, FunctionType):
                value.__qualname__ = f"Tensor.{name}"   # (as tracebacks and help() name it)
                setattr(Tensor, name, value)
            elif isinstance(value, property):
                setattr(Tensor, name, value)


# ---- shapes ------------------------------------------------------------------------------------

# The most bytes a tensor may span: what a signed 64-bit offset (numpy's intp) addresses. Kernels
# index in int64, so a bigger shape would wrap around (a sum of zero elements), never fail.
MAX_BYTES = (1 << 63) - 1
_SURELY_FITS = MAX_BYTES // 8   # elements that fit in every dtype (the largest item is 8 bytes)


def shape_arg(shape: Any, what: str) -> tuple[int, ...]:
    """A shape argument (an int or a sequence of ints) as a tuple of ints; TypeError otherwise."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{what}: a shape is an int or a tuple of ints, not {shape!r}") from None
    return dims


def check_size(shape: tuple[int, ...], dtype: DType) -> None:
    """A ValueError for a shape too big to index, numpy's rule: its size times the item size
    must fit in int64, with axes of length 0 left out (numpy refuses (0, 2**62, 2**62) too).
    Every tensor is checked as it is made (Tensor.__init__), so the error comes from the call
    that made the shape: creation, broadcasting, reshape, pad, concatenate, matmul..."""
    elements = math.prod(n for n in shape if n)
    if elements * dtype.itemsize > MAX_BYTES:
        raise ValueError(f"a tensor of shape {tuple(shape)} and dtype {dtype.name} is too big: "
                         f"{elements} elements of {dtype.itemsize} bytes are more than a 64-bit index can "
                         "address (2**63 - 1 bytes; numpy says 'array is too big'); use a smaller shape")

