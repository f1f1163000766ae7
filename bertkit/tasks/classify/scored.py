"""A classifier's per-example results (`bertkit.tasks.contract.scored.Scored`) for each problem type:
single-label (accuracy, precision / recall / F1 from the confusion counts), multi-label (from
per-label true / false positives and false negatives) and regression (Pearson, Spearman); both
classification kinds add how well their scores are calibrated (ECE, Brier score: the
`calibration` metric module), of the scores as the bundle gives them and, for a calibrated
bundle, of the scores before calibration (`ece_uncalibrated`, `brier_uncalibrated`)."""

from __future__ import annotations

import numpy as np

from bertkit.core import metrics
from bertkit.tasks.classify.calibration import is_calibrated, probabilities
from bertkit.tasks.classify.labels import MULTI, REGRESSION
from bertkit.tasks.contract.scored import Correlated, Scored, ratio


def scored(logits, references, info: dict) -> Scored:
    """The per-example results of a classifier's `logits` against encoded `references`."""
    logits = np.asarray(logits[0] if isinstance(logits, tuple) else logits)
    problem = info["problem_type"]
    if problem == REGRESSION:
        module = metrics.load("regression")
        return Correlated(logits, references, lambda p, r: module.compute(predictions=p, references=r))
    scores = probabilities(logits, info)
    raw = probabilities(logits, info, calibrated=False) if is_calibrated(info) else None
    if problem == MULTI:
        predicted = (scores > info["threshold"]).astype(int)
        return MultiLabel(predicted, np.asarray(references).astype(int), list(info["labels"]), scores, raw)
    return SingleLabel(scores.argmax(-1), np.asarray(references), list(info["labels"]), scores, raw)


class _Labelled(Scored):
    """Predicted label ids against gold ones, scored by the metric module `module`."""

    module = ""

    def __init__(self, predictions, references, labels: list[str], scores=None, raw_scores=None):
        self.predictions = np.asarray(predictions, dtype=int)
        self.gold = np.asarray(references, dtype=int)
        self.labels = labels
        self.scores = scores  # the probabilities the bundle gives (None: calibration not reported)
        self.raw_scores = raw_scores  # the same before calibration, for a calibrated bundle

    def __len__(self) -> int:
        return len(self.gold)

    def references(self) -> list:
        return self.gold.tolist()

    def score(self, indices=None) -> dict:
        chosen = slice(None) if indices is None else np.asarray(indices, dtype=int)
        found = metrics.load(self.module).compute(
            predictions=self.predictions[chosen], references=self.gold[chosen], label_names=self.labels
        )
        if self.scores is not None and len(self.gold[chosen]):
            found.update(self.calibration(self.scores[chosen], self.gold[chosen]))
            if self.raw_scores is not None:
                before = self.calibration(self.raw_scores[chosen], self.gold[chosen])
                found.update({f"{k}_uncalibrated": v for k, v in before.items()})
        return found

    def calibration(self, scores: np.ndarray, gold: np.ndarray) -> dict:
        """ECE, Brier score and the reliability bins of `scores` against `gold`."""
        return metrics.load("calibration").compute(probabilities=scores, references=gold)


class SingleLabel(_Labelled):
    metrics = ("accuracy", "precision_macro", "recall_macro", "f1_macro", "precision_weighted",
               "recall_weighted", "f1_weighted")  # fmt: skip
    paired = "accuracy"
    module = "classification"

    def correct(self) -> np.ndarray:
        return (self.predictions == self.gold).astype(int)

    def stats(self) -> np.ndarray:
        """One-hot confusion cell (gold, predicted) of each example: K*K columns."""
        k = len(self.labels)
        cells = np.zeros((len(self.gold), k * k), dtype=np.float32)
        cells[np.arange(len(self.gold)), self.gold * k + self.predictions] = 1
        return cells

    def from_sums(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        k = len(self.labels)
        confusion = np.asarray(sums, dtype=float).reshape(-1, k, k)  # [round, gold, predicted]
        hits = np.diagonal(confusion, axis1=1, axis2=2)
        predicted, gold = confusion.sum(axis=1), confusion.sum(axis=2)
        total = gold.sum(axis=1)
        per_class = {
            "precision": ratio(hits, predicted),
            "recall": ratio(hits, gold),
            "f1": ratio(2 * hits, predicted + gold),
        }
        out = {"accuracy": ratio(hits.sum(axis=1), total)}
        for name, values in per_class.items():
            out[f"{name}_macro"] = values.mean(axis=1)
            out[f"{name}_weighted"] = ratio((values * gold).sum(axis=1), total)
        return out


class MultiLabel(_Labelled):
    metrics = ("subset_accuracy", "precision_micro", "recall_micro", "f1_micro", "precision_macro", "recall_macro",
               "f1_macro")
    paired = "subset_accuracy"
    module = "multilabel"

    def correct(self) -> np.ndarray:
        return (self.predictions == self.gold).all(axis=1).astype(int)

    def calibration(self, scores: np.ndarray, gold: np.ndarray) -> dict:
        """Each label's score a two-class problem, [1 - p, p] against its 0 or 1, pooled."""
        p = scores.reshape(-1)
        return super().calibration(np.stack([1 - p, p], axis=1), gold.reshape(-1))

    def stats(self) -> np.ndarray:
        """Per example: 1 (it counts), all labels right, then per label true positive, false
        positive, false negative."""
        p, g = self.predictions, self.gold
        ones = np.ones((len(g), 1), dtype=int)
        return np.hstack([ones, self.correct()[:, None], p & g, p & (1 - g), (1 - p) & g]).astype(np.float32)

    def from_sums(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        sums = np.asarray(sums, dtype=float)
        k = len(self.labels)
        total, right = sums[:, 0], sums[:, 1]
        tp, fp, fn = sums[:, 2 : 2 + k], sums[:, 2 + k : 2 + 2 * k], sums[:, 2 + 2 * k :]
        t, f_p, f_n = tp.sum(axis=1), fp.sum(axis=1), fn.sum(axis=1)
        return {
            "subset_accuracy": ratio(right, total),
            "precision_micro": ratio(t, t + f_p),
            "recall_micro": ratio(t, t + f_n),
            "f1_micro": ratio(2 * t, 2 * t + f_p + f_n),
            "precision_macro": ratio(tp, tp + fp).mean(axis=1),
            "recall_macro": ratio(tp, tp + fn).mean(axis=1),
            "f1_macro": ratio(2 * tp, 2 * tp + fp + fn).mean(axis=1),
        }
