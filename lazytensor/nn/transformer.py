"""Attention modules with PyTorch's constructors, forward signatures and parameter names, so a
torch state_dict loads into them: MultiheadAttention, TransformerEncoderLayer,
TransformerEncoder."""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional, Union

from ..creation import zeros
from ..tensor import Tensor
from . import functional as F
from . import init
from .modules import Dropout, LayerNorm, Linear, Module, ModuleList
from .parameter import Parameter


def _empty(*shape: int) -> Parameter:
    return Parameter(zeros(shape))


class MultiheadAttention(Module):
    """Multi-head attention as PyTorch's nn.MultiheadAttention: the same arguments, parameters
    (in_proj_weight (3E, E) and in_proj_bias, or q/k/v_proj_weight when kdim or vdim differ
    from embed_dim; out_proj; bias_k, bias_v with add_bias_kv) and initialization. Inputs are
    (L, N, E) -- (N, L, E) with batch_first -- or unbatched (L, E); forward returns
    (output, weights), weights None unless need_weights (averaged over heads unless
    average_attn_weights=False). Bool masks are True where attention is *not* allowed.

    >>> mha = lt.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = lt.randn(3, 5, 8)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: Optional[int] = None,
                 vdim: Optional[int] = None, batch_first: bool = False):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be positive, got {embed_dim} "
                             f"and {num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        if not 0 <= dropout <= 1:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _empty(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = _empty(embed_dim, embed_dim)
            self.k_proj_weight = _empty(embed_dim, self.kdim)
            self.v_proj_weight = _empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        self.register_parameter("in_proj_bias", _empty(3 * embed_dim) if bias else None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if add_bias_kv:
            self.bias_k, self.bias_v = _empty(1, 1, embed_dim), _empty(1, 1, embed_dim)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's initialization: xavier_uniform_ projections, zero biases, xavier_normal_
        bias_k and bias_v (out_proj.weight keeps Linear's)."""
        for name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if getattr(self, name) is not None:
                init.xavier_uniform_(getattr(self, name))
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        for name in ("bias_k", "bias_v"):
            if getattr(self, name) is not None:
                init.xavier_normal_(getattr(self, name))

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Optional[Tensor]]:
        batched, src_key = query.ndim == 3, key
        if self.batch_first and batched:   # to (L, N, E); one tensor given twice stays one (one projection)
            if key is value:
                key = value = key.permute(1, 0, 2)
                query = key if query is src_key else query.permute(1, 0, 2)
            else:
                query, key, value = (x.permute(1, 0, 2) for x in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.permute(1, 0, 2)
        return out, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward network, each in a residual connection with layer
    norm (after it, or before it with norm_first), as PyTorch's nn.TransformerEncoderLayer,
    with its sub-module and parameter names (self_attn, linear1, linear2, norm1, norm2).
    activation is "relu", "gelu" or a function of one tensor.

    >>> layer = lt.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(lt.randn(3, 5, 8)).shape
    (3, 5, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Union[str, Callable[[Tensor], Tensor]] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True):
        super().__init__()
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerEncoderLayer: activation should be 'relu' or 'gelu' (or a function), "
                                 f"not {activation!r}")
            activation = _ACTIVATIONS[activation]
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, mask: Any, key_padding_mask: Any, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer (each its own parameters, starting equal, as in
    PyTorch) applied in turn, then `norm` if given; parameter names layers.0.self_attn..., so a
    torch state_dict loads. PyTorch's nested-tensor inference path is not copied:
    enable_nested_tensor and mask_check are accepted and change nothing (torch zeroes the
    outputs at padded positions on that path; here they are computed as in training).

    >>> layer = lt.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    >>> lt.nn.TransformerEncoder(layer, num_layers=2)(lt.randn(5, 3, 8)).shape
    (5, 3, 8)
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Optional[Module] = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        if num_layers < 0:
            raise ValueError(f"TransformerEncoder: num_layers must be >= 0, got {num_layers}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: Optional[bool] = None) -> Tensor:
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return self.norm(output) if self.norm is not None else output


__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
