"""Modules: parameters and sub-modules registered by attribute, as in PyTorch's torch.nn."""
from __future__ import annotations

import functools
import math
from collections import OrderedDict
from typing import Any, Iterator, Optional, Sequence, Union

from .. import capture
from ..autograd import no_grad, zero_grads
from ..creation import asarray, ones, rand, randn, zeros
from ..devices import canonical_device
from ..serialization import load, save
from ..tensor import Tensor
from . import functional as F
from .parameter import Parameter


class _Same:
    """Objects compared by identity (tensors compare elementwise), for a guard of lt.jit."""
    __slots__ = ("objects",)

    def __init__(self, objects: tuple) -> None:
        self.objects = objects

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and len(self.objects) == len(other.objects) and \
            all(a is b for a, b in zip(self.objects, other.objects))

    __hash__ = None


def _captured_as(module: "Module") -> tuple:
    """What lt.jit's replay checks of a module the function called: its mode, and that it holds
    the same parameters, buffers and sub-modules (a new one put in is a new graph)."""
    return module.training, _Same((*module._parameters.values(), *module._buffers.values(),
                                   *module._modules.values()))


class Module:
    """Base class of layers and models: assign Parameters and Modules as attributes and they are
    registered (parameters(), state_dict(), train()/eval() reach them).

    >>> class Net(lt.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = lt.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> len(list(Net().parameters()))
    2
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "training", True)

    # ---- registration -------------------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() before "
                                 f"assigning attributes (assigning {name!r})")
        if name in self._buffers and (value is None or isinstance(value, Tensor)):
            self._buffers[name] = value   # a buffer stays one when reassigned, as in PyTorch
            return
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent.discard(name)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """State that is not a parameter (running statistics, a cached mask): moved by to(),
        listed by buffers(), and saved in state_dict() unless persistent=False.

        >>> m = lt.nn.Module(); m.register_buffer("mask", lt.ones(2), persistent=False)
        >>> list(m.state_dict()), m.mask.tolist()
        ([], [1.0, 1.0])
        """
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: a buffer's name is a non-empty string without '.', not {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None, not {type(tensor).__name__}")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"register_buffer: {name!r} is already a parameter or sub-module of {type(self).__name__}")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        (self._non_persistent.discard if persistent else self._non_persistent.add)(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    # ---- traversal ----------------------------------------------------------------------------

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator["Module"]:
        return (m for _, m in self.named_modules())

    def apply(self, fn: Any) -> "Module":
        """Call fn(module) on every sub-module, then on self (as PyTorch's); returns self.

        >>> net = lt.nn.Sequential(lt.nn.Linear(2, 2)).apply(lambda m: None)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def children(self) -> Iterator["Module"]:
        return (m for m in self._modules.values() if m is not None)

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for path, module in (self.named_modules(prefix) if recurse else [(prefix, self)]):
            for name, p in module._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{path}.{name}" if path else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", persistent_only: bool = False) -> Iterator[tuple[str, Tensor]]:
        for path, module in self.named_modules(prefix):
            for name, b in module._buffers.items():
                if b is not None and not (persistent_only and name in module._non_persistent):
                    yield (f"{path}.{name}" if path else name), b

    def buffers(self) -> Iterator[Tensor]:
        return (b for _, b in self.named_buffers())

    # ---- modes, gradients, devices ------------------------------------------------------------

    def train(self, mode: bool = True) -> "Module":
        """Training mode (dropout drops, batch norm uses and updates batch statistics)."""
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: train(False)."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        zero_grads(self.parameters(), set_to_none)

    def to(self, device: str) -> "Module":
        """Move every parameter and buffer to `device`, in place: the same tensor objects (an
        optimizer made before still holds them); gradients are dropped. Returns self.

        >>> lt.nn.Linear(2, 2).to("cpu").weight.device
        'cpu'
        """
        device = canonical_device(device)
        with no_grad():
            for t in [*self.parameters(), *self.buffers()]:
                if t.device != device:
                    moved = t.to(device).realize()
                    t.device, t.grad = device, None
                    t._set_node(moved.node)
        return self

    # ---- state --------------------------------------------------------------------------------

    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """Every parameter and (persistent) buffer by its dotted name (the tensors themselves,
        not copies)."""
        state: OrderedDict[str, Tensor] = OrderedDict(self.named_parameters())
        state.update(self.named_buffers(persistent_only=True))
        return state

    def load_state_dict(self, state: dict, strict: bool = True) -> None:
        """Copy values into the parameters and buffers of the same names. Missing or unexpected
        names (with strict) and shape mismatches raise one error that lists them all."""
        own = self.state_dict()
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        mismatched = [f"{k}: expected {own[k].shape}, got {tuple(_shape_of(state[k]))}"
                      for k in own if k in state and tuple(_shape_of(state[k])) != own[k].shape]
        problems = []
        if strict and missing:
            problems.append("missing: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected: " + ", ".join(unexpected))
        if mismatched:
            problems.append("wrong shape: " + "; ".join(mismatched))
        if problems:
            raise KeyError(f"load_state_dict for {type(self).__name__}: " + " | ".join(problems))
        with no_grad():
            for name, target in own.items():
                if name in state:
                    value = state[name]
                    value = value.to(target.device) if isinstance(value, Tensor) else \
                        asarray(value, device=target.device)
                    target._set_node(value.astype(target.dtype).realize().node)

    def save(self, path: str) -> None:
        """Write state_dict() to a .npz file (lt.save)."""
        save(self.state_dict(), path)

    def load(self, path: str, strict: bool = True) -> "Module":
        """Read a .npz written by save() into this module."""
        self.load_state_dict(load(path), strict)
        return self

    # ---- calling ------------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capture.RECORDING is not None:   # a replay of lt.jit checks what it captured
            capture.guard(("module", id(self)), functools.partial(_captured_as, self))
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


def _shape_of(value: Any) -> tuple[int, ...]:
    return value.shape if hasattr(value, "shape") else ()


def _uniform(shape: tuple[int, ...], bound: float) -> Parameter:
    return Parameter(rand(*shape) * (2 * bound) - bound)


# ---- layers -----------------------------------------------------------------------------------------

class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features), initialized as PyTorch's:
    uniform in +-1/sqrt(in_features).

    >>> lt.nn.Linear(3, 2)(lt.ones((5, 3))).shape
    (5, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1 / math.sqrt(in_features) if in_features else 0.0
        self.weight = _uniform((out_features, in_features), bound)
        self.register_parameter("bias", _uniform((out_features,), bound) if bias else None)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Conv2d(Module):
    """2-D convolution over (N, C, H, W) with stride, padding, dilation and groups.

    >>> lt.nn.Conv2d(1, 4, 3, padding=1)(lt.ones((2, 1, 8, 8))).shape
    (2, 4, 8, 8)
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, Sequence[int]],
                 stride: Union[int, Sequence[int]] = 1, padding: Union[int, Sequence[int]] = 0,
                 dilation: Union[int, Sequence[int]] = 1, groups: int = 1, bias: bool = True):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: in_channels {in_channels} and out_channels {out_channels} must be "
                             f"divisible by groups {groups}")
        kh, kw = F._pair(kernel_size, "kernel_size")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.padding, self.dilation = (kh, kw), stride, padding, dilation
        bound = 1 / math.sqrt(in_channels // groups * kh * kw)
        self.weight = _uniform((out_channels, in_channels // groups, kh, kw), bound)
        self.register_parameter("bias", _uniform((out_channels,), bound) if bias else None)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}")


class _BatchNorm(Module):
    dims: int = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.register_parameter("weight", Parameter(ones(num_features)) if affine else None)
        self.register_parameter("bias", Parameter(zeros(num_features)) if affine else None)
        self.register_buffer("running_mean", zeros(num_features).realize() if track_running_stats else None)
        self.register_buffer("running_var", ones(num_features).realize() if track_running_stats else None)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self.dims_allowed or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}({self.num_features}): expected input of "
                             f"{' or '.join(f'{d}-D' for d in self.dims_allowed)} shape with "
                             f"{self.num_features} channels on axis 1, got {x.shape}")
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=use_batch, momentum=self.momentum, eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs.

    >>> lt.nn.BatchNorm1d(3)(lt.randn(4, 3)).shape
    (4, 3)
    """
    dims_allowed = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs, per channel.

    >>> lt.nn.BatchNorm2d(3)(lt.randn(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    """
    dims_allowed = (4,)


class LayerNorm(Module):
    """Normalization over the last axes (normalized_shape), with a learned scale and shift.

    >>> lt.nn.LayerNorm(4)(lt.randn(2, 4)).shape
    (2, 4)
    """

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.register_parameter("weight", Parameter(ones(shape)) if elementwise_affine else None)
        self.register_parameter("bias", Parameter(zeros(shape)) if elementwise_affine and bias else None)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Dropout(Module):
    """Zeroes elements with probability p while training (scaling the rest by 1/(1-p)).

    >>> lt.nn.Dropout(0.5).eval()(lt.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)


class Embedding(Module):
    """A table of num_embeddings vectors picked by integer indices (initialized N(0, 1)); row
    padding_idx, if given, starts at zero and gets no gradient.

    >>> lt.nn.Embedding(10, 3)(lt.asarray([[1, 2]])).shape
    (1, 2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        values = randn(num_embeddings, embedding_dim)
        if padding_idx is not None:
            padding_idx = F._padding_index(padding_idx, num_embeddings)
            values[padding_idx] = 0.0
        self.padding_idx = padding_idx
        self.weight = Parameter(values)

    def forward(self, indices: Any) -> Tensor:
        return F.embedding(indices, self.weight, self.padding_idx)


class ModuleList(Module):
    """A list of modules, registered (so their parameters are found).

    >>> len(lt.nn.ModuleList([lt.nn.ReLU(), lt.nn.ReLU()]))
    2
    """

    def __init__(self, modules: Sequence[Module] = ()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module: Module) -> None:
        setattr(self, str(len(self._modules)), module)

    def __getitem__(self, index: int) -> Module:
        return list(self._modules.values())[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class Sequential(ModuleList):
    """Modules applied one after another.

    >>> net = lt.nn.Sequential(lt.nn.Linear(4, 8), lt.nn.ReLU(), lt.nn.Linear(8, 2))
    >>> net(lt.ones((1, 4))).shape
    (1, 2)
    """

    def __init__(self, *modules: Module):
        super().__init__(modules)

    def forward(self, x: Any) -> Any:
        for module in self:
            x = module(x)
        return x


def _stateless(name: str, function: Any, doc: str, **fixed: Any) -> type:
    """A Module class around a function of nn.functional with keyword options."""
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        object.__setattr__(self, "options", {**fixed, **dict(zip(option_names, args)), **kwargs})

    def forward(self, x: Tensor, *more: Any) -> Tensor:
        return function(x, *more, **self.options)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.options.items())

    option_names = list(fixed)
    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc})


ReLU = _stateless("ReLU", F.relu, "relu as a module.\n\n>>> lt.nn.ReLU()(lt.asarray([-1.0])).tolist()\n[0.0]")
Sigmoid = _stateless("Sigmoid", F.sigmoid, "sigmoid as a module.\n\n>>> lt.nn.Sigmoid()(lt.zeros(1)).tolist()\n[0.5]")
Tanh = _stateless("Tanh", F.tanh, "tanh as a module.\n\n>>> lt.nn.Tanh()(lt.zeros(1)).tolist()\n[0.0]")
SiLU = _stateless("SiLU", F.silu, "silu as a module.\n\n>>> lt.nn.SiLU()(lt.zeros(1)).tolist()\n[0.0]")
GELU = _stateless("GELU", F.gelu, "gelu as a module.\n\n>>> lt.nn.GELU()(lt.zeros(1)).tolist()\n[0.0]",
                  approximate="none")
LeakyReLU = _stateless("LeakyReLU", F.leaky_relu,
                       "leaky_relu as a module.\n\n>>> lt.nn.LeakyReLU(0.5)(lt.asarray([-2.0])).tolist()\n[-1.0]",
                       negative_slope=0.01)
Softmax = _stateless("Softmax", F.softmax,
                     "softmax as a module.\n\n>>> lt.nn.Softmax(dim=0)(lt.zeros(2)).tolist()\n[0.5, 0.5]", dim=-1)
LogSoftmax = _stateless("LogSoftmax", F.log_softmax,
                        "log_softmax as a module.\n\n>>> lt.nn.LogSoftmax(dim=0)(lt.zeros(1)).tolist()\n[0.0]", dim=-1)
MaxPool2d = _stateless("MaxPool2d", F.max_pool2d,
                       "max_pool2d as a module.\n\n>>> lt.nn.MaxPool2d(2)(lt.ones((1, 1, 4, 4))).shape\n(1, 1, 2, 2)",
                       kernel_size=2, stride=None, padding=0, dilation=1)
AvgPool2d = _stateless("AvgPool2d", F.avg_pool2d,
                       "avg_pool2d as a module.\n\n>>> lt.nn.AvgPool2d(2)(lt.ones((1, 1, 4, 4))).shape\n(1, 1, 2, 2)",
                       kernel_size=2, stride=None, padding=0)
CrossEntropyLoss = _stateless("CrossEntropyLoss", F.cross_entropy,
                              "cross_entropy as a module: loss(logits, target).\n\n"
                              ">>> loss = lt.nn.CrossEntropyLoss()(lt.zeros((1, 2)), lt.asarray([0]))\n"
                              ">>> round(loss.item(), 4)\n0.6931",
                              reduction="mean", ignore_index=-100, label_smoothing=0.0)
MSELoss = _stateless("MSELoss", F.mse_loss,
                     "mse_loss as a module: loss(input, target).\n\n"
                     ">>> lt.nn.MSELoss()(lt.ones(2), lt.zeros(2)).item()\n1.0", reduction="mean")


class Flatten(Module):
    """Flattens axes start_dim..end_dim into one.

    >>> lt.nn.Flatten()(lt.ones((2, 3, 4))).shape
    (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        start, end = self.start_dim % x.ndim, self.end_dim % x.ndim
        return x.reshape(x.shape[:start] + (-1,) + x.shape[end + 1:])


class Identity(Module):
    """Returns its input.

    >>> lt.nn.Identity()(lt.ones(2)).tolist()
    [1.0, 1.0]
    """

    def forward(self, x: Any) -> Any:
        return x
