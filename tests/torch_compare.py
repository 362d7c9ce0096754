"""Running one computation in lazytensor and in PyTorch and comparing the values and the
gradients (tests/test_torch_api*.py)."""
import numpy as np
import pytest

import lazytensor as lt

torch = pytest.importorskip("torch")


def rand(shape, dtype=np.float32, seed=0):
    """Standard normal values (for floats), small ints otherwise."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(-5, 6, shape).astype(dtype)


def _flat(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _tol(dtype) -> float:
    return {np.dtype(np.float16): 3e-3, np.dtype(np.float32): 2e-5}.get(np.dtype(dtype), 1e-12)


def same(got, want) -> None:
    """lazytensor's tensor (or Python value) equal to PyTorch's: shape, dtype and values."""
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got = got.numpy() if isinstance(got, lt.Tensor) else np.asarray(got)
    assert got.shape == want.shape, f"shape {got.shape} != torch's {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != torch's {want.dtype}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = _tol(want.dtype)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def compare(lt_fn, torch_fn, *arrays, device="cpu", grad=True):
    """lt_fn(*tensors) against torch_fn(*torch tensors): each output's values, and where `grad`,
    the gradients of a random weighting of the float outputs with respect to the float inputs.
    Returns lazytensor's outputs."""
    xs = [lt.asarray(a, device=device) for a in arrays]
    ts = [torch.tensor(a) for a in arrays]
    wants_grad = grad and any(a.dtype.kind == "f" for a in arrays)
    if wants_grad:
        for x, t, a in zip(xs, ts, arrays):
            if a.dtype.kind == "f":
                x.requires_grad_()
                t.requires_grad_()
    got, want = _flat(lt_fn(*xs)), _flat(torch_fn(*ts))
    assert len(got) == len(want), f"{len(got)} outputs, torch gives {len(want)}"
    for g, w in zip(got, want):
        same(g, w)
    if not wants_grad:
        return got
    weights = [rand(tuple(w.shape), w.detach().numpy().dtype, seed=i + 1) for i, w in enumerate(want)]
    floats = [i for i, w in enumerate(want) if w.dtype.is_floating_point and w.requires_grad]
    if not floats:
        return got
    sum((got[i] * lt.asarray(weights[i], device=device)).sum() for i in floats).backward()
    sum((want[i] * torch.tensor(weights[i])).sum() for i in floats).backward()
    for x, t in zip(xs, ts):
        if t.requires_grad:
            want_grad = t.grad if t.grad is not None else torch.zeros_like(t)
            if x.grad is None and t.numel() == 0:   # (an empty input that nothing reads)
                continue
            assert x.grad is not None, "no gradient reached an input that torch's reaches"
            same(x.grad, want_grad)
    return got
