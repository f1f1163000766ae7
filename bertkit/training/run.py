"""One training run, start to end: config to bundle, with the task's hooks called in the contract's order
(bertkit/tasks/base.py)."""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

from bertkit.config import Config
from bertkit.core import models, outputs
from bertkit.core.adapters.base import refuse_adapter_bundle
from bertkit.core.adapters.training import attach, check_resume
from bertkit.core.errors import BertkitError
from bertkit.core.freezing import freeze
from bertkit.core.progress import RichProgress, console, status
from bertkit.core.run_info import RunInfo
from bertkit.core.sharding import is_main
from bertkit.core.tokenization import load_tokenizer
from bertkit.tasks import get_task
from bertkit.training.budget import resolve_rates
from bertkit.training.divergence import DivergenceGuard, TrainingDiverged, advice, check_weights
from bertkit.training.export import write_bundle
from bertkit.training.feature_cache import cached_prepare
from bertkit.training.run_dir import check_dirs, discard_if_empty, mark_run_dir, run_facts, work_dir
from bertkit.training.trainer import (
    RememberEvaluations,
    check_metric,
    longest_first,
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
        return _run(cfg, task, final, overwrite, checkpoint, inputs, [*callbacks], progress)


def run_inputs(cfg: Config, task, protect=()) -> list:
    """Everything a run reads, which its output must never replace: `protect` (the config file),
    the data files, the model and tokenizer, and what the task adds (`Task.inputs`)."""
    sources = (cfg.data.train, cfg.data.validation, cfg.data.test)
    data_files = [p for s in sources if s is not None for p in s.local_paths()]
    data_files += list(cfg.data.unlabeled or [])
    return [*protect, *data_files, cfg.model.name, cfg.model.tokenizer, *task.training.inputs(cfg)]


def _run(
    cfg: Config, task, final: Path, overwrite: bool, checkpoint: Path | None, inputs: list, extra: list, progress: bool
) -> tuple[Path, dict]:
    from transformers import EarlyStoppingCallback, set_seed

    models.quiet_transformers()
    import datasets

    datasets.disable_progress_bars()
    work = work_dir(final)
    precision = resolve_precision(cfg.train.precision)
    set_seed(cfg.train.seed)

    scratch = task.training.starts_from_scratch(cfg)
    source = None if scratch else models.resolve(cfg.model.name, cfg.model.revision)
    if source is not None:

        refuse_adapter_bundle(cfg.model.name, source)  # before anything reads it as a whole model
        models.check_max_length(source, cfg, task.training.lengths(cfg))

    with status("reading data"):
        raw = task.training.load(cfg)
        info = RunInfo(task.training.setup(raw, cfg))
    for note in task.training.data_warnings(info):
        console.print(f"[yellow]warning:[/yellow] {note}")
    best = cfg.train.metric_for_best_model or task.training.best_metric(info)
    check_metric(best, task.training.metric_names(info), cfg)
    tokenizer = run_tokenizer(cfg, task, raw, source)
    facts = task.training.tokenizer_facts(tokenizer, info)
    if facts:
        info = info.replace(**facts)
    features = _features(cfg, task, raw, tokenizer, info)
    for role in ("validation", "test"):
        if role in features:
            features[role] = longest_first(features[role])
    # a task that trains itself (classify's contrastive route) has rates of its own: none is said
    cfg, rates = resolve_rates(cfg, features["train"], say=not task.training.trains_itself(info))
    model = starting_model(cfg, task, source, info)
    if cfg.train.adapter is not None:  # the base frozen, a LoRA adapter and the head trained (docs/adapters.md)

        saved = task.training.saved_model(model, info) or model
        model, adapter = attach(model, saved, cfg.train.adapter, cfg.model.name, source, cfg.model.revision)
        info = info.replace(adapter=adapter)
    if checkpoint is not None:

        check_resume(checkpoint, info.get("adapter"), run_facts(work))
    freeze(model, cfg.train)
    if cfg.train.gradient_checkpointing:
        models.checkpoint_activations(model)

    args = training_arguments(cfg, work, precision, best)
    loss = task.training.loss(info, cfg, features["train"])
    roles = [role for role in ("validation", "test") if role in features]
    scorers = {role: task.training.metric_fn(info, features[role], raw[role]) for role in roles}
    remembered = RememberEvaluations(scorers["validation"])
    guard = DivergenceGuard(precision, advice(cfg, precision))
    callbacks = [guard, RichProgress(), remembered] if progress else [guard, remembered]
    # the contrastive route trains without the Trainer: early stopping is unused there, and said so
    if cfg.train.early_stopping_patience and not task.training.trains_itself(info):
        if cfg.train.eval_strategy == "no":
            raise BertkitError("train.early_stopping_patience needs evaluation: set train.eval_strategy")
        callbacks.append(EarlyStoppingCallback(cfg.train.early_stopping_patience))
    callbacks += extra
    trainer = trainer_class(cfg)(
        model=model,
        args=args,
        train_dataset=features["train"],
        eval_dataset=features["validation"],
        processing_class=tokenizer,
        data_collator=task.training.collator(tokenizer, cfg),
        compute_metrics=remembered.compute,
        compute_loss_func=loss,
        preprocess_logits_for_metrics=task.training.reduce_logits,
        callbacks=callbacks,
    )
    guard.watch(trainer)
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # RichProgress prints the logs readably
    if task.training.scores_before_training:  # the untrained model's score, for tasks whose point is the change
        with status("scoring the validation data before training"):
            before = score_split(trainer, scorers["validation"], features["validation"])
    adapter = info.get("adapter")
    mark_run_dir(work, {"adapter_base_hash": adapter["base_hash"]} if adapter else None)
    started = time.perf_counter()
    try:
        # a task may train its own way (classify's contrastive route); the Trainer then only scores
        own = task.training.fit(trainer.model, tokenizer, features, info, cfg, trainer.state.log_history)
        if own is None:
            result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except BaseException as err:
        discard_if_empty(work)
        from bertkit.core.checkpoints import last_complete

        kept = work.is_dir() and last_complete(work)[0] is not None
        if isinstance(err, TrainingDiverged) and kept:
            raise err.with_checkpoints_in(work) from None
        after = "The complete checkpoints are kept: make room, then run again with --resume." if kept else ""
        failed = outputs.writing_failed(err, work, after or "Nothing was kept.")
        if failed:
            raise failed from None
        raise
    train_seconds = time.perf_counter() - started

    try:
        # the model about to be scored and published
        check_weights(trainer.model, trainer.state.global_step, guard.advice)
        scores = {}
        for role, scorer in scorers.items():
            reused = remembered.best(trainer.state) if role == "validation" else None
            scores[role] = reused or score_split(trainer, scorer, features[role], role)
    except TrainingDiverged:
        discard_if_empty(work)
        raise
    headline = task.training.compare(before, scores["validation"]) if task.training.scores_before_training else {}
    scores["validation"] = {**headline, **scores["validation"]}
    if trainer.is_world_process_zero():
        stats = {
            "train_seconds": round(train_seconds, 1),
            "train_samples_per_second": None if own else result.metrics.get("train_samples_per_second"),
            "train_steps": own["steps"] if own else trainer.state.global_step,
            "train_examples": _count(features["train"]),
            "precision": precision,
        }
        if rates and not own:
            stats["learning_rate"] = rates
        if own:
            stats[own["strategy"]] = own
        if getattr(loss, "settings", None):  # a task's own loss (class weights, focal) says how it was set
            stats["loss"] = loss.settings
        write_bundle(trainer, cfg, info, scores, stats, best, overwrite, headline, task.training.saved_model, inputs)
        shutil.rmtree(work, ignore_errors=True)
    return final, {**(headline or {}), **scores}


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
