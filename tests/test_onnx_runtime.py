"""bertkit/core/onnx_runtime.py: an exported bundle runs without torch, in every command that reads it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


ROOT = Path(__file__).resolve().parent.parent


ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


# bertkit's CLI in a fresh process, then what it imported: torch or a transformers modelling module
MODULES = (
    "import sys\nfrom bertkit.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as stop:\n    assert stop.code in (0, None), stop.code\n"
    "bad = [m for m in sys.modules if m.split('.')[0] == 'torch' or '.modeling_' in m]\n"
    "print('LOADED', bad[:5])\n"
)


def _loaded(*args) -> str:
    done = subprocess.run(
        [sys.executable, "-c", MODULES, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def classify_onnx(classify_bundle, tmp_path_factory) -> Path:
    from bertkit.exporting.onnx import export_bundle

    target = tmp_path_factory.mktemp("edges") / "classify-onnx"
    export_bundle(str(classify_bundle), output=str(target))
    return target


@pytest.mark.slow
def test_evaluate_on_an_onnx_bundle_imports_no_torch(classify_onnx, easy_data, tmp_path):
    """`evaluate` loaded the `evaluate` library, whose import reaches transformers.pipelines and
    with it torch and the modelling code."""
    out = _loaded("evaluate", "-m", classify_onnx, "-d", easy_data["test"], "-o", tmp_path / "ev")
    assert "LOADED []" in out, out
    assert json.loads((tmp_path / "ev" / "metrics.json").read_text())["accuracy"] >= 0
