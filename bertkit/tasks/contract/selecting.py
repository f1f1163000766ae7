"""The select part of the task contract (`Selection`): what `bertkit select` asks of a task to
rank a pool of unlabelled texts by how unsure its model is of them.

A task gives, for each pool record, rows of probabilities: one row for a single-label text, one
two-class row [1 - p, p] per label for a multi-label text, one row per word for NER. The record's
uncertainty is the sum of its rows' (bertkit/selection/strategies.py), so a sentence of many
unsure words counts more than one of a single unsure word."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from bertkit.core.errors import BertkitError


class Selection(ABC):
    @abstractmethod
    def text(self, record: dict, info: dict, where: str) -> str:
        """The record's text as the model reads it (what is compared with the training data's
        texts, so none of those is picked); a `RecordError` naming `where` when it has none."""

    @abstractmethod
    def label_field(self, info: dict) -> str:
        """The field the picks leave empty for the labeller (the training data's label column)."""

    @abstractmethod
    def probability_rows(self, model, tokenizer, info: dict, texts: list[str], batch_size: int) -> list[np.ndarray]:
        """For each text, its rows of probabilities (rows × classes), as the bundle gives them."""

    def key(self, text: str, tokenizer) -> str:
        """What two texts the model reads alike have in common: the text through the tokenizer's
        normalizer (lower case, accents, for an uncased BERT), its spaces made single."""
        normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
        if normalizer is not None:
            text = normalizer.normalize_str(text)
        return " ".join(text.split())

    def training_texts(self, records: list[dict], info: dict) -> set[str]:
        """The texts of labelled records (the training data, --exclude files), as `text` reads them;
        records without one are skipped."""
        found = set()
        for record in records:
            try:
                found.add(self.text(record, info, ""))
            except BertkitError:  # a record of another shape holds no text this task would pick
                continue
        return found
