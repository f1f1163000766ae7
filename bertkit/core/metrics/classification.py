"""Single-label classification metrics: accuracy, precision / recall / F1 (macro, weighted and per
class) and the confusion matrix. An `evaluate` module written for bertkit, loaded by path."""

import numpy as np
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from bertkit.core.metrics import base
from bertkit.core.metrics.base import features

_DESCRIPTION = "Accuracy, macro/weighted/per-class precision, recall and F1, and the confusion matrix."
_INPUTS = """
predictions: predicted class ids. references: true class ids.
label_names (optional): the name of each class id, used as keys of `per_class`.
"""


class Classification(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = features(predictions="int64", references="int64")

    def _compute(self, predictions, references, label_names=None):
        predictions = np.asarray(predictions)
        references = np.asarray(references)
        n = len(label_names) if label_names else int(max(predictions.max(), references.max())) + 1
        names = list(label_names) if label_names else [str(i) for i in range(n)]
        ids = list(range(n))
        result = {"accuracy": float((predictions == references).mean())}
        for average in ("macro", "weighted"):
            p, r, f, _ = precision_recall_fscore_support(
                references, predictions, labels=ids, average=average, zero_division=0
            )
            result[f"precision_{average}"] = float(p)
            result[f"recall_{average}"] = float(r)
            result[f"f1_{average}"] = float(f)
        p, r, f, support = precision_recall_fscore_support(
            references, predictions, labels=ids, average=None, zero_division=0
        )
        result["per_class"] = {
            name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(support[i])}
            for i, name in enumerate(names)
        }
        result["confusion_matrix"] = confusion_matrix(references, predictions, labels=ids).tolist()
        result["labels"] = names
        return result
