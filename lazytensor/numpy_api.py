"""numpy's own functions on lazytensor tensors (NEP 13 and NEP 18, as CuPy and Dask do them).

`np.exp(t)`, `np.sum(t, axis=0)`, `np.concatenate([t, u])`, `np.where(c, t, 0)`,
`np.linalg.inv(t)`, `np.fft.rfft(t)`: where lazytensor has a function of the same meaning, numpy's
call gives a lazy tensor (still fused with what follows). Where it has none, or a numpy keyword
has no lazytensor meaning (`out=` to a tensor, `order=`, `where=`, ...), numpy computes the result
on the values, as for any array-like, and gives an ndarray.

`np.asarray(t)` and `np.array(t)` always convert: they compute the values and give an ndarray
(np.asarray(t, copy=False) the read-only view of the tensor's memory on the cpu). So `np.f(t)`
keeps working lazily, and `np.f(np.asarray(t))` is the way to ask for numpy's computation.

Tensor.__array_ufunc__ and Tensor.__array_function__ call `array_ufunc` and `array_function`.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from . import namespace as lt
from .tensor import Tensor, attach_methods


class _NumpyComputes(Exception):
    """A rule's way to say: this call has no lazytensor meaning, numpy computes it."""


# ---- ufuncs (NEP 13) -----------------------------------------------------------------------------

# numpy's ufuncs that are lazytensor functions (by numpy's name; the same name where not given)
UFUNCS = {
    **{name: name for name in (
        "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "negative", "positive", "exp", "expm1",
        "log", "log1p", "log2", "log10", "sqrt", "square", "sin", "cos", "tan", "sinh", "cosh", "tanh", "floor",
        "ceil", "trunc", "sign", "isnan", "isinf", "isfinite", "signbit", "copysign", "hypot", "maximum",
        "minimum", "logaddexp", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
        "reciprocal", "matmul", "nextafter", "vecdot")},
    "true_divide": "divide", "power": "pow", "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "conjugate": "conj",
    "rint": "round", "invert": "bitwise_invert", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Tensor.__array_ufunc__ (see there)."""
    out = kwargs.pop("out", None)
    name = UFUNCS.get(ufunc.__name__)
    if method != "__call__" or name is None or kwargs or (out is not None and len(out) != 1):
        if out is not None:
            if any(isinstance(v, Tensor) for v in out):
                raise TypeError(f"numpy's {ufunc.__name__}.{method} cannot write into a lazytensor tensor; assign "
                                "its result instead")
            kwargs["out"] = out
        return getattr(ufunc, method)(*_to_numpy(inputs), **kwargs)
    result = getattr(lt, name)(*inputs)
    if out is None:
        return result
    (target,) = out
    if isinstance(target, Tensor):
        target[...] = result
    else:
        np.copyto(target, result.numpy(), casting="same_kind")
    return target


# ---- functions (NEP 18) --------------------------------------------------------------------------

def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """Tensor.__array_function__: lazytensor's function where a rule below gives one, else numpy's
    on the values. Arrays of other libraries (types numpy does not know) are theirs to decide."""
    if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):
        return NotImplemented
    module = func.__module__.removeprefix("numpy").lstrip(".")
    name = f"{module}.{func.__name__}" if module else func.__name__
    if name in _BY_METHODS:   # (numpy's implementation calls the tensor's methods, which take its keywords)
        return func._implementation(*args, **kwargs)
    rule = _RULES.get(name)
    if rule is not None:
        try:
            bound = inspect.signature(func).bind(*args, **kwargs)
        except TypeError:
            bound = None   # (a call numpy itself refuses: numpy says why)
        if bound is not None:
            try:
                return rule(_Call(bound, args, kwargs))
            except _NumpyComputes:
                pass
    return func(*_to_numpy(args), **dict(zip(kwargs, _to_numpy(tuple(kwargs.values())))))


def _to_numpy(values: tuple) -> list:
    """`values` with every tensor (also inside lists and tuples, at any depth) as an ndarray."""
    out: list = []
    stack = [(values, out)]
    while stack:
        items, into = stack.pop()
        for v in items:
            if isinstance(v, Tensor):
                into.append(np.asarray(v))
            elif isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
                inner: list = []
                into.append(inner if isinstance(v, list) else _Later(inner, type(v)))
                stack.append((v, inner))
            else:
                into.append(v)
    return _finish(out)


class _Later:
    """A tuple being filled in by _to_numpy (made a tuple once its items are converted)."""
    __slots__ = ("items", "kind")

    def __init__(self, items: list, kind: type):
        self.items, self.kind = items, kind


def _finish(out: list) -> list:
    """Turn _to_numpy's placeholders into tuples, innermost first (iteratively)."""
    order, stack = [], [out]
    while stack:
        items = stack.pop()
        order.append(items)
        stack.extend(v.items if isinstance(v, _Later) else v for v in items if isinstance(v, (list, _Later)))
    for items in reversed(order):
        for i, v in enumerate(items):
            if isinstance(v, _Later):
                items[i] = v.kind(v.items)
    return out


class _Call:
    """One numpy call's arguments by parameter name, for a rule to take what it understands."""

    def __init__(self, bound: inspect.BoundArguments, args: tuple, kwargs: dict):
        self.given = dict(bound.arguments)
        self.parameters = bound.signature.parameters
        bound.apply_defaults()
        self.values = bound.arguments
        self.device = _device_of(args, kwargs)

    def __getitem__(self, name: str) -> Any:
        value = self.values[name]
        return None if value is np._NoValue else value

    def tensor(self, name: str) -> Tensor:
        """Argument `name` as a tensor (an ndarray or a list of values made one, on the device of
        the call's tensors)."""
        return _as_tensor(self.values[name], self.device)

    def tensors(self, name: str) -> list:
        return [_as_tensor(v, self.device) for v in self.values[name]]

    def only(self, *names: str) -> None:
        """Every parameter but `names` must have its default, else numpy computes the call."""
        for name, value in self.given.items():
            if name in names:
                continue
            kind = self.parameters[name].kind
            if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                if value:
                    raise _NumpyComputes
                continue
            default = self.parameters[name].default
            if value is not default and not (_plain(value) and _plain(default) and value == default):
                raise _NumpyComputes


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _device_of(args: tuple, kwargs: dict) -> str:
    for v in (*args, *kwargs.values()):
        if isinstance(v, Tensor):
            return v.device
        if isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Tensor):
                    return w.device
    return "cpu"


def _as_tensor(value: Any, device: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    try:
        return lt.asarray(value, device=device)
    except (TypeError, ValueError) as error:   # (object arrays, strings, ragged lists: numpy's business)
        raise _NumpyComputes from error


# ---- the rules: numpy's name -> lazytensor's call of the same meaning ------------------------------

# numpy's reductions call the tensor's methods (which take numpy's keywords: dtype=, out=None, ddof=)
_BY_METHODS = {"sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "any", "all", "argmax", "argmin"}

_RULES: dict[str, Callable[[_Call], Any]] = {}


def _same(name: str, positional: tuple = ("a",), keywords: tuple = (), arrays: tuple = ()) -> None:
    """numpy's function `name` (a dotted path: "linalg.inv") is lazytensor's of the same path:
    the parameters `positional` pass positionally, `keywords` by keyword where given; any other
    must have its default. `arrays` name the parameters that hold arrays (made tensors; the
    first positional one always is)."""
    def rule(call: _Call) -> Any:
        call.only(*positional, *keywords)
        values = [call.tensor(p) if i == 0 or p in arrays else call[p] for i, p in enumerate(positional)]
        named = {k: call[k] for k in keywords if k in call.given and call[k] is not None}
        return _lookup(name)(*values, **named)
    _RULES[name] = rule


def _lookup(path: str) -> Callable:
    value: Any = lt
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _rule(numpy_name: str) -> Callable:
    def register(rule: Callable[[_Call], Any]) -> Callable[[_Call], Any]:
        _RULES[numpy_name] = rule
        return rule
    return register


_same("expand_dims", ("a", "axis"))
_same("moveaxis", ("a", "source", "destination"))
_same("squeeze", ("a",), ("axis",))
_same("flip", ("m",), ("axis",))
_same("roll", ("a", "shift"), ("axis",))
_same("tile", ("A", "reps"))
_same("broadcast_to", ("array", "shape"))
_same("tril", ("m",), ("k",))
_same("triu", ("m",), ("k",))
_same("permute_dims", ("a", "axes"))
_same("repeat", ("a", "repeats"), ("axis",))
_same("searchsorted", ("a", "v"), ("side", "sorter"), arrays=("v",))
_same("isin", ("element", "test_elements"), ("invert",), arrays=("test_elements",))
_same("count_nonzero", ("a",), ("axis", "keepdims"))
_same("nonzero", ("a",))
_same("tensordot", ("a", "b"), ("axes",), arrays=("b",))
_same("astype", ("x", "dtype"), ("copy", "device"))
for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all", "matrix_transpose"):
    _same(_name, ("x",))
for _name in ("cumulative_sum", "cumulative_prod"):
    _same(_name, ("x",), ("axis", "dtype", "include_initial"))
_same("diff", ("a",), ("n", "axis", "prepend", "append"))
for _name in ("zeros_like", "ones_like", "empty_like"):
    _same(_name, ("a",), ("dtype", "device"))
_same("full_like", ("a", "fill_value"), ("dtype", "device"))
# numpy.linalg: the Array API's functions by its names, and numpy's own where they mean the same
# (not eig/eigvals: numpy's give real results for real eigenvalues, the Array API's complex ones)
for _name in ("inv", "det", "slogdet", "eigvalsh", "eigh"):   # (eigh: UPLO="L", numpy's default, is what it reads)
    _same(f"linalg.{_name}", ("a",))
for _name in ("matrix_transpose", "svdvals"):
    _same(f"linalg.{_name}", ("x",))
for _name, keywords in (("outer", ()), ("matmul", ()), ("cross", ("axis",)), ("vecdot", ("axis",)),
                        ("tensordot", ("axes",))):
    _same(f"linalg.{_name}", ("x1", "x2"), keywords, arrays=("x2",))
_same("linalg.trace", ("x",), ("offset", "dtype"))
_same("linalg.diagonal", ("x",), ("offset",))
_same("linalg.matrix_norm", ("x",), ("keepdims", "ord"))
_same("linalg.vector_norm", ("x",), ("axis", "keepdims", "ord"))
_same("linalg.matrix_power", ("a", "n"))
_same("linalg.solve", ("a", "b"), arrays=("b",))
_same("linalg.cholesky", ("a",), ("upper",))
_same("linalg.qr", ("a",), ("mode",))
for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _same(f"fft.{_name}", ("a",), ("n", "axis", "norm"))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    _same(f"fft.{_name}", ("a",), ("s", "axes", "norm"))
for _name in ("fftshift", "ifftshift"):
    _same(f"fft.{_name}", ("x",), ("axes",))


@_rule("concatenate")
@_rule("concat")
def _concatenate(call: _Call) -> Tensor:
    call.only("arrays", "axis", "dtype")
    result = lt.concat(call.tensors("arrays"), axis=call["axis"])
    return result if call["dtype"] is None else result.astype(call["dtype"])


@_rule("stack")
def _stack(call: _Call) -> Tensor:
    call.only("arrays", "axis", "dtype")
    result = lt.stack(call.tensors("arrays"), axis=call["axis"])
    return result if call["dtype"] is None else result.astype(call["dtype"])


@_rule("where")
def _where(call: _Call) -> Any:
    if call.given.keys() == {"condition"}:   # (numpy's one-argument where is nonzero)
        return lt.nonzero(call.tensor("condition"))
    if len(call.given) != 3:
        raise _NumpyComputes
    return lt.where(call.tensor("condition"), call["x"], call["y"])


@_rule("reshape")
def _reshape(call: _Call) -> Tensor:
    call.only("a", "shape", "copy")
    return lt.reshape(call.tensor("a"), call["shape"], copy=call["copy"])


@_rule("transpose")
def _transpose(call: _Call) -> Tensor:
    call.only("a", "axes")
    x = call.tensor("a")
    axes = call["axes"]
    return lt.permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else axes)


@_rule("ravel")
def _ravel(call: _Call) -> Tensor:
    call.only("a")
    return lt.reshape(call.tensor("a"), (-1,))


@_rule("swapaxes")
def _swapaxes(call: _Call) -> Tensor:
    call.only("a", "axis1", "axis2")
    x = call.tensor("a")
    axes = list(range(x.ndim))
    first, second = (np.lib.array_utils.normalize_axis_index(call[n], x.ndim) for n in ("axis1", "axis2"))
    axes[first], axes[second] = axes[second], axes[first]
    return lt.permute_dims(x, tuple(axes))


def _flat_axis(call: _Call, name: str = "a") -> tuple[Tensor, int]:
    """numpy's axis=None flattens first (its scans, sort, take): the tensor and the axis."""
    x = call.tensor(name)
    return (lt.reshape(x, (-1,)), 0) if call["axis"] is None else (x, call["axis"])


def _flattening(numpy_name: str, function: str, passed: tuple = (), ignored: tuple = ()) -> None:
    """numpy's `numpy_name`, whose axis=None flattens first, is lazytensor's `function` along an
    axis; the parameters `passed` go on by keyword, those `ignored` have no effect on the result."""
    def rule(call: _Call) -> Tensor:
        call.only("a", "axis", *passed, *ignored)
        x, axis = _flat_axis(call)
        return _lookup(function)(x, axis=axis, **{k: call[k] for k in passed})
    _RULES[numpy_name] = rule


_flattening("cumsum", "cumulative_sum", passed=("dtype",))
_flattening("cumprod", "cumulative_prod", passed=("dtype",))
_flattening("sort", "sort", ignored=("kind", "stable"))   # (every kind sorts to the same values; ties keep order)
_flattening("argsort", "argsort", ignored=("kind", "stable"))


@_rule("take")
def _take(call: _Call) -> Tensor:
    call.only("a", "indices", "axis")
    x, axis = _flat_axis(call)
    indices = call.tensor("indices")
    if indices.ndim != 1:
        raise _NumpyComputes
    return lt.take(x, indices, axis=axis)


@_rule("take_along_axis")
def _take_along_axis(call: _Call) -> Tensor:
    call.only("arr", "indices", "axis")
    x, axis = _flat_axis(call, "arr")
    return lt.take_along_axis(x, call.tensor("indices"), axis=axis)


@_rule("round")
@_rule("around")
def _round(call: _Call) -> Tensor:
    call.only("a")
    return lt.round(call.tensor("a"))


@_rule("clip")
def _clip(call: _Call) -> Tensor:
    call.only("a", "a_min", "a_max", "min", "max")
    low = call["a_min"] if call["min"] is None else call["min"]
    high = call["a_max"] if call["max"] is None else call["max"]
    if call["a_min"] is not None and call["min"] is not None or call["a_max"] is not None and call["max"] is not None:
        raise _NumpyComputes   # (numpy says both were given)
    return lt.clip(call.tensor("a"), low, high)


@_rule("dot")
def _dot(call: _Call) -> Tensor:
    call.only("a", "b")
    a, b = call.tensor("a"), call.tensor("b")
    if a.ndim == 0 or b.ndim == 0:
        return lt.multiply(a, b)
    if a.ndim > 2 or b.ndim > 2:   # (numpy's dot of stacks pairs every matrix with every other)
        raise _NumpyComputes
    return lt.matmul(a, b)


@_rule("outer")
def _outer(call: _Call) -> Tensor:
    call.only("a", "b")
    return lt.linalg.outer(lt.reshape(call.tensor("a"), (-1,)), lt.reshape(call.tensor("b"), (-1,)))


@_rule("trace")
@_rule("diagonal")
def _over_first_two(call: _Call) -> Tensor:
    """numpy's trace and diagonal work over axes 0 and 1 (the Array API's over the last two)."""
    call.only("a", "offset", "axis1", "axis2", "dtype")
    x = call.tensor("a")
    if x.ndim < 2 or call["axis1"] in (1, 1 - x.ndim) and call["axis2"] in (0, -x.ndim):
        raise _NumpyComputes
    x = lt.moveaxis(x, (call["axis1"], call["axis2"]), (-2, -1))
    if "dtype" in call.values:   # (trace)
        return lt.linalg.trace(x, offset=call["offset"], dtype=call["dtype"])
    return lt.linalg.diagonal(x, offset=call["offset"])


@_rule("copy")
def _copy(call: _Call) -> Tensor:
    call.only("a", "order")
    return lt.asarray(call.tensor("a"), copy=True)


@_rule("shape")
def _shape(call: _Call) -> tuple:
    return call.tensor("a").shape


@_rule("ndim")
def _ndim(call: _Call) -> int:
    return call.tensor("a").ndim


@_rule("size")
def _size(call: _Call) -> int:
    x = call.tensor("a")
    return x.numel() if call["axis"] is None else x.shape[call["axis"]]


@_rule("result_type")
def _result_type(call: _Call) -> np.dtype:
    values = [np.dtype(v.dtype) if isinstance(v, Tensor) else v for v in call.values["arrays_and_dtypes"]]
    return np.result_type(*values)


@_rule("meshgrid")
def _meshgrid(call: _Call) -> tuple:
    call.only("xi", "indexing")
    return lt.meshgrid(*(_as_tensor(v, call.device) for v in call.values["xi"]), indexing=call["indexing"])


@_rule("broadcast_arrays")
def _broadcast_arrays(call: _Call) -> tuple:
    call.only("args")
    return lt.broadcast_arrays(*(_as_tensor(v, call.device) for v in call.values["args"]))


@_rule("unique")
def _unique(call: _Call) -> Tensor:
    call.only("ar", "equal_nan", "sorted")
    x = call.tensor("ar")
    if x.dtype.is_float or x.dtype.is_complex:   # (numpy merges nans into one; the Array API keeps each)
        raise _NumpyComputes
    return lt.sort(lt.unique_values(x))


@_rule("linalg.svd")
def _svd(call: _Call) -> Any:
    call.only("a", "full_matrices", "compute_uv")
    x = call.tensor("a")
    if not call["compute_uv"]:
        return lt.linalg.svdvals(x)
    return lt.linalg.svd(x, full_matrices=call["full_matrices"])


@_rule("linalg.norm")
def _norm(call: _Call) -> Tensor:
    call.only("x", "ord", "axis", "keepdims")
    x, order, axis, keepdims = call.tensor("x"), call["ord"], call["axis"], call["keepdims"]
    if isinstance(axis, int):
        axis = (axis,)
    if axis is None and order is None:   # (the 2-norm of all values: Frobenius for matrices)
        return lt.linalg.vector_norm(x, axis=tuple(range(x.ndim)), keepdims=keepdims)
    axis = tuple(range(x.ndim)) if axis is None else tuple(axis)
    if len(axis) == 1:
        return lt.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if order is None else order)
    if len(axis) == 2 and order in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        moved = lt.moveaxis(x, axis, (-2, -1))
        result = lt.linalg.matrix_norm(moved, ord="fro" if order is None else order, keepdims=keepdims)
        if keepdims:
            result = lt.moveaxis(result, (-2, -1), axis)
        return result
    raise _NumpyComputes


class NumpyProtocols:
    """Tensor's numpy protocols (attached below)."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs on tensors -- np.exp(x), np.add(a, x), and so `a + x` for an ndarray a
        -- are lazytensor's functions of the same meaning: lazy tensors. With out= arrays the
        values are computed and written there (`a += x` keeps `a` an ndarray, as numpy's). What
        has no lazytensor meaning (np.add.reduce, dtype=, where=, ...) numpy computes on the
        values, as for any array-like."""
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
        """numpy's functions on tensors -- np.concatenate([x, y]), np.where(c, x, 0), np.sum(x, 0),
        np.linalg.inv(x), np.fft.rfft(x) -- are lazytensor's functions of the same meaning: lazy
        tensors. What lazytensor lacks numpy computes on the values (lazytensor/numpy_api.py)."""
        return array_function(func, types, args, kwargs)


attach_methods(NumpyProtocols)
