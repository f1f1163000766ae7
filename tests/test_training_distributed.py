"""Two-process CPU training (gloo) through torchrun and accelerate: the data is shared between the
processes, and only the main one writes the bundle."""

import json
import os
import subprocess

import pytest
from helpers.launch import BIN, free_port

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "launcher",
    [
        [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", "PORT"],
        [str(BIN / "accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--main_process_port", "PORT"],
    ],
    ids=["torchrun", "accelerate"],
)
def test_two_process_training(launcher, tiny_model, easy_data, tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(
        f"model: {{name: {tiny_model}, max_length: 32}}\n"
        f"data: {{train: {easy_data['train']}, validation_split: 0.25}}\n"
        "train: {epochs: 6, batch_size: 9, learning_rate: 3.0e-3, warmup_ratio: 0.0}\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    # a free port for each run, so that two test runs at once do not clash
    launcher = [str(free_port()) if part == "PORT" else part for part in launcher]
    result = subprocess.run(
        [*launcher, "-m", "bertkit", "train", "classify", "-c", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("model saved to") + result.stderr.count("model saved to") == 1
    info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
    # 180 training examples, 2 processes x 9 per step: 10 steps an epoch (one process alone: 20)
    assert info["training"]["train_steps"] == 60
    assert info["metrics"]["validation"]["accuracy"] >= 0.8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "run.yaml"]
