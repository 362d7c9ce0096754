"""The kernel cache: memory and disk, across processes, and what happens when the disk is bad."""
import json
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazytensor as lt

PROGRAM = textwrap.dedent("""
    import json, numpy as np, lazytensor as lt
    x = lt.asarray(np.arange(1000, dtype=np.float32) / 100)
    e = (x.reshape(10, 100) - x.reshape(10, 100).max(axis=1, keepdims=True)).exp()
    y = e / e.sum(axis=1, keepdims=True)
    z = (x * 2 + 1).sqrt().sum()
    lt.realize(y, z)
    print(json.dumps({"stats": lt.stats(), "y": float(y.numpy().sum()), "z": z.item()}))
""")


def run(cache_dir, extra_env=None) -> tuple[dict, str]:
    env = {**os.environ, "LT_CACHE_DIR": str(cache_dir), **(extra_env or {})}
    env.pop("LT_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def expected() -> tuple[float, float]:
    x = np.arange(1000, dtype=np.float32) / 100
    e = np.exp(x.reshape(10, 100) - x.reshape(10, 100).max(1, keepdims=True))
    return float((e / e.sum(1, keepdims=True)).sum()), float(np.sqrt(x * 2 + 1).sum())


def check_values(result: dict) -> None:
    y, z = expected()
    assert result["y"] == pytest.approx(y, rel=1e-5)
    assert result["z"] == pytest.approx(z, rel=1e-5)


def test_second_process_compiles_nothing(tmp_path):
    first, _ = run(tmp_path)
    assert first["stats"]["kernels_compiled"] >= 2
    second, _ = run(tmp_path)
    assert second["stats"]["kernels_compiled"] == 0
    assert second["stats"]["disk_cache_hits"] == first["stats"]["kernels_compiled"]
    check_values(first)
    check_values(second)
    mode = stat.S_IMODE(os.stat(tmp_path).st_mode)
    assert not mode & (stat.S_IWGRP | stat.S_IWOTH)


def test_new_directory_is_private(tmp_path):
    cache = tmp_path / "new" / "cache"
    run(cache)
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert list(cache.glob("*.bin"))


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_corrupt_entry_is_recompiled_with_a_warning(tmp_path, damage):
    first, _ = run(tmp_path)
    for entry in tmp_path.glob("*.bin"):
        data = entry.read_bytes()
        if damage == "truncate":
            entry.write_bytes(data[: len(data) // 2])
        elif damage == "flip":
            entry.write_bytes(data[:-10] + bytes(b ^ 0xFF for b in data[-10:]))
        else:
            entry.write_bytes(b"")
    second, stderr = run(tmp_path)
    assert "corrupt" in stderr
    assert second["stats"]["kernels_compiled"] == first["stats"]["kernels_compiled"]
    check_values(second)
    third, stderr = run(tmp_path)  # the recompiled entries were written back
    assert third["stats"]["kernels_compiled"] == 0 and "corrupt" not in stderr


def test_unusable_directory_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result, stderr = run(blocker / "cache")
    assert "in-memory cache only" in stderr
    check_values(result)


def test_directory_writable_by_others_is_not_trusted(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    run(shared)  # fills it while it is private
    os.chmod(shared, 0o777)
    result, stderr = run(shared)
    assert "writable by other users" in stderr
    assert result["stats"]["disk_cache_hits"] == 0 and result["stats"]["kernels_compiled"] > 0
    check_values(result)


def test_two_processes_at_once_share_one_cache(tmp_path):
    env = {**os.environ, "LT_CACHE_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "corrupt" not in err
        check_values(json.loads(out.strip().splitlines()[-1]))
    assert not list(tmp_path.glob("*.tmp")), "temporary files were left behind"
    after, _ = run(tmp_path)
    assert after["stats"]["kernels_compiled"] == 0


def test_in_process_memory_cache():
    x = lt.asarray(np.linspace(0, 1, 777, dtype=np.float32))
    (x * 3.25 - 1).realize()
    before = lt.stats()
    (x * 3.25 - 1).realize()
    after = lt.stats()
    assert after["kernels_compiled"] == before["kernels_compiled"]
    assert after["plan_cache_hits"] == before["plan_cache_hits"] + 1   # the same structure: no passes at all
    assert after["kernels_launched"] == before["kernels_launched"] + 1
    (x * 3.25 - 2).realize()   # another constant: a new structure, whose kernel is a different one
    lt.where(True, x * 3.25 - 1, x).realize()   # another graph that simplifies to the first kernel
    assert lt.stats()["memory_cache_hits"] >= after["memory_cache_hits"] + 1


def test_debug_prints_kernels_and_source(tmp_path):
    env = {**os.environ, "LT_CACHE_DIR": str(tmp_path), "LT_DEBUG": "2"}
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "define void @" in done.stderr          # the generated LLVM IR
    launches = [line for line in done.stderr.splitlines() if line.startswith("lt: cpu")]
    assert len(launches) == json.loads(done.stdout.splitlines()[-1])["stats"]["kernels_launched"]
    assert all(line.rstrip().endswith("us") for line in launches)


# ---- size cap, least recently used first; cache_clear ---------------------------------------------

def _entries(directory) -> set[str]:
    return {p.stem for p in directory.glob("*.bin")}


def test_size_cap_evicts_the_least_recently_used(tmp_path):
    from lazytensor.backends.cache import KernelCache
    from lazytensor.backends.protocol import Stats
    cache = KernelCache(Stats(), tmp_path, max_bytes=10_000)
    for i in range(4):   # 4 entries of ~2 KB, each older than the next
        cache.get_or_compile(f"k{i}", lambda: bytes(2000))
        os.utime(tmp_path / f"k{i}.bin", (1000 + i, 1000 + i))
    fresh = KernelCache(Stats(), tmp_path, max_bytes=10_000)   # (another process: nothing in memory)
    assert fresh.get_or_compile("k0", lambda: pytest.fail("k0 is on disk")) == bytes(2000)   # k0 used now
    fresh.get_or_compile("k4", lambda: bytes(3000))   # 11 KB: past the cap, evict down to 7.5 KB
    assert _entries(tmp_path) == {"k0", "k3", "k4"}   # k1 and k2 were the least recently used
    assert sum(p.stat().st_size for p in tmp_path.glob("*.bin")) <= 7_500
    assert fresh.stats.disk_cache_hits == 1


def test_size_cap_from_the_environment(tmp_path, monkeypatch):
    from lazytensor.backends.cache import DEFAULT_MAX_BYTES, max_cache_bytes
    monkeypatch.setenv("LT_CACHE_MAX_BYTES", "12345")
    assert max_cache_bytes() == 12345
    monkeypatch.setenv("LT_CACHE_MAX_BYTES", "lots")
    with pytest.warns(UserWarning, match="LT_CACHE_MAX_BYTES"):
        assert max_cache_bytes() == DEFAULT_MAX_BYTES
    # a whole program under a tiny cap still runs, and keeps the cache under it
    result, _ = run(tmp_path, {"LT_CACHE_MAX_BYTES": "4000"})
    check_values(result)
    assert sum(p.stat().st_size for p in tmp_path.glob("*.bin")) <= 4000


def test_cache_clear_forgets_every_kernel(tmp_path):
    program = PROGRAM + textwrap.dedent("""
        import os
        before = len([f for f in os.listdir(os.environ["LT_CACHE_DIR"]) if f.endswith(".bin")])
        lt.cache_clear()
        left = len([f for f in os.listdir(os.environ["LT_CACHE_DIR"]) if f.endswith(".bin")])
        compiled = lt.stats()["kernels_compiled"]
        y = (x.reshape(10, 100) * 3).sum(axis=1)   # a new kernel
        z = (x * 2 + 1).sqrt().sum()               # one compiled before the clear
        lt.realize(y, z)
        print(json.dumps({"before": before, "left": left, "recompiled": lt.stats()["kernels_compiled"] - compiled,
                          "z": z.item()}))
    """)
    env = {**os.environ, "LT_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] >= 2 and result["left"] == 0
    assert result["recompiled"] == 2
    assert result["z"] == pytest.approx(expected()[1], rel=1e-5)
