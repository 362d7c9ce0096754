"""Attention and transformer layers against PyTorch (lazytensor/nn/attention.py, transformer.py).

- F.scaled_dot_product_attention: values and the gradients of query, key and value against
  torch's, with bool and float masks, is_causal (square and not), scale, grouped-query heads,
  rows with every key masked (zeros, as torch), and the errors for bad shapes;
- nn.MultiheadAttention: torch's module and weights (its state_dict loaded), batch_first both
  ways, self- and cross-attention, kdim/vdim, add_bias_kv, add_zero_attn, bias=False, every mask
  (bool and float attn_mask 2-D and 3-D, key_padding_mask, both, is_causal), need_weights and
  average_attn_weights, unbatched inputs: outputs, weights, and the gradients of the inputs and
  every parameter;
- nn.TransformerEncoderLayer and nn.TransformerEncoder likewise (relu/gelu, norm_first,
  batch_first, bias=False, masks); dropout checked statistically and eval mode deterministic;
- a small attention block on every device, and a training step of a layer under lt.jit.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched", "ignore:enable_nested_tensor is True")

L, S, N, E, H = 7, 5, 3, 12, 3     # odd sizes: query length, key length, batch, embedding, heads
TOL = dict(rtol=2e-4, atol=2e-5)    # float32 against torch's float32
GRAD_TOL = dict(rtol=2e-4, atol=1e-4)


def as_lt(t, device="cpu", grad=False):
    return lt.asarray(t.detach().numpy(), device=device, requires_grad=grad)


def assert_close(got, want, **tol):
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    np.testing.assert_allclose(got.numpy(), want, **(tol or TOL))


def randomize(module, seed=0):
    """Every parameter of a torch module N(0, 0.3^2) (biases too: torch zeroes some)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return module


# ---- scaled_dot_product_attention ---------------------------------------------------------------

def _sdpa_inputs(rng, q_shape, k_shape, v_shape, dtype):
    return [torch.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in (q_shape, k_shape, v_shape)]


SDPA_CASES = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "bool_mask": dict(mask="bool", mask_shape=(L, S)),
    "float_mask": dict(mask="float", mask_shape=(N, 1, L, S)),
    "bool_mask_per_head": dict(mask="bool", mask_shape=(N, H, L, S)),
    "scale": dict(scale=0.3),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", SDPA_CASES, ids=list(SDPA_CASES))
def test_sdpa_matches_torch(case, dtype):
    spec = SDPA_CASES[case]
    rng = np.random.default_rng(1)
    tq, tk, tv = _sdpa_inputs(rng, (N, H, L, 4), (N, H, S, 4), (N, H, S, 6), dtype)
    kwargs, lt_kwargs = {}, {}
    if "mask" in spec:
        if spec["mask"] == "bool":
            mask = rng.random(spec["mask_shape"]) > 0.3
            mask[..., 0] = True   # every query keeps a key
        else:
            mask = rng.standard_normal(spec["mask_shape"]).astype(dtype)
            mask[..., 1] = -np.inf
        kwargs["attn_mask"], lt_kwargs["attn_mask"] = torch.tensor(mask), lt.asarray(mask)
    for name in ("is_causal", "scale"):
        if name in spec:
            kwargs[name] = lt_kwargs[name] = spec[name]
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **kwargs)
    q, k, v = (as_lt(t, grad=True) for t in (tq, tk, tv))
    got = F.scaled_dot_product_attention(q, k, v, **lt_kwargs)
    tol = TOL if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    assert got.dtype == lt.asarray(np.zeros(1, dtype)).dtype
    assert_close(got, want, **tol)
    weight = rng.standard_normal(want.shape).astype(dtype)
    (want * torch.tensor(weight)).sum().backward()
    (got * lt.asarray(weight)).sum().backward()
    for mine, theirs in ((q, tq), (k, tk), (v, tv)):
        assert_close(mine.grad, theirs.grad, **(GRAD_TOL if dtype == np.float32 else tol))


@pytest.mark.parametrize("lengths", [(4, 6), (6, 4), (1, 5)], ids=["wide", "tall", "one_query"])
def test_sdpa_causal_is_top_left_aligned_as_torch(lengths):
    l, s = lengths
    rng = np.random.default_rng(2)
    tq, tk, tv = _sdpa_inputs(rng, (2, l, 3), (2, s, 3), (2, s, 3), np.float64)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    got = F.scaled_dot_product_attention(*(as_lt(t) for t in (tq, tk, tv)), is_causal=True)
    assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_sdpa_row_with_every_key_masked_is_zero_as_torch():
    rng = np.random.default_rng(3)
    tq, tk, tv = _sdpa_inputs(rng, (2, L, 4), (2, S, 4), (2, S, 4), np.float32)
    mask = rng.random((2, L, S)) > 0.5
    mask[:, 0] = True
    mask[0, 2] = False   # query 2 of batch 0 may attend nothing
    mask[1, 4] = False
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(mask))
    q, k, v = (as_lt(t, grad=True) for t in (tq, tk, tv))
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=lt.asarray(mask))
    assert_close(got, want)
    assert not got.numpy()[0, 2].any()
    want.sum().backward()
    got.sum().backward()
    for mine, theirs in ((q, tq), (k, tk), (v, tv)):
        assert np.isfinite(mine.grad.numpy()).all()
        assert_close(mine.grad, theirs.grad, **GRAD_TOL)


def test_sdpa_grouped_query_heads_match_torch():
    rng = np.random.default_rng(4)
    tq, tk, tv = _sdpa_inputs(rng, (2, 6, L, 4), (2, 2, S, 4), (2, 2, S, 4), np.float64)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True)
    q, k, v = (as_lt(t, grad=True) for t in (tq, tk, tv))
    got = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert_close(got, want, rtol=1e-10, atol=1e-12)
    want.sum().backward()
    got.sum().backward()
    assert_close(k.grad, tk.grad, rtol=1e-10, atol=1e-12)


def test_sdpa_broadcasts_batch_axes_and_takes_3d_inputs():
    rng = np.random.default_rng(5)
    tq, tk, tv = _sdpa_inputs(rng, (L, 4), (S, 4), (S, 2), np.float64)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
    assert_close(F.scaled_dot_product_attention(*(as_lt(t) for t in (tq, tk, tv))), want, rtol=1e-10, atol=1e-12)


def test_sdpa_dropout_drops_and_rescales():
    lt.manual_seed(0)
    q, k = lt.zeros((4, 64, 8)), lt.zeros((4, 64, 8))
    v = lt.ones((4, 64, 1))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    # uniform weights 1/64, each kept with p 0.5 and doubled: mean 1, std sqrt(1/64)
    assert abs(out.mean() - 1) < 0.05 and 0.08 < out.std() < 0.17
    assert np.allclose(F.scaled_dot_product_attention(q, k, v).numpy(), 1, atol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=lt.ones((5, 5), dtype=lt.bool)), "broadcast"),
    (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=lt.ones((7, 7)), is_causal=True), "not both"),
    (lambda q: F.scaled_dot_product_attention(q, lt.ones((2, 7, 3)), q), "last axis"),
    (lambda q: F.scaled_dot_product_attention(q, q, lt.ones((2, 6, 4))), "sequence length"),
    (lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=lt.ones((7, 7), dtype=lt.int32)), "bool or"),
    (lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=2.0), "dropout_p"),
], ids=["mask_shape", "mask_and_causal", "key_width", "value_length", "int_mask", "dropout_p"])
def test_sdpa_errors(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(lt.ones((2, 7, 4)))


# ---- MultiheadAttention ------------------------------------------------------------------------

def _masks(rng, spec, s, batched=True):
    """(torch kwargs, lazytensor kwargs) for the masks `spec` names, for S = `s` keys."""
    t, m = {}, {}
    n_heads = N * H if batched else H

    def put(name, array):
        t[name], m[name] = torch.tensor(array), lt.asarray(array)

    kind = spec.get("attn_mask")
    if kind in ("bool", "bool3"):
        mask = rng.random((L, s) if kind == "bool" else (n_heads, L, s)) < 0.3
        mask[..., 0] = False   # (True: not allowed) every query keeps key 0
        put("attn_mask", mask)
    elif kind in ("float", "float3"):
        mask = rng.standard_normal((L, s) if kind == "float" else (n_heads, L, s)).astype(np.float32)
        mask[..., 2] = -np.inf
        put("attn_mask", mask)
    elif kind == "causal":
        put("attn_mask", np.triu(np.full((L, s), -np.inf, np.float32), 1))
    kind = spec.get("key_padding_mask")
    if kind is not None:
        pad = rng.random((N, s) if batched else (s,)) < 0.4
        pad[..., 0] = False
        put("key_padding_mask", pad if kind == "bool" else np.where(pad, -np.inf, 0).astype(np.float32))
    for name in ("need_weights", "average_attn_weights", "is_causal"):
        if name in spec:
            t[name] = m[name] = spec[name]
    return t, m


def _compare_mha(module_kwargs, spec, batch_first=False, self_attention=False, batched=True, seed=0):
    """torch's MultiheadAttention and ours with its weights on the same inputs and masks:
    outputs, weights, and the gradients of the inputs and every parameter."""
    rng = np.random.default_rng(seed)
    kdim, vdim = module_kwargs.get("kdim", E), module_kwargs.get("vdim", E)
    tm = randomize(torch.nn.MultiheadAttention(E, H, batch_first=batch_first, **module_kwargs), seed)
    m = nn.MultiheadAttention(E, H, batch_first=batch_first, **module_kwargs)
    m.load_state_dict(tm.state_dict())
    s = L if self_attention or spec.get("attn_mask") == "causal" else S

    def shape(length, width):
        if not batched:
            return (length, width)
        return (N, length, width) if batch_first else (length, N, width)

    if self_attention:   # one tensor as query, key and value (the packed projection)
        arrays = [rng.standard_normal(shape(L, E)).astype(np.float32)]
    else:
        arrays = [rng.standard_normal(shape(n, w)).astype(np.float32) for n, w in ((L, E), (s, kdim), (s, vdim))]
    torch_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    lt_inputs = [lt.asarray(a, requires_grad=True) for a in arrays]
    three = (lambda xs: xs * 3) if self_attention else (lambda xs: xs)
    t_kwargs, m_kwargs = _masks(rng, spec, s, batched)
    t_out, t_w = tm(*three(torch_inputs), **t_kwargs)
    out, w = m(*three(lt_inputs), **m_kwargs)
    assert out.shape == tuple(t_out.shape)
    assert_close(out, t_out)
    assert (w is None) == (t_w is None)
    r = np.cos(np.arange(t_out.numel())).reshape(t_out.shape).astype(np.float32)
    loss_t, loss = (t_out * torch.tensor(r)).sum(), (out * lt.asarray(r)).sum()
    if w is not None:
        assert w.shape == tuple(t_w.shape)
        assert_close(w, t_w)
        loss_t, loss = loss_t + (t_w * t_w).sum(), loss + (w * w).sum()
    loss_t.backward()
    loss.backward()
    for mine, theirs in zip(lt_inputs, torch_inputs):
        assert_close(mine.grad, theirs.grad, **GRAD_TOL)
    theirs = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        assert_close(p.grad, theirs[name].grad, **GRAD_TOL)


MHA_MASKS = {
    "none": {},
    "bool_2d": {"attn_mask": "bool"},
    "float_3d": {"attn_mask": "float3"},
    "bool_3d": {"attn_mask": "bool3"},
    "padding": {"key_padding_mask": "bool"},
    "float_padding_and_bool_mask": {"key_padding_mask": "float", "attn_mask": "bool"},
    "padding_no_weights": {"key_padding_mask": "bool", "attn_mask": "float", "need_weights": False},
    "per_head_weights": {"attn_mask": "bool", "average_attn_weights": False},
    "causal_hint": {"attn_mask": "causal", "is_causal": True, "need_weights": False},
    "causal_hint_with_weights": {"attn_mask": "causal", "is_causal": True},
}


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("masks", MHA_MASKS, ids=list(MHA_MASKS))
def test_mha_matches_torch(masks, batch_first):
    _compare_mha({}, MHA_MASKS[masks], batch_first=batch_first)


@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("masks", ["none", "padding", "causal_hint"])
def test_mha_self_attention_matches_torch(masks, batch_first):
    _compare_mha({}, MHA_MASKS[masks], batch_first=batch_first, self_attention=True)


MHA_OPTIONS = {
    "kdim_vdim": dict(kdim=5, vdim=7),
    "bias_kv": dict(add_bias_kv=True),
    "zero_attn": dict(add_zero_attn=True),
    "bias_kv_zero_attn_kdim": dict(add_bias_kv=True, add_zero_attn=True, kdim=5, vdim=7),
    "no_bias": dict(bias=False),
}


@pytest.mark.parametrize("masks", ["none", "float_padding_and_bool_mask", "padding_no_weights"])
@pytest.mark.parametrize("options", MHA_OPTIONS, ids=list(MHA_OPTIONS))
def test_mha_options_match_torch(options, masks):
    _compare_mha(MHA_OPTIONS[options], MHA_MASKS[masks], batch_first=True)


@pytest.mark.parametrize("masks", ["none", "bool_3d", "padding", "per_head_weights", "padding_no_weights"])
def test_mha_unbatched_matches_torch(masks):
    _compare_mha({}, MHA_MASKS[masks], batched=False)


def test_functional_mha_with_static_key_and_value_matches_torch():
    rng = np.random.default_rng(8)
    arrays = dict(query=(L, N, E), key=(S, N, E), value=(S, N, E), in_proj_weight=(3 * E, E),
                  in_proj_bias=(3 * E,), out_proj_weight=(E, E), static_k=(N * H, S + 2, E // H),
                  static_v=(N * H, S + 2, E // H))
    arrays = {k: rng.standard_normal(s).astype(np.float32) for k, s in arrays.items()}
    pad = rng.random((N, S + 2)) < 0.3
    pad[:, 0] = False

    def call(functional, convert):
        a = {k: convert(v) for k, v in arrays.items()}
        return functional.multi_head_attention_forward(
            a["query"], a["key"], a["value"], E, H, a["in_proj_weight"], a["in_proj_bias"], None, None, False, 0.0,
            a["out_proj_weight"], None, key_padding_mask=convert(pad), static_k=a["static_k"],
            static_v=a["static_v"], average_attn_weights=False)

    want, got = call(torch.nn.functional, torch.tensor), call(F, lt.asarray)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


def test_mha_parameter_names_and_init_as_torch():
    tm = torch.nn.MultiheadAttention(E, H, kdim=5, vdim=7, add_bias_kv=True)
    m = nn.MultiheadAttention(E, H, kdim=5, vdim=7, add_bias_kv=True)
    assert list(m.state_dict()) == list(tm.state_dict())
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    m = nn.MultiheadAttention(E, H)
    assert list(m.state_dict()) == list(torch.nn.MultiheadAttention(E, H).state_dict())
    assert not m.in_proj_bias.numpy().any() and not m.out_proj.bias.numpy().any()
    bound = math.sqrt(6 / (E + 3 * E))   # xavier_uniform_ of the (3E, E) in_proj_weight
    w = m.in_proj_weight.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_mha_row_with_every_key_masked_matches_torch():
    """A batch element whose keys are all padding: NaN with need_weights (torch's explicit
    softmax), zeros (then out_proj's bias) without (its scaled_dot_product_attention)."""
    rng = np.random.default_rng(7)
    tm = randomize(torch.nn.MultiheadAttention(E, H))
    m = nn.MultiheadAttention(E, H)
    m.load_state_dict(tm.state_dict())
    x = rng.standard_normal((L, N, E)).astype(np.float32)
    pad = np.zeros((N, L), bool)
    pad[1] = True
    for need_weights in (True, False):
        want = tm(*[torch.tensor(x)] * 3, key_padding_mask=torch.tensor(pad), need_weights=need_weights)[0]
        got = m(*[lt.asarray(x)] * 3, key_padding_mask=lt.asarray(pad), need_weights=need_weights)[0]
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), equal_nan=True, **TOL)
        assert np.isnan(got.numpy()[:, 1]).all() == need_weights


def test_mha_dropout_in_training_only():
    m = nn.MultiheadAttention(E, H, dropout=0.5)
    x = lt.randn(L, N, E, seed=1)
    a, b = m(x, x, x)[0].numpy(), m(x, x, x)[0].numpy()
    assert not np.allclose(a, b)
    m.eval()
    a, b = m(x, x, x)[0].numpy(), m(x, x, x)[0].numpy()
    np.testing.assert_array_equal(a, b)
    _, weights = m.train()(x, x, x, average_attn_weights=False)
    w = weights.numpy()
    assert 0.3 < (w == 0).mean() < 0.7   # weights dropped with p 0.5 (returned after dropout, as torch)


@pytest.mark.parametrize("call, message", [
    (lambda: nn.MultiheadAttention(10, 3), "divisible"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, E)), lt.ones((S, N, E)), lt.ones((S, N, E)),
                                         attn_mask=lt.ones((L, L), dtype=lt.bool)), "2-D attn_mask"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, E)), lt.ones((S, N, E)), lt.ones((S, N, E)),
                                         attn_mask=lt.ones((N, L, S), dtype=lt.bool)), "3-D attn_mask"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, E)), lt.ones((S, N, E)), lt.ones((S, N, E)),
                                         key_padding_mask=lt.ones((N, L), dtype=lt.bool)), "key_padding_mask"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, E)), lt.ones((L, N, E)), lt.ones((L, N, E)),
                                         is_causal=True), "is_causal"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, 8)), lt.ones((L, N, 8)), lt.ones((L, N, 8))),
     "embedding dimension"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, E)), lt.ones((S, 2, E)), lt.ones((S, 2, E))), "batch"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((N, L, E, 1)), lt.ones((S, N, E)), lt.ones((S, N, E))), "query"),
    (lambda: nn.MultiheadAttention(E, H)(lt.ones((L, N, E)), lt.ones((S, N, E)), lt.ones((S, N, E)),
                                         attn_mask=lt.zeros((L, S), dtype=lt.int32)), "bool or floating"),
], ids=["heads", "mask_2d", "mask_3d", "padding", "causal_without_mask", "embed_dim", "batch", "ndim", "int_mask"])
def test_mha_errors(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


# ---- TransformerEncoderLayer / TransformerEncoder ----------------------------------------------

def _compare_encoder(t_module, module, batch_first, masks, layer_kwargs=None, grads=True):
    module.load_state_dict(t_module.state_dict())
    rng = np.random.default_rng(11)
    x = rng.standard_normal((N, L, E) if batch_first else (L, N, E)).astype(np.float32)
    t_kwargs, m_kwargs = {}, {}
    if "causal" in masks:
        causal = np.triu(np.full((L, L), -np.inf, np.float32), 1)
        t_kwargs["mask"], m_kwargs["mask"] = torch.tensor(causal), lt.asarray(causal)
        if "hint" in masks:
            t_kwargs["is_causal"] = m_kwargs["is_causal"] = True
    if "bool_mask" in masks:
        mask = rng.random((L, L)) < 0.3
        np.fill_diagonal(mask, False)
        t_kwargs["mask"], m_kwargs["mask"] = torch.tensor(mask), lt.asarray(mask)
    if "padding" in masks:
        pad = rng.random((N, L)) < 0.3
        pad[:, 0] = False
        t_kwargs["src_key_padding_mask"], m_kwargs["src_key_padding_mask"] = torch.tensor(pad), lt.asarray(pad)
    if isinstance(t_module, torch.nn.TransformerEncoderLayer):
        t_kwargs = {("src_mask" if k == "mask" else k): v for k, v in t_kwargs.items()}
        m_kwargs = {("src_mask" if k == "mask" else k): v for k, v in m_kwargs.items()}
    tx, mx = torch.tensor(x, requires_grad=True), lt.asarray(x, requires_grad=True)
    want, got = t_module(tx, **t_kwargs), module(mx, **m_kwargs)
    assert_close(got, want, rtol=5e-4, atol=5e-5)
    if not grads:
        return
    r = np.sin(np.arange(x.size)).reshape(x.shape).astype(np.float32)
    (want * torch.tensor(r)).sum().backward()
    (got * lt.asarray(r)).sum().backward()
    assert_close(mx.grad, tx.grad, rtol=1e-3, atol=2e-4)
    theirs = dict(t_module.named_parameters())
    for name, p in module.named_parameters():
        assert_close(p.grad, theirs[name].grad, rtol=1e-3, atol=2e-4)


LAYER_CASES = {
    "relu_post_norm": dict(),
    "gelu_pre_norm": dict(activation="gelu", norm_first=True),
    "no_bias": dict(bias=False, norm_first=True),
    "eps": dict(layer_norm_eps=1e-3, activation="gelu"),
}


# every mask both ways for the default layer; each other configuration with two of them
LAYER_MATRIX = [("relu_post_norm", batch_first, masks) for batch_first in (False, True)
                for masks in ("", "causal", "causal_hint", "padding", "bool_mask_padding")] + \
               [(case, batch_first, masks) for case in list(LAYER_CASES)[1:]
                for batch_first, masks in ((True, "causal_hint"), (False, "padding"))]


@pytest.mark.parametrize("case, batch_first, masks", LAYER_MATRIX,
                         ids=[f"{c}-{'batch_first' if b else 'seq_first'}-{m or 'no_mask'}" for c, b, m in LAYER_MATRIX])
def test_encoder_layer_matches_torch(case, batch_first, masks):
    kwargs = dict(dim_feedforward=20, dropout=0.0, batch_first=batch_first, **LAYER_CASES[case])
    tl = randomize(torch.nn.TransformerEncoderLayer(E, H, **kwargs))
    _compare_encoder(tl, nn.TransformerEncoderLayer(E, H, **kwargs), batch_first, masks)


def test_encoder_layer_callable_activation_and_unbatched():
    kwargs = dict(dim_feedforward=20, dropout=0.0, activation=torch.nn.functional.silu)
    tl = randomize(torch.nn.TransformerEncoderLayer(E, H, **kwargs))
    layer = nn.TransformerEncoderLayer(E, H, **{**kwargs, "activation": F.silu})
    layer.load_state_dict(tl.state_dict())
    x = np.random.default_rng(0).standard_normal((L, E)).astype(np.float32)
    assert_close(layer(lt.asarray(x)), tl(torch.tensor(x)), rtol=5e-4, atol=5e-5)


@pytest.mark.parametrize("masks", ["", "causal", "padding"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_encoder_matches_torch(batch_first, masks):
    kwargs = dict(dim_feedforward=20, dropout=0.0, batch_first=batch_first, norm_first=True)
    t_encoder = randomize(torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, **kwargs), 2,
                                                      norm=torch.nn.LayerNorm(E), enable_nested_tensor=False))
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, **kwargs), 2, norm=nn.LayerNorm(E))
    assert list(encoder.state_dict()) == list(t_encoder.state_dict())
    _compare_encoder(t_encoder, encoder, batch_first, masks)


def test_encoder_layers_are_copies():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, dim_feedforward=8), 2)
    a, b = encoder.layers[0].linear1.weight, encoder.layers[1].linear1.weight
    assert a is not b and np.array_equal(a.numpy(), b.numpy())
    assert len(list(encoder.parameters())) == 2 * len(list(encoder.layers[0].parameters()))


def test_encoder_layer_dropout_trains_and_evals():
    layer = nn.TransformerEncoderLayer(E, H, dim_feedforward=20, dropout=0.3)
    x = lt.randn(L, N, E, seed=2)
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())
    tl = torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=20, dropout=0.3).eval()
    layer.load_state_dict(tl.state_dict())
    with torch.no_grad():
        assert_close(layer(x), tl(torch.tensor(x.numpy())), rtol=5e-4, atol=5e-5)


def test_encoder_layer_errors():
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(E, H, activation="tanh")
    with pytest.raises(ValueError, match="divisible"):
        nn.TransformerEncoderLayer(10, 3)


# ---- devices and lt.jit ------------------------------------------------------------------------

def test_attention_block_on_every_device(device):
    """A causal self-attention layer (batch_first) with a padding mask: forward and backward
    against torch on `device`, small (an OpenCL kernel takes a while to build)."""
    e, h, n, l = 8, 2, 2, 5
    tm = randomize(torch.nn.MultiheadAttention(e, h, batch_first=True))
    m = nn.MultiheadAttention(e, h, batch_first=True).to(device)
    m.load_state_dict(tm.state_dict())
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, l, e)).astype(np.float32)
    causal = np.triu(np.ones((l, l), bool), 1)
    tx, mx = torch.tensor(x, requires_grad=True), lt.asarray(x, device=device, requires_grad=True)
    want = tm(tx, tx, tx, attn_mask=torch.tensor(causal), need_weights=False)[0]
    got = m(mx, mx, mx, attn_mask=lt.asarray(causal, device=device), need_weights=False)[0]
    assert got.device == device
    assert_close(got, want)
    want.sum().backward()
    got.sum().backward()
    assert_close(mx.grad, tx.grad, **GRAD_TOL)
    assert_close(m.in_proj_weight.grad, tm.in_proj_weight.grad, **GRAD_TOL)
    q = lt.asarray(x.reshape(n, l, h, e // h).transpose(0, 2, 1, 3).copy(), device=device)
    want = torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(q.numpy())] * 3, is_causal=True)
    assert_close(F.scaled_dot_product_attention(q, q, q, is_causal=True), want)


def test_encoder_layer_training_step_under_jit():
    """A step (forward, backward, clip_grad_norm_, AdamW) of an encoder layer under lt.jit gives
    the eager step's parameters."""
    x = lt.randn(N, L, E, seed=4)
    target = lt.randn(N, L, E, seed=5)

    def make():
        lt.manual_seed(0)
        layer = nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
        return layer, lt.optim.AdamW(layer.parameters(), lr=1e-2)

    def step(layer, optimizer, x, target):
        optimizer.zero_grad()
        loss = F.mse_loss(layer(x, is_causal=True, src_mask=_causal_mask(L)), target)
        loss.backward()
        nn.utils.clip_grad_norm_(layer.parameters(), 0.5)
        optimizer.step()
        return loss

    eager, eager_opt = make()
    jitted, jitted_opt = make()
    jit_step = lt.jit(lambda x, t: step(jitted, jitted_opt, x, t))
    for _ in range(3):
        a = step(eager, eager_opt, x, target).item()
        b = jit_step(x, target).item()
        assert abs(a - b) < 1e-5
    for (name, p), q in zip(eager.named_parameters(), jitted.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert lt.stats()["jit_replays"] > 0


def _causal_mask(n):
    return lt.asarray(np.triu(np.full((n, n), -np.inf, np.float32), 1))
