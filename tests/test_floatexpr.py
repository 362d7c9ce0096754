"""Composites built on graph nodes (lazytensor/floatexpr.py): nn.functional's linear,
layer_norm, gelu and softmax build, node for node, the graph their tensor operations build,
without a tensor at each step."""
import math

import numpy as np
import pytest

import lazytensor as lt
import lazytensor.nn.functional as F
from lazytensor.floatexpr import FloatExpr
from lazytensor.ir.ops import Op


def _written_out(name, x, w, b):
    """The composite as tensor operations (the path FloatExpr stands in for)."""
    if name == "linear":
        out = x @ w.T
        return out + b if b is not None else out
    if name == "layer_norm":
        axes = tuple(range(x.ndim - w.ndim, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        centered = x - mean
        var = (centered * centered).mean(axis=axes, keepdims=True)
        out = (x - mean) * (var + 1e-5) ** -0.5 * w.reshape(w.shape)
        return out + b.reshape(b.shape) if b is not None else out
    if name == "gelu":
        return 0.5 * x * (1 + lt.erf(x * (1 / math.sqrt(2))))
    e = (x - x.max(axis=-1, keepdims=True).detach()).exp()
    return e / e.sum(axis=-1, keepdims=True)


def _composite(name, x, w, b):
    if name == "linear":
        return F.linear(x, w, b)
    if name == "layer_norm":
        return F.layer_norm(x, w.shape, w, b)
    return F.gelu(x) if name == "gelu" else F.softmax(x, dim=-1)


def _operands(name, dtype, shape, rng, grad):
    x = lt.asarray(rng.standard_normal(shape).astype(dtype))
    features = shape[-1]
    w = lt.asarray(rng.standard_normal((7, features) if name == "linear" else shape[-1:]).astype(dtype))
    b = lt.asarray(rng.standard_normal(7 if name == "linear" else features).astype(dtype))
    if grad:
        for t in (x, w, b):
            t.requires_grad_()
    return x, w, b


@pytest.mark.parametrize("name", ["linear", "layer_norm", "gelu", "softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 9), (1, 1, 4), (3, 0, 6)])
@pytest.mark.parametrize("grad", [False, True])
def test_a_composite_builds_the_graph_its_tensor_operations_build(name, dtype, shape, grad):
    rng = np.random.default_rng(hash((name, shape)) % 2**32)
    x, w, b = _operands(name, dtype, shape, rng, grad)
    for bias in ((b, None) if name in ("linear", "layer_norm") else (b,)):
        got, want = _composite(name, x, w, bias), _written_out(name, x, w, bias)
        assert got.node is want.node and got.requires_grad == want.requires_grad == grad
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape


@pytest.mark.parametrize("name", ["linear", "layer_norm", "gelu", "softmax"])
def test_a_composite_under_no_grad_is_cut_from_the_graph(name):
    """Under no_grad the one result is cut from the graph (each step was, before): no gradient
    reaches the weights through it, and its values are the tensor path's."""
    rng = np.random.default_rng(3)
    x, w, b = _operands(name, np.float32, (4, 6), rng, grad=True)
    with lt.no_grad():
        got, want = _composite(name, x, w, b), _written_out(name, x, w, b)
    assert not got.requires_grad
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    (got.sum() + (2 * x).sum()).backward()   # only the second term carries a gradient
    np.testing.assert_array_equal(x.grad.numpy(), np.full(x.shape, 2, np.float32))
    assert w.grad is None and b.grad is None


@pytest.mark.parametrize("name", ["linear", "layer_norm"])
def test_mixed_dtypes_take_the_tensor_path_and_promote(name):
    """A float32 input with float64 weights (or an integer input) is no FloatExpr: the tensor
    operations promote as numpy does."""
    rng = np.random.default_rng(4)
    x, w, b = _operands(name, np.float32, (3, 5), rng, grad=False)
    w64 = w.astype(lt.float64)
    assert FloatExpr.of(x, w64, b) is None and FloatExpr.of(x.astype(lt.int32)) is None
    got = _composite(name, x, w64, b)
    assert got.dtype == lt.float64 and got.node is _written_out(name, x, w64, b).node


def test_linear_of_vectors_matches_numpy():
    """A 1-D input (a vector) takes the tensor path's rules: the product of a vector."""
    rng = np.random.default_rng(5)
    xs, ws, bs = rng.standard_normal(6), rng.standard_normal((4, 6)), rng.standard_normal(4)
    got = F.linear(lt.asarray(xs), lt.asarray(ws), lt.asarray(bs))
    np.testing.assert_allclose(got.numpy(), ws @ xs + bs, rtol=1e-12)


def test_a_norm_over_more_elements_than_float32_counts_exactly():
    """layer_norm over 2**24 elements and more: its mean divides by a count no small-int
    constant holds; the graph is still the tensor operations' (it raised a TypeError)."""
    x = lt.zeros((1, 1 << 12, 1 << 12 | 1))
    w = lt.ones((1 << 12, 1 << 12 | 1))
    got, want = F.layer_norm(x, w.shape, w, None), _written_out("layer_norm", x, w, None)
    assert got.node is want.node


@pytest.mark.parametrize("name", ["linear", "layer_norm", "gelu", "softmax"])
@pytest.mark.parametrize("tracking", [(), ("x",), ("w",), ("b",), ("x", "w", "b")])
def test_a_composite_knows_whether_its_result_tracks_as_autograd_would_find(name, tracking):
    """FloatExpr carries whether gradients flow to a leaf and marks the result's node with it
    (no walk over the nodes it made): the mark is what autograd's walk finds, whichever
    operands require grad, and under no_grad the result is cut exactly where it tracks."""
    from lazytensor.autograd import mark_tracks, tracks
    rng = np.random.default_rng(len(tracking))
    x, w, b = _operands(name, np.float32, (3, 5), rng, grad=False)
    for label, t in zip("xwb", (x, w, b)):
        if label in tracking:
            t.requires_grad_()
    got = _composite(name, x, w, b)
    marked = got.node.tracks
    mark_tracks(got.node, None)
    assert tracks(got.node) == marked
    assert got.requires_grad == marked
    assert marked == any(label in tracking for label in ("x" if name in ("gelu", "softmax") else "xwb"))
    with lt.no_grad():
        cut = _composite(name, x, w, b)
    assert not cut.requires_grad and (cut.node.op is Op.DETACH) == marked
