"""The classify task: the contract's methods (bertkit/tasks/base.py), over the package's helpers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import losses, models
from bertkit.core.data.records import blank
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, empty_record, forward, sigmoid, softmax
from bertkit.core.run_info import RESTORE, RunInfo, check_labels, shown
from bertkit.tasks.base import Task
from bertkit.tasks.classify import contrastive, strategy
from bertkit.tasks.classify.encoding import (
    encode_columns,
    encode_texts,
    feature_rows,
    text_at,
    text_of,
    window_features,
)
from bertkit.tasks.classify.explaining import EXPLAINER
from bertkit.tasks.classify.label_pairs import can_pair
from bertkit.tasks.classify.labels import (
    MULTI,
    PROBLEM_TYPES,
    REGRESSION,
    SINGLE,
    check_finite,
    given_labels,
    guess_problem,
    label_name,
    ordered_labels,
    split_multi,
    unknown_label,
)
from bertkit.tasks.classify.scored import scored
from bertkit.tasks.options import EvaluateOptions, PredictOptions
from bertkit.tasks.scored import Scored

if TYPE_CHECKING:
    from bertkit.config import Config

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


class ClassifyTask(Task):
    name = "classify"
    auto_model = "AutoModelForSequenceClassification"

    def explainer(self):

        return EXPLAINER

    # ------------------------------------------------------------ data and labels

    def load(self, cfg: Config):
        if cfg.data.text_pair_column and cfg.classify.truncation == "head+tail":
            raise BertkitError(
                "classify.truncation: head+tail works on single texts; with data.text_pair_column use head or tail"
            )
        column, separator = cfg.data.label_column, cfg.data.label_separator

        def classes(train) -> list:  # the automatic validation split keeps every class's share
            values = train[column]
            check_finite(values, data_mod.places(train, "train"), column, separator)
            problem = cfg.classify.problem_type
            if problem == REGRESSION or (problem == "auto" and guess_problem(values, separator) == REGRESSION):
                return [0] * len(values)
            return [str(g[0]) if g else "" for g in split_multi(values, separator)]

        return data_mod.load_splits(cfg, stratify=classes)

    def setup(self, ds, cfg: Config) -> dict:
        """What the model and the bundle need to know: problem type and label names."""
        values = data_mod.column(ds["train"], cfg.data.label_column)
        places = data_mod.places(ds["train"], "train")
        problem = cfg.classify.problem_type
        check_finite(values, places, cfg.data.label_column, cfg.data.label_separator)
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
        groups = split_multi(values, cfg.data.label_separator) if problem == MULTI else [[v] for v in values]
        counted = sum(map(len, groups))  # an example once for each of its labels
        pairable = problem == REGRESSION or can_pair([frozenset(map(label_name, g)) for g in groups])
        route, why = strategy.choose(cfg, problem, len(labels), counted, pairable)
        strategy.say(route, why)
        strategy.warn_unused(cfg, route)
        return {
            "task": self.name,
            "problem_type": problem,
            "labels": labels,
            "labels_given": bool(cfg.data.labels) and problem != REGRESSION,
            "max_length": cfg.model.max_length,
            "truncation": cfg.classify.truncation,
            "head_tokens": cfg.classify.head_tokens,
            "threshold": cfg.classify.threshold,
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
            labels = self.encode_labels(split[info["label_column"]], info, data_mod.places(split, role))
            features = encode_texts(tokenizer, split, info)
            features["labels"] = labels
            prepared[role] = datasets.Dataset.from_dict(features)
        return datasets.DatasetDict(prepared)

    def encode_labels(self, values: list, info: dict, places: list[str] | str) -> list:
        """Label ids (or rows of 0/1, or numbers); `places` says where each example is."""
        problem, labels = info["problem_type"], info["labels"]
        if isinstance(places, str):  # a split's name
            places = [f"{places} data, example {i + 1}" for i in range(len(values))]
        if problem == REGRESSION:
            return data_mod.as_numbers(values, places)
        check_finite(values, places, info.get("label_column") or "label", info.get("label_separator"))
        index = {name: i for i, name in enumerate(labels)}
        given = info.get("labels_given", False)
        if problem == MULTI:
            out = []
            for i, group in enumerate(split_multi(values, info.get("label_separator"))):
                row = [0.0] * len(labels)
                for name in group:
                    if name not in index:
                        unknown_label(name, labels, places[i], given)
                    row[index[name]] = 1.0
                out.append(row)
            return out
        out = []
        for i, v in enumerate(values):
            name = label_name(v)
            if v is None or name == "":
                raise BertkitError(f"{places[i]}: the example has no label; label every example")
            if name not in index:
                unknown_label(name, labels, places[i], given)
            out.append(index[name])
        return out

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
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

    def fit(self, model, tokenizer, features: dict, info: RunInfo, cfg: Config, log_history: list) -> dict | None:
        """The contrastive route (strategy.py, contrastive.py); None: the Trainer fine-tunes."""
        if not self.trains_itself(info):
            return None

        settings = strategy.ContrastiveSettings.of(cfg)
        return contrastive.fit(model, tokenizer, features["train"], info, settings, log_history)

    def python_usage(self, where: str, info: dict | None = None) -> list[str]:
        if not (info or {}).get("training", {}).get("contrastive"):
            return super().python_usage(where, info)
        # the head reads the pooled sentence vector (bertkit/core/pooled_head.py), which plain
        # transformers would not know to compute
        return [
            "import torch",
            "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
            "from bertkit.core.pooled_head import restore  # the head reads the mean of the tokens",
            f'model = restore(AutoModelForSequenceClassification.from_pretrained("{where}"))',
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
            "with torch.no_grad():",
            '    logits = model(**tokenizer(["a text"], return_tensors="pt")).logits',
            "scores = " + ("logits.sigmoid()" if info.get("problem_type") == MULTI else "logits.softmax(-1)"),
        ]

    def best_metric(self, info: dict) -> str:
        return BEST_METRIC[info["problem_type"]]

    def metric_names(self, info: dict) -> list[str]:
        """The numbers scoring reports (any can be train.metric_for_best_model)."""
        return METRIC_NAMES[info["problem_type"]]

    def loss(self, info: dict, cfg: Config, train):
        """Class weights and / or focal loss (bertkit/core/losses.py) when the config asks, else None:
        per class for single-label, per label's positives (BCE's pos_weight) for multi-label."""

        spec, kind, gamma = cfg.classify.class_weights, cfg.classify.loss, cfg.classify.focal_gamma
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

    # ------------------------------------------------------------ inspecting the data

    def inspect_view(self, split, cfg: Config, info: RunInfo):
        """Labels as the task reads them: each of a multi-label example's, none for regression."""
        view = super().inspect_view(split, cfg, info)
        if info["problem_type"] == REGRESSION:
            view.labels = None
        elif info["problem_type"] == MULTI:
            view.labels = split_multi(data_mod.column(split, cfg.data.label_column), cfg.data.label_separator)
        return view

    def inspect_checks(self, ds, tokenizer, info: RunInfo, cfg: Config):
        """Every split's labels encoded as `prepare` will: a label of validation or test that the
        training data (or data.labels) does not have stops training, so it stops `inspect` too."""
        for role, split in ds.items():
            self.encode_labels(split[info["label_column"]], info, data_mod.places(split, role))
        return {}, []

    # ------------------------------------------------------------ inference

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """Full metrics of `model` on the labelled file `data` (`bertkit evaluate`)."""
        return self.evaluate_examples(model, tokenizer, info, data, options).score()

    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Scored:
        """The model's prediction for each example of the labelled file `data`."""
        info = {**info, **options.column_options()}
        if not info.get("labels") and info.get("problem_type") != REGRESSION:
            raise BertkitError("the model has no label names, so its predictions cannot be scored")
        ds, references = self.labelled(data, info, options)
        text_column = info.get("text_column") or "text"
        features = feature_rows(encode_texts(tokenizer, ds, {**info, "text_column": text_column}))
        logits = forward(model, tokenizer, features, options.batch_size)
        return scored(np.stack(logits), references, info)

    def labelled(self, data: str, info: dict, options: EvaluateOptions):
        """The examples of the labelled file `data` (sampled as asked) and their encoded labels."""
        text_column = info.get("text_column") or "text"
        label_column = info.get("label_column") or "label"
        ds = data_mod.load_source(options.source(data), text_column, label_column, options.text_join(info))
        ds = options.sampled(ds)
        columns = {
            "text_column": text_column,
            "text_pair_column": info.get("text_pair_column"),
            "label_column": label_column,
        }
        data_mod.require_columns(ds, columns, data, options.column_settings())
        return ds, self.encode_labels(ds[label_column], info, data_mod.places(ds, data))

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """One output record per input record, in input order."""
        text_column = options.text_field(info)
        pair_column = options.pair_field(info)
        threshold = options.threshold or info.get("threshold", 0.5)
        windows = options.long_text == "windows"
        batch_size = options.batch_size
        seen = 0
        for chunk in chunks(records, self.records_per_pass):
            texts = [text_of(r, text_column, seen + i + 1) for i, r in enumerate(chunk)]
            pairs = (
                [text_of(r, pair_column, seen + i + 1, "--text-pair-column") for i, r in enumerate(chunk)]
                if pair_column
                else None
            )
            seen += len(chunk)
            if windows and pairs is None:
                feats, owner = window_features(tokenizer, texts, info, options.stride)
            else:
                feats = feature_rows(encode_columns(tokenizer, texts, pairs, info))
                owner = list(range(len(texts)))
            grouped: list[list] = [[] for _ in chunk]
            for index, row in zip(owner, forward(model, tokenizer, feats, batch_size), strict=True):
                grouped[index].append(row)
            for record, mine in zip(chunk, grouped, strict=True):
                yield self.describe(record, text_column, pair_column, mine, info, threshold, windows and pairs is None)

    def data_format(self, source) -> str:
        return data_mod.table_format(source)

    def gold_fields(self, info: RunInfo) -> list[str]:
        return [info.get("label_column") or "label"]

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """The text (and the pair's second text) there, and text."""
        text_at(record, options.text_field(info), where)
        pair_column = options.pair_field(info)
        if pair_column:
            text_at(record, pair_column, where, "--text-pair-column")

    def check_info(self, root, file, info: dict, complete: bool) -> None:
        check_labels(root, file, info)
        if info.get("problem_type") not in PROBLEM_TYPES:
            raise BertkitError(
                f"{file}: 'problem_type' must be one of {', '.join(PROBLEM_TYPES)}, not "
                f"{shown(info.get('problem_type'))}; {RESTORE}"
            )

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """A text (and its pair, if any) with nothing in it."""
        columns = [options.text_field(info)]
        columns += [c for c in [options.pair_field(info)] if c]
        return all(c in record for c in columns) and all(blank(record[c]) for c in columns)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        text_column = options.text_field(info)
        pair_column = options.pair_field(info)
        fields = {"text_pair": record.get(pair_column)} if pair_column else {}
        if options.long_text == "windows" and not pair_column:
            fields["windows"] = 0
        if info["problem_type"] == REGRESSION:
            return empty_record(record, text_column, **fields, score=None)
        found = {"labels": []} if info["problem_type"] == MULTI else {"label": None, "score": None}
        return empty_record(record, text_column, **fields, **found, scores=dict.fromkeys(info["labels"]))

    def describe(self, record, text_column, pair_column, logits: list, info: dict, threshold, windows=False) -> dict:
        out = {k: record[k] for k in ("id",) if k in record}
        out["text"] = record.get(text_column)
        if pair_column:
            out["text_pair"] = record.get(pair_column)
        problem, labels = info["problem_type"], info["labels"]
        stacked = np.stack(logits)
        if problem == REGRESSION:
            out["score"] = round(float(stacked.reshape(-1).mean()), 6)
            return out
        if problem == MULTI:
            probs = sigmoid(stacked).mean(axis=0)
            out["labels"] = [labels[i] for i in np.flatnonzero(probs > threshold)]
        else:
            probs = softmax(stacked).mean(axis=0)
            best = int(probs.argmax())
            out["label"], out["score"] = labels[best], round(float(probs[best]), 6)
        out["scores"] = {name: round(float(p), 6) for name, p in zip(labels, probs, strict=True)}
        if windows:  # every record says how many windows it took, so table outputs keep the column
            out["windows"] = len(logits)
        return out


TASK = ClassifyTask()


# ---------------------------------------------------------------- tokenization


# ---------------------------------------------------------------- labels
