"""bench/gpu_speed.py, the GPU side-by-side of issue 32: its table from a run's results, and (slow)
the whole run end to end on the CPU with a tiny model, as the GPU session will run it."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT


def _bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    sys.modules.pop("gpu_speed", None)
    return importlib.import_module("gpu_speed")


def test_the_table_gives_each_tool_its_ratio_and_goal(monkeypatch):
    bench = _bench(monkeypatch)
    steps = {
        "train base bertkit": {"train_samples_per_second": 960.0},
        "train base plain": {"train_samples_per_second": 640.0},
        "train base bare": {"train_samples_per_second": 880.0},
        "predict base bertkit": {"wall": 20.0},
        "predict base pipeline": {"wall": 50.0, "texts_per_second": 2000.0},
        "predict base bertkit in process": {"texts_per_second": 6000.0, "precision": "bfloat16",
                                            "labels_equal_fp32": 0.998, "max_score_difference": 0.004},
        "predict base bare": {"texts_per_second": 6000.0},
        "embed minilm bertkit": {"wall": 10.0},
        "embed minilm sentence-transformers": {"wall": 20.0, "texts_per_second": 5400.0, "min_cosine_bertkit": 0.9999},
        "embed minilm bertkit in process": {"texts_per_second": 9000.0, "min_cosine_fp32": 0.99991,
                                            "precision": "bfloat16"},
        "train minilm bertkit": {"wall": 30.0, "exit": 1},  # failed: no rate, the row stays empty
    }  # fmt: skip
    counts = {"bertkit": {"reads_per_step": 0.0}, "plain": {"reads_per_step": 2.0}}
    shown = bench.summary(steps, "base", "minilm", 100_000, counts).splitlines()
    row = {line.split("  ")[0]: line for line in shown}
    assert "1.50x" in row["train base, samples/s"] and ">= 1.5x plain" in row["train base, samples/s"]
    assert "2.50x" in row["predict base, whole process s (100,000)"]
    assert ">= 0.8x bare (1.00x)" in row["predict base, in process texts/s"]
    agree = row["predict base, labels = fp32's (bfloat16)"]
    assert "0.998000" in agree and "max score diff 0.004" in agree
    assert "2.00x" in row["embed minilm, whole process s (100,000)"]
    assert "0.999910" in row["embed minilm, min cosine with fp32 (bfloat16)"]
    assert "with encode's: 0.999900" in row["embed minilm, min cosine with fp32 (bfloat16)"]
    assert row["train minilm, samples/s"].split()[3:4] == [">="]  # no numbers, the goal still shown
    assert "2.000" in row["train base, host reads of GPU values per step"]


def test_the_gpu_command_is_written_at_the_top(monkeypatch):
    bench = _bench(monkeypatch)
    for needed in ("python bench/gpu_speed.py pack", '[".gpu"]', "--target /tmp/site .gpu/whl/*.whl",
                   "python3 bench/gpu_speed.py run --pack .gpu --out $OUT"):  # fmt: skip
        assert needed in bench.__doc__
    assert {"datasets", "evaluate", "pydantic"} <= set(bench.WHEELS)


@pytest.mark.slow
@pytest.mark.bench_run  # 13 processes, 70 s: make test-bench (CI runs it), not make test
def test_the_whole_run_on_a_cpu_with_a_tiny_model(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_speed.py"), "run", "--tiny", "--train", "64", "--texts", "300",
         "--out", str(out), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=1500, cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "gpu_speed.json").read_text())
    steps = results["steps"]
    for name, step in steps.items():
        if "sentence-transformers" in name and step.get("exit"):
            continue  # not installed here
        assert step.get("exit") == 0, (name, step)
    assert steps["train tiny bertkit"]["train_samples_per_second"] > 0
    assert steps["predict tiny bertkit in process"]["labels_equal_fp32"] == 1.0  # fp32 on a CPU: the same run
    assert steps["embed tiny bertkit in process"]["min_cosine_fp32"] > 0.9999
    for tool in ("bertkit", "plain"):
        assert "Self CPU" in (out / f"profile_{tool}.txt").read_text()
        assert "reads_per_step" in results["profile"][tool]
    assert "train tiny, samples/s" in (out / "gpu_speed.txt").read_text()
