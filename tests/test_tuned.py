"""Tuning results remembered (lazytensor/tuned.py) and the tuning interface (lt.tune, LT_TUNE,
lt.tuning.export/load): a tuned schedule is used by every later compile of its kernel, in this
process and another, and a damaged record never breaks a program."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import lazytensor as lt
from lazytensor import pipeline, tuned, tuning
from lazytensor.backends.cache import KernelCache
from lazytensor.scheduler import schedule as S

from conftest import own_cache, run_isolated


@pytest.fixture
def cache(tmp_path, device):
    """`device`'s runtime with a kernel cache (and so a tuning store) of its own, in tmp_path."""
    with own_cache(device, tmp_path) as rt:
        yield rt


def _data(device, shape=(37, 300), seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return values, lt.asarray(values, device=device)


def _kernel(tensor, rt):
    return pipeline.kernels([tensor.node], rt.device.target).kernels[-1]


def _other_schedule(kernel, rt):
    """A schedule that lowers and is not the heuristic one."""
    found = tuning.candidates(kernel, rt.device.target, limit=3)
    assert len(found) > 1
    return found[1]


def _remembered_row_sums(rt):
    """Row sums on the cpu with a schedule other than the heuristic one remembered for their
    kernel: (values, tensor, kernel, that schedule)."""
    values, x = _data("cpu")
    kernel = _kernel(x.sum(axis=1), rt)
    chosen = _other_schedule(kernel, rt)
    tuned.remember(kernel.expr, rt, chosen, 1e-3, 2e-3, 5)
    return values, x, kernel, chosen


EVERY_PRIMITIVE = (S.Split("i0", 4), S.Reorder(("i0_o", "i1", "i0_i")), S.Fuse(("i0_o", "i1")), S.Parallel("i0_oxi1"),
                   S.Vectorize("i0_i", 8), S.Unroll("i0_i", 2), S.Bind("i1", "thread"), S.CacheRead(1, None),
                   S.CacheRead(0, "r0_1_o"), S.CacheWrite("i0_i"), S.PartialSum("r0_1_i"))


def test_a_schedule_survives_json():
    assert {type(p) for p in EVERY_PRIMITIVE} == set(tuned.PRIMITIVES.values())
    assert tuned.decode(json.loads(json.dumps(tuned.encode(EVERY_PRIMITIVE)))) == EVERY_PRIMITIVE


@pytest.mark.parametrize("bad", ["not a list", [["Warp", "i0"]], [["Split", "i0"]], [["Split", "i0", 2.5]],
                                 [["Split", "i0", True]], [["Reorder", ["i0", 3]]], [[]], [3]])
def test_decode_refuses_what_is_not_a_schedule(bad):
    with pytest.raises(ValueError):
        tuned.decode(bad)


@pytest.mark.parametrize("device", ["cpu"])
def test_a_remembered_schedule_is_used_by_realize_in_this_process_and_the_next(cache, tmp_path):
    values, x, kernel, chosen = _remembered_row_sums(cache)
    assert (tmp_path / tuned.FILE).is_file()
    compiled = pipeline.compile_kernel(kernel, cache)
    assert compiled.name == pipeline.compile_kernel(kernel, cache, chosen).name
    assert compiled.name != pipeline.compile_kernel(kernel, cache, tuning.candidates(kernel, cache.device.target, 1)[0]).name
    np.testing.assert_allclose(x.sum(axis=1).numpy(), values.sum(axis=1), rtol=1e-5, atol=1e-4)
    program = """
import sys, json, numpy as np, lazytensor as lt
from lazytensor import pipeline, tuned
from lazytensor.devices import runtime
rt = runtime("cpu")
values = np.random.default_rng(0).standard_normal((37, 300)).astype(np.float32)
y = lt.asarray(values).sum(axis=1)
kernel = pipeline.kernels([y.node], rt.device.target).kernels[-1]
assert tuned.lookup(kernel.expr, rt) == tuned.decode(json.loads(sys.argv[1]))
np.testing.assert_allclose(y.numpy(), values.sum(axis=1), rtol=1e-5, atol=1e-4)
print("kernels compiled", lt.stats()["kernels_compiled"], "from disk", lt.stats()["disk_cache_hits"])
"""
    out = run_isolated(program, tmp_path, json.dumps(tuned.encode(chosen)))
    assert "from disk 1" in out.stdout, out.stdout   # (the tuned kernel, compiled by this process)


@pytest.mark.parametrize("device", ["cpu"])
def test_damaged_records_are_skipped_with_a_warning(cache, tmp_path):
    values, x = _data("cpu")
    kernel = _kernel(x.sum(axis=1), cache)
    expr = kernel.expr
    good = tuned.make_record(tuned.kernel_key(expr, cache), expr, cache, _other_schedule(kernel, cache), 1e-3, 2e-3, 4)
    forged = dict(good, schedule=[["Parallel", "i7"]])                   # its check no longer matches
    unknown = tuned.make_record("k", expr, cache, (), 1.0, 1.0, 1)
    unknown["schedule"] = [["Warp", 3]]
    unknown["check"] = tuned._check(unknown)
    lines = ["{not json", json.dumps(forged), json.dumps(unknown), "\x00\xff garbage", json.dumps(good)[:40]]
    (tmp_path / tuned.FILE).write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="tuning record"):
        assert tuned.lookup(expr, cache) is None
    np.testing.assert_allclose(x.sum(axis=1).numpy(), values.sum(axis=1), rtol=1e-5, atol=1e-4)
    with open(tmp_path / tuned.FILE, "a") as file:   # (a whole good record after them is read)
        file.write(json.dumps(good) + "\n")
    assert tuned.lookup(expr, cache) == tuned.decode(good["schedule"])


@pytest.mark.parametrize("device", ["cpu"])
def test_a_remembered_schedule_that_no_longer_lowers_falls_back_to_the_heuristic_one(cache):
    values, x = _data("cpu")
    kernel = _kernel(x.sum(axis=1), cache)
    tuned.remember(kernel.expr, cache, (S.Split("i9", 4),), 1e-3, 2e-3, 2)
    with pytest.warns(UserWarning, match="does not apply"):
        np.testing.assert_allclose(x.sum(axis=1).numpy(), values.sum(axis=1), rtol=1e-5, atol=1e-4)


def test_lt_tune_reports_remembers_and_keeps_values_right(cache, device):
    values, x = _data(device, (64, 257))
    w = np.random.default_rng(1).standard_normal((257, 31)).astype(np.float32)
    lw = lt.asarray(w, device=device)
    (x @ lw).numpy()   # (a plan built before tuning is dropped)

    def model():
        return lt.exp(x @ lw).sum(axis=1), x.max(axis=0)
    report = lt.tune(model, trials=4, runs=1)
    assert report.kernels and all(1 <= k.trials <= 4 and k.best_seconds <= k.heuristic_seconds for k in report.kernels)
    assert "heuristic ms" in str(report) and report.kernels[0].kernel in str(report)
    assert len(tuned.store(cache).all()) == len(report.kernels), (report, tuned.store(cache).all())
    total, top = model()
    np.testing.assert_allclose(total.numpy(), np.exp(values @ w).sum(axis=1), rtol=1e-4)
    np.testing.assert_array_equal(top.numpy(), values.max(axis=0))
    with pytest.raises(ValueError, match="trials"):
        lt.tune(model, trials=0)


@pytest.mark.parametrize("device", ["cpu"])
def test_export_and_load_move_results_between_caches(cache, tmp_path):
    _, _, kernel, chosen = _remembered_row_sums(cache)
    log = tmp_path / "log.json"
    assert lt.tuning.export(log, "cpu") == 1
    record = json.loads(log.read_text())["records"][0]
    assert record["kernel"] == tuned.describe(kernel.expr) and record["seconds"] == 1e-3
    assert tuned.decode(record["schedule"]) == chosen
    cache.cache = KernelCache(cache.stats, tmp_path / "elsewhere")
    assert tuned.lookup(kernel.expr, cache) is None
    assert lt.tuning.load(log, "cpu") == 1
    assert tuned.lookup(kernel.expr, cache) == chosen
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(ValueError, match="not a lazytensor tuning log"):
        lt.tuning.load(tmp_path / "bad.json", "cpu")


def _run(program, cache_dir, *args, **env):
    """`program` in a fresh interpreter with `cache_dir` as its kernel cache and `env` set."""
    done = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, LT_CACHE_DIR=str(cache_dir), **env))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_lt_tune_env_tunes_each_new_kernel_once_and_a_second_process_needs_no_trials(tmp_path):
    program = """
import numpy as np, lazytensor as lt
from lazytensor import tuned
from lazytensor.devices import runtime
values = np.random.default_rng(0).standard_normal((50, 130)).astype(np.float32)
x = lt.asarray(values)
for _ in range(2):
    got = (lt.sin(x) * 2).sum(axis=0).numpy()
    np.testing.assert_allclose(got, (np.sin(values) * 2).sum(axis=0), rtol=1e-4, atol=1e-4)
print("records", len(tuned.store(runtime("cpu")).all()), "compiled", lt.stats()["kernels_compiled"])
"""
    assert "records 1 " in _run(program, tmp_path, LT_TUNE="1", LT_TUNE_TRIALS="3")
    assert "records 1 compiled 0" in _run(program, tmp_path)   # (the tuned kernel, from disk)


def test_processes_appending_records_at_once_lose_none(tmp_path):
    program = """
import sys
from lazytensor import tuned
from lazytensor.devices import runtime
store = tuned.store(runtime("cpu"))
for i in range(200):
    record = {"key": f"{sys.argv[1]}-{i}", "kernel": "e 1 float32", "device": "cpu",
              "schedule": [["Split", "i0", i + 1]], "seconds": 1.0, "heuristic_seconds": 1.0, "trials": 1}
    store.add(dict(record, check=tuned._check(record)))
"""
    env = dict(os.environ, LT_CACHE_DIR=str(tmp_path))
    workers = [subprocess.Popen([sys.executable, "-c", program, str(n)], env=env) for n in range(3)]
    assert all(w.wait(timeout=120) == 0 for w in workers)
    lines = (tmp_path / tuned.FILE).read_text().splitlines()
    assert len(lines) == 600
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(tuned._parse(line) is not None for line in lines)
