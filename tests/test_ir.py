"""The IR's own contracts: rule tables cover every op, views agree with numpy, compiled kernels
agree with the reference interpreter, and the verifier catches broken graphs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazytensor as lt
from lazytensor.backends.cpu import render as cpu_render  # the module
from lazytensor.ir.dtypes import float32, int32
from lazytensor.ir.graph import Node
from lazytensor.ir.interpret import interpret
from lazytensor.ir.ops import COMPLEX_PARTS, ELEMENTWISE, GRAPH_ONLY, INDEXING, MOVEMENT, OPAQUE, REDUCTION, Op
from lazytensor.ir.rules import DTYPE_RULES, NUMPY_REFERENCE, SHAPE_RULES
from lazytensor.ir.verify import IRError, verify
from lazytensor.ir.view import ViewStack
from lazytensor.ir import loop


@pytest.mark.parametrize("op", sorted(ELEMENTWISE | MOVEMENT | REDUCTION | INDEXING | OPAQUE | GRAPH_ONLY,
                                      key=lambda o: o.name),
                         ids=lambda o: o.name)
def test_every_op_has_every_rule(op):
    assert op in DTYPE_RULES, f"{op.name} has no dtype rule"
    assert op in SHAPE_RULES, f"{op.name} has no shape rule"
    assert op in NUMPY_REFERENCE, f"{op.name} has no numpy reference"


@pytest.mark.parametrize("op", sorted(ELEMENTWISE - COMPLEX_PARTS | {Op.IDIV, Op.IMOD}, key=lambda o: o.name),
                         ids=lambda o: o.name)
def test_every_elementwise_op_has_cpu_code(op):   # (complex parts never reach a backend: ir/complex.py)
    assert op in cpu_render._ALU, f"the cpu renderer has no code for {op.name}"


# ---- views vs numpy ----------------------------------------------------------------------------

def _apply_numpy(array, move):
    kind, arg = move
    if kind == "reshape":
        return array.reshape(arg)
    if kind == "permute":
        return array.transpose(arg)
    if kind == "shrink":
        return array[tuple(slice(a, b if b >= 0 else None, s) for a, b, s in arg)]
    if kind == "pad":
        return np.pad(array, arg)
    if kind == "flip":
        return np.flip(array, arg)
    return np.broadcast_to(array, arg)


@st.composite
def movement_chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    moves, current = [], shape
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["reshape", "permute", "shrink", "pad", "flip", "expand"]))
        if kind == "reshape":
            size = int(np.prod(current))
            divisors = [d for d in range(1, size + 1) if size % d == 0]
            first = draw(st.sampled_from(divisors))
            arg = (first, size // first)
        elif kind == "permute":
            arg = tuple(draw(st.permutations(range(len(current)))))
        elif kind == "shrink":
            arg = []
            for n in current:
                step = draw(st.sampled_from([1, 2, -1, -2]))
                start, stop = (0, n) if step > 0 else (n - 1, -1)
                arg.append((start, stop, step))
            arg = tuple(arg)
        elif kind == "pad":
            arg = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in current)
        elif kind == "flip":
            arg = tuple(a for a in range(len(current)) if draw(st.booleans()))
        else:
            if 1 not in current:
                continue
            arg = tuple(3 if n == 1 else n for n in current)
        moves.append((kind, arg))
        current = _apply_numpy(np.empty(current), (kind, arg)).shape
    return shape, moves


@settings(max_examples=150, deadline=None)
@given(movement_chains())
def test_view_stack_indexes_like_numpy(chain):
    """Evaluating a ViewStack's index expressions in Python gives numpy's element for each index."""
    shape, moves = chain
    data = np.arange(1, int(np.prod(shape)) + 1).reshape(shape)
    want, view = data, ViewStack.contiguous(shape)
    for kind, arg in moves:
        want = _apply_numpy(want, (kind, arg))
        view = getattr(view, "expand" if kind == "expand" else kind)(arg)
    assert view.shape == want.shape
    flat = data.reshape(-1)
    for idx in np.ndindex(*want.shape):
        index, valid = view.index([loop.const(i) for i in idx])
        ok = True if valid is None else _evaluate(valid)
        got = flat[_evaluate(index)] if ok else 0
        assert got == want[idx], (moves, idx)


def _evaluate(e):
    if isinstance(e, loop.Const):
        return e.value
    a, b = (_evaluate(s) for s in e.srcs)
    return {Op.ADD: a + b, Op.MUL: a * b, Op.IDIV: a // b if b else 0, Op.IMOD: a % b if b else 0,
            Op.CMPLT: a < b, Op.AND: a and b}[e.op]


# ---- compiled kernels agree with the interpreter -----------------------------------------------

_UNARY_SAFE = [Op.NEG, Op.ABS, Op.EXP, Op.SIN, Op.COS, Op.TANH]
_BINARY_SAFE = [Op.ADD, Op.SUB, Op.MUL, Op.MAX, Op.MIN]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_graphs_match_the_interpreter(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    leaves = [lt.asarray(rng.standard_normal(shape).astype(np.float32) * 0.5) for _ in range(3)]
    values = list(leaves)
    for _ in range(data.draw(st.integers(1, 8))):
        choice = data.draw(st.sampled_from(["unary", "binary", "reduce", "transpose", "flip"]))
        x = data.draw(st.sampled_from(values))
        if choice == "unary":
            values.append(lt.Tensor(Node(data.draw(st.sampled_from(_UNARY_SAFE)), x.dtype, x.shape, (x.node,)), "cpu"))
        elif choice == "binary":
            y = data.draw(st.sampled_from([v for v in values if v.shape == x.shape]))
            values.append(lt.Tensor(Node(data.draw(st.sampled_from(_BINARY_SAFE)), x.dtype, x.shape, (x.node, y.node)), "cpu"))
        elif choice == "reduce":
            axis = data.draw(st.integers(0, x.ndim - 1))
            values.append((x.max(axis, keepdims=True) + x.tanh()).tanh())
        elif choice == "transpose" and x.ndim >= 2 and x.shape[0] == x.shape[1]:
            values.append(x.transpose(*([1, 0] + list(range(2, x.ndim)))) * 0.5)
        else:
            values.append(x.flip(0))
    out = values[-1]
    (want,) = interpret([out.node], lambda buffer: buffer.handle[: int(np.prod(buffer.shape))])
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-5, atol=2e-6)


# ---- verifier ----------------------------------------------------------------------------------

def test_verifier_accepts_user_graphs():
    x = lt.asarray(np.ones((3, 4), np.float32))
    verify([((x.T @ x).sum(0) + lt.arange(4) * 0.5).node])


def test_verifier_rejects_broken_nodes():
    a = lt.asarray(np.ones(3, np.float32)).node
    b = lt.asarray(np.ones(3, np.int32)).node
    with pytest.raises(IRError, match="dtypes differ"):
        verify([Node(Op.ADD, float32, (3,), (a, b))])
    with pytest.raises(IRError, match="rules give"):
        verify([Node(Op.EXP, float32, (4,), (a,))])
    with pytest.raises(IRError, match="sources"):
        verify([Node(Op.EXP, float32, (3,), (a, a))])
    with pytest.raises(IRError, match="condition"):
        verify([Node(Op.WHERE, float32, (3,), (a, a, a))])
    assert int32 is not float32


def test_the_reference_of_movement_edge_cases():
    # (the host computes single values with this table: a 0-d PAD and an empty reversed SHRINK
    # once failed or read the whole axis)
    from lazytensor.ir.rules import NUMPY_REFERENCE
    assert NUMPY_REFERENCE[Op.PAD]([np.array(True)], (), None) == np.array(True)
    assert NUMPY_REFERENCE[Op.SHRINK]([np.arange(3.0)], ((-1, -1, -1),), None).shape == (0,)
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(NUMPY_REFERENCE[Op.SHRINK]([a], ((2, -1, -1), (1, 4, 2)), None), a[::-1, 1::2])
    x = lt.asarray([True, False])[:1]
    assert lt.asarray(x[0]).numpy().tolist() is True and x.pad(((0, 0),)).numpy().tolist() == [True]
