"""One training run, the same for every task: Trainer built from the config, checkpoints in a
work directory, final scoring, and the bundle written atomically by the main process alone.

Checkpoints go to `<output_dir>.partial/` while training runs; `--resume` continues from there.
The finished bundle appears at `output_dir` in one rename, so a failed or interrupted run never
leaves a half-written model behind.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import time
from pathlib import Path

from bertkit import __version__, metrics, models, outputs, reports
from bertkit.config import Config
from bertkit.errors import BertkitError, did_you_mean
from bertkit.progress import callback_base
from bertkit.tasks import get_task

LOWER_IS_BETTER = ("loss", "mse", "rmse", "mae", "perplexity")


def resolve_precision(choice: str) -> str:
    import torch

    cuda = torch.cuda.is_available()
    if choice == "auto":
        if not cuda:
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if choice in ("fp16", "bf16") and not cuda:
        raise BertkitError(
            f"train.precision: {choice} needs a CUDA GPU, and none is visible here. Use "
            "`precision: auto` (fp32 on CPU, mixed precision on GPU) or `precision: fp32`."
        )
    return choice


def work_dir(final: Path) -> Path:
    final = Path(os.path.abspath(final))
    return final.with_name(final.name + ".partial")


def is_main_process() -> bool:
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) or 0) == 0


def train(cfg: Config, overwrite: bool = False, resume: bool = False, protect=()) -> tuple[Path, dict]:
    """Train, score and write the bundle; returns its path and its metrics.

    `protect`: paths of the run's inputs (the config file), which `--overwrite` must never
    delete; the data files of the config are protected too. One run at a time writes an output
    (a lock file beside it); every check that can fail is made before training starts."""
    task = get_task(cfg.task)
    if cfg.data.train is None:
        raise BertkitError("the config has no data.train: set it to a file path or {hub: NAME}")
    final = Path(cfg.output_dir)
    sources = (cfg.data.train, cfg.data.validation, cfg.data.test)
    inputs = [*protect, *(s.path for s in sources if s is not None and s.path), cfg.model.name, cfg.model.tokenizer]
    lock = outputs.OutputLock(final) if is_main_process() else contextlib.nullcontext()
    with lock:
        checkpoint = _check_dirs(final, work_dir(final), overwrite, resume, inputs)
        return _run(cfg, task, final, overwrite, checkpoint, inputs)


def _run(cfg: Config, task, final: Path, overwrite: bool, checkpoint: Path | None, inputs: list) -> tuple[Path, dict]:
    from transformers import EarlyStoppingCallback, set_seed

    models.quiet_transformers()
    import datasets

    datasets.disable_progress_bars()
    work = work_dir(final)
    precision = resolve_precision(cfg.train.precision)
    set_seed(cfg.train.seed)

    scratch = task.starts_from_scratch(cfg)
    source = None if scratch else models.resolve(cfg.model.name, cfg.model.revision)
    if source is not None:
        models.check_max_length(source, cfg)
    from bertkit.progress import RichProgress, status
    from bertkit.tokenization import load_tokenizer

    with status("reading data"):
        raw = task.load(cfg)
        info = task.setup(raw, cfg)
    best = cfg.train.metric_for_best_model or task.best_metric(info)
    check_metric(best, task.metric_names(info), cfg)
    tokenizer = task.new_tokenizer(raw, cfg)
    if tokenizer is None:
        tokenizer = load_tokenizer(cfg.model.tokenizer or source, cfg.model.revision, cfg.model.trust_remote_code)
    with status("tokenizing " + ", ".join(f"{len(v):,} {k}" for k, v in raw.items())):
        features = task.prepare(raw, tokenizer, info)
        for role in ("validation", "test"):
            if role in features:
                features[role] = longest_first(features[role])
    model = task.build_model(source, info, cfg)
    freeze(model, cfg)
    if cfg.train.gradient_checkpointing:
        model.gradient_checkpointing_enable()

    args = training_arguments(cfg, work, precision, best)
    roles = [role for role in ("validation", "test") if role in features]
    scorers = {role: task.metric_fn(info, features[role], raw[role]) for role in roles}
    remembered = RememberEvaluations(scorers["validation"])
    callbacks = [RichProgress(), remembered]
    if cfg.train.early_stopping_patience:
        if cfg.train.eval_strategy == "no":
            raise BertkitError("train.early_stopping_patience needs evaluation: set train.eval_strategy")
        callbacks.append(EarlyStoppingCallback(cfg.train.early_stopping_patience))
    trainer = _trainer_class(cfg)(
        model=model,
        args=args,
        train_dataset=features["train"],
        eval_dataset=features["validation"],
        processing_class=tokenizer,
        data_collator=task.collator(tokenizer, cfg),
        compute_metrics=remembered.compute,
        compute_loss_func=task.loss(info, cfg, features["train"]),
        preprocess_logits_for_metrics=task.reduce_logits,
        callbacks=callbacks,
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # RichProgress prints the logs readably
    if task.scores_before_training:  # the untrained model's score, for tasks whose point is the change
        with status("scoring the validation data before training"):
            before = _score(trainer, scorers["validation"], features["validation"])
    _mark_run_dir(work)
    started = time.perf_counter()
    try:
        result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except BaseException as err:
        _discard_if_empty(work)
        from bertkit.checkpoints import last_complete

        kept = work.is_dir() and last_complete(work)[0] is not None
        after = "The complete checkpoints are kept: make room, then run again with --resume." if kept else ""
        failed = outputs.writing_failed(err, work, after or "Nothing was kept.")
        if failed:
            raise failed from None
        raise
    train_seconds = time.perf_counter() - started

    scores = {}
    for role, scorer in scorers.items():
        reused = remembered.best(trainer.state) if role == "validation" else None
        scores[role] = reused or _score(trainer, scorer, features[role])
    headline = task.compare(before, scores["validation"]) if task.scores_before_training else {}
    scores["validation"] = {**headline, **scores["validation"]}
    if trainer.is_world_process_zero():
        stats = {
            "train_seconds": round(train_seconds, 1),
            "train_samples_per_second": result.metrics.get("train_samples_per_second"),
            "train_steps": trainer.state.global_step,
            "train_examples": len(features["train"]),
            "precision": precision,
        }
        write_bundle(trainer, cfg, info, scores, stats, best, overwrite, headline, task.export, inputs)
        shutil.rmtree(work, ignore_errors=True)
    return final, {**(headline or {}), **scores}


def check_metric(best: str, names: list[str], cfg: Config) -> None:
    """metric_for_best_model must be one the task reports (checked before any training)."""
    if cfg.train.eval_strategy == "no" and not cfg.train.metric_for_best_model:
        return
    known = ["loss", *names]
    if best.removeprefix("eval_") not in known:
        raise BertkitError(
            f"train.metric_for_best_model: '{best}' is not a metric of this task{did_you_mean(best, known)}. "
            f"Its metrics: {', '.join(known)}"
        )


def _mark_run_dir(work: Path) -> None:
    from bertkit.checkpoints import RUN_MARKER

    work.mkdir(parents=True, exist_ok=True)
    (work / RUN_MARKER).write_text(f"bertkit run, process {os.getpid()}\n", encoding="utf-8")


def _discard_if_empty(work: Path) -> None:
    """A run that stops before its first checkpoint leaves nothing to resume: no `.partial`."""
    from bertkit.checkpoints import checkpoints

    if work.is_dir() and not checkpoints(work) and is_main_process():
        shutil.rmtree(work, ignore_errors=True)


def _score(trainer, scorer, features) -> dict:
    """Full metrics of the trainer's model on `features`, by the split's own scorer."""
    kept, trainer.compute_metrics = trainer.compute_metrics, None
    try:
        return scorer(trainer.predict(features))
    finally:
        trainer.compute_metrics = kept


def longest_first(features):
    """Evaluation features ordered by length, so evaluation batches carry little padding. Scores do
    not depend on the order: every scorer reads its references from these same features."""
    lengths = [len(ids) for ids in features["input_ids"]]
    return features.select(sorted(range(len(lengths)), key=lambda i: -lengths[i]))


class RememberEvaluations(callback_base()):
    """Keeps the full validation metrics of every evaluation, so the best checkpoint's numbers
    need not be computed a second time after training (the Trainer only logs plain numbers)."""

    def __init__(self, scorer):
        self.scorer, self.last, self.by_step = scorer, None, {}

    def compute(self, prediction) -> dict:
        self.last = self.scorer(prediction)
        return metrics.scalars(self.last)

    def on_evaluate(self, args, state, control, **kwargs):
        self.by_step[state.global_step] = self.last

    def best(self, state) -> dict | None:
        """Full metrics of the checkpoint the Trainer kept (load_best_model_at_end), if evaluated."""
        return self.by_step.get(state.best_global_step)


def _trainer_class(cfg: Config):
    """The Trainer, with bertkit's length-grouped sampler when train.group_by_length is on, and
    the task head in its own optimizer group when train.head_learning_rate is set."""
    from transformers import Trainer

    grouped, head_lr = cfg.train.group_by_length, cfg.train.head_learning_rate
    if not grouped and head_lr is None:
        return Trainer

    class BertkitTrainer(Trainer):
        def _get_train_sampler(self, train_dataset=None):
            if not grouped:
                return super()._get_train_sampler(train_dataset)
            from bertkit.training.sampling import ShuffledLengthGroups

            data = train_dataset if train_dataset is not None else self.train_dataset
            lengths = [len(ids) for ids in data["input_ids"]]
            batch = self.args.per_device_train_batch_size * max(1, self.args.world_size)
            return ShuffledLengthGroups(lengths, batch, self.args.seed)

        def create_optimizer(self, model=None):
            optimizer = super().create_optimizer(model)
            if head_lr is not None:
                split_head_groups(optimizer, head_parameters(model or self.model), head_lr)
            return optimizer

    return BertkitTrainer


def head_parameters(model) -> set[int]:
    """ids of the parameters outside the pretrained base model: the task head."""
    prefix = model.base_model_prefix + "."
    return {id(p) for name, p in model.named_parameters() if not name.startswith(prefix)}


def split_head_groups(optimizer, head: set[int], lr: float) -> None:
    """Move the head's parameters into groups of their own with learning rate `lr` (the
    scheduler, created afterwards, scales every group's rate the same way)."""
    groups = []
    for group in optimizer.param_groups:
        settings = {k: v for k, v in group.items() if k != "params"}
        body = [p for p in group["params"] if id(p) not in head]
        mine = [p for p in group["params"] if id(p) in head]
        groups += [{**settings, "params": body}] if body else []
        groups += [{**settings, "params": mine, "lr": lr}] if mine else []
    optimizer.param_groups.clear()
    for group in groups:
        optimizer.add_param_group(group)


def _check_dirs(final: Path, work: Path, overwrite: bool, resume: bool, inputs) -> Path | None:
    """Everything about the output and work directories that can fail, checked before training;
    returns the checkpoint to resume from."""
    from bertkit import checkpoints
    from bertkit.progress import console

    if final.exists() and not overwrite:
        what = "the run would replace it when it finishes" if resume else "it would be replaced"
        raise BertkitError(
            f"output directory {final} already exists ({what}); pass --overwrite to replace it, "
            "or choose another with --output-dir"
        )
    outputs.check_output_dir(final, overwrite, inputs, "bundle")
    if resume:
        found, broken = checkpoints.last_complete(work)
        if found is None:
            why = f" ({len(broken)} incomplete one(s) found)" if broken else ""
            raise BertkitError(
                f"--resume: there is no complete checkpoint to resume from in {work}{why}; start again without --resume"
            )
        for folder in broken:
            console.print(
                f"[yellow]note:[/yellow] {folder.name} was not completely written (a full disk or an interrupted "
                "save?); it is removed"
            )
            if is_main_process():
                shutil.rmtree(folder, ignore_errors=True)
        console.print(f"resuming from {found.name}")
        return found
    if work.exists():
        foreign = checkpoints.foreign_files(work) if work.is_dir() else [work.name]
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise BertkitError(
                f"{work} (where this run keeps its checkpoints) holds files bertkit did not write ({shown}); "
                "move them away to start this run"
            )
        found, _ = checkpoints.last_complete(work)
        if found is not None and not overwrite:
            raise BertkitError(
                f"an unfinished run left checkpoints in {work} (last complete: {found.name}): pass --resume to "
                "continue it, or --overwrite to start again"
            )
        if is_main_process():
            shutil.rmtree(work)
    return None


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def training_arguments(cfg: Config, work: Path, precision: str, best: str | None):
    from transformers import TrainingArguments

    t = cfg.train
    evaluating = t.eval_strategy != "no"
    return TrainingArguments(
        output_dir=str(work),
        num_train_epochs=t.epochs,
        max_steps=t.max_steps or -1,
        per_device_train_batch_size=t.batch_size,
        per_device_eval_batch_size=t.eval_batch_size or 2 * t.batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        learning_rate=t.learning_rate,
        weight_decay=t.weight_decay,
        warmup_steps=t.warmup_ratio,  # a float below 1 is a share of all steps
        lr_scheduler_type=t.lr_scheduler,
        max_grad_norm=t.max_grad_norm,
        seed=t.seed,
        eval_strategy=t.eval_strategy,
        eval_steps=t.eval_steps,
        save_strategy=t.eval_strategy if evaluating else "epoch",
        save_steps=t.eval_steps,
        save_total_limit=t.save_total_limit,
        load_best_model_at_end=evaluating,
        metric_for_best_model=best if evaluating else None,
        greater_is_better=not (best or "loss").endswith(LOWER_IS_BETTER) if evaluating else None,
        logging_strategy="steps",
        logging_steps=t.logging_steps,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        dataloader_num_workers=t.dataloader_workers,
        report_to=t.report_to or "none",
        disable_tqdm=True,
        # Without a GPU, say so: accelerate then sets up multi-process CPU training (gloo)
        # when launched by torchrun or `accelerate launch`.
        use_cpu=not _cuda(),
        dataloader_pin_memory=_cuda(),
    )


def freeze(model, cfg: Config) -> None:
    """Keep the embeddings and/or the lowest encoder layers fixed, as the config asks."""
    t = cfg.train
    if not (t.freeze_embeddings or t.freeze_layers):
        return
    base = getattr(model, model.base_model_prefix, None)
    embeddings = getattr(base, "embeddings", None)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if embeddings is None or layers is None:
        raise BertkitError(f"train.freeze_*: not supported for {type(model).__name__}")
    if t.freeze_layers > len(layers):
        raise BertkitError(f"train.freeze_layers: {t.freeze_layers}, but the model has {len(layers)} layers")
    modules = ([embeddings] if t.freeze_embeddings else []) + list(layers[: t.freeze_layers])
    for module in modules:
        for parameter in module.parameters():
            parameter.requires_grad = False


def library_versions() -> dict:
    import importlib.metadata as md

    versions = {"bertkit": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "datasets", "evaluate", "accelerate", "tokenizers"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return versions


def write_bundle(
    trainer,
    cfg: Config,
    info: dict,
    scores: dict,
    stats: dict,
    best: str,
    overwrite: bool,
    headline=None,
    export=None,
    protect=(),
) -> None:
    """The bundle: the model (`export(model, info)` when the task saves something other than the
    trained module as it is: the encoder inside a wrapper, or a model with its settings changed),
    tokenizer, bertkit.json, metrics.json (headline numbers first), plots and model card."""
    final = Path(cfg.output_dir)
    with outputs.staged_dir(final, overwrite, "bundle", protect) as staged:
        exported = export(trainer.model, info) if export else None
        if exported is not None:
            exported.save_pretrained(str(staged))
            trainer.processing_class.save_pretrained(str(staged))
        else:
            trainer.save_model(str(staged))
        (staged / "training_args.bin").unlink(missing_ok=True)  # a pickle; the config says it all
        main_role = "test" if "test" in scores else "validation"
        bundle_info = {
            **info,
            "bertkit_version": __version__,
            "base_model": info.get("base_model") or cfg.model.name,
            "metric_for_best_model": best,
            "metrics": scores,
            "training": stats,
            "config": cfg.dump(),
            "versions": library_versions(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        outputs.write_json(staged / "bertkit.json", bundle_info)
        outputs.write_json(staged / "metrics.json", {**(headline or {}), **scores, "training": stats})
        reports.training_curves(trainer.state.log_history, best, staged / "training_curves.png")
        reports.task_plots(scores.get(main_role, {}), staged)
        reports.model_card(bundle_info, staged / "README.md")
