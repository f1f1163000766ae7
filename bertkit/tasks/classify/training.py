"""How classify trains: reading the labels (single, multi-label, regression), the route
(fine-tuning or the contrastive few-shot route), the model, the loss and the metrics."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import losses, models
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console
from bertkit.core.run_info import RunInfo
from bertkit.tasks.classify import calibration, contrastive, strategy
from bertkit.tasks.classify.encoding import encode_texts
from bertkit.tasks.classify.label_pairs import can_pair
from bertkit.tasks.classify.labels import (
    MULTI,
    REGRESSION,
    SINGLE,
    check_label_values,
    encode_labels,
    given_labels,
    guess_problem,
    label_name,
    ordered_labels,
    split_multi,
)
from bertkit.tasks.classify.scored import scored
from bertkit.tasks.classify.settings import ClassifyConfig
from bertkit.tasks.contract import Training

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


HF_PROBLEM = {
    SINGLE: "single_label_classification",
    MULTI: "multi_label_classification",
    REGRESSION: "regression",
}
BEST_METRIC = {SINGLE: "f1_macro", MULTI: "f1_micro", REGRESSION: "spearman"}
_AVERAGED = [f"{m}_{a}" for a in ("macro", "weighted", "micro") for m in ("precision", "recall", "f1")]
METRIC_NAMES = {
    SINGLE: ["accuracy", *[n for n in _AVERAGED if not n.endswith("micro")]],
    MULTI: ["subset_accuracy", *[n for n in _AVERAGED if not n.endswith("weighted")]],
    REGRESSION: ["mse", "rmse", "mae", "pearson", "spearman"],
}


class ClassifyTraining(Training):
    def load(self, cfg: RunConfig):
        if cfg.data.text_pair_column and cfg.section(ClassifyConfig).truncation == "head+tail":
            raise BertkitError(
                "classify.truncation: head+tail works on single texts; with data.text_pair_column use head or tail"
            )
        column, separator = cfg.data.label_column, cfg.data.label_separator

        def classes(train) -> list:  # the automatic validation split keeps every class's share
            values = train[column]
            check_label_values(values, data_mod.places(train, "train"), column, separator)
            problem = cfg.section(ClassifyConfig).problem_type
            if problem == REGRESSION or (problem == "auto" and guess_problem(values, separator) == REGRESSION):
                return [0] * len(values)
            return [str(g[0]) if g else "" for g in split_multi(values, separator)]

        return data_mod.load_splits(cfg, stratify=classes)

    def setup(self, ds, cfg: RunConfig) -> dict:
        """What the model and the bundle need to know: problem type and label names."""
        values = data_mod.column(ds["train"], cfg.data.label_column)
        places = data_mod.places(ds["train"], "train")
        problem = cfg.section(ClassifyConfig).problem_type
        check_label_values(values, places, cfg.data.label_column, cfg.data.label_separator)
        if problem == "auto":
            problem = guess_problem(values, cfg.data.label_separator)
        if problem == REGRESSION:
            data_mod.as_numbers(values, places)
            labels = ["score"]
        elif cfg.data.labels:
            labels = given_labels(cfg.data.labels)
        else:
            seen = split_multi(values, cfg.data.label_separator) if problem == MULTI else values
            if problem == MULTI:
                flat = [v for group in seen for v in group]
                flat_places = [w for group, w in zip(seen, places, strict=True) for _ in group]
            else:
                flat, flat_places = list(seen), places
            labels = ordered_labels(flat, flat_places, cfg.data.label_column)
        if problem != REGRESSION and len(labels) < 2 and problem == SINGLE:
            raise BertkitError(f"the training data has only one label ({labels}); classification needs at least two")
        named = values
        if cfg.data.max_train_samples and cfg.section(ClassifyConfig).strategy == "auto":
            # the route is decided on the data the user named, not on a sample of it: a quick try
            # (data.max_train_samples, `bertkit smoke`, `bertkit tune`) runs what the real run runs
            whole = cfg.model_copy(update={"data": cfg.data.model_copy(update={"max_train_samples": None})})
            named = data_mod.column(self.load(whole)["train"], cfg.data.label_column)
        groups = split_multi(named, cfg.data.label_separator) if problem == MULTI else [[v] for v in named]
        counted = sum(map(len, groups))  # an example once for each of its labels
        pairable = problem == REGRESSION or can_pair([frozenset(map(label_name, g)) for g in groups])
        route, why = strategy.choose(cfg, problem, len(labels), counted, pairable)
        if named is not values:
            why += f", in the training data before data.max_train_samples ({cfg.data.max_train_samples:,}) sampled it"
        strategy.say(route, why)
        strategy.warn_unused(cfg, route)
        return {
            "task": "classify",
            "problem_type": problem,
            "labels": labels,
            "labels_given": bool(cfg.data.labels) and problem != REGRESSION,
            "max_length": cfg.model.max_length,
            "truncation": cfg.section(ClassifyConfig).truncation,
            "head_tokens": cfg.section(ClassifyConfig).head_tokens,
            "threshold": cfg.section(ClassifyConfig).threshold,
            "text_column": cfg.data.text_column,
            "text_join": cfg.data.text_join,
            "text_pair_column": cfg.data.text_pair_column,
            "label_column": cfg.data.label_column,
            "label_separator": cfg.data.label_separator,
            "strategy": route,
        }

    def prepare(self, ds, tokenizer, info: dict):
        """Tokenize every split and encode its labels."""
        import datasets

        prepared = {}
        for role, split in ds.items():
            labels = encode_labels(split[info["label_column"]], info, data_mod.places(split, role))
            features = encode_texts(tokenizer, split, info)
            features["labels"] = labels
            prepared[role] = datasets.Dataset.from_dict(features)
        return datasets.DatasetDict(prepared)

    def build_model(self, source: str, info: dict, cfg: RunConfig):
        from transformers import AutoModelForSequenceClassification

        labels = info["labels"]
        kwargs = {"problem_type": HF_PROBLEM[info["problem_type"]], "num_labels": len(labels)}
        if info["problem_type"] != REGRESSION:
            kwargs["id2label"] = dict(enumerate(labels))
            kwargs["label2id"] = {name: i for i, name in enumerate(labels)}
        return models.load_weights(
            AutoModelForSequenceClassification, source, cfg, ignore_mismatched_sizes=True, **kwargs
        )

    def trains_itself(self, info: RunInfo) -> bool:
        return info.get("strategy") == strategy.CONTRASTIVE

    def fit(self, model, tokenizer, features: dict, info: RunInfo, cfg: RunConfig, log_history: list) -> dict | None:
        """The contrastive route (strategy.py, contrastive.py); None: the Trainer fine-tunes."""
        if not self.trains_itself(info):
            return None

        settings = strategy.ContrastiveSettings.of(cfg)
        return contrastive.fit(model, tokenizer, features["train"], info, settings, log_history)

    def calibrates(self, info: RunInfo, cfg: RunConfig) -> bool:
        """Classification's scores get a temperature unless classify.calibration is none."""
        wanted = cfg.section(ClassifyConfig).calibration == calibration.TEMPERATURE
        return wanted and info["problem_type"] != REGRESSION

    def calibrate(self, predictions: dict, info: RunInfo, cfg: RunConfig) -> dict:
        """The temperature fitted on the validation split's logits (calibration.py), said; too few
        validation examples: said, and the scores left as the softmax gives them."""
        validation = predictions.get("validation")
        count = 0 if validation is None else len(validation.label_ids)
        if count < calibration.MIN_EXAMPLES:
            why = f"{count} validation examples, fewer than the {calibration.MIN_EXAMPLES} a temperature needs"
            console.print(f"[yellow]warning:[/yellow] scores left uncalibrated: {why}")
            return {"calibration": {"method": calibration.NONE, "why": why}}
        logits = validation.predictions[0] if isinstance(validation.predictions, tuple) else validation.predictions
        found = calibration.fit(logits, validation.label_ids, info)
        if found.get("method") == calibration.NONE:
            console.print(f"[yellow]warning:[/yellow] scores left uncalibrated: {found['why']}")
            return {"calibration": found}
        console.print(f"calibrated the scores: {calibration.scale_of(found)}, fitted on {count:,} validation examples")
        for name, why in (found.get("left_as_is") or {}).items():
            console.print(f"[yellow]warning:[/yellow] label {name!r} keeps its scores as they are: {why}")
        if info["problem_type"] == MULTI and info.get("threshold") != 0.5:
            threshold = info.get("threshold")
            console.print(f"classify.threshold {threshold} applies to the calibrated scores: labels near it may "
                          "differ from the uncalibrated model's (the metrics are the calibrated model's)")  # fmt: skip
        return {"calibration": found}

    def best_metric(self, info: dict) -> str:
        return BEST_METRIC[info["problem_type"]]

    def metric_names(self, info: dict) -> list[str]:
        """The numbers scoring reports (any can be train.metric_for_best_model)."""
        return METRIC_NAMES[info["problem_type"]]

    def loss(self, info: dict, cfg: RunConfig, train):
        """Class weights and / or focal loss (bertkit/core/losses.py) when the config asks, else None:
        per class for single-label, per label's positives (BCE's pos_weight) for multi-label."""
        settings = cfg.section(ClassifyConfig)
        spec, kind, gamma = settings.class_weights, settings.loss, settings.focal_gamma
        if spec is None and kind == losses.CROSS_ENTROPY:
            return None
        problem, labels = info["problem_type"], info["labels"]
        if problem == REGRESSION:
            asked = "classify.class_weights" if spec is not None else "classify.loss: focal"
            raise BertkitError(
                f"{asked}: only for classification; a regression model learns scores with mean squared error. "
                "Remove it, or set classify.problem_type to single_label or multi_label"
            )
        weights = None
        if spec == "balanced" and problem == MULTI:
            rows = np.asarray(train["labels"], dtype=float).reshape(-1, len(labels))
            weights = losses.balanced_positive(rows.sum(axis=0).tolist(), len(rows))
        elif spec == "balanced":
            counts = Counter(train["labels"])
            weights = losses.balanced([counts[i] for i in range(len(labels))])
        elif spec is not None:
            weights = losses.resolve(spec, labels, "classify.class_weights")
        return losses.loss_function(kind, gamma, weights, labels, spec, multi_label=problem == MULTI)

    def metric_fn(self, info: dict, features, examples):
        """Full metrics (per class, confusion matrix) of a Trainer prediction on `features`."""
        return lambda prediction: self.score(prediction.predictions, prediction.label_ids, info)

    def score(self, logits, references, info: dict) -> dict:
        """Full metrics (per class, confusion matrix) from logits and encoded references."""
        return scored(logits, references, info).score()
