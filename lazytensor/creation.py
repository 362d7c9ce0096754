"""Creating tensors: from data (copied onto the device), constants (no memory until used), random."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional

import numpy as np

from . import capture, dlpack
from .devices import canonical_device, runtime
from .ir.dtypes import (DType, bfloat16, bfloat16_bits, bool_, default_complex, default_float, default_int, scalar_fits,
                        to_dtype)
from .ir.graph import Node
from .ir.ops import Op
from .ir.passes import const
from .tensor import Tensor, check_size, shape_arg, spelled_once

_rng = np.random.default_rng()


def _grad_option(make: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Adds PyTorch's `requires_grad=False` keyword to a creation function: with True the result is
    a leaf whose gradient backward() accumulates in `.grad`."""
    @functools.wraps(make)
    def create(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        result = make(*args, **kwargs)
        return result.requires_grad_() if requires_grad else result
    signature = inspect.signature(make)
    option = inspect.Parameter("requires_grad", inspect.Parameter.KEYWORD_ONLY, default=False)
    create.__signature__ = signature.replace(parameters=[*signature.parameters.values(), option])  # type: ignore
    return create


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)) and len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    dims = shape_arg(shape, "shape")
    if any(n < 0 for n in dims):
        raise ValueError(f"negative dimensions are not allowed (shape {dims})")
    return dims


def _is_size(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _shape_dtype_device(name: str, shape: Any, rest: tuple, dtype: Any, device: Any) -> tuple[tuple[int, ...], Any, Any]:
    """The shape, dtype and device of a creation call, in every spelling the libraries use: the
    sizes one by one, as PyTorch and `lt.rand` take them (`lt.ones(2, 3)`), or one shape (an int
    or a sequence), as numpy and the Array API take it (`lt.ones((2, 3))`), which numpy may
    follow with the dtype and the device positionally (`lt.ones((2, 3), lt.int32)`)."""
    rest = list(rest)
    if _is_size(shape):
        sizes = [shape]
        while rest and _is_size(rest[0]):
            sizes.append(rest.pop(0))
        shape = tuple(sizes)
    elif rest and _is_size(rest[0]):
        raise TypeError(f"{name}: a shape is sizes one by one ({name}(2, 3)) or one sequence ({name}((2, 3))), "
                        f"not a sequence followed by sizes ({name}({shape!r}, {', '.join(map(repr, rest))}))")
    for option, given in (("dtype", dtype), ("device", device)):
        if rest and given is not None:
            raise TypeError(f"{name}: {option} given both positionally ({rest[0]!r}) and by keyword ({given!r})")
        if rest:
            if option == "dtype":
                dtype = rest.pop(0)
            else:
                device = rest.pop(0)
    if rest:
        raise TypeError(f"{name}: takes a shape, then at most a dtype and a device; got {len(rest)} more "
                        f"arguments ({', '.join(map(repr, rest))})")
    return _shape(shape), dtype, device


def _from_numpy(array: np.ndarray, dtype: DType, device: str) -> Tensor:
    array = np.asarray(array, dtype=dtype.np, order="C")  # (ascontiguousarray makes 0-d 1-d)
    if dtype is bfloat16:   # (its memory: the rounded values' bit patterns)
        array = bfloat16_bits(array).reshape(array.shape)
    return _from_memory(array, dtype, device)


def _from_memory(array: np.ndarray, dtype: DType, device: str) -> Tensor:
    """A tensor of `dtype` holding a copy of memory that numpy reads as `dtype.storage`."""
    buffer = runtime(device).device.from_numpy(array).seen_as(dtype)
    return Tensor(Node(Op.BUFFER, dtype, array.shape, (), buffer), device)


@_grad_option
def asarray(obj: Any, dtype: Any = None, device: Any = None, *, copy: Optional[bool] = None) -> Tensor:
    """A tensor of `obj` (numpy array, nested lists, scalar or Tensor). Python and numpy data is
    copied; a Tensor already of `dtype` and on `device` is returned itself, as numpy's asarray
    returns its array (write to `lt.asarray(x)` and x changes), unless `copy=True`. `copy=False`
    never copies: it raises where a copy is needed (other data, dtype or device), as the Array
    API says.

    Python floats become float32 (the default float), Python complex numbers complex64 and Python
    ints int64; numpy arrays keep their dtype.

    >>> lt.asarray([1.5, 2]).dtype == lt.float32
    True
    """
    if isinstance(obj, Tensor):
        want_dtype = obj.dtype if dtype is None else to_dtype(dtype)
        want_device = obj.device if device is None else canonical_device(device)
        kept = want_dtype == obj.dtype and want_device == obj.device
        if copy is False and not kept:
            raise ValueError(f"asarray: copy=False, but a {obj.dtype.name} tensor on {obj.device} must be copied "
                             f"to become {want_dtype.name} on {want_device}")
        if kept and not copy:
            return obj
        moved = obj.to_device(want_device)   # (a copy where the device is another)
        return moved if moved is not obj and want_dtype == obj.dtype else moved.astype(want_dtype)
    if copy is False:
        raise ValueError(f"asarray: copy=False, but {type(obj).__name__} data is always copied into a tensor "
                         "(leave copy out, or pass a Tensor)")
    device = canonical_device(device)
    from_python = not isinstance(obj, (np.ndarray, np.generic))
    if from_python and hasattr(obj, "__dlpack__"):   # another library's array (PyTorch, JAX): copied
        try:                                          # through DLPack, which carries bfloat16 too
            copied = from_dlpack(obj, device=device, copy=True)
        except (BufferError, TypeError, RuntimeError):   # (refused there: numpy's conversion says why)
            pass
        else:
            return copied if dtype is None else copied.astype(dtype)
    # Python data converts straight to an explicit dtype, so numpy checks its range (OverflowError)
    array = np.asarray(obj, dtype=to_dtype(dtype).np) if from_python and dtype is not None else np.asarray(obj)
    if array.dtype == object:
        raise TypeError(f"asarray: cannot make a tensor of {type(obj).__name__} objects")
    if dtype is not None:
        target = to_dtype(dtype)
    elif from_python and array.dtype.kind == "f":
        target = default_float
    elif from_python and array.dtype.kind in "iu":
        target = default_int
    elif from_python and array.dtype.kind == "c":
        target = default_complex
    else:
        target = to_dtype(array.dtype)
    return _from_numpy(array, target, device)


def array(obj: Any, dtype: Any = None, *, copy: Optional[bool] = True, device: Any = None) -> Tensor:
    """numpy's `np.array`: like `asarray`, but a Tensor is copied unless `copy` says otherwise.

    >>> x = lt.arange(3)
    >>> y = lt.array(x)
    >>> y[0] = 9
    >>> x.tolist(), y.tolist()
    ([0, 1, 2], [9, 1, 2])
    """
    return asarray(obj, dtype, device, copy=copy)


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """PyTorch's `torch.tensor`: a new tensor of `data` (always a copy), a leaf that requires grad
    where asked.

    >>> lt.tensor([1.0, 2.0], requires_grad=True).requires_grad
    True
    """
    result = asarray(data, dtype, device, copy=True)
    return result.requires_grad_() if requires_grad else result


@_grad_option
def full(shape: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of `shape` filled with one value (no memory is used until it is needed).

    >>> lt.full((2, 2), 7).tolist()
    [[7, 7], [7, 7]]
    """
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None and isinstance(fill_value, np.generic):
        dtype = fill_value.dtype  # numpy data keeps its dtype, as in asarray
    elif dtype is None:
        dtype = (bool_ if isinstance(fill_value, bool) else default_int if isinstance(fill_value, int)
                 else default_complex if isinstance(fill_value, complex) else default_float)
    dtype = to_dtype(dtype)
    if isinstance(fill_value, (int, np.integer)) and not isinstance(fill_value, (bool, np.bool_)) \
            and not scalar_fits(int(fill_value), dtype):
        raise OverflowError(f"full: Python integer {fill_value} out of bounds for {dtype.name}")
    return Tensor(const(fill_value, dtype, _shape(shape)), canonical_device(device))


@_grad_option
def zeros(shape: Any, *rest: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of zeros (of the default float, float32, unless `dtype` says otherwise). The
    shape is sizes one by one (PyTorch's `zeros(2, 3)`) or one int or tuple (numpy's and the
    Array API's `zeros((2, 3))`, which may be followed by the dtype and the device).

    >>> lt.zeros(3).tolist()
    [0.0, 0.0, 0.0]
    >>> lt.zeros(2, 3).shape, lt.zeros((2, 3), lt.int32).dtype
    ((2, 3), lazytensor.int32)
    """
    dims, dtype, device = _shape_dtype_device("zeros", shape, rest, dtype, device)
    return full(dims, 0, to_dtype(dtype), device)   # (to_dtype: None is the default float)


@_grad_option
def ones(shape: Any, *rest: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of ones (of the default float, float32, unless `dtype` says otherwise). The shape
    is sizes one by one (PyTorch's `ones(2, 3)`) or one int or tuple (numpy's and the Array
    API's `ones((2, 3))`, which may be followed by the dtype and the device).

    >>> lt.ones((2,)).tolist()
    [1.0, 1.0]
    >>> lt.ones(2, 3).shape
    (2, 3)
    """
    dims, dtype, device = _shape_dtype_device("ones", shape, rest, dtype, device)
    return full(dims, 1, to_dtype(dtype), device)   # (to_dtype: None is the default float)


@_grad_option
def empty(shape: Any, *rest: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor with memory but unspecified values (float32 unless `dtype` says otherwise); the
    shape as `lt.zeros` takes it.

    >>> lt.empty((2, 3)).shape, lt.empty(2, 3).shape
    ((2, 3), (2, 3))
    """
    dims, dtype, device = _shape_dtype_device("empty", shape, rest, dtype, device)
    dt, device = to_dtype(dtype), canonical_device(device)
    check_size(dims, dt)   # (before allocating)
    buffer = runtime(device).device.allocate(dims, dt)
    return Tensor(Node(Op.BUFFER, dt, dims, (), buffer), device)


def _like(x: Tensor, dtype: Any, device: Any) -> tuple[Any, DType, Any]:
    return x.shape, to_dtype(dtype) if dtype is not None else x.dtype, device if device is not None else x.device


@_grad_option
def zeros_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros with the shape, dtype and device of `x` (unless given).

    >>> lt.zeros_like(lt.arange(2)).tolist()
    [0, 0]
    """
    return zeros(*_like(x, dtype, device))


@_grad_option
def ones_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones with the shape, dtype and device of `x` (unless given).

    >>> lt.ones_like(lt.arange(2)).tolist()
    [1, 1]
    """
    return ones(*_like(x, dtype, device))


@_grad_option
def full_like(x: Tensor, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """`fill_value` with the shape, dtype and device of `x` (unless given).

    >>> lt.full_like(lt.arange(3), 7).tolist()
    [7, 7, 7]
    """
    shape, dt, dev = _like(x, dtype, device)
    return full(shape, fill_value, dt, dev)


@_grad_option
def empty_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    """Unspecified values with the shape, dtype and device of `x` (unless given).

    >>> lt.empty_like(lt.zeros((2, 3))).shape
    (2, 3)
    """
    return empty(*_like(x, dtype, device))


@_grad_option
def arange(start: Any = None, stop: Any = None, step: Any = 1, dtype: Any = None, device: Any = None, *,
           end: Any = None) -> Tensor:
    """Evenly spaced values in [start, stop) by `step`, as numpy.arange: with one number,
    `arange(n)` and `arange(n, step=s)` count from 0 to n. Without a dtype the type is numpy's
    (ints give int64), except that float results are float32 (the default float); with one, the
    values are numpy's computed in that dtype. `end=` is PyTorch's name for stop.

    >>> lt.arange(1, 7, 2).tolist(), lt.arange(1, step=0.25).tolist()
    ([1, 3, 5], [0.0, 0.25, 0.5, 0.75])
    >>> lt.arange(end=3).tolist()
    [0, 1, 2]
    """
    if end is not None:
        stop = spelled_once("arange", stop, None, end, "the end as stop (numpy's) or end= (PyTorch's)")
        if start is None:
            start = 0
    if start is None:
        raise TypeError("arange: needs at least the end of the range (arange(n), arange(start, stop))")
    if stop is None:   # the one number is the stop, whatever the step
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    device = canonical_device(device)
    key = (start, stop, step, dtype, device)
    known = (all(type(v) is int for v in (start, stop, step))
             and isinstance(dtype, (str, DType, type(None))))
    if known and key in _SMALL_RANGES:
        return Tensor(_SMALL_RANGES[key], device)
    if dtype is None:
        values = np.arange(start, stop, step)
        target = default_float if values.dtype.kind == "f" else default_int
    else:
        target = to_dtype(dtype)
        values = np.arange(start, stop, step, dtype=target.np)
    result = _from_numpy(values, target, device)
    if known and values.size <= _SMALL_RANGE:
        _SMALL_RANGES[key] = result.node   # (buffers never change: every caller may share it)
        while len(_SMALL_RANGES) > 64:
            _SMALL_RANGES.pop(next(iter(_SMALL_RANGES)))
    return result


# Integer ranges of up to this many values are kept (a class index per loss call, a row index per
# gather): made once, not copied from the host each time.
_SMALL_RANGE = 1 << 16
_SMALL_RANGES: dict[tuple, Node] = {}


def manual_seed(seed: int) -> None:
    """Seed the generator that `rand`/`randn` use when called without `seed`.

    >>> lt.manual_seed(0)
    """
    global _rng
    _rng = np.random.default_rng(seed)


def _random(draw: Callable, shape: tuple[int, ...], seed: Optional[int], dtype: DType, device: str) -> Tensor:
    """Values drawn on the host by `seed`'s generator (the shared one without a seed; then a
    function captured by lt.jit draws new ones at every call)."""
    generator = np.random.default_rng(seed) if seed is not None else _rng
    result = _from_numpy(draw(generator, shape), dtype, device)
    if seed is None and capture.RECORDING is not None:
        capture.fresh(result, lambda: _random(draw, shape, None, dtype, device))
    return result


@_grad_option
def rand(*shape: Any, seed: Optional[int] = None, dtype: Any = None, device: Any = None) -> Tensor:
    """Uniform random values in [0, 1); `seed` makes them reproducible.

    >>> lt.rand(2, 3, seed=0).shape
    (2, 3)
    """
    return _random(np.random.Generator.random, _shape(shape), seed, to_dtype(dtype), canonical_device(device))


@_grad_option
def randn(*shape: Any, seed: Optional[int] = None, dtype: Any = None, device: Any = None) -> Tensor:
    """Standard normal random values; `seed` makes them reproducible.

    >>> lt.randn(2, 3, seed=0).shape
    (2, 3)
    """
    return _random(np.random.Generator.standard_normal, _shape(shape), seed, to_dtype(dtype),
                   canonical_device(device))


@_grad_option
def linspace(start: float, stop: float, num: int, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Tensor:
    """`num` evenly spaced values from start to stop (numpy.linspace); floats default to float32.

    >>> lt.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, not {num}")
    values = np.linspace(start, stop, num, endpoint=endpoint)
    return _from_numpy(values, to_dtype(dtype) if dtype is not None else default_float, canonical_device(device))


@_grad_option
def eye(n_rows: int, n_cols: Optional[int] = None, k: int = 0, dtype: Any = None, device: Any = None) -> Tensor:
    """A 2-D tensor with ones on diagonal k and zeros elsewhere (float32 unless `dtype` says
    otherwise).

    >>> lt.eye(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return _from_numpy(np.eye(n_rows, n_cols, k), to_dtype(dtype), canonical_device(device))


def from_dlpack(x: Any, device: Any = None, copy: Optional[bool] = None) -> Tensor:
    """A tensor sharing the memory of any DLPack producer (numpy, torch, ...) on the cpu: no copy
    when the data is C-contiguous (unless copy=True), so later writes to the source are seen;
    a copy otherwise (or a BufferError with copy=False).

    >>> lt.from_dlpack(np.arange(3)).tolist()
    [0, 1, 2]
    """
    device = canonical_device(device)
    source = dlpack.BitsOf(x)   # (numpy reads bfloat16 as its bits)
    try:
        array = np.from_dlpack(source)
    except RuntimeError as error:   # (numpy's words for a dtype it lacks)
        if "dtype" not in str(error).lower():
            raise
        raise TypeError(f"from_dlpack: {error}: lazytensor has bool, (u)int8-64, float16/32/64, bfloat16 and "
                        "complex64/128; convert the tensor first") from error
    dtype = bfloat16 if source.bfloat16 else to_dtype(array.dtype)   # (a clear TypeError for dtypes lazytensor lacks)
    if copy or device != "cpu" or not array.flags.c_contiguous or array.size == 0:  # (kernels may read element 0)
        if copy is False and array.size:
            raise BufferError("from_dlpack: the data is not C-contiguous, so sharing it needs a copy")
        return _from_memory(np.asarray(array, order="C"), dtype, device)
    buffer = runtime(device).device.wrap_numpy(array).seen_as(dtype)
    return Tensor(Node(Op.BUFFER, dtype, buffer.shape, (), buffer), device)
