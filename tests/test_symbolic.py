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
    assert sum(compiled[2:]) == 0, compiled   # size 1 on its own; 2 makes the template (sizes.py: outlines)


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


def test_merged_heads_plus_a_bias_over_a_growing_context():
    """Heads merged back (permute + reshape: a view stacked on a view) under an elementwise op
    with a broadcast bias: the kernel that split_axes would run over the heads' axes has a
    symbolic length here, and still compiles once for every length."""
    rng = np.random.default_rng(4)
    bias = rng.standard_normal(64).astype(np.float32)
    lbias = lt.asarray(bias)
    compiled = []
    for t in range(1, 12):
        y = rng.standard_normal((1, 4, t, 16)).astype(np.float32)
        before = _compiled()
        got = (lt.asarray(y).permute(0, 2, 1, 3).reshape(1, t, 64) + lbias).numpy()
        compiled.append(_compiled() - before)
        np.testing.assert_allclose(got, y.transpose(0, 2, 1, 3).reshape(1, t, 64) + bias)
    assert sum(compiled[3:]) == 0, compiled


def test_small_heads_fuse_loops_of_symbolic_length():
    rng = np.random.default_rng(3)
    mask = np.tril(np.ones((20, 20), bool))
    lmask = lt.asarray(mask)
    compiled = []
    for t in range(1, 20):
        x = rng.standard_normal((2, 2, t, 8)).astype(np.float32)
        lx = lt.asarray(x)
        before = _compiled()
        scores = lx @ lx.permute(0, 1, 3, 2) / np.sqrt(8.0)
        got = (F.softmax(lt.where(lmask[:t, :t], scores, float("-inf")), dim=-1) @ lx).numpy()
        compiled.append(_compiled() - before)
        np.testing.assert_allclose(got, _causal_attention(x, x, x, mask), rtol=1e-5, atol=1e-5)
    assert sum(compiled[3:]) == 0, compiled


def test_a_growing_context_compiles_size_1_then_one_template():
    """Size 1 broadcasts a bias without an EXPAND, so its graph has another skeleton than at
    2 and up; its outline (the skeleton without EXPANDs) is the same, and the graph at 2 makes
    the template at once: a token's forward at T = 3, 4, ... compiles nothing. The template's
    sizes of the EXPANDs it had not seen at 1 come from their sources or their readers: a batch
    of 3 broadcast over T (a constant) and T itself."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((16, 24)).astype(np.float32)
    bias = rng.standard_normal(24).astype(np.float32)
    rows = rng.standard_normal((3, 1, 24)).astype(np.float32)
    lw, lbias, lrows = lt.asarray(w), lt.asarray(bias), lt.asarray(rows)
    compiled, templates = [], lt.stats()["size_templates"]
    for t in [1, 2, 3, 4, 9, 17, 5]:
        x = rng.standard_normal((1, t, 16)).astype(np.float32)
        before = _compiled()
        h = lt.tanh(lt.asarray(x) @ lw + lbias)            # (1, t, 24): the bias expanded over t
        got = (h * lrows + h.sum(-1, keepdims=True))[:, -1].numpy()   # (3, t, 24): h over the batch, rows over t
        compiled.append(_compiled() - before)
        hn = np.tanh(x @ w + bias)
        np.testing.assert_allclose(got, (hn * rows + hn.sum(-1, keepdims=True))[:, -1], rtol=1e-5, atol=1e-5)
    assert compiled[0] and compiled[1] and sum(compiled[2:]) == 0, compiled
    assert lt.stats()["size_templates"] == templates + 1


def test_an_outline_whose_sizes_are_no_lines_compiles_each_size():
    """Graphs of one outline whose sizes do not follow one size (t and t*t): the template made
    from sizes 1 and 2 does not fit size 3, which compiles for itself, right."""
    rng = np.random.default_rng(6)
    for t in [1, 2, 3, 4]:
        x = rng.standard_normal((t, t * t)).astype(np.float32)
        b = rng.standard_normal(t * t).astype(np.float32)
        got = (lt.exp(lt.asarray(x)) + lt.asarray(b)).numpy()
        np.testing.assert_allclose(got, np.exp(x) + b, rtol=1e-5, atol=1e-6)


def test_sizes_past_what_the_template_holds_compile_on_their_own():
    rng = np.random.default_rng(2)
    base = rng.standard_normal(40).astype(np.float32)
    lbase = lt.asarray(base)
    for t in itertools.chain(range(2, 12), [40, 3]):
        got = (lbase[:t] * 2 + lbase[:t].sum()).numpy()
        np.testing.assert_allclose(got, base[:t] * 2 + base[:t].sum(), rtol=1e-5, atol=1e-5)


def test_sizes_far_above_the_hint_compile_for_themselves():
    """A template's kernels are scheduled for sizes near HINT: past MOST a graph compiles for its
    own sizes, as a large kernel is worth (a matmul 2048 after one of 1024 ran its template at 12
    GFLOP/s, against 175 compiled for it). Two samples past MOST make no template; a template
    made from small sizes does not serve a large one."""
    from lazytensor.sizes import MOST
    rng = np.random.default_rng(4)

    def matmul(t: int) -> None:
        a, b = (rng.standard_normal((t, t)).astype(np.float32) for _ in range(2))
        np.testing.assert_allclose((lt.asarray(a) @ lt.asarray(b)).numpy(), a @ b, rtol=1e-4, atol=1e-3)

    def counts() -> tuple[int, int]:
        stats = lt.stats()
        return stats["size_templates"], stats["sized_plans"]

    before = counts()
    matmul(MOST + 44)
    matmul(2 * MOST + 88)
    assert counts() == before
    matmul(20)
    matmul(30)
    templates, sized = counts()
    assert templates == before[0] + 1
    matmul(40)
    assert counts() == (templates, sized + 1)
    matmul(MOST + 1)
    assert counts() == (templates, sized + 1)


# ---- a fuzzer over sizes ------------------------------------------------------------------------
# A random chain of operations whose shapes follow one size t, run at many t (so the graphs of
# one chain share a skeleton: templates are made and bound), each result compared with numpy.

def _chain(rng: np.random.Generator, steps: int):
    """A list of (name, lazytensor fn, numpy fn) over one (t, 12) float32 value."""
    ops = []
    for _ in range(steps):
        kind = rng.integers(0, 17)
        c = float(rng.uniform(0.5, 1.5))
        if kind == 0:
            ops.append(("exp", lambda x: lt.exp(x * 0.1), lambda x: np.exp(x * np.float32(0.1))))
        elif kind == 1:
            ops.append(("mul", lambda x, c=c: x * c + 1.0, lambda x, c=c: x * np.float32(c) + np.float32(1.0)))
        elif kind == 2:
            ops.append(("sum keep", lambda x: x - x.sum(axis=-1, keepdims=True) / 7.0,
                        lambda x: x - x.sum(axis=-1, keepdims=True) / np.float32(7.0)))
        elif kind == 3:
            ops.append(("max rows", lambda x: x - x.max(axis=0, keepdims=True),
                        lambda x: x - x.max(axis=0, keepdims=True)))
        elif kind == 4:
            ops.append(("transpose twice", lambda x: (x.T * 2.0).T, lambda x: (x.T * np.float32(2.0)).T))
        elif kind == 5:
            ops.append(("flip", lambda x: lt.flip(x, axis=0) + x, lambda x: np.flip(x, axis=0) + x))
        elif kind == 6:
            ops.append(("shift", lambda x: lt.concat([x[1:], x[:1]], axis=0),
                        lambda x: np.concatenate([x[1:], x[:1]], axis=0)))
        elif kind == 7:
            ops.append(("pad+slice", lambda x: lt.pad(x, ((1, 2), (0, 0)))[2:] + 1.0,
                        lambda x: np.pad(x, ((1, 2), (0, 0)))[2:] + np.float32(1.0)))
        elif kind == 8:
            w = rng.standard_normal((12, 12)).astype(np.float32) * 0.3
            ops.append(("matmul", lambda x, w=lt.asarray(w): x @ w, lambda x, w=w: x @ w))
        elif kind == 9:
            ops.append(("gram", lambda x: (x @ x.T) @ x * 0.01, lambda x: (x @ x.T) @ x * np.float32(0.01)))
        elif kind == 10:
            ops.append(("softmax", lambda x: F.softmax(x, dim=0), lambda x: _np_softmax(x, 0)))
        elif kind == 11:
            ops.append(("merge", lambda x: x.reshape(-1, 6, 2).permute(1, 0, 2).reshape(6, -1).reshape(6, -1, 2)
                        .permute(1, 0, 2).reshape(-1, 12),
                        lambda x: x.reshape(-1, 6, 2).transpose(1, 0, 2).reshape(6, -1).reshape(6, -1, 2)
                        .transpose(1, 0, 2).reshape(-1, 12)))
        elif kind == 12:
            ops.append(("cumsum", lambda x: lt.cumulative_sum(x, axis=0) * 0.1,
                        lambda x: np.cumsum(x, axis=0, dtype=np.float32) * np.float32(0.1)))
        elif kind == 13:
            ops.append(("every other", lambda x: lt.concat([x[::2], x[1::2]], axis=0),
                        lambda x: np.concatenate([x[::2], x[1::2]], axis=0)))
        elif kind == 14:
            ops.append(("mean", lambda x: x - x.mean(axis=0, keepdims=True), lambda x: x - x.mean(axis=0, keepdims=True)))
        elif kind == 15:
            ops.append(("outer", lambda x: (x[:, None, :] * x[None, :, :1]).sum(axis=1) * 0.1,
                        lambda x: (x[:, None, :] * x[None, :, :1]).sum(axis=1) * np.float32(0.1)))
        else:
            ops.append(("last rows", lambda x: x - x[-1:] + x[-2:-1], lambda x: x - x[-1:] + x[-2:-1]))
    return ops


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("seed", range(40))
def test_random_chains_at_many_sizes_match_numpy(seed):
    rng = np.random.default_rng(100 + seed)
    chain = _chain(rng, int(rng.integers(2, 6)))
    sizes = [1, 2, 3, 4, 5, 8, 13, 16, 31, 2, 7, 64, 100, 6]
    for t in sizes:
        x = rng.standard_normal((t, 12)).astype(np.float32)
        if t == 1 and any(name == "last rows" for name, _, _ in chain):
            continue   # (x[-2:-1] of one row is empty)
        got, want = lt.asarray(x), x
        for name, ours, theirs in chain:
            got, want = ours(got), theirs(want).astype(np.float32)
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-4, atol=2e-4,
                                   err_msg=f"t={t}, chain {[name for name, _, _ in chain]}")


def test_full_tiles_of_a_symbolic_size_run_apart_from_the_tail():
    """scheduler/tails.py: a matmul whose row count is symbolic keeps its register tile's loops
    of known length where a whole tile fits (the tail runs in a version of its own)."""
    from lazytensor import pipeline
    from lazytensor.devices import runtime
    from lazytensor.ir import loop
    from lazytensor.ir.dtypes import float32
    from lazytensor.ir.graph import Node
    from lazytensor.ir.ops import Op
    from lazytensor.ir.rules import make

    n = var("t_tails", 2, 1 << 20, 64)
    x = Node(Op.BUFFER, float32, (n, 128), (), object())
    w = Node(Op.BUFFER, float32, (128, 128), (), object())
    prod_node = make(Op.SUM, make(Op.MUL, make(Op.EXPAND, make(Op.RESHAPE, x, arg=(n, 128, 1)), arg=(n, 128, 128)),
                                  make(Op.EXPAND, make(Op.RESHAPE, w, arg=(1, 128, 128)), arg=(n, 128, 128))),
                     arg=(1,))
    kernels = pipeline.kernels([prod_node], runtime("cpu").device.target, [x, w])
    _, _, lowered = pipeline.loops(kernels.kernels[0], runtime("cpu").device.target)
    assert lowered.sizes == ("t_tails",)
    versions = [[s.stop for s in loop.walk(v.body) if isinstance(s, loop.For)]
                for v in loop.walk(lowered.body) if isinstance(v, loop.If)]
    assert any(stops and all(isinstance(stop, loop.Const) for stop in stops) for stops in versions), \
        "no full-tile version"
    assert any(not isinstance(stop, loop.Const) for stops in versions for stop in stops), "no tail version"


def test_a_template_made_through_an_outline_that_later_sizes_miss_gives_way():
    """Sizes 1 and 2 of one outline whose sizes then follow another line (t, then 2t - 1 from
    3 on: a template made from 1 and 2 misses them): size 3 compiles for itself, then 3 and 4
    make the family's template as any two graphs do, and later sizes compile nothing."""
    rng = np.random.default_rng(7)
    compiled = []
    for t, n in [(1, 1), (2, 2), (3, 5), (4, 7), (5, 9), (6, 11), (7, 13)]:
        x = rng.standard_normal((t, n)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        before = _compiled()
        got = (lt.exp(lt.asarray(x)) * lt.asarray(b)).numpy()
        compiled.append(_compiled() - before)
        np.testing.assert_allclose(got, np.exp(x) * b, rtol=1e-5, atol=1e-6)
    assert compiled[2] and sum(compiled[4:]) == 0, compiled


def test_a_refused_template_made_through_an_outline_gives_way(monkeypatch):
    """Where the symbolic compile refuses the template made at size 2 (through size 1's
    outline), sizes 2 and 3 compile for themselves and make the family's template as any two
    graphs do: later sizes compile nothing."""
    from lazytensor import sizes
    real, refused = sizes._compile, []

    def refuse_first(rt, template, *rest):
        if not refused:
            refused.append(template.name)
            raise Undecidable("refused for the test")
        return real(rt, template, *rest)
    monkeypatch.setattr(sizes, "_compile", refuse_first)
    rng = np.random.default_rng(8)
    b = rng.standard_normal(19).astype(np.float32)
    lb = lt.asarray(b)
    compiled = []
    for t in [1, 2, 3, 4, 5, 6]:
        x = rng.standard_normal((t, 19)).astype(np.float32)
        before = _compiled()
        got = (lt.sin(lt.asarray(x)) - lb * 0.5).numpy()
        compiled.append(_compiled() - before)
        np.testing.assert_allclose(got, np.sin(x) - b * np.float32(0.5), rtol=1e-5, atol=1e-6)
    assert refused and sum(compiled[3:]) == 0, compiled
