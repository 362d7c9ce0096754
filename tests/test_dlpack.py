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
