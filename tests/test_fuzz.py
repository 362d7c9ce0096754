"""The differential fuzzer (tests/fuzz.py) in the suite: a short run of fixed seeds on every device,
checks that its comparison, shrinking and crash handling work, and the long mode behind an option:

    python -m pytest -q tests/test_fuzz.py -n auto                          # the short run
    LT_FUZZ_MINUTES=cpu:30,opencl:10 python -m pytest -q tests/test_fuzz.py -k long -s
    LT_FUZZ_MINUTES=5 LT_FUZZ_SEED=123 ...                                 # 5 minutes on every device
"""
import contextlib
import io
import os

import numpy as np
import pytest

import fuzz
from conftest import DEVICES

# The short run: programs per device, cut into chunks that pytest-xdist spreads over its workers.
# A cpu program takes ~20 ms; an OpenCL one ~0.6 s (PoCL builds each new kernel in ~0.2 s).
SHORT_RUN = {"cpu": (1500, 6), "accelerator": (48, 4)}


def short_run_cases():
    for device in DEVICES:
        programs, chunks = SHORT_RUN["cpu" if device == "cpu" else "accelerator"]
        for chunk in range(chunks):
            yield device, range(chunk * programs // chunks, (chunk + 1) * programs // chunks)


def failure_report(outcomes) -> str:
    return "\n\n".join(f"seed {o.seed} on {o.device}: {o.status}: {o.message}\n{o.script}" for o in outcomes)


# (named fuzz_device, not device: conftest samples one in four `device` cases on accelerators;
# these chunks are sized for each device already)
@pytest.mark.parametrize("fuzz_device, seeds", list(short_run_cases()),
                         ids=lambda v: f"{v.start}-{v.stop - 1}" if isinstance(v, range) else str(v))
def test_short_run(fuzz_device, seeds):
    failures = [o for o in (fuzz.run_one(seed, fuzz_device) for seed in seeds) if o.status != "ok"]
    assert not failures, failure_report(failures)


# ---- the fuzzer's own machinery -----------------------------------------------------------------

def hand_made(steps, inputs, outputs) -> fuzz.Program:
    """A program written out: steps as (target, lazytensor source, numpy source, args, error)."""
    program = fuzz.Program(seed=-1, device="cpu", inputs=dict(inputs), outputs=list(outputs))
    program.steps = [fuzz.Step("expr", "hand", t, lt_src, np_src, args, {}, error)
                     for t, lt_src, np_src, args, error in steps]
    return program


def checked(program):
    """(lazytensor's outputs, numpy's, the nudged runs per output) of `program`."""
    trace = []
    want = fuzz.reference(program, trace=trace)
    runs = [fuzz.reference(program, run, trace) for run in range(fuzz.NUDGED_RUNS)]
    return fuzz.run_lazytensor(program), want, [[r[i] for r in runs] for i in range(len(want))]


def test_comparison_catches_a_wrong_value():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    program = hand_made([("v0", "lt.sin(x0) * 3", "np.sin(x0) * 3", ("x0",), "transcendental"),
                         ("v1", "(x0 > 0).sum(axis=0)", "np.sum(x0 > 0, axis=0)", ("x0",), "exact")],
                        {"x0": x}, ["v0", "v1"])
    (sin, count), (want_sin, want_count), (runs_sin, runs_count) = checked(program)
    assert fuzz.compare("v0", sin, want_sin, runs_sin) is None
    assert fuzz.compare("v1", count, want_count, runs_count) is None

    off = sin.copy()
    off[3, 2] *= 1 + 1e-4   # some 800 ulps: far past a sine's error
    assert "1 of 35 elements differ" in fuzz.compare("v0", off, want_sin, runs_sin)
    wrong = count.copy()
    wrong[1] += 1
    assert "1 of 5 elements differ" in fuzz.compare("v1", wrong, want_count, runs_count)
    nan = sin.copy()
    nan[0, 0] = np.nan
    assert fuzz.compare("v0", nan, want_sin, runs_sin) is not None
    assert "float64" in fuzz.compare("v0", sin.astype(np.float64), want_sin, runs_sin)
    assert "[35]" in fuzz.compare("v0", sin.reshape(-1), want_sin, runs_sin)


def test_tolerance_of_a_sum_follows_its_terms():
    """A float32 sum may be off by what a sequential sum could err, ~sqrt(n) * eps * sum|x|, not more."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(5000) * 1000).astype(np.float32)
    program = hand_made([("v0", "x0.sum()", "np.sum(x0)", ("x0",), "sum")], {"x0": x}, ["v0"])
    program.steps[0].params = {"axis": None, "keepdims": False, "n": x.size}
    (got,), (want,), (runs,) = checked(program)
    assert fuzz.compare("v0", got, want, runs) is None
    scale = float(np.finfo(np.float32).eps * np.abs(x.astype(np.float64)).sum())
    assert fuzz.compare("v0", want + np.float32(0.5 * scale), want, runs) is None
    assert fuzz.compare("v0", want + np.float32(1000 * scale), want, runs) is not None


def test_discrete_results_of_nudged_values_are_not_compared():
    """floor(x * 3) where x * 3 rounds to a whole number: either neighbour is right."""
    x = np.array([1 / 3, 0.25], dtype=np.float32)
    program = hand_made([("v0", "x0 * 3", "x0 * 3", ("x0",), "round"),
                         ("v1", "lt.floor(v0)", "np.floor(v0)", ("v0",), "exact")], {"x0": x}, ["v1"])
    (got,), (want,), (runs,) = checked(program)
    assert want[0] == 1.0
    moved = got.copy()
    moved[0] = 0.0
    assert fuzz.compare("v1", moved, want, runs) is None       # x*3 is 1 +- an ulp: floor is 0 or 1
    moved[1] = 1.0
    assert fuzz.compare("v1", moved, want, runs) is not None   # floor(0.75) is 0, whatever the nudge


def test_same_seed_same_program():
    assert fuzz.script(fuzz.generate(123, "cpu")) == fuzz.script(fuzz.generate(123, "cpu"))
    assert fuzz.script(fuzz.generate(123, "cpu")) != fuzz.script(fuzz.generate(124, "cpu"))


def test_script_runs_on_its_own():
    program = fuzz.generate(5, "cpu")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(fuzz.script(program), "<fuzz script>", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert len(lines) == len(program.outputs) and all(" same " in line for line in lines), lines


def test_shrink_keeps_what_the_failure_needs():
    x = np.arange(6, dtype=np.float64)
    program = hand_made([("v0", "x0 + 1", "x0 + 1", ("x0",), "round"),
                         ("v1", "lt.exp(x0)", "np.exp(x0)", ("x0",), "transcendental"),
                         ("v2", "v0 * 2", "v0 * 2", ("v0",), "round"),
                         ("v3", "v2 - v1", "v2 - v1", ("v2", "v1"), "round")], {"x0": x}, ["v3", "v1"])

    def fails_where_exp_is_read(trial):  # stands in for lazytensor going wrong in v1
        return ("mismatch", "v1 differs") if "v1" in trial.outputs else ("ok", "")

    small = fuzz.shrink(program, ("mismatch", "v1 differs"), fails=fails_where_exp_is_read)
    assert [s.target for s in small.steps] == ["v1"] and small.outputs == ["v1"]
    assert "v0" not in fuzz.script(small)


def test_long_mode_counts_a_crash(monkeypatch):
    """A program that kills the interpreter is counted and reported; the run goes on."""
    monkeypatch.setenv("LT_FUZZ_CRASH_SEED", "8")
    result = fuzz.long_run("cpu", minutes=5, seed=7, programs=3, report=lambda line: None)
    assert result["counts"]["programs"] == 3 and result["counts"]["crashes"] == 1, result["counts"]
    (crash,) = [o for o in result["failures"] if o.status == "crash"]
    assert crash.seed == 8 and "seed 8" in crash.script and "did not crash" in crash.message


# ---- the long mode -------------------------------------------------------------------------------

def long_minutes(device: str) -> float:
    """LT_FUZZ_MINUTES: minutes for every device ("30") or per device ("cpu:30,opencl:10")."""
    setting = os.environ.get("LT_FUZZ_MINUTES", "")
    if ":" not in setting:
        return float(setting or 0)
    minutes = dict(part.split(":") for part in setting.split(","))
    return float(minutes.get(device, minutes.get(device.split(":")[0], 0)))


@pytest.mark.parametrize("fuzz_device", DEVICES)
def test_long_run(fuzz_device):
    minutes = long_minutes(fuzz_device)
    if not minutes:
        pytest.skip("the long mode: set LT_FUZZ_MINUTES (e.g. cpu:30,opencl:10)")
    seed = int(os.environ.get("LT_FUZZ_SEED", "1000000"))
    result = fuzz.long_run(fuzz_device, minutes, seed)
    print(f"\n{fuzz_device}: {result['counts']} (seeds {seed}..{result['next_seed'] - 1})")
    assert not result["failures"], failure_report(result["failures"])


def test_an_output_reached_by_a_step_a_nudged_run_could_not_do_is_not_compared():
    """A nudged run that cannot do a step takes its value from the plain run: what that step
    reaches says nothing of how far the nudges move it (an output was then compared to the ulp,
    the error of a cosh before a unique forgotten), so it is None there; the rest is kept."""
    x = np.random.default_rng(1).standard_normal(6).astype(np.float32)
    raises_once_nudged = "v0[np.array([0]) if (v0 == x0 * 3).all() else np.array([99])]"
    program = hand_made([("v0", "x0 * 3", "x0 * 3", ("x0",), "round"),
                         ("v1", "v0[[0]]", raises_once_nudged, ("v0", "x0"), "exact"),
                         ("v2", "v1 + 1", "v1 + 1", ("v1",), "round"),
                         ("v3", "x0 * 2", "x0 * 2", ("x0",), "round")],
                        {"x0": x}, ["v2", "v3"])
    trace, fell_back = [], []
    fuzz.reference(program, trace=trace)
    runs = [fuzz.reference(program, run, trace, fell_back) for run in range(fuzz.NUDGED_RUNS)]
    assert fell_back, "no nudged run fell back: the test does not test it"
    assert any(r[0] is None for r in runs) and all(r[1] is not None for r in runs)
    (v2, v3), (want_v2, want_v3), (runs_v2, runs_v3) = checked(program)
    assert fuzz.compare("v2", v2 * (1 + 1e-6), want_v2, runs_v2) is None   # not compared
    assert "differ" in fuzz.compare("v3", v3 * (1 + 1e-3), want_v3, runs_v3)  # compared
