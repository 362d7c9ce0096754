"""Parameter: the tensors a Module registers as its parameters (PyTorch's nn.Parameter)."""
from __future__ import annotations

from typing import Any

from ..autograd import no_grad
from ..creation import asarray
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers as one of its parameters: a leaf that requires grad.

    >>> p = lt.nn.Parameter(lt.zeros(3))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """

    __slots__ = ()

    def __init__(self, data: Tensor, requires_grad: bool = True):
        data = data if isinstance(data, Tensor) else asarray(data)
        super().__init__(data.detach().realize().node, data.device)
        if requires_grad:
            self.requires_grad_()

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    @property
    def data(self) -> Tensor:
        """The values without autograd (PyTorch's `.data`): reading it gives a tensor that
        requires no grad, and writing into that tensor (`p.data[0] = 1`, `p.data *= 2`) writes
        into the parameter, as under `lt.no_grad()`. Unlike torch's, the tensor read holds the
        values of that moment: a later change of the parameter (an optimizer step) is seen by
        reading .data again. Assigning `p.data = t` replaces the values (a new shape or dtype
        too, as torch allows; a new shape drops .grad).

        >>> p = lt.nn.Parameter(lt.zeros(2))
        >>> p.data.requires_grad
        False
        >>> p.data = lt.ones(2); p.tolist()
        [1.0, 1.0]
        """
        return _Data(self)

    @data.setter
    def data(self, value: Any) -> None:
        value = value if isinstance(value, Tensor) else asarray(value)
        with no_grad():
            value = value.detach().to(self.device)
            if value.shape != self.shape:
                self.grad = None
            if value.dtype != self.dtype or value.shape != self.shape:   # (torch allows both)
                self._write_value(Tensor(value.node, self.device).realize().node)
            else:
                self._set_node(value.node)


class _Data(Tensor):
    """A parameter's `.data`: its values, detached; a write into it is a write into the
    parameter under no_grad (every in-place write reaches a base tensor's `_write_value`)."""
    __slots__ = ("_owner",)

    def __init__(self, owner: Parameter):
        with no_grad():
            super().__init__(owner.node, owner.device)
        self._owner = owner

    def _write_value(self, node: Any) -> None:
        with no_grad():
            self._owner._set_node(node)
            Tensor._write_value(self, self._owner.node)
