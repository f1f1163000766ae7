"""The Hugging Face Trainer as bertkit sets it up: training arguments from the config, precision,
head learning rate groups, frozen layers, evaluation memory, and the metric that picks the best
checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from bertkit.config import Config
from bertkit.core import metrics
from bertkit.core.errors import BertkitError, did_you_mean
from bertkit.core.inference import gpu_half
from bertkit.core.progress import callback_base
from bertkit.training.sampling import ShuffledLengthGroups

LOWER_IS_BETTER = ("loss", "mse", "rmse", "mae", "perplexity")


def resolve_precision(choice: str) -> str:
    import torch


    cuda = torch.cuda.is_available()
    if choice == "auto":
        return gpu_half() if cuda else "fp32"
    if choice in ("fp16", "bf16") and not cuda:
        raise BertkitError(
            f"train.precision: {choice} needs a CUDA GPU, and none is visible here. Use "
            "`precision: auto` (fp32 on CPU, mixed precision on GPU) or `precision: fp32`."
        )
    return choice


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


def score_split(trainer, scorer, features, split: str = "validation") -> dict:
    """Full metrics of the trainer's model on `features`, by the split's own scorer."""
    return scorer(predict_split(trainer, features, split))


def predict_split(trainer, features, split: str = "validation"):
    """The trainer's prediction (logits and labels) on `features`. A batch whose loss is not
    finite stops the run (`DivergenceGuard.check_evaluation`)."""
    kept, trainer.compute_metrics = trainer.compute_metrics, None
    try:
        prediction = trainer.predict(features)
    finally:
        trainer.compute_metrics = kept
    guard = getattr(trainer, "guard", None)
    if guard is not None:
        guard.check_evaluation(trainer.state.global_step, f"the {split} loss")
    return prediction


def longest_first(features):
    """Evaluation features ordered by length, so evaluation batches carry little padding. Scores do
    not depend on the order: every scorer reads its references from these same features."""
    lengths = [len(ids) for ids in features["input_ids"]]
    return features.select(sorted(range(len(lengths)), key=lambda i: -lengths[i]))


class RememberEvaluations(callback_base()):
    """Keeps the full validation metrics of every evaluation, so the best checkpoint's numbers
    need not be computed a second time after training (the Trainer only logs plain numbers); with
    `keep`, each evaluation's prediction too (a task that `calibrates` reads the best one's)."""

    def __init__(self, scorer, keep: bool = False):
        self.scorer, self.keep, self.last, self.by_step = scorer, keep, None, {}

    def compute(self, prediction) -> dict:
        self.last = (self.scorer(prediction), prediction if self.keep else None)
        return metrics.scalars(self.last[0])

    def on_evaluate(self, args, state, control, **kwargs):
        self.by_step[state.global_step] = self.last

    def best(self, state) -> tuple[dict, object] | None:
        """Full metrics of the checkpoint the Trainer kept (load_best_model_at_end), if evaluated,
        and its prediction (None unless kept)."""
        return self.by_step.get(state.best_global_step)


def trainer_class(cfg: Config):
    """The Trainer, with bertkit's length-grouped sampler when train.group_by_length is on, the
    task head in its own optimizer group when train.head_learning_rate is set, and every step's
    loss and gradient norm shown to the run's `DivergenceGuard` (`guard`, set by
    `DivergenceGuard.watch`)."""
    from transformers import Trainer

    grouped, head_lr = cfg.train.group_by_length, cfg.train.head_learning_rate

    class BertkitTrainer(Trainer):
        guard = None

        def training_step(self, model, inputs, num_items_in_batch=None):
            labels = inputs.get("labels")  # before a task's loss pops them
            loss = super().training_step(model, inputs, num_items_in_batch)
            if self.guard is not None:
                loss = self.guard.observe(loss, self.state.global_step + 1, labels)
            return loss

        def _clip_grad_norm(self, model):
            norm = super()._clip_grad_norm(model)  # before clipping: what the step's update was scaled by
            if self.guard is not None:
                self.guard.observe_grad_norm(norm, self.state.global_step + 1)
            return norm

        def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
            labels = inputs.get("labels")
            out = super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)
            if self.guard is not None:
                self.guard.observe_evaluation(out[0], labels)
            return out

        def _get_train_sampler(self, train_dataset=None):
            if not grouped:
                return super()._get_train_sampler(train_dataset)

            data = train_dataset if train_dataset is not None else self.train_dataset
            lengths = [len(ids) for ids in data["input_ids"]]
            batch = self.args.per_device_train_batch_size * max(1, self.args.world_size)
            return ShuffledLengthGroups(lengths, batch, self.args.seed)

        def create_optimizer(self, *args, **kwargs):
            # transformers 5.0 calls it without arguments, later releases with the model
            optimizer = super().create_optimizer(*args, **kwargs)
            if head_lr is not None:
                model = args[0] if args else kwargs.get("model")
                split_head_groups(optimizer, head_parameters(model or self.model), head_lr)
            return optimizer

    return BertkitTrainer


def head_parameters(model) -> set[int]:
    """ids of the parameters outside the pretrained base model: the task head."""
    if hasattr(model, "get_base_model"):  # a peft model (train.adapter): its head, by the inner model's names
        model = model.get_base_model()
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


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def gpu_settings(cfg: Config, precision: str) -> dict:
    """What training on a CUDA GPU adds to the Trainer's arguments (none of it on a CPU): AdamW's
    fused kernel; the batches' memory pinned, and kept by persistent workers when there are any;
    the Trainer's own NaN filter off, since it reads every step's loss on the host (a wait for the
    GPU each step) and the `DivergenceGuard` stops a run whose loss is not finite anyway (except
    under fp16, whose loss scaler reads every step: there it stays). `train.compile` asks for
    torch.compile, off by default: on an H100 a bare loop compiled with it had not finished 500
    BERT-base steps after 110 s, which it ran in about 18 s eager; compiling pays only on long runs
    (docs/benchmarks.md, GPU)."""
    if not _cuda():
        return {"use_cpu": True, "dataloader_pin_memory": False}
    settings = {"optim": "adamw_torch_fused", "dataloader_pin_memory": True}
    settings["logging_nan_inf_filter"] = precision == "fp16"
    if cfg.train.dataloader_workers:
        settings["dataloader_persistent_workers"] = True
    if cfg.train.compile:
        settings["torch_compile"] = True
    return settings


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
        # Without a GPU, say so (use_cpu): accelerate then sets up multi-process CPU training
        # (gloo) when launched by torchrun or `accelerate launch`.
        **gpu_settings(cfg, precision),
    )
