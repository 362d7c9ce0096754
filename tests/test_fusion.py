"""Fusion: kernel counts through lt.stats(), and the graph passes (folding, CSE, simplification)."""
import sys

import numpy as np
import pytest

import lazytensor as lt
from lazytensor import pipeline
from lazytensor.ir.graph import Node, toposort
from lazytensor.ir.ops import Op
from lazytensor.ir.passes import optimize
from conftest import assert_close


def kernels_for(*tensors) -> int:
    """How many kernels realizing `tensors` launches."""
    before = lt.stats()["kernels_launched"]
    lt.realize(*tensors)
    return lt.stats()["kernels_launched"] - before


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((33, 65)).astype(np.float32)
    y = rng.standard_normal((33, 65)).astype(np.float32)
    return x, y, lt.asarray(x), lt.asarray(y)


def test_elementwise_chain_is_one_kernel(data):
    x, y, X, Y = data
    out = ((X * Y + 1.0) * 0.5 - X.abs().sqrt()).maximum(Y) / (Y * Y + 1.0)
    assert kernels_for(out) == 1
    assert_close(out, np.maximum((x * y + 1) * 0.5 - np.sqrt(np.abs(x)), y) / (y * y + 1))


def test_sum_of_elementwise_is_one_kernel(data):
    x, y, X, Y = data
    out = (X * Y + 2.0).exp().sum()
    assert kernels_for(out) == 1
    np.testing.assert_allclose(out.numpy(), np.exp(x.astype(np.float64) * y + 2).sum(), rtol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, -1, (0, 1)])
def test_mean_and_reduce_epilogue_are_one_kernel(data, axis):
    x, _, X, _ = data
    out = X.mean(axis=axis)
    assert kernels_for(out) == 1
    np.testing.assert_allclose(out.numpy(), x.mean(axis=axis), rtol=1e-5, atol=1e-6)
    scaled = (X * X).sum(axis=axis, keepdims=True).sqrt() * 2.0
    assert kernels_for(scaled) == 1


def test_softmax_takes_at_most_three_kernels(data):
    x, _, X, _ = data
    e = (X - X.max(axis=-1, keepdims=True)).exp()
    out = e / e.sum(axis=-1, keepdims=True)
    assert kernels_for(out) <= 3
    ref = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), ref / ref.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


# ---- row ops in one kernel (cpu): reductions once per row, inside the kernel that reads them ------

def _softmax(X):
    e = (X - X.max(axis=-1, keepdims=True)).exp()
    return e / e.sum(axis=-1, keepdims=True)


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(X):
    centered = X - X.mean(axis=-1, keepdims=True)
    return centered / ((centered * centered).mean(axis=-1, keepdims=True) + 1e-5).sqrt()


def _np_layer_norm(x):
    centered = x - x.mean(-1, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(-1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("shape", [(33, 65), (2, 3, 17), (1, 40), (40, 1), (5, 1, 7), (0, 4), (1, 1, 128),
                                   (1, 1 << 17)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_row_ops_are_one_kernel_on_the_cpu(shape, dtype, op):
    """A softmax (a row max, then a row sum that reads it, then the elements) and a layer
    norm (a row mean, then a variance around it) are one cpu kernel each where there are
    several rows, or one short row (a generated token's). (A long single row keeps its
    reductions apart: in the kernel, nothing would run the row in parallel.)"""
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    fn, ref = (_softmax, _np_softmax) if op == "softmax" else (_layer_norm, _np_layer_norm)
    out = fn(lt.asarray(x))
    rows = int(np.prod(shape[:-1]))
    assert kernels_for(out) == (0 if not x.size else 1 if rows > 1 or x.size < 1 << 17 else 3)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out.numpy(), ref(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(3, 2, 9, 5), (2, 64, 32), (1, 7, 3)], ids=str)
@pytest.mark.parametrize("masked", [False, True])
def test_attention_softmax_of_a_matmul_is_one_kernel_after_it(shape, masked):
    """softmax(q @ k.T * scale [masked]): the matmul's (.., M, 1, N) result is viewed as (.., M, N)
    and the softmax's ops move into its index space; its row max and sum follow them there, so
    the softmax is one cpu kernel after the matmul's, not three."""
    rng = np.random.default_rng(len(shape))
    q, k = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    t = shape[-2]
    mask = np.tril(np.ones((t, t), bool))
    scores = q.astype(np.float64) @ np.swapaxes(k, -1, -2) * 0.3
    if masked:
        scores = np.where(mask, scores, -np.inf)
    want = np.exp(scores - scores.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    lq, lk = lt.asarray(q), lt.asarray(k)
    scores = lq @ lk.mT * 0.3
    if masked:
        scores = lt.where(lt.asarray(mask), scores, -np.inf)
    out = lt.nn.functional.softmax(scores, dim=-1)
    assert kernels_for(out) == 2
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


def test_row_ops_on_other_devices_realize_their_reductions(device):
    """The gpu schedules bind outputs to threads and would recompute a row's reductions for
    every element: there, each reduction is realized first (and the values are the same)."""
    x = np.random.default_rng(4).standard_normal((9, 70)).astype(np.float32)
    out = _softmax(lt.asarray(x, device=device))
    assert kernels_for(out) == (1 if device == "cpu" else 3)
    np.testing.assert_allclose(out.numpy(), _np_softmax(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", ["column-mean", "whole-mean", "permuted", "shared", "sum-of-row-maxes"])
def test_reductions_that_would_be_recomputed_are_realized(data, case):
    """Only a reduction broadcast along its reduced axes, which are the kernel's inner axes, is
    computed in the kernel that reads it: a column mean (a batch norm's) would be recomputed
    for every row, a whole-tensor mean in every parallel chunk (where the tensor is large
    enough to run in chunks); a reduction read through a permute or by two kernels, and one
    reduced again, are realized first as before."""
    x, _, X, _ = data
    if case == "column-mean":
        out, want = X - X.mean(axis=0, keepdims=True), x - x.mean(0, keepdims=True)
    elif case == "whole-mean":
        x = np.random.default_rng(8).standard_normal((512, 512)).astype(np.float32)
        X = lt.asarray(x)
        out, want = X - X.mean(), x - x.mean()
    elif case == "permuted":
        out, want = X.T - X.max(axis=1, keepdims=True).T, x.T - x.max(1, keepdims=True).T
    elif case == "shared":
        m = X.max(axis=1, keepdims=True)
        out, want = (X - m) * m.sum(), (x - x.max(1, keepdims=True)) * x.max(1).sum()
    else:
        out, want = (X - X.max(axis=1, keepdims=True)).sum(), (x - x.max(1, keepdims=True)).sum()
    # (shared: m, then the rest, with m's sum of 33 values computed before its loop: a short "row")
    assert kernels_for(out) == 2
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_small_whole_tensor_reduction_is_computed_in_the_kernel_that_reads_it(data):
    """x - x.mean() over fewer elements than run in parallel: one kernel, the mean computed once
    before its loop (a single short row, as a generated token's layer norm)."""
    x, _, X, _ = data
    out = X - X.mean()
    assert kernels_for(out) == 1
    np.testing.assert_allclose(out.numpy(), x - x.astype(np.float64).mean(), rtol=1e-5, atol=1e-5)


def test_a_value_a_reduction_broadcasts_is_computed_once(data):
    """A weight gradient reads `g * (h > 0)` once per column of x: it gets a kernel of its own
    (computed once) instead of being recomputed inside the reduction; a one-op value stays inline."""
    x, y, X, Y = data
    masked = (Y * 2.0).exp() * (X > 0)               # (33, 65), read 65 times per element below
    out = masked.T @ X
    assert kernels_for(out) == 2
    np.testing.assert_allclose(out.numpy(), (np.exp(y * 2) * (x > 0)).T @ x, rtol=1e-4, atol=1e-4)
    assert kernels_for((X * 2.0).T @ Y) == 1


def test_epilogues_after_a_dropped_axis_fuse_into_the_reduction(data):
    """matmul and sum(axis) drop their size-1 axis with a reshape; the elementwise work after it
    (bias, relu, scale) still runs in the reduction's kernel."""
    x, y, X, Y = data
    bias = np.linspace(-1, 1, 65).astype(np.float32)
    dense = lt.nn.functional.relu(X.T @ Y + lt.asarray(bias))
    assert kernels_for(dense) == 1
    np.testing.assert_allclose(dense.numpy(), np.maximum(x.T @ y + bias, 0), rtol=1e-4, atol=1e-4)
    scaled = X.sum(axis=1) * 2.0 + 1.0
    assert kernels_for(scaled) == 1
    np.testing.assert_allclose(scaled.numpy(), x.sum(axis=1) * 2 + 1, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda X, Y: (X.T @ Y).T,                             # permute over matmul's reshape over a sum
    lambda X, Y: (X * Y).sum(axis=0, keepdims=True).T,    # permute straight over a kept-axis sum
    lambda X, Y: (X.reshape(3, 11, 65) * 2.0).max(axis=1).T,
    lambda X, Y: (X.reshape(1, 33, 65) * Y).sum(axis=1, keepdims=True).transpose(2, 1, 0),
], ids=["matmul-T", "sum-keepdims-T", "max-3d", "keepdims-3d"])
def test_a_transposed_reduction_is_reduced_in_the_order_it_is_read(data, make):
    """permute(sum(x)) is one kernel that writes the sum in the permuted order (a weight gradient
    (g.T @ x).T needs no transposing copy), with numpy's values."""
    x, y, X, Y = data
    out = make(X, Y)
    assert kernels_for(out) == 1
    assert_close(out, make(x, y))


def test_a_transposed_reduction_read_by_a_reduction_keeps_its_own_order():
    """A permute of a reduction that another reduction reads arranges a contraction's operand
    (lt.compute puts the reduced axis last), not the order of a later read: the first reduction
    keeps its own order. (Reordered, a Winograd transform's product was written with its 6
    terms innermost and the transform read it across them: 5 ms, 0.6 in its own order.)"""
    rng = np.random.default_rng(3)
    a, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 6, 5, 7), (7, 7), (4, 6)))
    m = lt.asarray(a) @ lt.asarray(w)                                     # (n, 6, y, x)
    j = lt.reduce_axis(6)
    y = lt.compute((2, 4, 5, 7), lambda n, u, r, c: lt.sum(lt.asarray(b)[u, j] * m[n, j, r, c], axis=j))
    (root,) = optimize([y.node])
    (product,) = [n for n in toposort([root]) if n.op is Op.SUM and n is not root.src[0]]
    assert tuple(n for n in product.shape if n != 1) == (2, 6, 5, 7)   # the matmul's own order
    assert_close(y, np.einsum("uj,njrc->nurc", b, a @ w))


def test_a_shared_reduction_is_not_reduced_twice(data):
    """Where the sum is read as it is too, reordering it would compute it twice: it stays one
    reduction and a transposing copy."""
    x, y, X, Y = data
    summed = X.T @ Y
    assert kernels_for(summed, summed.T) == 2
    assert_close(summed.T, (x.T @ y).T)


def test_a_relu_mask_reads_the_forward_matmul_instead_of_recomputing_it():
    """In a training step the backward relu mask reads the forward pre-activation, which a
    kernel computes (the forward's next matmul reads it); the mask once recomputed that whole
    matmul, because the gradient's own matmul (realized) was counted as part of its kernel."""
    realize_module = sys.modules["lazytensor.realize"]   # (lt.realize is the function)
    specs = []
    pipeline.OBSERVERS.append(specs.append)   # (every kernel the step compiles, or finds compiled)
    try:
        rng = np.random.default_rng(0)
        model = lt.nn.Sequential(lt.nn.Linear(96, 64), lt.nn.ReLU(), lt.nn.Linear(64, 10))
        x = lt.asarray(rng.standard_normal((32, 96)).astype(np.float32))
        loss = lt.nn.functional.cross_entropy(model(x), lt.asarray(rng.integers(0, 10, 32)))
        loss.backward()
    finally:
        pipeline.OBSERVERS.remove(specs.append)
    weight = realize_module.realized_value(model[0].weight.node)
    assert specs, "the step was planned before: no fusion to look at"
    assert len([s for s in specs if x.node in s.inputs and any(n.arg is weight.arg for n in s.inputs)]) == 1


@pytest.mark.parametrize("shape", [(4, 3, 16, 8), (2, 5, 7, 4), (1, 1, 33, 2)])
def test_a_matmul_through_merged_heads_reads_a_copy_of_them(device, shape):
    """Attention's merged heads y.permute(0, 2, 1, 3).reshape(B, T, C) are no strided view of y
    (a division per index): a weight gradient reading them once per output column copies them
    once (a kernel of its own) and then reads plain strides: no division in the matmul's loads."""
    b, h, t, d = shape
    rng = np.random.default_rng(sum(shape))
    y, g = rng.standard_normal(shape).astype(np.float32), rng.standard_normal((b * t, h * d)).astype(np.float32)
    specs = []
    pipeline.OBSERVERS.append(specs.append)
    try:
        merged = lt.asarray(y, device=device).permute(0, 2, 1, 3).reshape(b * t, h * d)
        got = (lt.asarray(g, device=device).T @ merged).numpy()
        # the heads computed in the same graph (attention's p @ v, a reduction): copied the same way
        p = rng.standard_normal((b, h, t, t)).astype(np.float32)
        y_lazy = lt.asarray(p, device=device) @ lt.asarray(y, device=device)
        got_lazy = (lt.asarray(g, device=device).T @ y_lazy.permute(0, 2, 1, 3).reshape(b * t, h * d)).numpy()
    finally:
        pipeline.OBSERVERS.remove(specs.append)
    want = g.T.astype(np.float64) @ y.transpose(0, 2, 1, 3).reshape(b * t, h * d).astype(np.float64)
    assert_close(got, want.astype(np.float32))
    py = (p.astype(np.float64) @ y).transpose(0, 2, 1, 3).reshape(b * t, h * d)
    np.testing.assert_allclose(got_lazy, g.T.astype(np.float64) @ py, rtol=1e-4, atol=1e-4)
    matmuls = [s for s in specs if any(n.op is Op.SUM for n in _nodes(s.expr))]
    assert all(n.arg[1].affine is not None for s in matmuls for n in _nodes(s.expr) if n.op is Op.LOAD)
    if h > 1 and d > 1:   # the copy, then the matmul; the heads' matmul (a copy, or written merged), the matmul
        assert len(matmuls) == 3 and len(specs) <= 5


def test_a_weight_gradient_through_merged_heads_reads_a_copy_of_them(device):
    """The same through autograd: linear(merged, w).backward(g). The gradient's movement ops
    reach the merged view through an elementwise op (the product), above the chain of views
    from y: the copy is still of that chain's op, and every load of the weight gradient is a
    plain strided one."""
    b, h, t, d = 3, 4, 10, 8
    rng = np.random.default_rng(1)
    y, g = rng.standard_normal((b, h, t, d)).astype(np.float32), rng.standard_normal((b, t, h * d)).astype(np.float32)
    w = lt.nn.Parameter(lt.asarray(rng.standard_normal((h * d, h * d)).astype(np.float32), device=device))
    specs = []
    pipeline.OBSERVERS.append(specs.append)
    try:
        merged = lt.asarray(y, device=device).permute(0, 2, 1, 3).reshape(b, t, h * d)
        lt.nn.functional.linear(merged, w).backward(lt.asarray(g, device=device))
        got = w.grad.numpy()
    finally:
        pipeline.OBSERVERS.remove(specs.append)
    m = y.transpose(0, 2, 1, 3).reshape(b * t, h * d).astype(np.float64)
    assert_close(got, (g.reshape(b * t, h * d).T.astype(np.float64) @ m).astype(np.float32))
    sums = [s for s in specs if any(n.op is Op.SUM for n in _nodes(s.expr))]
    assert sums and all(n.arg[1].affine is not None for s in sums for n in _nodes(s.expr) if n.op is Op.LOAD)


def test_attention_gradients_through_split_heads_read_copies_of_them(device):
    """Causal self-attention written out, as a small GPT does: q, k, v = linear(x, w*) split into
    heads (reshape(B, T, H, D).permute(0, 2, 1, 3)). Their gradients, reductions computed in the
    same graph, reach w*'s and x's gradients through the merging view; each is copied once like
    a buffer would be (read with a division per index, x's gradient took 22 ms a launch in the
    GPT's step, a third of it). No reduction kernel loads through a division."""
    b, h, t, d = 2, 4, 16, 8
    c = h * d
    rng = np.random.default_rng(2)
    x = lt.asarray(rng.standard_normal((b, t, c)).astype(np.float32), device=device, requires_grad=True)
    ws = [lt.nn.Parameter(lt.asarray(rng.standard_normal((c, c)).astype(np.float32) / 6, device=device))
          for _ in range(3)]
    causal = lt.asarray(np.tril(np.ones((t, t), bool)), device=device)
    specs = []
    pipeline.OBSERVERS.append(specs.append)
    try:
        q, k, v = (lt.nn.functional.linear(x, w).reshape(b, t, h, d).permute(0, 2, 1, 3) for w in ws)
        att = lt.nn.functional.softmax(lt.where(causal, q @ k.permute(0, 1, 3, 2) * 0.3, -np.inf), dim=-1)
        y = (att @ v).permute(0, 2, 1, 3).reshape(b, t, c)
        (y * y).sum().backward()
        grads = [x.grad.numpy()] + [w.grad.numpy() for w in ws]
    finally:
        pipeline.OBSERVERS.remove(specs.append)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tws = [torch.tensor(w.detach().numpy(), requires_grad=True) for w in ws]
    tq, tk, tv = (torch.nn.functional.linear(tx, w).reshape(b, t, h, d).permute(0, 2, 1, 3) for w in tws)
    scores = (tq @ tk.transpose(-1, -2) * 0.3).masked_fill(~torch.tensor(causal.numpy()), float("-inf"))
    ty = (torch.softmax(scores, -1) @ tv).permute(0, 2, 1, 3).reshape(b, t, c)
    (ty * ty).sum().backward()
    for got, want in zip(grads, [tx.grad] + [w.grad for w in tws]):
        np.testing.assert_allclose(got, want.numpy(), rtol=2e-4, atol=2e-4)
    sums = [s for s in specs if any(n.op is Op.SUM for n in _nodes(s.expr))]
    assert all(n.arg[1].affine is not None for s in sums for n in _nodes(s.expr) if n.op is Op.LOAD)


def test_a_convolution_does_not_copy_its_windows(device):
    """(the windows are no strided view of the image either, but a copy of them would be kh * kw
    times its size: they are read in place)"""
    x, w = lt.ones((1, 2, 9, 9), device=device), lt.ones((3, 2, 3, 3), device=device)
    assert kernels_for(lt.nn.functional.conv2d(x, w)) == 1


def test_views_make_no_kernel_of_their_own(data):
    x, y, X, Y = data
    viewed = X.T[1:40:3, ::-2].reshape(-1)[5:].reshape(1, -1).expand(3, -1)
    out = viewed * 2.0 + 1.0
    assert kernels_for(out) == 1
    reference = x.T[1:40:3, ::-2].reshape(-1)[5:].reshape(1, -1)
    assert_close(out, np.broadcast_to(reference, (3, reference.shape[1])) * 2 + 1)
    assert kernels_for(X.reshape(65, 33)) == 0  # a reshape of realized memory is a view of it
    assert kernels_for(X[None, :, :]) == 0


def test_realize_together_runs_shared_work_once(data):
    x, _, X, _ = data
    total = (X * X).sum()
    a, b = total * 2.0, total + 1.0
    # the sum is realized once and read by both consumers: 3 kernels, not 4
    assert kernels_for(a, b) == 3
    expected = (x.astype(np.float64) ** 2).sum()
    np.testing.assert_allclose([a.item(), b.item()], [expected * 2, expected + 1], rtol=1e-5)


def test_realized_tensor_is_not_recomputed(data):
    _, _, X, _ = data
    y = (X * 3.0).exp().realize()
    assert kernels_for(y + 1.0) == 1
    assert kernels_for(y) == 0


def test_second_realize_of_same_structure_compiles_nothing(data):
    _, _, X, Y = data
    (X * Y - 1.5).realize()
    compiled = lt.stats()["kernels_compiled"]
    hits = lt.stats()["memory_cache_hits"] + lt.stats()["plan_cache_hits"]
    (Y * X - 1.5).realize()  # another expression of the same structure: X, Y are both (33, 65) f32
    (lt.asarray(np.ones((33, 65), np.float32)) * X - 1.5).realize()
    assert lt.stats()["kernels_compiled"] == compiled
    assert lt.stats()["memory_cache_hits"] + lt.stats()["plan_cache_hits"] >= hits + 2


# ---- graph passes ----------------------------------------------------------------------------

def test_equal_expressions_are_one_node(data):
    _, _, X, Y = data
    assert ((X * Y) + 1.0).node is ((X * Y) + 1.0).node  # hash-consing: CSE for free


def test_constant_folding():
    (folded,) = optimize([((lt.full((4,), 2.0) * 3.0).exp() + 1.0).node])
    assert folded.op is Op.CONST
    assert folded.arg == pytest.approx(float(np.exp(np.float32(6.0)) + 1), rel=1e-6)
    (ints,) = optimize([lt.full((3, 5), 2, dtype=lt.int32).sum(axis=1).node])
    assert ints.op is Op.CONST and ints.arg == 10 and ints.shape == (3,)


def test_algebraic_identities(data):
    _, _, X, _ = data
    x = X.node
    assert optimize([(X * 1.0).node])[0] is x
    assert optimize([(1.0 * X / 1.0 - 0.0).node])[0] is x
    assert optimize([(-(-X)).node])[0] is x
    assert optimize([X.reshape(65, 33).reshape(33, 65).node])[0] is x
    assert optimize([X.T.T.node])[0] is x
    # not folded: float x + 0.0 turns -0.0 into +0.0, and float x * 0 keeps nan
    assert optimize([(X + 0.0).node])[0] is not x
    assert optimize([(X * 0.0).node])[0].op is Op.MUL
    ints = lt.arange(5)
    assert optimize([(ints + 0).node])[0] is ints.node
    assert optimize([(ints * 0).node])[0].op is Op.CONST


def test_dead_branch_is_removed(data):
    _, _, X, _ = data
    expensive = (X.exp().sum(axis=1, keepdims=True) + X).sin()
    out = lt.where(True, X * 2.0, expensive)
    (root,) = optimize([out.node])
    assert all(n.op is not Op.SIN for n in _nodes(root))
    assert kernels_for(out) == 1


def _nodes(root: Node):
    from lazytensor.ir.graph import toposort
    return toposort([root])


# A keepdims reduction read broadcast along its reduced axes with nothing on top: the kernel
# that computes it must write the whole broadcast result (the cpu once computed the reduction
# per row in a kernel of the reduction's own shape and left the rest of the output unwritten).
_REDUCTIONS = {
    "sum": (lambda x, a: x.sum(axis=a, keepdims=True), lambda x, a: x.sum(axis=a, keepdims=True)),
    "prod": (lambda x, a: x.prod(axis=a, keepdims=True), lambda x, a: x.prod(axis=a, keepdims=True)),
    "max": (lambda x, a: x.max(axis=a, keepdims=True), lambda x, a: x.max(axis=a, keepdims=True)),
    "min": (lambda x, a: x.min(axis=a, keepdims=True), lambda x, a: x.min(axis=a, keepdims=True)),
    "mean": (lambda x, a: lt.mean(x, axis=a, keepdims=True), lambda x, a: x.mean(axis=a, keepdims=True)),
    "any": (lambda x, a: lt.any(x, axis=a, keepdims=True), lambda x, a: np.any(x, axis=a, keepdims=True)),
    "all": (lambda x, a: lt.all(x, axis=a, keepdims=True), lambda x, a: np.all(x, axis=a, keepdims=True)),
}


@pytest.mark.parametrize("name", sorted(_REDUCTIONS))
@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape, axis, out", [((3, 5), -1, (3, 3)), ((4, 7), 1, (4, 1)), ((2, 3, 5), 2, (2, 3, 4)),
                                              ((5, 3), 0, (2, 3)), ((2, 3, 4), (1, 2), (2, 5, 6)),
                                              ((1, 6), 1, (1, 9)), ((6, 0), 1, (6, 2))])
def test_a_keepdims_reduction_read_broadcast_fills_the_whole_result(device, name, dtype, shape, axis, out):
    if name == "mean" and dtype in ("bool", "int32"):
        pytest.skip("mean of integers is not defined here")
    if 0 in shape and name in ("max", "min"):
        pytest.skip("no identity")
    ours, theirs = _REDUCTIONS[name]
    data = (np.random.default_rng(3).random(shape) * 2 + 0.5).astype(dtype)
    x = lt.asarray(data, device=device)
    want = np.broadcast_to(theirs(data, axis), out)
    for got in (ours(x, axis).broadcast_to(out), ours(x, axis).expand(*out)):
        assert_close(got.numpy(), want)


@pytest.mark.parametrize("terms", [2, 6, 9])
def test_a_shared_value_is_recomputed_by_what_it_computes_not_by_its_views(terms):
    """A layer norm's centered input is read twice (the variance and the output). Recomputed
    while its expression computes few ops (fusion._cuts, H.SHARED_RECOMPUTE_MAX), however many
    views (a reshape and an expand per broadcast bias) stand in it: one kernel for a residual
    stream of 2 to 9 terms, as for 1; the values as numpy's."""
    rng = np.random.default_rng(terms)
    a = rng.standard_normal((8, 64)).astype(np.float32)
    biases = [rng.standard_normal(64).astype(np.float32) for _ in range(terms)]
    x, want = lt.asarray(a), a
    for b in biases:
        x, want = x + lt.asarray(b), want + b
    out = lt.nn.functional.layer_norm(x, (64,))
    assert kernels_for(out) == 1
    centered = want - want.mean(-1, keepdims=True)
    assert_close(out, centered / np.sqrt((centered * centered).mean(-1, keepdims=True) + np.float32(1e-5)))
