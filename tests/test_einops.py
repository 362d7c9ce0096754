"""einops' top-level functions on lazytensor tensors: lazy results equal to einops on numpy."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import assert_close

einops = pytest.importorskip("einops", reason="einops is not installed")

_rng = np.random.default_rng(11)

REARRANGE = [
    ("b c h w -> b (h w) c", (2, 3, 4, 5), {}),
    ("b c h w -> (b c) h w", (1, 3, 1, 5), {}),
    ("b (h p1) (w p2) -> b h w (p1 p2)", (2, 6, 4), {"p1": 3, "p2": 2}),
    ("a b c -> c b a", (3, 1, 2), {}),
    ("a ... -> ... a", (2, 3, 4), {}),
    ("a b -> b a 1", (0, 3), {}),
    ("(a b) -> a b", (12,), {"a": 3}),
]


@pytest.mark.parametrize("pattern, shape, sizes", REARRANGE, ids=[p for p, _, _ in REARRANGE])
def test_rearrange(device, pattern, shape, sizes):
    a = _rng.standard_normal(shape).astype(np.float32)
    got = einops.rearrange(lt.asarray(a, device=device), pattern, **sizes)
    assert isinstance(got, lt.Tensor) and got.device == device
    assert_close(got, einops.rearrange(a, pattern, **sizes))


@pytest.mark.parametrize("reduction", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("pattern, sizes", [("b c h w -> b c", {}), ("b c (h h2) w -> b c h w", {"h2": 2}),
                                            ("b c h w -> c", {}), ("b c h w -> b 1 h w", {})])
def test_reduce(device, reduction, pattern, sizes):
    a = _rng.uniform(0.5, 1.5, (2, 3, 4, 5)).astype(np.float32)
    got = einops.reduce(lt.asarray(a, device=device), pattern, reduction, **sizes)
    assert isinstance(got, lt.Tensor)
    want = einops.reduce(a, pattern, reduction, **sizes)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_reduce_of_integers(device):
    a = _rng.integers(-5, 5, (3, 4)).astype(np.int32)
    assert_close(einops.reduce(lt.asarray(a, device=device), "a b -> a", "sum"), einops.reduce(a, "a b -> a", "sum"))
    with pytest.raises(Exception):   # (einops refuses a mean of integers, as for every backend)
        einops.reduce(lt.asarray(a, device=device), "a b -> a", "mean")


@pytest.mark.parametrize("pattern, sizes", [("h w -> h w c", {"c": 3}), ("h w -> (h 2) (w k)", {"k": 2}),
                                            ("h w -> r h w", {"r": 1})])
def test_repeat(device, pattern, sizes):
    a = _rng.standard_normal((2, 3))
    got = einops.repeat(lt.asarray(a, device=device), pattern, **sizes)
    assert isinstance(got, lt.Tensor)
    assert_close(got, einops.repeat(a, pattern, **sizes))


def test_pack_and_unpack(device):
    a, b = _rng.standard_normal((2, 3, 4)), _rng.standard_normal((2, 4))
    packed, shapes = einops.pack([lt.asarray(a, device=device), lt.asarray(b, device=device)], "b * c")
    want, want_shapes = einops.pack([a, b], "b * c")
    assert isinstance(packed, lt.Tensor) and shapes == want_shapes
    assert_close(packed, want)
    for mine, theirs in zip(einops.unpack(packed, shapes, "b * c"), einops.unpack(want, want_shapes, "b * c")):
        assert isinstance(mine, lt.Tensor)
        assert_close(mine, theirs)


def test_results_stay_lazy_and_gradients_flow():
    a = _rng.standard_normal((2, 6))
    x = lt.asarray(a).requires_grad_()
    y = einops.reduce(einops.rearrange(x, "b (h w) -> b h w", h=2) ** 2, "b h w -> h", "sum")
    assert y.node.op.name != "BUFFER"   # (pending until read)
    y.sum().backward()
    assert_close(x.grad, 2 * a)
