"""Training fails early or resumes well: settings checked before any step, --resume continues from
the last complete checkpoint, and an unfinished run never traps the user between --resume and
--overwrite."""

import json
import shutil

import pytest
from helpers.checks import assert_refused, write_config

pytestmark = pytest.mark.slow


def config(tmp_path, model, train, extra=""):
    steps = "train:\n  epochs: 3\n  batch_size: 32\n  learning_rate: 3.0e-3\n  save_total_limit: 3\n"
    return write_config(tmp_path, model, train, extra=steps + extra)


def test_a_metric_typo_is_caught_before_training(cli, tmp_path, tiny_model, easy_data):
    path = config(tmp_path, tiny_model, easy_data["train"])
    code, _, err = cli("train", "classify", "-c", path, "--set", "train.metric_for_best_model=f1_marco")
    assert_refused(code, err, "'f1_marco' is not a metric of this task", "did you mean 'f1_macro'", "accuracy")
    assert not (tmp_path / "out.partial").exists()
    path.write_text(
        path.read_text().replace(
            "  save_total_limit: 3\n", "  save_total_limit: 3\n  metric_for_best_model: f1_marco\n"
        )
    )
    code, _, err = cli("train", "classify", "-c", path)
    assert_refused(code, err, "'f1_marco' is not a metric of this task", "did you mean 'f1_macro'", "accuracy")
    assert not (tmp_path / "out.partial").exists()
    # the next run is not told to --resume a run that never started
    code, _, err = cli("train", "classify", "-c", path, "--set", "train.metric_for_best_model=eval_accuracy")
    assert code == 0, err


def test_resume_with_an_existing_output_fails_at_once(cli, tmp_path, tiny_model, easy_data):
    path = config(tmp_path, tiny_model, easy_data["train"])
    (tmp_path / "out").mkdir()
    from bertkit.core.checkpoints import RUN_MARKER

    (tmp_path / "out.partial" / "checkpoint-7").mkdir(parents=True)
    (tmp_path / "out.partial" / RUN_MARKER).write_text("bertkit run\n")
    code, _, err = cli("train", "classify", "-c", path, "--resume")
    assert_refused(code, err, "already exists", "--overwrite")
    shutil.rmtree(tmp_path / "out")
    code, _, err = cli("train", "classify", "-c", path, "--resume")
    assert_refused(code, err, "no complete checkpoint", "1 incomplete")


def test_resume_skips_a_half_written_checkpoint(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    from bertkit.training import run

    path = config(tmp_path, tiny_model, easy_data["train"])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "write_bundle", interrupted)  # the run looks it up there
    code, _, _ = cli("train", "classify", "-c", path)
    monkeypatch.undo()
    work = tmp_path / "out.partial"
    steps = sorted(int(p.name.split("-")[1]) for p in work.glob("checkpoint-*"))
    assert len(steps) == 3, steps
    newest = work / f"checkpoint-{steps[-1]}"
    weights = newest / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # a full disk stopped this save
    (newest / "trainer_state.json").unlink()
    code, _, err = cli("train", "classify", "-c", path, "--resume")
    assert code == 0, err
    assert (
        f"resuming from checkpoint-{steps[-2]}" in err and f"checkpoint-{steps[-1]} was not completely written" in err
    )
    info = json.loads((tmp_path / "out" / "bertkit.json").read_text())
    assert info["training"]["train_steps"] == steps[-1] and not work.exists()


def test_leftover_work_without_a_checkpoint_does_not_block(cli, tmp_path, tiny_model, easy_data):
    path = config(tmp_path, tiny_model, easy_data["train"])
    path.write_text(path.read_text().replace("epochs: 3", "epochs: 1"))
    (tmp_path / "out.partial").mkdir()
    code, _, err = cli("train", "classify", "-c", tmp_path / "run.yaml")
    assert code == 0, err
    (tmp_path / "elsewhere.partial").mkdir()
    (tmp_path / "elsewhere.partial" / "mine.txt").write_text("not bertkit's")
    code, _, err = cli("train", "classify", "-c", tmp_path / "run.yaml", "-o", tmp_path / "elsewhere", "--overwrite")
    assert_refused(code, err, "holds files bertkit did not write")
    assert (tmp_path / "elsewhere.partial" / "mine.txt").exists()


def test_declared_metrics_are_the_ones_reported():
    """metric_for_best_model is checked against each task's declared names: they must be real."""
    import numpy as np

    from bertkit.core import metrics
    from bertkit.tasks import get_task

    classify = get_task("classify")
    for problem, module, args in (
        ("single_label", "classification", {"predictions": [0, 1], "references": [0, 1], "label_names": ["a", "b"]}),
        ("multi_label", "multilabel", {"predictions": [[0, 1]], "references": [[0, 1]], "label_names": ["a", "b"]}),
        ("regression", "regression", {"predictions": [0.1, 0.5], "references": [0.2, 0.4]}),
    ):
        reported = metrics.load(module).compute(**args)
        assert set(classify.training.metric_names({"problem_type": problem})) <= set(reported), problem
    ner = metrics.load("ner").compute(predictions=[["B-X", "O"]], references=[["B-X", "O"]])
    assert set(get_task("ner").training.metric_names({})) <= set(ner)
    mlm = metrics.load("masked_lm").compute(nll=np.array([1.0]), correct=np.array([1]))
    assert set(get_task("mlm-adapt").training.metric_names({})) <= set(mlm)
    squad = metrics.load("squad").compute(
        predictions=[
            {"id": "a", "prediction_text": "x", "no_answer_probability": 0.0, "best_answer": "x"},
            {"id": "b", "prediction_text": "", "no_answer_probability": 1.0, "best_answer": "y"},
        ],
        references=[
            {"id": "a", "answers": {"text": ["x"], "answer_start": [0]}},
            {"id": "b", "answers": {"text": [], "answer_start": []}},
        ],
    )
    assert set(get_task("qa").training.metric_names({"version_2": True})) <= set(squad)
    retrieval = metrics.load("retrieval").compute(ranks=[1, 2])
    assert set(get_task("embed").training.metric_names({"scored": False})) <= set(retrieval)


def test_unfinished_work_with_user_files_is_never_cleared(cli, tmp_path, tiny_model, easy_data):
    """The run marker alone does not make a folder bertkit's: a file or folder the user put in
    `OUT.partial` (even one named like a checkpoint) stops the run, with or without --overwrite."""
    from bertkit.core.checkpoints import RUN_MARKER

    path = config(tmp_path, tiny_model, easy_data["train"])
    work = tmp_path / "out.partial"
    (work / "checkpoint-backup").mkdir(parents=True)
    (work / "checkpoint-backup" / "weights.bin").write_text("mine")
    (work / RUN_MARKER).write_text("bertkit run\n")
    for extra in ((), ("--overwrite",)):
        code, _, err = cli("train", "classify", "-c", path, *extra)
        assert_refused(code, err, "holds files bertkit did not write", "checkpoint-backup")
        assert (work / "checkpoint-backup" / "weights.bin").read_text() == "mine"
