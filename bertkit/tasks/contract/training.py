"""The training part of the task contract (`Training`): what `training.train` asks of a task, in
the order it asks. A task's training part subclasses it, implements every method marked
`abstractmethod` (Python refuses to make a part that lacks one, naming it) and overrides an
optional hook only where its default does not fit.

The path of a run: `load` → `setup` → `metric_names` / `best_metric` → `new_tokenizer` →
`tokenizer_facts` → `prepare` → `build_model` → `collator`, `loss`, `reduce_logits`, `metric_fn`
(the Trainer's parts) → (`scores_before_training`: scored once before) → `fit` or the Trainer →
`compare` → `calibrate` (when `calibrates`: the scored splits' predictions, then scored again) →
`saved_model` (what the bundle saves).

`info` is the run's description (`bertkit.core.run_info.RunInfo`, read-only): what `setup` returns
plus what `tokenizer_facts` adds, saved as the bundle's bertkit.json.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig
    from bertkit.core.run_info import RunInfo


def pad_multiple(cfg: RunConfig) -> int | None:
    """Batches are padded to a multiple of this (train.pad_to_multiple_of; 8 on a GPU, where
    tensor cores want it; none on a CPU)."""
    import torch

    return cfg.train.pad_to_multiple_of or (8 if torch.cuda.is_available() else None)


class Training(ABC):
    can_stream: bool = False  # whether `load` honours data.streaming (a lazily read training split)
    scores_before_training = False  # score the validation data once before training (see `compare`)
    reduce_logits = None  # the Trainer's preprocess_logits_for_metrics, when logits are too big to keep

    # ------------------------------------------------------------ required

    @abstractmethod
    def load(self, cfg: RunConfig) -> dict:
        """The splits as `datasets.Dataset`s: {"train": ..., "validation": ..., "test"?: ...}."""

    @abstractmethod
    def setup(self, ds: dict, cfg: RunConfig) -> dict:
        """The run's description (`info`, saved as bertkit.json): labels, lengths, settings.
        Must hold "task" and "max_length"."""

    @abstractmethod
    def prepare(self, ds: dict, tokenizer, info: dict) -> dict:
        """The splits turned into model features (token ids, labels)."""

    @abstractmethod
    def build_model(self, source: str | None, info: dict, cfg: RunConfig):
        """The model to train, from `source` (a path or hub id; None when `starts_from_scratch`)."""

    @abstractmethod
    def metric_names(self, info: dict) -> list[str]:
        """The metrics `metric_fn` reports (train.metric_for_best_model is checked against them)."""

    @abstractmethod
    def best_metric(self, info: dict) -> str:
        """The metric that picks the best checkpoint when the config does not say."""

    @abstractmethod
    def metric_fn(self, info: dict, features, examples) -> Callable[[Any], dict]:
        """The Trainer's compute_metrics for one split (`features` prepared from `examples`)."""

    # ------------------------------------------------------------ optional: the default most tasks take

    def starts_from_scratch(self, cfg: RunConfig) -> bool:
        """True when the model is built from a config, not loaded (no model.name to resolve)."""
        return False

    def inputs(self, cfg: RunConfig) -> list[str]:
        """Paths a run reads besides model.name, model.tokenizer and the data files (distill: its
        teacher), which an output with --overwrite must never delete."""
        return []

    def lengths(self, cfg: RunConfig) -> dict[str, int]:
        """The lengths in tokens a run reads, by config key; each must fit the model's positions."""
        return {"model.max_length": cfg.model.max_length}

    def new_tokenizer(self, ds: dict, cfg: RunConfig):
        """A tokenizer learnt from the data, or None to load model.tokenizer / model.name's."""
        return None

    def tokenizer_facts(self, tokenizer, info: RunInfo) -> dict:
        """What the run's description gains once the tokenizer is known (a vocabulary size, a
        pad id), merged into `info` once, before `prepare`; may refuse a tokenizer the task cannot
        use. The description is fixed from then on."""
        return {}

    def collator(self, tokenizer, cfg: RunConfig):
        """Batches of `prepare`'s features: padded to the longest row of each batch."""
        from transformers import DataCollatorWithPadding

        return DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_multiple(cfg))

    def loss(self, info: dict, cfg: RunConfig, train) -> Callable | None:
        """The Trainer's compute_loss_func, or None for the model's own loss. Called as
        `f(outputs, labels, num_items_in_batch=None)`; the Trainer does not divide its result by
        the gradient accumulation steps, so it must be normalised by `num_items_in_batch` (the
        step's labels that are not -100): see bertkit/core/losses.py, and `losses.step_share` for a
        loss computed as a micro-batch mean."""
        return None

    def trains_itself(self, info: RunInfo) -> bool:
        """Does `fit` train this run without the Trainer (so its learning-rate settings are unused)."""
        return False

    def fit(self, model, tokenizer, features: dict, info: RunInfo, cfg: RunConfig, log_history: list) -> dict | None:
        """Train `model` without the Trainer, or None to let the Trainer train it (every task's
        default; classify's contrastive route trains its own way, `trains_itself`). Returns what
        bertkit.json records of the training; `log_history` takes the losses the training curves plot."""
        return None

    def compare(self, before: dict, after: dict) -> dict:
        """Headline numbers from the scores before and after training (when
        `scores_before_training`); they lead metrics.json and the model card."""
        return {}

    def calibrates(self, info: RunInfo, cfg: RunConfig) -> bool:
        """Does `calibrate` want the trained model's predictions on the scored splits (kept from
        scoring, so nothing is predicted twice)."""
        return False

    def calibrate(self, predictions: dict, info: RunInfo, cfg: RunConfig) -> dict:
        """What the run's description gains from the trained model's predictions after training
        (`predictions`: {"validation": the Trainer's prediction, "test"?: ...}): classify's fitted
        temperature. Every scored split is then scored again with the description it gives; {}
        leaves the description and the scores as they are."""
        return {}

    def saved_model(self, model, info: dict):
        """What the bundle saves, when it is not the trained module as it is (an encoder inside a
        wrapper, a model with settings changed back); None saves the trained module."""
        return None

    def data_warnings(self, info: RunInfo) -> list[str]:
        """What reading the data found and changed that the user should know (NER's repaired
        tags), from the run's description: training prints them, `inspect` reports them."""
        return []
