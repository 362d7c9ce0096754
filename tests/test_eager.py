"""Tensors feel eager (issue 18): numpy-style code without realize() stays bounded and right.

Loop-carried values: the pending work under a tensor is bounded (lazytensor/realize.py,
`bound_pending`), a value read by several kernels is computed once, and a loop's steps replay
plans instead of compiling new, ever larger kernels.
"""
import sys

import numpy as np

import lazytensor as lt

realize_module = sys.modules["lazytensor.realize"]   # (lt.realize is the function)


def launched() -> int:
    return lt.stats()["kernels_launched"]


def test_gradient_descent_loop_without_realize_matches_numpy_and_stays_bounded(device):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((37, 11)).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    A, B = lt.asarray(a, device=device), lt.asarray(b, device=device)
    x, expected = lt.zeros(11, device=device), np.zeros(11, np.float32)
    before = launched()
    for _ in range(120):
        x = x - 0.01 * (A.T @ (A @ x - B))
        expected = expected - np.float32(0.01) * (a.T @ (a @ expected - b))
        assert x.node.depth <= realize_module.PENDING_MAX_DEPTH
    np.testing.assert_allclose(x.numpy(), expected, rtol=2e-4, atol=1e-5)
    # each step's work is done once: a few kernels a step, not a kernel that recomputes the history
    assert launched() - before <= 2 * 120 + 5


def test_loop_steps_replay_plans_and_compile_nothing_new():
    rng = np.random.default_rng(2)
    A = lt.asarray(rng.standard_normal((40, 9)).astype(np.float32))
    B = lt.asarray(rng.standard_normal(40).astype(np.float32))

    def descend(steps):
        x = lt.zeros(9)
        for _ in range(steps):
            x = x - 0.001 * (A.T @ (A @ x - B))
        return x.numpy()

    descend(300), descend(300)   # (the first cut of a process may fall elsewhere: see bound_pending)
    compiled, looked_up = lt.stats()["kernels_compiled"], lt.stats()["memory_cache_hits"]
    again = descend(300)
    # no plan was built (building one looks its kernels up) and nothing compiled
    assert lt.stats()["kernels_compiled"] == compiled and lt.stats()["memory_cache_hits"] == looked_up
    assert np.isfinite(again).all()


def test_mean_centering_loop_is_linear_in_the_steps(device):
    rng = np.random.default_rng(3)
    yn = rng.standard_normal(257).astype(np.float32)
    y, expected = lt.asarray(yn, device=device), yn.astype(np.float64)
    before = launched()
    for _ in range(200):
        y = y - y.mean() + 1.0
        expected = expected - expected.mean() + 1.0
        assert y.node.depth <= realize_module.PENDING_MAX_DEPTH
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-4)
    assert launched() - before <= 2 * 200 + 5


def test_a_value_kept_from_every_step_is_right():
    # live pending tensors inside a cut graph are realized with it; kept ones stay right
    y, kept, expected = lt.asarray(np.arange(5.0)), [], np.arange(5.0)
    for i in range(700):
        y = y * 0.5 + i
        kept.append(y)
        expected = expected * 0.5 + i
    np.testing.assert_allclose(y.numpy(), expected)
    check = np.arange(5.0)
    for i, t in enumerate(kept[:50]):
        check = check * 0.5 + i
        np.testing.assert_allclose(t.numpy(), check)


def test_a_deep_chain_keeps_its_gradient():
    w = lt.asarray([0.5, 2.0, -1.0], dtype=lt.float64, requires_grad=True)
    y = w
    for _ in range(600):   # deeper than the bound: cut on the way, gradients still flow
        y = y * 1.001 + 0.001
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 1.001 ** 600), rtol=1e-12)
    assert y.requires_grad


def test_a_value_read_by_several_kernels_is_computed_once():
    # x - 0.01 * g is read by the next step's matmul (broadcast: computed into memory) and by the
    # next step's update: loaded there too, not recomputed (which also rounds alike in both)
    rng = np.random.default_rng(4)
    A = lt.asarray(rng.standard_normal((30, 6)).astype(np.float32))
    x = lt.asarray(rng.standard_normal(6).astype(np.float32)).realize()
    for _ in range(6):
        x = x - 0.01 * (A.T @ (A @ x))
    before = launched()
    x.realize()
    assert launched() - before <= 2 * 6
