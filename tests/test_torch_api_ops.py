"""PyTorch's ops that transformers use, checked against torch (values and gradients) or, for
einsum, numpy: masked_fill, softmax/log_softmax, bmm, einsum, topk, multinomial (statistically),
cumsum, clamp, tril/triu(diagonal=) and the casts by name (float(), long(), ...)."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import has_fp64
from torch_compare import compare, rand, same, torch


# ---- masked_fill ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, mask_shape", [((3, 4), (3, 4)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (1, 4)),
                                               ((2, 3, 4), ()), ((4, 4), (4, 1)), ((0, 3), (1, 3))], ids=str)
@pytest.mark.parametrize("value", [-np.inf, 0.5, 0])
def test_masked_fill_like_torch(device, shape, mask_shape, value):
    a, mask = rand(shape), rand(mask_shape, np.bool_, seed=3)
    compare(lambda x, m: x.masked_fill(m, value), lambda t, m: t.masked_fill(m, value), a, mask, device=device)


def test_masked_fill_dtypes_tensor_value_and_in_place(device):
    ints, mask = rand((3, 4), np.int32), rand((3, 4), np.bool_, seed=1)
    compare(lambda x, m: x.masked_fill(m, 7), lambda t, m: t.masked_fill(m, 7), ints, mask, device=device)
    a, v = rand((3, 4)), np.array(2.5, np.float32)   # a 0-d tensor value gets its gradient too
    compare(lambda x, m, val: x.masked_fill(m, val), lambda t, m, val: t.masked_fill(m, val), a, mask, v, device=device)
    causal = lt.tril(lt.ones(4, 4, device=device)) == 0   # attention's mask, as GPT code writes it
    square = rand((4, 4))
    scores = lt.asarray(square, device=device)
    want = torch.tensor(square).masked_fill(torch.tril(torch.ones(4, 4)) == 0, float("-inf"))
    same(scores.masked_fill(causal, float("-inf")), want)
    x = lt.asarray(a, device=device)
    view = x[1:]
    assert view.masked_fill_(lt.asarray(mask[1:], device=device), 0.0) is view
    want = torch.tensor(a)
    want[1:].masked_fill_(torch.tensor(mask[1:]), 0.0)
    same(x, want)   # (written through the view into its base, as in PyTorch)
    with pytest.raises(TypeError, match="bool"):
        x.masked_fill(lt.zeros((3, 4), dtype=lt.int32, device=device), 1.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        x.masked_fill(lt.zeros((2, 3, 4), dtype=lt.bool, device=device), 1.0)
    with pytest.raises(ValueError, match="0-d"):
        x.masked_fill(lt.asarray(mask, device=device), lt.ones(4, device=device))


# ---- softmax, log_softmax ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((1,), 0), ((4,), -1), ((), 0),
                                        ((2, 0), 1)], ids=str)
def test_softmax_like_torch(device, name, shape, dim):
    a = rand(shape) * 4
    compare(lambda x: getattr(x, name)(dim), lambda t: getattr(t, name)(dim), a, device=device)
    compare(lambda x: getattr(lt, name)(x, dim=dim), lambda t: getattr(torch, name)(t, dim=dim), a, device=device)


def test_softmax_dtypes_and_masks(device):
    a = rand((3, 6)) * 30
    a[0, 2:] = -np.inf          # a causal row: the masked entries get 0
    for name in ("softmax", "log_softmax"):
        compare(lambda x: getattr(x, name)(-1), lambda t: getattr(t, name)(-1), a, device=device)
        compare(lambda x: getattr(x, name)(-1, dtype=lt.float32), lambda t: getattr(t, name)(-1, dtype=torch.float32),
                a.astype(np.float16), device=device, grad=False)
        if has_fp64(device):
            compare(lambda x: getattr(x, name)(1), lambda t: getattr(t, name)(1), a.astype(np.float64), device=device)
    with pytest.raises(TypeError, match="float"):
        lt.arange(3, device=device).softmax(0)
    with pytest.raises(IndexError):
        lt.ones(3, device=device).softmax(1)


# ---- bmm, einsum ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("b, n, m, p", [(2, 3, 4, 5), (1, 1, 1, 1), (3, 0, 2, 4), (4, 2, 0, 3), (5, 7, 3, 1)])
def test_bmm_like_torch(device, b, n, m, p):
    compare(lambda x, y: lt.bmm(x, y), torch.bmm, rand((b, n, m), seed=1), rand((b, m, p), seed=2), device=device)


def test_bmm_errors():
    with pytest.raises(ValueError, match="3-D"):
        lt.bmm(lt.ones((3, 4)), lt.ones((4, 5)))
    with pytest.raises(ValueError, match="batch sizes"):
        lt.bmm(lt.ones((2, 3, 4)), lt.ones((1, 4, 5)))
    with pytest.raises(ValueError, match="do not fit"):
        lt.bmm(lt.ones((2, 3, 4)), lt.ones((2, 3, 5)))


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhtd,bhsd->bhts", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("bhts,bhsd->bthd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("iij->j", [(3, 3, 4)]), ("iji->j", [(3, 2, 3)]), ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]), ("ij->j", [(3, 4)]), ("i,j->ij", [(3,), (4,)]), ("i,i", [(5,), (5,)]), ("i,i->i", [(5,), (5,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("...ij,...jk", [(2, 1, 3, 4), (6, 4, 5)]), ("a...b,b...->a...", [(2, 3, 4), (4, 3)]),
    ("i,i,i->", [(5,), (5,), (5,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ijk,ikj->i", [(2, 3, 3), (2, 3, 3)]),
    ("Ba", [(2, 3)]), ("...", [(2, 3)]), ("i,i", [(0,), (0,)]), ("ij,jk->ik", [(2, 0), (0, 3)]), ("ij,jk->ik", [(1, 1), (1, 1)]),
    ("ijk,jl,kl->il", [(2, 3, 4), (3, 5), (4, 5)]), (" ij , jk -> ki ", [(2, 3), (3, 4)]), ("ab,cd->abcd", [(2, 1), (3, 2)]),
]


@pytest.mark.parametrize("equation, shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_like_numpy(device, equation, shapes):
    dtype = np.float64 if has_fp64(device) else np.float32
    arrays = [rand(s, dtype, seed=i) for i, s in enumerate(shapes)]
    got = lt.einsum(equation, *[lt.asarray(a, device=device) for a in arrays])
    want = np.einsum(equation, *arrays)
    assert got.shape == want.shape and got.dtype == lt.asarray(want).dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("equation, shapes", [EINSUMS[i] for i in (0, 3, 4, 5, 7, 10, 15, 19, 26)],
                         ids=[EINSUMS[i][0] for i in (0, 3, 4, 5, 7, 10, 15, 19, 26)])
def test_einsum_gradients_like_torch(device, equation, shapes):
    arrays = [rand(s, seed=i) for i, s in enumerate(shapes)]
    compare(lambda *xs: lt.einsum(equation, *xs), lambda *ts: torch.einsum(equation, *ts), *arrays, device=device)


def test_einsum_forms_dtypes_and_errors(device):
    a, b = rand((2, 3), np.int32, seed=1), rand((3, 4), np.int32, seed=2)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    np.testing.assert_array_equal(lt.einsum("ij,jk->ik", [x, y]).numpy(), np.einsum("ij,jk->ik", a, b))  # torch's list
    compare(lambda p, q: lt.einsum("ij,kj->ik", p, q), lambda p, q: torch.einsum("ij,kj->ik", p, q),  # broadcast 1s
            rand((3, 1)), rand((2, 5)), device=device)
    masks = rand((2, 3), np.bool_), rand((3, 2), np.bool_, seed=1)
    np.testing.assert_array_equal(lt.einsum("ij,jk->ik", *[lt.asarray(m, device=device) for m in masks]).numpy(),
                                  np.einsum("ij,jk->ik", *masks))
    out = lt.einsum("ij->ij", x)
    out[0, 0] = 100
    assert x[0, 0].item() == a[0, 0]   # a tensor of its own
    for equation, operands, match in [("ij,jk", [x], "names 2 operands"), ("ij", [lt.ones(3)], "name 2 axes"),
                                      ("i1", [x], "bad subscripts"), ("ij,jk", [x, x], "lengths 3 and 2"),
                                      ("ij->ii", [x], "twice"), ("ij->k", [x], "in no operand"),
                                      ("ii", [x], "lengths 2 and 3")]:
        with pytest.raises(ValueError, match=match):
            lt.einsum(equation, *operands)
    with pytest.raises(TypeError, match="equation"):
        lt.einsum(x, [0, 1])


# ---- topk --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, k, dim", [((10,), 3, -1), ((4, 9), 9, 1), ((4, 9), 2, 0), ((3, 5, 6), 4, 1), ((5,), 0, 0),
                                           ((1,), 1, 0), ((), 1, 0), ((2, 0), 0, 1)], ids=str)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_like_torch(device, shape, k, dim, largest):
    a = rand(shape)
    got = compare(lambda x: tuple(x.topk(k, dim, largest=largest)), lambda t: tuple(t.topk(k, dim, largest=largest)),
                  a, device=device)
    x = lt.asarray(a, device=device)
    values, indices = lt.topk(x, k, dim=dim, largest=largest)
    assert indices.dtype == lt.int64 and got[0].tolist() == values.tolist()


def test_topk_ties_nan_ints(device):
    floats = np.array([[1.0, np.nan, 3.0, 3.0, -1.0, np.inf, 3.0], [2, 2, 2, 1, 0, 5, -np.inf]], np.float32)
    ints = np.array([[4, 1, 4, 4, -2, 0], [7, 7, 7, 7, 7, 7]], np.int64)
    for values_of in (floats, ints):
        for largest in (True, False):
            got = lt.asarray(values_of, device=device).topk(4, largest=largest)
            want = torch.tensor(values_of).topk(4, largest=largest)
            same(got.values, want.values)   # values exactly; indices of ties may differ, so: they point at them
            picked = np.take_along_axis(values_of, got.indices.numpy(), axis=1)
            np.testing.assert_array_equal(picked, got.values.numpy())
            assert all(len(set(row)) == len(row) for row in got.indices.tolist())
    assert lt.asarray([2, 1, 2, 2], device=device).topk(2).indices.tolist() == [0, 2]   # ties: index order
    with pytest.raises(ValueError, match="out of range"):
        lt.ones(3, device=device).topk(4)
    with pytest.raises(TypeError, match="complex"):
        lt.asarray([1j]).topk(1)


# ---- multinomial ---------------------------------------------------------------------------------------

def test_multinomial_frequencies_with_replacement(device):
    p = np.array([0.1, 0.0, 0.6, 0.3, 0.0], np.float32)
    draws = lt.multinomial(lt.asarray(p * 7, device=device), 20000, replacement=True, seed=1)   # (unnormalized)
    assert draws.shape == (20000,) and draws.dtype == lt.int64
    counts = np.bincount(draws.numpy(), minlength=5) / 20000
    assert counts[1] == counts[4] == 0                  # zero weights never drawn
    np.testing.assert_allclose(counts, p, atol=0.015)   # (~5 standard deviations)
    rows = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 2.0], [3.0, 1.0, 0.0]], np.float32)
    draws = lt.multinomial(lt.asarray(rows, device=device), 8000, replacement=True, seed=2).numpy()
    assert draws.shape == (3, 8000)
    for row, want in zip(draws, rows / rows.sum(1, keepdims=True)):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / 8000, want, atol=0.03)


def test_multinomial_without_replacement(device):
    p = np.array([[0.5, 0.2, 0.2, 0.1, 0.0, 0.0]] * 3000, np.float32)
    draws = lt.multinomial(lt.asarray(p, device=device), 4, seed=3).numpy()
    assert draws.shape == (3000, 4)
    assert all(len(set(row)) == 4 for row in draws) and not np.isin(draws, [4, 5]).any()
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=6) / 3000, p[0], atol=0.04)   # the first draw
    # the second, given the first: P(j second) = sum over i != j of p_i p_j / (1 - p_i)
    second = [sum(p[0, i] * p[0, j] / (1 - p[0, i]) for i in range(4) if i != j) for j in range(6)]
    np.testing.assert_allclose(np.bincount(draws[:, 1], minlength=6) / 3000, second, atol=0.04)
    everything = lt.multinomial(lt.asarray([0.2, 0.3, 0.5], device=device), 3).numpy()
    assert sorted(everything.tolist()) == [0, 1, 2]


def test_multinomial_seeds_and_errors(device):
    p = lt.asarray([0.2, 0.3, 0.5], device=device)
    assert lt.multinomial(p, 50, True, seed=5).tolist() == lt.multinomial(p, 50, True, seed=5).tolist()
    lt.manual_seed(9)
    first = lt.multinomial(p, 50, True).tolist()
    lt.manual_seed(9)
    assert lt.multinomial(p, 50, True).tolist() == first
    assert lt.multinomial(p, 50, True, generator=np.random.default_rng(4)).tolist() == \
        lt.multinomial(p, 50, True, seed=4).tolist()
    assert lt.multinomial(lt.asarray([0.0, 0.0, 1.0], device=device), 1).item() == 2
    with pytest.raises(ValueError, match="without replacement"):
        lt.multinomial(p, 4)
    with pytest.raises(ValueError, match="1-D"):
        lt.multinomial(lt.ones((2, 2, 2)), 1)
    with pytest.raises(TypeError, match="floats"):
        lt.multinomial(lt.asarray([1, 2]), 1)
    with pytest.raises(ValueError, match="positive int"):
        lt.multinomial(p, 0)
    with pytest.raises(TypeError, match="numpy Generator"):
        lt.multinomial(p, 1, generator=torch.Generator())


def test_multinomial_under_jit_draws_anew():
    p = lt.asarray([0.25, 0.25, 0.25, 0.25])

    @lt.jit
    def sample(probs):
        return lt.multinomial(probs, 64, replacement=True)

    draws = {tuple(sample(p).tolist()) for _ in range(4)}
    assert len(draws) == 4


# ---- cumsum, clamp, tril/triu, casts by name -----------------------------------------------------------

def test_cumsum_clamp_tril_like_torch(device):
    a = rand((3, 4))
    for dim in (0, 1, -1):
        compare(lambda x: x.cumsum(dim), lambda t: t.cumsum(dim), a, device=device)
        compare(lambda x: lt.cumsum(x, dim=dim), lambda t: torch.cumsum(t, dim=dim), a, device=device)
    compare(lambda x: x.cumsum(0), lambda t: t.cumsum(0), rand((), np.float32), device=device)
    compare(lambda x: x.cumsum(dim=1), lambda t: t.cumsum(dim=1), rand((2, 5), np.int32), device=device)
    np.testing.assert_array_equal(lt.asarray(a).cumsum().numpy(), a.cumsum())   # numpy's: flattened
    compare(lambda x: x.clamp(-0.5, 0.5), lambda t: t.clamp(-0.5, 0.5), a, device=device)
    compare(lambda x: x.clamp(min=0.0), lambda t: t.clamp(min=0.0), a, device=device)
    compare(lambda x: lt.clamp(x, max=0.1), lambda t: torch.clamp(t, max=0.1), a, device=device)
    for d in (-1, 0, 2):
        compare(lambda x: lt.tril(x, diagonal=d), lambda t: torch.tril(t, diagonal=d), a, device=device)
        compare(lambda x: lt.triu(x, diagonal=d), lambda t: torch.triu(t, diagonal=d), a, device=device)


def test_casts_by_name(device):
    a = np.array([[-1.7, 0.0, 2.5]], np.float32)
    x, t = lt.asarray(a, device=device), torch.tensor(a)
    for name in ("float", "long", "int", "half", "bool") + (("double",) if has_fp64(device) else ()):
        same(getattr(x, name)(), getattr(t, name)())
    assert x.float() is x and x.long().long().dtype == lt.int64
    same(x.type_as(lt.zeros(1, dtype=lt.int32)), t.type_as(torch.zeros(1, dtype=torch.int32)))
    same(x.to(lt.float16), t.to(torch.float16))
    assert x.to(device) is x and x.to(x) is x and x.to(dtype=lt.int64).dtype == lt.int64
    assert x[0, 2].item() == 2.5 and x.tolist() == t.tolist()
