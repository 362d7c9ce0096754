"""Symbolic sizes (ir/symbolic.py) and the plans that serve a range of sizes (lazytensor/sizes.py):
decisions hold for every size in range or are refused; graphs that differ only in a size share
one compile and compute what numpy does at each size."""
import itertools

import numpy as np
import pytest

import lazytensor as lt
from lazytensor.ir import symbolic
from lazytensor.ir.symbolic import Undecidable, ceil_div, surely_equal, var

F = lt.nn.functional


def _compiled() -> int:
    return lt.stats()["kernels_compiled"]


# ---- the symbolic integer ----------------------------------------------------------------------

def _decide(fn):
    try:
        return fn()
    except Undecidable:
        return "?"


@pytest.mark.parametrize("lo,hi", [(2, 9), (3, 40), (1, 5)])
def test_comparisons_hold_over_the_whole_range_or_are_refused(lo, hi):
    rng = np.random.default_rng(lo * 100 + hi)
    n = var(f"t_cmp_{lo}_{hi}", lo, hi, lo)
    for _ in range(200):
        c = [int(v) for v in rng.integers(-6, 7, size=4)]
        p = c[0] + c[1] * n + c[2] * n * n + c[3] * n * n * n
        other = int(rng.integers(-50, 50))
        values = [c[0] + c[1] * x + c[2] * x * x + c[3] * x ** 3 for x in range(lo, hi + 1)]
        for name, op in (("<", lambda a, b: a < b), ("<=", lambda a, b: a <= b), ("==", lambda a, b: a == b),
                         (">", lambda a, b: a > b), (">=", lambda a, b: a >= b), ("!=", lambda a, b: a != b)):
            truth = {op(v, other) for v in values}
            got = _decide(lambda: op(p, other)) if not isinstance(p, int) else op(p, other)
            if got != "?":   # decided: it holds at every size
                assert truth == {got}, (c, other, name)
            elif name not in ("==", "!="):   # (an order of one polynomial in one variable: decided exactly;
                assert len(truth) == 2, (c, other, name)   # an equality may miss every integer in its bounds)


def test_arithmetic_matches_integers_at_every_size():
    n = var("t_arith", 2, 30, 8)
    exprs = [n * 3 + 1, (n * 4) // 2, (n * 6 + 9) % 3, ceil_div(n, 4), ceil_div(n * 2 + 1, 3) * n - 7, n - n]
    for x in range(2, 31):
        want = [3 * x + 1, 2 * x, 0, -(-x // 4), -(-(2 * x + 1) // 3) * x - 7, 0]
        got = [symbolic.substitute(e, {"t_arith": x}) for e in exprs]
        assert got == want


def test_inexact_division_and_use_as_a_number_are_refused():
    n = var("t_refuse", 2, 100, 8)
    with pytest.raises(Undecidable):
        n // 3
    with pytest.raises(Undecidable):
        n % 4
    with pytest.raises(Undecidable):
        range(n)
    with pytest.raises(Undecidable):
        bool(n == 64)
    assert not surely_equal((n, 4), (64, 4)) and surely_equal((n * 2, 4), (2 * n, 4))
    assert (n * 8) % 4 == 0 and (n * 8 + 5) % 4 == 1


# ---- plans for a range of sizes ----------------------------------------------------------------

def test_a_row_chain_compiles_once_for_every_length():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(96).astype(np.float32)
    lw = lt.asarray(w)
    compiled = []
    for t in [1, 2, 3, 4, 7, 8, 9, 16, 31, 64, 65, 200, 5]:
        x = rng.standard_normal((t, 96)).astype(np.float32)
        before = _compiled()
        got = ((lt.exp(lt.asarray(x)) * lw + 1.0).sum(axis=1) / 96).numpy()
        compiled.append(_compiled() - before)
        np.testing.assert_allclose(got, (np.exp(x) * w + 1.0).sum(axis=1) / 96, rtol=2e-6, atol=1e-5)
    assert sum(compiled[3:]) == 0, compiled   # sizes 1 and 2 on their own; 3 makes the template


def _causal_attention(np_q, np_k, np_v, mask):
    t = np_q.shape[-2]
    s = np_q @ np_k.swapaxes(-1, -2) / np.sqrt(np_q.shape[-1])
    s = np.where(mask[:t, :t], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ np_v


def test_causal_attention_over_a_growing_context():
    rng = np.random.default_rng(1)
    context = 24
    mask = np.tril(np.ones((context, context), bool))
    lmask = lt.asarray(mask)
    wq = rng.standard_normal((128, 128)).astype(np.float32) * 0.1
    lwq = lt.asarray(wq)
    compiled = []
    for t in range(1, context + 1):
        x = rng.standard_normal((1, t, 128)).astype(np.float32)
        lx = lt.asarray(x)
        q = (lx @ lwq).reshape(1, t, 4, 32).permute(0, 2, 1, 3)   # (a GPT's generation: batch 1, 4 heads)
        k = lx.reshape(1, t, 4, 32).permute(0, 2, 1, 3)
        scores = q @ k.permute(0, 1, 3, 2) / np.sqrt(32.0)
        before = _compiled()
        got = (F.softmax(lt.where(lmask[:t, :t], scores, float("-inf")), dim=-1) @ k).numpy()
        compiled.append(_compiled() - before)
        nq = (x @ wq).reshape(1, t, 4, 32).transpose(0, 2, 1, 3)
        nk = x.reshape(1, t, 4, 32).transpose(0, 2, 1, 3)
        np.testing.assert_allclose(got, _causal_attention(nq, nk, nk, mask), rtol=1e-5, atol=1e-5)
    # (the full context slices nothing: another graph, compiled on its own)
    assert sum(compiled[3:-1]) == 0, compiled


def test_sizes_past_what_the_template_holds_compile_on_their_own():
    rng = np.random.default_rng(2)
    base = rng.standard_normal(40).astype(np.float32)
    lbase = lt.asarray(base)
    for t in itertools.chain(range(2, 12), [40, 3]):
        got = (lbase[:t] * 2 + lbase[:t].sum()).numpy()
        np.testing.assert_allclose(got, base[:t] * 2 + base[:t].sum(), rtol=1e-5, atol=1e-5)
