"""conv2d by Winograd's F(4, 3) along the rows (lazytensor/nn/winograd.py) and the choice between
it and the direct kernel (tuning.choose): values and gradients as torch's, on every device, for
odd sizes, every padding and output heights that are not whole tiles; the direct kernel unless a
measurement chose otherwise; the choice remembered beside the tuned schedules."""
import json

import numpy as np
import pytest

import lazytensor as lt
from lazytensor import tuned, tuning
from lazytensor.nn import winograd

from conftest import own_cache

torch = pytest.importorskip("torch")

SHAPES = [  # (n, c, h, w, k, padding)
    (2, 3, 9, 7, 5, 1), (1, 4, 8, 8, 2, 0), (3, 2, 5, 13, 4, 2), (1, 1, 3, 3, 1, 0), (2, 5, 6, 4, 3, (0, 1)),
    (1, 2, 17, 3, 2, (2, 0)), (4, 8, 12, 11, 6, 1),
]


def _conv_data(shape, seed=0):
    n, c, h, w, k, padding = shape
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c, h, w)).astype(np.float32),
            (rng.standard_normal((k, c, 3, 3)) * 0.3).astype(np.float32), rng.standard_normal(k).astype(np.float32),
            padding if isinstance(padding, tuple) else (padding, padding))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_winograd_rows_compute_torchs_convolution_and_its_gradients(device, shape, with_bias):
    x, w, b, padding = _conv_data(shape)
    lx, lw, lb = (lt.asarray(v, device=device, requires_grad=True) for v in (x, w, b))
    out = winograd.conv2d_rows(lx, lw, lb if with_bias else None, padding)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    want = torch.nn.functional.conv2d(tx, tw, tb if with_bias else None, padding=padding)
    assert out.shape == tuple(want.shape)
    scale = float(want.detach().abs().max())
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5 * scale)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    (out * lt.asarray(g, device=device)).sum().backward()
    (want * torch.from_numpy(g)).sum().backward()
    for got, expect in [(lx.grad, tx.grad), (lw.grad, tw.grad)] + ([(lb.grad, tb.grad)] if with_bias else []):
        np.testing.assert_allclose(got.numpy(), expect.numpy(), rtol=1e-4, atol=1e-4 * float(expect.abs().max()))


def test_winograd_rows_keep_nonfinite_inputs_nonfinite():
    """An inf or nan in the input reaches the outputs it touches (the transforms add and subtract
    it: inf - inf is nan, so an inf may come out nan, as it may in any reordered sum; never a
    finite value), and outputs far from it stay finite."""
    x, w, b, padding = _conv_data((1, 2, 12, 12, 3, 1))
    x[0, 1, 6, 6] = np.inf
    out = winograd.conv2d_rows(lt.asarray(x), lt.asarray(w), lt.asarray(b), padding).numpy()
    assert not np.isfinite(out[0, :, 5:8, 5:8]).any()
    assert np.isfinite(out[0, :, :3]).all() and np.isfinite(out[0, :, 10:]).all()


@pytest.mark.parametrize("change", ["stride", "dilation", "groups", "kernel", "float64", "small"])
def test_only_the_convolutions_it_computes_fit(change):
    x, w = lt.ones((8, 32, 56, 56)), lt.ones((64, 32, 3, 3))
    assert winograd.fits(x, w, (1, 1), (1, 1), 1)
    args = {"stride": (x, w, (2, 2), (1, 1), 1), "dilation": (x, w, (1, 1), (2, 2), 1),
            "groups": (x, lt.ones((64, 16, 3, 3)), (1, 1), (1, 1), 2),
            "kernel": (x, lt.ones((64, 32, 5, 5)), (1, 1), (1, 1), 1),
            "float64": (x.astype(lt.float64), w.astype(lt.float64), (1, 1), (1, 1), 1),
            "small": (lt.ones((1, 4, 16, 16)), lt.ones((4, 4, 3, 3)), (1, 1), (1, 1), 1)}[change]
    assert not winograd.fits(*args)


BIG = (4, 16, 32, 32, 32, 1)   # (above winograd.MIN_MACS)


def _launches(fn) -> int:
    before = lt.stats()["kernels_launched"]
    fn().realize()
    return lt.stats()["kernels_launched"] - before


@pytest.fixture
def cache(tmp_path):
    with own_cache("cpu", tmp_path) as rt:
        yield rt


def test_conv2d_is_direct_until_a_measurement_chooses_winograd(cache):
    """Without a remembered choice conv2d is the direct kernel (the heuristics never leave it);
    with Winograd's remembered for these shapes it is Winograd's graph (more kernels), same
    values; other shapes stay direct."""
    x, w, b, padding = _conv_data(BIG)
    lx, lw, lb = (lt.asarray(v) for v in (x, w, b))
    conv = lambda: lt.nn.functional.conv2d(lx, lw, lb, padding=1)   # noqa: E731
    want = torch.nn.functional.conv2d(*map(torch.from_numpy, (x, w, b)), padding=1).numpy()
    direct = _launches(conv)
    np.testing.assert_allclose(conv().numpy(), want, rtol=1e-5, atol=1e-4)
    signature = "4x16x32x32 * 32x16x3x3 padding 1,1 bias float32"
    assert tuned.chosen("conv2d", signature, cache) is None
    tuned.remember_choice("conv2d", signature, cache, "winograd", 1e-3, 2e-3, 2)
    assert tuned.chosen("conv2d", signature, cache) == "winograd"
    assert _launches(conv) > direct
    np.testing.assert_allclose(conv().numpy(), want, rtol=1e-5, atol=1e-4)
    other = lt.asarray(x[:2])
    assert _launches(lambda: lt.nn.functional.conv2d(other, lw, lb, padding=1)) == direct


def test_lt_tune_measures_both_and_remembers_the_faster(cache, monkeypatch):
    """lt.tune runs a conv2d's implementations on stand-in inputs, times them in turns and
    remembers the faster (a non-default one only where clearly faster); the report says both
    times; the record travels in the exported log; a later call uses it with no tuning on."""
    x, w, b, padding = _conv_data(BIG)
    lx, lw, lb = (lt.asarray(v) for v in (x, w, b))
    monkeypatch.setattr(tuning, "CHOICE_ROUNDS", 1)
    report = lt.tune(lambda: lt.nn.functional.conv2d(lx, lw, lb, padding=1), trials=1, runs=1)
    (choice,) = report.choices
    assert set(choice.seconds) == {"direct", "winograd"} and choice.chosen in choice.seconds
    assert "conv2d 4x16x32x32" in str(report) and choice.chosen in str(report)
    faster = min(choice.seconds, key=choice.seconds.get)
    assert choice.chosen == faster or choice.chosen == "direct"
    assert tuned.chosen("conv2d", choice.signature, cache) == choice.chosen
    records = [r for r in tuned.store(cache).all() if r.get("algorithm")]
    assert [r["algorithm"] for r in records] == [choice.chosen]
    want = torch.nn.functional.conv2d(*map(torch.from_numpy, (x, w, b)), padding=1).numpy()
    np.testing.assert_allclose(lt.nn.functional.conv2d(lx, lw, lb, padding=1).numpy(), want, rtol=1e-5, atol=1e-4)


def test_a_remembered_choice_travels_in_the_tuning_log(cache, tmp_path):
    tuned.remember_choice("conv2d", "sig", cache, "winograd", 1e-3, 2e-3, 2)
    log = tmp_path / "log.json"
    assert lt.tuning.export(log, "cpu") == 1
    (record,) = json.loads(log.read_text())["records"]
    assert record["algorithm"] == "winograd" and record["kernel"] == "conv2d sig"
    from lazytensor.backends.cache import KernelCache
    cache.cache = KernelCache(cache.stats, tmp_path / "elsewhere")
    assert tuned.chosen("conv2d", "sig", cache) is None
    assert lt.tuning.load(log, "cpu") == 1
    assert tuned.chosen("conv2d", "sig", cache) == "winograd"


def test_a_record_whose_algorithm_is_not_a_name_is_skipped(cache):
    record = {"key": tuned.choice_key("conv2d", "sig", cache), "kernel": "conv2d sig", "device": "cpu",
              "schedule": [], "algorithm": 3, "seconds": 1e-3, "heuristic_seconds": 2e-3, "trials": 2}
    record["check"] = tuned._check(record)
    with pytest.warns(UserWarning, match="algorithm is not a name"):
        tuned.store(cache).add(record)
    assert tuned.chosen("conv2d", "sig", cache) is None


def test_no_measurement_while_lt_jit_captures(cache, monkeypatch):
    """Tuning on (LT_TUNE=1) and no choice remembered: a capture does not stop to run stand-ins
    (it takes the default, the direct kernel), and its replays give torch's values."""
    monkeypatch.setenv("LT_TUNE", "1")
    monkeypatch.setenv("LT_TUNE_TRIALS", "1")
    measured = []
    monkeypatch.setattr(tuning, "_run", lambda *a: measured.append(a))
    x, w, b, padding = _conv_data(BIG)
    lx, lw, lb = (lt.asarray(v) for v in (x, w, b))
    step = lt.jit(lambda x, w, b: lt.nn.functional.conv2d(x, w, b, padding=1))
    want = torch.nn.functional.conv2d(*map(torch.from_numpy, (x, w, b)), padding=1).numpy()
    for _ in range(3):
        np.testing.assert_allclose(step(lx, lw, lb).numpy(), want, rtol=1e-5, atol=1e-4)
    assert not measured


def test_a_convolution_that_records_a_gradient_stays_direct(cache):
    """Winograd's is chosen by a forward measurement: a call that records a gradient (a weight
    that requires one, grad mode on) runs the direct kernel; under lt.no_grad the remembered
    choice applies. Gradients as torch's either way."""
    x, w, b, padding = _conv_data(BIG)
    lx, lb = lt.asarray(x), lt.asarray(b)
    lw = lt.nn.Parameter(lt.asarray(w))
    conv = lambda: lt.nn.functional.conv2d(lx, lw, lb, padding=1)   # noqa: E731
    tuned.remember_choice("conv2d", "4x16x32x32 * 32x16x3x3 padding 1,1 bias float32", cache, "winograd", 1e-3, 2e-3, 2)
    with lt.no_grad():
        winograd_launches = _launches(conv)
    assert _launches(conv) < winograd_launches
    out = conv()
    out.sum().backward()
    tw = torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(torch.from_numpy(x), tw, torch.from_numpy(b), padding=1).sum().backward()
    np.testing.assert_allclose(lw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)
