"""Edges of `bertkit attention`, `explain` and `compare` found by adversarial testing: each test
failed before its fix."""

from __future__ import annotations

import json
import time

from checks import assert_refused


def test_compare_times_every_model_after_a_warm_up(cli, head_models, ner_data, tmp_path, monkeypatch):
    """A one-off cost (imports, the file's first read) falls on whichever model is scored first;
    the speeds of two copies of one model must not differ by it."""
    import shutil

    from bertkit.tasks import get_task

    task = type(get_task("ner"))
    real = task.evaluate_examples
    first = []

    def slow_once(self, *args, **kwargs):
        if not first:
            first.append(True)
            time.sleep(1.0)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(task, "evaluate_examples", slow_once)
    copy = shutil.copytree(head_models["ner"], tmp_path / "copy")
    out = tmp_path / "report"
    code, stdout, err = cli("compare", head_models["ner"], copy, "-d", ner_data["test"], "-o", out,
                            "--bootstrap", "100")  # fmt: skip
    assert code == 0, stdout + err
    speeds = [m["texts_per_second"] for m in json.loads((out / "report.json").read_text())["models"]]
    assert max(speeds) / min(speeds) < 3, speeds


def _base_config(tmp_path, easy_data, task="classify"):
    config = tmp_path / "base.yaml"
    config.write_text(
        f"task: {task}\nmodel:\n  name: bert-base-uncased\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\n  test: {easy_data['test']}\n"
        f"train:\n  epochs: 1\n  max_steps: 2\noutput_dir: {tmp_path / 'unused'}\n"
    )
    return config


def test_compare_config_checks_every_model_before_training_any(cli, tiny_model, easy_data, tmp_path):
    """A typo in the second --model is found before the first model trains (this test is not
    marked slow: training anything would fail it)."""
    config = _base_config(tmp_path, easy_data)
    out = tmp_path / "trained"
    code, _, err = cli("compare", "--config", config, "--model", tiny_model, "--model", tmp_path / "typo", "-o", out)
    assert_refused(code, err, "typo")
    assert not (out / tiny_model.name).exists()
    import shutil

    other = shutil.copytree(tiny_model, tmp_path / "other")
    config = _base_config(tmp_path, easy_data, task="mlm-adapt")
    code, _, err = cli("compare", "--config", config, "--model", tiny_model, "--model", other, "-o", out,
                       "--overwrite")  # fmt: skip
    assert_refused(code, err, "cannot score mlm-adapt models", "nothing was trained")
