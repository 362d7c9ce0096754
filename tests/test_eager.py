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
    # each step's work is done once: two kernels a step (and a value live at a cut, computed
    # into memory there: a few more), not a kernel that recomputes the history
    assert launched() - before <= 2.5 * 120


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


def test_held_tensors_are_listed_in_the_order_they_came():
    """The tensors a cut realizes together are listed in the order they were made: that order is
    part of the cut's plan structure. A new tensor that takes a dead one's id comes last (it took
    the dead one's place in the table, and the loop above built a new plan now and then)."""
    from lazytensor.views import WeakById
    table = WeakById(least=4)
    tensors = [lt.zeros(1) for _ in range(3)]
    for t in tensors:
        table.add(t)
    table.add(tensors[0])   # (as a new tensor with a dead one's id is added)
    assert [id(t) for t in table.live()] == [id(tensors[1]), id(tensors[2]), id(tensors[0])]
    many = [lt.zeros(1) for _ in range(40)]
    for t in many:
        table.add(t)
    del many[:30]
    for _ in range(500):   # dead entries are swept as the table grows: within twice the most alive at once
        table.add(lt.zeros(1))
        assert len(table.refs) <= 2 * (3 + 40 + 1) + 4
    assert len(table.live()) == 3 + 10


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


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64"])
def test_element_reads_match_numpy_for_every_dtype_and_index(device, dtype):
    rng = np.random.default_rng(8)
    for shape in [(1,), (7,), (3, 1, 4), (2, 5, 1, 3)]:
        values = (rng.standard_normal(shape) * 50).astype(dtype)
        x = lt.asarray(values, device=device).realize()
        realized_reshape = (x.reshape(-1) if len(shape) > 1 else x).realize()   # (memory seen with another shape)
        flat = values.reshape(-1)
        for _ in range(6):
            index = tuple(int(rng.integers(-n, n)) for n in shape)
            assert x[index].item() == values[index]
            assert type(x[index].item()) is type(values[index].item())
            k = int(rng.integers(-flat.size, flat.size))
            assert realized_reshape[k].item() == flat[k]
    with pytest.raises(IndexError, match="out of bounds"):
        x[0, 5, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0, 0]


def test_element_reads_of_tensors_autograd_tracks_and_of_pending_values():
    w = lt.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
    y = (w * 2).realize()   # (its node stays, for backward: its value is found aside)
    assert y[1, 2].item() == 10.0 and float(w[0, 1]) == 1.0
    pending = lt.asarray(np.arange(4.0)) + 1   # (not realized: computed for the read)
    assert pending[-1].item() == 4.0 and bool(pending[0])


def test_iterating_a_0d_tensor_raises_at_iter():
    with pytest.raises(TypeError, match="0-d"):
        iter(lt.asarray(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(np.asarray(1.0))   # (numpy's behaviour, which this follows)


# ---- views alias, as numpy's ------------------------------------------------------------------

def test_the_issues_views_example(device):
    x, n = lt.asarray(np.arange(6.0), device=device), np.arange(6.0)
    v, nv = x[2:5], n[2:5]
    r, nr = x.reshape(2, 3), n.reshape(2, 3)
    x[3] = 42
    n[3] = 42
    assert v.tolist() == nv.tolist() == [2, 42, 4]
    v[0] = 7
    nv[0] = 7
    assert x.tolist() == n.tolist()
    x += 1
    n += 1
    assert r.tolist() == nr.tolist() and v.tolist() == nv.tolist()


def _random_view(rng, array, module):
    """One of numpy's view-making operations, chosen by rng, applied with `module`'s spelling."""
    shape = array.shape
    kind = rng.integers(6)
    if kind == 0 and array.ndim:
        index = []
        for n in shape:
            a, b = sorted(rng.integers(-n - 1, n + 2, size=2))
            step = int(rng.choice([1, 1, 2, 3, -1, -2]))
            index.append(slice(int(a), int(b), step) if step > 0 else slice(int(b), int(a), step))
        return array[tuple(index)]
    if kind == 1 and array.ndim >= 2:
        order = tuple(int(a) for a in rng.permutation(array.ndim))
        return array.transpose(order)
    if kind == 2:
        return module.expand_dims(array, int(rng.integers(-array.ndim - 1, array.ndim + 1)))
    if kind == 3 and 1 in shape:
        return module.squeeze(array, axis=shape.index(1))
    if kind == 4 and array.ndim:
        return module.flip(array, axis=int(rng.integers(array.ndim)))
    if kind == 5 and array.ndim >= 2:   # (a view where numpy makes one, else a copy: in both)
        return array.reshape(-1)
    return array[...]


def _random_write(rng, target, ntarget):
    kind = rng.integers(3)
    values = rng.integers(-50, 50, size=ntarget.shape).astype(ntarget.dtype)
    if kind == 0 or not ntarget.ndim:
        target += 3
        ntarget += 3
    elif kind == 1:
        i = int(rng.integers(ntarget.shape[0])) if ntarget.shape[0] else 0
        if ntarget.shape[0]:
            target[i] = values[i]
            ntarget[i] = values[i]
    else:
        target[::2] = values[::2]
        ntarget[::2] = values[::2]


@pytest.mark.parametrize("seed", range(40))
def test_writes_through_random_views_match_numpy(device, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(0, 5, size=rng.integers(1, 4)))
    base = rng.integers(-100, 100, size=shape).astype(np.int32)
    names = {"x": (lt.asarray(base, device=device), base.copy())}
    for step in range(6):
        source = sorted(names)[rng.integers(len(names))]
        t, n = names[source]
        if rng.random() < 0.5 and n.ndim:   # a new view (0-d tensors are values: no views of them)
            state = rng.bit_generator.state
            nv = _random_view(rng, n, np)
            rng.bit_generator.state = state
            tv = _random_view(rng, t, lt)
            assert tv.shape == nv.shape
            names[f"v{step}"] = (tv, nv)
        else:
            _random_write(rng, t, n)
        for name, (t, n) in names.items():
            np.testing.assert_array_equal(t.numpy(), n, err_msg=f"{name} after step {step}")


def test_a_reshape_numpy_copies_is_a_new_tensor():
    x = lt.asarray(np.arange(6.0).reshape(2, 3))
    flat = x.T.reshape(-1)   # numpy copies here: flat is no view of x
    flat[0] = 100
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    row = x.reshape(-1)      # a view
    row[0] = 100
    assert x[0, 0].item() == 100


def test_copies_are_copies():
    x = lt.asarray(np.arange(4.0))
    for made in (x.flatten(), lt.tile(x, 1), lt.repeat(x, 1), x.astype(lt.float64, copy=True)):
        made[0] = -1
    assert x.tolist() == [0, 1, 2, 3]


def test_a_broadcast_view_is_read_only():
    x = lt.asarray(np.arange(3.0))
    b = lt.broadcast_to(x, (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        b[0, 0] = 5
    with pytest.raises(ValueError, match="read-only"):
        x.expand(2, 3)[...] += 1
    assert x.tolist() == [0, 1, 2]


def test_one_element_and_0d_values_are_not_views():
    x = lt.asarray(np.arange(4))
    e = x[1]           # numpy: a scalar
    e += 10
    assert x.tolist() == [0, 1, 2, 3] and e.item() == 11
    s = x.sum()        # 0-d: a value
    s2 = s.reshape(1)
    s2[0] = 0
    assert s.item() == 6


def test_gradients_flow_through_writes_into_views():
    w = lt.asarray([1.0, 2.0, 3.0], requires_grad=True)
    y = w * 1.0
    v = y[1:]
    v *= 2.0          # y is [1, 4, 6] now
    assert y.tolist() == [1.0, 4.0, 6.0]
    (y * y).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 16.0, 24.0])


def test_jit_sees_writes_into_views_of_its_inputs():
    def step(x):
        x[1:][::2] += 1.0
        x.T[0] *= 2.0
        return x.sum()

    fast = lt.jit(step)
    for i in range(4):
        a = lt.asarray(np.arange(12.0).reshape(4, 3) + i)
        b = np.arange(12.0).reshape(4, 3) + i
        got = fast(a).item()
        b[1:][::2] += 1.0
        b.T[0] *= 2.0
        assert got == b.sum()
        np.testing.assert_array_equal(a.numpy(), b)


# ---- autograd and small things a user reaches for -----------------------------------------------

def test_a_leaf_nobody_keeps_still_takes_part_in_its_graph():
    def loss():
        w = lt.ones(3, requires_grad=True)   # dropped when the function returns
        return (w * 2).sum()

    result = loss()
    assert result.requires_grad
    result.backward()   # its gradient goes nowhere, as in PyTorch; no error
    assert result.item() == 6.0
    y = lt.ones(3, requires_grad=True) * 2
    assert y.requires_grad and y.sum().requires_grad


def test_numpy_and_pytorch_spellings():
    x = lt.arange(6).reshape(2, 3)
    a = lt.array(x)
    a[0, 0] = 100                 # np.array copies
    t = lt.tensor([[1.0, 2.0]], requires_grad=True)
    assert x[0, 0].item() == 0 and t.requires_grad and t.is_leaf and t.dtype == lt.float32
    for copied in (x.copy(), x.clone()):
        copied[1, 1] = -1
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    r = x.ravel()
    r[5] = 50                     # ravel is a view here, as numpy's
    assert x[1, 2].item() == 50 and x.flatten().shape == (6,)
    assert (x.nbytes, x.itemsize) == (np.zeros((2, 3), np.int64).nbytes, 8)
    assert x.clip(1, 4).tolist() == np.clip(x.numpy(), 1, 4).tolist()
    assert f"{lt.asarray(2.0) / 3:.4f}" == "0.6667" and f"{lt.asarray(7)}" == "7"
    with pytest.raises(TypeError):
        f"{x:.2f}"


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "float32", "float64"])
def test_sum_and_prod_take_dtype(device, dtype):
    values = np.random.default_rng(0).integers(-3, 4, size=(3, 50)).astype(np.int16)
    x = lt.asarray(values, device=device)
    for axis in (None, 1):
        for name in ("sum", "prod"):
            want = getattr(values, name)(axis=axis, dtype=dtype)
            got = getattr(x, name)(axis=axis, dtype=dtype)
            assert got.dtype.name == want.dtype.name
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_loops_without_realize_in_several_threads_at_once():
    import threading
    rng = np.random.default_rng(6)
    a = rng.standard_normal((20, 7)).astype(np.float32)
    results, errors = {}, []

    def run(k):
        try:
            A, x = lt.asarray(a), lt.zeros(7)
            for _ in range(150):
                x = x - 0.01 * (A.T @ (A @ x - float(k)))
            results[k] = x.numpy()
        except Exception as error:   # (reported below, with the thread's number)
            errors.append((k, error))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(4):
        expected = np.zeros(7, np.float32)
        for _ in range(150):
            expected = expected - np.float32(0.01) * (a.T @ (a @ expected - np.float32(k)))
        np.testing.assert_allclose(results[k], expected, rtol=2e-4, atol=1e-5)


def test_scalar_constants_found_again_keep_their_sign_type_and_nan():
    # (recent CONST nodes are found by value: 0.0 == -0.0 and 1 == 1.0 must not collide)
    x = lt.asarray(np.array([1.0, -2.0], np.float32))
    for _ in range(2):
        assert np.signbit((x * 0.0).numpy()).tolist() == [False, True]
        assert np.signbit((x * -0.0).numpy()).tolist() == [True, False]
        assert np.isnan((x + float("nan")).numpy()).all()
        assert (lt.arange(3) * 1).dtype == lt.int64 and (lt.arange(3) * 1.0).dtype == lt.float64   # (numpy's)
        np.testing.assert_array_equal((x ** 2).numpy(), np.array([1.0, 4.0], np.float32))
        np.testing.assert_array_equal((x / 3).numpy(), np.array([1.0, -2.0], np.float32) / np.float32(3))


def test_backward_of_a_deep_graph_computes_all_gradients_together(device):
    """A loss deeper than the pending-work bound, with several leaves: backward() makes one
    gradient tensor per leaf, each as deep as the loss. Each was cut and realized on its own as
    it was made, computing the graph they share once per leaf (a GPT's training step: 2,295
    kernels instead of 304). They are realized together, once."""
    rng = np.random.default_rng(5)
    steps, n = 120, 8
    w0 = [rng.uniform(0.5, 1.5, 7).astype(np.float32) for _ in range(n)]
    ws = [lt.asarray(w, device=device, requires_grad=True) for w in w0]
    x = lt.ones(7, device=device)
    for i in range(steps):
        x = (x * ws[i % n]).sin()
    loss = x.sum()
    assert loss.node.depth > realize_module.PENDING_MAX_DEPTH - steps
    before = launched()
    loss.backward()
    for w in ws:
        w.grad.realize()
    assert launched() - before <= steps
    # numpy: the chain forward, then its gradient backward
    xs = [np.ones(7)]
    for i in range(steps):
        xs.append(np.sin(xs[-1] * w0[i % n]))
    grads, g = [np.zeros(7) for _ in range(n)], np.ones(7)
    for i in reversed(range(steps)):
        local = g * np.cos(xs[i] * w0[i % n])
        grads[i % n] += local * xs[i]
        g = local * w0[i % n]
    for w, want in zip(ws, grads):
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=2e-4, atol=1e-5)
