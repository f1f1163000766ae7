"""Text classification: single texts or pairs; single-label, multi-label or regression.

Everything particular to classification lives here: label discovery and encoding, the three
truncation modes, class weights, metrics and the shape of a prediction record.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator

import numpy as np

from bertkit import data as data_mod
from bertkit import metrics, models, tokenization
from bertkit.config import Config, DataSource, load_config
from bertkit.data.readers import place_of, text_value
from bertkit.errors import BertkitError
from bertkit.inference import chunks, empty_record, forward, sigmoid, softmax
from bertkit.tasks.base import Task

SINGLE, MULTI, REGRESSION = "single_label", "multi_label", "regression"
HF_PROBLEM = {
    SINGLE: "single_label_classification",
    MULTI: "multi_label_classification",
    REGRESSION: "regression",
}
METRIC_MODULE = {SINGLE: "classification", MULTI: "multilabel", REGRESSION: "regression"}
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

    # ------------------------------------------------------------ data and labels

    def load(self, cfg: Config):
        if cfg.data.text_pair_column and cfg.classify.truncation == "head+tail":
            raise BertkitError(
                "classify.truncation: head+tail works on single texts; with data.text_pair_column use head or tail"
            )
        column, separator = cfg.data.label_column, cfg.data.label_separator

        def classes(train) -> list:  # the automatic validation split keeps every class's share
            values = train[column]
            _check_finite(values, data_mod.places(train, "train"), column)
            problem = cfg.classify.problem_type
            if problem == REGRESSION or (problem == "auto" and _guess_problem(values, separator) == REGRESSION):
                return [0] * len(values)
            return [str(g[0]) if g else "" for g in _split_multi(values, separator)]

        return data_mod.load_splits(cfg, stratify=classes)

    def setup(self, ds, cfg: Config) -> dict:
        """What the model and the bundle need to know: problem type and label names."""
        values = ds["train"][cfg.data.label_column]
        places = data_mod.places(ds["train"], "train")
        problem = cfg.classify.problem_type
        _check_finite(values, places, cfg.data.label_column)
        if problem == "auto":
            problem = _guess_problem(values, cfg.data.label_separator)
        if problem == REGRESSION:
            data_mod.as_numbers(values, places)
            labels = ["score"]
        elif cfg.data.labels:
            labels = [str(x) for x in cfg.data.labels]
        else:
            seen = _split_multi(values, cfg.data.label_separator) if problem == MULTI else values
            if problem == MULTI:
                flat = [v for group in seen for v in group]
                flat_places = [w for group, w in zip(seen, places, strict=True) for _ in group]
            else:
                flat, flat_places = list(seen), places
            labels = _ordered_labels(flat, flat_places, cfg.data.label_column)
        if problem != REGRESSION and len(labels) < 2 and problem == SINGLE:
            raise BertkitError(f"the training data has only one label ({labels}); classification needs at least two")
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
            "text_pair_column": cfg.data.text_pair_column,
            "label_column": cfg.data.label_column,
            "label_separator": cfg.data.label_separator,
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
        _check_finite(values, places, info.get("label_column") or "label")
        index = {name: i for i, name in enumerate(labels)}
        given = info.get("labels_given", False)
        if problem == MULTI:
            out = []
            for i, group in enumerate(_split_multi(values, info.get("label_separator"))):
                row = [0.0] * len(labels)
                for name in group:
                    if name not in index:
                        _unknown_label(name, labels, places[i], given)
                    row[index[name]] = 1.0
                out.append(row)
            return out
        out = []
        for i, v in enumerate(values):
            name = _label_name(v)
            if v is None or name == "":
                raise BertkitError(f"{places[i]}: the example has no label; label every example")
            if name not in index:
                _unknown_label(name, labels, places[i], given)
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

    def best_metric(self, info: dict) -> str:
        return BEST_METRIC[info["problem_type"]]

    def metric_names(self, info: dict) -> list[str]:
        """The numbers scoring reports (any can be train.metric_for_best_model)."""
        return METRIC_NAMES[info["problem_type"]]

    def loss(self, info: dict, cfg: Config, train):
        """A class-weighted loss when the config asks for one (single-label only), else None."""
        weights = cfg.classify.class_weights
        if weights is None:
            return None
        if info["problem_type"] != SINGLE:
            raise BertkitError("classify.class_weights: only for single-label classification")
        n = len(info["labels"])
        if weights == "balanced":
            train_labels = list(train["labels"])
            counts = Counter(train_labels)
            weights = [len(train_labels) / (n * counts[i]) if counts[i] else 0.0 for i in range(n)]
        elif len(weights) != n:
            raise BertkitError(f"classify.class_weights: {len(weights)} weights for {n} labels {info['labels']}")
        import torch

        tensor = torch.tensor(weights, dtype=torch.float)

        def weighted_loss(outputs, labels, num_items_in_batch=None):
            logits = outputs.logits
            return torch.nn.functional.cross_entropy(
                logits.view(-1, logits.size(-1)), labels.view(-1), weight=tensor.to(logits.device)
            )

        return weighted_loss

    def metric_fn(self, info: dict, features, examples):
        """Full metrics (per class, confusion matrix) of a Trainer prediction on `features`."""
        return lambda prediction: self.score(prediction.predictions, prediction.label_ids, info)

    def score(self, logits, references, info: dict) -> dict:
        """Full metrics (per class, confusion matrix) from logits and encoded references."""
        logits = np.asarray(logits[0] if isinstance(logits, tuple) else logits)
        problem = info["problem_type"]
        module = metrics.load(METRIC_MODULE[problem])
        if problem == REGRESSION:
            return module.compute(predictions=logits.reshape(-1), references=np.asarray(references).reshape(-1))
        if problem == MULTI:
            predicted = (sigmoid(logits) > info["threshold"]).astype(int)
            return module.compute(
                predictions=predicted, references=np.asarray(references).astype(int), label_names=info["labels"]
            )
        return module.compute(
            predictions=logits.argmax(-1), references=np.asarray(references), label_names=info["labels"]
        )

    # ------------------------------------------------------------ inference

    def evaluate(self, model, tokenizer, info: dict, data: str, options: dict) -> dict:
        """Full metrics of `model` on the labelled file `data` (`bertkit evaluate`)."""
        info = {**info, **{k: v for k, v in options.items() if v and k.endswith("_column")}}
        if not info.get("labels") and info.get("problem_type") != REGRESSION:
            raise BertkitError("the model has no label names, so its predictions cannot be scored")
        cfg = load_config(None, task=self.name)
        cfg.data.text_column = info.get("text_column") or "text"
        cfg.data.label_column = info.get("label_column") or "label"
        ds = data_mod.load_source(DataSource(path=data, format=options.get("data_format")), cfg)
        columns = {
            "text_column": cfg.data.text_column,
            "text_pair_column": info.get("text_pair_column"),
            "label_column": cfg.data.label_column,
        }
        data_mod.require_columns(ds, columns, data)
        references = self.encode_labels(ds[cfg.data.label_column], info, data_mod.places(ds, data))
        features = _rows(encode_texts(tokenizer, ds, {**info, "text_column": cfg.data.text_column}))
        logits = forward(model, tokenizer, features, options.get("batch_size", 32))
        return self.score(np.stack(logits), references, info)

    def predict(self, model, tokenizer, info: dict, records: Iterable[dict], options: dict) -> Iterator[dict]:
        """One output record per input record, in input order."""
        text_column = options.get("text_column") or info.get("text_column") or "text"
        pair_column = options.get("text_pair_column") or info.get("text_pair_column")
        threshold = options.get("threshold") or info.get("threshold", 0.5)
        windows = options.get("long_text") == "windows"
        batch_size = options.get("batch_size", 32)
        seen = 0
        for chunk in chunks(records, options.get("chunk_size", 1024)):
            texts = [_text_of(r, text_column, seen + i + 1) for i, r in enumerate(chunk)]
            pairs = (
                [_text_of(r, pair_column, seen + i + 1, "--text-pair-column") for i, r in enumerate(chunk)]
                if pair_column
                else None
            )
            seen += len(chunk)
            if windows and pairs is None:
                feats, owner = window_features(tokenizer, texts, info, options.get("stride"))
            else:
                feats = _rows(encode_columns(tokenizer, texts, pairs, info))
                owner = list(range(len(texts)))
            grouped: list[list] = [[] for _ in chunk]
            for index, row in zip(owner, forward(model, tokenizer, feats, batch_size), strict=True):
                grouped[index].append(row)
            for record, mine in zip(chunk, grouped, strict=True):
                yield self.describe(record, text_column, pair_column, mine, info, threshold, windows and pairs is None)

    def is_empty(self, record: dict, info: dict, options: dict) -> bool:
        """A text (and its pair, if any) with nothing in it."""
        from bertkit.prediction import blank

        columns = [options.get("text_column") or info.get("text_column") or "text"]
        columns += [c for c in [options.get("text_pair_column") or info.get("text_pair_column")] if c]
        return all(c in record for c in columns) and all(blank(record[c]) for c in columns)

    def empty_result(self, model, record: dict, info: dict, options: dict) -> dict:
        text_column = options.get("text_column") or info.get("text_column") or "text"
        pair_column = options.get("text_pair_column") or info.get("text_pair_column")
        fields = {"text_pair": record.get(pair_column)} if pair_column else {}
        if options.get("long_text") == "windows" and not pair_column:
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


def encode_texts(tokenizer, split, info: dict) -> dict:
    texts = [text_value(t, None, info["text_column"]) for t in split[info["text_column"]]]
    pair_column = info.get("text_pair_column")
    pairs = [text_value(t, None, pair_column) for t in split[pair_column]] if pair_column else None
    return encode_columns(tokenizer, texts, pairs, info)


def encode_columns(tokenizer, texts: list[str], pairs: list[str] | None, info: dict) -> dict:
    """Token ids for each text (or pair), cut to max_length as `info['truncation']` says."""
    max_length, mode = info["max_length"], info.get("truncation", "head")
    if pairs is not None or mode == "head":
        tokenizer.truncation_side = "left" if mode == "tail" else "right"
        args = (texts, pairs) if pairs is not None else (texts,)
        return dict(tokenizer(*args, truncation=True, max_length=max_length))
    budget = max_length - tokenization.special_budget(tokenizer)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    rows = [tokenization.wrap(tokenizer, tokenization.keep(x, budget, mode, info.get("head_tokens"))) for x in ids]
    return {key: [row[key] for row in rows] for key in rows[0]} if rows else {}


def window_features(tokenizer, texts: list[str], info: dict, stride: int | None) -> tuple[list[dict], list[int]]:
    """Every text cut into overlapping windows of max_length; returns features and their text index."""
    budget = info["max_length"] - tokenization.special_budget(tokenizer)
    stride = budget // 4 if stride is None else stride
    if stride >= budget:
        raise BertkitError(f"--stride {stride} must be smaller than the window ({budget} tokens)")
    features, owner = [], []
    for index, ids in enumerate(tokenizer(texts, add_special_tokens=False)["input_ids"]):
        for piece in tokenization.windows(ids, budget, stride):
            features.append(tokenization.wrap(tokenizer, piece))
            owner.append(index)
    return features, owner


def _rows(columns: dict) -> list[dict]:
    keys = list(columns)
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns.values(), strict=True)]


# ---------------------------------------------------------------- labels


def _text_of(record: dict, column: str, number: int, option: str = "--text-column") -> str:
    if column not in record:
        from bertkit.data.readers import kind_hint

        raise BertkitError(
            f"{place_of(record, number)}: no '{column}' field (fields: {', '.join(record)}); set {option}."
            + kind_hint(record)
        )
    return text_value(record[column], place_of(record, number), column)


def _label_name(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _guess_problem(values: list, separator: str | None) -> str:
    if separator or any(isinstance(v, list) for v in values):
        return MULTI
    numbers = [_number(v) for v in values]
    if all(n is not None for n in numbers) and any(not float(n).is_integer() for n in numbers):
        return REGRESSION
    return SINGLE


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _split_multi(values: list, separator: str | None) -> list[list[str]]:
    out = []
    for v in values:
        if isinstance(v, list):
            out.append([_label_name(x) for x in v])
        elif v is None or str(v).strip() == "":
            out.append([])
        else:
            out.append([_label_name(x) for x in str(v).split(separator)] if separator else [_label_name(v)])
    return out


def _ordered_labels(values: list, places: list[str], column: str) -> list[str]:
    for value, place in zip(values, places, strict=True):
        if value is None or str(value).strip() == "":
            raise BertkitError(f"{place}: the example has an empty '{column}'; label every example")
    names = {_label_name(v) for v in values}
    numeric = all(_number(n) is not None for n in names)
    return sorted(names, key=(lambda n: float(n)) if numeric else None)


def _unknown_label(name: str, labels: list[str], place: str, given: bool) -> None:
    if given:
        raise BertkitError(
            f"{place}: label '{name}' is not in data.labels ({', '.join(labels)}). Add it to data.labels, "
            "or fix the data."
        )
    raise BertkitError(
        f"{place}: label '{name}' does not occur in the training data "
        f"(known labels: {', '.join(labels)}). Fix the data, or list every label in data.labels."
    )


NON_FINITE = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


def _check_finite(values: list, places: list[str], column: str) -> None:
    """NaN or infinity among labels would silently turn into a class of its own (or NaN weights)."""
    for value, place in zip(values, places, strict=True):
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, float) and not math.isfinite(one) or str(one).strip().lower() in NON_FINITE:
                raise BertkitError(
                    f"{place}: '{column}' is {one!r}, not a finite number or a label name; fix or remove this example"
                )
