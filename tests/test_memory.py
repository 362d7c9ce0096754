"""The memory pool: freed buffers are reused, but never memory the user may still see (a numpy
view handed out) or memory an alias (a reshaped view) still reads."""
from __future__ import annotations

import gc

import numpy as np

import lazytensor as lt
from lazytensor.devices import runtime
from lazytensor.ir.dtypes import float32


def test_freed_memory_is_reused():
    device = runtime("cpu").device
    first = device.allocate((1000, 37), float32)
    address = first.address
    del first
    gc.collect()
    again = device.allocate((1000, 37), float32)
    assert again.address == address


def test_memory_handed_to_numpy_is_never_reused():
    data = np.random.default_rng(0).standard_normal((300, 301)).astype(np.float32)
    x = lt.asarray(data)
    held = (x * 2).numpy()          # the user keeps this view; the tensor goes away
    expected = held.copy()
    for k in range(20):             # same-size results that would land in recycled memory
        (x * k - 1).numpy()
        gc.collect()
    np.testing.assert_array_equal(held, expected)


def test_an_alias_keeps_its_owners_memory():
    device = runtime("cpu").device
    owner = device.from_numpy(np.arange(12, dtype=np.float32))
    alias = owner.reshaped((3, 4))
    address = owner.address
    del owner
    gc.collect()
    fresh = device.allocate((12,), float32)   # must not get the memory the alias still reads
    assert fresh.address != address
    np.testing.assert_array_equal(device.to_numpy(alias), np.arange(12, dtype=np.float32).reshape(3, 4))
