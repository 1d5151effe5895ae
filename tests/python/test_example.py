"""The repository's training example runs on Kiln, and compiled it gives the eager losses with
one compile (its comparison with PyTorch is in test_against_torch.py)."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

import kiln

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "train_mlp.py"


def _load():
    spec = importlib.util.spec_from_file_location("train_mlp_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compiled_training_equals_eager_with_one_compile():
    ex = _load()
    eager, _ = ex.train(kiln)
    compiled, step = ex.train(kiln, compile=True)
    assert eager[-1] < eager[0]  # it learns
    for i, (a, b) in enumerate(zip(eager, compiled)):
        assert b == pytest.approx(a, rel=1e-5), f"step {i}"
    assert step.stats()["compiles"] == 1


def test_example_runs_as_a_script():
    out = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "12"], capture_output=True,
                         text=True, check=True, timeout=300)
    assert "step  11  loss" in out.stdout
