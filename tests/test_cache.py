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
    assert first["stats"]["kernels_compiled"] >= 4
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
