"""Edges of `bertkit attention`, `explain` and `compare` found by adversarial testing: each test
failed before its fix."""

from __future__ import annotations

import json
import time


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
