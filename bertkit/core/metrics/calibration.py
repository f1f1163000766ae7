"""How far scores are from probabilities: expected calibration error (ECE), the Brier score, and
the reliability diagram's bins. An `evaluate` module written for bertkit, loaded by path.

ECE (Guo et al., 2017): examples are put in 15 equal-width bins by their confidence (the score of
the predicted class); ECE is the mean over examples of |accuracy of the bin - mean confidence of
the bin|, so 0.08 says the scores are off by 8 points on average. The Brier score is the mean
squared distance between the score vector and the one-hot truth (Brier's own definition, summed
over the classes: for two classes it is twice scikit-learn's `brier_score_loss`). A multi-label
model's labels are each a two-class problem, [1 - p, p] against 0 or 1, pooled."""

import datasets
import numpy as np

from bertkit.core.metrics import base

BINS = 15
_DESCRIPTION = "Expected calibration error (15 equal-width bins), Brier score and reliability bins."
_INPUTS = """
probabilities: a score vector per example (each sums to 1). references: the true class ids.
bins (optional): how many equal-width confidence bins (15).
"""


class Calibration(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = datasets.Features(
        {"probabilities": datasets.Sequence(datasets.Value("float64")), "references": datasets.Value("int64")}
    )

    def _compute(self, probabilities, references, bins: int = BINS):
        p = np.asarray(probabilities, dtype=np.float64)
        gold = np.asarray(references, dtype=int)
        confidence = p.max(axis=1)
        correct = (p.argmax(axis=1) == gold).astype(float)
        # bin b holds confidences in (b/bins, (b+1)/bins]; a confidence of exactly 0 joins bin 0
        which = np.clip(np.ceil(confidence * bins).astype(int) - 1, 0, bins - 1)
        count = np.bincount(which, minlength=bins)
        mean_confidence = np.bincount(which, weights=confidence, minlength=bins)
        accuracy = np.bincount(which, weights=correct, minlength=bins)
        ece = float(np.abs(accuracy - mean_confidence).sum() / max(len(gold), 1))
        onehot = np.zeros_like(p)
        onehot[np.arange(len(gold)), gold] = 1.0
        used = count > 0
        return {
            "ece": ece,
            "brier": float(((p - onehot) ** 2).sum(axis=1).mean()) if len(gold) else 0.0,
            "reliability": {
                "bin_upper": [round((b + 1) / bins, 6) for b in np.flatnonzero(used)],
                "confidence": (mean_confidence[used] / count[used]).tolist(),
                "accuracy": (accuracy[used] / count[used]).tolist(),
                "count": count[used].tolist(),
            },
        }
