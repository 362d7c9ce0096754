"""Tensors feel eager (issue 18): numpy-style code without realize() stays bounded and right.

Loop-carried values: the pending work under a tensor is bounded (lazytensor/realize.py,
`bound_pending`), a value read by several kernels is computed once, and a loop's steps replay
plans instead of compiling new, ever larger kernels.
"""
import sys

import numpy as np
import pytest

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


# ---- reading elements never compiles --------------------------------------------------------

VIEWS = [
    lambda t: t[2],
    lambda t: t[-1, 0],
    lambda t: t[1, 2, 3],
    lambda t: t[::-1, 1:3, ::2],
    lambda t: t[:, ::-2].T,
    lambda t: t.transpose(2, 0, 1)[1],
    lambda t: lt.flip(t, axis=1)[1:] if isinstance(t, lt.Tensor) else np.flip(t, 1)[1:],
    lambda t: t[1].reshape(20),
    lambda t: t[:, 1:2].reshape(3, 5),
    lambda t: t[None, 2, :, None, 1:3],
    lambda t: t[2:2],
    lambda t: t[..., 0],
]


@pytest.mark.parametrize("view", range(len(VIEWS)))
def test_reading_a_view_of_realized_memory_runs_no_kernel(device, view):
    values = np.random.default_rng(view).standard_normal((3, 4, 5)).astype(np.float32)
    x = lt.asarray(values, device=device).realize()
    before = launched()
    got = VIEWS[view](x).numpy()
    np.testing.assert_array_equal(got, VIEWS[view](values))
    assert launched() == before


def test_expanded_and_flipped_views_read_in_place(device):
    values = np.arange(6, dtype=np.int16).reshape(2, 3)
    x = lt.asarray(values, device=device).realize()
    before = launched()
    np.testing.assert_array_equal(x[:1].broadcast_to((4, 3)).numpy(), np.broadcast_to(values[:1], (4, 3)))
    np.testing.assert_array_equal(lt.flip(x).numpy(), values[::-1, ::-1])
    assert launched() == before
    np.testing.assert_array_equal(x.T.reshape(6).numpy(), values.T.reshape(6))   # (a copy: a kernel runs)


def test_elements_items_lists_and_iteration_compile_nothing(device):
    values = np.random.default_rng(5).standard_normal((5, 1, 1, 5, 3)) > 0
    out = lt.asarray(values, device=device).realize()
    before = launched(), lt.stats()["kernels_compiled"]
    assert [bool(out[i]) for i in np.ndindex(*values.shape)] == [bool(values[i]) for i in np.ndindex(*values.shape)]
    numbers = lt.asarray(np.arange(7.0), device=device).realize()
    assert [float(v) for v in numbers] == list(np.arange(7.0))
    assert numbers[3].item() == 3.0 and int(numbers[-1]) == 6 and numbers.tolist() == list(np.arange(7.0))
    assert repr(numbers[2]).startswith("Tensor(2.")
    assert (launched(), lt.stats()["kernels_compiled"]) == before


def test_iterating_a_0d_tensor_raises_at_iter():
    with pytest.raises(TypeError, match="0-d"):
        iter(lt.asarray(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(np.asarray(1.0))   # (numpy's behaviour, which this follows)
