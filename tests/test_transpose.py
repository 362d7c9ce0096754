"""Transposing copies (x.T, permutes) run in blocks on the cpu: the heuristic schedule, and its
values against numpy for odd shapes, reversed and stepped views, every dtype and fused math."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array
from lazytensor import pipeline
from lazytensor.devices import runtime
from lazytensor.scheduler.schedule import Reorder, Split, Vectorize


def _schedule(out: lt.Tensor):
    target = runtime("cpu").device.target
    (spec,) = pipeline.kernels([out.node], target).kernels
    return pipeline.loops(spec, target)[1]


def test_a_transposing_copy_runs_in_blocks():
    """Blocks along the source's contiguous axis (its lines stay in cache until used up) by one
    vector along the output's; a copy that reads along its rows keeps the plain schedule."""
    x = lt.asarray(np.ones((512, 2048), np.float32))
    blocked = _schedule(x.T + 1.0)
    assert any(isinstance(p, Split) and p.axis == "i0" for p in blocked), blocked
    assert any(isinstance(p, Vectorize) and p.axis == "i1_i" for p in blocked), blocked
    assert not any(isinstance(p, Reorder) for p in _schedule(x + 1.0))
    assert not any(isinstance(p, Reorder) for p in _schedule(lt.asarray(np.ones((3000, 7), np.float32)).T + 1.0))


VIEWS = {
    "T": lambda v: v.T,
    "T-odd": lambda v: v[:37].T,
    "reversed": lambda v: v[::-1, ::-1].T,
    "stepped": lambda v: v[::2, 1::3].T,
    "permute3": lambda v: v.reshape(8, 20, 150).permute(2, 0, 1),
    "permute3-last": lambda v: v.reshape(8, 20, 150).permute(0, 2, 1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int64", "bool"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_transposes_match_numpy(view, dtype):
    rng = np.random.default_rng(11)
    a = random_array(rng, (160, 150), np.dtype(dtype))
    got = VIEWS[view](lt.asarray(a)).contiguous().numpy()
    want = VIEWS[view](a) if view not in ("permute3", "permute3-last") else \
        a.reshape(8, 20, 150).transpose((2, 0, 1) if view == "permute3" else (0, 2, 1))
    np.testing.assert_array_equal(got, want)


def test_transpose_fused_with_math():
    """The blocked copy with other operands read along its rows and a broadcast, in one kernel."""
    rng = np.random.default_rng(12)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((300, 200), (200, 300), (300,)))
    x, y, z = lt.asarray(a), lt.asarray(b), lt.asarray(c)
    np.testing.assert_allclose((x.T * 2 + y - z).numpy(), a.T * 2 + b - c, rtol=1e-6)


# ---- a reduction's operand read down long rows is copied transposed first (fusion) ------------

AVX2 = __import__("dataclasses").replace(runtime("cpu").device.target, simd_bytes=32, vector_registers=16,
                                          cores=2, l2_bytes=512 * 1024)


def _roots(out: lt.Tensor, target=AVX2) -> list:
    return [spec.root for spec in pipeline.kernels([out.node], target).kernels]


def test_weight_gradients_read_a_transposed_copy():
    """g.T @ x over 2048 rows: g, broadcast along the tile's columns, is read down its columns
    (rows 2 KB apart); it is copied transposed (a PERMUTE kernel) and the product reads the copy
    along K. Not where K is short, nor for x @ w.T or g @ w, whose operands run along K already
    or along the tile's columns, nor where the last axis holds no whole tile."""
    from lazytensor.ir.ops import Op
    g, x = lt.asarray(np.ones((2048, 512), np.float32)), lt.asarray(np.ones((2048, 128), np.float32))
    roots = _roots(g.T @ x)
    assert [r.op for r in roots[:1]] == [Op.PERMUTE] and roots[0].shape == (512, 2048), roots
    merged = lt.asarray(np.ones((32, 64, 512), np.float32)).reshape(2048, 512)   # K from two axes
    assert _roots(merged.T @ x)[0].op is Op.PERMUTE
    w = lt.asarray(np.ones((128, 512), np.float32))
    for out in (g[:64].T @ x[:64], x @ w, g.T @ x[:, :100]):
        assert not any(r.op is Op.PERMUTE for r in _roots(out)), _roots(out)


def test_a_linear_layers_weight_is_copied_transposed_where_many_rows_reuse_it():
    """x @ w.T: w runs along K across the tile's columns; where 256 rows or more reuse it (and
    the product is large), w is copied with its output axis last (a PERMUTE kernel) and the
    product runs in the tile of x @ w (1.1-1.4x faster at 2048 rows, copy included). Not for a
    few rows (a token's forward in generation: the copy would cost more than the product), nor
    where the tile's columns hold no whole tile, nor for a sum of other terms than products
    (pairwise distances ran 1.8-2.5x slower so)."""
    from lazytensor.ir.ops import Op
    g, w = lt.asarray(np.ones((2048, 512), np.float32)), lt.asarray(np.ones((128, 512), np.float32))
    batched = lt.asarray(np.ones((32, 64, 512), np.float32))
    for out in (g @ w.T, batched @ w.T):
        roots = _roots(out)
        assert roots[0].op is Op.PERMUTE and roots[0].shape == (512, 128), roots
    for out in (g[:64] @ w.T, g[:1] @ w.T, g @ w[:100].T, ((g[:, None, :] - w[None, :, :]) ** 2).sum(-1)):
        assert not any(r.op is Op.PERMUTE for r in _roots(out)), _roots(out)


def test_a_transposed_copy_is_read_only_by_the_kernels_that_want_it():
    """Two Linear layers, out = (x @ w1.T) @ w2.T, and w1's gradient: w2 is copied transposed
    for the forward, and that copy is the graph's own node w2.T, which the gradient's product
    g @ w2 reads w2 through (autograd reuses the forward's operands). That product reads w2
    itself, in the tile of x @ w; where the forward's kernel was built first, it used to read
    the copy back down K (dot products: 77 GFLOP/s in a GPT's training step, where the tile
    runs at 175)."""
    from lazytensor.autograd import gradients
    from lazytensor.ir.ops import Op
    from lazytensor.ir.passes import const
    rng = np.random.default_rng(16)
    xs, gs, w1s, w2s = (rng.standard_normal(s).astype(np.float32)
                        for s in ((2048, 128), (2048, 128), (512, 128), (128, 512)))
    x, w1, w2 = lt.asarray(xs), lt.asarray(w1s).requires_grad_(), lt.asarray(w2s).requires_grad_()
    out = (x @ w1.T) @ w2.T
    loss = (out * lt.asarray(gs)).sum()
    grad = gradients(loss.node, const(1.0, loss.dtype, ()))[w1.node]
    for roots in ([out.node, grad], [grad, out.node]):   # (either built first)
        specs = pipeline.kernels(roots, AVX2).kernels
        copy = next(spec.root for spec in specs if spec.root.op is Op.PERMUTE and spec.root.shape == (512, 128))
        readers = [spec.root for spec in specs if copy in spec.inputs]
        assert [r.shape for r in readers] == [(2048, 1, 128)], readers   # (the forward's second product only)
    loss.backward()
    want = (gs.astype(np.float64) @ w2s).T @ xs
    np.testing.assert_allclose(w1.grad.numpy(), want, rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(out.numpy(), (xs.astype(np.float64) @ w1s.T) @ w2s.T, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("case", ["linear", "linear-batched", "linear-bias-gelu", "linear-reversed"])
def test_linear_forwards_through_a_transposed_copy_match_numpy(case):
    rng = np.random.default_rng(15)
    x, w = rng.standard_normal((640, 112)).astype(np.float32), rng.standard_normal((272, 112)).astype(np.float32)
    b = rng.standard_normal(272).astype(np.float32)
    lx, lw = lt.asarray(x), lt.asarray(w)
    if case == "linear-reversed":
        lw, w = lw[::-1], w[::-1]
    if case == "linear-batched":
        lx, x = lx.reshape(5, 128, 112), x.reshape(5, 128, 112)
    out, want = lx @ lw.T, x.astype(np.float64) @ w.T.astype(np.float64)
    if case == "linear-bias-gelu":
        out, want = lt.nn.functional.gelu(out + lt.asarray(b), approximate="tanh"), want + b
        want = 0.5 * want * (1 + np.tanh(np.sqrt(2 / np.pi) * (want + 0.044715 * want ** 3)))
    if case != "linear-reversed":   # (a reversed w is read as it is)
        assert any(r.op.name == "PERMUTE" for r in _roots(out)), _roots(out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", ["plain", "reversed", "merged", "fused", "f64", "bias-epilogue"])
def test_products_through_a_transposed_copy_match_numpy(case):
    rng = np.random.default_rng(13)
    dtype = np.float64 if case == "f64" else np.float32
    g, x = rng.standard_normal((1536, 384)).astype(dtype), rng.standard_normal((1536, 160)).astype(dtype)
    lg, lx = lt.asarray(g), lt.asarray(x)
    if case == "reversed":
        lg, g = lg[::-1], g[::-1]
    if case == "merged":
        lg = lt.asarray(g.reshape(24, 64, 384)).reshape(1536, 384)
    if case == "fused":   # an elementwise operand (a GELU's gradient, say) computed into memory first
        lg, g = lg * (lx[:, :1] > 0), g * (x[:, :1] > 0)
    out = lg.T @ lx
    want = g.T.astype(np.float64) @ x
    if case == "bias-epilogue":
        b = rng.standard_normal(160).astype(dtype)
        out, want = lt.maximum(out + lt.asarray(b), 0), np.maximum(want + b, 0)
    if case in ("plain", "merged", "fused"):   # (a reversed g is read as it is)
        assert any(r.op.name == "PERMUTE" for r in _roots(out)), _roots(out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-3)


def test_linear_weight_gradient_matches_numpy():
    """A Linear layer over (batch, time, features): its weight gradient sums over batch and time."""
    rng = np.random.default_rng(14)
    xs, ws = rng.standard_normal((16, 64, 256)).astype(np.float32), rng.standard_normal((128, 256)).astype(np.float32)
    x, w = lt.asarray(xs), lt.asarray(ws).requires_grad_()
    y = (x @ w.T).tanh()
    y.sum().backward()
    gy = 1 - np.tanh(xs @ ws.T) ** 2
    np.testing.assert_allclose(w.grad.numpy(), np.einsum("bto,bti->oi", gy, xs), rtol=1e-3, atol=1e-3)
