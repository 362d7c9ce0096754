"""Compute only what is read (ir/narrow.py): a slice of a computed value computes the slice.

Values against numpy for slices of elementwise ops, broadcasts, reductions, matmuls, permutes
and reshapes (unit steps, strided and reversed slices, several slices of one value, zero-size
and one-element windows), and the optimized graph checked to compute the smaller value."""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazytensor as lt
from lazytensor.ir.graph import toposort
from lazytensor.ir.ops import REDUCTION, Op
from lazytensor.ir.passes import optimize
from conftest import assert_close, example_module


def _optimized(*tensors: lt.Tensor) -> list:
    return toposort(optimize([t.node for t in tensors]))


def _largest(op: Op, *tensors: lt.Tensor) -> int:
    """The most elements any `op` node of the optimized graph computes (a reduction: reads)."""
    return max((math.prod(n.src[0].shape if op in REDUCTION else n.shape) for n in _optimized(*tensors) if n.op is op),
               default=0)


@pytest.fixture
def rng():
    return np.random.default_rng(23)


def _floats(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_the_last_row_of_a_linear_layer_computes_one_row(rng):
    x, w, b = _floats(rng, 1, 37, 24), _floats(rng, 24, 19), _floats(rng, 19)
    X, W, B = lt.asarray(x), lt.asarray(w), lt.asarray(b)
    out = (X @ W + B)[0, -1]
    assert _largest(Op.SUM, out) == 24 * 19   # (one row of the product, not 37)
    assert_close(out, (x @ w + b)[0, -1])


def test_a_layer_norm_then_a_matmul_sliced_computes_the_slice(rng):
    x, w = _floats(rng, 2, 45, 32), _floats(rng, 32, 10)
    X, W = lt.asarray(x), lt.asarray(w)
    h = lt.nn.functional.layer_norm(X, (32,))
    out = (lt.nn.functional.gelu(h) @ W)[:, 40:43]
    assert _largest(Op.SUM, out) == 2 * 3 * 32 * 10
    mean = x.mean(-1, keepdims=True)
    normed = (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    gelu = 0.5 * normed * (1 + np.vectorize(math.erf)(normed / math.sqrt(2)))
    assert_close(out, (gelu.astype(np.float32) @ w)[:, 40:43])


def test_a_value_read_whole_elsewhere_is_computed_whole_once(rng):
    x, w = _floats(rng, 30, 20), _floats(rng, 20, 20)
    X, W = lt.asarray(x), lt.asarray(w)
    y = X @ W
    head, total = y[:3], y.sum()
    assert _largest(Op.SUM, head, total) == 30 * 20 * 20   # (the product, whole: one node)
    assert sum(1 for n in _optimized(head, total) if n.op is Op.SUM and math.prod(n.src[0].shape) > 1000) == 1
    lt.realize(head, total)
    assert_close(head, (x @ w)[:3])
    assert_close(total, (x @ w).sum(dtype=np.float32))


def test_a_slice_read_by_a_reduction_over_the_sliced_axis(rng):
    x = _floats(rng, 17, 23)
    X = lt.asarray(x)
    out = lt.exp(X * 2.0)[3:9].sum(0)
    assert _largest(Op.EXP, out) == 6 * 23
    assert_close(out, np.exp(x * 2)[3:9].sum(0))


def test_overlapping_slices_of_one_value_compute_their_union(rng):
    x, w = _floats(rng, 40, 16), _floats(rng, 16, 12)
    X, W = lt.asarray(x), lt.asarray(w)
    y = lt.tanh(X @ W)
    out = y[2:10] + y[5:13] * y[8:16]
    assert _largest(Op.SUM, out) == 14 * 16 * 12   # rows 2..15
    assert_close(out, np.tanh(x @ w)[2:10] + np.tanh(x @ w)[5:13] * np.tanh(x @ w)[8:16])


@pytest.mark.parametrize("index", [
    (slice(None), slice(None, None, 2)), (slice(None, None, -1), 3), (slice(4, 1, -1), slice(2, 5)),
    (slice(3, 3), slice(None)), (slice(-1, None), slice(-1, None)), (0, slice(1, 2)),
    (Ellipsis, slice(5, None)), (slice(None), slice(None)), (slice(1, None, 3), slice(None, -4)),
])
def test_slices_of_a_broadcast_computation_equal_numpy(rng, index):
    a, b = _floats(rng, 9, 1), _floats(rng, 1, 11)
    A, B = lt.asarray(a), lt.asarray(b)
    out = (lt.exp(A) * B - lt.sin(B))[index]
    assert_close(out, (np.exp(a) * b - np.sin(b))[index])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_slices_through_permutes_and_reshapes_equal_numpy(rng, dtype):
    x = (rng.standard_normal((2, 6, 4, 5)) * 10).astype(dtype)
    X = lt.asarray(x)
    merged = (X * 3).permute(0, 2, 1, 3).reshape(2, 4, 30)   # (heads merged: no axis of x is 30)
    assert_close(merged[:, 1:3, 7:], (x * 3).transpose(0, 2, 1, 3).reshape(2, 4, 30)[:, 1:3, 7:])
    split = (X + 1).reshape(12, 20)[5:7].reshape(2, 4, 5)
    assert_close(split, (x + 1).reshape(12, 20)[5:7].reshape(2, 4, 5))
    flat = (X - 2).reshape(-1)[17:100]
    assert_close(flat, (x - 2).reshape(-1)[17:100])
    kept = (X * X).sum(-1, keepdims=True)[1, ::-1, 2:]
    assert_close(kept, (x * x).sum(-1, keepdims=True)[1, ::-1, 2:])
    rows = (X.reshape(12, 20) @ X.reshape(20, 12))[-2:, 3]
    assert_close(rows, (x.reshape(12, 20) @ x.reshape(20, 12))[-2:, 3])


def test_random_slices_of_random_chains_equal_numpy(rng):
    """A differential test: chains of elementwise ops, broadcasts, reductions, permutes and
    reshapes over odd shapes, then a random slice (or two, added) of the result."""
    unary = [(lt.exp, np.exp), (lt.tanh, np.tanh), (lambda t: t * 2.0 - 1.0, lambda a: a * 2 - 1)]
    for case in range(60):
        shape = tuple(int(n) for n in rng.choice([1, 2, 3, 5, 7], size=int(rng.integers(1, 4))))
        x = _floats(rng, *shape)
        X, want = lt.asarray(x), x
        for _ in range(int(rng.integers(1, 5))):
            kind = int(rng.integers(0, 5))
            if kind == 0:
                f, g = unary[int(rng.integers(0, len(unary)))]
                X, want = f(X), g(want).astype(np.float32)
            elif kind == 1 and want.ndim:
                axis = int(rng.integers(0, want.ndim))
                X, want = X.sum(axis, keepdims=bool(rng.integers(0, 2))), want.sum(axis, keepdims=True)
                if X.ndim < want.ndim:
                    want = want.squeeze(axis)
            elif kind == 2 and want.ndim >= 2:
                order = tuple(int(a) for a in rng.permutation(want.ndim))
                X, want = X.permute(*order), want.transpose(order)
            elif kind == 3 and want.size:
                X, want = X.reshape(-1, 1), want.reshape(-1, 1)
            else:
                other = _floats(rng, *((1,) * want.ndim if want.ndim else ()))
                X, want = X * lt.asarray(other) + X, want * other + want
        if not want.ndim:
            assert_close(X, want)
            continue

        def random_index():
            index = []
            for n in want.shape:
                start, stop = sorted(int(v) for v in rng.integers(-n - 1, n + 2, 2))
                index.append(slice(start, stop, int(rng.choice([1, 1, 2, -1]))) if rng.integers(0, 4) else
                             int(rng.integers(-n, n)) if n else slice(None))
            return tuple(index)
        index = random_index()
        assert_close(X[index], want[index])
        first, second = random_index(), random_index()
        if want[first].shape == want[second].shape:
            assert_close(X[first] + X[second], want[first] + want[second])


def test_the_next_tokens_logits_equal_the_whole_forwards_last_row(rng):
    """A GPT's next-token logits (model(ids)[0, -1]: its last block computes one row) equal the
    last row of the whole forward, realized apart."""
    gpt = example_module("gpt_model")
    GPT, Config = gpt.GPT, gpt.Config
    lt.manual_seed(0)
    model = GPT(Config(vocab_size=31, d_model=32, n_heads=4, n_layers=2, context=16))
    ids = lt.asarray(rng.integers(0, 31, (1, 11)))
    with lt.no_grad():
        whole = model(ids).numpy()
        last = model(ids)[0, -1]
        summed = [sum(math.prod(n.src[0].shape) for n in _optimized(t) if n.op is Op.SUM) for t in (last, model(ids))]
        assert summed[0] < 0.75 * summed[1]
        assert_close(last, whole[0, -1])
