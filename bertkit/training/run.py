"""One training run, start to end: config to bundle. `train` checks what can fail before any work
and holds the output's lock; `_run` is the run's phases in order, each a function over one small
state (`Run`), calling the task's training part (bertkit/tasks/contract/training.py) in the
contract's order."""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bertkit.config import Config
from bertkit.core import models, outputs
from bertkit.core.adapters.base import refuse_adapter_bundle
from bertkit.core.adapters.training import attach, check_resume
from bertkit.core.checkpoints import last_complete
from bertkit.core.errors import BertkitError
from bertkit.core.freezing import freeze
from bertkit.core.progress import RichProgress, console, status
from bertkit.core.run_info import RunInfo
from bertkit.core.sharding import is_main
from bertkit.core.tokenization import load_tokenizer
from bertkit.tasks import get_task
from bertkit.tasks.contract import Task
from bertkit.training.budget import resolve_rates
from bertkit.training.divergence import DivergenceGuard, TrainingDiverged, advice, check_weights
from bertkit.training.export import write_bundle
from bertkit.training.feature_cache import cached_prepare
from bertkit.training.run_dir import check_dirs, discard_if_empty, mark_run_dir, run_facts, work_dir
from bertkit.training.trainer import (
    RememberEvaluations,
    check_metric,
    longest_first,
    predict_split,
    resolve_precision,
    score_split,
    trainer_class,
    training_arguments,
)


def train(
    cfg: Config, overwrite: bool = False, resume: bool = False, protect=(), callbacks=(), progress: bool = True
) -> tuple[Path, dict]:
    """Train, score and write the bundle; returns its path and its metrics.

    `callbacks`: more Trainer callbacks (`bertkit tune`'s pruning); `progress`: show the progress
    bar and log lines (a study shows one line per trial instead).

    `protect`: paths of the run's inputs (the config file), which `--overwrite` must never
    delete; the data files of the config are protected too. One run at a time writes an output
    (a lock file beside it); every check that can fail is made before training starts."""
    task = get_task(cfg.task)
    if cfg.data.train is None:
        raise BertkitError("the config has no data.train: set it to a file path or {hub: NAME}")
    if cfg.data.streaming and not task.training.can_stream:
        raise BertkitError(
            f"data.streaming: the {task.name} task reads its training data whole; only plain-text training "
            "(mlm-adapt) streams. Remove data.streaming"
        )
    final = Path(cfg.output_dir)
    inputs = run_inputs(cfg, task, protect)
    lock = outputs.OutputLock(final) if is_main() else contextlib.nullcontext()
    with lock:
        checkpoint = check_dirs(final, work_dir(final), overwrite, resume, inputs)
        return _run(Run(cfg, task, final, checkpoint, inputs, overwrite, progress, [*callbacks]))


def run_inputs(cfg: Config, task, protect=()) -> list:
    """Everything a run reads, which its output must never replace: `protect` (the config file),
    the data files, the model and tokenizer, and what the task adds (`Training.inputs`)."""
    sources = (cfg.data.train, cfg.data.validation, cfg.data.test)
    data_files = [p for s in sources if s is not None for p in s.local_paths()]
    data_files += list(cfg.data.unlabeled or [])
    return [*protect, *data_files, cfg.model.name, cfg.model.tokenizer, *task.training.inputs(cfg)]


@dataclass
class Run:
    """What one training run carries from phase to phase: set by the phase that makes it, read by
    the later ones (`_run` lists the phases in order)."""

    cfg: Config
    task: Task
    final: Path  # where the bundle goes
    checkpoint: Path | None  # the checkpoint --resume continues from
    inputs: list  # what the run reads, never replaced by --overwrite
    overwrite: bool
    progress: bool
    extra: list  # the caller's Trainer callbacks
    work: Path = field(init=False)  # `<output_dir>.partial/`, the checkpoints while training runs
    precision: str = ""
    source: str | None = None  # the model to start from, resolved (None: from scratch)
    raw: dict = field(default_factory=dict)  # the splits as read
    info: RunInfo | None = None  # the run's description (bertkit.json)
    best: str = ""  # the metric that picks the best checkpoint
    tokenizer: Any = None
    features: dict = field(default_factory=dict)
    rates: dict | None = None  # the learning rates `auto` resolved to
    model: Any = None
    scorers: dict = field(default_factory=dict)  # each scored split's compute_metrics
    trainer: Any = None
    guard: DivergenceGuard | None = None
    remembered: RememberEvaluations | None = None
    loss: Any = None  # the task's own loss, or None
    before: dict | None = None  # validation scores before training (tasks whose point is the change)
    own: dict | None = None  # what a task that trains itself recorded (classify's contrastive route)
    result: Any = None  # the Trainer's training output
    train_seconds: float = 0.0
    scores: dict = field(default_factory=dict)
    predictions: dict = field(default_factory=dict)  # each scored split's prediction, kept for `calibrate`
    headline: dict = field(default_factory=dict)

    def __post_init__(self):
        self.work = work_dir(self.final)


def _run(run: Run) -> tuple[Path, dict]:
    """The phases of a run, in order; each reads what the ones before it set on `run`."""
    prepare_run(run)  # quiet libraries, precision, seed, the starting model found and checked
    read_data(run)  # the splits, the run's description, the metric that picks the best checkpoint
    make_features(run)  # the tokenizer, the features, the learning rates
    make_model(run)  # the model as the task builds it, an adapter on it, layers frozen
    make_trainer(run)  # the scorers, the callbacks, the Trainer (and the score before training)
    fit(run)  # trained by the task or by the Trainer; a failure keeps the complete checkpoints
    score(run)  # the weights checked finite, every split scored, the headline
    calibrate(run)  # what the task learns from the scored predictions (a temperature), the splits scored again
    publish(run)  # the bundle written by the main process, the work folder removed
    return run.final, {**run.headline, **run.scores}


def prepare_run(run: Run) -> None:
    import datasets
    from transformers import set_seed

    models.quiet_transformers()
    datasets.disable_progress_bars()
    run.precision = resolve_precision(run.cfg.train.precision)
    set_seed(run.cfg.train.seed)
    if not run.task.training.starts_from_scratch(run.cfg):
        run.source = models.resolve(run.cfg.model.name, run.cfg.model.revision)
        refuse_adapter_bundle(run.cfg.model.name, run.source)  # before anything reads it as a whole model
        models.check_max_length(run.source, run.cfg, run.task.training.lengths(run.cfg))


def read_data(run: Run) -> None:
    training, cfg = run.task.training, run.cfg
    with status("reading data"):
        run.raw = training.load(cfg)
        run.info = RunInfo(training.setup(run.raw, cfg))
    for note in training.data_warnings(run.info):
        console.print(f"[yellow]warning:[/yellow] {note}")
    run.best = cfg.train.metric_for_best_model or training.best_metric(run.info)
    check_metric(run.best, training.metric_names(run.info), cfg)


def make_features(run: Run) -> None:
    training = run.task.training
    run.tokenizer = run_tokenizer(run.cfg, run.task, run.raw, run.source)
    facts = training.tokenizer_facts(run.tokenizer, run.info)
    if facts:
        run.info = run.info.replace(**facts)
    run.features = _features(run.cfg, run.task, run.raw, run.tokenizer, run.info)
    for role in ("validation", "test"):
        if role in run.features:
            run.features[role] = longest_first(run.features[role])
    # a task that trains itself (classify's contrastive route) has rates of its own: none is said
    run.cfg, run.rates = resolve_rates(run.cfg, run.features["train"], say=not training.trains_itself(run.info))


def make_model(run: Run) -> None:
    cfg = run.cfg
    run.model = starting_model(cfg, run.task, run.source, run.info)
    if cfg.train.adapter is not None:  # the base frozen, a LoRA adapter and the head trained (docs/adapters.md)
        saved = run.task.training.saved_model(run.model, run.info) or run.model
        run.model, adapter = attach(run.model, saved, cfg.train.adapter, cfg.model.name, run.source, cfg.model.revision)
        run.info = run.info.replace(adapter=adapter)
    if run.checkpoint is not None:
        check_resume(run.checkpoint, run.info.get("adapter"), run_facts(run.work))
    freeze(run.model, cfg.train)
    if cfg.train.gradient_checkpointing:
        models.checkpoint_activations(run.model)


def make_trainer(run: Run) -> None:
    from transformers import EarlyStoppingCallback
    from transformers.trainer_callback import PrinterCallback

    cfg, training, info, features = run.cfg, run.task.training, run.info, run.features
    run.loss = training.loss(info, cfg, features["train"])
    roles = [role for role in ("validation", "test") if role in features]
    run.scorers = {role: training.metric_fn(info, features[role], run.raw[role]) for role in roles}
    run.remembered = RememberEvaluations(run.scorers["validation"], keep=training.calibrates(info, cfg))
    run.guard = DivergenceGuard(run.precision, advice(cfg, run.precision))
    callbacks = [run.guard, RichProgress(), run.remembered] if run.progress else [run.guard, run.remembered]
    # the contrastive route trains without the Trainer: early stopping is unused there, and said so
    if cfg.train.early_stopping_patience and not training.trains_itself(info):
        if cfg.train.eval_strategy == "no":
            raise BertkitError("train.early_stopping_patience needs evaluation: set train.eval_strategy")
        callbacks.append(EarlyStoppingCallback(cfg.train.early_stopping_patience))
    run.trainer = trainer_class(cfg)(
        model=run.model,
        args=training_arguments(cfg, run.work, run.precision, run.best),
        train_dataset=features["train"],
        eval_dataset=features["validation"],
        processing_class=run.tokenizer,
        data_collator=training.collator(run.tokenizer, cfg),
        compute_metrics=run.remembered.compute,
        compute_loss_func=run.loss,
        preprocess_logits_for_metrics=training.reduce_logits,
        callbacks=[*callbacks, *run.extra],
    )
    run.guard.watch(run.trainer)
    run.trainer.remove_callback(PrinterCallback)  # RichProgress prints the logs readably
    if training.scores_before_training:  # the untrained model's score, for tasks whose point is the change
        with status("scoring the validation data before training"):
            run.before = score_split(run.trainer, run.scorers["validation"], features["validation"])


def fit(run: Run) -> None:
    adapter = run.info.get("adapter")
    mark_run_dir(run.work, {"adapter_base_hash": adapter["base_hash"]} if adapter else None)
    trainer, started = run.trainer, time.perf_counter()
    try:
        # a task may train its own way (classify's contrastive route); the Trainer then only scores
        run.own = run.task.training.fit(
            trainer.model, run.tokenizer, run.features, run.info, run.cfg, trainer.state.log_history
        )
        if run.own is None:
            run.result = trainer.train(resume_from_checkpoint=str(run.checkpoint) if run.checkpoint else None)
    except BaseException as err:
        discard_if_empty(run.work)
        kept = run.work.is_dir() and last_complete(run.work)[0] is not None
        if isinstance(err, TrainingDiverged) and kept:
            raise err.with_checkpoints_in(run.work) from None
        after = "The complete checkpoints are kept: make room, then run again with --resume." if kept else ""
        failed = outputs.writing_failed(err, run.work, after or "Nothing was kept.")
        if failed:
            raise failed from None
        raise
    run.train_seconds = time.perf_counter() - started


def score(run: Run) -> None:
    trainer = run.trainer
    try:
        # the model about to be scored and published
        check_weights(trainer.model, trainer.state.global_step, run.guard.advice)
        keep = run.remembered.keep  # the task calibrates: every scored split's prediction is kept
        for role, scorer in run.scorers.items():
            reused = run.remembered.best(trainer.state) if role == "validation" else None
            if reused is not None and (reused[1] is not None or not keep):
                run.scores[role], prediction = reused
            else:
                prediction = predict_split(trainer, run.features[role], role)
                run.scores[role] = scorer(prediction)
            if keep:
                run.predictions[role] = prediction
    except TrainingDiverged:
        discard_if_empty(run.work)
        raise
    if run.task.training.scores_before_training:
        run.headline = run.task.training.compare(run.before, run.scores["validation"])
    run.scores["validation"] = {**run.headline, **run.scores["validation"]}


def calibrate(run: Run) -> None:
    """The task's `calibrate` on the kept predictions; what it adds to the description is scored
    again on every split from the same predictions (no second pass through the model)."""
    training = run.task.training
    if not run.predictions:
        return
    facts = training.calibrate(run.predictions, run.info, run.cfg)
    if not facts:
        return
    run.info = run.info.replace(**facts)
    for role, prediction in run.predictions.items():
        rescored = training.metric_fn(run.info, run.features[role], run.raw[role])(prediction)
        run.scores[role] = {**(run.headline if role == "validation" else {}), **rescored}


def publish(run: Run) -> None:
    """The bundle, written by the main process alone (the others have nothing to add)."""
    trainer, own = run.trainer, run.own
    if not trainer.is_world_process_zero():
        return
    stats = {
        "train_seconds": round(run.train_seconds, 1),
        "train_samples_per_second": None if own else run.result.metrics.get("train_samples_per_second"),
        "train_steps": own["steps"] if own else trainer.state.global_step,
        "train_examples": _count(run.features["train"]),
        "precision": run.precision,
    }
    if run.rates and not own:
        stats["learning_rate"] = run.rates
    if own:
        stats[own["strategy"]] = own
    if getattr(run.loss, "settings", None):  # a task's own loss (class weights, focal) says how it was set
        stats["loss"] = run.loss.settings
    write_bundle(
        trainer, run.cfg, run.info, run.scores, stats, run.best, run.overwrite, run.headline,
        run.task.training.saved_model, run.inputs,
    )  # fmt: skip
    shutil.rmtree(run.work, ignore_errors=True)


def run_tokenizer(cfg: Config, task, raw, source: str | None):
    """The tokenizer a run uses: the task's own (`new_tokenizer`), else model.tokenizer's, else
    the model's. `bertkit smoke` loads it here too."""

    tokenizer = task.training.new_tokenizer(raw, cfg)
    if tokenizer is None:
        tokenizer = load_tokenizer(cfg.model.tokenizer or source, cfg.model.revision, cfg.model.trust_remote_code)
    return tokenizer


def starting_model(cfg: Config, task, source: str | None, info: RunInfo):
    """The model training starts from, as the task builds it (`None` source: from scratch), its
    weights read whole and finite (`models.weights_from_pretrained`: a diverged model to start from
    would look like divergence at step 1). `bertkit smoke` loads the real model here too, so a
    damaged one stops it as it stops the run."""
    return task.training.build_model(source, info, cfg)


def _features(cfg: Config, task, raw: dict, tokenizer, info: RunInfo) -> dict:
    """`task.training.prepare` through the on-disk feature cache (training/feature_cache.py), unless
    data.cache is off or the training split is streamed (tokenized as training reads it)."""

    counts = {role: _count(split) for role, split in raw.items()}
    sizes = ", ".join(f"{role} (streamed)" if n is None else f"{n:,} {role}" for role, n in counts.items())

    def build():
        with status("tokenizing " + sizes):
            return task.training.prepare(raw, tokenizer, info)

    if not cfg.data.cache or None in counts.values():
        return build()

    inputs = task.training.inputs(cfg)
    features, _, _ = cached_prepare(build, raw, tokenizer, info, task.name, inputs, say=console.print)
    return features


def _count(split) -> int | None:
    """How many examples a split holds; None for a streamed one."""
    try:
        return len(split)
    except TypeError:
        return None
