"""Retrieval metrics from the rank of the right item for each query (1 = first): recall at 1,
5 and 10, and mean reciprocal rank. An `evaluate` module written for bertkit, loaded by path."""

import numpy as np

from bertkit.core.metrics import base
from bertkit.core.metrics.base import features

_DESCRIPTION = "Recall@k (share of queries whose right item ranks in the top k) and MRR."
_INPUTS = "ranks: the 1-based rank of the right item for each query."


class Retrieval(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = features(ranks="int64")

    def _compute(self, ranks):
        ranks = np.asarray(ranks, dtype=float)
        result = {f"recall_at_{k}": float(np.mean(ranks <= k)) for k in (1, 5, 10)}
        result["mrr"] = float(np.mean(1.0 / ranks))
        result["queries"] = int(ranks.size)
        return result
