"""The memory pool: freed buffers are reused, but never memory the user may still see (a numpy
view handed out) or memory an alias (a reshaped view) still reads."""
from __future__ import annotations

import gc
import os

import numpy as np
import pytest

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


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_a_long_training_loop_keeps_its_memory_flat():
    """10,000 SGD steps (momentum) of a small MLP: after the first 1,000, the process's resident
    memory grows by less than 4 MB (graphs, plans, buffers and their pool all reach a steady
    state; a leak of one 16x64 float32 buffer per step would add 40 MB)."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("resident memory is read from /proc")
    nn, F = lt.nn, lt.nn.functional
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = lt.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 32)).astype(np.float32), rng.integers(0, 10, 16)
    losses = []
    for step in range(1, 10_001):
        opt.zero_grad()
        loss = F.cross_entropy(model(lt.asarray(x)), lt.asarray(y))
        loss.backward()
        opt.step()
        if step % 1000 == 0:
            losses.append(loss.item())
        if step == 1000:
            gc.collect()
            start = _rss_mb()
    gc.collect()
    assert _rss_mb() - start < 4.0
    assert losses[-1] < losses[0]   # (it did train)


def _give(pool, nbytes: int, count: int) -> None:
    for _ in range(count):
        pool.give(nbytes, bytearray(1))   # (the pool keeps what it is given; the contents are not its business)


def _kept(pool) -> dict[int, int]:
    return {size: len(handles) for size, handles in pool.free.items()}


@pytest.mark.parametrize("nbytes", [1, 512, 1 << 20, 4 << 20, 48 << 20, 256 << 20])
def test_the_pool_keeps_a_bounded_number_of_one_size(nbytes):
    """As many freed buffers of one size as a step's activations (2048x128 floats: some 30
    alive at once), never more than PER_SIZE_BYTES' worth unless it is the minimum, and
    never more than PER_SIZE_MAX; what it keeps is reused, last freed first."""
    from lazytensor.backends.pool import MemoryPool
    pool = MemoryPool()
    _give(pool, nbytes, 200)
    kept = _kept(pool).get(nbytes, 0)
    assert kept == pool.per_size(nbytes)
    assert pool.PER_SIZE_MIN <= kept <= pool.PER_SIZE_MAX
    assert kept <= max(pool.PER_SIZE_MIN, pool.PER_SIZE_BYTES // nbytes)
    if nbytes == 1 << 20:
        assert kept >= 32   # (fewer, and a GPT step page-faults its activations every step)
    assert pool.bytes == kept * nbytes <= pool.MAX_BYTES
    assert [pool.take(nbytes) is not None for _ in range(kept + 1)] == [True] * kept + [False]
    assert pool.bytes == 0


def test_the_pool_is_bounded_in_bytes_and_sizes_dropping_the_sizes_freed_longest_ago():
    from lazytensor.backends.pool import MemoryPool
    pool = MemoryPool()
    rng = np.random.default_rng(0)
    sizes = [int(n) for n in rng.integers(1, 32 << 20, 2000)]
    for size in sizes:
        _give(pool, size, int(rng.integers(1, 8)))
        assert pool.bytes <= pool.MAX_BYTES and len(pool.free) <= pool.MAX_SIZES
        assert pool.bytes == sum(size * count for size, count in _kept(pool).items())
    recent = list(dict.fromkeys(reversed(sizes)))   # sizes by the last time they were freed
    assert set(pool.free) == set(recent[:len(pool.free)])
    assert len(pool.free) == pool.MAX_SIZES or pool.bytes > pool.MAX_BYTES - (32 << 20) * 8
