"""Regression metrics: MSE, RMSE, MAE, Pearson and Spearman correlation. An `evaluate` module
written for bertkit, loaded by path."""

import numpy as np
from scipy.stats import pearsonr, spearmanr

from bertkit.core.metrics import base
from bertkit.core.metrics.base import features

_DESCRIPTION = "Mean squared / absolute error and Pearson / Spearman correlation."
_INPUTS = "predictions: predicted numbers. references: true numbers."


class Regression(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = features(predictions="float64", references="float64")

    def _compute(self, predictions, references):
        predictions = np.asarray(predictions, dtype=float)
        references = np.asarray(references, dtype=float)
        error = predictions - references
        result = {
            "mse": float(np.mean(error**2)),
            "rmse": float(np.sqrt(np.mean(error**2))),
            "mae": float(np.mean(np.abs(error))),
        }
        # a constant column has no correlation; report 0 rather than NaN
        varied = predictions.std() > 0 and references.std() > 0 and len(predictions) > 1
        result["pearson"] = float(pearsonr(predictions, references)[0]) if varied else 0.0
        result["spearman"] = float(spearmanr(predictions, references)[0]) if varied else 0.0
        return result
