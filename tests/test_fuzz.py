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
import lazytensor as lt
from conftest import DEVICES, device_params

# The short run: programs per device, cut into chunks that pytest-xdist spreads over its workers.
# A cpu program takes ~20 ms, ~35 ms with complex values (a third of them: larger kernels); an
# OpenCL one ~0.6 s (PoCL builds each new kernel in ~0.2 s). (1500 and 48 programs before the
# complex dtypes came in: fewer now, for the same time.)
SHORT_RUN = {"cpu": (1260, 6), "accelerator": (44, 4)}


def short_run_cases():
    for device in DEVICES:
        programs, chunks = SHORT_RUN["cpu" if device == "cpu" else "accelerator"]
        for chunk in range(chunks):
            yield device, range(chunk * programs // chunks, (chunk + 1) * programs // chunks)
    for placeholder in device_params(()):   # (a missing backend: one skip that says so)
        yield pytest.param(*placeholder.values, range(0, 1), marks=placeholder.marks)


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


def test_complex_values_are_compared_part_by_part():
    """Both parts of a complex output are compared as floats; where the parts mix (a function), both
    may be off by the error of the modulus, and a part far smaller than it is not compared."""
    rng = np.random.default_rng(2)
    z = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(np.complex64)
    z[0] = 3 + 1e-8j   # sin(z[0]): its imaginary part, ~1e-8, lies below the modulus's rounding
    program = hand_made([("v0", "lt.sin(x0) * 3", "np.sin(x0) * 3", ("x0",), "transcendental")], {"x0": z}, ["v0"])
    (got,), (want,), (runs,) = checked(program)
    assert fuzz.compare("v0", got, want, runs) is None
    for i, part in [(3, 1), (4, 1j)]:   # some 800 ulps off in one part
        off = want.copy()
        off[i] += part * np.float32(1e-4) * abs(want[i])
        assert "1 of 12 elements differ" in fuzz.compare("v0", off, want, runs)
    nan = want.copy()
    nan[5] = complex(want[5].real, np.nan)
    assert "1 of 12 elements differ" in fuzz.compare("v0", nan, want, runs)
    small = want.copy()
    small[0] = complex(want[0].real, -want[0].imag)   # the sign of the small part: not compared
    assert fuzz.compare("v0", small, want, runs) is None


def test_special_values_numpy_and_the_standard_disagree_on_are_not_compared():
    """numpy's expm1(inf + 0j) is inf + nan j, the Array API's (and lazytensor's) inf + 0j: that
    element, and what it reaches, is not compared; the others are."""
    z = np.array([complex(np.inf, 0.0), 0.5 + 0.25j, -1 + 2j], dtype=np.complex128)
    program = hand_made([("v0", "lt.expm1(x0)", "np.expm1(x0)", ("x0",), "transcendental"),
                         ("v1", "v0.sum()", "np.sum(v0)", ("v0",), "sum"),
                         ("v2", "v0[1:] * 2", "v0[1:] * 2", ("v0",), "round")], {"x0": z}, ["v0", "v1", "v2"])
    program.steps[0].op = "expm1"
    program.steps[1].params = {"axis": None, "keepdims": False, "n": 3}
    (v0, v1, v2), (want_v0, want_v1, want_v2), (runs_v0, runs_v1, runs_v2) = checked(program)
    assert np.isnan(want_v0[0].imag) and v0[0] == complex(np.inf, 0.0)
    assert fuzz.compare("v0", v0, want_v0, runs_v0) is None
    assert fuzz.compare("v1", v1 * 0 + 12345, want_v1, runs_v1) is None   # it reaches the sum
    assert fuzz.compare("v2", v2, want_v2, runs_v2) is None
    off = v0.copy()
    off[2] *= 1 + 1e-6
    assert "1 of 3 elements differ" in fuzz.compare("v0", off, want_v0, runs_v0)
    assert "1 of 2 elements differ" in fuzz.compare("v2", v2 * [1, 1 + 1e-6], want_v2, runs_v2)


def test_a_write_through_a_view_nudges_the_array_it_views():
    """v = x.T; v /= y changes x: the nudged runs move x too (a complex quotient's last bits are
    the division's way: lazytensor's z / z is 1 - 3.5e-10j in complex64, numpy's 1 + 0j)."""
    rng = np.random.default_rng(3)
    x, y = ((rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64) for _ in range(2))
    program = fuzz.Program(seed=-1, device="cpu", inputs={"x0": x, "x1": y.T.copy()}, outputs=["x0"])
    program.steps = [fuzz.Step("expr", "T", "v0", "x0.T", "x0.T", ("x0",)),
                     fuzz.Step("write", "itruediv", "v0", "v0 /= x1", "v0 /= x1", ("v0", "x1"), {"a": "v0", "b": "x1"}, "round")]
    (got,), (want,), (runs,) = checked(program)
    assert all(r.shape == want.shape for r in runs) and any((r != want).any() for r in runs)
    assert fuzz.compare("x0", got, want, runs) is None
    assert "differ" in fuzz.compare("x0", got * np.complex64(1 + 1e-4), want, runs)


def test_ops_kept_from_complex_operands_raise_type_error():
    """What the generator keeps away from complex operands, lazytensor refuses (TypeError): where
    it starts to define one, its name goes from fuzz.REAL_ONLY (or its kinds get "c")."""
    z = lt.asarray(np.array([1 + 2j, -3 + 0.5j], dtype=np.complex64))
    sources = {name: fuzz.BINARY[name][0].format("z", "z") for name in fuzz.REAL_ONLY if name in fuzz.BINARY}
    sources.update({name: fuzz.REDUCTIONS[name][0].format("z") + "()" for name in fuzz.REAL_ONLY if name in fuzz.REDUCTIONS})
    complex_ok = {lt_src for lt_src, _, kinds, _ in fuzz.UNARY.values() if "c" in kinds}   # (abs: abs_complex)
    sources.update({name: lt_src.format("z") for name, (lt_src, _, kinds, _) in fuzz.UNARY.items()
                    if "c" not in kinds and lt_src not in complex_ok})
    sources.update({"clip": "lt.clip(z, 0, 1)", "sort": "lt.sort(z)", "argsort": "lt.argsort(z)",
                    "searchsorted": "lt.searchsorted(lt.real(z), z)", "cast": "z.astype(lt.float32)",
                    "setitem": "lt.zeros(2).__setitem__(0, z[0])"})
    assert set(fuzz.REAL_ONLY) <= set(sources)
    for name, source in sources.items():
        try:
            result = eval(source, {"lt": lt}, {"z": z})
            if result is not None:
                result.numpy()
        except TypeError:
            continue
        pytest.fail(f"{name}: {source} of a complex tensor did not raise TypeError")


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


@pytest.mark.parametrize("fuzz_device", device_params())
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
