"""Regression metrics: MSE, RMSE, MAE, Pearson and Spearman correlation. An `evaluate` module
written for bertkit, loaded by path."""

import datasets
import evaluate
import numpy as np
from scipy.stats import pearsonr, spearmanr

_DESCRIPTION = "Mean squared / absolute error and Pearson / Spearman correlation."
_INPUTS = "predictions: predicted numbers. references: true numbers."


class Regression(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_INPUTS,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}
            ),
        )

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
