"""The lazy `Tensor`: every operation records a graph node; values are computed on demand.

Operands are made alike here, where the user wrote the call: numpy-2 promotion (Python scalars
are weak), numpy broadcasting, and every check that can fail (shapes, dtypes, axes), so an error
points at the line that caused it rather than at realize time.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Optional, Union

import numpy as np

from . import autograd, capture, dlpack, views
from .autograd import adopt
from .devices import STATS, canonical_device, runtime
from .ir.dtypes import (DType, bfloat16, bfloat16_values, bool_, cast_values, complex64, complex128, float16, float32,
                        float64, int8, int64, result_type, scalar_fits, to_dtype, ufunc_result, uint64)
from .ir.graph import Node
from .ir.ops import COMPARISON, COMPLEX_PARTS, ELEMENTWISE, MOVEMENT, TRANSCENDENTAL, Op
from .ir.passes import const
from .ir.rules import BINARY_UFUNC, NUMPY_REFERENCE, make
from .realize import _HELD_FROM_DEPTH, _REALIZED, bound_pending, realize, realized_value, values

_LEAVES_DATA = autograd._LEAVES.data   # (the leaves' weak dictionary's own dict: emptiness is cheap to test)

Scalar = Union[bool, int, float]
AxisError = np.exceptions.AxisError


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

    # ---- attributes ---------------------------------------------------------------------------

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
    def size(self) -> int:
        return self.node.size

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes the values take (size * itemsize), as numpy's."""
        return self.size * self.dtype.itemsize

    @property
    def T(self) -> "Tensor":
        return self.transpose()

    @property
    def mT(self) -> "Tensor":
        """The last two axes swapped (a stack of matrices, transposed)."""
        if self.ndim < 2:
            raise ValueError(f"mT needs at least 2 dimensions; this tensor has shape {self.shape}")
        return self.permute(tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2))

    # numpy's and PyTorch's attributes (not the Array API's, which has only lt.real / lt.imag):
    # library code written for them (SciPy's signal.minimum_phase) reads `x.real`.
    @property
    def real(self) -> "Tensor":
        """The real part, as lt.real(x): the values themselves for a real dtype (a new tensor).

        >>> lt.asarray([1 + 2j]).real.tolist()
        [1.0]
        """
        from .functions import real
        return real(self)

    @property
    def imag(self) -> "Tensor":
        """The imaginary part, as lt.imag(x): zeros for a real dtype.

        >>> lt.asarray([1 + 2j]).imag.tolist()
        [2.0]
        """
        from .functions import imag
        return imag(self)

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

    def to(self, device: Any) -> "Tensor":
        """This tensor on `device` (PyTorch's name for `to_device`).

        >>> lt.ones(2).to("cpu").tolist()
        [1.0, 1.0]
        """
        return self.to_device(device)

    def __array_namespace__(self, api_version: Optional[str] = None):
        """The module implementing the Python Array API for this tensor: lazytensor itself."""
        if api_version not in (None, "2025.12", "2024.12", "2023.12", "2022.12", "2021.12"):
            raise ValueError(f"lazytensor implements Array API version 2025.12 (and the earlier ones), "
                             f"not {api_version!r}")
        import lazytensor
        return lazytensor

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:   # (raised by iter() itself, as numpy does: matplotlib tests iter(x))
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ---- realization and conversion ---------------------------------------------------------

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
        if node.op in _VIEWS:
            values = _read_view(node, self.device)
            if values is None and _compute_viewed(node, self.device):
                values = _read_view(node, self.device)
            if values is not None:
                return values
        if node.size == 1 and node.op is not Op.BUFFER:   # (a value from elements of realized memory,
            values = _host_value(node, self.device)      # as item() computes it: np.asarray([x[i] * y[j], ...]))
            if values is not None:
                values.flags.writeable = False
                return values
        return _host_values(runtime(self.device).device.to_numpy(self._buffer()), self.dtype)

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

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs on tensors -- np.exp(x), np.add(a, x), and so `a + x` for an ndarray a
        -- are lazytensor's functions of the same meaning: lazy tensors. With out= arrays the
        values are computed and written there (`a += x` keeps `a` an ndarray, as numpy's). What
        has no lazytensor meaning (np.add.reduce, dtype=, where=, ...) numpy computes on the
        values, as for any array-like."""
        return numpy_api.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        """numpy's functions on tensors -- np.concatenate([x, y]), np.where(c, x, 0), np.sum(x, 0),
        np.linalg.inv(x), np.fft.rfft(x) -- are lazytensor's functions of the same meaning: lazy
        tensors. What lazytensor lacks numpy computes on the values (lazytensor/numpy_api.py)."""
        return numpy_api.array_function(func, types, args, kwargs)

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
        if node.op in _VIEWS:   # (an element of realized memory: read in place, the common case)
            value = _read_element(node, self.device)
            if value is not None:
                return value.item()
            values = _read_view(node, self.device)
            if values is not None:
                return values.item()
        if node.op is not Op.BUFFER:
            value = _host_value(node, self.device)
            if value is not None:
                return value.item()
        if node.op in _VIEWS and _compute_viewed(node, self.device):
            return _read_view(node, self.device).item()
        return _host_values(runtime(self.device).device.to_numpy(self._buffer()), self.dtype).item()

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
        if self.dtype.is_float or self.size != 1:
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
        return Tensor(_cast(source.node, target), source.device)

    def _new(self, node: Node) -> "Tensor":
        return Tensor(node, self.device)

    # ---- pickle and copy ----------------------------------------------------------------------

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
            import copy
            new.grad = copy.deepcopy(self.grad, memo)
        return new

    # ---- elementwise ------------------------------------------------------------------------

    def __add__(self, other): return binary(Op.ADD, self, other)
    def __radd__(self, other): return binary(Op.ADD, other, self)
    def __sub__(self, other): return binary(Op.SUB, self, other)
    def __rsub__(self, other): return binary(Op.SUB, other, self)
    def __mul__(self, other): return binary(Op.MUL, self, other)
    def __rmul__(self, other): return binary(Op.MUL, other, self)
    def __truediv__(self, other): return binary(Op.DIV, self, other)
    def __rtruediv__(self, other): return binary(Op.DIV, other, self)
    def __floordiv__(self, other): return _floor_divide(self, other)
    def __rfloordiv__(self, other): return _floor_divide(other, self)
    def __mod__(self, other): return binary(Op.MOD, self, other)
    def __rmod__(self, other): return binary(Op.MOD, other, self)
    def __pow__(self, other):
        if type(other) is int and other == 2 and self.dtype.is_bool:   # numpy's `b ** 2` is square(b): int8
            return self.astype(int8) * self.astype(int8)
        return binary(Op.POW, self, other)

    def __rpow__(self, other): return binary(Op.POW, other, self)
    def __and__(self, other): return binary(Op.AND, self, other)
    def __rand__(self, other): return binary(Op.AND, other, self)
    def __or__(self, other): return binary(Op.OR, self, other)
    def __ror__(self, other): return binary(Op.OR, other, self)
    def __xor__(self, other): return binary(Op.XOR, self, other)
    def __rxor__(self, other): return binary(Op.XOR, other, self)
    def __lt__(self, other): return binary(Op.CMPLT, self, other)
    def __le__(self, other): return binary(Op.CMPLE, self, other)
    def __gt__(self, other): return binary(Op.CMPLT, other, self)
    def __ge__(self, other): return binary(Op.CMPLE, other, self)
    def __eq__(self, other): return binary(Op.CMPEQ, self, other)  # type: ignore[override]
    def __ne__(self, other): return binary(Op.CMPNE, self, other)  # type: ignore[override]
    def __lshift__(self, other): return binary(Op.SHL, self, other)
    def __rlshift__(self, other): return binary(Op.SHL, other, self)
    def __rshift__(self, other): return binary(Op.SHR, self, other)
    def __rrshift__(self, other): return binary(Op.SHR, other, self)
    def __matmul__(self, other): return matmul(self, other)
    def __rmatmul__(self, other): return matmul(other, self)

    def __iadd__(self, other): return self._inplace(Op.ADD, other)
    def __isub__(self, other): return self._inplace(Op.SUB, other)
    def __imul__(self, other): return self._inplace(Op.MUL, other)
    def __itruediv__(self, other): return self._inplace(Op.DIV, other)
    def __ifloordiv__(self, other): return self._inplace_result(_floor_divide(self, other), "//=")
    def __imod__(self, other): return self._inplace(Op.MOD, other)
    def __ipow__(self, other): return self._inplace(Op.POW, other)
    def __iand__(self, other): return self._inplace(Op.AND, other)
    def __ior__(self, other): return self._inplace(Op.OR, other)
    def __ixor__(self, other): return self._inplace(Op.XOR, other)
    def __ilshift__(self, other): return self._inplace(Op.SHL, other)
    def __irshift__(self, other): return self._inplace(Op.SHR, other)
    def __imatmul__(self, other): return self._inplace_result(matmul(self, other), "@=")

    def _inplace(self, op: Op, other) -> "Tensor":
        return self._inplace_result(binary(op, self, other), op.name.lower())

    def _inplace_result(self, result: "Tensor", what: str) -> "Tensor":
        """`x op= y` keeps x's shape and dtype, like numpy (which refuses to cast float -> int)."""
        if result.shape != self.shape:
            raise ValueError(f"in-place {what}: the result has shape {result.shape}, "
                             f"which does not fit the left operand's shape {self.shape}")
        if not np.can_cast(result.dtype.np, self.dtype.np, casting="same_kind"):
            raise TypeError(f"in-place {what}: cannot cast the result from {result.dtype.name} to "
                            f"{self.dtype.name}; write x = x {what} y to get a new tensor instead")
        self._set_node(_cast(result.node, self.dtype))
        return self

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

    _adopt = staticmethod(adopt)

    # ---- autograd -----------------------------------------------------------------------------

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

    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Accumulate the gradient of this tensor with respect to every leaf that requires grad
        into the leaves' .grad. Without `gradient`, the tensor must hold a single value.

        >>> w = lt.asarray([1.0, 2.0], requires_grad=True)
        >>> (w * w).sum().backward()
        >>> w.grad.tolist()
        [2.0, 4.0]
        """
        autograd.backward(self, gradient, retain_graph)

    def __neg__(self) -> "Tensor":
        if self.dtype.is_bool:
            raise TypeError("negative (-) of a bool tensor is not supported; use ~x or lt.logical_not(x)")
        return self._new(make(Op.NEG, self.node))

    def __pos__(self) -> "Tensor":
        return self._new(self.node)   # a new tensor, as numpy's: `y = +x; y += 1` leaves x alone

    def __invert__(self) -> "Tensor":
        if self.dtype.is_float:
            raise TypeError(f"invert (~) needs a bool or integer tensor, not {self.dtype.name}")
        return self._new(make(Op.NOT, self.node))

    def __abs__(self) -> "Tensor":
        return self.abs()

    def abs(self) -> "Tensor":
        """|x| elementwise.

        >>> lt.asarray([-1, 2]).abs().tolist()
        [1, 2]
        """
        return self._new(make(Op.ABS, self.node))

    def exp(self) -> "Tensor":
        """e**x elementwise (integers compute in float64).

        >>> lt.asarray([0.0]).exp().tolist()
        [1.0]
        """
        return float_unary(Op.EXP, self)

    def log(self) -> "Tensor":
        """Natural logarithm elementwise; log(0) = -inf, log(x<0) = nan.

        >>> lt.asarray([1.0]).log().tolist()
        [0.0]
        """
        return float_unary(Op.LOG, self)

    def sqrt(self) -> "Tensor":
        """Square root elementwise; sqrt(x<0) = nan.

        >>> lt.asarray([4.0, 9.0]).sqrt().tolist()
        [2.0, 3.0]
        """
        return float_unary(Op.SQRT, self)

    def sin(self) -> "Tensor":
        """Sine elementwise (radians).

        >>> lt.asarray([0.0]).sin().tolist()
        [0.0]
        """
        return float_unary(Op.SIN, self)

    def cos(self) -> "Tensor":
        """Cosine elementwise (radians).

        >>> lt.asarray([0.0]).cos().tolist()
        [1.0]
        """
        return float_unary(Op.COS, self)

    def tanh(self) -> "Tensor":
        """Hyperbolic tangent elementwise.

        >>> lt.asarray([0.0]).tanh().tolist()
        [0.0]
        """
        return float_unary(Op.TANH, self)

    def pow(self, exponent) -> "Tensor":
        """x ** exponent elementwise, with broadcasting.

        >>> lt.asarray([1, 2, 3]).pow(2).tolist()
        [1, 4, 9]
        """
        return binary(Op.POW, self, exponent)

    def neg(self) -> "Tensor":
        """-x elementwise.

        >>> lt.asarray([1, -2]).neg().tolist()
        [-1, 2]
        """
        return -self

    def maximum(self, other) -> "Tensor":
        """Elementwise maximum; nan wins, like numpy.maximum.

        >>> lt.asarray([1, 5]).maximum(3).tolist()
        [3, 5]
        """
        return binary(Op.MAX, self, other)

    def minimum(self, other) -> "Tensor":
        """Elementwise minimum; nan wins, like numpy.minimum.

        >>> lt.asarray([1, 5]).minimum(3).tolist()
        [1, 3]
        """
        return binary(Op.MIN, self, other)

    # ---- reductions -------------------------------------------------------------------------

    def sum(self, axis=None, keepdims: bool = False, *, dtype=None, out=None) -> "Tensor":
        """Sum over `axis` (int, tuple or None for all). Signed integers and bool sum to int64,
        unsigned to uint64; float16/32 sum in float64 (the cpu adds blocks of up to 4096 terms in
        float32 vectors, 32 terms a lane, then the blocks in float64): about as accurate as
        numpy's pairwise sum, far more than a running float32 sum.

        >>> lt.asarray([[1, 2], [3, 4]]).sum(axis=0).tolist()
        [4, 6]
        >>> lt.asarray([1, 2], dtype=lt.int8).sum(dtype=lt.float32).dtype == lt.float32
        True
        """
        _no_out(out, "sum")
        if dtype is not None:   # numpy's: the sum computed in, and returned as, `dtype`
            return _in_dtype(self, dtype).sum(axis, keepdims).astype(dtype)
        x = self.node
        if x.dtype.is_inexact:
            total = _float_sum(x, axis, x.dtype)
        else:
            total = _reduce(Op.SUM, _cast(x, _accumulator(x.dtype)), axis)
        return self._new(_drop_axes(total, axis, keepdims))

    def prod(self, axis=None, keepdims: bool = False, *, dtype=None, out=None) -> "Tensor":
        """Product over `axis`; integers and bool multiply in int64 (unsigned: uint64), float16 in
        float32 rounded once at the end, as numpy's (300 * 300 * 0.001 does not overflow).

        >>> lt.asarray([2, 3, 4]).prod().item()
        24
        """
        _no_out(out, "prod")
        if dtype is not None:
            return _in_dtype(self, dtype).prod(axis, keepdims).astype(dtype)
        x = self.node
        if x.dtype is float16:
            total = _cast(_reduce(Op.PROD, _cast(x, float32), axis), float16)
        else:
            total = _reduce(Op.PROD, _cast(x, _accumulator(x.dtype)), axis)
        return self._new(_drop_axes(total, axis, keepdims))

    def max(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Maximum over `axis`; nan if any value is nan. Empty input raises ValueError.

        >>> lt.asarray([1, 5, 3]).max().item()
        5
        """
        _no_out(out, "max")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MAX, self.node, axis, "maximum"), axis, keepdims))

    def min(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Minimum over `axis`; nan if any value is nan. Empty input raises ValueError.

        >>> lt.asarray([1, 5, 3]).min().item()
        1
        """
        _no_out(out, "min")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MIN, self.node, axis, "minimum"), axis, keepdims))

    def mean(self, axis=None, keepdims: bool = False, *, dtype=None, out=None) -> "Tensor":
        """Arithmetic mean over `axis` (integers give float64; numpy's dtype= computes in it).

        >>> lt.asarray([1.0, 2.0, 6.0]).mean().item()
        3.0
        """
        _no_out(out, "mean")
        if dtype is not None:
            return _in_dtype(self, dtype).mean(axis, keepdims).astype(dtype)
        x = self if self.dtype.is_inexact else self.astype(float64)
        axes = normalize_axes(axis, self.ndim)
        count = math.prod(self.shape[a] for a in axes)
        # float16 sums and divides in float32 and rounds once, as numpy's mean (no overflow on the way)
        inner = float32 if x.dtype is float16 else x.dtype
        total = x._new(_float_sum(x.node, axes, inner))
        mean = total / count if count else total * math.nan
        return self._new(_drop_axes(_cast(mean.node, x.dtype), axis, keepdims))

    def all(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """True where every element along `axis` is nonzero (True for empty input).

        >>> lt.asarray([True, False]).all().item()
        False
        """
        _no_out(out, "all")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MIN, _cast(self.node, bool_), axis), axis, keepdims))

    def any(self, axis=None, keepdims: bool = False, *, out=None) -> "Tensor":
        """True where some element along `axis` is nonzero (False for empty input).

        >>> lt.asarray([True, False]).any().item()
        True
        """
        _no_out(out, "any")
        return self._new(_drop_axes(_reduce(Op.REDUCE_MAX, _cast(self.node, bool_), axis), axis, keepdims))

    def var(self, axis=None, keepdims: bool = False, correction: float = 0.0, ddof=None, *, dtype=None,
            out=None) -> "Tensor":
        """Variance over `axis`: mean squared deviation, divided by n - correction (numpy's ddof;
        numpy's dtype= computes in it).

        >>> lt.asarray([1.0, 2.0, 3.0, 4.0]).var().item()
        1.25
        """
        _no_out(out, "var")
        if dtype is not None:
            return _in_dtype(self, dtype).var(axis, keepdims, correction, ddof).astype(dtype)
        correction = ddof if ddof is not None else correction
        x = self if self.dtype.is_float else self.astype(float64)
        axes = normalize_axes(axis, self.ndim)
        count = math.prod(self.shape[a] for a in axes)
        mean = x.sum(axis=axes, keepdims=True)   # (numpy's var divides in x's dtype, float16 too, unlike its mean)
        mean = mean / count if count else mean * math.nan
        deviation = x - mean
        total = (deviation * deviation).sum(axis=axes, keepdims=True)
        divisor = count - correction
        result = total / divisor if divisor > 0 else total * math.nan
        return self._new(_drop_axes(result.node, axes, keepdims))

    def std(self, axis=None, keepdims: bool = False, correction: float = 0.0, ddof=None, *, dtype=None,
            out=None) -> "Tensor":
        """Standard deviation over `axis` (the square root of `var`).

        >>> lt.asarray([1.0, 3.0]).std().item()
        1.0
        """
        _no_out(out, "std")
        if dtype is not None:
            return _in_dtype(self, dtype).std(axis, keepdims, correction, ddof).astype(dtype)
        return self.var(axis, keepdims, correction, ddof).sqrt()

    def argmax(self, axis: Optional[int] = None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Index of the first maximum along `axis` (of the flattened tensor when None); a nan
        counts as the maximum, like numpy. Returns int64.

        >>> lt.asarray([1, 5, 3]).argmax().item()
        1
        """
        _no_out(out, "argmax")
        return _arg_extremum(self, axis, keepdims, "max")

    def argmin(self, axis: Optional[int] = None, keepdims: bool = False, *, out=None) -> "Tensor":
        """Index of the first minimum along `axis`; a nan counts as the minimum, like numpy.

        >>> lt.asarray([4, 1, 3]).argmin().item()
        1
        """
        _no_out(out, "argmin")
        return _arg_extremum(self, axis, keepdims, "min")

    # ---- movement (views: no copies) --------------------------------------------------------

    def reshape(self, *shape) -> "Tensor":
        """The same values in a new shape; one axis may be -1.

        >>> lt.arange(6).reshape(2, -1).shape
        (2, 3)
        """
        return movement.reshape(self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)

    def permute(self, *axes) -> "Tensor":
        """Axes reordered: result axis i is input axis axes[i].

        >>> lt.zeros((2, 3, 4)).permute(2, 0, 1).shape
        (4, 2, 3)
        """
        return movement.permute(self, axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes)

    def transpose(self, *axes) -> "Tensor":
        """Axes reversed (no argument) or reordered like `permute`.

        >>> lt.zeros((2, 3)).transpose().shape
        (3, 2)
        """
        if not axes or (len(axes) == 1 and axes[0] is None):
            return self.permute(tuple(reversed(range(self.ndim))))
        return self.permute(*axes)

    def expand(self, *shape) -> "Tensor":
        """Broadcast to `shape` without copying; -1 keeps an axis's size (as in PyTorch).

        >>> lt.zeros((1, 3)).expand(4, -1).shape
        (4, 3)
        """
        dims = tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)
        lead = len(dims) - self.ndim
        dims = tuple(self.shape[a - lead] if n == -1 and a >= lead else n for a, n in enumerate(dims))
        return movement.broadcast_to(self, dims)

    def broadcast_to(self, shape) -> "Tensor":
        """This tensor repeated (without copying) to `shape`, by numpy's broadcasting rule.

        >>> lt.asarray([1, 2]).broadcast_to((2, 2)).tolist()
        [[1, 2], [1, 2]]
        """
        return movement.broadcast_to(self, shape)

    def squeeze(self, axis=None) -> "Tensor":
        """Remove axes of size 1 (all of them, or those named).

        >>> lt.zeros((1, 3, 1)).squeeze().shape
        (3,)
        """
        return movement.squeeze(self, axis)

    def unsqueeze(self, axis: int) -> "Tensor":
        """A new axis of size 1 at position `axis` (like lt.expand_dims).

        >>> lt.zeros(3).unsqueeze(0).shape
        (1, 3)
        """
        return movement.expand_dims(self, axis)

    def flip(self, axis=None) -> "Tensor":
        """Reverse the order of elements along `axis` (all axes when None).

        >>> lt.arange(3).flip().tolist()
        [2, 1, 0]
        """
        return movement.flip(self, axis)

    def pad(self, pad_width, value: Scalar = 0) -> "Tensor":
        """Pad with a constant, numpy.pad style (see lt.pad).

        >>> lt.asarray([1, 2]).pad(1).tolist()
        [0, 1, 2, 0]
        """
        return movement.pad(self, pad_width, value)

    def ravel(self) -> "Tensor":
        """The values as a 1-D tensor: a view where numpy's ravel is one, else a copy.

        >>> lt.zeros((2, 3)).ravel().shape
        (6,)
        """
        return self.reshape(-1)

    def clip(self, min=None, max=None) -> "Tensor":
        """Values limited to [min, max] (see lt.clip).

        >>> lt.asarray([1, 5, 9]).clip(2, 6).tolist()
        [2, 5, 6]
        """
        from .functions import clip
        return clip(self, min, max)

    def flatten(self) -> "Tensor":
        """The values as a 1-D tensor of their own (a copy, as numpy's; `ravel` is the view).

        >>> lt.zeros((2, 3)).flatten().shape
        (6,)
        """
        return views.fresh(self.reshape(-1))

    def __getitem__(self, index) -> "Tensor":
        kind = type(index)
        if kind is int or kind is tuple:   # (reading elements is common: cheap, past the general rules)
            found = _elements(self, (index,) if kind is int else index)
            if found is not None:
                return found
        items = _integer_items(index) if kind is Tensor or kind is tuple else None
        if items is not None:   # 0-d integer tensors index as their ints (numpy's result: a copy)
            return views.fresh(self[items])
        return movement.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        """x[index] = value: lazy, like every other op (numpy's last-write-wins for repeats)."""
        movement.setitem(self, index, value)


def _elements(x: Tensor, items: tuple) -> Optional[Tensor]:
    """x[i, j, ...] with Python ints (fewer than x.ndim: the rest are whole axes); None where an
    item is anything else (the general rules decide)."""
    shape = x.node.shape
    slices = []
    for i, size in zip(items, shape):
        if type(i) is not int:
            return None
        if i < 0:
            i += size
        if not 0 <= i < size:
            axis = len(slices)
            raise IndexError(f"index {items[axis]} is out of bounds for axis {axis} with size {size}")
        slices.append((i, i + 1, 1))
    if len(items) != len(slices):   # (more items than axes, or a non-int among the extra ones)
        if any(type(i) is not int for i in items):
            return None
        raise IndexError(f"too many indices for tensor: tensor is {x.ndim}-dimensional, but {len(items)} were indexed")
    if not items:   # x[()]: of a 0-d tensor its value (numpy's scalar), else a view of all of it
        return x._new(x.node) if not x.ndim else views.view(x, ())
    rest = shape[len(items):]
    if rest:
        return views.view(x, ((Op.SHRINK, tuple(slices) + tuple([(0, n, 1) for n in rest])), (Op.RESHAPE, rest)))
    # one element: a value of its own, as numpy's scalar (its nodes made directly: shapes known)
    shrunk = Node(Op.SHRINK, x.node.dtype, (1,) * len(items), (x.node,), tuple(slices))
    return Tensor(Node(Op.RESHAPE, shrunk.dtype, (), (shrunk,), ()), x.device)


# ---- reading views of realized memory -----------------------------------------------------------

_VIEWS = frozenset({Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.SHRINK, Op.FLIP})


def _read_element(node: Node, device: str) -> Optional[np.generic]:
    """The value of an element of realized memory as `_elements` makes it (x[i, j, k] of a
    realized x: a RESHAPE to () of a one-element SHRINK of a buffer), read from that memory: the
    common read, on its own short path. None for any other node (_read_view reads those)."""
    if node.op is not Op.RESHAPE or node.shape or node.src[0].op is not Op.SHRINK:
        return None
    shrink = node.src[0]
    base = shrink.src[0]
    if base.op is not Op.BUFFER:
        found = _REALIZED.get(base) if _REALIZED.data else None
        if found is None and _READ_VALUES.data:
            found = _read_value(base, device)
        base = found
        if base is None:
            return None
    offset = 0
    for (start, _, _), n in zip(shrink.arg, base.shape):   # (each range holds one element: its start)
        offset = offset * n + start
    if capture.RECORDING is not None:
        capture.reading(base.arg)
    return _host_values(runtime(device).device.read(base.arg, offset, 1), node.dtype)[0]


def _read_view(node: Node, device: str) -> Optional[np.ndarray]:
    """The values of `node`, movement ops over realized memory (an element, a row, a transpose
    of a realized tensor), read from that memory: no kernel. numpy applies the same movement ops
    to an array of the memory's layout; where the memory is not the host's, that array owns no
    memory (none of the ops reads an element) and only the range the result spans is copied
    over (a few bytes for an element). None where the ops are not one strided view of the memory
    (a reshape of a transpose)."""
    path = []
    while node.op is not Op.BUFFER:
        if node.op not in _VIEWS:
            return None
        path.append(node)
        node = node.src[0]
        if _REALIZED.data:
            node = _REALIZED.get(node, node)
        if _READ_VALUES.data:
            kept = _read_value(node, device)
            node = node if kept is None else kept
    buffer, dtype = node.arg, node.dtype.storage
    device_ = runtime(device).device
    host = getattr(device_, "host_memory", False)
    view = layout = device_.to_numpy(buffer) if host else views.layout(node.shape, dtype.itemsize)
    try:
        for move in reversed(path):
            view = views.NUMPY_MOVE[move.op](view, move.arg)
    except ValueError:   # (a reshape that needs a copy)
        return None
    if capture.RECORDING is not None:
        capture.reading(buffer)
    if host:
        return _host_values(view, node.dtype)
    if view.size == 0:
        return np.empty(view.shape, node.dtype.np)
    itemsize = dtype.itemsize
    offset = (view.__array_interface__["data"][0] - layout.__array_interface__["data"][0]) // itemsize
    lo = offset + sum([(n - 1) * st for n, st in zip(view.shape, view.strides) if st < 0]) // itemsize
    hi = offset + sum([(n - 1) * st for n, st in zip(view.shape, view.strides) if st > 0]) // itemsize
    memory = device_.read(buffer, lo, hi + 1 - lo)
    values = np.ndarray(view.shape, dtype, memory, (offset - lo) * itemsize, view.strides)
    values.flags.writeable = False
    return _host_values(values, node.dtype)


def _host_values(stored: np.ndarray, dtype: DType) -> np.ndarray:
    """The values of memory read as `dtype.storage`: that array itself, but bfloat16's bit
    patterns as float32 values (a read-only copy)."""
    if dtype is not bfloat16:
        return stored
    values = bfloat16_values(stored)
    values.flags.writeable = False
    return values


# Reading elements of a pending tensor (x = a // b; x[0], x[1], ... as numpy's users do): each
# read alone would compute its element by a kernel of its own, compiled for that element (the
# index is part of the kernel), one compile per element. So the second read of a pending value
# computes all of it, once; that and every later read take their elements from its memory. (The
# first read stays one element's kernel: reading one element of a big pending result must not
# compute all of it.) Values of nodes never change, so a value kept for a node is always right;
# it is kept per device (a node with no buffer under it, lt.zeros(3) * 2, is the same node on
# every device).
_READ_ONCE: "weakref.WeakKeyDictionary[Node, set[str]]" = weakref.WeakKeyDictionary()
_READ_VALUES: "weakref.WeakKeyDictionary[Node, dict[str, Node]]" = weakref.WeakKeyDictionary()


def _read_value(node: Node, device: str) -> Optional[Node]:
    """The value (a BUFFER node) kept on `device` for pending `node` by _compute_viewed, or None."""
    kept = _READ_VALUES.get(node)
    return kept.get(device) if kept else None


def _compute_viewed(node: Node, device: str) -> bool:
    """For a view (movement ops) of a pending value being read: compute that value where it was
    read before (see above). Whether it was computed now."""
    while node.op in _VIEWS:
        node = node.src[0]
    if node.op is Op.BUFFER or _read_value(node, device) is not None or (_REALIZED.data and node in _REALIZED):
        return False   # (memory already, or a view _read_view cannot take: a copy of a reshape)
    seen = _READ_ONCE.setdefault(node, set())
    if device not in seen:
        seen.add(device)
        return False
    _READ_VALUES.setdefault(node, {})[device] = values(Tensor(node, device))[0]
    return True


# One value computed from a few elements of realized memory (x[i] == y[j], bool(x[i] < 0),
# lt.all(x[2:5] == 7)), as numpy computes with its scalars: on the host, by the reference
# interpreter's table (the one constant folding uses). Compiled, each would be a kernel of its
# own, since the elements' positions and the constants are part of a kernel: a loop comparing
# elements would compile one per step. Only ops numpy computes exactly as the kernels do
# (arithmetic, comparisons, casts, selection, movement; integer reductions and max/min): no
# transcendental functions, whose device libraries may round otherwise, no float sums, whose
# order differs, and nothing integer division or shifts leave undefined. Complex values: the ops
# whose lowering (ir/complex.py) is numpy's formula, part by part.
_HOST_OPS = ((ELEMENTWISE | MOVEMENT | {Op.REDUCE_MAX, Op.REDUCE_MIN, Op.SUM, Op.PROD})
             - TRANSCENDENTAL - COMPLEX_PARTS - {Op.FLOORDIV, Op.MOD, Op.SHL, Op.SHR})
_HOST_COMPLEX_OPS = MOVEMENT | COMPLEX_PARTS | {Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.CAST, Op.WHERE, Op.CMPEQ, Op.CMPNE}
_REDUCTIONS = frozenset({Op.REDUCE_MAX, Op.REDUCE_MIN, Op.SUM, Op.PROD})
_HOST_MAX_NODES = 64        # a few operations on a few elements: more is a kernel's work
_HOST_MAX_ELEMENTS = 256


def _host_value(node: Node, device: str) -> Optional[np.ndarray]:
    """The value of small pending `node` computed on the host from realized memory (see above),
    or None where it is no such graph (then it is realized as usual)."""
    if capture.RECORDING is not None:   # (lt.jit records the kernels a call runs)
        return None
    known: dict[Node, np.ndarray] = {}
    inner: list[Node] = []
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if len(seen) > _HOST_MAX_NODES or n.size > _HOST_MAX_ELEMENTS:
            return None
        if n.op is Op.CONST:
            known[n] = np.full(n.shape, n.arg, n.dtype.np)
            continue
        value = _realized(n)
        if value is not None:
            known[n] = _host_values(runtime(device).device.read(value.arg, 0, n.size), n.dtype).reshape(n.shape)
            continue
        if n.op in _VIEWS and n is not node:   # (an element or a slice of memory: read just that;
            read = _read_view(n, device)        # item() has tried the node itself)
            if read is None and _compute_viewed(n, device):
                read = _read_view(n, device)
            if read is not None:
                known[n] = read
                continue
        complex_ = n.dtype.is_complex or any(s.dtype.is_complex for s in n.src)
        if n.op not in (_HOST_COMPLEX_OPS if complex_ else _HOST_OPS) or (n.op in _REDUCTIONS and not n.src[0].size):
            return None   # (numpy's max of nothing is an error where the kernel's all() is True)
        if n.dtype.is_inexact and (n.op is Op.SUM or n.op is Op.PROD):
            return None
        inner.append(n)
        stack.extend(n.src)
    for n in sorted(inner, key=lambda n: n.depth):   # (sources are shallower: computed first)
        with np.errstate(all="ignore"):
            result = NUMPY_REFERENCE[n.op]([known[s] for s in n.src], n.arg, n.dtype)
        known[n] = cast_values(result, n.dtype).reshape(n.shape)
    return known[node]


def _integer_items(index: Any) -> Optional[tuple]:
    """`index` with its 0-d integer tensors replaced by their values, where those are the only
    tensors in it and their values can be read without a kernel (elements of realized memory, or
    a few host operations on them: x[k[i], k[j]] in a loop would otherwise gather with a kernel
    compiled per step); else None."""
    items = index if type(index) is tuple else (index,)
    if capture.RECORDING is not None or not any(type(i) is Tensor for i in items):
        return None
    converted = []
    for item in items:
        if type(item) is Tensor:
            if item.node.size != 1 or item.node.shape or not item.dtype.is_integer:
                return None
            node = item.node
            found = _realized(node)
            value = (runtime(item.device).device.read(found.arg, 0, 1) if found is not None else
                     _read_element(node, item.device) if node.op in _VIEWS else None)
            if value is None:
                value = _host_value(node, item.device)
            if value is None:
                return None
            item = int(np.asarray(value).reshape(()))
        elif isinstance(item, (list, np.ndarray)) or hasattr(item, "__array__"):
            return None   # (other arrays: numpy's advanced indexing, as before)
        converted.append(item)
    return tuple(converted)


def _realized(node: Node) -> Optional[Node]:
    """The BUFFER node holding `node`'s value, where it has one."""
    if node.op is Op.BUFFER:
        return node
    return _REALIZED.get(node) if _REALIZED.data else None


# ---- shapes ------------------------------------------------------------------------------------

# The most bytes a tensor may span: what a signed 64-bit offset (numpy's intp) addresses. Kernels
# index in int64, so a bigger shape would wrap around (a sum of zero elements), never fail.
MAX_BYTES = (1 << 63) - 1
_SURELY_FITS = MAX_BYTES // 8   # elements that fit in every dtype (the largest item is 8 bytes)


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


# ---- helpers that build nodes ------------------------------------------------------------------

def _cast(node: Node, dtype: DType) -> Node:
    return node if node.dtype is dtype else make(Op.CAST, node, arg=dtype)


def _in_dtype(x: Tensor, dtype: Any) -> Tensor:
    """x cast to a reduction's `dtype=` (numpy casts as it accumulates: any cast is allowed)."""
    return x.astype(to_dtype(dtype))


def float_unary(op: Op, x: Tensor) -> Tensor:
    # numpy's rule: integers and bool compute in the smallest float that holds them exactly
    return x._new(make(op, _cast(x.node, ufunc_result(np.exp, x.dtype))))


def _float_sum(x: Node, axis, dtype: DType) -> Node:
    """The sum of a float (or complex) node over `axis` (kept, size 1), rounded once to `dtype`:
    float16/32 add in float64 (the cpu: float32 vectors over blocks, the blocks in float64),
    complex64 in complex128, at least as accurate as numpy's pairwise float32 sums."""
    wide = _WIDER_SUM.get(x.dtype)
    if wide is not None:
        return _cast(_reduce(Op.SUM, _cast(x, wide), axis), dtype)
    return _cast(_reduce(Op.SUM, x, axis), dtype)


_WIDER_SUM = {float16: float64, float32: float64, complex64: complex128}


def _accumulator(dtype: DType) -> DType:
    """What sum and prod accumulate in (numpy's): int64 for bool and signed, uint64 for unsigned."""
    return dtype if dtype.is_inexact else uint64 if dtype.is_unsigned else int64


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcasting rule: align trailing axes; sizes must match or be 1.

    >>> lt.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError("operands could not be broadcast together with shapes "
                             + " ".join(str(tuple(s)) for s in shapes))
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcast_node(node: Node, shape: tuple[int, ...]) -> Node:
    if node.shape == shape:
        return node
    if node.op is Op.CONST:
        return Node(Op.CONST, node.dtype, shape, (), node.arg)
    padded = (1,) * (len(shape) - len(node.shape)) + node.shape
    if padded != node.shape:
        node = make(Op.RESHAPE, node, arg=padded)
    return make(Op.EXPAND, node, arg=tuple(shape)) if padded != shape else node


def as_tensor(x: Any, like: Any = None) -> Tensor:
    """`x` itself when it is a Tensor; else a new tensor of it, on the device of `like` (another
    operand, when that is a Tensor) or the default device."""
    if isinstance(x, Tensor):
        return x
    from .creation import asarray
    return asarray(x, device=like.device if isinstance(like, Tensor) else None)


def same_device(*tensors: Tensor, name: str) -> str:
    """The device the tensors share; a ValueError naming both devices where they differ (no
    silent copies)."""
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device != device:
            raise ValueError(f"{name}: operands are on different devices ({device} and {t.device}); "
                             "move one with .to(device)")
    return device


def operands(*values: Any, name: str, device: Optional[str] = None,
             ufunc: Optional[np.ufunc] = None) -> tuple[list[Node], str]:
    """Graph nodes for `values` (tensors, Python scalars, array-likes) with one dtype (numpy-2
    promotion, scalars weak) and one broadcast shape, and the device they share. With `ufunc`,
    the dtype is the one that numpy's ufunc computes in (int8 / int8 divides in float64)."""
    if ufunc is None or ufunc in _FLOAT_PRESERVING:
        fast = _same_float_operands(*values)
        if fast is not None:   # (the tensors' device wins over `device`, as below)
            return fast
    tensors = [v for v in values if isinstance(v, Tensor)]
    device = same_device(*tensors, name=name) if tensors else canonical_device(device)
    items: list[Any] = []
    for v in values:
        if isinstance(v, (Tensor, bool, int, float, complex)):
            items.append(v)
        else:   # an array-like: its dtype is numpy's (a list of Python floats is float64 here,
            # as in numpy: x64 + [0.001] must not round 0.001 through the default float32)
            from .creation import asarray
            items.append(asarray(v if isinstance(v, np.ndarray) or hasattr(v, "__dlpack__") else np.asarray(v),
                                 device=device))
    dtype = result_type(*[v.dtype if isinstance(v, Tensor) else v for v in items])
    if ufunc is not None:
        try:   # (numpy picks the loop from the operands' own dtypes: hypot(uint8, int8) is float16,
            # though uint8 and int8 promote to int16, whose loop is float32's)
            dtype = ufunc_result(ufunc, *[v.dtype if isinstance(v, Tensor) else dtype for v in items])
        except TypeError:
            raise TypeError(f"{ufunc.__name__} is not defined for {dtype.name} operands "
                            "(numpy refuses it too); cast them with .astype() first") from None
    for v in items:
        if not isinstance(v, Tensor) and not scalar_fits(v, dtype):
            raise OverflowError(f"{name}: Python integer {v} out of bounds for {dtype.name}")
    shape = broadcast_shapes(*[v.shape for v in items if isinstance(v, Tensor)])
    nodes = [broadcast_node(_cast(v.node, dtype), shape) if isinstance(v, Tensor) else const(v, dtype, shape)
             for v in items]
    return nodes, device


# The numpy ufunc of each arithmetic op (the rule tables'): numpy decides the result dtype (int /
# int is float64, bool // bool is int8) or refuses (bool - bool, float & float), and we follow it.
# Not comparisons: numpy's loop for them gives bool, their result's dtype, not their operands'.
_UFUNC = {op: ufunc for op, ufunc in BINARY_UFUNC.items() if op not in COMPARISON}


_NAMES = {op: op.name.lower() for op in Op}   # for messages (Enum's .name is a slow property)


def binary(op: Op, a: Any, b: Any) -> Tensor:
    """`a op b` with numpy's promotion and broadcasting."""
    if op in _SAME_DTYPE_OPS:   # (float32/64 operands of one dtype and shape, or a Python scalar:
        node = _same_float_node(op, a, b)   # the result is theirs, no rule to look up)
        if node is not None:
            return Tensor(node, a.device if type(a) is Tensor else b.device)
    if op in COMPARISON:
        a, b = _comparable(a, b)
        if _unsigned_against_signed(a, b):
            return _compare_exactly(op, a, b)
    (x, y), device = operands(a, b, name=_NAMES[op], ufunc=_UFUNC.get(op))
    if op is Op.ADD and x.dtype.is_bool:
        op = Op.OR   # numpy: True + True is True
    elif op is Op.MUL and x.dtype.is_bool:
        op = Op.AND
    elif op is Op.POW and x.dtype.is_integer and y.op is Op.CONST and y.arg < 0 and math.prod(x.shape):
        raise ValueError("integers to negative integer powers are not allowed; use a float base")
    return Tensor(make(op, x, y), device)   # (x and y share the broadcast shape: an empty one computes nothing)


def _unsigned_against_signed(a: Any, b: Any) -> bool:
    """uint64 against a signed integer tensor: they promote to float64, which cannot hold both
    exactly (2**63 + 1 and 2**63 - 1 compare equal there)."""
    return (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype.is_integer and b.dtype.is_integer
            and uint64 in (a.dtype, b.dtype) and not (a.dtype.is_unsigned and b.dtype.is_unsigned))


def _compare_exactly(op: Op, a: "Tensor", b: "Tensor") -> "Tensor":
    """`a op b` for uint64 against a signed integer, exactly, as numpy 2 compares them: a
    negative signed value is below every unsigned one; the others compare as uint64."""
    (x, y), device = operands(a.astype(uint64), b.astype(uint64), name=_NAMES[op])
    same = Tensor(make(op, x, y), device)
    if op in (Op.CMPEQ, Op.CMPNE):
        negative = (b < 0) if a.dtype.is_unsigned else (a < 0)
        return where(negative, op is Op.CMPNE, same)
    # CMPLT / CMPLE: a negative a is below any unsigned b; an unsigned a is above a negative b
    if not a.dtype.is_unsigned:
        return where(a < 0, True, same)
    return where(b < 0, False, same)


def _same_float_operands(*values: Any) -> Optional[tuple[list[Node], str]]:
    """The nodes of the operands and their device, where nothing needs promoting and
    broadcasting is trivial: float32/64 tensors of one dtype, shape (or 0-d: a learning rate) and
    device, and Python floats (or small ints, exact in float32). None otherwise: the general path
    decides."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    if not tensors:
        return None
    first = tensors[0]
    dtype, shape, device = first.dtype, first.node.shape, first.device
    if not shape:   # a 0-d first operand (lr * grad) takes the other's shape
        for t in tensors:
            shape = shape or t.node.shape
    if dtype.name not in ("float32", "float64"):
        return None
    for t in tensors:
        if t.dtype is not dtype or (t.node.shape != shape and t.node.shape) or t.device != device:
            return None
    nodes = []
    for v in values:
        if isinstance(v, Tensor):
            nodes.append(v.node if v.node.shape == shape else broadcast_node(v.node, shape))   # (a 0-d one)
        elif type(v) is float or (type(v) is int and -(1 << 24) < v < (1 << 24)):
            nodes.append(const(v, dtype, shape))
        else:
            return None
    return nodes, device


def _same_float_node(op: Op, a: Any, b: Any) -> Optional[Node]:
    """`a op b`'s node where it needs no promotion nor broadcasting: float32/64 tensors of one
    dtype, shape and device, or one such tensor and a Python float (or an int exact in float32).
    None otherwise: the general path decides. (_same_float_operands' rule for two operands,
    without a 0-d one, written out: every small op of eager code comes here, and the general
    function's lists and loops cost ~0.5 us an op.)"""
    if type(a) is Tensor:
        x = a.node
        dtype = x.dtype
        if dtype is not float32 and dtype is not float64:
            return None
        if type(b) is Tensor:
            y = b.node
            if y.dtype is dtype and y.shape == x.shape and b.device == a.device:
                return Node(op, dtype, x.shape, (x, y))
            return None
        kind = type(b)
        if kind is float or (kind is int and -(1 << 24) < b < (1 << 24)):
            return Node(op, dtype, x.shape, (x, const(b, dtype, x.shape)))
        return None
    if type(b) is Tensor:
        y = b.node
        dtype = y.dtype
        kind = type(a)
        if (dtype is float32 or dtype is float64) and (kind is float or (kind is int and -(1 << 24) < a < (1 << 24))):
            return Node(op, dtype, y.shape, (const(a, dtype, y.shape), y))
    return None


# ops whose result has their float operands' dtype and shape
_SAME_DTYPE_OPS = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAX, Op.MIN, Op.POW})

# numpy ufuncs whose result keeps a float32/64 operand dtype (comparisons pass no ufunc)
_FLOAT_PRESERVING = frozenset({np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum,
                               np.arctan2, np.hypot, np.copysign, np.remainder, np.floor_divide})


def _comparable(a: Any, b: Any) -> tuple[Any, Any]:
    """numpy 2 compares an integer tensor with any Python int exactly: where the int does not
    fit the tensor's dtype, compare in int64 (exact for every dtype but uint64), or else against
    +-inf in float64 (the int is then beyond every value the tensor can hold)."""
    for scalar, other in ((a, b), (b, a)):
        if (isinstance(scalar, int) and not isinstance(scalar, bool) and isinstance(other, Tensor)
                and other.dtype.is_integer and not scalar_fits(scalar, other.dtype)):
            if scalar_fits(scalar, int64) and other.dtype is not uint64:
                widened, value = other.astype(int64), scalar
            else:
                widened, value = other.astype(float64), math.copysign(math.inf, scalar)
            return (value, widened) if scalar is a else (widened, value)
    return a, b


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """Axes as sorted non-negative ints; AxisError (a ValueError and IndexError) when out of range."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    result = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"axis must be an int or a tuple of ints, not {a!r}")
        if not -ndim <= a < ndim:
            raise AxisError(f"axis {a} is out of bounds for a tensor of dimension {ndim}")
        result.append(int(a) % ndim if ndim else 0)
    if len(set(result)) != len(result):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(sorted(result))


def _reduce(op: Op, x: Node, axis, name: str = "") -> Node:
    """The reduction with the reduced axes kept (size 1); `name` marks one without identity."""
    axes = normalize_axes(axis, len(x.shape))
    if name and any(x.shape[a] == 0 for a in axes):  # numpy's rule, even for an empty result
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                         f"(shape {x.shape}, axis {axis})")
    return make(op, x, arg=axes)


def _drop_axes(reduced: Node, axis, keepdims: bool) -> Node:
    """Remove the reduced axes last, after any epilogue, so the reduction and its epilogue stay one
    kernel and the reshape is a free view at the end."""
    if keepdims:
        return reduced
    axes = normalize_axes(axis, len(reduced.shape))
    return make(Op.RESHAPE, reduced, arg=tuple(n for a, n in enumerate(reduced.shape) if a not in axes))


def _arg_extremum(x: Tensor, axis: Optional[int], keepdims: bool, kind: str) -> Tensor:
    if axis is None:
        flat = x.reshape(-1)
        result = _arg_extremum(flat, 0, False, kind)
        return result.reshape((1,) * x.ndim) if keepdims else result
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"arg{kind}: axis must be one int or None, not {axis!r}")
    (axis,) = normalize_axes(axis, x.ndim)
    n = x.shape[axis]
    if n == 0:
        raise ValueError(f"attempt to get arg{kind} of an empty sequence (shape {x.shape}, axis {axis})")
    from .creation import arange
    best = x.max(axis, keepdims=True) if kind == "max" else x.min(axis, keepdims=True)
    hit = x == best
    if x.dtype.is_float:
        hit = hit | (x != x)   # the first nan wins, as in numpy
    index_shape = tuple(n if a == axis else 1 for a in range(x.ndim))
    index = arange(n, device=x.device).reshape(index_shape)
    return where(hit, index, n).min(axis, keepdims=keepdims)


def where(condition: Any, x: Any, y: Any) -> Tensor:
    """x where condition is true, else y (broadcast together; x and y promoted like numpy).

    >>> lt.where(lt.asarray([True, False]), 1, 2).tolist()
    [1, 2]
    """
    device = next((v.device for v in (condition, x, y) if isinstance(v, Tensor)), None)
    if isinstance(condition, (bool, np.bool_)):  # a constant: where(True, a, b) folds to a
        condition = Tensor(const(bool(condition), bool_, ()), canonical_device(device))
    elif not isinstance(condition, Tensor):
        from .creation import asarray
        condition = asarray(condition, device=device)
    (a, b), device = operands(x, y, name="where", device=condition.device)
    if device != condition.device:
        raise ValueError(f"where: condition is on {condition.device} but the values on {device}")
    shape = broadcast_shapes(condition.shape, a.shape)
    cond = broadcast_node(_cast(condition.node, bool_), shape)
    return Tensor(make(Op.WHERE, cond, broadcast_node(a, shape), broadcast_node(b, shape)), device)


def matmul(a: Any, b: Any) -> Tensor:
    from .linalg import matmul as _matmul
    return _matmul(a, b)


def _floor_divide(a: Any, b: Any) -> Tensor:
    from .functions import floor_divide   # (numpy's, but the Array API's where one operand is infinite)
    return floor_divide(a, b)


def _no_out(out: Any, name: str) -> None:
    """numpy's functions pass out=None on to the methods (np.sum(x) calls x.sum(..., out=None))."""
    if out is not None:
        raise TypeError(f"{name}: out= is not supported (a lazy result is a new tensor); assign the result instead")


def _rebuild(cls: type, values: np.ndarray, device: str, requires_grad: bool, dtype: Optional[DType] = None) -> Tensor:
    """A pickled tensor back: a new leaf of `values` on `device` (a subclass such as
    nn.Parameter is made from the tensor and requires_grad), of `dtype` (the values' own where
    none is given: bfloat16 values come as float32)."""
    from .creation import asarray
    tensor = asarray(values, dtype=dtype, device=device)
    if cls is not Tensor:
        return cls(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_() if requires_grad else tensor


from . import movement, numpy_api  # noqa: E402  (last: they build on Tensor; methods look them up when called)
