"""The examples run as written (the README promises them)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import example_module

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("script", ["quickstart.py", "array_api_demo.py", "tensor_expressions.py"])
def test_example_runs(script):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                          timeout=300, env={**os.environ})
    assert done.returncode == 0, done.stdout + done.stderr
    if script == "array_api_demo.py":
        assert "labels identical: True; centers agree: True; inertia agrees: True" in done.stdout
    if script == "tensor_expressions.py":
        assert "all agree with numpy / the built-in ops" in done.stdout


def test_train_digits_reaches_97_percent():
    """examples/train_digits.py trains its CNN to >= 97% test accuracy (it takes ~15 s here)."""
    pytest.importorskip("sklearn", reason="the `examples` extra (scikit-learn) is not installed")
    pytest.importorskip("tqdm", reason="the `examples` extra (tqdm) is not installed")
    assert example_module("train_digits").train(quiet=True) >= 0.97


def test_train_gpt_learns_and_writes_a_sample():
    """examples/train_gpt.py, briefly: a few jitted training steps lower the validation loss
    well below a uniform guess's (ln 96, 4.6) and the sample has the length asked for."""
    loss, sample = example_module("train_gpt").train(steps=20, eval_every=1000, sample_length=40, quiet=True)
    assert loss < 3.6 and len(sample) == len("def ") + 40


def _readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]


@pytest.mark.parametrize("number", range(len(_readme_blocks())))
def test_readme_python_blocks_run(number):
    done = subprocess.run([sys.executable, "-c", _readme_blocks()[number]], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ})
    assert done.returncode == 0, done.stdout + done.stderr


def test_train_digits_cold_start_with_a_warm_disk_cache_compiles_nothing(tmp_path):
    """A fresh process running examples/train_digits.py on a cache another process filled
    compiles nothing: every kernel of the model, the loss, backward and the optimizer, captured
    by lt.jit or run eagerly, comes from disk (the key is stable across processes)."""
    pytest.importorskip("sklearn", reason="the `examples` extra (scikit-learn) is not installed")
    pytest.importorskip("tqdm", reason="the `examples` extra (tqdm) is not installed")
    env = {**os.environ, "LT_CACHE_DIR": str(tmp_path)}
    env.pop("LT_DEBUG", None)

    def compiled() -> int:
        done = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--epochs", "1"],
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        line = next(line for line in done.stdout.splitlines() if "kernels compiled" in line)
        return int(line.rsplit("(", 1)[1].split()[0])

    assert compiled() > 10
    assert compiled() == 0
