"""The select part of classify (`bertkit select`): each pool text's scores, calibrated as the
bundle gives them; one row for a single-label text, a two-class row per label for multi-label."""

from __future__ import annotations

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.core.inference import forward
from bertkit.tasks.classify.calibration import probabilities
from bertkit.tasks.classify.encoding import encode_columns, feature_rows, text_at
from bertkit.tasks.classify.labels import MULTI, REGRESSION
from bertkit.tasks.contract import Selection


class ClassifySelection(Selection):
    def text(self, record: dict, info: dict, where: str) -> str:
        return text_at(record, info.get("text_column") or "text", where)

    def label_field(self, info: dict) -> str:
        return info.get("label_column") or "label"

    def probability_rows(self, model, tokenizer, info: dict, texts: list[str], batch_size: int) -> list[np.ndarray]:
        if info["problem_type"] == REGRESSION:
            raise BertkitError(
                "bertkit select ranks texts by how unsure a classifier is of their label; this model is a "
                "regression (it gives a number, not probabilities). Use a single- or multi-label classify model"
            )
        if info.get("text_pair_column"):
            raise BertkitError(
                f"bertkit select picks single texts, and this model reads pairs ({info['text_pair_column']!r} "
                "beside the text). Use a model trained on single texts"
            )
        if not texts:
            return []
        features = feature_rows(encode_columns(tokenizer, texts, None, info))
        scores = probabilities(np.stack(forward(model, tokenizer, features, batch_size)), info)
        if info["problem_type"] == MULTI:  # each label its own two-class question
            return [np.stack([1 - row, row], axis=1) for row in scores]
        return [row[None] for row in scores]
