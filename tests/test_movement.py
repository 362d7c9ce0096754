"""Movement ops (views) and basic indexing compared with numpy, plus conversions back to Python."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array


def rand(shape, dtype=np.float32, seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype)


def tensor_via_1d(a):
    """A tensor of `a`'s shape made without asarray's handling of 0-d input (tested in
    test_creation.py), so the random tests below explore indexing and views only."""
    return lt.asarray(a.reshape(-1)).reshape(a.shape)


# ---- reshape --------------------------------------------------------------------------------------

RESHAPES = [
    ((2, 3, 4), (4, 6)),
    ((2, 3, 4), (24,)),
    ((2, 3, 4), (-1,)),
    ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (-1, 2, 3)),
    ((24,), (2, 3, 4)),
    ((1,), ()),
    ((), (1,)),
    ((), (1, 1, 1)),
    ((1, 1), ()),
    ((), (-1,)),
    ((0, 3), (3, 0)),
    ((0, 3), (-1,)),
    ((6,), (1, 6, 1)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("src, dst", RESHAPES, ids=lambda s: str(s))
def test_reshape(device, src, dst, dtype):
    a = rand(src, dtype.np)
    got = lt.asarray(a, device=device).reshape(dst)
    assert got.shape == a.reshape(dst).shape
    assert_close(got.numpy(), a.reshape(dst))


def test_reshape_call_forms(device):
    a = rand((2, 6))
    x = lt.asarray(a, device=device)
    want = a.reshape(3, 4)
    assert_close(x.reshape(3, 4).numpy(), want)
    assert_close(x.reshape((3, 4)).numpy(), want)
    assert_close(x.reshape([3, 4]).numpy(), want)
    assert_close(lt.reshape(x, (3, 4)).numpy(), want)
    assert_close(x.reshape(np.int64(12)).numpy(), a.reshape(12))
    assert_close(x.flatten().numpy(), a.flatten())


NON_CONTIGUOUS = {
    "transpose": (lambda x: x.T, lambda a: a.T),
    "permute": (lambda x: x.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
    "slice-step": (lambda x: x[:, ::2, 1:], lambda a: a[:, ::2, 1:]),
    "negative-step": (lambda x: x[::-1, :, ::-3], lambda a: a[::-1, :, ::-3]),
    "flip": (lambda x: x.flip((0, 2)), lambda a: np.flip(a, (0, 2))),
    "broadcast": (lambda x: x[:, :1].expand(2, 3, 5), lambda a: np.broadcast_to(a[:, :1], (2, 3, 5))),
    "pad": (lambda x: x.pad(((0, 1), (1, 1), (2, 0))), lambda a: np.pad(a, ((0, 1), (1, 1), (2, 0)))),
}


@pytest.mark.parametrize("view", list(NON_CONTIGUOUS))
def test_reshape_of_non_contiguous_view(device, view):
    lt_view, np_view = NON_CONTIGUOUS[view]
    a = rand((2, 4, 5), np.int64)
    x, v = lt_view(lt.asarray(a, device=device)), np_view(a)
    for shape in [(-1,), (v.shape[0] * v.shape[1], -1), (v.shape[-1], -1), (1, -1, 1)]:
        assert_close(x.reshape(shape).numpy(), v.reshape(shape))
        assert_close((x.reshape(shape) * 3 - 1).numpy(), v.reshape(shape) * 3 - 1)


RESHAPED_VIEWS = {   # a view whose reshape stacks a view, then an op with a broadcast operand
    "tiles back in place": ((3, 2, 5, 4, 3, 2), lambda a: a.transpose(0, 1, 2, 4, 3, 5), (3, 2, 15, 8)),
    "heads merged": ((2, 4, 6, 5), lambda a: a.transpose(0, 2, 1, 3), (2, 6, 20)),
    "flipped tiles": ((3, 4, 5, 2), lambda a: a[::-1].transpose(0, 2, 1, 3), (3, 20, 2)),
    "uneven cut": ((4, 3, 6), lambda a: a.transpose(1, 0, 2)[:, 1:], (3, 18)),
    "offset tiles": ((2, 5, 3, 4), lambda a: a[:, 1:].transpose(0, 2, 1, 3), (2, 3, 16)),
    "padded tiles": ((2, 3, 4), lambda a: np.pad(a, ((0, 0), (1, 0), (0, 0))).transpose(0, 2, 1), (2, 16)),
}


@pytest.mark.parametrize("case", list(RESHAPED_VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_reshaped_views_with_broadcast_operands(device, case, dtype):
    """split_axes runs such kernels over the view's own axes where that makes its load affine:
    values as numpy's, with the broadcast operand along any axis, in sums too."""
    shape, view, merged = RESHAPED_VIEWS[case]
    rng = np.random.default_rng(len(case))
    a = random_array(rng, shape, dtype)
    v = view(a).reshape(merged)
    moves = {"tiles back in place": lambda x: x.permute(0, 1, 2, 4, 3, 5),
             "heads merged": lambda x: x.permute(0, 2, 1, 3), "flipped tiles": lambda x: x.flip(0).permute(0, 2, 1, 3),
             "uneven cut": lambda x: x.permute(1, 0, 2)[:, 1:], "offset tiles": lambda x: x[:, 1:].permute(0, 2, 1, 3),
             "padded tiles": lambda x: x.pad(((0, 0), (1, 0), (0, 0))).permute(0, 2, 1)}
    x = moves[case](lt.asarray(a, device=device)).reshape(merged)
    for axis in range(len(merged)):
        b_shape = tuple(n if d == axis else 1 for d, n in enumerate(merged))
        b = random_array(rng, b_shape, dtype)
        lb = lt.asarray(b, device=device)
        assert_close((x * lb).numpy(), v * b)
        if dtype.is_float:
            assert_close((x * lb).sum(axis=-1).numpy(), (v * b).sum(axis=-1, dtype=v.dtype))


def test_transpose_reshape_transpose(device):
    a = rand((3, 4, 5))
    got = lt.asarray(a, device=device).T.reshape(20, 3).T.reshape(6, 10)[::-1]
    assert_close(got.numpy(), a.T.reshape(20, 3).T.reshape(6, 10)[::-1])


# ---- transpose / permute / .T ---------------------------------------------------------------------

@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))), ids=str)
def test_permute_all_orders(device, perm):
    a = rand((2, 3, 4), np.int32)
    x = lt.asarray(a, device=device)
    want = a.transpose(perm)
    assert_close(x.permute(perm).numpy(), want)
    assert_close(x.permute(*perm).numpy(), want)
    assert_close(x.transpose(perm).numpy(), want)
    assert_close(x.transpose(*perm).numpy(), want)
    assert_close(lt.permute(x, perm).numpy(), want)
    assert_close(lt.transpose(x, perm).numpy(), want)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4), (1, 2, 1, 3)], ids=str)
def test_transpose_and_T(device, shape):
    a = rand(shape, np.float64)
    x = lt.asarray(a, device=device)
    assert_close(x.T.numpy(), a.T)
    assert_close(x.transpose().numpy(), a.transpose())
    assert_close(lt.transpose(x).numpy(), np.transpose(a))


def test_permute_negative_axes(device):
    a = rand((2, 3, 4))
    assert_close(lt.asarray(a, device=device).permute(-1, 0, -2).numpy(), a.transpose(-1, 0, -2))


def test_double_transpose_is_identity(device):
    a = rand((3, 5))
    assert_close(lt.asarray(a, device=device).T.T.numpy(), a)


# ---- expand / broadcast_to ------------------------------------------------------------------------

BROADCASTS = [
    ((3, 1), (2, 3, 4)),
    ((), (2, 3)),
    ((1,), (5,)),
    ((4,), (3, 4)),
    ((1,), (0,)),
    ((2, 1, 3), (2, 5, 3)),
    ((2, 3), (2, 3)),
    ((1, 1), (0, 7)),
]


@pytest.mark.parametrize("src, dst", BROADCASTS, ids=str)
def test_broadcast_to(device, src, dst):
    a = rand(src, np.int64)
    x = lt.asarray(a, device=device)
    want = np.broadcast_to(a, dst)
    assert_close(x.broadcast_to(dst).numpy(), want)
    assert_close(x.expand(dst).numpy(), want)
    if dst:
        assert_close(x.expand(*dst).numpy(), want)
    assert_close(lt.broadcast_to(x, dst).numpy(), want)
    assert_close((x.expand(dst) + 1).numpy(), want + 1)


def test_expand_then_arithmetic_with_transpose(device):
    a, b = rand((3, 1)), rand((1, 4), seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    got = x.expand(3, 4) * y.expand(3, 4).T.T + x.expand(3, 4).T.T
    assert_close(got.numpy(), np.broadcast_to(a, (3, 4)) * b + a)


# ---- squeeze / unsqueeze --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 2, -1, (0, 2), (0, -1)], ids=lambda a: f"axis={a}")
def test_squeeze(device, axis):
    a = rand((1, 3, 1, 4, 1))
    x = lt.asarray(a, device=device)
    want = np.squeeze(a, axis)
    assert_close(x.squeeze(axis).numpy(), want)
    assert_close(lt.squeeze(x, axis).numpy(), want)


def test_squeeze_of_0d_and_no_unit_axes(device):
    a = rand(())
    assert_close(lt.asarray(a, device=device).squeeze().numpy(), np.squeeze(a))
    b = rand((2, 3))
    assert_close(lt.asarray(b, device=device).squeeze().numpy(), np.squeeze(b))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3], ids=lambda a: f"axis={a}")
def test_unsqueeze(device, axis):
    a = rand((3, 4), np.int32)
    x = lt.asarray(a, device=device)
    want = np.expand_dims(a, axis)
    assert_close(x.unsqueeze(axis).numpy(), want)
    assert_close(lt.unsqueeze(x, axis).numpy(), want)
    assert_close(lt.expand_dims(x, axis).numpy(), want)


def test_unsqueeze_0d(device):
    a = rand(())
    assert_close(lt.unsqueeze(lt.asarray(a, device=device), 0).numpy(), np.expand_dims(a, 0))
    assert_close(lt.expand_dims(lt.asarray(a, device=device), -1).numpy(), np.expand_dims(a, -1))


# ---- basic indexing -------------------------------------------------------------------------------

INDICES = [
    np.s_[1], np.s_[-1], np.s_[1:3], np.s_[::2], np.s_[::-1], np.s_[-2:], np.s_[:, 1], np.s_[..., 2],
    np.s_[None], np.s_[:, None, 2], np.s_[1, 2, 3], np.s_[-1, -2, -3], np.s_[2:1], np.s_[5:],
    np.s_[::-2, 1:-1, -1], np.s_[..., None], np.s_[1, ..., ::-3], np.s_[-100:100], np.s_[:, 4:0:-1],
    np.s_[np.int64(2)], np.s_[:, :, 5:2:-2], np.s_[None, ..., None], np.s_[()], np.s_[...],
    np.s_[0, :0], np.s_[::7], np.s_[:, ::-10],
]


def index_id(index):
    return repr(index).replace("slice", "").replace("Ellipsis", "...")


@pytest.mark.parametrize("index", INDICES, ids=index_id)
def test_basic_indexing(device, index):
    a = rand((4, 5, 6), np.int64)
    got = lt.asarray(a, device=device)[index]
    assert got.shape == a[index].shape
    assert_close(got.numpy(), a[index])


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
def test_basic_indexing_random(data, shape):
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True), label="index")
    a = rand(shape, np.float64)
    got = tensor_via_1d(a)[index]
    assert_close(got.numpy(), a[index])


def test_index_of_index(device):
    a = rand((6, 7, 8))
    got = lt.asarray(a, device=device)[1:, ::-1][::2, 2][..., 3:-1:2]
    assert_close(got.numpy(), a[1:, ::-1][::2, 2][..., 3:-1:2])


def test_slice_then_arithmetic_mixes_views(device):
    a = rand((6, 6), np.float64)
    x = lt.asarray(a, device=device)
    got = x[::2, 1::2] * x[1::2, ::-2] + x[:3, :3].T
    assert_close(got.numpy(), a[::2, 1::2] * a[1::2, ::-2] + a[:3, :3].T)


# ---- pad ------------------------------------------------------------------------------------------

PAD_WIDTHS = [
    1, 0, (1, 2), ((1, 2),), ((1, 0), (0, 2), (3, 1)), [[1, 2], [0, 0], [2, 2]], (3,), ((1,), (2,), (0,)),
    np.array([[0, 1], [2, 0], [1, 1]]),
]


@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.bool_], ids=lambda d: d.name)
@pytest.mark.parametrize("pad_width", PAD_WIDTHS, ids=lambda w: repr(w).replace("\n", "").replace(" ", ""))
def test_pad_width_forms(device, pad_width, dtype):
    a = rand((2, 3, 4), dtype.np)
    want = np.pad(a, pad_width)
    x = lt.asarray(a, device=device)
    assert_close(x.pad(pad_width).numpy(), want)
    assert_close(lt.pad(x, pad_width).numpy(), want)


@pytest.mark.parametrize("value", [3, -2.5, 7.25, True], ids=repr)
@pytest.mark.parametrize("dtype", [lt.int32, lt.int64, lt.float32, lt.float64], ids=lambda d: d.name)
def test_pad_constant_value(device, dtype, value):
    a = rand((3, 4), dtype.np)
    want = np.pad(a, ((1, 2), (2, 0)), constant_values=value)
    got = lt.asarray(a, device=device).pad(((1, 2), (2, 0)), value)
    assert_close(got.numpy(), want)


def test_pad_of_view_and_zero_size(device):
    a = rand((3, 4))
    x = lt.asarray(a, device=device)
    assert_close(x.T[::-1].pad((2, 1), 9).numpy(), np.pad(a.T[::-1], (2, 1), constant_values=9))
    e = np.zeros((0, 3), np.float32)
    assert_close(lt.asarray(e, device=device).pad(1).numpy(), np.pad(e, 1))
    assert_close(lt.asarray(a[1], device=device).pad((0, 0)).numpy(), a[1])


def test_pad_then_arithmetic_and_reduce(device):
    a = rand((4, 5), np.float64)
    x = lt.asarray(a, device=device)
    got = (x.pad(1, -1.0) * 2).sum(axis=0)
    assert_close(got.numpy(), (np.pad(a, 1, constant_values=-1.0) * 2).sum(axis=0))


# ---- flip -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (-1, 0, 1)], ids=lambda a: f"axis={a}")
def test_flip(device, axis):
    a = rand((3, 4, 5), np.int64)
    x = lt.asarray(a, device=device)
    want = np.flip(a, axis)
    assert_close(x.flip(axis).numpy(), want)
    assert_close(lt.flip(x, axis).numpy(), want)


def test_flip_twice_and_flip_of_slice(device):
    a = rand((6, 5))
    x = lt.asarray(a, device=device)
    assert_close(x.flip(0).flip(0).numpy(), a)
    assert_close(x[1::2, ::-2].flip().numpy(), np.flip(a[1::2, ::-2]))


# ---- concatenate / stack --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3], ids=lambda a: f"axis={a}")
def test_concatenate(device, axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i, n in enumerate((1, 3, 2)):
        shapes[i][axis] = n
    arrays = [rand(tuple(s), np.float64, seed=i) for i, s in enumerate(shapes)]
    got = lt.concatenate([lt.asarray(a, device=device) for a in arrays], axis=axis)
    assert_close(got.numpy(), np.concatenate(arrays, axis=axis))


@pytest.mark.parametrize("dtypes", [(lt.int32, lt.float32), (lt.int32, lt.int64), (lt.bool_, lt.int32),
                                    (lt.float32, lt.float64), (lt.bool_, lt.float32, lt.int64)],
                         ids=lambda ds: "+".join(d.name for d in ds))
def test_concatenate_promotes(device, dtypes):
    arrays = [rand((2, i + 1), d.np, seed=i) for i, d in enumerate(dtypes)]
    got = lt.concatenate([lt.asarray(a, device=device) for a in arrays], axis=1)
    assert_close(got.numpy(), np.concatenate(arrays, axis=1))


@pytest.mark.parametrize("sizes", [(0, 2, 3), (2, 0, 3), (2, 3, 0), (0, 0, 1), (0, 0, 0), (4,)], ids=str)
def test_concatenate_zero_size_pieces(device, sizes):
    arrays = [rand((n, 3), np.int32, seed=i) for i, n in enumerate(sizes)]
    got = lt.concatenate([lt.asarray(a, device=device) for a in arrays])
    assert_close(got.numpy(), np.concatenate(arrays))


def test_concatenate_views_and_array_likes(device):
    a, b = rand((3, 4)), rand((4, 3), seed=1)
    x = lt.asarray(a, device=device)
    got = lt.concatenate([x[::-1], lt.asarray(b, device=device).T, b.T[:1]], axis=0)
    assert_close(got.numpy(), np.concatenate([a[::-1], b.T, b.T[:1]], axis=0))
    got = (got * 2).sum(axis=1)
    assert_close(got.numpy(), (np.concatenate([a[::-1], b.T, b.T[:1]]) * 2).sum(axis=1))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3], ids=lambda a: f"axis={a}")
def test_stack(device, axis):
    arrays = [rand((2, 3), np.int64, seed=i) for i in range(4)]
    got = lt.stack([lt.asarray(a, device=device) for a in arrays], axis=axis)
    assert_close(got.numpy(), np.stack(arrays, axis=axis))


def test_stack_promotes_and_accepts_views(device):
    a, b = rand((3, 3), np.int32), rand((3, 3), np.float64, seed=1)
    got = lt.stack([lt.asarray(a, device=device).T, lt.asarray(b, device=device)[::-1]], axis=1)
    assert_close(got.numpy(), np.stack([a.T, b[::-1]], axis=1))


def test_stack_0d(device):
    got = lt.stack([lt.asarray(1.5, device=device), lt.asarray(2.5, device=device)])
    assert_close(got.numpy(), np.stack([np.float32(1.5), np.float32(2.5)]))


# ---- long compositions ----------------------------------------------------------------------------

def test_composition_of_many_movement_ops(device):
    a = rand((4, 6, 5), np.float64)
    b = rand((5, 3), np.float64, seed=1)
    x, y = lt.asarray(a, device=device), lt.asarray(b, device=device)
    lt_view = (x.permute(2, 0, 1)[::-1, 1:, ::2].reshape(5, -1).T.flip(0)
               .pad(((1, 0), (0, 1)), 0.5)[:, None, :].expand(10, 2, 6))
    np_view = np.broadcast_to(np.pad(np.flip(a.transpose(2, 0, 1)[::-1, 1:, ::2].reshape(5, -1).T, 0),
                                     ((1, 0), (0, 1)), constant_values=0.5)[:, None, :], (10, 2, 6))
    got = (lt_view * 2 - y.T.reshape(-1)[:6]).sum(axis=1) + lt.concatenate([y, y])[::-1, :1].reshape(-1)[:6]
    want = (np_view * 2 - b.T.reshape(-1)[:6]).sum(axis=1) + np.concatenate([b, b])[::-1, :1].reshape(-1)[:6]
    assert_close(got.numpy(), want)


MOVES = ["transpose", "flip", "slice", "reshape", "unsqueeze", "squeeze", "pad", "expand"]


@settings(max_examples=25, deadline=None)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
       moves=st.lists(st.sampled_from(MOVES), min_size=1, max_size=6))
def test_random_movement_chains(data, shape, moves):
    a = rand(shape, np.float64)
    x = tensor_via_1d(a)
    for move in moves:
        if move == "transpose":
            perm = data.draw(st.permutations(range(a.ndim)))
            a, x = a.transpose(perm), x.permute(perm)
        elif move == "flip" and a.ndim:
            axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
            a, x = np.flip(a, axis), x.flip(axis)
        elif move == "slice":
            index = data.draw(hnp.basic_indices(a.shape, allow_newaxis=True))
            a, x = a[index], x[index]
        elif move == "reshape":
            a, x = a.reshape(-1), x.reshape(-1)
            if a.size % 2 == 0 and a.size:
                a, x = a.reshape(2, -1), x.reshape(2, -1)
        elif move == "unsqueeze":
            axis = data.draw(st.integers(-a.ndim - 1, a.ndim))
            a, x = np.expand_dims(a, axis), x.unsqueeze(axis)
        elif move == "squeeze":
            a, x = np.squeeze(a), x.squeeze()
        elif move == "pad":
            width = data.draw(st.integers(0, 2))
            a, x = np.pad(a, width, constant_values=1.5), x.pad(width, 1.5)
        elif move == "expand" and 1 in a.shape:
            shape = tuple(3 if n == 1 else n for n in a.shape)
            a, x = np.broadcast_to(a, shape), x.expand(shape)
        if a.ndim > 4:
            a, x = a.reshape(-1), x.reshape(-1)
    assert_close(x.numpy(), a)
    assert_close((x * 3 + 1).numpy(), a * 3 + 1)


# ---- conversions back to Python / numpy -----------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 2)], ids=str)
def test_tolist(device, shape, dtype):
    a = rand(shape, dtype.np)
    got = lt.asarray(a, device=device).tolist()
    assert got == a.tolist()
    assert type(got) is type(a.tolist())


def test_tolist_of_view(device):
    a = rand((3, 4), np.int32)
    assert lt.asarray(a, device=device).T[::-1].tolist() == a.T[::-1].tolist()


@pytest.mark.parametrize("make", ["buffer", "expression", "view", "constant", "reduction"])
def test_numpy_is_read_only(device, make):
    a = rand((3, 4))
    x = lt.asarray(a, device=device)
    t = {"buffer": x, "expression": x * 2, "view": x.T[1:], "constant": lt.ones((2, 2), device=device),
         "reduction": x.sum(axis=0)}[make]
    out = t.numpy()
    assert isinstance(out, np.ndarray)
    assert not out.flags.writeable
    with pytest.raises(ValueError):
        out[...] = 0


def test_numpy_write_does_not_leak_into_tensor(device):
    a = rand((3,))
    x = lt.asarray(a, device=device)
    copy = np.array(x)
    copy[:] = 0
    assert_close(x.numpy(), a)


def test_array_protocol(device):
    a = rand((2, 3), np.int32)
    x = lt.asarray(a, device=device)
    assert_close(np.asarray(x), a)
    as_float = np.asarray(x, dtype=np.float64)
    assert_close(as_float, a.astype(np.float64))
    copied = np.array(x)
    assert copied.flags.writeable
    assert_close(copied, a)
    assert_close(np.add(np.asarray(x.T), 1), a.T + 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_repr_contains_values(device, dtype):
    a = np.array([[1, 0], [3, 4]]).astype(dtype.np)
    if dtype.is_float:
        a = a + np.array(0.5, dtype.np)
    text = repr(lt.asarray(a, device=device).T.T)
    assert text.startswith("Tensor(")
    assert dtype.name in text
    for value in a.ravel():
        assert np.array2string(np.asarray(value)).strip() in text


def test_len(device):
    assert len(lt.asarray(rand((4, 2)), device=device)) == 4
    assert len(lt.asarray(rand((4, 2)), device=device).T) == 2
    assert len(lt.zeros((0, 3), device=device)) == 0
    with pytest.raises(TypeError):
        len(lt.asarray(1.0, device=device))


@pytest.mark.parametrize("shape", [(3,), (3, 2), (0, 4), (2, 1, 3)], ids=str)
def test_iteration(device, shape):
    a = rand(shape, np.int64)
    rows = list(lt.asarray(a, device=device))
    assert len(rows) == len(a)
    for row, want in zip(rows, a):
        assert isinstance(row, lt.Tensor)
        assert_close(row.numpy(), want)


def test_iteration_of_view(device):
    a = rand((3, 4))
    rows = [r.tolist() for r in lt.asarray(a, device=device).T[::-1]]
    assert rows == [list(r) for r in a.T[::-1].tolist()]


def test_same_shaped_views_at_different_offsets(device):
    # views with equal shapes but different offsets / pad widths / values must not share results
    a = rand((10, 4), np.int64)
    x = lt.asarray(a, device=device)
    for i in range(4):
        assert_close(x[i:i + 3].numpy(), a[i:i + 3])
        assert_close((x[i:i + 3, ::-1] + i).numpy(), a[i:i + 3, ::-1] + i)
        assert_close(x[:2].pad(((i, 3 - i), (0, 0)), i).numpy(),
                     np.pad(a[:2], ((i, 3 - i), (0, 0)), constant_values=i))


def test_large_transpose_and_flip(device):
    a = rand((300, 517), np.float32)
    x = lt.asarray(a, device=device)
    assert_close(x.T.numpy(), a.T)
    assert_close((x.T[::-1, 3:] * 2).numpy(), a.T[::-1, 3:] * 2)
    assert_close(lt.concatenate([x, x[:, ::-1]], axis=1).numpy(), np.concatenate([a, a[:, ::-1]], axis=1))


# ---- view stacks that are one affine map -----------------------------------------------------------

def _loads(t: lt.Tensor):
    from lazytensor.ir.graph import toposort
    from lazytensor.ir.ops import Op
    from lazytensor.ir.passes import optimize
    from lazytensor.scheduler.fusion import fuse
    return [n.arg[1] for spec in fuse(optimize([t.node])) for n in toposort([spec.expr]) if n.op is Op.LOAD]


@pytest.mark.parametrize("kernel, stride, dilation, padding", [
    ((3, 3), (1, 1), (1, 1), 1), ((2, 3), (2, 1), (1, 2), 0), ((3, 2), (3, 2), (2, 1), 2)])
def test_sliding_windows_are_one_affine_map(kernel, stride, dilation, padding):
    """The windows of conv/pooling are built from repeat, cut and reshape views: a stack whose
    index never wraps, so it composes into one affine map (no division in the kernel), with the
    padding as bounds checks; the values are numpy's sliding windows."""
    from lazytensor.movement import sliding_windows
    x = np.random.default_rng(3).standard_normal((2, 3, 11, 10)).astype(np.float32)
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = sliding_windows(lt.asarray(x).pad(((0, 0), (0, 0), (padding, padding), (padding, padding))), kernel,
                          stride, dilation) * 1.0
    stacks = [v for v in _loads(win) if len(v.views) > 1]
    assert stacks and all(v.affine is not None for v in stacks)
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    want = np.lib.stride_tricks.sliding_window_view(padded, span, axis=(2, 3))
    want = want[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]
    assert_close(win, want)


def test_a_reshape_that_wraps_stays_a_stack():
    """x.T flattened reads across rows: its index wraps, so it keeps the division (and is right)."""
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    flat = lt.asarray(x).T.reshape(-1)[3:30] * 2.0
    assert any(len(v.views) > 1 and v.affine is None for v in _loads(flat))
    assert_close(flat, x.T.reshape(-1)[3:30] * 2)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_pad_with_negative_zero_pads_negative_zero(device, dtype):
    """value=-0.0 is a value of its own: the pad once took it for "no value" and padded +0.0
    (found by the fuzzer)."""
    data = np.arange(1, 7, dtype=dtype).reshape(2, 3)
    got = lt.pad(lt.asarray(data, device=device), ((1, 0), (0, 2)), value=-0.0).numpy()
    want = np.pad(data, ((1, 0), (0, 2)), constant_values=-0.0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
