"""The compile pipeline (lazytensor/pipeline.py): its stages give realize's results, print when
asked (LT_DUMP), and their verifiers refuse broken IR."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import run_isolated
from lazytensor import pipeline
from lazytensor.devices import runtime
from lazytensor.ir import loop
from lazytensor.ir.dtypes import float32, int64
from lazytensor.ir.graph import Node
from lazytensor.ir.ops import Op
from lazytensor.ir.verify import IRError, verify, verify_kernel_expression, verify_loops
from lazytensor.scheduler.schedule import Split, Vectorize


def test_stages_compute_what_realize_computes(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 29)).astype(np.float32)
    x = lt.asarray(a, device=device)
    out = (x.exp() - x.max(axis=1, keepdims=True)).sum(axis=1) * 2
    rt = runtime(device)
    found = pipeline.kernels([out.node], rt.device.target)
    assert found.kernels and found.roots[0].shape == (37, 1)
    results = {}
    for spec in found.kernels:   # (in order: a kernel runs after the ones it reads)
        compiled = pipeline.compile_kernel(spec, rt)
        result = rt.device.allocate(spec.root.shape, spec.root.dtype)
        inputs = [results[n] if n in results else n.arg for n in spec.inputs]
        rt.launch(compiled, [result] + inputs)
        results[spec.root] = result
    got = rt.device.to_numpy(results[found.kernels[-1].root]).reshape(-1)
    np.testing.assert_allclose(got, out.numpy(), rtol=1e-5)


def test_a_given_schedule_replaces_the_heuristic_one():
    rt = runtime("cpu")
    a = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    (spec,) = pipeline.kernels([(lt.asarray(a) * 3).node], rt.device.target).kernels
    _, schedule, kernel = pipeline.loops(spec, rt.device.target, (Split("i0", 64), Vectorize("i0_i", 8)))
    assert schedule == (Split("i0", 64), Vectorize("i0_i", 8))
    assert [f.var.name for f in loop.walk(kernel.body) if isinstance(f, loop.For)] == ["i0_o", "i0_i"]
    compiled = pipeline.compile_kernel(spec, rt, schedule)
    out = rt.device.allocate((1000,), float32)
    rt.launch(compiled, [out, spec.inputs[0].arg])
    np.testing.assert_allclose(rt.device.to_numpy(out), a * 3, rtol=1e-6)


def test_complex_and_bfloat16_leaves_are_given_as_the_kernels_read_them():
    z = lt.asarray(np.arange(4) * (1 + 2j), dtype=lt.complex64)
    b = lt.asarray(np.arange(4), dtype=lt.bfloat16)
    found = pipeline.kernels([(z * 2).node, (b * 2).node], runtime("cpu").device.target, [z.node, b.node])
    assert [(leaf.dtype.name, leaf.shape) for leaf in found.leaves] == [("float32", (4, 2)), ("uint16", (4,))]
    assert all(not root.dtype.is_complex and root.dtype != lt.bfloat16 for root in found.roots)


def test_dump_prints_every_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_DUMP", "all")
    out = run_isolated("import lazytensor as lt; (lt.ones((8, 16)).exp().sum(axis=1) * 2).numpy()", tmp_path)
    for stage in pipeline.STAGES:
        assert f"---- {stage} ----" in out.stderr, stage
    assert "for r0_1 in 0..16" in out.stderr   # the loop IR, as text
    assert "define" in out.stderr               # LLVM IR: the source


def test_verifiers_refuse_broken_ir():
    x = Node(Op.CONST, float32, (3,), (), 1.0)
    with pytest.raises(IRError, match="operand dtypes differ"):
        verify([Node(Op.ADD, float32, (3,), (x, Node(Op.CONST, int64, (3,), (), 1)))])
    with pytest.raises(IRError, match="rules give shape"):
        verify([Node(Op.NEG, float32, (4,), (x,))])
    buffer = lt.ones(3).realize().node
    with pytest.raises(IRError, match="does not belong in a kernel expression"):
        verify_kernel_expression(Node(Op.NEG, float32, (3,), (buffer,)))
    i = loop.Var("i0")
    kernel = loop.Kernel("k", (loop.Param(float32, True), loop.Param(float32, False)),
                         (loop.For(i, loop.const(0), loop.const(3), (loop.Store(0, i, loop.Load(1, i, float32)),)),))
    verify_loops(kernel)   # (a correct one passes)
    unbound = loop.Kernel("k", kernel.params, (loop.Store(0, i, loop.Load(1, i, float32)),))
    with pytest.raises(IRError, match="reads i0 where it is not defined"):
        verify_loops(unbound)
    body = (loop.For(i, loop.const(0), loop.const(3), (loop.Store(1, i, loop.Load(1, i, float32)),)),)
    into_input = loop.Kernel("k", kernel.params, body)
    with pytest.raises(IRError, match="not an output"):
        verify_loops(into_input)
