"""PyTorch's names on lazytensor with PyTorch's meaning, checked against torch (values and
gradients): creation with sizes one by one, size()/dim()/numel(), transpose(dim0, dim1), view,
contiguous, split/chunk, cat/stack(dim=), flatten/squeeze/unsqueeze(dim=), and the reductions
with dim=/keepdim= (max/min(dim) as (values, indices)). The ops of transformers (einsum, bmm,
topk, multinomial, softmax, masked_fill) are in test_torch_api_ops.py."""
import pickle

import numpy as np
import pytest

import lazytensor as lt
from conftest import has_fp64
from torch_compare import compare, rand, same, torch


# ---- creation: sizes one by one (PyTorch, lt.rand) or one shape (numpy, the Array API) ----------

@pytest.mark.parametrize("make", ["zeros", "ones", "empty"])
def test_creation_shape_spellings(device, make):
    create = getattr(lt, make)
    for args, kwargs, shape in [((2, 3), {}, (2, 3)), (((2, 3),), {}, (2, 3)), (([2, 3],), {}, (2, 3)),
                                ((5,), {}, (5,)), (((),), {}, ()), ((np.int64(2), 3), {}, (2, 3)),
                                ((2, 0, 4), {}, (2, 0, 4)), ((), {"shape": (4, 1)}, (4, 1))]:
        x = create(*args, device=device, **kwargs)
        assert x.shape == shape and x.dtype == lt.float32 and x.device == device, (args, kwargs)
    assert create(2, 3, dtype=lt.int32, device=device).dtype == lt.int32
    assert create((2, 3), lt.int8, device).dtype == lt.int8      # numpy's positional dtype (and device)
    assert create(4, lt.float64, device=device).shape == (4,)
    assert create(4, int, device=device).dtype == lt.int64
    assert create(1, 2, 3, requires_grad=True, device=device).requires_grad
    if make != "empty":
        want = getattr(torch, make)(3, 2).numpy()
        np.testing.assert_array_equal(create(3, 2, device=device).numpy(), want)


def test_creation_shape_errors():
    with pytest.raises(TypeError, match="not a sequence followed by sizes"):
        lt.ones((2, 3), 4)
    with pytest.raises(TypeError, match="dtype given both"):
        lt.zeros((2, 3), lt.int32, dtype=lt.int8)
    with pytest.raises(TypeError, match="at most a dtype and a device"):
        lt.ones((2,), lt.int32, "cpu", 5)
    with pytest.raises(ValueError, match="negative"):
        lt.zeros(2, -1)
    assert lt.rand(2, 3).shape == lt.randn((2, 3)).shape == (2, 3)   # (lt.rand's forms unchanged)


def test_arange_and_dtype_names():
    assert lt.arange(end=4).tolist() == torch.arange(end=4).tolist()
    assert lt.arange(2, end=7, step=2).tolist() == torch.arange(2, end=7, step=2).tolist()
    assert lt.arange(5, dtype=lt.long).dtype == lt.int64
    assert (lt.float, lt.double, lt.half, lt.long, lt.int) == (lt.float32, lt.float64, lt.float16, lt.int64, lt.int32)
    with pytest.raises(TypeError, match="once"):
        lt.arange(0, 3, end=4)


# ---- size(), dim(), numel() --------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4), (3, 0, 2)], ids=str)
def test_size_dim_numel(device, shape):
    x, t = lt.zeros(shape, device=device), torch.zeros(shape)
    assert x.size == t.numel() == x.numel() and isinstance(x.size, int) and isinstance(x.numel(), int)
    assert x.size() == tuple(t.size()) and x.dim() == t.dim() == x.ndim
    for d in range(-len(shape), len(shape)):
        assert x.size(d) == t.size(d)
    with pytest.raises(IndexError, match="out of range"):
        x.size(len(shape))
    assert pickle.loads(pickle.dumps(x.size)) == x.size and repr(x.size) == str(t.numel())
    assert x.size + 1 == t.numel() + 1 and np.zeros(x.size).shape == (t.numel(),)


# ---- transpose, t --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dims", [((2, 3), (0, 1)), ((2, 3), (1, 0)), ((2, 3), (-1, -2)), ((2, 3, 4), (0, 2)),
                                         ((2, 3, 4), (-1, 1)), ((1, 5, 1), (0, 2)), ((0, 3), (0, 1)), ((4,), (0, -1)),
                                         ((2, 3, 4), (1, 1)), ((2, 3, 4, 5), (1, 2))], ids=str)
def test_transpose_two_dims_is_pytorchs(device, shape, dims):
    a = rand(shape)
    compare(lambda x: x.transpose(*dims), lambda t: t.transpose(*dims), a, device=device)
    compare(lambda x: lt.transpose(x, *dims), lambda t: torch.transpose(t, *dims), a, device=device)
    compare(lambda x: x.transpose(dim0=dims[0], dim1=dims[1]), lambda t: t.transpose(*dims), a, device=device)


def test_transpose_numpy_forms(device):
    a = rand((2, 3, 4))
    x = lt.asarray(a, device=device)
    np.testing.assert_array_equal(x.transpose().numpy(), a.transpose())
    np.testing.assert_array_equal(x.transpose(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.transpose((1, 2, 0)).numpy(), a.transpose((1, 2, 0)))
    np.testing.assert_array_equal(lt.transpose(x, (1, 2, 0)).numpy(), np.transpose(a, (1, 2, 0)))
    np.testing.assert_array_equal(lt.transpose(x, axes=(2, 1, 0)).numpy(), np.transpose(a, axes=(2, 1, 0)))
    np.testing.assert_array_equal(lt.transpose(x).numpy(), np.transpose(a))
    np.testing.assert_array_equal(np.transpose(x, (1, 0, 2)).numpy(), np.transpose(a, (1, 0, 2)))
    v = x.transpose(0, 2)   # a view, as PyTorch's
    v[0, 0, 1] = 7.0
    assert x[1, 0, 0].item() == 7.0
    with pytest.raises(IndexError, match="out of range"):
        x.transpose(0, 3)
    with pytest.raises(ValueError, match="not a permutation"):
        x.transpose(0, 1, 1)


def test_t(device):
    for shape in [(), (3,), (2, 3), (1, 0)]:
        compare(lambda x: x.t(), lambda t: t.t(), rand(shape), device=device)
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        lt.zeros((2, 3, 4)).t()


# ---- view, contiguous --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, new", [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)),
                                        ((6,), (1, 6, 1)), ((), (1,)), ((1,), ()), ((0, 3), (3, 0, 1))], ids=str)
def test_view_like_torch(device, shape, new):
    a = rand(shape)
    if new:   # (torch's view() takes no empty argument list)
        compare(lambda x: x.view(*new), lambda t: t.view(*new), a, device=device)
    compare(lambda x: x.view(new), lambda t: t.view(new), a, device=device)


def test_view_aliases_and_refuses_what_needs_a_copy(device):
    x = lt.zeros((4, 6), device=device)
    v = x.view(2, 12)
    v[1, 0] = 3.0
    assert x[2, 0].item() == 3.0
    x[0, 1] = 5.0
    assert v[0, 1].item() == 5.0
    row = x[1:3].view(-1)     # contiguous rows: a view, as in PyTorch
    row += 1
    assert x[1:3].sum().item() == 12 + 3.0
    with pytest.raises(ValueError, match="contiguous"):
        x.T.view(-1)
    with pytest.raises(RuntimeError):
        torch.zeros(4, 6).T.view(-1)
    assert x.T.contiguous().view(-1).shape == (24,)
    with pytest.raises(TypeError, match="astype"):
        x.view(lt.int32)


def test_contiguous_like_torch(device):
    a = rand((4, 5, 6))
    x, t = lt.asarray(a, device=device), torch.tensor(a)
    pick = {"whole": lambda v: v, "T": lambda v: v.permute(2, 1, 0), "rows": lambda v: v[1:3],
            "columns": lambda v: v[:, 1:], "step": lambda v: v[::2], "unsqueeze": lambda v: v.unsqueeze(1),
            "expand": lambda v: v[:1].expand(3, -1, -1), "one column": lambda v: v[:, :, 2:3],
            "transpose back": lambda v: v.transpose(0, 1).transpose(0, 1)}
    for name, view in pick.items():
        got, want = view(x), view(t)
        assert got.is_contiguous() == want.is_contiguous(), name
        c = got.contiguous()
        same(c, want.contiguous())
        if want.is_contiguous():
            assert c is got, name
        else:
            c[(0,) * c.ndim] = 100.0   # a tensor of its own
            assert x.max().item() < 100, name
    compare(lambda v: v.permute(1, 0, 2).contiguous().view(5, -1), lambda v: v.permute(1, 0, 2).contiguous().view(5, -1),
            a, device=device)


# ---- split, chunk, cat, stack ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, arg, dim", [((7, 3), 2, 0), ((7, 3), 3, 0), ((7, 3), 7, 0), ((7, 3), 10, 0),
                                             ((2, 7), [2, 0, 5], -1), ((2, 7), (7,), 1), ((3, 0), 2, 1),
                                             ((0, 3), 2, 0), ((2, 3, 4), 1, -1), ((1,), 1, 0)], ids=str)
def test_split_like_torch(device, shape, arg, dim):
    a = rand(shape)
    compare(lambda x: x.split(arg, dim), lambda t: t.split(arg, dim), a, device=device)
    compare(lambda x: lt.split(x, arg, dim=dim), lambda t: torch.split(t, arg, dim=dim), a, device=device)


@pytest.mark.parametrize("shape, chunks, dim", [((7, 3), 3, 0), ((6,), 4, 0), ((5,), 5, 0), ((2, 5), 7, 1),
                                                ((0, 4), 3, 0), ((2, 9), 3, -1), ((1, 1), 1, 1)], ids=str)
def test_chunk_like_torch(device, shape, chunks, dim):
    a = rand(shape)
    compare(lambda x: x.chunk(chunks, dim), lambda t: t.chunk(chunks, dim), a, device=device)
    compare(lambda x: lt.chunk(x, chunks, dim=dim), lambda t: torch.chunk(t, chunks, dim=dim), a, device=device)


def test_split_pieces_are_views_and_errors():
    x = lt.zeros(6)
    first, second = x.split(3)
    second[0] = 1.0
    assert x.tolist() == [0, 0, 0, 1, 0, 0]
    q, k, v = lt.arange(12.0).reshape(2, 6).chunk(3, dim=-1)
    assert q.tolist() == [[0, 1], [6, 7]] and v.tolist() == [[4, 5], [10, 11]]
    with pytest.raises(ValueError, match="add up to 6"):
        x.split([2, 3])
    with pytest.raises(ValueError, match="positive"):
        x.split(0)
    with pytest.raises(IndexError, match="out of range"):
        x.split(2, dim=1)
    with pytest.raises(ValueError, match="positive int"):
        x.chunk(0)
    with pytest.raises(ValueError, match="0-d"):
        lt.asarray(1.0).split(1)


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_and_stack_like_torch(device, dim):
    a, b = rand((2, 3), seed=1), rand((2, 3), seed=2)
    compare(lambda x, y: lt.cat([x, y], dim), lambda x, y: torch.cat([x, y], dim), a, b, device=device)
    compare(lambda x, y: lt.cat((x, y), dim=dim), lambda x, y: torch.cat((x, y), dim=dim), a, b, device=device)
    compare(lambda x, y: lt.stack([x, y], dim=dim), lambda x, y: torch.stack([x, y], dim=dim), a, b, device=device)
    c = rand((2, 0))
    compare(lambda x, y: lt.cat([x, y], dim=1), lambda x, y: torch.cat([x, y], dim=1), a, c, device=device)
    assert lt.cat([lt.zeros(2), lt.ones(1)], axis=0).tolist() == [0, 0, 1]
    with pytest.raises(TypeError, match="once"):
        lt.cat([lt.zeros(2)], 1, axis=0)
    with pytest.raises(TypeError, match="sequence"):
        lt.cat(lt.zeros(2))


# ---- flatten, squeeze, unsqueeze, expand ------------------------------------------------------------

@pytest.mark.parametrize("shape, start, end", [((2, 3, 4), 0, -1), ((2, 3, 4), 1, -1), ((2, 3, 4), 0, 1),
                                               ((2, 3, 4, 5), 1, 2), ((2, 3), -1, -1), ((), 0, -1), ((2, 0, 3), 1, 2)],
                         ids=str)
def test_flatten_like_torch(device, shape, start, end):
    compare(lambda x: x.flatten(start, end), lambda t: t.flatten(start, end), rand(shape), device=device)


def test_flatten_numpy_order_and_copy(device):
    a = rand((2, 3))
    x = lt.asarray(a, device=device)
    np.testing.assert_array_equal(x.flatten("F").numpy(), a.flatten("F"))
    flat = x.flatten()
    flat[0] = 9.0
    assert x[0, 0].item() == a[0, 0]     # numpy's flatten: a copy
    with pytest.raises(ValueError, match="after end_dim"):
        x.flatten(1, 0)


def test_squeeze_unsqueeze_expand_dim_keywords(device):
    a = rand((2, 1, 3))
    compare(lambda x: x.squeeze(dim=1), lambda t: t.squeeze(dim=1), a, device=device)
    compare(lambda x: x.squeeze(dim=0), lambda t: t.squeeze(dim=0), a, device=device)  # (not 1: left as it is)
    compare(lambda x: x.squeeze(1), lambda t: t.squeeze(1), a, device=device)
    with pytest.raises(ValueError, match="not 1"):
        lt.asarray(a).squeeze(0)   # numpy's spelling keeps numpy's error
    for d in (0, 2, -1, -4):
        compare(lambda x: x.unsqueeze(d), lambda t: t.unsqueeze(d), a, device=device)
        compare(lambda x: x.unsqueeze(dim=d), lambda t: t.unsqueeze(dim=d), a, device=device)
    compare(lambda x: x.expand(4, 2, -1, 3), lambda t: t.expand(4, 2, -1, 3), a, device=device)
    compare(lambda x: x.expand((2, 5, 3)), lambda t: t.expand((2, 5, 3)), a, device=device)


# ---- reductions with dim= and keepdim= ----------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "std", "var"]


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0:UserWarning")   # (torch's std of one element)
@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("shape, dim", [((3, 4), 1), ((3, 4), -2), ((2, 3, 5), (0, 2)), ((2, 3, 5), -1), ((1, 7), 0),
                                        ((4,), 0)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_with_dim(device, name, shape, dim, keepdim):
    if name == "prod" and isinstance(dim, tuple):
        pytest.skip("torch.prod takes one dim")
    a = rand(shape, np.float64 if has_fp64(device) else np.float32)
    compare(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), lambda t: getattr(t, name)(dim=dim, keepdim=keepdim),
            a, device=device)
    compare(lambda x: getattr(x, name)(dim, keepdim=keepdim), lambda t: getattr(t, name)(dim, keepdim=keepdim),
            a, device=device)
    if name not in ("amax", "amin"):
        compare(lambda x: getattr(lt, name)(x, dim=dim, keepdim=keepdim),
                lambda t: getattr(torch, name)(t, dim=dim, keepdim=keepdim), a, device=device)


@pytest.mark.parametrize("name", ["any", "all", "argmax", "argmin"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_boolean_and_arg_reductions_with_dim(device, name, keepdim):
    for shape, dim in [((3, 4), 1), ((3, 4), -2), ((2, 1, 5), 2)]:
        a = rand(shape, np.bool_ if name in ("any", "all") else np.float32)
        compare(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim),
                lambda t: getattr(t, name)(dim=dim, keepdim=keepdim), a, device=device)
    compare(lambda x: getattr(x, name)(), lambda t: getattr(t, name)(), rand((3, 4), np.float32), device=device)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape, dim", [((3, 4), 1), ((3, 4), 0), ((2, 3, 5), -1), ((2, 3, 5), 1), ((1, 6), 0),
                                        ((5,), 0), ((), 0)], ids=str)
def test_max_min_with_dim_are_values_and_indices(device, name, shape, dim):
    a = rand(shape)
    for keepdim in (False, True):
        compare(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim),
                lambda t: getattr(t, name)(dim=dim, keepdim=keepdim), a, device=device)
        compare(lambda x: getattr(x, name)(dim, keepdim=keepdim), lambda t: getattr(t, name)(dim, keepdim=keepdim),
                a, device=device)
        compare(lambda x: getattr(lt, name)(x, dim=dim, keepdim=keepdim),
                lambda t: getattr(torch, name)(t, dim=dim, keepdim=keepdim), a, device=device)
    result = lt.asarray(a, device=device).max(dim=dim)
    assert type(result).__name__ == "MaxMin" and result._fields == ("values", "indices")
    values, indices = result
    assert indices.dtype == lt.int64 and values.shape == indices.shape


def test_max_min_torch_and_numpy_spellings(device):
    a = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, 0.0], [-1.0, -1.0, -2.0]], np.float32)
    x, t = lt.asarray(a, device=device), torch.tensor(a)
    for name in ("max", "min"):
        got, want = getattr(x, name)(dim=1), getattr(t, name)(dim=1)
        same(got.values, want.values)
        same(got.indices, want.indices)       # (the first index of ties and of nan, as torch's cpu)
        same(getattr(x, name)(), getattr(t, name)())
        same(getattr(x, name)(x * 0.5), getattr(t, name)(t * 0.5))   # elementwise, torch's max(other)
        np.testing.assert_array_equal(getattr(x, name)(1).numpy(), getattr(a, name)(1))       # numpy's
        np.testing.assert_array_equal(getattr(x, name)(axis=0).numpy(), getattr(a, name)(axis=0))
        np.testing.assert_array_equal(getattr(np, name)(x, axis=1).numpy(), getattr(np, name)(a, axis=1))
    with pytest.raises(TypeError, match="one int"):
        x.max(dim=(0, 1))
    with pytest.raises(TypeError, match="not both"):
        x.sum(axis=0, dim=0)
    with pytest.raises(TypeError, match="not both"):
        x.mean(keepdims=True, keepdim=True)


def test_max_with_dim_gradient_goes_to_the_index():
    a = np.array([[2.0, 5.0, 5.0, 1.0]], np.float32)
    x, t = lt.asarray(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    x.max(dim=1).values.sum().backward()
    t.max(dim=1).values.sum().backward()
    same(x.grad, t.grad)


def test_std_var_corrections(device):
    a = rand((4, 5))
    x, t = lt.asarray(a, device=device), torch.tensor(a)
    same(x.std(dim=1), t.std(dim=1))                              # PyTorch's spelling: n - 1
    same(x.var(dim=0, unbiased=False), t.var(dim=0, unbiased=False))
    same(x.var(dim=0, correction=0), t.var(dim=0, correction=0))
    same(x.std(1, keepdim=True), t.std(1, keepdim=True))
    np.testing.assert_allclose(x.std().numpy(), a.std(), rtol=1e-5)    # numpy's: n
    np.testing.assert_allclose(x.var(axis=1).numpy(), a.var(axis=1), rtol=1e-5)
    np.testing.assert_allclose(lt.var(x, axis=1).numpy(), a.var(axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.std(x, axis=0, ddof=1).numpy(), a.std(axis=0, ddof=1), rtol=1e-5)
    with pytest.raises(TypeError, match="one of"):
        x.var(dim=0, unbiased=True, correction=1)
