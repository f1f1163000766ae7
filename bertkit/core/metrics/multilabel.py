"""Multi-label classification metrics: micro / macro / per-label precision, recall and F1, and
subset accuracy (every label of an example right). An `evaluate` module written for bertkit."""

import datasets
import numpy as np
from sklearn.metrics import precision_recall_fscore_support

from bertkit.core.metrics import base

_DESCRIPTION = "Micro and macro F1 for multi-label classification, per-label scores, subset accuracy."
_INPUTS = """
predictions: 0/1 vectors, one entry per label. references: 0/1 vectors of the same width.
label_names (optional): the name of each position.
"""


class MultiLabel(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = datasets.Features(
        {
            "predictions": datasets.Sequence(datasets.Value("int8")),
            "references": datasets.Sequence(datasets.Value("int8")),
        }
    )

    def _compute(self, predictions, references, label_names=None):
        predictions = np.asarray(predictions, dtype=int)
        references = np.asarray(references, dtype=int)
        names = list(label_names) if label_names else [str(i) for i in range(references.shape[1])]
        result = {"subset_accuracy": float((predictions == references).all(axis=1).mean())}
        for average in ("micro", "macro"):
            p, r, f, _ = precision_recall_fscore_support(references, predictions, average=average, zero_division=0)
            result[f"precision_{average}"] = float(p)
            result[f"recall_{average}"] = float(r)
            result[f"f1_{average}"] = float(f)
        p, r, f, support = precision_recall_fscore_support(references, predictions, average=None, zero_division=0)
        result["per_class"] = {
            name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(support[i])}
            for i, name in enumerate(names)
        }
        result["labels"] = names
        return result
