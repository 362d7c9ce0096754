"""Realize plans: a graph structure seen before runs its recorded kernels on new buffers, and
anything that changes the structure (constants, shapes, dtypes, shared inputs) gets its own."""
import numpy as np
import pytest

import lazytensor as lt
from lazytensor import plan
from lazytensor.devices import runtime


def hits() -> int:
    return lt.stats()["plan_cache_hits"]


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def test_same_structure_new_buffers_reuses_the_plan(rng, device):
    for i in range(3):
        a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((5, 7)).astype(np.float32)
        before = hits()
        got = ((lt.asarray(a, device=device) * lt.asarray(b, device=device)).exp().sum(axis=1) - 1.0).numpy()
        np.testing.assert_allclose(got, np.exp(a * b).sum(axis=1) - 1, rtol=1e-5)
        if i:
            assert hits() == before + 1


def test_a_shared_input_is_another_structure(rng):
    a, b = rng.standard_normal(9).astype(np.float32), rng.standard_normal(9).astype(np.float32)
    la, lb = lt.asarray(a), lt.asarray(b)
    np.testing.assert_allclose((la * lb - la).numpy(), a * b - a, rtol=1e-6)
    np.testing.assert_allclose((la * la - la).numpy(), a * a - a, rtol=1e-6)   # b is a now
    np.testing.assert_allclose((lb * la - lb).numpy(), b * a - b, rtol=1e-6)


def test_which_input_each_branch_reads_is_part_of_the_structure(rng):
    # (a+b)*(c+a), (a+b)*(b+c), (a+b)*(c+c): the same ops, dtypes and shapes over three inputs
    # (or two); only which input each branch reads tells them apart
    a, b, c = (rng.standard_normal(7).astype(np.float32) for _ in range(3))
    la, lb, lc = lt.asarray(a), lt.asarray(b), lt.asarray(c)
    for _ in range(2):
        np.testing.assert_allclose(((la + lb) * (lc + la)).numpy(), (a + b) * (c + a), rtol=1e-6)
        np.testing.assert_allclose(((la + lb) * (lb + lc)).numpy(), (a + b) * (b + c), rtol=1e-6)
        np.testing.assert_allclose(((la + lb) * (lc + lc)).numpy(), (a + b) * (c + c), rtol=1e-6)
        np.testing.assert_allclose(((lc + lb) * (la + lb)).numpy(), (c + b) * (a + b), rtol=1e-6)
        np.testing.assert_allclose((((la + lb) * 2) * ((la + lb) * 2 + lc)).numpy(),
                                   ((a + b) * 2) * ((a + b) * 2 + c), rtol=1e-6)


def test_the_same_buffer_under_two_nodes_reads_the_same_memory(rng):
    a = rng.standard_normal(5).astype(np.float32)
    x = lt.asarray(a)
    twin = lt.Tensor(lt.ir.graph.Node(lt.ir.ops.Op.BUFFER, x.dtype, x.shape, (), x.node.arg))
    assert twin.node is not x.node   # (buffer nodes are not hash-consed: each is its own leaf)
    np.testing.assert_allclose((x * twin - x).numpy(), a * a - a, rtol=1e-6)


@pytest.mark.parametrize("change", ["constant", "shape", "dtype", "negative zero"])
def test_what_changes_the_structure_changes_the_result(rng, change):
    a = rng.standard_normal(6)
    first = (lt.asarray(a.astype(np.float32)) + 0.0).numpy()
    if change == "constant":
        got, want = (lt.asarray(a.astype(np.float32)) + 1.5).numpy(), a.astype(np.float32) + np.float32(1.5)
    elif change == "shape":
        got, want = (lt.asarray(a[:4].astype(np.float32)) + 0.0).numpy(), a[:4].astype(np.float32)
    elif change == "dtype":
        got, want = (lt.asarray(a) + 0.0).numpy(), a
    else:   # x + (-0.0) simplifies to x, x + 0.0 does not: -0.0 + 0.0 is +0.0
        z = np.array([-0.0, 1.0], np.float32)
        got, want = (lt.asarray(z) + (-0.0)).numpy(), z + np.float32(-0.0)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(first, a.astype(np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.dtype == want.dtype


def test_realizing_several_roots_keeps_their_order(rng):
    for _ in range(2):
        a = rng.standard_normal((4, 3)).astype(np.float32)
        x = lt.asarray(a)
        s, m, t = x.sum(axis=0), x.max(axis=1), (x * 2).T
        lt.realize(t, s, m)
        np.testing.assert_allclose(s.numpy(), a.sum(axis=0), rtol=1e-6)
        np.testing.assert_allclose(m.numpy(), a.max(axis=1))
        np.testing.assert_allclose(t.numpy(), (a * 2).T)


def test_opaque_steps_and_zero_size_results_replay(rng):
    for n in (5, 5, 0, 0):
        a = rng.standard_normal(n).astype(np.float32)
        got = (lt.sort(lt.asarray(a) * -1.0) + 1.0).numpy()
        np.testing.assert_allclose(got, np.sort(-a) + 1)
        assert got.shape == (n,)


def test_a_plan_refuses_buffers_on_another_device():
    others = [d for d in lt.devices() if d != "cpu"]
    if not others:
        pytest.skip("needs a second device")
    x = lt.asarray(np.ones(3, np.float32))
    (x * 2).realize()
    y = lt.asarray(np.ones(3, np.float32), device=others[0])
    with pytest.raises(ValueError, match="different devices|move"):
        (lt.Tensor((y * 2).node, "cpu")).numpy()   # a graph that claims cpu but reads another device


def test_forgetting_old_plans_keeps_results_right(rng, monkeypatch):
    monkeypatch.setattr(runtime("cpu").plans, "capacity", 2)
    a = rng.standard_normal(8).astype(np.float32)
    x = lt.asarray(a)
    for k in range(6):
        np.testing.assert_allclose((x * float(k) + 1.0).numpy(), a * np.float32(k) + 1, rtol=1e-6)
    assert len(runtime("cpu").plans) <= 2


def test_a_training_step_is_a_cached_plan():
    lt.manual_seed(0)
    net = lt.nn.Sequential(lt.nn.Linear(6, 8), lt.nn.ReLU(), lt.nn.Linear(8, 3))
    optimizer = lt.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    x, y = lt.randn(16, 6), lt.asarray(np.arange(16) % 3)
    losses = []
    for step in range(5):
        if step == 3:
            compiled, before = lt.stats()["kernels_compiled"], hits()
        optimizer.zero_grad()
        loss = lt.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert lt.stats()["kernels_compiled"] == compiled
    assert hits() >= before + 4       # backward's realize and the step's, twice
    assert losses[-1] < losses[0]


def test_intermediates_whose_lifetimes_do_not_overlap_share_memory(rng, device):
    """A chain of steps (sorts are steps of their own, each after a kernel): a later step of the
    same shape and dtype writes into an intermediate's memory after its last reader (the rest
    go back to the pool). The values are unchanged, and the inputs and outputs are never reused."""
    x = rng.standard_normal(4096).astype(np.float32)
    X = lt.asarray(x, device=device)
    rt = runtime(X.device)
    allocate, addresses = rt.device.allocate, []

    def spy(shape, dtype):
        buffer = allocate(shape, dtype)
        addresses.append(buffer.address or id(buffer.handle))   # (an OpenCL buffer has no address)
        return buffer

    def chain(T):
        for _ in range(4):
            T = lt.sort(T * 1.5 + 1.0)
        return T
    rt.device.allocate = spy
    try:
        out = chain(X)
        out.realize()
    finally:
        rt.device.allocate = allocate
    want = x
    for _ in range(4):
        want = np.sort(want * np.float32(1.5) + np.float32(1.0))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)   # (x*1.5+1 is one fma here)
    # a kernel and a sort per link, 8 steps, in two blocks of memory: each step writes where the
    # step before last did
    assert len(addresses) == 2 and len(set(addresses)) == 2
    found = next(reversed(rt.plans.values()))   # the plan just built records what each step frees
    reused = {i for f in found.frees for i in f} | {i for i in found.takes if i is not None}
    assert len(found.steps) == 8 and not reused & (set(found.outputs) | set(range(found.n_leaves)))
    for j, take in enumerate(found.takes):   # (never memory the step itself reads)
        assert take is None or take not in found.steps[j].inputs


def test_memory_reuse_stays_on_its_device_shape_and_dtype():
    f32 = lt.float32
    step = lambda inputs, shape=(4,), dtype=f32: plan.Step(None, inputs, shape, dtype)   # noqa: E731
    # slots: 0 the input; 1..5 the steps' outputs, each read by the next step; 5 is the output
    steps = [step((0,)), step((1,)), step((2,)), step((3,), (2, 2)), step((4,))]
    frees, takes = plan.memory(1, steps, [5])
    assert takes == (None, None, 1, None, 3)   # never the input, the output, a (2, 2) slot
    assert frees == ((), (), (2,), (), (4,))   # (slots 1 and 3 are taken, not dropped)
    devices = ["cpu", "opencl:0", "opencl:0", "opencl:0", "opencl:0"]
    assert plan.memory(1, steps, [5], devices)[1] == (None, None, None, None, 3)   # slot 1 is cpu memory
    steps[2] = step((2,), (4,), lt.float64)
    assert plan.memory(1, steps, [5])[1] == (None, None, None, None, 2)   # slot 3 holds float64
