"""DLPack interchange: zero-copy to and from numpy (and torch where installed)."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import DTYPES, assert_close, random_array


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_roundtrip_through_numpy(device, dtype):
    a = random_array(np.random.default_rng(6), (3, 5), dtype)
    x = lt.from_dlpack(a, device=device)
    assert x.dtype == dtype and x.shape == a.shape
    assert_close(x, a)
    y = x * 1 if not dtype.is_bool else x & True
    if device == "cpu":
        back = np.from_dlpack(y)
    else:  # another device exports only as a host copy, asked for by name
        with pytest.raises(BufferError, match=r"\.to\('cpu'\)"):
            np.from_dlpack(y)
        back = np.from_dlpack(y, device="cpu")
    assert_close(back, a)


def test_import_shares_memory_and_export_shares_memory(device):
    if device != "cpu":
        pytest.skip("memory is shared with numpy only on the cpu; other devices copy")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = lt.from_dlpack(a, device=device)
    a[1, 2] = -7.0                       # zero-copy in: the tensor sees the write
    assert x.numpy()[1, 2] == -7.0
    y = (x * 2).realize()
    exported = np.from_dlpack(y)
    assert np.shares_memory(exported, y.numpy())  # zero-copy out
    assert_close(exported, a * 2)
    assert y.__dlpack_device__() == (1, 0)


def test_non_contiguous_and_empty_inputs_are_copied(device):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = lt.from_dlpack(a.T, device=device)
    assert_close(x, a.T)
    a[0, 0] = 99
    assert x.numpy()[0, 0] == 0          # a copy: not affected
    with pytest.raises(BufferError, match="contiguous"):
        lt.from_dlpack(a.T, copy=False)
    empty = lt.from_dlpack(np.zeros((0, 3), np.float32), device=device)
    assert_close(empty.pad(((1, 0), (0, 0))), np.zeros((1, 3), np.float32))


def test_copy_true_copies(device):
    a = np.ones(4, np.float64)
    x = lt.from_dlpack(a, device=device, copy=True)
    a[:] = 5
    assert_close(x, np.ones(4))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_interchange(dtype):
    data = (np.arange(6) + 1j * np.arange(6)[::-1]).astype(dtype).reshape(2, 3)
    x = lt.from_dlpack(data)
    assert x.dtype == dtype
    np.testing.assert_array_equal(np.from_dlpack((x * 1j).realize()), data * 1j)


def test_torch_interchange():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = lt.from_dlpack(t)
    t[0, 0] = 42
    assert x.numpy()[0, 0] == 42
    back = torch.from_dlpack((x + 1).realize())
    assert torch.equal(back, t + 1)


def _consumer_writes(x, value):
    """What a consumer does with an export: take the memory and write into it."""
    shared = np.from_dlpack(x)
    assert shared.flags.writeable
    shared[...] = value


def test_an_export_changes_only_the_exported_tensor():
    a = lt.asarray(np.arange(4.0))
    b, c = a + 1, a + 1          # equal values: lazytensor may give them one buffer
    lt.realize(b, c)
    copied = b.copy()
    view = b[1:]
    _consumer_writes(b, -5.0)
    assert b.tolist() == [-5.0] * 4                      # the exported tensor sees the consumer's write
    assert c.tolist() == copied.tolist() == [1.0, 2.0, 3.0, 4.0] and view.tolist() == [2.0, 3.0, 4.0]
    assert (a + 1).tolist() == [1.0, 2.0, 3.0, 4.0]      # and so does nothing computed from a
    again = np.from_dlpack(b)                            # a second export shares the same memory
    assert np.shares_memory(again, b.numpy())


def test_an_exported_view_and_leaf_leave_their_bases_alone():
    base = lt.asarray(np.arange(6.0).reshape(2, 3))
    row = base[1]
    _consumer_writes(row, 0.0)
    assert row.tolist() == [0.0, 0.0, 0.0] and base.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    leaf = lt.asarray(np.ones(3))
    twin = lt.asarray(leaf, copy=True)
    _consumer_writes(leaf, 7.0)
    assert leaf.tolist() == [7.0] * 3 and twin.tolist() == [1.0] * 3


def test_dlpack_keywords():
    x = (lt.arange(5) * 2).realize()
    assert 'dltensor_versioned' in repr(x.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(x.__dlpack__())
    own = np.from_dlpack(x, copy=True)
    own[0] = 99
    assert x.tolist()[0] == 0 and not np.shares_memory(own, x.numpy())
    for copy in (None, True):   # (a copy too goes to the host only)
        with pytest.raises(BufferError, match=r"host only .* not to device \(2, 0\)"):
            x.__dlpack__(dl_device=(2, 0), copy=copy)
    with pytest.raises(BufferError, match="detach"):
        np.from_dlpack(lt.ones(2).requires_grad_())
    assert np.from_dlpack(lt.ones(2).requires_grad_().detach()).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", DTYPES + [lt.complex64, lt.complex128], ids=lambda d: d.name)
@pytest.mark.parametrize("size", [1, 3, 17, 1000])
def test_buffers_are_64_byte_aligned(dtype, size):
    """jax takes a DLPack export without copying only from 64-byte aligned memory."""
    x = lt.asarray(random_array(np.random.default_rng(size), (size,), dtype))
    y = (x == x) if dtype.is_bool else x + x
    assert np.from_dlpack(y).ctypes.data % 64 == 0
    assert y.realize().node.arg.address % 64 == 0


def test_torch_consumer_changes_only_the_exported_tensor():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    a = lt.asarray(np.arange(4, dtype=np.float32))
    b, c = a + 1, a + 1
    lt.realize(b, c)
    torch.from_dlpack(b).add_(98)
    assert b.tolist() == [99.0, 100.0, 101.0, 102.0] and c.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_dtype_lazytensor_lacks_is_refused_clearly():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    with pytest.raises(TypeError, match="lazytensor has bool, .*bfloat16"):
        lt.from_dlpack(torch.ones(2, dtype=torch.float8_e4m3fn))
