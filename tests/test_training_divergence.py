"""A model that diverged is never published: a NaN or infinite loss (training or validation) or
weight stops the run with exit code 2 and the step, for every task; a model whose weights are not
finite is refused when loaded; and no output file holds NaN or Infinity (JSON has neither)."""

import json
import math
import shutil

import pytest
from helpers.checks import assert_refused, write_config


def diverging(tmp_path, model, train, task="classify", extra=""):
    steps = "train:\n  epochs: 1\n  batch_size: 16\n  learning_rate: 1000\n  warmup_ratio: 0.0\n"
    return write_config(tmp_path, model, train, extra=steps + extra, task=task)


def assert_nothing_published(tmp_path):
    assert not (tmp_path / "out").exists()
    partial = tmp_path / "out.partial"
    if partial.exists():  # only complete checkpoints from before the divergence, each with finite weights
        from safetensors.numpy import load_file

        for weights in partial.glob("checkpoint-*/model.safetensors"):
            assert all(math.isfinite(float(abs(v).max())) for v in load_file(weights).values())


@pytest.mark.slow
def test_a_diverging_classifier_stops_with_the_step(cli, tmp_path, tiny_model, easy_data):
    code, _, err = cli("train", "classify", "-c", diverging(tmp_path, tiny_model, easy_data["train"]))
    assert_refused(code, err, "training diverged at step", "the training loss is nan", "Nothing was published",
                   "train.learning_rate (it was 1000)")
    assert_nothing_published(tmp_path)
    assert not (tmp_path / "out.partial").exists()  # no complete checkpoint was left to resume


@pytest.mark.slow
def test_a_diverging_ner_model_stops_too(cli, tmp_path, tiny_model, ner_data):
    code, _, err = cli("train", "ner", "-c", diverging(tmp_path, tiny_model, ner_data["train"], task="ner"))
    assert_refused(code, err, "training diverged at step", "Nothing was published")
    assert_nothing_published(tmp_path)


@pytest.mark.slow
def test_a_diverging_distilled_student_stops_too(cli, tmp_path, classify_bundle, easy_data):
    config = tmp_path / "distill.yaml"
    config.write_text(
        f"task: distill\ndistill:\n  teacher: {classify_bundle}\n  student_layers: [1]\n"
        f"data:\n  train: {easy_data['train']}\n"
        "train:\n  epochs: 1\n  learning_rate: 1000\n  warmup_ratio: 0.0\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    code, _, err = cli("train", "distill", "-c", config)
    assert_refused(code, err, "training diverged at step", "Nothing was published")
    assert_nothing_published(tmp_path)


def poison(after_step: int | None = None, everything: bool = False):
    """A Trainer callback that makes weights infinite after an optimizer step: after the last one,
    one weight in a row of the word embeddings that no input uses (the loss stays finite, only the
    weights show it); after step `after_step`, with `everything`, all of them (the next loss is NaN)."""
    from transformers import TrainerCallback

    class Poison(TrainerCallback):
        def on_optimizer_step(self, args, state, control, model=None, **kwargs):
            import torch

            step = state.global_step + 1  # the step whose update this is
            with torch.no_grad():
                if everything and step == after_step:
                    for parameter in model.parameters():
                        parameter.fill_(float("inf"))
                elif not everything and step == state.max_steps:
                    model.get_input_embeddings().weight[-1, 0] = float("inf")

    return Poison()


@pytest.mark.slow
def test_weights_that_overflow_after_the_last_loss_are_caught(tmp_path, tiny_model, easy_data):
    from bertkit.config import load_config
    from bertkit.training import train
    from bertkit.training.divergence import TrainingDiverged

    path = write_config(tmp_path, tiny_model, easy_data["train"], extra="train:\n  epochs: 1\n")
    cfg = load_config(path)
    with pytest.raises(TrainingDiverged) as caught:
        train(cfg, callbacks=[poison()])
    message = str(caught.value)
    assert "hold NaN or infinite values" in message and "word_embeddings" in message
    assert caught.value.step > 0 and f"at step {caught.value.step}:" in message
    assert_nothing_published(tmp_path)


@pytest.mark.slow
def test_nan_that_only_the_validation_data_meets_is_caught(tmp_path, tiny_model, easy_data):
    """The validation texts hold words the vocabulary lacks ([UNK]), which training never meets;
    after the weights were checked for the epoch's checkpoint, [UNK]'s embedding turns NaN: only the
    validation loss can show it."""
    from transformers import TrainerCallback

    from bertkit.config import load_config
    from bertkit.training import train
    from bertkit.training.divergence import TrainingDiverged

    validation = tmp_path / "validation.csv"
    rows = "".join(f"qxqz{i} great film,positive\nqxqz{i} awful film,negative\n" for i in range(8))
    validation.write_text("text,label\n" + rows)

    class PoisonUnknown(TrainerCallback):
        def on_epoch_end(self, args, state, control, model=None, processing_class=None, **kwargs):
            import torch

            with torch.no_grad():
                model.get_input_embeddings().weight[processing_class.unk_token_id] = float("nan")

    path = write_config(tmp_path, tiny_model, easy_data["train"], extra="train:\n  epochs: 1\n")
    path.write_text(path.read_text().replace("data:\n", f"data:\n  validation: {validation}\n"))
    with pytest.raises(TrainingDiverged, match="the validation loss is nan") as caught:
        train(load_config(path), callbacks=[PoisonUnknown()])
    assert caught.value.step > 0
    assert_nothing_published(tmp_path)


@pytest.mark.slow
def test_a_resumed_run_that_diverges_keeps_its_healthy_checkpoints(cli, tmp_path, tiny_model, easy_data, monkeypatch):
    from bertkit.config import load_config
    from bertkit.training import run, train
    from bertkit.training.divergence import TrainingDiverged

    steps = "train:\n  epochs: 2\n  batch_size: 32\n  learning_rate: 3.0e-3\n  save_total_limit: 3\n"
    path = write_config(tmp_path, tiny_model, easy_data["train"], extra=steps)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "write_bundle", interrupted)
    cli("train", "classify", "-c", path)
    monkeypatch.undo()

    def checkpoints():
        return sorted((p.name for p in (tmp_path / "out.partial").glob("checkpoint-*")), key=lambda n: int(n[11:]))

    assert checkpoints() == ["checkpoint-7", "checkpoint-14"]
    shutil.rmtree(tmp_path / "out.partial" / "checkpoint-14")  # resume from the first epoch's checkpoint
    with pytest.raises(TrainingDiverged, match="at step 10: the training loss is nan") as caught:
        train(load_config(path), resume=True, callbacks=[poison(after_step=9, everything=True)])
    assert "checkpoints from before that step are kept in" in str(caught.value)
    assert "--overwrite to start afresh" in str(caught.value)
    assert_nothing_published(tmp_path)
    assert checkpoints() == ["checkpoint-7"]


# ---------------------------------------------------------------- the guard's own checks (no training)


def test_the_guard_reads_a_nan_validation_batch_as_divergence():
    import torch

    from bertkit.training.divergence import DivergenceGuard, TrainingDiverged

    class State:
        global_step = 12

    guard = DivergenceGuard()
    guard.observe_evaluation(torch.tensor(0.3), torch.tensor([1, 0]))
    guard.observe_evaluation(None)  # a prediction without labels has no loss
    guard.on_evaluate(None, State(), None, metrics={"eval_loss": 0.3})
    # one batch is enough, though the Trainer's mean of the others would be finite
    guard.observe_evaluation(torch.tensor(float("inf")), torch.tensor([1, 0]))
    guard.observe_evaluation(torch.tensor(0.3), torch.tensor([1, 0]))
    with pytest.raises(TrainingDiverged, match="at step 12: the validation loss is inf"):
        guard.on_evaluate(None, State(), None, metrics={"eval_loss": 0.3})
    guard.on_evaluate(None, State(), None, metrics={"eval_loss": 0.3})  # the next evaluation starts afresh
    guard.observe_evaluation(torch.tensor(float("nan")), torch.tensor([1, 0]))
    with pytest.raises(TrainingDiverged, match="at step 12: the test loss is nan"):
        guard.check_evaluation(12, "the test loss")


def test_the_guard_reads_an_infinite_gradient_norm_as_divergence_except_under_fp16():
    """Every step's norm, not only the logged ones: a run shorter than train.logging_steps was
    never checked."""
    import torch

    from bertkit.training.divergence import DivergenceGuard, TrainingDiverged

    class State:
        global_step, max_steps = 7, 100

    class Control:
        should_training_stop = should_log = should_evaluate = should_save = False

    guard = DivergenceGuard()
    guard.observe_grad_norm(torch.tensor(3.2), 7)
    guard.on_step_end(None, State(), Control())
    guard.observe_grad_norm(torch.tensor(float("inf")), 8)
    with pytest.raises(TrainingDiverged, match="at step 8: the gradient norm is inf, so clipping scaled"):
        guard.on_step_end(None, State(), Control())
    # fp16: the loss scaler skips a step whose gradients overflowed, and lowers its scale
    fp16 = DivergenceGuard("fp16")
    fp16.observe_grad_norm(torch.tensor(float("inf")), 8)
    fp16.on_step_end(None, State(), Control())
    # on a GPU the norm stays on the device until a boundary (a log, an evaluation, a save, the end)
    deferred = DivergenceGuard(deferred=True)
    deferred.observe_grad_norm(torch.tensor(float("nan")), 3)
    deferred.observe_grad_norm(torch.tensor(1.0), 4)
    with pytest.raises(TrainingDiverged, match="at step 3: the gradient norm is not finite"):
        deferred.check_deferred()


def test_a_batch_with_nothing_to_predict_is_not_divergence():
    import torch

    from bertkit.training.divergence import DivergenceGuard

    class State:
        global_step, max_steps = 3, 10

    class Control:
        should_save = should_training_stop = False

    guard = DivergenceGuard()
    nothing = torch.full((2, 5), -100)  # a masked-LM batch where no token was drawn: zero gradients
    guard.observe(torch.tensor(float("nan")), 3, nothing)
    guard.observe_evaluation(torch.tensor(float("nan")), nothing)
    guard.on_step_end(None, State(), Control())
    guard.on_evaluate(None, State(), None)
    guard.observe(torch.tensor(float("nan")), 3, torch.tensor([[1, -100]]))
    assert guard.pending[0] == 3 and math.isnan(guard.pending[1])


def nan_model(tmp_path, source):
    """A copy of `source` whose weights are all NaN, as a diverged run used to publish."""
    import torch
    from transformers import AutoModel

    folder = tmp_path / "diverged"
    shutil.copytree(source, folder)
    model = AutoModel.from_pretrained(folder) if not (folder / "bertkit.json").exists() else None
    if model is None:
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    model.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_a_model_with_nan_weights_is_refused_by_every_command(cli, tmp_path, classify_bundle, easy_data):
    broken = nan_model(tmp_path, classify_bundle)
    texts = tmp_path / "in.txt"
    texts.write_text("a great film\n")
    code, _, err = cli("predict", "--model", broken, "--input", texts, "--output", tmp_path / "p.jsonl")
    assert_refused(code, err, str(broken), "hold NaN or infinite values", "diverged")
    assert not (tmp_path / "p.jsonl").exists()
    code, _, err = cli("evaluate", "--model", broken, "--data", easy_data["test"], "--output-dir", tmp_path / "ev")
    assert_refused(code, err, "hold NaN or infinite values")
    assert not (tmp_path / "ev").exists()
    code, _, err = cli("compare", classify_bundle, broken, "--data", easy_data["test"], "-o", tmp_path / "cmp")
    assert_refused(code, err, str(broken), "hold NaN or infinite values")
    assert not (tmp_path / "cmp").exists()
    # nor is it a model to start from: its first step would look like divergence
    path = write_config(tmp_path, broken, easy_data["train"], extra="train:\n  epochs: 1\n")
    code, _, err = cli("train", "classify", "-c", path)
    assert_refused(code, err, str(broken), "hold NaN or infinite values")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- strict JSON


def test_json_writers_refuse_nan_and_infinity(tmp_path):
    import io

    from bertkit.core.outputs import RecordWriter, json_line, write_json
    from bertkit.core.outputs.strict_json import NotFinite

    with pytest.raises(NotFinite, match=r"'scores\.positive' is NaN"):
        json_line({"label": "positive", "scores": {"positive": float("nan")}})
    with pytest.raises(NotFinite, match=r"metrics\.json: 'validation\.loss' is Infinity"):
        write_json(tmp_path / "metrics.json", {"validation": {"loss": math.inf}})
    assert not (tmp_path / "metrics.json").exists()
    for fmt in ("jsonl", "csv", "tsv"):
        handle = io.StringIO()
        with pytest.raises(NotFinite, match=r"result 2 .*'score' is -Infinity"), RecordWriter(handle, fmt) as out:
            out.write({"text": "a", "score": 0.5})
            out.write({"text": "b", "score": -math.inf})
        assert "Infinity" not in handle.getvalue()


def test_undefined_metrics_are_null_and_say_so(tmp_path):
    from bertkit.core.outputs import write_json

    write_json(tmp_path / "m.json", {"validation": {"loss": math.nan, "accuracy": 0.5}, "curve": [1.0, math.inf]},
               undefined_as_null=True)
    text = (tmp_path / "m.json").read_text()
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" not in text.replace('"Infinity"', "")
    data = json.loads(text)
    assert data["validation"] == {"loss": None, "accuracy": 0.5, "undefined": {"loss": "NaN"}}
    assert data["curve"] == [1.0, None]


def test_vectors_that_are_not_finite_are_not_written(tmp_path):
    import numpy as np

    from bertkit.core.outputs.strict_json import NotFinite
    from bertkit.embeddings.embed import VectorWriter

    for fmt in ("npy", "jsonl", "parquet"):
        writer = VectorWriter(tmp_path / f"v.{fmt}", fmt, "text")
        with pytest.raises(NotFinite, match="input record 2: its embedding holds NaN"):
            writer.write([{"text": "a"}, {"text": "b"}], np.array([[0.1, 0.2], [np.nan, 0.0]], dtype=np.float32))
        writer.close()


@pytest.mark.slow
def test_a_tune_trial_that_diverges_is_failed_and_cannot_win(cli, tmp_path, tiny_model, easy_data):
    import optuna

    config = tmp_path / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\n"
        f"data:\n  train: {easy_data['train']}\n"
        "train:\n  epochs: 1\n  warmup_ratio: 0.0\n"
        "tune:\n  space:\n    train.learning_rate: {low: 1.0e-4, high: 1.0e+3, log: true}\n"
        f"output_dir: {tmp_path / 'study'}\n"
    )
    url = f"sqlite:///{tmp_path / 'study.db'}"
    planned = optuna.create_study(study_name="run", storage=url, direction="maximize")
    planned.enqueue_trial({"train.learning_rate": 1000.0})  # diverges: its last scores would still look fine
    planned.enqueue_trial({"train.learning_rate": 3e-3})
    code, _, err = cli("tune", "-c", config, "--trials", "2", "--storage", url)
    assert code == 0, err  # the study goes on after the failed trial
    trials = optuna.load_study(study_name="run", storage=url).trials
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]
    assert trials[0].user_attrs["diverged_at_step"] > 0
    report = json.loads((tmp_path / "study" / "trials.json").read_text())
    assert report["best"]["number"] == 1
    assert "NaN" not in (tmp_path / "study" / "trials.json").read_text()


def test_weights_are_checked_before_every_checkpoint_step_or_epoch():
    import torch

    from bertkit.training.divergence import DivergenceGuard, TrainingDiverged

    class State:
        global_step, max_steps = 7, 100

    class Control:
        should_save = should_training_stop = False

    model = torch.nn.Linear(2, 2)
    guard = DivergenceGuard()
    guard.on_step_end(None, State(), Control(), model=model)
    guard.on_epoch_end(None, State(), Control(), model=model)
    with torch.no_grad():
        model.weight[0, 0] = float("nan")
    guard.on_step_end(None, State(), Control(), model=model)  # no checkpoint, no check: a loss will show it
    saving = Control()
    saving.should_save = True
    for hook in (guard.on_step_end, guard.on_epoch_end):
        with pytest.raises(TrainingDiverged, match=r"at step 7: the weights \(weight\) hold NaN"):
            hook(None, State(), saving, model=model)


@pytest.mark.slow
def test_two_processes_stop_together_when_one_diverges(tiny_model, easy_data, tmp_path):
    """Under torchrun each process sees its own loss; all stop at once (none waits for the others)."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "run.yaml"
    config.write_text(
        f"model: {{name: {tiny_model}, max_length: 32}}\n"
        f"data: {{train: {easy_data['train']}, validation_split: 0.25}}\n"
        "train: {epochs: 1, batch_size: 9, learning_rate: 1000, warmup_ratio: 0.0}\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    torchrun = Path(sys.executable).parent / "torchrun"
    result = subprocess.run(
        [str(torchrun), "--nproc_per_node", "2", "--master_port", str(port), "-m", "bertkit", "train", "classify",
         "-c", str(config)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode != 0
    assert (result.stdout + result.stderr).count("training diverged at step") >= 1, result.stderr[-3000:]
    assert not (tmp_path / "out").exists()


def test_numpy_numbers_are_held_to_the_same_rule(tmp_path):
    import io

    import numpy as np

    from bertkit.core.outputs import RecordWriter, write_json
    from bertkit.core.outputs.strict_json import NotFinite

    with pytest.raises(NotFinite, match="'score' is Infinity"), RecordWriter(io.StringIO(), "csv") as out:
        out.write({"score": np.float32("inf")})  # csv would write `inf`
    write_json(tmp_path / "m.json", {"pearson": np.float64("nan")}, undefined_as_null=True)
    assert json.loads((tmp_path / "m.json").read_text()) == {"pearson": None, "undefined": {"pearson": "NaN"}}


def test_compare_tables_leave_a_bound_that_is_not_a_number_empty():
    from bertkit.comparison.report import cell

    assert cell(0.5, math.nan, 0.75, 3) == "0.500 [, 0.750]"


@pytest.mark.parametrize("setting", ["train.max_grad_norm=inf", "train.learning_rate=nan", "train.weight_decay=-inf"])
def test_a_setting_that_is_not_a_finite_number_is_refused(cli, tmp_path, tiny_model, easy_data, setting):
    """It would make the run's numbers NaN, and could not be written to bertkit.json."""
    path = write_config(tmp_path, tiny_model, easy_data["train"])
    code, _, err = cli("config", "show", "-c", path, "--set", setting)
    assert_refused(code, err, f"--set {setting}", "Input should be a finite number")


# ---------------------------------------------------------------- on a GPU: losses read at boundaries only


class _Control:
    should_log = should_evaluate = should_save = should_training_stop = False


def test_a_deferred_guard_stops_at_the_next_boundary_naming_the_first_bad_step():
    """As on a CUDA GPU (forced here on CPU tensors): no loss is read until a step that logs; then
    the run stops naming the step whose loss was first not finite, and the loss it had."""
    import torch

    from bertkit.training.divergence import DivergenceGuard, TrainingDiverged

    class State:
        global_step, max_steps = 0, 100

    guard = DivergenceGuard(deferred=True)
    labels = torch.tensor([1, 0])
    for step, loss in enumerate([0.7, 0.6, float("nan"), float("inf"), 0.5], start=1):
        counted = guard.observe(torch.tensor(loss), step, labels)
        same = (counted.isnan() & torch.tensor(loss).isnan()) | (counted == torch.tensor(loss))
        assert bool(same)
        State.global_step = step
        guard.on_step_end(None, State(), _Control())  # no boundary: nothing read, nothing raised
    assert guard.pending is None
    logging = _Control()
    logging.should_log = True
    with pytest.raises(TrainingDiverged, match="at step 3: the training loss is nan"):
        guard.on_step_end(None, State(), logging)
    State.global_step = State.max_steps  # the last step is a boundary too
    with pytest.raises(TrainingDiverged, match="at step 3"):
        guard.on_step_end(None, State(), _Control())
    with pytest.raises(TrainingDiverged, match="at step 3"):
        guard.on_epoch_end(None, State(), _Control())


def test_a_deferred_guard_lets_healthy_runs_and_empty_batches_through():
    import torch

    from bertkit.training.divergence import DivergenceGuard

    class State:
        global_step, max_steps = 4, 4

    guard = DivergenceGuard(deferred=True)
    nothing = torch.full((2, 5), -100)  # a masked-LM batch with no token drawn: NaN loss, not divergence
    counted = guard.observe(torch.tensor(float("nan")), 1, nothing)
    assert counted.item() == 0.0  # counted as 0 in the logged mean, which the Trainer's filter (off) would have hidden
    for step in (2, 3, 4):
        assert guard.observe(torch.tensor(0.5), step, torch.tensor([1])).item() == 0.5
    guard.on_step_end(None, State(), _Control())  # the last step: read, and fine
    guard.on_epoch_end(None, State(), _Control())


def test_the_guard_reads_each_loss_at_once_on_a_cpu_and_under_fp16():
    import torch

    from bertkit.training.divergence import DivergenceGuard

    assert DivergenceGuard(deferred=None).observe(torch.tensor(0.5), 1) is not None
    cpu = DivergenceGuard()
    cpu.observe(torch.tensor(float("nan")), 2, torch.tensor([1]))
    assert cpu.deferred is False and cpu.pending[0] == 2  # a CPU loss: decided from its device
    assert DivergenceGuard("fp16", deferred=True).deferred is False  # the loss scaler reads every step anyway


def test_gpu_training_settings(monkeypatch, tmp_path):
    """On a GPU: fused AdamW, pinned batches, the Trainer's per-step NaN filter off (on under fp16),
    torch.compile only when asked; on a CPU none of it."""
    from bertkit.config import config_class
    from bertkit.training import trainer

    cfg = config_class().model_validate({"task": "classify", "model": {"name": "m"}, "output_dir": str(tmp_path)})
    assert cfg.train.compile is False
    assert trainer.gpu_settings(cfg, "fp32") == {"use_cpu": True, "dataloader_pin_memory": False}
    monkeypatch.setattr(trainer, "_cuda", lambda: True)
    gpu = trainer.gpu_settings(cfg, "bf16")
    assert gpu == {"optim": "adamw_torch_fused", "dataloader_pin_memory": True, "logging_nan_inf_filter": False}
    assert trainer.gpu_settings(cfg, "fp16")["logging_nan_inf_filter"] is True
    faster = cfg.model_copy(update={"train": cfg.train.model_copy(update={"compile": True, "dataloader_workers": 2})})
    assert trainer.gpu_settings(faster, "bf16")["torch_compile"] is True
    assert trainer.gpu_settings(faster, "bf16")["dataloader_persistent_workers"] is True


def test_a_deferred_guard_reads_an_evaluation_once_at_its_end():
    import torch

    from bertkit.training.divergence import DivergenceGuard, TrainingDiverged

    guard = DivergenceGuard(deferred=True)
    labels = torch.tensor([1, 0])
    guard.observe_evaluation(torch.tensor(0.3), labels)
    guard.observe_evaluation(None)
    guard.observe_evaluation(torch.tensor(float("nan")), torch.full((2, 3), -100))  # nothing to predict
    guard.check_evaluation(5)
    for loss in (0.3, float("inf"), float("nan"), 0.2):
        guard.observe_evaluation(torch.tensor(loss), labels)
    assert isinstance(guard.evaluation, tuple)  # still on the device
    with pytest.raises(TrainingDiverged, match="at step 5: the validation loss is inf"):
        guard.check_evaluation(5)
    guard.check_evaluation(5)  # the next evaluation starts afresh
