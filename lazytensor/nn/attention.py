"""Attention as PyTorch's nn.functional computes it: `scaled_dot_product_attention` and
`multi_head_attention_forward` (what nn.MultiheadAttention calls). Both are tensor operations
only -- scores = q @ k^T * scale, the mask added (or chosen with `where`), the max-subtracted
softmax along the last axis, then @ v -- so the graph fuses and differentiates like any other;
a causal mask is a comparison of two cached index ranges, never a host array per call."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..creation import arange, rand, zeros
from ..manipulation import concat
from ..operands import as_tensor, where
from ..reductions import softmax_along
from ..tensor import Tensor


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p); identity when not
    training. (lt.nn.functional's dropout: defined here, where attention drops its weights,
    since nn.functional imports this module.)

    >>> F.dropout(lt.ones(3), 0.5, training=False).tolist()
    [1.0, 1.0, 1.0]
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0
    keep = rand(*x.shape, device=x.device) >= p
    return where(keep, x * (1 / (1 - p)), 0).astype(x.dtype)


def _float_mask(mask: Any, like: Tensor, what: str) -> Tensor:
    """An attention mask as a tensor on like's device: bool as it is, a float one in like's dtype."""
    mask = as_tensor(mask, like)
    if mask.device != like.device:
        mask = mask.to(like.device)
    if mask.dtype.is_bool:
        return mask
    if not mask.dtype.is_float:
        raise TypeError(f"{what}: a mask must be bool or floating point, not {mask.dtype.name}")
    return mask.astype(like.dtype) if mask.dtype != like.dtype else mask


def _additive(mask: Tensor, dtype: Any, masked_when: bool) -> Tensor:
    """A bool mask as 0 / -inf in `dtype` (-inf where it equals `masked_when`); a float one as it is."""
    if not mask.dtype.is_bool:
        return mask
    blocked = mask if masked_when else ~mask
    return where(blocked, -math.inf, 0.0).astype(dtype)


def _causal(rows: int, cols: int, device: str) -> Tensor:
    """True on and below the diagonal of a (rows, cols) grid, top-left aligned (torch's tril)."""
    return arange(cols, device=device).reshape(1, cols) <= arange(rows, device=device).reshape(rows, 1)


def _softmax(scores: Tensor, safe: bool) -> Tensor:
    """softmax along the last axis from scores - max (the max taken out of the gradient, as
    F.softmax does). `safe`: a row that is all -inf (every key masked) gives zeros, as torch's
    scaled_dot_product_attention does, rather than NaN: a -inf score stays -inf (not -inf - max,
    NaN where the max is -inf too), so such a row sums to 0, divided by 1 instead. (Both `where`s
    are of the row's own elements and sum: the kernels are those of the plain softmax.)"""
    if not safe:
        return softmax_along(scores, -1)
    shifted = where(scores == -math.inf, -math.inf, scores - scores.max(axis=-1, keepdims=True).detach())
    e = shifted.exp()
    total = e.sum(axis=-1, keepdims=True)
    return e / where(total == 0, 1.0, total).astype(scores.dtype)


def _check_broadcast(mask_shape: tuple, target: tuple, what: str) -> None:
    try:
        shape = np.broadcast_shapes(mask_shape, target)
    except ValueError:
        shape = None
    if shape != target:
        raise ValueError(f"{what}: a mask of shape {mask_shape} does not broadcast to the attention "
                         f"weights' shape {target} (..., L, S)")


def _attend(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], causal: bool, dropout_p: float,
            scale: float, safe: bool) -> tuple[Tensor, Tensor]:
    """softmax(q @ k^T * scale + mask) @ v, and the weights; `mask` bool (True: attend) or
    additive; `causal` adds the lower-triangular mask."""
    scores = (q @ k.mT) * scale
    if causal:
        scores = where(_causal(scores.shape[-2], scores.shape[-1], scores.device), scores, -math.inf)
    if mask is not None:
        scores = where(mask, scores, -math.inf) if mask.dtype.is_bool else scores + mask
    weights = _softmax(scores, safe and mask is not None)   # (a causal mask keeps key 0 in every row)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return weights @ v, weights


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value over the last two axes, as PyTorch's:
    query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev). `scale` defaults to
    1/sqrt(E); a bool `attn_mask` says where to attend (True), a float one is added; `is_causal`
    masks key j > query i; `dropout_p` drops weights (always, as torch's functional form);
    `enable_gqa` lets key/value have fewer heads (axis -3) than query, shared by groups. A query
    whose keys are all masked gets zeros.

    >>> q = lt.ones((2, 3, 5, 4))
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    (2, 3, 5, 4)
    """
    query, key, value = as_tensor(query), as_tensor(key, query), as_tensor(value, query)
    what = "scaled_dot_product_attention"
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ValueError(f"{what}: query, key and value need at least 2 axes (..., L or S, E), got shapes "
                         f"{query.shape}, {key.shape}, {value.shape}")
    if not query.dtype.is_float:
        raise TypeError(f"{what}: query must be floating point, not {query.dtype.name}")
    if key.shape[-1] != query.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{what}: key {key.shape} must have the query's last axis ({query.shape[-1]}) and "
                         f"value {value.shape} the key's sequence length ({key.shape[-2]})")
    if enable_gqa and min(query.ndim, key.ndim, value.ndim) >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if kv_heads != value.shape[-3] or heads % kv_heads:
            raise ValueError(f"{what}: with enable_gqa the query's heads ({heads}) must be a multiple of the "
                             f"key's and value's ({kv_heads}, {value.shape[-3]}), which must be equal")
        key, value = (_repeat_heads(t, heads // kv_heads) for t in (key, value))
    try:
        batch = np.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except ValueError:
        raise ValueError(f"{what}: the leading axes of query {query.shape}, key {key.shape} and value "
                         f"{value.shape} do not broadcast") from None
    if not 0 <= dropout_p <= 1:
        raise ValueError(f"{what}: dropout_p must be in [0, 1], got {dropout_p}")
    mask = None
    if attn_mask is not None:
        if is_causal:
            raise ValueError(f"{what}: give attn_mask or is_causal=True, not both")
        mask = _float_mask(attn_mask, query, what)
        _check_broadcast(mask.shape, (*batch, query.shape[-2], key.shape[-2]), what)
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    return _attend(query, key, value, mask, is_causal, dropout_p, scale, safe=True)[0]


def _repeat_heads(x: Tensor, times: int) -> Tensor:
    """(..., H, S, E) -> (..., H * times, S, E), each head repeated `times` times in a row."""
    lead, (heads, s, e) = x.shape[:-3], x.shape[-3:]
    return x.reshape(*lead, heads, 1, s, e).broadcast_to((*lead, heads, times, s, e)).reshape(*lead, heads * times, s, e)


def _projection(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    out = x @ weight.mT
    return out + bias if bias is not None else out


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"multi_head_attention_forward: {message}")


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
                                 num_heads: int, in_proj_weight: Optional[Tensor], in_proj_bias: Optional[Tensor],
                                 bias_k: Optional[Tensor], bias_v: Optional[Tensor], add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Optional[Tensor],
                                 training: bool = True, key_padding_mask: Any = None, need_weights: bool = True,
                                 attn_mask: Any = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Optional[Tensor] = None, k_proj_weight: Optional[Tensor] = None,
                                 v_proj_weight: Optional[Tensor] = None, static_k: Optional[Tensor] = None,
                                 static_v: Optional[Tensor] = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple[Tensor, Optional[Tensor]]:
    """Multi-head attention of (L, N, E) query and (S, N, E) key / value (or unbatched (L, E),
    (S, E)), PyTorch's function behind nn.MultiheadAttention, with its argument order and
    masks: a bool mask is True where attention is *not* allowed, a float one is added;
    attn_mask (L, S) or (N * num_heads, L, S), key_padding_mask (N, S). Returns the output and,
    with need_weights, the attention weights (averaged over heads unless told otherwise).

    >>> E, w = 4, lt.ones((12, 4)) * 0.1
    >>> out, weights = F.multi_head_attention_forward(lt.ones((3, 2, E)), lt.ones((5, 2, E)),
    ...     lt.ones((5, 2, E)), E, 2, w, None, None, None, False, 0.0, lt.eye(E), None)
    >>> out.shape, weights.shape
    ((3, 2, 4), (2, 3, 5))
    """
    query, key, value = as_tensor(query), as_tensor(key, query), as_tensor(value, query)
    batched = query.ndim == 3
    _check(query.ndim in (2, 3), f"query must be (L, N, E) or unbatched (L, E), got shape {query.shape}")
    _check(key.ndim == value.ndim == query.ndim, f"key {key.shape} and value {value.shape} must have as many "
           f"axes as the query {query.shape}")
    if key_padding_mask is not None:
        key_padding_mask = as_tensor(key_padding_mask, query)
        _check(key_padding_mask.ndim == query.ndim - 1, f"key_padding_mask must be {'(N, S)' if batched else '(S,)'}"
               f" for a query of shape {query.shape}, got shape {key_padding_mask.shape}")
    if attn_mask is not None:
        attn_mask = as_tensor(attn_mask, query)
        _check(attn_mask.ndim in (2, 3), f"attn_mask must be (L, S) or (N * num_heads, L, S), got shape "
               f"{attn_mask.shape}")
    if not batched:
        query, key, value = (t.reshape(t.shape[0], 1, t.shape[1]) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.reshape(1, -1)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    _check(embed_dim == embed_dim_to_check, f"expected the query's embedding dimension {embed_dim_to_check}, "
           f"got {embed_dim}")
    _check(num_heads > 0 and embed_dim % num_heads == 0, f"embed_dim {embed_dim} is not divisible by num_heads "
           f"{num_heads}")
    _check(key.shape[:2] == value.shape[:2] and key.shape[1] == bsz,
           f"key {key.shape} and value {value.shape} must have the query's batch ({bsz}) and one sequence length")
    head_dim = embed_dim // num_heads
    if key_padding_mask is not None:
        key_padding_mask = _additive(_float_mask(key_padding_mask, query, "key_padding_mask"), query.dtype, True)
    if is_causal and attn_mask is None:
        raise ValueError("multi_head_attention_forward: is_causal is a hint that attn_mask is the causal mask; "
                         "pass the mask too (lt.triu(lt.full((L, L), -lt.inf), 1), or use "
                         "F.scaled_dot_product_attention(..., is_causal=True))")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None   # (as torch: the hint replaces the mask)
    else:
        if attn_mask is not None:
            attn_mask = _additive(_float_mask(attn_mask, query, "attn_mask"), query.dtype, True)
        is_causal = False
    # the projections: packed (one matmul when query, key and value are one tensor) or separate
    if not use_separate_proj_weight:
        _check(in_proj_weight is not None, "in_proj_weight is None but use_separate_proj_weight is False")
        _check(key.shape == value.shape, f"key shape {key.shape} does not match value shape {value.shape}")
        e = embed_dim
        if query is key and key is value:
            qkv = _projection(query, in_proj_weight, in_proj_bias)
            q, k, v = qkv[..., :e], qkv[..., e:2 * e], qkv[..., 2 * e:]
        else:
            b = in_proj_bias
            q, k, v = (_projection(x, in_proj_weight[i * e:(i + 1) * e], None if b is None else b[i * e:(i + 1) * e])
                       for i, x in enumerate((query, key, value)))
    else:
        _check(all(w is not None for w in (q_proj_weight, k_proj_weight, v_proj_weight)),
               "use_separate_proj_weight needs q_proj_weight, k_proj_weight and v_proj_weight")
        b, e = in_proj_bias, embed_dim
        q, k, v = (_projection(x, w, None if b is None else b[i * e:(i + 1) * e])
                   for i, (x, w) in enumerate(((query, q_proj_weight), (key, k_proj_weight), (value, v_proj_weight))))
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            _check(attn_mask.shape == (tgt_len, src_len), f"the 2-D attn_mask has shape {attn_mask.shape}, but "
                   f"should be {(tgt_len, src_len)}")
            attn_mask = attn_mask.reshape(1, tgt_len, src_len)
        else:
            _check(attn_mask.shape == (bsz * num_heads, tgt_len, src_len), f"the 3-D attn_mask has shape "
                   f"{attn_mask.shape}, but should be {(bsz * num_heads, tgt_len, src_len)}")
    if bias_k is not None or bias_v is not None:
        _check(bias_k is not None and bias_v is not None, "bias_k and bias_v are given together or not at all")
        _check(static_k is None and static_v is None, "bias_k / bias_v cannot be added to static_k / static_v")
        k = concat([k, bias_k.reshape(1, 1, embed_dim).broadcast_to((1, bsz, embed_dim))], axis=0)
        v = concat([v, bias_v.reshape(1, 1, embed_dim).broadcast_to((1, bsz, embed_dim))], axis=0)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    # heads: (seq, N, E) -> (N, H, seq, head_dim)
    q = q.reshape(tgt_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    k, v = (_heads(x, static, bsz, num_heads, head_dim, name)
            for x, static, name in ((k, static_k, "static_k"), (v, static_v, "static_v")))
    if add_zero_attn:
        k, v = (concat([x, zeros((bsz, num_heads, 1, head_dim), dtype=x.dtype, device=x.device)], axis=2)
                for x in (k, v))
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[2]
    if key_padding_mask is not None:
        _check(key_padding_mask.shape == (bsz, src_len), f"key_padding_mask must have shape {(bsz, src_len)}, "
               f"got {key_padding_mask.shape}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len)
    if attn_mask is not None:
        attn_mask = attn_mask.reshape(1, 1, tgt_len, src_len) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(bsz, num_heads, tgt_len, src_len)
    mask = key_padding_mask if attn_mask is None else \
        attn_mask if key_padding_mask is None else attn_mask + key_padding_mask
    dropout_p = dropout_p if training else 0.0
    # need_weights: torch's explicit path (a row with every key masked is NaN); otherwise its
    # scaled_dot_product_attention (zeros there)
    out, weights = _attend(q, k, v, mask, is_causal, dropout_p, 1 / math.sqrt(head_dim), safe=not need_weights)
    out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
    out = _projection(out, out_proj_weight, out_proj_bias)
    if not need_weights:
        return (out if batched else out.reshape(tgt_len, embed_dim)), None
    if average_attn_weights:
        weights = weights.mean(axis=1)
    if not batched:
        out, weights = out.reshape(tgt_len, embed_dim), weights.reshape(weights.shape[1:])
    return out, weights


def _pad_last(mask: Optional[Tensor]) -> Optional[Tensor]:
    """An additive mask with one more key (at the end) that nothing masks."""
    return None if mask is None else mask.pad(((0, 0),) * (mask.ndim - 1) + ((0, 1),))


def _heads(x: Tensor, static: Optional[Tensor], bsz: int, num_heads: int, head_dim: int, name: str) -> Tensor:
    if static is None:
        return x.reshape(x.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    static = as_tensor(static, x)
    _check(static.ndim == 3 and static.shape[0] == bsz * num_heads and static.shape[2] == head_dim,
           f"{name} must have shape (N * num_heads, S, head_dim) = ({bsz * num_heads}, S, {head_dim}), "
           f"got {static.shape}")
    return static.reshape(bsz, num_heads, static.shape[1], head_dim)


__all__ = ["dropout", "scaled_dot_product_attention", "multi_head_attention_forward"]
