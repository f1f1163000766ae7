"""`bertkit tune` for real on a tiny classifier: a study writes every output, prunes a lagging
trial, its best.yaml reproduces the best trial's score through `bertkit train`, a second run
continues the study, and two processes share one SQLite study."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SPACE = """tune:
  space:
    train.learning_rate: {low: 1.0e-7, high: 1.0e-2, log: true}
    train.batch_size: {choices: [16, 32]}
    train.warmup_ratio: {low: 0.0, high: 0.2}
  random_trials: 2
  prune_after_trials: 1
  prune_after_evaluations: 3
"""


def write_config(folder: Path, tiny_model, easy_data, text: str = SPACE, epochs: int = 1) -> Path:
    path = folder / "run.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\n  test: {easy_data['test']}\n"
        f"train:\n  epochs: {epochs}\n  eval_strategy: steps\n  eval_steps: 10\n  logging_steps: 5\n"
        f"{text}output_dir: {folder / 'study'}\n"
    )
    return path


def study_trials(url: str, name: str) -> list:
    import optuna

    return optuna.load_study(study_name=name, storage=url).trials


@pytest.mark.slow
def test_a_study_prunes_reports_and_its_best_yaml_reproduces_the_best_trial(cli, tmp_path, tiny_model, easy_data):
    import optuna

    config = write_config(tmp_path, tiny_model, easy_data, epochs=4)  # 4 x 14 steps: the good rate learns
    out = tmp_path / "study"
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    # the trials are fixed: a good learning rate; one too small to learn anything, which the pruner
    # must stop at its fourth evaluation (the first it may be stopped at); a small one with larger
    # batches, too few steps (28) to reach a fourth evaluation, so it completes, scoring less
    planned = optuna.create_study(study_name="run", storage=url, direction="maximize")
    planned.enqueue_trial({"train.learning_rate": 3e-3, "train.batch_size": 16, "train.warmup_ratio": 0.0})
    planned.enqueue_trial({"train.learning_rate": 1e-7, "train.batch_size": 16, "train.warmup_ratio": 0.0})
    planned.enqueue_trial({"train.learning_rate": 1e-5, "train.batch_size": 32, "train.warmup_ratio": 0.2})
    code, stdout, err = cli("tune", "-c", config, "--trials", "3", "--storage", url)
    assert code == 0, err
    trials = study_trials(url, "run")
    states = [t.state.name for t in trials]
    assert states == ["COMPLETE", "PRUNED", "COMPLETE"]
    assert trials[0].value > trials[2].value
    assert trials[1].user_attrs["pruned_at_evaluation"] == 4
    assert "trial 1 pruned at evaluation 4" in err.replace("\n", " ")
    for name in ("trials.csv", "trials.json", "history.png", "importances.png", "best.yaml", ".bertkit-output.json"):
        assert (out / name).is_file(), name
    listed = " ".join(err.split())  # the closing line names every report written, importances.png too
    assert "(best.yaml, trials.csv, trials.json, history.png, importances.png)" in listed, listed
    report = json.loads((out / "trials.json").read_text())
    rows = list(csv.DictReader((out / "trials.csv").open()))
    assert [r["number"] for r in rows] == [str(t["number"]) for t in report["trials"]]
    complete = [t for t in report["trials"] if t["state"] == "complete"]
    assert [t["value"] for t in complete] == sorted((t["value"] for t in complete), reverse=True)  # best first
    assert report["trials"][-1]["state"] == "pruned" and rows[-1]["pruned_at_evaluation"] == "4"
    assert report["metric"] == "f1_macro" and report["best"]["value"] == complete[0]["value"]
    assert "study run" in stdout and "f1_macro" in stdout
    assert not list(out.glob(".trial.tmp-*"))  # no trial bundle kept

    # best.yaml trains as it is, into study/best, and gives the best trial's score exactly
    code, _, err = cli("train", "classify", "-c", out / "best.yaml")
    assert code == 0, err
    scores = json.loads((out / "best" / "metrics.json").read_text())
    assert scores["validation"]["f1_macro"] == report["best"]["value"]
    assert "test" in scores  # the test data, kept out of the trials, is back

    # running again continues the study: one more trial, the reports rewritten, --retrain-best;
    # the trial a killed process left (kill -9: its pid no longer runs) is swept
    killed = out / ".trial.tmp-999999999-abcd"
    (killed / "model").mkdir(parents=True)
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--storage", url, "--retrain-best")
    assert code == 0, err
    assert not killed.exists() and not list(out.glob(".trial.tmp-*"))
    assert len(study_trials(url, "run")) == 4
    assert len(json.loads((out / "trials.json").read_text())["trials"]) == 4
    retrained = json.loads((out / "best" / "metrics.json").read_text())
    best = json.loads((out / "trials.json").read_text())["best"]
    assert retrained["validation"]["f1_macro"] == best["value"]


@pytest.mark.slow
def test_the_default_storage_resumes_and_overwrite_starts_afresh(cli, tmp_path, tiny_model, easy_data):
    space = "tune:\n  space:\n    train.learning_rate: {low: 1.0e-3, high: 1.0e-2, log: true}\n"
    config = write_config(tmp_path, tiny_model, easy_data, space)
    out = tmp_path / "study"
    for expected in (1, 2):
        code, _, err = cli("tune", "-c", config, "--trials", "1")
        assert code == 0, err
        assert len(study_trials(f"sqlite:///{out / 'study.db'}", "run")) == expected
    assert "continuing after 1 trials" in err
    assert "importances need 2 or more complete trials" not in err
    code, _, err = cli("tune", "-c", config, "--trials", "1", "--overwrite")
    assert code == 0, err
    assert len(study_trials(f"sqlite:///{out / 'study.db'}", "run")) == 1
    assert "importances need 2 or more complete trials (1 so far)" in err.replace("\n", " ")
    assert not (out / "importances.png").exists()


@pytest.mark.slow
def test_two_processes_share_one_sqlite_study(tmp_path, tiny_model, easy_data):
    config = write_config(tmp_path, tiny_model, easy_data)
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "bertkit", "tune", "-c", str(config), "--trials", "2", "--storage", url,
               "--study", "shared"]  # fmt: skip
    running = [
        subprocess.Popen([*command, "-o", str(tmp_path / f"worker{i}")], env=env, stderr=subprocess.PIPE, text=True)
        for i in range(2)
    ]
    for process in running:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    trials = study_trials(url, "shared")
    assert len(trials) == 4 and sorted(t.number for t in trials) == [0, 1, 2, 3]
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)
    assert len({t.params["train.learning_rate"] for t in trials}) == 4  # seeded per trial: no repeats
    # each process reports the whole study as it stands when it ends (every process's trials): the
    # last to end sees all 4; the first may end before the other has started or finished its trials
    reported = [len(json.loads((tmp_path / f"worker{i}" / "trials.json").read_text())["trials"]) for i in range(2)]
    assert max(reported) == 4 and min(reported) >= 2, reported
