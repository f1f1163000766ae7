"""Masked-LM metrics over the predicted (masked) positions: mean loss, perplexity (its
exponential) and the accuracy of the top token. An `evaluate` module written for bertkit,
loaded by path."""

import math

import numpy as np

from bertkit.core.metrics import base
from bertkit.core.metrics.base import features

_DESCRIPTION = "Token-weighted masked-LM loss, perplexity = exp(loss), and top-1 accuracy."
_INPUTS = "nll: negative log-likelihood of the true token at each masked position. correct: 1 if it ranked first."


class MaskedLm(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = features(nll="float64", correct="int32")

    def _compute(self, nll, correct):
        nll = np.asarray(nll, dtype=float)
        if nll.size == 0:
            return {"loss": float("nan"), "perplexity": float("nan"), "accuracy": 0.0, "masked_tokens": 0}
        loss = float(nll.mean())
        return {
            "loss": loss,
            "perplexity": math.exp(min(loss, 700.0)),
            "accuracy": float(np.mean(correct)),
            "masked_tokens": int(nll.size),
        }
