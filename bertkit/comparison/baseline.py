"""`bertkit compare --baseline tfidf`: TF-IDF (word 1- and 2-grams, sublinear term frequency) and
a logistic regression, trained on the training split a classify bundle was trained on (or a
file the user names) and scored on the same examples as the models, so the table shows what the
transformer buys over a linear model of words."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import numpy as np

from bertkit.config import config_class
from bertkit.core import data as data_mod
from bertkit.core.data.records import text_value
from bertkit.core.errors import BertkitError
from bertkit.core.japanese import split_words
from bertkit.tasks import get_task
from bertkit.tasks.classify.labels import SINGLE, encode_labels
from bertkit.tasks.classify.scored import scored

BASELINES = ("tfidf",)
NAME = "tfidf+logreg"


def check_baseline(name: str, task: str, info) -> None:
    if name not in BASELINES:
        raise BertkitError(f"--baseline {name}: unknown; the baseline bertkit trains is {', '.join(BASELINES)}")
    if task != "classify" or info.get("problem_type") != SINGLE:
        what = task if task != "classify" else f"{info.get('problem_type')} classification"
        raise BertkitError(f"--baseline tfidf is for single-label classification; these models do {what}")


def training_split(bundle, train_file: str | None, options):
    """The examples the baseline learns from: `train_file` when given, else the bundle's own
    training split, read again from its recorded config as training read it (validation share
    split off, samples and cleaning as configured)."""

    info = bundle.info
    if train_file:
        every = dataclasses.replace(options, max_samples=None, data_format=None)  # --max-samples is for --data
        return get_task("classify").evaluation.labelled(train_file, {**info, **options.column_options()}, every)
    config = info.get("config")
    source = (config or {}).get("data", {}).get("train") if isinstance(config, dict) else None
    if not source:
        raise BertkitError(
            f"--baseline tfidf: {bundle.path}/bertkit.json does not record its training data; "
            "give it with --baseline-train FILE"
        )
    cfg = config_class().model_validate(config)
    missing = [p for p in cfg.data.train.local_paths() if not Path(p).exists()]
    if cfg.data.train.hub or missing:
        where = f"{missing[0]} is gone" if missing else f"it came from the hub ({cfg.data.train.hub})"
        raise BertkitError(
            f"--baseline tfidf: the training data of {bundle.path} cannot be read again ({where}); "
            "give it with --baseline-train FILE"
        )
    task = get_task("classify")
    train = task.training.load(cfg)["train"]
    labels = encode_labels(train[info["label_column"]], info, data_mod.places(train, "train"))
    return train, labels


def texts_of(ds, info: dict) -> list[str]:
    """The text of each example, with its pair (if the model reads pairs) after a space."""

    column, pair = info.get("text_column") or "text", info.get("text_pair_column")
    texts = [text_value(t, None, column) for t in ds[column]]
    if pair:
        texts = [f"{t} {text_value(p, None, pair)}" for t, p in zip(texts, ds[pair], strict=True)]
    return texts


JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")  # kana and kanji


def word_splitter(texts: list[str]) -> dict:
    """TfidfVectorizer's words: scikit-learn's (runs of letters between spaces and punctuation),
    except for Japanese, written without spaces, where that makes a whole clause one "word" that
    no other text shares; there MeCab's words (the `ja` extra), as bertkit's Japanese models read."""
    if not any(JAPANESE.search(t) for t in texts[:1000]):
        return {}

    return {"tokenizer": split_words, "token_pattern": None, "lowercase": False}


def fit_and_score(bundle, data: str, train_file: str | None, options) -> tuple:
    """The baseline's per-example results on `data`, its size (coefficients) and texts per
    second (vectorising and predicting the scored texts)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression


    info = {**bundle.info, **options.column_options()}
    train, train_labels = training_split(bundle, train_file, options)
    if len(set(train_labels)) < 2:
        raise BertkitError("--baseline tfidf: the training data has fewer than two labels")
    texts = texts_of(train, info)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, **word_splitter(texts))
    model = LogisticRegression(max_iter=1000)
    model.fit(vectorizer.fit_transform(texts), train_labels)
    ds, references = get_task("classify").evaluation.labelled(data, info, options)
    start = time.perf_counter()
    probabilities = model.predict_proba(vectorizer.transform(texts_of(ds, info)))
    seconds = time.perf_counter() - start
    full = np.zeros((len(references), len(info["labels"])))
    full[:, model.classes_] = probabilities  # a label the training data lacks is never predicted
    parameters = int(model.coef_.size + model.intercept_.size)
    # as log-probabilities, the logits whose softmax gives them back; the bundle's temperature is its own
    log_probabilities = np.log(np.clip(full, 1e-12, None))
    results = scored(log_probabilities, references, {**info, "calibration": None})
    return results, parameters, len(references) / max(seconds, 1e-9), len(train_labels)
