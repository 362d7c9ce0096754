"""Transposing copies (x.T, permutes) run in blocks on the cpu: the heuristic schedule, and its
values against numpy for odd shapes, reversed and stepped views, every dtype and fused math."""
import numpy as np
import pytest

import lazytensor as lt
from conftest import random_array
from lazytensor import pipeline
from lazytensor.devices import runtime
from lazytensor.scheduler.schedule import Reorder, Split, Vectorize


def _schedule(out: lt.Tensor):
    target = runtime("cpu").device.target
    (spec,) = pipeline.kernels([out.node], target).kernels
    return pipeline.loops(spec, target)[1]


def test_a_transposing_copy_runs_in_blocks():
    """Blocks along the source's contiguous axis (its lines stay in cache until used up) by one
    vector along the output's; a copy that reads along its rows keeps the plain schedule."""
    x = lt.asarray(np.ones((512, 2048), np.float32))
    blocked = _schedule(x.T + 1.0)
    assert any(isinstance(p, Split) and p.axis == "i0" for p in blocked), blocked
    assert any(isinstance(p, Vectorize) and p.axis == "i1_i" for p in blocked), blocked
    assert not any(isinstance(p, Reorder) for p in _schedule(x + 1.0))
    assert not any(isinstance(p, Reorder) for p in _schedule(lt.asarray(np.ones((3000, 7), np.float32)).T + 1.0))


VIEWS = {
    "T": lambda v: v.T,
    "T-odd": lambda v: v[:37].T,
    "reversed": lambda v: v[::-1, ::-1].T,
    "stepped": lambda v: v[::2, 1::3].T,
    "permute3": lambda v: v.reshape(8, 20, 150).permute(2, 0, 1),
    "permute3-last": lambda v: v.reshape(8, 20, 150).permute(0, 2, 1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int64", "bool"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_transposes_match_numpy(view, dtype):
    rng = np.random.default_rng(11)
    a = random_array(rng, (160, 150), np.dtype(dtype))
    got = VIEWS[view](lt.asarray(a)).contiguous().numpy()
    want = VIEWS[view](a) if view not in ("permute3", "permute3-last") else \
        a.reshape(8, 20, 150).transpose((2, 0, 1) if view == "permute3" else (0, 2, 1))
    np.testing.assert_array_equal(got, want)


def test_transpose_fused_with_math():
    """The blocked copy with other operands read along its rows and a broadcast, in one kernel."""
    rng = np.random.default_rng(12)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((300, 200), (200, 300), (300,)))
    x, y, z = lt.asarray(a), lt.asarray(b), lt.asarray(c)
    np.testing.assert_allclose((x.T * 2 + y - z).numpy(), a.T * 2 + b - c, rtol=1e-6)
