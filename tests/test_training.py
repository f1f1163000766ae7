"""bertkit/training/: a run fails early or resumes well. Settings are checked before any step,
--resume continues from the last complete checkpoint (a full disk or a cut-short checkpoint
leaves a run that can go on), and an unfinished run never traps the user between --resume and
--overwrite."""

import json
import shutil
from pathlib import Path

import pytest
from helpers.checks import assert_refused, write_config

from bertkit.core.errors import BertkitError

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


def _checkpoint(folder: Path, state) -> Path:
    """A checkpoint folder with whole weights and the given trainer_state.json content."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({"w": torch.zeros(2)}, str(folder / "model.safetensors"))
    (folder / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


def test_torch_save_on_a_full_disk_is_a_write_error(tmp_path, monkeypatch):
    from bertkit.core.outputs import files

    torch_says = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 487744 vs 487632")
    monkeypatch.setattr(files, "_nearly_full", lambda path: True)
    failed = files.writing_failed(torch_says, tmp_path / "run.partial", "Kept.")
    assert (
        failed is not None and str(failed) == f"cannot write {tmp_path / 'run.partial'}: No space left on device. Kept."
    )
    monkeypatch.setattr(files, "_nearly_full", lambda path: False)
    assert "the write failed" in str(files.writing_failed(torch_says, tmp_path))
    assert files.writing_failed(RuntimeError("some other bug"), tmp_path) is None


def test_a_trainer_state_without_a_step_is_not_a_complete_checkpoint(tmp_path):
    from bertkit.core.checkpoints import is_complete, last_complete

    _checkpoint(tmp_path / "checkpoint-2", {"global_step": 2, "log_history": []})
    assert is_complete(tmp_path / "checkpoint-2")
    for step, state in ((4, {}), (6, [1]), (8, {"global_step": None})):
        _checkpoint(tmp_path / f"checkpoint-{step}", state)
        assert not is_complete(tmp_path / f"checkpoint-{step}")
    found, broken = last_complete(tmp_path)
    assert found.name == "checkpoint-2" and len(broken) == 3


def test_resume_refuses_files_of_yours_in_the_work_directory(tmp_path):
    """A finished run clears OUTPUT.partial: with --resume, a notes file there was deleted."""
    from bertkit.core.checkpoints import RUN_MARKER
    from bertkit.training.run_dir import check_dirs

    work = tmp_path / "model.partial"
    _checkpoint(work / "checkpoint-3", {"global_step": 3})
    (work / RUN_MARKER).write_text("bertkit run\n", encoding="utf-8")
    (work / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(BertkitError, match=r"holds files bertkit did not write \(notes.txt\)"):
        check_dirs(tmp_path / "model", work, overwrite=False, resume=True, inputs=[])
    assert (work / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    (work / "notes.txt").unlink()
    assert check_dirs(tmp_path / "model", work, overwrite=False, resume=True, inputs=[]).name == "checkpoint-3"


def test_a_run_whose_only_checkpoint_was_cut_short_leaves_no_partial(tmp_path):
    """A full disk during the first checkpoint: the message says nothing was kept, and so it is."""
    from bertkit.training.run_dir import discard_if_empty

    work = tmp_path / "model.partial"
    (work / "checkpoint-1").mkdir(parents=True)
    (work / "checkpoint-1" / "config.json").write_text("{}", encoding="utf-8")
    discard_if_empty(work)
    assert not work.exists()
    _checkpoint(work / "checkpoint-2", {"global_step": 2})
    discard_if_empty(work)
    assert work.is_dir()
